"""Post-processing of released noisy counts.

Everything here reads only an already released (noisy) output, never the raw data, so by the
post-processing property of differential privacy it costs no privacy budget: the results are
exactly as private as their inputs. A total derived from the noisy counts themselves
(``total=None``) is also post-processed; a caller who passes a ``total`` computed from the
raw data must have released it through a mechanism of its own.

The functions are vectorised numpy code: their cost is a handful of passes over the data, plus
a sort of those cells that a few cheap pruning passes could not settle.

:func:`clip_nonnegative` sets negative counts to 0; :func:`consistent_counts` gives the
non-negative integers closest to the noisy counts that sum to a total (the noisy sum, or a
released one); :func:`project_simplex` and :func:`round_preserving_sum` are its two steps;
:func:`apply` is what the releases' ``postprocess=`` keyword calls (``"clip"``,
``"consistent"`` or a callable).

Examples
--------
Six noisy counts released at epsilon = 0.5, then made non-negative integers at no cost
(``rng=4`` makes the example reproducible: a seed is for tests and research only, never
for a real release):

>>> import numpy as np
>>> import dpfast as dp
>>> acct = dp.Accountant(epsilon=1.0)
>>> noisy = dp.noisy_counts(np.array([120, 3, 0, 41, 9, 1]), epsilon=0.5,
...                         accountant=acct, rng=4)
>>> noisy
array([118,   6,  -6,  45,   7,   4])
>>> dp.postprocess.clip_nonnegative(noisy)
array([118,   6,   0,  45,   7,   4])
>>> fixed = dp.postprocess.consistent_counts(noisy)   # keeps the noisy sum, 174
>>> fixed, int(fixed.sum())
(array([117,   5,   0,  44,   6,   2]), 174)
>>> tuple(acct.spent)                                 # post-processing is free
(0.5, 0.0)

The two steps on their own:

>>> dp.postprocess.project_simplex([0.5, -0.2, 0.9], 1.0).round(6).tolist()
[0.3, 0.0, 0.7]
>>> dp.postprocess.round_preserving_sum([1.4, 2.3, 3.3], 7)
array([2, 2, 3])
"""
import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from ..validation import as_array, check_data, check_real, entry_at, fail

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal, TypeAlias, TypeVar, overload

    from numpy.typing import ArrayLike, NDArray

    #: What a ``total`` parameter accepts (an integral float too, at run time).
    _Total: TypeAlias = int | np.integer[Any]
    _Counts = TypeVar("_Counts", bound=ArrayLike)
    _Scalar = TypeVar("_Scalar", bound=np.integer[Any] | np.floating[Any])
    _T = TypeVar("_T")

__all__ = [
    "apply",
    "clip_nonnegative",
    "consistent_counts",
    "project_simplex",
    "round_preserving_sum",
]

#: Largest ``total`` accepted by :func:`consistent_counts`: beyond it not every integer is a
#: float64, so the projection could not even represent its target sum.
MAX_TOTAL = 2**53

# Integer histograms take the exact integer path while every |count| <= 2^61: then every
# difference count - threshold that it forms stays inside int64.
_MAX_EXACT_COUNT = 2**61

# Cheap threshold-raising passes before falling back to the sort; each one removes cells that
# are provably inactive, so the sort (if needed at all) only sees what is left.
_PRUNE_ROUNDS = 4
# Newton steps from a good estimate settle in one or two; more means the estimate was off by
# many breakpoints and a fresh estimate in the shifted coordinates is cheaper.
_NEWTON_ROUNDS = 8

_EPS = float(np.finfo(np.float64).eps)

_POSTPROCESS_RULE = "None, 'clip', 'consistent' or a callable"


