/* Tests of the triangle-mesh and SDF colliders (kernels/piola_mesh.h, src/host/collider_mesh.c):
 * a closed cube mesh pushes points out exactly as the analytic box does (pseudo-normal signs at
 * edges and corners included); an open quad keeps a particle on its side however fast it moves;
 * in worlds, an Armadillo (or the procedural creature without the data) dropped into a bowl
 * loaded from an OBJ file (closed) and onto a heightfield terrain of 20k triangles (open) is
 * never inside the bowl's solid or below the terrain and comes to rest; a moving flat mesh
 * carries a box by friction like the conveyor box; an SDF of the bowl (piola_sdf_from_mesh) gives
 * the same rest position within 1 cm; bad meshes and grids get a status and change nothing. The
 * world tests run on the CPU reference and (opencl_ variants) on OpenCL. */
#include "scratch.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const float mesh_identity[4] = {0.0f, 0.0f, 0.0f, 1.0f};
static const float mesh_zero[3] = {0.0f, 0.0f, 0.0f};

/* ---- Generated meshes ------------------------------------------------------------------ */

typedef struct gen_mesh {
  float *positions;
  int32_t *triangles;
  int32_t vertex_count, triangle_count;
} gen_mesh;

static void gen_free(gen_mesh *m) {
  free(m->positions);
  free(m->triangles);
  memset(m, 0, sizeof *m);
}

static piola_mesh_shape gen_shape(const gen_mesh *m) {
  piola_mesh_shape s = {m->positions, m->vertex_count, m->triangles, m->triangle_count};
  return s;
}

static double gen_volume(const gen_mesh *m) {
  double v = 0.0;
  for (int32_t t = 0; t < m->triangle_count; ++t) {
    const float *a = m->positions + 3 * m->triangles[3 * t],
                *b = m->positions + 3 * m->triangles[3 * t + 1],
                *c = m->positions + 3 * m->triangles[3 * t + 2];
    v += ((double)a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) -
          (double)a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
          (double)a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0])) /
         6.0;
  }
  return v;
}

/* The cube [-h, h]^3 as 12 outward triangles. */
static gen_mesh gen_cube(float h) {
  gen_mesh m;
  m.vertex_count = 8;
  m.triangle_count = 12;
  m.positions = malloc(sizeof *m.positions * 24);
  m.triangles = malloc(sizeof *m.triangles * 36);
  for (int i = 0; i < 8; ++i) {
    m.positions[3 * i] = (i & 1) ? h : -h;
    m.positions[3 * i + 1] = (i & 2) ? h : -h;
    m.positions[3 * i + 2] = (i & 4) ? h : -h;
  }
  static const int32_t q[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4},
                                  {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  for (int f = 0; f < 6; ++f) {
    const int32_t t[6] = {q[f][0], q[f][1], q[f][2], q[f][0], q[f][2], q[f][3]};
    memcpy(m.triangles + 6 * f, t, sizeof t);
  }
  if (gen_volume(&m) < 0.0) { /* outward */
    for (int t = 0; t < 12; ++t) {
      const int32_t s = m.triangles[3 * t + 1];
      m.triangles[3 * t + 1] = m.triangles[3 * t + 2];
      m.triangles[3 * t + 2] = s;
    }
  }
  return m;
}

/* A solid bowl: the shell between spheres of radius `outer` and `inner` about (0, rim, 0), below
 * the rim's height, closed by the flat rim; `around` segments, `rings` per quarter arc. */
static gen_mesh gen_bowl(float inner, float outer, float rim, int around, int rings) {
  gen_mesh m;
  const int profile = 2 * rings; /* non-pole profile points: outer rings 1..rings, inner */
  m.vertex_count = 2 + profile * around;
  m.triangle_count = around * (2 + 2 * (profile - 1));
  m.positions = malloc(sizeof *m.positions * 3 * (size_t)m.vertex_count);
  m.triangles = malloc(sizeof *m.triangles * 3 * (size_t)m.triangle_count);
  float *p = m.positions;
  p[0] = 0.0f, p[1] = rim - outer, p[2] = 0.0f;
  for (int i = 0; i < profile; ++i) {
    const bool out = i < rings;
    const int k = out ? i + 1 : profile - i; /* the arc's step, rings at the rim */
    const double th = 0.5 * WT_PI * k / rings, r = out ? outer : inner;
    for (int a = 0; a < around; ++a) {
      const double ph = 2.0 * WT_PI * a / around;
      float *v = p + 3 * (1 + i * around + a);
      v[0] = (float)(r * sin(th) * cos(ph));
      v[1] = (float)(rim - r * cos(th));
      v[2] = (float)(r * sin(th) * sin(ph));
    }
  }
  const int last = m.vertex_count - 1;
  p[3 * last] = 0.0f, p[3 * last + 1] = rim - inner, p[3 * last + 2] = 0.0f;
  int32_t *t = m.triangles;
  for (int a = 0; a < around; ++a) {
    const int b = (a + 1) % around;
    *t++ = 0, *t++ = 1 + a, *t++ = 1 + b;
    for (int i = 0; i + 1 < profile; ++i) {
      const int r0 = 1 + i * around, r1 = r0 + around;
      *t++ = r0 + a, *t++ = r1 + a, *t++ = r1 + b;
      *t++ = r0 + a, *t++ = r1 + b, *t++ = r0 + b;
    }
    const int rl = 1 + (profile - 1) * around;
    *t++ = rl + a, *t++ = last, *t++ = rl + b;
  }
  if (gen_volume(&m) < 0.0) {
    for (int32_t k = 0; k < m.triangle_count; ++k) {
      const int32_t s = m.triangles[3 * k + 1];
      m.triangles[3 * k + 1] = m.triangles[3 * k + 2];
      m.triangles[3 * k + 2] = s;
    }
  }
  return m;
}

/* The terrain's height (m) at (x, z). */
static double terrain_height(double x, double z) {
  return 0.06 * sin(3.0 * x) * cos(2.0 * z);
}

/* A heightfield over [-size, size]^2 of n x n cells, 2 n^2 triangles facing +y. */
static gen_mesh gen_terrain(float size, int n) {
  gen_mesh m;
  m.vertex_count = (n + 1) * (n + 1);
  m.triangle_count = 2 * n * n;
  m.positions = malloc(sizeof *m.positions * 3 * (size_t)m.vertex_count);
  m.triangles = malloc(sizeof *m.triangles * 3 * (size_t)m.triangle_count);
  for (int k = 0; k <= n; ++k) {
    for (int i = 0; i <= n; ++i) {
      float *v = m.positions + 3 * (k * (n + 1) + i);
      v[0] = -size + 2.0f * size * (float)i / (float)n;
      v[2] = -size + 2.0f * size * (float)k / (float)n;
      v[1] = (float)terrain_height(v[0], v[2]);
    }
  }
  int32_t *t = m.triangles;
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i < n; ++i) {
      const int v00 = k * (n + 1) + i, v10 = v00 + 1, v01 = v00 + n + 1, v11 = v01 + 1;
      *t++ = v00, *t++ = v01, *t++ = v10;
      *t++ = v10, *t++ = v01, *t++ = v11;
    }
  }
  return m;
}

