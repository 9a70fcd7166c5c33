"""Linear-query releases: error and time side by side, same run, same epsilon.

- All range queries of a 1-D histogram (n = 2^10, 2^16, 2^20 by default): the tree mechanism
  against independent Laplace noise on every cell and, when installed, OpenDP's consistent
  b-ary tree (its own branching factor, ``choose_branching_factor``). Error is the root mean
  squared error over all n(n+1)/2 ranges, measured over ``runs`` releases (exactly, in O(n)
  per release: see :func:`all_range_mse`); for dpfast the exact expectation is shown too.
- A tree release of 2^24 leaves on one thread (noise on every node and the consistent
  estimate), in ns per leaf.
- A census hierarchy of 10^7 leaf units (nation, 50 states, 10^5 counties, 10^7 blocks).
- All 2-way and 3-way marginals of the bundled Adult data: dp.marginals (independent and
  consistent) and dp.mwem against, when installed, smartnoise-synth's MWEM, MST and AIM
  (``pip install "dpfast[compare]"``), each fitted and sampled in a child process that is
  killed after ``PEER_TIMEOUT`` seconds.

Every case uses the same data and epsilon for all methods.
"""
from __future__ import annotations

import itertools
import math
import multiprocessing
import queue
import statistics
import time
from typing import Any

import numpy as np

import dpfast as dp

from ..linear import tree as _tree
from ..validation import category_codes
from .adult import ADULT_COLUMNS, adult_table, adult_wide
from .adult import full_counts as _full_counts
from .core import time_calls

__all__ = ["all_range_mse", "ranges", "tree_speed", "hierarchy_speed", "run", "to_markdown"]


def all_range_mse(error: np.ndarray) -> float:
    """Mean over all ranges [lo, hi) of (sum of error over the range)^2: with E the prefix
    sums of the error (E_0 = 0), sum over i < j of (E_j - E_i)^2 = m sum E^2 - (sum E)^2."""
    e = np.concatenate(([0.0], np.cumsum(error, dtype=np.float64)))
    m = e.size
    total = m * float(np.dot(e, e)) - float(e.sum()) ** 2
    return total / (m * (m - 1) / 2)


def _opendp_tree(n: int, epsilon: float) -> Any:
    """OpenDP's consistent b-ary tree release of n integer counts at epsilon, or None."""
    try:
        import opendp.prelude as odp
    except ImportError:
        return None
    odp.enable_features("contrib")
    b = odp.t.choose_branching_factor(size_guess=n)
    space = odp.vector_domain(odp.atom_domain(T=int)), odp.l1_distance(T=int)
    tree = odp.t.make_b_ary_tree(*space, leaf_count=n, branching_factor=b)
    meas = tree >> odp.m.then_laplace(scale=float(tree.map(1)) / epsilon)  # type: ignore[no-untyped-call]
    if meas.map(1) > epsilon * (1 + 1e-9):
        raise RuntimeError("OpenDP's tree measurement is not epsilon-DP at this scale")
    consistent = odp.t.make_consistent_b_ary_tree(branching_factor=b)

    def release(counts: np.ndarray) -> np.ndarray:
        return np.asarray(consistent(meas(counts.tolist())), dtype=np.float64)[:n]
    release.branching = b          # type: ignore[attr-defined]
    return release


