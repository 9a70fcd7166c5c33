"""Crash-safe releases into files: a journal beside the file.

``dp.noisy_counts(m, epsilon=..., out=m)`` with ``m`` a ``numpy.memmap`` changes the file
block by block. A process killed part-way would leave a prefix noised and the rest true,
with nothing on disk to say so, and a rerun would noise the prefix twice (and the true
values of the prefix are gone). So a release into a file keeps a journal while it runs:

- ``<file>.dpfast-journal``: records in the ledger's format (one line each, with a CRC32,
  appended and ``fdatasync``'d, see :mod:`dpfast.ledger`):
  ``start {JSON}`` (the release's parameters, the identity of the cells in the file and the
  release's 256-bit key), then per block ``undo <b> <crc32>`` (block ``b``'s bytes as they
  were, saved in the undo file, before the block is touched; in-place releases only) and
  ``done <b> <crc32>`` (block ``b`` released and flushed to disk; the checksum of its
  released bytes);
- ``<file>.dpfast-undo``: the saved bytes of the block being released.

When the release completes, the undo file is removed and the journal is replaced (by an
atomic rename) with a one-record marker, ``released {JSON}``: the parameters and a CRC32 of
each released block, without the key. An in-place release of a file whose cells are still
exactly the released ones is refused (it would noise them twice, and a process killed just
after completing looks to its caller like one that did not); new counts written into the
file change the checksums and release normally. Calling the same release again on a file
with a journal resumes it: the block in progress is restored from its saved bytes, and the blocks
not done are released under the journal's key. Noise is cell-addressed (a function of the
key and the cell's index only), so the file ends exactly as an uninterrupted release would
have left it: every cell noised once, with the noise that release would have drawn. A call
with other parameters is refused before anything is charged or drawn.

The journal holds the release's key until the release completes: whoever reads it can
remove the noise of the cells already released. It is created readable by its owner only.
"""
from __future__ import annotations

import fcntl
import json
import mmap
import os
import time
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ledger import decode, encode

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["Journal", "backing_file"]

JOURNAL_SUFFIX = ".dpfast-journal"
UNDO_SUFFIX = ".dpfast-undo"
# What must agree between an interrupted release and the call that resumes it.
RESUME_KEYS = ("func", "file", "offset", "nbytes", "shape", "dtype", "source", "epsilon",
               "sensitivity", "clip", "block")


def _sync(fd: int) -> None:
    (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)


def _sync_directory(path: str) -> None:
    """Make a file's creation or removal durable."""
    try:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def backing_file(arr: NDArray[Any]) -> tuple[str, int] | None:
    """(path, byte offset in that file) of the cells of ``arr`` if it is a view of a
    ``numpy.memmap`` that writes to a file, else None (a copy-on-write map, mode "c",
    changes memory only)."""
    base: Any = arr
    while base is not None and not (isinstance(base, np.memmap) and base.filename):
        base = base.base
    if base is None or base.mode == "c":
        return None
    mm = getattr(base, "_mmap", None)          # the mapping numpy made: starts at a page
    if mm is None:
        return None
    start = base.offset - base.offset % mmap.ALLOCATIONGRANULARITY
    mapped = np.frombuffer(mm, dtype=np.uint8)
    pos = arr.__array_interface__["data"][0] - mapped.__array_interface__["data"][0]
    return os.path.realpath(str(base.filename)), start + pos


def _crc(block: NDArray[Any]) -> str:
    """CRC32 of an array's bytes, 8 hex digits."""
    raw = np.ascontiguousarray(block).reshape(-1).view(np.uint8).data
    return f"{zlib.crc32(raw) & 0xFFFFFFFF:08x}"


