"""The Gaussian mechanism: calibration, secure discrete and grid Gaussian noise.

Noise is exact-lattice: ``discrete_gaussian(sigma)`` is the discrete Gaussian
``P[Z = z]`` proportional to ``exp(-z**2 / (2 sigma**2))`` on the integers, drawn by the
rejection sampler of Canonne, Kamath & Steinke (2020) from discrete Laplace proposals with
full-precision uniforms; ``gaussian(sigma)`` is ``g * Z`` with ``Z`` discrete Gaussian of
parameter ``sigma / g`` on the power-of-two grid ``g = gaussian_granularity(sigma)`` (the
smallest power of two >= ``sigma * 2**-20``), so, as for Laplace noise, the set of possible
outputs does not depend on the input.

Distance from the ideal distribution: the acceptance test compares a full-precision uniform
with ``exp(-(|y| - sigma**2/t)**2 / (2 sigma**2))`` computed to about an ulp, and the
proposal's probabilities are those of dpfast's discrete Laplace (within the factor
``exp(+-eta(t))`` of :mod:`dpfast.noise`, ``t = floor(sigma) + 1``); every output
probability with ``|y|`` below about ``37 sigma`` is therefore within a relative
``2 eta(t) + 2**-50`` of the exact discrete Gaussian's (about 1e-8 at ``t = 2**20``); beyond,
where the acceptance probability underflows, the absolute error is below 1e-300. The number of proposals a sample needs is random
but independent of the value it returns (a property of rejection sampling), so timing does
not reveal the noise; the extra words of the uniform's slow path (probability 2**-11 per
word, see :mod:`dpfast.noise`) are the only value-dependent cost.

Calibration: ``classic`` is ``sigma = D2 sqrt(2 ln(1.25/delta)) / eps`` (Dwork & Roth,
Theorem A.1), valid for ``eps < 1`` only; ``analytic`` (the default) is the smallest sigma
with ``Phi(D2/(2 sigma) - eps sigma/D2) - e**eps Phi(-D2/(2 sigma) - eps sigma/D2) <= delta``
(Balle & Wang 2018, Theorem 8), valid for any ``eps > 0``, found by bisection to a relative
1e-12 and rounded up. Both are conditions for the continuous Gaussian. The mechanism rounds
each coordinate to the grid, which can move neighbours ``g sqrt(d)`` further apart in l2, so
it calibrates for ``D2 + g sqrt(d)``, and for ``delta (1 - 1e-4)`` to cover the difference
between the lattice noise (2**19 to 2**20 grid steps per sigma) and the continuous Gaussian.
At a few steps per sigma that difference is not small: the discrete Gaussian of Canonne,
Kamath & Steinke (their Theorem 7) at sigma 2 to 5 exceeds the continuous delta by 2% to
18% (``tests/test_gaussian.py``), which is why the mechanism does not add integer noise to
integer data.
"""
import math

import numpy as np

from . import _native
from . import noise as _noise
from . import random as _random
from . import validation as _v
from .accountant import resolve_accountant

__all__ = ["gaussian", "discrete_gaussian", "gaussian_granularity", "gaussian_sigma",
           "gaussian_mechanism"]

#: Gaussian outputs are multiples of the smallest power of two >= sigma * 2**-GRID_BITS.
GRID_BITS = 20
#: Largest discrete Gaussian sigma (its discrete Laplace proposal must stay below 2**40).
MAX_DISCRETE_SIGMA = 2.0**39


def gaussian_granularity(sigma):
    """gaussian_granularity(sigma)

    Grid step of :func:`gaussian` noise: the smallest power of two >= ``sigma * 2**-20``.

    Examples
    --------
    >>> import dpfast as dp
    >>> dp.gaussian_granularity(1.0) == 2.0**-20
    True
    """
    return _grid(_v.check_scale(sigma, "gaussian_granularity"))


def _grid(sigma):
    m, e = math.frexp(sigma)
    return math.ldexp(1.0, e - 1 - GRID_BITS) if m == 0.5 else math.ldexp(1.0, e - GRID_BITS)


def _phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _analytic_delta(sigma, d2, eps):
    a = d2 / (2.0 * sigma)
    b = eps * sigma / d2
    return _phi(a - b) - math.exp(eps) * _phi(-a - b)


