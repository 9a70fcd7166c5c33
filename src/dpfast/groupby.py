"""Grouped statistics of records: per-group counts, sums, means, variances and standard
deviations, each person's contribution bounded, keys public or selected privately.

>>> import dpfast as dp
>>> out = dp.group_by(frame, "dept", privacy_unit="user_id", max_groups=1, max_rows=5).agg(
...     n="count", total=("salary", "sum"), avg=("salary", "mean"),
...     bounds={"salary": (0, 300_000)}, epsilon=1.0, delta=1e-6)   # doctest: +SKIP

How a release is made (one charge for everything it publishes):

1. check -- the columns (a pandas or polars DataFrame, a pyarrow Table, or a dict of
   columns), the keys, bounds, contribution bounds and privacy keywords; the plan
   (:meth:`GroupBy.plan`: what each measurement costs and its noise) is made here.
2. charge -- the whole (epsilon, delta) or rho, once; its key stream then decides which rows
   each person keeps (:func:`dpfast.records.bound`: at most ``max_groups`` groups and
   ``max_rows`` rows in each, uniformly at random, in compiled code), selects the keys
   (private keys) and draws the noise.
3. draw -- per group, a noisy count of rows and noisy sums of the values centred on the
   middle of their bounds (and of their squares, for a variance), exact on the noise's grid
   (:func:`dpfast.records.units`); sums, means, variances and standard deviations are
   post-processing of these. Noise of group ``k`` is addressed by ``k``'s place among the
   keys in sorted order, so a release is the same for any thread count.

Private keys (``keys=None``): a key is released only if a random draw passes the optimal
partition-selection rule of Desfontaines, Voss, Gipson and Mandayam (2022) on the number of
people who kept rows in it -- the largest release probability ``pi(n)`` that is
(epsilon, delta)-DP for each key a person touches, a person touching at most ``max_groups``
keys (each key gets epsilon / max_groups and delta / max_groups). A key no record has is never
released. Public keys (``keys=[...]``): every key appears, zeros included; rows of other
keys are dropped before bounding.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from . import _native, noise, records, tables
from . import validation as _v
from ._release import Keys, Release

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .accounting import AccountantLike
    from .rng import RngLike

__all__ = ["group_by", "GroupBy", "selection_probabilities", "STATISTICS"]

#: The statistics of a value column, and what each needs measured.
STATISTICS = {"sum": 1, "mean": 1, "variance": 2, "var": 2, "std": 2}


# -- partition selection --------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def selection_probabilities(epsilon: float, delta: float) -> NDArray[np.float64]:
    """``pi[n]``: the probability of releasing a key that ``n`` people kept rows in, under
    the optimal (epsilon, delta) rule (Desfontaines et al. 2022, Theorem 1): ``pi[0] = 0``,
    ``pi[n] = min(exp(eps) pi[n-1] + delta, 1 - exp(-eps) (1 - pi[n-1] - delta), 1)``, up to
    the first ``n`` where it reaches 1 (``pi[n] = 1`` beyond the array).

    Each step is computed in floats, then lowered until the two DP inequalities between
    ``n - 1`` and ``n`` hold in exact arithmetic with a certified lower bound of
    ``exp(eps)``: ``pi[n] <= E pi[n-1] + delta`` and ``1 - pi[n-1] <= E (1 - pi[n]) +
    delta``. (epsilon above 700 is taken as 700: a rule private at a smaller epsilon is
    private at a larger one, and exp(700) is a float.)"""
    eps = min(epsilon, 700.0)
    e_up = math.nextafter(math.nextafter(math.exp(eps), 0.0), 0.0)     # <= exp(eps)
    e_down = math.nextafter(math.nextafter(math.exp(-eps), 1.0), 1.0)  # >= exp(-eps)
    exact_e, exact_d = Fraction(e_up), Fraction(delta)
    pi = [0.0]
    while pi[-1] < 1.0 and len(pi) < 10**7:
        p = pi[-1]
        nxt = min(e_up * p + delta, 1.0 - e_down * (1.0 - p - delta), 1.0)
        if nxt < 1.0:
            nxt *= 1.0 - 2.0**-48             # below the bound by far more than rounding
        # Clear of both bounds by more than the floats' rounding: no exact check needed.
        clear = (nxt <= (e_up * p + delta) * (1.0 - 2.0**-49) and
                 1.0 - p <= (e_up * (1.0 - nxt) + delta) * (1.0 - 2.0**-49))
        if not clear:
            prev = Fraction(p)
            while nxt > 0.0 and not (Fraction(nxt) <= exact_e * prev + exact_d and
                                     1 - prev <= exact_e * (1 - Fraction(nxt)) + exact_d):
                nxt = math.nextafter(nxt, 0.0)
        if nxt <= p:                  # no progress is possible in floats: stop below 1
            break
        pi.append(nxt)
    return np.array(pi)


def per_key(total: float, max_groups: int) -> float:
    """The largest float ``q`` with ``max_groups * q`` at most ``total`` exactly: a share of
    a budget for each of a person's keys."""
    q = total / max_groups
    while Fraction(q) * max_groups > Fraction(total):
        q = math.nextafter(q, 0.0)
    return q


