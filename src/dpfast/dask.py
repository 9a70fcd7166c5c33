"""dpfast's releases over Dask arrays and DataFrames (``pip install "dpfast[dask]"``).

Every function here makes the same release as its single-machine namesake, on data that
lives in a Dask collection (larger than memory, on disk, on a cluster):

- :func:`noisy_counts` on a Dask array of counts, any chunks (``from_npy`` reads a ``.npy``
  file larger than memory block by block, in the workers);
- :func:`histogram`, :func:`histogramdd`, :func:`count_categories`, :func:`crosstab`,
  :func:`census_hierarchy` and :func:`tree_mechanism` on Dask DataFrames (read from Parquet
  or CSV): each partition is counted on a worker by dpfast's compiled counting, the
  partition counts are summed on the workers, and the noise is added where the counts are,
  in one task; only the released table reaches the client, never a record;
- :func:`group_by` on a Dask DataFrame: ``.agg(...)`` releases per-key statistics of
  records (each person's rows bounded, keys public or selected privately) equal to
  :func:`dpfast.group_by` on the whole frame; the statistics per key are summed on the
  workers and the release is finished on the client from them (see :func:`group_by`).

Every release takes the noise keywords of its namesake: ``noise="laplace"`` (default) with
``epsilon=``, or ``noise="gaussian"`` with ``rho=`` (a zCDP cost) or ``epsilon=`` and
``delta=`` (the tightest sigma for the one release, over its whole l2 sensitivity).
Integer counts get exact discrete Gaussian noise, cell-addressed like the Laplace noise.
A release is one charge of its whole cost, on the client.

Release phases (:class:`dpfast._release.Release`). Check: everything that can be checked
without reading the data (types, parameters, public bins and categories, chunk sizes), the
accountant, the generator, and whether the budget can pay (if not, nothing is read). Read:
the data, once, before the charge -- the DataFrame releases count the records and keep the
counts on the workers, so a data error found only by reading (a value outside the public
categories, a NaN, a code out of range) is refused before anything is spent;
``noisy_counts`` takes a keyed digest of every block (and, with ``check``, its extreme
values). Charge: once, on the client, handing out the release's key. Draw: the key is
shipped to the tasks (never a seed; no accountant runs on a worker), which add the noise.

Cell-addressed noise (:mod:`dpfast.releases.cells`). The noise of cell ``i`` depends only
on the release's key and ``i``: the same seed gives bit-identical releases whatever the
chunks, the partitions, the number of workers, and a task retried or run twice after a
worker failure draws exactly the same noise again, so a failure costs no privacy. For
``noisy_counts`` the release equals ``dpfast.noisy_counts`` on the same counts with the same
seed; for the DataFrame releases it equals the single-machine function applied to the
summed counts with the same seed (``crosstab``, ``histogram``, ``histogramdd`` and
``count_categories``: the single-machine function on the same records).

The key travels in the task graph. It is drawn on the client (from the OS unless ``rng``
gives a seed, which is for tests only) and sent with the tasks: the scheduler, every worker,
and anyone who can read the graph (a dashboard's task views, logs or dumps of the graph,
spilled data) can read the key and subtract the noise. Run the cluster inside the data's
trust boundary, as the data itself must be: a Dask cluster is not a place to keep a secret
from its own operators.

One key, one input. ``noisy_counts`` returns a lazy array that can be computed again; its
key is bound to the input read before the charge: each block's task digests its block
again (a checksum under 32 bytes drawn from the OS for this release: ``_digest``) and refuses a block that
changed since (nothing of that block is released). So computing again gives the identical
release of identical data, or a refusal -- never the same noise on other counts (which
would publish the change exactly). A result the cluster still holds is returned as it was.
"""
from __future__ import annotations

import hmac
import math
import os
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _native
from . import pieces as _pieces
from . import tables
from . import validation as _v
from ._release import Release, refuse_unaffordable
from .releases import histograms as _hist
from .linear import marginal_plan
from .releases import postprocess as _post
from .noise import Gaussian, Laplace
from .releases.cells import counting_measure, int32_limit, noisy_cells

