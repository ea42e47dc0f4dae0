/* Piola mesh I/O: reads and writes tetrahedral meshes as TetGen .node/.ele pairs, the format of
 * Si 2015, "TetGen, a Delaunay-based quality tetrahedral mesh generator", ACM Transactions on
 * Mathematical Software 41(2), Article 11 (file formats: the TetGen user manual, Sec. 5.2).
 *
 *   .node  <#points> <dimension (3)> <#attributes> <boundary markers (0 or 1)>
 *          then per point: <index> <x> <y> <z> [attributes] [boundary marker]
 *   .ele   <#tets> <nodes per tet (4)> <#attributes>
 *          then per tet:   <index> <n1> <n2> <n3> <n4> [attributes]
 *
 * '#' starts a comment anywhere on a line; blank lines are skipped; fields are separated by
 * blanks (spaces, tabs, CR for files written on Windows). As in TetGen's own reader, trailing
 * header fields may be left out (dimension 3, no attributes, no markers, 4 nodes per tet).
 * Numbering starts at 0 or 1, as the first point index of the .node file says; the points and
 * the tets must be numbered consecutively from there, and the .ele uses the same base.
 * Attributes and boundary markers are checked for being numbers, then dropped.
 *
 * Everything is checked: malformed or missing fields, counts (0 < n < 2^30), records missing
 * at the end of a file, content after the declared records, non-finite coordinates, vertex
 * indices out of range or repeated within a tet. Each failure logs exactly one message,
 * "path:line: what", and leaves the caller's mesh untouched. Lines may be up to 16 MiB long.
 * Arrays grow with the records actually read, so a header that declares a huge count does not
 * allocate memory the file cannot fill. Numbers are read and written with '.' as the decimal
 * point whatever the C locale of the process is.
 */
#include "piola_internal.h"

#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MESH_COUNT_LIMIT ((int64_t)1 << 30)     /* counts must be below this */
#define MESH_ATTRIBUTE_LIMIT ((int64_t)1 << 20) /* attributes per record below this */

/* ---- Loading ------------------------------------------------------------------------------ */

/* Parses a count field of a header: an integer in [0, limit). */
static piola_status header_count(const piola_line_reader *r, piola_field f, const char *what,
                                 int64_t limit, int64_t *out) {
  int64_t v = 0;
  if (!piola_parse_integer(f, &v)) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "malformed %s '%.*s'", what,
                             PIOLA_FIELD_SHOWN(f));
  }
  if (v < 0 || v >= limit) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "%s '%.*s' out of range (0 to %lld)", what, PIOLA_FIELD_SHOWN(f),
                             (long long)(limit - 1));
  }
  *out = v;
  return PIOLA_OK;
}

/* Checks that the file has nothing but blanks and comments after its last record. */
static piola_status expect_end(piola_line_reader *r, int64_t records, const char *what,
                               long header_line) {
  bool got = false;
  piola_status s = piola_next_record(r, &got);
  if (s != PIOLA_OK) {
    return s;
  }
  if (got) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "unexpected content after the %lld %s declared on line %ld",
                             (long long)records, what, header_line);
  }
  return PIOLA_OK;
}

typedef struct node_file {
  float *positions;
  int64_t count;
  int64_t base; /* 0 or 1 */
} node_file;

typedef struct node_layout {
  int64_t attributes; /* per point */
  int64_t markers;    /* 0 or 1 per point */
  long header_line;
} node_layout;

