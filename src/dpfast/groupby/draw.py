"""The draw of a grouped release from its exact statistics per key: the key selection
(private keys), the noisy counts and sums of the keys released, their quantiles, and the
output frame (every statistic post-processing of these)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .. import _native, noise, records
from . import selection as _sel
from .specs import GroupPlan, Spec, plan_rows
from .statistics import KeyStatistics, grids

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._release import Keys

__all__ = ["finish"]


class Grouping(Protocol):
    """What the draw reads of the :class:`~dpfast.groupby.GroupBy` it finishes: its key
    column, its privacy unit and contribution bounds, its keys if public, and its number of
    rows (the draw sits below the group-by and names only these)."""

    @property
    def by(self) -> str: ...
    @property
    def privacy_unit(self) -> str | None: ...
    @property
    def max_groups(self) -> int: ...
    @property
    def max_rows(self) -> int: ...
    @property
    def keys(self) -> object: ...
    @property
    def rows(self) -> int: ...


def finish(stream: Keys, threads: int, gp: GroupPlan, specs: list[Spec], group: Grouping,
           key_values: NDArray[Any], public: bool, stats: KeyStatistics) -> Any:
    """The draw of a grouped release from its exact statistics per key (keys sorted): the
    key selection (private keys), then one noisy count and the noisy sums of the released
    keys, each under the stream's next key, addressed by the key's place among the keys
    released; the statistics are post-processing of these."""
    measures = iter(gp.plan.noisy())
    if not public and gp.count_threshold is not None:
        # The count rule: every key's noisy count, the released keys those past the
        # threshold (with people: never a key no record has), their counts as drawn.
        noisy = records.noisy_count(next(measures), stream.next(), stats.rows)
        released = np.flatnonzero((stats.people > 0) & (noisy > gp.count_threshold))
        n = np.maximum(noisy[released], 0)
    else:
        released = np.arange(key_values.size) if public else \
            _select(stream, threads, stats, gp, group.max_groups)
        n = np.zeros(released.size, dtype=np.int64)
        if gp.plan.parts and gp.plan.parts[0].name == "count":
            n = np.maximum(records.noisy_count(next(measures), stream.next(),
                                               stats.rows[released]), 0)
    col_grids = grids(gp, specs, group.rows)
    sums: dict[str, tuple[NDArray[np.float64], NDArray[np.float64] | None]] = {}
    for c, (s1, s2) in stats.sums.items():
        noisy_s1 = records.noisy_sum(next(measures), stream.next(), s1[released],
                                     col_grids[c].g1)
        noisy_s2 = None
        if s2 is not None:
            noisy_s2 = records.noisy_sum(next(measures), stream.next(), s2[released],
                                         col_grids[c].g2)  # type: ignore[arg-type]
        sums[c] = (noisy_s1, noisy_s2)
    picks = _quantiles(stream, threads, gp, specs, group, stats, released)
    out = {s.name: picks[s.name] if s.stat == "quantile" else
           _statistic(s, n, sums, gp.bounds) for s in specs}
    return _frame(group.by, key_values[released], out, group.privacy_unit,
                  plan_rows(gp, group.keys is None, group.max_groups))


def _quantiles(stream: Keys, threads: int, gp: GroupPlan, specs: list[Spec],
               group: Grouping, stats: KeyStatistics,
               released: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
    """Each quantile statistic of the released keys: per key, the exponential mechanism over
    the gaps of the key's sorted grid points (:func:`dpfast.records.quantiles`' mechanism),
    at ``epsilon / max_groups`` per key (a person's rows reach at most ``max_groups`` keys)
    with the rank utility's sensitivity ``max_rows max(q, 1 - q)``; two uniforms per key
    under the stream's next two keys (which gap, which point in it)."""
    out: dict[str, NDArray[np.float64]] = {}
    epsilons = iter(gp.plan.selections())
    ordered: dict[str, tuple[NDArray[np.uint64], NDArray[np.int64]]] = {}
    for s in specs:
        if s.stat != "quantile" or s.column is None:
            continue
        eps = next(epsilons)
        if s.column not in ordered:
            pts = _native.sort_u64(np.array(stats.points[s.column], dtype=np.uint64))
            start = np.zeros(stats.rows.size + 1, dtype=np.int64)
            np.cumsum(stats.rows, out=start[1:])
            ordered[s.column] = (pts, start)
        pts, start = ordered[s.column]
        lo, hi = gp.bounds[s.column]
        g, top = records.quantile_grid(lo, hi)
        a = eps / group.max_groups / (2.0 * group.max_rows * max(s.q, 1.0 - s.q))
        u1 = np.empty(released.size, dtype=np.float64)
        u2 = np.empty(released.size, dtype=np.float64)
        noise.uniforms(stream.next(), threads, u1)
        noise.uniforms(stream.next(), threads, u2)
        k = _native.grouped_quantile(pts, start, np.ascontiguousarray(released, np.int64),
                                     top, s.q, a, u1, u2)
        out[s.name] = np.minimum(lo + k * g, hi)
    return out


def _select(stream: Keys, threads: int, stats: KeyStatistics, gp: GroupPlan,
            max_groups: int) -> NDArray[np.int64]:
    """The keys released. Optimal rule: each key with ``n > 0`` people, with probability
    ``pi[n]`` (one full-precision uniform per key, addressed by its place among the keys).
    Weighted Gaussian rule: each key with people whose weight plus the rule's noise
    (cell-addressed likewise) exceeds its threshold."""
    people = stats.people
    if gp.gaussian is not None:
        assert stats.weights is not None
        noisy = stats.weights.astype(np.float64) * 2.0**-_sel.WEIGHT_BITS
        gp.gaussian.measure.noise.fill(stream.next(), threads, noisy, noisy)
        return np.flatnonzero((people > 0) & (noisy > gp.gaussian.tau))
    pi = _sel.selection_probabilities(_sel.per_key(gp.selection_epsilon, max_groups),
                                      _sel.per_key(gp.selection_delta, max_groups))
    # Beyond the table, its last value: 1 when it reached 1; else (the steps stopped
    # moving in floats, or the table's length cap) the rule stays private held constant.
    p = pi[np.minimum(people, pi.size - 1)]
    p[people == 0] = 0.0
    u = np.empty(people.size, dtype=np.float64)
    noise.uniforms(stream.next(), threads, u)
    return np.flatnonzero(u < p)


def _statistic(s: Spec, n: NDArray[np.int64],
               sums: dict[str, tuple[NDArray[np.float64], NDArray[np.float64] | None]],
               bounds: dict[str, tuple[float, float]]) -> NDArray[Any]:
    """One output column, post-processing of the noisy count and sums."""
    if s.column is None:
        return n
    lo, hi = bounds[s.column]
    mid, half = (lo + hi) / 2.0, (hi - lo) / 2.0
    s1, s2 = sums[s.column]
    denom = np.maximum(n, 1).astype(np.float64)
    if s.stat == "sum":
        return s1 + mid * n
    centred_mean = np.clip(s1 / denom, -half, half)
    if s.stat == "mean":
        return mid + centred_mean
    assert s2 is not None
    var = np.clip(s2 / denom - centred_mean ** 2, 0.0, half * half)
    return var if s.stat == "variance" else np.sqrt(var)


def _frame(by: str, keys: NDArray[Any], out: dict[str, Any], unit: str | None,
           plan: list[dict[str, object]]) -> Any:
    person = unit if unit is not None else "each row (no privacy_unit: a row is a person)"
    try:
        import pandas as pd
    except ImportError:                                         # pragma: no cover
        return {"key": keys, **out}
    frame = pd.DataFrame(out, index=pd.Index(keys, name=by))
    frame.attrs["privacy_unit"] = person
    frame.attrs["plan"] = plan
    return frame

