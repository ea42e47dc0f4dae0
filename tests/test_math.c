/* Tests of the shared constraint math in double precision (the CPU reference's build of
 * kernels/piola_tet.h and kernels/piola_svd.h): SVD on hard cases, stresses and gradients
 * against finite differences, the inversion clamp, plastic flow. */
#include "piola_test.h"
#include "piola_tet.h"

#include <string.h>

static piola_m3 m3_from(const double a[9]) {
  piola_m3 m;
  memcpy(m.m, a, sizeof m.m);
  return m;
}

static piola_m3 random_rotation(uint64_t *rng) {
  /* Gram-Schmidt of two random vectors, third by cross product: det = +1. */
  piola_v3 a = piola_v3_make(piola_test_rand(rng), piola_test_rand(rng), piola_test_rand(rng));
  piola_v3 b = piola_v3_make(piola_test_rand(rng), piola_test_rand(rng), piola_test_rand(rng));
  a = piola_v3_scale(a, 1.0 / piola_v3_length(a));
  b = piola_v3_sub(b, piola_v3_scale(a, piola_v3_dot(a, b)));
  b = piola_v3_scale(b, 1.0 / piola_v3_length(b));
  return piola_m3_from_columns(a, b, piola_v3_cross(a, b));
}

static double max_abs_diff(piola_m3 a, piola_m3 b) {
  double d = 0.0;
  for (int i = 0; i < 9; ++i) {
    d = fmax(d, fabs(a.m[i] - b.m[i]));
  }
  return d;
}

/* Checks every property the solver relies on; `expected` (may be NULL) are the singular
 * values with sign. */
static void check_svd(piola_test *t, const char *label, piola_m3 a, const double *expected) {
  piola_svd3 d = piola_svd3_compute(a);
  double scale = sqrt(piola_m3_frobenius2(a)) + 1e-300;
  piola_m3 utu = piola_m3_mul_at(d.u, d.u), vtv = piola_m3_mul_at(d.v, d.v);
  CHECK_MSG(t, max_abs_diff(utu, piola_m3_identity()) < 1e-12, "%s: U not orthonormal", label);
  CHECK_MSG(t, max_abs_diff(vtv, piola_m3_identity()) < 1e-12, "%s: V not orthonormal", label);
  CHECK_MSG(t, fabs(piola_m3_det(d.u) - 1.0) < 1e-12, "%s: det U = %g", label, piola_m3_det(d.u));
  CHECK_MSG(t, fabs(piola_m3_det(d.v) - 1.0) < 1e-12, "%s: det V = %g", label, piola_m3_det(d.v));
  double err = max_abs_diff(piola_svd3_compose(d.u, d.s, d.v), a);
  CHECK_MSG(t, err <= 1e-12 * (scale > 1e-300 ? scale : 1.0) + 1e-300,
            "%s: reconstruction error %g", label, err);
  /* Ordered up to rounding (repeated values may swap by an ulp). */
  double tol = 1e-13 * (scale > 0.0 ? scale : 1.0);
  CHECK_MSG(t, d.s.x >= d.s.y - tol && d.s.y >= fabs(d.s.z) - tol && d.s.y >= -tol,
            "%s: singular values not ordered: %.17g %.17g %.17g", label, d.s.x, d.s.y, d.s.z);
  double det = piola_m3_det(a);
  if (fabs(det) > 1e-9 * scale * scale * scale) {
    CHECK_MSG(t, (d.s.z < 0.0) == (det < 0.0), "%s: sign of sigma_3 (%g) vs det (%g)", label, d.s.z,
              det);
  }
  CHECK_MSG(t, isfinite(d.s.x) && isfinite(d.s.y) && isfinite(d.s.z), "%s: non-finite", label);
  if (expected != NULL) {
    CHECK_MSG(t,
              fabs(d.s.x - expected[0]) < 1e-12 * (1 + scale) &&
                  fabs(d.s.y - expected[1]) < 1e-12 * (1 + scale) &&
                  fabs(d.s.z - expected[2]) < 1e-12 * (1 + scale),
              "%s: sigma = (%.17g %.17g %.17g), expected (%g %g %g)", label, d.s.x, d.s.y, d.s.z,
              expected[0], expected[1], expected[2]);
  }
}