/* The mesh's surface height under (x, z) (the heightfield's triangles, linear in each), or NAN
 * outside it. */
static double gen_terrain_surface(const gen_mesh *m, int n, float size, double x, double z) {
  const double c = 2.0 * size / n;
  const double gx = (x + size) / c, gz = (z + size) / c;
  if (!(gx >= 0.0 && gz >= 0.0 && gx <= n && gz <= n)) {
    return NAN;
  }
  const int i = gx >= n ? n - 1 : (int)gx, k = gz >= n ? n - 1 : (int)gz;
  const double fx = gx - i, fz = gz - k;
  const float *v = m->positions;
  const double h00 = v[3 * (k * (n + 1) + i) + 1], h10 = v[3 * (k * (n + 1) + i + 1) + 1];
  const double h01 = v[3 * ((k + 1) * (n + 1) + i) + 1],
               h11 = v[3 * ((k + 1) * (n + 1) + i + 1) + 1];
  /* triangles (v00, v01, v10) where fx + fz <= 1, else (v10, v01, v11) */
  if (fx + fz <= 1.0) {
    return h00 + fx * (h10 - h00) + fz * (h01 - h00);
  }
  return h11 + (1.0 - fx) * (h01 - h11) + (1.0 - fz) * (h10 - h11);
}

/* ---- Unit tests on the shared functions ---------------------------------------------- */

/* The world-free record and data of a mesh, as piola_world_add_collider makes them. */
static bool mesh_record(piola_test *t, const gen_mesh *g, float thickness, piola_collider_data *c,
                        piola_shape_data *d) {
  char reason[256];
  piola_mesh_shape s = gen_shape(g);
  piola_status st = piola_mesh_data_build(&s, thickness, d, reason, sizeof reason);
  CHECK_MSG(t, st == PIOLA_OK, "build: %s (%s)", piola_status_string(st), reason);
  if (st != PIOLA_OK) {
    return false;
  }
  memset(c, 0, sizeof *c);
  c->kind = PIOLA_COLLIDER_KIND_MESH;
  memcpy(c->a, d->lo, sizeof d->lo);
  memcpy(c->b, d->hi, sizeof d->hi);
  c->a[3] = d->thickness;
  c->b[3] = d->closed ? 1.0f : 0.0f;
  c->c[1] = (float)(2 * d->node_count);
  c->c[2] = (float)d->node_count;
  c->c[3] = (float)d->triangle_count;
  c->rotation[3] = 1.0f;
  return true;
}

/* A closed cube mesh and the box collider of the same size give the same depth and normal for
 * points inside (where the nearest face is unique) and no contact outside, next to edges and
 * corners too, where the nearest face's own normal would call a point outside inside. */
void test_mesh_collider_cube_equals_box(piola_test *t) {
  gen_mesh cube = gen_cube(0.5f);
  piola_collider_data c;
  piola_shape_data d;
  REQUIRE(t, mesh_record(t, &cube, 0.01f, &c, &d));
  CHECK(t, d.closed && d.thickness == 0.0f && d.triangle_count == 12);
  piola_collider_def bd = piola_default_collider_def();
  bd.type = PIOLA_COLLIDER_BOX;
  piola_collider_data box;
  char reason[256];
  REQUIRE_OK(t, piola_collider_pack(&bd, &box, reason, sizeof reason));
  uint32_t seed = 12345u;
  int inside = 0, worst_outside = 0;
  double worst = 0.0;
  for (int i = 0; i < 4000; ++i) {
    double q[3];
    for (int k = 0; k < 3; ++k) {
      seed = seed * 1664525u + 1013904223u;
      q[k] = -0.7 + 1.4 * (double)(seed >> 8) / 16777216.0;
    }
    const piola_v3 p = piola_v3_make(q[0], q[1], q[2]);
    piola_v3 nm = piola_v3_make(0, 0, 0), nb = piola_v3_make(0, 0, 0);
    const double dm = piola_mesh_contact(&c, d.entries, p, p, &nm);
    const double db = piola_collider_contact(&box, p, p, &nb);
    if (db > 0.0) {
      ++inside;
      /* a unique nearest face: the two smallest depths differ */
      double dd[3] = {0.5 - fabs(q[0]), 0.5 - fabs(q[1]), 0.5 - fabs(q[2])};
      double lo = fmin(dd[0], fmin(dd[1], dd[2])),
             mid = dd[0] + dd[1] + dd[2] - lo - fmax(dd[0], fmax(dd[1], dd[2]));
      if (mid - lo > 1e-6) {
        worst = fmax(worst, fabs(dm - db) + piola_v3_length(piola_v3_sub(nm, nb)));
      } else {
        worst = fmax(worst, fabs(dm - db));
      }
    } else if (dm > 0.0) {
      ++worst_outside;
    }
  }
  printf("  %d of 4000 points inside; largest difference %.3g; %d outside points in contact\n",
         inside, worst, worst_outside);
  CHECK(t, inside > 1000);
  CHECK_MSG(t, worst < 1e-6, "mesh and box differ by %.3g", worst);
  CHECK_MSG(t, worst_outside == 0, "%d points outside the cube found inside", worst_outside);
  /* Just outside an edge and a corner: the nearest point is on the edge (corner), where one
   * face's normal points away from the point on one side: outside all the same. */
  const piola_v3 edge = piola_v3_make(0.5005, 0.5004, 0.1),
                 corner = piola_v3_make(0.501, 0.5003, 0.5002);
  piola_v3 n;
  CHECK(t, !(piola_mesh_contact(&c, d.entries, edge, edge, &n) > 0.0));
  CHECK(t, !(piola_mesh_contact(&c, d.entries, corner, corner, &n) > 0.0));
  const piola_v3 in_corner = piola_v3_make(0.499, 0.4995, 0.4999);
  CHECK(t, piola_mesh_contact(&c, d.entries, in_corner, in_corner, &n) > 0.0);
  piola_shape_data_free(&d);
  gen_free(&cube);
}

