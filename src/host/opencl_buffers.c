/* Piola OpenCL buffers: the device copies of the solver arrays (structure of arrays in float),
 * what a step uploads after a change, and the reads and writes of vertex ranges and of the whole
 * state. */
#include "opencl_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Buffers ------------------------------------------------------------------------- */

/* Makes buffer b hold at least `bytes` (contents are not kept). */
piola_status piola_ocl_ensure_buffer(piola_world *w, int b, size_t bytes, cl_mem_flags flags) {
  piola_opencl *cl = piola_ocl(w);
  bytes = bytes > 0 ? bytes : 16;
  if (cl->buffers[b] != NULL && cl->buffer_bytes[b] >= bytes) {
    return PIOLA_OK;
  }
  if (cl->buffers[b] != NULL) {
    piola_ocl_release_mem(cl->faults, cl->buffers[b]);
    cl->buffers[b] = NULL;
    cl->buffer_bytes[b] = 0;
  }
  cl_int e;
  cl->buffers[b] = piola_ocl_create_buffer(cl->faults, cl->context, flags, bytes, NULL, &e);
  if (e != CL_SUCCESS) {
    cl->buffers[b] = NULL;
    return piola_ocl_wfail(w, e, "clCreateBuffer");
  }
  cl->buffer_bytes[b] = bytes;
  return PIOLA_OK;
}

piola_status piola_ocl_write_buffer(piola_world *w, int b, size_t offset, size_t bytes,
                                    const void *data) {
  if (bytes == 0) {
    return PIOLA_OK;
  }
  CL_CHECK(piola_ocl_write(piola_ocl(w)->faults, piola_ocl(w)->queue, piola_ocl(w)->buffers[b],
                           offset, bytes, data));
  return PIOLA_OK;
}

piola_status piola_ocl_read_buffer(const piola_world *w, int b, size_t offset, size_t bytes,
                                   void *data) {
  if (bytes == 0) {
    return PIOLA_OK;
  }
  CL_CHECK(piola_ocl_read(piola_ocl(w)->faults, piola_ocl(w)->queue, piola_ocl(w)->buffers[b],
                          offset, bytes, data));
  return PIOLA_OK;
}

/* Fills the first `bytes` of buffer b with zeros. */
piola_status piola_ocl_zero_buffer(piola_world *w, int b, size_t bytes) {
  if (bytes == 0) {
    return PIOLA_OK;
  }
  cl_int zero = 0;
  CL_CHECK(piola_ocl_fill(piola_ocl(w)->faults, piola_ocl(w)->queue, piola_ocl(w)->buffers[b],
                          &zero, sizeof zero, bytes, NULL));
  return PIOLA_OK;
}

/* Packs host doubles of vertices [first, first + n) into float4 (xyz, w or 0). */
static void pack_vertices(const piola_world *w, const double *xyz, bool with_w, int32_t first,
                          int32_t n, float *out) {
  for (int32_t i = 0; i < n; ++i) {
    size_t g = (size_t)(first + i);
    out[4 * (size_t)i] = (float)xyz[3 * g];
    out[4 * (size_t)i + 1] = (float)xyz[3 * g + 1];
    out[4 * (size_t)i + 2] = (float)xyz[3 * g + 2];
    out[4 * (size_t)i + 3] = with_w ? (float)w->w[g] : 0.0f;
  }
}

/* Writes the forces of vertices [first, first + count) (all of them when the buffer is new);
 * nothing while no body has forces. */
