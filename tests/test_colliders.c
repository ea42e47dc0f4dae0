/* Tests of the colliders (kernels/piola_collide.h): piola_collide_particle on each shape with
 * known inputs and outputs (depth, normal, projection, static and dynamic friction after
 * Macklin et al. 2014), and bodies in worlds on the CPU reference: resting on a plane, never
 * left inside a sphere, box or capsule, and Coulomb friction on an inclined plane. Then
 * kinematic colliders (poses and velocities): every shape posed equals the shape written in
 * world coordinates, friction carries a particle with a moving surface, a paddle pushes a box,
 * a conveyor carries one, a removed platform lets one fall, a rotated box equals its shape, the
 * identity pose is bitwise the static collider, and bad input is rejected; the world tests run
 * on the CPU reference and (opencl_ variants) on OpenCL in lock-step with it, within the parity
 * tolerance. */
#include "crosscheck.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <stdlib.h>
#include <string.h>

/* OpenCL against the CPU reference: the tolerance of tests/test_opencl_parity.c. */
#define KIN_PARITY_TOLERANCE 1e-4

/* ---- piola_collide_particle ------------------------------------------------------------ */

static piola_collider_data pack(piola_test *t, const piola_collider_def *def) {
  piola_collider_data c;
  char reason[256];
  memset(&c, 0, sizeof c);
  piola_status s = piola_collider_pack(def, &c, reason, sizeof reason);
  CHECK_MSG(t, s == PIOLA_OK, "pack: %s (%s)", piola_status_string(s), reason);
  return c;
}

/* A def of the given type with a zeroed shape and no friction. */
static piola_collider_def bare_def(piola_collider_type type) {
  piola_collider_def d = piola_default_collider_def();
  d.type = type;
  memset(&d.shape, 0, sizeof d.shape);
  d.static_friction = 0.0f;
  d.dynamic_friction = 0.0f;
  return d;
}

static double dist3(piola_v3 a, piola_v3 b) {
  return piola_v3_length(piola_v3_sub(a, b));
}

/* Projects p (starting the step at x) and checks the result q, the contact flag, the depth and
 * the normal (expected_normal NULL: no contact expected). */
static void expect_projection(piola_test *t, const char *what, const piola_collider_data *c,
                              piola_v3 x, piola_v3 p, piola_v3 q, double depth,
                              const piola_v3 *normal) {
  piola_v3 n = piola_v3_make(0.0, 0.0, 0.0);
  double d = piola_collider_contact(c, x, p, &n);
  piola_v3 r = p;
  int hit = piola_collide_particle(c, x, &r);
  if (normal == NULL) {
    CHECK_MSG(t, hit == 0 && !(d > 0.0), "%s: unexpected contact (depth %.3g)", what, d);
    CHECK_MSG(t, r.x == p.x && r.y == p.y && r.z == p.z, "%s: moved without contact", what);
    return;
  }
  CHECK_MSG(t, hit == 1, "%s: no contact reported", what);
  CHECK_MSG(t, fabs(d - depth) < 1e-6, "%s: depth %.9g, expected %.9g", what, d, depth);
  CHECK_MSG(t, dist3(n, *normal) < 1e-6, "%s: normal (%g %g %g), expected (%g %g %g)", what, n.x,
            n.y, n.z, normal->x, normal->y, normal->z);
  CHECK_MSG(t, dist3(r, q) < 1e-6, "%s: projected to (%.9g %.9g %.9g), expected (%.9g %.9g %.9g)",
            what, r.x, r.y, r.z, q.x, q.y, q.z);
}

