/* Vertex block descent (Chen, Liu, Yang, Yuksel 2024): the vertex coloring and its balance,
 * the per-vertex Hessian blocks of the shared headers against central finite differences in
 * double, and the scheme in worlds on the CPU reference (rest under gravity against converged
 * XPBD, recovery from inversion, bitwise repeatability, refused settings). */
#include "test_opencl_common.h"
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
  double worst_g = 0.0, worst_h = 0.0, worst_secant = 0.0, worst_exact = 0.0;
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
            piola_m3 p_unused;
            piola_mask svd = 0;
            piola_energy_and_stress(&m, piola_tet_deformation(x[0], x[1], x[2], x[3], dm_inv),
                                    &p_unused, &svd);
            const bool secant = svd != 0;
            piola_v3 secant_col[3];
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
              /* column c of the block: d grad / d x_c (symmetric). The inversion path's block is
               * itself a difference, at the float step PIOLA_VBD_SECANT_STEP in both precisions:
               * it must equal the gradient's differences at that step (below, to rounding).
               * Against these fine differences it is the secant it is: within 1% in all but one
               * tet here, whose smallest stretch (0.5826) lies within the step of the clamp
               * (0.5774), where the extended energy's curvature jumps (1.5% to 11%); so only a
               * gross error (a factor of 2) is asserted for it. */
              const double col[3] = {(gp.x - gm.x) / (2 * h), (gp.y - gm.y) / (2 * h),
                                     (gp.z - gm.z) / (2 * h)};
              for (int r = 0; r < 3; ++r) {
                const double dh = fabs(col[r] - hraw.m[3 * r + c]) / hscale;
                worst_h = secant ? worst_h : fmax(worst_h, dh);
                worst_secant = secant ? fmax(worst_secant, dh) : worst_secant;
                CHECK_MSG(t, dh < (secant ? 0.5 : 1e-5),
                          "model %d inversion %d kind %d corner %d: H[%d][%d] off by %g", model,
                          inversion, kind, a, r, c, dh);
              }
              if (secant) { /* the gradient's differences at the secant's step */
                const piola_m3 f = piola_tet_deformation(x[0], x[1], x[2], x[3], dm_inv);
                const piola_v3 b = piola_tet_corner_row(dm_inv, a);
                const double hs = PIOLA_VBD_SECANT_STEP * fmax(1.0, sqrt(piola_m3_frobenius2(f))) /
                                  piola_v3_length(b);
                *comp[c] = keep + hs;
                piola_tet_vertex_block_unprojected(&m, dm_inv, vol, x[0], x[1], x[2], x[3], a, &gp,
                                                   &unused);
                *comp[c] = keep - hs;
                piola_tet_vertex_block_unprojected(&m, dm_inv, vol, x[0], x[1], x[2], x[3], a, &gm,
                                                   &unused);
                *comp[c] = keep;
                secant_col[c] = piola_v3_scale(piola_v3_sub(gp, gm), 1.0 / (2.0 * hs));
              }
            }
            if (secant) { /* symmetrized, as the block is */
              for (int r = 0; r < 3; ++r) {
                for (int c = 0; c < 3; ++c) {
                  const double rc[3] = {secant_col[c].x, secant_col[c].y, secant_col[c].z};
                  const double cr[3] = {secant_col[r].x, secant_col[r].y, secant_col[r].z};
                  const double d = fabs(0.5 * (rc[r] + cr[c]) - hraw.m[3 * r + c]) / hscale;
                  worst_exact = fmax(worst_exact, d);
                  CHECK_MSG(t, d < 1e-9,
                            "model %d inversion %d kind %d corner %d: secant H[%d][%d] off by %g",
                            model, inversion, kind, a, r, c, d);
                }
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
  printf("  worst relative error: gradient %.2g, block %.2g (the secants %.2g; at their own step "
         "%.2g); %d indefinite blocks projected\n",
         worst_g, worst_h, worst_secant, worst_exact, negative_blocks);
  CHECK(t, worst_secant > 0.0);  /* the cases reach the inversion path */
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

/* ---- The scheme in worlds (CPU reference) ------------------------------------------------- */

/* A world of the backend with the scheme and step settings (gravity on). */
static piola_world *vbd_world_on(piola_test *t, piola_backend backend,
                                 piola_iteration_scheme scheme, int32_t iterations,
                                 int32_t substeps, float damping) {
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  def.iteration_scheme = scheme;
  def.iterations = iterations;
  def.substeps = substeps;
  def.damping = damping;
  piola_world *w = NULL;
  piola_status s = piola_world_create(&def, &w);
  CHECK_MSG(t, s == PIOLA_OK, "piola_world_create: %s", piola_status_string(s));
  return s == PIOLA_OK ? w : NULL;
}

/* A CPU-reference world with the scheme and step settings (gravity on). */
static piola_world *vbd_world(piola_test *t, piola_iteration_scheme scheme, int32_t iterations,
                              int32_t substeps, float damping) {
  return vbd_world_on(t, PIOLA_BACKEND_CPU_REFERENCE, scheme, iterations, substeps, damping);
}

/* The beam of test_beam_sags_and_settles (10 x 2 x 2 cells, 1 x 0.2 x 0.2 m, E = 1e7 Pa, pinned
 * at x = 0) under the scheme: its mean tip sag (m) after `steps` steps of 5 ms, damping 10 1/s,
 * the kinetic energy at the end in *ke; NAN on failure. */
static double beam_sag(piola_test *t, piola_iteration_scheme scheme, int32_t iterations,
                       int32_t steps, piola_model model, double *ke) {
  const int32_t cells[3] = {10, 2, 2};
  const float size[3] = {1.0f, 0.2f, 0.2f};
  piola_tet_mesh beam;
  *ke = NAN;
  if (piola_mesh_make_box(cells, size, &beam) != PIOLA_OK) {
    return NAN;
  }
  piola_world *w = vbd_world(t, scheme, iterations, 1, 10.0f);
  double sag = NAN;
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e7f;
  mat.model = model;
  piola_body_id id;
  const int32_t n = beam.vertex_count;
  float *inv = malloc(sizeof *inv * (size_t)n), *x = malloc(sizeof *x * 3 * (size_t)n);
  if (w != NULL && inv != NULL && x != NULL &&
      piola_world_add_tet_body(w, &beam, &mat, NULL, &id) == PIOLA_OK &&
      piola_body_get_inverse_masses(w, id, inv, n) == PIOLA_OK) {
    for (int32_t i = 0; i < n; ++i) {
      inv[i] = beam.positions[3 * i] == 0.0f ? 0.0f : inv[i];
    }
    piola_status s = piola_body_set_inverse_masses(w, id, inv, n);
    for (int32_t k = 0; k < steps && s == PIOLA_OK; ++k) {
      s = piola_world_step(w);
    }
    piola_stats st;
    if (s == PIOLA_OK && piola_body_get_positions(w, id, x, n) == PIOLA_OK &&
        piola_world_get_stats(w, &st) == PIOLA_OK) {
      double sum = 0.0;
      int32_t count = 0;
      for (int32_t i = 0; i < n; ++i) {
        if (beam.positions[3 * i] == 1.0f) {
          sum += (double)beam.positions[3 * i + 1] - x[3 * i + 1];
          count++;
        }
      }
      sag = sum / count;
      *ke = st.kinetic_energy;
    }
  }
  free(inv);
  free(x);
  piola_world_destroy(w);
  piola_mesh_free(&beam);
  return sag;
}

/* The beam at rest: vertex block descent at 5 iterations reaches the sag of XPBD converged
 * (measured: XPBD 100 iterations 0.0198 m, 200 iterations 0.0199 m, 5 iterations 0.081 m; VBD
 * 5 and 50 iterations 0.0195 m with the adaptive initial guess; with y as the initial guess
 * 0.219 m at 5 and 0.032 m at 50 iterations: at rest the y guess starts every substep h^2 g away
 * and the iterations never catch up). */
void test_vbd_beam_sag_matches_xpbd(piola_test *t) {
  double ke[2];
  const double xpbd =
      beam_sag(t, PIOLA_SCHEME_GAUSS_SEIDEL, 100, 300, PIOLA_MODEL_NEOHOOKEAN, &ke[0]);
  const double vbd = beam_sag(t, PIOLA_SCHEME_VBD, 5, 300, PIOLA_MODEL_NEOHOOKEAN, &ke[1]);
  const double stvk = beam_sag(t, PIOLA_SCHEME_VBD, 5, 300, PIOLA_MODEL_STVK, &ke[1]);
  printf("  tip sag: XPBD 100 iterations %.5f m, VBD 5 iterations %.5f m (StVK %.5f m); kinetic "
         "%.3g, %.3g J\n",
         xpbd, vbd, stvk, ke[0], ke[1]);
  CHECK_MSG(t, fabs(vbd - xpbd) < 0.05 * xpbd, "VBD %.5f m, XPBD %.5f m", vbd, xpbd);
  CHECK_MSG(t, fabs(stvk - xpbd) < 0.1 * xpbd, "VBD StVK %.5f m, XPBD %.5f m", stvk, xpbd);
  CHECK(t, ke[1] < 1e-6);
}

/* A soft box (E = 1e5 Pa, 0.4 x 0.2 x 0.4 m, 4 x 2 x 4 cells) resting on the ground plane (with
 * the friction coefficient) after `steps` steps: the mean height of its top face (m), and of its
 * bottom face in *bottom. */
static double box_on_ground(piola_test *t, piola_iteration_scheme scheme, int32_t iterations,
                            int32_t steps, float friction, double *bottom) {
  piola_tet_mesh box = wt_box(4, 2, 4, 0.4f, 0.2f, 0.4f);
  piola_world *w = vbd_world(t, scheme, iterations, 1, 10.0f);
  double top = NAN;
  *bottom = NAN;
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e5f;
  piola_body_id id;
  const float up[3] = {0.0f, 1.0f, 0.0f};
  const int32_t n = box.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  if (w != NULL && x != NULL && box.tet_count > 0 &&
      piola_world_add_tet_body(w, &box, &mat, NULL, &id) == PIOLA_OK &&
      piola_world_add_plane(w, up, 0.0f, friction, NULL) == PIOLA_OK) {
    piola_status s = PIOLA_OK;
    for (int32_t k = 0; k < steps && s == PIOLA_OK; ++k) {
      s = piola_world_step(w);
    }
    if (s == PIOLA_OK && piola_body_get_positions(w, id, x, n) == PIOLA_OK) {
      double sum[2] = {0.0, 0.0};
      int32_t count[2] = {0, 0};
      for (int32_t i = 0; i < n; ++i) {
        const int k = box.positions[3 * i + 1] == 0.0f   ? 0
                      : box.positions[3 * i + 1] == 0.2f ? 1
                                                         : -1;
        if (k >= 0) {
          sum[k] += x[3 * i + 1];
          count[k]++;
        }
      }
      *bottom = sum[0] / count[0];
      top = sum[1] / count[1];
    }
  }
  free(x);
  piola_world_destroy(w);
  piola_mesh_free(&box);
  return top;
}

/* The box on the ground: the colliders projected after each iteration hold it up, and it sags
 * as much as under XPBD converged (on frictionless ground the uniaxial column's rho g H^2 / (2 E)
 * = 1.962 mm). Measured: frictionless, XPBD 100 iterations 1.945 mm (its bottom 0.013 mm above
 * the ground), VBD 5 iterations 1.955 mm; without the supported step (the free Newton step
 * projected out of the ground afterwards) VBD sagged 2.26 mm and slid and turned on the
 * frictionless ground, kinetic energy 0.027 J at the end. With friction 0.5 the rest shape
 * depends on how far the sole slid while the box settled (static friction keeps whatever it
 * reached): XPBD 1.938 mm, VBD 1.772 mm (its sole held where it stood, so the Poisson bulge of
 * the bottom layer is held back); there only the rest on the ground is checked. */
void test_vbd_box_rests_on_ground(piola_test *t) {
  for (int k = 0; k < 2; ++k) {
    const float friction = k == 0 ? 0.0f : 0.5f;
    double bottom[2];
    const double xpbd = box_on_ground(t, PIOLA_SCHEME_GAUSS_SEIDEL, 100, 200, friction, &bottom[0]);
    const double vbd = box_on_ground(t, PIOLA_SCHEME_VBD, 5, 200, friction, &bottom[1]);
    printf("  friction %.1f: sag of the top face at rest: XPBD 100 iterations %.4g mm, VBD 5 "
           "iterations %.4g mm; bottom %.3g, %.3g mm\n",
           (double)friction, (0.2 - xpbd) * 1e3, (0.2 - vbd) * 1e3, bottom[0] * 1e3,
           bottom[1] * 1e3);
    CHECK(t, isfinite(xpbd) && isfinite(vbd));
    CHECK_MSG(t, fabs((0.2 - vbd) - (0.2 - xpbd)) < (k == 0 ? 0.02 : 0.15) * (0.2 - xpbd),
              "sag VBD %.4g, XPBD %.4g m", 0.2 - vbd, 0.2 - xpbd);
    CHECK_MSG(t, fabs(bottom[1]) < 1e-5, "bottom at %.3g m", bottom[1]);
  }
}

/* A tet mirrored through its opposite face recovers without NaN, both models, inversion on and
 * always. */
void test_vbd_inverted_tet_recovers(piola_test *t) {
  static int32_t one[4] = {0, 1, 2, 3};
  const piola_model models[2] = {PIOLA_MODEL_STVK, PIOLA_MODEL_NEOHOOKEAN};
  const piola_inversion modes[2] = {PIOLA_INVERSION_ON, PIOLA_INVERSION_ALWAYS};
  for (int mi = 0; mi < 2; ++mi) {
    for (int ii = 0; ii < 2; ++ii) {
      piola_tet_mesh mesh = {(float *)wt_unit_tet, 4, one, 1};
      piola_world_def def = piola_test_world_def(NULL, NULL);
      def.iteration_scheme = PIOLA_SCHEME_VBD;
      def.iterations = 10;
      def.gravity[1] = 0.0f;
      piola_world *w = NULL;
      REQUIRE_OK(t, piola_world_create(&def, &w));
      piola_material mat = wt_material(models[mi], PIOLA_SOLVER_XPBD, 1e6f);
      mat.handle_inversion = modes[ii];
      piola_body_id id;
      REQUIRE_OK(t, piola_world_add_tet_body(w, &mesh, &mat, NULL, &id));
      REQUIRE_OK(t, piola_body_set_self_collision(w, id, false));
      float p[12];
      memcpy(p, wt_unit_tet, sizeof p);
      p[10] = -wt_unit_tet[10];
      REQUIRE_OK(t, piola_body_set_positions(w, id, p, 4));
      for (int s = 0; s < 200; ++s) {
        REQUIRE_OK(t, piola_world_step(w));
      }
      REQUIRE_OK(t, piola_body_get_positions(w, id, p, 4));
      bool finite = true;
      for (int k = 0; k < 12; ++k) {
        finite = finite && isfinite(p[k]);
      }
      const double volume = wt_signed_volume(&mesh, p), rest = wt_signed_volume(&mesh, wt_unit_tet);
      CHECK_MSG(t, finite && fabs(volume / rest - 1.0) < 0.01, "model %d inversion %d: volume %.4g",
                mi, ii, volume / rest);
      piola_world_destroy(w);
    }
  }
}

/* Bitwise repeatable: a squashed box falling onto the ground, twice on one thread and once on
 * two threads, the same state hash. */
void test_vbd_bitwise_repeatable(piola_test *t) {
  uint64_t hash[3];
  for (int run = 0; run < 3; ++run) {
    hash[run] = wt_squashed_box_hash(PIOLA_SCHEME_VBD, run == 2 ? 2 : 1);
  }
  CHECK(t, hash[0] != 0 && hash[0] == hash[1] && hash[1] == hash[2]);
}

/* An unknown scheme is refused with a message; VBD is accepted. */
void test_vbd_bad_scheme_refused(piola_test *t) {
  piola_test_log log;
  piola_world_def def = piola_test_world_def(&log, NULL);
  def.iteration_scheme = (piola_iteration_scheme)4;
  piola_world *w = (piola_world *)&def; /* overwritten with NULL on failure */
  CHECK_STATUS(t, piola_world_create(&def, &w), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, w == NULL && log.count[PIOLA_LOG_ERROR] == 1);
  CHECK(t, strstr(log.last, "iteration scheme") != NULL);
  def.iteration_scheme = PIOLA_SCHEME_VBD;
  CHECK_STATUS(t, piola_world_create(&def, &w), PIOLA_OK);
  piola_world_destroy(w);
}

/* ---- The cloth's vertex blocks (kernels/piola_cloth.h) ------------------------------------ */

/* The membrane's gradient against central differences of its energy (stretched, sheared and
 * compressed triangles), its block against differences of the gradient where the membrane is
 * stretched in every direction (there the block is positive semidefinite and the projection
 * changes nothing), and positive semidefinite everywhere; the bending stencil's gradient
 * likewise and, for a flat rest state, its constant block q K_i^2 I exactly. */
void test_vbd_cloth_block_finite_differences(piola_test *t) {
  piola_cloth_tri_material mat;
  REQUIRE(t, piola_cloth_tri_material_make(1.0, 0.6, 0.3, 0.25, PIOLA_CLOTH_SOLVER_XPBD, &mat));
  const piola_v3 r0 = piola_v3_make(0, 0, 0), r1 = piola_v3_make(0.3, 0, 0),
                 r2 = piola_v3_make(0.1, 0.25, 0);
  piola_m2 dm;
  double area;
  REQUIRE(t, piola_cloth_tri_init(r0, r1, r2, &dm, &area) == PIOLA_CLOTH_INIT_OK);
  uint64_t rng = 5;
  double worst_g = 0.0, worst_h = 0.0;
  for (int kind = 0; kind < 3; ++kind) {
    for (int trial = 0; trial < 20; ++trial) {
      const double scale = kind == 0   ? 1.3
                           : kind == 1 ? 1.0
                                       : 0.7; /* stretched, mixed, compressed */
      piola_v3 x[3] = {r0, r1, r2};
      for (int a = 0; a < 3; ++a) {
        x[a] = piola_v3_scale(x[a], scale);
        x[a] = piola_v3_add(x[a], piola_v3_make(0.02 * piola_test_rand(&rng),
                                                0.02 * piola_test_rand(&rng),
                                                0.05 * piola_test_rand(&rng)));
      }
      for (int a = 0; a < 3; ++a) {
        piola_v3 g;
        piola_m3 hb;
        const double u = piola_cloth_tri_vertex_block(&mat, dm, area, x[0], x[1], x[2], a, &g, &hb);
        CHECK_NEAR(t, u, piola_cloth_tri_energy(&mat, dm, area, x[0], x[1], x[2]), 1e-15);
        double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
        const double gv[3] = {g.x, g.y, g.z}, h = 1e-6;
        const double gs = 1e-4 + piola_v3_length(g), hs = 1e-3 + sqrt(piola_m3_frobenius2(hb));
        for (int c = 0; c < 3; ++c) {
          const double keep = *comp[c];
          piola_v3 gp, gm;
          piola_m3 unused;
          *comp[c] = keep + h;
          const double ep = piola_cloth_tri_energy(&mat, dm, area, x[0], x[1], x[2]);
          piola_cloth_tri_vertex_block(&mat, dm, area, x[0], x[1], x[2], a, &gp, &unused);
          *comp[c] = keep - h;
          const double em = piola_cloth_tri_energy(&mat, dm, area, x[0], x[1], x[2]);
          piola_cloth_tri_vertex_block(&mat, dm, area, x[0], x[1], x[2], a, &gm, &unused);
          *comp[c] = keep;
          const double dg = fabs((ep - em) / (2 * h) - gv[c]) / gs;
          worst_g = fmax(worst_g, dg);
          CHECK_MSG(t, dg < 1e-6, "triangle kind %d corner %d: gradient %d off by %g", kind, a, c,
                    dg);
          if (kind == 0) {
            const double col[3] = {(gp.x - gm.x) / (2 * h), (gp.y - gm.y) / (2 * h),
                                   (gp.z - gm.z) / (2 * h)};
            for (int r = 0; r < 3; ++r) {
              const double dh = fabs(col[r] - hb.m[3 * r + c]) / hs;
              worst_h = fmax(worst_h, dh);
              CHECK_MSG(t, dh < 1e-6, "triangle corner %d: H[%d][%d] off by %g", a, r, c, dh);
            }
          }
        }
        piola_m3 q;
        piola_v3 l;
        piola_sym_eigen(hb, &q, &l);
        CHECK(t, l.x >= -1e-12 * hs && l.y >= -1e-12 * hs && l.z >= -1e-12 * hs);
      }
    }
  }
  /* A flat hinge (rest) bent and stretched: the block is q K_i^2 I, the Hessian of (q/2)|v|^2. */
  const piola_v3 b0 = piola_v3_make(0, 0, 0), b1 = piola_v3_make(1, 0, 0),
                 b2 = piola_v3_make(0.4, 0.8, 0), b3 = piola_v3_make(0.6, -0.7, 0);
  piola_cloth_bend_rest rest;
  REQUIRE(t, piola_cloth_bend_init(b0, b1, b2, b3, &rest) == PIOLA_CLOTH_INIT_OK);
  for (int trial = 0; trial < 20; ++trial) {
    piola_v3 x[4] = {b0, b1, b2, b3};
    for (int a = 0; a < 4; ++a) {
      x[a] = piola_v3_add(x[a],
                          piola_v3_make(0.05 * piola_test_rand(&rng), 0.05 * piola_test_rand(&rng),
                                        0.2 * piola_test_rand(&rng)));
    }
    for (int a = 0; a < 4; ++a) {
      piola_v3 g;
      piola_m3 hb;
      piola_cloth_bend_vertex_block(&rest, x[0], x[1], x[2], x[3], a, &g, &hb);
      double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
      const double gv[3] = {g.x, g.y, g.z}, h = 1e-6;
      for (int c = 0; c < 3; ++c) {
        const double keep = *comp[c];
        piola_v3 gp, gm;
        piola_m3 unused;
        *comp[c] = keep + h;
        const double ep = piola_cloth_bend_energy(&rest, x[0], x[1], x[2], x[3]);
        piola_cloth_bend_vertex_block(&rest, x[0], x[1], x[2], x[3], a, &gp, &unused);
        *comp[c] = keep - h;
        const double em = piola_cloth_bend_energy(&rest, x[0], x[1], x[2], x[3]);
        piola_cloth_bend_vertex_block(&rest, x[0], x[1], x[2], x[3], a, &gm, &unused);
        *comp[c] = keep;
        CHECK_NEAR(t, (ep - em) / (2 * h), gv[c], 1e-7 * (1.0 + piola_v3_length(g)));
        const double col[3] = {(gp.x - gm.x) / (2 * h), (gp.y - gm.y) / (2 * h),
                               (gp.z - gm.z) / (2 * h)};
        for (int r = 0; r < 3; ++r) {
          CHECK_NEAR(t, col[r], hb.m[3 * r + c], 1e-6 * (1.0 + hb.m[0]));
        }
      }
    }
  }
  printf("  membrane: worst relative error gradient %.2g, block %.2g\n", worst_g, worst_h);
}

/* A cloth (1 x 1 m, 10 x 10 cells) pinned at two corners hangs under gravity: under VBD at 5
 * iterations its lowest point settles where XPBD's does at many (the membrane and bending blocks
 * in the vertex steps). */
static double hanging_cloth(piola_test *t, piola_iteration_scheme scheme, int32_t iterations) {
  piola_tri_mesh m;
  memset(&m, 0, sizeof m);
  double lowest = NAN;
  piola_world *w = vbd_world(t, scheme, iterations, 1, 5.0f);
  const int32_t cells[2] = {10, 10};
  const float size[2] = {1.0f, 1.0f};
  if (w == NULL || piola_mesh_make_grid(cells, size, &m) != PIOLA_OK) {
    piola_world_destroy(w);
    return NAN;
  }
  piola_cloth_material mat = piola_default_cloth_material();
  piola_body_id id;
  const int32_t n = m.vertex_count;
  float *inv = malloc(sizeof *inv * (size_t)n), *x = malloc(sizeof *x * 3 * (size_t)n);
  if (inv != NULL && x != NULL && piola_world_add_cloth(w, &m, &mat, NULL, &id) == PIOLA_OK &&
      piola_body_get_inverse_masses(w, id, inv, n) == PIOLA_OK) {
    /* pin the two corners at z = 0 (the grid spans x and z) */
    for (int32_t i = 0; i < n; ++i) {
      if (m.positions[3 * i + 2] == 0.0f &&
          (m.positions[3 * i] == 0.0f || m.positions[3 * i] == 1.0f)) {
        inv[i] = 0.0f;
      }
    }
    piola_status s = piola_body_set_inverse_masses(w, id, inv, n);
    for (int k = 0; k < 400 && s == PIOLA_OK; ++k) {
      s = piola_world_step(w);
    }
    if (s == PIOLA_OK && piola_body_get_positions(w, id, x, n) == PIOLA_OK) {
      lowest = INFINITY;
      for (int32_t i = 0; i < n; ++i) {
        lowest = fmin(lowest, x[3 * i + 1]);
      }
    }
  }
  free(inv);
  free(x);
  piola_tri_mesh_free(&m);
  piola_world_destroy(w);
  return lowest;
}

void test_vbd_cloth_hangs_like_xpbd(piola_test *t) {
  const double xpbd = hanging_cloth(t, PIOLA_SCHEME_GAUSS_SEIDEL, 100);
  const double vbd = hanging_cloth(t, PIOLA_SCHEME_VBD, 5);
  printf("  hanging cloth, lowest point: XPBD 100 iterations %.5f m, VBD 5 iterations %.5f m\n",
         xpbd, vbd);
  CHECK(t, isfinite(xpbd) && isfinite(vbd));
  CHECK_MSG(t, fabs(vbd - xpbd) < 1e-3 * fabs(xpbd), "VBD %.5f, XPBD %.5f m", vbd, xpbd);
}

/* ---- Attachments ---------------------------------------------------------------------------- */

/* The beam of beam_sag hung from attachments at its x = 0 face instead of pinned: soft ones
 * (compliance `compliance`, m/N) are energy in the vertices' blocks, hard ones hold their
 * vertices. Returns the mean tip sag (m) and the largest distance of an attached vertex from its
 * target in *off (m). */
static double attached_beam_on(piola_test *t, piola_backend backend, piola_iteration_scheme scheme,
                               int32_t iterations, float compliance, double *off) {
  const int32_t cells[3] = {10, 2, 2};
  const float size[3] = {1.0f, 0.2f, 0.2f};
  piola_tet_mesh beam;
  *off = NAN;
  if (piola_mesh_make_box(cells, size, &beam) != PIOLA_OK) {
    return NAN;
  }
  piola_world *w = vbd_world_on(t, backend, scheme, iterations, 1, 10.0f);
  double sag = NAN;
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e7f;
  piola_body_id id;
  const int32_t n = beam.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  piola_status s = w != NULL && x != NULL ? piola_world_add_tet_body(w, &beam, &mat, NULL, &id)
                                          : PIOLA_ERROR_OUT_OF_MEMORY;
  for (int32_t i = 0; i < n && s == PIOLA_OK; ++i) {
    if (beam.positions[3 * i] == 0.0f) {
      piola_attachment_id aid;
      s = piola_world_add_attachment(w, id, i, beam.positions + 3 * i, compliance, &aid);
    }
  }
  for (int k = 0; k < 300 && s == PIOLA_OK; ++k) {
    s = piola_world_step(w);
  }
  if (s == PIOLA_OK && piola_body_get_positions(w, id, x, n) == PIOLA_OK) {
    double sum = 0.0, worst = 0.0;
    int32_t count = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (beam.positions[3 * i] == 1.0f) {
        sum += (double)beam.positions[3 * i + 1] - x[3 * i + 1];
        count++;
      } else if (beam.positions[3 * i] == 0.0f) {
        for (int k = 0; k < 3; ++k) {
          worst = fmax(worst, fabs((double)x[3 * i + k] - beam.positions[3 * i + k]));
        }
      }
    }
    sag = sum / count;
    *off = worst;
  }
  free(x);
  piola_world_destroy(w);
  piola_mesh_free(&beam);
  return sag;
}

static double attached_beam(piola_test *t, piola_iteration_scheme scheme, int32_t iterations,
                            float compliance, double *off) {
  return attached_beam_on(t, PIOLA_BACKEND_CPU_REFERENCE, scheme, iterations, compliance, off);
}

/* Measured: hard attachments, VBD 5 iterations 0.01947 m (the pinned beam's 0.01952 m) with
 * the attached vertices exactly on their targets; soft ones (1e-7 m/N), VBD 0.01992 m at 5 and
 * 0.01991 m at 20 and 40 iterations (attached vertices up to 5.0e-5 m off their targets), XPBD (the
 * attachments projected after each iteration) 0.02167 m at 100 and 0.01982 m at 400 iterations
 * (3.9e-5 m off), still on its way. */
void test_vbd_attachments(piola_test *t) {
  double off[4];
  const double hard = attached_beam(t, PIOLA_SCHEME_VBD, 5, 0.0f, &off[0]);
  const double soft_xpbd = attached_beam(t, PIOLA_SCHEME_GAUSS_SEIDEL, 100, 1e-7f, &off[1]);
  const double soft_vbd = attached_beam(t, PIOLA_SCHEME_VBD, 5, 1e-7f, &off[2]);
  const double soft_vbd40 = attached_beam(t, PIOLA_SCHEME_VBD, 20, 1e-7f, &off[3]);
  printf("  attached beam: hard (VBD) sag %.5f m, attached vertices off by %.3g m; soft: XPBD 100 "
         "iterations %.5f m (off %.3g m), VBD 5 iterations %.5f m (off %.3g m), 20 iterations "
         "%.5f m\n",
         hard, off[0], soft_xpbd, off[1], soft_vbd, off[2], soft_vbd40);
  CHECK_MSG(t, fabs(hard - 0.01952) < 0.0005, "hard sag %.5f m", hard);
  CHECK(t, off[0] < 1e-6);
  CHECK_MSG(t, fabs(soft_vbd - soft_vbd40) < 0.005 * soft_vbd40, "soft: VBD %.5f, %.5f m", soft_vbd,
            soft_vbd40);
  CHECK_MSG(t, fabs(soft_vbd - soft_xpbd) < 0.1 * soft_xpbd, "soft: VBD %.5f, XPBD %.5f m",
            soft_vbd, soft_xpbd);
  CHECK_MSG(t, off[2] > 1e-5 && off[2] < 1e-4, "soft: attached vertices off by %.3g m", off[2]);
}

/* The attached beams on OpenCL under VBD: the same sags as the CPU reference (float against
 * double), hard attachments exactly on their targets. */
void test_opencl_vbd_attachments(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  for (int k = 0; k < 2; ++k) {
    const float compliance = k == 0 ? 0.0f : 1e-7f;
    double off[2];
    const double cpu =
        attached_beam_on(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_VBD, 5, compliance, &off[0]);
    const double ocl =
        attached_beam_on(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEME_VBD, 5, compliance, &off[1]);
    printf("  compliance %g m/N: sag CPU %.6f m, OpenCL %.6f m; off %.3g, %.3g m\n",
           (double)compliance, cpu, ocl, off[0], off[1]);
    CHECK_MSG(t, fabs(cpu - ocl) < 1e-3 * cpu, "sag CPU %.6f, OpenCL %.6f m", cpu, ocl);
    CHECK(t, k == 1 || off[1] < 1e-6);
  }
}

/* A stiff box (4 x 4 x 4 cells, 0.3 m, E 1 MPa) released at rest in the air under VBD at the
 * default 5 iterations: after `steps` steps of 5 ms, its centre's height lost (m, into *fall) and
 * its sideways drift (m, into *drift). */
static void free_fall_on(piola_test *t, piola_backend backend, int32_t steps, double *fall,
                         double *drift) {
  *fall = *drift = NAN;
  piola_world *w = vbd_world_on(t, backend, PIOLA_SCHEME_VBD, 5, 1, 0.0f);
  piola_tet_mesh box = wt_box(4, 4, 4, 0.3f, 0.3f, 0.3f);
  piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  piola_body_id id;
  const int32_t n = box.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  if (w != NULL && x != NULL &&
      piola_world_add_tet_body(w, &box, &mat, (const float[3]){0.0f, 1.0f, 0.0f}, &id) ==
          PIOLA_OK) {
    for (int32_t s = 0; s < steps; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
    }
    REQUIRE_OK(t, piola_body_get_positions(w, id, x, n));
    double c[3] = {0.0, 0.0, 0.0};
    for (int32_t i = 0; i < n; ++i) {
      for (int k = 0; k < 3; ++k) {
        c[k] += x[3 * i + k] / n;
      }
    }
    *fall = 1.15 - c[1];
    *drift = hypot(c[0] - 0.15, c[2] - 0.15);
  }
  free(x);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

/* A body released at rest in the air falls as implicit Euler says, g dt^2 n (n + 1) / 2 in n
 * steps, under VBD as under XPBD: the first substep, which has no last velocity for the
 * adaptive initial guess, starts from the prediction (with no gravity in that guess the box lagged
 * 6.6 mm after 20 steps and drifted 0.8 mm sideways). */
void test_vbd_free_fall(piola_test *t) {
  const int32_t steps = 20;
  const double expected = 9.81 * 0.005 * 0.005 * steps * (steps + 1) / 2.0;
  double fall, drift;
  free_fall_on(t, PIOLA_BACKEND_CPU_REFERENCE, steps, &fall, &drift);
  printf("  CPU reference: fell %.6f m (implicit Euler %.6f m), drift %.3g m\n", fall, expected,
         drift);
  CHECK_MSG(t, fabs(fall - expected) < 1e-6 && drift < 1e-6, "fell %.6f m, drift %.3g m", fall,
            drift);
  if (!opencl_test_ready(t)) {
    return;
  }
  free_fall_on(t, PIOLA_BACKEND_OPENCL, steps, &fall, &drift);
  printf("  OpenCL: fell %.6f m, drift %.3g m\n", fall, drift);
  CHECK_MSG(t, fabs(fall - expected) < 1e-5 && drift < 1e-5, "fell %.6f m, drift %.3g m", fall,
            drift);
}

/* The sums of piola_vbd_rigid_fit over n points x with masses m and targets y, about x[0]. */
static piola_v3 rigid_fit_of(int n, const double *m, const piola_v3 *x, const piola_v3 *y,
                             piola_v3 *c, piola_v3 *shift) {
  double mass = 0.0;
  piola_v3 mx = piola_v3_make(0.0, 0.0, 0.0), mg = mx, lg = mx;
  piola_m3 mxx = piola_m3_scale(piola_m3_identity(), 0.0);
  for (int i = 0; i < n; ++i) {
    const piola_v3 a = piola_v3_sub(x[i], x[0]), g = piola_v3_sub(y[i], x[i]);
    const double av[3] = {a.x, a.y, a.z};
    mass += m[i];
    mx = piola_v3_add(mx, piola_v3_scale(a, m[i]));
    mg = piola_v3_add(mg, piola_v3_scale(g, m[i]));
    lg = piola_v3_add(lg, piola_v3_scale(piola_v3_cross(a, g), m[i]));
    for (int k = 0; k < 9; ++k) {
      mxx.m[k] += m[i] * av[k / 3] * av[k % 3];
    }
  }
  return piola_vbd_rigid_fit(mass, mx, mg, mxx, lg, c, shift);
}

/* The rigid fit's math (kernels/piola_tet.h): of targets y that are a rigid motion of the points
 * (a turn of 1e-3 rad about their centre and a shift), it finds the shift exactly and the turn to
 * first order, and moves the points onto y to within the second order; of targets that are not,
 * it lowers the inertia term sum m |x - y|^2; a pure shift gives no turn. */
void test_vbd_rigid_fit_math(piola_test *t) {
  enum { N = 40 };
  uint64_t rng = 7;
  double m[N];
  piola_v3 x[N], y[N];
  const piola_v3 w0 = piola_v3_make(4e-4, -7e-4, 5e-4), t0 = piola_v3_make(0.01, -0.02, 0.005);
  piola_v3 centre = piola_v3_make(0.0, 0.0, 0.0);
  double mass = 0.0;
  for (int i = 0; i < N; ++i) {
    m[i] = 1.0 + 0.5 * piola_test_rand(&rng);
    x[i] = piola_v3_make(1.0 + 0.3 * piola_test_rand(&rng), 2.0 + 0.2 * piola_test_rand(&rng),
                         -0.5 + 0.4 * piola_test_rand(&rng));
    centre = piola_v3_add(centre, piola_v3_scale(x[i], m[i]));
    mass += m[i];
  }
  centre = piola_v3_scale(centre, 1.0 / mass);
  for (int i = 0; i < N; ++i) { /* y = centre + t0 + exp(w0) (x - centre) */
    y[i] =
        piola_v3_add(piola_v3_add(x[i], t0),
                     piola_vbd_rigid_displacement(w0, centre, piola_v3_make(0.0, 0.0, 0.0), x[i]));
  }
  piola_v3 c, shift;
  const piola_v3 w = rigid_fit_of(N, m, x, y, &c, &shift);
  const double turn = piola_v3_length(piola_v3_sub(w, w0)) / piola_v3_length(w0);
  const double moved = piola_v3_length(piola_v3_sub(piola_v3_add(c, x[0]), centre));
  CHECK_MSG(t, moved < 1e-12 && piola_v3_length(piola_v3_sub(shift, t0)) < 1e-12,
            "centre off by %g, shift by %g", moved, piola_v3_length(piola_v3_sub(shift, t0)));
  CHECK_MSG(t, turn < 2e-3, "turn off by %g of itself", turn);
  double off = 0.0;
  for (int i = 0; i < N; ++i) {
    const piola_v3 p =
        piola_v3_add(x[i], piola_vbd_rigid_displacement(w, c, shift, piola_v3_sub(x[i], x[0])));
    off = fmax(off, piola_v3_length(piola_v3_sub(p, y[i])));
  }
  CHECK_MSG(t, off < 1e-6, "points off their targets by %g m", off);
  /* targets that are no rigid motion: the inertia term falls */
  double before = 0.0, after = 0.0;
  for (int i = 0; i < N; ++i) {
    y[i] =
        piola_v3_add(y[i], piola_v3_make(0.01 * piola_test_rand(&rng), 0.01 * piola_test_rand(&rng),
                                         0.01 * piola_test_rand(&rng)));
  }
  const piola_v3 w2 = rigid_fit_of(N, m, x, y, &c, &shift);
  for (int i = 0; i < N; ++i) {
    const piola_v3 p =
        piola_v3_add(x[i], piola_vbd_rigid_displacement(w2, c, shift, piola_v3_sub(x[i], x[0])));
    before += m[i] * pow(piola_v3_length(piola_v3_sub(x[i], y[i])), 2);
    after += m[i] * pow(piola_v3_length(piola_v3_sub(p, y[i])), 2);
  }
  CHECK_MSG(t, after < before, "inertia term %g -> %g", before, after);
  /* a pure shift: no turn */
  for (int i = 0; i < N; ++i) {
    y[i] = piola_v3_add(x[i], t0);
  }
  const piola_v3 w3 = rigid_fit_of(N, m, x, y, &c, &shift);
  CHECK_MSG(t, piola_v3_length(w3) < 1e-15, "a shift turned by %g rad", piola_v3_length(w3));
  printf("  rigid target: turn off by %.2g of itself, points by %.2g m; other targets: inertia "
         "term %.4g -> %.4g\n",
         turn, off, before, after);
}

/* A zero-gravity world of the backend under the scheme (with the schedule and iterations, one
 * substep) holding one box of 4 x 4 x 4 cells, 0.3 m (Neo-Hookean, E = 1 MPa) with its low corner
 * at (0, 1, 0), body *id; NULL (a failed check) where either fails. */
static piola_world *floating_box(piola_test *t, piola_backend backend,
                                 piola_iteration_scheme scheme, piola_schedule schedule,
                                 int32_t iterations, piola_body_id *id) {
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  def.iteration_scheme = scheme;
  def.iterations = iterations;
  def.schedule = schedule;
  def.gravity[1] = 0.0f;
  piola_world *w = NULL;
  CHECK_STATUS(t, piola_world_create(&def, &w), PIOLA_OK);
  piola_tet_mesh box = wt_box(4, 4, 4, 0.3f, 0.3f, 0.3f);
  const piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  if (w != NULL) {
    const piola_status s =
        piola_world_add_tet_body(w, &box, &mat, (const float[3]){0.0f, 1.0f, 0.0f}, id);
    CHECK_STATUS(t, s, PIOLA_OK);
    if (s != PIOLA_OK) {
      piola_world_destroy(w);
      w = NULL;
    }
  }
  piola_mesh_free(&box);
  return w;
}

/* A box (4 x 4 x 4 cells, 0.3 m, Neo-Hookean, E = 1 MPa) released at rest squashed to 60% of its
 * height and sheared by 30%, in zero gravity with nothing to touch, under the scheme with
 * `iterations` for `steps` steps of 5 ms on the backend with the schedule: how far its centre of
 * mass moved (m), or NAN on failure. */
static double ringing_box_drift_on(piola_test *t, piola_backend backend,
                                   piola_iteration_scheme scheme, piola_schedule schedule,
                                   int32_t iterations, int32_t steps) {
  double moved = NAN;
  piola_body_id id;
  piola_world *w = floating_box(t, backend, scheme, schedule, iterations, &id);
  const int32_t n = w != NULL ? piola_body_get_vertex_count(w, id) : 1;
  float *x = malloc(sizeof *x * 3 * (size_t)n), *inv = malloc(sizeof *inv * (size_t)n);
  if (w != NULL && x != NULL && inv != NULL) {
    CHECK_STATUS(t, piola_body_get_positions(w, id, x, n), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_inverse_masses(w, id, inv, n), PIOLA_OK);
    for (int32_t i = 0; i < n; ++i) {
      const float up = x[3 * i + 1] - 1.0f;
      x[3 * i] += 0.3f * up;
      x[3 * i + 1] = 1.0f + 0.6f * up;
    }
    CHECK_STATUS(t, piola_body_set_positions(w, id, x, n), PIOLA_OK);
    double c[3] = {0.0, 0.0, 0.0}, mass = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      mass += 1.0 / inv[i];
      for (int k = 0; k < 3; ++k) {
        c[k] += x[3 * i + k] / inv[i];
      }
    }
    for (int32_t s = 0; s < steps; ++s) {
      CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
    }
    CHECK_STATUS(t, piola_body_get_positions(w, id, x, n), PIOLA_OK);
    for (int32_t i = 0; i < n; ++i) {
      for (int k = 0; k < 3; ++k) {
        c[k] -= x[3 * i + k] / inv[i];
      }
    }
    moved = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]) / mass;
  }
  free(x);
  free(inv);
  piola_world_destroy(w);
  return moved;
}

