/* The parity scene of tests/python/test_parity.py, built with the C API alone: two procedural
 * creatures (one with its top pinned, one grabbed by an attachment) over a ground plane and a
 * sphere, contacts on, stepped `steps` times; writes both bodies' positions and then
 * velocities as raw float32 to `out`. The test builds the same scene through the Python package
 * and compares the bytes.
 *
 *   reference_scene cpu|opencl steps out.bin
 */
#include <piola/piola.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    piola_status check_s_ = (call);                                                                \
    if (check_s_ != PIOLA_OK) {                                                                    \
      fprintf(stderr, "%s: %s\n", #call, piola_status_string(check_s_));                           \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: reference_scene cpu|opencl steps out.bin\n");
    return 2;
  }
  piola_world_def def = piola_default_world_def();
  def.backend = strcmp(argv[1], "opencl") == 0 ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE;
  def.substeps = 2;
  def.iterations = 5;
  const int steps = atoi(argv[2]);
  piola_world *world;
  CHECK(piola_world_create(&def, &world));

  piola_tet_mesh mesh;
  CHECK(piola_mesh_make_creature(0.5f, &mesh));
  piola_material rubber = piola_default_material();
  rubber.model = PIOLA_MODEL_NEOHOOKEAN;
  rubber.youngs_modulus = 2.0e5f;
  rubber.density = 1000.0f;
  const float at_a[3] = {-0.4f, 0.02f, 0.0f}, at_b[3] = {0.4f, 0.8f, 0.0f};
  piola_body_id a, b;
  CHECK(piola_world_add_tet_body(world, &mesh, &rubber, at_a, &a));
  CHECK(piola_world_add_tet_body(world, &mesh, &rubber, at_b, &b));
  const int32_t n = mesh.vertex_count;
  piola_mesh_free(&mesh);

  /* Pin body a's vertices above y = 0.4 (translated). */
  float *xyz = malloc(sizeof *xyz * 6 * (size_t)n);
  float *w = malloc(sizeof *w * (size_t)n);
  if (xyz == NULL || w == NULL) {
    return 1;
  }
  CHECK(piola_body_get_positions(world, a, xyz, n));
  CHECK(piola_body_get_inverse_masses(world, a, w, n));
  for (int32_t i = 0; i < n; ++i) {
    if (xyz[3 * i + 1] > 0.4f) {
      w[i] = 0.0f;
    }
  }
  CHECK(piola_body_set_inverse_masses(world, a, w, n));

  const float up[3] = {0.0f, 1.0f, 0.0f};
  CHECK(piola_world_add_plane(world, up, 0.0f, 0.6f, NULL));
  piola_collider_def ball = piola_default_collider_def();
  ball.type = PIOLA_COLLIDER_SPHERE;
  ball.shape.sphere.center[0] = 0.4f;
  ball.shape.sphere.center[1] = 0.45f;
  ball.shape.sphere.center[2] = 0.0f;
  ball.shape.sphere.radius = 0.25f;
  CHECK(piola_world_add_collider(world, &ball, NULL));
  const float target[3] = {0.5f, 1.5f, 0.0f};
  piola_attachment_id grab;
  CHECK(piola_world_add_attachment(world, b, 0, target, 1e-1f, &grab));

  for (int i = 0; i < steps; ++i) {
    CHECK(piola_world_step(world));
  }
  FILE *f = fopen(argv[3], "wb");
  if (f == NULL) {
    return 1;
  }
  CHECK(piola_body_get_positions(world, a, xyz, n));
  CHECK(piola_body_get_positions(world, b, xyz + 3 * n, n));
  fwrite(xyz, sizeof *xyz, 6 * (size_t)n, f);
  CHECK(piola_body_get_velocities(world, a, xyz, n));
  CHECK(piola_body_get_velocities(world, b, xyz + 3 * n, n));
  fwrite(xyz, sizeof *xyz, 6 * (size_t)n, f);
  fclose(f);
  free(xyz);
  free(w);
  piola_world_destroy(world);
  return 0;
}
