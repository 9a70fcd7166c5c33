"""Grouped statistics of records held in pieces -- the partitions of a Dask DataFrame
(:mod:`dpfast.dask`), of a Spark DataFrame, or any other engine's -- released as
:func:`dpfast.group_by` releases the whole table.

The release reads the pieces twice before its charge and once after:

1. each piece is scanned (:func:`scan_records`): its length, its rows of public keys or its
   distinct keys, and the first error of the single-machine checks, which the client raises
   as the single-machine path would (:func:`checked_scans`); :func:`group_by` also digests
   the columns each piece read, and refuses a piece that differs at the next read;
2. each piece's checked rows are prepared (:func:`prepared_records`: key codes, values,
   persons, each row's position among the table's bounded rows and its bucket, a hash of its
   person) and digested under 32 random bytes of this release;
3. after the charge, each piece is prepared again and refused unless its digest is the one
   read before (:func:`bucketed`: a piece recomputed from a changed input releases
   nothing), its rows' priorities drawn (the cells of its run of positions, under the
   release's keys), its rows sent to their buckets (a hash of the person's id in one form
   whatever the piece's column type: :func:`bucket_ids`), and each bucket -- every row of
   its people -- bounded and summed per key
   (:func:`bounded_statistics`): exact integers, which add up over buckets to the whole
   table's. The client selects the keys and adds the noise (:func:`dpfast.groupby.finish`).

:func:`group_by` runs these steps on any engine that can apply a function to each piece and
group pieces' outputs by bucket (:class:`Engine`); :class:`LocalPieces` is the engine of a
list of pandas DataFrames, and the README's Spark recipe one of a Spark DataFrame.
"""
from __future__ import annotations

import hmac
import os
import pickle
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from . import _native
from . import validation as _v
# The steps on each piece, re-exported: dpfast.dask runs them by this module's names.
from .piece_steps import added as added
from .piece_steps import bounded_statistics as bounded_statistics
from .piece_steps import checked_scans as checked_scans
from .piece_steps import digest as digest
from .piece_steps import Extra as Extra
from .piece_steps import planned as planned
from .piece_steps import prepared_digest
from .piece_steps import prepared_records as prepared_records
from .piece_steps import scan_records as scan_records
from .piece_steps import unbounded_statistics as unbounded_statistics

if TYPE_CHECKING:
    from .accounting import AccountantLike
    from .rng import RngLike

__all__ = ["group_by", "GroupBy", "Engine", "LocalPieces"]


# -- the step on each piece after the charge (shared with dpfast.dask) ---------------------

def uniforms_from(key: bytes, start: int, n: int) -> np.ndarray:
    """Cells ``[start, start + n)`` of the uniforms under the key of bytes ``key`` (those
    the single-machine kernel draws there): chunk ``start // CHUNK`` on, the cells before
    ``start`` dropped."""
    from .noise import uniforms
    chunk0, skip = divmod(start, _native.CHUNK)
    out = np.empty(skip + n, dtype=np.float64)
    if n:
        uniforms(_native.Key.from_bytes(key), 1, out, chunk0)
    return out[skip:]


def bucketed(prepared: dict[str, Any], expected: bytes, mac: bytes, prio: bytes,
             pair_prio: bytes, where: str = "dpfast.dask") -> list[dict[str, Any]]:
    """On a worker, after the charge: a prepared partition (refused if it is not what was
    read before the charge) split by bucket, each row with its two bounding priorities:
    the cells at its position among the rows the release bounds, under the keys ``prio``
    and ``pair_prio``, drawn once for the partition's run of positions."""
    if not hmac.compare_digest(prepared_digest(prepared, mac), expected):
        raise RuntimeError(f"{where}.GroupBy.agg: a partition's records changed after "
                           "they were read for this release (recomputed from a changed "
                           "input?); nothing of it is released.")
    n, start = prepared["code"].size, prepared["start"]
    p1, p2 = uniforms_from(prio, start, n), uniforms_from(pair_prio, start, n)
    order, edges = prepared["order"], prepared["edges"]
    out = []
    for b in range(edges.size - 1):
        rows = order[edges[b]:edges[b + 1]]
        out.append({"code": prepared["code"][rows], "person": prepared["person"][rows],
                    "prio": p1[rows], "pair_prio": p2[rows],
                    "values": {c: v[rows] for c, v in zip(prepared["columns"],
                                                          prepared["values"])}})
    return out



