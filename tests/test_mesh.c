/* Tests of the mesh module: the TetGen loader and writer (valid files, every kind of broken
 * file with its status and "file:line:" message, round trips, the Armadillo) and the
 * procedural box and creature (counts, orientation, conformity, connectivity, bounds,
 * determinism, bad arguments). Files go to a fresh temporary folder (scratch.h). */
#include "piola_test.h"
#include "scratch.h"

#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void test_mesh_load_zero_based(piola_test *t);
void test_mesh_load_one_based(piola_test *t);
void test_mesh_load_short_headers(piola_test *t);
void test_mesh_load_long_lines(piola_test *t);
void test_mesh_load_errors(piola_test *t);
void test_mesh_load_missing_file(piola_test *t);
void test_mesh_load_bad_arguments(piola_test *t);
void test_mesh_save_load_round_trip(piola_test *t);
void test_mesh_save_bad_arguments(piola_test *t);
void test_mesh_load_armadillo(piola_test *t);
void test_mesh_box(piola_test *t);
void test_mesh_box_bad_arguments(piola_test *t);
void test_mesh_creature(piola_test *t);
void test_mesh_creature_deterministic(piola_test *t);
void test_mesh_creature_bad_arguments(piola_test *t);
void test_mesh_free(piola_test *t);

/* ---- Mesh checks ------------------------------------------------------------------------------
 */

/* 6 times the signed volume of tet t: det[x1 - x0, x2 - x0, x3 - x0]. */
static double tet_det(const piola_tet_mesh *m, int32_t t) {
  const int32_t *v = m->tets + 4 * (size_t)t;
  double e[3][3];
  for (int k = 0; k < 3; ++k) {
    for (int a = 0; a < 3; ++a) {
      e[k][a] = (double)m->positions[3 * (size_t)v[k + 1] + (size_t)a] -
                (double)m->positions[3 * (size_t)v[0] + (size_t)a];
    }
  }
  return e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
         e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
         e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0]);
}

/* Whether every tet index is in range. */
static bool indices_valid(const piola_tet_mesh *m) {
  for (size_t i = 0; i < 4 * (size_t)m->tet_count; ++i) {
    if (m->tets[i] < 0 || m->tets[i] >= m->vertex_count) {
      return false;
    }
  }
  return true;
}

/* The largest number of tets sharing one vertex; *unused counts vertices in no tet. */
static int32_t max_vertex_degree(const piola_tet_mesh *m, int32_t *unused) {
  int32_t *degree = calloc((size_t)m->vertex_count, sizeof *degree);
  int32_t best = 0;
  *unused = 0;
  if (degree == NULL) {
    return -1;
  }
  for (size_t i = 0; i < 4 * (size_t)m->tet_count; ++i) {
    int32_t d = ++degree[m->tets[i]];
    best = d > best ? d : best;
  }
  for (int32_t v = 0; v < m->vertex_count; ++v) {
    *unused += degree[v] == 0;
  }
  free(degree);
  return best;
}

typedef struct face_key {
  int32_t v[3]; /* sorted */
  int32_t tet;
} face_key;

static int compare_faces(const void *a, const void *b) {
  const face_key *fa = a, *fb = b;
  for (int k = 0; k < 3; ++k) {
    if (fa->v[k] != fb->v[k]) {
      return fa->v[k] < fb->v[k] ? -1 : 1;
    }
  }
  return fa->tet < fb->tet ? -1 : fa->tet > fb->tet;
}

static int32_t find_root(int32_t *parent, int32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

typedef struct face_report {
  int64_t boundary;   /* faces of one tet */
  int64_t interior;   /* faces shared by two tets */
  int64_t overused;   /* faces shared by more than two tets */
  int32_t components; /* sets of tets connected through shared faces */
} face_report;

/* Counts faces by the number of tets using them and the face-connected pieces of the mesh. */
static bool analyse_faces(const piola_tet_mesh *m, face_report *r) {
  static const int faces[4][3] = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
  size_t n = 4 * (size_t)m->tet_count;
  face_key *keys = malloc(n * sizeof *keys);
  int32_t *parent = malloc((size_t)m->tet_count * sizeof *parent);
  memset(r, 0, sizeof *r);
  if (keys == NULL || parent == NULL) {
    free(keys);
    free(parent);
    return false;
  }
  for (int32_t t = 0; t < m->tet_count; ++t) {
    parent[t] = t;
    for (int f = 0; f < 4; ++f) {
      face_key *k = &keys[4 * (size_t)t + (size_t)f];
      for (int j = 0; j < 3; ++j) {
        k->v[j] = m->tets[4 * (size_t)t + (size_t)faces[f][j]];
      }
      for (int a = 0; a < 3; ++a) { /* sort three */
        for (int b = a + 1; b < 3; ++b) {
          if (k->v[b] < k->v[a]) {
            int32_t x = k->v[a];
            k->v[a] = k->v[b];
            k->v[b] = x;
          }
        }
      }
      k->tet = t;
    }
  }
  qsort(keys, n, sizeof *keys, compare_faces);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && memcmp(keys[j].v, keys[i].v, sizeof keys[i].v) == 0) {
      int32_t a = find_root(parent, keys[i].tet), b = find_root(parent, keys[j].tet);
      parent[a < b ? b : a] = a < b ? a : b;
      ++j;
    }
    if (j - i == 1) {
      r->boundary++;
    } else if (j - i == 2) {
      r->interior++;
    } else {
      r->overused++;
    }
    i = j;
  }
  for (int32_t t = 0; t < m->tet_count; ++t) {
    r->components += find_root(parent, t) == t;
  }
  free(keys);
  free(parent);
  return true;
}

