"""dpfast command line.

  dpfast demo       DP releases of the bundled UCI Adult census data, shown next to the truth
  dpfast histogram  a DP histogram or category count of one column of a CSV or Parquet file
  dpfast aggregate  DP count, sum, mean, variance or std per key of a CSV or Parquet file
  dpfast info       the compiled kernels in use and the thread count
  dpfast bench      throughput of every mechanism family next to numpy's nearest equivalent
"""
import argparse
import codecs
import csv
import io
import json
import importlib
import math
import numbers
import os
import secrets
import signal
import stat
import sys
import threading
import time
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Sequence, TextIO

import numpy as np

from .. import __version__
from .. import _native
from ..accounting import Accountant
from ..datasets import load_adult
from ..ledger import KEY_SUFFIX
from ..mechanisms import laplace_mechanism, laplace_privacy_loss, max_error_bound
from ..releases import count_categories, histogram
from ..rng import default_threads
from ..samplers import MAX_DISCRETE_SCALE
from ..validation import MIN_SCALE

if TYPE_CHECKING:
    from types import ModuleType
    from typing import TypeVar

    from numpy.typing import ArrayLike, NDArray

    from ..groupby import GroupBy

    _T = TypeVar("_T")


class CLIError(ValueError):
    """A problem with the command's arguments or input: reported as one line, exit code 2."""


def _optional(module: str, package: str, purpose: str) -> "ModuleType":
    """Import an optional dependency, or fail with the pip command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise CLIError(f"{purpose} needs {package}, which is not installed: "
                       f"pip install {package}") from None


def _budget_for(epsilons: Iterable[float]) -> float:
    """Smallest float budget that the accountant's exact decimal arithmetic lets cover all."""
    total = sum(Fraction(repr(e)) for e in epsilons)
    budget = float(total)
    while Fraction(repr(budget)) < total:
        budget = math.nextafter(budget, math.inf)
    return budget


def _seed_note(seed: int) -> str:
    return (f"(seed {seed}: reproducible noise for demonstration; anyone who knows the seed "
            "can remove it,\n so real releases use the default, OS-keyed generator)")


# -- dpfast demo ------------------------------------------------------------------------
# Public parameters of the demo tables, fixed from the survey's design rather than the data:
# the extract holds people aged 17 and over in whole years, with ages top-coded at 90, so
# 10-year bins over [15, 95) hold every record without using the data's minimum or maximum.
DEMO_AGE_BINS = 8
DEMO_AGE_RANGE = (15, 95)
# The seven marital statuses of the CPS questionnaire (the data set's documentation).
DEMO_MARITAL = ("Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed",
                "Married-spouse-absent", "Married-AF-spouse")
DEMO_RELEASES = 3
DEMO_LABEL = "DEMO ONLY - a real release never shows true counts."


def _check_epsilon(eps: float) -> None:
    """Up front, so that a bad epsilon stops the command before it reads or prints anything."""
    if not MIN_SCALE <= 1.0 / eps <= MAX_DISCRETE_SCALE:
        raise CLIError(f"--epsilon must be in [{1 / MAX_DISCRETE_SCALE:g}, {1 / MIN_SCALE:g}] "
                       f"(discrete Laplace noise of scale 1/epsilon in [2^-900, 2^40]). Got "
                       f"{eps!r} instead.")


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    eps = args.epsilon
    _check_epsilon(eps)
    plot = None
    if args.plot is not None:
        # Before anything is spent or printed: a missing matplotlib ends the demo cleanly.
        _optional("matplotlib", "matplotlib", "--plot")
        plot = _check_png(args, args.plot)
    needed = _budget_for([eps] * DEMO_RELEASES)
    acct = _accountant(args, default_budget=needed)
    if not acct.check(needed):
        raise CLIError(f"The budget left ({_remaining_text(acct)}) cannot cover the demo's "
                       f"{DEMO_RELEASES} releases at epsilon = {eps:g}: nothing was released.")
    train, test = load_adult("train"), load_adult("test")
    ages = train["age"]
    marital = np.concatenate([train["marital-status"], test["marital-status"]])
    rng = None if args.seed is None else _native.ChaCha20(args.seed)

    # Every release is made before anything is printed, so that an error from the library
    # gives one message rather than a half-printed demo.
    true_over_50 = int(np.count_nonzero(ages > 50))
    noisy_over_50 = laplace_mechanism(true_over_50, sensitivity=1, epsilon=eps,
                                      accountant=acct, rng=rng)
    noisy_ages, edges = histogram(ages, bins=DEMO_AGE_BINS, range=DEMO_AGE_RANGE,
                                  epsilon=eps, accountant=acct, rng=rng)
    true_ages = np.histogram(ages, bins=edges)[0]
    noisy_marital = count_categories(marital, DEMO_MARITAL, epsilon=eps, accountant=acct,
                                     rng=rng)
    true_marital = np.array([np.count_nonzero(marital == c) for c in DEMO_MARITAL])
    eta = max(laplace_privacy_loss(1.0 / eps, 1.0, discrete=True) - eps, 0.0)
    age_labels = [f"[{lo:g}, {hi:g})" for lo, hi in zip(edges[:-1], edges[1:])]
    age_labels[-1] = age_labels[-1][:-1] + "]"

    def p(line: str = "") -> None:
        print(line, file=out)

    def table(heading: str, labels: Iterable[str], true: Iterable[Any],
              noisy: Iterable[Any]) -> None:
        rows = [(label, f"{int(t):,}", f"{int(n):,}", f"{int(n) - int(t):+,}")
                for label, t, n in zip(labels, true, noisy)]
        titles = (heading, "true", "noisy", "noisy - true")
        # Columns at least this wide, and two spaces wider than their widest entry (noise
        # of scale 1e9 at a tiny --epsilon makes long numbers).
        widths = [max(w, *(len(r[i]) + 2 for r in rows)) for i, w in enumerate((24, 10, 10, 15))]
        p(f"   {DEMO_LABEL}")
        for r in [titles, *rows]:
            p("   " + r[0].ljust(widths[0]) + "".join(c.rjust(w) for c, w in zip(r[1:], widths[1:])))

    p("dpfast demo: differentially private releases of the bundled UCI Adult census extract")
    p(f"(1994 Current Population Survey, CC BY 4.0): adult.data {len(ages):,} records, "
      f"adult.test {len(test['age']):,}.")
    p(f"Privacy budget: epsilon = {acct.epsilon:g} in total, for {DEMO_RELEASES} releases "
      f"at epsilon = {eps:g} each (--epsilon).")
    p(f"Each release adds discrete Laplace noise of scale 1/epsilon = {1 / eps:g} to every "
      "count.")
    p()
    p("1. How many people in adult.data are over 50?  One person changes this count by at "
      "most 1.")
    table("query", ["people over 50"], [true_over_50], [noisy_over_50])
    p(f"   95% of releases are within +/- {max_error_bound(1, epsilon=eps):,} of the true "
      "count.")
    p()
    p(f"2. Age histogram of adult.data: {DEMO_AGE_BINS} public bins of "
      f"{(edges[1] - edges[0]):g} years. One person is in one bin,")
    p("   so the whole histogram has sensitivity 1 and costs epsilon once.")
    table("age (years)", age_labels, true_ages, noisy_ages)
    p(f"   95% max-error bound: all {DEMO_AGE_BINS} noisy counts are within "
      f"+/- {max_error_bound(DEMO_AGE_BINS, epsilon=eps):,} of the truth, simultaneously.")
    p()
    p(f"3. Marital status, adult.data + adult.test ({len(marital):,} records): the "
      f"{len(DEMO_MARITAL)} public categories.")
    table("marital status", DEMO_MARITAL, true_marital, noisy_marital)
    p(f"   95% max-error bound: all {len(DEMO_MARITAL)} noisy counts are within "
      f"+/- {max_error_bound(len(DEMO_MARITAL), epsilon=eps):,} of the truth, "
      "simultaneously.")
    p()
    if args.ledger is None:
        p(f"Budget spent: epsilon = {acct.spent[0]:g} of {acct.epsilon:g} ({len(acct)} "
          "releases, sequential composition: the epsilons add up).")
    else:
        p(f"Budget spent: epsilon = {eps * DEMO_RELEASES:g} by this demo ({DEMO_RELEASES} "
          f"releases); ledger {args.ledger}: {_remaining_text(acct)}.")
    p(f"Certified privacy loss of each release, floating-point error included: "
      f"epsilon' <= {eps:g} + {eta:.1e}.")
    if args.seed is not None:
        p(_seed_note(args.seed))
    if plot is not None:
        _demo_plot(plot.tmp, eps, (age_labels, true_ages, noisy_ages),
                   (DEMO_MARITAL, true_marital, noisy_marital))
        plot.commit()
        p(f"Plot of true vs noisy counts (DEMO ONLY) written to {args.plot}.")
    return 0


