/* Piola world: the public API over bodies, materials, colliders and the step schedule.
 *
 * The step is written once, here, as the ordered list of stages of XPBD (Macklin, Mueller,
 * Chentanez 2016, Algorithm 1, with the substepping of Macklin et al. 2019, "Small Steps in
 * Physics Simulation"):
 *
 *   h = dt / substeps; repeat substeps times:
 *     predict; reset multipliers;
 *     broad phase; narrow phase (contacts: once per substep, from x to the predicted p);
 *     repeat iterations times: solve tets (color by color); contacts; attachments; collide
 *       (each collider at its pose at the end of the substep);
 *     with contacts: the inverted-tet pass (solve tets, those inverted or nearly flat, each by
 *       its share piola_inverted_share; repeated while a sweep does work,
 *       PIOLA_INVERTED_PASSES times at most), then the colliders and the attachments once more;
 *     update velocities (and damp); plasticity (plastic bodies only)
 *
 * Under vertex block descent (PIOLA_SCHEME_VBD, vbd.c; Chen, Liu, Yang, Yuksel 2024) the same
 * schedule runs with "solve vertices" (each vertex color in turn, one Newton step per vertex of
 * the color on its block of the incremental potential) in place of "solve tets", and without
 * the inverted-tet pass; under the multigrid scheme (PIOLA_SCHEME_MULTIGRID, newton.c) with
 * "solve global" (one Newton step on the whole incremental potential) in its place, and the
 * contacts projected after the last iteration only (its contacts are penalties of the Newton
 * steps, newton_contact.c). Both hold the attachments in their own solve.
 *
 * The inverted-tet pass: contacts are projected after the tets, so they have the last word in
 * every iteration, and where a contact presses on a flat tet whose four corners lie on the
 * surface (a sliver of the mesh) it can turn the tet over by a fraction of a millimetre; the
 * tets' projection turns it back in the next iteration and the contact over again, so the
 * sliver would end every substep inverted. One more pass over the colors after the iterations
 * projects the tets that end the iterations inverted (each with its own inversion handling, from
 * its multipliers of the substep), so that no contact leaves a tet turned over; every other tet
 * and every contact keep the iterations' result. A tet's share of its projection falls from 1
 * at volume 0 to 0 at PIOLA_INVERTED_RAMP (5%) of its rest volume (piola_inverted_share), so
 * that the pass is continuous in the positions: float and double, which may find a flat tet's
 * volume on either side of zero, then project it by nearly the same amount. One projection
 * lifts a sliver pressed deep through its base only part of the way, so the pass sweeps the
 * colors again while a sweep did work, up to PIOLA_INVERTED_PASSES (4) sweeps. Supported corners
 * are not moved into their colliders (piola_tet_support).
 *   colliders advance along their velocities by dt
 *
 * Each backend runs a stage its own way through its table of operations (backend.h: the CPU
 * reference on host doubles, OpenCL as kernel launches). This file holds the world's lifecycle,
 * its settings, the step and the statistics; the bodies, colliders, attachments and render
 * meshes have files of their own. Every call validates all of its input before it changes
 * anything, so a failed call leaves the world as it was.
 */
#include "world.h"

#include "cpu_reference.h"
#include "residual.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
       def->iteration_scheme != PIOLA_SCHEME_JACOBI && def->iteration_scheme != PIOLA_SCHEME_VBD &&
       def->iteration_scheme != PIOLA_SCHEME_MULTIGRID) ||
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
  if (!(def->vbd_chebyshev_rho >= 0.0f && def->vbd_chebyshev_rho < 1.0f)) {
    snprintf(reason, n, "need vbd_chebyshev_rho in [0, 1) (%g)", (double)def->vbd_chebyshev_rho);
    return isfinite(def->vbd_chebyshev_rho) ? PIOLA_ERROR_INVALID_ARGUMENT : PIOLA_ERROR_NON_FINITE;
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
  w->ops = NULL;
  if (def->backend == PIOLA_BACKEND_OPENCL || def->backend == PIOLA_BACKEND_AUTO) {
    const piola_backend_ops *opencl = piola_backend_find(PIOLA_BACKEND_OPENCL);
    if (opencl == NULL) {
      piola_log(&def->logger, PIOLA_LOG_ERROR,
                "this build of Piola has no OpenCL backend (configure with -DPIOLA_OPENCL=ON)");
      s = PIOLA_ERROR_UNSUPPORTED;
    } else {
      s = opencl->create(w, faults);
    }
    if (s == PIOLA_OK) {
      w->ops = opencl;
    } else if (def->backend == PIOLA_BACKEND_OPENCL) {
      free(w);
      return s;
    } else {
      piola_log(&def->logger, PIOLA_LOG_INFO,
                "backend auto: no usable OpenCL device (%s); using the CPU reference",
                piola_status_string(s));
    }
  }
  if (w->ops == NULL) {
    s = piola_cpu_backend.create(w, faults);
    if (s != PIOLA_OK) {
      free(w);
      return s;
    }
    w->ops = &piola_cpu_backend;
  }
  w->backend = w->ops->kind;
  *out = w;
  return PIOLA_OK;
}