/* ---- Loading valid files ----------------------------------------------------------------------
 */

/* Five points, two tets sharing the face 1 2 3. */
static const float five_points[15] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
static const int32_t two_tets[8] = {0, 1, 2, 3, 1, 2, 3, 4};

static void check_five_points(piola_test *t, const piola_tet_mesh *m) {
  CHECK(t, m->vertex_count == 5);
  CHECK(t, m->tet_count == 2);
  if (m->vertex_count == 5 && m->tet_count == 2) {
    CHECK(t, memcmp(m->positions, five_points, sizeof five_points) == 0);
    CHECK(t, memcmp(m->tets, two_tets, sizeof two_tets) == 0);
  }
}

void test_mesh_load_zero_based(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  const char *node = scratch_write(&s, "zero.node",
                                   "# A TetGen node file, 0-based\n"
                                   "   \n"
                                   "5 3 2 1   # points, dimension, attributes, markers\n"
                                   "0  0.0 0.0 0.0   1.5 -2 1\n"
                                   "1\t1.0\t0\t0\t0 0 0\r\n"
                                   "# between records\n"
                                   "\n"
                                   "2 0 1.0e0 0 0.25 7 1\n"
                                   "3 0 0 +1 0 0 1 # trailing comment\n"
                                   "  4 1 1 1 1e-3 2 0",
                                   0);
  const char *ele = scratch_write(&s, "zero.ele",
                                  "2 4 1 # tets, nodes per tet, attributes\n"
                                  "0 0 1 2 3 -1\n"
                                  "\n"
                                  "1 1 2 3 4 2.5 # region 2.5\n",
                                  0);
  REQUIRE(t, node != NULL && ele != NULL);
  piola_test_log log;
  piola_logger logger = piola_test_logger(&log);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  CHECK_STATUS(t, piola_mesh_load_tetgen_logged(node, ele, &logger, &m), PIOLA_OK);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0);
  check_five_points(t, &m);
  piola_mesh_free(&m);
  scratch_close(&s);
}

void test_mesh_load_one_based(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  const char *node = scratch_write(&s, "one.node",
                                   "\xEF\xBB\xBF# 1-based, with a byte order mark\r\n"
                                   "5 3 1 0\r\n"
                                   "1 0 0 0 10\r\n"
                                   "2 1 0 0 20\r\n"
                                   "3 0 1 0 30\r\n"
                                   "4 0 0 1 40\r\n"
                                   "5 1 1 1 50\r\n"
                                   "# Generated by hand\r\n",
                                   0);
  const char *ele = scratch_write(&s, "one.ele",
                                  "2 4 0\n"
                                  "1 1 2 3 4\n"
                                  "2 2 3 4 5\n",
                                  0);
  REQUIRE(t, node != NULL && ele != NULL);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  CHECK_STATUS(t, piola_mesh_load_tetgen(node, ele, &m), PIOLA_OK);
  check_five_points(t, &m);
  piola_mesh_free(&m);
  scratch_close(&s);
}

/* Trailing header fields may be left out, as TetGen's reader allows (3 D, no attributes, no
 * markers, 4 nodes per tet). */
void test_mesh_load_short_headers(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  const char *node =
      scratch_write(&s, "short.node", "5\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n4 1 1 1\n", 0);
  const char *ele = scratch_write(&s, "short.ele", "2\n0 0 1 2 3\n1 1 2 3 4\n", 0);
  REQUIRE(t, node != NULL && ele != NULL);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  CHECK_STATUS(t, piola_mesh_load_tetgen(node, ele, &m), PIOLA_OK);
  check_five_points(t, &m);
  piola_mesh_free(&m);
  scratch_close(&s);
}

