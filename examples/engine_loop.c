/* Piola in an engine's frame loop: step, do the frame's other work while the device computes,
 * then read what is needed to draw. The scene: three soft creatures on the ground, a kinematic
 * paddle (a box collider with a velocity) sweeping through them, the head of one grabbed and
 * dragged in a circle (an attachment whose target moves every frame), and a render mesh (a
 * detail mesh over a body's surface: here its surface vertices pushed 1 cm outward) read back
 * every frame. Prints, every 30 frames, where things are and how long the frame waited for the
 * device; exits with status 1 on any failure.
 *
 *   engine_loop [frames]        (default 120 frames of 1/60 s)
 */
#include <piola/piola.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void print_message(piola_log_level level, const char *message, void *user_data) {
  (void)user_data;
  if (level <= PIOLA_LOG_WARNING) {
    fprintf(stderr, "piola: %s\n", message);
  }
}

static double now_ms(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The frame's own work (game logic, culling, ...), here a stand-in that keeps the CPU busy
 * for about `ms` milliseconds while the device steps. */
static double other_work(double ms) {
  const double start = now_ms();
  double acc = 0.0;
  while (now_ms() - start < ms) {
    for (int i = 0; i < 1000; ++i) {
      acc += sin((double)i);
    }
  }
  return acc;
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    piola_status check_s_ = (call);                                                                \
    if (check_s_ != PIOLA_OK) {                                                                    \
      fprintf(stderr, "%s failed: %s\n", #call, piola_status_string(check_s_));                    \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  const int frames = argc > 1 ? atoi(argv[1]) : 120;
  if (frames < 1) {
    fprintf(stderr, "usage: engine_loop [frames]\n");
    return 1;
  }
  piola_world_def def = piola_default_world_def(); /* best OpenCL device, else the CPU */
  def.logger.fn = print_message;
  def.dt = 1.0f / 60.0f;
  def.substeps = 4;
  piola_world *world;
  CHECK(piola_world_create(&def, &world));
  piola_stats stats;
  CHECK(piola_world_get_stats(world, &stats));
  printf("backend: %s\n", stats.device_name);

  piola_tet_mesh mesh;
  CHECK(piola_mesh_make_creature(0.6f, &mesh)); /* 0.6 m tall */
  piola_material rubber = piola_default_material();
  rubber.model = PIOLA_MODEL_NEOHOOKEAN;
  rubber.youngs_modulus = 3.0e5f;
  rubber.density = 1000.0f;
  piola_body_id bodies[3];
  for (int i = 0; i < 3; ++i) {
    const float at[3] = {-0.8f + 0.8f * (float)i, 0.05f, 0.0f};
    CHECK(piola_world_add_tet_body(world, &mesh, &rubber, at, &bodies[i]));
  }
  CHECK(piola_world_add_plane(world, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.6f, NULL));

  /* The paddle: a box 0.1 x 0.6 x 1.2 m, entering from the left at 1 m/s. */
  piola_collider_def paddle_def = piola_default_collider_def();
  paddle_def.type = PIOLA_COLLIDER_BOX;
  paddle_def.shape.box.center[0] = paddle_def.shape.box.center[1] = 0.0f;
  paddle_def.shape.box.center[2] = 0.0f;
  paddle_def.shape.box.half_extents[0] = 0.05f;
  paddle_def.shape.box.half_extents[1] = 0.3f;
  paddle_def.shape.box.half_extents[2] = 0.6f;
  piola_collider_id paddle;
  CHECK(piola_world_add_collider(world, &paddle_def, &paddle));
  const float identity[4] = {0.0f, 0.0f, 0.0f, 1.0f}, no_spin[3] = {0.0f, 0.0f, 0.0f};
  CHECK(piola_world_set_collider_pose(world, paddle, (const float[3]){-1.6f, 0.3f, 0.0f}, identity,
                                      (const float[3]){1.0f, 0.0f, 0.0f}, no_spin));

  /* Grab the highest vertex of the last creature. */
  const int32_t n = piola_body_get_vertex_count(world, bodies[2]);
  float *xyz = malloc(sizeof *xyz * 3 * (size_t)n);
  if (xyz == NULL) {
    return 1;
  }
  CHECK(piola_body_get_positions(world, bodies[2], xyz, n));
  int32_t top = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (xyz[3 * i + 1] > xyz[3 * top + 1]) {
      top = i;
    }
  }
  const float centre[3] = {xyz[3 * top], xyz[3 * top + 1] + 0.3f, xyz[3 * top + 2]};
  piola_attachment_id grab;
  CHECK(piola_world_add_attachment(world, bodies[2], top, centre, 1e-4f, &grab));

  /* A render mesh over the first creature: its surface vertices, 1 cm outward. */
  int32_t surface_count = 0;
  CHECK(piola_body_get_surface_vertices(world, bodies[0], NULL, 0, &surface_count));
  int32_t *surface = malloc(sizeof *surface * (size_t)surface_count);
  float *body0 = malloc(sizeof *body0 * 3 * (size_t)n);
  float *detail = malloc(sizeof *detail * 3 * (size_t)surface_count);
  float *detail_out = malloc(sizeof *detail_out * 3 * (size_t)surface_count);
  if (surface == NULL || body0 == NULL || detail == NULL || detail_out == NULL) {
    return 1;
  }
  CHECK(piola_body_get_surface_vertices(world, bodies[0], surface, surface_count, NULL));
  CHECK(piola_body_get_positions(world, bodies[0], body0, n));
  for (int32_t k = 0; k < surface_count; ++k) {
    for (int c = 0; c < 3; ++c) {
      detail[3 * k + c] = body0[3 * surface[k] + c];
    }
  }
  piola_render_mesh_id skin;
  CHECK(piola_body_attach_render_mesh(world, bodies[0], detail, surface_count, &skin));

  double waited = 0.0, stepped = 0.0, sink = 0.0;
  for (int frame = 1; frame <= frames; ++frame) {
    /* Input: move the grab target on a circle of 0.3 m. */
    const double a = 2.0 * 3.14159265358979 * frame / 120.0;
    const float target[3] = {centre[0] + 0.3f * (float)cos(a), centre[1],
                             centre[2] + 0.3f * (float)sin(a)};
    CHECK(piola_attachment_set_target(world, grab, target));

    double t0 = now_ms();
    CHECK(piola_world_step(world)); /* returns once the step is queued */
    stepped += now_ms() - t0;
    sink += other_work(2.0);
    t0 = now_ms();
    /* Reads wait for the device: what the renderer needs, once per frame. */
    CHECK(piola_render_mesh_get_positions(world, skin, detail_out, surface_count));
    CHECK(piola_body_get_positions(world, bodies[2], xyz, n));
    waited += now_ms() - t0;

    if (frame % 30 == 0 || frame == frames) {
      float paddle_at[3];
      CHECK(piola_world_get_collider_pose(world, paddle, paddle_at, NULL, NULL, NULL));
      const double dx = xyz[3 * top] - target[0], dz = xyz[3 * top + 2] - target[2];
      printf("frame %3d: paddle at x = %.2f m; grabbed vertex %.3f m from its target; skin "
             "vertex 0 at (%.3f, %.3f, %.3f); per frame: step call %.2f ms, waiting %.2f ms\n",
             frame, paddle_at[0], sqrt(dx * dx + dz * dz), detail_out[0], detail_out[1],
             detail_out[2], stepped / frame, waited / frame);
    }
  }
  if (!(sink == sink)) { /* keep the stand-in work */
    return 1;
  }
  free(xyz);
  free(surface);
  free(body0);
  free(detail);
  free(detail_out);
  piola_mesh_free(&mesh);
  piola_world_destroy(world);
  return 0;
}
