"""Leases: a slice of an accountant's budget reserved durably once and spent in memory.

:class:`Lease` holds the slice's own tally (what it spent, under its lock) and refuses
copies, pickling and use in a forked child. The accountant's side of a lease is here too:
checking the slice asked (:func:`lease_slice`), charging the reservation and giving back the
unspent rest, each one durable record in the accountant's ledger (a return names its
reservation; :func:`dpfast.ledger.unsound_return` says what a sound one is). The
accountant keeps the open reservations (``_leases``: id -> amount charged) and this
process's open leases (closed with it).
"""
from __future__ import annotations

import math
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Generic, NoReturn, Protocol, TypeVar

from .. import _native
from ..ledger import CHARGE, RETURN, amount_text, charge_details
from .amounts import (CACHE_MAX, ZERO, add, amount, as_float, delta_cache, eps_cache, exact,
                      float_down, float_up, rho_amount)
from .composition import group_cost
from .errors import BudgetExceededError, shown
from .ledgered import Synced, append_durably
from .readings import Budget, LedgerEntry, entries
from .roles import LedgerAccountant, Root

if TYPE_CHECKING:
    from typing import Literal

    from .amounts import Amount, Cost

__all__ = ["Lease", "LeaseAccountant", "lease_slice", "live_leases"]

# A zCDP lease's compiled fast path charges a pure epsilon spend its rho: checked epsilons
# (floats) -> eps**2 / 2 exactly, rounded up; and delta 0 only (a zCDP charge with delta > 0
# states its rho, and takes the general path). Emptied in place (the tallies hold them).
_eps_rho_cache: "dict[float, int]" = {}
_NO_DELTA: "dict[float, int]" = {0.0: 0}
# A system call each time (glibc caches no pid), so it sees a fork made through libc.
_getpid = os.getpid


class LeaseAccountant(LedgerAccountant, Root, Protocol):
    """What a lease asks of the accountant it is reserved from
    (:class:`~dpfast.accounting.Accountant` satisfies it): its books and ledger
    (:class:`~.roles.LedgerAccountant`), the check of a cost and the refusal of one that does
    not fit, the reading of a rho in epsilon, its lock, and its open leases."""

    _lease_objects: weakref.WeakSet[Lease[Any]]

    def _request(self, epsilon: float | None, delta: float, rho: float | None,
                 func: str) -> tuple[int, int]: ...

    def _epsilon_at(self, rho: Amount) -> float: ...

    def _synced(self) -> Synced: ...

    def _within(self, eps: Amount, dlt: Amount) -> bool: ...

    def _refusal(self, epsilon: float | None, delta: float, rho: float | None,
                 charge: Cost, in_block: bool) -> BudgetExceededError: ...


# The accountant a lease was reserved from, typed as the caller's (dpfast.Accountant: its
# whole public API), though this module works with it through LeaseAccountant only.
A = TypeVar("A", bound="LeaseAccountant")


