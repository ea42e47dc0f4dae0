/* Tests of the cloth constraint math in double precision (the CPU reference's build of
 * kernels/piola_cloth.h): orthotropic StVK membranes (gradients against finite differences,
 * rest and rigid motions, weft and warp moduli, Poisson's ratio, shear, the uv frame, degenerate
 * triangles, projections) and isometric bending (gradients, flat and curved rest states, the
 * mapping to the plate bending stiffness on a cylinder, projections). */
#include "piola_cloth.h"
#include "piola_test.h"

#include <float.h>
#include <stdlib.h>

static const double PI = 3.14159265358979323846;

static piola_v3 v3_rand(uint64_t *rng, double scale) {
  return piola_v3_make(scale * piola_test_rand(rng), scale * piola_test_rand(rng),
                       scale * piola_test_rand(rng));
}

/* Rodrigues' rotation about a random axis by a random angle. */
static piola_m3 random_rotation(uint64_t *rng) {
  piola_v3 a = v3_rand(rng, 1.0);
  a = piola_v3_scale(a, 1.0 / piola_v3_length(a));
  double angle = 3.0 * piola_test_rand(rng), c = cos(angle), s = sin(angle), k = 1.0 - c;
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

static piola_v3 m3_apply(piola_m3 r, piola_v3 v) {
  return piola_v3_make(r.m[0] * v.x + r.m[1] * v.y + r.m[2] * v.z,
                       r.m[3] * v.x + r.m[4] * v.y + r.m[5] * v.z,
                       r.m[6] * v.x + r.m[7] * v.y + r.m[8] * v.z);
}

static double v3_dist(piola_v3 a, piola_v3 b) {
  return piola_v3_length(piola_v3_sub(a, b));
}

/* A cloth-like orthotropic material: weft twice as stiff as warp, soft shear (valid, so the
 * zeroed fallback is never used; piola_cloth_tri_init_frames tests the validation). */
static piola_cloth_tri_material cloth_material(int solver) {
  piola_cloth_tri_material m = {0, 0, 0, 0, 0, 0, 0};
  piola_cloth_tri_material_make(2000.0, 1000.0, 150.0, 0.3, solver, &m);
  return m;
}

/* A triangle in a random orientation in space with the given shape in its plane. */
static void random_triangle(uint64_t *rng, piola_v3 *x) {
  piola_m3 r = random_rotation(rng);
  piola_v3 o = v3_rand(rng, 2.0);
  piola_v3 flat[3] = {
      piola_v3_make(0, 0, 0), piola_v3_make(1.0 + 0.3 * piola_test_rand(rng), 0, 0),
      piola_v3_make(0.3 * piola_test_rand(rng), 0.8 + 0.3 * piola_test_rand(rng), 0)};
  for (int a = 0; a < 3; ++a) {
    x[a] = piola_v3_add(o, m3_apply(r, piola_v3_scale(flat[a], 0.05)));
  }
}

/* ---- Membrane ------------------------------------------------------------------------- */

void test_cloth_tri_gradient_finite_differences(piola_test *t) {
  uint64_t rng = 17;
  piola_cloth_tri_material m = cloth_material(PIOLA_CLOTH_SOLVER_XPBD);
  for (int trial = 0; trial < 100; ++trial) {
    piola_v3 rest[3], x[3];
    random_triangle(&rng, rest);
    piola_m2 dm_inv;
    double area;
    int flags = trial % 2 ? piola_cloth_tri_init(rest[0], rest[1], rest[2], &dm_inv, &area)
                          : piola_cloth_tri_init_uv(rest[0], rest[1], rest[2], 0.1, 0.9 + trial,
                                                    -0.5, &dm_inv, &area);
    REQUIRE(t, flags & PIOLA_CLOTH_INIT_OK);
    for (int a = 0; a < 3; ++a) {
      x[a] = piola_v3_add(rest[a], v3_rand(&rng, 0.015)); /* strains up to ~0.5 */
    }
    piola_v3 g[3];
    double u = piola_cloth_tri_gradient(&m, dm_inv, area, x[0], x[1], x[2], g);
    CHECK_NEAR(t, u, piola_cloth_tri_energy(&m, dm_inv, area, x[0], x[1], x[2]), 1e-15 * u);
    double gmax = 0.0;
    for (int a = 0; a < 3; ++a) {
      gmax = fmax(gmax, piola_v3_length(g[a]));
    }
    const double h = 1e-7;
    for (int a = 0; a < 3; ++a) {
      double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
      double gv[3] = {g[a].x, g[a].y, g[a].z};
      for (int c = 0; c < 3; ++c) {
        double keep = *comp[c];
        *comp[c] = keep + h;
        double ep = piola_cloth_tri_energy(&m, dm_inv, area, x[0], x[1], x[2]);
        *comp[c] = keep - h;
        double em = piola_cloth_tri_energy(&m, dm_inv, area, x[0], x[1], x[2]);
        *comp[c] = keep;
        double fd = (ep - em) / (2 * h);
        CHECK_MSG(t, fabs(fd - gv[c]) < 1e-7 * gmax, "trial %d vertex %d axis %d: fd %g vs %g",
                  trial, a, c, fd, gv[c]);
      }
    }
  }
}

void test_cloth_tri_rest_and_rigid_motion(piola_test *t) {
  uint64_t rng = 23;
  piola_cloth_tri_material m = cloth_material(PIOLA_CLOTH_SOLVER_XPBD);
  for (int trial = 0; trial < 100; ++trial) {
    piola_v3 rest[3];
    random_triangle(&rng, rest);
    piola_m2 dm_inv;
    double area;
    REQUIRE(t, piola_cloth_tri_init_uv(rest[0], rest[1], rest[2], 0.3, -0.2, 0.7, &dm_inv, &area));
    piola_v3 g[3];
    double u0 = piola_cloth_tri_gradient(&m, dm_inv, area, rest[0], rest[1], rest[2], g);
    CHECK_MSG(t, fabs(u0) < 1e-28, "trial %d: energy at rest %g", trial, u0);
    for (int a = 0; a < 3; ++a) {
      CHECK_MSG(t, piola_v3_length(g[a]) < 1e-13, "trial %d: gradient at rest %g", trial,
                piola_v3_length(g[a]));
    }
    /* Rigid motions of the rest shape are at rest; of a deformed shape they keep the energy
     * and rotate the gradients. */
    piola_m3 r = random_rotation(&rng);
    piola_v3 shift = v3_rand(&rng, 3.0), y[3], x[3], xr[3];
    for (int a = 0; a < 3; ++a) {
      y[a] = piola_v3_add(m3_apply(r, rest[a]), shift);
      x[a] = piola_v3_add(rest[a], v3_rand(&rng, 0.01));
      xr[a] = piola_v3_add(m3_apply(r, x[a]), shift);
    }
    CHECK(t, piola_cloth_tri_energy(&m, dm_inv, area, y[0], y[1], y[2]) < 1e-26);
    piola_v3 gr[3];
    double u = piola_cloth_tri_gradient(&m, dm_inv, area, x[0], x[1], x[2], g);
    double ur = piola_cloth_tri_gradient(&m, dm_inv, area, xr[0], xr[1], xr[2], gr);
    CHECK_NEAR(t, ur, u, 1e-12 * u);
    for (int a = 0; a < 3; ++a) {
      CHECK(t, v3_dist(gr[a], m3_apply(r, g[a])) < 1e-12 * piola_v3_length(g[a]) + 1e-15);
    }
  }
}

/* A triangle in a random plane with a weft direction d (given by its uv) and stretch
 * factors along the weft and the warp: energies against the closed forms. */
void test_cloth_tri_weft_warp_and_shear(piola_test *t) {
  uint64_t rng = 31;
  const double e1 = 2000.0, e2 = 500.0, g12 = 150.0, nu12 = 0.3;
  piola_cloth_tri_material m;
  REQUIRE(t, piola_cloth_tri_material_make(e1, e2, g12, nu12, PIOLA_CLOTH_SOLVER_XPBD, &m));
  double k = 1.0 / m.compliance;
  double nu21 = nu12 * e2 / e1, det = 1.0 - nu12 * nu21;
  CHECK_NEAR(t, m.c11 * k, e1 / det, 1e-9);
  CHECK_NEAR(t, m.c22 * k, e2 / det, 1e-9);
  CHECK_NEAR(t, m.c12 * k, nu12 * e2 / det, 1e-9);
  CHECK_NEAR(t, m.c12 * k, nu21 * e1 / det, 1e-9); /* the symmetric form */
  CHECK_NEAR(t, m.c33 * k, g12, 1e-9);
  for (int trial = 0; trial < 50; ++trial) {
    piola_m3 r = random_rotation(&rng);
    /* In-plane weft d at angle phi in the plane's (x, y), warp w = n x d. */
    double phi = 3.0 * piola_test_rand(&rng);
    piola_v3 d = m3_apply(r, piola_v3_make(cos(phi), sin(phi), 0.0));
    piola_v3 w = m3_apply(r, piola_v3_make(-sin(phi), cos(phi), 0.0));
    piola_v3 o = v3_rand(&rng, 1.0);
    piola_v3 flat[3] = {piola_v3_make(0, 0, 0), piola_v3_make(0.03, 0.002, 0),
                        piola_v3_make(0.01, 0.025, 0)};
    piola_v3 x[3];
    double u[3];
    for (int a = 0; a < 3; ++a) {
      x[a] = piola_v3_add(o, m3_apply(r, flat[a]));
      u[a] = 5.0 + 40.0 * piola_v3_dot(piola_v3_sub(x[a], o), d); /* scale and offset */
    }
    piola_m2 dm_inv;
    double area;
    REQUIRE(t, piola_cloth_tri_init_uv(x[0], x[1], x[2], u[0], u[1], u[2], &dm_inv, &area) ==
                   PIOLA_CLOTH_INIT_OK);
    CHECK_NEAR(t, area, 0.5 * (0.03 * 0.025 - 0.002 * 0.01), 1e-15);
    const double s = 0.02;
    /* y = o + (1 + a) (X.d) d + (1 + b) (X.w) w + c (X.w) d: E11 = ((1+a)^2 - 1) / 2 etc. */
    for (int mode = 0; mode < 3; ++mode) {
      piola_v3 y[3];
      for (int a = 0; a < 3; ++a) {
        piola_v3 rel = piola_v3_sub(x[a], o);
        double pd = piola_v3_dot(rel, d), pw = piola_v3_dot(rel, w);
        double sa = mode == 0 ? s : 0.0, sb = mode == 1 ? s : 0.0, sc = mode == 2 ? s : 0.0;
        y[a] = piola_v3_add(o, piola_v3_add(piola_v3_scale(d, (1.0 + sa) * pd + sc * pw),
                                            piola_v3_scale(w, (1.0 + sb) * pw)));
      }
      double energy = k * piola_cloth_tri_energy(&m, dm_inv, area, y[0], y[1], y[2]);
      double strain = 0.5 * ((1.0 + s) * (1.0 + s) - 1.0);
      double expected;
      if (mode == 0) { /* uniaxial strain along the weft: (1/2) C11 E11^2 A */
        expected = 0.5 * (e1 / det) * strain * strain * area;
      } else if (mode == 1) { /* along the warp: (1/2) C22 E22^2 A */
        expected = 0.5 * (e2 / det) * strain * strain * area;
      } else { /* simple shear F = [[1, c], [0, 1]]: 2 E12 = c, E22 = c^2 / 2 */
        double e22 = 0.5 * s * s;
        expected = 0.5 * area * (e2 / det * e22 * e22 + g12 * s * s);
      }
      CHECK_MSG(t, fabs(energy - expected) < 1e-10 * expected, "trial %d mode %d: %.12g vs %.12g",
                trial, mode, energy, expected);
    }
    /* Pure shear with no normal strain: F^T F = [[1, sin 2b], [sin 2b, 1]]. */
    double b = 0.05;
    piola_v3 y[3];
    for (int a = 0; a < 3; ++a) {
      piola_v3 rel = piola_v3_sub(x[a], o);
      double pd = piola_v3_dot(rel, d), pw = piola_v3_dot(rel, w);
      y[a] = piola_v3_add(o, piola_v3_add(piola_v3_scale(d, cos(b) * pd + sin(b) * pw),
                                          piola_v3_scale(w, sin(b) * pd + cos(b) * pw)));
    }
    double gamma = sin(2.0 * b);
    CHECK_NEAR(t, k * piola_cloth_tri_energy(&m, dm_inv, area, y[0], y[1], y[2]),
               0.5 * g12 * gamma * gamma * area, 1e-10 * g12 * gamma * gamma * area);
  }
}

/* Uniaxial stress: pull along one material axis by a small strain and let the other axis
 * relax (its stress S22 = 0, solved exactly for the transverse stretch); the lateral
 * contraction over the pull is Poisson's ratio, nu12 along the weft and nu21 = nu12 E2 / E1
 * along the warp, and the stress over the strain is the modulus of that axis. */
void test_cloth_tri_poisson(piola_test *t) {
  const double e1 = 2000.0, e2 = 500.0, g12 = 150.0, nu12 = 0.4;
  piola_cloth_tri_material m;
  REQUIRE(t, piola_cloth_tri_material_make(e1, e2, g12, nu12, PIOLA_CLOTH_SOLVER_XPBD, &m));
  double k = 1.0 / m.compliance;
  const double nu21 = nu12 * e2 / e1;
  for (int axis = 0; axis < 2; ++axis) {
    for (int step = 0; step < 3; ++step) {
      double eps = 1e-3 * pow(0.1, step); /* 1e-3, 1e-4, 1e-5 */
      /* F = diag(1 + eps, 1 + delta) (or swapped); dPsi/d(delta) = 0 by Newton on the
       * derivative, evaluated through the stress: P22 = F22 S22. */
      double delta = 0.0;
      piola_m32 f, p;
      for (int it = 0; it < 50; ++it) {
        double fl = 1.0 + eps, ft = 1.0 + delta;
        f.c0 = axis == 0 ? piola_v3_make(fl, 0, 0) : piola_v3_make(ft, 0, 0);
        f.c1 = axis == 0 ? piola_v3_make(0, ft, 0) : piola_v3_make(0, fl, 0);
        piola_cloth_tri_energy_stress(&m, f, &p);
        double p_t = axis == 0 ? p.c1.y : p.c0.x;
        double c_tt = axis == 0 ? m.c22 : m.c11;
        /* d P_t / d delta = C_tt F_t^2 + S_t ~ C_tt (the S_t term is small). */
        double next = delta - p_t / (c_tt * ft * ft);
        if (next == delta) {
          break;
        }
        delta = next;
      }
      double ratio = -delta / eps, expected = axis == 0 ? nu12 : nu21;
      /* Finite strain: E_t = -nu E_l exactly, so delta = -nu eps + O(eps^2). */
      CHECK_MSG(t, fabs(ratio - expected) < 2.0 * eps, "axis %d eps %g: contraction %.9g vs %.9g",
                axis, eps, ratio, expected);
      double el = 0.5 * ((1.0 + eps) * (1.0 + eps) - 1.0);
      double et = 0.5 * ((1.0 + delta) * (1.0 + delta) - 1.0);
      CHECK_NEAR(t, et, -expected * el, 1e-9 * el);
      /* S_l = P_l / F_l: the modulus of the axis under uniaxial stress. */
      double s_l = k * (axis == 0 ? p.c0.x / (1.0 + eps) : p.c1.y / (1.0 + eps));
      CHECK_NEAR(t, s_l / el, axis == 0 ? e1 : e2, 1e-6 * e1);
    }
  }
}

void test_cloth_tri_init_frames(piola_test *t) {
  uint64_t rng = 41;
  for (int trial = 0; trial < 50; ++trial) {
    piola_v3 x[3];
    random_triangle(&rng, x);
    piola_m2 a, b;
    double area_a, area_b;
    REQUIRE(t, piola_cloth_tri_init(x[0], x[1], x[2], &a, &area_a) == PIOLA_CLOTH_INIT_OK);
    /* u along the first edge, with any scale and offset: the same frame. */
    piola_v3 e = piola_v3_sub(x[1], x[0]);
    e = piola_v3_scale(e, 1.0 / piola_v3_length(e));
    double u[3];
    for (int k = 0; k < 3; ++k) {
      u[k] = -3.0 + 7.0 * piola_v3_dot(piola_v3_sub(x[k], x[0]), e);
    }
    REQUIRE(t, piola_cloth_tri_init_uv(x[0], x[1], x[2], u[0], u[1], u[2], &b, &area_b) ==
                   PIOLA_CLOTH_INIT_OK);
    CHECK_NEAR(t, area_a, area_b, 0.0);
    for (int i = 0; i < 4; ++i) {
      CHECK_MSG(t, fabs(a.m[i] - b.m[i]) < 1e-12 * fabs(a.m[0]), "trial %d: Dm^-1[%d] %g vs %g",
                trial, i, a.m[i], b.m[i]);
    }
    /* u decreasing along the first edge: the weft flips, and with it the warp; F changes sign
     * and the energy of any deformation stays the same. */
    REQUIRE(t, piola_cloth_tri_init_uv(x[0], x[1], x[2], -u[0], -u[1], -u[2], &b, &area_b));
    for (int i = 0; i < 4; ++i) {
      CHECK(t, fabs(a.m[i] + b.m[i]) < 1e-12 * fabs(a.m[0]));
    }
    /* u constant: falls back to the first edge and says so. */
    CHECK(t, piola_cloth_tri_init_uv(x[0], x[1], x[2], 0.5, 0.5, 0.5, &b, &area_b) ==
                 (PIOLA_CLOTH_INIT_OK | PIOLA_CLOTH_INIT_UV_FALLBACK));
    CHECK(t, fabs(a.m[0] - b.m[0]) + fabs(a.m[3] - b.m[3]) == 0.0);
    /* Dm^-1 maps the rest edges to an orthonormal frame: F = I at rest. */
    piola_m32 f = piola_cloth_tri_deformation(x[0], x[1], x[2], a);
    CHECK(t, fabs(piola_v3_dot(f.c0, f.c0) - 1.0) < 1e-13 &&
                 fabs(piola_v3_dot(f.c1, f.c1) - 1.0) < 1e-13 &&
                 fabs(piola_v3_dot(f.c0, f.c1)) < 1e-13);
    CHECK(t, v3_dist(piola_v3_scale(f.c0, 1.0), e) < 1e-13);
  }
  /* Degenerate triangles are rejected, relative to their size; small good ones are not. */
  piola_m2 d;
  double area;
  piola_v3 o = piola_v3_make(0.3, -0.2, 0.1);
  CHECK(t, piola_cloth_tri_init(o, piola_v3_make(1.3, -0.2, 0.1), piola_v3_make(2.3, -0.2, 0.1), &d,
                                &area) == 0); /* collinear */
  CHECK(t, piola_cloth_tri_init(o, o, piola_v3_make(1, 1, 1), &d, &area) == 0);
  CHECK(t, piola_cloth_tri_init(o, o, o, &d, &area) == 0);
  CHECK(t, piola_cloth_tri_init_uv(o, piola_v3_make(1.3, -0.2, 0.1 + 1e-11),
                                   piola_v3_make(2.3, -0.2, 0.1), 0, 1, 2, &d, &area) == 0);
  CHECK(t, piola_cloth_tri_init(piola_v3_make(0, 0, 0), piola_v3_make(1e-7, 0, 0),
                                piola_v3_make(0, 1e-7, 0), &d, &area) == PIOLA_CLOTH_INIT_OK);
  CHECK_NEAR(t, area, 0.5e-14, 1e-28);
  CHECK(t, piola_cloth_tri_init(piola_v3_make(0, 0, 0), piola_v3_make(1, 0, 0),
                                piola_v3_make(0.5, 1e-6, 0), &d, &area) == PIOLA_CLOTH_INIT_OK);
  /* Materials: positive moduli, positive definite stiffness. */
  piola_cloth_tri_material m;
  CHECK(t, piola_cloth_tri_material_make(1000, 1000, 100, 0.3, 0, &m) == 1);
  CHECK(t, piola_cloth_tri_material_make(1000, 1000, 100, -0.3, 0, &m) == 1); /* auxetic */
  CHECK(t, piola_cloth_tri_material_make(0, 1000, 100, 0.3, 0, &m) == 0);
  CHECK(t, piola_cloth_tri_material_make(1000, -1, 100, 0.3, 0, &m) == 0);
  CHECK(t, piola_cloth_tri_material_make(1000, 1000, 0, 0.3, 0, &m) == 0);
  CHECK(t, piola_cloth_tri_material_make(1000, 1000, 100, NAN, 0, &m) == 0);
  CHECK(t, piola_cloth_tri_material_make(1000, 1000, 100, 1.0, 0, &m) == 0);
  /* nu12^2 E2 / E1 < 1 allows nu12 > 1 when the warp is much softer (nu21 stays < 1). */
  CHECK(t, piola_cloth_tri_material_make(1000, 100, 100, 2.0, 0, &m) == 1);
  CHECK(t, piola_cloth_tri_material_make(1000, 100, 100, 3.5, 0, &m) == 0);
}

/* Stretch one free vertex (the others pinned): the XPBD form removes the stretch in one step
 * (C = sqrt(2U) is nearly linear in it), the PBD form (C = U, quadratic) halves it, so the
 * energy drops to a quarter; a large compliance makes the XPBD step partial, and it satisfies
 * its linearised equation C + grad C . dx + alpha~ lambda = 0. */
void test_cloth_tri_projection(piola_test *t) {
  /* A right triangle, weft along the free edge: the stretch is an eigen-direction. */
  piola_v3 rest[3] = {piola_v3_make(0, 0, 0), piola_v3_make(0.02, 0, 0),
                      piola_v3_make(0.0, 0.015, 0)};
  piola_m2 dm_inv;
  double area;
  REQUIRE(t, piola_cloth_tri_init(rest[0], rest[1], rest[2], &dm_inv, &area));
  for (int form = 0; form < 3; ++form) {
    piola_cloth_tri_material m =
        cloth_material(form == 0 ? PIOLA_CLOTH_SOLVER_PBD : PIOLA_CLOTH_SOLVER_XPBD);
    double alpha_tilde = form == 1 ? 1e-12 : form == 2 ? 1e4 : 0.0;
    piola_v3 x[3] = {rest[0], piola_v3_make(0.02002, 0, 0), rest[2]};
    piola_v3 before = x[1];
    double u0 = piola_cloth_tri_energy(&m, dm_inv, area, x[0], x[1], x[2]);
    double lambda = 0.0;
    int flags = piola_cloth_tri_project(&m, dm_inv, area, alpha_tilde, &x[0], &x[1], &x[2], 0.0,
                                        1.0, 0.0, &lambda);
    double u1 = piola_cloth_tri_energy(&m, dm_inv, area, x[0], x[1], x[2]);
    CHECK(t, flags == PIOLA_CLOTH_WORKED && lambda != 0.0);
    CHECK(t, v3_dist(x[0], rest[0]) == 0.0 && v3_dist(x[2], rest[2]) == 0.0);
    if (form == 0) {
      CHECK_MSG(t, fabs(u1 / u0 - 0.25) < 0.01, "PBD: U %g -> %g", u0, u1);
    } else if (form == 1) {
      CHECK_MSG(t, u1 < 1e-4 * u0, "XPBD: U %g -> %g", u0, u1);
    } else {
      CHECK_MSG(t, u1 < u0 && u1 > 0.01 * u0, "compliant: U %g -> %g", u0, u1);
      piola_v3 g[3];
      piola_cloth_tri_gradient(&m, dm_inv, area, rest[0], before, rest[2], g);
      double c0 = sqrt(2.0 * u0);
      double residual =
          c0 + piola_v3_dot(g[1], piola_v3_sub(x[1], before)) / c0 + alpha_tilde * lambda;
      CHECK_MSG(t, fabs(residual) < 1e-9 * c0, "XPBD residual %g (C = %g)", residual, c0);
    }
  }
  /* Repeated XPBD iterations with a finite compliance (C is not monotone on the way: a
   * Gauss-Newton step on a cone overshoots where the gradient turns) converge to the compliant
   * balance C + alpha~ lambda = 0, lambda accumulating dlambda. */
  piola_cloth_tri_material m = cloth_material(PIOLA_CLOTH_SOLVER_XPBD);
  piola_v3 x[3] = {rest[0], piola_v3_make(0.021, 0.001, 0), rest[2]};
  double lambda = 0.0, alpha_tilde = 1e-3;
  for (int it = 0; it < 20; ++it) {
    piola_cloth_tri_project(&m, dm_inv, area, alpha_tilde, &x[0], &x[1], &x[2], 0, 1, 0, &lambda);
  }
  double c = sqrt(2.0 * piola_cloth_tri_energy(&m, dm_inv, area, x[0], x[1], x[2]));
  CHECK_MSG(t, c > 0.0 && fabs(c + alpha_tilde * lambda) < 1e-6 * c, "C %g, alpha~ lambda %g", c,
            alpha_tilde * lambda);
  /* At rest, all pinned: nothing happens. */
  piola_v3 y[3] = {rest[0], rest[1], rest[2]};
  lambda = 0.0;
  CHECK(t, piola_cloth_tri_project(&m, dm_inv, area, 1e-3, &y[0], &y[1], &y[2], 1, 1, 1, &lambda) ==
                   0 &&
               lambda == 0.0);
  y[1].x += 0.01;
  piola_v3 stretched = y[1];
  CHECK(t, piola_cloth_tri_project(&m, dm_inv, area, 1e-3, &y[0], &y[1], &y[2], 0, 0, 0, &lambda) ==
                   0 &&
               lambda == 0.0 && v3_dist(y[1], stretched) == 0.0);
  /* The stiffness is relative: scaling every modulus by 1e-6 changes nothing in PBD. */
  piola_cloth_tri_material soft, stiff;
  REQUIRE(t, piola_cloth_tri_material_make(2e-3, 1e-3, 1.5e-4, 0.3, PIOLA_CLOTH_SOLVER_PBD, &soft));
  REQUIRE(t, piola_cloth_tri_material_make(2e3, 1e3, 1.5e2, 0.3, PIOLA_CLOTH_SOLVER_PBD, &stiff));
  piola_v3 dx_soft[3], dx_stiff[3];
  double l1 = 0.0, l2 = 0.0;
  CHECK(t, piola_cloth_tri_correction(&soft, dm_inv, area, 0.0, 0.0, rest[0], stretched, rest[2],
                                      NULL, 1, 1, 1, &l1, dx_soft) == PIOLA_CLOTH_WORKED);
  CHECK(t, piola_cloth_tri_correction(&stiff, dm_inv, area, 0.0, 0.0, rest[0], stretched, rest[2],
                                      NULL, 1, 1, 1, &l2, dx_stiff) == PIOLA_CLOTH_WORKED);
  for (int a = 0; a < 3; ++a) {
    CHECK(t, v3_dist(dx_soft[a], dx_stiff[a]) < 1e-12 * piola_v3_length(dx_stiff[1]));
  }
}

/* ---- Bending -------------------------------------------------------------------------- */

/* A stencil around the edge x0 x1 (along x), opposite vertices on either side, bent by
 * `angle` about the edge (0 = flat; the x3 wing rotates), then placed by a rigid motion. */
static void hinge(double angle, double skew, piola_v3 *x) {
  x[0] = piola_v3_make(0.0, 0.0, 0.0);
  x[1] = piola_v3_make(0.02, 0.0, 0.0);
  x[2] = piola_v3_make(0.008 + skew, 0.017, 0.0);
  x[3] = piola_v3_make(0.012 - 0.5 * skew, -0.015 * cos(angle), 0.015 * sin(angle));
}

static double hinge_length(const piola_v3 *x) {
  return v3_dist(x[0], x[1]);
}

static void bend_fd_check(piola_test *t, const char *label, const piola_cloth_bend_rest *rest,
                          piola_v3 *x) {
  piola_v3 g[4];
  double u = piola_cloth_bend_gradient(rest, x[0], x[1], x[2], x[3], g);
  CHECK(t, u >= 0.0);
  double gmax = 0.0;
  for (int a = 0; a < 4; ++a) {
    gmax = fmax(gmax, piola_v3_length(g[a]));
  }
  const double h = 1e-8;
  double worst = 0.0;
  for (int a = 0; a < 4; ++a) {
    double *comp[3] = {&x[a].x, &x[a].y, &x[a].z};
    double gv[3] = {g[a].x, g[a].y, g[a].z};
    for (int c = 0; c < 3; ++c) {
      double keep = *comp[c];
      *comp[c] = keep + h;
      double ep = piola_cloth_bend_energy(rest, x[0], x[1], x[2], x[3]);
      *comp[c] = keep - h;
      double em = piola_cloth_bend_energy(rest, x[0], x[1], x[2], x[3]);
      *comp[c] = keep;
      worst = fmax(worst, fabs((ep - em) / (2 * h) - gv[c]));
    }
  }
  CHECK_MSG(t, worst < 1e-6 * gmax, "%s: |fd - g| = %g, |g| = %g", label, worst, gmax);
}

void test_cloth_bend_gradient_finite_differences(piola_test *t) {
  uint64_t rng = 53;
  for (int trial = 0; trial < 100; ++trial) {
    double rest_angle = trial % 2 ? 0.0 : 1.2 * piola_test_rand(&rng);
    piola_v3 x_rest[4], x[4];
    hinge(rest_angle, 0.004 * piola_test_rand(&rng), x_rest);
    piola_cloth_bend_rest rest;
    REQUIRE(t, piola_cloth_bend_init(x_rest[0], x_rest[1], x_rest[2], x_rest[3], &rest));
    CHECK(t, (rest.rest == 0.0) == (rest_angle == 0.0));
    for (int a = 0; a < 4; ++a) {
      x[a] = piola_v3_add(x_rest[a], v3_rand(&rng, 0.006)); /* bends and stretches */
    }
    char label[64];
    snprintf(label, sizeof label, "trial %d (rest angle %.3f)", trial, rest_angle);
    bend_fd_check(t, label, &rest, x);
  }
}

/* Energy and gradient vanish at flat and curved rest states and under rigid motions of them;
 * deformed states keep their energy under rigid motions; the Q form equals the K form; for
 * isometric bends U = (1/2) q 4 |e|^2 (sin(theta/2) - sin(theta_bar/2))^2. */
void test_cloth_bend_rest_and_rigid_motion(piola_test *t) {
  uint64_t rng = 59;
  for (int trial = 0; trial < 100; ++trial) {
    double rest_angle = trial % 3 == 0 ? 0.0 : 1.5 * piola_test_rand(&rng);
    piola_v3 x_rest[4];
    hinge(rest_angle, 0.004 * piola_test_rand(&rng), x_rest);
    piola_m3 r = random_rotation(&rng);
    piola_v3 shift = v3_rand(&rng, 2.0);
    for (int a = 0; a < 4; ++a) {
      x_rest[a] = piola_v3_add(m3_apply(r, x_rest[a]), shift);
    }
    piola_cloth_bend_rest rest;
    REQUIRE(t, piola_cloth_bend_init(x_rest[0], x_rest[1], x_rest[2], x_rest[3], &rest));
    double ksum = rest.k[0] + rest.k[1] + rest.k[2] + rest.k[3];
    CHECK(t, fabs(ksum) < 1e-12 * (fabs(rest.k[0]) + fabs(rest.k[1])));
    piola_v3 g[4];
    double u = piola_cloth_bend_gradient(&rest, x_rest[0], x_rest[1], x_rest[2], x_rest[3], g);
    /* At rest r = v - v_bar n_bar is rounding: a few ulps of the coordinates (up to ~4 m) times
     * the weights; U = q |r|^2 / 2 and |g_i| <= q (|K_i| + 2) |r| (the normal's term). */
    double ksum_abs = fabs(rest.k[0]) + fabs(rest.k[1]) + fabs(rest.k[2]) + fabs(rest.k[3]);
    double r_tol = 64.0 * DBL_EPSILON * 4.0 * ksum_abs;
    CHECK_MSG(t, u < 0.5 * rest.q * r_tol * r_tol, "trial %d: U at rest %g", trial, u);
    for (int a = 0; a < 4; ++a) {
      CHECK_MSG(t, piola_v3_length(g[a]) < rest.q * (ksum_abs + 2.0) * r_tol,
                "trial %d: |g%d| at rest %g", trial, a, piola_v3_length(g[a]));
    }
    /* A rigid motion of the rest state is at rest. */
    piola_m3 r2 = random_rotation(&rng);
    piola_v3 y[4], x[4], xr[4], gr[4];
    for (int a = 0; a < 4; ++a) {
      y[a] = piola_v3_add(m3_apply(r2, x_rest[a]), shift);
      x[a] = piola_v3_add(x_rest[a], v3_rand(&rng, 0.003));
      xr[a] = piola_v3_add(m3_apply(r2, x[a]), shift);
    }
    CHECK(t, piola_cloth_bend_energy(&rest, y[0], y[1], y[2], y[3]) < 0.5 * rest.q * r_tol * r_tol);
    u = piola_cloth_bend_gradient(&rest, x[0], x[1], x[2], x[3], g);
    double ur = piola_cloth_bend_gradient(&rest, xr[0], xr[1], xr[2], xr[3], gr);
    CHECK_NEAR(t, ur, u, 1e-10 * u);
    double gmax = 0.0;
    for (int a = 0; a < 4; ++a) {
      gmax = fmax(gmax, piola_v3_length(g[a]));
    }
    for (int a = 0; a < 4; ++a) {
      CHECK(t, v3_dist(gr[a], m3_apply(r2, g[a])) < 1e-10 * gmax);
    }
    /* Isometric bends of the rest stencil: the closed form, with sign. */
    piola_v3 h[4];
    double skew = 0.002 * piola_test_rand(&rng);
    hinge(rest_angle, skew, h);
    REQUIRE(t, piola_cloth_bend_init(h[0], h[1], h[2], h[3], &rest));
    for (int k = -3; k <= 3; ++k) {
      double angle = rest_angle + 0.4 * k;
      piola_v3 b[4];
      hinge(angle, skew, b);
      double expected = 0.5 * rest.q * 4.0 * hinge_length(h) * hinge_length(h) *
                        pow(sin(0.5 * angle) - sin(0.5 * rest_angle), 2.0);
      double got = piola_cloth_bend_energy(&rest, b[0], b[1], b[2], b[3]);
      CHECK_MSG(t, fabs(got - expected) < 1e-12 + 1e-10 * expected,
                "trial %d angle %g (rest %g): U %.12g vs %.12g", trial, angle, rest_angle, got,
                expected);
    }
    /* Flat rest: U = (1/2) sum_ij Q_ij x_i . x_j, g_i = sum_j Q_ij x_j. */
    hinge(0.0, skew, h);
    REQUIRE(t, piola_cloth_bend_init(h[0], h[1], h[2], h[3], &rest));
    CHECK(t, rest.rest == 0.0);
    double q[16], uq = 0.0;
    piola_cloth_bend_q_matrix(&rest, q);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        uq += 0.5 * q[4 * i + j] * piola_v3_dot(x[i], x[j]);
      }
    }
    u = piola_cloth_bend_gradient(&rest, x[0], x[1], x[2], x[3], g);
    /* The Q form on absolute coordinates cancels (sum_j Q_ij = 0): its rounding is about
     * eps q (sum |K|)^2 |x|^2, which is why the code sums K_i (x_i - x0) instead. */
    double xmax = 0.0;
    for (int i = 0; i < 4; ++i) {
      xmax = fmax(xmax, piola_v3_length(x[i]));
    }
    double ks = fabs(rest.k[0]) + fabs(rest.k[1]) + fabs(rest.k[2]) + fabs(rest.k[3]);
    double q_round = 16.0 * DBL_EPSILON * rest.q * ks * ks * xmax;
    CHECK_MSG(t, fabs(u - uq) < q_round * xmax, "trial %d: K form %.17g, Q form %.17g", trial, u,
              uq);
    for (int i = 0; i < 4; ++i) {
      piola_v3 qx = piola_v3_make(0, 0, 0);
      for (int j = 0; j < 4; ++j) {
        qx = piola_v3_add(qx, piola_v3_scale(x[j], q[4 * i + j]));
      }
      CHECK_MSG(t, v3_dist(qx, g[i]) < q_round, "trial %d: |Qx - g%d| = %g", trial, i,
                v3_dist(qx, g[i]));
    }
  }
  /* A curved rest state keeps its sign: the mirrored bend costs energy. */
  piola_v3 h[4], mirrored[4];
  hinge(0.6, 0.0, h);
  hinge(-0.6, 0.0, mirrored);
  piola_cloth_bend_rest rest;
  REQUIRE(t, piola_cloth_bend_init(h[0], h[1], h[2], h[3], &rest));
  CHECK(t, piola_cloth_bend_energy(&rest, mirrored[0], mirrored[1], mirrored[2], mirrored[3]) >
               0.1 * rest.q * hinge_length(h) * hinge_length(h));
  /* Degenerate and folded stencils are rejected. */
  piola_v3 p0 = piola_v3_make(0, 0, 0), p1 = piola_v3_make(1, 0, 0);
  CHECK(t, piola_cloth_bend_init(p0, p1, piola_v3_make(2, 0, 0), piola_v3_make(0.5, -1, 0),
                                 &rest) == 0);
  CHECK(t, piola_cloth_bend_init(p0, p1, piola_v3_make(0.5, 1, 0), piola_v3_make(0.5, 1, 1e-12),
                                 &rest) == 0);
  CHECK(t, piola_cloth_bend_init(p0, p1, piola_v3_make(0.5, 1, 0), piola_v3_make(0.5, 1e-3, 1e-12),
                                 &rest) == 0); /* both wings on one side */
  CHECK(t, piola_cloth_bend_init(p0, p1, piola_v3_make(0.5, 1, 0), piola_v3_make(0.5, -1e-3, 0),
                                 &rest) == PIOLA_CLOTH_INIT_OK); /* thin, but fine */
  piola_cloth_bend_material bm;
  CHECK(t, piola_cloth_bend_material_make(1e-5, PIOLA_CLOTH_SOLVER_XPBD, &bm) == 1);
  CHECK_NEAR(t, bm.compliance, 3e5, 1e-9);
  CHECK(t, piola_cloth_bend_material_make(0.0, PIOLA_CLOTH_SOLVER_XPBD, &bm) == 0);
  CHECK(t, piola_cloth_bend_material_make(NAN, PIOLA_CLOTH_SOLVER_XPBD, &bm) == 0);
}

