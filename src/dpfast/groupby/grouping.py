"""The grouping of records that a grouped release is made from (:func:`group_by`,
:class:`GroupBy`): its checks, its plan (what each measurement costs, the key selection's
rule and share) and its release in three phases (check, charge, draw).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import noise, records, tables
from .. import validation as _v
from .._release import Keys, Release
from . import selection as _sel
from .draw import finish
from .selection import RULES, gaussian_selection, per_key, uses_count_rule
from .specs import GroupPlan, Spec, aggregation_specs, moment_columns, plan_rows, second_moment
from .statistics import KEPT_PAIR, grids, key_statistics, quantile_bounds

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["group_by", "GroupBy"]



def _refuse_unused_share(func: str, selection: object, where: str) -> None:
    """A share of epsilon for a selection that takes none is refused, not ignored: the
    caller believes it changed the release."""
    if selection is not None:
        raise ValueError(f"The 'selection' parameter of {func} sets the key selection's share "
                         f"of epsilon; it does nothing {where}. Got selection={selection!r} "
                         "(leave it out).")

class GroupBy:
    """A grouping of records, ready for :meth:`agg` (made by :func:`group_by`).

    Nothing is charged or drawn until :meth:`agg`: the grouping holds the records, the
    column of keys, what a person is and how much of a person's data a release may use.
    :meth:`plan` shows, for free, what a release would measure and what each measurement
    costs.

    :meth:`agg` releases, per key, any of these statistics (``name=`` what to release):
    ``"count"`` (rows); ``(column, "sum")``, ``(column, "mean")``, ``(column,
    "variance")`` (or ``"var"``), ``(column, "std")`` (noisy sums of the values clamped to
    their public bounds, and of their squares for a variance); ``(column, "median")`` and
    ``(column, q)`` for a quantile level ``q`` in [0, 1], e.g. ``("salary", 0.9)`` (the
    exponential mechanism on each key's clamped values).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table, dict of columns, or path
        The records, one row each (a ``.parquet`` path is read column by column).
    by : str
        The column of keys.
    privacy_unit : str, optional
        The column naming each row's person; without it each row is a person.
    max_groups, max_rows : int, optional
        The contribution bounds: at most ``max_groups`` keys per person and ``max_rows``
        rows per key (>= 1; above 1 only with ``privacy_unit``).
    keys : sequence, optional
        Public keys (every one in the output); None: keys selected privately.

    Raises
    ------
    TypeError
        If ``data`` is not a pandas or polars DataFrame, a pyarrow Table, a dict of columns
        or a path to a ``.parquet`` file; or ``max_groups`` or ``max_rows`` is not an int.
    ValueError
        If ``by`` or ``privacy_unit`` names a column the data does not have; the columns
        are not of one length; ``max_groups`` or ``max_rows`` is outside [1, 2**31 - 1];
        or either is above 1 without ``privacy_unit`` (each row is then a person).

    Examples
    --------
    Public keys: the median, the 90th percentile and the standard deviation of salaries
    per department, each row a person (``rng=7`` fixes the noise for this example: a seed
    is for tests and research only, never for a real release):

    >>> import numpy as np
    >>> import pandas as pd
    >>> import dpfast as dp
    >>> frame = pd.DataFrame({"dept": np.repeat(["ops", "research", "sales"], 400),
    ...                       "salary": np.tile(np.linspace(30_000, 150_000, 400), 3)})
    >>> grouped = dp.group_by(frame, "dept", keys=["ops", "research", "sales"])
    >>> grouped
    GroupBy(by='dept', privacy_unit='each row', max_groups=1, max_rows=1, keys=public)
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> out = grouped.agg(med=("salary", "median"), p90=("salary", 0.9),
    ...                   sd=("salary", "std"), bounds={"salary": (0, 200_000)},
    ...                   epsilon=0.3, accountant=acct, rng=7)
    >>> print(out.round(-4).astype(int))
                 med     p90     sd
    dept
    ops        90000  150000  30000
    research  110000  130000  40000
    sales     100000  140000  40000
    >>> print(round(acct.remaining[0], 2))
    0.7
    """

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

    def _bounds(self, func: str, specs: list[Spec],
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

    def _parts(self, specs: list[Spec],
               col_bounds: dict[str, tuple[float, float]]) -> list[records.Part]:
        """The measurements the statistics need, with a person's influence on each: at most
        max_groups keys of max_rows rows (l1 L0 L-inf, l2 sqrt(L0) L-inf, times the reach
        of a value)."""
        l0, linf = float(self.max_groups), float(self.max_rows)
        l2f = math.sqrt(l0) * linf
        parts = []
        moments = moment_columns(specs)
        if moments or any(s.stat == "count" for s in specs):
            parts.append(records.Part("count", l0 * linf, l2f, True))
        for c in moments:
            lo, hi = col_bounds[c]
            half = (hi - lo) / 2.0
            parts.append(records.Part(f"centred sum of {c}", l0 * linf * half, l2f * half,
                                      False))
            if second_moment(specs, c):
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

    def _plan(self, func: str, specs: list[Spec], bounds: object, noise_name: object,
              epsilon: object, delta: object, rho: object, selection: object,
              accountant: AccountantLike | None, rule: object = "auto") -> GroupPlan:
        """The release's measurements, their noise and the whole cost (nothing charged):
        the key selection's rule and its share for private keys."""
        col_bounds = self._bounds(func, specs, bounds)
        parts = self._parts(specs, col_bounds)
        private = self.keys is None
        # The selection's keywords are checked first; where they do nothing, refused below.
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
            if uses_count_rule(rule, noise_name, counted):
                _refuse_unused_share(func, selection, "under the count rule, which spends no "
                                     "epsilon on the selection")
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
                _sel.selection_probabilities(per_key(sel_eps, self.max_groups),
                                             per_key(sel_delta, self.max_groups))
            return GroupPlan(plan, col_bounds, sel_eps, sel_delta, e, d, chosen, gauss)
        _refuse_unused_share(func, selection, "with public keys, which are not selected")
        if rule != "auto":
            raise ValueError(f"The 'selection_rule' parameter of {func} chooses how private "
                             "keys are selected; it does nothing with public keys, which are "
                             f"not selected. Got selection_rule={rule!r} (leave it out).")
        plan = records.split(func, noise_name, epsilon, delta, rho, parts, accountant)
        return GroupPlan(plan, col_bounds, 0.0, 0.0, plan.epsilon, plan.delta)

    def _count_rule(self, func: str, noise_name: object, parts: list[records.Part],
                    col_bounds: dict[str, tuple[float, float]], e: float, d: float,
                    accountant: AccountantLike | None) -> GroupPlan:
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
        return GroupPlan(plan, col_bounds, 0.0, d, e, d, "count", None, threshold)

    def plan(self, *, epsilon: object = None, delta: object = None, rho: object = None,
             noise: object = "laplace", bounds: object = None, selection: object = None,
             selection_rule: object = "auto", accountant: AccountantLike | None = None,
             **aggregations: object) -> Any:
        """What :meth:`agg` with these arguments would measure, what each measurement costs
        and the standard deviation of its noise, and (private keys) the number of people at
        which a key is released with probability 1/2 and 0.99 -- nothing charged or drawn.

        Parameters
        ----------
        epsilon, delta, rho, noise, bounds, selection, selection_rule, accountant
            As for :meth:`agg` (the accountant only decides how a cost given in rho is
            read).
        **aggregations
            As for :meth:`agg`.

        Returns
        -------
        pandas.DataFrame
            One row per measurement (the key selection's first, for private keys). A list
            of dicts without pandas.

        Raises
        ------
        TypeError, ValueError
            As :meth:`agg` raises them for the same arguments (no column's values are
            read).

        Examples
        --------
        >>> import pandas as pd
        >>> import dpfast as dp
        >>> frame = pd.DataFrame({"dept": ["ops", "sales", "ops"], "salary": [5e4, 6e4, 7e4]})
        >>> plan = dp.group_by(frame, "dept", keys=["ops", "sales"]).plan(
        ...     n="count", avg=("salary", "mean"), bounds={"salary": (0, 200_000)}, epsilon=1.0)
        >>> list(plan["measurement"])
        ['count', 'centred sum of salary']
        """
        func = "GroupBy.plan"
        gp = self._plan(func, aggregation_specs(aggregations, func), bounds, noise, epsilon,
                        delta, rho, selection, accountant, selection_rule)
        rows = plan_rows(gp, self.keys is None, self.max_groups)
        try:
            import pandas as pd
        except ImportError:                                     # pragma: no cover
            return rows
        return pd.DataFrame(rows)

    def agg(self, *, epsilon: object = None, delta: object = None, rho: object = None,
            noise: object = "laplace", bounds: object = None, selection: object = None,
            selection_rule: object = "auto", accountant: AccountantLike | None = None,
            rng: RngLike = None, threads: int | None = None,
            **aggregations: object) -> Any:
        """Release the named statistics per group under one budget.

        Parameters
        ----------
        epsilon, delta, rho, noise
            The whole budget of the release (see :func:`dpfast.noisy_counts`): Laplace
            noise takes ``epsilon``; Gaussian noise ``rho`` alone (public keys only) or
            ``epsilon`` and ``delta``. Private keys need ``epsilon`` and ``delta`` > 0.
        bounds : dict
            Public clamping bounds per value column, ``{"salary": (0, 300000)}`` (required
            for every column a statistic names).
        selection : float, optional
            The key selection's share of epsilon under the optimal and weighted Gaussian
            rules (default: an equal share with each measurement); with Laplace noise the
            selection also takes all of delta, with Gaussian noise half of it. Refused where
            it would do nothing: with public keys, and under the count rule.
        selection_rule : {"auto", "count", "optimal", "gaussian"}, optional
            How private keys are selected: ``"count"`` releases a key whose noisy count
            passes a threshold (costs delta only; needs a count measured with Laplace
            noise), ``"optimal"`` the optimal rule on the number of people, ``"gaussian"``
            the weighted Gaussian rule. ``"auto"`` (default): the count rule when a count is
            measured with Laplace noise, else the optimal rule for ``max_groups=1`` and the
            weighted Gaussian rule above. Refused with public keys, where it would do
            nothing.
        accountant, rng, threads
            As for every release.
        **aggregations
            ``name="count"`` or ``name=(column, statistic)`` with statistic one of
            ``"sum"``, ``"mean"``, ``"variance"`` (``"var"``), ``"std"``, ``"median"``, or a
            quantile level in [0, 1] such as ``0.9``.

        Returns
        -------
        pandas.DataFrame
            Indexed by key (sorted; private keys: those selected), one column per statistic,
            in the order given. ``.attrs["privacy_unit"]`` says what a person is and
            ``.attrs["plan"]`` what was measured. (A dict of numpy arrays, ``"key"`` first,
            without pandas.)

        Raises
        ------
        TypeError
            If ``bounds`` is not a dict while a statistic names a column; a value column is
            not numeric; or ``accountant``, ``rng`` or ``threads`` is of the wrong kind.
        ValueError
            If no statistic is named, or one is not of the forms above; a column is missing
            or its bounds are missing, not finite or not ``low < high``; the privacy
            keywords do not fit the noise or are out of range; private keys are asked
            without ``epsilon`` and ``delta`` > 0, or with ``rho``; ``delta / max_groups``
            is below the smallest normal float; ``selection`` is outside (0, 1), or given
            where it does nothing (public keys, the count rule); ``selection_rule`` is
            unknown, ``"count"`` without a Laplace count, or given with public keys; a key or
            value is missing (null, NaN: given by position, never by value); the table is
            too large for exact sums; or ``threads`` or ``rng`` is out of range. Raised, as
            the TypeErrors, before anything is charged or drawn.
        BudgetExceededError
            If the accountant cannot afford the release; nothing is charged or drawn.

        Examples
        --------
        Private keys: each person keeps at most 3 rows of one department; a department is
        released only if enough people have rows in it (``rng=7``: a seed is for tests and
        research only):

        >>> import numpy as np
        >>> import pandas as pd
        >>> import dpfast as dp
        >>> frame = pd.DataFrame({"dept": np.repeat(["ops", "research", "sales"], 400),
        ...                       "user_id": np.arange(1200) % 500,
        ...                       "salary": np.tile(np.linspace(30_000, 150_000, 400), 3)})
        >>> acct = dp.Accountant(epsilon=1.0, delta=1e-5)
        >>> out = dp.group_by(frame, "dept", privacy_unit="user_id", max_rows=3).agg(
        ...     n="count", avg=("salary", "mean"), bounds={"salary": (0, 200_000)},
        ...     epsilon=0.5, delta=1e-6, accountant=acct, rng=7)
        >>> list(out.columns), out.attrs["privacy_unit"]
        (['n', 'avg'], 'user_id')
        >>> print(acct.remaining)
        (0.5, 9e-06)
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

    def _values(self, gp: GroupPlan, func: str) -> dict[str, NDArray[np.float64]]:
        return {c: records.check_values(tables.column(self.data, c, f"aggregations[{c!r}]", func),
                                        func, c)
                for c in gp.bounds}

    # The draw --------------------------------------------------------------------------

    def _release(self, stream: Keys, threads: int, gp: GroupPlan, specs: list[Spec],
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
        The grouping; nothing is charged or drawn until :meth:`GroupBy.agg`, whose
        statistics (counts, sums, means, variances, standard deviations, medians and
        quantiles) are listed at :class:`GroupBy`.

    Raises
    ------
    TypeError
        If ``data`` is not a pandas or polars DataFrame, a pyarrow Table, a dict of columns
        or a path to a ``.parquet`` file; or ``max_groups`` or ``max_rows`` is not an int.
    ValueError
        If ``by`` or ``privacy_unit`` names a column the data does not have; the columns
        are not of one length; ``max_groups`` or ``max_rows`` is outside [1, 2**31 - 1];
        or either is above 1 without ``privacy_unit`` (each row is then a person).

    Examples
    --------
    A per-department count and mean salary, each person keeping at most 3 rows of one
    department, the departments selected privately (``rng=7`` fixes the noise for this
    example: a seed is for tests and research only, never for a real release):

    >>> import numpy as np
    >>> import pandas as pd
    >>> import dpfast as dp
    >>> frame = pd.DataFrame({"dept": np.repeat(["ops", "research", "sales"], 400),
    ...                       "user_id": np.arange(1200) % 500,
    ...                       "salary": np.tile(np.linspace(30_000, 150_000, 400), 3)})
    >>> grouped = dp.group_by(frame, "dept", privacy_unit="user_id", max_rows=3)
    >>> grouped
    GroupBy(by='dept', privacy_unit='user_id', max_groups=1, max_rows=3, keys=private)
    >>> acct = dp.Accountant(epsilon=1.0, delta=1e-5)
    >>> out = grouped.agg(n="count", avg=("salary", "mean"), bounds={"salary": (0, 200_000)},
    ...                   epsilon=0.5, delta=1e-6, accountant=acct, rng=7)
    >>> print(out.round({"avg": -3}).astype(int))
                n    avg
    dept
    ops       164  90000
    research  185  88000
    """
    return GroupBy(data, by, privacy_unit=privacy_unit, max_groups=max_groups,
                   max_rows=max_rows, keys=keys)
