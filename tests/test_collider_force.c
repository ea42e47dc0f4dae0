/* Tests of the forces the particles exert on colliders (piola_world_get_collider_force): a box
 * body resting on a kinematic box weighs m g on it and, resting off the box's centre, gives the
 * torque r x F about the box's position; a cloth draped over a sphere weighs its weight on it; a
 * collider the bodies do not touch reports zero; bad ids are refused. Each on the CPU reference
 * and (opencl_ variants) on OpenCL. */
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FORCE_G 9.81

static const float force_identity[4] = {0.0f, 0.0f, 0.0f, 1.0f};
static const float force_zero[3] = {0.0f, 0.0f, 0.0f};

/* Mass (kg) and centre of mass (m) of a body, from the API. */
static double body_mass(const piola_world *w, piola_body_id id, double com[3]) {
  const int32_t n = piola_body_get_vertex_count(w, id);
  float *x = malloc(sizeof *x * 3 * (size_t)n), *inv = malloc(sizeof *inv * (size_t)n);
  double mass = 0.0;
  com[0] = com[1] = com[2] = 0.0;
  if (x != NULL && inv != NULL && piola_body_get_positions(w, id, x, n) == PIOLA_OK &&
      piola_body_get_inverse_masses(w, id, inv, n) == PIOLA_OK) {
    for (int32_t i = 0; i < n; ++i) {
      const double m = 1.0 / inv[i];
      mass += m;
      for (int k = 0; k < 3; ++k) {
        com[k] += m * x[3 * i + k];
      }
    }
    for (int k = 0; k < 3; ++k) {
      com[k] /= mass;
    }
  }
  free(x);
  free(inv);
  return mass;
}

static const char *backend_name(bool opencl) {
  return opencl ? "OpenCL" : "reference";
}

/* A 0.3 m box body of 3 x 3 x 3 cells (E = 1e6 Pa, 27 kg) resting on a kinematic 2 m x 0.2 m x
 * 2 m box whose position is (0, -0.1, 0) (top face at y = 0), the body's centre at
 * (cx, 0.15, cz), and a ground plane 5 m below that nothing touches. After 0.5 s to settle, the
 * mean force over the next 0.5 s is the body's weight, and the torque about the box's position
 * is r x F with r from that position to the body's centre of mass. */
