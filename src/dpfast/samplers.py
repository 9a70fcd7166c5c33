"""Raw noise: full-precision uniforms, exact-grid Laplace and Gaussian noise, discrete Laplace
and discrete Gaussian noise.

These are building blocks: they charge no budget. The mechanisms in :mod:`dpfast.mechanisms`
check their arguments, charge an accountant and draw from the same kernels. Every sampler
here is a docstring and one call of :func:`dpfast._release.draw`.

How the samplers avoid the floating-point attack
------------------------------------------------
A textbook ``x + b*log(u)`` on doubles can output values for input ``x`` that it can never
output for a neighbouring ``x'`` (Mironov, CCS 2012), so single outputs identify the input.
dpfast's continuous Laplace noise is instead an exact discrete distribution on a power-of-two
grid: ``laplace(b)`` returns ``g*K`` with ``g = laplace_granularity(b)`` (the smallest power
of two >= ``b * 2**-24``) and ``K`` a two-sided geometric variable,
``P[K = k]`` proportional to ``exp(-|k| g / b)``. Mechanisms round the input to the grid
first, so the set of possible outputs is the same grid for every input.

``K`` is drawn by inverse CDF, ``|K| = floor(t (c + L))`` with ``t = b/g``,
``c = ln(2/(1 + exp(-1/t)))`` and ``L = -ln U``, from a *full-precision* uniform ``U``
(every double in (0, 1) possible, with probability equal to its spacing) and an independent
sign bit. See ``_core/sampling.h`` for how ``L`` is computed so that its absolute error is a
few units of 2**-53 at any magnitude.

Privacy bound including floating-point error
--------------------------------------------
Let ``E = (t + 1) * 2**-49`` bound the error of the computed ``t (c + L)`` in units of ``K``.
The rounding budget, in units of 2**-53 (t*u means t * 2**-53): truncating the uniform to 53
bits moves ``L`` by < 2u (so ``t (c + L)`` by < 2tu); ``ln(m)`` on [sqrt(1/2), sqrt(2)) is
within 1u (its terms below 2**-60 relative; ``f`` exact, ``s`` rounded inside a correction
term); ``c`` from libm within 1u; ``c - ln m`` (< 1.1) rounds by <= 1u; ``t * (c - ln m)``
and ``n a_lo + ...`` by <= 1.1tu each; ``n a_hi`` is exact and ``a_hi + a_lo`` is within
``t 2**-90`` of ``t ln 2``; the final ``(big - floor(big)) + small`` (< t + 1) by <= (t+1)u.
The sum is below 8(t + 1)u, half of ``E``; ``tests/test_noise_accuracy.py`` measures at
about a fifth of ``E`` against 120-bit arithmetic on random and adversarial inputs.

Each cell boundary of the inverse CDF then moves by at most ``E/t`` in ``L``, which changes
every probability ``P[K = k]`` by a factor within ``[exp(-E/t)(1 - 2E), exp(E/t)(1 + 2E)]``.
So a release whose exact privacy loss is ``eps_exact`` has loss at most
``eps_exact + eta(t)`` with ``eta(t) = 2E/t + ln((1 + 2E)/(1 - 2E))`` (about
``4 t 2**-49`` for large ``t``).
For the grid mechanism with sensitivity ``D``, inputs are rounded to the grid (half to even),
so neighbours can end ``floor(D/g) + 1`` cells apart and ``eps_exact <= eps + g/b``; with
``t = b/g`` in ``(2**23, 2**24]`` both ``g/b`` and ``eta`` are below ``2**-23``: the total
is ``eps' <= eps + 2.4e-7``. For the integer mechanism ``eps_exact = floor(D)/t <= eps``
and ``eta`` grows with the scale (``t = 1000``: ``7e-12``). :func:`dpfast.laplace_privacy_loss`
computes the bound for given parameters.

Strictly, the guarantee is ``(eps', delta)`` with ``delta = 2**-1099``: the uniform's
binade count stops after 1099 zero bits, so noise beyond about ``762 b`` is impossible and
an output at that edge for one input is impossible for its neighbour. That probability is
far below ChaCha20's 2**-256 security level, which bounds every guarantee here anyway.

Reproducibility: the samplers use only IEEE-754 basic operations, so a seed gives the same
samples on every instruction set; the per-call constant ``c`` comes from the C library's
``exp``/``log1p``, so machines with a different libm may differ in rare samples.

The uniform's exponent comes from the leading zeros of 11 bits of the sample's word, and from
up to 17 further words of a separate stream when all 11 are zero (probability 2**-11); the
number of words (and the time) per sample is therefore 1 with probability 1 - 2**-11 and at
most 18.

Gaussian noise
--------------
Noise is exact-lattice: ``discrete_gaussian(sigma)`` is the discrete Gaussian
``P[Z = z]`` proportional to ``exp(-z**2 / (2 sigma**2))`` on the integers; ``gaussian(sigma)``
is ``g * Z`` with ``Z`` discrete Gaussian of parameter ``sigma / g`` on the power-of-two grid
``g = gaussian_granularity(sigma)`` (the smallest power of two >= ``sigma * 2**-20``), so, as
for Laplace noise, the set of possible outputs does not depend on the input.

``Z`` is drawn by rejection (as in Canonne, Kamath & Steinke 2020) from a proposal that
needs no floating-point arithmetic: ``X = +-(G M + V)`` with ``M = 2**m``, ``G = floor(lz / r)``
for ``lz`` the number of leading zeros of a random bit string (so ``P[G >= j] = 2**(-r j)``
exactly), ``V`` in ``[0, M)`` and "-0" rejected. For ``m >= 2``, ``V = j M/4 + low`` with
``low`` uniform on ``m - 2`` bits and the quarter ``j`` from 4 bits with probabilities
``w = (5, 4, 4, 3)/16`` (a dyadic staircase close to the ``2**(-u)`` slope inside a block);
for ``m < 2``, ``V`` is uniform. Its probabilities ``q(x)`` are exact dyadic numbers, and
``q(x) a(x)`` is proportional to ``exp(-x**2 / (2 sigma**2))`` for the acceptance
probability ``a(x) = exp(-(|x| - s)**2 / (2 sigma**2) - c low + cq_j)``, ``c = r ln2 / M``,
``s = sigma**2 c``, ``cq_j = ln(lambda / w_j) - j r ln2 / 4 <= 0`` with
``lambda = min_j w_j 2**(j r / 4)`` (``cq = 0`` without quarters). The kernel picks
``(m, r)`` for the best acceptance rate (about 0.6 for sigma >= 3: ``M`` near
``sigma ln 2``, ``r = 1``; 0.36 to 0.5 below). The test ``U < a(x)`` reads the first 8 or 16
bits of ``U`` and, only when they tie with ``a(x)``'s, a full-precision uniform: it accepts
with probability exactly the computed ``a(x)``. Two 32-bit proposals come from one 64-bit
ChaCha20 word while their fields fit (``m <= 10``), one per word above. The vector loops
decide most proposals from a shorter series for ``exp`` whose error is bounded, and hand the
undecided ones to the exact scalar path, so the decisions are those of the exact
computation, bit for bit, on every instruction set.

Distance from the ideal distribution: the only floating-point error is that of the
computed ``a(x)``. With ``d = (|x| - s)/sigma`` and ``kappa = s/sigma = sigma r ln2 / M``,
the computed exponent is within ``2**-53 (4.3 d**2 + 4.2 kappa |d| + 3 r + 9)`` of the exact
one (``|x|`` and ``low`` are exact; ``c`` and ``s`` carry 2 and 4 roundings, ``d`` 3 more,
its square and the sums 3 more; the quarter constants, below 1 in magnitude, 8 units), and
the exponential adds at most ``2**-51`` relative, so
``|ln(a_computed(x) / a(x))| <= eta_a(d) = 1.001 * 2**-53 (4.3 d**2 + 4.2 kappa |d| + 3 r + 13)``
(below about 700 in the exponent; beyond, ``a`` underflows to 0, an absolute error under
1e-300). Rejection sampling divides by the acceptance rate, which the same bound moves by
at most its largest value over where the mass is; so for every output ``z`` with
``|z| <= R sigma`` the sampler's probability is within a factor ``exp(+-eta)`` of the exact
discrete Gaussian's, ``eta = 2 eta_a(R + kappa) + 2**-60`` (:func:`gaussian_fp_error`). This
does **not** grow with sigma (about ``1.2e-13`` at ``R = 10``), so lattice noise with 2**30 or
more steps per sigma is as accurate as with a few: what the grid Gaussian mechanism needs to
make its rounding negligible (:mod:`dpfast.mechanisms.gaussian`). Beyond ``|z| > R sigma``
the mass is below ``2 exp(-R**2/2)`` (the discrete Gaussian is sigma-subgaussian).

The number of proposals a sample needs is random but independent of the value it returns
(a property of rejection sampling), so timing does not reveal the noise; the extra words of
the geometric field's and the tie's slow paths (probability 2**-11 or less, and 2**-8 or
2**-16, per proposal) are the only value-dependent cost.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, overload

import numpy as np

from . import noise as _noise
from . import validation as _v
from ._release import draw

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    from numpy.typing import NDArray

    from .rng import RngLike

    # An output shape: an int or a tuple of ints (``None``, a scalar, is handled apart).
    _Size: TypeAlias = int | tuple[int, ...]

__all__ = [
    "GRANULARITY_BITS",
    "GRID_BITS",
    "uniform",
    "laplace",
    "discrete_laplace",
    "gaussian",
    "discrete_gaussian",
    "laplace_granularity",
    "gaussian_granularity",
]

# The noise parameters and the floating-point terms live with the noise objects that use
# them (dpfast.noise, which this module's samplers draw through); the analysis is above.
from .noise import (  # noqa: E402  (re-exported: the names modules import from here)
    FP_ERROR as FP_ERROR,
    GRANULARITY_BITS as GRANULARITY_BITS,
    GRID_BITS as GRID_BITS,
    MAX_DISCRETE_SCALE as MAX_DISCRETE_SCALE,
    MAX_DISCRETE_SIGMA as MAX_DISCRETE_SIGMA,
    dlap_variance as dlap_variance,
    eta as eta,
    gaussian_fp_error as gaussian_fp_error,
    gaussian_fp_loss as gaussian_fp_loss,
    gaussian_grid as gaussian_grid,
    laplace_grid as laplace_grid,
)


@overload
def _sample(func: str, size: _Size | None, rng: RngLike, threads: int | None,
            dtype: type[np.float64], kernel: Callable[..., object],
            *params: float) -> float | NDArray[np.float64]: ...
@overload
def _sample(func: str, size: _Size | None, rng: RngLike, threads: int | None,
            dtype: type[np.int64], kernel: Callable[..., object],
            *params: float) -> int | NDArray[np.int64]: ...
def _sample(func: str, size: _Size | None, rng: RngLike, threads: int | None,
            dtype: type[np.float64 | np.int64], kernel: Callable[..., object],
            *params: float) -> float | NDArray[np.float64 | np.int64]:
    """The raw samplers' one path: check size, allocate, :func:`draw`; a Python number for
    size=None."""
    shape = _v.check_size(size, func)
    out = np.empty(() if shape is None else shape, dtype=dtype)
    draw(func, rng, threads, out.size, kernel, out, *params)
    return out.item() if shape is None else out


@overload
def uniform(size: None = None, *, rng: RngLike = None,
            threads: int | None = None) -> float: ...
@overload
def uniform(size: _Size, *, rng: RngLike = None,
            threads: int | None = None) -> NDArray[np.float64]: ...
def uniform(size: _Size | None = None, *, rng: RngLike = None,
            threads: int | None = None) -> float | NDArray[np.float64]:
    """uniform(size=None, *, rng=None, threads=None)

    Full-precision uniform doubles on the open interval (0, 1).

    Every double in (0, 1) can occur, with probability equal to its spacing (the real
    uniform rounded down), unlike ``Generator.random`` which returns multiples of 2**-53.

    Parameters
    ----------
    size : int or tuple of ints, optional
        Output shape; ``None`` returns a Python float.
    rng : None, int, ChaCha20 or numpy.random.Generator over ChaCha20, optional
        Source of randomness. ``None`` uses a process-wide generator keyed from the OS. An
        int seed makes the output reproducible: for tests and research only (anyone who
        knows the seed can subtract the noise from a release).
        See :func:`dpfast.rng.resolve_rng`.
    threads : int, optional
        Threads for large outputs; default ``OMP_NUM_THREADS`` or the usable CPUs. The result
        for a given ``rng`` does not depend on it.

    Returns
    -------
    float or ndarray of float64
        Uniform draws in (0, 1), never 0 or 1; a Python float when ``size`` is ``None``.

    Raises
    ------
    TypeError
        If ``size`` is not an int or a tuple of ints, ``threads`` is not an int, or ``rng``
        is not one of the accepted kinds (a Generator over another bit generator included).
    ValueError
        If ``size`` has a negative entry or more than 32 dimensions or 2**56 elements,
        ``threads`` is outside [1, 1024], or ``rng`` is a negative seed.

    Examples
    --------
    >>> import dpfast as dp
    >>> import numpy as np
    >>> u = dp.uniform(1000, rng=1)          # a seed: reproducible, for tests only
    >>> u.shape, bool(((u > 0) & (u < 1)).all())
    ((1000,), True)
    >>> print(np.round(dp.uniform(3, rng=1), 3))
    [0.246 0.698 0.688]
    """
    return _sample("uniform", size, rng, threads, np.float64, _noise.uniforms)


def laplace_granularity(scale: float) -> float:
    """laplace_granularity(scale)

    The grid step ``g`` of :func:`laplace` noise with this scale: the smallest power of two
    ``>= scale * 2**-GRANULARITY_BITS`` (``GRANULARITY_BITS`` is 24).

    Parameters
    ----------
    scale : float
        The Laplace scale ``b``, in [2^-900, 2^1000].

    Returns
    -------
    float
        A power of two ``g`` with ``scale / g`` in (2**23, 2**24].

    Raises
    ------
    TypeError
        If ``scale`` is not a real number (a bool included).
    ValueError
        If ``scale`` is NaN, infinite or outside [2^-900, 2^1000].

    Examples
    --------
    >>> import dpfast as dp
    >>> dp.laplace_granularity(1.0) == 2.0**-24
    True
    >>> dp.laplace_granularity(10.0) == 2.0**-20
    True
    """
    return laplace_grid(_v.check_scale(scale, "laplace_granularity"))[0]


@overload
def laplace(scale: float, size: None = None, *, rng: RngLike = None,
            threads: int | None = None) -> float: ...
@overload
def laplace(scale: float, size: _Size, *, rng: RngLike = None,
            threads: int | None = None) -> NDArray[np.float64]: ...
def laplace(scale: float, size: _Size | None = None, *, rng: RngLike = None,
            threads: int | None = None) -> float | NDArray[np.float64]:
    """laplace(scale, size=None, *, rng=None, threads=None)

    Laplace noise with the given scale, on an exact power-of-two grid.

    Parameters
    ----------
    scale : float
        The Laplace scale ``b`` (for a mechanism, sensitivity / epsilon), in [2^-900, 2^1000].
    size : int or tuple of ints, optional
        Output shape; ``None`` returns a Python float.
    rng : None, int, ChaCha20 or numpy.random.Generator over ChaCha20, optional
        Source of randomness. ``None`` uses a process-wide generator keyed from the OS. An
        int seed makes the output reproducible: for tests and research only (anyone who
        knows the seed can subtract the noise from a release).
    threads : int, optional
        Threads for large outputs (default ``OMP_NUM_THREADS``); the result for a given
        ``rng`` does not depend on it.

    Returns
    -------
    float or ndarray of float64
        Multiples of ``g = laplace_granularity(scale)``, distributed as ``g*K`` with
        ``P[K = k]`` proportional to ``exp(-|k| g / scale)``: mean 0, variance within a
        relative ``2**-40`` of ``2 scale**2``.

    Raises
    ------
    TypeError
        If ``scale`` is not a real number (a bool included), ``size`` is not an int or a
        tuple of ints, ``threads`` is not an int, or ``rng`` is not one of the accepted kinds
        (a Generator over another bit generator included).
    ValueError
        If ``scale`` is NaN, infinite or outside [2^-900, 2^1000]; ``size`` has a negative
        entry or more than 32 dimensions or 2**56 elements; ``threads`` is outside
        [1, 1024]; or ``rng`` is a negative seed.

    Notes
    -----
    Drawn by inverse CDF from a full-precision uniform and a sign bit: one 64-bit ChaCha20
    word per sample with probability 1 - 2**-11, at most 18. Privacy bound including
    floating-point error: see the module documentation and
    :func:`dpfast.laplace_privacy_loss`.

    References
    ----------
    I. Mironov, "On significance of the least significant bits for differential privacy",
    CCS 2012.

    Examples
    --------
    >>> import dpfast as dp
    >>> import numpy as np
    >>> x = dp.laplace(1.0, 5, rng=42)       # a seed: reproducible, for tests only
    >>> print(np.round(x, 3))
    [ 0.168  0.115 -1.066 -0.368 -0.295]
    >>> g = dp.laplace_granularity(1.0)
    >>> bool((x / g == (x / g).round()).all())     # every output is on the grid
    True
    """
    noise = _noise.Laplace(_v.check_scale(scale, "laplace"), integer=False)
    return _sample("laplace", size, rng, threads, np.float64, noise.fill)


@overload
def discrete_laplace(scale: float, size: None = None, *, rng: RngLike = None,
                     threads: int | None = None) -> int: ...
@overload
def discrete_laplace(scale: float, size: _Size, *, rng: RngLike = None,
                     threads: int | None = None) -> NDArray[np.int64]: ...
def discrete_laplace(scale: float, size: _Size | None = None, *, rng: RngLike = None,
                     threads: int | None = None) -> int | NDArray[np.int64]:
    """discrete_laplace(scale, size=None, *, rng=None, threads=None)

    Discrete Laplace (two-sided geometric) noise: int64 with
    ``P[K = k] = (1 - a)/(1 + a) * a**|k|``, ``a = exp(-1/scale)``.

    Parameters
    ----------
    scale : float
        In [2^-900, 2^40]. Adding this noise to an integer query of sensitivity ``D``
        is ``floor(D)/scale``-differentially private.
    size : int or tuple of ints, optional
        Output shape; ``None`` returns a Python int.
    rng, threads
        As for :func:`laplace` (an int seed is for tests and research only).

    Returns
    -------
    int or ndarray of int64
        Draws of ``K``: mean 0, variance ``2a / (1 - a)**2``; a Python int when ``size`` is
        ``None``.

    Raises
    ------
    TypeError
        If ``scale`` is not a real number (a bool included), or ``size``, ``threads`` or
        ``rng`` is of a kind not accepted (as for :func:`laplace`).
    ValueError
        If ``scale`` is NaN, infinite or outside [2^-900, 2^40], or ``size``, ``threads`` or
        ``rng`` is out of range (as for :func:`laplace`).

    Notes
    -----
    Same kernel as :func:`laplace` (whose output is this noise times the grid step), so the
    same words-per-sample bound and floating-point analysis apply.

    Examples
    --------
    >>> import dpfast as dp
    >>> k = dp.discrete_laplace(2.0, 6, rng=3)     # a seed: reproducible, for tests only
    >>> k.dtype
    dtype('int64')
    >>> print(k)
    [-4  2  1  1  3  0]
    """
    noise = _noise.Laplace(_v.check_scale(scale, "discrete_laplace", high=MAX_DISCRETE_SCALE),
                           integer=True)
    return _sample("discrete_laplace", size, rng, threads, np.int64, noise.fill)


def gaussian_granularity(sigma: float) -> float:
    """gaussian_granularity(sigma)

    Grid step of :func:`gaussian` noise: the smallest power of two >= ``sigma * 2**-20``.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, in [2^-900, 2^1000].

    Returns
    -------
    float
        A power of two ``g`` with ``sigma / g`` in (2**19, 2**20].

    Raises
    ------
    TypeError
        If ``sigma`` is not a real number (a bool included).
    ValueError
        If ``sigma`` is NaN, infinite or outside [2^-900, 2^1000] (the message calls it
        ``'scale'``).

    Examples
    --------
    >>> import dpfast as dp
    >>> dp.gaussian_granularity(1.0) == 2.0**-20
    True
    >>> dp.gaussian_granularity(3.0) == 2.0**-18
    True
    """
    return gaussian_grid(_v.check_scale(sigma, "gaussian_granularity"))


@overload
def gaussian(sigma: float, size: None = None, *, rng: RngLike = None,
             threads: int | None = None) -> float: ...
@overload
def gaussian(sigma: float, size: _Size, *, rng: RngLike = None,
             threads: int | None = None) -> NDArray[np.float64]: ...
def gaussian(sigma: float, size: _Size | None = None, *, rng: RngLike = None,
             threads: int | None = None) -> float | NDArray[np.float64]:
    """gaussian(sigma, size=None, *, rng=None, threads=None)

    Gaussian noise of standard deviation about ``sigma`` on an exact power-of-two grid.

    Returns ``g * Z``, ``g = gaussian_granularity(sigma)``, ``Z`` discrete Gaussian with
    parameter ``sigma / g`` (its variance is within a relative 1e-12 of ``(sigma/g)**2``
    for these parameters).

    Parameters
    ----------
    sigma : float
        The standard deviation, in [2**-900, 2**1000].
    size : int or tuple of ints, optional
        Output shape; ``None`` returns a Python float.
    rng, threads
        As for :func:`laplace` (an int seed is for tests and research only).

    Returns
    -------
    float or ndarray of float64
        Multiples of ``g = gaussian_granularity(sigma)`` with mean 0 and standard deviation
        ``sigma`` (to a relative 1e-12).

    Raises
    ------
    TypeError
        If ``sigma`` is not a real number (a bool included), or ``size``, ``threads`` or
        ``rng`` is of a kind not accepted (as for :func:`laplace`).
    ValueError
        If ``sigma`` is NaN, infinite or outside [2**-900, 2**1000] (the message calls it
        ``'scale'``), or ``size``, ``threads`` or ``rng`` is out of range (as for
        :func:`laplace`).

    Notes
    -----
    Drawn by exact rejection sampling: see the module documentation for the sampler and its
    distance from the ideal distribution (:func:`gaussian_fp_error`).

    Examples
    --------
    >>> import dpfast as dp
    >>> import numpy as np
    >>> x = dp.gaussian(3.0, 1000, rng=1)          # a seed: reproducible, for tests only
    >>> print(np.round(x[:4], 3))
    [ 0.111 -1.807  0.392  4.974]
    >>> g = dp.gaussian_granularity(3.0)
    >>> bool((x / g == (x / g).round()).all())     # every output is on the grid
    True
    """
    noise = _noise.Gaussian(_v.check_scale(sigma, "gaussian"), integer=False)
    return _sample("gaussian", size, rng, threads, np.float64, noise.fill)


@overload
def discrete_gaussian(sigma: float, size: None = None, *, rng: RngLike = None,
                      threads: int | None = None) -> int: ...
@overload
def discrete_gaussian(sigma: float, size: _Size, *, rng: RngLike = None,
                      threads: int | None = None) -> NDArray[np.int64]: ...
def discrete_gaussian(sigma: float, size: _Size | None = None, *, rng: RngLike = None,
                      threads: int | None = None) -> int | NDArray[np.int64]:
    """discrete_gaussian(sigma, size=None, *, rng=None, threads=None)

    Discrete Gaussian noise: int64 with ``P[Z = z]`` proportional to
    ``exp(-z**2 / (2 sigma**2))``.

    Parameters
    ----------
    sigma : float
        The distribution's parameter, in [2**-900, 2**39]; its variance is below
        ``sigma**2`` and within a relative 1e-12 of it for ``sigma`` >= 2.
    size : int or tuple of ints, optional
        Output shape; ``None`` returns a Python int.
    rng, threads
        As for :func:`laplace` (an int seed is for tests and research only).

    Returns
    -------
    int or ndarray of int64
        Draws of ``Z``, symmetric about 0.

    Raises
    ------
    TypeError
        If ``sigma`` is not a real number (a bool included), or ``size``, ``threads`` or
        ``rng`` is of a kind not accepted (as for :func:`laplace`).
    ValueError
        If ``sigma`` is NaN, infinite or outside [2**-900, 2**39] (the message calls it
        ``'scale'``), or ``size``, ``threads`` or ``rng`` is out of range (as for
        :func:`laplace`).

    Notes
    -----
    The sampler and its floating-point analysis are in the module documentation.

    Examples
    --------
    >>> import dpfast as dp
    >>> z = dp.discrete_gaussian(2.0, 6, rng=1)    # a seed: reproducible, for tests only
    >>> z.dtype
    dtype('int64')
    >>> print(z)
    [ 3  0  0 -4 -2 -3]
    """
    noise = _noise.Gaussian(_v.check_scale(sigma, "discrete_gaussian", high=MAX_DISCRETE_SIGMA),
                            integer=True)
    return _sample("discrete_gaussian", size, rng, threads, np.int64, noise.fill)