void test_svd_hard_cases(piola_test *t) {
  uint64_t rng = 0x1234567u;
  const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  const double ones[3] = {1, 1, 1};
  check_svd(t, "identity", m3_from(id), ones);
  piola_m3 noisy = m3_from(id);
  for (int i = 0; i < 9; ++i) {
    noisy.m[i] += 1e-7 * piola_test_rand(&rng);
  }
  check_svd(t, "identity + 1e-7 noise", noisy, NULL);
  const double d221[9] = {2, 0, 0, 0, 2, 0, 0, 0, 1};
  const double e221[3] = {2, 2, 1};
  check_svd(t, "diag(2,2,1)", m3_from(d221), e221);
  const double d122[9] = {1, 0, 0, 0, 2, 0, 0, 0, 2};
  check_svd(t, "diag(1,2,2)", m3_from(d122), e221);
  const double refl[9] = {1, 0, 0, 0, 1, 0, 0, 0, -1};
  const double erefl[3] = {1, 1, -1};
  check_svd(t, "reflection", m3_from(refl), erefl);
  const double zero[9] = {0};
  const double ezero[3] = {0, 0, 0};
  check_svd(t, "zero", m3_from(zero), ezero);
  const double flat[9] = {1, 0, 0, 0, 1, 0, 0, 0, 0};
  const double eflat[3] = {1, 1, 0};
  check_svd(t, "rank 2 (flattened)", m3_from(flat), eflat);
  for (int trial = 0; trial < 200; ++trial) {
    piola_m3 r1 = random_rotation(&rng), r2 = random_rotation(&rng);
    double s[3] = {2.5, 2.5, 2.5};
    char label[64];
    snprintf(label, sizeof label, "scaled rotation %d", trial);
    piola_m3 sr = piola_m3_scale(r1, 2.5);
    check_svd(t, label, sr, s);
    /* Repeated, rank-deficient and reflected spectra between random rotations. */
    const double spectra[6][3] = {{3, 3, 1}, {2, 1, 1},    {1, 1, 1e-9},
                                  {4, 0, 0}, {2, 2, -0.5}, {1.5, 0.7, -0.2}};
    for (int k = 0; k < 6; ++k) {
      piola_m3 a =
          piola_svd3_compose(r1, piola_v3_make(spectra[k][0], spectra[k][1], spectra[k][2]), r2);
      snprintf(label, sizeof label, "spectrum %d, trial %d", k, trial);
      check_svd(t, label, a, spectra[k]);
    }
    piola_m3 g;
    for (int i = 0; i < 9; ++i) {
      g.m[i] = piola_test_rand(&rng) * 3.0;
    }
    snprintf(label, sizeof label, "random %d", trial);
    check_svd(t, label, g, NULL);
  }
}

void test_sym_eigen(piola_test *t) {
  uint64_t rng = 99;
  for (int trial = 0; trial < 100; ++trial) {
    piola_m3 r = random_rotation(&rng);
    piola_v3 l = piola_v3_make(1.0 + piola_test_rand(&rng), 2.0, trial % 2 ? 2.0 : 0.5);
    piola_m3 a = piola_svd3_compose(r, l, r);
    piola_m3 q;
    piola_v3 e;
    piola_sym_eigen(a, &q, &e);
    CHECK(t, max_abs_diff(piola_svd3_compose(q, e, q), a) < 1e-12);
    CHECK(t, fabs(piola_m3_det(q) - 1.0) < 1e-12);
  }
}

/* Psi and P at F for a material with the given model and inversion mode. */
static piola_tet_material material(int model, int inversion, double nu) {
  piola_tet_material m;
  m.mu = 1.0 / (2.0 * (1.0 + nu));
  m.lambda = nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
  m.compliance = 1e-5;
  m.model = model;
  m.solver = PIOLA_TET_SOLVER_XPBD;
  m.inversion = inversion;
  m.damping = 0.0;
  return m;
}

static double energy_at(const piola_tet_material *m, piola_m3 f) {
  piola_m3 p;
  int svd;
  return piola_energy_and_stress(m, f, &p, &svd);
}

