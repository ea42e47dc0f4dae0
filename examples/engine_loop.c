/* Piola in an engine's frame loop: step, do the frame's other work while the device computes,
 * then read what is needed to draw. The scene: three soft creatures on the ground, a kinematic
 * paddle (a box collider with a velocity) sweeping through them, the head of one grabbed and
 * dragged in a circle (an attachment whose target moves every frame), and a render mesh (a
 * detail mesh over a body's surface: here its surface vertices pushed 1 cm outward) read back
 * every frame; and a crate that the engine simulates itself (a rigid body on a vertical spring,
 * a few lines below), on which a fourth creature lands: each frame the engine reads the force
 * the creature exerts on the crate's collider (piola_world_get_collider_force), adds it to the
 * crate's forces, advances the crate and moves the collider to its new pose
 * (piola_world_set_collider_pose): the two couple both ways, and the crate sinks on its spring
 * under the creature's weight. Prints, every 30 frames, where things are and how long the frame
 * waited for the device; exits with status 1 on any failure.
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
  piola_body_id bodies[4];
  for (int i = 0; i < 3; ++i) {
    const float at[3] = {-0.8f + 0.8f * (float)i, 0.05f, 0.0f};
    CHECK(piola_world_add_tet_body(world, &mesh, &rubber, at, &bodies[i]));
  }
  /* The fourth creature falls onto the crate. */
  CHECK(piola_world_add_tet_body(world, &mesh, &rubber, (const float[3]){0.0f, 0.7f, 2.0f},
                                 &bodies[3]));
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

  /* The engine's crate: 1 m x 0.6 m x 1 m, 10 kg, on a vertical spring (k = 3000 N/m, damped at
   * 150 N s/m) whose rest puts its top at y = 0.6 m; the engine integrates it (semi-implicit
   * Euler) and Piola sees it as a box collider at its pose. */
  const float crate_mass = 10.0f, spring_k = 3000.0f, spring_c = 150.0f, rest_y = 0.3f;
  float crate_y = rest_y - crate_mass * 9.81f / spring_k, crate_vy = 0.0f; /* at rest, unloaded */
  const float crate_rest_unloaded = crate_y;
  piola_collider_def crate_def = piola_default_collider_def();
  crate_def.type = PIOLA_COLLIDER_BOX;
  crate_def.shape.box.center[0] = crate_def.shape.box.center[1] = 0.0f;
  crate_def.shape.box.center[2] = 0.0f;
  crate_def.shape.box.half_extents[0] = crate_def.shape.box.half_extents[2] = 0.5f;
  crate_def.shape.box.half_extents[1] = 0.3f;
  piola_collider_id crate;
  CHECK(piola_world_add_collider(world, &crate_def, &crate));
  CHECK(piola_world_set_collider_pose(world, crate, (const float[3]){0.0f, crate_y, 2.0f}, identity,
                                      no_spin, no_spin));

  /* The falling creature's weight, to compare with the push the crate feels at rest. */
  const int32_t n3 = piola_body_get_vertex_count(world, bodies[3]);
  float *inverse_mass = malloc(sizeof *inverse_mass * (size_t)n3);
  if (inverse_mass == NULL) {
    return 1;
  }
  CHECK(piola_body_get_inverse_masses(world, bodies[3], inverse_mass, n3));
  double creature_weight = 0.0;
  for (int32_t i = 0; i < n3; ++i) {
    creature_weight += 9.81 / inverse_mass[i];
  }
  free(inverse_mass);

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

    /* The crate, two-way: the creature's push over the last step, gravity and the spring move
     * it; the collider follows with the crate's velocity over the next step. */
    float push[3];
    CHECK(piola_world_get_collider_force(world, crate, push, NULL));
    const float force_y =
        push[1] - crate_mass * 9.81f - spring_k * (crate_y - rest_y) - spring_c * crate_vy;
    crate_vy += force_y / crate_mass * def.dt;
    crate_y += crate_vy * def.dt;
    CHECK(piola_world_set_collider_pose(world, crate, (const float[3]){0.0f, crate_y, 2.0f},
                                        identity, (const float[3]){0.0f, crate_vy, 0.0f}, no_spin));

    if (frame % 30 == 0 || frame == frames) {
      printf("frame %3d: crate %.1f mm below its unloaded rest, pushed down with %.1f N (the "
             "creature weighs %.1f N: at rest %.1f mm)\n",
             frame, (crate_rest_unloaded - crate_y) * 1e3f, -push[1], creature_weight,
             creature_weight / spring_k * 1e3);
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
