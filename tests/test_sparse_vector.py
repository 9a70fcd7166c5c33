"""The sparse vector technique (dpfast.mechanisms.sparse_vector): every variant's output
matches its definition (exact pattern probabilities by numerical integration or exact sums,
chi-square at a false-alarm rate of 1e-4 per test, with a power check against a wrong
variant), one charge at creation, halting, refusals that draw and spend nothing, the same
answers for a seed whatever the thread count. No timing assertions."""
import doctest
import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

import dpfast as dp
from dpfast.mechanisms import sparse_vector as svt_module
from refusals import rng_state, spends_nothing

NAN, INF = float("nan"), float("inf")
FALSE_ALARM = 1e-4
RUNS = 8_000         # releases per distribution test


# -- exact output distributions ------------------------------------------------------------

def patterns(m, cutoff):
    """Every output of a run over m queries: answers up to the cutoff-th True, or all m."""
    out = []
    for n in range(1, m + 1):
        for p in itertools.product((False, True), repeat=n):
            aboves = sum(p)
            if aboves > cutoff or (aboves == cutoff and not p[-1]):
                continue                            # halted earlier
            if n < m and aboves < cutoff:
                continue                            # would go on
            out.append(p)
    return out


def laplace_sf(x, b):
    """P[Lap(b) >= x]."""
    return np.where(x <= 0, 1 - 0.5 * np.exp(np.minimum(x, 0) / b),
                    0.5 * np.exp(-np.maximum(x, 0) / b))


def continuous_probabilities(q, threshold, b_threshold, b_query, cutoff):
    """P[pattern] = integral over the threshold noise r of prod_j p_j(r)^a_j (1 - p_j(r))^(1 -
    a_j), p_j(r) = P[q_j + Lap(b_query) >= threshold + r]."""
    pats = patterns(len(q), cutoff)
    breaks = sorted(set(float(v - threshold) for v in q) | {0.0})
    lo, hi = -40 * max(b_threshold, b_query) + breaks[0], 40 * max(b_threshold, b_query) + breaks[-1]
    edges = [lo] + breaks + [hi]
    probs = []
    for pat in pats:
        def f(r, pat=pat):
            p = laplace_sf(threshold + r - q[:len(pat)], b_query)
            val = np.prod(np.where(pat, p, 1 - p))
            return float(val) * math.exp(-abs(r) / b_threshold) / (2 * b_threshold)
        probs.append(sum(integrate.quad(f, a, b, epsabs=1e-13, epsrel=1e-10, limit=200)[0]
                         for a, b in zip(edges[:-1], edges[1:])))
    return pats, np.array(probs)


def dlap_pmf(k, t):
    """Discrete Laplace: P[K = k] proportional to exp(-|k| / t)."""
    a = math.exp(-1 / t)
    return (1 - a) / (1 + a) * np.exp(-np.abs(k) / t)


def discrete_probabilities(q, threshold, t_threshold, t_query, cutoff):
    """Exact sums over the integer threshold noise r (|r| up to 60 t)."""
    pats = patterns(len(q), cutoff)
    span = int(60 * max(t_threshold, t_query)) + int(np.max(np.abs(q - threshold))) + 2
    r = np.arange(-span, span + 1)
    k = np.arange(-2 * span, 2 * span + 1)
    sf = np.cumsum(dlap_pmf(k, t_query)[::-1])[::-1]       # P[K >= k]

    def p_above(j):
        need = threshold + r - q[j]                        # noise must be >= need
        return sf[np.clip(need + 2 * span, 0, k.size - 1)]
    p = [p_above(j) for j in range(len(q))]
    w = dlap_pmf(r, t_threshold)
    probs = [float(np.sum(w * np.prod([p[j] if a else 1 - p[j] for j, a in enumerate(pat)],
                                      axis=0))) for pat in pats]
    return pats, np.array(probs)


def chi_square_pvalue(observed_patterns, pats, probs):
    index = {p: i for i, p in enumerate(pats)}
    counts = np.bincount([index[tuple(bool(v) for v in o)] for o in observed_patterns],
                         minlength=len(pats))
    n = counts.sum()
    keep = probs * n >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(probs[keep], probs[~keep].sum()) * n
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    assert keep.sum() >= 3
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


