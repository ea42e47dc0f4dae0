/* The multigrid scheme (PIOLA_SCHEME_MULTIGRID): a tet's projected Hessian against central
 * differences in double, the multigrid-preconditioned solve, and the scheme in worlds on the CPU
 * reference (convergence that does not degrade with resolution, rest under gravity against the
 * closed form and converged XPBD, colliders, attachments, inversion, plasticity, bitwise
 * repeatability, what it refuses), and on OpenCL worlds against the CPU reference. */
#include "crosscheck.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include "piola_hessian.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- A tet's Hessian (kernels/piola_tet.h) ------------------------------------------------ */

static piola_tet_material mg_material(int model, int inversion, double nu) {
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

/* The dense 3n x 3n matrix (n = 3 or 4 corners) of upper-triangle blocks by rows. */
static void dense_blocks(const piola_m3 *blocks, int n, double *h) {
  int k = 0;
  for (int a = 0; a < n; ++a) {
    for (int b = a; b < n; ++b, ++k) {
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) {
          h[(3 * a + r) * 3 * n + 3 * b + c] = blocks[k].m[3 * r + c];
          h[(3 * b + c) * 3 * n + 3 * a + r] = blocks[k].m[3 * r + c];
        }
      }
    }
  }
}

/* The most negative v^T h v / (|v|^2 max|h|) over 20 random v (3n x 3n h). */
static double most_negative(const double *h, int n3, uint64_t *rng) {
  double scale = 0.0, worst = 0.0;
  for (int i = 0; i < n3 * n3; ++i) {
    scale = fmax(scale, fabs(h[i]));
  }
  for (int k = 0; k < 20; ++k) {
    double v[12], hv = 0.0, vv = 0.0;
    for (int i = 0; i < n3; ++i) {
      v[i] = piola_test_rand(rng);
      vv += v[i] * v[i];
    }
    for (int i = 0; i < n3; ++i) {
      for (int j = 0; j < n3; ++j) {
        hv += v[i] * h[i * n3 + j] * v[j];
      }
    }
    worst = fmin(worst, hv / (vv * (scale > 0.0 ? scale : 1.0)));
  }
  return worst;
}

/* The gradient against central differences of the energy, everywhere; the Hessian against
 * central differences of the gradient where the tet is stretched in every direction (there the
 * Hessian is positive definite and the projection changes nothing), both models, on the regular
 * path and with the inversion handling always on (the inversion path: differences of the stress
 * and Jacobi sweeps, the same Hessian); positive semidefinite everywhere (near rest, compressed,
 * flat, inverted). */
void test_multigrid_tet_hessian_finite_differences(piola_test *t) {
  uint64_t rng = 5;
  const piola_m3 dm_inv = piola_m3_scale(piola_m3_identity(), 1.0 / 0.7);
  const double vol = 0.7 * 0.7 * 0.7 / 6.0;
  double worst_g = 0.0, worst_h = 0.0, worst_neg = 0.0;
  for (int model = 0; model < 2; ++model) {
    for (int inversion = 1; inversion < 3; ++inversion) {
      const piola_tet_material m = mg_material(model, inversion, 0.3);
      for (int kind = 0; kind < 5; ++kind) {
        for (int trial = 0; trial < 6; ++trial) {
          piola_v3 x[4];
          const piola_v3 rest[4] = {piola_v3_make(0, 0, 0), piola_v3_make(0.7, 0, 0),
                                    piola_v3_make(0, 0.7, 0), piola_v3_make(0, 0, 0.7)};
          for (int a = 0; a < 4; ++a) {
            x[a] = piola_v3_add(rest[a], piola_v3_make(0.03 * piola_test_rand(&rng),
                                                       0.03 * piola_test_rand(&rng),
                                                       0.03 * piola_test_rand(&rng)));
            if (kind == 1) { /* stretched in every direction */
              x[a] = piola_v3_scale(x[a], 1.3);
            } else if (kind == 2) { /* squashed along y below the clamp */
              x[a].y *= 0.35;
            }
          }
          if (kind == 3) { /* flat */
            x[3].z = 0.01 * piola_test_rand(&rng);
          } else if (kind == 4) { /* inverted */
            x[3].z = -x[3].z;
          }
          piola_v3 g[4];
          piola_m3 blocks[PIOLA_TET_HESSIAN_BLOCKS];
          const double u = piola_tet_hessian(&m, dm_inv, vol, x[0], x[1], x[2], x[3], g, blocks);
          CHECK_NEAR(t, u, piola_tet_energy(&m, dm_inv, vol, x[0], x[1], x[2], x[3]), 1e-15);
          double h[144];
          dense_blocks(blocks, 4, h);
          double hscale = 0.0;
          for (int i = 0; i < 144; ++i) {
            hscale = fmax(hscale, fabs(h[i]));
          }
          for (int a = 0; a < 4; ++a) {
            double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
            for (int c = 0; c < 3; ++c) {
              const double keep = *comp[c], d = 1e-6;
              piola_v3 gp[4], gm[4];
              *comp[c] = keep + d;
              const double ep = piola_tet_gradient(&m, dm_inv, vol, x[0], x[1], x[2], x[3], gp);
              *comp[c] = keep - d;
              const double em = piola_tet_gradient(&m, dm_inv, vol, x[0], x[1], x[2], x[3], gm);
              *comp[c] = keep;
              const double gv[3] = {g[a].x, g[a].y, g[a].z};
              const double dg = fabs((ep - em) / (2 * d) - gv[c]) / (1e-3 + fabs(gv[c]));
              worst_g = fmax(worst_g, dg);
              CHECK_MSG(t, dg < 1e-6, "model %d inversion %d kind %d: gradient off by %g", model,
                        inversion, kind, dg);
              if (kind != 1) {
                continue;
              }
              for (int b = 0; b < 4; ++b) {
                const double col[3] = {(gp[b].x - gm[b].x) / (2 * d), (gp[b].y - gm[b].y) / (2 * d),
                                       (gp[b].z - gm[b].z) / (2 * d)};
                for (int r = 0; r < 3; ++r) {
                  const double dh = fabs(col[r] - h[(3 * b + r) * 12 + 3 * a + c]) / hscale;
                  worst_h = fmax(worst_h, dh);
                  CHECK_MSG(t, dh < (inversion == 2 ? 1e-4 : 1e-6),
                            "model %d inversion %d: H off by %g", model, inversion, dh);
                }
              }
            }
          }
          /* positive semidefinite: v^T H v >= 0 for random v */
          const double neg = most_negative(h, 12, &rng);
          worst_neg = fmin(worst_neg, neg);
          CHECK_MSG(t, neg >= -1e-9, "model %d inversion %d kind %d: v^T H v / |v|^2 = %g", model,
                    inversion, kind, neg);
        }
      }
    }
  }
  printf(
      "  worst relative error: gradient %.2g, Hessian %.2g; most negative v^T H v / |v|^2 %.2g\n",
      worst_g, worst_h, worst_neg);
}

/* ---- Cloth's Hessians (kernels/piola_hessian.h) ------------------------------------------- */

/* A cloth triangle's membrane Hessian (orthotropic StVK) against central differences of its
 * gradient where it is stretched along both axes (there it is positive definite and the
 * projection changes nothing), its energy and gradient against piola_cloth.h's; positive
 * semidefinite everywhere (compressed: a buckling membrane, where the exact Hessian is
 * indefinite). A bending stencil's Hessian with a flat rest state (exact: the energy is
 * quadratic) against differences of its gradient at bent and moved states; with a curved rest
 * state (the Gauss-Newton part) positive semidefinite with the exact gradient. */