/* ---- The plate bending stiffness on a cylinder ------------------------------------------ */

/* Equilateral triangles of side L in rows along x (row j at y = j h, h = sqrt(3) L / 2, odd
 * rows shifted by L / 2), n cells per row, m rows wrapped periodically around a cylinder of
 * radius R = m h / (2 pi) with its axis along x, so that every edge is interior except the
 * zigzags at the two ends. Each stencil is built from the mesh's triangles by matching their
 * edges, as an integrator would; the flat rest positions of a stencil across the seam are
 * unwrapped. Returns the total bending energy U / k and writes the area. */
typedef struct cyl_tri {
  int vi[3], vj[3]; /* unwrapped (i, j) of the corners */
} cyl_tri;

static piola_v3 cyl_flat(int i, int j, double L) {
  return piola_v3_make((i + 0.5 * (j & 1)) * L, j * L * sqrt(3.0) / 2.0, 0.0);
}

static piola_v3 cyl_map(piola_v3 p, double radius) {
  double phi = p.y / radius;
  return piola_v3_make(p.x, radius * sin(phi), radius * (1.0 - cos(phi)));
}

static double cylinder_energy(int n, int m, double L, double *area, int *stencils) {
  const double h = L * sqrt(3.0) / 2.0, radius = m * h / (2.0 * PI);
  cyl_tri *tris = malloc(sizeof(cyl_tri) * 2 * (size_t)n * (size_t)m);
  int count = 0;
  for (int j = 0; j < m; ++j) {
    for (int i = 0; i < n; ++i) {
      /* Rows j, j + 1: "up" and "down" triangles, counterclockwise. */
      int up_i[3] = {i, i + 1, (j & 1) ? i + 1 : i}, up_j[3] = {j, j, j + 1};
      int dn_i[3] = {(j & 1) ? i : i + 1, (j & 1) ? i + 1 : i + 1, i}, dn_j[3] = {j, j + 1, j + 1};
      for (int c = 0; c < 3; ++c) {
        tris[count].vi[c] = up_i[c];
        tris[count].vj[c] = up_j[c];
        tris[count + 1].vi[c] = dn_i[c];
        tris[count + 1].vj[c] = dn_j[c];
      }
      count += 2;
    }
  }
  double total = 0.0;
  *stencils = 0;
  *area = 0.0;
  for (int a = 0; a < count; ++a) {
    piola_v3 p[3];
    for (int c = 0; c < 3; ++c) {
      p[c] = cyl_flat(tris[a].vi[c], tris[a].vj[c], L);
    }
    *area +=
        0.5 * piola_v3_length(piola_v3_cross(piola_v3_sub(p[1], p[0]), piola_v3_sub(p[2], p[0])));
  }
  /* Vertex ids wrap in j (rows around the cylinder), not in i (along the axis). */
  for (int a = 0; a < count; ++a) {
    for (int ea = 0; ea < 3; ++ea) {
      int a0 = ea, a1 = (ea + 1) % 3, a2 = (ea + 2) % 3;
      for (int b = a + 1; b < count; ++b) {
        for (int eb = 0; eb < 3; ++eb) {
          int b0 = eb, b1 = (eb + 1) % 3, b2 = (eb + 2) % 3;
          /* The neighbour runs the shared edge the other way: its b1 is our a0. */
          int same = tris[b].vi[b1] == tris[a].vi[a0] && tris[b].vi[b0] == tris[a].vi[a1] &&
                     ((tris[b].vj[b1] - tris[a].vj[a0]) % m + m) % m == 0 &&
                     ((tris[b].vj[b0] - tris[a].vj[a1]) % m + m) % m == 0 &&
                     tris[b].vj[b1] - tris[a].vj[a0] == tris[b].vj[b0] - tris[a].vj[a1];
          if (!same) {
            continue;
          }
          int shift = tris[a].vj[a0] - tris[b].vj[b1]; /* unwraps b's rows onto a's */
          piola_v3 X[4] = {cyl_flat(tris[a].vi[a0], tris[a].vj[a0], L),
                           cyl_flat(tris[a].vi[a1], tris[a].vj[a1], L),
                           cyl_flat(tris[a].vi[a2], tris[a].vj[a2], L),
                           cyl_flat(tris[b].vi[b2], tris[b].vj[b2] + shift, L)};
          /* An odd shift would change the rows' offsets: m is even, shifts are multiples. */
          piola_cloth_bend_rest rest;
          if (!piola_cloth_bend_init(X[0], X[1], X[2], X[3], &rest)) {
            free(tris);
            return -1.0;
          }
          total += piola_cloth_bend_energy(&rest, cyl_map(X[0], radius), cyl_map(X[1], radius),
                                           cyl_map(X[2], radius), cyl_map(X[3], radius));
          ++*stencils;
        }
      }
    }
  }
  free(tris);
  return total;
}

