/* Piola common host services: version, status and stage names, logging, misuse reports, the
 * default def constructors, the checks of materials and colliders, and the text-file reading
 * shared by the mesh loaders. */
#include "piola_internal.h"

#include <assert.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define READ_CHUNK_BYTES ((size_t)1 << 16) /* bytes the line reader reads at a time */
#define INITIAL_RECORDS ((int64_t)1 << 14) /* first capacity of piola_grow_records() */

const char *piola_version_string(void) {
  return "0.1.0";
}

const char *piola_status_string(piola_status status) {
  switch (status) {
  case PIOLA_OK:
    return "ok";
  case PIOLA_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case PIOLA_ERROR_INVALID_DEF:
    return "def not made by its default constructor";
  case PIOLA_ERROR_INVALID_BODY:
    return "invalid body id";
  case PIOLA_ERROR_COUNT_MISMATCH:
    return "count does not match";
  case PIOLA_ERROR_NON_FINITE:
    return "non-finite number";
  case PIOLA_ERROR_INVALID_MESH:
    return "invalid mesh";
  case PIOLA_ERROR_INVALID_MATERIAL:
    return "invalid material";
  case PIOLA_ERROR_IO:
    return "file cannot be read or written";
  case PIOLA_ERROR_PARSE:
    return "malformed file";
  case PIOLA_ERROR_OUT_OF_MEMORY:
    return "out of host memory";
  case PIOLA_ERROR_UNSUPPORTED:
    return "not supported by this build";
  case PIOLA_ERROR_NO_DEVICE:
    return "no matching OpenCL device";
  case PIOLA_ERROR_BUILD_FAILED:
    return "OpenCL program build failed";
  case PIOLA_ERROR_DEVICE:
    return "OpenCL call failed";
  case PIOLA_ERROR_OUT_OF_DEVICE_MEMORY:
    return "out of device memory or resources";
  case PIOLA_ERROR_DEVICE_LOST:
    return "device lost";
  case PIOLA_STATUS_COUNT:
    break;
  }
  return "unknown status";
}

const char *piola_stage_name(piola_stage stage) {
  static const char *const names[PIOLA_STAGE_COUNT] = {
      "predict", "reset_multipliers", "broad_phase",       "narrow_phase", "solve_tets",
      "contact", "collide",           "update_velocities", "plasticity"};
  return (stage >= 0 && stage < PIOLA_STAGE_COUNT) ? names[stage] : "unknown";
}

const char *piola_backend_name(piola_backend backend) {
  switch (backend) {
  case PIOLA_BACKEND_AUTO:
    return "auto";
  case PIOLA_BACKEND_CPU_REFERENCE:
    return "cpu";
  case PIOLA_BACKEND_OPENCL:
    return "opencl";
  }
  return "unknown";
}

