"""Privacy budget accounting: exact arithmetic, all-or-nothing spends, the default accountant.

The accountant reads each epsilon and delta as the shortest decimal that round-trips the
float (``0.1`` is exactly one tenth, ``1/3`` is exactly 0.3333333333333333) and adds those
decimals exactly. That is why budgets written in decimal are exhausted exactly, with no
floating-point creep in either direction; claims below about "exact" exhaustion are made only
for such decimal-exact cases.
"""
import contextvars
import sys
import threading
from fractions import Fraction

import pytest

import dpfast as dp


def rng_snapshot(rng):
    s = rng.state
    inner = dict(s["state"], key=tuple(int(k) for k in s["state"]["key"]))
    return dict(s, state=inner)


# -- exact budget arithmetic -----------------------------------------------------------
def test_ten_tenths_exhaust_one_exactly():
    acct = dp.Accountant(epsilon=1.0)
    for _ in range(10):
        acct.spend(0.1)
    with pytest.raises(dp.BudgetExceededError) as info:
        acct.spend(0.1)
    assert isinstance(info.value, ValueError)
    assert acct.spent == (1.0, 0.0)
    assert acct.remaining == (0.0, 0.0)
    assert len(acct) == 10


@pytest.mark.parametrize("budget, step, n", [
    (0.3, 0.1, 3),      # float sum 0.1+0.1+0.1 is 0.30000000000000004 > 0.3
    (0.7, 0.1, 7),
    (1.0, 0.1, 10),
    (2.0, 0.2, 10),
    (0.6, 0.2, 3),
    (1.1, 0.11, 10),
    (1.0, 0.01, 100),
    (3.3, 1.1, 3),
])
def test_decimal_budgets_are_exhausted_exactly(budget, step, n):
    acct = dp.Accountant(epsilon=budget)
    for i in range(n):
        acct.spend(step)
    assert acct.spent == (budget, 0.0)
    assert acct.remaining == (0.0, 0.0)
    before = acct.ledger
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(step)
    assert acct.ledger == before
    # The smallest positive spend no longer fits either: nothing is left.
    assert not acct.check(5e-324)


def test_mixed_decimal_spends_add_exactly():
    # As floats 0.1 + 0.2 != 0.3; as decimals they fill a budget of 0.3 exactly.
    acct = dp.Accountant(epsilon=0.3)
    acct.spend(0.1)
    acct.spend(0.2)
    assert acct.remaining == (0.0, 0.0)


def test_floats_are_read_as_their_shortest_decimal():
    # 1/3 is read as 0.3333333333333333, so three of them leave 1e-16 of a budget of 1.
    acct = dp.Accountant(epsilon=1.0)
    for _ in range(3):
        acct.spend(1 / 3)
    assert acct.remaining[0] == float(1 - 3 * Fraction("0.3333333333333333"))
    assert acct.remaining[0] > 0
    # 0.1 + 0.2 prints as 0.30000000000000004 and is charged as exactly that.
    small = dp.Accountant(epsilon=0.3)
    with pytest.raises(dp.BudgetExceededError):
        small.spend(0.1 + 0.2)
    assert small.spent == (0.0, 0.0)


def test_spent_and_remaining_are_python_floats():
    acct = dp.Accountant(epsilon=1.0, delta=1e-5)
    acct.spend(0.25, 1e-6)
    for pair in (acct.spent, acct.remaining):
        assert all(type(x) is float for x in pair)
    assert acct.spent == (0.25, 1e-6)
    assert acct.remaining == (0.75, 9e-6)


# -- delta -----------------------------------------------------------------------------
def test_delta_is_accounted_exactly_and_separately():
    acct = dp.Accountant(epsilon=1.0, delta=1e-6)
    for _ in range(10):
        acct.spend(0.01, 1e-7)
    assert acct.spent == (0.1, 1e-6)
    assert acct.remaining == (0.9, 0.0)
    # epsilon is still available, delta is not.
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(0.01, 1e-12)
    acct.spend(0.01)  # a pure-epsilon spend still fits
    assert acct.spent == (0.11, 1e-6)


def test_pure_dp_accountant_refuses_any_delta():
    acct = dp.Accountant(epsilon=1.0)
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(0.1, 1e-9)
    assert acct.spent == (0.0, 0.0) and len(acct) == 0


def test_epsilon_overrun_refused_even_when_delta_fits():
    acct = dp.Accountant(epsilon=0.5, delta=0.1)
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(0.6, 0.01)
    assert acct.spent == (0.0, 0.0)


# -- failing spends --------------------------------------------------------------------
def test_budget_error_says_what_remains_and_that_nothing_was_spent():
    acct = dp.Accountant(epsilon=1.0, delta=1e-5)
    acct.spend(0.7, 4e-6, label="first")
    spent, ledger = acct.spent, acct.ledger
    with pytest.raises(dp.BudgetExceededError) as info:
        acct.spend(0.5, 1e-6, label="second")
    msg = str(info.value)
    assert "remaining" in msg.lower()
    assert repr(0.3) in msg and repr(6e-6) in msg  # what is left, in the caller's units
    assert "nothing was spent" in msg.lower()
    assert acct.spent == spent and acct.ledger == ledger


