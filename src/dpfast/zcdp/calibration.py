"""Calibration of Gaussian noise to an (epsilon, delta) budget: the analytic Gaussian of
Balle & Wang (2018) for continuous noise, and for discrete noise the smallest sigma whose
exact delta is within the budget, or the zCDP route."""
from __future__ import annotations

import functools
import math
import sys
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from .. import validation as _v
from .conversions import check_open_delta, rho_from_epsilon_delta
from .discrete import MIN_NORMAL, discrete_gaussian_delta_unchecked, next_up

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["gaussian_sigma", "gaussian_sigma_for", "calibrated_sigma",
           "gaussian_sigma_for_checked"]


def _zcdp_sigma(l2: float, eps: float, dlt: float) -> float:
    """The zCDP route: ``l2 / sqrt(2 rho)``, rho the largest within (eps, dlt), rounded up so
    that its cost ``l2**2 / (2 sigma**2)`` is at most rho."""
    rho = rho_from_epsilon_delta(eps, dlt)
    sigma = l2 / math.sqrt(2.0 * rho)
    while Fraction(l2) ** 2 / (2 * Fraction(sigma) ** 2) > Fraction(rho):
        sigma = next_up(sigma)
    return sigma


def _smallest_sigma(holds: Callable[[float], bool], guess: float, valid: float) -> float:
    """The smallest sigma (to a relative 1e-6, from above) where ``holds`` does, given a
    ``guess`` near it and a ``valid`` sigma (where it holds) that caps the result: brackets
    of relative width 1e-4, then 1e-2, around the guess, widened until they fail below and
    hold above, then bisection. Every sigma returned has been checked."""
    hi = valid
    for step in (1e-4, 1e-2):
        if guess * (1.0 + step) < hi and holds(guess * (1.0 + step)):
            hi = guess * (1.0 + step)
            break
    lo = min(guess * (1.0 - 1e-4), hi)
    step = 1e-4
    while holds(lo):
        hi = lo
        step = min(0.5, step * 100.0)
        lo = lo * (1.0 - step)
    while hi - lo > 1e-6 * hi:
        mid = math.sqrt(lo * hi)
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


# -- the analytic Gaussian (Balle & Wang 2018): one release of continuous Gaussian noise --

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
    terms can be close, so the bound is absolute."""
    a = 0.5 / s
    b = eps * s
    t1 = _phi(a - b)
    t2 = math.exp(eps) * _phi(-a - b)
    arg = 2.0**-52 * (a + b)
    err = t1 * (_TERM_ERROR + (abs(a - b) + 1.0) * arg) + \
        t2 * (_TERM_ERROR + (a + b + 1.0) * arg)
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
        In (0, 700); the classic calibration needs epsilon < 1.
    delta : float
        In (0, 1).
    calibration : {"analytic", "classic"}, keyword-only
        Balle & Wang's exact condition (default), or Dwork & Roth's closed form
        ``sqrt(2 ln(1.25 / delta)) * sensitivity / epsilon``.

    Returns
    -------
    float
        ``sensitivity`` times the sigma for sensitivity 1 (rounded up), so exactly linear in
        the sensitivity. Nothing is charged: this only computes sigma.

    Raises
    ------
    TypeError
        ``sensitivity``, ``epsilon`` or ``delta`` is not a real number (a bool included).
    ValueError
        ``sensitivity`` is not a normal float > 0 (NaN, infinite, 0, negative or below
        2.2e-308); ``epsilon`` is outside (0, 700) or ``delta`` outside (0, 1) (NaN
        included); ``calibration`` is neither ``"analytic"`` nor ``"classic"`` (of any
        type); the classic calibration with ``epsilon`` >= 1; an ``epsilon`` and ``delta``
        too small together for the analytic calibration to be computed exactly in double
        precision; or a sigma beyond the range of normal floats.

    Examples
    --------
    >>> import dpfast as dp
    >>> round(dp.gaussian_sigma(1.0, 0.5, 1e-5), 4)                  # analytic
    7.0318
    >>> round(dp.gaussian_sigma(1.0, 0.5, 1e-5, calibration="classic"), 4)
    9.6896
    >>> round(dp.gaussian_sigma(3.0, 0.5, 1e-5) / dp.gaussian_sigma(1.0, 0.5, 1e-5), 12)
    3.0
    >>> dp.gaussian_sigma(1.0, 2.0, 1e-5, calibration="classic")
    Traceback (most recent call last):
    ...
    ValueError: The classic Gaussian calibration of gaussian_sigma needs epsilon < 1. ...
    """
    return calibrated_sigma(sensitivity, epsilon, delta, calibration, "gaussian_sigma")


