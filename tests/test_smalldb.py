"""SmallDB: the exact output distribution (known and noisy totals, one block or many), the
accuracy bound and its two ingredients, one charge, refusals before any charge, thread and
work-size independence, the enumeration, and the selection kernel it adds.

Statistical tests use fixed seeds, so they are deterministic; each comment states the
false-alarm rate the test would have for a random seed.
"""
import doctest
import importlib
import itertools
import math

import numpy as np
import pytest
from scipy import stats

import dpfast as dp
from dpfast import _native
from dpfast.linear.small_database import (SmallDBRelease, smalldb, smalldb_error_bound,
                                   smalldb_size)
from dpfast.linear.workloads import Explicit, Identity, Marginals, Prefixes, Ranges
from refusals import rng_state, spends_nothing

# The module (the package may export the function under the same name).
sdb = importlib.import_module("dpfast.linear.small_database")

ALPHA_TEST = 1e-4          # false-alarm rate of each chi-square test


# -- exact references -------------------------------------------------------------------------

def databases(n, m):
    """Every database of m records over n cells, as count tuples."""
    return [tuple(np.bincount(c, minlength=n))
            for c in itertools.combinations_with_replacement(range(n), m)]


def utility(x, matrix, y, total, m):
    """-max_q |q.x - (T/m) q.y|, by the definition."""
    return -np.max(np.abs(matrix @ x - (total / m) * (matrix @ np.asarray(y, float))))


def em_pmf(x, matrix, total, m, epsilon):
    """{database: P[database]} of the exponential mechanism, P ~ exp(eps u / 2)."""
    ys = databases(len(x), m)
    u = np.array([utility(x, matrix, y, total, m) for y in ys])
    w = np.exp(epsilon * (u - u.max()) / 2)
    return dict(zip(ys, w / w.sum()))


def dlap_pmf(z, epsilon):
    p = math.exp(-epsilon)
    return (1 - p) / (1 + p) * p ** abs(z)


def chi_square_pvalue(observed, expected):
    """Pearson's test with bins of expected count below 5 pooled (and the pool kept only if
    it is itself at least 5)."""
    keys = list(expected)
    exp = np.array([expected[k] for k in keys])
    obs = np.array([observed.get(k, 0) for k in keys], dtype=float)
    assert sum(observed.values()) == pytest.approx(exp.sum())
    assert set(observed) <= set(keys)
    small = exp < 5
    e = np.append(exp[~small], exp[small].sum())
    o = np.append(obs[~small], obs[small].sum())
    if e[-1] < 5:
        e[-2] += e[-1]
        o[-2] += o[-1]
        e, o = e[:-1], o[:-1]
    return stats.chisquare(o, e).pvalue


# A tiny problem: 4 cells, 3 queries (one fractional), m = ceil(ln 3 / 0.49) = 3, so
# C(6, 3) = 20 candidate databases.
X = np.array([3, 1, 0, 2])
W = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0.5, 0, 1, 1]])
QUERIES = Explicit(W)
ALPHA = 0.7
M = 3


def test_tiny_problem_parameters():
    assert smalldb_size(3, ALPHA) == M
    rel = smalldb(X, QUERIES, epsilon=1.0, alpha=ALPHA, total=6, rng=0,
                  accountant=dp.Accountant())
    assert (rel.m, rel.n_candidates) == (M, math.comb(4 + M - 1, M)) == (3, 20)


def run_many(runs, seed, **kwargs):
    g, acct = dp.ChaCha20(seed), dp.Accountant()
    out = {}
    for _ in range(runs):
        rel = smalldb(X, QUERIES, alpha=ALPHA, rng=g, accountant=acct, **kwargs)
        key = tuple(rel.database.tolist()) if kwargs.get("total") is not None else \
            (rel.total, tuple(rel.database.tolist()))
        out[key] = out.get(key, 0) + 1
    return out


