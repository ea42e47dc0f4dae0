/* Vertex block descent (Chen, Liu, Yang, Yuksel 2024): the vertex coloring and its balance,
 * the per-vertex Hessian blocks of the shared headers against central finite differences in
 * double, and the scheme in worlds on the CPU reference (rest under gravity against converged
 * XPBD, recovery from inversion, bitwise repeatability, refused settings). */
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Vertex coloring ----------------------------------------------------------------------- */

/* Colors of a mesh's vertices: valid, every color used, and sizes within a factor of the mean.
 * Writes the color count (0 on failure). */
static void check_vertex_coloring(piola_test *t, const int32_t *items, int32_t n, int32_t nv,
                                  const char *what, int32_t *count_out) {
  int32_t *colors = malloc(sizeof *colors * (size_t)nv);
  int32_t count = 0;
  *count_out = 0;
  REQUIRE(t, colors != NULL);
  REQUIRE_OK(t, piola_color_vertices(items, n, nv, colors, &count));
  CHECK_MSG(t, piola_vertex_coloring_is_valid(items, n, nv, colors), "%s: conflict", what);
  int32_t size[256] = {0};
  REQUIRE(t, count > 0 && count <= 256);
  for (int32_t v = 0; v < nv; ++v) {
    size[colors[v]]++;
  }
  int32_t smallest = nv, largest = 0;
  for (int32_t c = 0; c < count; ++c) {
    smallest = size[c] < smallest ? size[c] : smallest;
    largest = size[c] > largest ? size[c] : largest;
  }
  printf("  %s: %d vertices, %d colors, sizes %d..%d\n", what, (int)nv, (int)count, (int)smallest,
         (int)largest);
  /* Balanced: no tail of tiny colors. */
  CHECK_MSG(t, smallest * 2 >= nv / count, "%s: smallest color %d, mean %d", what, (int)smallest,
            (int)(nv / count));
  free(colors);
  *count_out = count;
}

void test_vbd_vertex_coloring(piola_test *t) {
  /* A hand-made case: two tets sharing a face need 5 colors (the 5 vertices all conflict but
   * 3 and 4, which share no tet: 4 colors). */
  const int32_t two[8] = {0, 1, 2, 3, 0, 1, 2, 4};
  int32_t colors[5], count = 0;
  REQUIRE_OK(t, piola_color_vertices(two, 2, 5, colors, &count));
  CHECK(t, piola_vertex_coloring_is_valid(two, 2, 5, colors));
  CHECK_MSG(t, count == 4, "two tets: %d colors", (int)count);
  const int32_t bad[4] = {0, 1, 2, 3};
  const int32_t same[4] = {0, 0, 1, 2};
  CHECK(t, !piola_vertex_coloring_is_valid(bad, 1, 4, same));

  piola_tet_mesh box = wt_box(6, 4, 3, 1.0f, 0.5f, 0.4f);
  REQUIRE(t, box.tet_count > 0);
  int32_t box_colors = 0;
  check_vertex_coloring(t, box.tets, box.tet_count, box.vertex_count, "box 6x4x3", &box_colors);
  CHECK_MSG(t, box_colors <= 10, "box: %d colors", (int)box_colors);
  piola_mesh_free(&box);

  /* Cloth items: triangles (a, b, c, -1) and bending stencils conflict alike. */
  const int32_t cloth[12] = {0, 1, 2, -1, 1, 3, 2, -1, 1, 2, 0, 3};
  int32_t cc[4];
  REQUIRE_OK(t, piola_color_vertices(cloth, 3, 4, cc, &count));
  CHECK(t, piola_vertex_coloring_is_valid(cloth, 3, 4, cc) && count == 4);

  piola_tet_mesh arm;
  memset(&arm, 0, sizeof arm);
  if (wt_load_armadillo(&arm)) {
    int32_t n = 0;
    check_vertex_coloring(t, arm.tets, arm.tet_count, arm.vertex_count, "Armadillo", &n);
    /* Measured: see docs/solvers.md (the greedy tet coloring takes 60). */
    CHECK_MSG(t, n <= 12, "Armadillo: %d vertex colors", (int)n);
    piola_mesh_free(&arm);
  }
}

