"""Accounting in zCDP: rho budgets, (epsilon, delta) budgets composing through zCDP, exact
rho arithmetic, parallel blocks, groups, the ledger, and the readings in each definition."""
import math
import os
import pickle
from fractions import Fraction

import pytest

import dpfast as dp
from dpfast.zcdp import epsilon_from_rho, rho_from_epsilon_delta


def test_rho_budget_sums_exactly():
    acct = dp.Accountant(rho=1.0)
    for _ in range(10):
        acct.spend(rho=0.1)
    assert acct.spent.rho == 1.0 and acct.remaining.rho == 0.0
    with pytest.raises(dp.BudgetExceededError, match="rho"):
        acct.spend(rho=1e-300)
    assert len(acct) == 10


def test_pure_epsilon_charge_costs_half_its_square_exactly():
    acct = dp.Accountant(rho=0.5)
    acct.spend(0.1)                            # 0.1**2 / 2 = 0.005, exactly
    assert acct.spent.rho == 0.005
    for _ in range(99):
        acct.spend(0.1)
    assert acct.spent.rho == 0.5               # 100 pure charges of 0.1: rho 0.5 exactly
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(1e-10)


def test_a_pure_charge_is_never_understated():
    acct = dp.Accountant(rho=math.inf)
    acct.spend(1 / 3)
    # (1/3 read as its decimal 0.3333333333333333)**2 / 2, rounded up: at least that.
    exact = Fraction("0.3333333333333333") ** 2 / 2
    assert Fraction(acct.spent.rho) >= exact
    assert acct.spent.rho <= math.nextafter(float(exact), math.inf)   # and tight


def test_an_epsilon_delta_budget_composes_through_zcdp():
    acct = dp.Accountant(epsilon=1.0, delta=1e-9, composition="zcdp")
    assert acct.composition == "zcdp"
    rho = acct.rho
    assert rho <= rho_from_epsilon_delta(1.0, 1e-9)
    assert epsilon_from_rho(rho, 1e-9) <= 1.0
    # 100 pure charges of 0.01 fit (rho 0.005); basic composition would allow exactly 100
    # as well, but zCDP lets many more small charges through.
    for _ in range(250):
        acct.spend(0.01)
    assert acct.spent.rho == pytest.approx(0.0125)
    assert acct.spent.epsilon <= 1.0 and acct.spent.delta == 1e-9
    eps, dlt = acct.spent                       # still a pair
    assert (eps, dlt) == (acct.spent.epsilon, 1e-9)


def test_zcdp_refuses_a_delta_charge_without_rho():
    acct = dp.Accountant(rho=1.0)
    with pytest.raises(ValueError, match="zCDP"):
        acct.spend(0.5, 1e-6)
    acct.spend(0.5, 1e-6, rho=0.01)             # a Gaussian release states its rho
    assert acct.spent.rho == 0.01 and len(acct) == 1


def test_rho_alone_is_refused_by_an_epsilon_delta_accountant():
    acct = dp.Accountant(epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="rho alone"):
        acct.spend(rho=0.01)
    assert len(acct) == 0
    acct.spend(0.5, 1e-7, rho=0.01)             # charged (epsilon, delta); rho recorded
    assert acct.spent == (0.5, 1e-7) and acct.ledger[0].rho == 0.01


def test_parallel_block_costs_its_largest_rho_and_groups_cost_k_squared():
    acct = dp.Accountant(rho=1.0)
    with acct.parallel() as block:
        block.spend(rho=0.25)
        block.spend(rho=0.125)
        part = block.partition()
        part.spend(rho=0.125)
        part.spend(rho=0.125)
    assert acct.spent.rho == 0.25
    groups = dp.Accountant(rho=1.0, group_size=3)
    groups.spend(rho=0.1)
    assert groups.spent.rho == pytest.approx(0.9)
    with pytest.raises(dp.BudgetExceededError, match="groups of 3"):
        groups.spend(rho=0.02)


