"""``dpfast histogram``: a DP histogram (--bins) or count per category (--categories) of one
column of a CSV or Parquet file, the column's raw values turned into numbers or categories."""
import argparse
import math
import numbers
from typing import TYPE_CHECKING, Any, Callable, Iterable, TextIO

import numpy as np

from ..mechanisms import max_error_bound
from ..releases import count_categories, histogram
from .errors import NOT_SHOWN, CLIError
from .outputs import output_file, write_rows
from .privacy import accountant, check_epsilon, remaining_text, seed_note
from .readers import read_column

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["MISSING", "OTHER_LABEL", "run"]

MISSING = ("", "?")
OTHER_LABEL = "(other)"


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, str) and value.strip() in MISSING)


def _missing_error(where: str, value: object, column: str) -> CLIError:
    # Only the kind of missing value: a cell that holds "  ?" would be shown as data.
    shown = ("(null)" if value is None else "(empty)" if not str(value).strip()
             else repr(str(value).strip()))
    return CLIError(f"{where}: missing value {shown} in column {column!r}. Pass "
                    "--drop-missing to drop records with a missing value before counting.")


def _numeric_values(values: Iterable[object], where: Callable[[int], str], column: str,
                    drop_missing: bool) -> "NDArray[np.int64] | NDArray[np.float64]":
    """The column as int64 (every value an integer) or float64; missing values dropped or
    an error."""
    parsed: list[float] = []
    x: Any  # int or float: a parsed str, or a numbers.Real from a Parquet file
    for i, v in enumerate(values):
        if _is_missing(v):
            if drop_missing:
                continue
            raise _missing_error(where(i), v, column)
        if isinstance(v, str):
            try:
                x = int(v)
            except ValueError:
                try:
                    x = float(v)
                except ValueError:
                    raise CLIError(f"{where(i)}: the value in column {column!r} is not a "
                                   "number (--bins counts numbers; use --categories for "
                                   f"text). {NOT_SHOWN}") from None
        elif isinstance(v, numbers.Real) and not isinstance(v, bool):
            x = v
        else:
            raise CLIError(f"{where(i)}: the value in column {column!r} is not a number "
                           f"({type(v).__name__}). {NOT_SHOWN}")
        if isinstance(x, float) and not math.isfinite(x):
            raise CLIError(f"{where(i)}: the value in column {column!r} is not a finite "
                           f"number. {NOT_SHOWN}")
        parsed.append(x)
    if all(isinstance(x, numbers.Integral) and -2**63 <= x < 2**63 for x in parsed):
        # Integer records take the exact integer counting path.
        return np.array(parsed, dtype=np.int64)
    return np.array(parsed, dtype=np.float64)


def _category_values(values: Iterable[object], where: Callable[[int], str], column: str,
                     categories: Iterable[str], other: bool,
                     drop_missing: bool) -> "NDArray[np.object_]":
    """The column as text; None where the value goes to the "other" cell."""
    listed = set(categories)
    kept: list[str | None] = []
    for i, v in enumerate(values):
        text = None if v is None else str(v).strip()
        if text in listed:
            kept.append(text)
        elif _is_missing(v):
            if drop_missing:
                continue
            if not other:
                raise _missing_error(where(i), v, column)
            kept.append(None)
        elif other:
            kept.append(None)
        else:
            raise CLIError(f"{where(i)}: the value of column {column!r} is not in "
                           f"--categories. Add it to the list, or pass --other to count "
                           f"values outside the list in an extra {OTHER_LABEL!r} row. "
                           f"{NOT_SHOWN}")
    return np.array(kept, dtype=object)


