/* Piola render meshes: detail vertices carried by a body's deformed collision surface (the
 * paper's Sec. 5, Bender et al. 2014, after Kobbelt, Vorsatz, Seidel 1999; the formula is in
 * kernels/piola_render.h, shared with the OpenCL kernels of kernels/piola_render.cl).
 *
 * Attaching embeds each detail vertex once, in double precision, over the body as it is then:
 * among its PIOLA_RENDER_CANDIDATES nearest surface triangles (nearest first), the first whose
 * normal field reaches it, i.e. where p = u a + v b + w c + d normalize(u n_a + v n_b + w n_c)
 * has a solution with u, v, w >= 0 (Newton's method on (v, w, d) from the closest point); a
 * point that no candidate reaches keeps its nearest triangle's closest point and the offset
 * along the normal there. Reading computes the formula over the current surface: on the
 * device for an OpenCL world whose state lives there, on the host otherwise.
 */
#include "world.h"

#include "piola_render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PIOLA_RENDER_CANDIDATES 8
#define NEWTON_ITERATIONS 30

static piola_v3 at3(const double *a, int32_t i) {
  return piola_v3_make(a[3 * (size_t)i], a[3 * (size_t)i + 1], a[3 * (size_t)i + 2]);
}

/* Frees a render mesh's arrays and device buffers (the record itself stays). */
static void render_mesh_release(piola_world *w, piola_render_mesh *rm) {
  w->ops->render_release(w, rm);
  free(rm->triangle);
  free(rm->coordinates);
  free(rm->triangle_sv);
  free(rm->incident_start);
  free(rm->incident);
}

void piola_render_meshes_free(piola_world *w) {
  for (int32_t i = 0; i < w->render_mesh_ids.count; ++i) {
    piola_render_mesh *rm = &w->render_meshes[i];
    render_mesh_release(w, rm);
  }
  free(w->render_meshes);
  w->render_meshes = NULL;
  w->render_mesh_capacity = 0;
  piola_id_pool_destroy(&w->render_mesh_ids);
}

/* The render mesh behind an id, or NULL (with a misuse report). */
static piola_render_mesh *render_mesh(const piola_world *w, piola_render_mesh_id id) {
  const int32_t slot = piola_id_pool_find(&w->render_mesh_ids, id.index1, id.generation);
  if (slot < 0) {
    PIOLA_MISUSE(w, "render mesh id is valid");
    return NULL;
  }
  return &w->render_meshes[slot];
}

/* Unit vertex normals (3 per surface vertex) of the surface over body-local positions x. */
static void vertex_normals(const piola_body *b, const int32_t *start, const int32_t *incident,
                           const double *x, double *normals) {
  for (int32_t sv = 0; sv < b->surface_vertex_count; ++sv) {
    piola_v3 n = piola_v3_make(0.0, 0.0, 0.0);
    for (int32_t e = start[sv]; e < start[sv + 1]; ++e) {
      const int32_t *q = b->surface + 3 * (size_t)incident[e];
      n = piola_v3_add(n, piola_render_area_normal(at3(x, q[0]), at3(x, q[1]), at3(x, q[2])));
    }
    n = piola_render_unit(n);
    normals[3 * (size_t)sv] = n.x;
    normals[3 * (size_t)sv + 1] = n.y;
    normals[3 * (size_t)sv + 2] = n.z;
  }
}

/* The corners and corner normals of surface triangle t. */
typedef struct render_triangle {
  piola_v3 x[3], n[3];
} render_triangle;

static render_triangle load_triangle(const piola_body *b, const int32_t *triangle_sv,
                                     const double *x, const double *normals, int32_t t) {
  render_triangle r;
  for (int k = 0; k < 3; ++k) {
    r.x[k] = at3(x, b->surface[3 * (size_t)t + k]);
    r.n[k] = at3(normals, triangle_sv[3 * (size_t)t + k]);
  }
  return r;
}

static piola_v3 render_residual(const render_triangle *r, double v, double w, double d,
                                piola_v3 p) {
  piola_v3 position, normal;
  piola_render_point(piola_v3_make(1.0 - v - w, v, w), d, r->x[0], r->x[1], r->x[2], r->n[0],
                     r->n[1], r->n[2], &position, &normal);
  return piola_v3_sub(position, p);
}

/* Solves p = base(v, w) + d n(v, w) over triangle r by Newton's method (central differences
 * in v and w; exactly n in d) from (v, w, d); true when it converged inside the triangle. */