def test_failed_spend_then_smaller_spend_succeeds():
    acct = dp.Accountant(epsilon=1.0)
    acct.spend(0.9)
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(0.2)
    acct.spend(0.1)
    assert acct.remaining == (0.0, 0.0)
    assert [e for e, _, _ in acct.ledger] == [0.9, 0.1]


def test_check_predicts_spend_without_spending():
    acct = dp.Accountant(epsilon=1.0)
    acct.spend(0.6)
    assert acct.check(0.4) and not acct.check(0.5)
    assert acct.spent == (0.6, 0.0) and len(acct) == 1


def test_ledger_records_each_spend_in_order_and_is_a_copy():
    acct = dp.Accountant(epsilon=1.0, delta=1e-6)
    acct.spend(0.1, label="count")
    acct.spend(0.2, 1e-7, label="sum")
    assert acct.ledger == [(0.1, 0.0, "count"), (0.2, 1e-7, "sum")]
    acct.ledger.clear()  # mutating the returned list must not rewrite history
    assert len(acct) == 2


# -- unlimited accountants -------------------------------------------------------------
def test_unlimited_accountant_records_spends():
    acct = dp.Accountant()
    assert acct.epsilon == float("inf")
    for eps in (0.5, 1e300, 3.0):
        acct.spend(eps)
    assert len(acct) == 3
    assert acct.spent == (float(Fraction("0.5") + Fraction("1e300") + 3), 0.0)
    assert acct.remaining == (float("inf"), 0.0)
    assert [e for e, _, _ in acct.ledger] == [0.5, 1e300, 3.0]


def test_default_accountant_outside_blocks_is_unlimited_and_records():
    default = dp.default_accountant()
    assert default is dp.default_accountant()
    assert isinstance(default, dp.Accountant)
    assert default.epsilon == float("inf")
    n = len(default)
    dp.laplace_mechanism(5, sensitivity=1.0, epsilon=0.25, rng=dp.ChaCha20(seed=1))
    assert len(default) == n + 1
    eps, delta, _label = default.ledger[-1]
    assert (eps, delta) == (0.25, 0.0)
    assert default.remaining[0] == float("inf")


# -- mechanisms charge before drawing --------------------------------------------------
def test_mechanism_refused_by_budget_draws_nothing():
    acct = dp.Accountant(epsilon=0.3)
    acct.spend(0.2)
    rng = dp.ChaCha20(seed=1)
    before = rng_snapshot(rng)
    with pytest.raises(dp.BudgetExceededError):
        dp.laplace_mechanism([1.0, 2.0], sensitivity=1.0, epsilon=0.2, accountant=acct,
                             rng=rng)
    assert rng_snapshot(rng) == before
    assert acct.spent == (0.2, 0.0) and len(acct) == 1
    # The exact remainder is still spendable by a mechanism.
    dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.1, accountant=acct, rng=rng)
    assert acct.remaining == (0.0, 0.0)
    assert rng_snapshot(rng) != before


def test_mechanism_charges_epsilon_once_per_call_whatever_the_size():
    acct = dp.Accountant(epsilon=1.0)
    dp.laplace_mechanism(list(range(100)), sensitivity=1.0, epsilon=0.5, accountant=acct,
                         rng=dp.ChaCha20(seed=1))
    assert acct.spent == (0.5, 0.0) and len(acct) == 1


# -- `with acct:` ----------------------------------------------------------------------
def test_with_block_makes_accountant_the_default():
    process_default = dp.default_accountant()
    acct = dp.Accountant(epsilon=1.0)
    n_default = len(process_default)
    with acct as entered:
        assert entered is acct
        assert dp.default_accountant() is acct
        dp.laplace_mechanism(3, sensitivity=1.0, epsilon=0.4, rng=dp.ChaCha20(seed=1))
    assert dp.default_accountant() is process_default
    assert acct.spent == (0.4, 0.0) and len(acct) == 1
    assert len(process_default) == n_default


def test_with_block_budget_applies_to_implicit_mechanism_calls():
    acct = dp.Accountant(epsilon=0.5)
    rng = dp.ChaCha20(seed=1)
    with acct:
        dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.5, rng=rng)
        before = rng_snapshot(rng)
        with pytest.raises(dp.BudgetExceededError):
            dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.1, rng=rng)
        assert rng_snapshot(rng) == before


def test_explicit_accountant_wins_inside_a_with_block():
    outer, explicit = dp.Accountant(epsilon=1.0), dp.Accountant(epsilon=1.0)
    with outer:
        dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.3, accountant=explicit,
                             rng=dp.ChaCha20(seed=1))
    assert outer.spent == (0.0, 0.0) and explicit.spent == (0.3, 0.0)


