"""MWEM: the multiplicative weights exponential mechanism (Hardt, Ligett & McSherry 2012).

MWEM releases a synthetic histogram ``x_hat`` that answers a workload of linear queries
(:mod:`dpfast.linear.workloads`) about as well as the data ``x`` does. It starts from the
uniform histogram with the data's total and runs ``T`` rounds. What a round measures is set
by ``measure``:

``measure="queries"`` (the paper's algorithm; the default for every workload but
``Marginals``). Each round

1. selects a query that ``x_hat`` answers badly, by the exponential mechanism with utility
   ``|q . x - q . x_hat|`` (sensitivity 1: entries of ``q`` are in [0, 1] and ``x_hat``
   depends only on earlier releases), at ``eps_T / 2``;
2. measures that query with Laplace noise of scale ``2 / eps_T`` (``eps_T / 2``);
3. updates ``x_hat`` by multiplicative weights,
   ``x_hat *= exp(q * (m - q . x_hat) / (2 n))``, renormalised to the total ``n``.

``measure="tables"`` (for ``Marginals`` workloads only, and their default; whole tables
measured, as in smartnoise-synth's MWEM and McKenna et al.'s variants). Each round

1. selects a marginal table ``j`` by the exponential mechanism with utility
   ``u_j = ||table_j(x) - table_j(x_hat)||_1 - b * cells_j`` at ``eps_T / 2``, where
   ``b = 2 / eps_T`` is the measurement's noise scale, so ``b * cells_j`` is about the l1
   error the measurement itself will have (the subtracted term is public: the sensitivity
   stays 1, as adding or removing a record changes one cell of each true table by 1).
   Without it, the selection favours the largest tables, whose measurements are mostly
   noise (AIM, McKenna et al. 2022, selects the same way);
2. measures the whole table, Laplace noise of scale ``b`` on every cell (its count vector
   has l1 sensitivity 1, so this is ``eps_T / 2``);
3. fits ``x_hat`` to the measured table: every cell ``c`` of the table is multiplied by
   ``m_c / (q_c . x_hat)``, one factor per table cell broadcast over the other attributes,
   so that ``x_hat``'s table becomes ``m``. This is the multiplicative-weights update with
   the step that matches the measurement exactly (an iterative-proportional-fitting step,
   the I-projection of ``x_hat`` onto the histograms with that table); the paper's small
   steps ``exp(q_c (m_c - q_c . x_hat) / (2 n))`` repeated converge to the same point when
   the measurements are consistent, but slowly. ``m`` is the mean of the table's
   measurements so far, each cell clamped below at ``FIT_FLOOR`` (so no cell of ``x_hat``
   becomes 0 and a later table can still move it) and scaled to the total ``n``.

Budget. ``epsilon`` is charged once, for the whole call, whatever ``measure``. If ``total``
(``n``) is not given, ``TOTAL_FRACTION`` (5%) of it measures the total (sensitivity 1,
Laplace noise of scale ``1 / (0.05 epsilon)``); the rest, ``eps_R``, is split equally over
the rounds: ``eps_T = eps_R / T``, spent as ``eps_R / (2 T)`` on the selection (weights
``exp(eps_R u / (4 T))``) and ``eps_R / (2 T)`` on the measurement (Laplace noise of scale
``2 T / eps_R`` on the query, or on each cell of the table). By basic composition the call
is ``0.05 epsilon + 2 T * eps_R / (2 T) = epsilon``-DP. A given total is treated as public.

Choices beyond the paper's pseudocode, all post-processing of the private selections and
measurements (they cost no budget):

- With ``measure="queries"``, like the paper's own implementation and smartnoise-synth's,
  after each new measurement the update of every query measured so far is applied again:
  ``MWEM_PASSES`` (10, the paper's code's default) passes over the measured queries, in the
  order they were first measured (the first pass includes the new measurement). With
  ``measure="tables"`` each round fits only the table it measured: more passes over the
  earlier tables did not lower the error (Adult 2-way marginals, README table 7).
- A query (table) selected more than once is updated towards the mean of its measurements.
- With ``measure="queries"`` a measurement used in an update is clamped to ``[0, n]``, the
  range of ``q . x`` for a query with entries in [0, 1] and a histogram of total ``n``: each
  update's exponent is then within +-1/2, so ``x_hat`` cannot overflow. ``measurements``
  keeps the raw values.
- A measured total is clamped below at 1.
- The release is the mean of the ``T`` histograms after each round's updates
  (``average=True``, as in the paper's analysis; the default with ``measure="queries"``) or
  the last one (``average=False``, the default with ``measure="tables"``: the last
  histogram fits every measured table as of its round, while the mean mixes in the early,
  nearly uniform ones; on the Adult 2-way marginals the mean's error is about twice the
  last one's).

Accuracy: :func:`mwem_error_bound` (Theorem 2.2 of the paper, for ``measure="queries"``)
and :meth:`MWEMRelease.error_bound`.

Floating point. Measurements use dpfast's grid Laplace noise (:mod:`dpfast.samplers`), so
each is ``eps'``-DP with ``eps' <= eps + 2.4e-7`` as for :func:`dpfast.laplace_mechanism`
(a table's cells: as for :func:`dpfast.noisy_counts` on float counts); the selection uses
the compiled exponential mechanism (see :mod:`dpfast.mechanisms.selection` for its
floating-point bound). The utilities are computed in float64; their sensitivity is 1 up to
the rounding of the workload's sums.

Cost. With ``measure="queries"``, multiplicative weights from the uniform histogram keep
``x_hat`` constant on each *atom*, a set of cells on which every measured query has the same
entry; the updates (``MWEM_PASSES`` passes over up to ``T`` queries per round) work on one
value per atom, not per cell. Each round then costs one ``workload.answer`` on ``x_hat``
(for the selection), one ``workload.query`` row when a query is selected for the first
time, and a few passes over the cells (splitting the atoms by that row, writing out
``x_hat``). Memory: a few arrays of the cells, and ``T`` entries per atom. With
``measure="tables"``, ``x_hat`` is a dense array of the domain (once the measured tables
cover every attribute, atoms would be single cells): a round is the selection's tables of
``x_hat`` (:func:`dpfast.linear.workloads.marginal_sums`: a few passes over the cells, each
serving several tables) and one fit (one marginal and one in-place broadcast product);
numpy's reductions and products run over contiguous blocks of at least 1024 cells. On the
Adult data's 28 two-way marginals (8.2 million cells) 20 rounds take about a second on one
core.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import validation as _v
from .._release import Keys, release
from ..noise import Laplace
from . import workloads as _wl
from .mwem_rounds import (FIT_FLOOR, MWEM_PASSES, Plan, QueryRounds, RoundState,
                          TableRounds)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["mwem", "MWEMRelease", "mwem_error_bound", "MWEM_PASSES", "TOTAL_FRACTION",
           "FIT_FLOOR"]

#: Share of epsilon spent measuring the total when it is not given.
TOTAL_FRACTION = 0.05
#: What a round can measure (see the module).
_MEASURES = ("queries", "tables")


@dataclass(frozen=True)
class MWEMRelease:
    """The result of :func:`mwem`; everything here is post-processing of the release.

    Attributes
    ----------
    synthetic : ndarray of float64
        The synthetic histogram, of the workload's domain shape, summing to ``total``.
    answers : ndarray of float64
        ``workload.answer(synthetic)``.
    selected : ndarray of int64
        What was selected in each round: a query index (``measure="queries"``) or a table
        index, into ``workload.attributes`` (``measure="tables"``).
    measurements : ndarray of float64
        The raw noisy measurements (before clamping to ``[0, total]``), in round order:
        with ``measure="queries"`` one value per round; with ``measure="tables"`` the noisy
        cells of each round's table (C order over its attributes), concatenated. Split them
        with ``np.split(measurements, np.cumsum([math.prod(workload.shapes[j]) for j in
        selected])[:-1])``.
    epsilon : float
        The epsilon charged, in all.
    rounds : int
        The number of rounds ``T``.
    total : float
        The total the synthetic histogram has: the public total, or the measured one.
    total_epsilon : float
        The part of ``epsilon`` spent measuring the total (0 when it was given).
    measure : str
        What each round measured: ``"queries"`` or ``"tables"``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfast import mwem
    >>> from dpfast.linear.workloads import Prefixes
    >>> rel = mwem(np.array([40, 10, 30, 20]), Prefixes(4), epsilon=50.0, rounds=5,
    ...            total=100, rng=1)
    >>> rel.synthetic.shape, round(float(rel.synthetic.sum()), 6), rel.selected.size
    ((4,), 100.0, 5)
    """

    synthetic: NDArray[np.float64]
    answers: NDArray[np.float64]
    selected: NDArray[np.int64]
    measurements: NDArray[np.float64]
    epsilon: float
    rounds: int
    total: float
    total_epsilon: float
    measure: str = "queries"

    def error_bound(self) -> float:
        """:func:`mwem_error_bound` for this release: ``n = total``, the domain and workload
        sizes, and the epsilon spent on the rounds.

        The theorem assumes the exact total; with a measured total, add that measurement's
        error (Laplace of scale ``1 / total_epsilon``). It is proved for one query per
        round: a release with ``measure="tables"`` raises ValueError.

        Examples
        --------
        >>> import numpy as np
        >>> from dpfast import mwem
        >>> from dpfast.linear.workloads import Ranges
        >>> counts = np.arange(16) * 1000
        >>> rel = mwem(counts, Ranges(16), epsilon=1.0, rounds=30, total=120_000, rng=2)
        >>> error = np.abs(rel.answers - Ranges(16).answer(counts)).max()
        >>> round(rel.error_bound()), bool(error < rel.error_bound())
        (74435, True)
        """
        if self.measure != "queries":
            raise ValueError(f"MWEMRelease.error_bound (Theorem 2.2 of Hardt, Ligett & "
                             f"McSherry) covers releases with measure='queries'. This one "
                             f"has measure={self.measure!r}.")
        return mwem_error_bound(self.total, self.synthetic.size, self.answers.size,
                                epsilon=self.epsilon - self.total_epsilon, rounds=self.rounds)


def mwem(counts: ArrayLike, workload: _wl.Workload, *, epsilon: float, rounds: int,
         total: float | None = None, average: bool | None = None, measure: str | None = None,
         accountant: AccountantLike | None = None, rng: RngLike = None,
         threads: int | None = None) -> MWEMRelease:
    """mwem(counts, workload, *, epsilon, rounds, total=None, average=None, measure=None, accountant=None, rng=None, threads=None)

    A synthetic histogram answering ``workload`` privately, by MWEM (see the module).

    Parameters
    ----------
    counts : array_like of int or float
        The histogram: non-negative finite counts, of the workload's domain shape or flat
        (C order).
    workload : dpfast.linear.workloads.Workload
        The queries, one of the workload classes of :mod:`dpfast.linear.workloads` (their
        entries are in [0, 1]), with at least one query, over the domain of ``counts``.
    epsilon : float
        Privacy parameter of the whole release, > 0; charged once, before anything is drawn.
    rounds : int
        Number of rounds ``T`` >= 1 (one query or table selected and measured in each).
    total : float, optional
        The number of records, if public (> 0). ``None``: measured with 5% of ``epsilon``.
    average : bool, optional
        Release the mean of the rounds' histograms or the last one. Default: the mean with
        ``measure="queries"`` (as in the paper), the last with ``measure="tables"``.
    measure : {"queries", "tables"}, optional
        What each round selects and measures: one query, or one whole marginal table (only
        for a :class:`~dpfast.linear.workloads.Marginals` workload). Default: ``"tables"``
        for ``Marginals``, ``"queries"`` otherwise.
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism` (an int seed is for tests and research
        only). The result for a given ``rng`` state does not depend on ``threads``.

    Returns
    -------
    MWEMRelease
        The synthetic histogram, its answers to the workload, what each round selected and
        measured, and the budget spent (:class:`MWEMRelease`).

    Raises
    ------
    TypeError
        If ``workload`` is not an instance of one of the workload classes (a subclass
        included); ``epsilon`` or ``total`` is not a real number (a bool included);
        ``rounds`` or ``threads`` is not an int; ``average`` is not a bool; ``measure`` is
        not a string; ``counts`` is not numeric data; ``accountant`` is not an accountant;
        or ``rng`` is not one of the accepted kinds.
    ValueError
        If ``epsilon`` is NaN, infinite or <= 0; ``rounds`` < 1; the workload has no query
        or too many; ``measure`` is another string, or ``"tables"`` for a workload other
        than ``Marginals``; ``counts`` holds a negative, NaN or infinite entry (the message
        gives its position, not the count) or has not the workload's domain; ``total`` is
        NaN, infinite or <= 0; the noise scales ``epsilon`` and ``rounds`` give are outside
        the samplers' range, or the largest query answer or the total is beyond 2**52
        steps of the noise grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative
        seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.

    Notes
    -----
    ``epsilon``-DP (up to the floating-point terms in the module documentation) by basic
    composition: the total at ``0.05 epsilon`` (if measured), and ``2 T`` releases of
    ``eps_R / (2 T)`` each (per round a selection, and a measurement of a query or of a
    table's sensitivity-1 count vector). With ``measure="queries"`` each round costs one
    ``workload.answer``, at most one ``workload.query`` and a few passes over the cells;
    with ``measure="tables"`` a few passes over the cells for the selection and about two
    for the fit.

    Examples
    --------
    All two-way marginals of a 4 x 3 x 5 table of about 3,000 records (``rng=3``:
    reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> from dpfast.linear.workloads import Marginals
    >>> counts = np.random.default_rng(0).poisson(50.0, size=(4, 3, 5))
    >>> workload = Marginals((4, 3, 5), k=2)
    >>> acct = dp.Accountant(epsilon=2.0)
    >>> rel = dp.mwem(counts, workload, epsilon=2.0, rounds=10, accountant=acct, rng=3)
    >>> rel.synthetic.shape, acct.spent
    ((4, 3, 5), (2.0, 0.0))
    >>> bool(np.abs(rel.synthetic.sum() - counts.sum()) < 100)
    True
    >>> worst = np.abs(rel.answers - workload.answer(counts.ravel())).max()
    >>> bool(worst < 50)          # marginal cells hold about 150 to 250 records
    True
    """
    func = "mwem"
    plan = _plan(counts, workload, epsilon, rounds, total, average, measure, func)
    return release(func, accountant, plan.epsilon, 0.0, rng, threads, plan.draws, _run,
                   plan, keys=True)


def mwem_error_bound(n: float, n_cells: int, n_queries: int, *, epsilon: float,
                     rounds: int) -> float:
    """mwem_error_bound(n, n_cells, n_queries, *, epsilon, rounds)

    Theorem 2.2 of Hardt, Ligett & McSherry (2012): with probability at least
    ``1 - 2 T / |Q|``, every query's answer on MWEM's averaged histogram is within
    ``2 n sqrt(ln |X| / T) + 10 T ln |Q| / epsilon`` of its answer on the data.

    Queries are unnormalised counts (``q . x`` with entries of ``q`` in [0, 1]), ``n`` is
    the number of records, ``|X|`` the number of cells, ``|Q|`` the number of queries,
    ``T`` the rounds and ``epsilon`` the budget of the rounds (``eps_R`` in the module:
    ``epsilon`` minus any part spent measuring the total). Logarithms are natural. The
    probability is only meaningful for ``|Q| > 2 T``. Nothing is charged or drawn.

    Parameters
    ----------
    n : float
        The number of records, >= 0.
    n_cells : int
        ``|X|``, the number of cells of the histogram, >= 1.
    n_queries : int
        ``|Q|``, the number of queries of the workload, >= 1.
    epsilon : float
        The budget of the rounds, > 0.
    rounds : int
        ``T``, the number of rounds, >= 1.

    Returns
    -------
    float
        The bound, in records.

    Raises
    ------
    TypeError
        If ``n`` or ``epsilon`` is not a real number, or ``n_cells``, ``n_queries`` or
        ``rounds`` is not an int (bools included).
    ValueError
        If ``n`` is negative, NaN or infinite; ``epsilon`` is NaN, infinite or <= 0; or
        ``n_cells``, ``n_queries`` or ``rounds`` is outside [1, 2**62].

    Examples
    --------
    >>> import dpfast as dp
    >>> round(dp.mwem_error_bound(10_000, 1024, 500, epsilon=1.0, rounds=30))
    11478
    """
    func = "mwem_error_bound"
    records = _v.check_real(n, "n", func, low_open=False)
    cells = _v.check_positive_int(n_cells, "n_cells", func)
    queries = _v.check_positive_int(n_queries, "n_queries", func)
    eps = _v.check_epsilon(epsilon, func)
    t = _v.check_positive_int(rounds, "rounds", func)
    return 2.0 * records * math.sqrt(math.log(cells) / t) + 10.0 * t * math.log(queries) / eps


# -- checks: everything before the charge ----------------------------------------------


def _plan(counts: ArrayLike, workload: _wl.Workload, epsilon: float, rounds: int,
          total: float | None, average: bool | None, measure: object, func: str) -> Plan:
    eps = _v.check_epsilon(epsilon, func)
    t = _v.check_positive_int(rounds, "rounds", func)
    wl = _check_workload(workload, func)
    kind = _check_measure(measure, wl, func)
    avg = kind == "queries" if average is None else _v.check_bool(average, "average", func)
    x = _check_counts(counts, wl, func)
    public = None if total is None else _v.check_real(total, "total", func)
    eps_total = 0.0 if public is not None else TOTAL_FRACTION * eps
    eps_rounds = eps - eps_total
    # Selection at eps_R / (2T) with sensitivity 1: noise scale 2 / that, as in selection.py.
    names = "'epsilon' and 'rounds'"
    em_scale = _v.check_noise_scale(4.0 * t / eps_rounds, names, func, low=2.0**-1022,
                                    high=2.0**1001)
    noise = Laplace(_v.check_noise_scale(2.0 * t / eps_rounds, names, func), integer=False)
    total_from: float | Laplace = public if public is not None else Laplace(
        _v.check_noise_scale(1.0 / eps_total, names, func), integer=False)
    truth = wl.answer(x)
    _check_grid(float(truth.max()), noise.g, "the largest query answer", func)
    if isinstance(total_from, Laplace):
        _check_grid(float(x.sum()), total_from.g, "the total", func)
    return Plan(x, wl, truth, total_from, eps, eps_total, t, avg, kind, _draws(wl, kind),
                 1.0 / em_scale, noise, noise.g * noise.t)


def _check_workload(workload: object, func: str) -> _wl.Workload:
    _wl.check_trusted(workload, "workload", func)
    assert isinstance(workload, _wl.Workload)
    if not 1 <= workload.n_queries <= _wl.MAX_ANSWERS:
        raise ValueError(f"The 'workload' parameter of {func} must have between 1 and "
                         f"{_wl.MAX_ANSWERS} queries. Got {workload!r} instead.")
    return workload


def _check_measure(measure: object, wl: _wl.Workload, func: str) -> str:
    """"queries" or "tables" (None: "tables" for Marginals, else "queries")."""
    is_marginals = isinstance(wl, _wl.Marginals)
    if measure is None:
        return "tables" if is_marginals else "queries"
    if not isinstance(measure, str):
        raise TypeError(f"The 'measure' parameter of {func} must be None, 'queries' or "
                        f"'tables'. Got {measure!r} instead.")
    if measure not in _MEASURES:
        raise ValueError(f"The 'measure' parameter of {func} must be None, 'queries' or "
                         f"'tables'. Got {measure!r} instead.")
    if measure == "tables" and not is_marginals:
        raise ValueError(f"The 'measure' parameter of {func} can be 'tables' only for a "
                         f"Marginals workload. Got 'tables' with {wl!r} instead.")
    return measure


def _draws(wl: _wl.Workload, measure: str) -> int:
    """The most values a kernel call of the release works on: the selection's candidates,
    or a table's cells."""
    if isinstance(wl, _wl.Marginals) and measure == "tables":
        return max(len(wl.attributes), int(np.max(np.diff(wl.offsets))))
    return wl.n_queries


def _check_counts(counts: ArrayLike, wl: _wl.Workload, func: str) -> NDArray[np.float64]:
    """Flat float64 counts: numeric, finite, non-negative, with the workload's cells."""
    data = _v.check_histogram(counts, "counts", func)
    if data.size != wl.n_cells or (data.ndim > 1 and data.shape != wl.domain):
        raise ValueError(f"The 'workload' parameter of {func} must have the domain of "
                         f"'counts' ({data.shape}, or flat with {data.size} cells). Got "
                         f"{wl!r} instead.")
    return np.asarray(data, dtype=np.float64).reshape(-1)


def _check_grid(value: float, g: float, what: str, func: str) -> None:
    """The grid Laplace kernel adds noise exactly to values up to 2**52 grid steps."""
    if not value <= 2.0**52 * g:
        raise ValueError(f"The 'counts' parameter of {func} must keep {what} within 2**52 "
                         f"steps of the noise grid ({2.0**52 * g:g} at this epsilon and "
                         f"number of rounds). Got {what} beyond it instead.")


# -- the release: a kernel(keys, threads, plan) -----------------------------------


def _run(keys: Keys, threads: int, plan: Plan) -> MWEMRelease:
    """All rounds of MWEM on a checked plan, each draw under the release's next key."""
    n = (_noisy_total(keys, threads, plan.total, plan.x) if isinstance(plan.total, Laplace)
         else plan.total)
    state: RoundState = (TableRounds(plan, n) if plan.measure == "tables"
                         else QueryRounds(plan, n))
    mean = np.zeros(plan.x.size) if plan.average else None
    selected = np.empty(plan.rounds, dtype=np.int64)
    values = []
    for r in range(plan.rounds):
        i = state.select(keys, threads)
        selected[r] = i
        values.append(state.measure(keys, threads, i))
        state.update(i, values[-1])
        if mean is not None:
            mean += state.histogram()
    flat = state.histogram() if mean is None else mean * (n / mean.sum())
    synthetic = flat.reshape(plan.workload.domain)
    return MWEMRelease(synthetic, plan.workload.answer(synthetic), selected,
                       np.concatenate(values), plan.epsilon, plan.rounds, n,
                       plan.total_epsilon, plan.measure)


def _noisy_total(keys: Keys, threads: int, noise: Laplace,
                 x: NDArray[np.float64]) -> float:
    """The total of ``x`` with ``noise`` (scale 1 / total_epsilon), at least 1."""
    return max(noise.scalar(keys.next(), threads, float(x.sum())), 1.0)
