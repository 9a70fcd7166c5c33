"""The floating-point error bound that dpfast's privacy guarantee rests on, measured.

The privacy bound in dpfast.samplers assumes that the kernel's magnitude t*(c + L), before the
floor, is within E = (t + 1) * 2**-49 of the exact value for the *real* uniform (so the error
of computing it from the truncated double U, plus the truncation itself, ln(1 + 2**-52) * t).
Here the kernel's unfloored value (exposed by a test shim as integer part + remainder) is
compared with 120-bit arithmetic on random and adversarial inputs: mantissas next to 1, next
to the sqrt(2) reduction threshold and next to 2; binades from the fast path and the slow
path up to the deepest one; scales from 1e-3 to 2**40. These are deterministic checks, not
statistical ones.
"""
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpfast as dp
from dpfast import _native
from dpfast import samplers as noise

mpmath.mp.prec = 120

SQRT2_MANT = 0x6A09E667F3BCC
MANT_MASK = (1 << 52) - 1
MAX_N0 = 11 + 64 * _native.MAX_EXTRA_WORDS - 1 + 1   # deepest binade the kernel reaches


def _mantissas(rng, n):
    edges = np.concatenate([
        np.arange(0, 200),
        SQRT2_MANT + np.arange(-100, 100),
        MANT_MASK - np.arange(0, 200),
    ]).astype(np.uint64)
    rand = rng.integers(0, 1 << 52, size=n, dtype=np.uint64)
    return np.concatenate([edges, rand])


def _exact_z(t, n0, mant):
    m = mpmath.mpf(1) + mpmath.mpf(int(mant)) / 2**52
    L = (int(n0) + 1) * mpmath.log(2) - mpmath.log(m)
    c = mpmath.log(2) - mpmath.log1p(mpmath.exp(-1 / mpmath.mpf(t)))
    return mpmath.mpf(t) * (c + L)


def _max_error_ratio(t, n0s, mants):
    words = mants.astype(np.uint64)        # binade bits are bypassed by the shim
    fb, rest = _native.dlap_z_from_bits(words, n0s.astype(np.uint64), t)
    bound = (t + 1) * noise.FP_ERROR
    truncation = t * float(mpmath.log1p(mpmath.mpf(2) ** -52))
    worst = 0.0
    for i in range(words.size):
        err = abs(mpmath.mpf(fb[i]) + mpmath.mpf(rest[i]) - _exact_z(t, n0s[i], mants[i]))
        worst = max(worst, (float(err) + truncation) / bound)
    return worst


@pytest.mark.parametrize("t", [1e-3, 0.5, 1.0, 3.0, 10.0, 1000.0, 12345.678,
                               2.0**23 + 0.5, 2.0**24, 2.0**30, 2.0**40])
def test_kernel_error_is_within_the_privacy_bound(t):
    rng = np.random.default_rng(int(t * 1000) % 2**32)
    mants = _mantissas(rng, 400)
    n = mants.size
    # Fast-path binades, then slow-path ones up to the deepest.
    n0s = np.concatenate([rng.integers(0, 11, size=n - 40), rng.integers(11, 200, size=20),
                          np.full(20, MAX_N0)])
    ratio = _max_error_ratio(t, n0s, mants)
    # The analysis gives about a quarter of the bound; a ratio near 1 would mean the
    # documented epsilon' is not certified.
    assert ratio < 0.5, f"error reaches {ratio:.3f} of the bound at t={t}"


