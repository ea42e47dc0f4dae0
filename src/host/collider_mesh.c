/* Piola mesh and SDF colliders on the host: checking a triangle mesh or a distance grid, building
 * a mesh's bounding volume hierarchy and its triangles' pseudo-normals once, when the collider is
 * added, keeping every collider's shape data in one array of the world (uploaded to the device
 * when it changes, never on a pose change), and piola_sdf_from_mesh.
 *
 * The hierarchy is built top-down by median splits: a node's triangles are divided at the median
 * of their centroids along the longest axis of the centroids' box (Wald 2007, "On fast
 * Construction of SAH-based Bounding Volume Hierarchies", discusses the alternatives; the median
 * keeps the depth at log2 n and the build in O(n log n) by selection instead of sorting), ties
 * broken by triangle index, so the same mesh always gives the same tree. Pseudo-normals are the
 * angle-weighted ones of Baerentzen and Aanaes 2005 (kernels/piola_mesh.h). */
#include "collider_mesh.h"

#include "world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Triangles per leaf at most. */
#define LEAF_TRIANGLES 4
/* Entries of the shape data are addressed by floats in the records: exact below 2^24. */
#define MAX_ENTRIES (1 << 24)
/* Grid points of a distance field at most (piola_sdf_from_mesh and SDF colliders). */
#define MAX_SDF_POINTS (1 << 26)

typedef struct prim {
  double lo[3], hi[3], c[3];
  int32_t tri; /* into the kept triangles */
} prim;

typedef struct build_ctx {
  prim *prims;
  float *nodes; /* 8 floats per node */
  int32_t node_count;
  int32_t depth; /* the deepest node's depth */
} build_ctx;

static bool prim_less(const prim *a, const prim *b, int axis) {
  return a->c[axis] < b->c[axis] || (a->c[axis] == b->c[axis] && a->tri < b->tri);
}

static void prim_swap(prim *a, prim *b) {
  prim t = *a;
  *a = *b;
  *b = t;
}

/* Puts the k-th smallest of p[0, n) (by centroid along axis, then index) at k, the smaller ones
 * before it and the larger after (Hoare's selection, median-of-three pivot). */
static void select_kth(prim *p, int32_t n, int32_t k, int axis) {
  int32_t lo = 0, hi = n - 1;
  while (hi > lo) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (prim_less(&p[mid], &p[lo], axis)) {
      prim_swap(&p[mid], &p[lo]);
    }
    if (prim_less(&p[hi], &p[lo], axis)) {
      prim_swap(&p[hi], &p[lo]);
    }
    if (prim_less(&p[hi], &p[mid], axis)) {
      prim_swap(&p[hi], &p[mid]);
    }
    prim pivot = p[mid];
    int32_t i = lo, j = hi;
    while (i <= j) {
      while (prim_less(&p[i], &pivot, axis)) {
        ++i;
      }
      while (prim_less(&pivot, &p[j], axis)) {
        --j;
      }
      if (i <= j) {
        prim_swap(&p[i], &p[j]);
        ++i;
        --j;
      }
    }
    if (k <= j) {
      hi = j;
    } else if (k >= i) {
      lo = i;
    } else {
      return;
    }
  }
}

/* Node `node` over prims [begin, end); its children are allocated as a pair. Iterative over the
 * left spine would save stack, but the depth is at most log2(n) + 2. */
static void build_node(build_ctx *b, int32_t node, int32_t begin, int32_t end, int32_t depth) {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  double clo[3] = {INFINITY, INFINITY, INFINITY}, chi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t i = begin; i < end; ++i) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = fmin(lo[k], b->prims[i].lo[k]);
      hi[k] = fmax(hi[k], b->prims[i].hi[k]);
      clo[k] = fmin(clo[k], b->prims[i].c[k]);
      chi[k] = fmax(chi[k], b->prims[i].c[k]);
    }
  }
  float *n = b->nodes + 8 * (size_t)node;
  for (int k = 0; k < 3; ++k) {
    /* rounded outward, so that the float box holds the float triangles */
    n[k] = nextafterf((float)lo[k], -INFINITY);
    n[4 + k] = nextafterf((float)hi[k], INFINITY);
  }
  b->depth = depth > b->depth ? depth : b->depth;
  const int32_t count = end - begin;
  if (count <= LEAF_TRIANGLES) {
    n[3] = (float)begin;
    n[7] = (float)count;
    return;
  }
  int axis = 0;
  for (int k = 1; k < 3; ++k) {
    if (chi[k] - clo[k] > chi[axis] - clo[axis]) {
      axis = k;
    }
  }
  const int32_t half = count / 2;
  select_kth(b->prims + begin, count, half, axis);
  const int32_t child = b->node_count;
  b->node_count += 2;
  n[3] = (float)child;
  n[7] = 0.0f;
  build_node(b, child, begin, begin + half, depth + 1);
  build_node(b, child + 1, begin + half, end, depth + 1);
}

