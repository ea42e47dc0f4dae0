/* Helpers of the world-level tests; see world_helpers.h. */
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const float wt_unit_tet[12] = {0.0f, 0.0f, 0.0f, 0.5f, 0.0f,        0.86602540f,
                               1.0f, 0.0f, 0.0f, 0.5f, 0.81649658f, 0.28867513f};

piola_world *wt_world(piola_test *t, piola_test_log *log, int *misuse, float dt, int32_t substeps,
                      int32_t iterations, float damping, bool gravity) {
  piola_world_def def = piola_test_world_def(log, misuse);
  def.dt = dt;
  def.substeps = substeps;
  def.iterations = iterations;
  def.damping = damping;
  if (!gravity) {
    def.gravity[0] = def.gravity[1] = def.gravity[2] = 0.0f;
  }
  piola_world *w = NULL;
  piola_status s = piola_world_create(&def, &w);
  CHECK_MSG(t, s == PIOLA_OK && w != NULL, "piola_world_create: %s", piola_status_string(s));
  return s == PIOLA_OK ? w : NULL;
}

piola_material wt_material(piola_model model, piola_solver solver, float youngs_modulus) {
  piola_material m = piola_default_material();
  m.model = model;
  m.solver = solver;
  m.youngs_modulus = youngs_modulus;
  return m;
}

static uint64_t hash_doubles(uint64_t h, const double *a, size_t n) {
  return a != NULL ? piola_test_fnv1a(h, a, n * sizeof *a) : h;
}

wt_snapshot wt_snapshot_take(const piola_world *w, const piola_body_id *bodies, int32_t count) {
  wt_snapshot s;
  memset(&s, 0, sizeof s);
  piola_world_get_stats(w, &s.stats);
  s.material_count = w->material_count;
  s.cloth_material_count = w->cloth_material_count;
  s.tets_dirty = w->tets_dirty;
  s.def = w->def;
  size_t nv = (size_t)w->vertex_count;
  uint64_t h = PIOLA_TEST_FNV_OFFSET;
  h = hash_doubles(h, w->x, 3 * nv);
  h = hash_doubles(h, w->p, 3 * nv);
  h = hash_doubles(h, w->v, 3 * nv);
  h = hash_doubles(h, w->w, nv);
  if (!w->tets_dirty && w->cloth.tri_count > 0) {
    h = piola_test_fnv1a(h, w->cloth.tri_vertices,
                         4 * (size_t)w->cloth.tri_count * sizeof(int32_t));
    h = hash_doubles(h, w->cloth.tri_lambda, (size_t)w->cloth.tri_count);
  }
  if (!w->tets_dirty && w->solver.tet_count > 0) {
    size_t nt = (size_t)w->solver.tet_count;
    h = piola_test_fnv1a(h, w->solver.tet_vertices, 4 * nt * sizeof *w->solver.tet_vertices);
    h = hash_doubles(h, w->solver.tet_m, 9 * nt);
    h = hash_doubles(h, w->solver.tet_lambda, nt);
  }
  h = piola_test_fnv1a(h, w->colliders, (size_t)w->collider_count * sizeof *w->colliders);
  h = piola_test_fnv1a(h, w->collider_slots,
                       (size_t)w->collider_ids.count * sizeof *w->collider_slots);
  s.host_hash = h;
  h = PIOLA_TEST_FNV_OFFSET;
  for (int32_t b = 0; b < count; ++b) {
    int32_t n = piola_body_get_vertex_count(w, bodies[b]);
    if (n <= 0) {
      h = piola_test_fnv1a(h, &n, sizeof n);
      continue;
    }
    float *buf = malloc(sizeof *buf * 3 * (size_t)n);
    if (buf == NULL) {
      continue;
    }
    piola_body_get_positions(w, bodies[b], buf, n);
    h = piola_test_fnv1a(h, buf, sizeof *buf * 3 * (size_t)n);
    piola_body_get_velocities(w, bodies[b], buf, n);
    h = piola_test_fnv1a(h, buf, sizeof *buf * 3 * (size_t)n);
    piola_body_get_inverse_masses(w, bodies[b], buf, n);
    h = piola_test_fnv1a(h, buf, sizeof *buf * (size_t)n);
    free(buf);
  }
  s.api_hash = h;
  return s;
}

