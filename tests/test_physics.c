/* Physics tests of the CPU reference (double precision): recovery of a single tet and of
 * whole bodies from flattening and inversion (Bender et al. 2014, Fig. 6; Irving, Teran,
 * Fedkiw 2004), conservation of linear momentum and the O(h^2)-per-step drift of angular
 * momentum of XPBD (Macklin et al. 2016), the fall of the elastic energy across the
 * iterations of one step, a cantilever beam under gravity, and plasticity (paper Sec. 4.2).
 * Every world here has no colliders; tolerances come from measured values (in comments). */
#include "world_helpers.h"

#include <stdlib.h>
#include <string.h>

static const char *model_name(piola_model m) {
  return m == PIOLA_MODEL_STVK ? "StVK" : "Neo-Hookean";
}
static const char *solver_name(piola_solver s) {
  return s == PIOLA_SOLVER_XPBD ? "XPBD" : "PBD";
}
static const char *inversion_name(piola_inversion i) {
  return i == PIOLA_INVERSION_OFF ? "off" : i == PIOLA_INVERSION_ON ? "on" : "always";
}

/* ---- Single tet ---------------------------------------------------------------------------- */

typedef enum deformation { FLATTENED = 0, MIRRORED = 1 } deformation;

/* A world (no gravity, no colliders, dt 5 ms, 10 iterations) with the tet, its vertex 3 moved
 * onto the opposite face's plane (flattened) or mirrored through it. */
static piola_world *deformed_tet(piola_test *t, piola_material mat, deformation d,
                                 piola_body_id *id, piola_tet_mesh *mesh) {
  static int32_t one[4] = {0, 1, 2, 3};
  mesh->positions = (float *)wt_unit_tet;
  mesh->vertex_count = 4;
  mesh->tets = one;
  mesh->tet_count = 1;
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 10, 0.0f, false);
  if (w == NULL || piola_world_add_tet_body(w, mesh, &mat, NULL, id) != PIOLA_OK) {
    return w;
  }
  /* Flattened or mirrored, the tet passes through itself: self-collision would fight the
   * recovery this test is about. */
  CHECK_STATUS(t, piola_body_set_self_collision(w, *id, false), PIOLA_OK);
  float p[12];
  memcpy(p, wt_unit_tet, sizeof p);
  p[10] = d == FLATTENED ? 0.0f : -wt_unit_tet[10];
  piola_body_set_positions(w, *id, p, 4);
  return w;
}

void test_single_tet_recovers_rest_shape(piola_test *t) {
  /* E = 1e6 Pa on a 1 m tet of 1000 kg/m^3 and no damping: XPBD's implicit-Euler-like
   * dissipation settles it (measured: within 1% after at most 59 steps for XPBD, 10 steps for
   * PBD); the check covers steps 150..200, so the shape must also stay recovered. */
  const piola_model models[2] = {PIOLA_MODEL_STVK, PIOLA_MODEL_NEOHOOKEAN};
  const piola_solver solvers[2] = {PIOLA_SOLVER_XPBD, PIOLA_SOLVER_PBD};
  const piola_inversion modes[2] = {PIOLA_INVERSION_ON, PIOLA_INVERSION_ALWAYS};
  for (int mi = 0; mi < 2; ++mi) {
    for (int si = 0; si < 2; ++si) {
      for (int ii = 0; ii < 2; ++ii) {
        for (int d = 0; d < 2; ++d) {
          piola_material mat = wt_material(models[mi], solvers[si], 1e6f);
          mat.handle_inversion = modes[ii];
          piola_body_id id;
          piola_tet_mesh mesh;
          piola_world *w = deformed_tet(t, mat, (deformation)d, &id, &mesh);
          REQUIRE(t, w != NULL);
          double worst_volume = 0.0, worst_edge = 0.0;
          float x[12];
          const double v0 = wt_signed_volume(&mesh, wt_unit_tet);
          piola_body_get_positions(w, id, x, 4);
          const double start = wt_signed_volume(&mesh, x) / v0;
          for (int s = 1; s <= 200; ++s) {
            REQUIRE_OK(t, piola_world_step(w));
            if (s >= 150) {
              REQUIRE_OK(t, piola_body_get_positions(w, id, x, 4));
              worst_volume = fmax(worst_volume, fabs(wt_signed_volume(&mesh, x) / v0 - 1.0));
              worst_edge = fmax(worst_edge, wt_max_edge_error(&mesh, x));
            }
          }
          CHECK_MSG(t, worst_volume < 0.01 && worst_edge < 0.01,
                    "%s %s inversion %s, %s (volume %.2f of rest at start): volume error %.4f, "
                    "edge error %.4f over steps 150..200",
                    model_name(models[mi]), solver_name(solvers[si]), inversion_name(modes[ii]),
                    d == FLATTENED ? "flattened" : "mirrored", start, worst_volume, worst_edge);
          piola_stats st;
          REQUIRE_OK(t, piola_world_get_stats(w, &st));
          CHECK(t, st.inverted_tets == 0);
          piola_world_destroy(w);
        }
      }
    }
  }
}