void test_collide_particle_plane(piola_test *t) {
  piola_collider_def def = bare_def(PIOLA_COLLIDER_PLANE);
  def.shape.plane.normal[1] = 2.0f; /* normalised on packing */
  def.shape.plane.offset = 0.5f;
  piola_collider_data c = pack(t, &def);
  CHECK(t, c.a[1] == 1.0f && c.a[3] == 0.5f);
  const piola_v3 up = piola_v3_make(0.0, 1.0, 0.0);
  /* Straight down into it: back onto y = 0.5, depth 0.2. */
  expect_projection(t, "plane, normal motion", &c, piola_v3_make(0.3, 0.9, 0.2),
                    piola_v3_make(0.3, 0.3, 0.2), piola_v3_make(0.3, 0.5, 0.2), 0.2, &up);
  /* Above it, or exactly on it: nothing happens. */
  expect_projection(t, "plane, above", &c, piola_v3_make(0.0, 1.0, 0.0),
                    piola_v3_make(0.1, 0.6, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
  expect_projection(t, "plane, on it", &c, piola_v3_make(0.0, 1.0, 0.0),
                    piola_v3_make(0.1, 0.5, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);

  /* Friction. Start at y = 0.55, end 0.1 deep with a tangential motion of 0.02 in x:
   * static friction 0.5 (0.02 < 0.5 * 0.1) removes the tangential motion entirely. */
  def.static_friction = 0.5f;
  def.dynamic_friction = 0.1f;
  c = pack(t, &def);
  expect_projection(t, "plane, static friction", &c, piola_v3_make(0.0, 0.55, 0.0),
                    piola_v3_make(0.02, 0.4, 0.0), piola_v3_make(0.0, 0.5, 0.0), 0.1, &up);
  /* Static friction 0.1 (0.02 >= 0.1 * 0.1): dynamic friction 0.1 takes away
   * min(0.1 * 0.1 / 0.02, 1) = 1/2 of it. */
  def.static_friction = 0.1f;
  c = pack(t, &def);
  expect_projection(t, "plane, dynamic friction", &c, piola_v3_make(0.0, 0.55, 0.0),
                    piola_v3_make(0.02, 0.4, 0.0), piola_v3_make(0.01, 0.5, 0.0), 0.1, &up);
  /* A strong dynamic friction never reverses the motion: capped at removing all of it. */
  def.dynamic_friction = 5.0f;
  c = pack(t, &def);
  expect_projection(t, "plane, dynamic friction capped", &c, piola_v3_make(0.0, 0.55, 0.0),
                    piola_v3_make(0.02, 0.4, 0.0), piola_v3_make(0.0, 0.5, 0.0), 0.1, &up);
  /* Tangential motion in x and z of 0.03, 0.04 (length 0.05), depth 0.1, dynamic 0.2:
   * keeps 1 - 0.2 * 0.1 / 0.05 = 0.6 of it. */
  def.static_friction = 0.0f;
  def.dynamic_friction = 0.2f;
  c = pack(t, &def);
  expect_projection(t, "plane, dynamic friction in 2d", &c, piola_v3_make(0.0, 0.55, 0.0),
                    piola_v3_make(0.03, 0.4, 0.04), piola_v3_make(0.018, 0.5, 0.024), 0.1, &up);

  /* A tilted plane through (0, 1, 0) with normal (1, 1, 0) / sqrt 2. */
  def = bare_def(PIOLA_COLLIDER_PLANE);
  def.shape.plane.normal[0] = 1.0f;
  def.shape.plane.normal[1] = 1.0f;
  def.shape.plane.offset = (float)(1.0 / sqrt(2.0));
  c = pack(t, &def);
  const double s = 1.0 / sqrt(2.0);
  const piola_v3 n45 = piola_v3_make(s, s, 0.0);
  /* (0, 0.5, 0) is 0.5 / sqrt 2 below it; the foot of the normal through it is (0.25, 0.75). */
  expect_projection(t, "tilted plane", &c, piola_v3_make(0.25, 0.75, 0.0),
                    piola_v3_make(0.0, 0.5, 0.0), piola_v3_make(0.25, 0.75, 0.0), 0.5 * s, &n45);
}

void test_collide_particle_sphere(piola_test *t) {
  piola_collider_def def = bare_def(PIOLA_COLLIDER_SPHERE);
  def.shape.sphere.center[0] = 1.0f;
  def.shape.sphere.center[1] = 2.0f;
  def.shape.sphere.center[2] = 3.0f;
  def.shape.sphere.radius = 0.5f;
  piola_collider_data c = pack(t, &def);
  const piola_v3 ctr = piola_v3_make(1.0, 2.0, 3.0);
  const piola_v3 ex = piola_v3_make(1.0, 0.0, 0.0), ez = piola_v3_make(0.0, 0.0, -1.0);
  expect_projection(t, "sphere, radial", &c, piola_v3_make(2.0, 2.0, 3.0),
                    piola_v3_make(1.3, 2.0, 3.0), piola_v3_make(1.5, 2.0, 3.0), 0.2, &ex);
  expect_projection(t, "sphere, outside", &c, piola_v3_make(2.0, 2.0, 3.0),
                    piola_v3_make(1.0, 2.0, 3.6), piola_v3_make(0, 0, 0), 0.0, NULL);
  /* Exactly at the centre: pushed out towards where it started the step (-z). */
  expect_projection(t, "sphere, at the centre", &c, piola_v3_make(1.0, 2.0, 2.0), ctr,
                    piola_v3_make(1.0, 2.0, 2.5), 0.5, &ez);
  /* An oblique point: onto the surface along the radius through it. */
  piola_v3 p = piola_v3_make(1.2, 2.1, 3.2);
  piola_v3 d = piola_v3_sub(p, ctr);
  double l = piola_v3_length(d);
  piola_v3 n = piola_v3_scale(d, 1.0 / l);
  expect_projection(t, "sphere, oblique", &c, piola_v3_add(ctr, piola_v3_scale(n, 2.0)), p,
                    piola_v3_add(ctr, piola_v3_scale(n, 0.5)), 0.5 - l, &n);
}

void test_collide_particle_box(piola_test *t) {
  /* Half extents (1, 0.5, 2) about (0, 1, 0), rotated by 90 degrees about +y: the box frame's
   * x axis points along world -z and its z axis along world +x, so in world terms the box
   * spans |x| <= 2, 0.5 <= y <= 1.5, |z| <= 1. */
  piola_collider_def def = bare_def(PIOLA_COLLIDER_BOX);
  def.shape.box.center[1] = 1.0f;
  def.shape.box.half_extents[0] = 1.0f;
  def.shape.box.half_extents[1] = 0.5f;
  def.shape.box.half_extents[2] = 2.0f;
  def.shape.box.rotation[1] = (float)sin(WT_PI / 4.0);
  def.shape.box.rotation[3] = (float)cos(WT_PI / 4.0);
  piola_collider_data c = pack(t, &def);
  const piola_v3 pz = piola_v3_make(0.0, 0.0, 1.0), mx = piola_v3_make(-1.0, 0.0, 0.0),
                 py = piola_v3_make(0.0, 1.0, 0.0);
  /* Nearest face z = +1 (0.2 away; x face 1.5, y faces 0.5). */
  expect_projection(t, "box, z face", &c, piola_v3_make(0.5, 1.0, 1.5),
                    piola_v3_make(0.5, 1.0, 0.8), piola_v3_make(0.5, 1.0, 1.0), 0.2, &pz);
  /* Nearest face x = -2. */
  expect_projection(t, "box, x face", &c, piola_v3_make(-2.5, 1.0, 0.0),
                    piola_v3_make(-1.9, 1.0, 0.1), piola_v3_make(-2.0, 1.0, 0.1), 0.1, &mx);
  /* Nearest face y = 1.5. */
  expect_projection(t, "box, top face", &c, piola_v3_make(1.0, 2.0, 0.3),
                    piola_v3_make(1.0, 1.45, 0.3), piola_v3_make(1.0, 1.5, 0.3), 0.05, &py);
  /* Outside in the rotated sense: inside the unrotated box (|x| <= 1, |z| <= 2) but not in this
   * one (z = 1.5 > 1). */
  expect_projection(t, "box, outside", &c, piola_v3_make(0.5, 1.0, 1.5),
                    piola_v3_make(0.5, 1.0, 1.5), piola_v3_make(0, 0, 0), 0.0, NULL);
  expect_projection(t, "box, below", &c, piola_v3_make(0.0, 0.0, 0.0),
                    piola_v3_make(0.0, 0.45, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
}

void test_collide_particle_capsule(piola_test *t) {
  piola_collider_def def = bare_def(PIOLA_COLLIDER_CAPSULE);
  def.shape.capsule.b[0] = 2.0f;
  def.shape.capsule.radius = 0.5f;
  piola_collider_data c = pack(t, &def);
  const piola_v3 ey = piola_v3_make(0.0, 1.0, 0.0);
  /* Beside the segment: radially out to 0.5. */
  expect_projection(t, "capsule, side", &c, piola_v3_make(1.0, 1.0, 0.0),
                    piola_v3_make(1.0, 0.3, 0.0), piola_v3_make(1.0, 0.5, 0.0), 0.2, &ey);
  /* Past end b: out of the cap's sphere about b = (2, 0, 0). */
  piola_v3 p = piola_v3_make(2.3, 0.0, 0.1);
  piola_v3 d = piola_v3_sub(p, piola_v3_make(2.0, 0.0, 0.0));
  double l = piola_v3_length(d);
  piola_v3 n = piola_v3_scale(d, 1.0 / l);
  expect_projection(t, "capsule, cap", &c, piola_v3_make(3.0, 0.0, 1.0 / 3.0), p,
                    piola_v3_add(piola_v3_make(2.0, 0.0, 0.0), piola_v3_scale(n, 0.5)), 0.5 - l,
                    &n);
  expect_projection(t, "capsule, outside", &c, piola_v3_make(1.0, 1.0, 0.0),
                    piola_v3_make(1.0, 0.0, 0.55), piola_v3_make(0, 0, 0), 0.0, NULL);
  expect_projection(t, "capsule, beyond the cap", &c, piola_v3_make(3.0, 0.0, 0.0),
                    piola_v3_make(2.6, 0.0, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
}

void test_collide_particle_funnel(piola_test *t) {
  /* Base (0, 0, 0), axis +y, radius 0.2 at the bottom, 0.6 at the top, height 1: the wall's
   * radius at height y is 0.2 + 0.4 y, its outward normal (rhat - 0.4 y^) / sqrt(1.16). */
  piola_collider_def def = bare_def(PIOLA_COLLIDER_FUNNEL);
  def.shape.funnel.axis[1] = 3.0f; /* normalised on packing */
  def.shape.funnel.base_radius = 0.2f;
  def.shape.funnel.top_radius = 0.6f;
  def.shape.funnel.height = 1.0f;
  piola_collider_data c = pack(t, &def);
  CHECK(t, c.b[1] == 1.0f && c.b[3] == 1.0f);
  const double k = 1.0 / sqrt(1.16);
  const piola_v3 out = piola_v3_make(k, -0.4 * k, 0.0), in = piola_v3_make(-k, 0.4 * k, 0.0);
  /* Inside at height 0.5 (wall radius 0.4), moving out to radius 0.45: signed distance
   * 0.05 k; pushed back along the inward normal to the inner face of the wall, half the wall's
   * thickness (the skin, PIOLA_FUNNEL_SKIN times the height) inside its middle surface. */
  const double skin = (double)PIOLA_FUNNEL_SKIN * 1.0;
  piola_v3 p = piola_v3_make(0.45, 0.5, 0.0);
  piola_v3 q = piola_v3_add(p, piola_v3_scale(in, 0.05 * k + skin));
  expect_projection(t, "funnel, inside moving out", &c, piola_v3_make(0.3, 0.5, 0.0), p, q,
                    0.05 * k + skin, &in);
  /* It lands on the inner face (as packed, with float radii) to round-off: the signed distance
   * to the middle surface is -skin. */
  piola_v3 r = p;
  piola_collide_particle(&c, piola_v3_make(0.3, 0.5, 0.0), &r);
  CHECK_NEAR(
      t, (sqrt(r.x * r.x + r.z * r.z) - ((double)0.2f + ((double)0.6f - (double)0.2f) * r.y)) * k,
      -skin, 1e-12); /* recomputed from the float radii: double round-off */
  /* Outside (radius 0.5 at height 0.5), moving in to radius 0.35: kept outside. */
  p = piola_v3_make(0.35, 0.5, 0.0);
  q = piola_v3_add(p, piola_v3_scale(out, 0.05 * k + skin));
  expect_projection(t, "funnel, outside moving in", &c, piola_v3_make(0.5, 0.5, 0.0), p, q,
                    0.05 * k + skin, &out);
  /* Inside staying inside, outside staying outside, and beyond the height range: free. */
  expect_projection(t, "funnel, inside", &c, piola_v3_make(0.1, 0.5, 0.0),
                    piola_v3_make(0.0, 0.4, 0.3), piola_v3_make(0, 0, 0), 0.0, NULL);
  expect_projection(t, "funnel, outside", &c, piola_v3_make(0.9, 0.5, 0.0),
                    piola_v3_make(0.8, 0.5, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
  expect_projection(t, "funnel, above", &c, piola_v3_make(0.3, 1.5, 0.0),
                    piola_v3_make(0.9, 1.1, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
  /* Past the bottom edge (y = 0): out through the opening, and around the edge either way (the
   * motion meets the cone's extension below the edge, at y = -0.0104), free. */
  expect_projection(t, "funnel, out through the opening", &c, piola_v3_make(0.1, 0.1, 0.0),
                    piola_v3_make(0.12, -0.1, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
  expect_projection(t, "funnel, out around the bottom edge", &c, piola_v3_make(0.19, 0.01, 0.0),
                    piola_v3_make(0.25, -0.2, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
  expect_projection(t, "funnel, in around the bottom edge", &c, piola_v3_make(0.25, -0.2, 0.0),
                    piola_v3_make(0.19, 0.01, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
  /* Through the wall at y = 0.042, ending below the edge at radius 0.5 (the cone's extension
   * there: 0.16): in contact, pushed back along the inward normal to the extension's inner
   * face. */
  p = piola_v3_make(0.5, -0.1, 0.0);
  q = piola_v3_add(p, piola_v3_scale(in, 0.34 * k + skin));
  expect_projection(t, "funnel, through the wall, ending below it", &c,
                    piola_v3_make(0.1, 0.1, 0.0), p, q, 0.34 * k + skin, &in);
  /* On the axis (no radial direction): still a finite answer. */
  piola_v3 n;
  piola_v3 axis_point = piola_v3_make(0.0, 0.5, 0.0);
  double d = piola_collider_contact(&c, axis_point, axis_point, &n);
  CHECK(t, !(d > 0.0));
}

/* ---- Bodies and colliders in a world -------------------------------------------------------- */

/* A 0.3 m box of 3 x 3 x 3 cells (E = 1e6 Pa) at `at`, in a world with gravity. */
static piola_world *box_world(piola_test *t, const float at[3], piola_tet_mesh *mesh,
                              piola_body_id *id) {
  const int32_t cells[3] = {3, 3, 3};
  const float size[3] = {0.3f, 0.3f, 0.3f};
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  if (w == NULL) {
    return NULL;
  }
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  if (piola_mesh_make_box(cells, size, mesh) != PIOLA_OK ||
      piola_world_add_tet_body(w, mesh, &mat, at, id) != PIOLA_OK) {
    piola_world_destroy(w);
    return NULL;
  }
  return w;
}

void test_body_comes_to_rest_on_plane(piola_test *t) {
  /* A 0.3 m box dropped from 0.5 m onto y = 0, with friction 0.5 and without. */
  const float frictions[2] = {0.5f, 0.0f};
  for (int f = 0; f < 2; ++f) {
    piola_tet_mesh mesh;
    piola_body_id id;
    piola_world *w = box_world(t, (const float[3]){-0.15f, 0.5f, -0.15f}, &mesh, &id);
    REQUIRE(t, w != NULL);
    REQUIRE_OK(
        t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, frictions[f], NULL));
    const int32_t n = mesh.vertex_count;
    float *x = malloc(sizeof *x * 3 * (size_t)n);
    REQUIRE(t, x != NULL);
    double lowest_ever = INFINITY, lowest = INFINITY, highest = -INFINITY, worst_p = 0.0;
    double mass = 0.0, p[3], l[3];
    piola_stats st;
    for (int s = 0; s < 400; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
      REQUIRE_OK(t, piola_body_get_positions(w, id, x, n));
      lowest = INFINITY;
      highest = -INFINITY;
      for (int32_t i = 0; i < n; ++i) {
        lowest = fmin(lowest, x[3 * i + 1]);
        highest = fmax(highest, x[3 * i + 1]);
      }
      lowest_ever = fmin(lowest_ever, lowest);
      wt_momenta(w, &mass, p, l);
      worst_p = fmax(worst_p, fmax(fabs(p[0]), fabs(p[2])));
    }
    /* Where it landed: the centre of mass's horizontal offset from where it was dropped. */
    double cx = 0.0, cz = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      double m = 1.0 / w->w[i];
      cx += m * (w->x[3 * i] - (mesh.positions[3 * i] - 0.15f)) / mass;
      cz += m * (w->x[3 * i + 2] - (mesh.positions[3 * i + 2] - 0.15f)) / mass;
    }
    REQUIRE_OK(t, piola_world_get_stats(w, &st));
    printf("  friction %.1f: after 2 s lowest point %.3g m (lowest ever %.3g m), top %.4f m, "
           "kinetic energy %.3g J; horizontal momentum up to %.3g kg m/s, centre moved "
           "(%.4f, %.4f) m\n",
           (double)frictions[f], lowest, lowest_ever, highest, st.kinetic_energy, worst_p, cx, cz);
    /* Never below the plane (the projection lands exactly on it), resting on it at the end. */
    CHECK_MSG(t, lowest_ever >= -1e-9, "a vertex ended a step %.3g m below the plane", lowest_ever);
    CHECK_MSG(t, lowest < 1e-3, "lowest point %.3g m: not on the plane", lowest);
    CHECK_MSG(t, highest > 0.28 && highest < 0.3 + 1e-3, "top at %.4f m", highest);
    /* At rest: below a millionth of the energy of the drop, m g h = 27 kg * 9.81 * 0.5 m
     * (measured 6e-14 J with friction; 2.7e-6 J without, where only XPBD's numerical
     * dissipation damps the sideways ringing). */
    CHECK_MSG(t, st.kinetic_energy < 1e-6 * mass * 9.81 * 0.5, "kinetic energy %.3g J",
              st.kinetic_energy);
    if (frictions[f] == 0.0f) {
      /* A frictionless horizontal plane only pushes along y: the horizontal momentum stays 0
       * (to round-off against M v = 27 kg * 3.1 m/s at the impact). */
      CHECK_MSG(t, worst_p < 1e-10, "horizontal momentum %.3g kg m/s", worst_p);
      CHECK_MSG(t, fabs(cx) < 1e-9 && fabs(cz) < 1e-9, "centre moved (%.3g, %.3g) m", cx, cz);
    }
    free(x);
    piola_mesh_free(&mesh);
    piola_world_destroy(w);
  }
}

void test_solid_colliders_never_penetrated(piola_test *t) {
  const char *names[3] = {"sphere", "box", "capsule"};
  for (int k = 0; k < 3; ++k) {
    piola_tet_mesh mesh;
    piola_body_id id;
    piola_world *w = box_world(t, (const float[3]){-0.15f, 1.0f, -0.15f}, &mesh, &id);
    REQUIRE(t, w != NULL);
    piola_collider_def def = bare_def(PIOLA_COLLIDER_SPHERE);
    def.static_friction = 0.5f;
    def.dynamic_friction = 0.4f;
    if (k == 0) {
      /* Off-centre under the body: it lands, rolls off and falls past. */
      def.shape.sphere.center[0] = 0.05f;
      def.shape.sphere.center[1] = 0.5f;
      def.shape.sphere.radius = 0.4f;
    } else if (k == 1) {
      def.type = PIOLA_COLLIDER_BOX;
      def.shape.box.center[1] = 0.3f;
      def.shape.box.half_extents[0] = 0.5f;
      def.shape.box.half_extents[1] = 0.3f;
      def.shape.box.half_extents[2] = 0.5f;
      def.shape.box.rotation[2] = (float)sin(0.15); /* 0.3 rad about z: a slope */
      def.shape.box.rotation[3] = (float)cos(0.15);
    } else {
      def.type = PIOLA_COLLIDER_CAPSULE;
      def.shape.capsule.a[0] = -0.5f;
      def.shape.capsule.a[1] = 0.4f;
      def.shape.capsule.b[0] = 0.5f;
      def.shape.capsule.b[1] = 0.5f;
      def.shape.capsule.radius = 0.2f;
    }
    REQUIRE_OK(t, piola_world_add_collider(w, &def, NULL));
    piola_collider_data c = pack(t, &def);
    /* The same shape 1 mm larger, to see that the body did touch it. */
    piola_collider_def grown = def;
    if (k == 0) {
      grown.shape.sphere.radius += 1e-3f;
    } else if (k == 1) {
      for (int a = 0; a < 3; ++a) {
        grown.shape.box.half_extents[a] += 1e-3f;
      }
    } else {
      grown.shape.capsule.radius += 1e-3f;
    }
    piola_collider_data near = pack(t, &grown);
    double worst = 0.0;
    int32_t touching_steps = 0;
    bool finite = true;
    for (int s = 0; s < 300; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
      bool touching = false;
      for (int32_t i = 0; i < w->vertex_count; ++i) {
        piola_v3 x = piola_v3_make(w->x[3 * i], w->x[3 * i + 1], w->x[3 * i + 2]), n;
        finite = finite && isfinite(x.x) && isfinite(x.y) && isfinite(x.z);
        worst = fmax(worst, piola_collider_contact(&c, x, x, &n));
        touching = touching || piola_collider_contact(&near, x, x, &n) > 0.0;
      }
      touching_steps += touching;
    }
    printf("  %s: deepest vertex at the end of a step %.3g m, in contact for %d of 300 steps\n",
           names[k], worst, touching_steps);
    CHECK(t, finite);
    /* Exactly on the surface up to rounding (measured 1.7e-12 m for the rotated box). */
    CHECK_MSG(t, worst < 1e-9, "%s: a vertex ended a step %.3g m inside", names[k], worst);
    CHECK_MSG(t, touching_steps >= 10, "%s: the body touched it in %d steps only", names[k],
              touching_steps);
    piola_mesh_free(&mesh);
    piola_world_destroy(w);
  }
}

void test_friction_on_inclined_plane(piola_test *t) {
  /* tan 20 deg = 0.364: a block sticks when mu > 0.364 and otherwise slides with acceleration
   * g (sin 20 - mu cos 20), covering g (sin 20 - mu cos 20) / 2 in 1 s from rest. Measured:
   * mu 0.1 slides 1.223 m (expected 1.217), mu 0.8 moves 0.3 mm. */
  const double th = 20.0 * WT_PI / 180.0, g = 9.81;
  const float mus[4] = {0.1f, 0.3f, 0.45f, 0.8f};
  for (int i = 0; i < 4; ++i) {
    double lowest = 0.0;
    const piola_world_def def = piola_test_world_def(NULL, NULL);
    const double d = wt_incline_slide(&def, mus[i], &lowest);
    double expected = mus[i] < tan(th) ? 0.5 * g * (sin(th) - mus[i] * cos(th)) : 0.0;
    printf("  friction %.2f on 20 deg: moved %.4f m in 1 s (Coulomb: %.4f m); lowest vertex "
           "%.3g m from the plane\n",
           (double)mus[i], d, expected, lowest);
    CHECK(t, isfinite(d));
    CHECK_MSG(t, lowest > -1e-9, "friction %.2f: a vertex ended %.3g m below the plane",
              (double)mus[i], lowest);
    if (expected > 0.0) {
      CHECK_MSG(t, d > 0.1, "friction %.2f: slid only %.4f m", (double)mus[i], d);
      CHECK_MSG(t, fabs(d / expected - 1.0) < 0.1, "friction %.2f: slid %.4f m, Coulomb %.4f m",
                (double)mus[i], d, expected);
    } else {
      CHECK_MSG(t, d < 0.01, "friction %.2f: moved %.4f m", (double)mus[i], d);
    }
  }
}

/* ---- Kinematic colliders: poses and velocities ---------------------------------------------- */

static const float kin_identity[4] = {0.0f, 0.0f, 0.0f, 1.0f};
static const float kin_zero[3] = {0.0f, 0.0f, 0.0f};

/* A posed collider's record, as piola_world_set_collider_pose() writes it. */
static piola_collider_data posed(piola_test *t, const piola_collider_def *def, const double pos[3],
                                 const double rot[4], const double vel[3], const double ang[3]) {
  piola_collider_data c = pack(t, def);
  piola_collider_slot slot;
  memset(&slot, 0, sizeof slot);
  memcpy(slot.position, pos, sizeof slot.position);
  memcpy(slot.rotation, rot, sizeof slot.rotation);
  memcpy(slot.velocity, vel, sizeof slot.velocity);
  memcpy(slot.angular_velocity, ang, sizeof slot.angular_velocity);
  piola_collider_pose_pack(&slot, &c);
  return c;
}

void test_collider_pose_particle(piola_test *t) {
  /* Every shape, posed (moved by (0.3, -0.2, 0.5), turned 40 degrees about (1, 2, 2) / 3), meets
   * a particle as the same shape written in world coordinates does: same correction to double
   * round-off, at rest and with the collider's motion within a substep accounted for. */
  const double ang = 40.0 * WT_PI / 180.0;
  const double axis[3] = {1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0};
  const double rot[4] = {axis[0] * sin(ang / 2), axis[1] * sin(ang / 2), axis[2] * sin(ang / 2),
                         cos(ang / 2)};
  const double pos[3] = {0.3, -0.2, 0.5}, zero[3] = {0.0, 0.0, 0.0};
  const piola_v3 q = piola_v3_make(rot[0], rot[1], rot[2]);
  const piola_v3 o = piola_v3_make(pos[0], pos[1], pos[2]);
#define WORLD_POINT(l) piola_v3_add(o, piola_quat_rotate(q, rot[3], (l)))
  for (int kind = 0; kind < 5; ++kind) {
    piola_collider_def local = bare_def((piola_collider_type)kind), world = local;
    local.static_friction = world.static_friction = 0.3f;
    local.dynamic_friction = world.dynamic_friction = 0.2f;
    piola_v3 v;
    switch (kind) {
    case PIOLA_COLLIDER_PLANE:
      local.shape.plane.normal[1] = 1.0f;
      local.shape.plane.offset = 0.25f;
      v = piola_quat_rotate(q, rot[3], piola_v3_make(0, 1, 0));
      world.shape.plane.normal[0] = (float)v.x;
      world.shape.plane.normal[1] = (float)v.y;
      world.shape.plane.normal[2] = (float)v.z;
      world.shape.plane.offset = (float)(0.25 + piola_v3_dot(v, o));
      break;
    case PIOLA_COLLIDER_SPHERE:
      local.shape.sphere.radius = world.shape.sphere.radius = 0.5f;
      local.shape.sphere.center[0] = 0.25f;
      v = WORLD_POINT(piola_v3_make(0.25, 0, 0));
      world.shape.sphere.center[0] = (float)v.x;
      world.shape.sphere.center[1] = (float)v.y;
      world.shape.sphere.center[2] = (float)v.z;
      break;
    case PIOLA_COLLIDER_BOX:
      for (int k = 0; k < 3; ++k) {
        local.shape.box.half_extents[k] = world.shape.box.half_extents[k] = 0.3f + 0.1f * k;
      }
      local.shape.box.rotation[3] = 1.0f;
      world.shape.box.center[0] = (float)pos[0];
      world.shape.box.center[1] = (float)pos[1];
      world.shape.box.center[2] = (float)pos[2];
      for (int k = 0; k < 4; ++k) {
        world.shape.box.rotation[k] = (float)rot[k];
      }
      break;
    case PIOLA_COLLIDER_CAPSULE:
      local.shape.capsule.radius = world.shape.capsule.radius = 0.3f;
      local.shape.capsule.b[1] = 0.5f;
      v = WORLD_POINT(piola_v3_make(0, 0, 0));
      world.shape.capsule.a[0] = (float)v.x;
      world.shape.capsule.a[1] = (float)v.y;
      world.shape.capsule.a[2] = (float)v.z;
      v = WORLD_POINT(piola_v3_make(0, 0.5, 0));
      world.shape.capsule.b[0] = (float)v.x;
      world.shape.capsule.b[1] = (float)v.y;
      world.shape.capsule.b[2] = (float)v.z;
      break;
    default:
      local.shape.funnel.axis[1] = 1.0f;
      local.shape.funnel.base_radius = world.shape.funnel.base_radius = 0.2f;
      local.shape.funnel.top_radius = world.shape.funnel.top_radius = 0.6f;
      local.shape.funnel.height = world.shape.funnel.height = 1.0f;
      v = WORLD_POINT(piola_v3_make(0, 0, 0));
      world.shape.funnel.base[0] = (float)v.x;
      world.shape.funnel.base[1] = (float)v.y;
      world.shape.funnel.base[2] = (float)v.z;
      v = piola_quat_rotate(q, rot[3], piola_v3_make(0, 1, 0));
      world.shape.funnel.axis[0] = (float)v.x;
      world.shape.funnel.axis[1] = (float)v.y;
      world.shape.funnel.axis[2] = (float)v.z;
      break;
    }
    piola_collider_data a = posed(t, &local, pos, rot, zero, zero), b = pack(t, &world);
    CHECK(t, a.posed == 1 && b.posed == 0);
    /* The shape rounded to float in the world def: compare to 1e-6 m, and count contacts. */
    uint64_t rng = 99u + (uint64_t)kind;
    int hits = 0, mismatched = 0;
    double worst = 0.0, worst_normal = 0.0;
    for (int i = 0; i < 4000; ++i) {
      piola_v3 l = piola_v3_make(0.8 * piola_test_rand(&rng), 0.6 + 0.6 * piola_test_rand(&rng),
                                 0.8 * piola_test_rand(&rng));
      if (kind == PIOLA_COLLIDER_PLANE) {
        l.y -= 0.6;
      }
      piola_v3 xs = WORLD_POINT(
          piola_v3_add(l, piola_v3_make(0.02 * piola_test_rand(&rng), 0.02 * piola_test_rand(&rng),
                                        0.02 * piola_test_rand(&rng))));
      const piola_v3 none = piola_v3_make(0.0, 0.0, 0.0);
      piola_v3 p = WORLD_POINT(l), ca = none, cb = none, na = none, nb = none;
      int ha = piola_collider_correction_at(&a, xs, p, 0.0, 0.0, &ca, &na);
      int hb = piola_collider_correction_at(&b, xs, p, 0.0, 0.0, &cb, &nb);
      hits += ha;
      if (ha != hb) {
        /* Only where the float-rounded world shape puts the point on the other side. */
        mismatched += piola_v3_length(ca) + piola_v3_length(cb) > 1e-5;
      } else {
        worst = fmax(worst, dist3(ca, cb));
        worst_normal = ha ? fmax(worst_normal, dist3(na, nb)) : worst_normal;
      }
    }
    printf("  %s: %d of 4000 particles in contact, corrections differ by %.3g m, %d mismatched\n",
           (const char *[]){"plane", "sphere", "box", "capsule", "funnel"}[kind], hits, worst,
           mismatched);
    CHECK_MSG(t, hits > (kind == PIOLA_COLLIDER_FUNNEL ? 20 : 200), "kind %d: only %d contacts",
              kind, hits);
    CHECK_MSG(t, worst < 2e-6 && mismatched == 0, "kind %d: differ by %.3g m (%d mismatched)", kind,
              worst, mismatched);
    CHECK_MSG(t, worst_normal < 1e-5, "kind %d: normals differ by %.3g", kind, worst_normal);
  }
#undef WORLD_POINT

  /* A plate y < 0 moving along x at 2 m/s and turning about y at 1 rad/s: over a substep of
   * h = 1 ms ending at t = 3 ms, a particle resting on it that sticks (static friction) is
   * carried with the surface point under it: it ends where that point goes, v_s h further,
   * v_s = v + w x (p - origin) at the pushed-out point p, with the origin at 2 t along x. */
  piola_collider_def plate = bare_def(PIOLA_COLLIDER_PLANE);
  plate.shape.plane.normal[1] = 1.0f;
  plate.static_friction = 5.0f; /* sticks: 5 * 1 mm deep > 2 mm of relative motion */
  const double vel[3] = {2.0, 0.0, 0.0}, spin[3] = {0.0, 1.0, 0.0};
  piola_collider_data c = posed(t, &plate, zero, (const double[4]){0, 0, 0, 1}, vel, spin);
  const double h = 1e-3, t_end = 3e-3;
  piola_v3 xs = piola_v3_make(0.5, 1e-4, 0.2), p = piola_v3_make(0.5, -1e-3, 0.2), corr, normal;
  CHECK(t, piola_collider_correction_at(&c, xs, p, t_end, h, &corr, &normal) == 1);
  /* the plate turns about y, so its normal stays +y */
  CHECK_NEAR(t, normal.x, 0.0, 1e-12);
  CHECK_NEAR(t, normal.y, 1.0, 1e-12);
  CHECK_NEAR(t, normal.z, 0.0, 1e-12);
  piola_v3 r = piola_v3_add(p, corr);
  piola_v3 arm = piola_v3_sub(piola_v3_make(p.x, 0.0, p.z), piola_v3_make(2.0 * t_end, 0.0, 0.0));
  piola_v3 vs =
      piola_v3_add(piola_v3_make(2.0, 0.0, 0.0), piola_v3_cross(piola_v3_make(0.0, 1.0, 0.0), arm));
  piola_v3 expect = piola_v3_add(piola_v3_make(xs.x, 0.0, xs.z), piola_v3_scale(vs, h));
  CHECK_MSG(t, dist3(r, expect) < 1e-12, "carried to (%.9g %.9g %.9g), expected (%.9g %.9g %.9g)",
            r.x, r.y, r.z, expect.x, expect.y, expect.z);
  /* The same particle on the plate at rest stays where it started (tangentially). */
  c = pack(t, &plate);
  CHECK(t, piola_collider_correction_at(&c, xs, p, t_end, h, &corr, &normal) == 1);
  r = piola_v3_add(p, corr);
  CHECK(t, dist3(r, piola_v3_make(xs.x, 0.0, xs.z)) < 1e-15);
}

/* ---- Moving colliders in worlds, on the CPU reference and OpenCL ----------------------------- */

/* Centre of mass (m) and its velocity (m/s) of a body, from the API. */
static void kin_com(const piola_world *w, piola_body_id id, double com[3], double vel[3]) {
  int32_t n = piola_body_get_vertex_count(w, id);
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n),
        *inv = malloc(sizeof *inv * (size_t)n);
  double mass = 0.0;
  for (int k = 0; k < 3; ++k) {
    com[k] = vel[k] = NAN;
  }
  if (x != NULL && v != NULL && inv != NULL && piola_body_get_positions(w, id, x, n) == PIOLA_OK &&
      piola_body_get_velocities(w, id, v, n) == PIOLA_OK &&
      piola_body_get_inverse_masses(w, id, inv, n) == PIOLA_OK) {
    for (int k = 0; k < 3; ++k) {
      com[k] = vel[k] = 0.0;
    }
    for (int32_t i = 0; i < n; ++i) {
      double m = 1.0 / inv[i];
      mass += m;
      for (int k = 0; k < 3; ++k) {
        com[k] += m * x[3 * i + k];
        vel[k] += m * v[3 * i + k];
      }
    }
    for (int k = 0; k < 3; ++k) {
      com[k] /= mass;
      vel[k] /= mass;
    }
  }
  free(x);
  free(v);
  free(inv);
}

/* Lowest and smallest-x coordinates of a body's vertices. */
static void kin_extent(const piola_world *w, piola_body_id id, double *min_x, double *min_y) {
  float *x = wt_get_positions(w, id);
  *min_x = *min_y = INFINITY;
  for (int32_t i = 0; x != NULL && i < piola_body_get_vertex_count(w, id); ++i) {
    *min_x = fmin(*min_x, x[3 * i]);
    *min_y = fmin(*min_y, x[3 * i + 1]);
  }
  free(x);
}

/* One scene in up to two worlds run in lock-step: [0] the CPU reference, [1] OpenCL. */
typedef struct kin_pair {
  int count;
  piola_world *w[2];
  piola_body_id body[2];
  piola_collider_id ground[2], mover[2];
  double worst; /* largest crosscheck max_relative between the two */
  int32_t steps;
} kin_pair;

typedef enum kin_kind { KIN_PADDLE, KIN_CONVEYOR_PLANE, KIN_CONVEYOR_BOX, KIN_PLATFORM } kin_kind;

/* A 0.3 m box of 3 x 3 x 3 cells (E = 1e6 Pa) resting at (x, y, -0.15) in its corner, over a
 * ground plane (friction 0.5/0.4) when `ground`, with 2 substeps per 5 ms step. */
static piola_status kin_build(piola_backend backend, piola_iteration_scheme scheme, kin_kind kind,
                              piola_world **out, piola_body_id *body, piola_collider_id *ground,
                              piola_collider_id *mover) {
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  def.substeps = 2;
  def.iteration_scheme = scheme;
  piola_world *w = NULL;
  piola_status s = piola_world_create(&def, &w);
  piola_tet_mesh box = wt_box(3, 3, 3, 0.3f, 0.3f, 0.3f);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  piola_collider_def c = piola_default_collider_def();
  float at[3] = {0.0f, 0.0f, -0.15f};
  memset(ground, 0, sizeof *ground);
  if (s == PIOLA_OK && box.vertex_count == 0) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK && kind == KIN_PLATFORM) {
    /* A 1 m platform, top at y = 0.2, then the ground (added second: its record moves down
     * when the platform goes). */
    c.type = PIOLA_COLLIDER_BOX;
    c.shape.box.half_extents[0] = c.shape.box.half_extents[2] = 0.5f;
    c.shape.box.half_extents[1] = 0.1f;
    s = piola_world_add_collider(w, &c, mover);
    if (s == PIOLA_OK) {
      s = piola_world_set_collider_pose(w, *mover, (const float[3]){0.15f, 0.1f, 0.0f},
                                        kin_identity, kin_zero, kin_zero);
    }
    at[1] = 0.2f;
  }
  if (s == PIOLA_OK && kind != KIN_CONVEYOR_PLANE && kind != KIN_CONVEYOR_BOX) {
    s = piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, ground);
  }
  if (s == PIOLA_OK && kind == KIN_PADDLE) {
    /* A paddle 0.1 m thick, 0.5 m tall, 0.8 m wide, its face 5 cm from the body, coming at it
     * at 1 m/s (friction 0.5/0.4 on it too). */
    c.type = PIOLA_COLLIDER_BOX;
    c.shape.box.half_extents[0] = 0.05f;
    c.shape.box.half_extents[1] = 0.25f;
    c.shape.box.half_extents[2] = 0.4f;
    s = piola_world_add_collider(w, &c, mover);
    if (s == PIOLA_OK) {
      s = piola_world_set_collider_pose(w, *mover, (const float[3]){-0.1f, 0.26f, 0.0f},
                                        kin_identity, (const float[3]){1.0f, 0.0f, 0.0f}, kin_zero);
    }
  }
  if (s == PIOLA_OK && (kind == KIN_CONVEYOR_PLANE || kind == KIN_CONVEYOR_BOX)) {
    /* The ground itself moves along x at 0.5 m/s: a plane y < 0 sliding along itself (only its
     * velocity tells), or a 10 m x 0.2 m x 2 m plate. */
    if (kind == KIN_CONVEYOR_BOX) {
      c.type = PIOLA_COLLIDER_BOX;
      c.shape.box.half_extents[0] = 5.0f;
      c.shape.box.half_extents[1] = 0.1f;
      c.shape.box.half_extents[2] = 1.0f;
    }
    s = piola_world_add_collider(w, &c, mover);
    if (s == PIOLA_OK) {
      s = piola_world_set_collider_pose(
          w, *mover, (const float[3]){0.0f, kind == KIN_CONVEYOR_BOX ? -0.1f : 0.0f, 0.0f},
          kin_identity, (const float[3]){0.5f, 0.0f, 0.0f}, kin_zero);
    }
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &box, &mat, at, body);
  }
  piola_mesh_free(&box);
  if (s != PIOLA_OK) {
    piola_world_destroy(w);
    w = NULL;
  }
  *out = w;
  return s;
}

/* Builds the scene on the CPU reference, and on OpenCL too when `opencl`. */
static bool kin_pair_make_scheme(piola_test *t, kin_kind kind, bool opencl,
                                 piola_iteration_scheme scheme, kin_pair *p) {
  memset(p, 0, sizeof *p);
  p->count = opencl ? 2 : 1;
  for (int i = 0; i < p->count; ++i) {
    piola_status s = kin_build(i == 0 ? PIOLA_BACKEND_CPU_REFERENCE : PIOLA_BACKEND_OPENCL, scheme,
                               kind, &p->w[i], &p->body[i], &p->ground[i], &p->mover[i]);
    CHECK_MSG(t, s == PIOLA_OK, "scene %d on backend %d: %s", (int)kind, i, piola_status_string(s));
    if (s != PIOLA_OK) {
      return false;
    }
  }
  return true;
}

static bool kin_pair_make(piola_test *t, kin_kind kind, bool opencl, kin_pair *p) {
  return kin_pair_make_scheme(t, kind, opencl, PIOLA_SCHEME_GAUSS_SEIDEL, p);
}

/* Steps every world once and compares the two (the parity tests' measure). */
static void kin_pair_step(piola_test *t, kin_pair *p) {
  for (int i = 0; i < p->count; ++i) {
    CHECK_STATUS(t, piola_world_step(p->w[i]), PIOLA_OK);
  }
  p->steps++;
  if (p->count == 2) {
    crosscheck_pair pair = {p->w[0], p->w[1], &p->body[0], &p->body[1], 1};
    crosscheck_sample sample;
    CHECK_STATUS(t, crosscheck_compare(&pair, &sample), PIOLA_OK);
    p->worst = fmax(p->worst, sample.max_relative);
    if (getenv("PIOLA_PARITY_TRACE") != NULL) {
      printf("    step %4d: max %.3e of the diagonal\n", (int)p->steps, sample.max_relative);
    }
  }
}

static void kin_pair_free(piola_test *t, kin_pair *p) {
  if (p->count == 2) {
    printf("  OpenCL against the CPU reference: largest deviation %.3e of the diagonal\n",
           p->worst);
    CHECK_MSG(t, p->worst <= KIN_PARITY_TOLERANCE, "OpenCL deviates by %.3e (allowed %.1e)",
              p->worst, KIN_PARITY_TOLERANCE);
  }
  for (int i = 0; i < p->count; ++i) {
    piola_world_destroy(p->w[i]);
  }
}

static const char *const kin_backend[2] = {"reference", "OpenCL"};

/* A paddle moving at 1 m/s into a box resting on the ground pushes it along: once in contact
 * the box's centre moves with the paddle at about 1 m/s, its near face against the paddle's. */
static void paddle_pushes(piola_test *t, bool opencl) {
  kin_pair p;
  if (!kin_pair_make(t, KIN_PADDLE, opencl, &p)) {
    kin_pair_free(t, &p);
    return;
  }
  double vx_sum[2] = {0.0, 0.0}, vx_min[2] = {INFINITY, INFINITY}, vx_max[2] = {0.0, 0.0};
  for (int step = 0; step < 120; ++step) {
    kin_pair_step(t, &p);
    for (int i = 0; i < p.count && step >= 60; ++i) { /* from 0.3 s: 0.25 s after contact */
      double com[3], vel[3];
      kin_com(p.w[i], p.body[i], com, vel);
      vx_sum[i] += vel[0] / 60.0;
      vx_min[i] = fmin(vx_min[i], vel[0]);
      vx_max[i] = fmax(vx_max[i], vel[0]);
    }
  }
  for (int i = 0; i < p.count; ++i) {
    float pos[3];
    double com[3], vel[3], min_x, min_y;
    CHECK_STATUS(t, piola_world_get_collider_pose(p.w[i], p.mover[i], pos, NULL, NULL, NULL),
                 PIOLA_OK);
    kin_com(p.w[i], p.body[i], com, vel);
    kin_extent(p.w[i], p.body[i], &min_x, &min_y);
    const double face = (double)pos[0] + 0.05;
    printf("  %s: paddle at x = %.4f m after 0.6 s; body centre %.4f m, velocity over the last "
           "0.3 s %.4f m/s (%.4f .. %.4f), near face %.5f m from the paddle's\n",
           kin_backend[i], (double)pos[0], com[0], vx_sum[i], vx_min[i], vx_max[i], min_x - face);
    /* The pose advanced by 120 steps of 5 ms at 1 m/s. */
    CHECK_NEAR(t, pos[0], -0.1 + 0.6, 1e-5);
    CHECK_MSG(t, fabs(vx_sum[i] - 1.0) < 0.02 && vx_min[i] > 0.9 && vx_max[i] < 1.1,
              "%s: body moves at %.4f m/s (%.4f .. %.4f), not with the paddle", kin_backend[i],
              vx_sum[i], vx_min[i], vx_max[i]);
    /* Against the paddle: its centre half a body (0.15 m) ahead of the face, its face on it. */
    CHECK_MSG(t, fabs(com[0] - face - 0.15) < 0.01, "%s: centre %.4f m ahead of the paddle",
              kin_backend[i], com[0] - face);
    CHECK_MSG(t, min_x - face > -2e-3 && min_x - face < 5e-3, "%s: near face %.5f m from it",
              kin_backend[i], min_x - face);
    CHECK_MSG(t, min_y > -1e-4, "%s: below the ground (%.3g m)", kin_backend[i], min_y);
  }
  kin_pair_free(t, &p);
}

/* A conveyor: the ground moves sideways at 0.5 m/s under a box resting on it, and friction
 * (dynamic 0.4: about 4 m/s^2) brings the box up to the ground's speed within about 0.15 s.
 * Under the multigrid scheme the friction is in the Newton step, its anchors carried by the
 * surface's motion (newton.c). */
static void conveyor_carries(piola_test *t, bool opencl, piola_iteration_scheme scheme) {
  for (int shape = 0; shape < 2; ++shape) {
    kin_pair p;
    if (!kin_pair_make_scheme(t, shape == 0 ? KIN_CONVEYOR_PLANE : KIN_CONVEYOR_BOX, opencl, scheme,
                              &p)) {
      kin_pair_free(t, &p);
      return;
    }
    double start[2][3], vel0[3];
    for (int i = 0; i < p.count; ++i) {
      kin_com(p.w[i], p.body[i], start[i], vel0);
    }
    double early[2] = {0.0, 0.0}, sideways[2] = {0.0, 0.0};
    for (int step = 0; step < 100; ++step) {
      kin_pair_step(t, &p);
      for (int i = 0; i < p.count; ++i) {
        double com[3], vel[3];
        kin_com(p.w[i], p.body[i], com, vel);
        early[i] = step == 9 ? vel[0] : early[i];
        sideways[i] = fmax(sideways[i], fabs(com[2] - start[i][2]));
      }
    }
    for (int i = 0; i < p.count; ++i) {
      double com[3], vel[3], min_x, min_y;
      kin_com(p.w[i], p.body[i], com, vel);
      kin_extent(p.w[i], p.body[i], &min_x, &min_y);
      printf("  %s, %s: velocity %.4f m/s after 0.05 s, %.4f (%.2g, %.2g) after 0.5 s; moved "
             "%.4f m, sideways at most %.3g m; lowest vertex %.3g m\n",
             shape == 0 ? "plane" : "plate", kin_backend[i], early[i], vel[0], vel[1], vel[2],
             com[0] - start[i][0], sideways[i], min_y);
      /* Accelerating at first (by friction, at most mu_s g = 4.9 m/s^2: < 0.25 m/s at 0.05 s),
       * then carried at the plate's speed, not pushed up or sideways. */
      CHECK_MSG(t, early[i] > 0.05 && early[i] < 0.3, "%s: %.4f m/s at 0.05 s", kin_backend[i],
                early[i]);
      CHECK_MSG(t, fabs(vel[0] - 0.5) < 0.01, "%s: carried at %.4f m/s, not 0.5", kin_backend[i],
                vel[0]);
      /* Sideways, the body sways with a few mm/s (the run-up excites it; Gauss-Seidel's order
       * is not symmetric) about a centre that does not drift. */
      CHECK_MSG(t, fabs(vel[1]) < 0.01 && fabs(vel[2]) < 5e-3, "%s: velocity (%.3g, %.3g)",
                kin_backend[i], vel[1], vel[2]);
      CHECK_MSG(t, sideways[i] < 3e-4, "%s: centre %.3g m sideways", kin_backend[i], sideways[i]);
      /* 0.5 s at 0.5 m/s less the run-up (about 0.5^2 / (2 * 4) = 3 cm). */
      CHECK_MSG(t, com[0] - start[i][0] > 0.18 && com[0] - start[i][0] < 0.25, "%s: moved %.4f m",
                kin_backend[i], com[0] - start[i][0]);
      CHECK_MSG(t, min_y > -1e-4, "%s: a vertex %.3g m into the plate", kin_backend[i], min_y);
    }
    kin_pair_free(t, &p);
  }
}

/* A box resting on a platform falls through where the platform was once it is removed, and
 * lands on the ground (whose record moved down into the platform's place). */
static void remove_drops(piola_test *t, bool opencl) {
  kin_pair p;
  if (!kin_pair_make(t, KIN_PLATFORM, opencl, &p)) {
    kin_pair_free(t, &p);
    return;
  }
  for (int step = 0; step < 200; ++step) {
    if (step == 60) {
      for (int i = 0; i < p.count; ++i) {
        double com[3], vel[3];
        kin_com(p.w[i], p.body[i], com, vel);
        CHECK_MSG(t, fabs(com[1] - 0.35) < 0.01, "%s: resting at %.4f m before the removal",
                  kin_backend[i], com[1]);
        piola_stats st;
        CHECK_STATUS(t, piola_world_get_stats(p.w[i], &st), PIOLA_OK);
        CHECK(t, st.collider_count == 2);
        CHECK_STATUS(t, piola_world_remove_collider(p.w[i], p.mover[i]), PIOLA_OK);
        CHECK_STATUS(t, piola_world_get_stats(p.w[i], &st), PIOLA_OK);
        CHECK(t, st.collider_count == 1);
        CHECK(t, p.w[i]->colliders[0].kind == PIOLA_COLLIDER_KIND_PLANE);
      }
    }
    kin_pair_step(t, &p);
    for (int i = 0; i < p.count && step == 90; ++i) {
      double com[3], vel[3];
      kin_com(p.w[i], p.body[i], com, vel);
      /* 0.15 s after the removal: fallen g t^2 / 2 = 0.11 m, at g t = 1.5 m/s. */
      CHECK_MSG(t, com[1] < 0.26 && vel[1] < -1.2, "%s: at %.4f m, %.3f m/s: not falling",
                kin_backend[i], com[1], vel[1]);
    }
  }
  for (int i = 0; i < p.count; ++i) {
    double com[3], vel[3], min_x, min_y;
    kin_com(p.w[i], p.body[i], com, vel);
    kin_extent(p.w[i], p.body[i], &min_x, &min_y);
    printf("  %s: after the removal the box came to rest at %.4f m (lowest vertex %.3g m)\n",
           kin_backend[i], com[1], min_y);
    CHECK_MSG(t, fabs(com[1] - 0.15) < 0.01 && min_y > -1e-4,
              "%s: not resting on the ground (centre %.4f m, lowest %.3g m)", kin_backend[i],
              com[1], min_y);
    /* The removed collider's id is stale. */
    CHECK_STATUS(t, piola_world_remove_collider(p.w[i], p.mover[i]), PIOLA_ERROR_INVALID_COLLIDER);
  }
  kin_pair_free(t, &p);
}

void test_collider_paddle_pushes(piola_test *t) {
  paddle_pushes(t, false);
}

void test_opencl_collider_paddle_pushes(piola_test *t) {
  if (opencl_test_ready(t)) {
    paddle_pushes(t, true);
  }
}

void test_collider_conveyor_carries(piola_test *t) {
  conveyor_carries(t, false, PIOLA_SCHEME_GAUSS_SEIDEL);
}

void test_multigrid_collider_conveyor_carries(piola_test *t) {
  conveyor_carries(t, opencl_test_ready(t), PIOLA_SCHEME_MULTIGRID);
}

void test_opencl_collider_conveyor_carries(piola_test *t) {
  if (opencl_test_ready(t)) {
    conveyor_carries(t, true, PIOLA_SCHEME_GAUSS_SEIDEL);
  }
}

void test_collider_remove_drops(piola_test *t) {
  remove_drops(t, false);
}

void test_opencl_collider_remove_drops(piola_test *t) {
  if (opencl_test_ready(t)) {
    remove_drops(t, true);
  }
}

/* A box rotated 30 degrees about z, given as a shape at the identity pose or as an axis-aligned
 * shape turned by its pose: a block dropped on the slope slides off the same way. */
void test_collider_rotated_equals_shape(piola_test *t) {
  const double half = 15.0 * WT_PI / 180.0;
  const float rot[4] = {0.0f, 0.0f, (float)sin(half), (float)cos(half)};
  piola_tet_mesh box = wt_box(3, 3, 3, 0.3f, 0.3f, 0.3f);
  REQUIRE(t, box.vertex_count > 0);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  piola_world *w[2];
  piola_body_id id[2];
  for (int k = 0; k < 2; ++k) {
    w[k] = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
    REQUIRE(t, w[k] != NULL);
    piola_collider_def c = piola_default_collider_def();
    c.type = PIOLA_COLLIDER_BOX;
    c.shape.box.half_extents[0] = 0.8f;
    c.shape.box.half_extents[1] = 0.2f;
    c.shape.box.half_extents[2] = 0.5f;
    piola_collider_id cid;
    if (k == 0) {
      c.shape.box.center[1] = 0.3f;
      memcpy(c.shape.box.rotation, rot, sizeof rot);
      REQUIRE_OK(t, piola_world_add_collider(w[k], &c, &cid));
    } else {
      REQUIRE_OK(t, piola_world_add_collider(w[k], &c, &cid));
      REQUIRE_OK(t, piola_world_set_collider_pose(w[k], cid, (const float[3]){0.0f, 0.3f, 0.0f},
                                                  rot, kin_zero, kin_zero));
      CHECK(t, w[k]->colliders[0].posed == 1);
    }
    REQUIRE_OK(t, piola_world_add_tet_body(w[k], &box, &mat, (const float[3]){-0.15f, 0.7f, -0.15f},
                                           &id[k]));
  }
  double start[3], vel[3], end[3];
  kin_com(w[0], id[0], start, vel);
  double worst = 0.0;
  for (int step = 0; step < 150; ++step) {
    for (int k = 0; k < 2; ++k) {
      REQUIRE_OK(t, piola_world_step(w[k]));
    }
    for (int32_t i = 0; i < 3 * w[0]->vertex_count; ++i) {
      worst = fmax(worst, fabs(w[0]->x[i] - w[1]->x[i]));
    }
  }
  kin_com(w[0], id[0], end, vel);
  printf("  the block slid %.4f m down the slope; the two worlds differ by at most %.3g m\n",
         end[0] - start[0], worst);
  /* It landed on the slope and slid down it towards -x (the top face falls to the left). */
  CHECK_MSG(t, end[0] - start[0] < -0.1, "moved %.4f m along x", end[0] - start[0]);
  /* The same up to the float rounding of the two ways of writing the shape. */
  CHECK_MSG(t, worst < 1e-5, "the two worlds differ by %.3g m", worst);
  for (int k = 0; k < 2; ++k) {
    piola_world_destroy(w[k]);
  }
  piola_mesh_free(&box);
}

/* A hash of the world's state (float and double positions, velocities) after n steps. */
static uint64_t kin_hash(piola_world *w, piola_body_id id, int n) {
  for (int s = 0; s < n; ++s) {
    piola_world_step(w);
  }
  uint64_t h = wt_positions_hash(w, &id, 1);
  h = piola_test_fnv1a(h, w->x, sizeof *w->x * 3 * (size_t)w->vertex_count);
  return piola_test_fnv1a(h, w->v, sizeof *w->v * 3 * (size_t)w->vertex_count);
}

/* The identity pose is exactly the collider as added: every shape, at rest, gives bitwise the
 * results it gave before colliders had poses, whether never posed, posed and put back, or run
 * through the moving-collider path (transforms and relative friction) at the identity pose. */
void test_collider_identity_pose_bitwise(piola_test *t) {
  piola_tet_mesh box = wt_box(3, 3, 3, 0.3f, 0.3f, 0.3f);
  REQUIRE(t, box.vertex_count > 0);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  uint64_t hash[3];
  for (int mode = 0; mode < 3; ++mode) {
    piola_world *w = wt_world(t, NULL, NULL, 0.005f, 2, 5, 0.0f, true);
    REQUIRE(t, w != NULL);
    piola_collider_def c[5];
    for (int k = 0; k < 5; ++k) {
      c[k] = piola_default_collider_def();
      c[k].type = (piola_collider_type)k;
    }
    c[1].shape.sphere.center[0] = 0.35f;
    c[1].shape.sphere.center[1] = 0.2f;
    c[2].shape.box.center[0] = -0.4f;
    c[2].shape.box.rotation[2] = 0.2f; /* normalised on add */
    c[2].shape.box.rotation[3] = 1.0f;
    c[3].shape.capsule.a[0] = 0.1f;
    c[3].shape.capsule.b[0] = 0.2f;
    c[3].shape.capsule.a[1] = c[3].shape.capsule.b[1] = 0.1f;
    c[3].shape.capsule.a[2] = -0.5f;
    c[3].shape.capsule.b[2] = 0.5f;
    c[3].shape.capsule.radius = 0.1f;
    c[4].shape.funnel.base[1] = 0.4f;
    c[4].shape.funnel.base_radius = 0.5f;
    for (int k = 0; k < 5; ++k) {
      piola_collider_id cid;
      REQUIRE_OK(t, piola_world_add_collider(w, &c[k], &cid));
      if (mode == 1) { /* moved and turned, then put back */
        REQUIRE_OK(t, piola_world_set_collider_pose(w, cid, (const float[3]){1.0f, 2.0f, 3.0f},
                                                    (const float[4]){0.3f, 0.0f, 0.0f, 1.0f},
                                                    (const float[3]){1.0f, 0.0f, 0.0f}, kin_zero));
        REQUIRE_OK(t, piola_world_set_collider_pose(w, cid, kin_zero,
                                                    (const float[4]){0.0f, 0.0f, 0.0f, 3.0f},
                                                    kin_zero, kin_zero));
        CHECK(t, w->colliders[k].posed == 0);
      } else if (mode == 2) {
        /* the moving-collider path, at the identity pose; its bounding sphere, about the
         * frame's origin, depends on posed */
        w->colliders[k].posed = 1;
        w->colliders[k].position[3] = (float)piola_collider_reach(&w->colliders[k]);
      }
    }
    piola_body_id id;
    REQUIRE_OK(t,
               piola_world_add_tet_body(w, &box, &mat, (const float[3]){-0.2f, 0.6f, -0.15f}, &id));
    hash[mode] = kin_hash(w, id, 200);
    piola_world_destroy(w);
  }
  printf("  hashes %016llx %016llx %016llx\n", (unsigned long long)hash[0],
         (unsigned long long)hash[1], (unsigned long long)hash[2]);
  CHECK(t, hash[0] == hash[1]);
  CHECK(t, hash[0] == hash[2]);
  piola_mesh_free(&box);
}

/* Every new collider call rejects bad ids (never issued, null, stale after a removal, a NULL
 * world), NULL and non-finite vectors and zero quaternions with a status, and changes nothing. */
static void pose_bad_input(piola_test *t, piola_backend backend) {
  capture_log log;
  int misuse = 0;
  piola_world_def def = opencl_test_world_def(backend, &log, &misuse);
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_tet_mesh box = wt_box(2, 2, 2, 0.2f, 0.2f, 0.2f);
  piola_material mat = piola_default_material();
  piola_body_id body;
  piola_collider_id plane, ball, gone;
  piola_collider_def c = piola_default_collider_def();
  c.type = PIOLA_COLLIDER_SPHERE;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, (const float[3]){0.0f, 0.1f, 0.0f}, &body));
  REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, &plane));
  REQUIRE_OK(t, piola_world_add_collider(w, &c, &gone));
  REQUIRE_OK(t, piola_world_add_collider(w, &c, &ball));
  REQUIRE_OK(t, piola_world_remove_collider(w, gone));
  REQUIRE_OK(t, piola_world_step(w)); /* the device holds the state */
  /* A new collider takes the freed slot with a new generation: the old id stays stale. */
  piola_collider_id again;
  REQUIRE_OK(t, piola_world_add_collider(w, &c, &again));
  CHECK(t, again.index1 == gone.index1 && again.generation != gone.generation);
  REQUIRE_OK(t, piola_world_remove_collider(w, again));
  const float pos[3] = {0.1f, 0.2f, 0.3f}, vel[3] = {0.5f, 0.0f, 0.0f};
  const float one = 1.0f;
  const float nan3[3] = {0.0f, NAN, 0.0f}, inf3[3] = {INFINITY, 0.0f, 0.0f};
  const float nan4[4] = {0.0f, 0.0f, 0.0f, NAN}, inf4[4] = {0.0f, INFINITY, 0.0f, 1.0f};
  const float zero4[4] = {0.0f, 0.0f, 0.0f, 0.0f}, tiny4[4] = {1e-30f, 0.0f, 0.0f, 0.0f};
  const piola_collider_id bad[4] = {gone, {0, 0}, {17, 0}, {ball.index1, ball.generation + 1}};
  float out[4] = {7.0f, 7.0f, 7.0f, 7.0f};
  for (int i = 0; i < 4; ++i) {
    wt_snapshot before = wt_snapshot_take(w, &body, 1);
    int m = misuse;
    CHECK_STATUS(t, piola_world_set_collider_pose(w, bad[i], pos, kin_identity, vel, kin_zero),
                 PIOLA_ERROR_INVALID_COLLIDER);
    CHECK_STATUS(t, piola_world_remove_collider(w, bad[i]), PIOLA_ERROR_INVALID_COLLIDER);
    CHECK_STATUS(t, piola_world_get_collider_pose(w, bad[i], out, out, out, out),
                 PIOLA_ERROR_INVALID_COLLIDER);
    wt_snapshot after = wt_snapshot_take(w, &body, 1);
    CHECK_MSG(t, wt_snapshot_equal(&before, &after), "bad id %d changed the world", i);
    CHECK_MSG(t, misuse == m + 3, "bad id %d: %d misuse reports, expected 3", i, misuse - m);
  }
  CHECK(t, out[0] == 7.0f && out[3] == 7.0f);
  CHECK_STATUS(t, piola_world_set_collider_pose(NULL, ball, pos, kin_identity, vel, kin_zero),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_remove_collider(NULL, ball), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_get_collider_pose(NULL, ball, out, out, out, out),
               PIOLA_ERROR_INVALID_ARGUMENT);
  /* NULL vectors (misuse), non-finite ones, zero quaternions. */
  struct {
    const float *p, *q, *v, *a;
    piola_status expected;
    bool misuse;
  } cases[] = {
      {NULL, kin_identity, vel, kin_zero, PIOLA_ERROR_INVALID_ARGUMENT, true},
      {pos, NULL, vel, kin_zero, PIOLA_ERROR_INVALID_ARGUMENT, true},
      {pos, kin_identity, NULL, kin_zero, PIOLA_ERROR_INVALID_ARGUMENT, true},
      {pos, kin_identity, vel, NULL, PIOLA_ERROR_INVALID_ARGUMENT, true},
      {nan3, kin_identity, vel, kin_zero, PIOLA_ERROR_NON_FINITE, false},
      {inf3, kin_identity, vel, kin_zero, PIOLA_ERROR_NON_FINITE, false},
      {pos, nan4, vel, kin_zero, PIOLA_ERROR_NON_FINITE, false},
      {pos, inf4, vel, kin_zero, PIOLA_ERROR_NON_FINITE, false},
      {pos, kin_identity, nan3, kin_zero, PIOLA_ERROR_NON_FINITE, false},
      {pos, kin_identity, vel, inf3, PIOLA_ERROR_NON_FINITE, false},
      {pos, zero4, vel, kin_zero, PIOLA_ERROR_INVALID_ARGUMENT, false},
      {pos, tiny4, vel, kin_zero, PIOLA_ERROR_INVALID_ARGUMENT, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    wt_snapshot before = wt_snapshot_take(w, &body, 1);
    int m = misuse, errors = log.count[PIOLA_LOG_ERROR];
    CHECK_STATUS(
        t, piola_world_set_collider_pose(w, ball, cases[i].p, cases[i].q, cases[i].v, cases[i].a),
        cases[i].expected);
    wt_snapshot after = wt_snapshot_take(w, &body, 1);
    CHECK_MSG(t, wt_snapshot_equal(&before, &after), "pose case %d changed the world", (int)i);
    CHECK_MSG(t, misuse == m + (cases[i].misuse ? 1 : 0), "pose case %d: misuse %d", (int)i,
              misuse - m);
    CHECK_MSG(t, cases[i].misuse || log.count[PIOLA_LOG_ERROR] == errors + 1,
              "pose case %d was not logged", (int)i);
  }
  /* A good call goes in (the snapshot sees it), normalised; get takes NULL outputs. */
  wt_snapshot before = wt_snapshot_take(w, &body, 1);
  REQUIRE_OK(t, piola_world_set_collider_pose(w, ball, pos,
                                              (const float[4]){0.0f, 3.0f * one, 0.0f, 4.0f}, vel,
                                              (const float[3]){0.0f, 2.0f, 0.0f}));
  wt_snapshot after = wt_snapshot_take(w, &body, 1);
  CHECK(t, !wt_snapshot_equal(&before, &after));
  float q[4], p[3], v[3], a[3];
  REQUIRE_OK(t, piola_world_get_collider_pose(w, ball, p, q, v, a));
  CHECK(t, p[0] == pos[0] && p[1] == pos[1] && p[2] == pos[2] && v[0] == 0.5f && a[1] == 2.0f);
  CHECK_NEAR(t, q[1], 0.6, 1e-7);
  CHECK_NEAR(t, q[3], 0.8, 1e-7);
  REQUIRE_OK(t, piola_world_get_collider_pose(w, ball, NULL, NULL, NULL, NULL));
  /* One step advances the pose by dt along the velocities: x by 0.5 dt, turned by 2 dt about y
   * after the set rotation. */
  REQUIRE_OK(t, piola_world_step(w));
  REQUIRE_OK(t, piola_world_get_collider_pose(w, ball, p, q, v, a));
  const double dt = (double)def.dt, th = 2.0 * atan2(0.6, 0.8) + 2.0 * dt;
  CHECK_NEAR(t, p[0], 0.1 + 0.5 * dt, 1e-7);
  CHECK_NEAR(t, q[1], sin(th / 2.0), 1e-7);
  CHECK_NEAR(t, q[3], cos(th / 2.0), 1e-7);
  CHECK(t, v[0] == 0.5f && a[1] == 2.0f);
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.collider_count == 2);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

void test_collider_pose_bad_input(piola_test *t) {
  pose_bad_input(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_collider_pose_bad_input(piola_test *t) {
  if (opencl_test_ready(t)) {
    pose_bad_input(t, PIOLA_BACKEND_OPENCL);
  }
}

/* The bounding test that lets the collide stage skip far colliders (piola_collider_may_touch)
 * is conservative: wherever a collider's exact test reports contact, the bound says "may
 * touch", for every kind, unposed and posed (moved, turned, moving and spinning, at several
 * times into the step), at random points around the shape; the solid shapes are skipped far
 * away, the funnel (whose contacts are not bounded: a particle that crossed its wall is pushed
 * back however far it went) never. */
void test_collider_bound_conservative(piola_test *t) {
  piola_collider_def defs[4];
  defs[0] = bare_def(PIOLA_COLLIDER_SPHERE);
  defs[0].shape.sphere.center[0] = 0.3f;
  defs[0].shape.sphere.center[1] = -0.2f;
  defs[0].shape.sphere.radius = 0.4f;
  defs[1] = bare_def(PIOLA_COLLIDER_CAPSULE);
  defs[1].shape.capsule.a[0] = -0.5f;
  defs[1].shape.capsule.b[1] = 0.6f;
  defs[1].shape.capsule.b[2] = 0.2f;
  defs[1].shape.capsule.radius = 0.15f;
  defs[2] = bare_def(PIOLA_COLLIDER_BOX);
  defs[2].shape.box.center[2] = 0.4f;
  defs[2].shape.box.half_extents[0] = 0.5f;
  defs[2].shape.box.half_extents[1] = 0.1f;
  defs[2].shape.box.half_extents[2] = 0.3f;
  defs[2].shape.box.rotation[0] = 0.3f; /* normalised on packing */
  defs[2].shape.box.rotation[3] = 0.9f;
  defs[3] = bare_def(PIOLA_COLLIDER_FUNNEL);
  defs[3].shape.funnel.base[1] = 0.2f;
  defs[3].shape.funnel.axis[1] = 1.0f;
  defs[3].shape.funnel.axis[0] = 0.3f;
  defs[3].shape.funnel.base_radius = 0.2f;
  defs[3].shape.funnel.top_radius = 0.7f;
  defs[3].shape.funnel.height = 0.9f;
  const double pos[3] = {0.4, -0.3, 0.2}, rot[4] = {0.2, 0.4, 0.4, 0.8}, vel[3] = {1.0, -2.0, 0.5},
               ang[3] = {0.5, 3.0, -1.0};
  uint32_t seed = 12345u;
  for (int k = 0; k < 4; ++k) {
    for (int is_posed = 0; is_posed < 2; ++is_posed) {
      piola_collider_data c = is_posed ? posed(t, &defs[k], pos, rot, vel, ang) : pack(t, &defs[k]);
      CHECK(t, (c.posed != 0) == (is_posed != 0));
      int touched = 0, skipped = 0;
      for (int i = 0; i < 20000; ++i) {
        /* p in a 3 m cube around the shapes, x (the start of the substep) up to 0.3 m from it,
         * so that some particles cross the funnel's wall */
        double r[6];
        for (int a = 0; a < 6; ++a) {
          seed = seed * 1664525u + 1013904223u;
          r[a] = 2.0 * ((double)(seed >> 8) / 16777216.0) - 1.0;
        }
        const piola_v3 p = piola_v3_make(1.5 * r[0], 1.5 * r[1], 1.5 * r[2]);
        const piola_v3 x = piola_v3_add(p, piola_v3_make(0.3 * r[3], 0.3 * r[4], 0.3 * r[5]));
        const double t_end = 0.005 * (double)(i % 3);
        /* The exact test, in the collider's frame at its pose (as piola_collider_correction_at
         * evaluates it behind the bound) */
        piola_v3 xl = x, pl = p, n;
        if (c.posed) {
          xl = piola_pose_to_local(piola_collider_pose_at(&c, t_end - 0.005), x);
          pl = piola_pose_to_local(piola_collider_pose_at(&c, t_end), p);
        }
        const int hit = piola_collider_contact(&c, xl, pl, &n) > 0.0;
        const int may = piola_collider_may_touch(&c, p, t_end);
        CHECK_MSG(t, may || !hit, "kind %d posed %d: contact at (%g %g %g) outside the bound", k,
                  is_posed, p.x, p.y, p.z);
        touched += hit;
        skipped += !may;
      }
      CHECK_MSG(t, touched > 20 && (k == 3 ? skipped == 0 : skipped > 1000),
                "kind %d posed %d: %d contacts, %d skipped", k, is_posed, touched, skipped);
    }
  }
}

/* ---- A supported vertex at a funnel's edge ---------------------------------------------- */

/* Signed distance of p from the wall of funnel f (base at the origin, axis +y) across its
 * extension, in the radial-axial plane: negative on the inner side. */
static double edge_wall_distance(const piola_funnel_shape *f, const float *p) {
  const double slope = ((double)f->top_radius - f->base_radius) / f->height;
  const double r = sqrt((double)p[0] * p[0] + (double)p[2] * p[2]);
  return (r - f->base_radius - slope * p[1]) / sqrt(1.0 + slope * slope);
}

/* One tet with three corners pinned outside a funnel's wall, just above its bottom edge, and
 * the fourth free 7 mm inside the wall, at 1 cm above the edge, where the tet's rest shape puts
 * it 5 cm outside: the tet pulls the vertex out through the wall, and the wall holds it. Once the
 * wall has pushed it, the vertex is supported (piola_tet_support): the projections withhold its
 * motion into the wall, which the collider takes back in its next stage from where the vertex
 * would be without its support. That motion, along the wall's outward normal (outwards and down
 * at 45 degrees), ends below the bottom edge: when the wall's test looked at the end's height
 * alone, the vertex was left there, outside the wall, at several metres per second (in the
 * funnel scene at up to 85 m/s). The motion crossed the wall above the edge, so the wall must
 * push it back: the vertex stays on the inner side in every step and comes to rest on the wall
 * (the tet's pull there balanced by the wall and its friction). */
static void support_at_edge(piola_test *t, piola_backend backend) {
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_collider_def c = wt_funnel_def(0.5f, 1.5f, 1.0f); /* wall radius 0.5 + y */
  c.static_friction = c.dynamic_friction = 0.5f;
  piola_collider_id funnel;
  REQUIRE_OK(t, piola_world_add_collider(w, &c, &funnel));
  /* Rest shape: the free corner (index 3) at radius 0.56, 5 cm radially outside the wall. */
  float rest[12] = {0.62f, 0.06f,  -0.05f, 0.62f, 0.06f, 0.05f,
                    0.62f, -0.04f, 0.0f,   0.56f, 0.01f, 0.0f};
  int32_t tets[4] = {0, 1, 2, 3};
  piola_tet_mesh mesh = {rest, 4, tets, 1};
  if (wt_signed_volume(&mesh, rest) < 0.0) {
    tets[1] = 2;
    tets[2] = 1;
  }
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  piola_body_id body;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &mesh, &mat, NULL, &body));
  float start[12];
  memcpy(start, rest, sizeof start);
  start[9] = 0.50f; /* the wall's radius at y = 0.01 is 0.51 */
  REQUIRE_OK(t, piola_body_set_positions(w, body, start, 4));
  const float inverse_masses[4] = {0.0f, 0.0f, 0.0f, 40.0f};
  REQUIRE_OK(t, piola_body_set_inverse_masses(w, body, inverse_masses, 4));
  CHECK(t, edge_wall_distance(&c.shape.funnel, start + 9) < 0.0);
  double outermost = -INFINITY, settled = 0.0, last_speed = 0.0;
  int32_t outside_steps = 0;
  float previous[3] = {start[9], start[10], start[11]};
  for (int32_t step = 0; step < 60; ++step) {
    REQUIRE_OK(t, piola_world_step(w));
    float *p = wt_get_positions(w, body);
    REQUIRE(t, p != NULL);
    const double d = edge_wall_distance(&c.shape.funnel, p + 9);
    outermost = fmax(outermost, d);
    outside_steps += d > 0.0;
    double moved = 0.0;
    for (int k = 0; k < 3; ++k) {
      moved += ((double)p[9 + k] - previous[k]) * ((double)p[9 + k] - previous[k]);
      previous[k] = p[9 + k];
    }
    last_speed = sqrt(moved) / (double)def.dt;
    /* The first steps release the tet's strain (the corner starts 6 cm from its rest place). */
    settled = step >= 10 ? fmax(settled, last_speed) : settled;
    free(p);
  }
  printf("  %s: the free corner at most %.2g m from the wall's middle surface (negative: "
         "inside), outside in %d of 60 steps; after step 10 at most %.2g m/s\n",
         piola_backend_name(backend), outermost, (int)outside_steps, settled);
  CHECK_MSG(t, outside_steps == 0 && outermost < 0.0,
            "the vertex left the funnel's inner side (%.3g m out, in %d steps)", outermost,
            (int)outside_steps);
  CHECK_MSG(t, settled < 1e-2, "the vertex still moved at %.3g m/s after step 10", settled);
  piola_world_destroy(w);
}

void test_collider_support_at_funnel_edge(piola_test *t) {
  support_at_edge(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_collider_support_at_funnel_edge(piola_test *t) {
  if (opencl_test_ready(t)) {
    support_at_edge(t, PIOLA_BACKEND_OPENCL);
  }
}

/* Collider friction (piola_friction_removed): all the tangential motion removed while it is at
 * most mu_s d, mu_k d of it past (2 mu_s - mu_k) d, linear in between; continuous at both ends,
 * so that float and double on either side of the onset of sliding remove nearly the same. */
void test_friction_removed_is_continuous(piola_test *t) {
  const double d = 1e-3, mu_s = 0.5, mu_k = 0.4;
  CHECK_NEAR(t, piola_friction_removed(mu_s, mu_k, d, 0.0), 1.0, 0.0);
  CHECK_NEAR(t, piola_friction_removed(mu_s, mu_k, d, 4e-4), 1.0, 0.0);
  CHECK_NEAR(t, piola_friction_removed(mu_s, mu_k, d, 5e-4), 1.0, 0.0); /* the onset: sticks */
  /* Just past the onset: removes just under mu_s d, not mu_k d. */
  const double past = 5e-4 * (1.0 + 1e-9);
  CHECK_NEAR(t, piola_friction_removed(mu_s, mu_k, d, past) * past, 5e-4, 1e-12);
  CHECK_NEAR(t, piola_friction_removed(mu_s, mu_k, d, 5.5e-4) * 5.5e-4, 4.5e-4, 1e-15);
  CHECK_NEAR(t, piola_friction_removed(mu_s, mu_k, d, 6e-4) * 6e-4, 4e-4, 1e-15);
  CHECK_NEAR(t, piola_friction_removed(mu_s, mu_k, d, 1e-2) * 1e-2, 4e-4, 1e-15);
  /* Continuous over the whole range: no step between neighbouring motions. */
  double previous = 0.0;
  for (int i = 0; i <= 2000; ++i) {
    const double lt = 1e-6 * i;
    const double removed = piola_friction_removed(mu_s, mu_k, d, lt) * lt;
    CHECK_MSG(t, fabs(removed - previous) <= 1.0001e-6, "removed length jumps at lt %g", lt);
    previous = removed;
  }
  /* mu_k >= mu_s: min(lt, mu_k d) past the onset; mu_s = 0: mu_k d at once. */
  CHECK_NEAR(t, piola_friction_removed(0.3, 0.5, d, 4e-4), 1.0, 0.0);
  CHECK_NEAR(t, piola_friction_removed(0.3, 0.5, d, 1e-3) * 1e-3, 5e-4, 1e-15);
  CHECK_NEAR(t, piola_friction_removed(0.0, 0.4, d, 1e-3) * 1e-3, 4e-4, 1e-15);
  CHECK_NEAR(t, piola_friction_removed(0.0, 0.0, d, 1e-3), 0.0, 0.0);
}

/* The inverted-tet pass's share (piola_inverted_share): 1 for an inverted or flat tet, 0 from
 * PIOLA_INVERTED_RAMP of the rest volume up, linear in between. */
void test_inverted_share_ramp(piola_test *t) {
  const piola_v3 o = piola_v3_make(0.0, 0.0, 0.0), ex = piola_v3_make(1.0, 0.0, 0.0),
                 ey = piola_v3_make(0.0, 1.0, 0.0);
  const double rest = 1.0 / 6.0; /* the unit corner tet */
  const double heights[] = {1.0, 0.05, 0.025, 0.0, -0.5};
  const double shares[] = {0.0, 0.0, 0.5, 1.0, 1.0};
  for (int i = 0; i < 5; ++i) {
    const double s = piola_inverted_share(o, ex, ey, piola_v3_make(0.2, 0.3, heights[i]), rest);
    CHECK_MSG(t, fabs(s - shares[i]) < 1e-12, "volume ratio %g: share %g, want %g", heights[i], s,
              shares[i]);
  }
}
