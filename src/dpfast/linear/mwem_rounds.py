"""The rounds of MWEM (:mod:`dpfast.linear.multiplicative_weights`): what a round selects,
measures and updates, on a checked plan.

:class:`QueryRounds` (``measure="queries"``, the paper's algorithm) selects one query per
round and keeps ``x_hat`` as a value per atom (:class:`Atoms`: the cells on which every
measured query has the same entry), updated by ``MWEM_PASSES`` passes of multiplicative
weights over the measured queries. :class:`TableRounds` (``measure="tables"``, for
``Marginals`` workloads) selects and measures one whole marginal table per round and fits
the dense ``x_hat`` to it (:func:`multiply`: one factor per table cell, broadcast over the
other attributes). Both draw each selection and measurement under the release's next key;
their updates are post-processing. The checks before the charge, the budget split that
:class:`Plan` records and the release object are in
:mod:`dpfast.linear.multiplicative_weights`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .. import noise as _noise
from . import workloads as _wl

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._release import Keys
    from ..noise import Laplace

__all__ = ["MWEM_PASSES", "FIT_FLOOR", "Plan", "RoundState", "Measured", "choose",
           "QueryRounds", "TableRounds", "multiply", "Atoms"]

#: Passes over all measured queries after each new measurement (measure="queries").
MWEM_PASSES = 10
#: The least value of a measured table's cell when x_hat is fitted to it (measure="tables").
FIT_FLOOR = 1e-3


@dataclass(frozen=True)
class Plan:
    """A checked call: the data, its true answers and the noise parameters."""

    x: NDArray[np.float64]               # flat counts
    workload: _wl.Workload
    truth: NDArray[np.float64]           # workload.answer(x)
    total: float | Laplace               # public total, or the noise it is measured with
    epsilon: float
    total_epsilon: float
    rounds: int
    average: bool
    measure: str                         # "queries" or "tables"
    draws: int                           # the largest kernel call (for the thread count)
    em_a: float                          # selection weights exp(em_a * (u - max u))
    noise: Laplace                       # the measurements' noise (on a grid)
    scale: float                         # its scale, g * t


class RoundState(Protocol):
    """What a round works on: ``QueryRounds`` (measure="queries") or ``TableRounds``."""

    def select(self, keys: Keys, threads: int) -> int:
        """A private selection, given the current ``x_hat``."""

    def measure(self, keys: Keys, threads: int, i: int) -> NDArray[np.float64]:
        """The noisy answer(s) of what ``i`` selects."""

    def update(self, i: int, value: NDArray[np.float64]) -> None:
        """Update ``x_hat`` with a new measurement of what ``i`` selects."""

    def histogram(self) -> NDArray[np.float64]:
        """``x_hat`` over the cells (flat)."""


class Measured:
    """The measurements of each selected query (table), in the order first selected."""

    def __init__(self) -> None:
        self.values: dict[int, list[NDArray[np.float64]]] = {}

    def add(self, i: int, value: NDArray[np.float64]) -> bool:
        """Record a measurement of ``i``; True if ``i`` is measured for the first time."""
        new = i not in self.values
        self.values.setdefault(i, []).append(value)
        return new

    def mean(self, i: int) -> NDArray[np.float64]:
        """The mean of ``i``'s measurements, summed in order."""
        values = self.values[i]
        out = np.array(values[0], dtype=np.float64)
        for v in values[1:]:
            out += v
        out /= len(values)
        return out


def choose(keys: Keys, threads: int, plan: Plan, u: NDArray[np.float64]) -> int:
    """The exponential mechanism on utilities ``u`` of sensitivity 1, at ``eps_R / (2T)``."""
    u = np.ascontiguousarray(u, dtype=np.float64)
    return _noise.exponential_mechanism(keys.next(), threads, u, float(u.max()), plan.em_a)


class QueryRounds:
    """measure="queries": one query per round, ``x_hat`` kept on atoms (:class:`Atoms`)."""

    def __init__(self, plan: Plan, total: float):
        self.plan, self.total = plan, total
        self.atoms = Atoms(plan.x.size, total)
        self.measured = Measured()

    def select(self, keys: Keys, threads: int) -> int:
        """The exponential mechanism on the errors ``|q . x - q . x_hat|`` of every query."""
        return choose(keys, threads, self.plan,
                      np.abs(self.plan.truth - self.plan.workload.answer(self.histogram())))

    def measure(self, keys: Keys, threads: int, i: int) -> NDArray[np.float64]:
        """The query's answer with Laplace noise of scale ``2T / eps_R`` (one value)."""
        return np.array([self.plan.noise.scalar(keys.next(), threads, float(self.plan.truth[i]))])

    def update(self, i: int, value: NDArray[np.float64]) -> None:
        """``MWEM_PASSES`` passes of the paper's update over every measured query, each
        towards the mean of its measurements clamped to ``[0, n]``."""
        if self.measured.add(i, np.clip(value, 0.0, self.total)):
            self.atoms.add(self.plan.workload.query(i))
        targets = [float(self.measured.mean(k)[0]) for k in self.measured.values]
        for _ in range(MWEM_PASSES):
            for j, target in enumerate(targets):
                self.atoms.update(j, target)

    def histogram(self) -> NDArray[np.float64]:
        return self.atoms.histogram()


