"""The whole linear-query benchmark (:func:`run`) and its report in Markdown."""
from __future__ import annotations

from typing import Any

from .marginals import marginal_tables
from .models import graphical_tables, wide_table
from .ranges import hierarchy_speed, ranges, tree_speed

__all__ = ["run", "to_markdown", "graphical_markdown", "wide_markdown"]


def run(quick: bool = False, libraries: bool = True,
        peer: str | None = None) -> dict[str, Any]:
    """Every linear-query benchmark (small sizes, and no MWEM or peer synthesizers, with
    quick); ``peer``: private-pgm's directory for the graphical-model table."""
    sizes = (2**8, 2**10) if quick else (2**10, 2**16, 2**20)
    runs = {2**8: 5, 2**10: 5} if quick else {2**10: 200, 2**16: 10, 2**20: 3}
    marg = marginal_tables(2, seeds=2 if quick else 10, rounds=20, mwem=not quick,
                           peers=libraries and not quick, mwem_seeds=2)
    marg += marginal_tables(3, seeds=2 if quick else 5, mwem=False)
    graphical = graphical_tables((1.0,) if quick else (0.3, 1.0, 3.0), 1 if quick else 3,
                                 peer=peer if libraries and not quick else None)
    wide = [] if quick else wide_table(peer=peer if libraries else None)
    return {"ranges": ranges(sizes, runs=runs, libraries=libraries), "marginals": marg,
            "graphical": graphical, "wide": wide,
            "tree": tree_speed(2**16 if quick else 2**24, 2 if quick else 5),
            "hierarchy": hierarchy_speed(10**5 if quick else 10**7, 2 if quick else 3)}


def to_markdown(report: dict[str, Any]) -> str:
    lines = ["All ranges [lo, hi) of n Poisson(20) counts, epsilon = 1: RMSE over every range "
             "(root of the mean over releases of each release's mean squared error, +- one "
             "standard error), the exact expectation where known, median seconds per release "
             "(1 thread):", "",
             "| n | method | releases | RMSE (measured) | RMSE (exact) | vs independent (exact) "
             "| seconds |", "|---:|---|---:|---:|---:|---:|---:|"]
    base = {r["n"]: r["exact_rmse"] for r in report["ranges"]
            if r["method"].startswith("independent")}
    for r in report["ranges"]:
        exact = f"{r['exact_rmse']:.2f}" if r["exact_rmse"] is not None else ""
        mine = r["exact_rmse"] if r["exact_rmse"] is not None else r["rmse"]
        name = r["method"] + (f" ({r['detail']})" if r["detail"] else "")
        lines.append(f"| {r['n']} | {name} | {r['runs']} | {r['rmse']:.2f} +- "
                     f"{r['rmse_se']:.2f} | {exact} | {base[r['n']] / mine:.2f}x lower | "
                     f"{r['seconds']:.4f} |")
    t, h = report["tree"], report["hierarchy"]
    lines += ["", f"Tree release of {t['n']:,} leaves on 1 thread (noise on every node + "
              f"consistent estimate): {t['seconds']:.3f} s = {t['ns_per_leaf']:.1f} ns per leaf.",
              f"Census hierarchy of {h['n']:,} leaves (nation, 50 states, {h['counties']:,} "
              "counties, the leaves; integer counts that add up): "
              f"{h['seconds']:.2f} s; children sum to parents: {h['children_sum_to_parents']}; "
              f"non-negative integers: {h['non_negative_integers']}."]
    lines += ["", "All k-way marginals of the Adult data (32,561 records; age by decade, workclass, "
              "education, marital-status, occupation, relationship, race, sex), epsilon = 1: "
              "mean over tables of the l1 error divided by the number of records, mean over "
              "releases, and median seconds per release. Laplace noise unless stated; "
              "noise='gaussian': discrete Gaussian noise of one sigma for all the tables "
              "(their l2 sensitivity sqrt(tables)), at (epsilon, delta) = (1, "
              f"{_gaussian_delta(report['marginals'])}) the tightest sigma for the one "
              "release, or through the rho budget of the tight conversion of that "
              "(epsilon, delta):", "",
              "| tables | method | releases | l1 error / records | seconds |",
              "|---|---|---:|---:|---:|"]
    for r in report["marginals"]:
        error = f"{r['l1_per_record']:.4f}" if r["l1_per_record"] is not None \
            else _unanswered(r)
        name = r["method"] + (f" (sigma {r['sigma']:.2f})" if r.get("sigma") else "")
        lines.append(f"| {r['tables']} {r['k']}-way | {name} | {r['runs']} | "
                     f"{error} | {r['seconds']:.3f} |")
    lines += _mwem_against_peers(report["marginals"])
    lines += graphical_markdown(report.get("graphical", []))
    lines += wide_markdown(report.get("wide", []))
    return "\n".join(lines)


