"""Releases of tables counted from records: histograms, contingency tables and counts of
categories.

Histogram cells are disjoint, so adding or removing one person changes one count by one:
the L1 and L2 sensitivities are 1 whatever the number of cells. Discrete Laplace noise of
scale 1/epsilon per cell gives epsilon-DP for the whole table (Dwork & Roth, example 3.2);
discrete Gaussian noise of parameter sigma per cell gives 1/(2 sigma**2)-zCDP (Canonne,
Kamath & Steinke 2020), with sigma chosen from ``rho=``, or the tightest for the one
release from ``epsilon=`` and ``delta=`` (``noise="gaussian"``; :mod:`dpfast.noise`).

Each release checks its arguments (the public edges and categories:
:mod:`dpfast.releases.binning`), counts the records in one compiled pass, charges the
accountant, then noises the cells by chunk with one stream per chunk; for a given generator
state the release is the same for any number of threads.
"""
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .._release import Release
from ..noise import Measure
from . import postprocess as _post
from .binning import category_counts, histogram_counts, histogramdd_counts
from .cells import counting_measure

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Literal, TypeAlias, TypeVar, overload

    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

    #: The named post-processing steps (a callable is the other choice).
    _Named: TypeAlias = Literal["clip", "consistent"] | None
    _Postprocess: TypeAlias = _Named | Callable[[Any], Any]
    #: What a ``total`` parameter accepts (an integral float too, at run time).
    _Total: TypeAlias = int | np.integer[Any]
    _T = TypeVar("_T")
    #: The ``noise=`` keyword of a counting release.
    _Noise: TypeAlias = Literal["laplace", "gaussian"]

__all__ = ["histogram", "histogramdd", "count_categories", "check_postprocess"]


def _prepare(func: str, noise: object, epsilon: object, delta: object, rho: object,
             accountant: "AccountantLike | None", rng: "RngLike", threads: int | None,
             postprocess: object, total: object) -> "tuple[Measure, Release]":
    """The shared arguments of a counting release, checked before anything happens: the
    release's check phase (its noise and cost, over the table's sensitivity 1 in l1 and
    l2; the accountant, generator and threads resolved now, before the records are
    counted)."""
    m = counting_measure(func, noise, epsilon, delta, rho, accountant=accountant)
    rel = Release(func, accountant, m.epsilon, m.delta, rng, threads, rho=m.rho)
    if m.epsilon is None:
        rel.affordable()            # rho alone on an (epsilon, delta) budget: refused now
    check_postprocess(postprocess, func)
    if total is not None:
        if postprocess != "consistent":
            raise ValueError(f"The 'total' parameter of {func} only applies with "
                             f"postprocess='consistent'. Got total={total!r} with "
                             f"postprocess={postprocess!r} instead.")
        _post.check_integer_total(total, func, _post.MAX_TOTAL)
    return m, rel


def check_postprocess(option: object, func: str) -> None:
    if option is None or option in ("clip", "consistent") or callable(option):
        return
    raise ValueError(f"The 'postprocess' parameter of {func} must be None, 'clip', "
                     f"'consistent' or a callable. Got {option!r} instead.")


def _release(counts: "NDArray[np.int64]", m: Measure, rel: Release,
             postprocess: "_Postprocess", total: "_Total | None") -> Any:
    """Charge, noise the exact counts in place under the release's key, post-process."""
    flat = counts.reshape(-1)
    key = rel.charge()
    m.noise.fill(key, rel.threads if flat.size > _native.CHUNK else 1, flat, flat)
    return _post.apply(counts, postprocess, total=total)


