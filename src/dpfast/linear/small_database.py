"""SmallDB (Dwork & Roth, section 4.1): the exponential mechanism over every small database.

A database is a histogram ``x`` over a universe of ``n`` cells; the queries are the rows
``q`` of a :class:`~dpfast.linear.workloads.Workload`, with entries in [0, 1]. SmallDB
releases one database ``y`` of ``m = ceil(ln|Q| / alpha**2)`` records (a count vector over
the cells summing to ``m``), chosen by the exponential mechanism among all
``C(n + m - 1, m)`` of them, and scales it to the number of records.

Utility and privacy. With ``T`` records, the utility of ``y`` is

    u(y) = -max_q |q.x - (T/m) q.y|,

which is ``T`` times the textbook's ``-max_q |q(x) - q(y)|`` on normalised queries
(``q(x) = q.x / ||x||_1``, ``q(y) = q.y / m``). ``T`` is never taken from the data:

- ``total=T`` given: ``T`` is public, as in bounded differential privacy (neighbouring
  databases have the same size, one record replaced by another). Replacing, adding or
  removing one record moves each ``q.x`` by at most 1 and ``T`` not at all, so ``u`` has
  sensitivity 1 and the exponential mechanism at ``epsilon`` is epsilon-DP. The accuracy
  bound assumes ``T == counts.sum()``; a ``total`` computed from the data is only private in
  the bounded sense.
- ``total=None``: a fraction :data:`TOTAL_FRACTION` of epsilon buys a noisy count
  ``N = ||x||_1 + Z`` (``Z`` discrete Laplace, sensitivity 1), released as ``.total`` after
  clamping at 0; the rest runs the exponential mechanism with ``T = N``. Given the released
  ``N`` the utility again has sensitivity 1 under adding or removing a record, so the pair is
  epsilon-DP by (adaptive) sequential composition.

Selection. The candidates are enumerated block by block in a fixed order (below), their
utilities computed with numpy, and each block goes to the compiled selection kernel with
Gumbel noise of scale ``2/epsilon`` (exactly the exponential mechanism,
``P[y] proportional to exp(epsilon u(y) / 2)``; see :mod:`dpfast.mechanisms.selection`).
Every block is scored against the common shift 0 (``u <= 0``) and each kernel call draws a
fresh key from the generator, so the noise of different blocks is independent and the
block winner with the largest noisy score is the winner over all candidates: the exact
exponential mechanism, with memory for one block. A block is :data:`SELECT_BLOCK`
candidates, a constant, so a seed gives the same database whatever the thread count and
however the utilities are computed (in work arrays of about 2**18 elements, any size).

Floating point. The selection module's analysis applies with ``max u`` replaced by the
shift 0: the privacy loss is at most ``epsilon + 4 * 763 * d`` with
``d = (|u| / scale + 800) * 2**-50`` and ``|u| <= ||x||_1 + T``; for example below 3e-6
for a million records at epsilon 1. Utilities are sums in a fixed order, so they do not
depend on the work arrays' size.

Enumeration. A multiset of ``m`` of the ``n`` cells is a choice of ``k`` of the
``n + m - 1`` positions of a stars-and-bars word: the ``m`` stars (``k = m``; star ``j``,
from 0, at position ``b_j`` is a record in cell ``b_j - j``) or the ``n - 1`` bars
(``k = n - 1``; cell ``i`` holds the stars between bars ``i - 1`` and ``i``), whichever is
fewer. Candidate ``r`` is the ``k``-combination of colexicographic rank ``r``
(``r = sum_j C(b_j, j + 1)``), unranked for a whole block at once with one ``searchsorted``
per position. Its utility is ``-max_q`` of the absolute sum of rows of
``V = (T/m) W^T - (W x)/m``: one row per record (stars), or each cell's row times its count
(bars). A candidate costs about ``min(m, n)`` row additions of ``|Q|`` numbers, and the
release about ``C(n + m - 1, m) * min(m, n) * |Q|`` operations. More than
``max_candidates`` candidates is refused before anything is spent.

Accuracy (Theorem 4.5 and :func:`smalldb_error_bound`). With probability at least
``1 - beta`` the normalised error ``max_q |q.x - q.synthetic| / ||x||_1`` is at most

    alpha + 2 (m ln n + ln(1/beta)) / (epsilon ||x||_1)

with a public total equal to ``||x||_1`` (the textbook's ``ln|Q| / alpha**2`` is the integer
``m``; ``n**m`` bounds the number of candidates), and

    alpha + (ln(4/beta) / epsilon_N + 2 (m ln n + ln(2/beta)) / epsilon_EM) / ||x||_1

with a noisy total (``epsilon_N = TOTAL_FRACTION * epsilon``, ``epsilon_EM`` the rest; the
noisy count is off by ``|Z|``, which moves the best candidate's utility by at most ``|Z|``).
``alpha`` is there because some database of size ``m`` answers every query to within
``alpha`` (Theorem 4.2, by Hoeffding's inequality and a union bound, which needs
``2 |Q| exp(-2 m alpha**2) < 1``: true for the textbook ``m`` when ``|Q| >= 3``; for one or
two queries :func:`smalldb_size` takes the least ``m`` for which it holds).
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from .. import _native
from .. import noise as _noise
from .. import validation as _v
from .._release import Keys, release
from ..noise import Laplace
from ..samplers import MAX_DISCRETE_SCALE
from .workloads import Workload

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["smalldb", "SmallDBRelease", "smalldb_error_bound", "smalldb_size",
           "TOTAL_FRACTION", "MAX_CANDIDATES", "SELECT_BLOCK"]

#: Fraction of epsilon spent on the noisy number of records when ``total`` is not given.
#: It balances the two data-dependent terms of the error bound (``ln(4/beta)/epsilon_N``
#: against ``2 (m ln n + ln(2/beta))/epsilon_EM``) for typical small problems.
TOTAL_FRACTION = 0.2
#: Default largest number of candidate databases (about 3.4e7).
MAX_CANDIDATES = 2**25
#: Candidates per selection-kernel call (each call draws a fresh key): part of what a seed
#: means, so a constant.
SELECT_BLOCK = 16 * _native.CHUNK
# Largest dense query matrix (cells x queries) built from the workload.
_MAX_MATRIX = 2**25
# Elements of the (candidates x queries) work arrays: memory only, the output is the same.
_WORK = 2**18
# Counts above this many records would make the noisy total inexact.
_MAX_RECORDS = 2**52


def smalldb_size(n_queries: int, alpha: float) -> int:
    """smalldb_size(n_queries, alpha)

    The number ``m`` of records of SmallDB's candidate databases: the textbook's
    ``ceil(ln|Q| / alpha**2)``, or, for one or two queries, the least ``m`` with
    ``2 |Q| exp(-2 m alpha**2) < 1`` if that is larger (so that some database of size ``m``
    answers every query to within ``alpha``).

    Examples
    --------
    >>> from dpfast.linear import smalldb_size
    >>> smalldb_size(100, 0.5), smalldb_size(1, 0.5)
    (19, 2)
    """
    func = "smalldb_size"
    return _size(_v.check_positive_int(n_queries, "n_queries", func),
                 _v.check_real(alpha, "alpha", func, high=1.0), func)


def _size(n_queries: int, alpha: float, func: str) -> int:
    textbook = math.log(n_queries) / alpha / alpha
    hoeffding = math.log(2 * n_queries) / 2 / alpha / alpha
    if not textbook <= 2.0**53:
        raise ValueError(f"The 'alpha' parameter of {func} is too small: databases of "
                         f"ln|Q|/alpha^2 = {textbook:g} records. Got {alpha!r} instead.")
    return max(math.ceil(textbook), math.floor(hoeffding) + 1)


def smalldb_error_bound(n_cells: int, n_queries: int, total: float, epsilon: float,
                        alpha: float, beta: float, *, known_total: bool = True) -> float:
    """smalldb_error_bound(n_cells, n_queries, total, epsilon, alpha, beta, *, known_total=True)

    Theorem 4.5: with probability at least ``1 - beta``, SmallDB's normalised error
    ``max_q |q.x - q.synthetic| / ||x||_1`` is at most the returned value.

    Parameters
    ----------
    n_cells, n_queries : int
        The size of the universe ``|X|`` and the number of queries ``|Q|``, each >= 1.
    total : float
        The number of records ``||x||_1``, > 0 (with ``known_total``, the public total
        passed to :func:`smalldb`, which must equal it).
    epsilon, alpha : float
        As passed to :func:`smalldb`: ``epsilon`` > 0, ``alpha`` in (0, 1).
    beta : float
        Failure probability, in (0, 1).
    known_total : bool, optional
        True for a release with a public ``total``: ``alpha + 2 (m ln|X| + ln(1/beta)) /
        (epsilon ||x||_1)``, the textbook bound with its ``ln|Q| / alpha**2`` the integer
        ``m`` (:func:`smalldb_size`). False for ``total=None``, where a fraction
        :data:`TOTAL_FRACTION` of epsilon buys a noisy total: ``alpha + (ln(4/beta) /
        epsilon_N + 2 (m ln|X| + ln(2/beta)) / epsilon_EM) / ||x||_1``.

    Returns
    -------
    float
        The bound on the normalised error (a fraction of the number of records). Nothing is
        charged or drawn.

    Raises
    ------
    TypeError
        If ``n_cells`` or ``n_queries`` is not an int (a bool included); ``total``,
        ``epsilon``, ``alpha`` or ``beta`` is not a real number; or ``known_total`` is not a
        bool.
    ValueError
        If ``n_cells`` or ``n_queries`` is outside [1, 2**62]; ``total`` or ``epsilon`` is
        NaN, infinite or <= 0; ``alpha`` or ``beta`` is not in (0, 1); or ``alpha`` is so
        small that ``ln|Q| / alpha**2`` exceeds 2**53 records.

    Examples
    --------
    >>> import dpfast as dp
    >>> round(dp.smalldb_error_bound(16, 100, 10_000, 1.0, 0.5, 0.05), 4)
    0.5111
    >>> round(dp.smalldb_error_bound(16, 100, 10_000, 1.0, 0.5, 0.05, known_total=False), 4)
    0.5163
    """
    func = "smalldb_error_bound"
    n = _v.check_positive_int(n_cells, "n_cells", func)
    m = _size(_v.check_positive_int(n_queries, "n_queries", func),
              _v.check_real(alpha, "alpha", func, high=1.0), func)
    t = _v.check_real(total, "total", func)
    eps = _v.check_epsilon(epsilon, func)
    b = _v.check_real(beta, "beta", func, high=1.0)
    log_range = m * math.log(n)                 # ln n**m >= ln(number of candidates)
    if _v.check_bool(known_total, "known_total", func):
        return float(alpha) + 2.0 * (log_range + math.log(1.0 / b)) / (eps * t)
    eps_total = TOTAL_FRACTION * eps
    eps_em = eps - eps_total
    return float(alpha) + (math.log(4.0 / b) / eps_total
                           + 2.0 * (log_range + math.log(2.0 / b)) / eps_em) / t


@dataclasses.dataclass(repr=False)
class SmallDBRelease:
    """The result of :func:`smalldb`.

    Attributes
    ----------
    database : ndarray of int64
        The chosen database: a count per cell (the shape of ``counts``) summing to ``m``.
    synthetic : ndarray of float64
        ``database * total / m``: a synthetic histogram of ``total`` records.
    answers : ndarray of float64
        Every query's answer on ``synthetic``, in the workload's order.
    total : float
        The number of records: the public ``total``, or the noisy count (clamped at 0).
    known_total : bool
        Whether ``total`` was public (given) or bought with part of epsilon.
    m, n_candidates : int
        Records per candidate database, and the number of candidates.
    epsilon, alpha : float
        As passed to :func:`smalldb`.
    n_cells, n_queries : int
        ``|X|`` and ``|Q|``.

    Everything here is post-processing of the one private choice (and the noisy total).

    Examples
    --------
    >>> import numpy as np, dpfast as dp
    >>> from dpfast import smalldb
    >>> from dpfast.linear.workloads import Identity
    >>> rel = smalldb(np.array([40, 10, 50]), Identity(3), epsilon=1.0, alpha=0.5,
    ...               rng=2, accountant=dp.Accountant())
    >>> rel.known_total, int(rel.database.sum()) == rel.m
    (False, True)
    >>> round(rel.error_bound(0.05, total=100), 3)       # the true number of records
    0.949
    """

    database: NDArray[np.int64]
    synthetic: NDArray[np.float64]
    answers: NDArray[np.float64]
    total: float
    known_total: bool
    m: int
    n_candidates: int
    epsilon: float
    alpha: float
    n_queries: int

    @property
    def n_cells(self) -> int:
        return int(self.database.size)

    def error_bound(self, beta: float, total: float | None = None) -> float:
        """The :func:`smalldb_error_bound` of this release at failure probability ``beta``.

        ``total`` is the true number of records ``||x||_1``: by default the public total,
        and required when the total was noisy (the bound is a statement about the data,
        which the release does not know).
        """
        if total is None:
            if not self.known_total:
                raise ValueError("SmallDBRelease.error_bound needs the true number of records "
                                 "('total') when the release's total was noisy.")
            total = self.total
        return smalldb_error_bound(self.n_cells, self.n_queries, total, self.epsilon,
                                   self.alpha, beta, known_total=self.known_total)

    def __repr__(self) -> str:
        return (f"SmallDBRelease(m={self.m}, n_candidates={self.n_candidates}, "
                f"total={self.total!r}, known_total={self.known_total})")


def smalldb(counts: ArrayLike, queries: Workload, *, epsilon: float, alpha: float,
            total: float | None = None, accountant: AccountantLike | None = None,
            rng: RngLike = None, threads: int | None = None,
            max_candidates: int = MAX_CANDIDATES) -> SmallDBRelease:
    """smalldb(counts, queries, *, epsilon, alpha, total=None, accountant=None, rng=None, threads=None, max_candidates=MAX_CANDIDATES)

    SmallDB: a database of ``m = ceil(ln|Q| / alpha**2)`` records chosen by the exponential
    mechanism among all of them, with utility ``-max_q |q.x - (T/m) q.y|`` (see the module).
    Its answers to every query are accurate to about ``alpha`` plus
    ``2 m ln|X| / (epsilon ||x||_1)`` (relative to the number of records), whatever the
    number of queries; the cost is exponential in ``m``, so it suits small universes.

    Parameters
    ----------
    counts : array_like of non-negative whole numbers
        The histogram: one count per cell, the workload's ``domain`` shape (or flat).
    queries : dpfast.linear.workloads.Workload
        The linear queries, with entries in [0, 1].
    epsilon : float
        Privacy parameter; all of it is charged, once, before anything is drawn.
    alpha : float
        In (0, 1): sets ``m`` (:func:`smalldb_size`) and the first term of the error bound.
    total : float, optional
        A public number of records (bounded DP; it should equal ``counts.sum()``). None: a
        fraction :data:`TOTAL_FRACTION` of epsilon buys a noisy count (discrete Laplace).
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism` (an int seed is for tests and research
        only); the output for a given generator state does not depend on ``threads``.
    max_candidates : int, optional
        Refuse (ValueError, nothing spent) when there are more candidate databases,
        ``C(|X| + m - 1, m)``, than this.

    Returns
    -------
    SmallDBRelease
        ``.database`` (counts summing to ``m``), ``.synthetic`` (scaled to ``.total``),
        ``.answers``, ``.m``, ``.n_candidates``, ``.error_bound(beta)``.

    Raises
    ------
    TypeError
        If ``queries`` is not a :class:`~dpfast.linear.workloads.Workload`; ``epsilon``,
        ``alpha`` or ``total`` is not a real number (a bool included); ``max_candidates``
        or ``threads`` is not an int; ``counts`` is not numeric data (a masked array
        included); ``accountant`` is not an accountant; or ``rng`` is not one of the
        accepted kinds.
    ValueError
        If ``epsilon`` is NaN, infinite or <= 0; ``alpha`` is not in (0, 1) or too small
        (``ln|Q| / alpha**2`` beyond 2**53); ``total`` is not in (0, 2**62);
        ``max_candidates`` is outside [1, 2**62]; ``counts`` has neither the workload's
        shape nor its number of cells, holds a NaN, infinite, negative or fractional entry
        (the message gives its position, not the count) or sums to more than 2**52; the
        workload has no query, entries outside [0, 1] or too many cells x queries; there
        are more than ``max_candidates`` candidate databases; epsilon gives a noise scale
        outside the samplers' range; ``threads`` is outside [1, 1024]; or ``rng`` is a
        negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    Prefix counts of a four-cell histogram, with a public total of 100 records
    (``rng=0``: reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> from dpfast.linear.workloads import Prefixes
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> rel = dp.smalldb(np.array([30, 10, 0, 60]), Prefixes(4), epsilon=1.0, alpha=0.6,
    ...                  total=100, rng=0, accountant=acct)
    >>> rel.m, rel.n_candidates, rel.database.tolist(), acct.spent
    (4, 35, [1, 1, 0, 2], (1.0, 0.0))
    >>> rel.answers.tolist()      # the truth: [30, 40, 40, 100]
    [25.0, 50.0, 50.0, 100.0]
    """
    func = "smalldb"
    eps = _v.check_epsilon(epsilon, func)
    a = _v.check_real(alpha, "alpha", func, high=1.0)
    public = None if total is None else _v.check_real(total, "total", func, high=2.0**62)
    limit = _v.check_positive_int(max_candidates, "max_candidates", func, high=2**62)
    problem = _problem(counts, queries, eps, a, public, limit, func)
    index, used = release(func, accountant, eps, 0.0, rng, threads, problem.candidates.size,
                          _select, problem, keys=True)

    # Post-processing of the choice.
    database = problem.candidates.counts(np.array([index], dtype=np.int64))[0]
    database = database.reshape(np.shape(counts))
    synthetic = database * (used / problem.candidates.m)
    return SmallDBRelease(database, synthetic, queries.answer(synthetic), used,
                          public is not None, problem.candidates.m, problem.candidates.size,
                          eps, a, queries.n_queries)


# -- argument checks ------------------------------------------------------------------------

def _check_counts(counts: ArrayLike, queries: Workload, func: str) -> NDArray[np.int64]:
    """The histogram as flat int64 counts: the workload's shape (or flat), finite,
    non-negative, whole, at most 2**52 records."""
    arr = _v.as_array(counts, "counts", func)           # refuses masked arrays
    if arr.shape != queries.domain and arr.shape != (queries.n_cells,):
        raise ValueError(f"The 'counts' parameter of {func} must have the workload's shape "
                         f"{queries.domain} (or be flat, {queries.n_cells} cells). Got "
                         f"{_v.describe(arr)} instead.")
    data, _ = _v.check_data(arr, "counts", func)         # numeric and finite
    flat = data.reshape(-1)
    bad = (flat < 0) | (flat != np.floor(flat))
    if bad.any():
        what = "is negative" if flat[np.argmax(bad)] < 0 else "is not a whole number"
        raise ValueError(f"The 'counts' parameter of {func} must hold non-negative whole "
                         f"numbers (counts of records). Got "
                         f"{_v.entry_at(bad.reshape(data.shape), what)} instead.")
    if float(flat.sum(dtype=np.float64)) > _MAX_RECORDS:
        raise ValueError(f"The 'counts' parameter of {func} must sum to at most 2**52 "
                         "records. Got a larger sum instead.")
    return flat.astype(np.int64)


def _problem(counts: ArrayLike, queries: Workload, eps: float, alpha: float,
             public: float | None, limit: int, func: str) -> _Problem:
    """Check the data and the workload, count the candidates (refusing too many), and set
    the scales: everything before the charge."""
    if not isinstance(queries, Workload):
        raise TypeError(f"The 'queries' parameter of {func} must be a "
                        "dpfast.linear.workloads.Workload. Got "
                        f"{_v.describe(queries)} instead.")
    x = _check_counts(counts, queries, func)
    if queries.n_queries < 1:
        raise ValueError(f"The 'queries' parameter of {func} must have at least one query. "
                         f"Got {queries!r} instead.")
    m = _size(queries.n_queries, alpha, func)
    _check_candidates(x.size, m, limit, func)
    matrix = _dense_transpose(queries, func)
    eps_total, t = 0.0, 0.0
    if public is None:
        eps_total = TOTAL_FRACTION * eps
        t = _v.check_mechanism_scale(1.0, eps_total, func, high=MAX_DISCRETE_SCALE)
    eps_em = eps - eps_total
    # Noise scale 2/eps_em >= 2**-899 and |u| < 2**63: scaled utilities stay finite.
    _v.check_mechanism_scale(1.0, eps_em, func)
    return _Problem(_Candidates(x.size, m), matrix, queries.answer(x), int(x.sum()), public,
                    t, eps_em / 2.0)


def _check_candidates(n: int, m: int, limit: int, func: str) -> None:
    """Refuse more than ``limit`` candidates, C(n + m - 1, m) (counted without huge
    numbers)."""
    size, k = n + m - 1, min(m, n - 1)
    count, cap = 1, max(limit, 10**30)
    for i in range(1, k + 1):                # C(size - k + i, i), increasing in i
        count = count * (size - k + i) // i
        if count > cap:
            break
    if count <= limit:
        return
    if count > cap:
        digits = (math.lgamma(size + 1) - math.lgamma(k + 1)
                  - math.lgamma(size - k + 1)) / math.log(10)
        shown = f"about 10^{digits:.1f}"
    else:
        shown = str(count)
    raise ValueError(f"{func} would choose among {shown} candidate databases "
                     f"(C({n} + {m} - 1, {m}): {n} cells, m = {m} records each), more than "
                     f"max_candidates = {limit}. Use a larger alpha (smaller m), fewer cells, "
                     "or raise max_candidates (the time grows with the count).")


def _dense_transpose(queries: Workload, func: str) -> NDArray[np.float64]:
    """W^T as a dense (cells, queries) float64 array, checked to have entries in [0, 1]:
    built from whichever of cells or queries is fewer (answers of unit histograms, or the
    queries' rows)."""
    n, q = queries.n_cells, queries.n_queries
    if n * q > _MAX_MATRIX:
        raise ValueError(f"The 'queries' parameter of {func} must have at most {_MAX_MATRIX} "
                         f"cells x queries (a dense matrix is built). Got {n} cells and {q} "
                         "queries instead.")
    if n <= q:
        matrix = np.stack([queries.answer(_unit(n, i)) for i in range(n)])
    else:
        matrix = np.stack([queries.query(i) for i in range(q)], axis=1)
    if not (np.all(np.isfinite(matrix)) and matrix.min() >= 0 and matrix.max() <= 1):
        raise ValueError(f"The 'queries' parameter of {func} must have entries in [0, 1] "
                         f"(normalised linear queries). Got entries in [{matrix.min()!r}, "
                         f"{matrix.max()!r}] instead.")
    return np.ascontiguousarray(matrix, dtype=np.float64)


def _unit(n: int, i: int) -> NDArray[np.float64]:
    e = np.zeros(n)
    e[i] = 1.0
    return e


# -- enumeration ----------------------------------------------------------------------------

class _Candidates:
    """The multisets of ``m`` of ``n`` cells, numbered by the colexicographic rank of their
    stars-and-bars combination (see the module): the ``k = min(m, n - 1)`` positions of the
    stars (``by_cells``) or of the bars among ``n + m - 1``."""

    def __init__(self, n: int, m: int):
        self.n, self.m = n, m
        self.positions = n + m - 1
        self.by_cells = m <= n - 1
        self.k = m if self.by_cells else n - 1
        self.size = math.comb(self.positions, self.k)
        # tables[j][b] = C(b, j) for b < positions and j >= 2 (C(b, 1) = b needs none):
        # C(b, j) = sum over i < b of C(i, j - 1).
        self.tables: dict[int, NDArray[np.int64]] = {}
        column = np.arange(self.positions if self.k > 1 else 0, dtype=np.int64)
        for j in range(2, self.k + 1):
            column = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(column)[:-1]))
            self.tables[j] = column

    def combinations(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """The ascending positions (one row per rank) of the combinations of these ranks."""
        rest = ranks.copy()
        out = np.empty((ranks.size, self.k), dtype=np.int64)
        for j in range(self.k, 1, -1):        # the largest b with C(b, j) <= rest
            b = np.searchsorted(self.tables[j], rest, side="right") - 1
            out[:, j - 1] = b
            rest -= self.tables[j][b]
        if self.k:
            out[:, 0] = rest                   # C(b, 1) = b
        return out

    def digits(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """Each candidate's cells, one per record (``by_cells``), or its count per cell."""
        pos = self.combinations(ranks)
        if self.by_cells:
            return pos - np.arange(self.k, dtype=np.int64)
        bars = np.empty((ranks.size, self.k + 2), dtype=np.int64)
        bars[:, 0], bars[:, 1:-1], bars[:, -1] = -1, pos, self.positions
        return bars[:, 1:] - bars[:, :-1] - 1          # the stars between bars

    def counts(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """Each candidate's count per cell."""
        digits = self.digits(ranks)
        if not self.by_cells:
            return digits
        out = np.zeros((ranks.size, self.n), dtype=np.int64)
        np.add.at(out, (np.arange(ranks.size)[:, None], digits), 1)
        return out


# -- the release ----------------------------------------------------------------------------

@dataclasses.dataclass
class _Problem:
    """Everything the release needs, all checked: the candidates, ``W^T`` (cells, queries),
    the true answers ``W x``, the number of records, the public total (None: noisy), the
    noisy total's discrete Laplace scale and the selection's ``epsilon / 2``."""

    candidates: _Candidates
    matrix: NDArray[np.float64]
    answers: NDArray[np.float64]
    records: int
    total: float | None
    total_scale: float
    inv_scale: float

    def utilities(self, offsets: NDArray[np.float64], lo: int,
                  hi: int) -> NDArray[np.float64]:
        """u of candidates lo..hi-1: -max_q |sum over records of offsets[cell]|, where
        ``offsets = (T/m) W^T - (W x)/m`` (rows of cells, one per record, sum to
        ``(T/m) W y - W x``)."""
        cand = self.candidates
        digits = cand.digits(np.arange(lo, hi, dtype=np.int64))
        work = np.empty((hi - lo, offsets.shape[1]))
        tmp = np.empty_like(work)
        if cand.by_cells:
            np.take(offsets, digits[:, 0], axis=0, out=work)
            for j in range(1, cand.m):
                work += np.take(offsets, digits[:, j], axis=0, out=tmp)
        else:
            np.multiply(digits[:, :1], offsets[0], out=work)
            for i in range(1, cand.n):
                work += np.multiply(digits[:, i:i + 1], offsets[i], out=tmp)
        np.abs(work, out=work)
        best: NDArray[np.float64] = np.max(work, axis=1)
        return np.negative(best, out=best)


def _select(keys: Keys, threads: int,
            problem: _Problem) -> tuple[int, float]:
    """The release (after the charge): the noisy total if needed, then the exponential
    mechanism over every candidate, block by block. Returns (candidate, total used)."""
    total = problem.total
    if total is None:
        # total_scale was checked (finite, within the discrete sampler's range) before the
        # charge, so making the noise cannot fail here.
        noisy = Laplace(problem.total_scale, integer=True).scalar(keys.next(), threads,
                                                                  problem.records)
        total = float(max(int(noisy), 0))
    m = problem.candidates.m
    offsets = problem.matrix * (total / m) - problem.answers / m
    count = problem.candidates.size
    width = max(offsets.shape[1], problem.candidates.k + 2)     # work and digits arrays
    step = max(1, min(SELECT_BLOCK, _WORK // width))
    best, top = -1, -math.inf
    for lo in range(0, count, SELECT_BLOCK):
        hi = min(lo + SELECT_BLOCK, count)
        u = np.concatenate([problem.utilities(offsets, s, min(s + step, hi))
                            for s in range(lo, hi, step)])
        score, i = _noise.noisy_max_score(keys.next(), threads, u, _native.NOISE_GUMBEL, 0.0,
                                           problem.inv_scale)
        if score > top:                        # the first block wins a tie
            best, top = lo + i, score
    return best, total