def selection_threshold(epsilon: float, delta: float, probability: float = 0.5) -> int:
    """The least number of people at which a key is released with at least ``probability``."""
    pi = selection_probabilities(epsilon, delta)
    return int(np.searchsorted(pi, probability, side="left"))


#: Key selection rules: "count" (a key is released when its noisy count of rows, the one
#: released, passes a threshold: the selection costs delta only), "optimal" (Desfontaines et
#: al.), "gaussian" (weighted Gaussian thresholding), "auto" (the count rule when a count is
#: measured with Laplace noise, else the optimal rule for max_groups = 1 and the weighted
#: Gaussian above: measured on the benchmark's keys, the weighted Gaussian keeps more keys
#: as soon as a person may touch two, and fewer at one).
RULES = ("auto", "count", "optimal", "gaussian")

#: Weights of the weighted Gaussian rule are whole multiples of 2**-WEIGHT_BITS (rounded
#: down, so a person's weights still have l2 norm at most 1), so their sums are exact.
WEIGHT_BITS = 30


class GaussianSelection(NamedTuple):
    """The weighted Gaussian rule (Gopi et al. 2020; Swanberg, Desfontaines and Haney 2023):
    each person spreads weight ``1/sqrt(k)`` over the ``k`` keys they kept (l2 norm 1), a
    key is released if its weight plus Gaussian noise (``measure``: sigma for l2 1 at
    (epsilon, delta_gauss), rounding of the weights to its grid included) exceeds ``tau =
    max over t <= max_groups of 1/sqrt(t) + g + sigma z(delta_threshold / t)``: a key only
    one person has is then released with probability at most delta_threshold in all."""

    measure: noise.Measure
    tau: float


def gaussian_selection(epsilon: float, delta: float, max_groups: int,
                       func: str) -> GaussianSelection:
    """The weighted Gaussian rule at (epsilon, delta), delta split between the noise and the
    threshold where the threshold is lowest (a public choice: no data is read)."""
    from statistics import NormalDist
    z = NormalDist()
    best: GaussianSelection | None = None
    for share in np.linspace(0.05, 0.95, 19):
        m = noise.measure(func, "gaussian", epsilon, delta * share, None, l1=1.0, l2=1.0,
                          integer=False, cells=max_groups)
        sigma, g = m.noise.sigma, m.noise.g          # type: ignore[union-attr]
        dt = math.nextafter(delta - m.delta, 0.0)           # the threshold's part of delta
        tau = max(1.0 / math.sqrt(t) + g - sigma * z.inv_cdf(dt / t)
                  for t in range(1, max_groups + 1))
        if best is None or tau < best.tau:
            best = GaussianSelection(m, tau)
    assert best is not None
    return best


def pair_weights(person_of_pair: NDArray[np.int64]) -> NDArray[np.int64]:
    """The weighted Gaussian rule's weight of each (person, key) pair kept, in units of
    ``2**-WEIGHT_BITS``: ``floor(2**WEIGHT_BITS / sqrt(k))``, ``k`` the pairs of its person."""
    _, inverse, counts = np.unique(person_of_pair, return_inverse=True, return_counts=True)
    return np.floor(2.0**WEIGHT_BITS / np.sqrt(counts[inverse])).astype(np.int64)


# -- columns --------------------------------------------------------------------------------

# -- the release ----------------------------------------------------------------------------

class _Spec(NamedTuple):
    name: str
    column: str | None          # None: the count
    stat: str                   # "count", "sum", "mean", "variance", "std", "quantile"
    q: float = 0.5              # the level of a quantile


