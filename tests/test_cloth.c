/* Cloth bodies in the solver (issue 9): piola_world_add_cloth's checks, mass lumping, the
 * membrane against the closed-form elongation of a hanging strip, the bending against the
 * small-deflection sag of a cantilevered strip, rest stability, draping over a sphere collider,
 * OpenCL against the CPU reference, determinism, a tet body that does not notice a cloth body
 * beside it, and tet bodies beside cloth under both OpenCL schedules. The physics tests run on
 * the CPU reference (double); the opencl_ variants run the same scenes on the OpenCL device
 * (PoCL here) with the schedule the world picks (per stage on CPU devices). Tolerances come from
 * the closed forms; measured values are in the comments. */
#include "crosscheck.h"
#include "piola_internal.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define G 9.81

/* A world of the given backend; NULL (and a failed check) on failure. */
static piola_world *cloth_world(piola_test *t, piola_backend backend, piola_test_log *log,
                                int *misuse, float dt, int32_t substeps, int32_t iterations,
                                float damping) {
  piola_world_def def = backend == PIOLA_BACKEND_CPU_REFERENCE
                            ? piola_test_world_def(log, misuse)
                            : opencl_test_world_def(backend, NULL, misuse);
  def.dt = dt;
  def.substeps = substeps;
  def.iterations = iterations;
  def.damping = damping;
  piola_world *w = NULL;
  piola_status s = piola_world_create(&def, &w);
  CHECK_MSG(t, s == PIOLA_OK && w != NULL, "piola_world_create: %s", piola_status_string(s));
  return s == PIOLA_OK ? w : NULL;
}

/* A grid of cells[0] x cells[1] squares of size[0] x size[1] m in the x-z plane. */
static piola_tri_mesh grid(int32_t cx, int32_t cz, float sx, float sz) {
  piola_tri_mesh m;
  memset(&m, 0, sizeof m);
  const int32_t cells[2] = {cx, cz};
  const float size[2] = {sx, sz};
  piola_mesh_make_grid(cells, size, &m);
  return m;
}

/* Pins (inverse mass 0) the vertices whose rest coordinate `axis` is at most `limit`. */
static void pin_below(piola_world *w, piola_body_id id, const piola_tri_mesh *m, int axis,
                      float limit) {
  float *inv = malloc(sizeof *inv * (size_t)m->vertex_count);
  piola_body_get_inverse_masses(w, id, inv, m->vertex_count);
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    if (m->positions[3 * i + axis] <= limit) {
      inv[i] = 0.0f;
    }
  }
  piola_body_set_inverse_masses(w, id, inv, m->vertex_count);
  free(inv);
}

/* ---- Input checks ------------------------------------------------------------------------ */

void test_cloth_add_bad_input(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world *w = wt_world(t, &log, &misuse, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  piola_tri_mesh good = grid(3, 2, 1.0f, 0.5f);
  REQUIRE(t, good.triangle_count == 12);
  piola_tet_mesh box = wt_box(1, 1, 1, 0.5f, 0.5f, 0.5f);
  piola_material tet_mat = piola_default_material();
  piola_cloth_material mat = piola_default_cloth_material();
  piola_body_id ids[2];
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &tet_mat, NULL, &ids[0]));
  REQUIRE_OK(t, piola_world_add_cloth(w, &good, &mat, NULL, &ids[1]));
  REQUIRE_OK(t, piola_world_step(w)); /* solver arrays built: their hash is compared too */

#define EXPECT_UNCHANGED(what, expr, expected)                                                     \
  do {                                                                                             \
    wt_snapshot before_ = wt_snapshot_take(w, ids, 2);                                             \
    int errors_ = log.count[PIOLA_LOG_ERROR];                                                      \
    CHECK_STATUS(t, expr, expected);                                                               \
    wt_snapshot after_ = wt_snapshot_take(w, ids, 2);                                              \
    CHECK_MSG(t, wt_snapshot_equal(&before_, &after_), "%s changed the world", what);              \
    if ((expected) != PIOLA_ERROR_INVALID_ARGUMENT) {                                              \
      CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] == errors_ + 1, "%s: no reason logged", what);       \
    }                                                                                              \
  } while (0)

  piola_body_id out = {0, 0};
  EXPECT_UNCHANGED("NULL mesh", piola_world_add_cloth(w, NULL, &mat, NULL, &out),
                   PIOLA_ERROR_INVALID_ARGUMENT);
  EXPECT_UNCHANGED("NULL material", piola_world_add_cloth(w, &good, NULL, NULL, &out),
                   PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, misuse == 2);
  CHECK_STATUS(t, piola_world_add_cloth(NULL, &good, &mat, NULL, &out),
               PIOLA_ERROR_INVALID_ARGUMENT);

  /* Materials. */
  piola_cloth_material bad = mat;
  bad.internal_cookie = 0;
  EXPECT_UNCHANGED("no cookie", piola_world_add_cloth(w, &good, &bad, NULL, &out),
                   PIOLA_ERROR_INVALID_DEF);
  const struct {
    const char *name;
    int field;
    float value;
  } mats[] = {{"density 0", 0, 0.0f},         {"density NaN", 0, NAN},
              {"stretch_weft < 0", 1, -1.0f}, {"stretch_warp 0", 2, 0.0f},
              {"shear inf", 3, INFINITY},     {"poisson_weft 1 (det <= 0)", 4, 1.0f},
              {"bending < 0", 5, -1e-3f},     {"bending NaN", 5, NAN},
              {"damping < 0", 6, -1e-3f},     {"damping inf", 6, INFINITY}};
  for (size_t i = 0; i < sizeof mats / sizeof mats[0]; ++i) {
    bad = mat;
    float *f[7] = {&bad.density,      &bad.stretch_weft,      &bad.stretch_warp, &bad.shear,
                   &bad.poisson_weft, &bad.bending_stiffness, &bad.damping};
    *f[mats[i].field] = mats[i].value;
    EXPECT_UNCHANGED(mats[i].name, piola_world_add_cloth(w, &good, &bad, NULL, &out),
                     PIOLA_ERROR_INVALID_MATERIAL);
  }
  bad = mat;
  bad.solver = (piola_solver)7;
  EXPECT_UNCHANGED("unknown solver", piola_world_add_cloth(w, &good, &bad, NULL, &out),
                   PIOLA_ERROR_INVALID_MATERIAL);

  /* Meshes: a copy of the grid with one thing wrong at a time. */
  const size_t np = 3 * (size_t)good.vertex_count, nt = 3 * (size_t)good.triangle_count;
  float *pos = malloc(sizeof *pos * np);
  float *uvs = malloc(sizeof *uvs * 2 * (size_t)good.vertex_count);
  int32_t *tris = malloc(sizeof *tris * (nt + 3));
  REQUIRE(t, pos != NULL && uvs != NULL && tris != NULL);
  piola_tri_mesh m;
  for (int c = 0; c < 9; ++c) {
    memcpy(pos, good.positions, sizeof *pos * np);
    memcpy(uvs, good.uvs, sizeof *uvs * 2 * (size_t)good.vertex_count);
    memcpy(tris, good.triangles, sizeof *tris * nt);
    m = good;
    m.positions = pos;
    m.uvs = uvs;
    m.triangles = tris;
    const char *name = "";
    piola_status expected = PIOLA_ERROR_INVALID_MESH;
    const float *translation = NULL;
    static const float nan_translation[3] = {0.0f, NAN, 0.0f};
    switch (c) {
    case 0:
      name = "index out of range";
      tris[4] = m.vertex_count;
      break;
    case 1:
      name = "negative index";
      tris[0] = -1;
      break;
    case 2:
      name = "repeated index";
      tris[5] = tris[4];
      break;
    case 3: /* triangle 0 made flat: its third corner on its first edge */
      name = "degenerate triangle";
      for (int k = 0; k < 3; ++k) {
        pos[3 * tris[2] + k] = 0.5f * (pos[3 * tris[0] + k] + pos[3 * tris[1] + k]);
      }
      break;
    case 4: /* a third triangle on the edge of triangle 0 */
      name = "non-manifold edge";
      tris[nt] = tris[0];
      tris[nt + 1] = tris[1];
      tris[nt + 2] = m.vertex_count - 1;
      m.triangle_count++;
      break;
    case 5:
      name = "non-finite position";
      pos[7] = INFINITY;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 6:
      name = "non-finite uv";
      uvs[3] = NAN;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 7:
      name = "non-finite translation";
      translation = nan_translation;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 8:
      name = "no triangles";
      m.triangle_count = 0;
      break;
    }
    EXPECT_UNCHANGED(name, piola_world_add_cloth(w, &m, &mat, translation, &out), expected);
  }
  CHECK(t, out.index1 == 0);              /* never written on failure */
  m.triangle_count = good.triangle_count; /* the last case's change; the arrays are intact */
  /* The unchanged copy is accepted, so each case above failed for its own reason. */
  CHECK_STATUS(t, piola_world_add_cloth(w, &m, &mat, NULL, NULL), PIOLA_OK);
