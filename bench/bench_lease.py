"""What many small releases cost against a durable budget: spends through leases beside the
ledger's own durable spend and an in-memory spend, in the same run.

    python bench/bench_lease.py [--spends 100000] [--per-lease 1000 10000 100000]
                                [--durable 300] [--repeat 5] [--dir DIR]

The lease part of ``dpfast bench --budgets`` (:func:`dpfast.benchmarks.budgets.leases`) on
its own: a ledger-backed ``Accountant.spend`` appends one record and makes it durable
(fdatasync) before it returns; a lease makes one durable reservation, spends in memory and
gives back the unspent rest with one durable return record when closed. Microseconds per
spend amortised over everything (reservations and returns included), median of
``--repeat`` interleaved rounds. The ledger lives in a new temporary directory under
``--dir`` (default: the system's), removed at the end.
"""
import argparse
import os
import tempfile

from dpfast.benchmarks import budgets, machine_info, machine_line


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spends", type=int, default=100_000)
    parser.add_argument("--per-lease", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--durable", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    report = {"machine": machine_info(),
              "leases": budgets.leases(args.spends, tuple(args.per_lease), args.durable,
                                       args.repeat, args.dir)}
    print(machine_line(report["machine"]))
    print(f"disk of {os.path.abspath(args.dir or tempfile.gettempdir())}")
    text = budgets.to_markdown_leases(report["leases"])
    print(text)


if __name__ == "__main__":
    main()
