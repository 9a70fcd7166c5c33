"""Statistical tests of the noise distributions: grid Laplace, discrete Laplace, uniform.

Every test uses fixed seeds, so the suite is deterministic. The comment on each test states
its false-alarm probability: the chance that it would fail for a *random* seed although the
sampler is exactly right. They are kept at or below about 1e-4 per test, so a failure means
a real deviation, not bad luck.

Reference laws (K integer, a = exp(-1/t)):
    P[K = k]  = (1 - a)/(1 + a) * a**|k|
    P[K <= k] = a**|k| / (1 + a)              for k < 0
              = 1 - a**(k + 1) / (1 + a)      for k >= 0
    E[K^2] = 2a / (1 - a)**2,  E[K^4] = 2a (1 + 11a + 11a^2 + a^3) / ((1 + a)(1 - a)**4)
(the moments from sum_k k^n a^k = a A_n(a) / (1 - a)**(n+1) with the Eulerian polynomials
A_2 = 1 + a, A_4 = 1 + 11a + 11a^2 + a^3; test_reference_moments checks them against the PMF).
dp.laplace(b) is g*K with g = dp.laplace_granularity(b) and t = b/g.
"""
import math

import numpy as np
import pytest
from scipy import stats

import dpfast as dp

MANT_BITS = 52
MANT_MASK = np.uint64((1 << MANT_BITS) - 1)


# ---------------------------------------------------------------------------------------
# Exact reference law of the discrete Laplace variable K with parameter t
# ---------------------------------------------------------------------------------------

def _a(t):
    return math.exp(-1.0 / t)


def _one_minus_a(t):
    # 1 - a by expm1: at t ~ 2**24 the plain subtraction would keep only ~8 digits.
    return -math.expm1(-1.0 / t)


def dlap_cdf(k, t):
    """P[K <= k] for integer-valued k (array), in closed form."""
    k = np.asarray(k, dtype=np.float64)
    a = _a(t)
    left = np.exp(np.minimum(k, 0.0) / t) / (1.0 + a)
    right = 1.0 - np.exp(-(np.maximum(k, 0.0) + 1.0) / t) / (1.0 + a)
    return np.where(k < 0, left, right)


def dlap_pmf(k, t):
    k = np.asarray(k, dtype=np.float64)
    a = _a(t)
    return _one_minus_a(t) / (1.0 + a) * np.exp(-np.abs(k) / t)


def dlap_var(t):
    a = _a(t)
    return 2.0 * a / _one_minus_a(t) ** 2


def dlap_m4(t):
    a = _a(t)
    return 2.0 * a * (1 + 11 * a + 11 * a * a + a ** 3) / ((1 + a) * _one_minus_a(t) ** 4)