/* A body that nothing touches keeps its momentum under an unconverged VBD step (the rigid fit of
 * free bodies, vbd.c): the ringing box's centre of mass stays where it was released, as under
 * XPBD, whose projections each conserve momentum (to the rounding of the positions read back in
 * float). Without the fit its centre moved 4.5 cm in 1 s at 5 iterations. */
void test_vbd_free_body_keeps_momentum(piola_test *t) {
  const int32_t steps = 200;
  const piola_schedule any = PIOLA_SCHEDULE_AUTO;
  const double xpbd = ringing_box_drift_on(t, PIOLA_BACKEND_CPU_REFERENCE,
                                           PIOLA_SCHEME_GAUSS_SEIDEL, any, 5, steps);
  const double moved =
      ringing_box_drift_on(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_VBD, any, 5, steps);
  printf("  CPU reference: centre moved %.3g m under VBD, %.3g m under XPBD\n", moved, xpbd);
  CHECK_MSG(t, moved < 1e-7, "moved %.3g m", moved);
  if (!opencl_test_ready(t)) {
    return;
  }
  const double device_xpbd =
      ringing_box_drift_on(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEME_GAUSS_SEIDEL, any, 5, steps);
  const piola_schedule schedules[2] = {PIOLA_SCHEDULE_STAGES, PIOLA_SCHEDULE_BODIES};
  for (int k = 0; k < 2; ++k) {
    const double device =
        ringing_box_drift_on(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEME_VBD, schedules[k], 5, steps);
    printf("  OpenCL, %s: centre moved %.3g m under VBD, %.3g m under XPBD\n",
           k == 0 ? "per stage" : "per body", device, device_xpbd);
    CHECK_MSG(t, device < 1e-6, "schedule %d: moved %.3g m", k, device);
  }
}