static piola_status read_node_header(piola_line_reader *r, int64_t *count, node_layout *layout) {
  bool got = false;
  piola_status s = piola_next_record(r, &got);
  if (s != PIOLA_OK) {
    return s;
  }
  if (!got) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number + 1,
                             "%s: expected the header '<#points> 3 <#attributes> <0|1>'",
                             r->line_number == 0 ? "empty file" : "only comments and blank lines");
  }
  layout->header_line = r->line_number;
  int64_t n = piola_count_fields(r->line);
  if (n > 4) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "header has %lld fields, expected '<#points> 3 <#attributes> <0|1>'",
                             (long long)n);
  }
  const char *cursor = r->line;
  int64_t dimension = 3, attributes = 0, markers = 0;
  s = header_count(r, piola_next_field(&cursor), "point count", MESH_COUNT_LIMIT, count);
  if (s == PIOLA_OK && n > 1) {
    piola_field f = piola_next_field(&cursor);
    if (!piola_parse_integer(f, &dimension)) {
      s = piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "malformed dimension '%.*s'",
                            PIOLA_FIELD_SHOWN(f));
    } else if (dimension != 3) {
      s = piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "dimension must be 3, found %lld",
                            (long long)dimension);
    }
  }
  if (s == PIOLA_OK && n > 2) {
    s = header_count(r, piola_next_field(&cursor), "attribute count", MESH_ATTRIBUTE_LIMIT,
                     &attributes);
  }
  if (s == PIOLA_OK && n > 3) {
    piola_field f = piola_next_field(&cursor);
    if (!piola_parse_integer(f, &markers) || (markers != 0 && markers != 1)) {
      s = piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                            "boundary marker flag must be 0 or 1, found '%.*s'",
                            PIOLA_FIELD_SHOWN(f));
    }
  }
  if (s == PIOLA_OK && *count == 0) {
    s = piola_reader_fail(r, PIOLA_ERROR_INVALID_MESH, r->line_number,
                          "the file declares no points");
  }
  layout->attributes = attributes;
  layout->markers = markers;
  return s;
}

static piola_status read_node_record(piola_line_reader *r, node_file *nodes, int64_t i,
                                     const node_layout *layout) {
  static const char axis_name[3] = {'x', 'y', 'z'};
  int64_t n = piola_count_fields(r->line);
  int64_t fields = 4 + layout->attributes + layout->markers;
  if (n < 4) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "expected 3 coordinates after the point index, found %lld",
                             (long long)(n - 1));
  }
  if (n != fields) {
    return piola_reader_fail(
        r, PIOLA_ERROR_PARSE, r->line_number,
        "expected %lld fields (index, x, y, z, then %lld attribute(s) and %lld "
        "boundary marker(s) as the header on line %ld says), found %lld",
        (long long)fields, (long long)layout->attributes, (long long)layout->markers,
        layout->header_line, (long long)n);
  }
  const char *cursor = r->line;
  piola_field f = piola_next_field(&cursor);
  int64_t index = 0;
  if (!piola_parse_integer(f, &index)) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "malformed point index '%.*s'",
                             PIOLA_FIELD_SHOWN(f));
  }
  if (i == 0) {
    if (index != 0 && index != 1) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                               "the first point index must be 0 or 1, found '%.*s'",
                               PIOLA_FIELD_SHOWN(f));
    }
    nodes->base = index;
  } else if (index != nodes->base + i) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "point index '%.*s' out of sequence, expected %lld",
                             PIOLA_FIELD_SHOWN(f), (long long)(nodes->base + i));
  }
  for (int k = 0; k < 3; ++k) {
    double v = 0.0;
    f = piola_next_field(&cursor);
    if (!piola_parse_real(f, &v)) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                               "malformed %c coordinate '%.*s' of point %lld", axis_name[k],
                               PIOLA_FIELD_SHOWN(f), (long long)index);
    }
    if (!isfinite(v) || fabs(v) > FLT_MAX) {
      return piola_reader_fail(r, PIOLA_ERROR_NON_FINITE, r->line_number,
                               "%c coordinate '%.*s' of point %lld is not a finite float",
                               axis_name[k], PIOLA_FIELD_SHOWN(f), (long long)index);
    }
    nodes->positions[3 * i + k] = (float)v;
  }
  for (int64_t a = 4; a < n; ++a) {
    double v = 0.0;
    f = piola_next_field(&cursor);
    if (!piola_parse_real(f, &v)) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                               "malformed attribute or boundary marker '%.*s' of point %lld",
                               PIOLA_FIELD_SHOWN(f), (long long)index);
    }
  }
  return PIOLA_OK;
}

