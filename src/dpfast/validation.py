"""Argument checks shared by every public function.

Each check runs before anything is charged to an accountant or drawn from a generator, and
its message names the function, the parameter, the rule and the value received, e.g.
``The 'epsilon' parameter of laplace_mechanism must be a float in (0, inf). Got -1.0 instead.``
Non-numbers raise ``TypeError``; numbers outside the allowed set (including NaN, infinities
and ``-0.0`` where a positive value is needed) raise ``ValueError``.
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np

from . import _native

if TYPE_CHECKING:
    from collections.abc import Container, Hashable, Sequence
    from typing import Any, TypeVar

    from numpy.typing import NDArray

    _E = TypeVar("_E", bound=Exception)

__all__ = [
    "check_real",
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_scale",
    "check_size",
    "check_threads",
    "check_bool",
    "check_mechanism_scale",
    "check_data",
    "as_array",
    "describe",
]


def _fail(exc: type[_E], name: str, func: str, rule: str, value: object) -> _E:
    return exc(f"The {name!r} parameter of {func} must be {rule}. Got {value!r} instead.")


def describe(value: object) -> str:
    """A data argument in an error message: an array or sequence by its dtype and shape
    (its repr would print the records, or a truncated dump of them), anything else by its
    repr."""
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} items"
    return repr(value)


def as_array(value: object, name: str, func: str) -> NDArray[Any]:
    """A data argument as a numpy array (no copy of an array), refusing what numpy would
    silently misread: a masked array (``np.asarray`` drops the mask and every value would
    be released) and ragged nested lists (error naming the argument, not numpy's)."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"The {name!r} parameter of {func} must not be a masked array: its "
                        "mask would be ignored and the masked values released. Drop or fill "
                        "the masked entries first (value.compressed() or value.filled(x)). "
                        f"Got {describe(value)} instead.")
    try:
        return np.asarray(value)
    except ValueError:
        # numpy: "setting an array element with a sequence ... inhomogeneous shape"
        raise ValueError(f"The {name!r} parameter of {func} must be a rectangular array: "
                         "nested sequences of different lengths (ragged) have no shape. "
                         f"Got {describe(value)} instead.") from None
    except (TypeError, OverflowError):
        raise TypeError(f"The {name!r} parameter of {func} must be numeric (integer or real "
                        f"floating) data. Got {describe(value)} instead.") from None


def check_real(value: object, name: str, func: str, *, low: float = 0.0,
               high: float = math.inf, low_open: bool = True,
               high_open: bool = True) -> float:
    """Return ``value`` as a float after checking it is a real number in the interval.

    The interval is (low, high) by default; ``low_open=False`` makes it closed at ``low``.
    NaN and infinities are always rejected, and so is ``-0.0`` when 0 is excluded.
    """
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    rule = f"a float in {lo}{low:g}, {high:g}{hi}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise _fail(TypeError, name, func, rule, value)
    try:
        x = float(value)
    except OverflowError:           # an int beyond the float range
        raise _fail(ValueError, name, func, rule, value) from None
    if not math.isfinite(x):
        raise _fail(ValueError, name, func, rule, value)
    if low_open and x <= low:       # -0.0 <= 0.0 too: no negative zero epsilon
        raise _fail(ValueError, name, func, rule, value)
    if not low_open and x < low:
        raise _fail(ValueError, name, func, rule, value)
    if (high_open and x >= high) or (not high_open and x > high):
        raise _fail(ValueError, name, func, rule, value)
    return x + 0.0                  # -0.0 (allowed only in a closed interval at 0) -> 0.0


def _positive(value: object, name: str, func: str) -> float:
    """check_real(value, name, func) for a finite value > 0, with the common cases (a float,
    a small int) decided by one comparison: these checks are on every release's path."""
    if type(value) is float:
        if 0.0 < value < math.inf:              # False for NaN
            return value
    elif type(value) is int and 0 < value < 2**53:
        return float(value)
    return check_real(value, name, func)


def check_epsilon(epsilon: object, func: str) -> float:
    """Privacy parameter epsilon: a finite float > 0."""
    if type(epsilon) is float and 0.0 < epsilon < math.inf:     # _positive's common case
        return epsilon
    return _positive(epsilon, "epsilon", func)


