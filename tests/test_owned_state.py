"""Owned state (dpfast._owned): the sparse-vector objects and private multiplicative weights
carry a budget already charged, so each has one owner. Real threads released together never
get more above-threshold answers (or updates) than the cutoff; a call re-entering the same
object is refused, never deadlocked; copy, deepcopy and pickle are refused; a forked child
(os.fork, a multiprocessing 'fork' worker, libc's fork through ctypes) cannot answer, and
the parent goes on exactly like a twin that never forked; the public state is read-only; bad
input spends, draws and counts nothing and its message shows no data value."""
import copy
import ctypes
import multiprocessing
import os
import pickle
import sys
import threading

import numpy as np
import pytest

import dpfast as dp
from dpfast.linear.workloads import Identity
from refusals import rng_state

CHUNK_PLUS = 70_000      # just over one kernel chunk (65,536): the kernels release the GIL
THREADS, TRIALS = 8, 100


def make(kind, rng=1, cutoff=3):
    """A fresh object of each kind, with a cutoff (or update limit) of ``cutoff``."""
    acct = dp.Accountant()
    if kind == "AboveThreshold":
        return dp.AboveThreshold(1000, epsilon=1.0, accountant=acct, rng=rng)
    if kind == "Sparse":
        return dp.Sparse(1000, epsilon=1.0, cutoff=cutoff, accountant=acct, rng=rng)
    if kind == "NumericSparse":
        return dp.NumericSparse(1000, epsilon=1.0, cutoff=cutoff, accountant=acct, rng=rng)
    x = np.zeros(CHUNK_PLUS)
    x[::7_000] = 1_000.0                           # ten spikes: far from uniform
    return dp.PrivateMultiplicativeWeights(x, epsilon=50.0, alpha=0.05, updates=cutoff,
                                           total=10_000.0, accountant=acct, rng=rng)


KINDS = ["AboveThreshold", "Sparse", "NumericSparse", "PrivateMultiplicativeWeights"]


def ask(obj, values=None):
    """One call of the object's own kind, on CHUNK_PLUS queries at the threshold (or the
    whole identity workload): the number of above answers (or updates) it gave and the
    number of queries it answered."""
    if isinstance(obj, dp.PrivateMultiplicativeWeights):
        before = obj.updates_used
        out = obj.answer(Identity(CHUNK_PLUS))
        return obj.updates_used - before, out.size
    values = np.full(CHUNK_PLUS, 1000) if values is None else values
    out = obj.query(values)
    if isinstance(obj, dp.NumericSparse):
        above, released = out
        assert released.size == int(above.sum())
        return int(above.sum()), above.size
    return int(np.sum(out)), np.size(out)


def limit(obj):
    return obj.updates if isinstance(obj, dp.PrivateMultiplicativeWeights) else obj.cutoff


# -- threads -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_threads_released_together_never_pass_the_cutoff(kind):
    for trial in range(TRIALS):
        obj = make(kind, rng=trial)
        barrier = threading.Barrier(THREADS)
        results, errors = [], []

        def worker():
            barrier.wait()
            try:
                results.append(ask(obj))
            except dp.SparseVectorHalted:
                pass
            except BaseException as exc:            # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        aboves = sum(a for a, _ in results)
        asked = sum(n for _, n in results)
        assert aboves <= limit(obj), (kind, trial, aboves)
        if isinstance(obj, dp.PrivateMultiplicativeWeights):
            assert obj.updates_used == aboves and obj.answered == asked
        else:
            assert obj.above == aboves and obj.asked == asked


class CallsBack:
    """A query array (or index array) whose conversion calls the same object again."""

    def __init__(self, obj, data):
        self.obj, self.data, self.caught = obj, data, None

    def __array__(self, dtype=None, copy=None):
        try:
            ask(self.obj)
        except RuntimeError as exc:
            self.caught = exc
            raise
        return self.data


