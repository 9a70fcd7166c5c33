"""Reading a command's input file, CSV or Parquet: one column's raw values for ``dpfast
histogram`` (stdlib csv, or pyarrow), the header and the typed table of the columns ``dpfast
aggregate`` needs (pyarrow). Errors name the file and the record's position, never a value."""
import codecs
import csv
import io
import os
import re
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from .errors import NOT_SHOWN, CLIError, message, optional, os_reason

__all__ = ["read_column", "read_header", "read_table", "AGG_PROGRESS_ROWS", "AGG_BATCH_ROWS"]

#: A Parquet file of more rows shows a progress bar on standard error (tqdm, if installed),
#: as noisy_counts does past its own size.
AGG_PROGRESS_ROWS = 1 << 24
#: Rows per batch when a Parquet file is read (one row group may hold several).
AGG_BATCH_ROWS = 1 << 20


def read_column(path: str, column: str,
                encoding: str) -> tuple[Sequence[object], Callable[[int], str]]:
    """(values, where): the column's raw values, and where(i) naming record i's position."""
    if not Path(path).is_file():
        why = ("it is a directory" if Path(path).is_dir() else
               "it does not exist" if not os.path.lexists(path) else
               "a symbolic link to nothing" if Path(path).is_symlink() and not Path(path).exists()
               else "not a regular file")
        raise CLIError(f"FILE {path!r} is not a file ({why}).")
    if Path(path).suffix.lower() == ".parquet":
        return _read_parquet_column(path, column)
    return _read_csv_column(path, column, encoding)


