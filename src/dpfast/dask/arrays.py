"""Counts that live in a Dask array: :func:`noisy_counts` (each block noised in its own task,
cell-addressed) and :func:`from_npy` (a ``.npy`` file larger than memory, read by the
workers).

A release here reads every block once before its charge, to take a keyed digest of it (and,
with ``check``, its extreme values); each block's task checks its block against that digest
after the charge, so a lazy result computed again gives the identical release of identical
data, or a refusal (see :mod:`dpfast.dask`).
"""
from __future__ import annotations

import hmac
import math
import os
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np

from .. import pieces as _pieces
from .. import validation as _v
from .._release import Release, refuse_unaffordable
from ..noise import Gaussian, Laplace
from ..releases.cells import counting_measure, int32_limit, noisy_cells

if TYPE_CHECKING:
    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["NPY_BLOCK", "from_npy", "noisy_counts"]

#: Cells per block of :func:`from_npy` (about 40-80 MB per block).
NPY_BLOCK = 10_000_000


def from_npy(path: str, chunks: int = NPY_BLOCK) -> da.Array:
    """from_npy(path, chunks=10_000_000)

    A Dask array over a ``.npy`` file, in blocks of ``chunks`` rows along the first axis,
    each read by its own task with one positioned read of the file (nothing is read on the
    client, and nothing is sent to the workers but the path).

    Parameters
    ----------
    path : str or path-like
        A C-order ``.npy`` file (format 1.0 or 2.0), readable at the same path on every
        worker (a shared file system, or a local cluster).
    chunks : int, optional
        Rows per block (default :data:`NPY_BLOCK`, ten million: about 40-80 MB of counts
        per block for a 1-D file). Each block spans the other axes whole.

    Returns
    -------
    dask.array.Array
        The file's array, lazy: its shape and dtype are the file's, read from its header.

    Raises
    ------
    TypeError
        ``chunks`` is not an int (a bool is refused).
    ValueError
        ``chunks`` is below 1; the file is not a ``.npy`` file (its header does not
        parse), or is stored in Fortran order.
    OSError
        The file cannot be opened on the client (``FileNotFoundError`` if it is missing).

    Examples
    --------
    A file of 100,000 counts read in blocks of 30,000 rows and released (``rng=0`` makes
    the example reproducible: a seed is for tests and research only, never for a real
    release):

    >>> import os, tempfile
    >>> import numpy as np, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "counts.npy")
    >>> np.save(path, np.arange(100_000) % 7)
    >>> x = dpd.from_npy(path, chunks=30_000)
    >>> x.shape, x.chunks, str(x.dtype)
    ((100000,), ((30000, 30000, 30000, 10000),), 'int64')
    >>> int(x.sum().compute())
    299995
    >>> out = dpd.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(), rng=0)
    >>> out.compute()[:5].tolist()
    [-1, 1, 2, 1, 4]
    >>> os.remove(path); os.rmdir(folder)
    """
    func = "from_npy"
    rows = _v.check_positive_int(chunks, "chunks", func)
    file = _NpyFile(str(path))
    return da.from_array(file, chunks=(rows,) + file.shape[1:], asarray=False, fancy=False)


