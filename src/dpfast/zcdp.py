"""Zero-concentrated differential privacy (rho-zCDP) and its conversions to (epsilon, delta)-DP.

A mechanism is rho-zCDP (Bun & Steinke 2016) when its Renyi divergence of every order
``alpha > 1`` between neighbouring inputs is at most ``rho * alpha``. Costs in rho add under
composition, which is why releases are accounted in rho and converted to (epsilon, delta)
only when a guarantee in that form is wanted.

- :func:`rho_from_epsilon`: pure epsilon-DP implies ``epsilon**2 / 2``-zCDP.
- :func:`rho_gaussian`: Gaussian noise of ``sigma`` on l2 sensitivity ``D`` costs
  ``D**2 / (2 sigma**2)``, the continuous and the discrete Gaussian alike.
- :func:`epsilon_from_rho`, :func:`delta_from_rho`: the tight conversion of Canonne, Kamath &
  Steinke (2020), Proposition 12 applied to every order of a zCDP guarantee (their
  Corollary 13).
- :func:`rho_from_epsilon_delta`: the largest rho whose conversion at ``delta`` stays within
  ``epsilon``.
- :func:`discrete_gaussian_delta`: the exact delta (an upper bound, tight to rounding) of one
  release of discrete Gaussian noise on integer data whose neighbours differ by 1 in ``k``
  cells, from the exact distribution of its privacy loss.
- :func:`gaussian_sigma`: the analytic Gaussian calibration of continuous Gaussian noise
  (Balle & Wang 2018; ``dpfast.gaussian_sigma``).
- :func:`gaussian_sigma_for`: the smallest sigma of one Gaussian release under an
  (epsilon, delta) budget, continuous or discrete.

**Every figure errs on the safe side.** A cost (rho) is rounded up, never down; a converted
epsilon or delta is the bound at one order alpha (any order gives a valid guarantee), plus a
bound on the floating-point error of evaluating it, so it is never below the exact infimum
over alpha; a rho allowed by (epsilon, delta) is one whose computed epsilon is checked to be
within the budget.

**How the infimum is found.** Write ``t = alpha - 1 > 0`` and ``L = log(1/delta)``. The
epsilon of order alpha is ``f(t) = rho (1 + t) + (L - log(1 + t)) / t - log(1 + 1/t)`` and its
derivative is ``f'(t) = rho - (L - log(1 + t)) / t**2``: negative, then positive, crossing
zero once, where ``rho t**2 + log(1 + t) = L`` (the left side increases with t). So the
minimiser is the root of a monotone function, found by bisection on ``log t`` to the last
bit (no step size, no tolerance, no local minimum to get stuck in), between bounds that hold
for every rho and delta. Likewise for delta at a given epsilon: ``log delta(t) = t (rho (1 +
t) - epsilon - log(1 + 1/t)) - log(1 + t)`` is convex in t, with the increasing derivative
``rho (1 + 2 t) - epsilon - log(1 + 1/t)``. Bisection on ``log t`` keeps the search finite
where the optimum is near ``alpha = 1`` (huge rho, delta near 1) or far out (tiny rho).
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction
import sys
from typing import TYPE_CHECKING, Literal

import numpy as np

from . import validation as _v

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["rho_from_epsilon", "rho_gaussian", "epsilon_from_rho", "delta_from_rho",
           "rho_from_epsilon_delta", "discrete_gaussian_delta", "gaussian_sigma",
           "gaussian_sigma_for"]

# Unit roundoff of float64, and how many units an evaluated term may be off by: each term
# takes at most a few correctly or faithfully rounded operations (libm's log, log1p, exp
# are within 1 ulp), so 16 units leaves room to spare.
_U = 2.0**-53
_ERR_UNITS = 16.0


def _round_up(exact: Fraction) -> float:
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
    return _round_up(Fraction(eps) ** 2 / 2)


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
    return _round_up(Fraction(d) ** 2 / (2 * Fraction(s) ** 2))


def _check_rho(rho: object, func: str) -> float:
    """rho: a finite float >= 0 (0 is the cost of releasing nothing)."""
    return _v.check_real(rho, "rho", func, low=0.0, low_open=False)


def _check_open_delta(delta: object, func: str) -> float:
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
    k = _ERR_UNITS * _U                       # summed term by term: no overflow near 1e308
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
    d = _check_open_delta(delta, func)
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
    k = _ERR_UNITS * _U
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
    d = _check_open_delta(delta, func)
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


# ---------------------------------------------------------------------------------------------
# One Gaussian release under an (epsilon, delta) budget
# ---------------------------------------------------------------------------------------------

# Truncation: every tail left out of the exact computation has mass at most e**-_TAIL_LOG
# (about 1e-26), which is added to the result.
_TAIL_LOG = 60.0
# The largest FFT (in points) of the exact computation, reached at sigma sqrt(k) of about
# 4e4 (2.3 T sigma sqrt(k) points, T about 11 to 12); beyond it the zCDP bound is used.
_MAX_FFT = 2**20
# The error of numpy's FFT (pocketfft, radix 4 and 2 passes on powers of two, accurately
# computed twiddle factors) is bounded by Higham's bound for the radix-2 Cooley-Tukey FFT (Accuracy
# and Stability of Numerical Algorithms, 2nd ed., Theorem 24.2): ||fl(F x) - F x||_2 <=
# log2(N) eta / (1 - log2(N) eta) ||F x||_2, eta = mu + gamma_4 (sqrt(2) + mu), mu the error of
# a twiddle factor (taken as 2u). It is multiplied by _FFT_SAFETY to cover the differences of
# pocketfft's passes from the textbook algorithm; the measured errors are far below it.
_FFT_SAFETY = 4.0
# Values of the k-th power of the spectrum below this are flushed to 0 (their error counted).
_TINY = 1e-250
_MIN_NORMAL = 2.0**-1022


def _fft_error(n: int) -> float:
    """Bound on ``||fl(F x) - F x||_2 / ||F x||_2`` for an FFT of ``n = 2**t`` points
    (forward, or inverse with its exact scaling by 1/n). The FFTs are of real data (numpy's
    rfft and irfft: a complex FFT of n/2 points and one more butterfly pass), so two more
    passes are counted than the t of a complex FFT."""
    t = float(n.bit_length() + 1)
    gamma4 = 4.0 * _U / (1.0 - 4.0 * _U)
    eta = 2.0 * _U + gamma4 * (math.sqrt(2.0) + 2.0 * _U)
    return _FFT_SAFETY * t * eta / (1.0 - t * eta)


def _norm(v: "np.ndarray") -> float:
    """The l2 norm of a real or complex vector, summed by numpy (pairwise) rather than BLAS,
    whose threads stall on a busy machine (a dot product of 3e4 entries: 24 ms here)."""
    return math.sqrt(float((v.real * v.real).sum() + (v.imag * v.imag).sum()))


def _next_up(x: float) -> float:
    return math.nextafter(x, math.inf)


def _subgaussian_tail(a: float, k: int, s2: float) -> float:
    """``P(S <= -a)`` for the sum S of k discrete Gaussians of parameter ``sqrt(s2)``, a > 0,
    bounded above: ``exp(-a**2 / (2 k s2))``. The discrete Gaussian is ``sigma**2``-
    subgaussian (Canonne, Kamath & Steinke 2020, Corollary 9), so S is ``k sigma**2``-
    subgaussian and Chernoff's bound applies."""
    return min(1.0, _next_up(math.exp(-(a * a) / (2.0 * k * s2) * (1.0 - 8.0 * _U))))


