"""``dpfast aggregate``: DP count, sum, mean, variance or std per key of a CSV or Parquet file,
each person's rows bounded: the statistics asked for, the table's columns and types checked
against them, its data checked, the accountant, and the release written as CSV."""
import argparse
import math
import numbers
import os
from typing import TYPE_CHECKING, Any, Literal, TextIO

import numpy as np

from ..accounting import Accountant
from ..groupby.selection import uses_count_rule
from .errors import CLIError
from .outputs import output_file, write_rows
from .privacy import existing_ledger, open_ledger, seed_note
from .readers import read_header, read_table

if TYPE_CHECKING:
    from ..groupby import GroupBy

__all__ = ["run"]


class _AggSpec:
    """One statistic of the command: its output column, its value column and bounds (None
    for the count) and the option that asked for it (for messages)."""

    __slots__ = ("stat", "column", "bounds", "option", "name")

    def __init__(self, stat: str, column: str | None, bounds: tuple[float, float] | None,
                 option: str) -> None:
        self.stat, self.column, self.bounds, self.option = stat, column, bounds, option
        self.name = "count" if column is None else f"{stat}_{column}"


def _parse_stat(option: str, text: str) -> tuple[str, tuple[float, float]]:
    """(column, (lo, hi)) from COL:LO:HI (the column may itself hold colons)."""
    rule = (f"{option} must be COL:LO:HI, a column and its public clamping bounds, finite "
            "numbers with LO < HI (e.g. salary:0:300000)")
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise CLIError(f"{rule}. Got {text!r} instead.")
    try:
        lo, hi = float(parts[1]), float(parts[2])
    except ValueError:
        raise CLIError(f"{rule}: LO and HI must be numbers. Got {text!r} instead.") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise CLIError(f"{rule}: LO and HI must be finite. Got {text!r} instead.")
    if not lo < hi:
        raise CLIError(f"{rule}: LO must be < HI. Got {text!r} instead.")
    return parts[0], (lo, hi)


def _agg_specs(args: argparse.Namespace) -> list[_AggSpec]:
    """The statistics asked for, in command-line order; one set of bounds per column."""
    if not args.stats:
        raise CLIError("dpfast aggregate needs at least one statistic: --count, --sum, "
                       "--mean, --variance or --std COL:LO:HI.")
    specs: list[_AggSpec] = []
    bounds: dict[str, tuple[float, float]] = {}
    for stat, option, text in args.stats:
        if stat == "count":
            spec = _AggSpec("count", None, None, option)
        else:
            column, b = _parse_stat(option, text)
            if bounds.setdefault(column, b) != b:
                raise CLIError(f"{option} {text!r}: column {column!r} is given other bounds "
                               "by another option; a column is clamped to one public range "
                               "(give the same LO:HI to each of its statistics).")
            spec = _AggSpec(stat, column, b, option)
        if any(s.name == spec.name for s in specs):
            raise CLIError(f"{option}: the statistic {spec.name!r} is asked for twice.")
        specs.append(spec)
    for s in specs:
        if s.column is not None and s.column in (args.by, args.privacy_unit):
            raise CLIError(f"{s.option} {s.column!r}: the column is also the "
                           f"{'--by' if s.column == args.by else '--privacy-unit'} column; "
                           "a value column must be another column.")
    if args.by in {s.name for s in specs}:
        raise CLIError(f"--by {args.by!r} is also the name of an output column: rename the "
                       "column in the file.")
    return specs


