/* Piola world: the public API over bodies, materials, colliders and the step schedule.
 *
 * The step is written once, here, as the ordered list of stages of XPBD (Macklin, Mueller,
 * Chentanez 2016, Algorithm 1, with the substepping of Macklin et al. 2019, "Small Steps in
 * Physics Simulation"):
 *
 *   h = dt / substeps; repeat substeps times:
 *     predict; reset multipliers;
 *     broad phase; narrow phase (contacts: once per substep, from x to the predicted p);
 *     repeat iterations times: solve tets (color by color); contacts; collide (each collider
 *       at its pose at the end of the substep);
 *     with contacts: the inverted-tet pass (solve tets, only those with det F <= 0; repeated
 *       while a sweep does work, PIOLA_INVERTED_PASSES times at most);
 *     update velocities (and damp); plasticity (plastic bodies only)
 *
 * The inverted-tet pass: contacts are projected after the tets, so they have the last word in
 * every iteration, and where a contact presses on a flat tet whose four corners lie on the
 * surface (a sliver of the mesh) it can turn the tet over by a fraction of a millimetre; the
 * tets' projection turns it back in the next iteration and the contact over again, so the
 * sliver would end every substep inverted. One more pass over the colors after the iterations
 * projects the tets that end the iterations inverted, and only those (each with its own
 * inversion handling, from its multipliers of the substep), so that no contact leaves a tet
 * turned over; every other tet and every contact keep the iterations' result. One projection
 * lifts a sliver pressed deep through its base only part of the way, so the pass sweeps the
 * colors again while a sweep did work, up to PIOLA_INVERTED_PASSES (4) sweeps. Supported corners
 * are not moved into their colliders (piola_tet_support).
 *   colliders advance along their velocities by dt
 *
 * Each backend runs a stage its own way (cpu_reference.c on host doubles, opencl_backend.c as
 * kernel launches). Every call validates all of its input before it changes anything, so a
 * failed call leaves the world as it was.
 */
#include "piola_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Small helpers ------------------------------------------------------------------- */

/* Grows the vertex arrays together; capacity changes only when all of them grew. */
static bool grow_vertices(piola_world *w, int32_t needed) {
  if (needed <= w->vertex_capacity) {
    return true;
  }
  int32_t cap = w->vertex_capacity;
  int32_t c;
  double **arrays[3] = {&w->x, &w->p, &w->v};
  for (int i = 0; i < 3; ++i) {
    c = cap;
    if (!piola_grow((void **)arrays[i], 3 * sizeof(double), needed, &c)) {
      return false;
    }
  }
  c = cap;
  if (!piola_grow((void **)&w->w, sizeof(double), needed, &c)) {
    return false;
  }
  if (w->f != NULL) {
    c = cap;
    if (!piola_grow((void **)&w->f, 3 * sizeof(double), needed, &c)) {
      return false;
    }
  }
  w->vertex_capacity = c;
  return true;
}

static void free_body(piola_body *b) {
  free(b->tets);
  free(b->colors);
  free(b->color_start);
  free(b->by_color);
  free(b->dm_inv);
  free(b->volume);
  free(b->plastic_strain);
  free(b->m_eff);
  free(b->surface);
  free(b->surface_vertices);
  free(b->surface_rest);
  free(b->surface_reach);
  free(b->near_first);
  free(b->near_mask);
  free(b->tris);
  free(b->tri_dm_inv);
  free(b->tri_area);
  free(b->bends);
  free(b->bend_rest);
  free(b->cloth_color_start);
  free(b->cloth_by_color);
  uint32_t generation = b->generation;
  memset(b, 0, sizeof *b);
  b->generation = generation;
}

static void free_solver_tets(piola_solver_tets *st) {
  free(st->tet_vertices);
  free(st->tet_m);
  free(st->tet_volume);
  free(st->tet_lambda);
  free(st->tet_material);
  free(st->tet_body);
  free(st->tet_local);
  free(st->color_first);
  free(st->color_size);
  free(st->plastic_tet);
  free(st->plastic_dm_rest);
  free(st->plastic_strain);
  free(st->jacobi_vertices);
  free(st->jacobi_start);
  free(st->jacobi_incidence);
  free(st->jacobi_delta);
  free(st->support);
  free(st->body_vertex);
  free(st->body_color);
  free(st->body_jacobi);
  memset(st, 0, sizeof *st);
}

static void free_solver_cloth(piola_solver_cloth *c) {
  free(c->tri_vertices);
  free(c->tri_dm_inv);
  free(c->tri_area);
  free(c->tri_lambda);
  free(c->bend_vertices);
  free(c->bend_rest);
  free(c->bend_lambda);
  free(c->bend_material);
  for (int k = 0; k < PIOLA_CLOTH_KIND_COUNT; ++k) {
    free(c->kind_first[k]);
    free(c->kind_size[k]);
  }
  memset(c, 0, sizeof *c);
}

/* Before bodies come or go: makes the host arrays current (the OpenCL device may be ahead of
 * them) and moves the live plastic state back into the bodies. */
static piola_status begin_topology_change(piola_world *w) {
  piola_status s = w->cl != NULL ? piola_opencl_pull(w) : PIOLA_OK;
  if (s == PIOLA_OK) {
    piola_world_sync_plastic(w);
  }
  return s;
}

/* After a change of the bodies: the solver arrays are rebuilt at the next step and the device
 * state re-uploaded (begin_topology_change() made the host current). */
static void solver_arrays_changed(piola_world *w) {
  w->tets_dirty = true;
  if (w->cl != NULL) {
    piola_opencl_invalidate(w);
  }
}

piola_body *piola_world_body(const piola_world *w, piola_body_id id) {
  int32_t slot = id.index1 - 1;
  if (slot < 0 || slot >= w->body_slots || !w->bodies[slot].alive ||
      w->bodies[slot].generation != id.generation) {
    PIOLA_MISUSE(w, "body id is valid");
    return NULL;
  }
  return &w->bodies[slot];
}

bool piola_body_is_valid(const piola_world *w, piola_body_id id) {
  int32_t slot = id.index1 - 1;
  return w != NULL && slot >= 0 && slot < w->body_slots && w->bodies[slot].alive &&
         w->bodies[slot].generation == id.generation;
}

/* ---- World --------------------------------------------------------------------------- */

static piola_status check_world_def(const piola_world_def *def, char *reason, size_t n) {
  if (def->internal_cookie != PIOLA_COOKIE) {
    snprintf(reason, n, "world def not made by piola_default_world_def()");
    return PIOLA_ERROR_INVALID_DEF;
  }
  if (!piola_finite3(def->gravity) || !isfinite(def->dt) || !isfinite(def->damping) ||
      !isfinite(def->jacobi_omega)) {
    snprintf(reason, n, "gravity, dt, damping and jacobi_omega must be finite");
    return PIOLA_ERROR_NON_FINITE;
  }
  if ((def->iteration_scheme != PIOLA_SCHEME_GAUSS_SEIDEL &&
       def->iteration_scheme != PIOLA_SCHEME_JACOBI) ||
      def->max_colors < 0 || !(def->jacobi_omega > 0.0f && def->jacobi_omega < 2.0f) ||
      (def->schedule != PIOLA_SCHEDULE_AUTO && def->schedule != PIOLA_SCHEDULE_STAGES &&
       def->schedule != PIOLA_SCHEDULE_BODIES)) {
    snprintf(reason, n,
             "need a known iteration scheme (%d), max_colors >= 0 (%d), jacobi_omega in "
             "(0, 2) (%g) and a known schedule (%d)",
             (int)def->iteration_scheme, (int)def->max_colors, (double)def->jacobi_omega,
             (int)def->schedule);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!isfinite(def->contact_thickness) || !isfinite(def->contact_friction)) {
    snprintf(reason, n, "contact_thickness and contact_friction must be finite");
    return PIOLA_ERROR_NON_FINITE;
  }
  if (!(def->contact_thickness > 0.0f) || !(def->contact_friction >= 0.0f)) {
    snprintf(reason, n, "need contact_thickness > 0 m (%g) and contact_friction >= 0 (%g)",
             (double)def->contact_thickness, (double)def->contact_friction);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (def->simd_lanes != 0 && def->simd_lanes != 1 && def->simd_lanes != 4 &&
      def->simd_lanes != 8 && def->simd_lanes != 16) {
    snprintf(reason, n, "simd_lanes must be 0 (per device), 1, 4, 8 or 16 (%d)",
             (int)def->simd_lanes);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (def->cpu_threads < 0 || def->cpu_threads > PIOLA_MAX_CPU_THREADS) {
    snprintf(reason, n, "cpu_threads must be 0 (one per core) to %d (%d)", PIOLA_MAX_CPU_THREADS,
             (int)def->cpu_threads);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!(def->dt > 0.0f) || def->substeps < 1 || def->iterations < 1 || !(def->damping >= 0.0f) ||
      def->work_group_size < 0 ||
      (def->backend != PIOLA_BACKEND_AUTO && def->backend != PIOLA_BACKEND_CPU_REFERENCE &&
       def->backend != PIOLA_BACKEND_OPENCL)) {
    snprintf(reason, n,
             "need dt > 0 s (%g), substeps >= 1 (%d), iterations >= 1 (%d), damping >= 0 1/s "
             "(%g), work_group_size >= 0 (%d) and a known backend (%d)",
             (double)def->dt, (int)def->substeps, (int)def->iterations, (double)def->damping,
             (int)def->work_group_size, (int)def->backend);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  return PIOLA_OK;
}

void piola_faults_arm(piola_faults *f, piola_fault_kind kind, int32_t nth, int32_t error) {
  f->kind = kind;
  f->nth = nth;
  f->error = error;
  memset(f->calls, 0, sizeof f->calls);
  f->injected = 0;
}

piola_status piola_world_create(const piola_world_def *def, piola_world **out) {
  return piola_world_create_with_faults(def, NULL, out);
}

piola_status piola_world_create_with_faults(const piola_world_def *def, piola_faults *faults,
                                            piola_world **out) {
  if (out == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  *out = NULL;
  if (def == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  char reason[256];
  piola_status s = check_world_def(def, reason, sizeof reason);
  if (s != PIOLA_OK) {
    piola_log(&def->logger, PIOLA_LOG_ERROR, "piola_world_create: %s", reason);
    return s;
  }
  piola_world *w = calloc(1, sizeof *w);
  if (w == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  w->def = *def;
  w->backend = PIOLA_BACKEND_CPU_REFERENCE;
  if (def->backend == PIOLA_BACKEND_OPENCL || def->backend == PIOLA_BACKEND_AUTO) {
    s = piola_opencl_create(w, faults);
    if (s == PIOLA_OK) {
      w->backend = PIOLA_BACKEND_OPENCL;
    } else if (def->backend == PIOLA_BACKEND_OPENCL) {
      free(w);
      return s;
    } else {
      piola_log(&def->logger, PIOLA_LOG_INFO,
                "backend auto: no usable OpenCL device (%s); using the CPU reference",
                piola_status_string(s));
    }
  }
  if (w->backend == PIOLA_BACKEND_CPU_REFERENCE) {
    const int32_t threads = def->cpu_threads > 0 ? def->cpu_threads : piola_online_cores();
    s = piola_pool_create(threads, &w->pool);
    if (s != PIOLA_OK) {
      piola_log(&def->logger, PIOLA_LOG_ERROR, "piola_world_create: could not start %d threads",
                (int)threads);
      free(w);
      return s;
    }
  }
  *out = w;
  return PIOLA_OK;
}

void piola_world_destroy(piola_world *w) {
  if (w == NULL) {
    return;
  }
  piola_render_meshes_free(w);
  piola_attachments_free(w);
  piola_opencl_destroy(w);
  piola_pool_destroy(w->pool);
  for (int32_t i = 0; i < w->body_slots; ++i) {
    free_body(&w->bodies[i]);
  }
  free(w->bodies);
  free(w->materials);
  free(w->cloth_materials);
  free(w->colliders);
  free(w->collider_slot);
  free(w->collider_slots);
  free(w->x);
  free(w->p);
  free(w->v);
  free(w->w);
  free(w->f);
  free_solver_tets(&w->solver);
  free_solver_cloth(&w->cloth);
  piola_contacts_free(&w->contacts);
  free(w);
}

static void advance_colliders(piola_world *w);

/* Runs one backend stage, timing it on the host for the CPU reference. The solve pass times
 * its cloth kinds itself (into PIOLA_STAGE_SOLVE_CLOTH and _BENDING); the rest is the stage's. */
static piola_status run_stage(piola_world *w, piola_stage stage, double h) {
  if (w->cl != NULL) {
    return piola_opencl_stage(w, stage, h);
  }
  const double kinds0 =
      w->stage_ms[PIOLA_STAGE_SOLVE_CLOTH] + w->stage_ms[PIOLA_STAGE_SOLVE_BENDING];
  double t0 = piola_now_ms();
  piola_cpu_stage(w, stage, h);
  const double kinds1 =
      w->stage_ms[PIOLA_STAGE_SOLVE_CLOTH] + w->stage_ms[PIOLA_STAGE_SOLVE_BENDING];
  w->stage_ms[stage] += piola_now_ms() - t0 - (kinds1 - kinds0);
  return PIOLA_OK;
}

piola_status piola_world_step(piola_world *w) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  double t0 = piola_now_ms();
  /* New solver arrays move vertices: the attachments are rebuilt with them (marked here, so that
   * a step failing before the rebuild still rebuilds them next time). */
  if (w->tets_dirty) {
    w->attachments_dirty = true;
  }
  /* Whether this step uploads the state from the host: then a failure on the device leaves the
   * host arrays with the state before the step, and the world as it was (see abort below). */
  const bool from_host = w->cl != NULL && !piola_opencl_live(w);
  /* A failed step leaves the solver arrays to be built again, as it found them. */
  const bool tets_were_dirty = w->tets_dirty;
  piola_status s = piola_world_build_tets(w);
  if (s == PIOLA_OK && w->cl != NULL) {
    s = piola_opencl_begin_step(w);
  }
  if (s == PIOLA_OK && w->attachments_dirty) {
    s = piola_attachments_build(w);
  }
  if (s != PIOLA_OK) {
    /* Nothing ran: the device holds the state before the step (or nothing, when the upload
     * failed and it is re-uploaded next time). */
    if (tets_were_dirty) {
      w->tets_dirty = true;
      if (w->cl != NULL) {
        piola_opencl_invalidate(w); /* the host is current: the device is uploaded again */
      }
    }
    return piola_opencl_lost(w) ? PIOLA_ERROR_DEVICE_LOST : s;
  }
  memset(w->stage_ms, 0, sizeof w->stage_ms);
  const int32_t substeps = w->def.substeps;
  const double h = (double)w->def.dt / substeps;
  /* The step, stage by stage (see the module comment). Under the OpenCL per-body schedule one
   * launch runs a tet body's stages up to the velocities (piola_substep_bodies); with contacts,
   * which couple the bodies, attachments, or cloth (whose vertices are in no per-body list), it
   * runs them in parts around the other stages: the tets' iterations per body. */
  const bool per_body = w->cl != NULL && piola_opencl_per_body(w);
  const bool contacts = piola_contacts_active(w);
  const bool attachments = w->attach.count > 0;
  const bool only_tet_bodies = w->solver.body_count == w->body_count;
  for (int32_t sub = 0; sub < substeps && s == PIOLA_OK; ++sub) {
    w->collider_time = (double)(sub + 1) * h; /* colliders stand at the end of the substep */
    w->substep = sub;
    if (per_body && !contacts && !attachments && only_tet_bodies) {
      s = piola_opencl_substep_bodies(w, h, PIOLA_BODIES_WHOLE_SUBSTEP);
    } else {
      if (per_body && only_tet_bodies) {
        s = piola_opencl_substep_bodies(w, h, PIOLA_BODIES_PREDICT);
      } else {
        s = run_stage(w, PIOLA_STAGE_PREDICT, h);
        if (s == PIOLA_OK) {
          s = run_stage(w, PIOLA_STAGE_RESET_MULTIPLIERS, h);
        }
      }
      if (s == PIOLA_OK && contacts) {
        s = run_stage(w, PIOLA_STAGE_BROAD_PHASE, h);
        if (s == PIOLA_OK) {
          s = run_stage(w, PIOLA_STAGE_NARROW_PHASE, h);
        }
      }
      for (int32_t it = 0; it < w->def.iterations && s == PIOLA_OK; ++it) {
        w->iteration = it;
        s = per_body ? piola_opencl_substep_bodies(w, h, PIOLA_BODIES_ITERATION)
                     : run_stage(w, PIOLA_STAGE_SOLVE_TETS, h);
        if (s == PIOLA_OK && contacts) {
          s = run_stage(w, PIOLA_STAGE_CONTACT, h);
        }
        if (s == PIOLA_OK && attachments) {
          s = run_stage(w, PIOLA_STAGE_ATTACHMENTS, h);
        }
        if (s == PIOLA_OK && w->collider_count > 0) {
          s = run_stage(w, PIOLA_STAGE_COLLIDE, h);
        }
      }
      if (s == PIOLA_OK && contacts) {
        w->tets_inverted_only = true;
        s = per_body ? piola_opencl_substep_bodies(w, h, PIOLA_BODIES_INVERTED)
                     : run_stage(w, PIOLA_STAGE_SOLVE_TETS, h);
        w->tets_inverted_only = false;
      }
      if (s == PIOLA_OK) {
        s = run_stage(w, PIOLA_STAGE_UPDATE_VELOCITIES, h);
      }
    }
    if (s == PIOLA_OK && w->solver.plastic_count > 0) {
      s = run_stage(w, PIOLA_STAGE_PLASTICITY, h);
    }
  }
  if (s == PIOLA_OK && w->cl != NULL) {
    s = piola_opencl_end_step(w);
  }
  if (s != PIOLA_OK) {
    /* The CPU reference fails only before its stages. On OpenCL the device state may be half
     * advanced: restored (dropped in favour of the host's) or the world is lost. */
    w->tets_dirty = w->tets_dirty || tets_were_dirty;
    return w->cl != NULL ? piola_opencl_abort_step(w, from_host, s) : s;
  }
  advance_colliders(w);
  w->step_count++;
  w->simulated_time += (double)w->def.dt;
  w->last_step_ms = piola_now_ms() - t0;
  return PIOLA_OK;
}

piola_status piola_world_finish(piola_world *w) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  return w->cl != NULL ? piola_opencl_finish(w) : PIOLA_OK;
}

piola_status piola_world_set_iterations(piola_world *w, int32_t iterations) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (iterations < 1) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "iterations must be >= 1 (got %d)", (int)iterations);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  w->def.iterations = iterations;
  return PIOLA_OK;
}

piola_status piola_world_set_gravity(piola_world *w, const float gravity[3]) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL || gravity == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!piola_finite3(gravity)) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "gravity must be finite");
    return PIOLA_ERROR_NON_FINITE;
  }
  memcpy(w->def.gravity, gravity, sizeof w->def.gravity);
  return PIOLA_OK;
}