class TableRounds:
    """measure="tables": one marginal table per round, ``x_hat`` a dense array of the
    domain."""

    def __init__(self, plan: Plan, total: float):
        assert isinstance(plan.workload, _wl.Marginals)
        self.plan, self.total = plan, total
        self.marginals = plan.workload
        self.xhat = np.full(plan.workload.domain, total / plan.x.size)
        self.measured = Measured()

    def truth(self, j: int) -> NDArray[np.float64]:
        """Table ``j`` of the data, flat (a view of the plan's answers)."""
        lo, hi = self.marginals.offsets[j], self.marginals.offsets[j + 1]
        return self.plan.truth[lo:hi]

    def select(self, keys: Keys, threads: int) -> int:
        """The exponential mechanism on ``||table_j(x) - table_j(x_hat)||_1`` less the
        expected l1 error of table ``j``'s measurement, ``scale * cells_j``."""
        tables = _wl.marginal_sums(self.xhat, self.marginals.attributes)
        u = [float(np.abs(self.truth(j) - t.ravel()).sum()) - self.plan.scale * t.size
             for j, t in enumerate(tables)]
        return choose(keys, threads, self.plan, np.array(u))

    def measure(self, keys: Keys, threads: int, j: int) -> NDArray[np.float64]:
        """Table ``j`` with Laplace noise of scale ``2T / eps_R`` on each cell (flat)."""
        base = self.truth(j)
        return self.plan.noise.fill(keys.next(), threads, np.empty(base.size), base)

    def update(self, j: int, value: NDArray[np.float64]) -> None:
        """Fit ``x_hat`` to table ``j``'s measurements: their mean, each cell at least
        ``FIT_FLOOR``, in proportion with the total ``n``; one factor per table cell."""
        self.measured.add(j, value)
        keep = self.marginals.attributes[j]
        estimate = _wl.marginal(self.xhat, keep)
        target = np.maximum(self.measured.mean(j).reshape(estimate.shape), FIT_FLOOR)
        # A cell whose estimate has underflowed to 0 stays 0; the others keep the total.
        factor = np.divide(target, estimate, out=np.zeros_like(target), where=estimate > 0)
        factor *= self.total / float(np.sum(estimate * factor))
        multiply(self.xhat, keep, factor)

    def histogram(self) -> NDArray[np.float64]:
        return self.xhat.reshape(-1)


def multiply(x: NDArray[np.float64], keep: tuple[int, ...],
              factor: NDArray[np.float64]) -> None:
    """``x *= factor`` in place, ``factor`` over the axes in ``keep`` (sorted) broadcast over
    the others; the factor is written out over the trailing block when it varies there, so
    that numpy's innermost loop is a long contiguous run."""
    shape = x.shape
    b = _wl.trailing_block(shape)
    block = math.prod(shape[b:])
    lead = [shape[a] if a in keep else 1 for a in range(b)]
    full = factor.reshape([shape[a] if a in keep else 1 for a in range(len(shape))])
    if keep[-1] >= b:
        wide = lead + [shape[a] for a in range(b, len(shape))]
        f = np.broadcast_to(full, wide).reshape(lead + [block])
    else:
        f = full.reshape(lead + [1])
    view = x.reshape(shape[:b] + (block,))
    view *= f


class Atoms:
    """``x_hat`` as a value per atom: the cells on which every measured query has the same
    entry. Multiplicative weights from the uniform histogram keep ``x_hat`` constant on each
    atom, so the updates work on atoms (usually far fewer than the cells); only adding a
    query (splitting atoms by its row) and reading the histogram touch every cell.

    ``atom``: each cell's atom; ``size``: cells per atom; ``value``: ``x_hat`` on each of
    the atom's cells; ``entries[j]``: the ``j``-th measured query's entry on each atom.
    """

    def __init__(self, n_cells: int, total: float):
        self.total = total
        self.atom = np.zeros(n_cells, dtype=np.intp)
        self.size = np.array([float(n_cells)])
        self.value = np.array([total / n_cells])
        self.entries = np.empty((0, 1))

    def add(self, row: NDArray[np.float64]) -> None:
        """Split the atoms by a new query's row and record its entries."""
        levels, code = _levels(row)
        k = levels.size
        keys, self.atom = _relabel(self.atom * k + code, self.size.size * k)
        parent = keys // k
        self.size = np.bincount(self.atom, minlength=keys.size).astype(np.float64)
        self.value = self.value[parent]
        self.entries = np.vstack((self.entries[:, parent], levels[keys % k]))

    def update(self, j: int, m: float) -> None:
        """``x_hat *= exp(q * (m - q . x_hat) / (2 total))`` for the ``j``-th measured query,
        renormalised to the total."""
        q = self.entries[j]
        estimate = float(np.sum(q * self.size * self.value))
        self.value *= np.exp(q * ((m - estimate) / (2.0 * self.total)))
        self.value *= self.total / float(np.sum(self.size * self.value))

    def histogram(self) -> NDArray[np.float64]:
        """``x_hat`` over the cells (flat)."""
        return self.value[self.atom]


def _levels(row: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The distinct entries of a row and each cell's index among them (one pass for the
    usual 0/1 rows)."""
    if bool(np.all((row == 0.0) | (row == 1.0))):
        return np.array([0.0, 1.0]), row.astype(np.intp)
    levels, code = np.unique(row, return_inverse=True)
    return levels, code.reshape(-1).astype(np.intp)


def _relabel(key: NDArray[np.intp], n_keys: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The distinct values of ``key`` (in ``[0, n_keys)``), in increasing order, and each
    element's index among them: by counting when ``n_keys`` is small, else by sorting."""
    if n_keys <= 4 * key.size:
        keys = np.flatnonzero(np.bincount(key, minlength=n_keys))
        index = np.zeros(n_keys, dtype=np.intp)
        index[keys] = np.arange(keys.size)
        return keys, index[key]
    keys, inverse = np.unique(key, return_inverse=True)
    return keys.astype(np.intp), inverse.reshape(-1).astype(np.intp)