void test_single_tet_without_inversion_handling(piola_test *t) {
  /* Documented behaviour with PIOLA_INVERSION_OFF: Neo-Hookean is undefined at det F <= 0 and
   * skips the tet, so a mirrored or flattened tet stays exactly as it is; StVK depends on F
   * only through F^T F, so the mirror image is one of its rest states, and a flat tet's
   * gradient lies in its own plane, so it never regains volume. This is why the handling of
   * Irving et al. exists (test_single_tet_recovers_rest_shape has it on). */
  const piola_model models[2] = {PIOLA_MODEL_STVK, PIOLA_MODEL_NEOHOOKEAN};
  const piola_solver solvers[2] = {PIOLA_SOLVER_XPBD, PIOLA_SOLVER_PBD};
  for (int mi = 0; mi < 2; ++mi) {
    for (int si = 0; si < 2; ++si) {
      for (int d = 0; d < 2; ++d) {
        piola_material mat = wt_material(models[mi], solvers[si], 1e6f);
        mat.handle_inversion = PIOLA_INVERSION_OFF;
        piola_body_id id;
        piola_tet_mesh mesh;
        piola_world *w = deformed_tet(t, mat, (deformation)d, &id, &mesh);
        REQUIRE(t, w != NULL);
        float start[12], x[12];
        REQUIRE_OK(t, piola_body_get_positions(w, id, start, 4));
        for (int s = 0; s < 200; ++s) {
          REQUIRE_OK(t, piola_world_step(w));
        }
        REQUIRE_OK(t, piola_body_get_positions(w, id, x, 4));
        piola_stats st;
        REQUIRE_OK(t, piola_world_get_stats(w, &st));
        const double v = wt_signed_volume(&mesh, x) / wt_signed_volume(&mesh, wt_unit_tet);
        const char *what = d == FLATTENED ? "flattened" : "mirrored";
        CHECK_MSG(t, st.inverted_tets == 1, "%s %s %s: %d inverted", model_name(models[mi]),
                  solver_name(solvers[si]), what, st.inverted_tets);
        if (models[mi] == PIOLA_MODEL_NEOHOOKEAN || d == MIRRORED) {
          /* Skipped (Neo-Hookean) or at rest (mirrored StVK): not a bit moves. */
          CHECK_MSG(t, memcmp(x, start, sizeof x) == 0, "%s %s %s moved", model_name(models[mi]),
                    solver_name(solvers[si]), what);
          CHECK(t, st.active_tets == 0);
          CHECK_MSG(t, fabs(v - (d == FLATTENED ? 0.0 : -1.0)) < 1e-6, "volume %.6f of rest", v);
        } else {
          /* Flattened StVK: moves in its plane, volume stays zero. */
          CHECK_MSG(t, fabs(v) < 1e-6, "%s flattened StVK regained volume %.4f of rest",
                    solver_name(solvers[si]), v);
        }
        piola_world_destroy(w);
      }
    }
  }
}

/* ---- Whole bodies: the paper's Fig. 6 ------------------------------------------------------ */

typedef struct recovery {
  double start_volume;  /* signed volume at the start / rest volume */
  double worst_volume;  /* max |V / V_rest - 1| over the check window */
  double final_energy;  /* J */
  double start_energy;  /* J */
  int32_t inverted_end; /* inverted tets at the end */
  int32_t inverted_start;
} recovery;

/* Squashes every vertex onto the plane y = mid (FLATTENED) or mirrors it through that plane
 * (MIRRORED), then steps `steps` times (no gravity, no colliders, dt 5 ms, 10 iterations),
 * watching the volume over the last `window` steps. */
static recovery run_recovery(piola_test *t, const piola_tet_mesh *mesh, piola_material mat,
                             deformation d, int steps, int window) {
  recovery r;
  memset(&r, 0, sizeof r);
  r.worst_volume = INFINITY;
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 10, 0.0f, false);
  if (w == NULL) {
    return r;
  }
  piola_body_id id;
  piola_status s = piola_world_add_tet_body(w, mesh, &mat, NULL, &id);
  CHECK_MSG(t, s == PIOLA_OK, "add: %s", piola_status_string(s));
  if (s == PIOLA_OK) {
    /* The flattened or mirrored body passes through itself: no self-collision here. */
    s = piola_body_set_self_collision(w, id, false);
  }
  const int32_t n = mesh->vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  if (s != PIOLA_OK || x == NULL) {
    free(x);
    piola_world_destroy(w);
    return r;
  }
  float lo = INFINITY, hi = -INFINITY;
  for (int32_t i = 0; i < n; ++i) {
    lo = fminf(lo, mesh->positions[3 * i + 1]);
    hi = fmaxf(hi, mesh->positions[3 * i + 1]);
  }
  memcpy(x, mesh->positions, sizeof *x * 3 * (size_t)n);
  for (int32_t i = 0; i < n; ++i) {
    x[3 * i + 1] = d == FLATTENED ? 0.5f * (lo + hi) : (lo + hi) - x[3 * i + 1];
  }
  piola_body_set_positions(w, id, x, n);
  const double v0 = wt_signed_volume(mesh, mesh->positions);
  r.start_volume = wt_signed_volume(mesh, x) / v0;
  piola_stats st;
  piola_world_get_stats(w, &st);
  r.start_energy = st.elastic_energy;
  r.inverted_start = st.inverted_tets;
  r.worst_volume = 0.0;
  for (int k = 1; k <= steps; ++k) {
    piola_world_step(w);
    if (k > steps - window) {
      piola_body_get_positions(w, id, x, n);
      double v = wt_signed_volume(mesh, x) / v0;
      r.worst_volume = isfinite(v) ? fmax(r.worst_volume, fabs(v - 1.0)) : INFINITY;
    }
  }
  piola_world_get_stats(w, &st);
  r.final_energy = st.elastic_energy;
  r.inverted_end = st.inverted_tets;
  free(x);
  piola_world_destroy(w);
  return r;
}

/* Both deformations of `mesh` for one material: the rest volume comes back within 1% and
 * stays there over the window. */
