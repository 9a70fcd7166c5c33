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
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from .core import check_positive_int, machine_info, machine_line

# The common parameters of every run.
EPSILON = 1.0
DELTA = 1e-6
MAX_GROUPS = 1          # L0: departments per person
MAX_ROWS = 5            # L-infinity: rows per person and department
LO, HI = 0.0, 300000.0  # public clamping bounds of the salaries
MEDIAN_SALARY = 50000.0
SIGMA = 0.7
MAX_ROWS_PER_PERSON = 20
JOINT_ROWS = 2000       # the sample the three quantile methods are compared on
LARGEST = 1000
TIMEOUT = 600.0
#: Calls of dpfast in each of its runs (the first pays for memory the process touches for
#: the first time: on this virtual machine, about half a second at 10^7 rows).
DPFAST_CALLS = 3

# (library, task) pairs the benchmark runs; a task is "grouped", "median" or "mean".
GROUPED = ("dpfast", "PipelineDP", "OpenDP", "OpenDP float", "Tumult Analytics")
UNGROUPED = ("dpfast", "dpfast, every row", "OpenDP", "PipelineDP", "diffprivlib", "PyDP")

# PyDP is measured on at most this many rows and extrapolated linearly (it takes a Python
# list); 10^7 rows take it under 2 s here, so the cap only matters for larger tables.
PYDP_CAP = 2 * 10**7


# ---------------------------------------------------------------------------------------------
# The data
# ---------------------------------------------------------------------------------------------

def _rows_per_person(rng: np.random.Generator, rows: int, people: int) -> "np.ndarray[Any, Any]":
    """Counts in 1..20, uniform, then moved to sum to ``rows`` one row at a time, each removed
    (added) row chosen uniformly among all the rows that can be removed (added)."""
    counts = rng.integers(1, MAX_ROWS_PER_PERSON + 1, size=people, dtype=np.int64)
    diff = int(counts.sum()) - rows
    if diff != 0:
        # Each person offers count - 1 removable rows (or 20 - count addable ones); choosing
        # |diff| of those slots without replacement keeps every count inside 1..20.
        room = counts - 1 if diff > 0 else MAX_ROWS_PER_PERSON - counts
        slots = rng.choice(int(room.sum()), size=abs(diff), replace=False)
        owner = np.searchsorted(np.cumsum(room), slots, side="right")
        change = np.bincount(owner, minlength=people)
        counts = counts - change if diff > 0 else counts + change
    return counts


def make_table(rows: int = 10**7, people: int = 10**6, departments: int = 10**4,
               seed: int = 0) -> dict[str, "np.ndarray[Any, Any]"]:
    """The benchmark's synthetic table (the model is in the module docstring).

    Parameters
    ----------
    rows : int
        Total rows; between ``people`` and ``20 * people``.
    people : int
        Distinct ``user_id`` values.
    departments : int
        Departments ``1..departments`` (Zipf, exponent 1); a rare one may have no rows.
    seed : int
        Seed of numpy's generator: the same seed gives the same table.

    Returns
    -------
    dict of str to numpy.ndarray
        ``user_id`` (int64), ``dept`` (int64), ``salary`` (float64), each of length ``rows``.
    """
    rows = check_positive_int(rows, "rows")
    people = check_positive_int(people, "people")
    departments = check_positive_int(departments, "departments")
    if not people <= rows <= MAX_ROWS_PER_PERSON * people:
        raise ValueError(f"rows must be between people and {MAX_ROWS_PER_PERSON} * people "
                         f"(each person has 1 to {MAX_ROWS_PER_PERSON} rows). Got rows={rows}, "
                         f"people={people} instead.")
    rng = np.random.default_rng(seed)
    counts = _rows_per_person(rng, rows, people)
    zipf = np.cumsum(1.0 / np.arange(1, departments + 1))
    dept_of = np.searchsorted(zipf, rng.random(people) * zipf[-1], side="right") + 1
    dept_of = np.minimum(dept_of, departments).astype(np.int64)   # guards u * H == H exactly
    order = rng.permutation(rows)
    user_id = np.repeat(np.arange(people, dtype=np.int64), counts)[order]
    dept = dept_of[user_id]
    salary = np.exp(rng.normal(np.log(MEDIAN_SALARY), SIGMA, size=rows))
    np.clip(salary, LO, HI, out=salary)
    return {"user_id": user_id, "dept": dept, "salary": salary}


def write_parquet(table: Mapping[str, "np.ndarray[Any, Any]"], path: str) -> None:
    """Write the table's columns to one Parquet file (pyarrow), in row groups of 2^20 rows so
    that a reader can stream a 10^8-row file."""
    pa = importlib.import_module("pyarrow")
    pq = importlib.import_module("pyarrow.parquet")
    pq.write_table(pa.table({k: np.asarray(v) for k, v in table.items()}), path,
                   row_group_size=2**20)


def read_parquet(path: str) -> dict[str, "np.ndarray[Any, Any]"]:
    """The columns of a Parquet file as numpy arrays, each read batch by batch into one
    array (dpfast.tables.ParquetColumns): the process holds the columns once, not an Arrow
    table beside them."""
    from ..tables import ParquetColumns
    f = ParquetColumns(path)
    return {name: f.column(name, "path", "read_parquet") for name in f.names}


# ---------------------------------------------------------------------------------------------
# The truth and the metrics
# ---------------------------------------------------------------------------------------------

