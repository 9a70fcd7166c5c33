"""What an accountant shows: an amount of privacy read in each definition (:class:`Budget`)
and one spend as recorded (:class:`LedgerEntry`)."""
from __future__ import annotations

from typing import Any, NamedTuple

from .amounts import as_float

__all__ = ["Budget", "LedgerEntry", "entries"]


class Budget(tuple):  # type: ignore[type-arg]
    """Budget(epsilon, delta, rho)

    An amount of privacy read in each definition: an (epsilon, delta) pair (it unpacks as
    one, ``eps, delta = acct.spent``, and compares equal to the plain tuple) with the zCDP
    reading as the attribute ``rho`` (outside the tuple).

    ``rho`` is exact for a zCDP accountant. For an (epsilon, delta) accountant it is the
    rho its charges imply: ``sum eps_i**2 / 2`` over its outermost charges when all are
    pure (rounded up), ``inf`` once any charge has delta > 0.
    """

    # Pickles name the class by its public path (dpfast.accounting), as before the split.
    __module__ = "dpfast.accounting"

    rho: float

    def __new__(cls, epsilon: float, delta: float, rho: float) -> "Budget":
        self = super().__new__(cls, (epsilon, delta))
        self.rho = rho
        return self

    @property
    def epsilon(self) -> float:
        return float(self[0])

    @property
    def delta(self) -> float:
        return float(self[1])

    # Shown as the (epsilon, delta) pair it is (``.rho`` is read by name).
    __repr__ = tuple.__repr__

    def __reduce__(self) -> "tuple[type[Budget], tuple[float, float, float]]":
        return (Budget, (self[0], self[1], self.rho))


class _LedgerFields(NamedTuple):
    epsilon: float | None
    delta: float
    label: object


class LedgerEntry(_LedgerFields):
    """LedgerEntry(epsilon, delta, label=None, block=(), charged=(0.0, 0.0), rho=None)

    One spend: the (epsilon, delta) asked for and its label (``epsilon`` is None for a
    charge asked in rho alone).

    It is a 3-tuple, so code that unpacks ``eps, delta, label`` or compares entries with
    plain tuples keeps working; where the spend happened and what it cost are attributes
    outside the tuple (they take no part in comparisons):

    ``block``
        The path of the parallel blocks and partitions the spend was made through, outermost
        first (``()`` for a spend on the accountant itself).
    ``charged``
        What this spend added to the sequential total, as (epsilon, delta) floats: the
        increase of its outermost block's cost (often 0 inside a parallel block), after
        group scaling. For a zCDP accountant, ``(rho, 0.0)``: it accounts in rho.
    ``rho``
        The zCDP cost the spend stated (``rho=`` of the spend: a Gaussian release's
        ``Delta_2**2 / (2 sigma**2)``), or None.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> with acct.parallel(label="shards") as shards:
    ...     shards.spend(0.5, label="a")
    ...     shards.spend(0.25, label="b")
    >>> entry = acct.ledger[1]
    >>> entry == (0.25, 0.0, "b"), entry.block, entry.charged
    (True, ('shards',), (0.0, 0.0))
    """

    # Pickles name the class by its public path (dpfast.accounting), as before the split.
    __module__ = "dpfast.accounting"

    # No __slots__: a tuple subclass cannot have non-empty ones, and the two attributes
    # below must stay out of the tuple for backward compatibility.
    block: "tuple[str, ...]"
    charged: "tuple[float, float]"
    rho: float | None

    def __new__(cls, epsilon: float | None, delta: float, label: object = None,
                block: "tuple[str, ...]" = (),
                charged: "tuple[float, float]" = (0.0, 0.0),
                rho: float | None = None) -> "LedgerEntry":
        self = super().__new__(cls, epsilon, delta, label)
        self.block = block
        self.charged = charged
        self.rho = rho
        return self

    def __repr__(self) -> str:
        extra = "" if self.rho is None else f", rho={self.rho!r}"
        return (f"LedgerEntry(epsilon={self.epsilon!r}, delta={self.delta!r}, "
                f"label={self.label!r}, block={self.block!r}, charged={self.charged!r}"
                f"{extra})")

    def __reduce__(self) -> "tuple[type[LedgerEntry], tuple[object, ...]]":
        return (LedgerEntry, (*self, self.block, self.charged, self.rho))


def entries(records: list[Any]) -> list[LedgerEntry]:
    """The entries of an accountant's (or a lease's) raw records, (epsilon, delta, label,
    path, exact charge, unit[, rho, ...]) each."""
    return [LedgerEntry(None if r[0] is None else float(r[0]), float(r[1]), r[2], r[3],
                        (as_float(r[4][0]), as_float(r[4][1])),
                        r[6] if len(r) > 6 else None)
            for r in records]
