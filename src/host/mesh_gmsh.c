/* Piola Gmsh import: reads the tetrahedra of an ASCII .msh file, formats 2.2 and 4.1, as written
 * by Gmsh (Geuzaine and Remacle 2009, "Gmsh: a 3-D finite element mesh generator with built-in
 * pre- and post-processing facilities", IJNME 79(11); file format: the Gmsh reference manual,
 * "MSH file format").
 *
 *   $MeshFormat  <version (2.2 or 4.1)> <file-type (0: ASCII)> <data-size>     $EndMeshFormat
 *   2.2 $Nodes     <#nodes>, then per node: <tag> <x> <y> <z>                   $EndNodes
 *   2.2 $Elements  <#elements>, then per element:
 *                  <tag> <type> <#tags> <tags...> <node tags...>                $EndElements
 *   4.1 $Nodes     <#blocks> <#nodes> <min tag> <max tag>, then per block:
 *                  <entity dim> <entity tag> <parametric (0|1)> <#nodes in block>,
 *                  its node tags (one per line), then its coordinates, one node per line:
 *                  <x> <y> <z> (followed by <entity dim> parametric coordinates when
 *                  parametric is 1, which are checked for being numbers and dropped)
 *   4.1 $Elements  <#blocks> <#elements> <min tag> <max tag>, then per block:
 *                  <entity dim> <entity tag> <type> <#elements in block>, then per element:
 *                  <tag> <node tags...>
 *
 * One record per line, as Gmsh writes them; fields are separated by blanks (CR included, so
 * files written on Windows load). $Nodes must come before $Elements (the manual's order); every
 * other section ($PhysicalNames, $Entities, $PartitionedEntities, $Periodic, $NodeData,
 * $Comments, ...) is skipped up to its $End marker, so physical groups and partitions are
 * ignored. Binary files and MSH 4.0 return PIOLA_ERROR_UNSUPPORTED.
 *
 * Only tetrahedra are kept: 4-node tets (type 4) and 10-node tets (type 11) through their 4
 * corner nodes (a second-order mesh gives the first-order mesh of its corners). Points, lines,
 * triangles and quadrangles are ignored; other volume elements (hexahedra, prisms, pyramids)
 * are ignored with a warning to the logger, since the body then lacks their volume. Node tags
 * may be sparse and in any order: the nodes used by the tetrahedra get the indices 0, 1, ...
 * in ascending tag order, and nodes used by no tetrahedron (mid-edge nodes of 10-node tets,
 * geometry points) are dropped. Gmsh orders a tetrahedron's corners like its reference tet
 * (0,0,0), (1,0,0), (0,1,0), (0,0,1), so det[x1 - x0, x2 - x0, x3 - x0] > 0: Piola's
 * orientation; corners are kept in the file's order. As the TetGen loader, this loader does
 * not look at the geometry: piola_world_add_tet_body() reorients inverted tets and rejects
 * degenerate ones.
 *
 * Everything read is checked, with the statuses of the TetGen loader: malformed numbers or
 * fields, counts (below 2^30), node tags (positive, defined once), records missing before a
 * section's $End, missing $End markers, blocks that disagree with their section's header, a
 * node tag no $Nodes entry defines -> PIOLA_ERROR_PARSE; non-finite coordinates ->
 * PIOLA_ERROR_NON_FINITE; a tet using a node twice, or no tetrahedron at all ->
 * PIOLA_ERROR_INVALID_MESH. Each failure logs exactly one message, "path:line: what", and
 * leaves the caller's mesh untouched.
 */
#include "mesh_text.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Element types of the Gmsh manual: nodes and dimension of types 1..31 (0 nodes: no type). */
#define GMSH_TET4 4
#define GMSH_TET10 11
#define GMSH_KNOWN_TYPES 32
static const unsigned char gmsh_type_nodes[GMSH_KNOWN_TYPES] = {
    0, 2,  3,  4,  4, 8,  6,  5,  3,  6,  9, 10, 27, 18, 14, 1,
    8, 20, 15, 13, 9, 10, 12, 15, 15, 21, 4, 5,  6,  20, 35, 56};
static const unsigned char gmsh_type_dim[GMSH_KNOWN_TYPES] = {
    0, 1, 2, 2, 3, 3, 3, 3, 1, 2, 2, 3, 3, 3, 3, 0, 2, 3, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 3, 3, 3};

typedef struct tag_entry {
  int64_t tag;
  int32_t node; /* index in read order */
} tag_entry;