if TYPE_CHECKING:
    from typing import Protocol

    from .accounting import AccountantLike
    from .rng import RngLike

    class _Cost(Protocol):
        """What a release charges: a :class:`dpfast.noise.Measure`, or the ``cost`` of a
        tree's or a hierarchy's params."""

        @property
        def epsilon(self) -> float | None: ...
        @property
        def delta(self) -> float: ...
        @property
        def rho(self) -> float | None: ...

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
except ImportError as exc:                                   # pragma: no cover
    raise ImportError('dpfast.dask needs Dask: pip install "dpfast[dask]"') from exc

__all__ = ["noisy_counts", "from_npy", "histogram", "histogramdd", "count_categories",
           "crosstab", "census_hierarchy", "tree_mechanism", "group_by", "GroupBy"]

#: Cells per block of :func:`from_npy` (about 40-80 MB per block).
NPY_BLOCK = 10_000_000


# -- arrays -------------------------------------------------------------------------------

def from_npy(path: str, chunks: int = NPY_BLOCK) -> da.Array:
    """A Dask array over a ``.npy`` file, blocks of ``chunks`` rows along the first axis,
    each read by its task from a memory map of the file (nothing is read on the client,
    nothing is sent but the path)."""
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
    counts (int64), on a grid for floating ones (float64). Returns a lazy Dask array,
    chunked along the first axis (blocks are rechunked to span the other axes, so that each
    block is one run of cells).

    ``dtype``: ``numpy.int32`` stores integer releases in half the space (as
    ``dpfast.noisy_counts`` with an int32 ``out``): counts must then stay within
    ``2**31 - 1 - 764 t`` (the noise's bound; ``t`` the Laplace scale, or
    ``floor(sigma) + 1`` for Gaussian noise), which 8- and 16-bit counts always do; wider
    ones are read to check it.

    Every block is read once before the charge, to take its keyed digest: each task checks
    its block against it and refuses a block changed since (see the module). Chunks must
    have known sizes (``counts.compute_chunk_sizes()``).

    ``check`` (default True): floating and 64-bit integer counts (and 32-bit ones released
    as int32) are also checked in that read: NaN, infinities and values the noise cannot be
    added to exactly are refused before the charge (``check=False`` skips these checks, not
    the read; NaN then fails its block after the charge).

    Examples
    --------
    >>> import dask.array as da, numpy as np, dpfast as dp
    >>> import dpfast.dask as dpd
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


# -- DataFrames: counted on the workers, noised where the counts are ------------------------

def crosstab(frame: Any, columns: Hashable | Sequence[Hashable], *,
             epsilon: float | None = None, keys: Mapping[Hashable, Sequence[Any]],
             noise: str = "laplace", delta: float | None = None, rho: float | None = None,
             accountant: AccountantLike | None = None, rng: RngLike = None) -> Any:
    """crosstab(frame, columns, *, epsilon=None, keys, noise="laplace", delta=None, rho=None, accountant=None, rng=None)

    :func:`dpfast.crosstab` of a Dask DataFrame: a labelled pandas table (a DataFrame for
    two columns, else a Series), the same as ``dpfast.crosstab`` on the whole frame with the
    same seed. ``keys`` gives every column's public categories (required); ``noise``,
    ``epsilon``, ``delta`` and ``rho`` as for :func:`noisy_counts` (one table: sensitivity
    1)."""
    func = "crosstab"
    names = tables.check_columns(columns, func)
    cats = _public_keys(frame, names, keys, func)
    table = _released_counts(func, frame, names, _crosstab_counts, (names, cats), noise,
                             epsilon, delta, rho, accountant, rng, None)
    return tables.label_table(table, tuple(names), tables.category_indexes(cats, True))


def _crosstab_counts(part: Any, names: list[Hashable],
                     cats: dict[Hashable, list[Any]]) -> np.ndarray:
    func = "crosstab"
    plan = marginal_plan.make_plan(tuple(names), tuple(len(cats[n]) for n in names), None,
                                   [tuple(names)], func)
    codes = tables.frame_codes(part, names, cats, "columns", func)
    return marginal_plan.count_codes(dict(enumerate(codes)), plan, 1)[0]