/* P against central differences of Psi; returns the largest relative error. */
static double stress_fd_error(const piola_tet_material *m, piola_m3 f) {
  piola_m3 p;
  int svd;
  piola_energy_and_stress(m, f, &p, &svd);
  double err = 0.0, scale = sqrt(piola_m3_frobenius2(p)) + 1e-3;
  const double h = 1e-6;
  for (int i = 0; i < 9; ++i) {
    piola_m3 fp = f, fm = f;
    fp.m[i] += h;
    fm.m[i] -= h;
    double fd = (energy_at(m, fp) - energy_at(m, fm)) / (2 * h);
    err = fmax(err, fabs(fd - p.m[i]) / scale);
  }
  return err;
}

void test_stress_finite_differences(piola_test *t) {
  uint64_t rng = 7;
  const int modes[3] = {PIOLA_TET_INVERSION_OFF, PIOLA_TET_INVERSION_ON,
                        PIOLA_TET_INVERSION_ALWAYS};
  for (int model = 0; model < 2; ++model) {
    for (int mode = 0; mode < 3; ++mode) {
      piola_tet_material m = material(model, modes[mode], 0.3);
      for (int trial = 0; trial < 100; ++trial) {
        /* Moderate deformations with det > 0 away from the clamp. */
        piola_m3 r1 = random_rotation(&rng), r2 = random_rotation(&rng);
        piola_v3 s =
            piola_v3_make(1.0 + 0.3 * piola_test_rand(&rng), 1.0 + 0.3 * piola_test_rand(&rng),
                          1.0 + 0.3 * piola_test_rand(&rng));
        piola_m3 f = piola_svd3_compose(r1, s, r2);
        double e = stress_fd_error(&m, f);
        CHECK_MSG(t, e < 1e-7, "model %d mode %d trial %d: |P - dPsi/dF| / |P| = %g", model,
                  modes[mode], trial, e);
        if (modes[mode] != PIOLA_TET_INVERSION_OFF) {
          /* Strongly compressed and inverted: the clamped energy and its stress. Keep the
           * singular values apart from the clamp and from each other so that the finite
           * difference does not straddle a kink of the piecewise definition. */
          piola_v3 sc =
              piola_v3_make(1.3 + 0.2 * piola_test_rand(&rng), 0.9, trial % 2 ? -0.4 : 0.3);
          piola_m3 fc = piola_svd3_compose(r1, sc, r2);
          e = stress_fd_error(&m, fc);
          CHECK_MSG(t, e < 1e-7, "model %d mode %d clamped trial %d: relative error %g", model,
                    modes[mode], trial, e);
        }
      }
    }
  }
}

void test_svd_path_matches_plain_path(piola_test *t) {
  /* Where no stretch is below the clamp, the SVD path is the same function. */
  uint64_t rng = 11;
  for (int model = 0; model < 2; ++model) {
    piola_tet_material off = material(model, PIOLA_TET_INVERSION_OFF, 0.35);
    piola_tet_material always = material(model, PIOLA_TET_INVERSION_ALWAYS, 0.35);
    for (int trial = 0; trial < 200; ++trial) {
      piola_m3 f = piola_svd3_compose(random_rotation(&rng),
                                      piola_v3_make(1.0 + 0.4 * piola_test_rand(&rng),
                                                    1.0 + 0.4 * piola_test_rand(&rng),
                                                    0.6 + 0.01 * (trial % 10)),
                                      random_rotation(&rng));
      piola_m3 p1, p2;
      int svd1, svd2;
      double e1 = piola_energy_and_stress(&off, f, &p1, &svd1);
      double e2 = piola_energy_and_stress(&always, f, &p2, &svd2);
      CHECK(t, !svd1 && svd2);
      CHECK_NEAR(t, e1, e2, 1e-12 * (1 + fabs(e1)));
      CHECK_MSG(t, max_abs_diff(p1, p2) < 1e-11, "model %d trial %d: |dP| = %g", model, trial,
                max_abs_diff(p1, p2));
    }
  }
}