void piola_log(const piola_logger *logger, piola_log_level level, const char *format, ...) {
  if (logger == NULL || logger->fn == NULL) {
    return;
  }
  char message[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  logger->fn(level, message, logger->user_data);
}

void piola_misuse(const piola_world *world, const char *condition, const char *file, int line) {
  if (world != NULL && world->def.assert_fn != NULL) {
    world->def.assert_fn(condition, file, line, world->def.assert_user_data);
    return;
  }
  if (world != NULL) {
    piola_log(&world->def.logger, PIOLA_LOG_ERROR, "API misuse: %s (%s:%d)", condition, file, line);
  }
#ifndef NDEBUG
  assert(
      !"piola: API misuse (see the condition above); set piola_world_def.assert_fn to handle it");
#endif
}

double piola_now_ms(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

piola_world_def piola_default_world_def(void) {
  piola_world_def d;
  memset(&d, 0, sizeof d);
  d.backend = PIOLA_BACKEND_AUTO;
  d.device_spec = NULL;
  d.gravity[0] = 0.0f;
  d.gravity[1] = -9.81f;
  d.gravity[2] = 0.0f;
  d.dt = 0.005f;
  d.substeps = 1;
  d.iterations = 5;
  d.damping = 0.0f;
  d.iteration_scheme = PIOLA_SCHEME_GAUSS_SEIDEL;
  d.max_colors = 0;
  d.contacts = true;
  d.contact_thickness = 0.01f;
  d.contact_friction = 0.5f;
  d.jacobi_omega = 1.0f;
  d.profile = false;
  d.fast_math = false;
  d.work_group_size = 0;
  d.internal_cookie = PIOLA_COOKIE;
  return d;
}

piola_material piola_default_material(void) {
  piola_material m;
  memset(&m, 0, sizeof m);
  m.model = PIOLA_MODEL_STVK;
  m.solver = PIOLA_SOLVER_XPBD;
  m.youngs_modulus = 1.0e5f;
  m.poisson_ratio = 0.3f;
  m.density = 1000.0f;
  m.handle_inversion = PIOLA_INVERSION_ON;
  m.split = PIOLA_SPLIT_LAME;
  m.plastic_yield = 0.1f;
  m.plastic_creep = 0.0f;
  m.plastic_max = 0.3f;
  m.internal_cookie = PIOLA_COOKIE;
  return m;
}

piola_collider_def piola_default_collider_def(void) {
  piola_collider_def c;
  memset(&c, 0, sizeof c);
  c.type = PIOLA_COLLIDER_PLANE;
  c.shape.plane.normal[1] = 1.0f;
  c.shape.plane.offset = 0.0f;
  c.shape.sphere.radius = 0.5f;
  c.shape.box.half_extents[0] = c.shape.box.half_extents[1] = c.shape.box.half_extents[2] = 0.5f;
  c.shape.box.rotation[3] = 1.0f;
  c.shape.capsule.b[1] = 1.0f;
  c.shape.capsule.radius = 0.25f;
  c.shape.funnel.axis[1] = 1.0f;
  c.shape.funnel.base_radius = 0.25f;
  c.shape.funnel.top_radius = 1.0f;
  c.shape.funnel.height = 1.0f;
  c.static_friction = 0.5f;
  c.dynamic_friction = 0.4f;
  c.internal_cookie = PIOLA_COOKIE;
  return c;
}

piola_status piola_material_check(const piola_material *m, char *reason, size_t n) {
  if (m->internal_cookie != PIOLA_COOKIE) {
    snprintf(reason, n, "material not made by piola_default_material()");
    return PIOLA_ERROR_INVALID_DEF;
  }
  if (m->model != PIOLA_MODEL_STVK && m->model != PIOLA_MODEL_NEOHOOKEAN) {
    snprintf(reason, n, "unknown material model %d", (int)m->model);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (m->solver != PIOLA_SOLVER_XPBD && m->solver != PIOLA_SOLVER_PBD) {
    snprintf(reason, n, "unknown solver form %d", (int)m->solver);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (m->handle_inversion != PIOLA_INVERSION_OFF && m->handle_inversion != PIOLA_INVERSION_ON &&
      m->handle_inversion != PIOLA_INVERSION_ALWAYS) {
    snprintf(reason, n, "unknown inversion mode %d", (int)m->handle_inversion);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (m->split != PIOLA_SPLIT_LAME && m->split != PIOLA_SPLIT_NONE) {
    snprintf(reason, n, "unknown constraint split %d", (int)m->split);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (!isfinite(m->youngs_modulus) || !(m->youngs_modulus > 0.0f)) {
    snprintf(reason, n, "Young's modulus must be finite and > 0 Pa (got %g)",
             (double)m->youngs_modulus);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (!isfinite(m->poisson_ratio) || !(m->poisson_ratio >= 0.0f && m->poisson_ratio < 0.5f)) {
    snprintf(reason, n, "Poisson's ratio must lie in [0, 0.5) (got %g)", (double)m->poisson_ratio);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (!isfinite(m->density) || !(m->density > 0.0f)) {
    snprintf(reason, n, "density must be finite and > 0 kg/m^3 (got %g)", (double)m->density);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (!isfinite(m->plastic_yield) || !(m->plastic_yield >= 0.0f) || !isfinite(m->plastic_creep) ||
      !(m->plastic_creep >= 0.0f) || !isfinite(m->plastic_max) ||
      !(m->plastic_max >= 0.0f && m->plastic_max < 0.5f)) {
    snprintf(reason, n,
             "plasticity needs yield >= 0, creep >= 0 1/s and max in [0, 0.5) (got %g, %g, %g)",
             (double)m->plastic_yield, (double)m->plastic_creep, (double)m->plastic_max);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  return PIOLA_OK;
}

piola_tet_material piola_material_constants(const piola_material *m) {
  double e = m->youngs_modulus, nu = m->poisson_ratio;
  piola_tet_material c;
  c.mu = 1.0 / (2.0 * (1.0 + nu));
  c.lambda = nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
  c.compliance = 1.0 / e;
  c.model = (piola_int)m->model;
  c.solver = (piola_int)m->solver;
  c.inversion = (piola_int)m->handle_inversion;
  c.split = m->split == PIOLA_SPLIT_LAME;
  return c;
}

static bool finite3(const float v[3]) {
  return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

/* Normalises v into out; false for a zero or non-finite vector. */
static bool unit3(const float v[3], float out[3]) {
  double l = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
  if (!finite3(v) || !(l > 1e-20)) {
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    out[i] = (float)(v[i] / l);
  }
  return true;
}

piola_status piola_collider_pack(const piola_collider_def *def, piola_collider_data *out,
                                 char *reason, size_t n) {
  piola_collider_data c;
  memset(&c, 0, sizeof c);
  if (def->internal_cookie != PIOLA_COOKIE) {
    snprintf(reason, n, "collider def not made by piola_default_collider_def()");
    return PIOLA_ERROR_INVALID_DEF;
  }
  if (!isfinite(def->static_friction) || !(def->static_friction >= 0.0f) ||
      !isfinite(def->dynamic_friction) || !(def->dynamic_friction >= 0.0f)) {
    snprintf(reason, n, "friction coefficients must be finite and >= 0 (got %g, %g)",
             (double)def->static_friction, (double)def->dynamic_friction);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  c.static_friction = def->static_friction;
  c.dynamic_friction = def->dynamic_friction;
  switch (def->type) {
  case PIOLA_COLLIDER_PLANE: {
    const piola_plane_shape *s = &def->shape.plane;
    if (!unit3(s->normal, c.a) || !isfinite(s->offset)) {
      snprintf(reason, n, "plane needs a finite non-zero normal and a finite offset");
      return !finite3(s->normal) || !isfinite(s->offset) ? PIOLA_ERROR_NON_FINITE
                                                         : PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_PLANE;
    c.a[3] = s->offset;
    break;
  }
  case PIOLA_COLLIDER_SPHERE: {
    const piola_sphere_shape *s = &def->shape.sphere;
    if (!finite3(s->center) || !isfinite(s->radius)) {
      snprintf(reason, n, "sphere has a non-finite center or radius");
      return PIOLA_ERROR_NON_FINITE;
    }
    if (!(s->radius > 0.0f)) {
      snprintf(reason, n, "sphere radius must be > 0 m (got %g)", (double)s->radius);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_SPHERE;
    memcpy(c.a, s->center, sizeof s->center);
    c.a[3] = s->radius;
    break;
  }
  case PIOLA_COLLIDER_BOX: {
    const piola_box_shape *s = &def->shape.box;
    const float *q = s->rotation;
    if (!finite3(s->center) || !finite3(s->half_extents) || !finite3(q) || !isfinite(q[3])) {
      snprintf(reason, n, "box has a non-finite center, half extent or rotation");
      return PIOLA_ERROR_NON_FINITE;
    }
    double ql =
        sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3]);
    if (!(s->half_extents[0] > 0.0f && s->half_extents[1] > 0.0f && s->half_extents[2] > 0.0f) ||
        !(ql > 1e-20)) {
      snprintf(reason, n, "box needs half extents > 0 m and a non-zero rotation quaternion");
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_BOX;
    memcpy(c.a, s->center, sizeof s->center);
    memcpy(c.b, s->half_extents, sizeof s->half_extents);
    for (int i = 0; i < 4; ++i) {
      c.c[i] = (float)(q[i] / ql);
    }
    break;
  }
  case PIOLA_COLLIDER_CAPSULE: {
    const piola_capsule_shape *s = &def->shape.capsule;
    if (!finite3(s->a) || !finite3(s->b) || !isfinite(s->radius)) {
      snprintf(reason, n, "capsule has a non-finite end or radius");
      return PIOLA_ERROR_NON_FINITE;
    }
    if (!(s->radius > 0.0f)) {
      snprintf(reason, n, "capsule radius must be > 0 m (got %g)", (double)s->radius);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_CAPSULE;
    memcpy(c.a, s->a, sizeof s->a);
    c.a[3] = s->radius;
    memcpy(c.b, s->b, sizeof s->b);
    break;
  }
  case PIOLA_COLLIDER_FUNNEL: {
    const piola_funnel_shape *s = &def->shape.funnel;
    if (!finite3(s->base) || !finite3(s->axis) || !isfinite(s->base_radius) ||
        !isfinite(s->top_radius) || !isfinite(s->height)) {
      snprintf(reason, n, "funnel has a non-finite value");
      return PIOLA_ERROR_NON_FINITE;
    }
    if (!unit3(s->axis, c.b) || !(s->height > 0.0f) || !(s->base_radius >= 0.0f) ||
        !(s->top_radius >= 0.0f)) {
      snprintf(reason, n, "funnel needs a non-zero axis, height > 0 m and radii >= 0 m");
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_FUNNEL;
    memcpy(c.a, s->base, sizeof s->base);
    c.a[3] = s->base_radius;
    c.b[3] = s->height;
    c.c[0] = s->top_radius;
    break;
  }
  default:
    snprintf(reason, n, "unknown collider type %d", (int)def->type);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  *out = c;
  return PIOLA_OK;
}

/* ---- Text files: lines, fields, numbers ----------------------------------------------------
 * The line reader and number parsing of the mesh loaders (mesh_io.c, mesh_obj.c): lines of up
 * to 16 MiB read in chunks, "path:line: what" messages, and numbers read with '.' as the decimal
 * point whatever the C locale of the process is. */

static void reader_fail_v(const piola_line_reader *r, long line, const char *format, va_list args) {
  char what[768];
  vsnprintf(what, sizeof what, format, args);
  if (line > 0) {
    piola_log(r->logger, PIOLA_LOG_ERROR, "%s:%ld: %s", r->path, line, what);
  } else {
    piola_log(r->logger, PIOLA_LOG_ERROR, "%s: %s", r->path, what);
  }
}

/* Logs "path:line: message" and returns `status`. */
piola_status piola_reader_fail(const piola_line_reader *r, piola_status status, long line,
                               const char *format, ...) {
  va_list args;
  va_start(args, format);
  reader_fail_v(r, line, format, args);
  va_end(args);
  return status;
}

bool piola_is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

piola_status piola_reader_open(piola_line_reader *r, const char *path, const piola_logger *logger) {
  memset(r, 0, sizeof *r);
  r->path = path;
  r->logger = logger;
  errno = 0;
  r->file = fopen(path, "rb");
  if (r->file == NULL) {
    int code = errno;
    return piola_reader_fail(r, PIOLA_ERROR_IO, 0, "cannot open for reading (%s)",
                             code != 0 ? strerror(code) : "unknown reason");
  }
  r->chunk = malloc(READ_CHUNK_BYTES);
  if (r->chunk == NULL) {
    fclose(r->file);
    r->file = NULL;
    return piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, 0, "out of memory for a read buffer");
  }
  return PIOLA_OK;
}

void piola_reader_close(piola_line_reader *r) {
  if (r->file != NULL) {
    fclose(r->file);
  }
  free(r->chunk);
  free(r->line);
  memset(r, 0, sizeof *r);
}

/* Reads the next line into r->line (without its '\n'); *got is false at the end of the file. */
piola_status piola_read_line(piola_line_reader *r, bool *got) {
  size_t len = 0;
  bool any = false;
  *got = false;
  for (;;) {
    if (r->chunk_pos == r->chunk_len) {
      if (r->at_end) {
        break;
      }
      errno = 0;
      r->chunk_len = fread(r->chunk, 1, READ_CHUNK_BYTES, r->file);
      r->chunk_pos = 0;
      if (r->chunk_len == 0) {
        if (ferror(r->file)) {
          int code = errno;
          return piola_reader_fail(r, PIOLA_ERROR_IO, r->line_number + 1, "read error (%s)",
                                   code != 0 ? strerror(code) : "unknown reason");
        }
        r->at_end = true;
        break;
      }
    }
    const char *start = r->chunk + r->chunk_pos;
    size_t avail = r->chunk_len - r->chunk_pos;
    const char *newline = memchr(start, '\n', avail);
    size_t take = newline != NULL ? (size_t)(newline - start) : avail;
    any = true;
    if (take >= PIOLA_LINE_LIMIT_BYTES - len) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number + 1,
                               "line longer than %zu bytes", PIOLA_LINE_LIMIT_BYTES - 1);
    }
    if (len + take + 1 > r->line_cap) {
      size_t cap = r->line_cap > 0 ? r->line_cap : 256;
      while (cap < len + take + 1) {
        cap *= 2;
      }
      char *grown = realloc(r->line, cap);
      if (grown == NULL) {
        return piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, r->line_number + 1,
                                 "out of memory for a line of %zu bytes", len + take);
      }
      r->line = grown;
      r->line_cap = cap;
    }
    memcpy(r->line + len, start, take);
    len += take;
    r->chunk_pos += take + (newline != NULL ? 1 : 0);
    if (newline != NULL) {
      break;
    }
  }
  if (!any) {
    return PIOLA_OK;
  }
  r->line[len] = '\0';
  r->line_number++;
  if (memchr(r->line, '\0', len) != NULL) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "NUL byte in the line (not a text file?)");
  }
  if (r->line_number == 1 && len >= 3 && memcmp(r->line, "\xEF\xBB\xBF", 3) == 0) {
    memmove(r->line, r->line + 3, len - 2); /* UTF-8 byte order mark */
  }
  *got = true;
  return PIOLA_OK;
}

/* Reads up to the next line holding something other than blanks and a comment; the comment is
 * cut off. *got is false at the end of the file. */
piola_status piola_next_record(piola_line_reader *r, bool *got) {
  for (;;) {
    piola_status s = piola_read_line(r, got);
    if (s != PIOLA_OK || !*got) {
      return s;
    }
    char *hash = strchr(r->line, '#');
    if (hash != NULL) {
      *hash = '\0';
    }
    for (const char *c = r->line; *c != '\0'; ++c) {
      if (!piola_is_blank(*c)) {
        return PIOLA_OK;
      }
    }
  }
}

int64_t piola_count_fields(const char *s) {
  int64_t n = 0;
  while (*s != '\0') {
    while (piola_is_blank(*s)) {
      ++s;
    }
    if (*s == '\0') {
      break;
    }
    ++n;
    while (*s != '\0' && !piola_is_blank(*s)) {
      ++s;
    }
  }
  return n;
}

/* The next field after *cursor (which must have one: piola_count_fields() said so). */
piola_field piola_next_field(const char **cursor) {
  const char *s = *cursor;
  while (piola_is_blank(*s)) {
    ++s;
  }
  const char *start = s;
  while (*s != '\0' && !piola_is_blank(*s)) {
    ++s;
  }
  *cursor = s;
  /* Lines are shorter than PIOLA_LINE_LIMIT_BYTES, so the length fits an int. */
  piola_field f = {start, (int)(s - start)};
  return f;
}

/* Copies a number field into buf (NUL-terminated), '.' replaced by the locale's decimal point
 * so that strtod() reads it in any locale. False for a field too long or with characters no
 * number has (so "1,5" is rejected in every locale). */
static bool copy_number(piola_field f, bool real, char buf[2 * PIOLA_NUMBER_CHARS + 8]) {
  if (f.len <= 0 || f.len > PIOLA_NUMBER_CHARS) {
    return false;
  }
  const char *point = ".";
  if (real) {
    const struct lconv *conv = localeconv();
    if (conv != NULL && conv->decimal_point != NULL && conv->decimal_point[0] != '\0' &&
        strlen(conv->decimal_point) <= 4) {
      point = conv->decimal_point;
    }
  }
  size_t point_len = strlen(point);
  size_t n = 0;
  for (int i = 0; i < f.len; ++i) {
    char c = f.text[i];
    bool digit = c >= '0' && c <= '9';
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (digit || c == '+' || c == '-') {
      buf[n++] = c;
    } else if (real && letter) {
      buf[n++] = c; /* exponents, hex digits, inf, nan */
    } else if (real && c == '.') {
      memcpy(buf + n, point, point_len);
      n += point_len;
    } else {
      return false;
    }
  }
  buf[n] = '\0';
  return true;
}

/* A base-10 integer filling the whole field; one beyond 64 bits saturates (range checks then
 * reject it, and messages quote the field itself). */
bool piola_parse_integer(piola_field f, int64_t *out) {
  char buf[2 * PIOLA_NUMBER_CHARS + 8];
  if (!copy_number(f, false, buf)) {
    return false;
  }
  char *end = NULL;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (end == buf || *end != '\0') {
    return false;
  }
  *out = (int64_t)v;
  return true;
}

/* A real number filling the whole field; it may be non-finite (inf, nan, 1e999). */
bool piola_parse_real(piola_field f, double *out) {
  char buf[2 * PIOLA_NUMBER_CHARS + 8];
  if (!copy_number(f, true, buf)) {
    return false;
  }
  char *end = NULL;
  double v = strtod(buf, &end);
  if (end == buf || *end != '\0') {
    return false;
  }
  *out = v; /* overflow gives +-HUGE_VAL, caught by the finiteness check; underflow is fine */
  return true;
}

/* Grows an array of records of `size` bytes so it holds at least `need` of them (need <=
 * limit), doubling up to `limit`. */
bool piola_grow_records(void **array, int64_t *cap, int64_t need, int64_t limit, size_t size) {
  if (need <= *cap) {
    return true;
  }
  int64_t next = *cap > 0 ? *cap : INITIAL_RECORDS;
  while (next < need) {
    next *= 2;
  }
  if (next > limit) {
    next = limit;
  }
  if ((uint64_t)next > (uint64_t)(SIZE_MAX / size)) {
    return false;
  }
  void *grown = realloc(*array, (size_t)next * size);
  if (grown == NULL) {
    return false;
  }
  *array = grown;
  *cap = next;
  return true;
}

/* Formats v with "%.9g" (exact for a float) and '.' as the decimal point in every locale. */
void piola_format_real(char *buf, size_t size, float v) {
  snprintf(buf, size, "%.9g", (double)v);
  const struct lconv *conv = localeconv();
  const char *point = conv != NULL ? conv->decimal_point : NULL;
  if (point == NULL || point[0] == '\0' || strcmp(point, ".") == 0) {
    return;
  }
  char *at = strstr(buf, point);
  if (at != NULL) {
    size_t point_len = strlen(point);
    *at = '.';
    memmove(at + 1, at + point_len, strlen(at + point_len) + 1);
  }
}
