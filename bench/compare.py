"""Side-by-side throughput of dpfast and numpy, measured in one run.

    python bench/compare.py [--suite sampling|histogram|selection|gaussian|all] [--n 10000000]
                            [--records 100000000] [--candidates 1000000 10000000]
                            [--repeats 9] [--markdown]

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
import math
import statistics
import time

import numpy as np

import dpfast as dp
from dpfast.bench import machine_line, machine_info


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


def histogram_cases(records):
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
    try:
        from diffprivlib.tools import histogram as dpl_histogram
        out.append(("diffprivlib tools.histogram", 1, None,
                    lambda: dpl_histogram(codes, bins=1000, range=(0, 1000), epsilon=1.0)))
    except ImportError:
        pass
    for threads in (1, 2):
        for base in [name for name, _, b, _ in out if b is None]:
            out.append((f"dp.histogram (vs {base.split()[0]})", threads, base,
                        lambda t=threads: dp.histogram(codes, 1000, range=(0, 1000), epsilon=1.0,
                                                       accountant=acct, rng=cha, threads=t)))
    return out


def selection_cases(n):
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
    try:
        import opendp.prelude as odp
        odp.enable_features("contrib")
        space = (odp.vector_domain(odp.atom_domain(T=float, nan=False)),
                 odp.linf_distance(T=float))
        meas = space >> odp.then_noisy_max(optimize="max", scale=2.0)
        out.append(("OpenDP noisy_max", 1, None, lambda: meas(u.tolist())))
    except Exception:           # not installed, or an API this script does not know
        pass
    for threads in (1, 2):
        out.append(("dp.exponential_mechanism", threads, "numpy exp/normalise/choice",
                    lambda t=threads: dp.exponential_mechanism(u, epsilon=1.0, accountant=acct,
                                                               rng=cha, threads=t)))
        for noise in ("gumbel", "exponential"):
            out.append((f"dp.report_noisy_max {noise}", threads, "numpy argmax(u + gumbel)",
                        lambda t=threads, z=noise: dp.report_noisy_max(
                            u, epsilon=1.0, noise=z, accountant=acct, rng=cha, threads=t)))
    return out


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
    times = {(name, th): [] for name, th, _, _ in todo}
    for _, _, _, fn in todo:          # warm up: page faults, thread pools, dispatch
        fn()
    for _ in range(repeats):
        for name, th, _, fn in todo:
            t0 = time.perf_counter()
            fn()
            times[(name, th)].append(time.perf_counter() - t0)
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
    p.add_argument("--suite", choices=["sampling", "histogram", "selection", "gaussian", "all"],
                   default="all")
    p.add_argument("--candidates", type=int, nargs="+", default=[10**6, 10**7])
    p.add_argument("--n", type=int, default=10**7)
    p.add_argument("--records", type=int, default=10**8)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--markdown", action="store_true", help="print a README table")
    args = p.parse_args(argv)
    print(f"Machine: {machine()}")
    if args.suite in ("sampling", "all"):
        rows = measure(cases(args.n), args.n, args.repeats)
        print(f"n = {args.n:,} samples per call, median of {args.repeats} interleaved repeats\n")
        report(rows, args.markdown)
        lap = {th: ns for name, th, ns, _, _ in rows if name == "dp.laplace"}
        dl = {th: ns for name, th, ns, _, _ in rows if name == "dp.discrete_laplace"}
        print("\ndp.discrete_laplace / dp.laplace time: "
              + ", ".join(f"{dl[t] / lap[t]:.2f} ({t} thr)" for t in sorted(lap)) + "\n")
    if args.suite in ("histogram", "all"):
        rows = measure(histogram_cases(args.records), args.records, args.repeats)
        print(f"{args.records:,} integer-coded records into 1,000 bins, epsilon 1; ns/record, "
              f"median of {args.repeats} interleaved repeats\n")
        report(rows, args.markdown)
    if args.suite in ("gaussian", "all"):
        rows = measure(gaussian_cases(args.n), args.n, args.repeats)
        print(f"\nGaussian noise and randomized response, {args.n:,} items per call; ns/item, "
              f"median of {args.repeats} interleaved repeats\n")
        report(rows, args.markdown)
    if args.suite in ("selection", "all"):
        for n in args.candidates:
            rows = measure(selection_cases(n), n, args.repeats)
            print(f"\nselection over {n:,} candidates, epsilon 1; ns/candidate, median of "
                  f"{args.repeats} interleaved repeats\n")
            report(rows, args.markdown)


def report(rows, markdown):
    if markdown:
        print("| case | threads | ns/item | vs baseline |")
        print("|---|---:|---:|---:|")
        for name, th, ns, base, ratio in rows:
            rel = f"{ratio:.2f}x faster than {base}" if ratio else "baseline"
            print(f"| {name} | {th} | {ns:.2f} | {rel} |")
    else:
        w = max(len(r[0]) for r in rows) + 2
        print(f"{'case':<{w}}{'threads':>8}{'ns/item':>11}{'M/s':>9}   vs baseline")
        for name, th, ns, base, ratio in rows:
            rel = f"{ratio:.2f}x faster than {base}" if ratio else "(baseline)"
            print(f"{name:<{w}}{th:>8}{ns:>11.2f}{1e3 / ns:>9.0f}   {rel}")


if __name__ == "__main__":
    main()