piola_status piola_ocl_upload_forces(piola_world *w, int32_t first, int32_t count) {
  if (w->f == NULL) {
    return PIOLA_OK;
  }
  piola_opencl *cl = piola_ocl(w);
  size_t bytes = 16 * (size_t)w->vertex_count;
  bool fresh = false;
  if (cl->buffers[BUF_FORCES] == NULL || cl->buffer_bytes[BUF_FORCES] < bytes) {
    piola_status s = piola_ocl_ensure_buffer(w, BUF_FORCES, bytes, CL_MEM_READ_ONLY);
    if (s != PIOLA_OK) {
      return s;
    }
    first = 0;
    count = w->vertex_count;
    fresh = true;
  }
  float *tmp = malloc(16 * (size_t)(count > 0 ? count : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < count; ++i) {
    for (int k = 0; k < 3; ++k) {
      tmp[4 * (size_t)i + k] = (float)w->f[3 * (size_t)(first + i) + k];
    }
    tmp[4 * (size_t)i + 3] = 0.0f;
  }
  piola_status s =
      piola_ocl_write_buffer(w, BUF_FORCES, 16 * (size_t)first, 16 * (size_t)count, tmp);
  free(tmp);
  if (s != PIOLA_OK && fresh) {
    /* A new buffer that was not filled holds garbage: drop it, so that the next upload makes
     * and fills a new one (a later write of one body's range would leave the rest garbage). */
    piola_ocl_release_mem(cl->faults, cl->buffers[BUF_FORCES]);
    cl->buffers[BUF_FORCES] = NULL;
    cl->buffer_bytes[BUF_FORCES] = 0;
  }
  return s;
}

/* Writes the collider records that changed (all of them when the buffer had to grow). */
piola_status piola_ocl_upload_colliders(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  const size_t record = sizeof(piola_collider_data);
  size_t bytes = record * (size_t)w->collider_count;
  int32_t first = cl->colliders_dirty_first;
  int32_t end =
      cl->colliders_dirty_end < w->collider_count ? cl->colliders_dirty_end : w->collider_count;
  if (cl->buffers[BUF_COLLIDERS] == NULL || cl->buffer_bytes[BUF_COLLIDERS] < bytes) {
    first = 0; /* a new buffer: written whole, now or (after a failure) at the next try */
    end = w->collider_count;
    cl->colliders_dirty_first = 0;
    cl->colliders_dirty_end = INT32_MAX;
  }
  piola_status s = piola_ocl_ensure_buffer(w, BUF_COLLIDERS, bytes, CL_MEM_READ_ONLY);
  if (s == PIOLA_OK && first < end) {
    s = piola_ocl_write_buffer(w, BUF_COLLIDERS, record * (size_t)first,
                               record * (size_t)(end - first), w->colliders + first);
  }
  if (s == PIOLA_OK) {
    cl->colliders_dirty_first = INT32_MAX;
    cl->colliders_dirty_end = 0;
  }
  return s;
}

/* Writes the contact surfaces: surface vertices (vertex, body, rest position), triangles
 * (three surface vertices, body), each surface vertex's ring of triangles and the bodies'
 * filters. */
static piola_status upload_contacts(piola_world *w) {
  const piola_solver_contacts *c = &w->contacts;
  const size_t nsv = (size_t)c->vertex_count, ntr = (size_t)c->triangle_count;
  size_t n = 4 * (nsv > ntr ? nsv : ntr);
  n = 4 * (size_t)c->body_count > n ? 4 * (size_t)c->body_count : n;
  float *tmp = malloc(sizeof(float) * (n > 0 ? n : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = piola_ocl_write_buffer(w, BUF_SV_VERTEX, 0, 4 * nsv, c->vertex);
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_SV_BODY, 0, 4 * nsv, c->vertex_body);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_SV_NEAR, 0, 8 * nsv, c->vertex_near);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_SV_NEAR_MASK, 0, 16 * nsv, c->vertex_near_mask);
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nsv; ++i) {
      for (int k = 0; k < 3; ++k) {
        tmp[4 * i + (size_t)k] = (float)c->vertex_rest[3 * i + (size_t)k];
      }
      tmp[4 * i + 3] = (float)c->vertex_reach[i];
    }
    s = piola_ocl_write_buffer(w, BUF_SV_REST, 0, 16 * nsv, tmp);
  }
  if (s == PIOLA_OK) {
    cl_int *q = (cl_int *)tmp;
    for (size_t t = 0; t < ntr; ++t) {
      for (int k = 0; k < 3; ++k) {
        q[4 * t + (size_t)k] = c->triangle[3 * t + (size_t)k];
      }
      q[4 * t + 3] = c->triangle_body[t];
    }
    s = piola_ocl_write_buffer(w, BUF_TRIANGLES, 0, 16 * ntr, q);
  }
  if (s == PIOLA_OK && nsv > 0) {
    s = piola_ocl_write_buffer(w, BUF_SV_RING_START, 0, 4 * (nsv + 1), c->vertex_ring_start);
  }
  if (s == PIOLA_OK && ntr > 0) {
    s = piola_ocl_write_buffer(w, BUF_SV_RING, 0, 12 * ntr, c->vertex_ring);
  }
  if (s == PIOLA_OK && c->edge_count > 0) {
    s = piola_ocl_write_buffer(w, BUF_EDGES, 0, 16 * (size_t)c->edge_count, c->edge);
  }
  if (s == PIOLA_OK && c->edge_count > 0) {
    cl_int *q = (cl_int *)tmp;
    for (size_t t = 0; t < ntr; ++t) {
      for (int k = 0; k < 3; ++k) {
        q[4 * t + (size_t)k] = c->triangle_edge[3 * t + (size_t)k];
      }
      q[4 * t + 3] = c->triangle_owned[t];
    }
    s = piola_ocl_write_buffer(w, BUF_TRI_EDGES, 0, 16 * ntr, q);
  }
  if (s == PIOLA_OK && c->edge_count > 0) {
    s = piola_ocl_write_buffer(w, BUF_CLUSTER_EDGE_MAX, 0, 4 * (size_t)c->cluster_count,
                               c->cluster_edge_max);
  }
  if (s == PIOLA_OK && c->edge_count > 0) {
    s = piola_ocl_write_buffer(w, BUF_CLUSTER_NEAR, 0, 4 * (size_t)c->cluster_count,
                               c->cluster_near);
  }
  if (s == PIOLA_OK && c->edge_count > 0) {
    s = piola_ocl_write_buffer(w, BUF_CLUSTER_NEAR_MASK, 0, 8 * (size_t)c->cluster_count,
                               c->cluster_near_mask);
  }
  if (s == PIOLA_OK && c->edge_count > 0) {
    s = piola_ocl_write_buffer(w, BUF_EDGE_CLUSTER, 0, 4 * (size_t)c->edge_count, c->edge_cluster);
  }
  if (s == PIOLA_OK && c->edge_count > 0) {
    s = piola_ocl_write_buffer(w, BUF_EDGE_WING, 0, 8 * (size_t)c->edge_count, c->edge_wing);
  }
  if (s == PIOLA_OK && c->cluster_first != NULL) {
    /* NULL where the world has no bodies: no cluster to write, and none read. */
    s = piola_ocl_write_buffer(w, BUF_CLUSTER_FIRST, 0, 4 * ((size_t)c->cluster_count + 1),
                               c->cluster_first);
  }
  if (s == PIOLA_OK) {
    cl_uint *f = (cl_uint *)tmp;
    for (size_t b = 0; b < (size_t)c->body_count; ++b) {
      for (int k = 0; k < 4; ++k) {
        f[4 * b + (size_t)k] = c->body_filter[4 * b + (size_t)k];
      }
    }
    s = piola_ocl_write_buffer(w, BUF_BODY_FILTER, 0, 16 * (size_t)c->body_count, f);
  }
  free(tmp);
  /* The host's contact lists of the last substep (none after the arrays were built; those of a
   * loaded state after piola_world_load_state): the next narrow phase takes them as the
   * previous ones. */
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_CONTACT_COUNT, 0, 4 * nsv, c->contact_count);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_CONTACT_TRI, 0, 4 * PIOLA_CONTACTS_PER_VERTEX * nsv,
                               c->contact_triangle);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_zero_buffer(w, BUF_PREVIOUS_COUNT, 4 * nsv);
  }
  if (s == PIOLA_OK) {
    piola_ocl(w)->sv_count = c->vertex_count;
    piola_ocl(w)->cluster_count = c->cluster_count;
    piola_ocl(w)->edge_count = c->edge_count;
  }
  return s;
}

