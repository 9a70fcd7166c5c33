"""The exact statistics per key of the rows a grouped release keeps: rows, people, sums of
centred values (and squares) on the noise's grids, quantile grid points and the weighted
Gaussian rule's weights.

All are exact integers, so the partial statistics of disjoint pieces of a table add up to
the whole table's (:func:`add_statistics`): :mod:`dpfast.pieces` and :mod:`dpfast.dask`
compute them per piece and release from their sum as the single-machine path does.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .. import _native, records
from .selection import pair_weights
from .specs import GroupPlan, Spec, moment_columns, second_moment

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["KEPT_PAIR", "Grid", "grids", "KeyStatistics", "STATISTICS_BLOCK",
           "key_statistics", "add_statistics", "quantile_bounds"]

#: The flags of a row kept and marking its (person, key) pair (:func:`dpfast.records.bound`).
KEPT_PAIR = 3


class Grid(NamedTuple):
    """The grids (powers of two) a value column's sums are exact on: its centred sum's and,
    for a variance, its centred sum of squares' (None otherwise)."""

    lo: float
    hi: float
    g1: float
    g2: float | None


def grids(gp: GroupPlan, specs: list[Spec], rows: int) -> dict[str, Grid]:
    """Each summed value column's grids, from the plan's noise and the table's length."""
    out = {}
    measures = iter(gp.plan.noisy()[1:])
    for c in moment_columns(specs):
        lo, hi = gp.bounds[c]
        half = (hi - lo) / 2.0
        g1 = records.value_grid(next(measures), half, rows, "GroupBy.agg")
        g2 = None
        if second_moment(specs, c):
            g2 = records.value_grid(next(measures), half * half, rows, "GroupBy.agg")
        out[c] = Grid(lo, hi, g1, g2)
    return out


class KeyStatistics(NamedTuple):
    """What a release needs of the rows kept, per key (all exact, so partial statistics of
    disjoint pieces of the data add up to the whole's): rows, people (pairs marked), and per
    value column the sums of its centred values (and squares) in grid units."""

    rows: NDArray[np.int64]
    people: NDArray[np.int64]
    sums: dict[str, tuple[NDArray[np.int64], NDArray[np.int64] | None]]
    #: per quantile column, ``key << 32 | k`` for each row kept, ``k`` the value's point on
    #: the column's quantile grid (:func:`dpfast.records.quantile_grid`), in any order
    #: (pieces concatenate).
    points: dict[str, NDArray[np.uint64]]
    #: the weighted Gaussian rule's weight of each key (units of 2**-WEIGHT_BITS; None when
    #: the rule is not used)
    weights: NDArray[np.int64] | None = None


#: Rows whose statistics are computed at a time (partial statistics add up exactly): the
#: temporaries of a large table stay a block's.
STATISTICS_BLOCK = 1 << 24


def key_statistics(code: NDArray[np.int64], flags: NDArray[np.uint8],
                   values: dict[str, NDArray[np.float64]], nkeys: int,
                   col_grids: dict[str, Grid],
                   quantile_bounds: dict[str, tuple[float, float]],
                   person: NDArray[np.int64] | None = None) -> KeyStatistics:
    """:class:`KeyStatistics` of rows with key codes ``code`` (in [0, nkeys)) and bounding
    flags ``flags``: sums for the columns of ``col_grids``, grid points for the columns of
    ``quantile_bounds``, and (``person`` given: the rows' people) the weighted Gaussian
    rule's weights. Computed :data:`STATISTICS_BLOCK` rows at a time."""
    weights = None
    if person is not None:
        pairs = np.flatnonzero(flags == KEPT_PAIR)
        weights = records.exact_sums(code[pairs], pair_weights(person[pairs]), 0, nkeys)
    total: KeyStatistics | None = None
    for a in range(0, max(code.size, 1), STATISTICS_BLOCK):
        b = min(a + STATISTICS_BLOCK, code.size)
        part = _block_statistics(code[a:b], flags[a:b], {c: v[a:b] for c, v in values.items()},
                                 nkeys, col_grids, quantile_bounds)
        total = part if total is None else add_statistics(total, part)
    assert total is not None
    return total._replace(weights=weights)


def _block_statistics(code: NDArray[np.int64], flags: NDArray[np.uint8],
                      values: dict[str, NDArray[np.float64]], nkeys: int,
                      col_grids: dict[str, Grid],
                      quantile_bounds: dict[str, tuple[float, float]]) -> KeyStatistics:
    """Rows, people and the exact sums per key in one compiled pass per value column
    (``_native.key_sums``: numpy's clamp, centring and rounding, in numpy's order)."""
    code = np.ascontiguousarray(code, dtype=np.int64)
    flags = np.ascontiguousarray(flags, dtype=np.uint8)
    counted = None                    # rows and people: from any pass, every pass counts them
    sums: dict[str, tuple[NDArray[np.int64], NDArray[np.int64] | None]] = {}
    for c, grid in col_grids.items():
        half = (grid.hi - grid.lo) / 2.0
        g2, k2 = (grid.g2, math.floor(half * half / grid.g2)) if grid.g2 is not None \
            else (1.0, -1)
        rows, people, s1, s2 = _native.key_sums(
            code, flags, np.ascontiguousarray(values[c], dtype=np.float64), nkeys, grid.lo,
            grid.hi, grid.g1, math.floor(half / grid.g1), g2, k2)
        assert s1 is not None
        sums[c] = (s1, s2)
        counted = (rows, people)
    rows, people = counted if counted is not None else \
        _native.key_sums(code, flags, None, nkeys)[:2]
    points = {}
    if quantile_bounds:
        kept = flags != 0
        kcode = code[kept]
        for c, (lo, hi) in quantile_bounds.items():
            g, top = records.quantile_grid(lo, hi)
            k = np.floor((np.clip(values[c][kept], lo, hi) - lo) / g)
            np.clip(k, 0, top, out=k)
            points[c] = (kcode.astype(np.uint64) << np.uint64(32)) | k.astype(np.uint64)
    return KeyStatistics(rows, people, sums, points)


def add_statistics(a: KeyStatistics, b: KeyStatistics) -> KeyStatistics:
    """The statistics of two disjoint sets of rows together (exact: sums of integers in
    float64 below 2**53, grid points concatenated)."""
    sums: dict[str, tuple[NDArray[np.int64], NDArray[np.int64] | None]] = {}
    for c, (s1, s2) in a.sums.items():
        t1, t2 = b.sums[c]
        sums[c] = (s1 + t1, None if s2 is None or t2 is None else s2 + t2)
    points = {c: np.concatenate((p, b.points[c])) for c, p in a.points.items()}
    weights = None if a.weights is None or b.weights is None else a.weights + b.weights
    return KeyStatistics(a.rows + b.rows, a.people + b.people, sums, points, weights)


def quantile_bounds(gp: GroupPlan, specs: list[Spec]) -> dict[str, tuple[float, float]]:
    """The bounds of each column with a quantile to release."""
    return {s.column: gp.bounds[s.column] for s in specs
            if s.stat == "quantile" and s.column is not None}