#undef EXPECT_UNCHANGED
  free(pos);
  free(uvs);
  free(tris);
  piola_tri_mesh_free(&good);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

/* ---- Masses, counts, surface ------------------------------------------------------------- */

void test_cloth_mass_lumping_and_counts(piola_test *t) {
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  piola_tri_mesh m = grid(4, 3, 2.0f, 1.5f);
  piola_cloth_material mat = piola_default_cloth_material();
  mat.density = 0.3f;
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, NULL, &id));
  CHECK(t, piola_body_get_vertex_count(w, id) == 20);
  float inv[20];
  REQUIRE_OK(t, piola_body_get_inverse_masses(w, id, inv, 20));
  double total = 0.0;
  for (int i = 0; i < 20; ++i) {
    total += 1.0 / inv[i];
  }
  CHECK_NEAR(t, total, 0.3 * 2.0 * 1.5, 1e-6); /* density * area */
  /* A cell is 0.5 x 0.5 m: triangles of 0.125 m^2. The checkerboard grid gives its interior
   * vertices alternately 8 triangles (vertex (1, 1): every diagonal around it meets it) and 4
   * (vertex (2, 1)); corner (0, 0) has 2. Each gets density * area / 3 per triangle. */
  CHECK_NEAR(t, 1.0 / inv[1 * 5 + 1], 0.3 * 8 * 0.125 / 3.0, 1e-7);
  CHECK_NEAR(t, 1.0 / inv[1 * 5 + 2], 0.3 * 4 * 0.125 / 3.0, 1e-7);
  CHECK_NEAR(t, 1.0 / inv[0], 0.3 * 2 * 0.125 / 3.0, 1e-7);
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.triangle_count == 24);
  CHECK(t, st.bend_count == 3 * 4 * 3 - 4 - 3); /* interior edges: 3 c_x c_z - c_x - c_z */
  /* the cloth's triangles are its (two-sided) collision surface, over all its 20 vertices */
  CHECK(t, st.tet_count == 0 && st.surface_triangles == 24 && st.surface_vertices == 20);
  CHECK_NEAR(t, st.elastic_energy, 0.0, 1e-12);
  int32_t count = 0, tris[72];
  REQUIRE_OK(t, piola_body_get_surface(w, id, tris, 24, &count));
  CHECK(t, count == 24 && memcmp(tris, m.triangles, sizeof tris) == 0);
  REQUIRE_OK(t, piola_world_step(w));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  /* A color's items share no vertex: at least the most items around one vertex (6 triangles and
   * 12 stencils at an interior vertex of this grid). */
  CHECK_MSG(t, st.cloth_color_count >= 18 && st.cloth_color_count <= 40, "%d cloth colors",
            (int)st.cloth_color_count);
  /* Bending stiffness 0: no stencils. */
  mat.bending_stiffness = 0.0f;
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, NULL, NULL));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.triangle_count == 48 && st.bend_count == 29);
  piola_tri_mesh_free(&m);
  piola_world_destroy(w);
}

/* The coloring of the solver's cloth arrays: no vertex twice in a color, over both kinds. */
void test_cloth_coloring_valid(piola_test *t) {
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  piola_tri_mesh m = grid(7, 5, 1.0f, 0.7f);
  piola_cloth_material mat = piola_default_cloth_material();
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, NULL, NULL));
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, NULL, NULL));
  REQUIRE_OK(t, piola_world_step(w));
  const piola_solver_cloth *c = &w->cloth;
  CHECK(t, c->tri_count == 2 * 70 && c->bend_count == 2 * (3 * 35 - 12));
  int32_t *stamp = malloc(sizeof *stamp * (size_t)w->vertex_count);
  REQUIRE(t, stamp != NULL);
  for (int32_t v = 0; v < w->vertex_count; ++v) {
    stamp[v] = -1;
  }
  int32_t seen[2] = {0, 0}, clashes = 0;
  for (int32_t color = 0; color < c->color_count; ++color) {
    for (int kind = 0; kind < PIOLA_CLOTH_KIND_COUNT; ++kind) {
      const int32_t *idx = kind == PIOLA_KIND_TRIANGLE ? c->tri_vertices : c->bend_vertices;
      const int corners = kind == PIOLA_KIND_TRIANGLE ? 3 : 4;
      for (int32_t i = c->kind_first[kind][color];
           i < c->kind_first[kind][color] + c->kind_size[kind][color]; ++i, ++seen[kind]) {
        for (int k = 0; k < corners; ++k) {
          int32_t v = idx[4 * i + k];
          clashes += stamp[v] == color;
          stamp[v] = color;
        }
      }
    }
  }
  CHECK(t, clashes == 0);
  CHECK(t, seen[0] == c->tri_count && seen[1] == c->bend_count);
  free(stamp);
  piola_tri_mesh_free(&m);
  piola_world_destroy(w);
}

/* ---- Membrane: a hanging strip ----------------------------------------------------------- */

/* A strip of length L (along -y, weft along its length) and width W hanging from its pinned
 * top edge; returns the elongation (m) after settling: the mean drop of the bottom edge less L.
 * nu = 0, so the closed form is rho_A g L^2 / (2 k). */
