"""An accountant's books: its budget, what was spent and the record of every spend, held
under one lock, and the check and charge of a spend.

:class:`Books` is the state behind :class:`~dpfast.accounting.Accountant` (which adds the
public API on top): the budget as exact amounts, the compiled tally (the running total and
the raw records, a spend of floats seen before being one compiled step), the group-scaled
cost of each outermost block and lease (for advanced composition and the implied rho), and
the ledger file if there is one (:mod:`.ledgered`). A spend is planned
(:func:`.composition.plan`), checked against the budget (with advanced composition if asked),
made durable when there is a ledger, and only then taken in. Every reading and every spend
holds the lock (:meth:`Books._synced`).
"""
from __future__ import annotations

import math
import os
import weakref
from typing import TYPE_CHECKING, Any

from .. import _native
from ..ledger import CHARGE, RETURN, LedgerFile, amount_text, charge_details
from ..zcdp import epsilon_from_rho
from .amounts import (ZERO, add, advanced_epsilon, amount, as_float, ceil_amount, delta_cache,
                      eps_cache, exact, float_down, float_up, log_inv_up, rho_amount,
                      rho_of_epsilon, sub)
from .composition import advanced_sums, apply_plan, plan
from .errors import BudgetExceededError
from .ledgered import Synced, append_durably, damage_error, read_ledger

if TYPE_CHECKING:
    from .amounts import Amount, Cost
    from .composition import Node
    from .leases import Lease

__all__ = ["Books", "in_memory"]


