"""Quantiles and the median of a column by the exponential mechanism.

The mechanism draws over the gaps of the sorted values on a fine grid
(:func:`quantile_grid`), several quantiles at once by Kaplan, Schnapp and Stemmer's recursion.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import _native, noise
from .. import validation as _v
from .._release import Keys, Release
from .bounding import kept
from .inputs import column
from .parts import down

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike


#: Integers of the quantile grid: at most 2**32 grid points over the bounds.
GRID_POINTS = 2**32


def quantile_grid(lo: float, hi: float) -> tuple[float, int]:
    """(g, top): the power-of-two step and the last index of the grid ``lo + k g``,
    ``k = 0..top``, over ``[lo, hi]`` with at most :data:`GRID_POINTS` points. Outputs are
    grid points: their set does not depend on the data."""
    width = hi - lo
    # 2**-32 of the width's binade, up; at least the least float (a subnormal width).
    g = max(math.ldexp(1.0, math.frexp(width)[1] - 32), math.ulp(0.0))
    while width / g > GRID_POINTS - 1:
        g *= 2.0
    return g, int(math.floor(width / g))


def check_q(q: object, func: str) -> NDArray[np.float64]:
    """Quantile levels: a float or a 1-D sequence of floats in [0, 1]."""
    try:
        arr = np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"The 'q' parameter of {func} must be a float or a sequence of "
                        f"floats in [0, 1]. Got {q!r} instead.") from None
    if arr.ndim > 1 or arr.size == 0 or not np.isfinite(arr).all() or \
            (arr < 0).any() or (arr > 1).any():
        raise ValueError(f"The 'q' parameter of {func} must be a float or a non-empty "
                         f"sequence of floats in [0, 1]. Got {q!r} instead.")
    return arr


METHODS = ("recursive", "independent")


def _pick(keys: Keys, threads: int, s: NDArray[np.uint32], lo: int, hi: int, q: float,
          eps: float, max_rows: int) -> int:
    """One exponential-mechanism draw of the q-quantile of the sorted keys ``s`` (all in
    [lo, hi]) among the integers lo..hi: utility ``-|rank - q len(s)|``, whose change when a
    person's ``max_rows`` rows come or go is at most ``max_rows max(q, 1 - q)``."""
    sens = max_rows * max(q, 1.0 - q)
    w = _native.quantile_weights(s, lo, hi, q * s.size, eps / (2.0 * sens))
    j = int(noise.exponential_mechanism(keys.next(), threads, w, float(w.max()), 1.0))
    start = lo if j == 0 else int(s[j - 1]) + 1
    stop = hi if j == s.size else int(s[j])
    # Uniform among the integers of the chosen gap: exact (numpy's bounded integers).
    return start + int(np.random.Generator(keys.coins()).integers(0, stop - start + 1))


def _recursive(keys: Keys, threads: int, s: NDArray[np.uint32], top: int,
               qs: NDArray[np.float64], eps: float, max_rows: int) -> NDArray[np.int64]:
    """Kaplan, Schnapp and Stemmer's recursion: the middle quantile of each sub-problem,
    then its two sides (the data below the released point, and the rest) for the quantiles
    on each side, relative to the side. A level's sub-problems hold disjoint rows, so a
    level costs ``eps`` once; there are ``ceil(log2(m + 1))`` levels."""
    out = np.empty(qs.size, dtype=np.int64)
    # (first, last) quantile indices, slice [a, b) of s, grid range [lo, hi], and the
    # quantile levels qlo < (those of the problem) < qhi the slice stands for.
    level = [(0, qs.size, 0, s.size, 0, top, 0.0, 1.0)]
    while level:
        nxt = []
        for i0, i1, a, b, lo, hi, qlo, qhi in level:
            mid = (i0 + i1) // 2
            rel_q = min(max((qs[mid] - qlo) / (qhi - qlo), 0.0), 1.0) if qhi > qlo else 0.5
            y = _pick(keys, threads, s[a:b], lo, hi, rel_q, eps, max_rows)
            out[mid] = y
            cut = a + int(np.searchsorted(s[a:b], y, side="left"))
            if mid > i0:
                nxt.append((i0, mid, a, cut, lo, y, qlo, qs[mid]))
            if i1 > mid + 1:
                nxt.append((mid + 1, i1, cut, b, y, hi, qs[mid], qhi))
        level = nxt
    return out


def levels(m: int) -> int:
    """Levels of the recursion for m quantiles."""
    return max(1, math.ceil(math.log2(m + 1)))


