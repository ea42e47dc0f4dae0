/* Piola OpenCL backend: vertex block descent (vbd.c describes the method; kernels/piola_vbd.cl
 * the kernels). Per stage: at the first iteration of a substep one launch over every vertex
 * sets the inertia target and the initial guess, then each iteration is one launch per vertex
 * color (all bodies in it). On CPU devices (where the packet program is built) each color's
 * launch is preceded by one that evaluates the tets' parts of its vertices' blocks in SIMD lanes
 * (piola_vbd_tet_blocks, kernels/piola_packet.cl): a work-item per vertex runs its arithmetic on
 * scalars there, and its tets vary in number from vertex to vertex. The two launches of a color
 * are one dependent pass of the algorithm. The lists (vertices by color, each vertex's element
 * entries, the colors' tet entries) are uploaded with the rest of the state; the tet data is the
 * XPBD scheme's own buffers. With def.vbd_chebyshev_rho > 0 an iteration ends with one more
 * launch over every vertex (piola_vbd_accelerate), the Chebyshev pass of the reference's. The
 * substep's last iteration ends with the rigid fit of the free bodies, a work-group per body
 * (piola_vbd_fit_bodies). */
#include "opencl_internal.h"

#include <math.h>
#include <stdlib.h>

/* (body rank, entry, index in elements) by body rank, then entry. */
static int compare_entries(const void *a, const void *b) {
  const int32_t *x = a, *y = b;
  const int by_rank = (x[0] > y[0]) - (x[0] < y[0]);
  return by_rank != 0 ? by_rank : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Bodies of at most this many vertices run an iteration a work-group each under
 * PIOLA_SCHEDULE_AUTO (about 7 colors of a few hundred vertices for a work-group to walk). */
#define PIOLA_VBD_BODY_MAX_VERTICES 4096

/* Whether the iterations run per body (piola_vbd_bodies) with bodies of at most `largest`
 * vertices: PIOLA_SCHEDULE_BODIES, or AUTO where the tets are not packed into SIMD lanes (GPUs),
 * profiling is off and every body is small. */
static bool per_body_schedule(const piola_world *w, int32_t largest) {
  const piola_schedule s = w->def.schedule;
  return s == PIOLA_SCHEDULE_BODIES ||
         (s == PIOLA_SCHEDULE_AUTO && !w->def.profile && piola_ocl(w)->lanes == 1 &&
          largest <= PIOLA_VBD_BODY_MAX_VERTICES);
}

/* Whether this world's iterations run per body. */
static bool per_body(const piola_world *w) {
  const piola_opencl *cl = piola_ocl(w);
  return cl->vbd_body_count > 0 && per_body_schedule(w, cl->vbd_max_body_vertices);
}

/* The colors' tet entries, for piola_vbd_tet_blocks (CPU devices) and piola_vbd_bodies: each
 * color's by body (in the lists' order, so that a body's are one range) and within a body by tet
 * (so that the lanes read the tets' planes nearly in order), the place of every element entry's
 * tet among its color's (the slot of its block), each color's first entry, and the blocks buffer
 * for the largest color. */
static piola_status upload_tet_entries(piola_world *w, int32_t **body_base) {
  piola_opencl *cl = piola_ocl(w);
  const piola_solver_vbd *v = &w->vbd;
  const size_t ne = (size_t)(v->element_count > 0 ? v->element_count : 1),
               colors = (size_t)(v->color_count > 0 ? v->color_count : 1),
               nv = (size_t)(w->vertex_count > 0 ? w->vertex_count : 1);
  int32_t *triples = malloc(3 * sizeof(int32_t) * ne); /* (body rank, entry, index in elements) */
  int32_t *entries = malloc(sizeof(int32_t) * ne), *slot = calloc(ne, sizeof(int32_t));
  int32_t *first = malloc(sizeof(int32_t) * colors), *count = malloc(sizeof(int32_t) * colors);
  int32_t *rank = calloc(nv, sizeof(int32_t));
  piola_status s = PIOLA_OK;
  if (triples == NULL || entries == NULL || slot == NULL || first == NULL || count == NULL ||
      rank == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t ranks = 0, largest_body = 0;
  for (int32_t i = 0; i < w->body_ids.count && s == PIOLA_OK; ++i) {
    const piola_body *b = &w->bodies[i];
    if (piola_id_pool_alive(&w->body_ids, i) && b->vertex_colors != NULL) {
      for (int32_t k = 0; k < b->vertex_count; ++k) {
        rank[b->vertex_offset + k] = ranks;
      }
      ++ranks;
      largest_body = b->vertex_count > largest_body ? b->vertex_count : largest_body;
    }
  }
  int32_t at = 0, largest = 1;
  for (int32_t c = 0; c < v->color_count && s == PIOLA_OK; ++c) {
    first[c] = at;
    for (int32_t k = v->color_first[c]; k < v->color_first[c] + v->color_size[c]; ++k) {
      const int32_t i = v->vertices[k];
      for (int32_t j = v->element_start[i]; j < v->element_start[i + 1]; ++j) {
        if (PIOLA_VBD_KIND(v->elements[j]) == PIOLA_VBD_TET) {
          triples[3 * (size_t)at] = rank[i];
          triples[3 * (size_t)at + 1] = v->elements[j];
          triples[3 * (size_t)at + 2] = j;
          ++at;
        }
      }
    }
    count[c] = at - first[c];
    largest = count[c] > largest ? count[c] : largest;
    qsort(triples + 3 * (size_t)first[c], (size_t)count[c], 3 * sizeof(int32_t), compare_entries);
    for (int32_t k = 0; k < count[c]; ++k) {
      entries[first[c] + k] = triples[3 * (size_t)(first[c] + k) + 1];
      slot[triples[3 * (size_t)(first[c] + k) + 2]] = k;
    }
  }
  free(rank);
  /* The per-body schedule's slots: each body's blocks in a region of its own, as large as its
   * largest color's tet entries, since the bodies' work-groups walk their colors out of step. */
  int32_t *base = calloc((size_t)ranks + 1, sizeof(int32_t));
  int32_t *body_slot = calloc(ne, sizeof(int32_t));
  if (s == PIOLA_OK && (base == NULL || body_slot == NULL)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int pass = 0; pass < 2 && s == PIOLA_OK; ++pass) {
    for (int32_t c = 0; c < v->color_count; ++c) {
      for (int32_t k = 0, run = 0; k < count[c]; ++k) {
        const int32_t *e = triples + 3 * (size_t)(first[c] + k);
        run = k > 0 && e[-3] == e[0] ? run : k; /* the body's first entry of the color */
        if (pass == 0) {
          base[e[0] + 1] = k - run + 1 > base[e[0] + 1] ? k - run + 1 : base[e[0] + 1];
        } else {
          body_slot[e[2]] = base[e[0]] + (k - run);
        }
      }
    }
    for (int32_t r = 0; r < ranks && pass == 0; ++r) {
      base[r + 1] += base[r];
    }
  }
  const size_t entry_bytes = 4 * (size_t)(at > 0 ? at : 1);
  if (s == PIOLA_OK) {
    s = piola_ocl_ensure_buffer(w, BUF_VBD_TET_ENTRIES, entry_bytes, CL_MEM_READ_ONLY);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_ensure_buffer(w, BUF_VBD_BLOCK_SLOT, 4 * ne, CL_MEM_READ_ONLY);
  }
  /* the blocks of the color in flight where piola_vbd_tet_blocks runs (CPU devices) */
  if (s == PIOLA_OK && cl->kernels[KERNEL_VBD_TET_BLOCKS] != NULL) {
    s = piola_ocl_ensure_buffer(w, BUF_VBD_BLOCKS, 64 * (size_t)largest, CL_MEM_READ_WRITE);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_VBD_TET_ENTRIES, 0, entry_bytes, entries);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_VBD_BLOCK_SLOT, 0, 4 * ne, slot);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_ensure_buffer(w, BUF_VBD_BODY_SLOT, 4 * ne, CL_MEM_READ_ONLY);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_VBD_BODY_SLOT, 0, 4 * ne, body_slot);
  }
  /* the regions, where the iterations run per body */
  if (s == PIOLA_OK && ranks > 0 && per_body_schedule(w, largest_body)) {
    s = piola_ocl_ensure_buffer(w, BUF_VBD_BODY_BLOCKS,
                                64 * (size_t)(base[ranks] > 0 ? base[ranks] : 1),
                                CL_MEM_READ_WRITE);
  }
  free(body_slot);
  free(triples);
  free(entries);
  free(slot);
  if (s != PIOLA_OK) {
    free(first);
    free(count);
    free(base);
    return s;
  }
  *body_base = base;
  free(cl->vbd_tet_first);
  free(cl->vbd_tet_count);
  cl->vbd_tet_first = first;
  cl->vbd_tet_count = count;
  cl->vbd_body_count = ranks;
  cl->vbd_max_body_vertices = largest_body;
  return PIOLA_OK;
}