@pytest.mark.parametrize("kind", KINDS)
def test_a_call_re_entering_the_same_object_is_refused_not_deadlocked(kind):
    rng = dp.ChaCha20(4)
    obj = make(kind, rng=rng)
    state = rng_state(rng)
    back = CallsBack(obj, np.array([0, 1, 2]))
    with pytest.raises(RuntimeError, match="already in a call"):
        if isinstance(obj, dp.PrivateMultiplicativeWeights):
            obj.answer(Identity(CHUNK_PLUS), queries=back)
        else:
            obj.query(back)
    assert back.caught is not None and "same thread" in str(back.caught)
    assert rng_state(rng) == state                       # neither call drew
    # The object is free again afterwards.
    assert ask(obj)[1] > 0


def test_another_thread_waits_for_its_turn():
    s = dp.Sparse(1000, epsilon=1.0, cutoff=2, accountant=dp.Accountant(), rng=2)
    inside, go = threading.Event(), threading.Event()

    class Slow:
        def __array__(self, dtype=None, copy=None):
            inside.set()
            go.wait()
            return np.array([0, 0])

    first = threading.Thread(target=s.query, args=(Slow(),))
    first.start()
    inside.wait()
    second_out = []
    second = threading.Thread(target=lambda: second_out.append(s.query([0, 0, 0])))
    second.start()
    second.join(0.2)
    assert second.is_alive() and s.asked == 0            # waiting, not refused
    go.set()
    first.join()
    second.join()
    assert second_out[0].size == 3 and s.asked == 5


# -- copies --------------------------------------------------------------------------------

