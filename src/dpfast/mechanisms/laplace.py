"""The Laplace family: the Laplace mechanism, its accuracy and its certified privacy loss.

``laplace_mechanism`` adds Laplace noise of scale ``sensitivity / epsilon`` to each coordinate
(Dwork & Roth, Theorem 3.6): discrete Laplace noise to integer data, exact-grid noise to
float data (see :mod:`dpfast.samplers` for the floating-point-safe sampler).
``max_error_bound`` is the accuracy of such a release over k coordinates (Theorem 3.8, and
its exact form for discrete noise); ``laplace_privacy_loss`` is the privacy loss it certifies,
floating-point error included.
"""
import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from .. import validation as _v
from .._release import release
from ..noise import Laplace, laplace, laplace_scalar_kernel, real_laplace
from ..samplers import MAX_DISCRETE_SCALE, eta

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["laplace_mechanism", "laplace_privacy_loss", "max_error_bound"]

# Integer inputs are released as value + K in int64 without overflow while |value| <= 2^62
# (|K| < 2^51).
_MAX_INT_VALUE = 2**62


def laplace_mechanism(value: "ArrayLike", *, sensitivity: float, epsilon: float,
                      accountant: "AccountantLike | None" = None, rng: "RngLike" = None,
                      threads: int | None = None,
                      ) -> "int | float | NDArray[np.int64] | NDArray[np.float64]":
    """laplace_mechanism(value, *, sensitivity, epsilon, accountant=None, rng=None, threads=None)

    Release ``value`` with Laplace noise of scale ``sensitivity / epsilon`` per coordinate.

    Parameters
    ----------
    value : int, float or array_like of them
        The true query answer(s). Integer data (Python ints, numpy integer arrays) gets
        discrete Laplace noise and an int64 result; floating data is rounded to the grid
        ``g = laplace_granularity(sensitivity/epsilon)`` and gets grid Laplace noise, so the
        result is a multiple of ``g`` whatever the input's low bits.
    sensitivity : float
        L1 sensitivity of the query (over all coordinates together), > 0.
    epsilon : float
        Privacy parameter, > 0; charged to the accountant before any noise is drawn.
    accountant : Accountant, optional
        Charged ``epsilon``; default :func:`dpfast.default_accountant`.
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases) draws from an OS-keyed generator. A seed
        makes the noise reproducible: two releases with the same seed carry the *same* noise,
        and their difference reveals the change in the data. Seeds are for tests only.
    threads : int, optional
        Threads for large inputs (default ``OMP_NUM_THREADS``); the output for a given
        generator state does not depend on it.

    Returns
    -------
    int, float or ndarray
        Same shape as ``value``; int64 for integer data, float64 otherwise.

    Raises
    ------
    TypeError
        If ``sensitivity`` or ``epsilon`` is not a real number (a bool included); ``value``
        is not numeric data (booleans, complex numbers, strings, objects, dates, a masked
        array); ``accountant`` is not an accountant; ``rng`` is not one of the accepted kinds;
        or ``threads`` is not an int. Raised before anything is charged or drawn.
    ValueError
        If ``sensitivity`` or ``epsilon`` is NaN, infinite or <= 0 (``-0.0`` included);
        ``sensitivity / epsilon`` is outside [2^-900, 2^1000] (2^40 for integer data);
        ``value`` is ragged, holds NaN or infinite entries or integers beyond int64, or an
        entry beyond ``2**62`` (integer data) or ``2**52 g`` (float data); ``threads`` is
        outside [1, 1024]; or ``rng`` is a negative seed. Raised before anything is charged
        or drawn; the message gives the position of a bad entry, never its value.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``; nothing is charged or drawn.

    Notes
    -----
    epsilon-differentially private up to the floating-point term of
    :func:`laplace_privacy_loss` (below 2.4e-7 for float data; for integer data it depends on
    the scale, e.g. 7e-12 at scale 1000). Float inputs must satisfy ``|value| <= 2**52 g`` so
    that grid arithmetic is exact.

    Examples
    --------
    A count released at epsilon = 0.5 (``rng=0`` makes the example reproducible: a seed is
    for tests only), then a release the remaining budget cannot afford:

    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> noisy = dp.laplace_mechanism(6460, sensitivity=1, epsilon=0.5, accountant=acct, rng=0)
    >>> isinstance(noisy, int), acct.spent
    (True, (0.5, 0.0))
    >>> print(noisy)
    6458
    >>> try:
    ...     dp.laplace_mechanism([3.5, 10.25], sensitivity=1, epsilon=0.8, accountant=acct)
    ... except dp.BudgetExceededError:
    ...     print("refused; spent:", acct.spent)
    refused; spent: (0.5, 0.0)
    """
    func = "laplace_mechanism"
    d = _v.check_sensitivity(sensitivity, func)
    eps = _v.check_epsilon(epsilon, func)
    # One Python number: the kernel and streams of a one-element array, without arrays.
    if type(value) is int and abs(value) <= _MAX_INT_VALUE:
        kernel, params = laplace_scalar_kernel(
            _v.check_mechanism_scale(d, eps, func, high=MAX_DISCRETE_SCALE), True)
        return release(func, accountant, eps, 0.0, rng, threads, 1, kernel, *params, value)
    if type(value) is float:
        noise = laplace(_v.check_mechanism_scale(d, eps, func), False)
        if abs(value) <= 2.0**52 * noise.g:         # False for NaN and infinities
            kernel, params = laplace_scalar_kernel(noise.scale, False)
            return release(func, accountant, eps, 0.0, rng, threads, 1, kernel, *params,
                           value)
    data, is_int = _v.check_data(value, "value", func)
    out: NDArray[np.int64] | NDArray[np.float64]
    if is_int:
        noise = Laplace(_v.check_mechanism_scale(d, eps, func, high=MAX_DISCRETE_SCALE), True)
        _check_magnitude(data, _MAX_INT_VALUE, "2**62", func)
        out = np.empty(data.shape, dtype=np.int64)
        release(func, accountant, eps, 0.0, rng, threads, out.size, noise.fill, out, data)
    else:
        # Each coordinate is rounded to the grid, and the l1 sensitivity may be spread over
        # all of them: the grid keeps their rounding within ROUNDING_SHARE of it.
        noise = real_laplace(_v.check_mechanism_scale(d, eps, func), d, data.size)
        limit = 2.0**52 * noise.g
        _check_magnitude(data, limit, f"{limit:g} (2**52 grid steps at scale {d / eps:g}, "
                         "for exact grid arithmetic)", func)
        out = np.empty(data.shape, dtype=np.float64)
        release(func, accountant, eps, 0.0, rng, threads, out.size, noise.fill, out, data)
    return out if out.ndim else out.item()


