"""The ``dpfast`` command line: :func:`main` runs one command.

  dpfast demo       DP releases of the bundled UCI Adult census data, shown next to the truth
  dpfast histogram  a DP histogram or category count of one column of a CSV or Parquet file
  dpfast aggregate  DP count, sum, mean, variance or std per key of a CSV or Parquet file
  dpfast info       the compiled kernels in use and the thread count
  dpfast bench      throughput of every mechanism family next to numpy's nearest equivalent

Each module holds one concern: :mod:`~dpfast.cli.app` runs a command (signals, errors, exit
codes), :mod:`~dpfast.cli.parser` its arguments, :mod:`~dpfast.cli.readers` its input files,
:mod:`~dpfast.cli.outputs` the files it writes, :mod:`~dpfast.cli.privacy` its budget and
ledger, :mod:`~dpfast.cli.signals` the stop signals, :mod:`~dpfast.cli.errors` its one-line
errors; :mod:`~dpfast.cli.demo`, :mod:`~dpfast.cli.histogram`, :mod:`~dpfast.cli.aggregate`,
:mod:`~dpfast.cli.bench` and :mod:`~dpfast.cli.diagnostics` (info, audit) are the commands.
"""
from .app import main

__all__ = ["main"]