bool wt_snapshot_equal(const wt_snapshot *a, const wt_snapshot *b) {
  const piola_stats *x = &a->stats, *y = &b->stats;
  return x->body_count == y->body_count && x->vertex_count == y->vertex_count &&
         x->tet_count == y->tet_count && x->collider_count == y->collider_count &&
         x->triangle_count == y->triangle_count && x->bend_count == y->bend_count &&
         x->cloth_color_count == y->cloth_color_count && x->color_count == y->color_count &&
         x->largest_color == y->largest_color && x->smallest_color == y->smallest_color &&
         x->step_count == y->step_count && a->material_count == b->material_count &&
         a->cloth_material_count == b->cloth_material_count && a->tets_dirty == b->tets_dirty &&
         memcmp(&a->def, &b->def, sizeof a->def) == 0 && a->host_hash == b->host_hash &&
         a->api_hash == b->api_hash;
}

uint64_t wt_positions_hash(const piola_world *w, const piola_body_id *bodies, int32_t count) {
  uint64_t h = PIOLA_TEST_FNV_OFFSET;
  for (int32_t b = 0; b < count; ++b) {
    float *xyz = wt_get_positions(w, bodies[b]);
    if (xyz != NULL) {
      h = piola_test_fnv1a(h, xyz,
                           sizeof *xyz * 3 * (size_t)piola_body_get_vertex_count(w, bodies[b]));
      free(xyz);
    }
  }
  return h;
}

uint64_t wt_state_hash(const piola_world *w, const piola_body_id *bodies, int32_t count) {
  uint64_t h = PIOLA_TEST_FNV_OFFSET;
  for (int32_t b = 0; b < count; ++b) {
    const int32_t n = piola_body_get_vertex_count(w, bodies[b]);
    float *x = n > 0 ? malloc(sizeof *x * 3 * (size_t)n) : NULL;
    float *v = n > 0 ? malloc(sizeof *v * 3 * (size_t)n) : NULL;
    const bool read = x != NULL && v != NULL &&
                      piola_body_get_positions(w, bodies[b], x, n) == PIOLA_OK &&
                      piola_body_get_velocities(w, bodies[b], v, n) == PIOLA_OK;
    if (read) {
      h = piola_test_fnv1a(h, x, sizeof *x * 3 * (size_t)n);
      h = piola_test_fnv1a(h, v, sizeof *v * 3 * (size_t)n);
    }
    free(x);
    free(v);
    if (!read) {
      return 0;
    }
  }
  return h;
}

float *wt_get_positions(const piola_world *w, piola_body_id body) {
  int32_t n = piola_body_get_vertex_count(w, body);
  if (n <= 0) {
    return NULL;
  }
  float *xyz = malloc(sizeof *xyz * 3 * (size_t)n);
  if (xyz != NULL && piola_body_get_positions(w, body, xyz, n) != PIOLA_OK) {
    free(xyz);
    xyz = NULL;
  }
  return xyz;
}

static void edge(const float *xyz, int32_t a, int32_t b, double e[3]) {
  for (int k = 0; k < 3; ++k) {
    e[k] = (double)xyz[3 * (size_t)b + k] - (double)xyz[3 * (size_t)a + k];
  }
}

double wt_signed_volume(const piola_tet_mesh *mesh, const float *xyz) {
  double sum = 0.0;
  for (int32_t t = 0; t < mesh->tet_count; ++t) {
    const int32_t *q = mesh->tets + 4 * (size_t)t;
    double a[3], b[3], c[3];
    edge(xyz, q[0], q[1], a);
    edge(xyz, q[0], q[2], b);
    edge(xyz, q[0], q[3], c);
    sum += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
            a[2] * (b[0] * c[1] - b[1] * c[0])) /
           6.0;
  }
  return sum;
}

