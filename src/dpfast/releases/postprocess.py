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
from .simplex import (check_floor_sum, consistent_int, exact_sum, largest_remainder,
                      project_flat, unreachable_total)

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
    flat = arr.reshape(-1).astype(np.float64, copy=False)   # project_flat leaves it alone
    return project_flat(flat, total).reshape(arr.shape)


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
        return largest_remainder(flat, total, func, repair=False).reshape(arr.shape)
    # Integers are their own floors (exactly, even beyond 2^53) with equal fractional parts
    # of zero, so the leftover units go to the first entries.
    check_floor_sum(float(np.sum(flat, dtype=np.float64)), func)
    out: NDArray[np.int64] = flat.copy()
    r = total - int(out.sum())
    if not 0 <= r <= out.size:
        raise unreachable_total(total, total - r, out.size, func)
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
            s = exact_sum(arr.reshape(-1), top * arr.size < 2**63)
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
        out = consistent_int(flat, total)
    else:
        x = project_flat(flat.astype(np.float64, copy=False), float(total))
        out = largest_remainder(x, total, func, repair=True)
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