def _check_aggregate_options(args: argparse.Namespace) -> None:
    """The options that need no file, checked before anything is read or created."""
    if args.privacy_unit is not None and args.privacy_unit == args.by:
        raise CLIError("--privacy-unit and --by must be different columns.")
    if args.privacy_unit is None and (args.max_groups is not None
                                      or args.max_rows is not None):
        raise CLIError("--max-groups and --max-rows bound each person's rows and need "
                       "--privacy-unit; without one each row is a person.")
    if args.epsilon is None and args.rho is None:
        raise CLIError("dpfast aggregate needs --epsilon (with --delta for Gaussian noise or "
                       "private keys) or, for Gaussian noise and public --keys, --rho.")
    if args.keys is None:
        if args.epsilon is None or args.delta is None:
            raise CLIError("Keys selected privately (no --keys) need --epsilon and --delta "
                           "> 0: the selection of the keys costs delta. Or give the public "
                           "keys with --keys.")
        if args.rho is not None:
            raise CLIError("--rho applies with public --keys: keys selected privately are "
                           "paid for in --epsilon and --delta.")
        # Every statistic of this command measures a count (a sum, mean or variance too).
        count_rule = uses_count_rule(args.selection_rule, args.noise, laplace_count=True)
        if args.selection is not None and count_rule:
            raise CLIError("--selection sets the key selection's share of epsilon under "
                           "--selection-rule optimal or gaussian; the count rule (--noise "
                           "laplace with --selection-rule auto, or --selection-rule count) "
                           "spends none. Leave --selection out, or choose another rule.")
    elif args.selection is not None or args.selection_rule != "auto":
        raise CLIError("--selection and --selection-rule are about the key selection: they "
                       "apply only to keys selected privately (no --keys).")
    if args.rho is not None and args.noise != "gaussian":
        raise CLIError("--rho is a zCDP budget, for --noise gaussian.")
    if args.delta is not None and args.noise == "laplace" and args.keys is not None:
        raise CLIError("--delta applies to --noise gaussian or to keys selected privately "
                       "(no --keys); Laplace noise over public keys is pure epsilon-DP.")
    if args.ledger is None and (args.budget is not None or args.budget_delta is not None):
        raise CLIError("--budget and --budget-delta set the budget of a new --ledger file: "
                       "give --ledger too.")


def _agg_columns(args: argparse.Namespace, specs: list[_AggSpec],
                 names: list[str]) -> dict[str, str]:
    """Each column the command reads -> the option naming it (checked against the header,
    whose names are never shown: a file without one would show its first record)."""
    wanted = {args.by: "--by"}
    if args.privacy_unit is not None:
        wanted[args.privacy_unit] = "--privacy-unit"
    for s in specs:
        if s.column is not None:
            wanted.setdefault(s.column, s.option)
    for column, option in wanted.items():
        count = names.count(column)
        if count == 0:
            raise CLIError(f"{option} {column!r} is not a column of {args.file} (its header "
                           f"has {len(names)} column(s); names are compared exactly and are "
                           "not shown here).")
        if count > 1:
            raise CLIError(f"{option} {column!r} names {count} columns of {args.file}; "
                           "column names must be unique.")
    return wanted


def _agg_schema(args: argparse.Namespace, specs: list[_AggSpec],
                file_schema: "Any | None") -> Any:
    """The Arrow schema of the table the release reads: keys and privacy unit as text (CSV)
    or their own type (Parquet, dictionaries decoded), value columns as float64."""
    import pyarrow as pa
    values = [s.column for s in specs if s.column is not None]
    fields = []
    for column in [args.by] + ([args.privacy_unit] if args.privacy_unit else []):
        kind = pa.string()
        if file_schema is not None:
            kind = file_schema.field(column).type
            if pa.types.is_dictionary(kind):
                kind = kind.value_type
            if pa.types.is_nested(kind):
                option = "--by" if column == args.by else "--privacy-unit"
                raise CLIError(f"{option} {column!r}: a column of type {kind} cannot be a "
                               "key (a list or struct column).")
        fields.append(pa.field(column, kind))
    for column in dict.fromkeys(values):
        if file_schema is not None:
            kind = file_schema.field(column).type
            if pa.types.is_dictionary(kind):
                kind = kind.value_type
            if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                    or pa.types.is_decimal(kind)):
                option = next(s.option for s in specs if s.column == column)
                raise CLIError(f"{option} {column!r}: the column holds {kind}, not numbers.")
        fields.append(pa.field(column, pa.float64()))
    return pa.schema(fields)


