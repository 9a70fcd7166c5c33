"""``dpfast demo``: DP releases of the bundled UCI Adult census extract, printed (and drawn with
--plot) next to the true values."""
import argparse
from typing import TYPE_CHECKING, Any, Iterable, Sequence, TextIO

import numpy as np

from .. import _native
from ..datasets import load_adult
from ..mechanisms import laplace_mechanism, laplace_privacy_loss, max_error_bound
from ..releases import count_categories, histogram
from .errors import CLIError, optional
from .outputs import check_png
from .privacy import accountant, budget_for, check_epsilon, remaining_text, seed_note

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["DEMO_AGE_BINS", "DEMO_AGE_RANGE", "DEMO_MARITAL", "DEMO_RELEASES", "DEMO_LABEL",
           "run"]

# Public parameters of the demo tables, fixed from the survey's design rather than the data:
# the extract holds people aged 17 and over in whole years, with ages top-coded at 90, so
# 10-year bins over [15, 95) hold every record without using the data's minimum or maximum.
DEMO_AGE_BINS = 8
DEMO_AGE_RANGE = (15, 95)
# The seven marital statuses of the CPS questionnaire (the data set's documentation).
DEMO_MARITAL = ("Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed",
                "Married-spouse-absent", "Married-AF-spouse")