/* A box (4 x 4 x 4 cells, 0.3 m, Neo-Hookean, E = 1 MPa) set spinning at 4 rad/s about a tilted
 * axis through its centre, in zero gravity with nothing to touch, after `steps` steps of 5 ms under
 * the scheme on the backend: its angular velocity (rad/s, I^-1 L about its centre of mass) in w. */
static void spinning_box_on(piola_test *t, piola_backend backend, piola_iteration_scheme scheme,
                            int32_t iterations, int32_t steps, double w[3]) {
  w[0] = w[1] = w[2] = NAN;
  piola_body_id id;
  piola_world *world = floating_box(t, backend, scheme, PIOLA_SCHEDULE_AUTO, iterations, &id);
  const int32_t n = world != NULL ? piola_body_get_vertex_count(world, id) : 1;
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  float *inv = malloc(sizeof *inv * (size_t)n);
  if (world == NULL || x == NULL || v == NULL || inv == NULL) {
    CHECK(t, false);
  } else {
    CHECK_STATUS(t, piola_body_get_positions(world, id, x, n), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_inverse_masses(world, id, inv, n), PIOLA_OK);
    const double axis[3] = {0.3, 1.0, 0.2}, norm = sqrt(0.09 + 1.0 + 0.04);
    for (int32_t i = 0; i < n; ++i) {
      const piola_v3 r = piola_v3_make(x[3 * i] - 0.15, x[3 * i + 1] - 1.15, x[3 * i + 2] - 0.15);
      const piola_v3 u = piola_v3_cross(
          piola_v3_make(4.0 * axis[0] / norm, 4.0 * axis[1] / norm, 4.0 * axis[2] / norm), r);
      v[3 * i] = (float)u.x;
      v[3 * i + 1] = (float)u.y;
      v[3 * i + 2] = (float)u.z;
    }
    CHECK_STATUS(t, piola_body_set_velocities(world, id, v, n), PIOLA_OK);
    for (int32_t s = 0; s < steps; ++s) {
      CHECK_STATUS(t, piola_world_step(world), PIOLA_OK);
    }
    CHECK_STATUS(t, piola_body_get_positions(world, id, x, n), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_velocities(world, id, v, n), PIOLA_OK);
    piola_v3 c = piola_v3_make(0.0, 0.0, 0.0), l = c;
    double mass = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      mass += 1.0 / inv[i];
      c = piola_v3_add(
          c, piola_v3_scale(piola_v3_make(x[3 * i], x[3 * i + 1], x[3 * i + 2]), 1.0 / inv[i]));
    }
    c = piola_v3_scale(c, 1.0 / mass);
    piola_m3 inertia = piola_m3_scale(piola_m3_identity(), 0.0);
    for (int32_t i = 0; i < n; ++i) {
      const double m = 1.0 / inv[i];
      const piola_v3 r = piola_v3_sub(piola_v3_make(x[3 * i], x[3 * i + 1], x[3 * i + 2]), c);
      const double rv[3] = {r.x, r.y, r.z}, rr = piola_v3_dot(r, r);
      l = piola_v3_add(
          l, piola_v3_scale(piola_v3_cross(r, piola_v3_make(v[3 * i], v[3 * i + 1], v[3 * i + 2])),
                            m));
      for (int k = 0; k < 9; ++k) {
        inertia.m[k] += m * ((k / 3 == k % 3 ? rr : 0.0) - rv[k / 3] * rv[k % 3]);
      }
    }
    piola_v3 spin; /* I^-1 l: the Newton step of gradient -l */
    CHECK(t, piola_vbd_newton_step(inertia, piola_v3_scale(l, -1.0), &spin));
    w[0] = spin.x;
    w[1] = spin.y;
    w[2] = spin.z;
  }
  free(x);
  free(v);
  free(inv);
  piola_world_destroy(world);
}

