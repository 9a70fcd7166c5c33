"""Inference in a graphical model: belief propagation in log space on its junction tree, the
marginal of any set of attributes (from one clique's belief, or by variable elimination
over the smallest subtree that holds it), the expected error of a table, and synthetic
records drawn from the model."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .clique import Clique
from .junction import (MAX_CLIQUE_CELLS, Attrs, JunctionTree, Table, count_cells,
                       junction_tree)
from .sampling import RAKE_RECORDS, systematic
from .sampling import rake as rake_rows      # (synthetic's keyword 'rake' is a bool)

__all__ = ["GraphicalModel", "IMPOSSIBLE"]

#: The potential of a cell an exact table makes impossible (finite, so that the matrix
#: products of a split clique never multiply an infinity by a zero feature).
IMPOSSIBLE = -1e30


def _same(a: Sequence[Table], b: Sequence[Table]) -> bool:
    """Whether two lists of potentials hold the same arrays (what the cached inference of
    :class:`GraphicalModel` is kept for)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _exponentiate(logits: Table) -> float:
    """exp(logits - max) in place (every cell in [0, 1], the largest 1); returns the max."""
    top = float(np.max(logits))
    np.subtract(logits, top, out=logits)
    np.exp(logits, out=logits)
    return top


def _logs(tables: Sequence[Table], top: float) -> list[Table]:
    """log of tables summed from exp(logits - top): log-sums of the logits, and
    :data:`IMPOSSIBLE` where a sum underflowed to 0 (finite: a message enters a split
    clique's matrix product, where an infinity times a zero feature is NaN)."""
    with np.errstate(divide="ignore"):
        return [np.where(t > 0, np.log(t) + top, IMPOSSIBLE) for t in tables]