def _agg_keys(args: argparse.Namespace, schema: Any) -> "list[Any] | None":
    """The public --keys, as values of the --by column's type."""
    if args.keys is None:
        return None
    import pyarrow as pa
    texts = [k.strip() for k in args.keys.split(",")]
    if any(not k for k in texts):
        raise CLIError(f"--keys must be comma-separated non-empty keys. Got {args.keys!r} "
                       "instead.")
    if len(set(texts)) != len(texts):
        raise CLIError(f"--keys names a key more than once. Got {args.keys!r} instead.")
    kind = schema.field(args.by).type
    try:
        keys = pa.array(texts, pa.string()).cast(kind)
    except Exception:       # Arrow's cast errors (the text is public: the --keys given)
        raise CLIError(f"--keys {args.keys!r}: not every key is a value of the --by column's "
                       f"type ({kind}).") from None
    out: list[Any] = list(keys.to_numpy(zero_copy_only=False))
    if len({*out}) != len(out):
        raise CLIError(f"--keys names a key more than once (as {kind}). Got {args.keys!r} "
                       "instead.")
    return out


def _agg_check_data(args: argparse.Namespace, specs: list[_AggSpec], table: Any) -> None:
    """Nulls in the key or privacy-unit column, and missing, NaN or infinite values, by the
    option and the record's position (records counted from 1 after the header)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    checks = [(args.by, "--by", "key")]
    if args.privacy_unit is not None:
        checks.append((args.privacy_unit, "--privacy-unit", "person"))
    for column, option, what in checks:
        col = table.column(column)
        if col.null_count:
            first = int(np.flatnonzero(pc.is_null(col).to_numpy(zero_copy_only=False))[0])
            raise CLIError(f"{option} {column!r}: record {first + 1} of {args.file} has no "
                           f"{what} (an empty or null value; refused: a null is not a group "
                           "of its own). Drop or fill these records first.")
        if pa.types.is_floating(col.type):
            bad = ~np.isfinite(col.to_numpy())
            if bad.any():
                raise CLIError(f"{option} {column!r}: record {int(np.argmax(bad)) + 1} of "
                               f"{args.file} has a NaN or infinite {what}.")
    for column in dict.fromkeys(s.column for s in specs if s.column is not None):
        option = next(s.option for s in specs if s.column == column)
        col = table.column(column)
        x = col.to_numpy()      # float64; nulls read as NaN
        bad = ~np.isfinite(x)
        if bad.any():
            i = int(np.argmax(bad))
            kind = ("missing (empty or null)" if col.null_count and
                    not pc.is_valid(col).to_numpy(zero_copy_only=False)[i]
                    else "NaN" if np.isnan(x[i]) else "infinite")
            raise CLIError(f"{option} {column!r}: the value at record {i + 1} of {args.file} "
                           f"is {kind}; value columns need finite numbers (drop or fill "
                           "these records first).")


def _agg_accountant(args: argparse.Namespace) -> Accountant:
    """The command's accountant: unlimited in memory (rho with --rho), or the durable
    budget in --ledger (created with --budget and --budget-delta when new)."""
    if args.ledger is None:
        if args.budget is not None:
            raise CLIError("--budget sets the budget of a new --ledger file: give --ledger "
                           "too.")
        if args.rho is not None:
            return Accountant(rho=math.inf)
        return Accountant(epsilon=math.inf, delta=1.0)
    acct = existing_ledger(args)
    if acct is not None:
        return acct
    if args.budget is None:
        raise CLIError(f"--ledger {args.ledger!r} does not exist: pass --budget EPSILON (and "
                       "--budget-delta DELTA for a release with delta) to create it.")
    delta = args.budget_delta if args.budget_delta is not None else 0.0
    if delta == 0.0 and (args.delta is not None or args.rho is not None):
        raise CLIError(f"--ledger {args.ledger!r} is new and this release spends delta: pass "
                       "--budget-delta DELTA, the ledger's total delta, to create it.")
    # A --rho release is charged in rho: its ledger composes in zCDP.
    composition: Literal["basic", "zcdp"] = "zcdp" if args.rho is not None else "basic"
    return open_ledger(args.ledger, lambda: Accountant(
        epsilon=args.budget, delta=delta, composition=composition, ledger=args.ledger))


def _agg_remaining(acct: Accountant) -> str:
    """What the ledger has spent and has left, in epsilon and delta (and rho in zCDP)."""
    spent, left = acct.spent, acct.remaining
    text = (f"epsilon = {spent[0]:g}, delta = {spent[1]:g} spent of {acct.epsilon:g}, "
            f"{acct.delta:g}; {left[0]:g}, {left[1]:g} left")
    rho = getattr(spent, "rho", None)
    return text + (f" (rho = {rho:g} spent)" if rho and math.isfinite(rho) else "")


def _agg_plan_text(plan: Any) -> str:
    """The plan's table: costs, noise and thresholds, blanks where a field does not apply."""
    table = plan.astype(object).where(plan.notna(), "-")
    for column in ("people for p=0.5", "people for p=0.99"):
        if column in table:
            table[column] = [x if x == "-" else int(x) for x in table[column]]
    return str(table.to_string(index=False))