def test_nested_with_blocks():
    process_default = dp.default_accountant()
    a, b = dp.Accountant(epsilon=1.0), dp.Accountant(epsilon=1.0)
    rng = dp.ChaCha20(seed=1)
    with a:
        with b:
            assert dp.default_accountant() is b
            dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.2, rng=rng)
            with a:  # re-entering an outer accountant is allowed
                assert dp.default_accountant() is a
            assert dp.default_accountant() is b
        assert dp.default_accountant() is a
        dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.1, rng=rng)
    assert dp.default_accountant() is process_default
    assert a.spent == (0.1, 0.0) and b.spent == (0.2, 0.0)


def test_with_block_restores_default_after_exception():
    process_default = dp.default_accountant()
    acct = dp.Accountant(epsilon=1.0)
    with pytest.raises(KeyError):
        with acct:
            raise KeyError("boom")
    assert dp.default_accountant() is process_default


def test_out_of_order_exit_raises_runtime_error():
    process_default = dp.default_accountant()
    a, b = dp.Accountant(), dp.Accountant()
    a.__enter__()
    b.__enter__()
    try:
        with pytest.raises(RuntimeError):
            a.__exit__(None, None, None)
        # A refused exit leaves the stack as it was.
        assert dp.default_accountant() is b
    finally:
        b.__exit__(None, None, None)
        a.__exit__(None, None, None)
    assert dp.default_accountant() is process_default


def test_exit_without_enter_raises_runtime_error():
    with pytest.raises(RuntimeError):
        dp.Accountant().__exit__(None, None, None)


# -- threads ---------------------------------------------------------------------------
@pytest.fixture
def fast_thread_switching():
    # Switch threads as often as possible so that an unlocked read-modify-write of the
    # running total would actually interleave and lose updates.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _spend_concurrently(acct, n_threads, per_thread, epsilon):
    successes = [0] * n_threads
    start = threading.Barrier(n_threads)

    def worker(i):
        start.wait()
        for _ in range(per_thread):
            try:
                acct.spend(epsilon)
            except dp.BudgetExceededError:
                continue
            successes[i] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(successes)


@pytest.mark.parametrize("budget, fitting", [(8.0, 8000),      # fills the budget exactly
                                             (7.999, 7999)])   # and never overruns it
def test_concurrent_spends(fast_thread_switching, budget, fitting):
    acct = dp.Accountant(epsilon=budget)
    assert _spend_concurrently(acct, 8, 1000, 0.001) == fitting
    assert acct.spent == (budget, 0.0)
    assert acct.remaining == (0.0, 0.0)
    assert len(acct) == fitting


def test_concurrent_mechanisms_share_one_budget(fast_thread_switching):
    acct = dp.Accountant(epsilon=3.0)
    n_threads, per_thread = 8, 50
    successes = [0] * n_threads
    start = threading.Barrier(n_threads)

    def worker(i):
        rng = dp.ChaCha20(seed=i)
        start.wait()
        for _ in range(per_thread):
            try:
                dp.laplace_mechanism(i, sensitivity=1.0, epsilon=0.01, accountant=acct,
                                     rng=rng, threads=1)
            except dp.BudgetExceededError:
                continue
            successes[i] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(successes) == 300
    assert acct.spent == (3.0, 0.0)


def test_with_block_does_not_reach_threads_started_inside_it():
    # The with-block lives in a contextvars context, and threading.Thread starts its target
    # in a fresh context: a thread started inside `with acct:` sees the process default and
    # its implicit mechanism calls are charged there, not to acct. Pass accountant= to the
    # thread, or run its target in contextvars.copy_context(), to carry acct across.
    process_default = dp.default_accountant()
    acct = dp.Accountant(epsilon=1.0)
    seen = {}

    def plain():
        seen["plain"] = dp.default_accountant()
        dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.125, rng=dp.ChaCha20(seed=1))

    n_default = len(process_default)
    with acct:
        t = threading.Thread(target=plain)
        t.start()
        t.join()
        ctx = contextvars.copy_context()
        t = threading.Thread(target=ctx.run, args=(
            lambda: seen.__setitem__("copied", dp.default_accountant()),))
        t.start()
        t.join()
    assert seen["plain"] is process_default
    assert len(process_default) == n_default + 1
    assert acct.spent == (0.0, 0.0)
    assert seen["copied"] is acct


def test_with_blocks_in_different_threads_are_independent():
    a, b = dp.Accountant(epsilon=1.0), dp.Accountant(epsilon=1.0)
    inside = threading.Barrier(2)
    seen = {}

    def worker(name, acct):
        with acct:
            inside.wait()  # both blocks are open at the same time
            seen[name] = dp.default_accountant()
            dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.5 if name == "a" else 0.25,
                                 rng=dp.ChaCha20(seed=1))
            inside.wait()

    threads = [threading.Thread(target=worker, args=("a", a)),
               threading.Thread(target=worker, args=("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": a, "b": b}
    assert a.spent == (0.5, 0.0) and b.spent == (0.25, 0.0)
