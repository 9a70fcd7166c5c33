"""Release a huge int32 count table in place on disk with dp.noisy_counts(out=memmap).

    python bench/noisy_counts_memmap.py [--cells 1000000000] [--threads 2] [--repeats 3] [--dir DIR]

Creates an int32 table of the given size in a temporary .npy file (4 GB for 10^9 cells;
needs that much free disk) in a new temporary directory (inside ``--dir`` if given) and
releases it in place at epsilon = 1 three ways, interleaved over the repeats (a fresh table
each time), printing the median time and rate of each and a Markdown table for the README:

- unjournaled: the same file through an array over a raw ``mmap`` (dpfast does not know it is
  a file: no journal, not crash-safe) -- what the journal costs is measured against this;
- journaled, ``durability="process"`` (the default): safe against the process being killed
  at any point, nothing synced;
- journaled, ``durability="power"``: also safe against a power loss (every block and record
  synced to the disk).

It also prints the peak anonymous memory (RssAnon, sampled every 5 ms; the mapped file's
pages excluded) of the default release.
"""
import argparse
import mmap
import os
import platform
import statistics
import tempfile
import threading
import time

import numpy as np

import dpfast as dp
from dpfast.releases.journal import JOURNAL_SUFFIX


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class PeakAnon:
    """Samples RssAnon in a background thread (file-backed pages of the memmap excluded)."""

    def __init__(self, period=0.005):
        self.peak = _status_kib("RssAnon")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(period,), daemon=True)

    def _run(self, period):
        while not self._stop.is_set():
            self.peak = max(self.peak, _status_kib("RssAnon"))
            time.sleep(period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _status_kib("RssAnon"))


def make_table(path, cells, block=1 << 24):
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.int32, shape=(cells,))
    for start in range(0, cells, block):
        stop = min(start + block, cells)
        mm[start:stop] = np.arange(start, stop, dtype=np.int64) % 1000   # counts 0..999
    mm.flush()


def release(path, mode, threads):
    """One in-place release of the table at path; its time in seconds."""
    acct = dp.Accountant()
    if mode == "unjournaled":
        with open(path, "r+b") as f:
            m = mmap.mmap(f.fileno(), 0)
        header = np.load(path, mmap_mode="r").offset
        cells = (os.path.getsize(path) - header) // 4
        table = np.ndarray((cells,), dtype=np.int32, buffer=m, offset=header)
        t0 = time.perf_counter()
        dp.noisy_counts(table, epsilon=1.0, out=table, threads=threads, accountant=acct,
                        progress=False)
        m.flush()
        elapsed = time.perf_counter() - t0
        del table
        m.close()
        return elapsed
    table = np.lib.format.open_memmap(path, mode="r+")
    t0 = time.perf_counter()
    dp.noisy_counts(table, epsilon=1.0, out=table, threads=threads, accountant=acct,
                    progress=False, durability=mode)
    table.flush()
    elapsed = time.perf_counter() - t0
    del table
    return elapsed


MODES = [("unjournaled", "unjournaled (array over a raw mmap: not crash-safe)"),
         ("process", 'journaled, durability="process" (default: survives a killed process)'),
         ("power", 'journaled, durability="power" (survives a power loss)')]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=10**9)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dir", default=None, help="where to make the temporary directory")
    args = p.parse_args(argv)
    times = {m: [] for m, _ in MODES}
    peak_mib = 0.0
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "table.npy")
        for _ in range(args.repeats):
            for mode, _ in MODES:
                if os.path.exists(path + JOURNAL_SUFFIX):
                    os.unlink(path + JOURNAL_SUFFIX)
                make_table(path, args.cells)
                base = _status_kib("RssAnon")
                with PeakAnon() as peak:
                    times[mode].append(release(path, mode, args.threads))
                if mode == "process":
                    peak_mib = max(peak_mib, (peak.peak - base) / 1024)
        size = os.path.getsize(path) / 2**30
    base = statistics.median(times["unjournaled"])
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; {args.cells:,} int32 cells "
          f"in a {size:.2f} GiB .npy file, released in place at epsilon = 1 on "
          f"{args.threads} threads; medians of {args.repeats} interleaved runs")
    print()
    print("| release of the file | median time | rate | time / unjournaled |")
    print("|---|---|---|---|")
    for mode, label in MODES:
        t = statistics.median(times[mode])
        print(f"| {label} | {t:.2f} s | {args.cells / t / 1e6:.0f} M cells/s | "
              f"{t / base:.2f} |")
    print()
    print(f"peak anonymous memory of the default journaled release: +{peak_mib:.0f} MiB")
    print("all times (s):", {m: [round(t, 2) for t in v] for m, v in times.items()})


if __name__ == "__main__":
    main()
