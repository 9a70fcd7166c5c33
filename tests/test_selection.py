"""Private selection: exact output distributions, textbook examples, extreme utilities, top-k,
the utility bound, bad input, thread invariance, and the kernel's noise and exp shims.

Statistical tests use fixed seeds, so they are deterministic; each comment states the
false-alarm rate alpha the test would have for a random seed (1e-4 unless said otherwise).
"""
import itertools
import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

import dpfast as dp
from dpfast import _native
from refusals import rng_state, spends_nothing

CHUNK = _native.CHUNK
ALPHA = 1e-4


def acct():
    return dp.Accountant()


# The selectors that return one index, with the noise each uses.
EM = (dp.exponential_mechanism, {})
GUMBEL = (dp.report_noisy_max, {"noise": "gumbel"})
EXPO = (dp.report_noisy_max, {"noise": "exponential"})
LAPLACE = (dp.report_noisy_max, {"noise": "laplace"})
PF = (dp.permute_and_flip, {})
SELECTORS = [EM, GUMBEL, EXPO, LAPLACE, PF]
SELECTOR_IDS = ["em", "rnm-gumbel", "rnm-exponential", "rnm-laplace", "pf"]


# -- exact reference distributions ----------------------------------------------------------
def _rate(epsilon, sensitivity, monotonic):
    """The exponent's coefficient a: P[r] ~ exp(a u_r), a = eps/(2D), or eps/D if monotone."""
    return epsilon / ((1.0 if monotonic else 2.0) * sensitivity)


def softmax(u, epsilon, sensitivity=1.0, monotonic=False):
    u = np.asarray(u, dtype=float)
    w = np.exp(_rate(epsilon, sensitivity, monotonic) * (u - u.max()))
    return w / w.sum()


def permute_and_flip_exact(u, epsilon, sensitivity=1.0, monotonic=False):
    """Permute-and-flip by enumeration: average over all m! visiting orders of the sequential
    accept/reject process (accept r with p_r = exp(a (u_r - u*)); the first acceptance
    wins; a maximiser has p = 1, so every order ends)."""
    u = np.asarray(u, dtype=float)
    p = np.exp(_rate(epsilon, sensitivity, monotonic) * (u - u.max()))
    out = np.zeros(u.size)
    for order in itertools.permutations(range(u.size)):
        reach = 1.0                     # probability that no earlier candidate accepted
        for r in order:
            out[r] += reach * p[r]
            reach *= 1.0 - p[r]
    return out / math.factorial(u.size)


def laplace_rnm_exact(u, scale):
    """P[r wins] = integral of f(x - u_r) prod_{s != r} F(x - u_s) dx, Laplace(scale) pdf f and
    cdf F, by adaptive quadrature over +-60 scales around the utilities (the mass outside is
    below e^-60)."""
    def pdf(x):
        return math.exp(-abs(x) / scale) / (2 * scale)

    def cdf(x):
        return 0.5 * math.exp(x / scale) if x < 0 else 1.0 - 0.5 * math.exp(-x / scale)

    lo, hi = min(u) - 60 * scale, max(u) + 60 * scale
    out = []
    for r, ur in enumerate(u):
        def integrand(x, r=r, ur=ur):
            return pdf(x - ur) * math.prod(cdf(x - us) for s, us in enumerate(u) if s != r)
        val, err = integrate.quad(integrand, lo, hi, points=list(u), limit=200,
                                  epsabs=1e-13, epsrel=1e-11)
        assert err < 1e-9
        out.append(val)
    out = np.array(out)
    assert abs(out.sum() - 1) < 1e-8          # the quadrature is accurate
    return out


def tally(func, utilities, n, seed, *, candidates=None, **kw):
    """How often each index (or each candidate) is chosen over n releases from one seeded
    generator."""
    g = dp.ChaCha20(seed)
    a = acct()
    u = np.asarray(utilities, dtype=float)
    if candidates is None:
        counts = np.zeros(u.size, dtype=np.int64)
        for _ in range(n):
            counts[func(u, accountant=a, rng=g, threads=1, **kw)] += 1
        return counts
    pos = {c: i for i, c in enumerate(candidates)}
    counts = np.zeros(len(candidates), dtype=np.int64)
    for _ in range(n):
        counts[pos[func(u, candidates=candidates, accountant=a, rng=g, threads=1, **kw)]] += 1
    return counts


def assert_chi2(counts, probs, alpha=ALPHA):
    """Pearson chi-square goodness of fit; a cell of probability 0 must never occur. Cells
    are large enough (expected >= 50) for the chi-square approximation."""
    counts = np.asarray(counts)
    probs = np.asarray(probs, dtype=float)
    assert abs(probs.sum() - 1) < 1e-9
    live = probs > 0
    assert counts[~live].sum() == 0, counts
    expected = probs[live] * counts.sum()
    assert expected.min() >= 50, expected
    chi2 = float(((counts[live] - expected) ** 2 / expected).sum())
    crit = stats.chi2.isf(alpha, live.sum() - 1)
    assert chi2 < crit, (counts.tolist(), np.round(expected, 1).tolist(), chi2, crit)


def test_reference_distributions_are_distinct():
    # The fits below can only tell mechanisms apart if their exact distributions differ by
    # much more than the sampling error (about 0.004 at 20,000 draws).
    u = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert np.abs(softmax(u, 1.0) - permute_and_flip_exact(u, 1.0)).max() > 0.05
    assert np.abs(softmax(u, 1.0) - softmax(u, 1.0, monotonic=True)).max() > 0.05
    lap2, lap1 = laplace_rnm_exact([0.0, 1.0, 2.5], 2.0), laplace_rnm_exact([0.0, 1.0, 2.5], 1.0)
    assert np.abs(lap2 - lap1).max() > 0.05
    # Enumeration sanity. Two candidates: the loser wins only when visited first and
    # accepted (p = e^-4 here). Two equal maximisers split evenly.
    np.testing.assert_allclose(permute_and_flip_exact([3.0, -1.0], 2.0),
                               [1 - math.exp(-4) / 2, math.exp(-4) / 2])
    np.testing.assert_allclose(permute_and_flip_exact([1.0, 1.0, -50.0], 1.0)[:2], 0.5,
                               atol=1e-10)


