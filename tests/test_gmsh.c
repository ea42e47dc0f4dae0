/* Tests of the Gmsh loader (src/host/mesh_gmsh.c): a box written by the test in MSH 2.2 and 4.1
 * (sparse and shuffled node tags, other element types mixed in, physical names, entities,
 * parametric nodes, unknown sections, CRLF line ends) loads to the procedural box exactly; 10-node
 * tets load through their corners; every kind of broken file returns its status with one
 * "file:line:" message and leaves the output alone; and the files Gmsh 4.8.4 itself wrote
 * (tests/data/gmsh_box*.msh, from tests/data/gmsh_box.geo) load with positive tets, the box's
 * volume and a closed surface, and go into a world without repairs. */
#include "piola_test.h"
#include "scene.h"
#include "scratch.h"

#include <locale.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void test_gmsh_load_v22(piola_test *t);
void test_gmsh_load_v41(piola_test *t);
void test_gmsh_quadratic_tets(piola_test *t);
void test_gmsh_load_errors(piola_test *t);
void test_gmsh_missing_file(piola_test *t);
void test_gmsh_real_files(piola_test *t);
void test_gmsh_scene_mesh_option(piola_test *t);

/* ---- Writing a mesh as .msh text ------------------------------------------------------------ */

/* A growing text buffer. */
typedef struct text {
  char *s;
  size_t len, cap;
  bool failed;
} text;

static void put(text *x, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void put(text *x, const char *format, ...) {
  for (int attempt = 0; attempt < 2 && !x->failed; ++attempt) {
    va_list args;
    va_start(args, format);
    int n = vsnprintf(x->s != NULL ? x->s + x->len : NULL, x->s != NULL ? x->cap - x->len : 0,
                      format, args);
    va_end(args);
    if (n < 0) {
      x->failed = true;
    } else if (x->s != NULL && x->len + (size_t)n < x->cap) {
      x->len += (size_t)n;
      return;
    } else {
      size_t cap = 2 * (x->cap + (size_t)n) + 256;
      char *grown = realloc(x->s, cap);
      x->failed = grown == NULL;
      x->s = grown != NULL ? grown : x->s;
      x->cap = grown != NULL ? cap : x->cap;
    }
  }
}

/* The tag of box vertex i: sparse, ascending with i, so that the loader's numbering in
 * ascending tag order gives back the box's own vertex order. Tag 2 (below all of them) is a
 * node that no tet uses. */
#define UNUSED_TAG 2
static long long vertex_tag(int32_t i) {
  return 5 + 7 * (long long)i + (i > 3 ? 1000000000000LL : 0); /* beyond 32 bits, too */
}

/* The order the nodes are written in: a permutation of 0..n-1 (n must not be a multiple of 5). */
static int32_t shuffled(int32_t j, int32_t n) {
  return (int32_t)((5 * (int64_t)j + 3) % n);
}

static const char *const physical_names = "$PhysicalNames\n"
                                          "2\n"
                                          "2 1 \"skin # no comment\"\n"
                                          "3 2 \"body\"\n"
                                          "$EndPhysicalNames\n";

/* Sections a reader has to skip: node data and an unknown section holding "$Nodes". */
static void put_trailer(text *x, const piola_tet_mesh *m) {
  put(x, "$NodeData\n1\n\"a view\"\n1\n0.0\n3\n0\n1\n%d\n", (int)m->vertex_count);
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    put(x, "%lld %d\n", vertex_tag(i), (int)i);
  }
  put(x, "$EndNodeData\n$Comments\n$Nodes\nnot a section\n$EndComments\n");
}

static void put_xyz(text *x, const float *p) {
  put(x, "%.9g %.9g %.9g", (double)p[0], (double)p[1], (double)p[2]);
}

/* MSH 2.2: the tets (type 4, or type 11: 10 nodes, with mid-edge nodes of their own),
 * a point on the unused node, a line, a triangle and, with `hexahedron`, an 8-node element. */
