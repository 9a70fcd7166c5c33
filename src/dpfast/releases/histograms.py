"""Releases of counts computed elsewhere (:func:`noisy_counts`), in memory or block by block
into an array or a file.

A table counted elsewhere may be of any size: with ``out=`` it is noised ``BLOCK`` cells at
a time under the release's one key (memory stays bounded and the result equals a one-shot
release for the same generator state), in place if ``out`` is the counts themselves, and,
when ``out`` is a memory map of a file, with a journal beside it that makes the release
crash-safe and resumable (:mod:`dpfast.releases.journal`). The noise and its cost are the
counting releases' (:mod:`dpfast.releases.cells`) over the table's sensitivity.

The releases of tables counted from records (:func:`histogram`, :func:`histogramdd`,
:func:`count_categories`) live in :mod:`dpfast.releases.record_tables`, their exact counts in
:mod:`dpfast.releases.binning`; the three releases are re-exported here (their import path
``dpfast.releases.histograms`` stays).
"""
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .. import validation as _v
from .._release import Release, ledger_path, release
from ..noise import Gaussian, Laplace, Measure
from . import postprocess as _post
from .cells import counting_measure, int32_limit, refuse_unpayable_kind
from .journal import (DURABILITY, Journal, backing_file, block_sum, file_span,
                      unnamed_file_map)
from .record_tables import check_postprocess
# The releases of records: their import path is this module's too (it was their home).
from .record_tables import count_categories as count_categories
from .record_tables import histogram as histogram
from .record_tables import histogramdd as histogramdd

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Literal, TypeAlias, TypeVar, overload

    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

    #: The named post-processing steps (a callable is the other choice).
    _Named: TypeAlias = Literal["clip", "consistent"] | None
    _Postprocess: TypeAlias = _Named | Callable[[Any], Any]
    _T = TypeVar("_T")
    _Out = TypeVar("_Out", bound=NDArray[Any])
    #: The ``noise=`` keyword of a counting release.
    _Noise: TypeAlias = Literal["laplace", "gaussian"]

__all__ = ["histogram", "histogramdd", "count_categories", "noisy_counts"]

# noisy_counts works through its input in blocks of this many cells (a multiple of the
# kernels' chunk, so that block-wise and one-shot releases are identical).
BLOCK = 1 << 22
# ...and shows a progress bar (tqdm, if installed) past this many cells.
PROGRESS_CELLS = 1 << 27

if TYPE_CHECKING:
    @overload
    def noisy_counts(counts: ArrayLike, *, noise: _Noise = "laplace",
                     epsilon: float | None = None, delta: float | None = None,
                     rho: float | None = None, sensitivity: float = 1,
                     out: _Out, accountant: AccountantLike | None = None,
                     rng: RngLike = None, threads: int | None = None,
                     postprocess: Literal["clip"] | None = None,
                     progress: bool | None = None,
                     durability: Literal["process", "power"] = "process") -> _Out: ...
    @overload
    def noisy_counts(counts: ArrayLike, *, noise: _Noise = "laplace",
                     epsilon: float | None = None, delta: float | None = None,
                     rho: float | None = None, sensitivity: float = 1,
                     out: None = None, accountant: AccountantLike | None = None,
                     rng: RngLike = None, threads: int | None = None,
                     postprocess: _Named = None,
                     progress: bool | None = None,
                     durability: Literal["process", "power"] = "process") -> NDArray[Any]: ...
    @overload
    def noisy_counts(counts: ArrayLike, *, noise: _Noise = "laplace",
                     epsilon: float | None = None, delta: float | None = None,
                     rho: float | None = None, sensitivity: float = 1,
                     out: None = None, accountant: AccountantLike | None = None,
                     rng: RngLike = None, threads: int | None = None,
                     postprocess: Callable[[NDArray[Any]], _T],
                     progress: bool | None = None,
                     durability: Literal["process", "power"] = "process") -> _T: ...