def truth(table: Mapping[str, "np.ndarray[Any, Any]"], lo: float = LO,
          hi: float = HI) -> dict[str, Any]:
    """Per-department true row count and mean of the clamped salaries, over every row.

    Returns
    -------
    dict
        ``dept`` (the departments present, ascending), ``count``, ``sum`` and ``mean``
        (arrays aligned with ``dept``), and scalars ``median`` and ``overall_mean`` of the
        clamped salaries and ``rows``.
    """
    dept = np.asarray(table["dept"])
    salary = np.clip(np.asarray(table["salary"], dtype=np.float64), lo, hi)
    keys, inverse = np.unique(dept, return_inverse=True)
    count = np.bincount(inverse, minlength=len(keys))
    total = np.bincount(inverse, weights=salary, minlength=len(keys))
    return {"dept": keys, "count": count, "sum": total, "mean": total / count,
            "median": float(np.median(salary)), "overall_mean": float(salary.mean()),
            "rows": int(len(dept))}


def largest(true: Mapping[str, Any], k: int = LARGEST) -> "np.ndarray[Any, Any]":
    """Indices (into ``true["dept"]``) of the ``k`` departments with the most rows; ties go
    to the smaller department key, so the choice is deterministic."""
    order = np.lexsort((true["dept"], -np.asarray(true["count"])))
    return order[:k]


def mean_error(released: Mapping[Any, float], true: Mapping[str, Any],
               largest_k: int = LARGEST) -> float:
    """Mean absolute relative error of the per-department mean over the ``largest_k``
    departments with the most rows; a department not released (or released as NaN) counts 1.

    Parameters
    ----------
    released : mapping of department to float
        The released per-department means.
    true : dict
        From :func:`truth`.
    largest_k : int
        How many departments are scored (all of them if fewer are present).
    """
    errors = []
    for i in largest(true, largest_k):
        value = released.get(int(true["dept"][i]))
        target = float(true["mean"][i])
        if value is None or not np.isfinite(value):
            errors.append(1.0)
        else:
            errors.append(abs(float(value) - target) / abs(target))
    return float(np.mean(errors)) if errors else float("nan")


def released_count(released: Mapping[Any, float], true: Mapping[str, Any]) -> int:
    """Departments released that have rows (a key no record has would be a privacy failure;
    :func:`spurious_count` counts those)."""
    present = set(int(d) for d in true["dept"])
    return sum(1 for d in released if int(d) in present)


def spurious_count(released: Mapping[Any, float], true: Mapping[str, Any]) -> int:
    """Departments released that no record has."""
    present = set(int(d) for d in true["dept"])
    return sum(1 for d in released if int(d) not in present)


def relative_error(value: float, target: float) -> float:
    """|value - target| / |target| (inf for a missing or non-finite value)."""
    if value is None or not np.isfinite(value):
        return float("inf")
    return abs(float(value) - target) / abs(target)


def bounded_baseline(table: Mapping[str, "np.ndarray[Any, Any]"], max_rows: int = MAX_ROWS,
                     lo: float = LO, hi: float = HI) -> dict[str, Any]:
    """No privacy: keep the first ``max_rows`` rows of each (person, department) in table
    order through a stable sort, then per-department count and sum with ``bincount``.

    Returns
    -------
    dict
        ``seconds`` (all), ``bounding_seconds`` (the sort and the filter), ``released``
        (department -> mean).
    """
    t0 = time.perf_counter()
    dept = np.asarray(table["dept"])
    span = int(dept.max()) + 1
    key = np.asarray(table["user_id"]) * span + dept       # fits int64: 1e8 people x 1e6 depts
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(key)]))
    kept = order[np.arange(len(key)) - run_start < max_rows]
    t1 = time.perf_counter()
    d = dept[kept]
    count = np.bincount(d, minlength=span)
    total = np.bincount(d, weights=np.clip(table["salary"][kept], lo, hi), minlength=span)
    present = np.flatnonzero(count)
    released = dict(zip(present.tolist(), (total[present] / count[present]).tolist()))
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "bounding_seconds": t1 - t0, "released": released}


def bounded_median_error(table: Mapping[str, "np.ndarray[Any, Any]"],
                         max_rows: int = MAX_ROWS, draws: int = 5,
                         seed: int = 0) -> dict[str, Any]:
    """No privacy: the median of the salaries when each person keeps ``max_rows`` of their
    rows chosen uniformly at random (numpy's generator: a baseline, not a release), against
    the whole table's. Any release that bounds each person's rows this way carries this
    error before any noise: it is what the bounding leaves.

    Returns
    -------
    dict
        ``error`` (mean relative error over ``draws`` draws) and ``worst``.
    """
    salary, person = np.asarray(table["salary"]), np.asarray(table["user_id"])
    true = float(np.median(salary))
    gen = np.random.default_rng(seed)
    rows = np.bincount(person)
    first = np.repeat(np.cumsum(rows) - rows, rows)    # each sorted row's person's start
    errors = []
    for _ in range(draws):
        order = np.lexsort((gen.random(person.size), person))
        kept = order[np.arange(person.size) - first < max_rows]
        errors.append(abs(float(np.median(salary[kept])) / true - 1.0))
    return {"error": float(np.mean(errors)), "worst": float(np.max(errors)), "draws": draws,
            "max_rows": max_rows}


# ---------------------------------------------------------------------------------------------
# The child process: one library, one task
# ---------------------------------------------------------------------------------------------