def aggregation_specs(aggregations: Mapping[str, object], func: str) -> list[_Spec]:
    """The statistics asked of :meth:`GroupBy.agg` (``name='count'`` or ``name=(column,
    statistic)``), checked, in the order given."""
    if not aggregations:
        raise ValueError(f"{func}: name at least one statistic, e.g. n='count' or "
                         "avg=('salary', 'mean').")
    out = []
    for name, spec in aggregations.items():
        if spec == "count" or spec == ("count",):
            out.append(_Spec(name, None, "count"))
            continue
        rule = (f"The {name!r} statistic of {func} must be 'count' or (column, statistic) "
                f"with statistic one of {sorted(STATISTICS) + ['median']} or a quantile "
                f"level in [0, 1]. Got {spec!r} instead.")
        if not (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str)):
            raise ValueError(rule)
        stat = spec[1]
        if stat == "median":
            out.append(_Spec(name, spec[0], "quantile", 0.5))
        elif isinstance(stat, (float, int)) and not isinstance(stat, bool):
            if not 0.0 <= float(stat) <= 1.0:
                raise ValueError(rule)
            out.append(_Spec(name, spec[0], "quantile", float(stat)))
        elif isinstance(stat, str) and stat in STATISTICS:
            out.append(_Spec(name, spec[0], "variance" if stat == "var" else stat))
        else:
            raise ValueError(rule)
    return out


# The old name, which tests still use.
_specs = aggregation_specs


def _moment_columns(specs: list[_Spec]) -> list[str]:
    """The value columns whose sums are measured (for a sum, mean, variance or std)."""
    return sorted({s.column for s in specs if s.column is not None and s.stat in STATISTICS})


def _second_moment(specs: list[_Spec], column: str) -> bool:
    return any(s.column == column and s.stat in ("variance", "std") for s in specs)


