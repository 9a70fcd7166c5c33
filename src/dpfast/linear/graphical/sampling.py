"""Synthetic records of a graphical model: systematic sampling of expected counts, and the
raking that moves sampled records toward the model's tables on the measured sets."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ... import _native
from .junction import Attrs, Table

__all__ = ["systematic", "rake", "RAKE_RECORDS", "RAKE_PASSES"]


def systematic(expected: Table, sizes: NDArray[np.int64],
                generator: np.random.Generator) -> NDArray[np.int64]:
    """Integer counts per row of ``expected`` (rows summing to ``sizes``): systematic
    sampling with one uniform offset per row, so each count is its expected count rounded
    down or up and each row sums to its size exactly."""
    cum = np.cumsum(expected, axis=1)
    total = cum[:, -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        cum = np.where(total > 0, cum * (sizes[:, None] / total), 0.0)
    cum[:, -1] = sizes
    u = np.asarray(generator.random(expected.shape[0]))[:, None]
    edges = np.floor(cum + u)
    first = np.floor(u)
    out: NDArray[np.int64] = np.diff(np.concatenate([first, edges], axis=1),
                                     axis=1).astype(np.int64)
    return out


#: The most rows :meth:`~dpfast.linear.graphical.model.GraphicalModel.synthetic` rakes
#: (past it, a cell's rounding is a small part of its table's error, and a pass costs
#: seconds).
RAKE_RECORDS = 1 << 20
#: The most passes of :func:`rake` over the attributes.
RAKE_PASSES = 20
#: Rows of one block of :func:`rake`'s gains, times the attribute's size.
_RAKE_BLOCK = 1 << 22


def rake(rows: NDArray[np.int64], shape: Sequence[int], targets: dict[Attrs, Table],
          generator: np.random.Generator, passes: int = RAKE_PASSES) -> None:
    """Move ``rows`` (in place), one attribute of a row at a time, to bring their counts on
    the sets of ``targets`` nearer those tables in l1 (the sum over the sets): sampled rows
    miss a table by the rounding of each cell, raked rows by less.

    A pass takes the attributes in a random order. For attribute ``a``, each row's gain of
    changing ``a`` to each other value is the decrease, summed over the sets holding ``a``,
    of ``|count - target|`` in the cell it leaves and the cell it enters; each row with a
    positive best gain proposes that move; among rows proposing to leave a cell of a set
    with an excess (or to enter one with a shortfall) of more than half a record, in a
    random order, only as many move as that excess (or shortfall), rounded. Each gain is a
    row's moving alone, so a pass can overshoot where many rows meet in one cell (a sparse
    table, fewer rows than cells): the rows of the best pass are kept, and raking stops at a
    pass that gains less than a thousandth of the distance, or after ``passes``. Capping
    every cell at one move a pass instead was slower on Adult: 20 passes left the records
    1.04-1.05 times the model's 2-way error, against 1.03."""
    sets = [s for s in targets if s]
    movable = [a for a in range(len(shape)) if any(a in s for s in sets) and shape[a] > 1]

    def counts(s: Attrs) -> Table:             # the compiled counting kernel
        sizes = [int(shape[b]) for b in s]
        flat = np.ravel_multi_index(tuple(rows[:, b] for b in s), sizes)
        out: Table = _native.count_codes(flat, math.prod(sizes), 1).reshape(sizes).astype(
            np.float64)
        return out

    def distance() -> float:
        return sum(float(np.abs(counts(s) - targets[s]).sum()) for s in sets)
    best, best_rows = distance(), rows.copy()
    for _ in range(passes if movable else 0):
        for a in generator.permutation(movable):
            _rake_attribute(rows, int(a), int(shape[a]), [
                (np.moveaxis(counts(s) - targets[s], s.index(a), 0).reshape(int(shape[a]), -1),
                 tuple(b for b in s if b != a)) for s in sets if a in s], shape, generator)
        now = distance()
        if now < best:
            gained, best, best_rows[...] = best - now, now, rows
            if gained >= 1e-3 * (best + gained):
                continue
        break
    rows[...] = best_rows


def _rake_attribute(rows: NDArray[np.int64], a: int, size: int,
                    parts: Sequence[tuple[Table, Attrs]], shape: Sequence[int],
                    generator: np.random.Generator) -> None:
    """One attribute's moves of :func:`rake`. ``parts``: each set holding ``a``, as its
    excess (counts minus target) in an (a's values, cells of the other attributes) matrix
    and those other attributes."""
    n = rows.shape[0]

    def cells(others: Attrs, at: slice | NDArray[np.int64]) -> NDArray[np.int64]:
        if not others:
            return np.zeros(len(rows[at, a]), dtype=np.int64)
        out: NDArray[np.int64] = np.ravel_multi_index(
            tuple(rows[at, b] for b in others), [int(shape[b]) for b in others])
        return out
    gains = [(np.abs(x) - np.abs(x + 1.0), np.abs(x) - np.abs(x - 1.0)) for x, _ in parts]
    best = np.zeros(n, dtype=np.int64)
    gain = np.zeros(n)
    step = max(1, _RAKE_BLOCK // size)
    for lo in range(0, n, step):                 # the gains by blocks of rows
        block = slice(lo, min(n, lo + step))
        v = rows[block, a]
        here = np.arange(v.size)
        g = np.zeros((v.size, size))
        for (enter, leave), (_, others) in zip(gains, parts):
            c = cells(others, block)
            g += enter[:, c].T + leave[v, c][:, None]
            g[here, v] -= enter[v, c] + leave[v, c]          # staying gains nothing
        best[block] = np.argmax(g, axis=1)
        gain[block] = g[here, best[block]]
    movers = generator.permutation(np.flatnonzero(gain > 0))
    ok = np.ones(movers.size, dtype=bool)
    v, w = rows[movers, a], best[movers]
    for excess, others in parts:
        c = cells(others, movers)
        out, into = excess[v, c], excess[w, c]
        ok &= (out <= 0.5) | (_rank_in_group(v * excess.shape[1] + c) < np.round(out))
        ok &= (into >= -0.5) | (_rank_in_group(w * excess.shape[1] + c) < np.round(-into))
    rows[movers[ok], a] = w[ok]


def _rank_in_group(key: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each entry's rank among the entries with its key, in the order given."""
    order = np.argsort(key, kind="stable")
    k = key[order]
    start = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    rank = np.arange(k.size) - np.repeat(start, np.diff(np.r_[start, k.size]))
    out = np.empty_like(rank)
    out[order] = rank
    return out
