/* Piola OpenCL stages: the step as kernel launches on one in-order queue (one launch per color
 * per iteration, all bodies in it; or one launch per substep with a work-group per body), its
 * begin, end and abort, and the stage and kernel times. */
#include "opencl_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Step ---------------------------------------------------------------------------- */

piola_status piola_opencl_begin_step(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  piola_status s = PIOLA_OK;
  if (!cl->live) {
    s = piola_ocl_upload_all(w);
  } else if (cl->colliders_dirty_first < cl->colliders_dirty_end) {
    s = piola_ocl_upload_colliders(w);
  }
  /* The mesh and SDF colliders' data, when it changed (never on a pose change); a buffer of one
   * entry stands for none. */
  if (s == PIOLA_OK && (!cl->shapes_uploaded || cl->shapes_version != w->shapes_version)) {
    const size_t bytes = 16 * (size_t)w->shape_count;
    s = piola_ocl_ensure_buffer(w, BUF_COLLIDER_SHAPES, bytes, CL_MEM_READ_ONLY);
    if (s == PIOLA_OK) {
      s = piola_ocl_write_buffer(w, BUF_COLLIDER_SHAPES, 0, bytes, w->shapes);
    }
    if (s == PIOLA_OK) {
      cl->shapes_uploaded = true;
      cl->shapes_version = w->shapes_version;
    }
  }
  /* The colliders' impulse records start the step at zero (piola_record_impulse). */
  const size_t impulse_bytes = 32 * (size_t)w->collider_count * (size_t)cl->vertex_count;
  if (s == PIOLA_OK && impulse_bytes > 0) {
    s = piola_ocl_ensure_buffer(w, BUF_COLLIDER_IMPULSE, impulse_bytes, CL_MEM_READ_WRITE);
    if (s == PIOLA_OK) {
      s = piola_ocl_ensure_buffer(w, BUF_COLLIDER_IMPULSE_SUM, 32, CL_MEM_READ_WRITE);
    }
    if (s == PIOLA_OK) {
      s = piola_ocl_zero_buffer(w, BUF_COLLIDER_IMPULSE, impulse_bytes);
    }
  }
  return s;
}

piola_status piola_opencl_abort_step(piola_world *w, bool from_host, piola_status s) {
  piola_opencl *cl = piola_ocl(w);
  for (int32_t i = 0; i < cl->event_count; ++i) {
    piola_ocl_release_event(cl->faults, cl->events[i].event);
  }
  cl->event_count = 0;
  if (from_host && !cl->lost) {
    /* The host arrays still hold the state before the step: drop the device's half-advanced
     * copy; the next step uploads it again. */
    cl->live = false;
    return s;
  }
  piola_log(&w->def.logger, PIOLA_LOG_ERROR,
            "OpenCL: a step failed with the device state half advanced (%s); the world is lost",
            piola_status_string(s));
  cl->lost = true;
  return PIOLA_ERROR_DEVICE_LOST;
}

/* The velocity gravity adds over a substep of h seconds (m/s), as the kernels take it. */
static cl_float4 gravity_impulse(const piola_world *w, double h) {
  cl_float4 hg = {{(float)(h * w->def.gravity[0]), (float)(h * w->def.gravity[1]),
                   (float)(h * w->def.gravity[2]), 0.0f}};
  return hg;
}

static piola_status solve_jacobi_tail(piola_world *w, double h, piola_stage stage);

/* Whether SOLVE_TETS in packets runs one launch per iteration with a work-group per body
 * (piola_solve_body_packets) rather than one launch per color: where every body is small
 * enough for one core to go through it in less time than the launches of its colors take
 * (an Armadillo of 3717 tets is: bench/LOG.md), or
 * the bodies are many enough to keep every core busy (4 per compute unit) and none is larger
 * than half a unit's share of the tets. A single large body runs per color on every core. */
#define PACKET_BODY_MAX_TETS 16384
static bool packets_per_body(const piola_world *w) {
  const int64_t units = piola_ocl(w)->compute_units;
  const int64_t largest = w->solver.max_body_tets;
  return largest <= PACKET_BODY_MAX_TETS ||
         (w->solver.body_count >= 4 * units &&
          2 * units * largest <= (int64_t)piola_ocl(w)->tet_count);
}