static bool embed_newton(const render_triangle *r, piola_v3 p, double scale, double *v, double *w,
                         double *d) {
  const double h = 1e-7, tolerance = 1e-12 * scale;
  for (int it = 0; it < NEWTON_ITERATIONS; ++it) {
    const piola_v3 f = render_residual(r, *v, *w, *d, p);
    if (piola_v3_length(f) <= tolerance) {
      const double u = 1.0 - *v - *w;
      return u >= -1e-9 && *v >= -1e-9 && *w >= -1e-9;
    }
    const piola_v3 jv = piola_v3_scale(
        piola_v3_sub(render_residual(r, *v + h, *w, *d, p), render_residual(r, *v - h, *w, *d, p)),
        0.5 / h);
    const piola_v3 jw = piola_v3_scale(
        piola_v3_sub(render_residual(r, *v, *w + h, *d, p), render_residual(r, *v, *w - h, *d, p)),
        0.5 / h);
    piola_v3 jd, unused;
    piola_render_point(piola_v3_make(1.0 - *v - *w, *v, *w), 0.0, r->x[0], r->x[1], r->x[2],
                       r->n[0], r->n[1], r->n[2], &unused, &jd);
    /* Cramer's rule for [jv jw jd] (dv, dw, dd) = -f. */
    const double det = piola_v3_dot(jv, piola_v3_cross(jw, jd));
    if (!(fabs(det) > 1e-300)) {
      return false;
    }
    const piola_v3 g = piola_v3_scale(f, -1.0);
    const double dv = piola_v3_dot(g, piola_v3_cross(jw, jd)) / det;
    const double dw = piola_v3_dot(jv, piola_v3_cross(g, jd)) / det;
    const double dd = piola_v3_dot(jv, piola_v3_cross(jw, g)) / det;
    *v += dv;
    *w += dw;
    *d += dd;
    if (!isfinite(*v) || !isfinite(*w) || !isfinite(*d) || fabs(*v) > 10.0 || fabs(*w) > 10.0) {
      return false;
    }
  }
  return false;
}

/* Squared distance from p to the box of triangle r. */
static double box_distance2(const render_triangle *r, piola_v3 p) {
  const double pc[3] = {p.x, p.y, p.z};
  double sum = 0.0;
  for (int a = 0; a < 3; ++a) {
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < 3; ++k) {
      const double c = a == 0 ? r->x[k].x : a == 1 ? r->x[k].y : r->x[k].z;
      lo = fmin(lo, c);
      hi = fmax(hi, c);
    }
    const double e = pc[a] < lo ? lo - pc[a] : pc[a] > hi ? pc[a] - hi : 0.0;
    sum += e * e;
  }
  return sum;
}

/* Embeds point p: its triangle and (u, v, w, d). */
static void embed_point(const piola_body *b, const int32_t *triangle_sv, const double *x,
                        const double *normals, piola_v3 p, int32_t *triangle, double coord[4]) {
  /* The nearest candidates, ascending by distance (then triangle index). */
  double best[PIOLA_RENDER_CANDIDATES];
  int32_t tri[PIOLA_RENDER_CANDIDATES];
  int n = 0;
  for (int32_t t = 0; t < b->surface_count; ++t) {
    const render_triangle r = load_triangle(b, triangle_sv, x, normals, t);
    if (n == PIOLA_RENDER_CANDIDATES && box_distance2(&r, p) > best[n - 1]) {
      continue;
    }
    const piola_v3 bary = piola_closest_on_triangle(p, r.x[0], r.x[1], r.x[2]);
    const piola_v3 q = piola_barycentric_point(bary, r.x[0], r.x[1], r.x[2]);
    const double d2 = piola_v3_dot(piola_v3_sub(p, q), piola_v3_sub(p, q));
    if (n == PIOLA_RENDER_CANDIDATES && d2 >= best[n - 1]) {
      continue;
    }
    int i = n < PIOLA_RENDER_CANDIDATES ? n++ : n - 1;
    while (i > 0 && best[i - 1] > d2) {
      best[i] = best[i - 1];
      tri[i] = tri[i - 1];
      --i;
    }
    best[i] = d2;
    tri[i] = t;
  }
  for (int k = 0; k < n; ++k) {
    const render_triangle r = load_triangle(b, triangle_sv, x, normals, tri[k]);
    const piola_v3 bary = piola_closest_on_triangle(p, r.x[0], r.x[1], r.x[2]);
    const piola_v3 q = piola_barycentric_point(bary, r.x[0], r.x[1], r.x[2]);
    piola_v3 base, normal;
    piola_render_point(bary, 0.0, r.x[0], r.x[1], r.x[2], r.n[0], r.n[1], r.n[2], &base, &normal);
    double v = bary.y, w = bary.z, d = piola_v3_dot(piola_v3_sub(p, q), normal);
    const double scale = piola_v3_length(piola_v3_sub(r.x[1], r.x[0])) +
                         piola_v3_length(piola_v3_sub(r.x[2], r.x[0])) + fabs(d);
    const bool reached = embed_newton(&r, p, scale, &v, &w, &d);
    if (reached || k == 0) {
      *triangle = tri[k];
      if (reached) {
        coord[0] = 1.0 - v - w;
        coord[1] = v;
        coord[2] = w;
        coord[3] = d;
      } else { /* the nearest triangle's closest point, until a later candidate reaches p */
        coord[0] = bary.x;
        coord[1] = bary.y;
        coord[2] = bary.z;
        coord[3] = piola_v3_dot(piola_v3_sub(p, q), normal);
      }
      if (reached) {
        return;
      }
    }
  }
}

