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


def _concurrently(n_threads, per_thread, attempt):
    """Start n_threads together, each calling attempt(i) per_thread times; the number of
    calls that did not raise BudgetExceededError."""
    successes = [0] * n_threads
    start = threading.Barrier(n_threads)

    def worker(i):
        start.wait()
        for _ in range(per_thread):
            try:
                attempt(i)
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
    assert _concurrently(8, 1000, lambda i: acct.spend(0.001)) == fitting
    assert acct.spent == (budget, 0.0)
    assert acct.remaining == (0.0, 0.0)
    assert len(acct) == fitting


def test_concurrent_mechanisms_share_one_budget(fast_thread_switching):
    acct = dp.Accountant(epsilon=3.0)
    rngs = [dp.ChaCha20(seed=i) for i in range(8)]
    release = (lambda i: dp.laplace_mechanism(i, sensitivity=1.0, epsilon=0.01,
                                              accountant=acct, rng=rngs[i], threads=1))
    assert _concurrently(8, 50, release) == 300
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


# -- acceptance: concurrent spends never overrun ---------------------------------------
def test_sixteen_threads_race_for_forty_quarters(fast_thread_switching):
    acct = dp.Accountant(epsilon=10.0)
    assert _concurrently(16, 1000, lambda i: acct.spend(0.25)) == 40
    assert acct.spent == (10.0, 0.0)
    assert len(acct) == 40


# -- parallel composition --------------------------------------------------------------
def test_parallel_block_of_a_hundred_costs_its_maximum():
    acct = dp.Accountant(epsilon=1.0)
    with acct.parallel() as block:
        for i in range(100):
            block.spend(1.0, label=i)
    assert acct.spent == (1.0, 0.0) and block.cost == (1.0, 0.0)
    assert len(acct) == 100
    assert [e.charged for e in acct.ledger] == [(1.0, 0.0)] + [(0.0, 0.0)] * 99
    assert all(e.block == block.path for e in acct.ledger)
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(5e-324)  # the block used the whole budget


def test_spends_on_the_accountant_inside_a_block_stay_sequential():
    # Only what is spent through the block is a partition.
    acct = dp.Accountant(epsilon=2.0)
    with acct.parallel() as block:
        block.spend(1.0)
        acct.spend(0.5)
        block.spend(1.0)
    assert acct.spent == (1.5, 0.0)
    assert [e.block for e in acct.ledger] == [block.path, (), block.path]


def test_a_suspended_generator_cannot_make_later_spends_parallel():
    # The repro of the issue: a generator suspended inside its block, then 100 releases
    # at epsilon 1 on an Accountant(epsilon=2.0): two are charged, the third refused.
    def g(a):
        with a.parallel():
            yield

    acct = dp.Accountant(epsilon=2.0)
    suspended = g(acct)
    next(suspended)
    accepted = 0
    with pytest.raises(dp.BudgetExceededError):
        for _ in range(100):
            dp.laplace_mechanism(5, sensitivity=1, epsilon=1.0, accountant=acct, rng=1)
            accepted += 1
    assert accepted == 2 and acct.spent == (2.0, 0.0)


