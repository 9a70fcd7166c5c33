"""Graphical models of the Adult data: dp.marginals' model, AIM and MST beside private-pgm's
(the graphical table), and the wide table of every column."""
from __future__ import annotations

import itertools
import math
import statistics
import time
from typing import Any

import numpy as np

import dpfast as dp

from ...tables import category_codes
from ..adult import adult_table, adult_wide
from ..adult import full_counts as _full_counts

__all__ = ["GRAPHICAL", "graphical_tables", "wide_table"]


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
            from .. import pgm_peer
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
        from .. import pgm_peer
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
        from .. import pgm_peer
    except ImportError:
        return False
    return pgm_peer.available(peer)