def check_delta(delta: object, func: str) -> float:
    """Privacy parameter delta: a float in [0, 1)."""
    return check_real(delta, "delta", func, low=0.0, high=1.0, low_open=False)


def check_sensitivity(sensitivity: object, func: str) -> float:
    """Sensitivity: a finite float > 0 (a zero-sensitivity query needs no noise)."""
    if type(sensitivity) is float and 0.0 < sensitivity < math.inf:   # as check_epsilon
        return sensitivity
    return _positive(sensitivity, "sensitivity", func)


# Scales keep the grid step g ~ scale * 2^-24 and 1/g normal doubles.
MIN_SCALE = 2.0**-900
MAX_SCALE = 2.0**1000


def check_scale(scale: object, func: str, *, high: float = MAX_SCALE) -> float:
    """Noise scale: a finite float in [2^-900, high]."""
    rule = f"a float in [2^-900, {high:g}]"
    x = check_real(scale, "scale", func, high=math.inf)
    if not MIN_SCALE <= x <= high:
        raise _fail(ValueError, "scale", func, rule, scale)
    return x


def check_mechanism_scale(sensitivity: float, epsilon: float, func: str, *,
                          low: float = MIN_SCALE, high: float = MAX_SCALE) -> float:
    """The noise scale sensitivity/epsilon of a mechanism, checked to be in [low, high]
    (default [2^-900, 2^1000]); the error names the parameters the caller actually passed."""
    scale = sensitivity / epsilon
    if not low <= scale <= high:
        raise ValueError(
            f"The 'epsilon' and 'sensitivity' parameters of {func} must give a noise scale "
            f"sensitivity/epsilon in [{low:g}, {high:g}]. Got sensitivity={sensitivity!r}, "
            f"epsilon={epsilon!r} (scale {scale:g}) instead.")
    return scale


def check_histogram(counts: object, name: str, func: str) -> NDArray[np.int64] | NDArray[np.float64]:
    """Counts of a histogram (any shape): numeric and finite (:func:`check_data`), and
    non-negative."""
    data, _ = check_data(counts, name, func)
    if data.size and value_range(data)[0] < 0:
        raise ValueError(f"The {name!r} parameter of {func} must be non-negative. Got an "
                         f"entry {data.min().item()!r} instead.")
    return data


def check_noise_scale(scale: float, names: str, func: str, *, low: float = MIN_SCALE,
                      high: float = MAX_SCALE) -> float:
    """A noise scale derived from several parameters (``names``, as the error should name
    them), checked to be in [low, high]."""
    if not low <= scale <= high:
        raise ValueError(f"The {names} parameters of {func} must give noise scales in "
                         f"[{low:g}, {high:g}]. Got a scale of {scale:g} instead.")
    return scale


def check_shares(value: object, parts: int, name: str, func: str) -> tuple[float, ...]:
    """``parts`` positive fractions (of a budget) summing to 1: a sequence (TypeError
    otherwise, or for an entry that is not a real number), of that length, each in (0, 1],
    summing to 1 within 1e-9 (ValueError otherwise)."""
    rule = f"a sequence of {parts} positive shares summing to 1"
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") \
            or not hasattr(value, "__iter__"):
        raise TypeError(f"The {name!r} parameter of {func} must be {rule}. Got "
                        f"{describe(value)} instead.")
    shares = tuple(check_real(s, name, func, high=1.0, high_open=False) for s in value)
    if len(shares) != parts or abs(math.fsum(shares) - 1.0) > 1e-9:
        raise ValueError(f"The {name!r} parameter of {func} must be {rule}. Got "
                         f"{value!r} instead.")
    return shares


#: Largest number of elements an output may have (an int64/float64 array of 2^56 elements
#: would already be 512 PiB).
MAX_SIZE = 2**56


def check_size(size: object, func: str) -> tuple[int, ...] | None:
    """``None`` or a non-negative int or tuple of ints with at most MAX_SIZE elements in all;
    returns ``None`` or a shape tuple."""
    if size is None:
        return None
    rule = "None, a non-negative int or a tuple of non-negative ints"
    dims = size if isinstance(size, (tuple, list)) else (size,)
    shape: list[int] = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral):
            raise _fail(TypeError, "size", func, rule, size)
        if d < 0:
            raise _fail(ValueError, "size", func, rule, size)
        shape.append(int(d))
    if len(shape) > 32 or math.prod(shape) > MAX_SIZE:
        raise _fail(ValueError, "size", func, "a shape of at most 32 dimensions and 2^56 "
                    "elements", size)
    return tuple(shape)


