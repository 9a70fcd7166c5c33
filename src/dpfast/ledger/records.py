"""The text of a ledger's records: their encoding, the fields of each kind, and the checks
of what a record says.

A record is one line, ``<payload>\t<crc32>`` (:func:`encode`, :func:`decode`); the first is
the budget (:func:`budget_record`, :func:`read_budget`), every other a charge or a return
(:class:`Charge`) whose JSON details say what was asked, where and by whom
(:func:`charge_details`, :func:`charge_record`). Amounts are exact decimals
(:func:`amount_text`, :func:`amount_parse`): in memory, whole numbers of ``10**-UNIT_DIGITS``.
What a sound record may say about amounts and leases is checked here too
(:func:`read_amounts`, :func:`unsound_return`, :func:`reserved_twice`); the file itself (its
chain, MACs and seal) is :mod:`dpfast.ledger.file`'s. See :mod:`dpfast.ledger` for the whole
format.
"""
from __future__ import annotations

import hmac
import math
import os
import time
import zlib
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from typing import TypeAlias

    # An exact amount: an int number of units of 10**-UNIT_DIGITS, or math.inf.
    Amount: TypeAlias = int | float
    # An (epsilon, delta) pair of exact amounts.
    Cost: TypeAlias = tuple[int, Amount]

__all__ = ["MAGIC", "CHARGE", "RETURN", "VERSION", "KEY_SUFFIX", "UNIT_DIGITS", "LedgerError",
           "Damaged", "Charge", "encode", "decode", "record_mac", "amount_text", "amount_parse",
           "budget_record", "read_budget", "charge_details", "charge_record", "read_amounts",
           "unsound_return", "reserved_twice", "TOTAL_MISMATCH"]

MAGIC = "budget"
CHARGE = "charge"
RETURN = "return"           # a lease's unspent rest given back (lowers the running total)
VERSION = "v2"
KEY_SUFFIX = ".dpfast-key"


class LedgerError(ValueError):
    """A ledger file that cannot be used: not a dpfast ledger, one for another budget, one
    someone else could have written, or a write that failed (nothing was charged).

    Raised by :class:`dpfast.Accountant` (``ledger=``) and
    :meth:`dpfast.Accountant.from_ledger` on opening such a file, by a spend whose charge
    could not be written (cut back: nothing charged), and by an accountant used after
    :meth:`~dpfast.Accountant.close`. A damaged ledger raises its subclass
    :class:`dpfast.accounting.LedgerDamagedError`. A subclass of ``ValueError``.

    Examples
    --------
    A ledger made for one budget, opened with another:

    >>> import os, tempfile
    >>> import dpfast as dp
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.ledger")
    >>> dp.Accountant(epsilon=1.0, ledger=path).close()
    >>> try:
    ...     dp.Accountant(epsilon=2.0, ledger=path)
    ... except dp.LedgerError as exc:
    ...     print("holds another budget" in str(exc))
    True
    >>> acct = dp.Accountant.from_ledger(path)      # the budget the file holds
    >>> acct.epsilon
    1.0
    >>> acct.close()
    """

    # Shown in tracebacks and pickled under the name users import it by.
    __module__ = "dpfast.ledger"


class Damaged(LedgerError):
    """A ledger found damaged at ``line``: ``what`` says how (never the record's contents).
    :mod:`dpfast.accounting` raises it as :class:`~dpfast.accounting.LedgerDamagedError`."""

    __module__ = "dpfast.ledger"

    def __init__(self, path: str, line: int, what: str) -> None:
        self.path, self.line, self.what = path, line, what
        super().__init__(f"The ledger {path!r} is damaged at line {line}: {what}.")


class Charge(NamedTuple):
    """One charge (or return) record as read: its line, exact amounts (text), details and
    kind (:data:`CHARGE`, or :data:`RETURN`: the amounts are given back)."""
    line: int
    epsilon: str
    delta: str
    total_epsilon: str
    total_delta: str
    details: dict[str, Any]
    kind: str = CHARGE