static piola_status read_node_file(piola_line_reader *r, node_file *nodes) {
  int64_t cap = 0;
  node_layout layout = {0, 0, 0};
  piola_status s = read_node_header(r, &nodes->count, &layout);
  for (int64_t i = 0; s == PIOLA_OK && i < nodes->count; ++i) {
    bool got = false;
    s = piola_next_record(r, &got);
    if (s != PIOLA_OK) {
      break;
    }
    if (!got) {
      s = piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number + 1,
                            "unexpected end of file: point %lld of %lld is missing (the header on "
                            "line %ld declares %lld points)",
                            (long long)(i + 1), (long long)nodes->count, layout.header_line,
                            (long long)nodes->count);
      break;
    }
    void *array = nodes->positions;
    if (!piola_grow_records(&array, &cap, i + 1, nodes->count, 3 * sizeof(float))) {
      s = piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, r->line_number,
                            "out of memory for %lld points", (long long)nodes->count);
      break;
    }
    nodes->positions = array;
    s = read_node_record(r, nodes, i, &layout);
  }
  if (s == PIOLA_OK) {
    s = expect_end(r, nodes->count, "points", layout.header_line);
  }
  return s;
}

typedef struct ele_file {
  int32_t *tets;
  int64_t count;
} ele_file;

static piola_status read_ele_header(piola_line_reader *r, int64_t *count, int64_t *fields,
                                    long *header_line) {
  bool got = false;
  piola_status s = piola_next_record(r, &got);
  if (s != PIOLA_OK) {
    return s;
  }
  if (!got) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number + 1,
                             "%s: expected the header '<#tets> 4 <#attributes>'",
                             r->line_number == 0 ? "empty file" : "only comments and blank lines");
  }
  *header_line = r->line_number;
  int64_t n = piola_count_fields(r->line);
  if (n > 3) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "header has %lld fields, expected '<#tets> 4 <#attributes>'",
                             (long long)n);
  }
  const char *cursor = r->line;
  int64_t corners = 4, attributes = 0;
  s = header_count(r, piola_next_field(&cursor), "tet count", MESH_COUNT_LIMIT, count);
  if (s == PIOLA_OK && n > 1) {
    piola_field f = piola_next_field(&cursor);
    if (!piola_parse_integer(f, &corners)) {
      s = piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                            "malformed number of nodes per tet '%.*s'", PIOLA_FIELD_SHOWN(f));
    } else if (corners == 10) {
      s = piola_reader_fail(r, PIOLA_ERROR_UNSUPPORTED, r->line_number,
                            "10-node (quadratic) tets are not supported: mesh with 4-node tets "
                            "(tetgen without -o2)");
    } else if (corners != 4) {
      s = piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                            "nodes per tet must be 4, found %lld", (long long)corners);
    }
  }
  if (s == PIOLA_OK && n > 2) {
    s = header_count(r, piola_next_field(&cursor), "attribute count", MESH_ATTRIBUTE_LIMIT,
                     &attributes);
  }
  if (s == PIOLA_OK && *count == 0) {
    s = piola_reader_fail(r, PIOLA_ERROR_INVALID_MESH, r->line_number, "the file declares no tets");
  }
  *fields = 5 + attributes;
  return s;
}

