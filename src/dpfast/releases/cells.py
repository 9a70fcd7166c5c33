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

The same holds for every noise of :mod:`dpfast.noise`: discrete Laplace and discrete Gaussian
noise on integer counts, grid Laplace and grid Gaussian noise on real ones (the discrete
Gaussian's kernel also reads chunk ``c``'s streams only, and each cell's noise depends only on
the cells before it in its chunk).

The key is the release: whoever holds its 32 bytes can recompute and remove the noise.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .. import validation as _v
from .._release import Release
from ..accounting import composes_in_zcdp, resolve_accountant
from ..noise import Gaussian, Laplace, Measure, measure
from ..samplers import MAX_DISCRETE_SCALE, MAX_DISCRETE_SIGMA

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["release_key", "noise_scale", "counting_measure", "noisy_cells", "noisy_cells_at",
           "int32_limit", "refuse_unpayable_kind", "CHUNK"]

CHUNK = _native.CHUNK


def release_key(func: str, accountant: AccountantLike | None, epsilon: float | None,
                rng: RngLike, *, delta: float = 0.0, rho: float | None = None) -> bytes:
    """Charge (``epsilon``, ``delta``) and ``rho`` to ``accountant`` as the release does
    (a :class:`dpfast.noise.Measure`'s cost; a refused budget draws nothing), then draw the
    release's key from ``rng`` (None: the OS) as a one-shot kernel call would. Returns its
    32 bytes."""
    return bytes(Release(func, accountant, epsilon, delta, rng, rho=rho).charge())


def counting_measure(func: str, noise: object, epsilon: object, delta: object, rho: object,
                     sensitivity: object = 1.0, integer: bool = True,
                     accountant: object = None, cells: int = 1) -> Measure:
    """The noise and cost of a release of disjoint counts (one record moves one cell by at
    most ``sensitivity``: l1 = l2 = ``sensitivity``), from its ``noise=``, ``epsilon=``,
    ``delta=`` and ``rho=`` keywords (:func:`dpfast.noise.measure`), checked for the kernel
    that will draw it: a Laplace scale within the kernels' range (today's checks and
    messages, first), a Gaussian sigma within the discrete Gaussian's (integers) or the
    grid's range. TypeError/ValueError before anything is charged or drawn."""
    d = _v.check_sensitivity(sensitivity, func)
    if isinstance(noise, str) and noise == "laplace" and rho is None and epsilon is not None:
        _v.check_mechanism_scale(d, _v.check_epsilon(epsilon, func), func,
                                 high=MAX_DISCRETE_SCALE if integer else _v.MAX_SCALE)
    m = measure(func, noise, epsilon, delta, rho, l1=d, l2=d, integer=integer,
                zcdp_accountant=composes_in_zcdp(accountant), cells=cells)
    if isinstance(m.noise, Gaussian):
        high = MAX_DISCRETE_SIGMA if integer else _v.MAX_SCALE
        if not _v.MIN_SCALE <= m.noise.sigma <= high:
            raise ValueError(f"The privacy parameters of {func} give Gaussian noise of sigma "
                             f"{m.noise.sigma:g}, outside [{_v.MIN_SCALE:g}, {high:g}] (the "
                             f"sensitivity is {d!r}): ask for a larger or smaller cost.")
    return m


def noise_scale(epsilon: float, sensitivity: float, integer: bool, func: str) -> float:
    """The Laplace scale ``sensitivity / epsilon``, checked for the kernel that will use it."""
    eps = _v.check_epsilon(epsilon, func)
    d = _v.check_sensitivity(sensitivity, func)
    return _v.check_mechanism_scale(d, eps, func, high=MAX_DISCRETE_SCALE if integer else
                                    _v.MAX_SCALE)


def refuse_unpayable_kind(func: str, accountant: AccountantLike | None, m: Measure) -> None:
    """In the check phase, refuse a cost ``accountant`` cannot take at all, whatever it has
    left: rho alone (a release given in ``rho=``) on an (epsilon, delta) budget (ValueError
    from the accountant, naming the fix). Whether the budget has room is the charge's to
    find (BudgetExceededError, nothing drawn)."""
    if m.epsilon is None:
        resolve_accountant(accountant, func).check(None, m.delta, rho=m.rho)


def int32_limit(noise: Laplace | Gaussian) -> int:
    """The largest |count| whose noisy value surely fits int32: ``2**31 - 1`` less a bound
    on the integer noise's magnitude (negative if there is no room). Discrete Laplace noise
    of parameter ``t`` has ``|K| <= t (c + 1100 ln 2) + 1 < 763.3 t + 1`` (the sampler's
    deepest binade). The discrete Gaussian's proposals are ``|x| = G M + V`` with ``V < M =
    2**m`` and ``G = floor((lz + 0.5) / r)``, ``lz`` at most 63 bits of the proposal's word
    plus the 17 extra words' 1088 (``dpfast._native.dgauss_proposal`` gives ``m`` and ``r``),
    so ``|x| < (floor(1151.5 / r) + 1) M``."""
    if isinstance(noise, Laplace):
        bound = math.ceil(763.3 * noise.t + 1)
    else:
        m, r, _ = _native.dgauss_proposal(noise.sigma)
        bound = (math.floor(1151.5 / r) + 1) * 2**m
    return 2**31 - 1 - bound


def _noise_of(scale: float | Laplace | Gaussian, integer: bool) -> Laplace | Gaussian:
    """A noise object, or (as before noise objects) a Laplace scale."""
    if isinstance(scale, (Laplace, Gaussian)):
        return scale
    return Laplace(scale, integer=integer)


def noisy_cells(key: bytes | _native.Key, start: int, counts: NDArray[Any],
                scale: float | Laplace | Gaussian, threads: int = 1,
                int32: bool = False) -> NDArray[Any]:
    """Cells ``start .. start + counts.size`` (C order) of the release under ``key``: the
    counts plus the noise ``scale`` (a :class:`dpfast.noise.Laplace` or
    :class:`dpfast.noise.Gaussian`, or a number: the scale of Laplace noise), integer noise
    for integer counts (int64, or int32 with ``int32``), grid noise for real ones (float64).
    The counts must already be checked (finite, within range; for int32, within
    :func:`int32_limit`). For real counts pass the release's noise object
    (``counting_measure(..., cells=...).noise``: its grid depends on how many cells a record
    can change); a number is Laplace noise on the grid of its scale alone, right only when a
    record changes one cell."""
    flat = counts.reshape(-1)
    integer = flat.dtype.kind in "iu"
    first = start // CHUNK
    pad = start - first * CHUNK
    k = key if isinstance(key, _native.Key) else _native.Key.from_bytes(key)
    # The chunk is padded at the front so that each cell keeps its address in the release.
    cell = np.zeros(pad + flat.size, dtype=(np.float64 if not integer else
                                            np.int32 if int32 else np.int64))
    cell[pad:] = flat
    out = _noise_of(scale, integer).fill(k, threads, cell, cell, first)
    return out[pad:].reshape(counts.shape)


def noisy_cells_at(key: bytes, cells: NDArray[np.integer[Any]], counts: NDArray[Any],
                   scale: float | Laplace | Gaussian) -> NDArray[Any]:
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
    noise = _noise_of(scale, integer)
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
        out[order[part]] = noisy_cells(key, c * CHUNK, base, noise)[pos]
    return out
