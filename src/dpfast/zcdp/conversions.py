"""Conversions between rho-zCDP and (epsilon, delta)-DP: the cost in rho of pure DP and of
Gaussian noise, the tight conversion of a rho to epsilon or delta, the largest rho an
(epsilon, delta) budget allows, and the rounding helpers every figure of
:mod:`dpfast.zcdp` errs on the safe side with."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

from .. import validation as _v

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["rho_from_epsilon", "rho_gaussian", "epsilon_from_rho", "delta_from_rho",
           "rho_from_epsilon_delta", "U", "round_up", "check_open_delta"]


# Unit roundoff of float64, and how many units an evaluated term may be off by: each term
# takes at most a few correctly or faithfully rounded operations (libm's log, log1p, exp
# are within 1 ulp), so 16 units leaves room to spare.
U = 2.0**-53
_ERR_UNITS = 16.0


def round_up(exact: Fraction) -> float:
    """The smallest float not below ``exact`` (>= 0), or infinity beyond the float range."""
    try:
        x = float(exact)                      # correctly rounded (to nearest)
    except OverflowError:
        return math.inf
    return x if Fraction(x) >= exact else math.nextafter(x, math.inf)


def _softplus(u: float) -> float:
    """``log(1 + e**u)`` without overflow or loss for large ``|u|``."""
    return max(u, 0.0) + math.log1p(math.exp(-abs(u)))


def _bisect(holds: Callable[[float], bool], lo: float, hi: float) -> float:
    """The smallest float ``u`` in ``(lo, hi]`` (to the last bit) where a predicate that
    fails below some point and holds above it holds, given ``lo`` below and ``hi`` above.
    Any ``u`` is a valid order: a bracket that misses the point only costs tightness."""
    while True:
        mid = lo + (hi - lo) / 2.0
        if mid <= lo or mid >= hi:
            return hi
        if holds(mid):
            hi = mid
        else:
            lo = mid


def rho_from_epsilon(epsilon: float) -> float:
    """The zCDP cost of a pure epsilon-DP mechanism: ``epsilon**2 / 2``.

    Parameters
    ----------
    epsilon : float
        Privacy parameter of the pure epsilon-DP mechanism, finite and > 0.

    Returns
    -------
    float
        ``rho = epsilon**2 / 2``, rounded up to the next float when inexact (a cost is never
        understated), infinity when it exceeds the float range.

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number.
    ValueError
        If ``epsilon`` is not finite and > 0.

    Notes
    -----
    Bun & Steinke (2016), Proposition 1.4: every epsilon-DP mechanism is
    ``epsilon**2 / 2``-zCDP. Through zCDP, k pure-DP releases compose to ``k epsilon**2 / 2``,
    which converts to far less than ``k epsilon`` for large k.

    References
    ----------
    M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions,
    and lower bounds", TCC 2016. https://arxiv.org/abs/1605.02065

    Examples
    --------
    >>> from dpfast.zcdp import rho_from_epsilon
    >>> rho_from_epsilon(1.0)
    0.5
    >>> rho_from_epsilon(0.1)
    0.005000000000000001
    """
    eps = _v.check_epsilon(epsilon, "rho_from_epsilon")
    return round_up(Fraction(eps) ** 2 / 2)


def rho_gaussian(sensitivity: float, sigma: float) -> float:
    """The zCDP cost of Gaussian noise: ``sensitivity**2 / (2 sigma**2)``.

    Parameters
    ----------
    sensitivity : float
        l2 sensitivity of the released vector, finite and > 0.
    sigma : float
        Standard deviation parameter of the noise added to each coordinate, finite and > 0.

    Returns
    -------
    float
        ``rho``, rounded up to the next float when inexact (never understated; never 0),
        infinity when it exceeds the float range.

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If an argument is not finite and > 0.

    Notes
    -----
    The Gaussian mechanism with noise ``N(0, sigma**2)`` per coordinate is
    ``D**2 / (2 sigma**2)``-zCDP (Bun & Steinke 2016, Proposition 1.6); the discrete Gaussian
    ``N_Z(0, sigma**2)`` on integer data of l2 sensitivity ``D`` has exactly the same cost
    (Canonne, Kamath & Steinke 2020, Theorem 14), although its (epsilon, delta) calibration
    differs slightly from the continuous one. ``sigma`` is the parameter of the discrete
    Gaussian, which is close to, not equal to, its standard deviation.

    References
    ----------
    C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020. https://arxiv.org/abs/2004.00010

    Examples
    --------
    >>> from dpfast.zcdp import rho_gaussian
    >>> rho_gaussian(1.0, 2.0)
    0.125
    >>> rho_gaussian(2.0 ** 0.5, 10.0)     # two tables of counts, sigma 10
    0.010000000000000002
    """
    func = "rho_gaussian"
    d = _v.check_sensitivity(sensitivity, func)
    s = _v.check_real(sigma, "sigma", func)
    return round_up(Fraction(d) ** 2 / (2 * Fraction(s) ** 2))


def _check_rho(rho: object, func: str) -> float:
    """rho: a finite float >= 0 (0 is the cost of releasing nothing)."""
    return _v.check_real(rho, "rho", func, low=0.0, low_open=False)


def check_open_delta(delta: object, func: str) -> float:
    """delta in (0, 1): at delta = 0 no rho > 0 has a finite epsilon."""
    return _v.check_real(delta, "delta", func, low=0.0, high=1.0)


def _epsilon_at(rho: float, big_l: float, u: float) -> float:
    """Epsilon of order ``alpha = 1 + e**u`` (CKS 2020, Proposition 12), plus a bound on its
    floating-point error: an upper bound on the exact value at that order.

    ``f = rho (1 + t) + (L - log(1 + t)) / t - log(1 + 1/t)``; ``L = log(1/delta)`` is a
    rounded logarithm too, and its error reaches f through ``L / t``."""
    t = math.exp(u)
    a = rho * (1.0 + t)
    lp = _softplus(u)                         # log(1 + t)
    b = (big_l - lp) / t
    c = _softplus(-u)                         # log(1 + 1/t)
    value = a + b - c
    k = _ERR_UNITS * U                       # summed term by term: no overflow near 1e308
    return value + (k * abs(a) + k * ((big_l + lp) / t) + k * abs(b) + k * c + k * abs(value))


def epsilon_from_rho(rho: float, delta: float) -> float:
    """The epsilon of (epsilon, delta)-DP implied by rho-zCDP: the tight conversion.

    Parameters
    ----------
    rho : float
        zCDP parameter, finite and >= 0.
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    float
        ``inf over alpha > 1 of rho alpha + (log(1/delta) + (alpha - 1) log(1 - 1/alpha)
        - log(alpha)) / (alpha - 1)``, at least 0, never below the exact infimum: the value
        at the numerically optimal alpha plus a bound on the rounding error of evaluating
        it (a few units in the last place). 0 for ``rho = 0``.

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If ``rho`` is negative or not finite, or ``delta`` is not in (0, 1).

    Notes
    -----
    Canonne, Kamath & Steinke (2020), Proposition 12: a mechanism with Renyi divergence at
    most ``tau`` at order alpha is (epsilon, delta)-DP for ``epsilon = tau + (log(1/delta) +
    (alpha - 1) log(1 - 1/alpha) - log(alpha)) / (alpha - 1)``; with ``tau = rho alpha`` for
    every alpha (rho-zCDP) the best alpha is taken (their Corollary 13). This is never larger
    than the classic ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016, Proposition
    1.3): 4.728 against 5.299 at rho = 0.5, delta = 1e-5. Google's ``dp_accounting``
    (``compute_epsilon`` of its RDP accountant, at the orders it is given) and OpenDP
    (``make_zCDP_to_approxDP``) use the same bound. Where the bound is negative (rho tiny
    against delta: the total variation distance is already below delta) the result is 0,
    which is safe: at epsilon = 0 the same proposition gives a delta no larger.
    The minimising alpha solves ``rho (alpha - 1)**2 + log(alpha) = log(1/delta)``, found by
    bisection (see the module notes).

    References
    ----------
    C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020. https://arxiv.org/abs/2004.00010

    Examples
    --------
    >>> from dpfast.zcdp import epsilon_from_rho
    >>> round(epsilon_from_rho(0.5, 1e-5), 6)
    4.728387
    >>> epsilon_from_rho(0.5, 1e-5) < 0.5 + 2 * (0.5 * 11.512925464970229) ** 0.5
    True
    >>> epsilon_from_rho(0.0, 1e-5)
    0.0
    """
    func = "epsilon_from_rho"
    r = _check_rho(rho, func)
    d = check_open_delta(delta, func)
    if r == 0.0:
        return 0.0                            # identical output distributions
    big_l = -math.log(d)                      # > 0; delta near 1 makes it tiny, not 0
    # The root t* of rho t**2 + log(1 + t) = L lies in [t_lo, t_hi]: at t_lo = min(L/2,
    # sqrt(L/(2 rho))) the left side is at most rho t**2 + t <= L; at t_hi = min(sqrt(L/rho),
    # e**L - 1) it is at least L. Bisection runs on u = log t, from below t_lo to above t_hi.
    log_l = math.log(big_l)
    log_rho = math.log(r)
    u_lo = min(log_l - math.log(2.0), 0.5 * (log_l - math.log(2.0) - log_rho)) - 1.0
    u_hi = min(0.5 * (log_l - log_rho), big_l if big_l > 1.0 else log_l + big_l) + 1.0

    def past_minimum(u: float) -> bool:       # f'(t) >= 0
        t = math.exp(u)
        return r * t * t + _softplus(u) >= big_l

    u = _bisect(past_minimum, u_lo, u_hi)
    return max(0.0, _epsilon_at(r, big_l, u))


def _log_delta_at(rho: float, eps: float, u: float) -> float:
    """log delta of order ``alpha = 1 + e**u`` at ``eps`` (CKS 2020, Proposition 12), plus a
    bound on its floating-point error: ``t (rho (1 + t) - eps - log(1 + 1/t)) - log(1 + t)``."""
    t = math.exp(u)
    c = _softplus(-u)                         # log(1 + 1/t)
    inner = rho * (1.0 + t) - eps - c
    lp = _softplus(u)                         # log(1 + t)
    value = t * inner - lp
    k = _ERR_UNITS * U
    return value + (k * (t * (rho * (1.0 + t))) + k * (t * (eps + c)) + k * lp + k * abs(value))


def delta_from_rho(rho: float, epsilon: float) -> float:
    """The delta of (epsilon, delta)-DP implied by rho-zCDP: the tight conversion.

    Parameters
    ----------
    rho : float
        zCDP parameter, finite and >= 0.
    epsilon : float
        Target epsilon, finite and >= 0.

    Returns
    -------
    float
        ``inf over alpha > 1 of exp((alpha - 1)(rho alpha - epsilon)) (1 - 1/alpha)**alpha /
        (alpha - 1)``, at most 1, never below the exact infimum (the value at the
        numerically optimal alpha, its logarithm raised by a bound on its rounding error).
        0 for ``rho = 0``.

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If ``rho`` or ``epsilon`` is negative or not finite.

    Notes
    -----
    The inverse of :func:`epsilon_from_rho` (the same bound, Canonne, Kamath & Steinke 2020,
    Proposition 12, solved for delta): ``delta_from_rho(rho, epsilon_from_rho(rho, d))`` is
    ``d`` up to rounding. The minimising alpha solves ``rho (2 alpha - 1) + log(1 - 1/alpha)
    = epsilon``.

    References
    ----------
    C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020. https://arxiv.org/abs/2004.00010

    Examples
    --------
    >>> from dpfast.zcdp import delta_from_rho
    >>> f"{delta_from_rho(0.5, 4.728387):.4e}"
    '1.0000e-05'
    >>> from dpfast.zcdp import epsilon_from_rho
    >>> delta_from_rho(0.5, epsilon_from_rho(0.5, 1e-5)) <= 1e-5
    True
    """
    func = "delta_from_rho"
    r = _check_rho(rho, func)
    eps = _v.check_real(epsilon, "epsilon", func, low=0.0, low_open=False)
    if r == 0.0:
        return 0.0
    # The derivative rho (1 + 2t) - eps - log(1 + 1/t) is <= 0 at t <= min(1, e**(eps - 3 rho))
    # (there log(1 + 1/t) >= log(1/t) >= 3 rho - eps >= rho (1 + 2t) - eps) and >= 0 at
    # t >= max(1, (eps + 1) / (2 rho)) (there log(1 + 1/t) <= log 2 < 1).
    # Below t = e**-700 the bound is 1 - t to within rounding, and above e**700 t overflows:
    # the bracket is clipped to orders that evaluate (any order gives a valid bound).
    u_lo = max(-700.0, min(0.0, eps - 3.0 * r) - 1.0)
    u_hi = min(700.0, max(0.0, math.log1p(eps) - math.log(2.0) - math.log(r)) + 1.0)

    def past_minimum(u: float) -> bool:
        t = math.exp(u)
        return r * (1.0 + 2.0 * t) - _softplus(-u) >= eps

    u = _bisect(past_minimum, u_lo, u_hi)
    log_delta = _log_delta_at(r, eps, u)
    return 1.0 if log_delta >= 0.0 else min(1.0, math.nextafter(math.exp(log_delta), math.inf))


def rho_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """The largest rho whose conversion at ``delta`` gives at most ``epsilon``.

    Parameters
    ----------
    epsilon : float
        Privacy parameter epsilon of the (epsilon, delta) budget, finite and > 0.
    delta : float
        Privacy parameter delta of the budget, in (0, 1).

    Returns
    -------
    float
        The largest float ``rho`` (to the last bit) with ``epsilon_from_rho(rho, delta) <=
        epsilon``: a rho-zCDP budget that is (epsilon, delta)-DP as computed here, so a rho
        budget from an (epsilon, delta) one never allows more than the (epsilon, delta) one.

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If ``epsilon`` is not finite and > 0, or ``delta`` is not in (0, 1).

    Notes
    -----
    ``epsilon_from_rho`` increases with rho, so bisection finds the boundary; every rho it
    returns has been converted and checked, so rounding cannot push it over the budget. The
    search starts from the classic bound: ``rho = (sqrt(L + epsilon) - sqrt(L))**2``, with
    ``L = log(1/delta)``, solves ``rho + 2 sqrt(rho L) = epsilon`` (computed as ``(epsilon /
    (sqrt(L + epsilon) + sqrt(L)))**2``, which does not cancel), and the tight conversion is
    never larger there.

    Examples
    --------
    >>> from dpfast.zcdp import epsilon_from_rho, rho_from_epsilon_delta
    >>> rho = rho_from_epsilon_delta(1.0, 1e-9)
    >>> round(rho, 6)
    0.014973
    >>> epsilon_from_rho(rho, 1e-9) <= 1.0 < epsilon_from_rho(rho * (1 + 1e-12), 1e-9)
    True
    """
    func = "rho_from_epsilon_delta"
    eps = _v.check_epsilon(epsilon, func)
    d = check_open_delta(delta, func)
    big_l = -math.log(d)
    classic = (eps / (math.sqrt(big_l + eps) + math.sqrt(big_l))) ** 2    # no cancellation
    lo = classic if epsilon_from_rho(classic, d) <= eps else 0.0
    hi = max(2.0 * lo, eps)
    while epsilon_from_rho(hi, d) <= eps:     # the conversion grows without bound in rho
        lo, hi = hi, 2.0 * hi
        if math.isinf(hi):
            return lo
    # Invariant: epsilon_from_rho(lo) <= eps < epsilon_from_rho(hi).
    while True:
        mid = lo + (hi - lo) / 2.0
        if mid <= lo or mid >= hi:
            return lo
        if epsilon_from_rho(mid, d) <= eps:
            lo = mid
        else:
            hi = mid