MAX_THREADS = 1024


def check_positive_int(value: object, name: str, func: str, high: int = 2**62) -> int:
    """An int in [1, high] (numpy ints too; bools refused): TypeError for another type,
    ValueError outside the range."""
    rule = f"an int in [1, {high}]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise _fail(TypeError, name, func, rule, value)
    if not 1 <= int(value) <= high:
        raise _fail(ValueError, name, func, rule, value)
    return int(value)


def check_threads(threads: int | None, func: str) -> int | None:
    """``None`` or an int in [1, MAX_THREADS]."""
    if threads is None:
        return None
    rule = f"None or an int in [1, {MAX_THREADS}]"
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral):
        raise _fail(TypeError, "threads", func, rule, threads)
    if not 1 <= threads <= MAX_THREADS:
        raise _fail(ValueError, "threads", func, rule, threads)
    return int(threads)


def check_bool(value: object, name: str, func: str) -> bool:
    """A bool (numpy bools included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise _fail(TypeError, name, func, "a bool", value)
    return bool(value)


def check_data(value: object, name: str,
               func: str) -> tuple[NDArray[np.int64] | NDArray[np.float64], bool]:
    """Numeric data as a C-contiguous int64 or float64 array, and whether it is integer.

    Booleans, complex numbers, strings, objects and dates are rejected with ``TypeError``;
    NaN or infinite entries, and integers outside int64, with ``ValueError`` naming the
    first offending entry.
    """
    rule = "numeric (integer or real floating) data"
    arr = as_array(value, name, func)
    kind = arr.dtype.kind
    if kind == "O" and arr.size and all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
            for v in arr.flat):
        # Python ints in an object array: fine if they fit int64, else name one that does not.
        bad = next((v for v in arr.flat if not -2**63 <= v < 2**63), None)
        if bad is None:
            return np.asarray(arr, dtype=np.int64, order="C"), True
        raise ValueError(f"The {name!r} parameter of {func} must fit in int64. "
                         f"Got an entry {bad!r} instead.")
    if kind in "iu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            bad = arr.flat[int(np.argmax(arr))]
            raise ValueError(f"The {name!r} parameter of {func} must fit in int64. "
                             f"Got an entry {bad!r} instead.")
        return np.asarray(arr, dtype=np.int64, order="C"), True
    if kind == "f":
        arr = np.asarray(arr, dtype=np.float64, order="C")
        if not _all_finite(arr):
            finite = np.isfinite(arr)
            idx = tuple(int(i) for i in np.unravel_index(int(np.argmin(finite)), arr.shape))
            raise ValueError(f"The {name!r} parameter of {func} must not contain NaN or "
                             f"infinity. Got {arr[idx]!r} at index {idx} instead.")
        return arr, False
    raise TypeError(f"The {name!r} parameter of {func} must be {rule}, not dtype "
                    f"{arr.dtype}. Got {describe(value)} instead.")


def value_range(arr: NDArray[Any]) -> tuple[int, int] | tuple[float, float]:
    """(smallest, largest) element of a non-empty array as Python numbers, both NaN if a float
    array holds a NaN: one compiled pass, no temporary array, for the common dtypes and
    layouts (numpy's min and max otherwise)."""
    bounds = _native.value_range(arr)
    return bounds if bounds is not None else (arr.min().item(), arr.max().item())


def _all_finite(arr: NDArray[Any]) -> bool:
    """Whether a float array has no NaN or infinity."""
    if not arr.size:
        return True
    lo, hi = value_range(arr)
    return math.isfinite(lo) and math.isfinite(hi)


def check_records(value: object, name: str, func: str, flatten: bool = True) -> NDArray[Any]:
    """Records for counting: a C-contiguous array in native byte order of a dtype the
    counting kernels read directly (floats of 32 or 64 bits, integers of 8 to 64 bits but
    uint64), so that counting makes no copy of the records; others become int64 or float64.
    Flattened unless told otherwise. NaN or infinite entries raise ValueError; one min/max
    scan finds them without a temporary array."""
    data, _ = _numeric_array(value, name, func, keep=_native.RECORD_DTYPES)
    flat = data.reshape(-1) if flatten else data
    if flat.dtype.kind == "f" and not _all_finite(flat):
        bad = flat.reshape(-1)[np.flatnonzero(~np.isfinite(flat.reshape(-1)))[0]]
        raise ValueError(f"The {name!r} parameter of {func} must not contain NaN or "
                         f"infinity. Got {bad!r} instead.")
    return flat


def _numeric_array(value: object, name: str, func: str,
                   keep: Container[np.dtype[Any]]) -> tuple[NDArray[Any], bool]:
    """C-contiguous array of one of the dtypes in `keep` (else int64 for integers, float64
    for floats) and whether it is integer; TypeError for non-numeric data."""
    arr = as_array(value, name, func)
    kind = arr.dtype.kind
    native = arr.dtype.newbyteorder("=")
    if native in keep:
        return np.asarray(arr, dtype=native, order="C"), kind in "iu"
    if kind in "iu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise ValueError(f"The {name!r} parameter of {func} must fit in int64. "
                             f"Got an entry {arr.max()!r} instead.")
        return np.asarray(arr, dtype=np.int64, order="C"), True
    if kind == "f":
        return np.asarray(arr, dtype=np.float64, order="C"), False
    return check_data(value, name, func)      # raises the documented error for this input