typedef struct edge_rec {
  int32_t a, b;    /* the undirected edge's vertices, a < b */
  int32_t tri;     /* a triangle (kept index) with it */
  int32_t corner;  /* the edge is corners (corner, corner + 1 mod 3) of tri */
  int32_t forward; /* 1 when the triangle runs a -> b */
} edge_rec;

static int edge_cmp(const void *pa, const void *pb) {
  const edge_rec *x = pa, *y = pb;
  if (x->a != y->a) {
    return x->a < y->a ? -1 : 1;
  }
  if (x->b != y->b) {
    return x->b < y->b ? -1 : 1;
  }
  return x->tri < y->tri ? -1 : x->tri > y->tri ? 1 : 0;
}

static void normalize3(double v[3]) {
  const double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (l > 0.0) {
    v[0] /= l;
    v[1] /= l;
    v[2] /= l;
  }
}

void piola_shape_data_free(piola_shape_data *d) {
  free(d->entries);
  memset(d, 0, sizeof *d);
}

piola_status piola_mesh_data_build(const piola_mesh_shape *m, float thickness,
                                   piola_shape_data *out, char *reason, size_t rn) {
  memset(out, 0, sizeof *out);
  if (m->positions == NULL || m->triangles == NULL) {
    snprintf(reason, rn, "mesh shape has NULL positions or triangles");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (m->vertex_count < 3 || m->triangle_count < 1) {
    snprintf(reason, rn, "mesh shape needs >= 3 vertices and >= 1 triangle (got %d, %d)",
             (int)m->vertex_count, (int)m->triangle_count);
    return PIOLA_ERROR_INVALID_MESH;
  }
  if (m->triangle_count > MAX_ENTRIES / (PIOLA_MESH_TRI_ENTRIES + 4)) {
    snprintf(reason, rn, "mesh shape of %d triangles is too large (at most %d)",
             (int)m->triangle_count, (int)(MAX_ENTRIES / (PIOLA_MESH_TRI_ENTRIES + 4)));
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    if (!piola_finite3(m->positions + 3 * (size_t)i) ||
        !(fabs(m->positions[3 * (size_t)i]) < PIOLA_POSITION_LIMIT &&
          fabs(m->positions[3 * (size_t)i + 1]) < PIOLA_POSITION_LIMIT &&
          fabs(m->positions[3 * (size_t)i + 2]) < PIOLA_POSITION_LIMIT)) {
      snprintf(reason, rn, "mesh shape vertex %d is not finite or beyond %g m", (int)i,
               PIOLA_POSITION_LIMIT);
      return PIOLA_ERROR_NON_FINITE;
    }
  }
  const int32_t nt = m->triangle_count;
  for (int32_t t = 0; t < nt; ++t) {
    for (int k = 0; k < 3; ++k) {
      const int32_t v = m->triangles[3 * (size_t)t + (size_t)k];
      if (v < 0 || v >= m->vertex_count) {
        snprintf(reason, rn, "mesh shape triangle %d names vertex %d of %d", (int)t, (int)v,
                 (int)m->vertex_count);
        return PIOLA_ERROR_INVALID_MESH;
      }
    }
  }
  /* The triangles kept (non-zero area), their unit normals and corner angles. */
  int32_t *kept = malloc(sizeof *kept * (size_t)nt);
  double *fn = malloc(sizeof *fn * 3 * (size_t)nt);
  prim *prims = malloc(sizeof *prims * (size_t)nt);
  edge_rec *edges = malloc(sizeof *edges * 3 * (size_t)nt);
  double *vn = calloc(3 * (size_t)m->vertex_count, sizeof *vn);
  double *en = malloc(sizeof *en * 9 * (size_t)nt); /* per kept triangle, per edge */
  float *nodes = malloc(sizeof *nodes * 8 * (size_t)(2 * nt));
  piola_status s = PIOLA_OK;
  if (kept == NULL || fn == NULL || prims == NULL || edges == NULL || vn == NULL || en == NULL ||
      nodes == NULL) {
    snprintf(reason, rn, "out of memory building a mesh of %d triangles", (int)nt);
    s = PIOLA_ERROR_OUT_OF_MEMORY;
    goto done;
  }
  int32_t nk = 0;
  double volume = 0.0;
  for (int32_t t = 0; t < nt; ++t) {
    const int32_t *q = m->triangles + 3 * (size_t)t;
    double x[3][3];
    for (int k = 0; k < 3; ++k) {
      for (int j = 0; j < 3; ++j) {
        x[k][j] = m->positions[3 * (size_t)q[k] + (size_t)j];
      }
    }
    const double e1[3] = {x[1][0] - x[0][0], x[1][1] - x[0][1], x[1][2] - x[0][2]};
    const double e2[3] = {x[2][0] - x[0][0], x[2][1] - x[0][1], x[2][2] - x[0][2]};
    double cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                    e1[0] * e2[1] - e1[1] * e2[0]};
    const double area2 = sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
    const double scale2 = fmax(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2],
                               e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]);
    if (!(area2 > 1e-12 * scale2) || q[0] == q[1] || q[1] == q[2] || q[0] == q[2]) {
      continue; /* zero area */
    }
    volume += (x[0][0] * (x[1][1] * x[2][2] - x[1][2] * x[2][1]) -
               x[0][1] * (x[1][0] * x[2][2] - x[1][2] * x[2][0]) +
               x[0][2] * (x[1][0] * x[2][1] - x[1][1] * x[2][0])) /
              6.0;
    normalize3(cr);
    memcpy(fn + 3 * (size_t)nk, cr, sizeof cr);
    prim *p = &prims[nk];
    p->tri = nk;
    for (int j = 0; j < 3; ++j) {
      p->lo[j] = fmin(fmin(x[0][j], x[1][j]), x[2][j]);
      p->hi[j] = fmax(fmax(x[0][j], x[1][j]), x[2][j]);
      p->c[j] = (x[0][j] + x[1][j] + x[2][j]) / 3.0;
    }
    for (int k = 0; k < 3; ++k) {
      /* the corner's angle, the vertex's weight (Baerentzen and Aanaes 2005) */
      const double *o = x[k], *a = x[(k + 1) % 3], *b = x[(k + 2) % 3];
      double u[3] = {a[0] - o[0], a[1] - o[1], a[2] - o[2]};
      double v[3] = {b[0] - o[0], b[1] - o[1], b[2] - o[2]};
      normalize3(u);
      normalize3(v);
      const double angle = acos(fmax(-1.0, fmin(1.0, u[0] * v[0] + u[1] * v[1] + u[2] * v[2])));
      for (int j = 0; j < 3; ++j) {
        vn[3 * (size_t)q[k] + (size_t)j] += angle * cr[j];
      }
      const int32_t va = q[k], vb = q[(k + 1) % 3];
      edge_rec *e = &edges[3 * (size_t)nk + (size_t)k];
      e->a = va < vb ? va : vb;
      e->b = va < vb ? vb : va;
      e->tri = nk;
      e->corner = k;
      e->forward = va < vb;
    }
    kept[nk++] = t;
  }
  if (nk == 0) {
    snprintf(reason, rn, "mesh shape has no triangle of non-zero area");
    s = PIOLA_ERROR_INVALID_MESH;
    goto done;
  }
  /* Edges: closed when every edge has exactly two triangles running it opposite ways; each
   * edge's pseudo-normal is the sum of its triangles' normals. */
  qsort(edges, 3 * (size_t)nk, sizeof *edges, edge_cmp);
  bool closed = true;
  for (size_t i = 0; i < 3 * (size_t)nk;) {
    size_t j = i + 1;
    while (j < 3 * (size_t)nk && edges[j].a == edges[i].a && edges[j].b == edges[i].b) {
      ++j;
    }
    if (j - i != 2 || edges[i].forward == edges[i + 1].forward) {
      closed = false;
    }
    double sum[3] = {0.0, 0.0, 0.0};
    for (size_t k = i; k < j; ++k) {
      for (int d = 0; d < 3; ++d) {
        sum[d] += fn[3 * (size_t)edges[k].tri + (size_t)d];
      }
    }
    normalize3(sum);
    for (size_t k = i; k < j; ++k) {
      memcpy(en + 9 * (size_t)edges[k].tri + 3 * (size_t)edges[k].corner, sum, sizeof sum);
    }
    i = j;
  }
  if (closed && !(volume > 0.0)) {
    snprintf(reason, rn,
             "closed mesh shape is oriented inward (volume %g m^3): its triangles must be "
             "counter-clockwise seen from outside",
             volume);
    s = PIOLA_ERROR_INVALID_MESH;
    goto done;
  }
  build_ctx b = {.prims = prims, .nodes = nodes, .node_count = 1, .depth = 0};
  build_node(&b, 0, 0, nk, 0);
  if (b.depth + 2 > PIOLA_MESH_STACK) {
    snprintf(reason, rn, "mesh shape's hierarchy is %d deep", (int)b.depth);
    s = PIOLA_ERROR_INVALID_MESH;
    goto done;
  }
  out->count = 2 * b.node_count + PIOLA_MESH_TRI_ENTRIES * nk;
  out->entries = calloc(4 * (size_t)out->count, sizeof *out->entries);
  if (out->entries == NULL) {
    snprintf(reason, rn, "out of memory building a mesh of %d triangles", (int)nt);
    s = PIOLA_ERROR_OUT_OF_MEMORY;
    goto done;
  }
  memcpy(out->entries, nodes, sizeof *nodes * 8 * (size_t)b.node_count);
  out->node_count = b.node_count;
  out->triangle_count = nk;
  out->closed = closed;
  for (int32_t j = 0; j < nk; ++j) {
    /* the tree's order: leaf ranges index these records */
    const int32_t kt = prims[j].tri;
    const int32_t *q = m->triangles + 3 * (size_t)kept[kt];
    float *r = out->entries +
               4 * ((size_t)2 * (size_t)b.node_count + (size_t)PIOLA_MESH_TRI_ENTRIES * (size_t)j);
    for (int k = 0; k < 3; ++k) {
      for (int d = 0; d < 3; ++d) {
        r[4 * k + d] = m->positions[3 * (size_t)q[k] + (size_t)d];
      }
      double v[3];
      memcpy(v, vn + 3 * (size_t)q[k], sizeof v);
      normalize3(v);
      for (int d = 0; d < 3; ++d) {
        r[4 * (4 + k) + d] = (float)v[d];
        r[4 * (7 + k) + d] = (float)en[9 * (size_t)kt + 3 * (size_t)k + (size_t)d];
        r[12 + d] = (float)fn[3 * (size_t)kt + (size_t)d];
      }
    }
  }
  for (int k = 0; k < 3; ++k) {
    out->lo[k] = nodes[k];
    out->hi[k] = nodes[4 + k];
  }
  out->thickness = closed ? 0.0f : thickness;
