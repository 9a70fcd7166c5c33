#include "records.h"
#include "driver.h"
#include "sampling.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* -- contribution bounding ------------------------------------------------------------------ */

/* A mixing of the person's value into its bucket (splitmix64's finalizer): buckets only group
 * rows for speed; which rows are kept never depends on them. */
static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

typedef struct dpf_row {
    int64_t person;
    double prio, gprio;           /* the row's priority; its pair's, if it is the first row */
    uint32_t group, row;          /* row: its position in the call's rows */
} rec;
_Static_assert(sizeof(rec) == 32, "the bounding's scratch is 32 bytes a row");

/* The rows are grouped by person in two passes of a radix partition on a hash of the person
 * (splitmix64's finalizer: it only groups rows for speed; which rows are kept never depends on
 * it): first into nparts partitions by its top bits, sequentially, writing nparts streams;
 * then each partition (one chunk of the run) into small buckets by its next bits, within a
 * scratch copy that fits in cache.  Random writes over the whole table cost a cache and TLB
 * miss each; these do not. */
static inline uint64_t part_of(const dpf_bound_task *t, int64_t person)
{
    return t->part_bits == 0 ? 0 : mix64((uint64_t)person) >> (64 - t->part_bits);
}

/* The rows in SLICES equal slices, counted and scattered in parallel: slice s's rows go after
 * slice s-1's in each partition, so each partition lists its rows in row order whatever the
 * threads. */
enum { SLICES = 16 };

typedef struct {
    dpf_bound_task *t;
    int64_t *at;            /* SLICES x nparts: counts, then each slice's next position */
} prep_task;

static void slice_rows(const dpf_bound_task *t, int64_t s, int64_t *lo, int64_t *hi)
{
    *lo = t->n * s / SLICES;
    *hi = t->n * (s + 1) / SLICES;
}

