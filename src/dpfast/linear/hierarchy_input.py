"""The input of a census hierarchy: records and their public geography read as leaf counts,
parent arrays and unit labels, and parent arrays checked to form one tree.

:func:`dpfast.census_hierarchy` takes either leaf counts and one parent array per level
below the top, or a frame of records and a frame of the geography (one row per leaf, one
column per level, top first); :func:`leaves_from_frames` reads the second form as the
first, and :func:`check_parents` checks the parent arrays (every refusal names the
argument and never shows a record's values).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v
from ..tables import is_frame_like

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["leaves_from_frames", "check_parents"]


def leaves_from_frames(records: Any, geography: Any, func: str,
                 ) -> tuple[NDArray[np.int64], list[NDArray[np.int64]], list[Any]]:
    """Leaf counts, parent arrays and unit labels from a frame of records and the frame of
    the public geography (one row per leaf, one column per level, top first)."""
    import pandas as pd
    if not (is_frame_like(records) and is_frame_like(geography)):
        raise TypeError(f"The 'data' and 'hierarchy' parameters of {func} must both be "
                        f"frames, or leaf counts and parent arrays. Got "
                        f"{type(records).__name__} and {type(geography).__name__} instead.")
    cols = list(geography.columns)
    if not cols or geography.empty:
        raise ValueError(f"The 'hierarchy' parameter of {func} must have at least one level "
                         "column and one leaf unit.")
    missing = [c for c in cols if c not in records.columns]
    if missing:
        raise ValueError(f"The 'data' parameter of {func} must have a column for every level "
                         f"of the hierarchy. Missing: {missing!r}.")
    leaves = pd.MultiIndex.from_frame(geography[cols])
    if leaves.has_duplicates:
        raise ValueError(f"The 'hierarchy' parameter of {func} must list each leaf unit once. "
                         f"{int(leaves.duplicated().sum())} rows repeat an earlier one.")
    codes = leaves.get_indexer(pd.MultiIndex.from_frame(records[cols]))
    outside = np.flatnonzero(codes < 0)
    if outside.size:
        # Neither the values nor how many records: an error message can end up in a log.
        raise ValueError(f"The 'data' parameter of {func} must have every record in a leaf "
                         f"unit of the hierarchy. Some are in none (the first at record "
                         f"{int(outside[0])}; their values are not shown).")
    counts = np.bincount(codes, minlength=len(leaves)).astype(np.int64)
    labels: list[Any] = [pd.Index(["total"])]
    parents: list[NDArray[np.int64]] = []
    for depth in range(1, len(cols) + 1):
        units = leaves.droplevel(list(range(depth, len(cols)))) if depth < len(cols) \
            else leaves
        uniq = units.unique()
        parent_of_unit = (np.zeros(len(uniq), dtype=np.int64) if depth == 1 else
                          labels[-1].get_indexer(uniq.droplevel(depth - 1)))
        parents.append(parent_of_unit.astype(np.int64))
        labels.append(uniq)
    return counts, parents, labels          # the leaves are unique: labels[-1] is `leaves`


def check_parents(parents: Any, n_leaves: int, func: str) -> list[NDArray[np.int64]]:
    """The parent arrays, top level first; each level's units all have a parent and every
    unit above the leaves has at least one child."""
    if not isinstance(parents, (list, tuple)):
        raise TypeError(f"The 'hierarchy' parameter of {func} must be a list of integer "
                        f"arrays (one per level under the top) or a frame. Got "
                        f"{_v.describe(parents)} instead.")
    out: list[NDArray[np.int64]] = []
    below = n_leaves
    for depth in range(len(parents) - 1, -1, -1):          # from the leaves up
        p = _v.as_array(parents[depth], "hierarchy", func)
        if p.dtype.kind not in "iu" or p.shape != (below,):
            raise ValueError(f"The 'hierarchy' parameter of {func} must give, at level "
                             f"{depth + 1}, an integer array of {below} parent indices. Got "
                             f"{_v.describe(p)} instead.")
        p = p.astype(np.int64)
        size = int(p.max()) + 1 if p.size else 0
        if p.size and p.min() < 0:
            raise ValueError(f"The 'hierarchy' parameter of {func} must hold indices >= 0. "
                             f"Got {int(p.min())} at level {depth + 1} instead.")
        if np.bincount(p, minlength=size).min() == 0:
            raise ValueError(f"The 'hierarchy' parameter of {func} must give every unit of "
                             f"level {depth} at least one child (indices 0..{size - 1}).")
        out.append(p)
        below = size
    if below != 1:
        raise ValueError(f"The 'hierarchy' parameter of {func} must lead to one unit at the top "
                         f"(the nation). Got {below} units at the top instead.")
    return out[::-1]
