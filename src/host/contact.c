/* Piola contacts on the host: the collision surfaces of the live bodies gathered into the
 * solver's arrays, and the CPU reference's contact stages (broad phase, narrow phase, contact
 * solve) in double precision, through the functions of kernels/piola_contact.h that the
 * OpenCL kernels call too (Bridson, Fedkiw, Anderson 2002 for the thickness-based detection;
 * Teschner et al. 2003 for the hashed grid; kernels/piola_contact.h has the details).
 *
 * The contacts a vertex keeps do not depend on the order in which the grid is visited (each
 * vertex keeps its nearest triangles, ties broken by index), so the reference's sequential
 * counting sort and the device's parallel one find the same contacts. The solve is Jacobi with
 * mass splitting (piola_contact_split), in two passes: every contact is projected from the same
 * positions and writes its four corrections to its own slots; each surface vertex then gathers
 * its own slots and the slots that name it as a triangle corner, in ascending order, and from
 * the measuring pass takes its mass split, from the projecting pass its motion. No atomics, a
 * fixed summation order: the same result every run.
 */
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define K PIOLA_CONTACTS_PER_VERTEX

/* ---- Spatial order of the solver's surface arrays ----------------------------------------- */

static int compare_keyed(const void *pa, const void *pb) {
  const piola_keyed_index *a = pa, *b = pb;
  if (a->key != b->key) {
    return a->key < b->key ? -1 : 1;
  }
  return (a->index > b->index) - (a->index < b->index);
}

/* The low 21 bits of v spread to every third bit. */
static uint64_t spread_bits(uint64_t v) {
  v &= 0x1fffffu;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

/* The Morton key (Z-order) of point p in the cube [lo, lo + size]^3, 21 bits per axis. */
static uint64_t morton_key(const double p[3], const double lo[3], double size) {
  uint64_t key = 0;
  for (int k = 0; k < 3; ++k) {
    const double f = size > 0.0 ? fmin(fmax((p[k] - lo[k]) / size, 0.0), 1.0) : 0.0;
    key |= spread_bits((uint64_t)(f * 2097151.0)) << k;
  }
  return key;
}

/* Applied to each body's surface vertices (rest positions) and triangles (rest centroids): a
 * vertex's grid cells and the triangles it meets then lie near each other in memory, and so do
 * those of neighbouring work-items (the narrow phase runs faster than in the mesh's order:
 * bench/LOG.md); and to its tets within each color (body.c). */
void piola_spatial_order(const double *points, int32_t n, piola_keyed_index *order) {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t i = 0; i < n; ++i) {
    for (int j = 0; j < 3; ++j) {
      lo[j] = fmin(lo[j], points[3 * (size_t)i + j]);
      hi[j] = fmax(hi[j], points[3 * (size_t)i + j]);
    }
  }
  const double size = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
  for (int32_t i = 0; i < n; ++i) {
    order[i].key = morton_key(points + 3 * (size_t)i, lo, size);
    order[i].index = i;
  }
  qsort(order, (size_t)n, sizeof *order, compare_keyed);
}

void piola_centroids(const double *points, const int32_t *elements, int corners, const int32_t *map,
                     int32_t n, double *centroid) {
  for (int32_t e = 0; e < n; ++e) {
    for (int j = 0; j < 3; ++j) {
      double sum = 0.0;
      for (int k = 0; k < corners; ++k) {
        const int32_t v = elements[(size_t)corners * (size_t)e + (size_t)k];
        sum += points[3 * (size_t)(map != NULL ? map[v] : v) + j];
      }
      centroid[3 * (size_t)e + j] = sum / corners;
    }
  }
}

/* Point i of an array of 3 doubles per point. */
/* Whether triangle t is too near surface vertex sv in the rest shape for the two to touch, by
 * a margin: 0.99 of piola_contact_self_bound(), so that the kernels' float evaluation of
 * piola_contact_self_allowed() rejects the pair too. */
static bool rest_near(const piola_solver_contacts *c, int32_t sv, int32_t t, double thickness) {
  const int32_t *q = c->triangle + 3 * (size_t)t;
  const double *r = c->vertex_rest;
  return piola_point_triangle_distance(piola_vertex_at(r, sv), piola_vertex_at(r, q[0]),
                                       piola_vertex_at(r, q[1]), piola_vertex_at(r, q[2])) <=
         0.99 * piola_contact_self_bound(c->vertex_reach[sv], thickness);
}

/* The bits of window mask m (from triangle first) that fall in the window from `other`. */
static uint64_t window_overlap(uint64_t m, int32_t first, int32_t other) {
  const int32_t shift = other - first;
  if (shift <= -PIOLA_NEAR_WINDOW || shift >= PIOLA_NEAR_WINDOW) {
    return 0;
  }
  return shift >= 0 ? m >> shift : m << -shift;
}

/* Each surface vertex's near windows (vertex_near, vertex_near_mask) among the triangles
 * [t0, t1) of its body (its vertices are [sv0, sv1)): of the windows of PIOLA_NEAR_WINDOW
 * consecutive triangles centred on the triangles it is a corner of, the one that marks the most
 * triangles rest_near() it, and the one that adds the most to that. Every pair marked fails
 * piola_contact_self_allowed(), so the narrow phase may skip them before any other test: with
 * the triangles in spatial order the windows hold most of the vertex's own neighbourhood (most of
 * the triangles within the bound of a surface vertex), the most of the
 * pairs whose boxes overlap. A triangle is tested once per vertex, and one whose rest sphere
 * (centroid, farthest corner) lies beyond the bound without the exact distance. False when
 * out of memory. */