def _accountant(args: argparse.Namespace, default_budget: float | None = None) -> Accountant:
    """The command's accountant: in memory for this run, or the durable budget in --ledger
    (created with --budget, or the command's default budget, when the file is new)."""
    if args.ledger is None:
        if args.budget is not None:
            raise CLIError("--budget sets the budget of a new --ledger file: give --ledger "
                           "too.")
        return Accountant(epsilon=default_budget if default_budget is not None else math.inf)
    acct = _existing_ledger(args)
    if acct is not None:
        return acct
    budget = args.budget if args.budget is not None else default_budget
    if budget is None:
        raise CLIError(f"--ledger {args.ledger!r} does not exist: pass --budget EPSILON to "
                       "create it with that total budget.")
    return _open_ledger(args.ledger, lambda: Accountant(epsilon=budget, ledger=args.ledger))


def _existing_ledger(args: argparse.Namespace) -> Accountant | None:
    """The accountant of the --ledger file if it exists (its budget must be --budget's,
    when given: a ledger's budget is fixed when it is created), else None."""
    _check_directory(args.ledger, "--ledger")
    if not os.path.lexists(args.ledger):
        return None
    acct = _open_ledger(args.ledger, lambda: Accountant.from_ledger(args.ledger))
    if args.budget is not None and acct.epsilon != args.budget:
        raise CLIError(f"--ledger {args.ledger!r} holds a budget of epsilon = "
                       f"{acct.epsilon:g}, not --budget {args.budget:g} (a ledger's "
                       "budget is fixed when it is created).")
    return acct


def _open_ledger(path: str, open_: "Callable[[], Accountant]") -> Accountant:
    """``open_()``, with an error that names the --ledger file when it cannot be opened or
    read (the library's own messages about the budget pass through unchanged)."""
    try:
        return open_()
    except OSError as exc:
        raise CLIError(f"--ledger {path!r} cannot be opened: {_os_reason(exc)}.") from None
    except ValueError as exc:
        text = _message(exc)
        if path in text:
            raise
        raise CLIError(f"--ledger {path!r}: {text}") from None


def _os_reason(exc: OSError) -> str:
    """The system's reason for an OSError ("Permission denied"), without the path it names
    (the message names the file by its option)."""
    return exc.strerror or _message(exc)


def _message(exc: BaseException) -> str:
    """An exception's message, or its name when it has none (``MemoryError()``)."""
    return str(exc) or type(exc).__name__


def _remaining_text(acct: Accountant) -> str:
    return (f"epsilon = {acct.spent[0]:g} spent of {acct.epsilon:g}, "
            f"{acct.remaining[0]:g} left")


def _output(args: argparse.Namespace, path: str, option: str) -> "OutputFile":
    """An output file of this command (see OutputFile), discarded if the command fails."""
    target = OutputFile(path, option, args.force, args.outputs)
    return target


def _check_png(args: argparse.Namespace, path: str) -> "OutputFile":
    if Path(path).suffix.lower() != ".png":
        raise CLIError(f"--plot writes a PNG image: give a file name ending in .png. "
                       f"Got {path!r} instead.")
    return _output(args, path, "--plot")


def _check_directory(path: str, option: str) -> None:
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
LEDGER_KEY_SUFFIX = KEY_SUFFIX