class Books:
    """The state of an accountant and the check and charge of its spends (see the module);
    made by :class:`~dpfast.accounting.Accountant`, never on its own."""

    # -- state ------------------------------------------------------------------------
    def _setup(self, eps: float, dlt: float, k: int, delta_prime: float | None,
               zcdp: "tuple[float, float | None] | None" = None) -> None:
        self._k = k
        # zCDP: the budget is (rho, 0) and every charge is (rho, 0); (epsilon, delta) are
        # read at self._read_delta, against the epsilon asked for (composition="zcdp").
        self._zcdp = zcdp is not None
        self._read_delta = dlt
        self._eps_given: float | None = None
        if zcdp is not None:
            self._budget: tuple[Amount, Amount] = (exact(zcdp[0]), 0)
            self._eps_given = zcdp[1]
        else:
            self._budget = (exact(eps), exact(dlt))
        self._delta_prime: Amount | None = None
        if delta_prime is not None:
            self._delta_prime = exact(delta_prime)
            self._log_inv: float = log_inv_up(delta_prime)
        # Spent so far and the raw record of spends, (epsilon, delta, label, path, charge,
        # unit), under the tally's lock.
        self._tally: _native.Tally = _native.Tally(self._budget, eps_cache, delta_cache)
        # The group-scaled cost of each outermost parallel block, by unit name, for advanced
        # composition (a spend outside blocks is its own unit).
        self._units_by_name: dict[str, Cost] = {}
        # The rho an (epsilon, delta) accountant's charges imply (spent.rho), kept as it
        # goes, so that reading it costs the spends since the last read: exact sums of
        # eps**2/2 and counts of charges with delta > 0, over the named units (blocks,
        # leases: updated by _take) and over the charges outside them (records scanned up to
        # _loose_upto; the compiled spend appends those without Python).
        self._rho_units = self._delta_units = 0
        self._rho_loose = self._delta_loose = self._loose_upto = 0
        # Running sums for composition="advanced": sum eps_i^2 (exact), sum of the loss terms
        # (exact sum of upper bounds) and how many loss terms overflowed.
        self._sum_sq: int = 0
        self._loss: int = 0
        self._n_inf: int = 0
        self._n_blocks: int = 0
        # Lease reservations not yet returned: id -> the (group-scaled) amount charged; and
        # this process's open Lease objects (closed with the accountant).
        self._leases: dict[str, Cost] = {}
        self._lease_objects: weakref.WeakSet[Lease[Any]] = weakref.WeakSet()
        self._ledger_file: LedgerFile | None = None
        # Neither groups, advanced composition nor a ledger file: a spend outside blocks is
        # one compiled step.
        self._simple: bool = self._k == 1 and self._delta_prime is None and not self._zcdp
        in_memory.add(self)

    def _attach(self, file: LedgerFile) -> None:
        """Back this accountant by a ledger file and take in what it records."""
        self._ledger_file = file
        self._tally.shared = True                   # a forked child shares the file
        self._simple = False
        in_memory.discard(self)
        # Descriptors are closed when the accountant is collected (the finaliser holds the
        # file, not the accountant).
        self._finalizer = weakref.finalize(self, file.close)
        with self._tally:
            file.lock()
            try:
                read_ledger(self)
            finally:
                file.unlock()

    def _synced(self) -> "Synced":
        """``with self._synced():`` holds the lock, and with a ledger file, the file's lock
        too, after taking in the charges other processes have appended since."""
        return Synced(self)

    def _damaged(self) -> bool:
        return self._ledger_file is not None and self._ledger_file.damage is not None

    def _usable_for_lease(self) -> None:
        """Refuse a lease's reservation or return where a spend would be refused (lock
        held)."""
        if self._tally.foreign:
            raise RuntimeError(
                "This Accountant was made in another process and has no ledger file: its "
                "budget cannot be shared with this forked process. Create it with "
                "ledger='FILE' to share a budget between processes.")
        file = self._ledger_file
        if file is not None and file.damage is not None:
            raise damage_error(self, *file.damage)

    # -- readings (the lock held) -----------------------------------------------------
    def _epsilon_at(self, rho: "Amount") -> float:
        """The epsilon of ``rho`` (exact) read at :attr:`delta`, rounded up."""
        if rho == 0:
            return 0.0
        r = float_up(rho)
        if self._read_delta == 0.0 or math.isinf(r):
            return math.inf
        return epsilon_from_rho(r, self._read_delta)

    def _implied_rho(self) -> float:
        """The rho the charges of an (epsilon, delta) accountant imply (lock held): the sum
        of eps**2/2 over its outermost charges, inf once one has delta > 0."""
        records = self._tally.records
        for r in records[self._loose_upto:]:
            if r[5] is None:
                e, d = r[4]
                self._rho_loose += rho_of_epsilon(e)
                self._delta_loose += d != 0
        self._loose_upto = len(records)
        if self._delta_loose or self._delta_units:
            return math.inf
        return float_up(self._rho_loose + self._rho_units)

    def _remaining(self) -> "tuple[float, float]":
        if self._damaged():
            return (0.0, 0.0)
        eps, dlt = self._reported_exact()
        if eps is not self._tally.spent[0]:
            # Subtract (a decimal just above) the rounded-up advanced epsilon that `spent`
            # shows, so that remaining is never overstated.
            eps = ceil_amount(float_up(eps))
        return (float_down(sub(self._budget[0], eps)),
                float_down(sub(self._budget[1], dlt)))

    def _advanced_exact(self, sum_sq: int, loss: int, n_inf: int,
                        basic_delta: "Amount") -> "tuple[Amount, Amount]":
        # Only called with composition="advanced", where _delta_prime is set.
        return (advanced_epsilon(sum_sq, loss, n_inf, self._log_inv),
                basic_delta + self._delta_prime)  # type: ignore[operator]

    def _within(self, eps: "Amount", dlt: "Amount") -> bool:
        return eps <= self._budget[0] and dlt <= self._budget[1]

    def _units(self) -> "list[Cost]":
        """Group-scaled (epsilon, delta) of every outermost charge: spends outside blocks and
        whole outermost parallel blocks; call with the lock held."""
        return ([r[4] for r in self._tally.records if r[5] is None]
                + list(self._units_by_name.values()))

    def _reported_exact(self) -> "tuple[Amount, Amount]":
        """Spent, as exact amounts (an int or inf each); call with the lock held."""
        if self._damaged():
            return self._budget
        if self._delta_prime is not None and self._tally.records:
            adv = self._advanced_exact(self._sum_sq, self._loss, self._n_inf,
                                       self._tally.spent[1])
            if adv[0] < self._tally.spent[0] and self._within(*adv):
                return adv
        return self._tally.spent

    def _reported(self) -> "tuple[float, float]":
        eps, dlt = self._reported_exact()
        if eps is not self._tally.spent[0]:
            # The advanced epsilon is a bound computed in floats: never report it rounded
            # down. Its delta is an exact decimal sum like the sequential one.
            return float_up(eps), as_float(dlt)
        return as_float(eps), as_float(dlt)

    def _epsilon_budget(self) -> float:
        """The epsilon budget (a zCDP accountant: the epsilon asked for, or its rho budget
        read at its delta)."""
        if self._zcdp:
            if self._eps_given is not None:
                return self._eps_given
            return self._epsilon_at(self._budget[0])
        return as_float(self._budget[0])

    def _delta_budget(self) -> float:
        """The delta budget (a zCDP accountant: the delta epsilon is read at)."""
        return self._read_delta if self._zcdp else as_float(self._budget[1])

    def _rho_budget(self) -> float | None:
        """The rho-zCDP budget, or None for an (epsilon, delta) accountant."""
        return as_float(self._budget[0]) if self._zcdp else None

    def _sums(self) -> tuple[int, int, int]:
        """The running sums of advanced composition (see :func:`.composition.advanced_sums`)."""
        return self._sum_sq, self._loss, self._n_inf

    # -- the check and charge of a spend ----------------------------------------------
    def _request(self, epsilon: float | None, delta: float, rho: float | None,
                 func: str) -> "tuple[int, int]":
        """What a spend of (epsilon, delta, rho) costs this accountant, checked and exact:
        (epsilon, delta), or for a zCDP accountant (rho, 0)."""
        if rho is not None:
            r = rho_amount(rho, func)
        if epsilon is None:
            if rho is None:
                raise TypeError(f"The 'epsilon' parameter of {func} must be a float > 0 "
                                "(or give 'rho', a zCDP cost). Got None instead.")
            d = amount(delta, "delta", func)
            if d != 0:
                raise ValueError(f"The 'delta' parameter of {func} applies to an epsilon; "
                                 f"a charge in rho alone has none. Got {delta!r} instead.")
            if not self._zcdp:
                raise ValueError(
                    f"{func}: this accountant holds an (epsilon, delta) budget and cannot "
                    "charge a cost given in rho alone. Give epsilon= and delta= (the "
                    "release's (epsilon, delta)), or use an accountant that accounts in "
                    "zCDP: dpfast.Accountant(rho=...) or composition='zcdp'.")
            return (r, 0)
        e = amount(epsilon, "epsilon", func)
        d = amount(delta, "delta", func)
        if not self._zcdp:
            return (e, d)
        if rho is not None:
            return (r, 0)
        if d != 0:
            raise ValueError(
                f"{func}: this accountant composes in zCDP, and an (epsilon, delta) charge "
                "with delta > 0 has no zCDP cost unless it states one (rho=). Nothing was "
                "charged.")
        return (rho_of_epsilon(e), 0)

    def _check_at(self, node: "Node | None", epsilon: float | None, delta: float,
                  rho: float | None = None) -> bool:
        e, d = self._request(epsilon, delta, rho, "Accountant.check")
        with self._synced():
            if self._damaged():
                return False
            _, _, old, new, increase = plan(e, d, node, self._k, self._zcdp)
            return self._fits_plan(old, new, increase)

    def _fits_plan(self, old: "Cost", new: "Cost", increase: "Cost") -> bool:
        """Whether the planned state is within budget; call with the lock held."""
        total = (self._tally.spent[0] + increase[0], add(self._tally.spent[1], increase[1]))
        if self._within(*total):
            return True
        if self._delta_prime is None:
            return False
        adv = self._advanced_exact(*advanced_sums(self._sums(), old, new), total[1])
        return self._within(*adv)

    def _spend_at(self, node: "Node | None", epsilon: float | None, delta: float,
                  label: object, rho: float | None = None, commits: str | None = None) -> None:
        """Spend at ``node`` (None: the accountant itself): the general path. ``commits``
        (a release's key digest, :meth:`dpfast._release.Release.charge`) marks the charge as
        paying for that key, in a detail no label can set."""
        e, d = self._request(epsilon, delta, rho, "Accountant.spend")
        with self._synced():
            if self._tally.foreign:
                raise RuntimeError(
                    "This Accountant was made in another process and has no ledger file: "
                    "its budget cannot be shared with this forked process. Create it with "
                    "ledger='FILE' to share a budget between processes.")
            if node is not None and node._pid != os.getpid():
                raise RuntimeError("This parallel block was made in another process: a "
                                   "forked child cannot spend through it. Open a new block "
                                   "in this process.")
            closed = node._closed() if node is not None else None
            if closed is not None:
                raise RuntimeError(f"The parallel block {closed.path!r} has ended: spend on "
                                   "the accountant, or in a new block.")
            file = self._ledger_file
            if file is not None and file.damage is not None:
                raise damage_error(self, *file.damage)
            updates, root, old, new, charge = plan(e, d, node, self._k, self._zcdp)
            if not self._fits_plan(old, new, charge):
                raise self._refusal(epsilon, delta, rho, charge, bool(updates))
            if root is not None and root._unit is None:
                root._unit = os.urandom(6).hex()
            record = (epsilon, delta, label, node._path if node is not None else (), charge,
                      root._unit if root is not None else None, rho,
                      commits if node is None else None)
            if file is None:
                self._commit(updates, root, new, record)
                return
            spent = self._tally.spent
            amounts = (amount_text(charge[0]), amount_text(charge[1]),
                       amount_text(spent[0] + charge[0], False),
                       amount_text(add(spent[1], charge[1]), False))
            # Signals are held in _synced: the write, the sync and the take-in are one step
            # for Python's signal handlers, so after this returns or raises, this process's
            # total is the file's. Durable before the caller draws noise.
            append_durably(self, amounts, charge_details(record), CHARGE,
                           lambda: self._commit(updates, root, new, record))

    def _commit(self, updates: "list[tuple[Node, Cost]]", root: "Node | None",
                new: "Cost", record: "tuple[object, ...]") -> None:
        """Apply a planned spend (nothing before this has changed any state)."""
        apply_plan(updates, root, new)
        self._take(record)

    def _take(self, record: "tuple[object, ...]") -> None:
        """Add one charge record to the total, the records and the units; call with the lock
        held."""
        charge: Cost = record[4]  # type: ignore[assignment]
        unit: str | None = record[5]  # type: ignore[assignment]
        old = ZERO if unit is None else self._units_by_name.get(unit, ZERO)
        new = (old[0] + charge[0], add(old[1], charge[1]))
        if self._delta_prime is not None:
            self._sum_sq, self._loss, self._n_inf = advanced_sums(self._sums(), old, new)
        if unit is not None:
            self._units_by_name[unit] = new
            self._rho_units += rho_of_epsilon(new[0]) - rho_of_epsilon(old[0])
            self._delta_units += (new[1] != 0) - (old[1] != 0)
        spent = self._tally.spent
        self._tally.spent = (spent[0] + charge[0], add(spent[1], charge[1]))
        self._tally.records.append(record)

    def _take_lease(self, record: "tuple[object, ...]", kind: str, lease: str | None) -> None:
        """:meth:`_take` a record, keeping the open lease reservations: a charge naming a
        lease opens it, its return closes it (call with the lock held)."""
        if lease is not None:
            if kind == RETURN:
                del self._leases[lease]
            else:
                self._leases[lease] = record[4]  # type: ignore[assignment]
        self._take(record)

    def _refusal(self, epsilon: float | None, delta: float, rho: float | None,
                 charge: "Cost", in_block: bool) -> BudgetExceededError:
        """The error for a spend that does not fit; call with the lock held."""
        if self._zcdp:
            left = as_float(sub(self._budget[0], self._reported_exact()[0]))
            asked = f"rho={float(rho)!r}" if rho is not None else \
                f"epsilon={float(epsilon)!r} (rho={float_up(charge[0])!r})"  # type: ignore[arg-type]
            return BudgetExceededError(
                f"Privacy budget exceeded: spending {asked} needs more than the remaining "
                f"rho={left!r} of a zCDP budget of rho={self._rho_budget()!r}"
                + (f" (groups of {self._k}: charged {float_up(charge[0])!r})"
                   if self._k != 1 else "")
                + (" inside a parallel block" if in_block else "")
                + ". Nothing was spent; use a smaller epsilon/rho or a new Accountant with a "
                "larger budget.")
        rem_e, rem_d = self._remaining()
        how = ""
        if self._k != 1 or in_block:
            how = (f" (charged as an increase of (epsilon={float_up(charge[0])!r}, "
                   f"delta={float_up(charge[1])!r})"
                   + (f" for groups of {self._k}" if self._k != 1 else "")
                   + (" inside a parallel block" if in_block else "") + ")")
        return BudgetExceededError(
            f"Privacy budget exceeded: spending (epsilon={float(epsilon)!r}, "  # type: ignore[arg-type]
            f"delta={float(delta)!r}){how} needs more than the remaining "
            f"(epsilon={rem_e!r}, delta={rem_d!r}) of a budget of "
            f"(epsilon={self._epsilon_budget()!r}, delta={self._delta_budget()!r}). Nothing was spent; "
            "use a smaller epsilon/delta or a new Accountant with a larger budget.")


# Accountants held in memory only: a forked child's copies must not spend.
in_memory: weakref.WeakSet[Books] = weakref.WeakSet()