static bool near_windows(piola_solver_contacts *c, int32_t sv0, int32_t sv1, int32_t t0, int32_t t1,
                         double thickness) {
  enum { MOST = 32 }; /* windows considered per vertex, at most */
  const size_t nt = (size_t)(t1 - t0);
  int32_t *start, *incident; /* the triangles each vertex is a corner of, from t0 */
  if (!piola_vertex_triangles(c->triangle + 3 * (size_t)t0, t1 - t0, sv0, sv1 - sv0, &start,
                              &incident)) {
    return false;
  }
  int32_t *stamp = malloc(sizeof *stamp * (nt + 1)); /* the vertex that tested the triangle */
  unsigned char *near = malloc(nt + 1);
  double *sphere = malloc(sizeof *sphere * (4 * nt + 1));
  if (!stamp || !near || !sphere) {
    free(start);
    free(incident);
    free(stamp);
    free(near);
    free(sphere);
    return false;
  }
  /* The triangles' rest spheres. */
  for (size_t t = 0; t < nt; ++t) {
    const int32_t *q = c->triangle + 3 * ((size_t)t0 + t);
    const piola_v3 a = piola_vertex_at(c->vertex_rest, q[0]),
                   b = piola_vertex_at(c->vertex_rest, q[1]),
                   d = piola_vertex_at(c->vertex_rest, q[2]);
    const piola_v3 centre = piola_v3_scale(piola_v3_add(piola_v3_add(a, b), d), 1.0 / 3.0);
    const piola_v3 ea = piola_v3_sub(a, centre), eb = piola_v3_sub(b, centre),
                   ed = piola_v3_sub(d, centre);
    sphere[4 * t] = centre.x;
    sphere[4 * t + 1] = centre.y;
    sphere[4 * t + 2] = centre.z;
    sphere[4 * t + 3] =
        sqrt(fmax(piola_v3_dot(ea, ea), fmax(piola_v3_dot(eb, eb), piola_v3_dot(ed, ed))));
    stamp[t] = -1;
  }
  const int32_t last_first = t1 - PIOLA_NEAR_WINDOW > t0 ? t1 - PIOLA_NEAR_WINDOW : t0;
  for (int32_t sv = sv0; sv < sv1; ++sv) {
    const piola_v3 rest = piola_vertex_at(c->vertex_rest, sv);
    const double bound = 0.99 * piola_contact_self_bound(c->vertex_reach[sv], thickness);
    int32_t first[MOST];
    uint64_t mask[MOST];
    int n = 0;
    for (int32_t e = start[sv - sv0]; e < start[sv - sv0 + 1] && n < MOST; ++e) {
      int32_t f = t0 + incident[e] - PIOLA_NEAR_WINDOW / 2;
      f = f < t0 ? t0 : f > last_first ? last_first : f;
      bool seen = false;
      for (int j = 0; j < n; ++j) {
        seen |= first[j] == f;
      }
      if (seen) {
        continue;
      }
      uint64_t m = 0;
      for (int32_t k = 0; k < PIOLA_NEAR_WINDOW && f + k < t1; ++k) {
        const size_t t = (size_t)(f + k - t0);
        if (stamp[t] != sv) { /* beyond the bound by its sphere, else by its distance */
          const double *sp = sphere + 4 * t;
          const piola_v3 dc = piola_v3_sub(rest, piola_v3_make(sp[0], sp[1], sp[2]));
          near[t] =
              sqrt(piola_v3_dot(dc, dc)) - sp[3] <= bound && rest_near(c, sv, f + k, thickness);
          stamp[t] = sv;
        }
        m |= (uint64_t)near[t] << k;
      }
      first[n] = f;
      mask[n++] = m;
    }
    int best = -1, second = -1, most = 0, gain = 0;
    for (int j = 0; j < n; ++j) {
      if (piola_popcount64(mask[j]) > most) {
        most = piola_popcount64(mask[j]);
        best = j;
      }
    }
    for (int j = 0; j < n && best >= 0; ++j) {
      const int g = piola_popcount64(mask[j] & ~window_overlap(mask[best], first[best], first[j]));
      if (g > gain) {
        gain = g;
        second = j;
      }
    }
    c->vertex_near[2 * (size_t)sv] = best >= 0 ? first[best] : t0;
    c->vertex_near_mask[2 * (size_t)sv] = best >= 0 ? mask[best] : 0;
    c->vertex_near[2 * (size_t)sv + 1] = second >= 0 ? first[second] : t0;
    c->vertex_near_mask[2 * (size_t)sv + 1] = second >= 0 ? mask[second] : 0;
  }
  free(sphere);
  free(near);
  free(stamp);
  free(incident);
  free(start);
  return true;
}

/* Body b's near windows into the solver's arrays, its surface vertices from sv0 and its
 * triangles from t0 there (in spatial order): computed once (near_windows) and kept with the
 * body, whose rest shape does not change. False when out of memory. */
static bool body_near_windows(piola_solver_contacts *c, piola_body *b, int32_t sv0, int32_t t0,
                              double thickness) {
  const size_t n = 2 * (size_t)b->surface_vertex_count;
  if (b->near_first == NULL) {
    int32_t *first = malloc(sizeof *first * (n > 0 ? n : 1));
    uint64_t *mask = malloc(sizeof *mask * (n > 0 ? n : 1));
    if (first == NULL || mask == NULL ||
        !near_windows(c, sv0, sv0 + b->surface_vertex_count, t0, t0 + b->surface_count,
                      thickness)) {
      free(first);
      free(mask);
      return false;
    }
    for (size_t k = 0; k < n; ++k) {
      first[k] = c->vertex_near[2 * (size_t)sv0 + k] - t0;
      mask[k] = c->vertex_near_mask[2 * (size_t)sv0 + k];
    }
    b->near_first = first;
    b->near_mask = mask;
    return true;
  }
  for (size_t k = 0; k < n; ++k) {
    c->vertex_near[2 * (size_t)sv0 + k] = b->near_first[k] + t0;
    c->vertex_near_mask[2 * (size_t)sv0 + k] = b->near_mask[k];
  }
  return true;
}

/* The live bodies' cluster near windows into the solver's arrays (the clusters of dense body d are
 * body_cluster[d] .. body_cluster[d + 1] - 1): computed once per body
 * (piola_cluster_near_windows) and kept with it, as body_near_windows does. False when out of
 * memory. */
