"""A release's privacy keywords to its noise and what it costs (:func:`measure`).

``noise=``, ``epsilon=``, ``delta=`` and ``rho=`` give a noise object and the (epsilon, delta)
and rho to charge (:class:`Measure`), never understated however the accountant reads them.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

from .. import validation as _v
from .. import zcdp
from ..zcdp import rho_gaussian
from .families import Gaussian, Laplace, laplace, real_laplace
from .grids import real_gaussian_grid


#: The values of a counting release's ``noise=`` keyword.
NOISES = ("laplace", "gaussian")


class Measure(NamedTuple):
    """A release's noise and what it costs: the noise object, and the (``epsilon``,
    ``delta``) and ``rho`` to charge (:class:`dpfast._release.Release` takes them as they
    are). ``epsilon`` is None for a release given in rho alone; ``rho`` is None for Laplace
    noise (a zCDP accountant charges its ``epsilon**2 / 2`` exactly)."""

    noise: Laplace | Gaussian
    epsilon: float | None
    delta: float
    rho: float | None


def _decimal(x: float) -> Fraction:
    """A float as the decimal it prints as: how an accountant reads a charge."""
    return Fraction(repr(x))


def gaussian_sigma_for(l2: float, epsilon: float, delta: float, integer: bool,
                       unit_changes: bool = True) -> float:
    """The sigma of one Gaussian release over l2 sensitivity ``l2`` at (epsilon, delta):
    :func:`dpfast.zcdp.gaussian_sigma_for`, the tightest calibration for that release (the
    analytic Gaussian for real noise; for integers the exact privacy of the discrete
    Gaussian when a record changes ``l2**2`` cells by at most 1 each, ``unit_changes``,
    else the tight zCDP conversion, valid for any change)."""
    return float(zcdp.gaussian_sigma_for(l2, epsilon, delta, integer=integer,
                                         unit_changes=unit_changes))


def _sigma_for_rho(l2: float, rho: float) -> float:
    """The least float sigma with ``l2**2 / (2 sigma**2)`` at most ``rho`` read as the
    decimal it prints as (what an accountant charges), so that charging ``rho`` pays for
    that sigma exactly or more."""
    target = _decimal(rho)
    sigma = l2 / math.sqrt(2.0 * rho)
    while Fraction(l2) ** 2 / (2 * Fraction(sigma) ** 2) > target:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def _charged_rho(l2: float, sigma: float) -> float:
    """A float whose decimal is at least ``l2**2 / (2 sigma**2)``: the rho to charge for
    Gaussian noise of ``sigma`` (never understated, however the accountant reads it)."""
    rho = rho_gaussian(l2, sigma)
    while _decimal(rho) < Fraction(l2) ** 2 / (2 * Fraction(sigma) ** 2):
        rho = math.nextafter(rho, math.inf)
    return rho


def _l2_up(l2: float) -> float:
    """``l2``, or the least float above it whose square reaches the whole number ``l2**2``
    rounds to: a sensitivity ``sqrt(k)`` computed in floats may round below the truth, and
    the cost would then be understated by an ulp."""
    k = round(l2 * l2)
    if k > 0 and abs(l2 * l2 - k) <= 1e-9 * k:
        while Fraction(l2) ** 2 < k:
            l2 = math.nextafter(l2, math.inf)
    return l2


def measure(func: str, noise: object, epsilon: object, delta: object, rho: object, *,
            l1: float, l2: float, integer: bool, zcdp_accountant: bool = False,
            cells: int = 1) -> Measure:
    """The noise of a counting release and its cost, from the release's privacy keywords.

    Parameters
    ----------
    func : str
        The release's name, for messages.
    noise : {"laplace", "gaussian"}
        The ``noise=`` keyword.
    epsilon, delta, rho : object
        The release's ``epsilon=``, ``delta=`` and ``rho=`` keywords (None when not given).
        Laplace noise takes ``epsilon`` (delta None or 0; rho refused). Gaussian noise takes
        ``rho`` alone (sigma = l2 / sqrt(2 rho); charged rho exactly), or ``epsilon`` and
        ``delta`` > 0 (the tightest sigma for this one release,
        :func:`gaussian_sigma_for`; charged (epsilon, delta), stating its rho for a zCDP
        accountant). When the release's accountant composes in zCDP
        (``zcdp_accountant``: :func:`dpfast.accounting.composes_in_zcdp`), (epsilon, delta)
        releases compose through zCDP too: sigma is that of the largest rho whose tight
        conversion fits (epsilon, delta), and that rho is charged, so an accountant holding
        (epsilon, delta) in zCDP can pay for a release of (epsilon, delta).
    l1, l2 : float
        The release's l1 and l2 sensitivities (> 0; an l2 a float's rounding below
        ``sqrt(k)`` is raised to cover ``k``).
    integer : bool
        Integer cells (discrete Laplace / discrete Gaussian) or real ones (on a grid).
    zcdp_accountant : bool
        Whether the accountant the release will charge composes in zCDP.
    cells : int
        For real cells: how many cells one record can change (at most all of them). Each is
        rounded to the noise's grid, which can add a grid step to the change in each: the
        grid comes from the rounding budget (:data:`ROUNDING_SHARE`), and Gaussian noise is
        calibrated, and charged, for ``l2 + g sqrt(cells)``. (Laplace noise is charged its
        nominal epsilon, as every Laplace release; :func:`dpfast.laplace_privacy_loss`
        certifies the loss, rounding and floating point included.)

    Returns
    -------
    Measure

    Raises
    ------
    TypeError, ValueError
        For a noise that is not one of :data:`NOISES`, a missing or out-of-range privacy
        parameter, or one that does not apply to the noise; nothing is charged or drawn.
    """
    if not isinstance(noise, str):
        raise TypeError(f"The 'noise' parameter of {func} must be 'laplace' or 'gaussian'. "
                        f"Got {_v.describe(noise)} instead.")
    if noise not in NOISES:
        raise ValueError(f"The 'noise' parameter of {func} must be 'laplace' or 'gaussian'. "
                         f"Got {noise!r} instead.")
    if noise == "laplace":
        if rho is not None:
            raise ValueError(f"The 'rho' parameter of {func} applies to Gaussian noise "
                             "(noise='gaussian'); Laplace noise takes epsilon. Got a rho "
                             "with noise='laplace'.")
        if epsilon is None:
            raise ValueError(f"The 'epsilon' parameter of {func} is required with Laplace "
                             "noise. Got None.")
        eps = _v.check_epsilon(epsilon, func)
        if delta is not None and _v.check_delta(delta, func) != 0.0:
            raise ValueError(f"The 'delta' parameter of {func} applies to Gaussian noise; "
                             f"Laplace noise is pure epsilon-DP. Got {delta!r} with "
                             "noise='laplace'.")
        scale = l1 / eps
        return Measure(laplace(scale, True) if integer else real_laplace(scale, l1, cells),
                       eps, 0.0, None)
    l2 = _l2_up(float(l2))
    if not integer:
        return _real_gaussian(func, epsilon, delta, rho, l2, cells, zcdp_accountant)
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ValueError(f"{func}: give Gaussian noise either rho= or epsilon= and "
                             "delta=, not both.")
        r = _v.check_real(rho, "rho", func, low=0.0)
        sigma = _sigma_for_rho(l2, r)
        return Measure(Gaussian(sigma, integer), None, 0.0, r)
    if epsilon is None or delta is None:
        raise ValueError(f"{func}: Gaussian noise needs rho= (a zCDP cost) or both epsilon= "
                         "and delta= (delta > 0). Got "
                         + ("neither." if epsilon is None and delta is None else
                            "epsilon without delta." if delta is None else
                            "delta without epsilon."))
    eps = _v.check_epsilon(epsilon, func)
    dlt = _v.check_real(delta, "delta", func, low=0.0, high=1.0)
    if zcdp_accountant:
        r = math.nextafter(zcdp.rho_from_epsilon_delta(eps, dlt), 0.0)
        return Measure(Gaussian(_sigma_for_rho(l2, r), integer), eps, dlt, r)
    # A record changes cells by whole amounts c_i with sum |c_i| = l1 and sum c_i**2 =
    # l2**2: the two are equal exactly when every |c_i| is at most 1, the case the exact
    # discrete calibration covers.
    unit = integer and math.isclose(float(l1), float(l2) ** 2, rel_tol=1e-9)
    sigma = gaussian_sigma_for(l2, eps, dlt, integer, unit)
    return Measure(Gaussian(sigma, integer), eps, dlt, _charged_rho(l2, sigma))


def _real_gaussian(func: str, epsilon: object, delta: object, rho: object, l2: float,
                   cells: int, zcdp_accountant: bool) -> Measure:
    """:func:`measure` for Gaussian noise on real cells: the grid from the rounding budget,
    sigma calibrated (and the rho charged) for the sensitivity the rounding can reach,
    ``l2 + g sqrt(cells)``, recomputed until the grid (which may grow with sigma, at
    ``2**39`` steps per sigma at most) no longer moves."""
    # The keywords read and checked as for integers (the same messages); its sigma is the
    # first guess.
    base = measure(func, "gaussian", epsilon, delta, rho, l1=l2 * l2, l2=l2, integer=True,
                   zcdp_accountant=zcdp_accountant)
    assert isinstance(base.noise, Gaussian)
    in_rho = base.epsilon is None or zcdp_accountant        # sigma from the rho charged
    rho_charged = base.rho if base.rho is not None else 0.0
    sigma, g, reach = base.noise.sigma, 0.0, l2
    for _ in range(64):
        step = real_gaussian_grid(sigma, l2, cells)
        if step == g:
            break
        g = step
        reach = _up_sum(l2, g * math.sqrt(cells))
        sigma = _sigma_for_rho(reach, rho_charged) if in_rho else \
            gaussian_sigma_for(reach, base.epsilon, base.delta, False)  # type: ignore[arg-type]
    cost = base.rho if in_rho else _charged_rho(reach, sigma)
    return Measure(Gaussian(sigma, False, g), base.epsilon, base.delta, cost)


def _up_sum(a: float, b: float) -> float:
    """A float >= a + b (the sum rounded up)."""
    s = a + b
    return s if Fraction(s) >= Fraction(a) + Fraction(b) else math.nextafter(s, math.inf)
