/*
 * Binning and counting records, with numpy.histogram's edge rules: bin i is
 * [edges[i], edges[i+1]) except the last, which also holds edges[nbins]; values outside
 * [edges[0], edges[nbins]] are not counted.
 */
#ifndef DPF_COUNTING_H
#define DPF_COUNTING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const double *edges;   /* nbins + 1 increasing edges */
    int64_t nbins;
    int kind;              /* DPF_AXIS_* */
    double lo, hi;         /* edges[0], edges[nbins] */
    double norm;           /* nbins / (hi - lo), uniform axes */
    int64_t ilo, ihi;      /* integer axes: edges are ilo + i*width exactly, ihi = last */
    int64_t width;
} dpf_axis;

enum {
    DPF_AXIS_SEARCH = 0,   /* any increasing edges: binary search */
    DPF_AXIS_UNIFORM = 1,  /* equal widths: arithmetic guess corrected against the edges */
    DPF_AXIS_INTEGER = 2   /* integer data, integral lo and width: exact integer arithmetic */
};

/* Fill the derived fields of an axis; kind as requested (the caller checks it applies). */
void dpf_axis_init(dpf_axis *ax, const double *edges, int64_t nbins, int kind);

/* Record types: one axis of numbers (any of these), points of d float64 coordinates, or
 * integer codes of cells. */
enum dpf_rec {
    DPF_REC_F64, DPF_REC_F32, DPF_REC_I64, DPF_REC_I32, DPF_REC_I16, DPF_REC_I8,
    DPF_REC_U32, DPF_REC_U16, DPF_REC_U8, DPF_REC_ND, DPF_REC_CODES
};

/* Counting records into cells, as a driver task (driver.h): block b of nblocks covers records
 * [n*b/nblocks, n*(b+1)/nblocks).  A block is counted into the partial table of the thread's
 * slot (tables + slot*row) when tables is set, else into counts, with atomic adds if atomic.
 * Integer sums do not depend on the order, so the total is the same for any split.
 *
 * Numbers are binned on axes[0] (numpy.histogram's rules; integer records exactly on integer
 * axes, otherwise compared as doubles, as numpy does).  Points: the cell of a record is
 * sum over k of bin_k * strides[k], records outside any axis are not counted.  Codes: records
 * with a code in [0, ncells) are counted, others ignored. */
typedef struct {
    const void *data;
    int rtype;              /* enum dpf_rec */
    int64_t n;              /* records */
    int64_t d;              /* coordinates per point (DPF_REC_ND) */
    const dpf_axis *axes;
    const int64_t *strides;
    int64_t ncells;
    int64_t nblocks;
    int64_t *tables;        /* per-slot partial tables, or NULL */
    int64_t row;            /* cells per partial table (ncells rounded up to a cache line) */
    int64_t *counts;
    int atomic;
} dpf_count_task;

void dpf_count_block(void *task, int64_t block, int slot);

/* A 64-bit checksum of n bytes, for detecting changed blocks of a file (a journal's record of
 * what a block held): four multiply-accumulate lanes over 32-byte stripes, each word mixed
 * with a key that depends on its position, then a final avalanche. Not a cryptographic hash:
 * it detects accidental change (rewrites, partial writes, moved blocks), not a forger. */
uint64_t dpf_checksum(const void *data, size_t n, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