/* Writes the cloth kinds' arrays (in color order) and the cloth material table. */
static piola_status upload_cloth(piola_world *w) {
  const piola_solver_cloth *c = &w->cloth;
  const size_t nt = (size_t)c->tri_count, nb = (size_t)c->bend_count,
               nm = (size_t)w->cloth_material_count;
  size_t n = 4 * (nt > nb ? nt : nb);
  n = n > 8 * nm ? n : 8 * nm;
  float *tmp = malloc(sizeof(float) * (n > 0 ? n : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = piola_ocl_write_buffer(w, BUF_CLOTH_TRIS, 0, 16 * nt, c->tri_vertices);
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < 4 * nt; ++i) {
      tmp[i] = (float)c->tri_dm_inv[i];
    }
    s = piola_ocl_write_buffer(w, BUF_CLOTH_TRI_DM, 0, 16 * nt, tmp);
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nt; ++i) {
      tmp[i] = (float)c->tri_area[i];
    }
    s = piola_ocl_write_buffer(w, BUF_CLOTH_TRI_AREA, 0, 4 * nt, tmp);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_zero_buffer(w, BUF_CLOTH_TRI_LAMBDA, 4 * nt);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_CLOTH_BENDS, 0, 16 * nb, c->bend_vertices);
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nb; ++i) {
      for (size_t k = 0; k < 4; ++k) {
        tmp[4 * i + k] = (float)c->bend_rest[6 * i + k];
      }
    }
    s = piola_ocl_write_buffer(w, BUF_CLOTH_BEND_K, 0, 16 * nb, tmp);
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nb; ++i) {
      tmp[2 * i] = (float)c->bend_rest[6 * i + 4];
      tmp[2 * i + 1] = (float)c->bend_rest[6 * i + 5];
    }
    s = piola_ocl_write_buffer(w, BUF_CLOTH_BEND_Q, 0, 8 * nb, tmp);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_zero_buffer(w, BUF_CLOTH_BEND_LAMBDA, 4 * nb);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_CLOTH_BEND_MATERIAL, 0, 4 * nb, c->bend_material);
  }
  if (s == PIOLA_OK) {
    piola_cloth_material_data *md = (piola_cloth_material_data *)tmp;
    for (size_t i = 0; i < nm; ++i) {
      const piola_cloth_material_entry *e = &w->cloth_materials[i];
      memset(&md[i], 0, sizeof md[i]);
      md[i].c11 = (float)e->tri.c11;
      md[i].c12 = (float)e->tri.c12;
      md[i].c22 = (float)e->tri.c22;
      md[i].c33 = (float)e->tri.c33;
      md[i].tri_compliance = (float)e->tri.compliance;
      md[i].bend_compliance = (float)e->bend.compliance;
      md[i].solver = e->tri.solver;
      md[i].damping = (float)e->tri.damping;
    }
    s = piola_ocl_write_buffer(w, BUF_CLOTH_MATERIALS, 0, sizeof(piola_cloth_material_data) * nm,
                               md);
  }
  free(tmp);
  if (s == PIOLA_OK) {
    piola_ocl(w)->cloth_tri_count = c->tri_count;
    piola_ocl(w)->cloth_bend_count = c->bend_count;
  }
  return s;
}