void test_inversion_trigger_is_exact(piola_test *t) {
  /* piola_may_need_clamp() false must imply every singular value >= the clamp. */
  uint64_t rng = 5;
  int false_count = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    piola_m3 f;
    for (int i = 0; i < 9; ++i) {
      f.m[i] = (i % 4 == 0 ? 1.0 : 0.0) + 0.6 * piola_test_rand(&rng);
    }
    if (!piola_may_need_clamp(f)) {
      false_count++;
      piola_svd3 d = piola_svd3_compute(f);
      CHECK_MSG(t, d.s.z >= PIOLA_CLAMP_STRETCH - 1e-12, "trial %d: sigma_3 = %g", trial, d.s.z);
    }
  }
  CHECK_MSG(t, false_count > 1000, "the fast path was taken only %d times", false_count);
  CHECK(t, !piola_may_need_clamp(piola_m3_identity()));
}

void test_clamp_behaviour(piola_test *t) {
  /* Uniaxial compression along one axis: stress of StVK is held below the clamp, Neo-Hookean
   * keeps growing; both push outward (negative P^) down to and past zero volume. */
  piola_tet_material stvk = material(PIOLA_TET_MODEL_STVK, PIOLA_TET_INVERSION_ON, 0.3);
  piola_tet_material nh = material(PIOLA_TET_MODEL_NEOHOOKEAN, PIOLA_TET_INVERSION_ON, 0.3);
  piola_v3 p_at_clamp, p_hat;
  piola_principal_energy_clamped(&stvk, piola_v3_make(1, 1, PIOLA_CLAMP_STRETCH), &p_at_clamp);
  double prev_nh = 0.0;
  for (int i = 0; i <= 20; ++i) {
    double s3 = 0.5 - 0.05 * i; /* 0.5 .. -0.5 */
    double psi = piola_principal_energy_clamped(&stvk, piola_v3_make(1, 1, s3), &p_hat);
    CHECK_NEAR(t, p_hat.z, p_at_clamp.z, 1e-14);
    CHECK(t, p_hat.z < 0.0 && psi > 0.0);
    double psi_nh = piola_principal_energy_clamped(&nh, piola_v3_make(1, 1, s3), &p_hat);
    CHECK_MSG(t, p_hat.z < prev_nh, "Neo-Hookean stress must keep growing under compression");
    prev_nh = p_hat.z;
    CHECK(t, psi_nh > 0.0 && isfinite(psi_nh));
  }
  /* Inverted F: energy finite, positive, and the SVD path taken. */
  piola_m3 inv = piola_m3_identity();
  inv.m[8] = -0.5;
  piola_m3 p;
  int svd;
  double e = piola_energy_and_stress(&nh, inv, &p, &svd);
  CHECK(t, svd && e > 0.0 && isfinite(e));
  /* With inversion handling off, Neo-Hookean is undefined there and says so. */
  piola_tet_material nh_off = material(PIOLA_TET_MODEL_NEOHOOKEAN, PIOLA_TET_INVERSION_OFF, 0.3);
  CHECK(t, piola_energy_and_stress(&nh_off, inv, &p, &svd) < 0.0);
}

/* Tet energy and its vertex gradients (through one projection's direction) vs differences. */
void test_tet_gradient_finite_differences(piola_test *t) {
  uint64_t rng = 3;
  for (int model = 0; model < 2; ++model) {
    piola_tet_material m = material(model, PIOLA_TET_INVERSION_ON, 0.3);
    for (int trial = 0; trial < 50; ++trial) {
      piola_v3 rest[4] = {piola_v3_make(0, 0, 0), piola_v3_make(1, 0, 0), piola_v3_make(0, 1, 0),
                          piola_v3_make(0, 0, 1)};
      piola_m3 dm = piola_m3_from_columns(rest[1], rest[2], rest[3]);
      piola_m3 dm_inv =
          piola_m3_scale(piola_m3_transpose(piola_m3_cofactor(dm)), 1.0 / piola_m3_det(dm));
      double vol = piola_m3_det(dm) / 6.0;
      piola_v3 x[4];
      for (int a = 0; a < 4; ++a) {
        x[a] = piola_v3_add(rest[a],
                            piola_v3_make(0.2 * piola_test_rand(&rng), 0.2 * piola_test_rand(&rng),
                                          0.2 * piola_test_rand(&rng)));
      }
      /* Gradient as used by the projection: g = V P M^T, g0 = -(g1 + g2 + g3). */
      piola_m3 p;
      int svd;
      piola_energy_and_stress(&m, piola_tet_deformation(x[0], x[1], x[2], x[3], dm_inv), &p, &svd);
      piola_m3 hm = piola_m3_scale(piola_m3_mul_bt(p, dm_inv), vol);
      piola_v3 g[4];
      g[1] = piola_m3_column(hm, 0);
      g[2] = piola_m3_column(hm, 1);
      g[3] = piola_m3_column(hm, 2);
      g[0] = piola_v3_scale(piola_v3_add(piola_v3_add(g[1], g[2]), g[3]), -1.0);
      const double h = 1e-6;
      for (int a = 0; a < 4; ++a) {
        double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
        double gv[3] = {g[a].x, g[a].y, g[a].z};
        for (int c = 0; c < 3; ++c) {
          double keep = *comp[c];
          *comp[c] = keep + h;
          double ep = piola_tet_energy(&m, dm_inv, vol, x[0], x[1], x[2], x[3]);
          *comp[c] = keep - h;
          double em = piola_tet_energy(&m, dm_inv, vol, x[0], x[1], x[2], x[3]);
          *comp[c] = keep;
          CHECK_NEAR(t, (ep - em) / (2 * h), gv[c], 1e-7);
        }
      }
    }
  }
}

