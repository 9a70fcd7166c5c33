"""Input checks of a statistic of records: bounds, values, person ids, key columns, maxima.

Every check runs before anything is charged or drawn, and describes a bad entry by its kind
and position, never by its value. :func:`column` reads a statistic's column, bounds and
privacy unit in one step (:class:`Column`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import validation as _v

if TYPE_CHECKING:
    from numpy.typing import NDArray


def _leak(func: str, detail: str) -> ValueError:
    return ValueError(
        f"{func} refuses data-dependent bounds: {detail} The bounds set the sensitivity and "
        "are public; bounds computed from the data (its minimum, maximum or quantiles) reveal "
        "it. Pass bounds=(low, high) chosen without looking at the data.")


def check_bounds(bounds: object, func: str, name: str = "bounds") -> tuple[float, float]:
    """Public clamping bounds ``(lo, hi)``: two finite reals with lo < hi."""
    if bounds is None:
        raise _leak(func, f"{name}=None would use the data's minimum and maximum.")
    if isinstance(bounds, str):
        raise _leak(func, f"{name}={bounds!r} chooses bounds from the data.")
    if (not isinstance(bounds, Sequence) and not isinstance(bounds, np.ndarray)) \
            or len(bounds) != 2:
        raise TypeError(f"The {name!r} parameter of {func} must be a pair (low, high) of "
                        f"real numbers. Got {_v.describe(bounds)} instead.")
    lo = _v.check_real(bounds[0], f"{name}[0]", func, low=-math.inf)
    hi = _v.check_real(bounds[1], f"{name}[1]", func, low=-math.inf)
    if not lo < hi:
        raise ValueError(f"The {name!r} parameter of {func} must have low < high. Got "
                         f"{bounds!r} instead.")
    if not math.isfinite(hi - lo) or max(abs(lo), abs(hi)) >= 2.0**960 or \
            (hi - lo) / 2.0 < 2.0**-1000:
        raise ValueError(f"The {name!r} parameter of {func} must be an interval of normal "
                         "floats, neither too wide (|low|, |high| below 2**960) nor too narrow "
                         f"(high - low at least 2**-999), so that sums and noise stay "
                         f"finite floats. Got {bounds!r} instead.")
    return lo, hi


def check_squares(lo: float, hi: float, func: str, name: str = "bounds") -> None:
    """A variance's bounds: the square of their half-width must be a normal float too."""
    half = (hi - lo) / 2.0
    if not (2.0**-500 <= half < 2.0**480):       # its square a normal float, with room
        raise ValueError(f"The {name!r} parameter of {func}: a variance needs the square of "
                         "the bounds' half-width to be a normal float (between 2**-1000 and "
                         f"2**960). Got {(lo, hi)!r} instead.")


def check_values(values: object, func: str, name: str = "values") -> NDArray[np.float64]:
    """A 1-D column of real numbers as float64 (NaN or infinity refused, by position)."""
    arr, _ = _v.check_data(values, name, func)
    if arr.ndim != 1:
        raise ValueError(f"The {name!r} parameter of {func} must be one-dimensional. Got "
                         f"{_v.describe(values)} instead.")
    return np.asarray(arr, dtype=np.float64)


def person_ids(unit: object, n: int, func: str,
               name: str = "privacy_unit") -> NDArray[np.int64]:
    """The privacy unit of each of ``n`` rows as int64 ids: integers as they are, anything
    else (strings, ...) by its code among the distinct values. Nulls and mixed types are
    refused."""
    arr = as_ids(unit, name, func)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"The {name!r} parameter of {func} must be one id per row ({n} "
                         f"rows). Got {_v.describe(unit)} instead.")
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            return _codes(arr, name, func)
        return np.ascontiguousarray(arr, dtype=np.int64)
    if arr.dtype.kind == "b":
        return np.ascontiguousarray(arr, dtype=np.int64)
    return _codes(arr, name, func)


def as_ids(values: object, name: str, func: str) -> NDArray[Any]:
    """A column of ids or keys as a numpy array. A list or tuple is read as objects first
    and refused if its values are of mixed types: numpy would read ``[1, "1"]`` as two
    equal strings, merging two people (or keys)."""
    if isinstance(values, (list, tuple)):
        objects = np.empty(len(values), dtype=object)
        objects[:] = values
        check_keys_column(objects, name, func)
        # numpy would read large ints as floats and drop strings' trailing NULs: ints are
        # kept in the int type that holds them all, anything else as objects.
        if objects.size and all(isinstance(v, (int, np.integer)) and
                                not isinstance(v, (bool, np.bool_)) for v in objects):
            ints = [int(v) for v in objects]
            if -2**63 <= min(ints) and max(ints) < 2**63:
                return np.array(ints, dtype=np.int64)
            if min(ints) >= 0 and max(ints) < 2**64:
                return np.array(ints, dtype=np.uint64)
        return objects
    return _v.as_array(values, name, func, categories=True)


