"""Side-by-side throughput of dpfast and numpy, measured in one run.

    python bench/compare.py [--suite {sampling,histogram,selection,gaussian,all} ...]
                            [--n 10000000] [--records 100000000]
                            [--candidates 1000000 10000000] [--repeats 9] [--markdown]
                            [--json FILE]

Prints ns per item (median over repeats, cases interleaved so that machine noise hits all of
them alike) and the ratio baseline-time / dpfast-time ("x faster") for:
- sampling: the ChaCha20 keystream vs numpy's PCG64.random_raw, dp.laplace vs
  Generator.laplace, and dp.discrete_laplace, at 1 and 2 threads;
- histogram: --records integer-coded records into 1,000 bins, fused dp.histogram (count +
  noise) vs np.histogram alone (no noise) and vs np.bincount + Generator.laplace, and
  diffprivlib's tools.histogram if it is installed;
- gaussian: dp.gaussian and dp.discrete_gaussian vs numpy's Generator.normal, and
  dp.randomized_response vs a numpy version, on --n items;
- selection: --candidates utilities, dp.exponential_mechanism vs numpy's exp/normalise/
  choice, Gumbel and exponential-noise dp.report_noisy_max vs numpy's argmax(u + gumbel),
  and OpenDP's noisy max if it is installed.
numpy's samplers and counting are single-threaded.
"""
import argparse
import json
import math
import statistics

import numpy as np

import dpfast as dp
from dpfast.bench import machine_info, machine_line, time_calls


# Cases of other DP libraries are named after them, and measured after dpfast's and numpy's.
LIBRARIES = ("diffprivlib", "OpenDP")


def machine():
    """The machine line of `dpfast bench` (CPU, cores, numpy and its SIMD, dpfast kernels)."""
    return machine_line(machine_info())


