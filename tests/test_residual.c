/* The convergence measures piola_stats.relative_residual and coarse_residual (src/host/residual.c)
 * on both backends:
 * exactly zero where the step is the implicit step (a body in free fall at rest shape), zero
 * until a step's prediction belongs to the state, falling with the substep where XPBD's
 * stationary state approaches the implicit step, near one for a stiff body at one iteration,
 * and the unconverged-step warning, once. */
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A 0.25 x 0.5 x 0.25 m column of n x 2n x n cells (Neo-Hookean, nu 0, E youngs, 1000 kg/m^3)
 * standing on a ground plane, or in free fall without one. */
static piola_world *column(piola_test *t, piola_backend backend, capture_log *log, int32_t n,
                           float youngs, int32_t substeps, int32_t iterations, bool ground,
                           piola_body_id *body) {
  piola_world_def def = opencl_test_world_def(backend, log, NULL);
  def.substeps = substeps;
  def.iterations = iterations;
  def.contacts = false;
  piola_world *w = NULL;
  if (piola_world_create(&def, &w) != PIOLA_OK) {
    CHECK(t, false);
    return NULL;
  }
  const float up[3] = {0.0f, 1.0f, 0.0f};
  if (ground) {
    CHECK_STATUS(t, piola_world_add_plane(w, up, 0.0f, 0.5f, NULL), PIOLA_OK);
  }
  piola_tet_mesh mesh = wt_box(n, 2 * n, n, 0.25f, 0.5f, 0.25f);
  piola_material m = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, youngs);
  m.poisson_ratio = 0.0f;
  CHECK_STATUS(t, piola_world_add_tet_body(w, &mesh, &m, NULL, body), PIOLA_OK);
  piola_mesh_free(&mesh);
  return w;
}

/* The stats after `steps` more steps. */
static piola_stats stats_after(piola_test *t, piola_world *w, int32_t steps) {
  for (int32_t s = 0; s < steps; ++s) {
    CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  }
  piola_stats st;
  memset(&st, 0, sizeof st);
  CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
  return st;
}

static void check_free_fall(piola_test *t, piola_backend backend) {
  capture_log log;
  piola_body_id b;
  piola_world *w = column(t, backend, &log, 2, 1e5f, 1, 5, false, &b);
  REQUIRE(t, w != NULL);
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
  CHECK(t, st.relative_residual == 0.0 && st.coarse_residual == 0.0); /* no step yet */
  /* Undeformed in free fall: the step is the prediction, and the rest shape has no force; on
   * the device the positions are floats, whose rounding (about 1e-7 of the 0.5 m column) strains
   * the tets by as much, with elastic forces of 1e-7 E times the tets' areas against the
   * column's weight. */
  st = stats_after(t, w, 5);
  printf("  free fall: relative residual %.3g, coarse %.3g\n", st.relative_residual,
         st.coarse_residual);
  const double bound = backend == PIOLA_BACKEND_OPENCL ? 1e-4 : 1e-12;
  CHECK(t, st.relative_residual >= 0.0 && st.relative_residual < bound);
  CHECK(t, st.coarse_residual >= 0.0 && st.coarse_residual < bound);
  /* Positions set: the last step's prediction no longer belongs to the state. */
  float x[3 * 200];
  const int32_t nv = piola_body_get_vertex_count(w, b);
  REQUIRE(t, nv <= 200);
  CHECK_STATUS(t, piola_body_get_positions(w, b, x, nv), PIOLA_OK);
  CHECK_STATUS(t, piola_body_set_positions(w, b, x, nv), PIOLA_OK);
  CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
  CHECK(t, st.relative_residual == 0.0 && st.coarse_residual == 0.0);
  CHECK(t, log.count[PIOLA_LOG_WARNING] == 0);
  piola_world_destroy(w);
}