typedef struct gmsh_file {
  piola_line_reader r;
  int version; /* 2 (2.x) or 4 (4.1) */
  /* Nodes in read order, and their tags sorted for lookups. */
  int64_t node_count, node_cap;
  int64_t *node_tag;
  long *node_line; /* where each tag was read, for messages */
  float *node_xyz;
  tag_entry *by_tag;
  bool have_nodes, have_elements;
  long elements_line;
  /* Tets, 4 node indices (read order) each. */
  int64_t tet_count, tet_cap;
  int32_t *tets;
  int64_t ignored, ignored_volume; /* other elements; those of them that are volumes */
  int64_t quadratic;               /* 10-node tets read through their corners */
  long section_line;               /* the header line of the section being read */
  const char *section;             /* its name, for messages ("$Nodes") */
} gmsh_file;

static void gmsh_free(gmsh_file *g) {
  free(g->node_tag);
  free(g->node_line);
  free(g->node_xyz);
  free(g->by_tag);
  free(g->tets);
}

/* Reads the next non-blank line of a section's data. A line that is not there (the end of the
 * file, or a "$..." line) fails, naming what was expected with `format`. */
static piola_status data_line(gmsh_file *g, const char *format, ...) PIOLA_PRINTF(2, 3);
static piola_status data_line(gmsh_file *g, const char *format, ...) {
  bool got = false;
  piola_status s = piola_reader_record(&g->r, &got);
  if (s != PIOLA_OK) {
    return s;
  }
  const char *cursor = g->r.line;
  piola_field f = got ? piola_next_field(&cursor) : (piola_field){"", 0};
  if (got && (f.len == 0 || f.text[0] != '$')) {
    return PIOLA_OK;
  }
  char what[256];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  if (!got) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number + 1,
                             "unexpected end of file: %s is missing (in the %s section opened on "
                             "line %ld)",
                             what, g->section, g->section_line);
  }
  return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                           "found '%.*s' where %s was expected (in the %s section opened on line "
                           "%ld)",
                           PIOLA_FIELD_SHOWN(f), what, g->section, g->section_line);
}

/* Checks that the next line is the `end` marker of the section being read. */
static piola_status expect_marker(gmsh_file *g, const char *end, const char *after) {
  bool got = false;
  piola_status s = piola_reader_record(&g->r, &got);
  if (s != PIOLA_OK) {
    return s;
  }
  if (!got) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number + 1,
                             "unexpected end of file: %s is missing (the %s section opened on "
                             "line %ld)",
                             end, g->section, g->section_line);
  }
  const char *cursor = g->r.line;
  piola_field f = piola_next_field(&cursor);
  if (!piola_field_is(f, end) || piola_count_fields(g->r.line) != 1) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                             "expected %s after %s, found '%.*s'", end, after,
                             PIOLA_FIELD_SHOWN(f));
  }
  return PIOLA_OK;
}

/* Reads a line of exactly `n` fields into fields[]; `what` names the record for messages. */
static piola_status fixed_fields(gmsh_file *g, int n, piola_field *fields, const char *what) {
  int64_t found = piola_count_fields(g->r.line);
  if (found != n) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                             "expected %d field%s (%s), found %lld", n, n == 1 ? "" : "s", what,
                             (long long)found);
  }
  const char *cursor = g->r.line;
  for (int i = 0; i < n; ++i) {
    fields[i] = piola_next_field(&cursor);
  }
  return PIOLA_OK;
}

/* An integer field within [lo, hi]. */
static piola_status ranged_integer(gmsh_file *g, piola_field f, const char *what, int64_t lo,
                                   int64_t hi, int64_t *out) {
  if (!piola_parse_integer(f, out)) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number, "malformed %s '%.*s'",
                             what, PIOLA_FIELD_SHOWN(f));
  }
  if (*out < lo || *out > hi) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                             "%s '%.*s' out of range (%lld to %lld)", what, PIOLA_FIELD_SHOWN(f),
                             (long long)lo, (long long)hi);
  }
  return PIOLA_OK;
}

/* A node or element tag: a positive integer (below 2^63 - 1, where parsing saturates). */
static piola_status read_tag(gmsh_file *g, piola_field f, const char *what, int64_t *out) {
  return ranged_integer(g, f, what, 1, INT64_MAX - 1, out);
}

/* ---- $MeshFormat --------------------------------------------------------------------------- */

