"""Signals held back while a ledger-backed charge is made: no Python handler can run between
taking the locks, a charge's write, its sync and the accountant taking it in."""
from __future__ import annotations

import importlib
import signal
import threading
from typing import Any

__all__ = ["HeldSignals", "hold_signals", "release_signals"]

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

