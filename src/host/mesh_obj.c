/* Piola OBJ loader: reads triangle meshes (cloth, surfaces) from Wavefront OBJ files, the
 * format of Wavefront's Advanced Visualizer (Appendix B1 of its manual, "Object Files (.obj)",
 * version 3.0): one statement per line, a keyword and its arguments.
 *
 *   v  x y z [w]           a position (w, or the colour of "v x y z r g b", is dropped)
 *   vt u [v [w]]           a texture coordinate (v defaults to 0, w is dropped)
 *   vn x y z               a normal: counted for checking face indices, otherwise ignored
 *   f  c1 c2 c3 ...        a polygon; each corner is i, i/t, i//n or i/t/n
 *
 * Indices count from 1, or back from the last element defined so far when negative (-1 is the
 * last); elements must be defined before the faces that use them. Polygons become fans of
 * triangles from their first corner, in the file's winding. Every other statement is ignored.
 * Comments, blank lines, CRLF ends, long lines and the decimal point come from the shared line
 * reader (common.c), as in the TetGen loader, whose statuses and "path:line: what" messages
 * this loader follows: a failure logs one message and leaves the caller's mesh untouched.
 *
 * OBJ numbers positions and texture coordinates separately; a piola_tri_mesh has one uv per
 * vertex. Each corner is a (position, uv) pair: the first pair that uses a position keeps the
 * position's own vertex number, and every later pair with another uv (a seam) gets a copy of
 * the position appended after the file's vertices, in the order faces first use them. A hash
 * table of the pairs keeps this linear in the size of the file.
 */
#include "mesh_text.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OBJ_COUNT_LIMIT ((int64_t)1 << 30) /* vertex, uv and triangle counts stay below this */
#define NO_UV (-1)

typedef struct obj_file {
  float *positions; /* 3 per `v` */
  int64_t position_count, position_cap;
  float *uvs; /* 2 per `vt` */
  int64_t uv_count, uv_cap;
  int64_t normal_count;
  /* 3 corners per triangle, 2 values per corner: position index, uv index (NO_UV without) */
  int32_t *corners;
  int64_t triangle_count, triangle_cap;
  int32_t *polygon; /* the corners of the face being read, 2 values each */
  int64_t polygon_cap;
  int face_uvs;         /* -1 before the first face, then whether the first face has vt */
  long first_face_line; /* line of the first face */
} obj_file;

static void obj_file_free(obj_file *f) {
  free(f->positions);
  free(f->uvs);
  free(f->corners);
  free(f->polygon);
  memset(f, 0, sizeof *f);
}

/* ---- Statements ---------------------------------------------------------------------------- */

/* Reads `count` reals of a statement; the first `finite` of them must be finite floats and go
 * to out[0..finite), the rest are checked for being numbers and dropped. `names` names them in
 * messages. */
static piola_status read_reals(const piola_line_reader *r, const char **cursor, int count,
                               int finite, const char *const names[], float *out) {
  for (int k = 0; k < count; ++k) {
    piola_field f = piola_next_field(cursor);
    double v = 0.0;
    if (!piola_parse_real(f, &v)) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "malformed %s '%.*s'",
                               names[k], PIOLA_FIELD_SHOWN(f));
    }
    if (k < finite && (!isfinite(v) || fabs(v) > FLT_MAX)) {
      return piola_reader_fail(r, PIOLA_ERROR_NON_FINITE, r->line_number,
                               "%s '%.*s' is not a finite float", names[k], PIOLA_FIELD_SHOWN(f));
    }
    if (k < finite) {
      out[k] = (float)v;
    }
  }
  return PIOLA_OK;
}

/* Makes room for record `count` (0-based) of `floats` floats in *array; `what` names the
 * records in messages. */
static piola_status grow_for(const piola_line_reader *r, float **array, int64_t count, int64_t *cap,
                             size_t floats, const char *what) {
  if (count + 1 >= OBJ_COUNT_LIMIT) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "more than %lld %s",
                             (long long)(OBJ_COUNT_LIMIT - 1), what);
  }
  void *grown = *array;
  if (!piola_grow_records(&grown, cap, count + 1, OBJ_COUNT_LIMIT, floats * sizeof(float))) {
    return piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, r->line_number,
                             "out of memory for %lld %s", (long long)(count + 1), what);
  }
  *array = grown;
  return PIOLA_OK;
}

