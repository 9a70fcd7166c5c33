#include "simd.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DPF_SIMD_X86 1
#else
#define DPF_SIMD_X86 0
#endif

static const char *const names[DPF_SIMD_COUNT] = {"scalar", "avx2", "avx512"};

/* -1 until chosen.  Racing first calls all compute the same default, so relaxed atomics are
 * enough; a later dpf_simd_set only changes which equivalent variant runs. */
static int g_level = -1;

static int supported(int level)
{
    switch (level) {
    case DPF_SIMD_SCALAR:
        return 1;
#if DPF_SIMD_X86
    /* GCC's and clang's checks include the OS (XCR0) test for the ymm/zmm register state.
     * The sampling loops use AVX-512 F, DQ, VL and BW; the keystream only F. */
    case DPF_SIMD_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    case DPF_SIMD_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
               && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#endif
    default:
        return 0;
    }
}

static int from_name(const char *name)
{
    if (name == NULL)
        return -1;
    for (int i = 0; i < DPF_SIMD_COUNT; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

static int default_level(void)
{
    int i = from_name(getenv("DPFAST_SIMD"));
    if (i >= 0 && supported(i))
        return i;
    for (i = DPF_SIMD_COUNT - 1; i > 0; i--)
        if (supported(i))
            return i;
    return DPF_SIMD_SCALAR;
}

int dpf_simd_level(void)
{
    int i = __atomic_load_n(&g_level, __ATOMIC_RELAXED);
    if (i < 0) {
        i = default_level();
        __atomic_store_n(&g_level, i, __ATOMIC_RELAXED);
    }
    return i;
}

const char *dpf_simd_name(void)
{
    return names[dpf_simd_level()];
}

int dpf_simd_set(const char *name)
{
    int i = (name != NULL && strcmp(name, "auto") == 0) ? default_level() : from_name(name);
    if (i < 0 || !supported(i))
        return 0;
    __atomic_store_n(&g_level, i, __ATOMIC_RELAXED);
    return 1;
}