def cases(n):
    """(name, threads, numpy baseline name or None, callable)."""
    pcg = np.random.PCG64(1)
    gen = np.random.Generator(np.random.PCG64(2))
    cha = dp.ChaCha20(3)
    block = 2**16
    reps = max(1, n // block)

    def in_blocks(bitgen):
        # Cache-sized calls: the keystream itself, without page faults of a fresh array.
        def run():
            for _ in range(reps):
                bitgen.random_raw(block)
        return run

    out = [
        ("numpy PCG64.random_raw", 1, None, lambda: pcg.random_raw(n)),
        ("numpy PCG64 raw, 2^16/call", 1, None, in_blocks(pcg)),
        ("numpy Generator.laplace", 1, None, lambda: gen.laplace(0.0, 1.0, n)),
        ("dp.ChaCha20.random_raw", 1, "numpy PCG64.random_raw", lambda: cha.random_raw(n)),
        ("dp.ChaCha20 raw, 2^16/call", 1, "numpy PCG64 raw, 2^16/call", in_blocks(cha)),
    ]
    for threads in (1, 2):
        out.append(("dp.laplace", threads, "numpy Generator.laplace",
                    lambda t=threads: dp.laplace(1.0, n, rng=cha, threads=t)))
        out.append(("dp.discrete_laplace", threads, "numpy Generator.laplace",
                    lambda t=threads: dp.discrete_laplace(1.0, n, rng=cha, threads=t)))
    return out


def histogram_cases(records, libraries=True):
    """Fused dp.histogram against numpy (and diffprivlib if installed) on integer codes."""
    codes = np.random.default_rng(7).integers(0, 1000, size=records)
    gen = np.random.Generator(np.random.PCG64(8))
    acct = dp.Accountant()
    cha = dp.ChaCha20(9)
    out = [
        ("np.histogram (no noise)", 1, None, lambda: np.histogram(codes, 1000, (0, 1000))),
        ("np.bincount + Generator.laplace", 1, None,
         lambda: np.bincount(codes, minlength=1000) + gen.laplace(0.0, 1.0, 1000)),
    ]
    if libraries:
        out += _diffprivlib_histogram(codes)
    for threads in (1, 2):
        for base in [name for name, _, b, _ in out if b is None]:
            out.append((f"dp.histogram (vs {base.split()[0]})", threads, base,
                        lambda t=threads: dp.histogram(codes, 1000, range=(0, 1000), epsilon=1.0,
                                                       accountant=acct, rng=cha, threads=t)))
    return out


def selection_cases(n, libraries=True):
    """Selection over n candidates: dpfast against numpy's naive versions (and OpenDP's
    noisy max if installed)."""
    u = np.random.default_rng(11).normal(size=n) * 3.0
    gen = np.random.Generator(np.random.PCG64(12))
    acct = dp.Accountant()
    cha = dp.ChaCha20(13)

    def naive_em():
        # exp / normalise / choice: what a numpy user writes for the exponential mechanism.
        p = np.exp((u - u.max()) * 0.5)
        p /= p.sum()
        return gen.choice(n, p=p)

    out = [
        ("numpy exp/normalise/choice", 1, None, naive_em),
        ("numpy argmax(u + gumbel)", 1, None,
         lambda: np.argmax(u * 0.5 + gen.gumbel(size=n))),
    ]
    if libraries:
        out += _opendp_noisy_max(u)
    for threads in (1, 2):
        out.append(("dp.exponential_mechanism", threads, "numpy exp/normalise/choice",
                    lambda t=threads: dp.exponential_mechanism(u, epsilon=1.0, accountant=acct,
                                                               rng=cha, threads=t)))
        for noise in ("gumbel", "exponential"):
            out.append((f"dp.report_noisy_max {noise}", threads, "numpy argmax(u + gumbel)",
                        lambda t=threads, z=noise: dp.report_noisy_max(
                            u, epsilon=1.0, noise=z, accountant=acct, rng=cha, threads=t)))
    return out


def _diffprivlib_histogram(codes):
    try:
        from diffprivlib.tools import histogram as dpl_histogram
    except ImportError:
        return []
    return [("diffprivlib tools.histogram", 1, None,
             lambda: dpl_histogram(codes, bins=1000, range=(0, 1000), epsilon=1.0))]


def _opendp_noisy_max(u):
    try:
        import opendp.prelude as odp
        odp.enable_features("contrib")
        space = (odp.vector_domain(odp.atom_domain(T=float, nan=False)),
                 odp.linf_distance(T=float))
        meas = space >> odp.then_noisy_max(optimize="max", scale=2.0)
    except Exception:           # not installed, or an API this script does not know
        return []
    return [("OpenDP noisy_max", 1, None, lambda: meas(u.tolist()))]


def gaussian_cases(n):
    """Gaussian noise and randomized response on n items against numpy."""
    gen = np.random.Generator(np.random.PCG64(21))
    cha = dp.ChaCha20(22)
    bits = (np.arange(n) % 3 == 0).astype(np.uint8)
    acct = dp.Accountant()
    out = [
        ("numpy Generator.normal", 1, None, lambda: gen.normal(0.0, 1.0, n)),
        ("numpy randomized response", 1, None,
         lambda: np.where(gen.random(n) < 0.75, bits, 1 - bits)),
    ]
    for threads in (1, 2):
        out.append(("dp.gaussian", threads, "numpy Generator.normal",
                    lambda t=threads: dp.gaussian(1.0, n, rng=cha, threads=t)))
        out.append(("dp.discrete_gaussian", threads, "numpy Generator.normal",
                    lambda t=threads: dp.discrete_gaussian(100.0, n, rng=cha, threads=t)))
        out.append(("dp.randomized_response", threads, "numpy randomized response",
                    lambda t=threads: dp.randomized_response(bits, epsilon=math.log(3),
                                                             accountant=acct, rng=cha,
                                                             threads=t)))
    return out


def reps_of(name, n):
    """Items one call of the case handles."""
    return max(1, n // 2**16) * 2**16 if "2^16/call" in name else n


def measure(todo, n, repeats):
    """Median ns per item of every case and its ratio to its baseline, timed by
    dpfast.bench.time_calls (the timing loop of `dpfast bench`)."""
    # Other libraries run after dpfast and numpy, not interleaved with them: some leave
    # thread pools behind that slow down the multi-threaded cases measured after them.
    own = [c for c in todo if not c[0].startswith(LIBRARIES)]
    other = [c for c in todo if c[0].startswith(LIBRARIES)]
    seconds = time_calls([c[3] for c in own], repeats) + time_calls([c[3] for c in other],
                                                                    repeats)
    times = {(name, th): ts for (name, th, _, _), ts in zip(own + other, seconds)}
    rows = []
    for name, th, base, _ in todo:
        count = reps_of(name, n)
        ns = statistics.median(times[(name, th)]) / count * 1e9
        rows.append([name, th, ns, base])
    by_name = {r[0]: r[2] for r in rows if r[3] is None}
    for r in rows:
        r.append(by_name[r[3]] / r[2] if r[3] else None)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", nargs="+", default=["all"],
                   choices=["sampling", "histogram", "selection", "gaussian", "all"])
    p.add_argument("--candidates", type=int, nargs="+", default=[10**6, 10**7])
    p.add_argument("--n", type=int, default=10**7)
    p.add_argument("--records", type=int, default=10**8)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--markdown", action="store_true", help="print a README table")
    p.add_argument("--json", metavar="FILE", help="also write the machine and every row as JSON")
    p.add_argument("--no-libraries", action="store_true",
                   help="leave out diffprivlib and OpenDP even if they are installed")
    args = p.parse_args(argv)
    print(f"Machine: {machine()}")
    found = []                       # (suite, items per call, rows) for --json
    if {"sampling", "all"} & set(args.suite):
        rows = measure(cases(args.n), args.n, args.repeats)
        found.append(("sampling", args.n, rows))
        print(f"n = {args.n:,} samples per call, median of {args.repeats} interleaved repeats\n")
        report(rows, args.markdown)
        lap = {th: ns for name, th, ns, _, _ in rows if name == "dp.laplace"}
        dl = {th: ns for name, th, ns, _, _ in rows if name == "dp.discrete_laplace"}
        print("\ndp.discrete_laplace / dp.laplace time: "
              + ", ".join(f"{dl[t] / lap[t]:.2f} ({t} thr)" for t in sorted(lap)) + "\n")
    if {"histogram", "all"} & set(args.suite):
        rows = measure(histogram_cases(args.records, not args.no_libraries),
                       args.records, args.repeats)
        found.append(("histogram", args.records, rows))
        print(f"{args.records:,} integer-coded records into 1,000 bins, epsilon 1; ns/record, "
              f"median of {args.repeats} interleaved repeats\n")
        report(rows, args.markdown)
    if {"gaussian", "all"} & set(args.suite):
        rows = measure(gaussian_cases(args.n), args.n, args.repeats)
        found.append(("gaussian", args.n, rows))
        print(f"\nGaussian noise and randomized response, {args.n:,} items per call; ns/item, "
              f"median of {args.repeats} interleaved repeats\n")
        report(rows, args.markdown)
    if {"selection", "all"} & set(args.suite):
        for n in args.candidates:
            rows = measure(selection_cases(n, not args.no_libraries), n, args.repeats)
            found.append(("selection", n, rows))
            print(f"\nselection over {n:,} candidates, epsilon 1; ns/candidate, median of "
                  f"{args.repeats} interleaved repeats\n")
            report(rows, args.markdown)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "repeats": args.repeats, "results": [
                {"suite": suite, "n": n, "name": name, "threads": th, "ns_per_item": ns,
                 "baseline": base, "ratio_vs_baseline": ratio}
                for suite, n, rows in found for name, th, ns, base, ratio in rows]}, f, indent=2)
            f.write("\n")


def relative(ratio, base):
    if ratio >= 1:
        return f"{ratio:.2f}x faster than {base}"
    return f"{1 / ratio:.2f}x slower than {base}"


def report(rows, markdown):
    if markdown:
        print("| case | threads | ns/item | vs baseline |")
        print("|---|---:|---:|---:|")
        for name, th, ns, base, ratio in rows:
            rel = relative(ratio, base) if ratio else "baseline"
            print(f"| {name} | {th} | {ns:.2f} | {rel} |")
    else:
        w = max(len(r[0]) for r in rows) + 2
        print(f"{'case':<{w}}{'threads':>8}{'ns/item':>11}{'M/s':>9}   vs baseline")
        for name, th, ns, base, ratio in rows:
            rel = relative(ratio, base) if ratio else "(baseline)"
            print(f"{name:<{w}}{th:>8}{ns:>11.2f}{1e3 / ns:>9.0f}   {rel}")


if __name__ == "__main__":
    main()
