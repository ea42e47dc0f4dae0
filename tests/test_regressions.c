/* Regression tests of the funnel wall (particles keep their side after a projection onto the
 * wall: without the wall's skin about a quarter of them tunnelled, in double and in float) and
 * of the device memory a plastic body adds: its rest Dm^-1 (36 bytes), plastic strain (24) and
 * index (4) per plastic tet, on top of the 68 bytes of an elastic tet. */
#include "piola_internal.h"
#include "piola_test.h"

#include <math.h>
#include <string.h>

void test_funnel_wall_side_survives_projection(piola_test *t);
void test_funnel_world_keeps_block_inside(piola_test *t);

/* Funnel: axis +y from (0, 0, 0), radius 0.15 m at the bottom, 0.6 m at the top, 0.8 m tall;
 * no friction. */
static piola_collider_data repro_funnel(piola_test *t) {
  piola_collider_def c = piola_default_collider_def();
  c.type = PIOLA_COLLIDER_FUNNEL;
  memset(&c.shape, 0, sizeof c.shape);
  c.shape.funnel.axis[1] = 1.0f;
  c.shape.funnel.base_radius = 0.15f;
  c.shape.funnel.top_radius = 0.6f;
  c.shape.funnel.height = 0.8f;
  c.static_friction = 0.0f;
  c.dynamic_friction = 0.0f;
  piola_collider_data d;
  char reason[256];
  CHECK_STATUS(t, piola_collider_pack(&c, &d, reason, sizeof reason), PIOLA_OK);
  return d;
}

/* The wall radius at height y, from the stored (float) parameters. */
static double repro_wall_radius(double y) {
  return (double)0.15f + ((double)0.6f - (double)0.15f) / (double)0.8f * y;
}

/* Function level, in double (the CPU reference's build of the shared collision code). Step 1:
 * a particle inside the funnel moves 1 cm outward through the wall and is projected back onto
 * it. Step 2 starts there and the particle moves outward again: it must be projected back
 * onto the wall again, never end outside it. */
void test_funnel_wall_side_survives_projection(piola_test *t) {
  piola_collider_data d = repro_funnel(t);
  int tunnelled = 0;
  const int trials = 1000;
  for (int i = 0; i < trials; ++i) {
    double angle = 0.001 + 0.00628 * i, y = 0.2 + 0.0005 * i, rw = repro_wall_radius(y);
    piola_v3 x0 = piola_v3_make((rw - 0.005) * cos(angle), y, (rw - 0.005) * sin(angle));
    piola_v3 p = piola_v3_make((rw + 0.005) * cos(angle), y, (rw + 0.005) * sin(angle));
    piola_collide_particle(&d, x0, &p); /* now on the wall */
    piola_v3 x1 = p;
    piola_v3 p2 = piola_v3_make(p.x + 0.01 * cos(angle), p.y, p.z + 0.01 * sin(angle));
    piola_collide_particle(&d, x1, &p2);
    double r2 = sqrt(p2.x * p2.x + p2.z * p2.z);
    tunnelled += r2 > repro_wall_radius(p2.y) + 1e-4;
  }
  CHECK_MSG(t, tunnelled == 0,
            "%d of %d particles resting on the funnel wall (pushed there from inside) went "
            "through it on the next outward push",
            tunnelled, trials);
}

/* World level, CPU reference: a block (0.45 m wide) dropped into the funnel wedges against its
 * wall; no vertex may end outside the wall while within the funnel's height. */
void test_funnel_world_keeps_block_inside(piola_test *t) {
  piola_world_def def = piola_test_world_def(NULL, NULL);
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_collider_def c = piola_default_collider_def();
  c.type = PIOLA_COLLIDER_FUNNEL;
  memset(&c.shape, 0, sizeof c.shape);
  c.shape.funnel.axis[1] = 1.0f;
  c.shape.funnel.base_radius = 0.15f;
  c.shape.funnel.top_radius = 0.6f;
  c.shape.funnel.height = 0.8f;
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
      outside += y >= 0.0 && y <= 0.8 && r > repro_wall_radius(y) + 1e-3;
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

/* Device memory of plastic bodies: an elastic tet takes 68 bytes, a plastic one 64 more. */
void test_opencl_plastic_device_bytes(piola_test *t);

void test_opencl_plastic_device_bytes(piola_test *t) {
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.backend = PIOLA_BACKEND_OPENCL;
  piola_world *w = NULL;
  piola_status s = piola_world_create(&def, &w);
  if (s != PIOLA_OK) {
    CHECK(t, s == PIOLA_ERROR_UNSUPPORTED || s == PIOLA_ERROR_NO_DEVICE);
    return;
  }
  piola_tet_mesh creature;
  REQUIRE_OK(t, piola_mesh_make_creature(3.0f, &creature));
  piola_material plastic = piola_default_material();
  plastic.plastic_creep = 5.0f;
  CHECK_STATUS(t, piola_world_add_tet_body(w, &creature, &plastic, NULL, NULL), PIOLA_OK);
  CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
  const int64_t limit = 132 * (int64_t)st.tet_count + 64 * (int64_t)st.vertex_count + 4096;
  CHECK_MSG(t, st.device_bytes <= limit,
            "a plastic world of %d tets and %d vertices holds %lld device bytes, more than %lld",
            (int)st.tet_count, (int)st.vertex_count, (long long)st.device_bytes, (long long)limit);
  piola_mesh_free(&creature);
  piola_world_destroy(w);
}
