"""``dpfast bench``: the benchmark the options choose (throughput against numpy by default, or
small calls, linear queries, interactive releases, budgets, statistics of records), printed
and written to --json and --plot when asked."""
import argparse
import json
import sys
from typing import Any, TextIO

from .errors import optional
from .outputs import OutputFile, check_png, output_file

__all__ = ["run"]


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``dpfast bench``: the benchmark the options choose, printed on ``out``; its exit
    code."""
    from .. import benchmarks
    from ..benchmarks import suite

    # Checked before timing anything: a bad option or a missing matplotlib ends the command
    # with one message instead of after a minute of measurement.
    suite.check_families(args.only)
    plot = json_out = None
    if args.plot is not None:
        optional("matplotlib", "matplotlib", "--plot")
        plot = check_png(args, args.plot)
    if args.json is not None:
        json_out = output_file(args, args.json, "--json")
    size = args.size if args.size is not None else (suite.QUICK_SIZE if args.quick else 10**7)
    repeat = (args.repeat if args.repeat is not None
              else (suite.QUICK_REPEAT if args.quick else 7))
    if args.small_calls:
        return _bench_small_calls(args, out, repeat, json_out)
    if args.linear:
        return _bench_linear(args, out, json_out)
    if args.interactive:
        return _bench_interactive(args, out, json_out)
    if args.budgets:
        return _bench_budgets(args, out, json_out)
    if args.records:
        return _bench_records(args, out, json_out)
    report = benchmarks.run(size=size, threads=args.threads, repeat=repeat, only=args.only,
                            include_libraries=not args.no_libraries,
                            scaling_too=args.scaling and not args.quick,
                            quick=False)
    # quick is recorded as asked, though size and repeat above already honour it.
    report.settings["quick"] = args.quick
    if args.scaling and args.quick:
        report.scaling, report.fits = benchmarks.scaling(suite.QUICK_SCALING_SIZES,
                                                         threads=report.settings["threads"],
                                                         repeat=repeat)
    print(report.to_markdown() if args.markdown else report.to_text(), file=out)
    if json_out is not None:
        report.to_json(json_out.tmp)
        json_out.commit()
        print(f"\nResults written to {args.json}.", file=out)
    if plot is not None:
        report.plot(plot.tmp)
        plot.commit()
        print(f"Bar chart of ratios written to {args.plot}.", file=out)
    return 0


def _bench_small_calls(args: argparse.Namespace, out: TextIO, repeat: int,
                       json_out: "OutputFile | None") -> int:
    from ..benchmarks import small_calls

    calls = 200 if args.quick else 2000
    rows = small_calls.run(repeat, calls, libraries=not args.no_libraries)
    print(small_calls.to_markdown(rows, repeat, calls), file=out)
    if json_out is not None:
        with open(json_out.tmp, "w") as f:
            json.dump({"repeat": repeat, "calls": calls, "results": rows}, f, indent=2)
        json_out.commit()
        print(f"\nResults written to {args.json}.", file=out)
    return 0


def _bench_linear(args: argparse.Namespace, out: TextIO, json_out: "OutputFile | None") -> int:
    from ..benchmarks import linear

    report = linear.run(quick=args.quick, libraries=not args.no_libraries, peer=args.mbi)
    return _print_report(report, linear.to_markdown(report), args, out, json_out)


def _bench_interactive(args: argparse.Namespace, out: TextIO,
                       json_out: "OutputFile | None") -> int:
    from ..benchmarks import interactive

    report = interactive.run(quick=args.quick)
    return _print_report(report, interactive.to_markdown(report), args, out, json_out)


def _bench_budgets(args: argparse.Namespace, out: TextIO,
                   json_out: "OutputFile | None") -> int:
    from ..benchmarks import budgets

    report = budgets.run(quick=args.quick)
    return _print_report(report, budgets.to_markdown(report), args, out, json_out)


def _bench_records(args: argparse.Namespace, out: TextIO,
                   json_out: "OutputFile | None") -> int:
    from ..benchmarks import records

    rows = args.size if args.size is not None else (10**6 if args.quick else 10**7)
    report = records.run(rows=rows, peers=not args.no_libraries,
                         repeats=args.repeat if args.repeat is not None else 1,
                         opendp_path=args.opendp_polars, tumult_path=args.tumult,
                         progress=lambda line: print(line, file=sys.stderr, flush=True))
    return _print_report(report, records.to_markdown(report), args, out, json_out)


def _print_report(report: dict[str, Any], markdown: str, args: argparse.Namespace,
                  out: TextIO, json_out: "OutputFile | None") -> int:
    """Write a benchmark's report as JSON when asked, then print its Markdown."""
    if json_out is not None:
        with open(json_out.tmp, "w") as f:
            json.dump(report, f, indent=2, default=str)
        json_out.commit()
    print(markdown, file=out)
    if json_out is not None:
        print(f"\nResults written to {args.json}.", file=out)
    return 0