done:
  free(kept);
  free(fn);
  free(prims);
  free(edges);
  free(vn);
  free(en);
  free(nodes);
  return s;
}

piola_status piola_sdf_data_build(const piola_sdf_shape *g, piola_shape_data *out, char *reason,
                                  size_t rn) {
  memset(out, 0, sizeof *out);
  if (g->distances == NULL) {
    snprintf(reason, rn, "SDF shape has NULL distances");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!piola_finite3(g->origin) || !isfinite(g->cell)) {
    snprintf(reason, rn, "SDF shape has a non-finite origin or cell");
    return PIOLA_ERROR_NON_FINITE;
  }
  if (!(g->cell > 0.0f) || g->dims[0] < 2 || g->dims[1] < 2 || g->dims[2] < 2) {
    snprintf(reason, rn, "SDF shape needs a cell > 0 m and >= 2 points per axis (got %g; %d %d %d)",
             (double)g->cell, (int)g->dims[0], (int)g->dims[1], (int)g->dims[2]);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const int64_t n = (int64_t)g->dims[0] * g->dims[1] * g->dims[2];
  if (g->dims[0] > MAX_ENTRIES || g->dims[1] > MAX_ENTRIES || g->dims[2] > MAX_ENTRIES ||
      n > MAX_SDF_POINTS || (n + 3) / 4 > MAX_ENTRIES) {
    snprintf(reason, rn, "SDF shape of %d x %d x %d points is too large (at most %d points)",
             (int)g->dims[0], (int)g->dims[1], (int)g->dims[2], MAX_SDF_POINTS);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  for (int k = 0; k < 3; ++k) {
    const double far = (double)g->origin[k] + (double)g->cell * (g->dims[k] - 1);
    if (!(fabs(far) < PIOLA_POSITION_LIMIT) ||
        !(fabs((double)g->origin[k]) < PIOLA_POSITION_LIMIT)) {
      snprintf(reason, rn, "SDF shape's grid reaches beyond %g m", PIOLA_POSITION_LIMIT);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(g->distances[i])) {
      snprintf(reason, rn, "SDF shape's distance %lld is not finite", (long long)i);
      return PIOLA_ERROR_NON_FINITE;
    }
  }
  /* A distance field changes by at most the cell between two neighbouring points (it is
   * 1-Lipschitz); twice that is allowed for approximate fields. A grid that changes faster is
   * not a distance field, and its trilinear value would push particles by amounts that have no
   * meaning (a fuzzed grid with one point at -4e37 m threw them to infinity). */
  const int64_t stride[3] = {1, g->dims[0], (int64_t)g->dims[0] * g->dims[1]};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at[3] = {i % g->dims[0], (i / g->dims[0]) % g->dims[1],
                           i / ((int64_t)g->dims[0] * g->dims[1])};
    for (int k = 0; k < 3; ++k) {
      if (at[k] + 1 < g->dims[k] && !(fabs((double)g->distances[i + stride[k]] -
                                           (double)g->distances[i]) <= 2.0 * (double)g->cell)) {
        snprintf(reason, rn,
                 "SDF shape's distances %lld and %lld change by more than twice the cell (%g m): "
                 "not a distance field",
                 (long long)i, (long long)(i + stride[k]), (double)g->cell);
        return PIOLA_ERROR_INVALID_ARGUMENT;
      }
    }
  }
  out->count = (int32_t)((n + 3) / 4);
  out->entries = calloc(4 * (size_t)out->count, sizeof *out->entries);
  if (out->entries == NULL) {
    snprintf(reason, rn, "out of memory for an SDF of %lld points", (long long)n);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(out->entries, g->distances, sizeof *out->entries * (size_t)n);
  return PIOLA_OK;
}

/* ---- The world's shape data ----------------------------------------------------------- */

/* The entries [first, first + count) of the world's shape data that collider record c owns
 * (count 0 for the analytic kinds). */
static void record_range(const piola_collider_data *c, int32_t *first, int32_t *count) {
  *first = 0;
  *count = 0;
  if (c->kind == PIOLA_COLLIDER_KIND_MESH) {
    *first = (int32_t)c->c[0];
    *count = 2 * (int32_t)c->c[2] + PIOLA_MESH_TRI_ENTRIES * (int32_t)c->c[3];
  } else if (c->kind == PIOLA_COLLIDER_KIND_SDF) {
    const int64_t n = (int64_t)c->b[0] * (int64_t)c->b[1] * (int64_t)c->b[2];
    *first = (int32_t)c->b[3];
    *count = (int32_t)((n + 3) / 4);
  }
}

piola_status piola_world_shapes_append(piola_world *w, const piola_shape_data *d, int32_t *first,
                                       char *reason, size_t rn) {
  if ((int64_t)w->shape_count + d->count >= MAX_ENTRIES) {
    snprintf(reason, rn, "the world's mesh and SDF colliders would hold %lld entries (at most %d)",
             (long long)w->shape_count + d->count, MAX_ENTRIES);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!piola_grow((void **)&w->shapes, 4 * sizeof *w->shapes, w->shape_count + d->count,
                  &w->shape_capacity)) {
    snprintf(reason, rn, "out of memory for the shape data");
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(w->shapes + 4 * (size_t)w->shape_count, d->entries,
         4 * sizeof *w->shapes * (size_t)d->count);
  *first = w->shape_count;
  w->shape_count += d->count;
  w->shapes_version++;
  return PIOLA_OK;
}

void piola_world_shapes_remove(piola_world *w, const piola_collider_data *removed) {
  int32_t first, count;
  record_range(removed, &first, &count);
  if (count == 0) {
    return;
  }
  memmove(w->shapes + 4 * (size_t)first, w->shapes + 4 * (size_t)(first + count),
          4 * sizeof *w->shapes * (size_t)(w->shape_count - first - count));
  w->shape_count -= count;
  w->shapes_version++;
  for (int32_t i = 0; i < w->collider_count; ++i) {
    piola_collider_data *c = &w->colliders[i];
    int32_t f, n;
    record_range(c, &f, &n);
    if (n > 0 && f > first) {
      if (c->kind == PIOLA_COLLIDER_KIND_MESH) {
        c->c[0] -= (float)count;
        c->c[1] -= (float)count;
      } else {
        c->b[3] -= (float)count;
      }
    }
  }
}

/* ---- piola_sdf_from_mesh -------------------------------------------------------------- */

piola_status piola_sdf_from_mesh(const piola_mesh_shape *mesh, float cell, float padding,
                                 piola_sdf_shape *out) {
  if (mesh == NULL || out == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!isfinite(cell) || !isfinite(padding)) {
    return PIOLA_ERROR_NON_FINITE;
  }
  if (!(cell > 0.0f) || !(padding >= 0.0f)) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_shape_data d;
  char reason[256];
  piola_status s = piola_mesh_data_build(mesh, 0.0f, &d, reason, sizeof reason);
  if (s != PIOLA_OK) {
    return s;
  }
  if (!d.closed) {
    piola_shape_data_free(&d);
    return PIOLA_ERROR_INVALID_MESH;
  }
  /* the grid over the vertices' box (the hierarchy's is rounded outwards) */
  double box_lo[3] = {INFINITY, INFINITY, INFINITY}, box_hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t i = 0; i < mesh->vertex_count; ++i) {
    for (int k = 0; k < 3; ++k) {
      box_lo[k] = fmin(box_lo[k], mesh->positions[3 * (size_t)i + (size_t)k]);
      box_hi[k] = fmax(box_hi[k], mesh->positions[3 * (size_t)i + (size_t)k]);
    }
  }
  int32_t dims[3];
  float origin[3];
  int64_t n = 1;
  for (int k = 0; k < 3; ++k) {
    const double lo = box_lo[k] - padding, hi = box_hi[k] + padding;
    const double cells = ceil((hi - lo) / cell);
    if (!(cells < MAX_SDF_POINTS)) {
      piola_shape_data_free(&d);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    dims[k] = (int32_t)cells + 1;
    origin[k] = (float)lo;
    n *= dims[k];
  }
  if (n > MAX_SDF_POINTS) {
    piola_shape_data_free(&d);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  float *dist = malloc(sizeof *dist * (size_t)n);
  if (dist == NULL) {
    piola_shape_data_free(&d);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_collider_data rec;
  memset(&rec, 0, sizeof rec);
  rec.kind = PIOLA_COLLIDER_KIND_MESH;
  rec.c[0] = 0.0f;
  rec.c[1] = (float)(2 * d.node_count);
  for (int32_t k = 0; k < dims[2]; ++k) {
    for (int32_t j = 0; j < dims[1]; ++j) {
      for (int32_t i = 0; i < dims[0]; ++i) {
        const piola_v3 p = piola_v3_make((double)origin[0] + (double)cell * i,
                                         (double)origin[1] + (double)cell * j,
                                         (double)origin[2] + (double)cell * k);
        piola_v3 q, pn;
        double v = 0.0;
        if (piola_mesh_nearest(&rec, d.entries, p, 1e300, &q, &pn) >= 0) {
          const piola_v3 e = piola_v3_sub(p, q);
          v = piola_v3_length(e);
          v = piola_v3_dot(e, pn) < 0.0 ? -v : v;
        }
        dist[(size_t)i + (size_t)dims[0] * ((size_t)j + (size_t)dims[1] * (size_t)k)] = (float)v;
      }
    }
  }
  piola_shape_data_free(&d);
  out->distances = dist;
  memcpy(out->dims, dims, sizeof dims);
  memcpy(out->origin, origin, sizeof origin);
  out->cell = cell;
  return PIOLA_OK;
}

void piola_sdf_free(piola_sdf_shape *sdf) {
  if (sdf == NULL) {
    return;
  }
  free((void *)(uintptr_t)sdf->distances);
  memset(sdf, 0, sizeof *sdf);
}