class GroupBy:
    """A grouping of records, ready for :meth:`agg` (see :func:`group_by`)."""

    __slots__ = ("data", "by", "privacy_unit", "max_groups", "max_rows", "keys", "rows")

    def __init__(self, data: object, by: str, *, privacy_unit: str | None = None,
                 max_groups: int = 1, max_rows: int = 1, keys: object = None) -> None:
        func = "group_by"
        data = tables.open_table(data)
        self.rows = tables.length(data, func)
        self.data = data
        tables.check_column(data, by, "by", func)
        self.by = by
        if privacy_unit is not None:
            tables.check_column(data, privacy_unit, "privacy_unit", func)
        elif max_groups != 1 or max_rows != 1:
            raise ValueError(f"The 'max_groups' and 'max_rows' parameters of {func} bound "
                             "each person's rows and need privacy_unit=; without one each "
                             "row is a person (max_groups=1, max_rows=1).")
        self.privacy_unit = privacy_unit
        self.max_groups = records.check_max(max_groups, "max_groups", func)
        self.max_rows = records.check_max(max_rows, "max_rows", func)
        self.keys = keys

    def __repr__(self) -> str:
        unit = self.privacy_unit or "each row"
        return (f"GroupBy(by={self.by!r}, privacy_unit={unit!r}, max_groups="
                f"{self.max_groups}, max_rows={self.max_rows}, keys="
                f"{'public' if self.keys is not None else 'private'})")

    # The budget ------------------------------------------------------------------------

    def _bounds(self, func: str, specs: list[_Spec],
                bounds: object) -> dict[str, tuple[float, float]]:
        """The public clamping bounds of each value column the statistics name."""
        columns = sorted({s.column for s in specs if s.column is not None})
        if columns and not isinstance(bounds, Mapping):
            raise TypeError(f"The 'bounds' parameter of {func} must be a dict of public "
                            "clamping bounds, column -> (low, high), for "
                            f"{', '.join(map(repr, columns))}. Got {_v.describe(bounds)} "
                            "instead.")
        return {c: records.check_bounds(bounds.get(c) if isinstance(bounds, Mapping)
                                        else None, func, f"bounds[{c!r}]")
                for c in columns}

    def _parts(self, specs: list[_Spec],
               col_bounds: dict[str, tuple[float, float]]) -> list[records.Part]:
        """The measurements the statistics need, with a person's influence on each: at most
        max_groups keys of max_rows rows (l1 L0 L-inf, l2 sqrt(L0) L-inf, times the reach
        of a value)."""
        l0, linf = float(self.max_groups), float(self.max_rows)
        l2f = math.sqrt(l0) * linf
        parts = []
        moments = _moment_columns(specs)
        if moments or any(s.stat == "count" for s in specs):
            parts.append(records.Part("count", l0 * linf, l2f, True))
        for c in moments:
            lo, hi = col_bounds[c]
            half = (hi - lo) / 2.0
            parts.append(records.Part(f"centred sum of {c}", l0 * linf * half, l2f * half,
                                      False))
            if _second_moment(specs, c):
                records.check_squares(lo, hi, "GroupBy.agg", f"bounds[{c!r}]")
                parts.append(records.Part(f"centred sum of squares of {c}",
                                          l0 * linf * half * half, l2f * half * half, False))
        for s in specs:
            if s.stat == "quantile":
                # A person's rows move the rank utility of each of their <= max_groups keys
                # by max_rows max(q, 1 - q) at most.
                reach = l0 * linf * max(s.q, 1.0 - s.q)
                parts.append(records.Part(f"{s.q:g} quantile of {s.column}", reach, reach,
                                          False, kind="selection"))
        return parts

    def _plan(self, func: str, specs: list[_Spec], bounds: object, noise_name: object,
              epsilon: object, delta: object, rho: object, selection: object,
              accountant: AccountantLike | None, rule: object = "auto") -> _GroupPlan:
        """The release's measurements, their noise and the whole cost (nothing charged):
        the key selection's rule and its share for private keys."""
        col_bounds = self._bounds(func, specs, bounds)
        parts = self._parts(specs, col_bounds)
        private = self.keys is None
        # The selection's keywords are checked with public keys too (where they do nothing).
        share = _v.check_real(1.0 / (len(parts) + 1) if selection is None else selection,
                              "selection", func, high=1.0)
        if rule not in RULES:
            raise ValueError(f"The 'selection_rule' parameter of {func} must be one of "
                             f"{RULES}. Got {rule!r} instead.")
        if private:
            eps = epsilon
            if rho is not None:
                raise ValueError(f"{func}: keys selected privately (keys=None) are paid in "
                                 "epsilon= and delta=; rho= cannot pay for the selection. Got "
                                 "rho with private keys (pass the public keys as keys=[...] "
                                 "to release in rho).")
            if noise_name == "laplace" or epsilon is not None:
                if epsilon is None or delta is None:
                    raise ValueError(f"{func}: keys selected privately (keys=None) need "
                                     "epsilon= and delta= > 0 (the selection costs delta); "
                                     "or pass the public keys as keys=[...].")
            else:
                raise ValueError(f"{func}: keys selected privately (keys=None) need epsilon= "
                                 "and delta= > 0; rho alone cannot pay for the selection.")
            e = _v.check_epsilon(eps, func)
            d = _v.check_real(delta, "delta", func, low=0.0, high=1.0)
            if per_key(d, self.max_groups) < 2.0**-1022:
                raise ValueError(f"{func}: delta / max_groups must be a normal float (at "
                                 f"least 2**-1022) for the key selection. Got delta={d!r} "
                                 f"and max_groups={self.max_groups}.")
            counted = noise_name == "laplace" and bool(parts) and parts[0].name == "count"
            if rule == "count" and not counted:
                raise ValueError(f"The 'selection_rule' parameter of {func}: the count rule "
                                 "thresholds the released count, which needs a count "
                                 "measured with Laplace noise. Got selection_rule='count' "
                                 "without one.")
            if rule == "count" or (rule == "auto" and counted):
                return self._count_rule(func, noise_name, parts, col_bounds, e, d, accountant)
            sel_eps, sel_delta = e * share, d if noise_name == "laplace" else d / 2.0
            rest_eps = math.nextafter(e - sel_eps, 0.0)
            rest_delta = None if noise_name == "laplace" else d - sel_delta
            plan = records.split(func, noise_name, rest_eps, rest_delta, None, parts,
                                 accountant)
            chosen = ("optimal" if self.max_groups == 1 else "gaussian") if rule == "auto" \
                else str(rule)
            gauss = gaussian_selection(sel_eps, sel_delta, self.max_groups, func) \
                if chosen == "gaussian" else None
            if chosen == "optimal":         # the table made (and cached) before any charge
                selection_probabilities(per_key(sel_eps, self.max_groups),
                                        per_key(sel_delta, self.max_groups))
            return _GroupPlan(plan, col_bounds, sel_eps, sel_delta, e, d, chosen, gauss)
        plan = records.split(func, noise_name, epsilon, delta, rho, parts, accountant)
        return _GroupPlan(plan, col_bounds, 0.0, 0.0, plan.epsilon, plan.delta)

    def _count_rule(self, func: str, noise_name: object, parts: list[records.Part],
                    col_bounds: dict[str, tuple[float, float]], e: float, d: float,
                    accountant: AccountantLike | None) -> _GroupPlan:
        """The count rule: all of epsilon to the measurements; a key is released when its
        noisy count exceeds ``max_rows + j``, ``j`` the least integer with
        ``P[K > j] <= delta / max_groups`` for the count's discrete Laplace noise ``K``. A
        key that only one person's rows make has at most ``max_rows`` rows: it passes with
        probability at most ``delta / max_groups``, and a person makes at most
        ``max_groups`` keys; a key both neighbours have is released by post-processing of
        its noisy count (Laplace thresholding, as in Google's DP SQL)."""
        plan = records.split(func, noise_name, e, None, None, parts, accountant)
        count = plan.noisy()[0].noise
        assert isinstance(count, noise.Laplace)           # the count rule's noise
        # Two-sided tail at twice the one-sided share (a share of 1/2 or more: the bound at
        # 0.999, smaller, so the threshold only rises).
        share = per_key(d, self.max_groups)
        j = int(round(count.tail_bound(min(2.0 * share, 0.999))))
        # tail_bound's floats may err by an ulp at a delta one float from a tail value: the
        # one-sided tail P[K > j] = q**(j + 1) / (1 + q) kept below the share by a margin
        # far above the floats' error.
        log_q = -1.0 / count.t
        while math.exp((j + 1) * log_q) / (1.0 + math.exp(log_q)) > share * (1.0 - 2.0**-40):
            j += 1
        threshold = self.max_rows + j
        return _GroupPlan(plan, col_bounds, 0.0, d, e, d, "count", None, threshold)

    def plan(self, *, epsilon: object = None, delta: object = None, rho: object = None,
             noise: object = "laplace", bounds: object = None, selection: object = None,
             selection_rule: object = "auto", accountant: AccountantLike | None = None,
             **aggregations: object) -> Any:
        """What :meth:`agg` with these arguments would measure, what each measurement costs
        and the standard deviation of its noise, and (private keys) the number of people at
        which a key is released with probability 1/2 and 0.99 -- nothing charged or drawn.
        Returns a pandas DataFrame (a list of dicts without pandas)."""
        func = "GroupBy.plan"
        gp = self._plan(func, aggregation_specs(aggregations, func), bounds, noise, epsilon,
                        delta, rho, selection, accountant, selection_rule)
        rows = self._plan_rows(gp)
        try:
            import pandas as pd
        except ImportError:                                     # pragma: no cover
            return rows
        return pd.DataFrame(rows)

    def _plan_rows(self, gp: _GroupPlan) -> list[dict[str, object]]:
        """The plan's rows: the key selection's (private keys), then each measurement's."""
        rows = gp.plan.describe()
        if self.keys is None and gp.count_threshold is not None:
            rows.insert(0, {"measurement": "key selection (count rule)",
                            "noise": "the count's", "epsilon": 0.0,
                            "delta": gp.selection_delta,
                            "rows for p=0.5": gp.count_threshold + 1})
        elif self.keys is None:
            rows.insert(0, {"measurement": f"key selection ({gp.rule} rule)",
                            "noise": "threshold" if gp.gaussian is None else "gaussian",
                            "epsilon": gp.selection_epsilon, "delta": gp.selection_delta,
                            "people for p=0.5": self._people_for(gp, 0.5),
                            "people for p=0.99": self._people_for(gp, 0.99)})
        return rows

    def _people_for(self, gp: _GroupPlan, probability: float) -> int:
        """The least number of people (each keeping one key) at which a key is released with
        at least ``probability``."""
        if gp.gaussian is None:
            return selection_threshold(per_key(gp.selection_epsilon, self.max_groups),
                                       per_key(gp.selection_delta, self.max_groups),
                                       probability)
        from statistics import NormalDist
        sigma = gp.gaussian.measure.noise.sigma                 # type: ignore[union-attr]
        return math.ceil(gp.gaussian.tau + sigma * NormalDist().inv_cdf(probability))

    def agg(self, *, epsilon: object = None, delta: object = None, rho: object = None,
            noise: object = "laplace", bounds: object = None, selection: object = None,
            selection_rule: object = "auto", accountant: AccountantLike | None = None,
            rng: RngLike = None, threads: int | None = None,
            **aggregations: object) -> Any:
        """Release the named statistics per group under one budget.

        Parameters
        ----------
        epsilon, delta, rho, noise
            The whole budget of the release (see :func:`dpfast.noisy_counts`). Private keys
            need ``epsilon`` and ``delta`` > 0: the key selection takes ``selection`` of
            epsilon and (Laplace noise) all of delta, (Gaussian) half of it.
        bounds : dict
            Public clamping bounds per value column, ``{"salary": (0, 300000)}``.
        selection : float, optional
            The key selection's share of epsilon (default: an equal share with each
            measurement).
        accountant, rng, threads
            As for every release.
        **aggregations
            ``name="count"`` or ``name=(column, statistic)`` with statistic one of
            ``"sum"``, ``"mean"``, ``"variance"`` (``"var"``), ``"std"``.

        Returns
        -------
        pandas.DataFrame
            Indexed by key (sorted; private keys: those selected), one column per statistic,
            in the order given. ``.attrs["privacy_unit"]`` says what a person is and
            ``.attrs["plan"]`` what was measured. (A dict of numpy arrays, ``"key"`` first,
            without pandas.)
        """
        func = "GroupBy.agg"
        specs = aggregation_specs(aggregations, func)
        gp = self._plan(func, specs, bounds, noise, epsilon, delta, rho, selection,
                        accountant, selection_rule)
        keys = tables.group_codes(tables.column(self.data, self.by, "by", func), self.keys, func)
        values: dict[str, NDArray[np.float64]] | None = None
        if isinstance(self.data, tables.ParquetColumns):
            # A file's value columns are checked now and read after the bounding, when the
            # ids are no longer held: a large table's peak memory is then its ids and keys,
            # or its keys and values, never all three.
            for c in gp.bounds:
                self.data.check_values(c, f"aggregations[{c!r}]", func)
        else:
            values = self._values(gp, func)
        held: list[NDArray[np.int64]] = []
        if self.privacy_unit is not None:
            held.append(records.person_ids(tables.column(self.data, self.privacy_unit,
                                                   "privacy_unit", func), self.rows, func))
        grids(gp, specs, self.rows)                 # a table too large for exact sums: refused
        rel = Release(func, accountant, gp.epsilon, gp.delta, rng, threads, self.rows,
                      rho=gp.plan.rho if self.keys is not None else None)
        stream = rel.charge_keys()
        return self._release(stream, rel.threads, gp, specs, keys, values, held)

    def _values(self, gp: _GroupPlan, func: str) -> dict[str, NDArray[np.float64]]:
        return {c: records.check_values(tables.column(self.data, c, f"aggregations[{c!r}]", func),
                                        func, c)
                for c in gp.bounds}

    # The draw --------------------------------------------------------------------------

    def _release(self, stream: Keys, threads: int, gp: _GroupPlan, specs: list[_Spec],
                 keys: tables.GroupCodes, values: dict[str, NDArray[np.float64]] | None,
                 held: list[NDArray[np.int64]]) -> Any:
        """The draw. ``held`` holds the ids (if any) and is emptied, so that they are freed
        once they are no longer needed; ``values`` None: read from the file now."""
        code = keys.code
        person = held.pop() if held else None
        inside = code >= 0 if keys.public else None
        if inside is not None and not inside.all():
            code = code[inside]
            person = None if person is None else person[inside]
        if person is None:                       # each row a person: all rows kept
            flags = np.full(code.size, KEPT_PAIR, dtype=np.uint8)
        else:
            flags = records.bound(stream, threads, person, code, self.max_groups,
                                  self.max_rows)
        weighted = gp.gaussian is not None and not keys.public
        weights_of = (person if person is not None else np.arange(code.size)) \
            if weighted else None
        del person
        if values is None:
            values = self._values(gp, "GroupBy.agg")
        if inside is not None and not inside.all():
            values = {c: v[inside] for c, v in values.items()}
        stats = key_statistics(code, flags, values, keys.values.size,
                               grids(gp, specs, self.rows), quantile_bounds(gp, specs),
                               weights_of)
        return finish(stream, threads, gp, specs, self, keys.values, keys.public, stats)


