"""Two threads with a busy core: a 2-thread call must not be much slower than a 1-thread one.

    python bench/busy_core.py [--repeat 15] [--no-idle] [--json FILE]

On a 2-core machine, another process keeps one core busy (a Python busy loop started here)
while each case is timed on 1 and on 2 threads, interleaved (dpfast.benchmarks.time_calls,
median of --repeat rounds after a warm-up). The ratio 2-thread / 1-thread time should stay at
or below 1.25: a helper thread that cannot get a core must not hold the call up. The same
cases are also timed with both cores idle, for reference (skip with --no-idle).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

import dpfast as dp
from dpfast.benchmarks import machine_info, machine_line, time_calls

LIMIT = 1.25


def cases():
    """(name, n, function of the thread count)."""
    acct = dp.Accountant()
    g = dp.ChaCha20(1)
    out = []
    for n in (10**4, 10**5, 10**6, 10**7):
        x = np.zeros(n)
        out.append(("laplace_mechanism float64", n,
                    lambda t, x=x: dp.laplace_mechanism(x, sensitivity=1.0, epsilon=1.0,
                                                        accountant=acct, rng=g, threads=t)))
    for n in (10**5, 10**6):
        c = np.arange(n)
        out.append(("noisy_counts int64", n,
                    lambda t, c=c: dp.noisy_counts(c, epsilon=1.0, accountant=acct, rng=g,
                                                   threads=t)))
        u = np.random.default_rng(2).normal(size=n)
        out.append(("exponential_mechanism", n,
                    lambda t, u=u: dp.exponential_mechanism(u, epsilon=1.0, accountant=acct,
                                                            rng=g, threads=t)))
        out.append(("report_noisy_max gumbel", n,
                    lambda t, u=u: dp.report_noisy_max(u, epsilon=1.0, noise="gumbel",
                                                       accountant=acct, rng=g, threads=t)))
        out.append(("discrete_gaussian", n,
                    lambda t, n=n: dp.discrete_gaussian(10.0, n, rng=g, threads=t)))
    for n in (10**6, 10**7):
        codes = np.random.default_rng(3).integers(0, 1000, n)
        out.append(("histogram int64 records", n,
                    lambda t, c=codes: dp.histogram(c, 1000, range=(0, 1000), epsilon=1.0,
                                                    accountant=acct, rng=g, threads=t)))
    return out


def measure(repeat):
    rows = []
    for name, n, fn in cases():
        # Enough calls per timed round to last a few milliseconds at least.
        calls = max(1, int(2e5 // n))

        def run(t, fn=fn, calls=calls):
            for _ in range(calls):
                fn(t)

        one, two = time_calls([lambda: run(1), lambda: run(2)], repeat)
        t1, t2 = statistics.median(one) / calls, statistics.median(two) / calls
        rows.append({"case": name, "n": n, "one_thread_ms": t1 * 1e3,
                     "two_threads_ms": t2 * 1e3, "ratio": t2 / t1})
    return rows


def table(rows, title):
    lines = [title, "", "| case | n | 1 thread, ms | 2 threads, ms | 2 / 1 |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['n']:.0e} | {r['one_thread_ms']:.3f} | "
                     f"{r['two_threads_ms']:.3f} | {r['ratio']:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--no-idle", action="store_true", help="skip the idle reference run")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    print(f"Machine: {machine_line(machine_info())}\n")
    report = {}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        report["busy"] = measure(args.repeat)
    finally:
        busy.kill()
        busy.wait()
    print(table(report["busy"], "One core kept busy by another process:"))
    worst = max(r["ratio"] for r in report["busy"])
    print(f"\nlargest 2-thread / 1-thread ratio: {worst:.2f} "
          f"({'within' if worst <= LIMIT else 'ABOVE'} the limit {LIMIT})")
    if not args.no_idle:
        report["idle"] = measure(args.repeat)
        print("\n" + table(report["idle"], "Both cores idle (reference):"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
