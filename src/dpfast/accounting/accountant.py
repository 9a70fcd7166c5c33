"""The accountant: a privacy budget and the record of what has been spent from it.

:class:`Accountant` is the public face of an accountant's books (:mod:`.books`: the state,
the lock, the check and charge of a spend): checking its arguments, opening its ledger
(:mod:`.ledgered`), reading what was spent, and handing out parallel blocks
(:mod:`.composition`) and leases (:mod:`.leases`). The budget arithmetic is exact
(:mod:`.amounts`). See :mod:`dpfast.accounting` for what it promises.
"""
from __future__ import annotations

import contextvars
import math
import numbers
import os
from typing import TYPE_CHECKING

from .. import validation as _v
from .amounts import as_float, exact, float_up, log_inv_up, sub
from .books import Books
from .composition import ParallelBlock, advanced_bound, zcdp_budget
from .errors import check_label, shown
from .leases import Lease, lease_slice
from .ledgered import budget_header, ledger_budget, open_ledger, redeem
from .readings import Budget, LedgerEntry, entries

if TYPE_CHECKING:
    from typing import Literal

__all__ = ["Accountant", "context_stack", "reopen"]


class Accountant(Books):
    """Accountant(epsilon=inf, delta=0.0, *, rho=None, group_size=1, composition="basic", delta_prime=None, ledger=None, shared_ledger=False)

    A privacy budget and the record of what has been spent from it.

    An (epsilon, delta) accountant reports its budget as :attr:`epsilon` and :attr:`delta`,
    and what was spent and what remains as (epsilon, delta) pairs (:attr:`spent`,
    :attr:`remaining`). A zCDP accountant, ``Accountant(rho=...)``, reports its budget in
    :attr:`rho` and what was spent and remains in ``spent.rho`` and ``remaining.rho``: its
    (epsilon, delta) readings are epsilon at :attr:`delta`, so with a pure rho budget (no
    ``delta`` given) ``remaining`` reads ``(inf, 0.0)``, and ``spent`` too once anything has
    been spent (rho bounds no finite epsilon at delta 0).

    Parameters
    ----------
    epsilon : float, optional
        Total epsilon budget, > 0. ``float('inf')`` (the default) means unlimited: spends are
        still recorded.
    delta : float, optional
        Total delta budget, in [0, 1]. Default 0 (pure differential privacy). With ``rho``,
        the delta at which :attr:`spent` and :attr:`remaining` read epsilon (in [0, 1)).
    rho : float, optional, keyword-only
        A rho-zCDP budget (> 0; ``inf``: unlimited, charges recorded). The accountant then
        charges every spend in rho (see :mod:`dpfast.accounting`); ``epsilon`` is not given.
    group_size : int, optional
        Protect groups of this many records (default 1, individuals). Each outermost charge
        (a spend outside any block, or a whole outermost parallel block) of (eps, delta) is
        charged as (k*eps, k*exp((k-1)*eps)*delta) with k = ``group_size`` (Dwork & Roth,
        Theorem 2.2 and its approximate-DP form). The epsilon part is exact; the delta part
        involves exp and is rounded up, so it is an upper bound within a few ulps.
    composition : {"basic", "advanced", "zcdp"}, optional
        ``"basic"`` (default): spends compose sequentially (sums). ``"advanced"``: a spend is
        also accepted when the advanced composition bound (see
        :meth:`advanced_composition`) for ``delta_prime`` fits the budget, and
        :attr:`spent`/:attr:`remaining` report that bound whenever it has the smaller
        epsilon and fits. ``"zcdp"``: the (epsilon, delta) budget (delta > 0) is held as
        the rho budget it allows (:func:`dpfast.zcdp.rho_from_epsilon_delta`) and spends
        compose in rho (what ``rho=`` implies too).
    delta_prime : float, optional
        The delta' of advanced composition, in (0, 1) and at most ``delta``; required with
        ``composition="advanced"`` and refused otherwise.
    ledger : str or os.PathLike, optional
        A file that keeps the budget and every charge (see :mod:`dpfast.ledger`): created
        with this budget if it does not exist; if it does, it must hold the same budget, and
        what it records as spent is spent. Each charge is made durable before the spend
        returns (so before any noise is drawn), and every process that opens the file
        shares the budget (:meth:`from_ledger` opens one without restating its budget).
        A ledger found damaged counts as exhausted: :attr:`spent` shows the whole budget
        and every spend raises :class:`LedgerDamagedError`. The ledger and its key file
        (``<ledger>.dpfast-key``) are refused when someone else could have written them
        (owned by another user, writable by others, symbolic links, a directory others can
        write): see :mod:`dpfast.ledger`.
    shared_ledger : bool, optional, keyword-only
        Accept a ledger, key file and directory that other users can write (default
        False). Risk: every user who can write these files, or read the key file, can
        rewrite the history, raise the budget or remove charges undetected; use it only
        for users you trust with the whole budget.

    Raises
    ------
    TypeError
        ``epsilon``, ``delta``, ``rho`` or ``delta_prime`` is not a real number,
        ``group_size`` not an int, ``composition`` not a str, ``ledger`` not a path, or
        ``shared_ledger`` not a bool.
    ValueError
        ``epsilon`` is 0, negative or NaN, ``delta`` is outside [0, 1], ``rho`` is not
        > 0; both an epsilon and a rho budget are given, or ``rho`` with
        ``composition="advanced"`` or with ``delta`` >= 1; ``composition="zcdp"`` with a
        finite epsilon and ``delta`` outside (0, 1); ``group_size`` < 1; an unknown
        ``composition``; ``delta_prime`` missing with ``composition="advanced"``, given
        without it, outside (0, 1) or above ``delta``; ``shared_ledger=True`` without a
        ``ledger``.
    LedgerError
        ``ledger`` is not a dpfast ledger (or one of the first format), holds another
        budget, or could have been written by someone else (see :mod:`dpfast.ledger`).
    LedgerDamagedError
        The ledger's budget record fails its checks, the file is empty, or the ledger was
        deleted while its key file remains.
    OSError
        The ledger cannot be created or opened (``FileNotFoundError`` for a directory that
        does not exist).

    Notes
    -----
    Thread-safe: checking and recording a spend is one atomic step, so concurrent spends
    never overrun the budget. ``with acct:`` makes ``acct`` the default accountant for
    mechanisms called with ``accountant=None`` inside the block (per thread / asyncio task,
    via :mod:`contextvars`; a thread started inside the block does not inherit it, so pass
    ``accountant=`` explicitly there).

    With a ledger the accountant holds two file descriptors: :meth:`close` releases them
    (so does garbage collection); ``with contextlib.closing(acct):`` closes it at the end of
    a block (``with acct:`` keeps its meaning: it makes ``acct`` the default accountant).

    Across processes: an accountant without a ledger lives in the memory of the process that
    made it. It cannot be pickled (so it is not sent to ``spawn`` or ``forkserver``
    workers), and the copy a forked child inherits refuses to spend (``RuntimeError``):
    otherwise every process would spend the whole budget and the parent would see none of
    it. Give it a ``ledger=`` file to share a budget between processes, or between runs.

    Advanced composition assumes the (epsilon, delta) of each spend is fixed in advance (the
    mechanisms and their inputs may be chosen adaptively); choosing later epsilons from
    earlier outputs needs a privacy filter (Rogers, Roth, Ullman & Vadhan 2016), which this
    class does not implement. With all spends of the same epsilon, as in the textbook theorem,
    stopping when the budget runs out is covered.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> for _ in range(10):
    ...     acct.spend(0.1)
    >>> tuple(acct.spent)
    (1.0, 0.0)
    >>> acct.spend(0.1)
    Traceback (most recent call last):
    ...
    dpfast.accounting.BudgetExceededError: ...

    Groups of three records cost three times as much:

    >>> acct = dp.Accountant(epsilon=3.0, group_size=3)
    >>> acct.spend(1.0)
    >>> tuple(acct.spent)
    (3.0, 0.0)

    A rho-zCDP budget is read in rho; with no ``delta`` to read epsilon at, its (epsilon,
    delta) readings are unbounded:

    >>> acct = dp.Accountant(rho=0.5)
    >>> acct.spend(rho=0.125)
    >>> acct.rho, acct.spent.rho, acct.remaining.rho
    (0.5, 0.125, 0.375)
    >>> tuple(acct.spent), tuple(acct.remaining)
    ((inf, 0.0), (inf, 0.0))
    >>> acct = dp.Accountant(rho=0.5, delta=1e-6)      # epsilon read at delta = 1e-6
    >>> acct.spend(rho=0.125)
    >>> round(acct.spent.epsilon, 3), round(acct.epsilon, 3)
    (2.419, 5.222)
    """
    def __init__(self, epsilon: float = math.inf, delta: float = 0.0, *,
                 rho: float | None = None,
                 group_size: int | numbers.Integral = 1,
                 composition: "Literal['basic', 'advanced', 'zcdp']" = "basic",
                 delta_prime: float | None = None,
                 ledger: "str | os.PathLike[str] | None" = None,
                 shared_ledger: bool = False) -> None:
        func = "Accountant"
        if isinstance(epsilon, float) and math.isinf(epsilon) and epsilon > 0:
            eps = math.inf
        else:
            eps = _v.check_epsilon(epsilon, func)
        dlt = _v.check_real(delta, "delta", func, low=0.0, high=1.0,
                            low_open=False, high_open=False)
        if (isinstance(group_size, bool) or not isinstance(group_size, numbers.Integral)):
            raise TypeError(f"The 'group_size' parameter of {func} must be an int >= 1. "
                            f"Got {shown(group_size)} instead.")
        if group_size < 1:
            raise ValueError(f"The 'group_size' parameter of {func} must be an int >= 1. "
                             f"Got {shown(group_size)} instead.")
        if not isinstance(composition, str):
            raise TypeError(f"The 'composition' parameter of {func} must be 'basic', "
                            f"'advanced' or 'zcdp'. Got {shown(composition)} instead.")
        if composition not in ("basic", "advanced", "zcdp"):
            raise ValueError(f"The 'composition' parameter of {func} must be 'basic', "
                             f"'advanced' or 'zcdp'. Got {shown(composition)} instead.")
        if composition != "advanced" and delta_prime is not None:
            raise ValueError(f"The 'delta_prime' parameter of {func} applies only with "
                             f"composition='advanced'. Got {shown(delta_prime)} instead.")
        zcdp = zcdp_budget(eps, dlt, rho, composition, func)
        if composition == "advanced":
            if delta_prime is None:
                raise ValueError(f"The 'delta_prime' parameter of {func} is required with "
                                 f"composition='advanced'. Got {delta_prime!r} instead.")
            dp_ = _v.check_real(delta_prime, "delta_prime", func, low=0.0, high=1.0)
            if dp_ > dlt:
                raise ValueError(
                    f"The 'delta_prime' parameter of {func} must be at most the delta budget "
                    f"({dlt!r}), or advanced composition could never fit. "
                    f"Got {delta_prime!r} instead.")
        else:
            dp_ = None
        if ledger is not None and not isinstance(ledger, (str, os.PathLike)):
            raise TypeError(f"The 'ledger' parameter of {func} must be a path (str or "
                            f"os.PathLike) or None. Got {shown(ledger)} instead.")
        if type(shared_ledger) is not bool:
            raise TypeError(f"The 'shared_ledger' parameter of {func} must be True or False. "
                            f"Got {shown(shared_ledger)} instead.")
        if shared_ledger and ledger is None:
            raise ValueError(f"The 'shared_ledger' parameter of {func} applies only with "
                             "ledger=. Got True instead.")
        self._setup(eps, dlt, int(group_size), dp_, zcdp)
        if ledger is not None:
            self._attach(open_ledger(ledger, budget_header(self), shared_ledger))

    def close(self) -> None:
        """Close this process's open leases (each gives back its unspent rest, see
        :meth:`lease`), then the ledger file's descriptors (nothing more to do without a
        ledger).

        The accountant cannot spend or read its ledger afterwards (:class:`LedgerError`);
        every charge made is already durable. ``with contextlib.closing(acct):`` closes it
        at the end of a block. If a lease's return cannot be written, its whole slice stays
        spent, the rest are still closed, and the first such error is raised at the end.
        """
        failed: BaseException | None = None
        for lease in list(self._lease_objects):
            if lease._pid != os.getpid() or lease._forked:
                continue                    # a forked child never returns the parent's slice
            try:
                lease.close()
            except Exception as exc:        # that slice stays spent; close the others
                failed = failed or exc
        if self._ledger_file is not None:
            with self._tally:
                self._finalizer()
        if failed is not None:
            raise failed

    @classmethod
    def from_ledger(cls, path: "str | os.PathLike[str]", *,
                    shared_ledger: bool = False) -> "Accountant":
        """The accountant of an existing ledger file, with the budget the file holds.

        Parameters
        ----------
        path : str or os.PathLike
            The ledger file.
        shared_ledger : bool, optional, keyword-only
            Accept files other users can write (see :class:`Accountant`; default False).

        Raises
        ------
        FileNotFoundError
            No ledger (and no key file) at ``path``.
        LedgerDamagedError
            The budget record fails, the file is empty, or the ledger was deleted while
            its key file remains.
        LedgerError
            Not a ledger, the first ledger format, or files someone else could have written.

        Examples
        --------
        >>> import os, tempfile, dpfast as dp
        >>> path = os.path.join(tempfile.mkdtemp(), "budget.ledger")
        >>> dp.Accountant(epsilon=2.0, ledger=path).spend(0.5)
        >>> tuple(dp.Accountant.from_ledger(path).remaining)
        (1.5, 0.0)
        """
        if type(shared_ledger) is not bool:
            raise TypeError("The 'shared_ledger' parameter of Accountant.from_ledger must be "
                            f"True or False. Got {shown(shared_ledger)} instead.")
        file = open_ledger(path, None, shared_ledger)
        eps, dlt, k, delta_prime, zcdp = ledger_budget(file)
        acct = cls.__new__(cls)
        acct._setup(eps, dlt, k, delta_prime, zcdp)
        acct._attach(file)
        return acct

    def __reduce__(self) -> "tuple[object, ...]":
        if self._ledger_file is None:
            raise TypeError(
                "An Accountant without a ledger lives in one process and cannot be pickled: "
                "a copy in another process would spend the whole budget again, unseen. "
                "Create it with ledger='FILE' to share its budget between processes.")
        return (reopen, (self._ledger_file.path, self._ledger_file.shared))

    # -- queries ---------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """The epsilon budget (a zCDP accountant: the epsilon asked for, or its rho budget
        read at :attr:`delta`)."""
        return self._epsilon_budget()

    @property
    def delta(self) -> float:
        """The delta budget (a zCDP accountant: the delta epsilon is read at)."""
        return self._delta_budget()

    @property
    def rho(self) -> float | None:
        """The rho-zCDP budget, or None for an (epsilon, delta) accountant."""
        return self._rho_budget()

    @property
    def group_size(self) -> int:
        """The number of records each guarantee covers (1 = individuals)."""
        return self._k

    @property
    def composition(self) -> "Literal['basic', 'advanced', 'zcdp']":
        """``"basic"``, ``"advanced"`` or ``"zcdp"``: how spends are composed for budget
        checks."""
        if self._zcdp:
            return "zcdp"
        return "basic" if self._delta_prime is None else "advanced"

    @property
    def ledger_path(self) -> str | None:
        """The ledger file's path, or None for an accountant held in memory only."""
        return None if self._ledger_file is None else self._ledger_file.path

    @property
    def spent(self) -> Budget:
        """(epsilon, delta) spent so far (by every process, with a ledger file), with the
        zCDP reading as ``.rho`` (a :class:`Budget`).

        The sequential sum, or with ``composition="advanced"`` the advanced composition bound
        when it has the smaller epsilon and fits the budget (its epsilon rounded up). A zCDP
        accountant: rho exactly (rounded up), and the epsilon of that rho at :attr:`delta`
        (its tight conversion, rounded up; ``inf`` when :attr:`delta` is 0).
        """
        with self._synced():
            if self._zcdp:
                rho = self._reported_exact()[0]
                return Budget(self._epsilon_at(rho), self._read_delta if rho else 0.0,
                              float_up(rho))
            eps, dlt = self._reported()
            return Budget(eps, dlt, self._implied_rho())

    @property
    def remaining(self) -> Budget:
        """(epsilon, delta) still available: the budget minus :attr:`spent`, and ``.rho``.

        A zCDP accountant: rho exactly (rounded down); epsilon is :attr:`epsilon` minus the
        epsilon spent (both read at :attr:`delta`, which is not consumed: delta is
        :attr:`delta`). An (epsilon, delta) accountant: ``.rho`` is the rho of the largest
        pure epsilon charge that fits (``eps**2 / 2``).
        """
        with self._synced():
            if self._zcdp:
                spent = self._reported_exact()[0]
                rho = as_float(sub(self._budget[0], spent))
                if rho > 0 and exact(rho) > sub(self._budget[0], spent):
                    rho = math.nextafter(rho, 0.0)      # never overstated
                total = self.epsilon
                eps = total if math.isinf(total) else max(total - self._epsilon_at(spent), 0.0)
                return Budget(eps, self._read_delta, rho)
            eps, dlt = self._remaining()
            return Budget(eps, dlt, eps * eps / 2)

    @property
    def ledger(self) -> "list[LedgerEntry]":
        """List of :class:`LedgerEntry` (epsilon, delta, label) for every spend, in order
        (of every process, with a ledger file)."""
        with self._synced():
            records = list(self._tally.records)
        return entries(records)

    def __len__(self) -> int:
        with self._synced():
            return len(self._tally.records)

    def __repr__(self) -> str:
        if self._ledger_file is not None and self._ledger_file.closed:
            return f"<Accountant: ledger {self._ledger_file.path!r}, closed>"
        eps, dlt = self.spent
        extra = "" if self._k == 1 else f", group_size={self._k}"
        if self._zcdp:
            extra += f", rho={self.rho!r}; spent rho={self.spent.rho!r}"
        if self._delta_prime is not None:
            extra += f", composition='advanced', delta_prime={as_float(self._delta_prime)!r}"
        if self._ledger_file is not None:
            extra += f", ledger={self._ledger_file.path!r}"
        return (f"Accountant(epsilon={self.epsilon!r}, delta={self.delta!r}{extra}; "
                f"spent=({eps!r}, {dlt!r}) over {len(self)} spends)")

    def advanced_composition(self, delta_prime: float) -> "tuple[float, float]":
        """The advanced composition bound for the spends so far.

        For outermost charges (eps_i, delta_i) (spends outside any block and whole outermost
        parallel blocks, after group scaling) the composition is (eps_total, delta_total)-DP
        with

        ``eps_total = sqrt(2 ln(1/delta_prime) sum eps_i^2) + sum eps_i (e^eps_i - 1)`` and
        ``delta_total = sum delta_i + delta_prime``,

        which for k spends of the same eps is Dwork-Rothblum-Vadhan's
        ``sqrt(2k ln(1/delta')) eps + k eps (e^eps - 1)`` (Dwork & Roth, Theorem 3.20).

        Parameters
        ----------
        delta_prime : float
            The extra failure probability delta', in (0, 1).

        Returns
        -------
        (float, float)
            ``(eps_total, delta_total)``. ``eps_total`` is computed in floats rounded up at
            every step (libm results padded by two ulps), so it is an upper bound;
            ``delta_total`` is the exact decimal sum, like :attr:`spent`. Only useful when
            ``eps_total`` is below the sequential sum, which happens for many small spends.

        Examples
        --------
        >>> import dpfast as dp
        >>> acct = dp.Accountant()
        >>> for _ in range(1000):
        ...     acct.spend(0.01)
        >>> acct.spent[0]
        10.0
        >>> eps, delta = acct.advanced_composition(1e-6)
        >>> round(eps, 4), delta
        (1.7628, 1e-06)
        """
        dp_ = _v.check_real(delta_prime, "delta_prime", "Accountant.advanced_composition",
                            low=0.0, high=1.0)
        if self._zcdp:
            raise ValueError("Accountant.advanced_composition: this accountant composes in "
                             "zCDP, which is tighter; read spent (epsilon at its delta).")
        log_inv = log_inv_up(dp_)
        with self._synced():
            units = self._units()
            basic_delta = self._tally.spent[1]
        eps = advanced_bound(units, log_inv)
        return float_up(eps), as_float(basic_delta + exact(dp_))

    # -- blocks ----------------------------------------------------------------------
    def parallel(self, *, label: str | None = None) -> ParallelBlock:
        """A block whose spends are each on a disjoint partition of the data.

        Use it as ``with acct.parallel() as block:`` and spend *through the block*: each
        ``block.spend(...)``, or each mechanism called with ``accountant=block``, is one
        partition; ``block.partition()`` gathers sequential spends (and nested parallel
        blocks) into one partition. The block costs the largest epsilon and the largest delta
        among its partitions (taking each maximum separately is an upper bound on the
        parallel composition of the partitions' (epsilon, delta) guarantees). Every spend is
        checked against the budget as it happens: one that would raise the block's cost
        beyond the budget raises :class:`BudgetExceededError` and changes nothing.

        Spends made on the accountant itself are sequential, inside the ``with`` block too,
        so only the code's explicit choice makes a spend parallel; a block that has ended
        refuses further spends (``RuntimeError``).

        Parameters
        ----------
        label : str, optional
            Name of the block in :attr:`LedgerEntry.block <LedgerEntry>` paths (default
            ``"parallel-<n>"``).

        Returns
        -------
        ParallelBlock

        Examples
        --------
        >>> import dpfast as dp
        >>> acct = dp.Accountant(epsilon=1.0)
        >>> with acct.parallel() as block:
        ...     for _ in range(100):
        ...         block.spend(1.0)        # 100 disjoint partitions
        >>> tuple(acct.spent), block.cost
        ((1.0, 0.0), (1.0, 0.0))
        >>> acct = dp.Accountant(epsilon=1.0)
        >>> with acct.parallel() as block:
        ...     block.spend(0.5)
        ...     north = block.partition()   # one partition, two sequential spends
        ...     north.spend(0.25)
        ...     north.spend(0.5)
        >>> tuple(acct.spent)
        (0.75, 0.0)
        """
        return ParallelBlock(self, None, check_label(label, "Accountant.parallel"))

    # -- leases ----------------------------------------------------------------------
    def lease(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None, label: str | None = None) -> Lease[Accountant]:
        """Reserve a slice of the budget durably once, to spend it in memory (a
        :class:`Lease`).

        The reservation is one charge (with a ledger file: one durable record, marked as a
        lease reservation with a random id, made durable before this returns); spends from
        the lease then cost no file access at all. :meth:`Lease.close` (or the end of
        ``with acct.lease(...) as lease:``) gives the unspent rest back with one durable
        return record naming the reservation. If the process dies before that, the whole
        slice stays spent: a crash never frees budget that may have been used.

        The slice is in the accountant's own currency: ``epsilon`` (and ``delta``) for an
        (epsilon, delta) accountant, ``rho`` for a zCDP one. It is the amount for one
        individual: with ``group_size`` k the accountant charges the slice scaled for groups,
        and the return gives back the scaled slice minus the scaled sum of what was spent
        (never more), so the lease as a whole is charged exactly as the group-scaled
        sequential composition of its spends.

        Parameters
        ----------
        epsilon : float, optional
            The epsilon of the slice (an (epsilon, delta) accountant), > 0.
        delta : float, optional
            The delta of the slice, in [0, 1) (default 0; 0 for a zCDP accountant).
        rho : float, optional, keyword-only
            The rho of the slice (a zCDP accountant), > 0.
        label : str, optional, keyword-only
            A name for the reservation and its return in the ledger.

        Returns
        -------
        Lease

        Raises
        ------
        BudgetExceededError
            The slice does not fit in what remains; nothing was charged.
        TypeError, ValueError
            A bad slice (naming the argument), a slice not in the accountant's currency, or
            an accountant with ``composition="advanced"`` (whose bound a return would change
            after the fact); nothing was charged.

        Examples
        --------
        >>> import dpfast as dp
        >>> acct = dp.Accountant(epsilon=1.0)
        >>> with acct.lease(epsilon=0.5) as lease:
        ...     for _ in range(100):
        ...         lease.spend(0.001)
        >>> tuple(acct.spent)
        (0.1, 0.0)
        """
        func = "Accountant.lease"
        label = check_label(label, func)
        cost, asked = lease_slice(self, epsilon, delta, rho, func)
        return Lease(self, cost, asked, label)

    def _redeem(self, commits: str, cost: "tuple[float | None, float, float | None]",
                label: str) -> bool:
        """Whether an interrupted release committed to ``commits`` may complete without a
        new charge (see :func:`dpfast.accounting.ledgered.redeem`; a durable zero-cost record
        of the redemption is appended if so)."""
        return redeem(self, commits, cost, label)

    # -- spending --------------------------------------------------------------------
    def check(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None) -> bool:
        """True if a spend of (epsilon, delta) (or ``rho``) here would fit in the remaining
        budget.

        Accounts for the group size and the composition rule exactly as :meth:`spend`
        would; spends nothing.

        Examples
        --------
        >>> import dpfast as dp
        >>> acct = dp.Accountant(epsilon=1.0)
        >>> acct.spend(0.75)
        >>> acct.check(0.25), acct.check(0.5)
        (True, False)
        """
        return self._check_at(None, epsilon, delta, rho)

    def spend(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None, label: object = None) -> None:
        """Charge (epsilon, delta) to the budget, or raise and charge nothing.

        ``rho`` states the charge's zCDP cost (a Gaussian release's
        ``Delta_2**2 / (2 sigma**2)``): a zCDP accountant charges it (and a pure epsilon
        charge as ``epsilon**2 / 2``); an (epsilon, delta) accountant charges (epsilon,
        delta), records rho, and refuses a charge given in rho alone (ValueError).

        A spend on the accountant itself is sequential; spends through a parallel block or a
        partition (see :meth:`parallel`) are charged as the increase of the block's cost.
        With ``group_size`` k > 1 the outermost charge is scaled for groups; with a ledger
        file the charge is durable before this returns.

        Raises
        ------
        BudgetExceededError
            If the spend does not fit; the message gives what remains and how to proceed.
        TypeError, ValueError
            If epsilon or delta is not a valid privacy parameter.
        RuntimeError
            In a forked child, for an accountant without a ledger (see the class notes).
        """
        # Groups of one, basic composition, no ledger file: when both amounts are floats seen
        # before, the whole spend is one compiled step (a spend is on every release's path).
        if self._simple and rho is None and self._tally.spend(epsilon, delta, label):
            return
        self._spend_at(None, epsilon, delta, label, rho)

    # -- default-accountant context --------------------------------------------------
    def __enter__(self) -> "Accountant":
        context_stack.set(context_stack.get() + (self,))
        return self

    def __exit__(self, *exc: object) -> "Literal[False]":
        stack = context_stack.get()
        if not stack or stack[-1] is not self:
            raise RuntimeError("Accountant context exited out of order.")
        context_stack.set(stack[:-1])
        return False


def reopen(path: str, shared: bool) -> Accountant:
    """Unpickle a ledger-backed accountant: the same ledger, opened in this process."""
    return Accountant.from_ledger(path, shared_ledger=shared)


# Pickles name it by the one path every version since 0.1 has (dpfast.accounting._reopen, an
# alias the package keeps): a pickle made here loads wherever the package is.
reopen.__module__, reopen.__qualname__, reopen.__name__ = ("dpfast.accounting", "_reopen",
                                                           "_reopen")


# The accountants of the enclosing ``with acct:`` blocks, innermost last (per thread and
# asyncio task): :func:`dpfast.accounting.default_accountant` is the innermost.
context_stack: contextvars.ContextVar[tuple[Accountant, ...]] = contextvars.ContextVar(
    "dpfast_accountant_stack", default=())
