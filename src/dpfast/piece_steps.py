"""The steps of a grouped release of a table held in pieces that run on each piece: its
digest, its scan, its preparation and bucketing, and the exact statistics per key of each
bucket (shared by :mod:`dpfast.pieces` and :mod:`dpfast.dask`).

Each step takes a piece (a pandas DataFrame of some of the table's rows) and public
arguments, and returns exact integers or checked values that add up over pieces to the
whole table's; none holds a key or draws anything (the step after the charge that draws a
piece's bounding priorities under the release's keys, :func:`dpfast.pieces.bucketed`, is in
:mod:`dpfast.pieces`, where keys are rebuilt from their bytes). The order of the steps and
what the client does between them are in :mod:`dpfast.pieces`.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from . import _native, tables
from . import validation as _v
from ._release import Release, refuse_unaffordable

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["digest", "planned", "kind", "scan_records", "checked_scans", "key_codes",
           "Extra", "unbounded_statistics", "prepared_records", "bucket_ids",
           "prepared_digest", "bounded_statistics", "added"]


def digest(mac: bytes, block: np.ndarray) -> bytes:
    """A digest of a block's dtype, shape and bytes, under the release's 32 random bytes
    ``mac``: a keyed BLAKE2b of the dtype and shape, and dpfast's compiled 64-bit checksum
    of the bytes (about 13 GB/s, against 1.7 GB/s for HMAC-SHA-256 here; the digest is
    taken twice per block). The checksum detects a changed input, which is all the binding
    needs: to publish the difference of two inputs under one key, the second would have to
    collide with a first that the writer does not know (knowing it, there is nothing left to
    learn), and the digests travel in the graph beside the noise key itself."""
    head = hashlib.blake2b(f"{block.dtype.str} {block.shape}".encode(), key=mac,
                           digest_size=16).digest()
    flat = np.ascontiguousarray(block).reshape(-1).view(np.uint8)
    seed = int.from_bytes(mac[:8], "little")
    return head + _native.checksum(flat, seed).to_bytes(8, "little")


def planned(local: Any, columns: Any, where: str, aggregations: dict[str, object],
            **kw: Any) -> tuple[Any, Any, np.ndarray | None, Release]:
    """Before anything is read: the aggregations' specs, the plan, the public keys (None:
    private) and the release of a grouping ``local`` (a :class:`dpfast.GroupBy` of the
    table's empty meta); refused if the budget cannot pay or a statistic names a column not
    in ``columns``."""
    from . import groupby as _gb
    func = "GroupBy.agg"
    specs = _gb.aggregation_specs(aggregations, func)
    gp = local._plan(func, specs, kw["bounds"], kw["noise"], kw["epsilon"], kw["delta"],
                     kw["rho"], kw["selection"], kw["accountant"], kw["selection_rule"])
    public = None if local.keys is None else \
        tables.group_codes(local.data[local.by].to_numpy(), local.keys, func).values
    rel = Release(func, kw["accountant"], gp.epsilon, gp.delta, kw["rng"], kw["threads"],
                  rho=gp.plan.rho if public is not None else None)
    refuse_unaffordable(rel, where)
    for c in gp.bounds:
        if c not in columns:
            raise ValueError(f"The statistics of {func} name a value column, {c!r}, that "
                             "the data does not have.")
    return specs, gp, public, rel


def kind(arr: np.ndarray) -> str | None:
    """What a partition's column holds, for the check that all partitions hold one type
    (None: nothing)."""
    if arr.size == 0:
        return None
    if arr.dtype.kind != "O":
        return arr.dtype.kind
    import pandas as pd
    return str(pd.api.types.infer_dtype(arr, skipna=False))


def scan_records(part: Any, by: str, unit: str | None, columns: list[str],
                  public: np.ndarray | None, func: str) -> dict[str, Any]:
    """On a worker, the read of one partition before the charge: its length, its rows of
    public keys, its distinct keys (private keys), the kinds of its key and id columns, and
    the first error of the single-machine checks, in their order (key column, value columns,
    privacy unit), as ``(stage, type, message)``."""
    from . import records
    out: dict[str, Any] = {"rows": len(part), "inside": len(part), "uniques": None,
                           "kinds": {}, "error": None}
    stage = 0
    try:
        col = _v.as_array(tables.column(part, by, "by", func), "by", func, categories=True)
        keys = tables.group_codes(col, public, func)
        out["kinds"]["by"] = kind(col)
        if public is None:
            out["uniques"] = keys.values
        else:
            out["inside"] = int(np.count_nonzero(keys.code >= 0))
        for c in columns:
            stage += 1
            records.check_values(tables.column(part, c, f"aggregations[{c!r}]", func), func, c)
        if unit is not None:
            stage += 1
            ids = _v.as_array(tables.column(part, unit, "privacy_unit", func), "privacy_unit",
                              func, categories=True)
            records.person_ids(ids, len(part), func)
            out["kinds"]["privacy_unit"] = kind(ids)
    except (TypeError, ValueError) as exc:
        out["error"] = (stage, type(exc), str(exc))
    return out


def checked_scans(scans: Sequence[dict[str, Any]], public: np.ndarray | None,
                   unit: str | None, func: str) -> np.ndarray:
    """On the client, after the read: the single-machine path's first error (the earliest
    check, then the earliest partition, its position made the row's in the whole frame), a
    column holding values of mixed types across partitions, then the sorted keys."""
    import re

    offsets = np.concatenate(([0], np.cumsum([s["rows"] for s in scans])))
    errors = [(s["error"][0], i, s["error"][1], s["error"][2])
              for i, s in enumerate(scans) if s["error"]]
    # Keys or ids of one type in each partition but of several across them: the check of
    # the whole column, after its other errors (the single-machine order).
    for name, stage in (("by", 0), ("privacy_unit", 2**31 if unit is not None else -1)):
        if stage >= 0 and len({s["kinds"].get(name) for s in scans} - {None}) > 1:
            errors.append((stage, len(scans), TypeError,
                           f"The {name!r} parameter of {func} must hold values of one type "
                           "(all strings, or all integers, ...). Got values of mixed types."))
    if errors:
        _, i, kind, message = min(errors, key=lambda e: (e[0], e[1]))
        where = int(offsets[min(i, len(scans) - 1)])
        raise kind(re.sub(r"at index (\d+)", lambda m: f"at index {int(m.group(1)) + where}",
                          message))
    if public is not None:
        return public
    found = [s["uniques"] for s in scans if s["uniques"] is not None and s["uniques"].size]
    if not found:
        return np.asarray(scans[0]["uniques"]) if scans else np.empty(0)
    return tables.group_codes(np.concatenate(found), None, func).values


def key_codes(part: Any, by: str, key_values: np.ndarray, func: str) -> np.ndarray:
    """Each row's key code: its key's place among the sorted keys (-1: not a public key)."""
    import pandas as pd

    col = _v.as_array(tables.column(part, by, "by", func), "by", func, categories=True)
    return np.ascontiguousarray(pd.Index(key_values).get_indexer(col), dtype=np.int64)


class Extra(NamedTuple):
    """What :func:`dpfast.groupby.key_statistics` is given beyond the sums' grids: the
    bounds of the columns with a quantile, and whether the keys are selected by the
    weighted Gaussian rule (which needs each row's person)."""

    quantile_bounds: dict[str, tuple[float, float]]
    weighted: bool


def unbounded_statistics(part: Any, by: str, columns: list[str], key_values: np.ndarray,
                          col_grids: dict[str, Any], extra: Extra, func: str) -> Any:
    """On a worker, without a privacy unit: a partition's statistics per key, every row
    kept (each a person)."""
    from . import groupby as _gb
    from . import records
    code = key_codes(part, by, key_values, func)
    inside = code >= 0
    values = {c: records.check_values(tables.column(part, c, f"aggregations[{c!r}]", func),
                                      func, c)[inside] for c in columns}
    code = code[inside]
    flags = np.full(code.size, _gb.KEPT_PAIR, dtype=np.uint8)
    person = np.arange(code.size, dtype=np.int64) if extra.weighted else None   # a row each
    return _gb.key_statistics(code, flags, values, key_values.size, col_grids,
                              extra.quantile_bounds, person)


def prepared_records(part: Any, by: str, unit: str, columns: list[str],
                      key_values: np.ndarray, start: int, buckets: int, mac: bytes,
                      func: str) -> tuple[dict[str, Any], bytes]:
    """On a worker, before the charge: a partition's rows of known keys (codes, values,
    persons), numbered from ``start`` (their position among the frame's rows that are
    bounded), with each row's bucket (a hash of its person) and the rows' order by bucket;
    and a digest of all of it under ``mac``, which binds the release to these rows."""
    import pandas as pd

    from . import records
    code = key_codes(part, by, key_values, func)
    inside = code >= 0
    person = _v.as_array(tables.column(part, unit, "privacy_unit", func), "privacy_unit", func,
                         categories=True)[inside]
    values = [records.check_values(tables.column(part, c, f"aggregations[{c!r}]", func),
                                   func, c)[inside] for c in columns]
    code = np.ascontiguousarray(code[inside])
    hashed = pd.util.hash_array(bucket_ids(person))
    bucket = (hashed % np.uint64(buckets)).astype(np.int64)
    order = np.argsort(bucket, kind="stable")          # frame order within each bucket
    edges = np.searchsorted(bucket[order], np.arange(buckets + 1))
    prepared = {"start": start, "code": code, "person": person, "values": values,
                "columns": columns, "order": order, "edges": edges, "hashed": hashed}
    return prepared, prepared_digest(prepared, mac)


def bucket_ids(person: np.ndarray) -> np.ndarray:
    """The ids a person's bucket is hashed from, one form for every way a piece may store
    the same id (the bounding takes them as one person): integers and booleans as int64
    (uint64 past int64 as they are), floats as float64 with -0.0 made 0.0, times in
    nanoseconds, objects holding numbers as those numbers."""
    import pandas as pd
    arr = np.asarray(person)
    if arr.dtype.kind == "O" and arr.size:
        inferred = pd.api.types.infer_dtype(arr, skipna=False)
        if inferred in ("integer", "floating", "mixed-integer-float", "boolean"):
            arr = np.asarray(arr.tolist())
    kind = arr.dtype.kind
    if kind in "iub":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            return arr.astype(np.uint64)
        return arr.astype(np.int64)
    if kind == "f":
        return arr.astype(np.float64) + 0.0
    if kind in "Mm":
        return arr.astype(f"{kind}8[ns]")
    return arr


def prepared_digest(prepared: dict[str, Any], mac: bytes) -> bytes:
    parts = [prepared["code"], prepared["hashed"], prepared["order"], prepared["edges"],
             np.array([prepared["start"]], dtype=np.int64), *prepared["values"]]
    return b"".join(digest(mac, np.ascontiguousarray(p)) for p in parts)


def bounded_statistics(pieces: list[dict[str, Any]], max_groups: int, max_rows: int,
                       nkeys: int, col_grids: dict[str, Any], extra: Extra,
                       func: str) -> Any:
    """On a worker: one bucket's rows (every row of its persons, in frame order: the
    partitions' pieces in partition order), bounded as dpfast.records.bound bounds them
    (their priorities drawn by :func:`bucketed`), and their statistics per key."""
    from . import groupby as _gb
    from . import records

    def joined(name: str) -> np.ndarray:
        return np.concatenate([p[name] for p in pieces])
    code = np.ascontiguousarray(joined("code"), dtype=np.int64)
    person = records.person_ids(joined("person"), code.size, func)
    flags = _native.bound_contributions(
        person, code, np.ascontiguousarray(joined("prio")),
        np.ascontiguousarray(joined("pair_prio")), max_groups, max_rows, 1)
    values = {c: np.concatenate([p["values"][c] for p in pieces])
              for c in pieces[0]["values"]}
    # Every row of a person is here: the weights (from each person's pairs) are theirs.
    return _gb.key_statistics(code, flags, values, nkeys, col_grids, extra.quantile_bounds,
                              person if extra.weighted else None)


def added(a: Any, b: Any) -> Any:
    """The sum of two partial :class:`dpfast.groupby.KeyStatistics` (exact: integers; the
    quantile columns' grid points concatenated: they are in any order)."""
    from .groupby import KeyStatistics
    sums = {c: (s1 + b.sums[c][0], None if s2 is None else s2 + b.sums[c][1])
            for c, (s1, s2) in a.sums.items()}
    points = {c: np.concatenate((p, b.points[c])) for c, p in a.points.items()}
    weights = None if a.weights is None else a.weights + b.weights
    return KeyStatistics(a.rows + b.rows, a.people + b.people, sums, points, weights)