static bool bodies_cluster_windows(piola_world *w, piola_solver_contacts *c,
                                   const int32_t *body_cluster) {
  const double thickness = (double)w->def.contact_thickness;
  for (int32_t i = 0, dense = 0; i < w->body_ids.count; ++i) {
    if (!piola_id_pool_alive(&w->body_ids, i)) {
      continue;
    }
    piola_body *b = &w->bodies[i];
    const int32_t a0 = body_cluster[dense], n = body_cluster[dense + 1] - a0;
    dense++;
    if (b->cluster_near_first == NULL) {
      int32_t *first = malloc(sizeof *first * (size_t)(n > 0 ? n : 1));
      uint64_t *mask = malloc(sizeof *mask * (size_t)(n > 0 ? n : 1));
      if (first == NULL || mask == NULL) {
        free(first);
        free(mask);
        return false;
      }
      piola_cluster_near_windows(c, a0, a0 + n, thickness);
      for (int32_t k = 0; k < n; ++k) {
        first[k] = c->cluster_near[a0 + k] - a0;
        mask[k] = c->cluster_near_mask[a0 + k];
      }
      b->cluster_near_first = first;
      b->cluster_near_mask = mask;
      continue;
    }
    for (int32_t k = 0; k < n; ++k) {
      c->cluster_near[a0 + k] = b->cluster_near_first[k] + a0;
      c->cluster_near_mask[a0 + k] = b->cluster_near_mask[k];
    }
  }
  return true;
}

/* The rest box of triangle t (no thickness). */
static piola_box rest_box(const piola_solver_contacts *c, int32_t t) {
  const int32_t *q = c->triangle + 3 * (size_t)t;
  const piola_v3 a = piola_vertex_at(c->vertex_rest, q[0]),
                 b = piola_vertex_at(c->vertex_rest, q[1]),
                 d = piola_vertex_at(c->vertex_rest, q[2]);
  return piola_triangle_box(a, b, d, a, b, d, 0.0);
}

/* The grid's clusters of one body's triangles t0 .. t1 - 1 (in spatial order): runs of up to
 * PIOLA_CLUSTER_TRIANGLES consecutive triangles, each run ending before the union of their rest
 * boxes would grow larger than the body's largest triangle box, so that no cluster enlarges the
 * grid's cells beyond what the body's triangles do. */
static void form_clusters(piola_solver_contacts *c, int32_t t0, int32_t t1) {
  double largest = 0.0;
  for (int32_t t = t0; t < t1; ++t) {
    largest = fmax(largest, piola_box_extent(rest_box(c, t)));
  }
  for (int32_t t = t0; t < t1;) {
    piola_box u = rest_box(c, t);
    int32_t end = t + 1;
    while (end < t1 && end - t < PIOLA_CLUSTER_TRIANGLES) {
      const piola_box r = rest_box(c, end);
      const piola_box grown = piola_box_union(u, r);
      if (piola_box_extent(grown) > largest) {
        break;
      }
      u = grown;
      end++;
    }
    c->cluster_first[c->cluster_count++] = t;
    t = end;
  }
}

void piola_contacts_free(piola_solver_contacts *c) {
  free(c->vertex);
  free(c->vertex_body);
  free(c->vertex_rest);
  free(c->vertex_reach);
  free(c->vertex_near);
  free(c->vertex_near_mask);
  free(c->triangle);
  free(c->triangle_body);
  free(c->cluster_first);
  free(c->body_filter);
  free(c->triangle_box);
  free(c->cluster_box);
  free(c->bucket_start);
  free(c->bucket_clusters);
  free(c->bucket_cursor);
  free(c->vertex_cursor);
  free(c->contact_count);
  free(c->contact_triangle);
  free(c->previous_count);
  free(c->previous_triangle);
  free(c->mass_split);
  free(c->delta);
  free(c->corner_start);
  free(c->corner_entry);
  free(c->turned);
  piola_contact_edges_free(c);
  memset(c, 0, sizeof *c);
}

bool piola_contacts_active(const piola_world *w) {
  return w->def.contacts && w->contacts.triangle_count > 0;
}

void piola_contacts_mark(const piola_solver_contacts *c, const int32_t *count,
                         const int32_t *triangle, const int32_t *edge_count,
                         const int32_t *edge_entry, uint8_t *mark) {
  const int32_t per_edge = PIOLA_CONTACTS_PER_EDGE;
  for (int32_t sv = 0; sv < c->vertex_count; ++sv) {
    for (int32_t k = 0; k < count[sv] && k < K; ++k) {
      const int32_t *q =
          c->triangle + 3 * (size_t)piola_contact_entry_triangle(triangle[K * (size_t)sv + k]);
      mark[c->vertex[sv]] = 1;
      for (int corner = 0; corner < 3; ++corner) {
        mark[c->vertex[q[corner]]] = 1;
      }
    }
  }
  for (int32_t e = 0; edge_count != NULL && e < c->edge_count; ++e) {
    for (int32_t k = 0; k < edge_count[e] && k < per_edge; ++k) {
      const int32_t f = edge_entry[per_edge * (size_t)e + k] >> 1;
      const int32_t ends[4] = {c->edge[4 * (size_t)e], c->edge[4 * (size_t)e + 1],
                               c->edge[4 * (size_t)f], c->edge[4 * (size_t)f + 1]};
      for (int j = 0; j < 4; ++j) {
        mark[c->vertex[ends[j]]] = 1;
      }
    }
  }
}

bool piola_contacts_any_self(const piola_solver_contacts *c) {
  for (int32_t b = 0; b < c->body_count; ++b) {
    if (c->body_filter[4 * (size_t)b + 2] != 0u) {
      return true;
    }
  }
  return false;
}