static void count_slice(void *task, int64_t s, int slot)
{
    (void)slot;
    prep_task *pt = task;
    const dpf_bound_task *t = pt->t;
    int64_t lo, hi, *at = pt->at + s * t->nparts;
    slice_rows(t, s, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        at[part_of(t, t->person[i])]++;
}

/* The uniforms of chunk c of the table's `total` rows under key (what dpfast.noise.uniforms
 * draws there) into u. */
static void draw_chunk(const uint32_t key[8], int64_t c, int64_t total, double *u)
{
    dpf_fill_task f;
    memset(&f, 0, sizeof f);
    memcpy(f.key, key, sizeof f.key);
    f.mode = DPF_MODE_UNIFORM;
    f.g = f.ginv = 1.0;
    dpf_dlap_params_init(&f.lap, 1.0);
    f.out = u;
    f.n = total - c * DPF_CHUNK < DPF_CHUNK ? total - c * DPF_CHUNK : DPF_CHUNK;
    f.chunk0 = (uint64_t)c;
    dpf_fill_chunk(&f, 0, 0);
}

static void scatter_slice(void *task, int64_t s, int slot)
{
    (void)slot;
    prep_task *pt = task;
    dpf_bound_task *t = pt->t;
    int64_t lo, hi, *at = pt->at + s * t->nparts, held = -1;
    slice_rows(t, s, &lo, &hi);
    double *u = NULL;               /* drawn priorities: one chunk's, of each key */
    if (t->prio == NULL && lo < hi && (u = malloc(2 * DPF_CHUNK * sizeof(double))) == NULL) {
        t->failed = 1;              /* read by the caller after the run */
        return;
    }
    for (int64_t i = lo; i < hi; i++) {
        rec *r = &t->recs[at[part_of(t, t->person[i])]++];
        r->person = t->person[i];
        r->group = (uint32_t)t->group[i];
        r->row = (uint32_t)i;
        if (u == NULL) {
            r->prio = t->prio[i];
            r->gprio = t->gprio[i];
            continue;
        }
        /* Positions increasing, each chunk is drawn once a slice. */
        int64_t p = t->pos ? t->pos[i] : i, c = p / DPF_CHUNK;
        if (c != held) {
            draw_chunk(t->row_key, c, t->total, u);
            if (t->pair_prio)
                draw_chunk(t->pair_key, c, t->total, u + DPF_CHUNK);
            held = c;
        }
        r->prio = u[p - c * DPF_CHUNK];
        r->gprio = t->pair_prio ? u[DPF_CHUNK + p - c * DPF_CHUNK] : r->prio;
    }
    free(u);
}

void dpf_bound_prepare(dpf_bound_task *t, int threads)
{
    prep_task pt = {t, calloc((size_t)(SLICES * t->nparts), sizeof(int64_t))};
    if (pt.at == NULL) {
        t->failed = 1;
        return;
    }
    dpf_run(count_slice, &pt, SLICES, threads);
    int64_t pos = 0;
    for (int64_t p = 0; p < t->nparts; p++) {
        t->start[p] = pos;
        for (int64_t sl = 0; sl < SLICES; sl++) {
            int64_t c = pt.at[sl * t->nparts + p];
            pt.at[sl * t->nparts + p] = pos;
            pos += c;
        }
    }
    t->start[t->nparts] = pos;
    dpf_run(scatter_slice, &pt, SLICES, threads);
    free(pt.at);
}

/* By person, then group, then position: a pair's rows together, its first row first. */
static int by_pair(const void *pa, const void *pb)
{
    const rec *a = pa, *b = pb;
    if (a->person != b->person) return a->person < b->person ? -1 : 1;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

/* By priority, then position (ties have probability about 2^-53; positions break them). */
static int by_prio(const void *pa, const void *pb)
{
    const rec *a = pa, *b = pb;
    if (a->prio != b->prio) return a->prio < b->prio ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

static void sort_recs(rec *r, int64_t n, int (*cmp)(const void *, const void *))
{
    if (n > 24) {
        qsort(r, (size_t)n, sizeof(rec), cmp);
        return;
    }
    for (int64_t i = 1; i < n; i++) {          /* insertion sort: most people have few rows */
        rec x = r[i];
        int64_t j = i;
        while (j > 0 && cmp(&r[j - 1], &x) > 0) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = x;
    }
}

/* Keep the max_rows (<= 64) rows of lowest (priority, position) of one pair of n rows: the
 * lowest so far kept in a small sorted array (a row enters only if it beats the last), then
 * every row at or below the last of them kept. Returns that row's position. */
static int64_t keep_lowest(const dpf_bound_task *t, rec *r, int64_t n)
{
    struct { double prio; int64_t row; } k[64];
    const int64_t m = t->max_rows;
    int64_t have = 0;
    for (int64_t i = 0; i < n; i++) {
        const double p = r[i].prio;
        const int64_t row = r[i].row;
        if (have == m && (p > k[m - 1].prio || (p == k[m - 1].prio && row > k[m - 1].row)))
            continue;
        int64_t j = have < m ? have++ : m - 1;
        while (j > 0 && (k[j - 1].prio > p || (k[j - 1].prio == p && k[j - 1].row > row))) {
            k[j] = k[j - 1];
            j--;
        }
        k[j].prio = p;
        k[j].row = row;
    }
    for (int64_t j = 0; j < m; j++)
        t->kept[k[j].row] = DPF_KEPT;
    return k[m - 1].row;
}

/* One person's rows r[0..n) sorted by pair; pairs[] scratch (one rec per pair). Keeps the
 * max_groups pairs of lowest pair priority and, in each, the max_rows rows of lowest row
 * priority: uniform choices, since the priorities are independent uniforms. */
static void bound_person(const dpf_bound_task *t, rec *r, int64_t n, rec *pairs)
{
    int64_t npairs = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || r[i].group != r[i - 1].group) {
            pairs[npairs].row = i;                /* row: where the pair starts in r */
            pairs[npairs].prio = r[i].gprio;
            npairs++;
        }
    if (npairs > t->max_groups)
        sort_recs(pairs, npairs, by_prio);
    int64_t chosen = npairs < t->max_groups ? npairs : t->max_groups;
    for (int64_t p = 0; p < chosen; p++) {
        int64_t a = pairs[p].row, b = a + 1;
        while (b < n && r[b].group == r[a].group)
            b++;
        int64_t marked = r[a].row;                  /* a kept row, to mark the pair on */
        if (b - a <= t->max_rows) {
            for (int64_t i = a; i < b; i++)
                t->kept[r[i].row] = DPF_KEPT;
        } else if (t->max_rows <= 64) {
            marked = keep_lowest(t, r + a, b - a);
        } else {
            sort_recs(r + a, b - a, by_prio);
            marked = r[a].row;
            for (int64_t i = a; i < a + t->max_rows; i++)
                t->kept[r[i].row] = DPF_KEPT;
        }
        t->kept[marked] = DPF_KEPT | DPF_KEPT_FIRST;        /* one mark per pair kept */
    }
}

void dpf_bound_chunk(void *task, int64_t chunk, int slot)
{
    (void)slot;
    dpf_bound_task *t = task;
    rec *part = t->recs + t->start[chunk];
    int64_t n = t->start[chunk + 1] - t->start[chunk];
    if (n == 0)
        return;
    int bits = 0;                               /* buckets of about 8 rows */
    while (bits < 40 && ((int64_t)1 << bits) * 8 < n)
        bits++;
    int64_t nb = (int64_t)1 << bits;
    rec *copy = malloc((size_t)n * sizeof(rec));
    int64_t *at = calloc((size_t)nb + 1, sizeof(int64_t));
    if (copy == NULL || at == NULL) {
        free(copy);
        free(at);
        t->failed = 1;                          /* read by the caller after the run */
        return;
    }
    memcpy(copy, part, (size_t)n * sizeof(rec));
    const int shift = 64 - t->part_bits - bits;
    const uint64_t mask = (uint64_t)nb - 1;
#define BUCKET(r) ((shift >= 0 ? mix64((uint64_t)(r).person) >> shift \
                               : mix64((uint64_t)(r).person)) & mask)
    for (int64_t i = 0; i < n; i++)
        at[BUCKET(copy[i]) + 1]++;
    for (int64_t b = 0; b < nb; b++)
        at[b + 1] += at[b];
    for (int64_t i = 0; i < n; i++)
        part[at[BUCKET(copy[i])]++] = copy[i];   /* at[b] ends as bucket b's end */
#undef BUCKET
    rec *pairs = copy;                          /* the copy is scratch from here on */
    for (int64_t b = 0, lo = 0; b < nb; lo = at[b], b++) {
        rec *r = part + lo;
        int64_t m = at[b] - lo;
        sort_recs(r, m, by_pair);
        for (int64_t a = 0; a < m;) {
            int64_t e = a + 1;
            while (e < m && r[e].person == r[a].person)
                e++;
            bound_person(t, r + a, e - a, pairs);
            a = e;
        }
    }
    free(copy);
    free(at);
}