/* One projection of a tet stretched by moving one free vertex (the others pinned, so the
 * stretch is an eigen-direction of the projection): the XPBD form (C = sqrt(2U), linear in the
 * stretch) removes it in one Newton step, the paper's PBD form (C = U, quadratic) halves it, so
 * its energy drops to a quarter; a large compliance makes the XPBD step partial. In all cases
 * the XPBD update satisfies its linearised equation C + grad C . dx + alpha~ lambda = 0. */
void test_projection_reduces_constraint(piola_test *t) {
  piola_v3 rest[4] = {piola_v3_make(0, 0, 0), piola_v3_make(1, 0, 0), piola_v3_make(0, 1, 0),
                      piola_v3_make(0, 0, 1)};
  piola_m3 dm_inv = piola_m3_identity();
  double vol = 1.0 / 6.0;
  for (int model = 0; model < 2; ++model) {
    for (int form = 0; form < 3; ++form) {
      piola_tet_material m = material(model, PIOLA_TET_INVERSION_ON, 0.3);
      m.solver = form == 0 ? PIOLA_TET_SOLVER_PBD : PIOLA_TET_SOLVER_XPBD;
      double alpha_tilde = form == 1 ? 1e-12 : form == 2 ? 1.0 : 0.0;
      piola_v3 x[4] = {rest[0], piola_v3_make(1.001, 0, 0), rest[2], rest[3]};
      double u0 = piola_tet_energy(&m, dm_inv, vol, x[0], x[1], x[2], x[3]);
      double lambda = 0.0;
      piola_v3 before = x[1];
      int flags = piola_tet_project(&m, dm_inv, vol, alpha_tilde, &x[0], &x[1], &x[2], &x[3], 0.0,
                                    2.0, 0.0, 0.0, &lambda);
      double u1 = piola_tet_energy(&m, dm_inv, vol, x[0], x[1], x[2], x[3]);
      CHECK(t, (flags & PIOLA_TET_WORKED) != 0 && lambda != 0.0);
      CHECK(t, x[0].x == 0.0 && x[2].y == 1.0 && x[3].z == 1.0); /* pinned stay */
      if (form == 0) {
        CHECK_MSG(t, fabs(u1 / u0 - 0.25) < 0.01, "model %d PBD: U %g -> %g (ratio %g)", model, u0,
                  u1, u1 / u0);
      } else if (form == 1) {
        CHECK_MSG(t, u1 < 1e-4 * u0, "model %d XPBD: U %g -> %g", model, u0, u1);
      } else {
        CHECK_MSG(t, u1 < u0 && u1 > 0.01 * u0, "model %d compliant: U %g -> %g", model, u0, u1);
        /* Linearised XPBD equation with C = sqrt(2U): C + dC/dx . dx + alpha~ lambda = 0. */
        double c0 = sqrt(2.0 * u0);
        double dudx = 0.0, h = 1e-7;
        piola_v3 xp = before, xm = before;
        xp.x += h;
        xm.x -= h;
        dudx = (piola_tet_energy(&m, dm_inv, vol, rest[0], xp, rest[2], rest[3]) -
                piola_tet_energy(&m, dm_inv, vol, rest[0], xm, rest[2], rest[3])) /
               (2 * h);
        double residual = c0 + dudx / c0 * (x[1].x - before.x) + alpha_tilde * lambda;
        CHECK_MSG(t, fabs(residual) < 1e-6 * c0, "model %d: XPBD residual %g (C = %g)", model,
                  residual, c0);
      }
    }
  }
}

