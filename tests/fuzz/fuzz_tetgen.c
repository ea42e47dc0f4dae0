/* Fuzz target of the TetGen loader (piola_mesh_load_tetgen_logged): the input is the .node file,
 * a NUL byte, then the .ele file (without a NUL the whole input is the .node file and the .ele
 * file is empty). A NUL never belongs to a valid file, so the split point is free for the
 * fuzzer to move. A mesh that loads must have positive counts, finite positions and indices in
 * range; anything else must be a documented error status with the output left untouched. */
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *split = size > 0 ? memchr(data, '\0', size) : NULL;
  size_t node_len = split != NULL ? (size_t)(split - data) : size;
  const uint8_t *ele = split != NULL ? split + 1 : data + size;
  size_t ele_len = split != NULL ? size - node_len - 1 : 0;
  const char *node_path = piola_fuzz_write(0, data, node_len);
  const char *ele_path = piola_fuzz_write(1, ele, ele_len);

  piola_logger logger = piola_fuzz_logger();
  piola_tet_mesh mesh;
  memset(&mesh, 0xA5, sizeof mesh); /* must stay as it is on failure */
  piola_tet_mesh before = mesh;
  piola_status s = piola_mesh_load_tetgen_logged(node_path, ele_path, &logger, &mesh);
  if (s != PIOLA_OK) {
    if (s != PIOLA_ERROR_PARSE && s != PIOLA_ERROR_NON_FINITE && s != PIOLA_ERROR_INVALID_MESH &&
        s != PIOLA_ERROR_UNSUPPORTED && s != PIOLA_ERROR_OUT_OF_MEMORY) {
      fprintf(stderr, "fuzz_tetgen: undocumented status %s\n", piola_status_string(s));
      abort();
    }
    if (memcmp(&mesh, &before, sizeof mesh) != 0) {
      fprintf(stderr, "fuzz_tetgen: the output changed on failure\n");
      abort();
    }
    return 0;
  }
  if (mesh.vertex_count <= 0 || mesh.tet_count <= 0 || mesh.positions == NULL ||
      mesh.tets == NULL) {
    fprintf(stderr, "fuzz_tetgen: an empty mesh loaded\n");
    abort();
  }
  for (size_t i = 0; i < 3 * (size_t)mesh.vertex_count; ++i) {
    if (!isfinite(mesh.positions[i])) {
      fprintf(stderr, "fuzz_tetgen: a non-finite coordinate loaded\n");
      abort();
    }
  }
  for (size_t i = 0; i < 4 * (size_t)mesh.tet_count; ++i) {
    if (mesh.tets[i] < 0 || mesh.tets[i] >= mesh.vertex_count) {
      fprintf(stderr, "fuzz_tetgen: a vertex index out of range loaded\n");
      abort();
    }
  }
  piola_mesh_free(&mesh);
  return 0;
}