/* The first arguments of every tet-solving kernel: x, d, the tet planes and the materials;
 * and the last: whether the pass is the inverted-tet pass. */
static piola_status set_tet_args(piola_world *w, int k) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_D]);
  SET_ARG(k, 2, b[BUF_TETS]);
  SET_ARG(k, 3, b[BUF_TET_M]);
  SET_ARG(k, 4, b[BUF_TET_VOLUME]);
  SET_ARG(k, 5, b[BUF_TET_LAMBDA]);
  SET_ARG(k, 6, b[BUF_TET_MATERIAL]);
  SET_ARG(k, 7, b[BUF_MATERIALS]);
  cl_int inverted_only = w->tets_inverted_only; /* the last argument, 13 */
  SET_ARG(k, 13, inverted_only);
  return PIOLA_OK;
}

/* SOLVE_TETS, the tet kind: the colors (one launch per iteration with a work-group per body, or
 * one launch per color), then the Jacobi tail (two launches). */
static piola_status solve_tets(piola_world *w, double h, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int stride = cl->tet_count;
  cl_float inv_h2 = (cl_float)(1.0 / (h * h));
  /* The inverted-tet pass sweeps the colors (and the tail) PIOLA_INVERTED_PASSES times: a sweep
   * after one that did no work changes nothing, so this computes what the CPU reference's
   * sweeps, which end there, compute. The per-body packet kernel repeats its sweep itself and
   * ends early, where no Jacobi tail has to come between the sweeps. */
  const int sweeps = w->tets_inverted_only ? PIOLA_INVERTED_PASSES : 1;
  if (cl->lanes > 1 && w->solver.color_count > 0 && packets_per_body(w)) {
    const int kb = KERNEL_SOLVE_BODY_PACKETS;
    cl_int colors = w->solver.color_count;
    cl_int inside = w->solver.jacobi_count == 0 ? sweeps : 1;
    piola_status s = set_tet_args(w, kb);
    if (s != PIOLA_OK) {
      return s;
    }
    SET_ARG(kb, 8, b[BUF_BODY_COLOR]);
    SET_ARG(kb, 9, colors);
    SET_ARG(kb, 10, stride);
    SET_ARG(kb, 11, inv_h2);
    SET_ARG(kb, 12, b[BUF_SUPPORT]);
    SET_ARG(kb, 14, inside);
    for (int sweep = 0; sweep < sweeps / inside && s == PIOLA_OK; ++sweep) {
      s = piola_ocl_enqueue(w, kb, w->solver.body_count * PACKET_BODY_WORK_GROUP, stage);
      if (s == PIOLA_OK) {
        s = solve_jacobi_tail(w, h, stage);
      }
    }
    return s;
  }
  /* One tet per work-item, or a packet of cl->lanes tets (piola_packet.cl; same arguments). */
  const int k = cl->lanes > 1 ? KERNEL_SOLVE_PACKETS : KERNEL_SOLVE;
  piola_status s = set_tet_args(w, k);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(k, 10, stride);
  SET_ARG(k, 11, inv_h2);
  SET_ARG(k, 12, b[BUF_SUPPORT]);
  for (int sweep = 0; sweep < sweeps && s == PIOLA_OK; ++sweep) {
    for (int32_t c = 0; c < w->solver.color_count && s == PIOLA_OK; ++c) {
      cl_int first = w->solver.color_first[c], count = w->solver.color_size[c];
      SET_ARG(k, 8, first);
      SET_ARG(k, 9, count);
      s = piola_ocl_enqueue(w, k, (count + cl->lanes - 1) / cl->lanes, stage);
    }
    if (s == PIOLA_OK) {
      s = solve_jacobi_tail(w, h, stage);
    }
  }
  return s;
}

