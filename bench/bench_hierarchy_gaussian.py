"""Census hierarchies with Gaussian noise: seconds per release of 10^7 leaves, and checks.

Run: .venv/bin/python bench/bench_hierarchy_gaussian.py [--leaves N] [--repeat R]

Two public hierarchies over the same leaves: the one of ``dpfast bench --linear``'s
``hierarchy_speed`` (nation, 50 states, 10^5 counties of equal size, the leaves), and an
irregular census-like one (nation, 51 states, 3143 counties, 85,000 tracts, 240,000 block
groups, the leaves as blocks; every unit's children drawn at random). For each: Laplace noise
(epsilon = 1, equal split) beside discrete Gaussian noise with a rho per level (rho = 0.5,
the default split) and through (epsilon, delta) = (1, 1e-9), the median seconds of
``dp.census_hierarchy`` and the CPU seconds of one (with the time the default split takes on
its own), whether children sum to their parents exactly and every count is a non-negative
integer, and the split objective (sum over levels of the mean least-squares variance) at the
default split and at equal shares. Writes nothing to disk.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from typing import Any

import numpy as np

import dpfast as dp
from dpfast.linear import hierarchy as hi


def regular(leaves: int) -> list[np.ndarray]:
    counties = min(100_000, leaves // 100)
    return [np.zeros(50, np.int64), np.repeat(np.arange(50), counties // 50),
            np.repeat(np.arange(counties), leaves // counties)]


def census_like(leaves: int, rng: np.random.Generator) -> list[np.ndarray]:
    sizes = [s for s in (1, 51, 3143, 85_000, 240_000) if s < leaves] + [leaves]
    out = []
    for above, below in zip(sizes[:-1], sizes[1:]):
        # Every unit above gets a child; the others go to random parents (sorted: units
        # numbered parent by parent, as a geography's codes are).
        extra = rng.integers(0, above, below - above)
        out.append(np.sort(np.concatenate([np.arange(above), extra])).astype(np.int64))
    return out


def check(rel: Any) -> dict[str, bool]:
    sums = all(np.array_equal(np.bincount(p, weights=rel.counts[i + 1],
                                          minlength=len(rel.counts[i])).astype(np.int64),
                              rel.counts[i])
               for i, p in enumerate(rel.parents))
    ints = all(c.dtype == np.int64 and int(c.min()) >= 0 for c in rel.counts)
    return {"children_sum_to_parents": sums, "non_negative_integers": ints}


def timed(call: Any, repeat: int) -> tuple[float, Any]:
    """Median wall-clock seconds of ``call`` and its last result."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def cpu_seconds(call: Any) -> float:
    """CPU seconds (user + system, all threads) of one call: on a shared machine the
    wall clock also counts other processes' time."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    call()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(leaves: int, repeat: int) -> list[dict[str, Any]]:
    x = np.random.default_rng(2).poisson(3, leaves).astype(np.int64)
    rows = []
    for name, par in (("regular (1, 50, 1e5, leaves)", regular(leaves)),
                      ("census-like (1, 51, 3143, 85e3, 240e3, leaves)",
                       census_like(leaves, np.random.default_rng(5)))):
        levels = len(par) + 1
        t_split, split = timed(lambda: hi.default_split(par, leaves), repeat)
        cases = {
            "laplace epsilon=1": dict(epsilon=1.0),
            "gaussian rho=0.5": dict(noise="gaussian", rho=0.5),
            "gaussian epsilon=1 delta=1e-9": dict(noise="gaussian", epsilon=1.0, delta=1e-9),
        }
        for case, kw in cases.items():
            def call(kw: dict[str, Any] = kw) -> Any:
                return dp.census_hierarchy(x, par, rng=0, accountant=dp.Accountant(rho=10.0),
                                           **kw)
            sec, rel = timed(call, repeat)
            row = {"hierarchy": name, "leaves": leaves, "case": case, "seconds": round(sec, 3),
                   "cpu_seconds": round(cpu_seconds(call), 3), **check(rel)}
            if kw.get("noise") == "gaussian":
                row["split"] = [round(s, 4) for s in rel.split]
                row["sigmas"] = [round(s, 4) for s in rel.scales]
            rows.append(row)
        rows.append({"hierarchy": name, "default_split_seconds": round(t_split, 3),
                     "objective_default": hi.split_objective(par, leaves, split),
                     "objective_equal": hi.split_objective(par, leaves, [1 / levels] * levels)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leaves", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for row in run(args.leaves, args.repeat):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