static void check_recovery(piola_test *t, const char *name, const piola_tet_mesh *mesh,
                           piola_material mat, int steps, int window, bool expect_no_inverted) {
  for (int d = 0; d < 2; ++d) {
    recovery r = run_recovery(t, mesh, mat, (deformation)d, steps, window);
    const char *what = d == FLATTENED ? "squashed flat" : "mirrored";
    printf("  %s %s %s, %s: start volume %.2f, %d inverted, energy %.3g J; after %d steps "
           "volume error <= %.4f over the last %d, energy %.3g J, %d inverted\n",
           name, model_name(mat.model), solver_name(mat.solver), what, r.start_volume,
           r.inverted_start, r.start_energy, steps, r.worst_volume, window, r.final_energy,
           r.inverted_end);
    CHECK_MSG(t, r.worst_volume < 0.01, "%s %s %s %s: volume error %.4f", name,
              model_name(mat.model), solver_name(mat.solver), what, r.worst_volume);
    CHECK_MSG(t, r.final_energy < 0.05 * r.start_energy, "%s %s %s %s: energy %.3g of %.3g J", name,
              model_name(mat.model), solver_name(mat.solver), what, r.final_energy, r.start_energy);
    if (expect_no_inverted) {
      CHECK_MSG(t, r.inverted_end == 0, "%s %s %s %s: %d tets still inverted", name,
                model_name(mat.model), solver_name(mat.solver), what, r.inverted_end);
    }
    /* The deformation was real: flat means zero volume, mirrored means -V. */
    CHECK(t, fabs(r.start_volume - (d == FLATTENED ? 0.0 : -1.0)) < 1e-6);
  }
}

/* The creature of 3 m (1247 vertices, 3714 tets), E = 1e6 Pa, dt 5 ms, 10 iterations:
 * XPBD for 300 steps, checked over the last 100 (measured: within 1% after at most 152
 * steps); PBD for 100 steps, checked over the last 50 (measured: after at most 26). */
static void fig6_creature(piola_test *t, piola_model model) {
  piola_tet_mesh mesh;
  REQUIRE_OK(t, piola_mesh_make_creature(3.0f, &mesh));
  check_recovery(t, "creature", &mesh, wt_material(model, PIOLA_SOLVER_XPBD, 1e6f), 300, 100, true);
  check_recovery(t, "creature", &mesh, wt_material(model, PIOLA_SOLVER_PBD, 1e6f), 100, 50, true);
  piola_mesh_free(&mesh);
}

void test_fig6_creature_stvk(piola_test *t) {
  fig6_creature(t, PIOLA_MODEL_STVK);
}

void test_fig6_creature_neohookean(piola_test *t) {
  fig6_creature(t, PIOLA_MODEL_NEOHOOKEAN);
}

/* The Armadillo (1180 vertices, 3717 tets, about 3 m tall), XPBD, E = 1e6 Pa: measured
 * within 1% after at most 146 steps, but its volume mode still rings at 0.96% around step 250;
 * 400 steps, checked over the last 100 (measured at most 0.6%). (PBD recovers the volume too
 * but leaves a few Neo-Hookean tets inverted after a mirroring: see the report.) Without the
 * data, the same check runs on a smaller creature (2 m) with PBD. */
static void fig6_armadillo(piola_test *t, piola_model model) {
  piola_tet_mesh mesh;
  if (!wt_load_armadillo(&mesh)) {
    printf("  (no Armadillo data: a 2 m creature instead)\n");
    REQUIRE_OK(t, piola_mesh_make_creature(2.0f, &mesh));
    check_recovery(t, "creature 2 m", &mesh, wt_material(model, PIOLA_SOLVER_PBD, 1e6f), 100, 50,
                   true);
    piola_mesh_free(&mesh);
    return;
  }
  check_recovery(t, "Armadillo", &mesh, wt_material(model, PIOLA_SOLVER_XPBD, 1e6f), 400, 100,
                 true);
  piola_mesh_free(&mesh);
}

void test_fig6_armadillo_stvk(piola_test *t) {
  fig6_armadillo(t, PIOLA_MODEL_STVK);
}

void test_fig6_armadillo_neohookean(piola_test *t) {
  fig6_armadillo(t, PIOLA_MODEL_NEOHOOKEAN);
}

/* ---- Momentum ------------------------------------------------------------------------------ */

/* A 1 m box of 4 x 4 x 4 cells (375 vertices, 384 tets, 1000 kg). */
static piola_status make_cube(piola_tet_mesh *out) {
  const int32_t cells[3] = {4, 4, 4};
  const float size[3] = {1.0f, 1.0f, 1.0f};
  return piola_mesh_make_box(cells, size, out);
}

/* Stretches the cube 20% along x and twists it by 0.8 rad/m about the x axis. */
static void stretch_and_twist(const piola_tet_mesh *m, float *x) {
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    double px = m->positions[3 * i], py = m->positions[3 * i + 1] - 0.5,
           pz = m->positions[3 * i + 2] - 0.5, a = 0.8 * px;
    x[3 * i] = (float)(1.2 * px);
    x[3 * i + 1] = (float)(0.5 + py * cos(a) - pz * sin(a));
    x[3 * i + 2] = (float)(0.5 + py * sin(a) + pz * cos(a));
  }
}