/* A spinning body that nothing touches turns as the implicit Euler step says under an unconverged
 * VBD step (the rigid fit's rotation): the box's angular velocity after 0.5 s at 5 iterations
 * within 0.1% of its converged one (50 iterations). Without the fit it was (1.145, 3.527, 0.090)
 * rad/s against (1.073, 3.664, 0.476): the axis 6 degrees off. */
void test_vbd_free_body_keeps_spin(piola_test *t) {
  double fast[3], converged[3], device[3];
  spinning_box_on(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_VBD, 5, 100, fast);
  spinning_box_on(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_VBD, 50, 100, converged);
  const double scale =
      sqrt(converged[0] * converged[0] + converged[1] * converged[1] + converged[2] * converged[2]);
  double off = 0.0, device_off = 0.0;
  for (int k = 0; k < 3; ++k) {
    off = fmax(off, fabs(fast[k] - converged[k]));
  }
  printf("  CPU reference: (%.4f, %.4f, %.4f) rad/s at 5 iterations, (%.4f, %.4f, %.4f) at 50\n",
         fast[0], fast[1], fast[2], converged[0], converged[1], converged[2]);
  CHECK_MSG(t, scale > 3.0 && off < 1e-3 * scale, "off by %.3g of %.3g rad/s", off, scale);
  if (!opencl_test_ready(t)) {
    return;
  }
  spinning_box_on(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEME_VBD, 5, 100, device);
  for (int k = 0; k < 3; ++k) {
    device_off = fmax(device_off, fabs(device[k] - converged[k]));
  }
  printf("  OpenCL: (%.4f, %.4f, %.4f) rad/s at 5 iterations\n", device[0], device[1], device[2]);
  CHECK_MSG(t, device_off < 1e-3 * scale, "off by %.3g of %.3g rad/s", device_off, scale);
}

