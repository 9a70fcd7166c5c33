"""The sparse vector technique: ``AboveThreshold``, ``Sparse`` and ``NumericSparse``.

Queries arrive one at a time (or in arrays); the mechanism says, for each, whether its
answer is above a public threshold, and pays only for the few that are. The whole budget
``epsilon`` is charged when the object is created, before anything is drawn; the objects
then answer until their cutoff and raise :class:`SparseVectorHalted` afterwards.

The form used (Lyu, Su & Li, PVLDB 2017, Algorithm 1; NumericSparse their Algorithm 7),
with ``Delta`` the queries' sensitivity and ``c`` the cutoff:

- the threshold is noised once, ``T_hat = T + Lap(Delta / eps_1)``;
- each query gets fresh noise, ``q_i + Lap(2 c Delta / eps_2)``, or ``Lap(c Delta /
  eps_2)`` for *monotonic* queries (all answers move in the same direction between
  neighbouring datasets: counts under adding a record, for instance);
- the answer is ``True`` when ``q_i + noise >= T_hat``; the object halts after ``c`` of
  them;
- NumericSparse also releases, for each ``True``, ``q_i + Lap(c Delta / eps_3)``, drawn
  afresh (never the comparison's noisy value).

It is ``eps_1 + eps_2 (+ eps_3) = epsilon``-DP (Lyu et al., Theorems 2 and 6). The
textbook's Sparse (Dwork & Roth, Algorithm 2) instead restarts AboveThreshold after each
``True``, redrawing the threshold noise with ``epsilon / c`` each: its threshold noise is
``c`` times larger for the same query noise. Algorithm 1 keeps one noisy threshold and so
is at least as accurate for every ``c``; for ``c = 1`` both are AboveThreshold (Dwork &
Roth, Algorithm 1): ``T + Lap(2 Delta / epsilon)`` and ``q_i + Lap(4 Delta / epsilon)``
with the default even split. The variants that drop the threshold noise, the halt, or the
factor ``c`` in the query noise are not private; ``tests/test_audit.py`` shows
:func:`dpfast.audit` catching each.

Default splits (``shares``): ``(1/2, 1/2)`` of ``epsilon`` to the threshold and the
comparisons (the textbook's); NumericSparse ``(1/4, 1/4, 1/2)``: half to the released
values, the part a caller reads, and the rest split as in AboveThreshold. Lyu et al.
show that ``eps_1 : eps_2 = 1 : (2c)^(2/3)`` minimises the comparisons' error; pass it
as ``shares`` when ``c`` is large.

Noise. An integer threshold with an integral sensitivity gives discrete Laplace noise
everywhere (the queries must then be integers, and the comparison is exact); otherwise
dpfast's grid Laplace noise (:mod:`dpfast.samplers`), the threshold and the queries each
rounded to their noise's grid, as in :func:`dpfast.laplace_mechanism`. Each call draws
its noise from the object's generator (the one given as ``rng``, or one made from the
seed or the OS): a given seed gives the same answers for the same calls, and the answers
do not depend on ``threads``. Noise drawn for queries after the halt within one array is
discarded, never reused.

Queries may come one by one or as arrays; an array's answers stop at the halt (their
length says how many were asked). Bad queries raise ``TypeError``/``ValueError`` naming
the argument and the position of a bad entry (never its value), with nothing drawn and the
object unchanged.

The objects are owned state (:mod:`dpfast._owned`): calls from several threads take turns
(one lock held for the whole decision, the GIL-free kernel calls included, so the cutoff
holds), and copying, pickling or using one in a forked child is refused. ``cutoff``,
``above``, ``asked`` and the parameters are read-only.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v
from .._owned import Owned
from .._release import Keys, release, sampler_keys
from ..rng import resolve_threads
from .threshold_noise import ThresholdNoise as _Noise, make_noise as _noise

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["AboveThreshold", "Sparse", "NumericSparse", "SparseVectorHalted", "sample_runs"]


class SparseVectorHalted(RuntimeError):
    """A query to a sparse-vector object that has given all its above-threshold answers.

    Raised by ``query`` of :class:`Sparse`, :class:`AboveThreshold` and
    :class:`NumericSparse` once ``cutoff`` answers were above the threshold; the object
    draws nothing more. More queries need a new object, and with it a new charge of epsilon.

    Examples
    --------
    >>> import dpfast as dp
    >>> svt = dp.AboveThreshold(10, epsilon=1.0, accountant=dp.Accountant(epsilon=1.0),
    ...                         rng=3)   # a seed: reproducible, for tests only
    >>> svt.query([0, 1, 500])
    array([False, False,  True])
    >>> try:
    ...     svt.query(2)
    ... except dp.SparseVectorHalted:
    ...     print("halted after", svt.asked, "queries")
    halted after 3 queries
    """


def _checked(threshold: object, epsilon: float, cutoff: int, sensitivity: float,
             monotonic: bool, shares: Sequence[float] | None, default: tuple[float, ...],
             func: str) -> tuple[float, int, float, bool, tuple[float, ...], _Noise,
                                 NDArray[Any]]:
    """Every parameter of a sparse-vector run checked: epsilon, cutoff, sensitivity,
    monotonic, the shares (``default`` if None), the noise, and the threshold as an
    array."""
    eps = _v.check_epsilon(epsilon, func)
    c = _v.check_positive_int(cutoff, "cutoff", func)
    delta = _v.check_sensitivity(sensitivity, func)
    mono = _v.check_bool(monotonic, "monotonic", func)
    split = _v.check_shares(default if shares is None else shares, len(default), "shares",
                            func)
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real):
        raise TypeError(f"The 'threshold' parameter of {func} must be a real number. Got "
                        f"{_v.describe(threshold)} instead.")
    noise = _noise(threshold, eps, c, delta, mono, split, func)
    value: Any = threshold
    base, _ = _check_values(value, noise, (noise.threshold,), "threshold", func)
    return eps, c, delta, mono, split, noise, base


def _check_values(values: ArrayLike, noise: _Noise, scales: tuple[float, ...], name: str,
                  func: str) -> tuple[NDArray[Any], bool]:
    """Queries (or a threshold), to be noised at each of ``scales``, as a flat int64
    (discrete) or float64 array, and whether one scalar was given."""
    data, is_int = _v.check_data(values, name, func)
    if data.ndim > 1:
        raise ValueError(f"The {name!r} parameter of {func} must be a number or a 1-D array. "
                         f"Got an array of shape {data.shape} instead.")
    if noise.discrete and not is_int:
        raise TypeError(f"The {name!r} parameter of {func} must be integers: the threshold is "
                        f"an integer, so the noise is discrete. Got {_v.describe(values)} "
                        f"instead.")
    flat = data.reshape(-1)
    limit = min(noise.limit(scale) for scale in scales)
    lo, hi = _v.value_range(flat) if flat.size else (0, 0)
    if max(-float(lo), float(hi)) > limit:
        # The limit is public (it follows from the noise scale); the entry beyond it is not.
        where = _v.entry_at(np.abs(data.astype(np.float64)) > limit, "is beyond it")
        raise ValueError(f"The {name!r} parameter of {func} must be at most {limit:g} in "
                         f"magnitude (exact arithmetic with the noise). Got {where} instead.")
    return (flat if noise.discrete else np.asarray(flat, dtype=np.float64)), data.ndim == 0


def _outcomes(noisy: NDArray[Any], noisy_threshold: NDArray[Any],
              remaining: int) -> NDArray[np.int8]:
    """For runs (rows) of noisy query answers and each run's noisy threshold: 1 above, 0
    below, -1 not asked (after the run's ``remaining``-th above)."""
    above = noisy >= noisy_threshold[:, None]
    before: NDArray[np.intp] = np.cumsum(above, axis=1) - above    # aboves before each
    return np.where(before < remaining, above, -1).astype(np.int8)


class _SparseVector(Owned):
    """What the three objects share: the charge, the noisy threshold, the state. Owned
    (:mod:`dpfast._owned`): each call holds the object's lock from the cutoff check to the
    counters, and the public state is read-only."""

    _default_shares: tuple[float, ...] = (0.5, 0.5)
    _numeric = False
    _epsilon: float
    _cutoff: int
    _sensitivity: float
    _monotonic: bool
    _threshold_given: float
    _shares: tuple[float, ...]
    _asked: int
    _above: int
    _func: str
    _noise: _Noise
    _threads: int | None
    _scales: tuple[float, ...]
    _limit: float
    _keys: Keys
    _threshold: NDArray[Any]            # the noisy threshold: private

    def __init__(self, threshold: float, *, epsilon: float, cutoff: int = 1,
                 sensitivity: float = 1.0, monotonic: bool = False,
                 shares: Sequence[float] | None = None,
                 accountant: AccountantLike | None = None, rng: RngLike = None,
                 threads: int | None = None) -> None:
        self._own()
        func = type(self).__name__
        eps, c, delta, mono, split, noise, base = _checked(
            threshold, epsilon, cutoff, sensitivity, monotonic, shares, self._default_shares,
            func)
        _v.check_threads(threads, func)
        self._keys, self._threshold = release(func, accountant, eps, 0.0, rng, threads, 1,
                                              _start, noise, base, keys=True)
        self._func, self._noise, self._threads = func, noise, threads
        self._scales = (noise.queries, noise.values) if self._numeric else (noise.queries,)
        self._limit = min(noise.limit(scale) for scale in self._scales)   # |query| at most
        self._epsilon, self._cutoff, self._sensitivity, self._monotonic = eps, c, delta, mono
        self._threshold_given, self._shares = threshold, split
        self._asked = 0          # queries answered so far
        self._above = 0          # of which above the threshold

    # -- what the caller reads (read-only) -------------------------------------------------

    @property
    def epsilon(self) -> float:
        """The privacy parameter of the whole object, charged at creation."""
        return self._epsilon

    @property
    def cutoff(self) -> int:
        """The number of above-threshold answers before the object halts."""
        return self._cutoff

    @property
    def sensitivity(self) -> float:
        """Every query's sensitivity."""
        return self._sensitivity

    @property
    def monotonic(self) -> bool:
        """Whether the queries were declared monotonic (half the comparison noise)."""
        return self._monotonic

    @property
    def threshold(self) -> float:
        """The public threshold, as given (the noisy one is private)."""
        return self._threshold_given

    @property
    def shares(self) -> tuple[float, ...]:
        """The fractions of ``epsilon`` for the threshold, the comparisons (and the values)."""
        return self._shares

    @property
    def asked(self) -> int:
        """The number of queries answered so far."""
        return self._asked

    @property
    def above(self) -> int:
        """The number of those answered above the threshold."""
        return self._above

    @property
    def halted(self) -> bool:
        """True once ``cutoff`` answers were above the threshold."""
        return self._above >= self._cutoff

    # -- answering (each under the object's lock: see query) -------------------------------

    def _running(self) -> None:
        """Raise SparseVectorHalted once halted."""
        if self.halted:
            raise SparseVectorHalted(
                f"{self._func} has halted: it gave its {self._cutoff} above-threshold "
                f"answer(s) after {self._asked} queries. Create a new {self._func} (a new "
                f"charge of epsilon) to ask more.")

    def _one(self, value: object) -> bool | None:
        """The answer to one Python number within range, without arrays; None for anything
        else (which the array path checks)."""
        noise = self._noise
        if not ((type(value) is float and not noise.discrete) or type(value) is int):
            return None
        v: float = value
        if not abs(v) <= self._limit:                      # also NaN and infinities
            return None
        above = bool(noise.draw_one(self._keys, v, noise.queries) >= self._threshold[0])
        self._asked += 1
        self._above += above
        return above

    def _compare(self, values: ArrayLike) -> tuple[NDArray[np.bool_], NDArray[Any], bool]:
        """The answers to a call's queries (up to the halt), the asked queries' values, and
        whether one scalar was given."""
        noise = self._noise
        base, scalar = _check_values(values, noise, self._scales, "values", self._func)
        threads = resolve_threads(self._threads, self._func, max(base.size, 1))
        above = noise.draw(self._keys, threads, base, noise.queries) >= self._threshold[0]
        # Asked: up to the remaining-th above (as _outcomes, for one run).
        hits = np.flatnonzero(above)
        remaining = self._cutoff - self._above
        asked = base.size if hits.size < remaining else int(hits[remaining - 1]) + 1
        self._asked += asked
        self._above += min(int(hits.size), remaining)
        return above[:asked], base[:asked], scalar

    def __repr__(self) -> str:
        return (f"{self._func}(threshold={self._threshold_given!r}, epsilon={self._epsilon!r}, "
                f"cutoff={self._cutoff}, sensitivity={self._sensitivity!r}, "
                f"monotonic={self._monotonic}; asked {self._asked}, above {self._above}"
                f"{', halted' if self.halted else ''})")


def _start(keys: Keys, threads: int, noise: _Noise,
           threshold: NDArray[Any]) -> tuple[Keys, NDArray[Any]]:
    """The release's kernel: the noisy threshold, and the keys the object keeps for its
    queries."""
    return keys, noise.draw(keys, threads, threshold, noise.threshold)


class Sparse(_SparseVector):
    """Sparse(threshold, *, epsilon, cutoff=1, sensitivity=1.0, monotonic=False, shares=None, accountant=None, rng=None, threads=None)

    The sparse vector technique with cutoff ``c``: answers whether each query is above a
    noisy threshold, until ``c`` answers were (see the module for the algorithm).

    Parameters
    ----------
    threshold : int or float
        The public threshold. An integer (with an integral sensitivity) makes the noise
        discrete and requires integer queries.
    epsilon : float
        Privacy parameter of the whole object, > 0; charged once, at creation.
    cutoff : int, optional
        ``c``: the number of above-threshold answers before the object halts (default 1).
    sensitivity : float, optional
        Every query's sensitivity (default 1).
    monotonic : bool, optional
        True if, between neighbouring datasets, all queries move in the same direction:
        the comparisons then need half the noise.
    shares : tuple of 2 floats, optional
        Fractions of ``epsilon`` for the threshold and the comparisons (default
        ``(0.5, 0.5)``).
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism`; the object keeps drawing from the
        generator ``rng`` resolves to (an int seed is for tests and research only).

    Raises
    ------
    TypeError
        If ``threshold``, ``epsilon`` or ``sensitivity`` is not a real number (a bool
        included); ``cutoff`` or ``threads`` is not an int; ``monotonic`` is not a bool;
        ``shares`` is not a sequence of real numbers; ``accountant`` is not an accountant;
        or ``rng`` is not one of the accepted kinds.
    ValueError
        If ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0; ``cutoff`` < 1;
        ``shares`` has not 2 entries in (0, 1] summing to 1; a noise scale the parameters
        give is outside the samplers' range; ``threshold`` is NaN, infinite or beyond exact
        arithmetic with its noise; ``threads`` is outside [1, 1024]; or ``rng`` is a
        negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.
    SparseVectorHalted
        From :meth:`query` once the object has halted. A bad query raises ``TypeError``
        (not numeric data; a non-integer with an integer threshold) or ``ValueError`` (not
        1-d, NaN, infinite or too large), with nothing drawn and the object unchanged.

    Notes
    -----
    Owned state (:mod:`dpfast._owned`): calls from several threads take turns, each
    holding the object from its cutoff check to its counters, so the object never gives
    more than ``cutoff`` above answers; a query whose conversion calls the object again
    raises ``RuntimeError``. Copies, pickles and use in a forked child raise (each would
    answer ``cutoff`` more queries under the one charge). ``cutoff``, ``above``, ``asked``
    and the parameters are read-only; the noisy threshold is private.

    Examples
    --------
    The whole budget is charged at creation; the answers stop at the second above:

    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> svt = dp.Sparse(100, epsilon=1.0, cutoff=2, accountant=acct, rng=7)
    >>> acct.spent
    (1.0, 0.0)
    >>> svt.query([3, 5, 400, 2, 900, 1])
    array([False, False,  True, False,  True])
    >>> svt.halted, svt.asked, svt.above
    (True, 5, 2)
    """

    def query(self, values: ArrayLike) -> bool | NDArray[np.bool_]:
        """Whether each query's answer is above the threshold: a bool for one number, else
        a bool array that stops at the halt. Raises :class:`SparseVectorHalted` once
        halted."""
        self._enter()
        try:
            self._running()
            one = self._one(values)
            if one is not None:
                return one
            answers, _, scalar = self._compare(values)
            return bool(answers[0]) if scalar else answers
        finally:
            self._leave()


class AboveThreshold(Sparse):
    """AboveThreshold(threshold, *, epsilon, sensitivity=1.0, monotonic=False, shares=None, accountant=None, rng=None, threads=None)

    :class:`Sparse` with a cutoff of 1 (Dwork & Roth, Algorithm 1): halts at the first
    query above the noisy threshold ``T + Lap(2 Delta / epsilon)``, each query compared
    with noise ``Lap(4 Delta / epsilon)`` (with the default even split; half that with
    ``monotonic``).

    Parameters
    ----------
    threshold : int or float
        The public threshold. An integer (with an integral sensitivity) makes the noise
        discrete and requires integer queries.
    epsilon : float
        Privacy parameter of the whole object, > 0; charged once, at creation.
    sensitivity, monotonic, shares, accountant, rng, threads
        As for :class:`Sparse` (an int seed is for tests and research only).

    Raises
    ------
    TypeError
        If ``threshold``, ``epsilon`` or ``sensitivity`` is not a real number (a bool
        included); ``threads`` is not an int; ``monotonic`` is not a bool; ``shares`` is not
        a sequence of real numbers; ``accountant`` is not an accountant; or ``rng`` is not
        one of the accepted kinds.
    ValueError
        If ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0; ``shares`` has not 2
        entries in (0, 1] summing to 1; a noise scale the parameters give is outside the
        samplers' range; ``threshold`` is NaN, infinite or beyond exact arithmetic with its
        noise; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.
    SparseVectorHalted
        From :meth:`query` once the object has halted. A bad query raises ``TypeError``
        (not numeric data; a non-integer with an integer threshold) or ``ValueError`` (not
        1-d, NaN, infinite or too large), with nothing drawn and the object unchanged.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> svt = dp.AboveThreshold(50.0, epsilon=1.0, accountant=acct, rng=3)
    >>> [svt.query(v) for v in (2.0, 10.0, 75.0)]
    [False, False, True]
    >>> svt.halted, acct.spent
    (True, (1.0, 0.0))
    """

    def __init__(self, threshold: float, *, epsilon: float, sensitivity: float = 1.0,
                 monotonic: bool = False, shares: Sequence[float] | None = None,
                 accountant: AccountantLike | None = None, rng: RngLike = None,
                 threads: int | None = None) -> None:
        super().__init__(threshold, epsilon=epsilon, cutoff=1, sensitivity=sensitivity,
                         monotonic=monotonic, shares=shares, accountant=accountant, rng=rng,
                         threads=threads)


class NumericSparse(_SparseVector):
    """NumericSparse(threshold, *, epsilon, cutoff=1, sensitivity=1.0, monotonic=False, shares=None, accountant=None, rng=None, threads=None)

    :class:`Sparse` that also releases a noisy value of each above-threshold query, with
    fresh noise ``Lap(c Delta / eps_3)`` (Lyu et al., Algorithm 7).

    Parameters
    ----------
    threshold : int or float
        The public threshold. An integer (with an integral sensitivity) makes all the noise
        discrete, the queries integers and the released values int64.
    epsilon : float
        Privacy parameter of the whole object, > 0; charged once, at creation.
    cutoff : int, optional
        ``c``: the number of above-threshold answers (and released values) before the
        object halts (default 1).
    shares : tuple of 3 floats, optional
        Fractions of ``epsilon`` for the threshold, the comparisons and the values; default
        ``(0.25, 0.25, 0.5)``.
    sensitivity, monotonic, accountant, rng, threads
        As for :class:`Sparse` (an int seed is for tests and research only).

    Raises
    ------
    TypeError
        If ``threshold``, ``epsilon`` or ``sensitivity`` is not a real number (a bool
        included); ``cutoff`` or ``threads`` is not an int; ``monotonic`` is not a bool;
        ``shares`` is not a sequence of real numbers; ``accountant`` is not an accountant;
        or ``rng`` is not one of the accepted kinds.
    ValueError
        If ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0; ``cutoff`` < 1;
        ``shares`` has not 3 entries in (0, 1] summing to 1; a noise scale the parameters
        give is outside the samplers' range; ``threshold`` is NaN, infinite or beyond exact
        arithmetic with its noise; ``threads`` is outside [1, 1024]; or ``rng`` is a
        negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.
    SparseVectorHalted
        From :meth:`query` once the object has halted. A bad query raises ``TypeError``
        (not numeric data; a non-integer with an integer threshold) or ``ValueError`` (not
        1-d, NaN, infinite or too large), with nothing drawn and the object unchanged.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=2.0)
    >>> svt = dp.NumericSparse(100, epsilon=2.0, cutoff=1, accountant=acct, rng=5)
    >>> above, values = svt.query([10, 20, 500, 30])
    >>> above, values.size
    (array([False, False,  True]), 1)
    >>> print(values)      # a noisy value of the query above (500), with fresh noise
    [496]
    """

    _default_shares = (0.25, 0.25, 0.5)
    _numeric = True

    def query(self, values: ArrayLike) -> tuple[NDArray[np.bool_], NDArray[Any]]:
        """``(above, released)``: whether each query is above the threshold (stopping at the
        halt), and a noisy value for each ``True``, in order (int64 for integer queries
        with discrete noise, else float64). Raises :class:`SparseVectorHalted` once
        halted."""
        self._enter()
        try:
            self._running()
            one = self._one(values)
            if one is not None:
                answers, base = np.array([one]), np.array([values])
            else:
                answers, base, _ = self._compare(values)
            chosen = base[answers]
            threads = resolve_threads(self._threads, self._func, max(chosen.size, 1))
            released = self._noise.draw(self._keys, threads, chosen, self._noise.values) \
                if chosen.size else chosen.copy()
            return answers, released
        finally:
            self._leave()


def sample_runs(values: ArrayLike, threshold: float, *, epsilon: float, runs: int,
                cutoff: int = 1, sensitivity: float = 1.0, monotonic: bool = False,
                shares: Sequence[float] | None = None, rng: RngLike = None,
                threads: int | None = None) -> NDArray[np.int8]:
    """The answers of ``runs`` independent :class:`Sparse` objects to the same queries, for
    auditing (:mod:`dpfast.audit`): it charges nothing, so it is not a release.

    Row ``r`` holds run ``r``'s answers: 1 above, 0 below, -1 not asked (after the halt).
    Each run's threshold and query noise come from the same samplers, drawn in the same
    order, as an object's: ``runs=1`` gives exactly the answers of ``Sparse(threshold, ...,
    rng=rng).query(values)`` for an array ``values`` (padded with -1; tested).
    """
    func = "sample_runs"
    n = _v.check_positive_int(runs, "runs", func)
    _, c, _, _, _, noise, base_t = _checked(threshold, epsilon, cutoff, sensitivity,
                                            monotonic, shares, Sparse._default_shares, func)
    base_q, _ = _check_values(values, noise, (noise.queries,), "values", func)
    keys = sampler_keys(func, rng)
    m = base_q.size
    noisy_t = noise.draw(keys, resolve_threads(threads, func, n), np.repeat(base_t, n),
                         noise.threshold)
    noisy_q = noise.draw(keys, resolve_threads(threads, func, n * m), np.tile(base_q, n),
                         noise.queries).reshape(n, m)
    return _outcomes(noisy_q, noisy_t, c)