static double hanging_strip(piola_test *t, piola_backend backend, double rho, double k,
                            double length) {
  piola_world *w = cloth_world(t, backend, NULL, NULL, 0.01f, 10, 10, 4.0f);
  if (w == NULL) {
    return NAN;
  }
  piola_tri_mesh m = grid(16, 2, (float)length, 0.1f);
  /* (x, 0, z) -> (z, -x, 0): u (the weft) runs down the strip. */
  for (int32_t i = 0; i < m.vertex_count; ++i) {
    float x = m.positions[3 * i], z = m.positions[3 * i + 2];
    m.positions[3 * i] = z;
    m.positions[3 * i + 1] = -x;
    m.positions[3 * i + 2] = 0.0f;
  }
  piola_cloth_material mat = piola_default_cloth_material();
  mat.density = (float)rho;
  mat.stretch_weft = (float)k;
  mat.stretch_warp = (float)k;
  mat.shear = (float)(0.5 * k);
  mat.poisson_weft = 0.0f;
  mat.bending_stiffness = 0.0f;
  piola_body_id id;
  double result = NAN;
  if (piola_world_add_cloth(w, &m, &mat, NULL, &id) == PIOLA_OK) {
    pin_below(w, id, &m, 1, -1e30f); /* nothing yet */
    float *inv = malloc(sizeof *inv * (size_t)m.vertex_count);
    piola_body_get_inverse_masses(w, id, inv, m.vertex_count);
    for (int32_t i = 0; i < m.vertex_count; ++i) {
      if (m.positions[3 * i + 1] >= -1e-6f) {
        inv[i] = 0.0f; /* the top edge */
      }
    }
    piola_body_set_inverse_masses(w, id, inv, m.vertex_count);
    free(inv);
    for (int s = 0; s < 300; ++s) {
      piola_world_step(w);
      if (getenv("CLOTH_TRACE") && s % 25 == 0) {
        piola_stats st;
        piola_world_get_stats(w, &st);
        printf("  step %d: kinetic %.3g J\n", s, st.kinetic_energy);
      }
    }
    float *p = wt_get_positions(w, id);
    double sum = 0.0;
    int n = 0;
    for (int32_t i = 0; p != NULL && i < m.vertex_count; ++i) {
      if (m.positions[3 * i + 1] <= -(float)length + 1e-6f) {
        sum += -p[3 * i + 1];
        ++n;
      }
    }
    free(p);
    result = n > 0 ? sum / n - length : NAN;
  }
  piola_tri_mesh_free(&m);
  piola_world_destroy(w);
  return result;
}

static void check_hanging_strip(piola_test *t, piola_backend backend) {
  const double rho = 0.1, k = 100.0, length = 1.0;
  const double expected = rho * G * length * length / (2.0 * k); /* 4.905 mm */
  double e = hanging_strip(t, backend, rho, k, length);
  printf("hanging strip (%s): elongation %.4f mm, closed form %.4f mm (%+.2f%%)\n",
         piola_backend_name(backend), 1e3 * e, 1e3 * expected, 100.0 * (e / expected - 1.0));
  CHECK_MSG(t, fabs(e / expected - 1.0) <= 0.05, "elongation %.5g m, expected %.5g m", e, expected);
  /* k four times larger: a quarter of the elongation (the modulus means what it says). */
  double e4 = hanging_strip(t, backend, rho, 4.0 * k, length);
  printf("hanging strip (%s), 4 k: elongation %.4f mm, closed form %.4f mm (%+.2f%%)\n",
         piola_backend_name(backend), 1e3 * e4, 250.0 * expected,
         100.0 * (e4 / (0.25 * expected) - 1.0));
  CHECK_MSG(t, fabs(e4 / (0.25 * expected) - 1.0) <= 0.05, "elongation %.5g m at 4 k", e4);
}

void test_cloth_hanging_strip(piola_test *t) {
  check_hanging_strip(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_cloth_hanging_strip(piola_test *t) {
  if (opencl_test_ready(t)) {
    check_hanging_strip(t, PIOLA_BACKEND_OPENCL);
  }
}

/* ---- Rest -------------------------------------------------------------------------------- */

static void check_rest(piola_test *t, piola_backend backend) {
  piola_world *w = cloth_world(t, backend, NULL, NULL, 0.005f, 2, 5, 0.0f);
  REQUIRE(t, w != NULL);
  const float none[3] = {0.0f, 0.0f, 0.0f};
  REQUIRE_OK(t, piola_world_set_gravity(w, none));
  piola_tri_mesh m = grid(10, 10, 1.0f, 1.0f);
  /* A curved rest shape too: the grid bent into a quarter cylinder of radius 0.6 m. */
  piola_tri_mesh c = grid(10, 10, 1.0f, 1.0f);
  for (int32_t i = 0; i < c.vertex_count; ++i) {
    double a = c.positions[3 * i] / 0.6;
    c.positions[3 * i] = (float)(0.6 * sin(a));
    c.positions[3 * i + 1] = (float)(0.6 * (1.0 - cos(a)));
  }
  piola_cloth_material mat = piola_default_cloth_material();
  piola_body_id ids[2];
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, NULL, &ids[0]));
  REQUIRE_OK(t, piola_world_add_cloth(w, &c, &mat, (const float[3]){2.0f, 0.0f, 0.0f}, &ids[1]));
  pin_below(w, ids[0], &m, 0, 0.0f);
  float *start[2] = {wt_get_positions(w, ids[0]), wt_get_positions(w, ids[1])};
  for (int s = 0; s < 200; ++s) {
    REQUIRE_OK(t, piola_world_step(w));
  }
  double drift = 0.0;
  for (int b = 0; b < 2; ++b) {
    float *p = wt_get_positions(w, ids[b]);
    for (int32_t i = 0; p != NULL && start[b] != NULL && i < 3 * m.vertex_count; ++i) {
      drift = fmax(drift, fabs((double)p[i] - start[b][i]));
    }
    free(p);
    free(start[b]);
  }
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  printf("cloth at rest (%s): drift %.3g m, energy %.3g J\n", piola_backend_name(backend), drift,
         st.elastic_energy);
  if (backend == PIOLA_BACKEND_CPU_REFERENCE) {
    /* In double every constraint is below its energy guard at rest: no work at all. */
    CHECK_MSG(t, drift == 0.0, "drift %.3g m", drift);
    CHECK(t, st.kinetic_energy == 0.0);
  } else {
    /* In float the curved sheet's rest curvature (computed in double from the float positions)
     * is met to rounding only, so its hinges do a little work: measured 6.6e-9 m after 200
     * steps, below the float spacing of its coordinates (1.2e-7 m between 1 and 2 m). */
    CHECK_MSG(t, drift < 1e-7, "drift %.3g m", drift);
    CHECK_MSG(t, st.kinetic_energy < 1e-12, "kinetic %.3g J", st.kinetic_energy);
  }
  CHECK_MSG(t, st.elastic_energy < 1e-9, "energy %.3g J", st.elastic_energy);
  piola_tri_mesh_free(&m);
  piola_tri_mesh_free(&c);
  piola_world_destroy(w);
}