void test_multigrid_cloth_hessian_finite_differences(piola_test *t) {
  uint64_t rng = 11;
  piola_cloth_tri_material mat;
  REQUIRE(t, piola_cloth_tri_material_make(1.0, 0.6, 0.3, 0.25, PIOLA_CLOTH_SOLVER_XPBD, &mat));
  const piola_v3 r0 = piola_v3_make(0, 0, 0), r1 = piola_v3_make(0.5, 0, 0.1),
                 r2 = piola_v3_make(0.1, 0, 0.45);
  piola_m2 dm;
  double area = 0.0;
  REQUIRE(t, piola_cloth_tri_init(r0, r1, r2, &dm, &area) == PIOLA_CLOTH_INIT_OK);
  double worst_h = 0.0, worst_neg = 0.0;
  int indefinite = 0;
  for (int kind = 0; kind < 3; ++kind) {
    for (int trial = 0; trial < 8; ++trial) {
      piola_v3 x[3] = {r0, r1, r2};
      for (int a = 0; a < 3; ++a) {
        x[a] = piola_v3_add(x[a], piola_v3_make(0.02 * piola_test_rand(&rng),
                                                0.02 * piola_test_rand(&rng),
                                                0.02 * piola_test_rand(&rng)));
        if (kind == 1) { /* stretched along both axes */
          x[a] = piola_v3_scale(x[a], 1.25);
        } else if (kind == 2) { /* compressed along x */
          x[a].x *= 0.6;
        }
      }
      piola_v3 g[3], gref[3];
      piola_m3 blocks[PIOLA_TRI_HESSIAN_BLOCKS];
      const double u = piola_cloth_tri_hessian(&mat, dm, area, x[0], x[1], x[2], g, blocks);
      CHECK_NEAR(t, u, piola_cloth_tri_energy(&mat, dm, area, x[0], x[1], x[2]), 1e-15);
      piola_cloth_tri_gradient(&mat, dm, area, x[0], x[1], x[2], gref);
      for (int a = 0; a < 3; ++a) {
        CHECK(t, piola_v3_length(piola_v3_sub(g[a], gref[a])) <= 1e-15);
      }
      double h[81];
      dense_blocks(blocks, 3, h);
      const double neg = most_negative(h, 9, &rng);
      worst_neg = fmin(worst_neg, neg);
      CHECK_MSG(t, neg >= -1e-12, "kind %d: v^T H v / |v|^2 = %g", kind, neg);
      double hscale = 0.0;
      for (int i = 0; i < 81; ++i) {
        hscale = fmax(hscale, fabs(h[i]));
      }
      double off = 0.0;
      for (int a = 0; a < 3; ++a) {
        double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
        for (int c = 0; c < 3; ++c) {
          const double keep = *comp[c], d = 1e-6;
          piola_v3 gp[3], gm[3];
          *comp[c] = keep + d;
          piola_cloth_tri_gradient(&mat, dm, area, x[0], x[1], x[2], gp);
          *comp[c] = keep - d;
          piola_cloth_tri_gradient(&mat, dm, area, x[0], x[1], x[2], gm);
          *comp[c] = keep;
          for (int b = 0; b < 3; ++b) {
            const double col[3] = {(gp[b].x - gm[b].x) / (2 * d), (gp[b].y - gm[b].y) / (2 * d),
                                   (gp[b].z - gm[b].z) / (2 * d)};
            for (int r = 0; r < 3; ++r) {
              off = fmax(off, fabs(col[r] - h[(3 * b + r) * 9 + 3 * a + c]) / hscale);
            }
          }
        }
      }
      if (kind == 1) {
        worst_h = fmax(worst_h, off);
        CHECK_MSG(t, off < 1e-6, "stretched: H off by %g", off);
      } else if (kind == 2 && off > 1e-3) {
        indefinite++; /* the projection took the buckling modes out */
      }
    }
  }
  CHECK_MSG(t, indefinite > 0, "the compressed triangle's Hessian was never projected");
  /* Bending: a flat stencil (the edge x0 x1 along x, x2 and x3 on either side) and a curved one. */
  double worst_b = 0.0;
  for (int curved = 0; curved < 2; ++curved) {
    const piola_v3 b0 = piola_v3_make(0, 0, 0), b1 = piola_v3_make(0.4, 0, 0.02),
                   b2 = piola_v3_make(0.2, curved ? 0.1 : 0.0, 0.3),
                   b3 = piola_v3_make(0.15, curved ? 0.08 : 0.0, -0.35);
    piola_cloth_bend_rest rest;
    REQUIRE(t, piola_cloth_bend_init(b0, b1, b2, b3, &rest) == PIOLA_CLOTH_INIT_OK);
    CHECK(t, (rest.rest != 0.0) == (curved != 0));
    for (int trial = 0; trial < 8; ++trial) {
      piola_v3 x[4] = {b0, b1, b2, b3};
      for (int a = 0; a < 4; ++a) {
        x[a] = piola_v3_add(x[a], piola_v3_make(0.05 * piola_test_rand(&rng),
                                                0.05 * piola_test_rand(&rng),
                                                0.05 * piola_test_rand(&rng)));
      }
      piola_v3 g[4], gref[4];
      piola_m3 blocks[PIOLA_TET_HESSIAN_BLOCKS];
      const double u = piola_cloth_bend_hessian(&rest, x[0], x[1], x[2], x[3], g, blocks);
      CHECK_NEAR(t, u, piola_cloth_bend_energy(&rest, x[0], x[1], x[2], x[3]), 1e-15);
      piola_cloth_bend_gradient(&rest, x[0], x[1], x[2], x[3], gref);
      for (int a = 0; a < 4; ++a) {
        CHECK(t, piola_v3_length(piola_v3_sub(g[a], gref[a])) <= 1e-15);
      }
      double h[144];
      dense_blocks(blocks, 4, h);
      const double neg = most_negative(h, 12, &rng);
      CHECK_MSG(t, neg >= -1e-12, "bending (curved %d): v^T H v / |v|^2 = %g", curved, neg);
      if (curved) {
        continue;
      }
      double hscale = 0.0, off = 0.0;
      for (int i = 0; i < 144; ++i) {
        hscale = fmax(hscale, fabs(h[i]));
      }
      for (int a = 0; a < 4; ++a) {
        double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
        for (int c = 0; c < 3; ++c) {
          const double keep = *comp[c], d = 1e-6;
          piola_v3 gp[4], gm[4];
          *comp[c] = keep + d;
          piola_cloth_bend_gradient(&rest, x[0], x[1], x[2], x[3], gp);
          *comp[c] = keep - d;
          piola_cloth_bend_gradient(&rest, x[0], x[1], x[2], x[3], gm);
          *comp[c] = keep;
          for (int b = 0; b < 4; ++b) {
            const double col[3] = {(gp[b].x - gm[b].x) / (2 * d), (gp[b].y - gm[b].y) / (2 * d),
                                   (gp[b].z - gm[b].z) / (2 * d)};
            for (int r = 0; r < 3; ++r) {
              off = fmax(off, fabs(col[r] - h[(3 * b + r) * 12 + 3 * a + c]) / hscale);
            }
          }
        }
      }
      worst_b = fmax(worst_b, off);
      CHECK_MSG(t, off < 1e-6, "flat bending: H off by %g", off);
    }
  }
  printf("  membrane: stretched H off by %.2g, %d of 8 compressed projected, most negative "
         "%.2g; flat bending H off by %.2g\n",
         worst_h, indefinite, worst_neg, worst_b);
}

/* ---- Worlds -------------------------------------------------------------------------------- */

/* A column 0.25 x 0.5 x 0.25 m of n x 2n x n cells (12 n^3 tets), Neo-Hookean, E = 0.1 MPa,
 * nu = 0, 1000 kg/m^3, standing on the ground (or with its base pinned). */
typedef struct column {
  piola_world *w;
  piola_body_id id;
  piola_tet_mesh mesh;
} column;

static bool column_make(piola_test *t, column *c, piola_iteration_scheme scheme, int32_t n,
                        int32_t iterations, float damping, bool pinned) {
  memset(c, 0, sizeof *c);
  const int32_t cells[3] = {n, 2 * n, n};
  const float size[3] = {0.25f, 0.5f, 0.25f};
  if (piola_mesh_make_box(cells, size, &c->mesh) != PIOLA_OK) {
    return false;
  }
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.iteration_scheme = scheme;
  def.iterations = iterations;
  def.damping = damping;
  def.contacts = false;
  if (piola_world_create(&def, &c->w) != PIOLA_OK) {
    return false;
  }
  piola_material mat = piola_default_material();
  mat.model = PIOLA_MODEL_NEOHOOKEAN;
  mat.youngs_modulus = 1e5f;
  mat.poisson_ratio = 0.0f;
  const float up[3] = {0.0f, 1.0f, 0.0f};
  bool ok = piola_world_add_tet_body(c->w, &c->mesh, &mat, NULL, &c->id) == PIOLA_OK;
  if (ok && pinned) {
    const int32_t nv = c->mesh.vertex_count;
    float *inv = malloc(sizeof *inv * (size_t)nv);
    ok = inv != NULL && piola_body_get_inverse_masses(c->w, c->id, inv, nv) == PIOLA_OK;
    for (int32_t i = 0; ok && i < nv; ++i) {
      inv[i] = c->mesh.positions[3 * i + 1] == 0.0f ? 0.0f : inv[i];
    }
    ok = ok && piola_body_set_inverse_masses(c->w, c->id, inv, nv) == PIOLA_OK;
    free(inv);
  } else if (ok) {
    ok = piola_world_add_plane(c->w, up, 0.0f, 0.5f, NULL) == PIOLA_OK;
  }
  CHECK(t, ok);
  return ok;
}

/* The mean sag of the column's top face (m). */
static double column_sag(column *c) {
  const int32_t nv = c->mesh.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)nv);
  double sum = 0.0;
  int32_t count = 0;
  if (x != NULL && piola_body_get_positions(c->w, c->id, x, nv) == PIOLA_OK) {
    for (int32_t i = 0; i < nv; ++i) {
      if (c->mesh.positions[3 * i + 1] == 0.5f) {
        sum += 0.5 - x[3 * i + 1];
        count++;
      }
    }
  }
  free(x);
  return count > 0 ? sum / count : NAN;
}

static void column_free(column *c) {
  piola_world_destroy(c->w);
  piola_mesh_free(&c->mesh);
}

/* The residual after a step does not grow with resolution under multigrid: the pinned column
 * at 768 and 6144 tets, 10 steps of 5 iterations from rest, relative and coarse residual of the
 * last step. Gauss-Seidel at the same settings is far from converged and worse at the finer
 * mesh (measured in docs/solvers.md). */
void test_multigrid_converges_at_resolution(piola_test *t) {
  double residual[2][2], coarse[2][2];
  const int32_t cells[2] = {4, 8};
  for (int s = 0; s < 2; ++s) {
    for (int r = 0; r < 2; ++r) {
      column c;
      const piola_iteration_scheme scheme =
          s == 0 ? PIOLA_SCHEME_GAUSS_SEIDEL : PIOLA_SCHEME_MULTIGRID;
      residual[s][r] = coarse[s][r] = NAN;
      if (column_make(t, &c, scheme, cells[r], 5, 0.0f, true)) {
        piola_status st = PIOLA_OK;
        for (int k = 0; k < 10 && st == PIOLA_OK; ++k) {
          st = piola_world_step(c.w);
        }
        piola_stats stats;
        if (st == PIOLA_OK && piola_world_get_stats(c.w, &stats) == PIOLA_OK) {
          residual[s][r] = stats.relative_residual;
          coarse[s][r] = stats.coarse_residual;
          if (s == 1) {
            printf("  multigrid %d tets: %d levels, %d conjugate-gradient iterations in the last "
                   "step, linear residual %.2g\n",
                   (int)stats.tet_count, (int)stats.multigrid_levels, (int)stats.linear_iterations,
                   stats.linear_residual);
            CHECK(t, stats.multigrid_levels >= 2 && stats.linear_iterations >= 5);
            CHECK(t, stats.linear_residual <= PIOLA_MULTIGRID_CG_TOLERANCE);
          }
        }
      }
      column_free(&c);
    }
  }
  printf("  relative (coarse) residual after 10 steps, 768 / 6144 tets: Gauss-Seidel %.3g (%.3g) "
         "/ %.3g (%.3g), multigrid %.3g (%.3g) / %.3g (%.3g)\n",
         residual[0][0], coarse[0][0], residual[0][1], coarse[0][1], residual[1][0], coarse[1][0],
         residual[1][1], coarse[1][1]);
  for (int r = 0; r < 2; ++r) {
    CHECK_MSG(t, residual[1][r] < 1e-3 && coarse[1][r] < 1e-3, "multigrid: %.3g (%.3g)",
              residual[1][r], coarse[1][r]);
    CHECK(t, residual[0][r] > 100.0 * residual[1][r]);
  }
}

/* The column standing on the ground at rest (3.5 s with damping): its top sags
 * rho g H^2 / (2 E) within 5%, at 5 iterations (Gauss-Seidel reaches it at this coarse mesh too;
 * the finer meshes are validate's, docs/solvers.md). */
