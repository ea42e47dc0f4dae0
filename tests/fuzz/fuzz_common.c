/* Temporary files, a logger and a short simulation for the fuzz targets (fuzz_common.h). */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* mkstemp, ftruncate, pwrite */
#endif

#include "fuzz_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Temporary files -------------------------------------------------------------------- */

static char fuzz_paths[PIOLA_FUZZ_FILES][512];
static int fuzz_fds[PIOLA_FUZZ_FILES] = {-1, -1};

static void remove_files(void) {
  for (int i = 0; i < PIOLA_FUZZ_FILES; ++i) {
    if (fuzz_fds[i] >= 0) {
      close(fuzz_fds[i]);
      unlink(fuzz_paths[i]);
      fuzz_fds[i] = -1;
    }
  }
}

static void fuzz_fail(const char *what) {
  fprintf(stderr, "piola fuzz: %s\n", what);
  abort();
}

const char *piola_fuzz_write(int slot, const uint8_t *data, size_t size) {
  if (slot < 0 || slot >= PIOLA_FUZZ_FILES) {
    fuzz_fail("temporary file slot out of range");
  }
  if (fuzz_fds[slot] < 0) {
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_paths[slot], sizeof fuzz_paths[slot], "%s/piola_fuzz_XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    fuzz_fds[slot] = mkstemp(fuzz_paths[slot]);
    if (fuzz_fds[slot] < 0) {
      fuzz_fail("cannot create a temporary file (mkstemp)");
    }
    static int registered = 0;
    if (!registered) {
      registered = 1;
      atexit(remove_files);
    }
  }
  int fd = fuzz_fds[slot];
  if (ftruncate(fd, 0) != 0) {
    fuzz_fail("cannot truncate a temporary file");
  }
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
    if (n <= 0) {
      fuzz_fail("cannot write a temporary file");
    }
    done += (size_t)n;
  }
  return fuzz_paths[slot];
}

/* ---- Logger ------------------------------------------------------------------------------ */

static void fuzz_log(piola_log_level level, const char *message, void *user_data) {
  (void)user_data;
  if ((int)level < (int)PIOLA_LOG_ERROR || (int)level > (int)PIOLA_LOG_DEBUG || message == NULL) {
    fuzz_fail("logger called with a bad level or a NULL message");
  }
  volatile size_t len = strlen(message); /* reads the whole message: ASan checks it */
  (void)len;
}

piola_logger piola_fuzz_logger(void) {
  piola_logger logger = {fuzz_log, NULL};
  return logger;
}

/* ---- Simulation -------------------------------------------------------------------------- */

static void check_finite(const float *v, size_t n, const char *what, int step) {
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) {
      fprintf(stderr, "piola fuzz: %s[%zu] = %g after step %d\n", what, i, (double)v[i], step);
      abort();
    }
  }
}

/* Adds one copy of the mesh; aborts on an undocumented status. */
static piola_status add_copy(piola_world *world, const piola_tet_mesh *mesh,
                             const float translation[3], piola_body_id *body) {
  piola_material material = piola_default_material();
  piola_status s = piola_world_add_tet_body(world, mesh, &material, translation, body);
  if (s != PIOLA_OK && s != PIOLA_ERROR_INVALID_MESH && s != PIOLA_ERROR_NON_FINITE &&
      s != PIOLA_ERROR_OUT_OF_MEMORY) {
    fprintf(stderr, "piola fuzz: piola_world_add_tet_body: undocumented status %s\n",
            piola_status_string(s));
    abort();
  }
  return s;
}

void piola_fuzz_simulate(const piola_tet_mesh *mesh, const float translation[3], int steps,
                         int copies) {
  piola_world_def def = piola_default_world_def();
  def.backend = PIOLA_BACKEND_CPU_REFERENCE;
  def.logger = piola_fuzz_logger();
  piola_world *world = NULL;
  if (piola_world_create(&def, &world) != PIOLA_OK) {
    fuzz_fail("piola_world_create failed on the CPU reference");
  }
  const float up[3] = {0.0f, 1.0f, 0.0f};
  if (piola_world_add_plane(world, up, 0.0f, 0.5f, NULL) != PIOLA_OK) {
    fuzz_fail("piola_world_add_plane failed");
  }
  piola_body_id bodies[PIOLA_FUZZ_COPIES];
  int added = 0;
  copies = copies < 1 ? 1 : copies > PIOLA_FUZZ_COPIES ? PIOLA_FUZZ_COPIES : copies;
  piola_status s = add_copy(world, mesh, translation, &bodies[0]);
  if (getenv("PIOLA_FUZZ_VERBOSE") != NULL) { /* which inputs reach the steps */
    fprintf(stderr, "piola fuzz: %d vertices, %d tets: %s\n", (int)mesh->vertex_count,
            (int)mesh->tet_count, piola_status_string(s));
  }
  if (s == PIOLA_OK) {
    added = 1;
    /* Further copies overlap the first: half its extent higher and aside, so contact between
     * bodies has work from the first step on. */
    float lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
      lo[k] = hi[k] = mesh->positions[k];
    }
    for (size_t i = 0; i < (size_t)mesh->vertex_count; ++i) {
      for (int k = 0; k < 3; ++k) {
        lo[k] = fminf(lo[k], mesh->positions[3 * i + k]);
        hi[k] = fmaxf(hi[k], mesh->positions[3 * i + k]);
      }
    }
    for (int c = 1; c < copies; ++c) {
      float shift[3];
      for (int k = 0; k < 3; ++k) {
        float base = translation != NULL ? translation[k] : 0.0f;
        shift[k] = base + (k == 2 ? 0.0f : 0.5f * (float)c * (hi[k] - lo[k]));
      }
      if (add_copy(world, mesh, shift, &bodies[added]) == PIOLA_OK) {
        ++added;
      }
    }
  }
  for (int c = 0; c < added; ++c) {
    int32_t n = piola_body_get_vertex_count(world, bodies[c]);
    if (n != mesh->vertex_count) {
      fuzz_fail("a body's vertex count differs from the mesh's");
    }
  }
  if (added > 0) {
    size_t n = (size_t)mesh->vertex_count;
    float *xyz = malloc(sizeof *xyz * 3 * n);
    float *vel = malloc(sizeof *vel * 3 * n);
    if (xyz == NULL || vel == NULL) {
      fuzz_fail("out of memory in the fuzz target");
    }
    for (int step = 0; step <= steps; ++step) {
      if (step > 0 && (s = piola_world_step(world)) != PIOLA_OK) {
        fprintf(stderr, "piola fuzz: piola_world_step: %s\n", piola_status_string(s));
        abort();
      }
      for (int c = 0; c < added; ++c) {
        if (piola_body_get_positions(world, bodies[c], xyz, (int32_t)n) != PIOLA_OK ||
            piola_body_get_velocities(world, bodies[c], vel, (int32_t)n) != PIOLA_OK) {
          fuzz_fail("reading a body back failed");
        }
        check_finite(xyz, 3 * n, "position", step);
        check_finite(vel, 3 * n, "velocity", step);
      }
    }
    piola_stats stats;
    if (piola_world_get_stats(world, &stats) != PIOLA_OK) {
      fuzz_fail("piola_world_get_stats failed");
    }
    free(xyz);
    free(vel);
  }
  piola_world_destroy(world);
}
