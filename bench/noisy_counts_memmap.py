"""Release a huge int32 count table in place on disk with dp.noisy_counts(out=memmap).

    python bench/noisy_counts_memmap.py [--cells 1000000000] [--threads 2] [--dir DIR]

Creates an int32 table of the given size in a temporary .npy file (4 GB for 10^9 cells;
needs that much free disk), releases it in place at epsilon = 1, and prints the time, the
rate (cells/s) and the peak memory beyond the mapped file: the peak of the process's
anonymous resident memory (RssAnon, sampled every 5 ms) and peak RSS minus the file size.
"""
import argparse
import os
import tempfile
import threading
import time

import numpy as np

import dpfast as dp


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
    return mm


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=10**9)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dir", default=None, help="where to put the temporary table")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "table.npy")
        t0 = time.perf_counter()
        table = make_table(path, args.cells)
        made = time.perf_counter() - t0
        base_anon = _status_kib("RssAnon")
        with PeakAnon() as peak:
            t0 = time.perf_counter()
            dp.noisy_counts(table, epsilon=1.0, out=table, threads=args.threads,
                            accountant=dp.Accountant(), progress=False)
            table.flush()
            elapsed = time.perf_counter() - t0
        hwm = _status_kib("VmHWM")
        file_kib = os.path.getsize(path) / 1024
        sample = np.asarray(table[:5])
        del table
    print(f"cells {args.cells:,} (int32 memmap, {file_kib / 2**20:.2f} GiB), threads "
          f"{args.threads}; table written in {made:.1f} s")
    print(f"dp.noisy_counts in place: {elapsed:.2f} s = {args.cells / elapsed / 1e6:.0f} M cells/s")
    print(f"peak anonymous memory during the release: {peak.peak / 1024:.0f} MiB "
          f"(+{(peak.peak - base_anon) / 1024:.0f} MiB over before); "
          f"peak RSS minus file: {(hwm - file_kib) / 1024:.0f} MiB")
    print(f"first released cells: {sample.tolist()}")


if __name__ == "__main__":
    main()