/* SOLVE_TETS: the Jacobi tail, if any (after the colors). */
static piola_status solve_jacobi_tail(piola_world *w, double h, piola_stage stage) {
  if (w->solver.jacobi_count == 0) {
    return PIOLA_OK;
  }
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int stride = cl->tet_count;
  cl_float inv_h2 = (cl_float)(1.0 / (h * h));
  cl_int jfirst = w->solver.jacobi_first, jcount = w->solver.jacobi_count,
         nj = w->solver.jacobi_vertex_count;
  cl_float omega = w->def.jacobi_omega;
  piola_status s = set_tet_args(w, KERNEL_SOLVE_JACOBI);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_SOLVE_JACOBI, 8, jfirst);
  SET_ARG(KERNEL_SOLVE_JACOBI, 9, jcount);
  SET_ARG(KERNEL_SOLVE_JACOBI, 10, stride);
  SET_ARG(KERNEL_SOLVE_JACOBI, 11, inv_h2);
  SET_ARG(KERNEL_SOLVE_JACOBI, 12, b[BUF_JACOBI_DELTA]);
  s = piola_ocl_enqueue(w, KERNEL_SOLVE_JACOBI, jcount, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_APPLY_JACOBI, 0, b[BUF_D]);
  SET_ARG(KERNEL_APPLY_JACOBI, 1, b[BUF_JACOBI_VERTICES]);
  SET_ARG(KERNEL_APPLY_JACOBI, 2, b[BUF_JACOBI_START]);
  SET_ARG(KERNEL_APPLY_JACOBI, 3, b[BUF_JACOBI_INCIDENCE]);
  SET_ARG(KERNEL_APPLY_JACOBI, 4, b[BUF_JACOBI_DELTA]);
  SET_ARG(KERNEL_APPLY_JACOBI, 5, omega);
  SET_ARG(KERNEL_APPLY_JACOBI, 6, nj);
  return piola_ocl_enqueue(w, KERNEL_APPLY_JACOBI, nj, stage);
}

/* SOLVE_TETS, the cloth kinds, color by color. A color's triangles and stencils share no vertex
 * (one coloring across the kinds), so without profiling a color is one launch of both kinds
 * (piola_solve_cloth_color: its triangles, then its stencils, as work-items): 27 launches per
 * iteration on the cloth scene instead of 50. With def.profile a color is one launch per kind
 * (triangles, then stencils), so that their device times stay apart as PIOLA_STAGE_SOLVE_CLOTH
 * and PIOLA_STAGE_SOLVE_BENDING; both ways compute the same, bitwise (the same per-item
 * functions, and no item's result depends on another's of its color). Empty ranges launch
 * nothing. */