def _check_paths(args: argparse.Namespace) -> None:
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
        protected.append((ledger + LEDGER_KEY_SUFFIX, "the --ledger file's key file",
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


# -- signals ---------------------------------------------------------------------------------
#: Signals that end the command like Ctrl-C, and the shell's exit code of each (128 + n).
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))
SIGNAL_WORDS = {"SIGINT": "interrupted", "SIGTERM": "terminated", "SIGHUP": "hung up"}


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by the first stop signal (SIGINT, SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _SignalGuard:
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
def _signals_held() -> Iterator[None]:
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


def _exit_status(signum: int) -> int:
    return 128 + int(signum)


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
        _check_directory(path, option)
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
        with _signals_held():
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


def _demo_plot(path: str, eps: float, ages: "tuple[Sequence[str], ArrayLike, ArrayLike]",
               marital: "tuple[Sequence[str], ArrayLike, ArrayLike]") -> None:
    """Grouped bars, true next to noisy, for the age histogram and the marital table."""
    _optional("matplotlib", "matplotlib", "--plot")
    # The object-oriented API with the Agg canvas: no display needed, and no global pyplot
    # backend switched under a caller who runs the demo from a notebook.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    width = 0.4
    for ax, (labels, true, noisy), title in zip(
            fig.subplots(1, 2), (ages, marital),
            ("Age histogram, adult.data", "Marital status, adult.data + adult.test")):
        x = np.arange(len(labels))
        ax.bar(x - width / 2, true, width, label="true (DEMO ONLY: never released)",
               color="0.65")
        ax.bar(x + width / 2, noisy, width, label=f"noisy (epsilon = {eps:g})",
               color="tab:blue")
        ax.set_xticks(x, labels, rotation=30, ha="right")
        ax.set_ylabel("people")
        ax.set_title(title)
        ax.legend()
    fig.suptitle(f"dpfast demo: true vs noisy counts, epsilon = {eps:g} per table. "
                 "DEMO ONLY - a real release never shows true counts.")
    fig.savefig(path, format="png", dpi=100)


# -- dpfast histogram -------------------------------------------------------------------
MISSING = ("", "?")
OTHER_LABEL = "(other)"
# Error messages name a record's line, never its value: the records are what the release
# protects, and messages end up in logs.
NOT_SHOWN = "(Values are not shown: they are the records being released.)"


def _read_column(path: str, column: str,
                 encoding: str) -> tuple[Sequence[object], Callable[[int], str]]:
    """(values, where): the column's raw values, and where(i) naming record i's position."""
    if not Path(path).is_file():
        why = ("it is a directory" if Path(path).is_dir() else
               "it does not exist" if not os.path.lexists(path) else
               "a symbolic link to nothing" if Path(path).is_symlink() and not Path(path).exists()
               else "not a regular file")
        raise CLIError(f"FILE {path!r} is not a file ({why}).")
    if Path(path).suffix.lower() == ".parquet":
        return _read_parquet_column(path, column)
    return _read_csv_column(path, column, encoding)


def _decode(path: str, encoding: str) -> str:
    """The file's text; an error naming the line of the first byte that is not valid in
    ``encoding``. UTF-8 files may start with a byte-order mark (spreadsheet exports), which
    would otherwise become part of the first column's name."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise CLIError(f"FILE {path!r} cannot be read: {_os_reason(exc)}.") from None
    codec = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding
    try:
        return raw.decode(codec)
    except UnicodeDecodeError as exc:
        # The byte's position, never the byte: it is part of a record.
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CLIError(f"{path}, line {line}: the byte at offset {exc.start} of the file "
                       f"(byte {column} of the line) is not valid {encoding} text. Pass "
                       "--encoding with the file's encoding (e.g. --encoding latin-1 or "
                       "--encoding cp1252).") from None


def _column_index(header: list[str], column: str, path: str, where: str) -> int:
    """The column's index in ``header`` (read at ``where``). The header's names are never
    shown: a file without a header row would show its first record."""
    if column not in header:
        raise CLIError(f"--column {column!r} is not a column of {path} ({where} has "
                       f"{len(header)} column(s); names are compared exactly, surrounding "
                       "spaces ignored, and are not shown here).")
    if header.count(column) > 1:
        raise CLIError(f"--column {column!r} names {header.count(column)} columns of {path}; "
                       "column names must be unique.")
    return header.index(column)


def _read_csv_column(path: str, column: str,
                     encoding: str) -> tuple[list[str], Callable[[int], str]]:
    values, lines = [], []
    with io.StringIO(_decode(path, encoding), newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise CLIError(f"{path}, line 1: not valid CSV: {_message(exc)}.") from None
        if header is None:
            raise CLIError(f"FILE {path!r} is empty: a CSV file needs a header row naming "
                           "its columns.")
        idx = _column_index([h.strip() for h in header], column, path,
                            "its header row, line 1,")
        try:
            for row in reader:
                if not row:
                    continue
                if idx >= len(row):
                    raise CLIError(f"{path}, line {reader.line_num}: {len(row)} field(s), "
                                   f"so no value for --column {column!r} (field {idx + 1}).")
                values.append(row[idx])
                lines.append(reader.line_num)
        except csv.Error as exc:
            # The csv module's messages describe the fault ("field larger than field
            # limit"), never the field.
            raise CLIError(f"{path}, line {reader.line_num}: not valid CSV: "
                           f"{_message(exc)}.") from None
    return values, lambda i: f"{path}, line {lines[i]}"


def _read_parquet_column(path: str,
                         column: str) -> tuple[list[Any], Callable[[int], str]]:
    pq = _optional("pyarrow.parquet", "pyarrow", "Reading a Parquet file")
    try:
        names = list(pq.read_schema(path).names)
    except OSError as exc:
        if exc.errno is None:      # pyarrow's own OSError: the text may quote the file
            raise CLIError(f"FILE {path!r} is not a readable Parquet file "
                           f"({type(exc).__name__}).") from None
        raise CLIError(f"FILE {path!r} cannot be read: {_os_reason(exc)}.") from None
    except Exception as exc:       # pyarrow's errors (ArrowInvalid, ...): not Parquet
        raise CLIError(f"FILE {path!r} is not a readable Parquet file "
                       f"({type(exc).__name__}).") from None
    _column_index(names, column, path, "its schema")
    try:
        values = pq.read_table(path, columns=[column]).column(column).to_pylist()
    except Exception as exc:       # a corrupt row group or page; Arrow's text may quote data
        raise CLIError(f"FILE {path!r}: column {column!r} cannot be read as Parquet "
                       f"({type(exc).__name__}).") from None
    return values, lambda i: f"{path}, row {i + 1}"


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, str) and value.strip() in MISSING)


def _missing_error(where: str, value: object, column: str) -> CLIError:
    # Only the kind of missing value: a cell that holds "  ?" would be shown as data.
    shown = ("(null)" if value is None else "(empty)" if not str(value).strip()
             else repr(str(value).strip()))
    return CLIError(f"{where}: missing value {shown} in column {column!r}. Pass "
                    "--drop-missing to drop records with a missing value before counting.")


def _numeric_values(values: Iterable[object], where: Callable[[int], str], column: str,
                    drop_missing: bool) -> "NDArray[np.int64] | NDArray[np.float64]":
    """The column as int64 (every value an integer) or float64; missing values dropped or
    an error."""
    parsed: list[float] = []
    x: Any  # int or float: a parsed str, or a numbers.Real from a Parquet file
    for i, v in enumerate(values):
        if _is_missing(v):
            if drop_missing:
                continue
            raise _missing_error(where(i), v, column)
        if isinstance(v, str):
            try:
                x = int(v)
            except ValueError:
                try:
                    x = float(v)
                except ValueError:
                    raise CLIError(f"{where(i)}: the value in column {column!r} is not a "
                                   "number (--bins counts numbers; use --categories for "
                                   f"text). {NOT_SHOWN}") from None
        elif isinstance(v, numbers.Real) and not isinstance(v, bool):
            x = v
        else:
            raise CLIError(f"{where(i)}: the value in column {column!r} is not a number "
                           f"({type(v).__name__}). {NOT_SHOWN}")
        if isinstance(x, float) and not math.isfinite(x):
            raise CLIError(f"{where(i)}: the value in column {column!r} is not a finite "
                           f"number. {NOT_SHOWN}")
        parsed.append(x)
    if all(isinstance(x, numbers.Integral) and -2**63 <= x < 2**63 for x in parsed):
        # Integer records take the exact integer counting path.
        return np.array(parsed, dtype=np.int64)
    return np.array(parsed, dtype=np.float64)


def _category_values(values: Iterable[object], where: Callable[[int], str], column: str,
                     categories: Iterable[str], other: bool,
                     drop_missing: bool) -> "NDArray[np.object_]":
    """The column as text; None where the value goes to the "other" cell."""
    listed = set(categories)
    kept: list[str | None] = []
    for i, v in enumerate(values):
        text = None if v is None else str(v).strip()
        if text in listed:
            kept.append(text)
        elif _is_missing(v):
            if drop_missing:
                continue
            if not other:
                raise _missing_error(where(i), v, column)
            kept.append(None)
        elif other:
            kept.append(None)
        else:
            raise CLIError(f"{where(i)}: the value of column {column!r} is not in "
                           f"--categories. Add it to the list, or pass --other to count "
                           f"values outside the list in an extra {OTHER_LABEL!r} row. "
                           f"{NOT_SHOWN}")
    return np.array(kept, dtype=object)


def _parse_bins(text: str) -> "tuple[int, tuple[float, float]] | tuple[list[float], None]":
    """(bins, range) for dp.histogram, from "e0,e1,...,ek" or "N:LOW:HIGH"."""
    rule = ("--bins must be comma-separated increasing edges such as 0,18,65,100, or "
            "N:LOW:HIGH for N equal bins over the public range [LOW, HIGH]")
    if ":" in text:
        parts = text.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            n, lo, hi = int(parts[0]), float(parts[1]), float(parts[2])
        except ValueError:
            raise CLIError(f"{rule}. Got {text!r} instead.") from None
        if n < 1 or not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise CLIError(f"{rule}, with N >= 1 and finite LOW < HIGH. Got {text!r} "
                           "instead.")
        return n, (lo, hi)
    try:
        edges = [float(e) for e in text.split(",")]
    except ValueError:
        raise CLIError(f"{rule}. Got {text!r} instead.") from None
    if len(edges) < 2 or not all(math.isfinite(e) for e in edges) \
            or any(b <= a for a, b in zip(edges, edges[1:])):
        raise CLIError(f"{rule}: at least two edges, finite and strictly increasing. "
                       f"Got {text!r} instead.")
    return edges, None


def _parse_categories(text: str, other: bool) -> list[str]:
    cats = [c.strip() for c in text.split(",")]
    if any(not c for c in cats):
        raise CLIError(f"--categories must be comma-separated non-empty names. Got {text!r} "
                       "instead.")
    dupes = sorted({c for c in cats if cats.count(c) > 1})
    if dupes:
        raise CLIError(f"--categories names {dupes[0]!r} more than once. Got {text!r} "
                       "instead.")
    if other and OTHER_LABEL in cats:
        raise CLIError(f"--categories must not contain {OTHER_LABEL!r} together with --other "
                       f"(it names the extra row). Got {text!r} instead.")
    return cats


def _edge_text(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def _histogram(args: argparse.Namespace, out: TextIO) -> int:
    if args.other and args.categories is None:
        raise CLIError("--other only applies to --categories.")
    bins: Any  # int with a public range, or the list of edges: see _parse_bins
    if args.bins is not None:
        bins, public_range = _parse_bins(args.bins)
        cells = bins if public_range is not None else len(bins) - 1
    else:
        cats = _parse_categories(args.categories, args.other)
        cells = len(cats) + bool(args.other)
    _check_epsilon(args.epsilon)
    bound = max_error_bound(cells, epsilon=args.epsilon, beta=args.beta)
    target = None if args.out is None else _output(args, args.out, "--out")
    acct = _accountant(args)
    values, where = _read_column(args.file, args.column, args.encoding)

    common = dict(epsilon=args.epsilon, accountant=acct, postprocess=args.postprocess,
                  rng=args.seed)
    data: NDArray[Any]
    if args.bins is not None:
        data = _numeric_values(values, where, args.column, args.drop_missing)
        noisy, edges = histogram(data, bins=bins, range=public_range, **common)
        header = ["bin_low", "bin_high", "noisy_count"]
        rows = [[_edge_text(lo), _edge_text(hi), int(n)]
                for lo, hi, n in zip(edges[:-1], edges[1:], noisy)]
    else:
        data = _category_values(values, where, args.column, cats, args.other,
                                args.drop_missing)
        noisy = count_categories(data, cats, other=args.other, **common)
        header = ["category", "noisy_count"]
        labels = cats + [OTHER_LABEL] * bool(args.other)
        rows = [[c, int(n)] for c, n in zip(labels, noisy)]

    if target is None:
        _write_csv(out, header, rows)
    else:
        with open(target.tmp, "w", newline="", encoding="utf-8") as f:
            _write_csv(f, header, rows)
        target.commit()
    err = args.err
    where_to = "standard output" if args.out is None else args.out
    print(f"dpfast histogram: {len(rows)} noisy counts of column {args.column!r} of "
          f"{args.file} written to {where_to}; epsilon = {args.epsilon:g} spent.", file=err)
    if args.ledger is not None:
        print(f"Ledger {args.ledger}: {_remaining_text(acct)}.", file=err)
    after = (f" (the noise's bound; --postprocess {args.postprocess} changes the counts)"
             if args.postprocess else "")
    print(f"Accuracy: with probability {1 - args.beta:.4g}, every noisy count is within "
          f"+/- {bound:,} of its true count{after}.", file=err)
    if args.seed is not None:
        print(_seed_note(args.seed), file=err)
    return 0


def _write_csv(f: TextIO, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    writer = csv.writer(f, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)


# -- dpfast aggregate -------------------------------------------------------------------
#: The statistics of a value column, in the order of their options on the command line.
AGG_STATISTICS = ("sum", "mean", "variance", "std")
#: A Parquet file of more rows shows a progress bar on standard error (tqdm, if installed),
#: as noisy_counts does past its own size.
AGG_PROGRESS_ROWS = 1 << 24
#: Rows per batch when a Parquet file is read (one row group may hold several).
AGG_BATCH_ROWS = 1 << 20


class _StatisticAction(argparse.Action):
    """--count / --sum / --mean / --variance / --std: appended to one list, so that the
    output's columns follow the command line."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        stats = list(getattr(namespace, self.dest, None) or [])
        stats.append((self.const, option_string, values))
        setattr(namespace, self.dest, stats)


class _AggSpec:
    """One statistic of the command: its output column, its value column and bounds (None
    for the count) and the option that asked for it (for messages)."""

    __slots__ = ("stat", "column", "bounds", "option", "name")

    def __init__(self, stat: str, column: str | None, bounds: tuple[float, float] | None,
                 option: str) -> None:
        self.stat, self.column, self.bounds, self.option = stat, column, bounds, option
        self.name = "count" if column is None else f"{stat}_{column}"


def _parse_stat(option: str, text: str) -> tuple[str, tuple[float, float]]:
    """(column, (lo, hi)) from COL:LO:HI (the column may itself hold colons)."""
    rule = (f"{option} must be COL:LO:HI, a column and its public clamping bounds, finite "
            "numbers with LO < HI (e.g. salary:0:300000)")
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise CLIError(f"{rule}. Got {text!r} instead.")
    try:
        lo, hi = float(parts[1]), float(parts[2])
    except ValueError:
        raise CLIError(f"{rule}: LO and HI must be numbers. Got {text!r} instead.") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise CLIError(f"{rule}: LO and HI must be finite. Got {text!r} instead.")
    if not lo < hi:
        raise CLIError(f"{rule}: LO must be < HI. Got {text!r} instead.")
    return parts[0], (lo, hi)


def _agg_specs(args: argparse.Namespace) -> list[_AggSpec]:
    """The statistics asked for, in command-line order; one set of bounds per column."""
    if not args.stats:
        raise CLIError("dpfast aggregate needs at least one statistic: --count, --sum, "
                       "--mean, --variance or --std COL:LO:HI.")
    specs: list[_AggSpec] = []
    bounds: dict[str, tuple[float, float]] = {}
    for stat, option, text in args.stats:
        if stat == "count":
            spec = _AggSpec("count", None, None, option)
        else:
            column, b = _parse_stat(option, text)
            if bounds.setdefault(column, b) != b:
                raise CLIError(f"{option} {text!r}: column {column!r} is given other bounds "
                               "by another option; a column is clamped to one public range "
                               "(give the same LO:HI to each of its statistics).")
            spec = _AggSpec(stat, column, b, option)
        if any(s.name == spec.name for s in specs):
            raise CLIError(f"{option}: the statistic {spec.name!r} is asked for twice.")
        specs.append(spec)
    for s in specs:
        if s.column is not None and s.column in (args.by, args.privacy_unit):
            raise CLIError(f"{s.option} {s.column!r}: the column is also the "
                           f"{'--by' if s.column == args.by else '--privacy-unit'} column; "
                           "a value column must be another column.")
    if args.by in {s.name for s in specs}:
        raise CLIError(f"--by {args.by!r} is also the name of an output column: rename the "
                       "column in the file.")
    return specs


def _check_aggregate_options(args: argparse.Namespace) -> None:
    """The options that need no file, checked before anything is read or created."""
    if args.privacy_unit is not None and args.privacy_unit == args.by:
        raise CLIError("--privacy-unit and --by must be different columns.")
    if args.privacy_unit is None and (args.max_groups is not None
                                      or args.max_rows is not None):
        raise CLIError("--max-groups and --max-rows bound each person's rows and need "
                       "--privacy-unit; without one each row is a person.")
    if args.epsilon is None and args.rho is None:
        raise CLIError("dpfast aggregate needs --epsilon (with --delta for Gaussian noise or "
                       "private keys) or, for Gaussian noise and public --keys, --rho.")
    if args.keys is None:
        if args.epsilon is None or args.delta is None:
            raise CLIError("Keys selected privately (no --keys) need --epsilon and --delta "
                           "> 0: the selection of the keys costs delta. Or give the public "
                           "keys with --keys.")
        if args.rho is not None:
            raise CLIError("--rho applies with public --keys: keys selected privately are "
                           "paid for in --epsilon and --delta.")
    elif args.selection is not None or args.selection_rule != "auto":
        raise CLIError("--selection and --selection-rule are about the key selection: they "
                       "apply only to keys selected privately (no --keys).")
    if args.rho is not None and args.noise != "gaussian":
        raise CLIError("--rho is a zCDP budget, for --noise gaussian.")
    if args.delta is not None and args.noise == "laplace" and args.keys is not None:
        raise CLIError("--delta applies to --noise gaussian or to keys selected privately "
                       "(no --keys); Laplace noise over public keys is pure epsilon-DP.")
    if args.ledger is None and (args.budget is not None or args.budget_delta is not None):
        raise CLIError("--budget and --budget-delta set the budget of a new --ledger file: "
                       "give --ledger too.")


def _agg_header(path: str) -> tuple[list[str], "Any | None"]:
    """(column names, Arrow schema for Parquet or None for CSV), reading only the header."""
    if not Path(path).is_file():
        why = ("it is a directory" if Path(path).is_dir() else
               "it does not exist" if not os.path.lexists(path) else "not a regular file")
        raise CLIError(f"FILE {path!r} is not a file ({why}).")
    if Path(path).suffix.lower() == ".parquet":
        pq = _optional("pyarrow.parquet", "pyarrow", "Reading a Parquet file")
        try:
            schema = pq.read_schema(path)
        except OSError as exc:
            if exc.errno is not None:
                raise CLIError(f"FILE {path!r} cannot be read: {_os_reason(exc)}.") from None
            raise CLIError(f"FILE {path!r} is not a readable Parquet file "
                           f"({type(exc).__name__}).") from None
        except Exception as exc:     # ArrowInvalid, ...: the text may quote the file
            raise CLIError(f"FILE {path!r} is not a readable Parquet file "
                           f"({type(exc).__name__}).") from None
        return list(schema.names), schema
    _optional("pyarrow.csv", "pyarrow", "dpfast aggregate")
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            header = next(csv.reader(f), None)
    except OSError as exc:
        raise CLIError(f"FILE {path!r} cannot be read: {_os_reason(exc)}.") from None
    except UnicodeDecodeError:
        raise CLIError(f"{path}, line 1: the header row is not valid UTF-8 text.") from None
    except csv.Error as exc:
        raise CLIError(f"{path}, line 1: not valid CSV: {_message(exc)}.") from None
    if header is None:
        raise CLIError(f"FILE {path!r} is empty: a CSV file needs a header row naming its "
                       "columns.")
    return header, None


def _agg_columns(args: argparse.Namespace, specs: list[_AggSpec],
                 names: list[str]) -> dict[str, str]:
    """Each column the command reads -> the option naming it (checked against the header,
    whose names are never shown: a file without one would show its first record)."""
    wanted = {args.by: "--by"}
    if args.privacy_unit is not None:
        wanted[args.privacy_unit] = "--privacy-unit"
    for s in specs:
        if s.column is not None:
            wanted.setdefault(s.column, s.option)
    for column, option in wanted.items():
        count = names.count(column)
        if count == 0:
            raise CLIError(f"{option} {column!r} is not a column of {args.file} (its header "
                           f"has {len(names)} column(s); names are compared exactly and are "
                           "not shown here).")
        if count > 1:
            raise CLIError(f"{option} {column!r} names {count} columns of {args.file}; "
                           "column names must be unique.")
    return wanted


def _agg_schema(args: argparse.Namespace, specs: list[_AggSpec],
                file_schema: "Any | None") -> Any:
    """The Arrow schema of the table the release reads: keys and privacy unit as text (CSV)
    or their own type (Parquet, dictionaries decoded), value columns as float64."""
    import pyarrow as pa
    values = [s.column for s in specs if s.column is not None]
    fields = []
    for column in [args.by] + ([args.privacy_unit] if args.privacy_unit else []):
        kind = pa.string()
        if file_schema is not None:
            kind = file_schema.field(column).type
            if pa.types.is_dictionary(kind):
                kind = kind.value_type
            if pa.types.is_nested(kind):
                option = "--by" if column == args.by else "--privacy-unit"
                raise CLIError(f"{option} {column!r}: a column of type {kind} cannot be a "
                               "key (a list or struct column).")
        fields.append(pa.field(column, kind))
    for column in dict.fromkeys(values):
        if file_schema is not None:
            kind = file_schema.field(column).type
            if pa.types.is_dictionary(kind):
                kind = kind.value_type
            if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                    or pa.types.is_decimal(kind)):
                option = next(s.option for s in specs if s.column == column)
                raise CLIError(f"{option} {column!r}: the column holds {kind}, not numbers.")
        fields.append(pa.field(column, pa.float64()))
    return pa.schema(fields)


