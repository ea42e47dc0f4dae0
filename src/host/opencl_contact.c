/* Piola OpenCL contact stages: the broad phase (boxes, the grid of triangle clusters as hash
 * buckets by a counting sort), the narrow phase (each surface vertex's contacts, their corner
 * lists) and the contact solve (kernels/piola_contact.cl). */
#include "opencl_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exclusive scan of the n ints of buffer `in` into buffer `out` (n + 1 entries: out[n] is the
 * total), in three launches (piola_contact.cl). */
static piola_status scan(piola_world *w, int in, int out, cl_int n, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int blocks = (cl_int)(((size_t)n + cl->wg * SCAN_ITEMS - 1) / (cl->wg * SCAN_ITEMS));
  SET_ARG(KERNEL_SCAN_BLOCKS, 0, b[in]);
  SET_ARG(KERNEL_SCAN_BLOCKS, 1, b[out]);
  SET_ARG(KERNEL_SCAN_BLOCKS, 2, b[BUF_SCAN_TOTALS]);
  SET_ARG(KERNEL_SCAN_BLOCKS, 3, n);
  piola_status s =
      piola_ocl_enqueue(w, KERNEL_SCAN_BLOCKS, (int32_t)((size_t)blocks * cl->wg), stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_SCAN_TOTALS, 0, b[BUF_SCAN_TOTALS]);
  SET_ARG(KERNEL_SCAN_TOTALS, 1, blocks);
  SET_ARG(KERNEL_SCAN_TOTALS, 2, b[out]);
  SET_ARG(KERNEL_SCAN_TOTALS, 3, n);
  s = piola_ocl_enqueue(w, KERNEL_SCAN_TOTALS, (int32_t)cl->wg, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_SCAN_ADD, 0, b[out]);
  SET_ARG(KERNEL_SCAN_ADD, 1, b[BUF_SCAN_TOTALS]);
  SET_ARG(KERNEL_SCAN_ADD, 2, n);
  return piola_ocl_enqueue(w, KERNEL_SCAN_ADD, n, stage);
}

