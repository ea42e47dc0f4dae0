/* Piola CPU reference backend: the table of operations (backend.h) of the double-precision
 * reference. Its state is the host arrays themselves, so the moves between host and backend are
 * empty; a stage runs piola_cpu_stage() (cpu_reference.c) on the world's threads and is timed on
 * the host. */
#include "world.h"

#include "cpu_reference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static piola_status cpu_create(piola_world *w, piola_faults *faults) {
  (void)faults;
  const int32_t threads = w->def.cpu_threads > 0 ? w->def.cpu_threads : piola_online_cores();
  piola_status s = piola_pool_create(threads, &w->pool);
  if (s != PIOLA_OK) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "piola_world_create: could not start %d threads",
              (int)threads);
  }
  return s;
}

static void cpu_destroy(piola_world *w) {
  piola_pool_destroy(w->pool);
  w->pool = NULL;
}

static bool cpu_false(const piola_world *w) {
  (void)w;
  return false;
}

static bool cpu_true(const piola_world *w) {
  (void)w;
  return true;
}

static piola_status cpu_ok(piola_world *w) {
  (void)w;
  return PIOLA_OK;
}

/* The colliders' impulse records start the step at zero; growing them is the only way the
 * CPU reference's step fails (before its stages). */
static piola_status cpu_begin_step(piola_world *w) {
  const size_t n = 6 * (size_t)w->collider_count * (size_t)w->vertex_count;
  if (n > w->collider_impulse_capacity) {
    double *r = realloc(w->collider_impulse, sizeof *r * n);
    if (r == NULL) {
      piola_log(&w->def.logger, PIOLA_LOG_ERROR,
                "piola_world_step: no memory for the colliders' impulse records (%zu bytes)",
                sizeof *r * n);
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    w->collider_impulse = r;
    w->collider_impulse_capacity = n;
  }
  if (n > 0) {
    memset(w->collider_impulse, 0, sizeof *w->collider_impulse * n);
  }
  return PIOLA_OK;
}

/* The sums of a collider's impulse records over the vertices, in vertex order. */
static piola_status cpu_collider_impulse(const piola_world *w, int32_t collider, double out[6]) {
  memset(out, 0, 6 * sizeof *out);
  const size_t nv = (size_t)w->vertex_count;
  if (w->collider_impulse == NULL ||
      6 * (size_t)(collider + 1) * nv > w->collider_impulse_capacity) {
    return PIOLA_OK;
  }
  const double *r = w->collider_impulse + 6 * (size_t)collider * nv;
  for (size_t i = 0; i < nv; ++i) {
    for (int k = 0; k < 6; ++k) {
      out[k] += r[6 * i + (size_t)k];
    }
  }
  return PIOLA_OK;
}

/* Runs one stage on the host, timing it. The solve pass times its cloth kinds itself (into
 * PIOLA_STAGE_SOLVE_CLOTH and _BENDING); the rest is the stage's. */
static piola_status cpu_stage(piola_world *w, piola_stage stage, double h) {
  const double kinds0 =
      w->stage_ms[PIOLA_STAGE_SOLVE_CLOTH] + w->stage_ms[PIOLA_STAGE_SOLVE_BENDING];
  double t0 = piola_now_ms();
  piola_cpu_stage(w, stage, h);
  const double kinds1 =
      w->stage_ms[PIOLA_STAGE_SOLVE_CLOTH] + w->stage_ms[PIOLA_STAGE_SOLVE_BENDING];
  w->stage_ms[stage] += piola_now_ms() - t0 - (kinds1 - kinds0);
  return PIOLA_OK;
}

/* The CPU reference fails only before its stages, with the host arrays as they were. */
static piola_status cpu_abort_step(piola_world *w, bool from_host, piola_status s) {
  (void)w;
  (void)from_host;
  return s;
}

/* A loaded state: vertex block descent's initial guess has no last velocity for it. */
static void cpu_invalidate(piola_world *w) {
  w->vbd.have_last = false;
}

static piola_status cpu_range(piola_world *w, int32_t first, int32_t count) {
  (void)w;
  (void)first;
  (void)count;
  return PIOLA_OK;
}

static piola_status cpu_push_range(piola_world *w, int32_t first, int32_t count, bool positions,
                                   bool velocities) {
  (void)positions;
  (void)velocities;
  return cpu_range(w, first, count);
}

static void cpu_colliders_changed(piola_world *w, int32_t first, int32_t end) {
  (void)w;
  (void)first;
  (void)end;
}

/* The host arrays are current: the reads of the live state are those of the host arrays. */
static piola_status cpu_read_range(const piola_world *w, int32_t first, int32_t count, float *xyz,
                                   float *vel) {
  const double *src[2] = {w->x, w->v};
  float *dst[2] = {xyz, vel};
  for (int k = 0; k < 2; ++k) {
    for (size_t i = 0; dst[k] != NULL && i < 3 * (size_t)count; ++i) {
      dst[k][i] = (float)src[k][3 * (size_t)first + i];
    }
  }
  return PIOLA_OK;
}

static piola_status cpu_read_all(const piola_world *w, double *x, double *v, double *tet_m,
                                 double *lambda) {
  const size_t nv = 3 * (size_t)w->vertex_count, nt = (size_t)w->solver.tet_count;
  memcpy(x, w->x, sizeof *x * nv);
  memcpy(v, w->v, sizeof *v * nv);
  memcpy(tet_m, w->solver.tet_m, sizeof *tet_m * 9 * nt);
  memcpy(lambda, w->solver.tet_lambda, sizeof *lambda * 2 * nt);
  return PIOLA_OK;
}

static piola_status cpu_read_prediction(const piola_world *w, double *gap, double *motion,
                                        uint8_t *constrained) {
  for (size_t i = 0; i < 3 * (size_t)w->vertex_count; ++i) {
    gap[i] = w->x[i] - w->y[i];
    motion[i] = w->x[i] - w->x_start[i];
  }
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    constrained[i] = w->collider_count > 0 && w->collider_pushed[i];
  }
  if (piola_contacts_active(w)) {
    const piola_solver_contacts *c = &w->contacts;
    const bool edges = piola_edge_contacts_active(w);
    piola_contacts_mark(c, c->contact_count, c->contact_triangle,
                        edges ? c->edge_contact_count : NULL, edges ? c->edge_contact_entry : NULL,
                        constrained);
  }
  return PIOLA_OK;
}