/* An open unit quad at y = 0 (two triangles), thickness 0.01: a particle coming from above is
 * kept 0.01 above it, also one that moved 1 m through it in the substep, and one coming from
 * below is kept below; beside the quad nothing happens; within the thickness over its edge a
 * particle is pushed away from the edge. */
void test_mesh_collider_open_wall(piola_test *t) {
  gen_mesh q;
  q.vertex_count = 4;
  q.triangle_count = 2;
  q.positions = malloc(sizeof *q.positions * 12);
  q.triangles = malloc(sizeof *q.triangles * 6);
  const float v[12] = {-0.5f, 0, -0.5f, 0.5f, 0, -0.5f, -0.5f, 0, 0.5f, 0.5f, 0, 0.5f};
  const int32_t tri[6] = {0, 2, 1, 1, 2, 3};
  memcpy(q.positions, v, sizeof v);
  memcpy(q.triangles, tri, sizeof tri);
  piola_collider_data c;
  piola_shape_data d;
  REQUIRE(t, mesh_record(t, &q, 0.01f, &c, &d));
  CHECK(t, !d.closed && d.thickness == 0.01f);
  piola_v3 n = piola_v3_make(0, 0, 0);
  /* from above, ending 2 mm above: pushed to 1 cm */
  double depth = piola_mesh_contact(&c, d.entries, piola_v3_make(0.1, 0.05, 0.2),
                                    piola_v3_make(0.1, 0.002, 0.2), &n);
  CHECK_MSG(t, fabs(depth - 0.008) < 1e-7 && fabs(n.y - 1.0) < 1e-7, "above: %.9g (%g %g %g)",
            depth, n.x, n.y, n.z);
  /* through it, 1 m down in one substep */
  depth = piola_mesh_contact(&c, d.entries, piola_v3_make(0.1, 0.05, 0.2),
                             piola_v3_make(0.1, -0.95, 0.2), &n);
  CHECK_MSG(t, fabs(depth - 0.96) < 1e-6 && fabs(n.y - 1.0) < 1e-7, "through: %.9g", depth);
  /* through its shared diagonal, from below */
  depth = piola_mesh_contact(&c, d.entries, piola_v3_make(0.0, -0.2, 0.0),
                             piola_v3_make(0.0, 0.3, 0.0), &n);
  CHECK_MSG(t, fabs(depth - 0.31) < 1e-6 && fabs(n.y + 1.0) < 1e-7, "diagonal: %.9g (%g)", depth,
            n.y);
  /* beside it */
  depth = piola_mesh_contact(&c, d.entries, piola_v3_make(0.7, 0.05, 0.0),
                             piola_v3_make(0.7, -0.5, 0.0), &n);
  CHECK(t, !(depth > 0.0));
  /* 5 mm out from the edge x = 0.5 at its height: pushed out along +x */
  depth = piola_mesh_contact(&c, d.entries, piola_v3_make(0.505, 0.0, 0.0),
                             piola_v3_make(0.505, 0.0, 0.0), &n);
  CHECK_MSG(t, fabs(depth - 0.005) < 1e-7 && fabs(n.x - 1.0) < 1e-6, "edge: %.9g (%g %g %g)", depth,
            n.x, n.y, n.z);
  piola_shape_data_free(&d);
  gen_free(&q);
}

/* The generated bowl is solid in its wall only: inside the wall, not in its hollow or under it. */
void test_mesh_collider_bowl_solid(piola_test *t) {
  gen_mesh b = gen_bowl(0.6f, 0.65f, 0.65f, 48, 12);
  piola_collider_data c;
  piola_shape_data d;
  REQUIRE(t, mesh_record(t, &b, 0.0f, &c, &d));
  CHECK(t, d.closed);
  const double probes[][4] = {{0.0, 0.025, 0.0, 1.0},  {0.0, 0.3, 0.0, 0.0},
                              {0.0, 0.06, 0.0, 0.0},   {0.0, -0.01, 0.0, 0.0},
                              {0.625, 0.64, 0.0, 1.0}, {0.0, 0.64, 0.625, 1.0},
                              {0.3, 0.3, 0.2, 0.0},    {0.7, 0.3, 0.0, 0.0}};
  for (size_t i = 0; i < sizeof probes / sizeof probes[0]; ++i) {
    const piola_v3 p = piola_v3_make(probes[i][0], probes[i][1], probes[i][2]);
    piola_v3 n;
    const double depth = piola_mesh_contact(&c, d.entries, p, p, &n);
    CHECK_MSG(t, (depth > 0.0) == (probes[i][3] > 0.5), "(%g %g %g): depth %g", p.x, p.y, p.z,
              depth);
  }
  piola_shape_data_free(&d);
  gen_free(&b);
}

