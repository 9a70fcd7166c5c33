"""zCDP, Gaussian noise and leases: what they cost, each beside its baseline in the same run.

- Discrete Gaussian noise in ``dp.noisy_counts`` on 10^8 int32 cells (2 threads) beside
  discrete Laplace noise in the same call, interleaved (the acceptance: at least a third of
  its throughput), and beside OpenDP's discrete Gaussian (``make_gaussian`` over a vector of
  ints, zCDP) on 10^6 cells.
- ``dp.gaussian_mechanism``: the released standard deviation over the analytic sigma at
  10^7 coordinates (epsilon 0.1, delta 1e-9) and for scalars at epsilon 1e-6, delta 1e-5,
  and the seconds to release 10^8 coordinates.
- ``dp.census_hierarchy`` of 10^7 leaves with a rho per level beside Laplace noise.
- Leases: spends through leases against a ledger file, amortised over their reservations
  and returns, beside the ledger's own durable spend and an in-memory spend.

Every ledger is made in a new temporary directory (under ``scratch``, default the system's),
removed at the end; nothing else is written.
"""
from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from typing import Any, Callable

import numpy as np

import dpfast as dp

from ..mechanisms.gaussian import released_sigma
from .core import machine_info, machine_line, time_calls

__all__ = ["gaussian_counts", "versus_opendp", "gaussian_mechanism", "hierarchy", "leases",
           "run", "to_markdown", "to_markdown_leases"]



def _unlimited() -> dp.Accountant:
    """An accountant that pays for anything (the benchmarks time releases, not budgets)."""
    return dp.Accountant(epsilon=math.inf, delta=0.5)


def _median_seconds(calls: list[Callable[[], object]], repeat: int) -> list[float]:
    return [float(np.median(t)) for t in time_calls(calls, repeat)]


def gaussian_counts(cells: int = 10**8, threads: int = 2, repeat: int = 5) -> dict[str, Any]:
    """``dp.noisy_counts`` of int32 cells: discrete Laplace at epsilon 1 beside discrete
    Gaussian noise at sigma 1 (rho 0.5), at (epsilon, delta) = (1, 1e-9) and at sigma 30."""
    counts = (np.arange(cells, dtype=np.int64) % 1000).astype(np.int32)
    out = np.empty_like(counts)
    acct = _unlimited()
    zacct = dp.Accountant(rho=math.inf)
    gen = dp.ChaCha20(1)
    cases: list[tuple[str, Callable[[], object]]] = [
        ("discrete Laplace, epsilon 1", lambda: dp.noisy_counts(
            counts, epsilon=1.0, out=out, accountant=acct, rng=gen, threads=threads)),
        ("discrete Gaussian, rho 0.5 (sigma 1)", lambda: dp.noisy_counts(
            counts, noise="gaussian", rho=0.5, out=out, accountant=zacct, rng=gen,
            threads=threads)),
        ("discrete Gaussian, epsilon 1, delta 1e-9", lambda: dp.noisy_counts(
            counts, noise="gaussian", epsilon=1.0, delta=1e-9, out=out, accountant=acct,
            rng=gen, threads=threads)),
        ("discrete Gaussian, sigma 30", lambda: dp.noisy_counts(
            counts, noise="gaussian", rho=1 / 1800, out=out, accountant=zacct, rng=gen,
            threads=threads)),
    ]
    seconds = _median_seconds([c for _, c in cases], repeat)
    base = seconds[0]
    return {"cells": cells, "threads": threads, "repeat": repeat,
            "rows": [{"case": name, "seconds": s, "mcells_per_s": cells / s / 1e6,
                      "vs_laplace": base / s} for (name, _), s in zip(cases, seconds)]}


def versus_opendp(cells: int = 10**6, sigma: float = 30.0, repeat: int = 5) -> dict[str, Any]:
    """dpfast's discrete Gaussian (noisy_counts of int64 cells, one thread) beside OpenDP's
    (``make_gaussian`` over a vector of ints), the same sigma and cells."""
    counts = np.zeros(cells, dtype=np.int64)
    out = np.empty_like(counts)
    zacct = dp.Accountant(rho=math.inf)
    gen = dp.ChaCha20(2)
    rho = 1.0 / (2 * sigma * sigma)
    [ours] = _median_seconds([lambda: dp.noisy_counts(
        counts, noise="gaussian", rho=rho, out=out, accountant=zacct, rng=gen, threads=1)],
        repeat)
    row: dict[str, Any] = {"cells": cells, "sigma": sigma, "dpfast_s": ours,
                           "opendp_s": None, "speedup": None}
    try:
        import opendp.prelude as odp
    except ImportError:
        return row
    odp.enable_features("contrib")
    meas = odp.m.make_gaussian(odp.vector_domain(odp.atom_domain(T=int)),
                               odp.l2_distance(T=int), scale=sigma)
    data = [0] * cells
    t0 = time.perf_counter()
    released = meas(data)
    row["opendp_s"] = time.perf_counter() - t0
    row["speedup"] = row["opendp_s"] / ours
    row["opendp_std"] = float(np.std(released))
    row["dpfast_std"] = float(np.std(out))
    return row


