/*
 * ChaCha20 keystream (RFC 8439 block function, 64-bit counter / 64-bit nonce
 * layout, see chacha20.h).  Three kernels: portable scalar, AVX2 (8 blocks per
 * pass) and AVX-512 (16 blocks per pass), chosen by the one instruction-set switch
 * of simd.h.
 */
#include "chacha20.h"
#include "simd.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DPF_CHACHA_X86 1
#include <immintrin.h>
#else
#define DPF_CHACHA_X86 0
#endif

/* "expand 32-byte k" */
#define DPF_C0 0x61707865u
#define DPF_C1 0x3320646eu
#define DPF_C2 0x79622d32u
#define DPF_C3 0x6b206574u

/* ------------------------------------------------------------------------ */
/* Scalar                                                                    */
/* ------------------------------------------------------------------------ */

#define DPF_ROTL32(v, n) (((v) << (n)) | ((v) >> (32 - (n))))

#define DPF_QR(a, b, c, d)                                 \
    do {                                                   \
        a += b; d ^= a; d = DPF_ROTL32(d, 16);             \
        c += d; b ^= c; b = DPF_ROTL32(b, 12);             \
        a += b; d ^= a; d = DPF_ROTL32(d, 8);              \
        c += d; b ^= c; b = DPF_ROTL32(b, 7);              \
    } while (0)

static void blocks_scalar(const uint32_t key[8], uint64_t counter,
                          uint64_t nonce, uint64_t *out, size_t nblocks)
{
    uint32_t s[16];
    size_t blk;
    int i;

    s[0] = DPF_C0; s[1] = DPF_C1; s[2] = DPF_C2; s[3] = DPF_C3;
    for (i = 0; i < 8; i++)
        s[4 + i] = key[i];
    s[14] = (uint32_t)nonce;
    s[15] = (uint32_t)(nonce >> 32);

    for (blk = 0; blk < nblocks; blk++, counter++, out += 8) {
        uint32_t x0 = s[0], x1 = s[1], x2 = s[2], x3 = s[3];
        uint32_t x4 = s[4], x5 = s[5], x6 = s[6], x7 = s[7];
        uint32_t x8 = s[8], x9 = s[9], x10 = s[10], x11 = s[11];
        uint32_t x12 = (uint32_t)counter, x13 = (uint32_t)(counter >> 32);
        uint32_t x14 = s[14], x15 = s[15];

        for (i = 0; i < 10; i++) {
            DPF_QR(x0, x4, x8, x12);
            DPF_QR(x1, x5, x9, x13);
            DPF_QR(x2, x6, x10, x14);
            DPF_QR(x3, x7, x11, x15);
            DPF_QR(x0, x5, x10, x15);
            DPF_QR(x1, x6, x11, x12);
            DPF_QR(x2, x7, x8, x13);
            DPF_QR(x3, x4, x9, x14);
        }
        x0 += s[0]; x1 += s[1]; x2 += s[2]; x3 += s[3];
        x4 += s[4]; x5 += s[5]; x6 += s[6]; x7 += s[7];
        x8 += s[8]; x9 += s[9]; x10 += s[10]; x11 += s[11];
        x12 += (uint32_t)counter; x13 += (uint32_t)(counter >> 32);
        x14 += s[14]; x15 += s[15];

        /* Building the words arithmetically keeps the output defined as
         * uint64 values, independent of host byte order. */
        out[0] = x0 | (uint64_t)x1 << 32;
        out[1] = x2 | (uint64_t)x3 << 32;
        out[2] = x4 | (uint64_t)x5 << 32;
        out[3] = x6 | (uint64_t)x7 << 32;
        out[4] = x8 | (uint64_t)x9 << 32;
        out[5] = x10 | (uint64_t)x11 << 32;
        out[6] = x12 | (uint64_t)x13 << 32;
        out[7] = x14 | (uint64_t)x15 << 32;
    }
}