/* ---- Worlds ---------------------------------------------------------------------------- */

static const char *bname(bool opencl) {
  return opencl ? "OpenCL" : "reference";
}

/* The dropped body: the Armadillo scaled to 0.45 m tall (or a creature of that height without
 * the data), its lowest point at `y`, centred on x = z = 0. */
static bool load_body(piola_tet_mesh *m, float y) {
  bool armadillo = wt_load_armadillo(m);
  if (!armadillo && piola_mesh_make_creature(0.45f, m) != PIOLA_OK) {
    return false;
  }
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = fmin(lo[k], m->positions[3 * i + k]);
      hi[k] = fmax(hi[k], m->positions[3 * i + k]);
    }
  }
  const double s = 0.45 / (hi[1] - lo[1]);
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    float *p = m->positions + 3 * i;
    p[0] = (float)((p[0] - 0.5 * (lo[0] + hi[0])) * s);
    p[1] = (float)((p[1] - lo[1]) * s + y);
    p[2] = (float)((p[2] - 0.5 * (lo[2] + hi[2])) * s);
  }
  return true;
}

static piola_world *drop_world(piola_test *t, bool opencl, bool contacts, piola_body_id *body,
                               float y) {
  piola_world_def def = opencl_test_world_def(
      opencl ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE, NULL, NULL);
  def.substeps = 2;
  /* The body's thinnest parts (fingers, ears) are about a centimetre: a contact thickness below
   * half of that, so that its self contacts leave its rest shape alone. */
  def.contact_thickness = 0.004f;
  def.contacts = contacts;
  def.damping = contacts ? 2.0f : 3.0f;
  piola_world *w = NULL;
  CHECK_STATUS(t, piola_world_create(&def, &w), PIOLA_OK);
  piola_tet_mesh m;
  if (w == NULL || !load_body(&m, y)) {
    piola_world_destroy(w);
    return NULL;
  }
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e5f;
  const piola_status s = piola_world_add_tet_body(w, &m, &mat, mesh_zero, body);
  CHECK_STATUS(t, s, PIOLA_OK);
  piola_mesh_free(&m);
  if (s != PIOLA_OK) {
    piola_world_destroy(w);
    return NULL;
  }
  return w;
}

/* Mean vertex speed (m/s; a vertex or two of the scaled Armadillo keep trembling at a few
 * cm/s on a plane too), centre of mass (m) of a body. */
static double body_state(const piola_world *w, piola_body_id b, double com[3]) {
  const int32_t n = piola_body_get_vertex_count(w, b);
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  double mean = NAN;
  if (x != NULL && v != NULL && piola_body_get_positions(w, b, x, n) == PIOLA_OK &&
      piola_body_get_velocities(w, b, v, n) == PIOLA_OK) {
    mean = 0.0;
    com[0] = com[1] = com[2] = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      mean += sqrt((double)v[3 * i] * v[3 * i] + (double)v[3 * i + 1] * v[3 * i + 1] +
                   (double)v[3 * i + 2] * v[3 * i + 2]) /
              n;
      for (int k = 0; k < 3; ++k) {
        com[k] += x[3 * i + k] / (double)n;
      }
    }
  }
  free(x);
  free(v);
  return mean;
}

/* How deep (m) the deepest vertex of body b is inside the closed mesh d (0 when none is). */
static double deepest_inside(const piola_world *w, piola_body_id b, const piola_collider_data *c,
                             const piola_shape_data *d) {
  float *x = wt_get_positions(w, b);
  double deepest = x == NULL ? INFINITY : 0.0;
  for (int32_t i = 0; x != NULL && i < piola_body_get_vertex_count(w, b); ++i) {
    const piola_v3 p = piola_v3_make(x[3 * i], x[3 * i + 1], x[3 * i + 2]);
    piola_v3 q, pn;
    if (piola_mesh_nearest(c, d->entries, p, 1e30, &q, &pn) >= 0 &&
        piola_v3_dot(piola_v3_sub(p, q), pn) < 0.0) {
      deepest = fmax(deepest, piola_v3_length(piola_v3_sub(p, q)));
    }
  }
  free(x);
  return deepest;
}

#define BOWL_INNER 0.6f
#define BOWL_OUTER 0.65f
#define BOWL_RIM 0.65f

/* Writes the bowl as an OBJ file and loads it back. */
static bool bowl_obj(piola_test *t, scratch *sc, piola_tri_mesh *out) {
  gen_mesh b = gen_bowl(BOWL_INNER, BOWL_OUTER, BOWL_RIM, 48, 12);
  size_t cap = 64 * (size_t)(b.vertex_count + b.triangle_count) + 64, len = 0;
  char *text = malloc(cap);
  CHECK(t, text != NULL);
  if (text == NULL) {
    gen_free(&b);
    return false;
  }
  len += (size_t)snprintf(text + len, cap - len, "# a solid bowl\no bowl\n");
  for (int32_t i = 0; i < b.vertex_count; ++i) {
    len += (size_t)snprintf(text + len, cap - len, "v %.9g %.9g %.9g\n", (double)b.positions[3 * i],
                            (double)b.positions[3 * i + 1], (double)b.positions[3 * i + 2]);
  }
  for (int32_t k = 0; k < b.triangle_count; ++k) {
    len += (size_t)snprintf(text + len, cap - len, "f %d %d %d\n", (int)b.triangles[3 * k] + 1,
                            (int)b.triangles[3 * k + 1] + 1, (int)b.triangles[3 * k + 2] + 1);
  }
  const char *path = scratch_write(sc, "bowl.obj", text, len);
  free(text);
  gen_free(&b);
  return path != NULL && piola_mesh_load_obj(path, out) == PIOLA_OK;
}

typedef struct rest_result {
  double com[3];
  double speed;
  double deepest; /* the deepest a vertex was inside the bowl at any frame (m) */
} rest_result;