def _agg_cell(x: object) -> object:
    """One CSV cell of the output: integers as integers, floats exactly (repr)."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (numbers.Integral, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    if isinstance(x, bytes):
        return x.decode("utf-8", "backslashreplace")
    return x


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``dpfast aggregate``: the release as CSV on ``out`` or in --out (or, with --plan,
    what it would measure); its exit code."""
    from ..groupby import group_by
    err = args.err
    _check_aggregate_options(args)
    specs = _agg_specs(args)
    names, file_schema = read_header(args.file)
    _agg_columns(args, specs, names)
    schema = _agg_schema(args, specs, file_schema)
    keys = _agg_keys(args, schema)
    unit = args.privacy_unit
    print(f"privacy unit: {unit}" if unit is not None else
          "no --privacy-unit: each row is a person", file=err)

    bounds = {s.column: s.bounds for s in specs if s.column is not None}
    aggregations: dict[str, Any] = {
        s.name: "count" if s.column is None else (s.column, s.stat) for s in specs}

    def grouped(data: object) -> "GroupBy":
        return group_by(data, args.by, privacy_unit=unit, max_groups=args.max_groups or 1,
                        max_rows=args.max_rows or 1, keys=keys)

    # The plan from the header alone: every budget parameter checked before anything is
    # created, read or charged.
    plan = grouped(schema.empty_table()).plan(
        epsilon=args.epsilon, delta=args.delta, rho=args.rho, noise=args.noise,
        bounds=bounds, selection=args.selection, selection_rule=args.selection_rule,
        **aggregations)
    if args.plan:
        print(f"dpfast aggregate --plan: what the release of {len(specs)} statistic(s) per "
              f"key of {args.by!r} would measure; nothing charged, no record read.", file=out)
        print(_agg_plan_text(plan), file=out)
        if args.ledger is not None and os.path.lexists(args.ledger):
            acct = open_ledger(args.ledger, lambda: Accountant.from_ledger(args.ledger))
            print(f"Ledger {args.ledger}: {_agg_remaining(acct)}.", file=out)
        return 0

    target = None if args.out is None else output_file(args, args.out, "--out")
    acct = _agg_accountant(args)
    table = read_table(args.file, schema, names, args.err)
    _agg_check_data(args, specs, table)
    frame = grouped(table).agg(
        epsilon=args.epsilon, delta=args.delta, rho=args.rho, noise=args.noise,
        bounds=bounds, selection=args.selection, selection_rule=args.selection_rule,
        accountant=acct, rng=args.seed, **aggregations)

    header = [args.by] + [s.name for s in specs]
    columns = [frame[s.name].to_numpy() for s in specs]
    rows = ([_agg_cell(k)] + [_agg_cell(c[i]) for c in columns]
            for i, k in enumerate(frame.index.to_numpy()))
    write_rows(out, target, header, rows)
    where_to = "standard output" if args.out is None else args.out
    cost = (f"rho = {args.rho:g}" if args.rho is not None else
            f"epsilon = {args.epsilon:g}" + (f", delta = {args.delta:g}"
                                             if args.delta is not None else ""))
    chosen = "public --keys" if keys is not None else "keys selected privately"
    print(f"dpfast aggregate: {len(frame)} key(s) ({chosen}) of {args.by!r} with "
          f"{', '.join(s.name for s in specs)} written to {where_to}; {cost} spent.",
          file=err)
    if args.ledger is not None:
        print(f"Ledger {args.ledger}: {_agg_remaining(acct)}.", file=err)
    if args.seed is not None:
        print(seed_note(args.seed), file=err)
    return 0