void test_projection_skips_rest_and_pinned(piola_test *t) {
  piola_tet_material m = material(PIOLA_TET_MODEL_NEOHOOKEAN, PIOLA_TET_INVERSION_ON, 0.3);
  piola_v3 x[4] = {piola_v3_make(0, 0, 0), piola_v3_make(1, 0, 0), piola_v3_make(0, 1, 0),
                   piola_v3_make(0, 0, 1)};
  piola_m3 dm_inv = piola_m3_identity();
  double lambda = 0.0;
  int flags = piola_tet_project(&m, dm_inv, 1.0 / 6.0, 1e-3, &x[0], &x[1], &x[2], &x[3], 1, 1, 1, 1,
                                &lambda);
  CHECK(t, !(flags & PIOLA_TET_WORKED) && lambda == 0.0);
  x[1].x = 1.5;
  flags = piola_tet_project(&m, dm_inv, 1.0 / 6.0, 1e-3, &x[0], &x[1], &x[2], &x[3], 0, 0, 0, 0,
                            &lambda);
  CHECK(t, !(flags & PIOLA_TET_WORKED) && x[1].x == 1.5);
}

/* Corners resting on a collider (piola_tet_support): a tet lying on the ground (corners 0, 1
 * and 3 on y = 0) squashed from above. Free, its projection pushes the base corners down; with
 * the base supported by the ground (normal +y) none moves down, the motion held back is
 * recorded, the momentum of the correction counting the held motion is zero (as a free
 * projection's is), the tangential momentum is zero, and the energy still drops. A top corner
 * supported by the same normal moves up freely (nothing held). No support and four zero normals
 * give the same correction, bitwise. */
void test_projection_supported_corner(piola_test *t) {
  piola_tet_material m = material(PIOLA_TET_MODEL_NEOHOOKEAN, PIOLA_TET_INVERSION_ON, 0.3);
  m.split = 1;
  const piola_m3 dm_inv = piola_m3_identity(); /* rest: (0,0,0), (1,0,0), (0,1,0), (0,0,1) */
  const piola_v3 x[4] = {piola_v3_make(0, 0, 0), piola_v3_make(1, 0, 0),
                         piola_v3_make(0.1, 0.5, 0.05), piola_v3_make(0, 0, 1)};
  const double alpha = 1e-3, volume = 1.0 / 6.0;
  const piola_v3 up = piola_v3_make(0, 1, 0), zero = piola_v3_make(0, 0, 0);
  double l_free[2] = {0, 0}, l_zero[2] = {0, 0}, l_held[2] = {0, 0};
  piola_v3 d_free[4], d_zero[4], d_held[4];
  int f_free = piola_tet_solve(&m, dm_inv, volume, alpha, 0.0, x[0], x[1], x[2], x[3], NULL, 1, 1,
                               1, 1, NULL, l_free, d_free);
  piola_tet_support none = piola_tet_support_none();
  int f_zero = piola_tet_solve(&m, dm_inv, volume, alpha, 0.0, x[0], x[1], x[2], x[3], NULL, 1, 1,
                               1, 1, &none, l_zero, d_zero);
  CHECK(t, (f_free & PIOLA_TET_WORKED) && f_zero == f_free);
  CHECK(t, l_free[0] == l_zero[0] && l_free[1] == l_zero[1]);
  for (int k = 0; k < 4; ++k) {
    CHECK(t, d_free[k].x == d_zero[k].x && d_free[k].y == d_zero[k].y &&
                 d_free[k].z == d_zero[k].z && none.held[k] == 0.0);
  }
  CHECK_MSG(t, d_free[0].y < 0.0 && d_free[1].y < 0.0 && d_free[3].y < 0.0,
            "free: the base corners move by %g %g %g along y", d_free[0].y, d_free[1].y,
            d_free[3].y);
  piola_tet_support ground = piola_tet_support_none();
  ground.normal[0] = ground.normal[1] = ground.normal[2] = ground.normal[3] = up;
  int f_held = piola_tet_solve(&m, dm_inv, volume, alpha, 0.0, x[0], x[1], x[2], x[3], NULL, 1, 1,
                               1, 1, &ground, l_held, d_held);
  CHECK(t, f_held & PIOLA_TET_WORKED);
  piola_v3 momentum = zero, moved[4];
  for (int k = 0; k < 4; ++k) {
    CHECK_MSG(t, d_held[k].y >= -1e-15 && ground.held[k] >= 0.0,
              "corner %d: moves %g along y, held %g", k, d_held[k].y, ground.held[k]);
    momentum = piola_v3_add(momentum, piola_v3_sub(d_held[k], piola_v3_scale(up, ground.held[k])));
    moved[k] = piola_v3_add(x[k], d_held[k]);
  }
  CHECK(t, ground.held[0] > 0.0 && ground.held[1] > 0.0 && ground.held[3] > 0.0);
  CHECK_MSG(t, ground.held[2] == 0.0 && d_held[2].y > 0.0, "top corner: held %g, moves %g",
            ground.held[2], d_held[2].y);
  CHECK_MSG(t, piola_v3_length(momentum) < 1e-12, "momentum with the held motion %g",
            piola_v3_length(momentum));
  const double before = piola_tet_energy(&m, dm_inv, volume, x[0], x[1], x[2], x[3]);
  const double after = piola_tet_energy(&m, dm_inv, volume, moved[0], moved[1], moved[2], moved[3]);
  CHECK_MSG(t, after < before, "energy %g -> %g", before, after);
}