/* The body dropped into the bowl (mesh, or sdf: its distance field with 2 cm cells) for 3 s. */
static bool bowl_drop(piola_test *t, bool opencl, bool sdf, rest_result *r) {
  scratch sc;
  if (!scratch_open(&sc)) {
    CHECK(t, false);
    return false;
  }
  piola_tri_mesh bowl;
  const bool loaded = bowl_obj(t, &sc, &bowl);
  CHECK(t, loaded);
  scratch_close(&sc);
  if (!loaded) {
    return false;
  }
  piola_mesh_shape shape = {bowl.positions, bowl.vertex_count, bowl.triangles, bowl.triangle_count};
  piola_collider_data rec;
  piola_shape_data data;
  gen_mesh view = {bowl.positions, bowl.triangles, bowl.vertex_count, bowl.triangle_count};
  if (!mesh_record(t, &view, 0.0f, &rec, &data)) {
    piola_tri_mesh_free(&bowl);
    return false;
  }
  CHECK(t, data.closed);
  piola_body_id body;
  /* Without contacts: the body has nothing else to meet, and its self contacts make where it
   * comes to rest sensitive to the landing (with them on, the mesh and the SDF bowl keep every
   * vertex within 2e-5 m of the solid but rest 6-8 cm apart, and the body is still rolling at
   * 3 s), so that the two could not be compared. */
  piola_world *w = drop_world(t, opencl, false, &body, 0.25f);
  bool ok = w != NULL;
  piola_collider_def def = piola_default_collider_def();
  piola_sdf_shape grid;
  memset(&grid, 0, sizeof grid);
  if (ok && sdf) {
    def.type = PIOLA_COLLIDER_SDF;
    CHECK_STATUS(t, piola_sdf_from_mesh(&shape, 0.02f, 0.04f, &grid), PIOLA_OK);
    def.shape.sdf = grid;
  } else {
    def.type = PIOLA_COLLIDER_MESH;
    def.shape.mesh = shape;
  }
  /* High friction: the body stays where it lands, rather than roll and slide to a rest that
   * depends on every detail of the way there. */
  def.static_friction = 1.0f;
  def.dynamic_friction = 0.8f;
  piola_collider_id id;
  ok = ok && piola_world_add_collider(w, &def, &id) == PIOLA_OK;
  CHECK(t, ok);
  piola_sdf_free(&grid);
  r->deepest = 0.0;
  for (int step = 0; ok && step < 600; ++step) {
    ok = piola_world_step(w) == PIOLA_OK;
    r->deepest = fmax(r->deepest, deepest_inside(w, body, &rec, &data));
  }
  CHECK(t, ok);
  if (ok) {
    r->speed = body_state(w, body, r->com);
  }
  piola_world_destroy(w);
  piola_shape_data_free(&data);
  piola_tri_mesh_free(&bowl);
  return ok;
}

static void bowl_rest(piola_test *t, bool opencl) {
  rest_result mesh, field;
  if (!bowl_drop(t, opencl, false, &mesh) || !bowl_drop(t, opencl, true, &field)) {
    return;
  }
  const double shift =
      sqrt(pow(mesh.com[0] - field.com[0], 2) + pow(mesh.com[1] - field.com[1], 2) +
           pow(mesh.com[2] - field.com[2], 2));
  printf("  %s, mesh bowl: rests at (%.4f, %.4f, %.4f) m, mean vertex speed %.3g m/s, at most "
         "%.3g m inside; SDF bowl: (%.4f, %.4f, %.4f), %.3g m/s, %.3g m inside; %.4f m apart\n",
         bname(opencl), mesh.com[0], mesh.com[1], mesh.com[2], mesh.speed, mesh.deepest,
         field.com[0], field.com[1], field.com[2], field.speed, field.deepest, shift);
  /* In the bowl's hollow (its inner bottom at y = 0.05), never inside its solid, at rest. */
  CHECK_MSG(t, mesh.com[1] > 0.05 && mesh.com[1] < 0.4, "%s: at %.3f m", bname(opencl),
            mesh.com[1]);
  /* Outside up to what the last iteration's projection leaves in a concave solid: friction's
   * correction runs along the tangent plane, which enters a concave surface, and a point pushed
   * out of one facet of a valley can still be behind its neighbour (measured 0.11 mm; the next
   * iteration takes it out). */
  CHECK_MSG(t, mesh.deepest < 5e-4, "%s: a vertex %.3g m inside the bowl", bname(opencl),
            mesh.deepest);
  CHECK_MSG(t, mesh.speed < 0.02, "%s: not at rest (%.3g m/s)", bname(opencl), mesh.speed);
  CHECK_MSG(t, field.speed < 0.02, "%s: not at rest on the SDF (%.3g m/s)", bname(opencl),
            field.speed);
  CHECK_MSG(t, shift < 0.01, "%s: the SDF's rest position is %.4f m off the mesh's", bname(opencl),
            shift);
}

void test_mesh_collider_bowl(piola_test *t) {
  bowl_rest(t, false);
}

void test_opencl_mesh_collider_bowl(piola_test *t) {
  if (opencl_test_ready(t)) {
    bowl_rest(t, true);
  }
}

#define TERRAIN_SIZE 1.0f
#define TERRAIN_CELLS 100

/* The body dropped onto the open terrain (20k triangles) for 3 s: never below its surface (it
 * keeps the world's contact thickness, 4 mm, above it). */
