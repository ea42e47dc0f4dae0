/* Material damping (piola_material.damping, XPBD's constraint damping, Macklin, Mueller,
 * Chentanez 2016, Eq. 26): a box released stretched loses its elastic oscillation, a pinned beam
 * settles to the same sag with and without it, and the OpenCL paths (per stage, per body, SIMD
 * packets with lanes of damped and undamped tets) follow the CPU reference. */
#include "piola_test.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A world for these tests on `backend` under `scheme` (the OpenCL schedule and lanes given), no
 * velocity damping unless `damping` (1/s), gravity on or off. */
static piola_world *damping_world_scheme(piola_test *t, piola_backend backend,
                                         piola_iteration_scheme scheme, piola_schedule schedule,
                                         int32_t lanes, int32_t iterations, float damping,
                                         bool gravity) {
  piola_world_def def = backend == PIOLA_BACKEND_OPENCL
                            ? opencl_test_world_def(PIOLA_BACKEND_OPENCL, NULL, NULL)
                            : piola_test_world_def(NULL, NULL);
  def.iteration_scheme = scheme;
  def.dt = 0.005f;
  def.substeps = 1;
  def.iterations = iterations;
  def.damping = damping;
  def.schedule = schedule;
  def.simd_lanes = lanes;
  if (!gravity) {
    def.gravity[0] = def.gravity[1] = def.gravity[2] = 0.0f;
  }
  piola_world *w = NULL;
  const piola_status s = piola_world_create(&def, &w);
  CHECK_MSG(t, s == PIOLA_OK && w != NULL, "piola_world_create: %s", piola_status_string(s));
  return s == PIOLA_OK ? w : NULL;
}

/* The same under Gauss-Seidel. */
static piola_world *damping_world(piola_test *t, piola_backend backend, piola_schedule schedule,
                                  int32_t lanes, int32_t iterations, float damping, bool gravity) {
  return damping_world_scheme(t, backend, PIOLA_SCHEME_GAUSS_SEIDEL, schedule, lanes, iterations,
                              damping, gravity);
}

/* `steps` steps of w, then its stats into *st; the first failing call's status. */
static piola_status steps_then_stats(piola_world *w, int steps, piola_stats *st) {
  piola_status s = PIOLA_OK;
  for (int step = 0; step < steps && s == PIOLA_OK; ++step) {
    s = piola_world_step(w);
  }
  return s == PIOLA_OK ? piola_world_get_stats(w, st) : s;
}

/* A free 0.3 m box (4 x 4 x 4 cells, Neo-Hookean, E 10 kPa) without gravity, released stretched
 * by 20% along x and at rest: its elastic and kinetic energy (J) after `steps` steps with the
 * material damping `damping` (s) under `scheme` at `iterations`, the energy at the start into
 * *start and the last step's relative residual into *residual (unless NULL). */
static double stretched_box_energy(piola_test *t, piola_backend backend,
                                   piola_iteration_scheme scheme, int32_t iterations, float damping,
                                   int steps, double *start, double *residual) {
  piola_world *w =
      damping_world_scheme(t, backend, scheme, PIOLA_SCHEDULE_AUTO, 0, iterations, 0.0f, false);
  piola_tet_mesh box = wt_box(4, 4, 4, 0.3f, 0.3f, 0.3f);
  double energy = NAN;
  if (w != NULL && box.vertex_count > 0) {
    piola_material mat = piola_default_material();
    mat.model = PIOLA_MODEL_NEOHOOKEAN;
    mat.youngs_modulus = 1e4f;
    mat.damping = damping;
    piola_body_id id;
    piola_status s = piola_world_add_tet_body(w, &box, &mat, NULL, &id);
    const int32_t n = box.vertex_count;
    float *x = malloc(sizeof *x * 3 * (size_t)n);
    if (s == PIOLA_OK && x != NULL) {
      memcpy(x, box.positions, sizeof *x * 3 * (size_t)n);
      for (int32_t i = 0; i < n; ++i) {
        x[3 * i] *= 1.2f;
      }
      s = piola_body_set_positions(w, id, x, n);
    }
    piola_stats st;
    for (int step = 0; step <= steps && s == PIOLA_OK; ++step) {
      if (step > 0) {
        s = piola_world_step(w);
      }
      if (s == PIOLA_OK) {
        s = piola_world_get_stats(w, &st);
      }
      if (step == 0 && s == PIOLA_OK) {
        *start = st.elastic_energy + st.kinetic_energy;
      }
    }
    CHECK_MSG(t, s == PIOLA_OK && x != NULL, "stretched box: %s", piola_status_string(s));
    if (s == PIOLA_OK) {
      energy = st.elastic_energy + st.kinetic_energy;
      if (residual != NULL) {
        *residual = st.relative_residual;
      }
    }
    free(x);
  }
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return energy;
}