/* ---- Statistics ---------------------------------------------------------------------------- */

/* piola_stats.dependent_passes under VBD (2 substeps of 3 iterations): the prediction, per
 * iteration the vertex colors (the attachments among them) and the colliders, with contacts
 * the broad and narrow phase and per iteration their two passes (no inverted-tet pass), the
 * rigid fit of the free bodies after the last iteration, the velocities. A cloth body's vertex
 * colors run beside the tet body's (bodies color apart). */
void test_vbd_dependent_passes(piola_test *t) {
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.iteration_scheme = PIOLA_SCHEME_VBD;
  def.substeps = 2;
  def.iterations = 3;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_tet_mesh box = wt_box(2, 2, 2, 0.2f, 0.2f, 0.2f);
  const piola_material m = piola_default_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &m, (const float[3]){0.0f, 0.5f, 0.0f}, &id));
  const float up[3] = {0.0f, 1.0f, 0.0f};
  REQUIRE_OK(t, piola_world_add_plane(w, up, 0.0f, 0.5f, NULL));
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  const int32_t vc = st.vertex_color_count;
  CHECK(t, vc > 0 && st.color_count > 0);
  CHECK_MSG(t, st.dependent_passes == 2 * (1 + 2 + 3 * (vc + 2 + 1) + 1 + 1), "contacts: %d",
            (int)st.dependent_passes);
  piola_attachment_id a;
  REQUIRE_OK(t, piola_world_add_attachment(w, id, 0, (const float[3]){0.0f, 0.5f, 0.0f}, 0.0f, &a));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK_MSG(t, st.dependent_passes == 2 * (1 + 2 + 3 * (vc + 2 + 1) + 1 + 1), "attachment: %d",
            (int)st.dependent_passes);
  piola_tri_mesh grid;
  REQUIRE_OK(t,
             piola_mesh_make_grid((const int32_t[2]){4, 4}, (const float[2]){0.4f, 0.4f}, &grid));
  const piola_cloth_material cm = piola_default_cloth_material();
  piola_body_id cloth;
  REQUIRE_OK(t, piola_world_add_cloth(w, &grid, &cm, (const float[3]){1.0f, 1.0f, 0.0f}, &cloth));
  CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  const int32_t vc2 = st.vertex_color_count;
  CHECK(t, vc2 >= vc);
  CHECK_MSG(t, st.dependent_passes == 2 * (1 + 2 + 3 * (vc2 + 2 + 1) + 1 + 1), "cloth: %d",
            (int)st.dependent_passes);
  piola_tri_mesh_free(&grid);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

