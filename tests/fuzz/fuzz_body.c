/* Fuzz target of body creation from a parsed mesh: an input holding a NUL byte is a TetGen pair
 * (.node, NUL, .ele, as in fuzz_tetgen.c), any other input a Gmsh .msh file. A mesh that loads
 * goes into a CPU-reference world with a ground plane and the default material
 * (piola_world_add_tet_body), twice, the copies overlapping, and runs a few steps; every position
 * and velocity must stay finite (fuzz_common.c). */
#include "fuzz_common.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *split = size > 0 ? memchr(data, '\0', size) : NULL;
  piola_tet_mesh mesh;
  memset(&mesh, 0, sizeof mesh);
  piola_status s;
  if (split != NULL) {
    size_t node_len = (size_t)(split - data);
    const char *node_path = piola_fuzz_write(0, data, node_len);
    const char *ele_path = piola_fuzz_write(1, split + 1, size - node_len - 1);
    s = piola_mesh_load_tetgen(node_path, ele_path, &mesh);
  } else {
    s = piola_mesh_load_gmsh(piola_fuzz_write(0, data, size), &mesh);
  }
  if (s == PIOLA_OK) {
    piola_fuzz_simulate(&mesh, NULL, 4, 2);
    piola_mesh_free(&mesh);
  }
  return 0;
}