if TYPE_CHECKING:
    @overload
    def histogram(data: ArrayLike, bins: int | ArrayLike = 10, *,
                  noise: _Noise = "laplace", epsilon: float | None = None,
                  delta: float | None = None, rho: float | None = None,
                  range: tuple[float, float] | None = None,
                  accountant: AccountantLike | None = None, rng: RngLike = None,
                  threads: int | None = None, postprocess: _Named = None,
                  total: _Total | None = None,
                  ) -> tuple[NDArray[np.int64], NDArray[np.float64]]: ...
    @overload
    def histogram(data: ArrayLike, bins: int | ArrayLike = 10, *,
                  noise: _Noise = "laplace", epsilon: float | None = None,
                  delta: float | None = None, rho: float | None = None,
                  range: tuple[float, float] | None = None,
                  accountant: AccountantLike | None = None, rng: RngLike = None,
                  threads: int | None = None,
                  postprocess: Callable[[NDArray[np.int64]], _T],
                  total: None = None) -> tuple[_T, NDArray[np.float64]]: ...


def histogram(data: "ArrayLike", bins: "int | ArrayLike" = 10, *, noise: str = "laplace",
              epsilon: float | None = None, delta: float | None = None,
              rho: float | None = None, range: "tuple[float, float] | None" = None,
              accountant: "AccountantLike | None" = None, rng: "RngLike" = None,
              threads: int | None = None, postprocess: "_Postprocess" = None,
              total: "_Total | None" = None) -> "tuple[Any, NDArray[np.float64]]":
    """histogram(data, bins=10, *, noise="laplace", epsilon=None, delta=None, rho=None, range=None, accountant=None, rng=None, threads=None, postprocess=None, total=None)

    A differentially private histogram: exact counts plus discrete Laplace noise of scale
    1/epsilon (epsilon-DP), or discrete Gaussian noise (``noise="gaussian"``).

    Parameters
    ----------
    data : array_like
        Numeric records (flattened, as by ``numpy.histogram``). NaN or infinite values are
        an error; values outside the edges are not counted.
    bins : int or sequence of float
        Number of equal-width bins over ``range``, or the bin edges (finite, increasing).
        Strings such as ``"auto"`` are refused: they pick edges from the data.
    noise : {"laplace", "gaussian"}, optional
        ``"laplace"`` (default): discrete Laplace noise of scale ``1/epsilon``, epsilon-DP.
        ``"gaussian"``: discrete Gaussian noise, either of sigma ``1/sqrt(2 rho)`` (``rho``
        alone: rho-zCDP, charged as rho) or the smallest sigma giving (epsilon, delta)-DP
        for this one release (``epsilon`` and ``delta``; charged as (epsilon, delta)).
    epsilon : float, optional
        Privacy parameter, charged to the accountant before the noise is drawn (required
        with Laplace noise).
    delta : float, optional
        With Gaussian noise and ``epsilon``: delta in (0, 1). Laplace noise takes none (or
        0).
    rho : float, optional
        With Gaussian noise, alone: the zCDP cost, > 0. A rho-only release needs an
        accountant that holds a zCDP budget (``dp.Accountant(rho=...)`` or
        ``composition="zcdp"``).
    range : (float, float), optional
        Public lower and upper edge; required when ``bins`` is an int.
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism`.
    postprocess : {None, "clip", "consistent"} or callable, optional
        Post-processing of the noisy counts (free under DP): ``"clip"`` sets negative counts
        to 0; ``"consistent"`` returns non-negative integers summing to ``total``.
    total : int, optional
        Total for ``postprocess="consistent"`` (default: the clipped, rounded sum of the
        noisy counts).

    Returns
    -------
    counts : ndarray of int64 (or what ``postprocess`` returns)
        The noisy count of each bin, ``len(edges) - 1`` of them.
    edges : ndarray of float64
        The public bin edges (from ``bins`` and ``range``, never from the data).

    Raises
    ------
    TypeError
        If ``data`` is not numeric (strings, booleans, complex numbers, objects, dates, a
        masked array); ``bins`` is neither an int nor a sequence of numbers; ``range`` is not a
        pair of real numbers; ``epsilon``, ``delta`` or ``rho`` is not a real number;
        ``accountant`` is not an accountant; ``rng`` is not one of the accepted kinds; or
        ``threads`` is not an int.
    ValueError
        If ``bins`` is a string such as ``"auto"``, or an int without ``range`` (edges from
        the data are refused); ``bins`` is an int below 1 or above ``MAX_CELLS`` (2**34);
        the edges are not finite and strictly increasing, or ``range`` does not have
        ``low < high``; ``data`` holds NaN or infinity (the message gives its index, never
        its value); ``noise`` is not ``"laplace"`` or ``"gaussian"``; the privacy keywords do
        not fit the noise (Laplace: ``epsilon`` required, no ``delta`` or ``rho``; Gaussian:
        ``rho`` alone, or ``epsilon`` and ``delta`` in (0, 1)) or are NaN, infinite or out of
        range; ``rho`` alone is given to an accountant of an (epsilon, delta) budget;
        ``postprocess`` is not one of the accepted values; ``total`` is given without
        ``postprocess="consistent"`` or is not a non-negative integer; ``threads`` is outside
        [1, 1024]; or ``rng`` is a negative seed. Raised, as
        the TypeErrors, before anything is charged or drawn.
    BudgetExceededError
        If the accountant cannot afford the release; nothing is charged or drawn.

    Notes
    -----
    Semantics of edges as in ``numpy.histogram``: ``[e_i, e_{i+1})``, the last bin closed.
    Edges are float64 whatever the data; integer records are binned exactly when the edges
    are integers equally spaced (a fast integer path), and otherwise compared as float64
    (so integers beyond 2**53 are rounded first; numpy compares them exactly).
    Accuracy: :func:`dpfast.max_error_bound` with ``k = len(counts)`` (Laplace noise); for
    Gaussian noise, each cell's noise has variance at most sigma**2 and is sigma-subgaussian
    (:class:`dpfast.noise.Gaussian`).

    Examples
    --------
    Ages in four bins of 25 years, at epsilon 1 of a budget of 2 (``rng=7`` fixes the noise
    for this example: a seed is for tests and research only, never for a real release):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.array([23, 35, 35, 47, 52, 61, 70, 18])
    >>> acct = dp.Accountant(epsilon=2.0)
    >>> counts, edges = dp.histogram(ages, bins=4, range=(0, 100), epsilon=1.0,
    ...                              accountant=acct, rng=7)
    >>> print(counts, edges.tolist())
    [ 1  3  2 -1] [0.0, 25.0, 50.0, 75.0, 100.0]
    >>> print(float(acct.remaining[0]))
    1.0

    Explicit edges, and counts made consistent with a public total:

    >>> counts, _ = dp.histogram(ages, bins=[0, 18, 65, 120], epsilon=0.5,
    ...                          postprocess="consistent", total=8, accountant=acct, rng=7)
    >>> print(int(counts.sum()), counts.min() >= 0)
    8 True
    """
    func = "histogram"
    m, rel = _prepare(func, noise, epsilon, delta, rho, accountant, rng, threads, postprocess,
                      total)
    counts, edges = histogram_counts(data, bins, range, func, rel.threads)
    return _release(counts, m, rel, postprocess, total), edges