static void put_v22(text *x, const piola_tet_mesh *m, bool quadratic, bool hexahedron) {
  int32_t extra = quadratic ? 6 * m->tet_count : 0; /* mid-edge nodes */
  put(x, "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n%s$Nodes\n%d\n", physical_names,
      (int)(m->vertex_count + 1 + extra));
  for (int32_t j = 0; j < m->vertex_count; ++j) {
    int32_t i = shuffled(j, m->vertex_count);
    put(x, "%lld ", vertex_tag(i));
    put_xyz(x, m->positions + 3 * i);
    put(x, "\n");
    if (j == m->vertex_count / 2) {
      put(x, "%d 9 9 9\n", UNUSED_TAG);
    }
  }
  static const int edges[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}};
  for (int32_t e = 0; e < extra; ++e) {
    const int32_t *q = m->tets + 4 * (e / 6);
    float mid[3];
    for (int k = 0; k < 3; ++k) {
      mid[k] = 0.5f * (m->positions[3 * q[edges[e % 6][0]] + k] +
                       m->positions[3 * q[edges[e % 6][1]] + k]);
    }
    put(x, "%d ", (int)(1000 + e));
    put_xyz(x, mid);
    put(x, "\n");
  }
  put(x, "$EndNodes\n$Elements\n%d\n", (int)(m->tet_count + 3 + (hexahedron ? 1 : 0)));
  const int32_t *q = m->tets;
  put(x, "1 15 2 0 1 %d\n", UNUSED_TAG);
  put(x, "2 1 2 0 1 %lld %lld\n", vertex_tag(q[0]), vertex_tag(q[1]));
  put(x, "3 2 2 0 1 %lld %lld %lld\n", vertex_tag(q[0]), vertex_tag(q[1]), vertex_tag(q[2]));
  if (hexahedron) {
    put(x, "4 5 0 1 2 3 4 5 6 7 8\n"); /* tags that no node has: not looked up */
  }
  for (int32_t i = 0; i < m->tet_count; ++i) {
    const int32_t *v = m->tets + 4 * i;
    int tags = i % 3; /* 0, 1 or 2 tags */
    put(x, "%d %d %d", (int)(100 + i), quadratic ? 11 : 4, tags);
    for (int k = 0; k < tags; ++k) {
      put(x, " %d", 7 + k);
    }
    put(x, " %lld %lld %lld %lld", vertex_tag(v[0]), vertex_tag(v[1]), vertex_tag(v[2]),
        vertex_tag(v[3]));
    for (int k = 0; quadratic && k < 6; ++k) {
      put(x, " %d", (int)(1000 + 6 * i + k));
    }
    put(x, "\n");
  }
  put(x, "$EndElements\n");
  put_trailer(x, m);
}

/* MSH 4.1: entities; nodes in three blocks (the unused node on a point, half of the box's nodes
 * on a surface with parametric coordinates, the rest in the volume); elements in five blocks. */
static void put_v41(text *x, const piola_tet_mesh *m) {
  int32_t n = m->vertex_count, half = n / 2;
  put(x, "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n%s", physical_names);
  put(x, "$Entities\n1 0 1 1\n1 0 0 0 0\n1 0 0 0 1 1 1 1 1 0\n1 0 0 0 1 1 1 1 2 0\n"
         "$EndEntities\n");
  put(x, "$Nodes\n3 %d 2 %lld\n0 1 0 1\n%d\n9 9 9\n", (int)(n + 1), vertex_tag(n - 1), UNUSED_TAG);
  put(x, "2 1 1 %d\n", (int)half);
  for (int32_t j = 0; j < half; ++j) {
    put(x, "%lld\n", vertex_tag(shuffled(j, n)));
  }
  for (int32_t j = 0; j < half; ++j) {
    put_xyz(x, m->positions + 3 * shuffled(j, n));
    put(x, " 0.25 0.75\n"); /* u v */
  }
  put(x, "3 1 0 %d\n", (int)(n - half));
  for (int32_t j = half; j < n; ++j) {
    put(x, "%lld\n", vertex_tag(shuffled(j, n)));
  }
  for (int32_t j = half; j < n; ++j) {
    put_xyz(x, m->positions + 3 * shuffled(j, n));
    put(x, "\n");
  }
  int32_t first = m->tet_count / 3;
  const int32_t *q = m->tets;
  put(x, "$EndNodes\n$Elements\n5 %d 1 %d\n", (int)(m->tet_count + 3), (int)(m->tet_count + 3));
  put(x, "0 1 15 1\n1 %d\n", UNUSED_TAG);
  put(x, "1 1 1 1\n2 %lld %lld\n", vertex_tag(q[0]), vertex_tag(q[1]));
  put(x, "2 1 2 1\n3 %lld %lld %lld\n", vertex_tag(q[0]), vertex_tag(q[1]), vertex_tag(q[2]));
  for (int block = 0; block < 2; ++block) {
    int32_t lo = block == 0 ? 0 : first, hi = block == 0 ? first : m->tet_count;
    put(x, "3 1 4 %d\n", (int)(hi - lo));
    for (int32_t i = lo; i < hi; ++i) {
      const int32_t *v = m->tets + 4 * i;
      put(x, "%d %lld %lld %lld %lld\n", (int)(4 + i), vertex_tag(v[0]), vertex_tag(v[1]),
          vertex_tag(v[2]), vertex_tag(v[3]));
    }
  }
  put(x, "$EndElements\n");
  put_trailer(x, m);
}

/* The same text with "\r\n" line ends. */
static char *with_crlf(const text *x, size_t *len) {
  char *out = malloc(2 * x->len + 1);
  if (out == NULL) {
    return NULL;
  }
  size_t n = 0;
  for (size_t i = 0; i < x->len; ++i) {
    if (x->s[i] == '\n') {
      out[n++] = '\r';
    }
    out[n++] = x->s[i];
  }
  out[n] = '\0';
  *len = n;
  return out;
}

/* ---- Checks ---------------------------------------------------------------------------------- */

static piola_logger test_logger(piola_test_log *log) {
  memset(log, 0, sizeof *log);
  piola_logger logger = {piola_test_log_fn, log};
  return logger;
}