def _crc(payload: bytes) -> str:
    return f"{zlib.crc32(payload) & 0xFFFFFFFF:08x}"


def encode(payload: str) -> bytes:
    """One record: the payload, a tab, its checksum and a newline."""
    raw = payload.encode("utf-8")
    return raw + b"\t" + _crc(raw).encode("ascii") + b"\n"


def decode(line: bytes) -> tuple[str, bool]:
    """(payload, intact): intact when the line ends with a newline and its checksum holds."""
    body = line[:-1] if line.endswith(b"\n") else line
    raw, _, crc = body.rpartition(b"\t")
    intact = line.endswith(b"\n") and bool(raw) and crc.decode("ascii", "replace") == _crc(raw)
    return (raw if intact else body).decode("utf-8", "replace"), intact


def record_mac(key: bytes, text: str) -> str:
    """A record's MAC: HMAC-SHA-256 of ``text`` under ``key``, cut to 128 bits (hex)."""
    return hmac.digest(key, text.encode("utf-8"), "sha256")[:16].hex()



# -- amounts ------------------------------------------------------------------------------
# Exact amounts are whole numbers of 10**-UNIT_DIGITS (math.inf for an unlimited budget):
# every double's shortest decimal is one, so the accountant's sums are exact and a ledger's
# decimals read back to the same integers.
UNIT_DIGITS = 330
# Texts of the amounts charged so far (a pipeline charges the same few again and again).
_TEXTS: dict[Amount, str] = {}
_TEXTS_MAX = 4096


def amount_text(a: Amount, remember: bool = True) -> str:
    """An exact amount as a short exact decimal (``1e-1``), or ``inf`` (remembered: a
    pipeline charges the same few amounts again and again; running totals, which never
    repeat, are not)."""
    text = _TEXTS.get(a)
    if text is None:
        if a == math.inf:
            return "inf"
        digits = str(a)
        mantissa = digits.rstrip("0") or "0"
        text = f"{mantissa}e{len(digits) - len(mantissa) - UNIT_DIGITS}"
        if remember and len(_TEXTS) < _TEXTS_MAX:
            _TEXTS[a] = text
    return text


def amount_parse(text: str) -> Amount:
    """The inverse of :func:`amount_text`; ValueError for anything else."""
    if text == "inf":
        return math.inf
    mantissa, _, exp = text.partition("e")
    value = int(mantissa) * 10 ** (int(exp) + UNIT_DIGITS)
    if value < 0:
        raise ValueError(text)
    return value  # type: ignore[no-any-return]  # int ** int: Any


# -- the budget record --------------------------------------------------------------------
def budget_record(first: Amount, second: Amount, group_size: int, composition: str,
                  last: Amount | None) -> str:
    """The fields of a budget record an accountant expects: ``budget <epsilon> <delta> <group
    size> <composition> <delta'>``, or for ``composition`` ``"zcdp"``, ``budget <rho> <delta
    epsilon is read at> <group size> zcdp <epsilon asked for>`` (``-`` for a ``last`` of
    None)."""
    shown = "-" if last is None else amount_text(last)
    return (f"{MAGIC} {amount_text(first)} {amount_text(second)} {group_size} {composition} "
            f"{shown}")


def read_budget(header: str) -> tuple[Amount, Amount, str, str, Amount | None]:
    """The fields of a budget record (:func:`budget_record`): the two amounts, the group size
    (text), the composition and the last amount (None for ``-``); ValueError for a record
    that does not have them."""
    _, first, second, k, composition, last = header.split(" ")
    return (amount_parse(first), amount_parse(second), k, composition,
            None if last == "-" else amount_parse(last))


