"""The whole records benchmark: the table written once, the baselines, dpfast and every peer
run on every task (repeated), each result scored against the truth."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ..core import check_positive_int, machine_info
from .peers import RUNNERS, run_peer
from .report import progress_line
from .table import (DELTA, EPSILON, GROUPED, HI, JOINT_ROWS, LO, MAX_GROUPS,
                    MAX_ROWS, TIMEOUT, UNGROUPED, bounded_baseline, bounded_median_error,
                    make_table, mean_error, percentiles, relative_error, released_count,
                    spurious_count, truth, write_parquet)

__all__ = ["run"]


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
        whose calls take a second, makes
        :data:`~dpfast.benchmarks.records.table.DPFAST_CALLS` calls in each run: the median is
        its time, the first call's is reported beside it).
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
    from .. import quantiles
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
                if (name, task) not in RUNNERS:
                    continue
                extra = opendp_path if name.startswith("OpenDP") else \
                    tumult_path if name.startswith("Tumult") else None
                reps = [_score(run_peer(name, task, path, timeout, options, extra), true)
                        for _ in range(repeats)]
                r = _combine(reps)
                results.append(r)
                say(progress_line(r))
            report.setdefault("grouped" if task == "grouped" else "ungrouped", []).extend(results)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)    # made by mkdtemp above, ours alone
    report["load_average"] = (load_start, os.getloadavg()[0])
    return report
