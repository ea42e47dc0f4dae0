/* Interpenetration checks: surface vertices inside the tets of another body, or inside tets of
 * their own body that do not contain them. The tets' bounding boxes are binned into a uniform
 * grid (cells about as large as a typical tet, stored as a hash table with counting sort, so the
 * memory follows the number of tets and not the extent of the scene); a vertex is tested only
 * against the tets of its own cell. Tets that span very many cells (a blown-up state) go to a
 * list that every vertex is tested against, so the grid stays small whatever the state. */
#include "contact_checks.h"

#include "piola_contact.h" /* the library's point-triangle distance and self-contact bound */

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A tet whose box covers more cells than this is tested against every vertex instead. */
enum { MAX_CELLS_PER_TET = 64 };

typedef struct tet_grid {
  int32_t tet_count;
  int32_t *body;      /* per global tet: its body */
  int32_t *first_tet; /* per body: its first global tet (body_count + 1 entries) */
  float *box;         /* per global tet: lo xyz, hi xyz */
  bool *valid;        /* finite coordinates */
  double cell;        /* m */
  uint64_t mask;      /* table size - 1 */
  int32_t *start;     /* per table slot: first entry (mask + 2 entries) */
  int32_t *entries;   /* global tet indices, by slot */
  int32_t *oversized; /* tets covering more than MAX_CELLS_PER_TET cells */
  int32_t oversized_count;
} tet_grid;

static int64_t cell_of(double x, double cell) {
  return (int64_t)floor(x / cell);
}

static uint64_t slot_of(int64_t i, int64_t j, int64_t k, uint64_t mask) {
  uint64_t h = (uint64_t)i * 73856093u ^ (uint64_t)j * 19349663u ^ (uint64_t)k * 83492791u;
  h ^= h >> 29;
  return (h * 0x9E3779B97F4A7C15ull >> 17) & mask;
}

static void grid_free(tet_grid *g) {
  free(g->body);
  free(g->first_tet);
  free(g->box);
  free(g->valid);
  free(g->start);
  free(g->entries);
  free(g->oversized);
  memset(g, 0, sizeof *g);
}

/* The cell range of tet t's box on each axis; returns the number of cells it covers (capped
 * just above MAX_CELLS_PER_TET). */
static int64_t tet_cells(const tet_grid *g, int32_t t, int64_t lo[3], int64_t hi[3]) {
  int64_t n = 1;
  for (int k = 0; k < 3; ++k) {
    lo[k] = cell_of(g->box[6 * t + k], g->cell);
    hi[k] = cell_of(g->box[6 * t + 3 + k], g->cell);
    n *= hi[k] - lo[k] + 1;
    if (n > MAX_CELLS_PER_TET) {
      return MAX_CELLS_PER_TET + 1;
    }
  }
  return n;
}

