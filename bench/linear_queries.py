"""Linear-query releases, error and time side by side (the same as `dpfast bench --linear`).

    python bench/linear_queries.py [--quick] [--json FILE]

All ranges of n = 2^10, 2^16, 2^20 cells: the tree mechanism against independent Laplace
and OpenDP's consistent b-ary tree (when installed), RMSE over every range and seconds per
release; a tree release of 2^24 leaves on one thread; a census hierarchy of 10^7 leaves;
all 2-way and 3-way marginals of the bundled Adult data (see dpfast.benchmarks.linear).
"""
import sys

from dpfast.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--linear", *sys.argv[1:]]))