#: The flags of a row kept and marking its (person, key) pair (:func:`dpfast.records.bound`).
KEPT_PAIR = 3


class Grid(NamedTuple):
    """The grids (powers of two) a value column's sums are exact on: its centred sum's and,
    for a variance, its centred sum of squares' (None otherwise)."""

    lo: float
    hi: float
    g1: float
    g2: float | None


def grids(gp: _GroupPlan, specs: list[_Spec], rows: int) -> dict[str, Grid]:
    """Each summed value column's grids, from the plan's noise and the table's length."""
    out = {}
    measures = iter(gp.plan.noisy()[1:])
    for c in _moment_columns(specs):
        lo, hi = gp.bounds[c]
        half = (hi - lo) / 2.0
        g1 = records.value_grid(next(measures), half, rows, "GroupBy.agg")
        g2 = None
        if _second_moment(specs, c):
            g2 = records.value_grid(next(measures), half * half, rows, "GroupBy.agg")
        out[c] = Grid(lo, hi, g1, g2)
    return out


class KeyStatistics(NamedTuple):
    """What a release needs of the rows kept, per key (all exact, so partial statistics of
    disjoint pieces of the data add up to the whole's): rows, people (pairs marked), and per
    value column the sums of its centred values (and squares) in grid units."""

    rows: NDArray[np.int64]
    people: NDArray[np.int64]
    sums: dict[str, tuple[NDArray[np.int64], NDArray[np.int64] | None]]
    #: per quantile column, ``key << 32 | k`` for each row kept, ``k`` the value's point on
    #: the column's quantile grid (:func:`dpfast.records.quantile_grid`), in any order
    #: (pieces concatenate).
    points: dict[str, NDArray[np.uint64]]
    #: the weighted Gaussian rule's weight of each key (units of 2**-WEIGHT_BITS; None when
    #: the rule is not used)
    weights: NDArray[np.int64] | None = None


