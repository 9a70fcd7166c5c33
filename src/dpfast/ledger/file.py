"""The ledger file of one durable accountant in one process: creating and opening it (its
key and seal), locking it, reading and verifying the records other processes appended (the
checksum, MAC, chain and seal of each), and appending a charge durably. See
:mod:`dpfast.ledger` for the format and what it protects against."""
from __future__ import annotations

import errno
import fcntl
import hmac
import json
import os
import stat
import time
from typing import Any

from .records import (CHARGE, KEY_SUFFIX, MAGIC, RETURN, VERSION, Charge, Damaged,
                      LedgerError, decode, encode, record_mac)
from .signals import HeldSignals
from .trust import check_directory, check_file, open_nofollow

__all__ = ["LedgerFile"]

_KEY_MAGIC = b"dpfast-ledger-key 2 "
_SEAL = "seal {:020d} {}\n"
_LOCK_WAIT = 30.0       # seconds a spend waits for another process's lock before giving up
_CREATE_WAIT = 5.0      # seconds to wait for another process creating the same ledger


def _sync(fd: int) -> None:
    (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)


def _flock(fd: int, how: int, path: str, wait: float,
           held: HeldSignals | None = None) -> None:
    """flock without blocking forever: retry LOCK_NB for ``wait`` seconds, then refuse (at
    once when a signal ``held`` back arrives while waiting)."""
    deadline, pause = time.monotonic() + wait, 0.0005
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if held is not None and held.caught:
                raise LedgerError(f"Interrupted while waiting for the lock of {path!r}.") \
                    from None
            if time.monotonic() > deadline:
                raise LedgerError(
                    f"Could not lock {path!r} within {wait:g} s: another process holds it "
                    "(a stuck dpfast process, or another user who can open the file).") \
                    from None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