/* Uploads the whole state: vertices, tets (structure of arrays), materials, plastic data. */
piola_status piola_ocl_upload_all(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  const size_t nv = (size_t)w->vertex_count, nt = (size_t)w->solver.tet_count,
               np = (size_t)w->solver.plastic_count, nm = (size_t)w->material_count,
               nj = (size_t)w->solver.jacobi_vertex_count, njt = (size_t)w->solver.jacobi_count,
               nb = (size_t)w->solver.body_count, nc = (size_t)w->solver.color_count;
  const piola_solver_contacts *ct = &w->contacts;
  const size_t nsv = (size_t)ct->vertex_count, ntr = (size_t)ct->triangle_count,
               ncl = (size_t)ct->cluster_count, ncb = (size_t)ct->body_count,
               nbk = (size_t)ct->bucket_mask + 1, K = PIOLA_CONTACTS_PER_VERTEX,
               ne = (size_t)ct->edge_count, KE = PIOLA_CONTACTS_PER_EDGE;
  const size_t partials = piola_ocl_box_partials(cl, ncl > nsv ? ncl : nsv);
  const size_t scan_block = cl->wg * SCAN_ITEMS;
  const size_t scan_blocks = ((nbk > nsv ? nbk : nsv) + scan_block - 1) / scan_block;
  piola_status s = PIOLA_OK;
  const struct {
    int b;
    size_t bytes;
  } sizes[] = {
      {BUF_X, 16 * nv},
      {BUF_D, 16 * nv},
      {BUF_D0, 16 * nv},
      {BUF_V, 16 * nv},
      {BUF_TETS, 16 * nt},
      {BUF_TET_M, 36 * nt},
      {BUF_TET_VOLUME, 4 * nt},
      {BUF_TET_LAMBDA, 8 * nt},
      {BUF_TET_MATERIAL, 4 * nt},
      {BUF_MATERIALS, sizeof(piola_material_data) * nm},
      {BUF_PLASTIC_TET, 4 * np},
      {BUF_PLASTIC_DM, 36 * np},
      {BUF_PLASTIC_STRAIN, 24 * np},
      {BUF_JACOBI_VERTICES, 4 * nj},
      {BUF_JACOBI_START, 4 * (nj + 1)},
      {BUF_JACOBI_INCIDENCE, 16 * njt},
      {BUF_JACOBI_DELTA, 64 * njt},
      {BUF_BODY_VERTEX, 8 * nb},
      {BUF_BODY_COLOR, 8 * nb * nc},
      {BUF_BODY_JACOBI, 16 * nb},
      {BUF_SUPPORT, 16 * nv},
      {BUF_SV_VERTEX, 4 * nsv},
      {BUF_SV_BODY, 4 * nsv},
      {BUF_SV_NEAR, 8 * nsv},
      {BUF_SV_NEAR_MASK, 16 * nsv},
      {BUF_SV_REST, 16 * nsv},
      {BUF_SV_X, 16 * nsv},
      {BUF_SV_P, 16 * nsv},
      {BUF_TRIANGLES, 16 * ntr},
      {BUF_SV_RING_START, nsv > 0 ? 4 * (nsv + 1) : 0},
      {BUF_SV_RING, 12 * ntr},
      {BUF_BODY_FILTER, 16 * ncb},
      {BUF_TRI_BOX, 32 * ntr},
      {BUF_CLUSTER_FIRST, 4 * (ncl + 1)},
      {BUF_CLUSTER_BOX, 32 * ncl},
      {BUF_PARTIAL, 8 * partials},
      {BUF_GRID, 16},
      {BUF_BUCKET_COUNT, 4 * nbk},
      {BUF_BUCKET_START, 4 * (nbk + 1)},
      {BUF_BUCKET_CLUSTERS, 4 * PIOLA_CELLS_PER_CLUSTER * ncl},
      {BUF_SCAN_TOTALS, 4 * scan_blocks},
      {BUF_CONTACT_COUNT, 4 * nsv},
      {BUF_CONTACT_TRI, 4 * K * nsv},
      {BUF_PREVIOUS_COUNT, 4 * nsv},
      {BUF_PREVIOUS_TRI, 4 * K * nsv},
      {BUF_COUNTERS, 24},
      {BUF_CORNER_COUNT, 4 * nsv},
      {BUF_CORNER_START, 4 * (nsv + 1)},
      {BUF_CORNER_ENTRY, 12 * K * nsv + 16 * KE * ne},
      {BUF_CONTACT_DELTA, 64 * K * nsv + 64 * KE * ne},
      {BUF_CONTACT_SPLIT, 4 * nsv},
      {BUF_CONTACT_ACTIVE, 4 * nsv},
      {BUF_TURNED, nsv > 0 ? 4 * nv : 0},
      {BUF_EDGES, 16 * ne},
      {BUF_TRI_EDGES, 16 * ntr},
      {BUF_CLUSTER_EDGE_MAX, ne > 0 ? 4 * ncl : 0},
      {BUF_CLUSTER_NEAR, ne > 0 ? 4 * ncl : 0},
      {BUF_CLUSTER_NEAR_MASK, ne > 0 ? 8 * ncl : 0},
      {BUF_EDGE_CLUSTER, 4 * ne},
      {BUF_EDGE_WING, 8 * ne},
      {BUF_EDGE_CONVEX, ne},
      {BUF_CLUSTER_PAIR_COUNT, ne > 0 ? 4 * ncl : 0},
      {BUF_CLUSTER_PAIRS, ne > 0 ? 4 * PIOLA_CLUSTER_PAIRS * ncl : 0},
      {BUF_EDGE_CONTACT_COUNT, 4 * ne},
      {BUF_EDGE_CONTACT_ENTRY, 4 * KE * ne},
      {BUF_EDGE_ACTIVE, 4 * ne},
      {BUF_CLOTH_TRIS, 16 * (size_t)w->cloth.tri_count},
      {BUF_CLOTH_TRI_DM, 16 * (size_t)w->cloth.tri_count},
      {BUF_CLOTH_TRI_AREA, 4 * (size_t)w->cloth.tri_count},
      {BUF_CLOTH_TRI_LAMBDA, 4 * (size_t)w->cloth.tri_count},
      {BUF_CLOTH_BENDS, 16 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_BEND_K, 16 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_BEND_Q, 8 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_BEND_LAMBDA, 4 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_BEND_MATERIAL, 4 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_MATERIALS, sizeof(piola_cloth_material_data) * (size_t)w->cloth_material_count}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && s == PIOLA_OK; ++i) {
    /* Exact sizes: the plane strides of the structure-of-arrays buffers are the counts. */
    if (cl->buffers[sizes[i].b] != NULL && cl->buffer_bytes[sizes[i].b] != sizes[i].bytes) {
      piola_ocl_release_mem(cl->faults, cl->buffers[sizes[i].b]);
      cl->buffers[sizes[i].b] = NULL;
      cl->buffer_bytes[sizes[i].b] = 0;
    }
    s = piola_ocl_ensure_buffer(w, sizes[i].b, sizes[i].bytes,
                                sizes[i].b == BUF_MATERIALS || sizes[i].b == BUF_CLOTH_MATERIALS
                                    ? CL_MEM_READ_ONLY
                                    : CL_MEM_READ_WRITE);
  }
  size_t staging_bytes = 16 * nv;
  staging_bytes = 36 * nt > staging_bytes ? 36 * nt : staging_bytes;
  staging_bytes = sizeof(piola_material_data) * nm > staging_bytes
                      ? sizeof(piola_material_data) * nm
                      : staging_bytes;
  void *staging = s == PIOLA_OK ? malloc(staging_bytes > 0 ? staging_bytes : 16) : NULL;
  if (s == PIOLA_OK && staging == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  float *f = staging;
  if (s == PIOLA_OK) {
    pack_vertices(w, w->x, true, 0, w->vertex_count, f);
    s = piola_ocl_write_buffer(w, BUF_X, 0, 16 * nv, f);
  }
  if (s == PIOLA_OK) {
    pack_vertices(w, w->v, false, 0, w->vertex_count, f);
    s = piola_ocl_write_buffer(w, BUF_V, 0, 16 * nv, f);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_TETS, 0, 16 * nt, w->solver.tet_vertices);
  }
  if (s == PIOLA_OK) {
    for (size_t t = 0; t < nt; ++t) {
      for (size_t k = 0; k < 9; ++k) {
        f[k * nt + t] = (float)w->solver.tet_m[9 * t + k];
      }
    }
    s = piola_ocl_write_buffer(w, BUF_TET_M, 0, 36 * nt, f);
  }
  if (s == PIOLA_OK) {
    for (size_t t = 0; t < nt; ++t) {
      f[t] = (float)w->solver.tet_volume[t];
    }
    s = piola_ocl_write_buffer(w, BUF_TET_VOLUME, 0, 4 * nt, f);
  }
  if (s == PIOLA_OK) {
    for (size_t t = 0; t < nt; ++t) {
      f[t] = (float)w->solver.tet_lambda[2 * t];
      f[nt + t] = (float)w->solver.tet_lambda[2 * t + 1];
    }
    s = piola_ocl_write_buffer(w, BUF_TET_LAMBDA, 0, 8 * nt, f);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_TET_MATERIAL, 0, 4 * nt, w->solver.tet_material);
  }
  if (s == PIOLA_OK) {
    piola_material_data *md = staging;
    for (size_t i = 0; i < nm; ++i) {
      const piola_material_entry *e = &w->materials[i];
      memset(&md[i], 0, sizeof md[i]);
      md[i].mu = (float)e->constants.mu;
      md[i].lambda = (float)e->constants.lambda;
      md[i].compliance = (float)e->constants.compliance;
      md[i].model = e->constants.model;
      md[i].solver = e->constants.solver;
      md[i].inversion = e->constants.inversion;
      md[i].plastic_yield = e->def.plastic_yield;
      md[i].plastic_creep = e->def.plastic_creep;
      md[i].plastic_max = e->def.plastic_max;
      md[i].split = e->constants.split;
      md[i].damping = (float)e->constants.damping;
    }
    s = piola_ocl_write_buffer(w, BUF_MATERIALS, 0, sizeof(piola_material_data) * nm, md);
  }
  if (s == PIOLA_OK && np > 0) {
    s = piola_ocl_write_buffer(w, BUF_PLASTIC_TET, 0, 4 * np, w->solver.plastic_tet);
    if (s == PIOLA_OK) {
      for (size_t k = 0; k < np; ++k) {
        for (size_t j = 0; j < 9; ++j) {
          f[j * np + k] = (float)w->solver.plastic_dm_rest[9 * k + j];
        }
      }
      s = piola_ocl_write_buffer(w, BUF_PLASTIC_DM, 0, 36 * np, f);
    }
    if (s == PIOLA_OK) {
      for (size_t k = 0; k < np; ++k) {
        for (size_t j = 0; j < 6; ++j) {
          f[j * np + k] = (float)w->solver.plastic_strain[6 * k + j];
        }
      }
      s = piola_ocl_write_buffer(w, BUF_PLASTIC_STRAIN, 0, 24 * np, f);
    }
  }
  free(staging);
  if (s == PIOLA_OK && njt > 0) {
    s = piola_ocl_write_buffer(w, BUF_JACOBI_VERTICES, 0, 4 * nj, w->solver.jacobi_vertices);
    if (s == PIOLA_OK) {
      s = piola_ocl_write_buffer(w, BUF_JACOBI_START, 0, 4 * (nj + 1), w->solver.jacobi_start);
    }
    if (s == PIOLA_OK) {
      s = piola_ocl_write_buffer(w, BUF_JACOBI_INCIDENCE, 0, 16 * njt, w->solver.jacobi_incidence);
    }
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_BODY_VERTEX, 0, 8 * nb, w->solver.body_vertex);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_BODY_COLOR, 0, 8 * nb * nc, w->solver.body_color);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_write_buffer(w, BUF_BODY_JACOBI, 0, 16 * nb, w->solver.body_jacobi);
  }
  if (s == PIOLA_OK) {
    s = upload_contacts(w);
  }
  if (s == PIOLA_OK) {
    s = upload_cloth(w);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_upload_vbd(w);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_upload_global(w);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_upload_colliders(w);
  }
  if (s == PIOLA_OK) {
    cl->vertex_count = w->vertex_count;
    s = piola_ocl_upload_forces(w, 0, w->vertex_count);
  }
  if (s == PIOLA_OK) {
    cl->tet_count = w->solver.tet_count;
    cl->plastic_count = w->solver.plastic_count;
    cl->live = true;
  }
  return s;
}