static piola_status solve_cloth(piola_world *w, double h) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  const piola_solver_cloth *c = &w->cloth;
  if (c->color_count == 0) {
    return PIOLA_OK;
  }
  cl_float inv_h2 = (cl_float)(1.0 / (h * h));
  if (!w->def.profile) {
    const int k = KERNEL_CLOTH_COLOR;
    const int args[12] = {BUF_X,
                          BUF_D,
                          BUF_CLOTH_TRIS,
                          BUF_CLOTH_TRI_DM,
                          BUF_CLOTH_TRI_AREA,
                          BUF_CLOTH_TRI_LAMBDA,
                          BUF_CLOTH_BENDS,
                          BUF_CLOTH_BEND_K,
                          BUF_CLOTH_BEND_Q,
                          BUF_CLOTH_BEND_LAMBDA,
                          BUF_CLOTH_BEND_MATERIAL,
                          BUF_CLOTH_MATERIALS};
    for (cl_uint i = 0; i < 12; ++i) {
      SET_ARG(k, i, b[args[i]]);
    }
    SET_ARG(k, 16, inv_h2);
    for (int32_t color = 0; color < c->color_count; ++color) {
      cl_int tri_first = c->kind_first[PIOLA_KIND_TRIANGLE][color];
      cl_int tri_count = c->kind_size[PIOLA_KIND_TRIANGLE][color];
      cl_int bend_first = c->kind_first[PIOLA_KIND_BEND][color];
      cl_int bend_count = c->kind_size[PIOLA_KIND_BEND][color];
      SET_ARG(k, 12, tri_first);
      SET_ARG(k, 13, tri_count);
      SET_ARG(k, 14, bend_first);
      SET_ARG(k, 15, bend_count);
      piola_status s = piola_ocl_enqueue(w, k, tri_count + bend_count, PIOLA_STAGE_SOLVE_CLOTH);
      if (s != PIOLA_OK) {
        return s;
      }
    }
    return PIOLA_OK;
  }
  SET_ARG(KERNEL_CLOTH_TRIS, 0, b[BUF_X]);
  SET_ARG(KERNEL_CLOTH_TRIS, 1, b[BUF_D]);
  SET_ARG(KERNEL_CLOTH_TRIS, 2, b[BUF_CLOTH_TRIS]);
  SET_ARG(KERNEL_CLOTH_TRIS, 3, b[BUF_CLOTH_TRI_DM]);
  SET_ARG(KERNEL_CLOTH_TRIS, 4, b[BUF_CLOTH_TRI_AREA]);
  SET_ARG(KERNEL_CLOTH_TRIS, 5, b[BUF_CLOTH_TRI_LAMBDA]);
  SET_ARG(KERNEL_CLOTH_TRIS, 6, b[BUF_CLOTH_MATERIALS]);
  SET_ARG(KERNEL_CLOTH_TRIS, 9, inv_h2);
  SET_ARG(KERNEL_CLOTH_BENDS, 0, b[BUF_X]);
  SET_ARG(KERNEL_CLOTH_BENDS, 1, b[BUF_D]);
  SET_ARG(KERNEL_CLOTH_BENDS, 2, b[BUF_CLOTH_BENDS]);
  SET_ARG(KERNEL_CLOTH_BENDS, 3, b[BUF_CLOTH_BEND_K]);
  SET_ARG(KERNEL_CLOTH_BENDS, 4, b[BUF_CLOTH_BEND_Q]);
  SET_ARG(KERNEL_CLOTH_BENDS, 5, b[BUF_CLOTH_BEND_LAMBDA]);
  SET_ARG(KERNEL_CLOTH_BENDS, 6, b[BUF_CLOTH_BEND_MATERIAL]);
  SET_ARG(KERNEL_CLOTH_BENDS, 7, b[BUF_CLOTH_MATERIALS]);
  SET_ARG(KERNEL_CLOTH_BENDS, 10, inv_h2);
  for (int32_t color = 0; color < c->color_count; ++color) {
    cl_int first = c->kind_first[PIOLA_KIND_TRIANGLE][color];
    cl_int count = c->kind_size[PIOLA_KIND_TRIANGLE][color];
    SET_ARG(KERNEL_CLOTH_TRIS, 7, first);
    SET_ARG(KERNEL_CLOTH_TRIS, 8, count);
    piola_status s = piola_ocl_enqueue(w, KERNEL_CLOTH_TRIS, count, PIOLA_STAGE_SOLVE_CLOTH);
    if (s != PIOLA_OK) {
      return s;
    }
    first = c->kind_first[PIOLA_KIND_BEND][color];
    count = c->kind_size[PIOLA_KIND_BEND][color];
    SET_ARG(KERNEL_CLOTH_BENDS, 8, first);
    SET_ARG(KERNEL_CLOTH_BENDS, 9, count);
    s = piola_ocl_enqueue(w, KERNEL_CLOTH_BENDS, count, PIOLA_STAGE_SOLVE_BENDING);
    if (s != PIOLA_OK) {
      return s;
    }
  }
  return PIOLA_OK;
}

