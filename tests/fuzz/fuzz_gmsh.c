/* Fuzz target of the Gmsh loader (piola_mesh_load_gmsh_logged): the input is the .msh file. A
 * mesh that loads must have positive counts, finite positions, indices in range and every
 * vertex used by a tet (the loader drops unused nodes); anything else must be a documented
 * error status with the output left untouched. */
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = piola_fuzz_write(0, data, size);
  piola_logger logger = piola_fuzz_logger();
  piola_tet_mesh mesh;
  memset(&mesh, 0xA5, sizeof mesh); /* must stay as it is on failure */
  piola_tet_mesh before = mesh;
  piola_status s = piola_mesh_load_gmsh_logged(path, &logger, &mesh);
  if (s != PIOLA_OK) {
    if (s != PIOLA_ERROR_PARSE && s != PIOLA_ERROR_NON_FINITE && s != PIOLA_ERROR_INVALID_MESH &&
        s != PIOLA_ERROR_UNSUPPORTED && s != PIOLA_ERROR_OUT_OF_MEMORY) {
      fprintf(stderr, "fuzz_gmsh: undocumented status %s\n", piola_status_string(s));
      abort();
    }
    if (memcmp(&mesh, &before, sizeof mesh) != 0) {
      fprintf(stderr, "fuzz_gmsh: the output changed on failure\n");
      abort();
    }
    return 0;
  }
  if (mesh.vertex_count <= 0 || mesh.tet_count <= 0 || mesh.positions == NULL ||
      mesh.tets == NULL) {
    fprintf(stderr, "fuzz_gmsh: an empty mesh loaded\n");
    abort();
  }
  for (size_t i = 0; i < 3 * (size_t)mesh.vertex_count; ++i) {
    if (!isfinite(mesh.positions[i])) {
      fprintf(stderr, "fuzz_gmsh: a non-finite coordinate loaded\n");
      abort();
    }
  }
  unsigned char *used = calloc((size_t)mesh.vertex_count, 1);
  if (used == NULL) {
    abort();
  }
  for (size_t i = 0; i < 4 * (size_t)mesh.tet_count; ++i) {
    if (mesh.tets[i] < 0 || mesh.tets[i] >= mesh.vertex_count) {
      fprintf(stderr, "fuzz_gmsh: a vertex index out of range loaded\n");
      abort();
    }
    used[mesh.tets[i]] = 1;
  }
  for (int32_t i = 0; i < mesh.vertex_count; ++i) {
    if (!used[i]) {
      fprintf(stderr, "fuzz_gmsh: vertex %d is used by no tet\n", (int)i);
      abort();
    }
  }
  free(used);
  piola_mesh_free(&mesh);
  return 0;
}