def _agg_keys(args: argparse.Namespace, schema: Any) -> "list[Any] | None":
    """The public --keys, as values of the --by column's type."""
    if args.keys is None:
        return None
    import pyarrow as pa
    texts = [k.strip() for k in args.keys.split(",")]
    if any(not k for k in texts):
        raise CLIError(f"--keys must be comma-separated non-empty keys. Got {args.keys!r} "
                       "instead.")
    if len(set(texts)) != len(texts):
        raise CLIError(f"--keys names a key more than once. Got {args.keys!r} instead.")
    kind = schema.field(args.by).type
    try:
        keys = pa.array(texts, pa.string()).cast(kind)
    except Exception:       # Arrow's cast errors (the text is public: the --keys given)
        raise CLIError(f"--keys {args.keys!r}: not every key is a value of the --by column's "
                       f"type ({kind}).") from None
    out: list[Any] = list(keys.to_numpy(zero_copy_only=False))
    if len({*out}) != len(out):
        raise CLIError(f"--keys names a key more than once (as {kind}). Got {args.keys!r} "
                       "instead.")
    return out


def _agg_progress(rows: int, err: TextIO) -> Any:
    """A progress bar over ``rows`` rows (tqdm, if installed) for a large file, else None."""
    if rows <= AGG_PROGRESS_ROWS:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=rows, unit="row", unit_scale=True, desc="dpfast aggregate", file=err)


