/* Fuzz target of body creation from a mesh built directly from the input bytes (no loader), so
 * the fuzzer reaches piola_world_add_tet_body() and the step with any geometry, NaN, infinity
 * and huge or tiny coordinates included. Layout (missing bytes read as 0):
 *
 *   byte 0   flags: bits 0-1 the position mode, bit 2 a translation follows the header, bit 3
 *            a second copy of the mesh overlaps the first
 *   byte 1   vertex count - 1 (mod 64: 1 to 64 vertices, fewer than 4 is rejected)
 *   byte 2   tet count (mod 64: 0 to 63 tets, 0 is rejected)
 *   byte 3   scale exponent e (mode 1)
 *   [12 bytes: translation, 3 raw floats, when bit 2 is set]
 *   positions, per vertex: mode 0: 3 signed bytes * 1/8 m (a small grid: valid tets are easy
 *            to find); mode 1: 3 signed bytes * 2^(e - 128) m (the same shapes from 2^-128 to
 *            2^127 m); modes 2 and 3: 3 raw floats (12 bytes, NaN and infinity included)
 *   tets, 4 bytes each: vertex index = byte % (vertex count + 1), 255 -> -1 (so an index out
 *            of range is possible)
 *
 * The mesh goes into a CPU-reference world with a ground plane and the default material (once,
 * or twice with bit 3) and runs a few steps;
 * every position and velocity must stay finite (fuzz_common.c). */
#include "fuzz_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct byte_stream {
  const uint8_t *data;
  size_t size, at;
} byte_stream;

static uint8_t next_byte(byte_stream *b) {
  return b->at < b->size ? b->data[b->at++] : 0;
}

static float next_float(byte_stream *b) {
  uint8_t bytes[4];
  for (int i = 0; i < 4; ++i) {
    bytes[i] = next_byte(b);
  }
  float v;
  memcpy(&v, bytes, sizeof v);
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  byte_stream b = {data, size, 0};
  uint8_t flags = next_byte(&b);
  int32_t nv = 1 + next_byte(&b) % 64;
  int32_t nt = next_byte(&b) % 64;
  int exponent = next_byte(&b);
  int mode = flags & 3;
  float translation[3] = {0.0f, 0.0f, 0.0f};
  bool translated = (flags & 4) != 0;
  for (int k = 0; translated && k < 3; ++k) {
    translation[k] = next_float(&b);
  }
  float *positions = malloc(sizeof *positions * 3 * (size_t)nv);
  int32_t *tets = malloc(sizeof *tets * 4 * (size_t)(nt > 0 ? nt : 1));
  if (positions == NULL || tets == NULL) {
    abort();
  }
  for (int32_t i = 0; i < 3 * nv; ++i) {
    if (mode == 0) {
      positions[i] = (float)(int8_t)next_byte(&b) * 0.125f;
    } else if (mode == 1) {
      positions[i] = (float)ldexp((double)(int8_t)next_byte(&b), exponent - 128);
    } else {
      positions[i] = next_float(&b);
    }
  }
  for (int32_t i = 0; i < 4 * nt; ++i) {
    uint8_t v = next_byte(&b);
    tets[i] = v == 255 ? -1 : (int32_t)(v % (nv + 1));
  }
  piola_tet_mesh mesh = {positions, nv, tets, nt};
  piola_fuzz_simulate(&mesh, translated ? translation : NULL, 4, (flags & 8) != 0 ? 2 : 1);
  free(positions);
  free(tets);
  return 0;
}
