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

/* Add the bin counts of x[0:n] to counts[0:nbins].  atomic != 0 makes every increment an
 * atomic add, for threads that share one counts array. */
void dpf_count_f64(const double *x, size_t n, const dpf_axis *ax, int64_t *counts, int atomic);
void dpf_count_i64(const int64_t *x, size_t n, const dpf_axis *ax, int64_t *counts, int atomic);
void dpf_count_i32(const int32_t *x, size_t n, const dpf_axis *ax, int64_t *counts, int atomic);

/* Contingency table: sample is n records of d float64 coordinates (row-major); the cell of a
 * record is sum over k of bin_k * strides[k] (records outside any axis are not counted). */
void dpf_count_nd(const double *sample, size_t n, size_t d, const dpf_axis *axes,
                  const int64_t *strides, int64_t *counts, int atomic);

/* Records with codes[i] in [0, ncells) counted; others ignored (codes from a category map). */
void dpf_count_codes(const int64_t *codes, size_t n, int64_t ncells, int64_t *counts,
                     int atomic);

#ifdef __cplusplus
}
#endif
#endif
