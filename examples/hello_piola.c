/* A minimal Piola program: load a TetGen mesh (or make the procedural creature), add two
 * bodies with a material, pin the top of one, add a ground plane and a sphere, step for one
 * second and print where the bodies went.
 *
 *   hello_piola [mesh.node]        (the .ele file must lie beside the .node file)
 */
#include <piola/piola.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_message(piola_log_level level, const char *message, void *user_data) {
  (void)user_data;
  if (level <= PIOLA_LOG_WARNING) {
    fprintf(stderr, "piola: %s\n", message);
  }
}

int main(int argc, char **argv) {
  piola_tet_mesh mesh;
  piola_status s;
  if (argc > 1) {
    char ele[4096];
    snprintf(ele, sizeof ele, "%.*s.ele", (int)(strlen(argv[1]) - 5), argv[1]);
    s = piola_mesh_load_tetgen(argv[1], ele, &mesh);
  } else {
    s = piola_mesh_make_creature(1.0f, &mesh); /* 1 m tall */
  }
  if (s != PIOLA_OK) {
    fprintf(stderr, "cannot get a mesh: %s\n", piola_status_string(s));
    return 1;
  }

  piola_world_def def = piola_default_world_def(); /* best OpenCL device, else the CPU */
  def.logger.fn = print_message;
  piola_world *world;
  s = piola_world_create(&def, &world);
  if (s != PIOLA_OK) {
    fprintf(stderr, "cannot create the world: %s\n", piola_status_string(s));
    piola_mesh_free(&mesh);
    return 1;
  }

  piola_material rubber = piola_default_material();
  rubber.model = PIOLA_MODEL_NEOHOOKEAN;
  rubber.youngs_modulus = 2.0e5f; /* Pa */
  rubber.poisson_ratio = 0.45f;
  rubber.density = 1100.0f; /* kg/m^3 */

  const float left[3] = {-1.0f, 0.5f, 0.0f}, right[3] = {1.0f, 2.0f, 0.0f};
  piola_body_id hanging, falling;
  s = piola_world_add_tet_body(world, &mesh, &rubber, left, &hanging);
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(world, &mesh, &rubber, right, &falling);
  }

  /* Pin the top 5% of the first body: inverse mass 0. */
  int32_t n = piola_body_get_vertex_count(world, hanging);
  float *inv_mass = malloc(sizeof *inv_mass * (size_t)n);
  float *xyz = malloc(sizeof *xyz * 3 * (size_t)n);
  if (s == PIOLA_OK && (inv_mass == NULL || xyz == NULL)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK) {
    s = piola_body_get_inverse_masses(world, hanging, inv_mass, n);
  }
  if (s == PIOLA_OK) {
    s = piola_body_get_positions(world, hanging, xyz, n);
  }
  for (int32_t i = 0; s == PIOLA_OK && i < n; ++i) {
    if (xyz[3 * i + 1] > left[1] + 0.95f) {
      inv_mass[i] = 0.0f;
    }
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_inverse_masses(world, hanging, inv_mass, n);
  }

  /* Ground plane y = 0 and a ball for the second body to land on. */
  const float up[3] = {0.0f, 1.0f, 0.0f};
  if (s == PIOLA_OK) {
    s = piola_world_add_plane(world, up, 0.0f, 0.6f, NULL);
  }
  piola_collider_def ball = piola_default_collider_def();
  ball.type = PIOLA_COLLIDER_SPHERE;
  ball.shape.sphere.center[0] = 1.0f;
  ball.shape.sphere.center[1] = 0.5f;
  ball.shape.sphere.radius = 0.4f;
  if (s == PIOLA_OK) {
    s = piola_world_add_collider(world, &ball, NULL);
  }

  for (int step = 0; s == PIOLA_OK && step < 200; ++step) { /* 200 x 5 ms = 1 s */
    s = piola_world_step(world);
  }

  piola_stats stats;
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(world, &stats);
  }
  if (s == PIOLA_OK) {
    printf("%d bodies, %d vertices, %d tets, %d colors on %s\n", (int)stats.body_count,
           (int)stats.vertex_count, (int)stats.tet_count, (int)stats.color_count,
           stats.device_name);
    printf("after %.2f s: elastic energy %.3f J, kinetic energy %.3f J, %d inverted tets\n",
           stats.simulated_time, stats.elastic_energy, stats.kinetic_energy,
           (int)stats.inverted_tets);
    piola_body_id bodies[2] = {hanging, falling};
    for (int b = 0; b < 2 && s == PIOLA_OK; ++b) {
      s = piola_body_get_positions(world, bodies[b], xyz, n);
      float lowest = xyz[1];
      for (int32_t i = 1; i < n; ++i) {
        lowest = xyz[3 * i + 1] < lowest ? xyz[3 * i + 1] : lowest;
      }
      printf("body %d: lowest point at y = %.3f m\n", b, (double)lowest);
    }
  }
  if (s != PIOLA_OK) {
    fprintf(stderr, "failed: %s\n", piola_status_string(s));
  }
  free(inv_mass);
  free(xyz);
  piola_world_destroy(world);
  piola_mesh_free(&mesh);
  return s == PIOLA_OK ? 0 : 1;
}
