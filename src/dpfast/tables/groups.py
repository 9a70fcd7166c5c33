"""Group-by keys as codes: each row of a key column as its group's place among the sorted
public keys, or among the column's own distinct keys (:func:`group_codes`).

Nulls, mixed types and keys of another kind than the column's are refused, by position,
never by value.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import records
from .. import validation as _v

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["CODES_BLOCK", "GroupCodes", "group_codes"]


#: Rows coded at a time by the dense integer path of :func:`group_codes` (its temporaries
#: stay a block's).
CODES_BLOCK = 1 << 24


class GroupCodes(NamedTuple):
    """Each row's group (its key's place among ``values``, sorted; -1: not a public key)."""

    code: NDArray[np.int64]
    values: NDArray[Any]
    public: bool


def group_codes(col: Any, keys: object, func: str) -> GroupCodes:
    """Each row of the key column ``col`` (a group-by's 'by') as its group's place among the
    sorted public ``keys`` (-1: not a public key), or, without keys, among the column's own
    distinct keys (private keys, sorted). Nulls, mixed types and keys of another kind than
    the column's are refused."""
    arr = records.as_ids(col, "by", func)
    if arr.ndim != 1:
        raise ValueError(f"The 'by' column of {func} must be one-dimensional.")
    records.check_keys_column(arr, "by", func)
    import pandas as pd
    if keys is not None:
        if isinstance(keys, (str, bytes)) or not isinstance(keys, (Sequence, np.ndarray)):
            raise TypeError(f"The 'keys' parameter of {func} must be a sequence of public "
                            f"keys. Got {_v.describe(keys)} instead.")
        values = records.as_ids(list(keys) if not isinstance(keys, np.ndarray) else keys,
                                "keys", func)
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"The 'keys' parameter of {func} must be a non-empty sequence "
                             "of public keys.")
        records.check_keys_column(values, "keys", func)
        index = pd.Index(values)
        if not index.is_unique:
            raise ValueError(f"The 'keys' parameter of {func} must not repeat a key.")
        try:
            order = np.argsort(values, kind="stable")
        except TypeError:
            raise TypeError(f"The 'keys' parameter of {func} must hold keys of one type.") \
                from None
        values = values[order]
        return GroupCodes(_public_codes(values, arr, func), values, True)
    if arr.dtype.kind in "iu" and arr.size:
        dense = _dense_int_codes(arr)
        if dense is not None:
            return dense
    codes, uniques = pd.factorize(arr, use_na_sentinel=True)
    if codes.size and codes.min() < 0:          # a null the checks above did not know
        raise ValueError(f"The 'by' column of {func} must not contain nulls. Got "
                         f"{_v.entry_at(codes < 0, 'is null')} instead.")
    uniques = np.asarray(uniques)
    try:
        order = np.argsort(uniques, kind="stable")
    except TypeError:
        raise TypeError(f"The 'by' column of {func} must hold keys of one type.") from None
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return GroupCodes(rank[codes], uniques[order], False)


def _family(arr: NDArray[Any]) -> str:
    """What kind of keys a column holds: int, float, bool, time, string, bytes or other."""
    kind = arr.dtype.kind
    if kind in "iu":
        return "int"
    simple = {"f": "float", "b": "bool", "m": "time", "M": "time", "U": "string",
              "S": "bytes"}
    if kind in simple:
        return simple[kind]
    import pandas as pd
    inferred = pd.api.types.infer_dtype(arr, skipna=True)
    return {"integer": "int", "floating": "float", "boolean": "bool", "string": "string",
            "bytes": "bytes", "datetime64": "time", "datetime": "time",
            "timedelta64": "time", "timedelta": "time"}.get(inferred, "other")


def _public_codes(keys: NDArray[Any], arr: NDArray[Any], func: str) -> NDArray[np.int64]:
    """Each row's place among the sorted public ``keys`` (-1: not a public key). Keys of
    another kind than the column's are refused (they would never match, or match after a
    conversion: 2**53 + 1 as a float is 2**53); integer keys an integer column's dtype
    cannot hold match no row."""
    import pandas as pd
    have, want = _family(keys), _family(arr) if arr.size else _family(keys)
    if have == "int" and want == "float":
        if any(float(k) != int(k) for k in keys.tolist()):
            raise TypeError(f"The 'keys' parameter of {func}: an integer key is not exactly a "
                            "float, as the keys of the 'by' column are.")
        keys = keys.astype(np.float64)
    elif have != want:
        raise TypeError(f"The 'keys' parameter of {func} must hold keys of the 'by' column's "
                        f"kind ({want}). Got keys of another kind ({have}).")
    elif have == "int" and arr.dtype.kind in "iu":
        info = np.iinfo(arr.dtype)
        fits = np.array([info.min <= int(k) <= info.max for k in keys.tolist()], dtype=bool)
        place = np.flatnonzero(fits)
        if place.size == 0:                     # no public key can be in this column
            return np.full(arr.size, -1, dtype=np.int64)
        found = pd.Index(keys[fits].astype(arr.dtype)).get_indexer(arr)
        return np.where(found >= 0, place[np.maximum(found, 0)], -1).astype(np.int64)
    code = pd.Index(keys).get_indexer(arr)
    return np.ascontiguousarray(code, dtype=np.int64)


def _dense_int_codes(arr: NDArray[Any]) -> GroupCodes | None:
    """Integer keys within a range of at most a few times the rows: each key's place among
    the sorted keys by a table over the range (no hashing, no sort), or None."""
    lo, hi = _v.value_range(arr)
    span = int(hi) - int(lo) + 1
    if span > max(4 * arr.size, 1 << 16):
        return None
    # A block at a time, writing the codes in place: a large column's temporaries stay a
    # block's.
    present = np.zeros(span, dtype=bool)
    block = CODES_BLOCK
    for a in range(0, arr.size, block):
        present[_offsets(arr[a:a + block], lo)] = True
    rank = np.cumsum(present) - 1
    code = np.empty(arr.size, dtype=np.int64)
    for a in range(0, arr.size, block):
        code[a:a + block] = rank[_offsets(arr[a:a + block], lo)]
    values = np.flatnonzero(present).astype(arr.dtype) + arr.dtype.type(lo)
    return GroupCodes(code, values, False)


def _offsets(arr: NDArray[Any], lo: int | float) -> NDArray[np.int64]:
    """Integer keys minus the smallest, as int64 (the span is small)."""
    if arr.dtype.kind == "u":           # unsigned: no wrap below the smallest key
        out: NDArray[np.int64] = (arr - arr.dtype.type(lo)).astype(np.int64, copy=False)
    else:                               # signed: in int64 (int8 keys -100 and 100 differ by 200)
        out = arr.astype(np.int64) - int(lo)
    return out