piola_status piola_opencl_stage(piola_world *w, piola_stage stage, double h) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int nv = cl->vertex_count;
  switch (stage) {
  case PIOLA_STAGE_PREDICT: {
    cl_float4 hg = gravity_impulse(w, h);
    cl_float hf = (cl_float)h;
    SET_ARG(KERNEL_PREDICT, 0, b[BUF_X]);
    SET_ARG(KERNEL_PREDICT, 1, b[BUF_V]);
    SET_ARG(KERNEL_PREDICT, 2, b[BUF_D]);
    cl_int has_forces = w->f != NULL && b[BUF_FORCES] != NULL;
    cl_mem forces = has_forces ? b[BUF_FORCES] : b[BUF_X];
    SET_ARG(KERNEL_PREDICT, 3, forces);
    SET_ARG(KERNEL_PREDICT, 4, has_forces);
    SET_ARG(KERNEL_PREDICT, 5, hg);
    SET_ARG(KERNEL_PREDICT, 6, hf);
    SET_ARG(KERNEL_PREDICT, 7, nv);
    SET_ARG(KERNEL_PREDICT, 8, b[BUF_D0]);
    SET_ARG(KERNEL_PREDICT, 9, b[BUF_SUPPORT]);
    return piola_ocl_enqueue(w, KERNEL_PREDICT, nv, stage);
  }
  case PIOLA_STAGE_RESET_MULTIPLIERS: {
    /* Every kind's multipliers: tets (2 each), cloth triangles and stencils (1 each). */
    const int lambda_buffers[3] = {BUF_TET_LAMBDA, BUF_CLOTH_TRI_LAMBDA, BUF_CLOTH_BEND_LAMBDA};
    const size_t lambda_bytes[3] = {8 * (size_t)cl->tet_count, 4 * (size_t)cl->cloth_tri_count,
                                    4 * (size_t)cl->cloth_bend_count};
    for (int k = 0; k < 3; ++k) {
      if (lambda_bytes[k] == 0) {
        continue;
      }
      cl_float zero = 0.0f;
      cl_event ev = NULL;
      CL_CHECK(piola_ocl_fill(cl->faults, cl->queue, b[lambda_buffers[k]], &zero, sizeof zero,
                              lambda_bytes[k], w->def.profile ? &ev : NULL));
      piola_ocl_release_event(cl->faults, ev); /* a fill is not a stage worth timing */
    }
    return PIOLA_OK;
  }
  case PIOLA_STAGE_ATTACHMENTS: {
    const piola_solver_attachments *a = &w->attach;
    cl_mem const *ab = (cl_mem const *)a->device;
    cl_int reset = w->iteration == 0, count = a->vertex_count;
    cl_float inv_h2 = (cl_float)(1.0 / (h * h));
    SET_ARG(KERNEL_ATTACHMENTS, 0, b[BUF_X]);
    SET_ARG(KERNEL_ATTACHMENTS, 1, b[BUF_D]);
    SET_ARG(KERNEL_ATTACHMENTS, 2, ab[0]);
    SET_ARG(KERNEL_ATTACHMENTS, 3, ab[1]);
    SET_ARG(KERNEL_ATTACHMENTS, 4, ab[2]);
    SET_ARG(KERNEL_ATTACHMENTS, 5, ab[3]);
    SET_ARG(KERNEL_ATTACHMENTS, 6, reset);
    SET_ARG(KERNEL_ATTACHMENTS, 7, inv_h2);
    SET_ARG(KERNEL_ATTACHMENTS, 8, count);
    return piola_ocl_enqueue(w, KERNEL_ATTACHMENTS, count, stage);
  }
  case PIOLA_STAGE_SOLVE_TETS: {
    piola_status s = solve_tets(w, h, stage);
    return s == PIOLA_OK && !w->tets_inverted_only ? solve_cloth(w, h) : s;
  }
  case PIOLA_STAGE_COLLIDE: {
    /* the analytic kinds' kernel unless a mesh or SDF collider is in the world */
    const int kc = w->shape_count > 0 ? KERNEL_COLLIDE_SHAPES : KERNEL_COLLIDE;
    cl_int nc = w->collider_count;
    SET_ARG(kc, 0, b[BUF_X]);
    SET_ARG(kc, 1, b[BUF_D]);
    SET_ARG(kc, 2, b[BUF_COLLIDERS]);
    SET_ARG(kc, 3, nc);
    SET_ARG(kc, 4, nv);
    cl_float t_end = (cl_float)w->collider_time, hf = (cl_float)h;
    SET_ARG(kc, 5, t_end);
    SET_ARG(kc, 6, hf);
    SET_ARG(kc, 7, b[BUF_SUPPORT]);
    SET_ARG(kc, 8, b[BUF_COLLIDER_IMPULSE]);
    SET_ARG(kc, 9, b[BUF_COLLIDER_SHAPES]);
    const cl_int mode = piola_collide_mode(w);
    SET_ARG(kc, 10, mode);
    return piola_ocl_enqueue(w, kc, nv, stage);
  }
  case PIOLA_STAGE_UPDATE_VELOCITIES: {
    cl_float inv_h = (cl_float)(1.0 / h);
    cl_float damp = (cl_float)piola_damping_factor(&w->def, h);
    SET_ARG(KERNEL_UPDATE, 0, b[BUF_X]);
    SET_ARG(KERNEL_UPDATE, 1, b[BUF_V]);
    SET_ARG(KERNEL_UPDATE, 2, b[BUF_D]);
    SET_ARG(KERNEL_UPDATE, 3, inv_h);
    SET_ARG(KERNEL_UPDATE, 4, damp);
    SET_ARG(KERNEL_UPDATE, 5, nv);
    return piola_ocl_enqueue(w, KERNEL_UPDATE, nv, stage);
  }
  case PIOLA_STAGE_PLASTICITY: {
    cl_int stride = cl->tet_count, pstride = cl->plastic_count, np = cl->plastic_count;
    cl_float hf = (cl_float)h;
    SET_ARG(KERNEL_PLASTICITY, 0, b[BUF_X]);
    SET_ARG(KERNEL_PLASTICITY, 1, b[BUF_TETS]);
    SET_ARG(KERNEL_PLASTICITY, 2, b[BUF_TET_M]);
    SET_ARG(KERNEL_PLASTICITY, 3, stride);
    SET_ARG(KERNEL_PLASTICITY, 4, b[BUF_TET_MATERIAL]);
    SET_ARG(KERNEL_PLASTICITY, 5, b[BUF_MATERIALS]);
    SET_ARG(KERNEL_PLASTICITY, 6, b[BUF_PLASTIC_TET]);
    SET_ARG(KERNEL_PLASTICITY, 7, b[BUF_PLASTIC_DM]);
    SET_ARG(KERNEL_PLASTICITY, 8, b[BUF_PLASTIC_STRAIN]);
    SET_ARG(KERNEL_PLASTICITY, 9, pstride);
    SET_ARG(KERNEL_PLASTICITY, 10, hf);
    SET_ARG(KERNEL_PLASTICITY, 11, np);
    return piola_ocl_enqueue(w, KERNEL_PLASTICITY, np, stage);
  }
  case PIOLA_STAGE_SOLVE_VERTICES:
    return piola_ocl_solve_vertices(w, h);
  case PIOLA_STAGE_SOLVE_GLOBAL: /* the multigrid scheme, on the host (opencl_newton.c) */
    return piola_ocl_solve_global(w, h);
  case PIOLA_STAGE_SOLVE_CLOTH: /* timing entries of SOLVE_TETS, not passes of their own */
  case PIOLA_STAGE_SOLVE_BENDING:
    return PIOLA_OK;
  case PIOLA_STAGE_BROAD_PHASE:
    return piola_ocl_broad_phase(w, stage);
  case PIOLA_STAGE_NARROW_PHASE:
    return piola_ocl_narrow_phase(w, stage);
  case PIOLA_STAGE_CONTACT:
    return piola_ocl_contact_solve(w, stage);
  case PIOLA_STAGE_COUNT:
    break;
  }
  return PIOLA_OK;
}

