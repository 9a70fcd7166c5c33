"""dpfast.dask on a LocalCluster of worker processes against single-process dpfast, same run.

- ``noisy_counts`` of a ``.npy`` file of int32 counts (10^9 cells by default, 3.7 GiB)
  into int64 on disk: single-process ``dpfast.noisy_counts`` into a ``.npy`` memmap (2
  threads) against ``dpfast.dask.noisy_counts`` over ``from_npy`` blocks written with
  ``dask.array.to_npy_stack`` by a 2-worker cluster (one thread each). Both releases use
  the same seed, and their outputs are compared block by block (they must be identical);
  each worker's peak resident memory is reported.
- ``crosstab`` of a Parquet dataset of 10^8 records (two integer columns, 8 and 16
  categories): ``dpfast.crosstab`` of the table read with pandas, against
  ``dpfast.dask.crosstab`` of ``dask.dataframe.read_parquet``.

Files go to a new directory made for the run, inside ``--scratch`` if given (never the
scratch directory itself, which may hold anything) or under the system's temporary
directory, and are removed afterwards unless ``keep`` is set.
"""
from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from typing import Any

import numpy as np

import dpfast as dp

from .core import machine_info, machine_line

__all__ = ["noisy_counts_from_disk", "parquet_crosstab", "run", "to_markdown"]


class _RssPeak:
    """In a worker: a thread sampling its resident memory every 20 ms, keeping the peak
    (the kernel's own high-water mark would include what a worker inherits from the process
    that started it)."""

    peak = 0
    running = False

    @classmethod
    def start(cls) -> None:
        import threading

        import psutil
        if cls.running:
            return
        cls.running, proc = True, psutil.Process()

        def sample() -> None:
            while cls.running:
                cls.peak = max(cls.peak, proc.memory_info().rss)
                time.sleep(0.02)
        threading.Thread(target=sample, daemon=True).start()

    @classmethod
    def stop(cls) -> float:
        cls.running = False
        return cls.peak / 2**30


def _cluster(workers: int) -> Any:
    import distributed
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster)
    client.run(_RssPeak.start)
    return cluster, client


