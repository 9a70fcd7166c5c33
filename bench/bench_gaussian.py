"""Gaussian noise at scale: the discrete Gaussian kernel and the grid Gaussian mechanism.

    python bench/bench_gaussian.py [--cells 100000000] [--repeat 5] [--threads 2]
                                   [--opendp-cells 1000000] [--sigma 30] [--json FILE]

Prints, from one run (interleaved rounds, medians, dpfast.benchmarks.time_calls):

1. ``fill_discrete_gaussian`` against ``fill_discrete_laplace`` on --cells int32 cells
   (--threads threads), at the same scale parameter (sigma for the Gaussian, t for the
   Laplace), and the ratio of their throughputs (the acceptance: >= 1/3);
2. the same kernel against OpenDP's discrete Gaussian (``make_gaussian`` on a vector of
   ints, zCDP) on --opendp-cells cells, one thread for dpfast (OpenDP's sampler runs on one);
   OpenDP is timed once (it takes seconds), dpfast as the median of --repeat;
3. ``gaussian_mechanism``: the released noise's standard deviation over the analytic sigma
   at 10**7 coordinates (epsilon 0.1, delta 1e-9), and the time to release 10**8 float64
   coordinates (800 MB in, 800 MB out; no scratch files).

Nothing is written to disk except the --json file, if given.
"""
import argparse
import json
import math
import time

import numpy as np

import dpfast as dp
from dpfast import _native
from dpfast.benchmarks import budgets, machine_info, machine_line, time_calls


def kernels(cells, threads, sigma, repeat):
    out = np.empty(cells, dtype=np.int32)
    src = _native.ChaCha20(1)
    t_lap, t_gauss = time_calls([
        lambda: _native.fill_discrete_laplace(src, threads, out, sigma),
        lambda: _native.fill_discrete_gaussian(src, threads, out, sigma),
    ], repeat)
    lap, gauss = float(np.median(t_lap)), float(np.median(t_gauss))
    return {"cells": cells, "threads": threads, "sigma": sigma,
            "laplace_s": lap, "gaussian_s": gauss,
            "laplace_mcells_s": cells / lap / 1e6, "gaussian_mcells_s": cells / gauss / 1e6,
            "ratio": lap / gauss, "proposal": list(_native.dgauss_proposal(sigma))}


def versus_opendp(cells, sigma, repeat):
    """dpfast's discrete Gaussian against OpenDP's (dpfast.benchmarks.budgets, the same
    comparison `dpfast bench --budgets` makes, through dp.noisy_counts)."""
    return budgets.versus_opendp(cells, sigma, repeat)


def mechanism(repeat):
    eps, delta = 0.1, 1e-9
    analytic = dp.gaussian_sigma(1.0, eps, delta)
    n7 = 10**7
    noisy = dp.gaussian_mechanism(np.zeros(n7), sensitivity=1.0, epsilon=eps, delta=delta,
                                  accountant=dp.Accountant(delta=0.5), rng=3)
    std7 = float(noisy.std())
    del noisy
    n8 = 10**8
    x = np.linspace(-1e3, 1e3, n8)
    times = []
    for i in range(max(1, min(repeat, 3))):
        t0 = time.perf_counter()
        out = dp.gaussian_mechanism(x, sensitivity=1.0, epsilon=eps, delta=delta,
                                    accountant=dp.Accountant(delta=0.5), rng=4 + i)
        times.append(time.perf_counter() - t0)
        del out
    return {"eps": eps, "delta": delta, "analytic_sigma": analytic,
            "std_over_sigma_1e7": std7 / analytic,
            "std_standard_error_1e7": 1 / math.sqrt(2 * n7),
            "release_1e8_s": float(np.median(times)), "release_1e8_runs": len(times)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=10**8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--opendp-cells", type=int, default=10**6)
    ap.add_argument("--sigma", type=float, default=30.0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    m = machine_info()
    print(machine_line(m))
    k = kernels(args.cells, args.threads, args.sigma, args.repeat)
    print(f"{k['cells']:,} int32 cells, {k['threads']} threads, scale {k['sigma']:g} "
          f"(medians of {args.repeat}): discrete Laplace {k['laplace_mcells_s']:.0f} M cells/s, "
          f"discrete Gaussian {k['gaussian_mcells_s']:.0f} M cells/s: ratio {k['ratio']:.3f} "
          f"(proposal block 2^{k['proposal'][0]}, r {k['proposal'][1]}, "
          f"acceptance {k['proposal'][2]:.3f})")
    o = versus_opendp(args.opendp_cells, args.sigma, args.repeat)
    if o["opendp_s"] is None:
        print("OpenDP not installed: no comparison")
    else:
        print(f"{o['cells']:,} cells, sigma {o['sigma']:g}, one thread: dpfast "
              f"{o['dpfast_s'] * 1e3:.1f} ms, OpenDP make_gaussian (zCDP, Vec<int>) "
              f"{o['opendp_s']:.2f} s: {o['speedup']:,.0f}x (std {o['dpfast_std']:.2f} and "
              f"{o['opendp_std']:.2f})")
    g = mechanism(args.repeat)
    print(f"gaussian_mechanism, eps {g['eps']}, delta {g['delta']:g}: std/sigma at 10^7 "
          f"coordinates {g['std_over_sigma_1e7']:.5f} (standard error "
          f"{g['std_standard_error_1e7']:.1e}); 10^8 float64 coordinates released in "
          f"{g['release_1e8_s']:.2f} s (median of {g['release_1e8_runs']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": m, "kernels": k, "opendp": o, "mechanism": g}, f, indent=1)


if __name__ == "__main__":
    main()
