"""Additive noise: one object per family, the only Python code that calls the additive-noise
sampling kernels.

A noise object is a family (:class:`Laplace`, :class:`Gaussian`) at one scale, on integers or
on a grid of reals. It knows everything the releases used to re-derive, each in its own
module: its grid and kernel parameters, its per-cell variance, a tail bound, and its privacy
cost for a given sensitivity. It draws cell-addressed noise into a buffer
(:meth:`Laplace.fill`: cell ``i`` of chunk ``chunk0 + i // CHUNK`` gets noise that is a
function of the key and that position only) or for one value (:meth:`Laplace.scalar`).

The models are numpy's ``cont()``/``disc()`` (one generic driver every sampler goes through)
and OpenDP's ``MakeNoise`` (one trait for every noise; a measurement is a noise plus a
sensitivity): a mechanism is a noise object, a sensitivity, and a release.

A ``source`` is a release's key (:class:`dpfast._native.Key`), handed out by
:mod:`dpfast._release` after the release's charge (:meth:`~dpfast._release.Release.charge`,
:func:`~dpfast._release.release`, a :class:`~dpfast._release.Keys` stream) or to a raw
sampler (:func:`~dpfast._release.draw`, which charges nothing by contract); anything else
is refused (TypeError), so no code draws noise from a generator directly. :meth:`fill` and
:meth:`scalar` follow the kernel convention of :mod:`dpfast._release`,
``kernel(key, threads, *args)``, so a bound method is passed to ``release`` as its kernel.

Every release that adds noise draws it here, and this is the only Python module that calls
the sampling kernels: the selection kernels (:func:`noisy_argmax`, :func:`noisy_top_k`,
:func:`exponential_mechanism`, :func:`noisy_max_score`) and the uniforms of randomized
response and :func:`dpfast.uniform` (:func:`uniforms`) and the priorities of contribution
bounding (:func:`bounded_rows`) are called through the keyed functions at the end of this
module, which refuse anything but a key like :meth:`Laplace.fill`.
(Randomized response's categorical answers also draw integers from the release's generator
through numpy, :meth:`dpfast._release.Keys.coins`: not a kernel of ours.)
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, TypeVar, cast

import numpy as np

from . import _native
from . import validation as _v
from . import zcdp
from .zcdp import rho_from_epsilon, rho_gaussian

if TYPE_CHECKING:
    from numpy.typing import NDArray

    _Source = _native.Key

__all__ = ["Laplace", "Gaussian", "Measure", "NOISES", "measure", "gaussian_sigma_for",
           "laplace", "laplace_scalar_kernel", "noisy_argmax", "noisy_top_k",
           "exponential_mechanism", "noisy_max_score", "uniforms", "bounded_rows"]


# -- the noise parameters and floating-point terms (analysis: dpfast.samplers' docstring) --

#: Laplace outputs are multiples of the smallest power of two >= scale * 2**-GRANULARITY_BITS.
#: 24 balances the cost of rounding inputs to the grid (g/b) against the floating-point error
#: of the inverse CDF (which grows with b/g); see :mod:`dpfast.samplers`.
GRANULARITY_BITS = 24
#: Bound, per unit of t (plus one), on the error of the computed t*(c + L), in units of K.
FP_ERROR = 2.0**-49
#: Largest discrete Laplace scale: beyond it K may exceed the kernel's exact range (2**51)
#: and the floating-point term of the privacy bound is no longer small.
MAX_DISCRETE_SCALE = 2.0**40
#: Gaussian outputs are multiples of the smallest power of two >= sigma * 2**-GRID_BITS.
GRID_BITS = 20
#: Largest discrete Gaussian sigma (its discrete Laplace proposal must stay below 2**40).
MAX_DISCRETE_SIGMA = 2.0**39


def _power_of_two_at_least(x: float, bits: int) -> float:
    """The smallest power of two >= x * 2**-bits."""
    m, e = math.frexp(x)            # x = m 2^e, m in [0.5, 1)
    return math.ldexp(1.0, e - 1 - bits) if m == 0.5 else math.ldexp(1.0, e - bits)


def laplace_grid(scale: float) -> tuple[float, float]:
    """(g, t): the grid step of Laplace noise of this scale and t = scale/g (exact)."""
    g = _power_of_two_at_least(scale, GRANULARITY_BITS)
    return g, scale / g


def gaussian_grid(sigma: float) -> float:
    """The grid step of Gaussian noise of this sigma."""
    return _power_of_two_at_least(sigma, GRID_BITS)


def gaussian_fp_error(sigma: float, reach: float) -> float:
    """The floating-point term ``eta`` of the discrete Gaussian sampler of parameter sigma: each
    output probability for ``|z| <= reach * sigma`` is within a factor ``exp(+-eta)`` of the
    exact discrete Gaussian's (see :mod:`dpfast.samplers`). It does not grow with sigma."""
    m, r, _ = _native.dgauss_proposal(sigma)
    kappa = sigma * r * math.log(2.0) / 2.0**m
    d = reach + kappa
    eta_a = 1.001 * 2.0**-53 * (4.3 * d * d + 4.2 * kappa * d + 3.0 * r + 13.0)
    return 2.0 * eta_a + 2.0**-60


