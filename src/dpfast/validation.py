"""Argument checks shared by every public function.

Each check runs before anything is charged to an accountant or drawn from a generator, and
its message names the function, the parameter and the rule, e.g.
``The 'epsilon' parameter of laplace_mechanism must be a float in (0, inf). Got -1.0 instead.``
Non-numbers raise ``TypeError``; numbers outside the allowed set (including NaN, infinities
and ``-0.0`` where a positive value is needed) raise ``ValueError``.

**Errors describe data by kind and position, never by value.** Messages end up in logs,
tracebacks and bug reports that are not protected by the privacy guarantee, so a message may
show a *public parameter* as received (epsilon, delta, sensitivity, scale, bins, range, k,
rounds, threads, a method name, a shape or a size), but a *data argument* — records, counts,
utilities, scores, values, labels or categories from the data, and anything derived from them
(a sum, a maximum, the offending entry) — only by what it is and where: "an array of dtype
float64 and shape (3, 2)" (:func:`describe`), "an entry at index (1, 0) is NaN"
(:func:`entry_at`). A seed is a key and is described, never shown. Use :func:`fail_data`
for a data argument where :func:`fail` would print a parameter.
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np

from . import _native
from .messages import (describe, entry_at, fail, fail_data, first_index, position,
                       top_module)

if TYPE_CHECKING:
    from collections.abc import Container, Hashable, Sequence
    from typing import Any

    from numpy.typing import NDArray

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
    "position",
    "entry_at",
    "fail_data",
    "fail",
]


def _nonfinite(arr: NDArray[Any]) -> str:
    """Where the first NaN or infinity of a float array is, and which it is (no value)."""
    bad = ~np.isfinite(arr)
    idx = first_index(bad) if arr.ndim else ()
    return entry_at(bad, "is NaN" if np.isnan(arr[idx]) else "is infinite")


class _Holder:
    """Owner of foreign memory (an Arrow buffer, a bytes object) seen by numpy through
    ``__array_interface__``, with ``base = None``: the ``.base`` chain of an array from
    :func:`as_array` ends here, at an object that has ``.base``, like numpy's own."""

    __slots__ = ("__array_interface__", "base", "_keep")

    def __init__(self, arr: NDArray[Any]) -> None:
        self.__array_interface__ = arr.__array_interface__
        self.base = None
        self._keep = arr            # keeps the memory alive as long as the array lives


def _own_base(arr: NDArray[Any]) -> NDArray[Any]:
    """``arr``, or a view of the same memory whose ``.base`` chain ends in ``None`` when
    numpy's ends at a foreign object without ``.base`` (pyarrow, bytes): code that walks the
    chain (looking for a memory map) may then rely on ``.base``."""
    b: Any = arr.base
    while isinstance(b, np.ndarray):
        if isinstance(b, np.memmap):
            return arr
        b = b.base
    if b is None or hasattr(b, "base"):
        return arr
    return np.asarray(_Holder(arr))


def _from_arrow(value: Any, name: str, func: str, categories: bool) -> NDArray[Any]:
    """A pyarrow Array or ChunkedArray as numpy (numeric: no copy, read-only), or, for
    categories, strings as an object array. Nulls are refused
    naming their position; other types are refused naming the argument."""
    import pyarrow as pa

    if value.null_count:
        where = np.flatnonzero(np.asarray(value.is_null()))[0]
        raise ValueError(f"The {name!r} parameter of {func} must not contain nulls. Got "
                         f"{describe(value)} with a null at {position(int(where))} instead.")
    t = value.type
    chunks = value.chunks if isinstance(value, pa.ChunkedArray) else [value]
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        if len(chunks) == 1:
            arr = chunks[0].to_numpy(zero_copy_only=True)
        elif not chunks:
            arr = np.empty(0, dtype=t.to_pandas_dtype())
        else:
            arr = np.concatenate([c.to_numpy(zero_copy_only=True) for c in chunks])
            arr.flags.writeable = False
        return _own_base(arr)
    if pa.types.is_boolean(t):      # bit-packed in Arrow: numpy needs a byte per value
        arr = np.concatenate([c.to_numpy(zero_copy_only=False) for c in chunks]) \
            if chunks else np.empty(0, dtype=bool)
        arr.flags.writeable = False
        return arr
    if categories and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return np.asarray(value.to_pylist(), dtype=object)
    rule = ("numeric, boolean, string or dictionary-encoded values" if categories
            else "numeric (integer or real floating) or boolean data")
    raise TypeError(f"The {name!r} parameter of {func} must be {rule}. Got "
                    f"{describe(value)} instead.")


def is_arrow(value: object) -> bool:
    """Whether ``value`` is a pyarrow Array or ChunkedArray (pyarrow is not imported)."""
    return top_module(value) == "pyarrow" and hasattr(value, "null_count") \
        and hasattr(value, "type")


