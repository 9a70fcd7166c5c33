"""One library's run of one task of the records benchmark in a child process: the runner of
each library (its setup, the timed computation and its loader), what the child runs
(:func:`child_main`), and the parent's side (:func:`run_peer`: timeout, process group,
scratch directory)."""
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
from typing import Any, Callable, Mapping, Optional

import numpy as np

from .table import (DELTA, DPFAST_CALLS, EPSILON, HI, LO, MAX_GROUPS, MAX_ROWS,
                    MAX_ROWS_PER_PERSON, PYDP_CAP, TIMEOUT, make_table, read_parquet)

__all__ = ["Skip", "RUNNERS", "child_main", "run_peer"]


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


RUNNERS: dict[tuple[str, str], _Runner] = {
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
        info, compute, load = RUNNERS[(library, task)](path, json.loads(options))
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
    if (library, task) not in RUNNERS:
        return {"library": library, "task": task, "skipped": "no such task for this library"}
    path = os.path.abspath(path)                 # the child runs elsewhere (below)
    scratch = tempfile.mkdtemp(prefix="dpfast-records-child-")
    out = os.path.join(scratch, "result.json")
    code = ("import sys; from dpfast.benchmarks.records.peers import child_main; "
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
