"""A budget that survives the process: the append-only file behind a durable accountant.

``dp.Accountant(epsilon=1.0, ledger="budget.ledger")`` keeps its budget and every charge in
this file. A charge is appended and made durable (written in one ``pwrite`` call, then
``fdatasync``) before the spend returns, so before any noise of that release is drawn; every
process that opens the same file shares the budget: a spend takes an exclusive lock on the
file (``flock``), reads the charges appended since its last look (other processes' too) up to
the file's real end, checks the budget, appends, syncs and unlocks. Reopening the file
restores what was spent.

Format (version 2): UTF-8 text, one record per line, each ``<payload>\\t<crc32 of the
payload, 8 hex>``. The first record is the budget, ``budget <epsilon> <delta> <group size>
<composition> <delta'> v2 <ledger id> <mac>``; every other record is a charge, ``charge <n>
<epsilon charged> <delta charged> <total epsilon> <total delta> <previous mac> <mac> <JSON
details>``: charges are numbered from 1, carry the running total after them, and form a hash
chain (each names the MAC of the record before it, the first the budget record's). A *return*
record, ``return <n> <epsilon returned> <delta returned> <total epsilon> <total delta>
<previous mac> <mac> <JSON details>``, is numbered and chained like a charge and lowers the
running total: it gives back the unspent rest of a lease (:meth:`dpfast.Accountant.lease`), a
charge whose details carry ``"lease": <id>``, and its details name that id. The accountant
that reads the ledger checks that a return names a reservation earlier in the same ledger
that is not yet returned and gives back at most what it reserved; anything else is damage. A MAC is
HMAC-SHA-256, cut to 128 bits, of the record (with the ledger id) under a key kept in
``<ledger>.dpfast-key`` (mode 0600). Amounts are exact decimals (``1e-1`` is one tenth;
``inf`` for an unlimited epsilon budget), as the accountant computes them: a charge is what
the spend added to the total, after group scaling and parallel composition. The key file
also holds a *seal*: the number of charges and the MAC of the last one, rewritten after each
durable append (the ledger may run ahead of its seal, after a crash between the two, but
never behind it), so that a last record removed at a record boundary, or a file cut back to
its budget record, is seen.

Failing closed. A ledger that is damaged -- a record that fails its checksum or its MAC, is
cut short, is of an unknown kind or a second budget record, does not continue the chain
(removed, repeated or reordered records), carries a running total that does not add up, or
returns what no lease reserved (a return naming no earlier reservation, a second return of
one lease, a return of more than was reserved); a
file shorter than what was already read from it or than its seal -- counts as exhausted:
:attr:`Accountant.spent` shows the whole budget and every spend raises
:class:`dpfast.accounting.LedgerDamagedError`, naming the line and what is wrong (never the
record's contents), until someone inspects the file and starts a new ledger. A budget record
that fails (a budget raised by hand), an emptied file, or a ledger deleted while its key file
remains is refused at open. A write that fails (a short write, a full disk, a file size
limit, a failed sync) is cut back under the lock and raises :class:`LedgerError`: nothing is
charged.

What the key protects against, and what it cannot. The MACs catch anyone who can write the
ledger but cannot read the key file: edits (a raised budget with its CRC fixed, a lowered
amount), removed, reordered or repeated records and truncation. They cannot stop the owner of
the files, root, or anyone else who can read the key: they can write a fresh, valid ledger.
A ledger is therefore refused when someone else could have planted or changed it -- a ledger
owned by another user or writable by group or world, a key file anyone else can read or
write, a symbolic link, a directory others can write without the sticky bit or owned by
another (non-root) user -- unless it is opened with ``shared_ledger=True``, which trusts every
user who can write these files with the budget.

Ledgers of the first format (``budget <epsilon> <delta> <group size> <composition> <delta'>``
with unnumbered, unchained charges) are refused: start a new ledger for what remains.
"""
from __future__ import annotations

import errno
import fcntl
import hmac
import importlib
import json
import os
import signal
import stat
import threading
import time
import zlib
from typing import Any, NamedTuple

__all__ = ["LedgerFile", "LedgerError", "Damaged", "Charge", "encode", "decode"]

MAGIC = "budget"
CHARGE = "charge"
RETURN = "return"           # a lease's unspent rest given back (lowers the running total)
VERSION = "v2"
KEY_SUFFIX = ".dpfast-key"
_KEY_MAGIC = b"dpfast-ledger-key 2 "
_SEAL = "seal {:020d} {}\n"
_LOCK_WAIT = 30.0       # seconds a spend waits for another process's lock before giving up
_CREATE_WAIT = 5.0      # seconds to wait for another process creating the same ledger


class LedgerError(ValueError):
    """A ledger file that cannot be used: not a dpfast ledger, one for another budget, one
    someone else could have written, or a write that failed (nothing was charged)."""


class Damaged(LedgerError):
    """A ledger found damaged at ``line``: ``what`` says how (never the record's contents).
    :mod:`dpfast.accounting` raises it as :class:`~dpfast.accounting.LedgerDamagedError`."""

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


def _mac(key: bytes, text: str) -> str:
    return hmac.digest(key, text.encode("utf-8"), "sha256")[:16].hex()


# Every signal a Python handler may be installed for (SIGKILL and SIGSTOP cannot be caught).
_SIGNALS = tuple(int(s) for s in signal.valid_signals()
                 if s not in (signal.SIGKILL, signal.SIGSTOP))
try:
    # The C module under `signal`: the same functions without the enum conversions, which
    # cost more than the rest of a ledger-backed spend on a fast disk.
    _raw_signal: Any = importlib.import_module("_signal")
