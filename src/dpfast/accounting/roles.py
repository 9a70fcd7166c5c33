"""What the lower modules of the accounting package ask of the accountant they serve, as
protocols: the modules below :class:`~dpfast.accounting.Accountant` (the ledger-backed side,
the blocks, the leases) name only these, so that every import in the package points down.

:class:`Root` is what anything holding an accountant (a parallel block, a partition, a
lease) may ask of it; :class:`LedgerBooks` is the state of the books that
:mod:`.ledgered` reads and takes records into; :class:`LedgerAccountant` adds the terms of
the budget its ledger's budget record holds. :class:`~dpfast.accounting.books.Books` and
:class:`~dpfast.accounting.Accountant` satisfy them; nothing else needs to.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from typing import Literal

    from .. import _native
    from ..ledger import LedgerFile
    from .amounts import Amount, Cost

__all__ = ["LedgerAccountant", "LedgerBooks", "Root"]


class Root(Protocol):
    """What a block or a lease (and :mod:`dpfast._release`, through them) asks of the
    accountant it belongs to: where its durable ledger is, and whether an interrupted
    release's committed charge stands (:meth:`Accountant._redeem
    <dpfast.accounting.Accountant._redeem>`)."""

    @property
    def ledger_path(self) -> str | None: ...

    def _redeem(self, commits: str, cost: tuple[float | None, float, float | None],
                label: str) -> bool: ...


class LedgerBooks(Protocol):
    """The books' state that the ledger-backed side reads (its file, its tally and budget,
    its open lease reservations) and the steps that take a record in, under its lock."""

    _ledger_file: LedgerFile | None
    _tally: _native.Tally
    _budget: tuple[Amount, Amount]
    _leases: dict[str, Cost]
    _delta_prime: Amount | None

    def _take(self, record: tuple[object, ...]) -> None: ...

    def _take_lease(self, record: tuple[object, ...], kind: str, lease: str | None) -> None: ...

    def _usable_for_lease(self) -> None: ...


class LedgerAccountant(LedgerBooks, Protocol):
    """:class:`LedgerBooks` with the terms of the budget a ledger's budget record holds: the
    group size, whether it is a zCDP budget (with the delta epsilon is read at and the
    epsilon asked for), and the composition."""

    _k: int
    _zcdp: bool
    _read_delta: float
    _eps_given: float | None

    @property
    def composition(self) -> Literal["basic", "advanced", "zcdp"]: ...