#: Rows whose statistics are computed at a time (partial statistics add up exactly): the
#: temporaries of a large table stay a block's.
STATISTICS_BLOCK = 1 << 24


def key_statistics(code: NDArray[np.int64], flags: NDArray[np.uint8],
                   values: dict[str, NDArray[np.float64]], nkeys: int,
                   col_grids: dict[str, Grid],
                   quantile_bounds: dict[str, tuple[float, float]],
                   person: NDArray[np.int64] | None = None) -> KeyStatistics:
    """:class:`KeyStatistics` of rows with key codes ``code`` (in [0, nkeys)) and bounding
    flags ``flags``: sums for the columns of ``col_grids``, grid points for the columns of
    ``quantile_bounds``, and (``person`` given: the rows' people) the weighted Gaussian
    rule's weights. Computed :data:`STATISTICS_BLOCK` rows at a time."""
    weights = None
    if person is not None:
        pairs = np.flatnonzero(flags == KEPT_PAIR)
        weights = records.exact_sums(code[pairs], pair_weights(person[pairs]), 0, nkeys)
    total: KeyStatistics | None = None
    for a in range(0, max(code.size, 1), STATISTICS_BLOCK):
        b = min(a + STATISTICS_BLOCK, code.size)
        part = _block_statistics(code[a:b], flags[a:b], {c: v[a:b] for c, v in values.items()},
                                 nkeys, col_grids, quantile_bounds)
        total = part if total is None else add_statistics(total, part)
    assert total is not None
    return total._replace(weights=weights)


