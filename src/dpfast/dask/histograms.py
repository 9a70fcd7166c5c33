"""Histograms of records in a Dask collection: :func:`histogram`, :func:`histogramdd` and
:func:`count_categories`, each partition counted on a worker with public bins or categories,
the counts summed and noised on the workers (:mod:`dpfast.dask.graph`).

Each release equals its single-machine namesake applied to all the records with the same
seed, whatever the partitions.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v
from ..releases import binning
from .graph import released_counts

if TYPE_CHECKING:
    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["histogram", "histogramdd", "count_categories"]


def histogram(values: Any, bins: Any = 10, *, noise: str = "laplace",
              epsilon: float | None = None, delta: float | None = None,
              rho: float | None = None, range: Any = None,
              accountant: AccountantLike | None = None, rng: RngLike = None,
              postprocess: Any = None) -> tuple[Any, np.ndarray]:
    """histogram(values, bins=10, *, noise="laplace", epsilon=None, delta=None, rho=None, range=None, accountant=None, rng=None, postprocess=None)

    :func:`dpfast.histogram` of a Dask Series or 1-D Dask array, with public bins: each
    partition counted on a worker, the counts summed and noised on the workers; the same
    release as ``dpfast.histogram`` on the whole column with the same seed.

    Parameters
    ----------
    values : dask.dataframe.Series or dask.array.Array
        Numeric records (a numpy integer or floating dtype), one per row. NaN or infinite
        values are an error; values outside the edges are not counted.
    bins : int or sequence of float, optional
        Number of equal-width bins over ``range`` (default 10), or the bin edges (finite,
        strictly increasing). Strings such as ``"auto"`` are refused: they pick edges from
        the data.
    noise : {"laplace", "gaussian"}, optional
        ``"laplace"`` (default, with ``epsilon``: epsilon-DP) or ``"gaussian"`` (discrete
        Gaussian noise: with ``rho``, rho-zCDP; or with ``epsilon`` and ``delta``, the
        smallest sigma giving (epsilon, delta)-DP for this table of sensitivity 1).
    epsilon, delta, rho : float, optional
        The release's cost, charged once on the client, after the records are read and
        before any noise is drawn.
    range : (float, float), optional
        Public lower and upper edge; required when ``bins`` is an int.
    accountant : dpfast.Accountant, optional
        The budget charged (default: :func:`dpfast.default_accountant`).
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases): the key is drawn from the OS. A seed is
        for tests and research only.
    postprocess : {None, "clip", "consistent"} or callable, optional
        Post-processing of the noisy counts (free under DP), as for
        :func:`dpfast.histogram` (``"consistent"``: non-negative integers summing to the
        clipped, rounded sum of the noisy counts).

    Returns
    -------
    counts : ndarray of int64
        The noisy counts, one per bin.
    edges : ndarray of float64
        The public bin edges.

    Raises
    ------
    TypeError
        ``values`` does not hold numeric values of a numpy dtype, or is not a Dask Series
        or array; ``bins`` is neither an int nor a sequence of edges; a bound of ``range``
        is not a real number; the privacy keywords, ``accountant`` or ``rng`` are of the
        wrong kind.
    ValueError
        ``bins`` is a string, below 1, or not finite strictly increasing edges; ``range``
        is missing with an int ``bins``, or has low >= high; ``postprocess`` is not one of
        the accepted values; the privacy keywords do not fit the noise or are out of range.
        Found in the read of the records, before the charge: a NaN or infinite value (the
        message gives its position within its chunk or partition, never the value).
    BudgetExceededError
        The accountant cannot afford the release (nothing is read).

    Examples
    --------
    Ages in a Dask Series of three partitions, in four bins of 25 years (``rng=0`` makes
    the example reproducible: a seed is for tests and research only, never for a real
    release):

    >>> import dask.dataframe as dd, numpy as np, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> ages = pd.Series(np.arange(1000) % 97, name="age")
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> counts, edges = dpd.histogram(dd.from_pandas(ages, npartitions=3), bins=4,
    ...                               range=(0, 100), epsilon=0.5, accountant=acct, rng=0)
    >>> counts.tolist(), edges.tolist()
    ([273, 256, 251, 216], [0.0, 25.0, 50.0, 75.0, 100.0])
    >>> np.histogram(ages, bins=4, range=(0, 100))[0].tolist()
    [275, 255, 250, 220]
    >>> tuple(acct.spent)
    (0.5, 0.0)
    """
    func = "histogram"
    dtype = values.dtype
    if getattr(dtype, "kind", "O") not in "iuf" or not isinstance(dtype, np.dtype):
        raise TypeError(f"The 'values' parameter of dpfast.dask.{func} must hold numeric "
                        f"values (a numpy dtype). Got dtype {dtype} instead.")
    _, edges = binning.histogram_counts(np.empty(0, dtype=dtype), bins, range, func, 1)
    return released_counts(func, values, None, _histogram_counts, (bins, range), noise,
                           epsilon, delta, rho, accountant, rng, postprocess), edges


def _histogram_counts(part: Any, bins: Any, range: Any) -> np.ndarray:
    column = part.iloc[:, 0] if hasattr(part, "columns") else part
    return binning.histogram_counts(np.asarray(column), bins, range, "histogram", 1)[0]


def histogramdd(frame: Any, bins: Any, *, noise: str = "laplace",
                epsilon: float | None = None, delta: float | None = None,
                rho: float | None = None, range: Any = None,
                accountant: AccountantLike | None = None, rng: RngLike = None,
                postprocess: Any = None) -> tuple[Any, list[np.ndarray]]:
    """histogramdd(frame, bins, *, noise="laplace", epsilon=None, delta=None, rho=None, range=None, accountant=None, rng=None, postprocess=None)

    :func:`dpfast.histogramdd` of the columns of a Dask DataFrame (or of a 2-D Dask array,
    one record per row), with public bins: the same release as ``dpfast.histogramdd`` on
    all the records with the same seed.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame or dask.array.Array
        Numeric columns, one dimension each (or a 2-D array, one record per row). NaN or
        infinite values are an error; records outside the edges are not counted.
    bins : int or sequence
        Bins per dimension: one int (equal-width bins over each dimension's ``range``) or
        one entry per dimension (an int, or the edges: finite, strictly increasing).
    noise : {"laplace", "gaussian"}, optional
        ``"laplace"`` (default, with ``epsilon``) or ``"gaussian"`` (with ``rho``, or with
        ``epsilon`` and ``delta``), as for :func:`histogram`.
    epsilon, delta, rho : float, optional
        The release's cost, charged once on the client, after the records are read and
        before any noise is drawn.
    range : sequence of (float, float) or None, optional
        One public (low, high) pair per dimension (``None`` for a dimension given edges);
        required for a dimension whose bins are an int.
    accountant : dpfast.Accountant, optional
        The budget charged (default: :func:`dpfast.default_accountant`).
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases): the key is drawn from the OS. A seed is
        for tests and research only.
    postprocess : {None, "clip", "consistent"} or callable, optional
        Post-processing of the noisy counts (free under DP), as for :func:`histogram`.

    Returns
    -------
    counts : ndarray of int64
        The noisy counts, of shape ``(bins_1, ..., bins_D)``.
    edges : list of ndarray of float64
        The public edges of each dimension.

    Raises
    ------
    TypeError
        ``frame`` has a column (or dtype) that is not numeric, or is not a Dask DataFrame
        or array; an entry of ``bins`` is neither an int nor a sequence of edges; a bound
        of ``range`` is not a real number; the privacy keywords, ``accountant`` or ``rng``
        are of the wrong kind.
    ValueError
        ``bins`` is a string, or does not give one entry per dimension; a dimension's bins
        are below 1 or not finite strictly increasing edges; ``range`` does not give one
        pair per dimension, lacks one an int ``bins`` needs, or has low >= high; the table
        would have too many cells; ``postprocess`` is not one of the accepted values; the
        privacy keywords do not fit the noise or are out of range. Found in the read of the
        records, before the charge: a NaN or infinite value (by its position within its
        chunk, never by value).
    BudgetExceededError
        The accountant cannot afford the release (nothing is read).

    Examples
    --------
    Records of (age, hours worked) in a 2 x 2 table (``rng=0`` makes the example
    reproducible: a seed is for tests and research only):

    >>> import dask.dataframe as dd, numpy as np, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> people = pd.DataFrame({"age": np.arange(400) % 80, "hours": np.arange(400) % 50})
    >>> counts, edges = dpd.histogramdd(dd.from_pandas(people, npartitions=2), bins=2,
    ...                                 range=[(0, 80), (0, 50)], epsilon=1.0,
    ...                                 accountant=dp.Accountant(), rng=0)
    >>> counts.tolist()
    [[99, 100], [100, 98]]
    >>> [e.tolist() for e in edges]
    [[0.0, 40.0, 80.0], [0.0, 25.0, 50.0]]
    """
    func = "histogramdd"
    dtypes = list(frame.dtypes) if hasattr(frame, "dtypes") else [frame.dtype]
    if not all(getattr(t, "kind", "O") in "iuf" for t in dtypes):
        raise TypeError(f"The 'frame' parameter of dpfast.dask.{func} must hold numeric "
                        f"columns. Got dtypes {[str(t) for t in dtypes]} instead.")
    dims = len(frame.columns) if hasattr(frame, "columns") else frame.shape[1]
    _, edges = binning.histogramdd_counts(np.empty((0, dims)), bins, range, func, 1)
    return released_counts(func, frame, None, _histogramdd_counts, (bins, range), noise,
                           epsilon, delta, rho, accountant, rng, postprocess), edges


def _histogramdd_counts(part: Any, bins: Any, range: Any) -> np.ndarray:
    # Numeric columns (checked before reading) convert without error; a conversion that
    # could fail would print the record.
    values = part.to_numpy(dtype=np.float64, na_value=np.nan) if hasattr(part, "columns") \
        else np.asarray(part)
    if values.dtype.kind not in "iuf":
        raise TypeError("The 'frame' parameter of dpfast.dask.histogramdd must hold numeric "
                        f"columns. Got a block of dtype {values.dtype} instead.")
    return binning.histogramdd_counts(values.astype(np.float64, copy=False), bins, range,
                                      "histogramdd", 1)[0]


def count_categories(values: Any, categories: Sequence[Any], *, noise: str = "laplace",
                     epsilon: float | None = None, delta: float | None = None,
                     rho: float | None = None, other: bool = False,
                     accountant: AccountantLike | None = None, rng: RngLike = None,
                     postprocess: Any = None) -> Any:
    """count_categories(values, categories, *, noise="laplace", epsilon=None, delta=None, rho=None, other=False, accountant=None, rng=None, postprocess=None)

    :func:`dpfast.count_categories` of a Dask Series (or one-column DataFrame): the count
    of each public category, noised; the same release as on the whole column with the same
    seed.

    Parameters
    ----------
    values : dask.dataframe.Series or dask.dataframe.DataFrame
        The records' categories, one per row (a one-column DataFrame: its column).
    categories : sequence
        The public categories, in the order of the released cells (chosen without the
        data).
    noise : {"laplace", "gaussian"}, optional
        ``"laplace"`` (default, with ``epsilon``) or ``"gaussian"`` (with ``rho``, or with
        ``epsilon`` and ``delta``), as for :func:`histogram`.
    epsilon, delta, rho : float, optional
        The release's cost, charged once on the client, after the records are read and
        before any noise is drawn.
    other : bool, optional
        False (default): a value outside ``categories`` is an error. True: such values are
        counted in one extra cell, last.
    accountant : dpfast.Accountant, optional
        The budget charged (default: :func:`dpfast.default_accountant`).
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases): the key is drawn from the OS. A seed is
        for tests and research only.
    postprocess : {None, "clip", "consistent"} or callable, optional
        Post-processing of the noisy counts (free under DP), as for :func:`histogram`.

    Returns
    -------
    ndarray of int64
        The noisy count of each category (and of the others last, with ``other=True``).

    Raises
    ------
    TypeError
        ``other`` is not a bool; ``categories`` is not an ordered sequence; ``values`` is
        not a Dask Series, DataFrame or array; the privacy keywords, ``accountant`` or
        ``rng`` are of the wrong kind.
    ValueError
        ``categories`` repeats a category; ``postprocess`` is not one of the
        accepted values; the privacy keywords do not fit the noise or are out of range.
        Found in the read of the records, before the charge: a value outside
        ``categories`` without ``other=True`` (named by its position within its partition,
        never its value).
    BudgetExceededError
        The accountant cannot afford the release (nothing is read).

    Examples
    --------
    Each record's region, counted with the regions outside the list in a last cell
    (``rng=0`` makes the example reproducible: a seed is for tests and research only):

    >>> import dask.dataframe as dd, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> region = pd.Series(["north", "south", "east", "west", "north"] * 200)
    >>> out = dpd.count_categories(dd.from_pandas(region, npartitions=4),
    ...                            ["north", "south", "east"], other=True, epsilon=1.0,
    ...                            accountant=dp.Accountant(), rng=0)
    >>> out.tolist()
    [399, 200, 200, 198]
    """
    func = "count_categories"
    other = _v.check_bool(other, "other", func)
    binning.category_counts(np.empty(0, dtype=object), categories, other, func, 1)  # checks
    return released_counts(func, values, None, _category_counts, (list(categories), other),
                           noise, epsilon, delta, rho, accountant, rng, postprocess)


def _category_counts(part: Any, categories: list[Any], other: bool) -> np.ndarray:
    series = part.iloc[:, 0] if hasattr(part, "columns") else part
    return binning.category_counts(series, categories, other, "count_categories", 1)
