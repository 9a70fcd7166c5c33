"""The command line's arguments: the parser of every command, its options' types and help,
and the function each command runs."""
import argparse
import codecs
import math
from typing import TYPE_CHECKING, Any, Callable

from .. import __version__
from . import diagnostics
from .aggregate import run as run_aggregate
from .bench import run as run_bench
from .demo import DEMO_RELEASES
from .demo import run as run_demo
from .histogram import run as run_histogram

if TYPE_CHECKING:
    from typing import TypeVar

    _T = TypeVar("_T")

__all__ = ["DESCRIPTION", "EXIT_HELP", "SEED_HELP", "AGG_STATISTICS", "build_parser"]

#: The program's description in ``dpfast --help``.
DESCRIPTION = """dpfast command line.

  dpfast demo       DP releases of the bundled UCI Adult census data, shown next to the truth
  dpfast histogram  a DP histogram or category count of one column of a CSV or Parquet file
  dpfast aggregate  DP count, sum, mean, variance or std per key of a CSV or Parquet file
  dpfast info       the compiled kernels in use and the thread count
  dpfast bench      throughput of every mechanism family next to numpy's nearest equivalent
"""
#: The statistics of a value column, in the order of their options on the command line.
AGG_STATISTICS = ("sum", "mean", "variance", "std")


class _StatisticAction(argparse.Action):
    """--count / --sum / --mean / --variance / --std: appended to one list, so that the
    output's columns follow the command line."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        stats = list(getattr(namespace, self.dest, None) or [])
        stats.append((self.const, option_string, values))
        setattr(namespace, self.dest, stats)


def _arg(convert: "Callable[[str], _T]", ok: "Callable[[_T], bool]",
         rule: str) -> "Callable[[str], _T]":
    """An argparse type: ``convert`` the text, then require ``ok`` of the value; the error
    says ``rule`` (with the text given)."""
    kind = "an integer" if convert is int else "a number"

    def parse(text: str) -> "_T":
        try:
            x = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {kind}: {text!r}") from None
        if not ok(x):
            raise argparse.ArgumentTypeError(f"{rule}, got {text!r}")
        return x
    return parse


_positive_int = _arg(int, lambda x: x >= 1, "must be >= 1")
_positive_float = _arg(float, lambda x: math.isfinite(x) and x > 0,
                       "epsilon must be a finite number > 0")
_probability = _arg(float, lambda x: 0 < x < 1, "beta must be in (0, 1)")
_confidence = _arg(float, lambda x: 0 < x < 1, "the confidence must be in (0, 1)")
_seed = _arg(int, lambda x: x >= 0, "seed must be >= 0")
_probability_delta = _arg(float, lambda x: 0 < x < 1, "delta must be in (0, 1)")
_positive_float_rho = _arg(float, lambda x: math.isfinite(x) and x > 0,
                           "rho must be a finite number > 0")
_share = _arg(float, lambda x: 0 < x < 1, "the share must be in (0, 1)")


EXIT_HELP = """\
Exit status:
  0    success
  1    dpfast audit: a claimed epsilon was contradicted
  2    an error in the arguments or the input (one line on standard error; checked
       before any budget is charged where it can be)
  129  hung up (SIGHUP), 130 interrupted (Ctrl-C, SIGINT), 143 terminated (SIGTERM):
       files not yet complete are removed; a charge already made stays spent"""


SEED_HELP = ("seed the noise generator: reproducible output for tests and demonstrations. "
             "Anyone who knows the seed can remove the noise, so never for a real release")

HISTOGRAM_EPILOG = """\
Bin edges and categories must be public: chosen without looking at the data. Bins follow
numpy.histogram: [low, high), the last bin closed; values outside the edges are not counted.
Values are read from a CSV file with a header row (stdlib csv; surrounding spaces ignored,
blank lines skipped) or, for FILE.parquet, with pyarrow. An empty value or "?" is missing:
an error naming its line unless --drop-missing drops those records before counting (a
per-record filter, so the guarantee still covers every record of the file; the release
counts the others). With --categories, values are compared as text; a missing value that is
not itself in the list goes to the (other) row under --other.
Output: CSV with columns bin_low,bin_high,noisy_count or category,noisy_count. A summary
(epsilon spent, number of cells, (1 - beta) max-error bound) goes to standard error. True
counts are never printed."""


def _encoding(text: str) -> str:
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown text encoding {text!r}") from None
    return text


def _ledger_options(parser: argparse.ArgumentParser, budget_default: str) -> None:
    parser.add_argument(
        "--ledger", metavar="FILE", default=None,
        help="charge the releases to the durable budget in FILE, shared by every process "
             "and run that uses it (each charge is written and synced before any noise is "
             "drawn; a release the budget cannot cover is refused)")
    parser.add_argument("--budget", type=_positive_float, default=None, metavar="EPSILON",
                        help=f"total epsilon of a new --ledger FILE {budget_default}")


AGGREGATE_EPILOG = """\
Each statistic is one option, repeatable, in the order of the output's columns:
  --count                 noisy number of rows per key (column "count")
  --sum COL:LO:HI         noisy sum of COL clamped to the public range [LO, HI] ("sum_COL")
  --mean / --variance / --std COL:LO:HI   likewise ("mean_COL", "variance_COL", "std_COL")