def _block_statistics(code: NDArray[np.int64], flags: NDArray[np.uint8],
                      values: dict[str, NDArray[np.float64]], nkeys: int,
                      col_grids: dict[str, Grid],
                      quantile_bounds: dict[str, tuple[float, float]]) -> KeyStatistics:
    """Rows, people and the exact sums per key in one compiled pass per value column
    (``_native.key_sums``: numpy's clamp, centring and rounding, in numpy's order)."""
    code = np.ascontiguousarray(code, dtype=np.int64)
    flags = np.ascontiguousarray(flags, dtype=np.uint8)
    counted = None                    # rows and people: from any pass, every pass counts them
    sums: dict[str, tuple[NDArray[np.int64], NDArray[np.int64] | None]] = {}
    for c, grid in col_grids.items():
        half = (grid.hi - grid.lo) / 2.0
        g2, k2 = (grid.g2, math.floor(half * half / grid.g2)) if grid.g2 is not None \
            else (1.0, -1)
        rows, people, s1, s2 = _native.key_sums(
            code, flags, np.ascontiguousarray(values[c], dtype=np.float64), nkeys, grid.lo,
            grid.hi, grid.g1, math.floor(half / grid.g1), g2, k2)
        assert s1 is not None
        sums[c] = (s1, s2)
        counted = (rows, people)
    rows, people = counted if counted is not None else \
        _native.key_sums(code, flags, None, nkeys)[:2]
    points = {}
    if quantile_bounds:
        kept = flags != 0
        kcode = code[kept]
        for c, (lo, hi) in quantile_bounds.items():
            g, top = records.quantile_grid(lo, hi)
            k = np.floor((np.clip(values[c][kept], lo, hi) - lo) / g)
            np.clip(k, 0, top, out=k)
            points[c] = (kcode.astype(np.uint64) << np.uint64(32)) | k.astype(np.uint64)
    return KeyStatistics(rows, people, sums, points)


