"""Microseconds per small call, dpfast beside PyDP, diffprivlib and OpenDP in the same run.

    python bench/small_calls.py [--repeat 9] [--calls 2000] [--no-libraries]

The same table as ``dpfast bench --small-calls`` (dpfast.benchmarks.small_calls): scalar
laplace_mechanism, Accountant.spend, noisy_counts of 10^3 cells, the exponential mechanism and
report noisy max over 10^3 candidates, and the libraries' nearest calls.
"""
import argparse

from dpfast.benchmarks import small_calls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--no-libraries", action="store_true")
    args = parser.parse_args(argv)
    rows = small_calls.run(args.repeat, args.calls, libraries=not args.no_libraries)
    print(small_calls.to_markdown(rows, args.repeat, args.calls))


if __name__ == "__main__":
    main()