void test_linear_momentum_conserved(piola_test *t) {
  /* Each projection moves vertex i by w_i g_i s with sum g_i = 0, so sum m_i dx_i = 0; predict
   * and the velocity update are linear. Without gravity, damping or colliders, sum m v stays
   * what it was up to round-off (measured 2.6e-13 of M v_rms in double over 500 steps). */
  piola_tet_mesh cube;
  REQUIRE_OK(t, make_cube(&cube));
  const int32_t n = cube.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  float *inv = malloc(sizeof *inv * (size_t)n);
  REQUIRE(t, x != NULL && v != NULL && inv != NULL);
  for (int k = 0; k < 4; ++k) {
    piola_material mat = wt_material(k & 1 ? PIOLA_MODEL_NEOHOOKEAN : PIOLA_MODEL_STVK,
                                     k & 2 ? PIOLA_SOLVER_PBD : PIOLA_SOLVER_XPBD, 1e5f);
    piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, false);
    REQUIRE(t, w != NULL);
    piola_body_id id;
    REQUIRE_OK(t, piola_world_add_tet_body(w, &cube, &mat, NULL, &id));
    stretch_and_twist(&cube, x);
    uint64_t rng = 42 + (uint64_t)k;
    double v2 = 0.0;
    for (size_t i = 0; i < 3 * (size_t)n; ++i) {
      v[i] = (float)piola_test_rand(&rng);
      v2 += (double)v[i] * v[i];
    }
    REQUIRE_OK(t, piola_body_set_positions(w, id, x, n));
    REQUIRE_OK(t, piola_body_set_velocities(w, id, v, n));
    double mass, p0[3], l0[3];
    wt_momenta(w, &mass, p0, l0);
    const double scale = mass * sqrt(v2 / n); /* M v_rms, kg m/s */
    /* The same from the API's floats, with m = 1 / w. */
    REQUIRE_OK(t, piola_body_get_inverse_masses(w, id, inv, n));
    double api_p0[3] = {0.0, 0.0, 0.0};
    for (int32_t i = 0; i < n; ++i) {
      for (int c = 0; c < 3; ++c) {
        api_p0[c] += v[3 * i + c] / (double)inv[i];
      }
    }
    piola_stats st;
    REQUIRE_OK(t, piola_world_get_stats(w, &st));
    const double e_start = st.elastic_energy;
    double worst = 0.0, worst_api = 0.0;
    for (int s = 0; s < 300; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
      double m, p[3], l[3];
      wt_momenta(w, &m, p, l);
      for (int c = 0; c < 3; ++c) {
        worst = fmax(worst, fabs(p[c] - p0[c]) / scale);
      }
      if (s % 50 == 49) {
        REQUIRE_OK(t, piola_body_get_velocities(w, id, v, n));
        double api_p[3] = {0.0, 0.0, 0.0};
        for (int32_t i = 0; i < n; ++i) {
          for (int c = 0; c < 3; ++c) {
            api_p[c] += v[3 * i + c] / (double)inv[i];
          }
        }
        for (int c = 0; c < 3; ++c) {
          worst_api = fmax(worst_api, fabs(api_p[c] - api_p0[c]) / scale);
        }
      }
    }
    REQUIRE_OK(t, piola_world_get_stats(w, &st));
    printf("  %s %s: |P| %.3g kg m/s, M v_rms %.3g kg m/s; drift over 300 steps %.2g (double), "
           "%.2g (API floats); energy %.4g -> %.4g J\n",
           model_name(mat.model), solver_name(mat.solver),
           sqrt(p0[0] * p0[0] + p0[1] * p0[1] + p0[2] * p0[2]), scale, worst, worst_api, e_start,
           st.elastic_energy);
    CHECK_MSG(t, worst < 1e-11, "momentum drift %.3g of M v_rms", worst);
    CHECK_MSG(t, worst_api < 1e-6, "momentum drift (API) %.3g of M v_rms", worst_api);
    /* Not a trivial run: the body deformed and moved. */
    CHECK(t, st.elastic_energy != e_start && st.kinetic_energy > 0.0);
    piola_world_destroy(w);
  }
  free(x);
  free(v);
  free(inv);
  piola_mesh_free(&cube);
}

/* Sets the rigid rotation v = omega x (x - c) on the cube (c its centre). */
static void set_rotation(piola_world *w, piola_body_id id, const piola_tet_mesh *m,
                         const double omega[3]) {
  float *v = malloc(sizeof *v * 3 * (size_t)m->vertex_count);
  if (v == NULL) {
    return;
  }
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    double r[3] = {m->positions[3 * i] - 0.5, m->positions[3 * i + 1] - 0.5,
                   m->positions[3 * i + 2] - 0.5};
    v[3 * i] = (float)(omega[1] * r[2] - omega[2] * r[1]);
    v[3 * i + 1] = (float)(omega[2] * r[0] - omega[0] * r[2]);
    v[3 * i + 2] = (float)(omega[0] * r[1] - omega[1] * r[0]);
  }
  piola_body_set_velocities(w, id, v, m->vertex_count);
  free(v);
}

static double norm3(const double a[3]) {
  return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

/* Relative change of L after `steps` steps of a rigidly rotating cube with h |omega| = hw;
 * *any_active tells whether any constraint did work. */
static double rotation_drift(piola_test *t, piola_solver solver, double hw, int steps,
                             bool *any_active, double *l_ratio) {
  piola_tet_mesh cube;
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, false);
  if (w == NULL || make_cube(&cube) != PIOLA_OK) {
    piola_world_destroy(w);
    return INFINITY;
  }
  piola_material mat = wt_material(PIOLA_MODEL_STVK, solver, 1e5f);
  piola_body_id id;
  piola_world_add_tet_body(w, &cube, &mat, NULL, &id);
  const double axis[3] = {0.3, 0.8, 0.5}, la = norm3(axis), omega_len = hw / (double)0.005f;
  const double omega[3] = {axis[0] / la * omega_len, axis[1] / la * omega_len,
                           axis[2] / la * omega_len};
  set_rotation(w, id, &cube, omega);
  double mass, p[3], l0[3], l[3];
  wt_momenta(w, &mass, p, l0);
  *any_active = false;
  for (int s = 0; s < steps; ++s) {
    piola_world_step(w);
    piola_stats st;
    piola_world_get_stats(w, &st);
    *any_active = *any_active || st.active_tets > 0;
  }
  wt_momenta(w, &mass, p, l);
  const double d[3] = {l[0] - l0[0], l[1] - l0[1], l[2] - l0[2]};
  *l_ratio = norm3(l) / norm3(l0);
  piola_mesh_free(&cube);
  piola_world_destroy(w);
  return norm3(d) / norm3(l0);
}

