"""Online private multiplicative weights (dpfast.linear.online): the accuracy theorem of the
module checked by simulation on a stream of 10^4 random range and marginal queries over the
Adult histogram (age by year x years of education), answers read off the synthetic
histogram with no update when it is accurate, one charge, halting, refusals that draw and
change nothing. Fixed seeds; no timing assertions."""
import doctest

import numpy as np
import pytest

import dpfast as dp
from dpfast.datasets import load_adult
from dpfast.linear import online
from dpfast.linear.workloads import Identity, Marginals, Prefixes, Ranges, Rectangles
from refusals import rng_state, spends_nothing

NAN, INF = float("nan"), float("inf")
DOMAIN = (74, 16)                       # age 17..90, education-num 1..16


@pytest.fixture(scope="module")
def adult():
    a = load_adult()
    age, edu = np.asarray(a["age"]) - 17, np.asarray(a["education-num"]) - 1
    return np.bincount(age * 16 + edu, minlength=74 * 16).astype(float)


def stream(k=10_000, seed=0):
    """k random queries: rectangles (age range x education range), 1-way marginal cells and
    cells; as (workload, indices) chunks of 100 queries in a random order of kinds."""
    rng = np.random.default_rng(seed)
    workloads = [Rectangles(DOMAIN), Marginals(DOMAIN, k=1), Identity(DOMAIN)]
    kinds = rng.integers(0, 3, k)
    chunks = []
    for start in range(0, k, 100):
        part = kinds[start:start + 100]
        for w in range(3):
            n = int(np.count_nonzero(part == w))
            if n:
                chunks.append((workloads[w], rng.integers(0, workloads[w].n_queries, n)))
    return chunks


def run_stream(pmw, x, chunks):
    """The errors of every answer (in records), and the answers read off x_hat."""
    errors = []
    for wl, idx in chunks:
        before = pmw.updates_used
        synth = wl.answer(pmw.synthetic)[idx]
        answers = pmw.answer(wl, queries=idx)
        errors.append(np.abs(answers - wl.answer(x)[idx[:answers.size]]))
        if pmw.updates_used == before:
            # No update in this chunk: every answer is the synthetic histogram's.
            assert np.array_equal(answers, synth)
    return np.concatenate(errors)


def test_accuracy_theorem_on_adult(adult):
    n, k = float(adult.sum()), 10_000
    acct = dp.Accountant()
    pmw = dp.PrivateMultiplicativeWeights(adult, epsilon=1.0, alpha=0.5, total=n,
                                          accountant=acct, rng=1)
    assert pmw.updates_suffice(k, beta=0.05)                 # the theorem applies
    errors = run_stream(pmw, adult, stream(k))
    assert errors.size == k and not pmw.halted
    assert errors.max() <= 0.5 * n                            # alpha n
    assert errors.max() <= pmw.error_bound(k, beta=0.05)
    assert errors.mean() < 0.05 * n                           # typical errors are far smaller
    assert pmw.updates_used < 20 and pmw.answered == k
    assert acct.spent == (1.0, 0.0) and len(acct) == 1        # one charge, at creation


@pytest.mark.parametrize("alpha", [0.15, 0.3])
def test_error_bound_holds_when_updates_may_not_suffice(adult, alpha):
    # Below the alpha the theorem covers, the per-answer bound still holds (until a halt).
    n = float(adult.sum())
    pmw = dp.PrivateMultiplicativeWeights(adult, epsilon=1.0, alpha=alpha, total=n,
                                          accountant=dp.Accountant(), rng=2)
    assert not pmw.updates_suffice(10_000)
    errors = run_stream(pmw, adult, stream(1_000, seed=3))
    assert errors.max() <= pmw.error_bound(1_000)


def test_bound_fails_rarely_over_many_runs(adult):
    # 12 runs of 500 queries at beta = 0.05: the bound may fail in 1 run in 20 at most;
    # allowing 2 failures keeps the false-alarm rate of this test below 2 %.
    n = float(adult.sum())
    failures = 0
    for seed in range(12):
        pmw = dp.PrivateMultiplicativeWeights(adult, epsilon=0.5, alpha=0.3, total=n,
                                              accountant=dp.Accountant(), rng=100 + seed)
        errors = run_stream(pmw, adult, stream(500, seed=seed))
        failures += bool(errors.max() > pmw.error_bound(500, beta=0.05))
    assert failures <= 2


def test_measured_total_and_its_share(adult):
    acct = dp.Accountant()
    pmw = dp.PrivateMultiplicativeWeights(adult, epsilon=1.0, alpha=0.4, accountant=acct,
                                          rng=4)
    assert pmw.total_epsilon == pytest.approx(0.05)
    assert abs(pmw.total - adult.sum()) < 200                 # Laplace of scale 20
    assert pmw.synthetic.sum() == pytest.approx(pmw.total)
    assert acct.spent == (1.0, 0.0) and len(acct) == 1


def test_updates_move_towards_the_truth():
    # A histogram far from uniform, a large epsilon: queries with a large error get
    # measured, and the synthetic histogram's error on them drops.
    x = np.zeros(32)
    x[:4] = 1000.0
    wl = Prefixes(32)
    pmw = dp.PrivateMultiplicativeWeights(x, epsilon=50.0, alpha=0.2, total=4000.0,
                                          accountant=dp.Accountant(), rng=5)
    before = np.abs(wl.answer(pmw.synthetic) - wl.answer(x)).max()
    pmw.answer(wl)
    after = np.abs(wl.answer(pmw.synthetic) - wl.answer(x)).max()
    assert pmw.updates_used >= 1 and after < 0.7 * before


