"""Public bin edges and the exact counts of records in bins and categories.

Bin edges must be public: edges computed from the data (``bins="auto"``, or a number of bins
without a ``range``, which numpy fills with the data's minimum and maximum) reveal the data,
so they are refused here, before anything is charged. The counts are made in one compiled
pass (threads over blocks of records, partial tables summed); no noise is drawn here: the
releases (:mod:`dpfast.releases.record_tables`) and ``dpfast.dask`` (each partition) count
with these functions.
"""
import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .. import validation as _v
from ..tables import category_codes, category_list

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike, NDArray

__all__ = ["MAX_CELLS", "histogram_counts", "histogramdd_counts", "category_counts"]

# Largest table a release may have (cells of int64).
MAX_CELLS = 2**34


def _leak_error(func: str, detail: str) -> ValueError:
    return ValueError(
        f"{func} refuses data-dependent bin edges: {detail} The edges are published with "
        "the counts, so edges computed from the data (its minimum, maximum or quantiles) "
        "reveal it. Pass explicit edges, or a number of bins together with a public "
        "range=(low, high).")


def _axis(dtype: "DTypeLike", bins: object, rng_pair: "tuple[float, float] | None", func: str,
          bins_name: str = "bins",
          range_name: str = "range") -> "tuple[NDArray[np.float64], int]":
    """(edges, kind) for one axis, from public parameters only."""
    if isinstance(bins, str):
        raise _leak_error(func, f"{bins_name}={bins!r} chooses edges from the data.")
    if isinstance(bins, numbers.Integral) and not isinstance(bins, (bool, np.bool_)):
        nbins = int(bins)
        if nbins < 1:
            raise ValueError(f"The {bins_name!r} parameter of {func} must be >= 1. "
                             f"Got {bins!r} instead.")
        if rng_pair is None:
            raise _leak_error(func, f"{bins_name}={bins!r} without {range_name} would use "
                              "the data's minimum and maximum.")
        if nbins > MAX_CELLS:
            raise ValueError(f"The {bins_name!r} parameter of {func} must be at most "
                             f"{MAX_CELLS:,}. Got {bins!r} instead.")
        lo, hi = _range_pair(rng_pair, func, range_name)
        with np.errstate(over="ignore", invalid="ignore"):
            edges = np.linspace(lo, hi, nbins + 1)
        if not (np.isfinite(edges).all() and (np.diff(edges) > 0).all()):
            raise ValueError(f"The {range_name!r} and {bins_name!r} parameters of {func} must "
                             f"give finite, strictly increasing edges (too wide a range or "
                             f"too many bins). Got range={rng_pair!r}, bins={bins!r} instead.")
        return edges, _uniform_kind(dtype, edges, lo, hi, nbins)
    try:
        edges = np.asarray(bins, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"The {bins_name!r} parameter of {func} must be an int or a "
                        f"sequence of increasing edges. Got {bins!r} instead.") from None
    if edges.ndim != 1 or edges.size < 2:
        raise ValueError(f"The {bins_name!r} parameter of {func} must be an int or at least "
                         f"two increasing edges. Got {bins!r} instead.")
    if not np.isfinite(edges).all() or not (np.diff(edges) > 0).all():
        raise ValueError(f"The {bins_name!r} parameter of {func} must be finite and strictly "
                         f"increasing. Got {bins!r} instead.")
    nbins = edges.size - 1
    if np.array_equal(edges, np.linspace(edges[0], edges[-1], nbins + 1)):
        return edges, _uniform_kind(dtype, edges, edges[0], edges[-1], nbins)
    return edges, _native.AXIS_SEARCH


def _uniform_kind(dtype: "DTypeLike", edges: "NDArray[np.float64]", lo: float, hi: float,
                  nbins: int) -> int:
    """Integer arithmetic when integer data meets integral, equally spaced edges (exact and
    fastest); else numpy's guess-and-correct on equal widths."""
    width = (hi - lo) / nbins
    with np.errstate(over="ignore", divide="ignore"):
        norm = nbins / (hi - lo)
    if not (math.isfinite(hi - lo) and math.isfinite(norm) and norm > 0):
        return _native.AXIS_SEARCH         # arithmetic guesses would overflow
    if (np.issubdtype(dtype, np.integer) and lo == math.floor(lo) and width == math.floor(width)
            and max(abs(lo), abs(hi)) < 2**53
            and np.array_equal(edges, lo + width * np.arange(nbins + 1))):
        return _native.AXIS_INTEGER
    return _native.AXIS_UNIFORM