if TYPE_CHECKING:
    @overload
    def histogramdd(sample: ArrayLike, bins: int | Sequence[int | ArrayLike], *,
                    noise: _Noise = "laplace", epsilon: float | None = None,
                    delta: float | None = None, rho: float | None = None,
                    range: Sequence[tuple[float, float] | None] | None = None,
                    accountant: AccountantLike | None = None, rng: RngLike = None,
                    threads: int | None = None, postprocess: _Named = None,
                    total: _Total | None = None,
                    ) -> tuple[NDArray[np.int64], list[NDArray[np.float64]]]: ...
    @overload
    def histogramdd(sample: ArrayLike, bins: int | Sequence[int | ArrayLike], *,
                    noise: _Noise = "laplace", epsilon: float | None = None,
                    delta: float | None = None, rho: float | None = None,
                    range: Sequence[tuple[float, float] | None] | None = None,
                    accountant: AccountantLike | None = None, rng: RngLike = None,
                    threads: int | None = None,
                    postprocess: Callable[[NDArray[np.int64]], _T],
                    total: None = None) -> tuple[_T, list[NDArray[np.float64]]]: ...


def histogramdd(sample: "ArrayLike", bins: Any, *, noise: str = "laplace",
                epsilon: float | None = None, delta: float | None = None,
                rho: float | None = None,
                range: "Sequence[tuple[float, float] | None] | None" = None,
                accountant: "AccountantLike | None" = None, rng: "RngLike" = None,
                threads: int | None = None, postprocess: "_Postprocess" = None,
                total: "_Total | None" = None) -> "tuple[Any, list[NDArray[np.float64]]]":
    """histogramdd(sample, bins, *, noise="laplace", epsilon=None, delta=None, rho=None, range=None, accountant=None, rng=None, threads=None, postprocess=None, total=None)

    A differentially private contingency table of D-dimensional records (Laplace or
    Gaussian noise, as :func:`histogram`).

    Parameters
    ----------
    sample : (N, D) array_like, or a sequence of D arrays of length N
        As for ``numpy.histogramdd``. NaN or infinite coordinates are an error.
    bins : int, or sequence of D ints or edge arrays
        Per-dimension numbers of bins (each with its public range) or edges.
    range : sequence of D (low, high) pairs, optional
        Required for every dimension whose bins are given as a number.
    noise, epsilon, delta, rho, accountant, rng, threads, postprocess, total
        As for :func:`histogram`. One record is in one cell, so the sensitivity is 1 (in
        l1 and in l2).

    Returns
    -------
    counts : ndarray of int64, shape (nbins_1, ..., nbins_D)
        The noisy count of each cell (or what ``postprocess`` returns).
    edges : list of D arrays of float64
        The public edges of each dimension.

    Raises
    ------
    TypeError
        As for :func:`histogram` (``sample`` in place of ``data``).
    ValueError
        As for :func:`histogram`, and if ``sample`` is not an (N, D) array or D arrays of
        equal length; ``bins`` or ``range`` does not give one entry per dimension; a
        dimension given as a number of bins has no public range; or the table would have
        more than ``MAX_CELLS`` (2**34) cells (count such a table elsewhere and release it
        with :func:`dpfast.noisy_counts` and ``out=``). Raised, as
        the TypeErrors, before anything is charged or drawn.
    BudgetExceededError
        If the accountant cannot afford the release; nothing is charged or drawn.

    Examples
    --------
    Age by a 0/1 attribute (``rng=7``: a seed is for tests and research only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> people = np.array([[30, 0], [41, 1], [52, 1], [67, 0]])
    >>> table, edges = dp.histogramdd(people, bins=[4, 2], range=[(0, 100), (0, 2)],
    ...                               epsilon=1.0, accountant=dp.Accountant(), rng=7)
    >>> table.shape, [e.tolist() for e in edges]
    ((4, 2), [[0.0, 25.0, 50.0, 75.0, 100.0], [0.0, 1.0, 2.0]])

    Discrete Gaussian noise paid in rho from a zCDP budget:

    >>> zcdp = dp.Accountant(rho=0.5)
    >>> table, _ = dp.histogramdd(people, bins=[2, 2], range=[(0, 100), (0, 2)],
    ...                           noise="gaussian", rho=0.125, accountant=zcdp, rng=7)
    >>> print(table.dtype, zcdp.spent.rho, zcdp.remaining.rho)
    int64 0.125 0.375
    """
    func = "histogramdd"
    m, rel = _prepare(func, noise, epsilon, delta, rho, accountant, rng, threads, postprocess,
                      total)
    counts, edges = histogramdd_counts(sample, bins, range, func, rel.threads)
    return _release(counts, m, rel, postprocess, total), edges