# -- validation ------------------------------------------------------------------------
def _check_counts(value: "ArrayLike", name: str,
                  func: str) -> "NDArray[np.integer[Any] | np.floating[Any]]":
    """The input as an array of its own integer or real floating dtype, every entry finite.

    Unlike :func:`check_data` the dtype is kept (callers promise it back); the rejections
    and their messages are check_data's.
    """
    arr: NDArray[np.integer[Any] | np.floating[Any]] | None
    arr = as_array(value, name, func)
    if arr.dtype.kind not in "iuf":
        # Let check_data raise its shared TypeError/ValueError (and keep what it accepts).
        arr = check_data(value, name, func)[0]
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        check_data(arr, name, func)     # names the first NaN or infinity
    return arr


def check_integer_total(total: object, func: str, high: int) -> int:
    """A non-negative integral number (Python or numpy int, or an integral float) <= high,
    as a Python int."""
    rule = "a non-negative integer"
    if isinstance(total, (bool, np.bool_)) or not isinstance(total, numbers.Real):
        raise fail(TypeError, "total", func, rule, total)
    if isinstance(total, numbers.Integral):
        value = int(total)
    else:
        x = float(total)
        if not math.isfinite(x) or x != math.floor(x):
            raise fail(ValueError, "total", func, rule, total)
        value = int(x)
    if value < 0:
        raise fail(ValueError, "total", func, rule, total)
    if value > high:
        raise fail(ValueError, "total", func, f"{rule} at most {high}", total)
    return value


# -- helpers ---------------------------------------------------------------------------
def _exact_sum(a: "NDArray[Any]", bounded: bool) -> int:
    """Sum of an int64 array as a Python int; ``bounded`` promises size * max|a| < 2^63."""
    if bounded or a.size == 0:
        return int(a.sum())
    # int64 sums wrap silently; 32-bit halves cannot overflow for fewer than 2^31 entries.
    return (int((a >> 32).sum()) << 32) + int((a & 0xFFFFFFFF).sum())


def _sorted_threshold(cand: "NDArray[np.float64]", total: float) -> tuple[float, float]:
    """(tau, anchor): tau with sum(max(cand - tau, 0)) = total, from the sorted candidates,
    and the smallest candidate above it.

    With u sorted in decreasing order and c_j = u_1 + ... + u_j, the active cells are the
    largest rho, where rho is the last j with u_j > (c_j - total) / j, and then
    tau = (c_rho - total) / rho. Values are shifted by their maximum first so that the
    cumulative sums of nearby large values keep their low bits.
    """
    ordered = np.sort(cand)[::-1]
    top = ordered[0]
    u = ordered - top
    thresholds = (np.cumsum(u) - total) / np.arange(1, u.size + 1)
    above = np.flatnonzero(u > thresholds)
    # j = 1 always qualifies in exact arithmetic (u_1 = 0 > -total); rounding may hide it.
    rho = above[-1] if above.size else 0
    return float(top + thresholds[rho]), float(ordered[rho])


def _estimate_tau(v: "NDArray[np.float64]", total: float) -> tuple[float, float]:
    """(tau, anchor) for ``v`` (float64, non-empty) and total > 0: an approximation of the
    projection threshold, accurate to rounding unless |v| >> total, and an entry of ``v``
    (the smallest one believed active, else the largest) to measure values from."""
    top = float(v.max())
    # Two lower bounds on tau: the largest cell alone cannot exceed total, and
    # sum(max(v - t, 0)) >= sum(v - t) makes the all-active threshold one too.
    t = top - total
    mean_t = (float(np.sum(v)) - total) / v.size
    if mean_t > t:                      # False for a NaN from overflowing sums
        t = mean_t
    cand = v[v > t]
    for _ in range(_PRUNE_ROUNDS):
        if cand.size == 0:              # t rounded onto the largest value
            return t, top
        # Michelot's step: the threshold of the current candidates is still a lower bound,
        # and cells at or below a lower bound can never become active.
        t_next = (float(np.sum(cand)) - total) / cand.size
        keep = cand > t_next
        if keep.all():
            return t_next, float(cand.min())
        t = t_next
        cand = cand[keep]
    return _sorted_threshold(cand, total) if cand.size else (t, top)