def gaussian_fp_loss(sigma: float, n: int, q: float) -> float:
    """A bound on ``|ln(P'(z) / P(z))|`` for ``n`` independent draws of the discrete Gaussian
    sampler of parameter sigma (P' the sampler's probability of the vector z, P the exact
    one), for every z with ``sum((z_i / sigma)**2) <= q``.

    The pointwise bound ``eta_a(d_i)`` of :mod:`dpfast.samplers`' docstring summed over coordinates:
    with ``d_i = |z_i|/sigma - kappa``, ``sum d_i**2 <= q + n kappa**2 =: S`` and
    ``sum |d_i| <= sqrt(n S)``; plus, per coordinate, the change of the acceptance rate,
    at most the bound's mean under the exact distribution (``E d**2 <= 1 + kappa**2``).
    Quadratic in the noise, so over n coordinates it grows like n, not like n times the
    largest coordinate's square."""
    m, r, _ = _native.dgauss_proposal(sigma)
    kappa = sigma * r * math.log(2.0) / 2.0**m
    c = 1.001 * 2.0**-53
    s2 = q + n * kappa * kappa
    point = c * (4.3 * s2 + 4.2 * kappa * math.sqrt(n * s2) + (3.0 * r + 13.0) * n)
    ed2 = 1.0 + kappa * kappa
    norm = n * (c * (4.3 * ed2 + 4.2 * kappa * math.sqrt(ed2) + 3.0 * r + 13.0) * 1.001
                + 2.0**-60)
    return point + norm


def dlap_variance(t: float) -> float:
    """Variance of discrete Laplace noise with parameter t (P[K = k] proportional to
    exp(-|k| / t)): ``2 q / (1 - q)^2`` with ``q = exp(-1/t)``."""
    return 2.0 * math.exp(-1.0 / t) / math.expm1(-1.0 / t) ** 2


def eta(t: float) -> float:
    """The floating-point term of the privacy bound of discrete Laplace noise with parameter
    t (see :mod:`dpfast.samplers`)."""
    err = (t + 1.0) * FP_ERROR
    if 2 * err >= 1:
        return math.inf
    return 2 * err / t + math.log1p(2 * err) - math.log1p(-2 * err)



def _check_scale(scale: float, name: str) -> float:
    """A noise scale: a finite real > 0 (public, so it may be shown)."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise TypeError(f"The '{name}' of a noise must be a real number. Got {scale!r} instead.")
    s = float(scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"The '{name}' of a noise must be finite and > 0. Got {scale!r} "
                         "instead.")
    return s


def _keyed(source: object) -> None:
    """Refuse anything but a release's key (see the module notes)."""
    if type(source) is not _native.Key:
        raise TypeError("dpfast.noise draws only under a release's key (made after the "
                        f"release's charge), not a {type(source).__name__}.")


