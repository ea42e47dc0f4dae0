/* Piola tet bodies: adding a tet mesh as a body (its rest shape Dm^-1 and volume per tet, lumped
 * masses, the coloring of its tets and their order within a color, its collision surface), the
 * slots and vertex ranges bodies take in the world, and removing a body. The deformation
 * gradient's rest matrix follows Bender et al. 2014, Sec. 4.1 (F = Ds Dm^-1); the coloring is
 * coloring.c's. Cloth bodies are added by cloth_body.c, and a body's vertex data is read and
 * written by body_io.c. Every call validates its input before it changes the world. */
#include "world.h"

#include "coloring.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grows the vertex arrays together; capacity changes only when all of them grew. */
static bool grow_vertices(piola_world *w, int32_t needed) {
  if (needed <= w->vertex_capacity) {
    return true;
  }
  int32_t cap = w->vertex_capacity;
  int32_t c;
  double **arrays[5] = {&w->x, &w->p, &w->v, &w->y, &w->x_start};
  for (int i = 0; i < 5; ++i) {
    c = cap;
    if (!piola_grow((void **)arrays[i], 3 * sizeof(double), needed, &c)) {
      return false;
    }
  }
  c = cap;
  if (!piola_grow((void **)&w->w, sizeof(double), needed, &c)) {
    return false;
  }
  c = cap;
  if (!piola_grow((void **)&w->collider_pushed, 1, needed, &c)) {
    return false;
  }
  c = cap;
  if (!piola_grow((void **)&w->support_collider, sizeof(int32_t), needed, &c)) {
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

void piola_body_free(piola_body *b) {
  free(b->tets);
  free(b->colors);
  free(b->vertex_colors);
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
  free(b->cluster_near_first);
  free(b->cluster_near_mask);
  free(b->tris);
  free(b->tri_dm_inv);
  free(b->tri_area);
  free(b->bends);
  free(b->bend_rest);
  free(b->cloth_color_start);
  free(b->cloth_by_color);
  memset(b, 0, sizeof *b);
}

piola_status piola_world_begin_change(piola_world *w) {
  piola_status s = w->ops->pull(w);
  if (s == PIOLA_OK) {
    piola_world_sync_plastic(w);
  }
  return s;
}

void piola_world_changed(piola_world *w) {
  w->tets_dirty = true;
  w->prediction_valid = false;
  w->ops->invalidate(w); /* piola_world_begin_change() made the host current */
}

piola_body *piola_world_body(const piola_world *w, piola_body_id id) {
  const int32_t slot = piola_id_pool_find(&w->body_ids, id.index1, id.generation);
  if (slot < 0) {
    PIOLA_MISUSE(w, "body id is valid");
    return NULL;
  }
  return &w->bodies[slot];
}

bool piola_body_is_valid(const piola_world *w, piola_body_id id) {
  return w != NULL && piola_id_pool_find(&w->body_ids, id.index1, id.generation) >= 0;
}

void piola_body_build_free(piola_body_build *b) {
  piola_body_free(&b->body);
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

/* The body's surface vertices (the corners of its surface triangles, ascending) with their rest
 * positions and reach (over `count` elements of `corners` vertices each). */
piola_status piola_body_surface_vertices(piola_body *b, const double *rest, const int32_t *elements,
                                         int32_t count, int corners) {
  bool *on = calloc((size_t)b->vertex_count, sizeof *on);
  double *reach = calloc((size_t)b->vertex_count, sizeof *reach);
  if (on == NULL || reach == NULL) {
    free(on);
    free(reach);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (size_t k = 0; k < 3 * (size_t)b->surface_count; ++k) {
    on[b->surface[k]] = true;
  }
  add_reach(elements, count, corners, rest, reach);
  int32_t nsv = 0;
  for (int32_t i = 0; i < b->vertex_count; ++i) {
    nsv += on[i];
  }
  b->surface_vertices = malloc(sizeof *b->surface_vertices * (size_t)(nsv > 0 ? nsv : 1));
  b->surface_rest = malloc(sizeof *b->surface_rest * 3 * (size_t)(nsv > 0 ? nsv : 1));
  b->surface_reach = malloc(sizeof *b->surface_reach * (size_t)(nsv > 0 ? nsv : 1));
  piola_status s = PIOLA_ERROR_OUT_OF_MEMORY;
  if (b->surface_vertices != NULL && b->surface_rest != NULL && b->surface_reach != NULL) {
    b->surface_vertex_count = nsv;
    for (int32_t i = 0, k = 0; i < b->vertex_count; ++i) {
      if (on[i]) {
        memcpy(b->surface_rest + 3 * (size_t)k, rest + 3 * (size_t)i, 3 * sizeof(double));
        b->surface_reach[k] = reach[i];
        b->surface_vertices[k++] = i;
      }
    }
    s = PIOLA_OK;
  }
  free(on);
  free(reach);
  return s;
}

/* The collision surface of a tet body: the faces that belong to exactly one tet (the boundary of
 * the mesh), outward, in tet order, and the vertices on them. */
piola_status piola_body_build_surface(piola_body *b, const double *rest) {
  const int32_t nf = 4 * b->tet_count;
  face_key *faces = malloc(sizeof *faces * (size_t)nf);
  bool *boundary = calloc((size_t)nf, sizeof *boundary);
  if (faces == NULL || boundary == NULL) {
    free(faces);
    free(boundary);
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
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  b->surface_count = count;
  for (int32_t i = 0, k = 0; i < nf; ++i) {
    if (boundary[i]) {
      const int32_t *q = b->tets + 4 * (size_t)(i / 4);
      for (int c = 0; c < 3; ++c) {
        b->surface[3 * (size_t)k + c] = q[tet_faces[i % 4][c]];
      }
      ++k;
    }
  }
  free(boundary);
  return piola_body_surface_vertices(b, rest, b->tets, b->tet_count, 4);
}

/* Whether each of the count elements (tets or triangles: `corners` vertex indices each) names
 * distinct vertices in [0, nv); else logs which (as caller `fn`) and says
 * PIOLA_ERROR_INVALID_MESH. */
piola_status piola_check_elements(const piola_logger *log, const char *fn, const char *kind,
                                  const int32_t *elements, int32_t count, int corners, int32_t nv) {
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
                                 piola_body_build *out) {
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
      piola_check_elements(log, "piola_world_add_tet_body", "tet", mesh->tets, nt, 4, nv);
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
    piola_body_build_free(out);
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
      piola_body_build_free(out);
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
      piola_body_build_free(out);
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
        piola_body_build_free(out);
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
  if (s == PIOLA_OK && w->def.iteration_scheme == PIOLA_SCHEME_VBD) {
    b->vertex_colors = malloc(sizeof *b->vertex_colors * (size_t)nv);
    s = b->vertex_colors == NULL
            ? PIOLA_ERROR_OUT_OF_MEMORY
            : piola_color_vertices(b->tets, nt, nv, b->vertex_colors, &b->vertex_color_count);
  }
  if (s == PIOLA_OK) {
    s = piola_body_build_surface(b, out->rest);
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
    piola_body_build_free(out);
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

int32_t piola_world_reserve_body(piola_world *w, int32_t vertex_count) {
  const int32_t slot = piola_id_pool_next(&w->body_ids);
  if (slot < 0 ||
      !piola_grow((void **)&w->bodies, sizeof *w->bodies, slot + 1, &w->body_capacity) ||
      !grow_vertices(w, w->vertex_count + vertex_count)) {
    return -1;
  }
  return slot;
}

piola_body_id piola_world_insert_body(piola_world *w, int32_t slot, piola_body_build *build) {
  piola_body *b = &build->body;
  b->vertex_offset = w->vertex_count;
  w->bodies[slot] = *b;
  for (int32_t i = 0; i < b->vertex_count; ++i) {
    size_t g = (size_t)(b->vertex_offset + i);
    for (int k = 0; k < 3; ++k) {
      w->x[3 * g + k] = build->rest[3 * (size_t)i + k];
      w->p[3 * g + k] = build->rest[3 * (size_t)i + k];
      w->v[3 * g + k] = 0.0;
    }
    w->w[g] = build->inv_mass[i];
    if (w->f != NULL) {
      w->f[3 * g] = w->f[3 * g + 1] = w->f[3 * g + 2] = 0.0;
    }
  }
  w->vertex_count += b->vertex_count;
  w->body_count++;
  piola_world_changed(w);
  free(build->rest);
  free(build->inv_mass);
  build->rest = build->inv_mass = NULL;
  const piola_body_id id = {slot + 1, piola_id_pool_take(&w->body_ids, slot)};
  return id;
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
  piola_body_build build;
  piola_status s = prepare_body(w, mesh, material, translation, &build);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_body *b = &build.body;
  /* Everything that can fail from here on happens before the world changes. */
  s = piola_world_begin_change(w);
  const int32_t slot = s == PIOLA_OK ? piola_world_reserve_body(w, b->vertex_count) : -1;
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
    if (slot < 0 || (plastic && (b->plastic_strain == NULL || b->m_eff == NULL)) ||
        (material_index = intern_material(w, material)) < 0) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (s != PIOLA_OK) {
    piola_body_build_free(&build);
    return s;
  }
  b->material = material_index;
  const piola_body_id id = piola_world_insert_body(w, slot, &build);
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
    *out = id;
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
  piola_status s = piola_world_begin_change(w);
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
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    if (piola_id_pool_alive(&w->body_ids, i) && w->bodies[i].vertex_offset > first) {
      w->bodies[i].vertex_offset -= n;
    }
  }
  w->vertex_count -= n;
  piola_body_free(b);
  piola_id_pool_free(&w->body_ids, (int32_t)(b - w->bodies));
  w->body_count--;
  piola_world_changed(w);
  return PIOLA_OK;
}

int32_t piola_body_get_vertex_count(const piola_world *w, piola_body_id id) {
  if (w == NULL) {
    return -1;
  }
  const piola_body *b = piola_world_body(w, id);
  return b != NULL ? b->vertex_count : -1;
}