def quantiles(values: object, q: object, *, bounds: object, epsilon: object,
              privacy_unit: object = None, max_rows: object = 1,
              method: str = "recursive", accountant: AccountantLike | None = None,
              rng: RngLike = None, threads: int | None = None) -> NDArray[np.float64]:
    """Differentially private quantiles of a column clamped to ``bounds``, no candidate list.

    The values are placed on a grid of at most 2**32 points over the bounds (a power-of-two
    step), sorted (a radix sort), and each quantile drawn by the exponential mechanism over
    the grid points, weighted by the gaps of the sorted data: a point with ``j`` values
    below it has utility ``-|j - q n|``.

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    q : float or sequence of float
        Quantile levels in [0, 1].
    bounds : (float, float)
        Public clamping bounds.
    epsilon : float
        The whole budget (pure DP; the exponential mechanism's zCDP cost, ``epsilon**2 / 8``
        per draw, is stated to the accountant).
    privacy_unit, max_rows
        As for :func:`sum`.
    method : {"recursive", "independent"}
        ``"recursive"`` (default): Kaplan et al.'s recursion, ``epsilon / levels`` per draw,
        ``levels = ceil(log2(len(q) + 1))``. ``"independent"``: each quantile on all the
        data with ``epsilon / len(q)``. (Gillenwater et al.'s JointExp, measured beside
        them by ``dpfast bench --records``, has the lower error for a few quantiles of a
        small sample but the higher for 99, and its cost grows as ``len(q) n**2``: not
        offered.)
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).

    Returns
    -------
    ndarray of float64
        The quantiles in the order of ``q`` (a 0-d array for a scalar ``q``), grid points
        ``low + k g``.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``q`` is not a float or a sequence of them; ``bounds`` is not a pair or
        holds a non-real; ``epsilon`` is not a real number (None included); ``max_rows`` is
        not an int; ``privacy_unit`` holds values of mixed types; ``accountant`` is not an
        accountant; ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``q`` is empty, more than 1-d, or has a level outside [0, 1]; ``values`` is not
        one-dimensional or holds a NaN or infinity (the message gives its position, never a
        value); ``bounds`` is None or a string (bounds from the data), has low >= high, or
        is too wide (beyond 2**960) or too narrow; ``epsilon`` is NaN, infinite or <= 0;
        ``method`` is not one of the two names; ``max_rows`` is outside [1, 2**31 - 1], or
        not 1 without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a
        null, or is a pandas Series indexed otherwise than ``values``; ``threads`` is
        outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The quartiles of 1,000 ages (true 37, 56 and 72.25; ``rng=1``: reproducible, for tests
    only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> q = dp.quantiles(ages, [0.25, 0.5, 0.75], bounds=(0, 100), epsilon=1.0,
    ...                  accountant=acct, rng=1)
    >>> print(np.round(q, 2))
    [36.69 55.38 72.35]
    >>> acct.spent
    (1.0, 0.0)
    """
    return _quantiles("quantiles", values, q, bounds, epsilon, privacy_unit, max_rows, method,
                      accountant, rng, threads)


def _quantiles(func: str, values: object, q: object, bounds: object, epsilon: object,
               privacy_unit: object, max_rows: object, method: str,
               accountant: AccountantLike | None, rng: RngLike,
               threads: int | None) -> NDArray[np.float64]:
    qs = check_q(q, func)
    col = column(func, values, bounds, privacy_unit, max_rows)
    eps = _v.check_epsilon(epsilon, func)
    if method not in METHODS:
        raise ValueError(f"The 'method' parameter of {func} must be one of {METHODS}. Got "
                         f"{method!r} instead.")
    g, top = quantile_grid(col.lo, col.hi)
    flat = np.atleast_1d(qs)
    order = np.argsort(flat, kind="stable")
    draws = levels(flat.size) if method == "recursive" else flat.size
    per_draw = down(eps / draws)
    # The zCDP cost stated (the exponential mechanism's epsilon**2 / 8 a draw), when it is a
    # positive float; else none is stated and a zCDP accountant charges epsilon**2 / 2.
    stated = draws * per_draw * per_draw / 8.0
    rel = Release(func, accountant, eps, 0.0, rng, threads, col.x.size,
                  rho=stated if 0.0 < stated < math.inf else None)
    keys = rel.charge_keys()
    x = kept(col, keys, rel.threads)
    s = np.floor((x - col.lo) / g)
    np.clip(s, 0, top, out=s)
    s32 = _native.sort_u32(s.astype(np.uint32))
    if method == "recursive":
        picked = _recursive(keys, rel.threads, s32, top, flat[order], per_draw,
                            col.max_rows)
        ks = np.empty_like(picked)
        ks[order] = picked
    else:
        ks = np.array([_pick(keys, rel.threads, s32, 0, top, float(v), per_draw,
                             col.max_rows) for v in flat], dtype=np.int64)
    out: NDArray[np.float64] = np.minimum(col.lo + ks * g, col.hi).reshape(qs.shape)
    return out


def median(values: object, *, bounds: object, epsilon: object, privacy_unit: object = None,
           max_rows: object = 1, accountant: AccountantLike | None = None,
           rng: RngLike = None, threads: int | None = None) -> float:
    """The differentially private median: :func:`quantiles` at 0.5 (one draw, sensitivity
    ``max_rows / 2`` of the rank utility).

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon : float
        The whole budget (pure DP), > 0.
    privacy_unit, max_rows
        As for :func:`sum`.
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).

    Returns
    -------
    float
        The noisy median: a point of the grid ``low + k g`` over the bounds.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon`` is not a real
        number (None included); ``max_rows`` is not an int; ``privacy_unit`` holds values of
        mixed types; ``accountant`` is not an accountant; ``rng`` is not one of the accepted
        kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; ``epsilon`` is NaN,
        infinite or <= 0; ``max_rows`` is outside [1, 2**31 - 1], or not 1 without
        ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or is a
        pandas Series indexed otherwise than ``values``; ``threads`` is outside [1, 1024];
        or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The median of 1,000 ages (true median 56; ``rng=1``: reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.median(ages, bounds=(0, 100), epsilon=1.0, accountant=acct, rng=1), 2)
    55.38
    """
    return float(_quantiles("median", values, 0.5, bounds, epsilon, privacy_unit, max_rows,
                            "recursive", accountant, rng, threads))