#if DPF_CHACHA_X86

/* ------------------------------------------------------------------------ */
/* AVX-512: one block per 32-bit lane, 16 blocks per pass.                  */
/* 16 state vectors + 16 inputs fit the 32 zmm registers, and vprold makes */
/* every rotate a single instruction, so the round loop needs no spills.    */
/* ------------------------------------------------------------------------ */

#define DPF_TARGET_AVX512 __attribute__((target("avx512f")))
#define DPF_TARGET_AVX2 __attribute__((target("avx2")))
#define DPF_INLINE static inline __attribute__((always_inline))

#define Z_QR(a, b, c, d)                                                     \
    do {                                                                     \
        a = _mm512_add_epi32(a, b); d = _mm512_xor_si512(d, a);              \
        d = _mm512_rol_epi32(d, 16);                                         \
        c = _mm512_add_epi32(c, d); b = _mm512_xor_si512(b, c);              \
        b = _mm512_rol_epi32(b, 12);                                         \
        a = _mm512_add_epi32(a, b); d = _mm512_xor_si512(d, a);              \
        d = _mm512_rol_epi32(d, 8);                                          \
        c = _mm512_add_epi32(c, d); b = _mm512_xor_si512(b, c);              \
        b = _mm512_rol_epi32(b, 7);                                          \
    } while (0)

/* Turn 4 word-vectors (words 4g..4g+3 of all 16 blocks) into 4 vectors whose
 * 128-bit lane k holds those 4 words of block 4k+r, r = 0..3. */
#define Z_T4(a, b, c, d)                                                     \
    do {                                                                     \
        __m512i t0_ = _mm512_unpacklo_epi32(a, b);                           \
        __m512i t1_ = _mm512_unpackhi_epi32(a, b);                           \
        __m512i t2_ = _mm512_unpacklo_epi32(c, d);                           \
        __m512i t3_ = _mm512_unpackhi_epi32(c, d);                           \
        a = _mm512_unpacklo_epi64(t0_, t2_);                                 \
        b = _mm512_unpackhi_epi64(t0_, t2_);                                 \
        c = _mm512_unpacklo_epi64(t1_, t3_);                                 \
        d = _mm512_unpackhi_epi64(t1_, t3_);                                 \
    } while (0)

/* 4x4 transpose of 128-bit lanes across word groups: u0..u3 are groups 0..3
 * for block residue r; emits blocks r, 4+r, 8+r, 12+r. */
#define Z_STORE4(p, r, u0, u1, u2, u3)                                       \
    do {                                                                     \
        __m512i a_ = _mm512_shuffle_i32x4(u0, u1, 0x44);                     \
        __m512i b_ = _mm512_shuffle_i32x4(u0, u1, 0xee);                     \
        __m512i c_ = _mm512_shuffle_i32x4(u2, u3, 0x44);                     \
        __m512i d_ = _mm512_shuffle_i32x4(u2, u3, 0xee);                     \
        _mm512_storeu_si512((void *)((p) + 8 * (r)),                         \
                            _mm512_shuffle_i32x4(a_, c_, 0x88));             \
        _mm512_storeu_si512((void *)((p) + 8 * (4 + (r))),                   \
                            _mm512_shuffle_i32x4(a_, c_, 0xdd));             \
        _mm512_storeu_si512((void *)((p) + 8 * (8 + (r))),                   \
                            _mm512_shuffle_i32x4(b_, d_, 0x88));             \
        _mm512_storeu_si512((void *)((p) + 8 * (12 + (r))),                  \
                            _mm512_shuffle_i32x4(b_, d_, 0xdd));             \
    } while (0)

