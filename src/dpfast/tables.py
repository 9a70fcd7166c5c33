"""Tabular input: the columns of a table as numpy, and categorical columns as codes.

One module reads every table a release is given, so that keys, category codes and missing
values are parsed one way:

- the columns of a table: pandas and polars DataFrames, pyarrow Tables, mappings of
  columns, and Parquet files read column by column (:class:`ParquetColumns`), so that a
  release holds the columns it needs once, never a second copy of a whole table
  (:func:`column`, :func:`length`, :func:`open_table`);
- public categories: the ``keys`` mapping of a table release (:func:`keys_mapping`), one
  column's list of categories (:func:`public_categories`, :func:`category_list`), refused
  when taken from the data, repeated or holding a missing-value marker;
- records as codes: each record's index among its column's categories
  (:func:`record_codes`, :func:`frame_codes`), and each row's group among the public or
  private keys of a group-by (:func:`group_codes`);
- the labels of a released table: pandas indexes of the categories (:func:`label_table`).

Errors name the argument and the record's position, never a value of the data.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from . import records
from . import validation as _v

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["column", "check_column", "length", "ParquetColumns", "open_table",
           "is_pandas_frame", "is_frame_like", "keys_leak", "keys_mapping", "is_missing",
           "category_list", "public_categories", "frame_column", "has_column",
           "check_columns", "record_codes", "frame_codes", "category_indexes", "label_table",
           "GroupCodes", "group_codes"]

#: Rows read from a Parquet file at a time.
BATCH_ROWS = 1 << 20


class ParquetColumns:
    """A Parquet file whose columns are read one at a time, row group by row group, into one
    numpy array each (numbers as int64 or float64, written in place: no second copy; other
    types as numpy objects). Nulls are refused by position, never by value."""

    __slots__ = ("path", "rows", "names", "_identity")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import stat

        import pyarrow.parquet as pq
        self.path = os.fspath(path)
        if not stat.S_ISREG(os.stat(self.path).st_mode):
            raise ValueError(f"The 'data' parameter: {self.path!r} is not a regular file (a "
                             "pipe, a device or a directory is not read as Parquet).")
        self._identity = self._stat()
        try:
            meta = pq.ParquetFile(self.path)
        except Exception:       # Arrow's error for a file that is not Parquet
            raise ValueError(f"The 'data' parameter: {self.path!r} cannot be read as a "
                             "Parquet file.") from None
        self.rows = int(meta.metadata.num_rows)
        self.names = list(meta.schema_arrow.names)

    def __repr__(self) -> str:
        return f"ParquetColumns({self.path!r}, rows={self.rows})"

    def _stat(self) -> tuple[int, int, int, int]:
        st = os.stat(self.path)
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def _batches(self, name: str, param: str, func: str) -> Any:
        """(first row, numpy values) of each batch of column ``name``, nulls refused; the
        file must be the one opened (same inode, size and modification time) before and
        after."""
        import pyarrow.parquet as pq
        if name not in self.names:
            raise ValueError(f"The {param!r} parameter of {func} names a column, {name!r}, "
                             "that the data does not have.")
        self._unchanged(func)
        pf = pq.ParquetFile(self.path)
        at = 0
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=[name]):
            values = batch.column(0)
            if values.null_count:
                first = at + int(np.argmax(values.is_null().to_numpy(zero_copy_only=False)))
                raise ValueError(f"The column {name!r} ({param}) of {func} has a null at "
                                 f"row {first}: refused (drop or fill nulls first).")
            yield at, values.to_numpy(zero_copy_only=False)
            at += len(values)
        self._unchanged(func)

    def _unchanged(self, func: str) -> None:
        if self._stat() != self._identity:
            raise RuntimeError(f"{func}: the Parquet file {self.path!r} changed after it was "
                               "opened for this release; nothing of it is released.")

    def column(self, name: str, param: str, func: str) -> Any:
        """The whole column: numbers written in place into one int64 or float64 array."""
        out: Any = None
        for at, values in self._batches(name, param, func):
            if out is None:         # the dtype of the column's numpy values (uint64 stays
                kind = values.dtype.kind                          # uint64, times times)
                out = np.empty(self.rows, dtype=values.dtype if kind in "biufmM" else object)
            out[at:at + values.size] = values
        return out if out is not None else np.empty(0)

    def check_values(self, name: str, param: str, func: str) -> None:
        """Read column ``name`` batch by batch without keeping it, refusing what
        :func:`dpfast.records.check_values` refuses (by row, never by value)."""
        from .records import check_values
        for at, values in self._batches(name, param, func):
            try:
                check_values(values, func, name)
            except ValueError as exc:
                # The batch's index made the file's row.
                raise ValueError(_shifted(str(exc), at)) from None


def _shifted(message: str, at: int) -> str:
    """An error naming "index i" of a batch, naming the file's row instead."""
    import re
    return re.sub(r"index (\d+)", lambda m: f"row {at + int(m.group(1))}", message, count=1)


def check_column(data: object, name: object, param: str, func: str) -> None:
    """Refuse a column name the table does not have (a Parquet file's schema is read, not
    its rows)."""
    if isinstance(data, ParquetColumns) and isinstance(name, str):
        if name not in data.names:
            raise ValueError(f"The {param!r} parameter of {func} names a column, {name!r}, "
                             "that the data does not have.")
        return
    column(data, name, param, func)


