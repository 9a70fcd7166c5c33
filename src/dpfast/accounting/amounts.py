"""Exact amounts of privacy: epsilons, deltas and rhos as whole numbers of ``10**-K``, and
the floating-point bounds computed from them.

Each epsilon and delta is read as the shortest decimal that round-trips the float (``0.1``
is one tenth), kept as an integer number of units of ``10**-330`` (every double's shortest
decimal is a whole number of them; the unit of a ledger's decimals,
:data:`dpfast.ledger.UNIT_DIGITS`) and summed as integers. The conversion of each distinct
value is cached. Quantities that come from floating-point formulas (group privacy's delta,
the advanced composition bound) are rounded *up* to a whole unit; an amount shown as a float
is rounded the safe way (:func:`float_up`, :func:`float_down`).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import validation as _v
from ..ledger import UNIT_DIGITS

if TYPE_CHECKING:
    from typing import TypeAlias

    # An exact amount: an int number of units of 10**-K, or math.inf.
    Amount: TypeAlias = int | float
    # An (epsilon, delta) pair of exact amounts; the epsilon part is always finite.
    Cost: TypeAlias = tuple[int, Amount]

__all__ = ["K", "UNIT", "ZERO", "exact", "ceil_amount", "as_float", "float_down", "float_up",
           "add", "sub", "eps_cache", "delta_cache", "CACHE_MAX", "amount", "up", "exp_up",
           "loss_term", "log_inv_up", "advanced_epsilon", "rho_of_epsilon", "rho_amount"]

# Exact amounts are ints in units of 10**-K (math.inf for an unlimited budget): the unit of
# the ledger's decimals, which every double's shortest decimal is a whole number of.
K = UNIT_DIGITS
UNIT: int = 10 ** K
ZERO = (0, 0)


def exact(x: float) -> "Amount":
    """A float >= 0 as the decimal it prints as, in units of 10**-K, exactly (an int);
    math.inf stays infinite."""
    if x == math.inf:
        return math.inf
    mant, _, exp = repr(x + 0.0).partition("e")
    whole, _, frac = mant.partition(".")
    shift = K + (int(exp) if exp else 0) - len(frac)    # >= 6 for every double
    return int(whole + frac) * 10 ** shift  # type: ignore[no-any-return]  # int ** int: Any


def ceil_amount(x: float) -> "Amount":
    """The least exact amount (a whole number of units of 10**-K) >= the float x >= 0."""
    if x == math.inf:
        return math.inf
    p, q = x.as_integer_ratio()
    return -(-p * UNIT // q)


def as_float(x: "Amount") -> float:
    """An exact amount as the nearest float (Python's int division rounds correctly)."""
    if isinstance(x, float):
        return x
    try:
        return x / UNIT
    except OverflowError:
        return math.inf


def float_down(x: "Amount") -> float:
    """The largest float whose reading as a charge (its decimal, :func:`exact`) is at most
    the exact amount ``x``: a remaining budget shown as this float can be spent."""
    f = as_float(x)
    while f > 0.0 and not math.isinf(f) and exact(f) > x:
        f = math.nextafter(f, 0.0)
    return f


def add(a: "Amount", b: "Amount") -> "Amount":
    """a + b for exact amounts, either of which may be infinite (int + inf would convert the
    int to a float, which overflows)."""
    return math.inf if a == math.inf or b == math.inf else a + b


def sub(a: "Amount", b: "Amount") -> "Amount":
    """a - b for exact amounts, a possibly infinite, b finite."""
    return math.inf if a == math.inf else a - b


# Conversions of the epsilons and deltas seen so far (a few distinct values in practice),
# keyed by the float itself; emptied if it ever grows past CACHE_MAX.
eps_cache: "dict[float, int]" = {}
delta_cache: "dict[float, int]" = {}
CACHE_MAX = 4096


def amount(value: float, name: str, func: str) -> int:
    """A validated epsilon (a float > 0) or delta (in [0, 1)) as an exact amount."""
    cache = eps_cache if name == "epsilon" else delta_cache
    if type(value) is float:
        hit = cache.get(value)
        if hit is not None:
            return hit
    x = _v.check_epsilon(value, func) if name == "epsilon" else _v.check_delta(value, func)
    if len(cache) >= CACHE_MAX:
        cache.clear()
    amount: int
    cache[x] = amount = exact(x)    # type: ignore[assignment]  # x is finite: an int
    return amount


def up(x: float, ulps: int = 1) -> float:
    """``x`` moved ``ulps`` floats towards +inf.

    Correctly rounded operations (+, *, sqrt) are within half an ulp, so one step up gives an
    upper bound; libm's exp/expm1/log are not correctly rounded but are within one ulp on
    the platforms we support, so their results are moved up two steps.
    """
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def float_up(x: "Amount", unit: int = UNIT) -> float:
    """The smallest float >= x / unit for an int x >= 0 (inf beyond the float range)."""
    if isinstance(x, float):
        return x
    try:
        f = x / unit
    except OverflowError:
        return math.inf
    p, q = f.as_integer_ratio()
    return math.nextafter(f, math.inf) if p * unit < x * q else f


def exp_up(x: int) -> float:
    """An upper bound on exp(x / 10**K) for an exact amount x >= 0, as a float (inf on
    overflow)."""
    try:
        return up(math.exp(float_up(x)), 2)
    except OverflowError:
        return math.inf


def loss_term(eps: int) -> int | None:
    """Upper bound on eps * (e^eps - 1), the mean privacy loss term of advanced composition,
    as an exact amount, or None when it is beyond the float range."""
    if eps == 0:
        return 0
    x = float_up(eps)
    try:
        m = up(math.expm1(x), 2)
    except OverflowError:
        return None
    if math.isinf(m) or math.isinf(x):
        return None
    (p1, q1), (p2, q2) = x.as_integer_ratio(), m.as_integer_ratio()
    return -(-p1 * p2 * UNIT // (q1 * q2))             # x * m, rounded up


def log_inv_up(delta_prime: float) -> float:
    """Upper bound on ln(1/delta_prime), as a float."""
    return up(-math.log(delta_prime), 2)


def advanced_epsilon(sum_sq: int, loss: int, n_inf: int, log_inv: float) -> "Amount":
    """sqrt(2 ln(1/delta') * sum eps_i^2) + sum eps_i (e^eps_i - 1), rounded up.

    ``sum_sq`` is the exact sum of squares (in units of 10**-2K), ``loss`` an exact sum of
    upper bounds, ``n_inf`` the number of loss terms that overflowed (making the bound
    infinite).
    """
    if n_inf:
        return math.inf
    if sum_sq == 0:
        return loss
    root = up(math.sqrt(up(2.0 * log_inv * float_up(sum_sq, UNIT * UNIT))))
    return math.inf if math.isinf(root) else ceil_amount(root) + loss


_rho_cache: "dict[int, int]" = {}


def rho_of_epsilon(e: int) -> int:
    """The zCDP cost of a pure epsilon-DP charge, ``eps**2 / 2``, exactly, rounded up to a
    whole unit (``e`` an exact epsilon: the charge's epsilon read as its decimal, as every
    epsilon is; the float's distance from it is one of the floating-point effects bounded
    with the mechanisms, far below their own, see :func:`dpfast.laplace_privacy_loss`)."""
    r = _rho_cache.get(e)
    if r is None:
        if len(_rho_cache) >= CACHE_MAX:
            _rho_cache.clear()
        _rho_cache[e] = r = -(-e * e // (2 * UNIT))
    return r


def rho_amount(rho: object, func: str) -> int:
    """A charge's rho: a finite float > 0, as an exact amount (its shortest decimal, like
    epsilon; releases pass a rho already rounded up past their formula's value)."""
    r = _v.check_real(rho, "rho", func, low=0.0)
    return exact(r)  # type: ignore[return-value]  # finite: an int


