/* Piola procedural meshes: a box of cubes and a voxelised creature, both tetrahedralised by
 * the same code, and a flat grid of triangles for cloth (piola_mesh_make_grid(), whose
 * checkerboard of diagonals gives no shear direction a preference).
 *
 * Every cube (voxel) is split into the 6 tets of the Kuhn / Freudenthal triangulation (Kuhn
 * 1960, "Some combinatorial lemmas in topology", IBM J. Res. Dev. 4(5); Freudenthal 1942,
 * "Simplizialzerlegungen von beschraenkter Flachheit", Ann. of Math. 43(3)): with the cube's
 * corners named by bits (x = 1, y = 2, z = 4), each permutation (a, b, c) of the axes gives
 * the tet 0, e_a, e_a + e_b, 7 along the main diagonal 0-7. Every cube uses the same diagonal
 * direction, so the split of a shared face is the same from both sides: the mesh conforms.
 * Odd permutations swap their two middle corners so that every tet has positive orientation,
 * det[x1 - x0, x2 - x0, x3 - x0] > 0. An interior grid vertex is shared by 24 tets.
 *
 * The creature is a union of ellipsoids and tapered capsules (legs, torso, head, ears, arms,
 * tail, roughly the silhouette of the Stanford Armadillo) sampled on a cubic voxel grid: a
 * voxel is solid when its centre lies inside the union. Only the largest face-connected set of
 * solid voxels is kept, the grid is cropped to it and scaled to the requested height; grid
 * vertices that no tet uses are dropped and the rest are numbered in grid order (x fastest,
 * then y, then z), tets in voxel order, so the result is deterministic. Its size, about 1200
 * vertices and 3700 tets, is that of the Armadillo mesh of Bender et al. 2014.
 */
#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
/* Same arrays from every build: no fused multiply-adds (GCC in ISO C mode fuses none). The
 * voxel tests are safe anyway: no voxel centre lies within 8e-4 (relative) of a part's
 * surface, far beyond any rounding. */
#pragma STDC FP_CONTRACT OFF
#endif

#define MAKE_COUNT_LIMIT ((int64_t)1 << 30) /* vertex and tet counts stay below this */

/* Corners of the 6 Kuhn tets of a cube, as bit codes (x = 1, y = 2, z = 4); all positive. */
static const int kuhn_tets[6][4] = {
    {0, 1, 3, 7}, /* x, y, z (even) */
    {0, 2, 6, 7}, /* y, z, x (even) */
    {0, 4, 5, 7}, /* z, x, y (even) */
    {0, 5, 1, 7}, /* x, z, y (odd: middle corners swapped) */
    {0, 6, 4, 7}, /* z, y, x (odd) */
    {0, 3, 2, 7}, /* y, x, z (odd) */
};

/* A grid of n[0] x n[1] x n[2] cubes spanning [lo, lo + extent] on each axis. */
typedef struct cube_grid {
  int32_t n[3];
  double lo[3];
  double extent[3];
} cube_grid;

static size_t grid_vertex(const cube_grid *g, int64_t i, int64_t j, int64_t k) {
  return (size_t)(i + ((int64_t)g->n[0] + 1) * (j + ((int64_t)g->n[1] + 1) * k));
}

/* Tetrahedralises the solid cubes of a grid (solid == NULL: every cube, and every grid vertex
 * is used). The caller has checked that the counts stay below MAKE_COUNT_LIMIT. */