def _log_normaliser_lower(sigma: float, terms: float) -> float:
    """A lower bound on ``log C``, ``C = sum over integers z of exp(-z**2 / (2 sigma**2))``.

    Poisson summation gives ``C = sqrt(2 pi) sigma (1 + 2 sum_{n >= 1} exp(-2 pi**2 sigma**2
    n**2))`` >= ``sqrt(2 pi) sigma`` (tight to 6e-35 relative from sigma = 2); any partial sum
    (``terms``, computed) is a lower bound too (better for small sigma)."""
    poisson = math.log(math.sqrt(2.0 * math.pi)) + math.log(sigma)
    partial = math.log(terms) if terms > 0.0 else -math.inf
    return max(poisson, partial) - 64.0 * _U * (1.0 + abs(poisson))


@functools.lru_cache(maxsize=4096)
def _discrete_gaussian_delta(sigma: float, k: int, eps: float) -> float:
    """discrete_gaussian_delta on checked arguments (see there for the method)."""
    s2 = sigma * sigma
    sd = sigma * math.sqrt(k)
    rho_exact = Fraction(k) / (2 * Fraction(sigma) ** 2)
    zcdp = delta_from_rho(_round_up(rho_exact), eps)    # rigorous for every sigma and k
    s_star = 0.5 * k - eps * s2                         # S < s_star  <=>  loss > eps
    big_t = math.sqrt(2.0 * (math.log(2.0 * k) + _TAIL_LOG))
    if s_star < -big_t * sd:
        # The loss exceeds eps only beyond T standard deviations of S: delta <= P(S < s*),
        # below e**-_TAIL_LOG; no need to resolve it.
        return min(zcdp, _subgaussian_tail(-s_star * (1.0 - 1e-12), k, s2))
    # The sum runs over s in [base, base + n): below base S has mass <= e**-_TAIL_LOG (added),
    # and the tilted distribution of S (centred near s*) has that little mass above top,
    # which is all that can wrap around into the region s < s*.
    base = math.floor(-big_t * sd)
    top = math.ceil(s_star + big_t * sd)

    # Exponential tilting: the FFT's error is absolute, about 1e-16 of its largest value, and
    # delta is a tail probability. Weighting z by e**(theta z) (theta = s*/(k sigma**2)) moves
    # the bulk of S's tilted distribution to s*, where the error is then relative; the weight
    # e**(-theta s) is undone exactly on each term afterwards. The tilted Z is a discrete
    # Gaussian shifted by theta sigma**2 = s*/k.
    theta = min(0.0, s_star / (k * s2))
    shift = theta * s2
    z_lo = math.floor(min(0.0, shift) - big_t * sigma)
    z_hi = math.ceil(max(0.0, shift) + big_t * sigma)
    # (One cell, k = 1, needs no convolution: the window is the distribution of S.)
    n = 1 << max(4, max(top - base, z_hi - z_lo + 1 if k > 1 else 0).bit_length())
    if n > _MAX_FFT:
        return zcdp
    z = np.arange(z_lo, z_hi + 1, dtype=np.float64)
    a = -(z * z) / (2.0 * s2) + theta * z
    a_max = float(a.max())
    e = np.exp(a - a_max)
    e_sum = float(e.sum())
    x = e / e_sum
    # x(z) = exp(-z**2/(2 sigma**2) + theta z - a_max - log(e_sum)) (1 + beta_z): |beta_z| <=
    # the rounding of the exponent (a few ulp of each of its terms, largest at an end of the
    # window) plus exp's and the division's.
    z_far = max(-z_lo, z_hi)
    beta = 8.0 * _U * (z_far * z_far / (2.0 * s2) + abs(theta) * z_far + abs(a_max)) + 4.0 * _U
    # P(Z = z) = x(z) lam e**(-theta z) on the window, lam = e**(a_max) e_sum / C <= lam_up.
    # (A partial sum of C only helps where Poisson's bound is loose: sigma < 4.)
    terms = 0.0
    if sigma < 4.0:
        terms = float(np.exp(-(z * z) / (2.0 * s2)).sum()) * (1.0 - 2.0 * (z.size + 4) * _U)
    log_c = _log_normaliser_lower(sigma, terms)
    log_lam = a_max + math.log(e_sum) - log_c
    log_lam_err = 8.0 * _U * (abs(a_max) + abs(math.log(e_sum)) + abs(log_c) + 1.0)

    # The k-fold convolution of x on the circle of n points: x^{*k}(s) at index s mod n for s
    # in [base, base + n), plus what wraps around (non-negative: only raises the bound).
    # Only s < s* (+ rounding) carries weight: s in [base, s_end).
    s_end = min(base + n, math.floor(s_star) + 2)
    if k == 1:
        c = np.zeros(s_end - base, dtype=np.float64)
        lo, hi = max(base, z_lo), min(s_end - 1, z_hi)
        if lo <= hi:
            c[lo - base:hi - base + 1] = x[lo - z_lo:hi - z_lo + 1]
    else:
        buf = np.zeros(n, dtype=np.float64)
        buf[:z_hi + 1] = x[-z_lo:]                      # z >= 0 (z_lo < 0 < z_hi)
        buf[n + z_lo:] = x[:-z_lo]                      # z < 0
        spec = np.fft.rfft(buf)                         # half of a Hermitian spectrum
        # Entries whose k-th power is below 1e-250 are set to 0 (an error of at most 1e-250
        # each, counted below): subnormal numbers would make the products 100x slower.
        spec[np.abs(spec) < _TINY ** (1.0 / k)] = 0.0
        power = _complex_power(spec, k)
        conv = np.fft.irfft(power, n)
        c = np.concatenate((conv[n + base:], conv[:max(0, s_end)]))[:s_end - base]
        c = np.maximum(c, 0.0)
    s = np.arange(base, s_end, dtype=np.float64)

    # The weight of each s: P(S = s) = x^{*k}(s) lam**k e**(-theta s); the hockey-stick term
    # w(s) = 1 - e**(eps - loss(s)) = -expm1(xs), xs = eps - (k - 2 s)/(2 sigma**2), with
    # |xs computed - xs| <= xs_err and |d w / d xs| <= 1 where w > 0.
    xs = (2.0 * s - k) / (2.0 * s2) + eps
    xs_err = 8.0 * _U * (np.abs(2.0 * s - k) / (2.0 * s2) + eps)
    keep = xs < xs_err                                   # every s where the loss may exceed eps
    expo = k * log_lam - theta * s
    expo_err = k * log_lam_err + 8.0 * _U * (abs(k * log_lam) + np.abs(theta * s))
    # (The exponent is raised to at least -300, which only raises the bound, by at most
    # e**-300 per term: no subnormal weights, nor squares of weights.)
    with np.errstate(over="ignore"):        # entries np.where drops may overflow
        weight = np.where(keep, np.exp(np.maximum(expo + expo_err, -300.0)) * (1.0 + 4.0 * _U)
                          * (np.maximum(-np.expm1(xs), 0.0) + xs_err + 2.0 * _U), 0.0)
    main = float((weight * c).sum())

    fft_err = 0.0
    if k > 1:
        # FFT error: ||computed conv - exact circular conv||_2 <= err_c (forward FFT, the
        # k-th power and the inverse FFT, each bounded above), and sum |error| weight <=
        # err_c ||weight||_2 (Cauchy-Schwarz).
        fe = _fft_error(n)
        root_n = math.sqrt(n)
        e1 = fe * root_n * _norm(x) * (1.0 + 1e-12)   # ||fl(F x) - F x||_2
        m = float(x.sum()) * (1.0 + (z.size + 4) * _U) + e1            # >= |F x|, |fl(F x)|
        pow_err = 8.0 * k * _U                                     # relative, repeated squaring
        norm_power = math.sqrt(2.0) * _norm(power) * (1.0 + 1e-12)  # all n
        err_power = (pow_err * norm_power + k * m ** (k - 1) * e1     # ||power - (F x)**k||_2
                     + root_n * _TINY)
        err_c = ((fe * norm_power + err_power) / root_n) * (1.0 + 1e-12)
        fft_err = err_c * _norm(weight) * (1.0 + 1e-12)

    # Together: the window's relative error, the sums' rounding, and the tails left out
    # (some Z_i outside the window: <= k P(|Z| > T sigma) <= 2 k e**(-T**2/2); S below base).
    rel = (1.0 - beta) ** -k * (1.0 + 4.0 * (n + 8) * _U)
    tails = (2.0 * k * math.exp(-0.5 * big_t * big_t) * (1.0 + 1e-12)
             + _subgaussian_tail(-float(base), k, s2))
    bound = (main + fft_err) * rel + tails
    return min(1.0, zcdp, _next_up(bound * (1.0 + 4.0 * _U)))


