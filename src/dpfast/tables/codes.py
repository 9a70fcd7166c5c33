"""Records as category codes, and the labels of a released table.

- records as codes: the named columns of a DataFrame or a mapping (:func:`frame_column`,
  :func:`has_column`, :func:`check_columns`), each record as its index among its column's
  public categories (:func:`record_codes`, :func:`frame_codes`);
- the labels of a released table: pandas indexes of the categories
  (:func:`category_indexes`, :func:`label_table`).

Errors name the argument and the record's position, never a value of the data.
"""
from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v
from .categories import category_codes
from .columns import is_pandas_frame

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["frame_column", "has_column", "check_columns", "record_codes", "frame_codes",
           "category_indexes", "label_table"]


# -- records as codes -----------------------------------------------------------------------

def frame_column(frame: object, name: Hashable, what: str, func: str) -> object:
    """Column ``name`` of a pandas DataFrame or a mapping of columns, as it is (a Series
    stays a Series); ValueError naming ``what`` if absent."""
    if is_pandas_frame(frame):
        present = name in frame.columns            # type: ignore[attr-defined]
    elif isinstance(frame, Mapping):
        present = name in frame
    else:
        raise TypeError(f"The 'frame' parameter of {func} must be a pandas or polars "
                        "DataFrame, a pyarrow Table, the path of a .parquet file or a mapping "
                        f"of column name to array. Got {_v.describe(frame)} instead.")
    if not present:
        raise ValueError(f"The {what!r} parameter of {func} names a column {name!r} that "
                         "'frame' does not have.")
    col = frame[name]                              # type: ignore[index]
    if is_pandas_frame(col):
        raise ValueError(f"The 'frame' parameter of {func} has several columns named "
                         f"{name!r}.")
    return col


def has_column(frame: object, name: Hashable) -> bool:
    """Whether a pandas DataFrame or a mapping has a column ``name``."""
    if is_pandas_frame(frame):
        return name in frame.columns               # type: ignore[attr-defined]
    return isinstance(frame, Mapping) and name in frame


def check_columns(columns: object, func: str) -> list[Hashable]:
    """The column names of a table (one name, or several, each once). An array, a Series or
    any other column of data is refused, and messages describe what was given by kind only:
    names passed by mistake could be the data's values."""
    if hasattr(columns, "shape") or hasattr(columns, "dtype") or type(
            columns).__module__.partition(".")[0] in ("pandas", "polars", "pyarrow"):
        raise TypeError(f"The 'columns' parameter of {func} must be column names (a name or "
                        f"a list of names), not a column of data. Got "
                        f"{_v.describe(columns)} instead.")
    names = [columns] if isinstance(columns, (str, bytes)) or not hasattr(
        columns, "__iter__") else list(columns)
    try:
        distinct = len(set(names)) == len(names)
    except TypeError:
        raise TypeError(f"The 'columns' parameter of {func} must be column names. Got "
                        f"{_v.describe(columns)} instead.") from None
    if not names or not distinct:
        raise ValueError(f"The 'columns' parameter of {func} must name at least one column, "
                         f"each once. Got {_v.describe(columns)} with "
                         f"{'no name' if not names else 'a repeated name'} instead.")
    return names


def record_codes(col: object, cats: list[Any], name: Hashable,
                 func: str) -> NDArray[np.int64]:
    """Each record's index in ``cats``; refuses values outside them (and missing values)."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(col, pd.Series) and isinstance(col.dtype, np.dtype) \
            and col.dtype.kind in "iu":
        col = col.to_numpy()                 # integers: category_codes' lookup table
    if pd is not None and isinstance(col, pd.Series) \
            and not isinstance(col.dtype, pd.CategoricalDtype):
        # pandas' hash lookup (no Python call per record)
        codes = pd.Index(cats, tupleize_cols=False).get_indexer(col)
    else:
        if isinstance(col, (np.ndarray, list, tuple)):
            col = _v.as_array(col, "frame", func)
            if col.ndim != 1:
                raise ValueError(f"The 'frame' parameter of {func} must have 1-D columns. "
                                 f"Got {_v.describe(col)} for column {name!r} instead.")
        codes = category_codes(col, cats, func)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    outside = np.flatnonzero(codes < 0)
    if outside.size:
        # Neither the value nor how many: an error message can end up in a log.
        raise ValueError(f"The 'frame' parameter of {func} has values outside 'keys', or "
                         f"missing values, in column {name!r} (the first at record "
                         f"{outside[0]}). Add them to the column's public categories, or "
                         "drop those records first.")
    return codes


def frame_codes(frame: object, names: list[Hashable], cats: Mapping[Hashable, list[Any]],
                what: str, func: str) -> list[NDArray[np.int64]]:
    """The codes of the named columns of a DataFrame or mapping, all of one length."""
    codes = [record_codes(frame_column(frame, n, what, func), cats[n], n, func)
             for n in names]
    if len({c.size for c in codes}) > 1:
        # The lengths are numbers of records: not shown.
        raise ValueError(f"The 'frame' parameter of {func} must have columns of one length. "
                         f"Got columns {names!r} of different lengths instead.")
    return codes


# -- the labels of a released table ---------------------------------------------------------

def category_indexes(cats: Mapping[Hashable, list[Any]],
                     pandas: bool) -> dict[Hashable, Any] | None:
    """Each attribute's pandas Index (named, labelled by its categories), for pandas output;
    None for numpy output."""
    if not pandas:
        return None
    pd = sys.modules["pandas"]
    return {n: pd.Index(c, name=n, tupleize_cols=False) for n, c in cats.items()}


def label_table(arr: NDArray[Any], label: tuple[Hashable, ...],
                indexes: Mapping[Hashable, Any] | None) -> Any:
    """A table in its label's axis order: as it is, or as a labelled pandas object (2
    attributes: a DataFrame, rows by the first; otherwise a Series)."""
    if indexes is None:
        return arr
    pd = sys.modules["pandas"]
    index = [indexes[n].copy() for n in label]      # a new object per table: names are mutable
    if len(label) == 2:
        return pd.DataFrame(arr, index=index[0], columns=index[1])
    if len(label) == 1:
        return pd.Series(arr, index=index[0])
    return pd.Series(arr.reshape(-1), index=pd.MultiIndex.from_product(index, names=label))