def _check_grid(g: float) -> float:
    """A grid step given to a noise: a power of two, so grid arithmetic stays exact."""
    step = _check_scale(g, "g")
    if math.frexp(step)[0] != 0.5:
        raise ValueError(f"The 'g' of a noise must be a power of two. Got {g!r} instead.")
    return step


def _pow2_floor(x: float) -> float:
    """The largest power of two <= x (x > 0, finite)."""
    m, e = math.frexp(x)
    return math.ldexp(0.5, e)


def _pow2_ceil(x: float) -> float:
    """The smallest power of two >= x (x > 0, finite)."""
    m, e = math.frexp(x)
    return math.ldexp(0.5, e) if m == 0.5 else math.ldexp(1.0, e)


#: A release of real cells rounds each to the noise's grid, which can move a record's change
#: by up to one step in each cell it changes: the grid is chosen so that this adds at most
#: ROUNDING_SHARE of the sensitivity (``cells * g <= ROUNDING_SHARE * l1`` for Laplace,
#: ``sqrt(cells) * g <= ROUNDING_SHARE * l2`` for Gaussian), never coarser than the default
#: grid of the scale alone, never finer than the kernels allow (``t <= 2**40`` for Laplace,
#: ``sigma / g <= 2**39`` steps for Gaussian).
ROUNDING_SHARE = 2.0**-12


def real_laplace(scale: float, l1: float, cells: int) -> Laplace:
    """Laplace noise of ``scale`` for real cells of which a record changes at most ``cells``
    by ``l1`` in all: on the default grid of the scale when that keeps the rounding within
    :data:`ROUNDING_SHARE` of ``l1`` (always for one cell), else on the finer grid that does
    (the certified loss, rounding included: :func:`dpfast.laplace_privacy_loss` with
    ``cells``)."""
    default = laplace(scale, False)
    g = max(min(default.g, _pow2_floor(ROUNDING_SHARE * l1 / max(cells, 1))),
            _pow2_ceil(scale * 2.0**-40))
    return default if g >= default.g else Laplace(scale, False, g)


def real_gaussian_grid(sigma: float, l2: float, cells: int) -> float:
    """The grid of Gaussian noise of ``sigma`` for real cells of which a record changes at
    most ``cells`` by ``l2`` in all (see :data:`ROUNDING_SHARE`)."""
    g = min(gaussian_grid(sigma), _pow2_floor(ROUNDING_SHARE * l2 / math.sqrt(max(cells, 1))))
    return max(g, _pow2_ceil(sigma * 2.0**-39))


def _check_beta(beta: float) -> float:
    """A tail probability of :meth:`tail_bound`, in (0, 1)."""
    b = float(beta)
    if not 0.0 < b < 1.0:
        raise ValueError(f"The 'beta' parameter of tail_bound must be in (0, 1). Got "
                         f"{beta!r} instead.")
    return b


