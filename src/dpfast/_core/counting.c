#include "counting.h"
#include <string.h>

void dpf_axis_init(dpf_axis *ax, const double *edges, int64_t nbins, int kind)
{
    ax->edges = edges;
    ax->nbins = nbins;
    ax->kind = kind;
    ax->lo = edges[0];
    ax->hi = edges[nbins];
    ax->norm = (double)nbins / (ax->hi - ax->lo);
    if (kind == DPF_AXIS_INTEGER) {     /* the caller checked the edges are integral */
        ax->ilo = (int64_t)edges[0];
        ax->ihi = (int64_t)edges[nbins];
        ax->width = (int64_t)(edges[1] - edges[0]);
    } else {
        ax->ilo = ax->ihi = ax->width = 0;
    }
}

/* Bin of x on the axis, -1 if not counted (outside, or NaN). */
static inline int64_t dpf_bin(const dpf_axis *ax, double x)
{
    if (!(x >= ax->lo && x <= ax->hi))
        return -1;
    const double *e = ax->edges;
    int64_t nb = ax->nbins;
    if (ax->kind == DPF_AXIS_UNIFORM) {
        /* numpy's rule: guess by arithmetic, then move one bin if rounding put x on the
         * wrong side of an edge. */
        int64_t i = (int64_t)((x - ax->lo) * ax->norm);
        if (i >= nb)
            i = nb - 1;
        if (x < e[i])
            i--;
        else if (i != nb - 1 && x >= e[i + 1])
            i++;
        return i;
    }
    /* Largest i with e[i] <= x, capped at nb - 1 so that x == hi lands in the last bin;
     * branch-free halving (the comparisons are unpredictable). */
    int64_t base = 0, len = nb;
    while (len > 1) {
        int64_t half = len / 2;
        base = e[base + half] <= x ? base + half : base;
        len -= half;
    }
    return base;
}

/* Bin of an integer on an integer axis: exact, no floating point. */
static inline int64_t dpf_bin_int(const dpf_axis *ax, int64_t v)
{
    if (v < ax->ilo || v > ax->ihi)    /* compared first, so v - ilo cannot overflow */
        return -1;
    int64_t off = v - ax->ilo;
    int64_t i = ax->width == 1 ? off : off / ax->width;
    return i == ax->nbins ? i - 1 : i;
}

/* Unit-width integer bins: the bin is the offset (the last edge shares the last bin). */
static inline int64_t dpf_bin_unit(int64_t ilo, int64_t ihi, int64_t v)
{
    if (v < ilo || v > ihi)
        return -1;
    return v == ihi ? v - ilo - 1 : v - ilo;
}

static inline void dpf_add(int64_t *counts, int64_t i, int atomic)
{
    if (atomic)
        __atomic_fetch_add(&counts[i], 1, __ATOMIC_RELAXED);
    else
        counts[i]++;
}

/* The axis is copied to a local first: counts[] stores could otherwise alias its fields
 * and force a reload on every record. */
#define DPF_COUNT_BODY(BIN)                                                                 \
    if (atomic) {                                                                           \
        for (size_t j = 0; j < n; j++) {                                                    \
            int64_t i = BIN;                                                                \
            if (i >= 0)                                                                     \
                dpf_add(counts, i, 1);                                                      \
        }                                                                                   \
    } else {                                                                                \
        for (size_t j = 0; j < n; j++) {                                                    \
            int64_t i = BIN;                                                                \
            if (i >= 0)                                                                     \
                counts[i]++;                                                                \
        }                                                                                   \
    }

/* Integer records: exact integer binning on integer axes, else compared as doubles (as numpy
 * does); floating records compared as doubles. One definition per record type. */
#define DPF_DEFINE_COUNT_INT(NAME, T)                                                       \
    static void NAME(const T *x, size_t n, const dpf_axis *axis, int64_t *counts,          \
                     int atomic)                                                            \
    {                                                                                       \
        const dpf_axis a = *axis;                                                           \
        if (a.kind == DPF_AXIS_INTEGER && a.width == 1) {                                   \
            DPF_COUNT_BODY(dpf_bin_unit(a.ilo, a.ihi, (int64_t)x[j]))                       \
        } else if (a.kind == DPF_AXIS_INTEGER) {                                            \
            DPF_COUNT_BODY(dpf_bin_int(&a, (int64_t)x[j]))                                  \
        } else {                                                                            \
            DPF_COUNT_BODY(dpf_bin(&a, (double)x[j]))                                       \
        }                                                                                   \
    }

#define DPF_DEFINE_COUNT_FLOAT(NAME, T)                                                     \
    static void NAME(const T *x, size_t n, const dpf_axis *axis, int64_t *counts,          \
                     int atomic)                                                            \
    {                                                                                       \
        const dpf_axis a = *axis;                                                           \
        DPF_COUNT_BODY(dpf_bin(&a, (double)x[j]))                                           \
    }