/* Lines far longer than 64 KiB (and than the reader's chunk) load. */
void test_mesh_load_long_lines(piola_test *t) {
  enum { attributes = 15000 }; /* lines of 90 kB */
  const char *value = " 0.125";
  size_t cap = 512 + 5 * (attributes * strlen(value) + 64);
  char *node_text = malloc(cap);
  char *ele_text = malloc(cap);
  REQUIRE(t, node_text != NULL && ele_text != NULL);
  size_t n = (size_t)snprintf(node_text, cap, "5 3 %d 0\n", (int)attributes);
  size_t e = (size_t)snprintf(ele_text, cap, "2 4 %d\n", (int)attributes);
  for (int p = 0; p < 5; ++p) {
    n += (size_t)snprintf(node_text + n, cap - n, "%d %g %g %g", p, (double)five_points[3 * p],
                          (double)five_points[3 * p + 1], (double)five_points[3 * p + 2]);
    for (int a = 0; a < attributes; ++a) {
      memcpy(node_text + n, value, strlen(value));
      n += strlen(value);
    }
    node_text[n++] = '\n';
  }
  node_text[n] = '\0';
  for (int q = 0; q < 2; ++q) {
    e += (size_t)snprintf(ele_text + e, cap - e, "%d %d %d %d %d", q, (int)two_tets[4 * q],
                          (int)two_tets[4 * q + 1], (int)two_tets[4 * q + 2],
                          (int)two_tets[4 * q + 3]);
    for (int a = 0; a < attributes; ++a) {
      memcpy(ele_text + e, value, strlen(value));
      e += strlen(value);
    }
    ele_text[e++] = '\n';
  }
  ele_text[e] = '\0';
  CHECK(t, n > 5 * 65536 && e > 2 * 65536);
  scratch s;
  bool opened = scratch_open(&s);
  const char *node = opened ? scratch_write(&s, "long.node", node_text, n) : NULL;
  const char *ele = opened ? scratch_write(&s, "long.ele", ele_text, e) : NULL;
  free(node_text);
  free(ele_text);
  REQUIRE(t, node != NULL && ele != NULL);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  CHECK_STATUS(t, piola_mesh_load_tetgen(node, ele, &m), PIOLA_OK);
  check_five_points(t, &m);
  piola_mesh_free(&m);

  /* A line beyond the reader's limit (16 MiB) is refused, not read into ever more memory. */
  size_t huge = ((size_t)1 << 24) + 16;
  char *text = malloc(huge + 32);
  REQUIRE(t, text != NULL);
  memcpy(text, "4 3 0 0\n#", 9);
  memset(text + 9, 'x', huge);
  memcpy(text + 9 + huge, "\n0 0 0 0\n", 10);
  node = scratch_write(&s, "huge.node", text, huge + 19);
  free(text);
  REQUIRE(t, node != NULL);
  piola_test_log log;
  piola_logger logger = piola_test_logger(&log);
  CHECK_STATUS(t, piola_mesh_load_tetgen_logged(node, ele, &logger, &m), PIOLA_ERROR_PARSE);
  CHECK_MSG(t, strstr(log.last, "huge.node:2: line longer than") != NULL, "message: %s", log.last);
  scratch_close(&s);
}

/* ---- Broken files --------------------------------------------------------------------------- */

#define GOOD_NODE "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n"
#define GOOD_NODE_1 "4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n"
#define GOOD_ELE "1 4 0\n0 0 1 2 3\n"

typedef struct broken_case {
  const char *what;
  const char *node; /* file contents */
  size_t node_len;  /* 0: strlen */
  const char *ele;
  piola_status expected;
  const char *where; /* "node" or "ele": the file the message must name */
  int line;          /* the line it must name */
  const char *words; /* NULL or a phrase the message must hold */
} broken_case;