def _agg_read(args: argparse.Namespace, schema: Any, names: list[str]) -> Any:
    """The table of the columns in ``schema`` (only those read), typed as ``schema`` says;
    errors name the option and the record, never a value."""
    import pyarrow as pa
    path = args.file
    if Path(path).suffix.lower() == ".parquet":
        import pyarrow.parquet as pq
        try:
            pf = pq.ParquetFile(path)
            bar = _agg_progress(pf.metadata.num_rows, args.err)
            batches = []
            try:
                for batch in pf.iter_batches(batch_size=AGG_BATCH_ROWS,
                                             columns=schema.names):
                    batches.append(batch)
                    if bar is not None:
                        bar.update(batch.num_rows)
            finally:
                if bar is not None:
                    bar.close()
            table = pa.Table.from_batches(batches) if batches else \
                pf.schema_arrow.empty_table().select(schema.names)
            return pa.table({f.name: _agg_cast(table.column(f.name), f.type)
                             for f in schema})
        except OSError as exc:
            if exc.errno is not None:
                raise CLIError(f"FILE {path!r} cannot be read: {_os_reason(exc)}.") from None
            raise CLIError(f"FILE {path!r}: the columns cannot be read as Parquet "
                           f"({type(exc).__name__}).") from None
        except Exception as exc:  # a corrupt row group or page; Arrow's text may quote data
            raise CLIError(f"FILE {path!r}: the columns cannot be read as Parquet "
                           f"({type(exc).__name__}).") from None
    import pyarrow.csv as pacsv
    # Only the empty field is missing ("NA" may be a key); keys stay the file's text.
    convert = pacsv.ConvertOptions(include_columns=schema.names,
                                   column_types={f.name: f.type for f in schema},
                                   null_values=[""], strings_can_be_null=True)
    try:
        return pacsv.read_csv(path, read_options=pacsv.ReadOptions(use_threads=True),
                              convert_options=convert).select(schema.names)
    except OSError as exc:
        if exc.errno is not None:
            raise CLIError(f"FILE {path!r} cannot be read: {_os_reason(exc)}.") from None
        raise CLIError(f"FILE {path!r} cannot be read as CSV ({type(exc).__name__}).") \
            from None
    except Exception as exc:
        # Arrow's text quotes the bad field: only the column it names is kept.
        import re
        found = re.search(r"CSV column #(\d+): CSV conversion error", str(exc))
        if found and int(found.group(1)) < len(names):
            column = names[int(found.group(1))]
            raise CLIError(f"{path}: a value of column {column!r} is not a number. "
                           f"{NOT_SHOWN}") from None
        raise CLIError(f"FILE {path!r} cannot be read as CSV ({type(exc).__name__}: a "
                       f"record with too many or too few fields, or bad quoting). "
                       f"{NOT_SHOWN}") from None


def _agg_cast(col: Any, kind: Any) -> Any:
    """A Parquet column as ``kind`` (dictionaries decoded, numbers as float64)."""
    import pyarrow as pa
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col if col.type == kind else col.cast(kind)


def _agg_check_data(args: argparse.Namespace, specs: list[_AggSpec], table: Any) -> None:
    """Nulls in the key or privacy-unit column, and missing, NaN or infinite values, by the
    option and the record's position (records counted from 1 after the header)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    checks = [(args.by, "--by", "key")]
    if args.privacy_unit is not None:
        checks.append((args.privacy_unit, "--privacy-unit", "person"))
    for column, option, what in checks:
        col = table.column(column)
        if col.null_count:
            first = int(np.flatnonzero(pc.is_null(col).to_numpy(zero_copy_only=False))[0])
            raise CLIError(f"{option} {column!r}: record {first + 1} of {args.file} has no "
                           f"{what} (an empty or null value; refused: a null is not a group "
                           "of its own). Drop or fill these records first.")
        if pa.types.is_floating(col.type):
            bad = ~np.isfinite(col.to_numpy())
            if bad.any():
                raise CLIError(f"{option} {column!r}: record {int(np.argmax(bad)) + 1} of "
                               f"{args.file} has a NaN or infinite {what}.")
    for column in dict.fromkeys(s.column for s in specs if s.column is not None):
        option = next(s.option for s in specs if s.column == column)
        col = table.column(column)
        x = col.to_numpy()      # float64; nulls read as NaN
        bad = ~np.isfinite(x)
        if bad.any():
            i = int(np.argmax(bad))
            kind = ("missing (empty or null)" if col.null_count and
                    not pc.is_valid(col).to_numpy(zero_copy_only=False)[i]
                    else "NaN" if np.isnan(x[i]) else "infinite")
            raise CLIError(f"{option} {column!r}: the value at record {i + 1} of {args.file} "
                           f"is {kind}; value columns need finite numbers (drop or fill "
                           "these records first).")


def _agg_accountant(args: argparse.Namespace) -> Accountant:
    """The command's accountant: unlimited in memory (rho with --rho), or the durable
    budget in --ledger (created with --budget and --budget-delta when new)."""
    if args.ledger is None:
        if args.budget is not None:
            raise CLIError("--budget sets the budget of a new --ledger file: give --ledger "
                           "too.")
        if args.rho is not None:
            return Accountant(rho=math.inf)
        return Accountant(epsilon=math.inf, delta=1.0)
    acct = _existing_ledger(args)
    if acct is not None:
        return acct
    if args.budget is None:
        raise CLIError(f"--ledger {args.ledger!r} does not exist: pass --budget EPSILON (and "
                       "--budget-delta DELTA for a release with delta) to create it.")
    delta = args.budget_delta if args.budget_delta is not None else 0.0
    if delta == 0.0 and (args.delta is not None or args.rho is not None):
        raise CLIError(f"--ledger {args.ledger!r} is new and this release spends delta: pass "
                       "--budget-delta DELTA, the ledger's total delta, to create it.")
    # A --rho release is charged in rho: its ledger composes in zCDP.
    composition: Literal["basic", "zcdp"] = "zcdp" if args.rho is not None else "basic"
    return _open_ledger(args.ledger, lambda: Accountant(
        epsilon=args.budget, delta=delta, composition=composition, ledger=args.ledger))


def _agg_remaining(acct: Accountant) -> str:
    """What the ledger has spent and has left, in epsilon and delta (and rho in zCDP)."""
    spent, left = acct.spent, acct.remaining
    text = (f"epsilon = {spent[0]:g}, delta = {spent[1]:g} spent of {acct.epsilon:g}, "
            f"{acct.delta:g}; {left[0]:g}, {left[1]:g} left")
    rho = getattr(spent, "rho", None)
    return text + (f" (rho = {rho:g} spent)" if rho and math.isfinite(rho) else "")


def _agg_plan_text(plan: Any) -> str:
    """The plan's table: costs, noise and thresholds, blanks where a field does not apply."""
    table = plan.astype(object).where(plan.notna(), "-")
    for column in ("people for p=0.5", "people for p=0.99"):
        if column in table:
            table[column] = [x if x == "-" else int(x) for x in table[column]]
    return str(table.to_string(index=False))