def percentiles(table: Mapping[str, "np.ndarray[Any, Any]"], repeats: int = 5,
                seed: int = 0) -> list[dict[str, Any]]:
    """The 99 percentiles of the salaries at epsilon 1, each person's rows bounded to
    :data:`MAX_ROWS`, by dpfast's recursion (``method="recursive"``) and as 99 separate
    exponential mechanisms at epsilon / 99 (``"independent"``): mean absolute relative
    error against the whole table's percentiles, mean over ``repeats`` releases, and the
    median time (in this process)."""
    import dpfast as dp
    levels = np.arange(1, 100) / 100.0
    true = np.quantile(table["salary"], levels)
    out = []
    for method in ("recursive", "independent"):
        errors, times = [], []
        for r in range(repeats):
            t0 = time.perf_counter()
            got = dp.quantiles(table["salary"], levels, bounds=(LO, HI), epsilon=EPSILON,
                               privacy_unit=table["user_id"], max_rows=MAX_ROWS,
                               method=method, rng=seed + r)
            times.append(time.perf_counter() - t0)
            errors.append(float(np.mean(np.abs(got / true - 1.0))))
        out.append({"method": method, "error": float(np.mean(errors)),
                    "worst": float(np.max(errors)), "seconds": float(np.median(times)),
                    "repeats": repeats})
    return out


def _rss_mib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # KiB on Linux


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


# What a runner's setup returns: the library's description, the timed computation, and the
# loader (path -> the library's input). A runner is setup(path, options).
_Setup = tuple[dict[str, Any], Callable[[Any], Any], Callable[[str], Any]]
_Runner = Callable[[str, Mapping[str, Any]], _Setup]


class Skip(Exception):
    """A library that cannot run this task here; the message is the reason."""


def _load_numpy(path: str) -> dict[str, "np.ndarray[Any, Any]"]:
    return read_parquet(path)


def _warm_up(compute: Callable[[Any], Any]) -> None:
    """One call on a small table before the timed one: imports (pandas, for the output
    frame), the thread pool and first-call costs are not the release's (the peers' setup
    imports their modules likewise)."""
    compute(make_table(rows=20_000, people=2_000, departments=100, seed=1))


def _dpfast_grouped(path: str, options: Mapping[str, Any]) -> _Setup:
    import dpfast as dp
    group_by: Any = dp.group_by

    def compute(frame: Any) -> Any:
        # The process's default accountant has no delta to spend (epsilon=inf, delta=0):
        # the release gets a budget of exactly what it spends, as a user's would.
        budget = {"accountant": dp.Accountant(epsilon=EPSILON, delta=DELTA)}
        out = group_by(frame, "dept", privacy_unit="user_id", max_groups=MAX_GROUPS,
                       max_rows=MAX_ROWS).agg(
            n="count", total=("salary", "sum"), avg=("salary", "mean"),
            bounds={"salary": (LO, HI)}, epsilon=EPSILON, delta=DELTA, **budget)
        return {"keys": np.asarray(out.index, dtype=np.int64),
                "means": np.asarray(out["avg"], dtype=np.float64)}
    _warm_up(compute)
    return {"library": "dpfast", "version": dp.__version__}, compute, _load_numpy


def _dpfast_ungrouped(task: str, max_rows: int = MAX_ROWS) -> _Runner:
    """dpfast's median or mean; ``max_rows`` above the table's 20 rows a person keeps every
    row (the error is then the mechanism's alone, not the bounding's)."""
    def setup(path: str, options: Mapping[str, Any]) -> _Setup:
        import dpfast as dp
        fn = getattr(dp, task)

        def compute(frame: Any) -> Any:
            value = fn(frame["salary"], bounds=(LO, HI), epsilon=EPSILON,
                       privacy_unit=frame["user_id"], max_rows=max_rows)
            return {"value": float(value)}
        _warm_up(compute)
        note = {} if max_rows == MAX_ROWS else \
            {"note": f"max_rows {max_rows}: every row kept (people have 1-20 rows)"}
        return {"library": "dpfast", "version": dp.__version__, **note}, compute, _load_numpy
    return setup


def _pipeline_dp_rows(path: str) -> Any:
    # PipelineDP's local backend takes an iterable of rows: building them is loading.
    t = read_parquet(path)
    return list(zip(t["user_id"].tolist(), t["dept"].tolist(), t["salary"].tolist()))


def _pipeline_dp(task: str) -> _Runner:
    def setup(path: str, options: Mapping[str, Any]) -> _Setup:
        try:
            pdp = importlib.import_module("pipeline_dp")
        except Exception as e:
            raise Skip(f"pipeline_dp not importable ({type(e).__name__})")

        def compute(rows: Any) -> Any:
            accountant = pdp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=DELTA)
            engine = pdp.DPEngine(accountant, pdp.LocalBackend())
            if task == "grouped":
                metrics = [pdp.Metrics.COUNT, pdp.Metrics.SUM, pdp.Metrics.MEAN]
                partition = (lambda r: r[1])
                public = None
            else:
                metrics = [pdp.Metrics.PERCENTILE(50) if task == "median" else pdp.Metrics.MEAN]
                partition = (lambda r: 0)
                public = [0]
            params = pdp.AggregateParams(
                metrics=metrics, noise_kind=pdp.NoiseKind.LAPLACE,
                max_partitions_contributed=MAX_GROUPS, max_contributions_per_partition=MAX_ROWS,
                min_value=LO, max_value=HI)
            extractors = pdp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                            partition_extractor=partition,
                                            value_extractor=lambda r: r[2])
            result = engine.aggregate(rows, params, extractors, public_partitions=public)
            accountant.compute_budgets()
            out = list(result)
            if task == "grouped":
                return {"keys": np.array([k for k, _ in out], dtype=np.int64),
                        "means": np.array([m.mean for _, m in out], dtype=np.float64)}
            (_, m), = out
            return {"value": float(m.percentile_50 if task == "median" else m.mean)}
        return ({"library": "PipelineDP", "version": _version("pipeline-dp"),
                 "note": "local backend"}, compute, _pipeline_dp_rows)
    return setup