static void box_rest(piola_test *t, bool opencl, float cx, float cz, bool per_body) {
  piola_world_def def = opencl_test_world_def(
      opencl ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE, NULL, NULL);
  def.substeps = 2;
  if (per_body) {
    /* the per-body kernel's own collide loop: a whole substep per launch, without contacts */
    def.schedule = PIOLA_SCHEDULE_BODIES;
    def.simd_lanes = 1;
    def.contacts = false;
  }
  def.gravity[0] = def.gravity[2] = 0.0f;
  def.gravity[1] = (float)-FORCE_G;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_collider_def c = piola_default_collider_def();
  c.type = PIOLA_COLLIDER_BOX;
  c.shape.box.half_extents[0] = c.shape.box.half_extents[2] = 1.0f;
  c.shape.box.half_extents[1] = 0.1f;
  piola_collider_id box, ground;
  REQUIRE_OK(t, piola_world_add_collider(w, &c, &box));
  const float at[3] = {0.0f, -0.1f, 0.0f};
  REQUIRE_OK(t, piola_world_set_collider_pose(w, box, at, force_identity, force_zero, force_zero));
  REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, -5.0f, 0.5f, &ground));
  piola_tet_mesh mesh = wt_box(3, 3, 3, 0.3f, 0.3f, 0.3f);
  REQUIRE(t, mesh.vertex_count > 0);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  piola_body_id body;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &mesh, &mat,
                                         (const float[3]){cx - 0.15f, 0.0f, cz - 0.15f}, &body));
  piola_mesh_free(&mesh);
  /* Zero before any step. */
  float f[3] = {1.0f, 1.0f, 1.0f}, tq[3] = {1.0f, 1.0f, 1.0f};
  CHECK_STATUS(t, piola_world_get_collider_force(w, box, f, tq), PIOLA_OK);
  CHECK(t, f[0] == 0.0f && f[1] == 0.0f && f[2] == 0.0f && tq[0] == 0.0f && tq[2] == 0.0f);
  const int settle = (int)(0.5 / def.dt + 0.5), measure = (int)(0.5 / def.dt + 0.5);
  double fsum[3] = {0.0, 0.0, 0.0}, tsum[3] = {0.0, 0.0, 0.0}, ground_max = 0.0;
  for (int step = 0; step < settle + measure; ++step) {
    REQUIRE_OK(t, piola_world_step(w));
    if (step < settle) {
      continue;
    }
    REQUIRE_OK(t, piola_world_get_collider_force(w, box, f, tq));
    for (int k = 0; k < 3; ++k) {
      fsum[k] += f[k];
      tsum[k] += tq[k];
    }
    float gf[3], gt[3];
    REQUIRE_OK(t, piola_world_get_collider_force(w, ground, gf, gt));
    for (int k = 0; k < 3; ++k) {
      ground_max = fmax(ground_max, fmax(fabs(gf[k]), fabs(gt[k])));
    }
  }
  double com[3];
  const double mass = body_mass(w, body, com), weight = mass * FORCE_G;
  double fm[3], tm[3];
  for (int k = 0; k < 3; ++k) {
    fm[k] = fsum[k] / measure;
    tm[k] = tsum[k] / measure;
  }
  const double r[3] = {com[0] - at[0], com[1] - at[1], com[2] - at[2]};
  const double rxf[3] = {r[1] * fm[2] - r[2] * fm[1], r[2] * fm[0] - r[0] * fm[2],
                         r[0] * fm[1] - r[1] * fm[0]};
  const double rxf_len = sqrt(rxf[0] * rxf[0] + rxf[1] * rxf[1] + rxf[2] * rxf[2]);
  double terr = 0.0;
  for (int k = 0; k < 3; ++k) {
    terr = fmax(terr, fabs(tm[k] - rxf[k]));
  }
  printf("  %s%s, centre (%.2f, %.2f): mean force (%.4g, %.5g, %.4g) N, weight %.5g N; torque "
         "(%.4g, %.4g, %.4g) N m, r x F (%.4g, %.4g, %.4g); ground %.3g\n",
         backend_name(opencl), per_body ? " per body" : "", (double)cx, (double)cz, fm[0], fm[1],
         fm[2], weight, tm[0], tm[1], tm[2], rxf[0], rxf[1], rxf[2], ground_max);
  CHECK(t, mass > 26.9 && mass < 27.1); /* 1000 kg/m^3 x 0.027 m^3 */
  /* The weight pushes down on the box: -m g along y, within 1 %. */
  CHECK_MSG(t, fabs(-fm[1] - weight) < 0.01 * weight, "%s: %.5g N down, weight %.5g N",
            backend_name(opencl), -fm[1], weight);
  CHECK_MSG(t, fabs(fm[0]) < 0.01 * weight && fabs(fm[2]) < 0.01 * weight,
            "%s: sideways force (%.3g, %.3g) N", backend_name(opencl), fm[0], fm[2]);
  if (rxf_len > 0.05 * weight * 0.1) {
    CHECK_MSG(t, terr < 0.02 * rxf_len, "%s: torque off r x F by %.3g N m (|r x F| %.4g)",
              backend_name(opencl), terr, rxf_len);
  } else {
    CHECK_MSG(t, terr < 0.02 * weight * 0.15, "%s: torque off r x F by %.3g N m",
              backend_name(opencl), terr);
  }
  /* The plane 5 m below is never touched. */
  CHECK_MSG(t, ground_max == 0.0, "%s: the untouched plane reports %.3g", backend_name(opencl),
            ground_max);
  /* Bad ids are refused and write nothing; removing a collider zeroes the others' forces until
   * the next step. */
  piola_collider_id bogus = box;
  bogus.generation += 7;
  f[0] = 5.0f;
  CHECK_STATUS(t, piola_world_get_collider_force(w, bogus, f, tq), PIOLA_ERROR_INVALID_COLLIDER);
  CHECK(t, f[0] == 5.0f);
  CHECK_STATUS(t, piola_world_get_collider_force(NULL, box, f, tq), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_get_collider_force(w, box, NULL, NULL), PIOLA_OK);
  REQUIRE_OK(t, piola_world_remove_collider(w, ground));
  CHECK_STATUS(t, piola_world_get_collider_force(w, box, f, NULL), PIOLA_OK);
  CHECK(t, f[0] == 0.0f && f[1] == 0.0f && f[2] == 0.0f);
  REQUIRE_OK(t, piola_world_step(w));
  CHECK_STATUS(t, piola_world_get_collider_force(w, box, f, NULL), PIOLA_OK);
  CHECK_MSG(t, fabs(-f[1] - weight) < 0.05 * weight, "%s: after the removal %.4g N down",
            backend_name(opencl), -(double)f[1]);
  CHECK_STATUS(t, piola_world_get_collider_force(w, ground, f, NULL), PIOLA_ERROR_INVALID_COLLIDER);
  piola_world_destroy(w);
}

void test_collider_force_box_rest(piola_test *t) {
  box_rest(t, false, 0.0f, 0.0f, false);
  box_rest(t, false, 0.45f, -0.3f, false);
}