def _codes(arr: NDArray[Any], name: str, func: str) -> NDArray[np.int64]:
    """Codes of the distinct values of a column (nulls and mixed types refused)."""
    check_keys_column(arr, name, func)
    try:
        import pandas as pd
    except ImportError:                                         # pragma: no cover
        _, inverse = np.unique(arr, return_inverse=True)
        return inverse.astype(np.int64)
    codes, _ = pd.factorize(arr, use_na_sentinel=True)
    return np.ascontiguousarray(codes, dtype=np.int64)


def check_keys_column(arr: NDArray[Any], name: str, func: str) -> None:
    """Refuse nulls (None, NaN) and values of mixed types in a column of ids or keys."""
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError(f"The {name!r} parameter of {func} must not contain nulls or "
                             f"infinities. Got {_v.entry_at(~np.isfinite(arr), 'is null')} "
                             "instead.")
        return
    if arr.dtype.kind in "mM":
        if np.isnat(arr).any():
            raise ValueError(f"The {name!r} parameter of {func} must not contain nulls. Got "
                             f"{_v.entry_at(np.isnat(arr), 'is null (NaT)')} instead.")
        return
    if arr.dtype.kind != "O":
        return
    try:
        import pandas as pd
    except ImportError:                                         # pragma: no cover
        nulls = np.array([v is None or (isinstance(v, float) and math.isnan(v))
                          for v in arr], dtype=bool)
        kinds = {type(v) for v in arr}
        mixed = len(kinds) > 1
    else:
        nulls = np.asarray(pd.isna(arr), dtype=bool)            # None, NaN, pd.NA, NaT
        mixed = pd.api.types.infer_dtype(arr, skipna=True).startswith("mixed")
    if nulls.any():
        raise ValueError(f"The {name!r} parameter of {func} must not contain nulls. Got "
                         f"{_v.entry_at(nulls, 'is null')} instead.")
    if mixed:
        raise TypeError(f"The {name!r} parameter of {func} must hold values of one type "
                        "(all strings, or all integers, ...). Got values of mixed types.")


def check_max(value: object, name: str, func: str) -> int:
    """A contribution bound: an int >= 1."""
    return _v.check_positive_int(value, name, func, high=2**31 - 1)


class Column(NamedTuple):
    """A statistic's column checked: its values, public bounds, the person of each row
    (None: each row is a person) and the rows each person keeps."""

    x: NDArray[np.float64]
    lo: float
    hi: float
    person: NDArray[np.int64] | None
    max_rows: int


def column(func: str, values: object, bounds: object, privacy_unit: object,
           max_rows: object) -> Column:
    """The checked column of a statistic of ``values`` (:class:`Column`): values, bounds,
    ``max_rows`` and the privacy unit, refused in that order before anything is charged."""
    x = check_values(values, func)
    lo, hi = check_bounds(bounds, func)
    rows = check_max(max_rows, "max_rows", func)
    if privacy_unit is None:
        if rows != 1:
            raise ValueError(f"The 'max_rows' parameter of {func} bounds the rows of each "
                             "person and needs privacy_unit=; without one each row is a "
                             f"person. Got max_rows={max_rows!r} without a privacy_unit.")
        return Column(x, lo, hi, None, 1)
    check_aligned(values, privacy_unit, "privacy_unit", func)
    return Column(x, lo, hi, person_ids(privacy_unit, x.size, func), rows)


def check_aligned(values: object, other: object, name: str, func: str) -> None:
    """Refuse two pandas Series whose indexes differ: they are paired by position here, and
    a sorted or filtered Series would pair its values with other people's ids."""
    index, other_index = getattr(values, "index", None), getattr(other, "index", None)
    if index is not None and other_index is not None and hasattr(index, "equals") and \
            not index.equals(other_index):
        raise ValueError(f"The {name!r} parameter of {func} is a pandas Series whose index "
                         "differs from the values': rows are paired by position, not by "
                         "index. Align them first (e.g. reindex, or pass .to_numpy() of "
                         "both in one order).")