@pytest.mark.parametrize("block", [None, 3])
def test_known_total_distribution_is_the_exponential_mechanism(block, monkeypatch):
    # block=3: seven kernel calls, one fresh key each, combined by their best noisy scores;
    # the distribution must still be exact. False-alarm rate 1e-4 each.
    if block is not None:
        monkeypatch.setattr(sdb, "SELECT_BLOCK", block)
    runs, eps = 3000 if block is None else 1500, 2.0
    observed = run_many(runs, 11 if block is None else 12, epsilon=eps, total=6)
    pmf = em_pmf(X, W, 6, M, eps)
    expected = {y: runs * p for y, p in pmf.items()}
    assert chi_square_pvalue(observed, expected) > ALPHA_TEST
    # Not uniform: the test has power.
    assert max(pmf.values()) > 4 * min(pmf.values())


@pytest.mark.parametrize("block", [None, 6])
def test_noisy_total_joint_distribution(block, monkeypatch):
    # (noisy total, database): the total is max(6 + Z, 0), Z discrete Laplace at
    # TOTAL_FRACTION * eps; given it, the exponential mechanism at the rest with T = total.
    # False-alarm rate 1e-4 each.
    if block is not None:
        monkeypatch.setattr(sdb, "SELECT_BLOCK", block)
    runs, eps = 3000 if block is None else 1500, 2.0
    eps_n = sdb.TOTAL_FRACTION * eps
    eps_em = eps - eps_n
    observed = run_many(runs, 21 if block is None else 22, epsilon=eps)
    expected = {}
    for z in range(-60, 80):
        total = float(max(6 + z, 0))
        for y, p in em_pmf(X, W, total, M, eps_em).items():
            key = (total, y)
            expected[key] = expected.get(key, 0.0) + runs * dlap_pmf(z, eps_n) * p
    assert chi_square_pvalue(observed, expected) > ALPHA_TEST


# -- accuracy ---------------------------------------------------------------------------------

def normalised_error(x, matrix, synthetic):
    return np.max(np.abs(matrix @ x - matrix @ synthetic)) / x.sum()


def test_some_small_database_is_alpha_accurate():
    # Theorem 4.2 (the alpha in the bound), by brute force over random instances, including
    # one and two queries where smalldb_size departs from the textbook.
    gen = np.random.default_rng(5)
    for trial in range(40):
        n, q = int(gen.integers(2, 5)), int(gen.integers(1, 6))
        alpha = float(gen.uniform(0.45, 0.95))
        matrix = gen.random((q, n)) * (gen.random((q, n)) < 0.7)
        x = gen.integers(0, 30, n)
        x[0] += 1
        m = smalldb_size(q, alpha)
        best = min(np.max(np.abs(matrix @ x / x.sum() - matrix @ np.array(y) / m))
                   for y in databases(n, m))
        assert best <= alpha, (trial, n, q, alpha)


def test_smalldb_size():
    for q, alpha in [(3, 0.5), (10, 0.3), (100, 0.9), (2**20, 0.1), (7, 0.99)]:
        assert smalldb_size(q, alpha) == math.ceil(math.log(q) / alpha**2)
    # One or two queries: the least m with 2|Q| exp(-2 m alpha^2) < 1 when it is larger.
    for q, alpha in [(1, 0.5), (2, 0.5), (1, 0.1), (2, 0.9)]:
        m = smalldb_size(q, alpha)
        assert 2 * q * math.exp(-2 * m * alpha**2) < 1
        assert m == math.ceil(math.log(q) / alpha**2) or \
            2 * q * math.exp(-2 * (m - 1) * alpha**2) >= 1
    with pytest.raises(ValueError, match="alpha"):
        smalldb_size(10, 1e-9)
    with pytest.raises(TypeError):
        smalldb_size(2.5, 0.5)