def noisy_counts(counts: "ArrayLike", *, noise: str = "laplace", epsilon: float | None = None,
                 delta: float | None = None, rho: float | None = None, sensitivity: float = 1,
                 out: "NDArray[Any] | None" = None, accountant: "AccountantLike | None" = None,
                 rng: "RngLike" = None, threads: int | None = None,
                 postprocess: "_Postprocess" = None, progress: bool | None = None,
                 durability: str = "process") -> Any:
    """noisy_counts(counts, *, noise="laplace", epsilon=None, delta=None, rho=None, sensitivity=1, out=None, accountant=None, rng=None, threads=None, postprocess=None, progress=None, durability="process")

    Release counts computed elsewhere: each cell plus Laplace noise of scale
    ``sensitivity / epsilon``, or Gaussian noise (``noise="gaussian"``) of sigma
    ``sensitivity / sqrt(2 rho)`` or calibrated to (epsilon, delta).

    Parameters
    ----------
    counts : array_like, any shape
        Integer counts get discrete Laplace or discrete Gaussian noise (int64 result);
        floating counts get grid Laplace noise (float64 result, on the grid of
        :func:`dpfast.laplace_granularity`) or grid Gaussian noise. Negative counts are
        allowed; NaN and infinity are not.
    noise, epsilon, delta, rho
        As for :func:`histogram`: Laplace noise takes ``epsilon``; Gaussian noise takes
        ``rho`` alone or ``epsilon`` and ``delta``. The whole table is one release: its
        Gaussian sigma is calibrated once, over the table's l2 ``sensitivity``.
    sensitivity : float, optional
        Sensitivity of the whole table: in l1 for Laplace noise, in l2 for Gaussian noise
        (1 for disjoint cells; a record that moves one cell by at most ``s``: ``s`` in
        both).
    out : ndarray, optional
        Where to write the release: same shape, C-contiguous, int64 or int32 for integer
        counts (float64 for floating ones); may be ``counts`` itself or a ``numpy.memmap``.
        The table is then processed in blocks of ``BLOCK`` cells, so memory stays bounded
        whatever its size; the result equals a one-shot release for the same generator state.
        A release into a file keeps its noise and cost in its journal: an interrupted
        release is completed only by a call with the same noise, privacy parameters and
        sensitivity, under the journal's key (the same noise, cell for cell).
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism`.
    postprocess : {None, "clip", "consistent"} or callable, optional
        As for :func:`histogram`; with ``out=``, only ``"clip"`` (applied block by block).
    progress : bool, optional
        Show a progress bar (needs tqdm). Default: when tqdm is installed and the table has
        more than ``PROGRESS_CELLS`` cells.
    durability : {"process", "power"}, optional
        For ``out`` in a file (a ``numpy.memmap``), which a journal beside it makes
        crash-safe (:mod:`dpfast.releases.journal`): ``"process"`` (default) survives the
        process being killed at any point, at the speed of the page cache; ``"power"`` also
        survives a power loss or an operating-system crash, syncing every block and record
        to the disk (slower: see the README's in-place table).

    Returns
    -------
    ndarray
        ``out`` if given, else a new int64 / float64 array of the shape of ``counts`` (or
        what ``postprocess`` returns).

    Raises
    ------
    TypeError
        If ``counts`` is not numeric (strings, booleans, complex numbers, objects, a masked
        array); ``out`` is not a numpy array (or is a masked array); ``progress`` is not a
        bool; or a privacy keyword, ``sensitivity``, ``accountant``, ``rng`` or ``threads``
        is of the wrong kind (as for :func:`histogram`).
    ValueError
        If ``sensitivity`` is not in (0, inf); the privacy keywords do not fit the noise or
        give a scale outside the samplers' range (as for :func:`histogram`); ``rho`` alone is
        given to an accountant of an (epsilon, delta) budget; a count is NaN or infinite, or
        beyond the exact range (``2**62`` for integer counts into int64, less for an int32
        ``out``; ``2**52`` grid steps for floating counts: the message gives its index, never
        its value); ``out`` has the wrong shape or dtype, is not C-contiguous or writeable,
        overlaps ``counts`` without being the same cells (in memory, or in the same file
        through another memory map), or is a memory map of a file without a name; the noise
        could overflow an int32 ``out``; ``postprocess`` is not one of the accepted values,
        or is ``"consistent"`` or a callable with ``out``; ``durability`` is not
        ``"process"`` or ``"power"``; ``threads`` or ``rng`` is out of range; or, for
        ``out`` in a file, the journal beside it belongs to another release, holds an
        interrupted release made with other noise or privacy parameters, or says its cells
        were already released. Raised, as the TypeErrors, before anything is charged or
        drawn.
    ImportError
        If ``progress=True`` and tqdm is not installed.
    BudgetExceededError
        If the accountant cannot afford the release; nothing is charged or drawn.

    Examples
    --------
    A table counted elsewhere, at epsilon 0.5 (``rng=7`` fixes the noise for this example:
    a seed is for tests and research only, never for a real release):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> table = np.array([[120, 4], [0, 37]])
    >>> print(dp.noisy_counts(table, epsilon=0.5, accountant=dp.Accountant(), rng=7))
    [[117   3]
     [ -3  34]]
    >>> print(dp.noisy_counts(table, epsilon=0.5, postprocess="clip",
    ...                       accountant=dp.Accountant(), rng=7))
    [[117   3]
     [  0  34]]

    In place, block by block (``out=counts``; a ``numpy.memmap`` of a file works alike):

    >>> cells = np.array([5, 0, 12], dtype=np.int64)
    >>> released = dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=dp.Accountant(),
    ...                            rng=7)
    >>> released is cells
    True

    Discrete Gaussian noise under a zCDP budget (sigma = 5 at rho = 0.02):

    >>> zcdp = dp.Accountant(rho=0.5)
    >>> dp.noisy_counts(table, noise="gaussian", rho=0.02, accountant=zcdp, rng=0).dtype
    dtype('int64')
    >>> print(zcdp.spent.rho)
    0.02
    """
    func = "noisy_counts"
    if epsilon is not None:
        _v.check_epsilon(epsilon, func)         # first, as before Gaussian noise
    d = _v.check_sensitivity(sensitivity, func)
    check_postprocess(postprocess, func)
    if progress is not None:
        progress = _v.check_bool(progress, "progress", func)
    src = _v.as_array(counts, "counts", func)
    if src.dtype.kind in "iu":
        is_int = True
    elif src.dtype.kind == "f":
        is_int = False
    else:
        src, is_int = _v.check_data(src, "counts", func)   # converts or raises
    # Real cells: a record may change every cell (sensitivity is the whole table's), and each
    # is rounded to the noise's grid.
    m = counting_measure(func, noise, epsilon, delta, rho, d, is_int, accountant, src.size)
    refuse_unpayable_kind(func, accountant, m)
    dst = _check_out(out, src, is_int, postprocess, func)
    if dst is not src and np.shares_memory(src, dst) and not _same_buffer(src, dst):
        raise ValueError(f"The 'out' parameter of {func} overlaps 'counts' without being the "
                         "same cells: pass out=counts for an in-place release, or separate "
                         "arrays.")
    if unnamed_file_map(dst):
        raise ValueError(f"The 'out' parameter of {func} is a memory map of a file it cannot "
                         "name (a numpy.memmap made from a file object without a name): a "
                         "release into a file keeps a journal beside it. Open the memmap by "
                         "its path.")
    src = _same_file_cells(src, dst, func)

    clip = postprocess == "clip"
    if durability not in DURABILITY:
        raise ValueError(f"The 'durability' parameter of {func} must be one of "
                         f"{', '.join(map(repr, DURABILITY))}. Got {durability!r} instead.")
    params = {"func": func, "source": _source(src, dst), "epsilon": m.epsilon,
              "sensitivity": d, "clip": clip, "block": BLOCK}
    if isinstance(m.noise, Gaussian):
        # The noise and the whole cost, so that a resume makes the same noise at the same
        # cost (a Laplace journal is as it always was: its epsilon says it all).
        params.update(noise="gaussian", sigma=m.noise.sigma, delta=m.delta, rho=m.rho)
    journal = Journal.for_release(dst, params, durability)
    if journal is None:
        _check_counts_fit(src, dst, is_int, m.noise, func)
        bar = _progress_bar(dst.size, progress)      # a missing tqdm fails before the charge
        release(func, accountant, m.epsilon, m.delta, rng, threads, dst.size, _noise_blocks,
                src, dst, m.noise, clip, bar, None, rho=m.rho)
    else:
        try:
            sums = _check_counts_fit(src, dst, is_int, m.noise, func, checksums=True)
            _release_into_file(func, journal, accountant, m, rng, threads, src, dst, clip,
                               progress, sums)
        finally:
            journal.close()
    if out is None and postprocess not in (None, "clip"):
        return _post.apply(dst, postprocess)
    return dst