void test_plastic_update(piola_test *t) {
  /* Pure shear beyond yield: plastic strain grows towards the deviatoric elastic strain, is
   * capped, and the effective M makes F_e smaller than F. */
  piola_m3 dm_inv = piola_m3_identity();
  piola_m3 f = piola_m3_identity();
  f.m[1] = 0.6; /* shear */
  piola_sym3 eps = {0, 0, 0, 0, 0, 0};
  piola_m3 m_eff;
  CHECK(t, piola_plastic_update(f, &eps, 0.1, 0.5, 0.2, dm_inv, &m_eff) == 1);
  CHECK(t, eps.xy > 0.0);
  CHECK(t, sqrt(piola_sym3_frobenius2(eps)) <= 0.2 + 1e-12);
  piola_m3 fe = piola_m3_mul(f, piola_m3_mul(piola_m3_identity(), m_eff));
  piola_sym3 e_total = piola_green_strain(f), e_el = piola_green_strain(fe);
  CHECK(t, piola_sym3_frobenius2(e_el) < piola_sym3_frobenius2(e_total));
  /* (F_p^T F_p - I) / 2 = eps_p, with F_p = (M_eff)^-1 here (Dm^-1 = I). */
  piola_m3 fp =
      piola_m3_scale(piola_m3_transpose(piola_m3_cofactor(m_eff)), 1.0 / piola_m3_det(m_eff));
  piola_sym3 ep = piola_green_strain(fp);
  CHECK_NEAR(t, ep.xy, eps.xy, 1e-12);
  CHECK_NEAR(t, ep.xx, eps.xx, 1e-12);
  /* Below yield nothing flows. */
  piola_sym3 eps0 = {0, 0, 0, 0, 0, 0};
  piola_m3 small = piola_m3_identity();
  small.m[1] = 0.01;
  CHECK(t, piola_plastic_update(small, &eps0, 0.1, 0.5, 0.2, dm_inv, &m_eff) == 0);
  CHECK(t, eps0.xy == 0.0);
  /* Pure volume change is not deviatoric: no flow even when large. */
  piola_m3 grow = piola_m3_scale(piola_m3_identity(), 1.3);
  CHECK(t, piola_plastic_update(grow, &eps0, 0.1, 0.5, 0.2, dm_inv, &m_eff) == 0);
}
