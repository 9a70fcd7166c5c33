"""Exact sums on a grid and their noise.

Values are put in whole units of the noise's grid and summed as integers; integer noise is
added in the same units (:func:`units`, :func:`value_grid`, :func:`noisy_sum`).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import _native, noise

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._release import Keys


#: The largest exact sum, in grid units: a table whose rows could reach it is refused.
EXACT = 2**62


def units(x: NDArray[np.float64], centre: float, half: float, g: float) -> NDArray[np.int64]:
    """``x - centre`` in whole units of ``g`` (a power of two: the grid of the sum's noise),
    rounded, within ``+-floor(half / g)``: each value's contribution is at most ``half`` in
    magnitude. Sums of units are exact integers (:func:`exact_sums`)."""
    k = math.floor(half / g)
    u = np.rint((x - centre) / g)
    np.clip(u, -k, k, out=u)
    return u.astype(np.int64)


#: A value is at most 2**UNIT_BITS units of its sum's grid.
UNIT_BITS = 30


def value_grid(m: noise.Measure, half: float, rows: int, func: str) -> float:
    """The grid of a sum: its noise's grid, or the power of two that keeps a value within
    ``2**UNIT_BITS`` units if that is coarser -- from the budget and the bounds only, never
    the data. A table of ``rows`` rows whose sum could pass :data:`EXACT` units is refused
    (more than 2**32 rows; the refusal reads the table's length)."""
    g = max(m.noise.g, 2.0 ** (math.ceil(math.log2(half)) - UNIT_BITS))
    if rows * math.floor(half / g) >= EXACT:
        raise ValueError(f"{func}: {rows:,} rows at this budget and these bounds could pass "
                         f"2**62 units of the sum's grid ({g!r}); split the table.")
    return g


def exact_sums(code: NDArray[np.int64], u: NDArray[np.int64], k: int,
               nkeys: int) -> NDArray[np.int64]:
    """Sums of the integers ``u`` (each in [-k, k], below 2**62 with k) per code, exact in
    int64: ``u + k`` in three parts of 21 bits, each part's sums exact in float64 (below
    2**32 rows a key). numpy's way to the sums :func:`dpfast._native.key_sums` makes in
    one pass (the weighted rule's weights use it; the tests check the kernel against it)."""
    shifted = u + k
    total = np.zeros(nkeys, dtype=np.int64)
    for shift in (42, 21, 0):
        part = (shifted >> shift) & 0x1FFFFF
        total += np.bincount(code, weights=part, minlength=nkeys).astype(np.int64) << shift
    return total - k * np.bincount(code, minlength=nkeys).astype(np.int64)


def _unit_noise(m: noise.Measure, g: float) -> noise.Laplace | noise.Gaussian:
    """The measurement's noise in whole units of the grid ``g`` (a power of two at least
    its own): discrete Laplace of parameter ``scale / g``, or discrete Gaussian of
    ``sigma / g`` -- on integer sums whose sensitivity in units is the measurement's divided
    by ``g`` (exactly: values are clamped to whole units), the same privacy."""
    if isinstance(m.noise, noise.Laplace):
        return noise.Laplace(m.noise.scale / g, True)
    return noise.Gaussian(m.noise.sigma / g, True)


def noisy_sum(m: noise.Measure, key: _native.Key, total_units: NDArray[np.int64],
              g: float) -> NDArray[np.float64]:
    """``(total_units + K) * g``: integer noise ``K`` in units of the grid added to the exact
    integer sums, then scaled (a float's rounding of the released integer is
    post-processing)."""
    out = np.array(total_units, dtype=np.int64)
    _unit_noise(m, g).fill(key, 1, out, out)
    scaled: NDArray[np.float64] = out.astype(np.float64) * g
    return scaled


def noisy_count(m: noise.Measure, key: _native.Key,
                counts: NDArray[np.int64]) -> NDArray[np.int64]:
    out: NDArray[np.int64] = np.array(counts, dtype=np.int64)
    m.noise.fill(key, 1, out, out)
    return out


def noisy_total(m: noise.Measure, keys: Keys, u: NDArray[np.int64], g: float) -> float:
    """The noisy sum of the units ``u`` (exact int64 sum: |u| below 2**62 / rows)."""
    return float(noisy_sum(m, keys.next(), np.array([int(u.sum())], dtype=np.int64), g)[0])
