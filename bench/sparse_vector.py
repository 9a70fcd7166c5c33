"""The sparse vector technique, the auditor and private multiplicative weights: throughput
(the same as `dpfast bench --interactive`).

    python bench/sparse_vector.py [--quick] [--json FILE]

AboveThreshold over 10^7 streamed queries (arrays of 10^6) against a Python loop over
numpy's generator and numpy vectorized; the auditor's samples per second; private
multiplicative weights' answers per second on a 10^6-cell histogram (see
dpfast.benchmarks.interactive).
"""
import sys

from dpfast.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--interactive", *sys.argv[1:]]))
