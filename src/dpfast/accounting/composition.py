"""How spends compose: the tree of parallel blocks and partitions, group privacy, the
running sums of advanced composition, and the rho budget of a zCDP accountant.

Sequential spends add; the spends of a parallel block (:meth:`Accountant.parallel
<dpfast.accounting.Accountant.parallel>`) are on disjoint partitions of the data and cost the
largest epsilon and the largest delta among the partitions; a partition's spends add. A
spend at a block is planned (:func:`plan`: the new cost of each enclosing block and the
increase of the outermost one's group-scaled charge) before anything changes, and applied
(:func:`apply_plan`) only once the accountant has checked it and made it durable. The
blocks' state lives in the :class:`Node` objects, under their accountant's lock.
"""
from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Protocol

from .. import validation as _v
from ..zcdp import rho_from_epsilon_delta
from .amounts import ZERO, advanced_epsilon, as_float, exp_up, loss_term, sub
from .errors import check_label
from .roles import Root

if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    from .. import _native
    from .amounts import Amount, Cost

    # plan's result: (updates, root, old, new, increase).
    Plan: TypeAlias = "tuple[list[tuple[Node, Cost]], Node | None, Cost, Cost, Cost]"

__all__ = ["BlockAccountant", "Node", "ParallelBlock", "Partition", "PARALLEL", "PARTITION",
           "group_cost", "plan", "apply_plan", "advanced_bound", "advanced_sums", "zcdp_budget"]


PARALLEL, PARTITION = "parallel", "partition"


class BlockAccountant(Root, Protocol):
    """What a block or partition asks of its accountant (:class:`~dpfast.accounting.Accountant`
    satisfies it): its lock (the tally) and block count, and the check and spend of a cost
    at a node."""

    _tally: _native.Tally
    _n_blocks: int

    @property
    def composition(self) -> str: ...

    def _spend_at(self, node: Node | None, epsilon: float | None, delta: float,
                  label: object, rho: float | None = None,
                  commits: str | None = None) -> None: ...

    def _check_at(self, node: Node | None, epsilon: float | None, delta: float,
                  rho: float | None = None) -> bool: ...


class Node:
    """A parallel block or a partition: where a spend is made when it is not made on the
    accountant itself (see :meth:`Accountant.parallel`)."""

    def __init__(self, acct: BlockAccountant, parent: "Node | None", kind: str,
                 label: str | None) -> None:
        self._acct = acct
        self._parent = parent
        self._kind = kind
        with acct._tally:
            acct._n_blocks += 1
            name = label if label is not None else f"{kind}-{acct._n_blocks}"
        self._path: tuple[str, ...] = (parent._path if parent else ()) + (name,)
        # Cost for one individual (before group scaling): the sum of the children for a
        # partition, the componentwise maximum over the children for a parallel block.
        self._cost: Cost = ZERO
        # For an outermost block only: its group-scaled cost, as charged to the accountant,
        # and the name of its charges in a durable ledger (for advanced composition).
        self._charged: Cost = ZERO
        self._unit: str | None = None
        self._pid = os.getpid()


    @property
    def composition(self) -> str:
        """How the accountant this block charges composes (``"basic"``, ``"advanced"`` or
        ``"zcdp"``)."""
        return self._acct.composition

    def __reduce__(self) -> "tuple[object, ...]":
        raise TypeError(
            f"A {type(self).__name__} cannot be copied or pickled: a copy would recompute "
            "the block's cost from a stale state and charge the accountant wrongly. Spend "
            "through the block itself, in the process that made it.")

    @property
    def cost(self) -> "tuple[float, float]":
        """(epsilon, delta) of this block so far, for one individual (before group scaling)."""
        with self._acct._tally:
            return as_float(self._cost[0]), as_float(self._cost[1])

    @property
    def path(self) -> "tuple[str, ...]":
        """Names of the enclosing blocks and this one, outermost first."""
        return self._path

    def _closed(self) -> "ParallelBlock | None":
        """The first block of this node's chain that is not open, if any."""
        node: Node | None = self
        while node is not None:
            if isinstance(node, ParallelBlock) and not node._open:
                return node
            node = node._parent
        return None

    def spend(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None, label: object = None) -> None:
        """Charge (epsilon, delta) (or ``rho``, see :meth:`Accountant.spend`) here: as one
        partition of a parallel block, or added to a partition's other spends; raise
        :class:`BudgetExceededError` and charge nothing when the accountant's budget cannot
        cover the increase of the outermost block's cost. Mechanisms call this when given
        the block or partition as ``accountant=``."""
        self._acct._spend_at(self, epsilon, delta, label, rho)

    def check(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None) -> bool:
        """True if :meth:`spend` of (epsilon, delta) (or rho) here would fit; spends
        nothing."""
        return self._acct._check_at(self, epsilon, delta, rho)

    def __repr__(self) -> str:
        eps, dlt = self.cost
        return f"<{self._kind} {self._path!r}: cost (epsilon={eps!r}, delta={dlt!r})>"


