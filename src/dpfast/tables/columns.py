"""The columns of a table as numpy: frames, Arrow tables, mappings and Parquet files.

A release reads the columns it needs from pandas and polars DataFrames, pyarrow Tables,
mappings of columns, and Parquet files read column by column (:class:`ParquetColumns`), so
that it holds those columns once, never a second copy of a whole table (:func:`column`,
:func:`check_column`, :func:`length`, :func:`open_table`); :func:`is_pandas_frame` and
:func:`is_frame_like` say what kind of table an argument is.

Errors name the argument and the record's position, never a value of the data.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .. import validation as _v

__all__ = ["BATCH_ROWS", "ParquetColumns", "check_column", "open_table", "column", "length",
           "is_pandas_frame", "is_frame_like"]

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

    def _stat(self) -> tuple[int, int, int, int, int]:
        # ctime too: the file's owner can rewrite it in place and set its mtime back, never
        # its ctime.
        st = os.stat(self.path)
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

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
        from ..records import check_values
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
                             "(drop or fill them; a null is not a key or a category of its own).")
        col = col.to_numpy()
    return col


class TableColumns(Mapping[str, Any]):
    """A pyarrow Table, a polars DataFrame or a Parquet file seen as a read-only mapping of
    its columns, each read as numpy once, when first asked for (never a copy of the whole
    table), so that a release written for mappings of columns reads these tables too."""

    def __init__(self, data: object, func: str) -> None:
        self._data = open_table(data)
        self._func = func
        self._read: dict[str, Any] = {}
        module = type(self._data).__module__.split(".")[0]
        if isinstance(self._data, ParquetColumns):
            self._names = list(self._data.names)
        elif module == "pyarrow":
            self._names = list(self._data.column_names)  # type: ignore[attr-defined]
        else:
            self._names = list(self._data.columns)       # type: ignore[attr-defined]
        self._known = frozenset(self._names)

    def __getitem__(self, name: str) -> Any:
        if name not in self._known:
            raise KeyError(name)
        if name not in self._read:       # a release asks for a column more than once
            self._read[name] = column(self._data, name, "frame", self._func)
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def records_of(data: object, func: str) -> object:
    """``data``, with a pyarrow Table or RecordBatch, a polars DataFrame or a path to a
    ``.parquet`` file made a :class:`TableColumns` (pandas DataFrames and mappings pass as
    they are; a polars LazyFrame is refused: it is a query, not a table)."""
    module = type(data).__module__.split(".")[0]
    kind = type(data).__name__
    if module == "pyarrow" and kind == "RecordBatch":
        import pyarrow as pa
        data = pa.Table.from_batches([data])
        kind = "Table"
    if module == "polars" and kind == "LazyFrame":
        raise TypeError(f"The 'frame' parameter of {func} must be a polars DataFrame, not a "
                        "LazyFrame: call .collect() first.")
    parquet = isinstance(data, (str, os.PathLike)) and \
        os.fspath(data).lower().endswith(".parquet")
    if parquet or (module, kind) in (("pyarrow", "Table"), ("polars", "DataFrame")):
        return TableColumns(data, func)
    return data


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
