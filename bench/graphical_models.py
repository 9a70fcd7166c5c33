"""Graphical models of the Adult data beside private-pgm (the graphical and wide tables of
`dpfast bench --linear`, alone).

    python bench/graphical_models.py [--mbi DIR] [--seeds 3] [--peer-seeds 1]
        [--epsilons 0.3 1 3] [--peer-timeout 600] [--wide-peer-timeout S] [--json FILE]

dp.marginals with method='model', 'aim' (2- and 3-way workloads) and 'mst' at epsilon 0.3, 1
and 3 (delta 1e-9), all 2-way and 3-way tables of the 8 columns; then the wide 14-column
table's 2-way tables (at the first epsilon); with --mbi, private-pgm's AIM and MST (mbi 2.0.0
installed apart, see dpfast.benchmarks.pgm_peer) in a child process each, stopped after
--peer-timeout seconds (--wide-peer-timeout on the wide table: its AIM runs for hours).
"""
import argparse
import json
import sys

from dpfast.benchmarks import linear
from dpfast.benchmarks.core import machine_info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mbi", metavar="DIR", default=None)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--peer-seeds", type=int, default=1,
                    help="seeds of each private-pgm release (each may take many minutes)")
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    ap.add_argument("--peer-timeout", type=float, default=600.0)
    ap.add_argument("--wide-peer-timeout", type=float, default=None,
                    help="the peer's limit on the wide table (default: --peer-timeout)")
    ap.add_argument("--json", metavar="FILE", default=None,
                    help="the rows, one JSON object a line, appended as each part ends")
    args = ap.parse_args()
    graphical, wide = [], []

    def keep(rows: list, part: str) -> None:
        if args.json:
            with open(args.json, "a") as f:
                for row in rows:
                    f.write(json.dumps({"part": part, **row}, default=str) + "\n")
    keep([machine_info()], "machine")
    for eps in args.epsilons:
        rows = linear.graphical_tables((eps,), seeds=args.seeds, peer=args.mbi,
                                       peer_seeds=args.peer_seeds,
                                       peer_timeout=args.peer_timeout)
        graphical += rows
        keep(rows, "graphical")
    wide = linear.wide_table(epsilon=args.epsilons[0], peer=args.mbi,
                             peer_timeout=args.wide_peer_timeout or args.peer_timeout)
    keep(wide, "wide")
    print("\n".join(linear.graphical_markdown(graphical) + linear.wide_markdown(wide)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