def _newton(d: "NDArray[np.float64]", total: float,
            t: float) -> tuple[float, float | None]:
    """Refine the threshold t of d by Newton steps on the piecewise-linear, convex,
    decreasing f(t) = sum(max(d - t, 0)).

    Returns (t, low): low is the smallest active value of d, or None if the steps did not
    settle.
    """
    previous = -1
    for _ in range(_NEWTON_ROUNDS):
        active = d[d > t]
        n = active.size
        if n == 0:
            # Past the largest value: restart from a lower bound, whence Newton's iterates
            # rise monotonically to the root.
            t = float(d.max()) - total
            previous = 0
            continue
        # The Newton step t + (f(t) - total) / n, written without t: no cancellation.
        t_next = (float(np.sum(active)) - total) / n
        low = float(active.min())
        # Moving up, cells at or below t stay inactive; if every active cell also stays
        # above t_next, the active set is unchanged and t_next is the root of its piece.
        # An unchanged count after a step (active sets are nested along t) says the same.
        if n == previous or (t_next >= t and low > t_next):
            return t_next, low
        t = t_next
        previous = n
    return t, None


def _project_flat(v: "NDArray[np.float64]", total: float) -> "NDArray[np.float64]":
    """Euclidean projection of the 1-d float64 ``v`` (non-empty) onto the simplex of sum
    ``total`` > 0; returns a new float64 array."""
    with np.errstate(over="ignore", invalid="ignore"):
        tau, anchor = _estimate_tau(v, total)
        # Measure from the smallest active value: where |v| >> total the cells that matter
        # lie within a factor of two of it, so v - anchor is exact; and the threshold left
        # to find is minus the smallest positive x_i, so its rounding error, which every
        # active cell inherits, is tiny next to total.
        d = v - anchor
        # Start a hair below the estimate, so that the first step normally moves up and a
        # single pass confirms it.
        t = tau - anchor
        t -= 64 * _EPS * (abs(t) + abs(anchor) + total)
        for _ in range(4):
            t, low = _newton(d, total, t)
            if low is None:             # the estimate was poor: a new one, from here
                t, low = _estimate_tau(d, total)
            elif low == 0.0:
                break
            # The smallest active value was not the anchor (an estimate off by a cell):
            # measure from it instead and polish again.
            np.subtract(d, low, out=d)
            t -= low
        if not math.isfinite(t) or not math.isfinite(anchor):
            raise ValueError("The 'values' and 'total' parameters of project_simplex are too "
                             "large for float64 arithmetic: scale them down.")
        np.subtract(d, t, out=d)
    # x first: maximum(x, 0.0) turns -0.0 into +0.0.
    return np.maximum(d, 0.0, out=d)