void test_angular_momentum_rigid_rotation(piola_test *t) {
  /* A rigid rotation with h |omega| = 1e-5 for 80 steps: the linear prediction stretches the
   * cube radially by (80 h |omega|)^2 / 2 = 3e-7 at most, below the energy threshold, so no
   * constraint acts and every vertex moves on a straight line at constant velocity: L is
   * conserved to round-off. That round-off is set by the velocity update v = (p - x) / h,
   * which cancels digits: relative error eps |x| / (h |v|) = 1.1e-16 * 0.9 / 4.5e-6 = 2e-11
   * per step at most (measured 3.6e-12 after 80 steps). */
  for (int si = 0; si < 2; ++si) {
    piola_solver solver = si == 0 ? PIOLA_SOLVER_XPBD : PIOLA_SOLVER_PBD;
    bool active = true;
    double ratio = 0.0;
    double drift = rotation_drift(t, solver, 1e-5, 80, &active, &ratio);
    CHECK_MSG(t, !active, "%s: constraints acted on a rigid rotation", solver_name(solver));
    CHECK_MSG(t, drift < 1e-10, "%s: L drift %.3g without active constraints", solver_name(solver),
              drift);
    /* With constraints active (h |omega| = 1e-3 and 1e-2, 100 steps) each step pulls the
     * predicted positions back onto the rigid motion and L decreases, like implicit Euler, by
     * O((h |omega|)^2) per step. Measured: 0.94..0.98 (h |omega|)^2 per step; assert the
     * second order (ratio of the two drifts near 100) and that L only decreases. */
    double ratio3 = 0.0, ratio2 = 0.0;
    double d3 = rotation_drift(t, solver, 1e-3, 100, &active, &ratio3);
    CHECK(t, active);
    double d2 = rotation_drift(t, solver, 1e-2, 100, &active, &ratio2);
    printf("  %s rigid rotation: L drift %.3g at h|w| = 1e-5 (80 steps); %.3g at 1e-3, %.3g at "
           "1e-2 (100 steps): %.3f and %.3f (h|w|)^2 per step, ratio %.1f\n",
           solver_name(solver), drift, d3, d2, d3 / (100 * 1e-6), d2 / (100 * 1e-4), d2 / d3);
    CHECK_MSG(t, d2 / d3 > 70.0 && d2 / d3 < 130.0, "%s: drift ratio %.1f for 10x h|w|",
              solver_name(solver), d2 / d3);
    CHECK_MSG(t, d3 / (100 * 1e-6) > 0.3 && d3 / (100 * 1e-6) < 1.5, "%s: %.3f (h|w|)^2 per step",
              solver_name(solver), d3 / (100 * 1e-6));
    CHECK(t, ratio3 < 1.0 && ratio2 < ratio3);
  }
}

/* Max relative |L(t) - L(0)| over T = 0.1 s for the stretched, rotating cube at step dt. */
static double deformed_drift(piola_test *t, piola_model model, float dt) {
  piola_tet_mesh cube;
  piola_world *w = wt_world(t, NULL, NULL, dt, 1, 5, 0.0f, false);
  if (w == NULL || make_cube(&cube) != PIOLA_OK) {
    piola_world_destroy(w);
    return INFINITY;
  }
  piola_material mat = wt_material(model, PIOLA_SOLVER_XPBD, 1e5f);
  piola_body_id id;
  piola_world_add_tet_body(w, &cube, &mat, NULL, &id);
  const int32_t n = cube.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  if (x == NULL || v == NULL) {
    free(x);
    free(v);
    piola_mesh_free(&cube);
    piola_world_destroy(w);
    return INFINITY;
  }
  /* Smooth fields: 10% stretch with a bend, a rotation plus a linear velocity field. */
  for (int32_t i = 0; i < n; ++i) {
    double px = cube.positions[3 * i] - 0.5, py = cube.positions[3 * i + 1] - 0.5,
           pz = cube.positions[3 * i + 2] - 0.5;
    x[3 * i] = (float)(1.1 * px);
    x[3 * i + 1] = (float)(py + 0.05 * px * px);
    x[3 * i + 2] = (float)pz;
    v[3 * i] = (float)(0.8 * pz - 0.5 * py + 0.2 * py);
    v[3 * i + 1] = (float)(0.5 * px - 0.3 * pz - 0.3 * pz * px);
    v[3 * i + 2] = (float)(0.3 * py - 0.8 * px + 0.1 * px);
  }
  piola_body_set_positions(w, id, x, n);
  piola_body_set_velocities(w, id, v, n);
  double mass, p[3], l0[3], l[3];
  wt_momenta(w, &mass, p, l0);
  const int steps = (int)lround(0.1 / dt);
  double worst = 0.0;
  for (int s = 0; s < steps; ++s) {
    piola_world_step(w);
    wt_momenta(w, &mass, p, l);
    const double d[3] = {l[0] - l0[0], l[1] - l0[1], l[2] - l0[2]};
    worst = fmax(worst, norm3(d) / norm3(l0));
  }
  free(x);
  free(v);
  piola_mesh_free(&cube);
  piola_world_destroy(w);
  return worst;
}

void test_angular_momentum_drift_order(piola_test *t) {
  /* A deformed, rotating body (smooth motion), XPBD: the change of L per step is
   * h^2 sum m v x a-like, O(h^2), so over a fixed time T = 0.1 s the drift is O(h): halving dt
   * halves it. Measured ratios 1.83..1.93 (dt 4 -> 2 -> 1 ms), drift 0.6% of |L| at 4 ms.
   * (The PBD form is stiff whatever dt, so its motion from a deformed start is not smooth and
   * this does not apply to it: its drift grows as dt shrinks; see the report.) */
  const piola_model models[2] = {PIOLA_MODEL_STVK, PIOLA_MODEL_NEOHOOKEAN};
  for (int mi = 0; mi < 2; ++mi) {
    double d4 = deformed_drift(t, models[mi], 0.004f);
    double d2 = deformed_drift(t, models[mi], 0.002f);
    double d1 = deformed_drift(t, models[mi], 0.001f);
    printf("  %s XPBD: L drift over 0.1 s %.3g (dt 4 ms), %.3g (2 ms), %.3g (1 ms); ratios "
           "%.2f %.2f\n",
           model_name(models[mi]), d4, d2, d1, d4 / d2, d2 / d1);
    CHECK_MSG(t, d4 / d2 > 1.6 && d4 / d2 < 2.4, "%s: ratio %.2f", model_name(models[mi]), d4 / d2);
    CHECK_MSG(t, d2 / d1 > 1.6 && d2 / d1 < 2.4, "%s: ratio %.2f", model_name(models[mi]), d2 / d1);
    CHECK_MSG(t, d4 < 0.01, "%s: drift %.3g at 4 ms", model_name(models[mi]), d4);
  }
}