class Lease(Generic[A]):
    """A slice of an accountant's budget, reserved durably once and spent in memory.

    Made by :meth:`Accountant.lease`; pass it as ``accountant=`` to any mechanism, or call
    :meth:`spend` and :meth:`check` as on an :class:`Accountant` (same arguments, same
    errors: :class:`BudgetExceededError` when the slice cannot pay, nothing charged). The
    slice is in the accountant's currency (epsilon and delta, or rho for a zCDP accountant)
    and for one individual (the accountant scales it for groups). A spend costs no file
    access: the compiled check-and-charge of the accountant's own in-memory path, against the
    slice.

    :meth:`close`, or the end of ``with acct.lease(...) as lease:``, gives the unspent rest
    back to the accountant with one durable return record naming the reservation; closing
    the accountant closes its leases. A lease dropped unclosed, or a process that dies
    holding one (even by SIGKILL), leaves the whole slice spent: never free.

    Owned state: spends from several threads take turns (one lock); a lease refuses
    ``copy.copy``, ``copy.deepcopy`` and pickle (``TypeError``: a copy would spend the slice
    again), and use in a forked child (``RuntimeError``). After :meth:`close` it refuses
    spends (``RuntimeError``).

    The constructor's parameters are internal: take a lease with :meth:`Accountant.lease
    <dpfast.Accountant.lease>` (``epsilon=`` and ``delta=``, or ``rho=`` for a zCDP
    accountant), which checks the slice asked.

    Parameters
    ----------
    acct : Accountant
        The accountant the slice is reserved from.
    cost : tuple
        The slice, exact, for one individual, in the accountant's currency.
    asked : tuple of (float or None, float, float or None)
        The (epsilon, delta, rho) asked, as the ledger records them.
    label : str or None
        A name for the reservation and its return in the ledger.

    Raises
    ------
    BudgetExceededError
        On taking the lease: the slice does not fit in what the accountant has left
        (:class:`LedgerDamagedError` if its ledger is damaged); nothing was charged. On a
        spend: the rest of the slice cannot pay; nothing was spent.
    TypeError, ValueError
        A spend's or check's epsilon, delta or rho is not a valid privacy parameter, or not
        in the accountant's currency (as :meth:`Accountant.spend
        <dpfast.Accountant.spend>`); ``TypeError`` on ``copy.copy``, ``copy.deepcopy`` or
        pickling.
    RuntimeError
        A spend after :meth:`close`, or any use in a forked child (taking a lease there from
        an accountant without a ledger, too).
    LedgerError
        The reservation or the return could not be written to the accountant's ledger
        (nothing reserved; a return not written leaves the whole slice spent).

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> lease = acct.lease(epsilon=0.5, label="batch")
    >>> for _ in range(10):
    ...     noisy = dp.laplace_mechanism(3.0, sensitivity=1.0, epsilon=0.01,
    ...                                  accountant=lease)
    >>> tuple(lease.spent), tuple(acct.spent)
    ((0.1, 0.0), (0.5, 0.0))
    >>> lease.close()
    >>> tuple(acct.spent)
    (0.1, 0.0)

    A slice cannot pay more than it holds:

    >>> with acct.lease(epsilon=0.2) as lease:
    ...     lease.spend(0.15)
    ...     lease.check(0.1)
    False
    >>> round(acct.spent.epsilon, 2)
    0.25
    """

    def __init__(self, acct: A, cost: "Cost",
                 asked: "tuple[float | None, float, float | None]",
                 label: str | None) -> None:
        self._acct = acct
        self._pid = os.getpid()
        self._forked = False
        self._closed = False            # no more spends (under the tally's lock)
        self._returned = False          # the rest was given back (under _closing)
        self._closing = threading.Lock()
        self._reserved = cost
        self._label = label
        zcdp = acct._zcdp
        # The slice's own tally: budget = the slice, in the accountant's currency. Its
        # compiled spend is the whole check-and-charge of a spend seen before.
        self._tally: _native.Tally = _native.Tally(
            cost, _eps_rho_cache if zcdp else eps_cache, _NO_DELTA if zcdp else delta_cache)
        self._id = _reserve(acct, cost, asked, label)
        acct._lease_objects.add(self)
        live_leases.add(self)

    # -- owned state -------------------------------------------------------------------
    def _refuse_copy(self) -> "NoReturn":
        raise TypeError(
            "A Lease cannot be copied or pickled: a copy would spend the same reserved slice "
            "again, unseen by this one. Take another lease (acct.lease(...)) where one is "
            "needed, in the process that spends it.")

    def __copy__(self) -> "NoReturn":
        self._refuse_copy()

    def __deepcopy__(self, memo: object) -> "NoReturn":
        self._refuse_copy()

    def __reduce_ex__(self, protocol: object) -> "NoReturn":
        self._refuse_copy()

    def __reduce__(self) -> "NoReturn":
        self._refuse_copy()

    def __getstate__(self) -> "NoReturn":
        self._refuse_copy()

    def _check_process(self) -> None:
        if self._forked or _getpid() != self._pid:
            raise RuntimeError(
                f"This Lease was taken in process {self._pid} and cannot be used in a forked "
                "child: the child would spend the same slice again, unseen by the parent. "
                "Take a new lease in the child (from a ledger-backed accountant).")

    def _check_open(self) -> None:
        """Refuse a spend from a closed lease (the tally's lock held)."""
        if self._closed:
            raise RuntimeError(
                "This Lease has been closed (by close(), the end of its with block, or its "
                "accountant's close()): its rest went back to the accountant. Take a new "
                "lease, or spend on the accountant.")

    # -- spending ----------------------------------------------------------------------
    def spend(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None, label: object = None) -> None:
        """Charge (epsilon, delta) (or ``rho``) to the slice, in memory, or raise and charge
        nothing; the same arguments and errors as :meth:`Accountant.spend`, with
        :class:`BudgetExceededError` when the slice cannot pay (what remains of it is in the
        message) and ``RuntimeError`` after :meth:`close` or in a forked child."""
        # A spend seen before (floats whose exact amounts are cached): one compiled step.
        # The tally is marked foreign once the lease is closed, and in a forked child by the
        # fork hook (as an in-memory Accountant's is: no pid system call here, it would
        # double the cost), which sends every spend to the general path and its errors.
        if rho is None and self._tally.spend(epsilon, delta, label):
            return
        self._spend(epsilon, delta, rho, label, True)

    def check(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None) -> bool:
        """True if :meth:`spend` of (epsilon, delta) (or rho) would fit in what remains of
        the slice; spends nothing (errors as :meth:`spend`)."""
        return self._spend(epsilon, delta, rho, None, False)

    def _spend(self, epsilon: float | None, delta: float, rho: float | None, label: object,
               charge: bool) -> bool:
        func = "Lease.spend" if charge else "Lease.check"
        e, d = self._acct._request(epsilon, delta, rho, func)
        self._check_process()
        tally = self._tally
        with tally:
            self._check_open()
            spent = tally.spent
            new = (spent[0] + e, spent[1] + d)
            fits = new[0] <= self._reserved[0] and new[1] <= self._reserved[1]
            if not charge:
                return fits
            if not fits:
                raise self._refusal(epsilon, delta, rho, e)
            tally.spent = new
            tally.records.append((epsilon, delta, label, (), (e, d), None, rho))
        if self._acct._zcdp and rho is None and type(epsilon) is float:
            # A checked pure epsilon: its rho, for the compiled path next time.
            if len(_eps_rho_cache) >= CACHE_MAX:
                _eps_rho_cache.clear()
            _eps_rho_cache[epsilon] = e
        return True

    def _refusal(self, epsilon: float | None, delta: float, rho: float | None,
                 e: int) -> BudgetExceededError:
        """The error for a spend the slice cannot pay (the tally's lock held)."""
        spent = self._tally.spent
        if self._acct._zcdp:
            asked = f"rho={float(rho)!r}" if rho is not None else \
                f"epsilon={float(epsilon)!r} (rho={float_up(e)!r})"  # type: ignore[arg-type]
            left = f"rho={as_float(self._reserved[0] - spent[0])!r}"
            whole = f"rho={as_float(self._reserved[0])!r}"
        else:
            asked = f"(epsilon={float(epsilon)!r}, delta={float(delta)!r})"  # type: ignore[arg-type]
            left = (f"(epsilon={as_float(self._reserved[0] - spent[0])!r}, "
                    f"delta={as_float(self._reserved[1] - spent[1])!r})")
            whole = (f"(epsilon={as_float(self._reserved[0])!r}, "
                     f"delta={as_float(self._reserved[1])!r})")
        return BudgetExceededError(
            f"Lease budget exceeded: spending {asked} needs more than the remaining {left} "
            f"of this lease's slice of {whole}. Nothing was spent; close the lease and take "
            "another, or spend on the accountant.")

    # -- closing -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop spending and give the unspent rest of the slice back to the accountant: one
        durable return record naming the reservation (none when nothing is left). Closing
        again does nothing; if the return could not be written (the error is raised), the
        lease stays closed with its whole slice spent, and calling close again retries."""
        self._check_process()
        with self._closing:
            if self._returned:
                return
            with self._tally:
                self._closed = True
                # Every spend now takes the general path, which refuses it. The compiled
                # path reads `foreign` before it takes the lock, so a spend already past
                # that check may be waiting for the lock: the budget it compares with under
                # the lock is made unpayable, so `used` below is final.
                self._tally.foreign = True
                self._tally.budget = (-1, -1)
                used = self._tally.spent
            _give_back(self._acct, self._id, self._reserved, used, self._label)
            self._returned = True

    def __enter__(self) -> "Lease[A]":
        return self

    def __exit__(self, *exc: object) -> "Literal[False]":
        self.close()
        return False

    # -- reading -----------------------------------------------------------------------
    def _reading(self, part: "tuple[Amount, Amount]", down: bool) -> Budget:
        """An amount of the slice read in each definition (``down``: never overstated)."""
        acct = self._acct
        if acct._zcdp:
            rho = as_float(part[0]) if down else float_up(part[0])
            if down and rho > 0 and exact(rho) > part[0]:
                rho = math.nextafter(rho, 0.0)
            eps = acct._epsilon_at(exact(rho)) if rho else 0.0
            return Budget(eps, acct._read_delta if rho else 0.0, rho)
        if down:
            eps, dlt = float_down(part[0]), float_down(part[1])
        else:
            eps, dlt = as_float(part[0]), as_float(part[1])
        return Budget(eps, dlt, eps * eps / 2 if dlt == 0 else math.inf)

    @property
    def accountant(self) -> A:
        """The accountant the slice was reserved from."""
        return self._acct

    @property
    def id(self) -> str:
        """The reservation's id in the ledger (16 hex digits), named by its return."""
        return self._id

    @property
    def label(self) -> str | None:
        """The label of the reservation and its return."""
        return self._label

    @property
    def reserved(self) -> Budget:
        """The slice reserved (for one individual), read in each definition."""
        return self._reading(self._reserved, False)

    @property
    def spent(self) -> Budget:
        """What the lease's spends add up to (``.rho`` of an (epsilon, delta) accountant's
        lease: that of one pure charge of the sum, an upper bound)."""
        with self._tally:
            spent = self._tally.spent
        return self._reading(spent, False)

    @property
    def remaining(self) -> Budget:
        """What remains of the slice (zero once closed: the rest went back)."""
        with self._tally:
            if self._closed:
                return self._reading(ZERO, True)
            spent = self._tally.spent
        left = (self._reserved[0] - spent[0], self._reserved[1] - spent[1])
        return self._reading(left, True)

    @property
    def closed(self) -> bool:
        """Whether the lease is closed (it refuses spends)."""
        return self._closed

    @property
    def ledger(self) -> "list[LedgerEntry]":
        """The lease's spends, as :class:`LedgerEntry` (in memory only: the accountant's
        ledger records the reservation and the return)."""
        with self._tally:
            records = list(self._tally.records)
        return entries(records)             # a lease's spends are made on it: path ()

    def __len__(self) -> int:
        with self._tally:
            return len(self._tally.records)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (f"<Lease {self.id} ({state}) of {self.reserved!r} from {self._acct!r}: "
                f"{len(self)} spends>")


