"""Contingency tables and marginal tables of categorical records: ``crosstab`` and
``marginals``.

Privacy. Categories are public parameters (``keys``): a category taken from the data would
reveal that some record has it, so every column needs its own public list, and a record with
a value outside its column's list (or a missing value) is an error raised before anything is
charged, as in :func:`dpfast.count_categories`. A record lies in exactly one cell of a table,
so one table has l1 and l2 sensitivity 1 (:func:`crosstab`: discrete Laplace noise of scale
``1/epsilon``), and ``m`` tables released together have l1 sensitivity ``m`` and l2
sensitivity ``sqrt(m)``: every cell of every table gets discrete Laplace noise of scale
``m/epsilon``, or (``noise="gaussian"``) discrete Gaussian noise of one sigma calibrated to
``sqrt(m)`` (from ``rho``, or the tightest sigma for this one release at ``epsilon`` and
``delta``), and the whole release is charged once (:func:`marginals`; the tables are never
calibrated one by one and composed). The records are counted by the compiled kernel
(``_native.count_codes``, one pass per table over int64 cell codes), then one kernel call
adds the noise to all cells (through :mod:`dpfast.noise`); the noise of a cell depends only
on the generator state and the cell's position, not on ``threads``.

The tables of a release are planned, counted and noised by :mod:`.marginal_plan`; their
consistency, variances and error bounds are :mod:`.marginal_accuracy`'s; the release a call
returns is :mod:`.marginal_release`'s; records are read into category codes by
:mod:`dpfast.tables`.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import tables
from .. import validation as _v
from .._release import Release, refuse_unaffordable
from ..noise import Gaussian, measure
from ..samplers import MAX_DISCRETE_SIGMA
from .adaptive import Measurer, aim, candidates, largest_sigma, mst, mst_pairs
from .graphical import MAX_CLIQUE_CELLS, Measurement, estimate, junction_tree
from .marginal_accuracy import consistent, marginal_error_bound, marginal_variance
from .marginal_plan import (ADAPTIVE, METHODS, Plan, add_noise, check_components,
                            check_counts, check_method, count_codes, make_plan, sum_tables,
                            table_measure)
from .marginal_release import MarginalRelease

if TYPE_CHECKING:
    from typing import TypeAlias

    from numpy.typing import NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

    Label: TypeAlias = tuple[Hashable, ...]

__all__ = ["crosstab", "marginals", "MarginalRelease", "marginal_variance",
           "marginal_error_bound", "METHODS"]


def crosstab(frame: Any, columns: Any, *, epsilon: float | None = None,
             keys: Mapping[Any, Any], noise: str = "laplace", delta: float | None = None,
             rho: float | None = None, accountant: AccountantLike | None = None,
             rng: RngLike = None, threads: int | None = None) -> Any:
    """crosstab(frame, columns, *, epsilon=None, keys, noise="laplace", delta=None, rho=None, accountant=None, rng=None, threads=None)

    A differentially private contingency table of some columns: exact counts of every
    combination of their public categories, plus discrete Laplace noise of scale
    ``1/epsilon`` (epsilon-DP) or, with ``noise="gaussian"``, discrete Gaussian noise
    (rho-zCDP, or (epsilon, delta)-DP).

    Parameters
    ----------
    frame : pandas.DataFrame, mapping of str to array_like, pyarrow.Table, polars.DataFrame or str
        One record per row (a mapping: equal-length 1-D columns; a str: the path of a
        ``.parquet`` file). Only a pandas DataFrame gives labelled pandas output.
    columns : column name or sequence of column names
        The table's attributes, in the order of its axes.
    epsilon : float, optional
        Privacy parameter, charged to the accountant before the noise is drawn. Required
        for Laplace noise; for Gaussian noise, with ``delta``.
    keys : mapping
        Every column of ``columns`` to its public, ordered list of categories (no repeats,
        no None/NaN). Required: categories taken from the data would reveal it, and the
        data itself (the frame, a column, a Series, a column's categorical dtype) is
        refused; a list computed from the data some other way (``df[c].unique()``) cannot
        be detected, and must not be passed. A record whose value is outside its column's
        categories, or missing, is an error, raised before anything is charged.
    noise : {"laplace", "gaussian"}, optional
        ``"laplace"`` (default): discrete Laplace noise of scale ``1/epsilon``.
        ``"gaussian"``: discrete Gaussian noise (Canonne, Kamath & Steinke 2020) of
        parameter sigma, given ``rho`` (``sigma = 1 / sqrt(2 rho)``) or ``epsilon`` and
        ``delta`` (the smallest sigma that makes this one release (epsilon, delta)-DP:
        :func:`dpfast.noise.gaussian_sigma_for`).
    delta : float, optional
        With Gaussian noise and ``epsilon``: in (0, 1). Laplace noise is pure (None or 0).
    rho : float, optional
        With Gaussian noise, instead of ``epsilon`` and ``delta``: the zCDP cost (> 0),
        charged as it is (on a zCDP accountant: ``dpfast.Accountant(rho=...)`` or
        ``composition="zcdp"``).
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism`. The release is the same for any
        ``threads`` given the generator state.

    Returns
    -------
    pandas.DataFrame, pandas.Series or (ndarray, tuple of lists)
        int64 counts. For a DataFrame ``frame``: with two columns a DataFrame (rows by the
        first column, columns by the second), otherwise a Series indexed by the categories
        (a MultiIndex for three or more columns). For a mapping: the table as an ndarray of
        shape ``(len(keys[c]) for c in columns)`` and the categories of its axes.

    Raises
    ------
    TypeError
        ``frame`` is neither a DataFrame nor a mapping of columns; ``keys`` maps a column
        to something other than an ordered sequence (a str, a set); ``epsilon``, ``delta``
        or ``rho`` is not a real number; ``noise`` is not a str; ``accountant`` is not an
        accountant; ``rng`` is not one of the accepted kinds; ``threads`` is not an int.
    ValueError
        ``columns`` names no column, a column twice, or one ``frame`` does not have;
        ``frame``'s columns differ in length; ``keys`` is the data or taken from it (the
        frame, a column, a Series, a categorical dtype), gives no categories for a column,
        or a column's categories are empty, repeated or hold a missing-value marker; a
        record's value is outside its column's categories, or missing (the message gives
        the record's position, never its value); a pyarrow, polars or Parquet column holds
        a null; ``noise`` neither ``"laplace"`` nor ``"gaussian"``, or privacy keywords that
        do not fit it (Laplace: ``epsilon`` missing, ``rho`` or a ``delta``
        > 0 given; Gaussian: neither ``rho`` nor both ``epsilon`` and ``delta``, or both),
        out of range (``epsilon`` or ``rho`` <= 0, ``delta`` outside (0, 1)), or giving a
        noise scale or sigma beyond the integer sampler's range; a Gaussian release given
        in ``rho`` alone on an (epsilon, delta) accountant; ``threads`` outside [1, 1024].
    BudgetExceededError
        The accountant cannot afford the release. (Every refusal here comes before
        anything is charged or drawn.)

    Notes
    -----
    Each record is in one cell, so the table has l1 and l2 sensitivity 1 whatever its size.
    For the accuracy of Laplace noise, :func:`dpfast.max_error_bound` with ``k`` the number
    of cells; of Gaussian noise, ``sigma sqrt(2 ln(2 k / beta))`` bounds every cell's error
    at once with probability at least ``1 - beta`` (the discrete Gaussian is
    sigma-subgaussian).

    Examples
    --------
    1,000 people by sex and smoking, beside the exact table (``rng=0`` makes the example
    reproducible: a seed is for tests and research only, never for a real release):

    >>> import numpy as np
    >>> import pandas as pd
    >>> import dpfast as dp
    >>> gen = np.random.default_rng(3)
    >>> people = pd.DataFrame({"sex": gen.choice(["F", "M"], 1000),
    ...                        "smoker": gen.choice(["no", "yes"], 1000, p=[0.8, 0.2])})
    >>> keys = {"sex": ["F", "M"], "smoker": ["no", "yes"]}
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> table = dp.crosstab(people, ["sex", "smoker"], epsilon=0.5, keys=keys,
    ...                     accountant=acct, rng=0)
    >>> print(table)
    smoker   no  yes
    sex
    F       389  119
    M       395   93
    >>> print(pd.crosstab(people["sex"], people["smoker"]))
    smoker   no  yes
    sex
    F       391  118
    M       394   97
    >>> tuple(acct.spent)
    (0.5, 0.0)

    A mapping of columns gives the counts and the categories of each axis; a category
    nobody has still gets its noisy count:

    >>> counts, labels = dp.crosstab({"sex": ["F", "M", "M"]}, "sex", epsilon=0.5,
    ...                              keys={"sex": ["F", "M", "X"]}, accountant=acct, rng=0)
    >>> counts, labels
    (array([-1,  3,  1]), (['F', 'M', 'X'],))

    Gaussian noise under a zCDP budget:

    >>> acct = dp.Accountant(rho=0.5)
    >>> table = dp.crosstab(people, ["sex", "smoker"], noise="gaussian", rho=0.5,
    ...                     keys=keys, accountant=acct, rng=0)
    >>> table.dtypes.tolist(), acct.spent.rho
    ([dtype('int64'), dtype('int64')], 0.5)
    """
    func = "crosstab"
    m = table_measure(func, noise, epsilon, delta, rho, 1, accountant)
    rel = Release(func, accountant, m.epsilon, m.delta, rng, threads,
                  rho=m.rho)                      # checked before the counting
    names = tables.check_columns(columns, func)
    frame = tables.records_of(frame, func)
    cols = {n: tables.frame_column(frame, n, "columns", func) for n in names}
    mapping = tables.keys_mapping(keys, frame, func)
    missing = [n for n in names if n not in mapping]
    if missing:
        raise ValueError(f"The 'keys' parameter of {func} must give the categories of every "
                         f"column. Got none for {missing!r}.")
    cats = {n: tables.public_categories(mapping[n], n, cols[n], func) for n in names}
    plan = make_plan(tuple(names), tuple(len(cats[n]) for n in names), None,
                 [tuple(names)], func)
    codes = tables.frame_codes(frame, names, cats, "columns", func)
    table = count_codes(dict(enumerate(codes)), plan, rel.threads)
    noisy = add_noise(table, m.noise, rel)[0]
    if tables.is_pandas_frame(frame):
        return tables.label_table(noisy, tuple(names), tables.category_indexes(cats, True))
    return noisy, tuple(cats[n] for n in names)


# -- marginals --------------------------------------------------------------------------

def _frame_plan(frame: object, keys: object, k: object, workload: object, func: str,
                ) -> tuple[Plan, dict[Hashable, list[Any]]]:
    """Plan and categories of records (the columns are read by :func:`_record_codes`)."""
    mapping = tables.keys_mapping(keys, frame, func)
    cols = {n: tables.frame_column(frame, n, "keys", func) if tables.has_column(frame, n)
            else None for n in mapping}
    cats = {n: tables.public_categories(mapping[n], n, cols[n], func) for n in mapping}
    names = tuple(mapping)
    if not names:
        raise tables.keys_leak(func, "it names no column.")
    return make_plan(names, tuple(len(cats[n]) for n in names), k, workload, func), cats


def _record_codes(frame: object, plan: Plan, cats: Mapping[Hashable, list[Any]],
                  func: str) -> dict[int, NDArray[np.int64]]:
    """The codes of the columns the tables use, by attribute index (values outside the keys
    refused)."""
    used = sorted({a for s in plan.sets for a in s})
    codes = tables.frame_codes(frame, [plan.names[a] for a in used], cats, "keys", func)
    return dict(zip(used, codes))


def _counts_plan(counts: NDArray[np.int64], keys: object, k: object, workload: object,
                 func: str) -> tuple[Plan, dict[Hashable, list[Any]]]:
    """Plan and categories of a full histogram: attributes are its axes, named by ``keys``
    (in axis order) if given, else 0, 1, ..."""
    if keys is None:
        cats: dict[Hashable, list[Any]] = {a: list(range(n)) for a, n in enumerate(counts.shape)}
    else:
        mapping = tables.keys_mapping(keys, counts, func)
        cats = {n: tables.public_categories(mapping[n], n, None, func) for n in mapping}
        if tuple(len(c) for c in cats.values()) != counts.shape:
            raise ValueError(f"The 'keys' parameter of {func} must name the axes of the "
                             f"counts in order, with one category per index: sizes "
                             f"{counts.shape}. Got sizes {tuple(len(c) for c in cats.values())} "
                             "instead.")
    return make_plan(tuple(cats), counts.shape, k, workload, func), cats


def marginals(frame_or_counts: Any, *, epsilon: float | None = None, k: int | None = 2,
              workload: Any = None, method: str | None = None,
              keys: Mapping[Any, Any] | None = None, noise: str = "laplace",
              delta: float | None = None, rho: float | None = None,
              accountant: AccountantLike | None = None, rng: RngLike = None,
              threads: int | None = None) -> MarginalRelease:
    """marginals(frame_or_counts, *, epsilon=None, k=2, workload=None, method=None, keys=None, noise="laplace", delta=None, rho=None, accountant=None, rng=None, threads=None)

    Many marginal tables released together under one charge (of ``epsilon``, of
    (``epsilon``, ``delta``) or of ``rho``), by default post-processed to agree with each
    other.

    Parameters
    ----------
    frame_or_counts : DataFrame, mapping of str to array_like, pyarrow.Table, str, or array_like
        Records (a pandas or polars DataFrame, a mapping of equal-length columns, a pyarrow
        Table or the path of a ``.parquet`` file; ``keys`` required), or a full histogram:
        integer counts with one axis per attribute.
    epsilon : float, optional
        Privacy parameter for all tables together, charged once before the noise is drawn.
        Required for Laplace noise; for Gaussian noise, with ``delta``.
    k : int, optional
        Release every k-way marginal, ``1 <= k <=`` number of attributes. Leave it at its
        default when ``workload`` is given.
    workload : Marginals or sequence of tuples, optional
        The tables instead: a :class:`dpfast.linear.workloads.Marginals` over the
        attributes' sizes (attribute ``i`` is the ``i``-th key, or axis), or tuples of
        attribute names (axis numbers for counts without keys). A table's axes follow its
        tuple's order.
    method : {None, "consistent", "independent", "model", "aim", "mst"}
        ``"independent"``: the noisy tables as drawn (int64). ``"consistent"`` (default,
        None): their weighted least-squares projection onto mutually consistent tables
        (float64), every shared sub-marginal equal across tables (to float precision); see
        :mod:`dpfast.linear.marginal_accuracy` for the computation. ``"model"``: the
        tables of one graphical model fitted to the noisy tables
        (:func:`dpfast.linear.graphical.estimate`; Private-PGM's
        estimation), consistent and non-negative, with ``.model`` for any other marginal
        and ``.synthetic_records()``. Post-processing: it costs no budget. ``"aim"`` and
        ``"mst"`` (Gaussian noise only) measure adaptively instead, under the same one
        charge of the whole budget as a rho (:mod:`dpfast.linear.adaptive`): AIM's rounds
        select the table worst answered by the current model (exponential mechanism on a
        noise-aware score), measure and refit; MST measures a spanning tree of pairs. The
        tables asked, and any other, are the final model's.
    keys : mapping, optional
        The public categories of every attribute, in order (as for :func:`crosstab`). For
        records (required): the attributes are the keys, in their order; the k-way tables
        are over all of them (each must be a column of the frame), a workload may use some.
        For counts: optional names for the axes, in axis order, with ``len(keys[name])``
        the axis' size (the tables are then labelled by names, still ndarrays).
    noise : {"laplace", "gaussian"}, optional
        ``"laplace"`` (default): discrete Laplace noise of scale ``m/epsilon`` on every cell
        of the ``m`` tables. ``"gaussian"``: discrete Gaussian noise of one sigma on every
        cell, for the whole release's l2 sensitivity ``sqrt(m)``: from ``rho``, ``sigma =
        sqrt(m / (2 rho))``; from ``epsilon`` and ``delta``, the smallest sigma that makes
        this one release (epsilon, delta)-DP (:func:`dpfast.noise.gaussian_sigma_for`; the
        tables are never calibrated one by one and composed).
    delta : float, optional
        With Gaussian noise and ``epsilon``: in (0, 1). Laplace noise is pure (None or 0).
    rho : float, optional
        With Gaussian noise, instead of ``epsilon`` and ``delta``: the zCDP cost of all
        tables together (> 0), charged as it is (on a zCDP accountant).
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism`. The release is the same for any
        ``threads`` given the generator state.

    Returns
    -------
    MarginalRelease
        A mapping of labels (tuples of attribute names) to tables: pandas objects for a
        DataFrame (two attributes: a DataFrame with rows by the first; otherwise a Series),
        ndarrays otherwise; with ``.variance()``, ``.error_bound(beta)`` and
        ``.nonnegative()``.

    Raises
    ------
    TypeError
        ``frame_or_counts`` is a Series (ambiguous) or not numeric counts; ``keys`` maps an
        attribute to something other than an ordered sequence; ``k`` is not an int;
        ``workload`` is neither a ``Marginals`` nor a sequence of attribute tuples;
        ``epsilon``, ``delta`` or ``rho`` is not a real number; ``noise`` is not a str;
        ``accountant`` is not an accountant; ``rng`` is not one of the accepted kinds;
        ``threads`` is not an int.
    ValueError
        Records without ``keys``, or ``keys`` that are the data or taken from it, name no
        column or a column the frame does not have, or whose categories are empty,
        repeated or hold a missing-value marker; a record's value outside its attribute's
        categories, or missing (the message gives its position, never its value); counts
        that are not integers, hold NaN or infinite entries, have no axis or no cell, or
        sum (in absolute value) beyond ``2**61``; ``keys`` for counts that do not match
        their shape; ``k`` outside [1, number of attributes], giving more than 65,536
        tables, or changed from its default with ``workload``; a ``workload`` naming an
        unknown or repeated attribute, listing a table twice, or empty; tables of more than
        ``2**34`` cells; an unknown ``method``; a ``"consistent"`` release of more than
        ``2**20`` ANOVA components, a ``"model"`` whose cliques pass the model's limit, or
        ``"aim"``/``"mst"`` with Laplace noise or a table too big for a clique; ``noise``
        neither ``"laplace"`` nor ``"gaussian"``, or privacy keywords that do not fit it,
        out of range, or giving a noise scale or sigma beyond the integer sampler's range;
        a release given in ``rho`` alone on an (epsilon, delta) accountant; ``threads``
        outside [1, 1024].
    BudgetExceededError
        The accountant cannot afford the release. (Every refusal here comes before
        anything is charged or drawn.)

    Notes
    -----
    A record is in one cell of each of the ``m`` tables: l1 sensitivity ``m``, so every
    cell gets discrete Laplace noise of scale ``m/epsilon``; l2 sensitivity ``sqrt(m)``,
    which Gaussian noise pays instead: for many tables it is much less noise per cell (on
    Adult's 28 two-way tables at epsilon = 1, delta = 1e-9: sigma about 30 against a
    Laplace standard deviation of 40). Consistency lowers the error of the cells that
    several tables share information about (low-order sub-marginals): with all tables
    noised alike the total squared error over all cells never increases. Exact per-cell
    variances: :func:`marginal_variance`; high-probability bounds:
    :func:`marginal_error_bound`.

    Examples
    --------
    The 2-way tables of 1,000 census records, released together at epsilon = 1 and made
    consistent (``rng=0`` makes the example reproducible: a seed is for tests and research
    only, never for a real release):

    >>> import numpy as np
    >>> import pandas as pd
    >>> import dpfast as dp
    >>> gen = np.random.default_rng(3)
    >>> people = pd.DataFrame({"sex": gen.choice(["F", "M"], 1000),
    ...                        "age": gen.choice(["0-17", "18-64", "65+"], 1000),
    ...                        "region": gen.choice(["N", "S", "E", "W"], 1000)})
    >>> keys = {"sex": ["F", "M"], "age": ["0-17", "18-64", "65+"],
    ...         "region": ["N", "S", "E", "W"]}
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> rel = dp.marginals(people, epsilon=1.0, keys=keys, accountant=acct, rng=0)
    >>> rel
    MarginalRelease(3 tables, method='consistent', epsilon=1.0, cells=26)
    >>> print(rel["sex", "age"].round(1))
    age   0-17  18-64    65+
    sex
    F    170.8  162.6  167.9
    M    166.8  182.6  143.9
    >>> bool(np.allclose(rel["sex", "age"].sum(axis=1), rel["sex", "region"].sum(axis=1)))
    True
    >>> {table: round(bound, 1) for table, bound in rel.error_bound(beta=0.05).items()}
    {('sex', 'age'): 16.5, ('sex', 'region'): 16.1, ('age', 'region'): 15.8}
    >>> print(rel.nonnegative()["sex", "age"])          # integers, one common total
    age  0-17  18-64  65+
    sex
    F     171    162  168
    M     167    183  144
    >>> tuple(acct.spent)
    (1.0, 0.0)

    A full histogram instead of records (attributes are its axes):

    >>> counts = np.arange(24).reshape(2, 3, 4)
    >>> rel = dp.marginals(counts, epsilon=1.0, accountant=dp.Accountant(epsilon=1.0),
    ...                    rng=0)
    >>> list(rel), rel.scale
    ([(0, 1), (0, 2), (1, 2)], 3.0)
    >>> {t: round(v, 2) for t, v in rel.variance().items()}
    {(0, 1): 12.93, (0, 2): 12.4, (1, 2): 12.02}
    """
    func = "marginals"
    how = check_method(method, func)
    data = tables.records_of(frame_or_counts, func)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, pd.Series):
        raise TypeError(f"The 'frame_or_counts' parameter of {func} must be a DataFrame or a "
                        "mapping of columns (records), or an array of counts; a Series is "
                        "ambiguous (pass frame[[column]] for records). Got a Series instead.")
    records = tables.is_pandas_frame(data) or isinstance(data, Mapping)
    if records:
        plan, cats = _frame_plan(data, keys, k, workload, func)
    else:
        counts = check_counts(data, func)
        plan, cats = _counts_plan(counts, keys, k, workload, func)
    if how in ADAPTIVE:
        return _adaptive(data, records, plan, cats, how, noise, epsilon, delta, rho,
                         accountant, rng, threads)
    # One measure for all the tables together, over the release's whole sensitivity.
    m = table_measure(func, noise, epsilon, delta, rho, len(plan.sets), accountant)
    rel = Release(func, accountant, m.epsilon, m.delta, rng, threads,
                  rho=m.rho)                      # checked before the counting
    if how == "consistent":
        check_components(plan, func)
    elif how == "model":
        junction_tree(plan.sizes, plan.sets)      # a clique past the limit: refused here
    if records:
        exact = count_codes(_record_codes(data, plan, cats, func), plan, rel.threads)
    else:
        exact = sum_tables(counts, plan)
    noisy = add_noise(exact, m.noise, rel)
    model = None
    arrays: list[NDArray[Any]]
    if how == "model":
        sigma = math.sqrt(m.noise.variance)
        model = estimate([Measurement(s, np.asarray(y, dtype=np.float64), sigma)
                          for s, y in zip(plan.sets, noisy)], plan.sizes)
        arrays = [model.marginal(s) for s in plan.sets]
    else:
        arrays = list(noisy) if how == "independent" else list(consistent(plan, noisy))
    return MarginalRelease(plan, arrays, how, m, cats, tables.is_pandas_frame(data), model)


def _adaptive(data: Any, records: bool, plan: Plan, cats: dict[Hashable, list[Any]],
              how: str, noise: object, epsilon: object, delta: object, rho: object,
              accountant: AccountantLike | None, rng: RngLike,
              threads: int | None) -> MarginalRelease:
    """AIM or MST (:mod:`dpfast.linear.adaptive`): Gaussian noise, the whole budget as one
    rho charged once, then the rounds; the tables asked are the final model's."""
    func = "marginals"
    m = measure(func, noise, epsilon, delta, rho, l1=1.0, l2=1.0, integer=True,
                zcdp_accountant=True)
    if m.rho is None or not isinstance(m.noise, Gaussian):
        raise ValueError(f"The 'noise' parameter of {func} must be 'gaussian' for "
                         f"method={how!r} (its rounds compose in zCDP). Got {noise!r} "
                         "instead.")
    d = len(plan.sizes)
    for s, shape in zip(plan.sets, plan.shapes):
        if math.prod(shape) > MAX_CLIQUE_CELLS:
            raise ValueError(f"The tables of {func} with method={how!r} must each fit a "
                             f"model's clique: at most {MAX_CLIQUE_CELLS:,} cells. Got a "
                             f"table of {math.prod(shape):,} cells.")
    if how == "aim":
        sets = list(candidates(plan.sets)) + [(a,) for a in range(d)]
    else:          # MST: the pairs a clique can hold (the tree may then be a forest)
        sets = [(a,) for a in range(d)] + mst_pairs(plan.sizes)
    sets = sorted(set(sets))
    counting = Plan(plan.names, plan.sizes, sets,
                     [tuple(plan.names[a] for a in s) for s in sets])
    biggest = largest_sigma(how, plan.sizes, m.rho)
    if not _v.MIN_SCALE <= biggest <= MAX_DISCRETE_SIGMA:
        given = "'rho'" if m.epsilon is None else "'epsilon' and 'delta'"
        raise ValueError(f"The {given} parameters of {func} must let every round of "
                         f"method={how!r} draw a Gaussian sigma in [{_v.MIN_SCALE:g}, "
                         f"{MAX_DISCRETE_SIGMA:g}]. Got a largest sigma of {biggest:g}.")
    rel = Release(func, accountant, m.epsilon, m.delta, rng, threads, rho=m.rho)
    refuse_unaffordable(rel, "dpfast")     # before any table is counted
    if records:
        exact = count_codes(_record_codes(data, counting, cats, func), counting, rel.threads)
    else:
        exact = sum_tables(check_counts(data, func), counting)
    counted = dict(zip(sets, exact))
    measurer = Measurer(rel.charge_keys(), m.rho)
    if how == "aim":
        model, _ = aim(counted, plan.sizes, plan.sets, measurer)
    else:
        model, _ = mst(counted, plan.sizes, measurer)
    arrays: list[NDArray[Any]] = [model.marginal(s) for s in plan.sets]
    return MarginalRelease(plan, arrays, how, m, cats, tables.is_pandas_frame(data), model)