/* ---- Energy across the iterations of one step ----------------------------------------------- */

/* Energies after each of 10 iterations of one step from a deformed box at rest (no gravity):
 * predict, reset multipliers, then solve_tets stage by stage. out[0] is the start. Also the
 * incremental potential U + |p - p~|_M^2 / (2 h^2) in phi (may be NULL). */
static void iteration_energies(piola_test *t, piola_material mat, bool twist, double out[11],
                               double phi[11]) {
  const int32_t cells[3] = {6, 3, 3};
  const float size[3] = {2.0f, 1.0f, 1.0f};
  piola_tet_mesh box;
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 10, 0.0f, false);
  for (int i = 0; i < 11; ++i) {
    out[i] = NAN;
  }
  if (w == NULL || piola_mesh_make_box(cells, size, &box) != PIOLA_OK) {
    piola_world_destroy(w);
    return;
  }
  piola_body_id id;
  piola_world_add_tet_body(w, &box, &mat, NULL, &id);
  const int32_t n = box.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  double *predicted = malloc(sizeof *predicted * 3 * (size_t)n);
  if (x != NULL && predicted != NULL) {
    for (int32_t i = 0; i < n; ++i) {
      double px = box.positions[3 * i], py = box.positions[3 * i + 1] - 0.5,
             pz = box.positions[3 * i + 2] - 0.5, a = twist ? 0.6 * px : 0.0;
      x[3 * i] = (float)(twist ? px : 1.2 * px);
      x[3 * i + 1] = (float)(0.5 + py * cos(a) - pz * sin(a));
      x[3 * i + 2] = (float)(0.5 + py * sin(a) + pz * cos(a));
    }
    piola_body_set_positions(w, id, x, n);
    const double h = (double)w->def.dt;
    piola_world_build_tets(w);
    piola_cpu_stage(w, PIOLA_STAGE_PREDICT, h);
    piola_cpu_stage(w, PIOLA_STAGE_RESET_MULTIPLIERS, h);
    memcpy(predicted, w->p, sizeof *predicted * 3 * (size_t)n);
    int32_t inverted;
    for (int it = 0; it <= 10; ++it) {
      if (it > 0) {
        piola_cpu_stage(w, PIOLA_STAGE_SOLVE_TETS, h);
      }
      out[it] = piola_tets_energy(w, w->p, w->solver.tet_m, &inverted);
      if (phi != NULL) {
        double k = 0.0;
        for (int32_t i = 0; i < n; ++i) {
          for (int c = 0; c < 3; ++c) {
            double d = w->p[3 * (size_t)i + c] - predicted[3 * (size_t)i + c];
            k += 0.5 / w->w[i] * d * d / (h * h);
          }
        }
        phi[it] = out[it] + k;
      }
    }
  }
  free(x);
  free(predicted);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

void test_energy_falls_across_iterations(piola_test *t) {
  const piola_model models[2] = {PIOLA_MODEL_STVK, PIOLA_MODEL_NEOHOOKEAN};
  for (int mi = 0; mi < 2; ++mi) {
    for (int tw = 0; tw < 2; ++tw) {
      const char *what = tw ? "twisted" : "stretched 20%";
      double e[11] = {0}, phi[11] = {0};
      /* PBD: each projection is a Newton step on that tet's energy towards zero; measured
       * monotone, after 10 iterations 0.3% (stretch) to 15% (twist) of the start. */
      iteration_energies(t, wt_material(models[mi], PIOLA_SOLVER_PBD, 1e6f), tw, e, NULL);
      bool monotone = true;
      for (int it = 1; it <= 10; ++it) {
        monotone = monotone && e[it] < e[it - 1];
      }
      printf("  %s PBD %s: U after iterations 1, 5, 10 = %.3f %.3f %.3f of %.4g J\n",
             model_name(models[mi]), what, e[1] / e[0], e[5] / e[0], e[10] / e[0], e[0]);
      CHECK_MSG(t, e[0] > 0.0 && monotone, "%s PBD %s: energy not monotone", model_name(models[mi]),
                what);
      CHECK_MSG(t, e[10] < 0.25 * e[1] && e[10] < 0.2 * e[0], "%s PBD %s: %.3g -> %.3g -> %.3g J",
                model_name(models[mi]), what, e[0], e[1], e[10]);

      /* XPBD at E = 1e6 Pa: the iteration converges (in about 4 iterations) to the
       * implicit-Euler state where the elastic force balances inertia, so U falls below the
       * start at every iteration but only to 60..87% of it; the incremental potential
       * U + |p - p~|^2_M / 2h^2 is below its start too. */
      iteration_energies(t, wt_material(models[mi], PIOLA_SOLVER_XPBD, 1e6f), tw, e, phi);
      bool below = true;
      for (int it = 1; it <= 10; ++it) {
        below = below && e[it] < e[0] && phi[it] < phi[0];
      }
      printf("  %s XPBD %s (E = 1e6): U after 1, 5, 10 = %.3f %.3f %.3f, potential %.3f %.3f "
             "%.3f\n",
             model_name(models[mi]), what, e[1] / e[0], e[5] / e[0], e[10] / e[0], phi[1] / phi[0],
             phi[5] / phi[0], phi[10] / phi[0]);
      CHECK_MSG(t, below, "%s XPBD %s: an iteration rose above the start", model_name(models[mi]),
                what);
      CHECK_MSG(t, e[10] < 0.95 * e[0], "%s XPBD %s: %.3g of the start", model_name(models[mi]),
                what, e[10] / e[0]);
      CHECK_MSG(t, fabs(e[10] - e[5]) < 1e-3 * e[0], "%s XPBD %s: not converged (%.3g vs %.3g)",
                model_name(models[mi]), what, e[5], e[10]);

      /* XPBD stiff (E = 1e8 Pa, alpha~ small): close to the energy minimum; measured
       * U_10 at 1..2% of the start when stretched, 10..11% twisted (where the first
       * iteration overshoots above the start: see the report). */
      iteration_energies(t, wt_material(models[mi], PIOLA_SOLVER_XPBD, 1e8f), tw, e, NULL);
      printf("  %s XPBD %s (E = 1e8): U after 1, 5, 10 = %.3f %.3f %.3f\n", model_name(models[mi]),
             what, e[1] / e[0], e[5] / e[0], e[10] / e[0]);
      CHECK_MSG(t, e[10] < 0.2 * e[0], "%s XPBD stiff %s: %.3g of the start",
                model_name(models[mi]), what, e[10] / e[0]);
      CHECK_MSG(t, e[10] < 0.2 * e[1], "%s XPBD stiff %s: %.3g of the first iteration",
                model_name(models[mi]), what, e[10] / e[1]);
      if (!tw) {
        for (int it = 1; it <= 10; ++it) {
          CHECK_MSG(t, e[it] < e[0], "%s XPBD stiff stretched: iteration %d above the start",
                    model_name(models[mi]), it);
        }
      }
    }
  }
}