# -- any engine ------------------------------------------------------------------------------

class Engine(Protocol):
    """What :func:`group_by` needs of an engine holding a table in pieces (each a pandas
    DataFrame of some of the table's rows; the table is the pieces in order, concatenated).
    Everything that crosses between the client and the pieces is bytes."""

    def map(self, fn: Callable[[int, Any], bytes]) -> list[bytes]:
        """``fn(i, piece)`` for every piece ``i``, each once; the results in any order."""
        ...

    def shuffle(self, split: Callable[[int, Any], list[tuple[int, bytes]]],
                combine: Callable[[int, list[bytes]], bytes]) -> list[bytes]:
        """``split(i, piece)`` for every piece, each once, gives ``(bucket, blob)`` pairs;
        then ``combine(bucket, blobs)`` once for each bucket given any, with every blob of
        that bucket (in any order); the results in any order."""
        ...


class LocalPieces:
    """The :class:`Engine` of pandas DataFrames held in this process (the table is their
    concatenation, in order): steps run one piece (one bucket) at a time."""

    def __init__(self, frames: Sequence[Any]) -> None:
        self.frames = list(frames)

    def map(self, fn: Callable[[int, Any], bytes]) -> list[bytes]:
        return [fn(i, f) for i, f in enumerate(self.frames)]

    def shuffle(self, split: Callable[[int, Any], list[tuple[int, bytes]]],
                combine: Callable[[int, list[bytes]], bytes]) -> list[bytes]:
        blobs: dict[int, list[bytes]] = {}
        for i, f in enumerate(self.frames):
            for b, blob in split(i, f):
                blobs.setdefault(b, []).append(blob)
        return [combine(b, got) for b, got in blobs.items()]


def group_by(engine: Engine, meta: Any, by: str, *, privacy_unit: str | None = None,
             max_groups: int = 1, max_rows: int = 1, keys: object = None) -> GroupBy:
    """:func:`dpfast.group_by` of a table held in pieces by ``engine`` (:class:`Engine`):
    ``.agg(...)`` and ``.plan(...)`` take the keywords of :meth:`dpfast.GroupBy.agg` and
    return the same DataFrame as ``dpfast.group_by`` of the pieces concatenated in order,
    with the same seed. ``meta`` is a pandas DataFrame with the table's columns and types (no
    rows needed): the checks of names and types that need no data are made on it, now.

    The pieces are read in the order of the module's docstring: scanned and digested before
    the charge, prepared again and checked against their digests after it; every row of a
    person goes to one bucket (a hash of the id), bounded on its own; only exact integers per
    key reach the client. A piece whose rows changed between the reads (an engine that
    recomputed it from a changed input, or split the table otherwise) releases nothing.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpfast as dp
    >>> from dpfast import pieces
    >>> rows = pd.DataFrame({"dept": np.arange(600) % 3, "user": np.arange(600) // 2,
    ...                      "salary": np.linspace(0, 100, 600)})
    >>> kw = dict(n="count", avg=("salary", "mean"), bounds={"salary": (0, 100)},
    ...           epsilon=1.0, rng=3)
    >>> engine = pieces.LocalPieces([rows[:250], rows[250:]])
    >>> got = pieces.group_by(engine, rows[:0], "dept", privacy_unit="user", max_rows=2,
    ...                       keys=[0, 1, 2]).agg(accountant=dp.Accountant(), **kw)
    >>> want = dp.group_by(rows, "dept", privacy_unit="user", max_rows=2,
    ...                    keys=[0, 1, 2]).agg(accountant=dp.Accountant(), **kw)
    >>> got.equals(want)
    True
    """
    return GroupBy(engine, meta, by, privacy_unit=privacy_unit, max_groups=max_groups,
                   max_rows=max_rows, keys=keys)


_WHERE = "dpfast.pieces"
#: The most buckets a release's rows are grouped into (256 pieces into 256 buckets made
#: 65,536 blobs: 3.0 s for 2**21 rows, against 0.7 s at 64 pieces).
MAX_BUCKETS = 64