piola_status piola_contacts_build(piola_world *w) {
  piola_solver_contacts c;
  memset(&c, 0, sizeof c);
  int32_t largest = 0; /* surface vertices or triangles of one body, the most */
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (piola_id_pool_alive(&w->body_ids, i)) {
      c.vertex_count += b->surface_vertex_count;
      c.triangle_count += b->surface_count;
      c.body_count++;
      largest = b->surface_vertex_count > largest ? b->surface_vertex_count : largest;
      largest = b->surface_count > largest ? b->surface_count : largest;
    }
  }
  const size_t nv = (size_t)(c.vertex_count > 0 ? c.vertex_count : 1);
  const size_t nt = (size_t)(c.triangle_count > 0 ? c.triangle_count : 1);
  c.vertex = malloc(sizeof *c.vertex * nv);
  c.vertex_body = malloc(sizeof *c.vertex_body * nv);
  c.vertex_rest = malloc(sizeof *c.vertex_rest * 3 * nv);
  c.vertex_reach = malloc(sizeof *c.vertex_reach * nv);
  c.vertex_near = malloc(sizeof *c.vertex_near * 2 * nv);
  c.vertex_near_mask = malloc(sizeof *c.vertex_near_mask * 2 * nv);
  c.triangle = malloc(sizeof *c.triangle * 3 * nt);
  c.triangle_body = malloc(sizeof *c.triangle_body * nt);
  c.body_filter = malloc(sizeof *c.body_filter * 4 * (size_t)(c.body_count > 0 ? c.body_count : 1));
  c.triangle_box = malloc(sizeof *c.triangle_box * 6 * nt);
  c.cluster_first = malloc(sizeof *c.cluster_first * (nt + 1));
  c.vertex_cursor = malloc(sizeof *c.vertex_cursor * nv);
  c.contact_count = calloc(nv, sizeof *c.contact_count);
  c.contact_triangle = calloc(K * nv, sizeof *c.contact_triangle);
  c.previous_count = calloc(nv, sizeof *c.previous_count);
  c.previous_triangle = calloc(K * nv, sizeof *c.previous_triangle);
  c.mass_split = calloc(nv, sizeof *c.mass_split);
  c.delta = malloc(sizeof *c.delta * 16 * K * nv);
  c.corner_start = malloc(sizeof *c.corner_start * (nv + 1));
  c.corner_entry = malloc(sizeof *c.corner_entry * 3 * K * nv);
  c.turned = calloc((size_t)(w->vertex_count > 0 ? w->vertex_count : 1), sizeof *c.turned);
  int32_t *local_to_sv =
      malloc(sizeof *local_to_sv * (size_t)(w->vertex_count > 0 ? w->vertex_count : 1));
  piola_keyed_index *order = malloc(sizeof *order * (size_t)(largest > 0 ? largest : 1));
  double *centroid = malloc(sizeof *centroid * 3 * (size_t)(largest > 0 ? largest : 1));
  int32_t *body_cluster = malloc(sizeof *body_cluster * ((size_t)c.body_count + 1));
  if (!c.vertex || !c.vertex_body || !c.vertex_rest || !c.vertex_reach || !c.vertex_near ||
      !c.vertex_near_mask || !c.triangle || !c.triangle_body || !c.body_filter || !c.triangle_box ||
      !c.cluster_first || !c.vertex_cursor || !c.contact_count || !c.contact_triangle ||
      !c.previous_count || !c.previous_triangle || !c.mass_split || !c.delta || !c.corner_start ||
      !c.corner_entry || !c.turned || !local_to_sv || !order || !centroid || !body_cluster) {
    free(local_to_sv);
    free(order);
    free(centroid);
    free(body_cluster);
    piola_contacts_free(&c);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t sv = 0, tri = 0;
  for (int32_t i = 0, dense = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (!piola_id_pool_alive(&w->body_ids, i)) {
      continue;
    }
    /* The body's surface vertices and triangles, each in spatial order. */
    piola_spatial_order(b->surface_rest, b->surface_vertex_count, order);
    for (int32_t m = 0; m < b->surface_vertex_count; ++m, ++sv) {
      const int32_t k = order[m].index;
      c.vertex[sv] = b->vertex_offset + b->surface_vertices[k];
      c.vertex_body[sv] = dense;
      memcpy(c.vertex_rest + 3 * (size_t)sv, b->surface_rest + 3 * (size_t)k, 3 * sizeof(double));
      c.vertex_reach[sv] = b->surface_reach[k];
      local_to_sv[b->surface_vertices[k]] = sv;
    }
    piola_centroids(c.vertex_rest, b->surface, 3, local_to_sv, b->surface_count, centroid);
    piola_spatial_order(centroid, b->surface_count, order);
    for (int32_t m = 0; m < b->surface_count; ++m, ++tri) {
      const int32_t t = order[m].index;
      for (int k = 0; k < 3; ++k) {
        c.triangle[3 * (size_t)tri + k] = local_to_sv[b->surface[3 * (size_t)t + k]];
      }
      c.triangle_body[tri] = dense;
    }
    if (!body_near_windows(&c, &w->bodies[i], sv - b->surface_vertex_count, tri - b->surface_count,
                           (double)w->def.contact_thickness)) {
      free(local_to_sv);
      free(order);
      free(centroid);
      free(body_cluster);
      piola_contacts_free(&c);
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    body_cluster[dense] = c.cluster_count;
    form_clusters(&c, tri - b->surface_count, tri);
    c.body_filter[4 * (size_t)dense] = b->collision_group;
    c.body_filter[4 * (size_t)dense + 1] = b->collision_mask;
    c.body_filter[4 * (size_t)dense + 2] = b->self_collision ? 1u : 0u;
    c.body_filter[4 * (size_t)dense + 3] = b->cloth ? 1u : 0u; /* two-sided triangles */
    dense++;
  }
  free(local_to_sv);
  free(order);
  free(centroid);
  c.cluster_first[c.cluster_count] = c.triangle_count;
  body_cluster[c.body_count] = c.cluster_count;
  const bool built = piola_contact_edges_build(&c) && bodies_cluster_windows(w, &c, body_cluster);
  free(body_cluster);
  if (!built) {
    piola_contacts_free(&c);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* The grid's hash table: at least twice as many buckets as clusters, a power of two. */
  int32_t buckets = 16;
  while (buckets < 2 * c.cluster_count && buckets < (1 << 30)) {
    buckets *= 2;
  }
  c.bucket_mask = buckets - 1;
  const size_t nc = (size_t)(c.cluster_count > 0 ? c.cluster_count : 1);
  c.cluster_box = malloc(sizeof *c.cluster_box * 6 * nc);
  c.bucket_start = malloc(sizeof *c.bucket_start * ((size_t)buckets + 1));
  c.bucket_clusters = malloc(sizeof *c.bucket_clusters * PIOLA_CELLS_PER_CLUSTER * nc);
  c.bucket_cursor = malloc(sizeof *c.bucket_cursor * (size_t)buckets);
  if (!c.cluster_box || !c.bucket_start || !c.bucket_clusters || !c.bucket_cursor) {
    piola_contacts_free(&c);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_contacts_free(&w->contacts);
  w->contacts = c;
  return PIOLA_OK;
}

/* ---- CPU reference ------------------------------------------------------------------- */

static void store_box(double *a, int32_t i, piola_box r) {
  double *o = a + 6 * (size_t)i;
  o[0] = r.lo.x;
  o[1] = r.lo.y;
  o[2] = r.lo.z;
  o[3] = r.hi.x;
  o[4] = r.hi.y;
  o[5] = r.hi.z;
}

/* The vertex box of surface vertex sv. */
static piola_box vertex_box(const piola_world *w, int32_t sv) {
  int32_t v = w->contacts.vertex[sv];
  return piola_vertex_box(piola_vertex_at(w->x, v), piola_vertex_at(w->p, v),
                          (double)w->def.contact_thickness);
}

/* The broad phase's boxes of clusters [begin, end) and their triangles, and the chunk's largest
 * cluster box; of surface vertices, the chunk's largest vertex box. */
typedef struct boxes_job {
  piola_world *w;
  double extent[PIOLA_MAX_CPU_THREADS];
} boxes_job;

static void cluster_boxes_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  boxes_job *job = ctx;
  piola_world *w = job->w;
  piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)w->def.contact_thickness;
  double cluster_extent = 0.0;
  for (int32_t i = begin; i < end; ++i) {
    piola_box u = {piola_v3_make(0.0, 0.0, 0.0),
                   piola_v3_make(0.0, 0.0, 0.0)}; /* set at t = first */
    for (int32_t t = c->cluster_first[i]; t < c->cluster_first[i + 1]; ++t) {
      const int32_t *q = c->triangle + 3 * (size_t)t;
      int32_t a = c->vertex[q[0]], b = c->vertex[q[1]], d = c->vertex[q[2]];
      piola_box r = piola_triangle_box(
          piola_vertex_at(w->x, a), piola_vertex_at(w->x, b), piola_vertex_at(w->x, d),
          piola_vertex_at(w->p, a), piola_vertex_at(w->p, b), piola_vertex_at(w->p, d), thickness);
      store_box(c->triangle_box, t, r);
      u = t == c->cluster_first[i] ? r : piola_box_union(u, r);
    }
    store_box(c->cluster_box, i, u);
    cluster_extent = fmax(cluster_extent, piola_box_extent(u));
  }
  job->extent[chunk] = cluster_extent;
}

static void vertex_boxes_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  boxes_job *job = ctx;
  double vertex_extent = 0.0;
  for (int32_t sv = begin; sv < end; ++sv) {
    vertex_extent = fmax(vertex_extent, piola_box_extent(vertex_box(job->w, sv)));
  }
  job->extent[chunk] = vertex_extent;
}