def gaussian_sigma(sensitivity, epsilon, delta, *, calibration="analytic"):
    """gaussian_sigma(sensitivity, epsilon, delta, *, calibration="analytic")

    The Gaussian noise sigma for an l2 ``sensitivity`` that gives (epsilon, delta)-DP.

    Parameters
    ----------
    sensitivity : float
        l2 sensitivity, > 0.
    epsilon : float
        > 0; the classic calibration needs epsilon < 1.
    delta : float
        In (0, 1).
    calibration : {"analytic", "classic"}
        Balle & Wang's exact condition (default), or Dwork & Roth's closed form.

    Returns
    -------
    float

    Examples
    --------
    >>> import dpfast as dp
    >>> round(dp.gaussian_sigma(1.0, 0.5, 1e-5, calibration="classic"), 4)
    9.6896
    >>> dp.gaussian_sigma(1.0, 0.5, 1e-5) < dp.gaussian_sigma(1.0, 0.5, 1e-5, calibration="classic")
    True
    """
    func = "gaussian_sigma"
    d2 = _v.check_sensitivity(sensitivity, func)
    eps = _v.check_real(epsilon, "epsilon", func, high=700.0)
    dlt = _v.check_real(delta, "delta", func, low=0.0, high=1.0)
    if calibration == "classic":
        if eps >= 1.0:
            raise ValueError(f"The classic Gaussian calibration of {func} needs epsilon < 1. "
                             f"Got {epsilon!r} instead; use calibration='analytic'.")
        return d2 * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps
    if calibration != "analytic":
        raise ValueError(f"The 'calibration' parameter of {func} must be 'analytic' or "
                         f"'classic'. Got {calibration!r} instead.")
    # delta(sigma) decreases in sigma: bracket the root, then bisect in log space.
    lo, hi = d2 * 1e-3, d2
    while _analytic_delta(hi, d2, eps) > dlt:
        lo, hi = hi, hi * 2.0
    while _analytic_delta(lo, d2, eps) <= dlt and lo > 1e-300:
        lo /= 2.0
    for _ in range(200):
        if hi - lo <= 1e-13 * hi:
            break
        mid = math.sqrt(lo * hi)
        if _analytic_delta(mid, d2, eps) <= dlt:
            hi = mid
        else:
            lo = mid
    return hi                        # the side that satisfies the condition


def _draw(out, sigma, grid, bitgen, nthreads, base=None):
    if grid:
        g = _grid(sigma)
        _native.fill_gaussian(bitgen, out, sigma / g, g, base, nthreads)
    else:
        _native.fill_discrete_gaussian(bitgen, out, sigma, base, nthreads)
    return out


def _sample(func, sigma, size, rng, threads, grid):
    """Validate the shared arguments of the raw samplers, then draw."""
    shape = _v.check_size(size, func)
    bitgen = _random.resolve_rng(rng, func)
    nthreads = _random.resolve_threads(threads, func)
    out = np.empty(math.prod(shape or ()), dtype=np.float64 if grid else np.int64)
    _draw(out, sigma, grid, bitgen, nthreads)
    out = out.reshape(shape or ())
    return out[()].item() if shape is None else out


def gaussian(sigma, size=None, *, rng=None, threads=None):
    """gaussian(sigma, size=None, *, rng=None, threads=None)

    Gaussian noise of standard deviation about ``sigma`` on an exact power-of-two grid.

    Returns ``g * Z``, ``g = gaussian_granularity(sigma)``, ``Z`` discrete Gaussian with
    parameter ``sigma / g`` (its variance is within a relative 1e-12 of ``(sigma/g)**2``
    for these parameters). ``sigma`` in [2**-900, 2**1000].

    Examples
    --------
    >>> import dpfast as dp
    >>> x = dp.gaussian(3.0, 1000, rng=1)
    >>> g = dp.gaussian_granularity(3.0)
    >>> bool((x / g == (x / g).round()).all())
    True
    """
    return _sample("gaussian", _v.check_scale(sigma, "gaussian"), size, rng, threads, True)


