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

The grid release of ``d`` coordinates (``_grid_sigma``) pays for three departures from the
continuous Gaussian, each bounded and charged:

1. Rounding. Each coordinate is rounded to the grid ``g`` (a power of two), which can move
   neighbours ``g sqrt(d)`` further apart in l2, so sigma is calibrated for
   ``D2 + g sqrt(d)``. The grid comes from this rounding budget, not from sigma alone: ``g``
   is the largest power of two with ``g sqrt(d) <= 2**-12 D2`` (and at most ``sigma 2**-20``),
   so rounding adds at most 2.4e-4 of the sensitivity whatever ``d`` is. It depends only on
   public parameters (the sensitivity, epsilon, delta and ``d``), never on the data.
2. The lattice. Noise is ``g`` times a discrete Gaussian with ``sigma/g >= 2**20`` steps per
   sigma; its delta differs from the continuous one by about 1e-12 relative, covered by
   calibrating for ``delta (1 - 1e-4)``.
3. Floating point. The sampler's probability of each coordinate's noise ``z`` is within a
   factor ``exp(+-eta_a(z))`` of the exact discrete Gaussian's, ``eta_a`` quadratic in
   ``z/sigma`` and not growing with ``sigma/g`` (:mod:`dpfast.samplers`). Over the whole
   vector the bound is :func:`dpfast.samplers.gaussian_fp_loss` ``Lambda`` (about 6e-15 per
   coordinate), valid for every noise vector with ``Q = sum (z_i/sigma)**2 <= q``; ``q`` is
   the chi-square quantile ``d + 2 sqrt(d x) + 2 x`` (Laurent & Massart 2000: exceeded
   with probability ``e**-x``; the discrete Gaussian's ``z**2/sigma**2`` has the chi-square
   moment generating function to within a relative 1e-(10**12) at ``2**20`` steps per
   sigma, and the computed sampler changes the probability by a factor below 1.01, checked),
   with ``tau = 1.01 e**-x`` chosen so that ``tau (1 + e**eps) = 2**-14 delta``. For every
   output set S and neighbours x, x' (P the exact mechanism, P' the computed one),
   ``P'_x(S) <= e**Lambda P_x(S) + tau`` and ``P_x'(S) <= e**Lambda P'_x'(S) + tau``, so the
   release is (eps, delta)-DP if the exact mechanism is (eps0, delta0)-DP with either
   ``eps0 = eps - 2 Lambda`` and ``delta0 = (delta - tau (1 + e**eps)) e**-Lambda``, or
   ``eps0 = eps`` and ``delta0 = delta - (1 + e**eps)(expm1(Lambda) + tau)``; the
   calibration takes whichever gives the smaller sigma (the first at moderate epsilon, the
   second at tiny epsilon). At ``d = 10**8`` the charge is about 6e-7 of epsilon or of delta.

