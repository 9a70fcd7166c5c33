"""Argument checks shared by every public function.

Each check runs before anything is charged to an accountant or drawn from a generator, and
its message names the function, the parameter, the rule and the value received, e.g.
``The 'epsilon' parameter of laplace_mechanism must be a float in (0, inf). Got -1.0 instead.``
Non-numbers raise ``TypeError``; numbers outside the allowed set (including NaN, infinities
and ``-0.0`` where a positive value is needed) raise ``ValueError``.
"""
import math
import numbers

import numpy as np

__all__ = [
    "check_real",
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_scale",
    "check_size",
    "check_threads",
    "check_data",
]


def _fail(exc, name, func, rule, value):
    return exc(f"The {name!r} parameter of {func} must be {rule}. Got {value!r} instead.")


def check_real(value, name, func, *, low=0.0, high=math.inf, low_open=True, high_open=True):
    """Return ``value`` as a float after checking it is a real number in the interval.

    The interval is (low, high) by default; ``low_open=False`` makes it closed at ``low``.
    NaN and infinities are always rejected, and so is ``-0.0`` when 0 is excluded.
    """
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    rule = f"a float in {lo}{low:g}, {high:g}{hi}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise _fail(TypeError, name, func, rule, value)
    x = float(value)
    if not math.isfinite(x):
        raise _fail(ValueError, name, func, rule, value)
    if low_open and (x <= low or (x == 0.0 and low == 0.0 and math.copysign(1.0, x) < 0)):
        raise _fail(ValueError, name, func, rule, value)
    if not low_open and (x < low or (x == 0.0 and low == 0.0 and math.copysign(1.0, x) < 0)):
        raise _fail(ValueError, name, func, rule, value)
    if (high_open and x >= high) or (not high_open and x > high):
        raise _fail(ValueError, name, func, rule, value)
    return x


def check_epsilon(epsilon, func):
    """Privacy parameter epsilon: a finite float > 0."""
    return check_real(epsilon, "epsilon", func)


def check_delta(delta, func):
    """Privacy parameter delta: a float in [0, 1)."""
    return check_real(delta, "delta", func, low=0.0, high=1.0, low_open=False)


def check_sensitivity(sensitivity, func):
    """Sensitivity: a finite float > 0 (a zero-sensitivity query needs no noise)."""
    return check_real(sensitivity, "sensitivity", func)


def check_scale(scale, func, *, high=2.0**1000):
    """Noise scale: a finite float in (2^-1000, high)."""
    x = check_real(scale, "scale", func, high=high)
    if x < 2.0**-1000:
        raise _fail(ValueError, "scale", func, f"a float in [2^-1000, {high:g})", scale)
    return x


def check_size(size, func):
    """``None`` or a non-negative int or tuple of ints; returns ``None`` or a shape tuple."""
    if size is None:
        return None
    rule = "None, a non-negative int or a tuple of non-negative ints"
    dims = size if isinstance(size, (tuple, list)) else (size,)
    shape = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral):
            raise _fail(TypeError, "size", func, rule, size)
        if d < 0:
            raise _fail(ValueError, "size", func, rule, size)
        shape.append(int(d))
    return tuple(shape)


def check_threads(threads, func):
    """``None`` or an int >= 1."""
    if threads is None:
        return None
    rule = "None or an int >= 1"
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral):
        raise _fail(TypeError, "threads", func, rule, threads)
    if threads < 1:
        raise _fail(ValueError, "threads", func, rule, threads)
    return int(threads)


def check_data(value, name, func):
    """Numeric data as a C-contiguous int64 or float64 array, and whether it is integer.

    Booleans, complex numbers, strings, objects and dates are rejected with ``TypeError``;
    NaN or infinite entries, and integers outside int64, with ``ValueError`` naming the
    first offending entry.
    """
    rule = "numeric (integer or real floating) data"
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        raise _fail(TypeError, name, func, rule, value) from None
    kind = arr.dtype.kind
    if kind in "iu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            bad = arr.flat[int(np.argmax(arr))]
            raise ValueError(f"The {name!r} parameter of {func} must fit in int64. "
                             f"Got an entry {bad!r} instead.")
        return np.asarray(arr, dtype=np.int64, order="C"), True
    if kind == "f":
        arr = np.asarray(arr, dtype=np.float64, order="C")
        finite = np.isfinite(arr)
        if not finite.all():
            idx = np.unravel_index(int(np.argmin(finite)), arr.shape) if arr.ndim else ()
            raise ValueError(f"The {name!r} parameter of {func} must not contain NaN or "
                             f"infinity. Got {arr[idx]!r} at index {idx} instead.")
        return arr, False
    if kind == "O" and arr.ndim == 0 and isinstance(value, numbers.Integral) \
            and not isinstance(value, bool):
        raise ValueError(f"The {name!r} parameter of {func} must fit in int64. "
                         f"Got {value!r} instead.")
    raise _fail(TypeError, name, func, f"{rule}, not dtype {arr.dtype}", value)