class LedgerFile:
    """The file of one durable accountant in one process (see the module documentation).

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file; created with ``budget`` if it does not exist.
    budget : str or None
        The budget record this accountant expects (``budget <epsilon> <delta> <group size>
        <composition> <delta'>``), or None to take the file's own (the file must then
        exist).
    shared : bool
        Accept files and directories other users can write (see the module documentation).

    Raises
    ------
    Damaged
        The budget record fails, the file is empty, or the ledger is gone while its key
        file remains.
    LedgerError
        Not a ledger, an earlier format, another budget, or files someone else could write.
    """

    def __init__(self, path: str | os.PathLike[str], budget: str | None, *,
                 shared: bool = False) -> None:
        self.path = os.fspath(path)
        self.key_path = self.path + KEY_SUFFIX
        self.shared = shared
        self._fd = self._key_fd = -1
        self._pid = -1
        self._closed = False
        self.offset = 0              # bytes of the file read (and verified) by this process
        self.lines = 0               # records read
        self.count = 0               # charges read
        self.last_mac = ""           # the MAC the next charge must name
        self.damage: tuple[int, str] | None = None
        self._key = b""
        self._id = ""
        self._seal_at = 0
        if not shared:
            check_directory(self.path)
        self.header = self._open(budget)

    # -- descriptors, one pair per process --------------------------------------------------
    def _descriptor(self) -> int:
        """This process's descriptor: a forked child opens its own, since a lock taken
        through a descriptor inherited from the parent would not exclude the parent."""
        if self._pid != os.getpid():
            if self._closed:
                raise LedgerError(f"The ledger {self.path!r} has been closed "
                                  "(Accountant.close()).")
            fd = open_nofollow(self.path, os.O_RDWR, "ledger")
            try:
                key_fd = open_nofollow(self.key_path, os.O_RDWR, "ledger key file")
            except BaseException:
                os.close(fd)
                raise
            self._fd, self._key_fd, self._pid = fd, key_fd, os.getpid()
        return self._fd

    def close(self) -> None:
        """Close this process's descriptors; the ledger cannot be used through this object
        any more."""
        self._closed = True
        if self._pid == os.getpid():
            for fd in (self._fd, self._key_fd):
                if fd >= 0:
                    os.close(fd)
        self._fd = self._key_fd = self._pid = -1

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def lock(self, held: HeldSignals | None = None) -> None:
        """Take the file's lock (waiting at most 30 s, or until a ``held`` signal)."""
        _flock(self._descriptor(), fcntl.LOCK_EX, self.path, _LOCK_WAIT, held)

    def unlock(self) -> None:
        fcntl.flock(self._descriptor(), fcntl.LOCK_UN)

    # -- opening and creating ----------------------------------------------------------------
    def _open(self, budget: str | None) -> str:
        for _ in range(3):
            try:
                fd = open_nofollow(self.path, os.O_RDWR, "ledger")
            except FileNotFoundError:
                if budget is None and not os.path.lexists(self.key_path):
                    raise FileNotFoundError(
                        f"The ledger {self.path!r} does not exist: give the budget (epsilon=, "
                        "delta=) to create it.") from None
                if self._create(budget):
                    return budget  # type: ignore[return-value]  # _create refuses None
                continue                       # another process created it: open that
            try:
                return self._open_existing(fd, budget)
            except BaseException:
                self.close()
                self._closed = False
                raise
        raise LedgerError(f"The ledger {self.path!r} could not be opened: it appears and "
                          "disappears (another process is removing it).")

    def _key_file(self, flags: int) -> tuple[int, os.stat_result]:
        fd = open_nofollow(self.key_path, flags, "ledger key file")
        st = os.fstat(fd)
        if not self.shared:
            try:
                check_file(st, self.key_path, "ledger key file", 0o077)
            except BaseException:
                os.close(fd)
                raise
        return fd, st

    def _create(self, budget: str | None) -> bool:
        """Create the ledger with ``budget``: the key file first (O_EXCL, locked while we
        write it and the ledger), then the ledger under a temporary name, linked into place
        so that it never exists empty. False if another process was creating it."""
        if budget is None:
            return self._await_creator()
        try:
            key_fd = open_nofollow(self.key_path, os.O_RDWR | os.O_CREAT | os.O_EXCL,
                                    "ledger key file")
        except FileExistsError:
            return self._await_creator()
        tmp = f"{self.path}.{os.urandom(6).hex()}.tmp"
        linked = False
        try:
            fcntl.flock(key_fd, fcntl.LOCK_EX)       # a new file of ours: no one else holds it
            key = os.urandom(32)
            ledger_id = os.urandom(8).hex()
            signed = f"{budget} {VERSION} {ledger_id}"
            mac = record_mac(key, signed)
            head = _KEY_MAGIC + key.hex().encode("ascii") + b"\n"
            os.write(key_fd, head + _SEAL.format(0, mac).encode("ascii"))
            _sync(key_fd)
            fd = open_nofollow(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, "ledger")
            try:
                record = encode(f"{signed} {mac}")
                if os.write(fd, record) != len(record):
                    raise OSError(errno.ENOSPC, "short write")
                _sync(fd)
                os.link(tmp, self.path)
                linked = True
            finally:
                os.close(fd)
            dfd = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except FileExistsError:
            # A ledger appeared without the key protocol (planted, or an earlier format):
            # give up our key and open what is there, which will be judged on its own.
            os.unlink(self.key_path)
            return False
        except BaseException:
            if not linked:
                os.unlink(self.key_path)
            raise
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.close(key_fd)
        self._key, self._id, self.last_mac = key, ledger_id, mac
        self._seal_at = len(head)
        self._descriptor()
        self.offset, self.lines = len(record), 1
        return True

    def _await_creator(self) -> bool:
        """The key file exists: wait (bounded) for the process writing it, then open the
        ledger it created; a key file without a ledger means the ledger was deleted."""
        deadline = time.monotonic() + _CREATE_WAIT
        while True:
            key_fd, _ = self._key_file(os.O_RDONLY)
            try:
                _flock(key_fd, fcntl.LOCK_SH, self.key_path, _CREATE_WAIT)
                written = os.fstat(key_fd).st_size > 0
            finally:
                os.close(key_fd)
            if os.path.lexists(self.path):
                return False
            if written or time.monotonic() > deadline:
                raise Damaged(
                    self.path, 1, f"the ledger is missing while its key file "
                    f"{self.key_path!r} remains (deleted, or its creation was interrupted): "
                    "the budget it recorded is unknown. Start a new ledger under another "
                    "name, or remove the key file if you know nothing was spent")
            time.sleep(0.002)

    def _open_existing(self, fd: int, budget: str | None) -> str:
        """Check the file, read and verify its budget record, load its key."""
        self._fd, self._pid = fd, os.getpid()
        st = os.fstat(fd)
        if not self.shared:
            check_file(st, self.path, "ledger", 0o022)
        elif not stat.S_ISREG(st.st_mode):
            raise LedgerError(f"The ledger {self.path!r} is not a regular file.")
        _flock(fd, fcntl.LOCK_EX, self.path, _LOCK_WAIT)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                raise Damaged(self.path, 1, "the file is empty (a dpfast ledger never is: it "
                              "was emptied, or is not a ledger); it is not a new budget")
            first = os.pread(fd, min(size, 65536), 0)
            end = first.find(b"\n")
            if not first.startswith(MAGIC.encode() + b" "):
                raise LedgerError(f"{self.path!r} is not a dpfast ledger (its first line is "
                                  "not a budget record).")
            if end < 0:
                raise Damaged(self.path, 1, "the budget record is cut short")
            payload, intact = decode(first[:end + 1])
            if not intact:
                raise Damaged(self.path, 1, "the budget record fails its checksum")
            fields = payload.split(" ")
            if len(fields) == 6:
                raise LedgerError(
                    f"The ledger {self.path!r} is in the first ledger format, which cannot "
                    "be verified (no chain, no MAC): start a new ledger (another file) with "
                    "the budget that remains, and keep this one as a record.")
            if len(fields) != 9 or fields[6] != VERSION:
                raise Damaged(self.path, 1, "the budget record has an unknown format")
            self._load_key()
            signed = " ".join(fields[:8])
            if not hmac.compare_digest(record_mac(self._key, signed), fields[8]):
                raise Damaged(self.path, 1, "the budget record fails its MAC (edited, or "
                              "not written with this ledger's key)")
            found = " ".join(fields[:6])
            if budget is not None and found != budget:
                raise LedgerError(f"The ledger {self.path!r} holds another budget ({found!r}) "
                                  f"than this accountant's ({budget!r}).")
            self._id, self.last_mac = fields[7], fields[8]
            self.offset, self.lines = end + 1, 1
            return found
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def _load_key(self) -> None:
        try:
            key_fd, _ = self._key_file(os.O_RDWR)
        except FileNotFoundError:
            raise Damaged(self.path, 1, f"its key file {self.key_path!r} is missing, so the "
                          "ledger cannot be verified") from None
        self._key_fd = key_fd
        head = os.pread(key_fd, 128, 0)
        line = head.split(b"\n", 1)[0]
        try:
            if not line.startswith(_KEY_MAGIC):
                raise ValueError
            self._key = bytes.fromhex(line[len(_KEY_MAGIC):].decode("ascii"))
            if len(self._key) != 32:
                raise ValueError
        except ValueError:
            raise Damaged(self.path, 1, f"its key file {self.key_path!r} is not a dpfast "
                          "ledger key") from None
        self._seal_at = len(line) + 1

    # -- the seal ------------------------------------------------------------------------------
    def _read_seal(self) -> tuple[int, str]:
        raw = os.pread(self._key_fd, 64, self._seal_at).split(b"\n", 1)[0].decode("ascii",
                                                                                  "replace")
        parts = raw.split(" ")
        if len(parts) != 3 or parts[0] != "seal" or not parts[1].isdigit():
            return -1, ""
        return int(parts[1]), parts[2]

    # -- records ------------------------------------------------------------------------------
    def mark_damaged(self, line: int, what: str) -> None:
        """Record damage found at ``line`` (the first found stays)."""
        if self.damage is None:
            self.damage = (line, what)

    def read_new(self) -> list[Charge]:
        """The charges appended since the last read, verified; call with the lock held.
        Reading stops at the first damage, which is recorded in :attr:`damage`."""
        if self.damage is not None:
            return []
        fd = self._descriptor()
        size = os.fstat(fd).st_size
        seal_count, seal_mac = self._read_seal()
        if seal_count < 0:
            self.mark_damaged(self.lines + 1, "the key file's seal is unreadable")
            return []
        if size < self.offset:
            self.mark_damaged(self.lines + 1, "the file is shorter than what was already read "
                              "from it (cut back)")
            return []
        charges: list[Charge] = []
        if size > self.offset:
            data = os.pread(fd, size - self.offset, self.offset)
            *complete, tail = data.split(b"\n")
            for raw in complete:
                charge = self._verify(raw, seal_count, seal_mac)
                if charge is None:
                    return charges
                charges.append(charge)
                self.offset += len(raw) + 1
            if tail:
                self.mark_damaged(self.lines + 1, "the record is cut short (no end of line)")
                return charges
        if seal_count > self.count:
            self.mark_damaged(self.lines + 1, f"the ledger ends after charge {self.count} but "
                              f"charge {seal_count} was written (records removed, or the file "
                              "cut back)")
        elif seal_count == self.count and seal_mac != self.last_mac:
            self.mark_damaged(self.lines, f"charge {self.count} is not the one written (a "
                              "record replaced or removed)")
        return charges

    def _verify(self, raw: bytes, seal_count: int, seal_mac: str) -> Charge | None:
        """One charge line, verified; None (with the damage recorded) if it is not sound."""
        line = self.lines + 1
        payload, intact = decode(raw + b"\n")
        if not intact:
            self.mark_damaged(line, "the record fails its checksum")
            return None
        kind = payload.split(" ", 1)[0]
        if kind == MAGIC:
            self.mark_damaged(line, "a second budget record")
            return None
        if kind != CHARGE and kind != RETURN:
            self.mark_damaged(line, "a record of an unknown kind")
            return None
        parts = payload.split(" ", 8)
        if len(parts) != 9 or not parts[1].isdigit():
            self.mark_damaged(line, "a charge record of an unknown format")
            return None
        signed = f"{self._id} {' '.join(parts[:7])} {parts[8]}"
        if not hmac.compare_digest(record_mac(self._key, signed), parts[7]):
            self.mark_damaged(line, "the record fails its MAC (edited, or not written with "
                              "this ledger's key)")
            return None
        number = int(parts[1])
        if number != self.count + 1 or parts[6] != self.last_mac:
            self.mark_damaged(line, f"charge {number} where charge {self.count + 1} was "
                              "expected (a record removed, repeated or reordered)")
            return None
        if number == seal_count and parts[7] != seal_mac:
            self.mark_damaged(line, f"charge {number} is not the one written (a record "
                              "replaced)")
            return None
        try:
            details = json.loads(parts[8])
        except ValueError:
            details = None
        if not isinstance(details, dict):
            self.mark_damaged(line, "the record's details are unreadable")
            return None
        self.lines, self.count, self.last_mac = line, number, parts[7]
        return Charge(line, parts[2], parts[3], parts[4], parts[5], details, kind)

    def append(self, amounts: tuple[str, str, str, str], details: dict[str, Any],
               kind: str = CHARGE) -> None:
        """Append one charge (its amounts and the running totals after it, exact text) in
        one write, make it durable and seal it; call with the lock held, after
        :meth:`read_new`. ``kind`` :data:`RETURN` writes a return record instead (the
        amounts are given back; the caller has checked it against its reservation).

        Raises
        ------
        LedgerError
            The write or the sync failed: the file is cut back to where it was and nothing
            is charged (if even that fails, the ledger counts as damaged).
        """
        fd = self._descriptor()
        if self.damage is not None:
            raise Damaged(self.path, *self.damage)
        if os.fstat(fd).st_size != self.offset:
            # Bytes added without the lock since read_new: never write over or after them.
            self.mark_damaged(self.lines + 1, "bytes were added to the file without its lock")
            raise Damaged(self.path, *self.damage)  # type: ignore[misc]
        number = self.count + 1
        if kind != CHARGE and kind != RETURN:
            raise ValueError(f"LedgerFile.append: unknown record kind {kind!r}")
        body = f"{kind} {number} {' '.join(amounts)} {self.last_mac}"
        text = _ENCODER.encode(details)
        mac = record_mac(self._key, f"{self._id} {body} {text}")
        data = encode(f"{body} {mac} {text}")
        try:
            written = os.pwrite(fd, data, self.offset)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes)")
            _sync(fd)
        except BaseException as exc:
            self._cut_back(fd)
            if isinstance(exc, OSError):
                raise LedgerError(f"The charge could not be written to the ledger "
                                  f"{self.path!r} ({exc.strerror or exc}); nothing was "
                                  "charged.") from None
            raise
        self.offset += len(data)
        self.lines += 1
        self.count, self.last_mac = number, mac
        try:
            os.pwrite(self._key_fd, _SEAL.format(number, mac).encode("ascii"), self._seal_at)
        except OSError:
            pass            # the ledger may run ahead of its seal (never behind it)

    def _cut_back(self, fd: int) -> None:
        try:
            os.ftruncate(fd, self.offset)
            _sync(fd)
        except OSError:
            self.mark_damaged(self.lines + 1, "a failed write could not be cut back")


_ENCODER = json.JSONEncoder(separators=(",", ":"))