void test_multigrid_column_sag(piola_test *t) {
  column c;
  if (column_make(t, &c, PIOLA_SCHEME_MULTIGRID, 4, 5, 1.0f, false)) {
    piola_status st = PIOLA_OK;
    for (int k = 0; k < 700 && st == PIOLA_OK; ++k) {
      st = piola_world_step(c.w);
    }
    CHECK_STATUS(t, st, PIOLA_OK);
    const double closed = 1000.0 * 9.81 * 0.5 * 0.5 / (2.0 * 1e5);
    const double sag = column_sag(&c);
    piola_stats stats;
    CHECK_STATUS(t, piola_world_get_stats(c.w, &stats), PIOLA_OK);
    printf("  sag %.5f m = %.3f of rho g H^2 / (2 E); relative residual %.3g, kinetic %.3g J\n",
           sag, sag / closed, stats.relative_residual, stats.kinetic_energy);
    CHECK_MSG(t, fabs(sag / closed - 1.0) < 0.05, "sag %.3f of the closed form", sag / closed);
    CHECK(t, stats.relative_residual < 1e-2);
  }
  column_free(&c);
}

/* The 1 m beam pinned at one end (E = 10 MPa, 10 x 2 x 2 cells, 0.2 x 0.2 m): multigrid at 5
 * iterations sags as XPBD converged does (0.0198 m at 100 iterations, docs/solvers.md). */
static double beam_sag(piola_test *t, piola_iteration_scheme scheme, int32_t iterations,
                       piola_model model, float compliance, double *off) {
  const int32_t cells[3] = {10, 2, 2};
  const float size[3] = {1.0f, 0.2f, 0.2f};
  piola_tet_mesh beam;
  if (piola_mesh_make_box(cells, size, &beam) != PIOLA_OK) {
    return NAN;
  }
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.iteration_scheme = scheme;
  def.iterations = iterations;
  def.damping = 10.0f;
  def.contacts = false;
  piola_world *w = NULL;
  double sag = NAN;
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e7f;
  mat.model = model;
  piola_body_id id;
  const int32_t n = beam.vertex_count;
  float *inv = malloc(sizeof *inv * (size_t)n), *x = malloc(sizeof *x * 3 * (size_t)n);
  *off = NAN;
  if (piola_world_create(&def, &w) == PIOLA_OK && inv != NULL && x != NULL &&
      piola_world_add_tet_body(w, &beam, &mat, NULL, &id) == PIOLA_OK &&
      piola_body_get_inverse_masses(w, id, inv, n) == PIOLA_OK) {
    piola_status s = PIOLA_OK;
    for (int32_t i = 0; i < n && s == PIOLA_OK; ++i) {
      if (beam.positions[3 * i] != 0.0f) {
        continue;
      }
      if (compliance < 0.0f) {
        inv[i] = 0.0f; /* pinned */
      } else {
        piola_attachment_id a;
        s = piola_world_add_attachment(w, id, i, beam.positions + 3 * i, compliance, &a);
      }
    }
    s = s == PIOLA_OK ? piola_body_set_inverse_masses(w, id, inv, n) : s;
    for (int32_t k = 0; k < 300 && s == PIOLA_OK; ++k) {
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
  }
  CHECK(t, isfinite(sag));
  free(inv);
  free(x);
  piola_world_destroy(w);
  piola_mesh_free(&beam);
  return sag;
}

void test_multigrid_beam_sag_matches_xpbd(piola_test *t) {
  double off;
  const double xpbd =
      beam_sag(t, PIOLA_SCHEME_GAUSS_SEIDEL, 100, PIOLA_MODEL_NEOHOOKEAN, -1.0f, &off);
  const double nh = beam_sag(t, PIOLA_SCHEME_MULTIGRID, 5, PIOLA_MODEL_NEOHOOKEAN, -1.0f, &off);
  const double stvk = beam_sag(t, PIOLA_SCHEME_MULTIGRID, 5, PIOLA_MODEL_STVK, -1.0f, &off);
  printf("  tip sag: XPBD 100 iterations %.5f m, multigrid 5 iterations %.5f m (StVK %.5f m)\n",
         xpbd, nh, stvk);
  CHECK_MSG(t, fabs(nh - xpbd) < 0.02 * xpbd, "multigrid %.5f m, XPBD %.5f m", nh, xpbd);
  CHECK_MSG(t, fabs(stvk - xpbd) < 0.05 * xpbd, "multigrid StVK %.5f m, XPBD %.5f m", stvk, xpbd);
}

/* Attachments: hard ones hold their vertices exactly on their targets and the beam sags as when
 * pinned; soft ones (1e-7 m/N) are energies in the solve: the same sag at 5 and 20 iterations,
 * the attached vertices off their targets by force x compliance. */
void test_multigrid_attachments(piola_test *t) {
  double off[3];
  const double pinned = beam_sag(t, PIOLA_SCHEME_MULTIGRID, 5, PIOLA_MODEL_STVK, -1.0f, &off[0]);
  const double hard = beam_sag(t, PIOLA_SCHEME_MULTIGRID, 5, PIOLA_MODEL_STVK, 0.0f, &off[0]);
  const double soft5 = beam_sag(t, PIOLA_SCHEME_MULTIGRID, 5, PIOLA_MODEL_STVK, 1e-7f, &off[1]);
  const double soft20 = beam_sag(t, PIOLA_SCHEME_MULTIGRID, 20, PIOLA_MODEL_STVK, 1e-7f, &off[2]);
  printf("  beam: pinned %.5f m, hard attachments %.5f m (off by %.3g m), soft %.5f m at 5 and "
         "%.5f m at 20 iterations (off by %.3g m)\n",
         pinned, hard, off[0], soft5, soft20, off[1]);
  CHECK_MSG(t, fabs(hard - pinned) < 1e-6, "hard %.6f, pinned %.6f m", hard, pinned);
  CHECK(t, off[0] < 1e-6);
  CHECK_MSG(t, fabs(soft5 - soft20) < 0.002 * soft20, "soft %.6f, %.6f m", soft5, soft20);
  CHECK(t, soft5 > hard);
  CHECK_MSG(t, off[1] > 1e-5 && off[1] < 1e-4, "soft: off by %.3g m", off[1]);
}

/* A soft box (E = 0.1 MPa, 0.4 x 0.2 x 0.4 m) on the ground, frictionless and with friction 0.5:
 * its bottom stays on the ground; frictionless its top sags as XPBD's at 100 iterations; with
 * friction, which holds the sole from spreading under the load, as with its bottom vertices
 * pinned where they stand (bonded; the frictionless sag is 12% larger): within 2%, where a
 * friction measured over each step only (IPC's) lets the sole creep outward and the sag grow
 * towards the frictionless one (newton.c, "Friction"). At rest the step is converged in both
 * (relative residual): the friction acts within the Newton step, not after it (where COLLIDE's
 * friction put the sole back after each step the residual stayed at 0.05). */
void test_multigrid_box_rests_on_ground(piola_test *t) {
  double frictionless = 0.0;
  for (int k = 0; k < 2; ++k) {
    double top[2], bottom[2], residual[2];
    for (int s = 0; s < 2; ++s) {
      piola_tet_mesh box = wt_box(4, 2, 4, 0.4f, 0.2f, 0.4f);
      piola_world_def def = piola_test_world_def(NULL, NULL);
      def.iteration_scheme = s == 0 ? PIOLA_SCHEME_GAUSS_SEIDEL : PIOLA_SCHEME_MULTIGRID;
      def.iterations = s == 0 ? 100 : 5;
      def.damping = 10.0f;
      piola_world *w = NULL;
      REQUIRE_OK(t, piola_world_create(&def, &w));
      piola_material mat = piola_default_material();
      mat.youngs_modulus = 1e5f;
      piola_body_id id;
      const float up[3] = {0.0f, 1.0f, 0.0f};
      REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, NULL, &id));
      REQUIRE_OK(t, piola_world_add_plane(w, up, 0.0f, k == 0 ? 0.0f : 0.5f, NULL));
      const int32_t n = box.vertex_count;
      float *x = malloc(sizeof *x * 3 * (size_t)n);
      REQUIRE(t, x != NULL);
      if (s == 0 && k == 1) { /* the bonded reference */
        REQUIRE_OK(t, piola_body_get_inverse_masses(w, id, x, n));
        for (int32_t i = 0; i < n; ++i) {
          x[i] = box.positions[3 * i + 1] == 0.0f ? 0.0f : x[i];
        }
        REQUIRE_OK(t, piola_body_set_inverse_masses(w, id, x, n));
      }
      for (int i = 0; i < 200; ++i) {
        REQUIRE_OK(t, piola_world_step(w));
      }
      piola_stats st;
      REQUIRE_OK(t, piola_world_get_stats(w, &st));
      residual[s] = st.relative_residual;
      REQUIRE_OK(t, piola_body_get_positions(w, id, x, n));
      double sum[2] = {0.0, 0.0};
      int32_t count[2] = {0, 0};
      for (int32_t i = 0; i < n; ++i) {
        const int f = box.positions[3 * i + 1] == 0.0f   ? 0
                      : box.positions[3 * i + 1] == 0.2f ? 1
                                                         : -1;
        if (f >= 0) {
          sum[f] += x[3 * i + 1];
          count[f]++;
        }
      }
      bottom[s] = sum[0] / count[0];
      top[s] = sum[1] / count[1];
      free(x);
      piola_world_destroy(w);
      piola_mesh_free(&box);
    }
    printf("  friction %.1f: sag of the top at rest: reference (%s) %.4g mm, multigrid 5 "
           "iterations %.4g mm; bottom %.3g mm; multigrid's relative residual %.3g\n",
           k == 0 ? 0.0 : 0.5, k == 0 ? "XPBD 100 iterations" : "sole pinned", (0.2 - top[0]) * 1e3,
           (0.2 - top[1]) * 1e3, bottom[1] * 1e3, residual[1]);
    const double sag = 0.2 - top[1], reference = 0.2 - top[0];
    if (k == 0) {
      frictionless = sag;
      CHECK_MSG(t, fabs(sag - reference) < 0.02 * reference, "sag: multigrid %.5g, XPBD %.5g m",
                sag, reference);
    } else {
      CHECK_MSG(t, sag > 0.99 * reference && sag < 1.02 * reference,
                "sag: multigrid %.5g, bonded %.5g, frictionless %.5g m", sag, reference,
                frictionless);
    }
    CHECK_MSG(t, fabs(bottom[1]) < 1e-5, "bottom at %.3g m", bottom[1]);
    CHECK_MSG(t, residual[1] < 1e-6, "relative residual %.3g", residual[1]);
  }
}

/* A tet mirrored through its opposite face recovers without NaN, both models, inversion
 * handling on and always. */
