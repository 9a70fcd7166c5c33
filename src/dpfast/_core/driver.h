/*
 * The one kernel driver: every compiled kernel (samplers, selection, counting) cuts its work
 * into numbered chunks and hands them to dpf_run.
 *
 * A kernel's output must depend only on the chunk numbers, never on which thread runs a chunk
 * or in what order: the random kernels give chunk c its own ChaCha20 streams under the call's
 * key, and the counting kernels add integer partial tables.  So the thread count changes the
 * speed of a call, never its result.
 */
#ifndef DPF_DRIVER_H
#define DPF_DRIVER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One chunk of a task.  slot, in [0, threads), is unique among the threads running chunks of
 * the same call at the same time (slot 0 is the calling thread), for per-thread scratch such
 * as partial count tables. */
typedef void (*dpf_chunk_fn)(void *task, int64_t chunk, int slot);

/* Run fn on chunks 0 .. nchunks-1 of task and return when all are done.
 *
 * With threads <= 1 or a single chunk, the calling thread runs them all: a small call never
 * waits for a thread to wake.  Otherwise up to threads - 1 pool threads join the calling
 * thread, each taking the next chunk when it is free, so a thread on a core that another
 * process keeps busy simply takes fewer chunks.  The caller waits only for chunks that have
 * been taken, never for a helper that has not woken yet: under load a call is at worst about
 * as slow as on one thread.  If the pool is serving another call (from another Python thread),
 * this call runs on its own thread. */
void dpf_run(dpf_chunk_fn fn, void *task, int64_t nchunks, int threads);

/* 1 if calls with threads > 1 can use several threads (the build has POSIX threads). */
int dpf_have_threads(void);

#ifdef __cplusplus
}
#endif
#endif