def _complex_power(v: "np.ndarray", k: int) -> "np.ndarray":
    """``v**k`` elementwise by repeated squaring (at most 2 log2(k) complex products, each
    within ``sqrt(2) gamma_2`` relative: Higham, Lemma 3.5; so within ``8 k u`` relative in
    all)."""
    result = np.ones_like(v)
    base = v.copy()
    first = True
    while k:
        if k & 1:
            result = base.copy() if first else result * base
            first = False
        k >>= 1
        if k:
            base = base * base
    return result


def discrete_gaussian_delta(sigma: float, k: int, epsilon: float) -> float:
    """The delta at ``epsilon`` of discrete Gaussian noise on integer data, k cells changing.

    Parameters
    ----------
    sigma : float
        Parameter of the discrete Gaussian ``N_Z(0, sigma**2)`` added independently to every
        cell, finite and > 0.
    k : int
        How many cells a neighbouring dataset changes, each by +-1 (the l2 sensitivity is
        ``sqrt(k)``): 1 for a histogram, the number of tables for marginals, the height for
        a tree. An int in [1, 2**31].
    epsilon : float
        Target epsilon, finite and >= 0.

    Returns
    -------
    float
        An upper bound on the smallest delta for which the release is (epsilon, delta)-DP,
        never below the exact value and, up to sigma sqrt(k) of about 4e4, within about
        1e-10 relative of it (plus 1e-26 absolute): the exact sum below, computed from the
        exact distribution of S, with every truncated tail and a bound on every rounding
        error (including the FFT's) added. Beyond that size, and where it is smaller, the
        tight conversion of the release's zCDP cost ``k / (2 sigma**2)``
        (:func:`delta_from_rho`), which is rigorous for every sigma and a few percent looser
        in sigma.

    Raises
    ------
    TypeError
        If an argument is not a number of the right kind.
    ValueError
        If an argument is out of range.

    Notes
    -----
    **The privacy loss.** The release is ``y = x + Z``, ``Z_i`` iid with ``P(Z_i = z) =
    exp(-z**2 / (2 sigma**2)) / C``. A neighbour is ``x' = x + v`` with ``v_i`` in {-1, 0, 1},
    ``k`` of them non-zero. With ``z = y - x``, the privacy loss of ``y`` is ``L = log(P_x(y)
    / P_x'(y)) = sum_i ((z_i - v_i)**2 - z_i**2) / (2 sigma**2) = sum over v_i != 0 of (1 - 2
    v_i z_i) / (2 sigma**2)``. Under ``y ~ M(x)`` the ``z_i`` are iid and symmetric, so
    ``v_i z_i`` has the law of ``z_i`` for either sign: ``L = (k - 2 S) / (2 sigma**2)`` in
    law, ``S`` the sum of k iid ``N_Z(0, sigma**2)``, the same for every sign pattern. The
    other direction (``y ~ M(x')``, loss ``log(P_x' / P_x)``) gives ``sum (1 + 2 v_i z'_i) /
    (2 sigma**2)`` with ``z' = y - x'``: the same law again, so one computation covers both.
    A neighbour changing fewer cells is dominated: its pair of output distributions is a
    marginal (a post-processing) of a pair with k cells.

    **Delta.** The release is (epsilon, delta)-DP exactly when ``delta`` is at least the
    hockey-stick divergence ``sum_y (P_x(y) - e**eps P_x'(y))_+ = E[(1 - e**(eps - L))_+]``
    (the expectation under ``M(x)``). ``L > eps`` exactly when ``S < s* = k/2 - eps
    sigma**2``, so ``delta = sum over s < s* of P(S = s) (1 - exp(eps - (k - 2 s) / (2
    sigma**2)))``.

    **Computation.** The distribution of S is the k-fold convolution of the discrete
    Gaussian's probabilities, computed with one FFT, a k-th power by repeated squaring and
    an inverse FFT, exponentially tilted so that the region s < s* is where the tilted
    distribution is concentrated (the FFT's error is absolute: without the tilt it would
    swamp a delta of 1e-10). Every step is bounded: the discrete Gaussian is truncated to
    ``T`` sigma on each side (``2 k e**(-T**2/2) <= e**-60`` added) and S to the circle of
    the FFT (what wraps around only adds; the lower tail of S beyond the circle is bounded
    by subgaussianity, CKS 2020 Corollary 9, and added); its normalising constant is
    bounded below by Poisson summation; the rounding of every exponent, the FFT's error
    (Higham's bound for the FFT, with a safety factor of 4), the power's and the sums' are
    added. Measured on a busy 2-core machine: 0.2 ms at sigma sqrt(k) = 150 (Adult's 28
    tables), 2 ms at 1600, 20 to 90 ms at 1e4 (FFTs of 2**18 points); results are cached.

    References
    ----------
    C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020. https://arxiv.org/abs/2004.00010

    Examples
    --------
    >>> from dpfast.zcdp import discrete_gaussian_delta, delta_from_rho
    >>> d = discrete_gaussian_delta(29.1, 28, 1.0)
    >>> f"{d:.3e}"
    '...e-10'
    >>> d < delta_from_rho(28 / (2 * 29.1**2), 1.0)
    True
    """
    func = "discrete_gaussian_delta"
    sig = _v.check_real(sigma, "sigma", func)
    cells = _v.check_positive_int(k, "k", func, high=2**31)
    eps = _v.check_real(epsilon, "epsilon", func, low=0.0, low_open=False)
    return _discrete_gaussian_delta(sig, cells, eps)