static piola_status read_format(gmsh_file *g) {
  bool got = false;
  piola_status s = piola_reader_record(&g->r, &got);
  if (s != PIOLA_OK) {
    return s;
  }
  if (!got) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number + 1,
                             "%s: expected $MeshFormat",
                             g->r.line_number == 0 ? "empty file" : "only blank lines");
  }
  const char *cursor = g->r.line;
  piola_field f = piola_next_field(&cursor);
  if (!piola_field_is(f, "$MeshFormat") || piola_count_fields(g->r.line) != 1) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                             "expected $MeshFormat, found '%.*s' (not a Gmsh .msh file?)",
                             PIOLA_FIELD_SHOWN(f));
  }
  g->section = "$MeshFormat";
  g->section_line = g->r.line_number;
  s = data_line(g, "the line '<version> <file-type> <data-size>'");
  piola_field v[3];
  if (s == PIOLA_OK) {
    s = fixed_fields(g, 3, v, "version, file type, data size");
  }
  double version = 0.0;
  int64_t type = 0, size = 0;
  if (s == PIOLA_OK && !piola_parse_real(v[0], &version)) {
    s = piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                          "malformed format version '%.*s'", PIOLA_FIELD_SHOWN(v[0]));
  }
  if (s == PIOLA_OK) {
    s = ranged_integer(g, v[1], "file type", 0, 1, &type);
  }
  if (s == PIOLA_OK) {
    s = ranged_integer(g, v[2], "data size", 1, 64, &size);
  }
  if (s == PIOLA_OK && type != 0) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_UNSUPPORTED, g->r.line_number,
                             "binary .msh files are not supported: save the mesh as ASCII "
                             "(gmsh option -bin 0 or Mesh.Binary = 0)");
  }
  if (s == PIOLA_OK) {
    if (version >= 2.0 && version < 3.0) {
      g->version = 2;
    } else if (version == 4.1) {
      g->version = 4;
    } else {
      return piola_reader_fail(&g->r, PIOLA_ERROR_UNSUPPORTED, g->r.line_number,
                               "MSH format version '%.*s' is not supported: save the mesh as "
                               "version 4.1 or 2.2 (gmsh -format msh41 or -format msh22)",
                               PIOLA_FIELD_SHOWN(v[0]));
    }
  }
  if (s == PIOLA_OK) {
    s = expect_marker(g, "$EndMeshFormat", "the format line");
  }
  return s;
}

/* ---- $Nodes ----------------------------------------------------------------------------------
 */

/* Makes room for node `i` (0-based, read order) of `declared`. */
static piola_status grow_nodes(gmsh_file *g, int64_t i, int64_t declared) {
  if (i < g->node_cap) {
    return PIOLA_OK;
  }
  int64_t cap = g->node_cap, cap2 = g->node_cap, cap3 = g->node_cap;
  void *tags = g->node_tag, *lines = g->node_line, *xyz = g->node_xyz;
  bool ok = piola_grow_records(&tags, &cap, i + 1, declared, sizeof(int64_t));
  g->node_tag = tags;
  ok = ok && piola_grow_records(&lines, &cap2, i + 1, declared, sizeof(long));
  g->node_line = lines;
  ok = ok && piola_grow_records(&xyz, &cap3, i + 1, declared, 3 * sizeof(float));
  g->node_xyz = xyz;
  if (!ok) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_OUT_OF_MEMORY, g->r.line_number,
                             "out of memory for %lld nodes", (long long)declared);
  }
  g->node_cap = cap;
  return PIOLA_OK;
}

/* Reads the coordinates x y z of node i from fields (the first three of the line). */
static piola_status read_coordinates(gmsh_file *g, const piola_field *fields, int64_t i) {
  static const char axis_name[3] = {'x', 'y', 'z'};
  for (int k = 0; k < 3; ++k) {
    double v = 0.0;
    if (!piola_parse_real(fields[k], &v)) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                               "malformed %c coordinate '%.*s' of node %lld", axis_name[k],
                               PIOLA_FIELD_SHOWN(fields[k]), (long long)g->node_tag[i]);
    }
    if (!isfinite(v) || fabs(v) > FLT_MAX) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_NON_FINITE, g->r.line_number,
                               "%c coordinate '%.*s' of node %lld is not a finite float",
                               axis_name[k], PIOLA_FIELD_SHOWN(fields[k]),
                               (long long)g->node_tag[i]);
    }
    g->node_xyz[3 * i + k] = (float)v;
  }
  return PIOLA_OK;
}