class Laplace:
    """Laplace noise of scale ``scale``: discrete Laplace on integers, or Laplace on a grid.

    Parameters
    ----------
    scale : float
        The noise scale b (``sensitivity / epsilon``), finite and > 0.
    integer : bool
        True: discrete Laplace with parameter ``t = scale`` (``P[K = k]`` proportional to
        ``exp(-|k| / t)``), added to integer cells. False: ``g K`` with ``(g, t) =``
        :func:`dpfast.samplers.laplace_grid` ``(scale)``, added to float cells (outputs on
        the grid of step ``g``, a power of two).
    g : float, optional
        For real noise: a finer grid step, a power of two (:func:`real_laplace`: from the
        rounding budget of a release whose records change many cells).

    Attributes
    ----------
    scale : float
        The noise scale.
    integer : bool
        Whether the noise is integer-valued.
    g : float
        The grid step (1.0 for integer noise).
    t : float
        The discrete Laplace parameter of the kernel (``scale / g``, exact).

    Examples
    --------
    >>> from dpfast.noise import Laplace
    >>> noise = Laplace(2.0, integer=True)
    >>> noise.epsilon(1.0), noise.rho(1.0)
    (0.5, 0.125)
    """

    __slots__ = ("scale", "integer", "g", "t")

    def __init__(self, scale: float, integer: bool, g: float | None = None) -> None:
        self.scale = _check_scale(scale, "scale")
        self.integer = bool(integer)
        if self.integer or g is None:
            self.g, self.t = ((1.0, self.scale) if self.integer
                              else laplace_grid(self.scale))
        else:
            self.g = _check_grid(g)
            self.t = self.scale / self.g                # exact: g is a power of two

    def __repr__(self) -> str:
        return f"Laplace(scale={self.scale!r}, integer={self.integer!r})"

    @property
    def variance(self) -> float:
        """Per-cell variance of the noise: ``dlap_variance(t) g**2`` (about ``2 scale**2``)."""
        return dlap_variance(self.t) * self.g * self.g

    def tail_bound(self, beta: float) -> float:
        """A bound exceeded by one cell's noise in absolute value with probability <= beta.

        Parameters
        ----------
        beta : float
            Tail probability, in (0, 1).

        Returns
        -------
        float
            ``g j`` for the smallest integer ``j`` with
            ``P[|K| > j] = 2 q**(j+1) / (1 + q) <= beta``, ``q = exp(-1/t)``.
        """
        b = _check_beta(beta)
        log_q = -1.0 / self.t
        q = math.exp(log_q)
        j = max(math.ceil((math.log(b) + math.log1p(q) - math.log(2.0)) / log_q) - 1, 0)
        # Guard the ceil against rounding in the logarithms.
        while j > 0 and 2.0 * math.exp(log_q * j) / (1.0 + q) <= b:
            j -= 1
        while 2.0 * math.exp(log_q * (j + 1)) / (1.0 + q) > b:
            j += 1
        return j * self.g

    def epsilon(self, sensitivity: float) -> float:
        """Pure DP cost for an l1 ``sensitivity``: ``sensitivity / scale`` (the nominal
        epsilon; :func:`dpfast.laplace_privacy_loss` adds the floating-point term)."""
        return float(sensitivity) / self.scale

    def rho(self, sensitivity: float) -> float:
        """zCDP cost for an l1 ``sensitivity``: ``epsilon**2 / 2`` (never understated)."""
        return rho_from_epsilon(self.epsilon(sensitivity))

    def fill(self, source: _Source, threads: int, out: NDArray[Any],
             base: NDArray[Any] | None = None, chunk0: int = 0) -> NDArray[Any]:
        """Write ``base + noise`` (noise alone when ``base`` is None) into ``out``.

        Parameters
        ----------
        source : dpfast._native.Key
            The release's key.
        threads : int
            Threads for the kernel.
        out : ndarray
            int64/int32 (integer noise) or float64, C-contiguous, written. Integer noise
            drawn into float64 cells goes through the grid kernel on the grid of the
            integers (step 1), exact while the sums stay within ``2**52``.
        base : ndarray or None
            Values the noise is added to (may be ``out`` itself).
        chunk0 : int
            Index of the chunk of ``out[0]``: the cell addresses of a piece of a release.

        Returns
        -------
        ndarray
            ``out``.
        """
        _keyed(source)
        if self.integer and out.dtype != np.float64:
            return _native.fill_discrete_laplace(source, threads, out, self.t,
                                                 base, chunk0)
        return _native.fill_laplace(source, threads, out, self.t, self.g,
                                    base, chunk0)

    @property
    def scalar_kernel(self) -> tuple[Any, tuple[float, ...]]:
        """``(kernel, params)`` with ``kernel(source, threads, *params, base)`` equal to
        :meth:`scalar`: the compiled function itself, for the one-number path of
        :func:`dpfast.laplace_mechanism`, where a Python frame more is a sixth of the call.
        The compiled function takes a release's key and nothing else (its argument's type,
        checked in C), as :meth:`scalar` does."""
        if self.integer:
            return _native.discrete_laplace_scalar, (self.t,)
        return _native.laplace_scalar, (self.t, self.g)

    def scalar(self, source: _Source, threads: int,
               base: int | float | None = None) -> int | float:
        """``base + noise`` for one value (an int for integer noise, a float otherwise)."""
        _keyed(source)
        if self.integer:
            # An int base for integer noise (the callers' contract; not checked per call).
            return _native.discrete_laplace_scalar(source, threads, self.t,
                                                   base)  # type: ignore[arg-type]
        return _native.laplace_scalar(source, threads, self.t, self.g, base)


