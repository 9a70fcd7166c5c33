"""Workloads: sets of linear queries over a histogram, as linear operators.

A database is a histogram ``x`` over a universe of ``n`` cells (a numpy array of the
workload's ``domain`` shape); a linear query is a row ``q`` with entries in [0, 1], answered as
``q . x``. A workload is a set of such rows ``W`` (``n_queries`` by ``n_cells``). Each workload
here is an operator, never a matrix: ``answer(x)`` computes ``W x`` and ``adjoint(y)``
computes ``W^T y`` with prefix sums, axis sums or subset-sum transforms, in time about
linear in the number of cells plus answers.

``sensitivity`` is computed from the structure, never declared: the largest column l1 norm
of ``W`` (``max(adjoint(ones))``, the entries being non-negative), which is the l1
sensitivity of the whole answer vector when one record is added or removed (a record adds 1
to one cell). That is the Laplace scale, per unit of epsilon, of answering every query with
independent noise.

The workloads: :class:`Identity` (every cell), :class:`Prefixes` (a CDF), :class:`Ranges`
(every range of a 1-D histogram), :class:`Rectangles` (every rectangle of a 2-D one),
:class:`Marginals` (k-way marginal tables), :class:`Conjunctions` (of boolean attributes)
and :class:`Explicit` (any matrix with entries in [0, 1]). Releases that answer one:
:func:`dpfast.mwem` and :func:`dpfast.smalldb`; :func:`dpfast.marginals` takes a
:class:`Marginals` as its ``workload``.

Examples
--------
Every range of 100 one-year age cells; a record in cell ``i`` is counted by
``(i + 1) * (100 - i)`` ranges, at most 2,550:

>>> import numpy as np
>>> import dpfast as dp
>>> W = dp.workloads.Ranges(100)
>>> W.n_queries, W.sensitivity
(5050, 2550.0)
>>> ages = np.random.default_rng(7).integers(0, 100, size=10_000)
>>> counts = np.bincount(ages, minlength=100)
>>> W.answer(counts)[:3]                    # [0, 1), [0, 2), [0, 3)
array([ 96., 200., 274.])

The 2-way marginal tables of a 2 x 3 x 4 histogram (a record is in one cell of each):

>>> M = dp.workloads.Marginals((2, 3, 4), k=2)
>>> M.n_queries, M.sensitivity
(26, 3.0)
>>> [table.shape for table in M.tables(np.ones((2, 3, 4)))]
[(2, 3), (2, 4), (3, 4)]

A release that answers a workload: MWEM's synthetic histogram for the CDF of the ages
(``rng=0`` makes the example reproducible: a seed is for tests and research only):

>>> acct = dp.Accountant(epsilon=1.0)
>>> rel = dp.mwem(counts, dp.workloads.Prefixes(100), epsilon=1.0, rounds=10, rng=0,
...               accountant=acct)
>>> rel.answers.shape, tuple(acct.spent)
((100,), (1.0, 0.0))
"""
from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

__all__ = ["Workload", "Identity", "Prefixes", "Ranges", "Rectangles", "Marginals",
           "Conjunctions", "Explicit", "MAX_ANSWERS", "TRUSTED",
           "check_trusted"]

# answer() materializes every answer; beyond this many, use the workload's own methods
# (range_sums of a tree release, for instance).
MAX_ANSWERS = 2**28