piola_status piola_world_get_stage_times(const piola_world *w, double stage_ms[PIOLA_STAGE_COUNT]) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL || stage_ms == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (w->cl != NULL) {
    piola_opencl_stage_ms(w, stage_ms);
  } else {
    memcpy(stage_ms, w->stage_ms, sizeof w->stage_ms);
  }
  return PIOLA_OK;
}

piola_status piola_world_get_kernel_times(const piola_world *w, piola_kernel_time *times,
                                          int32_t capacity, int32_t *count) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL || capacity < 0 || (times == NULL && capacity > 0)) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const int32_t n = w->cl != NULL ? piola_opencl_kernel_times(w, times, capacity) : 0;
  if (count != NULL) {
    *count = n;
  }
  return PIOLA_OK;
}

piola_status piola_world_get_color_sizes(const piola_world *w, int32_t *sizes, int32_t capacity,
                                         int32_t *color_count) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL || capacity < 0 || (sizes == NULL && capacity > 0)) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  /* Computed from the bodies, so it is right before the first step too. */
  int32_t count = 0;
  for (int32_t i = 0; i < w->body_slots; ++i) {
    if (w->bodies[i].alive && w->bodies[i].color_count > count) {
      count = w->bodies[i].color_count;
    }
  }
  for (int32_t c = 0; c < count && c < capacity; ++c) {
    int32_t n = 0;
    for (int32_t i = 0; i < w->body_slots; ++i) {
      const piola_body *b = &w->bodies[i];
      if (b->alive && c < b->color_count) {
        n += b->color_start[c + 1] - b->color_start[c];
      }
    }
    sizes[c] = n;
  }
  if (color_count != NULL) {
    *color_count = count;
  }
  return PIOLA_OK;
}