def _write_counts(path: str, n: int, block: int = 10**7) -> None:
    """n Poisson(20) counts as uint16 (a census block's count fits 16 bits)."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint16, shape=(n,))
    rng = np.random.default_rng(0)
    for start in range(0, n, block):
        stop = min(n, start + block)
        out[start:stop] = rng.poisson(20, stop - start)
    out.flush()
    del out


def _block_sums(x: Any) -> Any:
    """A checksum of a release kept on the workers: the sum of each block."""
    return x.map_blocks(lambda b: np.array([b.sum(dtype=np.int64)]), chunks=(1,),
                        dtype=np.int64)


def noisy_counts_from_disk(scratch: str, cells: int = 10**9, workers: int = 2,
                           chunks: int = 10**7) -> dict[str, Any]:
    """The release of a .npy file of uint16 counts into int32, two ways, each by a 2-worker
    cluster (started first, so that its workers' peak memory is their own) and by one
    process with 2 threads: kept in memory (the cluster: a checksum per block, nothing
    written; one process: an int32 array in memory) and written to disk (the cluster:
    ``to_npy_stack``; one process: an int32 ``.npy`` memmap, journaled)."""
    import dask.array as da

    import dpfast.dask as dpd
    src = os.path.join(scratch, "counts.npy")
    if not os.path.exists(src) or np.load(src, mmap_mode="r").shape != (cells,):
        _write_counts(src, cells)
    stack = os.path.join(scratch, "stack")
    single_out = os.path.join(scratch, "single.npy")
    cluster, client = _cluster(workers)
    try:
        client.run(lambda: __import__("dpfast.dask"))                # warm the workers
        shutil.rmtree(stack, ignore_errors=True)
        t0 = time.perf_counter()
        noisy = dpd.noisy_counts(dpd.from_npy(src, chunks=chunks), epsilon=1.0, dtype=np.int32,
                                 accountant=dp.Accountant(), rng=1)
        sums = _block_sums(noisy).compute()
        mem_cluster = time.perf_counter() - t0
        t0 = time.perf_counter()
        da.to_npy_stack(stack, dpd.noisy_counts(dpd.from_npy(src, chunks=chunks), epsilon=1.0,
                                                dtype=np.int32, accountant=dp.Accountant(),
                                                rng=1), axis=0)
        disk_cluster = time.perf_counter() - t0
        rss = client.run(_RssPeak.stop)
    finally:
        client.close()
        cluster.close()
    counts = np.load(src, mmap_mode="r")
    t0 = time.perf_counter()
    whole = dp.noisy_counts(counts, epsilon=1.0, out=np.empty(cells, np.int32),
                            accountant=dp.Accountant(), rng=1, threads=2, progress=False)
    mem_single = time.perf_counter() - t0
    same = bool(np.array_equal(sums, whole.reshape(-1, chunks).sum(axis=1, dtype=np.int64))) \
        if cells % chunks == 0 else None
    del whole
    out = np.lib.format.open_memmap(single_out, mode="w+", dtype=np.int32, shape=(cells,))
    t0 = time.perf_counter()
    dp.noisy_counts(counts, epsilon=1.0, out=out, accountant=dp.Accountant(), rng=1,
                    threads=2, progress=False)
    out.flush()
    disk_single = time.perf_counter() - t0
    del out
    same_disk = _same_blocks(single_out, stack, chunks, cells)
    for done in (single_out, single_out + ".dpfast-journal"):   # the file and its marker
        if os.path.exists(done):
            os.remove(done)
    shutil.rmtree(stack, ignore_errors=True)
    return {"cells": cells, "chunks": chunks, "workers": workers,
            "memory": {"single_seconds": mem_single, "cluster_seconds": mem_cluster},
            "disk": {"single_seconds": disk_single, "cluster_seconds": disk_cluster},
            "worker_peak_rss_gib": sorted(rss.values()), "identical": same and same_disk}


def _same_blocks(single: str, stack: str, chunks: int, cells: int) -> bool:
    """The first, a middle and the last block of the two releases are identical."""
    whole = np.load(single, mmap_mode="r")
    blocks = (cells + chunks - 1) // chunks
    for b in sorted({0, blocks // 2, blocks - 1}):
        part = np.load(os.path.join(stack, f"{b}.npy"))
        if not np.array_equal(part, whole[b * chunks:b * chunks + part.size]):
            return False
    return True


def parquet_crosstab(scratch: str, rows: int = 10**8, workers: int = 2, files: int = 20,
                     repeat: int = 3) -> dict[str, Any]:
    """A crosstab of Parquet records (two int8 columns of 8 and 16 categories): median of
    ``repeat`` runs after a warm-up, by the cluster and by one process (pandas.read_parquet,
    then dpfast.crosstab on 2 threads)."""
    import dask.dataframe as dd
    import pandas as pd

    import dpfast.dask as dpd
    path = os.path.join(scratch, "records")
    keys: dict[Any, list[Any]] = {"a": list(range(8)), "b": list(range(16))}
    if not os.path.isdir(path):
        os.makedirs(path)
        rng = np.random.default_rng(2)
        per = rows // files
        for i in range(files):
            part = pd.DataFrame({"a": rng.integers(0, 8, per, dtype=np.int8),
                                 "b": rng.integers(0, 16, per, dtype=np.int8)})
            part.to_parquet(os.path.join(path, f"part{i:03d}.parquet"), index=False)
    cluster, client = _cluster(workers)
    try:
        def on_cluster() -> Any:
            return dpd.crosstab(dd.read_parquet(path), ["a", "b"], epsilon=1.0, keys=keys,
                                accountant=dp.Accountant(), rng=3)
        got, cluster_s = _median_time(on_cluster, repeat)
        rss = client.run(_RssPeak.stop)
    finally:
        client.close()
        cluster.close()

    def one_process() -> Any:
        return dp.crosstab(pd.read_parquet(path), ["a", "b"], epsilon=1.0, keys=keys,
                           accountant=dp.Accountant(), rng=3, threads=2)
    want, single_s = _median_time(one_process, repeat)
    return {"rows": rows, "files": files, "workers": workers, "single_seconds": single_s,
            "cluster_seconds": cluster_s, "worker_peak_rss_gib": sorted(rss.values()),
            "identical": bool(got.equals(want))}


def _median_time(fn: Any, repeat: int) -> tuple[Any, float]:
    """The result and the median seconds of ``repeat`` calls after one warm-up call."""
    result = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, statistics.median(times)


def run(quick: bool = False, scratch: str | None = None, keep: bool = False) -> dict[str, Any]:
    """The report of both benchmarks. Their files go to a new directory made for this run
    (inside ``scratch`` if given, else under the system's temporary directory), which is
    removed afterwards unless ``keep``: never ``scratch`` itself, which may hold anything."""
    if scratch is not None:
        os.makedirs(scratch, exist_ok=True)
    where = scratch_directory(scratch)
    try:
        return {"machine": machine_info(),
                "noisy_counts": noisy_counts_from_disk(where, 10**7 if quick else 10**9,
                                                       chunks=10**6 if quick else 10**7),
                "crosstab": parquet_crosstab(where, 10**6 if quick else 10**8,
                                             files=4 if quick else 20)}
    finally:
        if not keep:
            shutil.rmtree(where, ignore_errors=True)


def scratch_directory(scratch: str | None) -> str:
    """A new, empty directory for one run's files: inside ``scratch`` (which must exist)
    or under the system's temporary directory."""
    return tempfile.mkdtemp(prefix="dpfast-cluster-", dir=scratch)


def to_markdown(report: dict[str, Any]) -> str:
    n, c = report["noisy_counts"], report["crosstab"]

    def row(what: str, unit: str, count: int, single: float, cluster: float) -> str:
        return (f"| {what} | {single:.2f} s = {count / single / 1e6:.0f} M {unit}/s | "
                f"{cluster:.2f} s = {count / cluster / 1e6:.0f} M {unit}/s | "
                f"{single / cluster:.2f} |")
    rss = ", ".join(f"{r:.2f}" for r in n["worker_peak_rss_gib"] + c["worker_peak_rss_gib"])
    return "\n".join([
        machine_line(report["machine"]), "",
        "| release | one process, 2 threads | LocalCluster, 2 worker processes x 1 thread | "
        "cluster / one process |", "|---|---:|---:|---:|",
        row(f"noisy_counts of {n['cells']:,} uint16 cells from a .npy file, int32 kept "
            "(one process: in memory; cluster: on the workers, a checksum per block)",
            "cells", n["cells"], n["memory"]["single_seconds"], n["memory"]["cluster_seconds"]),
        row("the same, int32 written to disk (one process: a journaled .npy; cluster: "
            "to_npy_stack)", "cells", n["cells"], n["disk"]["single_seconds"],
            n["disk"]["cluster_seconds"]),
        row(f"crosstab of {c['rows']:,} Parquet records ({c['files']} files), 8 x 16 cells, "
            "median of 3", "rows", c["rows"], c["single_seconds"], c["cluster_seconds"]),
        "", f"Same seed, same releases: {n['identical'] and c['identical']}. Peak resident "
        f"memory of each worker (GiB): {rss}."])