/* The body-local positions of b, from the backend or the host arrays (double, 3 per vertex). */
static piola_status body_positions(const piola_world *w, const piola_body *b, double *x) {
  if (!w->ops->host_current(w)) {
    float *tmp = malloc(sizeof *tmp * 3 * (size_t)b->vertex_count);
    if (tmp == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    piola_status s = w->ops->read_range(w, b->vertex_offset, b->vertex_count, tmp, NULL);
    for (size_t i = 0; s == PIOLA_OK && i < 3 * (size_t)b->vertex_count; ++i) {
      x[i] = tmp[i];
    }
    free(tmp);
    return s;
  }
  memcpy(x, w->x + 3 * (size_t)b->vertex_offset, sizeof *x * 3 * (size_t)b->vertex_count);
  return PIOLA_OK;
}

/* The surface-vertex indices of the corners of b's surface triangles (3 each); NULL when out of
 * memory. */
static int32_t *triangle_corners(const piola_body *b) {
  int32_t *local_to_sv = malloc(sizeof *local_to_sv * (size_t)b->vertex_count);
  int32_t *corners = malloc(sizeof *corners * 3 * (size_t)b->surface_count);
  if (local_to_sv != NULL && corners != NULL) {
    for (int32_t k = 0; k < b->surface_vertex_count; ++k) {
      local_to_sv[b->surface_vertices[k]] = k;
    }
    for (size_t k = 0; k < 3 * (size_t)b->surface_count; ++k) {
      corners[k] = local_to_sv[b->surface[k]];
    }
  } else {
    free(corners);
    corners = NULL;
  }
  free(local_to_sv);
  return corners;
}

piola_status piola_body_attach_render_mesh(piola_world *w, piola_body_id body, const float *xyz,
                                           int32_t count, piola_render_mesh_id *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_body *b = piola_world_body(w, body);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  if (xyz == NULL || out == NULL || count < 1 || count > (INT32_MAX - 16) / 4) {
    PIOLA_MISUSE(w, "xyz != NULL && out != NULL && count >= 1");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < 3 * (size_t)count; ++i) {
    if (!isfinite(xyz[i])) {
      piola_log(&w->def.logger, PIOLA_LOG_ERROR, "render mesh: detail vertex %zu is not finite",
                i / 3);
      return PIOLA_ERROR_NON_FINITE;
    }
  }
  if (b->surface_count == 0) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "render mesh: the body has no surface");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const int32_t slot = piola_id_pool_next(&w->render_mesh_ids);
  if (slot < 0 || !piola_grow((void **)&w->render_meshes, sizeof *w->render_meshes, slot + 1,
                              &w->render_mesh_capacity)) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (slot == w->render_mesh_ids.count) {
    memset(&w->render_meshes[slot], 0, sizeof w->render_meshes[slot]);
  }
  piola_render_mesh rm;
  memset(&rm, 0, sizeof rm);
  rm.body = body;
  rm.count = count;
  rm.triangle = malloc(sizeof *rm.triangle * (size_t)count);
  rm.coordinates = malloc(sizeof *rm.coordinates * 4 * (size_t)count);
  double *x = malloc(sizeof *x * 3 * (size_t)b->vertex_count);
  double *normals = malloc(sizeof *normals * 3 * (size_t)b->surface_vertex_count);
  rm.triangle_sv = triangle_corners(b);
  piola_status s = PIOLA_ERROR_OUT_OF_MEMORY;
  if (rm.triangle != NULL && rm.coordinates != NULL && x != NULL && normals != NULL &&
      rm.triangle_sv != NULL &&
      piola_vertex_triangles(rm.triangle_sv, b->surface_count, 0, b->surface_vertex_count,
                             &rm.incident_start, &rm.incident)) {
    s = body_positions(w, b, x);
  }
  if (s == PIOLA_OK) {
    vertex_normals(b, rm.incident_start, rm.incident, x, normals);
    for (int32_t i = 0; i < count; ++i) {
      const piola_v3 p =
          piola_v3_make(xyz[3 * (size_t)i], xyz[3 * (size_t)i + 1], xyz[3 * (size_t)i + 2]);
      embed_point(b, rm.triangle_sv, x, normals, p, &rm.triangle[i],
                  rm.coordinates + 4 * (size_t)i);
    }
    s = w->ops->render_upload(w, &rm, b);
  }
  free(x);
  free(normals);
  if (s != PIOLA_OK) {
    render_mesh_release(w, &rm);
    return s;
  }
  w->render_meshes[slot] = rm;
  out->index1 = slot + 1;
  out->generation = piola_id_pool_take(&w->render_mesh_ids, slot);
  return PIOLA_OK;
}

