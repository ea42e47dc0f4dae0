/* Piola common host services: version, status and stage names, logging, misuse reports, the
 * default def constructors and the checks of materials and colliders. */
#include "world.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIOLA_STRINGIFY_(x) #x
#define PIOLA_STRINGIFY(x) PIOLA_STRINGIFY_(x)

/* From the macros of piola_base.h, the version's one home (CMakeLists.txt reads them too). */
const char *piola_version_string(void) {
  return PIOLA_STRINGIFY(PIOLA_VERSION_MAJOR) "." PIOLA_STRINGIFY(
      PIOLA_VERSION_MINOR) "." PIOLA_STRINGIFY(PIOLA_VERSION_PATCH);
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
  case PIOLA_ERROR_INVALID_COLLIDER:
    return "invalid collider id";
  case PIOLA_ERROR_INVALID_RENDER_MESH:
    return "invalid render mesh id";
  case PIOLA_ERROR_INVALID_ATTACHMENT:
    return "invalid attachment id";
  case PIOLA_STATUS_COUNT:
    break;
  }
  return "unknown status";
}

const char *piola_stage_name(piola_stage stage) {
  static const char *const names[PIOLA_STAGE_COUNT] = {
      "predict",           "reset_multipliers", "broad_phase",    "narrow_phase", "solve_tets",
      "solve_cloth",       "solve_bending",     "contact",        "attachments",  "collide",
      "update_velocities", "plasticity",        "solve_vertices", "solve_global"};
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
  d.edge_contacts = false;
  d.contact_thickness = 0.01f;
  d.contact_friction = 0.5f;
  d.jacobi_omega = 1.0f;
  d.vbd_chebyshev_rho = 0.0f;
  d.profile = false;
  d.fast_math = false;
  d.work_group_size = 0;
  d.simd_lanes = 0;
  d.cpu_threads = 1;
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
  m.damping = 0.0f;
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
  if (!isfinite(m->damping) || !(m->damping >= 0.0f)) {
    snprintf(reason, n, "damping must be finite and >= 0 s (got %g)", (double)m->damping);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  return PIOLA_OK;
}

piola_cloth_material piola_default_cloth_material(void) {
  piola_cloth_material m;
  memset(&m, 0, sizeof m);
  m.density = 0.2f;
  m.stretch_weft = 1000.0f;
  m.stretch_warp = 1000.0f;
  m.shear = 100.0f;
  m.poisson_weft = 0.3f;
  m.bending_stiffness = 1.0e-4f;
  m.solver = PIOLA_SOLVER_XPBD;
  m.damping = 0.0f;
  m.internal_cookie = PIOLA_COOKIE;
  return m;
}

piola_status piola_cloth_material_check(const piola_cloth_material *m, char *reason, size_t n) {
  if (m->internal_cookie != PIOLA_COOKIE) {
    snprintf(reason, n, "cloth material not made by piola_default_cloth_material()");
    return PIOLA_ERROR_INVALID_DEF;
  }
  if (m->solver != PIOLA_SOLVER_XPBD && m->solver != PIOLA_SOLVER_PBD) {
    snprintf(reason, n, "unknown solver form %d", (int)m->solver);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (!isfinite(m->density) || !(m->density > 0.0f)) {
    snprintf(reason, n, "density must be finite and > 0 kg/m^2 (got %g)", (double)m->density);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (!isfinite(m->stretch_weft) || !isfinite(m->stretch_warp) || !isfinite(m->shear) ||
      !(m->stretch_weft > 0.0f) || !(m->stretch_warp > 0.0f) || !(m->shear > 0.0f)) {
    snprintf(reason, n,
             "stretch_weft, stretch_warp and shear must be finite and > 0 N/m (got %g, %g, %g)",
             (double)m->stretch_weft, (double)m->stretch_warp, (double)m->shear);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  piola_cloth_tri_material tri;
  if (!isfinite(m->poisson_weft) ||
      !piola_cloth_tri_material_make(m->stretch_weft, m->stretch_warp, m->shear, m->poisson_weft,
                                     (piola_int)m->solver, &tri)) {
    snprintf(reason, n,
             "poisson_weft must be finite with poisson_weft^2 stretch_warp / stretch_weft < 1 "
             "(got %g)",
             (double)m->poisson_weft);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (!isfinite(m->bending_stiffness) || !(m->bending_stiffness >= 0.0f)) {
    snprintf(reason, n, "bending_stiffness must be finite and >= 0 N m (got %g)",
             (double)m->bending_stiffness);
    return PIOLA_ERROR_INVALID_MATERIAL;
  }
  if (!isfinite(m->damping) || !(m->damping >= 0.0f)) {
    snprintf(reason, n, "damping must be finite and >= 0 s (got %g)", (double)m->damping);
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
  c.damping = m->damping;
  return c;
}

bool piola_finite3(const float v[3]) {
  return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

bool piola_vertex_triangles(const int32_t *corners, int32_t triangle_count, int32_t first_vertex,
                            int32_t vertex_count, int32_t **start, int32_t **incident) {
  *start = calloc((size_t)vertex_count + 1, sizeof **start);
  *incident = malloc(sizeof **incident * 3 * (size_t)(triangle_count > 0 ? triangle_count : 1));
  int32_t *cursor = malloc(sizeof *cursor * (size_t)(vertex_count > 0 ? vertex_count : 1));
  if (*start == NULL || *incident == NULL || cursor == NULL) {
    free(*start);
    free(*incident);
    free(cursor);
    *start = *incident = NULL;
    return false;
  }
  for (int32_t t = 0; t < triangle_count; ++t) {
    for (int k = 0; k < 3; ++k) {
      (*start)[corners[3 * (size_t)t + k] - first_vertex + 1]++;
    }
  }
  for (int32_t i = 0; i < vertex_count; ++i) {
    (*start)[i + 1] += (*start)[i];
  }
  memcpy(cursor, *start, sizeof *cursor * (size_t)vertex_count);
  for (int32_t t = 0; t < triangle_count; ++t) {
    for (int k = 0; k < 3; ++k) {
      (*incident)[cursor[corners[3 * (size_t)t + k] - first_vertex]++] = t;
    }
  }
  free(cursor);
  return true;
}

bool piola_grow(void **ptr, size_t size, int32_t needed, int32_t *capacity) {
  if (needed <= *capacity) {
    return true;
  }
  int32_t cap = *capacity > 0 ? *capacity : 16;
  while (cap < needed) {
    cap = cap > INT32_MAX / 2 ? INT32_MAX : cap * 2;
  }
  void *p = realloc(*ptr, size * (size_t)cap);
  if (p == NULL) {
    return false;
  }
  *ptr = p;
  *capacity = cap;
  return true;
}

int32_t piola_lower_bound(const int32_t *a, int32_t n, int32_t key) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (a[mid] < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
