"""The noise objects, one per family: :class:`Laplace` and :class:`Gaussian` at one scale.

Each knows its grid and kernel parameters, its per-cell variance, a tail bound and its
privacy cost for a given sensitivity, and draws cell-addressed noise under a release's key
(:meth:`Laplace.fill`) or one value (:meth:`Laplace.scalar`).
"""
from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native, zcdp
from ..zcdp import rho_from_epsilon, rho_gaussian
from .grids import (ROUNDING_SHARE, dlap_variance, gaussian_grid, laplace_grid, pow2_ceil,
                    pow2_floor)
from .kernels import require_key

if TYPE_CHECKING:
    from numpy.typing import NDArray

    _Source = _native.Key


def _check_scale(scale: float, name: str) -> float:
    """A noise scale: a finite real > 0 (public, so it may be shown)."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise TypeError(f"The '{name}' of a noise must be a real number. Got {scale!r} instead.")
    s = float(scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"The '{name}' of a noise must be finite and > 0. Got {scale!r} "
                         "instead.")
    return s


def _check_grid(g: float) -> float:
    """A grid step given to a noise: a power of two, so grid arithmetic stays exact."""
    step = _check_scale(g, "g")
    if math.frexp(step)[0] != 0.5:
        raise ValueError(f"The 'g' of a noise must be a power of two. Got {g!r} instead.")
    return step


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
        require_key(source)
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
        require_key(source)
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


def real_laplace(scale: float, l1: float, cells: int) -> Laplace:
    """Laplace noise of ``scale`` for real cells of which a record changes at most ``cells``
    by ``l1`` in all: on the default grid of the scale when that keeps the rounding within
    :data:`ROUNDING_SHARE` of ``l1`` (always for one cell), else on the finer grid that does
    (the certified loss, rounding included: :func:`dpfast.laplace_privacy_loss` with
    ``cells``)."""
    default = laplace(scale, False)
    g = max(min(default.g, pow2_floor(ROUNDING_SHARE * l1 / max(cells, 1))),
            pow2_ceil(scale * 2.0**-40))
    return default if g >= default.g else Laplace(scale, False, g)


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
        require_key(source)
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
