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

Consistency (``method="consistent"``, free post-processing). The noisy tables ``y_T`` are
replaced by the weighted least-squares fit ``M_T x`` over all histograms ``x`` of the
attributes, ``M_T`` summing ``x`` over the attributes not in ``T`` (weights: inverse noise
variances). It is computed exactly with the ANOVA decomposition. A table ``f`` over the
attributes ``T`` is the sum, over ``S`` included in ``T``, of its ``S``-components

    c_{T,S} = sum over R in S of (-1)^{|S|-|R|} * (mean of f over the attributes T \\ R)
            = prod_{a in S} (1 - mean_a) prod_{a in T \\ S} mean_a  f,

functions of the attributes ``S`` with mean zero along each of them. These subspaces are
orthogonal, and the ``S``-component of ``M_T x`` is ``n_{A\\T} x_S`` (``n_U``: the product of
the sizes of the attributes ``U``; ``x_S`` the ``S``-component of ``x``). So table ``T``
observes ``x_S`` as ``c_{T,S} / n_{A\\T}`` with noise of variance ``sigma_T^2 / (n_{T\\S}
n_{A\\T}^2)`` per cell of ``S`` (the same correlation pattern for every ``T``), the least
squares problem splits into one problem per ``S``, and each is solved by inverse-variance
weighting of the tables that contain ``S``. Here we estimate ``v_S = n_{A\\S} x_S`` (the same
weighting, every observation scaled by ``n_{A\\S}``, so that only table-sized numbers
appear): ``v_S`` is seen by table ``T`` as ``n_{T\\S} c_{T,S}`` with weight ``1 /
n_{T\\S}`` (equal ``sigma_T``), hence ``V_S = sum_T c_{T,S} / sum_T 1/n_{T\\S}``, and table
``T`` is rebuilt as ``sum_{S in T} V_S / n_{T\\S}`` (broadcast). The tables so obtained are
mutually consistent (they are the marginals of one ``x``), unbiased, and, all tables having
the same noise, the orthogonal projection of the noisy tables onto the consistent ones: the
total squared error over all released cells never exceeds that of the noisy tables, in any
realisation. The per-cell variances are exact (:func:`marginal_variance`).
"""
from __future__ import annotations

import itertools
import math
import numbers
import sys
from collections.abc import Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .. import validation as _v
from .._release import Release, refuse_unaffordable
from ..mechanisms.laplace import max_error_bound
from ..accounting import composes_in_zcdp
from ..releases.postprocess import consistent_counts
from ..noise import Gaussian, Laplace, Measure, measure
from ..samplers import MAX_DISCRETE_SCALE, MAX_DISCRETE_SIGMA
from ..rng import resolve_rng
from .adaptive import Measurer, aim, candidates, largest_sigma, mst, mst_pairs
from .graphical import (MAX_CLIQUE_CELLS, GraphicalModel, Measurement, estimate,
                        junction_tree)
from .workloads import Marginals, check_domain, marginal_sums

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

    #: A table's attributes: sorted indices (internal), or names in the caller's order.
    _Attrs: TypeAlias = tuple[int, ...]
    _Label: TypeAlias = tuple[Hashable, ...]

__all__ = ["crosstab", "marginals", "MarginalRelease", "marginal_variance",
           "marginal_error_bound", "METHODS"]

#: The post-processing choices of :func:`marginals` (the first is the default).
METHODS = ("consistent", "independent", "model", "aim", "mst")
#: Largest number of cells of all tables of one release together.
MAX_CELLS = 2**34
#: Largest number of tables of one release.
MAX_TABLES = 2**16
#: Largest number of (table, sub-attribute-set) pairs of a consistent release: each table of
#: ``j`` attributes has ``2**j`` ANOVA components.
MAX_COMPONENTS = 2**20


# -- the public shape of a release ------------------------------------------------------

class _Plan:
    """Attribute names and sizes, the tables as sorted attribute indices, and each table's
    label (its attribute names in the caller's order)."""

    def __init__(self, names: tuple[Hashable, ...], sizes: tuple[int, ...],
                 sets: list[_Attrs], labels: list[_Label]):
        self.names, self.sizes, self.sets, self.labels = names, sizes, sets, labels
        self.shapes = [tuple(sizes[a] for a in s) for s in sets]
        self.n_cells = sum(math.prod(shape) for shape in self.shapes)

    def weights(self) -> dict[_Attrs, float]:
        """W_S = sum over the tables T containing S of 1 / n_{T\\S}, for every S."""
        weight: dict[_Attrs, float] = {}
        for s in self.sets:
            for sub in _subsets(s):
                weight[sub] = weight.get(sub, 0.0) + 1.0 / self.outside(s, sub)
        return weight

    def outside(self, table: _Attrs, sub: _Attrs) -> int:
        """n_{T\\S}: the number of cells of the attributes of ``table`` not in ``sub``."""
        return math.prod(self.sizes[a] for a in table if a not in sub)

    def order(self, j: int) -> list[int]:
        """The axes of table ``j`` (sorted attributes) in its label's order."""
        index = {n: i for i, n in enumerate(self.names)}
        return [self.sets[j].index(index[n]) for n in self.labels[j]]


def _subsets(table: _Attrs) -> list[_Attrs]:
    """Every subset of ``table``, the empty one first, each sorted."""
    return [s for r in range(len(table) + 1) for s in itertools.combinations(table, r)]


def _check_k(k: object, d: int, func: str) -> int:
    rule = f"an int in [1, {d}] (the number of attributes)"
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise TypeError(f"The 'k' parameter of {func} must be {rule}. Got {k!r} instead.")
    if not 1 <= int(k) <= d:
        raise ValueError(f"The 'k' parameter of {func} must be {rule}. Got {k!r} instead.")
    return int(k)


def _plan(names: tuple[Hashable, ...], sizes: tuple[int, ...], k: object, workload: object,
          func: str) -> _Plan:
    """The tables: every k-way set of attributes, or those of ``workload``."""
    d = len(names)
    if workload is None:
        k = _check_k(k, d, func)
        if math.comb(d, k) > MAX_TABLES:
            raise ValueError(f"The 'k' parameter of {func} would give {math.comb(d, k):,} "
                             f"tables, more than {MAX_TABLES:,}. Got k={k!r} instead.")
        sets = list(itertools.combinations(range(d), k))
        labels = [tuple(names[a] for a in s) for s in sets]
    else:
        if k is not None and k != 2:
            raise ValueError(f"The 'k' parameter of {func} must be left at its default when "
                             f"'workload' is given (the workload lists the tables). Got "
                             f"k={k!r} instead.")
        sets, labels = _workload_sets(workload, names, sizes, func)
    if len(set(sets)) != len(sets):
        raise ValueError(f"The 'workload' parameter of {func} must not list a table twice "
                         f"(in any order of its attributes). Got {labels!r} instead.")
    plan = _Plan(names, sizes, sets, labels)
    if plan.n_cells > MAX_CELLS:
        raise ValueError(f"The tables of {func} would have {plan.n_cells:,} cells, more than "
                         f"{MAX_CELLS:,}.")
    return plan


def _workload_sets(workload: object, names: tuple[Hashable, ...], sizes: tuple[int, ...],
                   func: str) -> tuple[list[_Attrs], list[_Label]]:
    """(sorted attribute indices, labels) of the tables of a workload: a ``Marginals`` over
    the attributes' sizes, or a sequence of attribute-name tuples (a name alone: a 1-way
    table)."""
    if isinstance(workload, Marginals):
        if workload.domain != sizes:
            raise ValueError(f"The 'workload' parameter of {func} must be a Marginals over "
                             f"the domain {sizes} (the attributes' sizes, in order). Got "
                             f"{workload!r} instead.")
        sets = [tuple(s) for s in workload.attributes]
        return sets, [tuple(names[a] for a in s) for s in sets]
    if isinstance(workload, (str, bytes, Mapping)) or not hasattr(workload, "__iter__"):
        raise TypeError(f"The 'workload' parameter of {func} must be a Marginals or a "
                        f"sequence of attribute tuples. Got {workload!r} instead.")
    index = {n: i for i, n in enumerate(names)}
    sets, labels = [], []
    for entry in workload:
        label = tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)
        try:
            attrs = [index.get(n) for n in label]
        except TypeError:                        # an unhashable name
            attrs = [None]
        if not label or None in attrs or len(set(attrs)) != len(attrs):
            raise ValueError(f"The 'workload' parameter of {func} must list non-empty tuples "
                             f"of distinct attributes among {list(names)!r}. Got {entry!r} "
                             "instead.")
        sets.append(tuple(sorted(a for a in attrs if a is not None)))
        labels.append(label)
    if not sets:
        raise ValueError(f"The 'workload' parameter of {func} must list at least one table. "
                         f"Got {workload!r} instead.")
    return sets, labels


