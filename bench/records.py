"""Statistics of records beside the peers: per-department count, sum and mean with each
person's contribution bounded and the departments selected privately, and the overall median
and mean of the salaries.

    python bench/records.py --out FILE.md [--rows 10000000] [--timeout 600] [--repeats 1]
                            [--no-peers] [--only LIB ...] [--opendp-polars DIR] [--tumult DIR]
                            [--json FILE]

The table (dpfast.benchmarks.records.make_table): --rows rows, rows/10 people with 1-20 rows
each, 10^4 Zipf departments, log-normal salaries clamped to [0, 300 000]. It is written to
Parquet in a temporary directory (removed at the end); dpfast and every peer (PipelineDP,
OpenDP, diffprivlib, PyDP, Tumult Analytics) run in their own child process with --timeout
seconds each. epsilon = 1, delta = 1e-6, at most 1 department
and 5 rows per person. The Markdown report goes to --out, which must be given.

OpenDP's polars plugin only runs with the polars version it was built against (0.16: 1.36.1);
when the installed polars differs, install that one apart and pass it:
    pip install --target /tmp/opendp-polars polars==1.36.1
    python bench/records.py --opendp-polars /tmp/opendp-polars --out /tmp/records.md
Tumult Analytics pins numpy 1 and pyspark 3.5 (and needs Java): install it apart likewise,
    pip install --target /tmp/tumult tmlt.analytics
and pass --tumult /tmp/tumult.
"""
import argparse
import json
import sys

from dpfast.benchmarks import records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**7)
    parser.add_argument("--timeout", type=float, default=records.TIMEOUT,
                        help="seconds each library's child process may take")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-peers", action="store_true", help="dpfast and numpy only")
    parser.add_argument("--only", nargs="+", metavar="LIB",
                        help="only these libraries, e.g. dpfast OpenDP")
    parser.add_argument("--opendp-polars", metavar="DIR",
                        help="directory with the polars version OpenDP was built against")
    parser.add_argument("--tumult", metavar="DIR",
                        help="directory with Tumult Analytics installed apart (it pins numpy 1 "
                             "and pyspark 3.5): pip install --target DIR tmlt.analytics")
    parser.add_argument("--out", required=True, help="Markdown file to write the report to")
    parser.add_argument("--json", help="also write the raw report as JSON here")
    args = parser.parse_args(argv)

    report = records.run(rows=args.rows, peers=not args.no_peers, timeout=args.timeout,
                         repeats=args.repeats, libraries=args.only,
                         opendp_path=args.opendp_polars, tumult_path=args.tumult,
                         progress=lambda line: print(line, file=sys.stderr, flush=True))
    text = records.to_markdown(report)
    with open(args.out, "w") as f:
        f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    print(text)


if __name__ == "__main__":
    main()