bool piola_opencl_live(const piola_world *w) {
  return piola_ocl(w) != NULL && piola_ocl(w)->live;
}

piola_status piola_opencl_push_forces(piola_world *w, int32_t first, int32_t count) {
  return piola_opencl_live(w) ? piola_ocl_upload_forces(w, first, count) : PIOLA_OK;
}

void piola_opencl_invalidate(piola_world *w) {
  piola_ocl(w)->live = false;
}

void piola_opencl_colliders_changed(piola_world *w, int32_t first, int32_t end) {
  piola_opencl *cl = piola_ocl(w);
  cl->colliders_dirty_first = first < cl->colliders_dirty_first ? first : cl->colliders_dirty_first;
  cl->colliders_dirty_end = end > cl->colliders_dirty_end ? end : cl->colliders_dirty_end;
}

piola_status piola_opencl_contact_counters(const piola_world *w, int32_t out[4]) {
  /* counters: vertex-triangle kept, dropped, the listed vertices; edge-edge kept, dropped, the
   * listed edges (piola_contact.cl) */
  cl_int tmp[5] = {0, 0, 0, 0, 0};
  piola_status s = piola_ocl(w)->buffers[BUF_COUNTERS] != NULL
                       ? piola_ocl_read_buffer(w, BUF_COUNTERS, 0, sizeof tmp, tmp)
                       : PIOLA_OK;
  out[0] = tmp[0];
  out[1] = tmp[1];
  out[2] = tmp[3];
  out[3] = tmp[4];
  return s;
}