void test_cloth_rest_stays(piola_test *t) {
  check_rest(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_cloth_rest_stays(piola_test *t) {
  if (opencl_test_ready(t)) {
    check_rest(t, PIOLA_BACKEND_OPENCL);
  }
}

/* ---- Bending: a cantilevered strip ------------------------------------------------------- */

/* A horizontal strip of free length L (weft along it) clamped by pinning the two columns of
 * vertices at x = -dx and x = 0; returns the sag (m) of its free end, the mean over the tip's
 * vertices, after settling. */
static double cantilever_sag(piola_test *t, double rho, double d, double length, int32_t cells) {
  /* Gauss-Seidel converges slowly on bending (a fourth-order operator: the slowest mode's rate
   * is about (pi / cells)^4 per iteration) where each projection is stiff (alpha~ << S, the
   * PBD-like regime: then the sag no longer depends on D at all; measured: 45 mm for every D
   * with 20 substeps of 5 iterations). Many small substeps make alpha~ = 3 / (D h^2) dominate,
   * where XPBD converges in a few iterations: 200 and 400 substeps agree to 0.3%. */
  piola_world *w = cloth_world(t, PIOLA_BACKEND_CPU_REFERENCE, NULL, NULL, 0.01f, 200, 2, 8.0f);
  if (w == NULL) {
    return NAN;
  }
  const double dx = length / cells;
  piola_tri_mesh m = grid(cells + 1, 2, (float)(length + dx), (float)(2.0 * dx)); /* square cells */
  piola_cloth_material mat = piola_default_cloth_material();
  mat.density = (float)rho;
  mat.stretch_weft = mat.stretch_warp = 1000.0f;
  mat.shear = 500.0f;
  mat.poisson_weft = 0.0f;
  mat.bending_stiffness = (float)d;
  piola_body_id id;
  double sag = NAN;
  const float at[3] = {(float)-dx, 0.0f, 0.0f};
  if (piola_world_add_cloth(w, &m, &mat, at, &id) == PIOLA_OK) {
    pin_below(w, id, &m, 0, (float)(1.5 * dx)); /* rest x <= dx: the columns at -dx and 0 */
    for (int s = 0; s < 200; ++s) {
      piola_world_step(w);
    }
    float *p = wt_get_positions(w, id);
    double sum = 0.0;
    int n = 0;
    for (int32_t i = 0; p != NULL && i < m.vertex_count; ++i) {
      if (m.positions[3 * i] >= (float)(length + dx) - 1e-6f) {
        sum += -p[3 * i + 1];
        ++n;
      }
    }
    free(p);
    sag = n > 0 ? sum / n : NAN;
  }
  piola_tri_mesh_free(&m);
  piola_world_destroy(w);
  return sag;
}

/* The sag of a cantilever scales as 1 / D, and has the size of the small-deflection closed form
 * rho_A g L^4 / (8 D). Not within 10% of it: on the checkerboard grid of piola_mesh_make_grid,
 * bending about a grid line is softer than D (the k = D / 3 mapping of piola_cloth.h was
 * calibrated on equilateral meshes and on the uniform right-triangle grid). Measured with
 * square cells, converged in the substeps: +46% at 8 cells along the strip, +35% at 16,
 * extrapolated (error ~ 1/cells^2) +31%, independent of the strip's width (2 or 6 cells). */
void test_cloth_cantilever_bending(piola_test *t) {
  const double rho = 0.1, length = 0.2;
  const double d[2] = {0.02, 0.08};
  double sag[2], expected[2];
  for (int i = 0; i < 2; ++i) {
    sag[i] = cantilever_sag(t, rho, d[i], length, 8);
    expected[i] = rho * G * pow(length, 4) / (8.0 * d[i]);
    printf("cantilever D = %g N m: tip sag %.4f mm, small-deflection closed form %.4f mm "
           "(%+.2f%%)\n",
           d[i], 1e3 * sag[i], 1e3 * expected[i], 100.0 * (sag[i] / expected[i] - 1.0));
  }
  /* Small deflection (sag / L about 7% and 2%): the sag is inversely proportional to D. */
  CHECK_MSG(t, fabs(sag[0] / sag[1] / 4.0 - 1.0) <= 0.05, "sag ratio %.4g for 4 times D",
            sag[0] / sag[1]);
  /* The grid's measured softness (+46% at 8 cells) and no more: a wrong k = D / 3 mapping or a
   * missing stencil would leave this band. */
  for (int i = 0; i < 2; ++i) {
    CHECK_MSG(t, sag[i] / expected[i] > 1.3 && sag[i] / expected[i] < 1.6,
              "D = %g: sag %.5g m against %.5g m", d[i], sag[i], expected[i]);
  }
}

/* ---- Colliders: draping over a sphere ---------------------------------------------------- */

static void check_drape(piola_test *t, piola_backend backend) {
  piola_world *w = cloth_world(t, backend, NULL, NULL, 0.005f, 4, 5, 0.5f);
  REQUIRE(t, w != NULL);
  const double r = 0.3;
  piola_collider_def sphere = piola_default_collider_def();
  sphere.type = PIOLA_COLLIDER_SPHERE;
  sphere.shape.sphere.radius = (float)r;
  REQUIRE_OK(t, piola_world_add_collider(w, &sphere, NULL));
  piola_tri_mesh m = grid(16, 16, 1.2f, 1.2f);
  piola_cloth_material mat = piola_default_cloth_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, (const float[3]){-0.6f, 0.45f, -0.6f}, &id));
  double deepest = 0.0, center_y = 0.0, corner_y = 0.0;
  for (int s = 0; s < 200; ++s) {
    REQUIRE_OK(t, piola_world_step(w));
    if (s % 10 == 9) {
      float *p = wt_get_positions(w, id);
      REQUIRE(t, p != NULL);
      for (int32_t i = 0; i < m.vertex_count; ++i) {
        double l = sqrt((double)p[3 * i] * p[3 * i] + (double)p[3 * i + 1] * p[3 * i + 1] +
                        (double)p[3 * i + 2] * p[3 * i + 2]);
        deepest = fmax(deepest, r - l);
      }
      center_y = p[3 * (8 * 17 + 8) + 1];
      corner_y = p[1];
      free(p);
    }
  }
  printf("drape (%s): deepest vertex %.3g mm inside the sphere, centre at y = %.4f m, corner at "
         "y = %.4f m\n",
         piola_backend_name(backend), 1e3 * deepest, center_y, corner_y);
  CHECK_MSG(t, deepest <= 1e-4, "a vertex was %.3g m inside the sphere", deepest);
  /* The centre rests on top of the sphere; the corners hang down around it. */
  CHECK_MSG(t, fabs(center_y - r) < 0.01, "centre at y = %.4f m", center_y);
  CHECK_MSG(t, corner_y < 0.0, "corner at y = %.4f m (no drape)", corner_y);
  piola_tri_mesh_free(&m);
  piola_world_destroy(w);
}