/* The per-body table of piola_vbd_bodies: per body with vertex colors (in slot order, the
 * lists' order, vbd.c), 2 + 2 colors pairs: (first vertex, vertex count); (the first slot of its
 * region of the blocks, from upload_tet_entries' body_base, 0); per color the body's range of the
 * color-ordered vertex list; per color its range of the tet entries. */
static piola_status upload_body_colors(piola_world *w, const int32_t *body_base) {
  piola_opencl *cl = piola_ocl(w);
  const piola_solver_vbd *v = &w->vbd;
  const int32_t colors = v->color_count, bodies = cl->vbd_body_count;
  const size_t row = 2 + 2 * (size_t)colors, pairs = (size_t)(bodies > 0 ? bodies : 1) * row;
  cl_int2 *table = calloc(pairs, sizeof *table);
  if (table == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* a color's bodies follow one another in slot order: each body's range starts where the one
   * before it in that color ends */
  int32_t b = 0;
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *body = &w->bodies[i];
    if (!piola_id_pool_alive(&w->body_ids, i) || body->vertex_colors == NULL) {
      continue;
    }
    cl_int2 *r = table + (size_t)b * row;
    r[0].s[0] = body->vertex_offset;
    r[0].s[1] = body->vertex_count;
    r[1].s[0] = body_base[b];
    for (int32_t k = 0; k < body->vertex_count; ++k) {
      const int32_t vertex = body->vertex_offset + k, c = body->vertex_colors[k];
      r[2 + c].s[1]++;
      for (int32_t j = v->element_start[vertex]; j < v->element_start[vertex + 1]; ++j) {
        r[2 + colors + c].s[1] += PIOLA_VBD_KIND(v->elements[j]) == PIOLA_VBD_TET;
      }
    }
    for (int32_t c = 0; c < colors; ++c) {
      const cl_int2 *before = b > 0 ? table + (size_t)(b - 1) * row : NULL;
      r[2 + c].s[0] = before != NULL ? before[2 + c].s[0] + before[2 + c].s[1] : v->color_first[c];
      r[2 + colors + c].s[0] = before != NULL
                                   ? before[2 + colors + c].s[0] + before[2 + colors + c].s[1]
                                   : cl->vbd_tet_first[c];
    }
    ++b;
  }
  piola_status s =
      piola_ocl_ensure_buffer(w, BUF_VBD_BODY_COLORS, sizeof *table * pairs, CL_MEM_READ_ONLY);
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_VBD_BODY_COLORS, 0, sizeof *table * pairs, table);
  }
  free(table);
  return s;
}