def run_many(make, q, runs):
    """The answers of ``runs`` objects (seeds 0..runs-1), all queries in one array."""
    return [tuple(make(seed).query(q).tolist()) for seed in range(runs)]


def test_patterns_are_every_output_once():
    pats = patterns(3, 2)
    assert len(pats) == len(set(pats))
    assert (True, True) in pats and (False, False, False) in pats
    assert (True, True, False) not in pats and (True, False, True) in pats
    assert len(patterns(4, 1)) == 5


CASES = [
    # threshold, queries, epsilon, cutoff, monotonic, sensitivity
    (5.0, [2.0, 4.0, 6.0, 3.0, 7.0], 1.0, 1, False, 1.0),
    (5.0, [2.0, 4.0, 6.0, 3.0, 7.0], 2.0, 2, False, 1.0),
    (5.0, [1.0, 6.0, 4.0, 8.0], 1.5, 2, True, 1.0),
    (10.0, [4.0, 12.0, 8.0, 16.0], 1.0, 1, False, 2.0),
]


@pytest.mark.parametrize("threshold, q, epsilon, cutoff, monotonic, sensitivity", CASES)
def test_continuous_outputs_match_the_definition(threshold, q, epsilon, cutoff, monotonic,
                                                 sensitivity):
    q = np.array(q)
    b_t = sensitivity / (0.5 * epsilon)
    b_q = (1 if monotonic else 2) * cutoff * sensitivity / (0.5 * epsilon)

    def make(seed):
        return dp.Sparse(threshold, epsilon=epsilon, cutoff=cutoff, monotonic=monotonic,
                         sensitivity=sensitivity, accountant=dp.Accountant(), rng=seed)
    got = run_many(make, q, RUNS)
    pats, probs = continuous_probabilities(q, threshold, b_t, b_q, cutoff)
    assert abs(probs.sum() - 1) < 1e-8
    assert chi_square_pvalue(got, pats, probs) > FALSE_ALARM
    # Power: the same draws reject the variant whose query noise forgets the cutoff (or,
    # for c = 1, the monotonic saving it does not have).
    wrong = b_q / cutoff if cutoff > 1 else b_q / 2
    _, wrong_probs = continuous_probabilities(q, threshold, b_t, wrong, cutoff)
    assert chi_square_pvalue(got, pats, wrong_probs) < FALSE_ALARM


@pytest.mark.parametrize("threshold, q", [(5.0, [2.0, 4.0, 6.0, 3.0, 7.0]), (6, [3, 5, 7, 4, 8])],
                         ids=["grid", "discrete"])
def test_one_query_per_call_matches_the_definition(threshold, q):
    # Python numbers take the scalar path: the same distribution as arrays.
    epsilon, cutoff = 2.0, 2
    got = []
    for seed in range(RUNS):
        s = dp.Sparse(threshold, epsilon=epsilon, cutoff=cutoff, accountant=dp.Accountant(),
                      rng=seed)
        out = []
        for v in q:
            out.append(s.query(v))
            if s.halted:
                break
        assert all(type(a) is bool for a in out)
        got.append(tuple(out))
    scales = (1 / (0.5 * epsilon), 2 * cutoff / (0.5 * epsilon))
    exact = discrete_probabilities if isinstance(threshold, int) else continuous_probabilities
    pats, probs = exact(np.array(q), threshold, *scales, cutoff)
    assert chi_square_pvalue(got, pats, probs) > FALSE_ALARM


@pytest.mark.parametrize("cutoff, monotonic", [(1, False), (2, False), (2, True)])
def test_discrete_outputs_match_the_definition(cutoff, monotonic):
    threshold, q, epsilon = 6, np.array([3, 5, 7, 4, 8]), 2.0
    t_t = 1 / (0.5 * epsilon)
    t_q = (1 if monotonic else 2) * cutoff / (0.5 * epsilon)

    def make(seed):
        return dp.Sparse(threshold, epsilon=epsilon, cutoff=cutoff, monotonic=monotonic,
                         accountant=dp.Accountant(), rng=seed)
    got = run_many(make, q, RUNS)
    pats, probs = discrete_probabilities(q, threshold, t_t, t_q, cutoff)
    assert abs(probs.sum() - 1) < 1e-9
    assert chi_square_pvalue(got, pats, probs) > FALSE_ALARM
    _, wrong = discrete_probabilities(q, threshold, t_t, 2 * t_q, cutoff)
    assert chi_square_pvalue(got, pats, wrong) < FALSE_ALARM