/* The largest of the chunks' extents (a maximum: the same in any order). */
static double chunk_max(const boxes_job *job, const piola_pool *pool) {
  double m = 0.0;
  for (int32_t k = 0; k < piola_pool_threads(pool); ++k) {
    m = fmax(m, job->extent[k]);
  }
  return m;
}

void piola_cpu_broad_phase(piola_world *w) {
  piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)w->def.contact_thickness;
  /* Boxes (the triangles', their clusters'), and the cell size and the margin from the
   * largest cluster box and the largest vertex box. */
  boxes_job job = {.w = w};
  piola_pool_for(w->pool, c->cluster_count, 256, cluster_boxes_range, &job);
  const double cluster_extent = chunk_max(&job, w->pool);
  memset(job.extent, 0, sizeof job.extent);
  piola_pool_for(w->pool, c->vertex_count, 1024, vertex_boxes_range, &job);
  const double vertex_extent = chunk_max(&job, w->pool);
  c->cell = piola_cell_size(cluster_extent, vertex_extent, thickness);
  c->margin = piola_grid_margin(vertex_extent, thickness);
  const double inv_cell = 1.0 / c->cell;
  /* Counting sort of (cluster, cell) entries by the bucket of the cell, clusters in
   * ascending order within a bucket: count, scan, place. */
  const int32_t buckets = c->bucket_mask + 1;
  memset(c->bucket_start, 0, sizeof *c->bucket_start * ((size_t)buckets + 1));
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      for (int32_t k = 0; k < buckets; ++k) {
        c->bucket_start[k + 1] += c->bucket_start[k];
      }
      memcpy(c->bucket_cursor, c->bucket_start, sizeof *c->bucket_cursor * (size_t)buckets);
    }
    for (int32_t i = 0; i < c->cluster_count; ++i) {
      piola_int bucket[PIOLA_CELLS_PER_CLUSTER];
      const int n = piola_cluster_buckets(piola_box_at(c->cluster_box, i), c->margin, inv_cell,
                                          c->bucket_mask, bucket);
      for (int e = 0; e < n; ++e) {
        if (pass == 0) {
          c->bucket_start[bucket[e] + 1]++;
        } else {
          c->bucket_clusters[c->bucket_cursor[bucket[e]]++] = i;
        }
      }
    }
  }
}

/* Whether surface vertex sv may touch triangle t by the bodies' filters and self-collision
 * (of a body's pairs with itself, those with a corner near the vertex in the rest shape are
 * rejected here; the full rest-distance rule is checked after the geometric test). */