static const broken_case broken_cases[] = {
    {"malformed coordinate", "4 3 0 0\n0 0 0 0\n1 1 0 x\n2 0 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 3, "malformed z coordinate"},
    {"junk after a number", "4 3 0 0\n0 0 0 0.5abc\n1 1 0 0\n2 0 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 2, NULL},
    {"decimal comma", "4 3 0 0\n0 0 0 0\n1 1,5 0 0\n2 0 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 3, NULL},
    {"missing coordinate", "4 3 0 0\n0 0 0 0\n1 1 0\n2 0 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 3, "expected 3 coordinates"},
    {"missing attribute", "4 3 1 0\n0 0 0 0 1\n1 1 0 0 1\n2 0 1 0\n3 0 0 1 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 4, NULL},
    {"extra field", "4 3 0 0\n0 0 0 0\n1 1 0 0 7\n2 0 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 3, NULL},
    {"malformed attribute", "4 3 1 0\n0 0 0 0 1\n1 1 0 0 one\n2 0 1 0 1\n3 0 0 1 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 3, NULL},
    {"two dimensions", "4 2 0 0\n0 0 0\n1 1 0\n2 0 1\n3 1 1\n", 0, GOOD_ELE, PIOLA_ERROR_PARSE,
     "node", 1, "dimension"},
    {"negative point count", "# header next\n-4 3 0 0\n0 0 0 0\n", 0, GOOD_ELE, PIOLA_ERROR_PARSE,
     "node", 2, NULL},
    {"absurd point count", "1073741824 3 0 0\n0 0 0 0\n", 0, GOOD_ELE, PIOLA_ERROR_PARSE, "node", 1,
     NULL},
    {"point count overflows", "99999999999999999999999 3 0 0\n0 0 0 0\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 1, NULL},
    {"no points", "0 3 0 0\n", 0, GOOD_ELE, PIOLA_ERROR_INVALID_MESH, "node", 1, NULL},
    {"bad marker flag", "4 3 0 2\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 1, NULL},
    {"header too long", "4 3 0 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 1, NULL},
    {"empty node file", "", 0, GOOD_ELE, PIOLA_ERROR_PARSE, "node", 1, NULL},
    {"only comments", "# nothing\n\n", 0, GOOD_ELE, PIOLA_ERROR_PARSE, "node", 3, NULL},
    {"truncated node file", "# c\n4 3 0 0\n0 0 0 0\n\n1 1 0 0\n2 0 1 0\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 7, "point 4 of 4 is missing"},
    {"truncated, no last newline", "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 5, NULL},
    {"NaN coordinate", "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 nan 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_NON_FINITE, "node", 4, NULL},
    {"infinite coordinate", "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 -inf\n", 0, GOOD_ELE,
     PIOLA_ERROR_NON_FINITE, "node", 5, NULL},
    {"coordinate beyond float", "4 3 0 0\n0 0 0 0\n1 1e39 0 0\n2 0 1 0\n3 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_NON_FINITE, "node", 3, NULL},
    {"first index 2", "4 3 0 0\n2 0 0 0\n3 1 0 0\n4 0 1 0\n5 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 2, NULL},
    {"point index gap", "4 3 0 0\n0 0 0 0\n1 1 0 0\n3 0 1 0\n4 0 0 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 4, "out of sequence"},
    {"extra point", "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n4 1 1 1\n", 0, GOOD_ELE,
     PIOLA_ERROR_PARSE, "node", 6, NULL},
    {"NUL byte", "4 3 0 0\n0 0 0 0\n1 1\0 0 0\n2 0 1 0\n3 0 0 1\n", 41, GOOD_ELE, PIOLA_ERROR_PARSE,
     "node", 3, NULL},
    {"comment hides a field", "4 3 0 0 # header\n# c\n0 0 0 0\n1 1 0 # 0\n2 0 1 0\n3 0 0 1\n", 0,
     GOOD_ELE, PIOLA_ERROR_PARSE, "node", 4, NULL},
    {"three vertex indices", GOOD_NODE, 0, "1 4 0\n0 0 1 2\n", PIOLA_ERROR_PARSE, "ele", 2,
     "expected 4 vertex indices after the tet index, found 3"},
    {"quadratic tets", GOOD_NODE, 0, "1 10 0\n0 0 1 2 3 0 1 2 3 0 1\n", PIOLA_ERROR_UNSUPPORTED,
     "ele", 1, "10-node"},
    {"five nodes per tet", GOOD_NODE, 0, "1 5 0\n0 0 1 2 3 0\n", PIOLA_ERROR_PARSE, "ele", 1, NULL},
    {"vertex index too large", GOOD_NODE, 0, "# tets\n1 4 0\n0 0 1 2 4\n", PIOLA_ERROR_INVALID_MESH,
     "ele", 3, "out of range"},
    {"negative vertex index", GOOD_NODE, 0, "1 4 0\n0 0 1 -1 3\n", PIOLA_ERROR_INVALID_MESH, "ele",
     2, NULL},
    {"repeated vertex", GOOD_NODE, 0, "1 4 0\n0 0 1 1 3\n", PIOLA_ERROR_INVALID_MESH, "ele", 2,
     NULL},
    {"0-based tets, 1-based points", GOOD_NODE_1, 0, "1 4 0\n1 0 1 2 3\n", PIOLA_ERROR_INVALID_MESH,
     "ele", 2, NULL},
    {"malformed vertex index", GOOD_NODE, 0, "1 4 0\n0 0 1 2.5 3\n", PIOLA_ERROR_PARSE, "ele", 2,
     "malformed vertex index"},
    {"malformed tet attribute", GOOD_NODE, 0, "1 4 1\n0 0 1 2 3 abc\n", PIOLA_ERROR_PARSE, "ele", 2,
     NULL},
    {"truncated ele file", GOOD_NODE, 0, "2 4 0\n0 0 1 2 3\n", PIOLA_ERROR_PARSE, "ele", 3,
     "tet 2 of 2 is missing"},
    {"no tets", GOOD_NODE, 0, "0 4 0\n", PIOLA_ERROR_INVALID_MESH, "ele", 1, NULL},
    {"absurd tet count", GOOD_NODE, 0, "2000000000 4 0\n0 0 1 2 3\n", PIOLA_ERROR_PARSE, "ele", 1,
     NULL},
    {"tet index out of sequence", GOOD_NODE, 0, "2 4 0\n0 0 1 2 3\n5 0 1 2 3\n", PIOLA_ERROR_PARSE,
     "ele", 3, NULL},
    {"extra tet", GOOD_NODE, 0, "1 4 0\n0 0 1 2 3\n1 0 1 2 3\n", PIOLA_ERROR_PARSE, "ele", 3, NULL},
    {"vertex index beyond 64 bits", GOOD_NODE, 0, "1 4 0\n0 0 1 2 99999999999999999999999\n",
     PIOLA_ERROR_INVALID_MESH, "ele", 2, "99999999999999999999999"},
    {"point index beyond 64 bits", "2 3 0 0\n0 0 0 0\n-99999999999999999999999 1 0 0\n", 0,
     GOOD_ELE, PIOLA_ERROR_PARSE, "node", 3, "out of sequence"},
};

void test_mesh_load_errors(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  for (size_t i = 0; i < sizeof broken_cases / sizeof broken_cases[0]; ++i) {
    const broken_case *c = &broken_cases[i];
    const char *node =
        scratch_write(&s, "broken.node", c->node, c->node_len > 0 ? c->node_len : strlen(c->node));
    const char *ele = scratch_write(&s, "broken.ele", c->ele, 0);
    CHECK_MSG(t, node != NULL && ele != NULL, "%s: cannot write the files", c->what);
    if (node == NULL || ele == NULL) {
      continue;
    }
    piola_test_log log;
    piola_logger logger = piola_test_logger(&log);
    float dummy_positions[3] = {1, 2, 3};
    int32_t dummy_tets[4] = {0, 0, 0, 0};
    piola_tet_mesh m = {dummy_positions, 77, dummy_tets, 88};
    piola_status status = piola_mesh_load_tetgen_logged(node, ele, &logger, &m);
    CHECK_MSG(t, status == c->expected, "%s: returned '%s', expected '%s'", c->what,
              piola_status_string(status), piola_status_string(c->expected));
    CHECK_MSG(t,
              m.positions == dummy_positions && m.vertex_count == 77 && m.tets == dummy_tets &&
                  m.tet_count == 88,
              "%s: the output was changed", c->what);
    char where[64];
    snprintf(where, sizeof where, "broken.%s:%d: ", c->where, c->line);
    const char *path = strcmp(c->where, "node") == 0 ? node : ele;
    piola_test_check_failure_message(t, c->what, &log, where, path, c->words);
    if (status == PIOLA_OK) {
      piola_mesh_free(&m);
    }
  }
  scratch_close(&s);
}

void test_mesh_load_missing_file(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  const char *node = scratch_write(&s, "ok.node", GOOD_NODE, 0);
  const char *ele = scratch_write(&s, "ok.ele", GOOD_ELE, 0);
  const char *missing = scratch_path(&s, "missing.node");
  REQUIRE(t, node != NULL && ele != NULL && missing != NULL);
  piola_test_log log;
  piola_logger logger = piola_test_logger(&log);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  CHECK_STATUS(t, piola_mesh_load_tetgen_logged(missing, ele, &logger, &m), PIOLA_ERROR_IO);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 1 && strstr(log.last, missing) != NULL);
  CHECK(t, m.positions == NULL && m.tets == NULL);
  logger = piola_test_logger(&log);
  CHECK_STATUS(t, piola_mesh_load_tetgen_logged(node, missing, &logger, &m), PIOLA_ERROR_IO);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 1 && strstr(log.last, missing) != NULL);
  CHECK(t, m.positions == NULL && m.tets == NULL);
#if !defined(_WIN32)
  /* A folder opens on POSIX but cannot be read. */
  logger = piola_test_logger(&log);
  CHECK_STATUS(t, piola_mesh_load_tetgen_logged(s.dir, ele, &logger, &m), PIOLA_ERROR_IO);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 1 && strstr(log.last, s.dir) != NULL);
#endif
  CHECK_STATUS(t, piola_mesh_load_tetgen(missing, missing, &m), PIOLA_ERROR_IO);
  CHECK(t, m.positions == NULL && m.tets == NULL);
  scratch_close(&s);
}

void test_mesh_load_bad_arguments(piola_test *t) {
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  piola_test_log log;
  piola_logger logger = piola_test_logger(&log);
  CHECK_STATUS(t, piola_mesh_load_tetgen_logged(NULL, "x.ele", &logger, &m),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_load_tetgen_logged("x.node", NULL, &logger, &m),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_load_tetgen_logged("x.node", "x.ele", &logger, NULL),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 3);
  CHECK_STATUS(t, piola_mesh_load_tetgen(NULL, NULL, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, m.positions == NULL && m.tets == NULL);
}

/* ---- Saving -----------------------------------------------------------------------------------
 */

static void check_round_trip(piola_test *t, scratch *s, const piola_tet_mesh *mesh) {
  const char *node = scratch_path(s, "trip.node");
  const char *ele = scratch_path(s, "trip.ele");
  REQUIRE(t, node != NULL && ele != NULL);
  REQUIRE_OK(t, piola_mesh_save_tetgen(mesh, node, ele));
  piola_tet_mesh back = {NULL, 0, NULL, 0};
  REQUIRE_OK(t, piola_mesh_load_tetgen(node, ele, &back));
  CHECK(t, back.vertex_count == mesh->vertex_count && back.tet_count == mesh->tet_count);
  if (back.vertex_count == mesh->vertex_count && back.tet_count == mesh->tet_count) {
    /* "%.9g" gives every float back exactly. */
    CHECK(t, memcmp(back.positions, mesh->positions,
                    3 * sizeof(float) * (size_t)mesh->vertex_count) == 0);
    CHECK(t, memcmp(back.tets, mesh->tets, 4 * sizeof(int32_t) * (size_t)mesh->tet_count) == 0);
  }
  piola_mesh_free(&back);
}

void test_mesh_save_load_round_trip(piola_test *t) {
  piola_tet_mesh box = {NULL, 0, NULL, 0};
  const int32_t cells[3] = {3, 2, 4};
  const float size[3] = {1.1f, 0.7f, 2.3f};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &box));
  /* Awkward floats: thirds, tiny, huge, negative, denormal. */
  for (int32_t i = 0; i < box.vertex_count; ++i) {
    box.positions[3 * i] += (float)i / 3.0f - 7.0f;
  }
  box.positions[0] = 1e-30f;
  box.positions[1] = -3.0e30f;
  box.positions[2] = 1e-40f;
  scratch s;
  REQUIRE(t, scratch_open(&s));
  check_round_trip(t, &s, &box);

  /* The same in a locale with a decimal comma, where one is installed. */
  const char *saved = setlocale(LC_NUMERIC, NULL);
  char previous[128];
  snprintf(previous, sizeof previous, "%s", saved != NULL ? saved : "C");
  static const char *const comma_locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                              "German_Germany.1252"};
  for (size_t i = 0; i < sizeof comma_locales / sizeof comma_locales[0]; ++i) {
    if (setlocale(LC_NUMERIC, comma_locales[i]) != NULL) {
      check_round_trip(t, &s, &box);
      FILE *f = fopen(scratch_path(&s, "trip.node"), "rb");
      char text[256] = {0};
      if (f != NULL) {
        CHECK(t, fread(text, 1, sizeof text - 1, f) > 0);
        fclose(f);
      }
      CHECK_MSG(t, strchr(text, ',') == NULL, "a decimal comma was written: %s", text);
      break;
    }
  }
  setlocale(LC_NUMERIC, previous);
  piola_mesh_free(&box);
  scratch_close(&s);
}

void test_mesh_save_bad_arguments(piola_test *t) {
  float positions[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  int32_t tets[4] = {0, 1, 2, 3};
  piola_tet_mesh m = {positions, 4, tets, 1};
  scratch s;
  REQUIRE(t, scratch_open(&s));
  const char *node = scratch_path(&s, "save.node");
  const char *ele = scratch_path(&s, "save.ele");
  REQUIRE(t, node != NULL && ele != NULL);
  CHECK_STATUS(t, piola_mesh_save_tetgen(NULL, node, ele), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_save_tetgen(&m, NULL, ele), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_save_tetgen(&m, node, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  piola_tet_mesh bad = m;
  bad.positions = NULL;
  CHECK_STATUS(t, piola_mesh_save_tetgen(&bad, node, ele), PIOLA_ERROR_INVALID_ARGUMENT);
  bad = m;
  bad.tets = NULL;
  CHECK_STATUS(t, piola_mesh_save_tetgen(&bad, node, ele), PIOLA_ERROR_INVALID_ARGUMENT);
  bad = m;
  bad.vertex_count = 0;
  CHECK_STATUS(t, piola_mesh_save_tetgen(&bad, node, ele), PIOLA_ERROR_INVALID_ARGUMENT);
  bad = m;
  bad.tet_count = -1;
  CHECK_STATUS(t, piola_mesh_save_tetgen(&bad, node, ele), PIOLA_ERROR_INVALID_ARGUMENT);
  bad = m;
  bad.vertex_count = 3; /* index 3 out of range */
  CHECK_STATUS(t, piola_mesh_save_tetgen(&bad, node, ele), PIOLA_ERROR_INVALID_MESH);
  positions[4] = NAN;
  CHECK_STATUS(t, piola_mesh_save_tetgen(&m, node, ele), PIOLA_ERROR_NON_FINITE);
  positions[4] = 0.0f;
  /* Nothing was written by the calls above. */
  FILE *f = fopen(node, "rb");
  CHECK(t, f == NULL);
  if (f != NULL) {
    fclose(f);
  }
  char unwritable[700];
  snprintf(unwritable, sizeof unwritable, "%s/no/such/folder/x.node", s.dir);
  CHECK_STATUS(t, piola_mesh_save_tetgen(&m, unwritable, ele), PIOLA_ERROR_IO);
  CHECK_STATUS(t, piola_mesh_save_tetgen(&m, node, unwritable), PIOLA_ERROR_IO);
  scratch_close(&s);
}

/* ---- The Armadillo ----------------------------------------------------------------------------
 */

/* The Armadillo of Bender et al. 2014 (tetgen -pqa5000.0): 1180 vertices and 3717 tets. Every
 * tet is positively oriented (det[x1 - x0, x2 - x0, x3 - x0] > 0: none negative), volumes run
 * from 9.5e-7 to 8.8e-3 m^3, the bounds are x -1.264..1.274, y -1.081..1.949 (y up, 3.03 tall),
 * z -1.171..1.145, and up to 60 tets share a vertex. */
void test_mesh_load_armadillo(piola_test *t) {
  const char *dir = piola_test_data_dir();
  if (dir == NULL) {
    CHECK(t, true); /* no data folder: nothing to check */
    return;
  }
  char node[4096], ele[4096];
  snprintf(node, sizeof node, "%s/armadillo/armadillo_4k.node", dir);
  snprintf(ele, sizeof ele, "%s/armadillo/armadillo_4k.ele", dir);
  piola_test_log log;
  piola_logger logger = piola_test_logger(&log);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  REQUIRE_OK(t, piola_mesh_load_tetgen_logged(node, ele, &logger, &m));
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0);
  CHECK(t, m.vertex_count == 1180);
  CHECK(t, m.tet_count == 3717);
  REQUIRE(t, indices_valid(&m));
  int32_t negative = 0, degenerate = 0;
  for (int32_t i = 0; i < m.tet_count; ++i) {
    double det = tet_det(&m, i);
    negative += det < 0.0;
    degenerate += fabs(det) < 1e-9; /* 6 |V| in m^3; the smallest is 5.7e-6 */
  }
  CHECK_MSG(t, degenerate == 0, "%d tets with (near-)zero volume", (int)degenerate);
  CHECK_MSG(t, negative == 0, "%d negatively oriented tets", (int)negative);
  int32_t unused = 0;
  CHECK(t, max_vertex_degree(&m, &unused) == 60);
  CHECK(t, unused == 0);
  piola_mesh_free(&m);
}

/* ---- Box --------------------------------------------------------------------------------------
 */

static void check_box(piola_test *t, const int32_t cells[3], const float size[3]) {
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &m));
  const int64_t nx = cells[0], ny = cells[1], nz = cells[2];
  CHECK(t, m.vertex_count == (nx + 1) * (ny + 1) * (nz + 1));
  CHECK(t, m.tet_count == 6 * nx * ny * nz);
  REQUIRE(t, indices_valid(&m));
  int32_t non_positive = 0;
  double volume = 0.0;
  for (int32_t i = 0; i < m.tet_count; ++i) {
    double det = tet_det(&m, i);
    non_positive += !(det > 0.0);
    volume += det / 6.0;
  }
  CHECK_MSG(t, non_positive == 0, "%d tets not positively oriented", (int)non_positive);
  double box_volume = (double)size[0] * size[1] * size[2];
  CHECK_NEAR(t, volume, box_volume, 1e-5 * box_volume);
  /* Grid order, x fastest; the far corner exactly at size. */
  CHECK(t, m.positions[0] == 0.0f && m.positions[1] == 0.0f && m.positions[2] == 0.0f);
  CHECK_NEAR(t, m.positions[3], size[0] / (double)nx, 1e-6 * size[0]);
  CHECK_NEAR(t, m.positions[3 * (nx + 1) + 1], size[1] / (double)ny, 1e-6 * size[1]);
  const float *last = m.positions + 3 * (size_t)(m.vertex_count - 1);
  CHECK(t, last[0] == size[0] && last[1] == size[1] && last[2] == size[2]);
  /* Conforming: every face is on the boundary (2 triangles per boundary square) or shared by
   * exactly two tets, and the tets form one piece. */
  face_report faces;
  REQUIRE(t, analyse_faces(&m, &faces));
  CHECK(t, faces.boundary == 4 * (nx * ny + ny * nz + nz * nx));
  CHECK(t, faces.overused == 0);
  CHECK(t, faces.interior == (4 * m.tet_count - faces.boundary) / 2);
  CHECK(t, faces.components == 1);
  int32_t unused = 0;
  int32_t degree = max_vertex_degree(&m, &unused);
  CHECK(t, unused == 0);
  CHECK(t, degree <= 24);
  if (nx >= 2 && ny >= 2 && nz >= 2) {
    CHECK(t, degree == 24);
  }
  piola_mesh_free(&m);
}

void test_mesh_box(piola_test *t) {
  const int32_t one[3] = {1, 1, 1};
  const float unit[3] = {1.0f, 1.0f, 1.0f};
  check_box(t, one, unit);
  const int32_t cells[3] = {3, 4, 5};
  const float size[3] = {1.5f, 2.0f, 0.5f};
  check_box(t, cells, size);
  const int32_t flat[3] = {7, 1, 2};
  const float small[3] = {0.01f, 0.003f, 0.02f};
  check_box(t, flat, small);
}

void test_mesh_box_bad_arguments(piola_test *t) {
  const int32_t cells[3] = {2, 2, 2};
  const float size[3] = {1, 1, 1};
  float dummy[3] = {0, 0, 0};
  piola_tet_mesh m = {dummy, 5, NULL, 6};
  CHECK_STATUS(t, piola_mesh_make_box(NULL, size, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_make_box(cells, NULL, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_make_box(cells, size, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  static const int32_t bad_cells[][3] = {{0, 1, 1},
                                         {1, -1, 1},
                                         {1, 1, INT32_MIN},
                                         {1 << 20, 1 << 20, 1},
                                         {1 << 10, 1 << 10, 1 << 10},
                                         {INT32_MAX, INT32_MAX, INT32_MAX},
                                         {(1 << 30) - 1, 1, 1}};
  for (size_t i = 0; i < sizeof bad_cells / sizeof bad_cells[0]; ++i) {
    CHECK_STATUS(t, piola_mesh_make_box(bad_cells[i], size, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  }
  static const float bad_sizes[][3] = {{0, 1, 1}, {1, -1, 1}, {1, 1, -0.0f}};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; ++i) {
    CHECK_STATUS(t, piola_mesh_make_box(cells, bad_sizes[i], &m), PIOLA_ERROR_INVALID_ARGUMENT);
  }
  const float nan_size[3] = {1, NAN, 1};
  const float inf_size[3] = {1, 1, INFINITY};
  CHECK_STATUS(t, piola_mesh_make_box(cells, nan_size, &m), PIOLA_ERROR_NON_FINITE);
  CHECK_STATUS(t, piola_mesh_make_box(cells, inf_size, &m), PIOLA_ERROR_NON_FINITE);
  CHECK(t, m.positions == dummy && m.vertex_count == 5 && m.tets == NULL && m.tet_count == 6);
}

/* ---- Creature ---------------------------------------------------------------------------------
 */

static void check_creature(piola_test *t, float height) {
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  REQUIRE_OK(t, piola_mesh_make_creature(height, &m));
  CHECK_MSG(t, m.vertex_count >= 1000 && m.vertex_count <= 1400, "%d vertices",
            (int)m.vertex_count);
  CHECK_MSG(t, m.tet_count >= 3300 && m.tet_count <= 4100, "%d tets", (int)m.tet_count);
  CHECK(t, m.tet_count % 6 == 0);
  REQUIRE(t, indices_valid(&m));
  int32_t non_positive = 0;
  for (int32_t i = 0; i < m.tet_count; ++i) {
    non_positive += !(tet_det(&m, i) > 0.0);
  }
  CHECK_MSG(t, non_positive == 0, "%d tets not positively oriented", (int)non_positive);
  /* One piece: every vertex in a tet, every tet reachable through shared faces. */
  int32_t unused = 0;
  int32_t degree = max_vertex_degree(&m, &unused);
  CHECK(t, unused == 0);
  CHECK(t, degree <= 24);
  face_report faces;
  REQUIRE(t, analyse_faces(&m, &faces));
  CHECK_MSG(t, faces.components == 1, "%d pieces", (int)faces.components);
  CHECK(t, faces.overused == 0);
  /* Bounds: lowest point at y = 0, `height` tall, centred on x = z = 0. */
  double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
  for (int32_t v = 0; v < m.vertex_count; ++v) {
    for (int a = 0; a < 3; ++a) {
      double x = m.positions[3 * (size_t)v + (size_t)a];
      lo[a] = x < lo[a] ? x : lo[a];
      hi[a] = x > hi[a] ? x : hi[a];
    }
  }
  CHECK(t, lo[1] == 0.0);
  CHECK_NEAR(t, hi[1], height, 1e-5 * height);
  CHECK_NEAR(t, 0.5 * (lo[0] + hi[0]), 0.0, 1e-6 * height);
  CHECK_NEAR(t, 0.5 * (lo[2] + hi[2]), 0.0, 1e-6 * height);
  /* Creature-like, not a cube: much less volume than its bounding box. */
  double volume = 0.0;
  for (int32_t i = 0; i < m.tet_count; ++i) {
    volume += tet_det(&m, i) / 6.0;
  }
  double box = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
  CHECK_MSG(t, volume < 0.4 * box, "volume %g of a %g box", volume, box);
  piola_mesh_free(&m);
}

void test_mesh_creature(piola_test *t) {
  check_creature(t, 1.0f);
  check_creature(t, 3.03f); /* the Armadillo's height */
}

void test_mesh_creature_deterministic(piola_test *t) {
  piola_tet_mesh a = {NULL, 0, NULL, 0}, b = {NULL, 0, NULL, 0}, c = {NULL, 0, NULL, 0};
  REQUIRE_OK(t, piola_mesh_make_creature(1.7f, &a));
  REQUIRE_OK(t, piola_mesh_make_creature(1.7f, &b));
  REQUIRE_OK(t, piola_mesh_make_creature(0.5f, &c));
  CHECK(t, a.vertex_count == b.vertex_count && a.tet_count == b.tet_count);
  CHECK(t, a.vertex_count == c.vertex_count && a.tet_count == c.tet_count);
  if (a.vertex_count == b.vertex_count && a.tet_count == b.tet_count) {
    CHECK(t, memcmp(a.positions, b.positions, 3 * sizeof(float) * (size_t)a.vertex_count) == 0);
    CHECK(t, memcmp(a.tets, b.tets, 4 * sizeof(int32_t) * (size_t)a.tet_count) == 0);
  }
  if (a.vertex_count == c.vertex_count && a.tet_count == c.tet_count) {
    /* Another height: the same tets, the positions scaled. */
    CHECK(t, memcmp(a.tets, c.tets, 4 * sizeof(int32_t) * (size_t)a.tet_count) == 0);
    double worst = 0.0;
    for (size_t i = 0; i < 3 * (size_t)a.vertex_count; ++i) {
      double d = fabs((double)a.positions[i] * (0.5 / 1.7) - (double)c.positions[i]);
      worst = d > worst ? d : worst;
    }
    CHECK_NEAR(t, worst, 0.0, 1e-6);
  }
  piola_mesh_free(&a);
  piola_mesh_free(&b);
  piola_mesh_free(&c);
}

void test_mesh_creature_bad_arguments(piola_test *t) {
  float dummy[3] = {0, 0, 0};
  piola_tet_mesh m = {dummy, 5, NULL, 6};
  CHECK_STATUS(t, piola_mesh_make_creature(1.0f, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_make_creature(0.0f, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_make_creature(-1.0f, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_make_creature(NAN, &m), PIOLA_ERROR_NON_FINITE);
  CHECK_STATUS(t, piola_mesh_make_creature(INFINITY, &m), PIOLA_ERROR_NON_FINITE);
  CHECK_STATUS(t, piola_mesh_make_creature(-INFINITY, &m), PIOLA_ERROR_NON_FINITE);
  CHECK(t, m.positions == dummy && m.vertex_count == 5 && m.tets == NULL && m.tet_count == 6);
}

void test_mesh_free(piola_test *t) {
  piola_mesh_free(NULL);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  piola_mesh_free(&m); /* an empty mesh */
  const int32_t cells[3] = {1, 1, 1};
  const float size[3] = {1, 1, 1};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &m));
  piola_mesh_free(&m);
  CHECK(t, m.positions == NULL && m.vertex_count == 0 && m.tets == NULL && m.tet_count == 0);
}