def test_above_threshold_is_sparse_with_cutoff_one():
    for seed in range(20):
        a = dp.AboveThreshold(5.0, epsilon=1.0, accountant=dp.Accountant(), rng=seed)
        b = dp.Sparse(5.0, epsilon=1.0, cutoff=1, accountant=dp.Accountant(), rng=seed)
        q = np.array([1.0, 4.0, 6.0, 2.0, 9.0])
        assert np.array_equal(a.query(q), b.query(q))


def test_numeric_sparse_pattern_and_values():
    # Pattern as Sparse with shares (1/4, 1/4); each released value is the query plus fresh
    # Laplace noise of scale c / (epsilon / 2): KS against that CDF.
    threshold, q, epsilon, cutoff = 5.0, np.array([2.0, 6.0, 4.0, 8.0]), 2.0, 2
    got, residuals = [], []
    for seed in range(RUNS):
        s = dp.NumericSparse(threshold, epsilon=epsilon, cutoff=cutoff,
                             accountant=dp.Accountant(), rng=seed)
        above, values = s.query(q)
        got.append(tuple(above.tolist()))
        residuals.extend(values - q[:above.size][above])
    pats, probs = continuous_probabilities(q, threshold, 1 / (0.25 * epsilon),
                                           2 * cutoff / (0.25 * epsilon), cutoff)
    assert chi_square_pvalue(got, pats, probs) > FALSE_ALARM
    scale = cutoff / (0.5 * epsilon)
    assert stats.kstest(residuals, stats.laplace(scale=scale).cdf).pvalue > FALSE_ALARM
    assert stats.kstest(residuals, stats.laplace(scale=1.3 * scale).cdf).pvalue < FALSE_ALARM


def test_numeric_sparse_discrete_values_are_integers():
    s = dp.NumericSparse(10, epsilon=4.0, cutoff=3, accountant=dp.Accountant(), rng=1)
    above, values = s.query(np.array([100, 0, 200, 300, 5]))
    assert above.tolist() == [True, False, True, True]
    assert values.dtype == np.int64 and values.size == 3
    assert np.all(np.abs(values - [100, 200, 300]) < 40)


# -- the object: charge, halting, state ----------------------------------------------------

def test_one_charge_at_creation_and_none_per_query():
    acct = dp.Accountant(epsilon=2.0)
    s = dp.Sparse(1000.0, epsilon=0.75, cutoff=3, accountant=acct, rng=1)
    assert acct.spent == (0.75, 0.0) and acct.ledger[-1] == (0.75, 0.0, "Sparse")
    s.query(np.zeros(100))
    s.query(1.0)
    assert acct.spent == (0.75, 0.0) and len(acct) == 1


def test_refused_budget_draws_nothing():
    acct, rng = dp.Accountant(epsilon=0.5), dp.ChaCha20(3)
    for cls in (dp.AboveThreshold, dp.Sparse, dp.NumericSparse):
        with spends_nothing(acct, rng), pytest.raises(dp.BudgetExceededError):
            cls(1.0, epsilon=1.0, accountant=acct, rng=rng)


def test_durable_ledger_records_the_charge(tmp_path):
    path = tmp_path / "budget.ledger"
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    dp.AboveThreshold(5, epsilon=0.4, accountant=acct, rng=2).query([1, 2, 30])
    again = dp.Accountant(epsilon=1.0, ledger=path)
    assert again.spent[0] == pytest.approx(0.4)
    with pytest.raises(dp.BudgetExceededError):
        dp.Sparse(5, epsilon=0.7, accountant=again, rng=2)


