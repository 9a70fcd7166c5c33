#include "sampling.h"
#include "simd.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#define DPF_MANT_MASK ((UINT64_C(1) << 52) - 1)
#define DPF_SIGN_BIT (UINT64_C(1) << 52)
#define DPF_FAST_LIMIT (UINT64_C(1) << 53)
#define DPF_ONE_BITS UINT64_C(0x3FF0000000000000)
/* Mantissas above this give m > sqrt(2): 1 + 0x6a09e667f3bcc * 2^-52 < sqrt(2) < the next. */
#define DPF_SQRT2_MANT UINT64_C(0x6a09e667f3bcc)
/* 0x1.8p52: adding it to a double of magnitude < 2^51 leaves the integer in the low bits. */
#define DPF_MAGIC_I 6755399441055744.0
#define DPF_MAGIC_2P52 UINT64_C(0x4330000000000000)

static inline __attribute__((always_inline)) double dpf_u2d(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline __attribute__((always_inline)) uint64_t dpf_d2u(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Integer-valued double with |k| < 2^51 to int64, exactly, without a conversion
 * instruction that older vector units lack. */
static inline __attribute__((always_inline)) int64_t dpf_d2i(double k)
{
    return (int64_t)(dpf_d2u(k + DPF_MAGIC_I) - dpf_d2u(DPF_MAGIC_I));
}

/* Biased exponent of the 11 binade bits read as a number: 1023 + floor(log2 h), or 0 if
 * h == 0 (slow path; the caller fixes those samples). */
static inline __attribute__((always_inline)) uint64_t dpf_binade_exp(uint64_t w)
{
    uint64_t h = w >> 53;
    double hd = dpf_u2d(h | DPF_MAGIC_2P52) - 4503599627370496.0; /* exact: h < 2^11 */
    return dpf_d2u(hd) >> 52;
}

/* n = n0 + 1 as a double, for a word on the fast path: n0 = 10 - floor(log2 h). */
static inline __attribute__((always_inline)) double dpf_fast_n(uint64_t w)
{
    uint64_t eb = dpf_binade_exp(w);
    return 1034.0 - (dpf_u2d(eb | DPF_MAGIC_2P52) - 4503599627370496.0);
}

/* 2/(2k+1), k = 1..10: the series of 2*atanh(s) - 2s in z = s^2.  With |s| <= 0.1716 the
 * first omitted term is below 2^-60 relative to the result. */
#define DPF_A1 (2.0 / 3.0)
#define DPF_A2 (2.0 / 5.0)
#define DPF_A3 (2.0 / 7.0)
#define DPF_A4 (2.0 / 9.0)
#define DPF_A5 (2.0 / 11.0)
#define DPF_A6 (2.0 / 13.0)
#define DPF_A7 (2.0 / 15.0)
#define DPF_A8 (2.0 / 17.0)
#define DPF_A9 (2.0 / 19.0)
#define DPF_A10 (2.0 / 21.0)

/* ln(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1], f exact; ln(mr) below is this with
 * f = mr - 1 (exact for mr in [sqrt(1/2), sqrt(2))).  With s = f/(2+f),
 * ln(1+f) = f - (f^2/2 - s*(f^2/2 + R(s^2))) keeps the large term f exact and puts the
 * rounding of s into a small correction. */
static inline __attribute__((always_inline)) double dpf_log1p_red(double f)
{
    double s = f / (2.0 + f);
    double z = s * s;
    /* R(z) = sum_{k=1..10} A_k z^k by Estrin's scheme: a short dependency chain for the
     * vector loops (all terms are positive and z <= 0.0295, so the order costs nothing). */
    double z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
    double p1 = DPF_A1 + DPF_A2 * z, p2 = DPF_A3 + DPF_A4 * z, p3 = DPF_A5 + DPF_A6 * z;
    double p4 = DPF_A7 + DPF_A8 * z, p5 = DPF_A9 + DPF_A10 * z;
    double r = z * (((p1 + p2 * z2) + (p3 + p4 * z2) * z4) + p5 * z8);
    double hfsq = 0.5 * f * f;
    return f - (hfsq - s * (hfsq + r));
}

static inline __attribute__((always_inline)) double dpf_ln_near1(double mr)
{
    return dpf_log1p_red(mr - 1.0);
}

/* The mantissa m = 1.mant of word w, reduced to [sqrt(1/2), sqrt(2)) as mr = m or m/2,
 * and n adjusted so that n*ln2 - ln(mr) stays -ln U. */
static inline __attribute__((always_inline)) double dpf_reduce(uint64_t w, double n, double *nr)
{
    uint64_t mant = w & DPF_MANT_MASK;
    double m = dpf_u2d(mant | DPF_ONE_BITS);
    int above = mant > DPF_SQRT2_MANT;
    /* Selects of constants rather than branches, so the loops vectorize. */
    *nr = n - (above ? 1.0 : 0.0);
    return m * (above ? 0.5 : 1.0);
}

/* ln 2 split so that k*LN2_HI is exact for |k| < 2^11. */
#define DPF_LN2_HI 6.93147180369123816490e-01
#define DPF_LN2_LO 1.90821492927058770002e-10

/* L = -ln U for the full-precision uniform of word w with n = n0 + 1, as a double. */
static inline __attribute__((always_inline)) double dpf_neg_log_u(uint64_t w, double n)
{
    double nr;
    double mr = dpf_reduce(w, n, &nr);
    return nr * DPF_LN2_HI - (dpf_ln_near1(mr) - nr * DPF_LN2_LO);
}

/* ln x for a positive normal double x. */
static inline __attribute__((always_inline)) double dpf_ln(double x)
{
    uint64_t b = dpf_d2u(x);
    uint64_t mant = b & DPF_MANT_MASK;
    int above = mant > DPF_SQRT2_MANT;
    double e = (dpf_u2d(((b >> 52) & 0x7FF) | DPF_MAGIC_2P52) - 4503599627370496.0) - 1023.0
               + (above ? 1.0 : 0.0);
    double mr = dpf_u2d(mant | DPF_ONE_BITS) * (above ? 0.5 : 1.0);
    return e * DPF_LN2_HI + (dpf_ln_near1(mr) + e * DPF_LN2_LO);
}

/* 1/k!, k = 2..13: exp(r) on |r| <= ln2/2 to below 2^-57 relative. */
#define DPF_E2 (1.0 / 2.0)
#define DPF_E3 (1.0 / 6.0)
#define DPF_E4 (1.0 / 24.0)
#define DPF_E5 (1.0 / 120.0)
#define DPF_E6 (1.0 / 720.0)
#define DPF_E7 (1.0 / 5040.0)
#define DPF_E8 (1.0 / 40320.0)
#define DPF_E9 (1.0 / 362880.0)
#define DPF_E10 (1.0 / 3628800.0)
#define DPF_E11 (1.0 / 39916800.0)
#define DPF_E12 (1.0 / 479001600.0)
#define DPF_E13 (1.0 / 6227020800.0)

/* exp(x) for x <= 0, flushed to 0 below -708 (NaN-free; -inf gives 0): x = k ln2 + r, exp(r)
 * by its series, times 2^k.  A result is 0 or a normal double (exp(-708) is 1.49 * 2^-1022),
 * never subnormal: subnormal arithmetic is slower on many CPUs, and the exponential mechanism's
 * running time must not depend on the utilities.  Below -708 the same work is done on -708. */
#define DPF_EXP_FLUSH (-708.0)
static inline __attribute__((always_inline)) double dpf_exp_nonpos(double x)
{
    double xc = x < DPF_EXP_FLUSH ? DPF_EXP_FLUSH : x;       /* also maps -inf */
    double k = __builtin_rint(xc * 1.4426950408889634);      /* >= -1021 */
    double r = (xc - k * DPF_LN2_HI) - k * DPF_LN2_LO;
    double p = 1.0 + r * (1.0 + r * (DPF_E2 + r * (DPF_E3 + r * (DPF_E4 + r * (DPF_E5
               + r * (DPF_E6 + r * (DPF_E7 + r * (DPF_E8 + r * (DPF_E9 + r * (DPF_E10
               + r * (DPF_E11 + r * (DPF_E12 + r * DPF_E13))))))))))));
    double v = p * dpf_u2d((uint64_t)(int64_t)dpf_d2i(k + 1023.0) << 52);
    return x < DPF_EXP_FLUSH ? 0.0 : v;
}

/* exp(x) for x <= 0 as the discrete Gaussian's acceptance probability: 0 below -708 (an
 * absolute error under 1e-307), the series evaluated by Estrin's scheme so that the
 * dependency chain is short (this is the sampler's hot loop). */
static inline __attribute__((always_inline)) double dpf_exp_accept(double x)
{
    double xc = x < -708.0 ? -708.0 : x;
    double k = __builtin_rint(xc * 1.4426950408889634);
    double r = (xc - k * DPF_LN2_HI) - k * DPF_LN2_LO;
    double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    double q0 = 1.0 + r, q1 = DPF_E2 + DPF_E3 * r, q2 = DPF_E4 + DPF_E5 * r;
    double q3 = DPF_E6 + DPF_E7 * r, q4 = DPF_E8 + DPF_E9 * r, q5 = DPF_E10 + DPF_E11 * r;
    double s0 = q0 + q1 * r2, s1 = q2 + q3 * r2, s2 = q4 + q5 * r2;
    double p = (s0 + s1 * r4) + (s2 + DPF_E12 * r4) * r8;
    double v = p * dpf_u2d((uint64_t)dpf_d2i(k + 1023.0) << 52);
    return x < -708.0 ? 0.0 : v;
}

/* dpf_exp_accept(x) to within DPF_EXP_APPROX_ERR absolute, for the vector loop of the discrete
 * Gaussian: the same reduction (so the same k and r), the series cut after r^7.  The omitted
 * terms sum to below |r|^8/8! * 1.01 <= 0.3466^8/40320 * 1.01 < 5.3e-9 relative to 2^k <= 1
 * (x <= 0), and the two evaluations round differently by a few 2^-53: under 2^-27 in all.
 * The loop only trusts floor(2^abits p) where p +- DPF_EXP_APPROX_ERR has the same floor, and
 * hands every other proposal to the exact scalar path: its decisions are those of
 * dpf_exp_accept, bit for bit. */
#define DPF_EXP_APPROX_ERR 0x1p-26
static inline __attribute__((always_inline)) double dpf_exp_approx(double x)
{
    double xc = x < -708.0 ? -708.0 : x;
    double k = __builtin_rint(xc * 1.4426950408889634);
    double r = (xc - k * DPF_LN2_HI) - k * DPF_LN2_LO;
    double r2 = r * r, r4 = r2 * r2;
    double q0 = 1.0 + r, q1 = DPF_E2 + DPF_E3 * r, q2 = DPF_E4 + DPF_E5 * r;
    double q3 = DPF_E6 + DPF_E7 * r;
    double p = (q0 + q1 * r2) + (q2 + q3 * r2) * r4;
    double v = p * dpf_u2d((uint64_t)dpf_d2i(k + 1023.0) << 52);
    return x < -708.0 ? 0.0 : v;
}

/* Gumbel(0, 1) noise -ln E, with E an Exp(1) variable computed to *relative* accuracy near 0:
 * bit 52 picks E <= ln 2 or E > ln 2 (each probability 1/2).  Below, E = -ln(1 - V/2), as
 * -log1p(f) from the exact f = -V/2, or, for V > 0.58, as ln 2 - log1p(1 - V) (1 - V exact);
 * above, E = ln 2 + L by memorylessness.  One series serves whichever branch is taken, so
 * the vector loop evaluates two logarithms per sample, not four.  v is the full-precision
 * uniform V of the word and n = n0 + 1; V below 2^-60 is left to dpf_gumbel_deep. */
static inline __attribute__((always_inline)) double dpf_gumbel(uint64_t w, double n, double v)
{
    double nr;
    double mr = dpf_reduce(w, n, &nr);
    double f = -0.5 * v;                           /* exact */
    int low = (w & DPF_SIGN_BIT) != 0;
    int near = f >= -0.29;                         /* the series' range */
    double x = low ? (near ? f : 1.0 - v) : mr - 1.0;
    double sr = dpf_log1p_red(x);
    double e_low = near ? 0.0 - sr : (DPF_LN2_HI - sr) + DPF_LN2_LO;
    double e_high = (DPF_LN2_HI + (nr * DPF_LN2_HI - (sr - nr * DPF_LN2_LO))) + DPF_LN2_LO;
    return 0.0 - dpf_ln(low ? e_low : e_high);
}

/* The low branch for V < 2^-60, where -ln(1 - V/2) is V/2 to double precision and V may be
 * subnormal: -ln(V/2) = L + ln 2.  Only the scalar slow path reaches such V. */
static inline double dpf_gumbel_any(uint64_t w, uint64_t n0, double v)
{
    if ((w & DPF_SIGN_BIT) && n0 >= 60)
        return (dpf_neg_log_u(w, (double)(n0 + 1)) + DPF_LN2_HI) + DPF_LN2_LO;
    return dpf_gumbel(w, (double)(n0 + 1), v);
}

/* Unit-scale selection noise from word w, n = n0 + 1 and v, the word's uniform (fast path:
 * n0 <= 10). */
static inline __attribute__((always_inline)) double dpf_select_noise(uint64_t w, double n,
                                                                     double v, int kind)
{
    if (kind == DPF_NOISE_GUMBEL)
        return dpf_gumbel(w, n, v);
    double L = dpf_neg_log_u(w, n);                   /* Exp(1), absolute accuracy */
    if (kind == DPF_NOISE_LAPLACE)
        return (w & DPF_SIGN_BIT) ? 0.0 - L : L;
    return L;
}

/* Any binade (the slow path and the test shim). */
static double dpf_select_noise_any(uint64_t w, uint64_t n0, int kind)
{
    double v = dpf_uniform_from_bits(w, n0);
    if (kind == DPF_NOISE_GUMBEL)
        return dpf_gumbel_any(w, n0, v);
    return dpf_select_noise(w, (double)(n0 + 1), v, kind);
}

/* (u - umax) * inv, with finite utilities kept finite (at -DBL_MAX) so that they still beat
 * excluded (-inf) candidates after noise is added. */
/* x, or 0 if x is subnormal: bit operations only, so a subnormal costs what a normal does. */
static inline __attribute__((always_inline)) double dpf_flush_subnormal(double x)
{
    return (dpf_d2u(x) & UINT64_C(0x7ff0000000000000)) ? x : 0.0;
}

/* (u - umax) * a for a selection kernel, with subnormal utilities and a subnormal result
 * flushed to 0.  Subnormal arithmetic is slower on many CPUs (11 ns more per candidate for the
 * Gumbel kernel here): flushing makes a kernel's time independent of the utilities.  It moves
 * a utility or a scaled difference by less than 2^-1022, far inside the floating-point
 * error the privacy analysis already allows (dpfast.mechanisms.selection). */
static inline __attribute__((always_inline)) double dpf_shift(double u, double umax, double a)
{
    return dpf_flush_subnormal((dpf_flush_subnormal(u) - dpf_flush_subnormal(umax)) * a);
}

static inline __attribute__((always_inline)) double dpf_shifted(double u, double umax,
                                                                double inv)
{
    double d = dpf_shift(u, umax, inv);
    return (u > -INFINITY && d < -DBL_MAX) ? -DBL_MAX : d;
}

/*
 * t*(c + L) for word w and n = n0 + 1, as an integer fb plus a remainder rest (so the sample
 * magnitude is fb + floor(rest)).
 */
static inline __attribute__((always_inline)) void dpf_dlap_split(uint64_t w, double n,
                                                                 const dpf_dlap_params *p,
                                                                 double *fb, double *rest)
{
    double nr;
    double mr = dpf_reduce(w, n, &nr);
    double lnm = dpf_ln_near1(mr);
    /* t*(c + L) = nr*a_hi + (nr*a_lo + t*(c - ln mr)); the first term is exact, so only
     * quantities of size ~t are rounded. */
    double big = nr * p->a_hi;
    double small = nr * p->a_lo + p->t * (p->c - lnm);
    double ib = __builtin_floor(big);
    *fb = ib;
    *rest = (big - ib) + small;
}

/* Signed discrete Laplace sample, as an integer-valued double, from word w and n = n0 + 1. */
static inline __attribute__((always_inline)) double dpf_dlap_core(uint64_t w, double n,
                                                                  const dpf_dlap_params *p)
{
    double fb, rest;
    dpf_dlap_split(w, n, p, &fb, &rest);
    double mag = fb + __builtin_floor(rest);
    /* Sign from bit 52 (moved to bit 63); adding +0.0 turns -0.0 into +0.0, so a zero
     * sample never carries a sign. */
    return dpf_u2d(dpf_d2u(mag) ^ ((w & DPF_SIGN_BIT) << 11)) + 0.0;
}

/* Uniform double bits for a fast-path word: exponent 1022 - n0 = eb - 11. */
static inline __attribute__((always_inline)) uint64_t dpf_uniform_fast_bits(uint64_t w)
{
    return ((dpf_binade_exp(w) - 11) << 52) | (w & DPF_MANT_MASK);
}

double dpf_uniform_from_bits(uint64_t w, uint64_t n0)
{
    uint64_t mant = w & DPF_MANT_MASK;
    if (n0 <= 1021)
        return dpf_u2d(((1022 - n0) << 52) | mant);
    /* Subnormal binades: truncate, as for normal ones; below 2^-1074 (probability 2^-1074)
     * return the smallest subnormal so that 0 is never returned. */
    uint64_t shift = n0 - 1021;
    uint64_t sub = shift >= 64 ? 0 : ((UINT64_C(1) << 52) | mant) >> shift;
    return dpf_u2d(sub ? sub : 1);
}

double dpf_dlap_from_bits(uint64_t w, uint64_t n0, const dpf_dlap_params *p)
{
    return dpf_dlap_core(w, (double)(n0 + 1), p);
}

void dpf_dlap_z_from_bits(uint64_t w, uint64_t n0, const dpf_dlap_params *p, double *fb,
                          double *rest)
{
    dpf_dlap_split(w, (double)(n0 + 1), p, fb, rest);
}

void dpf_dlap_params_init(dpf_dlap_params *p, double t)
{
    static const double ln2_hi = 0x1.62e42fefa39efp-1;
    static const double ln2_lo = 2.3190468138462996e-17;
    /* t*ln2 as a double-double (hi + err + t*ln2_lo), then cut hi to 40 bits. */
    double hi = t * ln2_hi;
    double err = fma(t, ln2_hi, -hi) + t * ln2_lo;
    double a_hi = dpf_u2d(dpf_d2u(hi) & ~((UINT64_C(1) << 13) - 1));
    p->t = t;
    p->c = ln2_hi - log1p(exp(-1.0 / t)) + ln2_lo;
    p->a_hi = a_hi;
    p->a_lo = (hi - a_hi) + err;
}

/* ---- the extra stream ---- */

/* A chunk's extra stream (nonce 2c + 1), keyed on its first use: only a word whose 11 binade
 * bits are all zero (probability 2^-11) reads it. */
typedef struct {
    dpf_chacha_t st;
    const uint32_t *key;
    uint64_t nonce;
    int ready;
} dpf_extra_t;

static void dpf_extra_init(dpf_extra_t *e, const uint32_t *key, uint64_t nonce)
{
    e->key = key;
    e->nonce = nonce;
    e->ready = 0;
}

/* Key the extra stream on its first use. */
static int dpf_extra_zeros_ready(dpf_extra_t *e)
{
    if (!e->ready) {
        dpf_chacha_init(&e->st, e->key, 0, e->nonce);
        e->ready = 1;
    }
    return 1;
}

/* Leading zero bits of the extra stream, at most 64 * DPF_MAX_EXTRA_WORDS. */
static uint64_t dpf_extra_zeros(dpf_extra_t *e)
{
    uint64_t z = 0;
    (void)dpf_extra_zeros_ready(e);
    for (int k = 0; k < DPF_MAX_EXTRA_WORDS; k++) {
        uint64_t v = dpf_chacha_next64(&e->st);
        if (v)
            return z + (uint64_t)__builtin_clzll(v);
        z += 64;
    }
    return z;
}

/* ---- discrete Gaussian: one proposal (shared by the vector loops and the scalar fix-up, so
 * both give the same bits) ---- */

/* Leading zeros of the (47 - m)-bit field F != 0, as a double: lzc - (1023 + floor(log2 F)),
 * lzc = 47 - m - 1 + 1023 (F < 2^47 converts exactly). */
static inline __attribute__((always_inline)) double dpf_dg_lz(uint64_t f, double lzc)
{
    double fd = dpf_u2d(f | DPF_MAGIC_2P52) - 4503599627370496.0;
    return lzc - (dpf_u2d((dpf_d2u(fd) >> 52) | DPF_MAGIC_2P52) - 4503599627370496.0);
}

/* Small unsigned integer (< 2^52) to double, without a conversion instruction. */
static inline __attribute__((always_inline)) double dpf_u52(uint64_t v)
{
    return dpf_u2d(v | DPF_MAGIC_2P52) - 4503599627370496.0;
}

/* The exponent of a(x) for proposal word w (its fields past A and the sign) with lz leading
 * zeros in its geometric field: |x| = G M + V, G = floor((lz + 0.5) / r), V = j M/4 + low
 * (j from the 4 quarter bits, or V = low without them); *absx = |x|.  The exponent is
 * -(d^2/2 + cv low) + cq[j] with cq[j] = ln(lambda / w_j) - j r ln2 / 4 <= 0. */
static inline __attribute__((always_inline)) double dpf_dg_expo_q(uint64_t w, double lz,
                                                                  const dpf_dgauss_task *t,
                                                                  double *absx, int quart)
{
    double vd, lowd, cq;
    if (quart) {
        /* Selects and masked adds rather than a table lookup, so that the loops vectorize. */
        uint64_t js = (w >> (t->abits + 1)) & 15;
        uint64_t low = (w >> (t->abits + 5)) & t->lmask;
        double j1 = js >= 5 ? 1.0 : 0.0, j2 = js >= 9 ? 1.0 : 0.0, j3 = js >= 13 ? 1.0 : 0.0;
        lowd = dpf_u52(low);
        vd = lowd + ((j1 + j2) + j3) * t->Mq;
        cq = ((t->cq[0] + j1 * t->dq[0]) + j2 * t->dq[1]) + j3 * t->dq[2];
    } else {
        lowd = vd = dpf_u52((w >> (t->abits + 1)) & t->lmask);
        cq = 0.0;
    }
    double gq = __builtin_floor((lz + 0.5) * t->rinv);
    double ax = gq * t->M + vd;
    double d = (ax - t->s) * t->inv_s;
    *absx = ax;
    return (0.0 - (0.5 * (d * d) + t->cv * lowd)) + cq;
}

static inline __attribute__((always_inline)) double dpf_dg_expo(uint64_t w, double lz,
                                                                const dpf_dgauss_task *t,
                                                                double *absx)
{
    return t->jbits ? dpf_dg_expo_q(w, lz, t, absx, 1) : dpf_dg_expo_q(w, lz, t, absx, 0);
}

/* a(x), as the sampler computes it. */
static inline __attribute__((always_inline)) double dpf_dg_prob(uint64_t w, double lz,
                                                                const dpf_dgauss_task *t,
                                                                double *absx)
{
    return dpf_exp_accept(dpf_dg_expo(w, lz, t, absx));
}

/* ---- per-target loops ---- */
#define DPF_SFX scalar
#define DPF_TARGET
#include "sampling_kernels.inc"
#undef DPF_SFX
#undef DPF_TARGET

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DPF_HAVE_X86 1
#define DPF_SFX avx2
#define DPF_TARGET __attribute__((target("avx2")))
#include "sampling_kernels.inc"
#undef DPF_SFX
#undef DPF_TARGET
#define DPF_SFX avx512
#define DPF_TARGET __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
#define DPF_IS_AVX512 1
#include "sampling_kernels.inc"
#undef DPF_IS_AVX512
#undef DPF_SFX
#undef DPF_TARGET
#endif

typedef struct {
    int (*any_slow)(const uint64_t *, size_t);
    void (*dlap_int)(uint64_t *, size_t, const dpf_dlap_params *, const int64_t *);
    void (*dlap_grid)(uint64_t *, size_t, const dpf_dlap_params *, double, double,
                      const double *);
    void (*uniform)(uint64_t *, size_t);
    void (*dlap_i32)(uint64_t *, size_t, const dpf_dlap_params *, const int32_t *);
    void (*narrow)(const uint64_t *, size_t, int32_t *);
    void (*noisy)(uint64_t *, size_t, int, const double *, double, double);
    void (*sum_exp)(const double *, size_t, double, double, double *);
    void (*exp_weights)(const double *, size_t, double, double, double *);
    int (*dgauss)(const uint64_t *, size_t, const dpf_dgauss_task *, double *, uint64_t *);
    size_t (*compact)(const double *, const uint64_t *, size_t, double *);
    void (*range_f64)(const void *, size_t, double *, double *);
    void (*range_f32)(const void *, size_t, double *, double *);
    void (*range_i64)(const void *, size_t, int64_t *, int64_t *);
    void (*range_i32)(const void *, size_t, int64_t *, int64_t *);
} dpf_kernels;

#define DPF_KERNELS(SFX)                                                                    \
    {dpf_any_slow_##SFX, dpf_dlap_int_##SFX, dpf_dlap_grid_##SFX, dpf_uniform_##SFX,        \
     dpf_dlap_i32_##SFX, dpf_narrow_##SFX, dpf_noisy_##SFX, dpf_sum_exp_##SFX,              \
     dpf_exp_weights_##SFX, dpf_dgauss_batch_##SFX, dpf_compact_##SFX, dpf_range_f64_##SFX, dpf_range_f32_##SFX, \
     dpf_range_i64_##SFX, dpf_range_i32_##SFX}

static const dpf_kernels dpf_k_scalar = DPF_KERNELS(scalar);
#ifdef DPF_HAVE_X86
static const dpf_kernels dpf_k_avx2 = DPF_KERNELS(avx2);
static const dpf_kernels dpf_k_avx512 = DPF_KERNELS(avx512);
#endif

/* The loops of the instruction set that simd.h has chosen (the keystream follows it too). */
static const dpf_kernels *dpf_kernels_get(void)
{
#ifdef DPF_HAVE_X86
    switch (dpf_simd_level()) {
    case DPF_SIMD_AVX512:
        return &dpf_k_avx512;
    case DPF_SIMD_AVX2:
        return &dpf_k_avx2;
    default:
        break;
    }
#endif
    return &dpf_k_scalar;
}

/* Elements [start, start + n) of a call of total length `total`, chunk by chunk. */
static inline int64_t dpf_chunk_len(int64_t total, int64_t start)
{
    return total - start < DPF_CHUNK ? total - start : DPF_CHUNK;
}

/* Batches are one SIMD keystream pass of 16 blocks; a shorter batch (the end of a chunk, or a
 * small call) generates only the blocks it reads. */
enum { BATCH = DPF_CHACHA_BUF_WORDS };

static void dpf_batch_words(const uint32_t *key, uint64_t c, size_t off, uint64_t *buf,
                            size_t len)
{
    dpf_chacha_blocks(key, (uint64_t)(off / 8), 2 * c, buf, (len + 7) / 8);
}

/* The slow-path words of a batch (binade bits all zero) and their positions, saved before the
 * vector transform overwrites them; returns how many. */
static size_t dpf_save_slow(const dpf_kernels *kern, const uint64_t *buf, size_t len,
                            uint64_t *words, uint32_t *idx)
{
    size_t cnt = 0;
    if (kern->any_slow(buf, len))
        for (size_t i = 0; i < len; i++)
            if (buf[i] < DPF_FAST_LIMIT) {
                words[cnt] = buf[i];
                idx[cnt++] = (uint32_t)i;
            }
    return cnt;
}

/* ---- fills ---- */

/* Recompute, on the slow path, the samples whose words were saved before the transform; base
 * is the batch's base (or NULL). */
static void dpf_fix_slow(const dpf_fill_task *task, const void *base, dpf_extra_t *extra,
                         uint64_t *buf, const uint64_t *words, const uint32_t *idx,
                         size_t cnt)
{
    for (size_t j = 0; j < cnt; j++) {
        uint64_t w = words[j];
        uint64_t n0 = 11 + dpf_extra_zeros(extra);
        size_t i = idx[j];
        switch (task->mode) {
        case DPF_MODE_UNIFORM:
            buf[i] = dpf_d2u(dpf_uniform_from_bits(w, n0));
            break;
        case DPF_MODE_DLAP_INT: {
            int64_t k = dpf_d2i(dpf_dlap_core(w, (double)(n0 + 1), &task->lap));
            if (base)
                k += ((const int64_t *)base)[i];
            buf[i] = (uint64_t)k;
            break;
        }
        case DPF_MODE_DLAP_I32: {
            int64_t k = dpf_d2i(dpf_dlap_core(w, (double)(n0 + 1), &task->lap));
            if (base)
                k += ((const int32_t *)base)[i];
            buf[i] = (uint64_t)k;
            break;
        }
        default: {
            double k = dpf_dlap_core(w, (double)(n0 + 1), &task->lap);
            double v = base
                ? (__builtin_rint(((const double *)base)[i] * task->ginv) + k) * task->g
                : k * task->g;
            buf[i] = dpf_d2u(v);
            break;
        }
        }
    }
}

void dpf_fill_chunk(void *task_, int64_t chunk, int slot)
{
    const dpf_fill_task *task = task_;
    const dpf_kernels *kern = dpf_kernels_get();
    uint64_t tail[BATCH], slow_words[BATCH];
    uint32_t slow_idx[BATCH];
    int64_t start = chunk * DPF_CHUNK;
    (void)slot;
    if (start >= task->n)
        return;
    size_t n = (size_t)dpf_chunk_len(task->n, start);
    int narrow = task->mode == DPF_MODE_DLAP_I32;      /* 4-byte elements */
    size_t esize = narrow ? 4 : 8;
    char *dst = (char *)task->out + (size_t)start * esize;
    uint64_t c = task->chunk0 + (uint64_t)chunk;
    /* With a base, the keystream goes through the local buffer: out may be base itself, or
     * another mapping of the same file, and must not be written before base is read. */
    int alias = task->base != NULL;
    dpf_extra_t extra;
    dpf_extra_init(&extra, task->key, 2 * c + 1);

    for (size_t off = 0; off < n; off += BATCH) {
        size_t len = n - off < BATCH ? n - off : BATCH;
        /* Keystream goes straight into an 8-byte output and is transformed there while it
         * is in L1; narrow or aliased outputs, and short batches, go through the local
         * buffer. */
        uint64_t *buf = len == BATCH && !alias && !narrow ? (uint64_t *)dst + off : tail;
        dpf_batch_words(task->key, c, off, buf, len);
        size_t cnt = dpf_save_slow(kern, buf, len, slow_words, slow_idx);
        const void *base = task->base ? (const char *)task->base + (start + off) * esize : NULL;
        switch (task->mode) {
        case DPF_MODE_UNIFORM:
            kern->uniform(buf, len);
            break;
        case DPF_MODE_DLAP_INT:
            kern->dlap_int(buf, len, &task->lap, (const int64_t *)base);
            break;
        case DPF_MODE_DLAP_I32:
            kern->dlap_i32(buf, len, &task->lap, (const int32_t *)base);
            break;
        default:
            kern->dlap_grid(buf, len, &task->lap, task->g, task->ginv, (const double *)base);
            break;
        }
        if (cnt)
            dpf_fix_slow(task, base, &extra, buf, slow_words, slow_idx, cnt);
        if (narrow)
            kern->narrow(buf, len, (int32_t *)dst + off);
        else if (buf == tail)
            memcpy((uint64_t *)dst + off, tail, len * 8);
    }
}

/* ---- utilities of any element type ---- */

/* u[lo, lo + len) as doubles: the array itself when it holds doubles, else converted into
 * tmp (as numpy's astype(float64) would: int64 to nearest, float32 and int32 exactly). */
static const double *dpf_as_double(const void *u, int utype, int64_t lo, size_t len,
                                   double *tmp)
{
    if (utype == DPF_F32) {
        const float *f = (const float *)u + lo;
        for (size_t i = 0; i < len; i++)
            tmp[i] = (double)f[i];
        return tmp;
    }
    if (utype == DPF_I64) {
        const int64_t *q = (const int64_t *)u + lo;
        for (size_t i = 0; i < len; i++)
            tmp[i] = (double)q[i];
        return tmp;
    }
    if (utype == DPF_I32) {
        const int32_t *q = (const int32_t *)u + lo;
        for (size_t i = 0; i < len; i++)
            tmp[i] = (double)q[i];
        return tmp;
    }
    return (const double *)u + lo;
}

/* ---- selection ---- */

/* a beats b: a larger score, or the same score at a lower index. */
static inline int dpf_beats(double av, int64_t ai, double bv, int64_t bi)
{
    return av > bv || (av == bv && ai < bi);
}

/* Offer (v, i) to a min-heap (the worst entry at the root) that keeps the k best. */
static void dpf_heap_offer(double *hv, int64_t *hi, int64_t *len, int64_t k, double v,
                           int64_t i)
{
    int64_t j;
    if (*len < k) {
        j = (*len)++;
        while (j > 0) {                          /* sift up past better parents */
            int64_t p = (j - 1) / 2;
            if (!dpf_beats(hv[p], hi[p], v, i))
                break;
            hv[j] = hv[p];
            hi[j] = hi[p];
            j = p;
        }
    } else {
        if (!dpf_beats(v, i, hv[0], hi[0]))
            return;
        j = 0;                                   /* replace the root, sift down */
        for (;;) {
            int64_t l = 2 * j + 1, r = l + 1, w = j;
            double wv = v;
            int64_t wi = i;
            if (l < k && dpf_beats(wv, wi, hv[l], hi[l])) {
                w = l;
                wv = hv[l];
                wi = hi[l];
            }
            if (r < k && dpf_beats(wv, wi, hv[r], hi[r]))
                w = r;
            if (w == j)
                break;
            hv[j] = hv[w];
            hi[j] = hi[w];
            j = w;
        }
    }
    hv[j] = v;
    hi[j] = i;
}

void dpf_select_chunk(void *task_, int64_t chunk, int slot)
{
    dpf_select_task *task = task_;
    const dpf_kernels *kern = dpf_kernels_get();
    uint64_t buf[BATCH], slow_words[BATCH];
    uint32_t slow_idx[BATCH];
    double conv[BATCH];
    int64_t start = chunk * DPF_CHUNK;
    int64_t bi = -1;
    double bv = -INFINITY;
    if (start < task->n) {
        size_t n = (size_t)dpf_chunk_len(task->n, start);
        uint64_t c = (uint64_t)chunk;
        dpf_extra_t extra;
        dpf_extra_init(&extra, task->key, 2 * c + 1);
        for (size_t off = 0; off < n; off += BATCH) {
            size_t len = n - off < BATCH ? n - off : BATCH;
            int64_t lo = start + (int64_t)off;
            const double *ub = dpf_as_double(task->u, task->utype, lo, len, conv);
            dpf_batch_words(task->key, c, off, buf, len);
            size_t cnt = dpf_save_slow(kern, buf, len, slow_words, slow_idx);
            kern->noisy(buf, len, task->noise, ub, task->umax, task->inv_scale);
            for (size_t j = 0; j < cnt; j++) {
                size_t i = slow_idx[j];
                uint64_t n0 = 11 + dpf_extra_zeros(&extra);
                double nz = dpf_select_noise_any(slow_words[j], n0, task->noise);
                buf[i] = dpf_d2u(dpf_shifted(ub[i], task->umax, task->inv_scale) + nz);
            }
            for (size_t i = 0; i < len; i++) {
                double v = dpf_u2d(buf[i]);
                if (v > bv) {               /* strict: the lowest index wins a tie */
                    bv = v;
                    bi = lo + (int64_t)i;
                }
            }
            if (task->k > 0) {
                double *hv = task->heap_val + slot * task->k;
                int64_t *hi = task->heap_idx + slot * task->k;
                for (size_t i = 0; i < len; i++)
                    dpf_heap_offer(hv, hi, &task->heap_len[slot], task->k, dpf_u2d(buf[i]),
                                   lo + (int64_t)i);
            }
        }
    }
    task->best_idx[chunk] = bi;
    task->best_val[chunk] = bv;
}

/* ---- exponential mechanism ---- */

#define DPF_FIND_BLOCK 2048
#define DPF_FIND_BLOCKS (DPF_CHUNK / DPF_FIND_BLOCK)

void dpf_sum_exp_chunk(void *task_, int64_t chunk, int slot)
{
    /* Eight interleaved partial sums over the chunk, block by block, combined pairwise at the
     * end: a fixed order, so every target gives the same bits. */
    dpf_sum_exp_task *task = task_;
    const dpf_kernels *kern = dpf_kernels_get();
    double conv[DPF_FIND_BLOCK];
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t start = chunk * DPF_CHUNK;
    (void)slot;
    size_t n = (size_t)dpf_chunk_len(task->n, start);
    /* Doubles are summed in one pass; other types are converted a block at a time. */
    size_t block = task->utype == DPF_F64 ? n : DPF_FIND_BLOCK;
    for (size_t off = 0; off < n; off += block) {
        size_t len = n - off < block ? n - off : block;
        const double *ub = dpf_as_double(task->u, task->utype, start + (int64_t)off, len, conv);
        kern->sum_exp(ub, len, task->umax, task->a, acc);
    }
    task->sums[chunk] = ((acc[0] + acc[1]) + (acc[2] + acc[3]))
                        + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static inline size_t dpf_find_block_len(size_t n, size_t lo)
{
    return n - lo < DPF_FIND_BLOCK ? n - lo : DPF_FIND_BLOCK;
}

/* The running sum of w[0:n] from `acc`, in index order, written over w; returns the end and
 * sets *last to first + i for the last i with w[i] > 0 (unchanged if none): a select, not an
 * early exit, so the time does not depend on where the positive weights are. */
static double dpf_running_sum(double *w, size_t n, double acc, int64_t first, int64_t *last)
{
    int64_t l = *last;
    for (size_t i = 0; i < n; i++) {
        l = w[i] > 0.0 ? first + (int64_t)i : l;
        acc += w[i];
        w[i] = acc;
    }
    *last = l;
    return acc;
}

/* The weights exp((u - umax) * a) of block [lo, lo + len) of the range starting at `first`. */
static void dpf_block_weights(const void *u, int utype, int64_t first, size_t lo, size_t len,
                              double umax, double a, double *w)
{
    double conv[DPF_FIND_BLOCK];
    const double *ub = dpf_as_double(u, utype, first + (int64_t)lo, len, conv);
    dpf_kernels_get()->exp_weights(ub, len, umax, a, w);
}

int64_t dpf_find_exp(const void *u, int utype, int64_t first, int64_t n_, double umax,
                     double a, double v)
{
    /* The running sum of the weights in index order, block by block; the total is its last
     * value, summed in the order of the search, so that the target v * total always lies
     * inside the running sum (no mass piles up on a fallback). The first running sum above
     * the target marks the choice (it rose there, so that candidate's weight is positive).
     * Only the block ends are kept; the block holding the target is recomputed, unless it
     * is the last one, whose running sums are still in w. */
    double w[DPF_FIND_BLOCK], ends[DPF_FIND_BLOCKS];
    if (n_ > DPF_CHUNK || n_ < 0)
        return -2;
    size_t n = (size_t)n_;
    size_t nb = (n + DPF_FIND_BLOCK - 1) / DPF_FIND_BLOCK;
    double acc = 0.0;
    int64_t last = -1;                      /* the last candidate of positive weight */
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * DPF_FIND_BLOCK, len = dpf_find_block_len(n, lo);
        dpf_block_weights(u, utype, first, lo, len, umax, a, w);
        acc = ends[b] = dpf_running_sum(w, len, acc, (int64_t)lo, &last);
    }
    if (last < 0)
        return -1;
    double target = v * acc;
    for (size_t b = 0; b < nb; b++) {
        if (!(ends[b] > target))
            continue;
        size_t lo = b * DPF_FIND_BLOCK, len = dpf_find_block_len(n, lo);
        if (b != nb - 1) {
            dpf_block_weights(u, utype, first, lo, len, umax, a, w);
            int64_t unused = -1;
            dpf_running_sum(w, len, b ? ends[b - 1] : 0.0, (int64_t)lo, &unused);
        }
        size_t i = 0;
        while (!(w[i] > target))            /* ends at len - 1 at the latest */
            i++;
        return (int64_t)(lo + i);
    }
    return last;                            /* only if v * total rounded up to total */
}

/* ---- value ranges ---- */

void dpf_value_range(const void *x, int dtype, size_t n, double *flo, double *fhi,
                     int64_t *ilo, int64_t *ihi)
{
    const dpf_kernels *kern = dpf_kernels_get();
    switch (dtype) {
    case DPF_F64:
        kern->range_f64(x, n, flo, fhi);
        break;
    case DPF_F32:
        kern->range_f32(x, n, flo, fhi);
        break;
    case DPF_I64:
        kern->range_i64(x, n, ilo, ihi);
        break;
    default:
        kern->range_i32(x, n, ilo, ihi);
        break;
    }
}

double dpf_select_noise_from_bits(uint64_t w, uint64_t n0, int kind)
{
    return dpf_select_noise_any(w, n0, kind);
}

double dpf_exp_nonpos_shim(double x)
{
    return dpf_exp_nonpos(x);
}

/* ---- discrete Gaussian ---- */

#define DPF_LN2 0.6931471805599453

/* Quarter weights (sixteenths) of V's position in its block when m >= 2: close to the
 * 2^(-r u) slope inside a block, they lift the acceptance rate from about 0.5 to about 0.6. */
static const int dpf_dg_w16[4] = {5, 4, 4, 3};

/* lambda = min_j w_j 2^(j r / 4) and cq[j] = ln(lambda / w_j) - j r ln2 / 4 (<= 0), or 0. */
static void dpf_dg_quarters(int quart, int r, double cq[4])
{
    double lam = INFINITY;
    for (int j = 0; j < 4; j++)
        if (dpf_dg_w16[j] / 16.0 * exp2(j * r / 4.0) < lam)
            lam = dpf_dg_w16[j] / 16.0 * exp2(j * r / 4.0);
    for (int j = 0; j < 4; j++) {
        double c = log(lam / (dpf_dg_w16[j] / 16.0)) - j * r * DPF_LN2 / 4.0;
        cq[j] = quart ? (c < 0.0 ? c : 0.0) : 0.0;
    }
}

double dpf_dgauss_efficiency(double sigma, int m, int r)
{
    /* sum over x of q(x) a(x), blocks of M summed at up to 64 points each (exact for
     * M <= 64): only used to choose m and r, which change the speed, never the output
     * distribution. */
    double M = ldexp(1.0, m), cv = r * DPF_LN2 / M, s = sigma * sigma * cv;
    int quart = m >= 2;
    double cq[4];
    dpf_dg_quarters(quart, r, cq);
    double pg = 1.0 - ldexp(1.0, -r);
    int npts = M < 64.0 ? (int)M : 64;
    double step = M / npts, tot = 0.0;
    for (int g = 0; g < 1 << 20; g++) {
        double w = pg * ldexp(1.0, -r * g) / M;            /* both signs: 2 * q / 2 */
        if (w == 0.0 || (g * M > s + 12.0 * sigma + 1.0))   /* beyond: below e^-72 */
            break;
        double sub = 0.0;
        for (int k = 0; k < npts; k++) {
            double v = k * step, d = (g * M + v - s) / sigma;
            int j = quart ? (int)(4 * v / M) : 0;
            double wq = quart ? 4.0 * dpf_dg_w16[j] / 16.0 : 1.0;
            double low = v - (quart ? j * M / 4 : 0.0);
            sub += wq * exp(-0.5 * d * d - cv * low + cq[j]);
        }
        tot += w * sub * step;
    }
    /* "-0" is rejected: x = 0 comes from one sign only. */
    double w0 = quart ? 4.0 * dpf_dg_w16[0] / 16.0 : 1.0;
    return tot - 0.5 * (pg / M) * w0 * exp(-0.5 * (s / sigma) * (s / sigma) + cq[0]) * step;
}

void dpf_dgauss_choose(double sigma, int *m, int *r)
{
    int bm = 39, br = 1;
    double be = -1.0;
    double lg = sigma * DPF_LN2 >= 1.0 ? log2(sigma * DPF_LN2) : 0.0;
    if (lg >= 7.0) {
        /* Blocks of 128 or more: the acceptance rate depends on sigma / M only (the sums
         * are integrals), and is best for M = 2^round(log2(sigma ln2)) (within 0.01 of the
         * best where the two nearest powers tie). */
        bm = (int)rint(lg);
        if (bm > 39)
            bm = 39;
    } else if (sigma * DPF_LN2 >= 1.0) {
        /* r = 1: the proposal's decay 2^-1 per block of M; M near sigma ln 2 matches the
         * Gaussian's slope where most of its mass is. */
        int m0 = (int)floor(lg);
        for (int mm = m0 - 1; mm <= m0 + 2; mm++) {
            if (mm < 0)
                continue;
            double e = dpf_dgauss_efficiency(sigma, mm, 1);
            if (e > be) {
                be = e;
                bm = mm;
            }
        }
    } else {
        /* M = 1: a two-sided geometric of ratio 2^-r. */
        bm = 0;
        for (int rr = 1; rr <= 40; rr++) {
            double e = dpf_dgauss_efficiency(sigma, 0, rr);
            if (e > be) {
                be = e;
                br = rr;
            }
        }
    }
    *m = bm;
    *r = br;
}

void dpf_dgauss_params(dpf_dgauss_task *task, double sigma)
{
    int bm, br;
    dpf_dgauss_choose(sigma, &bm, &br);
    dpf_dgauss_setup(task, sigma, bm, br);
}

void dpf_dgauss_setup(dpf_dgauss_task *task, double sigma, int bm, int br)
{
    task->m = bm;
    task->r = br;
    task->jbits = bm >= 2 ? 4 : 0;
    task->lbits = bm >= 2 ? bm - 2 : bm;
    task->jmask = bm >= 2 ? 15 : 0;
    task->lmask = (UINT64_C(1) << task->lbits) - 1;
    dpf_dg_quarters(bm >= 2, br, task->cq);
    for (int j = 0; j < 3; j++)
        task->dq[j] = task->cq[j + 1] - task->cq[j];
    task->Mq = ldexp(1.0, task->lbits);
    /* 32-bit proposals (two a keystream word) while the geometric field keeps 11 bits or
     * more: 8 acceptance bits, a sign, the quarter and low bits of V, the field.  Otherwise a
     * word a proposal, with 16 acceptance bits. */
    task->narrow = 32 - 8 - 1 - task->jbits - task->lbits >= 11;
    task->abits = task->narrow ? 8 : 16;
    task->fbits = (task->narrow ? 32 : 64) - task->abits - 1 - task->jbits - task->lbits;
    task->M = ldexp(1.0, bm);
    task->rinv = 1.0 / br;
    task->cv = br * DPF_LN2 / task->M;
    task->s = sigma * sigma * task->cv;
    task->inv_s = 1.0 / sigma;
}

double dpf_dgauss_accept_prob(const dpf_dgauss_task *task, double g, double v)
{
    /* The proposal word with V = v in its fields (the acceptance bits and sign 0). */
    uint64_t vi = (uint64_t)v, w;
    if (task->jbits) {
        uint64_t j = vi >> task->lbits, js = j == 0 ? 0 : j == 1 ? 5 : j == 2 ? 9 : 13;
        w = (js << (task->abits + 1)) | ((vi & task->lmask) << (task->abits + 1 + 4));
    } else {
        w = vi << (task->abits + 1);
    }
    double ax;
    return dpf_dg_prob(w, g * task->r, task, &ax);
}

/* A full-precision uniform from the extra stream (its binade continued there too). */
static double dpf_extra_uniform(dpf_extra_t *e)
{
    (void)dpf_extra_zeros_ready(e);
    uint64_t v = dpf_chacha_next64(&e->st);
    uint64_t n0 = v >= DPF_FAST_LIMIT ? (uint64_t)(dpf_fast_n(v) - 1.0)
                                      : 11 + dpf_extra_zeros(e);
    return dpf_uniform_from_bits(v, n0);
}

/* Proposals flagged by the vector loop (bit 1 of acc: a geometric field of all zeros, or
 * A == floor(2^abits a(x))), redone in index order so that the extra stream is read the same
 * way whatever the vector width. */
static void dpf_dg_fix(const dpf_dgauss_task *t, dpf_extra_t *extra, const uint64_t *buf,
                       double *y, uint64_t *acc, size_t n)
{
    int sh = t->abits + 1 + t->jbits + t->lbits;
    uint64_t amask = (UINT64_C(1) << t->abits) - 1;
    double lzc = (double)(t->fbits - 1 + 1023), ascale = (double)(amask + 1);
    for (size_t j = 0; j < n; j++) {
        if ((j & 31) == 0) {
            /* Flags are rare: skip blocks of 32 without one in a loop that vectorizes. */
            uint64_t any = 0;
            size_t e = j + 32 < n ? j + 32 : n;
            for (size_t i = j; i < e; i++)
                any |= acc[i];
            if (!(any & 2)) {
                j = e - 1;
                continue;
            }
        }
        if (!(acc[j] & 2))
            continue;
        uint64_t w = t->narrow ? (uint64_t)((const uint32_t *)buf)[j] : buf[j], f = w >> sh;
        double lz = f ? dpf_dg_lz(f, lzc) : (double)t->fbits + (double)dpf_extra_zeros(extra);
        double ad = dpf_u52(w & amask), ax;
        double p = dpf_dg_prob(w, lz, t, &ax);
        double ps = p * ascale, P = floor(ps);
        uint64_t neg = (w >> t->abits) & 1;
        int neg0 = neg && ax == 0.0;
        y[j] = dpf_u2d(dpf_d2u(ax) ^ (neg << 63));
        int a = !neg0 && ad < P;
        if (!neg0 && ad == P)
            a = dpf_extra_uniform(extra) < ps - P;     /* ps - P is exact */
        acc[j] = (uint64_t)a;
    }
}

void dpf_dgauss_chunk(void *task_, int64_t chunk, int slot)
{
    const dpf_dgauss_task *task = task_;
    const dpf_kernels *kern = dpf_kernels_get();
    int64_t start = chunk * DPF_CHUNK;
    (void)slot;
    if (start >= task->n)
        return;
    size_t n = (size_t)dpf_chunk_len(task->n, start);
    uint64_t c = task->chunk0 + (uint64_t)chunk;
    dpf_extra_t extra;
    dpf_extra_init(&extra, task->key, 2 * c + 1);
    enum { NP = 2 * BATCH };                            /* proposals of a batch, at most */
    uint64_t buf[BATCH], acc[NP];
    double y[NP], kept[NP + 8];
    size_t np = task->narrow ? NP : BATCH;
    uint64_t counter = 0;
    size_t done = 0;
    while (done < n) {
        dpf_chacha_blocks(task->key, counter, 2 * c, buf, BATCH / 8);
        counter += BATCH / 8;
        if (kern->dgauss(buf, np, task, y, acc))
            dpf_dg_fix(task, &extra, buf, y, acc, np);
        /* Keep the accepted proposals, in order, without a branch per proposal (the
         * acceptance is a coin flip the predictor cannot learn). */
        size_t m = kern->compact(y, acc, np, kept);
        if (m > n - done)
            m = n - done;
        size_t i0 = (size_t)start + done;
        switch (task->kind) {
        case DPF_DG_GRID: {
            double *o = (double *)task->out + i0;
            const double *b = task->base ? (const double *)task->base + i0 : NULL;
            if (b)
                for (size_t j = 0; j < m; j++)
                    o[j] = (__builtin_rint(b[j] * task->ginv) + kept[j]) * task->g;
            else
                for (size_t j = 0; j < m; j++)
                    o[j] = kept[j] * task->g;
            break;
        }
        case DPF_DG_I32: {
            /* Computed in int64 and narrowed, as the discrete Laplace fill does: the caller
             * keeps the sum in range. */
            int32_t *o = (int32_t *)task->out + i0;
            const int32_t *b = task->base ? (const int32_t *)task->base + i0 : NULL;
            if (b)
                for (size_t j = 0; j < m; j++)
                    o[j] = (int32_t)((int64_t)b[j] + dpf_d2i(kept[j]));
            else
                for (size_t j = 0; j < m; j++)
                    o[j] = (int32_t)dpf_d2i(kept[j]);
            break;
        }
        default: {
            int64_t *o = (int64_t *)task->out + i0;
            const int64_t *b = task->base ? (const int64_t *)task->base + i0 : NULL;
            if (b)
                for (size_t j = 0; j < m; j++)
                    o[j] = b[j] + dpf_d2i(kept[j]);
            else
                for (size_t j = 0; j < m; j++)
                    o[j] = dpf_d2i(kept[j]);
            break;
        }
        }
        done += m;
    }
}
