"""Online private multiplicative weights (Hardt & Rothblum 2010; Dwork & Roth, section 4.2).

A :class:`PrivateMultiplicativeWeights` object holds a private histogram ``x`` (``n``
records over a universe ``X``) and a public synthetic histogram ``x_hat`` (uniform at
first). It answers a stream of linear queries (rows ``q`` with entries in [0, 1], from any
workload of :mod:`dpfast.linear.workloads`): the sparse vector technique (Lyu et al.,
Algorithm 1, as :class:`dpfast.Sparse`) asks, for each query, whether
``e = |q . x - q . x_hat|`` is above the threshold ``T = 3 alpha n / 4`` (``e`` has
sensitivity 1: ``x_hat`` depends only on earlier outputs).

- below: the answer is ``q . x_hat``, read off the synthetic histogram, with no update;
- above: ``q . x`` is measured with Laplace noise (scale ``c / eps_3``; at most ``c`` such
  measurements), that is the answer, and ``x_hat`` takes a multiplicative-weights step
  towards it, ``x_hat *= exp(s eta q)`` renormalised to ``n``, with ``s`` the sign of
  ``measured - q . x_hat`` and ``eta = 2 alpha``.

After ``c`` updates (default ``ceil(2 ln|X| / alpha^2)``) the object halts: further calls
raise :class:`dpfast.SparseVectorHalted`. ``epsilon`` is charged once, at creation, and
split (``shares``) between the threshold noise (``Lap(1 / eps_1)``), the comparisons
(``Lap(2 c / eps_2)``) and the measurements (``eps_3``); if ``total`` is not given, 5% of
``epsilon`` first measures ``n``. Basic composition makes the whole object
``epsilon``-DP.

Accuracy (proved here, checked by simulation in ``tests/test_online.py``). With
probability at least ``1 - beta``, over a stream of ``k`` queries:

- the threshold noise is within ``a = ln(3 / beta) / eps_1``, every comparison's noise
  within ``b = (2 c / eps_2) ln(3 k / beta)``, and every measurement's within
  ``mu = (c / eps_3) ln(3 c / beta)`` (union bounds, ``beta / 3`` each);
- so a query answered from ``x_hat`` is within ``T + a + b`` of the truth, and a measured
  one within ``mu``: :meth:`PrivateMultiplicativeWeights.error_bound` is
  ``max(T + a + b, mu)`` (in records; any answer given before a halt);
- and if ``a + b <= alpha n / 4`` and ``mu < alpha n / 2`` (:meth:`updates_suffice`), every
  update happens on a query with ``|q . x - q . x_hat| >= alpha n / 2`` in the direction of
  the truth. Each such step with ``eta = 2 alpha`` lowers the relative entropy
  ``KL(x / n || x_hat / n)`` by at least ``alpha^2 / 2`` (Hoeffding's lemma), which starts
  at most ``ln |X|``: there are at most ``2 ln|X| / alpha^2 <= c`` updates, so the object
  never halts and every answer is within ``alpha n``.

The bounds are loose (union bounds, worst-case potential): the errors measured in the
tests are several times smaller.

The object is owned state (:mod:`dpfast._owned`): calls from several threads take turns
under one lock (the update limit holds), copying, pickling or using it in a forked child is
refused (a pickle would carry the private histogram), and its public attributes are
read-only.

Cost: each ``answer`` call answers the workload on ``x`` once and on ``x_hat`` once plus
once after each update (``workload.answer``, then the queries asked are read off); each
comparison draws fresh noise for the rest of the call's queries after an update (noise
never reused); an update builds the query's row and makes one pass over the cells.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v
from .._owned import Owned
from .._release import Keys, release
from ..mechanisms.sparse_vector import SparseVectorHalted
from ..mechanisms.threshold_noise import ThresholdNoise as _Noise, make_noise as _noise
from ..noise import Laplace
from ..rng import resolve_threads
from . import workloads as _wl

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["PrivateMultiplicativeWeights"]

#: Share of epsilon that measures the total when it is not given.
TOTAL_FRACTION = 0.05


class PrivateMultiplicativeWeights(Owned):
    """PrivateMultiplicativeWeights(counts, *, epsilon, alpha, updates=None, total=None, shares=None, accountant=None, rng=None, threads=None)

    Answers a stream of linear queries about the histogram ``counts`` from a public
    synthetic histogram, measuring only when it is off by more than about ``alpha n``
    (see the module for the algorithm and its accuracy theorem).

    Parameters
    ----------
    counts : array_like
        The histogram: non-negative finite counts (any shape; queries see it flat, or in
        their workload's domain shape).
    epsilon : float
        Privacy parameter of the whole object, > 0; charged once, at creation.
    alpha : float
        Target accuracy as a fraction of the number of records, in (0, 1].
    updates : int, optional
        ``c``, the most measurements and updates; default ``ceil(2 ln|X| / alpha^2)``.
    total : float, optional
        The number of records, if public. ``None``: measured with 5% of ``epsilon``.
    shares : tuple of 3 floats, optional
        Fractions of the rest of ``epsilon`` for the threshold, the comparisons and the
        measurements; default ``(0.1, 0.6, 0.3)`` (the comparisons carry ``c`` times more
        noise than the threshold, as in Lyu et al.'s budget split).
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism`; the object keeps drawing from the
        generator ``rng`` resolves to (an int seed is for tests and research only).

    Raises
    ------
    TypeError
        If ``epsilon``, ``alpha`` or ``total`` is not a real number (a bool included);
        ``counts`` is not numeric data; ``updates`` or ``threads`` is not an int; ``shares``
        is not a sequence of real numbers; ``accountant`` is not an accountant; or ``rng``
        is not one of the accepted kinds.
    ValueError
        If ``epsilon`` is NaN, infinite or <= 0; ``alpha`` is not in (0, 1]; ``counts`` is
        empty, ragged or holds a negative, NaN or infinite entry (the message gives its
        position, not the count); ``updates`` < 1; ``total`` is NaN, infinite or <= 0;
        ``shares`` has not 3 entries in (0, 1] summing to 1; a noise scale the parameters
        give is outside the samplers' range; ``threads`` is outside [1, 1024]; or ``rng`` is
        a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.
    SparseVectorHalted
        From :meth:`answer` once ``updates`` updates were made. There, a workload over
        another number of cells or ``queries`` out of its range raise ``ValueError``, and
        ``queries`` that are not a 1-d array of ints ``TypeError``, with nothing drawn.

    Notes
    -----
    Owned state (:mod:`dpfast._owned`): calls from several threads take turns (never more
    than ``updates`` updates), a call re-entering the object from its own thread raises
    ``RuntimeError``, and copies, pickles and use in a forked child raise. The public
    attributes are read-only; the histogram, its synthetic copy and the noise are private
    (:attr:`synthetic` returns a copy).

    Examples
    --------
    Three range queries over a 64-cell histogram of about 13,000 records, each answered
    within ``alpha n`` (``rng=1``: reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> from dpfast.linear.workloads import Ranges
    >>> counts = np.random.default_rng(0).poisson(np.linspace(10, 400, 64)).astype(float)
    >>> acct = dp.Accountant(epsilon=2.0)
    >>> pmw = dp.PrivateMultiplicativeWeights(counts, epsilon=2.0, alpha=0.1, updates=8,
    ...                                       accountant=acct, rng=1)
    >>> answers = pmw.answer(Ranges(64), queries=[0, 100, 2000])
    >>> answers.shape, acct.spent, pmw.updates_used <= 3
    ((3,), (2.0, 0.0), True)
    >>> truth = Ranges(64).answer(counts)[[0, 100, 2000]]
    >>> bool(np.all(np.abs(answers - truth) <= pmw.alpha * pmw.total))
    True
    """

    def __init__(self, counts: ArrayLike, *, epsilon: float, alpha: float,
                 updates: int | None = None, total: float | None = None,
                 shares: Sequence[float] | None = None,
                 accountant: AccountantLike | None = None, rng: RngLike = None,
                 threads: int | None = None) -> None:
        self._own()
        func = "PrivateMultiplicativeWeights"
        eps = _v.check_epsilon(epsilon, func)
        a = _v.check_real(alpha, "alpha", func, high=1.0, high_open=False)
        x = _check_counts(counts, func)
        c = math.ceil(2.0 * math.log(max(x.size, 2)) / a**2) if updates is None else \
            _v.check_positive_int(updates, "updates", func)
        public = None if total is None else _v.check_real(total, "total", func)
        eps_total = 0.0 if public is not None else TOTAL_FRACTION * eps
        split = _v.check_shares((0.1, 0.6, 0.3) if shares is None else shares, 3, "shares",
                                func)
        # The comparisons are those of Sparse(T, cutoff=c) with shares eps_1 : eps_2.
        rest = eps - eps_total
        svt_eps = rest * (split[0] + split[1])
        noise = _noise(0.0, svt_eps, c, 1.0, False,
                       (split[0] / (split[0] + split[1]), split[1] / (split[0] + split[1])),
                       func)
        names = "'epsilon', 'updates' and 'shares'"
        measure = Laplace(_v.check_noise_scale(c / (rest * split[2]), names, func),
                          integer=False)
        # The public total, or the noise the total is measured with.
        total_from: float | Laplace = public if public is not None else Laplace(
            _v.check_noise_scale(1.0 / eps_total, names, func), integer=False)
        _v.check_threads(threads, func)
        n: float
        self._keys, n, self._threshold_noise = release(
            func, accountant, eps, 0.0, rng, threads, 1, _start, noise, x, total_from,
            keys=True)
        self._epsilon, self._alpha, self._updates, self._total = eps, a, c, n
        self._shares, self._total_epsilon = split, eps_total
        self._eps = (rest * split[0], rest * split[1], rest * split[2])
        self._x, self._noise, self._measure, self._threads = x, noise, measure, threads
        self._func = func
        self._xhat: NDArray[np.float64] = np.full(x.size, n / x.size)
        self._updates_used = 0
        self._answered = 0

    # -- what the caller reads (read-only; the histograms and the noise are private) -------

    @property
    def epsilon(self) -> float:
        """The privacy parameter of the whole object, charged at creation."""
        return self._epsilon

    @property
    def alpha(self) -> float:
        """The target accuracy, as a fraction of the number of records."""
        return self._alpha

    @property
    def updates(self) -> int:
        """``c``: the most measurements and updates before the object halts."""
        return self._updates

    @property
    def total(self) -> float:
        """The number of records: as given, or as measured (at least 1)."""
        return self._total

    @property
    def shares(self) -> tuple[float, ...]:
        """The fractions of the rest of ``epsilon`` for the threshold, the comparisons and
        the measurements."""
        return self._shares

    @property
    def total_epsilon(self) -> float:
        """The part of ``epsilon`` that measured the total (0 if it was given)."""
        return self._total_epsilon

    @property
    def updates_used(self) -> int:
        """The number of measurements and updates made so far."""
        return self._updates_used

    @property
    def answered(self) -> int:
        """The number of queries answered so far."""
        return self._answered

    @property
    def threshold(self) -> float:
        """``T = 3 alpha n / 4``: the error (in records) above which a query is measured."""
        return 0.75 * self._alpha * self._total

    @property
    def synthetic(self) -> NDArray[np.float64]:
        """A copy of the synthetic histogram (flat, summing to ``total``), taken between
        calls (never half-way through an update)."""
        self._check_process()
        with self._owned_lock:
            out: NDArray[np.float64] = self._xhat.copy()
        return out

    @property
    def halted(self) -> bool:
        """True once ``updates`` updates were made."""
        return self._updates_used >= self._updates

    def error_bound(self, queries: int, beta: float = 0.05) -> float:
        """A bound, in records, that every answer to a stream of ``queries`` queries stays
        within with probability at least ``1 - beta``: ``max(T + a + b, mu)`` (module)."""
        a, b, mu = self._noise_bounds(queries, beta, "error_bound")
        return max(self.threshold + a + b, mu)

    def updates_suffice(self, queries: int, beta: float = 0.05) -> bool:
        """Whether the theorem of the module guarantees, for a stream of ``queries`` queries
        with probability ``1 - beta``, that the object never halts and every answer is
        within ``alpha n``."""
        a, b, mu = self._noise_bounds(queries, beta, "updates_suffice")
        n = self.total
        return (a + b <= self.alpha * n / 4 and mu < self.alpha * n / 2
                and self.updates >= 2.0 * math.log(max(self._x.size, 2)) / self.alpha**2)

    def _noise_bounds(self, queries: int, beta: float, func: str) -> tuple[float, float, float]:
        k = _v.check_positive_int(queries, "queries", func)
        p = _v.check_real(beta, "beta", func, high=1.0)
        eps1, eps2, eps3 = self._eps
        c = self.updates
        return (math.log(3.0 / p) / eps1, 2.0 * c / eps2 * math.log(3.0 * k / p),
                c / eps3 * math.log(3.0 * c / p))

    # -- answering ------------------------------------------------------------------------

    def answer(self, workload: _wl.Workload,
               queries: ArrayLike | None = None) -> NDArray[np.float64]:
        """Answers of ``workload``'s queries (all of them in order, or those at the indices
        ``queries``, in that order), processed as a stream. The answers stop where the
        object halts (their length says how many); later calls raise
        :class:`dpfast.SparseVectorHalted`."""
        self._enter()
        try:
            return self._answer(workload, queries)
        finally:
            self._leave()

    def _answer(self, workload: _wl.Workload,
                queries: ArrayLike | None) -> NDArray[np.float64]:
        """:meth:`answer`, under the object's lock."""
        func = "PrivateMultiplicativeWeights.answer"
        if self.halted:
            raise SparseVectorHalted(
                f"PrivateMultiplicativeWeights has halted: it made its {self._updates} "
                f"updates after {self._answered} answers. Create a new one (a new charge of "
                f"epsilon) to ask more.")
        stream = _Stream(workload, queries, self._x, func)
        out = np.empty(stream.size)
        synth = stream.answers(self._xhat)
        pos = 0
        while pos < stream.size and not self.halted:
            j = self._first_above(np.abs(stream.truth[pos:] - synth[pos:]))
            stop = stream.size if j is None else pos + j
            out[pos:stop] = synth[pos:stop]
            pos = stop
            if j is not None:
                out[pos] = self._measure_and_update(stream.row(pos), float(stream.truth[pos]),
                                                    float(synth[pos]))
                pos += 1
                synth = stream.answers(self._xhat)
        self._answered += pos
        return out[:pos]

    def _first_above(self, errors: NDArray[np.float64]) -> int | None:
        """The first of these errors above the noisy threshold (fresh noise), or None."""
        threads = resolve_threads(self._threads, self._func, max(errors.size, 1))
        noisy = self._noise.draw(self._keys, threads, errors, self._noise.queries)
        above = np.flatnonzero(noisy >= self._threshold_noise[0] + self.threshold)
        return int(above[0]) if above.size else None

    def _measure_and_update(self, row: NDArray[np.float64], truth: float,
                            synth: float) -> float:
        """Measure a query, step ``x_hat`` towards the measurement, return it."""
        measured = self._measure.scalar(self._keys.next(), 1, truth)
        # Counted before anything uses it, and the new histogram put in place in one step:
        # an interruption between the two can only over-count (the safe side), never leave
        # a measurement in x_hat that the update limit did not see.
        self._updates_used += 1
        step = 2.0 * self._alpha * (1.0 if measured > synth else -1.0)
        xhat = self._xhat * np.exp(step * row)
        xhat *= self._total / float(xhat.sum())
        self._xhat = xhat
        return float(measured)

    def __repr__(self) -> str:
        return (f"PrivateMultiplicativeWeights(epsilon={self.epsilon!r}, alpha={self.alpha!r}, "
                f"cells={self._x.size}; answered {self.answered}, updates "
                f"{self.updates_used}/{self.updates}{', halted' if self.halted else ''})")


def _start(keys: Keys, threads: int, noise: _Noise, x: NDArray[np.float64],
           total: float | Laplace) -> tuple[Keys, float, NDArray[Any]]:
    """The release's kernel: the total (public, or measured and at least 1), the threshold
    noise, and the keys the object keeps for its queries."""
    if isinstance(total, Laplace):
        n = max(total.scalar(keys.next(), threads, float(x.sum())), 1.0)
    else:
        n = total
    return keys, n, noise.draw(keys, threads, np.zeros(1), noise.threshold)


def _check_counts(counts: ArrayLike, func: str) -> NDArray[np.float64]:
    data = _v.check_histogram(counts, "counts", func)
    if data.size == 0:
        raise ValueError(f"The 'counts' parameter of {func} must be a non-empty histogram. "
                         f"Got {_v.describe(counts)} instead.")
    return np.asarray(data, dtype=np.float64).reshape(-1)


class _Stream:
    """The queries of one ``answer`` call: all of a workload's, or those at given indices,
    answered through ``workload.answer`` (on the data once, on ``x_hat`` after each update)
    and read in stream order."""

    def __init__(self, workload: _wl.Workload, queries: ArrayLike | None,
                 x: NDArray[np.float64], func: str):
        _wl.check_trusted(workload, "workload", func)
        if workload.n_cells != x.size:
            raise ValueError(f"The 'workload' parameter of {func} must have the histogram's "
                             f"{x.size} cells. Got {workload!r} instead.")
        if workload.n_queries > _wl.MAX_ANSWERS:
            raise ValueError(f"The 'workload' parameter of {func} must have at most "
                             f"{_wl.MAX_ANSWERS} queries. Got {workload!r} instead.")
        self.workload = workload
        if queries is None:
            self.index: NDArray[np.int64] | None = None
            self.size = workload.n_queries
        else:
            idx = np.asarray(queries)
            if idx.dtype.kind not in "iu" or idx.ndim != 1:
                raise TypeError(f"The 'queries' parameter of {func} must be a 1-D array of "
                                f"query indices. Got {_v.describe(queries)} instead.")
            outside = (idx < 0) | (idx >= workload.n_queries)
            if outside.any():
                raise ValueError(f"The 'queries' parameter of {func} must index the "
                                 f"workload's {workload.n_queries} queries. Got "
                                 f"{_v.entry_at(outside, 'is out of range')} instead.")
            self.index = idx.astype(np.int64)
            self.size = idx.size
        self.truth = self.answers(x)

    def answers(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """Every stream position's answer on the histogram ``x``."""
        out = self.workload.answer(x)
        return out if self.index is None else out[self.index]

    def row(self, pos: int) -> NDArray[np.float64]:
        """The query at stream position ``pos``, as a dense row."""
        return self.workload.query(pos if self.index is None else int(self.index[pos]))