def _parse_bins(text: str) -> "tuple[int, tuple[float, float]] | tuple[list[float], None]":
    """(bins, range) for dp.histogram, from "e0,e1,...,ek" or "N:LOW:HIGH"."""
    rule = ("--bins must be comma-separated increasing edges such as 0,18,65,100, or "
            "N:LOW:HIGH for N equal bins over the public range [LOW, HIGH]")
    if ":" in text:
        parts = text.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            n, lo, hi = int(parts[0]), float(parts[1]), float(parts[2])
        except ValueError:
            raise CLIError(f"{rule}. Got {text!r} instead.") from None
        if n < 1 or not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise CLIError(f"{rule}, with N >= 1 and finite LOW < HIGH. Got {text!r} "
                           "instead.")
        return n, (lo, hi)
    try:
        edges = [float(e) for e in text.split(",")]
    except ValueError:
        raise CLIError(f"{rule}. Got {text!r} instead.") from None
    if len(edges) < 2 or not all(math.isfinite(e) for e in edges) \
            or any(b <= a for a, b in zip(edges, edges[1:])):
        raise CLIError(f"{rule}: at least two edges, finite and strictly increasing. "
                       f"Got {text!r} instead.")
    return edges, None


def _parse_categories(text: str, other: bool) -> list[str]:
    cats = [c.strip() for c in text.split(",")]
    if any(not c for c in cats):
        raise CLIError(f"--categories must be comma-separated non-empty names. Got {text!r} "
                       "instead.")
    dupes = sorted({c for c in cats if cats.count(c) > 1})
    if dupes:
        raise CLIError(f"--categories names {dupes[0]!r} more than once. Got {text!r} "
                       "instead.")
    if other and OTHER_LABEL in cats:
        raise CLIError(f"--categories must not contain {OTHER_LABEL!r} together with --other "
                       f"(it names the extra row). Got {text!r} instead.")
    return cats


def _edge_text(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``dpfast histogram``: the noisy counts as CSV on ``out`` or in --out, the summary
    on standard error; its exit code."""
    if args.other and args.categories is None:
        raise CLIError("--other only applies to --categories.")
    bins: Any  # int with a public range, or the list of edges: see _parse_bins
    if args.bins is not None:
        bins, public_range = _parse_bins(args.bins)
        cells = bins if public_range is not None else len(bins) - 1
    else:
        cats = _parse_categories(args.categories, args.other)
        cells = len(cats) + bool(args.other)
    check_epsilon(args.epsilon)
    bound = max_error_bound(cells, epsilon=args.epsilon, beta=args.beta)
    target = None if args.out is None else output_file(args, args.out, "--out")
    acct = accountant(args)
    values, where = read_column(args.file, args.column, args.encoding)

    common = dict(epsilon=args.epsilon, accountant=acct, postprocess=args.postprocess,
                  rng=args.seed)
    data: NDArray[Any]
    if args.bins is not None:
        data = _numeric_values(values, where, args.column, args.drop_missing)
        noisy, edges = histogram(data, bins=bins, range=public_range, **common)
        header = ["bin_low", "bin_high", "noisy_count"]
        rows = [[_edge_text(lo), _edge_text(hi), int(n)]
                for lo, hi, n in zip(edges[:-1], edges[1:], noisy)]
    else:
        data = _category_values(values, where, args.column, cats, args.other,
                                args.drop_missing)
        noisy = count_categories(data, cats, other=args.other, **common)
        header = ["category", "noisy_count"]
        labels = cats + [OTHER_LABEL] * bool(args.other)
        rows = [[c, int(n)] for c, n in zip(labels, noisy)]

    write_rows(out, target, header, rows)
    err = args.err
    where_to = "standard output" if args.out is None else args.out
    print(f"dpfast histogram: {len(rows)} noisy counts of column {args.column!r} of "
          f"{args.file} written to {where_to}; epsilon = {args.epsilon:g} spent.", file=err)
    if args.ledger is not None:
        print(f"Ledger {args.ledger}: {remaining_text(acct)}.", file=err)
    after = (f" (the noise's bound; --postprocess {args.postprocess} changes the counts)"
             if args.postprocess else "")
    print(f"Accuracy: with probability {1 - args.beta:.4g}, every noisy count is within "
          f"+/- {bound:,} of its true count{after}.", file=err)
    if args.seed is not None:
        print(seed_note(args.seed), file=err)
    return 0
