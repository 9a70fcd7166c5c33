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
"""
import contextvars
import math
import numbers
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from . import _native
from . import validation as _v
from .ledger import (CHARGE, RETURN, Damaged, HeldSignals, LedgerError, LedgerFile,
                     hold_signals, release_signals)
from .zcdp import epsilon_from_rho, rho_from_epsilon_delta

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal, TypeAlias

    # An exact amount: an int number of units of 10**-_K, or math.inf.
    _Amount: TypeAlias = int | float
    # An (epsilon, delta) pair of exact amounts; the epsilon part is always finite.
    _Cost: TypeAlias = tuple[int, _Amount]
    # Accountant._plan's result: (updates, root, old, new, increase).
    _Plan: TypeAlias = "tuple[list[tuple[_Node, _Cost]], _Node | None, _Cost, _Cost, _Cost]"

__all__ = ["Accountant", "Budget", "BudgetExceededError", "Lease", "LedgerDamagedError",
           "LedgerEntry", "LedgerError", "ParallelBlock", "Partition", "default_accountant",
           "resolve_accountant"]

# Exact amounts are ints in units of 10**-_K (math.inf for an unlimited budget).
_K = 330
_UNIT: int = 10 ** _K
_ZERO = (0, 0)


class BudgetExceededError(ValueError):
    """A spend would take an accountant past its budget; nothing was spent."""


class LedgerDamagedError(BudgetExceededError, LedgerError):
    """The accountant's ledger file is damaged (see :mod:`dpfast.ledger`): it counts as
    exhausted, and every spend is refused. The message names the line and what is wrong."""


def _shown(value: object) -> str:
    """A bad argument as messages may show it: a short public number or string itself,
    anything else by its type only (it could hold private data)."""
    if value is None or type(value) in (bool, int, float):
        text = repr(value)
        if len(text) <= 24:
            return text
    if type(value) is str and len(value) <= 24 and value.isprintable():
        return repr(value)
    return f"a {type(value).__module__}.{type(value).__qualname__}".replace("a builtins.", "a ")


def _exact(x: float) -> "_Amount":
    """A float >= 0 as the decimal it prints as, in units of 10**-_K, exactly (an int);
    math.inf stays infinite."""
    if x == math.inf:
        return math.inf
    mant, _, exp = repr(x + 0.0).partition("e")
    whole, _, frac = mant.partition(".")
    shift = _K + (int(exp) if exp else 0) - len(frac)    # >= 6 for every double
    return int(whole + frac) * 10 ** shift  # type: ignore[no-any-return]  # int ** int: Any


def _ceil_amount(x: float) -> "_Amount":
    """The least exact amount (a whole number of units of 10**-_K) >= the float x >= 0."""
    if x == math.inf:
        return math.inf
    p, q = x.as_integer_ratio()
    return -(-p * _UNIT // q)


def _float(x: "_Amount") -> float:
    """An exact amount as the nearest float (Python's int division rounds correctly)."""
    if isinstance(x, float):
        return x
    try:
        return x / _UNIT
    except OverflowError:
        return math.inf


def _float_down(x: "_Amount") -> float:
    """The largest float whose reading as a charge (its decimal, :func:`_exact`) is at most
    the exact amount ``x``: a remaining budget shown as this float can be spent."""
    f = _float(x)
    while f > 0.0 and not math.isinf(f) and _exact(f) > x:
        f = math.nextafter(f, 0.0)
    return f


def _add(a: "_Amount", b: "_Amount") -> "_Amount":
    """a + b for exact amounts, either of which may be infinite (int + inf would convert the
    int to a float, which overflows)."""
    return math.inf if a == math.inf or b == math.inf else a + b


def _sub(a: "_Amount", b: "_Amount") -> "_Amount":
    """a - b for exact amounts, a possibly infinite, b finite."""
    return math.inf if a == math.inf else a - b


# Conversions of the epsilons and deltas seen so far (a few distinct values in practice),
# keyed by the float itself; emptied if it ever grows past _CACHE_MAX.
_eps_cache: "dict[float, int]" = {}
_delta_cache: "dict[float, int]" = {}
_CACHE_MAX = 4096


def _amount(value: float, name: str, func: str) -> int:
    """A validated epsilon (a float > 0) or delta (in [0, 1)) as an exact amount."""
    cache = _eps_cache if name == "epsilon" else _delta_cache
    if type(value) is float:
        hit = cache.get(value)
        if hit is not None:
            return hit
    x = _v.check_epsilon(value, func) if name == "epsilon" else _v.check_delta(value, func)
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    amount: int
    cache[x] = amount = _exact(x)    # type: ignore[assignment]  # x is finite: an int
    return amount


def _up(x: float, ulps: int = 1) -> float:
    """``x`` moved ``ulps`` floats towards +inf.

    Correctly rounded operations (+, *, sqrt) are within half an ulp, so one step up gives an
    upper bound; libm's exp/expm1/log are not correctly rounded but are within one ulp on
    the platforms we support, so their results are moved up two steps.
    """
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def _float_up(x: "_Amount", unit: int = _UNIT) -> float:
    """The smallest float >= x / unit for an int x >= 0 (inf beyond the float range)."""
    if isinstance(x, float):
        return x
    try:
        f = x / unit
    except OverflowError:
        return math.inf
    p, q = f.as_integer_ratio()
    return math.nextafter(f, math.inf) if p * unit < x * q else f


def _exp_up(x: int) -> float:
    """An upper bound on exp(x / 10**_K) for an exact amount x >= 0, as a float (inf on
    overflow)."""
    try:
        return _up(math.exp(_float_up(x)), 2)
    except OverflowError:
        return math.inf


def _loss_term(eps: int) -> int | None:
    """Upper bound on eps * (e^eps - 1), the mean privacy loss term of advanced composition,
    as an exact amount, or None when it is beyond the float range."""
    if eps == 0:
        return 0
    x = _float_up(eps)
    try:
        m = _up(math.expm1(x), 2)
    except OverflowError:
        return None
    if math.isinf(m) or math.isinf(x):
        return None
    (p1, q1), (p2, q2) = x.as_integer_ratio(), m.as_integer_ratio()
    return -(-p1 * p2 * _UNIT // (q1 * q2))             # x * m, rounded up


def _log_inv_up(delta_prime: float) -> float:
    """Upper bound on ln(1/delta_prime), as a float."""
    return _up(-math.log(delta_prime), 2)


def _advanced_epsilon(sum_sq: int, loss: int, n_inf: int, log_inv: float) -> "_Amount":
    """sqrt(2 ln(1/delta') * sum eps_i^2) + sum eps_i (e^eps_i - 1), rounded up.

    ``sum_sq`` is the exact sum of squares (in units of 10**-2K), ``loss`` an exact sum of
    upper bounds, ``n_inf`` the number of loss terms that overflowed (making the bound
    infinite).
    """
    if n_inf:
        return math.inf
    if sum_sq == 0:
        return loss
    root = _up(math.sqrt(_up(2.0 * log_inv * _float_up(sum_sq, _UNIT * _UNIT))))
    return math.inf if math.isinf(root) else _ceil_amount(root) + loss


_rho_cache: "dict[int, int]" = {}


def _rho_of_epsilon(e: int) -> int:
    """The zCDP cost of a pure epsilon-DP charge, ``eps**2 / 2``, exactly, rounded up to a
    whole unit (``e`` an exact epsilon: the charge's epsilon read as its decimal, as every
    epsilon is; the float's distance from it is one of the floating-point effects bounded
    with the mechanisms, far below their own, see :func:`dpfast.laplace_privacy_loss`)."""
    r = _rho_cache.get(e)
    if r is None:
        if len(_rho_cache) >= _CACHE_MAX:
            _rho_cache.clear()
        _rho_cache[e] = r = -(-e * e // (2 * _UNIT))
    return r


def _rho_amount(rho: object, func: str) -> int:
    """A charge's rho: a finite float > 0, as an exact amount (its shortest decimal, like
    epsilon; releases pass a rho already rounded up past their formula's value)."""
    r = _v.check_real(rho, "rho", func, low=0.0)
    return _exact(r)  # type: ignore[return-value]  # finite: an int


def _zcdp_budget(eps: float, dlt: float, rho: object, composition: str,
                 func: str) -> "tuple[float, float | None] | None":
    """The (rho budget, epsilon asked for) of a zCDP accountant, or None for an (epsilon,
    delta) one; ValueError/TypeError for a budget that does not make sense."""
    if rho is not None:
        if composition == "advanced":
            raise ValueError(f"The 'rho' parameter of {func} sets a zCDP budget, which "
                             "composes in zCDP, not with composition='advanced'.")
        if not math.isinf(eps):
            raise ValueError(f"{func}: give either an epsilon budget or a rho budget, not "
                             "both (composition='zcdp' turns an (epsilon, delta) budget "
                             "into rho).")
        if dlt >= 1.0:
            raise ValueError(f"The 'delta' parameter of {func} (the delta epsilon is read "
                             f"at) must be in [0, 1). Got {dlt!r} instead.")
        if isinstance(rho, float) and rho == math.inf:
            return (math.inf, None)
        return (_v.check_real(rho, "rho", func, low=0.0), None)
    if composition != "zcdp":
        return None
    if math.isinf(eps):
        return (math.inf, None)
    if not 0.0 < dlt < 1.0:
        raise ValueError(f"The 'delta' parameter of {func} must be in (0, 1) with "
                         "composition='zcdp': zCDP gives (epsilon, delta) for delta > 0 "
                         f"only. Got {dlt!r} instead.")
    r = rho_from_epsilon_delta(eps, dlt)
    # Held as an exact decimal: the shortest decimal of the float below, which is below
    # r, so the budget never allows more than (eps, delta).
    return (math.nextafter(r, 0.0), eps)


class Budget(tuple):  # type: ignore[type-arg]
    """Budget(epsilon, delta, rho)

    An amount of privacy read in each definition: an (epsilon, delta) pair (it unpacks as
    one, ``eps, delta = acct.spent``, and compares equal to the plain tuple) with the zCDP
    reading as the attribute ``rho`` (outside the tuple).

    ``rho`` is exact for a zCDP accountant. For an (epsilon, delta) accountant it is the
    rho its charges imply: ``sum eps_i**2 / 2`` over its outermost charges when all are
    pure (rounded up), ``inf`` once any charge has delta > 0.
    """

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


_TEXTS: "dict[_Amount, str]" = {}


def _amount_text(a: "_Amount", remember: bool = True) -> str:
    """An exact amount as a short exact decimal (``1e-1``), or ``inf`` (remembered: a
    pipeline charges the same few amounts again and again; running totals, which never
    repeat, are not)."""
    text = _TEXTS.get(a)
    if text is None:
        if a == math.inf:
            return "inf"
        digits = str(a)
        mantissa = digits.rstrip("0") or "0"
        text = f"{mantissa}e{len(digits) - len(mantissa) - _K}"
        if remember and len(_TEXTS) < _CACHE_MAX:
            _TEXTS[a] = text
    return text


def _amount_parse(text: str) -> "_Amount":
    """The inverse of _amount_text; ValueError for anything else."""
    if text == "inf":
        return math.inf
    mantissa, _, exp = text.partition("e")
    value = int(mantissa) * 10 ** (int(exp) + _K)
    if value < 0:
        raise ValueError(text)
    return value  # type: ignore[no-any-return]  # int ** int: Any


_PARALLEL, _PARTITION = "parallel", "partition"


class _Node:
    """A parallel block or a partition: where a spend is made when it is not made on the
    accountant itself (see :meth:`Accountant.parallel`)."""

    def __init__(self, acct: "Accountant", parent: "_Node | None", kind: str,
                 label: str | None) -> None:
        self._acct = acct
        self._parent = parent
        self._kind = kind
        with acct._tally:
            acct._n_blocks += 1
            name = label if label is not None else f"{kind}-{acct._n_blocks}"
        self._path: tuple[str, ...] = (parent._path if parent else ()) + (name,)
        # Cost for one individual (before group scaling): the sum of the children for a
        # partition, the componentwise maximum over the children for a parallel block.
        self._cost: _Cost = _ZERO
        # For an outermost block only: its group-scaled cost, as charged to the accountant,
        # and the name of its charges in a durable ledger (for advanced composition).
        self._charged: _Cost = _ZERO
        self._unit: str | None = None
        self._pid = os.getpid()

    def __reduce__(self) -> "tuple[object, ...]":
        raise TypeError(
            f"A {type(self).__name__} cannot be copied or pickled: a copy would recompute "
            "the block's cost from a stale state and charge the accountant wrongly. Spend "
            "through the block itself, in the process that made it.")

    @property
    def cost(self) -> "tuple[float, float]":
        """(epsilon, delta) of this block so far, for one individual (before group scaling)."""
        with self._acct._tally:
            return _float(self._cost[0]), _float(self._cost[1])

    @property
    def path(self) -> "tuple[str, ...]":
        """Names of the enclosing blocks and this one, outermost first."""
        return self._path

    def _closed(self) -> "ParallelBlock | None":
        """The first block of this node's chain that is not open, if any."""
        node: _Node | None = self
        while node is not None:
            if isinstance(node, ParallelBlock) and not node._open:
                return node
            node = node._parent
        return None

    def spend(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None, label: object = None) -> None:
        """Charge (epsilon, delta) (or ``rho``, see :meth:`Accountant.spend`) here: as one
        partition of a parallel block, or added to a partition's other spends; raise
        :class:`BudgetExceededError` and charge nothing when the accountant's budget cannot
        cover the increase of the outermost block's cost. Mechanisms call this when given
        the block or partition as ``accountant=``."""
        self._acct._spend_at(self, epsilon, delta, label, rho)

    def check(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None) -> bool:
        """True if :meth:`spend` of (epsilon, delta) (or rho) here would fit; spends
        nothing."""
        return self._acct._check_at(self, epsilon, delta, rho)

    def __repr__(self) -> str:
        eps, dlt = self.cost
        return f"<{self._kind} {self._path!r}: cost (epsilon={eps!r}, delta={dlt!r})>"


class ParallelBlock(_Node):
    """Spends on disjoint partitions of the data, which cost the largest of them.

    Made by :meth:`Accountant.parallel` (or :meth:`Partition.parallel`, nested) and used as
    ``with acct.parallel() as block:``. Each spend made *through the block* (``block.spend``,
    or ``accountant=block`` in a mechanism) is one partition; :meth:`partition` gathers
    several spends into one. Spends made on the accountant itself stay sequential, inside
    the ``with`` block or not, so nothing but the code's explicit choice makes a spend
    parallel: not a suspended generator, a thread or an exception. Once the block has ended,
    spending through it raises ``RuntimeError``.
    """

    def __init__(self, acct: "Accountant", parent: "Partition | None",
                 label: str | None) -> None:
        super().__init__(acct, parent, _PARALLEL, label)
        self._open = False
        self._entered = False

    def __enter__(self) -> "ParallelBlock":
        if self._entered:
            raise RuntimeError("This parallel block has already been used; call "
                               "acct.parallel() again for a new block.")
        closed = self._parent._closed() if self._parent is not None else None
        if closed is not None:
            raise RuntimeError(f"The parallel block {closed.path!r} has ended: a block "
                               "cannot be opened inside it any more.")
        self._entered = self._open = True
        return self

    def __exit__(self, *exc: object) -> "Literal[False]":
        # What was spent inside stays spent: the block only stops taking new spends.
        self._open = False
        return False

    def partition(self, *, label: str | None = None) -> "Partition":
        """One partition of this block: spends through it add up, and it may hold further
        parallel blocks (:meth:`Partition.parallel`), which then cost their maximum within
        it.

        Parameters
        ----------
        label : str, optional
            Name of the partition in ledger paths (default ``"partition-<n>"``).
        """
        return Partition(self._acct, self, _check_label(label, "ParallelBlock.partition"))


class Partition(_Node):
    """One partition of a parallel block (:meth:`ParallelBlock.partition`): its spends add
    up. It can be spent through while its block is open."""

    def __init__(self, acct: "Accountant", parent: ParallelBlock, label: str | None) -> None:
        super().__init__(acct, parent, _PARTITION, label)

    def parallel(self, *, label: str | None = None) -> ParallelBlock:
        """A parallel block nested in this partition; see :meth:`Accountant.parallel`."""
        return ParallelBlock(self._acct, self, _check_label(label, "Partition.parallel"))


class Accountant:
    """Accountant(epsilon=inf, delta=0.0, *, rho=None, group_size=1, composition="basic", delta_prime=None, ledger=None, shared_ledger=False)

    A privacy budget and the record of what has been spent from it.

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
        charges every spend in rho (see the module notes); ``epsilon`` is not given.
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
                            f"Got {_shown(group_size)} instead.")
        if group_size < 1:
            raise ValueError(f"The 'group_size' parameter of {func} must be an int >= 1. "
                             f"Got {_shown(group_size)} instead.")
        if not isinstance(composition, str):
            raise TypeError(f"The 'composition' parameter of {func} must be 'basic', "
                            f"'advanced' or 'zcdp'. Got {_shown(composition)} instead.")
        if composition not in ("basic", "advanced", "zcdp"):
            raise ValueError(f"The 'composition' parameter of {func} must be 'basic', "
                             f"'advanced' or 'zcdp'. Got {_shown(composition)} instead.")
        if composition != "advanced" and delta_prime is not None:
            raise ValueError(f"The 'delta_prime' parameter of {func} applies only with "
                             f"composition='advanced'. Got {_shown(delta_prime)} instead.")
        zcdp = _zcdp_budget(eps, dlt, rho, composition, func)
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
                            f"os.PathLike) or None. Got {_shown(ledger)} instead.")
        if type(shared_ledger) is not bool:
            raise TypeError(f"The 'shared_ledger' parameter of {func} must be True or False. "
                            f"Got {_shown(shared_ledger)} instead.")
        if shared_ledger and ledger is None:
            raise ValueError(f"The 'shared_ledger' parameter of {func} applies only with "
                             "ledger=. Got True instead.")
        self._setup(eps, dlt, int(group_size), dp_, zcdp)
        if ledger is not None:
            self._attach(_open_ledger(ledger, self._header(), shared_ledger))

    def _setup(self, eps: float, dlt: float, k: int, delta_prime: float | None,
               zcdp: "tuple[float, float | None] | None" = None) -> None:
        self._k = k
        # zCDP: the budget is (rho, 0) and every charge is (rho, 0); (epsilon, delta) are
        # read at self._read_delta, against the epsilon asked for (composition="zcdp").
        self._zcdp = zcdp is not None
        self._read_delta = dlt
        self._eps_given: float | None = None
        if zcdp is not None:
            self._budget: tuple[_Amount, _Amount] = (_exact(zcdp[0]), 0)
            self._eps_given = zcdp[1]
        else:
            self._budget = (_exact(eps), _exact(dlt))
        self._delta_prime: _Amount | None = None
        if delta_prime is not None:
            self._delta_prime = _exact(delta_prime)
            self._log_inv: float = _log_inv_up(delta_prime)
        # Spent so far and the raw record of spends, (epsilon, delta, label, path, charge,
        # unit), under the tally's lock.
        self._tally: _native.Tally = _native.Tally(self._budget, _eps_cache, _delta_cache)
        # The group-scaled cost of each outermost parallel block, by unit name, for advanced
        # composition (a spend outside blocks is its own unit).
        self._units_by_name: dict[str, _Cost] = {}
        # The rho an (epsilon, delta) accountant's charges imply (spent.rho), kept as it
        # goes, so that reading it costs the spends since the last read: exact sums of
        # eps**2/2 and counts of charges with delta > 0, over the named units (blocks,
        # leases: updated by _take) and over the charges outside them (records scanned up to
        # _loose_upto; the compiled spend appends those without Python).
        self._rho_units = self._delta_units = 0
        self._rho_loose = self._delta_loose = self._loose_upto = 0
        # Running sums for composition="advanced": sum eps_i^2 (exact), sum of the loss terms
        # (exact sum of upper bounds) and how many loss terms overflowed.
        self._sum_sq: int = 0
        self._loss: int = 0
        self._n_inf: int = 0
        self._n_blocks: int = 0
        # Lease reservations not yet returned: id -> the (group-scaled) amount charged; and
        # this process's open Lease objects (closed with the accountant).
        self._leases: dict[str, _Cost] = {}
        self._lease_objects: weakref.WeakSet[Lease] = weakref.WeakSet()
        self._ledger_file: LedgerFile | None = None
        # Neither groups, advanced composition nor a ledger file: a spend outside blocks is
        # one compiled step.
        self._simple: bool = self._k == 1 and self._delta_prime is None and not self._zcdp
        _in_memory.add(self)

    def _attach(self, file: LedgerFile) -> None:
        """Back this accountant by a ledger file and take in what it records."""
        self._ledger_file = file
        self._tally.shared = True                   # a forked child shares the file
        self._simple = False
        _in_memory.discard(self)
        # Descriptors are closed when the accountant is collected (the finaliser holds the
        # file, not the accountant).
        self._finalizer = weakref.finalize(self, file.close)
        with self._tally:
            file.lock()
            try:
                self._read_ledger()
            finally:
                file.unlock()

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
                            f"True or False. Got {_shown(shared_ledger)} instead.")
        file = _open_ledger(path, None, shared_ledger)
        try:
            _, eps, dlt, k, composition, dpr = file.header.split(" ")
            budget = (_amount_parse(eps), _amount_parse(dlt))
            zcdp: tuple[float, float | None] | None = None
            delta_prime = None
            if composition == "zcdp":
                # budget <rho> <read delta> <k> zcdp <epsilon asked for, or ->
                zcdp = (_float(budget[0]), None if dpr == "-" else _float(_amount_parse(dpr)))
            else:
                delta_prime = None if dpr == "-" else _float(_amount_parse(dpr))
            if composition not in ("basic", "advanced", "zcdp") or (composition == "advanced") \
                    != (delta_prime is not None):
                raise ValueError(composition)
        except ValueError:
            file.close()
            raise LedgerError(f"The ledger {file.path!r} has an unreadable budget record.") \
                from None
        acct = cls.__new__(cls)
        acct._setup(_float(budget[0]), _float(budget[1]), int(k), delta_prime, zcdp)
        acct._attach(file)
        return acct

    def _header(self) -> str:
        if self._zcdp:
            given = "-" if self._eps_given is None else _amount_text(_exact(self._eps_given))
            return (f"budget {_amount_text(self._budget[0])} "
                    f"{_amount_text(_exact(self._read_delta))} {self._k} zcdp {given}")
        dpr = "-" if self._delta_prime is None else _amount_text(self._delta_prime)
        return (f"budget {_amount_text(self._budget[0])} {_amount_text(self._budget[1])} "
                f"{self._k} {self.composition} {dpr}")

    def __reduce__(self) -> "tuple[object, ...]":
        if self._ledger_file is None:
            raise TypeError(
                "An Accountant without a ledger lives in one process and cannot be pickled: "
                "a copy in another process would spend the whole budget again, unseen. "
                "Create it with ledger='FILE' to share its budget between processes.")
        return (_reopen, (self._ledger_file.path, self._ledger_file.shared))

    # -- queries ---------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """The epsilon budget (a zCDP accountant: the epsilon asked for, or its rho budget
        read at :attr:`delta`)."""
        if self._zcdp:
            if self._eps_given is not None:
                return self._eps_given
            return self._epsilon_at(self._budget[0])
        return _float(self._budget[0])

    @property
    def delta(self) -> float:
        """The delta budget (a zCDP accountant: the delta epsilon is read at)."""
        return self._read_delta if self._zcdp else _float(self._budget[1])

    @property
    def rho(self) -> float | None:
        """The rho-zCDP budget, or None for an (epsilon, delta) accountant."""
        return _float(self._budget[0]) if self._zcdp else None

    def _epsilon_at(self, rho: "_Amount") -> float:
        """The epsilon of ``rho`` (exact) read at :attr:`delta`, rounded up."""
        if rho == 0:
            return 0.0
        r = _float_up(rho)
        if self._read_delta == 0.0 or math.isinf(r):
            return math.inf
        return epsilon_from_rho(r, self._read_delta)

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
                              _float_up(rho))
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
                rho = _float(_sub(self._budget[0], spent))
                if rho > 0 and _exact(rho) > _sub(self._budget[0], spent):
                    rho = math.nextafter(rho, 0.0)      # never overstated
                total = self.epsilon
                eps = total if math.isinf(total) else max(total - self._epsilon_at(spent), 0.0)
                return Budget(eps, self._read_delta, rho)
            eps, dlt = self._remaining()
            return Budget(eps, dlt, eps * eps / 2)

    def _implied_rho(self) -> float:
        """The rho the charges of an (epsilon, delta) accountant imply (lock held): the sum
        of eps**2/2 over its outermost charges, inf once one has delta > 0."""
        records = self._tally.records
        for r in records[self._loose_upto:]:
            if r[5] is None:
                e, d = r[4]
                self._rho_loose += _rho_of_epsilon(e)
                self._delta_loose += d != 0
        self._loose_upto = len(records)
        if self._delta_loose or self._delta_units:
            return math.inf
        return _float_up(self._rho_loose + self._rho_units)

    def _remaining(self) -> "tuple[float, float]":
        if self._damaged():
            return (0.0, 0.0)
        eps, dlt = self._reported_exact()
        if eps is not self._tally.spent[0]:
            # Subtract (a decimal just above) the rounded-up advanced epsilon that `spent`
            # shows, so that remaining is never overstated.
            eps = _ceil_amount(_float_up(eps))
        return (_float_down(_sub(self._budget[0], eps)),
                _float_down(_sub(self._budget[1], dlt)))

    @property
    def ledger(self) -> "list[LedgerEntry]":
        """List of :class:`LedgerEntry` (epsilon, delta, label) for every spend, in order
        (of every process, with a ledger file)."""
        with self._synced():
            records = list(self._tally.records)
        return [LedgerEntry(None if r[0] is None else float(r[0]), float(r[1]), r[2], r[3],
                            (_float(r[4][0]), _float(r[4][1])),
                            r[6] if len(r) > 6 else None)
                for r in records]

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
            extra += f", composition='advanced', delta_prime={_float(self._delta_prime)!r}"
        if self._ledger_file is not None:
            extra += f", ledger={self._ledger_file.path!r}"
        return (f"Accountant(epsilon={self.epsilon!r}, delta={self.delta!r}{extra}; "
                f"spent=({eps!r}, {dlt!r}) over {len(self)} spends)")

    def _advanced_exact(self, sum_sq: int, loss: int, n_inf: int,
                        basic_delta: "_Amount") -> "tuple[_Amount, _Amount]":
        # Only called with composition="advanced", where _delta_prime is set.
        return (_advanced_epsilon(sum_sq, loss, n_inf, self._log_inv),
                basic_delta + self._delta_prime)  # type: ignore[operator]

    def _within(self, eps: "_Amount", dlt: "_Amount") -> bool:
        return eps <= self._budget[0] and dlt <= self._budget[1]

    def _units(self) -> "list[_Cost]":
        """Group-scaled (epsilon, delta) of every outermost charge: spends outside blocks and
        whole outermost parallel blocks; call with the lock held."""
        return ([r[4] for r in self._tally.records if r[5] is None]
                + list(self._units_by_name.values()))

    def _reported_exact(self) -> "tuple[_Amount, _Amount]":
        """Spent, as exact amounts (an int or inf each); call with the lock held."""
        if self._damaged():
            return self._budget
        if self._delta_prime is not None and self._tally.records:
            adv = self._advanced_exact(self._sum_sq, self._loss, self._n_inf,
                                       self._tally.spent[1])
            if adv[0] < self._tally.spent[0] and self._within(*adv):
                return adv
        return self._tally.spent

    def _reported(self) -> "tuple[float, float]":
        eps, dlt = self._reported_exact()
        if eps is not self._tally.spent[0]:
            # The advanced epsilon is a bound computed in floats: never report it rounded
            # down. Its delta is an exact decimal sum like the sequential one.
            return _float_up(eps), _float(dlt)
        return _float(eps), _float(dlt)

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
        log_inv = _log_inv_up(dp_)
        with self._synced():
            units = self._units()
            basic_delta = self._tally.spent[1]
        sum_sq, loss, n_inf = 0, 0, 0
        for e, _ in units:
            sum_sq += e * e
            term = _loss_term(e)
            if term is None:
                n_inf += 1
            else:
                loss += term
        eps = _advanced_epsilon(sum_sq, loss, n_inf, log_inv)
        return _float_up(eps), _float(basic_delta + _exact(dp_))

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
        return ParallelBlock(self, None, _check_label(label, "Accountant.parallel"))

    # -- leases ----------------------------------------------------------------------
    def lease(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None, label: str | None = None) -> "Lease":
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
        label = _check_label(label, func)
        asked: tuple[float | None, float, float | None]
        if self._delta_prime is not None:
            raise ValueError(
                f"{func}: an accountant with composition='advanced' cannot lease: its bound "
                "is over the whole sequence of outermost charges, and a return would change "
                "one of them after the fact. Use composition='basic' or 'zcdp'. Nothing was "
                "charged.")
        if self._zcdp:
            if epsilon is not None:
                raise ValueError(
                    f"The 'epsilon' parameter of {func} does not apply: this accountant holds "
                    "a rho (zCDP) budget and leases in rho; give rho= (a pure epsilon spend "
                    "from the lease costs epsilon**2/2 of it). Got "
                    f"{_shown(epsilon)} instead.")
            if rho is None:
                raise TypeError(f"{func} needs rho=, the slice of this zCDP budget to "
                                "reserve. Got none.")
            r = _rho_amount(rho, func)
            if _amount(delta, "delta", func) != 0:
                raise ValueError(f"The 'delta' parameter of {func} must be 0 for a slice in "
                                 f"rho. Got {_shown(delta)} instead.")
            cost: _Cost = (r, 0)
            asked = (None, 0.0, _float(r))
        else:
            if rho is not None:
                raise ValueError(
                    f"The 'rho' parameter of {func} does not apply: this accountant holds an "
                    "(epsilon, delta) budget and leases in epsilon and delta (a spend from the "
                    f"lease may still state its rho). Got {_shown(rho)} instead.")
            if epsilon is None:
                raise TypeError(f"{func} needs epsilon= (and delta=), the slice of the "
                                "budget to reserve. Got none.")
            cost = (_amount(epsilon, "epsilon", func), _amount(delta, "delta", func))
            asked = (_float(cost[0]), _float(cost[1]), None)
        return Lease(self, cost, asked, label)

    def _reserve_lease(self, cost: "_Cost", asked: "tuple[float | None, float, float | None]",
                       label: str | None) -> str:
        """Charge a lease's slice ``cost`` (raw, for one individual: scaled for groups here)
        as one reservation; its id."""
        with self._synced():
            self._usable_for_lease()
            scaled = self._group(cost)
            spent = self._tally.spent
            if not self._within(spent[0] + scaled[0], _add(spent[1], scaled[1])):
                refusal = self._refusal(asked[0], asked[1], asked[2], scaled, False)
                raise BudgetExceededError(f"Accountant.lease: {refusal}")
            lease_id = os.urandom(8).hex()
            self._write_lease((asked[0], asked[1], label, (), scaled, lease_id, asked[2]),
                              CHARGE, lease_id)
            return lease_id

    def _return_lease(self, lease_id: str, reserved: "_Cost", used: "tuple[_Amount, _Amount]",
                      label: str | None) -> None:
        """Give back what a lease did not use: its scaled reservation minus the scaled sum
        of its spends ``used`` (raw), never more; nothing is written when that is zero."""
        with self._synced():
            self._usable_for_lease()
            charged = self._leases.get(lease_id)
            if charged is None:
                return                                  # not open here: nothing to give back
            used_scaled = self._group((int(used[0]), used[1]))
            credit = (max(charged[0] - used_scaled[0], 0),
                      0 if isinstance(used_scaled[1], float)
                      else max(charged[1] - used_scaled[1], 0))
            if credit == _ZERO:
                return
            rest = (reserved[0] - used[0], reserved[1] - used[1])
            if self._zcdp:
                record: tuple[object, ...] = (None, 0.0, label, (), (-credit[0], 0),
                                              lease_id, _float(rest[0]))
            else:
                record = (_float(rest[0]), _float(rest[1]), label, (),
                          (-credit[0], -credit[1]), lease_id, None)
            self._write_lease(record, RETURN, lease_id)

    def _usable_for_lease(self) -> None:
        """Refuse a lease's reservation or return where a spend would be refused (lock
        held)."""
        if self._tally.foreign:
            raise RuntimeError(
                "This Accountant was made in another process and has no ledger file: its "
                "budget cannot be shared with this forked process. Create it with "
                "ledger='FILE' to share a budget between processes.")
        file = self._ledger_file
        if file is not None and file.damage is not None:
            raise self._damage_error(*file.damage)

    def _write_lease(self, record: "tuple[object, ...]", kind: str, lease_id: str) -> None:
        """Make a lease's reservation (``kind`` CHARGE) or return (RETURN: ``record[4]`` is
        minus what it gives back) durable, then take it in (lock held, as in
        :meth:`_spend_at`)."""
        file = self._ledger_file
        if file is None:
            self._take_lease(record, kind, lease_id)
            return
        charge: _Cost = record[4]  # type: ignore[assignment]
        spent = self._tally.spent
        shown = charge if kind == CHARGE else (-charge[0], -charge[1])
        amounts = (_amount_text(shown[0]), _amount_text(shown[1]),
                   _amount_text(spent[0] + charge[0], False),
                   _amount_text(_add(spent[1], charge[1]), False))
        details = _charge_details(record)
        details["lease"] = lease_id
        self._durable(amounts, details, kind, lambda: self._take_lease(record, kind, lease_id))

    def _redeem(self, commits: str, cost: "tuple[float | None, float, float | None]",
                label: str) -> bool:
        """Whether an interrupted release committed to ``commits`` may complete without a
        new charge: this ledger holds a sequential charge of exactly ``cost`` (asked
        epsilon, delta, rho) made by :meth:`dpfast._release.Release.charge` for that key
        (not a lease's record, not a spend inside a block, whatever its label says), and no
        completion has redeemed it yet. If so, a durable zero-cost record of the redemption
        is appended (a second completion of that key is charged) and True returned; else
        nothing is written and False returned: the caller pays. Only a ledger-backed
        accountant holds commitments."""
        if self._ledger_file is None:
            return False
        with self._synced():
            self._usable_for_lease()
            records = self._tally.records
            if any(len(r) > 8 and r[8] == commits for r in records):
                return False
            if not any(len(r) > 7 and r[7] == commits and r[3] == () and r[5] is None
                       and (r[0], r[1], r[6]) == cost for r in records):
                return False
            record = (None, 0.0, label, (), _ZERO, None, None, None, commits)
            spent = self._tally.spent
            zero = _amount_text(0)
            self._durable((zero, zero, _amount_text(spent[0], False),
                           _amount_text(spent[1], False)), _charge_details(record), CHARGE,
                          lambda: self._take(record))
            return True

    def _durable(self, amounts: "tuple[str, str, str, str]", details: "dict[str, Any]",
                 kind: str, take: "Callable[[], None]") -> None:
        """Append one record to the ledger file, durable before anything changes here, then
        ``take()`` it in (both locks and the signals held, by :meth:`_synced`). A record made
        durable before an interruption (a handler the hold could not defer) is taken in
        too: it is spent, and counted here as in the file. Damage exhausts the budget."""
        file = self._ledger_file
        assert file is not None
        before = file.count
        try:
            file.append(amounts, details, kind)
        except Damaged as exc:
            self._tally.spent = self._budget
            raise self._damage_error(exc.line, exc.what) from None
        except BaseException:
            if file.count > before:
                take()
            raise
        take()

    # -- spending --------------------------------------------------------------------
    def _group(self, cost: "_Cost") -> "_Cost":
        """Group privacy for k records: (k eps, k e^{(k-1)eps} delta), delta rounded up."""
        eps, dlt = cost
        k = self._k
        if k == 1:
            return cost
        if self._zcdp:
            return (k * k * eps, 0)                     # rho-zCDP for groups of k: k**2 rho
        if dlt == 0:
            return (k * eps, dlt)
        grow = _exp_up((k - 1) * eps)
        if grow == math.inf:
            return (k * eps, math.inf)
        p, q = grow.as_integer_ratio()
        return (k * eps, -(-k * p * dlt // q))          # k * grow * delta, rounded up

    def _plan(self, e: int, d: int, node: "_Node | None") -> "_Plan":
        """What a spend of (e, d) at ``node`` (None: the accountant itself) would change;
        call with the lock held.

        Returns (updates, root, old, new, increase): the new cost of each enclosing block,
        the outermost block (or None), the outermost charge before and after (group-scaled)
        and the increase of the sequential total.
        """
        old_child: _Cost = _ZERO
        new_child: _Cost = (e, d)
        updates: list[tuple[_Node, _Cost]] = []
        root: _Node | None = None
        while node is not None:
            c = node._cost
            if node._kind == _PARTITION:
                new = (c[0] + new_child[0] - old_child[0], c[1] + new_child[1] - old_child[1])
            else:
                # A child's cost only grows, so the maximum over children is updated by
                # comparing with the child's new cost alone.
                new = (max(c[0], new_child[0]), max(c[1], new_child[1]))
            updates.append((node, new))
            old_child, new_child = c, new
            root = node
            node = node._parent
        old = root._charged if root is not None else _ZERO
        new = self._group(new_child)
        # Rounding up makes the group delta only nearly monotone; never let a charge shrink.
        new = (max(old[0], new[0]), max(old[1], new[1]))
        increase = (new[0] - old[0], _sub(new[1], old[1]))
        return updates, root, old, new, increase

    def _advanced_sums(self, old: "_Cost", new: "_Cost") -> "tuple[int, int, int]":
        """The advanced-composition running sums with one outermost charge replaced."""
        sum_sq = self._sum_sq - old[0] * old[0] + new[0] * new[0]
        loss, n_inf = self._loss, self._n_inf
        for term, sign in ((_loss_term(old[0]), -1), (_loss_term(new[0]), 1)):
            if term is None:
                n_inf += sign
            else:
                loss += sign * term
        return sum_sq, loss, n_inf

    def _fits_plan(self, old: "_Cost", new: "_Cost", increase: "_Cost") -> bool:
        """Whether the planned state is within budget; call with the lock held."""
        total = (self._tally.spent[0] + increase[0], _add(self._tally.spent[1], increase[1]))
        if self._within(*total):
            return True
        if self._delta_prime is None:
            return False
        adv = self._advanced_exact(*self._advanced_sums(old, new), total[1])
        return self._within(*adv)

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

    def _check_at(self, node: "_Node | None", epsilon: float | None, delta: float,
                  rho: float | None = None) -> bool:
        e, d = self._request(epsilon, delta, rho, "Accountant.check")
        with self._synced():
            if self._damaged():
                return False
            _, _, old, new, increase = self._plan(e, d, node)
            return self._fits_plan(old, new, increase)

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

    def _request(self, epsilon: float | None, delta: float, rho: float | None,
                 func: str) -> "tuple[int, int]":
        """What a spend of (epsilon, delta, rho) costs this accountant, checked and exact:
        (epsilon, delta), or for a zCDP accountant (rho, 0)."""
        if rho is not None:
            r = _rho_amount(rho, func)
        if epsilon is None:
            if rho is None:
                raise TypeError(f"The 'epsilon' parameter of {func} must be a float > 0 "
                                "(or give 'rho', a zCDP cost). Got None instead.")
            d = _amount(delta, "delta", func)
            if d != 0:
                raise ValueError(f"The 'delta' parameter of {func} applies to an epsilon; "
                                 f"a charge in rho alone has none. Got {delta!r} instead.")
            if not self._zcdp:
                raise ValueError(
                    f"{func}: this accountant holds an (epsilon, delta) budget and cannot "
                    "charge a cost given in rho alone. Give epsilon= and delta= (the "
                    "release's (epsilon, delta)), or use an accountant that accounts in "
                    "zCDP: dpfast.Accountant(rho=...) or composition='zcdp'.")
            return (r, 0)
        e = _amount(epsilon, "epsilon", func)
        d = _amount(delta, "delta", func)
        if not self._zcdp:
            return (e, d)
        if rho is not None:
            return (r, 0)
        if d != 0:
            raise ValueError(
                f"{func}: this accountant composes in zCDP, and an (epsilon, delta) charge "
                "with delta > 0 has no zCDP cost unless it states one (rho=). Nothing was "
                "charged.")
        return (_rho_of_epsilon(e), 0)

    def _spend_at(self, node: "_Node | None", epsilon: float | None, delta: float,
                  label: object, rho: float | None = None, commits: str | None = None) -> None:
        """Spend at ``node`` (None: the accountant itself): the general path. ``commits``
        (a release's key digest, :meth:`dpfast._release.Release.charge`) marks the charge as
        paying for that key, in a detail no label can set."""
        e, d = self._request(epsilon, delta, rho, "Accountant.spend")
        with self._synced():
            if self._tally.foreign:
                raise RuntimeError(
                    "This Accountant was made in another process and has no ledger file: "
                    "its budget cannot be shared with this forked process. Create it with "
                    "ledger='FILE' to share a budget between processes.")
            if node is not None and node._pid != os.getpid():
                raise RuntimeError("This parallel block was made in another process: a "
                                   "forked child cannot spend through it. Open a new block "
                                   "in this process.")
            closed = node._closed() if node is not None else None
            if closed is not None:
                raise RuntimeError(f"The parallel block {closed.path!r} has ended: spend on "
                                   "the accountant, or in a new block.")
            file = self._ledger_file
            if file is not None and file.damage is not None:
                raise self._damage_error(*file.damage)
            updates, root, old, new, charge = self._plan(e, d, node)
            if not self._fits_plan(old, new, charge):
                raise self._refusal(epsilon, delta, rho, charge, bool(updates))
            if root is not None and root._unit is None:
                root._unit = os.urandom(6).hex()
            record = (epsilon, delta, label, node._path if node is not None else (), charge,
                      root._unit if root is not None else None, rho,
                      commits if node is None else None)
            if file is None:
                self._commit(updates, root, new, record)
                return
            spent = self._tally.spent
            amounts = (_amount_text(charge[0]), _amount_text(charge[1]),
                       _amount_text(spent[0] + charge[0], False),
                       _amount_text(_add(spent[1], charge[1]), False))
            # Signals are held in _synced: the write, the sync and the take-in are one step
            # for Python's signal handlers, so after this returns or raises, this process's
            # total is the file's. Durable before the caller draws noise.
            self._durable(amounts, _charge_details(record), CHARGE,
                          lambda: self._commit(updates, root, new, record))

    def _commit(self, updates: "list[tuple[_Node, _Cost]]", root: "_Node | None",
                new: "_Cost", record: "tuple[object, ...]") -> None:
        """Apply a planned spend (nothing before this has changed any state)."""
        for block, cost in updates:
            block._cost = cost
        if root is not None:
            root._charged = new
        self._take(record)

    def _damaged(self) -> bool:
        return self._ledger_file is not None and self._ledger_file.damage is not None

    def _damage_error(self, line: int, what: str) -> "LedgerDamagedError":
        path = self._ledger_file.path if self._ledger_file is not None else "?"
        return LedgerDamagedError(
            f"The ledger {path!r} is damaged at line {line}: {what}. It counts as exhausted "
            "(the whole budget spent), so nothing was charged. Inspect the file, and start a "
            "new ledger (another file) for the budget that remains.")

    def _take(self, record: "tuple[object, ...]") -> None:
        """Add one charge record to the total, the records and the units; call with the lock
        held."""
        charge: _Cost = record[4]  # type: ignore[assignment]
        unit: str | None = record[5]  # type: ignore[assignment]
        old = _ZERO if unit is None else self._units_by_name.get(unit, _ZERO)
        new = (old[0] + charge[0], _add(old[1], charge[1]))
        if self._delta_prime is not None:
            self._sum_sq, self._loss, self._n_inf = self._advanced_sums(old, new)
        if unit is not None:
            self._units_by_name[unit] = new
            self._rho_units += _rho_of_epsilon(new[0]) - _rho_of_epsilon(old[0])
            self._delta_units += (new[1] != 0) - (old[1] != 0)
        spent = self._tally.spent
        self._tally.spent = (spent[0] + charge[0], _add(spent[1], charge[1]))
        self._tally.records.append(record)

    def _synced(self) -> "_Synced":
        """``with self._synced():`` holds the lock, and with a ledger file, the file's lock
        too, after taking in the charges other processes have appended since."""
        return _Synced(self)

    def _read_ledger(self) -> None:
        """Take in the charges appended to the ledger file since the last look (call with
        both locks held), checking each running total. Damage (found here or by the file)
        exhausts the budget."""
        file = self._ledger_file
        assert file is not None
        for charge in file.read_new():
            try:
                cost = (_amount_parse(charge.epsilon), _amount_parse(charge.delta))
                total = (_amount_parse(charge.total_epsilon), _amount_parse(charge.total_delta))
            except ValueError:
                file.mark_damaged(charge.line, "an unreadable amount")
                break
            if isinstance(cost[0], float):
                file.mark_damaged(charge.line, "an infinite epsilon charge")
                break
            lease = charge.details.get("lease")
            if charge.kind == RETURN:
                what = self._unsound_return(lease, cost)
                if what is not None:
                    file.mark_damaged(charge.line, what)
                    break
                record = _charge_record(charge.details, (-cost[0], -cost[1]))
            else:
                record = _charge_record(charge.details, (cost[0], cost[1]))
                if type(lease) is str and lease in self._leases:
                    file.mark_damaged(charge.line, "a lease reserved twice under one id")
                    break
            if type(lease) is str:
                # A lease's reservation and its return are one unit (whatever unit the
                # details name): its net charge is what the lease spent.
                record = (*record[:5], lease, *record[6:])
            self._take_lease(record, charge.kind, lease if type(lease) is str else None)
            if self._tally.spent != total:
                file.mark_damaged(charge.line, "the running total does not add up")
                break
        if file.damage is not None:
            self._tally.spent = self._budget

    def _unsound_return(self, lease: object, credit: "tuple[_Amount, _Amount]") -> str | None:
        """Why a return record read from the ledger is damage, or None if it is sound: it
        names a reservation made earlier in this ledger and not yet returned, and gives back
        at most what that reservation charged."""
        if self._delta_prime is not None:
            return "a lease return in a ledger with composition='advanced'"
        if type(lease) is not str or lease not in self._leases:
            return ("a return that names no open lease reservation (forged, or a lease "
                    "returned twice)")
        reserved = self._leases[lease]
        if isinstance(credit[1], float) or credit[0] > reserved[0] or credit[1] > reserved[1]:
            return "a return of more than its lease reserved"
        return None

    def _take_lease(self, record: "tuple[object, ...]", kind: str, lease: str | None) -> None:
        """:meth:`_take` a record, keeping the open lease reservations: a charge naming a
        lease opens it, its return closes it (call with the lock held)."""
        if lease is not None:
            if kind == RETURN:
                del self._leases[lease]
            else:
                self._leases[lease] = record[4]  # type: ignore[assignment]
        self._take(record)

    def _refusal(self, epsilon: float | None, delta: float, rho: float | None,
                 charge: "_Cost", in_block: bool) -> BudgetExceededError:
        """The error for a spend that does not fit; call with the lock held."""
        if self._zcdp:
            left = _float(_sub(self._budget[0], self._reported_exact()[0]))
            asked = f"rho={float(rho)!r}" if rho is not None else \
                f"epsilon={float(epsilon)!r} (rho={_float_up(charge[0])!r})"  # type: ignore[arg-type]
            return BudgetExceededError(
                f"Privacy budget exceeded: spending {asked} needs more than the remaining "
                f"rho={left!r} of a zCDP budget of rho={self.rho!r}"
                + (f" (groups of {self._k}: charged {_float_up(charge[0])!r})"
                   if self._k != 1 else "")
                + (" inside a parallel block" if in_block else "")
                + ". Nothing was spent; use a smaller epsilon/rho or a new Accountant with a "
                "larger budget.")
        rem_e, rem_d = self._remaining()
        how = ""
        if self._k != 1 or in_block:
            how = (f" (charged as an increase of (epsilon={_float_up(charge[0])!r}, "
                   f"delta={_float_up(charge[1])!r})"
                   + (f" for groups of {self._k}" if self._k != 1 else "")
                   + (" inside a parallel block" if in_block else "") + ")")
        return BudgetExceededError(
            f"Privacy budget exceeded: spending (epsilon={float(epsilon)!r}, "  # type: ignore[arg-type]
            f"delta={float(delta)!r}){how} needs more than the remaining "
            f"(epsilon={rem_e!r}, delta={rem_d!r}) of a budget of "
            f"(epsilon={self.epsilon!r}, delta={self.delta!r}). Nothing was spent; "
            "use a smaller epsilon/delta or a new Accountant with a larger budget.")

    # -- default-accountant context --------------------------------------------------
    def __enter__(self) -> "Accountant":
        _stack.set(_stack.get() + (self,))
        return self

    def __exit__(self, *exc: object) -> "Literal[False]":
        stack = _stack.get()
        if not stack or stack[-1] is not self:
            raise RuntimeError("Accountant context exited out of order.")
        _stack.set(stack[:-1])
        return False


class _Synced:
    """The accountant's lock, and with a ledger file, the file's lock with the file's news
    taken in, SIGINT and SIGTERM held throughout (see :func:`dpfast.ledger.hold_signals`):
    an interrupt can neither leave a lock taken nor split a charge from its record."""

    def __init__(self, acct: Accountant) -> None:
        self._acct = acct
        self._held: HeldSignals | None = None

    def __enter__(self) -> None:
        acct = self._acct
        file = acct._ledger_file
        if file is None:
            acct._tally.__enter__()
            return
        self._held = hold_signals()
        try:
            acct._tally.__enter__()
            try:
                file.lock(self._held)
                # Read before any decision: every reader takes in the file to its real end.
                acct._read_ledger()
            except BaseException:
                acct._tally.__exit__()
                raise
        except BaseException:
            release_signals(self._held)
            raise

    def __exit__(self, *exc: object) -> "Literal[False]":
        acct = self._acct
        try:
            try:
                if acct._ledger_file is not None:
                    acct._ledger_file.unlock()
            finally:
                acct._tally.__exit__()
        finally:
            release_signals(self._held)
        return False


def _charge_details(record: "tuple[object, ...]") -> "dict[str, Any]":
    """The details of one charge in the ledger: what was asked, where, by whom and when."""
    epsilon, delta, label, path, _, unit = record[:6]
    rho = record[6] if len(record) > 6 else None
    shown = label if label is None or type(label) is str else repr(label)
    details = {"epsilon": None if epsilon is None else float(epsilon),  # type: ignore[arg-type]
               "delta": float(delta),  # type: ignore[arg-type]
               "label": shown, "path": list(path), "unit": unit,  # type: ignore[call-overload]
               "pid": os.getpid(), "time": time.time()}
    if rho is not None:
        details["rho"] = float(rho)  # type: ignore[arg-type]
    commits = record[7] if len(record) > 7 else None
    redeems = record[8] if len(record) > 8 else None
    if commits is not None:
        details["commits"] = commits
    if redeems is not None:
        details["redeems"] = redeems
    return details


def _charge_record(details: "dict[str, Any]", cost: "_Cost") -> "tuple[object, ...]":
    """The accountant's record of a charge read from a ledger file (the MAC vouches for
    the details; odd types are still kept out of the public entries)."""
    def number(key: str, default: float) -> float:
        value = details.get(key)
        return value if type(value) is float else default
    label = details.get("label")
    path = details.get("path")
    unit = details.get("unit")
    rho = details.get("rho")
    commits, redeems = details.get("commits"), details.get("redeems")
    # A charge asked in rho alone records epsilon as null.
    eps = None if "epsilon" in details and details["epsilon"] is None \
        else number("epsilon", _float(cost[0]))
    return (eps, number("delta", _float(cost[1])),
            label if label is None or type(label) is str else None,
            tuple(p for p in path if type(p) is str) if type(path) is list else (),
            cost, unit if type(unit) is str else None,
            rho if type(rho) is float else None,
            commits if type(commits) is str else None,
            redeems if type(redeems) is str else None)


def _open_ledger(path: "str | os.PathLike[str]", header: str | None,
                 shared: bool) -> LedgerFile:
    """The ledger file, with damage found at open raised as LedgerDamagedError."""
    try:
        return LedgerFile(path, header, shared=shared)
    except Damaged as exc:
        raise LedgerDamagedError(
            f"{exc} It counts as exhausted: no accountant can charge it. Start a new ledger "
            "(another file) for the budget that remains.") from None


def _reopen(path: str, shared: bool) -> "Accountant":
    """Unpickle a ledger-backed accountant: the same ledger, opened in this process."""
    return Accountant.from_ledger(path, shared_ledger=shared)


def _check_label(label: object, func: str) -> str | None:
    if label is not None and not isinstance(label, str):
        raise TypeError(f"The 'label' parameter of {func} must be a str or None. "
                        f"Got {_shown(label)} instead.")
    return label


# A zCDP lease's compiled fast path charges a pure epsilon spend its rho: checked epsilons
# (floats) -> eps**2 / 2 exactly, rounded up; and delta 0 only (a zCDP charge with delta > 0
# states its rho, and takes the general path). Emptied in place (the tallies hold them).
_eps_rho_cache: "dict[float, int]" = {}
_NO_DELTA: "dict[float, int]" = {0.0: 0}
# A system call each time (glibc caches no pid), so it sees a fork made through libc.
_getpid = os.getpid


class Lease:
    """A slice of an accountant's budget, reserved durably once and spent in memory.

    Made by :meth:`Accountant.lease`; pass it as ``accountant=`` to any mechanism, or call
    :meth:`spend` and :meth:`check` as on an :class:`Accountant` (same arguments, same
    errors: :class:`BudgetExceededError` when the slice cannot pay, nothing charged). The
    slice is in the accountant's currency (epsilon and delta, or rho for a zCDP accountant)
    and for one individual (the accountant scales it for groups). A spend costs no file
    access: the compiled check-and-charge of the accountant's own in-memory path, against the
    slice.

    :meth:`close`, or the end of ``with acct.lease(...) as lease:``, gives the unspent rest
    back to the accountant with one durable return record naming the reservation; closing
    the accountant closes its leases. A lease dropped unclosed, or a process that dies
    holding one (even by SIGKILL), leaves the whole slice spent: never free.

    Owned state: spends from several threads take turns (one lock); a lease refuses
    ``copy.copy``, ``copy.deepcopy`` and pickle (``TypeError``: a copy would spend the slice
    again), and use in a forked child (``RuntimeError``). After :meth:`close` it refuses
    spends (``RuntimeError``).

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> lease = acct.lease(epsilon=0.5, label="batch")
    >>> for _ in range(10):
    ...     noisy = dp.laplace_mechanism(3.0, sensitivity=1.0, epsilon=0.01,
    ...                                  accountant=lease)
    >>> tuple(lease.spent), tuple(acct.spent)
    ((0.1, 0.0), (0.5, 0.0))
    >>> lease.close()
    >>> tuple(acct.spent)
    (0.1, 0.0)
    """

    def __init__(self, acct: Accountant, cost: "_Cost",
                 asked: "tuple[float | None, float, float | None]",
                 label: str | None) -> None:
        self._acct = acct
        self._pid = os.getpid()
        self._forked = False
        self._closed = False            # no more spends (under the tally's lock)
        self._returned = False          # the rest was given back (under _closing)
        self._closing = threading.Lock()
        self._reserved = cost
        self._label = label
        zcdp = acct._zcdp
        # The slice's own tally: budget = the slice, in the accountant's currency. Its
        # compiled spend is the whole check-and-charge of a spend seen before.
        self._tally: _native.Tally = _native.Tally(
            cost, _eps_rho_cache if zcdp else _eps_cache, _NO_DELTA if zcdp else _delta_cache)
        self._id = acct._reserve_lease(cost, asked, label)
        acct._lease_objects.add(self)
        _live_leases.add(self)

    # -- owned state -------------------------------------------------------------------
    def _refuse_copy(self) -> "NoReturn":
        raise TypeError(
            "A Lease cannot be copied or pickled: a copy would spend the same reserved slice "
            "again, unseen by this one. Take another lease (acct.lease(...)) where one is "
            "needed, in the process that spends it.")

    def __copy__(self) -> "NoReturn":
        self._refuse_copy()

    def __deepcopy__(self, memo: object) -> "NoReturn":
        self._refuse_copy()

    def __reduce_ex__(self, protocol: object) -> "NoReturn":
        self._refuse_copy()

    def __reduce__(self) -> "NoReturn":
        self._refuse_copy()

    def __getstate__(self) -> "NoReturn":
        self._refuse_copy()

    def _check_process(self) -> None:
        if self._forked or _getpid() != self._pid:
            raise RuntimeError(
                f"This Lease was taken in process {self._pid} and cannot be used in a forked "
                "child: the child would spend the same slice again, unseen by the parent. "
                "Take a new lease in the child (from a ledger-backed accountant).")

    def _check_open(self) -> None:
        """Refuse a spend from a closed lease (the tally's lock held)."""
        if self._closed:
            raise RuntimeError(
                "This Lease has been closed (by close(), the end of its with block, or its "
                "accountant's close()): its rest went back to the accountant. Take a new "
                "lease, or spend on the accountant.")

    # -- spending ----------------------------------------------------------------------
    def spend(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None, label: object = None) -> None:
        """Charge (epsilon, delta) (or ``rho``) to the slice, in memory, or raise and charge
        nothing; the same arguments and errors as :meth:`Accountant.spend`, with
        :class:`BudgetExceededError` when the slice cannot pay (what remains of it is in the
        message) and ``RuntimeError`` after :meth:`close` or in a forked child."""
        # A spend seen before (floats whose exact amounts are cached): one compiled step.
        # The tally is marked foreign once the lease is closed, and in a forked child by the
        # fork hook (as an in-memory Accountant's is: no pid system call here, it would
        # double the cost), which sends every spend to the general path and its errors.
        if rho is None and self._tally.spend(epsilon, delta, label):
            return
        self._spend(epsilon, delta, rho, label, True)

    def check(self, epsilon: float | None = None, delta: float = 0.0, *,
              rho: float | None = None) -> bool:
        """True if :meth:`spend` of (epsilon, delta) (or rho) would fit in what remains of
        the slice; spends nothing (errors as :meth:`spend`)."""
        return self._spend(epsilon, delta, rho, None, False)

    def _spend(self, epsilon: float | None, delta: float, rho: float | None, label: object,
               charge: bool) -> bool:
        func = "Lease.spend" if charge else "Lease.check"
        e, d = self._acct._request(epsilon, delta, rho, func)
        self._check_process()
        tally = self._tally
        with tally:
            self._check_open()
            spent = tally.spent
            new = (spent[0] + e, spent[1] + d)
            fits = new[0] <= self._reserved[0] and new[1] <= self._reserved[1]
            if not charge:
                return fits
            if not fits:
                raise self._refusal(epsilon, delta, rho, e)
            tally.spent = new
            tally.records.append((epsilon, delta, label, (), (e, d), None, rho))
        if self._acct._zcdp and rho is None and type(epsilon) is float:
            # A checked pure epsilon: its rho, for the compiled path next time.
            if len(_eps_rho_cache) >= _CACHE_MAX:
                _eps_rho_cache.clear()
            _eps_rho_cache[epsilon] = e
        return True

    def _refusal(self, epsilon: float | None, delta: float, rho: float | None,
                 e: int) -> BudgetExceededError:
        """The error for a spend the slice cannot pay (the tally's lock held)."""
        spent = self._tally.spent
        if self._acct._zcdp:
            asked = f"rho={float(rho)!r}" if rho is not None else \
                f"epsilon={float(epsilon)!r} (rho={_float_up(e)!r})"  # type: ignore[arg-type]
            left = f"rho={_float(self._reserved[0] - spent[0])!r}"
            whole = f"rho={_float(self._reserved[0])!r}"
        else:
            asked = f"(epsilon={float(epsilon)!r}, delta={float(delta)!r})"  # type: ignore[arg-type]
            left = (f"(epsilon={_float(self._reserved[0] - spent[0])!r}, "
                    f"delta={_float(self._reserved[1] - spent[1])!r})")
            whole = (f"(epsilon={_float(self._reserved[0])!r}, "
                     f"delta={_float(self._reserved[1])!r})")
        return BudgetExceededError(
            f"Lease budget exceeded: spending {asked} needs more than the remaining {left} "
            f"of this lease's slice of {whole}. Nothing was spent; close the lease and take "
            "another, or spend on the accountant.")

    # -- closing -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop spending and give the unspent rest of the slice back to the accountant: one
        durable return record naming the reservation (none when nothing is left). Closing
        again does nothing; if the return could not be written (the error is raised), the
        lease stays closed with its whole slice spent, and calling close again retries."""
        self._check_process()
        with self._closing:
            if self._returned:
                return
            with self._tally:
                self._closed = True
                # Every spend now takes the general path, which refuses it. The compiled
                # path reads `foreign` before it takes the lock, so a spend already past
                # that check may be waiting for the lock: the budget it compares with under
                # the lock is made unpayable, so `used` below is final.
                self._tally.foreign = True
                self._tally.budget = (-1, -1)
                used = self._tally.spent
            self._acct._return_lease(self._id, self._reserved, used, self._label)
            self._returned = True

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: object) -> "Literal[False]":
        self.close()
        return False

    # -- reading -----------------------------------------------------------------------
    def _reading(self, amount: "tuple[_Amount, _Amount]", down: bool) -> Budget:
        """An amount of the slice read in each definition (``down``: never overstated)."""
        acct = self._acct
        if acct._zcdp:
            rho = _float(amount[0]) if down else _float_up(amount[0])
            if down and rho > 0 and _exact(rho) > amount[0]:
                rho = math.nextafter(rho, 0.0)
            eps = acct._epsilon_at(_exact(rho)) if rho else 0.0
            return Budget(eps, acct._read_delta if rho else 0.0, rho)
        if down:
            eps, dlt = _float_down(amount[0]), _float_down(amount[1])
        else:
            eps, dlt = _float(amount[0]), _float(amount[1])
        return Budget(eps, dlt, eps * eps / 2 if dlt == 0 else math.inf)

    @property
    def accountant(self) -> Accountant:
        """The accountant the slice was reserved from."""
        return self._acct

    @property
    def id(self) -> str:
        """The reservation's id in the ledger (16 hex digits), named by its return."""
        return self._id

    @property
    def label(self) -> str | None:
        """The label of the reservation and its return."""
        return self._label

    @property
    def reserved(self) -> Budget:
        """The slice reserved (for one individual), read in each definition."""
        return self._reading(self._reserved, False)

    @property
    def spent(self) -> Budget:
        """What the lease's spends add up to (``.rho`` of an (epsilon, delta) accountant's
        lease: that of one pure charge of the sum, an upper bound)."""
        with self._tally:
            spent = self._tally.spent
        return self._reading(spent, False)

    @property
    def remaining(self) -> Budget:
        """What remains of the slice (zero once closed: the rest went back)."""
        with self._tally:
            if self._closed:
                return self._reading(_ZERO, True)
            spent = self._tally.spent
        left = (self._reserved[0] - spent[0], self._reserved[1] - spent[1])
        return self._reading(left, True)

    @property
    def closed(self) -> bool:
        """Whether the lease is closed (it refuses spends)."""
        return self._closed

    @property
    def ledger(self) -> "list[LedgerEntry]":
        """The lease's spends, as :class:`LedgerEntry` (in memory only: the accountant's
        ledger records the reservation and the return)."""
        with self._tally:
            records = list(self._tally.records)
        return [LedgerEntry(None if r[0] is None else float(r[0]), float(r[1]), r[2], (),
                            (_float(r[4][0]), _float(r[4][1])),
                            r[6] if len(r) > 6 else None)
                for r in records]

    def __len__(self) -> int:
        with self._tally:
            return len(self._tally.records)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (f"<Lease {self.id} ({state}) of {self.reserved!r} from {self._acct!r}: "
                f"{len(self)} spends>")


_stack: "contextvars.ContextVar[tuple[Accountant, ...]]" = contextvars.ContextVar(
    "dpfast_accountant_stack", default=())
# Accountants held in memory only: a forked child's copies must not spend.
_in_memory: "weakref.WeakSet[Accountant]" = weakref.WeakSet()
# Leases alive in this process: a forked child's copies must not spend.
_live_leases: "weakref.WeakSet[Lease]" = weakref.WeakSet()
_process_default = Accountant()


def _after_fork_in_child() -> None:
    global _process_default
    for acct in list(_in_memory):
        acct._tally.foreign = True
    for lease in list(_live_leases):
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

    Inside ``with acct:`` that is ``acct``; otherwise a process-wide accountant with an
    unlimited budget that records every spend (a forked child starts with its own).
    """
    stack = _stack.get()
    return stack[-1] if stack else _process_default


#: What ``accountant=`` accepts besides None: an accountant, a parallel block or a
#: partition of one, or a lease of one (whatever has a ``spend`` that charges a budget; all
#: but the accountant have ``_acct``, their accountant).
AccountantLike = Accountant | ParallelBlock | Partition | Lease


def composes_in_zcdp(accountant: object) -> bool:
    """Whether the accountant a release will charge (None: the default one; a block or a
    lease: its accountant's) composes in zCDP, so that its (epsilon, delta) releases are
    calibrated through rho (:func:`dpfast.noise.measure`). Anything else is for the
    release's own checks to refuse: False here."""
    root = default_accountant() if accountant is None else \
        accountant if isinstance(accountant, Accountant) else getattr(accountant, "_acct", None)
    return isinstance(root, Accountant) and root.composition == "zcdp"


def resolve_accountant(accountant: "AccountantLike | None", func: str) -> "AccountantLike":
    """``accountant`` itself (an :class:`Accountant`, a :class:`ParallelBlock` or
    :class:`Partition` of one, or a :class:`Lease` of one), or the default one for
    ``None``; TypeError for anything else."""
    if accountant is None:
        return default_accountant()
    if not isinstance(accountant, (Accountant, ParallelBlock, Partition, Lease)):
        raise TypeError(f"The 'accountant' parameter of {func} must be a dpfast.Accountant "
                        "(or a parallel block, partition or lease of one) or None. "
                        f"Got {_shown(accountant)} instead.")
    return accountant
