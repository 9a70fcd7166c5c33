"""Graphical-model estimation from noisy marginals (Private-PGM: McKenna, Sheldon & Miklau
2019): one model of the data, a product of potentials on the cliques of a junction tree of
the measured attribute sets, fitted to every measurement; every marginal of the model is
consistent with every other and non-negative by construction.

The model. Attributes ``0..d-1`` with ``shape[i]`` values each; a measurement
(:class:`Measurement`) is a noisy table ``y`` of the marginal on a set ``C`` of attributes,
with noise of standard deviation ``sigma`` on each cell (any noise: Laplace, Gaussian or a
mix, through its standard deviation). The fit minimises

    L(mu) = sum over measurements of ||mu_C - y||^2 / (2 sigma^2)

over the marginals ``mu`` of distributions scaled to the estimated total ``N`` (the tables'
sums, each weighted by its precision), by entropic mirror descent on the potentials (one
table per measured set: ``theta_C <- theta_C - eta * dL/dmu_C``), Nesterov-accelerated with
adaptive restart, the step halved until the loss does not rise. Mirror descent from the
uniform model is the method of Private-PGM; its path matters when the measurements are noisy,
not only its end: the least-squares optimum is not unique (a set of models fit equally), and
descent from the uniform model through the potentials keeps to smooth models. A step
preconditioned cell by cell (iterative proportional fitting's) reaches a low loss sooner but
fits the noise of small cells: on Adult's 28 two-way tables at epsilon = 1 its model's 2-way
error was 0.045 per record at a loss where mirror descent's was 0.036. For the same reason
the fit stops when its loss falls to a fixed fraction of the loss the noise itself has
(:data:`DISCREPANCY`; Morozov's discrepancy principle): run on toward the optimum, the model
fits the noise.

Inference. Belief propagation in log space on the junction tree: each clique's log-table is
the sum of the potentials of the measured sets it holds and of the messages on its
separators, built and summed by :class:`_Clique` over dense float64 arrays (numpy, no Python
per cell). A large clique is split into two groups of attributes ``U x V``: its log-table is
one matrix product ``[C | A | 1] @ [F | 1 | B]^T`` (``A`` the potentials on ``U`` alone,
``B`` on ``V`` alone, ``C`` the potentials crossing the split against one-hot features ``F``
of their ``V`` attributes), and its marginals are ``P @ F``, row and column sums: the
8.2-million-cell clique of all 2-way tables of Adult's 8 columns is evaluated (log-table,
exp and marginals) in 0.017 s, where broadcasting each potential over the clique takes
1.3 s. The split is chosen by a cost model of the two (:meth:`_Clique._cost`). A clique
past :data:`MAX_CLIQUE_CELLS` is refused with its size.

Answers. :meth:`GraphicalModel.marginal` answers any set of attributes: from one clique's
belief when the set lies in one, otherwise by eliminating the other attributes along the
smallest subtree of cliques that covers the set. :meth:`GraphicalModel.synthetic` draws
records: the root clique's cells, then each child's new attributes given its separator, by
systematic sampling of the expected counts in each group (a cell's count is its expected
count rounded up or down: the root clique's cells are within one record of the model's);
then the records are raked to the model's tables on the measured sets, one attribute of a
record moved at a time where it brings those tables nearer. Sampled alone, the records of
one large clique (all 2-way tables of Adult: 8.2 million cells for 32,561 records) missed
the model's 2-way tables by 0.012 per record, their error 1.09 times the model's; raked,
by 0.004, 1.03 times.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .. import _native
from .. import validation as _v

__all__ = ["Measurement", "JunctionTree", "GraphicalModel", "junction_tree", "estimate",
           "MAX_CLIQUE_CELLS"]

#: The largest clique of the junction tree, in cells (2**24 float64 cells: 128 MiB per array,
#: a few arrays per clique during the fit); a larger one is refused with its size.
MAX_CLIQUE_CELLS = 1 << 24
#: Cliques up to this many cells are evaluated by broadcasting (no split).
_SMALL = 1 << 15
#: Cliques past this many cells hold their log-table and beliefs in float32 (the matrix
#: products and exp twice as fast; the products' sums accumulate in float32, about 1e-7
#: relative).
_SINGLE = 1 << 20

_Attrs = tuple[int, ...]
_Table = NDArray[np.float64]


#: Where :func:`estimate` stops by default: at this fraction of the loss the noise itself
#: has in expectation (half the measured cells, each residual in units of its sigma). The
#: path of mirror descent from the uniform model regularises; past this point it fits the
#: noise. All 2-way tables of Adult's 8 columns (2,002 cells), one release each, the 2-way
#: l1 error per record of the fit stopped at each fraction (1.0 / 0.85 / 0.7 / 0.6 / 0.5 /
#: 0.4): epsilon = 0.3: 0.0757 / 0.0689 / 0.0659 (the best) / 0.0751 / 0.0887 / 0.0923;
#: epsilon = 1: 0.0331 / 0.0310 / 0.0293 / 0.0289 (the best) / 0.0303 / 0.0338;
#: epsilon = 3: 0.0151 / 0.0142 / 0.0131 / 0.0127 / 0.0124 (the best) / 0.0127 (the same
#: at the other seeds tried, two or three per epsilon). The least-squares optimum lies far
#: below: a fit run to it has the lower loss and the larger error.
DISCREPANCY = 0.7


class Measurement(NamedTuple):
    """A noisy marginal: ``values`` over the attributes ``clique`` (in that order: one axis
    each), with noise of standard deviation ``sigma`` on every cell."""

    clique: tuple[int, ...]
    values: NDArray[np.float64]
    sigma: float


class JunctionTree(NamedTuple):
    """Cliques (sorted attribute tuples) and the tree's edges as (parent, child), listed from
    the root (clique 0) down: every clique after the first has one parent listed before it."""

    cliques: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, int], ...]


def _cells(shape: Sequence[int], clique: Sequence[int] | set[int] | frozenset[int]) -> int:
    return math.prod(shape[a] for a in clique)


def junction_tree(shape: Sequence[int], cliques: Sequence[Sequence[int]],
                  limit: int = MAX_CLIQUE_CELLS) -> JunctionTree:
    """A junction tree covering every attribute and containing each given clique: the
    graph joining the attributes of each clique, triangulated by eliminating at each step
    the attribute whose elimination adds the fewest cells of fill (ties: the smallest
    clique), its maximal cliques joined by a maximum-weight spanning tree on the
    separators' sizes. A clique past ``limit`` cells is refused (ValueError)."""
    d = len(shape)
    nbrs: list[set[int]] = [set() for _ in range(d)]
    for c in cliques:
        for a in c:
            nbrs[a].update(b for b in c if b != a)
    left = set(range(d))
    found: list[frozenset[int]] = []
    while left:
        def cost(a: int) -> tuple[int, int]:
            group = nbrs[a] & left
            fill = sum(1 for u in group for v in group if u < v and v not in nbrs[u])
            return fill, _cells(shape, group | {a})
        a = min(sorted(left), key=cost)
        group = (nbrs[a] & left) | {a}
        for u in group:
            nbrs[u].update(group - {u})
        found.append(frozenset(group))
        left.remove(a)
    maximal = [c for c in found if not any(c < o for o in found)]
    unique = sorted({tuple(sorted(c)) for c in maximal}, key=lambda c: (-len(c), c))
    for c in unique:
        if _cells(shape, c) > limit:
            raise ValueError(f"The measured attributes need a clique of {_cells(shape, c):,} "
                             f"cells (attributes {c}), more than {limit:,} (the limit: "
                             f"{MAX_CLIQUE_CELLS:,} cells, 128 MiB a table); measure "
                             "smaller or fewer overlapping sets.")
    # Prim's algorithm from clique 0, the heaviest separator first (ties: lowest index).
    inside = {0}
    edges: list[tuple[int, int]] = []
    while len(inside) < len(unique):
        _, neg, new = max((len(set(unique[p]) & set(unique[j])), -p, j)
                          for p in inside for j in range(len(unique)) if j not in inside)
        edges.append((-neg, new))
        inside.add(new)
    return JunctionTree(tuple(unique), tuple(edges))