def test_error_bound_formula():
    m = smalldb_size(21, 0.6)
    known = 0.6 + 2 * (m * math.log(6) + math.log(1 / 0.1)) / (0.8 * 200)
    assert smalldb_error_bound(6, 21, 200, 0.8, 0.6, 0.1) == pytest.approx(known)
    en, ee = 0.2 * 0.8, 0.8 * 0.8
    noisy = 0.6 + (math.log(4 / 0.1) / en + 2 * (m * math.log(6) + math.log(2 / 0.1)) / ee) / 200
    assert smalldb_error_bound(6, 21, 200, 0.8, 0.6, 0.1, known_total=False) == \
        pytest.approx(noisy)
    # The textbook's form: alpha + 2 (log|X| log|Q| / alpha^2 + log(1/beta)) / (eps ||x||),
    # with the integer m for log|Q| / alpha^2.
    assert smalldb_error_bound(16, 100, 1e4, 1.0, 0.5, 0.05) == pytest.approx(
        0.5 + 2 * (19 * math.log(16) + math.log(20)) / 1e4)
    for bad in [dict(beta=0.0), dict(beta=1.0), dict(epsilon=0.0), dict(total=-1.0),
                dict(alpha=1.0)]:
        args = dict(n_cells=6, n_queries=21, total=200, epsilon=0.8, alpha=0.6, beta=0.1)
        args.update(bad)
        with pytest.raises(ValueError):
            smalldb_error_bound(**args)


@pytest.mark.parametrize("known", [True, False])
def test_error_bound_holds(known):
    # 6 cells, all 21 ranges, m = 9 (2002 candidates), 200 records; epsilon chosen so that
    # the bound (about 0.9) is not vacuous. The fraction of runs above it must be at most
    # beta (the bound is conservative: runs above it are far rarer than beta).
    x = np.array([50, 10, 0, 0, 60, 80])
    queries = Ranges(6)
    matrix = np.stack([queries.query(i) for i in range(queries.n_queries)])
    eps, alpha, beta, runs = 0.6 if known else 1.0, 0.6, 0.1, 150
    bound = smalldb_error_bound(6, 21, 200, eps, alpha, beta, known_total=known)
    assert 0.75 < bound < 1.0
    g, acct = dp.ChaCha20(31), dp.Accountant()
    errors = []
    for _ in range(runs):
        rel = smalldb(x, queries, epsilon=eps, alpha=alpha, total=200 if known else None,
                      rng=g, accountant=acct)
        assert rel.error_bound(beta, total=200) == bound
        errors.append(normalised_error(x, matrix, rel.synthetic))
    assert np.mean(np.array(errors) > bound) <= beta


def test_exponential_mechanism_loss_is_within_its_bound():
    # The other ingredient: P[u(out) < OPT - (2/eps)(ln R + ln(1/beta))] <= beta, with R the
    # exact number of candidates; here the loss term is comparable to the utility range.
    # Binomial false-alarm rate below 1e-4 (the theorem's rate is at most beta = 0.2; we
    # allow the 1 - 1e-4 binomial quantile).
    x = np.array([7, 0, 3, 9])
    queries = Prefixes(4)
    matrix = np.stack([queries.query(i) for i in range(4)])
    alpha, eps, beta, runs = 0.6, 2.0, 0.2, 300
    m = smalldb_size(4, alpha)
    u = {y: utility(x, matrix, y, 19, m) for y in databases(4, m)}
    cutoff = max(u.values()) - 2 / eps * (math.log(len(u)) + math.log(1 / beta))
    g, acct = dp.ChaCha20(41), dp.Accountant()
    low = sum(u[tuple(smalldb(x, queries, epsilon=eps, alpha=alpha, total=19, rng=g,
                              accountant=acct).database.tolist())] < cutoff
              for _ in range(runs))
    assert low <= stats.binom.ppf(1 - 1e-4, runs, beta)


# -- the release ------------------------------------------------------------------------------