/* The energy of a flat sheet bent into a cylinder of radius R is D / (2 R^2) per area, and the
 * discrete energy with k = D / 3 meets it. On the periodic mesh above every band between two
 * rows is planar, so only the stencils of the edges along the axis bend. Their angles are all
 * 60 degrees, K = (2/sqrt(3)) (1, 1, -1, -1), and on the cylinder x0 + x1 - x2 - x3 is
 * 2 R (1 - cos(2x)) = 4 R sin^2(x) along the normal (x = pi / m, half the angle between rows),
 * so each has U^ = (q/2) |v|^2 = 32 R^2 sin^4(x) / (L h), and the n m of them sum to exactly the
 * continuum energy times (sin(x) / x)^4 = 1 - 2 x^2 / 3 + ...: second order in the mesh size.
 * (The vertices lie on the cylinder, so the chords between rows are shorter than the arcs: the
 * factor is (sin(x) / x)^2 for the bend angle and again for the compressed wings.) */
void test_cloth_bend_cylinder_plate_stiffness(piola_test *t) {
  const double d = 2.5e-4; /* N m */
  piola_cloth_bend_material mat;
  REQUIRE(t, piola_cloth_bend_material_make(d, PIOLA_CLOTH_SOLVER_XPBD, &mat));
  const double k = 1.0 / mat.compliance;
  CHECK_NEAR(t, k, d / 3.0, 1e-18);
  const double L = 0.01;
  double previous_error = 1.0;
  for (int level = 0; level < 3; ++level) {
    int m = 16 << level, n = 10;
    double area;
    int stencils;
    double u = k * cylinder_energy(n, m, L, &area, &stencils);
    REQUIRE(t, u > 0.0);
    /* Interior edges: n m along the axis, 2 n m slanted, minus the m zigzag edges at each
     * end, which belong to one triangle. */
    CHECK_MSG(t, stencils == 3 * n * m - m, "%d stencils, expected %d", stencils, 3 * n * m - m);
    double h = L * sqrt(3.0) / 2.0, radius = m * h / (2.0 * PI);
    CHECK_NEAR(t, area, n * L * m * h, 1e-12 * area);
    double continuum = d / (2.0 * radius * radius) * area;
    double x = PI / m, closed = continuum * pow(sin(x) / x, 4.0);
    CHECK_MSG(t, fabs(u - closed) < 1e-9 * closed, "m = %d: U = %.12g, closed form %.12g", m, u,
              closed);
    double error = fabs(u / continuum - 1.0);
    CHECK_MSG(t, error < 0.7 * x * x, "m = %d: U / continuum = %.6f", m, u / continuum);
    CHECK(t, error < 0.3 * previous_error); /* second order: 1/4 per halving */
    previous_error = error;
  }
}