def calibrated_sigma(sensitivity: float, epsilon: float, delta: float, calibration: str,
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


@functools.lru_cache(maxsize=1024)
def gaussian_sigma_for_checked(l2: float, eps: float, dlt: float, integer: bool,
                        unit: bool) -> float:
    """gaussian_sigma_for on checked arguments."""

    if not integer:
        try:
            return gaussian_sigma(l2, eps, dlt)
        except ValueError as exc:                       # its message names gaussian_sigma
            raise ValueError(
                f"The 'l2', 'epsilon' and 'delta' parameters of gaussian_sigma_for (l2={l2!r}, "
                f"epsilon={eps!r}, delta={dlt!r}) admit no analytic calibration: {exc}") from exc
    route = _zcdp_sigma(l2, eps, dlt)
    k = round(l2 * l2)
    if not unit or k < 1 or k > 2**31 or abs(l2 * l2 - k) > 1e-9 * k:
        return route
    # The exact computation for k cells changing by 1, at sensitivity sqrt(k) >= l2 (so never
    # less safe than the sensitivity given); the continuous calibration is the starting guess.
    try:
        guess = gaussian_sigma(math.sqrt(k), eps, dlt)
    except ValueError:                                  # out of its double-precision range
        guess = route
    sigma = _smallest_sigma(lambda s: discrete_gaussian_delta_unchecked(s, k, eps) <= dlt,
                            guess, route)
    return min(sigma, route)


def gaussian_sigma_for(l2: float, epsilon: float, delta: float, *, integer: bool,
                       unit_changes: bool = True) -> float:
    """The smallest sigma of one Gaussian release of l2 sensitivity ``l2`` under (epsilon, delta).

    Parameters
    ----------
    l2 : float
        l2 sensitivity of the released vector, in [2.2e-308, 1e150].
    epsilon : float
        Privacy parameter epsilon of the release, finite and > 0.
    delta : float
        Privacy parameter delta of the release, in (0, 1).
    integer : bool
        True for exact discrete Gaussian noise ``N_Z(0, sigma**2)`` on integer data (counts),
        False for continuous Gaussian noise.
    unit_changes : bool
        For ``integer=True``: True (the default) when a neighbour changes each cell by at
        most 1 (counts, where a record adds one to each of k cells), which the exact
        computation assumes; False for any other integer difference of l2 norm at most
        ``l2`` (a record adding up to 2 to one cell, say), which gets the zCDP route.

    Returns
    -------
    float
        The noise parameter sigma of every coordinate, never one that fails the budget:

        - ``integer=False``: the analytic Gaussian calibration (Balle & Wang 2018),
          :func:`dpfast.gaussian_sigma` with ``calibration="analytic"``.
        - ``integer=True``, ``unit_changes=True`` and ``l2**2`` an integer k (within 1e-9
          relative): neighbours differ by +-1 in at most k cells (counts: a histogram k = 1, k marginal tables, a
          tree of height k). The smallest sigma, to a relative 1e-6 from above, whose exact
          delta (:func:`~dpfast.zcdp.discrete_gaussian_delta`) is at most ``delta``, or the zCDP route's
          sigma if that is smaller.
        - ``integer=True`` otherwise (or ``unit_changes=False``): the zCDP route, ``l2 / sqrt(2 rho)`` with ``rho =
          rho_from_epsilon_delta(epsilon, delta)`` (the discrete Gaussian costs ``l2**2 / (2
          sigma**2)`` in zCDP exactly like the continuous one).

    Raises
    ------
    TypeError
        If an argument is not a number of the right kind, or ``integer`` is not a bool.
    ValueError
        If an argument is out of range, or (``integer=False``) the analytic calibration cannot
        be computed in double precision (tiny epsilon and delta together).

    Notes
    -----
    One release under an (epsilon, delta) budget takes the tightest sigma for that release:
    at sensitivity ``sqrt(28)``, epsilon 1, delta 1e-9 the analytic calibration gives 29.08
    and the discrete Gaussian about the same, against 30.58 through rho. Several releases
    compose through zCDP instead (:func:`~dpfast.zcdp.rho_gaussian`). Results are cached: releases call
    this repeatedly with the same arguments.

    For ``integer=True`` the exact computation assumes each coordinate of a neighbour's
    difference is -1, 0 or 1, as for counts where a record adds one to each of k cells. A
    release whose records change one cell by more than 1 (weighted counts, a sensitivity of
    2 in one cell) is not covered by it: the discrete Gaussian's delta depends on the shape
    of the difference, not only on its l2 norm (at sigma 14.06, epsilon 0.5, one cell
    changing by 2 has delta 1.0035e-5 where four cells changing by 1 have 1e-5). Pass
    ``unit_changes=False`` for those: the zCDP route holds for every shape.

    Examples
    --------
    >>> from dpfast.zcdp import gaussian_sigma_for
    >>> round(gaussian_sigma_for(28 ** 0.5, 1.0, 1e-9, integer=False), 2)
    29.08
    >>> 29.0 < gaussian_sigma_for(28 ** 0.5, 1.0, 1e-9, integer=True) < 29.2
    True
    """
    func = "gaussian_sigma_for"
    # A normal float (sigma is computed relative to it), not so large that sigma overflows.
    l2f = _v.check_real(l2, "l2", func, low=MIN_NORMAL, low_open=False, high=1e150,
                        high_open=False)
    eps = _v.check_epsilon(epsilon, func)
    dlt = check_open_delta(delta, func)
    flag = _v.check_bool(integer, "integer", func)
    unit = _v.check_bool(unit_changes, "unit_changes", func)
    if flag and not unit:
        return gaussian_sigma_for_checked(l2f, eps, dlt, True, False)
    return gaussian_sigma_for_checked(l2f, eps, dlt, flag, True)