/* Plasticity under VBD: the twisted beam (E = 1e6 Pa, creep 5 1/s, yield 0.02) released without
 * gravity keeps a part of its twist as plastic strain, as under XPBD: the plastic tets' M (the
 * elastic F = F_total F_p^-1) is what the vertex blocks evaluate. Measured: 0.503 rad of the
 * 1 rad left under XPBD at 20 iterations, 0.510 rad under VBD at 5. */
void test_vbd_plasticity(piola_test *t) {
  const int32_t cells[3] = {10, 2, 2};
  const float size[3] = {1.0f, 0.2f, 0.2f};
  double twist[2];
  for (int k = 0; k < 2; ++k) {
    piola_tet_mesh beam;
    REQUIRE_OK(t, piola_mesh_make_box(cells, size, &beam));
    piola_world_def def = piola_test_world_def(NULL, NULL);
    def.iteration_scheme = k == 0 ? PIOLA_SCHEME_GAUSS_SEIDEL : PIOLA_SCHEME_VBD;
    def.iterations = k == 0 ? 20 : 5;
    def.damping = 5.0f;
    def.gravity[1] = 0.0f;
    def.contacts = false;
    piola_world *w = NULL;
    REQUIRE_OK(t, piola_world_create(&def, &w));
    piola_material mat = piola_default_material();
    mat.youngs_modulus = 1e6f;
    mat.plastic_creep = 5.0f;
    mat.plastic_yield = 0.02f;
    mat.plastic_max = 0.3f;
    piola_body_id id;
    REQUIRE_OK(t, piola_world_add_tet_body(w, &beam, &mat, NULL, &id));
    /* twist by 1 rad/m about the beam's axis (y = z = 0.1) */
    float *x = malloc(sizeof *x * 3 * (size_t)beam.vertex_count);
    REQUIRE(t, x != NULL);
    for (int32_t i = 0; i < beam.vertex_count; ++i) {
      const double a = beam.positions[3 * i], y = beam.positions[3 * i + 1] - 0.1,
                   z = beam.positions[3 * i + 2] - 0.1;
      x[3 * i] = (float)a;
      x[3 * i + 1] = (float)(0.1 + cos(a) * y - sin(a) * z);
      x[3 * i + 2] = (float)(0.1 + sin(a) * y + cos(a) * z);
    }
    REQUIRE_OK(t, piola_body_set_positions(w, id, x, beam.vertex_count));
    for (int s = 0; s < 400; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
    }
    piola_stats st;
    REQUIRE_OK(t, piola_world_get_stats(w, &st));
    REQUIRE_OK(t, piola_body_get_positions(w, id, x, beam.vertex_count));
    /* the twist left at the free end: the angle of the end face's edge */
    int32_t a0 = -1, a1 = -1;
    for (int32_t i = 0; i < beam.vertex_count; ++i) {
      if (beam.positions[3 * i] == 1.0f && beam.positions[3 * i + 2] == 0.0f) {
        a0 = beam.positions[3 * i + 1] == 0.0f ? i : a0;
        a1 = beam.positions[3 * i + 1] == 0.2f ? i : a1;
      }
    }
    REQUIRE(t, a0 >= 0 && a1 >= 0);
    const double za = x[3 * a1 + 2] - x[3 * a0 + 2], ya = x[3 * a1 + 1] - x[3 * a0 + 1];
    twist[k] = atan2(za, ya);
    printf("  %s: residual twist at the free end %.4f rad, kinetic %.3g J\n",
           k == 0 ? "XPBD 20 iterations" : "VBD 5 iterations", twist[k], st.kinetic_energy);
    free(x);
    piola_mesh_free(&beam);
    piola_world_destroy(w);
  }
  CHECK_MSG(t, twist[1] > 0.05, "VBD residual twist %.4f rad", twist[1]);
  CHECK_MSG(t, fabs(twist[1] - twist[0]) < 0.05 * fabs(twist[0]), "VBD %.4f, XPBD %.4f rad",
            twist[1], twist[0]);
}