class _NpyFile:
    """A ``.npy`` file as an array-like that pickles as its path: a task reads the rows it
    needs with one positioned read (no memory map stays resident in the worker)."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(f)
            self.offset = f.tell()
        if fortran:
            raise ValueError(f"The 'path' parameter of from_npy must name a C-order .npy "
                             f"file. Got a Fortran-order one: {path!r}.")
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)

    def __getitem__(self, index: Any) -> np.ndarray:
        index = index if isinstance(index, tuple) else (index,)
        rows = index[0] if index else slice(None)
        if isinstance(rows, slice) and rows.step in (None, 1) and all(
                i == slice(None) or (isinstance(i, slice) and i.indices(n) == (0, n, 1))
                for i, n in zip(index[1:], self.shape[1:])):
            start, stop, _ = rows.indices(self.shape[0])
            row = math.prod(self.shape[1:])
            count = max(stop - start, 0) * row
            data = np.fromfile(self.path, dtype=self.dtype, count=count,
                               offset=self.offset + start * row * self.dtype.itemsize)
            return data.reshape((max(stop - start, 0),) + self.shape[1:])
        return np.array(np.load(self.path, mmap_mode="r")[index])

    def __reduce__(self) -> tuple[Any, ...]:
        return (_NpyFile, (self.path,))


def noisy_counts(counts: da.Array, *, noise: str = "laplace", epsilon: float | None = None,
                 delta: float | None = None, rho: float | None = None,
                 sensitivity: float = 1, dtype: Any = None,
                 accountant: AccountantLike | None = None, rng: RngLike = None,
                 check: bool = True) -> da.Array:
    """noisy_counts(counts, *, noise="laplace", epsilon=None, delta=None, rho=None, sensitivity=1, dtype=None, accountant=None, rng=None, check=True)

    :func:`dpfast.noisy_counts` on a Dask array: each cell plus Laplace noise of scale
    ``sensitivity / epsilon``, or Gaussian noise (``noise="gaussian"`` with ``rho``, or
    with ``epsilon`` and ``delta``; ``sensitivity`` is then in l2) -- discrete for integer
    counts, on a grid for floating ones. The noise of each cell depends only on the
    release's key and the cell's position, so the release equals ``dpfast.noisy_counts``
    on the same counts with the same seed, whatever the chunks and the workers.

    Every block is read once before the charge, to take its keyed digest: each task checks
    its block against it and refuses a block changed since (see :mod:`dpfast.dask`).

    Parameters
    ----------
    counts : dask.array.Array
        Integer (up to 64 bits) or real floating counts, any shape, in chunks of known
        sizes (``counts.compute_chunk_sizes()`` after a filter). Blocks are rechunked to
        span every axis but the first, so that each block is one run of cells.
    noise : {"laplace", "gaussian"}, optional
        ``"laplace"`` (default, with ``epsilon``: epsilon-DP) or ``"gaussian"`` (with
        ``rho``: rho-zCDP; or with ``epsilon`` and ``delta``: the smallest sigma giving
        (epsilon, delta)-DP for this one release).
    epsilon, delta, rho : float, optional
        The release's cost, as for :func:`dpfast.noisy_counts`; charged once, on the
        client, before any noise is drawn.
    sensitivity : float, optional
        How far one person moves any one cell (l1 for Laplace noise, l2 for Gaussian);
        default 1.
    dtype : {None, numpy.int64, numpy.int32, numpy.float64}, optional
        The release's dtype: int64 for integer counts, float64 for real ones (default).
        ``numpy.int32`` stores integer releases in half the space: counts must then stay
        within ``2**31 - 1 - 764 t`` (the noise's bound; ``t`` the Laplace scale, or
        ``floor(sigma) + 1`` for Gaussian noise), which 8- and 16-bit counts always do;
        wider ones are read to check it.
    accountant : dpfast.Accountant, optional
        The budget charged (default: :func:`dpfast.default_accountant`).
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases): the release's key is drawn from the OS.
        A seed is for tests and research only. The key travels in the task graph (see
        :mod:`dpfast.dask`).
    check : bool, optional
        True (default): floating and 64-bit integer counts (and 32-bit ones released as
        int32) are checked in the read before the charge: NaN, infinities and values the
        noise cannot be added to exactly are refused. ``check=False`` skips these checks,
        not the read (NaN then fails its block after the charge).

    Returns
    -------
    dask.array.Array
        The noisy counts, lazy, of the counts' shape, chunked along the first axis: int64
        (or int32) for integer counts, float64 for real ones. Computing it again gives the
        same release of the same data.

    Raises
    ------
    TypeError
        ``counts`` is not a Dask array, or does not hold integer or real floating values
        of at most 64 bits; ``dtype`` is not one the counts can be released as; ``check``
        is not a bool; ``epsilon``, ``delta``, ``rho`` or ``sensitivity`` is not a real
        number; ``noise`` is not a str; ``accountant`` or ``rng`` is not of an accepted
        kind.
    ValueError
        ``counts`` has chunks of unknown size or no cell; the privacy keywords do not fit
        the noise (Laplace: ``epsilon`` missing, ``rho`` or a ``delta`` > 0 given;
        Gaussian: neither ``rho`` nor both ``epsilon`` and ``delta``), or are out of range;
        the noise scale or sigma is outside the sampler's range; ``dtype=numpy.int32``
        with noise that could overflow it, or for 32/64-bit counts with ``check=False``;
        with ``check``, a NaN, an infinity or a count too large for the noise (the message
        names the cell's position, never its value). All of these come before the charge.
        After the charge, computing the result raises ValueError for a block that changed
        since it was read (nothing of that block is released).
    BudgetExceededError
        The accountant cannot afford the release (nothing is read).

    Examples
    --------
    Six counts in chunks of four, released at epsilon 0.5 from a budget of 1 (``rng=0``
    makes the example reproducible: a seed is for tests and research only, never for a
    real release):

    >>> import dask.array as da, numpy as np, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> counts = np.array([120, 45, 0, 310, 72, 9])
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> out = dpd.noisy_counts(da.from_array(counts, chunks=4), epsilon=0.5,
    ...                        accountant=acct, rng=0)
    >>> out.compute().tolist()
    [118, 46, 1, 306, 72, 12]
    >>> tuple(acct.spent)
    (0.5, 0.0)

    The same release as ``dpfast.noisy_counts`` on the whole array, whatever the chunks:

    >>> x = np.arange(1000)
    >>> out = dpd.noisy_counts(da.from_array(x, chunks=300), epsilon=1.0,
    ...                        accountant=dp.Accountant(), rng=5)
    >>> bool((out.compute() == dp.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(),
    ...                                        rng=5)).all())
    True
    """
    func = "noisy_counts"
    if not isinstance(counts, da.Array):
        raise TypeError(f"The 'counts' parameter of dpfast.dask.{func} must be a Dask array. "
                        f"Got {_v.describe(counts)} instead (use dpfast.noisy_counts).")
    kind = counts.dtype.kind
    if kind not in "iuf" or counts.dtype.itemsize > 8:
        raise TypeError(f"The 'counts' parameter of dpfast.dask.{func} must hold integer or "
                        f"real floating counts. Got dtype {counts.dtype} instead.")
    if any(math.isnan(c) for dim in counts.chunks for c in dim):
        # Each block's first cell must be known to address its noise.
        raise ValueError(f"The 'counts' parameter of dpfast.dask.{func} has chunks of unknown "
                         f"size (from boolean indexing or a filter, say): call "
                         f"counts.compute_chunk_sizes() first, or write the counts out. "
                         f"Nothing was read or spent.")
    integer = kind in "iu"
    m = counting_measure(func, noise, epsilon, delta, rho, sensitivity, integer, accountant,
                         counts.size)
    check = _v.check_bool(check, "check", func)
    out_dtype = _out_dtype(dtype, integer, counts.dtype, m.noise, check, func)
    if counts.size == 0:
        raise ValueError(f"The 'counts' parameter of dpfast.dask.{func} must not be empty.")
    narrow = out_dtype == np.int32 and counts.dtype.itemsize >= 4
    checked = check and (not integer or counts.dtype.itemsize == 8 or narrow)
    rel = Release(func, accountant, m.epsilon, m.delta, rng, rho=m.rho)
    refuse_unaffordable(rel, "dpfast.dask")                      # before the data is read
    if counts.ndim > 1:
        counts = counts.rechunk({a: -1 for a in range(1, counts.ndim)})
    # The one read before the charge: every block's keyed digest (binding the release to
    # this input) and, if checked, its extreme values.
    blocks = list(counts.to_delayed().reshape(-1))
    mac = os.urandom(32)
    scans = dask.compute(*[dask.delayed(_scan_block, pure=True)(b, mac, checked)
                           for b in blocks])
    row = math.prod(counts.shape[1:])
    starts = np.concatenate(([0], np.cumsum(counts.chunks[0])[:-1])) * row
    if checked:
        limit = int32_limit(m.noise) if narrow else \
            float(2**62) if integer else 2.0**52 * m.noise.g
        _check_extremes([s[1] for s in scans], starts, counts.shape, limit, func)
    key = bytes(rel.charge())
    # Real counts not read by the check are checked block by block as they are noised.
    verify = not (integer or checked)
    pieces = [da.from_delayed(dask.delayed(_noisy_block, pure=True)(
                  b, key, int(start), m.noise, out_dtype, verify, mac, digest),
                  shape=(n,) + counts.shape[1:], dtype=out_dtype)
              for b, start, n, (digest, _) in zip(blocks, starts, counts.chunks[0], scans)]
    return pieces[0] if len(pieces) == 1 else da.concatenate(pieces, axis=0)


def _scan_block(block: np.ndarray, mac: bytes, checked: bool,
                ) -> tuple[bytes, tuple[Any, int, Any, int] | None]:
    """A block's digest, and (if ``checked``) its least and greatest values with their
    positions in the block (NaN counts as least: numpy's argmin finds the first)."""
    digest = _pieces.digest(mac, block)
    flat = block.reshape(-1)
    if not checked or flat.size == 0:
        return digest, None
    lo, hi = int(flat.argmin()), int(flat.argmax())
    return digest, (flat[lo].item(), lo, flat[hi].item(), hi)


def _check_extremes(extremes: list[tuple[Any, int, Any, int] | None], starts: Any,
                    shape: tuple[int, ...], limit: float, func: str) -> None:
    """Refuse NaN, infinities and counts beyond ``limit`` in magnitude, naming the first
    such cell by its position (never its value)."""
    for ext, start in zip(extremes, starts):
        if ext is None:
            continue
        for value, at in ((ext[0], ext[1]), (ext[2], ext[3])):
            cell = tuple(int(i) for i in np.unravel_index(int(start) + at, shape))
            if not math.isfinite(value):
                raise ValueError(f"The 'counts' parameter of dpfast.dask.{func} must not "
                                 f"contain NaN or infinity. The count at cell {cell} is "
                                 f"{'NaN' if math.isnan(value) else 'infinite'}.")
            if abs(value) > limit:
                raise ValueError(f"The 'counts' parameter of dpfast.dask.{func} must be at "
                                 f"most {limit:g} in magnitude for this release. The count "
                                 f"at cell {cell} is beyond that.")


def _out_dtype(dtype: Any, integer: bool, counts: np.dtype[Any], noise: Laplace | Gaussian,
               check: bool, func: str) -> np.dtype[Any]:
    """int64 / float64, or int32 when asked and possible."""
    default: np.dtype[Any] = np.dtype(np.int64 if integer else np.float64)
    if dtype is None:
        return default
    want: np.dtype[Any] = np.dtype(dtype)
    if want == default:
        return want
    if not (integer and want == np.int32):
        raise TypeError(f"The 'dtype' parameter of dpfast.dask.{func} must be None or int64 "
                        f"(int32 for integer counts; float64 for real ones). Got {dtype!r} "
                        f"for counts of dtype {counts} instead.")
    if int32_limit(noise) < (2**16 if counts.itemsize <= 2 else 0):
        what = "noise scale" if isinstance(noise, Laplace) else "Gaussian sigma"
        raise ValueError(f"The 'dtype' parameter of dpfast.dask.{func} cannot be int32 at a "
                         f"{what} of {noise.scale:g}: the noise could overflow it.")
    if counts.itemsize >= 4 and not check:
        raise ValueError(f"The 'dtype' parameter of dpfast.dask.{func} can be int32 for "
                         f"{counts} counts only with check=True (they are read to make sure "
                         f"the noisy counts fit).")
    return want


def _noisy_block(block: np.ndarray, key: bytes, start: int, noise: Laplace | Gaussian,
                 dtype: np.dtype[Any], verify: bool, mac: bytes, digest: bytes) -> np.ndarray:
    """One block, its first cell at ``start`` in the whole array (C order): refused if it is
    not the block digested before the charge, else its cells plus their noise."""
    if not hmac.compare_digest(_pieces.digest(mac, block), digest):
        raise ValueError("The 'counts' parameter of dpfast.dask.noisy_counts changed since "
                         "the release was charged (a block differs from the one read before "
                         "the charge): nothing of that block is released. Make a new release "
                         "of the new counts.")
    if verify and not np.all(np.isfinite(block)):
        raise ValueError("The 'counts' parameter of dpfast.dask.noisy_counts must not "
                         "contain NaN or infinity.")
    return noisy_cells(key, start, np.ascontiguousarray(block), noise,
                       int32=dtype == np.int32)

