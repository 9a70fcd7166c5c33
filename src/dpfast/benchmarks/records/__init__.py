"""Statistics of records beside the peers: per-department count, sum and mean of salaries with
each person's contribution bounded and the departments found privately, and the overall median
and mean of the salaries.

The table (:func:`make_table`)
------------------------------
``rows`` rows of ``people`` people in ``departments`` departments, seeded:

- each person has between 1 and 20 rows, uniform; the counts are then adjusted so that the
  total is exactly ``rows``: rows are removed from (or added to) people chosen uniformly among
  all removable (addable) rows, so every count stays in 1..20;
- each person belongs to ONE department, drawn Zipf with exponent 1 over ``1..departments``
  (P(k) proportional to 1/k), and all the person's rows are in it;
- salaries are drawn per row, log-normal with median 50,000 and sigma 0.7 on the log scale,
  clamped to [0, 300,000];
- the rows are shuffled: a person's rows are not contiguous.

Columns: ``user_id`` (int64, 0..people-1), ``dept`` (int64, 1..departments), ``salary``
(float64).

Metrics
-------
The truth is the whole table's (no contribution bounding): per department the row count and
the mean of the clamped salaries (:func:`truth`). The error of a grouped release
(:func:`mean_error`) is the mean absolute relative error of the per-department mean over the
1,000 departments with the most rows, a department not released counting 1. Ungrouped
releases report the relative error of the median or mean (:func:`relative_error`).

Peers
-----
Every library (dpfast too) runs in a child process (``sys.executable -c``) with a timeout,
reading the table from a Parquet file the parent wrote to a temporary directory. The child
reports the seconds of the DP computation and, separately, of loading the data; its peak
resident memory (``ru_maxrss``) at the end and right after loading; and what it released.
The parent scores the release. A library that is missing, fails or times out is reported
with its reason and never stops the benchmark. Same parameters for all: epsilon = 1,
delta = 1e-6, at most 1 department and 5 rows per person, salaries in [0, 300,000], keys
(departments) selected privately.

Modules
-------
:mod:`~dpfast.benchmarks.records.table` (the parameters, the table, the metrics and
baselines), :mod:`~dpfast.benchmarks.records.peers` (each library's run in a child process),
:mod:`~dpfast.benchmarks.records.benchmark` (the whole benchmark: :func:`run`),
:mod:`~dpfast.benchmarks.records.report` (its Markdown tables).
"""
from __future__ import annotations

from .benchmark import run
from .peers import Skip, child_main, run_peer
from .report import library_calls, to_markdown
from .table import (DELTA, DPFAST_CALLS, EPSILON, GROUPED, HI, JOINT_ROWS, LARGEST, LO,
                    MAX_GROUPS, MAX_ROWS, MAX_ROWS_PER_PERSON, MEDIAN_SALARY, PYDP_CAP, SIGMA,
                    TIMEOUT, UNGROUPED, bounded_baseline, bounded_median_error, largest,
                    make_table, mean_error, percentiles, read_parquet, relative_error,
                    released_count, spurious_count, truth, write_parquet)

__all__ = ["EPSILON", "DELTA", "MAX_GROUPS", "MAX_ROWS", "LO", "HI", "MEDIAN_SALARY", "SIGMA",
           "MAX_ROWS_PER_PERSON", "JOINT_ROWS", "LARGEST", "TIMEOUT", "DPFAST_CALLS",
           "GROUPED", "UNGROUPED", "PYDP_CAP", "make_table", "write_parquet", "read_parquet",
           "truth", "largest", "mean_error", "released_count", "spurious_count",
           "relative_error", "bounded_baseline", "bounded_median_error", "percentiles",
           "Skip", "child_main", "run_peer", "run", "library_calls", "to_markdown"]