def _check_components(plan: _Plan, func: str) -> None:
    n = sum(2 ** len(s) for s in plan.sets)
    if n > MAX_COMPONENTS:
        raise ValueError(f"The tables of {func} have {n:,} ANOVA components, more than "
                         f"{MAX_COMPONENTS:,}, for method='consistent' (tables of fewer "
                         "attributes, or method='independent').")


def _check_method(method: object, func: str) -> str:
    if method is None:
        return METHODS[0]
    if isinstance(method, str) and method in METHODS:
        return method
    raise ValueError(f"The 'method' parameter of {func} must be None or one of "
                     f"{list(METHODS)!r}. Got {method!r} instead.")


def _scale(tables: int, eps: float, func: str) -> float:
    """The discrete Laplace scale (number of tables) / epsilon, checked."""
    scale = tables / eps
    if not _v.MIN_SCALE <= scale <= MAX_DISCRETE_SCALE:
        raise ValueError(f"The 'epsilon' parameter of {func} must give a noise scale (number "
                         f"of tables) / epsilon = {tables} / epsilon in [{_v.MIN_SCALE:g}, "
                         f"{MAX_DISCRETE_SCALE:g}]. Got {eps!r} (scale {scale:g}) instead.")
    return scale


def _measure(func: str, noise: object, epsilon: object, delta: object, rho: object,
             tables: int, accountant: object = None) -> Measure:
    """The noise of ``tables`` tables released together, and its cost, from the release's
    privacy keywords (:func:`dpfast.noise.measure`, over the whole release: a record is in
    one cell of each table, l1 sensitivity ``tables``, l2 ``sqrt(tables)``), with the
    noise's parameter checked against the range of its integer kernel. Nothing is charged.
    """
    if isinstance(noise, str) and noise == "laplace" and epsilon is not None and rho is None:
        # Today's check and message for a Laplace scale out of the kernel's range.
        _scale(tables, _v.check_epsilon(epsilon, func), func)
    m = measure(func, noise, epsilon, delta, rho, l1=float(tables), l2=math.sqrt(tables),
                integer=True, zcdp_accountant=composes_in_zcdp(accountant))
    if isinstance(m.noise, Gaussian) and not _v.MIN_SCALE <= m.noise.sigma <= MAX_DISCRETE_SIGMA:
        given = "'rho'" if m.epsilon is None else "'epsilon' and 'delta'"
        raise ValueError(f"The {given} parameters of {func} must give a Gaussian sigma for "
                         f"{tables} table(s) in [{_v.MIN_SCALE:g}, {MAX_DISCRETE_SIGMA:g}]. "
                         f"Got sigma {m.noise.sigma:g} instead.")
    return m


# -- keys: the public categories --------------------------------------------------------

def _leak(func: str, detail: str) -> ValueError:
    return ValueError(
        f"The 'keys' parameter of {func} must give public categories, not the data: {detail} "
        "The categories are published with the counts, so categories taken from the data "
        "reveal that someone has them. Pass a mapping of every column to its public list "
        "of categories.")


def _keys_mapping(keys: object, data: object, func: str) -> Mapping[Any, Any]:
    if keys is None:
        raise _leak(func, "it is required (got None).")
    if keys is data or isinstance(keys, str) or hasattr(keys, "shape"):
        raise _leak(func, f"got {_v.describe(keys) if hasattr(keys, 'shape') else repr(keys)}.")
    if not isinstance(keys, Mapping):
        raise TypeError(f"The 'keys' parameter of {func} must be a mapping of column name to "
                        f"its list of categories. Got {_v.describe(keys)} instead.")
    return keys