/* -- order statistics ----------------------------------------------------------------------- */

/* An LSD radix sort of n unsigned keys of type T in place (tmp: room for n), 11-bit digits,
 * skipping the digits every key shares (the high digits of small keys). */
#define DPF_RADIX_SORT(name, T, BITS)                                                     \
void name(T *keys, T *tmp, int64_t n)                                                     \
{                                                                                         \
    T *src = keys, *dst = tmp, all_or = 0, all_and = (T)~(T)0;                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
        all_or |= keys[i];                                                                \
        all_and &= keys[i];                                                               \
    }                                                                                     \
    for (int shift = 0; shift < (BITS); shift += 11) {                                    \
        if ((((all_or ^ all_and) >> shift) & 0x7ff) == 0)                                 \
            continue;                                                                     \
        int64_t count[2049] = {0};                                                        \
        for (int64_t i = 0; i < n; i++)                                                   \
            count[((src[i] >> shift) & 0x7ff) + 1]++;                                     \
        for (int d = 0; d < 2048; d++)                                                    \
            count[d + 1] += count[d];                                                     \
        for (int64_t i = 0; i < n; i++)                                                   \
            dst[count[(src[i] >> shift) & 0x7ff]++] = src[i];                             \
        T *swap = src;                                                                    \
        src = dst;                                                                        \
        dst = swap;                                                                       \
    }                                                                                     \
    if (src != keys)                                                                      \
        memcpy(keys, src, (size_t)n * sizeof(T));                                         \
}

