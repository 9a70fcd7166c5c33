"""The accountant's errors, and how its messages show a bad argument (never private data)."""
from __future__ import annotations

from ..ledger import LedgerError

__all__ = ["BudgetExceededError", "LedgerDamagedError", "shown", "check_label"]


class BudgetExceededError(ValueError):
    """A spend would take an accountant past its budget; nothing was spent."""

    # Shown in tracebacks and pickled under the name users import it by.
    __module__ = "dpfast.accounting"


class LedgerDamagedError(BudgetExceededError, LedgerError):
    """The accountant's ledger file is damaged (see :mod:`dpfast.ledger`): it counts as
    exhausted, and every spend is refused. The message names the line and what is wrong."""

    __module__ = "dpfast.accounting"


def shown(value: object) -> str:
    """A bad argument as messages may show it: a short public number or string itself,
    anything else by its type only (it could hold private data)."""
    if value is None or type(value) in (bool, int, float):
        text = repr(value)
        if len(text) <= 24:
            return text
    if type(value) is str and len(value) <= 24 and value.isprintable():
        return repr(value)
    return f"a {type(value).__module__}.{type(value).__qualname__}".replace("a builtins.", "a ")



def check_label(label: object, func: str) -> str | None:
    """A block's, partition's or lease's ``label``: a str or None (TypeError naming it)."""
    if label is not None and not isinstance(label, str):
        raise TypeError(f"The 'label' parameter of {func} must be a str or None. "
                        f"Got {shown(label)} instead.")
    return label