/* ---- Chebyshev acceleration (piola_world_def.vbd_chebyshev_rho) ------------------------------ */

/* A world of the backend under VBD with the acceleration's rho and `iterations` (gravity on, no
 * damping). */
static piola_world *accelerated_world(piola_test *t, piola_backend backend, float rho,
                                      int32_t iterations) {
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  def.iteration_scheme = PIOLA_SCHEME_VBD;
  def.iterations = iterations;
  def.vbd_chebyshev_rho = rho;
  def.contacts = false;
  piola_world *w = NULL;
  piola_status s = piola_world_create(&def, &w);
  CHECK_MSG(t, s == PIOLA_OK, "piola_world_create: %s", piola_status_string(s));
  return s == PIOLA_OK ? w : NULL;
}

/* The column of `validate --only convergence` (0.25 x 0.5 x 0.25 m, n x 2n x n cells,
 * Neo-Hookean, E = 0.1 MPa, nu = 0) standing on the ground (friction 0.5) in its rest shape: one
 * step of dt = 5 ms from rest with `iterations` after an untimed first one. Returns the step's
 * relative residual and its positions in *x (3 per vertex, malloc'd; NULL on failure). */
static double column_step(piola_test *t, piola_backend backend, float rho, int32_t n,
                          int32_t iterations, float **x) {
  *x = NULL;
  const int32_t dims[3] = {n, 2 * n, n};
  const float size[3] = {0.25f, 0.5f, 0.25f};
  piola_tet_mesh mesh;
  if (piola_mesh_make_box(dims, size, &mesh) != PIOLA_OK) {
    return NAN;
  }
  piola_world *w = accelerated_world(t, backend, rho, 5);
  piola_material m = piola_default_material();
  m.youngs_modulus = 1e5f;
  m.poisson_ratio = 0.0f;
  const float up[3] = {0.0f, 1.0f, 0.0f};
  const int32_t nv = mesh.vertex_count;
  float *zero = calloc(3 * (size_t)nv, sizeof *zero), *out = malloc(sizeof *out * 3 * (size_t)nv);
  piola_body_id id;
  piola_status s = w != NULL && zero != NULL && out != NULL ? PIOLA_OK : PIOLA_ERROR_OUT_OF_MEMORY;
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &mesh, &m, NULL, &id);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_plane(w, up, 0.0f, 0.5f, NULL);
  }
  if (s == PIOLA_OK) {
    s = piola_world_step(w);
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_positions(w, id, mesh.positions, nv);
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_velocities(w, id, zero, nv);
  }
  if (s == PIOLA_OK) {
    s = piola_world_set_iterations(w, iterations);
  }
  if (s == PIOLA_OK) {
    s = piola_world_step(w);
  }
  piola_stats st;
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(w, &st);
  }
  if (s == PIOLA_OK) {
    s = piola_body_get_positions(w, id, out, nv);
  }
  CHECK_MSG(t, s == PIOLA_OK, "column: %s", piola_status_string(s));
  free(zero);
  piola_world_destroy(w);
  piola_mesh_free(&mesh);
  if (s != PIOLA_OK) {
    free(out);
    return NAN;
  }
  *x = out;
  return st.relative_residual;
}

/* The hard-attached beam of attached_beam_on under accelerated VBD (5 iterations): the attached
 * vertices' largest distance from their targets over 100 steps (m), and the tip sag in *sag. */