# Leases alive in this process: a forked child's copies must not spend.
live_leases: weakref.WeakSet[Lease[Any]] = weakref.WeakSet()


def lease_slice(acct: LeaseAccountant, epsilon: float | None, delta: float, rho: float | None,
                func: str) -> tuple[Cost, tuple[float | None, float, float | None]]:
    """The slice :meth:`Accountant.lease <dpfast.accounting.Accountant.lease>` asks of
    ``acct``, checked: its exact cost (for one individual, in the accountant's currency) and
    the (epsilon, delta, rho) asked, as the ledger records them."""
    asked: tuple[float | None, float, float | None]
    if acct._delta_prime is not None:
        raise ValueError(
            f"{func}: an accountant with composition='advanced' cannot lease: its bound "
            "is over the whole sequence of outermost charges, and a return would change "
            "one of them after the fact. Use composition='basic' or 'zcdp'. Nothing was "
            "charged.")
    if acct._zcdp:
        if epsilon is not None:
            raise ValueError(
                f"The 'epsilon' parameter of {func} does not apply: this accountant holds "
                "a rho (zCDP) budget and leases in rho; give rho= (a pure epsilon spend "
                "from the lease costs epsilon**2/2 of it). Got "
                f"{shown(epsilon)} instead.")
        if rho is None:
            raise TypeError(f"{func} needs rho=, the slice of this zCDP budget to "
                            "reserve. Got none.")
        r = rho_amount(rho, func)
        if amount(delta, "delta", func) != 0:
            raise ValueError(f"The 'delta' parameter of {func} must be 0 for a slice in "
                             f"rho. Got {shown(delta)} instead.")
        cost: Cost = (r, 0)
        asked = (None, 0.0, as_float(r))
    else:
        if rho is not None:
            raise ValueError(
                f"The 'rho' parameter of {func} does not apply: this accountant holds an "
                "(epsilon, delta) budget and leases in epsilon and delta (a spend from the "
                f"lease may still state its rho). Got {shown(rho)} instead.")
        if epsilon is None:
            raise TypeError(f"{func} needs epsilon= (and delta=), the slice of the "
                            "budget to reserve. Got none.")
        cost = (amount(epsilon, "epsilon", func), amount(delta, "delta", func))
        asked = (as_float(cost[0]), as_float(cost[1]), None)
    return cost, asked