Measured (``bench/bench_gaussian.py``, 2 cores): sigma is within 1.0002 of the analytic sigma
at ``10**7`` coordinates, epsilon 0.1, delta 1e-9 (released std/sigma 1.00022, was 1.19),
within 1.0004 for a scalar at epsilon 1e-6, delta 1e-5 (was 1.07), and ``10**8`` coordinates
are released in 0.6 s. No number of coordinates is refused below about ``10**12``; where the
floating-point charge is comparable with delta (``10**8`` coordinates at epsilon 1e-6, delta
1e-5: 1.13 in sigma) the release is correct but costs more noise.
"""
import functools
import math
import sys
from typing import TYPE_CHECKING, Literal

import numpy as np

from .. import validation as _v
from .._release import release
from ..noise import Gaussian
from ..noise.grids import pow2_ceil, pow2_floor
from ..samplers import gaussian_fp_error, gaussian_fp_loss
from ..zcdp.calibration import calibrated_sigma as _sigma, gaussian_sigma

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["gaussian_mechanism", "gaussian_sigma", "released_sigma"]


def gaussian_mechanism(value: "ArrayLike", *, sensitivity: float, epsilon: float, delta: float,
                       calibration: Literal["analytic", "classic"] = "analytic",
                       accountant: "AccountantLike | None" = None, rng: "RngLike" = None,
                       threads: int | None = None) -> "float | NDArray[np.float64]":
    """gaussian_mechanism(value, *, sensitivity, epsilon, delta, calibration="analytic", accountant=None, rng=None, threads=None)

    Release ``value`` with Gaussian noise calibrated to its l2 ``sensitivity``:
    (epsilon, delta)-DP, both charged to the accountant before any noise is drawn.

    The data (integer or float) is rounded to a power-of-two grid no coarser than
    :func:`gaussian_granularity` of sigma (finer for many coordinates; sigma is calibrated
    for what the rounding can add) and gets grid Gaussian noise; the result is float64. (For integer pipelines, :func:`discrete_gaussian` gives integer noise, but
    its (epsilon, delta) at the continuous calibration can exceed delta for small sigma -- by
    2% to 18% at sigma 2 to 5 -- so the mechanism does not use it.) See the module
    documentation for the calibration and the distance from the ideal distribution.

    Parameters
    ----------
    value : int, float or array_like of them
        The true query answer(s).
    sensitivity : float
        l2 sensitivity of the query (over all coordinates together), > 0.
    epsilon : float
        Privacy parameter, > 0 (< 1 for the classic calibration).
    delta : float
        Privacy parameter, in (0, 1).
    calibration : {"analytic", "classic"}, optional
        How sigma is computed from the parameters (module documentation); the default
        ``"analytic"`` gives the smaller sigma and holds for any epsilon.
    accountant : Accountant, optional
        Charged (epsilon, delta); default :func:`dpfast.default_accountant`.
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases) draws from an OS-keyed generator. A seed
        makes the noise reproducible: for tests and research only.
    threads : int, optional
        Threads for large inputs (default ``OMP_NUM_THREADS``); the output for a given
        generator state does not depend on it.

    Returns
    -------
    float or ndarray of float64
        Same shape as ``value``; a Python float for a scalar. The noise's sigma is
        :func:`released_sigma` of the parameters and the number of coordinates.

    Raises
    ------
    TypeError
        If ``sensitivity``, ``epsilon`` or ``delta`` is not a real number (a bool included);
        ``value`` is not numeric data; ``accountant`` is not an accountant; ``rng`` is not
        one of the accepted kinds; or ``threads`` is not an int. Raised before anything is
        charged or drawn.
    ValueError
        If ``sensitivity`` or ``epsilon`` is NaN, infinite or <= 0; ``delta`` is not in
        (0, 1); ``calibration`` is neither name, or ``"classic"`` with ``epsilon >= 1``; the
        parameters give a sigma outside [2^-900, 2^1000] or admit no calibration (the
        floating-point error of that many coordinates would take all of epsilon and delta);
        ``value`` is ragged, holds NaN or infinite entries or integers beyond int64, or an
        entry beyond ``2**51`` grid steps; ``threads`` is outside [1, 1024]; or ``rng`` is a
        negative seed. Raised before anything is charged or drawn.
    BudgetExceededError
        If the accountant cannot afford (epsilon, delta); nothing is charged or drawn.

    Examples
    --------
    Three counts at (1, 1e-5) (``rng=0``: reproducible, for tests only):

    >>> import dpfast as dp
    >>> import numpy as np
    >>> acct = dp.Accountant(epsilon=1.0, delta=1e-5)
    >>> noisy = dp.gaussian_mechanism([120, 45, 7], sensitivity=1.0, epsilon=1.0, delta=1e-5,
    ...                               accountant=acct, rng=0)
    >>> noisy.dtype, acct.spent
    (dtype('float64'), (1.0, 1e-05))
    >>> print(np.round(noisy, 2))
    [122.33  45.05   7.45]
    """
    func = "gaussian_mechanism"
    d2 = _v.check_sensitivity(sensitivity, func)
    eps = _v.check_epsilon(epsilon, func)
    dlt = _v.check_real(delta, "delta", func, low=0.0, high=1.0)
    data, _ = _v.check_data(value, "value", func)
    data = np.asarray(data, dtype=np.float64)
    sigma, g = _grid_sigma(d2, eps, dlt, max(1, data.size), calibration, func)
    # The grid comes from the rounding budget (module docstring), finer than the noise
    # object's default for sigma alone.
    noise = Gaussian(sigma, integer=False, g=g)
    limit = 2.0**51 * g
    lo, hi = _v.value_range(data) if data.size else (0.0, 0.0)
    if max(-lo, hi) > limit:
        raise ValueError(f"The 'value' parameter of {func} must have |value| <= {limit:g} "
                         f"for exact grid arithmetic on the grid {g:g} that {data.size:,} "
                         f"coordinates at sensitivity={d2!r} need.")
    out = np.empty(data.shape, dtype=np.float64)
    release(func, accountant, eps, dlt, rng, threads, out.size, noise.fill, out, data)
    return out if out.ndim else out.item()


def released_sigma(sensitivity: float, epsilon: float, delta: float, size: int = 1,
                   calibration: Literal["analytic", "classic"] = "analytic") -> float:
    """The sigma of the noise :func:`gaussian_mechanism` adds to a release of ``size``
    coordinates: :func:`gaussian_sigma` plus what rounding the data to the grid and the
    sampler's floating-point error cost (module docstring). Nothing is charged or drawn.

    Examples
    --------
    >>> from dpfast.mechanisms.gaussian import released_sigma
    >>> import dpfast as dp
    >>> round(released_sigma(1.0, 0.1, 1e-9, 10**7) / dp.gaussian_sigma(1.0, 0.1, 1e-9), 4)
    1.0002
    """
    func = "released_sigma"
    d2 = _v.check_sensitivity(sensitivity, func)
    eps = _v.check_epsilon(epsilon, func)
    dlt = _v.check_real(delta, "delta", func, low=0.0, high=1.0)
    n = _v.check_positive_int(size, "size", func)
    return _grid_sigma(d2, eps, dlt, n, calibration, func)[0]


def _check_sigma(sigma: float, d2: float, eps: float, dlt: float, func: str) -> float:
    """sigma within the sampler's range of scales, or an error naming what the caller gave."""
    if not _v.MIN_SCALE <= sigma <= _v.MAX_SCALE:
        raise ValueError(
            f"The 'sensitivity', 'epsilon' and 'delta' parameters of {func} must give a noise "
            f"sigma in [2^-900, 2^1000]. Got sensitivity={d2!r}, epsilon={eps!r}, "
            f"delta={dlt!r} (sigma {sigma:g}) instead.")
    return sigma