static piola_status read_nodes_v2(gmsh_file *g) {
  piola_field f[4];
  int64_t count = 0;
  piola_status s = data_line(g, "the node count");
  if (s == PIOLA_OK) {
    s = fixed_fields(g, 1, f, "the node count");
  }
  if (s == PIOLA_OK) {
    s = piola_reader_count(&g->r, f[0], "node count", PIOLA_MESH_COUNT_LIMIT, &count);
  }
  long header = g->r.line_number;
  for (int64_t i = 0; s == PIOLA_OK && i < count; ++i) {
    s = data_line(g, "node %lld of %lld (declared on line %ld)", (long long)(i + 1),
                  (long long)count, header);
    if (s == PIOLA_OK) {
      s = fixed_fields(g, 4, f, "tag x y z");
    }
    if (s == PIOLA_OK) {
      s = grow_nodes(g, i, count);
    }
    if (s == PIOLA_OK) {
      s = read_tag(g, f[0], "node tag", &g->node_tag[i]);
      g->node_line[i] = g->r.line_number;
    }
    if (s == PIOLA_OK) {
      s = read_coordinates(g, f + 1, i);
    }
  }
  g->node_count = count;
  return s == PIOLA_OK ? expect_marker(g, "$EndNodes", "the declared nodes") : s;
}

/* The first line of a 4.1 $Nodes or $Elements section: "<#blocks> <#nouns> <min tag> <max tag>"
 * (the tag range is checked and not used). */
static piola_status read_v4_header(gmsh_file *g, const char *noun, int64_t *blocks,
                                   int64_t *count) {
  piola_field f[4];
  int64_t ignored = 0;
  char what[64];
  piola_status s = data_line(g, "the line '<#blocks> <#%ss> <min tag> <max tag>'", noun);
  if (s == PIOLA_OK) {
    snprintf(what, sizeof what, "#blocks #%ss min-tag max-tag", noun);
    s = fixed_fields(g, 4, f, what);
  }
  if (s == PIOLA_OK) {
    s = piola_reader_count(&g->r, f[0], "block count", PIOLA_MESH_COUNT_LIMIT, blocks);
  }
  if (s == PIOLA_OK) {
    snprintf(what, sizeof what, "%s count", noun);
    s = piola_reader_count(&g->r, f[1], what, PIOLA_MESH_COUNT_LIMIT, count);
  }
  for (int k = 2; s == PIOLA_OK && k < 4; ++k) {
    s = ranged_integer(g, f[k], k == 2 ? "min tag" : "max tag", 0, INT64_MAX - 1, &ignored);
  }
  return s;
}

static piola_status read_nodes_v4(gmsh_file *g) {
  piola_field f[4];
  int64_t blocks = 0, count = 0, ignored = 0;
  piola_status s = read_v4_header(g, "node", &blocks, &count);
  long header = g->r.line_number;
  int64_t seen = 0;
  for (int64_t b = 0; s == PIOLA_OK && b < blocks; ++b) {
    int64_t dim = 0, parametric = 0, n = 0;
    s = data_line(g, "node block %lld of %lld (declared on line %ld)", (long long)(b + 1),
                  (long long)blocks, header);
    if (s == PIOLA_OK) {
      s = fixed_fields(g, 4, f, "entity-dim entity-tag parametric #nodes");
    }
    if (s == PIOLA_OK) {
      s = ranged_integer(g, f[0], "entity dimension", 0, 3, &dim);
    }
    if (s == PIOLA_OK) {
      s = ranged_integer(g, f[1], "entity tag", INT64_MIN + 1, INT64_MAX - 1, &ignored);
    }
    if (s == PIOLA_OK) {
      s = ranged_integer(g, f[2], "parametric flag", 0, 1, &parametric);
    }
    if (s == PIOLA_OK) {
      s = piola_reader_count(&g->r, f[3], "block node count", PIOLA_MESH_COUNT_LIMIT, &n);
    }
    if (s == PIOLA_OK && n > count - seen) {
      s = piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                            "the blocks hold more than the %lld nodes declared on line %ld",
                            (long long)count, header);
    }
    long block_line = g->r.line_number;
    for (int64_t j = 0; s == PIOLA_OK && j < n; ++j) {
      int64_t i = seen + j;
      s = data_line(g, "node tag %lld of %lld of the block on line %ld", (long long)(j + 1),
                    (long long)n, block_line);
      if (s == PIOLA_OK) {
        s = fixed_fields(g, 1, f, "a node tag");
      }
      if (s == PIOLA_OK) {
        s = grow_nodes(g, i, count);
      }
      if (s == PIOLA_OK) {
        s = read_tag(g, f[0], "node tag", &g->node_tag[i]);
        g->node_line[i] = g->r.line_number;
      }
    }
    int fields = 3 + (parametric != 0 ? (int)dim : 0);
    for (int64_t j = 0; s == PIOLA_OK && j < n; ++j) {
      piola_field c[6];
      s = data_line(g, "the coordinates of node %lld of %lld of the block on line %ld",
                    (long long)(j + 1), (long long)n, block_line);
      if (s == PIOLA_OK) {
        s = fixed_fields(g, fields, c,
                         parametric != 0 ? "x y z and parametric coordinates" : "x y z");
      }
      if (s == PIOLA_OK) {
        s = read_coordinates(g, c, seen + j);
      }
      for (int k = 3; s == PIOLA_OK && k < fields; ++k) {
        double u = 0.0;
        if (!piola_parse_real(c[k], &u)) {
          s = piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                                "malformed parametric coordinate '%.*s'", PIOLA_FIELD_SHOWN(c[k]));
        }
      }
    }
    seen += n;
  }
  if (s == PIOLA_OK && seen != count) {
    s = piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, header,
                          "the node blocks hold %lld nodes, the header declares %lld",
                          (long long)seen, (long long)count);
  }
  g->node_count = seen;
  return s == PIOLA_OK ? expect_marker(g, "$EndNodes", "the declared node blocks") : s;
}