void test_multigrid_inverted_tet_recovers(piola_test *t) {
  static int32_t one[4] = {0, 1, 2, 3};
  const piola_model models[2] = {PIOLA_MODEL_STVK, PIOLA_MODEL_NEOHOOKEAN};
  const piola_inversion modes[2] = {PIOLA_INVERSION_ON, PIOLA_INVERSION_ALWAYS};
  for (int mi = 0; mi < 2; ++mi) {
    for (int ii = 0; ii < 2; ++ii) {
      piola_tet_mesh mesh = {(float *)wt_unit_tet, 4, one, 1};
      piola_world_def def = piola_test_world_def(NULL, NULL);
      def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
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
      for (int s = 0; s < 100; ++s) {
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

/* A beam (10 x 2 x 2 cells, 1 x 0.2 x 0.2 m, E = 1 MPa, yield 0.02, creep 5 1/s) twisted by
 * 1 rad/m and let go, 400 steps without gravity on the backend under the scheme: the twist
 * (rad) left at its free end; NAN on failure. */
static double plastic_twist(piola_test *t, piola_backend backend, piola_iteration_scheme scheme,
                            int32_t iterations) {
  const int32_t cells[3] = {10, 2, 2};
  const float size[3] = {1.0f, 0.2f, 0.2f};
  piola_tet_mesh beam;
  if (piola_mesh_make_box(cells, size, &beam) != PIOLA_OK) {
    return NAN;
  }
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  def.iteration_scheme = scheme;
  def.iterations = iterations;
  def.damping = 5.0f;
  def.gravity[1] = 0.0f;
  def.contacts = false;
  piola_world *w = NULL;
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  mat.plastic_creep = 5.0f;
  mat.plastic_yield = 0.02f;
  mat.plastic_max = 0.3f;
  piola_body_id id;
  float *x = malloc(sizeof *x * 3 * (size_t)beam.vertex_count);
  piola_status s = x != NULL ? piola_world_create(&def, &w) : PIOLA_ERROR_OUT_OF_MEMORY;
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &beam, &mat, NULL, &id);
  }
  for (int32_t i = 0; i < beam.vertex_count && s == PIOLA_OK; ++i) {
    const double a = beam.positions[3 * i], y = beam.positions[3 * i + 1] - 0.1,
                 z = beam.positions[3 * i + 2] - 0.1;
    x[3 * i] = (float)a;
    x[3 * i + 1] = (float)(0.1 + cos(a) * y - sin(a) * z);
    x[3 * i + 2] = (float)(0.1 + sin(a) * y + cos(a) * z);
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_positions(w, id, x, beam.vertex_count);
  }
  for (int k = 0; k < 400 && s == PIOLA_OK; ++k) {
    s = piola_world_step(w);
  }
  if (s == PIOLA_OK) {
    s = piola_body_get_positions(w, id, x, beam.vertex_count);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  double twist = NAN;
  int32_t a0 = -1, a1 = -1;
  for (int32_t i = 0; i < beam.vertex_count; ++i) {
    if (beam.positions[3 * i] == 1.0f && beam.positions[3 * i + 2] == 0.0f) {
      a0 = beam.positions[3 * i + 1] == 0.0f ? i : a0;
      a1 = beam.positions[3 * i + 1] == 0.2f ? i : a1;
    }
  }
  if (s == PIOLA_OK && a0 >= 0 && a1 >= 0) {
    twist = atan2(x[3 * a1 + 2] - x[3 * a0 + 2], x[3 * a1 + 1] - x[3 * a0 + 1]);
  }
  free(x);
  piola_mesh_free(&beam);
  piola_world_destroy(w);
  return twist;
}

/* Plasticity keeps working: a beam twisted by 1 rad/m beyond its yield keeps a twist after it is
 * let go, the same under multigrid (5 iterations) as under XPBD (20). */
void test_multigrid_plasticity(piola_test *t) {
  double twist[2];
  for (int k = 0; k < 2; ++k) {
    twist[k] =
        plastic_twist(t, PIOLA_BACKEND_CPU_REFERENCE,
                      k == 0 ? PIOLA_SCHEME_GAUSS_SEIDEL : PIOLA_SCHEME_MULTIGRID, k == 0 ? 20 : 5);
  }
  printf("  residual twist at the free end: XPBD 20 iterations %.4f rad, multigrid 5 iterations "
         "%.4f rad\n",
         twist[0], twist[1]);
  CHECK_MSG(t, twist[1] > 0.05, "multigrid residual twist %.4f rad", twist[1]);
  CHECK_MSG(t, fabs(twist[1] - twist[0]) < 0.05 * fabs(twist[0]), "multigrid %.4f, XPBD %.4f rad",
            twist[1], twist[0]);
}

/* Two 0.3 m boxes of 4 x 4 x 4 cells (Neo-Hookean, E 1 MPa, material damping `damping` s) on
 * the ground of w (friction 0.5), their corners at `lower` and `upper` (m): ids into ids, the
 * vertices of each into *vertex_count. */
static piola_status two_boxes(piola_world *w, const float lower[3], const float upper[3],
                              float damping, piola_body_id ids[2], int32_t *vertex_count) {
  piola_tet_mesh box = wt_box(4, 4, 4, 0.3f, 0.3f, 0.3f);
  piola_material mat = piola_default_material();
  mat.model = PIOLA_MODEL_NEOHOOKEAN;
  mat.youngs_modulus = 1e6f;
  mat.damping = damping;
  const float up[3] = {0.0f, 1.0f, 0.0f};
  piola_status s = piola_world_add_plane(w, up, 0.0f, 0.5f, NULL);
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &box, &mat, lower, &ids[0]);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &box, &mat, upper, &ids[1]);
  }
  *vertex_count = box.vertex_count;
  piola_mesh_free(&box);
  return s;
}

/* Bodies in contact: a box dropped onto another stays on it, no vertex through the lower box's
 * top (the contacts in the Newton step, newton_contact.c, and projected after the last one), with
 * the material damping docs/contact.md gives stacks (5 ms). Undamped it stays within 0.2 mm of the
 * centre too (it landed 2 cm off in 1 s while the contacts acted only between the Newton steps;
 * bench/LOG.md, "Body contacts in the Newton step"). The preconditioner sees the contacts
 * (multigrid.c, piola_multigrid.term): at rest the stack's solve takes at most 1.5 times the
 * conjugate-gradient iterations of the same boxes side by side (measured 49 against 36; 89 against
 * 36 where the V-cycle left the contacts out). */
void test_multigrid_box_on_box(piola_test *t) {
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
  /* the conjugate gradients' iterations a step at rest: the two boxes side by side on the
   * ground, then one on the other */
  double cg[2] = {0.0, 0.0};
  const float origin[3] = {0.0f, 0.0f, 0.0f}, above[3] = {0.0f, 0.4f, 0.0f},
              away[3] = {5.0f, 0.0f, 0.0f};
  piola_body_id ids[2];
  int32_t n = 0;
  piola_world *w = NULL;
  for (int k = 0; k < 2; ++k) {
    piola_world_destroy(w);
    w = NULL;
    REQUIRE_OK(t, piola_world_create(&def, &w));
    REQUIRE_OK(t, two_boxes(w, origin, k == 0 ? away : above, 0.005f, ids, &n));
    for (int s = 0; s < 200; ++s) { /* the mean over the last 100 steps */
      REQUIRE_OK(t, piola_world_step(w));
      piola_stats st;
      REQUIRE_OK(t, piola_world_get_stats(w, &st));
      cg[k] += s >= 100 ? st.linear_iterations / 100.0 : 0.0;
    }
  }
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  REQUIRE(t, x != NULL);
  REQUIRE_OK(t, piola_body_get_positions(w, ids[1], x, n));
  double lowest = INFINITY, mean = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    lowest = fmin(lowest, x[3 * i + 1]);
    mean += x[3 * i] / n;
  }
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  printf("  upper box: lowest vertex at %.4f m (lower box's top at 0.3 m), mean x %.4f m, "
         "kinetic %.3g J, %d inverted tets\n",
         lowest, mean, st.kinetic_energy, (int)st.inverted_tets);
  printf("  conjugate-gradient iterations a step at rest: %.1f for the boxes side by side, %.1f "
         "stacked\n",
         cg[0], cg[1]);
  CHECK_MSG(t, lowest > 0.3 - 0.002 && lowest < 0.3 + 0.02, "lowest vertex at %.4f m", lowest);
  CHECK(t, fabs(mean - 0.15) < 0.005 && st.inverted_tets == 0);
  CHECK_MSG(t, cg[1] <= 1.5 * cg[0], "%.1f iterations a step stacked, %.1f side by side", cg[1],
            cg[0]);
  free(x);
  piola_world_destroy(w);
}

/* Issue 41's stack under the scheme: a 0.3 m box (4 x 4 x 4 cells, Neo-Hookean, E 1 MPa,
 * undamped) placed 1.2 cm above another with 40% of its width past the lower box's edge (its
 * centre of mass 3 cm inside it), friction 0.5, 2 substeps. The body contacts are in the Newton
 * step (newton_contact.c): the upper box rests, its centre drifting less than 5 mm along x from
 * 0.5 s to 1.5 s (rocking by less than 1 cm: it is undamped), and the step converges with the
 * contacts (relative residual below 0.2 over the last 0.5 s). With the contacts projected only
 * between the Newton steps the box tipped off at 0.6 s (the 6 x 6 x 6 cells of piola_stack_drift),
 * the residual 0.95 while it touched. */
static void stack_overhang(piola_test *t, piola_backend backend) {
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.backend = backend;
  def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
  def.substeps = 2;
  def.contact_friction = 0.5f;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  const float lower_at[3] = {-0.15f, 0.0f, -0.15f}, upper_at[3] = {-0.15f + 0.12f, 0.312f, -0.15f};
  piola_body_id ids[2];
  int32_t n = 0;
  REQUIRE_OK(t, two_boxes(w, lower_at, upper_at, 0.0f, ids, &n));
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  REQUIRE(t, x != NULL);
  double start = 0.0, moved = 0.0, drift = 0.0, lowest = INFINITY, residual = 0.0;
  for (int s = 1; s <= 300; ++s) {
    REQUIRE_OK(t, piola_world_step(w));
    REQUIRE_OK(t, piola_body_get_positions(w, ids[1], x, n));
    double mean = 0.0;
    lowest = INFINITY;
    for (int32_t i = 0; i < n; ++i) {
      mean += x[3 * i] / n;
      lowest = fmin(lowest, x[3 * i + 1]);
    }
    if (s == 100) {
      start = mean;
    }
    if (s > 100) {
      moved = fmax(moved, fabs(mean - start));
      drift = mean - start;
    }
    if (s > 200) {
      piola_stats st;
      REQUIRE_OK(t, piola_world_get_stats(w, &st));
      residual = fmax(residual, st.relative_residual);
    }
  }
  printf("  upper box 40%% over the edge: from 0.5 s to 1.5 s its centre drifted %.2f mm along x "
         "(%.2f mm at most, rocking), lowest vertex at %.4f m, largest relative residual over the "
         "last 0.5 s %.3g\n",
         1e3 * drift, 1e3 * moved, lowest, residual);
  CHECK_MSG(t, fabs(drift) < 0.005 && moved < 0.01, "centre drifted %.4f m (%.4f m at most)", drift,
            moved);
  CHECK_MSG(t, lowest > 0.29, "the upper box fell off (lowest vertex at %.4f m)", lowest);
  CHECK_MSG(t, residual < 0.2, "relative residual %.3g", residual);
  free(x);
  piola_world_destroy(w);
}