int64_t piola_opencl_device_bytes(const piola_world *w) {
  int64_t sum = 0;
  for (int i = 0; i < BUF_COUNT; ++i) {
    sum += (int64_t)piola_ocl(w)->buffer_bytes[i];
  }
  return sum;
}

const char *piola_opencl_device_name(const piola_world *w) {
  return piola_ocl(w)->device_name;
}

int32_t piola_opencl_simd_lanes(const piola_world *w) {
  return piola_ocl(w)->lanes;
}

void piola_opencl_stage_ms(const piola_world *w, double out[PIOLA_STAGE_COUNT]) {
  memcpy(out, piola_ocl(w)->stage_ms, sizeof piola_ocl(w)->stage_ms);
}

int32_t piola_opencl_kernel_times(const piola_world *w, piola_kernel_time *out, int32_t capacity) {
  for (int32_t k = 0; k < KERNEL_COUNT && k < capacity; ++k) {
    out[k].name = piola_ocl_kernel_names[k];
    out[k].launches = piola_ocl(w)->kernel_launches[k];
    out[k].ms = piola_ocl(w)->kernel_ms[k];
  }
  return KERNEL_COUNT;
}

/* ---- Read-back ----------------------------------------------------------------------- */

/* Reads float4 entries [first, first + count) of buffer b into tmp (4 floats per entry). */
static piola_status read_float4(const piola_world *w, int b, int32_t first, int32_t count,
                                float *tmp) {
  return piola_ocl_read_buffer(w, b, 16 * (size_t)first, 16 * (size_t)count, tmp);
}