/* stats.vertex_color_count: the vertex colors of the world's bodies under VBD, 0 otherwise. */
void test_vbd_stats_vertex_colors(piola_test *t) {
  piola_tet_mesh box = wt_box(4, 3, 2, 1.0f, 0.5f, 0.4f);
  REQUIRE(t, box.tet_count > 0);
  for (int k = 0; k < 2; ++k) {
    piola_world_def def = piola_test_world_def(NULL, NULL);
    def.iteration_scheme = k == 0 ? PIOLA_SCHEME_GAUSS_SEIDEL : PIOLA_SCHEME_VBD;
    piola_world *w = NULL;
    REQUIRE_OK(t, piola_world_create(&def, &w));
    piola_material mat = piola_default_material();
    piola_body_id id;
    REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, NULL, &id));
    piola_stats st;
    REQUIRE_OK(t, piola_world_get_stats(w, &st));
    if (k == 0) {
      CHECK(t, st.vertex_color_count == 0);
    } else {
      CHECK_MSG(t, st.vertex_color_count >= 4 && st.vertex_color_count <= 10, "%d colors",
                (int)st.vertex_color_count);
    }
    piola_world_destroy(w);
  }
  piola_mesh_free(&box);
}

/* ---- The tet's vertex blocks (kernels/piola_tet.h) ---------------------------------------- */

static piola_tet_material vbd_material(int model, int inversion, double nu) {
  piola_tet_material m;
  memset(&m, 0, sizeof m);
  m.mu = 1.0 / (2.0 * (1.0 + nu));
  m.lambda = nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
  m.compliance = 1e-5;
  m.model = model;
  m.solver = PIOLA_TET_SOLVER_XPBD;
  m.inversion = inversion;
  return m;
}

/* A deformation of the rest tet (0, e_x, e_y, e_z) scaled by 0.7: near rest, stretched,
 * compressed below the clamp, flat, inverted. */
static void deformed_corners(int kind, uint64_t *rng, piola_v3 x[4]) {
  const piola_v3 rest[4] = {piola_v3_make(0, 0, 0), piola_v3_make(0.7, 0, 0),
                            piola_v3_make(0, 0.7, 0), piola_v3_make(0, 0, 0.7)};
  const double amount[5] = {0.05, 0.3, 0.15, 0.1, 0.15};
  for (int a = 0; a < 4; ++a) {
    x[a] = piola_v3_add(rest[a], piola_v3_make(amount[kind] * piola_test_rand(rng),
                                               amount[kind] * piola_test_rand(rng),
                                               amount[kind] * piola_test_rand(rng)));
  }
  if (kind == 1) { /* stretched along x by 40% */
    for (int a = 0; a < 4; ++a) {
      x[a].x *= 1.4;
    }
  } else if (kind == 2) { /* squashed along y to 35% (below the clamp 0.577) */
    for (int a = 0; a < 4; ++a) {
      x[a].y *= 0.35;
    }
  } else if (kind == 3) { /* vertex 3 nearly on the opposite face */
    x[3].z = 0.01 * piola_test_rand(rng);
  } else if (kind == 4) { /* vertex 3 mirrored through the opposite face */
    x[3].z = -x[3].z;
  }
}

/* Gradient and Hessian block of every corner against central differences of the energy and
 * of the gradient, in double: StVK and Neo-Hookean, the regular path (analytic dP) and the
 * inversion path (the secant of the extended energy's stress), near rest, stretched,
 * compressed, flat and inverted. The projected block is positive semidefinite and equals the
 * unprojected one where that already is. */