void test_multigrid_stack_overhang(piola_test *t) {
  stack_overhang(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_multigrid_stack_overhang(piola_test *t) {
  if (opencl_test_ready(t)) {
    stack_overhang(t, PIOLA_BACKEND_OPENCL);
  }
}

/* A box (4 x 4 x 4 cells, 0.3 m, E 1 MPa, 27 kg) dropped 0.4 m onto frictionless ground: nothing
 * pushes it sideways, so its centre of mass stays where it was dropped, through the impact and the
 * bounces (measured: 1.6e-8 m, momentum 6e-7 kg m/s against 75 kg m/s at the impact; an
 * unconverged block-descent step at 5 iterations puts the same box 0.55 m off, docs/solvers.md). */
void test_multigrid_frictionless_drop_keeps_centre(piola_test *t) {
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_tet_mesh box = wt_box(4, 4, 4, 0.3f, 0.3f, 0.3f);
  const piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.0f, NULL));
  REQUIRE_OK(t,
             piola_world_add_tet_body(w, &box, &mat, (const float[3]){-0.15f, 0.4f, -0.15f}, NULL));
  double worst = 0.0, worst_p = 0.0, lowest = INFINITY;
  for (int s = 0; s < 200; ++s) {
    REQUIRE_OK(t, piola_world_step(w));
    double mass, p[3], l[3], c[2] = {0.0, 0.0};
    wt_momenta(w, &mass, p, l);
    worst_p = fmax(worst_p, hypot(p[0], p[2]));
    lowest = INFINITY;
    for (int32_t i = 0; i < w->vertex_count; ++i) {
      c[0] += w->x[3 * i] / w->w[i] / mass;
      c[1] += w->x[3 * i + 2] / w->w[i] / mass;
      lowest = fmin(lowest, w->x[3 * i + 1]);
    }
    worst = fmax(worst, hypot(c[0], c[1]));
  }
  printf("  over 1 s: centre of mass off by at most %.3g m, horizontal momentum at most %.3g kg "
         "m/s; lowest vertex at the end %.3g m\n",
         worst, worst_p, lowest);
  CHECK_MSG(t, worst < 1e-6, "centre of mass moved %.3g m sideways", worst);
  CHECK_MSG(t, worst_p < 1e-4, "horizontal momentum %.3g kg m/s", worst_p);
  CHECK_MSG(t, lowest > -1e-6 && lowest < 1e-3, "lowest vertex at %.3g m", lowest);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

/* The terms of the coupled solve (piola_multigrid.term): six blocks of 4 x 4 x 4 vertices (10 cm
 * apart, each vertex tied to its face neighbours by isotropic springs of 1e4 N/m, 0.1 kg over
 * h^2 = 1e-4 s^2 on the diagonal), stacked 5 cm apart, and between each two a term for every
 * cell of the upper one's sole over the lower one's top (the sole's vertex against a corner and
 * its two neighbours, weights 1 and -1/3, a contact's stiffness of 1e5 N/m along y and 1e3 across).
 * The conjugate gradients reach 1e-10 of the right-hand side, measured independently (the
 * matrix's blocks times x plus the terms' sum), whether the coarsest level joins the blocks the
 * terms couple (by default, up to PIOLA_MG_GROUP_UNKNOWNS: all six), two at a time (a term
 * between two groups left out of both), or none; joining them all takes the fewest
 * iterations. */
typedef struct coupled_terms {
  piola_mg_term term[6 * 9];
  int32_t count;
} coupled_terms;

static void coupled_term(const void *ctx, int32_t k, piola_mg_term *out) {
  *out = ((const coupled_terms *)ctx)->term[k];
}

void test_multigrid_coupled_terms(piola_test *t) {
  enum { side = 4, per = side * side * side, blocks = 6, n = blocks * per };
  int32_t *start = malloc(sizeof(int32_t) * (n + 1)), *col = malloc(sizeof(int32_t) * 7 * n);
  double *pos = malloc(sizeof(double) * 3 * n), *b = malloc(sizeof(double) * 3 * n),
         *x = malloc(sizeof(double) * 3 * n), *r = malloc(sizeof(double) * 3 * n);
  REQUIRE(t, start && col && pos && b && x && r);
  const double spring = 1e4, mass = 0.1 / 1e-4;
  int32_t nnz = 0;
  for (int32_t v = 0; v < n; ++v) { /* the pattern: itself and its face neighbours, in order */
    const int32_t q = v % per, i = q % side, j = (q / side) % side, k = q / (side * side);
    const int32_t base = v - q;
    int32_t nb[7], m = 0;
    nb[m++] = v;
    if (i > 0)
      nb[m++] = v - 1;
    if (i < side - 1)
      nb[m++] = v + 1;
    if (j > 0)
      nb[m++] = v - side;
    if (j < side - 1)
      nb[m++] = v + side;
    if (k > 0)
      nb[m++] = v - side * side;
    if (k < side - 1)
      nb[m++] = v + side * side;
    for (int a = 1; a < m; ++a) { /* sorted */
      for (int c = a; c > 0 && nb[c] < nb[c - 1]; --c) {
        const int32_t tmp = nb[c];
        nb[c] = nb[c - 1];
        nb[c - 1] = tmp;
      }
    }
    start[v] = nnz;
    for (int a = 0; a < m; ++a) {
      col[nnz++] = nb[a];
    }
    pos[3 * v] = 0.1 * i;
    pos[3 * v + 1] = 0.1 * j + 0.35 * (double)(base / per);
    pos[3 * v + 2] = 0.1 * k;
  }
  start[n] = nnz;
  coupled_terms terms = {.count = 0};
  for (int32_t blk = 0; blk + 1 < blocks; ++blk) {
    for (int32_t i = 0; i + 1 < side; ++i) {
      for (int32_t k = 0; k + 1 < side; ++k) {
        piola_mg_term *tm = &terms.term[terms.count++];
        const int32_t top = blk * per + (side - 1) * side + i + side * side * k;
        tm->node[0] = (blk + 1) * per + i + side * side * k; /* the upper block's sole */
        tm->node[1] = top;
        tm->node[2] = top + 1;
        tm->node[3] = top + side * side;
        tm->weight[0] = 1.0;
        tm->weight[1] = tm->weight[2] = tm->weight[3] = -1.0 / 3.0;
        for (int a = 0; a < 9; ++a) {
          tm->k[a] = a % 4 == 0 ? (a == 4 ? 1e5 : 1e3) : 0.0;
        }
      }
    }
  }
  int32_t iterations[3] = {0, 0, 0};
  for (int run = 0; run < 3; ++run) {
    piola_multigrid mg;
    REQUIRE_OK(t, piola_multigrid_build(n, start, col, NULL, &mg));
    const int32_t block_unknowns =
        (mg.component_start[1] - mg.component_start[0]) * mg.level[mg.level_count - 1].a.bs;
    mg.group_unknowns_max = run == 0 ? PIOLA_MG_GROUP_UNKNOWNS : run == 1 ? 2 * block_unknowns : 0;
    piola_bsr *a = &mg.level[0].a;
    for (int32_t v = 0; v < n; ++v) {
      for (int32_t e = start[v]; e < start[v + 1]; ++e) {
        const double d = col[e] == v ? mass + spring * (start[v + 1] - start[v] - 1) : -spring;
        for (int q = 0; q < 9; ++q) {
          a->val[9 * (size_t)e + (size_t)q] = q % 4 == 0 ? d : 0.0;
        }
      }
    }
    mg.term = coupled_term;
    mg.term_ctx = &terms;
    mg.term_count = terms.count;
    piola_multigrid_setup(&mg, pos);
    uint32_t seed = 12345u;
    for (int32_t e = 0; e < 3 * n; ++e) {
      seed = seed * 1664525u + 1013904223u;
      b[e] = (double)(seed >> 8) / (double)(1u << 24) - 0.5;
    }
    double relative = 0.0;
    iterations[run] = piola_multigrid_solve(&mg, b, NULL, NULL, 1e-10, 500, x, &relative);
    /* r = b - A x - B x, independently of the solve's own products */
    for (int32_t v = 0; v < n; ++v) {
      for (int q = 0; q < 3; ++q) {
        double s = b[3 * v + q];
        for (int32_t e = start[v]; e < start[v + 1]; ++e) {
          s -= a->val[9 * (size_t)e + 4 * (size_t)q] * x[3 * col[e] + q];
        }
        r[3 * v + q] = s;
      }
    }
    for (int32_t k = 0; k < terms.count; ++k) {
      const piola_mg_term *tm = &terms.term[k];
      double d[3] = {0.0, 0.0, 0.0};
      for (int j = 0; j < 4; ++j) {
        for (int q = 0; q < 3; ++q) {
          d[q] += tm->weight[j] * x[3 * tm->node[j] + q];
        }
      }
      for (int j = 0; j < 4; ++j) {
        for (int q = 0; q < 3; ++q) {
          r[3 * tm->node[j] + q] -= tm->weight[j] * tm->k[4 * q] * d[q];
        }
      }
    }
    double rr = 0.0, bb = 0.0;
    for (int32_t e = 0; e < 3 * n; ++e) {
      rr += r[e] * r[e];
      bb += b[e] * b[e];
    }
    printf("  groups joined up to %d unknowns: %d groups on %d levels, %d iterations, residual "
           "%.3g (the solve's own %.3g)\n",
           mg.group_unknowns_max, (int)mg.group_count, (int)mg.level_count, (int)iterations[run],
           sqrt(rr / bb), relative);
    CHECK_MSG(t, sqrt(rr / bb) < 1e-9 && relative <= 1e-10, "residual %.3g", sqrt(rr / bb));
    CHECK(t, mg.group_count == (run == 0 ? 1 : run == 1 ? 3 : blocks));
    piola_multigrid_free(&mg);
  }
  CHECK_MSG(t,
            iterations[0] < iterations[1] && iterations[1] < iterations[2] && iterations[0] <= 30,
            "iterations %d / %d / %d", (int)iterations[0], (int)iterations[1], (int)iterations[2]);
  free(start);
  free(col);
  free(pos);
  free(b);
  free(x);
  free(r);
}

/* Bitwise repeatable: a squashed box falling onto the ground, twice on one thread and once on
 * two threads, the same state hash. */
void test_multigrid_bitwise_repeatable(piola_test *t) {
  uint64_t hash[3];
  for (int run = 0; run < 3; ++run) {
    hash[run] = wt_squashed_box_hash(PIOLA_SCHEME_MULTIGRID, run == 2 ? 2 : 1);
  }
  CHECK(t, hash[0] != 0 && hash[0] == hash[1] && hash[1] == hash[2]);
}

/* A material's damping applies under the scheme (test_multigrid_material_damping): a tet body and
 * a cloth with it are added without a warning and step. Where an OpenCL device exists, an OpenCL
 * world and an auto world take the scheme on the device (the global solve on the host), damped
 * cloth and tets alike; without one, opencl_test_ready() checks the fallback. */
void test_multigrid_damping_accepted(piola_test *t) {
  piola_test_log log;
  piola_world_def def = piola_test_world_def(&log, NULL);
  def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.backend == PIOLA_BACKEND_CPU_REFERENCE);
  const float xyz[12] = {0, 0.5f, 0, 1, 0.5f, 0, 0, 0.5f, 1, 1, 0.5f, 1};
  const int32_t tri[6] = {0, 2, 1, 1, 2, 3};
  piola_tri_mesh cloth = {(float *)xyz, 4, (int32_t *)tri, 2, NULL};
  piola_cloth_material cm = piola_default_cloth_material();
  cm.damping = 0.01f;
  piola_body_id id;
  CHECK_STATUS(t, piola_world_add_cloth(w, &cloth, &cm, NULL, &id), PIOLA_OK);
  piola_tet_mesh box = wt_box(2, 2, 2, 0.2f, 0.2f, 0.2f);
  piola_material mat = piola_default_material();
  mat.damping = 0.01f;
  CHECK_STATUS(t, piola_world_add_tet_body(w, &box, &mat, NULL, &id), PIOLA_OK);
  CHECK_MSG(t, log.count[PIOLA_LOG_WARNING] == 0, "%d warnings: %s",
            (int)log.count[PIOLA_LOG_WARNING], log.last);
  CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.body_count == 2 && st.linear_iterations > 0);
  piola_world_destroy(w);
  w = NULL;
  if (opencl_test_ready(t)) {
    for (int k = 0; k < 2; ++k) {
      def.backend = k == 0 ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_AUTO;
      w = NULL;
      CHECK_STATUS(t, piola_world_create(&def, &w), PIOLA_OK);
      if (w == NULL) {
        continue;
      }
      CHECK_STATUS(t, piola_world_add_cloth(w, &cloth, &cm, NULL, &id), PIOLA_OK);
      CHECK_STATUS(t, piola_world_add_tet_body(w, &box, &mat, NULL, &id), PIOLA_OK);
      CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
      CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
      CHECK_MSG(t, st.backend == PIOLA_BACKEND_OPENCL && st.body_count == 2,
                "backend %d, %d bodies", (int)st.backend, (int)st.body_count);
      CHECK_MSG(t, st.multigrid_levels >= 1, "%d levels", (int)st.multigrid_levels);
      piola_world_destroy(w);
    }
  }
  piola_mesh_free(&box);
}