DPF_TARGET_AVX512 DPF_INLINE void
core16_avx512(const uint32_t key[8], uint64_t counter, uint64_t nonce,
              uint64_t *out)
{
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                           11, 12, 13, 14, 15);
    const __m512i hi0 = _mm512_set1_epi32((int)(uint32_t)(counter >> 32));
    const __m512i ctr_lo =
        _mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)counter), iota);
    /* A lane whose low word wrapped must carry into the high word. */
    const __mmask16 carry = _mm512_cmplt_epu32_mask(ctr_lo, iota);
    const __m512i ctr_hi =
        _mm512_mask_add_epi32(hi0, carry, hi0, _mm512_set1_epi32(1));
    const __m512i n0 = _mm512_set1_epi32((int)(uint32_t)nonce);
    const __m512i n1 = _mm512_set1_epi32((int)(uint32_t)(nonce >> 32));
    const __m512i k0 = _mm512_set1_epi32((int)key[0]);
    const __m512i k1 = _mm512_set1_epi32((int)key[1]);
    const __m512i k2 = _mm512_set1_epi32((int)key[2]);
    const __m512i k3 = _mm512_set1_epi32((int)key[3]);
    const __m512i k4 = _mm512_set1_epi32((int)key[4]);
    const __m512i k5 = _mm512_set1_epi32((int)key[5]);
    const __m512i k6 = _mm512_set1_epi32((int)key[6]);
    const __m512i k7 = _mm512_set1_epi32((int)key[7]);
    const __m512i c0 = _mm512_set1_epi32((int)DPF_C0);
    const __m512i c1 = _mm512_set1_epi32((int)DPF_C1);
    const __m512i c2 = _mm512_set1_epi32((int)DPF_C2);
    const __m512i c3 = _mm512_set1_epi32((int)DPF_C3);

    __m512i x0 = c0, x1 = c1, x2 = c2, x3 = c3;
    __m512i x4 = k0, x5 = k1, x6 = k2, x7 = k3;
    __m512i x8 = k4, x9 = k5, x10 = k6, x11 = k7;
    __m512i x12 = ctr_lo, x13 = ctr_hi, x14 = n0, x15 = n1;
    int i;

    for (i = 0; i < 10; i++) {
        Z_QR(x0, x4, x8, x12);
        Z_QR(x1, x5, x9, x13);
        Z_QR(x2, x6, x10, x14);
        Z_QR(x3, x7, x11, x15);
        Z_QR(x0, x5, x10, x15);
        Z_QR(x1, x6, x11, x12);
        Z_QR(x2, x7, x8, x13);
        Z_QR(x3, x4, x9, x14);
    }

    x0 = _mm512_add_epi32(x0, c0);   x1 = _mm512_add_epi32(x1, c1);
    x2 = _mm512_add_epi32(x2, c2);   x3 = _mm512_add_epi32(x3, c3);
    x4 = _mm512_add_epi32(x4, k0);   x5 = _mm512_add_epi32(x5, k1);
    x6 = _mm512_add_epi32(x6, k2);   x7 = _mm512_add_epi32(x7, k3);
    x8 = _mm512_add_epi32(x8, k4);   x9 = _mm512_add_epi32(x9, k5);
    x10 = _mm512_add_epi32(x10, k6); x11 = _mm512_add_epi32(x11, k7);
    x12 = _mm512_add_epi32(x12, ctr_lo);
    x13 = _mm512_add_epi32(x13, ctr_hi);
    x14 = _mm512_add_epi32(x14, n0); x15 = _mm512_add_epi32(x15, n1);

    Z_T4(x0, x1, x2, x3);
    Z_T4(x4, x5, x6, x7);
    Z_T4(x8, x9, x10, x11);
    Z_T4(x12, x13, x14, x15);

    Z_STORE4(out, 0, x0, x4, x8, x12);
    Z_STORE4(out, 1, x1, x5, x9, x13);
    Z_STORE4(out, 2, x2, x6, x10, x14);
    Z_STORE4(out, 3, x3, x7, x11, x15);
}