static bool same_mesh(const piola_tet_mesh *a, const piola_tet_mesh *b) {
  return a->vertex_count == b->vertex_count && a->tet_count == b->tet_count &&
         memcmp(a->positions, b->positions, 3 * sizeof(float) * (size_t)a->vertex_count) == 0 &&
         memcmp(a->tets, b->tets, 4 * sizeof(int32_t) * (size_t)a->tet_count) == 0;
}

/* The box the text files describe: 2 x 1 x 1 cells, 12 vertices, 12 tets. */
static bool make_test_box(piola_tet_mesh *box) {
  const int32_t cells[3] = {2, 1, 1};
  const float size[3] = {2.0f, 0.75f, 0.5f};
  return piola_mesh_make_box(cells, size, box) == PIOLA_OK;
}

/* Writes `x` (and its CRLF copy) and checks that both load to `expected`; `warnings` is the
 * number of warnings expected. */
static void check_loads_to(piola_test *t, const text *x, const piola_tet_mesh *expected,
                           int warnings) {
  REQUIRE(t, !x->failed && x->s != NULL);
  size_t crlf_len = 0;
  char *crlf = with_crlf(x, &crlf_len);
  REQUIRE(t, crlf != NULL);
  scratch s;
  bool opened = scratch_open(&s);
  const char *lf_path = opened ? scratch_write(&s, "box.msh", x->s, x->len) : NULL;
  const char *crlf_path = opened ? scratch_write(&s, "box_crlf.msh", crlf, crlf_len) : NULL;
  free(crlf);
  REQUIRE(t, lf_path != NULL && crlf_path != NULL);
  for (int pass = 0; pass < 2; ++pass) {
    piola_test_log log;
    piola_logger logger = test_logger(&log);
    piola_tet_mesh m = {NULL, 0, NULL, 0};
    CHECK_STATUS(t, piola_mesh_load_gmsh_logged(pass == 0 ? lf_path : crlf_path, &logger, &m),
                 PIOLA_OK);
    CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] == 0 && log.count[PIOLA_LOG_WARNING] == warnings,
              "%d errors, %d warnings (expected %d); last: %s", log.count[PIOLA_LOG_ERROR],
              log.count[PIOLA_LOG_WARNING], warnings, log.last);
    CHECK(t, log.count[PIOLA_LOG_INFO] == 1);
    CHECK_MSG(t, same_mesh(&m, expected), "%d vertices, %d tets (expected %d, %d)",
              (int)m.vertex_count, (int)m.tet_count, (int)expected->vertex_count,
              (int)expected->tet_count);
    piola_mesh_free(&m);
    /* Without a logger: the same mesh. */
    CHECK_STATUS(t, piola_mesh_load_gmsh(pass == 0 ? lf_path : crlf_path, &m), PIOLA_OK);
    CHECK(t, same_mesh(&m, expected));
    piola_mesh_free(&m);
  }
  scratch_close(&s);
}

/* ---- Valid files ----------------------------------------------------------------------------- */

void test_gmsh_load_v22(piola_test *t) {
  piola_tet_mesh box = {NULL, 0, NULL, 0};
  REQUIRE(t, make_test_box(&box));
  REQUIRE(t, box.vertex_count == 12 && box.tet_count == 12);
  text x = {NULL, 0, 0, false};
  put_v22(&x, &box, false, false);
  check_loads_to(t, &x, &box, 0);
  /* The same file in a locale with a decimal comma, where one is installed. */
  const char *saved = setlocale(LC_NUMERIC, NULL);
  char previous[128];
  snprintf(previous, sizeof previous, "%s", saved != NULL ? saved : "C");
  static const char *const comma_locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8"};
  for (size_t i = 0; i < sizeof comma_locales / sizeof comma_locales[0]; ++i) {
    if (setlocale(LC_NUMERIC, comma_locales[i]) != NULL) {
      check_loads_to(t, &x, &box, 0);
      break;
    }
  }
  setlocale(LC_NUMERIC, previous);
  free(x.s);
  piola_mesh_free(&box);
}

void test_gmsh_load_v41(piola_test *t) {
  piola_tet_mesh box = {NULL, 0, NULL, 0};
  REQUIRE(t, make_test_box(&box));
  text x = {NULL, 0, 0, false};
  put_v41(&x, &box);
  check_loads_to(t, &x, &box, 0);
  free(x.s);
  piola_mesh_free(&box);
}

/* 10-node tets give their corners (their mid-edge nodes are dropped), and a hexahedron is
 * ignored with a warning. */
void test_gmsh_quadratic_tets(piola_test *t) {
  piola_tet_mesh box = {NULL, 0, NULL, 0};
  REQUIRE(t, make_test_box(&box));
  text x = {NULL, 0, 0, false};
  put_v22(&x, &box, true, true);
  check_loads_to(t, &x, &box, 1);
  free(x.s);
  piola_mesh_free(&box);
}

/* ---- Broken files ---------------------------------------------------------------------------- */

