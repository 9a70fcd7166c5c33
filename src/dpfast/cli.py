"""Command line: ``dpfast demo`` (a DP release of the bundled census data), ``dpfast info``."""
import argparse
import math
import sys
from fractions import Fraction

import numpy as np

from . import __version__
from . import _chacha, _sampling
from .accountant import Accountant
from .datasets import load_adult
from .mechanisms import laplace_mechanism
from .noise import laplace_privacy_loss
from .random import default_threads


def discrete_laplace_interval(scale, confidence):
    """Smallest j with P[|K| <= j] >= confidence for discrete Laplace noise of this scale."""
    a = math.exp(-1.0 / scale)
    beta = 1.0 - confidence
    # P[|K| >= j] = 2 a^j / (1 + a) for j >= 1.
    if 2.0 / (1.0 + a) * a <= beta:
        return 0
    return math.ceil(math.log(beta * (1.0 + a) / 2.0) / math.log(a)) - 1


def _budget_for(epsilons):
    """Smallest float budget that the accountant's exact decimal arithmetic lets cover all."""
    total = sum(Fraction(repr(e)) for e in epsilons)
    budget = float(total)
    while Fraction(repr(budget)) < total:
        budget = math.nextafter(budget, math.inf)
    return budget


def _demo(args, out):
    adult = load_adult("train")
    n = len(adult["age"])
    true_count = int(np.count_nonzero(adult["age"] > 50))
    acct = Accountant(epsilon=_budget_for(args.epsilon))
    print("dpfast demo: a differentially private count on the bundled UCI Adult census "
          f"extract (adult.data, {n:,} records)", file=out)
    print("Query: how many people are over 50?  Sensitivity 1: adding or removing one "
          "person changes the count by at most 1.", file=out)
    print(f"Privacy budget for this run: epsilon = {acct.epsilon:g} "
          f"(one release per epsilon below).\n", file=out)
    print(f"{'epsilon':>10}  {'noisy count':>12}  {'95% of releases within':>24}  "
          f"{'certified epsilon (with float error)':>36}", file=out)
    rng = None if args.seed is None else np.random.Generator(_chacha.ChaCha20(args.seed))
    for eps in args.epsilon:
        noisy = laplace_mechanism(true_count, sensitivity=1, epsilon=eps, accountant=acct,
                                  rng=rng)
        half = discrete_laplace_interval(1.0 / eps, 0.95)
        eta = laplace_privacy_loss(1.0 / eps, 1.0, discrete=True) - eps
        certified = f"{eps:g} + {max(eta, 0.0):.1e}"
        print(f"{eps:>10g}  {noisy:>12,}  {'+/- ' + format(half, ','):>24}  "
              f"{certified:>36}", file=out)
    spent = acct.spent[0]
    print(f"\nBudget spent: epsilon = {spent:g} of {acct.epsilon:g} "
          f"({len(acct)} releases, sequential composition).", file=out)
    print(f"DEMO ONLY - a real release never shows this: the true count is {true_count:,}.",
          file=out)
    if args.seed is not None:
        print(f"(seed {args.seed}: reproducible noise for demonstration; real releases use "
              "the default, OS-keyed generator)", file=out)
    return 0


def _info(args, out):
    print(f"dpfast {__version__}", file=out)
    print(f"keystream implementation: {_chacha.simd_impl()}", file=out)
    print(f"sampling implementation:  {_sampling.simd_impl()}", file=out)
    print(f"OpenMP: {'yes' if _sampling.have_openmp() else 'no (kernels run on one thread)'}",
          file=out)
    print(f"default threads: {default_threads()} (OMP_NUM_THREADS or usable CPUs)", file=out)
    return 0


def _positive_float(text):
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"epsilon must be a finite number > 0, got {text!r}")
    return x


def _seed(text):
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if x < 0:
        raise argparse.ArgumentTypeError(f"seed must be >= 0, got {text!r}")
    return x


def build_parser():
    parser = argparse.ArgumentParser(prog="dpfast", description=__doc__)
    parser.add_argument("--version", action="version", version=f"dpfast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="DP count of people over 50 in the bundled Adult data")
    demo.add_argument("--epsilon", type=_positive_float, nargs="+", default=[0.1, 0.001],
                      help="one release per epsilon (default: 0.1 0.001)")
    demo.add_argument("--seed", type=_seed, default=None,
                      help="seed the generator (reproducible demo output; not for releases)")
    demo.set_defaults(func=_demo)
    info = sub.add_parser("info", help="show the compiled kernels in use and thread count")
    info.set_defaults(func=_info)
    return parser


def main(argv=None, out=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args, out or sys.stdout)
    except (TypeError, ValueError) as err:      # bad parameters: a message, not a traceback
        parser.exit(2, f"dpfast: error: {err}\n")


if __name__ == "__main__":
    sys.exit(main())
