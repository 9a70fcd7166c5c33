"""The files of a release into a file: where an array's cells are in their file, the
checksums of their blocks, and files that only their owner can have made.

:func:`backing_file`, :func:`file_span` and :func:`unnamed_file_map` find the file (and the
byte span) a ``numpy.memmap`` view writes to; :func:`block_sum` is the checksum a journal
records of a block; :func:`open_own` opens an existing file of this user without following
a link, refusing one that someone else could have planted or can change, and
:func:`create_own` creates one (``O_EXCL | O_NOFOLLOW``, mode 0600); :func:`write_all`,
:func:`sync` and :func:`sync_directory` write and make durable. The journal that uses them
(its records, the checks before a resume, the marker of a completed release) is
:mod:`dpfast.releases.journal`.
"""
from __future__ import annotations

import errno
import mmap
import os
import stat
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["backing_file", "unnamed_file_map", "file_span", "block_sum", "open_own",
           "create_own", "write_all", "sync", "sync_directory"]

# Blocks of at least this many bytes are checksummed in two halves on two threads.
_SPLIT_BYTES = 1 << 20
_POOL: list[Any] = []


def sync(fd: int) -> None:
    """Make a file's written bytes durable (``fdatasync`` where the system has it)."""
    (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)


def sync_directory(path: str) -> None:
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
    changes memory only; an array over a raw ``mmap`` is not known to be in a file)."""
    base: Any = arr
    while base is not None and not (isinstance(base, np.memmap) and base.filename):
        base = getattr(base, "base", None)
    if base is None or base.mode == "c":
        return None
    mm = getattr(base, "_mmap", None)          # the mapping numpy made: starts at a page
    if mm is None:
        return None
    start = base.offset - base.offset % mmap.ALLOCATIONGRANULARITY
    mapped = np.frombuffer(mm, dtype=np.uint8)
    pos = arr.__array_interface__["data"][0] - mapped.__array_interface__["data"][0]
    return os.path.realpath(str(base.filename)), start + pos


def unnamed_file_map(arr: NDArray[Any]) -> bool:
    """Whether ``arr`` writes into a file through a ``numpy.memmap`` that does not know the
    file's name (made from an open file object without one, e.g. ``tempfile.TemporaryFile``):
    such a release could not keep a journal beside its file."""
    base: Any = arr
    while base is not None:
        if isinstance(base, np.memmap) and not base.filename and base.mode not in ("c", "r"):
            return True
        base = getattr(base, "base", None)
    return False


def file_span(arr: NDArray[Any]) -> tuple[int, int, int, int] | None:
    """(device, inode, first byte, end byte) of the cells of ``arr`` in its file, for an
    array in a file (:func:`backing_file`), else None."""
    where = backing_file(arr)
    if where is None:
        return None
    st = os.stat(where[0])
    return st.st_dev, st.st_ino, where[1], where[1] + arr.nbytes


def block_sum(block: NDArray[Any]) -> str:
    """The checksum of an array's bytes (hex digits), as journals record blocks. A large
    block is checksummed in two halves at once (the kernel releases the GIL), so that the
    journal's passes over the file keep up with the release's threads."""
    flat = np.ascontiguousarray(block).reshape(-1).view(np.uint8)
    if flat.size < _SPLIT_BYTES:
        return f"{_native.checksum(flat):016x}"
    half = flat.size // 2
    other = _checksum_pool().submit(_native.checksum, flat[half:])
    return f"{_native.checksum(flat[:half]):016x}{other.result():016x}"


def _checksum_pool() -> Any:
    """One worker thread for the second half of large checksums (made on first use; a
    forked child makes its own)."""
    from concurrent.futures import ThreadPoolExecutor
    pid = os.getpid()
    if not _POOL or _POOL[0][0] != pid:
        _POOL[:] = [(pid, ThreadPoolExecutor(1, thread_name_prefix="dpfast-checksum"))]
    return _POOL[0][1]


def open_own(path: str, flags: int, what: str) -> int:
    """Open an existing file of ours without following a link, refusing one that another
    user could have planted or can change (owner, permissions, links, kind); -1 if absent."""
    try:
        # O_NONBLOCK: a FIFO planted at the path must not hang the open (refused below).
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return -1
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(f"The {what} {path!r} is a symbolic link: refused (a link "
                             "planted there would redirect the release's files).") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise ValueError(f"The {what} {path!r} is not a regular file: refused before "
                             "anything was charged (dpfast creates these files itself).") \
                from None
        raise
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = "is not a regular file"
    elif st.st_uid != os.geteuid():
        problem = f"belongs to another user (uid {st.st_uid})"
    elif st.st_mode & 0o077:
        problem = f"can be read or written by others (mode {stat.S_IMODE(st.st_mode):o})"
    elif st.st_nlink != 1:
        problem = f"has {st.st_nlink} links"
    if problem is not None:
        os.close(fd)
        raise ValueError(f"The {what} {path!r} {problem}: refused before anything was "
                         "charged. dpfast creates these files itself, for its user only; "
                         "one that is not such a file may have been planted by someone "
                         "else. Inspect it; remove it only if no release of this file was "
                         "interrupted.")
    return fd


def create_own(path: str, flags: int = os.O_WRONLY) -> int:
    """Create a new file for this user only; refuse anything already at the path."""
    return os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)


def write_all(fd: int, data: Any, offset: int | None = None) -> None:
    """Write every byte (a short write is continued; an error raises)."""
    view = memoryview(data).cast("B")
    done = 0
    while done < len(view):
        n = (os.write(fd, view[done:]) if offset is None
             else os.pwrite(fd, view[done:], offset + done))
        if n <= 0:
            raise OSError(errno.EIO, "a write made no progress")
        done += n