def gaussian_mechanism(coords: int = 10**7, big: int = 10**8,
                       scalars: int = 200_000) -> dict[str, Any]:
    """The released standard deviation over the analytic sigma, and the time of ``big``."""
    acct = _unlimited()
    eps, delta = 0.1, 1e-9
    sigma = dp.gaussian_sigma(1.0, eps, delta)
    std = float(np.std(dp.gaussian_mechanism(np.zeros(coords), sensitivity=1.0, epsilon=eps,
                                             delta=delta, accountant=acct, rng=3)))
    gen = dp.ChaCha20(5)
    s_eps, s_delta = 1e-6, 1e-5
    s_sigma = dp.gaussian_sigma(1.0, s_eps, s_delta)
    # Each scalar release spends delta 1e-5: a new accountant for each (2e5 of them would
    # spend more delta than one budget holds).
    values = np.array([dp.gaussian_mechanism(0.0, sensitivity=1.0, epsilon=s_eps,
                                             delta=s_delta, accountant=_unlimited(), rng=gen)
                       for _ in range(scalars)])
    x = np.linspace(-1e3, 1e3, big) if big else None
    seconds = None
    if x is not None:
        t0 = time.perf_counter()
        dp.gaussian_mechanism(x, sensitivity=1.0, epsilon=eps, delta=delta, accountant=acct,
                              rng=4)
        seconds = time.perf_counter() - t0
    return {"coords": coords, "epsilon": eps, "delta": delta, "sigma": sigma,
            "std_over_sigma": std / sigma, "standard_error": 1 / math.sqrt(2 * coords),
            "sigma_over_sigma": released_sigma(1.0, eps, delta, coords) / sigma,
            "scalars": scalars, "scalar_epsilon": s_eps, "scalar_delta": s_delta,
            "scalar_std_over_sigma": float(values.std()) / s_sigma,
            "scalar_sigma_over_sigma": released_sigma(1.0, s_eps, s_delta) / s_sigma,
            "scalar_standard_error": 1 / math.sqrt(2 * scalars),
            "big": big, "big_seconds": seconds}


