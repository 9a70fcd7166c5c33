"""Compiled counting: one pass over the records, GIL released, threads over blocks.

The records are cut into blocks that threads take as they become free (a thread on a core
shared with another process takes fewer); each thread counts its blocks into its own partial
table (or, for tables too large to copy per thread, with atomic adds into one table).
Integer sums do not depend on the order, so the counts are the same for any number of
threads and any assignment of blocks.
"""
import numpy as np

cimport numpy as cnp
from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc

cnp.import_array()

cdef extern from "counting.h":
    ctypedef struct dpf_axis:
        pass
    enum:
        DPF_AXIS_SEARCH
        DPF_AXIS_UNIFORM
        DPF_AXIS_INTEGER
    void dpf_axis_init(dpf_axis *ax, const double *edges, int64_t nbins, int kind) nogil
    void dpf_count_f64(const double *x, size_t n, const dpf_axis *ax, int64_t *counts,
                       int atomic) nogil
    void dpf_count_i64(const int64_t *x, size_t n, const dpf_axis *ax, int64_t *counts,
                       int atomic) nogil
    void dpf_count_i32(const int32_t *x, size_t n, const dpf_axis *ax, int64_t *counts,
                       int atomic) nogil
    void dpf_count_nd(const double *sample, size_t n, size_t d, const dpf_axis *axes,
                      const int64_t *strides, int64_t *counts, int atomic) nogil
    void dpf_count_codes(const int64_t *codes, size_t n, int64_t ncells, int64_t *counts,
                         int atomic) nogil

AXIS_SEARCH = DPF_AXIS_SEARCH
AXIS_UNIFORM = DPF_AXIS_UNIFORM
AXIS_INTEGER = DPF_AXIS_INTEGER

# Up to this many cells in all, each thread gets a private table; beyond, one shared table.
PRIVATE_CELLS = 1 << 21
# Below this many records one thread is faster than starting more.
MIN_PARALLEL_RECORDS = 1 << 16
# Records per block handed to a thread (at least one block per thread).
DEF BLOCK_RECORDS = 1 << 18

cdef enum _Src:
    SRC_F64
    SRC_I64
    SRC_I32
    SRC_ND
    SRC_CODES


cdef void _count_slab(int src, const char *data, size_t lo, size_t hi, size_t d,
                      const dpf_axis *axes, const int64_t *strides, int64_t ncells,
                      int64_t *counts, int atomic) noexcept nogil:
    cdef size_t n = hi - lo
    if src == SRC_F64:
        dpf_count_f64(<const double *>data + lo, n, axes, counts, atomic)
    elif src == SRC_I64:
        dpf_count_i64(<const int64_t *>data + lo, n, axes, counts, atomic)
    elif src == SRC_I32:
        dpf_count_i32(<const int32_t *>data + lo, n, axes, counts, atomic)
    elif src == SRC_ND:
        dpf_count_nd(<const double *>data + lo * d, n, d, axes, strides, counts, atomic)
    else:
        dpf_count_codes(<const int64_t *>data + lo, n, ncells, counts, atomic)