/* Builds the grid; false when out of memory or an index is out of range. */
static bool grid_build(const check_body *bodies, int32_t body_count, tet_grid *g) {
  memset(g, 0, sizeof *g);
  int64_t total = 0;
  for (int32_t b = 0; b < body_count; ++b) {
    total += bodies[b].tet_count > 0 ? bodies[b].tet_count : 0;
  }
  if (total > INT32_MAX / 8) {
    return false;
  }
  g->tet_count = (int32_t)total;
  const size_t n = total > 0 ? (size_t)total : 1;
  g->body = malloc(sizeof *g->body * n);
  g->first_tet = malloc(sizeof *g->first_tet * ((size_t)body_count + 1));
  g->box = malloc(sizeof *g->box * 6 * n);
  g->valid = malloc(sizeof *g->valid * n);
  if (g->body == NULL || g->first_tet == NULL || g->box == NULL || g->valid == NULL) {
    return false;
  }
  /* Boxes, and the typical tet size: the mean of the boxes' largest sides. */
  double size_sum = 0.0;
  int64_t size_count = 0;
  int32_t t = 0;
  for (int32_t b = 0; b < body_count; ++b) {
    const check_body *cb = &bodies[b];
    g->first_tet[b] = t;
    for (int32_t i = 0; i < cb->tet_count; ++i, ++t) {
      g->body[t] = b;
      float *box = g->box + 6 * t;
      box[0] = box[1] = box[2] = INFINITY;
      box[3] = box[4] = box[5] = -INFINITY;
      bool finite = true;
      for (int c = 0; c < 4; ++c) {
        int32_t v = cb->tets[4 * i + c];
        if (v < 0 || v >= cb->vertex_count) {
          return false;
        }
        for (int k = 0; k < 3; ++k) {
          float x = cb->positions[3 * v + k];
          finite = finite && isfinite(x);
          box[k] = fminf(box[k], x);
          box[3 + k] = fmaxf(box[3 + k], x);
        }
      }
      g->valid[t] = finite;
      if (finite) {
        size_sum += fmax(fmax(box[3] - box[0], box[4] - box[1]), box[5] - box[2]);
        size_count++;
      }
    }
  }
  g->first_tet[body_count] = t;
  g->cell = size_count > 0 && size_sum > 0.0 ? size_sum / (double)size_count : 1.0;
  uint64_t slots = 1024;
  while (slots < 2 * (uint64_t)total) {
    slots *= 2;
  }
  g->mask = slots - 1;
  g->start = calloc(slots + 1, sizeof *g->start);
  if (g->start == NULL) {
    return false;
  }
  /* Counting sort of (slot, tet) pairs: count, prefix sums, fill. */
  int64_t entry_count = 0, oversized = 0;
  int64_t lo[3], hi[3];
  for (t = 0; t < g->tet_count; ++t) {
    if (!g->valid[t]) {
      continue;
    }
    int64_t cells = tet_cells(g, t, lo, hi);
    if (cells > MAX_CELLS_PER_TET) {
      oversized++;
      continue;
    }
    for (int64_t i = lo[0]; i <= hi[0]; ++i) {
      for (int64_t j = lo[1]; j <= hi[1]; ++j) {
        for (int64_t k = lo[2]; k <= hi[2]; ++k) {
          g->start[slot_of(i, j, k, g->mask) + 1]++;
        }
      }
    }
    entry_count += cells;
  }
  if (entry_count > INT32_MAX) {
    return false;
  }
  for (uint64_t s = 0; s < slots; ++s) {
    g->start[s + 1] += g->start[s];
  }
  g->entries = malloc(sizeof *g->entries * (size_t)(entry_count > 0 ? entry_count : 1));
  g->oversized = malloc(sizeof *g->oversized * (size_t)(oversized > 0 ? oversized : 1));
  int32_t *fill = malloc(sizeof *fill * slots);
  if (g->entries == NULL || g->oversized == NULL || fill == NULL) {
    free(fill);
    return false;
  }
  memcpy(fill, g->start, sizeof *fill * slots);
  for (t = 0; t < g->tet_count; ++t) {
    if (!g->valid[t]) {
      continue;
    }
    if (tet_cells(g, t, lo, hi) > MAX_CELLS_PER_TET) {
      g->oversized[g->oversized_count++] = t;
      continue;
    }
    for (int64_t i = lo[0]; i <= hi[0]; ++i) {
      for (int64_t j = lo[1]; j <= hi[1]; ++j) {
        for (int64_t k = lo[2]; k <= hi[2]; ++k) {
          g->entries[fill[slot_of(i, j, k, g->mask)]++] = t;
        }
      }
    }
  }
  free(fill);
  return true;
}

static double det3(const double a[3], const double b[3], const double c[3]) {
  return a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
         a[2] * (b[0] * c[1] - b[1] * c[0]);
}

