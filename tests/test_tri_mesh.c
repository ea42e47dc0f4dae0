/* Tests of the triangle meshes: the cloth grid (counts, +y normals, uvs, the checkerboard of
 * diagonals, conformity, bad arguments) and the OBJ loader (triangles, fanned polygons,
 * negative indices, the four corner forms, seams split into copies, ignored statements, CRLF,
 * long lines, every kind of broken file with its status and "path:line:" message, missing
 * files, a round trip of the grid through an OBJ file the test writes). */
#include "piola_test.h"
#include "scratch.h"

#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void test_tri_mesh_grid(piola_test *t);
void test_tri_mesh_grid_bad_arguments(piola_test *t);
void test_tri_mesh_free(piola_test *t);
void test_obj_load_triangles(piola_test *t);
void test_obj_load_polygons_fanned(piola_test *t);
void test_obj_load_negative_indices(piola_test *t);
void test_obj_load_corner_forms(piola_test *t);
void test_obj_load_seams_split(piola_test *t);
void test_obj_load_ignored_statements(piola_test *t);
void test_obj_load_crlf(piola_test *t);
void test_obj_load_long_lines(piola_test *t);
void test_obj_load_errors(piola_test *t);
void test_obj_load_missing_file(piola_test *t);
void test_obj_load_bad_arguments(piola_test *t);
void test_obj_grid_round_trip(piola_test *t);

static const piola_tri_mesh empty_mesh = {NULL, 0, NULL, 0, NULL};

/* ---- Checks ----------------------------------------------------------------------------------
 */

/* (x1 - x0) x (x2 - x0) of triangle i, in double. */
static void triangle_normal(const piola_tri_mesh *m, int32_t i, double n[3]) {
  const int32_t *v = m->triangles + 3 * (size_t)i;
  double e[2][3];
  for (int k = 0; k < 2; ++k) {
    for (int a = 0; a < 3; ++a) {
      e[k][a] = (double)m->positions[3 * (size_t)v[k + 1] + (size_t)a] -
                (double)m->positions[3 * (size_t)v[0] + (size_t)a];
    }
  }
  n[0] = e[0][1] * e[1][2] - e[0][2] * e[1][1];
  n[1] = e[0][2] * e[1][0] - e[0][0] * e[1][2];
  n[2] = e[0][0] * e[1][1] - e[0][1] * e[1][0];
}

static bool indices_valid(const piola_tri_mesh *m) {
  for (size_t i = 0; i < 3 * (size_t)m->triangle_count; ++i) {
    if (m->triangles[i] < 0 || m->triangles[i] >= m->vertex_count) {
      return false;
    }
  }
  return true;
}

typedef struct edge_key {
  int32_t a, b; /* a < b */
} edge_key;

static int compare_edges(const void *x, const void *y) {
  const edge_key *p = x, *q = y;
  if (p->a != q->a) {
    return p->a < q->a ? -1 : 1;
  }
  return p->b < q->b ? -1 : p->b > q->b;
}

typedef struct edge_report {
  int64_t edges;    /* distinct edges */
  int64_t boundary; /* edges of one triangle */
  int64_t overused; /* edges of more than two triangles */
} edge_report;

static bool analyse_edges(const piola_tri_mesh *m, edge_report *r) {
  size_t n = 3 * (size_t)m->triangle_count;
  edge_key *keys = malloc(n * sizeof *keys);
  memset(r, 0, sizeof *r);
  if (keys == NULL) {
    return false;
  }
  for (size_t i = 0; i < (size_t)m->triangle_count; ++i) {
    for (int k = 0; k < 3; ++k) {
      int32_t a = m->triangles[3 * i + (size_t)k], b = m->triangles[3 * i + (size_t)(k + 1) % 3];
      keys[3 * i + (size_t)k].a = a < b ? a : b;
      keys[3 * i + (size_t)k].b = a < b ? b : a;
    }
  }
  qsort(keys, n, sizeof *keys, compare_edges);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && keys[j].a == keys[i].a && keys[j].b == keys[i].b) {
      ++j;
    }
    r->edges++;
    r->boundary += j - i == 1;
    r->overused += j - i > 2;
    i = j;
  }
  free(keys);
  return true;
}

/* ---- Grid ------------------------------------------------------------------------------------
 */