def _range_pair(value: tuple[float, float], func: str, name: str) -> tuple[float, float]:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise TypeError(f"The {name!r} parameter of {func} must be a pair (low, high). "
                        f"Got {value!r} instead.") from None
    lo = _v.check_real(lo, name, func, low=-math.inf)
    hi = _v.check_real(hi, name, func, low=-math.inf)
    if not lo < hi:
        raise ValueError(f"The {name!r} parameter of {func} must have low < high. "
                         f"Got {value!r} instead.")
    return lo, hi


def histogram_counts(data: "ArrayLike", bins: "int | ArrayLike", range: Any, func: str,
                     threads: int) -> "tuple[NDArray[np.int64], NDArray[np.float64]]":
    """The exact counts and edges of :func:`histogram` (everything checked; no noise).
    ``dpfast.dask`` counts each partition with it."""
    records = _v.check_records(data, "data", func)
    edges, kind = _axis(records.dtype, bins, range, func)
    return _native.count_1d(records, edges, kind, threads), edges


def histogramdd_counts(sample: "ArrayLike", bins: Any, range: Any, func: str,
                       threads: int) -> "tuple[NDArray[np.int64], list[NDArray[np.float64]]]":
    """The exact counts and edges of :func:`histogramdd` (everything checked; no noise)."""
    if isinstance(sample, (list, tuple)) and sample and np.ndim(sample[0]) == 1:
        try:
            sample = np.stack([_v.as_array(s, "sample", func) for s in sample], axis=1)
        except ValueError:
            raise ValueError(f"The 'sample' parameter of {func} must be D arrays of equal "
                             "length.") from None
    data: NDArray[Any]
    data = _v.check_records(sample, "sample", func, flatten=False)
    if data.ndim == 1:                            # N points in one dimension, as numpy
        data = data.reshape(-1, 1)
    if data.ndim != 2:
        raise ValueError(f"The 'sample' parameter of {func} must be an (N, D) array or a "
                         f"sequence of D arrays. Got an array of shape {data.shape} instead.")
    data = np.asarray(data, dtype=np.float64, order="C")
    dims = data.shape[1]
    if isinstance(bins, str):
        raise _leak_error(func, f"bins={bins!r} chooses edges from the data.")
    per_dim_bins = [bins] * dims if isinstance(bins, numbers.Integral) else list(bins)
    if len(per_dim_bins) != dims:
        raise ValueError(f"The 'bins' parameter of {func} must give one entry per dimension "
                         f"({dims}). Got {bins!r} instead.")
    ranges = [None] * dims if range is None else list(range)
    if len(ranges) != dims or any(r is not None and np.ndim(r) != 1 for r in ranges):
        raise ValueError(f"The 'range' parameter of {func} must give one (low, high) pair per "
                         f"dimension ({dims}). Got {range!r} instead.")
    axes = [_axis(np.float64, b, r, func) for b, r in zip(per_dim_bins, ranges)]
    shape = tuple(e.size - 1 for e, _ in axes)
    if math.prod(shape) > MAX_CELLS:
        raise ValueError(f"The table of {func} would have {math.prod(shape):,} cells, more "
                         f"than {MAX_CELLS:,}; use dpfast.noisy_counts with out= for tables "
                         "counted elsewhere.")
    counts = _native.count_nd(data, [e for e, _ in axes], [k for _, k in axes], threads)
    return counts.reshape(shape), [e for e, _ in axes]


def category_counts(values: "ArrayLike", categories: Any, other: object, func: str,
                    threads: int) -> "NDArray[np.int64]":
    """The exact counts of :func:`count_categories` (everything checked; no noise)."""
    categories = category_list(categories, f"The 'categories' parameter of {func} must be "
                               "an ordered sequence of categories (the order of the "
                               "released cells).")
    other = _v.check_bool(other, "other", func)
    codes = category_codes(values, categories, func)
    ncat = len(categories)
    unknown = np.flatnonzero(codes < 0)
    if unknown.size and not other:
        # Neither the value nor how many: an error message can end up in a log.
        raise ValueError(f"The 'values' parameter of {func} has values outside 'categories' "
                         f"(the first at record {unknown[0]}). Pass other=True to count them "
                         "in an extra cell, or add them to the public category list.")
    if unknown.size:
        codes[unknown] = ncat
    return _native.count_codes(codes, ncat + bool(other), threads)

