"""Crash-safe releases into files: a journal beside the file.

``dp.noisy_counts(m, epsilon=..., out=m)`` with ``m`` a ``numpy.memmap`` changes the file
block by block. A process killed part-way would leave a prefix noised and the rest true,
with nothing on disk to say so, and a rerun would noise the prefix twice (and the true
values of the prefix are gone). So a release into a file keeps a journal while it runs:

- ``<file>.dpfast-journal``: one record per line (payload, tab, CRC32 of the payload):
  ``start {JSON}`` (the release's parameters; the identity of the file: device, inode,
  size, owner; a checksum of every block of the source as it was at the start; the
  release's 256-bit key), then per block ``undo <b> <sum>`` (block ``b``'s bytes as they were
  saved in the undo file, before the block is touched; in-place releases only) and
  ``done <b> <sum>`` (block ``b`` released; the checksum of its released bytes);
- ``<file>.dpfast-undo``: the saved bytes of the block being released.

A resume cannot publish true values. Before anything is charged, every block is checked:
a block the journal calls done must still hold exactly its released bytes, a block not yet
done must still hold the source's bytes of the start (or, for the block in progress, the
undo file must hold them), and the file must be the same file (device, inode, size). A
file written since the interrupted release (fresh true counts, by ``np.save`` or a memmap)
is refused with an explanation, never skipped over. The interrupted release's charge stands
for the completion only where the ledger proves it paid for the journal's key
(:meth:`dpfast._release.Release.charge_resumed`).

When the release completes, the undo file is removed and then the journal is replaced (by
an atomic rename) with a one-record marker, ``released {JSON}``: the parameters and the
checksum of each released block, without the key. An in-place release of a file whose
cells are still exactly the released ones is refused (it would noise them twice).

Files no one else can plant. The journal, the undo file and the marker's temporary file are
created with ``O_EXCL | O_NOFOLLOW``, mode 0600, before the charge; an existing journal or
undo file is used only if it is a regular file of this user, with no permission for anyone
else and one link (else the release is refused before the charge: a journal planted by
another user would choose the key, or mark blocks done; a planted or hard-linked undo file
would receive the true counts). The directory must be writable by the caller; the undo
file and the released cells get their disk space (``posix_fallocate``) before the charge.

Durability. By default (``durability="process"``) nothing is synced: a killed process
loses nothing, since its writes are in the operating system's page cache, and the release
runs at the speed of that cache. ``durability="power"`` also survives a power loss or a
kernel crash: the saved block, every record and every released block are made durable
(``fdatasync``) in order, at the cost measured by ``bench/noisy_counts_memmap.py``.

The journal holds the release's key until the release completes: whoever reads it can
remove the noise of the cells already released. It is readable by its owner only.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ledger import decode, encode
from .files import (backing_file, block_sum, create_own, file_span, open_own, sync,
                    sync_directory, unnamed_file_map, write_all)

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["Journal", "backing_file", "block_sum", "file_span", "unnamed_file_map",
           "DURABILITY"]

JOURNAL_SUFFIX = ".dpfast-journal"
UNDO_SUFFIX = ".dpfast-undo"
#: The durability levels of a release into a file.
DURABILITY = ("process", "power")
# What must agree between an interrupted release and the call that resumes it.
RESUME_KEYS = ("func", "file", "offset", "nbytes", "shape", "dtype", "source", "noise",
               "epsilon", "delta", "rho", "sigma", "sensitivity", "clip", "block", "device",
               "inode", "size", "owner")
# Of those, the ones that say which file it is (the file was replaced if they differ).
FILE_KEYS = ("device", "inode", "size", "owner")
# Free space asked of the directory beyond the undo file (the journal's records).
SPARE_BYTES = 1 << 20


class Journal:
    """The journal of one release into the file at ``path`` (see the module documentation).

    Constructing it locks the data file (unless ``lock`` is false: a read-only look) and
    reads what is beside the file: an interrupted release (``resuming``; ``state``,
    ``key``, ``done``, ``pending``) or the marker of a completed one (``released``)."""

    def __init__(self, path: str, params: dict[str, Any], *, lock: bool = True,
                 durability: str = "process") -> None:
        self.path = path + JOURNAL_SUFFIX
        self.undo_path = path + UNDO_SUFFIX
        self.params = params
        self.durable = durability == "power"
        self._fd = -1
        self._undo_fd = -1
        self._undo_created = False
        self._journal_created = False
        # The data file, locked while this release runs: two processes releasing one file
        # at the same time would each noise it.
        self.data_fd = -1
        if lock:
            self.data_fd = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(self.data_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self.data_fd)
                raise ValueError(f"The file {path!r} is being released by another process "
                                 "(it holds the file's lock).") from None
        self.key: bytes | None = None
        self.done: set[int] = set()
        self.pending: tuple[int, str] | None = None      # (block, sum) saved, not done
        self.ledger: str | None = None       # the ledger charged for the release, if any
        self.state: dict[str, Any] = {}
        self.sums: dict[int, str] = {}       # block -> checksum of its released bytes
        self.released: dict[str, Any] | None = None     # the marker of a completed release
        try:
            self.resuming = self._read()
        except BaseException:
            self.close()
            raise

    @classmethod
    def for_release(cls, dst: NDArray[Any], params: dict[str, Any],
                    durability: str = "process") -> Journal | None:
        """The journal of a release into ``dst``; None if ``dst`` is not in a file."""
        where = backing_file(dst)
        if where is None:
            return None
        path, offset = where
        st = os.stat(path)
        return cls(path, {**params, "file": path, "offset": offset, "nbytes": dst.nbytes,
                          "shape": list(dst.shape), "dtype": dst.dtype.str,
                          "device": st.st_dev, "inode": st.st_ino, "owner": os.geteuid(),
                          "size": st.st_size},
                   durability=durability)

    # -- reading what is beside the file ---------------------------------------------------
    def _read(self) -> bool:
        """Load an interrupted release's journal; True if there is one to resume."""
        fd = open_own(self.path, os.O_RDONLY, "journal")
        if fd < 0:
            return False
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        records = [decode(line + b"\n") for line in data.split(b"\n")[:-1]]
        if data and not data.endswith(b"\n"):
            records.append(decode(data.rsplit(b"\n", 1)[-1]))
        if not records or not records[0][1]:
            # Killed while starting: no block was touched (blocks are touched only once the
            # start record is written). Nothing to resume; removed by the holder of the
            # file's lock (a reader without it may be watching a release start).
            if self.data_fd >= 0:
                self._remove()
            return False
        kind, _, body = records[0][0].partition(" ")
        start = _json(body) if kind in ("start", "released") else None
        if kind == "released" and isinstance(start, dict):
            self.released = start
            if self.data_fd >= 0:
                self._remove_stray_undo()
            return False
        if not isinstance(start, dict) or "key" not in start or "sources" not in start:
            raise ValueError(f"{self.path!r} is not a journal of this version of dpfast: "
                             "remove it only if the file beside it holds no interrupted "
                             "release.")
        self.state = start
        self.key = bytes.fromhex(start["key"])
        for payload, intact in records[1:]:
            if not intact:
                break                             # the last record, cut short: not written
            kind, *fields = payload.split(" ")
            if kind == "undo":
                self.pending = (int(fields[0]), fields[1])
            elif kind == "done":
                self.done.add(int(fields[0]))
                self.sums[int(fields[0])] = fields[1]
                self.pending = None
            else:
                raise ValueError(f"The journal {self.path!r} holds a record of unknown kind: "
                                 "refused (it was not written by this version of dpfast).")
        return True

    def mismatch(self) -> str | None:
        """What differs between the interrupted release and this call (None: the same)."""
        for k in RESUME_KEYS:
            if self.state.get(k) != self.params.get(k):
                return f"{k}={self.state.get(k)!r} (this call: {self.params.get(k)!r})"
        return None

    def resume_error(self, func: str) -> ValueError:
        if any(self.state.get(k) != self.params.get(k) for k in FILE_KEYS):
            return ValueError(
                f"The journal {self.path!r} belongs to an interrupted {self.state['func']} "
                f"release of another file at this path ({self.mismatch()}): the file was "
                "replaced since, so that release cannot be completed in it. Nothing was "
                "charged or drawn. Remove the journal (and the undo file) to release the "
                "new file, charged anew.")
        return ValueError(
            f"The file {self.params['file']!r} holds an interrupted {self.state['func']} "
            f"release (journal {self.path!r}) made with other arguments: "
            f"{self.mismatch()}. Call {func} again with the arguments of that release to "
            "complete it (the same noise, nothing drawn twice); only if the file has been "
            "restored from its source, remove the journal.")

    def check_resume(self, func: str, sources: list[str], released: list[str | None],
                     in_place: bool) -> None:
        """Refuse (before the charge) a resume that could publish true values or the same
        noise twice: ``sources`` are the checksums of the source's blocks now, ``released``
        those of the destination's blocks now (in place: the same blocks)."""
        start = self.state["sources"]
        changed = []
        for b, (now, then) in enumerate(zip(sources, start)):
            if b in self.done:
                ok = released[b] == self.sums[b] and (in_place or now == then)
            elif self.pending is not None and self.pending[0] == b and in_place:
                ok = now == then or self._undo_holds(then)
            else:
                ok = now == then
            if not ok:
                changed.append(b)
        if len(sources) != len(start):
            changed.append(-1)
        if changed:
            raise ValueError(
                f"The file {self.params['file']!r} holds an interrupted {func} release "
                f"(journal {self.path!r}), but {len(changed)} of its {len(start)} blocks "
                f"(the first: block {changed[0]}) no longer hold what that release left "
                "there: the cells were written since (fresh counts?) or damaged. Completing "
                "it would publish cells that were never noised, or noise new counts with "
                "noise already used; nothing was charged or drawn. Restore the file from "
                "its source and remove the journal (and the undo file) to make a new "
                "release, which is charged anew.")

    def _undo_holds(self, source_sum: str) -> bool:
        """Whether the undo file holds the block in progress exactly as the source was."""
        assert self.pending is not None
        fd = open_own(self.undo_path, os.O_RDONLY, "undo file")
        if fd < 0:
            return False
        try:
            size = self.block_bytes(self.pending[0])
            data = os.pread(fd, size, 0)
        finally:
            os.close(fd)
        raw = np.frombuffer(data, dtype=np.uint8)
        return len(data) == size and block_sum(raw) == self.pending[1] == source_sum

    def still_released(self, sums: list[str]) -> bool:
        """Whether the cells (the checksums of their blocks now) are exactly the ones this
        file's completed release left: same place in the file, same checksums."""
        if self.released is None or any(
                self.released.get(k) != self.params.get(k)
                for k in RESUME_KEYS if k not in ("epsilon", "sensitivity", "clip")):
            return False
        return self.released.get("blocks") == sums

    def released_error(self, func: str) -> ValueError:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.released["time"])) \
            if self.released else "?"
        return ValueError(
            f"The cells of {self.params['file']!r} were already released in place by "
            f"{func} (completed {when}, marker {self.path!r}): they are noisy counts, and "
            "releasing them again would add noise twice. Write the true counts into the "
            "file to release them; remove the marker only to noise these cells again.")

    def block_bytes(self, b: int) -> int:
        """The size in bytes of block ``b`` of the cells."""
        itemsize = np.dtype(self.params["dtype"]).itemsize
        cells = self.params["nbytes"] // itemsize
        block = self.params["block"]
        return int(max(0, min(block, cells - b * block)) * itemsize)

    # -- the check phase: files and space, before the charge -------------------------------
    def prepare(self, in_place: bool) -> None:
        """Everything about the files that can fail, checked (and the files made) before the
        charge: the directory is writable; the journal file is ours (an interrupted
        release's, or a completed one's marker, to be rewritten) or created now, so that no
        one can take its name between the charge and the start record; the undo file
        (in-place releases) is ours or new and has its space; the released cells have
        their space in the file (a sparse file's holes would fail the writes after the
        charge); the disk has room for the journal's records."""
        directory = os.path.dirname(self.path) or "."
        if not os.access(directory, os.W_OK | os.X_OK):
            raise PermissionError(
                f"The 'out' parameter names a file in {directory!r}, where this user cannot "
                "create files: a release into a file keeps its journal beside it. Nothing "
                "was charged or drawn.")
        try:
            if self.resuming or self.released is not None:
                self._fd = open_own(self.path, os.O_WRONLY | os.O_APPEND, "journal")
            if self._fd < 0:
                self._fd = create_own(self.path, os.O_WRONLY | os.O_APPEND)
                self._journal_created = True
            if in_place:
                fd = open_own(self.undo_path, os.O_RDWR, "undo file")
                self._undo_created = fd < 0
                self._undo_fd = fd if fd >= 0 else create_own(self.undo_path, os.O_RDWR)
                self._allocate(self._undo_fd, 0, self.block_bytes(0), self.undo_path)
            data = os.open(self.params["file"], os.O_WRONLY | os.O_NOFOLLOW)
            try:
                self._allocate(data, self.params["offset"], self.params["nbytes"],
                               self.params["file"])
            finally:
                os.close(data)
            free = os.statvfs(directory)
            if free.f_bavail * free.f_frsize < SPARE_BYTES:
                raise OSError(errno.ENOSPC, f"The disk holding {directory!r} is full: a "
                              "release into a file needs room for its journal. Nothing was "
                              "charged or drawn.")
        except BaseException:
            self.abandon()
            raise

    @staticmethod
    def _allocate(fd: int, offset: int, size: int, path: str) -> None:
        if size <= 0:
            return
        try:
            os.posix_fallocate(fd, offset, size)
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):
                return                      # a file system without allocation: nothing to do
            raise OSError(exc.errno, f"No space for {size:,} bytes of {path!r}, which a "
                          "release into a file needs: nothing was charged or drawn.") from None

    # -- writing ---------------------------------------------------------------------------
    def begin(self, key: bytes, sources: list[str]) -> None:
        """Record the start (parameters, the source's block checksums, key and ledger
        charged) before any block is touched."""
        self.key = key
        self.state = {**self.params, "key": key.hex(), "ledger": self.ledger,
                      "sources": sources, "pid": os.getpid(), "time": time.time()}
        if self.released is not None:            # a completed release's marker: rewritten
            os.ftruncate(self._fd, 0)            # (cut short, it reads as "killed while
            self.released = None                 # starting": nothing to resume)
        self._append("start " + json.dumps(self.state, separators=(",", ":")))
        if self.durable:
            sync_directory(self.path)

    def resume(self) -> None:
        """Continue the interrupted release's journal (opened by :meth:`prepare`)."""
        assert self._fd >= 0

    def _append(self, payload: str) -> None:
        write_all(self._fd, encode(payload))
        if self.durable:
            sync(self._fd)

    def save(self, b: int, block: NDArray[Any], checksum: str) -> None:
        """Save block ``b``'s bytes as they are (``checksum``: theirs, as the check before
        the charge found them, under the file's lock), before it is changed."""
        raw = np.ascontiguousarray(block).reshape(-1).view(np.uint8)
        write_all(self._undo_fd, raw, 0)
        if self.durable:
            sync(self._undo_fd)
        self.pending = (b, checksum)
        self._append(f"undo {b} {checksum}")

    def restore(self, b: int, block: NDArray[Any]) -> None:
        """Put back block ``b``'s saved bytes (after a crash while it was being changed)."""
        assert self.pending is not None and self.pending[0] == b
        data = os.pread(self._undo_fd, block.nbytes, 0)
        raw = np.frombuffer(data, dtype=np.uint8)
        if len(data) != block.nbytes or block_sum(raw) != self.pending[1]:
            raise ValueError(f"The saved block of the interrupted release in {self.path!r} "
                             "is damaged: the file cannot be completed; restore it from its "
                             "source and remove the journal.")
        block[...] = raw.view(block.dtype).reshape(block.shape)

    def mark_done(self, b: int, block: NDArray[Any]) -> None:
        """Block ``b`` (now ``block``) is released: record it with its checksum (with
        ``durability="power"``, after flushing the file's changes)."""
        if self.durable:
            sync(self.data_fd)
        self.sums[b] = block_sum(block)
        self._append(f"done {b} {self.sums[b]}")
        self.done.add(b)
        self.pending = None

    def finish(self) -> None:
        """The release is complete: remove the saved block, then replace the journal with
        the marker of a completed release (no key), atomically."""
        marker = {k: v for k, v in self.state.items() if k not in ("key", "sources")}
        marker.update(time=time.time(), blocks=[self.sums[b] for b in sorted(self.sums)])
        tmp = f"{self.path}.{secrets.token_hex(8)}.tmp"
        fd = create_own(tmp)
        try:
            write_all(fd, encode("released " + json.dumps(marker, separators=(",", ":"))))
            if self.durable:
                sync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        # The saved block (true counts) goes before the marker lands: killed in between,
        # the journal still says every block is done, and a rerun just finishes.
        self._close_undo()
        try:
            os.unlink(self.undo_path)
        except FileNotFoundError:
            pass
        os.replace(tmp, self.path)
        if self.durable:
            sync_directory(self.path)

    def close(self) -> None:
        """Close the journal and unlock the data file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._close_undo()
        if self.data_fd >= 0:
            os.close(self.data_fd)
            self.data_fd = -1

    def abandon(self) -> None:
        """Remove the files a release that never started made (its charge was refused, or
        its files could not be prepared)."""
        if self.key is not None:
            return
        for created, path in ((self._undo_created, self.undo_path),
                              (self._journal_created, self.path)):
            if created:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        self._undo_created = self._journal_created = False
        self._close_undo()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _remove_stray_undo(self) -> None:
        """A completed release's saved block, left by a kill just before its removal: true
        counts that nothing needs any more (if it is ours; else it is refused later)."""
        fd = open_own(self.undo_path, os.O_RDONLY, "undo file")
        if fd >= 0:
            os.close(fd)
            os.unlink(self.undo_path)

    def _close_undo(self) -> None:
        if self._undo_fd >= 0:
            os.close(self._undo_fd)
            self._undo_fd = -1

    def _remove(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        for p in (self.undo_path, self.path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def _json(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None