def add_statistics(a: KeyStatistics, b: KeyStatistics) -> KeyStatistics:
    """The statistics of two disjoint sets of rows together (exact: sums of integers in
    float64 below 2**53, grid points concatenated)."""
    sums: dict[str, tuple[NDArray[np.int64], NDArray[np.int64] | None]] = {}
    for c, (s1, s2) in a.sums.items():
        t1, t2 = b.sums[c]
        sums[c] = (s1 + t1, None if s2 is None or t2 is None else s2 + t2)
    points = {c: np.concatenate((p, b.points[c])) for c, p in a.points.items()}
    weights = None if a.weights is None or b.weights is None else a.weights + b.weights
    return KeyStatistics(a.rows + b.rows, a.people + b.people, sums, points, weights)


def quantile_bounds(gp: _GroupPlan, specs: list[_Spec]) -> dict[str, tuple[float, float]]:
    """The bounds of each column with a quantile to release."""
    return {s.column: gp.bounds[s.column] for s in specs
            if s.stat == "quantile" and s.column is not None}


def finish(stream: Keys, threads: int, gp: _GroupPlan, specs: list[_Spec], group: GroupBy,
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
                  group._plan_rows(gp))


def _quantiles(stream: Keys, threads: int, gp: _GroupPlan, specs: list[_Spec],
               group: GroupBy, stats: KeyStatistics,
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


def _select(stream: Keys, threads: int, stats: KeyStatistics, gp: _GroupPlan,
            max_groups: int) -> NDArray[np.int64]:
    """The keys released. Optimal rule: each key with ``n > 0`` people, with probability
    ``pi[n]`` (one full-precision uniform per key, addressed by its place among the keys).
    Weighted Gaussian rule: each key with people whose weight plus the rule's noise
    (cell-addressed likewise) exceeds its threshold."""
    people = stats.people
    if gp.gaussian is not None:
        assert stats.weights is not None
        noisy = stats.weights.astype(np.float64) * 2.0**-WEIGHT_BITS
        gp.gaussian.measure.noise.fill(stream.next(), threads, noisy, noisy)
        return np.flatnonzero((people > 0) & (noisy > gp.gaussian.tau))
    pi = selection_probabilities(per_key(gp.selection_epsilon, max_groups),
                                 per_key(gp.selection_delta, max_groups))
    # Beyond the table, its last value: 1 when it reached 1; else (the steps stopped
    # moving in floats, or the table's length cap) the rule stays private held constant.
    p = pi[np.minimum(people, pi.size - 1)]
    p[people == 0] = 0.0
    u = np.empty(people.size, dtype=np.float64)
    noise.uniforms(stream.next(), threads, u)
    return np.flatnonzero(u < p)


class _GroupPlan(NamedTuple):
    plan: records.Plan
    bounds: dict[str, tuple[float, float]]
    selection_epsilon: float
    selection_delta: float
    epsilon: float | None
    delta: float
    rule: str = "optimal"                    # the key selection's rule (private keys)
    gaussian: GaussianSelection | None = None
    count_threshold: int | None = None       # the count rule's: released if count > it


def _statistic(s: _Spec, n: NDArray[np.int64],
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


def group_by(data: object, by: str, *, privacy_unit: str | None = None, max_groups: int = 1,
             max_rows: int = 1, keys: object = None) -> GroupBy:
    """Group records for differentially private per-group statistics (:meth:`GroupBy.agg`).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table, dict of columns, or path
        The records, one row each; a path to a ``.parquet`` file is read column by column
        as the release needs them (:class:`dpfast.tables.ParquetColumns`).
    by : str
        The column of keys (nulls refused; keys of one type).
    privacy_unit : str, optional
        The column naming each row's person. Each person keeps at most ``max_groups`` keys
        and ``max_rows`` rows per key, chosen uniformly at random under the release's key;
        without it each row is a person.
    max_groups, max_rows : int
        The contribution bounds L0 and L-infinity (>= 1).
    keys : sequence, optional
        Public keys: every one appears in the output, zeros included (rows of other keys are
        dropped first). None: keys found in the data are selected privately (cost: part of
        epsilon, and delta).

    Returns
    -------
    GroupBy
    """
    return GroupBy(data, by, privacy_unit=privacy_unit, max_groups=max_groups,
                   max_rows=max_rows, keys=keys)