def test_parallel_composition_over_disjoint_parts():
    # One object per disjoint part of the data, charged through a parallel block: the
    # block costs the largest of its charges.
    acct = dp.Accountant(epsilon=1.0)
    with acct.parallel() as block:
        parts = [dp.Sparse(5.0, epsilon=1.0, cutoff=2, accountant=block, rng=i)
                 for i in range(4)]
        pmw = dp.PrivateMultiplicativeWeights(np.ones(8), epsilon=0.5, alpha=0.5,
                                              accountant=block, rng=9)
    assert acct.spent == (1.0, 0.0) and len(acct) == 5
    assert all(p.query(1.0) in (True, False) for p in parts) and pmw.total > 0
    with pytest.raises(dp.BudgetExceededError):
        dp.AboveThreshold(5.0, epsilon=0.1, accountant=acct, rng=1)


def test_halts_after_cutoff_and_then_raises():
    s = dp.Sparse(0.0, epsilon=50.0, cutoff=2, accountant=dp.Accountant(), rng=4)
    assert s.query(-10.0) is False
    first = s.query(np.array([-10.0, 10.0, -10.0]))
    assert first.tolist() == [False, True, False] and not s.halted
    second = s.query(np.array([-10.0, 10.0, 10.0, 10.0]))
    assert second.tolist() == [False, True]             # stops at the halt
    assert s.halted and s.asked == 6 and s.above == 2
    for values in (1.0, [1.0, 2.0], np.array([])):
        with pytest.raises(dp.SparseVectorHalted, match="halted.*2 above-threshold"):
            s.query(values)
    assert isinstance(dp.SparseVectorHalted("x"), RuntimeError)


def test_empty_query_array_changes_nothing():
    s = dp.AboveThreshold(0.0, epsilon=1.0, accountant=dp.Accountant(), rng=4)
    out = s.query([])
    assert out.shape == (0,) and out.dtype == bool and s.asked == 0


def test_same_seed_same_answers_and_threads_do_not_matter():
    q = np.random.default_rng(0).normal(0, 30, 200_000)         # several chunks
    runs = [dp.Sparse(60.0, epsilon=1.0, cutoff=5, accountant=dp.Accountant(), rng=9,
                      threads=t).query(q) for t in (1, 2, 1)]
    for r in runs[1:]:
        assert np.array_equal(r, runs[0])
    other = dp.Sparse(60.0, epsilon=1.0, cutoff=5, accountant=dp.Accountant(), rng=10).query(q)
    assert not np.array_equal(other, runs[0])


def test_rng_forms_agree():
    q = [1.0, 2.0, 9.0, 3.0]
    a = dp.AboveThreshold(5.0, epsilon=1.0, accountant=dp.Accountant(), rng=11).query(q)
    b = dp.AboveThreshold(5.0, epsilon=1.0, accountant=dp.Accountant(),
                          rng=dp.ChaCha20(11)).query(q)
    c = dp.AboveThreshold(5.0, epsilon=1.0, accountant=dp.Accountant(),
                          rng=dp.default_rng(11)).query(q)
    assert np.array_equal(a, b) and np.array_equal(a, c)


def test_known_answers_on_a_fixed_seed():
    s = dp.Sparse(100, epsilon=1.0, cutoff=2, accountant=dp.Accountant(), rng=7)
    assert s.query([3, 5, 400, 2, 900, 1]).tolist() == [False, False, True, False, True]
    s = dp.NumericSparse(100, epsilon=2.0, accountant=dp.Accountant(), rng=5)
    above, values = s.query([10, 20, 500, 30])
    assert above.tolist() == [False, False, True] and values.tolist() == [496]