/* The detail vertices over the current surface, on the host (double, then float). */
static piola_status render_host(const piola_world *w, const piola_render_mesh *rm,
                                const piola_body *b, float *positions, float *normals) {
  double *x = malloc(sizeof *x * 3 * (size_t)b->vertex_count);
  double *vn = malloc(sizeof *vn * 3 * (size_t)b->surface_vertex_count);
  piola_status s = PIOLA_ERROR_OUT_OF_MEMORY;
  if (x != NULL && vn != NULL) {
    s = body_positions(w, b, x);
  }
  if (s == PIOLA_OK) {
    vertex_normals(b, rm->incident_start, rm->incident, x, vn);
    for (int32_t i = 0; i < rm->count; ++i) {
      const render_triangle r = load_triangle(b, rm->triangle_sv, x, vn, rm->triangle[i]);
      const double *c = rm->coordinates + 4 * (size_t)i;
      piola_v3 p, n;
      piola_render_point(piola_v3_make(c[0], c[1], c[2]), c[3], r.x[0], r.x[1], r.x[2], r.n[0],
                         r.n[1], r.n[2], &p, &n);
      float *o = positions != NULL ? positions + 3 * (size_t)i : NULL;
      if (o != NULL) {
        o[0] = (float)p.x;
        o[1] = (float)p.y;
        o[2] = (float)p.z;
      }
      o = normals != NULL ? normals + 3 * (size_t)i : NULL;
      if (o != NULL) {
        o[0] = (float)n.x;
        o[1] = (float)n.y;
        o[2] = (float)n.z;
      }
    }
  }
  free(x);
  free(vn);
  return s;
}

static piola_status render_read(const piola_world *w, piola_render_mesh_id id, float *xyz,
                                int32_t count, bool want_normals) {
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_render_mesh *rm = render_mesh(w, id);
  if (rm == NULL) {
    return PIOLA_ERROR_INVALID_RENDER_MESH;
  }
  if (xyz == NULL) {
    PIOLA_MISUSE(w, "xyz != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (count != rm->count) {
    PIOLA_MISUSE(w, "count == the render mesh's vertex count");
    return PIOLA_ERROR_COUNT_MISMATCH;
  }
  const piola_body *b = piola_world_body(w, rm->body);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  float *positions = want_normals ? NULL : xyz, *normals = want_normals ? xyz : NULL;
  if (!w->ops->host_current(w)) {
    return w->ops->render_compute(w, rm, b, positions, normals);
  }
  return render_host(w, rm, b, positions, normals);
}

piola_status piola_render_mesh_get_positions(const piola_world *w, piola_render_mesh_id id,
                                             float *xyz, int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return render_read(w, id, xyz, count, false);
}

piola_status piola_render_mesh_get_normals(const piola_world *w, piola_render_mesh_id id,
                                           float *xyz, int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return render_read(w, id, xyz, count, true);
}

piola_status piola_world_remove_render_mesh(piola_world *w, piola_render_mesh_id id) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_render_mesh *rm = render_mesh(w, id);
  if (rm == NULL) {
    return PIOLA_ERROR_INVALID_RENDER_MESH;
  }
  render_mesh_release(w, rm);
  memset(rm, 0, sizeof *rm);
  piola_id_pool_free(&w->render_mesh_ids, (int32_t)(rm - w->render_meshes));
  return PIOLA_OK;
}