cdef cnp.ndarray _count(int src, cnp.ndarray data, size_t n, size_t d, const dpf_axis *axes,
                        const int64_t *strides, int64_t ncells, int threads):
    cdef const char *ptr = <const char *>cnp.PyArray_DATA(data)
    cdef cnp.ndarray counts = np.zeros(ncells, dtype=np.int64)
    cdef int64_t *out = <int64_t *>cnp.PyArray_DATA(counts)
    cdef cnp.ndarray partial
    cdef int64_t *part
    cdef Py_ssize_t b, nt = threads
    if n < MIN_PARALLEL_RECORDS or nt <= 1:
        with nogil:
            _count_slab(src, ptr, 0, n, d, axes, strides, ncells, out, 0)
        return counts
    cdef Py_ssize_t nb = max(nt, <Py_ssize_t>((n + BLOCK_RECORDS - 1) // BLOCK_RECORDS))
    cdef Py_ssize_t row = (ncells + 7) // 8 * 8   # rows on separate cache lines
    if nt * row <= PRIVATE_CELLS:
        partial = np.zeros((nt, row), dtype=np.int64)
        part = <int64_t *>cnp.PyArray_DATA(partial)
        for b in prange(nb, nogil=True, num_threads=nt, schedule="dynamic"):
            _count_slab(src, ptr, n * b // nb, n * (b + 1) // nb, d, axes, strides, ncells,
                        part + threadid() * row, 0)
        return partial[:, :ncells].sum(axis=0)
    for b in prange(nb, nogil=True, num_threads=nt, schedule="dynamic"):
        _count_slab(src, ptr, n * b // nb, n * (b + 1) // nb, d, axes, strides, ncells,
                    out, 1)
    return counts


def count_1d(cnp.ndarray x, const double[::1] edges, int kind, int threads):
    """Counts of the 1-d C-contiguous array x (float64, int64 or int32) in the bins given
    by edges (numpy.histogram's rules); kind is AXIS_SEARCH, AXIS_UNIFORM or AXIS_INTEGER
    (the last for integer data on integral, equally spaced edges)."""
    cdef dpf_axis ax
    cdef int src
    if x.ndim != 1 or not x.flags.c_contiguous:
        raise ValueError("x must be 1-d and C-contiguous")
    if x.dtype == np.float64:
        src = SRC_F64
    elif x.dtype == np.int64:
        src = SRC_I64
    elif x.dtype == np.int32:
        src = SRC_I32
    else:
        raise TypeError(f"unsupported dtype {x.dtype}")
    if kind == DPF_AXIS_INTEGER and src == SRC_F64:
        raise ValueError("integer axes need integer data")
    nbins = edges.shape[0] - 1
    if nbins < 1:
        raise ValueError("need at least one bin")
    dpf_axis_init(&ax, &edges[0], nbins, kind)
    return _count(src, x, x.shape[0], 1, &ax, NULL, nbins, threads)


def count_nd(cnp.ndarray sample, list edges, list kinds, int threads):
    """Flat (C-order) cell counts of the (n, d) C-contiguous float64 sample; edges[k] and
    kinds[k] describe axis k (AXIS_SEARCH or AXIS_UNIFORM)."""
    if sample.ndim != 2 or not sample.flags.c_contiguous or sample.dtype != np.float64:
        raise ValueError("sample must be a C-contiguous (n, d) float64 array")
    cdef size_t d = sample.shape[1]
    if len(edges) != d or len(kinds) != d:
        raise ValueError("one edges array and kind per dimension")
    cdef dpf_axis *axes = <dpf_axis *>malloc(max(d, 1) * sizeof(dpf_axis))
    cdef int64_t *strides = <int64_t *>malloc(max(d, 1) * sizeof(int64_t))
    if axes == NULL or strides == NULL:
        free(axes)
        free(strides)
        raise MemoryError()
    cdef const double[::1] e
    cdef int64_t ncells = 1
    keep = [np.ascontiguousarray(a, dtype=np.float64) for a in edges]
    try:
        for k in range(d):
            e = keep[k]
            if e.shape[0] < 2:
                raise ValueError("need at least one bin per axis")
            dpf_axis_init(&axes[k], &e[0], e.shape[0] - 1, kinds[k])
        for k in reversed(range(d)):
            strides[k] = ncells
            ncells *= keep[k].shape[0] - 1
        return _count(SRC_ND, sample, sample.shape[0], d, axes, strides, ncells, threads)
    finally:
        free(axes)
        free(strides)


def count_codes(const int64_t[::1] codes, int64_t ncells, int threads):
    """Counts of the integer codes in [0, ncells); other codes are not counted."""
    arr = np.asarray(codes)
    return _count(SRC_CODES, arr, codes.shape[0], 1, NULL, NULL, ncells, threads)