def count_categories(values: Any, categories: Sequence[Any], *, noise: str = "laplace",
                     epsilon: float | None = None, delta: float | None = None,
                     rho: float | None = None, other: bool = False,
                     accountant: AccountantLike | None = None, rng: RngLike = None,
                     postprocess: Any = None) -> Any:
    """count_categories(values, categories, *, noise="laplace", epsilon=None, delta=None, rho=None, other=False, accountant=None, rng=None, postprocess=None)

    :func:`dpfast.count_categories` of a Dask Series (or one-column DataFrame): the same
    release as on the whole column with the same seed (Laplace or Gaussian noise)."""
    func = "count_categories"
    other = _v.check_bool(other, "other", func)
    _hist.category_counts(np.empty(0, dtype=object), categories, other, func, 1)  # checks
    return _released_counts(func, values, None, _category_counts, (list(categories), other),
                            noise, epsilon, delta, rho, accountant, rng, postprocess)


def _category_counts(part: Any, categories: list[Any], other: bool) -> np.ndarray:
    series = part.iloc[:, 0] if hasattr(part, "columns") else part
    return _hist.category_counts(series, categories, other, "count_categories", 1)


def histogram(values: Any, bins: Any = 10, *, noise: str = "laplace",
              epsilon: float | None = None, delta: float | None = None,
              rho: float | None = None, range: Any = None,
              accountant: AccountantLike | None = None, rng: RngLike = None,
              postprocess: Any = None) -> tuple[Any, np.ndarray]:
    """histogram(values, bins=10, *, noise="laplace", epsilon=None, delta=None, rho=None, range=None, accountant=None, rng=None, postprocess=None)

    :func:`dpfast.histogram` of a Dask Series or 1-D Dask array, with public bins (edges,
    or a number of bins with a public ``range``): ``(counts, edges)``, the same release as
    on the whole column with the same seed (Laplace or Gaussian noise)."""
    func = "histogram"
    dtype = values.dtype
    if getattr(dtype, "kind", "O") not in "iuf" or not isinstance(dtype, np.dtype):
        raise TypeError(f"The 'values' parameter of dpfast.dask.{func} must hold numeric "
                        f"values (a numpy dtype). Got dtype {dtype} instead.")
    _, edges = _hist.histogram_counts(np.empty(0, dtype=dtype), bins, range, func, 1)
    return _released_counts(func, values, None, _histogram_counts, (bins, range), noise,
                            epsilon, delta, rho, accountant, rng, postprocess), edges


def _histogram_counts(part: Any, bins: Any, range: Any) -> np.ndarray:
    column = part.iloc[:, 0] if hasattr(part, "columns") else part
    return _hist.histogram_counts(np.asarray(column), bins, range, "histogram", 1)[0]


def histogramdd(frame: Any, bins: Any, *, noise: str = "laplace",
                epsilon: float | None = None, delta: float | None = None,
                rho: float | None = None, range: Any = None,
                accountant: AccountantLike | None = None, rng: RngLike = None,
                postprocess: Any = None) -> tuple[Any, list[np.ndarray]]:
    """histogramdd(frame, bins, *, noise="laplace", epsilon=None, delta=None, rho=None, range=None, accountant=None, rng=None, postprocess=None)

    :func:`dpfast.histogramdd` of the columns of a Dask DataFrame (or a 2-D Dask array, one
    record per row), with public bins: ``(counts, edges)``, the same release as on all the
    records with the same seed (Laplace or Gaussian noise)."""
    func = "histogramdd"
    dtypes = list(frame.dtypes) if hasattr(frame, "dtypes") else [frame.dtype]
    if not all(getattr(t, "kind", "O") in "iuf" for t in dtypes):
        raise TypeError(f"The 'frame' parameter of dpfast.dask.{func} must hold numeric "
                        f"columns. Got dtypes {[str(t) for t in dtypes]} instead.")
    dims = len(frame.columns) if hasattr(frame, "columns") else frame.shape[1]
    _, edges = _hist.histogramdd_counts(np.empty((0, dims)), bins, range, func, 1)
    return _released_counts(func, frame, None, _histogramdd_counts, (bins, range), noise,
                            epsilon, delta, rho, accountant, rng, postprocess), edges


def _histogramdd_counts(part: Any, bins: Any, range: Any) -> np.ndarray:
    # Numeric columns (checked before reading) convert without error; a conversion that
    # could fail would print the record.
    values = part.to_numpy(dtype=np.float64, na_value=np.nan) if hasattr(part, "columns") \
        else np.asarray(part)
    if values.dtype.kind not in "iuf":
        raise TypeError("The 'frame' parameter of dpfast.dask.histogramdd must hold numeric "
                        f"columns. Got a block of dtype {values.dtype} instead.")
    return _hist.histogramdd_counts(values.astype(np.float64, copy=False), bins, range,
                                    "histogramdd", 1)[0]