DPF_TARGET_AVX512 static void
blocks_avx512(const uint32_t key[8], uint64_t counter, uint64_t nonce,
              uint64_t *out, size_t nblocks)
{
    while (nblocks >= 16) {
        core16_avx512(key, counter, nonce, out);
        counter += 16;
        out += 128;
        nblocks -= 16;
    }
    /* A single block is cheaper in scalar code than a 16-wide pass. */
    if (nblocks > 1) {
        uint64_t tmp[128] __attribute__((aligned(64)));
        core16_avx512(key, counter, nonce, tmp);
        memcpy(out, tmp, nblocks * 64);
    } else if (nblocks == 1) {
        blocks_scalar(key, counter, nonce, out, 1);
    }
}

/* ------------------------------------------------------------------------ */
/* AVX2: one block per 32-bit lane, 8 blocks per pass.  With only 16 ymm   */
/* registers some state is spilled; the compiler chooses what.              */
/* ------------------------------------------------------------------------ */

#define Y_ROT_SHUF(v, m) _mm256_shuffle_epi8(v, m)
#define Y_ROT_SHIFT(v, n) \
    _mm256_or_si256(_mm256_slli_epi32(v, n), _mm256_srli_epi32(v, 32 - (n)))

#define Y_QR(a, b, c, d)                                                     \
    do {                                                                     \
        a = _mm256_add_epi32(a, b); d = _mm256_xor_si256(d, a);              \
        d = Y_ROT_SHUF(d, rot16);                                            \
        c = _mm256_add_epi32(c, d); b = _mm256_xor_si256(b, c);              \
        b = Y_ROT_SHIFT(b, 12);                                              \
        a = _mm256_add_epi32(a, b); d = _mm256_xor_si256(d, a);              \
        d = Y_ROT_SHUF(d, rot8);                                             \
        c = _mm256_add_epi32(c, d); b = _mm256_xor_si256(b, c);              \
        b = Y_ROT_SHIFT(b, 7);                                               \
    } while (0)

/* Same lane-local 4x4 step as Z_T4: 128-bit half h of the results holds
 * words 4g..4g+3 of block 4h+r. */
#define Y_T4(a, b, c, d)                                                     \
    do {                                                                     \
        __m256i t0_ = _mm256_unpacklo_epi32(a, b);                           \
        __m256i t1_ = _mm256_unpackhi_epi32(a, b);                           \
        __m256i t2_ = _mm256_unpacklo_epi32(c, d);                           \
        __m256i t3_ = _mm256_unpackhi_epi32(c, d);                           \
        a = _mm256_unpacklo_epi64(t0_, t2_);                                 \
        b = _mm256_unpackhi_epi64(t0_, t2_);                                 \
        c = _mm256_unpacklo_epi64(t1_, t3_);                                 \
        d = _mm256_unpackhi_epi64(t1_, t3_);                                 \
    } while (0)

/* Halves of blocks r and 4+r from groups (g, g+1); off = 0 or 4 words. */
#define Y_STORE2(p, off, r, ua, ub)                                          \
    do {                                                                     \
        _mm256_storeu_si256((__m256i *)((p) + 8 * (r) + (off)),              \
                            _mm256_permute2x128_si256(ua, ub, 0x20));        \
        _mm256_storeu_si256((__m256i *)((p) + 8 * (4 + (r)) + (off)),        \
                            _mm256_permute2x128_si256(ua, ub, 0x31));        \
    } while (0)

