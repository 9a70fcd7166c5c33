"""The Gaussian mechanism and its calibration.

``gaussian_mechanism`` releases values with Gaussian noise on an exact power-of-two grid
(:func:`dpfast.gaussian`, see :mod:`dpfast.samplers`), calibrated to the l2 sensitivity for
(epsilon, delta)-DP; ``gaussian_sigma`` is the calibration.

Calibration: ``classic`` is ``sigma = D2 sqrt(2 ln(1.25/delta)) / eps`` (Dwork & Roth,
Theorem A.1), valid for ``eps < 1`` only; ``analytic`` (the default) is the smallest sigma
with ``Phi(D2/(2 sigma) - eps sigma/D2) - e**eps Phi(-D2/(2 sigma) - eps sigma/D2) <= delta``
(Balle & Wang 2018, Theorem 8), valid for any ``eps > 0``, found by bisection to a relative
1e-12 and rounded up; each evaluation of delta counts a bound on its own floating-point
error against it, and a calibration whose error bound exceeds 1e-3 of delta (tiny epsilon
and delta together, where delta is the difference of two probabilities near 1/2) is refused.
Both are computed for sensitivity 1 and multiplied by it (sigma is linear in the
sensitivity). Both are conditions for the continuous Gaussian.

The grid release. ``gaussian_mechanism`` rounds each coordinate to a power-of-two grid g and
adds ``g Z``, Z discrete Gaussian of parameter ``sigma / g`` (the steps per sigma). Three
things separate it from the continuous condition, and the grid is chosen to pay for them:

1. Rounding can move neighbours up to ``g sqrt(d)`` further apart in l2 (d coordinates), so
   sigma is calibrated for ``D2 + g sqrt(d)``. This cost does not depend on sigma: the grid
   is chosen from it. The candidates are the power-of-two grids from 2**19 to 2**20 steps
   per sigma (the grid of :func:`dpfast.gaussian`) down to the sampler's limit
   (``MAX_DISCRETE_SIGMA`` steps); the coarsest whose sigma is within 1.0001 of the analytic
   sigma for ``D2`` alone is taken, else the one with the smallest sigma. More coordinates
   get finer grids: 10**7 at epsilon 0.1, delta 1e-9 gets about 2**29.6 steps per sigma and
   sigma 1.0004 times the analytic one.
2. The lattice noise's delta differs from the continuous one. At a few steps per sigma that
   difference is not small: the discrete Gaussian of Canonne, Kamath & Steinke (their
   Theorem 7) at sigma 2 to 5 exceeds the continuous delta by 2% to 18%
   (``tests/test_gaussian.py``), which is why the mechanism does not add integer noise to
   integer data. The difference shrinks as the steps per sigma grow (about their inverse
   square, by Poisson summation), so every candidate grid, at 2**19 steps or more, is within
   1e-6 relative of the continuous delta, and finer grids only shrink it.
3. The sampler's floating-point error grows with the steps per sigma: every output
   probability is within a factor ``exp(+-a)``, ``a = -ln(1 - 2 eta(t) - 2**-50)`` with
   ``t = floor(sigma/g) + 1`` and ``eta(t)`` about ``4 t 2**-49`` (:mod:`dpfast.samplers`). A
   coordinate whose probabilities move by ``exp(+-a)`` turns an (epsilon', delta') mechanism
   into an (epsilon' + 2a, e**a delta') one, so the release is (eps, delta)-DP when
   ``e**a delta_analytic(eps - 2a) (1 + 1e-6) <= delta`` (``eps - 2a`` may be negative:
   the analytic delta is defined there). Every sigma is checked against that condition, and
   recalibrated for it where the calibration for ``delta (1 - 1e-4)`` does not already meet
   it. This term is why finer grids are not free, and at tiny epsilon it dominates: there
   ``delta`` grows by about ``a`` itself (the analytic delta's slope in epsilon is near 1/2),
   so a scalar at epsilon 1e-6, delta 1e-5 gets sigma 1.0145 times the analytic one (the
   best grid balances rounding against the sampler's error) and 10**8 coordinates at
   epsilon 1e-5, delta 1e-5 are refused: no grid the sampler supports covers both.

The bound of point 3 is per coordinate: it covers neighbours whose rounded values differ in
one coordinate. Over k differing coordinates (with l2 sensitivity, up to all d) the
worst-case factors multiply, adding up to ``2 k a`` to epsilon; the errors are bounded and
independent across coordinates, which suggests a bound of order ``a sqrt(k)``, but at the
2**30 steps per sigma of 10**8 coordinates even that is not small. This gap is not new (at
2**20 steps ``2 k a`` is 0.3 for 10**7 coordinates) but finer grids widen it; closing it
needs a sampler whose error does not grow with the steps per sigma. ``_MAX_STEPS`` caps the
steps per sigma the grid choice may use.

Exact arithmetic: ``rint(value / g) + Z`` and its product by g are exact while
``|value| <= 2**52 g``; g is finer for more coordinates, so that limit shrinks with them
(10**7 coordinates at epsilon 0.1, delta 1e-9: about 2.7e8 times the sensitivity). Larger
values are refused before anything is charged.
"""
import functools
import math
import sys
from typing import TYPE_CHECKING, Literal