def _integer_threshold(v: "NDArray[np.int64]", total: int,
                       bounded: bool) -> tuple[int, int, int]:
    """For int64 ``v`` (non-empty, |v| <= 2^61) and an int total > 0, the exact threshold of
    the projection as (q, n, rem): the active cells are those with v > q, there are n of
    them, and tau = q + rem / n with 0 <= rem < n.

    This is Michelot's iteration on q = floor(tau): from a lower bound it rises monotonically
    to the unique fixed point, and for integer cells v > tau exactly when v > floor(tau).
    """
    top = int(v.max())
    q = max(top - total, (_exact_sum(v, bounded) - total) // v.size)
    cand = v[v > q]
    jumped = False
    rounds = 0
    while True:
        n = cand.size
        s = _exact_sum(cand, bounded) - total
        q_next = s // n
        keep = cand > q_next
        if keep.all():
            return q_next, n, s - n * q_next
        cand = cand[keep]
        q = q_next
        rounds += 1
        if rounds >= _PRUNE_ROUNDS and not jumped:
            # Slow progress: jump close to the answer with the float estimate, stepping back
            # until the jump is certified to be a lower bound (sum(max(v - q, 0)) >= total).
            jumped = True
            estimate = _sorted_threshold(cand.astype(np.float64), float(total))[0]
            guess = math.floor(estimate) - 1
            back = 1
            while guess > q:
                above = cand[cand > guess]
                if _exact_sum(above, bounded) - above.size * guess >= total:
                    q, cand = guess, above
                    break
                guess -= back
                back *= 2


def _give_units(base: "NDArray[np.int64]", frac: "NDArray[np.float64]", r: int) -> None:
    """Add one to the r entries of base with the largest frac, ties to the lower index
    (what a stable descending sort would pick), in linear time."""
    k = base.size
    if r == 0:
        return
    if r == k:
        base += 1
        return
    # The r-th largest fraction: everything above it gets a unit, and the remaining units
    # go to the first cells (in flat order) that equal it.
    cut = np.partition(frac, k - r)[k - r]
    above = frac > cut
    base += above
    need = r - int(np.count_nonzero(above))
    base[np.flatnonzero(frac == cut)[:need]] += 1


def _unreachable_total(total: int, low: int, k: int, func: str) -> ValueError:
    # sum(floor(x)) is a statistic of the data: the message says which side, not the sum.
    side = "above sum(floor(x)) + x.size" if total > low + k else "below sum(floor(x))"
    return ValueError(f"The 'total' parameter of {func} must be between sum(floor(x)) and "
                      f"sum(floor(x)) + x.size (x.size = {k}). Got total={total!r}, "
                      f"{side}, instead.")


def _check_floor_sum(estimate: float, func: str) -> None:
    # Beyond 2^62 the exact int64 sum of the floors could wrap around.
    if estimate >= 2.0**62:
        raise ValueError(f"The 'x' parameter of {func} must have sum(floor(x)) below 2^62. "
                         "Got a larger sum instead.")


def _largest_remainder(x: "NDArray[Any]", total: int, func: str,
                       repair: bool) -> "NDArray[np.int64]":
    """Round the 1-d non-negative float64 x to int64 summing to total; see
    round_preserving_sum. ``repair`` absorbs a sum that float rounding pushed out of reach."""
    k = x.size
    floors: NDArray[np.float64] = np.floor(x)
    _check_floor_sum(float(np.sum(floors)), func)
    base = floors.astype(np.int64)
    frac = np.subtract(x, floors, out=floors)   # exact: floor(x) is within 2x of x
    r = total - int(base.sum())
    if not 0 <= r <= k:
        if not repair:
            raise _unreachable_total(total, total - r, k, func)
        # Only reachable when the projected sum is off by a unit or more, i.e. totals near
        # 2^53: spread or withdraw the excess, then round as usual.
        if r > k:
            base += r // k
            r %= k
        while r < 0:
            donors = np.flatnonzero(base > 0)
            take = donors[np.argsort(frac[donors], kind="stable")[:-r]]
            base[take] -= 1
            r += take.size
    _give_units(base, frac, r)
    return base


def _consistent_int(v: "NDArray[Any]", total: int) -> "NDArray[np.int64]":
    """consistent_counts for int64 cells with |v| <= 2^61, in exact integer arithmetic."""
    k = v.size
    top = max(abs(int(v.max())), abs(int(v.min())))
    bounded = top * k < 2**63
    q, n, rem = _integer_threshold(v, total, bounded)
    active = v > q
    # x = v - q - rem/n on the active cells: floors v - q - 1 (v - q when rem = 0), all with
    # the same fractional part, so the n - rem leftover units go to the first active cells.
    floor_shift = q + 1 if rem else q
    out: NDArray[np.int64] = v - floor_shift
    out *= active
    if rem:
        out[np.flatnonzero(active)[:n - rem]] += 1
    return out


# -- public functions ------------------------------------------------------------------
if TYPE_CHECKING:
    @overload
    def clip_nonnegative(counts: NDArray[_Scalar]) -> NDArray[_Scalar]: ...
    @overload
    def clip_nonnegative(counts: ArrayLike) -> NDArray[Any]: ...


def clip_nonnegative(counts: "ArrayLike") -> Any:
    """Set negative counts to zero.

    Parameters
    ----------
    counts : array_like of int or float
        Noisy counts of any shape; entries must be finite.

    Returns
    -------
    ndarray
        A new array of the same shape and dtype, ``max(counts, 0)`` entrywise.

    Raises
    ------
    TypeError
        For non-numeric data (strings, objects, booleans, complex numbers).
    ValueError
        For NaN or infinite entries.

    Notes
    -----
    Clipping never moves a count further from a non-negative truth, but it biases small
    counts upwards and does not preserve the total; see :func:`consistent_counts`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfast.releases.postprocess import clip_nonnegative
    >>> clip_nonnegative(np.array([4, -2, 0, 7]))
    array([4, 0, 0, 7])
    >>> clip_nonnegative(np.array([[-0.5, 1.5]], dtype=np.float32))
    array([[0. , 1.5]], dtype=float32)
    """
    arr = _check_counts(counts, "counts", "clip_nonnegative")
    out = np.empty_like(arr)            # an array even for 0-d input
    return np.maximum(arr, arr.dtype.type(0), out=out)


def project_simplex(values: "ArrayLike", total: float) -> "NDArray[np.float64]":
    """Euclidean projection onto the scaled simplex ``{x : x >= 0, sum(x) = total}``.

    Parameters
    ----------
    values : array_like of int or float
        Any shape; entries must be finite.
    total : float
        The required sum, finite and >= 0.

    Returns
    -------
    ndarray of float64
        Same shape as ``values``: the unique ``x`` minimising ``||x - values||_2`` subject
        to ``x >= 0`` and ``sum(x) == total``. Every entry is ``>= 0`` exactly, and the sum
        matches ``total`` up to float rounding (far below ``values.size`` ulps of
        ``total``).

    Raises
    ------
    TypeError
        For non-numeric ``values`` or a non-real ``total``.
    ValueError
        For NaN or infinite entries, a negative, NaN or infinite ``total``, or empty
        ``values`` with ``total > 0``.

    Notes
    -----
    The Lagrangian conditions give ``x_i = max(values_i - tau, 0)`` for the single
    threshold ``tau`` with ``sum(max(values - tau, 0)) == total``. The left side is
    continuous, piecewise linear and decreasing in ``tau``; with ``u`` the values in
    decreasing order and ``c_j = u_1 + ... + u_j``, the active cells are the ``rho`` largest
    for the last ``j`` with ``u_j > (c_j - total) / j``, and ``tau = (c_rho - total) / rho``.
    A few O(k) pruning passes (Michelot's algorithm) discard cells that are provably
    inactive before that O(k log k) sort, which is often not needed at all. A final
    Newton step, with values measured from the smallest active one, keeps the sum accurate
    to rounding even when ``|values|`` is much larger than ``total``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfast.releases.postprocess import project_simplex
    >>> project_simplex(np.array([3.0, -1.0, 2.0]), 3)
    array([2., 0., 1.])
    >>> project_simplex([[0.5, 0.5], [0.5, 0.5]], 1)
    array([[0.25, 0.25],
           [0.25, 0.25]])
    """
    func = "project_simplex"
    arr, _ = check_data(values, "values", func)
    total = check_real(total, "total", func, low=0.0, low_open=False)
    if arr.size == 0:
        if total > 0:
            raise ValueError(f"The 'total' parameter of {func} must be 0 when 'values' is "
                             f"empty. Got {total!r} instead.")
        return np.zeros(arr.shape)
    if total == 0:
        return np.zeros(arr.shape)
    flat = arr.reshape(-1).astype(np.float64, copy=False)   # _project_flat leaves it alone
    return _project_flat(flat, total).reshape(arr.shape)


def round_preserving_sum(x: "ArrayLike", total: "_Total") -> "NDArray[np.int64]":
    """Round non-negative numbers to integers with a prescribed sum (largest remainders).

    Every entry becomes ``floor(x_i)`` or ``floor(x_i) + 1``: the floors are taken, then the
    ``total - sum(floor(x))`` leftover units go to the entries with the largest fractional
    parts, ties to the lower flat index.

    Parameters
    ----------
    x : array_like of int or float
        Any shape; entries finite and >= 0, with ``sum(floor(x)) < 2**62``.
    total : int
        The required sum: a non-negative integer (an integral float is accepted) with
        ``sum(floor(x)) <= total <= sum(floor(x)) + x.size``.

    Returns
    -------
    ndarray of int64
        Same shape as ``x``, summing exactly to ``total``, each entry within 1 of ``x``.

    Raises
    ------
    TypeError
        For non-numeric ``x`` or a non-numeric or boolean ``total``.
    ValueError
        For NaN, infinite or negative entries, a ``total`` that is negative, not integral or
        outside the range above.

    Notes
    -----
    Among the allowed roundings this one is also the closest to ``x`` in every L_p norm,
    p >= 1. It runs in linear time (a partition, not a sort); the result equals the one a
    stable descending sort of the fractional parts would give.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfast.releases.postprocess import round_preserving_sum
    >>> round_preserving_sum(np.array([1.2, 0.7, 2.1]), 4)
    array([1, 1, 2])
    >>> round_preserving_sum([0.5, 0.5, 0.5, 0.5], 2)    # ties go to the lower index
    array([1, 1, 0, 0])
    """
    func = "round_preserving_sum"
    arr, is_int = check_data(x, "x", func)
    total = check_integer_total(total, func, 2**63 - 1)
    negative = arr < 0
    if negative.any():
        raise ValueError(f"The 'x' parameter of {func} must be non-negative. Got "
                         f"{entry_at(negative, 'is negative')} instead.")
    flat = arr.reshape(-1)
    if not is_int:
        return _largest_remainder(flat, total, func, repair=False).reshape(arr.shape)
    # Integers are their own floors (exactly, even beyond 2^53) with equal fractional parts
    # of zero, so the leftover units go to the first entries.
    _check_floor_sum(float(np.sum(flat, dtype=np.float64)), func)
    out: NDArray[np.int64] = flat.copy()
    r = total - int(out.sum())
    if not 0 <= r <= out.size:
        raise _unreachable_total(total, total - r, out.size, func)
    out[:r] += 1
    return out.reshape(arr.shape)


def consistent_counts(counts: "ArrayLike", total: "_Total | None" = None) -> "NDArray[np.int64]":
    """Make noisy counts non-negative integers with a given sum, as close as possible.

    The counts are projected onto ``{x >= 0, sum(x) = total}`` (:func:`project_simplex`) and
    the projection is rounded with :func:`round_preserving_sum`: the one-dimensional case of
    the US Census Bureau's TopDown post-processing.

    Parameters
    ----------
    counts : array_like of int or float
        Noisy counts of any shape, possibly negative; entries must be finite.
    total : int, optional
        The required sum, a non-negative integer at most ``2**53`` (an integral float is
        accepted). The default, ``max(0, round(sum(counts)))``, is itself post-processing of
        the noisy counts; a total computed from the raw data must be released separately.

    Returns
    -------
    ndarray of int64
        Same shape as ``counts``: non-negative, summing exactly to ``total``.

    Raises
    ------
    TypeError
        For non-numeric ``counts`` (strings, objects, booleans) or a non-numeric ``total``.
    ValueError
        For NaN or infinite counts; a negative, non-integral or too large ``total``; empty
        ``counts`` with ``total > 0``.

    Notes
    -----
    For integer counts (within ``±2**61``) the whole computation is exact integer
    arithmetic. The projection shifts every active cell by the same threshold, so all active
    cells share one fractional part, and the leftover units go to the active cells with the
    lowest flat indices. Float counts go through float64 projection and rounding; their
    ties are decided by the last bits of the projection.

    If ``total`` equals the true sum of a non-negative truth, the projection is at least as
    close to that truth in L2 as the noisy counts are (projection onto a convex set holding
    the truth never increases the distance to it); rounding then moves each cell by less
    than one, so the result is within ``sqrt(counts.size)`` more of it.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfast.releases.postprocess import consistent_counts
    >>> noisy = np.array([12, -3, 5, 1])
    >>> consistent_counts(noisy)            # total = round(sum(noisy)) = 15; tau = 1
    array([11,  0,  4,  0])
    >>> consistent_counts(noisy, total=20)  # tau = -2/3: two leftover units, lowest indices
    array([13,  0,  6,  1])
    """
    func = "consistent_counts"
    arr, is_int = check_data(counts, "counts", func)
    if total is None:
        s: float
        if is_int:
            top = max(abs(int(arr.max())), abs(int(arr.min()))) if arr.size else 0
            s = _exact_sum(arr.reshape(-1), top * arr.size < 2**63)
        else:
            s = float(np.sum(arr))
        if not s <= MAX_TOTAL:          # also catches a sum that overflowed to inf
            raise ValueError(f"The 'counts' parameter of {func} must sum to at most 2^53 "
                             "when 'total' is None. Got a larger sum instead (pass 'total').")
        total = max(0, round(s))
    else:
        total = check_integer_total(total, func, MAX_TOTAL)
    if arr.size == 0:
        if total > 0:
            raise ValueError(f"The 'total' parameter of {func} must be 0 when 'counts' is "
                             f"empty. Got {total!r} instead.")
        return np.zeros(arr.shape, dtype=np.int64)
    if total == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    flat = arr.reshape(-1)
    if is_int and -_MAX_EXACT_COUNT <= flat.min() and flat.max() <= _MAX_EXACT_COUNT:
        out = _consistent_int(flat, total)
    else:
        x = _project_flat(flat.astype(np.float64, copy=False), float(total))
        out = _largest_remainder(x, total, func, repair=True)
    return out.reshape(arr.shape)


if TYPE_CHECKING:
    @overload
    def apply(counts: _Counts, postprocess: None, *, total: _Total | None = None) -> _Counts: ...
    @overload
    def apply(counts: ArrayLike, postprocess: Literal["clip"], *,
              total: _Total | None = None) -> NDArray[Any]: ...
    @overload
    def apply(counts: ArrayLike, postprocess: Literal["consistent"], *,
              total: _Total | None = None) -> NDArray[np.int64]: ...
    @overload
    def apply(counts: _Counts, postprocess: Callable[[_Counts], _T], *,
              total: _Total | None = None) -> _T: ...


def apply(counts: "ArrayLike",
          postprocess: "Literal['clip', 'consistent'] | Callable[[Any], Any] | None", *,
          total: "_Total | None" = None) -> Any:
    """Apply a named or callable post-processing step to released counts.

    This is the dispatch behind the ``postprocess=`` options of other dpfast functions.

    Parameters
    ----------
    counts : array_like
        Released (noisy) counts.
    postprocess : None, {'clip', 'consistent'} or callable
        ``None`` returns ``counts`` itself, unchanged; ``'clip'`` calls
        :func:`clip_nonnegative`; ``'consistent'`` calls :func:`consistent_counts` with
        ``total``; a callable ``f`` returns ``f(counts)``.
    total : int, optional
        Passed to :func:`consistent_counts`; unused by the other choices.

    Returns
    -------
    object
        Whatever the chosen step returns.

    Raises
    ------
    ValueError
        If ``postprocess`` is none of the above; the steps raise their own errors.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfast import postprocess
    >>> noisy = np.array([3, -1, 4])
    >>> postprocess.apply(noisy, "clip")
    array([3, 0, 4])
    >>> postprocess.apply(noisy, "consistent", total=6)
    array([3, 0, 3])
    >>> postprocess.apply(noisy, lambda c: c * 2)
    array([ 6, -2,  8])
    """
    if postprocess is None:
        return counts
    if isinstance(postprocess, str):
        if postprocess == "clip":
            return clip_nonnegative(counts)
        if postprocess == "consistent":
            return consistent_counts(counts, total)
    elif callable(postprocess):
        return postprocess(counts)
    raise fail(ValueError, "postprocess", "apply", _POSTPROCESS_RULE, postprocess)
