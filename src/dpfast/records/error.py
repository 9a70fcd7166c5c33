"""The error of a statistic of records before it is released.

:func:`accuracy` states each measurement's noise and an error bound; nothing is charged or
drawn.
"""
from __future__ import annotations

import math

import numpy as np

from .. import validation as _v
from .inputs import check_bounds, check_max
from .order_statistics import METHODS, check_q, levels, quantile_grid
from .parts import Part, split


STATISTICS = ("sum", "mean", "variance", "median", "quantiles")


def accuracy(statistic: str, *, bounds: object, rows: object, epsilon: object = None,
             delta: object = None, rho: object = None, noise: object = "laplace",
             max_rows: object = 1, q: object = 0.5, method: str = "recursive",
             beta: object = 0.05) -> dict[str, object]:
    """The error of a statistic before it is released (nothing is charged or drawn).

    Parameters
    ----------
    statistic : {"sum", "mean", "variance", "median", "quantiles"}
    bounds, epsilon, delta, rho, noise, max_rows, q, method
        As the release would take them.
    rows : int
        How many rows the release is expected to keep (its error depends on it; it is not
        read from any data).
    beta : float
        The failure probability of the bound.

    Returns
    -------
    dict
        ``parts``: each measurement's cost and noise standard deviation (the plan);
        ``std``: the statistic's standard deviation from its noise (sum exactly; mean and
        variance to first order, for data at a bound, their worst case); ``bound``: an error
        exceeded with probability at most ``beta`` (sum: exactly, from the noise's tail;
        mean, variance: ``std * sqrt(1 / beta)`` by Chebyshev); for quantiles
        ``rank_bound``: ranks from the target exceeded with probability at most ``beta``
        for each quantile (the exponential mechanism's utility guarantee,
        ``2 sensitivity / epsilon_draw * (ln(grid points) + ln(1 / beta))``).
    """
    func = "accuracy"
    if statistic not in STATISTICS:
        raise ValueError(f"The 'statistic' parameter of {func} must be one of {STATISTICS}. "
                         f"Got {statistic!r} instead.")
    lo, hi = check_bounds(bounds, func)
    n = float(_v.check_positive_int(rows, "rows", func))
    r = float(check_max(max_rows, "max_rows", func))
    b = _v.check_real(beta, "beta", func, high=1.0)
    half = (hi - lo) / 2.0
    if statistic in ("median", "quantiles"):
        qs = np.atleast_1d(check_q(q, func))
        eps = _v.check_epsilon(epsilon, func)
        if method not in METHODS:
            raise ValueError(f"The 'method' parameter of {func} must be one of {METHODS}. "
                             f"Got {method!r} instead.")
        draws = levels(qs.size) if method == "recursive" else qs.size
        _, top = quantile_grid(lo, hi)
        sens = r * float(np.max(np.maximum(qs, 1.0 - qs)))
        per = eps / draws
        return {"parts": [{"measurement": f"{qs.size} quantile(s), {draws} draw(s)",
                           "noise": "exponential mechanism", "epsilon": per}],
                "rank_bound": 2.0 * sens / per * (math.log(top + 1.0) + math.log(1.0 / b))}
    if statistic == "sum":
        reach = max(abs(lo), abs(hi))
        plan = split(func, noise, epsilon, delta, rho, [Part("sum", r * reach, r * reach,
                                                             False)])
        m = plan.noisy()[0].noise
        return {"parts": plan.describe(), "std": math.sqrt(m.variance),
                "bound": m.tail_bound(b)}
    parts = [Part("count", r, r, True), Part("centred sum", r * half, r * half, False)]
    if statistic == "variance":
        parts.append(Part("centred sum of squares", r * half * half, r * half * half, False))
    plan = split(func, noise, epsilon, delta, rho, parts)
    var = [m.noise.variance for m in plan.noisy()]
    if statistic == "mean":          # (S + e_S) / (n + e_N), S at most n half in magnitude
        std = math.sqrt(var[1] + half * half * var[0]) / n
    else:                            # (S2 + e2) / n - ((S + e1) / n)**2, first order
        std = math.sqrt(var[2] + (2.0 * half) ** 2 * var[1] + half ** 4 * var[0]) / n
    return {"parts": plan.describe(), "std": std, "bound": std * math.sqrt(1.0 / b)}