double wt_max_edge_error(const piola_tet_mesh *mesh, const float *xyz) {
  double worst = 0.0;
  for (int32_t t = 0; t < mesh->tet_count; ++t) {
    const int32_t *q = mesh->tets + 4 * (size_t)t;
    for (int a = 0; a < 4; ++a) {
      for (int b = a + 1; b < 4; ++b) {
        double e[3], r[3];
        edge(xyz, q[a], q[b], e);
        edge(mesh->positions, q[a], q[b], r);
        double l = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
        double l0 = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
        worst = fmax(worst, fabs(l / l0 - 1.0));
      }
    }
  }
  return worst;
}

void wt_momenta(const piola_world *w, double *mass, double p[3], double l[3]) {
  *mass = 0.0;
  for (int k = 0; k < 3; ++k) {
    p[k] = l[k] = 0.0;
  }
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    if (!(w->w[i] > 0.0)) {
      continue;
    }
    double m = 1.0 / w->w[i];
    const double *x = w->x + 3 * (size_t)i, *v = w->v + 3 * (size_t)i;
    *mass += m;
    for (int k = 0; k < 3; ++k) {
      p[k] += m * v[k];
    }
    l[0] += m * (x[1] * v[2] - x[2] * v[1]);
    l[1] += m * (x[2] * v[0] - x[0] * v[2]);
    l[2] += m * (x[0] * v[1] - x[1] * v[0]);
  }
}

int32_t wt_max_vertex_degree(const piola_tet_mesh *mesh) {
  int32_t *degree = calloc((size_t)mesh->vertex_count, sizeof *degree);
  int32_t worst = 0;
  if (degree == NULL) {
    return -1;
  }
  for (size_t i = 0; i < 4 * (size_t)mesh->tet_count; ++i) {
    int32_t d = ++degree[mesh->tets[i]];
    worst = d > worst ? d : worst;
  }
  free(degree);
  return worst;
}

int32_t *wt_spatial_rank(const int32_t *tets, int32_t tet_count, const float *positions,
                         const float translation[3]) {
  if (tet_count < 1) {
    return NULL;
  }
  double *centroid = malloc(sizeof *centroid * 3 * (size_t)tet_count);
  piola_keyed_index *order = malloc(sizeof *order * (size_t)tet_count);
  int32_t *rank = malloc(sizeof *rank * (size_t)tet_count);
  if (centroid == NULL || order == NULL || rank == NULL) {
    free(centroid);
    free(order);
    free(rank);
    return NULL;
  }
  for (int32_t t = 0; t < tet_count; ++t) {
    for (int k = 0; k < 3; ++k) {
      double sum = 0.0; /* the rest position as the world computes it, in double */
      for (int a = 0; a < 4; ++a) {
        sum += (double)positions[3 * (size_t)tets[4 * (size_t)t + a] + k] + translation[k];
      }
      centroid[3 * (size_t)t + k] = 0.25 * sum;
    }
  }
  piola_spatial_order(centroid, tet_count, order);
  for (int32_t i = 0; i < tet_count; ++i) {
    rank[order[i].index] = i;
  }
  free(centroid);
  free(order);
  return rank;
}

bool wt_load_armadillo(piola_tet_mesh *out) {
  const char *dir = piola_test_data_dir();
  if (dir == NULL) {
    return false;
  }
  char node[4096], ele[4096];
  snprintf(node, sizeof node, "%s/armadillo/armadillo_4k.node", dir);
  snprintf(ele, sizeof ele, "%s/armadillo/armadillo_4k.ele", dir);
  return piola_mesh_load_tetgen(node, ele, out) == PIOLA_OK;
}

piola_collider_def wt_funnel_def(float base_radius, float top_radius, float height) {
  piola_collider_def def = piola_default_collider_def();
  def.type = PIOLA_COLLIDER_FUNNEL;
  memset(&def.shape, 0, sizeof def.shape); /* only the funnel's fields, as given */
  def.shape.funnel.axis[1] = 1.0f;
  def.shape.funnel.base_radius = base_radius;
  def.shape.funnel.top_radius = top_radius;
  def.shape.funnel.height = height;
  return def;
}

