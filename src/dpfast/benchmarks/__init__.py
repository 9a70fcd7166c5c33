"""dpfast's benchmarks, in one home: ``dpfast bench`` and the scripts in ``bench/`` import
from here.

- :mod:`~dpfast.benchmarks.core`: the shape of a case, the families and their numpy
  baselines, how calls are timed (:func:`time_calls`) and the machine line;
- :mod:`~dpfast.benchmarks.suite`: ``dpfast bench``, every family against numpy in one run
  (:func:`run`, :class:`Report`, :func:`scaling`);
- :mod:`~dpfast.benchmarks.libraries`: the same jobs in other DP libraries, when installed.
"""
from .core import BASELINES, FAMILIES, Case, machine_info, machine_line, time_calls
from .suite import Report, cases, run, scaling

__all__ = ["BASELINES", "FAMILIES", "Case", "Report", "cases", "machine_info", "machine_line",
           "run", "scaling", "time_calls"]