if TYPE_CHECKING:
    @overload
    def count_categories(values: ArrayLike, categories: Sequence[Any] | NDArray[Any], *,
                         noise: _Noise = "laplace", epsilon: float | None = None,
                         delta: float | None = None, rho: float | None = None,
                         other: bool = False,
                         accountant: AccountantLike | None = None, rng: RngLike = None,
                         threads: int | None = None, postprocess: _Named = None,
                         total: _Total | None = None) -> NDArray[np.int64]: ...
    @overload
    def count_categories(values: ArrayLike, categories: Sequence[Any] | NDArray[Any], *,
                         noise: _Noise = "laplace", epsilon: float | None = None,
                         delta: float | None = None, rho: float | None = None,
                         other: bool = False,
                         accountant: AccountantLike | None = None, rng: RngLike = None,
                         threads: int | None = None,
                         postprocess: Callable[[NDArray[np.int64]], _T],
                         total: None = None) -> _T: ...


def count_categories(values: "ArrayLike", categories: "Sequence[Any] | NDArray[Any]", *,
                     noise: str = "laplace", epsilon: float | None = None,
                     delta: float | None = None, rho: float | None = None,
                     other: bool = False, accountant: "AccountantLike | None" = None,
                     rng: "RngLike" = None, threads: int | None = None,
                     postprocess: "_Postprocess" = None, total: "_Total | None" = None) -> Any:
    """count_categories(values, categories, *, noise="laplace", epsilon=None, delta=None, rho=None, other=False, accountant=None, rng=None, threads=None, postprocess=None, total=None)

    A differentially private count of each category in a public list (Laplace or Gaussian
    noise, as :func:`histogram`).

    Parameters
    ----------
    values : array_like, pandas Series or Categorical
        One categorical value per record. Missing values (None, NaN) are outside the
        categories.
    categories : sequence
        The public list of categories (not taken from the data: a category that appears
        only in the data would reveal that someone has it).
    noise, epsilon, delta, rho
        As for :func:`histogram` (each record is in one cell: sensitivity 1).
    other : bool, optional
        Count values outside ``categories`` (and missing values) in one extra cell at the end.
        By default such values are an error, raised before anything is charged.
    accountant, rng, threads, postprocess, total
        As for :func:`histogram`.

    Returns
    -------
    ndarray of int64
        ``len(categories)`` noisy counts, in the order of ``categories``, plus the "other"
        cell if requested (or what ``postprocess`` returns).

    Raises
    ------
    TypeError
        If ``categories`` is not an ordered sequence (a set, say); ``other`` is not a bool;
        or, as for :func:`histogram`, a privacy keyword, ``accountant``, ``rng`` or
        ``threads`` is of the wrong kind.
    ValueError
        If ``categories`` repeats a category; ``values`` holds a value outside
        ``categories`` (or a missing one) and ``other`` is False (the message gives the
        record's position, never the value); or, as for :func:`histogram`, the privacy
        keywords, ``postprocess``, ``total``, ``threads`` or ``rng`` are out of range. Raised, as
        the TypeErrors, before anything is charged or drawn.
    BudgetExceededError
        If the accountant cannot afford the release; nothing is charged or drawn.

    Examples
    --------
    Marital status over a public list, a missing value counted in the "other" cell
    (``rng=7``: a seed is for tests and research only):

    >>> import dpfast as dp
    >>> status = ["Married", "Never-married", "Married", "Divorced", None]
    >>> public = ["Married", "Never-married", "Divorced", "Widowed"]
    >>> counts = dp.count_categories(status, public, other=True, epsilon=1.0,
    ...                              accountant=dp.Accountant(), rng=7)
    >>> print(counts)
    [ 1  1  0 -1  1]
    """
    func = "count_categories"
    m, rel = _prepare(func, noise, epsilon, delta, rho, accountant, rng, threads, postprocess,
                      total)
    counts = category_counts(values, categories, other, func, rel.threads)
    return _release(counts, m, rel, postprocess, total)