@pytest.mark.parametrize("bad, exc", [
    ({"rho": 0.0}, ValueError), ({"rho": -1.0}, ValueError), ({"rho": math.nan}, ValueError),
    ({"rho": "1"}, TypeError), ({"rho": 1.0, "epsilon": 1.0}, ValueError),
    ({"rho": 1.0, "composition": "advanced", "delta_prime": 1e-9, "delta": 1e-6}, ValueError),
    ({"composition": "zcdp", "epsilon": 1.0}, ValueError),          # delta 0
    ({"composition": "zcdp", "epsilon": 1.0, "delta": 1.0}, ValueError),
    ({"composition": "zcdp", "epsilon": 1.0, "delta": 1e-6, "delta_prime": 1e-7},
     ValueError),
    ({"composition": "gdp"}, ValueError),
])
def test_bad_budgets_are_refused(bad, exc):
    with pytest.raises(exc):
        dp.Accountant(**bad)


@pytest.mark.parametrize("bad, exc", [
    ({"rho": 0.0}, ValueError), ({"rho": math.inf}, ValueError), ({"rho": "x"}, TypeError),
    ({}, TypeError), ({"rho": 0.1, "delta": 1e-6}, ValueError),
])
def test_bad_spends_charge_nothing(bad, exc):
    acct = dp.Accountant(rho=1.0)
    acct.spend(rho=0.5)
    with pytest.raises(exc):
        acct.spend(**bad)
    assert acct.spent.rho == 0.5 and len(acct) == 1


def test_readings_in_each_definition():
    acct = dp.Accountant(rho=0.5, delta=1e-6)
    assert acct.rho == 0.5 and acct.delta == 1e-6
    assert acct.epsilon == pytest.approx(epsilon_from_rho(0.5, 1e-6))
    assert acct.spent == (0.0, 0.0) and acct.spent.rho == 0.0
    acct.spend(rho=0.125)
    assert acct.spent.epsilon == epsilon_from_rho(0.125, 1e-6)
    assert acct.remaining.rho == 0.375
    assert acct.remaining.epsilon == pytest.approx(acct.epsilon - acct.spent.epsilon)
    # Without a delta to read epsilon at, a spent rho is epsilon = inf (no pure DP).
    bare = dp.Accountant(rho=0.5)
    bare.spend(rho=0.1)
    assert bare.spent == (math.inf, 0.0) and bare.spent.rho == 0.1
    # An (epsilon, delta) accountant reads the rho its pure charges imply.
    plain = dp.Accountant(epsilon=2.0, delta=1e-6)
    plain.spend(0.5)
    plain.spend(0.5)
    assert plain.spent.rho == 0.25 and plain.remaining.rho == 0.5
    plain.spend(0.1, 1e-9)
    assert plain.spent.rho == math.inf


def test_ledger_records_rho_exactly_and_reopens(tmp_path):
    path = os.fspath(tmp_path / "budget.ledger")
    acct = dp.Accountant(epsilon=1.0, delta=1e-9, composition="zcdp", ledger=path)
    for _ in range(3):
        acct.spend(rho=0.001, label="gaussian table")
    acct.spend(0.02)
    again = dp.Accountant.from_ledger(path)
    assert again.composition == "zcdp" and again.rho == acct.rho
    assert again.epsilon == 1.0 and again.delta == 1e-9
    assert again.spent.rho == acct.spent.rho == 0.003 + 0.0002
    assert [e.rho for e in again.ledger] == [0.001] * 3 + [None]
    assert [e.epsilon for e in again.ledger] == [None] * 3 + [0.02]
    # The same budget stated again opens the same ledger; another is refused.
    dp.Accountant(epsilon=1.0, delta=1e-9, composition="zcdp", ledger=path).close()
    with pytest.raises(Exception):
        dp.Accountant(rho=0.5, ledger=path)
    # A ledger-backed zCDP accountant pickles as its path.
    twin = pickle.loads(pickle.dumps(again))
    twin.spend(rho=0.0001)
    assert acct.spent.rho == pytest.approx(0.0033)
    for a in (acct, again, twin):
        a.close()