/* Over 0.5 s the undamped box loses much of its energy by itself (implicit Euler damps a mode of
 * angular frequency w at about h w^2), 20 ms of material damping (beta w^2 on top) removes most
 * of the rest. Measured (both backends): 6.5 J at the start, 0.27 J undamped, 0.026 J damped. */
static void damping_decays(piola_test *t, piola_backend backend) {
  double start0 = 0.0, start1 = 0.0;
  const double free_energy =
      stretched_box_energy(t, backend, PIOLA_SCHEME_GAUSS_SEIDEL, 5, 0.0f, 100, &start0, NULL);
  const double damped =
      stretched_box_energy(t, backend, PIOLA_SCHEME_GAUSS_SEIDEL, 5, 2e-2f, 100, &start1, NULL);
  printf("  stretched box: energy %.4g J at the start, after 0.5 s %.4g J undamped, %.4g J with "
         "20 ms of damping\n",
         start0, free_energy, damped);
  CHECK(t, start0 > 1.0 && start0 == start1);
  CHECK_MSG(t, free_energy > 0.02 * start0, "undamped: %.4g J of %.4g J", free_energy, start0);
  CHECK_MSG(t, damped < 0.15 * free_energy, "damped: %.4g J, undamped %.4g J", damped, free_energy);
}

