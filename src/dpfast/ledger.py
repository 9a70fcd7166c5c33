"""A budget that survives the process: the append-only file behind a durable accountant.

``dp.Accountant(epsilon=1.0, ledger="budget.ledger")`` keeps its budget and every charge in
this file. A charge is appended and made durable (written in one ``write`` call, then
``fdatasync``) before the spend returns, so before any noise of that release is drawn; every
process that opens the same file shares the budget: a spend takes an exclusive lock on the
file (``flock``), reads the charges appended since its last look (other processes' too),
checks the budget, appends, syncs and unlocks. Reopening the file restores what was spent.

Format: UTF-8 text, one record per line, each ``<payload>\\t<crc32 of the payload, 8 hex>``.
The first record is the budget, ``budget <epsilon> <delta> <group size> <composition>
<delta'>``; every other record is a charge, ``charge <epsilon charged> <delta charged>
<JSON details>``, the details holding the epsilon and delta asked for, the label, the path of
parallel blocks, the process and the time. Amounts are exact decimals (``1e-1`` is one
tenth; ``inf`` for an unlimited epsilon budget), as the accountant computes them: a charge is
what the spend added to the total, after group scaling and parallel composition.

A record whose checksum fails or whose line is cut short (a process killed while writing, a
disk that lost its last write) is *torn*. A torn charge counts as spent, never as free: its
two amounts when they can still be read, and otherwise the whole budget, which leaves the
ledger exhausted until someone inspects the file and removes the torn line by hand.
"""
from __future__ import annotations

import json
import os
import zlib
from typing import Any

__all__ = ["LedgerFile", "LedgerError"]

MAGIC = "budget"
CHARGE = "charge"


class LedgerError(ValueError):
    """A ledger file that cannot be used: not a dpfast ledger, or one for another budget."""


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


class LedgerFile:
    """The file of one durable accountant in one process (see the module documentation).

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file; created with ``header`` if it does not exist.
    header : str or None
        The budget record this accountant expects (``budget ...``), or None to take the
        file's own (the file must then exist).
    """

    def __init__(self, path: str | os.PathLike[str], header: str | None) -> None:
        self.path = os.fspath(path)
        self._fd = -1
        self._pid = -1
        self.offset = 0          # bytes of the file already read by this process
        self.header = self._open_header(header)

    # -- the file descriptor, one per process ----------------------------------------------
    def _descriptor(self) -> int:
        """This process's descriptor: a forked child opens its own, since a lock taken
        through a descriptor inherited from the parent would not exclude the parent."""
        if self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            self._pid = os.getpid()
        return self._fd

    def close(self) -> None:
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._fd, self._pid = -1, -1

    def lock(self) -> None:
        import fcntl
        fcntl.flock(self._descriptor(), fcntl.LOCK_EX)

    def unlock(self) -> None:
        import fcntl
        fcntl.flock(self._descriptor(), fcntl.LOCK_UN)

    # -- records ---------------------------------------------------------------------------
    def _open_header(self, header: str | None) -> str:
        """The budget record, written if the file is new; checked against ``header``."""
        if header is None and not os.path.exists(self.path):
            raise FileNotFoundError(f"The ledger {self.path!r} does not exist: give the "
                                    "budget (epsilon=, delta=) to create it.")
        self.lock()
        try:
            first = self.read_new()
            if not first:
                if header is None:
                    raise LedgerError(f"The ledger {self.path!r} is empty.")
                self.append(header)
                self.offset = os.fstat(self._descriptor()).st_size
                return header
            payload, intact = first[0]
            if not intact or not payload.startswith(MAGIC + " "):
                raise LedgerError(f"{self.path!r} is not a dpfast ledger (its first record is "
                                  f"{payload[:60]!r}).")
            if header is not None and payload != header:
                raise LedgerError(f"The ledger {self.path!r} holds another budget ({payload!r}) "
                                  f"than this accountant's ({header!r}).")
            # The charges after the header are read by the accountant: start after it.
            self.offset = len(encode(payload))
            return payload
        finally:
            self.unlock()

    def read_new(self) -> list[tuple[str, bool]]:
        """The records appended since the last read, as (payload, intact); call with the
        lock held. A torn record can only be the last one at the moment it is read."""
        fd = self._descriptor()
        size = os.fstat(fd).st_size
        if size <= self.offset:
            return []
        data = os.pread(fd, size - self.offset, self.offset)
        self.offset = size
        lines = data.split(b"\n")
        records = [decode(line + b"\n") for line in lines[:-1]]
        if lines[-1]:
            records.append(decode(lines[-1]))          # no newline: cut short
        return records

    def append(self, payload: str) -> None:
        """Append one record in one write and make it durable; call with the lock held."""
        fd = self._descriptor()
        data = encode(payload)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data           # a torn last record: keep it on a line of its own
        os.write(fd, data)
        (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)
        self.offset = size + len(data)


_ENCODER = json.JSONEncoder(separators=(",", ":"))


def charge_payload(charge: tuple[str, str], details: dict[str, Any]) -> str:
    """A charge record: its two exact amounts first, so that they survive a cut."""
    return f"{CHARGE} {charge[0]} {charge[1]} " + _ENCODER.encode(details)


def parse_charge(payload: str) -> tuple[str, str, dict[str, Any]] | None:
    """(epsilon, delta, details) of a charge record; None if its amounts are unreadable.
    The details of a torn record are what could be read ({} if nothing)."""
    parts = payload.split(" ", 3)
    if len(parts) < 4 or parts[0] != CHARGE:
        return None
    try:
        details = json.loads(parts[3])
    except ValueError:
        details = {}
    return parts[1], parts[2], details if isinstance(details, dict) else {}