static const char *slope_name(wt_slope slope) {
  return slope == WT_SLOPE_MESH ? "mesh" : slope == WT_SLOPE_SDF ? "SDF" : "plane";
}

/* Collider friction under the scheme, as friction_on_inclined_plane checks it under
 * Gauss-Seidel: the box slides as Coulomb says (g (sin 20 - mu cos 20) / 2 in 1 s, within 10%)
 * for mu below tan 20 = 0.364 and sticks above it (within 2 mm), on both backends, on the given
 * slope; held, its step converges: relative residual under 1e-5 on the CPU reference (1e-3 on a
 * distance field, whose float distances set its floor at about 5e-5) and 1e-2 on OpenCL (float
 * positions: about 1e-4 to 4e-4), against 0.88 where the friction acted after each Newton step, as
 * a mesh or SDF collider's once did. The
 * support's held motion is the depth the vertex's inertia gives the force the solve took out
 * (hold_supported in newton.c); with the step of its whole block the box slid 1.37 m at mu 0.8. */
static void friction_on_slope(piola_test *t, wt_slope slope) {
  const double th = 20.0 * WT_PI / 180.0, g = 9.81;
  const float mus[4] = {0.1f, 0.3f, 0.45f, 0.8f};
  for (int b = 0; b < 2; ++b) {
    if (b == 1 && !opencl_test_ready(t)) {
      break;
    }
    const piola_backend backend = b == 0 ? PIOLA_BACKEND_CPU_REFERENCE : PIOLA_BACKEND_OPENCL;
    for (int i = 0; i < 4; ++i) {
      piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
      def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
      def.contacts = false;
      const double d = wt_incline_slide_on(&def, mus[i], slope, NULL);
      const double expected = mus[i] < tan(th) ? 0.5 * g * (sin(th) - mus[i] * cos(th)) : 0.0;
      printf("  %s, friction %.2f on a 20 deg %s: moved %.4f m in 1 s (Coulomb %.4f m)\n",
             b == 0 ? "cpu" : "opencl", (double)mus[i], slope_name(slope), d, expected);
      CHECK(t, isfinite(d));
      if (expected > 0.0) {
        CHECK_MSG(t, fabs(d / expected - 1.0) < 0.1, "friction %.2f: moved %.4f m, Coulomb %.4f",
                  (double)mus[i], d, expected);
      } else {
        CHECK_MSG(t, d < 0.002, "friction %.2f: moved %.4f m", (double)mus[i], d);
      }
    }
    /* Held at friction 0.8 for 0.5 s, the step converges: the friction is in it. */
    piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
    def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
    def.contacts = false;
    piola_world *w = NULL;
    REQUIRE_OK(t, wt_incline_make_on(&def, 0.8f, slope, &w, NULL, NULL));
    piola_stats st;
    for (int step = 0; step < 100; ++step) {
      REQUIRE_OK(t, piola_world_step(w));
    }
    REQUIRE_OK(t, piola_world_get_stats(w, &st));
    printf("  %s, friction 0.80 on the %s, at rest after 0.5 s: relative residual %.3g\n",
           b == 0 ? "cpu" : "opencl", slope_name(slope), st.relative_residual);
    const double bound = b == 1 ? 1e-2 : slope == WT_SLOPE_SDF ? 1e-3 : 1e-5;
    CHECK_MSG(t, st.relative_residual < bound, "relative residual %.3g at rest",
              st.relative_residual);
    piola_world_destroy(w);
  }
}

void test_multigrid_friction_on_inclined_plane(piola_test *t) {
  friction_on_slope(t, WT_SLOPE_PLANE);
}

/* The same on a triangle-mesh collider and on its distance field: their supports carry their
 * normals into the Newton step and their friction acts there, as an analytic collider's. */
void test_multigrid_friction_on_inclined_mesh(piola_test *t) {
  friction_on_slope(t, WT_SLOPE_MESH);
  friction_on_slope(t, WT_SLOPE_SDF);
}

/* The box of friction_on_inclined_plane held by friction 0.8 on the 20-degree plane, and on the
 * mesh slope of wt_incline_make_on: the force it exerts on the collider
 * (piola_world_get_collider_force), the mean over 0.5 s after 0.5 s, is its weight straight down
 * within 0.5%, the normal push and the friction of the Newton step together (without the
 * friction's record it leans by 20 degrees: m g cos 20 along the plane's normal; where a closed
 * mesh pushed a vertex resting on it along its rounding-turned direction to the surface, the
 * mesh on OpenCL took 78.0 N down and 1.3 N sideways). Both backends. */
void test_multigrid_collider_force_on_slope(piola_test *t) {
  const double g = 9.81;
  for (int b = 0; b < 4; ++b) {
    if (b % 2 == 1 && !opencl_test_ready(t)) {
      continue;
    }
    const wt_slope slope = b < 2 ? WT_SLOPE_PLANE : WT_SLOPE_MESH;
    piola_world_def def = opencl_test_world_def(
        b % 2 == 0 ? PIOLA_BACKEND_CPU_REFERENCE : PIOLA_BACKEND_OPENCL, NULL, NULL);
    def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
    def.contacts = false;
    def.gravity[0] = def.gravity[2] = 0.0f;
    def.gravity[1] = (float)-g;
    piola_world *w = NULL;
    piola_collider_id collider;
    REQUIRE_OK(t, wt_incline_make_on(&def, 0.8f, slope, &w, NULL, &collider));
    const double weight = 0.008 * 1000.0 * g; /* 0.2^3 m^3 of 1000 kg/m^3 */
    double sum[3] = {0.0, 0.0, 0.0};
    const int settle = 100, measure = 100;
    for (int step = 0; step < settle + measure; ++step) {
      REQUIRE_OK(t, piola_world_step(w));
      float f[3];
      REQUIRE_OK(t, piola_world_get_collider_force(w, collider, f, NULL));
      for (int k = 0; k < 3 && step >= settle; ++k) {
        sum[k] += f[k] / measure;
      }
    }
    printf("  %s, %s: mean force on the slope (%.4g, %.5g, %.4g) N, weight %.5g N\n",
           b % 2 == 0 ? "cpu" : "opencl", slope_name(slope), sum[0], sum[1], sum[2], weight);
    CHECK_MSG(t, fabs(-sum[1] - weight) < 0.005 * weight, "%.5g N down, weight %.5g N", -sum[1],
              weight);
    CHECK_MSG(t, fabs(sum[0]) < 0.005 * weight && fabs(sum[2]) < 0.005 * weight,
              "sideways (%.4g, %.4g) N", sum[0], sum[2]);
    piola_world_destroy(w);
  }
}

/* ---- Cloth in worlds ----------------------------------------------------------------------- */