#: Share of the l2 sensitivity that rounding to the grid may add: g sqrt(d) <= this * D2.
_ROUNDING_SHARE = 2.0**-12
#: Least and most grid steps per sigma (the lattice margin; the sampler's block 2**m <= 2**40).
_MIN_STEPS = 2.0**20
_MAX_STEPS = 2.0**39
#: Share of delta given to noise vectors outside the range where the sampler's error is bounded.
_TAIL_SHARE = 2.0**-14


def _fp_budgets(eps: float, dlt: float, dims: int,
                steps: float) -> list[tuple[float, float]]:
    """The (eps0, delta0) pairs for the exact mechanism that make the computed one
    (eps, delta)-DP (module docstring, item 3), for noise of ``steps`` grid steps per sigma."""
    # The computed sampler may put up to this factor more mass on any set of noise vectors
    # than the exact one (its largest pointwise error, at the edge of underflow, times d).
    if dims * gaussian_fp_error(steps, 40.0) > 0.009:
        return []
    tau = _TAIL_SHARE * dlt / (1.0 + math.exp(eps))
    x = math.log(1.01 / tau)
    q = dims + 2.0 * math.sqrt(dims * x) + 2.0 * x
    lam = gaussian_fp_loss(steps, dims, q)
    out = []
    eps_a = eps - 2.0 * lam
    dlt_a = (dlt - tau * (1.0 + math.exp(eps))) * math.exp(-lam)
    if eps_a > 0.0 and dlt_a > 0.0:
        out.append((eps_a, dlt_a))
    dlt_b = dlt - (1.0 + math.exp(eps)) * (math.expm1(lam) + tau)
    if dlt_b > 0.0:
        out.append((eps, dlt_b))
    return out


@functools.lru_cache(maxsize=256)
def _grid_sigma(d2: float, eps: float, dlt: float, dims: int,
                calibration: Literal["analytic", "classic"],
                func: str) -> tuple[float, float]:
    """(sigma, g) of a grid release of ``dims`` coordinates: g from the rounding budget, sigma
    calibrated for the sensitivity plus what rounding can add, with the floating-point and
    lattice terms charged (module docstring). Cached: a pure function of public parameters,
    and repeated small releases ask for the same ones."""
    margin = 1.0 - 1e-4
    root = math.sqrt(dims)
    share = _ROUNDING_SHARE * d2 / root
    g_budget = pow2_floor(share) if share >= sys.float_info.min else 0.0

    def grid(sigma: float) -> float:
        # The budget's grid, within 2^20 to 2^39 steps per sigma.
        return max(min(g_budget, pow2_floor(sigma / _MIN_STEPS)),
                   pow2_ceil(sigma / _MAX_STEPS))

    sigma = _check_sigma(_sigma(d2, eps, dlt, calibration, func, margin), d2, eps, dlt, func)
    g = grid(sigma)
    # sigma depends on g (through D2 + g sqrt(d) and the sampler's error at sigma/g) and g on
    # sigma (the bounds on steps per sigma): iterate to a fixed point. g moves by powers of
    # two and sigma by a few 1e-4 at most, so this settles in a round or two.
    for _ in range(64):
        budgets = _fp_budgets(eps, dlt, dims, sigma / g)
        if not budgets:
            break
        sigma = min(_sigma(d2 + g * root, e0, d0, calibration, func, margin)
                    for e0, d0 in budgets)
        _check_sigma(sigma, d2, eps, dlt, func)
        if grid(sigma) == g:
            return sigma, g
        g = grid(sigma)
    raise ValueError(
        f"{func} cannot calibrate a grid release of {dims:,} coordinates at "
        f"sensitivity={d2!r}, epsilon={eps!r}, delta={dlt!r}: the floating-point error of "
        f"{dims:,} noisy coordinates would take all of epsilon and delta.")