void piola_world_destroy(piola_world *w) {
  if (w == NULL) {
    return;
  }
  piola_render_meshes_free(w);
  piola_attachments_free(w);
  w->ops->destroy(w);
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    piola_body_free(&w->bodies[i]);
  }
  piola_id_pool_destroy(&w->body_ids);
  free(w->bodies);
  free(w->materials);
  free(w->cloth_materials);
  free(w->colliders);
  free(w->collider_impulse);
  free(w->shapes);
  free(w->collider_slot);
  piola_id_pool_destroy(&w->collider_ids);
  free(w->collider_slots);
  free(w->x);
  free(w->p);
  free(w->v);
  free(w->y);
  free(w->x_start);
  free(w->collider_pushed);
  free(w->support_collider);
  free(w->w);
  free(w->f);
  piola_solver_tets_free(&w->solver);
  piola_solver_cloth_free(&w->cloth);
  piola_solver_vbd_free(&w->vbd);
  piola_solver_newton_free(&w->newton);
  piola_contacts_free(&w->contacts);
  free(w);
}

piola_status piola_world_pull(piola_world *w) {
  return w->ops->pull(w);
}

/* Runs one stage on the world's backend. */
static piola_status run_stage(piola_world *w, piola_stage stage, double h) {
  return w->ops->stage(w, stage, h);
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
  const bool from_host = w->ops->host_current(w);
  /* A failed step leaves the solver arrays to be built again, as it found them. */
  const bool tets_were_dirty = w->tets_dirty;
  piola_status s = piola_world_build_tets(w);
  if (s == PIOLA_OK) {
    s = w->ops->begin_step(w);
  }
  if (s == PIOLA_OK && w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID) {
    s = piola_newton_begin_step(w);
  }
  if (s == PIOLA_OK && w->attachments_dirty) {
    s = piola_attachments_build(w);
  }
  if (s != PIOLA_OK) {
    /* Nothing ran: the device holds the state before the step (or nothing, when the upload
     * failed and it is re-uploaded next time). */
    if (tets_were_dirty) {
      w->tets_dirty = true;
      w->ops->invalidate(w); /* the host is current: the backend's state is made anew */
    }
    return w->ops->lost(w) ? PIOLA_ERROR_DEVICE_LOST : s;
  }
  memset(w->stage_ms, 0, sizeof w->stage_ms);
  w->collider_force_scale = 0.0; /* until the step is done */
  const int32_t substeps = w->def.substeps;
  const double h = (double)w->def.dt / substeps;
  /* The step, stage by stage (see the module comment). Under the OpenCL per-body schedule one
   * launch runs a tet body's stages up to the velocities (piola_substep_bodies); with contacts,
   * which couple the bodies, attachments, or cloth (whose vertices are in no per-body list), it
   * runs them in parts around the other stages: the tets' iterations per body. */
  /* Vertex block descent: SOLVE_VERTICES in place of SOLVE_TETS (tets and cloth alike), per
   * stage, and no inverted-tet pass (its extended energies recover inverted tets within the
   * iterations; there are no multipliers to carry on from). */
  /* The multigrid scheme likewise: SOLVE_GLOBAL (one Newton step of the whole substep) in place
   * of SOLVE_TETS, attachments in its solve, no inverted-tet pass. */
  const bool minimizes = w->def.iteration_scheme == PIOLA_SCHEME_VBD ||
                         w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID;
  const bool multigrid = w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID;
  const piola_stage solve = w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID
                                ? PIOLA_STAGE_SOLVE_GLOBAL
                            : minimizes ? PIOLA_STAGE_SOLVE_VERTICES
                                        : PIOLA_STAGE_SOLVE_TETS;
  const bool per_body = !minimizes && w->ops->per_body(w);
  const bool contacts = piola_contacts_active(w);
  const bool attachments = w->attach.count > 0;
  const bool only_tet_bodies = w->solver.body_count == w->body_count;
  for (int32_t sub = 0; sub < substeps && s == PIOLA_OK; ++sub) {
    w->collider_time = (double)(sub + 1) * h; /* colliders stand at the end of the substep */
    w->substep = sub;
    if (per_body && !contacts && !attachments && only_tet_bodies) {
      s = w->ops->substep_bodies(w, h, PIOLA_BODIES_WHOLE_SUBSTEP);
    } else {
      if (per_body && only_tet_bodies) {
        s = w->ops->substep_bodies(w, h, PIOLA_BODIES_PREDICT);
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
      /* The multigrid scheme's first Newton step starts from the prediction moved out of the
       * colliders, its pushed vertices supported: a whole sole landing otherwise falls through
       * the collider in that step and is pushed back after it, crushing the tets above it. */
      if (s == PIOLA_OK && multigrid && w->collider_count > 0) {
        w->iteration = -1; /* before the iterations (piola_collide_mode) */
        s = run_stage(w, PIOLA_STAGE_COLLIDE, h);
      }
      for (int32_t it = 0; it < w->def.iterations && s == PIOLA_OK; ++it) {
        w->iteration = it;
        s = per_body ? w->ops->substep_bodies(w, h, PIOLA_BODIES_ITERATION)
                     : run_stage(w, solve, h);
        /* The multigrid scheme projects the body contacts once, after its last Newton step:
         * its contacts over a triangle are penalties of the solve, and a projection between
         * two Newton steps would push them out of the load the next step must find again. */
        const bool project = !multigrid || it == w->def.iterations - 1;
        if (s == PIOLA_OK && contacts && project) {
          s = run_stage(w, PIOLA_STAGE_CONTACT, h);
        }
        if (s == PIOLA_OK && attachments && !minimizes) { /* VBD: in the vertices' blocks */
          s = run_stage(w, PIOLA_STAGE_ATTACHMENTS, h);
        }
        if (s == PIOLA_OK && w->collider_count > 0) {
          s = run_stage(w, PIOLA_STAGE_COLLIDE, h);
        }
      }
      if (s == PIOLA_OK && contacts && !minimizes) {
        w->tets_inverted_only = true;
        s = per_body ? w->ops->substep_bodies(w, h, PIOLA_BODIES_INVERTED)
                     : run_stage(w, PIOLA_STAGE_SOLVE_TETS, h);
        w->tets_inverted_only = false;
        /* The inverted-tet pass moves the corners of the tets it turns back: into a collider
         * that does not support its vertices (a mesh or a distance field), so the colliders act
         * once more; and an attached vertex among them, so the attachments have the last word
         * again, so that a hard one holds its vertex at its target (the multipliers carry on from
         * the iterations). */
        if (s == PIOLA_OK && w->collider_count > 0) {
          s = run_stage(w, PIOLA_STAGE_COLLIDE, h);
        }
        if (s == PIOLA_OK && attachments) {
          s = run_stage(w, PIOLA_STAGE_ATTACHMENTS, h);
        }
      }
      if (s == PIOLA_OK) {
        s = run_stage(w, PIOLA_STAGE_UPDATE_VELOCITIES, h);
      }
    }
    if (s == PIOLA_OK && w->solver.plastic_count > 0) {
      s = run_stage(w, PIOLA_STAGE_PLASTICITY, h);
    }
  }
  if (s == PIOLA_OK) {
    s = w->ops->end_step(w);
  }
  if (s != PIOLA_OK) {
    /* The CPU reference fails only before its stages. On a device the state may be half
     * advanced: restored (dropped in favour of the host's) or the world is lost. */
    w->tets_dirty = w->tets_dirty || tets_were_dirty;
    return w->ops->abort_step(w, from_host, s);
  }
  w->collider_force_scale = h * (double)w->def.dt;
  w->prediction_valid = true;
  piola_world_advance_colliders(w);
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
  return w->ops->finish(w);
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
  w->ops->stage_times(w, stage_ms);
  return PIOLA_OK;
}

piola_status piola_world_get_kernel_times(const piola_world *w, piola_kernel_time *times,
                                          int32_t capacity, int32_t *count) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL || capacity < 0 || (times == NULL && capacity > 0)) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const int32_t n = w->ops->kernel_times(w, times, capacity);
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
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    if (piola_id_pool_alive(&w->body_ids, i) && w->bodies[i].color_count > count) {
      count = w->bodies[i].color_count;
    }
  }
  for (int32_t c = 0; c < count && c < capacity; ++c) {
    int32_t n = 0;
    for (int32_t i = 0; i < w->body_ids.count; ++i) {
      const piola_body *b = &w->bodies[i];
      if (piola_id_pool_alive(&w->body_ids, i) && c < b->color_count) {
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

/* The passes per step that must run one after another (piola_stats.dependent_passes, whose
 * comment is the definition), from the settings and the counts st already holds. */
_Static_assert(PIOLA_INVERTED_PASSES == 4, "piola_stats.dependent_passes documents 4 sweeps");
static int32_t dependent_passes(const piola_world *w, const piola_stats *st) {
  const bool contacts = w->def.contacts && st->surface_triangles > 0;
  bool attachments = false, plastic = false;
  for (int32_t i = 0; i < w->attachment_ids.count && !attachments; ++i) {
    attachments = piola_id_pool_alive(&w->attachment_ids, i) &&
                  piola_body_is_valid(w, w->attachment_slots[i].body);
  }
  for (int32_t i = 0; i < w->body_ids.count && !plastic; ++i) {
    const piola_body *b = &w->bodies[i];
    plastic =
        piola_id_pool_alive(&w->body_ids, i) && !b->cloth && w->materials[b->material].plastic;
  }
  const bool multigrid = w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID;
  const bool vbd = w->def.iteration_scheme == PIOLA_SCHEME_VBD || multigrid;
  const int64_t tets = (int64_t)st->color_count + (st->jacobi_tets > 0);
  const piola_solver_newton *nw = &w->newton;
  const int64_t levels = nw->mg.level_count;
  const int64_t cg = nw->newton_steps > 0 ? nw->cg_iterations / nw->newton_steps : 0;
  const int64_t solve = multigrid ? 1 + cg * (3 + 11 * (levels - 1) + 1) + 1
                        : vbd     ? (int64_t)st->vertex_color_count
                                  : tets + st->cloth_color_count;
  const int64_t iteration =
      solve + (contacts ? 2 : 0) + (attachments && !vbd) + (w->collider_count > 0);
  int64_t vertex_passes = 0; /* VBD's Chebyshev passes and the rigid fit of its free bodies */
  for (int32_t k = 1; k <= w->def.iterations && w->def.iteration_scheme == PIOLA_SCHEME_VBD; ++k) {
    bool blend, keep;
    vertex_passes += piola_vbd_chebyshev_pass(w, k, &blend, &keep) + piola_vbd_fit_after(w, k);
  }
  const int64_t substep =
      1 + (contacts ? 2 : 0) + (multigrid ? levels + (w->collider_count > 0) : 0) +
      (int64_t)w->def.iterations * iteration + vertex_passes +
      (contacts && !vbd ? PIOLA_INVERTED_PASSES * tets + (w->collider_count > 0) + attachments
                        : 0) +
      1 + plastic;
  const int64_t total = substep * w->def.substeps;
  return total < INT32_MAX ? (int32_t)total : INT32_MAX;
}

/* The unconverged-step warning: once per world, when a body's relative residual (the largest,
 * `worst`, at body slot `slot`) stays above PIOLA_RESIDUAL_WARNING at every stats read over
 * PIOLA_RESIDUAL_WARNING_STEPS steps. The world is not const here: it was allocated by
 * piola_world_create, and only this logging record changes. */
static void warn_unconverged(piola_world *w, int32_t slot, double worst) {
  if (slot < 0 || w->residual_warned) {
    return;
  }
  if (!(worst > PIOLA_RESIDUAL_WARNING)) {
    w->residual_high_since = 0;
    return;
  }
  if (w->residual_high_since == 0 || w->step_count < w->residual_high_since) {
    w->residual_high_since = w->step_count;
    return;
  }
  if (w->step_count - w->residual_high_since < PIOLA_RESIDUAL_WARNING_STEPS) {
    return;
  }
  const piola_body *b = &w->bodies[slot];
  /* Under the multigrid scheme the step converges at any resolution; what keeps its residual up
   * is what acts between its Newton steps (body contacts, mesh and SDF colliders) or too few of
   * them. */
  const bool multigrid = w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID;
  piola_log(&w->def.logger, PIOLA_LOG_WARNING,
            "unconverged: body %d (%d vertices, %d %s) has a coarse residual of %.3g, above %g "
            "at every read for %d steps: its solve is far from the implicit step%s. Raise "
            "substeps (now %d) or iterations (now %d), %s (docs/solvers.md); "
            "stats.coarse_residual has the figure at every read",
            (int)slot + 1, (int)b->vertex_count, b->cloth ? (int)b->tri_count : (int)b->tet_count,
            b->cloth ? "triangles" : "tets", worst, PIOLA_RESIDUAL_WARNING,
            (int)(w->step_count - w->residual_high_since),
            multigrid ? "" : ", and the body is softer than its material says",
            (int)w->def.substeps, (int)w->def.iterations,
            multigrid ? "or expect it where other bodies, its own contacts or mesh and SDF "
                        "colliders hold the body: they act between the multigrid scheme's Newton "
                        "steps, not in them"
                      : "use a coarser mesh, or a scheme that converges at this resolution");
  w->residual_warned = true;
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
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (piola_id_pool_alive(&w->body_ids, i)) {
      st.triangle_count += b->tri_count;
      st.bend_count += b->bend_count;
      st.cloth_color_count =
          b->cloth_color_count > st.cloth_color_count ? b->cloth_color_count : st.cloth_color_count;
      st.tet_count += b->tet_count;
      st.jacobi_tets += b->tet_count - b->color_start[b->color_count];
      colors = b->color_count > colors ? b->color_count : colors;
      st.vertex_color_count = b->vertex_color_count > st.vertex_color_count ? b->vertex_color_count
                                                                            : st.vertex_color_count;
    }
  }
  for (int32_t c = 0; c < colors; ++c) {
    int32_t n = 0;
    for (int32_t i = 0; i < w->body_ids.count; ++i) {
      const piola_body *b = &w->bodies[i];
      if (piola_id_pool_alive(&w->body_ids, i) && c < b->color_count) {
        n += b->color_start[c + 1] - b->color_start[c];
      }
    }
    largest = n > largest ? n : largest;
    smallest = n < smallest ? n : smallest;
  }
  st.color_count = colors;
  st.largest_color = largest;
  st.smallest_color = colors > 0 ? smallest : 0;

  /* Energies, counts and the residual from the current state. */
  piola_status s = PIOLA_OK;
  piola_residual residual = {0.0, 0.0, -1, 0.0};
  const double *x = w->x, *v = w->v, *tet_m = w->solver.tet_m, *lambda = w->solver.tet_lambda;
  double *buffers = NULL;
  if (!w->ops->host_current(w)) {
    size_t nv = 3 * (size_t)w->vertex_count, nt = (size_t)w->solver.tet_count;
    buffers = malloc(sizeof(double) * (2 * nv + 11 * nt + 1));
    if (buffers == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    double *bx = buffers, *bv = buffers + nv, *bm = bv + nv, *bl = bm + 9 * nt;
    s = w->ops->read_all(w, bx, bv, bm, bl);
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
    s = piola_world_residual(w, x, tet_m, &residual);
    st.relative_residual = residual.relative;
    st.coarse_residual = residual.coarse;
  }
  free(buffers);
  if (s != PIOLA_OK) {
    return s;
  }
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    if (piola_id_pool_alive(&w->body_ids, i)) {
      st.surface_triangles += w->bodies[i].surface_count;
      st.surface_vertices += w->bodies[i].surface_vertex_count;
    }
  }
  if (piola_contacts_active(w) && w->step_count > 0) {
    int32_t counters[4];
    s = w->ops->contact_counters(w, counters);
    if (s != PIOLA_OK) {
      return s;
    }
    st.contact_count = counters[0];
    st.contact_overflow = counters[1];
    st.edge_contact_count = counters[2];
    st.edge_contact_overflow = counters[3];
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
  warn_unconverged((piola_world *)w, residual.worst_slot, residual.worst_coarse);
  st.surface_edges = w->tets_dirty ? 0 : w->contacts.edge_count;
  st.dependent_passes = dependent_passes(w, &st);
  if (w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID) {
    st.linear_iterations = w->newton.cg_iterations;
    st.multigrid_levels = w->newton.mg.level_count;
    st.linear_residual = w->newton.cg_relative;
  }
  w->ops->describe(w, &st);
  *out = st;
  return PIOLA_OK;
}