/* The cantilever of validate's cloth_cantilever on the checkerboard grid: a strip of `cells`
 * squares along its free length L = 0.2 m and 2 across (in the x-z plane), clamped by pinning
 * the vertex lines at x = -dx and 0, rho_A = 0.1 kg/m^2, stretch 1000 N/m, D = 0.02 N m, damping
 * 8 1/s, steps of 10 ms with the given substeps and iterations: the mean sag of its tip line
 * (m) after 2 s, after 1.5 s in *early; NAN on failure. */
static double cloth_cantilever(piola_test *t, piola_backend backend, piola_iteration_scheme scheme,
                               int32_t cells, int32_t substeps, int32_t iterations, double *early) {
  const double length = 0.2, dx = length / cells;
  *early = NAN;
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  def.iteration_scheme = scheme;
  def.dt = 0.01f;
  def.substeps = substeps;
  def.iterations = iterations;
  def.damping = 8.0f;
  piola_world *w = NULL;
  piola_tri_mesh m;
  memset(&m, 0, sizeof m);
  if (piola_world_create(&def, &w) != PIOLA_OK ||
      piola_mesh_make_grid((const int32_t[2]){cells + 1, 2},
                           (const float[2]){(float)(length + dx), (float)(2.0 * dx)},
                           &m) != PIOLA_OK) {
    piola_world_destroy(w);
    CHECK(t, false);
    return NAN;
  }
  const int32_t n = m.vertex_count;
  for (int32_t i = 0; i < n; ++i) {
    m.positions[3 * i] -= (float)dx;
  }
  piola_cloth_material mat = piola_default_cloth_material();
  mat.density = 0.1f;
  mat.stretch_weft = mat.stretch_warp = 1000.0f;
  mat.shear = 500.0f;
  mat.poisson_weft = 0.0f;
  mat.bending_stiffness = 0.02f;
  mat.solver = PIOLA_SOLVER_XPBD;
  piola_body_id id;
  float *inv = malloc(sizeof *inv * (size_t)n), *x = malloc(sizeof *x * 3 * (size_t)n);
  double sag = NAN;
  piola_status s = inv != NULL && x != NULL ? piola_world_add_cloth(w, &m, &mat, NULL, &id)
                                            : PIOLA_ERROR_OUT_OF_MEMORY;
  if (s == PIOLA_OK) {
    s = piola_body_get_inverse_masses(w, id, inv, n);
  }
  for (int32_t i = 0; s == PIOLA_OK && i < n; ++i) {
    inv[i] = m.positions[3 * i] <= (float)(0.5 * dx) ? 0.0f : inv[i];
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_inverse_masses(w, id, inv, n);
  }
  for (int part = 0; part < 2 && s == PIOLA_OK; ++part) {
    for (int k = 0; k < (part == 0 ? 150 : 50) && s == PIOLA_OK; ++k) {
      s = piola_world_step(w);
    }
    if (s == PIOLA_OK) {
      s = piola_body_get_positions(w, id, x, n);
    }
    double sum = 0.0;
    int tip = 0;
    for (int32_t i = 0; s == PIOLA_OK && i < n; ++i) {
      if (m.positions[3 * i] >= (float)length - 1e-6f) {
        sum -= x[3 * i + 1];
        ++tip;
      }
    }
    *(part == 0 ? early : &sag) = tip > 0 ? sum / tip : NAN;
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  free(inv);
  free(x);
  piola_tri_mesh_free(&m);
  piola_world_destroy(w);
  return sag;
}

/* Stiff bending, where Gauss-Seidel over constraints needs hundreds of substeps (docs/solvers.md,
 * "Stiff bending"): the 16-row cantilever under the multigrid scheme at one substep of 5
 * iterations rests, settled by 1.5 s, where vertex block descent at 100 substeps of 2 iterations
 * (converged: bench/RESULTS.md) does, while Gauss-Seidel at the multigrid scheme's settings
 * hangs limp. */
void test_multigrid_cloth_cantilever(piola_test *t) {
  double mg_early, vbd_early, gs_early;
  const double mg =
      cloth_cantilever(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_MULTIGRID, 16, 1, 5, &mg_early);
  const double vbd =
      cloth_cantilever(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_VBD, 16, 100, 2, &vbd_early);
  const double gs = cloth_cantilever(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_GAUSS_SEIDEL, 16,
                                     1, 5, &gs_early);
  const double closed = 0.1 * 9.81 * pow(0.2, 4) / (8.0 * 0.02);
  printf("  tip sag / closed form: multigrid 1 x 5 %.4f (%.4f at 1.5 s), VBD 100 x 2 %.4f, "
         "Gauss-Seidel 1 x 5 %.3f\n",
         mg / closed, mg_early / closed, vbd / closed, gs / closed);
  CHECK(t, isfinite(mg) && isfinite(vbd) && isfinite(gs));
  CHECK_MSG(t, fabs(mg - vbd) < 0.01 * vbd, "multigrid %.5f, VBD %.5f m", mg, vbd);
  CHECK_MSG(t, fabs(mg - mg_early) < 0.002 * mg, "still moving: %.5f at 1.5 s, %.5f m at 2 s",
            mg_early, mg);
  /* the checkerboard strip's discrete sag, 1.34 of the closed form at 16 rows (docs/cloth.md) */
  CHECK_MSG(t, mg > closed && mg < 1.5 * closed, "sag %.4f of the closed form", mg / closed);
  CHECK_MSG(t, gs > 3.0 * mg, "Gauss-Seidel at 1 x 5 sags %.3f of the closed form", gs / closed);
}

/* A cloth (1 x 1 m, 10 x 10 cells, default material) dropped flat from 0.2 m onto the ground
 * (friction 0.5), one corner line tilted 5 cm up, lies on it after 2 s: no vertex below the
 * plane or more than 1 cm above it, at rest; its edges keep their lengths within 1%. */
void test_multigrid_cloth_on_ground(piola_test *t) {
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
  def.damping = 1.0f;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  const float up[3] = {0.0f, 1.0f, 0.0f};
  REQUIRE_OK(t, piola_world_add_plane(w, up, 0.0f, 0.5f, NULL));
  piola_tri_mesh m;
  REQUIRE_OK(t, piola_mesh_make_grid((const int32_t[2]){10, 10}, (const float[2]){1.0f, 1.0f}, &m));
  const int32_t n = m.vertex_count;
  for (int32_t i = 0; i < n; ++i) {
    m.positions[3 * i + 1] = 0.2f + 0.05f * m.positions[3 * i];
  }
  const piola_cloth_material mat = piola_default_cloth_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_cloth(w, &m, &mat, NULL, &id));
  piola_status s = PIOLA_OK;
  for (int k = 0; k < 400 && s == PIOLA_OK; ++k) {
    s = piola_world_step(w);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  REQUIRE(t, x != NULL && v != NULL);
  CHECK_STATUS(t, piola_body_get_positions(w, id, x, n), PIOLA_OK);
  CHECK_STATUS(t, piola_body_get_velocities(w, id, v, n), PIOLA_OK);
  double lowest = INFINITY, highest = -INFINITY, speed = 0.0, stretch = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    lowest = fmin(lowest, x[3 * i + 1]);
    highest = fmax(highest, x[3 * i + 1]);
    speed = fmax(speed, sqrt((double)v[3 * i] * v[3 * i] + (double)v[3 * i + 1] * v[3 * i + 1] +
                             (double)v[3 * i + 2] * v[3 * i + 2]));
  }
  for (int32_t f = 0; f < m.triangle_count; ++f) {
    for (int k = 0; k < 3; ++k) {
      const int32_t a = m.triangles[3 * f + k], b = m.triangles[3 * f + (k + 1) % 3];
      double l = 0.0, l0 = 0.0;
      for (int c = 0; c < 3; ++c) {
        const double d = (double)x[3 * a + c] - x[3 * b + c];
        const double d0 = (double)m.positions[3 * a + c] - m.positions[3 * b + c];
        l += d * d;
        l0 += d0 * d0;
      }
      stretch = fmax(stretch, fabs(sqrt(l / l0) - 1.0));
    }
  }
  printf("  cloth on the ground: lowest %.4f m, highest %.4f m, fastest %.3g m/s, edges off "
         "their rest lengths by %.3g at most\n",
         lowest, highest, speed, stretch);
  CHECK_MSG(t, lowest > -1e-3 && highest < 0.01, "between %.4f and %.4f m", lowest, highest);
  CHECK_MSG(t, speed < 1e-2, "moving at %.3g m/s", speed);
  CHECK_MSG(t, stretch < 0.01, "an edge off its rest length by %.3g", stretch);
  free(x);
  free(v);
  piola_tri_mesh_free(&m);
  piola_world_destroy(w);
}

/* ---- OpenCL worlds: the global solve on the host between the device's stages -------------- */

/* The scene of the OpenCL tests: the soft box of test_multigrid_box_rests_on_ground dropped
 * from 5 cm onto the ground (friction 0.5) and, beside it, the beam of beam_sag held at its
 * x = 0 face by hard attachments (E = 10 MPa, material damping 2 ms), damping 10 1/s, contacts
 * on; ids[0] the box,
 * ids[1] the beam. *held gets the beam's attached vertices' count and their indices. */
#define MG_OCL_HELD_MAX 64
typedef struct mg_ocl_scene {
  piola_world *w;
  piola_body_id ids[2];
  piola_tet_mesh box, beam;
  int32_t held[MG_OCL_HELD_MAX], held_count;
  float beam_at[3];
} mg_ocl_scene;

static void mg_ocl_scene_free(mg_ocl_scene *sc) {
  piola_world_destroy(sc->w);
  piola_mesh_free(&sc->box);
  piola_mesh_free(&sc->beam);
  memset(sc, 0, sizeof *sc);
}