/* Bodies up to this many tets run under PIOLA_SCHEDULE_AUTO with one work-group each. */
#define PIOLA_BODY_SCHEDULE_MAX_TETS 65536

/* Local memory the per-body kernel takes: x and d (float4 each) of the largest body. */
static size_t body_local_bytes(const piola_world *w) {
  return (size_t)w->solver.max_body_vertices * 2 * sizeof(cl_float4);
}

bool piola_opencl_per_body(const piola_world *w) {
  const piola_schedule s = w->def.schedule;
  /* The per-body kernel holds a tet body's vertices in local memory: with a body too large for
   * the device's local memory every schedule runs per stage. Cloth bodies are not in the
   * per-body lists (their colors run per stage after the tets', see piola_world_step). */
  return w->solver.body_count > 0 && body_local_bytes(w) <= piola_ocl(w)->local_bytes &&
         (s == PIOLA_SCHEDULE_BODIES ||
          (s == PIOLA_SCHEDULE_AUTO && !w->def.profile && piola_ocl(w)->lanes == 1 &&
           w->solver.max_body_tets <= PIOLA_BODY_SCHEDULE_MAX_TETS));
}

piola_status piola_opencl_substep_bodies(piola_world *w, double h, piola_bodies_part part) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  const int k = KERNEL_SUBSTEP_BODIES;
  cl_int has_forces = w->f != NULL && b[BUF_FORCES] != NULL;
  cl_mem forces = has_forces ? b[BUF_FORCES] : b[BUF_X];
  cl_int ncol = w->collider_count, colors = w->solver.color_count;
  /* the inverted-tet pass: its sweeps at most (piola_substep_bodies) */
  cl_int iterations = part == PIOLA_BODIES_INVERTED ? PIOLA_INVERTED_PASSES : w->def.iterations;
  cl_int stride = cl->tet_count, jfirst = w->solver.jacobi_first;
  cl_float4 hg = gravity_impulse(w, h);
  cl_float hf = (cl_float)h, inv_h = (cl_float)(1.0 / h), inv_h2 = (cl_float)(1.0 / (h * h));
  cl_float damp = (cl_float)piola_damping_factor(&w->def, h), omega = w->def.jacobi_omega;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_V]);
  SET_ARG(k, 2, b[BUF_D]);
  SET_ARG(k, 3, forces);
  SET_ARG(k, 4, has_forces);
  SET_ARG(k, 5, b[BUF_TETS]);
  SET_ARG(k, 6, b[BUF_TET_M]);
  SET_ARG(k, 7, b[BUF_TET_VOLUME]);
  SET_ARG(k, 8, b[BUF_TET_LAMBDA]);
  SET_ARG(k, 9, b[BUF_TET_MATERIAL]);
  SET_ARG(k, 10, b[BUF_MATERIALS]);
  SET_ARG(k, 11, b[BUF_COLLIDERS]);
  SET_ARG(k, 12, ncol);
  SET_ARG(k, 13, b[BUF_BODY_VERTEX]);
  SET_ARG(k, 14, b[BUF_BODY_COLOR]);
  SET_ARG(k, 15, b[BUF_BODY_JACOBI]);
  SET_ARG(k, 16, b[BUF_JACOBI_VERTICES]);
  SET_ARG(k, 17, b[BUF_JACOBI_START]);
  SET_ARG(k, 18, b[BUF_JACOBI_INCIDENCE]);
  SET_ARG(k, 19, b[BUF_JACOBI_DELTA]);
  SET_ARG(k, 20, colors);
  SET_ARG(k, 21, iterations);
  SET_ARG(k, 22, stride);
  SET_ARG(k, 23, jfirst);
  SET_ARG(k, 24, hg);
  SET_ARG(k, 25, hf);
  SET_ARG(k, 26, inv_h);
  SET_ARG(k, 27, inv_h2);
  SET_ARG(k, 28, damp);
  SET_ARG(k, 29, omega);
  cl_int part_arg = (cl_int)part;
  SET_ARG(k, 30, part_arg);
  cl_float collider_t_end = (cl_float)w->collider_time;
  SET_ARG(k, 31, collider_t_end);
  CL_CHECK(piola_ocl_set_arg(cl->faults, cl->kernels[k], 32, body_local_bytes(w), NULL));
  cl_int on_chip_vertices = w->solver.max_body_vertices;
  SET_ARG(k, 33, on_chip_vertices);
  SET_ARG(k, 34, b[BUF_SUPPORT]);
  /* without colliders the kernel records no impulse: any buffer stands for the records */
  cl_mem impulse = b[BUF_COLLIDER_IMPULSE] != NULL ? b[BUF_COLLIDER_IMPULSE] : b[BUF_X];
  SET_ARG(k, 35, impulse);
  cl_int vertex_count = cl->vertex_count;
  SET_ARG(k, 36, vertex_count);
  SET_ARG(k, 37, b[BUF_COLLIDER_SHAPES]);
  SET_ARG(k, 38, b[BUF_D0]);
  /* One work-group per body. */
  size_t local = cl->wg, global = (size_t)w->solver.body_count * cl->wg;
  CL_CHECK(piola_ocl_launch(cl->faults, cl->queue, cl->kernels[k], &global, &local, NULL));
  /* An iteration goes on with the cloth's colors, as SOLVE_TETS does per stage (bodies share no
   * vertex: the same result as the tets and the cloth color by color). */
  return part == PIOLA_BODIES_ITERATION ? solve_cloth(w, h) : PIOLA_OK;
}