static void check_grid(piola_test *t, int32_t nx, int32_t nz, float sx, float sz) {
  const int32_t cells[2] = {nx, nz};
  const float size[2] = {sx, sz};
  piola_tri_mesh m = empty_mesh;
  REQUIRE_OK(t, piola_mesh_make_grid(cells, size, &m));
  CHECK(t, m.vertex_count == (nx + 1) * (nz + 1));
  CHECK(t, m.triangle_count == 2 * nx * nz);
  REQUIRE(t, m.uvs != NULL && m.vertex_count == (nx + 1) * (nz + 1) &&
                 m.triangle_count == 2 * nx * nz);
  REQUIRE(t, indices_valid(&m));

  /* Grid order, x fastest, in the plane y = 0 from the origin to (sx, 0, sz); uv = (x/sx,
   * z/sz), exactly 0 and 1 on the sides. */
  int32_t off_grid = 0, bad_uv = 0;
  for (int32_t k = 0; k <= nz; ++k) {
    for (int32_t i = 0; i <= nx; ++i) {
      const size_t v = (size_t)i + (size_t)(nx + 1) * (size_t)k;
      const float *p = m.positions + 3 * v, *uv = m.uvs + 2 * v;
      off_grid += fabs(p[0] - sx * (double)i / nx) > 1e-6 * sx || p[1] != 0.0f ||
                  fabs(p[2] - sz * (double)k / nz) > 1e-6 * sz;
      bad_uv += fabs(uv[0] - (double)i / nx) > 1e-7 || fabs(uv[1] - (double)k / nz) > 1e-7 ||
                !(uv[0] >= 0.0f && uv[0] <= 1.0f && uv[1] >= 0.0f && uv[1] <= 1.0f);
    }
  }
  CHECK_MSG(t, off_grid == 0, "%d vertices off the grid", (int)off_grid);
  CHECK_MSG(t, bad_uv == 0, "%d vertices with wrong uvs", (int)bad_uv);
  const float *last = m.positions + 3 * (size_t)(m.vertex_count - 1);
  CHECK(t, m.positions[0] == 0.0f && m.positions[2] == 0.0f);
  CHECK(t, last[0] == sx && last[2] == sz);
  const float *last_uv = m.uvs + 2 * (size_t)(m.vertex_count - 1);
  CHECK(t, m.uvs[0] == 0.0f && m.uvs[1] == 0.0f && last_uv[0] == 1.0f && last_uv[1] == 1.0f);

  /* Every normal is +y; the areas add up to the rectangle's. */
  int32_t not_up = 0;
  double area = 0.0;
  for (int32_t i = 0; i < m.triangle_count; ++i) {
    double n[3];
    triangle_normal(&m, i, n);
    not_up += !(n[1] > 0.0) || n[0] != 0.0 || n[2] != 0.0;
    area += 0.5 * n[1];
  }
  CHECK_MSG(t, not_up == 0, "%d triangles not facing +y", (int)not_up);
  CHECK_NEAR(t, area, (double)sx * sz, 1e-5 * sx * sz);

  /* Square (i, k) owns triangles 2 s and 2 s + 1 (s = i + nx k); their shared edge is the
   * diagonal (i, k)-(i+1, k+1) when i + k is even, (i+1, k)-(i, k+1) when odd. */
  int32_t wrong_diagonal = 0, foreign = 0;
  for (int32_t k = 0; k < nz; ++k) {
    for (int32_t i = 0; i < nx; ++i) {
      const int32_t s = i + nx * k;
      const int32_t a = i + (nx + 1) * k, b = a + 1, c = a + nx + 1, d = c + 1;
      const int32_t *tri = m.triangles + 6 * (size_t)s;
      int32_t shared[2], count = 0;
      for (int p = 0; p < 3; ++p) {
        foreign += tri[p] != a && tri[p] != b && tri[p] != c && tri[p] != d;
        foreign += tri[3 + p] != a && tri[3 + p] != b && tri[3 + p] != c && tri[3 + p] != d;
        for (int q = 0; q < 3; ++q) {
          if (tri[p] == tri[3 + q] && count < 2) {
            shared[count++] = tri[p];
          }
        }
      }
      const bool even = ((i + k) & 1) == 0;
      const int32_t lo = shared[0] < shared[1] ? shared[0] : shared[1];
      const int32_t hi = shared[0] < shared[1] ? shared[1] : shared[0];
      wrong_diagonal += count != 2 || (even ? (lo != a || hi != d) : (lo != b || hi != c));
    }
  }
  CHECK_MSG(t, foreign == 0, "%d corners outside their square", (int)foreign);
  CHECK_MSG(t, wrong_diagonal == 0, "%d squares with the wrong diagonal", (int)wrong_diagonal);

  /* Conforming disk: edges of one or two triangles, Euler characteristic 1, and the boundary is
   * the rectangle's 2 (nx + nz) edges. */
  edge_report edges;
  REQUIRE(t, analyse_edges(&m, &edges));
  CHECK(t, edges.overused == 0);
  CHECK(t, edges.boundary == 2 * (nx + nz));
  CHECK(t, m.vertex_count - edges.edges + m.triangle_count == 1);
  piola_tri_mesh_free(&m);
}

void test_tri_mesh_grid(piola_test *t) {
  check_grid(t, 1, 1, 1.0f, 1.0f);
  check_grid(t, 2, 2, 1.0f, 1.0f);
  check_grid(t, 5, 3, 2.0f, 0.75f);
  check_grid(t, 1, 7, 0.01f, 0.3f);
  check_grid(t, 16, 16, 1.7f, 1.7f);

  /* With an even number of squares the two diagonal directions are used equally often. */
  const int32_t cells[2] = {4, 6};
  const float size[2] = {1.0f, 1.0f};
  piola_tri_mesh m = empty_mesh;
  REQUIRE_OK(t, piola_mesh_make_grid(cells, size, &m));
  int32_t rising = 0; /* squares whose two triangles both hold corners (i, k) and (i+1, k+1) */
  for (int32_t sq = 0; sq < 24; ++sq) {
    const int32_t i = sq % 4, k = sq / 4, a = i + 5 * k, d = a + 6;
    bool both = true;
    for (int h = 0; h < 2; ++h) {
      const int32_t *tri = m.triangles + 6 * (size_t)sq + 3 * (size_t)h;
      bool has_a = tri[0] == a || tri[1] == a || tri[2] == a;
      bool has_d = tri[0] == d || tri[1] == d || tri[2] == d;
      both = both && has_a && has_d;
    }
    rising += both;
  }
  CHECK_MSG(t, rising == 12, "%d of 24 squares split along (i, k)-(i+1, k+1)", (int)rising);
  piola_tri_mesh_free(&m);
}