void test_residual_free_fall_is_zero(piola_test *t) {
  check_free_fall(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_residual_free_fall_is_zero(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  check_free_fall(t, PIOLA_BACKEND_OPENCL);
}

/* A column settled on the ground: XPBD's stationary state leaves a residual that falls with the
 * substep (the motion its constraint gradients make within a substep), not with iterations; the
 * ground's vertices are left out (their collider force is unknown). */
static void check_substeps(piola_test *t, piola_backend backend) {
  capture_log log;
  piola_body_id b;
  piola_stats st[2];
  const int32_t substeps[2] = {1, 4};
  for (int k = 0; k < 2; ++k) {
    piola_world *w = column(t, backend, &log, 4, 1e5f, substeps[k], 5, true, &b);
    REQUIRE(t, w != NULL);
    st[k] = stats_after(t, w, 300);
    piola_world_destroy(w);
  }
  printf("  settled column, 768 tets: relative residual %.3g / %.3g, coarse %.3g / %.3g at 1 / 4 "
         "substeps\n",
         st[0].relative_residual, st[1].relative_residual, st[0].coarse_residual,
         st[1].coarse_residual);
  CHECK(t, st[0].relative_residual > 0.05 && st[0].relative_residual < 0.5);
  CHECK(t, st[1].relative_residual < 0.3 * st[0].relative_residual);
  CHECK(t, st[1].coarse_residual < 0.3 * st[0].coarse_residual);
  /* The coarse sums cancel the finest modes: never above the fine measure here, and the settled
   * column's shape (its sag within 2% of the closed form at every substep count) does not warn. */
  for (int k = 0; k < 2; ++k) {
    CHECK(t, st[k].coarse_residual <= st[k].relative_residual * 1.0001);
  }
  CHECK(t, st[0].coarse_residual < PIOLA_RESIDUAL_WARNING);
  CHECK(t, log.count[PIOLA_LOG_WARNING] == 0);
}

void test_residual_falls_with_substeps(piola_test *t) {
  check_substeps(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_residual_falls_with_substeps(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  check_substeps(t, PIOLA_BACKEND_OPENCL);
}

/* A stiff column (1 GPa) at one iteration: its elastic forces are nowhere near balanced, the
 * residual stays near 1, and the logger warns once, naming the body and what to change. */
static void check_warning(piola_test *t, piola_backend backend) {
  capture_log log;
  piola_body_id b;
  piola_world *w = column(t, backend, &log, 4, 1e9f, 1, 1, true, &b);
  REQUIRE(t, w != NULL);
  double lowest = 1.0;
  for (int32_t s = 0; s < 2 * PIOLA_RESIDUAL_WARNING_STEPS + 5; ++s) {
    const piola_stats st = stats_after(t, w, 1);
    lowest = s >= 5 && st.coarse_residual < lowest ? st.coarse_residual : lowest;
    if (s == PIOLA_RESIDUAL_WARNING_STEPS - 1) {
      CHECK(t, log.count[PIOLA_LOG_WARNING] == 0); /* not yet: it must stay above */
    }
  }
  printf("  stiff column at 1 iteration: coarse residual at least %.4f\n", lowest);
  CHECK(t, lowest > PIOLA_RESIDUAL_WARNING);
  CHECK(t, log.count[PIOLA_LOG_WARNING] == 1);
  CHECK(t, strstr(log.text, "unconverged: body 1") != NULL);
  CHECK(t, strstr(log.text, "substeps") != NULL && strstr(log.text, "iterations") != NULL);
  piola_world_destroy(w);
}

void test_residual_unconverged_warns_once(piola_test *t) {
  check_warning(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_residual_unconverged_warns_once(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  check_warning(t, PIOLA_BACKEND_OPENCL);
}

/* A box released stretched by 20% along y, without gravity, rings with and without 5 ms of
 * material damping (16 substeps of 5 iterations: near the implicit step): the measure counts the
 * damping's forces, so the damped box reads as small a residual as the undamped one (without
 * them it read 0.06 to 0.10 here). */
static void check_damping(piola_test *t, piola_backend backend) {
  double r[2] = {0.0, 0.0}, kinetic[2] = {0.0, 0.0};
  for (int k = 0; k < 2; ++k) {
    piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
    def.substeps = 16;
    def.iterations = 5;
    def.contacts = false;
    def.gravity[1] = 0.0f;
    piola_world *w = NULL;
    REQUIRE_OK(t, piola_world_create(&def, &w));
    piola_tet_mesh mesh = wt_box(2, 4, 2, 0.25f, 0.5f, 0.25f);
    piola_material m = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1e5f);
    m.damping = k == 0 ? 0.0f : 0.005f;
    piola_body_id b;
    REQUIRE_OK(t, piola_world_add_tet_body(w, &mesh, &m, NULL, &b));
    for (int32_t i = 0; i < mesh.vertex_count; ++i) {
      mesh.positions[3 * i + 1] *= 1.2f;
    }
    REQUIRE_OK(t, piola_body_set_positions(w, b, mesh.positions, mesh.vertex_count));
    piola_mesh_free(&mesh);
    for (int32_t s = 0; s < 5; ++s) {
      const piola_stats st = stats_after(t, w, 8);
      r[k] = fmax(r[k], st.relative_residual);
      kinetic[k] = st.kinetic_energy;
    }
    piola_world_destroy(w);
  }
  printf("  ringing box: largest relative residual %.3g undamped, %.3g with 5 ms of damping "
         "(kinetic energy %.3g / %.3g J)\n",
         r[0], r[1], kinetic[0], kinetic[1]);
  CHECK(t, kinetic[1] < 0.5 * kinetic[0]); /* the damping works */
  CHECK(t, r[0] < 2e-3 && r[1] < 2e-3);
}

void test_residual_counts_material_damping(piola_test *t) {
  check_damping(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_residual_counts_material_damping(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  check_damping(t, PIOLA_BACKEND_OPENCL);
}

/* The two backends measure the same state alike: the CPU reference's and the device's residual of
 * the same settled column, within the float solve's difference. */
void test_opencl_residual_matches_reference(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_stats st[2];
  for (int k = 0; k < 2; ++k) {
    capture_log log;
    piola_body_id b;
    piola_world *w = column(t, k == 0 ? PIOLA_BACKEND_CPU_REFERENCE : PIOLA_BACKEND_OPENCL, &log, 2,
                            1e5f, 1, 5, true, &b);
    REQUIRE(t, w != NULL);
    st[k] = stats_after(t, w, 300);
    piola_world_destroy(w);
  }
  printf("  settled column: relative residual %.6f / %.6f, coarse %.6f / %.6f (CPU reference / "
         "OpenCL)\n",
         st[0].relative_residual, st[1].relative_residual, st[0].coarse_residual,
         st[1].coarse_residual);
  CHECK(t,
        fabs(st[0].relative_residual - st[1].relative_residual) < 0.02 * st[0].relative_residual);
  CHECK(t, fabs(st[0].coarse_residual - st[1].coarse_residual) < 0.02 * st[0].coarse_residual);
}
