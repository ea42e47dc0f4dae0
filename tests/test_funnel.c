/* Funnel wall: a particle stays on the side of the thin wall it started the step on, also after
 * a projection has put it against the wall. The wall has a skin (PIOLA_FUNNEL_SKIN times the
 * height) so that a projected particle is never left on the wall's middle surface, where the
 * side would be the sign of a rounding error (without the skin about 29% of such particles
 * tunnelled, and a body resting in a funnel fell out through it). */
#include "world_helpers.h"

#include <stdlib.h>
#include <string.h>

void test_funnel_particle_on_wall_keeps_its_side(piola_test *t);
void test_funnel_keeps_body_inside(piola_test *t);

/* The funnel of both tests: base (0, 0, 0), axis +y, radius 0.1 at the bottom, 0.6 at the top
 * (wall radius 0.1 + 0.5 y), height 1 m, no friction unless set. */
static piola_collider_def funnel_def(void) {
  piola_collider_def def = piola_default_collider_def();
  def.type = PIOLA_COLLIDER_FUNNEL;
  memset(&def.shape, 0, sizeof def.shape); /* the default's plane normal would be the base */
  def.shape.funnel.axis[1] = 1.0f;
  def.shape.funnel.base_radius = 0.1f;
  def.shape.funnel.top_radius = 0.6f;
  def.shape.funnel.height = 1.0f;
  def.static_friction = 0.0f;
  def.dynamic_friction = 0.0f;
  return def;
}

/* Minimal reproducer on piola_collide_particle alone. Step 1: a particle inside moves out
 * through the wall and is projected back onto it. Step 2: starting there, it moves outward
 * again; it must be pushed back to the inside (r <= wall radius). */
void test_funnel_particle_on_wall_keeps_its_side(piola_test *t) {
  piola_collider_def def = funnel_def();
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

/* World level: a 0.2 m box (2 x 2 x 2 cells, E = 1e6 Pa) dropped into the funnel from 1.2 m,
 * off the axis so that it hits the wall. While a vertex is within the funnel's height range
 * it must stay inside the cone (measured: vertices up to 0.22 m outside the wall; the body
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
  piola_collider_def def = funnel_def();
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