/* Whether p lies strictly inside the tet (corners x0..x3): every barycentric coordinate above
 * CONTACT_CHECK_BARYCENTRIC_TOLERANCE. Degenerate tets (volume below 1e-12 of their box's
 * cube) contain nothing. Inverted tets work as well: the coordinates are ratios of signed
 * volumes. */
static bool point_in_tet(const float *p, const float *x0, const float *x1, const float *x2,
                         const float *x3, double box_size) {
  double e1[3], e2[3], e3[3], d[3];
  for (int k = 0; k < 3; ++k) {
    e1[k] = (double)x1[k] - x0[k];
    e2[k] = (double)x2[k] - x0[k];
    e3[k] = (double)x3[k] - x0[k];
    d[k] = (double)p[k] - x0[k];
  }
  const double det = det3(e1, e2, e3);
  if (!(fabs(det) > 1e-12 * box_size * box_size * box_size)) {
    return false;
  }
  const double tol = CONTACT_CHECK_BARYCENTRIC_TOLERANCE;
  const double l1 = det3(d, e2, e3) / det;
  const double l2 = det3(e1, d, e3) / det;
  const double l3 = det3(e1, e2, d) / det;
  return l1 > tol && l2 > tol && l3 > tol && 1.0 - l1 - l2 - l3 > tol;
}

/* Whether tet q (body-local corners) of body cb was farther from its vertex v in the rest shape
 * than v's self-contact bound: the distance to its nearest face (a vertex not a corner of the
 * tet lies outside it at rest), by the library's own measure (piola_point_triangle_distance).
 * Without rest data, far. */
static bool tet_far_at_rest(const check_body *cb, const int32_t *q, int32_t v) {
  if (cb->rest_positions == NULL || cb->self_bound == NULL) {
    return true;
  }
  const float *r = cb->rest_positions;
  piola_v3 x[4];
  for (int c = 0; c < 4; ++c) {
    x[c] = piola_v3_make(r[3 * q[c]], r[3 * q[c] + 1], r[3 * q[c] + 2]);
  }
  const piola_v3 p = piola_v3_make(r[3 * v], r[3 * v + 1], r[3 * v + 2]);
  const double d = fmin(fmin(piola_point_triangle_distance(p, x[0], x[1], x[2]),
                             piola_point_triangle_distance(p, x[0], x[1], x[3])),
                        fmin(piola_point_triangle_distance(p, x[0], x[2], x[3]),
                             piola_point_triangle_distance(p, x[1], x[2], x[3])));
  return d > (double)cb->self_bound[v];
}

void self_contact_bounds(const float *rest, int32_t vertex_count, const int32_t *tets,
                         int32_t tet_count, float thickness, float *bound) {
  for (int32_t v = 0; v < vertex_count; ++v) {
    bound[v] = 0.0f; /* the longest tet edge at v, first */
  }
  for (int32_t t = 0; t < tet_count; ++t) {
    const int32_t *q = tets + 4 * t;
    for (int a = 0; a < 4; ++a) {
      for (int b = a + 1; b < 4; ++b) {
        const float *x = rest + 3 * q[a], *y = rest + 3 * q[b];
        const piola_v3 e =
            piola_v3_make((double)x[0] - y[0], (double)x[1] - y[1], (double)x[2] - y[2]);
        const float len = (float)piola_v3_length(e);
        bound[q[a]] = fmaxf(bound[q[a]], len);
        bound[q[b]] = fmaxf(bound[q[b]], len);
      }
    }
  }
  for (int32_t v = 0; v < vertex_count; ++v) {
    bound[v] = (float)piola_contact_self_bound(bound[v], thickness);
  }
}

/* Whether global tet t of the grid contains vertex v of body b, under the rule of the check:
 * another body's tet (own = false) or a tet of b without v as a corner (own = true). */
