/* Funnel wall: a particle stays on the side of the thin wall it started the step on, also after
 * a projection has put it against the wall. The wall has a skin (PIOLA_FUNNEL_SKIN times the
 * height) so that a projected particle is never left on the wall's middle surface, where the
 * side would be the sign of a rounding error (without the skin about 29% of such particles
 * tunnelled, and a body resting in a funnel fell out through it). Two funnels, each tried on
 * single particles and on a body: a narrow one (radius 0.1 m at the bottom, 1 m tall) with
 * random outward and downward pushes, and a wide one (0.15 m, 0.8 m tall) with radial pushes
 * swept around the axis. */
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>

/* The narrow funnel: wall radius 0.1 + 0.5 y, height 1 m, no friction. */
static piola_collider_def narrow_funnel(void) {
  piola_collider_def def = wt_funnel_def(0.1f, 0.6f, 1.0f);
  def.static_friction = 0.0f;
  def.dynamic_friction = 0.0f;
  return def;
}

/* Narrow funnel, on piola_collide_particle alone. Step 1: a particle inside moves out
 * through the wall and is projected back onto it. Step 2: starting there, it moves outward
 * again; it must be pushed back to the inside (r <= wall radius). */
void test_funnel_particle_on_wall_keeps_its_side(piola_test *t) {
  piola_collider_def def = narrow_funnel();
  piola_collider_data c;
  char reason[256];
  REQUIRE_OK(t, piola_collider_pack(&def, &c, reason, sizeof reason));
  uint64_t rng = 7;
  int tunnelled = 0;
  const int trials = 10000;
  for (int k = 0; k < trials; ++k) {
    double h = 0.3 + 0.2 * (piola_test_rand(&rng) + 1.0);
    double angle = WT_PI * piola_test_rand(&rng);
    double rw = 0.1 + 0.5 * h;
    piola_v3 x0 = piola_v3_make((rw - 0.01) * cos(angle), h, (rw - 0.01) * sin(angle));
    piola_v3 p = piola_v3_make((rw + 0.01) * cos(angle), h - 0.01, (rw + 0.01) * sin(angle));
    piola_collide_particle(&c, x0, &p); /* now on the wall */
    piola_v3 x1 = p;
    piola_v3 p2 = piola_v3_make(1.05 * x1.x, x1.y - 0.01, 1.05 * x1.z);
    piola_collide_particle(&c, x1, &p2);
    double r2 = sqrt(p2.x * p2.x + p2.z * p2.z);
    tunnelled += r2 - (0.1 + 0.5 * p2.y) > 1e-6;
  }
  /* Measured: 2896 of 10000. */
  CHECK_MSG(t, tunnelled == 0,
            "%d of %d particles resting on the inside of the wall ended "
            "the next step outside it",
            tunnelled, trials);
}

/* Narrow funnel, world level: a 0.2 m box (2 x 2 x 2 cells, E = 1e6 Pa) dropped into the funnel
 * from 1.2 m, off the axis so that it hits the wall. While a vertex is within the funnel's height
 * range it must stay inside the cone (measured: vertices up to 0.22 m outside the wall; the body
 * slides out through the wall from step 69 on). */
void test_funnel_keeps_body_inside(piola_test *t) {
  const int32_t cells[3] = {2, 2, 2};
  const float size[3] = {0.2f, 0.2f, 0.2f};
  piola_tet_mesh box;
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &box));
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e6f;
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, (const float[3]){0.2f, 1.2f, -0.1f}, &id));
  piola_collider_def def = narrow_funnel();
  def.static_friction = 0.3f;
  def.dynamic_friction = 0.3f;
  REQUIRE_OK(t, piola_world_add_collider(w, &def, NULL));
  double worst = -INFINITY;
  int first_bad = -1;
  for (int s = 0; s < 200; ++s) {
    REQUIRE_OK(t, piola_world_step(w));
    for (int32_t i = 0; i < w->vertex_count; ++i) {
      const double *x = w->x + 3 * (size_t)i;
      if (x[1] >= 0.0 && x[1] <= 1.0) {
        double out = sqrt(x[0] * x[0] + x[2] * x[2]) - (0.1 + 0.5 * x[1]);
        worst = fmax(worst, out);
        if (out > 1e-6 && first_bad < 0) {
          first_bad = s;
        }
      }
    }
  }
  CHECK_MSG(t, worst <= 1e-6, "a vertex ended %.3g m outside the funnel wall (first at step %d)",
            worst, first_bad);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