DPF_TARGET_AVX2 DPF_INLINE void
core8_avx2(const uint32_t key[8], uint64_t counter, uint64_t nonce,
           uint64_t *out)
{
    const __m256i rot16 = _mm256_setr_epi8(
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    const __m256i rot8 = _mm256_setr_epi8(
        3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
        3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
    const __m256i ctr_lo =
        _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)counter), iota);
    /* No unsigned compare in AVX2: bias both sides; carry lanes get -1,
     * and subtracting -1 adds the carry. */
    const __m256i carry = _mm256_cmpgt_epi32(_mm256_xor_si256(iota, sign),
                                             _mm256_xor_si256(ctr_lo, sign));
    const __m256i ctr_hi = _mm256_sub_epi32(
        _mm256_set1_epi32((int)(uint32_t)(counter >> 32)), carry);

    __m256i x0 = _mm256_set1_epi32((int)DPF_C0);
    __m256i x1 = _mm256_set1_epi32((int)DPF_C1);
    __m256i x2 = _mm256_set1_epi32((int)DPF_C2);
    __m256i x3 = _mm256_set1_epi32((int)DPF_C3);
    __m256i x4 = _mm256_set1_epi32((int)key[0]);
    __m256i x5 = _mm256_set1_epi32((int)key[1]);
    __m256i x6 = _mm256_set1_epi32((int)key[2]);
    __m256i x7 = _mm256_set1_epi32((int)key[3]);
    __m256i x8 = _mm256_set1_epi32((int)key[4]);
    __m256i x9 = _mm256_set1_epi32((int)key[5]);
    __m256i x10 = _mm256_set1_epi32((int)key[6]);
    __m256i x11 = _mm256_set1_epi32((int)key[7]);
    __m256i x12 = ctr_lo, x13 = ctr_hi;
    __m256i x14 = _mm256_set1_epi32((int)(uint32_t)nonce);
    __m256i x15 = _mm256_set1_epi32((int)(uint32_t)(nonce >> 32));
    int i;

    for (i = 0; i < 10; i++) {
        Y_QR(x0, x4, x8, x12);
        Y_QR(x1, x5, x9, x13);
        Y_QR(x2, x6, x10, x14);
        Y_QR(x3, x7, x11, x15);
        Y_QR(x0, x5, x10, x15);
        Y_QR(x1, x6, x11, x12);
        Y_QR(x2, x7, x8, x13);
        Y_QR(x3, x4, x9, x14);
    }

    /* Finish two word groups at a time to keep register pressure low:
     * groups (0,1) give words 0-7 of each block, (2,3) words 8-15. */
    x0 = _mm256_add_epi32(x0, _mm256_set1_epi32((int)DPF_C0));
    x1 = _mm256_add_epi32(x1, _mm256_set1_epi32((int)DPF_C1));
    x2 = _mm256_add_epi32(x2, _mm256_set1_epi32((int)DPF_C2));
    x3 = _mm256_add_epi32(x3, _mm256_set1_epi32((int)DPF_C3));
    x4 = _mm256_add_epi32(x4, _mm256_set1_epi32((int)key[0]));
    x5 = _mm256_add_epi32(x5, _mm256_set1_epi32((int)key[1]));
    x6 = _mm256_add_epi32(x6, _mm256_set1_epi32((int)key[2]));
    x7 = _mm256_add_epi32(x7, _mm256_set1_epi32((int)key[3]));
    Y_T4(x0, x1, x2, x3);
    Y_T4(x4, x5, x6, x7);
    Y_STORE2(out, 0, 0, x0, x4);
    Y_STORE2(out, 0, 1, x1, x5);
    Y_STORE2(out, 0, 2, x2, x6);
    Y_STORE2(out, 0, 3, x3, x7);

    x8 = _mm256_add_epi32(x8, _mm256_set1_epi32((int)key[4]));
    x9 = _mm256_add_epi32(x9, _mm256_set1_epi32((int)key[5]));
    x10 = _mm256_add_epi32(x10, _mm256_set1_epi32((int)key[6]));
    x11 = _mm256_add_epi32(x11, _mm256_set1_epi32((int)key[7]));
    x12 = _mm256_add_epi32(x12, ctr_lo);
    x13 = _mm256_add_epi32(x13, ctr_hi);
    x14 = _mm256_add_epi32(x14, _mm256_set1_epi32((int)(uint32_t)nonce));
    x15 = _mm256_add_epi32(x15,
                           _mm256_set1_epi32((int)(uint32_t)(nonce >> 32)));
    Y_T4(x8, x9, x10, x11);
    Y_T4(x12, x13, x14, x15);
    Y_STORE2(out, 4, 0, x8, x12);
    Y_STORE2(out, 4, 1, x9, x13);
    Y_STORE2(out, 4, 2, x10, x14);
    Y_STORE2(out, 4, 3, x11, x15);
}