def _same_file_cells(src: "NDArray[Any]", dst: "NDArray[Any]",
                     func: str) -> "NDArray[Any]":
    """``dst`` if ``src`` is the same cells of the same file through another mapping (an
    in-place release: it needs the undo copy and the released-cells check); ``src`` if they
    do not meet; refused if they overlap otherwise (np.shares_memory cannot see that)."""
    if dst is src:
        return src
    s_span = file_span(src)
    d_span = file_span(dst) if s_span is not None else None
    if s_span is None or d_span is None or s_span[:2] != d_span[:2]:
        return src
    if s_span == d_span and src.dtype == dst.dtype and src.shape == dst.shape:
        return dst
    if s_span[2] < d_span[3] and d_span[2] < s_span[3]:
        raise ValueError(f"The 'out' parameter of {func} is in the file of 'counts' and "
                         "overlaps its cells without being the same cells (another memory "
                         "map of the file): pass out=counts for an in-place release, or "
                         "separate files.")
    return src


def _source(src: "NDArray[Any]", dst: "NDArray[Any]") -> object:
    """What a journal records of the counts: "in place", their file, or "memory"."""
    if src is dst or _same_buffer(src, dst):
        return "in place"
    where = backing_file(src)
    return list(where) if where is not None else "memory"


def _release_into_file(func: str, journal: Journal, accountant: "AccountantLike | None",
                       m: Measure, rng: "RngLike", threads: int | None, src: "NDArray[Any]",
                       dst: "NDArray[Any]", clip: bool, progress: bool | None,
                       sums: "list[str]") -> None:
    """A release into a file, with its journal (see dpfast.releases.journal): a new one, or
    the completion of an interrupted one under its journal's key, drawing no new noise.

    Check phase: the interrupted release's arguments and file, every block against what the
    journal says it holds (``sums``: the checksums of the source's blocks now), the
    directory, the journal and undo files and the disk's room. Then the charge: a
    completion is charged unless the ledger proves the interrupted release's charge paid for
    its key (that charge stands: the cells get the noise it paid for). Then the blocks not
    yet done are drawn under the key."""
    in_place = journal.params["source"] == "in place"
    rel = Release(func, accountant, m.epsilon, m.delta, rng, threads, dst.size, rho=m.rho)
    if journal.resuming:
        if journal.mismatch():
            raise journal.resume_error(func)
        _check_same_noise(func, journal)
        released: list[str | None] = list(sums) if in_place else [
            block_sum(dst.reshape(-1)[b * BLOCK:(b + 1) * BLOCK]) if b in journal.done
            else None for b in range(len(sums))]
        journal.check_resume(func, sums, released, in_place)
    elif in_place and journal.still_released(sums):
        raise journal.released_error(func)
    bar = _progress_bar(dst.size, progress)          # a missing tqdm fails before the charge
    journal.prepare(in_place)
    try:
        if journal.resuming:
            assert journal.key is not None
            key = rel.charge_resumed(journal.key, journal.state.get("ledger"))
            journal.resume()
        else:
            journal.ledger = ledger_path(rel.accountant)
            key = rel.charge(commit=True)
            journal.begin(bytes(key), sums)
    except BaseException:
        journal.abandon()
        raise
    _noise_blocks(key, rel.threads, src, dst, m.noise, clip, bar, journal)