/* A valid 2.2 file: format (lines 1-3), nodes (4-10), elements (11-14). */
#define F22 "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
#define N22 "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n"
#define E22 "$Elements\n1\n1 4 2 0 1 1 2 3 4\n$EndElements\n"
/* A valid 4.1 file: format (1-3), nodes (4-15: header 5, block 6, tags 7-10, coordinates
 * 11-14), elements (16-20: header 17, block 18, tet 19). */
#define F41 "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n"
#define N41_TAIL "1\n2\n3\n4\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n$EndNodes\n"
#define N41 "$Nodes\n1 4 1 4\n3 1 0 4\n" N41_TAIL
#define E41 "$Elements\n1 1 1 1\n3 1 4 1\n1 1 2 3 4\n$EndElements\n"
/* A NUL byte on line 6. */
#define NUL_TEXT F22 "$Nodes\n4\n1 0\0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n" E22

typedef struct broken_case {
  const char *what;
  const char *text;
  size_t len; /* 0: strlen */
  piola_status expected;
  int line;          /* the line the message must name */
  const char *words; /* NULL or a phrase the message must hold */
} broken_case;

static const broken_case broken_cases[] = {
    {"empty file", "", 0, PIOLA_ERROR_PARSE, 1, "empty file"},
    {"blank lines only", "\n  \r\n", 0, PIOLA_ERROR_PARSE, 3, "expected $MeshFormat"},
    {"not a .msh file", "solid box\nfacet normal 0 0 1\n", 0, PIOLA_ERROR_PARSE, 1,
     "expected $MeshFormat"},
    {"binary file", "$MeshFormat\n4.1 1 8\n\x01\x00\x00\x00\n$EndMeshFormat\n", 0,
     PIOLA_ERROR_UNSUPPORTED, 2, "binary"},
    {"MSH 4.0", "$MeshFormat\n4 0 8\n$EndMeshFormat\n", 0, PIOLA_ERROR_UNSUPPORTED, 2,
     "version '4' is not supported"},
    {"MSH 3", "$MeshFormat\n3.0 0 8\n$EndMeshFormat\n", 0, PIOLA_ERROR_UNSUPPORTED, 2, NULL},
    {"malformed version", "$MeshFormat\n2,2 0 8\n$EndMeshFormat\n", 0, PIOLA_ERROR_PARSE, 2,
     "malformed format version"},
    {"bad file type", "$MeshFormat\n2.2 2 8\n$EndMeshFormat\n", 0, PIOLA_ERROR_PARSE, 2,
     "file type"},
    {"short format line", "$MeshFormat\n2.2 0\n$EndMeshFormat\n", 0, PIOLA_ERROR_PARSE, 2,
     "expected 3 fields"},
    {"format cut off", "$MeshFormat\n", 0, PIOLA_ERROR_PARSE, 2, "unexpected end of file"},
    {"no $EndMeshFormat", "$MeshFormat\n2.2 0 8\n" N22 E22, 0, PIOLA_ERROR_PARSE, 3,
     "expected $EndMeshFormat"},
    {"no $EndNodes", F22 "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n" E22, 0,
     PIOLA_ERROR_PARSE, 10, "expected $EndNodes"},
    {"nodes cut off", F22 "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n", 0, PIOLA_ERROR_PARSE, 9,
     "node 4 of 4"},
    {"$EndNodes too early", F22 "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n$EndNodes\n" E22, 0,
     PIOLA_ERROR_PARSE, 9, "found '$EndNodes' where node 4 of 4"},
    {"malformed coordinate", F22 "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1,5 0\n4 0 0 1\n$EndNodes\n" E22,
     0, PIOLA_ERROR_PARSE, 8, "malformed y coordinate"},
    {"junk after a number",
     F22 "$Nodes\n4\n1 0 0 0\n2 1 0 0.5abc\n3 0 1 0\n4 0 0 1\n$EndNodes\n" E22, 0,
     PIOLA_ERROR_PARSE, 7, "malformed z coordinate"},
    {"NaN coordinate", F22 "$Nodes\n4\n1 0 0 0\n2 nan 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n" E22, 0,
     PIOLA_ERROR_NON_FINITE, 7, NULL},
    {"coordinate beyond float",
     F22 "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1e39\n$EndNodes\n" E22, 0,
     PIOLA_ERROR_NON_FINITE, 9, NULL},
    {"node tag 0", F22 "$Nodes\n4\n0 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n" E22, 0,
     PIOLA_ERROR_PARSE, 6, "node tag"},
    {"node tag beyond 64 bits",
     F22 "$Nodes\n4\n1 0 0 0\n99999999999999999999999 1 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n" E22, 0,
     PIOLA_ERROR_PARSE, 7, "99999999999999999999999"},
    {"node tag defined twice", F22 "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n2 0 0 1\n$EndNodes\n" E22,
     0, PIOLA_ERROR_PARSE, 9, "node tag 2 defined again (first on line 7)"},
    {"node line with 5 fields",
     F22 "$Nodes\n4\n1 0 0 0\n2 1 0 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n" E22, 0, PIOLA_ERROR_PARSE,
     7, "expected 4 fields"},
    {"'#' is no comment in .msh",
     F22 "$Nodes\n4\n1 0 0 0\n# a comment\n2 1 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n" E22, 0,
     PIOLA_ERROR_PARSE, 7, "expected 4 fields"},
    {"absurd node count", F22 "$Nodes\n1073741824\n1 0 0 0\n$EndNodes\n", 0, PIOLA_ERROR_PARSE, 5,
     "out of range"},
    {"NUL byte", NUL_TEXT, sizeof NUL_TEXT - 1, PIOLA_ERROR_PARSE, 6, "NUL byte"},
    {"unknown node tag", F22 N22 "$Elements\n1\n1 4 2 0 1 1 2 3 9\n$EndElements\n", 0,
     PIOLA_ERROR_PARSE, 13, "node tag 9, which $Nodes does not define"},
    {"tet uses a node twice", F22 N22 "$Elements\n1\n1 4 2 0 1 1 2 2 4\n$EndElements\n", 0,
     PIOLA_ERROR_INVALID_MESH, 13, "uses node 2 twice"},
    {"tet with 3 nodes", F22 N22 "$Elements\n1\n1 4 2 0 1 1 2 3\n$EndElements\n", 0,
     PIOLA_ERROR_PARSE, 13, "expected 4"},
    {"too many element tags", F22 N22 "$Elements\n1\n1 4 9 0 1 1 2 3 4\n$EndElements\n", 0,
     PIOLA_ERROR_PARSE, 13, "number of element tags"},
    {"malformed element type", F22 N22 "$Elements\n1\n1 x 2 0 1 1 2 3 4\n$EndElements\n", 0,
     PIOLA_ERROR_PARSE, 13, "malformed element type"},
    {"malformed node tag of a triangle", F22 N22 "$Elements\n1\n1 2 2 0 1 1 2 3.5\n$EndElements\n",
     0, PIOLA_ERROR_PARSE, 13, "malformed node tag"},
    {"no tets", F22 N22 "$Elements\n1\n1 2 2 0 1 1 2 3\n$EndElements\n", 0,
     PIOLA_ERROR_INVALID_MESH, 11, "no tetrahedra"},
    {"elements cut off", F22 N22 "$Elements\n2\n1 4 2 0 1 1 2 3 4\n", 0, PIOLA_ERROR_PARSE, 14,
     "element 2 of 2"},
    {"no $EndElements", F22 N22 "$Elements\n1\n1 4 2 0 1 1 2 3 4\n", 0, PIOLA_ERROR_PARSE, 14,
     "$EndElements is missing"},
    {"no $Elements section", F22 N22, 0, PIOLA_ERROR_PARSE, 11, "no $Elements section"},
    {"no $Nodes section", F22, 0, PIOLA_ERROR_PARSE, 4, "no $Nodes section"},
    {"$Elements before $Nodes", F22 E22 N22, 0, PIOLA_ERROR_PARSE, 4, "$Elements before $Nodes"},
    {"second $Nodes section", F22 N22 N22 E22, 0, PIOLA_ERROR_PARSE, 11, "second $Nodes"},
    {"unterminated section", F22 "$PhysicalNames\n1\n3 1 \"body\"\n" N22 E22, 0, PIOLA_ERROR_PARSE,
     18, "$EndPhysicalNames is missing"},
    {"junk between sections", F22 "hello\n" N22 E22, 0, PIOLA_ERROR_PARSE, 4, "expected a section"},
    {"stray $End marker", F22 "$EndNodes\n" N22 E22, 0, PIOLA_ERROR_PARSE, 4,
     "closes a section that was not opened"},
    {"4.1: blocks hold fewer nodes", F41 "$Nodes\n1 5 1 5\n3 1 0 4\n" N41_TAIL E41, 0,
     PIOLA_ERROR_PARSE, 5, "hold 4 nodes, the header declares 5"},
    {"4.1: a block holds more nodes", F41 "$Nodes\n1 3 1 4\n3 1 0 4\n" N41_TAIL E41, 0,
     PIOLA_ERROR_PARSE, 6, "more than the 3 nodes"},
    {"4.1: parametric flag 2", F41 "$Nodes\n1 4 1 4\n3 1 2 4\n" N41_TAIL E41, 0, PIOLA_ERROR_PARSE,
     6, "parametric flag"},
    {"4.1: entity dimension 4", F41 "$Nodes\n1 4 1 4\n4 1 0 4\n" N41_TAIL E41, 0, PIOLA_ERROR_PARSE,
     6, "entity dimension"},
    {"4.1: two tags on a line",
     F41 "$Nodes\n1 4 1 4\n3 1 0 4\n1 2\n3\n4\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n$EndNodes\n" E41, 0,
     PIOLA_ERROR_PARSE, 7, "expected 1 field (a node tag), found 2"},
    {"4.1: coordinates where a tag belongs",
     F41 "$Nodes\n1 4 1 4\n3 1 0 4\n1\n2\n3\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n$EndNodes\n" E41, 0,
     PIOLA_ERROR_PARSE, 10, "found 3"},
    {"4.1: parametric coordinates left out", F41 "$Nodes\n1 4 1 4\n3 1 1 4\n" N41_TAIL E41, 0,
     PIOLA_ERROR_PARSE, 11, "expected 6 fields"},
    {"4.1: extra coordinate",
     F41 "$Nodes\n1 4 1 4\n3 1 0 4\n1\n2\n3\n4\n0 0 0\n1 0 0 7\n0 1 0\n0 0 1\n$EndNodes\n" E41, 0,
     PIOLA_ERROR_PARSE, 12, "expected 3 fields"},
    {"4.1: no $EndNodes", F41 "$Nodes\n1 4 1 4\n3 1 0 4\n1\n2\n3\n4\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n",
     0, PIOLA_ERROR_PARSE, 15, "$EndNodes is missing"},
    {"4.1: tets in a surface block",
     F41 N41 "$Elements\n1 1 1 1\n2 1 4 1\n1 1 2 3 4\n$EndElements\n", 0, PIOLA_ERROR_PARSE, 18,
     "dimension"},
    {"4.1: blocks hold fewer elements",
     F41 N41 "$Elements\n1 2 1 2\n3 1 4 1\n1 1 2 3 4\n$EndElements\n", 0, PIOLA_ERROR_PARSE, 17,
     "hold 1 elements, the header declares 2"},
    {"4.1: 10-node tet with 4 nodes",
     F41 N41 "$Elements\n1 1 1 1\n3 1 11 1\n1 1 2 3 4\n$EndElements\n", 0, PIOLA_ERROR_PARSE, 19,
     "expected 10"},
    {"4.1: unknown node tag", F41 N41 "$Elements\n1 1 1 1\n3 1 4 1\n1 1 2 3 5\n$EndElements\n", 0,
     PIOLA_ERROR_PARSE, 19, "node tag 5"},
    {"4.1: $EndElements too early",
     F41 N41 "$Elements\n1 2 1 2\n3 1 4 2\n1 1 2 3 4\n$EndElements\n", 0, PIOLA_ERROR_PARSE, 20,
     "found '$EndElements' where element 2 of 2"},
    {"4.1: no $EndElements", F41 N41 "$Elements\n1 1 1 1\n3 1 4 1\n1 1 2 3 4\n", 0,
     PIOLA_ERROR_PARSE, 20, "$EndElements is missing"},
    {"4.1: only a surface", F41 N41 "$Elements\n1 1 1 1\n2 1 2 1\n1 1 2 3\n$EndElements\n", 0,
     PIOLA_ERROR_INVALID_MESH, 16, "no tetrahedra"},
};