void test_material_damping_decays_oscillation(piola_test *t) {
  damping_decays(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_material_damping_decays_oscillation(piola_test *t) {
  if (opencl_test_ready(t)) {
    damping_decays(t, PIOLA_BACKEND_OPENCL);
  }
}

/* The box of stretched_box_energy, undeformed, spinning at 3 rad/s about the vertical through
 * its centre without gravity under `scheme` (5 iterations): its kinetic energy (J) after `steps`
 * steps with the material damping `damping` (s). */
static double spinning_box_energy(piola_test *t, piola_iteration_scheme scheme, float damping,
                                  int steps) {
  piola_world *w = damping_world_scheme(t, PIOLA_BACKEND_CPU_REFERENCE, scheme, PIOLA_SCHEDULE_AUTO,
                                        0, 5, 0.0f, false);
  piola_tet_mesh box = wt_box(4, 4, 4, 0.3f, 0.3f, 0.3f);
  double energy = NAN;
  const int32_t n = box.vertex_count;
  float *v = malloc(sizeof *v * 3 * (size_t)(n > 0 ? n : 1));
  if (w != NULL && n > 0 && v != NULL) {
    piola_material mat = piola_default_material();
    mat.model = PIOLA_MODEL_NEOHOOKEAN;
    mat.youngs_modulus = 1e4f;
    mat.damping = damping;
    piola_body_id id;
    piola_status s = piola_world_add_tet_body(w, &box, &mat, NULL, &id);
    double c[3] = {0.0, 0.0, 0.0};
    for (int32_t i = 0; i < n; ++i) {
      for (int k = 0; k < 3; ++k) {
        c[k] += box.positions[3 * i + k] / (double)n;
      }
    }
    for (int32_t i = 0; i < n; ++i) { /* v = omega x r, omega = 3 rad/s along y */
      v[3 * i] = (float)(3.0 * (box.positions[3 * i + 2] - c[2]));
      v[3 * i + 1] = 0.0f;
      v[3 * i + 2] = (float)(-3.0 * (box.positions[3 * i] - c[0]));
    }
    if (s == PIOLA_OK) {
      s = piola_body_set_velocities(w, id, v, n);
    }
    piola_stats st;
    s = s == PIOLA_OK ? steps_then_stats(w, steps, &st) : s;
    CHECK_MSG(t, s == PIOLA_OK, "spinning box: %s", piola_status_string(s));
    energy = s == PIOLA_OK ? st.kinetic_energy : NAN;
  }
  free(v);
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return energy;
}

/* Under the multigrid scheme the material damping is XPBD's, in the Newton step
 * (src/host/newton.c): the stretched box loses its oscillation as under Gauss-Seidel; with 20 ms
 * its energy after 0.1 s is Gauss-Seidel's at 200 iterations (both near the same damped implicit
 * step); its step's relative residual, which counts XPBD's damping forces, is as small as the
 * undamped one's (the Newton step stops at the damped projection's fixed point); and a spinning
 * box keeps its kinetic energy (the damping acts on deformation only). Measured: 6.50 J at the
 * start, 0.275 / 0.0244 J after 0.5 s, 0.684 J after 0.1 s (Gauss-Seidel 0.695 J), residuals
 * 5e-10 / 2e-8, spinning 1.9429 / 1.9436 J. */
void test_multigrid_material_damping(piola_test *t) {
  const piola_iteration_scheme mg = PIOLA_SCHEME_MULTIGRID, gs = PIOLA_SCHEME_GAUSS_SEIDEL;
  const piola_backend cpu = PIOLA_BACKEND_CPU_REFERENCE;
  double start0 = 0.0, start1 = 0.0, start2 = 0.0, r0 = NAN, r1 = NAN;
  const double free_energy = stretched_box_energy(t, cpu, mg, 5, 0.0f, 100, &start0, NULL);
  const double damped = stretched_box_energy(t, cpu, mg, 5, 2e-2f, 100, &start1, NULL);
  const double mg_short = stretched_box_energy(t, cpu, mg, 5, 2e-2f, 20, &start2, &r1);
  const double gs_short = stretched_box_energy(t, cpu, gs, 200, 2e-2f, 20, &start2, NULL);
  stretched_box_energy(t, cpu, mg, 5, 0.0f, 20, &start2, &r0);
  const double spin0 = spinning_box_energy(t, mg, 0.0f, 100);
  const double spin1 = spinning_box_energy(t, mg, 2e-2f, 100);
  printf("  stretched box: energy %.4g J at the start, after 0.5 s %.4g J undamped, %.4g J with "
         "20 ms; after 0.1 s with 20 ms %.5g J (Gauss-Seidel at 200 iterations %.5g J)\n",
         start0, free_energy, damped, mg_short, gs_short);
  printf("  spinning box: kinetic energy after 0.5 s %.6g J undamped, %.6g J with 20 ms\n", spin0,
         spin1);
  printf("  relative residual of the 20th step: %.3g undamped, %.3g with 20 ms\n", r0, r1);
  CHECK(t, start0 > 1.0 && start0 == start1);
  CHECK_MSG(t, free_energy > 0.02 * start0, "undamped: %.4g J of %.4g J", free_energy, start0);
  CHECK_MSG(t, damped < 0.15 * free_energy, "damped: %.4g J, undamped %.4g J", damped, free_energy);
  CHECK_MSG(t, fabs(mg_short - gs_short) < 0.05 * gs_short,
            "after 0.1 s: %.5g J, Gauss-Seidel %.5g J", mg_short, gs_short);
  CHECK_MSG(t, r0 < 1e-5 && r1 < 1e-5, "relative residual %.3g undamped, %.3g damped", r0, r1);
  CHECK_MSG(t, spin0 > 0.1 && fabs(spin1 - spin0) < 1e-3 * spin0,
            "spinning: %.6g J damped, %.6g J undamped", spin1, spin0);
}

/* A column (2 x 6 x 2 cells, 0.2 x 0.6 x 0.2 m, StVK, E 100 kPa) standing on frictionless ground,
 * settled
 * by 5 1/s of velocity damping over 3 s with `iterations` per substep: the mean vertical
 * displacement of its top (m, negative: down) with the material damping `damping` (s). */
static double column_sag(piola_test *t, piola_backend backend, int32_t iterations, float damping) {
  piola_world *w = damping_world(t, backend, PIOLA_SCHEDULE_AUTO, 0, iterations, 5.0f, true);
  piola_tet_mesh column = wt_box(2, 6, 2, 0.2f, 0.6f, 0.2f);
  double sag = NAN;
  if (w != NULL && column.vertex_count > 0) {
    const float up[3] = {0.0f, 1.0f, 0.0f};
    piola_status s = piola_world_add_plane(w, up, 0.0f, 0.0f, NULL);
    piola_material mat = piola_default_material();
    mat.damping = damping;
    piola_body_id id;
    if (s == PIOLA_OK) {
      s = piola_world_add_tet_body(w, &column, &mat, NULL, &id);
    }
    for (int step = 0; step < 600 && s == PIOLA_OK; ++step) {
      s = piola_world_step(w);
    }
    const int32_t n = column.vertex_count;
    float *x = malloc(sizeof *x * 3 * (size_t)n);
    if (s == PIOLA_OK && x != NULL) {
      s = piola_body_get_positions(w, id, x, n);
    }
    CHECK_MSG(t, s == PIOLA_OK && x != NULL, "column: %s", piola_status_string(s));
    if (s == PIOLA_OK && x != NULL) {
      double sum = 0.0;
      int32_t count = 0;
      for (int32_t i = 0; i < n; ++i) {
        if (column.positions[3 * i + 1] == 0.6f) {
          sum += (double)x[3 * i + 1] - column.positions[3 * i + 1];
          count++;
        }
      }
      sag = sum / count;
    }
    free(x);
  }
  piola_mesh_free(&column);
  piola_world_destroy(w);
  return sag;
}

/* The damping moves no equilibrium of the implicit step: the settled sag with 5 ms of damping is
 * the undamped one (frictionless ground, so that the base's spread is not path-dependent).
 * Measured: 18.906 mm undamped, 18.881 mm damped, the same at 5 and at 40 iterations: XPBD's
 * fixed point itself depends by that much on the path of its iterates (it drops the change of
 * the gradients between iterations, Macklin et al. 2016, Eq. 11), which the damping changes. */
static void damping_keeps_sag(piola_test *t, piola_backend backend) {
  const double sag0 = column_sag(t, backend, 5, 0.0f), sag1 = column_sag(t, backend, 5, 5e-3f);
  printf("  column: settled sag %.6f m undamped, %.6f m with 5 ms of damping\n", -sag0, -sag1);
  CHECK_MSG(t, -sag0 > 0.005, "undamped sag %.4g m", -sag0);
  CHECK_MSG(t, fabs(sag1 - sag0) <= 3e-3 * fabs(sag0), "sag %.6f m damped, %.6f m undamped", -sag1,
            -sag0);
}

void test_material_damping_keeps_sag(piola_test *t) {
  damping_keeps_sag(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_material_damping_keeps_sag(piola_test *t) {
  if (opencl_test_ready(t)) {
    damping_keeps_sag(t, PIOLA_BACKEND_OPENCL);
  }
}

/* Two boxes (3 x 3 x 3 cells, 0.3 m) dropped stretched onto the ground, one with 2 ms of
 * material damping and one without (so that packets hold lanes of both): the positions after
 * 80 steps on `backend` into x (3 floats per vertex, both boxes). */
static bool two_boxes(piola_test *t, piola_backend backend, piola_schedule schedule, int32_t lanes,
                      float *x, int32_t n) {
  piola_world *w = damping_world(t, backend, schedule, lanes, 5, 0.0f, true);
  piola_tet_mesh box = wt_box(3, 3, 3, 0.3f, 0.3f, 0.3f);
  bool ok = false;
  if (w != NULL && box.vertex_count > 0 && 2 * box.vertex_count == n) {
    const float up[3] = {0.0f, 1.0f, 0.0f};
    piola_status s = piola_world_add_plane(w, up, 0.0f, 0.5f, NULL);
    piola_body_id id[2];
    for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
      piola_material mat = piola_default_material();
      mat.model = PIOLA_MODEL_NEOHOOKEAN;
      mat.youngs_modulus = 1e6f;
      mat.damping = k == 0 ? 2e-3f : 0.0f;
      const float at[3] = {0.5f * (float)k, 0.1f, 0.0f};
      s = piola_world_add_tet_body(w, &box, &mat, at, &id[k]);
      float *p = x + 3 * (size_t)k * (size_t)box.vertex_count;
      for (int32_t i = 0; i < box.vertex_count && s == PIOLA_OK; ++i) {
        p[3 * i] = at[0] + 1.2f * box.positions[3 * i];
        p[3 * i + 1] = at[1] + box.positions[3 * i + 1];
        p[3 * i + 2] = at[2] + box.positions[3 * i + 2];
      }
      if (s == PIOLA_OK) {
        s = piola_body_set_positions(w, id[k], p, box.vertex_count);
      }
    }
    for (int step = 0; step < 80 && s == PIOLA_OK; ++step) {
      s = piola_world_step(w);
    }
    for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
      s = piola_body_get_positions(w, id[k], x + 3 * (size_t)k * (size_t)box.vertex_count,
                                   box.vertex_count);
    }
    piola_stats st;
    if (s == PIOLA_OK) {
      s = piola_world_get_stats(w, &st);
    }
    CHECK_MSG(t, s != PIOLA_OK || backend != PIOLA_BACKEND_OPENCL || st.simd_lanes == lanes,
              "%d lanes, asked for %d", (int)st.simd_lanes, (int)lanes);
    CHECK_MSG(t, s == PIOLA_OK, "two boxes: %s", piola_status_string(s));
    ok = s == PIOLA_OK;
  }
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return ok;
}

/* Per stage, per body and in packets of 8 lanes the OpenCL backend follows the CPU reference.
 * Measured: gaps of 3.9e-7 m on PoCL in all three. */
void test_opencl_parity_material_damping(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh box = wt_box(3, 3, 3, 0.3f, 0.3f, 0.3f);
  REQUIRE(t, box.vertex_count > 0);
  const int32_t n = 2 * box.vertex_count;
  piola_mesh_free(&box);
  float *ref = malloc(sizeof *ref * 3 * (size_t)n), *cand = malloc(sizeof *cand * 3 * (size_t)n);
  REQUIRE(t, ref != NULL && cand != NULL);
  if (two_boxes(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEDULE_AUTO, 0, ref, n)) {
    /* The damping made a difference: the damped box is not where the undamped one is. */
    double apart = 0.0;
    for (int32_t i = 0; i < 3 * (n / 2); ++i) {
      const double shift = i % 3 == 0 ? 0.5 : 0.0;
      apart = fmax(apart, fabs((double)ref[i] + shift - (double)ref[3 * (n / 2) + i]));
    }
    printf("  material damping: the damped box is up to %.3g m from where the undamped one is\n",
           apart);
    CHECK_MSG(t, apart > 1e-3, "the boxes differ by %.3g m only", apart);
    static const struct {
      piola_schedule schedule;
      int32_t lanes;
      const char *name;
    } runs[3] = {{PIOLA_SCHEDULE_STAGES, 1, "per stage"},
                 {PIOLA_SCHEDULE_BODIES, 1, "per body"},
                 {PIOLA_SCHEDULE_STAGES, 8, "packets of 8"}};
    for (int r = 0; r < 3; ++r) {
      if (!two_boxes(t, PIOLA_BACKEND_OPENCL, runs[r].schedule, runs[r].lanes, cand, n)) {
        continue;
      }
      double gap = 0.0;
      for (int32_t i = 0; i < 3 * n; ++i) {
        gap = fmax(gap, fabs((double)ref[i] - (double)cand[i]));
      }
      printf("  material damping, %s: largest gap to the CPU reference %.3g m\n", runs[r].name,
             gap);
      CHECK_MSG(t, gap <= 5e-5, "%s: %.3g m from the CPU reference", runs[r].name, gap);
    }
  }
  free(ref);
  free(cand);
}

/* A free cloth sheet (8 x 8 cells, 0.5 m, stretch moduli 10 N/m, shear 1 N/m, bending on) without
 * gravity, released stretched by 10% along x, flat or (`bump`) lifted by 2 cm sin(pi u / 0.5 m)
 * across x so that it bends too, under `scheme` at `iterations`: the positions after `steps` steps
 * into x (3 floats per vertex), its kinetic plus elastic energy (J) with the material damping
 * `damping` (s) and the last step's relative residual into *residual (unless NULL). */
static double cloth_energy_scheme(piola_test *t, piola_backend backend,
                                  piola_iteration_scheme scheme, int32_t iterations, bool bump,
                                  float damping, int steps, float *x, int32_t n, double *residual) {
  piola_world *w =
      damping_world_scheme(t, backend, scheme, PIOLA_SCHEDULE_AUTO, 0, iterations, 0.0f, false);
  const int32_t cells[2] = {8, 8};
  const float size[2] = {0.5f, 0.5f};
  piola_tri_mesh sheet;
  memset(&sheet, 0, sizeof sheet);
  double energy = NAN;
  if (w != NULL && piola_mesh_make_grid(cells, size, &sheet) == PIOLA_OK &&
      sheet.vertex_count == n) {
    piola_cloth_material mat = piola_default_cloth_material();
    mat.stretch_weft = mat.stretch_warp = 10.0f;
    mat.shear = 1.0f;
    mat.damping = damping;
    piola_body_id id;
    piola_status s = piola_world_add_cloth(w, &sheet, &mat, NULL, &id);
    for (int32_t i = 0; i < n; ++i) {
      const float u = sheet.positions[3 * i];
      x[3 * i] = 1.1f * u;
      x[3 * i + 1] = bump ? 0.02f * sinf(3.14159265f * u / 0.5f) : 0.0f;
      x[3 * i + 2] = sheet.positions[3 * i + 2];
    }
    if (s == PIOLA_OK) {
      s = piola_body_set_positions(w, id, x, n);
    }
    piola_stats st;
    s = s == PIOLA_OK ? steps_then_stats(w, steps, &st) : s;
    if (s == PIOLA_OK) {
      s = piola_body_get_positions(w, id, x, n);
    }
    CHECK_MSG(t, s == PIOLA_OK, "cloth: %s", piola_status_string(s));
    if (s == PIOLA_OK) {
      energy = st.kinetic_energy + st.elastic_energy;
      if (residual != NULL) {
        *residual = st.relative_residual;
      }
    }
  }
  piola_tri_mesh_free(&sheet);
  piola_world_destroy(w);
  return energy;
}

/* The flat sheet under Gauss-Seidel. */
static double cloth_energy(piola_test *t, piola_backend backend, float damping, int steps, float *x,
                           int32_t n) {
  return cloth_energy_scheme(t, backend, PIOLA_SCHEME_GAUSS_SEIDEL, 5, false, damping, steps, x, n,
                             NULL);
}

/* The cloth material's damping: the released sheet's energy after 0.25 s falls well below the
 * undamped sheet's, and the OpenCL backend follows the CPU reference with and without it.
 * Measured: 1.1e-3 J undamped, 7.8e-5 J damped (both backends), a gap of 6e-8 m. */
static void cloth_damping(piola_test *t, bool opencl) {
  const int32_t n = 81;
  float *a = malloc(sizeof *a * 3 * (size_t)n), *b = malloc(sizeof *b * 3 * (size_t)n);
  REQUIRE(t, a != NULL && b != NULL);
  const piola_backend backend = opencl ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE;
  const double free_energy = cloth_energy(t, backend, 0.0f, 50, a, n);
  const double damped = cloth_energy(t, backend, 2e-2f, 50, a, n);
  printf("  cloth: energy after 0.25 s %.4g J undamped, %.4g J with 20 ms of damping\n",
         free_energy, damped);
  CHECK_MSG(t, free_energy > 0.0 && damped < 0.1 * free_energy, "damped %.4g J, undamped %.4g J",
            damped, free_energy);
  if (opencl) {
    (void)cloth_energy(t, PIOLA_BACKEND_CPU_REFERENCE, 2e-2f, 50, b, n);
    double gap = 0.0;
    for (int32_t i = 0; i < 3 * n; ++i) {
      gap = fmax(gap, fabs((double)a[i] - (double)b[i]));
    }
    printf("  cloth with damping: largest gap to the CPU reference %.3g m\n", gap);
    CHECK_MSG(t, gap <= 5e-5, "%.3g m from the CPU reference", gap);
  }
  free(a);
  free(b);
}

void test_cloth_material_damping(piola_test *t) {
  cloth_damping(t, false);
}

void test_opencl_cloth_material_damping(piola_test *t) {
  if (opencl_test_ready(t)) {
    cloth_damping(t, true);
  }
}

/* The cloth material's damping under the multigrid scheme (membrane and bending in the Newton
 * step): the stretched, bumped sheet's energy after 0.25 s falls well below the undamped sheet's;
 * the step's relative residual, which counts XPBD's damping forces of both energies, falls with
 * the iterations towards the undamped one's: the solve stops at the damped fixed point, more
 * slowly than without damping (the damping's directions are held through each Newton step, and
 * a membrane's turn near its rest state). Measured: 1.1e-3 J undamped, 9.3e-5 J damped;
 * residuals 7e-9 undamped, 0.020 damped at 5 iterations and 1.5e-3 at 30. */
void test_multigrid_cloth_material_damping(piola_test *t) {
  const int32_t n = 81;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  REQUIRE(t, x != NULL);
  const piola_backend cpu = PIOLA_BACKEND_CPU_REFERENCE;
  const piola_iteration_scheme mg = PIOLA_SCHEME_MULTIGRID;
  double r0 = NAN, r1 = NAN, r2 = NAN;
  const double free_energy = cloth_energy_scheme(t, cpu, mg, 5, true, 0.0f, 50, x, n, &r0);
  const double damped = cloth_energy_scheme(t, cpu, mg, 5, true, 2e-2f, 50, x, n, &r1);
  (void)cloth_energy_scheme(t, cpu, mg, 30, true, 2e-2f, 50, x, n, &r2);
  printf("  cloth, multigrid: energy after 0.25 s %.4g J undamped, %.4g J with 20 ms; relative "
         "residual %.3g undamped, %.3g damped (%.3g at 30 iterations)\n",
         free_energy, damped, r0, r1, r2);
  CHECK_MSG(t, free_energy > 0.0 && damped < 0.1 * free_energy, "damped %.4g J, undamped %.4g J",
            damped, free_energy);
  CHECK_MSG(t, r0 < 1e-6 && r1 < 0.05 && r2 < 2e-3 && r2 < 0.1 * r1,
            "relative residual %.3g undamped, %.3g damped (%.3g at 30 iterations)", r0, r1, r2);
  free(x);
}

/* A box of 8 x 8 x 8 cells (0.3 m, Neo-Hookean, E 1 MPa) turned by an arbitrary rotation and
 * 11 m up, falling freely for 10 steps under the multigrid scheme with material damping `damping`:
 * its positions into x (3 floats per vertex) and the conjugate-gradient iterations of the steps. */
static int32_t falling_box(piola_test *t, float damping, float *x, int32_t n) {
  piola_tet_mesh box = wt_box(8, 8, 8, 0.3f, 0.3f, 0.3f);
  piola_world *w = damping_world_scheme(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEME_MULTIGRID,
                                        PIOLA_SCHEDULE_AUTO, 0, 5, 0.0f, true);
  int32_t cg = -1;
  if (w != NULL && box.vertex_count == n) {
    const double a = 0.7, b = 1.1;
    for (int32_t i = 0; i < n; ++i) {
      const double px = box.positions[3 * i], py = box.positions[3 * i + 1],
                   pz = box.positions[3 * i + 2];
      const double x1 = px * cos(a) - py * sin(a), y1 = px * sin(a) + py * cos(a);
      box.positions[3 * i] = (float)(x1 * cos(b) + pz * sin(b) + 3.7);
      box.positions[3 * i + 1] = (float)(y1 + 11.2);
      box.positions[3 * i + 2] = (float)(-x1 * sin(b) + pz * cos(b) - 5.3);
    }
    piola_material mat = piola_default_material();
    mat.model = PIOLA_MODEL_NEOHOOKEAN;
    mat.youngs_modulus = 1e6f;
    mat.damping = damping;
    piola_body_id id;
    piola_status s = piola_world_add_tet_body(w, &box, &mat, NULL, &id);
    cg = 0;
    for (int step = 0; step < 10 && s == PIOLA_OK; ++step) {
      s = piola_world_step(w);
      piola_stats st;
      if (s == PIOLA_OK) {
        s = piola_world_get_stats(w, &st);
      }
      cg += s == PIOLA_OK ? st.linear_iterations : 0;
    }
    if (s == PIOLA_OK) {
      s = piola_body_get_positions(w, id, x, n);
    }
    CHECK_MSG(t, s == PIOLA_OK, "falling box: %s", piola_status_string(s));
  }
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return cg;
}

/* Under the multigrid scheme the damping acts on deformation only, and a tet at rest has no
 * damping direction (below the projection's rest threshold its g / sqrt(u) is rounding): a damped
 * box falling freely lands where the undamped one does, with the same linear solves. Measured: 300
 * conjugate-gradient iterations each; with the rounding's directions kept, 700. */
void test_multigrid_damping_leaves_free_fall(piola_test *t) {
  const int32_t n = 9 * 9 * 9;
  float *a = malloc(sizeof *a * 3 * (size_t)n), *b = malloc(sizeof *b * 3 * (size_t)n);
  REQUIRE(t, a != NULL && b != NULL);
  const int32_t cg0 = falling_box(t, 0.0f, a, n), cg1 = falling_box(t, 1e-2f, b, n);
  double gap = 0.0;
  for (int32_t i = 0; i < 3 * n; ++i) {
    gap = fmax(gap, fabs((double)a[i] - (double)b[i]));
  }
  printf("  falling box: %d CG iterations undamped, %d with 10 ms; positions %.3g m apart\n",
         (int)cg0, (int)cg1, gap);
  CHECK_MSG(t, cg0 > 0 && cg1 == cg0, "CG iterations %d undamped, %d damped", (int)cg0, (int)cg1);
  CHECK_MSG(t, gap == 0.0, "positions %.3g m apart", gap);
  free(a);
  free(b);
}

/* Under vertex block descent the material damping is XPBD's forces in each vertex's block
 * (piola_tet_damping_block, as the multigrid scheme's Newton step has them): the stretched box
 * loses its oscillation; with 20 ms its energy after 0.1 s at 200 iterations is Gauss-Seidel's at
 * 200 (both near the same damped implicit step) and the step's relative residual, which counts
 * the damping's forces, is small; a spinning box keeps its kinetic energy. The damped cloth
 * loses its energy too. Measured (CPU reference) in the printed lines. */
void test_vbd_material_damping(piola_test *t) {
  const piola_iteration_scheme vbd = PIOLA_SCHEME_VBD, gs = PIOLA_SCHEME_GAUSS_SEIDEL;
  const piola_backend cpu = PIOLA_BACKEND_CPU_REFERENCE;
  double start0 = 0.0, start1 = 0.0, start2 = 0.0, r1 = NAN;
  const double free_energy = stretched_box_energy(t, cpu, vbd, 5, 0.0f, 100, &start0, NULL);
  const double damped = stretched_box_energy(t, cpu, vbd, 5, 2e-2f, 100, &start1, NULL);
  const double vbd_short = stretched_box_energy(t, cpu, vbd, 200, 2e-2f, 20, &start2, &r1);
  const double gs_short = stretched_box_energy(t, cpu, gs, 200, 2e-2f, 20, &start2, NULL);
  const double spin0 = spinning_box_energy(t, vbd, 0.0f, 100);
  const double spin1 = spinning_box_energy(t, vbd, 2e-2f, 100);
  const int32_t n = 81;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  REQUIRE(t, x != NULL);
  const double cloth_free = cloth_energy_scheme(t, cpu, vbd, 5, true, 0.0f, 50, x, n, NULL);
  const double cloth_damped = cloth_energy_scheme(t, cpu, vbd, 5, true, 2e-2f, 50, x, n, NULL);
  free(x);
  printf("  stretched box, VBD: energy %.4g J at the start, after 0.5 s %.4g J undamped, %.4g J "
         "with 20 ms; after 0.1 s with 20 ms at 200 iterations %.5g J (Gauss-Seidel %.5g J), "
         "relative residual %.3g\n",
         start0, free_energy, damped, vbd_short, gs_short, r1);
  printf("  spinning box, VBD: kinetic energy after 0.5 s %.6g J undamped, %.6g J with 20 ms\n",
         spin0, spin1);
  printf("  cloth, VBD: energy after 0.25 s %.4g J undamped, %.4g J with 20 ms\n", cloth_free,
         cloth_damped);
  CHECK(t, start0 > 1.0 && start0 == start1);
  CHECK_MSG(t, free_energy > 0.02 * start0, "undamped: %.4g J of %.4g J", free_energy, start0);
  CHECK_MSG(t, damped < 0.15 * free_energy, "damped: %.4g J, undamped %.4g J", damped, free_energy);
  CHECK_MSG(t, fabs(vbd_short - gs_short) < 0.05 * gs_short,
            "after 0.1 s: %.5g J, Gauss-Seidel %.5g J", vbd_short, gs_short);
  CHECK_MSG(t, r1 < 1e-8, "relative residual %.3g at 200 iterations", r1);
  CHECK_MSG(t, spin0 > 0.1 && fabs(spin1 - spin0) < 1e-3 * spin0,
            "spinning: %.6g J damped, %.6g J undamped", spin1, spin0);
  CHECK_MSG(t, cloth_free > 0.0 && cloth_damped < 0.2 * cloth_free,
            "cloth: damped %.4g J, undamped %.4g J", cloth_damped, cloth_free);
}

/* The same on an OpenCL world (both of its VBD paths: the tets' blocks in SIMD lanes on CPU
 * devices, one work-item per vertex elsewhere and for the cloth): the stretched box and the
 * cloth lose their energy as on the CPU reference. */
void test_opencl_vbd_material_damping(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const piola_iteration_scheme vbd = PIOLA_SCHEME_VBD;
  double start = 0.0;
  const double ref =
      stretched_box_energy(t, PIOLA_BACKEND_CPU_REFERENCE, vbd, 5, 2e-2f, 100, &start, NULL);
  const double ocl =
      stretched_box_energy(t, PIOLA_BACKEND_OPENCL, vbd, 5, 2e-2f, 100, &start, NULL);
  const double ocl_free =
      stretched_box_energy(t, PIOLA_BACKEND_OPENCL, vbd, 5, 0.0f, 100, &start, NULL);
  const int32_t n = 81;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  REQUIRE(t, x != NULL);
  const double cloth_ref =
      cloth_energy_scheme(t, PIOLA_BACKEND_CPU_REFERENCE, vbd, 5, true, 2e-2f, 50, x, n, NULL);
  const double cloth_ocl =
      cloth_energy_scheme(t, PIOLA_BACKEND_OPENCL, vbd, 5, true, 2e-2f, 50, x, n, NULL);
  free(x);
  printf("  VBD with 20 ms: stretched box after 0.5 s %.5g J (reference %.5g J, undamped %.4g J); "
         "cloth after 0.25 s %.5g J (reference %.5g J)\n",
         ocl, ref, ocl_free, cloth_ocl, cloth_ref);
  CHECK_MSG(t, fabs(ocl - ref) < 0.005 * ref, "box: %.5g J, reference %.5g J", ocl, ref);
  CHECK_MSG(t, ocl < 0.15 * ocl_free, "box: damped %.4g J, undamped %.4g J", ocl, ocl_free);
  CHECK_MSG(t, fabs(cloth_ocl - cloth_ref) < 0.01 * cloth_ref, "cloth: %.5g J, reference %.5g J",
            cloth_ocl, cloth_ref);
}
