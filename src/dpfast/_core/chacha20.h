/*
 * ChaCha20 keystream generator (RFC 8439 block function); the instruction set is the one
 * switch of simd.h.  Plain C99 so it can be pulled into Cython via `cdef extern`.
 *
 * State words: 0-3 "expand 32-byte k", 4-11 key, 12-13 a 64-bit block
 * counter (12 = low half), 14-15 a 64-bit nonce (14 = low half).  An RFC 8439
 * (key, 96-bit nonce n0|n1|n2, 32-bit counter) maps to
 *     counter64 = counter32 | (uint64)n0 << 32,  nonce64 = n1 | (uint64)n2 << 32
 * and gives the RFC keystream for as long as counter32 does not wrap.
 *
 * Each 64-byte block is emitted as 8 uint64 words: word j is
 * out32[2j] | (uint64)out32[2j+1] << 32, i.e. the block's bytes on a
 * little-endian machine.
 */
#ifndef DPFAST_CHACHA20_H
#define DPFAST_CHACHA20_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPF_CHACHA_BUF_WORDS 128 /* 16 blocks = 1 KiB */

/* 64-byte alignment keeps buf on cache-line boundaries when the allocator
 * honours it; the code never relies on it (it may live inside a malloc'd
 * Python object), all stores are unaligned-safe. */
#if defined(__GNUC__) || defined(__clang__)
#define DPF_CHACHA_ALIGN64 __attribute__((aligned(64)))
#elif defined(_MSC_VER)
#define DPF_CHACHA_ALIGN64 __declspec(align(64))
#else
#define DPF_CHACHA_ALIGN64
#endif

typedef struct DPF_CHACHA_ALIGN64 dpf_chacha_s {
    /* keystream of blocks [counter-16, counter) when pos < 128 */
    uint64_t buf[DPF_CHACHA_BUF_WORDS];
    uint32_t key[8];
    uint64_t counter; /* next block to generate */
    uint64_t nonce;
    int pos;          /* next unread word of buf; 128 = empty */
    int has_uint32;   /* for numpy's next_uint32: half of a word kept */
    uint32_t uinteger;
} dpf_chacha_t;

/* Write nblocks blocks (8*nblocks words) for counters counter, counter+1, ...
 * (mod 2^64).  out must be 8-byte aligned (the SIMD paths also accept less). */
void dpf_chacha_blocks(const uint32_t key[8], uint64_t counter, uint64_t nonce,
                       uint64_t *out, size_t nblocks);

/* Buffer empty (pos = 128), has_uint32 = 0. */
void dpf_chacha_init(dpf_chacha_t *st, const uint32_t key[8], uint64_t counter,
                     uint64_t nonce);

/* Generate 16 blocks at st->counter into buf, counter += 16, pos = 0. */
void dpf_chacha_refill(dpf_chacha_t *st);

/* The next n words of the stream; identical to n calls of dpf_chacha_next64. */
void dpf_chacha_fill(dpf_chacha_t *st, uint64_t *out, size_t n);

static inline uint64_t dpf_chacha_next64(dpf_chacha_t *st)
{
    if (st->pos >= DPF_CHACHA_BUF_WORDS)
        dpf_chacha_refill(st);
    return st->buf[st->pos++];
}

#ifdef __cplusplus
}
#endif

#endif /* DPFAST_CHACHA20_H */