static piola_status cubes_to_mesh(const cube_grid *g, const uint8_t *solid, piola_tet_mesh *out) {
  const int64_t nx = g->n[0], ny = g->n[1], nz = g->n[2];
  const size_t cube_count = (size_t)(nx * ny * nz);
  const size_t grid_vertices = (size_t)((nx + 1) * (ny + 1) * (nz + 1));
  size_t solid_count = cube_count;
  if (solid != NULL) {
    solid_count = 0;
    for (size_t c = 0; c < cube_count; ++c) {
      solid_count += solid[c] != 0;
    }
  }
  if (solid_count == 0) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }

  /* Grid vertex -> mesh vertex (-1: unused); identity when every cube is solid. */
  int32_t *map = NULL;
  size_t vertex_count = grid_vertices;
  if (solid != NULL) {
    if (grid_vertices > SIZE_MAX / sizeof *map) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    map = malloc(grid_vertices * sizeof *map);
    if (map == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t v = 0; v < grid_vertices; ++v) {
      map[v] = -1;
    }
    size_t c = 0;
    for (int64_t k = 0; k < nz; ++k) {
      for (int64_t j = 0; j < ny; ++j) {
        for (int64_t i = 0; i < nx; ++i, ++c) {
          if (solid[c] == 0) {
            continue;
          }
          for (int corner = 0; corner < 8; ++corner) {
            map[grid_vertex(g, i + (corner & 1), j + ((corner >> 1) & 1),
                            k + ((corner >> 2) & 1))] = 0;
          }
        }
      }
    }
    vertex_count = 0;
    for (size_t v = 0; v < grid_vertices; ++v) {
      if (map[v] == 0) {
        map[v] = (int32_t)vertex_count++;
      }
    }
  }

  if (vertex_count > SIZE_MAX / (3 * sizeof(float)) ||
      solid_count > SIZE_MAX / (6 * 4 * sizeof(int32_t))) {
    free(map);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  float *positions = malloc(vertex_count * 3 * sizeof *positions);
  int32_t *tets = malloc(solid_count * 6 * 4 * sizeof *tets);
  if (positions == NULL || tets == NULL) {
    free(map);
    free(positions);
    free(tets);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }

  /* Vertices in grid order; coordinates as lo + extent * (i / n), so the far side is exact. */
  size_t v = 0;
  for (int64_t k = 0; k <= nz; ++k) {
    for (int64_t j = 0; j <= ny; ++j) {
      for (int64_t i = 0; i <= nx; ++i) {
        if (map != NULL && map[grid_vertex(g, i, j, k)] < 0) {
          continue;
        }
        positions[3 * v + 0] = (float)(g->lo[0] + g->extent[0] * ((double)i / (double)nx));
        positions[3 * v + 1] = (float)(g->lo[1] + g->extent[1] * ((double)j / (double)ny));
        positions[3 * v + 2] = (float)(g->lo[2] + g->extent[2] * ((double)k / (double)nz));
        ++v;
      }
    }
  }

  /* Tets in cube order, 6 per cube. */
  size_t t = 0, c = 0;
  for (int64_t k = 0; k < nz; ++k) {
    for (int64_t j = 0; j < ny; ++j) {
      for (int64_t i = 0; i < nx; ++i, ++c) {
        if (solid != NULL && solid[c] == 0) {
          continue;
        }
        for (int q = 0; q < 6; ++q, ++t) {
          for (int m = 0; m < 4; ++m) {
            int corner = kuhn_tets[q][m];
            size_t gv =
                grid_vertex(g, i + (corner & 1), j + ((corner >> 1) & 1), k + ((corner >> 2) & 1));
            tets[4 * t + (size_t)m] = map != NULL ? map[gv] : (int32_t)gv;
          }
        }
      }
    }
  }
  free(map);

  out->positions = positions;
  out->vertex_count = (int32_t)vertex_count;
  out->tets = tets;
  out->tet_count = (int32_t)(solid_count * 6);
  return PIOLA_OK;
}

/* ---- Box ----------------------------------------------------------------------------------- */