def census_hierarchy(frame: Any, column: Hashable, hierarchy: Any, *,
                     epsilon: float | None = None, split: Sequence[float] | None = None,
                     noise: str = "laplace", delta: float | None = None,
                     rho: float | None = None, accountant: AccountantLike | None = None,
                     rng: RngLike = None) -> Any:
    """census_hierarchy(frame, column, hierarchy, *, epsilon=None, split=None, noise="laplace", delta=None, rho=None, accountant=None, rng=None)

    :func:`dpfast.census_hierarchy` of records: ``column`` holds each record's leaf unit
    (an integer code in ``[0, leaves)``, ``leaves`` the length of the hierarchy's last
    level); the leaves are counted on the workers and the release made on a worker. The
    noise keywords (Laplace with an epsilon split over the levels, or Gaussian with a rho
    share per level) are those of ``dpfast.census_hierarchy``; the release is charged once,
    its whole cost."""
    from .linear import hierarchy as _hier
    func = "census_hierarchy"
    leaves = _leaf_count(hierarchy, func)
    params = _hier.hierarchy_params(hierarchy, leaves, epsilon, split, func, noise=noise,
                                    delta=delta, rho=rho)
    _check_codes_column(frame, column, func)
    total = _counted(frame, [column], _code_counts, column, leaves, func)
    plan = dask.delayed(_hierarchy_plan)(total, params, func)
    return _released(func, plan, params.cost, accountant, rng, _hier.noisy_hierarchy)


def _hierarchy_plan(total: np.ndarray, params: Any, func: str) -> Any:
    from .linear import hierarchy as _hier
    return _hier.hierarchy_plan(total, params, None, func)


def tree_mechanism(frame: Any, column: Hashable, leaves: int, *,
                   epsilon: float | None = None, branching: int | None = None,
                   noise: str = "laplace", delta: float | None = None,
                   rho: float | None = None, accountant: AccountantLike | None = None,
                   rng: RngLike = None) -> Any:
    """tree_mechanism(frame, column, leaves, *, epsilon=None, branching=None, noise="laplace", delta=None, rho=None, accountant=None, rng=None)

    :func:`dpfast.tree_mechanism` of records: ``column`` holds each record's leaf (an
    integer code in ``[0, leaves)``, e.g. an age or a binned value); the leaves are counted
    on the workers and the tree released on a worker. The noise keywords are those of
    ``dpfast.tree_mechanism`` (Gaussian noise: one sigma over the tree's l2 sensitivity);
    the release is charged once, its whole cost."""
    from .linear import tree as _tree
    func = "tree_mechanism"
    n = _v.check_positive_int(leaves, "leaves", func)
    if n > _tree.MAX_CELLS:
        raise ValueError(f"The 'leaves' parameter of dpfast.dask.{func} must be at most "
                         f"{_tree.MAX_CELLS}. Got {n} instead.")
    params = _tree.tree_params((n,), True, epsilon, branching, func, noise=noise,
                               delta=delta, rho=rho, accountant=accountant)
    _check_codes_column(frame, column, func)
    total = _counted(frame, [column], _code_counts, column, n, func)
    plan = dask.delayed(_tree.tree_plan)(total, params, func)
    return _released(func, plan, params.cost, accountant, rng, _tree.noisy_tree)


def _code_counts(part: Any, column: Hashable, n: int, func: str) -> np.ndarray:
    codes = np.asarray(part[column])
    if codes.dtype.kind not in "iu":
        raise TypeError(f"The 'frame' parameter of dpfast.dask.{func} must hold integer "
                        f"codes in column {column!r}. Got dtype {codes.dtype} instead.")
    codes = codes.astype(np.int64, copy=False)
    if codes.size and (codes.min() < 0 or codes.max() >= n):
        raise ValueError(f"The 'frame' parameter of dpfast.dask.{func} has codes outside "
                         f"[0, {n}) in column {column!r}.")
    return _native.count_codes(np.ascontiguousarray(codes), n, 1)