DPF_RADIX_SORT(dpf_sort_u32, uint32_t, 32)
DPF_RADIX_SORT(dpf_sort_u64, uint64_t, 64)

void dpf_quantile_weights(const uint32_t *s, int64_t m, int64_t lo, int64_t hi,
                          double target, double a, double *w)
{
    for (int64_t j = 0; j <= m; j++) {
        int64_t below = j == 0 ? lo - 1 : (int64_t)s[j - 1];
        int64_t top = j == m ? hi : (int64_t)s[j];
        int64_t count = top - below;
        w[j] = count > 0 ? log((double)count) - a * fabs((double)j - target) : -INFINITY;
    }
}

/* The log-weight of gap j of the sorted values v[0..m) (low 32 bits of s[j]) over lo..hi. */
static inline double gap_weight(const uint64_t *s, int64_t m, int64_t lo, int64_t hi,
                                int64_t j, double target, double a, int64_t *count)
{
    int64_t below = j == 0 ? lo - 1 : (int64_t)(uint32_t)s[j - 1];
    int64_t top = j == m ? hi : (int64_t)(uint32_t)s[j];
    *count = top - below;
    return *count > 0 ? log((double)*count) - a * fabs((double)j - target) : -INFINITY;
}

void dpf_grouped_quantile(const uint64_t *s, const int64_t *start, const int64_t *groups,
                          int64_t ngroups, int64_t top, double q, double a,
                          const double *u1, const double *u2, int64_t *out)
{
    for (int64_t k = 0; k < ngroups; k++) {
        const uint64_t *v = s + start[groups[k]];
        const int64_t m = start[groups[k] + 1] - start[groups[k]];
        const double target = q * (double)m;
        int64_t c;
        double wmax = -INFINITY;
        for (int64_t j = 0; j <= m; j++) {
            double w = gap_weight(v, m, 0, top, j, target, a, &c);
            if (w > wmax)
                wmax = w;
        }
        double total = 0.0;
        for (int64_t j = 0; j <= m; j++)
            total += exp(gap_weight(v, m, 0, top, j, target, a, &c) - wmax);
        /* Inverse CDF: the first gap whose running sum passes u1 * total (the last gap
         * with weight if rounding leaves the target unreached). */
        const double goal = u1[k] * total;
        double run = 0.0;
        int64_t chosen = -1;
        for (int64_t j = 0; j <= m; j++) {
            double w = exp(gap_weight(v, m, 0, top, j, target, a, &c) - wmax);
            if (w > 0.0)
                chosen = j;
            run += w;
            if (w > 0.0 && run > goal)
                break;
        }
        gap_weight(v, m, 0, top, chosen, target, a, &c);
        int64_t off = (int64_t)(u2[k] * (double)c);
        if (off >= c)
            off = c - 1;
        out[k] = (chosen == 0 ? 0 : (int64_t)(uint32_t)v[chosen - 1] + 1) + off;
    }
}

/* -- statistics per key --------------------------------------------------------------------- */

void dpf_key_sums(const int64_t *code, const uint8_t *flags, const double *x, int64_t n,
                  double lo, double hi, double mid, double g, int64_t k, double g2,
                  int64_t k2, int64_t *rows, int64_t *people, int64_t *s1, int64_t *s2)
{
    for (int64_t i = 0; i < n; i++) {
        if (flags[i] == 0)
            continue;
        const int64_t c = code[i];
        rows[c]++;
        if (flags[i] == (DPF_KEPT | DPF_KEPT_FIRST))
            people[c]++;
        if (x == NULL)
            continue;
        /* The operations numpy makes, in its order: clip, subtract, divide, round half to
         * even (the default rounding mode), clip to the units' range. */
        const double v = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
        const double d = v - mid;
        double u = nearbyint(d / g);
        u = u < (double)-k ? (double)-k : (u > (double)k ? (double)k : u);
        s1[c] += (int64_t)u;
        if (s2 != NULL) {
            double u2 = nearbyint((d * d) / g2);
            u2 = u2 < (double)-k2 ? (double)-k2 : (u2 > (double)k2 ? (double)k2 : u2);
            s2[c] += (int64_t)u2;
        }
    }
}