def test_floor_is_exact_away_from_cell_boundaries():
    # Inputs chosen so that t*(c + L) lands just beside an integer: the kernel's K must be
    # the exact floor whenever the exact value is farther than the error bound from it.
    t = 3.0
    rng = np.random.default_rng(7)
    c = mpmath.log(2) - mpmath.log1p(mpmath.exp(-1 / mpmath.mpf(t)))
    words, n0s, exact = [], [], []
    for j in rng.integers(1, 25, size=300):
        # L = j/t - c, plus a tiny offset either side; solve for (n0, mantissa).
        L = mpmath.mpf(int(j)) / t - c + mpmath.mpf(int(rng.choice([-1, 1]))) * 2**-40
        n0 = int(mpmath.ceil(L / mpmath.log(2))) - 1
        m = mpmath.exp((n0 + 1) * mpmath.log(2) - L)
        mant = int(mpmath.floor((m - 1) * 2**52))
        if not 0 <= mant <= MANT_MASK or n0 < 0:
            continue
        words.append(mant)
        n0s.append(n0)
        exact.append(int(mpmath.floor(_exact_z(t, n0, mant))))
    got = _native.dlap_from_bits(np.array(words, dtype=np.uint64),
                                   np.array(n0s, dtype=np.uint64), t)
    assert len(words) > 250
    np.testing.assert_array_equal(np.abs(got), np.array(exact, dtype=np.float64))


def test_sign_bit_and_zero():
    t = 2.0
    n0 = np.zeros(2, dtype=np.uint64)
    mant = np.uint64(12345)
    words = np.array([mant, mant | np.uint64(1 << 52)], dtype=np.uint64)
    pos, neg = _native.dlap_from_bits(words, n0, t)
    assert neg == -pos
    # A zero sample is +0.0 whatever its sign bit: a released -0.0 would carry a bit of
    # the noise.
    t_small = 1e-3
    zeros = _native.dlap_from_bits(words, n0, t_small)
    assert (zeros == 0).all() and not np.signbit(zeros).any()


def test_params_are_accurate():
    for t in (1e-3, 1.0, 7.5, 2.0**24, 2.0**40):
        p = _native.dlap_params(t)
        c = mpmath.log(2) - mpmath.log1p(mpmath.exp(-1 / mpmath.mpf(t)))
        assert abs(mpmath.mpf(p["c"]) - c) <= 2**-52
        # a_hi has at most 40 significant bits, so n*a_hi is exact for n < 2^13.
        m, _ = math.frexp(p["a_hi"])
        assert (Fraction(m) * 2**40).denominator == 1
        a = mpmath.mpf(p["a_hi"]) + mpmath.mpf(p["a_lo"])
        # a_lo carries about 53 bits below the 40 of a_hi.
        assert abs(a - t * mpmath.log(2)) <= t * mpmath.mpf(2) ** -90


def test_uniform_from_bits_is_the_truncated_real():
    rng = np.random.default_rng(3)
    mants = _mantissas(rng, 200)
    for n0 in (0, 5, 10, 11, 200, 1020, 1021, 1022, 1030, 1073, 1074, 1098):
        got = _native.uniform_from_bits(mants, np.full(mants.size, n0, dtype=np.uint64))
        for u, mant in zip(got, mants):
            real = (1 + Fraction(int(mant), 2**52)) / 2**(n0 + 1)
            tiny = Fraction(1, 2**1074)
            want = max(tiny, (real // tiny) * tiny)     # round down to the double grid
            assert Fraction(float(u)) == want, (n0, int(mant))
            assert 0.0 < u < 1.0


def test_privacy_loss_bound_values():
    # Grid mechanism: g/b <= 2^-23 and eta <= about 4 * 2^24 * 2^-49.
    for b in (1e-6, 0.3, 1.0, 10.0, 1e6):
        for eps in (1e-3, 0.1, 1.0):
            d = b * eps
            assert dp.laplace_privacy_loss(b, d) <= eps + 2.4e-7
    # Integer mechanism at t = 1000: eta ~ 7e-12.
    assert 1e-3 < dp.laplace_privacy_loss(1000.0, 1.0, discrete=True) < 1e-3 + 1e-11


def test_privacy_loss_covers_round_half_to_even():
    # D/g odd: x = g/2 rounds down to 0 while x + D (a tie too) rounds up, so neighbours end
    # floor(D/g) + 1 cells apart. The certified loss must cover that pair.
    d, eps = 1000001.0, 0.1
    b = d / eps
    g = noise.laplace_granularity(b)
    x = 0.5 * g
    cells = abs(np.rint((x + d) / g) - np.rint(x / g))
    exact_loss = cells * g / b
    assert exact_loss > eps
    assert dp.laplace_privacy_loss(b, d) >= exact_loss
