"""The sparse vector technique, private multiplicative weights and the auditor: throughput.

- Sparse vector over a stream of 10^7 queries that never crosses the threshold (so every
  query is compared): dpfast.Sparse fed arrays of 10^6 queries, against the same algorithm
  written as a Python loop over numpy's generator (one Laplace draw and one comparison per
  query: how SVT is usually written) and as numpy vectorized draws and comparisons; and
  dpfast fed one query per call.
- The auditor: samples per second of ``dpfast audit`` cases (drawing and event search).
- Private multiplicative weights on a 10^6-cell histogram: answers per second over a stream
  of prefix and 1-way marginal queries, with the number of updates it made.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

import dpfast as dp

from .core import machine_info, machine_line, time_calls

__all__ = ["sparse_vector", "auditor", "multiplicative_weights", "run", "to_markdown"]


def _numpy_loop(q: np.ndarray, threshold: float, scale_t: float, scale_q: float,
                rng: np.random.Generator) -> int:
    """AboveThreshold as a per-query loop over numpy's generator; the number asked."""
    noisy_t = threshold + rng.laplace(0.0, scale_t)
    for i in range(q.size):
        if q[i] + rng.laplace(0.0, scale_q) >= noisy_t:
            return i + 1
    return q.size


def _numpy_vectorized(q: np.ndarray, threshold: float, scale_t: float, scale_q: float,
                      rng: np.random.Generator) -> int:
    noisy_t = threshold + rng.laplace(0.0, scale_t)
    above = np.flatnonzero(q + rng.laplace(0.0, scale_q, q.size) >= noisy_t)
    return int(above[0]) + 1 if above.size else q.size


def sparse_vector(n: int = 10**7, batch: int = 10**6, loop_n: int = 10**5,
                  repeat: int = 3) -> list[dict[str, Any]]:
    """ns per query of each way of running AboveThreshold over ``n`` queries far below the
    threshold (the Python loops over ``loop_n`` queries, per-query figures scaled)."""
    q = np.random.default_rng(0).normal(0.0, 1.0, n)
    threshold, eps = 1e6, 1.0
    scale_t, scale_q = 2.0 / eps, 4.0 / eps
    acct = dp.Accountant()
    gen = np.random.default_rng(1)

    def dpfast_batched() -> None:
        svt = dp.AboveThreshold(threshold, epsilon=eps, accountant=acct, rng=2)
        for start in range(0, n, batch):
            svt.query(q[start:start + batch])

    def dpfast_one_by_one() -> None:
        svt = dp.AboveThreshold(threshold, epsilon=eps, accountant=acct, rng=3)
        for v in q[:loop_n].tolist():
            svt.query(v)

    cases = [("dp.AboveThreshold, arrays of 10^6 queries", dpfast_batched, n),
             ("numpy vectorized (Generator.laplace + compare)",
              lambda: _numpy_vectorized(q, threshold, scale_t, scale_q, gen), n),
             ("dp.AboveThreshold, one query per call", dpfast_one_by_one, loop_n),
             ("Python loop over numpy Generator.laplace",
              lambda: _numpy_loop(q[:loop_n], threshold, scale_t, scale_q, gen), loop_n)]
    times = time_calls([fn for _, fn, _ in cases], repeat)
    base = statistics.median(times[3]) / loop_n
    rows = []
    for (name, _, count), t in zip(cases, times):
        per = statistics.median(t) / count
        rows.append({"case": name, "queries": count, "ns_per_query": per * 1e9,
                     "seconds_for_1e7": per * 1e7, "vs_numpy_loop": base / per})
    return rows


def auditor(samples: int = 4_000_000, cases: tuple[str, ...] = (
        "laplace", "above_threshold", "svt_no_halting")) -> list[dict[str, Any]]:
    """Samples per second and the bound found, for some ``dpfast audit`` cases."""
    from ..auditing import CASES, run_case
    rows = []
    for name in cases:
        t0 = time.perf_counter()
        result = run_case(name, samples=samples, rng=1)
        seconds = time.perf_counter() - t0
        rows.append({"case": name, "about": CASES[name].about, "samples": result.samples,
                     "seconds": seconds, "samples_per_second": result.samples / seconds,
                     "epsilon_lower_bound": result.epsilon_lower_bound,
                     "claimed": result.claimed, "violated": result.violated})
    return rows


