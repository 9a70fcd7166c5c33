"""The result of a marginals release: the released tables as a read-only mapping, with their
variances, error bounds, non-negative integer form and, for a fitted model, synthetic records.

:class:`MarginalRelease` is what :func:`dpfast.marginals` returns; reading it is
post-processing and costs no budget. The variances and bounds are
:mod:`.marginal_accuracy`'s, the tables labelled by :mod:`dpfast.tables`.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import tables
from .. import validation as _v
from ..noise import Gaussian, Measure
from ..releases.postprocess import consistent_counts
from ..rng import resolve_rng
from .graphical import GraphicalModel
from .marginal_accuracy import error_bounds, no_model_bound, variances
from .marginal_plan import Plan, check_method

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..rng import RngLike

__all__ = ["MarginalRelease", "MAX_RECORDS", "category_array"]


#: The most records :meth:`MarginalRelease.synthetic_records` draws at once (int64 codes
#: of every attribute for each: 8 bytes a cell).
MAX_RECORDS = 10**9


def category_array(cats: list[Any]) -> NDArray[Any]:
    """The categories as an array of their own kind (numbers stay numbers), object for a
    mix."""
    arr = np.asarray(cats)
    return arr if arr.dtype.kind in "biuf" else np.asarray(cats, dtype=object)


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

    def __init__(self, plan: Plan, arrays: list[NDArray[Any]], method: str,
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
        self._indexes = tables.category_indexes(categories, pandas)
        self.tables = {lab: tables.label_table(a, lab, self._indexes)
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
        how = self.method if method is None else check_method(method, "variance")
        no_model_bound(how, "variance")
        return variances(self._plan, how, self._measure)

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
        columns = {name: category_array(self.categories[name])[codes[:, i]]
                   for i, name in enumerate(self._plan.names)}
        if self._indexes is not None:
            import pandas as pd
            return pd.DataFrame(columns)
        return columns

    def error_bound(self, beta: float = 0.05,
                    method: str | None = None) -> dict[tuple[Hashable, ...], float]:
        """Per-table bounds that every cell of every table stays within, all at once, with
        probability at least ``1 - beta``, as :func:`marginal_error_bound`."""
        how = self.method if method is None else check_method(method, "error_bound")
        no_model_bound(how, "error_bound")
        return error_bounds(self._plan, how, self._measure, beta, "error_bound")

    def nonnegative(self) -> dict[tuple[Hashable, ...], Any]:
        """The tables as non-negative integers (post-processing, free).

        Every table is projected onto the non-negative tables with one common total, the
        mean of the released tables' totals rounded (at least 0), and rounded keeping that
        total (:func:`dpfast.releases.postprocess.consistent_counts`). All tables then sum
        to the same integer, but shared sub-marginals no longer agree exactly: clipping and
        rounding differ from table to table. Labelled like :attr:`tables`.
        """
        total = max(0, round(float(np.mean([a.sum() for a in self._arrays]))))
        return {lab: tables.label_table(consistent_counts(a, total=total), lab, self._indexes)
                for lab, a in zip(self._plan.labels, self._arrays)}