def _is_data(cats: object, column: object) -> bool:
    """Whether a category list is (a view of) a data column or its dtype's categories."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(cats, (pd.Series, pd.DataFrame)):
        return True
    if hasattr(cats, "codes") and hasattr(cats, "categories"):       # a Categorical
        return True
    if column is None:
        return False
    own = getattr(getattr(column, "cat", None), "categories", None)
    own = getattr(column, "categories", None) if own is None else own
    if cats is column or (own is not None and cats is own):
        return True
    if isinstance(cats, np.ndarray) and pd is not None and isinstance(column, pd.Series) \
            and isinstance(column.dtype, np.dtype):
        column = column.to_numpy()               # a view for numpy-backed columns
    return isinstance(cats, np.ndarray) and isinstance(column, np.ndarray) \
        and np.may_share_memory(cats, column)


def _missing(value: object) -> bool:
    """None, NaN, NaT, pandas.NA: markers of a missing value, never a category."""
    if value is None:
        return True
    try:
        return bool(value != value)              # NaN and NaT only
    except (TypeError, ValueError):              # pandas.NA is neither equal nor unequal
        return True


def _categories(cats: object, name: Hashable, column: object, func: str) -> list[Any]:
    """One column's public categories as a list: ordered, hashable, distinct, not empty."""
    if isinstance(cats, (str, bytes, set, frozenset, Mapping)) \
            or not hasattr(cats, "__len__") or not hasattr(cats, "__iter__"):
        raise TypeError(f"The 'keys' parameter of {func} must map column {name!r} to an "
                        f"ordered sequence of categories (the order of the released cells). "
                        f"Got {_v.describe(cats)} instead.")
    if _is_data(cats, column):
        raise _leak(func, f"the categories of column {name!r} are the data column or taken "
                    "from it.")
    values = list(cats)
    try:
        index = {v: i for i, v in enumerate(values)}
    except TypeError:
        raise TypeError(f"The 'keys' parameter of {func} must give hashable categories for "
                        f"column {name!r}. Got {_v.describe(values)} instead.") from None
    problem = ("no category" if not values else
               "a missing-value marker (None, NaN)" if any(_missing(v) for v in values) else
               "repeated categories" if len(index) != len(values) else None)
    if problem:
        # Not the values: if they are the data by mistake, they must not reach a log.
        raise ValueError(f"The 'keys' parameter of {func} must give column {name!r} at least "
                         "one category, with no repeats and no missing-value markers. Got "
                         f"{_v.describe(values)} with {problem} instead.")
    return values


# -- the data ---------------------------------------------------------------------------

def _is_frame(obj: object) -> bool:
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def _column(frame: object, name: Hashable, what: str, func: str) -> object:
    """Column ``name`` of a DataFrame or mapping; ValueError naming ``what`` if absent."""
    if _is_frame(frame):
        present = name in frame.columns            # type: ignore[attr-defined]
    elif isinstance(frame, Mapping):
        present = name in frame
    else:
        raise TypeError(f"The 'frame' parameter of {func} must be a pandas DataFrame or a "
                        f"mapping of column name to array. Got {_v.describe(frame)} instead.")
    if not present:
        raise ValueError(f"The {what!r} parameter of {func} names a column {name!r} that "
                         "'frame' does not have.")
    col = frame[name]                              # type: ignore[index]
    if _is_frame(col):
        raise ValueError(f"The 'frame' parameter of {func} has several columns named "
                         f"{name!r}.")
    return col


def _codes(column: object, cats: list[Any], name: Hashable, func: str) -> NDArray[np.int64]:
    """Each record's index in ``cats``; refuses values outside them (and missing values)."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(column, pd.Series) and isinstance(column.dtype, np.dtype) \
            and column.dtype.kind in "iu":
        column = column.to_numpy()           # integers: category_codes' lookup table
    if pd is not None and isinstance(column, pd.Series) \
            and not isinstance(column.dtype, pd.CategoricalDtype):
        # pandas' hash lookup (no Python call per record)
        codes = pd.Index(cats, tupleize_cols=False).get_indexer(column)
    else:
        if isinstance(column, (np.ndarray, list, tuple)):
            column = _v.as_array(column, "frame", func)
            if column.ndim != 1:
                raise ValueError(f"The 'frame' parameter of {func} must have 1-D columns. "
                                 f"Got {_v.describe(column)} for column {name!r} instead.")
        codes = _v.category_codes(column, cats, func)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    outside = np.flatnonzero(codes < 0)
    if outside.size:
        # Neither the value nor how many: an error message can end up in a log.
        raise ValueError(f"The 'frame' parameter of {func} has values outside 'keys', or "
                         f"missing values, in column {name!r} (the first at record "
                         f"{outside[0]}). Add them to the column's public categories, or "
                         "drop those records first.")
    return codes


def _frame_codes(frame: object, names: list[Hashable], cats: Mapping[Hashable, list[Any]],
                 what: str, func: str) -> list[NDArray[np.int64]]:
    """The codes of the named columns, all of one length."""
    codes = [_codes(_column(frame, n, what, func), cats[n], n, func) for n in names]
    if len({c.size for c in codes}) > 1:
        # The lengths are numbers of records: not shown.
        raise ValueError(f"The 'frame' parameter of {func} must have columns of one length. "
                         f"Got columns {names!r} of different lengths instead.")
    return codes


def _count_codes(codes: Mapping[int, NDArray[np.int64]], plan: _Plan,
                 threads: int) -> list[NDArray[np.int64]]:
    """The exact tables: each record's cell code, counted by the compiled kernel."""
    tables = []
    for s, shape in zip(plan.sets, plan.shapes):
        cell = codes[s[0]]
        for a in s[1:]:
            cell = cell * plan.sizes[a] + codes[a]
        counts = _native.count_codes(np.ascontiguousarray(cell), math.prod(shape), threads)
        tables.append(counts.reshape(shape))
    return tables


def _check_counts(value: object, func: str) -> NDArray[np.int64]:
    """A full histogram: integer counts (integral floats accepted) of at least one axis."""
    name = "frame_or_counts"
    arr, is_int = _v.check_data(value, name, func)
    if arr.ndim == 0 or arr.size == 0:
        raise ValueError(f"The {name!r} parameter of {func} must be a DataFrame, a mapping "
                         "of columns, or counts with at least one axis and one cell. Got "
                         f"{_v.describe(arr)} instead.")
    if not is_int and not np.array_equal(arr, np.round(arr)):
        raise ValueError(f"The {name!r} parameter of {func} must hold integer counts. Got "
                         f"{_v.describe(arr)} with non-integral entries instead.")
    if float(np.abs(arr).sum(dtype=np.float64)) > 2.0**61:
        raise ValueError(f"The {name!r} parameter of {func} must have counts whose absolute "
                         f"values sum to at most 2**61. Got {_v.describe(arr)} instead.")
    return np.asarray(arr, dtype=np.int64)


def _sum_tables(counts: NDArray[np.int64], plan: _Plan) -> list[NDArray[np.int64]]:
    """The exact marginal tables of a full histogram."""
    return marginal_sums(counts, plan.sets)


def _add_noise(tables: list[NDArray[np.int64]], noise: Laplace | Gaussian,
               rel: Release) -> list[NDArray[np.int64]]:
    """Charge the release once, then one kernel call noises every cell of every table under
    its key (integer noise: discrete Laplace or discrete Gaussian).

    The cells are int64, which both integer kernels write; a release of int32 cells would
    switch here (draw into int64, then cast with a range check)."""
    flat = np.concatenate([t.reshape(-1) for t in tables])
    key = rel.charge()
    noise.fill(key, rel.threads if flat.size > _native.CHUNK else 1, flat, flat)
    ends = np.cumsum([t.size for t in tables])
    return [part.reshape(t.shape) for part, t in zip(np.split(flat, ends[:-1]), tables)]


def _indexes(cats: Mapping[Hashable, list[Any]], pandas: bool) -> dict[Hashable, Any] | None:
    """Each attribute's pandas Index (named, labelled by its categories), for pandas output;
    None for numpy output."""
    if not pandas:
        return None
    pd = sys.modules["pandas"]
    return {n: pd.Index(c, name=n, tupleize_cols=False) for n, c in cats.items()}