void test_tri_mesh_grid_bad_arguments(piola_test *t) {
  const int32_t cells[2] = {2, 2};
  const float size[2] = {1, 1};
  float dummy[3] = {0, 0, 0};
  piola_tri_mesh m = {dummy, 5, NULL, 6, dummy};
  CHECK_STATUS(t, piola_mesh_make_grid(NULL, size, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_make_grid(cells, NULL, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_make_grid(cells, size, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  static const int32_t bad_cells[][2] = {
      {0, 1},
      {1, -1},
      {INT32_MIN, 1},
      {INT32_MAX, INT32_MAX},
      {(1 << 30) - 1, 1}, /* 2^31 vertices */
      {1 << 15, 1 << 15}, /* (2^15 + 1)^2 vertices */
      {23171, 23171},     /* 536,941,584 vertices fit, 1,073,790,482 triangles do not */
  };
  for (size_t i = 0; i < sizeof bad_cells / sizeof bad_cells[0]; ++i) {
    CHECK_STATUS(t, piola_mesh_make_grid(bad_cells[i], size, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  }
  static const float bad_sizes[][2] = {{0, 1}, {1, -1}, {-0.0f, 1}};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; ++i) {
    CHECK_STATUS(t, piola_mesh_make_grid(cells, bad_sizes[i], &m), PIOLA_ERROR_INVALID_ARGUMENT);
  }
  const float nan_size[2] = {NAN, 1};
  const float inf_size[2] = {1, -INFINITY};
  CHECK_STATUS(t, piola_mesh_make_grid(cells, nan_size, &m), PIOLA_ERROR_NON_FINITE);
  CHECK_STATUS(t, piola_mesh_make_grid(cells, inf_size, &m), PIOLA_ERROR_NON_FINITE);
  CHECK(t, m.positions == dummy && m.vertex_count == 5 && m.triangles == NULL &&
               m.triangle_count == 6 && m.uvs == dummy);
}

void test_tri_mesh_free(piola_test *t) {
  piola_tri_mesh_free(NULL);
  piola_tri_mesh m = empty_mesh;
  piola_tri_mesh_free(&m); /* an empty mesh */
  const int32_t cells[2] = {1, 1};
  const float size[2] = {1, 1};
  REQUIRE_OK(t, piola_mesh_make_grid(cells, size, &m));
  CHECK(t, m.positions != NULL && m.triangles != NULL && m.uvs != NULL);
  piola_tri_mesh_free(&m);
  CHECK(t, m.positions == NULL && m.vertex_count == 0 && m.triangles == NULL &&
               m.triangle_count == 0 && m.uvs == NULL);
}

/* ---- OBJ: valid files ------------------------------------------------------------------------
 */

/* Loads `text` written to a scratch file; the status, with the message in log. */
static piola_status load_text(scratch *s, const char *text, size_t len, piola_test_log *log,
                              piola_tri_mesh *out) {
  const char *path = scratch_write(s, "mesh.obj", text, len);
  if (path == NULL) {
    return PIOLA_ERROR_IO;
  }
  piola_logger logger = piola_test_logger(log);
  return piola_mesh_load_obj_logged(path, &logger, out);
}

/* Whether corner c of the mesh has position xyz and (when uv != NULL) texture coordinate uv. */
static bool corner_is(const piola_tri_mesh *m, int32_t c, const float xyz[3], const float *uv) {
  const int32_t v = m->triangles[c];
  if (v < 0 || v >= m->vertex_count ||
      memcmp(m->positions + 3 * (size_t)v, xyz, 3 * sizeof(float)) != 0) {
    return false;
  }
  return uv == NULL ||
         (m->uvs != NULL && memcmp(m->uvs + 2 * (size_t)v, uv, 2 * sizeof(float)) == 0);
}

static const float square_positions[12] = {0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1};

void test_obj_load_triangles(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  piola_test_log log;
  piola_tri_mesh m = empty_mesh;
  REQUIRE_OK(t, load_text(&s,
                          "# a unit square, two triangles facing +y\n"
                          "v 0 0 0\nv 1.0 0 0\nv 1 0.0 1e0\nv 0 0 +1\n"
                          "f 1 3 2\nf 1 4 3\n",
                          0, &log, &m));
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0 && log.count[PIOLA_LOG_WARNING] == 0);
  CHECK(t, m.vertex_count == 4 && m.triangle_count == 2 && m.uvs == NULL);
  if (m.vertex_count == 4 && m.triangle_count == 2) {
    static const int32_t expected[6] = {0, 2, 1, 0, 3, 2};
    CHECK(t, memcmp(m.positions, square_positions, sizeof square_positions) == 0);
    CHECK(t, memcmp(m.triangles, expected, sizeof expected) == 0);
    for (int32_t i = 0; i < 2; ++i) {
      double n[3];
      triangle_normal(&m, i, n);
      CHECK(t, n[1] > 0.0); /* the file's winding is kept */
    }
  }
  piola_tri_mesh_free(&m);

  /* A zero-area triangle with three distinct vertices is kept (as flat tets are). */
  REQUIRE_OK(t, load_text(&s, "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n", 0, &log, &m));
  CHECK(t, m.triangle_count == 1 && m.vertex_count == 3);
  piola_tri_mesh_free(&m);
  scratch_close(&s);
}

void test_obj_load_polygons_fanned(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  piola_test_log log;
  piola_tri_mesh m = empty_mesh;
  /* A quad, then a convex hexagon in the plane y = 1 (both counter-clockwise seen from +y). */
  REQUIRE_OK(t, load_text(&s,
                          "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\n"
                          "v 2 1 0\nv 3 1 0\nv 4 1 1\nv 3 1 2\nv 2 1 2\nv 1 1 1\n"
                          "f 1 4 3 2\n"
                          "f 5 10 9 8 7 6\n",
                          0, &log, &m));
  CHECK(t, m.vertex_count == 10);
  REQUIRE(t, m.triangle_count == 2 + 4);
  static const int32_t expected[18] = {0, 3, 2, 0, 2, 1, 4, 9, 8, 4, 8, 7, 4, 7, 6, 4, 6, 5};
  CHECK(t, memcmp(m.triangles, expected, sizeof expected) == 0);
  double area = 0.0;
  int32_t not_up = 0;
  for (int32_t i = 0; i < m.triangle_count; ++i) {
    double n[3];
    triangle_normal(&m, i, n);
    not_up += !(n[1] > 0.0);
    area += 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  }
  CHECK(t, not_up == 0);
  CHECK_NEAR(t, area, 1.0 + 4.0, 1e-12); /* the unit square and the hexagon's area 4 */
  piola_tri_mesh_free(&m);
  scratch_close(&s);
}

void test_obj_load_negative_indices(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  piola_test_log log;
  piola_tri_mesh m = empty_mesh;
  /* Relative indices count back from the last element defined before the face. */
  REQUIRE_OK(t, load_text(&s,
                          "v 0 0 0\nv 1 0 0\nv 1 0 1\n"
                          "vt 0 0\nvt 1 0\nvt 1 1\n"
                          "f -3/-3 -1/-1 -2/-2\n"
                          "v 0 0 1\nvt 0 1\n"
                          "f -4/-4 -1/-1 -2/-2\n"
                          "f 1/1 -1/-1 3/3\n",
                          0, &log, &m));
  REQUIRE(t, m.vertex_count == 4 && m.triangle_count == 3 && m.uvs != NULL);
  static const int32_t expected[9] = {0, 2, 1, 0, 3, 2, 0, 3, 2};
  CHECK(t, memcmp(m.triangles, expected, sizeof expected) == 0);
  static const float uvs[8] = {0, 0, 1, 0, 1, 1, 0, 1};
  CHECK(t, memcmp(m.uvs, uvs, sizeof uvs) == 0);
  CHECK(t, memcmp(m.positions, square_positions, sizeof square_positions) == 0);
  piola_tri_mesh_free(&m);
  scratch_close(&s);
}

void test_obj_load_corner_forms(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  piola_test_log log;
  piola_tri_mesh m = empty_mesh;
  static const char *const head = "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\n"
                                  "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
                                  "vn 0 1 0\n";
  static const char *const faces[4] = {"f 1 3 2\nf 1 4 3\n", "f 1/1 3/3 2/2\nf 1/1 4/4 3/3\n",
                                       "f 1//1 3//1 2//1\nf 1//1 4//1 3//1\n",
                                       "f 1/1/1 3/3/1 2/2/1\nf 1/1/1 4/4/1 3/3/1\n"};
  static const int32_t expected[6] = {0, 2, 1, 0, 3, 2};
  static const float uvs[8] = {0, 0, 1, 0, 1, 1, 0, 1};
  for (int form = 0; form < 4; ++form) {
    char text[256];
    snprintf(text, sizeof text, "%s%s", head, faces[form]);
    piola_status status = load_text(&s, text, 0, &log, &m);
    CHECK_MSG(t, status == PIOLA_OK, "form %d: '%s' (%s)", form, piola_status_string(status),
              log.last);
    if (status != PIOLA_OK) {
      continue;
    }
    const bool textured = form == 1 || form == 3;
    CHECK_MSG(t, m.vertex_count == 4 && m.triangle_count == 2, "form %d: %d vertices", form,
              (int)m.vertex_count);
    CHECK_MSG(t, (m.uvs != NULL) == textured, "form %d: uvs %s", form,
              m.uvs != NULL ? "present" : "NULL");
    if (m.vertex_count == 4 && m.triangle_count == 2) {
      CHECK(t, memcmp(m.triangles, expected, sizeof expected) == 0);
      CHECK(t, memcmp(m.positions, square_positions, sizeof square_positions) == 0);
      CHECK(t, !textured || (m.uvs != NULL && memcmp(m.uvs, uvs, sizeof uvs) == 0));
    }
    piola_tri_mesh_free(&m);
  }
  scratch_close(&s);
}

/* A strip of two squares whose texture is cut along the middle edge (v2-v5): the left square
 * maps the edge to u = 1, the right one to other uvs, so v2 and v5 are split. */
void test_obj_load_seams_split(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  piola_test_log log;
  piola_tri_mesh m = empty_mesh;
  static const float pos[6][3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {0, 0, 1}, {1, 0, 1}, {2, 0, 1}};
  static const float tex[6][2] = {{0.25f, 0.125f}, {1, 0}, {0, 1}, {1, 1}, {0.5f, 0}, {0.5f, 1}};
  REQUIRE_OK(t, load_text(&s,
                          "v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 0 1\nv 1 0 1\nv 2 0 1\n"
                          "vt 0.25 0.125\nvt 1 0\nvt 0 1\nvt 1 1\nvt 0.5 0\nvt 0.5 1\n"
                          "f 1/1 5/4 2/2\nf 1/1 4/3 5/4\n" /* left: v2, v5 at u = 1 */
                          "f 2/1 6/6 3/5\n"                /* right: v2, v5 at u = 0 */
                          "f 2/1 5/3 6/6\n",
                          0, &log, &m));
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0);
  /* The 6 file vertices, then the copies of v2 (first used with vt 1) and v5 (vt 3). */
  CHECK_MSG(t, m.vertex_count == 8, "%d vertices", (int)m.vertex_count);
  REQUIRE(t, m.vertex_count == 8 && m.triangle_count == 4 && m.uvs != NULL);
  CHECK(t, memcmp(m.positions, pos, sizeof pos) == 0);
  CHECK(t, memcmp(m.positions + 3 * 6, pos[1], sizeof pos[1]) == 0);
  CHECK(t, memcmp(m.positions + 3 * 7, pos[4], sizeof pos[4]) == 0);
  static const int32_t expected[12] = {0, 4, 1, 0, 3, 4, 6, 5, 2, 6, 7, 5};
  CHECK(t, memcmp(m.triangles, expected, sizeof expected) == 0);
  /* Every corner has the position and uv the file gave it. */
  static const int file_corners[12][2] = {{1, 1}, {5, 4}, {2, 2}, {1, 1}, {4, 3}, {5, 4},
                                          {2, 1}, {6, 6}, {3, 5}, {2, 1}, {5, 3}, {6, 6}};
  int32_t wrong = 0;
  for (int32_t c = 0; c < 12; ++c) {
    wrong += !corner_is(&m, c, pos[file_corners[c][0] - 1], tex[file_corners[c][1] - 1]);
  }
  CHECK_MSG(t, wrong == 0, "%d corners lost their position or uv", (int)wrong);
  piola_tri_mesh_free(&m);

  /* The same pair used again maps to the same vertex: no copy without a seam. */
  REQUIRE_OK(t, load_text(&s,
                          "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
                          "f 1/1 3/3 2/2\nf 1/1 4/4 3/3\nf 1/1 4/4 3/3\n",
                          0, &log, &m));
  CHECK(t, m.vertex_count == 4 && m.triangle_count == 3);
  piola_tri_mesh_free(&m);

  /* A triangle soup in uv space: every corner of a 7 x 4 grid has its own vt, so every corner
   * becomes its own vertex (168, far beyond the first size of the loader's pair table). */
  const int32_t cells[2] = {7, 4};
  const float size[2] = {1.0f, 0.5f};
  piola_tri_mesh grid = empty_mesh;
  REQUIRE_OK(t, piola_mesh_make_grid(cells, size, &grid));
  const char *path = scratch_path(&s, "soup.obj");
  FILE *f = path != NULL ? fopen(path, "wb") : NULL;
  bool written = f != NULL;
  for (int32_t v = 0; written && v < grid.vertex_count; ++v) {
    const float *p = grid.positions + 3 * (size_t)v;
    written = fprintf(f, "v %.9g %.9g %.9g\n", (double)p[0], (double)p[1], (double)p[2]) > 0;
  }
  const int32_t corner_count = 3 * grid.triangle_count;
  for (int32_t c = 0; written && c < corner_count; ++c) {
    const float *uv = grid.uvs + 2 * (size_t)grid.triangles[c];
    written = fprintf(f, "vt %.9g %.9g\n", (double)uv[0], (double)uv[1]) > 0;
  }
  for (int32_t c = 0; written && c < corner_count; c += 3) {
    const int32_t *tri = grid.triangles + c;
    written = fprintf(f, "f %d/%d %d/%d %d/%d\n", (int)tri[0] + 1, (int)c + 1, (int)tri[1] + 1,
                      (int)c + 2, (int)tri[2] + 1, (int)c + 3) > 0;
  }
  written = f != NULL && fclose(f) == 0 && written;
  CHECK(t, written);
  if (written) {
    CHECK_STATUS(t, piola_mesh_load_obj(path, &m), PIOLA_OK);
    CHECK_MSG(t, m.vertex_count == corner_count, "%d vertices", (int)m.vertex_count);
    if (m.vertex_count == corner_count && m.triangle_count == grid.triangle_count) {
      int32_t *uses = calloc((size_t)corner_count, sizeof *uses);
      int32_t wrong_corners = 0, reused = 0;
      for (int32_t c = 0; uses != NULL && c < corner_count; ++c) {
        const int32_t g = grid.triangles[c];
        wrong_corners +=
            !corner_is(&m, c, grid.positions + 3 * (size_t)g, grid.uvs + 2 * (size_t)g);
        reused += uses[m.triangles[c]]++ > 0;
      }
      CHECK(t, uses != NULL);
      CHECK_MSG(t, wrong_corners == 0, "%d corners lost their position or uv", (int)wrong_corners);
      CHECK_MSG(t, reused == 0, "%d vertices shared by corners with different vt", (int)reused);
      /* The file's vertices keep their numbers: the first corner keeps vertex triangles[0]. */
      CHECK(t, m.triangles[0] == grid.triangles[0]);
      free(uses);
    }
    piola_tri_mesh_free(&m);
  }
  piola_tri_mesh_free(&grid);
  scratch_close(&s);
}

void test_obj_load_ignored_statements(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  piola_test_log log;
  piola_tri_mesh m = empty_mesh;
  REQUIRE_OK(t, load_text(&s,
                          "# exported by hand\n"
                          "mtllib cloth.mtl\n"
                          "o Cloth\n"
                          "g front back\n"
                          "\n"
                          "v 0 0 0 1.0\n"           /* w */
                          "v 1 0 0 0.5 0.5 0.5\n"   /* vertex colour */
                          "v 1 0 1   # a comment\n" /* trailing comment */
                          "v 0 0 1\n"
                          "v 9 9 9\n" /* used by no face */
                          "\tvt 0.25\n"
                          "vt 0.5 0.5 0\n"
                          "vt 1 1\n"
                          "vn 0 1 0\n"
                          "vn 0 -1 0\n"
                          "usemtl red\n"
                          "s 1\n"
                          "s off\n"
                          "l 1 2\n"
                          "p 3\n"
                          "f 1/1/2 3/3/1 2/2/1\n"
                          "   \n"
                          "f 1/1/1 4/3/1 3/3/2 # more\n",
                          0, &log, &m));
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0 && log.count[PIOLA_LOG_WARNING] == 0);
  REQUIRE(t, m.vertex_count == 5 && m.triangle_count == 2 && m.uvs != NULL);
  static const int32_t expected[6] = {0, 2, 1, 0, 3, 2};
  CHECK(t, memcmp(m.triangles, expected, sizeof expected) == 0);
  CHECK(t, memcmp(m.positions, square_positions, sizeof square_positions) == 0);
  /* vt 0.25 has v = 0; the unused vertex 5 gets uv (0, 0). */
  static const float uvs[10] = {0.25f, 0, 0.5f, 0.5f, 1, 1, 1, 1, 0, 0};
  CHECK(t, memcmp(m.uvs, uvs, sizeof uvs) == 0);
  CHECK(t, m.positions[12] == 9.0f && m.positions[13] == 9.0f && m.positions[14] == 9.0f);
  piola_tri_mesh_free(&m);
  scratch_close(&s);
}

void test_obj_load_crlf(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  piola_test_log log;
  piola_tri_mesh m = empty_mesh;
  REQUIRE_OK(t, load_text(&s,
                          "\xEF\xBB\xBF# written on Windows\r\n"
                          "v 0 0 0\r\nv 1 0 0\r\nv 1 0 1\r\nv 0 0 1\r\n"
                          "\r\n"
                          "vt 0 0\r\nvt 1 0\r\nvt 1 1\r\nvt 0 1\r\n"
                          "f 1/1 3/3 2/2\r\nf 1/1 4/4 3/3",
                          0, &log, &m));
  REQUIRE(t, m.vertex_count == 4 && m.triangle_count == 2 && m.uvs != NULL);
  static const int32_t expected[6] = {0, 2, 1, 0, 3, 2};
  static const float uvs[8] = {0, 0, 1, 0, 1, 1, 0, 1};
  CHECK(t, memcmp(m.triangles, expected, sizeof expected) == 0);
  CHECK(t, memcmp(m.positions, square_positions, sizeof square_positions) == 0);
  CHECK(t, memcmp(m.uvs, uvs, sizeof uvs) == 0);
  piola_tri_mesh_free(&m);

  /* An error on a CRLF line names the right line. */
  CHECK_STATUS(t, load_text(&s, "v 0 0 0\r\nv 1 0 0\r\nv 1 0 q\r\nf 1 2 3\r\n", 0, &log, &m),
               PIOLA_ERROR_PARSE);
  CHECK_MSG(t, strstr(log.last, "mesh.obj:3: malformed z coordinate 'q'") != NULL, "message: %s",
            log.last);
  scratch_close(&s);
}

/* A face of 40000 corners on one line (about 240 kB, beyond the reader's 64 KiB chunks) after a
 * comment line of 1 MB. The polygon: the origin, then (1, 0, -i) for i = 1..39999, so each
 * triangle of the fan has (x1 - x0) x (x2 - x0) = (0, 1, 0) exactly. */
void test_obj_load_long_lines(piola_test *t) {
  enum { corners = 40000 };
  size_t cap = (size_t)corners * 32 + (1u << 20) + 256;
  char *text = malloc(cap);
  REQUIRE(t, text != NULL);
  size_t n = 0;
  text[n++] = '#';
  memset(text + n, 'c', 1u << 20);
  n += 1u << 20;
  n += (size_t)snprintf(text + n, cap - n, "\nv 0 0 0\n");
  for (int i = 1; i < corners; ++i) {
    n += (size_t)snprintf(text + n, cap - n, "v 1 0 -%d\n", i);
  }
  text[n++] = 'f';
  for (int i = 0; i < corners; ++i) {
    n += (size_t)snprintf(text + n, cap - n, " %d", i + 1);
  }
  text[n++] = '\n';
  scratch s;
  bool opened = scratch_open(&s);
  piola_test_log log;
  piola_tri_mesh m = empty_mesh;
  piola_status status = opened ? load_text(&s, text, n, &log, &m) : PIOLA_ERROR_IO;
  free(text);
  REQUIRE(t, opened);
  CHECK_MSG(t, status == PIOLA_OK, "'%s': %s", piola_status_string(status), log.last);
  CHECK(t, m.vertex_count == corners && m.triangle_count == corners - 2);
  if (status == PIOLA_OK && m.triangle_count == corners - 2) {
    int32_t not_fan = 0, not_up = 0;
    for (int32_t i = 0; i < m.triangle_count; ++i) {
      const int32_t *tri = m.triangles + 3 * (size_t)i;
      not_fan += tri[0] != 0 || tri[1] != i + 1 || tri[2] != i + 2;
      double nrm[3];
      triangle_normal(&m, i, nrm);
      not_up += nrm[0] != 0.0 || nrm[1] != 1.0 || nrm[2] != 0.0;
    }
    CHECK_MSG(t, not_fan == 0, "%d triangles not in fan order", (int)not_fan);
    CHECK_MSG(t, not_up == 0, "%d triangles not (0, 1, 0)", (int)not_up);
  }
  piola_tri_mesh_free(&m);
  scratch_close(&s);
}

/* ---- OBJ: broken files -----------------------------------------------------------------------
 */

#define TRIANGLE_V "v 0 0 0\nv 1 0 0\nv 0 0 1\n"
#define TRIANGLE_VT "vt 0 0\nvt 1 0\nvt 0 1\n"
#define NUL_TEXT "v 0 0 0\nv 1\0 0 0\nv 0 0 1\nf 1 2 3\n"

typedef struct obj_broken_case {
  const char *what;
  const char *text;
  size_t len; /* 0: strlen */
  piola_status expected;
  int line;          /* the line the message must name */
  const char *words; /* NULL or a phrase the message must hold */
} obj_broken_case;

static const obj_broken_case obj_broken_cases[] = {
    {"malformed coordinate", TRIANGLE_V "v 1 x 0\nf 1 2 3\n", 0, PIOLA_ERROR_PARSE, 4,
     "malformed y coordinate 'x'"},
    {"junk after a number", "v 0 0 0.5abc\nv 1 0 0\nv 0 0 1\nf 1 2 3\n", 0, PIOLA_ERROR_PARSE, 1,
     "malformed z coordinate"},
    {"decimal comma", "v 0 0 0\nv 1,5 0 0\nv 0 0 1\nf 1 2 3\n", 0, PIOLA_ERROR_PARSE, 2, "'1,5'"},
    {"two coordinates", "v 0 0 0\nv 1 0\nv 0 0 1\nf 1 2 3\n", 0, PIOLA_ERROR_PARSE, 2,
     "expected 'v x y z [w]'"},
    {"five numbers", "v 0 0 0 1 1\nv 1 0 0\nv 0 0 1\nf 1 2 3\n", 0, PIOLA_ERROR_PARSE, 1,
     "found 5 numbers"},
    {"malformed w", "v 0 0 0 w\nv 1 0 0\nv 0 0 1\nf 1 2 3\n", 0, PIOLA_ERROR_PARSE, 1,
     "malformed w coordinate"},
    {"NaN coordinate", "v 0 0 0\n\nv nan 0 0\nv 0 0 1\nf 1 2 3\n", 0, PIOLA_ERROR_NON_FINITE, 3,
     "x coordinate 'nan' is not a finite float"},
    {"infinite coordinate", TRIANGLE_V "v 0 -inf 0\nf 1 2 3\n", 0, PIOLA_ERROR_NON_FINITE, 4, NULL},
    {"coordinate beyond float", "v 0 0 1e39\nv 1 0 0\nv 0 0 1\nf 1 2 3\n", 0,
     PIOLA_ERROR_NON_FINITE, 1, NULL},
    {"non-finite texture coordinate", TRIANGLE_V "vt 0 inf\nf 1/1 2/1 3/1\n", 0,
     PIOLA_ERROR_NON_FINITE, 4, "v coordinate"},
    {"malformed texture coordinate", TRIANGLE_V "vt 0 zero\nf 1/1 2/1 3/1\n", 0, PIOLA_ERROR_PARSE,
     4, "malformed v coordinate"},
    {"empty vt", TRIANGLE_V "vt\nf 1 2 3\n", 0, PIOLA_ERROR_PARSE, 4, "expected 'vt u [v [w]]'"},
    {"four numbers in vt", TRIANGLE_V "vt 0 0 0 0\nf 1 2 3\n", 0, PIOLA_ERROR_PARSE, 4, NULL},
    {"index 0", TRIANGLE_V "f 0 1 2\n", 0, PIOLA_ERROR_PARSE, 4, "vertex index 0"},
    {"texture index 0", TRIANGLE_V TRIANGLE_VT "f 1/0 2/1 3/2\n", 0, PIOLA_ERROR_PARSE, 7,
     "texture coordinate index 0"},
    {"index too large", TRIANGLE_V "# faces\nf 1 2 4\n", 0, PIOLA_ERROR_INVALID_MESH, 5,
     "vertex index '4' out of range: 3 vertices defined before this line"},
    {"relative index too far back", TRIANGLE_V "f -1 -2 -4\n", 0, PIOLA_ERROR_INVALID_MESH, 4,
     "'-4' out of range"},
    {"vertex defined after its face", "v 0 0 0\nv 1 0 0\nf 1 2 3\nv 0 0 1\n", 0,
     PIOLA_ERROR_INVALID_MESH, 3, "2 vertices defined before this line"},
    {"texture index too large", TRIANGLE_V TRIANGLE_VT "f 1/1 2/2 3/4\n", 0,
     PIOLA_ERROR_INVALID_MESH, 7, "texture coordinate index '4' out of range"},
    {"normal index too large", TRIANGLE_V "vn 0 1 0\nf 1//1 2//1 3//2\n", 0,
     PIOLA_ERROR_INVALID_MESH, 5, "normal index '2' out of range: 1 normal defined"},
    {"normal without vn", TRIANGLE_V "f 1//1 2//1 3//1\n", 0, PIOLA_ERROR_INVALID_MESH, 4,
     "normal index"},
    {"index beyond 64 bits", TRIANGLE_V "f 1 2 99999999999999999999999\n", 0,
     PIOLA_ERROR_INVALID_MESH, 4, "99999999999999999999999"},
    {"negative index beyond 64 bits", TRIANGLE_V "f 1 2 -99999999999999999999999\n", 0,
     PIOLA_ERROR_INVALID_MESH, 4, NULL},
    {"malformed index", TRIANGLE_V "f 1 2 three\n", 0, PIOLA_ERROR_PARSE, 4,
     "malformed vertex index 'three'"},
    {"fractional index", TRIANGLE_V "f 1 2.0 3\n", 0, PIOLA_ERROR_PARSE, 4, NULL},
    {"two corners", TRIANGLE_V "f 1 2\n", 0, PIOLA_ERROR_PARSE, 4,
     "face has 2 corners, needs at least 3"},
    {"no corners", TRIANGLE_V "f\n", 0, PIOLA_ERROR_PARSE, 4, "face has 0 corners"},
    {"corner ends in a slash", TRIANGLE_V TRIANGLE_VT "f 1/1 2/ 3/3\n", 0, PIOLA_ERROR_PARSE, 7,
     "malformed face corner '2/'"},
    {"corner with three slashes", TRIANGLE_V TRIANGLE_VT "f 1/1/1/1 2/2 3/3\n", 0,
     PIOLA_ERROR_PARSE, 7, "expected i, i/t, i//n or i/t/n"},
    {"corner without a vertex", TRIANGLE_V TRIANGLE_VT "f /1 2/2 3/3\n", 0, PIOLA_ERROR_PARSE, 7,
     NULL},
    {"empty normal", TRIANGLE_V "f 1// 2// 3//\n", 0, PIOLA_ERROR_PARSE, 4, NULL},
    {"faces with and without uvs", TRIANGLE_V TRIANGLE_VT "v 1 0 1\nf 1/1 2/2 3/3\n\nf 2 4 3\n", 0,
     PIOLA_ERROR_PARSE, 10,
     "has no texture coordinate but the first face corner of the file (line 8) has one"},
    {"faces without and with uvs", TRIANGLE_V TRIANGLE_VT "f 1 2 3\nf 1/1 2/2 3/3\n", 0,
     PIOLA_ERROR_PARSE, 8, "(line 7) has none"},
    {"a face with and without uvs", TRIANGLE_V TRIANGLE_VT "f 1/1 2 3/3\n", 0, PIOLA_ERROR_PARSE, 7,
     "face corner '2' has no texture coordinate"},
    {"repeated vertex", TRIANGLE_V "f 1 2 2\n", 0, PIOLA_ERROR_INVALID_MESH, 4,
     "uses vertex 2 twice"},
    {"repeated vertex, relative", TRIANGLE_V "f 1 2 -3\n", 0, PIOLA_ERROR_INVALID_MESH, 4,
     "uses vertex 1 twice"},
    {"quad folding back", TRIANGLE_V "v 1 0 1\nf 1 2 4 1\n", 0, PIOLA_ERROR_INVALID_MESH, 5,
     "triangle (corners 1, 3, 4 of the face) uses vertex 1 twice"},
    {"repeated vertex with two uvs", TRIANGLE_V TRIANGLE_VT "f 1/1 1/2 3/3\n", 0,
     PIOLA_ERROR_INVALID_MESH, 7, "twice"},
    {"no faces", TRIANGLE_V TRIANGLE_VT, 0, PIOLA_ERROR_INVALID_MESH, 7, "no faces"},
    {"empty file", "", 0, PIOLA_ERROR_INVALID_MESH, 1, "empty file"},
    {"only comments", "# nothing\n\n", 0, PIOLA_ERROR_INVALID_MESH, 3, "no faces"},
    {"only lines and points", TRIANGLE_V "l 1 2\np 3\n", 0, PIOLA_ERROR_INVALID_MESH, 6,
     "no faces"},
    {"NUL byte", NUL_TEXT, sizeof NUL_TEXT - 1, PIOLA_ERROR_PARSE, 2, "NUL byte"},
};

void test_obj_load_errors(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  for (size_t i = 0; i < sizeof obj_broken_cases / sizeof obj_broken_cases[0]; ++i) {
    const obj_broken_case *c = &obj_broken_cases[i];
    piola_test_log log;
    float dummy_positions[3] = {1, 2, 3};
    int32_t dummy_triangles[3] = {0, 0, 0};
    float dummy_uvs[2] = {4, 5};
    piola_tri_mesh m = {dummy_positions, 77, dummy_triangles, 88, dummy_uvs};
    piola_status status = load_text(&s, c->text, c->len > 0 ? c->len : strlen(c->text), &log, &m);
    CHECK_MSG(t, status == c->expected, "%s: returned '%s', expected '%s' (%s)", c->what,
              piola_status_string(status), piola_status_string(c->expected), log.last);
    CHECK_MSG(t,
              m.positions == dummy_positions && m.vertex_count == 77 &&
                  m.triangles == dummy_triangles && m.triangle_count == 88 && m.uvs == dummy_uvs,
              "%s: the output was changed", c->what);
    char where[64];
    snprintf(where, sizeof where, "mesh.obj:%d: ", c->line);
    piola_test_check_failure_message(t, c->what, &log, where, s.dir, c->words);
    if (status == PIOLA_OK) {
      piola_tri_mesh_free(&m);
    }
  }
  scratch_close(&s);
}

void test_obj_load_missing_file(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  const char *missing = scratch_path(&s, "missing.obj");
  REQUIRE(t, missing != NULL);
  piola_test_log log;
  piola_logger logger = piola_test_logger(&log);
  piola_tri_mesh m = empty_mesh;
  CHECK_STATUS(t, piola_mesh_load_obj_logged(missing, &logger, &m), PIOLA_ERROR_IO);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 1 && strstr(log.last, missing) != NULL &&
               strstr(log.last, "cannot open") != NULL);
  CHECK(t, m.positions == NULL && m.triangles == NULL && m.uvs == NULL);
  CHECK_STATUS(t, piola_mesh_load_obj(missing, &m), PIOLA_ERROR_IO);
  CHECK(t, m.positions == NULL && m.triangles == NULL && m.uvs == NULL);
#if !defined(_WIN32)
  /* A folder opens on POSIX but cannot be read. */
  logger = piola_test_logger(&log);
  CHECK_STATUS(t, piola_mesh_load_obj_logged(s.dir, &logger, &m), PIOLA_ERROR_IO);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 1 && strstr(log.last, s.dir) != NULL);
#endif
  scratch_close(&s);
}

