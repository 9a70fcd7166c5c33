"""Small calls: microseconds per call of the releases production pipelines make by the
thousand (one value, one spend, a small table), beside the same calls in other DP libraries,
measured in the same run.

From the command line: ``dpfast bench --small-calls`` or ``python bench/small_calls.py``.

Each case makes ``calls`` calls in a loop; the loops are timed interleaved
(:func:`dpfast.benchmarks.core.time_calls`), ``repeat`` rounds after a warm-up, dpfast's
cases with numpy's and the reference, then the other libraries', and the median round is
divided by ``calls``. The machine's speed drifts on a shared host, so compare figures
of one run: the ratio to PyDP's ``add_noise`` is in the table.
"""
import importlib
import os
import statistics
import tempfile
import warnings
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import numpy as np

from .core import check_positive_int, machine_info, machine_line, time_calls

if TYPE_CHECKING:
    from types import ModuleType

REFERENCE = "PyDP LaplaceMechanism.add_noise"


def dpfast_cases() -> list[tuple[str, Callable[[], object]]]:
    """(name, function making one call) for dpfast's small calls."""
    import dpfast as dp

    acct = dp.Accountant()
    cells = np.arange(1000)
    utilities = np.random.default_rng(1).normal(size=1000)
    # A durable budget in a temporary directory (removed when the last case is dropped); on
    # the disk of the temporary directory, whose fdatasync bounds its cost from below.
    where = tempfile.TemporaryDirectory(prefix="dpfast-bench-")
    durable = dp.Accountant(ledger=os.path.join(where.name, "budget.ledger"))
    weakref.finalize(durable, where.cleanup)         # the directory lives as long as it
    return [
        ("dp.laplace_mechanism(int)",
         lambda: dp.laplace_mechanism(5, sensitivity=1, epsilon=1.0, accountant=acct)),
        ("dp.laplace_mechanism(float)",
         lambda: dp.laplace_mechanism(5.0, sensitivity=1.0, epsilon=1.0, accountant=acct)),
        ("dp.Accountant.spend", lambda: acct.spend(0.1)),
        ("dp.Accountant.spend, ledger file (fdatasync)", lambda: durable.spend(0.1)),
        ("dp.noisy_counts, 10^3 cells",
         lambda: dp.noisy_counts(cells, epsilon=1.0, accountant=acct)),
        ("dp.exponential_mechanism, 10^3 candidates",
         lambda: dp.exponential_mechanism(utilities, epsilon=1.0, accountant=acct)),
        ("dp.report_noisy_max, 10^3 candidates",
         lambda: dp.report_noisy_max(utilities, epsilon=1.0, accountant=acct)),
    ]


def library_cases() -> list[tuple[str, Callable[[], object]]]:
    """(name, function making one call) for the same jobs in the DP libraries installed, and
    numpy's (insecure) scalar Laplace for reference."""
    out: list[tuple[str, Callable[[], object]]] = []
    gen = np.random.default_rng(2)
    out.append(("numpy Generator.laplace (scalar, not DP-safe)",
                lambda: gen.laplace(5.0, 1.0)))

    def load(name: str) -> "ModuleType | None":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return importlib.import_module(name)
        except Exception:                 # missing, or broken by its own dependencies
            return None

    nm = load("pydp.algorithms.numerical_mechanisms")
    if nm is not None:
        add_noise = nm.LaplaceMechanism(1.0, 1.0).add_noise
        out.append((REFERENCE, lambda: add_noise(5.0)))
    mechs = load("diffprivlib.mechanisms")
    budget = load("diffprivlib.accountant")
    if mechs is not None:
        randomise = mechs.Laplace(epsilon=1.0, sensitivity=1.0).randomise
        out.append(("diffprivlib Laplace.randomise", lambda: randomise(5.0)))
        utilities = np.random.default_rng(1).normal(size=1000).tolist()
        out.append(("diffprivlib Exponential, 10^3 candidates",
                    lambda: mechs.Exponential(epsilon=1.0, sensitivity=1.0,
                                              utility=utilities).randomise()))
    if budget is not None:
        acct = budget.BudgetAccountant()
        out.append(("diffprivlib BudgetAccountant.spend", lambda: acct.spend(0.1, 0)))
    odp = load("opendp.prelude")
    if odp is not None:
        try:
            odp.enable_features("contrib")
            meas = odp.m.make_laplace(odp.atom_domain(T=float, nan=False),
                                      odp.absolute_distance(T=float), scale=1.0)
            out.append(("OpenDP make_laplace (scalar)", lambda: meas(5.0)))
        except Exception:
            pass
    return out


def run(repeat: int = 7, calls: int = 2000, libraries: bool = True) -> list[dict[str, Any]]:
    """Microseconds per call of every case (median of ``repeat`` interleaved rounds).

    Returns
    -------
    list of dict
        ``name, impl ("dpfast" or "library"), us_per_call, spread`` (min and max over rounds)
        and ``vs_reference`` (PyDP's add_noise time / this time, when PyDP is installed).
    """
    repeat = check_positive_int(repeat, "repeat")
    calls = check_positive_int(calls, "calls")
    todo = [(n, "dpfast", f) for n, f in dpfast_cases()]
    if libraries:
        todo += [(n, "library", f) for n, f in library_cases()]
    # Two groups, each interleaved: dpfast with numpy and the reference, then the rest of
    # the libraries (some leave thread pools spinning after them, which would slow the
    # calls measured beside them on a 2-core machine).
    first = [i for i, (n, impl, _) in enumerate(todo)
             if impl == "dpfast" or n == REFERENCE or n.startswith("numpy")]
    rest = [i for i in range(len(todo)) if i not in first]

    def loop(fn: Callable[[], object]) -> Callable[[], None]:
        def run_calls() -> None:
            for _ in range(calls):
                fn()
        return run_calls

    times: list[list[float]] = [[] for _ in todo]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # diffprivlib's per-call privacy warnings
        for group in (first, rest):
            for i, ts in zip(group, time_calls([loop(todo[i][2]) for i in group], repeat)):
                times[i] = ts
    rows: list[dict[str, Any]] = []
    for (name, impl, _), ts in zip(todo, times):
        per = [t / calls * 1e6 for t in ts]
        rows.append({"name": name, "impl": impl, "us_per_call": statistics.median(per),
                     "spread": [min(per), max(per)], "vs_reference": None})
    ref = next((r["us_per_call"] for r in rows if r["name"] == REFERENCE), None)
    if ref is not None:
        for r in rows:
            r["vs_reference"] = ref / r["us_per_call"]
    return rows


def to_markdown(rows: Iterable[Mapping[str, Any]], repeat: int, calls: int) -> str:
    """The table of :func:`run`, with the machine line."""
    lines = [f"Machine: {machine_line(machine_info())}", "",
             f"{calls} calls per round, median of {repeat} interleaved rounds after a warm-up",
             "", "| call | us per call | min..max | vs PyDP add_noise |", "|---|---:|---:|---|"]
    for r in rows:
        vs = "" if r["vs_reference"] is None else (
            f"{r['vs_reference']:.2f}x faster" if r["vs_reference"] >= 1
            else f"{1 / r['vs_reference']:.2f}x slower")
        if r["name"] == REFERENCE:
            vs = "(reference)"
        lines.append(f"| {r['name']} | {r['us_per_call']:.2f} | "
                     f"{r['spread'][0]:.2f}..{r['spread'][1]:.2f} | {vs} |")
    return "\n".join(lines)
