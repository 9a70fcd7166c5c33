/*
 * Statistics of records: bounding each person's contribution, and the order statistics the
 * quantile releases select from.  The random priorities that decide which rows a person keeps
 * are uniforms under the release's keys, one per row, addressed by the row's position in the
 * table (the ChaCha20 uniforms of sampling.h): the bounding draws them itself, a 65,536-row
 * chunk at a time, so the rows kept depend only on the keys and the data, and no array of
 * priorities is ever held.  (Priorities may also be given as arrays: the tests' reference.)
 */
#ifndef DPF_RECORDS_H
#define DPF_RECORDS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* kept[i] flags */
enum { DPF_KEPT = 1, DPF_KEPT_FIRST = 2 };

typedef struct {
    const int64_t *person;  /* the privacy unit of each row (any values) */
    const int64_t *group;   /* the group of each row: values in [0, 2**32) */
    /* The priorities: given (prio: a pair keeps its max_rows lowest; gprio: pair priorities,
     * read at each pair's first row), or, prio NULL, drawn: the uniform at position pos[i]
     * (pos NULL: i) of the table's `total` rows, under row_key and (pair_prio) pair_key. */
    const double *prio;
    const double *gprio;
    const int64_t *pos;
    int64_t total;
    uint32_t row_key[8], pair_key[8];
    int pair_prio;          /* 0: one pair a person (no groups), pair priorities never read */
    uint8_t *kept;          /* out: DPF_KEPT, plus DPF_KEPT_FIRST on one kept row per pair */
    int64_t n, max_groups, max_rows;   /* n < 2**32 */
    struct dpf_row *recs;   /* scratch, n records of 32 bytes: the rows by partition of person */
    int64_t *start;         /* scratch, nparts + 1: the partitions' first positions in recs */
    int64_t nparts;         /* 2**part_bits partitions, one chunk of the run each */
    int part_bits;
    int failed;             /* set if a slice or chunk could not allocate its scratch */
} dpf_bound_task;

/* Partition the rows by a hash of their person (recs, start), on up to `threads` threads;
 * then run
 * dpf_bound_chunk over the partitions (any threads: each person's rows are decided from that
 * person's rows alone). */
void dpf_bound_prepare(dpf_bound_task *t, int threads);
void dpf_bound_chunk(void *task, int64_t chunk, int slot);

/* Sort n uint32 keys in place (LSD radix, 11-bit digits; tmp has room for n keys). */
void dpf_sort_u32(uint32_t *keys, uint32_t *tmp, int64_t n);

/* Per key (code[i] in [0, nkeys)) of the rows flagged kept: rows, people (pairs marked) and,
 * x given, the exact int64 sums of each value's units on the grid g (clamped to [lo, hi],
 * centred on mid, rounded half to even, within +-k) and, s2 given, of its centred square's
 * units on g2 (within +-k2): numpy's operations in numpy's order, so the same integers. */
void dpf_key_sums(const int64_t *code, const uint8_t *flags, const double *x, int64_t n,
                  double lo, double hi, double mid, double g, int64_t k, double g2,
                  int64_t k2, int64_t *rows, int64_t *people, int64_t *s1, int64_t *s2);

/* Sort n uint64 keys in place (LSD radix, 11-bit digits, digits all keys share skipped). */
void dpf_sort_u64(uint64_t *keys, uint64_t *tmp, int64_t n);

/* One q-quantile per group by the exponential mechanism over the gaps of each group's sorted
 * values: s holds (group << 32 | value) sorted, group g's values at s[start[g]..start[g+1]),
 * values on the integers 0..top; for each of the groups listed, the gap is drawn by inverse
 * CDF at the uniform u1[k] over the weights exp(log(count) - a |j - q m|), and the integer
 * within it at u2[k]. */
void dpf_grouped_quantile(const uint64_t *s, const int64_t *start, const int64_t *groups,
                          int64_t ngroups, int64_t top, double q, double a,
                          const double *u1, const double *u2, int64_t *out);

/* Log-weights of the exponential mechanism over the integers lo..hi for a quantile of the
 * sorted keys s[0..m) (all within [lo, hi]): w[j], j = 0..m, for the integers y with j keys
 * below y: log(their count) - a * |j - target| (-inf when there are none). */
void dpf_quantile_weights(const uint32_t *s, int64_t m, int64_t lo, int64_t hi,
                          double target, double a, double *w);


#ifdef __cplusplus
}
#endif
#endif