static double accelerated_attached_beam(piola_test *t, piola_backend backend, double *sag) {
  *sag = NAN;
  piola_tet_mesh beam = wt_box(10, 2, 2, 1.0f, 0.2f, 0.2f);
  piola_world *w = accelerated_world(t, backend, 0.85f, 5);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e7f;
  const int32_t n = beam.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  piola_body_id id;
  piola_status s = w != NULL && x != NULL ? piola_world_add_tet_body(w, &beam, &mat, NULL, &id)
                                          : PIOLA_ERROR_OUT_OF_MEMORY;
  const float lo = beam.positions[0];
  for (int32_t i = 0; i < n && s == PIOLA_OK; ++i) {
    if (beam.positions[3 * i] == lo) {
      piola_attachment_id aid;
      s = piola_world_add_attachment(w, id, i, beam.positions + 3 * i, 0.0f, &aid);
    }
  }
  double off = 0.0, hi = -INFINITY;
  for (int32_t i = 0; i < n; ++i) {
    hi = fmax(hi, beam.positions[3 * i]);
  }
  for (int k = 0; k < 100 && s == PIOLA_OK; ++k) {
    s = piola_world_step(w);
    if (s == PIOLA_OK) {
      s = piola_body_get_positions(w, id, x, n);
    }
    double sum = 0.0;
    int32_t count = 0;
    for (int32_t i = 0; i < n && s == PIOLA_OK; ++i) {
      if (beam.positions[3 * i] == lo) {
        for (int c = 0; c < 3; ++c) {
          off = fmax(off, fabs((double)x[3 * i + c] - beam.positions[3 * i + c]));
        }
      } else if (beam.positions[3 * i] == hi) {
        sum += (double)beam.positions[3 * i + 1] - x[3 * i + 1];
        count++;
      }
    }
    *sag = count > 0 ? sum / count : NAN;
  }
  CHECK_MSG(t, s == PIOLA_OK, "attached beam: %s", piola_status_string(s));
  free(x);
  piola_world_destroy(w);
  piola_mesh_free(&beam);
  return s == PIOLA_OK ? off : NAN;
}

/* The acceleration on the CPU reference. The 6144-tet column after 10 iterations (measured:
 * relative residual 0.0036 accelerated at rho 0.85, 0.0997 without; at 50 iterations 4.6e-11
 * and 7.4e-5): at most a quarter of the unaccelerated residual, and both runs bitwise the same.
 * A hard attachment holds its vertices exactly on their targets. Bad rho is refused.
 * dependent_passes counts the Chebyshev passes. */
void test_vbd_chebyshev(piola_test *t) {
  float *x[3];
  const double plain = column_step(t, PIOLA_BACKEND_CPU_REFERENCE, 0.0f, 8, 10, &x[0]);
  const double fast = column_step(t, PIOLA_BACKEND_CPU_REFERENCE, 0.85f, 8, 10, &x[1]);
  const double again = column_step(t, PIOLA_BACKEND_CPU_REFERENCE, 0.85f, 8, 10, &x[2]);
  printf("  6144-tet column, 10 iterations: relative residual %.3g unaccelerated, %.3g with rho "
         "0.85 (again: %.3g)\n",
         plain, fast, again);
  CHECK_MSG(t, fast < 0.25 * plain, "accelerated %.3g, unaccelerated %.3g", fast, plain);
  CHECK(t, x[1] != NULL && x[2] != NULL && memcmp(x[1], x[2], sizeof(float) * 3 * 9 * 17 * 9) == 0);
  CHECK(t, x[0] != NULL && x[1] != NULL && memcmp(x[0], x[1], sizeof(float) * 3 * 9 * 17 * 9) != 0);
  for (int k = 0; k < 3; ++k) {
    free(x[k]);
  }
  double sag;
  const double off = accelerated_attached_beam(t, PIOLA_BACKEND_CPU_REFERENCE, &sag);
  printf("  hard-attached beam: tip sag %.5f m, attached vertices off by %.3g m\n", sag, off);
  CHECK_MSG(t, off == 0.0, "attached vertices off by %.3g m", off);
  CHECK_MSG(t, sag > 0.0 && sag < 0.1, "tip sag %.5f m", sag);
  /* bad rho: refused, no world */
  const float bad[] = {1.0f, -0.1f, NAN, INFINITY};
  const piola_status expect[] = {PIOLA_ERROR_INVALID_ARGUMENT, PIOLA_ERROR_INVALID_ARGUMENT,
                                 PIOLA_ERROR_NON_FINITE, PIOLA_ERROR_NON_FINITE};
  for (int k = 0; k < 4; ++k) {
    piola_world_def def = piola_test_world_def(NULL, NULL);
    def.iteration_scheme = PIOLA_SCHEME_VBD;
    def.vbd_chebyshev_rho = bad[k];
    piola_world *w = NULL;
    CHECK_STATUS(t, piola_world_create(&def, &w), expect[k]);
    CHECK(t, w == NULL);
  }
  /* dependent passes: one more per iteration with at least 4 of them; with 3, two more */
  for (int k = 0; k < 2; ++k) {
    const int32_t iterations = k == 0 ? 5 : 3;
    int32_t passes[2] = {0, 0};
    for (int a = 0; a < 2; ++a) {
      piola_world *w =
          accelerated_world(t, PIOLA_BACKEND_CPU_REFERENCE, a ? 0.85f : 0.0f, iterations);
      piola_tet_mesh box = wt_box(2, 2, 2, 0.2f, 0.2f, 0.2f);
      const piola_material m = piola_default_material();
      piola_body_id id;
      piola_stats st;
      if (w != NULL && piola_world_add_tet_body(w, &box, &m, NULL, &id) == PIOLA_OK &&
          piola_world_get_stats(w, &st) == PIOLA_OK) {
        passes[a] = st.dependent_passes;
      }
      piola_mesh_free(&box);
      piola_world_destroy(w);
    }
    CHECK_MSG(t, passes[1] - passes[0] == (iterations == 5 ? 5 : 2), "%d iterations: %d, %d",
              (int)iterations, (int)passes[0], (int)passes[1]);
  }
}

/* The acceleration on OpenCL: the column's step within 1e-4 m of the reference's (float against
 * double) and bitwise the same in two runs, its residual as far below the unaccelerated one, hard
 * attachments exactly held. */
void test_opencl_vbd_chebyshev(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  float *x[4];
  const double cpu = column_step(t, PIOLA_BACKEND_CPU_REFERENCE, 0.85f, 8, 10, &x[0]);
  const double ocl = column_step(t, PIOLA_BACKEND_OPENCL, 0.85f, 8, 10, &x[1]);
  const double plain = column_step(t, PIOLA_BACKEND_OPENCL, 0.0f, 8, 10, &x[2]);
  column_step(t, PIOLA_BACKEND_OPENCL, 0.85f, 8, 10, &x[3]);
  CHECK_MSG(t,
            x[1] != NULL && x[3] != NULL && memcmp(x[1], x[3], sizeof(float) * 3 * 9 * 17 * 9) == 0,
            "two OpenCL runs differ");
  double worst = INFINITY;
  if (x[0] != NULL && x[1] != NULL) {
    worst = 0.0;
    for (int32_t i = 0; i < 3 * 9 * 17 * 9; ++i) {
      worst = fmax(worst, fabs((double)x[0][i] - x[1][i]));
    }
  }
  printf("  column, 10 iterations, rho 0.85: residual CPU %.3g, OpenCL %.3g (unaccelerated "
         "%.3g); positions within %.3g m\n",
         cpu, ocl, plain, worst);
  CHECK_MSG(t, worst < 1e-4, "positions within %.3g m", worst);
  CHECK_MSG(t, ocl < 0.25 * plain, "OpenCL accelerated %.3g, unaccelerated %.3g", ocl, plain);
  for (int k = 0; k < 4; ++k) {
    free(x[k]);
  }
  double sag[2];
  const double off_cpu = accelerated_attached_beam(t, PIOLA_BACKEND_CPU_REFERENCE, &sag[0]);
  const double off = accelerated_attached_beam(t, PIOLA_BACKEND_OPENCL, &sag[1]);
  printf("  hard-attached beam: tip sag CPU %.6f m, OpenCL %.6f m; off %.3g, %.3g m\n", sag[0],
         sag[1], off_cpu, off);
  CHECK_MSG(t, off == 0.0, "OpenCL: attached vertices off by %.3g m", off);
  CHECK_MSG(t, fabs(sag[0] - sag[1]) < 1e-3 * sag[0], "sag CPU %.6f, OpenCL %.6f m", sag[0],
            sag[1]);
}
