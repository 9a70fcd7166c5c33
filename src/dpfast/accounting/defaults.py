"""The default accountant (the one mechanisms charge with ``accountant=None``), what
``accountant=`` accepts, and what a forked child inherits.

Inside ``with acct:`` the default is ``acct`` (:data:`.accountant.context_stack`, per thread
and asyncio task); otherwise a process-wide accountant with an unlimited budget that records
every spend. In a forked child the copies of every in-memory accountant
(:data:`.books.in_memory`) and every lease (:data:`.leases.live_leases`) refuse to spend,
and the child gets a default accountant of its own.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from .accountant import Accountant, context_stack
from .books import in_memory
from .composition import ParallelBlock, Partition
from .errors import shown
from .leases import Lease, live_leases

__all__ = ["AccountantLike", "composes_in_zcdp", "default_accountant", "resolve_accountant"]

_process_default = Accountant()


def _after_fork_in_child() -> None:
    global _process_default
    for acct in list(in_memory):
        acct._tally.foreign = True
    for lease in list(live_leases):
        lease._forked = True
        lease._tally.foreign = True
        # The parent's lock may have been held by a thread that does not exist here.
        lease._closing = threading.Lock()
    # A fresh default accountant: unlimited, recording this process's spends.
    _process_default = Accountant()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def default_accountant() -> Accountant:
    """The accountant that mechanisms charge when called with ``accountant=None``.

    Inside ``with acct:`` that is ``acct`` (the innermost such block of this thread or
    asyncio task); otherwise a process-wide accountant with an unlimited budget that records
    every spend (a forked child starts with its own).

    Returns
    -------
    Accountant
        The accountant a release called with ``accountant=None`` would charge here.

    Raises
    ------
    None
        It only reads which accountant is current, and never raises.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> with acct:
    ...     print(dp.default_accountant() is acct)
    ...     noisy = dp.laplace_mechanism(10.0, sensitivity=1.0, epsilon=0.25)
    True
    >>> tuple(acct.spent)
    (0.25, 0.0)
    >>> dp.default_accountant() is acct, dp.default_accountant().epsilon
    (False, inf)
    """
    stack = context_stack.get()
    return stack[-1] if stack else _process_default


#: What ``accountant=`` accepts besides None: an accountant, a parallel block or a
#: partition of one, or a lease of one (whatever has a ``spend`` that charges a budget; all
#: but the accountant have ``_acct``, their accountant).
AccountantLike = Accountant | ParallelBlock | Partition | Lease[Any]


def composes_in_zcdp(accountant: object) -> bool:
    """Whether the accountant a release will charge (None: the default one; a block or a
    lease: its accountant's) composes in zCDP, so that its (epsilon, delta) releases are
    calibrated through rho (:func:`dpfast.noise.measure`). Anything else is for the
    release's own checks to refuse: False here."""
    if accountant is None:
        accountant = default_accountant()
    if isinstance(accountant, Lease):
        accountant = accountant.accountant
    return isinstance(accountant, (Accountant, ParallelBlock, Partition)) \
        and accountant.composition == "zcdp"


def resolve_accountant(accountant: "AccountantLike | None", func: str) -> "AccountantLike":
    """``accountant`` itself (an :class:`Accountant`, a :class:`ParallelBlock` or
    :class:`Partition` of one, or a :class:`Lease` of one), or the default one for
    ``None``; TypeError for anything else."""
    if accountant is None:
        return default_accountant()
    if not isinstance(accountant, (Accountant, ParallelBlock, Partition, Lease)):
        raise TypeError(f"The 'accountant' parameter of {func} must be a dpfast.Accountant "
                        "(or a parallel block, partition or lease of one) or None. "
                        f"Got {shown(accountant)} instead.")
    return accountant