def _check_magnitude(data: "NDArray[Any]", limit: float, limit_text: str, func: str) -> None:
    """ValueError naming the position of the first entry with |entry| > limit (min/max, so
    that int64's most negative value, whose abs overflows, is caught too)."""
    if not data.size:
        return
    lo, hi = _v.value_range(data)
    if lo < -limit or hi > limit:
        # The limit is public (it follows from the scale); the entry beyond it is not.
        where = _v.entry_at((data < -limit) | (data > limit), "is beyond it")
        raise ValueError(f"The 'value' parameter of {func} must have |value| <= {limit_text}. "
                         f"Got {where} instead.")


def laplace_privacy_loss(scale: float, sensitivity: float, *, discrete: bool = False,
                         cells: int = 1) -> float:
    """laplace_privacy_loss(scale, sensitivity, *, discrete=False, cells=1)

    Certified privacy loss epsilon' of adding dpfast's Laplace noise of ``scale`` to a query
    of L1 ``sensitivity``, including grid rounding and floating-point error.

    For the grid mechanism (``discrete=False``) on ``cells`` real coordinates that a
    neighbour may change (each rounded to the grid ``g`` the release uses,
    :func:`dpfast.noise.real_laplace`: round-half-to-even puts a change of ``D_i`` at most
    ``floor(D_i/g) + 1`` steps apart): ``(floor(D/g) + cells) g/b + eta(b/g)``; for integer
    queries with discrete noise: ``floor(D)/b + eta(b)``; ``eta`` as in the module
    documentation. (The grid keeps the rounding within 2**-12 of D; a release is charged
    its nominal epsilon ``D/b``.)

    Parameters
    ----------
    scale : float
        The Laplace scale ``b`` of the noise, in [2^-900, 2^1000] (2^40 with ``discrete``).
    sensitivity : float
        The query's L1 sensitivity ``D``, > 0.
    discrete : bool, optional
        ``True`` for an integer query with discrete Laplace noise; ``False`` (default) for
        the grid mechanism on real data.
    cells : int, optional
        The number of real coordinates a neighbour may change, in [1, 2**62] (each adds
        one grid step of rounding); not used with ``discrete``.

    Returns
    -------
    float
        The certified epsilon', at least the nominal ``D/b`` up to the grid's rounding.

    Raises
    ------
    TypeError
        If ``scale`` or ``sensitivity`` is not a real number, ``discrete`` is not a bool, or
        ``cells`` is not an int (bools included).
    ValueError
        If ``sensitivity`` is NaN, infinite or <= 0; ``scale`` is NaN, infinite or outside
        its range; ``cells`` is outside [1, 2**62]; or the loss is beyond the largest float.

    Examples
    --------
    >>> import dpfast as dp
    >>> eps_prime = dp.laplace_privacy_loss(10.0, 1.0)
    >>> 0.1 < eps_prime < 0.1 + 2.4e-7
    True
    >>> print(f"{dp.laplace_privacy_loss(1000.0, 1.0, discrete=True):.12f}")
    0.001000000007
    """
    func = "laplace_privacy_loss"
    d = _v.check_sensitivity(sensitivity, func)
    if _v.check_bool(discrete, "discrete", func):
        t = _v.check_scale(scale, func, high=MAX_DISCRETE_SCALE)
        return math.floor(d) / t + eta(t)
    b = _v.check_scale(scale, func)
    n = _v.check_positive_int(cells, "cells", func)
    grid = real_laplace(b, d, n)
    g, t = grid.g, grid.t
    # Round-half-to-even can put inputs D_i apart floor(D_i/g) + 1 steps apart: in all at
    # most floor(D/g) + cells; D/g in exact arithmetic (g is a power of two), since it can
    # exceed the largest float.
    steps = math.floor(Fraction(d) / Fraction(g)) + n
    try:
        loss = float(Fraction(steps) / Fraction(t))
    except OverflowError:
        raise ValueError(f"The 'sensitivity' and 'scale' parameters of {func} give a privacy "
                         f"loss beyond the largest float. Got sensitivity={sensitivity!r}, "
                         f"scale={scale!r} instead.") from None
    return loss + eta(t)