def test_release_contents_2d():
    queries = Marginals((3, 2), k=1)             # 5 queries over a 3 x 2 universe
    counts = np.array([[4, 0], [1, 2], [0, 3]])
    rel = smalldb(counts, queries, epsilon=1.0, alpha=0.8, total=10, rng=3,
                  accountant=dp.Accountant())
    assert isinstance(rel, SmallDBRelease)
    assert rel.m == smalldb_size(5, 0.8) == 3
    assert rel.n_candidates == math.comb(6 + 3 - 1, 3)
    assert rel.database.shape == counts.shape and rel.database.dtype == np.int64
    assert rel.database.sum() == rel.m and rel.database.min() >= 0
    np.testing.assert_array_equal(rel.synthetic, rel.database * 10 / rel.m)
    np.testing.assert_allclose(rel.answers, queries.answer(rel.synthetic))
    assert rel.total == 10 and rel.known_total
    assert rel.error_bound(0.05) == smalldb_error_bound(6, 5, 10, 1.0, 0.8, 0.05)
    assert "m=3" in repr(rel)
    flat = smalldb(counts.ravel(), queries, epsilon=1.0, alpha=0.8, total=10, rng=3,
                   accountant=dp.Accountant())
    np.testing.assert_array_equal(flat.database, rel.database.ravel())


def test_noisy_total_release():
    rel = smalldb(X, QUERIES, epsilon=1.0, alpha=ALPHA, rng=4, accountant=dp.Accountant())
    assert not rel.known_total and rel.total >= 0 and rel.total == int(rel.total)
    np.testing.assert_array_equal(rel.synthetic, rel.database * rel.total / M)
    with pytest.raises(ValueError, match="true number of records"):
        rel.error_bound(0.1)
    assert rel.error_bound(0.1, total=6) == smalldb_error_bound(4, 3, 6, 1.0, ALPHA, 0.1,
                                                                known_total=False)


def test_one_cell_and_whole_float_counts():
    rel = smalldb([5], Identity(1), epsilon=1.0, alpha=0.5, total=5, rng=0,
                  accountant=dp.Accountant())
    assert rel.n_candidates == 1 and rel.database.tolist() == [rel.m]
    a = smalldb(X.astype(float), QUERIES, epsilon=1.0, alpha=ALPHA, total=6, rng=9,
                accountant=dp.Accountant())
    b = smalldb(X, QUERIES, epsilon=1.0, alpha=ALPHA, total=6, rng=9,
                accountant=dp.Accountant())
    np.testing.assert_array_equal(a.database, b.database)


def test_two_cells_many_records():
    # m = 173,287 records over 2 cells: the bars form (one position per candidate).
    rel = smalldb(np.array([300, 700]), Identity(2), epsilon=1.0, alpha=0.002, total=1000,
                  rng=0, accountant=dp.Accountant())
    assert rel.n_candidates == rel.m + 1 == smalldb_size(2, 0.002) + 1
    assert rel.database.sum() == rel.m
    # The exponential mechanism's loss here is about (2/eps) ln(m + 1) = 24 records.
    np.testing.assert_allclose(rel.synthetic, [300, 700], atol=60)


@pytest.mark.parametrize("total", [6, None])
def test_one_charge_of_exactly_epsilon(total):
    acct = dp.Accountant(epsilon=0.7)
    smalldb(X, QUERIES, epsilon=0.7, alpha=ALPHA, total=total, rng=1, accountant=acct)
    assert acct.spent == (0.7, 0.0) and len(acct) == 1
    # Over budget: refused by the accountant, nothing drawn.
    g = dp.ChaCha20(2)
    with spends_nothing(acct, g), pytest.raises(dp.BudgetExceededError):
        smalldb(X, QUERIES, epsilon=0.1, alpha=ALPHA, total=total, rng=g, accountant=acct)