static int compare_tags(const void *a, const void *b) {
  const tag_entry *x = a, *y = b;
  if (x->tag != y->tag) {
    return x->tag < y->tag ? -1 : 1;
  }
  return (x->node > y->node) - (x->node < y->node);
}

/* Sorts the tags for lookups; a tag defined twice is a parse error. */
static piola_status index_tags(gmsh_file *g) {
  g->by_tag = malloc((size_t)(g->node_count > 0 ? g->node_count : 1) * sizeof *g->by_tag);
  if (g->by_tag == NULL) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_OUT_OF_MEMORY, g->r.line_number,
                             "out of memory for %lld node tags", (long long)g->node_count);
  }
  for (int64_t i = 0; i < g->node_count; ++i) {
    g->by_tag[i].tag = g->node_tag[i];
    g->by_tag[i].node = (int32_t)i;
  }
  qsort(g->by_tag, (size_t)g->node_count, sizeof *g->by_tag, compare_tags);
  for (int64_t i = 1; i < g->node_count; ++i) {
    if (g->by_tag[i].tag == g->by_tag[i - 1].tag) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->node_line[g->by_tag[i].node],
                               "node tag %lld defined again (first on line %ld)",
                               (long long)g->by_tag[i].tag, g->node_line[g->by_tag[i - 1].node]);
    }
  }
  return PIOLA_OK;
}

/* The node (read order) of a tag, or -1. */
static int32_t find_node(const gmsh_file *g, int64_t tag) {
  int64_t lo = 0, hi = g->node_count;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (g->by_tag[mid].tag < tag) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < g->node_count && g->by_tag[lo].tag == tag ? g->by_tag[lo].node : -1;
}

/* ---- $Elements -------------------------------------------------------------------------------
 */

/* Reads the node tags of one element (fields), keeping a tetrahedron's corners. `type` is the
 * element's type, `element` its tag; `limit` bounds the number of tets (the declared count). */
static piola_status read_element_nodes(gmsh_file *g, int64_t type, int64_t element,
                                       const piola_field *fields, int64_t n, int64_t limit,
                                       int64_t dim) {
  bool tet = type == GMSH_TET4 || type == GMSH_TET10;
  int32_t corners[4] = {0, 0, 0, 0};
  for (int64_t k = 0; k < n; ++k) {
    int64_t tag = 0;
    piola_status s = read_tag(g, fields[k], "node tag", &tag);
    if (s != PIOLA_OK) {
      return s;
    }
    if (!tet) {
      continue; /* checked for being a tag, not looked up */
    }
    int32_t node = find_node(g, tag);
    if (node < 0) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                               "element %lld refers to node tag %lld, which $Nodes does not "
                               "define",
                               (long long)element, (long long)tag);
    }
    if (k < 4) {
      for (int64_t j = 0; j < k; ++j) {
        if (corners[j] == node) {
          return piola_reader_fail(&g->r, PIOLA_ERROR_INVALID_MESH, g->r.line_number,
                                   "tetrahedron %lld uses node %lld twice", (long long)element,
                                   (long long)tag);
        }
      }
      corners[k] = node;
    }
  }
  if (!tet) {
    g->ignored++;
    g->ignored_volume += dim == 3;
    return PIOLA_OK;
  }
  void *array = g->tets;
  if (!piola_grow_records(&array, &g->tet_cap, g->tet_count + 1, limit, 4 * sizeof(int32_t))) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_OUT_OF_MEMORY, g->r.line_number,
                             "out of memory for %lld tetrahedra", (long long)limit);
  }
  g->tets = array;
  memcpy(g->tets + 4 * g->tet_count, corners, sizeof corners);
  g->tet_count++;
  g->quadratic += type == GMSH_TET10;
  return PIOLA_OK;
}

