"""The accountant's errors, and how its messages show a bad argument (never private data)."""
from __future__ import annotations

from ..ledger import LedgerError

__all__ = ["BudgetExceededError", "LedgerDamagedError", "shown", "check_label"]


class BudgetExceededError(ValueError):
    """A spend would take an accountant past its budget; nothing was spent.

    Raised by :meth:`Accountant.spend <dpfast.Accountant.spend>`, by a lease, block or
    partition that cannot pay, and by every release whose charge does not fit: the release
    checks and charges before it draws any noise, so a refused release has drawn and
    returned nothing. The message says what remains and how to proceed. A subclass of
    ``ValueError``.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> counts = dp.laplace_mechanism([12.0, 7.0], sensitivity=1.0, epsilon=0.75,
    ...                               accountant=acct)
    >>> try:
    ...     dp.laplace_mechanism([12.0, 7.0], sensitivity=1.0, epsilon=0.5,
    ...                          accountant=acct)
    ... except dp.BudgetExceededError:
    ...     print("refused; spent:", tuple(acct.spent))
    refused; spent: (0.75, 0.0)
    """

    # Shown in tracebacks and pickled under the name users import it by.
    __module__ = "dpfast.accounting"


class LedgerDamagedError(BudgetExceededError, LedgerError):
    """The accountant's ledger file is damaged (see :mod:`dpfast.ledger`): it counts as
    exhausted, and every spend is refused. The message names the line and what is wrong
    (never the record's contents).

    Raised by a spend (or a lease) of an accountant whose ledger is found damaged -- a
    record edited, cut short, removed or reordered -- and when opening a ledger whose
    budget record fails its checks, that is empty, or that was deleted while its key file
    remains. A :class:`BudgetExceededError` (nothing was charged) and a
    :class:`~dpfast.ledger.LedgerError`.

    Examples
    --------
    A ledger whose charge record was edited by hand (a spend of 0.25 lowered to 0.15):

    >>> import os, tempfile
    >>> import dpfast as dp
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.ledger")
    >>> acct = dp.Accountant(epsilon=1.0, ledger=path)
    >>> acct.spend(0.25)
    >>> acct.close()
    >>> with open(path, "r+b") as f:
    ...     text = f.read()
    ...     _ = f.seek(0)
    ...     _ = f.write(text.replace(b"charge 1 25e-2", b"charge 1 15e-2"))
    >>> acct = dp.Accountant.from_ledger(path)
    >>> tuple(acct.spent)                           # counts as exhausted
    (1.0, 0.0)
    >>> try:
    ...     acct.spend(0.1)
    ... except dp.LedgerDamagedError as exc:
    ...     print(str(exc).split(": ")[1].split(".")[0])
    the record fails its checksum
    >>> acct.close()
    """

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

