/* Fuzz target of the OBJ loader (piola_mesh_load_obj_logged): the input is the .obj file. A mesh
 * that loads must have positive counts, finite positions and uvs, and triangles with three
 * distinct in-range vertices; anything else must be a documented error status with the output
 * left untouched. */
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = piola_fuzz_write(0, data, size);
  piola_logger logger = piola_fuzz_logger();
  piola_tri_mesh mesh;
  memset(&mesh, 0xA5, sizeof mesh); /* must stay as it is on failure */
  piola_tri_mesh before = mesh;
  piola_status s = piola_mesh_load_obj_logged(path, &logger, &mesh);
  if (s != PIOLA_OK) {
    if (s != PIOLA_ERROR_PARSE && s != PIOLA_ERROR_NON_FINITE && s != PIOLA_ERROR_INVALID_MESH &&
        s != PIOLA_ERROR_OUT_OF_MEMORY) {
      fprintf(stderr, "fuzz_obj: undocumented status %s\n", piola_status_string(s));
      abort();
    }
    if (memcmp(&mesh, &before, sizeof mesh) != 0) {
      fprintf(stderr, "fuzz_obj: the output changed on failure\n");
      abort();
    }
    return 0;
  }
  if (mesh.vertex_count <= 0 || mesh.triangle_count <= 0 || mesh.positions == NULL ||
      mesh.triangles == NULL) {
    fprintf(stderr, "fuzz_obj: an empty mesh loaded\n");
    abort();
  }
  for (size_t i = 0; i < 3 * (size_t)mesh.vertex_count; ++i) {
    if (!isfinite(mesh.positions[i])) {
      fprintf(stderr, "fuzz_obj: a non-finite coordinate loaded\n");
      abort();
    }
  }
  for (size_t i = 0; mesh.uvs != NULL && i < 2 * (size_t)mesh.vertex_count; ++i) {
    if (!isfinite(mesh.uvs[i])) {
      fprintf(stderr, "fuzz_obj: a non-finite uv loaded\n");
      abort();
    }
  }
  for (size_t t = 0; t < (size_t)mesh.triangle_count; ++t) {
    const int32_t *q = mesh.triangles + 3 * t;
    for (int a = 0; a < 3; ++a) {
      if (q[a] < 0 || q[a] >= mesh.vertex_count) {
        fprintf(stderr, "fuzz_obj: a vertex index out of range loaded\n");
        abort();
      }
    }
    if (q[0] == q[1] || q[1] == q[2] || q[0] == q[2]) {
      fprintf(stderr, "fuzz_obj: triangle %zu uses a vertex twice\n", t);
      abort();
    }
  }
  piola_tri_mesh_free(&mesh);
  return 0;
}