static bool pair_allowed(const piola_solver_contacts *c, int32_t sv, int32_t t, double thickness) {
  const int32_t ba = c->vertex_body[sv], bb = c->triangle_body[t];
  const int32_t *q = c->triangle + 3 * (size_t)t;
  if (ba != bb) {
    const uint32_t *fa = c->body_filter + 4 * (size_t)ba, *fb = c->body_filter + 4 * (size_t)bb;
    return piola_contact_bodies_collide(fa[0], fa[1], fb[0], fb[1]);
  }
  return c->body_filter[4 * (size_t)ba + 2] != 0u && q[0] != sv && q[1] != sv && q[2] != sv &&
         !piola_contact_self_near(
             piola_vertex_at(c->vertex_rest, sv), piola_vertex_at(c->vertex_rest, q[0]),
             piola_vertex_at(c->vertex_rest, q[1]), piola_vertex_at(c->vertex_rest, q[2]),
             c->vertex_reach[sv], thickness);
}

/* The narrow phase's test of surface vertex sv against triangle t, whose boxes overlap and
 * whose bodies may touch: a contact found is counted in *found and kept among the vertex's
 * nearest (keys, tris, *kept). */
static void test_pair(const piola_world *w, int32_t sv, int32_t t, double *keys, piola_int *tris,
                      piola_int *kept, int32_t *found) {
  const piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)w->def.contact_thickness;
  const int32_t v = c->vertex[sv];
  const piola_v3 x = piola_vertex_at(w->x, v), p = piola_vertex_at(w->p, v);
  const int32_t *q = c->triangle + 3 * (size_t)t;
  const int32_t a = c->vertex[q[0]];
  int32_t b = c->vertex[q[1]], d = c->vertex[q[2]];
  int persistent;
  const piola_int side = piola_contact_side(
      x, piola_vertex_at(w->x, a), piola_vertex_at(w->x, b), piola_vertex_at(w->x, d),
      c->previous_triangle + K * (size_t)sv, c->previous_count[sv], t,
      c->body_filter[4 * (size_t)c->triangle_body[t] + 3] != 0u, &persistent);
  if (side) { /* met from the back: corners b and c swapped */
    const int32_t swap_corner = b;
    b = d;
    d = swap_corner;
  }
  const bool same_body = c->triangle_body[t] == c->vertex_body[sv];
  double key;
  if (piola_contact_candidate(x, p, piola_vertex_at(w->x, a), piola_vertex_at(w->x, b),
                              piola_vertex_at(w->x, d), piola_vertex_at(w->p, a),
                              piola_vertex_at(w->p, b), piola_vertex_at(w->p, d), thickness,
                              persistent, same_body, &key) &&
      (!same_body ||
       (piola_contact_self_allowed(
            piola_vertex_at(c->vertex_rest, sv), piola_vertex_at(c->vertex_rest, q[0]),
            piola_vertex_at(c->vertex_rest, q[1]), piola_vertex_at(c->vertex_rest, q[2]),
            c->vertex_reach[sv], thickness) &&
        piola_contact_self_untangled(c->turned[v], c->turned[a], c->turned[b], c->turned[d])))) {
    (*found)++;
    piola_contact_keep(keys, tris, kept, key, piola_contact_entry(t, side));
  }
}

void piola_narrow_pass(piola_world *w, int32_t count, piola_range_fn *range, int32_t *kept,
                       int32_t *dropped) {
  piola_narrow_job job = {.w = w};
  piola_pool_for(w->pool, count, 64, range, &job);
  for (int32_t k = 0; k < piola_pool_threads(w->pool); ++k) {
    *kept += job.kept[k];
    *dropped += job.dropped[k];
  }
}

/* The narrow phase's surface vertices [begin, end) (a chunk of piola_narrow_pass): each one's
 * nearest triangles into its own slots; the kept and dropped counts into the chunk's totals. */
static void narrow_range(void *ctx, int32_t chunk, int32_t sv_begin, int32_t sv_end) {
  piola_narrow_job *job = ctx;
  piola_world *w = job->w;
  piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)w->def.contact_thickness;
  const double inv_cell = 1.0 / c->cell;
  int32_t total = 0, overflow = 0;
  for (int32_t sv = sv_begin; sv < sv_end; ++sv) {
    const piola_box vb = vertex_box(w, sv);
    double keys[K];
    piola_int tris[K], kept = 0;
    int32_t found = 0;
    const piola_box query = piola_grid_vertex(vb, c->margin);
    const int32_t *near = c->vertex_near + 2 * (size_t)sv;
    const uint64_t *near_mask = c->vertex_near_mask + 2 * (size_t)sv;
    piola_int lo[3], hi[3];
    piola_cell_range(query, inv_cell, 3, lo, hi);
    for (piola_int ci = lo[0]; ci <= hi[0]; ++ci) {
      for (piola_int cj = lo[1]; cj <= hi[1]; ++cj) {
        for (piola_int ck = lo[2]; ck <= hi[2]; ++ck) {
          const piola_int bucket = piola_cell_hash(ci, cj, ck, c->bucket_mask);
          for (int32_t e = c->bucket_start[bucket]; e < c->bucket_start[bucket + 1]; ++e) {
            const int32_t i = c->bucket_clusters[e];
            const int32_t first = c->cluster_first[i], end = c->cluster_first[i + 1];
            const piola_box cb = piola_box_at(c->cluster_box, i);
            if (piola_contact_near_cluster(first, end - first, near[0], near_mask[0], near[1],
                                           near_mask[1]) ||
                !piola_boxes_overlap(vb, cb) ||
                !piola_pair_cell(query, piola_grid_cluster(cb, c->margin), inv_cell, ci, cj, ck)) {
              continue;
            }
            for (int32_t t = first; t < end; ++t) {
              if (!piola_contact_near(t, near[0], near_mask[0], near[1], near_mask[1]) &&
                  piola_boxes_overlap(vb, piola_box_at(c->triangle_box, t)) &&
                  pair_allowed(c, sv, t, thickness)) {
                test_pair(w, sv, t, keys, tris, &kept, &found);
              }
            }
          }
        }
      }
    }
    c->contact_count[sv] = kept;
    memcpy(c->contact_triangle + K * (size_t)sv, tris, sizeof(int32_t) * (size_t)kept);
    total += kept;
    overflow += found - kept;
  }
  job->kept[chunk] = total;
  job->dropped[chunk] = overflow;
}