def hierarchy(leaves: int = 10**7, repeat: int = 3) -> dict[str, Any]:
    """census_hierarchy of ``leaves`` leaves (nation, 50 states, counties, leaves): Laplace
    at epsilon 1 beside Gaussian noise at rho 0.5 with the default split; whether children
    add up and every count is a non-negative integer."""
    counties = min(100_000, max(leaves // 100, 50))
    geography = [np.zeros(50, np.int64), np.repeat(np.arange(50), counties // 50),
                 np.repeat(np.arange(counties), leaves // counties)]
    n = geography[-1].size
    data = np.random.default_rng(0).poisson(3.0, n).astype(np.int64)
    acct = _unlimited()
    zacct = dp.Accountant(rho=math.inf)
    last: dict[str, Any] = {}

    def laplace() -> None:
        last["laplace"] = dp.census_hierarchy(data, geography, epsilon=1.0, accountant=acct,
                                              rng=1)

    def gaussian() -> None:
        last["gaussian"] = dp.census_hierarchy(data, geography, noise="gaussian", rho=0.5,
                                               accountant=zacct, rng=2)

    t_lap, t_gauss = _median_seconds([laplace, gaussian], repeat)
    rel = last["gaussian"]
    sums = all(np.array_equal(np.bincount(p, weights=rel.counts[i + 1],
                                          minlength=len(rel.counts[i])).astype(np.int64),
                              rel.counts[i]) for i, p in enumerate(rel.parents))
    ints = all(c.dtype == np.int64 and int(c.min()) >= 0 for c in rel.counts)
    return {"leaves": n, "levels": len(geography) + 1, "laplace_s": t_lap,
            "gaussian_s": t_gauss, "children_sum": sums, "non_negative_integers": ints}


def _through_leases(acct: dp.Accountant, spends: int, per_lease: int,
                    epsilon: float) -> float:
    """Seconds for ``spends`` spends of ``epsilon`` through leases of ``per_lease`` spends
    (their reservations and returns included)."""
    left = spends
    t0 = time.perf_counter()
    while left:
        n = min(per_lease, left)
        with acct.lease(epsilon=epsilon * per_lease * 2) as lease:  # half goes back
            spend = lease.spend
            for _ in range(n):
                spend(epsilon)
        left -= n
    return time.perf_counter() - t0


def _per_call_us(fn: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def leases(spends: int = 100_000, per_lease: tuple[int, ...] = (1000, 10_000, 100_000),
           durable: int = 300, repeat: int = 5,
           scratch: str | None = None) -> dict[str, Any]:
    """Microseconds per spend through leases against a ledger file, beside the ledger's
    durable spend and an in-memory spend (median of ``repeat`` interleaved rounds); the
    ledger is read back by a new accountant at the end and must agree."""
    eps = 1e-9
    rounds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        path = os.path.join(tmp, "budget.ledger")
        ledger = dp.Accountant(ledger=path)
        memory = dp.Accountant()
        ledger.spend(eps)
        memory.spend(eps)
        for _ in range(repeat):
            for n in per_lease:
                rounds.setdefault(f"through leases of {n:,} spends (amortised)", []).append(
                    _through_leases(ledger, spends, n, eps) / spends * 1e6)
            rounds.setdefault("ledger-backed Accountant.spend (durable)", []).append(
                _per_call_us(lambda: ledger.spend(eps), durable))
            rounds.setdefault("in-memory Accountant.spend", []).append(
                _per_call_us(lambda: memory.spend(eps), spends))
        again = dp.Accountant.from_ledger(path)
        agree = again.spent == ledger.spent
        records = len(again)
        again.close()
        ledger.close()
    return {"spends": spends, "repeat": repeat, "records": records, "reread_agrees": agree,
            "us": {k: statistics.median(v) for k, v in rounds.items()}}


def run(quick: bool = False, scratch: str | None = None) -> dict[str, Any]:
    return {"machine": machine_info(),
            "gaussian_counts": gaussian_counts(10**6 if quick else 10**8, 2,
                                               2 if quick else 5),
            "opendp": versus_opendp(10**4 if quick else 10**6, 30.0, 2 if quick else 5),
            "gaussian_mechanism": gaussian_mechanism(10**5 if quick else 10**7,
                                                     0 if quick else 10**8,
                                                     2_000 if quick else 200_000),
            "hierarchy": hierarchy(10**5 if quick else 10**7, 1 if quick else 3),
            "leases": leases(2_000 if quick else 100_000,
                             (100, 1000) if quick else (1000, 10_000, 100_000),
                             20 if quick else 300, 1 if quick else 5, scratch)}


def to_markdown(report: dict[str, Any]) -> str:
    g = report["gaussian_counts"]
    lines = [machine_line(report["machine"]), "",
             f"`dp.noisy_counts` of {g['cells']:,} int32 cells, {g['threads']} threads, "
             f"median of {g['repeat']} interleaved repeats:", "",
             "| noise | seconds | M cells/s | vs discrete Laplace |", "|---|---:|---:|---:|"]
    for r in g["rows"]:
        lines.append(f"| {r['case']} | {r['seconds']:.3f} | {r['mcells_per_s']:.0f} | "
                     f"{r['vs_laplace']:.2f}x |")
    o = report["opendp"]
    if o["opendp_s"] is not None:
        lines += ["", f"Discrete Gaussian noise on {o['cells']:,} cells (sigma {o['sigma']:g}, "
                  f"one thread): dpfast.noisy_counts {o['dpfast_s'] * 1e3:.2f} ms, OpenDP "
                  f"make_gaussian (zCDP, vector of ints) {o['opendp_s']:.2f} s: "
                  f"**{o['speedup']:,.0f}x** (std {o['dpfast_std']:.2f} and "
                  f"{o['opendp_std']:.2f})."]
    m = report["gaussian_mechanism"]
    big = (f"; {m['big']:,} coordinates released in {m['big_seconds']:.2f} s"
           if m["big_seconds"] is not None else "")
    lines += ["", f"`dp.gaussian_mechanism`: released std / analytic sigma "
              f"{m['std_over_sigma']:.5f} at {m['coords']:,} coordinates (epsilon "
              f"{m['epsilon']:g}, delta {m['delta']:g}; standard error "
              f"{m['standard_error']:.1e}), {m['scalar_std_over_sigma']:.4f} over "
              f"{m['scalars']:,} scalars at epsilon {m['scalar_epsilon']:g}, delta "
              f"{m['scalar_delta']:g} (standard error {m['scalar_standard_error']:.1e}){big}. "
              f"The noise's sigma over the analytic sigma (computed, not sampled): "
              f"{m['sigma_over_sigma']:.6f} at {m['coords']:,} coordinates, "
              f"{m['scalar_sigma_over_sigma']:.6f} for a scalar."]
    h = report["hierarchy"]
    lines += ["", f"`dp.census_hierarchy` of {h['leaves']:,} leaves ({h['levels']} levels): "
              f"Laplace (epsilon 1) {h['laplace_s']:.3f} s, discrete Gaussian with a rho per "
              f"level (rho 0.5, default split) {h['gaussian_s']:.3f} s; children add up "
              f"exactly: {h['children_sum']}, non-negative integers: "
              f"{h['non_negative_integers']}."]
    lines += ["", to_markdown_leases(report["leases"])]
    return "\n".join(lines)


def to_markdown_leases(s: dict[str, Any]) -> str:
    """The lease table of :func:`to_markdown`, for :func:`leases`' result."""
    durable = s["us"]["ledger-backed Accountant.spend (durable)"]
    lines = [f"Spends of 1e-9 against a ledger file ({s['spends']:,} through leases, "
              f"median of {s['repeat']} interleaved rounds; the ledger's {s['records']} "
              f"records re-read by a new accountant: agree {s['reread_agrees']}):", "",
              "| spend | us per spend | vs the durable spend |", "|---|---:|---:|"]
    for name, us in s["us"].items():
        lines.append(f"| {name} | {us:.2f} | {durable / us:,.0f}x faster |"
                     if us < durable else f"| {name} | {us:.2f} | (baseline) |")
    return "\n".join(lines)
