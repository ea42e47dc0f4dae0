/* A program outside Piola built against an installed Piola (CMake's find_package(Piola) or
 * pkg-config): it creates a world on the CPU reference backend, adds a box body, steps it and
 * checks what comes back. Exit status 0 when everything holds. */
#include <piola/piola.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, piola_status s) {
  fprintf(stderr, "consumer: %s: %s\n", what, piola_status_string(s));
  return 1;
}

int main(void) {
  char version[32];
  snprintf(version, sizeof version, "%d.%d.%d", PIOLA_VERSION_MAJOR, PIOLA_VERSION_MINOR,
           PIOLA_VERSION_PATCH);
  if (strcmp(version, piola_version_string()) != 0) {
    fprintf(stderr, "consumer: headers say %s, library says %s\n", version, piola_version_string());
    return 1;
  }

  piola_world_def def = piola_default_world_def();
  def.backend = PIOLA_BACKEND_CPU_REFERENCE;
  piola_world *world;
  piola_status s = piola_world_create(&def, &world);
  if (s != PIOLA_OK) {
    return fail("piola_world_create", s);
  }

  const int32_t cells[3] = {2, 2, 2};
  const float size[3] = {0.5f, 0.5f, 0.5f}; /* m */
  piola_tet_mesh mesh;
  s = piola_mesh_make_box(cells, size, &mesh);
  if (s != PIOLA_OK) {
    piola_world_destroy(world);
    return fail("piola_mesh_make_box", s);
  }
  const piola_material material = piola_default_material();
  const float at[3] = {0.0f, 1.0f, 0.0f}; /* m */
  piola_body_id body;
  s = piola_world_add_tet_body(world, &mesh, &material, at, &body);
  for (int i = 0; s == PIOLA_OK && i < 20; ++i) { /* 0.1 s of free fall */
    s = piola_world_step(world);
  }
  piola_stats stats;
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(world, &stats);
  }
  float xyz[3 * 27];
  if (s == PIOLA_OK && piola_body_get_vertex_count(world, body) != 27) {
    s = PIOLA_ERROR_COUNT_MISMATCH;
  }
  if (s == PIOLA_OK) {
    s = piola_body_get_positions(world, body, xyz, 27);
  }
  piola_world_destroy(world);
  piola_mesh_free(&mesh);
  if (s != PIOLA_OK) {
    return fail("stepping a box", s);
  }
  /* The box's lowest corner started at y = 1 m; after 0.1 s it has fallen about g t^2 / 2. */
  if (stats.body_count != 1 || stats.tet_count != 48 || !(xyz[1] < 0.97f && xyz[1] > 0.93f) ||
      !isfinite(xyz[1])) {
    fprintf(stderr, "consumer: unexpected state: %d bodies, %d tets, y = %g m\n",
            (int)stats.body_count, (int)stats.tet_count, (double)xyz[1]);
    return 1;
  }
  printf("consumer: Piola %s (%s), 1 box, %d tets, fell to y = %.3f m\n", piola_version_string(),
         piola_backend_name(stats.backend), (int)stats.tet_count, (double)xyz[1]);
  return 0;
}