import numpy as np

from .. import _native
from .. import validation as _v
from .._release import release
from ..samplers import MAX_DISCRETE_SIGMA, eta, gaussian_grid

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["gaussian_mechanism", "gaussian_sigma"]


# Relative error of libm's erfc and exp (a few ulp) with room to spare, and the largest
# relative error of a computed delta(sigma) the calibration accepts.
_TERM_ERROR = 2.0**-48
_MAX_DELTA_ERROR = 1e-3


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _analytic_delta(s: float, eps: float) -> tuple[float, float]:
    """(delta, bound on its floating-point error) of the Gaussian of sigma ``s`` for l2
    sensitivity 1: ``Phi(a - b) - e**eps Phi(-a - b)``, ``a = 1/(2s)``, ``b = eps s``.

    Each term has a relative error of a few ulp from erfc and exp, plus what the rounding of
    its argument x moves it by (relative |x| ulp(x) at most, the slope of log Phi); the two
    terms can be close, so the bound is absolute. ``eps`` may be negative (the grid release
    evaluates delta at ``eps`` minus the sampler's error, see :func:`_covers`)."""
    a = 0.5 / s
    b = eps * s
    t1 = _phi(a - b)
    t2 = math.exp(eps) * _phi(-a - b)
    arg = 2.0**-52 * (a + abs(b))
    err = t1 * (_TERM_ERROR + (abs(a - b) + 1.0) * arg) + \
        t2 * (_TERM_ERROR + (abs(a + b) + 1.0) * arg)
    return t1 - t2, err


def _unit_sigma(eps: float, dlt: float, calibration: str, func: str,
                margin: float) -> float:
    """The sigma for l2 sensitivity 1 (sigma is proportional to the sensitivity), calibrated
    for delta ``dlt * margin``."""
    target = dlt * margin
    if calibration == "classic":
        if eps >= 1.0:
            raise ValueError(f"The classic Gaussian calibration of {func} needs epsilon < 1. "
                             f"Got {eps!r} instead; use calibration='analytic'.")
        return math.sqrt(2.0 * math.log(1.25 / target)) / eps
    if calibration != "analytic":
        raise ValueError(f"The 'calibration' parameter of {func} must be 'analytic' or "
                         f"'classic'. Got {calibration!r} instead.")

    def satisfies(s: float) -> bool:
        # delta(s) <= dlt even at the far end of its error bound: the calibration never
        # trusts a rounding error in its favour.
        value, err = _analytic_delta(s, eps)
        return value + err <= target

    # delta(sigma) decreases in sigma: bracket the root, then bisect in log space.
    lo, hi = 1e-3, 1.0
    while not satisfies(hi):
        lo, hi = hi, hi * 2.0
        if hi > 2.0**1000:
            break
    while satisfies(lo) and lo > 1e-300:
        lo /= 2.0
    for _ in range(200):
        if hi - lo <= 1e-13 * hi:
            break
        mid = math.sqrt(lo * hi)
        if satisfies(mid):
            hi = mid
        else:
            lo = mid
    _, err = _analytic_delta(hi, eps)
    if hi > 2.0**1000 or err > _MAX_DELTA_ERROR * target:
        # At tiny epsilon the two terms of delta are both near 1/2 and delta is their small
        # difference, which double precision no longer resolves.
        raise ValueError(
            f"The 'epsilon' and 'delta' parameters of {func} are too small together for an "
            f"exact analytic calibration in double precision: at epsilon={eps!r} delta is a "
            f"difference of two probabilities near 1/2 that cannot be computed to "
            f"{_MAX_DELTA_ERROR:g} of delta={dlt!r}. Use a larger epsilon or delta.")
    return hi


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, *,
                   calibration: Literal["analytic", "classic"] = "analytic") -> float:
    """gaussian_sigma(sensitivity, epsilon, delta, *, calibration="analytic")

    The Gaussian noise sigma for an l2 ``sensitivity`` that gives (epsilon, delta)-DP.

    Parameters
    ----------
    sensitivity : float
        l2 sensitivity: a normal float > 0 (at least 2.2e-308).
    epsilon : float
        > 0; the classic calibration needs epsilon < 1.
    delta : float
        In (0, 1).
    calibration : {"analytic", "classic"}
        Balle & Wang's exact condition (default), or Dwork & Roth's closed form.

    Returns
    -------
    float
        ``sensitivity`` times the sigma for sensitivity 1 (rounded up), so exactly linear in
        the sensitivity; ``ValueError`` if that leaves the range of normal floats.

    Examples
    --------
    >>> import dpfast as dp
    >>> round(dp.gaussian_sigma(1.0, 0.5, 1e-5, calibration="classic"), 4)
    9.6896
    >>> dp.gaussian_sigma(1.0, 0.5, 1e-5) < dp.gaussian_sigma(1.0, 0.5, 1e-5, calibration="classic")
    True
    """
    return _sigma(sensitivity, epsilon, delta, calibration, "gaussian_sigma")