/* The narrow phase's marks (piola_contact_mark_inverted in the kernels): the corners of the tets
 * turned over at the start of the step's first substep. */
static void mark_inverted(piola_world *w) {
  piola_solver_contacts *c = &w->contacts;
  memset(c->turned, 0, (size_t)w->vertex_count);
  for (int32_t t = 0; t < w->solver.tet_count; ++t) {
    const int32_t *q = w->solver.tet_vertices + 4 * (size_t)t;
    if (piola_tet_inverted(piola_vertex_at(w->x, q[0]), piola_vertex_at(w->x, q[1]),
                           piola_vertex_at(w->x, q[2]), piola_vertex_at(w->x, q[3]))) {
      c->turned[q[0]] = c->turned[q[1]] = c->turned[q[2]] = c->turned[q[3]] = 1;
    }
  }
}

void piola_cpu_narrow_phase(piola_world *w) {
  piola_solver_contacts *c = &w->contacts;
  if (w->substep == 0 && piola_contacts_any_self(c)) {
    mark_inverted(w);
  }
  /* This substep's contacts become the previous ones (contacts persist while they last). */
  int32_t *swap = c->contact_count;
  c->contact_count = c->previous_count;
  c->previous_count = swap;
  swap = c->contact_triangle;
  c->contact_triangle = c->previous_triangle;
  c->previous_triangle = swap;
  c->total = 0;
  c->overflow = 0;
  piola_narrow_pass(w, c->vertex_count, narrow_range, &c->total, &c->overflow);
  piola_cpu_edge_narrow_phase(w);
  /* Per surface vertex, the slots that name it as a triangle corner, ascending. */
  memset(c->corner_start, 0, sizeof *c->corner_start * ((size_t)c->vertex_count + 1));
  for (int32_t sv = 0; sv < c->vertex_count; ++sv) {
    for (int32_t k = 0; k < c->contact_count[sv]; ++k) {
      const int32_t *q = c->triangle + 3 * (size_t)piola_contact_entry_triangle(
                                               c->contact_triangle[K * (size_t)sv + k]);
      for (int corner = 0; corner < 3; ++corner) {
        c->corner_start[q[corner] + 1]++;
      }
    }
  }
  piola_cpu_edge_corner_counts(c, c->corner_start);
  for (int32_t sv = 0; sv < c->vertex_count; ++sv) {
    c->corner_start[sv + 1] += c->corner_start[sv];
  }
  int32_t *cursor = c->vertex_cursor;
  memcpy(cursor, c->corner_start, sizeof *cursor * (size_t)c->vertex_count);
  for (int32_t sv = 0; sv < c->vertex_count; ++sv) {
    for (int32_t k = 0; k < c->contact_count[sv]; ++k) {
      const int32_t slot = K * sv + k;
      const int32_t *q =
          c->triangle + 3 * (size_t)piola_contact_entry_triangle(c->contact_triangle[slot]);
      for (int corner = 0; corner < 3; ++corner) {
        c->corner_entry[cursor[q[corner]]++] = 4 * slot + 1 + corner;
      }
    }
  }
  piola_cpu_edge_corner_fill(c, cursor);
}

/* Adds a correction o (x, y, z, length) to sum (x, y, z, length, length^2). */
static void add_correction(double sum[5], const double *o) {
  for (int j = 0; j < 4; ++j) {
    sum[j] += o[j];
  }
  sum[4] += o[3] * o[3];
}

/* The contact pass a chunk works for (contact_pass). */
typedef struct contact_job {
  piola_world *w;
  bool measure;
} contact_job;

piola_contact_frame_data piola_contact_slot_frame(const double *slot) {
  piola_contact_frame_data f;
  f.n = piola_v3_make(slot[0], slot[1], slot[2]);
  f.b = piola_v3_make(slot[4], slot[5], slot[6]);
  f.tangent = piola_v3_make(slot[8], slot[9], slot[10]);
  f.depth = slot[12];
  f.removed = slot[13];
  return f;
}

void piola_contact_slot_store(double *slot, bool measure, const piola_contact_frame_data *f,
                              const piola_v3 dx[4], const piola_real length[4]) {
  if (measure) {
    const piola_v3 frame[3] = {f->n, f->b, f->tangent};
    for (int i = 0; i < 3; ++i) {
      slot[4 * i] = frame[i].x;
      slot[4 * i + 1] = frame[i].y;
      slot[4 * i + 2] = frame[i].z;
    }
    slot[12] = f->depth;
    slot[13] = f->removed;
    slot[14] = 0.0;
    for (int corner = 0; corner < 4; ++corner) {
      slot[4 * corner + 3] = length[corner];
    }
  } else {
    for (int corner = 0; corner < 4; ++corner) {
      slot[4 * corner] = dx[corner].x;
      slot[4 * corner + 1] = dx[corner].y;
      slot[4 * corner + 2] = dx[corner].z;
      slot[4 * corner + 3] = length[corner];
    }
  }
}

/* Whether a triangle at the edge or corner of the contact `entry`'s triangle (corners pa, pb, pc
 * as the contact sees them, unit normal n) beside which p lies under its plane (edges, from
 * piola_contact_prepare) releases the contact (piola_contact_neighbour_releases): at an edge, the
 * neighbour across it, wound alike (none at an open border or where more than one triangle
 * shares the edge); at a corner, every other triangle of the corner's ring. Positions p_all: 3
 * doubles per world vertex. The kernel's piola_contact_beside_released does the same. */