class Journal:
    """The journal of one release into the file holding ``dst`` (see the module
    documentation). ``state`` is the interrupted release found beside the file, if any."""

    def __init__(self, path: str, params: dict[str, Any], *, lock: bool = True) -> None:
        self.path = path + JOURNAL_SUFFIX
        self.undo_path = path + UNDO_SUFFIX
        self.params = params
        self._fd = -1
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
        self.pending: tuple[int, str] | None = None      # (block, crc) saved, not done
        self.ledger: str | None = None       # the ledger charged for the release, if any
        self.state: dict[str, Any] = {}
        self.crcs: dict[int, str] = {}       # block -> checksum of its released bytes
        self.released: dict[str, Any] | None = None     # the marker of a completed release
        self.resuming = self._read()

    @classmethod
    def for_release(cls, dst: NDArray[Any], params: dict[str, Any]) -> Journal | None:
        """The journal of a release into ``dst``; None if ``dst`` is not in a file."""
        where = backing_file(dst)
        if where is None:
            return None
        path, offset = where
        return cls(path, {**params, "file": path, "offset": offset, "nbytes": dst.nbytes,
                          "shape": list(dst.shape), "dtype": dst.dtype.str})

    # -- reading an interrupted release ----------------------------------------------------
    def _read(self) -> bool:
        """Load an interrupted release's journal; True if there is one to resume."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return False
        records = [decode(line + b"\n") for line in data.split(b"\n")[:-1]]
        if data and not data.endswith(b"\n"):
            records.append(decode(data.rsplit(b"\n", 1)[-1]))
        if not records or not records[0][1]:
            # Killed while starting: no block was touched (blocks are touched only once the
            # start record is durable). Nothing to resume; removed by the holder of the
            # file's lock (a reader without it may be watching a release start).
            if self.data_fd >= 0:
                self._remove()
            return False
        kind, _, body = records[0][0].partition(" ")
        start = json.loads(body) if kind in ("start", "released") else None
        if kind == "released" and isinstance(start, dict):
            self.released = start
            return False
        if not isinstance(start, dict) or "key" not in start:
            raise ValueError(f"{self.path!r} is not a dpfast journal: remove it only if the "
                             "file beside it holds no interrupted release.")
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
                self.crcs[int(fields[0])] = fields[1]
                self.pending = None
        return True

    def mismatch(self) -> str | None:
        """What differs between the interrupted release and this call (None: the same)."""
        for k in RESUME_KEYS:
            if self.state.get(k) != self.params.get(k):
                return f"{k}={self.state.get(k)!r} (this call: {self.params.get(k)!r})"
        return None

    def resume_error(self, func: str) -> ValueError:
        return ValueError(
            f"The file {self.params['file']!r} holds an interrupted {self.state['func']} "
            f"release (journal {self.path!r}) made with other arguments: "
            f"{self.mismatch()}. Call {func} again with the arguments of that release to "
            "complete it (the same noise, nothing drawn twice); only if the file has been "
            "restored from its source, remove the journal.")

    def still_released(self, flat: NDArray[Any], block: int) -> bool:
        """Whether the cells (``flat``, in blocks of ``block``) are exactly the ones this
        file's completed release left: same place in the file, same checksums."""
        if self.released is None or any(self.released.get(k) != self.params.get(k)
                                        for k in RESUME_KEYS if k not in ("epsilon",
                                                                          "sensitivity", "clip")):
            return False
        crcs = self.released.get("blocks", [])
        starts = range(0, flat.size, block)
        return len(crcs) == len(starts) and all(
            _crc(flat[i:i + block]) == c for i, c in zip(starts, crcs))

    def released_error(self, func: str) -> ValueError:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.released["time"])) \
            if self.released else "?"
        return ValueError(
            f"The cells of {self.params['file']!r} were already released in place by "
            f"{func} (completed {when}, marker {self.path!r}): they are noisy counts, and "
            "releasing them again would add noise twice. Write the true counts into the "
            "file to release them; remove the marker only to noise these cells again.")

    # -- writing ---------------------------------------------------------------------------
    def begin(self, key: bytes) -> None:
        """Record the start (parameters, key and ledger charged), durably, before any block
        is touched."""
        self.key = key
        self.state = {**self.params, "key": key.hex(), "ledger": self.ledger,
                      "pid": os.getpid(),
                      "time": time.time()}
        if self.released is not None:            # a completed release's marker
            os.unlink(self.path)
            self.released = None
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND,
                           0o600)
        self._append("start " + json.dumps(self.state, separators=(",", ":")))
        _sync_directory(self.path)

    def _append(self, payload: str) -> None:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        os.write(self._fd, encode(payload))
        _sync(self._fd)

    def save(self, b: int, block: NDArray[Any]) -> None:
        """Save block ``b``'s bytes as they are, durably, before it is changed."""
        raw = np.ascontiguousarray(block).reshape(-1).view(np.uint8).data
        fd = os.open(self.undo_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = raw
            while view:
                view = view[os.write(fd, view):]
            _sync(fd)
        finally:
            os.close(fd)
        self.pending = (b, _crc(block))
        self._append(f"undo {b} {self.pending[1]}")

    def restore(self, b: int, block: NDArray[Any]) -> None:
        """Put back block ``b``'s saved bytes (after a crash while it was being changed)."""
        with open(self.undo_path, "rb") as f:
            data = f.read()
        assert self.pending is not None and self.pending[0] == b
        if f"{zlib.crc32(data) & 0xFFFFFFFF:08x}" != self.pending[1] or \
                len(data) != block.nbytes:
            raise ValueError(f"The saved block of the interrupted release in {self.path!r} "
                             "is damaged: the file cannot be completed; restore it from its "
                             "source and remove the journal.")
        block[...] = np.frombuffer(data, dtype=block.dtype).reshape(block.shape)

    def mark_done(self, b: int, block: NDArray[Any]) -> None:
        """Block ``b`` (now ``block``) is released: flush the file's changes, then record
        it with its checksum."""
        _sync(self.data_fd)
        self.crcs[b] = _crc(block)
        self._append(f"done {b} {self.crcs[b]}")
        self.done.add(b)
        self.pending = None

    def finish(self) -> None:
        """The release is complete: replace the journal with the marker of a completed
        release (no key), atomically, and remove the saved block."""
        marker = {k: v for k, v in self.state.items() if k != "key"}
        marker.update(time=time.time(), blocks=[self.crcs[b] for b in sorted(self.crcs)])
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, encode("released " + json.dumps(marker, separators=(",", ":"))))
            _sync(fd)
        finally:
            os.close(fd)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        os.replace(tmp, self.path)
        try:
            os.unlink(self.undo_path)
        except FileNotFoundError:
            pass
        _sync_directory(self.path)

    def close(self) -> None:
        """Close the journal and unlock the data file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self.data_fd >= 0:
            os.close(self.data_fd)
            self.data_fd = -1

    def _remove(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        for p in (self.undo_path, self.path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