def _sigma(sensitivity: float, epsilon: float, delta: float, calibration: str,
           func: str, margin: float = 1.0) -> float:
    """gaussian_sigma for delta ``delta * margin``, its errors naming ``func`` and the
    ``delta`` given."""
    d2 = _v.check_sensitivity(sensitivity, func)
    if d2 < sys.float_info.min:
        raise ValueError(f"The 'sensitivity' parameter of {func} must be a normal float "
                         f"(>= {sys.float_info.min!r}): sigma is computed relative to it. "
                         f"Got {sensitivity!r} instead.")
    eps = _v.check_real(epsilon, "epsilon", func, high=700.0)
    dlt = _v.check_real(delta, "delta", func, low=0.0, high=1.0)
    sigma = math.nextafter(d2 * _unit_sigma(eps, dlt, calibration, func, margin), math.inf)
    if not sys.float_info.min <= sigma < math.inf:
        raise ValueError(f"The 'sensitivity' parameter of {func} gives a sigma outside the "
                         f"range of normal floats at epsilon={eps!r}, delta={dlt!r}. Got "
                         f"{sensitivity!r} instead.")
    return sigma


def gaussian_mechanism(value: "ArrayLike", *, sensitivity: float, epsilon: float, delta: float,
                       calibration: Literal["analytic", "classic"] = "analytic",
                       accountant: "AccountantLike | None" = None, rng: "RngLike" = None,
                       threads: int | None = None) -> "float | NDArray[np.float64]":
    """gaussian_mechanism(value, *, sensitivity, epsilon, delta, calibration="analytic", accountant=None, rng=None, threads=None)

    Release ``value`` with Gaussian noise calibrated to its l2 ``sensitivity``:
    (epsilon, delta)-DP, both charged to the accountant before any noise is drawn.

    The data (integer or float) is rounded to a power-of-two grid chosen from the public
    parameters (finer for more coordinates, so that rounding costs at most about 1e-4 of
    sigma where the sampler allows) and gets grid Gaussian noise; the result is float64.
    ``|value|`` must stay below 2**52 grid steps. (For integer pipelines,
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
    sigma, g = _grid_sigma(d2, eps, dlt, max(1, data.size), calibration, func)
    # Rounding to the grid and adding lattice noise are exact while |value| / g stays below
    # 2**52; g depends only on the public parameters (finer for more coordinates).
    limit = 2.0**52 * g
    lo, hi = _v.value_range(data) if data.size else (0.0, 0.0)
    if max(-lo, hi) > limit:
        raise ValueError(f"The 'value' parameter of {func} must have |value| <= 2**52 times "
                         f"the noise grid step, {limit:g} here, for exact grid arithmetic.")
    out = np.empty(data.shape, dtype=np.float64)
    release(func, accountant, eps, dlt, rng, threads, out.size, _native.fill_gaussian, out,
            sigma / g, g, data)
    return out if out.ndim else out.item()


def _check_sigma(sigma: float, d2: float, eps: float, dlt: float, func: str) -> float:
    """sigma within the sampler's range of scales, or an error naming what the caller gave."""
    if not _v.MIN_SCALE <= sigma <= _v.MAX_SCALE:
        raise ValueError(
            f"The 'sensitivity', 'epsilon' and 'delta' parameters of {func} must give a noise "
            f"sigma in [2^-900, 2^1000]. Got sensitivity={d2!r}, epsilon={eps!r}, "
            f"delta={dlt!r} (sigma {sigma:g}) instead.")
    return sigma


# The continuous calibration is made for delta (1 - _MARGIN); the lattice noise's delta, at
# 2**19 or more grid steps per sigma, is within _LATTICE (relative) of the continuous one.
_MARGIN = 1e-4
_LATTICE = 1e-6
# Bound on the probability, per coordinate, of noise beyond 37 sigma (where the sampler's
# acceptance probability underflows and its error is absolute): 2 exp(-684) < 1e-296.
_TAIL = 1e-290
# A grid whose sigma is within this factor of the analytic sigma needs no finer grid.
_ENOUGH = 1.0 + 1e-4
# The most grid steps per sigma a grid release may use (the kernel's limit); the sampler's
# error per coordinate grows with them (see the module docstring).
_MAX_STEPS = MAX_DISCRETE_SIGMA