except ImportError:         # pragma: no cover - CPython has it
    _raw_signal = signal


class HeldSignals:
    """Signals caught while held (see :func:`hold_signals`)."""

    def __init__(self) -> None:
        self.previous: dict[int, Any] = {}
        self.caught: list[int] = []

    def __call__(self, signum: int, frame: object) -> None:
        self.caught.append(signum)


def hold_signals() -> HeldSignals | None:
    """Defer every signal that has a Python handler (SIGINT's KeyboardInterrupt, a SIGTERM
    handler, a timeout on SIGALRM, ...) until :func:`release_signals`, so that no handler
    can raise between taking the locks, a charge's write, its sync and the accountant taking
    it in: the process's total always equals the file's, and no lock is left held.

    Python runs signal handlers on the main thread only, whichever thread the kernel
    delivers a signal to (a thread mask would not do: native worker threads may take it),
    so on the main thread the handlers are swapped for one that records the signal;
    :func:`release_signals` restores them and raises what was recorded again. None on
    other threads (nothing to hold: no handler runs there)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    held = HeldSignals()
    try:
        for signum in _SIGNALS:
            old = _raw_signal.getsignal(signum)
            if not callable(old):
                continue           # default, ignored, or installed outside Python: left alone
            held.previous[signum] = old
            _raw_signal.signal(signum, held)
    except BaseException:
        release_signals(held)
        raise
    return held


def release_signals(held: HeldSignals | None) -> None:
    """Undo :func:`hold_signals`: restore the handlers, then deliver what was caught."""
    if held is None:
        return
    pending = list(held.previous.items())
    try:
        while pending:
            signum, old = pending[-1]
            _raw_signal.signal(signum, old)
            pending.pop()
    finally:
        # A handler restored above may have raised (a signal arriving just then): the rest
        # are restored all the same, never left recording.
        for signum, old in pending:
            _raw_signal.signal(signum, old)
    for signum in dict.fromkeys(held.caught):
        _raw_signal.raise_signal(signum)


def _sync(fd: int) -> None:
    (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)


def _check_directory(path: str) -> None:
    """Refuse a directory where someone else could replace our files."""
    where = os.path.dirname(os.path.abspath(path))
    st = os.stat(where)
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise LedgerError(
            f"The directory {where!r} of the ledger {path!r} can be written by other users "
            f"(mode {stat.S_IMODE(st.st_mode):04o}, no sticky bit): they could replace the "
            "ledger. Keep it in a directory only you can write, or pass shared_ledger=True "
            "to trust them with the budget.")
    if st.st_uid not in (0, os.geteuid()):
        raise LedgerError(
            f"The directory {where!r} of the ledger {path!r} is owned by another user (uid "
            f"{st.st_uid}), who could replace the ledger. Keep it in your own directory, or "
            "pass shared_ledger=True to trust them with the budget.")


def _check_file(st: os.stat_result, path: str, what: str, others_mask: int) -> None:
    """Refuse a file that is not a regular file of ours that no one else can change."""
    if not stat.S_ISREG(st.st_mode):
        raise LedgerError(f"The {what} {path!r} is not a regular file.")
    if st.st_uid != os.geteuid():
        raise LedgerError(
            f"The {what} {path!r} is owned by another user (uid {st.st_uid}), who could "
            "have written it. Use your own ledger, or pass shared_ledger=True to trust that "
            "user with the budget.")
    if st.st_mode & others_mask:
        raise LedgerError(
            f"The {what} {path!r} has mode {stat.S_IMODE(st.st_mode):04o}: other users "
            f"can {'write' if others_mask == 0o022 else 'read or write'} it. Make it "
            f"{'0644 or 0600' if others_mask == 0o022 else '0600'} (chmod), or pass "
            "shared_ledger=True to trust them with the budget.")


def _open_nofollow(path: str, flags: int, what: str, mode: int = 0o600) -> int:
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LedgerError(f"The {what} {path!r} is a symbolic link: refused (it could "
                              "point anywhere). Name the file itself.") from None
        raise


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
            _check_directory(self.path)
        self.header = self._open(budget)

    # -- descriptors, one pair per process --------------------------------------------------
    def _descriptor(self) -> int:
        """This process's descriptor: a forked child opens its own, since a lock taken
        through a descriptor inherited from the parent would not exclude the parent."""
        if self._pid != os.getpid():
            if self._closed:
                raise LedgerError(f"The ledger {self.path!r} has been closed "
                                  "(Accountant.close()).")
            fd = _open_nofollow(self.path, os.O_RDWR, "ledger")
            try:
                key_fd = _open_nofollow(self.key_path, os.O_RDWR, "ledger key file")
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
                fd = _open_nofollow(self.path, os.O_RDWR, "ledger")
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
        fd = _open_nofollow(self.key_path, flags, "ledger key file")
        st = os.fstat(fd)
        if not self.shared:
            try:
                _check_file(st, self.key_path, "ledger key file", 0o077)
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
            key_fd = _open_nofollow(self.key_path, os.O_RDWR | os.O_CREAT | os.O_EXCL,
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
            mac = _mac(key, signed)
            head = _KEY_MAGIC + key.hex().encode("ascii") + b"\n"
            os.write(key_fd, head + _SEAL.format(0, mac).encode("ascii"))
            _sync(key_fd)
            fd = _open_nofollow(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, "ledger")
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
            _check_file(st, self.path, "ledger", 0o022)
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
            if not hmac.compare_digest(_mac(self._key, signed), fields[8]):
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
        if not hmac.compare_digest(_mac(self._key, signed), parts[7]):
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
        mac = _mac(self._key, f"{self._id} {body} {text}")
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