def ranges(sizes: tuple[int, ...] = (2**10, 2**16, 2**20), epsilon: float = 1.0,
           runs: dict[int, int] | None = None, libraries: bool = True,
           ) -> list[dict[str, Any]]:
    """RMSE over all ranges (mean over ``runs[n]`` releases, with its standard error) and
    median seconds per release, per method and size; the methods are interleaved run by
    run. The all-range error of one release varies a lot (long ranges share their noise),
    hence many runs where a release is cheap."""
    runs = runs or {}
    rows = []
    for n in sizes:
        x = np.random.default_rng(n).poisson(20, n).astype(np.int64)
        acct = dp.Accountant()
        methods: dict[str, Any] = {
            "dp.tree_mechanism": lambda s, x=x, acct=acct: dp.tree_mechanism(
                x, epsilon=epsilon, rng=s, threads=1, accountant=acct).estimate,
            "independent Laplace (dp.noisy_counts)": lambda s, x=x, acct=acct: dp.noisy_counts(
                x, epsilon=epsilon, rng=s, threads=1, accountant=acct),
        }
        od = _opendp_tree(n, epsilon) if libraries else None
        if od is not None:
            methods[f"OpenDP consistent b-ary tree (b = {od.branching})"] = \
                lambda s, od=od, x=x: od(x)
        b, h = _tree.tree_shape(n)
        exact = {"dp.tree_mechanism": _tree.mean_range_variance(
                     n, b, h, _tree.noise_variance(True, h / epsilon)),
                 "independent Laplace (dp.noisy_counts)": _tree.mean_range_variance(
                     n, n, 1, _tree.noise_variance(True, 1 / epsilon))}
        mse: dict[str, list[float]] = {name: [] for name in methods}
        sec: dict[str, list[float]] = {name: [] for name in methods}
        for s in range(runs.get(n, 20)):
            for name, fn in methods.items():
                t0 = time.perf_counter()
                est = fn(s)
                sec[name].append(time.perf_counter() - t0)
                mse[name].append(all_range_mse(est - x))
        for name in methods:
            m = statistics.mean(mse[name])
            se = statistics.stdev(mse[name]) / len(mse[name]) ** 0.5 if len(mse[name]) > 1 \
                else float("nan")
            rows.append({"case": "all ranges", "n": n, "method": name, "runs": len(mse[name]),
                         "rmse": m ** 0.5, "rmse_se": se / (2 * m ** 0.5),
                         "exact_rmse": exact[name] ** 0.5 if name in exact else None,
                         "seconds": statistics.median(sec[name]),
                         "detail": f"b = {b}, height {h}" if name == "dp.tree_mechanism"
                         else ""})
    return rows


def tree_speed(n: int = 2**24, repeat: int = 5) -> dict[str, Any]:
    """Seconds and ns per leaf of a tree release of n leaves on one thread."""
    x = np.random.default_rng(1).poisson(20, n).astype(np.int64)
    acct = dp.Accountant()
    t = time_calls([lambda: dp.tree_mechanism(x, epsilon=1.0, rng=0, threads=1,
                                              accountant=acct)], repeat)[0]
    sec = statistics.median(t)
    return {"case": "tree release, 1 thread", "n": n, "seconds": sec, "ns_per_leaf": sec / n * 1e9}