void test_gmsh_load_errors(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  /* The templates themselves load. */
  const char *path = scratch_write(&s, "good.msh", F22 N22 E22, 0);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  CHECK_STATUS(t, piola_mesh_load_gmsh(path, &m), PIOLA_OK);
  CHECK(t, m.vertex_count == 4 && m.tet_count == 1);
  piola_mesh_free(&m);
  path = scratch_write(&s, "good.msh", F41 N41 E41, 0);
  CHECK_STATUS(t, piola_mesh_load_gmsh(path, &m), PIOLA_OK);
  CHECK(t, m.vertex_count == 4 && m.tet_count == 1);
  piola_mesh_free(&m);

  for (size_t i = 0; i < sizeof broken_cases / sizeof broken_cases[0]; ++i) {
    const broken_case *c = &broken_cases[i];
    path = scratch_write(&s, "broken.msh", c->text, c->len > 0 ? c->len : strlen(c->text));
    CHECK_MSG(t, path != NULL, "%s: cannot write the file", c->what);
    if (path == NULL) {
      continue;
    }
    piola_test_log log;
    piola_logger logger = test_logger(&log);
    float dummy_positions[3] = {1, 2, 3};
    int32_t dummy_tets[4] = {0, 0, 0, 0};
    m = (piola_tet_mesh){dummy_positions, 77, dummy_tets, 88};
    piola_status status = piola_mesh_load_gmsh_logged(path, &logger, &m);
    CHECK_MSG(t, status == c->expected, "%s: returned '%s', expected '%s'", c->what,
              piola_status_string(status), piola_status_string(c->expected));
    CHECK_MSG(t,
              m.positions == dummy_positions && m.vertex_count == 77 && m.tets == dummy_tets &&
                  m.tet_count == 88,
              "%s: the output was changed", c->what);
    CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] == 1 && log.count[PIOLA_LOG_WARNING] == 0,
              "%s: %d error messages, expected 1", c->what, log.count[PIOLA_LOG_ERROR]);
    char where[64];
    snprintf(where, sizeof where, "broken.msh:%d: ", c->line);
    CHECK_MSG(t, strstr(log.last, where) != NULL && strstr(log.last, path) != NULL,
              "%s: the message '%s' does not name '%s'", c->what, log.last, where);
    CHECK_MSG(t, c->words == NULL || strstr(log.last, c->words) != NULL,
              "%s: the message '%s' does not say '%s'", c->what, log.last,
              c->words != NULL ? c->words : "");
    if (status == PIOLA_OK) {
      piola_mesh_free(&m);
    }
  }
  scratch_close(&s);
}

