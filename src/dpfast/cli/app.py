"""Running one command: its arguments parsed, the stop signals guarded, the command run, and
its failure turned into one line on standard error and the exit code (2; 128 + n for
signal n), its unfinished output files removed."""
import csv
import signal
import sys
from typing import Sequence, TextIO

from .errors import message
from .outputs import check_paths
from .parser import build_parser
from .signals import SIGNAL_WORDS, Interrupted, SignalGuard, exit_status

__all__ = ["main"]


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    """Run one ``dpfast`` command; its exit code.

    Parameters
    ----------
    argv : sequence of str, optional
        The command's arguments (default: ``sys.argv[1:]``).
    out, err : text file, optional
        Where the command writes its results and its messages (default: standard output
        and standard error).

    Returns
    -------
    int
        0 on success, 1 when ``dpfast audit`` contradicts a claimed epsilon, 128 + n when
        stop signal n (SIGINT, SIGTERM, SIGHUP) ended the command. An error in the
        arguments or the input prints one line and exits with status 2 (``SystemExit``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    args.err = err or sys.stderr
    args.outputs = []
    guard = SignalGuard()
    guard.install()
    failure = None
    try:
        try:
            check_paths(args)
            code = int(args.func(args, out or sys.stdout))
            # From here a signal no longer interrupts: the command has finished.
            guard.quiet = True
            return code
        except KeyboardInterrupt:
            raise
        # Bad parameters or input (ValueError/TypeError from the library name the
        # parameter; OSError names the file): a message, not a traceback.
        except (TypeError, ValueError, OSError, csv.Error, MemoryError) as exc:
            guard.quiet = True
            failure = f"dpfast: error: {message(exc)}\n"
    except KeyboardInterrupt as exc:
        # Ctrl-C, SIGTERM or SIGHUP: one line and the shell's code for the signal. Files
        # not yet complete are removed below; a charge already made stays spent.
        guard.quiet = True
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        word = SIGNAL_WORDS.get(signal.Signals(signum).name, "interrupted")
        print(f"dpfast: {word}", file=args.err)
        return exit_status(signum)
    finally:
        # Further signals are only recorded from here on: the clean-up runs to its end.
        guard.quiet = True
        for target in args.outputs:
            target.discard()
        guard.restore()
    parser.exit(2, failure)
