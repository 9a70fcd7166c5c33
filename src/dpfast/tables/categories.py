"""Public categories and category codes: the keys of a table release, missing values, and
each value's index among its column's categories.

- public categories: the ``keys`` mapping of a table release (:func:`keys_mapping`), one
  column's list of categories (:func:`public_categories`, :func:`category_list`), refused
  when taken from the data (:func:`keys_leak`), repeated or holding a missing-value marker
  (:func:`is_missing`);
- category codes: each value's index among a list of categories, -1 outside it
  (:func:`category_codes`: numpy, pandas Categoricals and dictionary-encoded Arrow columns,
  small integer categories through a lookup table).

Errors name the argument and the entry's position, never a value of the data.
"""
from __future__ import annotations

import numbers
import sys
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import validation as _v
from ..messages import describe, position
from ..validation import as_array, is_arrow

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["keys_leak", "keys_mapping", "is_missing", "category_list", "public_categories",
           "category_codes"]


def keys_leak(func: str, detail: str) -> ValueError:
    """The error for ``keys`` that are, or may be, the data itself."""
    return ValueError(
        f"The 'keys' parameter of {func} must give public categories, not the data: {detail} "
        "The categories are published with the counts, so categories taken from the data "
        "reveal that someone has them. Pass a mapping of every column to its public list "
        "of categories.")


def keys_mapping(keys: object, data: object, func: str) -> Mapping[Any, Any]:
    """``keys``, a mapping of column name to categories: refused if None, the data, a str or
    an array."""
    if keys is None:
        raise keys_leak(func, "it is required (got None).")
    if keys is data or isinstance(keys, str) or hasattr(keys, "shape"):
        raise keys_leak(func,
                        f"got {_v.describe(keys) if hasattr(keys, 'shape') else repr(keys)}.")
    if not isinstance(keys, Mapping):
        raise TypeError(f"The 'keys' parameter of {func} must be a mapping of column name to "
                        f"its list of categories. Got {_v.describe(keys)} instead.")
    return keys


def _is_data(cats: object, col: object) -> bool:
    """Whether a category list is (a view of) a data column or its dtype's categories."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(cats, (pd.Series, pd.DataFrame)):
        return True
    if type(cats).__module__.partition(".")[0] in ("polars", "pyarrow"):
        return True                  # a polars Series, an Arrow array: columns of a table
    if hasattr(cats, "codes") and hasattr(cats, "categories"):       # a Categorical
        return True
    if col is None:
        return False
    own = getattr(getattr(col, "cat", None), "categories", None)
    own = getattr(col, "categories", None) if own is None else own
    if cats is col or (own is not None and cats is own):
        return True
    if isinstance(cats, np.ndarray) and pd is not None and isinstance(col, pd.Series) \
            and isinstance(col.dtype, np.dtype):
        col = col.to_numpy()                     # a view for numpy-backed columns
    return isinstance(cats, np.ndarray) and isinstance(col, np.ndarray) \
        and np.may_share_memory(cats, col)


def is_missing(value: object) -> bool:
    """None, NaN, NaT, pandas.NA: markers of a missing value, never a category."""
    if value is None:
        return True
    try:
        return bool(value != value)              # NaN and NaT only
    except (TypeError, ValueError):              # pandas.NA is neither equal nor unequal
        return True


def _refuse_unordered(cats: object, rule: str) -> None:
    """A TypeError ``rule`` for categories that are not an ordered sequence (a str, bytes,
    set or mapping, or no length)."""
    if isinstance(cats, (str, bytes, set, frozenset, Mapping)) \
            or not hasattr(cats, "__len__") or not hasattr(cats, "__iter__"):
        raise TypeError(f"{rule} Got {_v.describe(cats)} instead.")


def category_list(cats: object, rule: str) -> list[Any]:
    """A public list of categories as a list, in its order (the order of the released
    cells); anything but an ordered sequence is a TypeError whose first sentence is
    ``rule``."""
    _refuse_unordered(cats, rule)
    return list(cast("Iterable[Any]", cats))


def public_categories(cats: object, name: Hashable, col: object, func: str) -> list[Any]:
    """One column's public categories (``keys[name]``) as a list: ordered, hashable,
    distinct, not empty, no missing-value marker, and not the data column ``col`` (None:
    no column to compare with) nor taken from it."""
    _refuse_unordered(cats, f"The 'keys' parameter of {func} must map column {name!r} to an "
                      "ordered sequence of categories (the order of the released cells).")
    if _is_data(cats, col):
        raise keys_leak(func, f"the categories of column {name!r} are the data column or "
                        "taken from it.")
    values = list(cast("Iterable[Any]", cats))
    try:
        index = {v: i for i, v in enumerate(values)}
    except TypeError:
        raise TypeError(f"The 'keys' parameter of {func} must give hashable categories for "
                        f"column {name!r}. Got {_v.describe(values)} instead.") from None
    problem = ("no category" if not values else
               "a missing-value marker (None, NaN)" if any(is_missing(v) for v in values) else
               "repeated categories" if len(index) != len(values) else None)
    if problem:
        # Not the values: if they are the data by mistake, they must not reach a log.
        raise ValueError(f"The 'keys' parameter of {func} must give column {name!r} at least "
                         "one category, with no repeats and no missing-value markers. Got "
                         f"{_v.describe(values)} with {problem} instead.")
    return values


# -- category codes -------------------------------------------------------------------------

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
    index: dict[Hashable, int] = {}
    for i, c in enumerate(categories):
        if index.setdefault(c, i) != i:
            raise ValueError(f"The 'categories' parameter of {func} must not repeat a "
                             f"category. Got {describe(categories)} whose entry at "
                             f"{position(i)} repeats the one at {position(index[c])} instead.")
    if is_arrow(values) and _arrow_dictionary(values):
        return _arrow_codes(values, index, func)
    cat = getattr(values, "cat", None)           # a pandas Series of category dtype
    if cat is not None:
        values = values.array
    if hasattr(values, "codes") and hasattr(values, "categories"):     # pandas Categorical
        lut = np.array([index.get(c, -1) for c in values.categories] + [-1], dtype=np.int64)
        codes = np.asarray(values.codes, dtype=np.int64)
        return lut[codes]                        # code -1 (missing) reads the trailing -1
    arr = as_array(values, "values", func, categories=True).reshape(-1)
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


def _arrow_dictionary(values: Any) -> bool:
    import pyarrow as pa
    return bool(pa.types.is_dictionary(values.type))


def _arrow_codes(values: Any, index: dict[Hashable, int], func: str) -> NDArray[np.int64]:
    """Codes of dictionary-encoded Arrow values: each chunk's dictionary looked up once, its
    indices read through that table (no value decoded); nulls refused as by as_array."""
    import pyarrow as pa

    if values.null_count:
        as_array(values, "values", func)          # raises, naming the first null
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = []
    for chunk in chunks:
        lut = np.array([index.get(c, -1) for c in chunk.dictionary.to_pylist()] + [-1],
                       dtype=np.int64)
        parts.append(lut[np.asarray(chunk.indices.to_numpy(zero_copy_only=False),
                                    dtype=np.int64)])
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