/* Checks an element's node count against its type (unknown types take any positive count). */
static piola_status check_node_count(gmsh_file *g, int64_t type, int64_t element, int64_t n) {
  int64_t expected = type < GMSH_KNOWN_TYPES ? gmsh_type_nodes[type] : 0;
  if ((expected > 0 && n != expected) || n < 1) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                             "element %lld of type %lld has %lld node tags, expected %lld",
                             (long long)element, (long long)type, (long long)n,
                             (long long)(expected > 0 ? expected : 1));
  }
  return PIOLA_OK;
}

/* Splits the current line into its fields (at most cap of them: the count is checked first). */
static piola_status split_line(gmsh_file *g, piola_field **fields, int64_t *cap, int64_t *n) {
  *n = piola_count_fields(g->r.line);
  if (*n > *cap) {
    piola_field *grown = realloc(*fields, (size_t)*n * sizeof **fields);
    if (grown == NULL) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_OUT_OF_MEMORY, g->r.line_number,
                               "out of memory for a line of %lld fields", (long long)*n);
    }
    *fields = grown;
    *cap = *n;
  }
  const char *cursor = g->r.line;
  for (int64_t i = 0; i < *n; ++i) {
    (*fields)[i] = piola_next_field(&cursor);
  }
  return PIOLA_OK;
}

static piola_status read_elements_v2(gmsh_file *g, piola_field **fields, int64_t *cap) {
  piola_field f[1];
  int64_t count = 0;
  piola_status s = data_line(g, "the element count");
  if (s == PIOLA_OK) {
    s = fixed_fields(g, 1, f, "the element count");
  }
  if (s == PIOLA_OK) {
    s = piola_reader_count(&g->r, f[0], "element count", PIOLA_MESH_COUNT_LIMIT, &count);
  }
  long header = g->r.line_number;
  for (int64_t i = 0; s == PIOLA_OK && i < count; ++i) {
    int64_t n = 0, element = 0, type = 0, tags = 0;
    s = data_line(g, "element %lld of %lld (declared on line %ld)", (long long)(i + 1),
                  (long long)count, header);
    if (s == PIOLA_OK) {
      s = split_line(g, fields, cap, &n);
    }
    if (s == PIOLA_OK && n < 4) {
      s = piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                            "expected '<tag> <type> <#tags> <tags...> <node tags...>', found %lld "
                            "fields",
                            (long long)n);
    }
    const piola_field *e = *fields;
    if (s == PIOLA_OK) {
      s = read_tag(g, e[0], "element tag", &element);
    }
    if (s == PIOLA_OK) {
      s = ranged_integer(g, e[1], "element type", 1, INT32_MAX, &type);
    }
    if (s == PIOLA_OK) {
      s = ranged_integer(g, e[2], "number of element tags", 0, n - 4, &tags);
    }
    for (int64_t k = 0; s == PIOLA_OK && k < tags; ++k) {
      int64_t ignored = 0;
      s = ranged_integer(g, e[3 + k], "physical or entity tag", INT64_MIN + 1, INT64_MAX - 1,
                         &ignored);
    }
    if (s == PIOLA_OK) {
      s = check_node_count(g, type, element, n - 3 - tags);
    }
    if (s == PIOLA_OK) {
      int64_t dim = type < GMSH_KNOWN_TYPES ? gmsh_type_dim[type] : -1;
      s = read_element_nodes(g, type, element, e + 3 + tags, n - 3 - tags, count, dim);
    }
  }
  return s == PIOLA_OK ? expect_marker(g, "$EndElements", "the declared elements") : s;
}