class GraphicalModel:
    """A fitted model: potentials on the measured sets, held by the cliques of a junction
    tree, scaled to ``total`` records.

    Attributes
    ----------
    shape : tuple of int
        The attributes' sizes.
    tree : JunctionTree
    total : float
        The model's number of records (the measurements' estimate).
    sets : list of tuple of int
        The measured sets (sorted), each with its potential in ``potentials``.
    sigmas : list of float
        Each measured set's noise standard deviation (inf where unknown).
    """

    def __init__(self, shape: Sequence[int], sets: Sequence[Attrs], total: float,
                 sigmas: Sequence[float] | None = None, tree: JunctionTree | None = None) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.sets = [tuple(sorted(int(a) for a in s)) for s in sets]
        self.total = float(total)
        self.sigmas = [math.inf] * len(self.sets) if sigmas is None else \
            [float(x) for x in sigmas]
        self.tree = junction_tree(self.shape, self.sets) if tree is None else tree
        cliques = self.tree.cliques
        self.home = [next(i for i, c in enumerate(cliques) if set(s) <= set(c))
                     for s in self.sets]
        self.parent: dict[int, int] = {c: p for p, c in self.tree.edges}
        self.children: dict[int, list[int]] = {i: [] for i in range(len(cliques))}
        for parent, child in self.tree.edges:
            self.children[parent].append(child)
        self._clique = []
        for i, c in enumerate(cliques):
            own = [s for s, h in zip(self.sets, self.home) if h == i]
            seps = [self._sep(i, j) for j in self.children[i]]
            if i in self.parent:
                seps.append(self._sep(i, self.parent[i]))
            self._clique.append(Clique(self.shape, c, own + seps))
        self.potentials = [np.zeros([self.shape[a] for a in s]) for s in self.sets]
        # (the potentials they come from, beliefs, measured marginals), one object: a thread
        # reading the model sees the three together, and only for the potentials it holds.
        self._inferred: tuple[list[Table], list[Table], list[Table]] | None = None

    @property
    def cells(self) -> int:
        """The model's size: the cells of its junction tree's cliques."""
        return sum(count_cells(self.shape, c) for c in self.tree.cliques)

    def _sep(self, i: int, j: int) -> Attrs:
        return tuple(a for a in self.tree.cliques[i] if a in self.tree.cliques[j])

    def set_potentials(self, potentials: Sequence[Table]) -> None:
        self.potentials = list(potentials)
        found = self._inferred
        if found is not None and not _same(found[0], self.potentials):
            self._inferred = None                # (frees the old beliefs sooner)

    def _tables(self, potentials: list[Table], i: int, up: dict[int, Table],
                down: dict[int, Table]) -> list[Table]:
        """The clique's factor tables, in its sets' order: its potentials, its children's
        messages, its parent's message (zeros until known)."""
        own = [t for t, h in zip(potentials, self.home) if h == i]
        msgs = [up[j] for j in self.children[i]]
        if i in self.parent:
            msgs.append(down.get(i, np.zeros([self.shape[a]
                                              for a in self._sep(i, self.parent[i])])))
        return own + msgs

    def beliefs(self) -> list[Table]:
        """Each clique's marginal as a (cells of U, cells of V) matrix summing to ``total``:
        belief propagation in log space, messages up the tree, then down (read-only arrays,
        kept until the potentials change)."""
        return list(self._inference()[1])

    def _inference(self) -> tuple[list[Table], list[Table], list[Table]]:
        """The potentials, the beliefs and the measured sets' marginals (read-only arrays),
        computed once per potentials."""
        potentials = self.potentials
        found = self._inferred
        if found is not None and _same(found[0], potentials):
            return found
        n = len(self.tree.cliques)
        up: dict[int, Table] = {}
        down: dict[int, Table] = {}
        # A clique whose every cell holds an impossible term has no mass a float can hold:
        # the model is then undefined (NaN everywhere, as the infinities gave), never a
        # clique made uniform by the finite stand-in for log 0.
        lost = False
        for parent, child in reversed(self.tree.edges):
            p = self._clique[child].logits(self._tables(potentials, child, up, down))
            top = _exponentiate(p)
            lost = lost or not top > IMPOSSIBLE / 2
            up[child] = _logs(self._clique[child].margins(p, [self._sep(child, parent)]),
                              top)[0]
        out: list[Table] = [np.zeros(0)] * n
        measured: list[Table] = [np.zeros(0)] * len(self.sets)
        # The parent's table on each child's separator, to check the child against: where
        # a model's potentials span more than the floats' exponent (a fit to far noisier
        # measurements than the counts), cells underflow unevenly across cliques and
        # neighbours can disagree; such a model is undefined too (NaN), never inconsistent.
        above: dict[int, Table] = {}
        for i in [0] + [c for _, c in self.tree.edges]:
            p = self._clique[i].logits(self._tables(potentials, i, up, down))
            top = _exponentiate(p)
            lost = lost or not top > IMPOSSIBLE / 2
            seps = [self._sep(i, j) for j in self.children[i]]
            mine = [self._sep(i, self.parent[i])] if i in self.parent else []
            own = [k for k, h in enumerate(self.home) if h == i]
            # One pass over the clique for its children's messages, its own separator and
            # its measured sets.
            tables = self._clique[i].margins(p, seps + mine + [self.sets[k] for k in own])
            for j, lm in zip(self.children[i], _logs(tables[:len(seps)], top)):
                down[j] = np.where((lm > IMPOSSIBLE / 2) & (up[j] > IMPOSSIBLE / 2),
                                   lm - up[j], IMPOSSIBLE)
            scale = self.total / float(p.sum())
            p *= scale
            for j, t in zip(self.children[i], tables[:len(seps)]):
                above[j] = t * scale
            if mine:
                gap = float(np.max(np.abs(tables[len(seps)] * scale - above[i]), initial=0.0))
                single = p.dtype == np.float32 or out[self.parent[i]].dtype == np.float32
                lost = lost or not gap <= (1e-4 if single else 1e-7) * self.total
            for k, t in zip(own, tables[len(seps) + len(mine):]):
                measured[k] = t * scale
            out[i] = p
        if lost:
            for t in out + measured:
                t.fill(np.nan)
        for t in out + measured:
            t.flags.writeable = False
        self._inferred = (potentials, out, measured)
        return self._inferred

    def measured_marginals(self) -> list[Table]:
        """The model's tables on the measured sets (sorted axes), in order (read-only
        arrays, kept until the potentials change)."""
        return list(self._inference()[2])

    def clique_table(self, i: int) -> Table:
        """Clique ``i``'s belief with one axis per attribute of the clique, sorted."""
        return self._clique[i].dense(self.beliefs()[i], self.tree.cliques[i])

    def marginal(self, attrs: Sequence[int]) -> Table:
        """The model's table over ``attrs`` (one axis each, in the order given): from one
        clique's belief when they lie in one, otherwise by eliminating the other attributes
        along the smallest subtree of cliques that holds them all."""
        want = tuple(int(a) for a in attrs)
        if len(set(want)) != len(want) or any(not 0 <= a < len(self.shape) for a in want):
            raise ValueError(f"The attributes of a marginal must be distinct, each in 0.."
                             f"{len(self.shape) - 1}; got {len(want)} attributes.")
        keep = tuple(sorted(want))
        for i, c in enumerate(self.tree.cliques):
            if set(keep) <= set(c):
                t = self._clique[i].margins(self.beliefs()[i], [keep])[0]
                out: Table = np.transpose(t, [keep.index(a) for a in want])
                return out
        t = self._eliminate(keep)
        out = np.transpose(t, [keep.index(a) for a in want])
        return out

    def _subtree(self, keep: Attrs) -> list[int]:
        """The cliques of the smallest subtree holding every attribute of ``keep``, listed
        from its top down."""
        cliques = self.tree.cliques
        need = {next(i for i, c in enumerate(cliques) if a in c) for a in keep}
        depth = {0: 0}
        for p, c in self.tree.edges:
            depth[c] = depth[p] + 1
        nodes = set(need)
        frontier = set(need)
        # Climb from the deepest toward the top until one node remains on the frontier.
        while len(frontier) > 1:
            deepest = max(frontier, key=lambda i: (depth[i], i))
            frontier.remove(deepest)
            up = self.parent[deepest]
            nodes.add(up)
            frontier.add(up)
        order = [0] + [c for _, c in self.tree.edges]
        return [i for i in order if i in nodes]

    def _eliminate(self, keep: Attrs) -> Table:
        """The table over ``keep`` (sorted): the subtree's joint, its cliques' beliefs over
        its separators' (each clique's belief first summed to the attributes the rest of
        the subtree or the answer needs), the other attributes eliminated one at a time,
        each time the one whose factors' product is smallest (greedy variable
        elimination)."""
        nodes = self._subtree(keep)
        inside = set(nodes)
        factors: list[tuple[Attrs, Table]] = []
        for i in nodes:
            c = self.tree.cliques[i]
            seps = [self._sep(i, j) for j in self.children[i] if j in inside]
            if i != nodes[0]:
                up = self._sep(i, self.parent[i])
                seps.append(up)
                table = self._clique[i].margins(self.beliefs()[i], [up])[0] / self.total
                with np.errstate(divide="ignore", invalid="ignore"):
                    # (a subnormal cell's inverse would overflow: its mass is taken as 0)
                    factors.append((up, np.where(table >= np.finfo(np.float64).tiny,
                                                 1.0 / table, 0.0)))
            need = set(keep).union(*map(set, seps))
            attrs = tuple(a for a in c if a in need)
            factors.append((attrs, self._clique[i].margins(self.beliefs()[i], [attrs])[0]
                            / self.total))
        involved = sorted(set().union(*(set(a) for a, _ in factors)))
        if len(involved) <= 52:
            # One contraction, numpy's greedy path with its intermediates bounded: the
            # product of the factors is never built whole.
            index = {a: i for i, a in enumerate(involved)}
            args: list[Any] = []
            for a, t in factors:
                args += [t, [index[x] for x in a]]
            args.append([index[x] for x in keep])
            path = np.einsum_path(*args, optimize=("greedy", MAX_CLIQUE_CELLS))[0]
            result: Table = np.asarray(np.einsum(*args, optimize=path),
                                        dtype=np.float64) * self.total
            return result
        others = set(involved) - set(keep)
        while others:
            def cost(v: int) -> int:
                return count_cells(self.shape, set().union(*(set(a) for a, _ in factors if v in a)))
            v = min(sorted(others), key=cost)
            touching = [f for f in factors if v in f[0]]
            factors = [f for f in factors if v not in f[0]]
            attrs, table = touching[0]
            for a2, t2 in touching[1:]:
                attrs, table = _multiply(attrs, table, a2, t2, self.shape)
            table = table.sum(axis=attrs.index(v))
            factors.append((tuple(a for a in attrs if a != v), table))
            others.remove(v)
        attrs, table = factors[0]
        for a2, t2 in factors[1:]:
            attrs, table = _multiply(attrs, table, a2, t2, self.shape)
        assert attrs == keep
        result = table * self.total
        return result

    def synthetic(self, records: int, generator: np.random.Generator, *,
                  rake: bool = True) -> NDArray[np.int64]:
        """``records`` rows of attribute codes (int64, one column per attribute) drawn from
        the model: the root clique's cells by systematic sampling of their expected counts,
        then, down the tree, each clique's new attributes within each group of rows sharing
        a separator value, the same way (rows shuffled first: which row of a group gets
        which value is random). Then, with ``rake`` (up to
        :data:`~dpfast.linear.graphical.sampling.RAKE_RECORDS` rows), the rows are raked to
        the model's tables on the measured sets
        (:func:`~dpfast.linear.graphical.sampling.rake`)."""
        if not isinstance(rake, (bool, np.bool_)):
            raise TypeError(f"The 'rake' of synthetic must be a bool; got {type(rake).__name__}.")
        n = int(records)
        out = np.zeros((n, len(self.shape)), dtype=np.int64)
        cliques = self.tree.cliques
        root = cliques[0]
        counts = systematic(self.clique_table(0).reshape(1, -1) / self.total * n,
                             np.array([n]), generator)[0]
        cells = np.repeat(np.arange(counts.size), counts)
        generator.shuffle(cells)
        for a, col in zip(root, np.unravel_index(cells, [self.shape[a] for a in root])):
            out[:, a] = col
        for p, c in self.tree.edges:
            sep = self._sep(c, p)
            new = tuple(a for a in cliques[c] if a not in sep)
            if not new:
                continue
            table = self.clique_table(c)          # axes: the clique's (sorted)
            moved = np.transpose(table, [cliques[c].index(a) for a in sep + new])
            s_cells = count_cells(self.shape, sep)
            cond = moved.reshape(s_cells, -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                cond = np.where(cond.sum(1, keepdims=True) > 0,
                                cond / cond.sum(1, keepdims=True), 1.0 / cond.shape[1])
            code = np.ravel_multi_index(tuple(out[:, a] for a in sep),
                                        [self.shape[a] for a in sep]) if sep else \
                np.zeros(n, dtype=np.int64)
            sizes = np.bincount(code, minlength=s_cells)
            got = systematic(cond * sizes[:, None], sizes, generator)
            order = np.argsort(code, kind="stable")
            values = np.repeat(np.tile(np.arange(cond.shape[1]), s_cells), got.ravel())
            cols = np.unravel_index(values, [self.shape[a] for a in new])
            for a, col in zip(new, cols):
                out[order, a] = col
            perm = generator.permutation(n)
            out = out[perm]
        if rake and 0 < n <= RAKE_RECORDS:
            scale = n / self.total
            rake_rows(out, self.shape, {s: self.marginal(s) * scale for s in self.sets},
                  generator)
        return out

    def expected_error(self, attrs: Sequence[int]) -> float | None:
        """The expected l1 error of the table over ``attrs`` where the model is exact on the
        measurements: that of the inverse-variance average of the measurements holding
        ``attrs`` (each summed to it: variance sigma^2 times the cells summed), sqrt(2/pi)
        standard deviations per cell (Gaussian noise). None where no measurement holds
        them: no bound is stated."""
        want = set(int(a) for a in attrs)
        if not want or any(not 0 <= a < len(self.shape) for a in want):
            raise ValueError("The attributes of expected_error must be some of 0.."
                             f"{len(self.shape) - 1}.")
        precision = 0.0
        for s, sigma in zip(self.sets, self.sigmas):
            if want <= set(s):
                precision += 1.0 / (sigma ** 2 * count_cells(self.shape, set(s) - want))
        if precision == 0.0:
            return None
        return math.sqrt(2.0 / math.pi) * math.sqrt(1.0 / precision) * count_cells(self.shape,
                                                                                want)


def _multiply(a_attrs: Attrs, a: Table, b_attrs: Attrs, b: Table,
              shape: Sequence[int]) -> tuple[Attrs, Table]:
    """The product of two tables over their attributes' union (sorted), by broadcasting."""
    union = tuple(sorted(set(a_attrs) | set(b_attrs)))
    cells = count_cells(shape, union)
    if cells > MAX_CLIQUE_CELLS:
        raise ValueError(f"The marginal needs a table of {cells:,} cells (attributes "
                         f"{union}), more than {MAX_CLIQUE_CELLS:,}.")

    def lift(attrs: Attrs, t: Table) -> Table:
        moved = np.transpose(t, [attrs.index(x) for x in union if x in attrs])
        out: Table = moved.reshape([shape[x] if x in attrs else 1 for x in union])
        return out
    return union, lift(a_attrs, a) * lift(b_attrs, b)
