"""The stop signals of a command (SIGINT, SIGTERM, SIGHUP): the first one interrupts it, later
ones wait for its clean-up, and the exit code is the shell's (128 + the signal's number)."""
import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["STOP_SIGNALS", "SIGNAL_WORDS", "Interrupted", "SignalGuard", "signals_held",
           "exit_status"]

#: Signals that end the command like Ctrl-C, and the shell's exit code of each (128 + n).
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))
SIGNAL_WORDS = {"SIGINT": "interrupted", "SIGTERM": "terminated", "SIGHUP": "hung up"}


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by the first stop signal (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class SignalGuard:
    """The command's handlers of the stop signals, installed for one ``main()`` call.

    The first signal raises :class:`Interrupted`; later ones (and any once clean-up has
    started) are only recorded, so that removing temporary files is never cut short. A
    signal the parent process ignored (``nohup``, a background job) stays ignored, and the
    previous handlers are put back when ``main()`` returns.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self.quiet = False
        self.previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return                   # handlers can only be set from the main thread
        for signum in STOP_SIGNALS:
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN:
                continue
            self.previous[signum] = previous
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        if self.received is None:
            self.received = signum
            if not self.quiet:
                raise Interrupted(signum)

    def restore(self) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self.previous.clear()


@contextmanager
def signals_held() -> Iterator[None]:
    """Stop signals held back (delivered on exit) while a file is created and recorded: an
    interruption then finds either no file or one the clean-up knows about."""
    if not hasattr(signal, "pthread_sigmask"):       # pragma: no cover - not POSIX
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def exit_status(signum: int) -> int:
    """The shell's exit code of a command ended by signal ``signum``."""
    return 128 + int(signum)