class Workload:
    """A set of linear queries over a histogram of shape ``domain`` (see the module)."""

    domain: tuple[int, ...]
    n_queries: int

    @property
    def n_cells(self) -> int:
        return math.prod(self.domain)

    @property
    def sensitivity(self) -> float:
        """Largest column l1 norm: how much the answer vector moves, in l1, when one record
        is added or removed."""
        return float(np.max(self._column_norms()))

    def _column_norms(self) -> NDArray[np.float64]:
        return self.adjoint(np.ones(self.n_queries))

    def answer(self, x: ArrayLike) -> NDArray[np.float64]:
        """``W x``: every query's answer, float64, in the workload's order."""
        data = self._check_x(x, "answer")
        if self.n_queries > MAX_ANSWERS:
            raise ValueError(f"{type(self).__name__}.answer would materialize "
                             f"{self.n_queries} answers (more than {MAX_ANSWERS}); answer "
                             "a subset of the queries instead.")
        return self._answer(data)

    def adjoint(self, y: ArrayLike) -> NDArray[np.float64]:
        """``W^T y`` as a flat float64 vector over the cells (C order)."""
        v = _v.as_array(y, "y", f"{type(self).__name__}.adjoint")
        if v.shape != (self.n_queries,):
            raise ValueError(f"The 'y' parameter of {type(self).__name__}.adjoint must have "
                             f"shape ({self.n_queries},). Got shape {v.shape} instead.")
        return self._adjoint(np.asarray(v, dtype=np.float64))

    def query(self, i: int) -> NDArray[np.float64]:
        """Row ``i`` of ``W`` as a dense float64 vector over the cells (C order)."""
        if not 0 <= i < self.n_queries:
            raise IndexError(f"query index {i} out of range for {self.n_queries} queries")
        return self._row(int(i))

    def _row(self, i: int) -> NDArray[np.float64]:
        e = np.zeros(self.n_queries)
        e[i] = 1.0
        return self._adjoint(e)

    def _check_x(self, x: ArrayLike, method: str) -> NDArray[np.float64]:
        func = f"{type(self).__name__}.{method}"
        arr = _v.as_array(x, "x", func)
        if arr.size != self.n_cells or (arr.ndim > 1 and arr.shape != self.domain):
            raise ValueError(f"The 'x' parameter of {func} must be a histogram of shape "
                             f"{self.domain} (or flat, {self.n_cells} cells). Got "
                             f"{_v.describe(arr)} instead.")
        data, _ = _v.check_data(arr, "x", func)
        return np.asarray(data, dtype=np.float64).reshape(-1)

    def _answer(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    def _adjoint(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    def __len__(self) -> int:
        return self.n_queries

    def __repr__(self) -> str:
        return f"{type(self).__name__}(domain={self.domain}, n_queries={self.n_queries})"


def check_domain(domain: object, func: str) -> tuple[int, ...]:
    """The attributes' sizes of a workload's ``domain`` (an int, or a tuple or list of
    positive ints), checked; errors name ``func``."""
    if isinstance(domain, (int, np.integer)) and not isinstance(domain, (bool, np.bool_)):
        domain = (domain,)
    if not isinstance(domain, (tuple, list)) or not domain:
        raise TypeError(f"The 'domain' parameter of {func} must be a tuple of positive "
                        f"integers (the size of each attribute). Got {domain!r} instead.")
    return tuple(_v.check_positive_int(d, "domain", func) for d in domain)


class Identity(Workload):
    """Every cell's count: ``W = I``."""

    def __init__(self, domain: int | Sequence[int]):
        self.domain = check_domain(domain, "Identity")
        self.n_queries = self.n_cells

    def _answer(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.array(x, dtype=np.float64)

    def _adjoint(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.array(y, dtype=np.float64)


class Prefixes(Workload):
    """The ``n`` prefix sums ``x[0] + ... + x[i]`` of a 1-D histogram (a CDF)."""

    def __init__(self, n: int):
        self.domain = (_v.check_positive_int(n, "n", "Prefixes"),)
        self.n_queries = self.domain[0]

    def _answer(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.cumsum(x)

    def _adjoint(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.cumsum(y[::-1])[::-1]


class Ranges(Workload):
    """Every range ``[lo, hi)`` of a 1-D histogram, ``0 <= lo < hi <= n``: n(n+1)/2 queries,
    ordered by ``lo`` then ``hi`` (``bounds()`` gives them)."""

    def __init__(self, n: int):
        self.domain = (_v.check_positive_int(n, "n", "Ranges"),)
        self.n_queries = self.domain[0] * (self.domain[0] + 1) // 2

    def bounds(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(lo, hi) of every query, in order."""
        n = self.domain[0]
        lo, hi = np.triu_indices(n + 1, k=1)
        return lo.astype(np.int64), hi.astype(np.int64)

    def _column_norms(self) -> NDArray[np.float64]:
        i = np.arange(self.domain[0], dtype=np.float64)
        return (i + 1) * (self.domain[0] - i)       # ranges holding cell i

    def _answer(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        c = np.concatenate(([0.0], np.cumsum(x)))
        lo, hi = self.bounds()
        return c[hi] - c[lo]

    def _adjoint(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # W^T y at cell i = sum of y over ranges with lo <= i < hi: add y at lo, remove at hi.
        n = self.domain[0]
        lo, hi = self.bounds()
        delta = np.bincount(lo, y, minlength=n + 1) - np.bincount(hi, y, minlength=n + 1)
        return np.cumsum(delta)[:n]


class Rectangles(Workload):
    """Every axis-aligned rectangle ``[lo0, hi0) x [lo1, hi1)`` of a 2-D histogram: the
    product of the two axes' ranges, ordered as ``Ranges(n0)`` x ``Ranges(n1)``."""

    def __init__(self, shape: Sequence[int]):
        self.domain = check_domain(shape, "Rectangles")
        if len(self.domain) != 2:
            raise ValueError(f"The 'shape' parameter of Rectangles must have two sizes. "
                             f"Got {shape!r} instead.")
        self.axes = (Ranges(self.domain[0]), Ranges(self.domain[1]))
        self.n_queries = self.axes[0].n_queries * self.axes[1].n_queries

    def _column_norms(self) -> NDArray[np.float64]:
        return np.outer(self.axes[0]._column_norms(), self.axes[1]._column_norms()).ravel()

    def _answer(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        # Ranges along axis 1 for every row, then ranges along axis 0 of those.
        along1 = np.stack([self.axes[1]._answer(r) for r in x.reshape(self.domain)])
        c = np.concatenate((np.zeros((1, along1.shape[1])), np.cumsum(along1, axis=0)))
        lo, hi = self.axes[0].bounds()
        return (c[hi] - c[lo]).ravel()

    def _adjoint(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        m = y.reshape(self.axes[0].n_queries, self.axes[1].n_queries)
        left = np.stack([self.axes[0]._adjoint(col) for col in m.T], axis=1)
        return np.stack([self.axes[1]._adjoint(row) for row in left]).ravel()


def _check_attrs(attrs: Any, ndim: int, func: str) -> tuple[tuple[int, ...], ...]:
    try:
        sets = tuple(tuple(sorted({int(a) for a in s})) for s in attrs)
    except TypeError:
        raise TypeError(f"The 'attributes' parameter of {func} must be a sequence of "
                        f"attribute-index tuples. Got {attrs!r} instead.") from None
    if not sets or any(not s or s[0] < 0 or s[-1] >= ndim for s in sets):
        raise ValueError(f"The 'attributes' parameter of {func} must list non-empty sets of "
                         f"attribute indices in [0, {ndim}). Got {attrs!r} instead.")
    return sets


class Marginals(Workload):
    """Marginal tables of a multi-dimensional histogram: every cell of the sum of ``x`` over
    the attributes not in each set. ``k=2`` takes every pair of attributes; ``attributes=``
    lists the sets explicitly. Answers are the tables' cells, table after table (C order)."""

    def __init__(self, domain: Sequence[int], k: int | None = 2, *,
                 attributes: Sequence[Sequence[int]] | None = None):
        func = "Marginals"
        self.domain = check_domain(domain, func)
        d = len(self.domain)
        if attributes is None:
            k = _v.check_positive_int(k, "k", func)
            if k > d:
                raise ValueError(f"The 'k' parameter of {func} must be at most the number "
                                 f"of attributes, {d}. Got {k!r} instead.")
            attributes = list(itertools.combinations(range(d), k))
        self.attributes = _check_attrs(attributes, d, func)
        self.shapes = [tuple(self.domain[a] for a in s) for s in self.attributes]
        self.offsets = np.cumsum([0] + [math.prod(s) for s in self.shapes])
        self.n_queries = int(self.offsets[-1])

    def tables(self, x: ArrayLike) -> list[NDArray[np.float64]]:
        """The marginal tables of ``x``, each of the shape of its attributes."""
        full = self._check_x(x, "tables").reshape(self.domain)
        return marginal_sums(full, self.attributes)

    def _column_norms(self) -> NDArray[np.float64]:
        return np.full(self.n_cells, float(len(self.attributes)))

    def _answer(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        full = x.reshape(self.domain)
        return np.concatenate([t.ravel() for t in marginal_sums(full, self.attributes)])

    def _row(self, i: int) -> NDArray[np.float64]:
        j = int(np.searchsorted(self.offsets, i, side="right")) - 1
        cell = np.unravel_index(i - int(self.offsets[j]), self.shapes[j])
        row = np.zeros(self.domain)
        index = tuple(cell[self.attributes[j].index(a)] if a in self.attributes[j]
                      else slice(None) for a in range(len(self.domain)))
        row[index] = 1.0
        return row.ravel()

    def _adjoint(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.zeros(self.domain)
        for j, (s, shape) in enumerate(zip(self.attributes, self.shapes)):
            table = y[self.offsets[j]:self.offsets[j + 1]].reshape(shape)
            index = tuple(slice(None) if a in s else np.newaxis
                          for a in range(len(self.domain)))
            out += table[index]                      # broadcast over the other attributes
        return out.ravel()


# numpy's reductions and broadcast products are fastest over long contiguous runs: marginal
# sums read a histogram as its leading axes and one trailing block of at least this many
# cells.
BLOCK = 1024


def trailing_block(shape: tuple[int, ...]) -> int:
    """The first axis of the shortest run of trailing axes with at least ``BLOCK`` cells
    (0 when the whole array is smaller)."""
    b, size = len(shape), 1
    while b > 0 and size < BLOCK:
        b -= 1
        size *= shape[b]
    return b


def marginal(x: NDArray[Any], keep: tuple[int, ...]) -> NDArray[Any]:
    """``x`` summed over the axes not in ``keep`` (sorted), of the shape of the kept axes and
    the dtype of ``x``: first over the leading axes, with the trailing block as one long
    contiguous run, then within that (now small) block."""
    shape = x.shape
    b = trailing_block(shape)
    y = x.reshape(shape[:b] + (math.prod(shape[b:]),))
    lead = tuple(a for a in range(b) if a not in keep)
    if lead:                                        # (a sum over no axis would copy x)
        y = y.sum(axis=lead)
    # Within the block, runs of adjacent axes that are all kept or all summed are merged,
    # so that each sum is over one contiguous run.
    runs: list[tuple[bool, int]] = [(True, math.prod(shape[a] for a in keep if a < b))]
    for a in range(b, len(shape)):
        if runs[-1][0] == (a in keep):
            runs[-1] = (a in keep, runs[-1][1] * shape[a])
        else:
            runs.append((a in keep, shape[a]))
    y = y.reshape(tuple(size for _, size in runs))
    summed = tuple(i for i, (kept, _) in enumerate(runs) if not kept)
    y = y.sum(axis=summed) if summed else y.copy()
    return np.asarray(y).reshape(tuple(shape[a] for a in keep))


#: The most cells a shared intermediate of :func:`marginal_sums` may have.
SHARED_CELLS = 2**16


def marginal_sums(x: NDArray[Any], sets: Sequence[tuple[int, ...]], *,
                  shared_cells: int = SHARED_CELLS) -> list[NDArray[Any]]:
    """The marginals of ``x`` over each attribute set (sorted tuples), in order, in a few
    passes over ``x``: the sets are grouped greedily, in order, while the union of a group's
    attributes has at most ``shared_cells`` cells (a set larger than that is a group of its
    own); each group costs one :func:`marginal` of ``x`` over its union, and each of its
    sets a sum over that small array. On the Adult data's 8.2 million cells the 28 two-way
    tables take 5 passes instead of 28."""
    shape = x.shape
    out: list[NDArray[Any]] = [np.empty(0)] * len(sets)
    pending = list(range(len(sets)))
    while pending:
        union, group = set(sets[pending[0]]), [pending[0]]
        for i in pending[1:]:
            wider = union | set(sets[i])
            if math.prod(shape[a] for a in wider) <= shared_cells:
                union = wider
                group.append(i)
        keep = tuple(sorted(union))
        shared = marginal(x, keep)
        for i in group:
            out[i] = shared if sets[i] == keep else np.asarray(shared.sum(
                axis=tuple(p for p, a in enumerate(keep) if a not in sets[i])))
        pending = [i for i in pending if i not in group]
    return out


class Conjunctions(Workload):
    """Conjunctions of boolean attributes over ``{0, 1}^d`` (the domain ``(2,) * d``): for
    each set ``S`` of attributes (every set of size ``k``, or all ``2^d`` sets when ``k`` is
    None), the count of records with every attribute of ``S`` equal to 1. With
    ``negations=True`` every sign pattern of each set is a query (each literal may be
    negated): ``C(d, k) * 2^k`` queries, which are the cells of the k-way marginals."""

    def __init__(self, d: int, k: int | None = None, *, negations: bool = False):
        func = "Conjunctions"
        self.d = _v.check_positive_int(d, "d", func)
        if self.d > 24:
            raise ValueError(f"The 'd' parameter of {func} must be at most 24 (a domain of "
                             f"2^d cells). Got {d!r} instead.")
        self.domain = (2,) * self.d
        self.negations = _v.check_bool(negations, "negations", func)
        if k is not None:
            k = _v.check_positive_int(k, "k", func)
            if k > self.d:
                raise ValueError(f"The 'k' parameter of {func} must be at most d = {self.d}. "
                                 f"Got {k!r} instead.")
        self.k = k
        sets = (list(itertools.combinations(range(self.d), k)) if k is not None else
                [s for r in range(self.d + 1) for s in itertools.combinations(range(self.d), r)])
        self.sets = sets
        if self.negations:
            self._marg = Marginals(self.domain, attributes=[s for s in sets if s]) \
                if any(sets) else None
            self.n_queries = sum(2 ** len(s) for s in sets)
        else:
            self.n_queries = len(sets)
        # The index of each set in the 2^d subset-sum array (bit a set for attribute a).
        self._masks = np.array([sum(1 << (self.d - 1 - a) for a in s) for s in sets],
                               dtype=np.int64)

    def _answer(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.negations:
            parts = [np.array([x.sum()])] if () in self.sets else []
            if self._marg is not None:
                parts.append(self._marg._answer(x))
            return np.concatenate(parts)
        return _zeta(x.reshape(self.domain), self.d)[self._masks]

    def _adjoint(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.negations:
            out = np.zeros(self.n_cells)
            start = 0
            if () in self.sets:
                out += y[0]
                start = 1
            if self._marg is not None:
                out += self._marg._adjoint(y[start:])
            return out
        g = np.zeros(2 ** self.d)
        np.add.at(g, self._masks, y)
        return _zeta_adjoint(g.reshape(self.domain), self.d)


def _zeta(x: NDArray[np.float64], d: int) -> NDArray[np.float64]:
    """f[S] (S as a bit mask, attribute 0 the highest bit) = sum of x over the cells whose
    attributes in S are all 1; the other attributes are summed over. d axis passes."""
    f = x.copy()
    for a in range(d):
        # Along axis a: index 0 of the result means "a not in S" (sum over both values),
        # index 1 means "a in S" (value 1 only).
        lo = np.take(f, 0, axis=a)
        hi = np.take(f, 1, axis=a)
        f = np.stack((lo + hi, hi), axis=a)
    return np.asarray(f.ravel(), dtype=np.float64)


def _zeta_adjoint(g: NDArray[np.float64], d: int) -> NDArray[np.float64]:
    """The transpose of _zeta: cell value = sum of g[S] over the sets S the cell satisfies."""
    f = g.copy()
    for a in range(d):
        s0 = np.take(f, 0, axis=a)      # coefficient of sets without a: both values get it
        s1 = np.take(f, 1, axis=a)      # sets with a: only value 1 gets it
        f = np.stack((s0, s0 + s1), axis=a)
    return np.asarray(f.ravel(), dtype=np.float64)


class Explicit(Workload):
    """Any query matrix, dense or scipy.sparse, with entries in [0, 1]: one query per row,
    one column per cell of ``domain`` (default: 1-D, one cell per column).

    The workload keeps its own canonical, read-only float64 copy of the matrix (``matrix``):
    a dense array, or a CSR matrix whose duplicate entries are summed (a sparse entry given
    twice counts twice in ``W x``, so its effective value is the sum), indices sorted and
    explicit zeros dropped. The [0, 1] check and the sensitivity are computed on that copy;
    the caller's matrix is never modified, and later changes to it do not reach the
    workload. Boolean, complex and object entries are refused (``TypeError``).
    """

    def __init__(self, matrix: Any, domain: Sequence[int] | None = None):
        func = "Explicit"
        try:
            import scipy.sparse as sp
        except ImportError:                          # pragma: no cover - scipy is optional
            sp = None
        m: Any
        if sp is not None and sp.issparse(matrix):
            m = _canonical_sparse(matrix, func)
            rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
            _check_entries(m.data, lambda k: (int(rows[k]), int(m.indices[k])), func)
        else:
            arr = _v.as_array(matrix, "matrix", func)
            if arr.ndim != 2:
                raise ValueError(f"The 'matrix' parameter of {func} must be 2-D (queries by "
                                 f"cells). Got {_v.describe(arr)} instead.")
            if arr.dtype.kind not in "iuf":
                raise TypeError(f"The 'matrix' parameter of {func} must hold real numbers "
                                f"(integer or floating). Got {_v.describe(arr)} instead.")
            m = np.array(arr, dtype=np.float64, order="C")     # always our own copy
            _check_entries(m.ravel(), lambda k: tuple(
                int(i) for i in np.unravel_index(k, m.shape)), func)
            m.flags.writeable = False
        self.matrix = m
        self.n_queries = int(m.shape[0])
        self.domain = check_domain(domain if domain is not None else (m.shape[1],), func)
        if self.n_cells != m.shape[1]:
            raise ValueError(f"The 'domain' parameter of {func} must have as many cells as "
                             f"the matrix has columns ({m.shape[1]}). Got {domain!r} instead.")

    def _answer(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.matrix @ x, dtype=np.float64).ravel()

    def _adjoint(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.matrix.T @ y, dtype=np.float64).ravel()


def _canonical_sparse(matrix: Any, func: str) -> Any:
    """A scipy.sparse matrix or array of any format as a new canonical float64 CSR matrix
    with read-only buffers: duplicates summed, indices sorted, explicit zeros dropped.

    The entries are cast to float64 before anything is summed: COO and CSR sum duplicates
    in the input's dtype, where two int8 entries of 128 wrap to 0 and big integers wrap
    too. The matrix is rebuilt from its coordinates, so that a stale canonical-format flag
    on the caller's object (set, then its index arrays edited in place) is never trusted.
    """
    import scipy.sparse as sp

    kind = np.dtype(matrix.dtype).kind
    if kind not in "iuf":
        what = {"b": "boolean", "c": "complex", "O": "object"}.get(kind, str(matrix.dtype))
        raise TypeError(f"The 'matrix' parameter of {func} must hold real numbers (integer "
                        f"or floating). Got a sparse matrix of {what} entries instead.")
    coo = sp.coo_matrix(matrix)          # a view or a new COO: its arrays are only read
    shape = (int(coo.shape[0]), int(coo.shape[1]))
    data = np.array(coo.data, dtype=np.float64)
    row = np.array(coo.row, dtype=np.int64)
    col = np.array(coo.col, dtype=np.int64)
    # CSR from COO coordinates: duplicates are summed here, in float64.
    m = sp.csr_matrix((data, (row, col)), shape=shape)
    m.sum_duplicates()
    m.sort_indices()
    m.eliminate_zeros()
    for buf in (m.data, m.indices, m.indptr):
        buf.flags.writeable = False
    return m


def _check_entries(values: NDArray[np.float64], position: Any, func: str) -> None:
    """Every entry finite and in [0, 1]; the first bad one described by kind and position
    (``position(k)`` of flat index ``k``), never by value."""
    if not values.size:
        return
    bad = ~((values >= 0) & (values <= 1))          # NaN compares false: bad too
    if not bad.any():
        return
    k = int(np.argmax(bad))
    v = float(values[k])
    kind = ("a NaN" if math.isnan(v) else "an infinite entry" if math.isinf(v)
            else "a negative entry" if v < 0 else "an entry above 1")
    raise ValueError(f"The 'matrix' parameter of {func} must have entries in [0, 1] (linear "
                     "queries; rescale larger ones and their sensitivity yourself). Got "
                     f"{kind} at position {position(k)} instead.")


#: The workload classes whose answers dpfast computes itself, from their structure or a
#: checked canonical matrix. Releases that calibrate noise to a workload's rows (MWEM and
#: PMW use :func:`check_trusted`) accept exactly these types: a subclass can override
#: ``_answer`` or ``_adjoint`` and answer queries of any size under a sensitivity of 1.
TRUSTED = (Identity, Prefixes, Ranges, Rectangles, Marginals, Conjunctions, Explicit)


def check_trusted(workload: object, name: str, func: str) -> None:
    """Refuse (``TypeError``) a workload whose type is not exactly one of :data:`TRUSTED`.

    Parameters
    ----------
    workload : object
        The workload given to ``func``.
    name : str
        The parameter's name, for the message.
    func : str
        The function's name, for the message.

    Raises
    ------
    TypeError
        When ``type(workload)`` is not in ``TRUSTED`` (a subclass is refused too: its
        answers are what the noise is calibrated for).
    """
    if type(workload) not in TRUSTED:
        names = ", ".join(f"workloads.{t.__name__}" for t in TRUSTED)
        raise TypeError(f"The {name!r} parameter of {func} must be one of {names}: not a "
                        "subclass: its answers are what the noise is calibrated for. Got "
                        f"{type(workload).__name__} instead.")
