/* Piola thread pool of the CPU reference: a world's own worker threads (POSIX threads), which
 * split a stage's independent items among them.
 *
 * piola_pool_for() cuts [0, count) into contiguous chunks, one per thread, and returns when
 * every chunk is done. The stages hand it only items that share nothing they write (the tets or
 * cloth items of one color, the bodies, the vertices, the contacts), so the result is the same
 * to the bit for any number of threads: a chunk's items run in their own order, and no item
 * reads what another item of the same call writes. Sums across items stay with the caller, in
 * item order. The pool belongs to one world and is driven by the one thread that steps it.
 *
 * A stage may hand over a few hundred small jobs per step (the cloth's colors), so waking a
 * thread through the kernel (tens of microseconds) would cost more than the work: a worker
 * first polls the job counter for a while (SPINS pauses of the processor, about a tenth of a
 * millisecond on x86), and so does the caller on the chunks left, before either sleeps on its
 * condition variable.
 */
#include "thread_pool.h"

#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* Polls of an atomic counter before a thread sleeps (each a short pause). */
#define SPINS 4000

static void pause_briefly(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

struct piola_pool {
  int32_t threads; /* including the calling thread */
  pthread_t *workers;
  int32_t started; /* workers created */
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  /* The current job: written by the caller before it advances `generation` (release), read
   * by a worker after it sees the new generation (acquire). `quit` and the sleeps are under
   * `lock`. */
  _Atomic uint64_t generation;
  _Atomic int32_t pending; /* workers that have not finished the job (with a chunk or not) */
  bool quit;
  piola_range_fn *fn;
  void *ctx;
  int32_t count, chunks;
};

/* The chunk of [0, count) that `chunk` of `chunks` runs. */
static void chunk_range(int32_t count, int32_t chunks, int32_t chunk, int32_t *begin,
                        int32_t *end) {
  *begin = (int32_t)((int64_t)count * chunk / chunks);
  *end = (int32_t)((int64_t)count * (chunk + 1) / chunks);
}

typedef struct worker_arg {
  piola_pool *pool;
  int32_t index; /* 1 .. threads - 1: the chunk it runs; chunk 0 is the caller's */
} worker_arg;

/* Waits until the generation differs from `seen` (spinning, then asleep); false on quit. */
static bool wait_for_job(piola_pool *pool, uint64_t seen) {
  for (int k = 0; k < SPINS; ++k) {
    if (atomic_load_explicit(&pool->generation, memory_order_acquire) != seen) {
      return true;
    }
    pause_briefly();
  }
  pthread_mutex_lock(&pool->lock);
  while (!pool->quit && atomic_load_explicit(&pool->generation, memory_order_acquire) == seen) {
    pthread_cond_wait(&pool->wake, &pool->lock);
  }
  const bool quit = pool->quit;
  pthread_mutex_unlock(&pool->lock);
  return !quit;
}

static void *worker_main(void *arg) {
  worker_arg *wa = arg;
  piola_pool *pool = wa->pool;
  const int32_t index = wa->index;
  free(wa);
  uint64_t seen = 0;
  while (wait_for_job(pool, seen)) {
    seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
    if (index < pool->chunks) {
      int32_t begin, end;
      chunk_range(pool->count, pool->chunks, index, &begin, &end);
      pool->fn(pool->ctx, index, begin, end);
    }
    /* Every worker reports every job, with a chunk or without, so that the caller writes the
     * next job only after all have read this one. */
    if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&pool->lock);
      pthread_cond_signal(&pool->done);
      pthread_mutex_unlock(&pool->lock);
    }
  }
  return NULL;
}

int32_t piola_online_cores(void) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (n < PIOLA_MAX_CPU_THREADS ? (int32_t)n : PIOLA_MAX_CPU_THREADS) : 1;
}

piola_status piola_pool_create(int32_t threads, piola_pool **out) {
  *out = NULL;
  if (threads <= 1) {
    return PIOLA_OK; /* the calling thread alone: no pool */
  }
  piola_pool *pool = calloc(1, sizeof *pool);
  if (pool == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  pool->threads = threads;
  pool->workers = calloc((size_t)threads - 1, sizeof *pool->workers);
  bool ok = pool->workers != NULL && pthread_mutex_init(&pool->lock, NULL) == 0;
  if (ok && pthread_cond_init(&pool->wake, NULL) != 0) {
    pthread_mutex_destroy(&pool->lock);
    ok = false;
  }
  if (ok && pthread_cond_init(&pool->done, NULL) != 0) {
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    ok = false;
  }
  if (!ok) {
    free(pool->workers);
    free(pool);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 1; i < threads; ++i) {
    worker_arg *wa = malloc(sizeof *wa);
    if (wa == NULL) {
      break;
    }
    wa->pool = pool;
    wa->index = i;
    if (pthread_create(&pool->workers[i - 1], NULL, worker_main, wa) != 0) {
      free(wa);
      break;
    }
    pool->started++;
  }
  if (pool->started != threads - 1) {
    piola_pool_destroy(pool);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  *out = pool;
  return PIOLA_OK;
}

void piola_pool_destroy(piola_pool *pool) {
  if (pool == NULL) {
    return;
  }
  pthread_mutex_lock(&pool->lock);
  pool->quit = true;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int32_t i = 0; i < pool->started; ++i) {
    pthread_join(pool->workers[i], NULL);
  }
  pthread_cond_destroy(&pool->done);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->lock);
  free(pool->workers);
  free(pool);
}

int32_t piola_pool_threads(const piola_pool *pool) {
  return pool != NULL ? pool->threads : 1;
}

void piola_pool_for(piola_pool *pool, int32_t count, int32_t grain, piola_range_fn *fn, void *ctx) {
  if (count <= 0) {
    return;
  }
  int32_t chunks = grain > 0 ? count / grain : count;
  if (pool == NULL || chunks < 2) {
    fn(ctx, 0, 0, count);
    return;
  }
  chunks = chunks < pool->threads ? chunks : pool->threads;
  pool->fn = fn;
  pool->ctx = ctx;
  pool->count = count;
  pool->chunks = chunks;
  atomic_store_explicit(&pool->pending, pool->threads - 1, memory_order_relaxed);
  pthread_mutex_lock(&pool->lock); /* a sleeping worker sees the new generation on waking */
  atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  int32_t begin, end;
  chunk_range(count, chunks, 0, &begin, &end);
  fn(ctx, 0, begin, end);
  for (int k = 0; k < SPINS; ++k) {
    if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0) {
      return;
    }
    pause_briefly();
  }
  pthread_mutex_lock(&pool->lock);
  while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0) {
    pthread_cond_wait(&pool->done, &pool->lock);
  }
  pthread_mutex_unlock(&pool->lock);
}