def as_array(value: object, name: str, func: str, *, categories: bool = False) -> NDArray[Any]:
    """A data argument as a numpy array (no copy of an array), refusing what numpy would
    silently misread: a masked array (``np.asarray`` drops the mask and every value would
    be released) and ragged nested lists (error naming the argument, not numpy's).

    A pyarrow Array or ChunkedArray is read without a copy when numeric (read-only; one
    chunk), booleans unpacked; nulls raise ValueError naming the first one's position and
    other types TypeError, except that strings and dictionary-encoded values are accepted
    where ``categories`` is true. The result's ``.base`` chain ends in ``None`` or a numpy
    memory map, never at an object without ``.base``.
    """
    if type(value) is np.ndarray:
        return value if value.base is None else _own_base(value)
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"The {name!r} parameter of {func} must not be a masked array: its "
                        "mask would be ignored and the masked values released. Drop or fill "
                        "the masked entries first (value.compressed() or value.filled(x)). "
                        f"Got {describe(value)} instead.")
    if is_arrow(value):
        return _from_arrow(value, name, func, categories)
    try:
        arr = np.asarray(value)
    except ValueError:
        # numpy: "setting an array element with a sequence ... inhomogeneous shape"
        raise ValueError(f"The {name!r} parameter of {func} must be a rectangular array: "
                         "nested sequences of different lengths (ragged) have no shape. "
                         f"Got {describe(value)} instead.") from None
    except (TypeError, OverflowError):
        raise TypeError(f"The {name!r} parameter of {func} must be numeric (integer or real "
                        f"floating) data. Got {describe(value)} instead.") from None
    return arr if arr.base is None else _own_base(arr)


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
        raise fail(TypeError, name, func, rule, value)
    try:
        x = float(value)
    except OverflowError:           # an int beyond the float range
        raise fail(ValueError, name, func, rule, value) from None
    if not math.isfinite(x):
        raise fail(ValueError, name, func, rule, value)
    if low_open and x <= low:       # -0.0 <= 0.0 too: no negative zero epsilon
        raise fail(ValueError, name, func, rule, value)
    if not low_open and x < low:
        raise fail(ValueError, name, func, rule, value)
    if (high_open and x >= high) or (not high_open and x > high):
        raise fail(ValueError, name, func, rule, value)
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
        raise fail(ValueError, "scale", func, rule, scale)
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
        raise ValueError(f"The {name!r} parameter of {func} must be non-negative. Got "
                         f"{entry_at(data < 0, 'is negative')} instead.")
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
            raise fail(TypeError, "size", func, rule, size)
        if d < 0:
            raise fail(ValueError, "size", func, rule, size)
        shape.append(int(d))
    if len(shape) > 32 or math.prod(shape) > MAX_SIZE:
        raise fail(ValueError, "size", func, "a shape of at most 32 dimensions and 2^56 "
                    "elements", size)
    return tuple(shape)


MAX_THREADS = 1024


def check_positive_int(value: object, name: str, func: str, high: int = 2**62) -> int:
    """An int in [1, high] (numpy ints too; bools refused): TypeError for another type,
    ValueError outside the range."""
    rule = f"an int in [1, {high}]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise fail(TypeError, name, func, rule, value)
    if not 1 <= int(value) <= high:
        raise fail(ValueError, name, func, rule, value)
    return int(value)


def check_threads(threads: int | None, func: str) -> int | None:
    """``None`` or an int in [1, MAX_THREADS]."""
    if threads is None:
        return None
    rule = f"None or an int in [1, {MAX_THREADS}]"
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral):
        raise fail(TypeError, "threads", func, rule, threads)
    if not 1 <= threads <= MAX_THREADS:
        raise fail(ValueError, "threads", func, rule, threads)
    return int(threads)


def check_bool(value: object, name: str, func: str) -> bool:
    """A bool (numpy bools included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise fail(TypeError, name, func, "a bool", value)
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
        bad = next((i for i, v in enumerate(arr.flat) if not -2**63 <= v < 2**63), None)
        if bad is None:
            return np.asarray(arr, dtype=np.int64, order="C"), True
        mask = np.zeros(arr.shape, dtype=bool)
        mask.flat[bad] = True
        raise ValueError(f"The {name!r} parameter of {func} must fit in int64. "
                         f"Got {entry_at(mask, 'is outside int64')} instead.")
    if kind in "iu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise ValueError(f"The {name!r} parameter of {func} must fit in int64. Got "
                             f"{entry_at(arr > np.iinfo(np.int64).max, 'is outside int64')} "
                             "instead.")
        return np.asarray(arr, dtype=np.int64, order="C"), True
    if kind == "f":
        arr = np.asarray(arr, dtype=np.float64, order="C")
        if not _all_finite(arr):
            raise ValueError(f"The {name!r} parameter of {func} must not contain NaN or "
                             f"infinity. Got {_nonfinite(arr)} instead.")
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
        raise ValueError(f"The {name!r} parameter of {func} must not contain NaN or "
                         f"infinity. Got {_nonfinite(flat)} instead.")
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
            raise ValueError(f"The {name!r} parameter of {func} must fit in int64. Got "
                             f"{entry_at(arr > np.iinfo(np.int64).max, 'is outside int64')} "
                             "instead.")
        return np.asarray(arr, dtype=np.int64, order="C"), True
    if kind == "f":
        return np.asarray(arr, dtype=np.float64, order="C"), False
    return check_data(value, name, func)      # raises the documented error for this input