static void terrain_rest(piola_test *t, bool opencl) {
  gen_mesh g = gen_terrain(TERRAIN_SIZE, TERRAIN_CELLS);
  REQUIRE(t, g.triangle_count == 20000);
  piola_body_id body;
  piola_world *w = drop_world(t, opencl, true, &body, 0.15f);
  REQUIRE(t, w != NULL);
  piola_collider_def def = piola_default_collider_def();
  def.type = PIOLA_COLLIDER_MESH;
  def.shape.mesh = gen_shape(&g);
  piola_collider_id id;
  REQUIRE_OK(t, piola_world_add_collider(w, &def, &id));
  double lowest = INFINITY;
  bool ok = true;
  const int32_t n = piola_body_get_vertex_count(w, body);
  for (int step = 0; ok && step < 600; ++step) {
    ok = piola_world_step(w) == PIOLA_OK;
    float *x = wt_get_positions(w, body);
    ok = ok && x != NULL;
    for (int32_t i = 0; ok && i < n; ++i) {
      const double h = gen_terrain_surface(&g, TERRAIN_CELLS, TERRAIN_SIZE, x[3 * i], x[3 * i + 2]);
      lowest = fmin(lowest, x[3 * i + 1] - h);
    }
    free(x);
  }
  CHECK(t, ok);
  double com[3];
  const double speed = body_state(w, body, com);
  printf("  %s: rests at (%.4f, %.4f, %.4f) m, mean vertex speed %.3g m/s; lowest vertex %.3g m "
         "above the terrain\n",
         bname(opencl), com[0], com[1], com[2], speed, lowest);
  CHECK_MSG(t, lowest > 0.0, "%s: a vertex %.3g m below the terrain", bname(opencl), -lowest);
  CHECK_MSG(t, com[1] > 0.0 && com[1] < 0.3, "%s: at %.3f m", bname(opencl), com[1]);
  CHECK_MSG(t, speed < 0.02, "%s: not at rest (%.3g m/s)", bname(opencl), speed);
  piola_world_destroy(w);
  gen_free(&g);
}

void test_mesh_collider_terrain(piola_test *t) {
  terrain_rest(t, false);
}

void test_opencl_mesh_collider_terrain(piola_test *t) {
  if (opencl_test_ready(t)) {
    terrain_rest(t, true);
  }
}

/* A flat open mesh (4 m x 2 m, 200 triangles) at y = 0 moving along x at 0.5 m/s carries a
 * 0.3 m box resting on it by friction, as the conveyor box does (test_colliders.c), and the box
 * never sinks below the surface. */
static void conveyor(piola_test *t, bool opencl) {
  gen_mesh g = gen_terrain(1.0f, 10);
  for (int32_t i = 0; i < g.vertex_count; ++i) {
    g.positions[3 * i] *= 2.0f;
    g.positions[3 * i + 1] = 0.0f;
  }
  piola_world_def def = opencl_test_world_def(
      opencl ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE, NULL, NULL);
  def.substeps = 2;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_collider_def c = piola_default_collider_def();
  c.type = PIOLA_COLLIDER_MESH;
  c.shape.mesh = gen_shape(&g);
  piola_collider_id id;
  REQUIRE_OK(t, piola_world_add_collider(w, &c, &id));
  REQUIRE_OK(t, piola_world_set_collider_pose(w, id, mesh_zero, mesh_identity,
                                              (const float[3]){0.5f, 0.0f, 0.0f}, mesh_zero));
  piola_tet_mesh box = wt_box(3, 3, 3, 0.3f, 0.3f, 0.3f);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  piola_body_id body;
  REQUIRE_OK(t, piola_world_add_tet_body(
                    w, &box, &mat, (const float[3]){-0.5f, def.contact_thickness, -0.15f}, &body));
  piola_mesh_free(&box);
  double lowest = INFINITY, start[3], com[3];
  body_state(w, body, start);
  for (int step = 0; step < 100; ++step) {
    REQUIRE_OK(t, piola_world_step(w));
    float *x = wt_get_positions(w, body);
    REQUIRE(t, x != NULL);
    for (int32_t i = 0; i < piola_body_get_vertex_count(w, body); ++i) {
      lowest = fmin(lowest, x[3 * i + 1]);
    }
    free(x);
  }
  body_state(w, body, com);
  float v[3 * 64];
  const int32_t n = piola_body_get_vertex_count(w, body);
  REQUIRE(t, n <= 64);
  REQUIRE_OK(t, piola_body_get_velocities(w, body, v, n));
  double vx = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    vx += v[3 * i] / n;
  }
  float pos[3];
  REQUIRE_OK(t, piola_world_get_collider_pose(w, id, pos, NULL, NULL, NULL));
  printf("  %s: carried at %.4f m/s, moved %.4f m (the mesh %.4f m); lowest vertex %.3g m\n",
         bname(opencl), vx, com[0] - start[0], (double)pos[0], lowest);
  CHECK_MSG(t, fabs(vx - 0.5) < 0.01, "%s: carried at %.4f m/s, not 0.5", bname(opencl), vx);
  CHECK_MSG(t, com[0] - start[0] > 0.18 && com[0] - start[0] < 0.25, "%s: moved %.4f m",
            bname(opencl), com[0] - start[0]);
  CHECK_MSG(t, lowest > 0.0, "%s: a vertex %.3g m into the mesh", bname(opencl), lowest);
  CHECK(t, fabs(pos[0] - 0.25) < 1e-5); /* 0.5 s at 0.5 m/s */
  piola_world_destroy(w);
  gen_free(&g);
}

void test_mesh_collider_conveyor(piola_test *t) {
  conveyor(t, false);
}

void test_opencl_mesh_collider_conveyor(piola_test *t) {
  if (opencl_test_ready(t)) {
    conveyor(t, true);
  }
}

/* ---- Bad input, removal, size ---------------------------------------------------------- */

/* Each bad mesh or grid is refused with its status and one logged error, and the world is left
 * as it was (no collider, no shape data, the same state). */