void test_gmsh_missing_file(piola_test *t) {
  scratch s;
  REQUIRE(t, scratch_open(&s));
  const char *missing = scratch_path(&s, "missing.msh");
  REQUIRE(t, missing != NULL);
  piola_test_log log;
  piola_logger logger = test_logger(&log);
  piola_tet_mesh m = {NULL, 0, NULL, 0};
  CHECK_STATUS(t, piola_mesh_load_gmsh_logged(missing, &logger, &m), PIOLA_ERROR_IO);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 1 && strstr(log.last, missing) != NULL);
  CHECK(t, m.positions == NULL && m.tets == NULL && m.vertex_count == 0 && m.tet_count == 0);
  CHECK_STATUS(t, piola_mesh_load_gmsh(missing, &m), PIOLA_ERROR_IO);
#if !defined(_WIN32)
  /* A folder opens on POSIX but cannot be read. */
  logger = test_logger(&log);
  CHECK_STATUS(t, piola_mesh_load_gmsh_logged(s.dir, &logger, &m), PIOLA_ERROR_IO);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 1 && strstr(log.last, s.dir) != NULL);
#endif
  logger = test_logger(&log);
  CHECK_STATUS(t, piola_mesh_load_gmsh_logged(NULL, &logger, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_mesh_load_gmsh_logged(missing, &logger, NULL),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 2);
  CHECK_STATUS(t, piola_mesh_load_gmsh(NULL, &m), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, m.positions == NULL && m.tets == NULL);
  scratch_close(&s);
}