def max_error_bound(k: SupportsIndex, *, epsilon: float, sensitivity: float = 1.0,
                    beta: float = 0.05, discrete: bool = True) -> float | int:
    """max_error_bound(k, *, epsilon, sensitivity=1.0, beta=0.05, discrete=True)

    A bound that the largest error over ``k`` released cells stays within, with probability
    at least ``1 - beta``.

    Parameters
    ----------
    k : int
        Number of cells (coordinates) released, >= 1.
    epsilon : float
        Privacy parameter of the release, > 0.
    sensitivity : float, optional
        L1 sensitivity of the released vector (1 for a histogram).
    beta : float, optional
        Failure probability, in (0, 1).
    discrete : bool, optional
        ``True`` (default) for integer releases with discrete Laplace noise of scale
        ``sensitivity/epsilon``: the bound is the exact quantile, the smallest integer ``j``
        with ``P[max_i |K_i| > j] <= beta``. ``False`` for continuous Laplace noise: the
        bound ``ln(k/beta) * sensitivity / epsilon`` of Dwork & Roth, Theorem 3.8.

    Returns
    -------
    float or int
        The bound: an int with ``discrete``, a float otherwise.

    Raises
    ------
    TypeError
        If ``k`` is not an int (a bool included), ``epsilon``, ``sensitivity`` or ``beta``
        is not a real number, or ``discrete`` is not a bool.
    ValueError
        If ``k`` < 1; ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0; or ``beta``
        is not in (0, 1).

    Notes
    -----
    Cells get independent noise, so ``P[max |K_i| > j] = 1 - (1 - P[|K| > j])**k``, and for
    discrete Laplace with ``a = exp(-epsilon/sensitivity)``, ``P[|K| > j] = 2 a**(j+1)/(1+a)``.
    The bound describes the noise only: post-processing (clipping, consistency) changes it.

    Examples
    --------
    >>> import dpfast as dp
    >>> dp.max_error_bound(10_000, epsilon=1.0)
    12
    >>> round(dp.max_error_bound(10_000, epsilon=1.0, discrete=False), 3)
    12.206
    """
    func = "max_error_bound"
    if isinstance(k, bool) or not isinstance(k, int) and not hasattr(k, "__index__"):
        raise TypeError(f"The 'k' parameter of {func} must be an int >= 1. Got {k!r} instead.")
    k = int(k)
    if k < 1:
        raise ValueError(f"The 'k' parameter of {func} must be an int >= 1. Got {k!r} instead.")
    eps = _v.check_epsilon(epsilon, func)
    d = _v.check_sensitivity(sensitivity, func)
    b = _v.check_real(beta, "beta", func, low=0.0, high=1.0)
    if not _v.check_bool(discrete, "discrete", func):
        return math.log(k / b) * d / eps
    # Per-cell tail probability that keeps the maximum within the bound w.p. 1 - beta.
    q = -math.expm1(math.log1p(-b) / k)
    log_a = -eps / d
    a = math.exp(log_a)
    # Smallest j with 2 a^(j+1) / (1 + a) <= q.
    j = math.ceil((math.log(q) + math.log1p(a) - math.log(2.0)) / log_a) - 1
    j = max(j, 0)
    # Guard the ceil against rounding in the logarithms.
    tail: Callable[[int], float] = lambda m: 2.0 * math.exp(log_a * (m + 1)) / (1.0 + a)
    while j > 0 and tail(j - 1) <= q:
        j -= 1
    while tail(j) > q:
        j += 1
    return j