def _opendp_frame(path: str) -> Any:
    pl = importlib.import_module("polars")
    return pl.read_parquet(path).lazy()


def _opendp(task: str, integer: bool = True) -> _Runner:
    """OpenDP's polars API. Grouped sums of floats carry a term quadratic in the margin's
    ``max_length`` (a public bound on a group's length; the only one known without looking at
    the data is the table's size, 10^7, which makes the sum's noise scale 2.9e9): with
    ``integer`` the salaries are cast to integers first, as an OpenDP user would, and the
    scale is 1.2e7."""
    def setup(path: str, options: Mapping[str, Any]) -> _Setup:
        try:
            dp = importlib.import_module("opendp.prelude")
            pl = importlib.import_module("polars")
        except Exception as e:
            raise Skip(f"opendp or polars not importable ({type(e).__name__}: {e})")
        dp.enable_features("contrib")

        def compute(lf: Any) -> Any:
            # Public bounds OpenDP asks for when the keys are private: a group's length (the
            # table's size, a parameter of the benchmark) and the number of groups (the size
            # of the departments' domain).
            rows, groups = options["rows"], options["departments"]
            if task == "grouped":
                bounds = (int(LO), int(HI)) if integer else (LO, HI)
                context = dp.Context.compositor(
                    data=lf,
                    privacy_unit=dp.unit_of(contributions=1, identifier="user_id"),
                    privacy_loss=dp.loss_of(epsilon=EPSILON, delta=DELTA),
                    split_evenly_over=1,
                    margins=[dp.polars.Margin(by=["dept"], max_length=rows,
                                              max_groups=groups)])
                query = (context.query()
                         .truncate_per_group(MAX_ROWS, by=["dept"])
                         .truncate_num_groups(_OPENDP_NUM_GROUPS_K, by=["dept"], keep="first")
                         .with_columns(pl.col("salary").cast(pl.Int64 if integer else
                                                             pl.Float64))
                         .group_by("dept")
                         .agg(dp.len(), pl.col("salary").dp.sum(bounds).alias("total"),
                              pl.col("salary").dp.mean(bounds).alias("avg")))
                out = query.release().collect()
                return {"keys": out["dept"].to_numpy().astype(np.int64),
                        "means": out["avg"].to_numpy().astype(np.float64)}
            context = dp.Context.compositor(
                data=lf,
                privacy_unit=dp.unit_of(contributions=1, identifier="user_id"),
                privacy_loss=dp.loss_of(epsilon=EPSILON,
                                        delta=0.0 if task == "median" else DELTA),
                split_evenly_over=1,
                margins=[dp.polars.Margin(max_length=rows)])
            query = context.query().truncate_per_group(MAX_ROWS)
            if task == "median":
                candidates = np.linspace(LO, HI, 1000).tolist()
                query = query.select(pl.col("salary").dp.median(candidates))
            else:
                query = query.select(pl.col("salary").dp.mean((LO, HI)))
            return {"value": float(query.release().collect().item())}
        version = _version("opendp")
        note = {"grouped": _OPENDP_NOTE + ("; salaries cast to integers" if integer else
                                           "; float salaries, max_length = rows"),
                "median": "polars; 1,000 evenly spaced candidates", "mean": "polars"}[task]
        return ({"library": "OpenDP", "version": version, "note": note}, compute,
                _opendp_frame)
    return setup


# OpenDP (0.14 to 0.16) truncate_num_groups(k) keeps the groups of rank < k with dense ranks
# from 1, so k - 1 groups per person, while its accounting charges for k groups: k = 1 keeps
# no row at all. Asking for 2 keeps the one group each person has and pays for two. Its
# keep="sample" fails on polars 1.36 (a struct of a struct with duplicate field names), so
# "first" (the smallest department key) it is; every person here has one department anyway.
_OPENDP_NUM_GROUPS_K = 2
_OPENDP_NOTE = "polars; truncate_num_groups(2) to keep 1 group, charged for 2"


def _diffprivlib(task: str) -> _Runner:
    def setup(path: str, options: Mapping[str, Any]) -> _Setup:
        try:
            tools = importlib.import_module("diffprivlib.tools")
        except Exception as e:
            raise Skip(f"diffprivlib not importable ({type(e).__name__})")
        fn = tools.median if task == "median" else tools.mean

        def compute(t: Any) -> Any:
            return {"value": float(fn(t["salary"], epsilon=EPSILON, bounds=(LO, HI)))}
        return ({"library": "diffprivlib", "version": _version("diffprivlib"),
                 "note": "no per-person bounding: a row is a person"}, compute, _load_numpy)
    return setup