def hierarchy_speed(leaves: int = 10**7, repeat: int = 3) -> dict[str, Any]:
    """Seconds of a census hierarchy release (nation, 50 states, leaves / 100 counties up
    to 10^5, the leaves)."""
    counties = min(100_000, leaves // 100)
    par = [np.zeros(50, np.int64), np.repeat(np.arange(50), counties // 50),
           np.repeat(np.arange(counties), leaves // counties)]
    x = np.random.default_rng(2).poisson(3, leaves).astype(np.int64)
    acct = dp.Accountant()
    rel: list[Any] = []
    t = time_calls([lambda: rel.append(dp.census_hierarchy(x, par, epsilon=1.0, rng=0,
                                                           accountant=acct))], repeat)[0]
    last = rel[-1]
    sums_ok = all(np.array_equal(np.bincount(p, weights=last.counts[i + 1],
                                             minlength=len(last.counts[i])), last.counts[i])
                  for i, p in enumerate(last.parents))
    return {"case": "census hierarchy", "n": leaves, "counties": counties,
            "seconds": statistics.median(t),
            "children_sum_to_parents": sums_ok,
            "non_negative_integers": all(c.min() >= 0 for c in last.counts)}


#: smartnoise-synth's synthesizers on the Adult table, with their settings. MWEM keeps a
#: dense histogram of its column groups: on the joint 8-column domain (8.2 million cells)
#: it does not finish in minutes, so it also runs with split_factor=4 (groups of two
#: columns), as smartnoise's documentation suggests for wide tables.
SMARTNOISE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("mwem", {"split_factor": 4}), ("mwem", {}), ("mst", {}), ("aim", {}))
#: Seconds a peer synthesizer may take (fit and sample) before it is stopped.
PEER_TIMEOUT = 600.0


def _smartnoise_child(name: str, kw: dict[str, Any], epsilon: float, k: int,
                      out: Any) -> None:
    """In a child process: fit and sample a smartnoise-synth synthesizer on the Adult
    columns (as strings, every column categorical; the category lists are its own, from
    the data, with no budget spent on them), and put (seconds, the synthetic records'
    k-way marginal answers) on ``out``."""
    import contextlib
    import os

    import pandas as pd
    from snsynth import Synthesizer

    from ..linear.workloads import Marginals
    cols, keys = adult_table()
    frame = pd.DataFrame({c: np.asarray(cols[c]).astype(str) for c in ADULT_COLUMNS})
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # its progress
        t0 = time.perf_counter()
        synth = Synthesizer.create(name, epsilon=epsilon, **kw)
        synth.fit(frame, categorical_columns=list(ADULT_COLUMNS), preprocessor_eps=0.0)
        sample = synth.sample(len(frame))
        seconds = time.perf_counter() - t0
    sample = pd.DataFrame(sample, columns=list(ADULT_COLUMNS))
    str_keys = {c: [str(v) for v in keys[c]] for c in ADULT_COLUMNS}
    counts = _full_counts({c: sample[c].astype(str).to_numpy() for c in ADULT_COLUMNS},
                          str_keys)
    out.put((seconds, Marginals(counts.shape, k=k).answer(counts)))


def smartnoise(name: str, kw: dict[str, Any], epsilon: float, k: int,
               timeout: float = PEER_TIMEOUT) -> tuple[float, np.ndarray | None, str]:
    """(seconds, answers, outcome) of one smartnoise-synth run in a child process: outcome
    "ok"; "timeout" (answers None) if it did not finish within ``timeout`` seconds (the
    child is then killed); or "failed" if the child ended without answers."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_smartnoise_child, args=(name, kw, epsilon, k, out))
    t0 = time.perf_counter()
    child.start()
    result, outcome = None, "timeout"
    while time.perf_counter() - t0 < timeout:
        try:
            result = out.get(timeout=min(1.0, max(timeout - (time.perf_counter() - t0), 0.01)))
            outcome = "ok"
            break
        except queue.Empty:
            if not child.is_alive() and out.empty():
                outcome = "failed"
                break
    if child.is_alive() and outcome != "ok":
        child.kill()
    child.join()
    if result is None:
        return time.perf_counter() - t0, None, outcome
    return result[0], result[1], outcome


def _has_smartnoise() -> bool:
    try:
        import snsynth  # noqa: F401
    except ImportError:
        return False
    return True


def marginal_tables(k: int = 2, epsilon: float = 1.0, seeds: int = 5, rounds: int = 30,
                    mwem: bool = True, peers: bool = False,
                    peer_timeout: float = PEER_TIMEOUT, delta: float = 1e-9,
                    mwem_seeds: int | None = None) -> list[dict[str, Any]]:
    """All k-way marginals of the Adult table (8 columns): mean over tables of the l1 error
    divided by the number of records, and seconds, for dp.marginals' two methods, MWEM
    (synthetic histogram over the full 8.2 million-cell domain, ``rounds`` rounds) and,
    with ``peers`` and smartnoise-synth installed, its synthesizers (one run each; MWEM
    with ``iterations=rounds``), all at the same epsilon.

    dp.marginals also runs with Gaussian noise (discrete Gaussian, one sigma for the whole
    release's l2 sensitivity sqrt(tables)): at (``epsilon``, ``delta``), the tightest sigma
    for that one release, each release charged to an accountant holding exactly that
    budget; and through a rho budget, rho the tight conversion of (``epsilon``, ``delta``)
    (:func:`dpfast.zcdp.rho_from_epsilon_delta`), each release charged to an accountant
    holding exactly that rho. Laplace and Gaussian rows use the same seeds (``seeds``
    releases each; MWEM ``mwem_seeds``, default ``max(1, seeds // 2)``)."""
    from ..linear.workloads import Marginals
    from ..zcdp import rho_from_epsilon_delta
    cols, keys = adult_table()
    counts = _full_counts(cols, keys)
    work = Marginals(counts.shape, k=k)
    truth = work.answer(counts)
    n = float(counts.sum())
    acct = dp.Accountant()
    rho = rho_from_epsilon_delta(epsilon, delta)

    def l1(answers: np.ndarray) -> float:
        return float(np.abs(answers - truth).sum()) / n / len(work.attributes)

    def flat(tables: dict[Any, Any]) -> np.ndarray:
        return np.concatenate([np.asarray(t).ravel() for t in tables.values()])

    # dp.marginals counts the records itself (one compiled pass per table).
    methods: dict[str, Any] = {
        f"dp.marginals, method='{m}'": (lambda s, m=m: flat(dp.marginals(
            cols, keys=keys, epsilon=epsilon, k=k, method=m, rng=s,
            accountant=acct).tables))
        for m in ("independent", "consistent")}
    methods["dp.marginals, consistent, then .nonnegative()"] = lambda s: flat(dp.marginals(
        cols, keys=keys, epsilon=epsilon, k=k, rng=s, accountant=acct).nonnegative())
    gauss: dict[str, Any] = {"noise": "gaussian", "epsilon": epsilon, "delta": delta}
    for m in ("independent", "consistent"):
        methods[f"dp.marginals, noise='gaussian', method='{m}'"] = \
            lambda s, m=m: flat(dp.marginals(
                cols, keys=keys, k=k, method=m, rng=s, **gauss,
                accountant=dp.Accountant(epsilon=epsilon, delta=delta)).tables)
    methods["dp.marginals, noise='gaussian', consistent, then .nonnegative()"] = \
        lambda s: flat(dp.marginals(
            cols, keys=keys, k=k, rng=s, **gauss,
            accountant=dp.Accountant(epsilon=epsilon, delta=delta)).nonnegative())
    methods[f"dp.marginals, noise='gaussian', rho={rho:.5g} budget, consistent, then "
            ".nonnegative()"] = lambda s: flat(dp.marginals(
                cols, keys=keys, k=k, rng=s, noise="gaussian", rho=rho,
                accountant=dp.Accountant(rho=rho)).nonnegative())
    if mwem:
        for measure in ("queries", "tables"):
            methods[f"dp.mwem, {rounds} rounds, measure='{measure}'"] = \
                lambda s, measure=measure: dp.mwem(counts, work, epsilon=epsilon, rounds=rounds,
                                                   measure=measure, rng=s,
                                                   accountant=acct).answers
    sigma = {"gaussian": dp.marginal_variance(keys, k=k, **gauss, method="independent"),
             "rho": dp.marginal_variance(keys, k=k, noise="gaussian", rho=rho,
                                         method="independent")}
    mwem_runs = max(1, seeds // 2) if mwem_seeds is None else mwem_seeds
    rows = []
    for name, fn in methods.items():
        err, sec = [], []
        for s in range(seeds if "mwem" not in name else mwem_runs):
            t0 = time.perf_counter()
            answers = fn(s)
            sec.append(time.perf_counter() - t0)
            err.append(l1(answers))
        row = {"case": f"Adult {k}-way marginals", "k": k, "tables": len(work.attributes),
               "method": name, "runs": len(err), "l1_per_record": statistics.mean(err),
               "seconds": statistics.median(sec)}
        if "gaussian" in name:
            budget = "rho" if "rho=" in name else "gaussian"
            row.update({"noise": "gaussian", "epsilon": None if budget == "rho" else epsilon,
                        "delta": None if budget == "rho" else delta,
                        "rho": rho if budget == "rho" else None,
                        "sigma": next(iter(sigma[budget].values())) ** 0.5})
        rows.append(row)
    if peers and _has_smartnoise():
        for synth, kw in SMARTNOISE:
            kw = {**kw, "iterations": rounds} if synth == "mwem" else kw
            seconds, answers, outcome = smartnoise(synth, kw, epsilon, k, peer_timeout)
            settings = ", ".join(f"{a}={v}" for a, v in kw.items())
            rows.append({"case": f"Adult {k}-way marginals", "k": k,
                         "tables": len(work.attributes),
                         "method": f"smartnoise-synth {synth.upper()}"
                                   + (f" ({settings})" if settings else ""),
                         "runs": 1, "l1_per_record": None if answers is None else l1(answers),
                         "seconds": seconds, "timeout": peer_timeout, "outcome": outcome})
    return rows


#: The graphical-model releases of :func:`graphical_tables`: (label, workload k, method).
GRAPHICAL = (("dp.marginals(method='model'), every 2-way table measured", 2, "model"),
             ("dp.marginals(method='aim'), 2-way workload", 2, "aim"),
             ("dp.marginals(method='aim'), 3-way workload", 3, "aim"),
             ("dp.marginals(method='mst')", 2, "mst"))


def graphical_tables(epsilons: tuple[float, ...] = (0.3, 1.0, 3.0), seeds: int = 3,
                     delta: float = 1e-9, peer: str | None = None, peer_seeds: int = 1,
                     peer_timeout: float = 600.0) -> list[dict[str, Any]]:
    """Graphical-model releases of the Adult table (8 columns) with Gaussian noise at
    (epsilon, ``delta``): the mean over all 2-way and over all 3-way tables of the model's
    l1 error divided by the number of records (mean over ``seeds`` releases), and median
    seconds per release; with ``peer`` (a directory holding private-pgm, see
    :mod:`dpfast.benchmarks.pgm_peer`), its AIM and MST in a child process each, at the same
    budget, beside them."""
    cols, keys = adult_table()
    counts = _full_counts(cols, keys)
    n = float(counts.sum())
    d = counts.ndim
    sets = {k: list(itertools.combinations(range(d), k)) for k in (2, 3)}
    truth = {k: [counts.sum(axis=tuple(i for i in range(d) if i not in s)) for s in sets[k]]
             for k in (2, 3)}

    def l1(model: Any, k: int) -> float:
        return float(np.mean([np.abs(model.marginal(s) - t).sum() / n
                              for s, t in zip(sets[k], truth[k])]))
    rows = []
    for eps in epsilons:
        for label, k, method in GRAPHICAL:
            errs: dict[int, list[float]] = {2: [], 3: []}
            sec = []
            for seed in range(seeds):
                acct = dp.Accountant(epsilon=eps, delta=delta)
                t0 = time.perf_counter()
                rel = dp.marginals(cols, keys=keys, k=k, noise="gaussian", epsilon=eps,
                                   delta=delta, method=method, rng=seed, accountant=acct)
                sec.append(time.perf_counter() - t0)
                for j in (2, 3):
                    errs[j].append(l1(rel.model, j))
            rows.append({"case": "Adult graphical", "epsilon": eps, "delta": delta,
                         "method": label, "runs": seeds,
                         "l1_2way": statistics.mean(errs[2]),
                         "l1_2way_sd": statistics.pstdev(errs[2]),
                         "l1_3way": statistics.mean(errs[3]),
                         "seconds": statistics.median(sec),
                         "model_cells": rel.model.cells if rel.model else None})
        if peer is not None and _peer_available(peer):
            from . import pgm_peer
            for method in ("aim", "mst"):
                got = [pgm_peer.run(method, eps, delta, seed, 2, peer, peer_timeout)
                       for seed in range(peer_seeds)]
                done = [g for g in got if g["outcome"] == "ok"]
                rows.append({"case": "Adult graphical", "epsilon": eps, "delta": delta,
                             "method": f"private-pgm {method.upper()} "
                                       f"({got[0].get('version') or 'mbi'}), 2-way workload",
                             "runs": len(done),
                             "l1_2way": statistics.mean(g["l1_2way"] for g in done)
                             if done else None,
                             "l1_2way_sd": statistics.pstdev(g["l1_2way"] for g in done)
                             if done else None,
                             "l1_3way": statistics.mean(g["l1_3way"] for g in done)
                             if done else None,
                             "seconds": statistics.median(g["seconds"] for g in got)
                             if all(g["seconds"] is not None for g in got) else None,
                             "outcome": ", ".join(sorted({g["outcome"] for g in got})),
                             "timeout": peer_timeout})
    return rows


def wide_table(epsilon: float = 1.0, seeds: int = 1, delta: float = 1e-9,
               peer: str | None = None, peer_timeout: float = 600.0) -> list[dict[str, Any]]:
    """All 2-way tables of the wide Adult table (:func:`adult_wide`: 14 columns, a domain
    of about 10**14 cells that no dense array holds): AIM and MST at (``epsilon``,
    ``delta``), the mean l1 error per record over the 91 tables, median seconds, and the
    model's cells; with ``peer``, private-pgm's AIM and MST beside them."""
    cols, keys = adult_wide()
    names = list(keys)
    codes = [category_codes(cols[c], keys[c], "adult_wide") for c in names]
    shape = tuple(len(keys[c]) for c in names)
    n = float(len(codes[0]))
    pairs = list(itertools.combinations(range(len(names)), 2))
    truth = [np.bincount(codes[a] * shape[b] + codes[b], minlength=shape[a] * shape[b])
             .reshape(shape[a], shape[b]) for a, b in pairs]
    rows = []
    for method in ("aim", "mst"):
        errs, sec, cells = [], [], []
        for seed in range(seeds):
            t0 = time.perf_counter()
            rel = dp.marginals(cols, keys=keys, k=2, noise="gaussian", epsilon=epsilon,
                               delta=delta, method=method, rng=seed,
                               accountant=dp.Accountant(epsilon=epsilon, delta=delta))
            sec.append(time.perf_counter() - t0)
            assert rel.model is not None
            errs.append(float(np.mean([np.abs(rel.model.marginal(p) - t).sum() / n
                                       for p, t in zip(pairs, truth)])))
            cells.append(rel.model.cells)
        rows.append({"case": "Adult wide", "columns": len(names), "domain": math.prod(shape),
                     "epsilon": epsilon, "delta": delta,
                     "method": f"dp.marginals(method='{method}'), all 2-way tables",
                     "runs": seeds, "l1_2way": statistics.mean(errs),
                     "seconds": statistics.median(sec), "model_cells": max(cells)})
    if peer is not None and _peer_available(peer):
        from . import pgm_peer
        for method in ("aim", "mst"):
            got = pgm_peer.run(method, epsilon, delta, 0, 2, peer, peer_timeout,
                               wide=True)
            rows.append({"case": "Adult wide", "columns": len(names),
                         "domain": math.prod(shape), "epsilon": epsilon, "delta": delta,
                         "method": f"private-pgm {method.upper()} "
                                   f"({got.get('version') or 'mbi'}), all 2-way tables",
                         "runs": int(got["outcome"] == "ok"), "l1_2way": got["l1_2way"],
                         "seconds": got["seconds"], "model_cells": None,
                         "outcome": got["outcome"], "timeout": peer_timeout})
    return rows


def _peer_available(peer: str) -> bool:
    try:
        from . import pgm_peer
    except ImportError:
        return False
    return pgm_peer.available(peer)


def run(quick: bool = False, libraries: bool = True,
        peer: str | None = None) -> dict[str, Any]:
    """Every linear-query benchmark (small sizes, and no MWEM or peer synthesizers, with
    quick); ``peer``: private-pgm's directory for the graphical-model table."""
    sizes = (2**8, 2**10) if quick else (2**10, 2**16, 2**20)
    runs = {2**8: 5, 2**10: 5} if quick else {2**10: 200, 2**16: 10, 2**20: 3}
    marg = marginal_tables(2, seeds=2 if quick else 10, rounds=20, mwem=not quick,
                           peers=libraries and not quick, mwem_seeds=2)
    marg += marginal_tables(3, seeds=2 if quick else 5, mwem=False)
    graphical = graphical_tables((1.0,) if quick else (0.3, 1.0, 3.0), 1 if quick else 3,
                                 peer=peer if libraries and not quick else None)
    wide = [] if quick else wide_table(peer=peer if libraries else None)
    return {"ranges": ranges(sizes, runs=runs, libraries=libraries), "marginals": marg,
            "graphical": graphical, "wide": wide,
            "tree": tree_speed(2**16 if quick else 2**24, 2 if quick else 5),
            "hierarchy": hierarchy_speed(10**5 if quick else 10**7, 2 if quick else 3)}


def to_markdown(report: dict[str, Any]) -> str:
    lines = ["All ranges [lo, hi) of n Poisson(20) counts, epsilon = 1: RMSE over every range "
             "(root of the mean over releases of each release's mean squared error, +- one "
             "standard error), the exact expectation where known, median seconds per release "
             "(1 thread):", "",
             "| n | method | releases | RMSE (measured) | RMSE (exact) | vs independent (exact) "
             "| seconds |", "|---:|---|---:|---:|---:|---:|---:|"]
    base = {r["n"]: r["exact_rmse"] for r in report["ranges"]
            if r["method"].startswith("independent")}
    for r in report["ranges"]:
        exact = f"{r['exact_rmse']:.2f}" if r["exact_rmse"] is not None else ""
        mine = r["exact_rmse"] if r["exact_rmse"] is not None else r["rmse"]
        name = r["method"] + (f" ({r['detail']})" if r["detail"] else "")
        lines.append(f"| {r['n']} | {name} | {r['runs']} | {r['rmse']:.2f} +- "
                     f"{r['rmse_se']:.2f} | {exact} | {base[r['n']] / mine:.2f}x lower | "
                     f"{r['seconds']:.4f} |")
    t, h = report["tree"], report["hierarchy"]
    lines += ["", f"Tree release of {t['n']:,} leaves on 1 thread (noise on every node + "
              f"consistent estimate): {t['seconds']:.3f} s = {t['ns_per_leaf']:.1f} ns per leaf.",
              f"Census hierarchy of {h['n']:,} leaves (nation, 50 states, {h['counties']:,} "
              "counties, the leaves; integer counts that add up): "
              f"{h['seconds']:.2f} s; children sum to parents: {h['children_sum_to_parents']}; "
              f"non-negative integers: {h['non_negative_integers']}."]
    lines += ["", "All k-way marginals of the Adult data (32,561 records; age by decade, workclass, "
              "education, marital-status, occupation, relationship, race, sex), epsilon = 1: "
              "mean over tables of the l1 error divided by the number of records, mean over "
              "releases, and median seconds per release. Laplace noise unless stated; "
              "noise='gaussian': discrete Gaussian noise of one sigma for all the tables "
              "(their l2 sensitivity sqrt(tables)), at (epsilon, delta) = (1, "
              f"{_gaussian_delta(report['marginals'])}) the tightest sigma for the one "
              "release, or through the rho budget of the tight conversion of that "
              "(epsilon, delta):", "",
              "| tables | method | releases | l1 error / records | seconds |",
              "|---|---|---:|---:|---:|"]
    for r in report["marginals"]:
        error = f"{r['l1_per_record']:.4f}" if r["l1_per_record"] is not None \
            else _unanswered(r)
        name = r["method"] + (f" (sigma {r['sigma']:.2f})" if r.get("sigma") else "")
        lines.append(f"| {r['tables']} {r['k']}-way | {name} | {r['runs']} | "
                     f"{error} | {r['seconds']:.3f} |")
    lines += _mwem_against_peers(report["marginals"])
    lines += _graphical_markdown(report.get("graphical", []))
    lines += _wide_markdown(report.get("wide", []))
    return "\n".join(lines)


def _wide_markdown(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    r0 = rows[0]
    lines = ["", f"The wide Adult table: {r0['columns']} columns (every one but fnlwgt; "
             "numeric ones in at most 16 public bins, native-country and class with their "
             f"documented categories), a domain of {r0['domain']:.2e} cells; all 2-way "
             f"tables at epsilon = {r0['epsilon']:g}, delta = {r0['delta']:g}: mean l1 "
             "error per record over the tables, median seconds, and the model's cells:", "",
             "| method | releases | all 2-way | seconds | model cells |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        err = f"{r['l1_2way']:.4f}" if r["l1_2way"] is not None else _unanswered(r)
        cells = f"{r['model_cells']:,}" if r.get("model_cells") else ""
        sec = "" if r["seconds"] is None else f"{r['seconds']:.1f}"
        lines.append(f"| {r['method']} | {r['runs']} | {err} | {sec} | {cells} |")
    return lines


def _graphical_markdown(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = ["", "Graphical models of the Adult data (the same 8 columns), Gaussian noise at "
             f"(epsilon, delta = {rows[0]['delta']:g}): mean over all 2-way and over all "
             "3-way tables of the model's l1 error divided by the number of records (mean "
             "over releases, +- the 2-way errors' standard deviation), median seconds per "
             "release, and the model's cells (its junction tree's cliques):", "",
             "| epsilon | method | releases | all 2-way | all 3-way | seconds | model cells |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["l1_2way"] is None:
            two = three = _unanswered(r)
        else:
            two = f"{r['l1_2way']:.4f} +- {r['l1_2way_sd']:.4f}"
            three = f"{r['l1_3way']:.4f}"
        cells = f"{r['model_cells']:,}" if r.get("model_cells") else ""
        sec = "" if r["seconds"] is None else f"{r['seconds']:.2f}"
        lines.append(f"| {r['epsilon']:g} | {r['method']} | {r['runs']} | {two} | {three} | "
                     f"{sec} | {cells} |")
    return lines


def _unanswered(row: dict[str, Any]) -> str:
    """What a peer's row without answers shows: "did not finish in N s" when it was
    stopped (the outcome says "timeout", or none is given), otherwise its outcome."""
    outcome = row.get("outcome") or "timeout"
    return f"did not finish in {row['timeout']:.0f} s" if "timeout" in outcome else outcome


def _gaussian_delta(rows: list[dict[str, Any]]) -> str:
    """The delta of the Gaussian (epsilon, delta) rows, as printed ("-" if none)."""
    deltas = {r["delta"] for r in rows if r.get("noise") == "gaussian" and r.get("delta")}
    return ", ".join(f"{d:g}" for d in sorted(deltas)) or "-"


def _mwem_against_peers(rows: list[dict[str, Any]]) -> list[str]:
    """One line per finished smartnoise-synth MWEM run: dpfast's MWEM (its default method)
    beside it, error and time."""
    ours = [r for r in rows if r["method"].startswith("dp.mwem") and "'tables'" in r["method"]]
    out = []
    for peer in rows:
        if not peer["method"].startswith("smartnoise-synth MWEM") or ours == [] \
                or peer["l1_per_record"] is None:
            continue
        mine = next(r for r in ours if r["k"] == peer["k"])
        out.append(f"dp.mwem against {peer['method']}, {peer['k']}-way: l1 error / records "
                   f"{mine['l1_per_record']:.4f} vs {peer['l1_per_record']:.4f}, "
                   f"{peer['seconds'] / mine['seconds']:.0f}x faster.")
    return [""] + out if out else []