class GroupBy:
    """A grouping of the records of a table held in pieces (see :func:`group_by`)."""

    __slots__ = ("engine", "meta", "by", "privacy_unit", "max_groups", "max_rows", "keys")

    def __init__(self, engine: Engine, meta: Any, by: str, *, privacy_unit: str | None = None,
                 max_groups: int = 1, max_rows: int = 1, keys: object = None) -> None:
        for name in ("map", "shuffle"):
            if not callable(getattr(engine, name, None)):
                raise TypeError("The 'engine' parameter of dpfast.pieces.group_by must have "
                                f"map() and shuffle() (dpfast.pieces.Engine). Got "
                                f"{_v.describe(engine)} instead.")
        import pandas as pd
        if not isinstance(meta, pd.DataFrame):
            raise TypeError("The 'meta' parameter of dpfast.pieces.group_by must be a pandas "
                            "DataFrame with the table's columns and types. Got "
                            f"{_v.describe(meta)} instead.")
        self.engine, self.meta = engine, meta.iloc[:0]
        self.by, self.privacy_unit, self.keys = by, privacy_unit, keys
        self.max_groups, self.max_rows = max_groups, max_rows
        self._grouping()                          # every check of dpfast.group_by, now

    def _grouping(self) -> Any:
        from .groupby import GroupBy as _Local
        return _Local(self.meta, self.by, privacy_unit=self.privacy_unit,
                      max_groups=self.max_groups, max_rows=self.max_rows, keys=self.keys)

    def __repr__(self) -> str:
        return "pieces." + repr(self._grouping())

    def plan(self, **kwargs: Any) -> Any:
        """:meth:`dpfast.GroupBy.plan`: what :meth:`agg` would measure and cost (nothing is
        read, charged or drawn)."""
        return self._grouping().plan(**kwargs)

    def agg(self, *, epsilon: object = None, delta: object = None, rho: object = None,
            noise: object = "laplace", bounds: object = None, selection: object = None,
            selection_rule: object = "auto", accountant: AccountantLike | None = None,
            rng: RngLike = None, threads: int | None = None,
            **aggregations: object) -> Any:
        """:meth:`dpfast.GroupBy.agg` of the table held in pieces: the same DataFrame as
        ``dpfast.group_by`` of the pieces concatenated, with the same seed."""
        from . import groupby as _gb
        func = "GroupBy.agg"
        local = self._grouping()
        specs, gp, public, rel = planned(
            local, self.meta.columns, _WHERE, aggregations, epsilon=epsilon, delta=delta,
            rho=rho, noise=noise, bounds=bounds, selection=selection,
            selection_rule=selection_rule, accountant=accountant, rng=rng, threads=threads)
        columns = list(gp.bounds)
        # Read, before the charge: scan every piece.
        mac = os.urandom(32)
        wanted = list(dict.fromkeys([self.by, *columns] + (
            [self.privacy_unit] if self.privacy_unit is not None else [])))
        read = _in_order(self.engine.map(_Step(_scanned, self.by, self.privacy_unit,
                                               columns, public, func, wanted, mac)), func)
        scans = [r for r, _ in read]
        raw = [d for _, d in read]
        if not scans:
            raise ValueError(f"The 'engine' of {_WHERE}.{func} holds no pieces; nothing was "
                             "spent or drawn.")
        key_values = checked_scans(scans, public, self.privacy_unit, func)
        local.rows = int(sum(s["rows"] for s in scans))
        col_grids = _gb.grids(gp, specs, local.rows)
        extra = Extra(_gb.quantile_bounds(gp, specs),
                      gp.gaussian is not None and public is None)
        if self.privacy_unit is None:
            # Each row a person: all rows kept, no key needed.
            parts = _in_order(self.engine.map(_Step(
                _unbounded, self.by, columns, key_values, col_grids, extra, func, wanted, mac,
                raw)), func, len(scans))
            stats = _sum(parts)
            stream = rel.charge_keys()
        else:
            # Every piece sends a blob to every bucket: buckets as many as the pieces, up to
            # MAX_BUCKETS (the release is the same for any number).
            buckets = min(len(scans), MAX_BUCKETS)
            starts = np.concatenate(([0], np.cumsum([s["inside"] for s in scans])[:-1]))
            prepare = _Prepare(self.by, self.privacy_unit, columns, key_values,
                               [int(a) for a in starts], buckets, mac, func, wanted, raw)
            digests = _in_order(self.engine.map(prepare), func, len(scans))
            stream = rel.charge_keys()
            # The bounding's keys, as dpfast.records.bound takes them: the stream's first
            # two, shipped as bytes to the steps that bound the buckets.
            prio, pair_prio = bytes(stream.next()), bytes(stream.next())
            got = self.engine.shuffle(
                _Split(prepare, digests, prio, pair_prio),
                _Step(_bucket_statistics, self.max_groups, self.max_rows,
                      key_values.size, col_grids, extra, func))
            stats = _bucket_sum(got, scans, buckets, func)
        return _gb.finish(stream, rel.threads, gp, specs, local, key_values,
                          public is not None, stats)