static piola_status read_elements_v4(gmsh_file *g, piola_field **fields, int64_t *cap) {
  piola_field f[4];
  int64_t blocks = 0, count = 0, ignored = 0;
  piola_status s = read_v4_header(g, "element", &blocks, &count);
  long header = g->r.line_number;
  int64_t seen = 0;
  for (int64_t b = 0; s == PIOLA_OK && b < blocks; ++b) {
    int64_t dim = 0, type = 0, n = 0;
    s = data_line(g, "element block %lld of %lld (declared on line %ld)", (long long)(b + 1),
                  (long long)blocks, header);
    if (s == PIOLA_OK) {
      s = fixed_fields(g, 4, f, "entity-dim entity-tag element-type #elements");
    }
    if (s == PIOLA_OK) {
      s = ranged_integer(g, f[0], "entity dimension", 0, 3, &dim);
    }
    if (s == PIOLA_OK) {
      s = ranged_integer(g, f[1], "entity tag", INT64_MIN + 1, INT64_MAX - 1, &ignored);
    }
    if (s == PIOLA_OK) {
      s = ranged_integer(g, f[2], "element type", 1, INT32_MAX, &type);
    }
    if (s == PIOLA_OK) {
      s = piola_reader_count(&g->r, f[3], "block element count", PIOLA_MESH_COUNT_LIMIT, &n);
    }
    if (s == PIOLA_OK && n > count - seen) {
      s = piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                            "the blocks hold more than the %lld elements declared on line %ld",
                            (long long)count, header);
    }
    if (s == PIOLA_OK && type < GMSH_KNOWN_TYPES && gmsh_type_nodes[type] > 0 &&
        gmsh_type_dim[type] != dim) {
      s = piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                            "elements of type %lld in a block of dimension %lld (expected %d)",
                            (long long)type, (long long)dim, (int)gmsh_type_dim[type]);
    }
    long block_line = g->r.line_number;
    for (int64_t j = 0; s == PIOLA_OK && j < n; ++j) {
      int64_t fields_n = 0, element = 0;
      s = data_line(g, "element %lld of %lld of the block on line %ld", (long long)(j + 1),
                    (long long)n, block_line);
      if (s == PIOLA_OK) {
        s = split_line(g, fields, cap, &fields_n);
      }
      if (s == PIOLA_OK) {
        s = read_tag(g, (*fields)[0], "element tag", &element);
      }
      if (s == PIOLA_OK) {
        s = check_node_count(g, type, element, fields_n - 1);
      }
      if (s == PIOLA_OK) {
        s = read_element_nodes(g, type, element, *fields + 1, fields_n - 1, count, dim);
      }
    }
    seen += n;
  }
  if (s == PIOLA_OK && seen != count) {
    s = piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, header,
                          "the element blocks hold %lld elements, the header declares %lld",
                          (long long)seen, (long long)count);
  }
  return s == PIOLA_OK ? expect_marker(g, "$EndElements", "the declared element blocks") : s;
}

static piola_status read_elements(gmsh_file *g) {
  piola_field *fields = NULL;
  int64_t cap = 0;
  piola_status s =
      g->version == 2 ? read_elements_v2(g, &fields, &cap) : read_elements_v4(g, &fields, &cap);
  free(fields);
  return s;
}

/* ---- Sections ----------------------------------------------------------------------------- */

/* Skips a section up to its $End marker ("$Foo" ends at "$EndFoo"). */
static piola_status skip_section(gmsh_file *g, piola_field name) {
  char end[PIOLA_NUMBER_CHARS + 8];
  snprintf(end, sizeof end, "$End%.*s", name.len - 1, name.text + 1);
  for (;;) {
    bool got = false;
    piola_status s = piola_reader_line(&g->r, &got);
    if (s != PIOLA_OK) {
      return s;
    }
    if (!got) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number + 1,
                               "unexpected end of file: %s is missing (the section opened on "
                               "line %ld)",
                               end, g->section_line);
    }
    const char *cursor = g->r.line;
    if (piola_field_is(piola_next_field(&cursor), end)) {
      return PIOLA_OK;
    }
  }
}

static piola_status read_sections(gmsh_file *g) {
  for (;;) {
    bool got = false;
    piola_status s = piola_reader_record(&g->r, &got);
    if (s != PIOLA_OK) {
      return s;
    }
    if (!got) {
      break;
    }
    const char *cursor = g->r.line;
    piola_field f = piola_next_field(&cursor);
    if (f.text[0] != '$' || f.len < 2 || f.len > PIOLA_NUMBER_CHARS ||
        piola_count_fields(g->r.line) != 1) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                               "expected a section such as $Nodes or $Elements, found '%.*s'",
                               PIOLA_FIELD_SHOWN(f));
    }
    g->section_line = g->r.line_number;
    if (piola_field_is(f, "$Nodes")) {
      if (g->have_nodes) {
        return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                                 "a second $Nodes section");
      }
      g->section = "$Nodes";
      g->have_nodes = true;
      s = g->version == 2 ? read_nodes_v2(g) : read_nodes_v4(g);
      if (s == PIOLA_OK) {
        s = index_tags(g);
      }
    } else if (piola_field_is(f, "$Elements")) {
      if (!g->have_nodes || g->have_elements) {
        return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number, "%s",
                                 g->have_elements ? "a second $Elements section"
                                                  : "$Elements before $Nodes");
      }
      g->section = "$Elements";
      g->have_elements = true;
      g->elements_line = g->r.line_number;
      s = read_elements(g);
    } else if (f.len >= 4 && memcmp(f.text, "$End", 4) == 0) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                               "'%.*s' closes a section that was not opened", PIOLA_FIELD_SHOWN(f));
    } else if (piola_field_is(f, "$MeshFormat")) {
      return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number,
                               "a second $MeshFormat section");
    } else {
      s = skip_section(g, f);
    }
    if (s != PIOLA_OK) {
      return s;
    }
  }
  if (!g->have_nodes || !g->have_elements) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_PARSE, g->r.line_number + 1,
                             "unexpected end of file: no %s section",
                             g->have_nodes ? "$Elements" : "$Nodes");
  }
  if (g->tet_count == 0) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_INVALID_MESH, g->elements_line,
                             "the $Elements section holds no tetrahedra (types 4 and 11; %lld "
                             "other elements)",
                             (long long)g->ignored);
  }
  return PIOLA_OK;
}

