/* Piola cloth bodies: a triangle mesh as a cloth body (Bender et al. 2014, Sec. 4.3): per
 * triangle its rest frame in the weft/warp directions (from the texture coordinates, else the
 * first edge), area and lumped masses; the isometric bending stencils of its interior edges
 * (Bergou et al. 2006); one coloring over the triangles and stencils together; its collision
 * surface (its own triangles, two-sided). The math is kernels/piola_cloth.h. */
#include "world.h"

#include "coloring.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  if (b->surface == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(b->surface, b->tris, sizeof *b->surface * 3 * (size_t)nt);
  b->surface_count = nt;
  return piola_body_surface_vertices(b, rest, b->tris, nt, 3);
}

/* Checks a cloth mesh and material and computes the body's rest data; touches nothing in the
 * world. *uv_fallback counts triangles whose u is constant (weft along the first edge). */
static piola_status prepare_cloth(const piola_world *w, const piola_tri_mesh *mesh,
                                  const piola_cloth_material *material, const float translation[3],
                                  piola_body_build *out, int32_t *uv_fallback) {
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
      piola_check_elements(log, "piola_world_add_cloth", "triangle", mesh->triangles, nt, 3, nv);
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
    piola_body_build_free(out);
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
      piola_body_build_free(out);
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
  if (s == PIOLA_OK && w->def.iteration_scheme == PIOLA_SCHEME_VBD) {
    b->vertex_colors = malloc(sizeof *b->vertex_colors * (size_t)nv);
    s = b->vertex_colors == NULL ? PIOLA_ERROR_OUT_OF_MEMORY
                                 : piola_color_vertices(item_vertices, items, nv, b->vertex_colors,
                                                        &b->vertex_color_count);
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
    piola_body_build_free(out);
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
  e->tri.damping = m->damping;
  e->bend.damping = m->damping;
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
  piola_body_build build;
  int32_t uv_fallback = 0;
  piola_status s = prepare_cloth(w, mesh, material, translation, &build, &uv_fallback);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_body *b = &build.body;
  /* Everything that can fail from here on happens before the world changes. */
  s = piola_world_begin_change(w);
  const int32_t slot = s == PIOLA_OK ? piola_world_reserve_body(w, b->vertex_count) : -1;
  int32_t material_index = -1;
  if (s == PIOLA_OK && (slot < 0 || (material_index = intern_cloth_material(w, material)) < 0)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s != PIOLA_OK) {
    piola_body_build_free(&build);
    return s;
  }
  b->material = 0; /* tet material: unused by a cloth body */
  b->cloth_material = material_index;
  const piola_body_id id = piola_world_insert_body(w, slot, &build);
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
    *out = id;
  }
  return PIOLA_OK;
}
