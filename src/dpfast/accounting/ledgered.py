"""The accountant's ledger-backed side: its budget and every charge in a file that every
process opening it shares (:mod:`dpfast.ledger` holds the format).

Functions of one :class:`~dpfast.accounting.Accountant` with a ledger file: opening the file
(:func:`open_ledger`, with the budget record of :func:`budget_header`), holding its lock with
the other processes' charges taken in (:class:`Synced`, :func:`read_ledger`), appending one
record durably before anything changes in memory (:func:`append_durably`), and redeeming an
interrupted release's charge (:func:`redeem`). The state stays the accountant's: its tally
(total, records), its open lease reservations and its :class:`~dpfast.ledger.LedgerFile`.
A ledger found damaged exhausts the budget (:class:`LedgerDamagedError`).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..ledger import (CHARGE, RETURN, TOTAL_MISMATCH, Damaged, HeldSignals, LedgerError,
                      LedgerFile, amount_text, budget_record, charge_details, charge_record, hold_signals,
                      read_amounts, read_budget, release_signals, reserved_twice,
                      unsound_return)
from .amounts import ZERO, as_float, exact
from .errors import LedgerDamagedError

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal

    from .roles import LedgerAccountant, LedgerBooks

__all__ = ["Synced", "append_durably", "budget_header", "damage_error", "ledger_budget",
           "open_ledger", "read_ledger", "redeem"]


def open_ledger(path: str | os.PathLike[str], header: str | None,
                shared: bool) -> LedgerFile:
    """The ledger file, with damage found at open raised as LedgerDamagedError."""
    try:
        return LedgerFile(path, header, shared=shared)
    except Damaged as exc:
        raise LedgerDamagedError(
            f"{exc} It counts as exhausted: no accountant can charge it. Start a new ledger "
            "(another file) for the budget that remains.") from None


def budget_header(acct: LedgerAccountant) -> str:
    """The budget record ``acct`` expects of its ledger (:func:`dpfast.ledger.budget_record`):
    its (epsilon, delta) budget, or its rho budget and the delta epsilon is read at."""
    if acct._zcdp:
        given = None if acct._eps_given is None else exact(acct._eps_given)
        return budget_record(acct._budget[0], exact(acct._read_delta), acct._k, "zcdp", given)
    return budget_record(acct._budget[0], acct._budget[1], acct._k, acct.composition,
                         acct._delta_prime)


def ledger_budget(file: LedgerFile) -> tuple[float, float, int, float | None,
                                              tuple[float, float | None] | None]:
    """The budget of the accountant a ledger file was made for, from its budget record
    (:func:`dpfast.ledger.read_budget`): (epsilon, delta, group size, delta', zCDP budget) as
    ``Accountant._setup`` takes them; LedgerError (the file closed) for a record that is not
    an accountant's."""
    try:
        first, second, k, composition, last = read_budget(file.header)
        zcdp: tuple[float, float | None] | None = None
        delta_prime = None
        if composition == "zcdp":
            # budget <rho> <read delta> <k> zcdp <epsilon asked for, or ->
            zcdp = (as_float(first), None if last is None else as_float(last))
        else:
            delta_prime = None if last is None else as_float(last)
        if composition not in ("basic", "advanced", "zcdp") or (composition == "advanced") \
                != (delta_prime is not None):
            raise ValueError(composition)
    except ValueError:
        file.close()
        raise LedgerError(f"The ledger {file.path!r} has an unreadable budget record.") \
            from None
    return as_float(first), as_float(second), int(k), delta_prime, zcdp


def damage_error(acct: LedgerBooks, line: int, what: str) -> LedgerDamagedError:
    """The error of a spend refused because ``acct``'s ledger is damaged."""
    path = acct._ledger_file.path if acct._ledger_file is not None else "?"
    return LedgerDamagedError(
        f"The ledger {path!r} is damaged at line {line}: {what}. It counts as exhausted "
        "(the whole budget spent), so nothing was charged. Inspect the file, and start a "
        "new ledger (another file) for the budget that remains.")


class Synced:
    """The accountant's lock, and with a ledger file, the file's lock with the file's news
    taken in, SIGINT and SIGTERM held throughout (see :func:`dpfast.ledger.hold_signals`):
    an interrupt can neither leave a lock taken nor split a charge from its record."""

    def __init__(self, acct: LedgerBooks) -> None:
        self._acct = acct
        self._held: HeldSignals | None = None

    def __enter__(self) -> None:
        acct = self._acct
        file = acct._ledger_file
        if file is None:
            acct._tally.__enter__()
            return
        self._held = hold_signals()
        try:
            acct._tally.__enter__()
            try:
                file.lock(self._held)
                # Read before any decision: every reader takes in the file to its real end.
                read_ledger(acct)
            except BaseException:
                acct._tally.__exit__()
                raise
        except BaseException:
            release_signals(self._held)
            raise

    def __exit__(self, *exc: object) -> Literal[False]:
        acct = self._acct
        try:
            try:
                if acct._ledger_file is not None:
                    acct._ledger_file.unlock()
            finally:
                acct._tally.__exit__()
        finally:
            release_signals(self._held)
        return False


def read_ledger(acct: LedgerBooks) -> None:
    """Take in the charges appended to ``acct``'s ledger file since the last look (call with
    both locks held), checking each running total. Damage (found here or by the file)
    exhausts the budget."""
    file = acct._ledger_file
    assert file is not None
    for charge in file.read_new():
        try:
            cost, total = read_amounts(charge)
        except ValueError as exc:
            file.mark_damaged(charge.line, str(exc))
            break
        lease = charge.details.get("lease")
        if charge.kind == RETURN:
            what = unsound_return(lease, cost, acct._leases, acct._delta_prime is not None)
            if what is not None:
                file.mark_damaged(charge.line, what)
                break
            taken = (-cost[0], -cost[1])
            record = charge_record(charge.details, taken,
                                   (as_float(taken[0]), as_float(taken[1])))
        else:
            record = charge_record(charge.details, cost, (as_float(cost[0]), as_float(cost[1])))
            what = reserved_twice(lease, acct._leases)
            if what is not None:
                file.mark_damaged(charge.line, what)
                break
        if type(lease) is str:
            # A lease's reservation and its return are one unit (whatever unit the
            # details name): its net charge is what the lease spent.
            record = (*record[:5], lease, *record[6:])
        acct._take_lease(record, charge.kind, lease if type(lease) is str else None)
        if acct._tally.spent != total:
            file.mark_damaged(charge.line, TOTAL_MISMATCH)
            break
    if file.damage is not None:
        acct._tally.spent = acct._budget


def append_durably(acct: LedgerBooks, amounts: tuple[str, str, str, str],
                   details: dict[str, Any], kind: str, take: Callable[[], None]) -> None:
    """Append one record to ``acct``'s ledger file, durable before anything changes in
    memory, then ``take()`` it in (both locks and the signals held, by :class:`Synced`). A
    record made durable before an interruption (a handler the hold could not defer) is taken
    in too: it is spent, and counted here as in the file. Damage exhausts the budget."""
    file = acct._ledger_file
    assert file is not None
    before = file.count
    try:
        file.append(amounts, details, kind)
    except Damaged as exc:
        acct._tally.spent = acct._budget
        raise damage_error(acct, exc.line, exc.what) from None
    except BaseException:
        if file.count > before:
            take()
        raise
    take()


def redeem(acct: LedgerBooks, commits: str, cost: tuple[float | None, float, float | None],
           label: str) -> bool:
    """Whether an interrupted release committed to ``commits`` may complete without a
    new charge: ``acct``'s ledger holds a sequential charge of exactly ``cost`` (asked
    epsilon, delta, rho) made by :meth:`dpfast._release.Release.charge` for that key
    (not a lease's record, not a spend inside a block, whatever its label says), and no
    completion has redeemed it yet. If so, a durable zero-cost record of the redemption
    is appended (a second completion of that key is charged) and True returned; else
    nothing is written and False returned: the caller pays. Only a ledger-backed
    accountant holds commitments."""
    if acct._ledger_file is None:
        return False
    with Synced(acct):
        acct._usable_for_lease()
        records = acct._tally.records
        if any(len(r) > 8 and r[8] == commits for r in records):
            return False
        if not any(len(r) > 7 and r[7] == commits and r[3] == () and r[5] is None
                   and (r[0], r[1], r[6]) == cost for r in records):
            return False
        record = (None, 0.0, label, (), ZERO, None, None, None, commits)
        spent = acct._tally.spent
        zero = amount_text(0)
        append_durably(acct, (zero, zero, amount_text(spent[0], False),
                              amount_text(spent[1], False)), charge_details(record), CHARGE,
                       lambda: acct._take(record))
        return True
