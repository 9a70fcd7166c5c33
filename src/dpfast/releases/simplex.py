"""The arithmetic of :func:`dpfast.postprocess.consistent_counts`: the exact projection of
noisy counts onto the scaled simplex and their rounding to integers with a given sum.

This module holds the numerical kernels only (no checks of public arguments beyond what the
arithmetic itself needs); :mod:`dpfast.releases.postprocess` checks its callers' input and
calls them. The float projection (:func:`project_flat`) finds the threshold by a few
pruning passes (Michelot's algorithm), a sort only if they do not settle it, and Newton
steps measured from the smallest active value; the integer one (:func:`consistent_int`)
works in exact integer arithmetic; :func:`largest_remainder` rounds with a total in linear
time. Everything here reads only released (noisy) counts: it is post-processing.
"""
import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["exact_sum", "project_flat", "largest_remainder", "consistent_int",
           "check_floor_sum", "unreachable_total"]

# Cheap threshold-raising passes before falling back to the sort; each one removes cells that
# are provably inactive, so the sort (if needed at all) only sees what is left.
_PRUNE_ROUNDS = 4
# Newton steps from a good estimate settle in one or two; more means the estimate was off by
# many breakpoints and a fresh estimate in the shifted coordinates is cheaper.
_NEWTON_ROUNDS = 8

_EPS = float(np.finfo(np.float64).eps)


def exact_sum(a: "NDArray[Any]", bounded: bool) -> int:
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


def project_flat(v: "NDArray[np.float64]", total: float) -> "NDArray[np.float64]":
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
    q = max(top - total, (exact_sum(v, bounded) - total) // v.size)
    cand = v[v > q]
    jumped = False
    rounds = 0
    while True:
        n = cand.size
        s = exact_sum(cand, bounded) - total
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
                if exact_sum(above, bounded) - above.size * guess >= total:
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


def unreachable_total(total: int, low: int, k: int, func: str) -> ValueError:
    # sum(floor(x)) is a statistic of the data: the message says which side, not the sum.
    side = "above sum(floor(x)) + x.size" if total > low + k else "below sum(floor(x))"
    return ValueError(f"The 'total' parameter of {func} must be between sum(floor(x)) and "
                      f"sum(floor(x)) + x.size (x.size = {k}). Got total={total!r}, "
                      f"{side}, instead.")


def check_floor_sum(estimate: float, func: str) -> None:
    # Beyond 2^62 the exact int64 sum of the floors could wrap around.
    if estimate >= 2.0**62:
        raise ValueError(f"The 'x' parameter of {func} must have sum(floor(x)) below 2^62. "
                         "Got a larger sum instead.")


def largest_remainder(x: "NDArray[Any]", total: int, func: str,
                       repair: bool) -> "NDArray[np.int64]":
    """Round the 1-d non-negative float64 x to int64 summing to total; see
    round_preserving_sum. ``repair`` absorbs a sum that float rounding pushed out of reach."""
    k = x.size
    floors: NDArray[np.float64] = np.floor(x)
    check_floor_sum(float(np.sum(floors)), func)
    base = floors.astype(np.int64)
    frac = np.subtract(x, floors, out=floors)   # exact: floor(x) is within 2x of x
    r = total - int(base.sum())
    if not 0 <= r <= k:
        if not repair:
            raise unreachable_total(total, total - r, k, func)
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


def consistent_int(v: "NDArray[Any]", total: int) -> "NDArray[np.int64]":
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