# -- distributions: exponential mechanism and Gumbel report-noisy-max --------------------------
SOFTMAX_CASES = [
    ([0.0, 1.0, 2.0, 3.0, 4.0], dict(epsilon=1.0)),
    ([0.0, 2.0, 2.0, 5.0, -3.0, 1.0], dict(epsilon=0.7, sensitivity=1.5, monotonic=True)),
    ([10.0, 7.0, 9.0, 8.0], dict(epsilon=2.0, sensitivity=3.0)),
]


@pytest.mark.parametrize("case", range(len(SOFTMAX_CASES)))
@pytest.mark.parametrize("sel", [EM, GUMBEL], ids=["em", "rnm-gumbel"])
def test_exponential_mechanism_and_gumbel_match_softmax(sel, case):
    # 20,000 draws, chi-square against p_r ~ exp(eps u_r / (2D)) (eps u_r / D when
    # monotone); alpha = 1e-4 per test.
    func, kw = sel
    u, params = SOFTMAX_CASES[case]
    counts = tally(func, u, 20_000, seed=100 + case, **params, **kw)
    assert_chi2(counts, softmax(u, **params))


# -- distributions: permute-and-flip (one-sided exponential noise) ------------------------------
PF_CASES = [
    ([0.0, 1.0, 2.0, 3.0, 4.0], dict(epsilon=1.0)),
    ([1.0, 3.0, 0.0, 3.0, 2.0], dict(epsilon=1.2, sensitivity=2.0, monotonic=True)),
]


@pytest.mark.parametrize("case", range(len(PF_CASES)))
@pytest.mark.parametrize("sel", [EXPO, PF], ids=["rnm-exponential", "pf"])
def test_exponential_noise_and_permute_and_flip_match_enumeration(sel, case):
    # 20,000 draws, chi-square against the enumerated permute-and-flip probabilities (not
    # the softmax: see test_reference_distributions_are_distinct); alpha = 1e-4 per test.
    func, kw = sel
    u, params = PF_CASES[case]
    counts = tally(func, u, 20_000, seed=200 + case, **params, **kw)
    assert_chi2(counts, permute_and_flip_exact(u, **params))


def test_permute_and_flip_is_exponential_noise_argmax_for_the_same_seed():
    # Both are documented as one pass of one-sided exponential noise: same draws, same index.
    u = np.linspace(0, 3, 40)
    for seed in range(20):
        assert (dp.permute_and_flip(u, epsilon=1.0, accountant=acct(), rng=seed)
                == dp.report_noisy_max(u, epsilon=1.0, noise="exponential", accountant=acct(),
                                       rng=seed))


# -- distributions: Laplace report-noisy-max ----------------------------------------------------
@pytest.mark.parametrize("monotonic, scale", [(False, 2.0), (True, 1.0)])
def test_laplace_report_noisy_max_matches_integral(monotonic, scale):
    # Laplace scale 2D/eps, or D/eps when monotone (D = 1, eps = 1 here); 20,000 draws,
    # chi-square against the quadrature probabilities; alpha = 1e-4 per test. The two
    # scales' probabilities differ by > 0.05, so the wrong scale would be detected.
    u = [0.0, 1.0, 2.5]
    counts = tally(dp.report_noisy_max, u, 20_000, seed=300 + monotonic, epsilon=1.0,
                   noise="laplace", monotonic=monotonic)
    assert_chi2(counts, laplace_rnm_exact(u, scale))


def test_laplace_is_the_default_noise():
    u = np.linspace(0, 3, 40)
    for seed in range(10):
        assert (dp.report_noisy_max(u, epsilon=1.0, accountant=acct(), rng=seed)
                == dp.report_noisy_max(u, epsilon=1.0, noise="laplace", accountant=acct(),
                                       rng=seed))


# -- textbook examples -----------------------------------------------------------------------
SPORTS = ["football", "basketball", "hockey", "curling"]
VOTES = [49, 25, 6, 2]


@pytest.mark.parametrize("epsilon, monotonic", [(0.1, False), (0.1, True), (0.05, False)])
def test_sports_votes_exponential_mechanism(epsilon, monotonic):
    # 20,000 draws returned as names (candidates=), chi-square against the exact softmax;
    # alpha = 1e-4 per test.
    counts = tally(dp.exponential_mechanism, VOTES, 20_000, seed=400 + int(100 * epsilon)
                   + monotonic, candidates=SPORTS, epsilon=epsilon, monotonic=monotonic)
    assert_chi2(counts, softmax(VOTES, epsilon, monotonic=monotonic))


# -- extreme and degenerate utilities ------------------------------------------------------
FMAX = np.finfo(np.float64).max


@pytest.mark.parametrize("utilities", [[1e300, -1e300, 0.0, 1e300], [FMAX, -FMAX, 0.0, FMAX]],
                         ids=["1e300", "float-max"])
@pytest.mark.parametrize("sel", SELECTORS, ids=SELECTOR_IDS)
def test_huge_utilities_neither_overflow_nor_swamp(sel, utilities):
    # The two maximisers tie, so each wins half the time; the others are 1e300 scales below
    # (u - max u overflows to -inf for float-max) and never win. 3,000 draws, two-sided
    # binomial test, alpha = 1e-4 per test. numpy warnings are errors here.
    func, kw = sel
    with np.errstate(all="raise"):
        counts = tally(func, utilities, 3_000, seed=600, epsilon=1.0, **kw)
    assert counts[1] == counts[2] == 0
    assert stats.binomtest(int(counts[0]), 3_000, 0.5).pvalue > ALPHA