def _agg_cell(x: object) -> object:
    """One CSV cell of the output: integers as integers, floats exactly (repr)."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (numbers.Integral, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    if isinstance(x, bytes):
        return x.decode("utf-8", "backslashreplace")
    return x


def _aggregate(args: argparse.Namespace, out: TextIO) -> int:
    from ..groupby import group_by
    err = args.err
    _check_aggregate_options(args)
    specs = _agg_specs(args)
    names, file_schema = _agg_header(args.file)
    _agg_columns(args, specs, names)
    schema = _agg_schema(args, specs, file_schema)
    keys = _agg_keys(args, schema)
    unit = args.privacy_unit
    print(f"privacy unit: {unit}" if unit is not None else
          "no --privacy-unit: each row is a person", file=err)

    bounds = {s.column: s.bounds for s in specs if s.column is not None}
    aggregations: dict[str, Any] = {
        s.name: "count" if s.column is None else (s.column, s.stat) for s in specs}

    def grouped(data: object) -> "GroupBy":
        return group_by(data, args.by, privacy_unit=unit, max_groups=args.max_groups or 1,
                        max_rows=args.max_rows or 1, keys=keys)

    # The plan from the header alone: every budget parameter checked before anything is
    # created, read or charged.
    plan = grouped(schema.empty_table()).plan(
        epsilon=args.epsilon, delta=args.delta, rho=args.rho, noise=args.noise,
        bounds=bounds, selection=args.selection, selection_rule=args.selection_rule,
        **aggregations)
    if args.plan:
        print(f"dpfast aggregate --plan: what the release of {len(specs)} statistic(s) per "
              f"key of {args.by!r} would measure; nothing charged, no record read.", file=out)
        print(_agg_plan_text(plan), file=out)
        if args.ledger is not None and os.path.lexists(args.ledger):
            acct = _open_ledger(args.ledger, lambda: Accountant.from_ledger(args.ledger))
            print(f"Ledger {args.ledger}: {_agg_remaining(acct)}.", file=out)
        return 0

    target = None if args.out is None else _output(args, args.out, "--out")
    acct = _agg_accountant(args)
    table = _agg_read(args, schema, names)
    _agg_check_data(args, specs, table)
    frame = grouped(table).agg(
        epsilon=args.epsilon, delta=args.delta, rho=args.rho, noise=args.noise,
        bounds=bounds, selection=args.selection, selection_rule=args.selection_rule,
        accountant=acct, rng=args.seed, **aggregations)

    header = [args.by] + [s.name for s in specs]
    columns = [frame[s.name].to_numpy() for s in specs]
    rows = ([_agg_cell(k)] + [_agg_cell(c[i]) for c in columns]
            for i, k in enumerate(frame.index.to_numpy()))
    if target is None:
        _write_csv(out, header, rows)
    else:
        with open(target.tmp, "w", newline="", encoding="utf-8") as f:
            _write_csv(f, header, rows)
        target.commit()
    where_to = "standard output" if args.out is None else args.out
    cost = (f"rho = {args.rho:g}" if args.rho is not None else
            f"epsilon = {args.epsilon:g}" + (f", delta = {args.delta:g}"
                                             if args.delta is not None else ""))
    chosen = "public --keys" if keys is not None else "keys selected privately"
    print(f"dpfast aggregate: {len(frame)} key(s) ({chosen}) of {args.by!r} with "
          f"{', '.join(s.name for s in specs)} written to {where_to}; {cost} spent.",
          file=err)
    if args.ledger is not None:
        print(f"Ledger {args.ledger}: {_agg_remaining(acct)}.", file=err)
    if args.seed is not None:
        print(_seed_note(args.seed), file=err)
    return 0


# -- dpfast info ------------------------------------------------------------------------
def _info(args: argparse.Namespace, out: TextIO) -> int:
    print(f"dpfast {__version__}", file=out)
    print(f"instruction set (keystream and samplers): {_native.simd_impl()}", file=out)
    print(f"threads: {'yes' if _native.have_threads() else 'no (kernels run on one thread)'}",
          file=out)
    print(f"default threads: {default_threads()} (OMP_NUM_THREADS or usable CPUs)", file=out)
    return 0


# -- dpfast bench -----------------------------------------------------------------------
def _bench(args: argparse.Namespace, out: TextIO) -> int:
    from .. import benchmarks
    from ..benchmarks import suite

    # Checked before timing anything: a bad option or a missing matplotlib ends the command
    # with one message instead of after a minute of measurement.
    suite.check_families(args.only)
    plot = json_out = None
    if args.plot is not None:
        _optional("matplotlib", "matplotlib", "--plot")
        plot = _check_png(args, args.plot)
    if args.json is not None:
        json_out = _output(args, args.json, "--json")
    size = args.size if args.size is not None else (suite.QUICK_SIZE if args.quick else 10**7)
    repeat = (args.repeat if args.repeat is not None
              else (suite.QUICK_REPEAT if args.quick else 7))
    if args.small_calls:
        return _bench_small_calls(args, out, repeat, json_out)
    if args.linear:
        return _bench_linear(args, out, json_out)
    if args.interactive:
        return _bench_interactive(args, out, json_out)
    if args.budgets:
        return _bench_budgets(args, out, json_out)
    if args.records:
        return _bench_records(args, out, json_out)
    report = benchmarks.run(size=size, threads=args.threads, repeat=repeat, only=args.only,
                            include_libraries=not args.no_libraries,
                            scaling_too=args.scaling and not args.quick,
                            quick=False)
    # quick is recorded as asked, though size and repeat above already honour it.
    report.settings["quick"] = args.quick
    if args.scaling and args.quick:
        report.scaling, report.fits = benchmarks.scaling(suite.QUICK_SCALING_SIZES,
                                                         threads=report.settings["threads"],
                                                         repeat=repeat)
    print(report.to_markdown() if args.markdown else report.to_text(), file=out)
    if json_out is not None:
        report.to_json(json_out.tmp)
        json_out.commit()
        print(f"\nResults written to {args.json}.", file=out)
    if plot is not None:
        report.plot(plot.tmp)
        plot.commit()
        print(f"Bar chart of ratios written to {args.plot}.", file=out)
    return 0


def _bench_small_calls(args: argparse.Namespace, out: TextIO, repeat: int,
                       json_out: "OutputFile | None") -> int:
    from ..benchmarks import small_calls

    calls = 200 if args.quick else 2000
    rows = small_calls.run(repeat, calls, libraries=not args.no_libraries)
    print(small_calls.to_markdown(rows, repeat, calls), file=out)
    if json_out is not None:
        with open(json_out.tmp, "w") as f:
            json.dump({"repeat": repeat, "calls": calls, "results": rows}, f, indent=2)
        json_out.commit()
        print(f"\nResults written to {args.json}.", file=out)
    return 0


def _bench_linear(args: argparse.Namespace, out: TextIO, json_out: "OutputFile | None") -> int:
    from ..benchmarks import linear

    report = linear.run(quick=args.quick, libraries=not args.no_libraries, peer=args.mbi)
    return _print_report(report, linear.to_markdown(report), args, out, json_out)


def _bench_interactive(args: argparse.Namespace, out: TextIO,
                       json_out: "OutputFile | None") -> int:
    from ..benchmarks import interactive

    report = interactive.run(quick=args.quick)
    return _print_report(report, interactive.to_markdown(report), args, out, json_out)


def _bench_budgets(args: argparse.Namespace, out: TextIO,
                   json_out: "OutputFile | None") -> int:
    from ..benchmarks import budgets

    report = budgets.run(quick=args.quick)
    return _print_report(report, budgets.to_markdown(report), args, out, json_out)


def _bench_records(args: argparse.Namespace, out: TextIO,
                   json_out: "OutputFile | None") -> int:
    from ..benchmarks import records

    rows = args.size if args.size is not None else (10**6 if args.quick else 10**7)
    report = records.run(rows=rows, peers=not args.no_libraries,
                         repeats=args.repeat if args.repeat is not None else 1,
                         opendp_path=args.opendp_polars, tumult_path=args.tumult,
                         progress=lambda line: print(line, file=sys.stderr, flush=True))
    return _print_report(report, records.to_markdown(report), args, out, json_out)


def _print_report(report: dict[str, Any], markdown: str, args: argparse.Namespace,
                  out: TextIO, json_out: "OutputFile | None") -> int:
    """Write a benchmark's report as JSON when asked, then print its Markdown."""
    if json_out is not None:
        with open(json_out.tmp, "w") as f:
            json.dump(report, f, indent=2, default=str)
        json_out.commit()
    print(markdown, file=out)
    if json_out is not None:
        print(f"\nResults written to {args.json}.", file=out)
    return 0


# -- arguments --------------------------------------------------------------------------
def _arg(convert: "Callable[[str], _T]", ok: "Callable[[_T], bool]",
         rule: str) -> "Callable[[str], _T]":
    """An argparse type: ``convert`` the text, then require ``ok`` of the value; the error
    says ``rule`` (with the text given)."""
    kind = "an integer" if convert is int else "a number"

    def parse(text: str) -> "_T":
        try:
            x = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {kind}: {text!r}") from None
        if not ok(x):
            raise argparse.ArgumentTypeError(f"{rule}, got {text!r}")
        return x
    return parse


_positive_int = _arg(int, lambda x: x >= 1, "must be >= 1")
_positive_float = _arg(float, lambda x: math.isfinite(x) and x > 0,
                       "epsilon must be a finite number > 0")