piola_status piola_world_get_stats(const piola_world *w, piola_stats *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL || out == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_stats st;
  memset(&st, 0, sizeof st);
  st.body_count = w->body_count;
  st.vertex_count = w->vertex_count;
  st.collider_count = w->collider_count;
  st.step_count = w->step_count;
  st.simulated_time = w->simulated_time;
  st.last_step_ms = w->last_step_ms;
  st.backend = w->backend;
  int32_t largest = 0, smallest = INT32_MAX, colors = 0;
  for (int32_t i = 0; i < w->body_slots; ++i) {
    const piola_body *b = &w->bodies[i];
    if (b->alive) {
      st.triangle_count += b->tri_count;
      st.bend_count += b->bend_count;
      st.cloth_color_count =
          b->cloth_color_count > st.cloth_color_count ? b->cloth_color_count : st.cloth_color_count;
      st.tet_count += b->tet_count;
      st.jacobi_tets += b->tet_count - b->color_start[b->color_count];
      colors = b->color_count > colors ? b->color_count : colors;
    }
  }
  for (int32_t c = 0; c < colors; ++c) {
    int32_t n = 0;
    for (int32_t i = 0; i < w->body_slots; ++i) {
      const piola_body *b = &w->bodies[i];
      if (b->alive && c < b->color_count) {
        n += b->color_start[c + 1] - b->color_start[c];
      }
    }
    largest = n > largest ? n : largest;
    smallest = n < smallest ? n : smallest;
  }
  st.color_count = colors;
  st.largest_color = largest;
  st.smallest_color = colors > 0 ? smallest : 0;

  /* Energies and counts from the current state. */
  piola_status s = PIOLA_OK;
  const double *x = w->x, *v = w->v, *tet_m = w->solver.tet_m, *lambda = w->solver.tet_lambda;
  double *buffers = NULL;
  if (w->cl != NULL && piola_opencl_live(w)) {
    size_t nv = 3 * (size_t)w->vertex_count, nt = (size_t)w->solver.tet_count;
    buffers = malloc(sizeof(double) * (2 * nv + 11 * nt + 1));
    if (buffers == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    double *bx = buffers, *bv = buffers + nv, *bm = bv + nv, *bl = bm + 9 * nt;
    s = piola_opencl_read_all(w, bx, bv, bm, bl);
    x = bx;
    v = bv;
    tet_m = bm;
    lambda = bl;
  }
  if (s == PIOLA_OK) {
    if (w->tets_dirty) {
      /* No solver arrays yet: evaluate body by body from the rest data. */
      st.elastic_energy = piola_bodies_energy(w, x, &st.inverted_tets);
    } else {
      st.elastic_energy = piola_tets_energy(w, x, tet_m, &st.inverted_tets);
      for (int32_t t = 0; t < w->solver.tet_count; ++t) {
        st.active_tets += lambda[2 * t] != 0.0 || lambda[2 * t + 1] != 0.0;
      }
    }
    st.elastic_energy += piola_cloth_energy(w, x);
    double ke = 0.0;
    for (int32_t i = 0; i < w->vertex_count; ++i) {
      if (w->w[i] > 0.0) {
        const double *vi = v + 3 * (size_t)i;
        ke += 0.5 / w->w[i] * (vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
      }
    }
    st.kinetic_energy = ke;
  }
  free(buffers);
  if (s != PIOLA_OK) {
    return s;
  }
  for (int32_t i = 0; i < w->body_slots; ++i) {
    if (w->bodies[i].alive) {
      st.surface_triangles += w->bodies[i].surface_count;
      st.surface_vertices += w->bodies[i].surface_vertex_count;
    }
  }
  if (piola_contacts_active(w) && w->step_count > 0) {
    int32_t counters[2] = {w->contacts.total, w->contacts.overflow};
    if (w->cl != NULL && piola_opencl_live(w)) {
      s = piola_opencl_contact_counters(w, counters);
      if (s != PIOLA_OK) {
        return s;
      }
    }
    st.contact_count = counters[0];
    st.contact_overflow = counters[1];
    if (counters[1] > 0) {
      /* Logged once per run of consecutive steps that drop pairs, so that a caller reading the
       * stats every step is told when it starts, not at every step; the count is in the stats
       * at every read. The world is not const here: it was allocated by piola_world_create,
       * and only this logging record changes. */
      const int64_t last = w->overflow_logged_step;
      if (last == 0 || w->step_count < last || w->step_count - last > 1) {
        piola_log(&w->def.logger, PIOLA_LOG_WARNING,
                  "contacts: %d vertex-triangle pairs dropped in the last substep (a vertex met "
                  "more than %d triangles; the nearest were kept); stats.contact_overflow counts "
                  "them at every read, and the drops of the steps that follow at once are not "
                  "logged again",
                  (int)counters[1], PIOLA_MAX_VERTEX_CONTACTS);
      }
      ((piola_world *)w)->overflow_logged_step = w->step_count;
    }
  }
  if (w->cl != NULL) {
    st.device_bytes = piola_opencl_device_bytes(w);
    snprintf(st.device_name, sizeof st.device_name, "%s", piola_opencl_device_name(w));
    st.simd_lanes = piola_opencl_simd_lanes(w);
    piola_opencl_stage_ms(w, st.stage_ms);
  } else {
    const int threads = (int)piola_pool_threads(w->pool);
    snprintf(st.device_name, sizeof st.device_name, "CPU reference (double, %d thread%s)", threads,
             threads == 1 ? "" : "s");
    memcpy(st.stage_ms, w->stage_ms, sizeof st.stage_ms);
  }
  *out = st;
  return PIOLA_OK;
}

/* ---- Bodies -------------------------------------------------------------------------- */

/* Validated, precomputed data of a body about to be added. */
typedef struct body_build {
  piola_body body;
  double *rest;     /* 3 per vertex, translated */
  double *inv_mass; /* per vertex */
  int32_t reoriented;
  int32_t unreferenced;
} body_build;

static void free_build(body_build *b) {
  free_body(&b->body);
  free(b->rest);
  free(b->inv_mass);
}

/* A tet face as its sorted vertex triple and where it came from (4 t + face). */
typedef struct face_key {
  int32_t v[3];
  int32_t origin;
} face_key;

static int compare_faces(const void *pa, const void *pb) {
  const face_key *a = pa, *b = pb;
  for (int k = 0; k < 3; ++k) {
    if (a->v[k] != b->v[k]) {
      return a->v[k] < b->v[k] ? -1 : 1;
    }
  }
  return (a->origin > b->origin) - (a->origin < b->origin);
}

/* The faces of a positively oriented tet (det [x1-x0, x2-x0, x3-x0] > 0), each counter-
 * clockwise seen from outside: the face opposite corner k lists the other three so that its
 * normal points away from corner k. */
static const int tet_faces[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};

/* The collision surface of a body: the faces that belong to exactly one tet (the boundary of
 * the mesh), outward, in tet order, and the vertices on them. */
/* Lengthens each vertex's reach, its longest rest edge, by the edges of `count` elements of
 * `corners` vertices each (every pair of an element's corners is an edge). Every vertex joined
 * by an edge to a triangle's corner lies within its reach of the triangle (see
 * piola_contact_self_allowed). */
static void add_reach(const int32_t *elements, int32_t count, int corners, const double *rest,
                      double *reach) {
  for (int32_t e = 0; e < count; ++e) {
    const int32_t *q = elements + (size_t)corners * (size_t)e;
    for (int i = 0; i < corners; ++i) {
      for (int j = i + 1; j < corners; ++j) {
        const double *a = rest + 3 * (size_t)q[i], *c = rest + 3 * (size_t)q[j];
        const double len = sqrt((a[0] - c[0]) * (a[0] - c[0]) + (a[1] - c[1]) * (a[1] - c[1]) +
                                (a[2] - c[2]) * (a[2] - c[2]));
        reach[q[i]] = fmax(reach[q[i]], len);
        reach[q[j]] = fmax(reach[q[j]], len);
      }
    }
  }
}

/* The body's surface vertices (those marked in `on`, ascending) with their rest positions and
 * reach. */
static piola_status gather_surface_vertices(piola_body *b, const double *rest, const bool *on,
                                            const double *reach) {
  int32_t nsv = 0;
  for (int32_t i = 0; i < b->vertex_count; ++i) {
    nsv += on[i];
  }
  b->surface_vertices = malloc(sizeof *b->surface_vertices * (size_t)(nsv > 0 ? nsv : 1));
  b->surface_rest = malloc(sizeof *b->surface_rest * 3 * (size_t)(nsv > 0 ? nsv : 1));
  b->surface_reach = malloc(sizeof *b->surface_reach * (size_t)(nsv > 0 ? nsv : 1));
  if (b->surface_vertices == NULL || b->surface_rest == NULL || b->surface_reach == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  b->surface_vertex_count = nsv;
  for (int32_t i = 0, k = 0; i < b->vertex_count; ++i) {
    if (on[i]) {
      memcpy(b->surface_rest + 3 * (size_t)k, rest + 3 * (size_t)i, 3 * sizeof(double));
      b->surface_reach[k] = reach[i];
      b->surface_vertices[k++] = i;
    }
  }
  return PIOLA_OK;
}

static piola_status build_surface(piola_body *b, const double *rest) {
  const int32_t nf = 4 * b->tet_count;
  face_key *faces = malloc(sizeof *faces * (size_t)nf);
  bool *boundary = calloc((size_t)nf, sizeof *boundary);
  bool *on_surface = calloc((size_t)b->vertex_count, sizeof *on_surface);
  if (faces == NULL || boundary == NULL || on_surface == NULL) {
    free(faces);
    free(boundary);
    free(on_surface);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < nf; ++i) {
    const int32_t *q = b->tets + 4 * (size_t)(i / 4);
    int32_t v[3] = {q[tet_faces[i % 4][0]], q[tet_faces[i % 4][1]], q[tet_faces[i % 4][2]]};
    /* sort the three indices */
    for (int x = 0; x < 2; ++x) {
      for (int y = 0; y < 2 - x; ++y) {
        if (v[y] > v[y + 1]) {
          int32_t tmp = v[y];
          v[y] = v[y + 1];
          v[y + 1] = tmp;
        }
      }
    }
    memcpy(faces[i].v, v, sizeof v);
    faces[i].origin = i;
  }
  qsort(faces, (size_t)nf, sizeof *faces, compare_faces);
  int32_t count = 0;
  for (int32_t i = 0; i < nf;) {
    int32_t j = i + 1;
    while (j < nf && memcmp(faces[j].v, faces[i].v, sizeof faces[i].v) == 0) {
      ++j;
    }
    if (j == i + 1) {
      boundary[faces[i].origin] = true;
      count++;
    }
    i = j;
  }
  free(faces);
  b->surface = malloc(sizeof *b->surface * 3 * (size_t)(count > 0 ? count : 1));
  if (b->surface == NULL) {
    free(boundary);
    free(on_surface);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  b->surface_count = count;
  for (int32_t i = 0, k = 0; i < nf; ++i) {
    if (boundary[i]) {
      const int32_t *q = b->tets + 4 * (size_t)(i / 4);
      for (int c = 0; c < 3; ++c) {
        b->surface[3 * (size_t)k + c] = q[tet_faces[i % 4][c]];
        on_surface[q[tet_faces[i % 4][c]]] = true;
      }
      ++k;
    }
  }
  free(boundary);
  double *reach = calloc((size_t)b->vertex_count, sizeof *reach);
  piola_status s = PIOLA_ERROR_OUT_OF_MEMORY;
  if (reach != NULL) {
    add_reach(b->tets, b->tet_count, 4, rest, reach);
    s = gather_surface_vertices(b, rest, on_surface, reach);
  }
  free(on_surface);
  free(reach);
  return s;
}

/* Whether each of the count elements (tets or triangles: `corners` vertex indices each) names
 * distinct vertices in [0, nv); else logs which (as caller `fn`) and says
 * PIOLA_ERROR_INVALID_MESH. */
static piola_status check_elements(const piola_logger *log, const char *fn, const char *kind,
                                   const int32_t *elements, int32_t count, int corners,
                                   int32_t nv) {
  for (int32_t t = 0; t < count; ++t) {
    const int32_t *q = elements + (size_t)corners * (size_t)t;
    for (int a = 0; a < corners; ++a) {
      if (q[a] < 0 || q[a] >= nv) {
        piola_log(log, PIOLA_LOG_ERROR, "%s: %s %d has vertex index %d outside [0, %d)", fn, kind,
                  (int)t, (int)q[a], (int)nv);
        return PIOLA_ERROR_INVALID_MESH;
      }
      for (int b = 0; b < a; ++b) {
        if (q[a] == q[b]) {
          piola_log(log, PIOLA_LOG_ERROR, "%s: %s %d repeats vertex %d", fn, kind, (int)t,
                    (int)q[a]);
          return PIOLA_ERROR_INVALID_MESH;
        }
      }
    }
  }
  return PIOLA_OK;
}

/* Checks the mesh and computes everything the body needs; touches nothing in the world. */
static piola_status prepare_body(const piola_world *w, const piola_tet_mesh *mesh,
                                 const piola_material *material, const float translation[3],
                                 body_build *out) {
  const piola_logger *log = &w->def.logger;
  memset(out, 0, sizeof *out);
  char reason[256];
  piola_status s = piola_material_check(material, reason, sizeof reason);
  if (s != PIOLA_OK) {
    piola_log(log, PIOLA_LOG_ERROR, "piola_world_add_tet_body: %s", reason);
    return s;
  }
  const int32_t nv = mesh->vertex_count, nt = mesh->tet_count;
  if (nv < 4 || nt < 1 || mesh->positions == NULL || mesh->tets == NULL) {
    piola_log(log, PIOLA_LOG_ERROR,
              "piola_world_add_tet_body: mesh needs >= 4 vertices and >= 1 tet with their "
              "arrays (got %d vertices, %d tets)",
              (int)nv, (int)nt);
    return PIOLA_ERROR_INVALID_MESH;
  }
  if (nv > INT32_MAX - w->vertex_count || (int64_t)nt * 9 > INT32_MAX) {
    piola_log(log, PIOLA_LOG_ERROR, "piola_world_add_tet_body: mesh too large");
    return PIOLA_ERROR_INVALID_MESH;
  }
  if (translation != NULL && !piola_finite3(translation)) {
    piola_log(log, PIOLA_LOG_ERROR, "piola_world_add_tet_body: non-finite translation");
    return PIOLA_ERROR_NON_FINITE;
  }
  for (int32_t i = 0; i < nv; ++i) {
    if (!piola_finite3(mesh->positions + 3 * (size_t)i)) {
      piola_log(log, PIOLA_LOG_ERROR,
                "piola_world_add_tet_body: vertex %d has a non-finite position", (int)i);
      return PIOLA_ERROR_NON_FINITE;
    }
  }
  const piola_status elements =
      check_elements(log, "piola_world_add_tet_body", "tet", mesh->tets, nt, 4, nv);
  if (elements != PIOLA_OK) {
    return elements;
  }

  piola_body *b = &out->body;
  b->vertex_count = nv;
  b->tet_count = nt;
  b->tets = malloc(sizeof *b->tets * 4 * (size_t)nt);
  b->colors = malloc(sizeof *b->colors * (size_t)nt);
  b->by_color = malloc(sizeof *b->by_color * (size_t)nt);
  b->dm_inv = malloc(sizeof *b->dm_inv * 9 * (size_t)nt);
  b->volume = malloc(sizeof *b->volume * (size_t)nt);
  out->rest = malloc(sizeof *out->rest * 3 * (size_t)nv);
  out->inv_mass = calloc((size_t)nv, sizeof *out->inv_mass);
  if (b->tets == NULL || b->colors == NULL || b->by_color == NULL || b->dm_inv == NULL ||
      b->volume == NULL || out->rest == NULL || out->inv_mass == NULL) {
    free_build(out);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < nv; ++i) {
    for (int k = 0; k < 3; ++k) {
      out->rest[3 * (size_t)i + k] =
          (double)mesh->positions[3 * (size_t)i + k] + (translation ? translation[k] : 0.0);
    }
    const double *r = out->rest + 3 * (size_t)i;
    if (!(fabs(r[0]) <= PIOLA_POSITION_LIMIT && fabs(r[1]) <= PIOLA_POSITION_LIMIT &&
          fabs(r[2]) <= PIOLA_POSITION_LIMIT)) {
      piola_log(log, PIOLA_LOG_ERROR,
                "piola_world_add_tet_body: vertex %d at (%.3g, %.3g, %.3g) m%s lies beyond "
                "PIOLA_POSITION_LIMIT (%.3g m) from the origin",
                (int)i, r[0], r[1], r[2], translation != NULL ? " (translated)" : "",
                PIOLA_POSITION_LIMIT);
      free_build(out);
      return PIOLA_ERROR_INVALID_MESH;
    }
  }
  /* Rest shape per tet: Dm = [x1 - x0, x2 - x0, x3 - x0], V = det(Dm) / 6. A tet is
   * degenerate when |det Dm| <= 1e-9 l^3 (l its longest edge): flat to within rounding. */
  double density = material->density;
  for (int32_t t = 0; t < nt; ++t) {
    int32_t q[4];
    memcpy(q, mesh->tets + 4 * (size_t)t, sizeof q);
    piola_v3 x[4];
    for (int a = 0; a < 4; ++a) {
      const double *r = out->rest + 3 * (size_t)q[a];
      x[a] = piola_v3_make(r[0], r[1], r[2]);
    }
    piola_m3 dm = piola_m3_from_columns(piola_v3_sub(x[1], x[0]), piola_v3_sub(x[2], x[0]),
                                        piola_v3_sub(x[3], x[0]));
    double det = piola_m3_det(dm);
    double l2 = 0.0;
    for (int a = 0; a < 4; ++a) {
      for (int c = a + 1; c < 4; ++c) {
        piola_v3 e = piola_v3_sub(x[a], x[c]);
        l2 = fmax(l2, piola_v3_dot(e, e));
      }
    }
    if (!(fabs(det) > 1e-9 * l2 * sqrt(l2))) {
      piola_log(log, PIOLA_LOG_ERROR,
                "piola_world_add_tet_body: tet %d (vertices %d %d %d %d) has near-zero rest "
                "volume %.3g m^3",
                (int)t, (int)q[0], (int)q[1], (int)q[2], (int)q[3], det / 6.0);
      free_build(out);
      return PIOLA_ERROR_INVALID_MESH;
    }
    if (det < 0.0) { /* reorient: swapping two vertices flips the sign */
      int32_t tmp = q[2];
      q[2] = q[3];
      q[3] = tmp;
      piola_v3 tv = x[2];
      x[2] = x[3];
      x[3] = tv;
      dm = piola_m3_from_columns(piola_v3_sub(x[1], x[0]), piola_v3_sub(x[2], x[0]),
                                 piola_v3_sub(x[3], x[0]));
      det = -det;
      out->reoriented++;
    }
    memcpy(b->tets + 4 * (size_t)t, q, sizeof q);
    piola_m3 inv = piola_m3_scale(piola_m3_transpose(piola_m3_cofactor(dm)), 1.0 / det);
    memcpy(b->dm_inv + 9 * (size_t)t, inv.m, sizeof inv.m);
    b->volume[t] = det / 6.0;
    for (int a = 0; a < 4; ++a) {
      out->inv_mass[q[a]] += density * b->volume[t] / 4.0; /* lumped mass, inverted below */
    }
  }
  for (int32_t i = 0; i < nv; ++i) {
    if (out->inv_mass[i] > 0.0) {
      /* Inverse masses are floats on the device and in piola_body_get_inverse_masses(): one
       * that overflows (tiny tets) would give infinite moves, one that flushes to zero (a huge
       * mass) would silently pin the vertex. */
      const double mass = out->inv_mass[i];
      out->inv_mass[i] = 1.0 / mass;
      if (!(out->inv_mass[i] <= FLT_MAX && out->inv_mass[i] >= FLT_MIN)) {
        piola_log(log, PIOLA_LOG_ERROR,
                  "piola_world_add_tet_body: vertex %d has a lumped mass of %.3g kg, whose "
                  "inverse is no normal float (tets too small or too large for the density "
                  "%.3g kg/m^3)",
                  (int)i, mass, density);
        free_build(out);
        return PIOLA_ERROR_INVALID_MESH;
      }
    } else {
      out->unreferenced++; /* belongs to no tet: stays where it is */
    }
  }
  if (w->def.iteration_scheme == PIOLA_SCHEME_JACOBI) {
    for (int32_t t = 0; t < nt; ++t) {
      b->colors[t] = -1; /* every tet in the Jacobi pass */
    }
    b->color_count = 0;
  } else {
    s = piola_color_tets(b->tets, nt, nv, w->def.max_colors, b->colors, &b->color_count);
  }
  if (s == PIOLA_OK) {
    s = build_surface(b, out->rest);
  }
  b->collision_group = 1u;
  b->collision_mask = 0xFFFFFFFFu;
  b->self_collision = true;
  /* Counting sort of the tets by color, the Jacobi tets (-1) last. Within a color: see
   * PIOLA_SPATIAL_ORDER_MAX_TETS. */
  const int32_t buckets = b->color_count + 1;
  const bool spatial = nt <= PIOLA_SPATIAL_ORDER_MAX_TETS;
  int32_t *fill = NULL;
  double *centroid = NULL;
  piola_keyed_index *order = NULL;
  if (s == PIOLA_OK) {
    b->color_start = calloc((size_t)buckets + 1, sizeof *b->color_start);
    fill = malloc(sizeof *fill * (size_t)buckets);
    centroid = spatial ? malloc(sizeof *centroid * 3 * (size_t)nt) : NULL;
    order = spatial ? malloc(sizeof *order * (size_t)nt) : NULL;
    if (b->color_start == NULL || fill == NULL ||
        (spatial && (centroid == NULL || order == NULL))) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (s != PIOLA_OK) {
    free(fill);
    free(centroid);
    free(order);
    free_build(out);
    return s;
  }
  if (spatial) {
    piola_centroids(out->rest, b->tets, 4, NULL, nt, centroid);
    piola_spatial_order(centroid, nt, order);
    free(centroid);
  }
  for (int32_t t = 0; t < nt; ++t) {
    b->color_start[(b->colors[t] >= 0 ? b->colors[t] : b->color_count) + 1]++;
  }
  for (int32_t c = 0; c < buckets; ++c) {
    b->color_start[c + 1] += b->color_start[c];
  }
  memcpy(fill, b->color_start, sizeof *fill * (size_t)buckets);
  for (int32_t i = 0; i < nt; ++i) {
    const int32_t t = spatial ? order[i].index : i;
    if (b->colors[t] >= 0) {
      b->by_color[fill[b->colors[t]]++] = t;
    }
  }
  for (int32_t t = 0; t < nt; ++t) {
    if (b->colors[t] < 0) {
      b->by_color[fill[b->color_count]++] = t;
    }
  }
  free(fill);
  free(order);
  return PIOLA_OK;
}

/* Index of an equal material in the table, appending it when new; -1 on allocation failure. */
static int32_t intern_material(piola_world *w, const piola_material *m) {
  for (int32_t i = 0; i < w->material_count; ++i) {
    if (memcmp(&w->materials[i].def, m, sizeof *m) == 0) {
      return i;
    }
  }
  if (!piola_grow((void **)&w->materials, sizeof *w->materials, w->material_count + 1,
                  &w->material_capacity)) {
    return -1;
  }
  piola_material_entry *e = &w->materials[w->material_count];
  e->def = *m;
  e->constants = piola_material_constants(m);
  e->plastic = m->plastic_creep > 0.0f && m->plastic_max > 0.0f;
  return w->material_count++;
}

piola_status piola_world_add_tet_body(piola_world *w, const piola_tet_mesh *mesh,
                                      const piola_material *material, const float translation[3],
                                      piola_body_id *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (mesh == NULL || material == NULL) {
    PIOLA_MISUSE(w, "mesh != NULL && material != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  body_build build;
  piola_status s = prepare_body(w, mesh, material, translation, &build);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_body *b = &build.body;
  /* Everything that can fail from here on happens before the world changes. */
  s = begin_topology_change(w);
  int32_t slot = 0;
  while (slot < w->body_slots && w->bodies[slot].alive) {
    ++slot;
  }
  int32_t material_index = -1;
  if (s == PIOLA_OK) {
    bool plastic = material->plastic_creep > 0.0f && material->plastic_max > 0.0f;
    if (plastic) {
      b->plastic_strain = calloc(6 * (size_t)b->tet_count, sizeof *b->plastic_strain);
      b->m_eff = malloc(sizeof *b->m_eff * 9 * (size_t)b->tet_count);
      if (b->plastic_strain != NULL && b->m_eff != NULL) {
        memcpy(b->m_eff, b->dm_inv, sizeof *b->m_eff * 9 * (size_t)b->tet_count);
      }
    }
    if ((plastic && (b->plastic_strain == NULL || b->m_eff == NULL)) ||
        !piola_grow((void **)&w->bodies, sizeof *w->bodies, slot + 1, &w->body_capacity) ||
        !grow_vertices(w, w->vertex_count + b->vertex_count) ||
        (material_index = intern_material(w, material)) < 0) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (s != PIOLA_OK) {
    free_build(&build);
    return s;
  }
  if (slot == w->body_slots) {
    memset(&w->bodies[slot], 0, sizeof w->bodies[slot]);
    w->body_slots++;
  }
  uint32_t generation = w->bodies[slot].generation;
  b->alive = true;
  b->generation = generation;
  b->vertex_offset = w->vertex_count;
  b->material = material_index;
  w->bodies[slot] = *b;
  for (int32_t i = 0; i < b->vertex_count; ++i) {
    size_t g = (size_t)(b->vertex_offset + i);
    for (int k = 0; k < 3; ++k) {
      w->x[3 * g + k] = build.rest[3 * (size_t)i + k];
      w->p[3 * g + k] = build.rest[3 * (size_t)i + k];
      w->v[3 * g + k] = 0.0;
    }
    w->w[g] = build.inv_mass[i];
    if (w->f != NULL) {
      w->f[3 * g] = w->f[3 * g + 1] = w->f[3 * g + 2] = 0.0;
    }
  }
  w->vertex_count += b->vertex_count;
  w->body_count++;
  solver_arrays_changed(w);
  free(build.rest);
  free(build.inv_mass);
  if (build.reoriented > 0) {
    piola_log(&w->def.logger, PIOLA_LOG_WARNING,
              "piola_world_add_tet_body: %d of %d tets had negative rest volume and were "
              "reoriented",
              (int)build.reoriented, (int)b->tet_count);
  }
  if (build.unreferenced > 0) {
    piola_log(&w->def.logger, PIOLA_LOG_WARNING,
              "piola_world_add_tet_body: %d vertices belong to no tet; they stay fixed",
              (int)build.unreferenced);
  }
  if ((material->solver == PIOLA_SOLVER_PBD || material->split == PIOLA_SPLIT_NONE) &&
      material->poisson_ratio >= PIOLA_ONE_CONSTRAINT_MAX_NU) {
    /* Found by the hostile-parameter sweep (tests/test_hostile.c): one constraint per tet
     * moves along grad U scaled for the whole energy and overshoots the volume mode by up to
     * lambda / mu; Neo-Hookean bodies then tear apart (vertices hundreds of body sizes away,
     * finite). */
    const double nu = material->poisson_ratio;
    piola_log(&w->def.logger, PIOLA_LOG_WARNING,
              "piola_world_add_tet_body: nu = %g (lambda/mu = %.3g) with one constraint per tet "
              "(%s): its projection overshoots the volume mode and the body can tear apart; "
              "use XPBD with PIOLA_SPLIT_LAME for nu >= %g",
              nu, 2.0 * nu / (1.0 - 2.0 * nu),
              material->solver == PIOLA_SOLVER_PBD ? "the PBD form" : "PIOLA_SPLIT_NONE",
              (double)PIOLA_ONE_CONSTRAINT_MAX_NU);
  }
  if (out != NULL) {
    out->index1 = slot + 1;
    out->generation = generation;
  }
  return PIOLA_OK;
}

/* ---- Cloth bodies ---------------------------------------------------------------------- */

/* An edge of a triangle: its sorted ends, the triangle and the edge's place in it (edge k runs
 * from corner k to corner k + 1, opposite corner k + 2). */
typedef struct edge_key {
  int32_t lo, hi, tri, k;
} edge_key;

static int compare_edges(const void *pa, const void *pb) {
  const edge_key *a = pa, *b = pb;
  if (a->lo != b->lo) {
    return a->lo < b->lo ? -1 : 1;
  }
  if (a->hi != b->hi) {
    return a->hi < b->hi ? -1 : 1;
  }
  return (a->tri > b->tri) - (a->tri < b->tri);
}

static piola_v3 rest_point(const double *rest, int32_t i) {
  return piola_v3_make(rest[3 * (size_t)i], rest[3 * (size_t)i + 1], rest[3 * (size_t)i + 2]);
}

/* The bending stencils of the interior edges of a checked triangle mesh (rest positions
 * `rest`): an edge of two triangles gives the stencil (x0, x1) = the edge in the order of the
 * first triangle, x2 its opposite corner, x3 the other triangle's. Edges of more than two
 * triangles are rejected (non-manifold). With build == false only the check runs. */
static piola_status build_bends(const piola_logger *log, piola_body *b, const double *rest,
                                bool build) {
  const int32_t nt = b->tri_count;
  edge_key *edges = malloc(sizeof *edges * 3 * (size_t)nt);
  if (edges == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t t = 0; t < nt; ++t) {
    const int32_t *q = b->tris + 3 * (size_t)t;
    for (int k = 0; k < 3; ++k) {
      edge_key *e = &edges[3 * (size_t)t + (size_t)k];
      const int32_t a = q[k], c = q[(k + 1) % 3];
      e->lo = a < c ? a : c;
      e->hi = a < c ? c : a;
      e->tri = t;
      e->k = k;
    }
  }
  qsort(edges, 3 * (size_t)nt, sizeof *edges, compare_edges);
  int32_t interior = 0;
  for (int32_t i = 0; i < 3 * nt;) {
    int32_t j = i + 1;
    while (j < 3 * nt && edges[j].lo == edges[i].lo && edges[j].hi == edges[i].hi) {
      ++j;
    }
    if (j - i > 2) {
      piola_log(log, PIOLA_LOG_ERROR,
                "piola_world_add_cloth: edge %d-%d is shared by %d triangles (non-manifold; at "
                "most 2)",
                (int)edges[i].lo, (int)edges[i].hi, (int)(j - i));
      free(edges);
      return PIOLA_ERROR_INVALID_MESH;
    }
    interior += j - i == 2;
    i = j;
  }
  if (!build) {
    free(edges);
    return PIOLA_OK;
  }
  b->bends = malloc(sizeof *b->bends * 4 * (size_t)(interior > 0 ? interior : 1));
  b->bend_rest = malloc(sizeof *b->bend_rest * 6 * (size_t)(interior > 0 ? interior : 1));
  if (b->bends == NULL || b->bend_rest == NULL) {
    free(edges);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t n = 0;
  for (int32_t i = 0; i + 1 < 3 * nt; ++i) {
    const edge_key *e0 = &edges[i], *e1 = &edges[i + 1];
    if (e0->lo != e1->lo || e0->hi != e1->hi) {
      continue;
    }
    const int32_t *q0 = b->tris + 3 * (size_t)e0->tri, *q1 = b->tris + 3 * (size_t)e1->tri;
    int32_t *st = b->bends + 4 * (size_t)n;
    st[0] = q0[e0->k];
    st[1] = q0[(e0->k + 1) % 3];
    st[2] = q0[(e0->k + 2) % 3];
    st[3] = q1[(e1->k + 2) % 3];
    piola_cloth_bend_rest r;
    if (!piola_cloth_bend_init(rest_point(rest, st[0]), rest_point(rest, st[1]),
                               rest_point(rest, st[2]), rest_point(rest, st[3]), &r)) {
      piola_log(log, PIOLA_LOG_ERROR,
                "piola_world_add_cloth: triangles %d and %d are folded flat onto each other at "
                "edge %d-%d (or repeat a triangle)",
                (int)e0->tri, (int)e1->tri, (int)e0->lo, (int)e0->hi);
      free(edges);
      return PIOLA_ERROR_INVALID_MESH;
    }
    double *rd = b->bend_rest + 6 * (size_t)n;
    for (int k = 0; k < 4; ++k) {
      rd[k] = r.k[k];
    }
    rd[4] = r.q;
    rd[5] = r.rest;
    ++n;
    ++i; /* the pair is used */
  }
  b->bend_count = n;
  free(edges);
  return PIOLA_OK;
}

/* A cloth's collision surface: its own triangles (two-sided: contacts keep a vertex on the
 * side it came from), the vertices on them with their rest positions, and each one's reach, its
 * longest rest triangle edge (see piola_contact_self_allowed). */
static piola_status cloth_surface(piola_body *b, const double *rest) {
  const int32_t nt = b->tri_count;
  b->surface = malloc(sizeof *b->surface * 3 * (size_t)nt);
  double *reach = calloc((size_t)b->vertex_count, sizeof *reach);
  bool *on = calloc((size_t)b->vertex_count, sizeof *on);
  piola_status s = PIOLA_ERROR_OUT_OF_MEMORY;
  if (b->surface != NULL && reach != NULL && on != NULL) {
    memcpy(b->surface, b->tris, sizeof *b->surface * 3 * (size_t)nt);
    b->surface_count = nt;
    for (size_t k = 0; k < 3 * (size_t)nt; ++k) {
      on[b->tris[k]] = true;
    }
    add_reach(b->tris, nt, 3, rest, reach);
    s = gather_surface_vertices(b, rest, on, reach);
  }
  free(reach);
  free(on);
  return s;
}

/* Checks a cloth mesh and material and computes the body's rest data; touches nothing in the
 * world. *uv_fallback counts triangles whose u is constant (weft along the first edge). */
static piola_status prepare_cloth(const piola_world *w, const piola_tri_mesh *mesh,
                                  const piola_cloth_material *material, const float translation[3],
                                  body_build *out, int32_t *uv_fallback) {
  const piola_logger *log = &w->def.logger;
  memset(out, 0, sizeof *out);
  *uv_fallback = 0;
  char reason[256];
  piola_status s = piola_cloth_material_check(material, reason, sizeof reason);
  if (s != PIOLA_OK) {
    piola_log(log, PIOLA_LOG_ERROR, "piola_world_add_cloth: %s", reason);
    return s;
  }
  const int32_t nv = mesh->vertex_count, nt = mesh->triangle_count;
  if (nv < 3 || nt < 1 || mesh->positions == NULL || mesh->triangles == NULL) {
    piola_log(log, PIOLA_LOG_ERROR,
              "piola_world_add_cloth: mesh needs >= 3 vertices and >= 1 triangle with their "
              "arrays (got %d vertices, %d triangles)",
              (int)nv, (int)nt);
    return PIOLA_ERROR_INVALID_MESH;
  }
  if (nv > INT32_MAX - w->vertex_count || (int64_t)nt * 12 > INT32_MAX) {
    piola_log(log, PIOLA_LOG_ERROR, "piola_world_add_cloth: mesh too large");
    return PIOLA_ERROR_INVALID_MESH;
  }
  if (translation != NULL && !piola_finite3(translation)) {
    piola_log(log, PIOLA_LOG_ERROR, "piola_world_add_cloth: non-finite translation");
    return PIOLA_ERROR_NON_FINITE;
  }
  for (int32_t i = 0; i < nv; ++i) {
    if (!piola_finite3(mesh->positions + 3 * (size_t)i) ||
        (mesh->uvs != NULL &&
         (!isfinite(mesh->uvs[2 * (size_t)i]) || !isfinite(mesh->uvs[2 * (size_t)i + 1])))) {
      piola_log(log, PIOLA_LOG_ERROR,
                "piola_world_add_cloth: vertex %d has a non-finite position or uv", (int)i);
      return PIOLA_ERROR_NON_FINITE;
    }
  }
  const piola_status elements =
      check_elements(log, "piola_world_add_cloth", "triangle", mesh->triangles, nt, 3, nv);
  if (elements != PIOLA_OK) {
    return elements;
  }
  piola_body *b = &out->body;
  b->cloth = true;
  b->vertex_count = nv;
  b->tri_count = nt;
  b->tris = malloc(sizeof *b->tris * 3 * (size_t)nt);
  b->tri_dm_inv = malloc(sizeof *b->tri_dm_inv * 4 * (size_t)nt);
  b->tri_area = malloc(sizeof *b->tri_area * (size_t)nt);
  b->color_start = calloc(2, sizeof *b->color_start); /* no tets: empty tet colors */
  out->rest = malloc(sizeof *out->rest * 3 * (size_t)nv);
  out->inv_mass = calloc((size_t)nv, sizeof *out->inv_mass);
  if (b->tris == NULL || b->tri_dm_inv == NULL || b->tri_area == NULL || b->color_start == NULL ||
      out->rest == NULL || out->inv_mass == NULL) {
    free_build(out);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(b->tris, mesh->triangles, sizeof *b->tris * 3 * (size_t)nt);
  for (int32_t i = 0; i < nv; ++i) {
    for (int k = 0; k < 3; ++k) {
      out->rest[3 * (size_t)i + k] =
          (double)mesh->positions[3 * (size_t)i + k] + (translation ? translation[k] : 0.0);
    }
  }
  /* Rest frames (weft from u, else the first edge), areas and lumped masses. */
  const double density = material->density;
  for (int32_t t = 0; t < nt; ++t) {
    const int32_t *q = b->tris + 3 * (size_t)t;
    piola_v3 x0 = rest_point(out->rest, q[0]), x1 = rest_point(out->rest, q[1]),
             x2 = rest_point(out->rest, q[2]);
    piola_m2 dm;
    double area = 0.0;
    int flags = mesh->uvs != NULL ? piola_cloth_tri_init_uv(x0, x1, x2, mesh->uvs[2 * (size_t)q[0]],
                                                            mesh->uvs[2 * (size_t)q[1]],
                                                            mesh->uvs[2 * (size_t)q[2]], &dm, &area)
                                  : piola_cloth_tri_init(x0, x1, x2, &dm, &area);
    if (!(flags & PIOLA_CLOTH_INIT_OK)) {
      piola_log(log, PIOLA_LOG_ERROR,
                "piola_world_add_cloth: triangle %d (vertices %d %d %d) is degenerate (near-zero "
                "area)",
                (int)t, (int)q[0], (int)q[1], (int)q[2]);
      free_build(out);
      return PIOLA_ERROR_INVALID_MESH;
    }
    *uv_fallback += (flags & PIOLA_CLOTH_INIT_UV_FALLBACK) != 0;
    memcpy(b->tri_dm_inv + 4 * (size_t)t, dm.m, sizeof dm.m);
    b->tri_area[t] = area;
    for (int a = 0; a < 3; ++a) {
      out->inv_mass[q[a]] += density * area / 3.0; /* lumped mass, inverted below */
    }
  }
  for (int32_t i = 0; i < nv; ++i) {
    if (out->inv_mass[i] > 0.0) {
      out->inv_mass[i] = 1.0 / out->inv_mass[i];
    } else {
      out->unreferenced++;
    }
  }
  s = build_bends(log, b, out->rest, material->bending_stiffness > 0.0f);
  /* One coloring over the body's triangles and stencils: (a, b, c, -1) and (x0, x1, x2, x3). */
  const int32_t items = nt + b->bend_count;
  int32_t *item_vertices = NULL, *colors = NULL, *fill = NULL;
  if (s == PIOLA_OK) {
    item_vertices = malloc(sizeof *item_vertices * 4 * (size_t)items);
    colors = malloc(sizeof *colors * (size_t)items);
    b->cloth_by_color = malloc(sizeof *b->cloth_by_color * (size_t)items);
    if (item_vertices == NULL || colors == NULL || b->cloth_by_color == NULL) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (s == PIOLA_OK) {
    for (int32_t t = 0; t < nt; ++t) {
      memcpy(item_vertices + 4 * (size_t)t, b->tris + 3 * (size_t)t, 3 * sizeof(int32_t));
      item_vertices[4 * (size_t)t + 3] = -1;
    }
    if (b->bend_count > 0) {
      memcpy(item_vertices + 4 * (size_t)nt, b->bends, 4 * sizeof(int32_t) * (size_t)b->bend_count);
    }
    s = piola_color_tets(item_vertices, items, nv, 0, colors, &b->cloth_color_count);
  }
  if (s == PIOLA_OK) {
    b->cloth_color_start = calloc((size_t)b->cloth_color_count + 1, sizeof *b->cloth_color_start);
    fill = malloc(sizeof *fill * (size_t)(b->cloth_color_count > 0 ? b->cloth_color_count : 1));
    if (b->cloth_color_start == NULL || fill == NULL) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (s == PIOLA_OK) {
    /* Counting sort of the items by color; item order within a color. */
    for (int32_t i = 0; i < items; ++i) {
      b->cloth_color_start[colors[i] + 1]++;
    }
    for (int32_t c = 0; c < b->cloth_color_count; ++c) {
      b->cloth_color_start[c + 1] += b->cloth_color_start[c];
    }
    memcpy(fill, b->cloth_color_start, sizeof *fill * (size_t)b->cloth_color_count);
    for (int32_t i = 0; i < items; ++i) {
      b->cloth_by_color[fill[colors[i]]++] = i;
    }
  }
  free(item_vertices);
  free(colors);
  free(fill);
  if (s == PIOLA_OK) {
    s = cloth_surface(b, out->rest);
  }
  b->collision_group = 1u;
  b->collision_mask = 0xFFFFFFFFu;
  b->self_collision = true;
  if (s != PIOLA_OK) {
    free_build(out);
  }
  return s;
}

/* Index of an equal cloth material in the table, appending it when new; -1 on allocation
 * failure. */
static int32_t intern_cloth_material(piola_world *w, const piola_cloth_material *m) {
  for (int32_t i = 0; i < w->cloth_material_count; ++i) {
    if (memcmp(&w->cloth_materials[i].def, m, sizeof *m) == 0) {
      return i;
    }
  }
  if (!piola_grow((void **)&w->cloth_materials, sizeof *w->cloth_materials,
                  w->cloth_material_count + 1, &w->cloth_material_capacity)) {
    return -1;
  }
  piola_cloth_material_entry *e = &w->cloth_materials[w->cloth_material_count];
  memset(e, 0, sizeof *e);
  e->def = *m;
  piola_cloth_tri_material_make(m->stretch_weft, m->stretch_warp, m->shear, m->poisson_weft,
                                (piola_int)m->solver, &e->tri);
  if (m->bending_stiffness > 0.0f) {
    piola_cloth_bend_material_make(m->bending_stiffness, (piola_int)m->solver, &e->bend);
  } else {
    e->bend.compliance = 0.0; /* no stencils are built */
    e->bend.solver = (piola_int)m->solver;
  }
  return w->cloth_material_count++;
}

piola_status piola_world_add_cloth(piola_world *w, const piola_tri_mesh *mesh,
                                   const piola_cloth_material *material, const float translation[3],
                                   piola_body_id *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (mesh == NULL || material == NULL) {
    PIOLA_MISUSE(w, "mesh != NULL && material != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  body_build build;
  int32_t uv_fallback = 0;
  piola_status s = prepare_cloth(w, mesh, material, translation, &build, &uv_fallback);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_body *b = &build.body;
  /* Everything that can fail from here on happens before the world changes. */
  s = begin_topology_change(w);
  int32_t slot = 0;
  while (slot < w->body_slots && w->bodies[slot].alive) {
    ++slot;
  }
  int32_t material_index = -1;
  if (s == PIOLA_OK &&
      (!piola_grow((void **)&w->bodies, sizeof *w->bodies, slot + 1, &w->body_capacity) ||
       !grow_vertices(w, w->vertex_count + b->vertex_count) ||
       (material_index = intern_cloth_material(w, material)) < 0)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s != PIOLA_OK) {
    free_build(&build);
    return s;
  }
  if (slot == w->body_slots) {
    memset(&w->bodies[slot], 0, sizeof w->bodies[slot]);
    w->body_slots++;
  }
  uint32_t generation = w->bodies[slot].generation;
  b->alive = true;
  b->generation = generation;
  b->vertex_offset = w->vertex_count;
  b->material = 0; /* tet material: unused by a cloth body */
  b->cloth_material = material_index;
  w->bodies[slot] = *b;
  for (int32_t i = 0; i < b->vertex_count; ++i) {
    size_t g = (size_t)(b->vertex_offset + i);
    for (int k = 0; k < 3; ++k) {
      w->x[3 * g + k] = build.rest[3 * (size_t)i + k];
      w->p[3 * g + k] = build.rest[3 * (size_t)i + k];
      w->v[3 * g + k] = 0.0;
    }
    w->w[g] = build.inv_mass[i];
    if (w->f != NULL) {
      w->f[3 * g] = w->f[3 * g + 1] = w->f[3 * g + 2] = 0.0;
    }
  }
  w->vertex_count += b->vertex_count;
  w->body_count++;
  solver_arrays_changed(w);
  free(build.rest);
  free(build.inv_mass);
  if (uv_fallback > 0) {
    piola_log(&w->def.logger, PIOLA_LOG_WARNING,
              "piola_world_add_cloth: u is constant on %d of %d triangles; their weft runs along "
              "their first edge",
              (int)uv_fallback, (int)b->tri_count);
  }
  if (build.unreferenced > 0) {
    piola_log(&w->def.logger, PIOLA_LOG_WARNING,
              "piola_world_add_cloth: %d vertices belong to no triangle; they stay fixed",
              (int)build.unreferenced);
  }
  if (out != NULL) {
    out->index1 = slot + 1;
    out->generation = generation;
  }
  return PIOLA_OK;
}

piola_status piola_world_remove_body(piola_world *w, piola_body_id id) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_body *b = piola_world_body(w, id);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  piola_status s = begin_topology_change(w);
  if (s != PIOLA_OK) {
    return s;
  }
  /* Close the gap in the vertex arrays. */
  int32_t first = b->vertex_offset, n = b->vertex_count;
  size_t tail = (size_t)(w->vertex_count - first - n);
  memmove(w->x + 3 * (size_t)first, w->x + 3 * (size_t)(first + n), 3 * tail * sizeof(double));
  memmove(w->p + 3 * (size_t)first, w->p + 3 * (size_t)(first + n), 3 * tail * sizeof(double));
  memmove(w->v + 3 * (size_t)first, w->v + 3 * (size_t)(first + n), 3 * tail * sizeof(double));
  memmove(w->w + first, w->w + first + n, tail * sizeof(double));
  if (w->f != NULL) {
    memmove(w->f + 3 * (size_t)first, w->f + 3 * (size_t)(first + n), 3 * tail * sizeof(double));
  }
  for (int32_t i = 0; i < w->body_slots; ++i) {
    if (w->bodies[i].alive && w->bodies[i].vertex_offset > first) {
      w->bodies[i].vertex_offset -= n;
    }
  }
  w->vertex_count -= n;
  free_body(b);
  b->generation++;
  w->body_count--;
  solver_arrays_changed(w);
  return PIOLA_OK;
}

int32_t piola_body_get_vertex_count(const piola_world *w, piola_body_id id) {
  if (w == NULL) {
    return -1;
  }
  const piola_body *b = piola_world_body(w, id);
  return b != NULL ? b->vertex_count : -1;
}

/* Checks the common arguments of the per-body array calls. */
static piola_status body_array_args(const piola_world *w, piola_body_id id, const void *data,
                                    int32_t count, const piola_body **out) {
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_body *b = piola_world_body(w, id);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  if (data == NULL || count < 0) {
    PIOLA_MISUSE(w, "array != NULL && count >= 0");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (count != b->vertex_count) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "count %d does not match the body's %d vertices",
              (int)count, (int)b->vertex_count);
    return PIOLA_ERROR_COUNT_MISMATCH;
  }
  *out = b;
  return PIOLA_OK;
}

static piola_status check_finite_array(const piola_world *w, const float *a, size_t n,
                                       const char *what) {
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(a[i])) {
      piola_log(&w->def.logger, PIOLA_LOG_ERROR, "%s: entry %zu is not finite", what, i);
      return PIOLA_ERROR_NON_FINITE;
    }
  }
  return PIOLA_OK;
}

/* Which per-vertex array a body call reads or writes. */
typedef enum vertex_field { FIELD_POSITION, FIELD_VELOCITY, FIELD_INVERSE_MASS } vertex_field;

static piola_status body_write(piola_world *w, piola_body_id id, const float *data, int32_t count,
                               vertex_field field) {
  const piola_body *b;
  piola_status s = body_array_args(w, id, data, count, &b);
  if (s != PIOLA_OK) {
    return s;
  }
  size_t per = field == FIELD_INVERSE_MASS ? 1 : 3;
  static const char *const what[] = {"piola_body_set_positions", "piola_body_set_velocities",
                                     "piola_body_set_inverse_masses"};
  s = check_finite_array(w, data, per * (size_t)count, what[field]);
  if (s != PIOLA_OK) {
    return s;
  }
  if (field == FIELD_INVERSE_MASS) {
    for (int32_t i = 0; i < count; ++i) {
      if (data[i] < 0.0f) {
        piola_log(&w->def.logger, PIOLA_LOG_ERROR,
                  "piola_body_set_inverse_masses: entry %d is negative (%g)", (int)i,
                  (double)data[i]);
        return PIOLA_ERROR_INVALID_ARGUMENT;
      }
    }
  }
  const size_t first = (size_t)b->vertex_offset, nv = (size_t)count, n = per * nv;
  /* On OpenCL the body's vertices are read from the device, changed and written back, the new
   * values in one write (x and w share a float4): the host's x, p, v, w of the body are kept
   * to put back if a read or the write fails, so that a failed call changes nothing. */
  double *old = NULL;
  const bool live = w->cl != NULL && piola_opencl_live(w);
  if (live) {
    old = malloc(sizeof *old * 10 * nv + 1);
    if (old == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(old, w->x + 3 * first, sizeof *old * 3 * nv);
    memcpy(old + 3 * nv, w->p + 3 * first, sizeof *old * 3 * nv);
    memcpy(old + 6 * nv, w->v + 3 * first, sizeof *old * 3 * nv);
    memcpy(old + 9 * nv, w->w + first, sizeof *old * nv);
    s = piola_opencl_pull_range(w, b->vertex_offset, b->vertex_count);
    if (s != PIOLA_OK) {
      free(old);
      return s;
    }
  }
  double *dst = field == FIELD_POSITION   ? w->x + 3 * (size_t)b->vertex_offset
                : field == FIELD_VELOCITY ? w->v + 3 * (size_t)b->vertex_offset
                                          : w->w + b->vertex_offset;
  double *pdst = w->p + 3 * (size_t)b->vertex_offset;
  for (size_t i = 0; i < n; ++i) {
    dst[i] = (double)data[i];
  }
  if (field == FIELD_POSITION) {
    memcpy(pdst, dst, 3 * sizeof(double) * (size_t)count);
  }
  if (live) {
    s = piola_opencl_push_range(w, b->vertex_offset, b->vertex_count, field != FIELD_VELOCITY,
                                field == FIELD_VELOCITY);
    if (s != PIOLA_OK) {
      memcpy(w->x + 3 * first, old, sizeof *old * 3 * nv);
      memcpy(w->p + 3 * first, old + 3 * nv, sizeof *old * 3 * nv);
      memcpy(w->v + 3 * first, old + 6 * nv, sizeof *old * 3 * nv);
      memcpy(w->w + first, old + 9 * nv, sizeof *old * nv);
    }
    free(old);
  }
  return s;
}

static piola_status body_read(const piola_world *w, piola_body_id id, float *data, int32_t count,
                              vertex_field field) {
  const piola_body *b;
  piola_status s = body_array_args(w, id, data, count, &b);
  if (s != PIOLA_OK) {
    return s;
  }
  size_t per = field == FIELD_INVERSE_MASS ? 1 : 3;
  if (w->cl != NULL && piola_opencl_live(w) && field != FIELD_INVERSE_MASS) {
    return piola_opencl_read_range(w, b->vertex_offset, b->vertex_count,
                                   field == FIELD_POSITION ? data : NULL,
                                   field == FIELD_VELOCITY ? data : NULL);
  }
  const double *src = field == FIELD_POSITION   ? w->x + 3 * (size_t)b->vertex_offset
                      : field == FIELD_VELOCITY ? w->v + 3 * (size_t)b->vertex_offset
                                                : w->w + b->vertex_offset;
  for (size_t i = 0; i < per * (size_t)count; ++i) {
    data[i] = (float)src[i];
  }
  return PIOLA_OK;
}

piola_status piola_body_set_inverse_masses(piola_world *w, piola_body_id id,
                                           const float *inverse_masses, int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_write(w, id, inverse_masses, count, FIELD_INVERSE_MASS);
}

piola_status piola_body_get_inverse_masses(const piola_world *w, piola_body_id id,
                                           float *inverse_masses, int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_read(w, id, inverse_masses, count, FIELD_INVERSE_MASS);
}

piola_status piola_body_set_positions(piola_world *w, piola_body_id id, const float *xyz,
                                      int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_write(w, id, xyz, count, FIELD_POSITION);
}

piola_status piola_body_set_velocities(piola_world *w, piola_body_id id, const float *xyz,
                                       int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_write(w, id, xyz, count, FIELD_VELOCITY);
}

piola_status piola_body_set_forces(piola_world *w, piola_body_id id, const float *xyz,
                                   int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_body *b = piola_world_body(w, id);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  if (xyz != NULL && count != b->vertex_count) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_body_set_forces: count %d does not match the body's %d vertices", (int)count,
              (int)b->vertex_count);
    return PIOLA_ERROR_COUNT_MISMATCH;
  }
  if (xyz != NULL) {
    piola_status s = check_finite_array(w, xyz, 3 * (size_t)count, "piola_body_set_forces");
    if (s != PIOLA_OK) {
      return s;
    }
  }
  const bool fresh = w->f == NULL;
  if (fresh) {
    if (xyz == NULL) {
      return PIOLA_OK; /* nothing to clear */
    }
    w->f = calloc(3 * (size_t)(w->vertex_capacity > 0 ? w->vertex_capacity : 1), sizeof(double));
    if (w->f == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
  }
  const size_t n = 3 * (size_t)b->vertex_count;
  double *dst = w->f + 3 * (size_t)b->vertex_offset;
  /* The old forces, to put back if the device write fails (a failed call changes nothing). */
  double *old = w->cl != NULL ? malloc(sizeof *old * (n + 1)) : NULL;
  if (w->cl != NULL && old == NULL) {
    if (fresh) {
      free(w->f);
      w->f = NULL;
    }
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (old != NULL) {
    memcpy(old, dst, sizeof *old * n);
  }
  for (size_t i = 0; i < n; ++i) {
    dst[i] = xyz != NULL ? (double)xyz[i] : 0.0;
  }
  piola_status s =
      w->cl != NULL ? piola_opencl_push_forces(w, b->vertex_offset, b->vertex_count) : PIOLA_OK;
  if (s != PIOLA_OK) {
    if (fresh) {
      free(w->f);
      w->f = NULL;
    } else {
      memcpy(dst, old, sizeof *old * n);
    }
  }
  free(old);
  return s;
}

piola_status piola_body_get_positions(const piola_world *w, piola_body_id id, float *xyz,
                                      int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_read(w, id, xyz, count, FIELD_POSITION);
}

piola_status piola_body_get_velocities(const piola_world *w, piola_body_id id, float *xyz,
                                       int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_read(w, id, xyz, count, FIELD_VELOCITY);
}

/* The body behind an id, made ready for a change of its contact data (the host arrays made
 * current first); NULL with *status set when the id is invalid or the device cannot be read. */
static piola_body *body_for_change(piola_world *w, piola_body_id id, piola_status *status) {
  piola_body *b = w != NULL ? piola_world_body(w, id) : NULL;
  *status = w == NULL   ? PIOLA_ERROR_INVALID_ARGUMENT
            : b == NULL ? PIOLA_ERROR_INVALID_BODY
                        : begin_topology_change(w);
  return *status == PIOLA_OK ? b : NULL;
}

piola_status piola_body_set_collision_filter(piola_world *w, piola_body_id id, uint32_t group,
                                             uint32_t mask) {
  PIOLA_RETURN_IF_LOST(w);
  piola_status s;
  piola_body *b = body_for_change(w, id, &s);
  if (b != NULL) {
    b->collision_group = group;
    b->collision_mask = mask;
    solver_arrays_changed(w);
  }
  return s;
}

piola_status piola_body_set_self_collision(piola_world *w, piola_body_id id, bool enabled) {
  PIOLA_RETURN_IF_LOST(w);
  piola_status s;
  piola_body *b = body_for_change(w, id, &s);
  if (b != NULL) {
    b->self_collision = enabled;
    solver_arrays_changed(w);
  }
  return s;
}

/* The body's surface triangles (3 indices each) or surface vertices (1 each): min(capacity,
 * count) of them to out, the count to *count. */
static piola_status surface_listing(const piola_world *w, piola_body_id id, bool vertices,
                                    int32_t *out, int32_t capacity, int32_t *count) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_body *b = piola_world_body(w, id);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  if (capacity < 0 || (out == NULL && capacity > 0)) {
    PIOLA_MISUSE(w, "capacity >= 0 && (out != NULL || capacity == 0)");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const int32_t total = vertices ? b->surface_vertex_count : b->surface_count;
  const size_t per = vertices ? 1 : 3;
  const int32_t n = capacity < total ? capacity : total;
  if (n > 0) {
    memcpy(out, vertices ? b->surface_vertices : b->surface, sizeof *out * per * (size_t)n);
  }
  if (count != NULL) {
    *count = total;
  }
  return PIOLA_OK;
}

piola_status piola_body_get_surface(const piola_world *w, piola_body_id id, int32_t *triangles,
                                    int32_t capacity, int32_t *count) {
  return surface_listing(w, id, false, triangles, capacity, count);
}

piola_status piola_body_get_surface_vertices(const piola_world *w, piola_body_id id,
                                             int32_t *vertices, int32_t capacity, int32_t *count) {
  return surface_listing(w, id, true, vertices, capacity, count);
}

/* ---- Colliders ----------------------------------------------------------------------- */

/* The slot behind an id, or NULL (with a misuse report) when the id is invalid. */
static piola_collider_slot *collider_slot(const piola_world *w, piola_collider_id id) {
  int32_t slot = id.index1 - 1;
  if (slot < 0 || slot >= w->collider_slot_count || w->collider_slots[slot].dense < 0 ||
      w->collider_slots[slot].generation != id.generation) {
    PIOLA_MISUSE(w, "collider id is valid");
    return NULL;
  }
  return &w->collider_slots[slot];
}

static void colliders_changed(piola_world *w, int32_t first, int32_t end) {
  if (w->cl != NULL && first < end) {
    piola_opencl_colliders_changed(w, first, end);
  }
}

piola_status piola_world_add_collider(piola_world *w, const piola_collider_def *def,
                                      piola_collider_id *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (def == NULL) {
    PIOLA_MISUSE(w, "collider def != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_collider_data c;
  char reason[256];
  piola_status s = piola_collider_pack(def, &c, reason, sizeof reason);
  if (s != PIOLA_OK) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "piola_world_add_collider: %s", reason);
    return s;
  }
  int32_t slot = 0;
  while (slot < w->collider_slot_count && w->collider_slots[slot].dense >= 0) {
    ++slot;
  }
  int32_t cap = w->collider_capacity, n = w->collider_count + 1;
  if (!piola_grow((void **)&w->collider_slots, sizeof *w->collider_slots, slot + 1,
                  &w->collider_slot_capacity) ||
      !piola_grow((void **)&w->colliders, sizeof *w->colliders, n, &cap) ||
      !piola_grow((void **)&w->collider_slot, sizeof *w->collider_slot, n, &w->collider_capacity)) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (slot == w->collider_slot_count) {
    memset(&w->collider_slots[slot], 0, sizeof w->collider_slots[slot]);
    w->collider_slot_count++;
  }
  piola_collider_slot *cs = &w->collider_slots[slot];
  uint32_t generation = cs->generation;
  memset(cs, 0, sizeof *cs);
  cs->generation = generation;
  cs->dense = w->collider_count;
  cs->rotation[3] = 1.0;
  w->colliders[w->collider_count] = c;
  w->collider_slot[w->collider_count] = slot;
  w->collider_count++;
  colliders_changed(w, w->collider_count - 1, w->collider_count);
  if (out != NULL) {
    out->index1 = slot + 1;
    out->generation = generation;
  }
  return PIOLA_OK;
}

piola_status piola_world_add_plane(piola_world *w, const float normal[3], float offset,
                                   float friction, piola_collider_id *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (normal == NULL) {
    PIOLA_MISUSE(w, "normal != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_collider_def def = piola_default_collider_def();
  def.type = PIOLA_COLLIDER_PLANE;
  memcpy(def.shape.plane.normal, normal, sizeof def.shape.plane.normal);
  def.shape.plane.offset = offset;
  def.static_friction = friction;
  def.dynamic_friction = friction;
  return piola_world_add_collider(w, &def, out);
}

piola_status piola_world_remove_collider(piola_world *w, piola_collider_id id) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_collider_slot *cs = collider_slot(w, id);
  if (cs == NULL) {
    return PIOLA_ERROR_INVALID_COLLIDER;
  }
  /* The records after it move down one place: the colliders keep their order. */
  const int32_t d = cs->dense, tail = w->collider_count - d - 1;
  memmove(w->colliders + d, w->colliders + d + 1, sizeof *w->colliders * (size_t)tail);
  memmove(w->collider_slot + d, w->collider_slot + d + 1, sizeof *w->collider_slot * (size_t)tail);
  w->collider_count--;
  for (int32_t i = d; i < w->collider_count; ++i) {
    w->collider_slots[w->collider_slot[i]].dense = i;
  }
  cs->dense = -1;
  cs->generation++;
  colliders_changed(w, d, w->collider_count);
  return PIOLA_OK;
}

piola_status piola_world_set_collider_pose(piola_world *w, piola_collider_id id,
                                           const float position[3], const float rotation[4],
                                           const float linear_velocity[3],
                                           const float angular_velocity[3]) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_collider_slot *cs = collider_slot(w, id);
  if (cs == NULL) {
    return PIOLA_ERROR_INVALID_COLLIDER;
  }
  if (position == NULL || rotation == NULL || linear_velocity == NULL || angular_velocity == NULL) {
    PIOLA_MISUSE(w, "position, rotation and velocities != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!piola_finite3(position) || !piola_finite3(rotation) || !isfinite(rotation[3]) ||
      !piola_finite3(linear_velocity) || !piola_finite3(angular_velocity)) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_world_set_collider_pose: the pose and velocities must be finite");
    return PIOLA_ERROR_NON_FINITE;
  }
  double ql = 0.0;
  for (int k = 0; k < 4; ++k) {
    ql += (double)rotation[k] * rotation[k];
  }
  ql = sqrt(ql);
  if (!(ql > 1e-20)) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_world_set_collider_pose: the rotation quaternion is zero");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  for (int k = 0; k < 3; ++k) {
    cs->position[k] = position[k];
    cs->velocity[k] = linear_velocity[k];
    cs->angular_velocity[k] = angular_velocity[k];
  }
  for (int k = 0; k < 4; ++k) {
    cs->rotation[k] = rotation[k] / ql;
  }
  piola_collider_pose_pack(cs, &w->colliders[cs->dense]);
  colliders_changed(w, cs->dense, cs->dense + 1);
  return PIOLA_OK;
}

piola_status piola_world_get_collider_pose(const piola_world *w, piola_collider_id id,
                                           float position[3], float rotation[4],
                                           float linear_velocity[3], float angular_velocity[3]) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_collider_slot *cs = collider_slot(w, id);
  if (cs == NULL) {
    return PIOLA_ERROR_INVALID_COLLIDER;
  }
  for (int k = 0; k < 4; ++k) {
    if (position != NULL && k < 3) {
      position[k] = (float)cs->position[k];
    }
    if (rotation != NULL) {
      rotation[k] = (float)cs->rotation[k];
    }
    if (linear_velocity != NULL && k < 3) {
      linear_velocity[k] = (float)cs->velocity[k];
    }
    if (angular_velocity != NULL && k < 3) {
      angular_velocity[k] = (float)cs->angular_velocity[k];
    }
  }
  return PIOLA_OK;
}

/* After a step: every moving collider takes the pose its velocities led it to over dt, the
 * pose the step's last substep used (see piola_collider_pose_at). */
static void advance_colliders(piola_world *w) {
  const double dt = (double)w->def.dt;
  int32_t first = w->collider_count, end = 0;
  for (int32_t i = 0; i < w->collider_count; ++i) {
    piola_collider_slot *cs = &w->collider_slots[w->collider_slot[i]];
    const double *v = cs->velocity, *av = cs->angular_velocity;
    if (v[0] == 0.0 && v[1] == 0.0 && v[2] == 0.0 && av[0] == 0.0 && av[1] == 0.0 && av[2] == 0.0) {
      continue;
    }
    for (int k = 0; k < 3; ++k) {
      cs->position[k] += v[k] * dt;
    }
    const double rate = sqrt(av[0] * av[0] + av[1] * av[1] + av[2] * av[2]);
    if (rate > 0.0) {
      /* (a, aw) * q with (a, aw) the turn by rate dt about av */
      const double half = 0.5 * rate * dt, sn = sin(half) / rate, aw = cos(half);
      const double a[3] = {av[0] * sn, av[1] * sn, av[2] * sn};
      const double *q = cs->rotation;
      double r[4] = {aw * q[0] + q[3] * a[0] + a[1] * q[2] - a[2] * q[1],
                     aw * q[1] + q[3] * a[1] + a[2] * q[0] - a[0] * q[2],
                     aw * q[2] + q[3] * a[2] + a[0] * q[1] - a[1] * q[0],
                     aw * q[3] - a[0] * q[0] - a[1] * q[1] - a[2] * q[2]};
      const double l = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
      for (int k = 0; k < 4; ++k) {
        cs->rotation[k] = r[k] / l;
      }
    }
    piola_collider_pose_pack(cs, &w->colliders[i]);
    first = i < first ? i : first;
    end = i + 1;
  }
  colliders_changed(w, first, end);
}

double piola_world_damping_factor(const piola_world *w, double h) {
  return fmax(0.0, 1.0 - (double)w->def.damping * h);
}

/* ---- Solver arrays ------------------------------------------------------------------- */

void piola_world_sync_plastic(piola_world *w) {
  if (w->tets_dirty || w->solver.tet_m == NULL) {
    return; /* the bodies hold the current state */
  }
  for (int32_t k = 0; k < w->solver.plastic_count; ++k) {
    int32_t t = w->solver.plastic_tet[k];
    piola_body *b = &w->bodies[w->solver.tet_body[t]];
    size_t l = (size_t)w->solver.tet_local[t];
    memcpy(b->plastic_strain + 6 * l, w->solver.plastic_strain + 6 * (size_t)k, 6 * sizeof(double));
    memcpy(b->m_eff + 9 * l, w->solver.tet_m + 9 * (size_t)t, 9 * sizeof(double));
  }
}

/* The first index of the sorted a[0..n) whose value is >= key. */
static int32_t lower_bound(const int32_t *a, int32_t n, int32_t key) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (a[mid] < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/* The per-vertex gather lists of the Jacobi tets of nw (see piola_internal.h). */
static piola_status build_jacobi_lists(piola_solver_tets *nw, int32_t vertex_count) {
  const int32_t n = nw->jacobi_count;
  int32_t *count = calloc((size_t)vertex_count + 1, sizeof *count);
  nw->jacobi_incidence = malloc(sizeof(int32_t) * 4 * (size_t)(n > 0 ? n : 1));
  nw->jacobi_delta = calloc(16 * (size_t)(n > 0 ? n : 1), sizeof(double));
  if (count == NULL || nw->jacobi_incidence == NULL || nw->jacobi_delta == NULL) {
    free(count);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t touched = 0;
  for (int32_t i = 0; i < 4 * n; ++i) {
    int32_t v = nw->tet_vertices[4 * (size_t)nw->jacobi_first + (size_t)i];
    touched += count[v] == 0;
    count[v]++;
  }
  nw->jacobi_vertex_count = touched;
  nw->jacobi_vertices = malloc(sizeof(int32_t) * (size_t)(touched > 0 ? touched : 1));
  nw->jacobi_start = malloc(sizeof(int32_t) * ((size_t)touched + 1));
  int32_t *slot = malloc(sizeof(int32_t) * (size_t)(vertex_count > 0 ? vertex_count : 1));
  if (nw->jacobi_vertices == NULL || nw->jacobi_start == NULL || slot == NULL) {
    free(count);
    free(slot);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* Vertices in increasing order; each one's entries in increasing tet order. */
  int32_t at = 0, next = 0;
  for (int32_t v = 0; v < vertex_count; ++v) {
    if (count[v] > 0) {
      nw->jacobi_vertices[at] = v;
      nw->jacobi_start[at] = next;
      slot[v] = next;
      next += count[v];
      at++;
    }
  }
  nw->jacobi_start[touched] = next;
  for (int32_t i = 0; i < 4 * n; ++i) {
    int32_t v = nw->tet_vertices[4 * (size_t)nw->jacobi_first + (size_t)i];
    nw->jacobi_incidence[slot[v]++] = i;
  }
  free(count);
  free(slot);
  return PIOLA_OK;
}

/* The cloth kinds' solver arrays from the live cloth bodies: for each color, each kind's items
 * of that color of every body, contiguous (see piola_solver_cloth). */
static piola_status build_cloth(const piola_world *w, piola_solver_cloth *nc) {
  memset(nc, 0, sizeof *nc);
  int32_t colors = 0;
  for (int32_t i = 0; i < w->body_slots; ++i) {
    const piola_body *b = &w->bodies[i];
    if (b->alive && b->cloth) {
      nc->tri_count += b->tri_count;
      nc->bend_count += b->bend_count;
      colors = b->cloth_color_count > colors ? b->cloth_color_count : colors;
    }
  }
  nc->color_count = colors;
  const size_t nt = (size_t)(nc->tri_count > 0 ? nc->tri_count : 1);
  const size_t nb = (size_t)(nc->bend_count > 0 ? nc->bend_count : 1);
  const size_t ncol = (size_t)(colors > 0 ? colors : 1);
  nc->tri_vertices = malloc(sizeof(int32_t) * 4 * nt);
  nc->tri_dm_inv = malloc(sizeof(double) * 4 * nt);
  nc->tri_area = malloc(sizeof(double) * nt);
  nc->tri_lambda = calloc(nt, sizeof(double));
  nc->bend_vertices = malloc(sizeof(int32_t) * 4 * nb);
  nc->bend_rest = malloc(sizeof(double) * 6 * nb);
  nc->bend_lambda = calloc(nb, sizeof(double));
  nc->bend_material = malloc(sizeof(int32_t) * nb);
  bool ok = nc->tri_vertices && nc->tri_dm_inv && nc->tri_area && nc->tri_lambda &&
            nc->bend_vertices && nc->bend_rest && nc->bend_lambda && nc->bend_material;
  for (int k = 0; k < PIOLA_CLOTH_KIND_COUNT; ++k) {
    nc->kind_first[k] = malloc(sizeof(int32_t) * ncol);
    nc->kind_size[k] = malloc(sizeof(int32_t) * ncol);
    ok = ok && nc->kind_first[k] && nc->kind_size[k];
  }
  if (!ok) {
    free_solver_cloth(nc);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t at[PIOLA_CLOTH_KIND_COUNT] = {0, 0};
  for (int32_t c = 0; c < colors; ++c) {
    for (int kind = 0; kind < PIOLA_CLOTH_KIND_COUNT; ++kind) {
      nc->kind_first[kind][c] = at[kind];
      for (int32_t i = 0; i < w->body_slots; ++i) {
        const piola_body *b = &w->bodies[i];
        if (!b->alive || !b->cloth || c >= b->cloth_color_count) {
          continue;
        }
        const int32_t o = b->vertex_offset;
        for (int32_t j = b->cloth_color_start[c]; j < b->cloth_color_start[c + 1]; ++j) {
          const int32_t item = b->cloth_by_color[j];
          if (kind == PIOLA_KIND_TRIANGLE && item < b->tri_count) {
            const size_t g = (size_t)at[kind]++, l = (size_t)item;
            for (int k = 0; k < 3; ++k) {
              nc->tri_vertices[4 * g + (size_t)k] = b->tris[3 * l + (size_t)k] + o;
            }
            nc->tri_vertices[4 * g + 3] = b->cloth_material;
            memcpy(nc->tri_dm_inv + 4 * g, b->tri_dm_inv + 4 * l, 4 * sizeof(double));
            nc->tri_area[g] = b->tri_area[l];
          } else if (kind == PIOLA_KIND_BEND && item >= b->tri_count) {
            const size_t g = (size_t)at[kind]++, l = (size_t)(item - b->tri_count);
            for (int k = 0; k < 4; ++k) {
              nc->bend_vertices[4 * g + (size_t)k] = b->bends[4 * l + (size_t)k] + o;
            }
            memcpy(nc->bend_rest + 6 * g, b->bend_rest + 6 * l, 6 * sizeof(double));
            nc->bend_material[g] = b->cloth_material;
          }
        }
      }
      nc->kind_size[kind][c] = at[kind] - nc->kind_first[kind][c];
    }
  }
  return PIOLA_OK;
}

piola_status piola_world_build_tets(piola_world *w) {
  if (!w->tets_dirty) {
    return PIOLA_OK;
  }
  piola_world_sync_plastic(w);
  piola_status s = piola_contacts_build(w);
  if (s != PIOLA_OK) {
    return s;
  }
  int32_t nt = 0, colors = 0, plastic = 0, tet_bodies = 0;
  for (int32_t i = 0; i < w->body_slots; ++i) {
    const piola_body *b = &w->bodies[i];
    if (b->alive) {
      tet_bodies += !b->cloth;
      nt += b->tet_count;
      colors = b->color_count > colors ? b->color_count : colors;
      plastic += !b->cloth && w->materials[b->material].plastic ? b->tet_count : 0;
    }
  }
  size_t n = (size_t)(nt > 0 ? nt : 1), np = (size_t)(plastic > 0 ? plastic : 1);
  piola_solver_tets nw; /* the new arrays, swapped in when all allocations succeeded */
  memset(&nw, 0, sizeof nw);
  nw.tet_count = nt;
  nw.color_count = colors;
  nw.plastic_count = plastic;
  nw.body_count = tet_bodies; /* the per-body lists hold tet bodies: cloth has no tets */
  nw.tet_vertices = malloc(sizeof(int32_t) * 4 * n);
  nw.tet_m = malloc(sizeof(double) * 9 * n);
  nw.tet_volume = malloc(sizeof(double) * n);
  nw.tet_lambda = calloc(2 * n, sizeof(double));
  nw.tet_material = malloc(sizeof(int32_t) * n);
  nw.tet_body = malloc(sizeof(int32_t) * n);
  nw.tet_local = malloc(sizeof(int32_t) * n);
  nw.color_first = malloc(sizeof(int32_t) * (size_t)(colors + 1));
  nw.color_size = malloc(sizeof(int32_t) * (size_t)(colors + 1));
  nw.plastic_tet = malloc(sizeof(int32_t) * np);
  nw.plastic_dm_rest = malloc(sizeof(double) * 9 * np);
  nw.plastic_strain = malloc(sizeof(double) * 6 * np);
  size_t nb = (size_t)(tet_bodies > 0 ? tet_bodies : 1);
  nw.body_vertex = malloc(sizeof(int32_t) * 2 * nb);
  nw.body_color = malloc(sizeof(int32_t) * 2 * nb * (size_t)(colors > 0 ? colors : 1));
  nw.body_jacobi = malloc(sizeof(int32_t) * 4 * nb);
  nw.support = calloc(4 * (size_t)(w->vertex_count > 0 ? w->vertex_count : 1), sizeof(double));
  if (!nw.tet_vertices || !nw.tet_m || !nw.tet_volume || !nw.tet_lambda || !nw.tet_material ||
      !nw.tet_body || !nw.tet_local || !nw.color_first || !nw.color_size || !nw.plastic_tet ||
      !nw.plastic_dm_rest || !nw.plastic_strain || !nw.body_vertex || !nw.body_color ||
      !nw.body_jacobi || !nw.support) {
    free_solver_tets(&nw);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t g = 0, k = 0;
  /* Colors 0 .. colors - 1, then (c == colors) every body's Jacobi tets. */
  for (int32_t c = 0; c <= colors; ++c) {
    nw.color_first[c] = g;
    for (int32_t i = 0, dense = 0; i < w->body_slots; ++i) {
      const piola_body *b = &w->bodies[i];
      if (!b->alive || b->cloth) {
        continue;
      }
      int32_t *range = c < colors ? nw.body_color + 2 * ((size_t)dense * colors + (size_t)c)
                                  : nw.body_jacobi + 4 * (size_t)dense;
      dense++;
      range[0] = g;
      range[1] = 0;
      if (c >= b->color_count && c < colors) {
        continue;
      }
      range[1] = c < colors ? b->color_start[c + 1] - b->color_start[c]
                            : b->tet_count - b->color_start[b->color_count];
      bool is_plastic = w->materials[b->material].plastic;
      int32_t j0 = c < colors ? b->color_start[c] : b->color_start[b->color_count];
      int32_t j1 = c < colors ? b->color_start[c + 1] : b->tet_count;
      for (int32_t j = j0; j < j1; ++j, ++g) {
        size_t l = (size_t)b->by_color[j];
        for (int a = 0; a < 4; ++a) {
          nw.tet_vertices[4 * (size_t)g + a] = b->tets[4 * l + a] + b->vertex_offset;
        }
        memcpy(nw.tet_m + 9 * (size_t)g, (is_plastic ? b->m_eff : b->dm_inv) + 9 * l,
               9 * sizeof(double));
        nw.tet_volume[g] = b->volume[l];
        nw.tet_material[g] = b->material;
        nw.tet_body[g] = i;
        nw.tet_local[g] = (int32_t)l;
        if (is_plastic) {
          nw.plastic_tet[k] = g;
          memcpy(nw.plastic_dm_rest + 9 * (size_t)k, b->dm_inv + 9 * l, 9 * sizeof(double));
          memcpy(nw.plastic_strain + 6 * (size_t)k, b->plastic_strain + 6 * l, 6 * sizeof(double));
          ++k;
        }
      }
    }
    nw.color_size[c] = g - nw.color_first[c];
  }
  nw.jacobi_first = nw.color_first[colors];
  nw.jacobi_count = nw.color_size[colors];
  s = build_jacobi_lists(&nw, w->vertex_count);
  piola_solver_cloth nc;
  if (s == PIOLA_OK) {
    s = build_cloth(w, &nc);
  }
  if (s != PIOLA_OK) {
    free_solver_tets(&nw);
    return s;
  }
  free_solver_cloth(&w->cloth);
  w->cloth = nc;
  /* Each body's vertices, and its entries in the tail vertex list (sorted by vertex; a reused
   * slot can hold a body whose vertices come last, so search rather than scan). */
  for (int32_t i = 0, dense = 0; i < w->body_slots; ++i) {
    const piola_body *b = &w->bodies[i];
    if (!b->alive || b->cloth) {
      continue;
    }
    nw.body_vertex[2 * dense] = b->vertex_offset;
    nw.body_vertex[2 * dense + 1] = b->vertex_count;
    int32_t first = lower_bound(nw.jacobi_vertices, nw.jacobi_vertex_count, b->vertex_offset);
    int32_t end =
        lower_bound(nw.jacobi_vertices, nw.jacobi_vertex_count, b->vertex_offset + b->vertex_count);
    nw.body_jacobi[4 * dense + 2] = first;
    nw.body_jacobi[4 * dense + 3] = end - first;
    nw.max_body_tets = b->tet_count > nw.max_body_tets ? b->tet_count : nw.max_body_tets;
    nw.max_body_vertices =
        b->vertex_count > nw.max_body_vertices ? b->vertex_count : nw.max_body_vertices;
    dense++;
  }
  free_solver_tets(&w->solver);
  w->solver = nw;
  w->tets_dirty = false;
  return PIOLA_OK;
}