static piola_status read_ele_record(piola_line_reader *r, ele_file *ele, int64_t i, int64_t fields,
                                    const node_file *nodes) {
  int64_t n = piola_count_fields(r->line);
  if (n < 5) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "expected 4 vertex indices after the tet index, found %lld",
                             (long long)(n - 1));
  }
  if (n != fields) {
    return piola_reader_fail(
        r, PIOLA_ERROR_PARSE, r->line_number,
        "expected %lld fields (index, 4 vertex indices, then %lld attribute(s) as "
        "the header says), found %lld",
        (long long)fields, (long long)(fields - 5), (long long)n);
  }
  const char *cursor = r->line;
  piola_field f = piola_next_field(&cursor);
  int64_t index = 0;
  if (!piola_parse_integer(f, &index)) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "malformed tet index '%.*s'",
                             PIOLA_FIELD_SHOWN(f));
  }
  if (index != nodes->base + i) {
    return piola_reader_fail(
        r, PIOLA_ERROR_PARSE, r->line_number,
        "tet index '%.*s' out of sequence, expected %lld (numbering from %lld, "
        "as in the .node file)",
        PIOLA_FIELD_SHOWN(f), (long long)(nodes->base + i), (long long)nodes->base);
  }
  int32_t *tet = ele->tets + 4 * i;
  for (int k = 0; k < 4; ++k) {
    int64_t v = 0;
    f = piola_next_field(&cursor);
    if (!piola_parse_integer(f, &v)) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                               "malformed vertex index '%.*s' of tet %lld", PIOLA_FIELD_SHOWN(f),
                               (long long)index);
    }
    if (v < nodes->base || v - nodes->base >= nodes->count) {
      return piola_reader_fail(r, PIOLA_ERROR_INVALID_MESH, r->line_number,
                               "vertex index '%.*s' of tet %lld out of range %lld..%lld (numbering "
                               "from %lld, as in the .node file)",
                               PIOLA_FIELD_SHOWN(f), (long long)index, (long long)nodes->base,
                               (long long)(nodes->base + nodes->count - 1), (long long)nodes->base);
    }
    tet[k] = (int32_t)(v - nodes->base);
    for (int j = 0; j < k; ++j) {
      if (tet[j] == tet[k]) {
        return piola_reader_fail(r, PIOLA_ERROR_INVALID_MESH, r->line_number,
                                 "tet %lld uses vertex %lld twice", (long long)index, (long long)v);
      }
    }
  }
  for (int64_t a = 5; a < n; ++a) {
    double v = 0.0;
    f = piola_next_field(&cursor);
    if (!piola_parse_real(f, &v)) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                               "malformed attribute '%.*s' of tet %lld", PIOLA_FIELD_SHOWN(f),
                               (long long)index);
    }
  }
  return PIOLA_OK;
}

static piola_status read_ele_file(piola_line_reader *r, ele_file *ele, const node_file *nodes) {
  int64_t fields = 5, cap = 0;
  long header_line = 0;
  piola_status s = read_ele_header(r, &ele->count, &fields, &header_line);
  for (int64_t i = 0; s == PIOLA_OK && i < ele->count; ++i) {
    bool got = false;
    s = piola_next_record(r, &got);
    if (s != PIOLA_OK) {
      break;
    }
    if (!got) {
      s = piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number + 1,
                            "unexpected end of file: tet %lld of %lld is missing (the header on "
                            "line %ld declares %lld tets)",
                            (long long)(i + 1), (long long)ele->count, header_line,
                            (long long)ele->count);
      break;
    }
    void *array = ele->tets;
    if (!piola_grow_records(&array, &cap, i + 1, ele->count, 4 * sizeof(int32_t))) {
      s = piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, r->line_number,
                            "out of memory for %lld tets", (long long)ele->count);
      break;
    }
    ele->tets = array;
    s = read_ele_record(r, ele, i, fields, nodes);
  }
  if (s == PIOLA_OK) {
    s = expect_end(r, ele->count, "tets", header_line);
  }
  return s;
}

