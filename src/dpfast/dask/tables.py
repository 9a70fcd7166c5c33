"""Tables of categorical records in a Dask DataFrame: :func:`crosstab` (public categories per
column), :func:`census_hierarchy` and :func:`tree_mechanism` (records coded by their leaf
unit), the counts summed on the workers and the release made on a worker
(:mod:`dpfast.dask.graph`).

Every check that needs no data (columns, dtypes, public categories, the hierarchy, the
privacy keywords) is made here before anything is read; the records' own errors (a value
outside the public categories, a code out of range) are raised by the counting tasks, in the
read before the charge.
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np

from .. import _native
from .. import tables as labelled
from .. import validation as _v
from ..linear import marginal_plan
from .graph import counted, released, released_counts

if TYPE_CHECKING:
    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["crosstab", "census_hierarchy", "tree_mechanism"]


def crosstab(frame: Any, columns: Hashable | Sequence[Hashable], *,
             epsilon: float | None = None, keys: Mapping[Hashable, Sequence[Any]],
             noise: str = "laplace", delta: float | None = None, rho: float | None = None,
             accountant: AccountantLike | None = None, rng: RngLike = None) -> Any:
    """crosstab(frame, columns, *, epsilon=None, keys, noise="laplace", delta=None, rho=None, accountant=None, rng=None)

    :func:`dpfast.crosstab` of a Dask DataFrame: the noisy count of every combination of
    the columns' public categories, labelled; the same table as ``dpfast.crosstab`` on the
    whole frame with the same seed.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The records, one per row.
    columns : column name or sequence of column names
        The columns crossed (one or more).
    epsilon : float, optional
        Required with Laplace noise; with Gaussian noise, together with ``delta``.
    keys : mapping of column name to sequence
        Every crossed column's public categories (required: chosen without the data), in
        the order of the table's rows and columns.
    noise : {"laplace", "gaussian"}, optional
        ``"laplace"`` (default: epsilon-DP) or ``"gaussian"`` (discrete Gaussian noise,
        with ``rho`` or with ``epsilon`` and ``delta``; one table of sensitivity 1).
    delta, rho : float, optional
        The Gaussian noise's cost, as for :func:`dpfast.crosstab`.
    accountant : dpfast.Accountant, optional
        The budget charged, once, on the client (default:
        :func:`dpfast.default_accountant`).
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases): the key is drawn from the OS. A seed is
        for tests and research only.

    Returns
    -------
    pandas.DataFrame or pandas.Series
        The noisy counts (int64), labelled by the public categories: a DataFrame for two
        columns (rows the first column's categories), else a Series (with a MultiIndex for
        three or more).

    Raises
    ------
    TypeError
        ``frame`` is not a Dask DataFrame; ``columns`` or ``keys`` is not of an accepted
        kind; the privacy keywords, ``accountant`` or ``rng`` are of the wrong kind.
    ValueError
        A column is missing from ``frame`` or named twice; ``keys`` lacks a crossed
        column's categories, or gives empty or repeated ones, or a Dask collection (data,
        not public categories: refused unread); the privacy keywords do not fit the noise
        or are out of range. Found in the read of the records, before the charge: a value
        outside its column's public categories, or a missing value (by its position within
        its partition, never by value).
    BudgetExceededError
        The accountant cannot afford the release (nothing is read).

    Examples
    --------
    Sex by employment status from a frame in three partitions (``rng=0`` makes the example
    reproducible: a seed is for tests and research only, never for a real release):

    >>> import dask.dataframe as dd, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> people = pd.DataFrame({"sex": ["F", "M", "F", "F", "M"] * 60,
    ...                        "work": ["yes", "yes", "no", "yes", "no"] * 60})
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> table = dpd.crosstab(dd.from_pandas(people, npartitions=3), ["sex", "work"],
    ...                      keys={"sex": ["F", "M"], "work": ["no", "yes"]},
    ...                      epsilon=0.5, accountant=acct, rng=0)
    >>> print(table)
    work  no  yes
    sex
    F     58  121
    M     61   56
    >>> tuple(acct.spent)
    (0.5, 0.0)
    """
    func = "crosstab"
    names = labelled.check_columns(columns, func)
    cats = _public_keys(frame, names, keys, func)
    table = released_counts(func, frame, names, _crosstab_counts, (names, cats), noise,
                            epsilon, delta, rho, accountant, rng, None)
    return labelled.label_table(table, tuple(names), labelled.category_indexes(cats, True))


def _crosstab_counts(part: Any, names: list[Hashable],
                     cats: dict[Hashable, list[Any]]) -> np.ndarray:
    func = "crosstab"
    plan = marginal_plan.make_plan(tuple(names), tuple(len(cats[n]) for n in names), None,
                                   [tuple(names)], func)
    codes = labelled.frame_codes(part, names, cats, "columns", func)
    return marginal_plan.count_codes(dict(enumerate(codes)), plan, 1)[0]


def census_hierarchy(frame: Any, column: Hashable, hierarchy: Any, *,
                     epsilon: float | None = None, split: Sequence[float] | None = None,
                     noise: str = "laplace", delta: float | None = None,
                     rho: float | None = None, accountant: AccountantLike | None = None,
                     rng: RngLike = None) -> Any:
    """census_hierarchy(frame, column, hierarchy, *, epsilon=None, split=None, noise="laplace", delta=None, rho=None, accountant=None, rng=None)

    :func:`dpfast.census_hierarchy` of records: ``column`` holds each record's leaf unit;
    the leaves are counted on the workers and the hierarchy released on a worker, its
    levels consistent. The release is charged once, its whole cost.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The records, one per row.
    column : column name
        Each record's leaf unit: an integer code in ``[0, leaves)``, ``leaves`` the length
        of the hierarchy's last level.
    hierarchy : list of int arrays
        The public geography, as for :func:`dpfast.census_hierarchy` with leaf counts: one
        parent array per level below the top, ``hierarchy[0]`` giving each unit of level 1
        its unit of level 0 (the top: all zeros) down to ``hierarchy[-1]`` giving each leaf
        its unit above.
    epsilon : float, optional
        Required with Laplace noise; with Gaussian noise, together with ``delta``.
    split : sequence of float, optional
        Share of the budget for each level, the top first, summing to 1 (default as for
        :func:`dpfast.census_hierarchy`).
    noise : {"laplace", "gaussian"}, optional
        Laplace noise with an epsilon share per level (default), or discrete Gaussian noise
        with a rho share per level.
    delta, rho : float, optional
        The Gaussian noise's cost, as for :func:`dpfast.census_hierarchy`.
    accountant : dpfast.Accountant, optional
        The budget charged, once, on the client (default:
        :func:`dpfast.default_accountant`).
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases): the key is drawn from the OS. A seed is
        for tests and research only.

    Returns
    -------
    HierarchyRelease
        The same release as ``dpfast.census_hierarchy`` of the leaf counts with the same
        seed: ``counts[l]`` the consistent noisy counts of level ``l``, with their error
        bounds.

    Raises
    ------
    TypeError
        ``hierarchy`` is not a non-empty list of parent-code arrays; ``frame`` is not a
        Dask DataFrame; ``column`` does not hold integer codes (by its dtype); the privacy
        keywords, ``split``, ``accountant`` or ``rng`` are of the wrong kind.
    ValueError
        The hierarchy is not a tree of consecutive units (a parent code out of range, a
        unit without children); ``column`` is missing from ``frame``; ``split`` does not
        give one share per level summing to 1; the privacy keywords do not fit the noise
        or are out of range. Found in the read of the records, before the charge: a code
        outside ``[0, leaves)``.
    BudgetExceededError
        The accountant cannot afford the release (nothing is read).

    Examples
    --------
    People coded by county, five counties in two states (``rng=0`` makes the example
    reproducible: a seed is for tests and research only, never for a real release):

    >>> import dask.dataframe as dd, numpy as np, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> people = pd.DataFrame({"county": np.repeat([0, 1, 2, 3, 4], [120, 30, 5, 55, 7])})
    >>> state_of_county = np.array([0, 0, 1, 1, 1])
    >>> rel = dpd.census_hierarchy(dd.from_pandas(people, npartitions=3), "county",
    ...                            [np.zeros(2, int), state_of_county], epsilon=1.0,
    ...                            accountant=dp.Accountant(), rng=0)
    >>> [c.tolist() for c in rel.counts]
    [[215], [148, 67], [120, 28, 1, 61, 5]]
    """
    from ..linear import hierarchy as _hier
    func = "census_hierarchy"
    leaves = _leaf_count(hierarchy, func)
    params = _hier.hierarchy_params(hierarchy, leaves, epsilon, split, func, noise=noise,
                                    delta=delta, rho=rho)
    _check_codes_column(frame, column, func)
    total = counted(frame, [column], _code_counts, column, leaves, func)
    plan = dask.delayed(_hierarchy_plan)(total, params, func)
    return released(func, plan, params.cost, accountant, rng, _hier.noisy_hierarchy)


def _hierarchy_plan(total: np.ndarray, params: Any, func: str) -> Any:
    from ..linear import hierarchy as _hier
    return _hier.hierarchy_plan(total, params, None, func)


def tree_mechanism(frame: Any, column: Hashable, leaves: int, *,
                   epsilon: float | None = None, branching: int | None = None,
                   noise: str = "laplace", delta: float | None = None,
                   rho: float | None = None, accountant: AccountantLike | None = None,
                   rng: RngLike = None) -> Any:
    """tree_mechanism(frame, column, leaves, *, epsilon=None, branching=None, noise="laplace", delta=None, rho=None, accountant=None, rng=None)

    :func:`dpfast.tree_mechanism` of records: ``column`` holds each record's leaf (an
    integer code in ``[0, leaves)``, e.g. an age or a binned value); the leaves are counted
    on the workers and the tree released on a worker, charged once, its whole cost.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The records, one per row.
    column : column name
        Each record's leaf: an integer code in ``[0, leaves)``.
    leaves : int
        The number of leaves (public), in ``[1, 2**34]``.
    epsilon : float, optional
        Required with Laplace noise; with Gaussian noise, together with ``delta``.
    branching : int, optional
        The tree's branching (>= 2); default: the one of least error for the noise, as for
        :func:`dpfast.tree_mechanism`.
    noise : {"laplace", "gaussian"}, optional
        Laplace noise (default; epsilon split over the tree's levels) or discrete Gaussian
        noise (one sigma over the tree's l2 sensitivity).
    delta, rho : float, optional
        The Gaussian noise's cost, as for :func:`dpfast.tree_mechanism`.
    accountant : dpfast.Accountant, optional
        The budget charged, once, on the client (default:
        :func:`dpfast.default_accountant`).
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases): the key is drawn from the OS. A seed is
        for tests and research only.

    Returns
    -------
    TreeRelease
        The same release as ``dpfast.tree_mechanism`` of the leaf counts with the same
        seed: range sums (``range_sums``) with their error bounds.

    Raises
    ------
    TypeError
        ``leaves`` is not an int; ``frame`` is not a Dask DataFrame; ``column`` does not
        hold integer codes (by its dtype); the privacy keywords, ``accountant`` or ``rng``
        are of the wrong kind.
    ValueError
        ``leaves`` is below 1 or above ``2**34``; ``branching`` is not an integer >= 2
        (or None); ``column`` is missing from ``frame``; the privacy keywords do not fit
        the noise or are out of range, or give a noise scale or sigma out of the sampler's
        range. Found in the read of the records, before the charge: a code outside
        ``[0, leaves)``.
    BudgetExceededError
        The accountant cannot afford the release (nothing is read).

    Examples
    --------
    Ages of 1,000 people in 100 one-year leaves, and the count of people aged 18 to 64
    (``rng=0`` makes the example reproducible: a seed is for tests and research only):

    >>> import dask.dataframe as dd, numpy as np, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> people = pd.DataFrame({"age": np.arange(1000) % 100})
    >>> rel = dpd.tree_mechanism(dd.from_pandas(people, npartitions=4), "age", 100,
    ...                          epsilon=1.0, accountant=dp.Accountant(), rng=0)
    >>> rel
    TreeRelease(cells=(100,), branching=10, height=2, epsilon=1.0)
    >>> round(float(rel.range_sums(18, 65)), 1)
    490.2
    """
    from ..linear import tree as _tree
    func = "tree_mechanism"
    n = _v.check_positive_int(leaves, "leaves", func)
    if n > _tree.MAX_CELLS:
        raise ValueError(f"The 'leaves' parameter of dpfast.dask.{func} must be at most "
                         f"{_tree.MAX_CELLS}. Got {n} instead.")
    params = _tree.tree_params((n,), True, epsilon, branching, func, noise=noise,
                               delta=delta, rho=rho, accountant=accountant)
    _check_codes_column(frame, column, func)
    total = counted(frame, [column], _code_counts, column, n, func)
    plan = dask.delayed(_tree.tree_plan)(total, params, func)
    return released(func, plan, params.cost, accountant, rng, _tree.noisy_tree)


def _code_counts(part: Any, column: Hashable, n: int, func: str) -> np.ndarray:
    codes = np.asarray(part[column])
    if codes.dtype.kind not in "iu":
        raise TypeError(f"The 'frame' parameter of dpfast.dask.{func} must hold integer "
                        f"codes in column {column!r}. Got dtype {codes.dtype} instead.")
    codes = codes.astype(np.int64, copy=False)
    if codes.size and (codes.min() < 0 or codes.max() >= n):
        raise ValueError(f"The 'frame' parameter of dpfast.dask.{func} has codes outside "
                         f"[0, {n}) in column {column!r}.")
    return _native.count_codes(np.ascontiguousarray(codes), n, 1)


# -- checks that read nothing ---------------------------------------------------------------

def _public_keys(frame: Any, names: list[Hashable], keys: Any,
                 func: str) -> dict[Hashable, list[Any]]:
    """Every named column's public categories, checked as :func:`dpfast.crosstab` checks
    them (a Dask collection given as categories is data, refused unread)."""
    mapping = labelled.keys_mapping(keys, frame, func)
    for n in names:
        _check_column(frame, n, func)
    missing = [n for n in names if n not in mapping]
    if missing:
        raise ValueError(f"The 'keys' parameter of {func} must give the categories of every "
                         f"column. Got none for {missing!r}.")
    for n in names:
        if isinstance(mapping[n], (da.Array, dd.Series, dd.DataFrame)):
            raise labelled.keys_leak(func, f"the categories of column {n!r} are a Dask "
                                     "collection.")
    return {n: labelled.public_categories(mapping[n], n, None, func) for n in names}


def _check_codes_column(frame: Any, column: Hashable, func: str) -> None:
    """A column of integer codes, checked by its dtype (nothing is read)."""
    _check_column(frame, column, func)
    dtype = frame[column].dtype
    if getattr(dtype, "kind", "O") not in "iu":
        raise TypeError(f"The 'frame' parameter of dpfast.dask.{func} must hold integer "
                        f"codes in column {column!r}. Got dtype {dtype} instead.")


def _check_column(frame: Any, column: Hashable, func: str) -> None:
    if not isinstance(frame, dd.DataFrame):
        raise TypeError(f"The 'frame' parameter of dpfast.dask.{func} must be a Dask "
                        f"DataFrame. Got {_v.describe(frame)} instead.")
    if column not in frame.columns:
        raise ValueError(f"The 'frame' parameter of dpfast.dask.{func} has no column "
                         f"{column!r}.")


def _leaf_count(hierarchy: Any, func: str) -> int:
    if not isinstance(hierarchy, (list, tuple)) or not hierarchy:
        raise TypeError(f"The 'hierarchy' parameter of dpfast.dask.{func} must be a list of "
                        f"parent-code arrays. Got {_v.describe(hierarchy)} instead.")
    return len(hierarchy[-1])