piola_status piola_opencl_end_step(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  CL_CHECK(piola_ocl_flush(cl->faults, cl->queue));
  if (!w->def.profile) {
    return PIOLA_OK;
  }
  /* Profiling: wait for the step and sum each stage's and each kernel's device time. */
  memset(cl->stage_ms, 0, sizeof cl->stage_ms);
  memset(cl->kernel_ms, 0, sizeof cl->kernel_ms);
  memset(cl->kernel_launches, 0, sizeof cl->kernel_launches);
  cl->stage_ms[PIOLA_STAGE_SOLVE_GLOBAL] = cl->global_ms; /* on the host (opencl_newton.c) */
  cl->global_ms = 0.0;
  piola_status s = PIOLA_OK;
  if (cl->event_count > 0) {
    cl_int e = piola_ocl_finish(cl->faults, cl->queue);
    if (e != CL_SUCCESS) {
      s = piola_ocl_wfail(w, e, "clFinish");
    }
  }
  for (int32_t i = 0; i < cl->event_count; ++i) {
    cl_ulong start = 0, end = 0;
    if (s == PIOLA_OK &&
        clGetEventProfilingInfo(cl->events[i].event, CL_PROFILING_COMMAND_START, sizeof start,
                                &start, NULL) == CL_SUCCESS &&
        clGetEventProfilingInfo(cl->events[i].event, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                NULL) == CL_SUCCESS &&
        end >= start) {
      cl->stage_ms[cl->events[i].stage] += (double)(end - start) * 1e-6;
      cl->kernel_ms[cl->events[i].kernel] += (double)(end - start) * 1e-6;
      cl->kernel_launches[cl->events[i].kernel]++;
    }
    piola_ocl_release_event(cl->faults, cl->events[i].event);
  }
  cl->event_count = 0;
  return s;
}