void test_mesh_collider_bad_input(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world *w = wt_world(t, &log, &misuse, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  gen_mesh cube = gen_cube(0.5f);
  piola_collider_def ok = piola_default_collider_def();
  ok.type = PIOLA_COLLIDER_MESH;
  ok.shape.mesh = gen_shape(&cube);
  piola_collider_id first;
  REQUIRE_OK(t, piola_world_add_collider(w, &ok, &first)); /* one mesh already in */
  const int32_t entries = w->shape_count;
  const wt_snapshot before = wt_snapshot_take(w, NULL, 0);
  float nan_positions[24];
  memcpy(nan_positions, cube.positions, sizeof nan_positions);
  nan_positions[7] = NAN;
  int32_t bad_index[36], negative[36];
  memcpy(bad_index, cube.triangles, sizeof bad_index);
  memcpy(negative, cube.triangles, sizeof negative);
  bad_index[17] = 8;
  negative[4] = -1;
  int32_t inward[36];
  for (int k = 0; k < 12; ++k) {
    inward[3 * k] = cube.triangles[3 * k];
    inward[3 * k + 1] = cube.triangles[3 * k + 2];
    inward[3 * k + 2] = cube.triangles[3 * k + 1];
  }
  const int32_t flat[6] = {0, 0, 1, 2, 2, 2};
  struct {
    const char *what;
    piola_mesh_shape shape;
    piola_status expected;
  } meshes[] = {
      {"NULL positions", {NULL, 8, cube.triangles, 12}, PIOLA_ERROR_INVALID_ARGUMENT},
      {"NULL triangles", {cube.positions, 8, NULL, 12}, PIOLA_ERROR_INVALID_ARGUMENT},
      {"zero triangles", {cube.positions, 8, cube.triangles, 0}, PIOLA_ERROR_INVALID_MESH},
      {"negative count", {cube.positions, 8, cube.triangles, -3}, PIOLA_ERROR_INVALID_MESH},
      {"two vertices", {cube.positions, 2, cube.triangles, 12}, PIOLA_ERROR_INVALID_MESH},
      {"index out of range", {cube.positions, 8, bad_index, 12}, PIOLA_ERROR_INVALID_MESH},
      {"negative index", {cube.positions, 8, negative, 12}, PIOLA_ERROR_INVALID_MESH},
      {"NaN position", {nan_positions, 8, cube.triangles, 12}, PIOLA_ERROR_NON_FINITE},
      {"inward closed mesh", {cube.positions, 8, inward, 12}, PIOLA_ERROR_INVALID_MESH},
      {"only zero-area triangles", {cube.positions, 8, flat, 2}, PIOLA_ERROR_INVALID_MESH},
      {"too many triangles",
       {cube.positions, 8, cube.triangles, 1 << 30},
       PIOLA_ERROR_INVALID_ARGUMENT},
  };
  for (size_t i = 0; i < sizeof meshes / sizeof meshes[0]; ++i) {
    piola_collider_def d = piola_default_collider_def();
    d.type = PIOLA_COLLIDER_MESH;
    d.shape.mesh = meshes[i].shape;
    const int errors = log.count[PIOLA_LOG_ERROR];
    piola_collider_id id = {0, 0};
    CHECK_MSG(t, piola_world_add_collider(w, &d, &id) == meshes[i].expected, "%s: not %s",
              meshes[i].what, piola_status_string(meshes[i].expected));
    CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] == errors + 1 && strstr(log.last, "mesh") != NULL,
              "%s: logged '%s'", meshes[i].what, log.last);
    CHECK(t, id.index1 == 0);
  }
  float good[8] = {-1, -1, -1, -1, 1, 1, 1, 1}, with_nan[8] = {-1, -1, -1, -1, 1, 1, NAN, 1};
  struct {
    const char *what;
    piola_sdf_shape shape;
    piola_status expected;
  } grids[] = {
      {"NULL distances", {NULL, {2, 2, 2}, {0, 0, 0}, 0.1f}, PIOLA_ERROR_INVALID_ARGUMENT},
      {"one point along y", {good, {2, 1, 4}, {0, 0, 0}, 0.1f}, PIOLA_ERROR_INVALID_ARGUMENT},
      {"zero cell", {good, {2, 2, 2}, {0, 0, 0}, 0.0f}, PIOLA_ERROR_INVALID_ARGUMENT},
      {"negative cell", {good, {2, 2, 2}, {0, 0, 0}, -0.1f}, PIOLA_ERROR_INVALID_ARGUMENT},
      {"NaN cell", {good, {2, 2, 2}, {0, 0, 0}, NAN}, PIOLA_ERROR_NON_FINITE},
      {"infinite origin", {good, {2, 2, 2}, {0, INFINITY, 0}, 0.1f}, PIOLA_ERROR_NON_FINITE},
      {"NaN distance", {with_nan, {2, 2, 2}, {0, 0, 0}, 0.1f}, PIOLA_ERROR_NON_FINITE},
      /* neighbours 2 m apart in value on a 0.1 m cell: no distance field */
      {"not a distance field", {good, {2, 2, 2}, {0, 0, 0}, 0.1f}, PIOLA_ERROR_INVALID_ARGUMENT},
      {"too many points",
       {good, {1 << 20, 1 << 20, 2}, {0, 0, 0}, 0.1f},
       PIOLA_ERROR_INVALID_ARGUMENT},
  };
  for (size_t i = 0; i < sizeof grids / sizeof grids[0]; ++i) {
    piola_collider_def d = piola_default_collider_def();
    d.type = PIOLA_COLLIDER_SDF;
    d.shape.sdf = grids[i].shape;
    const int errors = log.count[PIOLA_LOG_ERROR];
    CHECK_MSG(t, piola_world_add_collider(w, &d, NULL) == grids[i].expected, "%s: not %s",
              grids[i].what, piola_status_string(grids[i].expected));
    CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] == errors + 1 && strstr(log.last, "SDF") != NULL,
              "%s: logged '%s'", grids[i].what, log.last);
  }
  const wt_snapshot after = wt_snapshot_take(w, NULL, 0);
  CHECK(t, wt_snapshot_equal(&before, &after));
  CHECK(t, w->shape_count == entries && w->collider_count == 1);
  CHECK(t, misuse == 0);
  /* piola_sdf_from_mesh: an open mesh, bad sizes and NULLs are refused and leave *out alone. */
  piola_sdf_shape out;
  memset(&out, 0x5a, sizeof out);
  const piola_sdf_shape untouched = out;
  gen_mesh quad = gen_terrain(1.0f, 1);
  piola_mesh_shape open_shape = gen_shape(&quad), closed = gen_shape(&cube);
  CHECK_STATUS(t, piola_sdf_from_mesh(&open_shape, 0.1f, 0.0f, &out), PIOLA_ERROR_INVALID_MESH);
  CHECK_STATUS(t, piola_sdf_from_mesh(&closed, 0.0f, 0.0f, &out), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_sdf_from_mesh(&closed, 0.1f, -1.0f, &out), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_sdf_from_mesh(&closed, NAN, 0.0f, &out), PIOLA_ERROR_NON_FINITE);
  CHECK_STATUS(t, piola_sdf_from_mesh(&closed, 1e-6f, 0.0f, &out), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_sdf_from_mesh(NULL, 0.1f, 0.0f, &out), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_sdf_from_mesh(&closed, 0.1f, 0.0f, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, memcmp(&out, &untouched, sizeof out) == 0);
  /* A good one: the cube's field is its distance at the points (-0.5 at the centre). */
  REQUIRE_OK(t, piola_sdf_from_mesh(&closed, 0.25f, 0.25f, &out));
  CHECK(t, out.dims[0] == 7 && out.dims[1] == 7 && out.dims[2] == 7);
  CHECK(t, fabsf(out.distances[3 + 7 * (3 + 7 * 3)] + 0.5f) < 1e-6f);
  CHECK(t, fabsf(out.distances[0] - sqrtf(3.0f) * 0.25f) < 1e-6f);
  piola_sdf_free(&out);
  CHECK(t, out.distances == NULL);
  piola_sdf_free(NULL);
  gen_free(&quad);
  gen_free(&cube);
  piola_world_destroy(w);
}