/* Every orientation of an equilateral mesh on the cylinder: the mesh is homogeneous and the
 * map onto the cylinder isometric, so all interior stencils of one edge direction have the
 * same energy, and the energy per area is the sum over the three directions of one stencil each
 * over the area L h of two triangles. It meets D / (2 R^2) to second order in L / R. */
void test_cloth_bend_cylinder_orientations(piola_test *t) {
  const double d = 1e-3;
  const double k = d / 3.0;
  for (int level = 0; level < 2; ++level) {
    const double radius = 1.0, L = level == 0 ? 0.1 : 0.05, h = L * sqrt(3.0) / 2.0;
    for (int o = 0; o < 12; ++o) {
      double gamma = o * PI / 12.0 + 0.05; /* axis angle in the sheet */
      double c = cos(gamma), s = sin(gamma);
      double per_area = 0.0;
      for (int dir = 0; dir < 3; ++dir) {
        double a = dir * PI / 3.0;
        piola_v3 tdir = piola_v3_make(cos(a), sin(a), 0), ndir = piola_v3_make(-sin(a), cos(a), 0);
        piola_v3 p = piola_v3_make(0.3, 0.1, 0);
        piola_v3 X[4] = {
            p, piola_v3_add(p, piola_v3_scale(tdir, L)),
            piola_v3_add(piola_v3_add(p, piola_v3_scale(tdir, 0.5 * L)), piola_v3_scale(ndir, h)),
            piola_v3_add(piola_v3_add(p, piola_v3_scale(tdir, 0.5 * L)), piola_v3_scale(ndir, -h))};
        piola_v3 Y[4];
        for (int v = 0; v < 4; ++v) {
          /* Sheet coordinates (along the axis, around it), then onto the cylinder. */
          double along = c * X[v].x + s * X[v].y, around = -s * X[v].x + c * X[v].y;
          Y[v] = cyl_map(piola_v3_make(along, around, 0.0), radius);
        }
        piola_cloth_bend_rest rest;
        REQUIRE(t, piola_cloth_bend_init(X[0], X[1], X[2], X[3], &rest));
        per_area += k * piola_cloth_bend_energy(&rest, Y[0], Y[1], Y[2], Y[3]) / (L * h);
      }
      double ratio = per_area / (d / (2.0 * radius * radius));
      double lr2 = (L / radius) * (L / radius);
      CHECK_MSG(t, fabs(ratio - 1.0) < 0.2 * lr2, "L/R = %g, axis at %.3f rad: ratio %.6f",
                L / radius, gamma, ratio);
    }
  }
}