def wide_markdown(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    r0 = rows[0]
    lines = ["", f"The wide Adult table: {r0['columns']} columns (every one but fnlwgt; "
             "numeric ones in at most 16 public bins, native-country and class with their "
             f"documented categories), a domain of {r0['domain']:.2e} cells; all 2-way "
             f"tables at epsilon = {r0['epsilon']:g}, delta = {r0['delta']:g}: mean l1 "
             "error per record over the tables, median seconds, and the model's cells:", "",
             "| method | releases | all 2-way | seconds | model cells |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        err = f"{r['l1_2way']:.4f}" if r["l1_2way"] is not None else _unanswered(r)
        cells = f"{r['model_cells']:,}" if r.get("model_cells") else ""
        sec = "" if r["seconds"] is None else f"{r['seconds']:.1f}"
        lines.append(f"| {r['method']} | {r['runs']} | {err} | {sec} | {cells} |")
    return lines


def graphical_markdown(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = ["", "Graphical models of the Adult data (the same 8 columns), Gaussian noise at "
             f"(epsilon, delta = {rows[0]['delta']:g}): mean over all 2-way and over all "
             "3-way tables of the model's l1 error divided by the number of records (mean "
             "over releases, +- the 2-way errors' standard deviation), median seconds per "
             "release, and the model's cells (its junction tree's cliques):", "",
             "| epsilon | method | releases | all 2-way | all 3-way | seconds | model cells |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["l1_2way"] is None:
            two = three = _unanswered(r)
        else:
            two = f"{r['l1_2way']:.4f} +- {r['l1_2way_sd']:.4f}"
            three = f"{r['l1_3way']:.4f}"
        cells = f"{r['model_cells']:,}" if r.get("model_cells") else ""
        sec = "" if r["seconds"] is None else f"{r['seconds']:.2f}"
        lines.append(f"| {r['epsilon']:g} | {r['method']} | {r['runs']} | {two} | {three} | "
                     f"{sec} | {cells} |")
    return lines


def _unanswered(row: dict[str, Any]) -> str:
    """What a peer's row without answers shows: "did not finish in N s" when it was
    stopped (the outcome says "timeout", or none is given), otherwise its outcome."""
    outcome = row.get("outcome") or "timeout"
    return f"did not finish in {row['timeout']:.0f} s" if "timeout" in outcome else outcome


def _gaussian_delta(rows: list[dict[str, Any]]) -> str:
    """The delta of the Gaussian (epsilon, delta) rows, as printed ("-" if none)."""
    deltas = {r["delta"] for r in rows if r.get("noise") == "gaussian" and r.get("delta")}
    return ", ".join(f"{d:g}" for d in sorted(deltas)) or "-"


def _mwem_against_peers(rows: list[dict[str, Any]]) -> list[str]:
    """One line per finished smartnoise-synth MWEM run: dpfast's MWEM (its default method)
    beside it, error and time."""
    ours = [r for r in rows if r["method"].startswith("dp.mwem") and "'tables'" in r["method"]]
    out = []
    for peer in rows:
        if not peer["method"].startswith("smartnoise-synth MWEM") or ours == [] \
                or peer["l1_per_record"] is None:
            continue
        mine = next(r for r in ours if r["k"] == peer["k"])
        out.append(f"dp.mwem against {peer['method']}, {peer['k']}-way: l1 error / records "
                   f"{mine['l1_per_record']:.4f} vs {peer['l1_per_record']:.4f}, "
                   f"{peer['seconds'] / mine['seconds']:.0f}x faster.")
    return [""] + out if out else []
