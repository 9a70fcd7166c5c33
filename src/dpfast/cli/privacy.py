"""The privacy budget of a command: its accountant, in memory or the durable --ledger file,
the range --epsilon must fall in, and the texts that report what was spent (and the warning
printed for a seeded generator)."""
import argparse
import math
import os
from fractions import Fraction
from typing import Callable, Iterable

from ..accounting import Accountant
from ..samplers import MAX_DISCRETE_SCALE
from ..validation import MIN_SCALE
from .errors import CLIError, message, os_reason
from .outputs import check_directory

__all__ = ["budget_for", "seed_note", "check_epsilon", "accountant", "existing_ledger",
           "open_ledger", "remaining_text"]


def budget_for(epsilons: Iterable[float]) -> float:
    """Smallest float budget that the accountant's exact decimal arithmetic lets cover all."""
    total = sum(Fraction(repr(e)) for e in epsilons)
    budget = float(total)
    while Fraction(repr(budget)) < total:
        budget = math.nextafter(budget, math.inf)
    return budget


def seed_note(seed: int) -> str:
    """The warning printed after a release drawn from a seeded generator."""
    return (f"(seed {seed}: reproducible noise for demonstration; anyone who knows the seed "
            "can remove it,\n so real releases use the default, OS-keyed generator)")


def check_epsilon(eps: float) -> None:
    """Refuse an --epsilon whose noise scale 1/epsilon the discrete sampler cannot draw: up
    front, so that a bad epsilon stops the command before it reads or prints anything."""
    if not MIN_SCALE <= 1.0 / eps <= MAX_DISCRETE_SCALE:
        raise CLIError(f"--epsilon must be in [{1 / MAX_DISCRETE_SCALE:g}, {1 / MIN_SCALE:g}] "
                       f"(discrete Laplace noise of scale 1/epsilon in [2^-900, 2^40]). Got "
                       f"{eps!r} instead.")


def accountant(args: argparse.Namespace, default_budget: float | None = None) -> Accountant:
    """The command's accountant: in memory for this run, or the durable budget in --ledger
    (created with --budget, or the command's default budget, when the file is new)."""
    if args.ledger is None:
        if args.budget is not None:
            raise CLIError("--budget sets the budget of a new --ledger file: give --ledger "
                           "too.")
        return Accountant(epsilon=default_budget if default_budget is not None else math.inf)
    acct = existing_ledger(args)
    if acct is not None:
        return acct
    budget = args.budget if args.budget is not None else default_budget
    if budget is None:
        raise CLIError(f"--ledger {args.ledger!r} does not exist: pass --budget EPSILON to "
                       "create it with that total budget.")
    return open_ledger(args.ledger, lambda: Accountant(epsilon=budget, ledger=args.ledger))


def existing_ledger(args: argparse.Namespace) -> Accountant | None:
    """The accountant of the --ledger file if it exists (its budget must be --budget's,
    when given: a ledger's budget is fixed when it is created), else None."""
    check_directory(args.ledger, "--ledger")
    if not os.path.lexists(args.ledger):
        return None
    acct = open_ledger(args.ledger, lambda: Accountant.from_ledger(args.ledger))
    if args.budget is not None and acct.epsilon != args.budget:
        raise CLIError(f"--ledger {args.ledger!r} holds a budget of epsilon = "
                       f"{acct.epsilon:g}, not --budget {args.budget:g} (a ledger's "
                       "budget is fixed when it is created).")
    return acct


def open_ledger(path: str, open_: Callable[[], Accountant]) -> Accountant:
    """``open_()``, with an error that names the --ledger file when it cannot be opened or
    read (the library's own messages about the budget pass through unchanged)."""
    try:
        return open_()
    except OSError as exc:
        raise CLIError(f"--ledger {path!r} cannot be opened: {os_reason(exc)}.") from None
    except ValueError as exc:
        text = message(exc)
        if path in text:
            raise
        raise CLIError(f"--ledger {path!r}: {text}") from None


def remaining_text(acct: Accountant) -> str:
    """What ``acct`` has spent and has left, in epsilon."""
    return (f"epsilon = {acct.spent[0]:g} spent of {acct.epsilon:g}, "
            f"{acct.remaining[0]:g} left")