def open_table(data: object) -> object:
    """``data``, or a :class:`ParquetColumns` for a path to a ``.parquet`` file."""
    if isinstance(data, (str, os.PathLike)) and \
            os.fspath(data).lower().endswith(".parquet"):
        return ParquetColumns(data)
    return data


def column(data: object, name: object, param: str, func: str) -> Any:
    """Column ``name`` of a pandas or polars DataFrame, a pyarrow Table, a Parquet file
    (:class:`ParquetColumns`) or a mapping of columns, as numpy (no pandas copy of an Arrow
    table or a polars frame). A missing column is a ValueError naming ``param``."""
    if not isinstance(name, str):
        raise TypeError(f"The {param!r} parameter of {func} must be a column name (a str). "
                        f"Got {_v.describe(name)} instead.")
    module = type(data).__module__.split(".")[0]
    if isinstance(data, ParquetColumns):
        return data.column(name, param, func)
    try:
        if isinstance(data, Mapping):
            col = data[name]
        elif module == "pandas":
            col = data[name].to_numpy()          # type: ignore[index]
        elif module == "pyarrow":
            col = data.column(name)              # type: ignore[attr-defined]
        elif module == "polars":
            col = data.get_column(name).to_numpy()   # type: ignore[attr-defined]
        else:
            raise TypeError(f"The 'data' parameter of {func} must be a pandas or polars "
                            "DataFrame, a pyarrow Table or a dict of columns. Got "
                            f"{_v.describe(data)} instead.")
    except (KeyError, LookupError) as exc:
        raise ValueError(f"The {param!r} parameter of {func} names a column, {name!r}, "
                         "that the data does not have.") from exc
    except Exception as exc:   # pyarrow's and polars' own errors for a missing column
        if "not" in str(exc).lower() or "column" in str(exc).lower():
            raise ValueError(f"The {param!r} parameter of {func} names a column, {name!r}, "
                             "that the data does not have.") from None
        raise
    if module == "pyarrow" and not isinstance(data, Mapping):
        if col.null_count:
            raise ValueError(f"The column {name!r} ({param}) of {func} has nulls: refused "
                             "(drop or fill them; a null is not a group of its own).")
        col = col.to_numpy()
    return col


def length(data: object, func: str) -> int:
    """The number of rows of a table (a mapping's columns must have one length)."""
    if isinstance(data, ParquetColumns):
        return data.rows
    module = type(data).__module__.split(".")[0]
    if isinstance(data, Mapping):
        series = [v for v in data.values() if hasattr(getattr(v, "index", None), "equals")]
        if any(not s.index.equals(series[0].index) for s in series[1:]):
            raise ValueError(f"The 'data' parameter of {func} holds pandas Series whose "
                             "indexes differ: rows are paired by position, not by index. "
                             "Align them first, or pass a DataFrame.")
        lengths = {len(np.asarray(v)) if not hasattr(v, "__len__") else len(v)
                   for v in data.values()}
        if len(lengths) > 1:
            raise ValueError(f"The 'data' parameter of {func} must have columns of one "
                             "length. Got columns of different lengths.")
        return lengths.pop() if lengths else 0
    if module in ("pandas", "polars"):
        return len(data)                          # type: ignore[arg-type]
    if module == "pyarrow":
        return int(data.num_rows)                 # type: ignore[attr-defined]
    raise TypeError(f"The 'data' parameter of {func} must be a pandas or polars DataFrame, a "
                    "pyarrow Table, a dict of columns or a path to a .parquet file. Got "
                    f"{_v.describe(data)} instead.")




# -- what a table is ------------------------------------------------------------------------

def is_pandas_frame(obj: object) -> bool:
    """Whether ``obj`` is a pandas DataFrame (pandas already imported: no import here). A
    release given one answers with labelled pandas tables."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def is_frame_like(obj: object) -> bool:
    """Whether ``obj`` is a DataFrame of any library (pandas, polars, Dask...: a type named
    ``DataFrame`` with ``columns``), as opposed to an array of counts. Wider than
    :func:`is_pandas_frame`: a release that takes either counts or records tells them apart
    with it, then reads the records as pandas."""
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns")


# -- keys: the public categories ------------------------------------------------------------

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


# -- records as codes -----------------------------------------------------------------------

def frame_column(frame: object, name: Hashable, what: str, func: str) -> object:
    """Column ``name`` of a pandas DataFrame or a mapping of columns, as it is (a Series
    stays a Series); ValueError naming ``what`` if absent."""
    if is_pandas_frame(frame):
        present = name in frame.columns            # type: ignore[attr-defined]
    elif isinstance(frame, Mapping):
        present = name in frame
    else:
        raise TypeError(f"The 'frame' parameter of {func} must be a pandas DataFrame or a "
                        f"mapping of column name to array. Got {_v.describe(frame)} instead.")
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
    """The column names of a table (one name, or several, each once)."""
    names = [columns] if isinstance(columns, (str, bytes)) or not hasattr(
        columns, "__iter__") else list(columns)
    try:
        distinct = len(set(names)) == len(names)
    except TypeError:
        raise TypeError(f"The 'columns' parameter of {func} must be column names. Got "
                        f"{columns!r} instead.") from None
    if not names or not distinct:
        raise ValueError(f"The 'columns' parameter of {func} must name at least one column, "
                         f"each once. Got {columns!r} instead.")
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
        codes = _v.category_codes(col, cats, func)
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


# -- group-by keys --------------------------------------------------------------------------

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