void test_obj_load_bad_arguments(piola_test *t) {
  piola_tri_mesh m = empty_mesh;
  piola_test_log log;
  piola_logger logger = piola_test_logger(&log);
  CHECK_STATUS(t, piola_mesh_load_obj_logged(NULL, &logger, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_load_obj_logged("x.obj", &logger, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 2);
  CHECK_STATUS(t, piola_mesh_load_obj(NULL, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_load_obj_logged(NULL, NULL, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, m.positions == NULL && m.triangles == NULL && m.uvs == NULL);
}

/* ---- Round trip ------------------------------------------------------------------------------
 */

/* Writes a mesh as OBJ ("%.9g", exact for floats; "v/vt" corners when it has uvs); relative
 * indices when `relative`. The C locale must have '.' as its decimal point. */
static bool write_obj(const char *path, const piola_tri_mesh *m, bool relative) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    return false;
  }
  bool ok = fprintf(f, "# written by test_tri_mesh.c\n") > 0;
  for (int32_t v = 0; ok && v < m->vertex_count; ++v) {
    const float *p = m->positions + 3 * (size_t)v;
    ok = fprintf(f, "v %.9g %.9g %.9g\n", (double)p[0], (double)p[1], (double)p[2]) > 0;
  }
  for (int32_t v = 0; ok && m->uvs != NULL && v < m->vertex_count; ++v) {
    const float *uv = m->uvs + 2 * (size_t)v;
    ok = fprintf(f, "vt %.9g %.9g\n", (double)uv[0], (double)uv[1]) > 0;
  }
  for (int32_t i = 0; ok && i < m->triangle_count; ++i) {
    ok = fprintf(f, "f") > 0;
    for (int k = 0; ok && k < 3; ++k) {
      long index = (long)m->triangles[3 * (size_t)i + (size_t)k] + 1;
      if (relative) {
        index -= (long)m->vertex_count + 1;
      }
      ok = (m->uvs != NULL ? fprintf(f, " %ld/%ld", index, index) : fprintf(f, " %ld", index)) > 0;
    }
    ok = ok && fprintf(f, "\n") > 0;
  }
  return fclose(f) == 0 && ok;
}

static void check_same_mesh(piola_test *t, const piola_tri_mesh *a, const piola_tri_mesh *b) {
  CHECK(t, a->vertex_count == b->vertex_count && a->triangle_count == b->triangle_count);
  CHECK(t, (a->uvs == NULL) == (b->uvs == NULL));
  if (a->vertex_count != b->vertex_count || a->triangle_count != b->triangle_count) {
    return;
  }
  CHECK(t, memcmp(a->positions, b->positions, 3 * sizeof(float) * (size_t)a->vertex_count) == 0);
  CHECK(t,
        memcmp(a->triangles, b->triangles, 3 * sizeof(int32_t) * (size_t)a->triangle_count) == 0);
  if (a->uvs != NULL && b->uvs != NULL) {
    CHECK(t, memcmp(a->uvs, b->uvs, 2 * sizeof(float) * (size_t)a->vertex_count) == 0);
  }
}

void test_obj_grid_round_trip(piola_test *t) {
  const int32_t cells[2] = {7, 4};
  const float size[2] = {1.3f, 0.7f};
  piola_tri_mesh grid = empty_mesh;
  REQUIRE_OK(t, piola_mesh_make_grid(cells, size, &grid));
  for (int32_t v = 0; v < grid.vertex_count; ++v) { /* awkward floats, and lift it off y = 0 */
    grid.positions[3 * (size_t)v + 1] = (float)v / 3.0f - 1e-7f;
  }
  scratch s;
  REQUIRE(t, scratch_open(&s));
  const char *path = scratch_path(&s, "grid.obj");
  REQUIRE(t, path != NULL);
  for (int relative = 0; relative < 2; ++relative) {
    REQUIRE(t, write_obj(path, &grid, relative != 0));
    piola_tri_mesh back = empty_mesh;
    REQUIRE_OK(t, piola_mesh_load_obj(path, &back));
    check_same_mesh(t, &grid, &back);
    piola_tri_mesh_free(&back);
  }

  /* The same file read in a locale with a decimal comma, where one is installed. */
  REQUIRE(t, write_obj(path, &grid, false));
  const char *saved = setlocale(LC_NUMERIC, NULL);
  char previous[128];
  snprintf(previous, sizeof previous, "%s", saved != NULL ? saved : "C");
  static const char *const comma_locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                              "German_Germany.1252"};
  for (size_t i = 0; i < sizeof comma_locales / sizeof comma_locales[0]; ++i) {
    if (setlocale(LC_NUMERIC, comma_locales[i]) != NULL) {
      piola_tri_mesh back = empty_mesh;
      CHECK_STATUS(t, piola_mesh_load_obj(path, &back), PIOLA_OK);
      check_same_mesh(t, &grid, &back);
      piola_tri_mesh_free(&back);
      break;
    }
  }
  setlocale(LC_NUMERIC, previous);

  /* Without uvs: the loaded mesh has none. */
  float *uvs = grid.uvs;
  grid.uvs = NULL;
  REQUIRE(t, write_obj(path, &grid, false));
  piola_tri_mesh back = empty_mesh;
  REQUIRE_OK(t, piola_mesh_load_obj(path, &back));
  check_same_mesh(t, &grid, &back);
  CHECK(t, back.uvs == NULL);
  piola_tri_mesh_free(&back);
  grid.uvs = uvs;
  piola_tri_mesh_free(&grid);
  scratch_close(&s);
}