def _zcdp_sigma(l2: float, eps: float, dlt: float) -> float:
    """The zCDP route: ``l2 / sqrt(2 rho)``, rho the largest within (eps, dlt), rounded up so
    that its cost ``l2**2 / (2 sigma**2)`` is at most rho."""
    rho = rho_from_epsilon_delta(eps, dlt)
    sigma = l2 / math.sqrt(2.0 * rho)
    while Fraction(l2) ** 2 / (2 * Fraction(sigma) ** 2) > Fraction(rho):
        sigma = _next_up(sigma)
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



@functools.lru_cache(maxsize=1024)
def _gaussian_sigma_for(l2: float, eps: float, dlt: float, integer: bool,
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
    sigma = _smallest_sigma(lambda s: _discrete_gaussian_delta(s, k, eps) <= dlt, guess, route)
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
          delta (:func:`discrete_gaussian_delta`) is at most ``delta``, or the zCDP route's
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
    compose through zCDP instead (:func:`rho_gaussian`). Results are cached: releases call
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
    l2f = _v.check_real(l2, "l2", func, low=_MIN_NORMAL, low_open=False, high=1e150,
                        high_open=False)
    eps = _v.check_epsilon(epsilon, func)
    dlt = _check_open_delta(delta, func)
    flag = _v.check_bool(integer, "integer", func)
    unit = _v.check_bool(unit_changes, "unit_changes", func)
    if flag and not unit:
        return _gaussian_sigma_for(l2f, eps, dlt, True, False)
    return _gaussian_sigma_for(l2f, eps, dlt, flag, True)