# What a Gaussian release's journal records of its noise and cost, beyond the keys every
# journal compares on resuming (absent from a Laplace release's journal).
_NOISE_KEYS = ("noise", "delta", "rho", "sigma")


def _check_same_noise(func: str, journal: Journal) -> None:
    """Refuse, before the charge, to complete an interrupted release with other noise or at
    another cost than it started with: the cells already released carry its noise, and the
    rest must get the same noise under the same key, paid for at the same cost. (A sigma
    that differs for the same parameters means another dpfast calibrated it.)"""
    for k in _NOISE_KEYS:
        was, now = journal.state.get(k), journal.params.get(k)
        if was != now:
            raise ValueError(
                f"The file {journal.params['file']!r} holds an interrupted {func} release "
                f"made with other noise or privacy parameters ({k}={was!r}; this call: "
                f"{now!r}). Call {func} again with the arguments of that release (and the "
                "same dpfast) to complete it; nothing was charged.")


def _noise_blocks(key: _native.Key, threads: int, src: "NDArray[Any]",
                  dst: "NDArray[Any]", noise: Laplace | Gaussian, clip: bool, bar: Any,
                  journal: Journal | None) -> None:
    """dst = src + noise, BLOCK cells at a time under the release's one key (handed out by
    its charge, or by dpfast._release.release), so that memory stays bounded and the
    release equals a one-shot one; clipped at 0 if asked. With a journal (``dst`` in a
    file), each block is recorded as it is done, and an interrupted release resumes under
    the journal's key."""
    is_int = dst.dtype.kind == "i"
    flat_in = src.reshape(-1) if src.flags.c_contiguous else None
    flat_out = dst.reshape(-1)
    # The kernels read int64/int32/float64 counts and write the same type straight into
    # `out` (in place if it is `counts`); other combinations (other dtypes, byte orders or
    # layouts) go through a working copy of each block.
    direct = (flat_in is not None and flat_in.dtype == flat_out.dtype
              and flat_out.dtype.isnative)
    work = np.int64 if is_int else np.float64
    in_place = flat_in is not None and _same_buffer(flat_in, flat_out)
    try:
        for start in range(0, flat_out.size, BLOCK):
            stop = min(start + BLOCK, flat_out.size)
            b = start // BLOCK
            if journal is not None:
                if b in journal.done:
                    if bar is not None:
                        bar.update(stop - start)
                    continue
                if in_place:
                    source = journal.state["sources"][b]
                    if journal.pending is not None and journal.pending[0] == b and \
                            block_sum(flat_out[start:stop]) != source:
                        journal.restore(b, flat_out[start:stop])   # checked before the charge
                    journal.save(b, flat_out[start:stop], source)
            if direct:
                base, dest = flat_in[start:stop], flat_out[start:stop]  # type: ignore[index]
            else:
                block = flat_in[start:stop] if flat_in is not None else src.flat[start:stop]
                base = dest = np.array(block, dtype=work, copy=True)
            noise.fill(key, threads, dest, base, start // _native.CHUNK)
            if clip:
                np.maximum(dest, 0, out=dest)
            if not direct:
                flat_out[start:stop] = dest
            if journal is not None:
                journal.mark_done(b, flat_out[start:stop])
            if bar is not None:
                bar.update(stop - start)
        if journal is not None:
            journal.finish()
    finally:
        if bar is not None:
            bar.close()


def _same_buffer(a: "NDArray[Any]", b: "NDArray[Any]") -> bool:
    """Whether a and b view exactly the same memory in the same layout."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.strides == b.strides and a.shape == b.shape)


def _check_out(out: object, src: "NDArray[Any]", is_int: bool, postprocess: object,
               func: str) -> "NDArray[Any]":
    """The array the release goes to: a new one, or the caller's `out` once checked."""
    if out is None:
        return np.empty(src.shape, dtype=np.int64 if is_int else np.float64)
    allowed = (np.int64, np.int32) if is_int else (np.float64,)
    if not isinstance(out, np.ndarray) or isinstance(out, np.ma.MaskedArray):
        raise TypeError(f"The 'out' parameter of {func} must be a numpy array (or memmap), "
                        f"not a masked array. Got {type(out).__name__} instead.")
    if out.shape != src.shape or out.dtype.type not in allowed \
            or not out.flags.c_contiguous or not out.flags.writeable:
        names = " or ".join(np.dtype(t).name for t in allowed)
        raise ValueError(f"The 'out' parameter of {func} must be a writeable C-contiguous "
                         f"{names} array of shape {src.shape}. Got a {out.dtype} array of "
                         f"shape {out.shape} (C-contiguous: {out.flags.c_contiguous}, "
                         f"writeable: {out.flags.writeable}) instead.")
    if postprocess not in (None, "clip"):
        raise ValueError(f"The 'postprocess' parameter of {func} must be None or 'clip' when "
                         f"out= is given (a consistent release needs the whole table in "
                         f"memory: apply dp.postprocess to the result). Got "
                         f"{postprocess!r} instead.")
    return out


def _check_counts_fit(src: "NDArray[Any]", dst: "NDArray[Any]", is_int: bool,
                      noise: Laplace | Gaussian, func: str,
                      checksums: bool = False) -> "list[str]":
    """Reject, block by block (bounded memory), counts that are NaN/inf or too large for
    exact arithmetic, or for the destination once noise is added. With ``checksums``, return
    the checksum of each block of ``BLOCK`` cells (what a journal binds a release to)."""
    limit: float
    if is_int:
        # The noise's bound (int32_limit: the samplers' deepest binade).
        limit = 2**62 if dst.dtype == np.int64 else int32_limit(noise)
        if limit < 0:
            what_noise = (f"The noise scale sensitivity/epsilon = {noise.scale:g}"
                          if isinstance(noise, Laplace) else
                          f"The Gaussian noise's sigma = {noise.scale:g}")
            raise ValueError(f"{what_noise} of {func} is too large for an int32 'out' "
                             "(noise could overflow int32); use an int64 'out'.")
        what = ("|counts| <= 2**62" if dst.dtype == np.int64 else
                f"|counts| <= {limit} so that counts plus noise fit the int32 'out'")
    else:
        limit = 2.0**52 * noise.g
        what = f"finite |counts| <= {limit:g} (exact grid arithmetic)"
    sums = []
    for start, block in zip(range(0, src.size, BLOCK), _blocks(src)):
        if checksums:
            sums.append(block_sum(block))
        lo, hi = _v.value_range(block)
        bad = None
        if not is_int and not (math.isfinite(lo) and math.isfinite(hi)):
            bad = ~np.isfinite(block), "NaN or infinite"
        elif lo < -limit or hi > limit:
            bad = (block < -limit) | (block > limit), "beyond that limit"
        if bad is not None:
            # Where the first bad cell is, in C order of the whole table: never its value.
            first = start + int(np.argmax(bad[0]))
            index = tuple(int(i) for i in np.unravel_index(first, src.shape)) \
                if src.ndim > 1 else first
            raise ValueError(f"The 'counts' parameter of {func} must have {what}. Got a "
                             f"count at index {index} that is {bad[1]} instead.")
    return sums


def _blocks(a: "NDArray[Any]") -> "Iterable[NDArray[Any]]":
    """The cells of `a` in C order, BLOCK at a time: views of a C-contiguous array (the array
    itself when it is one block), copies otherwise."""
    if a.size <= BLOCK and a.flags.c_contiguous:
        return (a.reshape(-1),) if a.size else ()
    flat = a.reshape(-1) if a.flags.c_contiguous else None
    return (flat[i:i + BLOCK] if flat is not None else a.flat[i:i + BLOCK]
            for i in range(0, a.size, BLOCK))


def _progress_bar(n: int, progress: bool | None) -> Any:
    if progress is False or (progress is None and n <= PROGRESS_CELLS):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        if progress:
            raise ImportError("progress=True needs tqdm: pip install tqdm") from None
        return None
    return tqdm(total=n, unit="cell", unit_scale=True, desc="noisy_counts")