def multiplicative_weights(cells: int = 10**6, queries: int = 20_000,
                           alpha: float = 0.05) -> dict[str, Any]:
    """Answers per second of dp.PrivateMultiplicativeWeights on a histogram of ``cells``
    cells (1000 x 1000), over a stream of prefix queries (on the flat histogram) and 1-way
    marginal cells, in chunks of 1000 of one kind."""
    from ..linear.workloads import Marginals, Prefixes
    side = int(round(cells ** 0.5))
    rng = np.random.default_rng(4)
    x = rng.poisson(np.outer(np.linspace(1, 20, side), np.linspace(20, 1, side))).ravel()
    workloads = [Prefixes(side * side), Marginals((side, side), k=1)]
    pmw = dp.PrivateMultiplicativeWeights(x.astype(float), epsilon=1.0, alpha=alpha,
                                          total=float(x.sum()), accountant=dp.Accountant(),
                                          rng=5)
    truths = [w.answer(x.astype(float)) for w in workloads]
    errors, t0 = [], time.perf_counter()
    for start in range(0, queries, 1000):
        k = (start // 1000) % 2
        idx = rng.integers(0, workloads[k].n_queries, 1000)
        answers = pmw.answer(workloads[k], queries=idx)
        errors.append(np.abs(answers - truths[k][idx[:answers.size]]))
        if pmw.halted:
            break
    seconds = time.perf_counter() - t0
    err = np.concatenate(errors) / float(x.sum())
    return {"cells": side * side, "answered": pmw.answered, "seconds": seconds,
            "answers_per_second": pmw.answered / seconds, "updates": pmw.updates_used,
            "update_budget": pmw.updates, "alpha": alpha, "max_error": float(err.max()),
            "mean_error": float(err.mean()), "halted": pmw.halted}


def run(quick: bool = False) -> dict[str, Any]:
    return {"machine": machine_info(),
            "sparse_vector": sparse_vector(10**5 if quick else 10**7, 10**4 if quick else 10**6,
                                           10**4 if quick else 10**5, 2 if quick else 3),
            "auditor": auditor(200_000 if quick else 4_000_000),
            "pmw": multiplicative_weights(10**4 if quick else 10**6,
                                          2_000 if quick else 20_000)}


def to_markdown(report: dict[str, Any]) -> str:
    lines = [machine_line(report["machine"]), "",
             "AboveThreshold over a stream of queries that stay below the threshold (every "
             "query compared), epsilon = 1, median of interleaved repeats:", "",
             "| way | queries timed | ns per query | seconds per 10^7 queries | vs Python loop |",
             "|---|---:|---:|---:|---:|"]
    for r in report["sparse_vector"]:
        lines.append(f"| {r['case']} | {r['queries']:,} | {r['ns_per_query']:.1f} | "
                     f"{r['seconds_for_1e7']:.2f} | {r['vs_numpy_loop']:.1f}x |")
    lines += ["", "The auditor (`dpfast audit CASE`): draws, event search and Clopper-Pearson "
              "bounds at 99 % confidence:", "",
              "| case | samples | seconds | M samples/s | epsilon >= | claimed |",
              "|---|---:|---:|---:|---:|---:|"]
    for r in report["auditor"]:
        lines.append(f"| {r['case']} | {r['samples']:,} | {r['seconds']:.2f} | "
                     f"{r['samples_per_second'] / 1e6:.1f} | {r['epsilon_lower_bound']:.3f}"
                     f"{' (violated)' if r['violated'] else ''} | {r['claimed']:g} |")
    p = report["pmw"]
    lines += ["", f"dp.PrivateMultiplicativeWeights on a {p['cells']:,}-cell histogram, "
              f"epsilon = 1, alpha = {p['alpha']:g} (update budget {p['update_budget']:,}): "
              f"{p['answered']:,} prefix and 1-way marginal queries in {p['seconds']:.2f} s = "
              f"{p['answers_per_second']:,.0f} answers per second, {p['updates']} updates; "
              f"error / records: max {p['max_error']:.4f}, mean {p['mean_error']:.5f}."]
    return "\n".join(lines)