def _label(arr: NDArray[Any], label: _Label, indexes: Mapping[Hashable, Any] | None) -> Any:
    """A table in its label's axis order: as it is, or as a labelled pandas object (2
    attributes: a DataFrame, rows by the first; otherwise a Series)."""
    if indexes is None:
        return arr
    pd = sys.modules["pandas"]
    index = [indexes[n].copy() for n in label]      # a new object per table: names are mutable
    if len(label) == 2:
        return pd.DataFrame(arr, index=index[0], columns=index[1])
    if len(label) == 1:
        return pd.Series(arr, index=index[0])
    return pd.Series(arr.reshape(-1), index=pd.MultiIndex.from_product(index, names=label))


# -- crosstab ---------------------------------------------------------------------------

def _check_columns(columns: object, func: str) -> list[Hashable]:
    names = [columns] if isinstance(columns, (str, bytes)) or not hasattr(
        columns, "__iter__") else list(columns)
    try:
        distinct = len(set(names)) == len(names)
    except TypeError:
        raise TypeError(f"The 'columns' parameter of {func} must be column names. Got "
                        f"{columns!r} instead.") from None
    if not names or not distinct:
        raise ValueError(f"The 'columns' parameter of {func} must name at least one column, "
                         f"each once. Got {columns!r} instead.")
    return names


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
    frame : pandas.DataFrame or mapping of str to array_like
        One record per row (a mapping: equal-length 1-D columns).
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

    Notes
    -----
    Each record is in one cell, so the table has l1 and l2 sensitivity 1 whatever its size.
    For the accuracy of Laplace noise, :func:`dpfast.max_error_bound` with ``k`` the number
    of cells; of Gaussian noise, ``sigma sqrt(2 ln(2 k / beta))`` bounds every cell's error
    at once with probability at least ``1 - beta`` (the discrete Gaussian is
    sigma-subgaussian).

    Examples
    --------
    >>> import pandas as pd, dpfast as dp
    >>> from dpfast import crosstab
    >>> people = pd.DataFrame({"sex": ["F", "M", "M", "F"], "smoker": ["no", "no", "yes", "no"]})
    >>> table = crosstab(people, ["sex", "smoker"], epsilon=1.0,
    ...                  keys={"sex": ["F", "M"], "smoker": ["no", "yes"]},
    ...                  accountant=dp.Accountant(), rng=0)
    >>> table.index.tolist(), table.columns.tolist(), table.shape
    (['F', 'M'], ['no', 'yes'], (2, 2))
    >>> counts, labels = crosstab({"sex": ["F", "M"]}, "sex", epsilon=1.0,
    ...                           keys={"sex": ["F", "M", "X"]}, rng=0)
    >>> counts.shape, labels
    ((3,), (['F', 'M', 'X'],))
    >>> acct = dp.Accountant(rho=0.5)
    >>> table = crosstab(people, ["sex", "smoker"], noise="gaussian", rho=0.5,
    ...                  keys={"sex": ["F", "M"], "smoker": ["no", "yes"]},
    ...                  accountant=acct, rng=0)
    >>> table.dtypes.tolist(), acct.spent.rho
    ([dtype('int64'), dtype('int64')], 0.5)
    """
    func = "crosstab"
    m = _measure(func, noise, epsilon, delta, rho, 1, accountant)
    rel = Release(func, accountant, m.epsilon, m.delta, rng, threads,
                  rho=m.rho)                      # checked before the counting
    names = _check_columns(columns, func)
    cols = {n: _column(frame, n, "columns", func) for n in names}
    mapping = _keys_mapping(keys, frame, func)
    missing = [n for n in names if n not in mapping]
    if missing:
        raise ValueError(f"The 'keys' parameter of {func} must give the categories of every "
                         f"column. Got none for {missing!r}.")
    cats = {n: _categories(mapping[n], n, cols[n], func) for n in names}
    plan = _plan(tuple(names), tuple(len(cats[n]) for n in names), None,
                 [tuple(names)], func)
    codes = _frame_codes(frame, names, cats, "columns", func)
    table = _count_codes(dict(enumerate(codes)), plan, rel.threads)
    noisy = _add_noise(table, m.noise, rel)[0]
    if _is_frame(frame):
        return _label(noisy, tuple(names), _indexes(cats, True))
    return noisy, tuple(cats[n] for n in names)


# -- marginals --------------------------------------------------------------------------

def _frame_plan(frame: object, keys: object, k: object, workload: object, func: str,
                ) -> tuple[_Plan, dict[Hashable, list[Any]]]:
    """Plan and categories of records (the columns are read by :func:`_record_codes`)."""
    mapping = _keys_mapping(keys, frame, func)
    cols = {n: _column(frame, n, "keys", func) if _has(frame, n) else None for n in mapping}
    cats = {n: _categories(mapping[n], n, cols[n], func) for n in mapping}
    names = tuple(mapping)
    if not names:
        raise _leak(func, "it names no column.")
    return _plan(names, tuple(len(cats[n]) for n in names), k, workload, func), cats


def _record_codes(frame: object, plan: _Plan, cats: Mapping[Hashable, list[Any]],
                  func: str) -> dict[int, NDArray[np.int64]]:
    """The codes of the columns the tables use, by attribute index (values outside the keys
    refused)."""
    used = sorted({a for s in plan.sets for a in s})
    codes = _frame_codes(frame, [plan.names[a] for a in used], cats, "keys", func)
    return dict(zip(used, codes))


def _has(frame: object, name: Hashable) -> bool:
    if _is_frame(frame):
        return name in frame.columns               # type: ignore[attr-defined]
    return isinstance(frame, Mapping) and name in frame


def _counts_plan(counts: NDArray[np.int64], keys: object, k: object, workload: object,
                 func: str) -> tuple[_Plan, dict[Hashable, list[Any]]]:
    """Plan and categories of a full histogram: attributes are its axes, named by ``keys``
    (in axis order) if given, else 0, 1, ..."""
    if keys is None:
        cats: dict[Hashable, list[Any]] = {a: list(range(n)) for a, n in enumerate(counts.shape)}
    else:
        mapping = _keys_mapping(keys, counts, func)
        cats = {n: _categories(mapping[n], n, None, func) for n in mapping}
        if tuple(len(c) for c in cats.values()) != counts.shape:
            raise ValueError(f"The 'keys' parameter of {func} must name the axes of the "
                             f"counts in order, with one category per index: sizes "
                             f"{counts.shape}. Got sizes {tuple(len(c) for c in cats.values())} "
                             "instead.")
    return _plan(tuple(cats), counts.shape, k, workload, func), cats


def _component(y: NDArray[np.float64], table: _Attrs, sub: _Attrs) -> NDArray[np.float64]:
    """The ``sub``-component of a table over the attributes ``table``: the mean over the
    other attributes, then centred along each remaining axis, the product form of the
    inclusion-exclusion sum of means (see the module)."""
    other = tuple(i for i, a in enumerate(table) if a not in sub)
    c: NDArray[np.float64] = y.mean(axis=other) if other else y.copy()
    for axis in range(c.ndim):
        c = c - c.mean(axis=axis, keepdims=True)
    return c


def _consistent(plan: _Plan, noisy: list[NDArray[Any]]) -> list[NDArray[np.float64]]:
    """The least-squares consistent tables (see the module): per attribute set S, the
    inverse-variance average V_S of the tables' observations, then each table rebuilt."""
    total: dict[_Attrs, NDArray[np.float64]] = {}
    weight = plan.weights()
    for s, y in zip(plan.sets, noisy):
        values = np.asarray(y, dtype=np.float64)
        for sub in _subsets(s):
            c = _component(values, s, sub)
            total[sub] = total[sub] + c if sub in total else c
    out = []
    for s, shape in zip(plan.sets, plan.shapes):
        est = np.zeros(shape)
        for sub in _subsets(s):
            v = total[sub] / (weight[sub] * plan.outside(s, sub))
            est += v.reshape([plan.sizes[a] if a in sub else 1 for a in s])
        out.append(est)
    return out