/* ---- Files written by Gmsh --------------------------------------------------------------------
 */

/* 6 times the signed volume of tet i. */
static double tet_det(const piola_tet_mesh *m, int32_t i) {
  const int32_t *v = m->tets + 4 * (size_t)i;
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

/* tests/data/gmsh_box.geo: a 1 x 0.5 x 0.25 m box, meshed by Gmsh 4.8.4 with
 *   gmsh -3 -format msh41 gmsh_box.geo -o gmsh_box.msh
 *   gmsh -3 -order 2 -format msh41 gmsh_box.geo -o gmsh_box_order2.msh
 * No physical groups, so the files hold every element: points, lines, triangles (6-node in the
 * second file) and tets (10-node). */
void test_gmsh_real_files(piola_test *t) {
#if defined(PIOLA_TEST_SOURCE_DIR)
  char path[1024], path2[1024];
  snprintf(path, sizeof path, "%s/data/gmsh_box.msh", PIOLA_TEST_SOURCE_DIR);
  snprintf(path2, sizeof path2, "%s/data/gmsh_box_order2.msh", PIOLA_TEST_SOURCE_DIR);
  piola_test_log log;
  piola_logger logger = test_logger(&log);
  piola_tet_mesh m = {NULL, 0, NULL, 0}, m2 = {NULL, 0, NULL, 0};
  REQUIRE_OK(t, piola_mesh_load_gmsh_logged(path, &logger, &m));
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0 && log.count[PIOLA_LOG_WARNING] == 0);
  CHECK_MSG(t, m.vertex_count == 36 && m.tet_count == 78, "%d vertices, %d tets",
            (int)m.vertex_count, (int)m.tet_count);
  /* Gmsh's corner order is Piola's orientation: every tet positive; they fill the box. */
  int32_t non_positive = 0;
  double volume = 0.0;
  for (int32_t i = 0; i < m.tet_count; ++i) {
    double d = tet_det(&m, i);
    non_positive += !(d > 0.0);
    volume += d / 6.0;
  }
  CHECK_MSG(t, non_positive == 0, "%d tets not positively oriented", (int)non_positive);
  CHECK_NEAR(t, volume, 0.125, 1e-6);
  float lo[3] = {1e30f, 1e30f, 1e30f}, hi[3] = {-1e30f, -1e30f, -1e30f};
  for (int32_t v = 0; v < m.vertex_count; ++v) {
    for (int a = 0; a < 3; ++a) {
      float x = m.positions[3 * v + a];
      lo[a] = x < lo[a] ? x : lo[a];
      hi[a] = x > hi[a] ? x : hi[a];
    }
  }
  CHECK(t, lo[0] == 0.0f && lo[1] == 0.0f && lo[2] == 0.0f);
  CHECK(t, hi[0] == 1.0f && hi[1] == 0.5f && hi[2] == 0.25f);
  /* The second-order file gives the same mesh through its tets' corners. */
  logger = test_logger(&log);
  REQUIRE_OK(t, piola_mesh_load_gmsh_logged(path2, &logger, &m2));
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0 && log.count[PIOLA_LOG_WARNING] == 0);
  CHECK_MSG(t, same_mesh(&m, &m2), "%d vertices, %d tets", (int)m2.vertex_count, (int)m2.tet_count);
  /* Into a world: no tet reoriented, no vertex outside the tets (both would warn), a closed
   * surface of the box's area. */
  piola_world_def def = piola_test_world_def(&log, NULL);
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_material material = piola_default_material();
  piola_body_id body;
  CHECK_STATUS(t, piola_world_add_tet_body(w, &m, &material, NULL, &body), PIOLA_OK);
  CHECK_MSG(t, log.count[PIOLA_LOG_WARNING] == 0, "warning: %s", log.last);
  int32_t count = 0;
  CHECK_STATUS(t, piola_body_get_surface(w, body, NULL, 0, &count), PIOLA_OK);
  int32_t *tri = malloc(3 * sizeof(int32_t) * (size_t)(count > 0 ? count : 1));
  if (tri != NULL && count > 0) {
    CHECK_STATUS(t, piola_body_get_surface(w, body, tri, count, &count), PIOLA_OK);
    double area = 0.0, flux = 0.0; /* flux of the field (x, 0, 0) through the surface = volume */
    for (int32_t i = 0; i < count; ++i) {
      const float *a = m.positions + 3 * tri[3 * i], *b = m.positions + 3 * tri[3 * i + 1],
                  *c = m.positions + 3 * tri[3 * i + 2];
      double u[3], v[3];
      for (int k = 0; k < 3; ++k) {
        u[k] = (double)b[k] - a[k];
        v[k] = (double)c[k] - a[k];
      }
      double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                     u[0] * v[1] - u[1] * v[0]};
      area += 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
      flux += 0.5 * n[0] * ((double)a[0] + b[0] + c[0]) / 3.0;
    }
    CHECK_NEAR(t, area, 2.0 * (0.5 + 0.25 + 0.125), 1e-5);
    CHECK_NEAR(t, flux, 0.125, 1e-6);
  }
  CHECK(t, tri != NULL && count > 0);
  free(tri);
  piola_world_destroy(w);
  piola_mesh_free(&m);
  piola_mesh_free(&m2);