piola_tet_mesh wt_box(int32_t cx, int32_t cy, int32_t cz, float sx, float sy, float sz) {
  piola_tet_mesh m;
  memset(&m, 0, sizeof m);
  const int32_t cells[3] = {cx, cy, cz};
  const float size[3] = {sx, sy, sz};
  if (piola_mesh_make_box(cells, size, &m) != PIOLA_OK) {
    memset(&m, 0, sizeof m);
  }
  return m;
}

uint64_t wt_squashed_box_hash(piola_iteration_scheme scheme, int32_t threads) {
  piola_tet_mesh box = wt_box(5, 3, 3, 0.5f, 0.3f, 0.3f);
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.iteration_scheme = scheme;
  def.cpu_threads = threads;
  piola_world *w = NULL;
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e5f;
  piola_body_id id;
  const float up[3] = {0.0f, 1.0f, 0.0f};
  uint64_t hash = 0;
  bool ok = box.tet_count > 0 && piola_world_create(&def, &w) == PIOLA_OK &&
            piola_world_add_tet_body(w, &box, &mat, NULL, &id) == PIOLA_OK;
  for (int32_t i = 0; ok && i < box.vertex_count; ++i) {
    box.positions[3 * i + 1] = 0.3f + 0.3f * box.positions[3 * i + 1];
  }
  ok = ok && piola_body_set_positions(w, id, box.positions, box.vertex_count) == PIOLA_OK &&
       piola_world_add_plane(w, up, 0.0f, 0.5f, NULL) == PIOLA_OK;
  for (int s = 0; ok && s < 60; ++s) {
    ok = piola_world_step(w) == PIOLA_OK;
  }
  if (ok) {
    hash = wt_state_hash(w, &id, 1);
  }
  piola_world_destroy(w);
  piola_mesh_free(&box);
  return hash;
}

/* The collider of wt_incline_make_on: the slab's corners are (+-2, 0 or -0.5, +-2) turned by th
 * about z. */
static piola_status incline_collider(piola_world *w, double th, float mu, wt_slope slope,
                                     piola_collider_id *out) {
  const float normal[3] = {(float)-sin(th), (float)cos(th), 0.0f};
  if (slope == WT_SLOPE_PLANE) {
    return piola_world_add_plane(w, normal, 0.0f, mu, out);
  }
  float corner[24];
  for (int i = 0; i < 8; ++i) {
    const double x = (i & 1) ? 2.0 : -2.0, y = (i & 2) ? 0.0 : -0.5;
    corner[3 * i] = (float)(x * cos(th) - y * sin(th));
    corner[3 * i + 1] = (float)(x * sin(th) + y * cos(th));
    corner[3 * i + 2] = (i & 4) ? 2.0f : -2.0f;
  }
  /* the faces -z, +z, -y, +y, -x, +x, each two triangles wound outwards */
  static const int32_t quad[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4},
                                     {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  int32_t tri[36];
  for (int f = 0; f < 6; ++f) {
    const int32_t t[6] = {quad[f][0], quad[f][1], quad[f][2], quad[f][0], quad[f][2], quad[f][3]};
    memcpy(tri + 6 * f, t, sizeof t);
  }
  piola_collider_def def = piola_default_collider_def();
  def.type = PIOLA_COLLIDER_MESH;
  def.shape.mesh.positions = corner;
  def.shape.mesh.vertex_count = 8;
  def.shape.mesh.triangles = tri;
  def.shape.mesh.triangle_count = 12;
  def.static_friction = def.dynamic_friction = mu;
  if (slope == WT_SLOPE_MESH) {
    return piola_world_add_collider(w, &def, out);
  }
  piola_sdf_shape grid;
  piola_status s = piola_sdf_from_mesh(&def.shape.mesh, 0.05f, 0.1f, &grid);
  if (s == PIOLA_OK) {
    def.type = PIOLA_COLLIDER_SDF;
    def.shape.sdf = grid;
    s = piola_world_add_collider(w, &def, out);
    piola_sdf_free(&grid);
  }
  return s;
}

piola_status wt_incline_make(const piola_world_def *def, float mu, piola_world **out,
                             piola_body_id *body, piola_collider_id *plane) {
  return wt_incline_make_on(def, mu, WT_SLOPE_PLANE, out, body, plane);
}

piola_status wt_incline_make_on(const piola_world_def *def, float mu, wt_slope slope,
                                piola_world **out, piola_body_id *body, piola_collider_id *plane) {
  const double th = 20.0 * WT_PI / 180.0;
  const int32_t cells[3] = {2, 2, 2};
  const float size[3] = {0.2f, 0.2f, 0.2f};
  piola_tet_mesh box;
  *out = NULL;
  piola_status s = piola_mesh_make_box(cells, size, &box);
  if (s != PIOLA_OK) {
    return s;
  }
  s = piola_world_create(def, out);
  /* rotated by 20 degrees about z, its bottom face on the plane */
  for (int32_t i = 0; i < box.vertex_count; ++i) {
    const double x = box.positions[3 * i] - 0.1, y = box.positions[3 * i + 1];
    box.positions[3 * i] = (float)(x * cos(th) - y * sin(th));
    box.positions[3 * i + 1] = (float)(x * sin(th) + y * cos(th));
    box.positions[3 * i + 2] -= 0.1f;
  }
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(*out, &box, &mat, NULL, body);
  }
  if (s == PIOLA_OK) {
    s = incline_collider(*out, th, mu, slope, plane);
  }
  piola_mesh_free(&box);
  if (s != PIOLA_OK) {
    piola_world_destroy(*out);
    *out = NULL;
  }
  return s;
}

