"""dpfast.dask through a 2-worker LocalCluster against single-process dpfast, same run (see
dpfast.benchmarks.cluster): a 10^9-cell noisy_counts from a .npy file to disk, and a
crosstab of 10^8 Parquet records.

    python bench/dask_cluster.py [--quick] [--scratch DIR] [--keep] [--json FILE]
"""
import argparse
import json

from dpfast.benchmarks import cluster

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10^7 cells, 10^6 records")
    parser.add_argument("--scratch", default=None, help="directory for the data files")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--json", default=None, help="also write the report here")
    args = parser.parse_args()
    report = cluster.run(quick=args.quick, scratch=args.scratch, keep=args.keep)
    print(cluster.to_markdown(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, default=str)