static piola_status cpu_contact_counters(const piola_world *w, int32_t out[4]) {
  out[0] = w->contacts.total;
  out[1] = w->contacts.overflow;
  out[2] = w->contacts.edge_total;
  out[3] = w->contacts.edge_overflow;
  return PIOLA_OK;
}

static void cpu_attachments_release(const piola_world *w, piola_solver_attachments *a) {
  (void)w;
  (void)a;
}

static piola_status cpu_render_upload(piola_world *w, piola_render_mesh *rm, const piola_body *b) {
  (void)w;
  (void)rm;
  (void)b;
  return PIOLA_OK;
}

static void cpu_render_release(const piola_world *w, piola_render_mesh *rm) {
  (void)w;
  (void)rm;
}

static void cpu_stage_times(const piola_world *w, double out[PIOLA_STAGE_COUNT]) {
  memcpy(out, w->stage_ms, sizeof w->stage_ms);
}

static void cpu_describe(const piola_world *w, piola_stats *st) {
  const int threads = (int)piola_pool_threads(w->pool);
  snprintf(st->device_name, sizeof st->device_name, "CPU reference (double, %d thread%s)", threads,
           threads == 1 ? "" : "s");
  cpu_stage_times(w, st->stage_ms);
}

static int32_t cpu_kernel_times(const piola_world *w, piola_kernel_time *out, int32_t capacity) {
  (void)w;
  (void)out;
  (void)capacity;
  return 0;
}

const piola_backend_ops piola_cpu_backend = {
    .kind = PIOLA_BACKEND_CPU_REFERENCE,
    .list_devices = NULL,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .lost = cpu_false,
    .begin_step = cpu_begin_step,
    .stage = cpu_stage,
    .end_step = cpu_ok,
    .abort_step = cpu_abort_step,
    .finish = cpu_ok,
    .per_body = cpu_false,
    .substep_bodies = NULL,
    .host_current = cpu_true,
    .pull = cpu_ok,
    .invalidate = cpu_invalidate,
    .pull_range = cpu_range,
    .push_range = cpu_push_range,
    .push_forces = cpu_range,
    .colliders_changed = cpu_colliders_changed,
    .collider_impulse = cpu_collider_impulse,
    .read_range = cpu_read_range,
    .read_all = cpu_read_all,
    .read_prediction = cpu_read_prediction,
    .contact_counters = cpu_contact_counters,
    .attachments_upload = cpu_ok,
    .attachments_release = cpu_attachments_release,
    .render_upload = cpu_render_upload,
    .render_compute = NULL,
    .render_release = cpu_render_release,
    .describe = cpu_describe,
    .stage_times = cpu_stage_times,
    .kernel_times = cpu_kernel_times,
};