/* The regular right-triangle grid (cells L x L, every diagonal from (i, j) to (i + 1, j + 1)):
 * per cell one horizontal, one vertical and one diagonal stencil. The bending stiffness it
 * gives depends on the direction (the limitation documented with the D <-> k mapping): D for
 * an axis along a grid line, 3 D for an axis perpendicular to the diagonals. */
void test_cloth_bend_right_grid_anisotropy(piola_test *t) {
  const double d = 1e-3, k = d / 3.0, radius = 1.0, L = 0.05;
  const double stencils[3][4][2] = {{{0, 0}, {1, 0}, {1, 1}, {0, -1}}, /* horizontal */
                                    {{1, 0}, {1, 1}, {0, 0}, {2, 1}},  /* vertical */
                                    {{0, 0}, {1, 1}, {1, 0}, {0, 1}}}; /* diagonal */
  const double axes[3] = {0.0, 0.5 * PI, 0.75 * PI}; /* along x, along y, across diagonals */
  const double expected[3] = {1.0, 1.0, 3.0};
  for (int o = 0; o < 3; ++o) {
    double c = cos(axes[o]), s = sin(axes[o]), per_area = 0.0;
    for (int e = 0; e < 3; ++e) {
      piola_v3 X[4], Y[4];
      for (int v = 0; v < 4; ++v) {
        X[v] = piola_v3_make(0.2 + L * stencils[e][v][0], 0.1 + L * stencils[e][v][1], 0.0);
        double along = c * X[v].x + s * X[v].y, around = -s * X[v].x + c * X[v].y;
        Y[v] = cyl_map(piola_v3_make(along, around, 0.0), radius);
      }
      piola_cloth_bend_rest rest;
      REQUIRE(t, piola_cloth_bend_init(X[0], X[1], X[2], X[3], &rest));
      per_area += k * piola_cloth_bend_energy(&rest, Y[0], Y[1], Y[2], Y[3]) / (L * L);
    }
    double ratio = per_area / (d / (2.0 * radius * radius));
    CHECK_MSG(t, fabs(ratio / expected[o] - 1.0) < 0.2 * L * L, "axis at %.3f rad: ratio %.6f",
              axes[o], ratio);
  }
}