_probability = _arg(float, lambda x: 0 < x < 1, "beta must be in (0, 1)")
_confidence = _arg(float, lambda x: 0 < x < 1, "the confidence must be in (0, 1)")
_seed = _arg(int, lambda x: x >= 0, "seed must be >= 0")
_probability_delta = _arg(float, lambda x: 0 < x < 1, "delta must be in (0, 1)")
_positive_float_rho = _arg(float, lambda x: math.isfinite(x) and x > 0,
                           "rho must be a finite number > 0")
_share = _arg(float, lambda x: 0 < x < 1, "the share must be in (0, 1)")


EXIT_HELP = """\
Exit status:
  0    success
  1    dpfast audit: a claimed epsilon was contradicted
  2    an error in the arguments or the input (one line on standard error; checked
       before any budget is charged where it can be)
  129  hung up (SIGHUP), 130 interrupted (Ctrl-C, SIGINT), 143 terminated (SIGTERM):
       files not yet complete are removed; a charge already made stays spent"""


SEED_HELP = ("seed the noise generator: reproducible output for tests and demonstrations. "
             "Anyone who knows the seed can remove the noise, so never for a real release")

HISTOGRAM_EPILOG = """\
Bin edges and categories must be public: chosen without looking at the data. Bins follow
numpy.histogram: [low, high), the last bin closed; values outside the edges are not counted.
Values are read from a CSV file with a header row (stdlib csv; surrounding spaces ignored,
blank lines skipped) or, for FILE.parquet, with pyarrow. An empty value or "?" is missing:
an error naming its line unless --drop-missing drops those records before counting (a
per-record filter, so the guarantee still covers every record of the file; the release
counts the others). With --categories, values are compared as text; a missing value that is
not itself in the list goes to the (other) row under --other.
Output: CSV with columns bin_low,bin_high,noisy_count or category,noisy_count. A summary
(epsilon spent, number of cells, (1 - beta) max-error bound) goes to standard error. True
counts are never printed."""


def _encoding(text: str) -> str:
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown text encoding {text!r}") from None
    return text


def _ledger_options(parser: argparse.ArgumentParser, budget_default: str) -> None:
    parser.add_argument(
        "--ledger", metavar="FILE", default=None,
        help="charge the releases to the durable budget in FILE, shared by every process "
             "and run that uses it (each charge is written and synced before any noise is "
             "drawn; a release the budget cannot cover is refused)")
    parser.add_argument("--budget", type=_positive_float, default=None, metavar="EPSILON",
                        help=f"total epsilon of a new --ledger FILE {budget_default}")


def _audit(args: argparse.Namespace, out: TextIO) -> int:
    """Audit each case; 1 if any claim is contradicted (for the broken variants, expected)."""
    from ..auditing import CASES, run_case
    names = args.cases or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise ValueError(f"unknown audit case(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(CASES)}")
    violated = False
    for name in names:
        t0 = time.perf_counter()
        result = run_case(name, samples=args.samples, confidence=args.confidence,
                          rng=args.seed)
        seconds = time.perf_counter() - t0
        violated |= result.violated
        print(f"{name}: {CASES[name].about}\n  {result}\n  {seconds:.1f} s, "
              f"{result.samples / seconds / 1e6:.1f} M samples/s", file=out)
    return 1 if violated else 0


AGGREGATE_EPILOG = """\
Each statistic is one option, repeatable, in the order of the output's columns:
  --count                 noisy number of rows per key (column "count")
  --sum COL:LO:HI         noisy sum of COL clamped to the public range [LO, HI] ("sum_COL")
  --mean / --variance / --std COL:LO:HI   likewise ("mean_COL", "variance_COL", "std_COL")
LO and HI must be public: chosen without looking at the data (negative bounds are fine:
--sum balance:-500:500). All statistics share one budget (--epsilon, --delta or --rho),
split between the key selection and the measurements; --plan shows the split, each
measurement's noise and the selection's thresholds.

What a person is: with --privacy-unit COL, each person (value of COL) keeps at most
--max-groups keys and --max-rows rows per key, chosen uniformly at random under the
release's key; without it, each row is a person (the command says which on standard error).

Keys: --keys K1,K2,... publishes exactly those keys (zeros included; other rows dropped).
Without --keys, the keys are found in the data and each is released only if enough people
have rows in it (private partition selection, which costs --selection of epsilon and
delta): a key with few people is usually not released.

Input: a CSV file with a header row (read with pyarrow; key and --privacy-unit values are
taken as text, exactly as written; an empty field is missing) or FILE.parquet (only the
columns named are read, batch by batch, with a progress bar on large files if tqdm is
installed; keys of any type). A missing key or person, or a missing, NaN or infinite
value, is an error naming its record; values are never shown.
Output: CSV with columns KEY,count,sum_COL,... one row per released key, sorted, written
atomically. A summary (keys released, budget spent, ledger) goes to standard error."""