def test_halts_after_its_updates_and_then_raises():
    x = np.zeros(64)
    x[::8] = 500.0
    pmw = dp.PrivateMultiplicativeWeights(x, epsilon=100.0, alpha=0.05, updates=2,
                                          total=4000.0, accountant=dp.Accountant(), rng=6)
    answers = pmw.answer(Identity(64))
    assert pmw.halted and pmw.updates_used == 2 and answers.size < 64
    assert pmw.answered == answers.size
    with pytest.raises(dp.SparseVectorHalted, match="2 updates"):
        pmw.answer(Identity(64), queries=[0])


def test_same_seed_same_answers_other_seed_differs(adult):
    chunks = stream(500, seed=7)
    out = []
    for seed in (8, 8, 9):
        pmw = dp.PrivateMultiplicativeWeights(adult, epsilon=1.0, alpha=0.3, total=32561.0,
                                              accountant=dp.Accountant(), rng=seed)
        out.append(np.concatenate([pmw.answer(wl, queries=idx) for wl, idx in chunks]))
    assert np.array_equal(out[0], out[1]) and not np.array_equal(out[0], out[2])


def test_all_queries_of_a_workload_in_order():
    x = np.random.default_rng(1).poisson(50, 16).astype(float)
    a = dp.PrivateMultiplicativeWeights(x, epsilon=2.0, alpha=0.2, accountant=dp.Accountant(),
                                        rng=3).answer(Ranges(16))
    b = dp.PrivateMultiplicativeWeights(x, epsilon=2.0, alpha=0.2, accountant=dp.Accountant(),
                                        rng=3).answer(Ranges(16), queries=np.arange(136))
    assert a.shape == (136,) and np.array_equal(a, b)


def test_docstring_examples():
    result = doctest.testmod(online, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


# -- refusals --------------------------------------------------------------------------

X = np.array([3.0, 0.0, 7.0, 1.0])
BAD_CREATE = [
    ({"counts": [1.0, NAN]}, ValueError, "counts"), ({"counts": [1.0, -2.0]}, ValueError, "counts"),
    ({"counts": []}, ValueError, "counts"), ({"counts": ["a", "b"]}, TypeError, "counts"),
    ({"counts": np.ma.masked_array(X, mask=X > 2)}, TypeError, "counts"),
    ({"epsilon": 0.0}, ValueError, "epsilon"), ({"epsilon": NAN}, ValueError, "epsilon"),
    ({"alpha": 0.0}, ValueError, "alpha"), ({"alpha": 1.5}, ValueError, "alpha"),
    ({"alpha": NAN}, ValueError, "alpha"), ({"alpha": "0.1"}, TypeError, "alpha"),
    ({"updates": 0}, ValueError, "updates"), ({"updates": 2.5}, TypeError, "updates"),
    ({"total": 0.0}, ValueError, "total"), ({"total": INF}, ValueError, "total"),
    ({"shares": (0.5, 0.5)}, ValueError, "shares"), ({"shares": (0.5, 0.5, 0.5)}, ValueError, "shares"),
    ({"rng": "seed"}, TypeError, "rng"), ({"threads": 0}, ValueError, "threads"),
    ({"accountant": "acct"}, TypeError, "accountant"),
]


@pytest.mark.parametrize("overrides, exc, name", BAD_CREATE,
                         ids=[f"{n}-{i}" for i, (_, _, n) in enumerate(BAD_CREATE)])
def test_bad_creation_spends_nothing_and_draws_nothing(overrides, exc, name):
    acct, rng = dp.Accountant(epsilon=10.0), dp.ChaCha20(7)
    acct.spend(0.25, label="earlier")
    kwargs = {"counts": X, "epsilon": 1.0, "alpha": 0.2, "accountant": acct, "rng": rng,
              **overrides}
    counts = kwargs.pop("counts")
    with spends_nothing(acct, rng), pytest.raises(exc) as info:
        dp.PrivateMultiplicativeWeights(counts, **kwargs)
    assert f"'{name}'" in str(info.value)


@pytest.mark.parametrize("args, exc, name", [
    ((Identity(5),), ValueError, "workload"), ((np.eye(4),), TypeError, "workload"),
    ((Identity(4), [0, 4]), ValueError, "queries"), ((Identity(4), [-1]), ValueError, "queries"),
    ((Identity(4), [0.5]), TypeError, "queries"), ((Identity(4), [[0, 1]]), TypeError, "queries"),
])
def test_bad_queries_draw_nothing_and_change_nothing(args, exc, name):
    rng = dp.ChaCha20(3)
    pmw = dp.PrivateMultiplicativeWeights(X, epsilon=1.0, alpha=0.5, total=11.0,
                                          accountant=dp.Accountant(), rng=rng)
    state, xhat = rng_state(rng), pmw.synthetic
    with pytest.raises(exc, match=f"'{name}'"):
        pmw.answer(*args)
    assert rng_state(rng) == state and np.array_equal(pmw.synthetic, xhat)
    assert (pmw.answered, pmw.updates_used) == (0, 0) and not pmw.halted
