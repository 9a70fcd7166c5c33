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
 * proportional to t, not to t*L.  See dpfast.samplers for the privacy bound this gives.
 *
 * The per-sample path uses only IEEE-754 basic operations, floor and rint (no libm calls, no
 * FMA: the build uses -ffp-contract=off), so scalar, AVX2 and AVX-512 builds give
 * bit-identical samples.
 *
 * Every kernel below is one chunk of a task, run by the driver (driver.h): chunk c of a call
 * covers elements [c*DPF_CHUNK, (c+1)*DPF_CHUNK) and reads the ChaCha20 streams of nonces
 * 2(chunk0 + c) (one word per sample) and 2(chunk0 + c) + 1 (extra words) under the call's key,
 * counters from 0.  chunk0 numbers the streams of a block of a larger release, so that a
 * release made block by block equals one made in one call.
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
/* Samples per chunk. */
#define DPF_CHUNK 65536

typedef struct {
    double t;       /* discrete Laplace parameter (scale in grid units) */
    double c;       /* ln(2 / (1 + exp(-1/t))) */
    double a_hi;    /* t*ln2 truncated to 40 significant bits: n*a_hi is exact for n < 2^13 */
    double a_lo;    /* t*ln2 - a_hi */
} dpf_dlap_params;

void dpf_dlap_params_init(dpf_dlap_params *p, double t);

/* ---- fills: uniforms, discrete Laplace, grid Laplace ---------------------------------- */
enum dpf_mode {
    DPF_MODE_UNIFORM = 0,     /* double in (0,1) */
    DPF_MODE_DLAP_INT = 1,    /* int64 K (+ int64 base) */
    DPF_MODE_DLAP_GRID = 2,   /* double (rint(base/g) + K) * g, base optional */
    DPF_MODE_DLAP_I32 = 3     /* int32 K + int32 base (the caller keeps the sum in range) */
};

typedef struct {
    uint32_t key[8];
    int mode;
    dpf_dlap_params lap;
    double g;               /* grid step (power of two), DLAP_GRID only */
    double ginv;            /* 1/g */
    const void *base;       /* int64_t*, int32_t* or double* per mode, or NULL; indexed like
                               out; it may be out itself (in-place release) */
    void *out;
    int64_t n;              /* elements of out */
    uint64_t chunk0;
} dpf_fill_task;

void dpf_fill_chunk(void *task, int64_t chunk, int slot);

/* ---- discrete Gaussian: rejection from an exact dyadic proposal ------------------------
 *
 * Target: P[Z = z] proportional to exp(-z^2 / (2 sigma^2)) on the integers.  One 64-bit word
 * of the chunk's stream (nonce 2c) makes one proposal:
 *   bits  0..15       A, an acceptance uniform's leading 16 bits;
 *   bit   16          the sign;
 *   bits  17..16+m    V, uniform in [0, M), M = 2^m;
 *   bits  17+m..63    F (47 - m bits): its leading zeros lz (continued into the extra stream,
 *                     nonce 2c + 1, when F is all zero) give G = floor(lz / r), so that
 *                     P[G >= g] = 2^(-r g) exactly.
 * The proposal is X = +-(G M + V), "-0" rejected, so q(x) = (1 - 2^-r)/2 * 2^(-r floor(|x|/M))
 * / M: no floating-point arithmetic at all.  It is accepted with probability
 *     a(x) = exp(-(|x| - s)^2 / (2 sigma^2) - cv V),   cv = r ln2 / M,  s = sigma^2 cv,
 * and q(x) a(x) is proportional to exp(-x^2 / (2 sigma^2)) (the floor's remainder is V/M).
 * The test U < a(x) compares A with floor(65536 a(x)) and, only on equality (probability
 * 2^-16), a fresh full-precision uniform from the extra stream with the remainder
 * 65536 a(x) - floor(65536 a(x)): P[accept] is the computed a(x) exactly.  So the sampler's
 * only floating-point error is that of a(x), a relative error that depends on (|x| - s)/sigma
 * but not on sigma's magnitude (see dpfast.samplers).  Accepted proposals fill the chunk's
 * cells in order; the number of proposals a chunk uses is random but independent of the
 * values it outputs. */
enum dpf_dg_kind { DPF_DG_I64 = 0, DPF_DG_GRID = 1, DPF_DG_I32 = 2 };

typedef struct {
    uint32_t key[8];
    int m;                  /* M = 2^m, 0 <= m <= 40 */
    int r;                  /* 1 <= r <= 40 */
    int narrow;             /* 1: two 32-bit proposals a word */
    int abits;              /* acceptance bits: 8 (narrow) or 16 */
    int fbits;              /* bits of the geometric field */
    int jbits;              /* 4: V = j M/4 + low, j from 4 bits (m >= 2); 0: V = low */
    int lbits;              /* bits of low */
    uint64_t jmask, lmask;
    double cq[4];           /* per quarter: ln(lambda / w_j) - j r ln2 / 4 (0 if jbits = 0) */
    double dq[3];           /* cq[j + 1] - cq[j] (the exponent adds cq[0] + its steps) */
    double Mq;              /* M / 4 (2^lbits) */
    double M;
    double rinv;            /* 1/r (G = floor((lz + 0.5) / r), exact for lz < 2^40) */
    double s;               /* sigma^2 cv */
    double inv_s;           /* 1 / sigma (not 1/(2 sigma^2): sigma^2 may underflow) */
    double cv;              /* r ln2 / M */
    int kind;               /* enum dpf_dg_kind: int64 / int32 cells (+ base of that type), or
                               double (rint(base/g) + Z) * g */
    double g, ginv;
    const void *base;       /* may be out itself */
    void *out;
    int64_t n;
    uint64_t chunk0;
} dpf_dgauss_task;