/* v x y z [w] (or v x y z r g b) */
static piola_status read_position(const piola_line_reader *r, const char *cursor, int64_t n,
                                  obj_file *obj) {
  static const char *const names[7] = {
      "x coordinate", "y coordinate", "z coordinate", "w coordinate", "red", "green", "blue"};
  static const char *const colour_names[7] = {
      "x coordinate", "y coordinate", "z coordinate", "red", "green", "blue", ""};
  if (n != 3 && n != 4 && n != 6) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "expected 'v x y z [w]' (or 'v x y z r g b'), found %lld numbers",
                             (long long)n);
  }
  piola_status s =
      grow_for(r, &obj->positions, obj->position_count, &obj->position_cap, 3, "vertices");
  if (s != PIOLA_OK) {
    return s;
  }
  s = read_reals(r, &cursor, (int)n, 3, n == 6 ? colour_names : names,
                 obj->positions + 3 * obj->position_count);
  obj->position_count += s == PIOLA_OK;
  return s;
}

/* vt u [v [w]] */
static piola_status read_uv(const piola_line_reader *r, const char *cursor, int64_t n,
                            obj_file *obj) {
  static const char *const names[3] = {"u coordinate", "v coordinate", "w coordinate"};
  if (n < 1 || n > 3) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "expected 'vt u [v [w]]', found %lld numbers", (long long)n);
  }
  piola_status s = grow_for(r, &obj->uvs, obj->uv_count, &obj->uv_cap, 2, "texture coordinates");
  if (s != PIOLA_OK) {
    return s;
  }
  float *uv = obj->uvs + 2 * obj->uv_count;
  uv[1] = 0.0f;
  s = read_reals(r, &cursor, (int)n, n < 2 ? 1 : 2, names, uv);
  obj->uv_count += s == PIOLA_OK;
  return s;
}

/* Resolves one index of a face corner against the `count` elements defined so far: 1-based,
 * or negative from the end. */
static piola_status resolve_index(const piola_line_reader *r, piola_field f, const char *what,
                                  const char *plural, int64_t count, int32_t *out) {
  int64_t v = 0;
  if (!piola_parse_integer(f, &v)) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "malformed %s index '%.*s'",
                             what, PIOLA_FIELD_SHOWN(f));
  }
  if (v == 0) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "%s index 0: OBJ indices count from 1 (or back from -1)", what);
  }
  /* -count <= v <= count, so neither side below overflows. */
  if (v > count || v < -count) {
    return piola_reader_fail(r, PIOLA_ERROR_INVALID_MESH, r->line_number,
                             "%s index '%.*s' out of range: %lld %s defined before this line", what,
                             PIOLA_FIELD_SHOWN(f), (long long)count, count == 1 ? what : plural);
  }
  *out = (int32_t)(v > 0 ? v - 1 : count + v);
  return PIOLA_OK;
}

/* One corner: i, i/t, i//n or i/t/n. Writes the position and uv (NO_UV) indices. */
static piola_status read_corner(const piola_line_reader *r, piola_field corner, const obj_file *obj,
                                int32_t out[2]) {
  piola_field part[3] = {{corner.text, 0}, {NULL, 0}, {NULL, 0}};
  int parts = 1;
  for (int i = 0; i < corner.len; ++i) {
    if (corner.text[i] != '/') {
      part[parts - 1].len++;
    } else if (parts == 3) {
      parts = 4; /* too many slashes */
      break;
    } else {
      part[parts].text = corner.text + i + 1;
      parts++;
    }
  }
  bool form_ok = parts <= 3 && part[0].len > 0 && (parts < 2 || part[1].len > 0 || parts == 3) &&
                 (parts < 3 || part[2].len > 0);
  if (!form_ok) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "malformed face corner '%.*s': expected i, i/t, i//n or i/t/n",
                             PIOLA_FIELD_SHOWN(corner));
  }
  piola_status s = resolve_index(r, part[0], "vertex", "vertices", obj->position_count, &out[0]);
  out[1] = NO_UV;
  if (s == PIOLA_OK && parts >= 2 && part[1].len > 0) {
    s = resolve_index(r, part[1], "texture coordinate", "texture coordinates", obj->uv_count,
                      &out[1]);
  }
  int32_t normal = 0;
  if (s == PIOLA_OK && parts == 3) {
    s = resolve_index(r, part[2], "normal", "normals", obj->normal_count, &normal);
  }
  return s;
}

