"""The report of the records benchmark: a line per finished child, and the tables in
Markdown (grouped, then the ungrouped median and mean)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..core import machine_line
from .table import DPFAST_CALLS

__all__ = ["progress_line", "library_calls", "to_markdown"]


def progress_line(r: Mapping[str, Any]) -> str:
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