def _sampler_error(steps: float) -> float:
    """a such that every output probability of the sampler with ``steps`` grid steps per
    sigma is within a factor exp(+-a) of the exact discrete Gaussian's: the relative error
    ``2 eta(t) + 2**-50``, ``t = floor(steps) + 1`` (see :mod:`dpfast.samplers`)."""
    r = 2.0 * eta(math.floor(steps) + 1.0) + 2.0**-50
    return math.inf if r >= 0.5 else -math.log1p(-r) * (1.0 + 2.0**-40)


def _covers(sigma: float, sens: float, eps: float, dlt: float, a: float) -> bool:
    """Whether noise of this sigma, drawn with a sampler error factor exp(+-a), gives
    (eps, dlt)-DP for the (rounded) l2 sensitivity ``sens``: a coordinate's probabilities
    move by exp(+-a), so the release is (eps, e**a delta_exact(eps - 2a))-DP; delta_exact is
    the continuous analytic delta within _LATTICE, plus the tail term."""
    e2 = math.nextafter(eps - 2.0 * a, -math.inf)      # may be negative: delta is defined
    unit = math.nextafter(sigma / sens, 0.0)        # rounded down: larger delta
    value, err = _analytic_delta(unit, e2)
    if err > _MAX_DELTA_ERROR * dlt:
        return False
    return math.exp(a) * (value + err) * (1.0 + _LATTICE) + _TAIL <= dlt * (1.0 - 2.0**-40)


def _sigma_on_grid(g: float, d2: float, eps: float, dlt: float, dims: int,
                   calibration: str, func: str) -> float:
    """The sigma of a release of ``dims`` coordinates rounded to the grid g, or inf if no
    sigma the sampler supports covers it."""
    # Rounding each coordinate to the grid moves neighbours up to g apart in it, so up to
    # g sqrt(d) further apart in l2 (the sum's rounding, 1e-16 relative, is inside _LATTICE).
    sens = d2 + g * math.sqrt(dims)
    margin = 1.0 - _MARGIN
    try:
        sigma = _sigma(sens, eps, dlt, calibration, func, margin)
        for _ in range(8):
            steps = sigma / g
            if steps > _MAX_STEPS:
                return math.inf
            a = _sampler_error(steps)
            if _covers(sigma, sens, eps, dlt, a):
                return sigma
            # The sampler's error is not inside the margin: calibrate for it explicitly, for
            # a slightly larger sigma than this one (a grows with the steps per sigma).
            # The analytic condition is the one checked, whatever the calibration.
            a = _sampler_error(min(steps * 1.01, _MAX_STEPS))
            e2 = math.nextafter(eps - 2.0 * a, -math.inf)
            unit = _unit_sigma(e2, dlt, "analytic", func, margin * math.exp(-a))
            sigma = max(sigma, math.nextafter(sens * unit, math.inf))
    except ValueError:
        return math.inf
    return math.inf


# The calibration is a pure function of public parameters and costs about a millisecond
# (tens at tiny epsilon): repeated releases with the same parameters reuse it.
@functools.lru_cache(maxsize=256)
def _grid_sigma(d2: float, eps: float, dlt: float, dims: int,
                calibration: Literal["analytic", "classic"],
                func: str) -> tuple[float, float]:
    """(sigma, g): the noise sigma and grid step of a grid release of ``dims`` coordinates.

    The candidates are power-of-two grids from 2**19 to 2**20 steps per sigma (the coarsest,
    as :func:`dpfast.gaussian`) down to the sampler's limit, each calibrated by
    :func:`_sigma_on_grid`; the coarsest whose sigma is within _ENOUGH of the analytic sigma
    for the sensitivity alone is taken, else the one with the smallest sigma."""
    sigma0 = _check_sigma(_sigma(d2, eps, dlt, calibration, func, 1.0 - _MARGIN),
                          d2, eps, dlt, func)
    ideal = _sigma(d2, eps, dlt, calibration, func)
    g = gaussian_grid(sigma0)
    best, best_g = math.inf, g
    while sigma0 / g <= _MAX_STEPS and g >= sys.float_info.min:
        sigma = _sigma_on_grid(g, d2, eps, dlt, dims, calibration, func)
        if sigma < best:
            best, best_g = sigma, g
        if best <= ideal * _ENOUGH:
            break
        g /= 2.0
    if best == math.inf:
        raise ValueError(
            f"{func} cannot calibrate a grid release of {dims:,} coordinates at "
            f"sensitivity={d2!r}, epsilon={eps!r}, delta={dlt!r}: on every grid the sampler "
            "supports, rounding to the grid or the sampler's own error costs more than the "
            "noise allows. Use a larger epsilon or delta.")
    return _check_sigma(best, d2, eps, dlt, func), best_g
