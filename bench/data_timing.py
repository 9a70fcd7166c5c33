"""Timing that does not depend on the data: selection over utilities of every magnitude.

    python bench/data_timing.py [--size 1000000] [--repeat 15] [--json FILE]

A mechanism whose running time depends on the utilities tells an observer something about
them. Each selection mechanism is timed (one thread, interleaved, median of --repeat rounds
after a warm-up: dpfast.benchmarks.time_calls) on utilities that put its arithmetic in every
regime: all equal (weights 1), weights in the subnormal range (exp of -710 to -745), weights
that underflow to 0, subnormal utilities, and ordinary random utilities. The ratio of the
slowest to the fastest case is the figure: 1.0 means the time does not depend on the values.
"""
import argparse
import json

import numpy as np

import dpfast as dp
from dpfast.benchmarks import machine_info, machine_line, time_calls


def utilities(n):
    """Named utility vectors, each with maximum 0 (exponent (u - max) * eps / 2 with eps=1)."""
    rng = np.random.default_rng(5)
    spread = lambda lo, hi: -rng.uniform(lo, hi, n)          # noqa: E731
    data = {
        # (np.full, not np.zeros: pages of np.zeros all map to one zero page until written,
        # which makes them cheaper to read.)
        "zeros (weights 1)": np.full(n, 0.0),
        "subnormal weights": spread(2 * 710, 2 * 745),
        "weights underflow to 0": spread(2 * 800, 2 * 2000),
        "subnormal utilities": -rng.uniform(0, 1, n) * 1e-310,
        "normal(0, 100)": rng.normal(0, 100, n),
    }
    for u in data.values():
        u[0] = 0.0                      # the maximum, so every case has the same top weight
    return data


MECHANISMS = {
    "exponential_mechanism": lambda u, acct: dp.exponential_mechanism(
        u, epsilon=1.0, accountant=acct, rng=1, threads=1),
    "report_noisy_max gumbel": lambda u, acct: dp.report_noisy_max(
        u, epsilon=1.0, noise="gumbel", accountant=acct, rng=1, threads=1),
    "report_noisy_max laplace": lambda u, acct: dp.report_noisy_max(
        u, epsilon=1.0, accountant=acct, rng=1, threads=1),
    "permute_and_flip": lambda u, acct: dp.permute_and_flip(
        u, epsilon=1.0, accountant=acct, rng=1, threads=1),
}


def measure(n, repeat):
    data = utilities(n)
    acct = dp.Accountant()
    rows = []
    for mech, fn in MECHANISMS.items():
        calls = [lambda u=u: fn(u, acct) for u in data.values()]
        times = time_calls(calls, repeat)
        med = [float(np.median(t)) for t in times]
        rows.append({"mechanism": mech, "size": n,
                     "ms": dict(zip(data, [m * 1e3 for m in med])),
                     "max/min": max(med) / min(med)})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10**6)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    m = machine_info()
    print(machine_line(m))
    rows = measure(args.size, args.repeat)
    names = list(rows[0]["ms"])
    print(f"| mechanism (n = {args.size:.0e}, 1 thread), ms | " + " | ".join(names)
          + " | slowest / fastest |")
    print("|---" * (len(names) + 2) + "|")
    for r in rows:
        print(f"| {r['mechanism']} | " + " | ".join(f"{r['ms'][k]:.2f}" for k in names)
              + f" | {r['max/min']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": m, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
