"""Range queries of a 1-D histogram: the tree mechanism against independent Laplace noise and
OpenDP's b-ary tree (the exact mean squared error over every range), and the time of a large
tree release and of a census hierarchy."""
from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

import dpfast as dp

from ...linear import tree as _tree
from ..core import time_calls

__all__ = ["all_range_mse", "ranges", "tree_speed", "hierarchy_speed"]


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