double wt_incline_slide(const piola_world_def *def, float mu, double *lowest) {
  return wt_incline_slide_on(def, mu, WT_SLOPE_PLANE, lowest);
}

double wt_incline_slide_on(const piola_world_def *def, float mu, wt_slope slope, double *lowest) {
  const double th = 20.0 * WT_PI / 180.0;
  const float normal[3] = {(float)-sin(th), (float)cos(th), 0.0f};
  piola_world *w = NULL;
  piola_body_id id;
  if (wt_incline_make_on(def, mu, slope, &w, &id, NULL) != PIOLA_OK) {
    return NAN;
  }
  const int32_t n = w->vertex_count; /* the box is the world's only body */
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  double c[2][3] = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, low = INFINITY;
  piola_status s = x != NULL ? PIOLA_OK : PIOLA_ERROR_OUT_OF_MEMORY;
  /* the CPU reference's own positions in double (the box is the world's only body), else the
   * floats read back */
  piola_stats st;
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(w, &st);
  }
  const bool host = s == PIOLA_OK && st.backend == PIOLA_BACKEND_CPU_REFERENCE;
  for (int step = 0; step <= 200 && s == PIOLA_OK; ++step) {
    if (step > 0) {
      s = piola_world_step(w);
    }
    if (s == PIOLA_OK && !host) {
      s = piola_body_get_positions(w, id, x, n);
    }
    for (int32_t i = 0; s == PIOLA_OK && i < n; ++i) {
      double p[3];
      for (int a = 0; a < 3; ++a) {
        p[a] = host ? w->x[3 * (size_t)i + (size_t)a] : (double)x[3 * i + a];
      }
      if (step > 0) {
        low = fmin(low, (double)normal[0] * p[0] + (double)normal[1] * p[1]);
      }
      for (int a = 0; a < 3 && (step == 0 || step == 200); ++a) {
        c[step == 0 ? 0 : 1][a] += p[a] / n;
      }
    }
  }
  const double d[3] = {c[1][0] - c[0][0], c[1][1] - c[0][1], c[1][2] - c[0][2]};
  free(x);
  piola_world_destroy(w);
  if (lowest != NULL) {
    *lowest = low;
  }
  return s == PIOLA_OK ? sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) : NAN;
}