/* Removing a mesh collider drops its data; a mesh and an SDF added after it move down and act as
 * before; moving one writes no shape data again. */
void test_mesh_collider_remove_compacts(piola_test *t) {
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  gen_mesh cube = gen_cube(0.5f), big = gen_cube(1.0f);
  piola_collider_def d = piola_default_collider_def();
  d.type = PIOLA_COLLIDER_MESH;
  d.shape.mesh = gen_shape(&cube);
  piola_collider_id a, b, c;
  REQUIRE_OK(t, piola_world_add_collider(w, &d, &a));
  d.shape.mesh = gen_shape(&big);
  REQUIRE_OK(t, piola_world_add_collider(w, &d, &b));
  piola_mesh_shape closed = gen_shape(&big);
  piola_sdf_shape grid;
  REQUIRE_OK(t, piola_sdf_from_mesh(&closed, 0.25f, 0.25f, &grid));
  d.type = PIOLA_COLLIDER_SDF;
  d.shape.sdf = grid;
  REQUIRE_OK(t, piola_world_add_collider(w, &d, &c));
  piola_sdf_free(&grid);
  const piola_v3 p = piola_v3_make(0.2, 0.8, 0.1);
  piola_v3 n1, n2, corr_b, corr_c, again_b, again_c;
  REQUIRE(t, piola_collider_correction_shapes(&w->colliders[1], w->shapes, p, p, 0.0, 0.005,
                                              &corr_b, &n1) == 1);
  REQUIRE(t, piola_collider_correction_shapes(&w->colliders[2], w->shapes, p, p, 0.0, 0.005,
                                              &corr_c, &n2) == 1);
  const int32_t before = w->shape_count;
  const uint64_t version = w->shapes_version;
  REQUIRE_OK(t, piola_world_set_collider_pose(w, b, (const float[3]){0, 0, 0}, mesh_identity,
                                              mesh_zero, mesh_zero));
  CHECK(t, w->shapes_version == version); /* a pose change uploads no shape data */
  REQUIRE_OK(t, piola_world_remove_collider(w, a));
  CHECK(t, w->collider_count == 2 && w->shape_count < before);
  CHECK(t, w->colliders[0].c[0] == 0.0f);
  CHECK(t, piola_collider_correction_shapes(&w->colliders[0], w->shapes, p, p, 0.0, 0.005, &again_b,
                                            &n1) == 1);
  CHECK(t, piola_collider_correction_shapes(&w->colliders[1], w->shapes, p, p, 0.0, 0.005, &again_c,
                                            &n2) == 1);
  CHECK(t, again_b.x == corr_b.x && again_b.y == corr_b.y && again_b.z == corr_b.z);
  CHECK(t, again_c.x == corr_c.x && again_c.y == corr_c.y && again_c.z == corr_c.z);
  CHECK(t, fabs(corr_b.y - 0.2) < 1e-6); /* 0.2 m under the big cube's top */
  REQUIRE_OK(t, piola_world_remove_collider(w, b));
  REQUIRE_OK(t, piola_world_remove_collider(w, c));
  CHECK(t, w->shape_count == 0);
  gen_free(&cube);
  gen_free(&big);
  piola_world_destroy(w);
}

/* A mesh of 100k triangles (a 224 x 224 heightfield) is added in well under a second. */
void test_mesh_collider_load_100k(piola_test *t) {
  gen_mesh g = gen_terrain(10.0f, 224);
  REQUIRE(t, g.triangle_count == 100352);
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  piola_collider_def d = piola_default_collider_def();
  d.type = PIOLA_COLLIDER_MESH;
  d.shape.mesh = gen_shape(&g);
  const double t0 = piola_now_ms();
  REQUIRE_OK(t, piola_world_add_collider(w, &d, NULL));
  const double ms = piola_now_ms() - t0;
  printf("  100352 triangles added in %.1f ms (%d nodes)\n", ms, (int)w->colliders[0].c[2]);
  CHECK_MSG(t, ms < 1000.0, "adding took %.0f ms", ms);
  piola_world_destroy(w);
  gen_free(&g);
}