void test_vbd_tet_block_finite_differences(piola_test *t) {
  uint64_t rng = 11;
  const piola_m3 dm_inv = piola_m3_scale(piola_m3_identity(), 1.0 / 0.7);
  const double vol = 0.7 * 0.7 * 0.7 / 6.0;
  double worst_g = 0.0, worst_h = 0.0;
  int negative_blocks = 0;
  for (int model = 0; model < 2; ++model) {
    for (int inversion = 0; inversion < 3; ++inversion) {
      const piola_tet_material m = vbd_material(model, inversion, 0.3);
      for (int kind = 0; kind < 5; ++kind) {
        if (inversion == PIOLA_TET_INVERSION_OFF && model == PIOLA_TET_MODEL_NEOHOOKEAN &&
            kind >= 3) {
          continue; /* undefined there */
        }
        for (int trial = 0; trial < 8; ++trial) {
          piola_v3 x[4];
          deformed_corners(kind, &rng, x);
          for (int a = 0; a < 4; ++a) {
            piola_v3 g;
            piola_m3 hraw, hpsd;
            const double u = piola_tet_vertex_block_unprojected(&m, dm_inv, vol, x[0], x[1], x[2],
                                                                x[3], a, &g, &hraw);
            piola_v3 g2;
            const double u2 =
                piola_tet_vertex_block(&m, dm_inv, vol, x[0], x[1], x[2], x[3], a, &g2, &hpsd);
            CHECK(t, u == u2 && u >= 0.0);
            CHECK_NEAR(t, u, piola_tet_energy(&m, dm_inv, vol, x[0], x[1], x[2], x[3]), 1e-15);
            const double gv[3] = {g.x, g.y, g.z};
            double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
            const double h = 1e-6;
            double gscale = 1e-3 + sqrt(gv[0] * gv[0] + gv[1] * gv[1] + gv[2] * gv[2]);
            double hscale = 1e-3 + sqrt(piola_m3_frobenius2(hraw));
            for (int c = 0; c < 3; ++c) {
              const double keep = *comp[c];
              piola_v3 gp, gm;
              piola_m3 unused;
              *comp[c] = keep + h;
              const double ep = piola_tet_energy(&m, dm_inv, vol, x[0], x[1], x[2], x[3]);
              piola_tet_vertex_block_unprojected(&m, dm_inv, vol, x[0], x[1], x[2], x[3], a, &gp,
                                                 &unused);
              *comp[c] = keep - h;
              const double em = piola_tet_energy(&m, dm_inv, vol, x[0], x[1], x[2], x[3]);
              piola_tet_vertex_block_unprojected(&m, dm_inv, vol, x[0], x[1], x[2], x[3], a, &gm,
                                                 &unused);
              *comp[c] = keep;
              const double dg = fabs((ep - em) / (2 * h) - gv[c]) / gscale;
              worst_g = dg > worst_g ? dg : worst_g;
              CHECK_MSG(t, dg < 1e-6,
                        "model %d inversion %d kind %d corner %d: gradient %d off by %g", model,
                        inversion, kind, a, c, dg);
              /* column c of the block: d grad / d x_c (symmetric) */
              const double col[3] = {(gp.x - gm.x) / (2 * h), (gp.y - gm.y) / (2 * h),
                                     (gp.z - gm.z) / (2 * h)};
              for (int r = 0; r < 3; ++r) {
                const double dh = fabs(col[r] - hraw.m[3 * r + c]) / hscale;
                worst_h = dh > worst_h ? dh : worst_h;
                /* the inversion path's block is itself a difference: looser there */
                CHECK_MSG(t, dh < (kind >= 2 && inversion != 0 ? 1e-3 : 1e-5),
                          "model %d inversion %d kind %d corner %d: H[%d][%d] off by %g", model,
                          inversion, kind, a, r, c, dh);
              }
            }
            /* PSD: the projection's eigenvalues are >= 0 (to rounding), and it changes nothing
             * where the block already was. */
            piola_m3 q;
            piola_v3 l, lraw;
            piola_sym_eigen(hpsd, &q, &l);
            const double tol = 1e-12 * hscale;
            CHECK(t, l.x >= -tol && l.y >= -tol && l.z >= -tol);
            piola_sym_eigen(hraw, &q, &lraw);
            if (lraw.x >= 0.0 && lraw.y >= 0.0 && lraw.z >= 0.0) {
              for (int i = 0; i < 9; ++i) {
                CHECK(t, hpsd.m[i] == hraw.m[i]);
              }
            } else {
              negative_blocks++;
            }
          }
        }
      }
    }
  }
  printf("  worst relative error: gradient %.2g, block %.2g; %d indefinite blocks projected\n",
         worst_g, worst_h, negative_blocks);
  CHECK(t, negative_blocks > 0); /* the cases reach the projection */
}

/* The Newton step of a block: solves H dx = -g, refuses singular and non-finite blocks. */
void test_vbd_newton_step(piola_test *t) {
  piola_m3 h = piola_m3_identity();
  h.m[0] = 4.0;
  h.m[1] = h.m[3] = 1.0;
  h.m[8] = 2.0;
  const piola_v3 g = piola_v3_make(1.0, -2.0, 3.0);
  piola_v3 dx;
  REQUIRE(t, piola_vbd_newton_step(h, g, &dx));
  /* H dx = -g */
  CHECK_NEAR(t, 4.0 * dx.x + dx.y, -1.0, 1e-14);
  CHECK_NEAR(t, dx.x + dx.y, 2.0, 1e-14);
  CHECK_NEAR(t, 2.0 * dx.z, -3.0, 1e-14);
  piola_m3 zero = piola_m3_scale(piola_m3_identity(), 0.0);
  CHECK(t, !piola_vbd_newton_step(zero, g, &dx) && dx.x == 0.0 && dx.y == 0.0 && dx.z == 0.0);
  piola_m3 rank2 = piola_m3_identity();
  rank2.m[8] = 0.0;
  CHECK(t, !piola_vbd_newton_step(rank2, g, &dx));
  piola_m3 nan = piola_m3_identity();
  nan.m[4] = NAN;
  CHECK(t, !piola_vbd_newton_step(nan, g, &dx));
}
