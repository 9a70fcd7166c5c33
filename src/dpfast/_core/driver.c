/*
 * The kernel driver's thread pool (POSIX threads).
 *
 * Why not an OpenMP parallel region: its end is a barrier that every thread of the team must
 * reach, so a call waits for a helper even when that helper never got a core (another process
 * keeps it busy) and had nothing to do; on a 2-core machine with one core busy that made a
 * 10^5-sample call 5-30 times slower on two threads than on one.  Here a call is a job that
 * threads join: each takes chunks from an atomic counter, and the caller waits only until every
 * chunk is done.  A helper that wakes after that finds the job finished and leaves.  The job
 * lives on the heap with a reference count, so a late helper never touches the caller's stack.
 */
#include "driver.h"

#include <stdlib.h>

#if defined(_WIN32) || defined(DPF_NO_THREADS)
#define DPF_THREADS 0
#else
#define DPF_THREADS 1
#include <pthread.h>
#include <sched.h>
#endif

static void run_inline(dpf_chunk_fn fn, void *task, int64_t nchunks)
{
    for (int64_t c = 0; c < nchunks; c++)
        fn(task, c, 0);
}

#if !DPF_THREADS

void dpf_run(dpf_chunk_fn fn, void *task, int64_t nchunks, int threads)
{
    (void)threads;
    run_inline(fn, task, nchunks);
}

int dpf_have_threads(void)
{
    return 0;
}

#else

typedef struct {
    dpf_chunk_fn fn;
    void *task;
    int64_t nchunks;
    int64_t next;          /* atomic: the next chunk to take */
    int64_t done;          /* atomic: chunks finished */
    int helpers_max;       /* threads - 1 */
    int helpers;           /* helpers that joined (under the pool lock) */
    int refs;              /* atomic: the caller and each helper that joined */
    pthread_mutex_t m;     /* with cv: the caller sleeps until done == nchunks */
    pthread_cond_t cv;
} job_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    job_t *job;            /* the job helpers may join, or NULL */
    uint64_t generation;   /* counts posted jobs, so a helper joins each at most once */
    int started;           /* pool threads started */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0};

static void job_release(job_t *job)
{
    if (__atomic_sub_fetch(&job->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        pthread_mutex_destroy(&job->m);
        pthread_cond_destroy(&job->cv);
        free(job);
    }
}

/* Take and run chunks until none are left. */
static void job_work(job_t *job, int slot)
{
    int64_t c;
    while ((c = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED)) < job->nchunks) {
        job->fn(job->task, c, slot);
        if (__atomic_add_fetch(&job->done, 1, __ATOMIC_ACQ_REL) == job->nchunks) {
            pthread_mutex_lock(&job->m);
            pthread_cond_signal(&job->cv);
            pthread_mutex_unlock(&job->m);
        }
    }
}

static void *helper_main(void *arg)
{
    uint64_t seen = 0;
    (void)arg;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        job_t *job = pool.job;
        if (job == NULL || pool.generation == seen || job->helpers >= job->helpers_max) {
            pthread_cond_wait(&pool.wake, &pool.lock);
            continue;
        }
        seen = pool.generation;
        int slot = ++job->helpers;
        __atomic_add_fetch(&job->refs, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&pool.lock);
        job_work(job, slot);
        job_release(job);
        pthread_mutex_lock(&pool.lock);
    }
    return NULL;
}

/* A forked child has none of the parent's threads, and the lock may have been held by one of
 * them at the fork: start afresh. */
static void pool_after_fork(void)
{
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pool.job = NULL;
    pool.started = 0;
}

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_init(void)
{
    pthread_atfork(NULL, NULL, pool_after_fork);
}

/* Start pool threads up to n; call with the pool lock held.  Returns how many run. */
static int pool_grow(int n)
{
    while (pool.started < n) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&t, &attr, helper_main, NULL);
        pthread_attr_destroy(&attr);
        if (err != 0)
            break;
        pool.started++;
    }
    return pool.started;
}

void dpf_run(dpf_chunk_fn fn, void *task, int64_t nchunks, int threads)
{
    if (threads <= 1 || nchunks <= 1) {
        run_inline(fn, task, nchunks);
        return;
    }
    pthread_once(&pool_once, pool_init);
    job_t *job = malloc(sizeof *job);
    if (job == NULL) {
        run_inline(fn, task, nchunks);
        return;
    }
    job->fn = fn;
    job->task = task;
    job->nchunks = nchunks;
    job->next = 0;
    job->done = 0;
    job->helpers_max = (int)(nchunks < threads ? nchunks : threads) - 1;
    job->helpers = 0;
    job->refs = 1;
    pthread_mutex_init(&job->m, NULL);
    pthread_cond_init(&job->cv, NULL);

    pthread_mutex_lock(&pool.lock);
    int posted = pool.job == NULL && pool_grow(job->helpers_max) > 0;
    if (posted) {
        pool.job = job;
        pool.generation++;
        pthread_cond_broadcast(&pool.wake);
    }
    pthread_mutex_unlock(&pool.lock);

    job_work(job, 0);
    if (posted) {
        /* Chunks that helpers took may still run: wait for them (a short spin first, since
         * they are usually nearly done), then close the job to latecomers. */
        for (int spin = 0; spin < 2000
             && __atomic_load_n(&job->done, __ATOMIC_ACQUIRE) < nchunks; spin++)
            sched_yield();
        pthread_mutex_lock(&job->m);
        while (__atomic_load_n(&job->done, __ATOMIC_ACQUIRE) < nchunks)
            pthread_cond_wait(&job->cv, &job->m);
        pthread_mutex_unlock(&job->m);
        pthread_mutex_lock(&pool.lock);
        pool.job = NULL;
        pthread_mutex_unlock(&pool.lock);
    }
    job_release(job);
}

int dpf_have_threads(void)
{
    return 1;
}

#endif