void test_cloth_drapes_on_sphere(piola_test *t) {
  check_drape(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_cloth_drapes_on_sphere(piola_test *t) {
  if (opencl_test_ready(t)) {
    check_drape(t, PIOLA_BACKEND_OPENCL);
  }
}

/* ---- OpenCL against the CPU reference; determinism --------------------------------------- */

/* A cloth pinned at two corners swinging down under gravity, with bending, over a box. */
static piola_world *swing_world(piola_test *t, piola_backend backend, piola_body_id *id,
                                piola_tri_mesh *m) {
  piola_world *w = cloth_world(t, backend, NULL, NULL, 0.005f, 2, 5, 0.0f);
  if (w == NULL) {
    return NULL;
  }
  *m = grid(12, 12, 1.0f, 1.0f);
  piola_cloth_material mat = piola_default_cloth_material();
  mat.stretch_warp = 600.0f;
  mat.bending_stiffness = 1e-3f;
  if (piola_world_add_cloth(w, m, &mat, (const float[3]){-0.5f, 0.5f, -0.5f}, id) != PIOLA_OK) {
    piola_world_destroy(w);
    return NULL;
  }
  float *inv = malloc(sizeof *inv * (size_t)m->vertex_count);
  piola_body_get_inverse_masses(w, *id, inv, m->vertex_count);
  inv[0] = inv[12] = 0.0f; /* the corners at z = 0 */
  piola_body_set_inverse_masses(w, *id, inv, m->vertex_count);
  free(inv);
  return w;
}

void test_opencl_cloth_parity(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tri_mesh m1, m2;
  piola_body_id a, b;
  piola_world *ref = swing_world(t, PIOLA_BACKEND_CPU_REFERENCE, &a, &m1);
  piola_world *dev = swing_world(t, PIOLA_BACKEND_OPENCL, &b, &m2);
  REQUIRE(t, ref != NULL && dev != NULL);
  crosscheck_pair pair = {ref, dev, &a, &b, 1};
  double worst = 0.0;
  REQUIRE_OK(t, crosscheck_run(&pair, 100, NULL, &worst, NULL, NULL));
  float *p = wt_get_positions(ref, a);
  REQUIRE(t, p != NULL);
  double lowest = 0.0;
  for (int32_t i = 0; i < m1.vertex_count; ++i) {
    lowest = fmin(lowest, p[3 * i + 1]);
  }
  free(p);
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(dev, &st));
  printf("cloth parity: worst deviation %.3g of the diagonal over 100 steps; lowest vertex at "
         "y = %.3f m; device %s\n",
         worst, lowest, st.device_name);
  CHECK(t, st.backend == PIOLA_BACKEND_OPENCL);
  CHECK_MSG(t, lowest < 0.0, "the cloth did not swing down (lowest y = %.3f m)", lowest);
  CHECK_MSG(t, worst <= 1e-4, "OpenCL deviates from the reference by %.3g", worst);
  piola_tri_mesh_free(&m1);
  piola_tri_mesh_free(&m2);
  piola_world_destroy(ref);
  piola_world_destroy(dev);
}

void test_opencl_cloth_deterministic(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  uint64_t hash[2] = {0, 0};
  for (int run = 0; run < 2; ++run) {
    piola_tri_mesh m;
    piola_body_id id;
    piola_world *w = swing_world(t, PIOLA_BACKEND_OPENCL, &id, &m);
    REQUIRE(t, w != NULL);
    piola_collider_def box = piola_default_collider_def();
    box.type = PIOLA_COLLIDER_BOX;
    box.shape.box.center[1] = -0.2f;
    REQUIRE_OK(t, piola_world_add_collider(w, &box, NULL));
    for (int s = 0; s < 150; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
    }
    hash[run] = wt_positions_hash(w, &id, 1);
    piola_tri_mesh_free(&m);
    piola_world_destroy(w);
  }
  CHECK_MSG(t, hash[0] == hash[1], "two runs differ: %016llx vs %016llx",
            (unsigned long long)hash[0], (unsigned long long)hash[1]);
}

/* The two launch paths of the cloth kinds on OpenCL: without profiling one launch per color for
 * both kinds (piola_solve_cloth_color), with def.profile one per kind per color (so that the
 * kinds' device times stay apart). The swinging cloth over a box, 40 steps each way, bitwise
 * equal positions and velocities; the unprofiled world makes one launch fewer per color that has
 * both kinds, per iteration and substep (counted through the fault hook, nothing armed). */
void test_opencl_cloth_fused_launches_bitwise(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  enum { STEPS = 40 };
  float *state[2][2] = {{NULL, NULL}, {NULL, NULL}}; /* [profiled][positions, velocities] */
  int32_t enqueues[2] = {0, 0};                      /* per step, the last step */
  int32_t both_kinds = 0, vertex_count = 0, substeps = 0, iterations = 0;
  for (int profiled = 0; profiled < 2; ++profiled) {
    piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_OPENCL, NULL, NULL);
    def.dt = 0.005f;
    def.substeps = 2;
    def.iterations = 5;
    def.damping = 0.0f;
    def.profile = profiled != 0;
    piola_faults faults;
    memset(&faults, 0, sizeof faults);
    piola_world *w = NULL;
    REQUIRE_OK(t, piola_world_create_with_faults(&def, &faults, &w));
    piola_tri_mesh m = grid(12, 12, 1.0f, 1.0f);
    piola_cloth_material mat = piola_default_cloth_material();
    mat.stretch_warp = 600.0f;
    mat.bending_stiffness = 1e-3f;
    piola_body_id id;
    REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, (const float[3]){-0.5f, 0.5f, -0.5f}, &id));
    float *inv = malloc(sizeof *inv * (size_t)m.vertex_count);
    REQUIRE(t, inv != NULL);
    REQUIRE_OK(t, piola_body_get_inverse_masses(w, id, inv, m.vertex_count));
    inv[0] = inv[12] = 0.0f; /* two corners, as in swing_world */
    REQUIRE_OK(t, piola_body_set_inverse_masses(w, id, inv, m.vertex_count));
    free(inv);
    piola_collider_def box = piola_default_collider_def();
    box.type = PIOLA_COLLIDER_BOX;
    box.shape.box.center[1] = -0.2f;
    REQUIRE_OK(t, piola_world_add_collider(w, &box, NULL));
    for (int s = 0; s < STEPS; ++s) {
      piola_faults_arm(&faults, PIOLA_FAULT_NONE, 0, 0);
      REQUIRE_OK(t, piola_world_step(w));
      enqueues[profiled] = faults.calls[PIOLA_FAULT_ENQUEUE];
    }
    vertex_count = m.vertex_count;
    substeps = def.substeps;
    iterations = def.iterations;
    both_kinds = 0;
    for (int32_t c = 0; c < w->cloth.color_count; ++c) {
      both_kinds += w->cloth.kind_size[PIOLA_KIND_TRIANGLE][c] > 0 &&
                    w->cloth.kind_size[PIOLA_KIND_BEND][c] > 0;
    }
    state[profiled][0] = wt_get_positions(w, id);
    state[profiled][1] = malloc(sizeof(float) * 3 * (size_t)m.vertex_count);
    REQUIRE(t, state[profiled][0] != NULL && state[profiled][1] != NULL);
    REQUIRE_OK(t, piola_body_get_velocities(w, id, state[profiled][1], m.vertex_count));
    piola_tri_mesh_free(&m);
    piola_world_destroy(w);
  }
  const size_t bytes = sizeof(float) * 3 * (size_t)vertex_count;
  int32_t differ = 0;
  double moved = 0.0;
  for (int32_t i = 0; i < 3 * vertex_count; ++i) {
    differ += memcmp(&state[0][0][i], &state[1][0][i], sizeof(float)) != 0 ||
              memcmp(&state[0][1][i], &state[1][1][i], sizeof(float)) != 0;
    moved = fmax(moved, fabs((double)state[0][1][i]));
  }
  printf("cloth launches: %d enqueues per step fused, %d per kind (%d colors with both kinds, "
         "%d iterations x %d substeps); %d of %d floats differ; fastest vertex %.3f m/s\n",
         (int)enqueues[0], (int)enqueues[1], (int)both_kinds, (int)iterations, (int)substeps,
         (int)differ, (int)(3 * vertex_count), moved);
  CHECK_MSG(t, moved > 0.1, "the cloth hardly moves (%.3g m/s): a weak comparison", moved);
  CHECK_MSG(t,
            differ == 0 && memcmp(state[0][0], state[1][0], bytes) == 0 &&
                memcmp(state[0][1], state[1][1], bytes) == 0,
            "fused and per-kind launches differ in %d floats", (int)differ);
  CHECK_MSG(t, both_kinds > 0 && enqueues[1] - enqueues[0] == both_kinds * iterations * substeps,
            "enqueues per step: %d fused, %d per kind; expected a difference of %d",
            (int)enqueues[0], (int)enqueues[1], (int)(both_kinds * iterations * substeps));
  for (int p = 0; p < 2; ++p) {
    free(state[p][0]);
    free(state[p][1]);
  }
}

/* ---- A tet body beside a cloth body ------------------------------------------------------ */