/* Per stage (PoCL's schedule), and with the per-body kernel of the GPUs. */
void test_opencl_collider_force_box_rest(piola_test *t) {
  if (opencl_test_ready(t)) {
    box_rest(t, true, 0.0f, 0.0f, false);
    box_rest(t, true, 0.45f, -0.3f, false);
    box_rest(t, true, 0.45f, -0.3f, true);
  }
}

/* A 0.5 m square of cloth (20 x 20 cells, 10 x 10 under multigrid; 0.2 kg/m^2) dropped flat onto a
 * sphere of radius 0.4 m drapes over it; once at rest (after 2 s) the mean force on the sphere over
 * 0.5 s is the cloth's weight within 2 %, straight down. Under the multigrid scheme the Newton step
 * holds the cloth's vertices on the sphere and the host adds what COLLIDE's pushes leave of their
 * normal force (a light cloth vertex's push is bounded: without it the force read 18% low). */
static void cloth_on_sphere(piola_test *t, bool opencl, piola_iteration_scheme scheme) {
  piola_world_def def = opencl_test_world_def(
      opencl ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE, NULL, NULL);
  def.iteration_scheme = scheme;
  /* the multigrid scheme's step converges at one substep; its Newton steps cost more per vertex */
  const bool multigrid = scheme == PIOLA_SCHEME_MULTIGRID;
  const int32_t cells = multigrid ? 10 : 20;
  def.substeps = multigrid ? 1 : 4;
  def.damping = 1.0f;
  def.gravity[0] = def.gravity[2] = 0.0f;
  def.gravity[1] = (float)-FORCE_G;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_collider_def c = piola_default_collider_def();
  c.type = PIOLA_COLLIDER_SPHERE;
  c.shape.sphere.radius = 0.4f;
  c.static_friction = 0.8f;
  c.dynamic_friction = 0.6f;
  piola_collider_id ball;
  REQUIRE_OK(t, piola_world_add_collider(w, &c, &ball));
  piola_tri_mesh grid;
  REQUIRE_OK(t, piola_mesh_make_grid((const int32_t[2]){cells, cells}, (const float[2]){0.5f, 0.5f},
                                     &grid));
  piola_cloth_material cm = piola_default_cloth_material();
  piola_body_id cloth;
  REQUIRE_OK(t,
             piola_world_add_cloth(w, &grid, &cm, (const float[3]){-0.25f, 0.42f, -0.25f}, &cloth));
  piola_tri_mesh_free(&grid);
  const int settle = (int)(2.0 / def.dt + 0.5), measure = (int)(0.5 / def.dt + 0.5);
  double fsum[3] = {0.0, 0.0, 0.0};
  for (int step = 0; step < settle + measure; ++step) {
    REQUIRE_OK(t, piola_world_step(w));
    if (step >= settle) {
      float f[3];
      REQUIRE_OK(t, piola_world_get_collider_force(w, ball, f, NULL));
      for (int k = 0; k < 3; ++k) {
        fsum[k] += f[k] / measure;
      }
    }
  }
  double com[3];
  const double weight = body_mass(w, cloth, com) * FORCE_G;
  printf("  %s: mean force (%.4g, %.5g, %.4g) N, the cloth's weight %.5g N, its centre at "
         "(%.3f, %.3f, %.3f) m\n",
         backend_name(opencl), fsum[0], fsum[1], fsum[2], weight, com[0], com[1], com[2]);
  CHECK(t, fabs(weight - 0.2 * 0.25 * FORCE_G) < 1e-4); /* 0.2 kg/m^2 x 0.25 m^2 */
  CHECK_MSG(t, com[1] > 0.2 && com[1] < 0.45, "%s: cloth at %.3f m, not on the sphere",
            backend_name(opencl), com[1]);
  CHECK_MSG(t, fabs(-fsum[1] - weight) < 0.02 * weight, "%s: %.5g N down, weight %.5g N",
            backend_name(opencl), -fsum[1], weight);
  CHECK_MSG(t, fabs(fsum[0]) < 0.02 * weight && fabs(fsum[2]) < 0.02 * weight,
            "%s: sideways (%.3g, %.3g) N", backend_name(opencl), fsum[0], fsum[2]);
  piola_world_destroy(w);
}

void test_collider_force_cloth_on_sphere(piola_test *t) {
  cloth_on_sphere(t, false, PIOLA_SCHEME_GAUSS_SEIDEL);
}

void test_opencl_collider_force_cloth_on_sphere(piola_test *t) {
  if (opencl_test_ready(t)) {
    cloth_on_sphere(t, true, PIOLA_SCHEME_GAUSS_SEIDEL);
  }
}

void test_multigrid_collider_force_cloth_on_sphere(piola_test *t) {
  cloth_on_sphere(t, false, PIOLA_SCHEME_MULTIGRID);
  if (opencl_test_ready(t)) {
    cloth_on_sphere(t, true, PIOLA_SCHEME_MULTIGRID);
  }
}
