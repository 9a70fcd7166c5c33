"""What a durable budget costs: a ledger-backed spend beside the disk's own sync floor.

    python bench/ledger.py [--spends 500] [--repeat 7] [--dir DIR] [--json FILE]

A ledger spend appends one checksummed record and makes it durable (fdatasync) under an
exclusive file lock before it returns, so its cost is bounded below by the disk: the floor
measured here is a bare append of a record of the same size plus fdatasync, with no lock and
no accounting. Reported: microseconds per call, median over --repeat rounds of --spends
calls each, in a temporary directory under --dir (default: the current directory, so that
the disk is the one a ledger would live on), beside an in-memory spend.
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import dpfast as dp
from dpfast.benchmarks import machine_info, machine_line


def per_call_us(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def measure(spends, repeat, directory):
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        memory = dp.Accountant()
        ledger = dp.Accountant(ledger=os.path.join(tmp, "budget.ledger"))
        before = os.path.getsize(ledger.ledger_path)
        ledger.spend(1e-9)
        size = os.path.getsize(ledger.ledger_path) - before  # bytes of one charge record
        record = b"x" * (size - 1) + b"\n"
        fd = os.open(os.path.join(tmp, "floor"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        sync = os.fdatasync if hasattr(os, "fdatasync") else os.fsync

        def floor():
            os.write(fd, record)
            sync(fd)

        cases = {"in-memory Accountant.spend": lambda: memory.spend(1e-9),
                 "ledger-backed Accountant.spend": lambda: ledger.spend(1e-9),
                 "floor: append + fdatasync": floor}
        rounds = {name: [] for name in cases}
        for _ in range(repeat):
            for name, fn in cases.items():          # interleaved: the disk drifts
                rounds[name].append(per_call_us(fn, spends))
        os.close(fd)
    return {name: statistics.median(v) for name, v in rounds.items()}, size


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spends", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dir", default=".")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    m = machine_info()
    result, size = measure(args.spends, args.repeat, args.dir)
    print(machine_line(m))
    print(f"disk of {os.path.abspath(args.dir)}; records of {size} bytes; median of "
          f"{args.repeat} rounds of {args.spends} calls")
    print("| call | us per call | vs the floor |")
    print("|---|---|---|")
    floor = result["floor: append + fdatasync"]
    for name, us in result.items():
        print(f"| {name} | {us:.1f} | {us / floor:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": m, "us": result, "record_bytes": size}, f, indent=1)


if __name__ == "__main__":
    main()