# -- the details of a charge ----------------------------------------------------------------
def charge_details(record: tuple[object, ...]) -> dict[str, Any]:
    """The details of one charge in the ledger: what was asked, where, by whom and when
    (``record``: the accountant's record of the charge, (epsilon, delta, label, path, cost,
    unit[, rho[, commits[, redeems]]]))."""
    epsilon, delta, label, path, _, unit = record[:6]
    rho = record[6] if len(record) > 6 else None
    shown = label if label is None or type(label) is str else repr(label)
    details = {"epsilon": None if epsilon is None else float(epsilon),  # type: ignore[arg-type]
               "delta": float(delta),  # type: ignore[arg-type]
               "label": shown, "path": list(path), "unit": unit,  # type: ignore[call-overload]
               "pid": os.getpid(), "time": time.time()}
    if rho is not None:
        details["rho"] = float(rho)  # type: ignore[arg-type]
    commits = record[7] if len(record) > 7 else None
    redeems = record[8] if len(record) > 8 else None
    if commits is not None:
        details["commits"] = commits
    if redeems is not None:
        details["redeems"] = redeems
    return details


def charge_record(details: dict[str, Any], cost: Cost,
                  shown: tuple[float, float]) -> tuple[object, ...]:
    """The accountant's record of a charge read from a ledger file (the MAC vouches for
    the details; odd types are still kept out of the public entries). ``shown``: the
    charge's (epsilon, delta) as floats, for details that lack them."""
    def number(key: str, default: float) -> float:
        value = details.get(key)
        return value if type(value) is float else default
    label = details.get("label")
    path = details.get("path")
    unit = details.get("unit")
    rho = details.get("rho")
    commits, redeems = details.get("commits"), details.get("redeems")
    # A charge asked in rho alone records epsilon as null.
    eps = None if "epsilon" in details and details["epsilon"] is None \
        else number("epsilon", shown[0])
    return (eps, number("delta", shown[1]),
            label if label is None or type(label) is str else None,
            tuple(p for p in path if type(p) is str) if type(path) is list else (),
            cost, unit if type(unit) is str else None,
            rho if type(rho) is float else None,
            commits if type(commits) is str else None,
            redeems if type(redeems) is str else None)


# -- what a sound record may say --------------------------------------------------------------
#: The damage of a record whose running total is not the sum of the charges before it.
TOTAL_MISMATCH = "the running total does not add up"


def read_amounts(charge: Charge) -> tuple[Cost, Cost]:
    """The exact amounts of a charge (or return) and the running totals after it;
    ValueError saying what is wrong (never the amounts) for amounts that are not sound."""
    try:
        cost = (amount_parse(charge.epsilon), amount_parse(charge.delta))
        total = (amount_parse(charge.total_epsilon), amount_parse(charge.total_delta))
    except ValueError:
        raise ValueError("an unreadable amount") from None
    if isinstance(cost[0], float):
        raise ValueError("an infinite epsilon charge")
    return (cost[0], cost[1]), (total[0], total[1])  # type: ignore[return-value]  # totals: int or inf


def reserved_twice(lease: object, open_leases: dict[str, Cost]) -> str | None:
    """Why a charge naming ``lease`` is damage (a lease reserved twice under one id), or
    None."""
    if type(lease) is str and lease in open_leases:
        return "a lease reserved twice under one id"
    return None


def unsound_return(lease: object, credit: Cost, open_leases: dict[str, Cost],
                   advanced: bool) -> str | None:
    """Why a return record is damage, or None if it is sound: it names a reservation made
    earlier in this ledger and not yet returned (``open_leases``), and gives back at most
    what that reservation charged; a ledger with advanced composition (``advanced``) holds
    none."""
    if advanced:
        return "a lease return in a ledger with composition='advanced'"
    if type(lease) is not str or lease not in open_leases:
        return ("a return that names no open lease reservation (forged, or a lease "
                "returned twice)")
    reserved = open_leases[lease]
    if isinstance(credit[1], float) or credit[0] > reserved[0] or credit[1] > reserved[1]:
        return "a return of more than its lease reserved"
    return None