#else
  CHECK_MSG(t, false, "PIOLA_TEST_SOURCE_DIR is not defined");
#endif
}

/* The programs' --mesh option: a .msh path goes to the Gmsh loader (any case of the extension),
 * anything else to the TetGen loader. */
void test_gmsh_scene_mesh_option(piola_test *t) {
#if defined(PIOLA_TEST_SOURCE_DIR)
  char path[1024];
  snprintf(path, sizeof path, "%s/data/gmsh_box.msh", PIOLA_TEST_SOURCE_DIR);
  scene_options o = scene_default_options();
  o.mesh_path = path;
  piola_tet_mesh m = {NULL, 0, NULL, 0}, direct = {NULL, 0, NULL, 0};
  char name[64];
  REQUIRE_OK(t, scene_load_mesh(&o, &m, name, sizeof name));
  CHECK_MSG(t, strcmp(name, "gmsh_box") == 0, "name '%s'", name);
  REQUIRE_OK(t, piola_mesh_load_gmsh(path, &direct));
  REQUIRE(t, m.vertex_count == direct.vertex_count && m.tet_count == direct.tet_count);
  CHECK(t, memcmp(m.tets, direct.tets, 4 * sizeof(int32_t) * (size_t)m.tet_count) == 0);
  /* Centred like every scene mesh: x and z about 0, the lowest point at y = 0. */
  for (int32_t v = 0; v < m.vertex_count; ++v) {
    CHECK_NEAR(t, m.positions[3 * v + 0], direct.positions[3 * v + 0] - 0.5f, 1e-6);
    CHECK_NEAR(t, m.positions[3 * v + 1], direct.positions[3 * v + 1], 1e-6);
    CHECK_NEAR(t, m.positions[3 * v + 2], direct.positions[3 * v + 2] - 0.125f, 1e-6);
  }
  piola_mesh_free(&m);
  piola_mesh_free(&direct);
  /* The loader is chosen by the extension (any case), not by trying both: TetGen content in a
   * .msh or .MSH file is refused as Gmsh (the TetGen loader would look for a missing .node
   * file: an I/O error); a .node path goes to TetGen. */
  scratch s;
  REQUIRE(t, scratch_open(&s));
  static const char *const names[2] = {"fake.msh", "fake.MSH"};
  for (int i = 0; i < 2; ++i) {
    o.mesh_path = scratch_write(&s, names[i], "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n", 0);
    REQUIRE(t, o.mesh_path != NULL);
    CHECK_STATUS(t, scene_load_mesh(&o, &m, name, sizeof name), PIOLA_ERROR_PARSE);
    CHECK(t, m.positions == NULL && m.tets == NULL);
  }
  o.mesh_path = scratch_write(&s, "tet.node", "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n", 0);
  REQUIRE(t, o.mesh_path != NULL && scratch_write(&s, "tet.ele", "1 4 0\n0 0 1 2 3\n", 0) != NULL);
  CHECK_STATUS(t, scene_load_mesh(&o, &m, name, sizeof name), PIOLA_OK);
  CHECK(t, m.vertex_count == 4 && m.tet_count == 1);
  piola_mesh_free(&m);
  scratch_close(&s);
#else
  CHECK_MSG(t, false, "PIOLA_TEST_SOURCE_DIR is not defined");
#endif
}
