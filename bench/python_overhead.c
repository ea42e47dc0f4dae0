/* The C side of bench/python_overhead.py: the grid scene of `piola bench` (N copies of a TetGen
 * mesh, 1.2 body widths apart, lifted by a tenth of their height, squashed to 0.6), built with
 * the C API and linked against the Python package's own libpiola, then timed in one of two
 * loops after `warmup` untimed steps:
 *   step: `steps` calls of piola_world_step(), then piola_world_finish();
 *   read: `steps` times piola_world_step() followed by piola_body_get_positions() of every body
 *         into one buffer allocated before the loop.
 * and the read alone: piola_body_get_positions() of every body, `steps` times, without steps.
 * and the cost of a call: 20000 piola_world_step() of a world holding one cube of 6 tets.
 * Prints "step_ms X", "read_step_ms X", "read_only_ms X" (per step or per read of all bodies)
 * and "empty_step_us X" (per call).
 *
 *   python_overhead MESH.node MESH.ele BODIES STEPS WARMUP cpu|opencl CONTACTS(0|1)
 */
#include <piola/piola.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    piola_status check_s_ = (call);                                                                \
    if (check_s_ != PIOLA_OK) {                                                                    \
      fprintf(stderr, "%s: %s\n", #call, piola_status_string(check_s_));                           \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static double now_ms(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: python_overhead MESH.node MESH.ele BODIES STEPS WARMUP "
                    "cpu|opencl CONTACTS\n");
    return 2;
  }
  const int bodies = atoi(argv[3]), steps = atoi(argv[4]), warmup = atoi(argv[5]);
  piola_world_def def = piola_default_world_def();
  def.backend = strcmp(argv[6], "opencl") == 0 ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE;
  def.contacts = atoi(argv[7]) != 0;
  piola_world *world;
  CHECK(piola_world_create(&def, &world));
  piola_tet_mesh mesh;
  CHECK(piola_mesh_load_tetgen(argv[1], argv[2], &mesh));
  piola_material m = piola_default_material();
  m.model = PIOLA_MODEL_NEOHOOKEAN;
  m.youngs_modulus = 1.0e6f;
  float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  const int32_t n = mesh.vertex_count;
  for (int32_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = fminf(lo[k], mesh.positions[3 * i + k]);
      hi[k] = fmaxf(hi[k], mesh.positions[3 * i + k]);
    }
  }
  const float spacing = 1.2f * fmaxf(hi[0] - lo[0], hi[2] - lo[2]);
  const float lift = 0.1f * (hi[1] - lo[1]);
  int side = 1;
  while (side * side < bodies) {
    ++side;
  }
  piola_body_id *ids = malloc(sizeof *ids * (size_t)bodies);
  float *xyz = malloc(sizeof *xyz * 3 * (size_t)n * (size_t)bodies);
  if (ids == NULL || xyz == NULL) {
    return 1;
  }
  const float up[3] = {0.0f, 1.0f, 0.0f};
  CHECK(piola_world_add_plane(world, up, 0.0f, 0.5f, NULL));
  for (int b = 0; b < bodies; ++b) {
    const float at[3] = {((float)(b % side) - 0.5f * (float)(side - 1)) * spacing, lift,
                         ((float)(b / side) - 0.5f * (float)(side - 1)) * spacing};
    CHECK(piola_world_add_tet_body(world, &mesh, &m, at, &ids[b]));
    for (int32_t i = 0; i < n; ++i) {
      xyz[3 * i] = mesh.positions[3 * i] + at[0];
      xyz[3 * i + 1] = mesh.positions[3 * i + 1] * 0.6f + at[1];
      xyz[3 * i + 2] = mesh.positions[3 * i + 2] + at[2];
    }
    CHECK(piola_body_set_positions(world, ids[b], xyz, n));
  }
  for (int i = 0; i < warmup; ++i) {
    CHECK(piola_world_step(world));
  }
  CHECK(piola_world_finish(world));

  double t = now_ms();
  for (int i = 0; i < steps; ++i) {
    CHECK(piola_world_step(world));
  }
  CHECK(piola_world_finish(world));
  printf("step_ms %.6f\n", (now_ms() - t) / steps);

  t = now_ms();
  for (int i = 0; i < steps; ++i) {
    CHECK(piola_world_step(world));
    for (int b = 0; b < bodies; ++b) {
      CHECK(piola_body_get_positions(world, ids[b], xyz + 3 * (size_t)n * (size_t)b, n));
    }
  }
  printf("read_step_ms %.6f\n", (now_ms() - t) / steps);

  const int reads = 200;
  t = now_ms();
  for (int i = 0; i < reads; ++i) {
    for (int b = 0; b < bodies; ++b) {
      CHECK(piola_body_get_positions(world, ids[b], xyz + 3 * (size_t)n * (size_t)b, n));
    }
  }
  printf("read_only_ms %.6f\n", (now_ms() - t) / reads);

  /* The cost of a call itself: steps of a world holding one cube of 6 tets on a plane (an
   * OpenCL world without bodies fails its step with PIOLA_ERROR_DEVICE: a write of 0 bytes). */
  piola_world *empty;
  CHECK(piola_world_create(&def, &empty));
  CHECK(piola_world_add_plane(empty, up, 0.0f, 0.5f, NULL));
  piola_tet_mesh cube;
  const int32_t one[3] = {1, 1, 1};
  const float tenth[3] = {0.1f, 0.1f, 0.1f};
  CHECK(piola_mesh_make_box(one, tenth, &cube));
  CHECK(piola_world_add_tet_body(empty, &cube, &m, NULL, NULL));
  piola_mesh_free(&cube);
  const int calls = 20000;
  t = now_ms();
  for (int i = 0; i < calls; ++i) {
    CHECK(piola_world_step(empty));
  }
  CHECK(piola_world_finish(empty));
  printf("empty_step_us %.6f\n", (now_ms() - t) * 1e3 / calls);
  piola_world_destroy(empty);
  free(ids);
  free(xyz);
  piola_mesh_free(&mesh);
  piola_world_destroy(world);
  return 0;
}