def test_refuses_too_many_candidates_with_the_count():
    acct, g = dp.Accountant(), dp.ChaCha20(0)
    queries = Identity(10)                       # m = ceil(ln 10 / 0.25) = 10
    with spends_nothing(acct, g), pytest.raises(ValueError, match="92378 candidate"):
        smalldb(np.ones(10, int), queries, epsilon=1.0, alpha=0.5, rng=g, accountant=acct,
                max_candidates=1000)
    # Astronomically many: refused at once, the count given as a power of ten.
    with spends_nothing(acct, g), pytest.raises(ValueError, match=r"about 10\^\d+"):
        smalldb(np.ones(1000, int), Identity(1000), epsilon=1.0, alpha=1e-3, rng=g,
                accountant=acct)
    # The default limit.
    with spends_nothing(acct, g), pytest.raises(ValueError, match="max_candidates = 33554432"):
        smalldb(np.ones(100, int), Identity(100), epsilon=1.0, alpha=0.5, rng=g,
                accountant=acct)
    # At the limit it runs.
    rel = smalldb(np.ones(10, int), queries, epsilon=1.0, alpha=0.5, rng=g, accountant=acct,
                  max_candidates=92378)
    assert rel.n_candidates == 92378


class NotAWorkload:
    domain, n_queries, n_cells = (4,), 3, 4


class BadEntries(Explicit):
    """A workload whose rows leave [0, 1] (a subclass bypassing Explicit's own check)."""

    def _adjoint(self, y):
        return 2.0 * super()._adjoint(y)

    def _answer(self, x):
        return 2.0 * super()._answer(x)


BAD = [
    (dict(epsilon=0.0), ValueError), (dict(epsilon=-1.0), ValueError),
    (dict(epsilon=float("nan")), ValueError), (dict(epsilon=float("inf")), ValueError),
    (dict(epsilon="1"), TypeError), (dict(alpha=0.0), ValueError), (dict(alpha=1.0), ValueError),
    (dict(alpha=1.5), ValueError), (dict(alpha=float("nan")), ValueError),
    (dict(alpha=None), TypeError), (dict(total=0), ValueError), (dict(total=-3), ValueError),
    (dict(total=float("inf")), ValueError), (dict(total="6"), TypeError),
    (dict(max_candidates=0), ValueError), (dict(max_candidates=2.0), TypeError),
    (dict(max_candidates=True), TypeError), (dict(threads=0), ValueError),
    (dict(counts=np.array([3, -1, 0, 2])), ValueError),
    (dict(counts=np.array([3, 0.5, 0, 2])), ValueError),
    (dict(counts=np.array([3, np.nan, 0, 2])), ValueError),
    (dict(counts=np.array([3, np.inf, 0, 2])), ValueError),
    (dict(counts=np.array([3, 1, 0])), ValueError),
    (dict(counts=np.array([[3, 1], [0, 2]])), ValueError),
    (dict(counts=np.array([True, False, True, True])), TypeError),
    (dict(counts=np.array(["3", "1", "0", "2"])), TypeError),
    (dict(counts=np.ma.masked_array(X, mask=[0, 1, 0, 0])), TypeError),
    (dict(counts=np.array([2**53, 0, 0, 0])), ValueError),
    (dict(queries=W), TypeError), (dict(queries=NotAWorkload()), TypeError),
    (dict(queries=Identity(5)), ValueError), (dict(queries=BadEntries(W)), ValueError),
    (dict(queries=Explicit(np.zeros((0, 4)))), ValueError),
]


@pytest.mark.parametrize("bad, exc", BAD, ids=[str(sorted(b)) + str(i)
                                               for i, (b, _) in enumerate(BAD)])
@pytest.mark.parametrize("total", [6, None])
def test_bad_input_spends_and_draws_nothing(bad, exc, total):
    args = dict(counts=X, queries=QUERIES, epsilon=1.0, alpha=ALPHA, total=total)
    args.update(bad)
    acct, g = dp.Accountant(), dp.ChaCha20(7)
    with spends_nothing(acct, g), pytest.raises(exc):
        smalldb(args.pop("counts"), args.pop("queries"), rng=g, accountant=acct, **args)


def test_bad_rng_spends_nothing():
    acct = dp.Accountant()
    with pytest.raises((TypeError, ValueError)):
        smalldb(X, QUERIES, epsilon=1.0, alpha=ALPHA, total=6, rng="seed", accountant=acct)
    assert acct.spent == (0, 0) and len(acct) == 0