class MarginalRelease(Mapping[tuple[Hashable, ...], Any]):
    """The result of :func:`marginals`: a read-only mapping of table labels (tuples of
    attribute names, in the workload's order) to released tables, with their accuracy.

    Attributes
    ----------
    tables : dict
        The tables: pandas DataFrames (two attributes, rows by the first) or Series (one,
        or three or more attributes: MultiIndex) when a DataFrame came in, ndarrays
        otherwise (axes in the label's order). int64 for ``method="independent"``, float64
        for ``"consistent"``.
    method : str
    noise : str
        ``"laplace"`` or ``"gaussian"``.
    epsilon, delta : float
        The budget charged for all tables together (``epsilon`` None for a Gaussian release
        given in ``rho``; ``delta`` 0 for Laplace noise).
    rho : float or None
        The zCDP cost charged for all tables together with Gaussian noise (None for Laplace
        noise, whose zCDP cost is ``epsilon**2 / 2``).
    scale : float
        The noise scale of every noisy cell: the discrete Laplace scale (number of tables)
        / epsilon, or the discrete Gaussian's sigma.
    categories : dict
        Each attribute's public categories (for counts without keys: ``range(size)``).
    """

    def __init__(self, plan: _Plan, arrays: list[NDArray[Any]], method: str,
                 measured: Measure, categories: dict[Hashable, list[Any]], pandas: bool,
                 model: GraphicalModel | None = None):
        self._plan, self._measure = plan, measured
        self.model = model
        self.method, self.categories = method, categories
        self.noise = "gaussian" if isinstance(measured.noise, Gaussian) else "laplace"
        self.epsilon, self.delta, self.rho = measured.epsilon, measured.delta, measured.rho
        self.scale = measured.noise.scale
        self._arrays = [np.ascontiguousarray(a.transpose(plan.order(j)))
                        for j, a in enumerate(arrays)]
        self._indexes = _indexes(categories, pandas)
        self.tables = {lab: _label(a, lab, self._indexes)
                       for lab, a in zip(plan.labels, self._arrays)}

    def __getitem__(self, attrs: tuple[Hashable, ...]) -> Any:
        return self.tables[attrs if isinstance(attrs, tuple) else (attrs,)]

    def __iter__(self) -> Iterator[tuple[Hashable, ...]]:
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def __repr__(self) -> str:
        if self.noise == "laplace":
            cost = f"epsilon={self.epsilon!r}"
        else:
            cost = (f"noise='gaussian', sigma={self.scale:.6g}, " + (
                f"rho={self.rho!r}" if self.epsilon is None
                else f"epsilon={self.epsilon!r}, delta={self.delta!r}"))
        return (f"MarginalRelease({len(self)} tables, method={self.method!r}, {cost}, "
                f"cells={self._plan.n_cells})")

    def variance(self, method: str | None = None) -> dict[tuple[Hashable, ...], float]:
        """Exact per-cell variance of each table (all cells of a table have the same), for
        this release's method or another (``method=``), as :func:`marginal_variance`."""
        how = self.method if method is None else _check_method(method, "variance")
        _no_model_bound(how, "variance")
        return _variances(self._plan, how, self._measure)

    def expected_error(self) -> dict[tuple[Hashable, ...], float | None]:
        """Each table's expected l1 error (counts), where it can be stated: for
        ``method="model"``, that of the measurements that hold the table, where the model
        is exact on them (:meth:`GraphicalModel.expected_error`), None for a table no
        measurement holds (no bound); otherwise sqrt(2/pi) standard deviations a cell
        (Gaussian noise; for Laplace noise the same from its variance, an estimate)."""
        if self.model is not None:
            return {lab: self.model.expected_error(s)
                    for lab, s in zip(self._plan.labels, self._plan.sets)}
        return {lab: math.sqrt(2.0 / math.pi * v) * math.prod(shape)
                for (lab, v), shape in zip(self.variance().items(), self._plan.shapes)}

    def synthetic_records(self, records: int | None = None, *, rng: RngLike = None) -> Any:
        """Records drawn from the fitted model (``method`` "model", "aim" or "mst";
        post-processing, free): ``records`` rows (default: the model's total, rounded), one
        column per attribute, labelled by the attributes' public categories: a DataFrame
        when a DataFrame came in, a dict of arrays otherwise. Drawn by systematic sampling
        down the model's tree, then raked to the model's measured tables
        (:meth:`GraphicalModel.synthetic`): on Adult's 2-way tables at epsilon = 1 the
        records' error is within 3 % of the model's."""
        func = "synthetic_records"
        if self.model is None:
            raise ValueError(f"The {func} of a MarginalRelease come from its model: release "
                             f"with method 'model', 'aim' or 'mst'. Got method="
                             f"{self.method!r} instead.")
        n = round(self.model.total) if records is None else _v.check_positive_int(
            records, "records", func, high=MAX_RECORDS)
        codes = self.model.synthetic(n, np.random.Generator(resolve_rng(rng, func)))
        columns = {name: _category_array(self.categories[name])[codes[:, i]]
                   for i, name in enumerate(self._plan.names)}
        if self._indexes is not None:
            import pandas as pd
            return pd.DataFrame(columns)
        return columns

    def error_bound(self, beta: float = 0.05,
                    method: str | None = None) -> dict[tuple[Hashable, ...], float]:
        """Per-table bounds that every cell of every table stays within, all at once, with
        probability at least ``1 - beta``, as :func:`marginal_error_bound`."""
        how = self.method if method is None else _check_method(method, "error_bound")
        _no_model_bound(how, "error_bound")
        return _error_bounds(self._plan, how, self._measure, beta, "error_bound")

    def nonnegative(self) -> dict[tuple[Hashable, ...], Any]:
        """The tables as non-negative integers (post-processing, free).

        Every table is projected onto the non-negative tables with one common total, the
        mean of the released tables' totals rounded (at least 0), and rounded keeping that
        total (:func:`dpfast.releases.postprocess.consistent_counts`). All tables then sum
        to the same integer, but shared sub-marginals no longer agree exactly: clipping and
        rounding differ from table to table. Labelled like :attr:`tables`.
        """
        total = max(0, round(float(np.mean([a.sum() for a in self._arrays]))))
        return {lab: _label(consistent_counts(a, total=total), lab, self._indexes)
                for lab, a in zip(self._plan.labels, self._arrays)}


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
    frame_or_counts : pandas.DataFrame, mapping of str to array_like, or array_like
        Records (a DataFrame or a mapping of equal-length columns; ``keys`` required), or a
        full histogram: integer counts with one axis per attribute.
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
        the module for the computation. ``"model"``: the tables of one graphical model
        fitted to the noisy tables (:func:`dpfast.linear.graphical.estimate`; Private-PGM's
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
    >>> import numpy as np, dpfast as dp
    >>> from dpfast import marginals
    >>> counts = np.arange(24).reshape(2, 3, 4)          # a histogram of 3 attributes
    >>> rel = marginals(counts, epsilon=1.0, accountant=dp.Accountant(), rng=0)
    >>> list(rel), rel.scale
    ([(0, 1), (0, 2), (1, 2)], 3.0)
    >>> a_from_01 = rel[(0, 1)].sum(axis=1)
    >>> a_from_02 = rel[(0, 2)].sum(axis=1)
    >>> bool(np.allclose(a_from_01, a_from_02))
    True
    >>> {t: round(v, 2) for t, v in rel.variance().items()}
    {(0, 1): 12.93, (0, 2): 12.4, (1, 2): 12.02}
    """
    func = "marginals"
    how = _check_method(method, func)
    data = frame_or_counts
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, pd.Series):
        raise TypeError(f"The 'frame_or_counts' parameter of {func} must be a DataFrame or a "
                        "mapping of columns (records), or an array of counts; a Series is "
                        "ambiguous (pass frame[[column]] for records). Got a Series instead.")
    records = _is_frame(data) or isinstance(data, Mapping)
    if records:
        plan, cats = _frame_plan(data, keys, k, workload, func)
    else:
        counts = _check_counts(data, func)
        plan, cats = _counts_plan(counts, keys, k, workload, func)
    if how in ADAPTIVE:
        return _adaptive(data, records, plan, cats, how, noise, epsilon, delta, rho,
                         accountant, rng, threads)
    # One measure for all the tables together, over the release's whole sensitivity.
    m = _measure(func, noise, epsilon, delta, rho, len(plan.sets), accountant)
    rel = Release(func, accountant, m.epsilon, m.delta, rng, threads,
                  rho=m.rho)                      # checked before the counting
    if how == "consistent":
        _check_components(plan, func)
    elif how == "model":
        junction_tree(plan.sizes, plan.sets)      # a clique past the limit: refused here
    if records:
        exact = _count_codes(_record_codes(data, plan, cats, func), plan, rel.threads)
    else:
        exact = _sum_tables(counts, plan)
    noisy = _add_noise(exact, m.noise, rel)
    model = None
    arrays: list[NDArray[Any]]
    if how == "model":
        sigma = math.sqrt(m.noise.variance)
        model = estimate([Measurement(s, np.asarray(y, dtype=np.float64), sigma)
                          for s, y in zip(plan.sets, noisy)], plan.sizes)
        arrays = [model.marginal(s) for s in plan.sets]
    else:
        arrays = list(noisy) if how == "independent" else list(_consistent(plan, noisy))
    return MarginalRelease(plan, arrays, how, m, cats, _is_frame(data), model)


#: The methods that measure adaptively under one zCDP budget (:mod:`.adaptive`).
ADAPTIVE = ("aim", "mst")


def _adaptive(data: Any, records: bool, plan: _Plan, cats: dict[Hashable, list[Any]],
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
    counting = _Plan(plan.names, plan.sizes, sets,
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
        exact = _count_codes(_record_codes(data, counting, cats, func), counting, rel.threads)
    else:
        exact = _sum_tables(_check_counts(data, func), counting)
    tables = dict(zip(sets, exact))
    measurer = Measurer(rel.charge_keys(), m.rho)
    if how == "aim":
        model, _ = aim(tables, plan.sizes, plan.sets, measurer)
    else:
        model, _ = mst(tables, plan.sizes, measurer)
    arrays: list[NDArray[Any]] = [model.marginal(s) for s in plan.sets]
    return MarginalRelease(plan, arrays, how, m, cats, _is_frame(data), model)


# -- accuracy ---------------------------------------------------------------------------

#: The most records :meth:`MarginalRelease.synthetic_records` draws at once (int64 codes
#: of every attribute for each: 8 bytes a cell).
MAX_RECORDS = 10**9


def _category_array(cats: list[Any]) -> NDArray[Any]:
    """The categories as an array of their own kind (numbers stay numbers), object for a
    mix."""
    arr = np.asarray(cats)
    return arr if arr.dtype.kind in "biuf" else np.asarray(cats, dtype=object)


def _no_model_bound(method: str, func: str) -> None:
    if method in ("model",) + ADAPTIVE:
        raise ValueError(f"The {func} of method={method!r} is not stated: the model's "
                         "tables are not linear in the noise (and AIM's and MST's "
                         "measurements are chosen by the data). Use expected_error() (where "
                         "a measurement holds the table) or another 'method'.")


def _variance_factors(plan: _Plan, method: str) -> list[float]:
    """Per-cell variance of each table in units of one noisy cell's variance."""
    if method == "independent":
        return [1.0] * len(plan.sets)
    weight = plan.weights()
    # Var V_S per cell = prod_{a in S} (1 - 1/n_a) / W_S; table T adds it / n_{T\S}^2.
    return [sum(math.prod(1.0 - 1.0 / plan.sizes[a] for a in sub)
                / (plan.outside(s, sub) ** 2 * weight[sub]) for sub in _subsets(s))
            for s in plan.sets]


def _variances(plan: _Plan, method: str,
               measured: Measure) -> dict[tuple[Hashable, ...], float]:
    """Per-cell variance of each table: the noise's variance (discrete Laplace, or sigma**2
    for Gaussian noise) times the table's factor."""
    sigma2 = measured.noise.variance
    return {lab: sigma2 * f for lab, f in zip(plan.labels, _variance_factors(plan, method))}


def _error_coefficients(plan: _Plan, j: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(a, mult): the error of any cell c of consistent table j is sum_i a_i K_i over the
    noisy cells, coefficient a[i] on mult[i] of them.

    The coefficient of noisy cell c' of table T' is sum over S in I = T & T' of
    prod_{a in S} (delta(c_a, c'_a) - 1/n_a) / (n_{T\\S} n_{T'\\S} W_S): it depends only on
    the attributes G of I where c and c' agree, and n_{T'\\I} prod_{a in I\\G} (n_a - 1)
    cells c' share G. Tables T' with the same I and n_{T'\\I} are grouped.
    """
    weight, table = plan.weights(), plan.sets[j]
    groups: dict[tuple[_Attrs, int], int] = {}
    for other in plan.sets:
        inter = tuple(a for a in table if a in other)
        key = (inter, plan.outside(other, inter))
        groups[key] = groups.get(key, 0) + 1
    coef, mult = [], []
    for (inter, rest), count in groups.items():
        for agree in _subsets(inter):
            coef.append(sum(
                math.prod(1.0 - 1.0 / plan.sizes[a] if a in agree else -1.0 / plan.sizes[a]
                          for a in sub)
                / (plan.outside(table, sub) * rest * plan.outside(inter, sub) * weight[sub])
                for sub in _subsets(inter)))
            mult.append(count * rest * math.prod(plan.sizes[a] - 1 for a in inter
                                                 if a not in agree))
    return np.array(coef), np.array(mult, dtype=np.float64)


def _cumulant(s: NDArray[np.float64], scale: float,
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """log E[exp(s K)] and its derivative, K discrete Laplace of parameter ``scale``
    (``|s| < 1/scale``): ``E[exp(s K)] = (1-q)^2 / ((1 - q e^s)(1 - q e^-s))``."""
    r = 1.0 / scale
    up, down = np.exp(s - r), np.exp(-s - r)
    k = 2.0 * math.log(-math.expm1(-r)) - np.log1p(-up) - np.log1p(-down)
    return k, up / (1.0 - up) - down / (1.0 - down)


def _tail_bound(coef: NDArray[np.float64], mult: NDArray[np.float64], scale: float,
                log_p: float) -> Callable[[float], float]:
    """u -> an upper bound on ``P[X >= u]``, ``X = sum_i a_i K_i`` (``a[i]`` on ``mult[i]``
    independent discrete Laplace noises of parameter ``scale``), for probabilities around
    ``exp(log_p)``.

    One noise of the largest coefficient, ``a0 K0``, is kept exact and the rest ``R``
    bounded by Chernoff: ``P[X >= u] = sum_k P[K0 = k] P[R >= u - a0 k]`` with
    ``P[R >= w] <= min_l exp(C_R(l) - l w)`` over a grid of ``l`` in ``[0, 1/(scale
    max|a|))`` (any ``l`` gives a bound; ``C_R`` is R's cumulant function); the ``k`` with
    ``|k| > kmax`` add their probability, below ``exp(log_p - 9)``. This is never above the
    plain Chernoff bound of ``X`` (up to the grid), and much closer to the truth when one
    noise dominates."""
    keep = (coef != 0) & (mult > 0)
    a, m = np.abs(coef[keep]), mult[keep].copy()
    top = int(np.argmax(a))
    a0 = float(a[top])
    m[top] -= 1
    a, m = a[m > 0], m[m > 0]
    q = math.exp(-1.0 / scale)
    kmax = math.ceil(scale * (9.0 - log_p))
    k = np.arange(-kmax, kmax + 1)
    pk = (-math.expm1(-1.0 / scale)) / (1.0 + q) * np.exp(-np.abs(k) / scale)
    beyond = 2.0 * q ** (kmax + 1) / (1.0 + q)
    if not a.size:                                  # X = a0 K0: P[K0 >= ceil(u / a0)]
        return lambda u: 1.0 if u <= 0 else q ** math.ceil(u / a0 * (1 - 1e-12)) / (1 + q)
    frac = np.concatenate((np.linspace(0.0, 0.9, 46), 1.0 - np.geomspace(0.1, 1e-7, 36)))
    lam = frac / (scale * float(a.max()))
    c_r = np.array([float(m @ _cumulant(x * a, scale)[0]) for x in lam])

    def tail(u: float) -> float:
        exponent = c_r[None, :] - lam[None, :] * (u - a0 * k)[:, None]
        return float(pk @ np.exp(np.minimum(exponent.min(axis=1), 0.0))) + beyond
    return tail


def _quantile(tail: Callable[[float], float], log_p: float, start: float) -> float:
    """The smallest u (to 1e-4 relative) with ``tail(u) <= exp(log_p)``, ``tail``
    non-increasing."""
    def above(u: float) -> bool:
        return math.log(max(tail(u), 1e-300)) > log_p

    lo, hi = 0.0, start
    while above(hi):
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    return hi


def _error_bounds(plan: _Plan, method: str, measured: Measure, beta: object,
                  func: str) -> dict[tuple[Hashable, ...], float]:
    b = _v.check_real(beta, "beta", func, low=0.0, high=1.0)
    noise = measured.noise
    if isinstance(noise, Gaussian):
        return _gaussian_error_bounds(plan, method, noise, b)
    m = len(plan.sets)
    eps = float(m) / noise.scale if measured.epsilon is None else measured.epsilon
    scale = noise.scale
    if math.exp(-1.0 / scale) == 0.0:               # the noise is exactly 0
        return {lab: 0.0 for lab in plan.labels}
    if method == "independent":
        j = float(max_error_bound(plan.n_cells, epsilon=eps, sensitivity=float(m), beta=b))
        return {lab: j for lab in plan.labels}
    # Each cell's error exceeds its bound, on either side, with probability <= beta / N.
    log_p = math.log(b / (2.0 * plan.n_cells))
    return {lab: _quantile(_tail_bound(*_error_coefficients(plan, j), scale, log_p), log_p,
                           scale)
            for j, lab in enumerate(plan.labels)}


def _gaussian_error_bounds(plan: _Plan, method: str, noise: Gaussian,
                           b: float) -> dict[tuple[Hashable, ...], float]:
    """Gaussian noise: the error of a cell of table T is ``sum_i a_i K_i`` over independent
    discrete Gaussians, each sigma-subgaussian (Canonne, Kamath & Steinke 2020), so it is
    subgaussian with variance proxy ``sigma**2 sum_i a_i**2``, the table's variance factor
    times ``sigma**2``: ``P[|error| >= u] <= 2 exp(-u**2 / (2 f_T sigma**2))``. At ``beta /
    N`` per cell (a union bound over all ``N`` cells), ``u = sqrt(f_T)`` times the noise's
    own :meth:`~dpfast.noise.Gaussian.tail_bound` at ``beta / N``."""
    one = noise.tail_bound(b / plan.n_cells)
    return {lab: math.sqrt(f) * one
            for lab, f in zip(plan.labels, _variance_factors(plan, method))}


def _domain_plan(domain: object, k: object, workload: object, func: str) -> _Plan:
    """The plan of a release over ``domain``: a mapping of names to categories, or sizes."""
    if isinstance(domain, Mapping):
        cats = {n: _categories(c, n, None, func) for n, c in domain.items()}
        names, sizes = tuple(cats), tuple(len(c) for c in cats.values())
    else:
        sizes = check_domain(domain, func)
        names = tuple(range(len(sizes)))
    return _plan(names, sizes, k, workload, func)


def _accuracy_plan(func: str, domain: Any, k: int | None, workload: Any,
                   method: str | None, noise: object, epsilon: object, delta: object,
                   rho: object) -> tuple[_Plan, str, Measure]:
    """The checked plan, method and noise of an accuracy function (no data involved; the
    noise is the release's, from the same keywords: nothing is charged)."""
    how = _check_method(method, func)
    _no_model_bound(how, func)
    plan = _domain_plan(domain, k, workload, func)
    return plan, how, _measure(func, noise, epsilon, delta, rho, len(plan.sets))


def marginal_variance(domain: Mapping[Any, Any] | ArrayLike, *,
                      epsilon: float | None = None, k: int | None = 2, workload: Any = None,
                      method: str | None = None, noise: str = "laplace",
                      delta: float | None = None,
                      rho: float | None = None) -> dict[tuple[Hashable, ...], float]:
    """marginal_variance(domain, *, epsilon=None, k=2, workload=None, method=None, noise="laplace", delta=None, rho=None)

    The exact variance of every released cell of :func:`marginals`, per table (all cells of
    a table have the same). Public: it needs only the attributes' sizes.

    Parameters
    ----------
    domain : mapping or sequence of int
        The ``keys`` of the release (names to categories), or the attributes' sizes (the
        shape of the counts).
    epsilon, k, workload, method, noise, delta, rho
        As for :func:`marginals` (the same keywords give the same noise; nothing is
        charged).

    Returns
    -------
    dict
        Table label to per-cell variance.

    Notes
    -----
    ``"independent"``: the variance of discrete Laplace noise of scale ``t = m/epsilon``,
    ``sigma^2 = 2 e^{-1/t} / (1 - e^{-1/t})^2``, or of the discrete Gaussian, ``sigma^2``
    (an upper bound, exact to ``1e-8`` relative from sigma = 1: the discrete Gaussian's
    variance falls short of it by about ``4 pi^2 sigma^4 e^{-2 pi^2 sigma^2}``).
    ``"consistent"``: the components ``V_S``
    are independent across ``S``, each the inverse-variance average of its observations,
    so a cell of table ``T`` has variance ``sigma^2 sum_{S in T} prod_{a in S} (1 - 1/n_a) /
    (n_{T\\S}^2 W_S)`` with ``W_S = sum_{T' contains S} 1 / n_{T'\\S}`` (the factor
    ``prod (1 - 1/n_a)`` is the diagonal of the centring along the attributes of ``S``).

    Examples
    --------
    >>> from dpfast import marginal_variance
    >>> v = marginal_variance([2, 2, 2], epsilon=1.0, method="independent")
    >>> round(v[(0, 1)], 3)
    17.834
    >>> round(marginal_variance([2, 2, 2], epsilon=1.0)[(0, 1)] / v[(0, 1)], 4)
    0.5833
    >>> g = marginal_variance([2, 2, 2], noise="gaussian", rho=0.5, method="independent")
    >>> round(g[(0, 1)], 9)             # sigma**2 = l2**2 / (2 rho), l2**2 = 3 tables
    3.0
    """
    plan, how, measured = _accuracy_plan("marginal_variance", domain, k, workload, method,
                                         noise, epsilon, delta, rho)
    return _variances(plan, how, measured)


def marginal_error_bound(domain: Mapping[Any, Any] | ArrayLike, *,
                         epsilon: float | None = None, beta: float = 0.05,
                         k: int | None = 2, workload: Any = None, method: str | None = None,
                         noise: str = "laplace", delta: float | None = None,
                         rho: float | None = None) -> dict[tuple[Hashable, ...], float]:
    """marginal_error_bound(domain, *, epsilon=None, beta=0.05, k=2, workload=None, method=None, noise="laplace", delta=None, rho=None)

    Bounds, one per table, that the errors of every cell of every table released by
    :func:`marginals` stay within, all at once, with probability at least ``1 - beta``.

    Parameters
    ----------
    domain, epsilon, k, workload, method, noise, delta, rho
        As for :func:`marginal_variance`.
    beta : float, optional
        Failure probability, in (0, 1).

    Returns
    -------
    dict
        Table label to bound.

    Notes
    -----
    ``"independent"``: the exact quantile of the largest of the ``N`` (all cells) discrete
    Laplace noises, :func:`dpfast.max_error_bound`. ``"consistent"``: the error of a cell
    is a fixed linear combination ``sum_j a_j K_j`` of the ``N`` independent noises (the
    same distribution for every cell of a table; the coefficients are computed exactly from
    the ANOVA weights). Its tail is bounded by keeping the noise of the largest coefficient
    exact and bounding the rest by Chernoff (exact cumulant function of discrete Laplace
    noise), and each table's bound is where that tail is ``beta / (2 N)``: a union bound
    over both signs and all ``N`` cells. The bound is rigorous, not an approximation, and
    somewhat conservative; the variances (:func:`marginal_variance`) compare the methods
    exactly. Cost: about ``m^2`` small steps for ``m`` tables.

    Gaussian noise: every discrete Gaussian is sigma-subgaussian (Canonne, Kamath & Steinke
    2020), so the error of a cell, a linear combination of them, is subgaussian with
    variance proxy its variance (:func:`marginal_variance`, ``f_T sigma^2``), and each
    table's bound is ``sqrt(f_T) sigma sqrt(2 ln(2 N / beta))``, with the same union bound.
    Rigorous for both methods (``f_T = 1`` for ``"independent"``).

    Examples
    --------
    >>> from dpfast import marginal_error_bound
    >>> marginal_error_bound([2, 2, 2], epsilon=1.0, method="independent")[(0, 1)]
    16.0
    >>> b = marginal_error_bound([2, 2, 2], epsilon=1.0)
    >>> round(b[(0, 1)], 1)
    13.2
    >>> g = marginal_error_bound([2, 2, 2], noise="gaussian", rho=0.5, method="independent")
    >>> round(g[(0, 1)], 2)             # sigma sqrt(2 ln(2 N / beta)), N = 12 cells
    6.09
    """
    func = "marginal_error_bound"
    plan, how, measured = _accuracy_plan(func, domain, k, workload, method, noise, epsilon,
                                         delta, rho)
    return _error_bounds(plan, how, measured, beta, func)