piola_status piola_ocl_upload_vbd(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  cl->vbd_have_last = false;
  if (w->def.iteration_scheme != PIOLA_SCHEME_VBD) {
    return PIOLA_OK;
  }
  const piola_solver_vbd *v = &w->vbd;
  const size_t nv = (size_t)w->vertex_count;
  const struct {
    int b;
    size_t bytes;
  } sizes[] = {{BUF_VBD_VERTICES, 4 * (size_t)v->vertex_count},
               {BUF_VBD_START, 4 * (nv + 1)},
               {BUF_VBD_ELEMENTS, 4 * (size_t)v->element_count},
               {BUF_VBD_V_LAST, 16 * nv},
               {BUF_VBD_CHEBYSHEV0, 16 * nv},
               {BUF_VBD_CHEBYSHEV1, 16 * nv}};
  const size_t count = sizeof sizes / sizeof sizes[0] - (w->def.vbd_chebyshev_rho > 0.0f ? 0 : 2);
  piola_status s = PIOLA_OK;
  for (size_t i = 0; i < count && s == PIOLA_OK; ++i) {
    s = piola_ocl_ensure_buffer(w, sizes[i].b, sizes[i].bytes, CL_MEM_READ_WRITE);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_VBD_VERTICES, 0, sizes[0].bytes, v->vertices);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_VBD_START, 0, sizes[1].bytes, v->element_start);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_VBD_ELEMENTS, 0, sizes[2].bytes, v->elements);
  }
  /* the bodies' ranges for the rigid fit (piola_solver_vbd.body_range, the lists' order) */
  const size_t fit_bytes = 16 * (size_t)(v->body_count > 0 ? v->body_count : 1);
  if (s == PIOLA_OK) {
    s = piola_ocl_ensure_buffer(w, BUF_VBD_BODY_FIT, fit_bytes, CL_MEM_READ_ONLY);
  }
  if (s == PIOLA_OK && v->body_count > 0) {
    s = piola_ocl_write_buffer(w, BUF_VBD_BODY_FIT, 0, 16 * (size_t)v->body_count, v->body_range);
  }
  int32_t *body_base = NULL;
  if (s == PIOLA_OK) {
    s = upload_tet_entries(w, &body_base);
  }
  if (s == PIOLA_OK) {
    s = upload_body_colors(w, body_base);
  }
  free(body_base);
  return s;
}

