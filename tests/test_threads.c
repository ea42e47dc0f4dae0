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
  for (int32_t slot = 0; slot < w->body_ids.count; ++slot) {
    piola_body_id id = {slot + 1, w->body_ids.slots[slot].generation};
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

/* One of the scenes of threads_cpu_reference_bitwise, on `threads` CPU reference threads:
 * 0: eight boxes of two materials in two columns, 2 cm apart, falling onto each other and the
 *    ground (the bodies go to the threads whole; body-body contacts; a sphere in the way);
 * 1: one box of 12288 tets squashed to 40% of its height (its colors split among the threads,
 *    the SVD path) falling onto a sphere and the ground;
 * 2: a 48 x 48 cloth with two pinned corners falling onto a sphere (cloth colors split). */
static piola_status make_threaded_scene(int kind, int32_t threads, piola_world **out) {
  piola_world_def def = piola_default_world_def();
  def.backend = PIOLA_BACKEND_CPU_REFERENCE;
  def.cpu_threads = threads;
  def.substeps = 2;
  piola_status s = piola_world_create(&def, out);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_world *w = *out;
  s = piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL);
  piola_collider_def ball = piola_default_collider_def();
  ball.type = PIOLA_COLLIDER_SPHERE;
  ball.shape.sphere.center[0] = 0.15f;
  ball.shape.sphere.center[1] = 0.1f;
  ball.shape.sphere.radius = 0.15f;
  if (s == PIOLA_OK) {
    s = piola_world_add_collider(w, &ball, NULL);
  }
  if (kind == 0) {
    piola_tet_mesh mesh = wt_box(3, 2, 2, 0.3f, 0.2f, 0.2f);
    piola_material soft = piola_default_material(), stiff = piola_default_material();
    soft.model = PIOLA_MODEL_NEOHOOKEAN;
    stiff.youngs_modulus = 1e6f;
    for (int b = 0; b < 8 && s == PIOLA_OK; ++b) {
      const float at[3] = {0.4f * (float)(b % 2), 0.05f + 0.22f * (float)(b / 2), 0.0f};
      s = piola_world_add_tet_body(w, &mesh, b % 3 ? &soft : &stiff, at, NULL);
    }
    piola_mesh_free(&mesh);
  } else if (kind == 1) {
    piola_tet_mesh mesh = wt_box(16, 8, 16, 0.4f, 0.2f, 0.4f);
    piola_material m = piola_default_material();
    m.model = PIOLA_MODEL_NEOHOOKEAN;
    for (int32_t i = 0; i < mesh.vertex_count; ++i) {
      mesh.positions[3 * i + 1] *= 0.4f;
    }
    piola_body_id id;
    s = s == PIOLA_OK
            ? piola_world_add_tet_body(w, &mesh, &m, (const float[3]){0.0f, 0.3f, 0.0f}, &id)
            : s;
    piola_mesh_free(&mesh);
  } else {
    piola_tri_mesh cloth;
    const int32_t cells[2] = {48, 48};
    const float size[2] = {0.6f, 0.6f};
    s = s == PIOLA_OK ? piola_mesh_make_grid(cells, size, &cloth) : s;
    if (s == PIOLA_OK) {
      const piola_cloth_material cm = piola_default_cloth_material();
      piola_body_id id;
      s = piola_world_add_cloth(w, &cloth, &cm, (const float[3]){-0.15f, 0.4f, -0.3f}, &id);
      const int32_t n = cloth.vertex_count;
      float *inv = s == PIOLA_OK ? malloc(sizeof *inv * (size_t)n) : NULL;
      if (inv != NULL && piola_body_get_inverse_masses(w, id, inv, n) == PIOLA_OK) {
        inv[0] = inv[48] = 0.0f;
        s = piola_body_set_inverse_masses(w, id, inv, n);
      }
      free(inv);
      piola_tri_mesh_free(&cloth);
    }
  }
  return s;
}

/* The CPU reference's own threads (def.cpu_threads, src/host/thread_pool.c) split only items
 * that share nothing they write: every scene ends in the state of one thread, to the bit, on 3
 * threads (more than this machine's cores) and on one per core; the stats name the count. Bad
 * counts are refused. CI runs this under ThreadSanitizer too. */
void test_threads_cpu_reference_bitwise(piola_test *t) {
  const int steps[3] = {100, 30, 40};
  for (int kind = 0; kind < 3; ++kind) {
    const int32_t counts[3] = {1, 3, 0};
    uint64_t hash[3] = {0, 0, 0};
    for (int c = 0; c < 3; ++c) {
      piola_world *w = NULL;
      piola_status s = make_threaded_scene(kind, counts[c], &w);
      CHECK_STATUS(t, s, PIOLA_OK);
      for (int k = 0; k < steps[kind] && s == PIOLA_OK; ++k) {
        s = piola_world_step(w);
      }
      CHECK_STATUS(t, s, PIOLA_OK);
      piola_stats st;
      if (s == PIOLA_OK && piola_world_get_stats(w, &st) == PIOLA_OK) {
        hash[c] = world_hash(w);
        if (counts[c] == 3) {
          CHECK_MSG(t, strstr(st.device_name, "3 threads") != NULL, "device name '%s'",
                    st.device_name);
        }
        if (kind == 0 && c == 0) {
          CHECK_MSG(t, st.contact_count > 100, "the boxes of scene 0: %d contacts",
                    (int)st.contact_count);
        }
      }
      piola_world_destroy(w);
    }
    CHECK_MSG(t, hash[1] == hash[0] && hash[2] == hash[0],
              "scene %d: hash %016llx on 1 thread, %016llx on 3, %016llx on one per core", kind,
              (unsigned long long)hash[0], (unsigned long long)hash[1],
              (unsigned long long)hash[2]);
  }
  const int32_t bad[2] = {-1, 257};
  for (int i = 0; i < 2; ++i) {
    piola_world_def def = piola_default_world_def();
    def.backend = PIOLA_BACKEND_CPU_REFERENCE;
    def.cpu_threads = bad[i];
    piola_world *w = NULL;
    CHECK_STATUS(t, piola_world_create(&def, &w), PIOLA_ERROR_INVALID_ARGUMENT);
    CHECK(t, w == NULL);
  }
}