/* f c1 c2 c3 ...: the polygon becomes the fan (c1, ck, ck+1). */
static piola_status read_face(const piola_line_reader *r, const char *cursor, int64_t n,
                              obj_file *obj) {
  if (n < 3) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "face has %lld corner%s, needs at least 3", (long long)n,
                             n == 1 ? "" : "s");
  }
  if (obj->triangle_count + (n - 2) >= OBJ_COUNT_LIMIT) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "more than %lld triangles",
                             (long long)(OBJ_COUNT_LIMIT - 1));
  }
  void *array = obj->polygon;
  if (!piola_grow_records(&array, &obj->polygon_cap, n, OBJ_COUNT_LIMIT, 2 * sizeof(int32_t))) {
    return piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, r->line_number,
                             "out of memory for a face of %lld corners", (long long)n);
  }
  obj->polygon = array;
  for (int64_t k = 0; k < n; ++k) {
    piola_field f = piola_next_field(&cursor);
    piola_status s = read_corner(r, f, obj, obj->polygon + 2 * k);
    if (s != PIOLA_OK) {
      return s;
    }
    bool has_uv = obj->polygon[2 * k + 1] != NO_UV;
    if (obj->face_uvs < 0) {
      obj->face_uvs = has_uv;
      obj->first_face_line = r->line_number;
    }
    if (has_uv != (obj->face_uvs == 1)) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                               "face corner '%.*s' has %s texture coordinate but the first face "
                               "corner of the file (line %ld) has %s: either every face corner "
                               "has one or none has",
                               PIOLA_FIELD_SHOWN(f), has_uv ? "a" : "no", obj->first_face_line,
                               has_uv ? "none" : "one");
    }
  }
  array = obj->corners;
  if (!piola_grow_records(&array, &obj->triangle_cap, obj->triangle_count + n - 2, OBJ_COUNT_LIMIT,
                          6 * sizeof(int32_t))) {
    return piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, r->line_number,
                             "out of memory for %lld triangles",
                             (long long)(obj->triangle_count + n - 2));
  }
  obj->corners = array;
  const int32_t *p = obj->polygon;
  for (int64_t k = 1; k + 1 < n; ++k) {
    int32_t a = p[0], b = p[2 * k], c = p[2 * k + 2];
    if (a == b || b == c || c == a) {
      return piola_reader_fail(
          r, PIOLA_ERROR_INVALID_MESH, r->line_number,
          "triangle (corners 1, %lld, %lld of the face) uses vertex %lld twice", (long long)(k + 1),
          (long long)(k + 2), (long long)(a == b || a == c ? a : b) + 1);
    }
    int32_t *t = obj->corners + 6 * obj->triangle_count;
    memcpy(t, p, 2 * sizeof *p);
    memcpy(t + 2, p + 2 * k, 4 * sizeof *p);
    obj->triangle_count++;
  }
  return PIOLA_OK;
}

static piola_status read_obj(piola_line_reader *r, obj_file *obj) {
  for (;;) {
    bool got = false;
    piola_status s = piola_reader_record(r, &got);
    if (s != PIOLA_OK) {
      return s;
    }
    if (!got) {
      break;
    }
    int64_t n = piola_count_fields(r->line) - 1;
    const char *cursor = r->line;
    piola_field keyword = piola_next_field(&cursor);
    if (keyword.len == 1 && keyword.text[0] == 'v') {
      s = read_position(r, cursor, n, obj);
    } else if (keyword.len == 2 && memcmp(keyword.text, "vt", 2) == 0) {
      s = read_uv(r, cursor, n, obj);
    } else if (keyword.len == 2 && memcmp(keyword.text, "vn", 2) == 0) {
      if (++obj->normal_count >= OBJ_COUNT_LIMIT) {
        s = piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "more than %lld normals",
                              (long long)(OBJ_COUNT_LIMIT - 1));
      }
    } else if (keyword.len == 1 && keyword.text[0] == 'f') {
      s = read_face(r, cursor, n, obj);
    }
    if (s != PIOLA_OK) {
      return s;
    }
  }
  if (obj->triangle_count == 0) {
    return piola_reader_fail(r, PIOLA_ERROR_INVALID_MESH, r->line_number + 1,
                             "%s: no faces ('f' statements)",
                             r->line_number == 0 ? "empty file" : "end of file");
  }
  return PIOLA_OK;
}

/* ---- Seams ----------------------------------------------------------------------------------- */

/* Open addressing over (position, uv) pairs; slots hold the vertex, -1 when empty. */
typedef struct pair_table {
  int32_t *slot; /* 3 per slot: position, uv, vertex */
  size_t mask;
  size_t used;
} pair_table;