/* Numbers the nodes used by the tets 0, 1, ... in ascending tag order and fills *out. */
static piola_status compact(gmsh_file *g, piola_tet_mesh *out) {
  int32_t *index = malloc((size_t)g->node_count * sizeof *index);
  if (index == NULL) {
    return piola_reader_fail(&g->r, PIOLA_ERROR_OUT_OF_MEMORY, 0, "out of memory for %lld nodes",
                             (long long)g->node_count);
  }
  for (int64_t i = 0; i < g->node_count; ++i) {
    index[i] = -1;
  }
  for (int64_t i = 0; i < 4 * g->tet_count; ++i) {
    index[g->tets[i]] = 0;
  }
  int32_t used = 0;
  for (int64_t i = 0; i < g->node_count; ++i) {
    int32_t node = g->by_tag[i].node;
    if (index[node] == 0) {
      index[node] = ++used; /* 1-based for now: 0 marks "used, not numbered" */
    }
  }
  float *positions = malloc((size_t)used * 3 * sizeof *positions);
  if (positions == NULL) {
    free(index);
    return piola_reader_fail(&g->r, PIOLA_ERROR_OUT_OF_MEMORY, 0, "out of memory for %d nodes",
                             (int)used);
  }
  for (int64_t i = 0; i < g->node_count; ++i) {
    if (index[i] > 0) {
      memcpy(positions + 3 * (size_t)(index[i] - 1), g->node_xyz + 3 * i, 3 * sizeof(float));
    }
  }
  for (int64_t i = 0; i < 4 * g->tet_count; ++i) {
    g->tets[i] = index[g->tets[i]] - 1;
  }
  free(index);
  piola_log(g->r.logger, PIOLA_LOG_INFO,
            "%s: %lld tetrahedra (%lld of them 10-node, read through their corners) over %d of "
            "%lld nodes; ignored %lld other elements and %lld nodes in no tetrahedron",
            g->r.path, (long long)g->tet_count, (long long)g->quadratic, (int)used,
            (long long)g->node_count, (long long)g->ignored, (long long)(g->node_count - used));
  if (g->ignored_volume > 0) {
    piola_log(g->r.logger, PIOLA_LOG_WARNING,
              "%s: ignored %lld volume elements that are not tetrahedra (hexahedra, prisms, "
              "pyramids, ...): the body lacks their volume",
              g->r.path, (long long)g->ignored_volume);
  }
  void *tets = g->tets;
  if (g->tet_cap > g->tet_count) { /* give back the unused tail; keeping it is fine too */
    void *shrunk = realloc(tets, (size_t)g->tet_count * 4 * sizeof(int32_t));
    tets = shrunk != NULL ? shrunk : tets;
  }
  g->tets = NULL;
  out->positions = positions;
  out->vertex_count = used;
  out->tets = tets;
  out->tet_count = (int32_t)g->tet_count;
  return PIOLA_OK;
}

piola_status piola_mesh_load_gmsh_logged(const char *path, const piola_logger *logger,
                                         piola_tet_mesh *out) {
  if (path == NULL || out == NULL) {
    piola_log(logger, PIOLA_LOG_ERROR, "piola_mesh_load_gmsh: %s is NULL",
              path == NULL ? "path" : "out");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  gmsh_file g;
  memset(&g, 0, sizeof g);
  piola_status s = piola_reader_open(&g.r, path, logger);
  if (s == PIOLA_OK) {
    g.r.comment = '\0'; /* .msh files have no comments ('#' may be in physical names) */
    s = read_format(&g);
    if (s == PIOLA_OK) {
      s = read_sections(&g);
    }
    if (s == PIOLA_OK) {
      s = compact(&g, out);
    }
  }
  piola_reader_close(&g.r);
  gmsh_free(&g);
  return s;
}

piola_status piola_mesh_load_gmsh(const char *path, piola_tet_mesh *out) {
  return piola_mesh_load_gmsh_logged(path, NULL, out);
}