piola_status piola_mesh_load_tetgen_logged(const char *node_path, const char *ele_path,
                                           const piola_logger *logger, piola_tet_mesh *out) {
  if (node_path == NULL || ele_path == NULL || out == NULL) {
    piola_log(logger, PIOLA_LOG_ERROR, "piola_mesh_load_tetgen: %s is NULL",
              node_path == NULL  ? "node_path"
              : ele_path == NULL ? "ele_path"
                                 : "out");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  node_file nodes = {NULL, 0, 0};
  ele_file ele = {NULL, 0};
  piola_line_reader r;
  piola_status s = piola_reader_open(&r, node_path, logger);
  if (s == PIOLA_OK) {
    s = read_node_file(&r, &nodes);
    piola_reader_close(&r);
  }
  if (s == PIOLA_OK) {
    s = piola_reader_open(&r, ele_path, logger);
    if (s == PIOLA_OK) {
      s = read_ele_file(&r, &ele, &nodes);
      piola_reader_close(&r);
    }
  }
  if (s != PIOLA_OK) {
    free(nodes.positions);
    free(ele.tets);
    return s;
  }
  /* The arrays hold exactly the declared counts (piola_grow_records stops at the count). */
  out->positions = nodes.positions;
  out->vertex_count = (int32_t)nodes.count;
  out->tets = ele.tets;
  out->tet_count = (int32_t)ele.count;
  return PIOLA_OK;
}

piola_status piola_mesh_load_tetgen(const char *node_path, const char *ele_path,
                                    piola_tet_mesh *out) {
  return piola_mesh_load_tetgen_logged(node_path, ele_path, NULL, out);
}

/* ---- Saving ----------------------------------------------------------------------------- */

static bool write_node_file(const piola_tet_mesh *mesh, FILE *f) {
  bool ok = fprintf(f, "# TetGen .node file written by Piola (0-based)\n%d 3 0 0\n",
                    (int)mesh->vertex_count) > 0;
  for (int32_t i = 0; ok && i < mesh->vertex_count; ++i) {
    char x[64], y[64], z[64];
    piola_format_real(x, sizeof x, mesh->positions[3 * (size_t)i + 0]);
    piola_format_real(y, sizeof y, mesh->positions[3 * (size_t)i + 1]);
    piola_format_real(z, sizeof z, mesh->positions[3 * (size_t)i + 2]);
    ok = fprintf(f, "%d %s %s %s\n", (int)i, x, y, z) > 0;
  }
  return ok;
}

static bool write_ele_file(const piola_tet_mesh *mesh, FILE *f) {
  bool ok = fprintf(f, "# TetGen .ele file written by Piola (0-based)\n%d 4 0\n",
                    (int)mesh->tet_count) > 0;
  for (int32_t i = 0; ok && i < mesh->tet_count; ++i) {
    const int32_t *t = mesh->tets + 4 * (size_t)i;
    ok = fprintf(f, "%d %d %d %d %d\n", (int)i, (int)t[0], (int)t[1], (int)t[2], (int)t[3]) > 0;
  }
  return ok;
}

/* Writes one file; false on any I/O failure (the file may then be left partly written). */
static bool write_file(const char *path, const piola_tet_mesh *mesh,
                       bool (*writer)(const piola_tet_mesh *, FILE *)) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    return false;
  }
  bool ok = writer(mesh, f);
  ok = fflush(f) == 0 && ok && !ferror(f);
  return fclose(f) == 0 && ok;
}

piola_status piola_mesh_save_tetgen(const piola_tet_mesh *mesh, const char *node_path,
                                    const char *ele_path) {
  if (mesh == NULL || node_path == NULL || ele_path == NULL || mesh->positions == NULL ||
      mesh->tets == NULL || mesh->vertex_count <= 0 || mesh->tet_count <= 0) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < 3 * (size_t)mesh->vertex_count; ++i) {
    if (!isfinite(mesh->positions[i])) {
      return PIOLA_ERROR_NON_FINITE;
    }
  }
  for (size_t i = 0; i < 4 * (size_t)mesh->tet_count; ++i) {
    if (mesh->tets[i] < 0 || mesh->tets[i] >= mesh->vertex_count) {
      return PIOLA_ERROR_INVALID_MESH;
    }
  }
  if (!write_file(node_path, mesh, write_node_file) ||
      !write_file(ele_path, mesh, write_ele_file)) {
    return PIOLA_ERROR_IO;
  }
  return PIOLA_OK;
}

void piola_mesh_free(piola_tet_mesh *mesh) {
  if (mesh == NULL) {
    return;
  }
  free(mesh->positions);
  free(mesh->tets);
  memset(mesh, 0, sizeof *mesh);
}