def _small_ints(categories: Sequence[Hashable]) -> list[int] | None:
    """The categories as ints if all are integers spanning fewer than 2**16 values (read
    through a lookup table), else None."""
    if not categories or not all(isinstance(c, numbers.Integral)
                                 and not isinstance(c, (bool, np.bool_)) for c in categories):
        return None
    ints = [int(c) for c in categories]  # type: ignore[call-overload]
    return ints if max(ints) - min(ints) < 2**16 else None


def _int_codes(values: NDArray[Any], ints: list[int]) -> NDArray[np.int64]:
    """Codes of integer values in integer categories by a lookup table: one pass, no
    sorting or hashing; -1 outside."""
    lo = min(ints)
    table = np.full(max(ints) - lo + 2, -1, dtype=np.int64)     # the last entry: outside
    table[np.asarray(ints, dtype=np.int64) - lo] = np.arange(len(ints))
    index = np.subtract(values, lo, dtype=np.int64)
    np.clip(index, -1, table.size - 1, out=index)        # below: -1, above: the last entry
    codes: NDArray[np.int64] = table[index]
    return codes


def category_codes(values: Any, categories: Sequence[Hashable], func: str) -> NDArray[np.int64]:
    """int64 code per value: its index in `categories`, or -1 for anything else."""
    index = {c: i for i, c in enumerate(categories)}
    if len(index) != len(categories):
        raise ValueError(f"The 'categories' parameter of {func} must not repeat a category. "
                         f"Got {list(categories)!r} instead.")
    cat = getattr(values, "cat", None)           # a pandas Series of category dtype
    if cat is not None:
        values = values.array
    if hasattr(values, "codes") and hasattr(values, "categories"):     # pandas Categorical
        lut = np.array([index.get(c, -1) for c in values.categories] + [-1], dtype=np.int64)
        codes = np.asarray(values.codes, dtype=np.int64)
        return lut[codes]                        # code -1 (missing) reads the trailing -1
    arr = as_array(values, "values", func).reshape(-1)
    ints = _small_ints(categories) if arr.dtype.kind in "iu" else None
    if ints is not None:
        return _int_codes(arr, ints)
    if arr.dtype.kind == "O":
        # Python objects (possibly None and strings mixed) cannot be sorted: look each up.
        lookup = np.frompyfunc(lambda v: index.get(v, -1), 1, 1)
        return lookup(arr).astype(np.int64) if arr.size else np.empty(0, dtype=np.int64)
    uniq, inverse = np.unique(arr, return_inverse=True)
    lut = np.array([index.get(u.item() if hasattr(u, "item") else u, -1) for u in uniq],
                   dtype=np.int64)
    return lut[inverse.reshape(-1)] if uniq.size else np.empty(0, dtype=np.int64)