static void check_tet_beside_cloth(piola_test *t, piola_backend backend) {
  piola_tet_mesh box = wt_box(3, 2, 2, 0.3f, 0.2f, 0.2f);
  piola_tri_mesh m = grid(8, 8, 0.8f, 0.8f);
  piola_material tet_mat = piola_default_material();
  piola_cloth_material mat = piola_default_cloth_material();
  uint64_t hash[2] = {0, 0};
  double cloth_drop = 0.0;
  for (int with_cloth = 0; with_cloth < 2; ++with_cloth) {
    piola_world *w = cloth_world(t, backend, NULL, NULL, 0.005f, 2, 5, 0.0f);
    REQUIRE(t, w != NULL);
    REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL));
    piola_body_id cloth = {0, 0}, tet;
    if (with_cloth) { /* added first: the tet body's vertices come after the cloth's */
      REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, (const float[3]){1.0f, 0.3f, 0.0f}, &cloth));
    }
    REQUIRE_OK(
        t, piola_world_add_tet_body(w, &box, &tet_mat, (const float[3]){0.0f, 0.2f, 0.0f}, &tet));
    for (int s = 0; s < 120; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
    }
    hash[with_cloth] = wt_positions_hash(w, &tet, 1);
    if (with_cloth) {
      float *p = wt_get_positions(w, cloth);
      REQUIRE(t, p != NULL);
      double lowest = 1.0, highest = -1.0;
      for (int32_t i = 0; i < m.vertex_count; ++i) {
        lowest = fmin(lowest, p[3 * i + 1]);
        highest = fmax(highest, p[3 * i + 1]);
      }
      free(p);
      cloth_drop = 0.3 - highest;
      /* It fell onto the ground and lies there. */
      CHECK_MSG(t, lowest > -1e-4 && highest < 0.01, "cloth between y = %.4f and %.4f m", lowest,
                highest);
      piola_stats st;
      REQUIRE_OK(t, piola_world_get_stats(w, &st));
      CHECK(t, st.triangle_count == 128 && st.tet_count == box.tet_count);
      CHECK(t, st.surface_triangles > 0); /* the tet body's; cloth has none */
    }
    piola_world_destroy(w);
  }
  printf("tet beside cloth (%s): tet hash %016llx alone, %016llx with cloth; cloth fell %.3f m\n",
         piola_backend_name(backend), (unsigned long long)hash[0], (unsigned long long)hash[1],
         cloth_drop);
  CHECK_MSG(t, hash[0] == hash[1], "the tet body's result changed with a cloth body beside it");
  piola_tri_mesh_free(&m);
  piola_mesh_free(&box);
}

void test_cloth_beside_tet_body(piola_test *t) {
  check_tet_beside_cloth(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_cloth_beside_tet_body(piola_test *t) {
  if (opencl_test_ready(t)) {
    check_tet_beside_cloth(t, PIOLA_BACKEND_OPENCL);
  }
}

/* ---- Contact with bodies --------------------------------------------------------------------- */

#define HAMMOCK_STEPS 400
#define HAMMOCK_LAST 20 /* samples (every 10 steps) of the last second */

typedef struct hammock_result {
  double box_lowest, cloth_lowest; /* y at the end, m */
  double worst_gap;                /* the box's lowest point minus the cloth's, smallest seen */
  double last_gaps[HAMMOCK_LAST];  /* the same gap every 10 steps of the last second, m */
  int32_t contacts;                /* contact count at the end */
} hammock_result;

static int hammock_compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A 1 x 1 m cloth of 10 x 10 cells at y = 0.5, pinned along its edges x = 0 and x = 1, and a
 * 0.2 m box (2 x 2 x 2 cells, E = 1e6 Pa, 8 kg) dropped onto its middle from 0.2 m above,
 * for 2 s. With contacts the box lands in the cloth and stays on it (a contact thickness
 * above it); without, it falls through. The box and the cloth swing up and down together
 * like a trampoline (period 0.6 s; between 0.2 and 0.34 m at 2 s; the damping of 1 1/s takes
 * the kinetic energy from 7 J at 1.2 s to 0.003 J at 3.6 s), and near the top of a swing the
 * box lifts off the cloth: by up to 1.4 cm in the second second (with the former contact
 * averaging 0.3 cm there, 2.5 cm at 0.8 s). So the gap is judged by its median over the last
 * second. */
static void hammock(piola_test *t, piola_backend backend, bool contacts, hammock_result *out) {
  hammock_result r = {NAN, NAN, INFINITY, {0.0}, 0};
  *out = r;
  piola_world_def def = backend == PIOLA_BACKEND_CPU_REFERENCE
                            ? piola_test_world_def(NULL, NULL)
                            : opencl_test_world_def(backend, NULL, NULL);
  def.substeps = 4;
  def.damping = 1.0f;
  def.contacts = contacts;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_tri_mesh m = grid(10, 10, 1.0f, 1.0f);
  piola_cloth_material mat = piola_default_cloth_material();
  piola_body_id cloth, box_id;
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, (const float[3]){0.0f, 0.5f, 0.0f}, &cloth));
  float *inv = malloc(sizeof *inv * (size_t)m.vertex_count);
  REQUIRE(t, inv != NULL);
  REQUIRE_OK(t, piola_body_get_inverse_masses(w, cloth, inv, m.vertex_count));
  for (int32_t i = 0; i < m.vertex_count; ++i) {
    if (m.positions[3 * i] < 1e-4f || m.positions[3 * i] > 1.0f - 1e-4f) {
      inv[i] = 0.0f;
    }
  }
  REQUIRE_OK(t, piola_body_set_inverse_masses(w, cloth, inv, m.vertex_count));
  free(inv);
  piola_tet_mesh box = wt_box(2, 2, 2, 0.2f, 0.2f, 0.2f);
  const piola_material box_mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  REQUIRE_OK(
      t, piola_world_add_tet_body(w, &box, &box_mat, (const float[3]){0.4f, 0.7f, 0.4f}, &box_id));
  for (int step = 0; step < HAMMOCK_STEPS; ++step) {
    REQUIRE_OK(t, piola_world_step(w));
    if (step % 10 == 9) {
      float *pc = wt_get_positions(w, cloth), *pb = wt_get_positions(w, box_id);
      REQUIRE(t, pc != NULL && pb != NULL);
      r.box_lowest = INFINITY;
      r.cloth_lowest = INFINITY;
      for (int32_t i = 0; i < box.vertex_count; ++i) {
        r.box_lowest = fmin(r.box_lowest, pb[3 * i + 1]);
      }
      for (int32_t i = 0; i < m.vertex_count; ++i) {
        r.cloth_lowest = fmin(r.cloth_lowest, pc[3 * i + 1]);
      }
      r.worst_gap = fmin(r.worst_gap, r.box_lowest - r.cloth_lowest);
      const int sample = (step - (HAMMOCK_STEPS - 10 * HAMMOCK_LAST)) / 10;
      if (sample >= 0) {
        r.last_gaps[sample] = r.box_lowest - r.cloth_lowest;
      }
      free(pc);
      free(pb);
    }
  }
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  r.contacts = st.contact_count;
  piola_world_destroy(w);
  piola_tri_mesh_free(&m);
  piola_mesh_free(&box);
  *out = r;
}

static void check_hammock(piola_test *t, piola_backend backend) {
  hammock_result r;
  hammock(t, backend, true, &r);
  const double thickness = (double)piola_default_world_def().contact_thickness;
  qsort(r.last_gaps, HAMMOCK_LAST, sizeof r.last_gaps[0], hammock_compare);
  const double gap = 0.5 * (r.last_gaps[HAMMOCK_LAST / 2 - 1] + r.last_gaps[HAMMOCK_LAST / 2]);
  printf("  %s: box lowest %.4f m, cloth lowest %.4f m at the end (smallest gap seen %.4f m; in "
         "the last second %.4f to %.4f m, median %.4f m), %d contacts at the end\n",
         piola_backend_name(backend), r.box_lowest, r.cloth_lowest, r.worst_gap, r.last_gaps[0],
         r.last_gaps[HAMMOCK_LAST - 1], gap, (int)r.contacts);
  /* The box lies in the sagging cloth, a thickness above its lowest point, never below it. */
  CHECK_MSG(t, r.cloth_lowest < 0.45, "the cloth did not sag under the box (%.4f m)",
            r.cloth_lowest);
  CHECK_MSG(t, r.worst_gap > 0.5 * thickness, "the box went %.4f m below the cloth's lowest point",
            -r.worst_gap);
  CHECK_MSG(t, fabs(gap - thickness) < 0.5 * thickness,
            "the box rests %.4f m above the cloth (median), not about %.3f m", gap, thickness);
  CHECK_MSG(t, r.contacts > 0, "no contacts at the end");
}