/* The wide funnel without friction, packed for piola_collide_particle. */
static piola_collider_data wide_funnel(piola_test *t) {
  piola_collider_def c = wt_funnel_def(0.15f, 0.6f, 0.8f);
  c.static_friction = 0.0f;
  c.dynamic_friction = 0.0f;
  piola_collider_data d;
  char reason[256];
  CHECK_STATUS(t, piola_collider_pack(&c, &d, reason, sizeof reason), PIOLA_OK);
  return d;
}

/* The wide funnel's wall radius at height y, from the stored (float) parameters. */
static double wide_wall_radius(double y) {
  return (double)0.15f + ((double)0.6f - (double)0.15f) / (double)0.8f * y;
}

/* Wide funnel, function level, in double (the CPU reference's build of the shared collision code).
 * Step 1: a particle inside the funnel moves 1 cm outward through the wall and is projected back
 * onto it. Step 2 starts there and the particle moves outward again: it must be projected back onto
 * the wall again, never end outside it. */
void test_funnel_wall_side_survives_projection(piola_test *t) {
  piola_collider_data d = wide_funnel(t);
  int tunnelled = 0;
  const int trials = 1000;
  for (int i = 0; i < trials; ++i) {
    double angle = 0.001 + 0.00628 * i, y = 0.2 + 0.0005 * i, rw = wide_wall_radius(y);
    piola_v3 x0 = piola_v3_make((rw - 0.005) * cos(angle), y, (rw - 0.005) * sin(angle));
    piola_v3 p = piola_v3_make((rw + 0.005) * cos(angle), y, (rw + 0.005) * sin(angle));
    piola_collide_particle(&d, x0, &p); /* now on the wall */
    piola_v3 x1 = p;
    piola_v3 p2 = piola_v3_make(p.x + 0.01 * cos(angle), p.y, p.z + 0.01 * sin(angle));
    piola_collide_particle(&d, x1, &p2);
    double r2 = sqrt(p2.x * p2.x + p2.z * p2.z);
    tunnelled += r2 > wide_wall_radius(p2.y) + 1e-4;
  }
  CHECK_MSG(t, tunnelled == 0,
            "%d of %d particles resting on the funnel wall (pushed there from inside) went "
            "through it on the next outward push",
            tunnelled, trials);
}

/* Wide funnel, world level, CPU reference: a block (0.45 m wide) dropped into the funnel wedges
 * against its wall; no vertex may end outside the wall while within the funnel's height. */
void test_funnel_world_keeps_block_inside(piola_test *t) {
  piola_world_def def = piola_test_world_def(NULL, NULL);
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_collider_def c = wt_funnel_def(0.15f, 0.6f, 0.8f); /* wide, with the default friction */
  CHECK_STATUS(t, piola_world_add_collider(w, &c, NULL), PIOLA_OK);
  piola_tet_mesh block;
  const int32_t cells[3] = {3, 3, 3};
  const float size[3] = {0.45f, 0.45f, 0.45f};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &block));
  const float at[3] = {-0.225f, 0.45f, -0.225f};
  const piola_material material = piola_default_material();
  piola_body_id id;
  CHECK_STATUS(t, piola_world_add_tet_body(w, &block, &material, at, &id), PIOLA_OK);
  int32_t worst_outside = 0, first_step = -1;
  float p[3 * 64];
  for (int32_t step = 1; step <= 200 && block.vertex_count <= 64; ++step) {
    CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_positions(w, id, p, block.vertex_count), PIOLA_OK);
    int32_t outside = 0;
    for (int32_t v = 0; v < block.vertex_count; ++v) {
      double y = p[3 * v + 1], r = hypot(p[3 * v], p[3 * v + 2]);
      outside += y >= 0.0 && y <= 0.8 && r > wide_wall_radius(y) + 1e-3;
    }
    if (outside > worst_outside) {
      worst_outside = outside;
      first_step = first_step < 0 ? step : first_step;
    }
  }
  CHECK_MSG(t, worst_outside == 0,
            "%d vertices of a block inside the funnel went through its wall (first at step %d)",
            (int)worst_outside, (int)first_step);
  piola_mesh_free(&block);
  piola_world_destroy(w);
}
