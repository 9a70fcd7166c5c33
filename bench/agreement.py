"""Do `dpfast bench` and bench/compare.py report the same Laplace and exponential-mechanism
figures? Runs each tool in fresh processes, alternately, and compares them.

    python bench/agreement.py [--pairs 5] [--size 10000000] [--repeat 9] [--threads 1 2]
                              [--tolerance 0.15] [--only-compared] [--json FILE]

Each pair runs ``dpfast bench`` (every family, or with --only-compared just ``--only laplace
exponential_mechanism``; other DP libraries left out) and ``bench/compare.py --suite
sampling selection`` at the same size, repeats and thread counts (which of the two goes
first alternates from pair to pair, so that a drift of the machine does not favour one). For every figure the tools share - ns per element of numpy's baseline and of dpfast
at each thread count, and dpfast's ratio to numpy - it prints the relative difference
``bench / compare.py - 1`` within each pair, the median of each tool over the pairs and the
difference of those medians, and how many pairs agree within the tolerance.

Both tools time calls with dpfast.bench.time_calls, so a difference between them is what the
machine did between the two runs, unless a case is set up differently; on a shared machine
the figures of one tool alone also move from run to run (the last column shows by how much).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# (label, dpfast bench name, compare.py name); the baselines are single-threaded.
CASES = [("numpy Generator.laplace", "numpy Generator.laplace", "numpy Generator.laplace"),
         ("dp.laplace", "dp.laplace", "dp.laplace"),
         ("numpy exp/normalise/choice", "numpy exp/normalise/choice",
          "numpy exp/normalise/choice"),
         ("dp.exponential_mechanism", "dp.exponential_mechanism", "dp.exponential_mechanism")]


def run_bench(size, repeat, threads, path, only):
    select = ["--only", "laplace", "exponential_mechanism"] if only else []
    subprocess.run([sys.executable, "-m", "dpfast", "bench", *select, "--size", str(size),
                    "--repeat", str(repeat), "--threads", *map(str, threads),
                    "--no-libraries", "--json", path], check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        rows = json.load(f)["results"]
    return {(r["name"], r["threads"]): (r["median_ns_per_element"], r["ratio_vs_baseline"])
            for r in rows}


def run_compare(size, repeat, path):
    subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--suite", "sampling",
                    "selection", "--no-libraries", "--n", str(size), "--candidates", str(size),
                    "--repeats", str(repeat), "--json", path], check=True,
                   stdout=subprocess.DEVNULL)
    with open(path) as f:
        rows = json.load(f)["results"]
    return {(r["name"], r["threads"]): (r["ns_per_item"], r["ratio_vs_baseline"])
            for r in rows}


def figures(threads):
    """(label, bench key, compare.py key, index 0 = ns or 1 = ratio)."""
    out = []
    for label, b, c in CASES:
        ths = [1] if label.startswith("numpy") else threads
        for t in ths:
            out.append((f"{label}, {t} thr, ns/elem", (b, t), (c, t), 0))
            if not label.startswith("numpy"):
                out.append((f"{label}, {t} thr, ratio to numpy", (b, t), (c, t), 1))
    return out


def spread(values):
    return max(values) / min(values) - 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--size", type=int, default=10**7)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--tolerance", type=float, default=0.15)
    p.add_argument("--only-compared", action="store_true",
                   help="run dpfast bench on Laplace and the exponential mechanism only "
                        "(default: every family, as `dpfast bench` runs by default)")
    p.add_argument("--json", metavar="FILE", help="also write every figure of every run")
    args = p.parse_args(argv)
    runs = {"bench": [], "compare": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            order = ("bench", "compare") if i % 2 == 0 else ("compare", "bench")
            for tool in order:
                path = os.path.join(tmp, f"{tool}{i}.json")
                runs[tool].append(run_bench(args.size, args.repeat, args.threads, path,
                                            args.only_compared)
                                  if tool == "bench" else
                                  run_compare(args.size, args.repeat, path))
            print(f"pair {i + 1} of {args.pairs} done ({order[0]} first)", file=sys.stderr)
    from dpfast.bench import machine_info, machine_line
    print(f"Machine: {machine_line(machine_info())}")
    print(f"{args.pairs} pairs of runs, size {args.size:,}, {args.repeat} repeats each; "
          f"difference = dpfast bench / bench/compare.py - 1\n")
    w = max(len(f[0]) for f in figures(args.threads)) + 2
    print(f"{'figure':<{w}}{'per pair':>38}  {'medians':>16}  {'diff':>6}  "
          f"{'within':>6}  {'run-to-run':>10}")
    rows = []
    for label, kb, kc, j in figures(args.threads):
        b = [r[kb][j] for r in runs["bench"]]
        c = [r[kc][j] for r in runs["compare"]]
        pair = [x / y - 1 for x, y in zip(b, c)]
        mb, mc = statistics.median(b), statistics.median(c)
        ok = sum(abs(d) <= args.tolerance for d in pair)
        # How far one tool's own figures move between its runs (the larger of the two).
        own = max(spread(b), spread(c))
        rows.append({"figure": label, "bench": b, "compare": c, "pair_differences": pair,
                     "median_difference": mb / mc - 1, "pairs_within": ok,
                     "run_to_run_spread": own})
        per = " ".join(f"{d:+.0%}" for d in pair)
        print(f"{label:<{w}}{per:>38}  {mb:>7.2f} {mc:>7.2f}  {mb / mc - 1:>+6.1%}  "
              f"{ok:>3}/{len(pair):<2}  {own:>10.0%}")
    worst = max(abs(r["median_difference"]) for r in rows)
    within = sum(r["pairs_within"] for r in rows)
    total = sum(len(r["pair_differences"]) for r in rows)
    print(f"\nmedians over pairs differ by at most {worst:.1%}; {within} of {total} "
          f"single-pair figures within {args.tolerance:.0%}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "settings": vars(args), "figures": rows},
                      f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
