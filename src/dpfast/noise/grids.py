"""The parameters of the noise: grid steps, sampler limits and floating-point terms.

The analysis behind them is :mod:`dpfast.samplers`' docstring: Laplace outputs on a grid of a
power of two (:func:`laplace_grid`), Gaussian outputs on theirs (:func:`gaussian_grid`), the
floating-point terms of the privacy bounds (:func:`eta`, :func:`gaussian_fp_error`,
:func:`gaussian_fp_loss`), and the grids of releases of real cells from their rounding budget
(:data:`ROUNDING_SHARE`).
"""
from __future__ import annotations

import math

from .. import _native


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


def pow2_floor(x: float) -> float:
    """The largest power of two <= x (x > 0, finite)."""
    m, e = math.frexp(x)
    return math.ldexp(0.5, e)


def pow2_ceil(x: float) -> float:
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


def real_gaussian_grid(sigma: float, l2: float, cells: int) -> float:
    """The grid of Gaussian noise of ``sigma`` for real cells of which a record changes at
    most ``cells`` by ``l2`` in all (see :data:`ROUNDING_SHARE`)."""
    g = min(gaussian_grid(sigma), pow2_floor(ROUNDING_SHARE * l2 / math.sqrt(max(cells, 1))))
    return max(g, pow2_ceil(sigma * 2.0**-39))