DPF_TARGET_AVX2 static void
blocks_avx2(const uint32_t key[8], uint64_t counter, uint64_t nonce,
            uint64_t *out, size_t nblocks)
{
    while (nblocks >= 8) {
        core8_avx2(key, counter, nonce, out);
        counter += 8;
        out += 64;
        nblocks -= 8;
    }
    if (nblocks > 1) {
        uint64_t tmp[64] __attribute__((aligned(32)));
        core8_avx2(key, counter, nonce, tmp);
        memcpy(out, tmp, nblocks * 64);
    } else if (nblocks == 1) {
        blocks_scalar(key, counter, nonce, out, 1);
    }
}

#endif /* DPF_CHACHA_X86 */

void dpf_chacha_blocks(const uint32_t key[8], uint64_t counter, uint64_t nonce,
                       uint64_t *out, size_t nblocks)
{
    if (nblocks == 0)
        return;
    switch (dpf_simd_level()) {
#if DPF_CHACHA_X86
    case DPF_SIMD_AVX512:
        blocks_avx512(key, counter, nonce, out, nblocks);
        return;
    case DPF_SIMD_AVX2:
        blocks_avx2(key, counter, nonce, out, nblocks);
        return;
#endif
    default:
        blocks_scalar(key, counter, nonce, out, nblocks);
        return;
    }
}

/* ------------------------------------------------------------------------ */
/* Buffered stream                                                           */
/* ------------------------------------------------------------------------ */

void dpf_chacha_init(dpf_chacha_t *st, const uint32_t key[8], uint64_t counter,
                     uint64_t nonce)
{
    /* Zeroed so the state's bytes are deterministic (e.g. when pickled). */
    memset(st->buf, 0, sizeof(st->buf));
    memcpy(st->key, key, sizeof(st->key));
    st->counter = counter;
    st->nonce = nonce;
    st->pos = DPF_CHACHA_BUF_WORDS;
    st->has_uint32 = 0;
    st->uinteger = 0;
}

void dpf_chacha_refill(dpf_chacha_t *st)
{
    dpf_chacha_blocks(st->key, st->counter, st->nonce, st->buf,
                      DPF_CHACHA_BUF_WORDS / 8);
    st->counter += DPF_CHACHA_BUF_WORDS / 8;
    st->pos = 0;
}

void dpf_chacha_fill(dpf_chacha_t *st, uint64_t *out, size_t n)
{
    size_t avail, nb;

    /* Unread buffered words come first: they precede block st->counter. */
    if (st->pos < DPF_CHACHA_BUF_WORDS) {
        avail = (size_t)(DPF_CHACHA_BUF_WORDS - st->pos);
        if (n <= avail) {
            memcpy(out, st->buf + st->pos, n * sizeof(uint64_t));
            st->pos += (int)n;
            return;
        }
        memcpy(out, st->buf + st->pos, avail * sizeof(uint64_t));
        out += avail;
        n -= avail;
        st->pos = DPF_CHACHA_BUF_WORDS;
    }

    /* Buffer is empty, so the stream continues exactly at st->counter. */
    nb = n / 8;
    if (nb > 0) {
        dpf_chacha_blocks(st->key, st->counter, st->nonce, out, nb);
        st->counter += nb;
        out += nb * 8;
        n -= nb * 8;
    }

    /* Tail: the rest of its block stays buffered for later reads. */
    if (n > 0) {
        dpf_chacha_refill(st);
        memcpy(out, st->buf, n * sizeof(uint64_t));
        st->pos = (int)n;
    }
}