COPIES = {
    "copy": copy.copy, "deepcopy": copy.deepcopy,
    **{f"pickle{p}": (lambda p: lambda o: pickle.dumps(o, protocol=p))(p)
       for p in range(pickle.HIGHEST_PROTOCOL + 1)},
    "pickle-in-list": lambda o: pickle.dumps([1, {"svt": (o,)}]),
    "deepcopy-in-dict": lambda o: copy.deepcopy({"k": [o]}),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", list(COPIES))
def test_copies_are_refused(kind, how):
    obj = make(kind)
    with pytest.raises(TypeError, match="cannot be copied or pickled") as info:
        COPIES[how](obj)
    assert "charge" in str(info.value)


def test_pickles_never_carry_the_noisy_threshold_or_the_histogram():
    # What an earlier version pickled: refused before any state is read.
    for kind in KINDS:
        obj = make(kind)
        for name in ("__getstate__", "__reduce__"):
            with pytest.raises(TypeError, match="cannot be copied or pickled"):
                getattr(obj, name)()


# -- forked children -----------------------------------------------------------------------

def in_child(obj, fork):
    """Fork with ``fork``; in the child, try one call and report by exit code: 0 refused
    with RuntimeError, 1 answered, 2 anything else. The parent's exit code of the child."""
    pid = fork()
    if pid == 0:                                          # pragma: no cover - child
        code = 2
        try:
            ask(obj)
            code = 1
        except RuntimeError as exc:
            code = 0 if "forked" in str(exc) else 2
        except BaseException:
            code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def libc_fork():
    """fork(2) straight through libc: Python's at-fork hooks do not run."""
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.fork()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("fork", [os.fork, libc_fork], ids=["os.fork", "libc.fork"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_forked_child_cannot_answer_and_the_parent_goes_on(kind, fork):
    obj, twin = make(kind, rng=21), make(kind, rng=21)
    values = np.full(CHUNK_PLUS, 990)
    if not isinstance(obj, dp.PrivateMultiplicativeWeights):
        assert np.array_equal(np.asarray(obj.query(values[:5])[0]),
                              np.asarray(twin.query(values[:5])[0]))
    assert in_child(obj, fork) == 0
    # The parent's object goes on exactly like its twin that never forked.
    if isinstance(obj, dp.PrivateMultiplicativeWeights):
        assert np.array_equal(obj.answer(Identity(CHUNK_PLUS)), twin.answer(Identity(CHUNK_PLUS)))
        assert obj.updates_used == twin.updates_used
    else:
        a, b = obj.query(values), twin.query(values)
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            assert np.array_equal(x, y)
        assert (obj.asked, obj.above) == (twin.asked, twin.above)


_SHARED = {}


def _pool_ask(kind):
    try:
        return ask(_SHARED[kind])
    except RuntimeError as exc:
        return str(exc)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs the 'fork' start method")
def test_a_fork_pool_worker_cannot_answer():
    for kind in KINDS:
        _SHARED[kind] = make(kind, rng=5)
    twins = {kind: make(kind, rng=5) for kind in KINDS}
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            out = pool.map(_pool_ask, KINDS)
        for kind, message in zip(KINDS, out):
            assert isinstance(message, str) and "forked" in message, (kind, message)
            assert ask(_SHARED[kind]) == ask(twins[kind])
    finally:
        _SHARED.clear()


# -- read-only state -----------------------------------------------------------------------

SVT_PUBLIC = ["cutoff", "above", "asked", "epsilon", "sensitivity", "monotonic", "threshold",
              "shares", "halted"]
PMW_PUBLIC = ["epsilon", "alpha", "updates", "total", "shares", "total_epsilon",
              "updates_used", "answered", "threshold", "halted"]


@pytest.mark.parametrize("kind", KINDS)
def test_public_state_is_read_only(kind):
    obj = make(kind)
    names = PMW_PUBLIC if kind == "PrivateMultiplicativeWeights" else SVT_PUBLIC
    for name in names:
        before = getattr(obj, name)
        with pytest.raises(AttributeError):
            setattr(obj, name, 1000)
        with pytest.raises(AttributeError):
            delattr(obj, name)
        assert getattr(obj, name) == before


def test_raising_the_cutoff_by_assignment_gives_no_more_answers():
    s = dp.AboveThreshold(0, epsilon=1.0, accountant=dp.Accountant(), rng=3)
    s.query(np.full(100, 50))
    assert s.halted
    with pytest.raises(AttributeError):
        s.cutoff = 1000
    with pytest.raises(dp.SparseVectorHalted):
        s.query(np.full(100, 50))


# -- bad input -----------------------------------------------------------------------------

MARKER = 7.77e300                # a private value that must never appear in a message


@pytest.mark.parametrize("kind", ["Sparse", "NumericSparse"])
@pytest.mark.parametrize("values, where", [
    ([1.0, 2.0, MARKER], "an entry at index 2 is beyond it"),
    (np.array([MARKER, 0.0]), "an entry at index 0 is beyond it"),
    (MARKER, "a value that is beyond it"),
])
def test_bad_queries_spend_draw_and_count_nothing_and_show_no_value(kind, values, where):
    rng = dp.ChaCha20(9)
    cls = dp.Sparse if kind == "Sparse" else dp.NumericSparse
    s = cls(1000.0, epsilon=1.0, cutoff=2, accountant=dp.Accountant(), rng=rng)
    s.query([1.0])
    state, counters = rng_state(rng), (s.asked, s.above)
    with pytest.raises(ValueError) as info:
        s.query(values)
    msg = str(info.value)
    assert "'values'" in msg and where in msg
    assert "7.77" not in msg and "e+300" not in msg
    assert rng_state(rng) == state and (s.asked, s.above) == counters


def test_integer_queries_refused_by_kind_not_by_value():
    s = dp.Sparse(5, epsilon=1.0, accountant=dp.Accountant(), rng=1)
    with pytest.raises(TypeError, match="'values'") as info:
        s.query(123.456)
    assert "123" not in str(info.value)


def test_bad_pmw_query_indices_show_their_index_not_their_value():
    rng = dp.ChaCha20(3)
    pmw = dp.PrivateMultiplicativeWeights(np.array([3.0, 0.0, 7.0, 1.0]), epsilon=1.0,
                                          alpha=0.5, total=11.0, accountant=dp.Accountant(),
                                          rng=rng)
    state, xhat = rng_state(rng), pmw.synthetic
    with pytest.raises(ValueError) as info:
        pmw.answer(Identity(4), queries=[0, 1, 98765])
    msg = str(info.value)
    assert "'queries'" in msg and "an entry at index 2 is out of range" in msg
    assert "98765" not in msg
    assert rng_state(rng) == state and np.array_equal(pmw.synthetic, xhat)
    assert (pmw.answered, pmw.updates_used) == (0, 0)
