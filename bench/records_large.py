"""Grouped count, sum and mean of 10^8 rows read from Parquet, in a child process whose peak
resident memory is reported (the floor: 4 GiB).

The table is the one of ``dpfast.benchmarks.records`` (people with 1-20 rows each in one
Zipf-distributed department, log-normal salaries clamped to [0, 300000]) made in pieces of
10^7 rows and 10^6 people (distinct ids per piece) and written to a Parquet file in a
temporary directory of its own, removed afterwards. ``dp.group_by(path, ...)`` reads the
three columns it needs, one at a time, into one array each; tables of more than 2^24 rows are
bounded in passes over classes of people and their statistics computed in blocks.

    python bench/records_large.py [--rows 100000000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

CHILD = r"""
import json, resource, sys, time
import dpfast as dp
path = sys.argv[1]
start = time.perf_counter()
out = dp.group_by(path, "dept", privacy_unit="user_id", max_groups=1, max_rows=5).agg(
    n="count", total=("salary", "sum"), avg=("salary", "mean"),
    bounds={"salary": (0.0, 300000.0)}, epsilon=1.0, delta=1e-6,
    accountant=dp.Accountant(epsilon=1.0, delta=1e-6))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps({"seconds": seconds, "peak_mib": peak, "released": len(out)}))
"""


def write_table(path: str, rows: int, piece: int = 10**7) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpfast.benchmarks.records import make_table
    writer = None
    try:
        for i, start in enumerate(range(0, rows, piece)):
            n = min(piece, rows - start)
            t = make_table(rows=n, people=max(n // 10, 1), seed=1000 + i)
            t["user_id"] = t["user_id"] + i * 10**9          # distinct people per piece
            table = pa.table(t)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=1 << 20)
    finally:
        if writer is not None:
            writer.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**8)
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="an existing directory for the Parquet file (kept); default: a "
                         "temporary directory, removed afterwards")
    args = ap.parse_args(argv)
    scratch = args.keep or tempfile.mkdtemp(prefix="dpfast-records-large-")
    path = os.path.join(scratch, f"people-{args.rows}.parquet")
    try:
        if not os.path.exists(path):
            t0 = time.perf_counter()
            write_table(path, args.rows)
            print(f"wrote {args.rows:,} rows ({os.path.getsize(path) / 2**20:,.0f} MiB) in "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
        proc = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True,
                              text=True, check=True)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; numpy {np.__version__}")
    print(f"| rows | time (s) | peak resident memory (MiB) | departments released |")
    print(f"|---|---|---|---|")
    print(f"| {args.rows:,} | {result['seconds']:.1f} | {result['peak_mib']:,.0f} | "
          f"{result['released']:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