/* ---- Tet bodies beside cloth under both OpenCL schedules ---------------------------------- */

/* A cloth hammock (10 x 10 cells, 1 m, two edges pinned) with a box dropped into it and a
 * second box beside it on the ground, on OpenCL with one tet per work-item (as on GPUs), under
 * `schedule`, with or without body-body contacts (without, the first box falls through the
 * cloth onto the ground); 120 steps of 2 substeps. *hash: a hash of every body's positions
 * and velocities; *per_body: whether the per-body schedule ran; *box_lowest: the first box's
 * lowest point at the end (m). */
static void mixed_world_run(piola_test *t, piola_schedule schedule, bool contacts, uint64_t *hash,
                            bool *per_body, double *box_lowest) {
  *hash = 0;
  *per_body = false;
  *box_lowest = NAN;
  piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_OPENCL, NULL, NULL);
  def.schedule = schedule;
  def.simd_lanes = 1;
  def.substeps = 2;
  def.contacts = contacts;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL));
  piola_tri_mesh m = grid(10, 10, 1.0f, 1.0f);
  piola_cloth_material mat = piola_default_cloth_material();
  piola_body_id ids[3];
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, (const float[3]){0.0f, 0.5f, 0.0f}, &ids[0]));
  float *inv = malloc(sizeof *inv * (size_t)m.vertex_count);
  REQUIRE(t, inv != NULL);
  REQUIRE_OK(t, piola_body_get_inverse_masses(w, ids[0], inv, m.vertex_count));
  for (int32_t i = 0; i < m.vertex_count; ++i) { /* the edges at x = 0 and x = 1 m pinned */
    if (m.positions[3 * i] < 1e-4f || m.positions[3 * i] > 1.0f - 1e-4f) {
      inv[i] = 0.0f;
    }
  }
  REQUIRE_OK(t, piola_body_set_inverse_masses(w, ids[0], inv, m.vertex_count));
  free(inv);
  piola_tet_mesh box = wt_box(2, 2, 2, 0.2f, 0.2f, 0.2f);
  const piola_material box_mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  REQUIRE_OK(
      t, piola_world_add_tet_body(w, &box, &box_mat, (const float[3]){0.4f, 0.7f, 0.4f}, &ids[1]));
  REQUIRE_OK(
      t, piola_world_add_tet_body(w, &box, &box_mat, (const float[3]){2.0f, 0.1f, 0.0f}, &ids[2]));
  for (int step = 0; step < 120; ++step) {
    REQUIRE_OK(t, piola_world_step(w));
  }
  *per_body = w->ops->per_body(w);
  *hash = wt_state_hash(w, ids, 3);
  float *x = wt_get_positions(w, ids[1]);
  CHECK(t, x != NULL);
  if (x != NULL) {
    double lowest = INFINITY;
    for (int32_t i = 0; i < box.vertex_count; ++i) {
      lowest = fmin(lowest, x[3 * (size_t)i + 1]);
    }
    *box_lowest = lowest;
    free(x);
  }
  piola_world_destroy(w);
  piola_tri_mesh_free(&m);
  piola_mesh_free(&box);
}

/* Cloth does not take the per-body schedule from the tet bodies beside it: under BODIES the
 * tets' iterations run per body and the cloth's colors per stage after them, and every body
 * ends bitwise where the per-stage schedule puts it, with contacts between the box and the
 * cloth and without. */
void test_opencl_cloth_schedules_agree(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  for (int contacts = 0; contacts < 2; ++contacts) {
    bool per_body[2];
    double lowest[2];
    uint64_t stages, bodies;
    mixed_world_run(t, PIOLA_SCHEDULE_STAGES, contacts, &stages, &per_body[0], &lowest[0]);
    mixed_world_run(t, PIOLA_SCHEDULE_BODIES, contacts, &bodies, &per_body[1], &lowest[1]);
    printf("  contacts %s: box's lowest point %.4f m (stages), %.4f m (bodies); hashes %016llx, "
           "%016llx\n",
           contacts ? "on" : "off", lowest[0], lowest[1], (unsigned long long)stages,
           (unsigned long long)bodies);
    CHECK_MSG(t, !per_body[0] && per_body[1],
              "schedules: per body %d under STAGES, %d under BODIES (expected 0, 1)",
              (int)per_body[0], (int)per_body[1]);
    CHECK_MSG(t, stages != 0 && bodies != 0, "contacts %d: a body's state could not be read",
              contacts);
    CHECK_MSG(t, stages == bodies, "contacts %d: per-stage and per-body results differ", contacts);
    /* The scene moved: the box (dropped from 0.7 m) lies in the hammock (contacts) or fell
     * through it onto the ground. */
    CHECK_MSG(t, contacts ? lowest[1] > 0.1 && lowest[1] < 0.5 : lowest[1] < 0.01,
              "contacts %d: the box's lowest point at %.4f m", contacts, lowest[1]);
  }
}

/* A box dropped into a cloth hammock stays on it; with contacts off it falls through, which
 * shows that the check can fail. */
void test_cloth_contact_hammock(piola_test *t) {
  check_hammock(t, PIOLA_BACKEND_CPU_REFERENCE);
  hammock_result off;
  hammock(t, PIOLA_BACKEND_CPU_REFERENCE, false, &off);
  printf("  contacts off: box lowest %.4f m, cloth lowest %.4f m\n", off.box_lowest,
         off.cloth_lowest);
  CHECK_MSG(t, off.box_lowest < off.cloth_lowest - 0.1, "without contacts the box stayed on it");
}

void test_opencl_cloth_contact_hammock(piola_test *t) {
  if (opencl_test_ready(t)) {
    check_hammock(t, PIOLA_BACKEND_OPENCL);
  }
}

/* A cloth strip folded in two (layers 0.1 m apart joined by a half-circle fold of radius 0.05 m,
 * 0.5 m long each, 0.2 m wide, cells of about 4 cm) lying on the ground: the upper layer falls
 * onto the lower one. With self-collision it comes to rest on it a contact thickness above;
 * without, it falls through onto the ground. Returns the upper layer's lowest and the lower
 * layer's highest point away from the fold (rest x < 0.4 m) after 0.5 s. */
static void folded_strip(piola_test *t, piola_backend backend, bool self, double *upper_lo,
                         double *lower_hi) {
  *upper_lo = *lower_hi = NAN;
  const double arm = 0.5, r = 0.05, pi = 3.14159265358979323846;
  const double length = 2.0 * arm + pi * r;
  piola_tri_mesh m = grid(29, 5, (float)length, 0.2f);
  REQUIRE(t, m.vertex_count == 30 * 6);
  double *rest_s = malloc(sizeof *rest_s * (size_t)m.vertex_count);
  REQUIRE(t, rest_s != NULL);
  for (int32_t i = 0; i < m.vertex_count; ++i) {
    float *p = m.positions + 3 * (size_t)i;
    const double s = p[0];
    rest_s[i] = s;
    if (s <= arm) {
      p[0] = (float)s;
      p[1] = 0.0f;
    } else if (s <= arm + pi * r) {
      const double a = (s - arm) / r;
      p[0] = (float)(arm + r * sin(a));
      p[1] = (float)(r - r * cos(a));
    } else {
      p[0] = (float)(arm - (s - arm - pi * r));
      p[1] = (float)(2.0 * r);
    }
  }
  piola_world *w = cloth_world(t, backend, NULL, NULL, 0.005f, 4, 5, 1.0f);
  REQUIRE(t, w != NULL);
  REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL));
  piola_cloth_material mat = piola_default_cloth_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, (const float[3]){0.0f, 0.012f, 0.0f}, &id));
  REQUIRE_OK(t, piola_body_set_self_collision(w, id, self));
  for (int step = 0; step < 100; ++step) {
    REQUIRE_OK(t, piola_world_step(w));
  }
  float *x = wt_get_positions(w, id);
  REQUIRE(t, x != NULL);
  *upper_lo = INFINITY;
  *lower_hi = -INFINITY;
  for (int32_t i = 0; i < m.vertex_count; ++i) {
    const double s = rest_s[i];
    if (s < 0.4) {
      *lower_hi = fmax(*lower_hi, x[3 * (size_t)i + 1]);
    } else if (s > length - 0.4) {
      *upper_lo = fmin(*upper_lo, x[3 * (size_t)i + 1]);
    }
  }
  free(x);
  free(rest_s);
  piola_world_destroy(w);
  piola_tri_mesh_free(&m);
}