/* Checks the cell counts (1 to 2^30 - 1) and sizes (finite, > 0 m) of `axes` axes. */
static piola_status check_cells(const int32_t *cells, const float *size, int axes) {
  for (int a = 0; a < axes; ++a) {
    if (cells[a] < 1 || cells[a] >= MAKE_COUNT_LIMIT) {
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    if (!isfinite(size[a])) {
      return PIOLA_ERROR_NON_FINITE;
    }
    if (!(size[a] > 0.0f)) {
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
  }
  return PIOLA_OK;
}

piola_status piola_mesh_make_box(const int32_t cells[3], const float size[3], piola_tet_mesh *out) {
  if (cells == NULL || size == NULL || out == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_status s = check_cells(cells, size, 3);
  if (s != PIOLA_OK) {
    return s;
  }
  /* Each factor is below 2^30 + 1, so no partial product overflows 64 bits. */
  int64_t cubes = (int64_t)cells[0] * cells[1];
  int64_t vertices = ((int64_t)cells[0] + 1) * ((int64_t)cells[1] + 1);
  if (cubes >= MAKE_COUNT_LIMIT || vertices >= MAKE_COUNT_LIMIT) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  cubes *= cells[2];
  vertices *= (int64_t)cells[2] + 1;
  if (cubes * 6 >= MAKE_COUNT_LIMIT || vertices >= MAKE_COUNT_LIMIT) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  cube_grid g;
  for (int a = 0; a < 3; ++a) {
    g.n[a] = cells[a];
    g.lo[a] = 0.0;
    g.extent[a] = (double)size[a];
  }
  return cubes_to_mesh(&g, NULL, out);
}

/* ---- Grid (cloth) ---------------------------------------------------------------------------- */

piola_status piola_mesh_make_grid(const int32_t cells[2], const float size[2],
                                  piola_tri_mesh *out) {
  if (cells == NULL || size == NULL || out == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_status s = check_cells(cells, size, 2);
  if (s != PIOLA_OK) {
    return s;
  }
  /* Each factor is below 2^30 + 1, so no product overflows 64 bits. */
  const int64_t nx = cells[0], nz = cells[1];
  const int64_t vertex_count = (nx + 1) * (nz + 1);
  const int64_t triangle_count = 2 * nx * nz;
  if (vertex_count >= MAKE_COUNT_LIMIT || triangle_count >= MAKE_COUNT_LIMIT) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if ((uint64_t)vertex_count > SIZE_MAX / (3 * sizeof(float)) ||
      (uint64_t)triangle_count > SIZE_MAX / (3 * sizeof(int32_t))) {
    return PIOLA_ERROR_OUT_OF_MEMORY; /* 32-bit size_t */
  }
  float *positions = malloc((size_t)vertex_count * 3 * sizeof *positions);
  float *uvs = malloc((size_t)vertex_count * 2 * sizeof *uvs);
  int32_t *triangles = malloc((size_t)triangle_count * 3 * sizeof *triangles);
  if (positions == NULL || uvs == NULL || triangles == NULL) {
    free(positions);
    free(uvs);
    free(triangles);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* Coordinates as size * (i / n), so the far side is exact (as in the box). */
  size_t v = 0;
  for (int64_t k = 0; k <= nz; ++k) {
    for (int64_t i = 0; i <= nx; ++i, ++v) {
      double u = (double)i / (double)nx, w = (double)k / (double)nz;
      positions[3 * v + 0] = (float)((double)size[0] * u);
      positions[3 * v + 1] = 0.0f;
      positions[3 * v + 2] = (float)((double)size[1] * w);
      uvs[2 * v + 0] = (float)u;
      uvs[2 * v + 1] = (float)w;
    }
  }
  /* Square (i, k) has corners a = (i, k), b = (i + 1, k), c = (i, k + 1), d = (i + 1, k + 1).
   * With x cross z = -y, a triangle is +y when it turns from +z towards +x: (a, c, b) and
   * (b, c, d) across the diagonal b-c; (a, d, b) and (a, c, d) across a-d. */
  size_t t = 0;
  for (int64_t k = 0; k < nz; ++k) {
    for (int64_t i = 0; i < nx; ++i) {
      const int32_t a = (int32_t)(i + (nx + 1) * k), b = a + 1;
      const int32_t c = (int32_t)(a + nx + 1), d = c + 1;
      const int32_t split[2][6] = {{a, d, b, a, c, d}, {a, c, b, b, c, d}};
      memcpy(triangles + 3 * t, split[(i + k) & 1], sizeof split[0]);
      t += 2;
    }
  }
  out->positions = positions;
  out->vertex_count = (int32_t)vertex_count;
  out->triangles = triangles;
  out->triangle_count = (int32_t)triangle_count;
  out->uvs = uvs;
  return PIOLA_OK;
}

/* ---- Creature ------------------------------------------------------------------------------ */

typedef enum part_kind { PART_ELLIPSOID, PART_CAPSULE } part_kind;

/* A piece of the creature, in model units (about 1 tall, y up, facing +z). */
typedef struct creature_part {
  part_kind kind;
  bool mirrored; /* also present with x negated */
  double a[3];   /* ellipsoid: centre; capsule: first end */
  double b[3];   /* ellipsoid: radii; capsule: second end */
  double ra, rb; /* capsule: radius at a and at b (linear in between) */
} creature_part;

static const creature_part creature_parts[] = {
    /* feet, shins, thighs */
    {PART_ELLIPSOID, true, {0.14, 0.04, 0.05}, {0.08, 0.04, 0.12}, 0, 0},
    {PART_CAPSULE, true, {0.14, 0.06, 0.0}, {0.16, 0.22, 0.05}, 0.055, 0.07},
    {PART_CAPSULE, true, {0.16, 0.22, 0.05}, {0.11, 0.38, -0.02}, 0.07, 0.09},
    /* hips, belly, chest */
    {PART_ELLIPSOID, false, {0.0, 0.42, -0.02}, {0.17, 0.10, 0.12}, 0, 0},
    {PART_ELLIPSOID, false, {0.0, 0.52, 0.0}, {0.17, 0.16, 0.13}, 0, 0},
    {PART_ELLIPSOID, false, {0.0, 0.64, 0.02}, {0.19, 0.10, 0.12}, 0, 0},
    /* neck, head, snout, ears */
    {PART_CAPSULE, false, {0.0, 0.68, 0.02}, {0.0, 0.78, 0.06}, 0.08, 0.07},
    {PART_ELLIPSOID, false, {0.0, 0.82, 0.06}, {0.09, 0.08, 0.09}, 0, 0},
    {PART_CAPSULE, false, {0.0, 0.81, 0.10}, {0.0, 0.77, 0.22}, 0.06, 0.04},
    {PART_CAPSULE, true, {0.05, 0.86, 0.04}, {0.15, 1.0, -0.02}, 0.045, 0.03},
    /* upper arms, forearms, hands */
    {PART_CAPSULE, true, {0.15, 0.66, 0.0}, {0.29, 0.53, 0.06}, 0.06, 0.05},
    {PART_CAPSULE, true, {0.29, 0.53, 0.06}, {0.25, 0.44, 0.21}, 0.05, 0.045},
    {PART_ELLIPSOID, true, {0.24, 0.42, 0.25}, {0.06, 0.045, 0.06}, 0, 0},
    /* tail */
    {PART_CAPSULE, false, {0.0, 0.38, -0.10}, {0.0, 0.18, -0.30}, 0.065, 0.045},
    {PART_CAPSULE, false, {0.0, 0.18, -0.30}, {0.06, 0.05, -0.44}, 0.045, 0.03},
};

#define CREATURE_PART_COUNT (sizeof creature_parts / sizeof creature_parts[0])

/* Voxels across the creature's height in model units, tuned for 1247 vertices and 3714 tets
 * (the Armadillo mesh: 1180 and 3717). */
#define CREATURE_RESOLUTION 23.8

static bool part_contains(const creature_part *part, const double p[3]) {
  if (part->kind == PART_ELLIPSOID) {
    double s = 0.0;
    for (int a = 0; a < 3; ++a) {
      double d = (p[a] - part->a[a]) / part->b[a];
      s += d * d;
    }
    return s <= 1.0;
  }
  double ab[3], ap[3], ab2 = 0.0, abap = 0.0;
  for (int a = 0; a < 3; ++a) {
    ab[a] = part->b[a] - part->a[a];
    ap[a] = p[a] - part->a[a];
    ab2 += ab[a] * ab[a];
    abap += ab[a] * ap[a];
  }
  double t = ab2 > 0.0 ? abap / ab2 : 0.0;
  t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
  double d2 = 0.0;
  for (int a = 0; a < 3; ++a) {
    double d = ap[a] - t * ab[a];
    d2 += d * d;
  }
  double r = part->ra + (part->rb - part->ra) * t;
  return d2 <= r * r;
}

static bool creature_contains(const double p[3]) {
  const double mirror[3] = {-p[0], p[1], p[2]};
  for (size_t i = 0; i < CREATURE_PART_COUNT; ++i) {
    const creature_part *part = &creature_parts[i];
    if (part_contains(part, p) || (part->mirrored && part_contains(part, mirror))) {
      return true;
    }
  }
  return false;
}

/* Model-space bounds of the union of the parts. */
static void creature_bounds(double lo[3], double hi[3]) {
  for (int a = 0; a < 3; ++a) {
    lo[a] = HUGE_VAL;
    hi[a] = -HUGE_VAL;
  }
  for (size_t i = 0; i < CREATURE_PART_COUNT; ++i) {
    const creature_part *part = &creature_parts[i];
    for (int a = 0; a < 3; ++a) {
      double pl, ph;
      if (part->kind == PART_ELLIPSOID) {
        pl = part->a[a] - part->b[a];
        ph = part->a[a] + part->b[a];
      } else {
        double r = part->ra > part->rb ? part->ra : part->rb;
        pl = fmin(part->a[a], part->b[a]) - r;
        ph = fmax(part->a[a], part->b[a]) + r;
      }
      if (a == 0 && part->mirrored) {
        double m = fmax(fabs(pl), fabs(ph));
        pl = fmin(pl, -m);
        ph = fmax(ph, m);
      }
      lo[a] = fmin(lo[a], pl);
      hi[a] = fmax(hi[a], ph);
    }
  }
}

/* Keeps only the largest face-connected set of solid voxels (the first found on a tie). */
static piola_status keep_largest_piece(const int32_t n[3], uint8_t *solid) {
  const size_t count = (size_t)n[0] * (size_t)n[1] * (size_t)n[2];
  int32_t *label = malloc(count * sizeof *label);
  int32_t *queue = malloc(count * sizeof *queue);
  if (label == NULL || queue == NULL) {
    free(label);
    free(queue);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  const int32_t step[3] = {1, n[0], n[0] * n[1]};
  int32_t pieces = 0, best = -1;
  size_t best_size = 0;
  for (size_t c = 0; c < count; ++c) {
    label[c] = -1;
  }
  for (size_t seed = 0; seed < count; ++seed) {
    if (solid[seed] == 0 || label[seed] >= 0) {
      continue;
    }
    size_t head = 0, tail = 0;
    queue[tail++] = (int32_t)seed;
    label[seed] = pieces;
    while (head < tail) {
      int32_t c = queue[head++];
      int32_t ijk[3] = {c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])};
      for (int a = 0; a < 3; ++a) {
        for (int side = -1; side <= 1; side += 2) {
          int32_t m = ijk[a] + side;
          if (m < 0 || m >= n[a]) {
            continue;
          }
          int32_t d = c + side * step[a];
          if (solid[d] != 0 && label[d] < 0) {
            label[d] = pieces;
            queue[tail++] = d;
          }
        }
      }
    }
    if (tail > best_size) {
      best_size = tail;
      best = pieces;
    }
    ++pieces;
  }
  for (size_t c = 0; c < count; ++c) {
    solid[c] = (uint8_t)(solid[c] != 0 && label[c] == best);
  }
  free(label);
  free(queue);
  return PIOLA_OK;
}

piola_status piola_mesh_make_creature(float height, piola_tet_mesh *out) {
  if (out == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!isfinite(height)) {
    return PIOLA_ERROR_NON_FINITE;
  }
  if (!(height > 0.0f)) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }

  /* Sample the parts on a grid with a free voxel around them. */
  double lo[3], hi[3];
  creature_bounds(lo, hi);
  const double h = (hi[1] - lo[1]) / CREATURE_RESOLUTION;
  int32_t n[3];
  for (int a = 0; a < 3; ++a) {
    n[a] = (int32_t)ceil((hi[a] - lo[a]) / h) + 2;
    lo[a] -= h;
  }
  const size_t count = (size_t)n[0] * (size_t)n[1] * (size_t)n[2];
  uint8_t *solid = malloc(count);
  if (solid == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  size_t c = 0;
  for (int32_t k = 0; k < n[2]; ++k) {
    for (int32_t j = 0; j < n[1]; ++j) {
      for (int32_t i = 0; i < n[0]; ++i, ++c) {
        const double p[3] = {lo[0] + (i + 0.5) * h, lo[1] + (j + 0.5) * h, lo[2] + (k + 0.5) * h};
        solid[c] = (uint8_t)creature_contains(p);
      }
    }
  }
  piola_status s = keep_largest_piece(n, solid);
  if (s != PIOLA_OK) {
    free(solid);
    return s;
  }

  /* Crop to the solid voxels. */
  int32_t first[3] = {n[0], n[1], n[2]}, last[3] = {-1, -1, -1};
  c = 0;
  for (int32_t k = 0; k < n[2]; ++k) {
    for (int32_t j = 0; j < n[1]; ++j) {
      for (int32_t i = 0; i < n[0]; ++i, ++c) {
        if (solid[c] != 0) {
          const int32_t ijk[3] = {i, j, k};
          for (int a = 0; a < 3; ++a) {
            first[a] = ijk[a] < first[a] ? ijk[a] : first[a];
            last[a] = ijk[a] > last[a] ? ijk[a] : last[a];
          }
        }
      }
    }
  }
  if (last[0] < 0) { /* no solid voxel: cannot happen with the parts above */
    free(solid);
    return PIOLA_ERROR_INVALID_MESH;
  }
  cube_grid g;
  for (int a = 0; a < 3; ++a) {
    g.n[a] = last[a] - first[a] + 1;
  }
  uint8_t *cropped = malloc((size_t)g.n[0] * (size_t)g.n[1] * (size_t)g.n[2]);
  if (cropped == NULL) {
    free(solid);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  c = 0;
  for (int32_t k = 0; k < g.n[2]; ++k) {
    for (int32_t j = 0; j < g.n[1]; ++j) {
      for (int32_t i = 0; i < g.n[0]; ++i, ++c) {
        size_t src =
            (size_t)(first[0] + i) +
            (size_t)n[0] * ((size_t)(first[1] + j) + (size_t)n[1] * (size_t)(first[2] + k));
        cropped[c] = solid[src];
      }
    }
  }
  free(solid);

  /* Scale so the solid spans [0, height] in y, centred on x = z = 0. */
  const double cell = (double)height / g.n[1];
  for (int a = 0; a < 3; ++a) {
    g.extent[a] = a == 1 ? (double)height : cell * g.n[a];
    g.lo[a] = a == 1 ? 0.0 : -0.5 * g.extent[a];
  }
  s = cubes_to_mesh(&g, cropped, out);
  free(cropped);
  return s;
}