def model_cells(shape: Sequence[int], cliques: Sequence[Sequence[int]]) -> int:
    """The cells of the junction tree of ``cliques`` (its size as a model), or a number past
    any limit when a clique is past :data:`MAX_CLIQUE_CELLS`."""
    try:
        tree = junction_tree(shape, cliques)
    except ValueError:
        return 1 << 62
    return sum(_cells(shape, c) for c in tree.cliques)


class _Clique:
    """A clique's dense log-table, the sum of tables on subsets of its attributes (``sets``,
    sorted tuples), and the marginals of a table over the clique on those sets.

    The clique's axes are ``U + V`` (each sorted by attribute): a table over the clique is
    a (cells of U, cells of V) matrix. With ``V`` empty (small cliques) it is built by
    broadcasting; otherwise as in the module's docstring."""

    def __init__(self, shape: Sequence[int], attrs: _Attrs, sets: Sequence[_Attrs]) -> None:
        self.attrs = attrs
        self.sets = list(sets)
        sizes = {a: int(shape[a]) for a in attrs}
        self.cells = math.prod(sizes.values())
        by_size = sorted(attrs, key=lambda a: (sizes[a], a))
        best: tuple[float, tuple[int, ...]] = (self._cost(sizes, ()), ())
        if self.cells > _SMALL:
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
        self.groups: dict[_Attrs, tuple[int, int]] = {}
        blocks = []
        width = 0
        if self.V:
            grid = np.indices(self.v_shape).reshape(len(self.V), -1)
            for s in self.sets:
                sv = tuple(a for a in s if a in self.V)
                if sv and len(sv) < len(s) and sv not in self.groups:
                    n = _cells(shape, sv)
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
        self._plans: dict[_Attrs, tuple[Any, ...]] = {}

    def _features(self, dtype: np.dtype[np.floating[Any]] | type) -> NDArray[np.floating[Any]]:
        if self._cast is None or self._cast.dtype != dtype:
            self._cast = self.features.astype(dtype)
        return self._cast

    def _cost(self, sizes: dict[int, int], v: _Attrs) -> float:
        """The time of one evaluation (log-table, exp, marginals) split at ``V = v``, or by
        broadcasting for ``v`` empty, in nanoseconds: a linear model fitted to 69 timings
        of 11 cliques of Adult's models (25,920 to 8.2 million cells, every split the
        search considers; the split it picks with this model took 1.0 to 1.9 times the
        fastest, where the model it replaced picked splits up to 6 times slower and left
        cliques of 0.8 million cells unsplit at 2 to 9 times the time)."""
        single = self.cells > _SINGLE
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

    def _plan(self, s: _Attrs) -> tuple[Any, ...]:
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

    def logits(self, tables: Sequence[_Table]) -> _Table:
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
        dtype = np.float32 if self.cells > _SINGLE else np.float64
        out: NDArray[np.floating[Any]] = np.asarray(left, dtype=dtype) @ np.asarray(
            right.T, dtype=dtype)
        return out  # type: ignore[return-value]  # float32 past _SINGLE cells, by design

    def margins(self, p: _Table, sets: Sequence[_Attrs] | None = None) -> list[_Table]:
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

    def dense(self, p: _Table, attrs: _Attrs) -> _Table:
        """The (nu, nv) table ``p`` with one axis per attribute of ``attrs`` (the clique's,
        in that order)."""
        full = p.reshape(self.u_shape + self.v_shape)
        out: _Table = np.transpose(full, [self.axes.index(a) for a in attrs])
        return out