@functools.lru_cache(maxsize=256)
def laplace(scale: float, integer: bool) -> Laplace:
    """The :class:`Laplace` noise of this scale, made once: small releases draw the same few
    scales again and again, and making the object is a measurable part of a scalar call.
    (The object is never changed after it is made.)"""
    return Laplace(scale, integer)


@functools.lru_cache(maxsize=256)
def laplace_scalar_kernel(scale: float, integer: bool) -> tuple[Any, tuple[float, ...]]:
    """:attr:`Laplace.scalar_kernel` of ``laplace(scale, integer)``, in one cached call (the
    one-number path of :func:`dpfast.laplace_mechanism` is about 1.6 us in all)."""
    return laplace(scale, integer).scalar_kernel


class Gaussian:
    """Gaussian noise of parameter ``sigma``: discrete Gaussian on integers, or on a grid.

    Parameters
    ----------
    sigma : float
        The noise parameter, finite and > 0.
    integer : bool
        True: the discrete Gaussian ``N_Z(0, sigma**2)`` (Canonne, Kamath & Steinke 2020),
        added to int64 or int32 cells. False: ``g`` times the discrete Gaussian of
        parameter ``sigma / g``, ``g =`` :func:`dpfast.samplers.gaussian_grid` ``(sigma)``
        unless given, added to float cells.
    g : float, optional
        For real noise: a finer grid step, a power of two (``gaussian_mechanism`` takes it
        from its data's l2 rounding budget).

    Attributes
    ----------
    sigma : float
        The noise parameter.
    integer : bool
        Whether the noise is integer-valued.
    g : float
        The grid step (1.0 for integer noise).

    Examples
    --------
    >>> from dpfast.noise import Gaussian
    >>> Gaussian(2.0, integer=True).rho(1.0)
    0.125
    """

    __slots__ = ("sigma", "integer", "g")

    def __init__(self, sigma: float, integer: bool, g: float | None = None) -> None:
        self.sigma = _check_scale(sigma, "sigma")
        self.integer = bool(integer)
        # A finer grid may be chosen by the caller (from a release's l2 rounding budget).
        self.g = 1.0 if self.integer else gaussian_grid(self.sigma) if g is None \
            else _check_grid(g)

    def __repr__(self) -> str:
        return f"Gaussian(sigma={self.sigma!r}, integer={self.integer!r})"

    @property
    def scale(self) -> float:
        """The noise scale: ``sigma``."""
        return self.sigma

    @property
    def variance(self) -> float:
        """Per-cell variance: ``sigma**2`` (the discrete Gaussian's is at most that)."""
        return self.sigma * self.sigma

    def tail_bound(self, beta: float) -> float:
        """A bound exceeded by one cell's noise in absolute value with probability <= beta:
        ``sigma sqrt(2 ln(2 / beta))`` (both Gaussians are sigma-subgaussian)."""
        b = _check_beta(beta)
        return self.sigma * math.sqrt(2.0 * math.log(2.0 / b))

    def rho(self, sensitivity: float) -> float:
        """zCDP cost for an l2 ``sensitivity``: ``sensitivity**2 / (2 sigma**2)``."""
        return rho_gaussian(sensitivity, self.sigma)

    def epsilon(self, sensitivity: float, delta: float) -> float:
        """(epsilon, ``delta``)-DP cost for an l2 ``sensitivity``: the tight conversion of
        :meth:`rho` (Canonne, Kamath & Steinke 2020; the continuous and the discrete
        Gaussian alike), never below the truth. A release calibrated for one (epsilon,
        delta) may cost less than this (:func:`gaussian_sigma_for`: the analytic Gaussian,
        the discrete Gaussian's exact privacy); this is what the noise costs composed in
        zCDP."""
        return zcdp.epsilon_from_rho(self.rho(sensitivity), delta)

    def fill(self, source: _Source, threads: int, out: NDArray[Any],
             base: NDArray[Any] | None = None, chunk0: int = 0) -> NDArray[Any]:
        """Write ``base + noise`` (noise alone when ``base`` is None) into ``out`` (int64/int32
        for integer noise, float64 otherwise); arguments as :meth:`Laplace.fill`."""
        _keyed(source)
        if self.integer:
            return _native.fill_discrete_gaussian(source, threads, out, self.sigma,
                                                  base, chunk0)
        return _native.fill_gaussian(source, threads, out, self.sigma / self.g,
                                     self.g, base, chunk0)

    def scalar(self, source: _Source, threads: int,
               base: int | float | None = None) -> int | float:
        """``base + noise`` for one value, drawn as the first cell of a one-cell buffer."""
        if self.integer:
            cell = np.empty(1, dtype=np.int64)
            ints = None if base is None else np.array([base], dtype=np.int64)
            return int(self.fill(source, threads, cell, ints)[0])
        reals = np.empty(1, dtype=np.float64)
        fbase = None if base is None else np.array([base], dtype=np.float64)
        return float(self.fill(source, threads, reals, fbase)[0])


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
                        f"Got a {type(noise).__name__} instead.")
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