def laplace_cdf(x, b):
    """CDF of the continuous Laplace law with scale b."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0.0) / b),
                    1.0 - 0.5 * np.exp(-np.maximum(x, 0.0) / b))


# ---------------------------------------------------------------------------------------
# Test statistics
# ---------------------------------------------------------------------------------------

def ks_discrete(k, cdf):
    """Exact sup_x |F_n(x) - F(x)| for integer samples k and a CDF on the integers.

    Between two consecutive distinct sample values v < v', F_n is constant and F is
    non-decreasing from F(v) to F(v'-), so the supremum is attained at a sample value or just
    left of one: checking F(v) and F(v-) = F(v - 1) at every distinct v covers all x, ties
    included.
    """
    vals, counts = np.unique(k, return_counts=True)
    n = k.size
    fn = np.cumsum(counts) / n
    fn_left = fn - counts / n
    return max(np.abs(fn - cdf(vals)).max(), np.abs(fn_left - cdf(vals - 1)).max())


def chi2_from_edges(k, t, upper_edges):
    """Pearson statistic and dof for bins (e_{j-1}, e_j], e_0 = -inf, last bin to +inf."""
    edges = np.asarray(upper_edges, dtype=np.int64)
    cdf = np.concatenate(([0.0], dlap_cdf(edges, t), [1.0]))
    probs = np.diff(cdf)
    # searchsorted(side="left") counts the edges < K, i.e. the index of K's bin.
    observed = np.bincount(np.searchsorted(edges, k, side="left"), minlength=probs.size)
    expected = k.size * probs
    assert expected.min() >= 5, "binning must keep every expected count >= 5"
    stat = float(((observed - expected) ** 2 / expected).sum())
    return stat, probs.size - 1


def integer_edges(t, n):
    """One bin per integer whose expected count is >= 5, plus tail bins merged inward
    until they too expect >= 5."""
    m = 0
    while n * dlap_pmf(m + 1, t) >= 5:
        m += 1
    edges = list(range(-m - 1, m + 1))            # (-inf, -m-1], {-m}, ..., {m}, (m, inf)
    while len(edges) > 1 and n * float(dlap_cdf(edges[0], t)) < 5:
        edges.pop(0)
    while len(edges) > 1 and n * (1.0 - float(dlap_cdf(edges[-1], t))) < 5:
        edges.pop()
    return edges


def quantile_edges(t, nbins):
    """Integer edges near the j/nbins quantiles of K, by inverting the closed-form CDF.

    The inversion need not be exact: chi2_from_edges uses the exact probabilities of the
    bins these edges define, which are within one point mass (~1/(2t)) of 1/nbins.
    """
    a = _a(t)
    q = np.arange(1, nbins) / nbins
    left = np.ceil(t * np.log(q * (1 + a)))
    right = np.maximum(np.ceil(-t * np.log((1 - q) * (1 + a))) - 1, 0)
    edges = np.where(q <= a / (1 + a), left, right)
    return np.unique(edges.astype(np.int64))


def chi2_threshold(dof, alpha=1e-4):
    return stats.chi2.ppf(1 - alpha, dof)


# ---------------------------------------------------------------------------------------
# The reference itself
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("t", [0.5, 1.0, 3.0, 40.0])
def test_reference_moments(t):
    # Deterministic: the closed forms above must match direct summation over the PMF
    # (truncated where a**|k| < 1e-300), else every moment test below is testing nothing.
    k = np.arange(-int(700 * t) - 10, int(700 * t) + 11, dtype=np.float64)
    p = dlap_pmf(k, t)
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    assert (k * p).sum() == pytest.approx(0.0, abs=1e-12)
    assert (k ** 2 * p).sum() == pytest.approx(dlap_var(t), rel=1e-10)
    assert (k ** 4 * p).sum() == pytest.approx(dlap_m4(t), rel=1e-10)
    assert np.allclose(np.cumsum(p)[:-1], dlap_cdf(k[:-1], t), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------
# 1. Grid Laplace: Kolmogorov-Smirnov against the exact grid law
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("scale, seed", [
    (1e-3, 101), (1.0, 102), (1e6, 103),
    # The ends of the accepted range: g = 2**-924 is tiny, g*K near 2**1000 is huge.
    (2.0 ** -900, 104), (2.0 ** 999 * 1.7, 105),
])
def test_laplace_ks_grid(scale, seed):
    n = 200_000
    g = dp.laplace_granularity(scale)
    x = dp.laplace(scale, n, rng=seed)
    t = scale / g
    assert x.dtype == np.float64 and x.shape == (n,)
    assert 2.0 ** 23 < t <= 2.0 ** 24
    # Dividing by a power of two is exact, so this checks the outputs are exactly g*K.
    k = x / g
    assert np.array_equal(k, np.round(k))

    # False alarm <= 1e-4: the Kolmogorov distribution is the exact null law of D for a
    # continuous CDF; for a discrete one D is stochastically smaller, so the threshold is
    # conservative (the grid law has ~2**24 atoms per scale, so it is nearly tight).
    d = ks_discrete(k, lambda v: dlap_cdf(v, t))
    assert d < stats.kstwo.ppf(1 - 1e-4, n)

    # Deterministic: the grid law is within g/scale (in fact ~g/(4 scale)) of the continuous
    # Laplace CDF, on both sides of each atom, so the test above also bounds the distance to
    # textbook Laplace noise up to ~1e-7.
    vals = np.unique(k)
    f_cont = laplace_cdf(vals / t, 1.0)         # x/b = K/t, so this is F_Laplace(x; b)
    gap = max(np.abs(f_cont - dlap_cdf(vals, t)).max(),
              np.abs(f_cont - dlap_cdf(vals - 1, t)).max())
    assert gap <= g / scale


# ---------------------------------------------------------------------------------------
# 2. Mean and variance
# ---------------------------------------------------------------------------------------

def _moment_z(x, var, m4):
    """z-scores of the sample mean and of the mean of x**2 (the variance about the known
    mean 0), whose sampling variances are var/n and (E[x^4] - var^2)/n."""
    n = x.size
    x = x.astype(np.float64)
    z_mean = x.mean() / math.sqrt(var / n)
    z_var = ((x * x).mean() - var) / math.sqrt((m4 - var * var) / n)
    return z_mean, z_var


# Two z-tests with |z| < 5: two-sided normal tail 5.7e-7 each, so ~1.2e-6 per test. n = 1e6
# makes the normal approximation good this far out: the first Edgeworth correction for
# x**2 (skewness <~ 10) at z = 5 is ~1e-7.
Z_MAX = 5.0


@pytest.mark.parametrize("scale, seed", [(1e-3, 201), (1.0, 202), (3.7, 203), (1e6, 204)])
def test_laplace_mean_variance(scale, seed):
    n = 1_000_000
    g = dp.laplace_granularity(scale)
    t = scale / g
    x = dp.laplace(scale, n, rng=seed)
    z_mean, z_var = _moment_z(x, g * g * dlap_var(t), g ** 4 * dlap_m4(t))
    assert abs(z_mean) < Z_MAX
    assert abs(z_var) < Z_MAX
    # Deterministic: the documented "variance within 2**-40 of 2 scale**2".
    assert g * g * dlap_var(t) == pytest.approx(2 * scale * scale, rel=2.0 ** -40)


@pytest.mark.parametrize("scale, seed", [(0.5, 211), (1.0, 212), (7.0, 213), (1e6, 214)])
def test_discrete_laplace_mean_variance(scale, seed):
    n = 1_000_000
    k = dp.discrete_laplace(scale, n, rng=seed)
    assert k.dtype == np.int64 and k.shape == (n,)
    z_mean, z_var = _moment_z(k, dlap_var(scale), dlap_m4(scale))
    assert abs(z_mean) < Z_MAX
    assert abs(z_var) < Z_MAX


def test_discrete_laplace_tiny_scale_is_zero():
    # a = exp(-1000) ~ 5.1e-435, so P[K != 0] = 2a/(1+a) ~ 1.0e-434 per sample: a nonzero
    # value in 1e6 draws has probability ~1e-428. (The inverse CDF would also need
    # U < e**-999.3 ~ 2**-1442, below the uniform's 2**-1099 floor, so it cannot happen.)
    k = dp.discrete_laplace(1e-3, 1_000_000, rng=221)
    assert not k.any()
    assert k.mean() == 0 and k.var() == 0


# ---------------------------------------------------------------------------------------
# 3. Chi-square goodness of fit of the discrete Laplace PMF
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("scale, seed", [(0.5, 301), (1.0, 302), (3.0, 303), (100.0, 304)])
def test_discrete_laplace_chi2_integer_bins(scale, seed):
    n = 200_000
    k = dp.discrete_laplace(scale, n, rng=seed)
    stat, dof = chi2_from_edges(k, scale, integer_edges(scale, n))
    # False alarm ~1e-4 (chi-square approximation with every expected count >= 5).
    assert stat < chi2_threshold(dof)


def test_discrete_laplace_chi2_large_scale():
    # At t = 1e6 each atom has probability <= 5e-7, so use 200 bins of (nearly) equal
    # probability: expected count ~1000 each. False alarm ~1e-4.
    n, t = 200_000, 1e6
    k = dp.discrete_laplace(t, n, rng=311)
    edges = quantile_edges(t, 200)
    assert edges.size == 199
    stat, dof = chi2_from_edges(k, t, edges)
    assert stat < chi2_threshold(dof)


# ---------------------------------------------------------------------------------------
# 4. Sign symmetry and the point mass at zero
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("scale, seed", [(0.5, 401), (1.0, 402), (3.0, 403), (100.0, 404)])
def test_discrete_laplace_sign_and_zero(scale, seed):
    n = 1_000_000
    k = dp.discrete_laplace(scale, n, rng=seed)
    pos, neg, zero = int((k > 0).sum()), int((k < 0).sum()), int((k == 0).sum())
    p0 = _one_minus_a(scale) / (1 + _a(scale))
    # Two exact binomial tests at alpha = 5e-5 each: false alarm <= 1e-4 in total.
    assert stats.binomtest(pos, pos + neg, 0.5).pvalue > 5e-5
    assert stats.binomtest(zero, n, p0).pvalue > 5e-5


# ---------------------------------------------------------------------------------------
# 5. The full-precision uniform
# ---------------------------------------------------------------------------------------

N_UNIFORM = 2_000_000


@pytest.fixture(scope="module")
def uniforms():
    return dp.uniform(N_UNIFORM, rng=501)


def _binade(u):
    """n0 with U in [2**-(n0+1), 2**-n0); frexp is exact where floor(-log2 U) is not
    (at U = 2**-j it would give j instead of j - 1)."""
    return -np.frexp(u)[1]


def test_uniform_open_interval(uniforms):
    # Deterministic property: 0 and 1 must never occur.
    assert uniforms.dtype == np.float64 and uniforms.shape == (N_UNIFORM,)
    assert (uniforms > 0).all() and (uniforms < 1).all()


def test_uniform_binades_geometric(uniforms):
    # Bins n0 = 0..15 and n0 >= 16 against P[n0 = j] = 2**-(j+1); the smallest expected count
    # is 2e6 * 2**-16 ~ 30. Bins 11 and up are the samples whose exponent comes from the
    # separate "extra" stream. False alarm ~1e-4 (chi-square, 16 dof).
    n0 = _binade(uniforms)
    assert n0.min() >= 0
    observed = np.bincount(np.minimum(n0, 16), minlength=17)
    probs = np.append(2.0 ** -np.arange(1, 17), 2.0 ** -16)
    expected = N_UNIFORM * probs
    stat = ((observed - expected) ** 2 / expected).sum()
    assert stat < chi2_threshold(16)


def test_uniform_full_precision(uniforms):
    # U * 2**53 is an integer iff the mantissa is a multiple of 2**n0 (n0 = binade index), so
    # for n0 >= 11 this happens with probability 2**-n0 <= 2**-11 per sample. A sampler that
    # returned multiples of 2**-53 would make every one an integer.
    u = uniforms
    small = u[u < 2.0 ** -11]
    # About 2e6 * 2**-11 ~ 977 such samples; fewer than 500 has probability ~1e-60.
    assert small.size >= 500
    scaled = small * 2.0 ** 53
    n_int = int((scaled == np.round(scaled)).sum())
    # Binomial upper tail at 1e-5 (the true rate is at most 2**-11, so this is conservative).
    assert n_int <= stats.binom.isf(1e-5, small.size, 2.0 ** -11)

    # Below 1/2 the integer fraction is sum_{j>=1} 2**-j * 2**-j = 1/3 (given n0 >= 1,
    # P[n0 = j] = 2**-j): a binomial z-test, |z| < 5, false alarm ~5.7e-7.
    half = u[u < 0.5]
    scaled = half * 2.0 ** 53
    frac_int = (scaled == np.round(scaled)).mean()
    assert abs(frac_int - 1 / 3) < 5 * math.sqrt((1 / 3) * (2 / 3) / half.size)

    # The contrast: numpy's Generator.random (on the same bit generator) returns multiples of
    # 2**-53 only, so it can never produce most doubles below 1/2.
    ref = np.random.Generator(dp.ChaCha20(502)).random(200_000)
    assert np.array_equal(ref * 2.0 ** 53, np.round(ref * 2.0 ** 53))


def test_uniform_mantissa_bits(uniforms):
    # Each of the 52 significand bits is 1 with probability 1/2, independently of the binade.
    # Two-sided z-tests with Bonferroni over 52 bits at total alpha 1e-4: |z| < 4.76 each
    # (normal approximation to Binomial(2e6, 1/2), accurate at this depth).
    mant = uniforms.view(np.uint64) & MANT_MASK
    z_crit = stats.norm.isf(1e-4 / (2 * MANT_BITS))
    n = mant.size
    for bit in range(MANT_BITS):
        ones = int(((mant >> np.uint64(bit)) & np.uint64(1)).sum())
        z = (ones - n / 2) / math.sqrt(n / 4)
        assert abs(z) < z_crit, f"mantissa bit {bit}: z = {z:.2f}"


def test_uniform_mantissa_given_binade(uniforms):
    # The per-bit test cannot see a mantissa whose law depends on the binade (for instance on
    # the slow path, n0 >= 11, where the exponent comes from the extra stream). Contingency
    # chi-square of the top 4 significand bits (16 cells) within each of the binade groups
    # n0 = 0..10 and n0 >= 11; expected counts >= ~60. 12 * 15 = 180 dof, false alarm ~1e-4.
    group = np.minimum(_binade(uniforms), 11)
    top = (uniforms.view(np.uint64) & MANT_MASK) >> np.uint64(MANT_BITS - 4)
    table = np.bincount(group * 16 + top.astype(np.int64), minlength=12 * 16).reshape(12, 16)
    expected = table.sum(axis=1, keepdims=True) / 16.0
    assert expected.min() >= 5
    stat = ((table - expected) ** 2 / expected).sum()
    assert stat < chi2_threshold(12 * 15)


def test_uniform_ks(uniforms):
    # The law is the real uniform truncated to doubles: its CDF is within 2**-53 of x, far
    # below KS resolution, so kstest's p-value (asymptotic at this n, accurate here) applies:
    # false alarm 1e-4.
    assert stats.kstest(uniforms, "uniform").pvalue > 1e-4


# ---------------------------------------------------------------------------------------
# 6. Other rng= forms reach the same law
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("make_rng", [
    pytest.param(lambda: np.random.Generator(dp.ChaCha20(601)), id="Generator(ChaCha20)"),
    pytest.param(lambda: dp.ChaCha20(602), id="ChaCha20"),
    pytest.param(lambda: np.random.SeedSequence(603), id="SeedSequence"),
])
def test_discrete_laplace_rng_forms(make_rng):
    n, scale = 100_000, 2.0
    rng = make_rng()
    k = dp.discrete_laplace(scale, n, rng=rng)
    stat, dof = chi2_from_edges(k, scale, integer_edges(scale, n))
    # False alarm ~1e-4 (chi-square, expected counts >= 5).
    assert stat < chi2_threshold(dof)