static bool tet_holds(const tet_grid *g, const check_body *bodies, int32_t t, int32_t b, int32_t v,
                      const float *p, bool own) {
  const int32_t tb = g->body[t];
  if (own != (tb == b)) {
    return false;
  }
  const float *box = g->box + 6 * t;
  for (int k = 0; k < 3; ++k) {
    if (!(p[k] > box[k] && p[k] < box[3 + k])) {
      return false;
    }
  }
  const check_body *cb = &bodies[tb];
  const int32_t *q = cb->tets + 4 * (t - g->first_tet[tb]);
  if (own && (q[0] == v || q[1] == v || q[2] == v || q[3] == v)) {
    return false;
  }
  const double size = fmax(fmax(box[3] - box[0], box[4] - box[1]), box[5] - box[2]);
  return point_in_tet(p, cb->positions + 3 * q[0], cb->positions + 3 * q[1],
                      cb->positions + 3 * q[2], cb->positions + 3 * q[3], size);
}

/* The vertices inside (count_vertices_inside_other_bodies, or with own set
 * count_vertices_inside_own_body); with own, *far (may be NULL) counts those that a tet far
 * from them at rest holds (tet_far_at_rest). */
static int64_t count_inside(const check_body *bodies, int32_t body_count, bool own, int64_t *far) {
  if (far != NULL) {
    *far = 0;
  }
  if (body_count <= 0) {
    return 0;
  }
  if (bodies == NULL) {
    return -1;
  }
  tet_grid g;
  if (!grid_build(bodies, body_count, &g)) {
    grid_free(&g);
    return -1;
  }
  int64_t count = 0;
  for (int32_t b = 0; b < body_count; ++b) {
    const check_body *cb = &bodies[b];
    const int32_t n = cb->queries != NULL ? cb->query_count : cb->vertex_count;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t v = cb->queries != NULL ? cb->queries[i] : i;
      if (v < 0 || v >= cb->vertex_count) {
        grid_free(&g);
        return -1;
      }
      const float *p = cb->positions + 3 * v;
      if (!(isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]))) {
        continue;
      }
      const uint64_t s =
          slot_of(cell_of(p[0], g.cell), cell_of(p[1], g.cell), cell_of(p[2], g.cell), g.mask);
      /* Inside: a tet holds it. Far (own only): a tet far from it at rest holds it; the
       * search goes on past near tets for one. */
      bool inside = false, far_tet = false;
      const int32_t listed = g.start[s + 1] - g.start[s];
      for (int32_t e = 0; e < listed + g.oversized_count && !far_tet && !(inside && !own); ++e) {
        const int32_t t = e < listed ? g.entries[g.start[s] + e] : g.oversized[e - listed];
        if (tet_holds(&g, bodies, t, b, v, p, own)) {
          inside = true;
          far_tet = own && tet_far_at_rest(cb, cb->tets + 4 * (t - g.first_tet[b]), v);
        }
      }
      count += inside;
      if (far != NULL) {
        *far += far_tet;
      }
    }
  }
  grid_free(&g);
  return count;
}

int64_t count_vertices_inside_other_bodies(const check_body *bodies, int32_t body_count) {
  return count_inside(bodies, body_count, false, NULL);
}

int64_t count_vertices_inside_own_body(const check_body *bodies, int32_t body_count, int64_t *far) {
  return count_inside(bodies, body_count, true, far);
}

int32_t surface_vertex_list(const int32_t *triangles, int32_t triangle_count, int32_t vertex_count,
                            int32_t *out) {
  bool *on = calloc(vertex_count > 0 ? (size_t)vertex_count : 1, sizeof *on);
  if (on == NULL) {
    return -1;
  }
  for (int32_t i = 0; i < 3 * triangle_count; ++i) {
    if (triangles[i] < 0 || triangles[i] >= vertex_count) {
      free(on);
      return -1;
    }
    on[triangles[i]] = true;
  }
  int32_t n = 0;
  for (int32_t v = 0; v < vertex_count; ++v) {
    if (on[v]) {
      out[n++] = v;
    }
  }
  free(on);
  return n;
}
