"""What many small releases cost against a durable budget: spends through leases beside the
ledger's own durable spend, in the same run.

    python bench/bench_lease.py [--spends 100000] [--per-lease 1000 10000 100000]
                                [--durable 300] [--repeat 5] [--dir DIR] [--json FILE]

A ledger-backed ``Accountant.spend`` appends one record and makes it durable (fdatasync)
before it returns. A lease (``acct.lease(epsilon=...)``) makes one durable reservation, then
spends in memory, and gives back the unspent rest with one durable return record when it is
closed. Measured here: ``--spends`` spends of 1e-9 made through leases of ``--per-lease``
spends each against one ledger file, in microseconds per spend *amortised over everything*
(each lease's reservation and return included), beside the ledger's own durable spend
(``--durable`` calls) and an in-memory accountant's spend, and the cost of one lease's
reservation plus return. Median over ``--repeat`` rounds, interleaved. Every file is made in
a new temporary directory under ``--dir`` (default: the system's temporary directory),
removed at the end; nothing else is touched.
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import dpfast as dp
from dpfast.benchmarks import machine_info, machine_line

EPSILON = 1e-9


def through_leases(acct, spends, per_lease):
    """Seconds for ``spends`` spends through leases of ``per_lease`` spends each (the
    reservations and returns included), and the number of leases."""
    slice_ = EPSILON * per_lease * 2          # half of each slice goes back at close
    leases = 0
    t0 = time.perf_counter()
    left = spends
    while left:
        n = min(per_lease, left)
        with acct.lease(epsilon=slice_) as lease:
            spend = lease.spend
            for _ in range(n):
                spend(EPSILON)
        left -= n
        leases += 1
    return time.perf_counter() - t0, leases


def per_call_us(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def measure(spends, per_lease, durable, repeat, directory):
    rounds = {}
    counts = {}
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        ledger = dp.Accountant(ledger=os.path.join(tmp, "budget.ledger"))
        memory = dp.Accountant()
        ledger.spend(EPSILON)                 # fill the exact-amount caches first
        memory.spend(EPSILON)

        def lease_round_trip():
            with ledger.lease(epsilon=EPSILON * 2) as lease:
                lease.spend(EPSILON)          # something to give back, and something kept

        for _ in range(repeat):
            for n in per_lease:
                secs, leases = through_leases(ledger, spends, n)
                name = f"lease of {n} spends: us per spend, amortised"
                rounds.setdefault(name, []).append(secs / spends * 1e6)
                counts[name] = leases
            rounds.setdefault("ledger-backed Accountant.spend (durable)", []).append(
                per_call_us(lambda: ledger.spend(EPSILON), durable))
            rounds.setdefault("in-memory Accountant.spend", []).append(
                per_call_us(lambda: memory.spend(EPSILON), spends))
            rounds.setdefault("one lease: reservation + 1 spend + return", []).append(
                per_call_us(lease_round_trip, max(durable // 2, 1)))
        # The ledger as another process reads it: every return sound, the total as spent.
        reread = dp.Accountant.from_ledger(ledger.ledger_path)
        assert reread.spent == ledger.spent, (reread.spent, ledger.spent)
        records = len(reread)
        ledger.close()
    return {name: statistics.median(v) for name, v in rounds.items()}, counts, records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spends", type=int, default=100_000)
    parser.add_argument("--per-lease", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--durable", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    m = machine_info()
    result, counts, records = measure(args.spends, args.per_lease, args.durable, args.repeat,
                                      args.dir)
    where = os.path.abspath(args.dir or tempfile.gettempdir())
    print(machine_line(m))
    print(f"disk of {where}; {args.spends} spends of {EPSILON:g} through leases, "
          f"median of {args.repeat} rounds; {records} ledger records re-read and verified")
    print("| call | us per call | vs the durable spend |")
    print("|---|---|---|")
    durable = result["ledger-backed Accountant.spend (durable)"]
    for name, us in result.items():
        extra = f" ({counts[name]} leases)" if name in counts else ""
        print(f"| {name}{extra} | {us:.3f} | {us / durable:.4f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": m, "us": result, "leases": counts}, f, indent=1)


if __name__ == "__main__":
    main()
