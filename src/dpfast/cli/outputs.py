"""The files a command writes: each created beside its target and renamed into place whole
(:class:`OutputFile`), checked before anything is charged, and never one that names the input,
the ledger or the ledger's key."""
import argparse
import csv
import os
import secrets
import stat
from pathlib import Path
from typing import Iterable, Sequence, TextIO

from ..ledger import KEY_SUFFIX
from .errors import CLIError
from .signals import signals_held

__all__ = ["OutputFile", "output_file", "check_png", "check_directory",
           "check_paths", "write_csv", "write_rows"]


def output_file(args: argparse.Namespace, path: str, option: str) -> "OutputFile":
    """An output file of this command (see OutputFile), discarded if the command fails."""
    target = OutputFile(path, option, args.force, args.outputs)
    return target


def check_png(args: argparse.Namespace, path: str) -> "OutputFile":
    """The --plot output file, refused unless its name ends in .png."""
    if Path(path).suffix.lower() != ".png":
        raise CLIError(f"--plot writes a PNG image: give a file name ending in .png. "
                       f"Got {path!r} instead.")
    return output_file(args, path, "--plot")


def check_directory(path: str, option: str) -> None:
    """Found before any release, so that its noisy values are not drawn only to be lost."""
    if not Path(path).resolve().parent.is_dir():
        raise CLIError(f"{option} {str(path)!r}: the directory {str(Path(path).parent)!r} "
                       "does not exist.")


# -- files the command must never write over ---------------------------------------------
def _identity(path: str) -> tuple[str, "tuple[int, int] | None"]:
    """(fully resolved path, (device, inode) when the path exists): two spellings of one
    file agree on the first (symlinks, dangling ones too, relative paths, symlinked
    directories) or the second (hard links)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(path)
    except OSError:
        return real, None
    return real, (st.st_dev, st.st_ino)


def _same_file(a: str, b: str) -> bool:
    (real_a, id_a), (real_b, id_b) = _identity(a), _identity(b)
    return real_a == real_b or (id_a is not None and id_a == id_b)


#: The file the ledger keeps its key in, beside the ledger itself.


def check_paths(args: argparse.Namespace) -> None:
    """Refuse, before anything is created, read or charged, an output that names the
    ledger, the ledger's key file, the input or another output, and a ledger that names the
    input: the command would replace the budget's history or the true records."""
    outputs = [(opt, getattr(args, dest)) for opt, dest in
               (("--out", "out"), ("--plot", "plot"), ("--json", "json"))
               if getattr(args, dest, None) is not None]
    ledger = getattr(args, "ledger", None)
    given = getattr(args, "file", None)
    protected: list[tuple[str, str, str]] = []
    if given is not None:
        protected.append((given, "the input file", "(it holds the true records)"))
    if ledger is not None:
        protected.append((ledger, "the --ledger file", "(it holds the budget's history)"))
        protected.append((ledger + KEY_SUFFIX, "the --ledger file's key file",
                          "(it keeps the ledger's key)"))
    for i, (opt, path) in enumerate(outputs):
        for other, what, why in protected + [(p, o, "(the command writes both)")
                                               for o, p in outputs[i + 1:]]:
            if _same_file(path, other):
                raise CLIError(f"{opt} {path!r} is {what} {why}: write the release to "
                               "another file.")
    if ledger is not None and given is not None and _same_file(ledger, given):
        raise CLIError(f"--ledger {ledger!r} is the input file: the budget's history and the "
                       "true records must be different files.")


def _create_exclusive(path: str) -> tuple[int, int]:
    """Create ``path`` empty, exclusively (never an existing file or a symlink), mode 0600;
    its (device, inode)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o600)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st.st_dev, st.st_ino


def _remove_if_ours(path: str, ident: "tuple[int, int] | None",
                    empty: bool = False) -> None:
    """Remove ``path`` if it is still the regular file we created (same device and inode
    when known, our user; and still empty when ``empty``): never a file someone put there
    since."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if (stat.S_ISREG(st.st_mode) and ident in (None, (st.st_dev, st.st_ino))
            and st.st_uid == os.geteuid() and not (empty and st.st_size)):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _is_mount_point(path: str) -> bool:
    """Whether ``path`` is mounted on (``os.replace`` over it fails with EBUSY). A file
    bind-mounted from the same file system has its parent's device, which
    ``os.path.ismount`` compares: the mount table names it."""
    if os.path.ismount(path):
        return True
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            table = f.read()
    except OSError:
        return False
    # Field 5 is the mount point, with space, tab, newline and backslash as octal escapes.
    escaped = (path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
               .replace("\n", "\\012"))
    return any(len(fields) > 4 and fields[4] == escaped
               for fields in (line.split(" ") for line in table.splitlines()))