def _reserve(acct: LeaseAccountant, cost: Cost, asked: tuple[float | None, float, float | None],
             label: str | None) -> str:
    """Charge a lease's slice ``cost`` to ``acct`` (raw, for one individual: scaled for
    groups here) as one reservation; its id."""
    with acct._synced():
        acct._usable_for_lease()
        scaled = group_cost(cost, acct._k, acct._zcdp)
        spent = acct._tally.spent
        if not acct._within(spent[0] + scaled[0], add(spent[1], scaled[1])):
            refusal = acct._refusal(asked[0], asked[1], asked[2], scaled, False)
            raise BudgetExceededError(f"Accountant.lease: {refusal}")
        lease_id = os.urandom(8).hex()
        _write(acct, (asked[0], asked[1], label, (), scaled, lease_id, asked[2]),
                          CHARGE, lease_id)
        return lease_id

def _give_back(acct: LeaseAccountant, lease_id: str, reserved: Cost, used: tuple[Amount, Amount],
               label: str | None) -> None:
    """Give back to ``acct`` what a lease did not use: its scaled reservation minus the scaled sum
    of its spends ``used`` (raw), never more; nothing is written when that is zero."""
    with acct._synced():
        acct._usable_for_lease()
        charged = acct._leases.get(lease_id)
        if charged is None:
            return                                  # not open here: nothing to give back
        used_scaled = group_cost((int(used[0]), used[1]), acct._k, acct._zcdp)
        credit = (max(charged[0] - used_scaled[0], 0),
                  0 if isinstance(used_scaled[1], float)
                  else max(charged[1] - used_scaled[1], 0))
        if credit == ZERO:
            return
        rest = (reserved[0] - used[0], reserved[1] - used[1])
        if acct._zcdp:
            record: tuple[object, ...] = (None, 0.0, label, (), (-credit[0], 0),
                                          lease_id, as_float(rest[0]))
        else:
            record = (as_float(rest[0]), as_float(rest[1]), label, (),
                      (-credit[0], -credit[1]), lease_id, None)
        _write(acct, record, RETURN, lease_id)


def _write(acct: LeaseAccountant, record: tuple[object, ...], kind: str, lease_id: str) -> None:
    """Make a lease's reservation (``kind`` CHARGE) or return (RETURN: ``record[4]`` is
    minus what it gives back) durable in ``acct``'s ledger, then take it in (lock held, as
    for a spend)."""
    file = acct._ledger_file
    if file is None:
        acct._take_lease(record, kind, lease_id)
        return
    charge: Cost = record[4]  # type: ignore[assignment]
    spent = acct._tally.spent
    stated = charge if kind == CHARGE else (-charge[0], -charge[1])
    amounts = (amount_text(stated[0]), amount_text(stated[1]),
               amount_text(spent[0] + charge[0], False),
               amount_text(add(spent[1], charge[1]), False))
    details = charge_details(record)
    details["lease"] = lease_id
    append_durably(acct, amounts, details, kind,
                   lambda: acct._take_lease(record, kind, lease_id))