/* The start of a substep's iterations (piola_vbd_begin): the initial guess; the inertia target
 * is PREDICT's BUF_D0. */
static piola_status begin_substep(piola_world *w, double h) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  const int k = KERNEL_VBD_BEGIN;
  cl_int has_forces = w->f != NULL && b[BUF_FORCES] != NULL;
  cl_mem forces = has_forces ? b[BUF_FORCES] : b[BUF_X];
  cl_float4 g = {{w->def.gravity[0], w->def.gravity[1], w->def.gravity[2], 0.0f}};
  cl_float hf = (cl_float)h;
  cl_int have_last = cl->vbd_have_last, adaptive = w->vbd.adaptive_init, nv = cl->vertex_count;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_V]);
  SET_ARG(k, 2, b[BUF_D]);
  SET_ARG(k, 3, b[BUF_VBD_V_LAST]);
  SET_ARG(k, 4, forces);
  SET_ARG(k, 5, has_forces);
  SET_ARG(k, 6, g);
  SET_ARG(k, 7, hf);
  SET_ARG(k, 8, have_last);
  SET_ARG(k, 9, adaptive);
  SET_ARG(k, 10, nv);
  piola_status s = piola_ocl_enqueue(w, k, nv, PIOLA_STAGE_SOLVE_VERTICES);
  if (s == PIOLA_OK) {
    cl->vbd_have_last = true;
  }
  return s;
}

/* The Chebyshev pass after the iteration's colors (piola_vbd_accelerate; vbd.c's accelerate):
 * omega from the host in double, as the reference's. */
static piola_status accelerate(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  bool blend, keep;
  int parity;
  if (!piola_vbd_chebyshev_next(w, &blend, &keep, &parity)) {
    return PIOLA_OK;
  }
  const int k = KERNEL_VBD_ACCELERATE;
  cl_float omega = (cl_float)w->vbd.chebyshev_omega;
  cl_int blend_arg = blend, keep_arg = keep, nv = cl->vertex_count;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_D]);
  SET_ARG(k, 2, b[BUF_VBD_CHEBYSHEV0 + parity]);
  SET_ARG(k, 3, omega);
  SET_ARG(k, 4, blend_arg);
  SET_ARG(k, 5, keep_arg);
  SET_ARG(k, 6, nv);
  return piola_ocl_enqueue(w, k, nv, PIOLA_STAGE_SOLVE_VERTICES);
}

/* The rigid fit of the free bodies (piola_vbd_fit_bodies), a work-group per body, after the
 * substep's last iteration (piola_vbd_fits_free_bodies). */