def _pydp(task: str) -> _Runner:
    def setup(path: str, options: Mapping[str, Any]) -> _Setup:
        try:
            lap = importlib.import_module("pydp.algorithms.laplacian")
        except Exception as e:
            raise Skip(f"pydp not importable ({type(e).__name__})")
        info = {"library": "PyDP", "version": _version("python-dp"),
                "note": "no per-person bounding: a row is a person"}

        def compute(t: Any) -> Any:
            values = t["salary"]
            n = len(values)
            sub = values[:PYDP_CAP].tolist()
            if task == "median":
                algo = lap.Median(epsilon=EPSILON, lower_bound=LO, upper_bound=HI,
                                  dtype="float")
            else:
                algo = lap.BoundedMean(epsilon=EPSILON, lower_bound=LO, upper_bound=HI,
                                       dtype="float")
            value = float(algo.quick_result(sub))
            return {"value": value, "measured_rows": len(sub), "rows": n}
        return info, compute, _load_numpy
    return setup


def _tumult(task: str) -> _Runner:
    """Tumult Analytics on Spark (``local[2]``, this machine's two cores): the departments
    selected by ``get_groups`` (a quarter of epsilon and all of delta), then the count, sum
    and average of each at a quarter each, every query after ``MaxGroupsPerID`` and
    ``MaxRowsPerGroupPerID``. Tumult pins numpy 1 and pyspark 3.5: install it apart, with
    ``pip install --target DIR tmlt.analytics`` (``run(tumult_path=DIR)``)."""
    def setup(path: str, options: Mapping[str, Any]) -> _Setup:
        import shutil
        if shutil.which("java") is None:
            raise Skip("no Java runtime for Spark")
        try:
            ta = importlib.import_module("tmlt.analytics")
            sql = importlib.import_module("pyspark.sql")
        except Exception as e:
            raise Skip(f"tmlt.analytics not importable ({type(e).__name__}; install it apart: "
                       "pip install --target DIR tmlt.analytics, then --tumult DIR)")
        spark = (sql.SparkSession.builder.master("local[2]").appName("dpfast-bench")
                 .config("spark.driver.memory", "12g").config("spark.ui.enabled", "false")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")

        def compute(df: Any) -> Any:
            session = ta.Session.from_dataframe(
                privacy_budget=ta.ApproxDPBudget(EPSILON, DELTA), source_id="people",
                dataframe=df, protected_change=ta.AddRowsWithID("user_id"))
            quarter = EPSILON / 4.0

            def bounded() -> Any:
                return (ta.QueryBuilder("people").enforce(ta.MaxGroupsPerID("dept", MAX_GROUPS))
                        .enforce(ta.MaxRowsPerGroupPerID("dept", MAX_ROWS)))
            groups = session.evaluate(bounded().get_groups(["dept"]),
                                      ta.ApproxDPBudget(quarter, DELTA))
            keys = ta.KeySet.from_dataframe(groups)
            answers = [session.evaluate(q, ta.PureDPBudget(quarter)) for q in (
                bounded().groupby(keys).count(),
                bounded().groupby(keys).sum("salary", LO, HI),
                bounded().groupby(keys).average("salary", LO, HI))]
            avg = answers[2].toPandas()
            return {"keys": avg["dept"].to_numpy(dtype=np.int64),
                    "means": avg.iloc[:, -1].to_numpy(dtype=np.float64)}
        return ({"library": "Tumult Analytics", "version": _version("tmlt.analytics"),
                 "note": "Spark local[2]; get_groups, then count, sum and average; the time "
                         "includes Spark reading the file",
                 "memory_not_measured": "Spark's JVM, outside the child's Python process"},
                compute, spark.read.parquet)
    return setup


_RUNNERS: dict[tuple[str, str], _Runner] = {
    ("dpfast", "grouped"): _dpfast_grouped,
    ("dpfast", "median"): _dpfast_ungrouped("median"),
    ("dpfast", "mean"): _dpfast_ungrouped("mean"),
    ("dpfast, every row", "median"): _dpfast_ungrouped("median", MAX_ROWS_PER_PERSON),
    ("PipelineDP", "grouped"): _pipeline_dp("grouped"),
    ("PipelineDP", "median"): _pipeline_dp("median"),
    ("PipelineDP", "mean"): _pipeline_dp("mean"),
    ("OpenDP", "grouped"): _opendp("grouped"),
    ("OpenDP float", "grouped"): _opendp("grouped", integer=False),
    ("OpenDP", "median"): _opendp("median"),
    ("OpenDP", "mean"): _opendp("mean"),
    ("Tumult Analytics", "grouped"): _tumult("grouped"),
    ("diffprivlib", "median"): _diffprivlib("median"),
    ("diffprivlib", "mean"): _diffprivlib("mean"),
    ("PyDP", "median"): _pydp("median"),
    ("PyDP", "mean"): _pydp("mean"),
}


def child_main(library: str, task: str, path: str, out: str, options: str = "{}") -> None:
    """What the child process runs: set up the library, load the table, compute, and write
    the result (JSON, plus the released keys and means as ``.npz`` for grouped tasks) next to
    ``out``. Not for direct use: :func:`run_peer` starts it."""
    result: dict[str, Any] = {"library": library, "task": task, "cwd": os.getcwd()}
    try:
        info, compute, load = _RUNNERS[(library, task)](path, json.loads(options))
        result.update(info)
        t0 = time.perf_counter()
        data = load(path)
        result["load_seconds"] = time.perf_counter() - t0
        result["load_rss_mib"] = _rss_mib()
        calls = DPFAST_CALLS if library.startswith("dpfast") else 1
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            released = compute(data)
            times.append(time.perf_counter() - t0)
        result["seconds"] = float(np.median(times))
        result["first_seconds"] = times[0]
        result["peak_rss_mib"] = _rss_mib()
        if "keys" in released:
            np.savez(out + ".npz", keys=released.pop("keys"), means=released.pop("means"))
        result.update(released)
    except Skip as e:
        result["skipped"] = str(e)
    except Exception as e:        # a peer's failure is a row of the report, not a crash
        result["failed"] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
    with open(out, "w") as f:
        json.dump(result, f)


def run_peer(library: str, task: str, path: str, timeout: float = TIMEOUT,
             options: Optional[Mapping[str, Any]] = None,
             pythonpath: Optional[str] = None) -> dict[str, Any]:
    """Run one library on one task in a child process and collect what it reported.

    Parameters
    ----------
    library : str
        A name from :data:`GROUPED` or :data:`UNGROUPED`.
    task : {"grouped", "median", "mean"}
    path : str
        The Parquet file of the table.
    timeout : float
        Seconds before the child (and its process group) is killed.
    options : mapping, optional
        Public parameters of the table the child may use: ``rows`` and ``departments``.
    pythonpath : str, optional
        A directory put first on the child's ``sys.path`` (e.g. the polars version an OpenDP
        build was made against, installed there with ``pip install --target``).

    Returns
    -------
    dict
        ``library``, ``task`` and either ``skipped`` / ``failed`` (the reason) or ``version``,
        ``seconds``, ``load_seconds``, ``load_rss_mib``, ``peak_rss_mib``, ``note`` and, for
        grouped tasks, ``released_means`` (department -> mean), for ungrouped ``value``.
    """
    if (library, task) not in _RUNNERS:
        return {"library": library, "task": task, "skipped": "no such task for this library"}
    path = os.path.abspath(path)                 # the child runs elsewhere (below)
    scratch = tempfile.mkdtemp(prefix="dpfast-records-child-")
    out = os.path.join(scratch, "result.json")
    code = ("import sys; from dpfast.benchmarks.records import child_main; "
            "child_main(*sys.argv[1:])")
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.path.abspath(pythonpath), env.get("PYTHONPATH")) if p)
    # The child works in the scratch directory: whatever a library writes where it runs
    # (Spark's warehouse of temporary tables, logs) goes there and is removed with it.
    proc = subprocess.Popen([sys.executable, "-c", code, library, task, path, out,
                             json.dumps(dict(options or {}))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env=env, cwd=scratch)
    try:
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)     # the group this call started, no other
            proc.communicate()
            return {"library": library, "task": task, "failed": f"timed out after {timeout:g} s"}
        if not os.path.exists(out):
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
            return {"library": library, "task": task,
                    "failed": f"child exited with code {proc.returncode}: {tail[0][:300]}"}
        with open(out) as f:
            result: dict[str, Any] = json.load(f)
        if os.path.exists(out + ".npz"):
            with np.load(out + ".npz") as z:
                result["released_means"] = dict(zip(z["keys"].tolist(), z["means"].tolist()))
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)   # made by mkdtemp above, ours alone