DEMO_RELEASES = 3
DEMO_LABEL = "DEMO ONLY - a real release never shows true counts."


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``dpfast demo``: three releases of the Adult data, printed on ``out`` next to the
    truth; its exit code."""
    eps = args.epsilon
    check_epsilon(eps)
    plot = None
    if args.plot is not None:
        # Before anything is spent or printed: a missing matplotlib ends the demo cleanly.
        optional("matplotlib", "matplotlib", "--plot")
        plot = check_png(args, args.plot)
    needed = budget_for([eps] * DEMO_RELEASES)
    acct = accountant(args, default_budget=needed)
    if not acct.check(needed):
        raise CLIError(f"The budget left ({remaining_text(acct)}) cannot cover the demo's "
                       f"{DEMO_RELEASES} releases at epsilon = {eps:g}: nothing was released.")
    train, test = load_adult("train"), load_adult("test")
    ages = train["age"]
    marital = np.concatenate([train["marital-status"], test["marital-status"]])
    rng = None if args.seed is None else _native.ChaCha20(args.seed)

    # Every release is made before anything is printed, so that an error from the library
    # gives one message rather than a half-printed demo.
    true_over_50 = int(np.count_nonzero(ages > 50))
    noisy_over_50 = laplace_mechanism(true_over_50, sensitivity=1, epsilon=eps,
                                      accountant=acct, rng=rng)
    noisy_ages, edges = histogram(ages, bins=DEMO_AGE_BINS, range=DEMO_AGE_RANGE,
                                  epsilon=eps, accountant=acct, rng=rng)
    true_ages = np.histogram(ages, bins=edges)[0]
    noisy_marital = count_categories(marital, DEMO_MARITAL, epsilon=eps, accountant=acct,
                                     rng=rng)
    true_marital = np.array([np.count_nonzero(marital == c) for c in DEMO_MARITAL])
    eta = max(laplace_privacy_loss(1.0 / eps, 1.0, discrete=True) - eps, 0.0)
    age_labels = [f"[{lo:g}, {hi:g})" for lo, hi in zip(edges[:-1], edges[1:])]
    age_labels[-1] = age_labels[-1][:-1] + "]"

    def p(line: str = "") -> None:
        print(line, file=out)

    def table(heading: str, labels: Iterable[str], true: Iterable[Any],
              noisy: Iterable[Any]) -> None:
        rows = [(label, f"{int(t):,}", f"{int(n):,}", f"{int(n) - int(t):+,}")
                for label, t, n in zip(labels, true, noisy)]
        titles = (heading, "true", "noisy", "noisy - true")
        # Columns at least this wide, and two spaces wider than their widest entry (noise
        # of scale 1e9 at a tiny --epsilon makes long numbers).
        widths = [max(w, *(len(r[i]) + 2 for r in rows)) for i, w in enumerate((24, 10, 10, 15))]
        p(f"   {DEMO_LABEL}")
        for r in [titles, *rows]:
            p("   " + r[0].ljust(widths[0]) + "".join(c.rjust(w) for c, w in zip(r[1:], widths[1:])))

    p("dpfast demo: differentially private releases of the bundled UCI Adult census extract")
    p(f"(1994 Current Population Survey, CC BY 4.0): adult.data {len(ages):,} records, "
      f"adult.test {len(test['age']):,}.")
    p(f"Privacy budget: epsilon = {acct.epsilon:g} in total, for {DEMO_RELEASES} releases "
      f"at epsilon = {eps:g} each (--epsilon).")
    p(f"Each release adds discrete Laplace noise of scale 1/epsilon = {1 / eps:g} to every "
      "count.")
    p()
    p("1. How many people in adult.data are over 50?  One person changes this count by at "
      "most 1.")
    table("query", ["people over 50"], [true_over_50], [noisy_over_50])
    p(f"   95% of releases are within +/- {max_error_bound(1, epsilon=eps):,} of the true "
      "count.")
    p()
    p(f"2. Age histogram of adult.data: {DEMO_AGE_BINS} public bins of "
      f"{(edges[1] - edges[0]):g} years. One person is in one bin,")
    p("   so the whole histogram has sensitivity 1 and costs epsilon once.")
    table("age (years)", age_labels, true_ages, noisy_ages)
    p(f"   95% max-error bound: all {DEMO_AGE_BINS} noisy counts are within "
      f"+/- {max_error_bound(DEMO_AGE_BINS, epsilon=eps):,} of the truth, simultaneously.")
    p()
    p(f"3. Marital status, adult.data + adult.test ({len(marital):,} records): the "
      f"{len(DEMO_MARITAL)} public categories.")
    table("marital status", DEMO_MARITAL, true_marital, noisy_marital)
    p(f"   95% max-error bound: all {len(DEMO_MARITAL)} noisy counts are within "
      f"+/- {max_error_bound(len(DEMO_MARITAL), epsilon=eps):,} of the truth, "
      "simultaneously.")
    p()
    if args.ledger is None:
        p(f"Budget spent: epsilon = {acct.spent[0]:g} of {acct.epsilon:g} ({len(acct)} "
          "releases, sequential composition: the epsilons add up).")
    else:
        p(f"Budget spent: epsilon = {eps * DEMO_RELEASES:g} by this demo ({DEMO_RELEASES} "
          f"releases); ledger {args.ledger}: {remaining_text(acct)}.")
    p(f"Certified privacy loss of each release, floating-point error included: "
      f"epsilon' <= {eps:g} + {eta:.1e}.")
    if args.seed is not None:
        p(seed_note(args.seed))
    if plot is not None:
        _demo_plot(plot.tmp, eps, (age_labels, true_ages, noisy_ages),
                   (DEMO_MARITAL, true_marital, noisy_marital))
        plot.commit()
        p(f"Plot of true vs noisy counts (DEMO ONLY) written to {args.plot}.")
    return 0


def _demo_plot(path: str, eps: float, ages: "tuple[Sequence[str], ArrayLike, ArrayLike]",
               marital: "tuple[Sequence[str], ArrayLike, ArrayLike]") -> None:
    """Grouped bars, true next to noisy, for the age histogram and the marital table."""
    optional("matplotlib", "matplotlib", "--plot")
    # The object-oriented API with the Agg canvas: no display needed, and no global pyplot
    # backend switched under a caller who runs the demo from a notebook.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    width = 0.4
    for ax, (labels, true, noisy), title in zip(
            fig.subplots(1, 2), (ages, marital),
            ("Age histogram, adult.data", "Marital status, adult.data + adult.test")):
        x = np.arange(len(labels))
        ax.bar(x - width / 2, true, width, label="true (DEMO ONLY: never released)",
               color="0.65")
        ax.bar(x + width / 2, noisy, width, label=f"noisy (epsilon = {eps:g})",
               color="tab:blue")
        ax.set_xticks(x, labels, rotation=30, ha="right")
        ax.set_ylabel("people")
        ax.set_title(title)
        ax.legend()
    fig.suptitle(f"dpfast demo: true vs noisy counts, epsilon = {eps:g} per table. "
                 "DEMO ONLY - a real release never shows true counts.")
    fig.savefig(path, format="png", dpi=100)