DPF_DEFINE_COUNT_FLOAT(count_f64, double)
DPF_DEFINE_COUNT_FLOAT(count_f32, float)
DPF_DEFINE_COUNT_INT(count_i64, int64_t)
DPF_DEFINE_COUNT_INT(count_i32, int32_t)
DPF_DEFINE_COUNT_INT(count_i16, int16_t)
DPF_DEFINE_COUNT_INT(count_i8, int8_t)
DPF_DEFINE_COUNT_INT(count_u32, uint32_t)
DPF_DEFINE_COUNT_INT(count_u16, uint16_t)
DPF_DEFINE_COUNT_INT(count_u8, uint8_t)

static void count_codes(const int64_t *codes, size_t n, int64_t ncells, int64_t *counts,
                        int atomic)
{
    DPF_COUNT_BODY((codes[j] >= 0 && codes[j] < ncells) ? codes[j] : -1)
}

static void count_nd(const double *sample, size_t n, size_t d, const dpf_axis *axes,
                     const int64_t *strides, int64_t *counts, int atomic)
{
    dpf_axis a[8];
    const dpf_axis *ax = axes;
    if (d <= 8) {        /* local copies, as in DPF_COUNT_BODY */
        for (size_t k = 0; k < d; k++)
            a[k] = axes[k];
        ax = a;
    }
    for (size_t j = 0; j < n; j++) {
        const double *rec = sample + j * d;
        int64_t cell = 0;
        size_t k = 0;
        for (; k < d; k++) {
            int64_t b = dpf_bin(&ax[k], rec[k]);
            if (b < 0)
                break;
            cell += b * strides[k];
        }
        if (k == d)
            dpf_add(counts, cell, atomic);
    }
}

void dpf_count_block(void *task_, int64_t block, int slot)
{
    const dpf_count_task *t = task_;
    int64_t lo = t->n * block / t->nblocks, hi = t->n * (block + 1) / t->nblocks;
    size_t n = (size_t)(hi - lo);
    int64_t *counts = t->tables ? t->tables + slot * t->row : t->counts;
    int atomic = t->tables ? 0 : t->atomic;
    const dpf_axis *ax = t->axes;
    switch (t->rtype) {
    case DPF_REC_F64: count_f64((const double *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_F32: count_f32((const float *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_I64: count_i64((const int64_t *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_I32: count_i32((const int32_t *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_I16: count_i16((const int16_t *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_I8: count_i8((const int8_t *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_U32: count_u32((const uint32_t *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_U16: count_u16((const uint16_t *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_U8: count_u8((const uint8_t *)t->data + lo, n, ax, counts, atomic); break;
    case DPF_REC_ND:
        count_nd((const double *)t->data + lo * t->d, n, (size_t)t->d, ax, t->strides, counts,
                 atomic);
        break;
    default:
        count_codes((const int64_t *)t->data + lo, n, t->ncells, counts, atomic);
        break;
    }
}


/* -- block checksums ------------------------------------------------------------------------ */

static inline uint64_t dpf_load64(const unsigned char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static inline uint64_t dpf_avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

uint64_t dpf_checksum(const void *data, size_t n, uint64_t seed)
{
    static const uint64_t lane_key[4] = {0x9E3779B185EBCA87ULL, 0xC2B2AE3D27D4EB4FULL,
                                         0x165667B19E3779F9ULL, 0x85EBCA77C2B2AE63ULL};
    const unsigned char *p = (const unsigned char *)data;
    uint64_t acc[4] = {seed ^ lane_key[0], seed ^ lane_key[1], seed ^ lane_key[2],
                       seed ^ lane_key[3]};
    size_t stripes = n / 32, s;
    /* XXH3's accumulate step: acc += word + lo32(word ^ key) * hi32(word ^ key). The key of
     * each word changes with its stripe, so equal stripes at different places differ. */
    for (s = 0; s < stripes; s++) {
        uint64_t pos = (uint64_t)s * 0x9E3779B97F4A7C15ULL;
        for (int l = 0; l < 4; l++) {
            uint64_t w = dpf_load64(p + 32 * s + 8 * l);
            uint64_t k = w ^ (lane_key[l] + pos);
            acc[l] += w + (k & 0xFFFFFFFFULL) * (k >> 32);
        }
    }
    uint64_t h = (uint64_t)n * 0x27D4EB2F165667C5ULL;
    for (int l = 0; l < 4; l++)
        h = dpf_avalanche(h ^ dpf_avalanche(acc[l] + lane_key[l]));
    for (size_t i = 32 * stripes; i < n; i++)       /* the last bytes, one at a time */
        h = dpf_avalanche(h ^ ((uint64_t)p[i] << 8 | (i & 0xFF)));
    return h;
}