# ---------------------------------------------------------------------------------------------
# The whole benchmark
# ---------------------------------------------------------------------------------------------

def _score(result: dict[str, Any], true: Mapping[str, Any]) -> dict[str, Any]:
    """Add the error (and departments released) to a child's result."""
    if "skipped" in result or "failed" in result:
        return result
    if result["task"] == "grouped":
        released = result.pop("released_means")
        result["released"] = released_count(released, true)
        result["spurious"] = spurious_count(released, true)
        result["error"] = mean_error(released, true)
    else:
        target = true["median"] if result["task"] == "median" else true["overall_mean"]
        result["error"] = relative_error(result["value"], target)
        measured = result.get("measured_rows")
        if measured is not None and measured < result["rows"]:
            result["measured_seconds"] = result["seconds"]
            result["seconds"] = result["seconds"] * result["rows"] / measured
            result["note"] = (result.get("note", "") + f"; measured on the first {measured:,} "
                              f"rows, time extrapolated linearly").lstrip("; ")
    return result


def _combine(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Repeats of one (library, task): median seconds, mean error and released count."""
    ok = [r for r in results if "skipped" not in r and "failed" not in r]
    if not ok:
        return results[0]
    out = dict(ok[0])
    for key in ("seconds", "first_seconds", "load_seconds", "peak_rss_mib", "load_rss_mib"):
        if key in out:
            out[key] = float(np.median([r[key] for r in ok]))
    for key in ("error", "released"):
        if key in out:
            out[key] = float(np.mean([r[key] for r in ok]))
    out["repeats"] = len(ok)
    return out


def run(rows: int = 10**7, peers: bool = True, timeout: float = TIMEOUT, repeats: int = 1,
        people: Optional[int] = None, departments: int = 10**4, seed: int = 0,
        libraries: Optional[Sequence[str]] = None, opendp_path: Optional[str] = None,
        tumult_path: Optional[str] = None,
        progress: Optional[Callable[[str], None]] = None) -> dict[str, Any]:
    """Generate the table, write it to Parquet in a temporary directory, run the no-privacy
    baseline, dpfast and (with ``peers``) every peer library on every task, and score them.

    Parameters
    ----------
    rows : int
        Rows of the table.
    peers : bool
        Run the other libraries too (dpfast and the baseline always run).
    timeout : float
        Seconds each child may take.
    repeats : int
        Runs of each (library, task); times are medians, errors and counts means (dpfast,
        whose calls take a second, makes :data:`DPFAST_CALLS` calls in each run: the median
        is its time, the first call's is reported beside it).
    people : int, optional
        Default ``rows // 10``.
    departments, seed : int
        As for :func:`make_table`.
    libraries : sequence of str, optional
        Only these libraries (names as in :data:`GROUPED` / :data:`UNGROUPED`).
    opendp_path : str, optional
        A directory holding the polars version OpenDP was built against (OpenDP's polars
        plugin refuses any other: 0.16 wants polars 1.36.1), put first on the OpenDP child's
        path: ``pip install --target DIR polars==1.36.1``.
    progress : callable, optional
        Called with a line of text as each child finishes.

    Returns
    -------
    dict
        ``machine``, ``rows``, ``people``, ``departments``, ``present`` (departments with rows),
        ``baseline``, ``grouped`` and ``ungrouped`` (lists of result dicts, see
        :func:`run_peer`; ``seconds`` excludes loading).
    """
    rows = check_positive_int(rows, "rows")
    repeats = check_positive_int(repeats, "repeats")
    people = rows // 10 if people is None else check_positive_int(people, "people")
    table = make_table(rows, people, departments, seed)
    true = truth(table)
    say = progress or (lambda line: None)
    report: dict[str, Any] = {"machine": machine_info(), "rows": rows, "people": people,
                              "departments": departments, "present": int(len(true["dept"])),
                              "true_median": true["median"], "true_mean": true["overall_mean"],
                              "epsilon": EPSILON, "delta": DELTA, "max_groups": MAX_GROUPS,
                              "max_rows": MAX_ROWS, "bounds": (LO, HI)}
    load_start = os.getloadavg()[0]
    base = bounded_baseline(table)
    released = base.pop("released")
    base.update(library="no privacy", released=released_count(released, true),
                error=mean_error(released, true))
    t0 = time.perf_counter()
    np.median(table["salary"])
    base["median_seconds"] = time.perf_counter() - t0
    base["median_bounded"] = bounded_median_error(table)
    report["baseline"] = base
    report["percentiles"] = percentiles(table, repeats=max(repeats, 5))
    from . import quantiles
    report["joint"] = [r for m in (9, 99)
                       for r in quantiles.compare(table, rows=JOINT_ROWS, m=m,
                                                  repeats=max(repeats, 5))]
    say("dpfast percentiles: " + ", ".join(f"{r['method']} {r['error']:.2g}"
                                           for r in report["percentiles"]))
    say(f"no privacy: {base['seconds']:.2f} s")

    wanted = set(libraries) if libraries is not None else None
    scratch = tempfile.mkdtemp(prefix="dpfast-records-")
    try:
        path = os.path.join(scratch, "table.parquet")
        write_parquet(table, path)
        del table
        options = {"rows": rows, "departments": departments}
        for task, names in (("grouped", GROUPED), ("median", UNGROUPED), ("mean", UNGROUPED)):
            results = []
            for name in names:
                family = name.split(",")[0].split()[0]          # "OpenDP float" -> OpenDP
                if (not peers and family != "dpfast") or (
                        wanted is not None and family not in wanted):
                    continue
                if (name, task) not in _RUNNERS:
                    continue
                extra = opendp_path if name.startswith("OpenDP") else \
                    tumult_path if name.startswith("Tumult") else None
                reps = [_score(run_peer(name, task, path, timeout, options, extra), true)
                        for _ in range(repeats)]
                r = _combine(reps)
                results.append(r)
                say(_progress_line(r))
            report.setdefault("grouped" if task == "grouped" else "ungrouped", []).extend(results)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)    # made by mkdtemp above, ours alone
    report["load_average"] = (load_start, os.getloadavg()[0])
    return report


def _progress_line(r: Mapping[str, Any]) -> str:
    head = f"{r['library']} {r['task']}" + (f" ({r['note']})" if r.get("note") else "")
    if "skipped" in r:
        return f"{head}: skipped ({r['skipped']})"
    if "failed" in r:
        return f"{head}: failed ({r['failed']})"
    return (f"{head}: {r['seconds']:.2f} s (+{r['load_seconds']:.1f} s loading), error "
            f"{r['error']:.3g}, peak {r['peak_rss_mib']:.0f} MiB")


def _rows_label(rows: int) -> str:
    exponent = int(round(np.log10(rows)))
    if 10**exponent == rows:
        return "10" + str(exponent).translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))
    return f"{rows:,}"


def _memory(r: Mapping[str, Any]) -> str:
    if r.get("memory_not_measured"):
        return f"— ({r['memory_not_measured']})"
    peak, load = r["peak_rss_mib"], r["load_rss_mib"]
    return f"{peak / 1024:.2f} GiB (+{(peak - load) / 1024:.2f} GiB over the loaded data)"


def _time(r: Mapping[str, Any], loading: bool = True) -> str:
    """A run's time: the median of its calls (the first call's beside it when there were
    several), and its loading time."""
    text = f"{r['seconds']:.2f} s"
    parts = []
    if r.get("first_seconds") is not None and library_calls(r) > 1:
        parts.append(f"first call {r['first_seconds']:.2f} s")
    if loading:
        parts.append(f"loading {r['load_seconds']:.1f} s")
    return text + (f" ({'; '.join(parts)})" if parts else "")


def library_calls(r: Mapping[str, Any]) -> int:
    return DPFAST_CALLS if str(r.get("library", "")).startswith("dpfast") else 1


def _name(r: Mapping[str, Any]) -> str:
    version = f" {r['version']}" if r.get("version") else ""
    note = f" ({r['note']})" if r.get("note") else ""
    return f"{r['library']}{version}{note}"


def to_markdown(report: Mapping[str, Any]) -> str:
    """The report as the issue's tables: grouped, then the ungrouped median and mean."""
    label = _rows_label(report["rows"])
    load = report.get("load_average")
    busy = (f" Load average (1 min) {load[0]:.1f} at the start, {load[1]:.1f} at the end: "
            f"the machine is shared, and a load above its {report['machine']['cores']} cores "
            f"inflates the times."
            if load else "")
    lines = [f"Machine: {machine_line(report['machine'])}.{busy}", "",
             f"Table: {report['rows']:,} rows, {report['people']:,} people with 1-20 rows "
             f"each, {report['departments']:,} Zipf-distributed departments, log-normal "
             f"salaries clamped to [0, 300 000]; epsilon = {report['epsilon']:g}, delta = "
             f"{report['delta']:g}, at most {report['max_groups']} department and "
             f"{report['max_rows']} rows per person. Times exclude loading the Parquet file "
             f"(shown apart); each library runs in its own process.", "",
             f"| library (version) | time, {label} rows | departments released (of "
             f"{report['present']:,} present) | error on the 1,000 largest departments* | "
             f"peak memory |", "|---|---|---|---|---|"]
    skipped = []
    for r in report.get("grouped", []):
        if "skipped" in r or "failed" in r:
            skipped.append(r)
            continue
        spurious = f" ({r['spurious']:,.0f} with no record!)" if r.get("spurious") else ""
        lines.append(f"| {_name(r)} | {_time(r)} | {r['released']:,.0f}{spurious} | "
                     f"{r['error']:.3g} | {_memory(r)} |")
    b = report["baseline"]
    lines.append(f"| no privacy: numpy bounding (stable sort) + `bincount` | {b['seconds']:.2f} s"
                 f" (bounding {b['bounding_seconds']:.2f} s) | {b['released']:,} | "
                 f"{b['error']:.3g} | — |")
    lines += ["", "\\* mean absolute relative error of the per-department mean against the "
              "whole table's (no bounding); a department not released counts as 1. The "
              "no-privacy row's error is the contribution bounding's own (rows dropped). Peak "
              "memory: the child's peak resident set, and how much it grew after loading. "
              f"dpfast's time is the median of {DPFAST_CALLS} calls in its process (a second "
              "each at most); the first call's is beside it: it also pays for the memory the "
              "process touches for the first time.", ""]
    lines += [f"Overall median and mean of the {report['rows']:,} salaries, each person's rows "
              f"bounded to {report['max_rows']} where the library can (true median "
              f"{report['true_median']:.1f}, mean {report['true_mean']:.1f}; `np.median` takes "
              f"{b['median_seconds']:.3f} s):", "",
              "| library (version) | statistic | time | relative error | peak memory |",
              "|---|---|---|---|---|"]
    for r in report.get("ungrouped", []):
        if "skipped" in r or "failed" in r:
            skipped.append(r)
            continue
        lines.append(f"| {_name(r)} | {r['task']} | {_time(r, loading=False)} | "
                     f"{r['error']:.3g} | {_memory(r)} |")
    mb = b.get("median_bounded")
    if mb:
        lines.append(f"| no privacy: {mb['max_rows']} rows a person kept uniformly at random "
                     f"(the bounding alone; mean of {mb['draws']} draws, worst "
                     f"{mb['worst']:.2g}) | median | — | {mb['error']:.3g} | — |")
    if report.get("percentiles"):
        lines += ["", f"The 99 percentiles of the salaries at epsilon {report['epsilon']:g}, "
                  f"each person's rows bounded to {report['max_rows']} (dpfast, in one "
                  "process; mean absolute relative error over the 99 against the whole "
                  "table's, mean of "
                  f"{report['percentiles'][0]['repeats']} releases):", "",
                  "| method | error | worst release | time (median) |", "|---|---|---|---|"]
        for r in report["percentiles"]:
            label = ("Kaplan et al.'s recursion, epsilon / 7 per level" if r["method"] ==
                     "recursive" else "99 separate exponential mechanisms, epsilon / 99 each")
            lines.append(f"| {label} | {r['error']:.3g} | {r['worst']:.3g} | "
                         f"{r['seconds']:.2f} s |")
    if report.get("joint"):
        j = report["joint"]
        lines += ["", f"The three methods on {j[0]['rows']:,} salaries drawn from the table "
                  "(each row a person, epsilon "
                  f"{report['epsilon']:g}; the levels 1/(m+1) .. m/(m+1); error against the "
                  f"sample's own quantiles, mean of {j[0]['repeats']} releases; JointExp "
                  "built for this comparison, `dpfast.benchmarks.quantiles`):", "",
                  "| quantiles | method | error | worst release | time (median) |",
                  "|---|---|---|---|---|"]
        names = {"joint": "JointExp (Gillenwater et al.), one draw of all m",
                 "recursive": "Kaplan et al.'s recursion (`dp.quantiles`' default)",
                 "independent": "m separate exponential mechanisms, epsilon / m each"}
        for r in j:
            lines.append(f"| {r['m']} | {names[r['method']]} | {r['error']:.3g} | "
                         f"{r['worst']:.3g} | {r['seconds']:.3g} s |")
    if skipped:
        lines += ["", "Not measured:"]
        for r in skipped:
            reason = r.get("skipped") or r.get("failed")
            lines.append(f"- {r['library']} ({r['task']}): {reason}")
    return "\n".join(lines) + "\n"
