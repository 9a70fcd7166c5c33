/*
 * The one instruction-set switch.  The ChaCha20 keystream and the sampling loops both ask
 * dpf_simd_level() which of their variants to run, so forcing a level (for tests, or with
 * DPFAST_SIMD=avx2 in the environment) changes everything that draws noise at once.  Every
 * level gives bit-identical output: the choice is only about speed.
 */
#ifndef DPF_SIMD_H
#define DPF_SIMD_H

#ifdef __cplusplus
extern "C" {
#endif

enum { DPF_SIMD_SCALAR = 0, DPF_SIMD_AVX2 = 1, DPF_SIMD_AVX512 = 2, DPF_SIMD_COUNT = 3 };

/* The level in use.  The first call picks DPFAST_SIMD if this CPU supports it, else the
 * widest level it supports. */
int dpf_simd_level(void);

/* "avx512", "avx2" or "scalar". */
const char *dpf_simd_name(void);

/* Use "avx512", "avx2", "scalar", or "auto" (the first call's choice).  Returns 1 if set, 0
 * if the name is unknown or this CPU cannot run it (the level is then left unchanged). */
int dpf_simd_set(const char *name);

#ifdef __cplusplus
}
#endif
#endif
