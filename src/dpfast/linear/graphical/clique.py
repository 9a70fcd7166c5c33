"""A clique of the junction tree as dense arrays: its log-table, the sum of the tables on
subsets of its attributes, built by broadcasting or, for a large clique, as one matrix
product over a split of its attributes; the marginals of a table over the clique; and the
cost model that chooses the split."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .junction import Attrs, Table, count_cells

__all__ = ["Clique", "SMALL", "SINGLE"]

#: Cliques up to this many cells are evaluated by broadcasting (no split).
SMALL = 1 << 15
#: Cliques past this many cells hold their log-table and beliefs in float32 (the matrix
#: products and exp twice as fast; the products' sums accumulate in float32, about 1e-7
#: relative).
SINGLE = 1 << 20


class Clique:
    """A clique's dense log-table, the sum of tables on subsets of its attributes (``sets``,
    sorted tuples), and the marginals of a table over the clique on those sets.

    The clique's axes are ``U + V`` (each sorted by attribute): a table over the clique is
    a (cells of U, cells of V) matrix. With ``V`` empty (small cliques) it is built by
    broadcasting; otherwise as in :mod:`dpfast.linear.graphical`'s docstring."""

    def __init__(self, shape: Sequence[int], attrs: Attrs, sets: Sequence[Attrs]) -> None:
        self.attrs = attrs
        self.sets = list(sets)
        sizes = {a: int(shape[a]) for a in attrs}
        self.cells = math.prod(sizes.values())
        by_size = sorted(attrs, key=lambda a: (sizes[a], a))
        best: tuple[float, tuple[int, ...]] = (self._cost(sizes, ()), ())
        if self.cells > SMALL:
            for j in range(1, len(attrs)):
                v = tuple(sorted(by_size[:j]))
                best = min(best, (self._cost(sizes, v), v))
        self.V = best[1]
        self.U = tuple(a for a in attrs if a not in self.V)
        self.axes = self.U + self.V
        self.u_shape = tuple(sizes[a] for a in self.U)
        self.v_shape = tuple(sizes[a] for a in self.V)
        self.nu, self.nv = math.prod(self.u_shape), math.prod(self.v_shape)
        # One-hot features of the V-parts of the sets crossing the split, one block each.
        self.groups: dict[Attrs, tuple[int, int]] = {}
        blocks = []
        width = 0
        if self.V:
            grid = np.indices(self.v_shape).reshape(len(self.V), -1)
            for s in self.sets:
                sv = tuple(a for a in s if a in self.V)
                if sv and len(sv) < len(s) and sv not in self.groups:
                    n = count_cells(shape, sv)
                    code = np.ravel_multi_index(tuple(grid[self.V.index(a)] for a in sv),
                                                tuple(sizes[a] for a in sv))
                    f = np.zeros((self.nv, n))
                    f[np.arange(self.nv), code] = 1.0
                    blocks.append(f)
                    self.groups[sv] = (width, n)
                    width += n
        self.features = np.concatenate(blocks, axis=1) if blocks else np.zeros((self.nv, 0))
        self.width = width
        self._cast: NDArray[np.floating[Any]] | None = None
        self._plans: dict[Attrs, tuple[Any, ...]] = {}

    def _features(self, dtype: np.dtype[np.floating[Any]] | type) -> NDArray[np.floating[Any]]:
        if self._cast is None or self._cast.dtype != dtype:
            self._cast = self.features.astype(dtype)
        return self._cast

    def _cost(self, sizes: dict[int, int], v: Attrs) -> float:
        """The time of one evaluation (log-table, exp, marginals) split at ``V = v``, or by
        broadcasting for ``v`` empty, in nanoseconds: a linear model fitted to 69 timings
        of 11 cliques of Adult's models (25,920 to 8.2 million cells, every split the
        search considers; the split it picks with this model took 1.0 to 1.9 times the
        fastest, where the model it replaced picked splits up to 6 times slower and left
        cliques of 0.8 million cells unsplit at 2 to 9 times the time)."""
        single = self.cells > SINGLE
        per_cell = 1.8 if single else 5.0          # exp, max, scaling: float32 is SIMD
        if not v:
            return self.cells * (per_cell + 2.8 * len(self.sets))
        nv = math.prod(sizes[a] for a in v)
        nu = self.cells // nv
        parts = [tuple(a for a in s if a in v) for s in self.sets            # crossing sets'
                 if any(a in v for a in s) and not set(s) <= set(v)]         # V-parts
        width = sum(math.prod(sizes[a] for a in sv) for sv in set(parts))
        crossing = sum(math.prod(sizes[a] for a in sv) for sv in parts)
        u_only = sum(1 for s in self.sets if not any(a in v for a in s))
        v_only = sum(1 for s in self.sets if set(s) <= set(v))
        # The two matrix products (BLAS multiply-adds), then numpy's adds and reductions
        # over the (U, width) and V-sized tables.
        return self.cells * (per_cell + (0.014 if single else 0.025) * (2 * width + 2)) \
            + 1.5 * (nu * (crossing + u_only) + nv * v_only)

    def _plan(self, s: Attrs) -> tuple[Any, ...]:
        """How set ``s`` (sorted) lies in the clique, computed once: ``("U", shape to
        broadcast over U, U axes to sum)``, the same for ``"V"``, ``("X", block, its
        (U..., n) shape, U axes to sum, the (sU..., sV...) shape, the transpose to s)``
        for a set crossing the split, ``("D", clique axes to sum, transpose)`` otherwise."""
        found = self._plans.get(s)
        if found is not None:
            return found
        su = tuple(x for x in s if x in self.U)
        sv = tuple(x for x in s if x in self.V)
        plan: tuple[Any, ...]
        if not sv:
            plan = ("U", [self.u_shape[i] if x in s else 1 for i, x in enumerate(self.U)],
                    tuple(i for i, x in enumerate(self.U) if x not in s))
        elif not su:
            plan = ("V", [self.v_shape[i] if x in s else 1 for i, x in enumerate(self.V)],
                    tuple(i for i, x in enumerate(self.V) if x not in s))
        elif sv in self.groups:
            lo, n = self.groups[sv]
            order = su + sv
            plan = ("X", lo, n, [s.index(x) for x in order],
                    [self.u_shape[i] if x in su else 1 for i, x in enumerate(self.U)] + [n],
                    tuple(i for i, x in enumerate(self.U) if x not in s),
                    [self.u_shape[self.U.index(x)] for x in su]
                    + [self.v_shape[self.V.index(x)] for x in sv],
                    [order.index(x) for x in s])
        else:                                   # a set the split was not made for
            order = tuple(x for x in self.axes if x in s)
            plan = ("D", tuple(i for i, x in enumerate(self.axes) if x not in s),
                    [order.index(x) for x in s])
        self._plans[s] = plan
        return plan

    def logits(self, tables: Sequence[Table]) -> Table:
        """The (nu, nv) log-table: the sum of ``tables`` (one per set, in order)."""
        a = np.zeros(self.u_shape)
        b = np.zeros(self.v_shape) if self.V else a
        c = np.zeros(self.u_shape + (self.width,)) if self.width else a
        for s, t in zip(self.sets, tables):
            plan = self._plan(s)
            if plan[0] == "U":
                a += t.reshape(plan[1])
            elif plan[0] == "V":
                b += t.reshape(plan[1])
            else:
                _, lo, n, order, shape = plan[:5]
                c[..., lo:lo + n] += np.transpose(t, order).reshape(shape)
        if not self.V:
            return a.reshape(self.nu, 1)
        left = np.concatenate([c.reshape(self.nu, self.width), a.reshape(self.nu, 1),
                               np.ones((self.nu, 1))], axis=1)
        # A new right factor each call (no buffer shared between threads asking one model).
        right = np.concatenate([self.features, np.ones((self.nv, 1)), b.reshape(self.nv, 1)],
                               axis=1)
        dtype = np.float32 if self.cells > SINGLE else np.float64
        out: NDArray[np.floating[Any]] = np.asarray(left, dtype=dtype) @ np.asarray(
            right.T, dtype=dtype)
        return out  # type: ignore[return-value]  # float32 past SINGLE cells, by design

    def margins(self, p: Table, sets: Sequence[Attrs] | None = None) -> list[Table]:
        """The marginals of the (nu, nv) table ``p`` on ``sets`` (default: the clique's),
        each with its attributes' axes in sorted order."""
        want = self.sets if sets is None else sets
        if not want:
            return []
        pg = np.asarray(p @ self._features(p.dtype), dtype=np.float64).reshape(
            self.u_shape + (self.width,)) if self.width else None
        if pg is not None:          # each row's one-hot block sums to the row's sum
            lo, n = next(iter(self.groups.values()))
            pu = pg[..., lo:lo + n].sum(axis=-1)
        elif self.V:
            pu = p.sum(axis=1, dtype=np.float64).reshape(self.u_shape)
        else:
            pu = np.asarray(p, dtype=np.float64).reshape(self.u_shape)
        pv = np.asarray(np.ones(self.nu, dtype=p.dtype) @ p, dtype=np.float64).reshape(
            self.v_shape) if self.V else None
        out = []
        for s in want:
            plan = self._plan(s)
            if plan[0] == "U":
                t = pu.sum(axis=plan[2]) if plan[2] else pu.copy()
            elif plan[0] == "V":
                assert pv is not None
                t = pv.sum(axis=plan[2]) if plan[2] else pv.copy()
            elif plan[0] == "X":
                assert pg is not None
                _, lo, n, _, _, axes, shape, back = plan
                t = np.transpose(pg[..., lo:lo + n].sum(axis=axes).reshape(shape), back)
            else:
                full = np.asarray(p, dtype=np.float64).reshape(self.u_shape + self.v_shape)
                t = np.transpose(full.sum(axis=plan[1]), plan[2])
            out.append(np.array(t, dtype=np.float64, order="C"))   # 0-d stays 0-d
        return out

    def dense(self, p: Table, attrs: Attrs) -> Table:
        """The (nu, nv) table ``p`` with one axis per attribute of ``attrs`` (the clique's,
        in that order)."""
        full = p.reshape(self.u_shape + self.v_shape)
        out: Table = np.transpose(full, [self.axes.index(a) for a in attrs])
        return out