def _decode(path: str, encoding: str) -> str:
    """The file's text; an error naming the line of the first byte that is not valid in
    ``encoding``. UTF-8 files may start with a byte-order mark (spreadsheet exports), which
    would otherwise become part of the first column's name."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise CLIError(f"FILE {path!r} cannot be read: {os_reason(exc)}.") from None
    codec = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding
    try:
        return raw.decode(codec)
    except UnicodeDecodeError as exc:
        # The byte's position, never the byte: it is part of a record.
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CLIError(f"{path}, line {line}: the byte at offset {exc.start} of the file "
                       f"(byte {column} of the line) is not valid {encoding} text. Pass "
                       "--encoding with the file's encoding (e.g. --encoding latin-1 or "
                       "--encoding cp1252).") from None


def _column_index(header: list[str], column: str, path: str, where: str) -> int:
    """The column's index in ``header`` (read at ``where``). The header's names are never
    shown: a file without a header row would show its first record."""
    if column not in header:
        raise CLIError(f"--column {column!r} is not a column of {path} ({where} has "
                       f"{len(header)} column(s); names are compared exactly, surrounding "
                       "spaces ignored, and are not shown here).")
    if header.count(column) > 1:
        raise CLIError(f"--column {column!r} names {header.count(column)} columns of {path}; "
                       "column names must be unique.")
    return header.index(column)


def _read_csv_column(path: str, column: str,
                     encoding: str) -> tuple[list[str], Callable[[int], str]]:
    values, lines = [], []
    with io.StringIO(_decode(path, encoding), newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise CLIError(f"{path}, line 1: not valid CSV: {message(exc)}.") from None
        if header is None:
            raise CLIError(f"FILE {path!r} is empty: a CSV file needs a header row naming "
                           "its columns.")
        idx = _column_index([h.strip() for h in header], column, path,
                            "its header row, line 1,")
        try:
            for row in reader:
                if not row:
                    continue
                if idx >= len(row):
                    raise CLIError(f"{path}, line {reader.line_num}: {len(row)} field(s), "
                                   f"so no value for --column {column!r} (field {idx + 1}).")
                values.append(row[idx])
                lines.append(reader.line_num)
        except csv.Error as exc:
            # The csv module's messages describe the fault ("field larger than field
            # limit"), never the field.
            raise CLIError(f"{path}, line {reader.line_num}: not valid CSV: "
                           f"{message(exc)}.") from None
    return values, lambda i: f"{path}, line {lines[i]}"


def _parquet_schema(pq: Any, path: str) -> Any:
    """The Arrow schema of the Parquet file at ``path`` (``pq`` is ``pyarrow.parquet``)."""
    try:
        return pq.read_schema(path)
    except OSError as exc:
        if exc.errno is None:      # pyarrow's own OSError: the text may quote the file
            raise CLIError(f"FILE {path!r} is not a readable Parquet file "
                           f"({type(exc).__name__}).") from None
        raise CLIError(f"FILE {path!r} cannot be read: {os_reason(exc)}.") from None
    except Exception as exc:       # pyarrow's errors (ArrowInvalid, ...): not Parquet
        raise CLIError(f"FILE {path!r} is not a readable Parquet file "
                       f"({type(exc).__name__}).") from None


def _read_parquet_column(path: str,
                         column: str) -> tuple[list[Any], Callable[[int], str]]:
    pq = optional("pyarrow.parquet", "pyarrow", "Reading a Parquet file")
    names = list(_parquet_schema(pq, path).names)
    _column_index(names, column, path, "its schema")
    try:
        values = pq.read_table(path, columns=[column]).column(column).to_pylist()
    except Exception as exc:       # a corrupt row group or page; Arrow's text may quote data
        raise CLIError(f"FILE {path!r}: column {column!r} cannot be read as Parquet "
                       f"({type(exc).__name__}).") from None
    return values, lambda i: f"{path}, row {i + 1}"


def read_header(path: str) -> tuple[list[str], "Any | None"]:
    """(column names, Arrow schema for Parquet or None for CSV), reading only the header."""
    if not Path(path).is_file():
        why = ("it is a directory" if Path(path).is_dir() else
               "it does not exist" if not os.path.lexists(path) else "not a regular file")
        raise CLIError(f"FILE {path!r} is not a file ({why}).")
    if Path(path).suffix.lower() == ".parquet":
        pq = optional("pyarrow.parquet", "pyarrow", "Reading a Parquet file")
        schema = _parquet_schema(pq, path)
        return list(schema.names), schema
    optional("pyarrow.csv", "pyarrow", "dpfast aggregate")
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            header = next(csv.reader(f), None)
    except OSError as exc:
        raise CLIError(f"FILE {path!r} cannot be read: {os_reason(exc)}.") from None
    except UnicodeDecodeError:
        raise CLIError(f"{path}, line 1: the header row is not valid UTF-8 text.") from None
    except csv.Error as exc:
        raise CLIError(f"{path}, line 1: not valid CSV: {message(exc)}.") from None
    if header is None:
        raise CLIError(f"FILE {path!r} is empty: a CSV file needs a header row naming its "
                       "columns.")
    return header, None


def _progress(rows: int, err: TextIO) -> Any:
    """A progress bar over ``rows`` rows (tqdm, if installed) for a large file, else None."""
    if rows <= AGG_PROGRESS_ROWS:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=rows, unit="row", unit_scale=True, desc="dpfast aggregate", file=err)


def read_table(path: str, schema: Any, names: list[str], err: TextIO) -> Any:
    """The table of the columns in ``schema`` (only those read) of the file at ``path``,
    typed as ``schema`` says, ``names`` being the file's columns; a progress bar on ``err``
    for a large Parquet file. Errors name the column and the record, never a value."""
    import pyarrow as pa
    if Path(path).suffix.lower() == ".parquet":
        import pyarrow.parquet as pq
        try:
            pf = pq.ParquetFile(path)
            bar = _progress(pf.metadata.num_rows, err)
            batches = []
            try:
                for batch in pf.iter_batches(batch_size=AGG_BATCH_ROWS,
                                             columns=schema.names):
                    batches.append(batch)
                    if bar is not None:
                        bar.update(batch.num_rows)
            finally:
                if bar is not None:
                    bar.close()
            table = pa.Table.from_batches(batches) if batches else \
                pf.schema_arrow.empty_table().select(schema.names)
            return pa.table({f.name: _cast(table.column(f.name), f.type)
                             for f in schema})
        except OSError as exc:
            if exc.errno is not None:
                raise CLIError(f"FILE {path!r} cannot be read: {os_reason(exc)}.") from None
            raise CLIError(f"FILE {path!r}: the columns cannot be read as Parquet "
                           f"({type(exc).__name__}).") from None
        except Exception as exc:  # a corrupt row group or page; Arrow's text may quote data
            raise CLIError(f"FILE {path!r}: the columns cannot be read as Parquet "
                           f"({type(exc).__name__}).") from None
    import pyarrow.csv as pacsv
    # Only the empty field is missing ("NA" may be a key); keys stay the file's text.
    convert = pacsv.ConvertOptions(include_columns=schema.names,
                                   column_types={f.name: f.type for f in schema},
                                   null_values=[""], strings_can_be_null=True)
    try:
        return pacsv.read_csv(path, read_options=pacsv.ReadOptions(use_threads=True),
                              convert_options=convert).select(schema.names)
    except OSError as exc:
        if exc.errno is not None:
            raise CLIError(f"FILE {path!r} cannot be read: {os_reason(exc)}.") from None
        raise CLIError(f"FILE {path!r} cannot be read as CSV ({type(exc).__name__}).") \
            from None
    except Exception as exc:
        # Arrow's text quotes the bad field: only the column it names is kept.
        found = re.search(r"CSV column #(\d+): CSV conversion error", str(exc))
        if found and int(found.group(1)) < len(names):
            column = names[int(found.group(1))]
            raise CLIError(f"{path}: a value of column {column!r} is not a number. "
                           f"{NOT_SHOWN}") from None
        raise CLIError(f"FILE {path!r} cannot be read as CSV ({type(exc).__name__}: a "
                       f"record with too many or too few fields, or bad quoting). "
                       f"{NOT_SHOWN}") from None


def _cast(col: Any, kind: Any) -> Any:
    """A Parquet column as ``kind`` (dictionaries decoded, numbers as float64)."""
    import pyarrow as pa
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col if col.type == kind else col.cast(kind)
