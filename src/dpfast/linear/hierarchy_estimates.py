"""The post-processing of a census hierarchy: exact counts of every level from the leaves,
the weighted least squares consistent with the tree, and the rounding to non-negative
integers that keep every sum.

Both steps are described in :mod:`dpfast.linear.hierarchy` (1. and 2.): the least squares in
two linear passes over the levels (bottom-up, then top-down), the rounding top-down by
largest remainders under each parent. They read no key and charge nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["level_counts", "least_squares", "round_top_down", "share_out"]


def level_counts(leaves: NDArray[np.int64], parents: list[NDArray[np.int64]],
                  ) -> list[NDArray[np.int64]]:
    """Exact counts of every level, top first (sums of the leaves up the tree)."""
    out = [leaves.copy()]
    for p in parents[::-1]:
        out.append(np.bincount(p, weights=out[-1]).astype(np.int64))
    return out[::-1]


def least_squares(noisy: list[NDArray[np.int64]], var: list[float],
                   parents: list[NDArray[np.int64]],
                   ) -> tuple[list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    """Consistent weighted least-squares estimates and their exact variances.

    Bottom-up, ``z`` is each unit's estimate from its own subtree and ``v`` its variance;
    ``s`` and ``vs`` the sum of a unit's children's ``z`` and its variance. Top-down, a
    child gets ``v / vs`` of its parent's gap (final estimate minus ``s``), and its final
    variance is ``v - (v / vs)^2 (vs - parent's final variance)`` (the smoother's)."""
    depth = len(noisy) - 1
    z: list[Any] = [None] * (depth + 1)
    v: list[Any] = [None] * (depth + 1)           # an array, or one float for a whole level
    s: list[Any] = [None] * depth
    vs: list[Any] = [None] * depth
    z[depth] = noisy[depth].astype(np.float64)
    v[depth] = var[depth]
    for level in range(depth - 1, -1, -1):                 # bottom-up
        p = parents[level]
        s[level] = np.bincount(p, weights=z[level + 1])
        vs[level] = (np.bincount(p) * v[level + 1] if isinstance(v[level + 1], float)
                     else np.bincount(p, weights=v[level + 1]))
        w_own, w_sum = 1.0 / var[level], 1.0 / vs[level]
        v[level] = 1.0 / (w_own + w_sum)
        z[level] = (noisy[level] * w_own + s[level] * w_sum) * v[level]
    est, est_var = [z[0]], [v[0]]
    for level in range(depth):                             # top-down
        p = parents[level]
        gap = (est[level] - s[level]) / vs[level]           # per parent
        shrink = (vs[level] - est_var[level]) / vs[level] ** 2
        est.append(z[level + 1] + v[level + 1] * gap[p])
        est_var.append(v[level + 1] - v[level + 1] ** 2 * shrink[p])
    return est, est_var


def round_top_down(est: list[NDArray[np.float64]], parents: list[NDArray[np.int64]],
                    ) -> list[NDArray[np.int64]]:
    """Non-negative integers with every parent the sum of its children (see the module)."""
    out = [np.array([max(0, round(float(est[0][0])))], dtype=np.int64)]
    for level, p in enumerate(parents):
        out.append(share_out(out[level], np.maximum(est[level + 1], 0.0), p))
    return out


def share_out(totals: NDArray[np.int64], weights: NDArray[np.float64],
               parent: NDArray[np.int64]) -> NDArray[np.int64]:
    """Integers >= 0 per child, summing exactly to its parent's total, each within 1 of its
    share of the total in proportion to the weights (equal shares where a parent's weights
    are all 0): the rounded cumulative shares of each parent's children, differenced."""
    order = None
    if parent.size > 1 and (np.diff(parent) < 0).any():
        order = np.argsort(parent, kind="stable")        # children grouped by parent
        parent, weights = parent[order], weights[order]
    kids = np.bincount(parent, minlength=totals.size)
    end = np.cumsum(kids)
    start = end - kids
    cum = np.cumsum(weights)
    base = cum[start] - weights[start]                    # cumulative weight before a group
    wsum = cum[end - 1] - base
    zero = wsum <= 0                                      # all weights 0: equal shares
    if zero.any():
        rank = np.arange(parent.size) - start[parent]
        cum = np.where(zero[parent], rank + 1.0, cum - base[parent])
        wsum = np.where(zero, kids, wsum)
    else:
        cum -= base[parent]                               # non-decreasing within a group
    total = totals.astype(np.float64)
    cum *= (total / wsum)[parent]
    np.floor(cum + 0.5, out=cum)
    np.minimum(cum, total[parent], out=cum)
    cum[end - 1] = total                                  # each group ends at its total
    out = np.empty(parent.size, dtype=np.int64)
    out[0] = cum[0]
    np.subtract(cum[1:], cum[:-1], out=out[1:], casting="unsafe")
    out[start] = cum[start]
    if order is not None:
        unsorted = np.empty_like(out)
        unsorted[order] = out
        out = unsorted
    return out
