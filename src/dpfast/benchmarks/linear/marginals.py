"""Marginal tables of the Adult data: dp.marginals (independent, consistent, Gaussian) and
dp.mwem against smartnoise-synth's MWEM, MST and AIM, each peer fitted and sampled in a child
process stopped after :data:`PEER_TIMEOUT` seconds."""
from __future__ import annotations

import multiprocessing
import queue
import statistics
import time
from typing import Any

import numpy as np

import dpfast as dp

from ..adult import ADULT_COLUMNS, adult_table
from ..adult import full_counts as _full_counts

__all__ = ["SMARTNOISE", "PEER_TIMEOUT", "smartnoise", "marginal_tables"]


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

    from ...linear.workloads import Marginals
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
    from ...linear.workloads import Marginals
    from ...zcdp import rho_from_epsilon_delta
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
