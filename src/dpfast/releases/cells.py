"""Cell-addressed noise: the noise of cell ``i`` of a release is a function of the release's
key and ``i`` only, so a release made in pieces (Dask blocks, Spark partitions, retried
tasks) is bit-identical to one made at once.

How. dpfast's kernels split a call's output into chunks of ``CHUNK`` (65,536) cells; chunk
``c`` reads the ChaCha20 streams of nonces ``2c`` and ``2c + 1`` under the call's key, and
each cell's noise depends only on the cells before it in its chunk. A piece starting at cell
``a`` therefore draws from chunk ``a // CHUNK`` on, with the cells of that chunk before
``a`` standing in (their noise is computed and dropped: at most ``CHUNK - 1`` extra draws),
and keeps the rest. With the key that ``dpfast.noisy_counts`` would draw from the same
generator (:func:`release_key`), the pieces put together equal ``noisy_counts``' release.

The key is the release: whoever holds its 32 bytes can recompute and remove the noise.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .. import validation as _v
from .._release import Release
from ..noise import Laplace
from ..samplers import MAX_DISCRETE_SCALE

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["release_key", "noise_scale", "noisy_cells", "noisy_cells_at", "CHUNK"]

CHUNK = _native.CHUNK


def release_key(func: str, accountant: AccountantLike | None, epsilon: float,
                rng: RngLike) -> bytes:
    """Charge ``epsilon`` to ``accountant`` (the release's charge: a refused budget draws
    nothing), then draw the release's key from ``rng`` (None: the OS) as a one-shot kernel
    call would. Returns its 32 bytes."""
    return bytes(Release(func, accountant, epsilon, 0.0, rng).charge())


def noise_scale(epsilon: float, sensitivity: float, integer: bool, func: str) -> float:
    """The Laplace scale ``sensitivity / epsilon``, checked for the kernel that will use it."""
    eps = _v.check_epsilon(epsilon, func)
    d = _v.check_sensitivity(sensitivity, func)
    return _v.check_mechanism_scale(d, eps, func, high=MAX_DISCRETE_SCALE if integer else
                                    _v.MAX_SCALE)


def noisy_cells(key: bytes | _native.Key, start: int, counts: NDArray[Any], scale: float,
                threads: int = 1, int32: bool = False) -> NDArray[Any]:
    """Cells ``start .. start + counts.size`` (C order) of the release under ``key``: the
    counts plus discrete Laplace noise (int64, or int32 with ``int32``; integer counts) or
    grid Laplace noise (float64), of ``scale``. The counts must already be checked (finite,
    within range; for int32, within ``2**31 - 1`` less the noise's bound)."""
    flat = counts.reshape(-1)
    integer = flat.dtype.kind in "iu"
    first = start // CHUNK
    pad = start - first * CHUNK
    k = key if isinstance(key, _native.Key) else _native.Key.from_bytes(key)
    # The chunk is padded at the front so that each cell keeps its address in the release.
    cell = np.zeros(pad + flat.size, dtype=(np.float64 if not integer else
                                            np.int32 if int32 else np.int64))
    cell[pad:] = flat
    out = Laplace(scale, integer=integer).fill(k, threads, cell, cell, first)
    return out[pad:].reshape(counts.shape)


def noisy_cells_at(key: bytes, cells: NDArray[np.integer[Any]], counts: NDArray[Any],
                   scale: float) -> NDArray[Any]:
    """The cells at the given indices (any order, each at most once) of the release under
    ``key``, for counts that arrive with their cell index (a Spark or Dask partition of
    ``(cell, count)`` rows). Each chunk the indices touch is drawn once, up to the last of
    its cells asked for (a cell's noise does not depend on the counts before it): at most
    one chunk of draws per chunk touched, whatever the order of the indices."""
    index = np.asarray(cells, dtype=np.int64)
    values = np.asarray(counts)
    if index.shape != values.shape or index.ndim != 1:
        raise ValueError("noisy_cells_at needs 1-D cells and counts of one length.")
    if index.size and index.min() < 0:
        raise ValueError("noisy_cells_at: cell indices must be non-negative.")
    order = np.argsort(index, kind="stable")
    sorted_index = index[order]
    if np.any(np.diff(sorted_index) == 0):
        raise ValueError("noisy_cells_at: a cell index appears twice (its noise would too).")
    integer = values.dtype.kind in "iu"
    out = np.empty(values.shape, dtype=np.int64 if integer else np.float64)
    chunk = sorted_index // CHUNK
    bounds = np.flatnonzero(np.diff(chunk)) + 1
    for part in np.split(np.arange(index.size), bounds):
        if not part.size:
            continue
        c = int(chunk[part[0]])
        pos = sorted_index[part] - c * CHUNK
        base = np.zeros(int(pos[-1]) + 1, dtype=out.dtype)
        base[pos] = values[order[part]]
        out[order[part]] = noisy_cells(key, c * CHUNK, base, scale)[pos]
    return out