static bool beside_released(const piola_solver_contacts *c, const double *p_all, int32_t entry,
                            piola_v3 p, piola_v3 n, piola_v3 pa, piola_v3 pb, piola_v3 pc,
                            int edges) {
  const int32_t t = piola_contact_entry_triangle(entry);
  const int side = piola_contact_entry_side(entry);
  const int32_t *q = c->triangle + 3 * (size_t)t;
  const piola_v3 corner[3] = {pa, pb, pc};
  const int k = piola_contact_beside_corner(edges);
  /* at an edge from corner e to corner e + 1, the ring of its end e + 1 */
  const int e = edges == 1 ? 0 : edges == 2 ? 1 : 2;
  const int at = k >= 0 ? k : (e + 1) % 3;
  const int32_t s = q[piola_contact_stored_corner(at, side)];
  const int32_t s0 = q[piola_contact_stored_corner(e, side)];
  int32_t found = 0, o = -1;
  bool released = false;
  for (int32_t i = c->vertex_ring_start[s]; i < c->vertex_ring_start[s + 1]; ++i) {
    const int32_t u = c->vertex_ring[i];
    if (u == t) {
      continue; /* the contact's own triangle */
    }
    const int32_t *qu = c->triangle + 3 * (size_t)u;
    int32_t r1, r2;
    piola_contact_ring_corners(qu[0], qu[1], qu[2], s, side, &r1, &r2);
    if (k >= 0) {
      released = released || piola_contact_neighbour_releases(
                                 p, n, corner[k], piola_vertex_at(p_all, c->vertex[r1]),
                                 piola_vertex_at(p_all, c->vertex[r2]));
    } else if (r1 == s0) { /* the edge runs from its end e + 1 to e in the neighbour */
      found++;
      o = r2;
    }
  }
  if (k < 0 && found == 1) {
    released = piola_contact_neighbour_releases(p, n, corner[at], corner[e],
                                                piola_vertex_at(p_all, c->vertex[o]));
  }
  return released;
}

/* The projections of the contacts of surface vertices [begin, end) into their slots. */
static void project_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const contact_job *job = ctx;
  piola_world *w = job->w;
  const bool measure = job->measure;
  piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)w->def.contact_thickness;
  const double friction = (double)w->def.contact_friction;
  for (int32_t sv = begin; sv < end; ++sv) {
    const int32_t v = c->vertex[sv];
    for (int32_t k = 0; k < c->contact_count[sv]; ++k) {
      const int32_t slot = K * sv + k;
      const int32_t entry = c->contact_triangle[slot];
      const int32_t *q = c->triangle + 3 * (size_t)piola_contact_entry_triangle(entry);
      const int side = piola_contact_entry_side(entry);
      const int32_t sa = q[0], sb = q[side ? 2 : 1], sd = q[side ? 1 : 2];
      const int32_t a = c->vertex[sa], b = c->vertex[sb], d = c->vertex[sd];
      const double n[4] = {measure ? 1.0 : c->mass_split[sv], measure ? 1.0 : c->mass_split[sa],
                           measure ? 1.0 : c->mass_split[sb], measure ? 1.0 : c->mass_split[sd]};
      double *out = c->delta + 16 * (size_t)slot; /* 4 corners of x, y, z, length */
      piola_contact_frame_data f;
      if (measure) {
        const piola_v3 p = piola_vertex_at(w->p, v), pa = piola_vertex_at(w->p, a),
                       pb = piola_vertex_at(w->p, b), pd = piola_vertex_at(w->p, d);
        const int edges = piola_contact_prepare(
            piola_vertex_at(w->x, v), p, piola_vertex_at(w->x, a), piola_vertex_at(w->x, b),
            piola_vertex_at(w->x, d), pa, pb, pd, thickness, friction, &f);
        if (edges != 0 && beside_released(c, w->p, entry, p, f.n, pa, pb, pd, edges)) {
          piola_contact_release(&f);
        }
      } else { /* the measuring pass's frame, from the same positions */
        f = piola_contact_slot_frame(out);
      }
      piola_v3 dx[4];
      piola_real length[4];
      piola_contact_respond(&f, w->w[v] * n[0], w->w[a] * n[1], w->w[b] * n[2], w->w[d] * n[3], dx,
                            length);
      if (side) {
        piola_contact_unswap(dx, length);
      }
      /* measuring: the frame where the corrections go; the gather reads only the lengths */
      piola_contact_slot_store(out, measure, &f, dx, length);
    }
  }
}

/* The gather of surface vertices [begin, end): own slots first, then the corner entries, in
 * ascending order. */
static void gather_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const contact_job *job = ctx;
  piola_world *w = job->w;
  const bool measure = job->measure;
  piola_solver_contacts *c = &w->contacts;
  for (int32_t sv = begin; sv < end; ++sv) {
    double sum[5] = {0.0, 0.0, 0.0, 0.0, 0.0}; /* corrections, lengths, squared lengths */
    for (int32_t k = 0; k < c->contact_count[sv]; ++k) {
      add_correction(sum, c->delta + 4 * (size_t)(4 * (K * sv + k)));
    }
    for (int32_t e = c->corner_start[sv]; e < c->corner_start[sv + 1]; ++e) {
      add_correction(sum, c->delta + 4 * (size_t)c->corner_entry[e]);
    }
    if (measure) {
      c->mass_split[sv] = piola_contact_split(sum[3], sum[4]);
    } else if (sum[3] > 0.0) {
      double *p = w->p + 3 * (size_t)c->vertex[sv];
      for (int j = 0; j < 3; ++j) {
        p[j] += sum[j] / c->mass_split[sv];
      }
    }
  }
}

/* One pass of CONTACT: every contact projected from the same positions, its corrections and
 * their lengths into its slot's delta entries; then per surface vertex the sum of its entries.
 * Measuring (`measure`), the contacts are projected with whole masses, each keeps its frame
 * (piola_contact_prepare) in its slot in place of the corrections, and each vertex only records
 * its mass split for the projecting pass (piola_contact_split) from the lengths; projecting,
 * each contact takes its frame from there and the split masses (piola_contact_respond), and
 * each vertex moves by its sum over its split. */
static void contact_pass(piola_world *w, bool measure) {
  contact_job job = {w, measure};
  piola_pool_for(w->pool, w->contacts.vertex_count, 256, project_range, &job);
  piola_cpu_edge_contact_pass(w, measure);
  piola_pool_for(w->pool, w->contacts.vertex_count, 256, gather_range, &job);
}

void piola_cpu_contact(piola_world *w) {
  contact_pass(w, true);
  contact_pass(w, false);
}