def _same(a: Sequence[_Table], b: Sequence[_Table]) -> bool:
    """Whether two lists of potentials hold the same arrays (what the cached inference of
    :class:`GraphicalModel` is kept for)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _exponentiate(logits: _Table) -> float:
    """exp(logits - max) in place (every cell in [0, 1], the largest 1); returns the max."""
    top = float(np.max(logits))
    np.subtract(logits, top, out=logits)
    np.exp(logits, out=logits)
    return top


def _logs(tables: Sequence[_Table], top: float) -> list[_Table]:
    """log of tables summed from exp(logits - top): log-sums of the logits, and
    :data:`_IMPOSSIBLE` where a sum underflowed to 0 (finite: a message enters a split
    clique's matrix product, where an infinity times a zero feature is NaN)."""
    with np.errstate(divide="ignore"):
        return [np.where(t > 0, np.log(t) + top, _IMPOSSIBLE) for t in tables]


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

    def __init__(self, shape: Sequence[int], sets: Sequence[_Attrs], total: float,
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
            self._clique.append(_Clique(self.shape, c, own + seps))
        self.potentials = [np.zeros([self.shape[a] for a in s]) for s in self.sets]
        # (the potentials they come from, beliefs, measured marginals), one object: a thread
        # reading the model sees the three together, and only for the potentials it holds.
        self._inferred: tuple[list[_Table], list[_Table], list[_Table]] | None = None

    @property
    def cells(self) -> int:
        """The model's size: the cells of its junction tree's cliques."""
        return sum(_cells(self.shape, c) for c in self.tree.cliques)

    def _sep(self, i: int, j: int) -> _Attrs:
        return tuple(a for a in self.tree.cliques[i] if a in self.tree.cliques[j])

    def set_potentials(self, potentials: Sequence[_Table]) -> None:
        self.potentials = list(potentials)
        found = self._inferred
        if found is not None and not _same(found[0], self.potentials):
            self._inferred = None                # (frees the old beliefs sooner)

    def _tables(self, potentials: list[_Table], i: int, up: dict[int, _Table],
                down: dict[int, _Table]) -> list[_Table]:
        """The clique's factor tables, in its sets' order: its potentials, its children's
        messages, its parent's message (zeros until known)."""
        own = [t for t, h in zip(potentials, self.home) if h == i]
        msgs = [up[j] for j in self.children[i]]
        if i in self.parent:
            msgs.append(down.get(i, np.zeros([self.shape[a]
                                              for a in self._sep(i, self.parent[i])])))
        return own + msgs

    def beliefs(self) -> list[_Table]:
        """Each clique's marginal as a (cells of U, cells of V) matrix summing to ``total``:
        belief propagation in log space, messages up the tree, then down (read-only arrays,
        kept until the potentials change)."""
        return list(self._inference()[1])

    def _inference(self) -> tuple[list[_Table], list[_Table], list[_Table]]:
        """The potentials, the beliefs and the measured sets' marginals (read-only arrays),
        computed once per potentials."""
        potentials = self.potentials
        found = self._inferred
        if found is not None and _same(found[0], potentials):
            return found
        n = len(self.tree.cliques)
        up: dict[int, _Table] = {}
        down: dict[int, _Table] = {}
        # A clique whose every cell holds an impossible term has no mass a float can hold:
        # the model is then undefined (NaN everywhere, as the infinities gave), never a
        # clique made uniform by the finite stand-in for log 0.
        lost = False
        for parent, child in reversed(self.tree.edges):
            p = self._clique[child].logits(self._tables(potentials, child, up, down))
            top = _exponentiate(p)
            lost = lost or not top > _IMPOSSIBLE / 2
            up[child] = _logs(self._clique[child].margins(p, [self._sep(child, parent)]),
                              top)[0]
        out: list[_Table] = [np.zeros(0)] * n
        measured: list[_Table] = [np.zeros(0)] * len(self.sets)
        # The parent's table on each child's separator, to check the child against: where
        # a model's potentials span more than the floats' exponent (a fit to far noisier
        # measurements than the counts), cells underflow unevenly across cliques and
        # neighbours can disagree; such a model is undefined too (NaN), never inconsistent.
        above: dict[int, _Table] = {}
        for i in [0] + [c for _, c in self.tree.edges]:
            p = self._clique[i].logits(self._tables(potentials, i, up, down))
            top = _exponentiate(p)
            lost = lost or not top > _IMPOSSIBLE / 2
            seps = [self._sep(i, j) for j in self.children[i]]
            mine = [self._sep(i, self.parent[i])] if i in self.parent else []
            own = [k for k, h in enumerate(self.home) if h == i]
            # One pass over the clique for its children's messages, its own separator and
            # its measured sets.
            tables = self._clique[i].margins(p, seps + mine + [self.sets[k] for k in own])
            for j, lm in zip(self.children[i], _logs(tables[:len(seps)], top)):
                down[j] = np.where((lm > _IMPOSSIBLE / 2) & (up[j] > _IMPOSSIBLE / 2),
                                   lm - up[j], _IMPOSSIBLE)
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

    def measured_marginals(self) -> list[_Table]:
        """The model's tables on the measured sets (sorted axes), in order (read-only
        arrays, kept until the potentials change)."""
        return list(self._inference()[2])

    def clique_table(self, i: int) -> _Table:
        """Clique ``i``'s belief with one axis per attribute of the clique, sorted."""
        return self._clique[i].dense(self.beliefs()[i], self.tree.cliques[i])

    def marginal(self, attrs: Sequence[int]) -> _Table:
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
                out: _Table = np.transpose(t, [keep.index(a) for a in want])
                return out
        t = self._eliminate(keep)
        out = np.transpose(t, [keep.index(a) for a in want])
        return out

    def _subtree(self, keep: _Attrs) -> list[int]:
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

    def _eliminate(self, keep: _Attrs) -> _Table:
        """The table over ``keep`` (sorted): the subtree's joint, its cliques' beliefs over
        its separators' (each clique's belief first summed to the attributes the rest of
        the subtree or the answer needs), the other attributes eliminated one at a time,
        each time the one whose factors' product is smallest (greedy variable
        elimination)."""
        nodes = self._subtree(keep)
        inside = set(nodes)
        factors: list[tuple[_Attrs, _Table]] = []
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
            result: _Table = np.asarray(np.einsum(*args, optimize=path),
                                        dtype=np.float64) * self.total
            return result
        others = set(involved) - set(keep)
        while others:
            def cost(v: int) -> int:
                return _cells(self.shape, set().union(*(set(a) for a, _ in factors if v in a)))
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
        which value is random). Then, with ``rake`` (up to :data:`RAKE_RECORDS` rows), the
        rows are raked to the model's tables on the measured sets (:func:`_rake`)."""
        if not isinstance(rake, (bool, np.bool_)):
            raise TypeError(f"The 'rake' of synthetic must be a bool; got {type(rake).__name__}.")
        n = int(records)
        out = np.zeros((n, len(self.shape)), dtype=np.int64)
        cliques = self.tree.cliques
        root = cliques[0]
        counts = _systematic(self.clique_table(0).reshape(1, -1) / self.total * n,
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
            s_cells = _cells(self.shape, sep)
            cond = moved.reshape(s_cells, -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                cond = np.where(cond.sum(1, keepdims=True) > 0,
                                cond / cond.sum(1, keepdims=True), 1.0 / cond.shape[1])
            code = np.ravel_multi_index(tuple(out[:, a] for a in sep),
                                        [self.shape[a] for a in sep]) if sep else \
                np.zeros(n, dtype=np.int64)
            sizes = np.bincount(code, minlength=s_cells)
            got = _systematic(cond * sizes[:, None], sizes, generator)
            order = np.argsort(code, kind="stable")
            values = np.repeat(np.tile(np.arange(cond.shape[1]), s_cells), got.ravel())
            cols = np.unravel_index(values, [self.shape[a] for a in new])
            for a, col in zip(new, cols):
                out[order, a] = col
            perm = generator.permutation(n)
            out = out[perm]
        if rake and 0 < n <= RAKE_RECORDS:
            scale = n / self.total
            _rake(out, self.shape, {s: self.marginal(s) * scale for s in self.sets},
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
                precision += 1.0 / (sigma ** 2 * _cells(self.shape, set(s) - want))
        if precision == 0.0:
            return None
        return math.sqrt(2.0 / math.pi) * math.sqrt(1.0 / precision) * _cells(self.shape,
                                                                                want)


def _multiply(a_attrs: _Attrs, a: _Table, b_attrs: _Attrs, b: _Table,
              shape: Sequence[int]) -> tuple[_Attrs, _Table]:
    """The product of two tables over their attributes' union (sorted), by broadcasting."""
    union = tuple(sorted(set(a_attrs) | set(b_attrs)))
    cells = _cells(shape, union)
    if cells > MAX_CLIQUE_CELLS:
        raise ValueError(f"The marginal needs a table of {cells:,} cells (attributes "
                         f"{union}), more than {MAX_CLIQUE_CELLS:,}.")

    def lift(attrs: _Attrs, t: _Table) -> _Table:
        moved = np.transpose(t, [attrs.index(x) for x in union if x in attrs])
        out: _Table = moved.reshape([shape[x] if x in attrs else 1 for x in union])
        return out
    return union, lift(a_attrs, a) * lift(b_attrs, b)


def _systematic(expected: _Table, sizes: NDArray[np.int64],
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


#: The most rows :meth:`GraphicalModel.synthetic` rakes (past it, a cell's rounding is a
#: small part of its table's error, and a pass costs seconds).
RAKE_RECORDS = 1 << 20
#: The most passes of :func:`_rake` over the attributes.
RAKE_PASSES = 20
#: Rows of one block of :func:`_rake`'s gains, times the attribute's size.
_RAKE_BLOCK = 1 << 22


def _rake(rows: NDArray[np.int64], shape: Sequence[int], targets: dict[_Attrs, _Table],
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

    def counts(s: _Attrs) -> _Table:             # the compiled counting kernel
        sizes = [int(shape[b]) for b in s]
        flat = np.ravel_multi_index(tuple(rows[:, b] for b in s), sizes)
        out: _Table = _native.count_codes(flat, math.prod(sizes), 1).reshape(sizes).astype(
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
                    parts: Sequence[tuple[_Table, _Attrs]], shape: Sequence[int],
                    generator: np.random.Generator) -> None:
    """One attribute's moves of :func:`_rake`. ``parts``: each set holding ``a``, as its
    excess (counts minus target) in an (a's values, cells of the other attributes) matrix
    and those other attributes."""
    n = rows.shape[0]

    def cells(others: _Attrs, at: slice | NDArray[np.int64]) -> NDArray[np.int64]:
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


def _total(measurements: Sequence[Measurement]) -> float:
    """The measurements' estimate of the number of records: each table's sum, weighted by
    the inverse of its variance (cells x sigma^2; exact tables weighted alike)."""
    w = np.array([1.0 / (m.values.size * max(m.sigma, 1.0) ** 2) for m in measurements])
    s = np.array([float(np.sum(m.values)) for m in measurements])
    return max(float(np.sum(w * s) / np.sum(w)), 1.0)


def _checked(measurements: Sequence[Measurement], shape: Sequence[int]) -> list[Measurement]:
    """The measurements, each checked against the attributes' sizes ``shape`` (ValueError
    naming the measurement by position; no value is shown)."""
    d = len(shape)
    if d == 0 or any(isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral)
                     or n < 1 for n in shape):
        raise ValueError("The 'shape' of estimate must be the attributes' sizes: positive "
                         f"ints, at least one; got {len(shape)} entries, not all so.")
    out = list(measurements)
    if not out:
        raise ValueError("estimate needs at least one measurement; got none.")
    for i, m in enumerate(out):
        c = tuple(int(a) for a in m.clique)
        values = np.asarray(m.values)
        if len(set(c)) != len(c) or not c or any(not 0 <= a < d for a in c):
            raise ValueError(f"Measurement {i} of estimate must name distinct attributes in "
                             f"0..{d - 1}; got {len(c)} attribute(s) outside or repeated.")
        if values.shape != tuple(shape[a] for a in c):
            raise ValueError(f"Measurement {i} of estimate must be a table of shape "
                             f"{tuple(shape[a] for a in c)} (its attributes' sizes); got "
                             f"shape {values.shape}.")
        if values.dtype.kind not in "iuf" or not np.isfinite(values).all():
            raise ValueError(f"Measurement {i} of estimate must hold finite real numbers.")
        sigma = m.sigma
        if isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, numbers.Real) or \
                not math.isfinite(sigma) or sigma < 0:
            raise ValueError(f"Measurement {i} of estimate must have a finite sigma >= 0 "
                             "(0: an exact table).")
    return out


def _sorted(m: Measurement) -> Measurement:
    order = np.argsort(m.clique)
    return Measurement(tuple(int(m.clique[i]) for i in order),
                       np.transpose(np.asarray(m.values, dtype=np.float64), order),
                       float(m.sigma))


def estimate(measurements: Sequence[Measurement], shape: Sequence[int], *,
             iterations: int = 250, tol: float = 1e-9,
             warm: GraphicalModel | None = None,
             discrepancy: float | None = DISCREPANCY) -> GraphicalModel:
    """The model fitted to ``measurements`` over attributes of sizes ``shape``: accelerated
    entropic mirror descent on the potentials of the measured sets (see the module), from
    the uniform model or from ``warm``'s potentials on the sets they share, stopped after
    ``iterations`` steps, when five steps in a row decrease the loss by less than ``tol``
    (relative), or (unless ``discrepancy`` is None) when the loss falls to ``discrepancy``
    times the noise's own expected loss, half the measured cells: a fit past it fits the
    noise (:data:`DISCREPANCY`). Measurements of the same set are combined first
    (inverse-variance average: the same loss up to a constant)."""
    combined: dict[_Attrs, tuple[_Table, float]] = {}
    for m in map(_sorted, _checked(measurements, shape)):
        if m.clique in combined and 0.0 in (m.sigma, combined[m.clique][1]):
            if m.sigma == 0.0:
                combined[m.clique] = (m.values, 0.0)          # the exact table stands
        elif m.clique in combined:
            v, s = combined[m.clique]
            w1, w2 = 1.0 / s ** 2, 1.0 / m.sigma ** 2
            combined[m.clique] = ((w1 * v + w2 * m.values) / (w1 + w2),
                                  1.0 / math.sqrt(w1 + w2))
        else:
            combined[m.clique] = (m.values, m.sigma)
    if isinstance(iterations, bool) or not isinstance(iterations, numbers.Integral) or \
            iterations < 1:
        raise ValueError(f"The 'iterations' of estimate must be an int >= 1; got {iterations!r}.")
    if discrepancy is not None:
        discrepancy = _v.check_real(discrepancy, "discrepancy", "estimate", low_open=False)
    if warm is not None and warm.shape != tuple(int(n) for n in shape):
        raise ValueError("The 'warm' model of estimate must have the same attributes' sizes "
                         f"as 'shape': {warm.shape} against {tuple(shape)}.")
    ms = [Measurement(c, v, s) for c, (v, s) in combined.items()]
    exact = [m.sigma == 0 for m in ms]
    if any(exact):
        if not all(exact):
            raise ValueError("The measurements of estimate must all be exact (sigma 0) or all "
                             f"noisy (sigma > 0); got {sum(exact)} exact of {len(ms)}.")
        return _fit_exact(ms, shape, iterations, tol)
    model = GraphicalModel(shape, [m.clique for m in ms], _total(ms), [m.sigma for m in ms])
    if warm is not None:
        old = dict(zip(warm.sets, warm.potentials))
        uniform = model.potentials
        model.set_potentials([old.get(s, np.zeros_like(t)).copy()
                              for s, t in zip(model.sets, model.potentials)])
        if not all(np.isfinite(t).all() for t in model.measured_marginals()):
            model.set_potentials(uniform)   # no model a float holds on this tree: start over
    scale = min(m.sigma ** 2 for m in ms) / model.total
    weights = [scale / m.sigma ** 2 for m in ms]

    def at(theta: list[_Table]) -> tuple[float, list[_Table]]:
        model.set_potentials(theta)
        loss, grad = 0.0, []
        for m, w, mu in zip(ms, weights, model.measured_marginals()):
            r = mu - m.values
            loss += 0.5 * float(np.sum(r * r)) / m.sigma ** 2
            grad.append(r * w)
        return loss, grad

    floor = 0.0 if discrepancy is None else \
        float(discrepancy) * sum(m.values.size for m in ms) / 2
    theta = _accelerated(at, model.potentials, iterations, tol, floor)
    model.set_potentials(theta)
    return model


def _accelerated(at: Callable[[list[_Table]], tuple[float, list[_Table]]],
                 theta: list[_Table], steps: int, tol: float,
                 floor: float = 0.0) -> list[_Table]:
    """Accelerated descent from ``theta`` along ``at``'s gradient, one evaluation a step:
    the step is taken from the extrapolated point ``y``; when the loss at ``y`` rises above
    the last one the momentum restarts from the best point (restart on the function value,
    O'Donoghue & Candes 2015). A rise within two steps of a restart is the step's own
    fault, not the momentum's: the step is halved. The step grows by a twentieth a step
    until the first such rise, then holds: a step that kept growing outgrew what the loss
    allows every fifteen steps or so, and each restart dropped the momentum (all 2-way
    tables of Adult at epsilon = 3: 300 steps to a loss of 1.21 times the noise's, where a
    held step reaches 0.87 in 100; the models' errors alike at equal loss). That first cut
    is to 0.4, not 0.5: gradient descent holds up to a step of 2/L (L the loss's largest
    curvature) but momentum only up to about 1/L, and a step that rose after growing was
    1.05 times one that held, so 0.4 of it is within 0.84/L (at 0.5 the momentum restarted
    every eleven steps on Adult). Stopped after ``steps`` steps, when five steps in a row
    gain less than ``tol`` (relative), or at a loss of ``floor`` or less. Returns the best
    potentials found."""
    best, (best_loss, best_grad) = theta, at(theta)
    if not math.isfinite(best_loss):        # no finite loss to descend from
        return best
    y, gy = theta, best_grad
    eta, growth, k, stalled, last = 1.0, 1.05, 0, 0, best_loss
    x_prev = theta
    for _ in range(steps):
        x = [a - eta * b for a, b in zip(y, gy)]
        k += 1
        beta = (k - 1) / (k + 2.0)
        y_new = [a + beta * (a - b) for a, b in zip(x, x_prev)]
        ln, gn = at(y_new)
        if not ln <= last:                  # a rise, or a non-finite loss: restart
            if k <= 2 or not math.isfinite(ln):
                eta *= 0.4 if growth > 1.0 else 0.5
                growth = 1.0
            k = 0
            y, gy, x_prev = best, best_grad, best
            last = best_loss
            stalled += 1
            if eta < 1e-12 or stalled >= 25:
                break
            continue
        stalled = stalled + 1 if best_loss - ln <= tol * best_loss else 0
        if ln < best_loss:
            best, best_loss, best_grad = y_new, ln, gn
        if stalled >= 5 or best_loss <= floor:
            break
        x_prev, y, gy, last = x, y_new, gn, ln
        eta *= growth
    return best


#: The potential of a cell an exact table makes impossible (finite, so that the matrix
#: products of a split clique never multiply an infinity by a zero feature).
_IMPOSSIBLE = -1e30


def _fit_exact(ms: Sequence[Measurement], shape: Sequence[int], sweeps: int,
               tol: float) -> GraphicalModel:
    """The maximum-entropy model whose marginals on the measured sets are the exact tables
    ``ms`` (consistent and non-negative: the measurements at epsilon = infinity):
    iterative proportional fitting from the uniform model, each table's log-ratio to the
    model's marginal added to its potential in turn (zero cells made impossible), stopped
    when a sweep leaves every cell within ``tol`` (relative to the total) of its target, or
    after ``sweeps`` sweeps. Linear convergence: exact tables of Adult are matched to 1e-9
    of the total in tens of sweeps."""
    for m in ms:
        if not np.isfinite(m.values).all() or (m.values < 0).any():
            raise ValueError("The exact tables of estimate (sigma 0) must be finite and "
                             "non-negative.")
    model = GraphicalModel(shape, [m.clique for m in ms], _total(ms), [0.0] * len(ms))
    theta = [t.copy() for t in model.potentials]
    for _ in range(max(sweeps, 1)):
        for k, m in enumerate(ms):
            model.set_potentials(theta)
            mu = model.measured_marginals()[k]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(m.values > 0, np.log(m.values) - np.log(mu), 0.0)
            theta[k] = np.where(m.values > 0, theta[k] + np.nan_to_num(ratio), _IMPOSSIBLE)
        model.set_potentials(theta)
        worst = max(float(np.max(np.abs(mu - m.values)))
                    for mu, m in zip(model.measured_marginals(), ms))
        if worst <= tol * model.total:
            break
    return model
