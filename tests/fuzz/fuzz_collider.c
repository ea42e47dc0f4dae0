/* Fuzz target of the mesh and SDF colliders (src/host/collider_mesh.c, kernels/piola_mesh.h):
 * a triangle mesh or a distance grid built directly from the input bytes, NaN, infinity, huge
 * and tiny values and indices out of range included, added to a world; when the world takes it,
 * a small box body falls onto it for a few steps. Layout (missing bytes read as 0):
 *
 *   byte 0   flags: bit 0 an SDF (else a mesh), bit 1 raw floats (else signed bytes / 8 m),
 *            bit 2 the collider moves (a pose with velocities after it is added)
 *   mesh:    byte 1 vertex count (mod 32), byte 2 triangle count (mod 64), the positions (3 per
 *            vertex), then 3 bytes per triangle: vertex index = byte % (vertex count + 1),
 *            255 -> -1
 *   SDF:     bytes 1-3 points along x, y, z (mod 6), byte 4 the cell (byte / 32 - 1 m, or a
 *            raw float), the origin (3 values), the distances (signed bytes / 16 m, or raw
 *            floats)
 *
 * A rejected collider must leave the world without it, with a documented status; an accepted
 * one must keep every position, velocity and collider force finite (aborts otherwise, a crash
 * libFuzzer reports). With PIOLA_FUZZ_VERBOSE set, prints the status of adding it. */
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct byte_stream {
  const uint8_t *data;
  size_t size, at;
} byte_stream;

static uint8_t next_byte(byte_stream *b) {
  return b->at < b->size ? b->data[b->at++] : 0;
}

static float next_value(byte_stream *b, bool raw, float unit) {
  if (!raw) {
    return (float)(int8_t)next_byte(b) * unit;
  }
  uint8_t bytes[4];
  for (int i = 0; i < 4; ++i) {
    bytes[i] = next_byte(b);
  }
  float v;
  memcpy(&v, bytes, sizeof v);
  return v;
}

static bool finite_all(const float *v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) {
      return false;
    }
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  byte_stream b = {data, size, 0};
  const uint8_t flags = next_byte(&b);
  const bool sdf = (flags & 1) != 0, raw = (flags & 2) != 0, moving = (flags & 4) != 0;
  piola_collider_def def = piola_default_collider_def();
  float *values = NULL;
  int32_t *triangles = NULL;
  if (sdf) {
    def.type = PIOLA_COLLIDER_SDF;
    for (int k = 0; k < 3; ++k) {
      def.shape.sdf.dims[k] = next_byte(&b) % 6;
    }
    def.shape.sdf.cell = raw ? next_value(&b, true, 0.0f) : (float)next_byte(&b) / 32.0f - 1.0f;
    for (int k = 0; k < 3; ++k) {
      def.shape.sdf.origin[k] = next_value(&b, raw, 0.125f);
    }
    const int32_t n = def.shape.sdf.dims[0] * def.shape.sdf.dims[1] * def.shape.sdf.dims[2];
    values = malloc(sizeof *values * (size_t)(n > 0 ? n : 1));
    if (values == NULL) {
      abort();
    }
    for (int32_t i = 0; i < n; ++i) {
      values[i] = next_value(&b, raw, 1.0f / 16.0f);
    }
    def.shape.sdf.distances = values;
  } else {
    def.type = PIOLA_COLLIDER_MESH;
    const int32_t nv = next_byte(&b) % 32, nt = next_byte(&b) % 64;
    values = malloc(sizeof *values * 3 * (size_t)(nv > 0 ? nv : 1));
    triangles = malloc(sizeof *triangles * 3 * (size_t)(nt > 0 ? nt : 1));
    if (values == NULL || triangles == NULL) {
      abort();
    }
    for (int32_t i = 0; i < 3 * nv; ++i) {
      values[i] = next_value(&b, raw, 0.125f);
    }
    for (int32_t i = 0; i < 3 * nt; ++i) {
      const uint8_t v = next_byte(&b);
      triangles[i] = v == 255 ? -1 : (int32_t)(v % (nv + 1));
    }
    def.shape.mesh.positions = values;
    def.shape.mesh.vertex_count = nv;
    def.shape.mesh.triangles = triangles;
    def.shape.mesh.triangle_count = nt;
  }
  piola_world_def wd = piola_default_world_def();
  wd.backend = PIOLA_BACKEND_CPU_REFERENCE;
  wd.logger = piola_fuzz_logger();
  piola_world *w = NULL;
  if (piola_world_create(&wd, &w) != PIOLA_OK) {
    abort();
  }
  piola_collider_id id;
  const piola_status s = piola_world_add_collider(w, &def, &id);
  if (getenv("PIOLA_FUZZ_VERBOSE") != NULL) {
    printf("%s: %s\n", sdf ? "SDF" : "mesh", piola_status_string(s));
  }
  piola_stats st;
  if (piola_world_get_stats(w, &st) != PIOLA_OK) {
    abort();
  }
  if (s != PIOLA_OK) {
    if ((s != PIOLA_ERROR_INVALID_ARGUMENT && s != PIOLA_ERROR_INVALID_MESH &&
         s != PIOLA_ERROR_NON_FINITE && s != PIOLA_ERROR_OUT_OF_MEMORY) ||
        st.collider_count != 0) {
      abort();
    }
  } else {
    if (st.collider_count != 1) {
      abort();
    }
    if (moving) {
      const float at[3] = {0.0f, 0.01f, 0.0f}, q[4] = {0.0f, 0.1f, 0.0f, 1.0f};
      const float v[3] = {0.2f, 0.0f, 0.0f}, av[3] = {0.0f, 0.5f, 0.0f};
      if (piola_world_set_collider_pose(w, id, at, q, v, av) != PIOLA_OK) {
        abort();
      }
    }
    piola_tet_mesh box;
    const int32_t cells[3] = {1, 1, 1};
    const float extent[3] = {0.25f, 0.25f, 0.25f};
    if (piola_mesh_make_box(cells, extent, &box) != PIOLA_OK) {
      abort();
    }
    piola_material mat = piola_default_material();
    piola_body_id body;
    const float drop[3] = {-0.125f, 0.3f, -0.125f};
    if (piola_world_add_tet_body(w, &box, &mat, drop, &body) != PIOLA_OK) {
      abort();
    }
    float x[3 * 8], vel[3 * 8], force[3], torque[3];
    for (int step = 0; step < 6; ++step) {
      if (piola_world_step(w) != PIOLA_OK ||
          piola_body_get_positions(w, body, x, box.vertex_count) != PIOLA_OK ||
          piola_body_get_velocities(w, body, vel, box.vertex_count) != PIOLA_OK ||
          piola_world_get_collider_force(w, id, force, torque) != PIOLA_OK ||
          !finite_all(x, 3 * (size_t)box.vertex_count) ||
          !finite_all(vel, 3 * (size_t)box.vertex_count) || !finite_all(force, 3) ||
          !finite_all(torque, 3)) {
        abort();
      }
    }
    piola_mesh_free(&box);
    if (piola_world_remove_collider(w, id) != PIOLA_OK) {
      abort();
    }
  }
  piola_world_destroy(w);
  free(values);
  free(triangles);
  return 0;
}
