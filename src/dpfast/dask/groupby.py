"""Grouped statistics of the records of a Dask DataFrame: :func:`group_by` and
:class:`GroupBy`, the same release as :func:`dpfast.group_by` on the whole frame with the
same seed, bounded and summed on the workers, finished on the client.

The single-machine release decides everything from three things, each reproduced here
exactly whatever the partitioning:

- each row's key code (its key's place among the sorted keys: the public keys, or the
  distinct keys of the whole frame, collected from the partitions before the charge);
- each row's bounding priorities: cell ``i`` of the uniforms under the stream's first two
  keys, ``i`` the row's position in the frame (among the rows of public keys, which alone
  are bounded): a partition starting at row ``a`` draws chunk ``a // CHUNK`` on and drops
  the head, as the cell-addressed counts do;
- the bounding kernel, which decides a person's rows from their priorities and their order
  alone: the rows are sent to buckets by a hash of the person (every row of a person in one
  bucket, in frame order), and each bucket is bounded on its own.

The key statistics (rows, people, sums in grid units) are exact integers, so the buckets'
partial statistics add up on the workers to the whole frame's, and the client finishes the
release from them as ``dpfast.groupby.finish`` does. The steps run on the workers are those
of :mod:`dpfast.pieces`.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np

from .. import pieces as _pieces
from .. import validation as _v

if TYPE_CHECKING:
    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["group_by", "GroupBy"]


def group_by(frame: Any, by: str, *, privacy_unit: str | None = None, max_groups: int = 1,
             max_rows: int = 1, keys: object = None) -> GroupBy:
    """group_by(frame, by, *, privacy_unit=None, max_groups=1, max_rows=1, keys=None)

    :func:`dpfast.group_by` of a Dask DataFrame: ``.agg(...)`` and ``.plan(...)`` take the
    keywords of :meth:`dpfast.GroupBy.agg` / :meth:`dpfast.GroupBy.plan` and return the same
    DataFrame as ``dpfast.group_by(frame.compute(), ...)`` with the same seed, for any
    partitioning and any number of workers.

    The release reads the frame once before its charge: every row's key, values and person
    are checked there (NaN or infinite values, null keys or ids, keys of mixed types: the
    errors of ``dpfast.group_by``, with the row's position in the whole frame), the distinct
    keys are collected (private keys: to the client, which selects them) and the checked rows
    are kept on the workers, numbered, with a keyed digest; after the charge only they are
    used (a task finding its rows changed since the read refuses them). The contribution
    bounding and the statistics per key run on the workers; only the summed statistics per
    key (exact counts and sums) reach the client, which selects the keys and adds the noise.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The records, one row each.
    by : str
        The column of keys (nulls refused; keys of one type).
    privacy_unit : str, optional
        The column naming each row's person. Each person keeps at most ``max_groups`` keys
        and ``max_rows`` rows per key, chosen uniformly at random under the release's key;
        without it each row is a person.
    max_groups, max_rows : int, optional
        The contribution bounds L0 and L-infinity (>= 1; default 1). Other than 1 only with
        ``privacy_unit``.
    keys : sequence, optional
        Public keys, chosen without the data: every one appears in the output, zeros
        included (rows of other keys are dropped first). None: keys found in the data are
        selected privately (cost: part of epsilon, and delta).

    Returns
    -------
    GroupBy
        The grouping, checked; nothing is read until :meth:`GroupBy.agg`.

    Raises
    ------
    TypeError
        ``frame`` is not a Dask DataFrame; ``max_groups`` or ``max_rows`` is not an int.
    ValueError
        ``by`` or ``privacy_unit`` names no column of ``frame``; ``max_groups`` or
        ``max_rows`` is below 1, or other than 1 without ``privacy_unit``; ``keys`` is a Dask
        collection (data, not public keys). The release's own refusals (aggregations,
        bounds, privacy keywords, budget; then the records' errors, found in the read) come
        from :meth:`GroupBy.agg`, all before its charge.

    Examples
    --------
    Mean salary per department, each person's rows bounded to two (``rng=3`` makes the
    example reproducible: a seed is for tests and research only, never for a real release):

    >>> import dask.dataframe as dd, numpy as np, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> rows = pd.DataFrame({"dept": np.arange(600) % 3, "user": np.arange(600) // 2,
    ...                      "salary": np.linspace(0, 100, 600)})
    >>> kw = dict(n="count", avg=("salary", "mean"), bounds={"salary": (0, 100)},
    ...           epsilon=1.0, rng=3)
    >>> got = dpd.group_by(dd.from_pandas(rows, npartitions=4), "dept", privacy_unit="user",
    ...                    max_rows=2, keys=[0, 1, 2]).agg(accountant=dp.Accountant(), **kw)
    >>> print(got.round(2))
            n    avg
    dept
    0     111  50.12
    1     118  50.73
    2      96  44.59

    The same DataFrame as ``dpfast.group_by`` on the whole frame:

    >>> want = dp.group_by(rows, "dept", privacy_unit="user", max_rows=2,
    ...                    keys=[0, 1, 2]).agg(accountant=dp.Accountant(), **kw)
    >>> got.equals(want)
    True
    """
    return GroupBy(frame, by, privacy_unit=privacy_unit, max_groups=max_groups,
                   max_rows=max_rows, keys=keys)


class GroupBy:
    """GroupBy(frame, by, *, privacy_unit=None, max_groups=1, max_rows=1, keys=None)

    A grouping of the records of a Dask DataFrame, ready for :meth:`agg` (made by
    :func:`group_by`, which it equals). Every check of :func:`dpfast.group_by` is made when
    it is made, on the frame's columns (nothing is read).

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The records, one row each.
    by : str
        The column of keys.
    privacy_unit : str, optional
        The column naming each row's person (without it, each row is a person).
    max_groups, max_rows : int, optional
        The contribution bounds L0 and L-infinity (>= 1; default 1).
    keys : sequence, optional
        Public keys chosen without the data, or None (keys selected privately).

    Raises
    ------
    TypeError
        ``frame`` is not a Dask DataFrame; ``max_groups`` or ``max_rows`` is not an int.
    ValueError
        ``by`` or ``privacy_unit`` names no column of ``frame``; ``max_groups`` or
        ``max_rows`` is below 1, or other than 1 without ``privacy_unit``; ``keys`` is a Dask
        collection.

    Examples
    --------
    A plan costs nothing and reads nothing; ``agg`` makes the release (``rng=0`` makes the
    example reproducible: a seed is for tests and research only):

    >>> import dask.dataframe as dd, numpy as np, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> rows = pd.DataFrame({"site": np.arange(400) % 2, "visits": np.arange(400) % 5})
    >>> grouping = dpd.GroupBy(dd.from_pandas(rows, npartitions=2), "site", keys=[0, 1])
    >>> grouping
    dask.GroupBy(by='site', privacy_unit='each row', max_groups=1, max_rows=1, keys=public)
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> out = grouping.agg(total=("visits", "sum"), bounds={"visits": (0, 4)},
    ...                    epsilon=0.5, accountant=acct, rng=0)
    >>> out["total"].round(1).tolist()
    [423.3, 400.5]
    >>> tuple(acct.spent)
    (0.5, 0.0)
    """
    __slots__ = ("frame", "by", "privacy_unit", "max_groups", "max_rows", "keys")

    def __init__(self, frame: Any, by: str, *, privacy_unit: str | None = None,
                 max_groups: int = 1, max_rows: int = 1, keys: object = None) -> None:
        if not isinstance(frame, dd.DataFrame):
            raise TypeError("The 'frame' parameter of dpfast.dask.group_by must be a Dask "
                            f"DataFrame. Got {_v.describe(frame)} instead (use "
                            "dpfast.group_by).")
        if isinstance(keys, (da.Array, dd.Series, dd.DataFrame)):
            raise ValueError("The 'keys' parameter of dpfast.dask.group_by must be public "
                             "keys chosen without the data; got a Dask collection.")
        self.frame = frame
        self.by, self.privacy_unit, self.keys = by, privacy_unit, keys
        self.max_groups, self.max_rows = max_groups, max_rows
        self._grouping()                          # every check of dpfast.group_by, now

    def _grouping(self) -> Any:
        """The single-machine grouping of the frame's (empty) meta: it checks the columns
        and contribution bounds, makes the plan, and finishes the release (its ``rows`` set
        to the frame's length once read)."""
        from ..groupby import GroupBy as _Local
        return _Local(self.frame._meta, self.by, privacy_unit=self.privacy_unit,
                      max_groups=self.max_groups, max_rows=self.max_rows, keys=self.keys)

    def __repr__(self) -> str:
        return "dask." + repr(self._grouping())

    def plan(self, *, epsilon: object = None, delta: object = None, rho: object = None,
             noise: object = "laplace", bounds: object = None, selection: object = None,
             selection_rule: object = "auto", accountant: AccountantLike | None = None,
             **aggregations: object) -> Any:
        """:meth:`dpfast.GroupBy.plan`: what :meth:`agg` would measure and cost (nothing is
        read, charged or drawn)."""
        return self._grouping().plan(epsilon=epsilon, delta=delta, rho=rho, noise=noise,
                                     bounds=bounds, selection=selection,
                                     selection_rule=selection_rule, accountant=accountant,
                                     **aggregations)

    def agg(self, *, epsilon: object = None, delta: object = None, rho: object = None,
            noise: object = "laplace", bounds: object = None, selection: object = None,
            selection_rule: object = "auto", accountant: AccountantLike | None = None,
            rng: RngLike = None, threads: int | None = None,
            **aggregations: object) -> Any:
        """:meth:`dpfast.GroupBy.agg` of the Dask DataFrame: the same DataFrame as on the
        whole frame with the same seed (see :func:`group_by`)."""
        from .. import groupby as _gb
        func = "GroupBy.agg"
        # Check: nothing read.
        local = self._grouping()
        specs, gp, public, rel = _pieces.planned(
            local, self.frame.columns, "dpfast.dask", aggregations, epsilon=epsilon,
            delta=delta, rho=rho, noise=noise, bounds=bounds, selection=selection,
            selection_rule=selection_rule, accountant=accountant, rng=rng, threads=threads)
        # Read, before the charge.
        columns = list(gp.bounds)
        wanted = list(dict.fromkeys([self.by, *columns] + (
            [self.privacy_unit] if self.privacy_unit is not None else [])))
        raw = dask.persist(*self.frame[wanted].to_delayed())
        scans = dask.compute(*[dask.delayed(_pieces.scan_records, pure=True)(
            p, self.by, self.privacy_unit, columns, public, func) for p in raw])
        key_values = _pieces.checked_scans(scans, public, self.privacy_unit, func)
        local.rows = int(sum(s["rows"] for s in scans))
        col_grids = _gb.grids(gp, specs, local.rows)
        # What the statistics per key hold beyond sums: the kept rows' grid points of
        # the columns with a quantile, and the weighted Gaussian rule's weights per key.
        extra = _pieces.Extra(_gb.quantile_bounds(gp, specs),
                       gp.gaussian is not None and public is None)
        starts = np.concatenate(([0], np.cumsum([s["inside"] for s in scans])[:-1]))
        if self.privacy_unit is None:
            # Each row a person: all rows kept, no key needed; the statistics are made
            # (and brought to the client) before the charge.
            partial = [dask.delayed(_pieces.unbounded_statistics, pure=True)(
                p, self.by, columns, key_values, col_grids, extra, func) for p in raw]
            stats = dask.compute(_summed(partial))[0]
            stream = rel.charge_keys()
        else:
            buckets = len(raw)
            mac = os.urandom(32)
            made = [dask.delayed(_pieces.prepared_records, pure=True, nout=2)(
                p, self.by, self.privacy_unit, columns, key_values, int(start), buckets,
                mac, func) for p, start in zip(raw, starts)]
            prepared = dask.persist(*[m[0] for m in made])
            digests = dask.compute(*[m[1] for m in made])
            del raw, made
            stream = rel.charge_keys()
            # The bounding's keys, as dpfast.records.bound takes them: the stream's first
            # two, shipped as bytes to the workers that draw each partition's priorities.
            prio, pair_prio = bytes(stream.next()), bytes(stream.next())
            split = [dask.delayed(_pieces.bucketed, pure=True)(p, d, mac, prio, pair_prio)
                     for p, d in zip(prepared, digests)]
            partial = [dask.delayed(_pieces.bounded_statistics, pure=True)(
                [s[b] for s in split], local.max_groups, local.max_rows,
                key_values.size, col_grids, extra, func) for b in range(buckets)]
            stats = dask.compute(_summed(partial))[0]
        # Draw, on the client: the key selection and the noise of the summed statistics.
        return _gb.finish(stream, rel.threads, gp, specs, local, key_values,
                          public is not None, stats)


def _summed(level: list[Any]) -> Any:
    """A delayed sum of partial statistics, pairwise on the workers."""
    while len(level) > 1:
        level = [dask.delayed(_pieces.added, pure=True)(a, b)
                 for a, b in zip(level[::2], level[1::2])] \
            + ([level[-1]] if len(level) % 2 else [])
    return level[0]