/* Sets m, r (the proposal that accepts most often for sigma) and the constants above. */
void dpf_dgauss_params(dpf_dgauss_task *task, double sigma);
/* The two halves of dpf_dgauss_params: the choice of (m, r) (which sums the acceptance rate
 * of a few candidates for small sigma: callers may cache it), and the constants. */
void dpf_dgauss_choose(double sigma, int *m, int *r);
void dpf_dgauss_setup(dpf_dgauss_task *task, double sigma, int m, int r);
/* The expected acceptance rate of the proposal (m, r) for sigma (approximate; for tests). */
double dpf_dgauss_efficiency(double sigma, int m, int r);
void dpf_dgauss_chunk(void *task, int64_t chunk, int slot);
/* The computed acceptance probability a(x) of proposal |x| = G M + V (for tests). */
double dpf_dgauss_accept_prob(const dpf_dgauss_task *task, double g, double v);

/* ---- selection (report noisy max, permute-and-flip, top-k, exponential mechanism) ------ */
enum dpf_noise { DPF_NOISE_LAPLACE = 0, DPF_NOISE_EXPONENTIAL = 1, DPF_NOISE_GUMBEL = 2 };
/* Element types of the utilities (converted to double one batch at a time, as numpy's astype
 * would: int64 rounds to nearest, float32 and int32 are exact). */
enum dpf_dtype { DPF_F64 = 0, DPF_F32 = 1, DPF_I64 = 2, DPF_I32 = 3 };

typedef struct {
    uint32_t key[8];
    int noise;              /* enum dpf_noise: unit-scale noise added to each score */
    double umax;            /* scores are (u - umax) * inv_scale + noise: shifting by the */
    double inv_scale;       /* largest utility first keeps huge utilities from swamping it */
    const void *u;
    int utype;              /* enum dpf_dtype */
    int64_t n;
    /* Per chunk: the index and value of its largest noisy score, the lowest index on ties,
     * (-1, -inf) if all are -inf. */
    int64_t *best_idx;
    double *best_val;
    /* Top-k (k > 0): per slot, a heap of the k best (score, index) pairs seen by that thread,
     * at heap_val/heap_idx + slot*k, with heap_len[slot] entries.  NULL when k == 0. */
    int64_t k;
    double *heap_val;
    int64_t *heap_idx;
    int64_t *heap_len;
} dpf_select_task;

void dpf_select_chunk(void *task, int64_t chunk, int slot);

typedef struct {
    const void *u;
    int utype;
    int64_t n;
    double umax, a;
    double *sums;           /* per chunk */
} dpf_sum_exp_task;

/* sums[chunk] = sum of exp((u_i - umax) * a) over the chunk, in a fixed order (the same on
 * every target); -inf utilities contribute 0. */
void dpf_sum_exp_chunk(void *task, int64_t chunk, int slot);

/* Inverse CDF within u[lo, lo + n), n <= DPF_CHUNK: with T the sum of exp((u_j - umax) * a)
 * over that range in index order, the smallest i whose running sum exceeds v * T (v uniform in
 * [0, 1)); the last positive weight if v * T rounds up to T; -1 if all weights are 0; -2 if
 * n exceeds DPF_CHUNK. */
int64_t dpf_find_exp(const void *u, int utype, int64_t lo, int64_t n, double umax, double a,
                     double v);

/* ---- checks before a release ----------------------------------------------------------- */
/* The smallest and largest of x[0:n] (n >= 1) of type dtype (enum dpf_dtype), in one
 * vectorized pass: into flo/fhi for floating types (both NaN if any element is NaN), into
 * ilo/ihi for integer types. */
void dpf_value_range(const void *x, int dtype, size_t n, double *flo, double *fhi,
                     int64_t *ilo, int64_t *ihi);

/* ---- test shims ------------------------------------------------------------------------ */
/* The unit selection noise of word w with n0 leading zeros, and exp as computed. */
double dpf_select_noise_from_bits(uint64_t w, uint64_t n0, int kind);
double dpf_exp_nonpos_shim(double x);
/* The sample a word gives when its binade has n0 leading zeros (n0 >= 0 as given, bypassing
 * the binade bits). */
double dpf_dlap_from_bits(uint64_t w, uint64_t n0, const dpf_dlap_params *p);
double dpf_uniform_from_bits(uint64_t w, uint64_t n0);
/* The unfloored magnitude t*(c + L) as fb + rest (fb integral), for error measurements. */
void dpf_dlap_z_from_bits(uint64_t w, uint64_t n0, const dpf_dlap_params *p, double *fb,
                          double *rest);

#ifdef __cplusplus
}
#endif
#endif
