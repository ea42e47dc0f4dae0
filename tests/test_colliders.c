/* Tests of the static colliders (kernels/piola_collide.h): piola_collide_particle on each
 * shape with known inputs and outputs (depth, normal, projection, static and dynamic friction
 * after Macklin et al. 2014), and bodies in worlds on the CPU reference: resting on a plane,
 * never left inside a sphere, box or capsule, and Coulomb friction on an inclined plane. */
#include "world_helpers.h"

#include <stdlib.h>
#include <string.h>

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
  expect_projection(t, "funnel, below", &c, piola_v3_make(0.1, 0.1, 0.0),
                    piola_v3_make(0.5, -0.1, 0.0), piola_v3_make(0, 0, 0), 0.0, NULL);
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
    REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, frictions[f]));
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

/* Displacement (m) of a box's centre over 1 s on a plane inclined by 20 degrees. */
static double slide(piola_test *t, float friction, double *lowest_distance) {
  const int32_t cells[3] = {2, 2, 2};
  const float size[3] = {0.2f, 0.2f, 0.2f};
  piola_tet_mesh box;
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  if (w == NULL || piola_mesh_make_box(cells, size, &box) != PIOLA_OK) {
    piola_world_destroy(w);
    return NAN;
  }
  /* The box rotated by 20 degrees about z, its bottom face on the plane through the origin
   * with normal (-sin 20, cos 20, 0). */
  const double th = 20.0 * WT_PI / 180.0;
  const int32_t n = box.vertex_count;
  float *rest = malloc(sizeof *rest * 3 * (size_t)n);
  double moved = NAN;
  if (rest != NULL) {
    for (int32_t i = 0; i < n; ++i) {
      double x = box.positions[3 * i] - 0.1, y = box.positions[3 * i + 1];
      rest[3 * i] = (float)(x * cos(th) - y * sin(th));
      rest[3 * i + 1] = (float)(x * sin(th) + y * cos(th));
      rest[3 * i + 2] = box.positions[3 * i + 2] - 0.1f;
    }
    piola_tet_mesh tilted = box;
    tilted.positions = rest;
    piola_material mat = piola_default_material();
    mat.youngs_modulus = 1e6f;
    piola_body_id id;
    const float normal[3] = {(float)-sin(th), (float)cos(th), 0.0f};
    piola_world_add_tet_body(w, &tilted, &mat, NULL, &id);
    piola_world_add_plane(w, normal, 0.0f, friction);
    double c0[3] = {0, 0, 0}, c1[3] = {0, 0, 0};
    for (int32_t i = 0; i < n; ++i) {
      for (int k = 0; k < 3; ++k) {
        c0[k] += w->x[3 * i + k] / n;
      }
    }
    *lowest_distance = INFINITY;
    for (int s = 0; s < 200; ++s) {
      piola_world_step(w);
      for (int32_t i = 0; i < n; ++i) {
        *lowest_distance =
            fmin(*lowest_distance, normal[0] * w->x[3 * i] + normal[1] * w->x[3 * i + 1]);
      }
    }
    for (int32_t i = 0; i < n; ++i) {
      for (int k = 0; k < 3; ++k) {
        c1[k] += w->x[3 * i + k] / n;
      }
    }
    const double d[3] = {c1[0] - c0[0], c1[1] - c0[1], c1[2] - c0[2]};
    moved = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  }
  free(rest);
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return moved;
}

void test_friction_on_inclined_plane(piola_test *t) {
  /* tan 20 deg = 0.364: a block sticks when mu > 0.364 and otherwise slides with acceleration
   * g (sin 20 - mu cos 20), covering g (sin 20 - mu cos 20) / 2 in 1 s from rest. Measured:
   * mu 0.1 slides 1.223 m (expected 1.217), mu 0.8 moves 0.3 mm. */
  const double th = 20.0 * WT_PI / 180.0, g = 9.81;
  const float mus[4] = {0.1f, 0.3f, 0.45f, 0.8f};
  for (int i = 0; i < 4; ++i) {
    double lowest = 0.0;
    double d = slide(t, mus[i], &lowest);
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