static piola_status fit_free_bodies(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  const int k = KERNEL_VBD_RIGID_FIT;
  const piola_solver_attachments *a = &w->attach;
  cl_int attached = a->count > 0 ? a->vertex_count : 0;
  cl_mem attach_vertex = attached > 0 ? (cl_mem)a->device[1] : b[BUF_VBD_START];
  cl_int contacts = piola_contacts_active(w) && cl->sv_count > 0;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_D]);
  SET_ARG(k, 2, b[BUF_D0]);
  SET_ARG(k, 3, b[BUF_SUPPORT]);
  SET_ARG(k, 4, b[BUF_VBD_BODY_FIT]);
  SET_ARG(k, 5, attach_vertex);
  SET_ARG(k, 6, attached);
  cl_mem count = contacts ? b[BUF_CONTACT_COUNT] : b[BUF_VBD_START];
  cl_mem corner_start = contacts ? b[BUF_CORNER_START] : b[BUF_VBD_START];
  SET_ARG(k, 7, count);
  SET_ARG(k, 8, corner_start);
  SET_ARG(k, 9, contacts);
  return piola_ocl_enqueue(w, k, w->vbd.body_count * (int32_t)cl->wg, PIOLA_STAGE_SOLVE_VERTICES);
}

/* Arguments 0 to 24 of piola_vbd_color and piola_vbd_bodies (PIOLA_VBD_STEP_PARAMS). */
static piola_status set_step_args(piola_world *w, int k) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int stride = cl->tet_count;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_D]);
  SET_ARG(k, 2, b[BUF_D0]);
  SET_ARG(k, 3, b[BUF_TETS]);
  SET_ARG(k, 4, b[BUF_TET_M]);
  SET_ARG(k, 5, b[BUF_TET_VOLUME]);
  SET_ARG(k, 6, b[BUF_TET_MATERIAL]);
  SET_ARG(k, 7, b[BUF_MATERIALS]);
  SET_ARG(k, 8, stride);
  SET_ARG(k, 9, b[BUF_VBD_VERTICES]);
  SET_ARG(k, 10, b[BUF_VBD_START]);
  SET_ARG(k, 11, b[BUF_VBD_ELEMENTS]);
  SET_ARG(k, 12, b[BUF_SUPPORT]);
  SET_ARG(k, 13, b[BUF_CLOTH_TRIS]);
  SET_ARG(k, 14, b[BUF_CLOTH_TRI_DM]);
  SET_ARG(k, 15, b[BUF_CLOTH_TRI_AREA]);
  SET_ARG(k, 16, b[BUF_CLOTH_BENDS]);
  SET_ARG(k, 17, b[BUF_CLOTH_BEND_K]);
  SET_ARG(k, 18, b[BUF_CLOTH_BEND_Q]);
  SET_ARG(k, 19, b[BUF_CLOTH_BEND_MATERIAL]);
  SET_ARG(k, 20, b[BUF_CLOTH_MATERIALS]);
  /* the attachments' buffers (opencl_extras.c), or any buffer where there are none */
  const piola_solver_attachments *a = &w->attach;
  cl_int attached = a->count > 0 ? a->vertex_count : 0;
  cl_mem start = attached > 0 ? (cl_mem)a->device[0] : b[BUF_VBD_START];
  cl_mem vertex = attached > 0 ? (cl_mem)a->device[1] : b[BUF_VBD_START];
  cl_mem targets = attached > 0 ? (cl_mem)a->device[2] : b[BUF_D0];
  SET_ARG(k, 21, start);
  SET_ARG(k, 22, vertex);
  SET_ARG(k, 23, targets);
  SET_ARG(k, 24, attached);
  return PIOLA_OK;
}

/* One iteration per body (piola_vbd_bodies): one launch, a work-group per body, the Chebyshev
 * pass folded in. */
