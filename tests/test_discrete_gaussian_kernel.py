"""The discrete Gaussian kernel (``_native.fill_discrete_gaussian``, int32 and int64 cells).

Statistical tests use fixed seeds; each states its false-alarm probability (the chance that
it would fail for a random seed although the sampler is exactly right), at most about 1e-4.

Reference law: P[Z = z] = exp(-z**2 / (2 sigma**2)) / N, N the sum of the numerator over the
integers. For sigma <= 50 the PMF is summed exactly over |z| <= 40 sigma + 10 (the rest is
below 1e-340). For sigma = 1e6 bins of many integers use P[Z <= k] = Phi((k + 1/2)/sigma):
by Poisson summation and the midpoint rule the lattice sums differ from the integrals by
under 1e-12 relative, far below what 10**6 samples resolve.
"""
import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpfast import _native
from dpfast.samplers import gaussian_fp_error

C = 65536          # cells per chunk (DPF_CHUNK)
N = 10**6


def _draw(sigma, n, dtype, seed, threads=2, base=None, chunk0=0):
    out = np.empty(n, dtype=dtype)
    return _native.fill_discrete_gaussian(_native.ChaCha20(seed), threads, out, sigma, base,
                                          chunk0)


def _exact_pmf(sigma):
    """(ks, P[Z = k]) over |k| <= 40 sigma + 10."""
    kmax = int(40 * sigma) + 10
    ks = np.arange(-kmax, kmax + 1)
    logw = -(ks.astype(np.float64) ** 2) / (2.0 * sigma * sigma)
    w = np.exp(logw - logw.max())
    return ks, w / w.sum()


def _merge(expected, observed, min_expected):
    """Adjacent cells merged left to right until each expects >= min_expected (the last bin
    absorbs a short remainder)."""
    e_bins, o_bins, e, o = [], [], 0.0, 0
    for ei, oi in zip(expected, observed):
        e += ei
        o += oi
        if e >= min_expected:
            e_bins.append(e)
            o_bins.append(o)
            e, o = 0.0, 0
    e_bins[-1] += e
    o_bins[-1] += o
    return np.array(e_bins), np.array(o_bins)


def _chi2_ok(expected, observed):
    e, o = _merge(expected, observed, 50.0)
    stat = float(((o - e) ** 2 / e).sum())
    return stat, stats.chi2.ppf(1 - 1e-4, len(e) - 1)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("sigma", [0.3, 2.0, 50.0])
def test_pmf_chi2_exact(sigma, dtype):
    # False alarm ~1e-4: chi-square at the 1 - 1e-4 quantile, every bin expecting >= 50.
    z = _draw(sigma, N, dtype, seed=int(sigma * 100) + (dtype == np.int32))
    assert z.dtype == dtype
    ks, p = _exact_pmf(sigma)
    assert z.min() >= ks[0] and z.max() <= ks[-1]
    observed = np.bincount(z.astype(np.int64) - ks[0], minlength=len(ks))
    stat, limit = _chi2_ok(p * N, observed)
    assert stat < limit, (sigma, stat, limit)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_pmf_chi2_huge_sigma(dtype):
    # sigma = 1e6 (blocks of 2**19 integers in the proposal, one proposal a keystream word):
    # 200 equiprobable bins at integer edges. False alarm ~1e-4.
    sigma = 1e6
    z = _draw(sigma, N, dtype, seed=77 + (dtype == np.int32)).astype(np.int64)
    edges = np.unique(np.round(stats.norm.ppf(np.arange(1, 200) / 200) * sigma)).astype(
        np.int64)                                  # bin i: edges[i-1] < z <= edges[i]
    cdf = stats.norm.cdf((edges + 0.5) / sigma)
    expected = np.diff(np.concatenate([[0.0], cdf, [1.0]])) * N
    observed = np.bincount(np.searchsorted(edges, z, side="left"), minlength=len(edges) + 1)
    stat, limit = _chi2_ok(expected, observed)
    assert stat < limit, (stat, limit)


