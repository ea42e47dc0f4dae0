/* The shared math compiled in float on the host (PIOLA_SHARED_FLOAT), as the kernels run it:
 * the float pitfalls of 3x3 SVDs (identity with noise, repeated values, scaled rotations,
 * reflections), the rounding behaviour of Neo-Hookean near rest, and the cloth constraints at
 * rest under rounding. */
#define PIOLA_SHARED_FLOAT 1
#include "piola_cloth.h"
#include "piola_test.h"
#include "piola_tet.h"

static float maxdiff(piola_m3 a, piola_m3 b) {
  float d = 0.0f;
  for (int i = 0; i < 9; ++i) {
    d = fmaxf(d, fabsf(a.m[i] - b.m[i]));
  }
  return d;
}

static piola_m3 rotation_about(piola_v3 axis, float angle) {
  float l = piola_v3_length(axis);
  piola_v3 a = piola_v3_scale(axis, 1.0f / l);
  float c = cosf(angle), s = sinf(angle), k = 1.0f - c;
  piola_m3 r;
  r.m[0] = c + a.x * a.x * k;
  r.m[1] = a.x * a.y * k - a.z * s;
  r.m[2] = a.x * a.z * k + a.y * s;
  r.m[3] = a.y * a.x * k + a.z * s;
  r.m[4] = c + a.y * a.y * k;
  r.m[5] = a.y * a.z * k - a.x * s;
  r.m[6] = a.z * a.x * k - a.y * s;
  r.m[7] = a.z * a.y * k + a.x * s;
  r.m[8] = c + a.z * a.z * k;
  return r;
}

static void check_float_svd(piola_test *t, const char *label, piola_m3 a) {
  piola_svd3 d = piola_svd3_compute(a);
  float scale = sqrtf(piola_m3_frobenius2(a)) + 1e-30f;
  CHECK_MSG(t, isfinite(d.s.x) && isfinite(d.s.y) && isfinite(d.s.z), "%s: non-finite", label);
  CHECK_MSG(t, maxdiff(piola_m3_mul_at(d.u, d.u), piola_m3_identity()) < 2e-6f,
            "%s: U not orthonormal", label);
  CHECK_MSG(t, maxdiff(piola_m3_mul_at(d.v, d.v), piola_m3_identity()) < 2e-6f,
            "%s: V not orthonormal", label);
  float err = maxdiff(piola_svd3_compose(d.u, d.s, d.v), a);
  CHECK_MSG(t, err < 4e-6f * scale, "%s: reconstruction error %g (scale %g)", label, (double)err,
            (double)scale);
  CHECK_MSG(t, d.s.x >= d.s.y - 1e-5f * scale && d.s.y >= fabsf(d.s.z) - 1e-5f * scale,
            "%s: order %g %g %g", label, (double)d.s.x, (double)d.s.y, (double)d.s.z);
}

void test_float_svd_hard_cases(piola_test *t) {
  uint64_t rng = 42;
  char label[64];
  for (int trial = 0; trial < 500; ++trial) {
    piola_m3 r =
        rotation_about(piola_v3_make((float)piola_test_rand(&rng), (float)piola_test_rand(&rng),
                                     (float)piola_test_rand(&rng) + 1.5f),
                       3.0f * (float)piola_test_rand(&rng));
    piola_m3 noisy = piola_m3_identity();
    for (int i = 0; i < 9; ++i) {
      noisy.m[i] += 1e-7f * (float)piola_test_rand(&rng);
    }
    snprintf(label, sizeof label, "identity + noise %d", trial);
    check_float_svd(t, label, noisy);
    snprintf(label, sizeof label, "rotated identity + noise %d", trial);
    check_float_svd(t, label, piola_m3_mul(r, noisy));
    snprintf(label, sizeof label, "scaled rotation %d", trial);
    check_float_svd(t, label, piola_m3_scale(r, 2.5f));
    piola_m3 d221 = piola_m3_identity();
    d221.m[0] = 2.0f;
    d221.m[4] = 2.0f;
    snprintf(label, sizeof label, "rotated diag(2,2,1) %d", trial);
    check_float_svd(t, label, piola_m3_mul(r, d221));
    piola_m3 refl = piola_m3_identity();
    refl.m[8] = -1.0f;
    snprintf(label, sizeof label, "rotated reflection %d", trial);
    piola_m3 a = piola_m3_mul(r, refl);
    check_float_svd(t, label, a);
    CHECK(t, piola_svd3_compute(a).s.z < 0.0f);
    piola_m3 flat = piola_m3_identity();
    flat.m[8] = 1e-8f;
    snprintf(label, sizeof label, "nearly flat %d", trial);
    check_float_svd(t, label, piola_m3_mul(r, flat));
  }
  /* Exactly diag(2, 2, 1): the case that gives NaN with 1/(s_i^2 - s_j^2) formulas. */
  piola_m3 d = piola_m3_identity();
  d.m[0] = 2.0f;
  d.m[4] = 2.0f;
  piola_svd3 s = piola_svd3_compute(d);
  CHECK(t, s.s.x == 2.0f && s.s.y == 2.0f && s.s.z == 1.0f);
}