static piola_status solve_bodies(piola_world *w, double h) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  const int k = KERNEL_VBD_BODIES;
  piola_status s = set_step_args(w, k);
  if (s != PIOLA_OK) {
    return s;
  }
  bool blend = false, keep = false;
  int parity = 0;
  cl_int accelerate = piola_vbd_chebyshev_next(w, &blend, &keep, &parity);
  cl_int colors = w->vbd.color_count, blend_arg = blend, keep_arg = keep;
  cl_float inv_h2 = (cl_float)(1.0 / (h * h)), inv_h = (cl_float)(1.0 / h);
  cl_float omega = (cl_float)w->vbd.chebyshev_omega;
  cl_mem older = accelerate ? b[BUF_VBD_CHEBYSHEV0 + parity] : b[BUF_D0];
  SET_ARG(k, 25, b[BUF_VBD_BODY_COLORS]);
  SET_ARG(k, 26, colors);
  SET_ARG(k, 27, inv_h2);
  SET_ARG(k, 28, inv_h);
  SET_ARG(k, 29, accelerate);
  SET_ARG(k, 30, older);
  SET_ARG(k, 31, omega);
  SET_ARG(k, 32, blend_arg);
  SET_ARG(k, 33, keep_arg);
  SET_ARG(k, 34, b[BUF_VBD_TET_ENTRIES]);
  SET_ARG(k, 35, b[BUF_VBD_BODY_SLOT]);
  SET_ARG(k, 36, b[BUF_VBD_BODY_BLOCKS]);
  return piola_ocl_enqueue(w, k, cl->vbd_body_count * (int32_t)cl->wg, PIOLA_STAGE_SOLVE_VERTICES);
}

piola_status piola_ocl_solve_vertices(piola_world *w, double h) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  piola_status s = PIOLA_OK;
  if (w->iteration == 0) {
    s = begin_substep(w, h);
  }
  if (s == PIOLA_OK && per_body(w)) {
    s = solve_bodies(w, h);
    return s == PIOLA_OK && piola_vbd_fits_free_bodies(w) ? fit_free_bodies(w) : s;
  }
  const int k = KERNEL_VBD_COLOR;
  cl_int stride = cl->tet_count;
  cl_float inv_h2 = (cl_float)(1.0 / (h * h)), inv_h = (cl_float)(1.0 / h);
  /* CPU devices: the tets' parts of each color's blocks evaluated in SIMD lanes first */
  cl_int blocked = cl->kernels[KERNEL_VBD_TET_BLOCKS] != NULL;
  if (s == PIOLA_OK) {
    s = set_step_args(w, k);
  }
  if (s == PIOLA_OK) {
    SET_ARG(k, 27, inv_h2);
    cl_mem blocks = blocked ? b[BUF_VBD_BLOCKS] : b[BUF_D0];
    cl_mem block_slot = blocked ? b[BUF_VBD_BLOCK_SLOT] : b[BUF_VBD_START];
    SET_ARG(k, 28, blocks);
    SET_ARG(k, 29, block_slot);
    SET_ARG(k, 30, blocked);
    SET_ARG(k, 31, inv_h);
  }
  const int kb = KERNEL_VBD_TET_BLOCKS;
  if (s == PIOLA_OK && blocked) {
    SET_ARG(kb, 0, b[BUF_X]);
    SET_ARG(kb, 1, b[BUF_D]);
    SET_ARG(kb, 2, b[BUF_TETS]);
    SET_ARG(kb, 3, b[BUF_TET_M]);
    SET_ARG(kb, 4, b[BUF_TET_VOLUME]);
    SET_ARG(kb, 5, b[BUF_TET_MATERIAL]);
    SET_ARG(kb, 6, b[BUF_MATERIALS]);
    SET_ARG(kb, 7, stride);
    SET_ARG(kb, 8, b[BUF_VBD_TET_ENTRIES]);
    SET_ARG(kb, 11, b[BUF_VBD_BLOCKS]);
    SET_ARG(kb, 12, inv_h);
  }
  for (int32_t c = 0; c < w->vbd.color_count && s == PIOLA_OK; ++c) {
    if (blocked && cl->vbd_tet_count[c] > 0) {
      cl_int first = cl->vbd_tet_first[c], count = cl->vbd_tet_count[c];
      SET_ARG(kb, 9, first);
      SET_ARG(kb, 10, count);
      s = piola_ocl_enqueue(w, kb, (count + cl->lanes - 1) / cl->lanes, PIOLA_STAGE_SOLVE_VERTICES);
    }
    cl_int first = w->vbd.color_first[c], count = w->vbd.color_size[c];
    SET_ARG(k, 25, first);
    SET_ARG(k, 26, count);
    if (s == PIOLA_OK) {
      s = piola_ocl_enqueue(w, k, count, PIOLA_STAGE_SOLVE_VERTICES);
    }
  }
  if (s == PIOLA_OK) {
    s = accelerate(w);
  }
  return s == PIOLA_OK && piola_vbd_fits_free_bodies(w) ? fit_free_bodies(w) : s;
}