class _Step:
    """A step run on a piece or a bucket ``i``: ``fn(x, *args)``, its result pickled with
    ``i`` (a picklable callable, for engines that send their functions to other
    processes)."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.fn, self.args = fn, args

    def __call__(self, i: int, x: Any) -> bytes:
        return pickle.dumps((i, self.fn(x, *self.args)))


def _raw_digest(piece: Any, wanted: list[str], mac: bytes) -> bytes:
    """A digest of a piece's columns as read (pandas' hash of each row's values)."""
    import pandas as pd
    frame = piece[wanted] if isinstance(piece, pd.DataFrame) else \
        pd.DataFrame({c: np.asarray(piece[c]) for c in wanted})
    return digest(mac, np.asarray(pd.util.hash_pandas_object(frame, index=False)))


def _same_as_scanned(piece: Any, i: int, wanted: list[str], mac: bytes, raw: list[bytes],
                     func: str) -> None:
    """Refuse a piece whose columns are not those scanned (or a piece number not scanned)."""
    if not 0 <= i < len(raw):
        raise RuntimeError(f"{_WHERE}.{func}: the engine gave a piece numbered {i}, of "
                           f"{len(raw)} scanned; nothing is released.")
    if not hmac.compare_digest(_raw_digest(piece, wanted, mac), raw[i]):
        raise RuntimeError(f"{_WHERE}.{func}: piece {i}'s records changed after they were "
                           "scanned (recomputed from a changed input?); nothing is released.")


def _scanned(piece: Any, by: str, unit: str | None, columns: list[str],
             public: np.ndarray | None, func: str, wanted: list[str],
             mac: bytes) -> tuple[dict[str, Any], bytes | None]:
    """The scan of a piece and, if it passed the checks, the digest of what it read."""
    scan = scan_records(piece, by, unit, columns, public, func)
    return scan, None if scan["error"] else _raw_digest(piece, wanted, mac)


def _unbounded(piece: Any, by: str, columns: list[str], key_values: np.ndarray,
               col_grids: dict[str, Any], extra: Extra, func: str, wanted: list[str],
               mac: bytes, raw: list[bytes]) -> Any:
    """:func:`unbounded_statistics` of the piece that was scanned (its number is its place
    in ``raw``: found by digest, since a map gives no number to the step)."""
    d = _raw_digest(piece, wanted, mac)
    if not any(hmac.compare_digest(d, r) for r in raw):
        raise RuntimeError(f"{_WHERE}.{func}: a piece's records changed after they were "
                           "scanned (recomputed from a changed input?); nothing is released.")
    return unbounded_statistics(piece, by, columns, key_values, col_grids, extra, func)


class _Prepare:
    """Before the charge: piece ``i``'s prepared rows (numbered from its start) and their
    digest, once its columns are checked to be those scanned; the digest alone is returned
    (pickled, with ``i``)."""

    def __init__(self, by: str, unit: str, columns: list[str], key_values: np.ndarray,
                 starts: list[int], buckets: int, mac: bytes, func: str, wanted: list[str],
                 raw: list[bytes]) -> None:
        self.args = (by, unit, columns, key_values)
        self.starts, self.buckets, self.mac, self.func = starts, buckets, mac, func
        self.wanted, self.raw = wanted, raw

    def prepared(self, i: int, piece: Any) -> tuple[dict[str, Any], bytes]:
        _same_as_scanned(piece, i, self.wanted, self.mac, self.raw, self.func)
        return prepared_records(piece, *self.args, self.starts[i], self.buckets, self.mac,
                                self.func)

    def __call__(self, i: int, piece: Any) -> bytes:
        return pickle.dumps((i, self.prepared(i, piece)[1]))