# -- shared steps ---------------------------------------------------------------------------

def _public_keys(frame: Any, names: list[Hashable], keys: Any,
                 func: str) -> dict[Hashable, list[Any]]:
    """Every named column's public categories, checked as :func:`dpfast.crosstab` checks
    them (a Dask collection given as categories is data, refused unread)."""
    mapping = tables.keys_mapping(keys, frame, func)
    for n in names:
        _check_column(frame, n, func)
    missing = [n for n in names if n not in mapping]
    if missing:
        raise ValueError(f"The 'keys' parameter of {func} must give the categories of every "
                         f"column. Got none for {missing!r}.")
    for n in names:
        if isinstance(mapping[n], (da.Array, dd.Series, dd.DataFrame)):
            raise tables.keys_leak(func, f"the categories of column {n!r} are a Dask "
                                   "collection.")
    return {n: tables.public_categories(mapping[n], n, None, func) for n in names}


def _check_codes_column(frame: Any, column: Hashable, func: str) -> None:
    """A column of integer codes, checked by its dtype (nothing is read)."""
    _check_column(frame, column, func)
    dtype = frame[column].dtype
    if getattr(dtype, "kind", "O") not in "iu":
        raise TypeError(f"The 'frame' parameter of dpfast.dask.{func} must hold integer "
                        f"codes in column {column!r}. Got dtype {dtype} instead.")


def _check_column(frame: Any, column: Hashable, func: str) -> None:
    if not isinstance(frame, dd.DataFrame):
        raise TypeError(f"The 'frame' parameter of dpfast.dask.{func} must be a Dask "
                        f"DataFrame. Got {_v.describe(frame)} instead.")
    if column not in frame.columns:
        raise ValueError(f"The 'frame' parameter of dpfast.dask.{func} has no column "
                         f"{column!r}.")


def _leaf_count(hierarchy: Any, func: str) -> int:
    if not isinstance(hierarchy, (list, tuple)) or not hierarchy:
        raise TypeError(f"The 'hierarchy' parameter of dpfast.dask.{func} must be a list of "
                        f"parent-code arrays. Got {_v.describe(hierarchy)} instead.")
    return len(hierarchy[-1])


def _counted(data: Any, columns: list[Hashable] | None, count: Any, *args: Any) -> Any:
    """A delayed sum of ``count(partition, *args)`` over the partitions (or blocks) of
    ``data``, summed pairwise on the workers."""
    if isinstance(data, (dd.DataFrame, dd.Series)):
        if columns is not None:
            data = data[list(columns)]
        parts = data.to_delayed()
    elif isinstance(data, da.Array):
        parts = list(data.to_delayed().reshape(-1))
    else:
        raise TypeError(f"The data must be a Dask DataFrame, Series or array. Got "
                        f"{_v.describe(data)} instead.")
    level = [dask.delayed(count)(p, *args) for p in parts]
    while len(level) > 1:
        level = [dask.delayed(np.add)(a, b) for a, b in zip(level[::2], level[1::2])] \
            + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def _released_counts(func: str, data: Any, columns: list[Hashable] | None, count: Any,
                     args: tuple[Any, ...], noise: object, epsilon: object, delta: object,
                     rho: object, accountant: AccountantLike | None, rng: RngLike,
                     postprocess: Any) -> Any:
    """The common path of the counting releases: the last checks (the noise and cost of a
    table of sensitivity 1), then :func:`_released` of the counts summed on the workers,
    noised with discrete Laplace or discrete Gaussian noise."""
    _hist.check_postprocess(postprocess, func)
    m = counting_measure(func, noise, epsilon, delta, rho, accountant=accountant)
    total = _counted(data, columns, count, *args)
    return _released(func, total, m, accountant, rng, _noise_table, m.noise, postprocess)


def _released(func: str, counted: Any, cost: _Cost, accountant: AccountantLike | None,
              rng: RngLike, noise: Any, *args: Any) -> Any:
    """The release phases of a DataFrame release whose arguments are checked. Check: the
    accountant, the generator, and whether the budget can pay (nothing read if not). Read:
    ``counted`` (a delayed count or plan, whose tasks refuse bad records) computed and kept
    on the workers, every data error raised here. Charge. Draw: ``noise(counts, key,
    threads, *args)`` in one task where the counts are; only its result reaches the
    client. ``cost``: the whole release's (epsilon, delta, rho), charged once."""
    rel = Release(func, accountant, cost.epsilon, cost.delta, rng, rho=cost.rho)
    refuse_unaffordable(rel, "dpfast.dask")
    counted = _read_before_charge(counted)
    key = bytes(rel.charge())
    return dask.delayed(_noised, pure=False)(noise, counted, key, *args).compute()