@pytest.mark.parametrize("sel", SELECTORS, ids=SELECTOR_IDS)
def test_huge_utilities_with_a_tiny_scale(sel):
    # Scale 2e-300: the losers' scaled gaps overflow to -inf; still never NaN, the two
    # maximisers still tie (500 draws, binomial, alpha = 1e-4).
    func, kw = sel
    with np.errstate(all="raise"):
        counts = tally(func, [1e300, -1e300, 0.0, 1e300], 500, seed=601, epsilon=1.0,
                       sensitivity=1e-300, **kw)
    assert counts[1] == counts[2] == 0
    assert stats.binomtest(int(counts[0]), 500, 0.5).pvalue > ALPHA


def test_ten_million_equal_values_give_a_valid_index():
    u = np.zeros(10**7)
    for func, kw in SELECTORS:
        i = func(u, epsilon=1.0, accountant=acct(), rng=7, **kw)
        assert isinstance(i, int) and 0 <= i < u.size
    best = dp.top_k(u, 3, epsilon=1.0, accountant=acct(), rng=7)
    assert len(set(best.tolist())) == 3 and ((0 <= best) & (best < u.size)).all()


@pytest.mark.parametrize("sel", SELECTORS, ids=SELECTOR_IDS)
def test_equal_values_choose_uniformly(sel):
    # 10^5 equal utilities (two chunks): the index is uniform. 1,500 draws, chi-square on the
    # 10 index deciles (the chunk boundary 65,536 falls inside decile 7); alpha = 1e-4.
    func, kw = sel
    u = np.zeros(100_000)
    g = dp.ChaCha20(700)
    a = acct()
    idx = np.array([func(u, epsilon=1.0, accountant=a, rng=g, threads=2, **kw)
                    for _ in range(1_500)])
    assert ((0 <= idx) & (idx < u.size)).all()
    assert_chi2(np.bincount(idx // 10_000, minlength=10), np.full(10, 0.1))


@pytest.mark.parametrize("sel", SELECTORS, ids=SELECTOR_IDS)
def test_minus_inf_is_never_selected(sel):
    func, kw = sel
    u = [-np.inf, 0.0, -np.inf, 1.0, -np.inf, 0.5]
    counts = tally(func, u, 2_000, seed=800, epsilon=1.0, **kw)
    assert counts[[0, 2, 4]].sum() == 0 and counts[[1, 3, 5]].min() > 0
    if func is dp.exponential_mechanism:
        # Softmax over the finite candidates; alpha = 1e-4.
        p = np.zeros(6)
        p[[1, 3, 5]] = softmax([0.0, 1.0, 0.5], 1.0)
        assert_chi2(counts, p)
    # Across chunks: chunks 0 and 2 hold no finite candidate, chunk 1 and 3 one each (equal).
    big = np.full(3 * CHUNK + 10, -np.inf)
    big[[CHUNK + 7, 3 * CHUNK + 3]] = 0.0
    g = dp.ChaCha20(801)
    idx = [func(big, epsilon=1.0, accountant=acct(), rng=g, threads=2, **kw)
           for _ in range(200)]
    assert set(idx) == {CHUNK + 7, 3 * CHUNK + 3}
    # 200 draws, each about half: binomial, alpha = 1e-4.
    assert stats.binomtest(idx.count(CHUNK + 7), 200, 0.5).pvalue > ALPHA


def _top_1(u, **kw):
    return int(dp.top_k(u, 1, **kw)[0])


@pytest.mark.parametrize("limit, expected", [(0.0, "argmax"), (math.inf, "uniform")])
@pytest.mark.parametrize("sel", SELECTORS + [(_top_1, {})], ids=SELECTOR_IDS + ["top-k"])
def test_noise_scale_beyond_float_range(sel, limit, expected):
    # epsilon and sensitivity are each valid but D/eps under- or overflows. Either the call
    # is refused like bad input (ValueError naming the parameters, nothing spent, generator
    # untouched), or it returns the limit: the exact argmax for scale 0, uniform over the
    # non-excluded candidates for an infinite scale (-inf must stay excluded).
    func, kw = sel
    params = (dict(epsilon=1e300, sensitivity=1e-300) if limit == 0.0
              else dict(epsilon=1e-300, sensitivity=1e300))
    assert (params["sensitivity"] / params["epsilon"]) == limit
    u = [1.0, -np.inf, 2.0]
    a = acct()
    g = dp.ChaCha20(900)
    state = rng_state(g)
    try:
        first = func(u, accountant=a, rng=g, **params, **kw)
    except ValueError as e:
        assert "'epsilon'" in str(e) or "'sensitivity'" in str(e)
        assert a.spent == (0.0, 0.0) and rng_state(g) == state
        return
    picks = [first] + [func(u, accountant=a, rng=g, **params, **kw) for _ in range(399)]
    if expected == "argmax":
        assert set(picks) == {2}
    else:
        # 400 draws, index 0 about half of them: binomial, alpha = 1e-4.
        assert set(picks) <= {0, 2}
        assert stats.binomtest(picks.count(0), 400, 0.5).pvalue > ALPHA


# -- top_k ---------------------------------------------------------------------------------
def test_top_k_returns_distinct_indices_best_first():
    got = dp.top_k([5.0, 1.0, 9.0, 3.0, 7.0], 3, epsilon=1e6, accountant=acct(), rng=1)
    assert got.tolist() == [2, 4, 0]
    assert dp.top_k([5.0, 1.0, 9.0, 3.0, 7.0], np.int64(5), epsilon=1e6, accountant=acct(),
                    rng=1).tolist() == [2, 4, 0, 3, 1]
    for seed in range(20):
        got = dp.top_k(np.zeros(50), 10, epsilon=1.0, accountant=acct(), rng=seed)
        assert len(set(got.tolist())) == 10 and got.min() >= 0 and got.max() < 50
    # -inf candidates are never chosen; k may be all the finite ones.
    got = dp.top_k([-np.inf, 3.0, -np.inf, 1.0], 2, epsilon=1.0, accountant=acct(), rng=2)
    assert sorted(got.tolist()) == [1, 3]


def test_top_k_of_one_is_gumbel_report_noisy_max():
    u = np.linspace(0, 3, 40)
    for seed in range(20):
        assert (dp.top_k(u, 1, epsilon=1.0, accountant=acct(), rng=seed)[0]
                == dp.report_noisy_max(u, epsilon=1.0, noise="gumbel", accountant=acct(),
                                       rng=seed))


def sequential_pairs_exact(u, epsilon, sensitivity=1.0, monotonic=False):
    """Ordered pairs (i, j) from two exponential-mechanism draws without replacement at
    eps/2 each: P = p_i * p_j / (1 - p_i)."""
    p = softmax(u, epsilon / 2, sensitivity, monotonic)
    m = len(u)
    return {(i, j): p[i] * p[j] / (1 - p[i]) for i in range(m) for j in range(m) if i != j}


@pytest.mark.parametrize("u, params", [
    ([3.0, 2.0, 1.0, 0.0], dict(epsilon=2.0)),
    ([2.0, 0.0, 1.0, 1.5], dict(epsilon=1.2, monotonic=True)),
])
def test_top_2_matches_sequential_exponential_mechanism(u, params):
    # 20,000 draws of k = 2, chi-square over the 12 ordered pairs; alpha = 1e-4 per test.
    exact = sequential_pairs_exact(u, **params)
    pairs = list(exact)
    g = dp.ChaCha20(1000 + len(params))
    a = acct()
    counts = dict.fromkeys(pairs, 0)
    for _ in range(20_000):
        i, j = dp.top_k(u, 2, accountant=a, rng=g, threads=1, **params).tolist()
        counts[(i, j)] += 1
    assert_chi2([counts[p] for p in pairs], [exact[p] for p in pairs])
    # epsilon is the total, charged once per release.
    assert a.spent == (20_000 * params["epsilon"], 0.0) and len(a) == 20_000
    one = acct()
    dp.top_k(u, 3, accountant=one, rng=1, **params)
    assert one.spent == (params["epsilon"], 0.0) and len(one) == 1


# -- utility guarantee -------------------------------------------------------------------------
def test_utility_gap_formula():
    assert math.isclose(dp.exponential_mechanism_utility_gap(1000, epsilon=1.0),
                        2 * math.log(1000 / 0.05), rel_tol=1e-15)
    assert math.isclose(dp.exponential_mechanism_utility_gap(
        10, epsilon=0.5, sensitivity=3, beta=0.2, monotonic=True), 3 / 0.5 * math.log(50),
        rel_tol=1e-15)
    assert dp.exponential_mechanism_utility_gap(1, epsilon=1.0, beta=0.5) > 0


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("sel", [EM, GUMBEL], ids=["em", "rnm-gumbel"])
def test_utility_gap_theorem_holds(sel, monotonic):
    # 10^4 candidates: one at OPT just above the gap, the rest at 0, so a draw misses by more
    # than the gap exactly when it picks a 0, with probability 0.046 (< beta = 0.05, close to
    # the bound). 4,000 draws; the miss count must stay below the binomial(4000, beta) upper
    # 1e-4 quantile (alpha <= 1e-4) and agree with the exact 0.046 (two-sided, alpha = 1e-4).
    func, kw = sel
    n, eps, beta = 10**4, 1.0, 0.05
    gap = dp.exponential_mechanism_utility_gap(n, epsilon=eps, beta=beta, monotonic=monotonic)
    u = np.zeros(n)
    u[1234] = opt = gap + 0.01
    p_miss = float(softmax(u, eps, monotonic=monotonic)[u == 0].sum())
    assert 0.03 < p_miss <= beta
    g = dp.ChaCha20(1100 + monotonic)
    a = acct()
    picks = np.array([func(u, epsilon=eps, monotonic=monotonic, accountant=a, rng=g, **kw)
                      for _ in range(4_000)])
    misses = int((u[picks] < opt - gap).sum())
    assert misses <= stats.binom.isf(ALPHA, 4_000, beta)
    assert stats.binomtest(misses, 4_000, p_miss).pvalue > ALPHA


def test_utility_gap_bad_input():
    f = dp.exponential_mechanism_utility_gap
    with pytest.raises(ValueError, match="'n_candidates'.*Got 0 instead"):
        f(0, epsilon=1.0)
    with pytest.raises(TypeError, match="'n_candidates'.*Got 2.5 instead"):
        f(2.5, epsilon=1.0)
    with pytest.raises(TypeError, match="'n_candidates'.*Got True instead"):
        f(True, epsilon=1.0)
    for beta in (0.0, 1.0, -0.1, math.nan):
        with pytest.raises(ValueError, match="'beta'"):
            f(10, epsilon=1.0, beta=beta)
    with pytest.raises(ValueError, match="'epsilon'.*Got 0 instead"):
        f(10, epsilon=0)
    with pytest.raises(TypeError, match="'monotonic'"):
        f(10, epsilon=1.0, monotonic=1)


# -- bad input ------------------------------------------------------------------------------
RNM, EMF, PFF, TOPK = (dp.report_noisy_max, dp.exponential_mechanism, dp.permute_and_flip,
                       dp.top_k)
OK = [1.0, 2.0, 3.0, 4.0]


def _calls():
    """(name, call(a, g), exception, message pattern naming the parameter and the value)."""
    rows = []
    one_index = [("rnm", lambda u, **kw: RNM(u, **kw), "scores"),
                 ("em", lambda u, **kw: EMF(u, **kw), "utilities"),
                 ("pf", lambda u, **kw: PFF(u, **kw), "utilities"),
                 ("topk", lambda u, **kw: TOPK(u, 1, **kw), "scores")]
    for fname, f, pname in one_index:
        bad_values = [
            # The bad utility by position, never by value.
            ("nan", [1.0, np.nan], ValueError, rf"'{pname}'.*Got an entry at index 1 is NaN "),
            ("+inf", [1.0, np.inf], ValueError, rf"'{pname}'.*Got an entry at index 1 is \+inf "),
            ("empty", [], ValueError, rf"'{pname}'.*empty"),
            ("2-d", [[1.0, 2.0], [3.0, 4.0]], ValueError, rf"'{pname}'.*shape \(2, 2\)"),
            ("strings", ["a", "b"], TypeError, rf"'{pname}'.*not dtype <U1"),
            ("bools", [True, False], TypeError, rf"'{pname}'.*not dtype bool"),
            ("objects", [1.0, None], TypeError, rf"'{pname}'.*not dtype object"),
            ("complex", [1 + 2j, 0j], TypeError, rf"'{pname}'.*complex"),
            ("all -inf", [-np.inf, -np.inf], ValueError, rf"'{pname}'.*all -inf"),
        ]
        for tag, val, exc, pat in bad_values:
            rows.append((f"{fname}-{tag}",
                         lambda a, g, f=f, val=val: f(val, epsilon=1.0, accountant=a, rng=g),
                         exc, pat))
        bad_params = [
            ("eps0", dict(epsilon=0), ValueError, r"'epsilon'.*Got 0 instead"),
            ("eps-neg", dict(epsilon=-1.0), ValueError, r"'epsilon'.*Got -1.0 instead"),
            ("eps-nan", dict(epsilon=math.nan), ValueError, r"'epsilon'.*Got nan instead"),
            ("eps-str", dict(epsilon="1"), TypeError, r"'epsilon'.*Got '1' instead"),
            ("sens-neg", dict(epsilon=1.0, sensitivity=-1), ValueError,
             r"'sensitivity'.*Got -1 instead"),
            ("sens0", dict(epsilon=1.0, sensitivity=0.0), ValueError,
             r"'sensitivity'.*Got 0.0 instead"),
            ("mono-int", dict(epsilon=1.0, monotonic=1), TypeError,
             r"'monotonic'.*Got 1 instead"),
            ("mono-str", dict(epsilon=1.0, monotonic="yes"), TypeError,
             r"'monotonic'.*Got 'yes' instead"),
            ("threads0", dict(epsilon=1.0, threads=0), ValueError, r"'threads'.*Got 0 instead"),
        ]
        for tag, kw, exc, pat in bad_params:
            rows.append((f"{fname}-{tag}",
                         lambda a, g, f=f, kw=kw: f(OK, accountant=a, rng=g, **kw), exc, pat))
        rows.append((f"{fname}-accountant", lambda a, g, f=f: f(OK, epsilon=1.0, accountant="x",
                                                                rng=g),
                     TypeError, r"'accountant'.*Got 'x' instead"))
        rows.append((f"{fname}-rng", lambda a, g, f=f: f(OK, epsilon=1.0, accountant=a,
                                                         rng=np.random.default_rng(1)),
                     TypeError, r"'rng'"))
        rows.append((f"{fname}-budget", lambda a, g, f=f: f(OK, epsilon=0.75 + 1e-9,
                                                            accountant=a, rng=g),
                     dp.BudgetExceededError, "budget"))
    rows += [
        ("rnm-noise", lambda a, g: RNM(OK, epsilon=1.0, noise="cauchy", accountant=a, rng=g),
         ValueError, r"'noise'.*Got 'cauchy' instead"),
        ("rnm-noise-case", lambda a, g: RNM(OK, epsilon=1.0, noise="Laplace", accountant=a,
                                            rng=g), ValueError, r"'noise'.*'Laplace'"),
        ("rnm-noise-unhashable", lambda a, g: RNM(OK, epsilon=1.0, noise=["laplace"],
                                                  accountant=a, rng=g),
         (TypeError, ValueError), r"'noise'.*\['laplace'\]"),
        ("topk-0", lambda a, g: TOPK(OK, 0, epsilon=1.0, accountant=a, rng=g), ValueError,
         r"'k'.*Got 0 instead"),
        ("topk-too-many", lambda a, g: TOPK(OK, 5, epsilon=1.0, accountant=a, rng=g),
         ValueError, r"'k'.*Got 5 instead"),
        ("topk-excluded", lambda a, g: TOPK([1.0, -np.inf, 2.0, -np.inf], 3, epsilon=1.0,
                                            accountant=a, rng=g), ValueError,
         r"'k'.*\[1, 2\].*Got 3 instead"),
        ("topk-float", lambda a, g: TOPK(OK, 2.0, epsilon=1.0, accountant=a, rng=g),
         TypeError, r"'k'.*Got 2.0 instead"),
        ("topk-bool", lambda a, g: TOPK(OK, True, epsilon=1.0, accountant=a, rng=g),
         TypeError, r"'k'.*Got True instead"),
        ("topk-str", lambda a, g: TOPK(OK, "2", epsilon=1.0, accountant=a, rng=g),
         TypeError, r"'k'.*Got '2' instead"),
        ("em-candidates", lambda a, g: EMF(OK, epsilon=1.0, candidates=["a", "b"], accountant=a,
                                           rng=g), ValueError, r"'candidates'.*Got 2 instead"),
        ("em-candidates-long", lambda a, g: EMF(OK, epsilon=1.0, candidates=list("abcde"),
                                                accountant=a, rng=g), ValueError,
         r"'candidates'.*Got 5 instead"),
        ("em-candidates-unsized", lambda a, g: EMF(OK, epsilon=1.0, candidates=7, accountant=a,
                                                   rng=g), TypeError, r"'candidates'.*Got an int instead"),
    ]
    return rows


CALLS = _calls()


@pytest.mark.parametrize("call, exc, text", [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_bad_input_raises_before_anything_is_spent(call, exc, text):
    a = dp.Accountant(epsilon=1.0)
    a.spend(0.25)
    g = dp.ChaCha20(2)
    with spends_nothing(a, g), pytest.raises(exc, match=text):
        call(a, g)


# -- reproducibility: threads, seeds, candidates ----------------------------------------------
N_THREADED = 3 * CHUNK + 1234          # four chunks, the last partial


def _all_releases(u, seed, threads):
    out = [func(u, epsilon=1.0, accountant=acct(), rng=seed, threads=threads, **kw)
           for func, kw in SELECTORS]
    out.append(dp.top_k(u, 5, epsilon=1.0, accountant=acct(), rng=seed,
                        threads=threads).tolist())
    return out


def test_results_do_not_depend_on_threads():
    u = np.random.default_rng(1200).normal(size=N_THREADED) * 2.0
    u[::97] = -np.inf
    chunks = [set() for _ in range(len(SELECTORS) + 1)]
    for seed in range(6):
        one = _all_releases(u, seed, 1)
        assert _all_releases(u, seed, 2) == one
        assert _all_releases(u, seed, 3) == one
        for c, r in zip(chunks, one):
            c.add((r[0] if isinstance(r, list) else r) // CHUNK)
    # The winners are spread over several chunks, so chunk combination is exercised.
    assert all(len(c) >= 2 for c in chunks), chunks


def test_seed_reproducible_and_equal_to_a_generator_of_that_seed():
    u = np.random.default_rng(1201).normal(size=1000)
    for func, kw in SELECTORS:
        picks = [func(u, epsilon=1.0, accountant=acct(), rng=s, **kw) for s in range(10)]
        assert picks == [func(u, epsilon=1.0, accountant=acct(), rng=s, **kw)
                         for s in range(10)]
        assert picks == [func(u, epsilon=1.0, accountant=acct(), rng=dp.ChaCha20(s), **kw)
                         for s in range(10)]
        assert picks == [func(u, epsilon=1.0, accountant=acct(), rng=dp.default_rng(s), **kw)
                         for s in range(10)]
        assert len(set(picks)) > 1
    # A generator's stream advances: successive releases differ.
    g = dp.ChaCha20(3)
    picks = [dp.exponential_mechanism(u, epsilon=1.0, accountant=acct(), rng=g)
             for _ in range(10)]
    assert len(set(picks)) > 1


def test_candidates_returns_the_element():
    names = ["football", "basketball", "hockey", "curling"]
    assert dp.exponential_mechanism(VOTES, epsilon=100.0, candidates=names,
                                    accountant=acct(), rng=1) == "football"
    objs = [(1, 2), {"x": 1}, None, 3.5]
    assert dp.exponential_mechanism([0, 0, 50, 0], epsilon=100.0, candidates=objs,
                                    accountant=acct(), rng=1) is None
    arr = np.array([10, 20, 30])
    got = dp.exponential_mechanism([0.0, 9.0, 1.0], epsilon=100.0, candidates=arr,
                                   accountant=acct(), rng=1)
    assert got == 20
    for s in range(10):
        i = dp.exponential_mechanism(VOTES, epsilon=0.1, accountant=acct(), rng=s)
        assert dp.exponential_mechanism(VOTES, epsilon=0.1, candidates=names,
                                        accountant=acct(), rng=s) == names[i]


def test_exponential_mechanism_is_inverse_cdf_of_its_uniforms():
    # The release with rng=s is a two-stage inverse CDF of the exact softmax at the two
    # uniforms (v1, v2) = dp.uniform(2, rng=s): the chunk of 65,536 candidates whose
    # cumulative weight passes v1 * total, then the candidate within it whose running weight
    # passes v2 * (chunk total). Draws within 1e-9 of a cell edge are skipped (the documented
    # rounding can move those).
    u = np.random.default_rng(1202).normal(size=2 * CHUNK + 777) * 3.0
    u[5::11] = -np.inf
    w = np.exp(0.5 * (u - u[np.isfinite(u)].max()))
    sums = np.array([w[c:c + CHUNK].sum() for c in range(0, u.size, CHUNK)])
    cum_chunks = np.cumsum(sums)
    checked = 0
    chunks = set()
    for s in range(300):
        v1, v2 = dp.uniform(2, rng=s)
        c = int(np.searchsorted(cum_chunks, v1 * cum_chunks[-1], side="right"))
        inside = np.cumsum(w[c * CHUNK:(c + 1) * CHUNK])
        t = v2 * inside[-1]
        j = int(np.searchsorted(inside, t, side="right"))
        edges = [abs(inside[j] - t), abs(t - (inside[j - 1] if j else 0.0)),
                 abs(cum_chunks[c] - v1 * cum_chunks[-1])]
        if min(edges) < 1e-9 * cum_chunks[-1]:
            continue
        assert dp.exponential_mechanism(u, epsilon=1.0, accountant=acct(), rng=s) == c * CHUNK + j
        checked += 1
        chunks.add(c)
    assert checked > 290 and chunks == {0, 1, 2}


# -- the noise itself, rebuilt from the keystream ------------------------------------------------
def keystream_bits(key, n):
    """(words, n0) that the selection kernel reads for n candidates under the sub-key `key`
    (a dpfast._native.Key): chunk c reads one word per candidate from the ChaCha20 stream with nonce 2c;
    the word's top 11 bits hold the binade, n0 = 10 - floor(log2 top) leading zeros; when they
    are all zero, zero bits are counted on through the words of stream 2c + 1."""
    kb = bytes(key)

    def stream(nonce):
        return dp.ChaCha20(key=kb, nonce=b"\0\0\0\0" + int(nonce).to_bytes(8, "little"))

    words, n0s = [], []
    for c in range(-(-n // CHUNK)):
        w = stream(2 * c).random_raw(min(CHUNK, n - c * CHUNK))
        top = (w >> np.uint64(53)).astype(np.int64)
        n0 = np.zeros(w.size, dtype=np.int64)
        fast = top > 0
        n0[fast] = 10 - np.floor(np.log2(top[fast])).astype(np.int64)
        extra = stream(2 * c + 1)
        for i in np.flatnonzero(~fast):
            zeros = 11
            for _ in range(_native.MAX_EXTRA_WORDS):
                v = int(extra.random_raw())
                zeros += 64 - v.bit_length()
                if v:
                    break
            n0[i] = zeros
        words.append(w)
        n0s.append(n0.astype(np.uint64))
    return np.concatenate(words), np.concatenate(n0s)


KINDS = {"laplace": _native.NOISE_LAPLACE, "exponential": _native.NOISE_EXPONENTIAL,
         "gumbel": _native.NOISE_GUMBEL}
REFERENCE = {"laplace": stats.laplace, "exponential": stats.expon, "gumbel": stats.gumbel_r}


@pytest.mark.parametrize("kind", list(KINDS))
def test_noisy_scores_are_rebuilt_from_the_keystream(kind):
    n = 2 * CHUNK + 999
    gen = np.random.default_rng(1300)
    u = gen.normal(size=n) * 5
    u[::101] = -np.inf
    umax = float(u.max())
    inv = 0.3
    key = _native.Key(dp.ChaCha20(1301))
    words, n0 = keystream_bits(key, n)
    assert (n0 >= 11).sum() > 20                            # the slow path is exercised
    noise = _native.select_noise_from_bits(words, n0, KINDS[kind])
    want = (u - umax) * inv + noise
    for threads in (1, 2):
        scores = _native.noisy_scores(key, threads, u, KINDS[kind], umax, inv)
        np.testing.assert_array_equal(scores, want)
        assert _native.noisy_argmax(key, threads, u, KINDS[kind], umax, inv) == \
            int(np.argmax(want))
    # The unit noise has its distribution: Kolmogorov-Smirnov over 132k draws, alpha = 1e-4.
    assert stats.kstest(noise, REFERENCE[kind].cdf).pvalue > ALPHA
    # The public release with rng=seed is the arg-max of exactly these scores (the key is the
    # seeded generator's first sub-key), at inv = eps / (2D).
    key_seed = 1302
    words, n0 = keystream_bits(_native.Key(dp.ChaCha20(key_seed)), n)
    noise = _native.select_noise_from_bits(words, n0, KINDS[kind])
    eps = 0.6
    # (inv computed as 1 / scale, as documented, so that the scores are bit-identical.)
    got = dp.report_noisy_max(u, epsilon=eps, noise=kind, accountant=acct(), rng=key_seed)
    assert got == int(np.argmax((u - umax) * (1.0 / (2.0 / eps)) + noise))
    got = dp.report_noisy_max(u, epsilon=eps, noise=kind, monotonic=True, accountant=acct(),
                              rng=key_seed)
    assert got == int(np.argmax((u - umax) * (1.0 / (1.0 / eps)) + noise))
    if kind == "gumbel":
        scores = (u - umax) * (1.0 / (2.0 / eps * 4)) + noise    # top_k: scale 2 D k / eps
        best = np.argsort(-scores, kind="stable")[:4]
        np.testing.assert_array_equal(
            dp.top_k(u, 4, epsilon=eps, accountant=acct(), rng=key_seed), best)


# -- kernel shims ----------------------------------------------------------------------------
def _ulps(a, b):
    """Distance in units in the last place between non-negative doubles (0 counts)."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def test_exp_nonpos_within_two_ulps_of_math_exp():
    gen = np.random.default_rng(1400)
    x = np.concatenate([
        np.linspace(-708.0, 0.0, 300_001),
        gen.uniform(-708.0, 0.0, 100_000),
        gen.uniform(-708.0, -690.0, 100_000),              # results near the flush point
        -np.logspace(-320, 2, 5_000),                      # tiny arguments: results near 1
        [0.0, -0.0, -5e-324, -1e-300, -2**-53, -math.log(2), -708.0, -707.9999999999999],
    ])
    got = _native.exp_nonpos(x)
    want = np.array([math.exp(v) for v in x])
    d = _ulps(got, want)
    assert d.max() <= 2, (x[np.argmax(d)], got[np.argmax(d)], want[np.argmax(d)])
    assert (got[x == 0] == 1.0).all()
    assert (got >= 2.0**-1022).all()                   # never subnormal


def test_exp_nonpos_is_zero_below_the_flush_point():
    # Below -708 the result would be within a few binades of subnormal: 0 instead, at the
    # same cost (so the exponential mechanism's time does not depend on the utilities).
    x = np.array([-708.0000000000001, -709.0, -745.2, -746.5, -800.0, -1e5, -1e300, -FMAX,
                  -np.inf])
    got = _native.exp_nonpos(x)
    assert got.tolist() == [0.0] * x.size and not np.signbit(got).any()


@pytest.mark.parametrize("mechanism", ["em", "rnm-gumbel", "rnm-laplace", "pf", "top_k"])
def test_subnormal_utilities_count_as_zero(mechanism):
    # The kernels flush subnormal utilities and scaled differences to 0 (with bit operations,
    # so that they cost what normal values do): the release is the one of zeros.
    tiny = np.random.default_rng(1410).uniform(-1, 1, 5000) * 1e-310
    zeros = np.full(5000, 0.0)
    run = {"em": lambda u: EMF(u, epsilon=1.0, accountant=dp.Accountant(), rng=3),
           "rnm-gumbel": lambda u: RNM(u, epsilon=1.0, noise="gumbel",
                                       accountant=dp.Accountant(), rng=3),
           "rnm-laplace": lambda u: RNM(u, epsilon=1.0, accountant=dp.Accountant(), rng=3),
           "pf": lambda u: PFF(u, epsilon=1.0, accountant=dp.Accountant(), rng=3),
           "top_k": lambda u: TOPK(u, 5, epsilon=1.0, accountant=dp.Accountant(),
                                   rng=3).tolist()}[mechanism]
    assert run(tiny) == run(zeros)


def _find_exp_reference(u, umax, a, v):
    """dpf_find_exp's definition, one candidate at a time: the first index whose running
    sum of exp((u - umax) a), in index order, exceeds v times the total."""
    w = _native.exp_nonpos((u - umax) * a)
    total = 0.0
    for x in w:
        total += x
    if total == 0.0:
        return -1
    acc, target = 0.0, v * total
    for i, x in enumerate(w):
        acc += x
        if x > 0.0 and acc > target:
            return i
    return int(np.flatnonzero(w > 0)[-1])


@pytest.mark.parametrize("impl", ["avx512", "avx2", "scalar"])
def test_find_exp_matches_its_sequential_definition(impl):
    if not _native.set_simd_impl(impl):
        pytest.skip(f"this CPU has no {impl}")
    gen = np.random.default_rng(1450)
    try:
        for trial in range(40):
            n = int(gen.integers(1, 3000))
            u = gen.normal(size=n) * gen.choice([0.1, 3.0, 400.0])
            u[gen.random(n) < 0.3] = -np.inf                  # excluded candidates
            if trial % 5 == 0:
                u[: n // 2] = -np.inf                         # a long run of zero weight
            u[int(gen.integers(n))] = 0.0                     # at least one candidate
            a = float(gen.choice([0.5, 1.0, 7.0]))
            umax = float(u.max())
            vs = np.concatenate([gen.random(20), [0.0, 0.5, 1.0 - 2**-53]])
            for v in vs:
                want = _find_exp_reference(u, umax, a, v)
                assert _native.find_exp(u, 0, n, umax, a, v) == want, (trial, v)
        # All excluded, and one candidate only.
        assert _native.find_exp(np.full(5, -np.inf), 0, 5, 0.0, 1.0, 0.3) == -1
        assert _native.find_exp(np.array([-np.inf, 2.0, -np.inf]), 0, 3, 2.0, 1.0,
                                  1.0 - 2**-53) == 1
    finally:
        _native.set_simd_impl("auto")


def _noise_words(gen, n):
    """Words with random binade bits (ignored by the shims, which take n0), sign bit and
    mantissa, plus the mantissa extremes and those around the sqrt(2) split."""
    mant = gen.integers(0, 2**52, size=n, dtype=np.uint64)
    mant[:6] = [0, 1, 0x6a09e667f3bcc, 0x6a09e667f3bcd, 2**51, 2**52 - 1]
    sign = gen.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(52)
    top = gen.integers(0, 2**11, size=n, dtype=np.uint64) << np.uint64(53)
    return top | sign | mant, mant


def test_select_noise_from_bits_against_mpmath():
    mpmath.mp.dps = 50
    gen = np.random.default_rng(1500)
    words, mant = _noise_words(gen, 3000)
    n0 = np.concatenate([np.repeat(np.arange(0, 12), 100),        # fast-path binades
                         gen.integers(12, 64, size=1000),
                         gen.integers(64, 1099, size=800)]).astype(np.uint64)
    n0[:6] = 0                                                    # extremes at U near 1/2, 1
    # The uniform the word stands for: U = 2^-(n0+1) (1 + mant / 2^52), exactly.
    small = n0 <= 60
    u_exact = np.ldexp(1.0 + mant.astype(np.float64) / 2**52, -(n0.astype(np.int64) + 1))
    np.testing.assert_array_equal(_native.uniform_from_bits(words[small], n0[small]),
                                  u_exact[small])
    lap = _native.select_noise_from_bits(words, n0, _native.NOISE_LAPLACE)
    expo = _native.select_noise_from_bits(words, n0, _native.NOISE_EXPONENTIAL)
    gum = _native.select_noise_from_bits(words, n0, _native.NOISE_GUMBEL)
    worst_l = worst_g = 0.0
    for i in range(words.size):
        u = mpmath.ldexp(1 + mpmath.mpf(int(mant[i])) / 2**52, -(int(n0[i]) + 1))
        ref_l = -mpmath.log(u)                       # exponential noise: -ln U
        ref_g = -mpmath.log(_gumbel_exp1(words[i], u))
        worst_l = max(worst_l, float(abs(expo[i] - ref_l) / ref_l))
        worst_g = max(worst_g, float(abs(gum[i] - ref_g) / max(1, abs(ref_g))))
    assert worst_l <= 1e-15, worst_l
    # Gumbel noise can be 0, so its error is relative to max(1, |G|).
    assert worst_g <= 1e-15, worst_g
    # Laplace: +-L, the sign from bit 52 of the word.
    negative = (words >> np.uint64(52)) & np.uint64(1) == 1
    np.testing.assert_array_equal(lap, np.where(negative, -expo, expo))
    assert (expo > 0).all() and negative.any() and (~negative).any()


def _gumbel_exp1(word, u):
    """The Exp(1) variable behind the kernel's Gumbel noise: bit 52 chooses the half below
    ln 2 (-ln(1 - U/2)) or above it (ln 2 - ln U), so that small values keep full relative
    precision and the Gumbel's upper tail is not cut off at -ln(2^-53)."""
    if (int(word) >> 52) & 1:
        return -mpmath.log1p(-u / 2) if u >= mpmath.mpf(2) ** -60 else u / 2
    return mpmath.log(2) - mpmath.log(u)


def test_select_noise_covers_the_extremes():
    # U just below 1 (L ~ 2^-53) and the deepest binade (L ~ 762); Gumbel noise reaches far
    # beyond 36.7 (= -ln 2^-53) when the uniform is tiny and bit 52 picks the low half.
    words = np.array([2**52 - 1, 0, 1 << 52], dtype=np.uint64)
    n0 = np.array([0, 1098, 1098], dtype=np.uint64)
    expo = _native.select_noise_from_bits(words, n0, _native.NOISE_EXPONENTIAL)
    gum = _native.select_noise_from_bits(words, n0, _native.NOISE_GUMBEL)
    assert math.isclose(expo[0], -math.log1p(-2.0**-53), rel_tol=1e-15)
    assert math.isclose(expo[1], 1099 * math.log(2), rel_tol=1e-15)
    for i in range(3):
        u = mpmath.ldexp(1 + mpmath.mpf(int(words[i]) & (2**52 - 1)) / 2**52, -(int(n0[i]) + 1))
        assert math.isclose(gum[i], float(-mpmath.log(_gumbel_exp1(words[i], u))),
                            rel_tol=1e-15)
    assert gum[2] > 700 and np.isfinite(gum).all()