@pytest.mark.parametrize("sigma", [0.3, 2.0, 50.0, 1e6])
def test_same_noise_for_int32_and_int64_any_threads_and_chunking(sigma):
    # Cell i's noise is a function of the key, i and chunk0 only.
    n = 3 * C + 123
    ref = _draw(sigma, n, np.int64, seed=5, threads=1)
    for threads in (2, 4):
        np.testing.assert_array_equal(_draw(sigma, n, np.int64, seed=5, threads=threads), ref)
    np.testing.assert_array_equal(_draw(sigma, n, np.int32, seed=5, threads=2), ref)
    # A release made block by block (blocks at chunk boundaries, streams numbered by chunk0)
    # equals one made in one call.
    for dtype in (np.int32, np.int64):
        parts = [_draw(sigma, 2 * C, dtype, seed=5, threads=2, chunk0=0),
                 _draw(sigma, C, dtype, seed=5, threads=1, chunk0=2),
                 _draw(sigma, 123, dtype, seed=5, threads=2, chunk0=3)]
        np.testing.assert_array_equal(np.concatenate(parts), ref)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_base_and_in_place(dtype):
    n = 2 * C + 7
    noise = _draw(7.0, n, np.int64, seed=9)
    base = np.arange(n, dtype=dtype) - n // 2
    out = _draw(7.0, n, dtype, seed=9, base=base)
    np.testing.assert_array_equal(out.astype(np.int64), base.astype(np.int64) + noise)
    inplace = base.copy()
    _native.fill_discrete_gaussian(_native.ChaCha20(9), 2, inplace, 7.0, inplace)
    np.testing.assert_array_equal(inplace, out)
    # base must have out's type (checked before any randomness is drawn).
    with pytest.raises(ValueError, match="base"):
        _native.fill_discrete_gaussian(_native.ChaCha20(9), 1, np.empty(3, dtype), 7.0,
                                       np.zeros(3, np.float64))


@pytest.mark.parametrize("sigma", [0.3, 2.0, 50.0, 1e6, 2.0**35])
def test_every_instruction_set_gives_the_same_noise(sigma):
    # The vector loops decide most proposals from an approximate exponential and hand the
    # rest (ties, and the slow path of the geometric field) to the exact scalar path: the
    # result must be bit-identical on every target.
    n = C + 1000
    impls = [name for name in ("scalar", "avx2", "avx512") if _native.set_simd_impl(name)]
    try:
        outs = []
        for name in impls:
            _native.set_simd_impl(name)
            outs.append(_draw(sigma, n, np.int64, seed=11, threads=2))
    finally:
        _native.set_simd_impl("auto")
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.0, 7.0, 50.0, 1e6, 2.0**30])
def test_acceptance_probability_within_documented_error(sigma):
    # The computed a(x) = exp(-(|x| - s)^2/(2 sigma^2) - c low + cq_j) against 50-digit
    # arithmetic on the exact s = sigma^2 r ln2 / M, c = r ln2 / M and quarter constants:
    # |ln(a_computed / a)| within the pointwise bound eta_a(d) of dpfast.samplers, for
    # proposals across the mass and the tails.
    m, r, eff = _native.dgauss_proposal(sigma)
    assert 0.3 < eff <= 1.0
    M = 2**m
    mpmath.mp.dps = 50
    ln2 = mpmath.log(2)
    cv = r * ln2 / M
    s = mpmath.mpf(sigma) ** 2 * cv
    kappa = sigma * r * math.log(2.0) / M
    w = [mpmath.mpf(k) / 16 for k in (5, 4, 4, 3)]
    lam = min(w[j] * mpmath.mpf(2) ** (mpmath.mpf(j * r) / 4) for j in range(4))
    rng = np.random.default_rng(int(sigma * 7) % 1000)
    for _ in range(300):
        reach = rng.uniform(0, 30)
        ax = int(reach * sigma) if sigma > 1 else int(rng.integers(0, 30))
        g, v = divmod(ax, M)
        got = _native.dgauss_accept_prob(sigma, float(g), float(v))
        d = (ax - s) / sigma
        if m >= 2:
            j, low = divmod(v, M // 4)
            cq = mpmath.log(lam / w[j]) - j * r * ln2 / 4
        else:
            low, cq = v, 0
        exact = mpmath.exp(-d * d / 2 - cv * low + cq)
        assert exact <= 1
        if exact < mpmath.mpf("1e-300"):
            assert got < 1e-300
            continue
        dd = abs(float(d))
        bound = 1.001 * 2.0**-53 * (4.3 * dd * dd + 4.2 * kappa * dd + 3.0 * r + 13.0)
        assert abs(float(mpmath.log(mpmath.mpf(got) / exact))) <= bound, (sigma, ax)
    # The documented term does not grow with sigma.
    assert gaussian_fp_error(2.0**35, 10.0) < 2 * gaussian_fp_error(50.0, 10.0) < 1e-12


def test_tiny_sigma_is_zero_and_int32_rejects_nothing_else():
    assert (_draw(2.0**-900, 1000, np.int32, seed=1) == 0).all()
    assert (_draw(1e-200, 1000, np.int64, seed=1) == 0).all()
    with pytest.raises(ValueError, match="out"):
        _native.fill_discrete_gaussian(_native.ChaCha20(1), 1, np.empty(3, np.int16), 2.0)
