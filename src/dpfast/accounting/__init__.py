"""Privacy budget accounting.

An :class:`Accountant` holds a budget (epsilon, delta) and a ledger of spends. Mechanisms
charge it *before* they draw any noise; a charge that would exceed the budget raises
:class:`BudgetExceededError` and changes nothing.

Budget arithmetic is exact: each epsilon and delta is read as the shortest decimal that
round-trips the float (``0.1`` is one tenth), kept as an integer number of units of
``10**-330`` (every double's shortest decimal is a whole number of them) and summed as
integers, so ten spends of 0.1 exhaust a budget of 1.0 exactly and an eleventh fails. The
conversion of each distinct value is cached, so a spend costs a few integer additions under a
lock. Quantities that come from floating-point formulas (group privacy's delta, the advanced
composition bound) are rounded *up* to a decimal first. (The mechanisms' own floating-point
effects are bounded separately; see :func:`dpfast.laplace_privacy_loss`.)

Composition (Dwork & Roth, "The Algorithmic Foundations of Differential Privacy", 3.5):

- sequential: epsilons add and deltas add (exact);
- parallel: ``with acct.parallel() as block:`` -- spends made through the block are on
  disjoint partitions of the data and cost the largest epsilon and the largest delta among
  the partitions (exact); spends on the accountant itself are always sequential;
- group privacy: ``Accountant(..., group_size=k)`` protects groups of k records; each
  outermost charge (eps, delta) becomes (k*eps, k*exp((k-1)*eps)*delta), the delta term
  rounded up;
- advanced composition (Dwork, Rothblum & Vadhan 2010): reported by
  :meth:`Accountant.advanced_composition`, and used for budget checks when the caller opts in
  with ``composition="advanced"`` and it is tighter than the sequential sum.

zCDP (Bun & Steinke 2016; Canonne, Kamath & Steinke 2020): ``Accountant(rho=...)`` holds a
rho-zCDP budget, and ``Accountant(epsilon, delta, composition="zcdp")`` an (epsilon, delta)
budget that charges compose through zCDP (its rho budget is the largest rho whose tight
conversion at delta is at most epsilon, :func:`dpfast.zcdp.rho_from_epsilon_delta`). Such
an accountant charges rho: a Gaussian release its exact ``Delta_2**2 / (2 sigma**2)`` (the
``rho=`` of a spend), a pure epsilon-DP charge ``epsilon**2 / 2`` (computed exactly from the
exact epsilon and rounded up); rhos add exactly, a parallel block costs its largest rho and a
group of k costs ``k**2 rho``. An (epsilon, delta) charge with delta > 0 and no rho has no
zCDP cost and is refused. :attr:`Accountant.spent` and :attr:`Accountant.remaining` read in
each definition (``.epsilon``, ``.delta``, ``.rho``).

With ``ledger="FILE"`` the budget and every charge live in a file (:mod:`dpfast.ledger`):
charges are durable before any noise is drawn, every process that opens the file shares
the budget, and a ledger found damaged counts as exhausted (:class:`LedgerDamagedError`).

Many small releases against a durable budget: ``acct.lease(epsilon=...)`` (``rho=`` for a
zCDP accountant) reserves a slice with one durable charge, a :class:`Lease` that mechanisms
take as ``accountant=`` and that spends in memory; closing it gives the unspent rest back
with one durable return record. A process that dies holding a lease leaves its whole slice
spent; a return the ledger cannot vouch for (naming no open reservation of the same ledger,
or giving back more than it reserved) is damage.

The package holds one concern per module: :mod:`.amounts` (exact amounts and the bounds
computed from them), :mod:`.composition` (parallel blocks and partitions, group privacy,
advanced composition's sums, a zCDP budget), :mod:`.books` (an accountant's state under its
lock, and the check and charge of a spend), :mod:`.accountant` (:class:`Accountant`),
:mod:`.ledgered` (the accountant's side of a ledger file; the file format is
:mod:`dpfast.ledger`'s), :mod:`.leases` (:class:`Lease`), :mod:`.readings`
(:class:`Budget`, :class:`LedgerEntry`), :mod:`.defaults` (the default accountant, what
``accountant=`` accepts, forked children), :mod:`.roles` (what the modules below
:class:`Accountant` ask of it, as protocols, so that every import points down) and
:mod:`.errors`.

Examples
--------
>>> import dpfast as dp
>>> acct = dp.Accountant(epsilon=1.0)
>>> for _ in range(10):
...     acct.spend(0.1)
>>> tuple(acct.spent), acct.check(0.1)
((1.0, 0.0), False)
"""
from ..ledger import LedgerError
from .accountant import Accountant
# Ledger-backed accountants pickled before this was a package name this function.
from .accountant import reopen as _reopen  # noqa: F401
from .composition import ParallelBlock, Partition
from .defaults import AccountantLike as AccountantLike
from .defaults import composes_in_zcdp as composes_in_zcdp
from .defaults import default_accountant, resolve_accountant
from .errors import BudgetExceededError, LedgerDamagedError
from .leases import Lease
from .readings import Budget, LedgerEntry

__all__ = ["Accountant", "Budget", "BudgetExceededError", "Lease", "LedgerDamagedError",
           "LedgerEntry", "LedgerError", "ParallelBlock", "Partition", "default_accountant",
           "resolve_accountant"]