/* Bend one free vertex out of a flat stencil (the others pinned): v is linear in it, so the
 * XPBD step (C = sqrt(q) |v|, linear along the line) removes the bend, the PBD step (C = U,
 * quadratic) halves it, and a compliant step satisfies its linearised equation. */
void test_cloth_bend_projection(piola_test *t) {
  for (int curved = 0; curved < 2; ++curved) {
    piola_v3 h[4];
    hinge(curved ? 0.5 : 0.0, 0.001, h);
    piola_cloth_bend_rest rest;
    REQUIRE(t, piola_cloth_bend_init(h[0], h[1], h[2], h[3], &rest));
    for (int form = 0; form < 3; ++form) {
      piola_cloth_bend_material mat;
      REQUIRE(t, piola_cloth_bend_material_make(
                     1e-4, form == 0 ? PIOLA_CLOTH_SOLVER_PBD : PIOLA_CLOTH_SOLVER_XPBD, &mat));
      /* S / C^2 = q K3^2 ~ 2e4 / m^2 here: alpha~ = 1e4 makes the step partial. */
      double alpha_tilde = form == 1 ? 1e-12 : form == 2 ? 1e4 : 0.0;
      piola_v3 x[4] = {h[0], h[1], h[2], piola_v3_add(h[3], piola_v3_make(0, 0.0005, 0.001))};
      piola_v3 before = x[3];
      double u0 = piola_cloth_bend_energy(&rest, x[0], x[1], x[2], x[3]);
      double lambda = 0.0;
      int flags = piola_cloth_bend_project(&mat, &rest, alpha_tilde, &x[0], &x[1], &x[2], &x[3], 0,
                                           0, 0, 1.0, &lambda);
      double u1 = piola_cloth_bend_energy(&rest, x[0], x[1], x[2], x[3]);
      CHECK(t, flags == PIOLA_CLOTH_WORKED && lambda != 0.0);
      CHECK(t,
            v3_dist(x[0], h[0]) == 0.0 && v3_dist(x[1], h[1]) == 0.0 && v3_dist(x[2], h[2]) == 0.0);
      if (form == 0) {
        CHECK_MSG(t, fabs(u1 / u0 - 0.25) < (curved ? 0.02 : 1e-9),
                  "curved %d PBD: U %g -> %g (ratio %g)", curved, u0, u1, u1 / u0);
      } else if (form == 1 && !curved) {
        CHECK_MSG(t, u1 < 1e-18 * u0, "flat XPBD: U %g -> %g", u0, u1);
      } else if (form == 1) {
        /* Curved: r is nonlinear in x3 (through n_bar), one step is a Gauss-Newton step; it
         * converges quickly from there. */
        CHECK_MSG(t, u1 < 0.1 * u0, "curved XPBD: U %g -> %g", u0, u1);
        for (int it = 0; it < 7; ++it) {
          piola_cloth_bend_project(&mat, &rest, alpha_tilde, &x[0], &x[1], &x[2], &x[3], 0, 0, 0,
                                   1.0, &lambda);
        }
        double u8 = piola_cloth_bend_energy(&rest, x[0], x[1], x[2], x[3]);
        CHECK_MSG(t, u8 < 1e-7 * u0, "curved XPBD: U %g -> %g after 8 projections", u0, u8);
      } else {
        CHECK_MSG(t, u1 < u0 && u1 > 0.01 * u0, "curved %d compliant: U %g -> %g", curved, u0, u1);
        piola_v3 g[4];
        piola_cloth_bend_gradient(&rest, h[0], h[1], h[2], before, g);
        double c0 = sqrt(2.0 * u0);
        double residual =
            c0 + piola_v3_dot(g[3], piola_v3_sub(x[3], before)) / c0 + alpha_tilde * lambda;
        CHECK_MSG(t, fabs(residual) < 1e-9 * c0, "curved %d: XPBD residual %g (C = %g)", curved,
                  residual, c0);
      }
    }
    /* At rest, all pinned: nothing happens. */
    piola_cloth_bend_material mat;
    REQUIRE(t, piola_cloth_bend_material_make(1e-4, PIOLA_CLOTH_SOLVER_XPBD, &mat));
    piola_v3 y[4] = {h[0], h[1], h[2], h[3]};
    double lambda = 0.0;
    CHECK(t, piola_cloth_bend_project(&mat, &rest, 1.0, &y[0], &y[1], &y[2], &y[3], 1, 1, 1, 1,
                                      &lambda) == 0 &&
                 lambda == 0.0);
    y[3].z += 0.003;
    piola_v3 bent = y[3];
    CHECK(t, piola_cloth_bend_project(&mat, &rest, 1.0, &y[0], &y[1], &y[2], &y[3], 0, 0, 0, 0,
                                      &lambda) == 0 &&
                 lambda == 0.0 && v3_dist(y[3], bent) == 0.0);
  }
  /* A curved rest state folded onto itself: undefined there, no work, no NaN. */
  piola_v3 h[4];
  hinge(0.5, 0.0, h);
  piola_cloth_bend_rest rest;
  REQUIRE(t, piola_cloth_bend_init(h[0], h[1], h[2], h[3], &rest));
  piola_cloth_bend_material mat;
  REQUIRE(t, piola_cloth_bend_material_make(1e-4, PIOLA_CLOTH_SOLVER_XPBD, &mat));
  piola_v3 folded[4];
  hinge(PI, 0.0, folded);
  folded[3] = piola_v3_make(folded[2].x, folded[2].y, 0.0); /* onto the other wing */
  piola_v3 dx[4], g[4];
  double lambda = 0.0;
  CHECK(t, piola_cloth_bend_gradient(&rest, folded[0], folded[1], folded[2], folded[3], g) < 0.0);
  CHECK(t, piola_cloth_bend_correction(&mat, &rest, 1.0, 0.0, folded[0], folded[1], folded[2],
                                       folded[3], NULL, 1, 1, 1, 1, &lambda, dx) == 0 &&
               lambda == 0.0);
}