LO and HI must be public: chosen without looking at the data (negative bounds are fine:
--sum balance:-500:500). All statistics share one budget (--epsilon, --delta or --rho),
split between the key selection and the measurements; --plan shows the split, each
measurement's noise and the selection's thresholds.

What a person is: with --privacy-unit COL, each person (value of COL) keeps at most
--max-groups keys and --max-rows rows per key, chosen uniformly at random under the
release's key; without it, each row is a person (the command says which on standard error).

Keys: --keys K1,K2,... publishes exactly those keys (zeros included; other rows dropped).
Without --keys, the keys are found in the data and each is released only if enough people
have rows in it (private partition selection, which costs delta and, under the optimal
and Gaussian rules, --selection of epsilon): a key with few people is usually not released.

Input: a CSV file with a header row (read with pyarrow; key and --privacy-unit values are
taken as text, exactly as written; an empty field is missing) or FILE.parquet (only the
columns named are read, batch by batch, with a progress bar on large files if tqdm is
installed; keys of any type). A missing key or person, or a missing, NaN or infinite
value, is an error naming its record; values are never shown.
Output: CSV with columns KEY,count,sum_COL,... one row per released key, sorted, written
atomically. A summary (keys released, budget spent, ledger) goes to standard error."""


def _aggregate_parser(sub: Any) -> None:
    agg = sub.add_parser(
        "aggregate", help="DP count, sum, mean, variance or std per key of a CSV/Parquet "
                          "file, each person's rows bounded",
        description="Per-key statistics of a CSV or Parquet file under one (epsilon, "
                    "delta) or rho budget: each person's contribution bounded, the keys "
                    "public (--keys) or selected privately.",
        epilog=AGGREGATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    agg.add_argument("file", metavar="FILE", help="CSV file with a header row, or .parquet")
    agg.add_argument("--by", required=True, metavar="COL", help="the column of keys")
    agg.add_argument("--privacy-unit", metavar="COL", default=None,
                     help="the column naming each row's person (default: each row is a "
                          "person)")
    agg.add_argument("--max-groups", type=_positive_int, default=None, metavar="L0",
                     help="keys each person keeps at most (default 1; needs --privacy-unit)")
    agg.add_argument("--max-rows", type=_positive_int, default=None, metavar="LINF",
                     help="rows each person keeps per key at most (default 1; needs "
                          "--privacy-unit)")
    agg.add_argument("--keys", metavar="K1,K2,...", default=None,
                     help="the public keys, comma-separated, surrounding spaces ignored "
                          "(default: keys selected privately from the data)")
    agg.add_argument("--count", dest="stats", action=_StatisticAction, nargs=0,
                     const="count", help="the noisy number of rows per key")
    for stat in AGG_STATISTICS:
        agg.add_argument(f"--{stat}", dest="stats", action=_StatisticAction,
                         const=stat, metavar="COL:LO:HI",
                         help=f"the noisy {stat} of COL per key, values clamped to [LO, HI]")
    agg.add_argument("--epsilon", type=_positive_float, default=None,
                     help="epsilon of the whole release")
    agg.add_argument("--delta", type=_probability_delta, default=None,
                     help="delta of the whole release (Gaussian noise; keys selected "
                          "privately)")
    agg.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace",
                     help="noise of the measurements (default laplace)")
    agg.add_argument("--rho", type=_positive_float_rho, default=None,
                     help="a zCDP budget instead of --epsilon (--noise gaussian, public "
                          "--keys)")
    agg.add_argument("--selection", type=_share, default=None, metavar="SHARE",
                     help="the key selection's share of epsilon under --selection-rule "
                          "optimal or gaussian, in (0, 1) (default: an equal share with each "
                          "measurement); refused under the count rule, which spends none")
    agg.add_argument("--selection-rule", choices=["auto", "count", "optimal", "gaussian"],
                     default="auto",
                     help="the key selection's rule: a threshold on the released noisy count "
                          "(count), optimal thresholding (Desfontaines et al. 2022), weighted "
                          "Gaussian (Swanberg et al. 2023), or auto (count when --count or a "
                          "sum, mean or variance is measured with Laplace noise, else optimal "
                          "at --max-groups 1 and weighted Gaussian above; default)")
    agg.add_argument("--out", metavar="FILE", default=None,
                     help="write the CSV here (default: standard output)")
    agg.add_argument("--force", action="store_true", help="replace an existing --out file "
                     "(never the input FILE)")
    agg.add_argument("--seed", type=_seed, default=None, help=SEED_HELP)
    agg.add_argument("--plan", action="store_true",
                     help="print what each measurement would cost and its noise, and the "
                          "key selection's thresholds; nothing charged, no record read")
    _ledger_options(agg, "(required to create a new file)")
    agg.add_argument("--budget-delta", type=_probability_delta, default=None,
                     metavar="DELTA", help="total delta of a new --ledger FILE (default 0)")
    agg.set_defaults(func=run_aggregate, stats=None)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``dpfast`` and its commands; each command's function is ``args.func``."""
    parser = argparse.ArgumentParser(prog="dpfast", description=DESCRIPTION, epilog=EXIT_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"dpfast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser(
        "demo", help="DP count, age histogram and marital-status table of the bundled "
                     "Adult census data, next to the true values",
        description="Releases, from the bundled UCI Adult census extract, the number of "
                    "people over 50, an age histogram and a marital-status table, each at "
                    "--epsilon and charged to one privacy budget, and prints them next to "
                    "the true values with their 95% error bounds. A demonstration only: a "
                    "real release never shows the truth.")
    demo.add_argument("--epsilon", type=_positive_float, default=1.0,
                      help=f"epsilon of each of the {DEMO_RELEASES} releases (default 1.0; "
                           f"the budget is {DEMO_RELEASES} x epsilon)")
    demo.add_argument("--seed", type=_seed, default=None, help=SEED_HELP)
    demo.add_argument("--plot", metavar="FILE.png", default=None,
                      help="also draw true vs noisy bars of both tables (needs matplotlib)")
    _ledger_options(demo, "(default budget for a new file: the demo's 3 x epsilon)")
    demo.add_argument("--force", action="store_true", help="replace an existing --plot file")
    demo.set_defaults(func=run_demo)

    hist = sub.add_parser(
        "histogram", help="DP histogram or category counts of one column of a CSV/Parquet "
                          "file",
        description="An epsilon-DP histogram (--bins) or count per category (--categories) "
                    "of one column: exact counts plus discrete Laplace noise of scale "
                    "1/epsilon.",
        epilog=HISTOGRAM_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    hist.add_argument("file", metavar="FILE", help="CSV file with a header row, or .parquet")
    hist.add_argument("--column", required=True, metavar="COL", help="the column to count")
    kind = hist.add_mutually_exclusive_group(required=True)
    kind.add_argument("--bins", metavar="EDGES",
                      help='increasing edges "0,18,30,50,65,100", or "N:LOW:HIGH" for N equal '
                           'bins over [LOW, HIGH]; write "--bins=-5,0,5" when the first edge '
                           "is negative")
    kind.add_argument("--categories", metavar="C1,C2,...",
                      help="the public list of categories, comma-separated")
    hist.add_argument("--other", action="store_true",
                      help="count values outside --categories in an extra (other) row "
                           "instead of failing")
    hist.add_argument("--epsilon", type=_positive_float, required=True,
                      help="privacy parameter of the release")
    hist.add_argument("--out", metavar="FILE", default=None,
                      help="write the CSV here (default: standard output)")
    hist.add_argument("--seed", type=_seed, default=None, help=SEED_HELP)
    hist.add_argument("--beta", type=_probability, default=0.05,
                      help="failure probability of the reported max-error bound "
                           "(default 0.05)")
    hist.add_argument("--postprocess", choices=["clip", "consistent"], default=None,
                      help="clip: negative counts to 0; consistent: non-negative integers "
                           "keeping the noisy total (free under DP)")
    hist.add_argument("--drop-missing", action="store_true",
                      help='drop records whose value is empty or "?" before counting')
    hist.add_argument("--encoding", type=_encoding, default="utf-8",
                      help="text encoding of a CSV FILE (default utf-8; a byte-order mark "
                           "is skipped)")
    _ledger_options(hist, "(required to create a new file)")
    hist.add_argument("--force", action="store_true", help="replace an existing --out file "
                      "(never the input FILE)")
    hist.set_defaults(func=run_histogram)

    _aggregate_parser(sub)

    from ..auditing import CASES
    aud = sub.add_parser(
        "audit", help="a lower bound on the epsilon a mechanism really spends (empirical "
                      "privacy audit)",
        description="Runs a mechanism many times on two neighbouring inputs, chooses an "
                    "output event on half of the samples and tests it on the other half: "
                    "with the given confidence the mechanism spends at least the epsilon "
                    "printed (Clopper-Pearson bounds; needs scipy). Exit status 1 when the "
                    "bound exceeds the claimed epsilon.",
        epilog="Cases:\n" + "\n".join(f"  {name:24s} {case.about}"
                                       for name, case in CASES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    aud.add_argument("cases", nargs="*", metavar="CASE", default=None,
                     help="cases to audit (default: all)")
    aud.add_argument("--samples", type=_positive_int, default=None,
                     help="outputs drawn per case (default: 4000000, 200000 for the "
                          "selection mechanisms, which run one call per output)")
    aud.add_argument("--confidence", type=_confidence, default=0.99,
                     help="confidence of the bounds (default 0.99)")
    aud.add_argument("--seed", type=_seed, default=None, help=SEED_HELP)
    aud.set_defaults(func=diagnostics.audit)

    info = sub.add_parser("info", help="show the compiled kernels in use and thread count")
    info.set_defaults(func=diagnostics.info)

    from ..benchmarks import FAMILIES
    bench = sub.add_parser(
        "bench", help="throughput of every mechanism family next to numpy",
        description="Times each mechanism family (median of interleaved repeats after a "
                    "warm-up) and reports ns per element, elements/s and the ratio to "
                    "numpy's nearest equivalent measured in the same run, with the machine "
                    "it ran on.")
    bench.add_argument("--only", nargs="+", choices=FAMILIES, default=None, metavar="FAMILY",
                       help=f"run only these families: {', '.join(FAMILIES)}")
    bench.add_argument("--size", type=_positive_int, default=None,
                       help="elements per call (default 10000000; 10000 with --quick)")
    bench.add_argument("--threads", type=_positive_int, nargs="+", default=None,
                       help="thread counts of the dpfast cases (default: 1 and the default "
                            "thread count)")
    bench.add_argument("--repeat", type=_positive_int, default=None,
                       help="timed repeats after a warm-up (default 7; 2 with --quick)")
    bench.add_argument("--quick", action="store_true",
                       help="a run of seconds: size 10000, 2 repeats")
    bench.add_argument("--scaling", action="store_true",
                       help="also time Laplace and the exponential mechanism against size "
                            "(10^3..10^8; ..10^5 with --quick) and fit the fixed overhead "
                            "per call and the cost per element")
    bench.add_argument("--json", metavar="FILE", default=None,
                       help="also write machine, results and scaling as JSON")
    bench.add_argument("--plot", metavar="FILE.png", default=None,
                       help="also draw a bar chart of ratios vs numpy (needs matplotlib)")
    bench.add_argument("--markdown", action="store_true",
                       help="print the table as Markdown (for the README)")
    bench.add_argument("--small-calls", action="store_true",
                       help="instead, microseconds per small call (a scalar release, a spend, "
                            "10^3 cells or candidates) beside other DP libraries")
    bench.add_argument("--linear", action="store_true",
                       help="instead, error and time of linear-query releases (all ranges: "
                            "tree vs independent Laplace vs OpenDP; a census hierarchy; "
                            "marginals of the Adult data, graphical models and AIM/MST "
                            "among them) at the same epsilon")
    bench.add_argument("--mbi", metavar="DIR", default=None,
                       help="with --linear: a directory holding private-pgm (mbi) and jax, "
                            "installed apart (pip install --target DIR mbi): its AIM and "
                            "MST run beside dpfast's graphical models, each in a child "
                            "process with a timeout")
    bench.add_argument("--interactive", action="store_true",
                       help="instead, the sparse vector technique over 10^7 streamed queries "
                            "(vs numpy), the auditor's samples per second and private "
                            "multiplicative weights' answers per second")
    bench.add_argument("--budgets", action="store_true",
                       help="instead, discrete Gaussian noise beside discrete Laplace and "
                            "OpenDP, gaussian_mechanism's std over sigma, a census hierarchy "
                            "with a rho per level, and spends through leases beside the "
                            "ledger's durable spend")
    bench.add_argument("--records", action="store_true",
                       help="instead, statistics of records beside PipelineDP, OpenDP, "
                            "Tumult, diffprivlib and PyDP (each in its own process): "
                            "per-department "
                            "count, sum and mean of --size rows (default 10^7) with each "
                            "person's rows bounded and the departments selected privately, "
                            "the overall median and mean, and 99 percentiles")
    bench.add_argument("--opendp-polars", metavar="DIR",
                       help="with --records: a directory holding the polars version OpenDP "
                            "was built against (pip install --target DIR polars==1.36.1)")
    bench.add_argument("--tumult", metavar="DIR",
                       help="with --records: a directory holding Tumult Analytics, installed "
                            "apart (pip install --target DIR tmlt.analytics)")
    bench.add_argument("--no-libraries", action="store_true",
                       help="skip comparisons with other DP libraries even if installed")
    bench.add_argument("--force", action="store_true",
                       help="replace existing --json or --plot files")
    bench.set_defaults(func=run_bench)
    return parser