# -- the other sampling kernels, keyed ------------------------------------------------------

_F = TypeVar("_F", bound=Callable[..., Any])


def _keyed_kernel(kernel: _F) -> _F:
    """``kernel(key, threads, *args)``, refusing anything but a release's key (the kernel
    convention of :mod:`dpfast._release`, so it is passed to ``release`` as a kernel)."""
    def call(source: object, threads: int, *args: object) -> Any:
        _keyed(source)
        return kernel(source, threads, *args)
    call.__name__ = call.__qualname__ = kernel.__name__
    call.__doc__ = (f"{kernel.__doc__}\n\n(dpfast._native.{kernel.__name__} under a release's "
                    "key: anything else is refused.)")
    return cast("_F", call)


#: Report noisy max / one-sided noisy argmax (:mod:`dpfast.mechanisms.selection`).
noisy_argmax = _keyed_kernel(_native.noisy_argmax)
#: The k largest noisy scores (Gumbel top-k).
noisy_top_k = _keyed_kernel(_native.noisy_top_k)
#: The exponential mechanism by inverse CDF over log-sum-exp (selection, MWEM).
exponential_mechanism = _keyed_kernel(_native.exponential_mechanism)
#: The largest noisy score of a block and its index (SmallDB's blocks).
noisy_max_score = _keyed_kernel(_native.noisy_max_score)
#: Full-precision uniforms into an array (randomized response's coins, dpfast.uniform).
uniforms = _keyed_kernel(_native.fill_uniform)


def bounded_rows(row_key: _Source, pair_key: _Source, threads: int,
                 person: NDArray[np.int64], group: NDArray[np.int64] | None,
                 positions: NDArray[np.int64] | None, total: int, max_groups: int,
                 max_rows: int) -> NDArray[np.uint8]:
    """Flags of the rows a contribution bound keeps (:func:`dpfast.records.bound`): the
    kernel draws each row's uniform priority under the release's two keys at the row's
    position and keeps the lowest (``dpfast._native.bound_keyed``; keys only)."""
    _keyed(row_key)
    _keyed(pair_key)
    flags: NDArray[np.uint8] = _native.bound_keyed(person, group, row_key, pair_key, positions,
                                                   total, max_groups, max_rows, threads)
    return flags