piola_status piola_opencl_finish(piola_world *w) {
  CL_CHECK(piola_ocl_finish(piola_ocl(w)->faults, piola_ocl(w)->queue));
  return PIOLA_OK;
}

/* ---- Collider impulses ------------------------------------------------------------- */

/* The sums of collider `collider`'s impulse records over the vertices in the last step
 * (piola_collider_impulse_sum, one work-group of the largest power of two within the work-group
 * size): out[0..2] the impulse times h (kg m), out[3..5] its moment (kg m^2). */
piola_status piola_opencl_collider_impulse(const piola_world *w, int32_t collider, double out[6]) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  memset(out, 0, 6 * sizeof *out);
  if (b[BUF_COLLIDER_IMPULSE] == NULL || b[BUF_COLLIDER_IMPULSE_SUM] == NULL ||
      cl->vertex_count <= 0 ||
      cl->buffer_bytes[BUF_COLLIDER_IMPULSE] <
          32 * (size_t)(collider + 1) * (size_t)cl->vertex_count) {
    return PIOLA_OK;
  }
  const int k = KERNEL_COLLIDER_IMPULSE_SUM;
  size_t local = 1;
  while (2 * local <= cl->wg) {
    local *= 2;
  }
  cl_int count = cl->vertex_count, c = collider;
  SET_ARG(k, 0, b[BUF_COLLIDER_IMPULSE]);
  SET_ARG(k, 1, count);
  SET_ARG(k, 2, c);
  SET_ARG(k, 3, b[BUF_COLLIDER_IMPULSE_SUM]);
  CL_CHECK(piola_ocl_set_arg(cl->faults, cl->kernels[k], 4, 2 * local * sizeof(cl_float4), NULL));
  size_t global = local;
  CL_CHECK(piola_ocl_launch(cl->faults, cl->queue, cl->kernels[k], &global, &local, NULL));
  cl_float4 sums[2];
  piola_status s = piola_ocl_read_buffer(w, BUF_COLLIDER_IMPULSE_SUM, 0, sizeof sums, sums);
  if (s == PIOLA_OK) {
    for (int j = 0; j < 3; ++j) {
      out[j] = sums[0].s[j];
      out[3 + j] = sums[1].s[j];
    }
  }
  return s;
}
