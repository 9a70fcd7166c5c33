"""The tables of a marginal release: which tables (every k-way set of attributes, or a
workload's), their sizes and limits, and their exact counts and noise.

A plan names the attributes and their sizes, lists the tables as sorted attribute indices
with each table's label (its attribute names in the caller's order), and is checked against
the limits of one release (:data:`MAX_TABLES` tables, :data:`MAX_CELLS` cells). The exact
tables are counted from each record's int64 cell codes by the compiled kernel
(:func:`count_codes`) or summed from a full histogram (:func:`sum_tables`); one kernel call
then adds the noise to every cell of every table (:func:`add_noise`), the release charged
once for all of them (:func:`table_measure`: a record is in one cell of each of ``m`` tables,
l1 sensitivity ``m``, l2 sensitivity ``sqrt(m)``).
"""
from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from .. import _native
from .. import validation as _v
from .._release import Release
from ..accounting import composes_in_zcdp
from ..noise import Gaussian, Laplace, Measure, measure
from ..samplers import MAX_DISCRETE_SCALE, MAX_DISCRETE_SIGMA
from ..tables import public_categories
from .workloads import Marginals, check_domain, marginal_sums

if TYPE_CHECKING:
    from typing import TypeAlias

    from numpy.typing import NDArray

    #: A table's attributes: sorted indices (internal), or names in the caller's order.
    Attrs: TypeAlias = tuple[int, ...]
    Label: TypeAlias = tuple[Hashable, ...]

__all__ = ["METHODS", "ADAPTIVE", "MAX_CELLS", "MAX_TABLES", "MAX_COMPONENTS", "Plan",
           "subsets", "make_plan", "check_components", "check_method", "table_measure",
           "count_codes", "check_counts", "sum_tables", "add_noise", "domain_plan"]

#: The post-processing choices of :func:`marginals` (the first is the default).
METHODS = ("consistent", "independent", "model", "aim", "mst")
#: Largest number of cells of all tables of one release together.
MAX_CELLS = 2**34
#: Largest number of tables of one release.
MAX_TABLES = 2**16
#: Largest number of (table, sub-attribute-set) pairs of a consistent release: each table of
#: ``j`` attributes has ``2**j`` ANOVA components.
MAX_COMPONENTS = 2**20
#: The methods that measure adaptively under one zCDP budget (:mod:`.adaptive`).
ADAPTIVE = ("aim", "mst")


class Plan:
    """Attribute names and sizes, the tables as sorted attribute indices, and each table's
    label (its attribute names in the caller's order)."""

    def __init__(self, names: tuple[Hashable, ...], sizes: tuple[int, ...],
                 sets: list[Attrs], labels: list[Label]):
        self.names, self.sizes, self.sets, self.labels = names, sizes, sets, labels
        self.shapes = [tuple(sizes[a] for a in s) for s in sets]
        self.n_cells = sum(math.prod(shape) for shape in self.shapes)

    def weights(self) -> dict[Attrs, float]:
        """W_S = sum over the tables T containing S of 1 / n_{T\\S}, for every S."""
        weight: dict[Attrs, float] = {}
        for s in self.sets:
            for sub in subsets(s):
                weight[sub] = weight.get(sub, 0.0) + 1.0 / self.outside(s, sub)
        return weight

    def outside(self, table: Attrs, sub: Attrs) -> int:
        """n_{T\\S}: the number of cells of the attributes of ``table`` not in ``sub``."""
        return math.prod(self.sizes[a] for a in table if a not in sub)

    def order(self, j: int) -> list[int]:
        """The axes of table ``j`` (sorted attributes) in its label's order."""
        index = {n: i for i, n in enumerate(self.names)}
        return [self.sets[j].index(index[n]) for n in self.labels[j]]


def subsets(table: Attrs) -> list[Attrs]:
    """Every subset of ``table``, the empty one first, each sorted."""
    return [s for r in range(len(table) + 1) for s in itertools.combinations(table, r)]


def _check_k(k: object, d: int, func: str) -> int:
    rule = f"an int in [1, {d}] (the number of attributes)"
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise TypeError(f"The 'k' parameter of {func} must be {rule}. Got {k!r} instead.")
    if not 1 <= int(k) <= d:
        raise ValueError(f"The 'k' parameter of {func} must be {rule}. Got {k!r} instead.")
    return int(k)


def make_plan(names: tuple[Hashable, ...], sizes: tuple[int, ...], k: object, workload: object,
          func: str) -> Plan:
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
    plan = Plan(names, sizes, sets, labels)
    if plan.n_cells > MAX_CELLS:
        raise ValueError(f"The tables of {func} would have {plan.n_cells:,} cells, more than "
                         f"{MAX_CELLS:,}.")
    return plan


def _workload_sets(workload: object, names: tuple[Hashable, ...], sizes: tuple[int, ...],
                   func: str) -> tuple[list[Attrs], list[Label]]:
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
                        f"sequence of attribute tuples. Got {_v.describe(workload)} instead.")
    index = {n: i for i, n in enumerate(names)}
    sets, labels = [], []
    for entry in workload:
        label = tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)
        try:
            attrs = [index.get(n) for n in label]
        except TypeError:                        # an unhashable name
            attrs = [None]
        if not label or None in attrs or len(set(attrs)) != len(attrs):
            # The entry by position only: names given by mistake could be the data's values.
            raise ValueError(f"The 'workload' parameter of {func} must list non-empty tuples "
                             f"of distinct attributes among {list(names)!r}. Got "
                             f"{_v.describe(entry)} at position {len(sets)} instead.")
        sets.append(tuple(sorted(a for a in attrs if a is not None)))
        labels.append(label)
    if not sets:
        raise ValueError(f"The 'workload' parameter of {func} must list at least one table. "
                         f"Got {_v.describe(workload)} instead.")
    return sets, labels


def check_components(plan: Plan, func: str) -> None:
    """Refuse a consistent release of more than :data:`MAX_COMPONENTS` ANOVA components."""
    n = sum(2 ** len(s) for s in plan.sets)
    if n > MAX_COMPONENTS:
        raise ValueError(f"The tables of {func} have {n:,} ANOVA components, more than "
                         f"{MAX_COMPONENTS:,}, for method='consistent' (tables of fewer "
                         "attributes, or method='independent').")


def check_method(method: object, func: str) -> str:
    """The post-processing method of a release: one of :data:`METHODS` (None: the first)."""
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


def table_measure(func: str, noise: object, epsilon: object, delta: object, rho: object,
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


def count_codes(codes: Mapping[int, NDArray[np.int64]], plan: Plan,
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


def check_counts(value: object, func: str) -> NDArray[np.int64]:
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


def sum_tables(counts: NDArray[np.int64], plan: Plan) -> list[NDArray[np.int64]]:
    """The exact marginal tables of a full histogram."""
    return marginal_sums(counts, plan.sets)


def add_noise(tables: list[NDArray[np.int64]], noise: Laplace | Gaussian,
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


def domain_plan(domain: object, k: object, workload: object, func: str) -> Plan:
    """The plan of a release over ``domain``: a mapping of names to categories, or sizes."""
    if isinstance(domain, Mapping):
        cats = {n: public_categories(c, n, None, func) for n, c in domain.items()}
        names, sizes = tuple(cats), tuple(len(c) for c in cats.values())
    else:
        sizes = check_domain(domain, func)
        names = tuple(range(len(sizes)))
    return make_plan(names, sizes, k, workload, func)