/* BROAD_PHASE: boxes, the cell size, and the clusters sorted into the hash buckets. */
piola_status piola_ocl_broad_phase(piola_world *w, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int ncl = cl->cluster_count, nsv = cl->sv_count, mask = w->contacts.bucket_mask;
  cl_int buckets = mask + 1;
  cl_float thickness = w->def.contact_thickness;
  const size_t boxes = (size_t)(ncl > nsv ? ncl : nsv);
  cl_int boxers = (cl_int)piola_ocl_stride_items(cl, boxes),
         partials = (cl_int)piola_ocl_box_partials(cl, boxes),
         group_maxima = cl->cpu_device ? 0 : 1;
  SET_ARG(KERNEL_CONTACT_VERTICES, 0, b[BUF_X]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 1, b[BUF_D]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 2, b[BUF_SV_VERTEX]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 3, thickness);
  SET_ARG(KERNEL_CONTACT_VERTICES, 4, nsv);
  SET_ARG(KERNEL_CONTACT_VERTICES, 5, group_maxima);
  SET_ARG(KERNEL_CONTACT_VERTICES, 6, b[BUF_SV_X]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 7, b[BUF_SV_P]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 8, b[BUF_PARTIAL]);
  SET_ARG(KERNEL_CONTACT_BOXES, 0, b[BUF_SV_X]);
  SET_ARG(KERNEL_CONTACT_BOXES, 1, b[BUF_SV_P]);
  SET_ARG(KERNEL_CONTACT_BOXES, 2, b[BUF_TRIANGLES]);
  SET_ARG(KERNEL_CONTACT_BOXES, 3, b[BUF_CLUSTER_FIRST]);
  SET_ARG(KERNEL_CONTACT_BOXES, 4, thickness);
  SET_ARG(KERNEL_CONTACT_BOXES, 5, ncl);
  SET_ARG(KERNEL_CONTACT_BOXES, 6, group_maxima);
  SET_ARG(KERNEL_CONTACT_BOXES, 7, b[BUF_TRI_BOX]);
  SET_ARG(KERNEL_CONTACT_BOXES, 8, b[BUF_CLUSTER_BOX]);
  SET_ARG(KERNEL_CONTACT_BOXES, 9, b[BUF_PARTIAL]);
  /* Both over the same work-items, so that each writes its half of the same partial maxima. */
  piola_status s = piola_ocl_enqueue(w, KERNEL_CONTACT_VERTICES, boxers, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  s = piola_ocl_enqueue(w, KERNEL_CONTACT_BOXES, boxers, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_CONTACT_GRID, 0, b[BUF_PARTIAL]);
  SET_ARG(KERNEL_CONTACT_GRID, 1, partials);
  SET_ARG(KERNEL_CONTACT_GRID, 2, thickness);
  SET_ARG(KERNEL_CONTACT_GRID, 3, b[BUF_GRID]);
  s = piola_ocl_enqueue(w, KERNEL_CONTACT_GRID, (int32_t)cl->wg, stage);
  if (s == PIOLA_OK) {
    s = piola_ocl_zero_buffer(w, BUF_BUCKET_COUNT, 4 * (size_t)buckets);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  /* Count the entries per bucket, scan, enter them (the counts become the cursors). */
  for (cl_int pass = 0; pass < 2 && s == PIOLA_OK; ++pass) {
    SET_ARG(KERNEL_CONTACT_ENTER, 0, b[BUF_CLUSTER_BOX]);
    SET_ARG(KERNEL_CONTACT_ENTER, 1, b[BUF_GRID]);
    SET_ARG(KERNEL_CONTACT_ENTER, 2, mask);
    SET_ARG(KERNEL_CONTACT_ENTER, 3, ncl);
    SET_ARG(KERNEL_CONTACT_ENTER, 4, pass);
    SET_ARG(KERNEL_CONTACT_ENTER, 5, b[BUF_BUCKET_START]);
    SET_ARG(KERNEL_CONTACT_ENTER, 6, b[BUF_BUCKET_COUNT]);
    SET_ARG(KERNEL_CONTACT_ENTER, 7, b[BUF_BUCKET_CLUSTERS]);
    s = piola_ocl_enqueue(w, KERNEL_CONTACT_ENTER, ncl, stage);
    if (s == PIOLA_OK && pass == 0) {
      s = scan(w, BUF_BUCKET_COUNT, BUF_BUCKET_START, buckets, stage);
    }
    if (s == PIOLA_OK && pass == 0) {
      s = piola_ocl_zero_buffer(w, BUF_BUCKET_COUNT, 4 * (size_t)buckets);
    }
  }
  return s;
}

/* NARROW_PHASE, edges (after the vertices' kernel, before the scan of the corner counts): each
 * cluster's list of the clusters its edges test, then each surface edge's contacts, their members
 * counted, the edges with contacts listed. */
static piola_status edge_narrow_phase(piola_world *w, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int ne = cl->edge_count, ncl = cl->cluster_count, mask = w->contacts.bucket_mask;
  cl_float thickness = w->def.contact_thickness;
  const int pairs = KERNEL_EDGE_CLUSTER_PAIRS;
  SET_ARG(pairs, 0, b[BUF_CLUSTER_BOX]);
  SET_ARG(pairs, 1, b[BUF_TRIANGLES]);
  SET_ARG(pairs, 2, b[BUF_BODY_FILTER]);
  SET_ARG(pairs, 3, b[BUF_GRID]);
  SET_ARG(pairs, 4, b[BUF_BUCKET_START]);
  SET_ARG(pairs, 5, b[BUF_BUCKET_CLUSTERS]);
  SET_ARG(pairs, 6, mask);
  SET_ARG(pairs, 7, ncl);
  SET_ARG(pairs, 8, b[BUF_CLUSTER_EDGE_MAX]);
  SET_ARG(pairs, 9, b[BUF_CLUSTER_NEAR]);
  SET_ARG(pairs, 10, b[BUF_CLUSTER_NEAR_MASK]);
  SET_ARG(pairs, 11, b[BUF_CLUSTER_PAIR_COUNT]);
  SET_ARG(pairs, 12, b[BUF_CLUSTER_PAIRS]);
  SET_ARG(pairs, 13, b[BUF_TRI_EDGES]);
  SET_ARG(pairs, 14, b[BUF_EDGES]);
  SET_ARG(pairs, 15, b[BUF_EDGE_WING]);
  SET_ARG(pairs, 16, b[BUF_SV_X]);
  SET_ARG(pairs, 17, b[BUF_SV_P]);
  SET_ARG(pairs, 18, b[BUF_EDGE_CONVEX]);
  piola_status s = piola_ocl_enqueue(w, pairs, ncl, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  const int k = KERNEL_EDGE_CONTACT_NARROW;
  SET_ARG(k, 0, b[BUF_SV_X]);
  SET_ARG(k, 1, b[BUF_SV_P]);
  SET_ARG(k, 2, b[BUF_SV_REST]);
  SET_ARG(k, 3, b[BUF_EDGES]);
  SET_ARG(k, 4, b[BUF_TRI_EDGES]);
  SET_ARG(k, 5, b[BUF_SV_VERTEX]);
  SET_ARG(k, 6, b[BUF_TURNED]);
  SET_ARG(k, 7, b[BUF_TRI_BOX]);
  SET_ARG(k, 8, b[BUF_CLUSTER_BOX]);
  SET_ARG(k, 9, b[BUF_BODY_FILTER]);
  SET_ARG(k, 10, b[BUF_GRID]);
  SET_ARG(k, 11, b[BUF_BUCKET_START]);
  SET_ARG(k, 12, b[BUF_BUCKET_CLUSTERS]);
  SET_ARG(k, 13, mask);
  SET_ARG(k, 14, thickness);
  SET_ARG(k, 15, ne);
  SET_ARG(k, 16, b[BUF_EDGE_CONTACT_COUNT]);
  SET_ARG(k, 17, b[BUF_EDGE_CONTACT_ENTRY]);
  SET_ARG(k, 18, b[BUF_COUNTERS]);
  SET_ARG(k, 19, b[BUF_CORNER_COUNT]);
  SET_ARG(k, 20, b[BUF_EDGE_ACTIVE]);
  SET_ARG(k, 21, b[BUF_SV_NEAR]);
  SET_ARG(k, 22, b[BUF_SV_NEAR_MASK]);
  SET_ARG(k, 23, b[BUF_CLUSTER_EDGE_MAX]);
  SET_ARG(k, 24, b[BUF_EDGE_CLUSTER]);
  SET_ARG(k, 25, b[BUF_CLUSTER_PAIR_COUNT]);
  SET_ARG(k, 26, b[BUF_CLUSTER_PAIRS]);
  SET_ARG(k, 27, b[BUF_EDGE_CONVEX]);
  return piola_ocl_enqueue(w, k, ne, stage);
}

/* NARROW_PHASE, edges (after the vertices' corner entries, before the sort): the listed edges'
 * contact entries into their members' lists. */
static piola_status edge_corners(piola_world *w, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int base = piola_edge_delta_base(&w->contacts);
  cl_int items = (cl_int)piola_ocl_stride_items(cl, (size_t)cl->edge_count);
  const int k = KERNEL_EDGE_CONTACT_CORNERS;
  SET_ARG(k, 0, b[BUF_EDGE_CONTACT_COUNT]);
  SET_ARG(k, 1, b[BUF_EDGE_CONTACT_ENTRY]);
  SET_ARG(k, 2, b[BUF_EDGES]);
  SET_ARG(k, 3, b[BUF_CORNER_START]);
  SET_ARG(k, 4, b[BUF_CORNER_COUNT]);
  SET_ARG(k, 5, b[BUF_CORNER_ENTRY]);
  SET_ARG(k, 6, base);
  SET_ARG(k, 7, b[BUF_EDGE_ACTIVE]);
  SET_ARG(k, 8, b[BUF_COUNTERS]);
  return piola_ocl_enqueue(w, k, items, stage);
}

/* CONTACT, edges: one pass (measuring or projecting) of the listed edges' contacts into their
 * slots, between the vertices' pass and the gather. */
static piola_status edge_solve(piola_world *w, cl_int measure, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int base = piola_edge_delta_base(&w->contacts);
  cl_int items = (cl_int)piola_ocl_stride_items(cl, (size_t)cl->edge_count);
  cl_float thickness = w->def.contact_thickness, friction = w->def.contact_friction;
  const int k = KERNEL_EDGE_CONTACT_SOLVE;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_D]);
  SET_ARG(k, 2, b[BUF_SV_VERTEX]);
  SET_ARG(k, 3, b[BUF_EDGES]);
  SET_ARG(k, 4, b[BUF_EDGE_CONTACT_COUNT]);
  SET_ARG(k, 5, b[BUF_EDGE_CONTACT_ENTRY]);
  SET_ARG(k, 6, b[BUF_CONTACT_SPLIT]);
  SET_ARG(k, 7, measure);
  SET_ARG(k, 8, thickness);
  SET_ARG(k, 9, friction);
  SET_ARG(k, 10, b[BUF_CONTACT_DELTA]);
  SET_ARG(k, 11, base);
  SET_ARG(k, 12, b[BUF_EDGE_ACTIVE]);
  SET_ARG(k, 13, b[BUF_COUNTERS]);
  return piola_ocl_enqueue(w, k, items, stage);
}

/* NARROW_PHASE: each surface vertex's contacts, and the sorted lists of corner entries. */
piola_status piola_ocl_narrow_phase(piola_world *w, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  cl_int nsv = cl->sv_count, mask = w->contacts.bucket_mask;
  cl_float thickness = w->def.contact_thickness;
  /* This substep's lists become the previous ones (contacts persist while they last). */
  for (int i = 0; i < 2; ++i) {
    int cur = i == 0 ? BUF_CONTACT_COUNT : BUF_CONTACT_TRI;
    int prev = i == 0 ? BUF_PREVIOUS_COUNT : BUF_PREVIOUS_TRI;
    cl_mem m = b[cur];
    size_t bytes = cl->buffer_bytes[cur];
    b[cur] = b[prev];
    cl->buffer_bytes[cur] = cl->buffer_bytes[prev];
    b[prev] = m;
    cl->buffer_bytes[prev] = bytes;
  }
  piola_status s = piola_ocl_zero_buffer(w, BUF_COUNTERS, 24);
  if (s == PIOLA_OK) {
    s = piola_ocl_zero_buffer(w, BUF_CORNER_COUNT, 4 * (size_t)nsv);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  /* Where a body collides with itself, in a step's first substep: the vertices of the tets
   * turned over at its start (piola_contact_self_untangled). The marks are read for a body's
   * pairs with itself only, so without self-collision they are neither made nor read. */
  if (w->substep == 0 && piola_contacts_any_self(&w->contacts)) {
    const int km = KERNEL_CONTACT_MARK_INVERTED;
    cl_int tets = cl->tet_count;
    s = piola_ocl_zero_buffer(w, BUF_TURNED, 4 * (size_t)cl->vertex_count);
    SET_ARG(km, 0, b[BUF_X]);
    SET_ARG(km, 1, b[BUF_TETS]);
    SET_ARG(km, 2, tets);
    SET_ARG(km, 3, b[BUF_TURNED]);
    if (s == PIOLA_OK) {
      s = piola_ocl_enqueue(w, km, tets, stage);
    }
    if (s != PIOLA_OK) {
      return s;
    }
  }
  const int k = KERNEL_CONTACT_NARROW;
  SET_ARG(k, 0, b[BUF_SV_X]);
  SET_ARG(k, 1, b[BUF_SV_P]);
  SET_ARG(k, 2, b[BUF_SV_BODY]);
  SET_ARG(k, 3, b[BUF_SV_REST]);
  SET_ARG(k, 4, b[BUF_TRIANGLES]);
  SET_ARG(k, 5, b[BUF_SV_VERTEX]);
  SET_ARG(k, 6, b[BUF_TURNED]);
  SET_ARG(k, 7, b[BUF_TRI_BOX]);
  SET_ARG(k, 8, b[BUF_CLUSTER_BOX]);
  SET_ARG(k, 9, b[BUF_BODY_FILTER]);
  SET_ARG(k, 10, b[BUF_GRID]);
  SET_ARG(k, 11, b[BUF_BUCKET_START]);
  SET_ARG(k, 12, b[BUF_BUCKET_CLUSTERS]);
  SET_ARG(k, 13, mask);
  SET_ARG(k, 14, thickness);
  SET_ARG(k, 15, nsv);
  SET_ARG(k, 16, b[BUF_PREVIOUS_COUNT]);
  SET_ARG(k, 17, b[BUF_PREVIOUS_TRI]);
  SET_ARG(k, 18, b[BUF_CONTACT_COUNT]);
  SET_ARG(k, 19, b[BUF_CONTACT_TRI]);
  SET_ARG(k, 20, b[BUF_COUNTERS]);
  SET_ARG(k, 21, b[BUF_CORNER_COUNT]);
  SET_ARG(k, 22, b[BUF_SV_NEAR]);
  SET_ARG(k, 23, b[BUF_SV_NEAR_MASK]);
  s = piola_ocl_enqueue(w, k, nsv, stage);
  const bool edges = piola_edge_contacts_active(w);
  if (s == PIOLA_OK && edges) {
    s = edge_narrow_phase(w, stage);
  }
  if (s == PIOLA_OK) {
    s = scan(w, BUF_CORNER_COUNT, BUF_CORNER_START, nsv, stage);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_zero_buffer(w, BUF_CORNER_COUNT, 4 * (size_t)nsv);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_CONTACT_CORNERS, 0, b[BUF_CONTACT_COUNT]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 1, b[BUF_CONTACT_TRI]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 2, b[BUF_TRIANGLES]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 3, b[BUF_CORNER_START]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 4, b[BUF_CORNER_COUNT]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 5, b[BUF_CORNER_ENTRY]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 6, nsv);
  s = piola_ocl_enqueue(w, KERNEL_CONTACT_CORNERS, nsv, stage);
  if (s == PIOLA_OK && edges) {
    s = edge_corners(w, stage);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 0, b[BUF_CONTACT_COUNT]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 1, b[BUF_CORNER_START]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 2, b[BUF_CORNER_ENTRY]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 3, b[BUF_COUNTERS]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 4, b[BUF_CONTACT_ACTIVE]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 5, nsv);
  return piola_ocl_enqueue(w, KERNEL_CONTACT_SORT_CORNERS, nsv, stage);
}

/* CONTACT: two passes of every contact projected from the same positions, then gathered per
 * vertex: the measuring pass (whole masses: each vertex records its mass split), then the
 * projecting pass (split masses: each vertex moves); piola_contact_split. */
piola_status piola_ocl_contact_solve(piola_world *w, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  cl_mem *b = cl->buffers;
  /* Work-items for the listed vertices: at most every surface vertex. */
  cl_int items = (cl_int)piola_ocl_stride_items(cl, (size_t)cl->sv_count);
  cl_float thickness = w->def.contact_thickness, friction = w->def.contact_friction;
  SET_ARG(KERNEL_CONTACT_SOLVE, 0, b[BUF_X]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 1, b[BUF_D]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 2, b[BUF_SV_VERTEX]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 3, b[BUF_TRIANGLES]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 4, b[BUF_CONTACT_COUNT]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 5, b[BUF_CONTACT_TRI]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 6, b[BUF_CONTACT_SPLIT]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 8, thickness);
  SET_ARG(KERNEL_CONTACT_SOLVE, 9, friction);
  SET_ARG(KERNEL_CONTACT_SOLVE, 10, b[BUF_CONTACT_DELTA]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 11, b[BUF_CONTACT_ACTIVE]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 12, b[BUF_COUNTERS]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 13, b[BUF_SV_RING_START]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 14, b[BUF_SV_RING]);
  SET_ARG(KERNEL_CONTACT_APPLY, 0, b[BUF_D]);
  SET_ARG(KERNEL_CONTACT_APPLY, 1, b[BUF_SV_VERTEX]);
  SET_ARG(KERNEL_CONTACT_APPLY, 2, b[BUF_CONTACT_COUNT]);
  SET_ARG(KERNEL_CONTACT_APPLY, 3, b[BUF_CORNER_START]);
  SET_ARG(KERNEL_CONTACT_APPLY, 4, b[BUF_CORNER_ENTRY]);
  SET_ARG(KERNEL_CONTACT_APPLY, 5, b[BUF_CONTACT_DELTA]);
  SET_ARG(KERNEL_CONTACT_APPLY, 6, b[BUF_CONTACT_SPLIT]);
  SET_ARG(KERNEL_CONTACT_APPLY, 8, b[BUF_CONTACT_ACTIVE]);
  SET_ARG(KERNEL_CONTACT_APPLY, 9, b[BUF_COUNTERS]);
  piola_status s = PIOLA_OK;
  const bool edges = piola_edge_contacts_active(w);
  for (cl_int measure = 1; measure >= 0 && s == PIOLA_OK; --measure) {
    SET_ARG(KERNEL_CONTACT_SOLVE, 7, measure);
    SET_ARG(KERNEL_CONTACT_APPLY, 7, measure);
    s = piola_ocl_enqueue(w, KERNEL_CONTACT_SOLVE, items, stage);
    if (s == PIOLA_OK && edges) {
      s = edge_solve(w, measure, stage);
    }
    if (s == PIOLA_OK) {
      s = piola_ocl_enqueue(w, KERNEL_CONTACT_APPLY, items, stage);
    }
  }
  return s;
}
