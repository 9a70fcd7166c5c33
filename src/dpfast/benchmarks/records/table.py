"""The table of the records benchmark and its metrics: the common parameters of every run,
the seeded table of salaries (:func:`make_table`), its Parquet file, the truth it is scored
against, the errors of a release, and the no-privacy baselines of contribution bounding."""
from __future__ import annotations

import importlib
import importlib.metadata
import time
from typing import Any, Mapping

import numpy as np

from ..core import check_positive_int

__all__ = ["EPSILON", "DELTA", "MAX_GROUPS", "MAX_ROWS", "LO", "HI", "MEDIAN_SALARY", "SIGMA",
           "MAX_ROWS_PER_PERSON", "JOINT_ROWS", "LARGEST", "TIMEOUT", "DPFAST_CALLS",
           "GROUPED", "UNGROUPED", "PYDP_CAP", "make_table", "write_parquet", "read_parquet",
           "truth", "largest", "mean_error", "released_count", "spurious_count",
           "relative_error", "bounded_baseline", "bounded_median_error", "percentiles"]

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
    from ...tables import ParquetColumns
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