void test_float_neohookean_rest_noise(piola_test *t) {
  /* A rigidly rotated tet, rounded to float: energy must stay second order in the rounding
   * (about 1e-13), not first order (1e-7), or PBD projections turn it into jitter. */
  piola_tet_material m;
  m.mu = 1.0f / 2.6f;
  m.lambda = 0.3f / (1.3f * 0.4f);
  m.compliance = 1e-6f;
  m.model = PIOLA_TET_MODEL_NEOHOOKEAN;
  m.solver = PIOLA_TET_SOLVER_PBD;
  m.inversion = PIOLA_TET_INVERSION_ON;
  m.damping = 0.0f;
  uint64_t rng = 9;
  float worst = 0.0f;
  for (int trial = 0; trial < 1000; ++trial) {
    piola_m3 r = rotation_about(
        piola_v3_make((float)piola_test_rand(&rng), 1.0f, (float)piola_test_rand(&rng)),
        3.0f * (float)piola_test_rand(&rng));
    piola_m3 p;
    int svd;
    float psi = piola_energy_and_stress(&m, r, &p, &svd);
    worst = fmaxf(worst, fabsf(psi));
  }
  CHECK_MSG(t, worst < 1e-11f, "energy of a rotation in float: %g", (double)worst);
  /* The projection of such a tet does nothing. */
  piola_v3 x0 = piola_v3_make(0, 0, 0), x1 = piola_v3_make(1, 0, 0), x2 = piola_v3_make(0, 1, 0),
           x3 = piola_v3_make(0, 0, 1);
  float lambda = 0.0f;
  int flags = piola_tet_project(&m, piola_m3_identity(), 1.0f / 6.0f, 0.0f, &x0, &x1, &x2, &x3, 1,
                                1, 1, 1, &lambda);
  CHECK(t, !(flags & PIOLA_TET_WORKED));
}

void test_float_cloth_rest_noise(piola_test *t) {
  /* Rigidly moved rest triangles and flat bending stencils, rounded to float: the rounding
   * stays below the constraints' energy thresholds (membrane: second order in the strain
   * noise; bending: the hinge sum K_i (x_i - x0) is taken on differences), so the projections
   * do nothing. */
  piola_cloth_tri_material m;
  REQUIRE(
      t, piola_cloth_tri_material_make(2000.0f, 1000.0f, 150.0f, 0.3f, PIOLA_CLOTH_SOLVER_PBD, &m));
  piola_cloth_bend_material b;
  REQUIRE(t, piola_cloth_bend_material_make(1e-4f, PIOLA_CLOTH_SOLVER_PBD, &b));
  const piola_v3 tri[3] = {piola_v3_make(0, 0, 0), piola_v3_make(1.0f, 0, 0),
                           piola_v3_make(0.3f, 0.9f, 0)};
  const piola_v3 hinge[4] = {piola_v3_make(0, 0, 0), piola_v3_make(1.0f, 0, 0),
                             piola_v3_make(0.4f, 0.8f, 0), piola_v3_make(0.6f, -0.9f, 0)};
  piola_m2 dm_inv;
  float area;
  piola_cloth_bend_rest rest;
  REQUIRE(t, piola_cloth_tri_init(tri[0], tri[1], tri[2], &dm_inv, &area));
  REQUIRE(t, piola_cloth_bend_init(hinge[0], hinge[1], hinge[2], hinge[3], &rest));
  CHECK(t, rest.rest == 0.0f);
  uint64_t rng = 77;
  int worked = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    piola_m3 r = rotation_about(
        piola_v3_make((float)piola_test_rand(&rng), 1.0f, (float)piola_test_rand(&rng)),
        3.0f * (float)piola_test_rand(&rng));
    piola_v3 shift = piola_v3_make(0.5f * (float)piola_test_rand(&rng),
                                   0.5f * (float)piola_test_rand(&rng), 0.0f);
    piola_v3 x[4];
    for (int a = 0; a < 4; ++a) {
      piola_v3 p = a < 3 ? tri[a] : hinge[3];
      x[a] = piola_v3_add(piola_v3_make(r.m[0] * p.x + r.m[1] * p.y + r.m[2] * p.z,
                                        r.m[3] * p.x + r.m[4] * p.y + r.m[5] * p.z,
                                        r.m[6] * p.x + r.m[7] * p.y + r.m[8] * p.z),
                          shift);
    }
    float lambda = 0.0f;
    piola_v3 dx[4];
    worked += piola_cloth_tri_correction(&m, dm_inv, area, 0.0f, 0.0f, x[0], x[1], x[2], 0, 1, 1, 1,
                                         &lambda, dx);
    for (int a = 0; a < 4; ++a) {
      piola_v3 p = hinge[a];
      x[a] = piola_v3_add(piola_v3_make(r.m[0] * p.x + r.m[1] * p.y + r.m[2] * p.z,
                                        r.m[3] * p.x + r.m[4] * p.y + r.m[5] * p.z,
                                        r.m[6] * p.x + r.m[7] * p.y + r.m[8] * p.z),
                          shift);
    }
    worked += piola_cloth_bend_correction(&b, &rest, 0.0f, 0.0f, x[0], x[1], x[2], x[3], 0, 1, 1, 1,
                                          1, &lambda, dx);
    CHECK(t, lambda == 0.0f);
  }
  CHECK_MSG(t, worked == 0, "%d projections worked on rounding noise", worked);
}
