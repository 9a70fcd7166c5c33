"""Who could have written a ledger: the files and directory a ledger is refused in when
someone else could have planted or changed it (see :mod:`dpfast.ledger`, "What the key
protects against")."""
from __future__ import annotations

import errno
import os
import stat

from .records import LedgerError

__all__ = ["check_directory", "check_file", "open_nofollow"]


def check_directory(path: str) -> None:
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


def check_file(st: os.stat_result, path: str, what: str, others_mask: int) -> None:
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


def open_nofollow(path: str, flags: int, what: str, mode: int = 0o600) -> int:
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LedgerError(f"The {what} {path!r} is a symbolic link: refused (it could "
                              "point anywhere). Name the file itself.") from None
        raise

