/*
 * Full-precision uniforms and exact-grid Laplace noise from ChaCha20 keystream words.
 *
 * One 64-bit keystream word w feeds one sample:
 *   bits 63..53  (11 bits) the binade of the uniform: the number of leading zeros n0 of this
 *                field is a Geometric(1/2) variable; when the field is all zero (probability
 *                2^-11) counting continues in words of a separate "extra" stream, so the
 *                exponent has its exact distribution down to 2^-1099;
 *   bit  52      the sign of a Laplace sample (unused by the uniform);
 *   bits 51..0   the 52-bit mantissa.
 * The real uniform R lies in [2^-(n0+1), 2^-n0) and its leading 53 bits are m * 2^-(n0+1),
 * m = 1.mantissa.  Exponent and mantissa bits are independent, so taking the mantissa from
 * fixed bits instead of "the bits after the leading one" gives the same distribution: every
 * double d in (0,1) comes out with probability equal to its spacing (truncation of R).
 *
 * Discrete Laplace with parameter t (P[K=k] proportional to exp(-|k|/t)) by inverse CDF:
 * with alpha = exp(-1/t), P[|K| >= j] = 2 alpha^j / (1+alpha) for j >= 1, so
 *     |K| = floor(t * (c + L)),   L = -ln R,   c = ln(2/(1+alpha)),
 * and K = +-|K| by the sign bit (P[K=0] comes out right without rejection).  L is computed as
 * n*ln2 - ln(m) with n = n0 + 1 and ln(m) on [sqrt(1/2), sqrt(2)) only, so its absolute error
 * is a few units of 2^-53 whatever the magnitude of L; t*n*ln2 is split into an exact product
 * n*a_hi and a small remainder, so the floor is taken of a sum whose rounding error is
 * proportional to t, not to t*L.  docs: see dpfast.noise for the privacy bound this gives.
 *
 * The per-sample path uses only IEEE-754 basic operations, floor and rint (no libm calls, no
 * FMA: the build uses -ffp-contract=off), so scalar, AVX2 and AVX-512 builds give
 * bit-identical samples.
 */
#ifndef DPF_SAMPLING_H
#define DPF_SAMPLING_H

#include <stdint.h>
#include <stddef.h>
#include "chacha20.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest number of extra words one sample may read after its own word. */
#define DPF_MAX_EXTRA_WORDS 17
/* Samples per chunk: each chunk has its own pair of streams, so output does not depend on
 * the number of threads that process the chunks. */
#define DPF_CHUNK 65536

typedef struct {
    double t;       /* discrete Laplace parameter (scale in grid units) */
    double c;       /* ln(2 / (1 + exp(-1/t))) */
    double a_hi;    /* t*ln2 truncated to 40 significant bits: n*a_hi is exact for n < 2^13 */
    double a_lo;    /* t*ln2 - a_hi */
} dpf_dlap_params;

enum dpf_mode {
    DPF_MODE_UNIFORM = 0,     /* double in (0,1) */
    DPF_MODE_DLAP_INT = 1,    /* int64 K (+ int64 base) */
    DPF_MODE_DLAP_GRID = 2,   /* double (rint(base/g) + K) * g, base optional */
    DPF_MODE_DLAP_I32 = 3     /* int32 K + int32 base (the caller keeps the sum in range) */
};

typedef struct {
    int mode;
    dpf_dlap_params lap;
    double g;               /* grid step (power of two), DLAP_GRID only */
    double ginv;            /* 1/g */
    const void *base;       /* int64_t* or double* per mode, or NULL; indexed like out;
                               it may be out itself (in-place release) */
    uint64_t chunk0;        /* streams are numbered from this chunk (block-wise calls) */
} dpf_job;

void dpf_dlap_params_init(dpf_dlap_params *p, double t);

