"""Contribution bounding: the rows each person keeps.

The rows are chosen uniformly at random under the release's keys (:func:`bound`), in passes
by a hash of the person for large tables.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import noise

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._release import Keys
    from .inputs import Column


#: Rows bounded in one call of the kernel (its scratch is 32 bytes a row); a larger table is
#: bounded in passes, each over the people of one class of a hash of their id: every person's
#: rows in one pass, so the same rows are kept as in one call, with a pass's scratch.
BOUND_ROWS = 1 << 24
#: Ids hashed at a time by :func:`person_class` (its temporaries stay a block's).
_HASH_BLOCK = 1 << 22


def person_class(person: NDArray[np.int64], classes: int) -> NDArray[np.uint16]:
    """A class in [0, classes) (at most 2**16) of each person's id: splitmix64's finalizer
    mod classes, computed a block at a time (its temporaries stay a block's)."""
    out = np.empty(person.size, dtype=np.uint16)
    for a in range(0, person.size, _HASH_BLOCK):
        x = person[a:a + _HASH_BLOCK].view(np.uint64)
        with np.errstate(over="ignore"):
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
            x ^= x >> np.uint64(31)
        out[a:a + _HASH_BLOCK] = x % np.uint64(classes)
    return out


def bound(keys: Keys, threads: int, person: NDArray[np.int64],
          group: NDArray[np.int64] | None, max_groups: int,
          max_rows: int) -> NDArray[np.uint8]:
    """Flags of the rows kept when each person keeps at most ``max_groups`` groups and
    ``max_rows`` rows in each, chosen uniformly at random: independent uniform priorities
    under the release's next two keys, one per row, addressed by the row's position (so
    the same key and data give the same rows for any thread count), the lowest kept. The
    kernel draws the priorities as it reads the rows; none is held. Tables of more than
    :data:`BOUND_ROWS` rows go in passes (the same flags)."""
    n = person.shape[0]
    row_key, pair_key = keys.next(), keys.next()
    if n <= BOUND_ROWS:
        return noise.bounded_rows(row_key, pair_key, threads, person, group, None, n,
                                  max_groups, max_rows)
    passes = -(-n // BOUND_ROWS)
    cls = person_class(person, passes)
    flags = np.zeros(n, dtype=np.uint8)
    for c in range(passes):
        rows = np.flatnonzero(cls == c)
        flags[rows] = noise.bounded_rows(
            row_key, pair_key, threads, np.ascontiguousarray(person[rows]),
            None if group is None else np.ascontiguousarray(group[rows]),
            rows, n, max_groups, max_rows)
    return flags


def kept(col: Column, keys: Keys, threads: int) -> NDArray[np.float64]:
    """The values each person keeps (all of them without a privacy unit), clamped."""
    x = col.x
    if col.person is not None:
        x = x[bound(keys, threads, col.person, None, 1, col.max_rows) != 0]
    return np.clip(x, col.lo, col.hi)
