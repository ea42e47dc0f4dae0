/* Piola threads of the CPU reference (thread_pool.c): a stage's independent items split among
 * the threads of def.cpu_threads. */
#ifndef PIOLA_THREAD_POOL_H
#define PIOLA_THREAD_POOL_H

#include "piola/piola.h"

#include <stdint.h>

/* The most threads def.cpu_threads may ask for. */
#define PIOLA_MAX_CPU_THREADS 256

typedef struct piola_pool piola_pool;

/* Items [begin, end) of a piola_pool_for() call, as chunk `chunk` of it. */
typedef void piola_range_fn(void *ctx, int32_t chunk, int32_t begin, int32_t end);

/* The online cores of the machine (at least 1, at most PIOLA_MAX_CPU_THREADS). */
int32_t piola_online_cores(void);
/* A pool of `threads` threads, the caller's included (threads - 1 workers); *out is NULL for
 * threads <= 1. Out of memory or threads: PIOLA_ERROR_OUT_OF_MEMORY, nothing made. */
piola_status piola_pool_create(int32_t threads, piola_pool **out);
void piola_pool_destroy(piola_pool *pool);
/* Threads of a pool (1 for NULL): the most chunks a piola_pool_for() call makes. */
int32_t piola_pool_threads(const piola_pool *pool);
/* Runs fn over [0, count) in contiguous chunks of at least `grain` items, at most one per
 * thread, the caller running the first; returns when all are done. With NULL or fewer than two
 * chunks' worth of items, one call fn(ctx, 0, 0, count) on the caller. The items must not
 * write what another item of the call reads or writes. */
void piola_pool_for(piola_pool *pool, int32_t count, int32_t grain, piola_range_fn *fn, void *ctx);

#endif /* PIOLA_THREAD_POOL_H */
