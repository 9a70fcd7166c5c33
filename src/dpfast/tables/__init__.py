"""Tabular input: the columns of a table as numpy, and categorical columns as codes.

One package reads every table a release is given, so that keys, category codes and missing
values are parsed one way. Its modules hold one concern each:

- :mod:`.columns`: the columns of a table: pandas and polars DataFrames, pyarrow Tables,
  mappings of columns, and Parquet files read column by column (:class:`ParquetColumns`),
  so that a release holds the columns it needs once, never a second copy of a whole table
  (:func:`column`, :func:`length`, :func:`open_table`; :func:`records_of` shows a pyarrow
  Table, a polars DataFrame or a Parquet file as a mapping of columns,
  :class:`TableColumns`);
- :mod:`.categories`: public categories: the ``keys`` mapping of a table release
  (:func:`keys_mapping`), one column's list of categories (:func:`public_categories`,
  :func:`category_list`), refused when taken from the data, repeated or holding a
  missing-value marker (:func:`is_missing`); and each value's index among its categories
  (:func:`category_codes`);
- :mod:`.codes`: records as codes: each record's index among its column's categories
  (:func:`record_codes`, :func:`frame_codes`), and the labels of a released table: pandas
  indexes of the categories (:func:`label_table`);
- :mod:`.groups`: each row's group among the public or private keys of a group-by
  (:func:`group_codes`).

Every name is imported from here (``from dpfast.tables import column``); errors name the
argument and the record's position, never a value of the data.
"""
from __future__ import annotations

from .categories import (category_codes, category_list, is_missing, keys_leak, keys_mapping,
                         public_categories)
from .codes import (category_indexes, check_columns, frame_codes, frame_column, has_column,
                    label_table, record_codes)
from .columns import (BATCH_ROWS, ParquetColumns, TableColumns, check_column, column,
                      is_frame_like, is_pandas_frame, length, open_table, records_of)
from .groups import CODES_BLOCK, GroupCodes, group_codes

__all__ = ["column", "check_column", "length", "ParquetColumns", "open_table", "TableColumns",
           "records_of",
           "is_pandas_frame", "is_frame_like", "keys_leak", "keys_mapping", "is_missing",
           "category_list", "public_categories", "category_codes", "frame_column",
           "has_column", "check_columns", "record_codes", "frame_codes", "category_indexes",
           "label_table", "GroupCodes", "group_codes", "BATCH_ROWS", "CODES_BLOCK"]