class ParallelBlock(Node):
    """Spends on disjoint partitions of the data, which cost the largest of them.

    Made by :meth:`Accountant.parallel` (or :meth:`Partition.parallel`, nested) and used as
    ``with acct.parallel() as block:``. Each spend made *through the block* (``block.spend``,
    or ``accountant=block`` in a mechanism) is one partition; :meth:`partition` gathers
    several spends into one. Spends made on the accountant itself stay sequential, inside
    the ``with`` block or not, so nothing but the code's explicit choice makes a spend
    parallel: not a suspended generator, a thread or an exception. Once the block has ended,
    spending through it raises ``RuntimeError``.
    """

    def __init__(self, acct: BlockAccountant, parent: "Partition | None",
                 label: str | None) -> None:
        super().__init__(acct, parent, PARALLEL, label)
        self._open = False
        self._entered = False

    def __enter__(self) -> "ParallelBlock":
        if self._entered:
            raise RuntimeError("This parallel block has already been used; call "
                               "acct.parallel() again for a new block.")
        closed = self._parent._closed() if self._parent is not None else None
        if closed is not None:
            raise RuntimeError(f"The parallel block {closed.path!r} has ended: a block "
                               "cannot be opened inside it any more.")
        self._entered = self._open = True
        return self

    def __exit__(self, *exc: object) -> "Literal[False]":
        # What was spent inside stays spent: the block only stops taking new spends.
        self._open = False
        return False

    def partition(self, *, label: str | None = None) -> "Partition":
        """One partition of this block: spends through it add up, and it may hold further
        parallel blocks (:meth:`Partition.parallel`), which then cost their maximum within
        it.

        Parameters
        ----------
        label : str, optional
            Name of the partition in ledger paths (default ``"partition-<n>"``).
        """
        return Partition(self._acct, self, check_label(label, "ParallelBlock.partition"))


class Partition(Node):
    """One partition of a parallel block (:meth:`ParallelBlock.partition`): its spends add
    up. It can be spent through while its block is open."""

    def __init__(self, acct: BlockAccountant, parent: ParallelBlock, label: str | None) -> None:
        super().__init__(acct, parent, PARTITION, label)

    def parallel(self, *, label: str | None = None) -> ParallelBlock:
        """A parallel block nested in this partition; see :meth:`Accountant.parallel`."""
        return ParallelBlock(self._acct, self, check_label(label, "Partition.parallel"))



