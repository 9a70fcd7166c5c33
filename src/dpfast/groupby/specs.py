"""The statistics a grouped release is asked for (:func:`aggregation_specs`) and the plan
made of them before anything is charged (:class:`GroupPlan`, and the rows that describe
it)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

from .. import records
from .selection import GaussianSelection, per_key, selection_threshold

__all__ = ["STATISTICS", "Spec", "aggregation_specs", "moment_columns", "second_moment",
           "GroupPlan", "plan_rows", "people_for"]

#: The statistics of a value column, and what each needs measured.
STATISTICS = {"sum": 1, "mean": 1, "variance": 2, "var": 2, "std": 2}

class Spec(NamedTuple):
    """One statistic asked of :meth:`dpfast.GroupBy.agg`: its output column's name, the
    value column (None: the count), the statistic and, for a quantile, its level."""

    name: str
    column: str | None          # None: the count
    stat: str                   # "count", "sum", "mean", "variance", "std", "quantile"
    q: float = 0.5              # the level of a quantile


def aggregation_specs(aggregations: Mapping[str, object], func: str) -> list[Spec]:
    """The statistics asked of :meth:`GroupBy.agg` (``name='count'`` or ``name=(column,
    statistic)``), checked, in the order given."""
    if not aggregations:
        raise ValueError(f"{func}: name at least one statistic, e.g. n='count' or "
                         "avg=('salary', 'mean').")
    out = []
    for name, spec in aggregations.items():
        if spec == "count" or spec == ("count",):
            out.append(Spec(name, None, "count"))
            continue
        rule = (f"The {name!r} statistic of {func} must be 'count' or (column, statistic) "
                f"with statistic one of {sorted(STATISTICS) + ['median']} or a quantile "
                f"level in [0, 1]. Got {spec!r} instead.")
        if not (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str)):
            raise ValueError(rule)
        stat = spec[1]
        if stat == "median":
            out.append(Spec(name, spec[0], "quantile", 0.5))
        elif isinstance(stat, (float, int)) and not isinstance(stat, bool):
            if not 0.0 <= float(stat) <= 1.0:
                raise ValueError(rule)
            out.append(Spec(name, spec[0], "quantile", float(stat)))
        elif isinstance(stat, str) and stat in STATISTICS:
            out.append(Spec(name, spec[0], "variance" if stat == "var" else stat))
        else:
            raise ValueError(rule)
    return out



def moment_columns(specs: list[Spec]) -> list[str]:
    """The value columns whose sums are measured (for a sum, mean, variance or std)."""
    return sorted({s.column for s in specs if s.column is not None and s.stat in STATISTICS})



def second_moment(specs: list[Spec], column: str) -> bool:
    """Whether a variance or standard deviation of ``column`` is asked (its centred sum of
    squares is then measured)."""
    return any(s.column == column and s.stat in ("variance", "std") for s in specs)


class GroupPlan(NamedTuple):
    """A grouped release's plan (:meth:`dpfast.GroupBy.plan`): its measurements and their
    noise, the clamping bounds of each value column, the key selection's rule and share of
    the budget (private keys) and the whole cost."""

    plan: records.Plan
    bounds: dict[str, tuple[float, float]]
    selection_epsilon: float
    selection_delta: float
    epsilon: float | None
    delta: float
    rule: str = "optimal"                    # the key selection's rule (private keys)
    gaussian: GaussianSelection | None = None
    count_threshold: int | None = None       # the count rule's: released if count > it



def plan_rows(gp: GroupPlan, private: bool, max_groups: int) -> list[dict[str, object]]:
    """The plan's rows: the key selection's (private keys), then each measurement's."""
    rows = gp.plan.describe()
    if private and gp.count_threshold is not None:
        rows.insert(0, {"measurement": "key selection (count rule)",
                        "noise": "the count's", "epsilon": 0.0,
                        "delta": gp.selection_delta,
                        "rows for p=0.5": gp.count_threshold + 1})
    elif private:
        rows.insert(0, {"measurement": f"key selection ({gp.rule} rule)",
                        "noise": "threshold" if gp.gaussian is None else "gaussian",
                        "epsilon": gp.selection_epsilon, "delta": gp.selection_delta,
                        "people for p=0.5": people_for(gp, 0.5, max_groups),
                        "people for p=0.99": people_for(gp, 0.99, max_groups)})
    return rows


def people_for(gp: GroupPlan, probability: float, max_groups: int) -> int:
    """The least number of people (each keeping one key) at which a key is released with
    at least ``probability``."""
    if gp.gaussian is None:
        return selection_threshold(per_key(gp.selection_epsilon, max_groups),
                                   per_key(gp.selection_delta, max_groups), probability)
    from statistics import NormalDist
    sigma = gp.gaussian.measure.noise.sigma                 # type: ignore[union-attr]
    return math.ceil(gp.gaussian.tau + sigma * NormalDist().inv_cdf(probability))