/* ---- A cantilever beam ------------------------------------------------------------------- */

void test_beam_sags_and_settles(piola_test *t) {
  /* 10 x 2 x 2 cells, 1 x 0.2 x 0.2 m, E = 1e7 Pa, pinned at x = 0, gravity, damping 5 1/s,
   * 5 iterations. Euler-Bernoulli gives a tip sag of q L^4 / (8 E I) = 3.7 cm; linear tets are
   * stiffer in bending and 5 XPBD iterations softer: measured 9.9 cm (2.4 cm at 40
   * iterations). Kinetic energy measured 1.5e-12 J at 1000 steps from a peak of 3.8 J. */
  const int32_t cells[3] = {10, 2, 2};
  const float size[3] = {1.0f, 0.2f, 0.2f};
  piola_tet_mesh beam;
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &beam));
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 5.0f, true);
  REQUIRE(t, w != NULL);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e7f;
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &beam, &mat, NULL, &id));
  const int32_t n = beam.vertex_count;
  float *inv = malloc(sizeof *inv * (size_t)n), *x = malloc(sizeof *x * 3 * (size_t)n);
  REQUIRE(t, inv != NULL && x != NULL);
  REQUIRE_OK(t, piola_body_get_inverse_masses(w, id, inv, n));
  int32_t pinned = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (beam.positions[3 * i] == 0.0f) {
      inv[i] = 0.0f;
      pinned++;
    }
  }
  REQUIRE(t, pinned == 9);
  REQUIRE_OK(t, piola_body_set_inverse_masses(w, id, inv, n));
  double peak = 0.0, tip_before = 0.0, tip = 0.0;
  piola_stats st;
  for (int s = 1; s <= 800; ++s) {
    REQUIRE_OK(t, piola_world_step(w));
    REQUIRE_OK(t, piola_world_get_stats(w, &st));
    REQUIRE(t, isfinite(st.kinetic_energy) && isfinite(st.elastic_energy));
    peak = fmax(peak, st.kinetic_energy);
    if (s == 700 || s == 800) {
      REQUIRE_OK(t, piola_body_get_positions(w, id, x, n));
      double sum = 0.0;
      int32_t count = 0;
      for (int32_t i = 0; i < n; ++i) {
        if (beam.positions[3 * i] == 1.0f) {
          sum += (double)x[3 * i + 1] - beam.positions[3 * i + 1];
          count++;
        }
      }
      *(s == 700 ? &tip_before : &tip) = sum / count;
    }
  }
  int32_t moved = 0, bad = 0;
  for (int32_t i = 0; i < n; ++i) {
    bad += !(isfinite(x[3 * i]) && isfinite(x[3 * i + 1]) && isfinite(x[3 * i + 2]));
    if (inv[i] == 0.0f) {
      moved += memcmp(x + 3 * i, beam.positions + 3 * i, 3 * sizeof *x) != 0;
    }
  }
  printf("  beam: tip sag %.4f m, kinetic energy %.3g J (peak %.3g J), elastic %.4g J\n", -tip,
         st.kinetic_energy, peak, st.elastic_energy);
  CHECK(t, bad == 0 && moved == 0);
  CHECK_MSG(t, -tip > 0.01 && -tip < 0.3, "tip sag %.4f m", -tip);
  CHECK_MSG(t, st.kinetic_energy < 1e-6 * peak, "kinetic energy %.3g of peak %.3g J",
            st.kinetic_energy, peak);
  CHECK_MSG(t, fabs(tip - tip_before) < 1e-4, "tip still moving: %.3g m in 0.5 s",
            fabs(tip - tip_before));
  CHECK(t, st.elastic_energy > 0.0);
  free(inv);
  free(x);
  piola_mesh_free(&beam);
  piola_world_destroy(w);
}

/* ---- Plasticity --------------------------------------------------------------------------- */

typedef struct plastic_result {
  double start_energy, final_energy, edge_error, max_plastic_norm;
  int32_t plastic_tets;
} plastic_result;