def group_cost(cost: Cost, k: int, zcdp: bool) -> Cost:
    """Group privacy for k records: (k eps, k e^{(k-1)eps} delta), delta rounded up; for a
    zCDP cost (``zcdp``: (rho, 0)), k**2 rho."""
    eps, dlt = cost
    if k == 1:
        return cost
    if zcdp:
        return (k * k * eps, 0)                     # rho-zCDP for groups of k: k**2 rho
    if dlt == 0:
        return (k * eps, dlt)
    grow = exp_up((k - 1) * eps)
    if grow == math.inf:
        return (k * eps, math.inf)
    p, q = grow.as_integer_ratio()
    return (k * eps, -(-k * p * dlt // q))          # k * grow * delta, rounded up


def plan(e: int, d: int, node: Node | None, k: int, zcdp: bool) -> Plan:
    """What a spend of (e, d) at ``node`` (None: the accountant itself) would change, for
    groups of ``k`` (``zcdp``: costs in rho); call with the accountant's lock held.

    Returns (updates, root, old, new, increase): the new cost of each enclosing block,
    the outermost block (or None), the outermost charge before and after (group-scaled)
    and the increase of the sequential total.
    """
    old_child: Cost = ZERO
    new_child: Cost = (e, d)
    updates: list[tuple[Node, Cost]] = []
    root: Node | None = None
    while node is not None:
        c = node._cost
        if node._kind == PARTITION:
            new = (c[0] + new_child[0] - old_child[0], c[1] + new_child[1] - old_child[1])
        else:
            # A child's cost only grows, so the maximum over children is updated by
            # comparing with the child's new cost alone.
            new = (max(c[0], new_child[0]), max(c[1], new_child[1]))
        updates.append((node, new))
        old_child, new_child = c, new
        root = node
        node = node._parent
    old = root._charged if root is not None else ZERO
    new = group_cost(new_child, k, zcdp)
    # Rounding up makes the group delta only nearly monotone; never let a charge shrink.
    new = (max(old[0], new[0]), max(old[1], new[1]))
    increase = (new[0] - old[0], sub(new[1], old[1]))
    return updates, root, old, new, increase


def apply_plan(updates: list[tuple[Node, Cost]], root: Node | None, new: Cost) -> None:
    """Set the blocks' costs a planned spend changes (:func:`plan`: nothing before this has
    changed any state)."""
    for block, cost in updates:
        block._cost = cost
    if root is not None:
        root._charged = new


def advanced_bound(units: list[Cost], log_inv: float) -> Amount:
    """The advanced composition epsilon of the outermost charges ``units`` (exact epsilons),
    for ``log_inv`` an upper bound on ln(1/delta'): rounded up, infinite when a loss term
    overflows (:func:`.amounts.advanced_epsilon`)."""
    sum_sq, loss, n_inf = 0, 0, 0
    for e, _ in units:
        sum_sq += e * e
        term = loss_term(e)
        if term is None:
            n_inf += 1
        else:
            loss += term
    return advanced_epsilon(sum_sq, loss, n_inf, log_inv)


def advanced_sums(sums: tuple[int, int, int], old: Cost, new: Cost) -> tuple[int, int, int]:
    """The advanced-composition running sums (sum eps_i^2 exactly, the sum of the loss
    terms' upper bounds, how many overflowed) with one outermost charge replaced."""
    sum_sq = sums[0] - old[0] * old[0] + new[0] * new[0]
    loss, n_inf = sums[1], sums[2]
    for term, sign in ((loss_term(old[0]), -1), (loss_term(new[0]), 1)):
        if term is None:
            n_inf += sign
        else:
            loss += sign * term
    return sum_sq, loss, n_inf



def zcdp_budget(eps: float, dlt: float, rho: object, composition: str,
                 func: str) -> "tuple[float, float | None] | None":
    """The (rho budget, epsilon asked for) of a zCDP accountant, or None for an (epsilon,
    delta) one; ValueError/TypeError for a budget that does not make sense."""
    if rho is not None:
        if composition == "advanced":
            raise ValueError(f"The 'rho' parameter of {func} sets a zCDP budget, which "
                             "composes in zCDP, not with composition='advanced'.")
        if not math.isinf(eps):
            raise ValueError(f"{func}: give either an epsilon budget or a rho budget, not "
                             "both (composition='zcdp' turns an (epsilon, delta) budget "
                             "into rho).")
        if dlt >= 1.0:
            raise ValueError(f"The 'delta' parameter of {func} (the delta epsilon is read "
                             f"at) must be in [0, 1). Got {dlt!r} instead.")
        if isinstance(rho, float) and rho == math.inf:
            return (math.inf, None)
        return (_v.check_real(rho, "rho", func, low=0.0), None)
    if composition != "zcdp":
        return None
    if math.isinf(eps):
        return (math.inf, None)
    if not 0.0 < dlt < 1.0:
        raise ValueError(f"The 'delta' parameter of {func} must be in (0, 1) with "
                         "composition='zcdp': zCDP gives (epsilon, delta) for delta > 0 "
                         f"only. Got {dlt!r} instead.")
    r = rho_from_epsilon_delta(eps, dlt)
    # Held as an exact decimal: the shortest decimal of the float below, which is below
    # r, so the budget never allows more than (eps, delta).
    return (math.nextafter(r, 0.0), eps)