def _read_before_charge(counted: Any) -> Any:
    """``counted`` persisted (on the workers, with distributed), raising the first error of
    its tasks."""
    (persisted,) = dask.persist(counted)
    try:
        from distributed import futures_of, wait
    except ImportError:                                      # pragma: no cover
        return persisted
    futures = futures_of(persisted)
    if futures:
        wait(futures)
        for f in futures:
            if f.status == "error":
                raise f.exception()
    return persisted


def _noised(noise: Any, counted: Any, key: bytes, *args: Any) -> Any:
    """On a worker: the release under the key its charge handed out (no accountant here:
    the client paid)."""
    return noise(counted, _native.Key.from_bytes(key), 1, *args)


def _noise_table(counts: np.ndarray, key: _native.Key, threads: int,
                 noise: Laplace | Gaussian, postprocess: Any) -> Any:
    """Exact counts plus discrete Laplace or discrete Gaussian noise under ``key`` (as the
    single-machine kernel draws them), post-processed."""
    noisy = noisy_cells(key, 0, np.asarray(counts, dtype=np.int64), noise)
    return _post.apply(noisy, postprocess) if postprocess is not None else noisy


# -- grouped statistics of records ----------------------------------------------------------
#
# dpfast.group_by over a Dask DataFrame, the same release for the same seed as on the whole
# frame computed. The single-machine release decides everything from three things, each
# reproduced here exactly whatever the partitioning:
#
# - each row's key code (its key's place among the sorted keys: the public keys, or the
#   distinct keys of the whole frame, collected from the partitions before the charge);
# - each row's bounding priorities: cell ``i`` of the uniforms under the stream's first two
#   keys, ``i`` the row's position in the frame (among the rows of public keys, which alone
#   are bounded): a partition starting at row ``a`` draws chunk ``a // CHUNK`` on and drops
#   the head, as the cell-addressed counts do;
# - the bounding kernel, which decides a person's rows from their priorities and their order
#   alone: the rows are sent to buckets by a hash of the person (every row of a person in one
#   bucket, in frame order), and each bucket is bounded on its own.
#
# The key statistics (rows, people, sums in grid units) are exact integers, so the buckets'
# partial statistics add up on the workers to the whole frame's, and the client finishes the
# release from them as dpfast.groupby.finish does.

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

    Examples
    --------
    >>> import dask.dataframe as dd, numpy as np, pandas as pd, dpfast as dp
    >>> import dpfast.dask as dpd
    >>> rows = pd.DataFrame({"dept": np.arange(600) % 3, "user": np.arange(600) // 2,
    ...                      "salary": np.linspace(0, 100, 600)})
    >>> kw = dict(n="count", avg=("salary", "mean"), bounds={"salary": (0, 100)},
    ...           epsilon=1.0, rng=3)
    >>> got = dpd.group_by(dd.from_pandas(rows, npartitions=4), "dept", privacy_unit="user",
    ...                    max_rows=2, keys=[0, 1, 2]).agg(accountant=dp.Accountant(), **kw)
    >>> want = dp.group_by(rows, "dept", privacy_unit="user", max_rows=2,
    ...                    keys=[0, 1, 2]).agg(accountant=dp.Accountant(), **kw)
    >>> got.equals(want)
    True
    """
    return GroupBy(frame, by, privacy_unit=privacy_unit, max_groups=max_groups,
                   max_rows=max_rows, keys=keys)


class GroupBy:
    """A grouping of the records of a Dask DataFrame, ready for :meth:`agg` (see
    :func:`group_by`)."""

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
        from .groupby import GroupBy as _Local
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
        from . import groupby as _gb
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
        level = [dask.delayed(_pieces.added, pure=True)(a, b) for a, b in zip(level[::2], level[1::2])] \
            + ([level[-1]] if len(level) % 2 else [])
    return level[0]