class OutputFile:
    """A file the command writes: checked and opened (as a temporary file beside it) before
    anything is released, written, then renamed into place in one step (``commit``), so
    that the path holds the old file or the complete new one, never a part. Refuses an
    existing file unless ``force``; refuses, before anything is charged, what would make
    the final rename fail (a directory this user cannot write, a read-only file system, a
    mount point, another user's file in a sticky directory such as /tmp), and reserves a
    new name in a sticky directory (an empty file of ours, removed if the command fails) so
    that no one else can take it before the rename.

    ``registry`` (the command's list of outputs) records the file before anything is
    created, so that an interruption at any point finds what to remove."""

    def __init__(self, path: str, option: str, force: bool,
                 registry: "list[OutputFile]") -> None:
        check_directory(path, option)
        self.path, self.option = path, option
        self.tmp = ""
        self._tmp_id: tuple[int, int] | None = None
        self._reserved: tuple[int, int] | None = None
        directory = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        self.final = os.path.join(directory, os.path.basename(path))
        exists = os.path.lexists(self.final)
        if exists and not force:
            raise CLIError(f"{option} {path!r} exists: pass --force to replace it.")
        if exists and not os.path.isfile(self.final):
            raise CLIError(f"{option} {path!r} is not a regular file.")
        self._check_replaceable(directory, exists)
        registry.append(self)
        with signals_held():
            if not exists and self._sticky(directory):
                try:
                    self._reserved = _create_exclusive(self.final)
                except FileExistsError:
                    raise CLIError(f"{option} {path!r} was created by someone else while "
                                   "the command checked it: choose another name.") from None
            # The name is recorded before the file exists: a random name that no one can
            # have planted, created exclusively.
            self.tmp = os.path.join(directory, f".{os.path.basename(path)}."
                                               f"{secrets.token_hex(8)}.tmp")
            try:
                self._tmp_id = _create_exclusive(self.tmp)
            except OSError:
                self.tmp = ""
                raise

    @staticmethod
    def _sticky(directory: str) -> bool:
        return bool(os.stat(directory).st_mode & stat.S_ISVTX)

    def _check_replaceable(self, directory: str, exists: bool) -> None:
        """What the final ``os.replace`` needs, checked before the charge."""
        option, path = self.option, self.path
        if hasattr(os, "statvfs") and os.statvfs(directory).f_flag & os.ST_RDONLY:
            raise CLIError(f"{option} {path!r}: the directory {directory!r} is on a "
                           "read-only file system.")
        effective = {"effective_ids": True} if os.access in os.supports_effective_ids else {}
        if not os.access(directory, os.W_OK | os.X_OK, **effective):
            raise CLIError(f"{option} {path!r}: this user cannot write to the directory "
                           f"{directory!r}.")
        if exists and _is_mount_point(self.final):
            raise CLIError(f"{option} {path!r} is a mount point: a new file cannot be "
                           "renamed over it.")
        if exists and self._sticky(directory):
            owner = os.lstat(self.final).st_uid
            if owner != os.geteuid() and os.stat(directory).st_uid != os.geteuid():
                raise CLIError(f"{option} {path!r} belongs to another user in a shared "
                               f"directory (sticky bit, like /tmp) and cannot be replaced: "
                               "write to another name.")

    def commit(self) -> None:
        """Make the written temporary file durable and put it in place."""
        with open(self.tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(self.tmp, self.final)
        self.tmp = ""
        self._reserved = None

    def discard(self) -> None:
        """Remove the temporary file and an unused reservation (only files still ours)."""
        if self.tmp:
            # (No inode yet only if the interruption came as the file was created: its
            # random name, recorded first, is still ours.)
            _remove_if_ours(self.tmp, self._tmp_id)
            self.tmp = ""
        if self._reserved is not None:
            _remove_if_ours(self.final, self._reserved, empty=True)
            self._reserved = None


def write_csv(f: TextIO, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Write ``header`` and ``rows`` to ``f`` as CSV, one line each."""
    writer = csv.writer(f, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)


def write_rows(out: TextIO, target: "OutputFile | None", header: Sequence[str],
               rows: Iterable[Sequence[object]]) -> None:
    """The CSV on ``out`` (standard output), or, with --out, into the output's temporary
    file, then renamed into place."""
    if target is None:
        write_csv(out, header, rows)
        return
    with open(target.tmp, "w", newline="", encoding="utf-8") as f:
        write_csv(f, header, rows)
    target.commit()