piola_status piola_opencl_read_range(const piola_world *w, int32_t first, int32_t count, float *xyz,
                                     float *vel) {
  float *tmp = malloc(16 * (size_t)(count > 0 ? count : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = PIOLA_OK;
  float *outs[2] = {xyz, vel};
  const int bufs[2] = {BUF_X, BUF_V};
  for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
    if (outs[k] != NULL && (s = read_float4(w, bufs[k], first, count, tmp)) == PIOLA_OK) {
      for (int32_t i = 0; i < count; ++i) {
        memcpy(outs[k] + 3 * (size_t)i, tmp + 4 * (size_t)i, 3 * sizeof(float));
      }
    }
  }
  free(tmp);
  return s;
}

/* Reads vertices [first, first + count) into the double arrays x and v (either may be NULL),
 * 3 per vertex from their start. */
static piola_status read_vertices(const piola_world *w, int32_t first, int32_t count, double *x,
                                  double *v) {
  float *tmp = malloc(16 * (size_t)(count > 0 ? count : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = PIOLA_OK;
  double *outs[2] = {x, v};
  const int bufs[2] = {BUF_X, BUF_V};
  for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
    if (outs[k] != NULL && (s = read_float4(w, bufs[k], first, count, tmp)) == PIOLA_OK) {
      for (int32_t i = 0; i < count; ++i) {
        for (int c = 0; c < 3; ++c) {
          outs[k][3 * (size_t)i + c] = tmp[4 * (size_t)i + c];
        }
      }
    }
  }
  free(tmp);
  return s;
}

/* Reads the tet matrices and multipliers (and, when strain != NULL, the plastic strain). */
static piola_status read_tets(const piola_world *w, double *tet_m, double *lambda, double *strain) {
  const size_t nt = (size_t)piola_ocl(w)->tet_count, np = (size_t)piola_ocl(w)->plastic_count;
  size_t n = 9 * nt > 6 * np ? 9 * nt : 6 * np;
  float *tmp = malloc(sizeof(float) * (n > 0 ? n : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = piola_ocl_read_buffer(w, BUF_TET_M, 0, 36 * nt, tmp);
  for (size_t t = 0; t < nt && s == PIOLA_OK; ++t) {
    for (size_t k = 0; k < 9; ++k) {
      tet_m[9 * t + k] = tmp[k * nt + t];
    }
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_read_buffer(w, BUF_TET_LAMBDA, 0, 8 * nt, tmp);
  }
  for (size_t t = 0; t < nt && s == PIOLA_OK; ++t) {
    lambda[2 * t] = tmp[t];
    lambda[2 * t + 1] = tmp[nt + t];
  }
  if (s == PIOLA_OK && strain != NULL && np > 0) {
    s = piola_ocl_read_buffer(w, BUF_PLASTIC_STRAIN, 0, 24 * np, tmp);
    for (size_t k = 0; k < np && s == PIOLA_OK; ++k) {
      for (size_t j = 0; j < 6; ++j) {
        strain[6 * k + j] = tmp[j * np + k];
      }
    }
  }
  free(tmp);
  return s;
}

piola_status piola_opencl_read_all(const piola_world *w, double *x, double *v, double *tet_m,
                                   double *lambda) {
  piola_status s = read_vertices(w, 0, piola_ocl(w)->vertex_count, x, v);
  return s == PIOLA_OK ? read_tets(w, tet_m, lambda, NULL) : s;
}

/* Reads the vertex-triangle contact lists of the last substep: per surface vertex its count, and
 * its PIOLA_CONTACTS_PER_VERTEX triangle entries (as piola_solver_contacts.contact_count,
 * contact_triangle), nsv surface vertices. */
static piola_status read_contact_lists(const piola_world *w, size_t nsv, cl_int *count,
                                       cl_int *triangle) {
  piola_status s = piola_ocl_read_buffer(w, BUF_CONTACT_COUNT, 0, 4 * nsv, count);
  return s == PIOLA_OK ? piola_ocl_read_buffer(w, BUF_CONTACT_TRI, 0,
                                               4 * PIOLA_CONTACTS_PER_VERTEX * nsv, triangle)
                       : s;
}

piola_status piola_opencl_read_prediction(const piola_world *w, double *gap, double *motion,
                                          uint8_t *constrained) {
  const piola_opencl *cl = piola_ocl(w);
  const size_t nv = (size_t)cl->vertex_count, nsv = (size_t)cl->sv_count,
               ne = (size_t)cl->edge_count, K = PIOLA_CONTACTS_PER_VERTEX,
               KE = PIOLA_CONTACTS_PER_EDGE;
  const bool contacts = piola_contacts_active(w) && nsv == (size_t)w->contacts.vertex_count;
  const bool edges =
      contacts && piola_edge_contacts_active(w) && ne == (size_t)w->contacts.edge_count;
  const size_t lists = contacts ? (1 + K) * nsv + (edges ? (1 + KE) * ne : 0) : 0;
  float *d = malloc(48 * (nv > 0 ? nv : 1));
  cl_int *list = malloc(sizeof(cl_int) * (lists + 1));
  if (d == NULL || list == NULL) {
    free(d);
    free(list);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* After a step d holds each vertex's displacement over the last substep (x - x^n) and d0 the
   * prediction's, so x - y = d - d0; support.w >= 0 where a collider pushed it in the substep. */
  float *d0 = d + 4 * nv, *support = d0 + 4 * nv;
  piola_status s = read_float4(w, BUF_D, 0, (int32_t)nv, d);
  if (s == PIOLA_OK) {
    s = read_float4(w, BUF_D0, 0, (int32_t)nv, d0);
  }
  if (s == PIOLA_OK) {
    s = read_float4(w, BUF_SUPPORT, 0, (int32_t)nv, support);
  }
  int32_t *count = list, *tri = list + nsv, *edge_count = tri + K * nsv,
          *edge_entry = edge_count + ne;
  if (s == PIOLA_OK && contacts) {
    s = read_contact_lists(w, nsv, count, tri);
    if (s == PIOLA_OK && edges) {
      s = piola_ocl_read_buffer(w, BUF_EDGE_CONTACT_COUNT, 0, 4 * ne, edge_count);
    }
    if (s == PIOLA_OK && edges) {
      s = piola_ocl_read_buffer(w, BUF_EDGE_CONTACT_ENTRY, 0, 4 * KE * ne, edge_entry);
    }
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nv; ++i) {
      for (size_t c = 0; c < 3; ++c) {
        gap[3 * i + c] = (double)d[4 * i + c] - (double)d0[4 * i + c];
        motion[3 * i + c] = (double)d[4 * i + c];
      }
      constrained[i] = w->collider_count > 0 && support[4 * i + 3] >= 0.0f;
    }
    if (contacts) {
      piola_contacts_mark(&w->contacts, count, tri, edges ? edge_count : NULL,
                          edges ? edge_entry : NULL, constrained);
    }
  }
  free(d);
  free(list);
  return s;
}

piola_status piola_opencl_pull(piola_world *w) {
  if (!piola_opencl_live(w)) {
    return PIOLA_OK;
  }
  /* Read into scratch and copy when every read worked: a failed pull leaves the host as it was. */
  const size_t nv = 3 * (size_t)piola_ocl(w)->vertex_count, nt = (size_t)piola_ocl(w)->tet_count,
               np = (size_t)piola_ocl(w)->plastic_count, nsv = (size_t)piola_ocl(w)->sv_count,
               K = PIOLA_CONTACTS_PER_VERTEX;
  double *tmp = malloc(sizeof(double) * (2 * nv + 11 * nt + 6 * np + 1));
  cl_int *lists = malloc(sizeof(cl_int) * ((1 + K) * nsv + 1));
  if (tmp == NULL || lists == NULL) {
    free(tmp);
    free(lists);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  double *x = tmp, *v = x + nv, *m = v + nv, *lambda = m + 9 * nt, *strain = lambda + 2 * nt;
  piola_status s = read_vertices(w, 0, piola_ocl(w)->vertex_count, x, v);
  if (s == PIOLA_OK) {
    s = read_tets(w, m, lambda, strain);
  }
  /* The contact lists of the last substep (what the next narrow phase takes as the previous). */
  if (s == PIOLA_OK) {
    s = read_contact_lists(w, nsv, lists, lists + nsv);
  }
  if (s == PIOLA_OK) {
    if (nsv > 0 && (size_t)w->contacts.vertex_count == nsv) {
      memcpy(w->contacts.contact_count, lists, sizeof(int32_t) * nsv);
      memcpy(w->contacts.contact_triangle, lists + nsv, sizeof(int32_t) * K * nsv);
    }
  }
  if (s == PIOLA_OK && nv > 0) { /* a world without bodies has no arrays to fill */
    memcpy(w->x, x, sizeof(double) * nv);
    memcpy(w->p, x, sizeof(double) * nv);
    memcpy(w->v, v, sizeof(double) * nv);
  }
  if (s == PIOLA_OK && nt > 0) {
    memcpy(w->solver.tet_m, m, sizeof(double) * 9 * nt);
    memcpy(w->solver.tet_lambda, lambda, sizeof(double) * 2 * nt);
  }
  if (s == PIOLA_OK && np > 0) {
    memcpy(w->solver.plastic_strain, strain, sizeof(double) * 6 * np);
  }
  free(tmp);
  free(lists);
  return s;
}

piola_status piola_opencl_pull_range(piola_world *w, int32_t first, int32_t count) {
  if (!piola_opencl_live(w)) {
    return PIOLA_OK;
  }
  const size_t n = 3 * (size_t)count;
  double *tmp = malloc(sizeof(double) * (2 * n + 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = read_vertices(w, first, count, tmp, tmp + n);
  if (s == PIOLA_OK) { /* all or nothing */
    memcpy(w->x + 3 * (size_t)first, tmp, sizeof(double) * n);
    memcpy(w->v + 3 * (size_t)first, tmp + n, sizeof(double) * n);
  }
  free(tmp);
  return s;
}

piola_status piola_opencl_push_range(piola_world *w, int32_t first, int32_t count, bool positions,
                                     bool velocities) {
  if (!piola_opencl_live(w)) {
    return PIOLA_OK; /* uploaded with everything before the next step */
  }
  float *tmp = malloc(16 * (size_t)(count > 0 ? count : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = PIOLA_OK;
  if (positions) {
    pack_vertices(w, w->x, true, first, count, tmp);
    s = piola_ocl_write_buffer(w, BUF_X, 16 * (size_t)first, 16 * (size_t)count, tmp);
  }
  if (s == PIOLA_OK && velocities) {
    pack_vertices(w, w->v, false, first, count, tmp);
    s = piola_ocl_write_buffer(w, BUF_V, 16 * (size_t)first, 16 * (size_t)count, tmp);
  }
  free(tmp);
  return s;
}