static size_t pair_hash(int32_t position, int32_t uv) {
  uint64_t h = (uint64_t)(uint32_t)position * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)(uint32_t)uv + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  return (size_t)(h ^ (h >> 31));
}

static bool pair_table_init(pair_table *t, size_t slots) {
  size_t n = 64;
  while (n < slots) {
    n *= 2;
  }
  t->slot = n <= SIZE_MAX / (3 * sizeof(int32_t)) ? malloc(n * 3 * sizeof(int32_t)) : NULL;
  if (t->slot == NULL) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    t->slot[3 * i + 2] = -1;
  }
  t->mask = n - 1;
  t->used = 0;
  return true;
}

/* The slot of (position, uv): where it is, or the empty slot where it goes. */
static int32_t *pair_slot(const pair_table *t, int32_t position, int32_t uv) {
  size_t i = pair_hash(position, uv) & t->mask;
  for (;;) {
    int32_t *s = t->slot + 3 * i;
    if (s[2] < 0 || (s[0] == position && s[1] == uv)) {
      return s;
    }
    i = (i + 1) & t->mask;
  }
}

/* Doubles the table (when it gets half full). */
static bool pair_table_grow(pair_table *t) {
  pair_table bigger;
  if (t->mask >= SIZE_MAX / 4 || !pair_table_init(&bigger, 2 * (t->mask + 1))) {
    return false;
  }
  for (size_t i = 0; i <= t->mask; ++i) {
    const int32_t *s = t->slot + 3 * i;
    if (s[2] >= 0) {
      memcpy(pair_slot(&bigger, s[0], s[1]), s, 3 * sizeof *s);
    }
  }
  bigger.used = t->used;
  free(t->slot);
  *t = bigger;
  return true;
}

/* Turns the corners' (position, uv) pairs into vertices: writes triangles[i] (which may be the
 * corner array itself: entry i is written after corner i is read), appends the copies of split
 * positions to obj->positions, and makes the uvs, one per vertex. */
static piola_status split_seams(const piola_line_reader *r, obj_file *obj, int32_t *triangles,
                                int64_t *out_vertex_count, float **out_uvs) {
  const int64_t corner_count = 3 * obj->triangle_count;
  /* copy_of[j]: the position of vertex position_count + j. */
  int64_t vertex_count = obj->position_count, copy_cap = 0;
  int32_t *copy_of = NULL;
  float *uv_of = calloc((size_t)obj->position_count, 2 * sizeof *uv_of);
  pair_table table = {NULL, 0, 0};
  if (uv_of == NULL || !pair_table_init(&table, 2 * (size_t)obj->position_count)) {
    free(uv_of);
    return piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, 0,
                             "out of memory for the texture coordinates of %lld vertices",
                             (long long)obj->position_count);
  }
  /* A position's own vertex goes to the first uv that uses it; `used` marks it taken. */
  uint8_t *used = calloc((size_t)obj->position_count, 1);
  piola_status s = used != NULL ? PIOLA_OK : PIOLA_ERROR_OUT_OF_MEMORY;
  for (int64_t i = 0; s == PIOLA_OK && i < corner_count; ++i) {
    const int32_t position = obj->corners[2 * i], uv = obj->corners[2 * i + 1];
    int32_t *slot = pair_slot(&table, position, uv);
    if (slot[2] < 0) {
      int32_t vertex = position;
      if (used[position]) {
        if (vertex_count + 1 >= OBJ_COUNT_LIMIT) {
          s = piola_reader_fail(r, PIOLA_ERROR_PARSE, 0,
                                "more than %lld vertices after splitting the texture seams",
                                (long long)(OBJ_COUNT_LIMIT - 1));
          break;
        }
        void *array = copy_of;
        if (!piola_grow_records(&array, &copy_cap, vertex_count - obj->position_count + 1,
                                OBJ_COUNT_LIMIT, sizeof *copy_of)) {
          s = PIOLA_ERROR_OUT_OF_MEMORY;
          break;
        }
        copy_of = array;
        copy_of[vertex_count - obj->position_count] = position;
        vertex = (int32_t)vertex_count++;
      } else {
        used[position] = 1;
        memcpy(uv_of + 2 * (size_t)position, obj->uvs + 2 * (size_t)uv, 2 * sizeof *uv_of);
      }
      slot[0] = position;
      slot[1] = uv;
      slot[2] = vertex;
      if (++table.used * 2 > table.mask + 1 && !pair_table_grow(&table)) {
        s = PIOLA_ERROR_OUT_OF_MEMORY;
        break;
      }
      /* The slot may have moved: look the pair up again below. */
      slot = pair_slot(&table, position, uv);
    }
    triangles[i] = slot[2];
  }
  free(used);

  /* Positions and uvs of the copies, appended. */
  const int64_t copies = vertex_count - obj->position_count;
  float *positions = NULL, *uvs = NULL;
  if (s == PIOLA_OK && copies > 0) {
    positions = realloc(obj->positions, (size_t)vertex_count * 3 * sizeof *positions);
    if (positions != NULL) {
      obj->positions = positions;
    }
    uvs = realloc(uv_of, (size_t)vertex_count * 2 * sizeof *uvs);
    if (uvs != NULL) {
      uv_of = uvs;
    }
    if (positions == NULL || uvs == NULL) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (s == PIOLA_OK && copies > 0) {
    /* The uv of a copy: that of any corner that maps to it, from the table. */
    for (size_t i = 0; i <= table.mask; ++i) {
      const int32_t *slot = table.slot + 3 * i;
      if (slot[2] >= obj->position_count) {
        memcpy(uv_of + 2 * (size_t)slot[2], obj->uvs + 2 * (size_t)slot[1], 2 * sizeof *uv_of);
      }
    }
    for (int64_t j = 0; j < copies; ++j) {
      memcpy(obj->positions + 3 * (size_t)(obj->position_count + j),
             obj->positions + 3 * (size_t)copy_of[j], 3 * sizeof(float));
    }
  }
  free(table.slot);
  free(copy_of);
  if (s != PIOLA_OK) {
    free(uv_of);
    if (s == PIOLA_ERROR_OUT_OF_MEMORY) {
      return piola_reader_fail(r, s, 0, "out of memory while splitting the texture seams");
    }
    return s;
  }
  *out_vertex_count = vertex_count;
  *out_uvs = uv_of;
  return PIOLA_OK;
}