# -- reproducibility --------------------------------------------------------------------------

def release_of(seed, threads, **kwargs):
    g = dp.ChaCha20(seed)
    rel = smalldb(rng=g, threads=threads, accountant=dp.Accountant(), **kwargs)
    return rel.database.tolist(), rel.total, rng_state(g)


@pytest.mark.parametrize("total", [40, None])
def test_independent_of_threads_and_work_size(total, monkeypatch):
    # 8 cells, 36 queries, m = 6: 1716 candidates in blocks of 100 (18 kernel calls); the
    # work arrays (how many candidates' utilities are computed at once) change nothing, nor
    # do threads.
    counts = np.array([9, 1, 0, 4, 7, 0, 3, 16])
    args = dict(counts=counts, queries=Ranges(8), epsilon=0.5, alpha=0.8, total=total)
    assert smalldb_size(36, 0.8) == 6
    monkeypatch.setattr(sdb, "SELECT_BLOCK", 100)
    first = release_of(5, 1, **args)
    for work in (1, 37, 36 * 100, 2**18):
        monkeypatch.setattr(sdb, "_WORK", work)
        for threads in (1, 2, 4):
            assert release_of(5, threads, **args) == first
    assert len({str(release_of(s, 1, **args)) for s in range(6)}) > 1   # seeds matter


def test_independent_of_threads_within_a_kernel_call():
    # 98,280 candidates: one kernel call of two kernel chunks, run on 1 or 2 threads.
    counts = np.arange(24) % 5
    args = dict(counts=counts, queries=Prefixes(24), epsilon=1.0, alpha=0.8, total=48)
    assert smalldb_size(24, 0.8) == 5
    one = release_of(8, 1, **args)
    assert release_of(8, 2, **args) == one


# -- enumeration and utilities ----------------------------------------------------------------

@pytest.mark.parametrize("n, m", [(1, 4), (2, 5), (3, 3), (4, 3), (5, 2), (7, 3), (3, 7),
                                  (6, 6), (9, 1)])
def test_enumeration_and_utilities(n, m):
    cand = sdb._Candidates(n, m)
    assert cand.size == math.comb(n + m - 1, m)
    counts = cand.counts(np.arange(cand.size, dtype=np.int64))
    assert sorted(map(tuple, counts)) == sorted(databases(n, m))   # each exactly once
    gen = np.random.default_rng(n * 10 + m)
    matrix = gen.random((5, n))
    x = gen.integers(0, 9, n)
    problem = sdb._Problem(cand, matrix.T.copy(), matrix @ x, int(x.sum()), 7.0, 1.0, 1.0)
    offsets = problem.matrix * (7.0 / m) - problem.answers / m
    for step in (1, 3, cand.size):
        u = np.concatenate([problem.utilities(offsets, lo, min(lo + step, cand.size))
                            for lo in range(0, cand.size, step)])
        want = [utility(x, matrix, y, 7.0, m) for y in counts]
        np.testing.assert_allclose(u, want, rtol=1e-12, atol=1e-12)


def test_noisy_max_score_kernel():
    u = np.random.default_rng(0).normal(size=3 * _native.CHUNK + 5)
    args = (u, _native.NOISE_GUMBEL, float(u.max()), 0.7)
    score, index = _native.noisy_max_score(dp.ChaCha20(3), 2, *args)
    assert index == _native.noisy_argmax(dp.ChaCha20(3), 1, *args)
    scores = _native.noisy_scores(dp.ChaCha20(3), 1, *args)
    assert score == scores.max() and index == int(np.argmax(scores))
    assert _native.noisy_max_score(dp.ChaCha20(3), 1, np.full(3, -np.inf),
                                   _native.NOISE_GUMBEL, 0.0, 1.0) == (-math.inf, -1)


def test_docstring_examples():
    result = doctest.testmod(sdb, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