static void check_folded_strip(piola_test *t, piola_backend backend) {
  const double thickness = (double)piola_default_world_def().contact_thickness;
  double upper, lower;
  folded_strip(t, backend, true, &upper, &lower);
  printf("  %s, self-collision on: upper layer's lowest %.4f m, lower layer's highest %.4f m\n",
         piola_backend_name(backend), upper, lower);
  CHECK_MSG(t, upper - lower > 0.5 * thickness && upper - lower < 2.0 * thickness,
            "the layers are %.4f m apart, not about a thickness (%.3f m)", upper - lower,
            thickness);
  CHECK_MSG(t, upper < 0.1, "the upper layer did not fall (%.4f m)", upper);
  if (backend == PIOLA_BACKEND_CPU_REFERENCE) {
    folded_strip(t, backend, false, &upper, &lower);
    printf("  %s, self-collision off: upper layer's lowest %.4f m, lower layer's highest %.4f m\n",
           piola_backend_name(backend), upper, lower);
    CHECK_MSG(t, upper - lower < 0.25 * thickness,
              "without self-collision the layers stayed %.4f m apart", upper - lower);
  }
}

/* Cloth self-collision: a folded strip's upper layer comes to rest on the lower one. */
void test_cloth_self_collision_fold(piola_test *t) {
  check_folded_strip(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_cloth_self_collision_fold(piola_test *t) {
  if (opencl_test_ready(t)) {
    check_folded_strip(t, PIOLA_BACKEND_OPENCL);
  }
}

/* ---- Stage times per cloth kind ---------------------------------------------------------- */

/* The solve pass's time on the cloth split by kind: PIOLA_STAGE_SOLVE_CLOTH (triangles) and
 * PIOLA_STAGE_SOLVE_BENDING (stencils), on the CPU reference (host clock) and on OpenCL with
 * profiling (device events); a cloth without bending spends nothing on stencils, a world
 * without cloth nothing on either, and the split leaves the result unchanged. */
static void check_stage_times(piola_test *t, piola_backend backend) {
  CHECK(t, strcmp(piola_stage_name(PIOLA_STAGE_SOLVE_CLOTH), "solve_cloth") == 0);
  CHECK(t, strcmp(piola_stage_name(PIOLA_STAGE_SOLVE_BENDING), "solve_bending") == 0);
  CHECK(t, PIOLA_STAGE_SOLVE_TETS < PIOLA_STAGE_SOLVE_CLOTH &&
               PIOLA_STAGE_SOLVE_CLOTH < PIOLA_STAGE_SOLVE_BENDING &&
               PIOLA_STAGE_SOLVE_BENDING < PIOLA_STAGE_CONTACT);
  for (int bending = 0; bending < 2; ++bending) {
    piola_world_def def = backend == PIOLA_BACKEND_CPU_REFERENCE
                              ? piola_test_world_def(NULL, NULL)
                              : opencl_test_world_def(backend, NULL, NULL);
    def.profile = true;
    piola_world *w = NULL;
    REQUIRE_OK(t, piola_world_create(&def, &w));
    piola_tri_mesh m = grid(16, 16, 1.0f, 1.0f);
    piola_cloth_material mat = piola_default_cloth_material();
    mat.bending_stiffness = bending ? 1e-3f : 0.0f;
    piola_body_id id;
    REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, NULL, &id));
    for (int s = 0; s < 3; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
    }
    double ms[PIOLA_STAGE_COUNT];
    REQUIRE_OK(t, piola_world_get_stage_times(w, ms));
    printf("cloth stage times (%s, bending %s): solve_tets %.4f, solve_cloth %.4f, "
           "solve_bending %.4f ms\n",
           piola_backend_name(backend), bending ? "on" : "off", ms[PIOLA_STAGE_SOLVE_TETS],
           ms[PIOLA_STAGE_SOLVE_CLOTH], ms[PIOLA_STAGE_SOLVE_BENDING]);
    CHECK_MSG(t, ms[PIOLA_STAGE_SOLVE_CLOTH] > 0.0, "solve_cloth %g ms",
              ms[PIOLA_STAGE_SOLVE_CLOTH]);
    if (bending) {
      CHECK_MSG(t, ms[PIOLA_STAGE_SOLVE_BENDING] > 0.0, "solve_bending %g ms",
                ms[PIOLA_STAGE_SOLVE_BENDING]);
    } else {
      CHECK_MSG(t, ms[PIOLA_STAGE_SOLVE_BENDING] == 0.0, "no stencils, solve_bending %g ms",
                ms[PIOLA_STAGE_SOLVE_BENDING]);
    }
    for (int s = 0; s < PIOLA_STAGE_COUNT; ++s) {
      CHECK_MSG(t, ms[s] >= 0.0 && isfinite(ms[s]), "stage %s: %g ms",
                piola_stage_name((piola_stage)s), ms[s]);
    }
    if (backend != PIOLA_BACKEND_CPU_REFERENCE) {
      /* No tets: nothing is launched for them (the CPU's host clock sees the loop's
       * bookkeeping). */
      CHECK_MSG(t, ms[PIOLA_STAGE_SOLVE_TETS] == 0.0, "solve_tets %g ms",
                ms[PIOLA_STAGE_SOLVE_TETS]);
    }
    piola_tri_mesh_free(&m);
    piola_world_destroy(w);
  }
  /* Tets only: neither cloth entry is charged. */
  piola_world_def def = backend == PIOLA_BACKEND_CPU_REFERENCE
                            ? piola_test_world_def(NULL, NULL)
                            : opencl_test_world_def(backend, NULL, NULL);
  def.profile = true;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_tet_mesh box = wt_box(3, 2, 2, 0.3f, 0.2f, 0.2f);
  piola_material tet_mat = piola_default_material();
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &tet_mat, NULL, NULL));
  REQUIRE_OK(t, piola_world_step(w));
  double ms[PIOLA_STAGE_COUNT];
  REQUIRE_OK(t, piola_world_get_stage_times(w, ms));
  CHECK(t, ms[PIOLA_STAGE_SOLVE_TETS] > 0.0);
  CHECK(t, ms[PIOLA_STAGE_SOLVE_CLOTH] == 0.0 && ms[PIOLA_STAGE_SOLVE_BENDING] == 0.0);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

void test_cloth_stage_times(piola_test *t) {
  check_stage_times(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_cloth_stage_times(piola_test *t) {
  if (opencl_test_ready(t)) {
    check_stage_times(t, PIOLA_BACKEND_OPENCL);
  }
}