def discrete_gaussian(sigma, size=None, *, rng=None, threads=None):
    """discrete_gaussian(sigma, size=None, *, rng=None, threads=None)

    Discrete Gaussian noise: int64 with ``P[Z = z]`` proportional to
    ``exp(-z**2 / (2 sigma**2))``, ``sigma`` in [2**-900, 2**39].

    Examples
    --------
    >>> import dpfast as dp
    >>> dp.discrete_gaussian(2.0, 5, rng=1).dtype
    dtype('int64')
    """
    s = _v.check_scale(sigma, "discrete_gaussian", high=MAX_DISCRETE_SIGMA)
    return _sample("discrete_gaussian", s, size, rng, threads, False)


def gaussian_mechanism(value, *, sensitivity, epsilon, delta, calibration="analytic",
                       accountant=None, rng=None, threads=None):
    """gaussian_mechanism(value, *, sensitivity, epsilon, delta, calibration="analytic", accountant=None, rng=None, threads=None)

    Release ``value`` with Gaussian noise calibrated to its l2 ``sensitivity``:
    (epsilon, delta)-DP, both charged to the accountant before any noise is drawn.

    The data (integer or float) is rounded to the grid of :func:`gaussian_granularity` and
    gets grid Gaussian noise; the result is float64. (For integer pipelines,
    :func:`discrete_gaussian` gives integer noise, but its (epsilon, delta) at the
    continuous calibration can exceed delta for small sigma -- by 2% to 18% at sigma 2 to 5
    -- so the mechanism does not use it.) See the module documentation for the
    calibration and the distance from the ideal distribution.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0, delta=1e-5)
    >>> noisy = dp.gaussian_mechanism([120, 45, 7], sensitivity=1.0, epsilon=1.0, delta=1e-5,
    ...                               accountant=acct, rng=0)
    >>> noisy.dtype, acct.spent
    (dtype('float64'), (1.0, 1e-05))
    """
    func = "gaussian_mechanism"
    d2 = _v.check_sensitivity(sensitivity, func)
    eps = _v.check_epsilon(epsilon, func)
    dlt = _v.check_real(delta, "delta", func, low=0.0, high=1.0)
    data, _ = _v.check_data(value, "value", func)
    data = np.asarray(data, dtype=np.float64)
    acct = resolve_accountant(accountant, func)
    bitgen = _random.resolve_rng(rng, func)
    nthreads = _random.resolve_threads(threads, func)
    # Rounding to the grid can move neighbours g sqrt(d) further apart: recalibrate until the
    # grid of the final sigma is covered. The lattice noise is calibrated for delta (1 - 1e-4):
    # at 2**19 or more grid steps per sigma its delta differs from the continuous one by about
    # 1e-12 relative, and the sampler's own error (a factor exp(+-eta), eta(2**20) = 7.5e-9,
    # on each probability) moves delta by about 1e-6 relative: both inside the margin.
    dims = max(1, data.size)
    target = dlt * (1.0 - 1e-4)
    sigma = gaussian_sigma(d2, eps, target, calibration=calibration)
    g = _grid(_v.check_scale(sigma, func))
    # Fixed point: sigma calibrated for D2 + g sqrt(d) must not need a coarser grid than g.
    # g at least doubles each round, so this settles within a few rounds or never (when
    # sqrt(d) sigma / D2 is near 2**20 or more).
    for _ in range(64):
        sigma = gaussian_sigma(d2 + g * math.sqrt(dims), eps, target, calibration=calibration)
        if _grid(sigma) <= g:
            break
        g = _grid(sigma)
    else:
        raise ValueError(
            f"{func} cannot calibrate a grid release of {dims:,} coordinates at "
            f"sensitivity={sensitivity!r}, epsilon={epsilon!r}, delta={delta!r}: rounding to "
            "the noise grid would cost more than the noise allows (sqrt(d) * sigma / "
            "sensitivity approaches 2**20). Release the vector in smaller parts or use a "
            "larger epsilon.")
    _v.check_scale(sigma, func)
    flat = data.reshape(-1)
    limit = 2.0**52 * _grid(sigma)
    if flat.size and np.abs(flat).max() > limit:
        raise ValueError(f"The 'value' parameter of {func} must have |value| <= {limit:g} "
                         "for exact grid arithmetic.")
    out = np.empty(data.size, dtype=np.float64)
    acct.spend(eps, dlt, label=func)
    _draw(out, sigma, True, bitgen, nthreads, base=flat)
    out = out.reshape(data.shape)
    return out[()].item() if data.ndim == 0 else out