def test_docstring_examples():
    result = doctest.testmod(svt_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


# -- refusals ------------------------------------------------------------------------------

masked = np.ma.masked_array([1.0, 2.0], mask=[True, False])
BAD_CREATE = [
    ({"epsilon": 0.0}, ValueError, "epsilon"), ({"epsilon": -1.0}, ValueError, "epsilon"),
    ({"epsilon": NAN}, ValueError, "epsilon"), ({"epsilon": INF}, ValueError, "epsilon"),
    ({"epsilon": "1"}, TypeError, "epsilon"),
    ({"threshold": NAN}, ValueError, "threshold"), ({"threshold": INF}, ValueError, "threshold"),
    ({"threshold": "5"}, TypeError, "threshold"), ({"threshold": True}, TypeError, "threshold"),
    ({"threshold": [1.0, 2.0]}, TypeError, "threshold"),
    ({"threshold": np.array(5.0)}, TypeError, "threshold"),
    ({"threshold": 1e300}, ValueError, "threshold"),
    ({"threshold": 2**63}, ValueError, "threshold"),
    ({"cutoff": 0}, ValueError, "cutoff"), ({"cutoff": 1.5}, TypeError, "cutoff"),
    ({"cutoff": True}, TypeError, "cutoff"), ({"cutoff": -3}, ValueError, "cutoff"),
    ({"sensitivity": 0.0}, ValueError, "sensitivity"),
    ({"sensitivity": -1.0}, ValueError, "sensitivity"),
    ({"sensitivity": NAN}, ValueError, "sensitivity"),
    ({"monotonic": "yes"}, TypeError, "monotonic"), ({"monotonic": 1}, TypeError, "monotonic"),
    ({"shares": (0.5, 0.6)}, ValueError, "shares"), ({"shares": (1.0,)}, ValueError, "shares"),
    ({"shares": (0.0, 1.0)}, ValueError, "shares"), ({"shares": "even"}, TypeError, "shares"),
    ({"shares": (NAN, 0.5)}, ValueError, "shares"),
    ({"epsilon": 1e-305}, ValueError, "epsilon"),
    ({"rng": "seed"}, TypeError, "rng"), ({"rng": np.random.default_rng(1)}, TypeError, "rng"),
    ({"threads": 0}, ValueError, "threads"), ({"accountant": "acct"}, TypeError, "accountant"),
]


@pytest.mark.parametrize("overrides, exc, name", BAD_CREATE,
                         ids=[f"{n}-{i}" for i, (_, _, n) in enumerate(BAD_CREATE)])
def test_bad_creation_spends_nothing_and_draws_nothing(overrides, exc, name):
    acct, rng = dp.Accountant(epsilon=10.0), dp.ChaCha20(7)
    acct.spend(0.25, label="earlier")
    kwargs = {"threshold": 5.0, "epsilon": 1.0, "cutoff": 2, "accountant": acct, "rng": rng,
              **overrides}
    threshold = kwargs.pop("threshold")
    with spends_nothing(acct, rng), pytest.raises(exc) as info:
        dp.Sparse(threshold, **kwargs)
    assert f"'{name}'" in str(info.value)


BAD_QUERY = [
    (NAN, ValueError), (INF, ValueError), ([1.0, NAN], ValueError), ("3", TypeError),
    ([[1.0, 2.0]], ValueError), (masked, TypeError), (np.array([True, False]), TypeError),
    ([1e300], ValueError), (np.array([1 + 2j]), TypeError), (None, TypeError),
]


@pytest.mark.parametrize("cls", [dp.Sparse, dp.NumericSparse])
@pytest.mark.parametrize("values, exc", BAD_QUERY, ids=[str(i) for i in range(len(BAD_QUERY))])
def test_bad_queries_draw_nothing_and_change_nothing(cls, values, exc):
    rng = dp.ChaCha20(5)
    s = cls(1000.0, epsilon=1.0, cutoff=2, accountant=dp.Accountant(), rng=rng)
    s.query([1.0, 2.0, 2000.0])
    state, counters = rng_state(rng), (s.asked, s.above)
    with pytest.raises(exc, match="'values'"):
        s.query(values)
    assert rng_state(rng) == state and (s.asked, s.above) == counters and not s.halted
    # The object answers on, from where the generator stood.
    assert s.query([1.0]) is not None and s.asked == counters[0] + 1


def test_integer_threshold_needs_integer_queries():
    rng = dp.ChaCha20(5)
    s = dp.Sparse(5, epsilon=1.0, accountant=dp.Accountant(), rng=rng)
    state = rng_state(rng)
    with pytest.raises(TypeError, match="'values'.*integers"):
        s.query([1.5, 2.0])
    assert rng_state(rng) == state
    # A float threshold (or a fractional sensitivity) takes any real queries.
    assert dp.Sparse(5.0, epsilon=1.0, accountant=dp.Accountant(), rng=1).query([1, 2]).size == 2
    s = dp.Sparse(5, epsilon=1.0, sensitivity=0.5, accountant=dp.Accountant(), rng=1)
    assert s.query([1.5]).size == 1