def _aggregate_parser(sub: Any) -> None:
    agg = sub.add_parser(
        "aggregate", help="DP count, sum, mean, variance or std per key of a CSV/Parquet "
                          "file, each person's rows bounded",
        description="Per-key statistics of a CSV or Parquet file under one (epsilon, "
                    "delta) or rho budget: each person's contribution bounded, the keys "
                    "public (--keys) or selected privately.",
        epilog=AGGREGATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    agg.add_argument("file", metavar="FILE", help="CSV file with a header row, or .parquet")
    agg.add_argument("--by", required=True, metavar="COL", help="the column of keys")
    agg.add_argument("--privacy-unit", metavar="COL", default=None,
                     help="the column naming each row's person (default: each row is a "
                          "person)")
    agg.add_argument("--max-groups", type=_positive_int, default=None, metavar="L0",
                     help="keys each person keeps at most (default 1; needs --privacy-unit)")
    agg.add_argument("--max-rows", type=_positive_int, default=None, metavar="LINF",
                     help="rows each person keeps per key at most (default 1; needs "
                          "--privacy-unit)")
    agg.add_argument("--keys", metavar="K1,K2,...", default=None,
                     help="the public keys, comma-separated, surrounding spaces ignored "
                          "(default: keys selected privately from the data)")
    agg.add_argument("--count", dest="stats", action=_StatisticAction, nargs=0,
                     const="count", help="the noisy number of rows per key")
    for stat in AGG_STATISTICS:
        agg.add_argument(f"--{stat}", dest="stats", action=_StatisticAction,
                         const=stat, metavar="COL:LO:HI",
                         help=f"the noisy {stat} of COL per key, values clamped to [LO, HI]")
    agg.add_argument("--epsilon", type=_positive_float, default=None,
                     help="epsilon of the whole release")
    agg.add_argument("--delta", type=_probability_delta, default=None,
                     help="delta of the whole release (Gaussian noise; keys selected "
                          "privately)")
    agg.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace",
                     help="noise of the measurements (default laplace)")
    agg.add_argument("--rho", type=_positive_float_rho, default=None,
                     help="a zCDP budget instead of --epsilon (--noise gaussian, public "
                          "--keys)")
    agg.add_argument("--selection", type=_share, default=None, metavar="SHARE",
                     help="the key selection's share of epsilon, in (0, 1) (default: an "
                          "equal share with each measurement)")
    agg.add_argument("--selection-rule", choices=["auto", "count", "optimal", "gaussian"],
                     default="auto",
                     help="the key selection's rule: a threshold on the released noisy count "
                          "(count), optimal thresholding (Desfontaines et al. 2022), weighted "
                          "Gaussian (Swanberg et al. 2023), or auto (count when --count or a "
                          "sum, mean or variance is measured with Laplace noise, else optimal "
                          "at --max-groups 1 and weighted Gaussian above; default)")
    agg.add_argument("--out", metavar="FILE", default=None,
                     help="write the CSV here (default: standard output)")
    agg.add_argument("--force", action="store_true", help="replace an existing --out file "
                     "(never the input FILE)")
    agg.add_argument("--seed", type=_seed, default=None, help=SEED_HELP)
    agg.add_argument("--plan", action="store_true",
                     help="print what each measurement would cost and its noise, and the "
                          "key selection's thresholds; nothing charged, no record read")
    _ledger_options(agg, "(required to create a new file)")
    agg.add_argument("--budget-delta", type=_probability_delta, default=None,
                     metavar="DELTA", help="total delta of a new --ledger FILE (default 0)")
    agg.set_defaults(func=_aggregate, stats=None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpfast", description=__doc__, epilog=EXIT_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"dpfast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser(
        "demo", help="DP count, age histogram and marital-status table of the bundled "
                     "Adult census data, next to the true values",
        description="Releases, from the bundled UCI Adult census extract, the number of "
                    "people over 50, an age histogram and a marital-status table, each at "
                    "--epsilon and charged to one privacy budget, and prints them next to "
                    "the true values with their 95% error bounds. A demonstration only: a "
                    "real release never shows the truth.")
    demo.add_argument("--epsilon", type=_positive_float, default=1.0,
                      help=f"epsilon of each of the {DEMO_RELEASES} releases (default 1.0; "
                           f"the budget is {DEMO_RELEASES} x epsilon)")
    demo.add_argument("--seed", type=_seed, default=None, help=SEED_HELP)
    demo.add_argument("--plot", metavar="FILE.png", default=None,
                      help="also draw true vs noisy bars of both tables (needs matplotlib)")
    _ledger_options(demo, "(default budget for a new file: the demo's 3 x epsilon)")
    demo.add_argument("--force", action="store_true", help="replace an existing --plot file")
    demo.set_defaults(func=_demo)

    hist = sub.add_parser(
        "histogram", help="DP histogram or category counts of one column of a CSV/Parquet "
                          "file",
        description="An epsilon-DP histogram (--bins) or count per category (--categories) "
                    "of one column: exact counts plus discrete Laplace noise of scale "
                    "1/epsilon.",
        epilog=HISTOGRAM_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    hist.add_argument("file", metavar="FILE", help="CSV file with a header row, or .parquet")
    hist.add_argument("--column", required=True, metavar="COL", help="the column to count")
    kind = hist.add_mutually_exclusive_group(required=True)
    kind.add_argument("--bins", metavar="EDGES",
                      help='increasing edges "0,18,30,50,65,100", or "N:LOW:HIGH" for N equal '
                           'bins over [LOW, HIGH]; write "--bins=-5,0,5" when the first edge '
                           "is negative")
    kind.add_argument("--categories", metavar="C1,C2,...",
                      help="the public list of categories, comma-separated")
    hist.add_argument("--other", action="store_true",
                      help="count values outside --categories in an extra (other) row "
                           "instead of failing")
    hist.add_argument("--epsilon", type=_positive_float, required=True,
                      help="privacy parameter of the release")
    hist.add_argument("--out", metavar="FILE", default=None,
                      help="write the CSV here (default: standard output)")
    hist.add_argument("--seed", type=_seed, default=None, help=SEED_HELP)
    hist.add_argument("--beta", type=_probability, default=0.05,
                      help="failure probability of the reported max-error bound "
                           "(default 0.05)")
    hist.add_argument("--postprocess", choices=["clip", "consistent"], default=None,
                      help="clip: negative counts to 0; consistent: non-negative integers "
                           "keeping the noisy total (free under DP)")
    hist.add_argument("--drop-missing", action="store_true",
                      help='drop records whose value is empty or "?" before counting')
    hist.add_argument("--encoding", type=_encoding, default="utf-8",
                      help="text encoding of a CSV FILE (default utf-8; a byte-order mark "
                           "is skipped)")
    _ledger_options(hist, "(required to create a new file)")
    hist.add_argument("--force", action="store_true", help="replace an existing --out file "
                      "(never the input FILE)")
    hist.set_defaults(func=_histogram)

    _aggregate_parser(sub)

    from ..auditing import CASES
    aud = sub.add_parser(
        "audit", help="a lower bound on the epsilon a mechanism really spends (empirical "
                      "privacy audit)",
        description="Runs a mechanism many times on two neighbouring inputs, chooses an "
                    "output event on half of the samples and tests it on the other half: "
                    "with the given confidence the mechanism spends at least the epsilon "
                    "printed (Clopper-Pearson bounds; needs scipy). Exit status 1 when the "
                    "bound exceeds the claimed epsilon.",
        epilog="Cases:\n" + "\n".join(f"  {name:24s} {case.about}"
                                       for name, case in CASES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    aud.add_argument("cases", nargs="*", metavar="CASE", default=None,
                     help="cases to audit (default: all)")
    aud.add_argument("--samples", type=_positive_int, default=None,
                     help="outputs drawn per case (default: 4000000, 200000 for the "
                          "selection mechanisms, which run one call per output)")
    aud.add_argument("--confidence", type=_confidence, default=0.99,
                     help="confidence of the bounds (default 0.99)")
    aud.add_argument("--seed", type=_seed, default=None, help=SEED_HELP)
    aud.set_defaults(func=_audit)

    info = sub.add_parser("info", help="show the compiled kernels in use and thread count")
    info.set_defaults(func=_info)

    from ..benchmarks import FAMILIES
    bench = sub.add_parser(
        "bench", help="throughput of every mechanism family next to numpy",
        description="Times each mechanism family (median of interleaved repeats after a "
                    "warm-up) and reports ns per element, elements/s and the ratio to "
                    "numpy's nearest equivalent measured in the same run, with the machine "
                    "it ran on.")
    bench.add_argument("--only", nargs="+", choices=FAMILIES, default=None, metavar="FAMILY",
                       help=f"run only these families: {', '.join(FAMILIES)}")
    bench.add_argument("--size", type=_positive_int, default=None,
                       help="elements per call (default 10000000; 10000 with --quick)")
    bench.add_argument("--threads", type=_positive_int, nargs="+", default=None,
                       help="thread counts of the dpfast cases (default: 1 and the default "
                            "thread count)")
    bench.add_argument("--repeat", type=_positive_int, default=None,
                       help="timed repeats after a warm-up (default 7; 2 with --quick)")
    bench.add_argument("--quick", action="store_true",
                       help="a run of seconds: size 10000, 2 repeats")
    bench.add_argument("--scaling", action="store_true",
                       help="also time Laplace and the exponential mechanism against size "
                            "(10^3..10^8; ..10^5 with --quick) and fit the fixed overhead "
                            "per call and the cost per element")
    bench.add_argument("--json", metavar="FILE", default=None,
                       help="also write machine, results and scaling as JSON")
    bench.add_argument("--plot", metavar="FILE.png", default=None,
                       help="also draw a bar chart of ratios vs numpy (needs matplotlib)")
    bench.add_argument("--markdown", action="store_true",
                       help="print the table as Markdown (for the README)")
    bench.add_argument("--small-calls", action="store_true",
                       help="instead, microseconds per small call (a scalar release, a spend, "
                            "10^3 cells or candidates) beside other DP libraries")
    bench.add_argument("--linear", action="store_true",
                       help="instead, error and time of linear-query releases (all ranges: "
                            "tree vs independent Laplace vs OpenDP; a census hierarchy; "
                            "marginals of the Adult data, graphical models and AIM/MST "
                            "among them) at the same epsilon")
    bench.add_argument("--mbi", metavar="DIR", default=None,
                       help="with --linear: a directory holding private-pgm (mbi) and jax, "
                            "installed apart (pip install --target DIR mbi): its AIM and "
                            "MST run beside dpfast's graphical models, each in a child "
                            "process with a timeout")
    bench.add_argument("--interactive", action="store_true",
                       help="instead, the sparse vector technique over 10^7 streamed queries "
                            "(vs numpy), the auditor's samples per second and private "
                            "multiplicative weights' answers per second")
    bench.add_argument("--budgets", action="store_true",
                       help="instead, discrete Gaussian noise beside discrete Laplace and "
                            "OpenDP, gaussian_mechanism's std over sigma, a census hierarchy "
                            "with a rho per level, and spends through leases beside the "
                            "ledger's durable spend")
    bench.add_argument("--records", action="store_true",
                       help="instead, statistics of records beside PipelineDP, OpenDP, "
                            "Tumult, diffprivlib and PyDP (each in its own process): "
                            "per-department "
                            "count, sum and mean of --size rows (default 10^7) with each "
                            "person's rows bounded and the departments selected privately, "
                            "the overall median and mean, and 99 percentiles")
    bench.add_argument("--opendp-polars", metavar="DIR",
                       help="with --records: a directory holding the polars version OpenDP "
                            "was built against (pip install --target DIR polars==1.36.1)")
    bench.add_argument("--tumult", metavar="DIR",
                       help="with --records: a directory holding Tumult Analytics, installed "
                            "apart (pip install --target DIR tmlt.analytics)")
    bench.add_argument("--no-libraries", action="store_true",
                       help="skip comparisons with other DP libraries even if installed")
    bench.add_argument("--force", action="store_true",
                       help="replace existing --json or --plot files")
    bench.set_defaults(func=_bench)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.err = err or sys.stderr
    args.outputs = []
    guard = _SignalGuard()
    guard.install()
    failure = None
    try:
        try:
            _check_paths(args)
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
            failure = f"dpfast: error: {_message(exc)}\n"
    except KeyboardInterrupt as exc:
        # Ctrl-C, SIGTERM or SIGHUP: one line and the shell's code for the signal. Files
        # not yet complete are removed below; a charge already made stays spent.
        guard.quiet = True
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        word = SIGNAL_WORDS.get(signal.Signals(signum).name, "interrupted")
        print(f"dpfast: {word}", file=args.err)
        return _exit_status(signum)
    finally:
        # Further signals are only recorded from here on: the clean-up runs to its end.
        guard.quiet = True
        for target in args.outputs:
            target.discard()
        guard.restore()
    parser.exit(2, failure)