/* The beam of test_beam_sags_and_settles (E = 1e6 Pa), twisted by 2 rad/m about its axis and
 * released without gravity, damping 5 1/s, 10 iterations, 400 steps. */
static plastic_result twisted_beam(piola_test *t, float creep, float max, float yield) {
  plastic_result r;
  memset(&r, 0, sizeof r);
  r.edge_error = NAN;
  const int32_t cells[3] = {10, 2, 2};
  const float size[3] = {1.0f, 0.2f, 0.2f};
  piola_tet_mesh beam;
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 10, 5.0f, false);
  if (w == NULL || piola_mesh_make_box(cells, size, &beam) != PIOLA_OK) {
    piola_world_destroy(w);
    return r;
  }
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  mat.plastic_creep = creep;
  mat.plastic_max = max;
  mat.plastic_yield = yield;
  piola_body_id id;
  piola_status s = piola_world_add_tet_body(w, &beam, &mat, NULL, &id);
  CHECK_MSG(t, s == PIOLA_OK, "add: %s", piola_status_string(s));
  const int32_t n = beam.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  if (x != NULL && s == PIOLA_OK) {
    for (int32_t i = 0; i < n; ++i) {
      double px = beam.positions[3 * i], py = beam.positions[3 * i + 1] - 0.1,
             pz = beam.positions[3 * i + 2] - 0.1, a = 2.0 * px;
      x[3 * i] = (float)px;
      x[3 * i + 1] = (float)(0.1 + py * cos(a) - pz * sin(a));
      x[3 * i + 2] = (float)(0.1 + py * sin(a) + pz * cos(a));
    }
    piola_body_set_positions(w, id, x, n);
    piola_stats st;
    piola_world_get_stats(w, &st);
    r.start_energy = st.elastic_energy;
    for (int k = 0; k < 400; ++k) {
      piola_world_step(w);
    }
    piola_world_get_stats(w, &st);
    r.final_energy = st.elastic_energy + st.kinetic_energy;
    r.plastic_tets = w->solver.plastic_count;
    for (int32_t k = 0; k < w->solver.plastic_count; ++k) {
      const double *e = w->solver.plastic_strain + 6 * (size_t)k;
      double n2 =
          e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + 2.0 * (e[3] * e[3] + e[4] * e[4] + e[5] * e[5]);
      r.max_plastic_norm = fmax(r.max_plastic_norm, sqrt(n2));
    }
    piola_body_get_positions(w, id, x, n);
    r.edge_error = wt_max_edge_error(&beam, x);
  }
  free(x);
  piola_mesh_free(&beam);
  piola_world_destroy(w);
  return r;
}

void test_plasticity_keeps_residual_deformation(piola_test *t) {
  /* creep 0: plasticity off, the beam untwists back to its rest shape (measured edge error
   * 0.0000). creep 100 1/s (the flow h creep = 0.5 per substep), yield 0.05, max 0.3: part of
   * the twist becomes plastic, the beam settles in a new shape with almost no elastic energy
   * (measured: max edge change 6.5%, energy 0.3% of the start). max 0.05 caps the plastic
   * strain's norm at 0.05 and leaves a smaller change (3.0%). yield above every strain:
   * nothing flows. */
  plastic_result elastic = twisted_beam(t, 0.0f, 0.3f, 0.05f);
  plastic_result plastic = twisted_beam(t, 100.0f, 0.3f, 0.05f);
  plastic_result capped = twisted_beam(t, 100.0f, 0.05f, 0.05f);
  plastic_result high_yield = twisted_beam(t, 100.0f, 0.3f, 0.45f);
  const plastic_result *all[4] = {&elastic, &plastic, &capped, &high_yield};
  const char *names[4] = {"creep 0", "creep 100, max 0.3", "creep 100, max 0.05",
                          "creep 100, yield 0.45"};
  for (int i = 0; i < 4; ++i) {
    printf("  %s: energy %.4g -> %.4g J, max edge change %.4f, max |eps_p| %.4f\n", names[i],
           all[i]->start_energy, all[i]->final_energy, all[i]->edge_error,
           all[i]->max_plastic_norm);
    CHECK_MSG(t, all[i]->start_energy > 100.0, "%s: start energy %.4g J", names[i],
              all[i]->start_energy);
    /* Every run comes to rest with (almost) no elastic energy left. */
    CHECK_MSG(t, all[i]->final_energy < 0.01 * all[i]->start_energy, "%s: %.4g of %.4g J left",
              names[i], all[i]->final_energy, all[i]->start_energy);
  }
  CHECK(t, elastic.plastic_tets == 0 && elastic.max_plastic_norm == 0.0);
  CHECK_MSG(t, elastic.edge_error < 1e-3, "creep 0: edge change %.4f", elastic.edge_error);
  CHECK(t, plastic.plastic_tets == 240);
  CHECK_MSG(t, plastic.edge_error > 0.03, "creep 100: edge change only %.4f", plastic.edge_error);
  CHECK(t, plastic.max_plastic_norm > 0.05 && plastic.max_plastic_norm <= 0.3 + 1e-9);
  CHECK_MSG(t, capped.max_plastic_norm <= 0.05 + 1e-9, "cap 0.05: |eps_p| %.4f",
            capped.max_plastic_norm);
  CHECK(t, capped.max_plastic_norm > 0.04);
  CHECK_MSG(t, capped.edge_error > 0.01 && capped.edge_error < plastic.edge_error,
            "cap 0.05: edge change %.4f (uncapped %.4f)", capped.edge_error, plastic.edge_error);
  CHECK_MSG(t, high_yield.max_plastic_norm == 0.0 && high_yield.edge_error < 1e-3,
            "yield 0.45: |eps_p| %.4f, edge change %.4f", high_yield.max_plastic_norm,
            high_yield.edge_error);
}