/* Writes the mesh from what was read; the corners become the triangles in place. */
static piola_status build_mesh(const piola_line_reader *r, obj_file *obj, piola_tri_mesh *out) {
  const int64_t corner_count = 3 * obj->triangle_count;
  int32_t *triangles = obj->corners;
  int64_t vertex_count = obj->position_count;
  float *uvs = NULL;
  if (obj->face_uvs == 1) {
    piola_status s = split_seams(r, obj, triangles, &vertex_count, &uvs);
    if (s != PIOLA_OK) {
      return s;
    }
  } else {
    for (int64_t i = 0; i < corner_count; ++i) {
      triangles[i] = obj->corners[2 * i];
    }
  }
  int32_t *shrunk = realloc(triangles, (size_t)corner_count * sizeof *shrunk);
  out->positions = obj->positions;
  out->vertex_count = (int32_t)vertex_count;
  out->triangles = shrunk != NULL ? shrunk : triangles;
  out->triangle_count = (int32_t)obj->triangle_count;
  out->uvs = uvs;
  obj->positions = NULL;
  obj->corners = NULL;
  return PIOLA_OK;
}

/* ---- Public ---------------------------------------------------------------------------------- */

piola_status piola_mesh_load_obj_logged(const char *path, const piola_logger *logger,
                                        piola_tri_mesh *out) {
  if (path == NULL || out == NULL) {
    piola_log(logger, PIOLA_LOG_ERROR, "piola_mesh_load_obj: %s is NULL",
              path == NULL ? "path" : "out");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  obj_file obj;
  memset(&obj, 0, sizeof obj);
  obj.face_uvs = -1;
  piola_line_reader r;
  piola_status s = piola_reader_open(&r, path, logger);
  if (s != PIOLA_OK) {
    return s;
  }
  s = read_obj(&r, &obj);
  if (s == PIOLA_OK) {
    piola_tri_mesh mesh = {NULL, 0, NULL, 0, NULL};
    s = build_mesh(&r, &obj, &mesh);
    if (s == PIOLA_OK) {
      *out = mesh;
    }
  }
  piola_reader_close(&r);
  obj_file_free(&obj);
  return s;
}

piola_status piola_mesh_load_obj(const char *path, piola_tri_mesh *out) {
  return piola_mesh_load_obj_logged(path, NULL, out);
}

void piola_tri_mesh_free(piola_tri_mesh *mesh) {
  if (mesh == NULL) {
    return;
  }
  free(mesh->positions);
  free(mesh->triangles);
  free(mesh->uvs);
  memset(mesh, 0, sizeof *mesh);
}
