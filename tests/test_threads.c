/* Threads (issue 12, item 5): the library holds no global state, so independent worlds may be
 * stepped from several threads at once, each world used by one thread at a time. Four worlds
 * (boxes dropped onto the ground, with body-body contact, colliders and different settings) are
 * stepped sequentially, then again from four threads at once: the final state hashes must be
 * equal. CI runs this test under ThreadSanitizer (.ci/run, build-tsan), on the CPU reference. */
#include "world_helpers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREAD_WORLDS 4
#define THREAD_STEPS 150

typedef struct thread_job {
  int index;
  piola_world *world; /* made by the caller, or NULL: the thread makes and destroys its own */
  uint64_t hash;
  piola_status status;
} thread_job;

/* World `index`: two boxes of its own size and material above a ground plane. */
static piola_status make_world(int index, piola_world **out) {
  piola_world_def def = piola_default_world_def();
  def.backend = PIOLA_BACKEND_CPU_REFERENCE;
  def.iterations = 4 + index;
  def.substeps = 1 + index % 2;
  piola_status s = piola_world_create(&def, out);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_world *w = *out;
  s = piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL);
  piola_tet_mesh mesh = wt_box(2, 2, 2, 0.3f + 0.05f * (float)index, 0.3f, 0.3f);
  piola_material mat = piola_default_material();
  mat.model = index % 2 ? PIOLA_MODEL_NEOHOOKEAN : PIOLA_MODEL_STVK;
  mat.youngs_modulus = 1e5f * (float)(index + 1);
  for (int b = 0; b < 2 && s == PIOLA_OK; ++b) {
    const float at[3] = {0.1f * (float)b, 0.1f + 0.4f * (float)b, 0.0f};
    s = piola_world_add_tet_body(w, &mesh, &mat, at, NULL);
  }
  piola_mesh_free(&mesh);
  return s;
}

/* Hash of every body's positions and velocities after the steps. */
static uint64_t world_hash(const piola_world *w) {
  uint64_t h = PIOLA_TEST_FNV_OFFSET;
  for (int32_t slot = 0; slot < w->body_slots; ++slot) {
    piola_body_id id = {slot + 1, w->bodies[slot].generation};
    int32_t n = piola_body_get_vertex_count(w, id);
    float *buf = n > 0 ? malloc(sizeof *buf * 6 * (size_t)n) : NULL;
    if (buf != NULL && piola_body_get_positions(w, id, buf, n) == PIOLA_OK &&
        piola_body_get_velocities(w, id, buf + 3 * n, n) == PIOLA_OK) {
      h = piola_test_fnv1a(h, buf, sizeof *buf * 6 * (size_t)n);
    }
    free(buf);
  }
  return h;
}

static void *run_job(void *arg) {
  thread_job *job = arg;
  piola_world *w = job->world;
  job->status = w != NULL ? PIOLA_OK : make_world(job->index, &w);
  for (int s = 0; s < THREAD_STEPS && job->status == PIOLA_OK; ++s) {
    job->status = piola_world_step(w);
  }
  piola_stats st;
  if (job->status == PIOLA_OK) {
    job->status = piola_world_get_stats(w, &st);
  }
  job->hash = job->status == PIOLA_OK ? world_hash(w) : 0;
  if (job->world == NULL) {
    piola_world_destroy(w);
  }
  return NULL;
}

void test_threads_step_worlds_concurrently(piola_test *t) {
  thread_job seq[THREAD_WORLDS], par[THREAD_WORLDS], handed[THREAD_WORLDS];
  /* Sequentially, one world after the other. */
  for (int i = 0; i < THREAD_WORLDS; ++i) {
    seq[i] = (thread_job){i, NULL, 0, PIOLA_OK};
    run_job(&seq[i]);
    REQUIRE_OK(t, seq[i].status);
  }
  for (int i = 1; i < THREAD_WORLDS; ++i) {
    CHECK_MSG(t, seq[i].hash != seq[0].hash, "worlds 0 and %d ended alike", i);
  }
  /* Every world made, stepped and destroyed by its own thread, all at once. */
  pthread_t threads[THREAD_WORLDS];
  for (int i = 0; i < THREAD_WORLDS; ++i) {
    par[i] = (thread_job){i, NULL, 0, PIOLA_OK};
    REQUIRE(t, pthread_create(&threads[i], NULL, run_job, &par[i]) == 0);
  }
  for (int i = 0; i < THREAD_WORLDS; ++i) {
    REQUIRE(t, pthread_join(threads[i], NULL) == 0);
  }
  /* Worlds made on this thread, handed to the threads, destroyed here after the join: each
   * used by one thread at a time. */
  for (int i = 0; i < THREAD_WORLDS; ++i) {
    handed[i] = (thread_job){i, NULL, 0, PIOLA_OK};
    REQUIRE_OK(t, make_world(i, &handed[i].world));
  }
  for (int i = 0; i < THREAD_WORLDS; ++i) {
    REQUIRE(t, pthread_create(&threads[i], NULL, run_job, &handed[i]) == 0);
  }
  for (int i = 0; i < THREAD_WORLDS; ++i) {
    REQUIRE(t, pthread_join(threads[i], NULL) == 0);
    piola_world_destroy(handed[i].world);
  }
  for (int i = 0; i < THREAD_WORLDS; ++i) {
    CHECK_STATUS(t, par[i].status, PIOLA_OK);
    CHECK_STATUS(t, handed[i].status, PIOLA_OK);
    CHECK_MSG(t, par[i].hash == seq[i].hash && handed[i].hash == seq[i].hash,
              "world %d: hash %016llx sequential, %016llx own thread, %016llx handed over", i,
              (unsigned long long)seq[i].hash, (unsigned long long)par[i].hash,
              (unsigned long long)handed[i].hash);
  }
}