def test_threads_and_exceptions_cannot_make_spends_parallel():
    acct = dp.Accountant(epsilon=10.0)
    with pytest.raises(KeyError):
        with acct.parallel() as block:
            block.spend(1.0)
            raise KeyError("boom")
    with pytest.raises(RuntimeError, match="has ended"):
        block.spend(1.0)                          # the block ended with the exception
    with acct.parallel() as block:
        threads = [threading.Thread(target=acct.spend, args=(1.0,)) for _ in range(3)]
        threads += [threading.Thread(target=block.spend, args=(2.0,)) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    # 1.0 before, 3 sequential spends of 1.0, one block of partitions of 2.0.
    assert acct.spent == (6.0, 0.0)


def test_group_of_three_triples_a_parallel_block():
    small = dp.Accountant(epsilon=2.999, group_size=3)
    with small.parallel() as block:
        with pytest.raises(dp.BudgetExceededError):
            block.spend(1.0)
    assert small.spent == (0.0, 0.0) and len(small) == 0
    acct = dp.Accountant(epsilon=3.0, group_size=3)
    with acct.parallel() as block:
        for _ in range(100):
            block.spend(1.0)
    assert acct.spent == (3.0, 0.0)
    assert acct.group_size == 3


def test_parallel_block_takes_epsilon_and_delta_maxima_separately():
    acct = dp.Accountant(epsilon=1.0, delta=1e-5)
    with acct.parallel() as block:
        block.spend(0.5, 1e-6)
        block.spend(0.25, 3e-6)
        block.spend(0.125)
    assert acct.spent == (0.5, 3e-6)


def test_nested_blocks_have_hand_computed_costs():
    acct = dp.Accountant(epsilon=10.0)
    with acct.parallel(label="outer") as outer:
        outer.spend(0.5, label="a")                         # partition A: 0.5
        b = outer.partition(label="B")                      # partition B: 0.25 + max(0.5, 0.125)
        b.spend(0.25, label="b1")
        with b.parallel(label="inner") as inner:
            inner.spend(0.5, label="b2")
            inner.spend(0.125, label="b3")
        b.spend(0.0625, label="b4")
        with outer.partition().parallel() as c:             # a parallel block as a partition
            c.spend(0.75, label="c")
    assert inner.cost == (0.5, 0.0)
    assert b.cost == (0.8125, 0.0)
    assert outer.cost == (0.8125, 0.0)
    acct.spend(0.1, label="after")
    assert acct.spent == (0.9125, 0.0)
    by_label = {e.label: e for e in acct.ledger}
    assert by_label["a"].block == ("outer",)
    assert by_label["b1"].block == ("outer", "B")
    assert by_label["b2"].block == ("outer", "B", "inner")
    assert by_label["c"].block[0] == "outer" and len(by_label["c"].block) == 3
    assert by_label["after"].block == ()
    charged = [e.charged[0] for e in acct.ledger]
    # a=0.5; B grows 0.25 (no new max), 0.75 (+0.25), 0.75, 0.8125 (+0.0625); c: 0.75 (none).
    assert charged == [0.5, 0.0, 0.25, 0.0, 0.0625, 0.0, 0.1]
    assert sum(Fraction(repr(c)) for c in charged) == Fraction("0.9125")


def test_parallel_blocks_in_sequence_add():
    acct = dp.Accountant(epsilon=1.0)
    for _ in range(2):
        with acct.parallel() as block:
            block.spend(0.5)
            block.spend(0.5)
    assert acct.spent == (1.0, 0.0)
    with pytest.raises(dp.BudgetExceededError):
        with acct.parallel() as block:
            block.spend(0.5)


def test_failing_spend_inside_a_parallel_block_changes_nothing():
    acct = dp.Accountant(epsilon=1.0)
    with acct.parallel() as block:
        block.spend(0.9)
        part = block.partition()
        part.spend(0.6)
        record = (acct.spent, acct.ledger, block.cost, part.cost)
        assert not part.check(0.5)
        with pytest.raises(dp.BudgetExceededError) as info:
            part.spend(0.5)                       # the partition would cost 1.1
        assert "parallel block" in str(info.value)
        assert (acct.spent, acct.ledger, block.cost, part.cost) == record
        assert part.check(0.4)
        part.spend(0.4)                           # exactly fills it
        with pytest.raises(dp.BudgetExceededError):
            block.spend(1.5)                      # a single partition over budget
    assert acct.spent == (1.0, 0.0) and block.cost == (1.0, 0.0)
    assert len(acct) == 3


def test_check_sees_the_block_and_group_size():
    acct = dp.Accountant(epsilon=2.0, group_size=2)
    assert acct.check(1.0) and not acct.check(1.5)
    acct.spend(0.5)                               # charged 1.0
    with acct.parallel() as block:
        block.spend(0.5)                          # charged 1.0: budget used up
        assert block.check(0.5)                   # another partition of 0.5 is free
        assert not block.check(0.75)
        assert not acct.check(0.5)                # on the accountant it is sequential
    assert not acct.check(5e-324)
    assert acct.spent == (2.0, 0.0) and len(acct) == 2


def test_ended_and_reused_blocks_raise_runtime_error():
    acct = dp.Accountant()
    block = acct.parallel()
    with pytest.raises(RuntimeError, match="has ended"):
        block.spend(1.0)                          # never entered
    with block:
        part = block.partition()
    with pytest.raises(RuntimeError):
        block.__enter__()                         # blocks are single-use
    for ended in (block, part):
        with pytest.raises(RuntimeError, match="has ended"):
            ended.spend(1.0)
    with pytest.raises(RuntimeError, match="has ended"):
        with part.parallel():                     # its block has ended
            pass
    with pytest.raises(TypeError, match="'label'"):
        acct.parallel(label=3)
    assert acct.spent == (0.0, 0.0) and len(acct) == 0


def test_parallel_block_does_not_affect_other_accountants():
    a, b = dp.Accountant(epsilon=1.0), dp.Accountant(epsilon=1.0)
    with a.parallel() as block:
        block.spend(0.5)
        b.spend(0.5)
        block.spend(0.5)
        b.spend(0.5)
    assert a.spent == (0.5, 0.0) and b.spent == (1.0, 0.0)
    assert [e.block for e in b.ledger] == [(), ()]


def test_mechanisms_given_the_block_charge_the_maximum():
    import numpy as np
    data = np.arange(1000.0)
    acct = dp.Accountant(epsilon=1.5)
    with acct.parallel() as block:
        for i, part in enumerate(np.array_split(data, 4)):   # disjoint slices
            counts, _ = dp.histogram(part, bins=5, range=(0.0, 1000.0), epsilon=1.0,
                                     accountant=block, rng=dp.ChaCha20(seed=i))
            assert counts.shape == (5,)
        dp.laplace_mechanism(float(data[:10].sum()), sensitivity=10.0, epsilon=0.5,
                             accountant=acct, rng=dp.ChaCha20(seed=9))
    assert acct.spent == (1.5, 0.0)
    assert [e.label for e in acct.ledger] == ["histogram"] * 4 + ["laplace_mechanism"]
    assert [e.block for e in acct.ledger] == [block.path] * 4 + [()]


def test_concurrent_spends_into_one_parallel_block(fast_thread_switching):
    # Each thread's own partition sums its spends; the block costs the largest of them.
    acct = dp.Accountant(epsilon=2.5)
    start = threading.Barrier(8)
    successes = [0] * 8

    def worker(part, i):
        start.wait()
        for _ in range(500):
            try:
                part.spend(0.01 * (i + 1))
            except dp.BudgetExceededError:
                continue
            successes[i] += 1

    with acct.parallel() as block:
        threads = [threading.Thread(target=worker, args=(block.partition(), i))
                   for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    # Partition i holds floor(2.5 / (0.01 (i+1))) spends, capped at 500.
    assert successes == [min(500, int(Fraction("2.5") / (Fraction("0.01") * (i + 1))))
                         for i in range(8)]
    assert acct.spent == (2.5, 0.0)


# -- group privacy ---------------------------------------------------------------------
@pytest.mark.parametrize("k, eps, delta", [(2, 0.5, 1e-7), (3, 1.0, 1e-8), (10, 0.1, 1e-9),
                                           (5, 0.3, 1e-6)])
def test_group_delta_is_a_tight_upper_bound(k, eps, delta):
    import mpmath
    mpmath.mp.dps = 50
    acct = dp.Accountant(epsilon=100.0, delta=1.0, group_size=k)
    acct.spend(eps, delta)
    true = k * mpmath.exp((k - 1) * mpmath.mpf(Fraction(repr(eps)).numerator)
                          / Fraction(repr(eps)).denominator) * mpmath.mpf(repr(delta))
    charged = acct.spent[1]
    assert true <= mpmath.mpf(charged) <= true * (1 + mpmath.mpf("1e-15"))
    assert acct.spent[0] == float(k * Fraction(repr(eps)))
    assert acct.ledger[0].charged == acct.spent


def test_group_scaling_applies_to_whole_parallel_block_delta():
    # Block (max eps, max delta) = (1.0, 1e-6), scaled once: 2 e^1 1e-6, not per partition.
    import mpmath
    acct = dp.Accountant(epsilon=10.0, delta=1e-3, group_size=2)
    with acct.parallel() as block:
        block.spend(0.25, 1e-6)
        block.spend(1.0)
    assert acct.spent[0] == 2.0
    true = 2 * mpmath.e * mpmath.mpf("1e-6")
    assert true <= mpmath.mpf(acct.spent[1]) <= true * (1 + mpmath.mpf("1e-15"))


def test_group_delta_overflow_never_fits():
    acct = dp.Accountant(epsilon=1e6, delta=1.0, group_size=1000)
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(10.0, 1e-300)   # 1000 e^9990 1e-300 is astronomically above 1
    acct.spend(10.0)               # pure epsilon still fits: 10000
    assert acct.spent == (10000.0, 0.0)


# -- advanced composition --------------------------------------------------------------
def _drv(eps_list, delta_prime):
    """Independent high-precision advanced composition bound."""
    import mpmath
    mpmath.mp.dps = 50
    es = [mpmath.mpf(repr(e)) for e in eps_list]
    return (mpmath.sqrt(2 * mpmath.log(1 / mpmath.mpf(repr(delta_prime)))
                        * sum(e * e for e in es))
            + sum(e * mpmath.expm1(e) for e in es))


@pytest.mark.parametrize("k, eps, delta_prime", [(1, 1.0, 1e-5), (100, 0.1, 1e-6),
                                                 (1000, 0.01, 1e-9), (37, 0.3, 0.01)])
def test_advanced_composition_matches_independent_computation(k, eps, delta_prime):
    import mpmath
    acct = dp.Accountant(delta=1.0)
    for _ in range(k):
        acct.spend(eps, 1e-8)
    got_eps, got_delta = acct.advanced_composition(delta_prime)
    true = (mpmath.sqrt(2 * k * mpmath.log(1 / mpmath.mpf(repr(delta_prime))))
            * mpmath.mpf(repr(eps)) + k * mpmath.mpf(repr(eps)) * mpmath.expm1(repr(eps)))
    assert true <= got_eps <= true * (1 + mpmath.mpf("1e-13"))
    assert got_delta == float(k * Fraction("1e-8") + Fraction(repr(delta_prime)))
    assert acct.spent == (float(k * Fraction(repr(eps))), float(k * Fraction("1e-8")))


def test_advanced_composition_heterogeneous_and_parallel_units():
    import mpmath
    acct = dp.Accountant()
    acct.spend(0.5)
    with acct.parallel() as block:  # one unit of 0.25
        block.spend(0.25)
        block.spend(0.125)
    acct.spend(0.0625)
    got = acct.advanced_composition(1e-6)[0]
    true = _drv([0.5, 0.25, 0.0625], 1e-6)
    assert true <= got <= true * (1 + mpmath.mpf("1e-13"))
    assert dp.Accountant().advanced_composition(0.5) == (0.0, 0.5)


def test_opt_in_advanced_composition_admits_more_spends_only_when_tighter():
    import mpmath
    budget, eps, delta_prime = 2.0, 0.01, 1e-6
    acct = dp.Accountant(epsilon=budget, delta=1e-6, composition="advanced",
                         delta_prime=delta_prime)
    assert acct.composition == "advanced"
    acct.spend(eps)
    assert acct.spent == (0.01, 0.0)              # the sum is tighter here: reported as is
    n = 1
    while True:
        try:
            acct.spend(eps)
        except dp.BudgetExceededError:
            break
        n += 1
    # Independently: the largest k with the bound <= 2 (and far from the boundary).
    def bound(k):  # the textbook homogeneous form
        e = mpmath.mpf(repr(eps))
        return (mpmath.sqrt(2 * k * mpmath.log(1 / mpmath.mpf(repr(delta_prime)))) * e
                + k * e * mpmath.expm1(e))
    k = max(k for k in range(1, 3000) if bound(k) <= budget)
    assert bound(k) < budget - 1e-6 < budget + 1e-6 < bound(k + 1)
    assert n == k and 200 < k
    spent = acct.spent
    assert spent[1] == 1e-6 and bound(k) <= spent[0] <= budget
    # remaining: the exact rest, shown as a float whose reading as a charge fits in it
    left = Fraction(budget) - Fraction(spent[0])
    rem = acct.remaining
    assert rem[1] == 0.0 and Fraction(repr(rem[0])) <= left
    assert rem[0] == pytest.approx(float(left), rel=1e-15)
    assert len(acct) == k


def test_opt_in_advanced_composition_keeps_the_sum_when_it_is_smaller():
    acct = dp.Accountant(epsilon=1.0, delta=1e-5, composition="advanced", delta_prime=1e-5)
    acct.spend(1.0)                               # bound would be ~6.5: basic fills exactly
    assert acct.spent == (1.0, 0.0) and acct.remaining == (0.0, 1e-5)
    assert not acct.check(5e-324)
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(0.5)
    assert acct.spent == (1.0, 0.0) and len(acct) == 1
    # The basic accountant refuses the 201st spend that advanced composition allows.
    basic = dp.Accountant(epsilon=2.0, delta=1e-6)
    for _ in range(200):
        basic.spend(0.01)
    assert not basic.check(0.01)


# -- validation of the new parameters --------------------------------------------------
@pytest.mark.parametrize("kwargs, exc, name, got", [
    (dict(group_size=0), ValueError, "group_size", "0"),
    (dict(group_size=-2), ValueError, "group_size", "-2"),
    (dict(group_size=1.5), TypeError, "group_size", "1.5"),
    (dict(group_size=2.0), TypeError, "group_size", "2.0"),
    (dict(group_size="2"), TypeError, "group_size", "'2'"),
    (dict(group_size=None), TypeError, "group_size", "None"),
    (dict(group_size=True), TypeError, "group_size", "True"),
    (dict(composition="Advanced"), ValueError, "composition", "'Advanced'"),
    (dict(composition=None), TypeError, "composition", "None"),
    (dict(composition="advanced"), ValueError, "delta_prime", "None"),
    (dict(delta_prime=1e-7), ValueError, "delta_prime", "1e-07"),
    (dict(composition="advanced", delta_prime=0.0), ValueError, "delta_prime", "0.0"),
    (dict(composition="advanced", delta_prime=1.0), ValueError, "delta_prime", "1.0"),
    (dict(composition="advanced", delta_prime=float("nan")), ValueError, "delta_prime", "nan"),
    (dict(composition="advanced", delta_prime="1e-7"), TypeError, "delta_prime", "'1e-7'"),
    (dict(composition="advanced", delta_prime=1e-5), ValueError, "delta_prime", "1e-05"),
])
def test_new_constructor_parameters_are_validated(kwargs, exc, name, got):
    with pytest.raises(exc) as info:
        dp.Accountant(epsilon=1.0, delta=1e-6, **kwargs)
    assert not isinstance(info.value, dp.BudgetExceededError)
    if exc is ValueError:
        assert not isinstance(info.value, TypeError)
    msg = str(info.value)
    assert f"'{name}'" in msg and got in msg[msg.find("Got"):], msg


@pytest.mark.parametrize("call, exc, name, got", [
    (lambda a: a.advanced_composition(0.0), ValueError, "delta_prime", "0.0"),
    (lambda a: a.advanced_composition(1.5), ValueError, "delta_prime", "1.5"),
    (lambda a: a.advanced_composition(None), TypeError, "delta_prime", "None"),
    (lambda a: a.parallel(label=3), TypeError, "label", "3"),
    # Not a short number or string: shown by its type only (it could be private).
    (lambda a: a.parallel().partition(label=b"x"), TypeError, "label", "a bytes"),
    (lambda a: a.check(0.0), ValueError, "epsilon", "0.0"),
    (lambda a: a.check(0.1, 1.0), ValueError, "delta", "1.0"),
])
def test_new_method_arguments_are_validated_with_nothing_spent(call, exc, name, got):
    acct = dp.Accountant(epsilon=1.0, delta=1e-6)
    acct.spend(0.25, label="earlier")
    before = (acct.spent, acct.ledger)
    with acct.parallel():
        with pytest.raises(exc) as info:
            call(acct)
    msg = str(info.value)
    assert f"'{name}'" in msg and got in msg[msg.find("Got"):], msg
    assert (acct.spent, acct.ledger) == before


def test_ledger_entries_stay_three_tuples():
    acct = dp.Accountant(epsilon=1.0)
    with acct.parallel(label="p") as block:
        block.spend(0.5, label="x")
    (entry,) = acct.ledger
    assert isinstance(entry, dp.accounting.LedgerEntry) and len(entry) == 3
    eps, delta, label = entry
    assert (eps, delta, label) == (0.5, 0.0, "x") == (entry.epsilon, entry.delta, entry.label)
    assert entry.block == ("p",) and entry.charged == (0.5, 0.0)
    import pickle
    again = pickle.loads(pickle.dumps(entry))
    assert again == entry and again.block == entry.block and again.charged == entry.charged


def test_advanced_accountant_repr_and_huge_group_charges():
    # The delta' of the repr is the float given; a group charge beyond the float range makes
    # the advanced bound infinite (so the sequential sum applies) instead of failing.
    acct = dp.Accountant(epsilon=1.0, delta=1e-5, composition="advanced", delta_prime=1e-6)
    assert "delta_prime=1e-06" in repr(acct)
    big = dp.Accountant(delta=1e-6, composition="advanced", delta_prime=1e-6, group_size=2)
    big.spend(1e308)
    assert big.spent[0] == float("inf")          # 2e308 is beyond the float range
