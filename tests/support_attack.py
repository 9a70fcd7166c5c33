"""Support attack on numpy's textbook Laplace sampler (Mironov, CCS 2012).

numpy's ``Generator.laplace(loc, scale)`` draws a 53-bit uniform
``U = j * 2**-53`` and returns ``loc + scale*log(2U)`` (U < 1/2) or
``loc - scale*log(2 - 2U)`` (U >= 1/2), all in double precision.  There are
at most 2**53 possible outputs for a given (loc, scale), and they are
scattered irregularly over the doubles: near ``loc`` the log values are far
coarser than the double grid, and shifting by a different ``loc`` rounds them
onto different doubles.  So the *set* of reachable outputs depends on
``loc``, and an observer who sees one output y can often check that y is
unreachable from a neighbouring input -- an event of probability zero under
one input and large probability under the other, which no finite epsilon
permits.

This module emulates the sampler exactly (bit for bit, using the C
library's ``log`` through ``math.log``) and decides, for a given double y,
whether any j makes the sampler return exactly y.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["numpy_laplace_from_raw", "numpy_laplace_can_output"]

_TWO_M53 = 2.0 ** -53
_HALF_J = 1 << 52  # j >= 2**52  <=>  U >= 0.5
_MAX_J = (1 << 53) - 1


def _laplace_of_j(j: int, loc: float, scale: float) -> float:
    # Python floats are IEEE doubles and math.log is glibc's log, so writing
    # numpy's C expression with the same operand order gives the same bits
    # (x86-64 numpy builds do not contract into FMA here; the emulation test
    # checks this).  2.0 - U - U parses as (2.0 - U) - U, as in C.
    u = j * _TWO_M53
    if u >= 0.5:
        return loc - scale * math.log(2.0 - u - u)
    return loc + scale * math.log(u + u)


def numpy_laplace_from_raw(raw, loc: float, scale: float) -> np.ndarray:
    """Replay ``Generator(bitgen).laplace(loc, scale, size=...)`` from raw words.

    ``raw`` are the uint64 words the bit generator would produce (e.g.
    ``PCG64(seed).random_raw(n)``).  Each word with top 53 bits zero (U == 0)
    is rejected and the next word is used, as numpy does, so the result may
    be shorter than ``raw``.
    """
    raw = np.asarray(raw, dtype=np.uint64)
    js = (raw >> np.uint64(11)).tolist()
    loc = float(loc)
    scale = float(scale)
    out = [_laplace_of_j(j, loc, scale) for j in js if j != 0]
    return np.array(out, dtype=np.float64)


def _first_j_at_least(y: float, lo: int, hi: int, loc: float, scale: float) -> int:
    # Smallest j in [lo, hi] with f(j) >= y, or hi if none.  Valid because on
    # each branch f is non-decreasing in j: U+U and 2-U-U are monotone in U
    # (exact or round-to-nearest of monotone exact values), log is monotone,
    # and multiplying/adding a constant under round-to-nearest preserves
    # (weak) order.  Hence if some j hits y exactly, the first j with
    # f(j) >= y hits it.
    while lo < hi:
        mid = (lo + hi) >> 1
        if _laplace_of_j(mid, loc, scale) >= y:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _can_output_one(y: float, loc: float, scale: float) -> bool:
    if not math.isfinite(y):
        return False
    for lo, hi in ((1, _HALF_J - 1), (_HALF_J, _MAX_J)):
        j0 = _first_j_at_least(y, lo, hi, loc, scale)
        # Neighbours guard against a last-bit non-monotonicity of log that
        # would otherwise make the search skip past an exact hit.
        for j in range(max(lo, j0 - 3), min(hi, j0 + 3) + 1):
            if _laplace_of_j(j, loc, scale) == y:
                return True
    return False


def numpy_laplace_can_output(y, loc: float, scale: float) -> np.ndarray:
    """For each double in ``y``: can ``Generator.laplace(loc, scale)`` return it?

    Exact decision over all 53-bit uniforms ``U = j * 2**-53``,
    ``1 <= j < 2**53``.  Returns a bool array shaped like ``y``.
    """
    y = np.asarray(y, dtype=np.float64)
    loc = float(loc)
    scale = float(scale)
    flat = [_can_output_one(v, loc, scale) for v in y.ravel().tolist()]
    return np.array(flat, dtype=bool).reshape(y.shape)