/* ---- discrete Gaussian (Canonne, Kamath & Steinke 2020, rejection from discrete Laplace) */
typedef struct {
    dpf_dlap_params lap;    /* proposal: discrete Laplace with t = floor(sigma) + 1 */
    double s2t;             /* sigma^2 / t */
    double inv_s;           /* 1 / sigma (not 1/(2 sigma^2): sigma^2 may underflow) */
    int grid;               /* 0: int64 out (+ int64 base); 1: double (rint(base/g) + K) * g */
    double g, ginv;
    const void *base;       /* may be out itself */
    uint64_t chunk0;
} dpf_dgauss_job;

void dpf_dgauss_params(dpf_dgauss_job *job, double sigma);
/* Chunk `chunk` of out[0:n_total]: candidates and acceptance uniforms come in word pairs from
 * the chunk's stream (nonce 2c), extra binade words from nonce 2c+1.  The number of words a
 * chunk uses is random but independent of the values it outputs (rejection sampling). */
void dpf_dgauss_chunk(const uint32_t key[8], uint64_t chunk, const dpf_dgauss_job *job,
                      void *out, size_t n_total);

/* ---- selection (report noisy max, exponential mechanism) ---- */
enum dpf_noise { DPF_NOISE_LAPLACE = 0, DPF_NOISE_EXPONENTIAL = 1, DPF_NOISE_GUMBEL = 2 };

typedef struct {
    int noise;              /* enum dpf_noise: unit-scale noise added to each score */
    double umax;            /* scores are (u - umax) * inv_scale + noise: shifting by the */
    double inv_scale;       /* largest utility first keeps huge utilities from swamping it */
    uint64_t chunk0;
} dpf_select_job;

/* Over chunk `chunk` of u[0:n_total] (streams as for dpf_fill_chunk): the index and value of
 * the largest noisy score, the lowest index on ties, (-1, -inf) if all are -inf; the noisy
 * scores also go to scores_out (indexed like u) unless it is NULL. */
void dpf_select_chunk(const uint32_t key[8], uint64_t chunk, const dpf_select_job *job,
                      const double *u, size_t n_total, double *scores_out, int64_t *best_idx,
                      double *best_val);

/* Sum over u[0:n] of exp((u_i - umax) * a), in a fixed order (the same on every target);
 * -inf utilities contribute 0. */
double dpf_sum_exp(const double *u, size_t n, double umax, double a);
/* Inverse CDF within one chunk: with T the sum of exp((u_j - umax) * a) over u[0:n] in
 * index order, the smallest i whose running sum exceeds v * T (v uniform in [0, 1)); the last
 * positive weight if v * T rounds up to T;
 * -1 if all weights are 0; -2 if n exceeds DPF_CHUNK. */
int64_t dpf_find_exp(const double *u, size_t n, double umax, double a, double v);
/* Test shims: the unit noise of word w with n0 leading zeros, and exp / ln as computed. */
double dpf_select_noise_from_bits(uint64_t w, uint64_t n0, int kind);
double dpf_exp_nonpos_shim(double x);

/* Fill chunk `chunk` (elements [chunk*DPF_CHUNK, ...) of out[0:n_total]: int64, double or
 * int32 elements by job->mode) of a call keyed by key: with c = job->chunk0 + chunk, main
 * stream nonce 2c, extra stream nonce 2c+1, counters from 0.  job->base, if set, is indexed
 * like out. */
void dpf_fill_chunk(const uint32_t key[8], uint64_t chunk, const dpf_job *job,
                    void *out, size_t n_total);

/* Test shims: the sample a word gives when its binade has n0 leading zeros (n0 >= 0 as
 * given, bypassing the binade bits). */
double dpf_dlap_from_bits(uint64_t w, uint64_t n0, const dpf_dlap_params *p);
double dpf_uniform_from_bits(uint64_t w, uint64_t n0);
/* The unfloored magnitude t*(c + L) as fb + rest (fb integral), for error measurements. */
void dpf_dlap_z_from_bits(uint64_t w, uint64_t n0, const dpf_dlap_params *p, double *fb,
                          double *rest);

const char *dpf_sampling_impl(void);
int dpf_have_openmp(void);   /* 1 if built with OpenMP (threads > 1 run in parallel) */
int dpf_sampling_set_impl(const char *name);

#ifdef __cplusplus
}
#endif
#endif