static piola_status mg_ocl_scene_make(piola_backend backend, piola_schedule schedule,
                                      int32_t simd_lanes, int32_t cpu_threads, mg_ocl_scene *sc) {
  memset(sc, 0, sizeof *sc);
  sc->box = wt_box(4, 2, 4, 0.4f, 0.2f, 0.4f);
  const int32_t cells[3] = {10, 2, 2};
  const float size[3] = {1.0f, 0.2f, 0.2f};
  piola_status s = piola_mesh_make_box(cells, size, &sc->beam);
  if (s != PIOLA_OK || sc->box.vertex_count == 0) {
    return s != PIOLA_OK ? s : PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
  def.damping = 10.0f;
  def.schedule = schedule;
  def.simd_lanes = simd_lanes;
  def.cpu_threads = cpu_threads;
  s = piola_world_create(&def, &sc->w);
  const float up[3] = {0.0f, 1.0f, 0.0f}, box_at[3] = {0.0f, 0.05f, 0.0f};
  sc->beam_at[0] = 0.8f;
  sc->beam_at[1] = 0.5f;
  sc->beam_at[2] = 0.0f;
  piola_material soft = piola_default_material(), stiff = piola_default_material();
  soft.youngs_modulus = 1e5f;
  stiff.youngs_modulus = 1e7f;
  stiff.damping = 2e-3f;
  if (s == PIOLA_OK) {
    s = piola_world_add_plane(sc->w, up, 0.0f, 0.5f, NULL);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(sc->w, &sc->box, &soft, box_at, &sc->ids[0]);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(sc->w, &sc->beam, &stiff, sc->beam_at, &sc->ids[1]);
  }
  for (int32_t i = 0; i < sc->beam.vertex_count && s == PIOLA_OK; ++i) {
    if (sc->beam.positions[3 * i] != 0.0f || sc->held_count == MG_OCL_HELD_MAX) {
      continue;
    }
    float target[3];
    for (int k = 0; k < 3; ++k) {
      target[k] = sc->beam.positions[3 * i + k] + sc->beam_at[k];
    }
    piola_attachment_id a;
    s = piola_world_add_attachment(sc->w, sc->ids[1], i, target, 0.0f, &a);
    sc->held[sc->held_count++] = i;
  }
  return s;
}

/* The scene on the CPU reference and on OpenCL, 40 steps in lock-step (crosscheck_run, the
 * cross-check `piola crosscheck` runs): every vertex within 1e-4 of the reference's
 * bounding-box diagonal after every step, as the other schemes' parity tests (measured on
 * PoCL: 7e-8); both bodies moved; the hard attachments hold their vertices on their targets on
 * the device too; the device world's stats count the host solve's linear iterations. */
void test_opencl_multigrid_matches_reference(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  mg_ocl_scene ref, cand;
  REQUIRE_OK(t, mg_ocl_scene_make(PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEDULE_AUTO, 0, 1, &ref));
  piola_status s = mg_ocl_scene_make(PIOLA_BACKEND_OPENCL, PIOLA_SCHEDULE_AUTO, 0, 1, &cand);
  CHECK_STATUS(t, s, PIOLA_OK);
  const int32_t steps = 40;
  crosscheck_sample samples[40];
  double worst = NAN;
  if (s == PIOLA_OK) {
    const crosscheck_pair pair = {ref.w, cand.w, ref.ids, cand.ids, 2};
    s = crosscheck_run(&pair, steps, samples, &worst, NULL, NULL);
    CHECK_STATUS(t, s, PIOLA_OK);
  }
  if (s == PIOLA_OK) {
    int32_t worst_step = 0;
    for (int32_t i = 0; i < steps; ++i) {
      worst_step = samples[i].max_relative > samples[worst_step].max_relative ? i : worst_step;
    }
    printf("  largest deviation over %d steps %.3g of the diagonal (step %d), last %.3g\n",
           (int)steps, worst, (int)samples[worst_step].step, samples[steps - 1].max_relative);
    CHECK_MSG(t, worst < 1e-4, "deviation %.3g of the diagonal", worst);
    /* both bodies moved: the box fell onto the ground, the beam sagged */
    const int32_t nb = cand.box.vertex_count, nm = cand.beam.vertex_count;
    float *x = malloc(sizeof *x * 3 * (size_t)(nb > nm ? nb : nm));
    REQUIRE(t, x != NULL);
    CHECK_STATUS(t, piola_body_get_positions(cand.w, cand.ids[0], x, nb), PIOLA_OK);
    double lowest = INFINITY;
    for (int32_t i = 0; i < nb; ++i) {
      lowest = fmin(lowest, x[3 * i + 1]);
    }
    CHECK_MSG(t, lowest < 0.005 && lowest > -0.001, "box's lowest vertex at %.4f m", lowest);
    CHECK_STATUS(t, piola_body_get_positions(cand.w, cand.ids[1], x, nm), PIOLA_OK);
    double sag = 0.0, off = 0.0;
    for (int32_t i = 0; i < nm; ++i) {
      if (cand.beam.positions[3 * i] == 1.0f) {
        sag = fmax(sag, cand.beam.positions[3 * i + 1] + cand.beam_at[1] - x[3 * i + 1]);
      }
    }
    for (int32_t k = 0; k < cand.held_count; ++k) {
      const int32_t i = cand.held[k];
      for (int c = 0; c < 3; ++c) {
        off = fmax(off,
                   fabs((double)x[3 * i + c] - (cand.beam.positions[3 * i + c] + cand.beam_at[c])));
      }
    }
    printf("  OpenCL: box's lowest vertex %.4f m, beam's tip sag %.4f m, attached vertices off "
           "their targets by %.3g m\n",
           lowest, sag, off);
    CHECK_MSG(t, sag > 0.005, "tip sag %.4f m", sag);
    CHECK_MSG(t, off < 1e-6, "attached vertices off by %.3g m", off);
    free(x);
    piola_stats st;
    CHECK_STATUS(t, piola_world_get_stats(cand.w, &st), PIOLA_OK);
    CHECK(t, st.backend == PIOLA_BACKEND_OPENCL && st.linear_iterations > 0 &&
                 st.multigrid_levels >= 2);
  }
  mg_ocl_scene_free(&ref);
  mg_ocl_scene_free(&cand);
}

/* Two OpenCL runs of the scene end in bitwise identical states (the host solve is
 * deterministic and the device's stages are), and so does a third under the per-body schedule
 * with tets in SIMD packets and the host solve on two threads: neither the schedule nor the
 * packets apply to the scheme, whose every iteration runs the SOLVE_GLOBAL stage, and the solve
 * computes the same on any number of threads. */
void test_opencl_multigrid_deterministic(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  uint64_t hashes[3] = {0, 0, 0};
  for (int run = 0; run < 3; ++run) {
    mg_ocl_scene sc;
    piola_status s = mg_ocl_scene_make(PIOLA_BACKEND_OPENCL,
                                       run < 2 ? PIOLA_SCHEDULE_AUTO : PIOLA_SCHEDULE_BODIES,
                                       run < 2 ? 0 : 8, run < 2 ? 1 : 2, &sc);
    CHECK_STATUS(t, s, PIOLA_OK);
    const uint64_t start = s == PIOLA_OK ? wt_state_hash(sc.w, sc.ids, 2) : 0;
    for (int32_t i = 0; i < 30 && s == PIOLA_OK; ++i) {
      s = piola_world_step(sc.w);
    }
    CHECK_STATUS(t, s, PIOLA_OK);
    hashes[run] = s == PIOLA_OK ? wt_state_hash(sc.w, sc.ids, 2) : 0;
    CHECK(t, hashes[run] != start); /* the scene moved */
    mg_ocl_scene_free(&sc);
  }
  printf("  state hash after 30 steps %016llx, %016llx; per body in packets on two threads "
         "%016llx\n",
         (unsigned long long)hashes[0], (unsigned long long)hashes[1],
         (unsigned long long)hashes[2]);
  CHECK_MSG(t, hashes[0] != 0 && hashes[0] == hashes[1],
            "two OpenCL runs differ: %016llx vs %016llx", (unsigned long long)hashes[0],
            (unsigned long long)hashes[1]);
  CHECK_MSG(t, hashes[2] == hashes[0], "per body in packets on two threads: %016llx vs %016llx",
            (unsigned long long)hashes[2], (unsigned long long)hashes[0]);
}

/* The plastic beam of test_multigrid_plasticity on OpenCL: the device's plastic flow (its
 * matrices M read by the host solve once per substep) leaves the twist the CPU reference
 * leaves. */
void test_opencl_multigrid_plasticity(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const double cpu = plastic_twist(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_MULTIGRID, 5);
  const double ocl = plastic_twist(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEME_MULTIGRID, 5);
  printf("  residual twist at the free end: CPU reference %.5f rad, OpenCL %.5f rad\n", cpu, ocl);
  CHECK_MSG(t, cpu > 0.05 && fabs(ocl - cpu) < 1e-3 * cpu, "CPU %.5f, OpenCL %.5f rad", cpu, ocl);
}

/* The cantilever of test_multigrid_cloth_cantilever on an OpenCL world (float positions between
 * the host's double solves) rests where the CPU reference's does. */
void test_opencl_multigrid_cloth_matches_reference(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  double ref_early, ocl_early;
  const double ref = cloth_cantilever(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_MULTIGRID, 16, 1,
                                      5, &ref_early);
  const double ocl =
      cloth_cantilever(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEME_MULTIGRID, 16, 1, 5, &ocl_early);
  printf("  tip sag: CPU reference %.6f m, OpenCL %.6f m\n", ref, ocl);
  CHECK(t, isfinite(ref) && isfinite(ocl));
  CHECK_MSG(t, fabs(ocl - ref) < 1e-4 * ref && fabs(ocl_early - ref_early) < 1e-4 * ref_early,
            "OpenCL %.6f (%.6f at 1.5 s), reference %.6f (%.6f) m", ocl, ocl_early, ref, ref_early);
}
/* The stats: the linear iterations, levels and dependent passes of a multigrid step; none of
 * them under Gauss-Seidel. */
void test_multigrid_stats(piola_test *t) {
  for (int s = 0; s < 2; ++s) {
    column c;
    if (column_make(t, &c, s == 0 ? PIOLA_SCHEME_GAUSS_SEIDEL : PIOLA_SCHEME_MULTIGRID, 4, 5, 0.0f,
                    false)) {
      CHECK_STATUS(t, piola_world_step(c.w), PIOLA_OK);
      piola_stats st;
      CHECK_STATUS(t, piola_world_get_stats(c.w, &st), PIOLA_OK);
      printf("  %s: %d linear iterations, %d levels, linear residual %.2g, %d dependent passes\n",
             s == 0 ? "Gauss-Seidel" : "multigrid", (int)st.linear_iterations,
             (int)st.multigrid_levels, st.linear_residual, (int)st.dependent_passes);
      if (s == 0) {
        CHECK(t,
              st.linear_iterations == 0 && st.multigrid_levels == 0 && st.linear_residual == 0.0);
      } else {
        CHECK(t, st.linear_iterations > 0 && st.multigrid_levels >= 2);
        const int32_t cg = st.linear_iterations / 5, levels = st.multigrid_levels;
        /* per iteration: the solve (see piola_stats.dependent_passes) and the colliders */
        const int32_t per = 1 + cg * (3 + 11 * (levels - 1) + 1) + 1 + 1;
        CHECK_MSG(t, st.dependent_passes == 1 + levels + 1 + 5 * per + 1, "%d passes",
                  (int)st.dependent_passes);
      }
    }
    column_free(&c);
  }
}