class _Split:
    """After the charge: piece ``i`` prepared again, refused unless its digest is the one
    read before the charge, and its rows sent to their buckets (each blob: the piece's
    number, the bucket's, and the piece's rows of that bucket)."""

    def __init__(self, prepare: _Prepare, digests: list[bytes], prio: bytes,
                 pair_prio: bytes) -> None:
        self.prepare, self.digests, self.keys = prepare, digests, (prio, pair_prio)

    def __call__(self, i: int, piece: Any) -> list[tuple[int, bytes]]:
        prepared, _ = self.prepare.prepared(i, piece)
        parts = bucketed(prepared, self.digests[i], self.prepare.mac, *self.keys, _WHERE)
        return [(b, pickle.dumps((i, b, p))) for b, p in enumerate(parts)]


def _bucket_statistics(blobs: list[bytes], max_groups: int, max_rows: int, nkeys: int,
                       col_grids: dict[str, Any], extra: Extra,
                       func: str) -> tuple[int, dict[int, int], Any]:
    """One bucket's statistics, with the bucket's number and the rows it took from each
    piece (which the client checks: each bucket bounded in one call, with every one of its
    rows). The bucket is the one the blobs name, whatever the engine called it: a bucket
    holds every row of its people only if all its blobs are in the one call."""
    # In piece order (positions increasing); a piece given twice is refused below.
    got = sorted((pickle.loads(b) for b in blobs), key=lambda g: g[0])
    buckets = {b for _, b, _ in got}
    if len(buckets) != 1:
        raise RuntimeError(f"{_WHERE}.{func}: the engine combined rows of several buckets "
                           "in one call; nothing is released.")
    taken: dict[int, int] = {}
    for i, _, p in got:
        if i in taken:
            raise RuntimeError(f"{_WHERE}.{func}: the engine gave a bucket piece {i}'s rows "
                               "twice; nothing is released.")
        taken[i] = int(p["code"].size)
    stats = bounded_statistics([p for _, _, p in got], max_groups, max_rows, nkeys,
                               col_grids, extra, func)
    return buckets.pop(), taken, stats


def _in_order(results: list[bytes], func: str, pieces: int | None = None) -> list[Any]:
    """The unpickled results of a map, by piece number: exactly one for each piece
    (``pieces`` of them, or as many as the results of the first map)."""
    got = sorted((pickle.loads(r) for r in results), key=lambda r: r[0])
    count = len(got) if pieces is None else pieces
    if [i for i, _ in got] != list(range(count)):
        raise RuntimeError(f"{_WHERE}.{func}: the engine did not run each of the "
                           f"{count} pieces once; nothing is released.")
    return [r for _, r in got]


def _sum(parts: list[Any]) -> Any:
    total = parts[0]
    for p in parts[1:]:
        total = added(total, p)
    return total


def _bucket_sum(results: list[bytes], scans: list[dict[str, Any]], buckets_made: int,
                func: str) -> Any:
    """The buckets' statistics summed, once the client has checked that each bucket was
    bounded in one call and every piece's rows of every bucket were taken exactly once."""
    got = [pickle.loads(r)[1] for r in results]
    buckets = [b for b, _, _ in got]
    if len(set(buckets)) != len(buckets):
        raise RuntimeError(f"{_WHERE}.{func}: the engine combined a bucket more than once; "
                           "nothing is released.")
    rows = [0] * len(scans)
    for _, taken, _ in got:
        for i, n in taken.items():
            rows[i] += n
    if rows != [s["inside"] for s in scans] or sorted(buckets) != list(range(buckets_made)):
        raise RuntimeError(f"{_WHERE}.{func}: the engine's buckets did not take every row "
                           "once; nothing is released.")
    return _sum([stats for _, _, stats in got])