def test_zcdp_ledger_shared_by_processes_never_overspends(tmp_path):
    path = os.fspath(tmp_path / "budget.ledger")
    dp.Accountant(rho=0.01, ledger=path).close()
    pids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:                                          # pragma: no cover (child)
            code = 0
            try:
                acct = dp.Accountant.from_ledger(path)
                for _ in range(10):
                    try:
                        acct.spend(rho=0.0005)
                    except dp.BudgetExceededError:
                        pass
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    assert all(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) == 0 for p in pids)
    acct = dp.Accountant.from_ledger(path)
    assert len(acct) == 20 and acct.spent.rho == 0.01
    acct.close()


def _in_libc_child(action):
    """Run ``action`` in a child made by libc's fork() (no Python at-fork hook runs): its
    exit code is 2 if it raised RuntimeError, 1 if it succeeded."""
    import ctypes
    pid = ctypes.CDLL(None).fork()
    if pid == 0:                                              # pragma: no cover (child)
        code = 3
        try:
            action()
            code = 1
        except RuntimeError:
            code = 2
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.parametrize("make", [
    lambda: dp.Accountant(epsilon=10.0),
    lambda: dp.Accountant(rho=10.0),
    lambda: dp.Accountant(epsilon=10.0).lease(epsilon=5.0),
])
def test_a_budget_held_in_memory_refuses_a_child_forked_by_libc(make):
    # The compiled check-and-charge sees any fork (pthread_atfork), not only os.fork: a copy
    # in a child would spend the budget again, unseen by the parent.
    budget = make()
    budget.spend(0.1)                                         # the compiled path, warmed
    assert _in_libc_child(lambda: budget.spend(0.1)) == 2
    budget.spend(0.1)                                         # the parent goes on


def test_a_ledger_budget_is_shared_with_a_child_forked_by_libc(tmp_path):
    acct = dp.Accountant(epsilon=10.0, ledger=os.fspath(tmp_path / "l"))
    assert _in_libc_child(lambda: acct.spend(0.5)) == 1
    assert acct.spent == (0.5, 0.0)


def test_remaining_can_be_spent():
    # The rest is shown as a float whose reading as a charge fits in it.
    acct = dp.Accountant(epsilon=1.0, delta=1e-6)
    acct.spend(1e-20, 1e-30)
    eps, dlt = acct.remaining
    assert acct.check(eps, dlt)
    lease = dp.Accountant(epsilon=1.0).lease(epsilon=1.0)
    lease.spend(1e-20)
    assert lease.check(lease.remaining.epsilon)


def _implied_by_hand(acct):
    """spent.rho of an (epsilon, delta) accountant from scratch: eps**2/2 over its outermost
    charges (spends outside blocks, whole blocks, leases), inf once one has delta > 0."""
    from dpfast.accounting.amounts import float_up, rho_of_epsilon
    with acct._synced():
        units = acct._units()
    if any(d != 0 for _, d in units):
        return math.inf
    return float_up(sum(rho_of_epsilon(e) for e, _ in units))


def test_implied_rho_is_kept_as_spends_come(tmp_path):
    # Read after every kind of spend, it equals the sum over the outermost charges made
    # from scratch (it is kept incrementally so that reading it stays cheap).
    acct = dp.Accountant(epsilon=100.0, delta=1e-3, group_size=2,
                         ledger=os.fspath(tmp_path / "l"))
    steps = [lambda: acct.spend(0.5), lambda: acct.spend(0.25, label="x")]

    def block():
        with acct.parallel() as b:
            b.spend(0.3)
            b.spend(0.7)
            b.partition().spend(0.2)

    def lease():
        with acct.lease(epsilon=1.0) as l_:
            l_.spend(0.1)
            l_.spend(0.2)
    steps += [block, lease, lambda: acct.spend(0.125)]
    for step in steps:
        step()
        assert acct.spent.rho == _implied_by_hand(acct)
    plain = dp.Accountant(epsilon=10.0)
    for _ in range(50):
        plain.spend(0.1)                         # the compiled path
    assert plain.spent.rho == _implied_by_hand(plain) == pytest.approx(0.25)
    again = dp.Accountant.from_ledger(os.fspath(tmp_path / "l"))
    assert again.spent.rho == acct.spent.rho
    acct.spend(0.1, 1e-6)
    assert acct.spent.rho == math.inf == _implied_by_hand(acct)
