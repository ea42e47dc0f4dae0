/* Tests of the OpenCL backend beyond parity (test_opencl_parity.c has the cross-checks and
 * determinism): struct layouts shared by host and kernels checked on the device, kernel build
 * failures and their log, device choice and missing devices, the device list, and every call
 * of the core API on an OpenCL world (round trips, bodies and colliders added or removed after
 * stepping, statistics, device memory, profiling).
 *
 * Built without OpenCL, each of these tests checks instead that the OpenCL backend is refused
 * with PIOLA_ERROR_UNSUPPORTED and that PIOLA_BACKEND_AUTO falls back to the CPU reference (see
 * test_opencl_common.h, also for the case of no device at run time).
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#endif

#include "crosscheck.h"
#include "piola_internal.h" /* piola_opencl_try_build, piola_opencl_layout_probe, shared structs */
#include "piola_test.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef PIOLA_WITH_OPENCL
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#endif

/* ---- Shared helpers (test_opencl_common.h) ------------------------------------------------ */

void capture_log_fn(piola_log_level level, const char *message, void *user_data) {
  capture_log *log = user_data;
  if (level >= 0 && level < 4) {
    log->count[level]++;
  }
  size_t room = sizeof log->text - log->length;
  if (room > 1) {
    int n = snprintf(log->text + log->length, room, "%s\n", message);
    if (n > 0) {
      log->length += (size_t)n < room ? (size_t)n : room - 1;
    }
  }
  if (getenv("PIOLA_TEST_VERBOSE") != NULL) {
    fprintf(stderr, "  log[%d]: %s\n", (int)level, message);
  }
}

piola_logger capture_logger(capture_log *log) {
  memset(log, 0, sizeof *log);
  piola_logger l = {capture_log_fn, log};
  return l;
}

piola_world_def opencl_test_world_def(piola_backend backend, capture_log *log, int *misuse_count) {
  piola_world_def def = piola_test_world_def(NULL, misuse_count);
  def.backend = backend;
  if (log != NULL) {
    def.logger = capture_logger(log);
  }
  return def;
}

/* With no usable OpenCL backend (`expected` says why): OPENCL is refused with `expected` and
 * *out stays NULL; AUTO gives a CPU reference world and says so at info level. */
static void check_fallback(piola_test *t, piola_status expected) {
  capture_log log;
  piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_OPENCL, &log, NULL);
  piola_world *w = (piola_world *)&def; /* not NULL: the call must clear it */
  CHECK_STATUS(t, piola_world_create(&def, &w), expected);
  CHECK(t, w == NULL);
  CHECK(t, log.count[PIOLA_LOG_ERROR] >= 1);
  def = opencl_test_world_def(PIOLA_BACKEND_AUTO, &log, NULL);
  w = NULL;
  CHECK_STATUS(t, piola_world_create(&def, &w), PIOLA_OK);
  if (w != NULL) {
    piola_stats st;
    CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
    CHECK(t, st.backend == PIOLA_BACKEND_CPU_REFERENCE);
    CHECK(t, st.device_bytes == 0);
    CHECK(t, log.count[PIOLA_LOG_INFO] >= 1 && strstr(log.text, "CPU reference") != NULL);
  }
  piola_world_destroy(w);
}

bool opencl_test_ready(piola_test *t) {
#ifndef PIOLA_WITH_OPENCL
  check_fallback(t, PIOLA_ERROR_UNSUPPORTED);
  int32_t count = -1;
  CHECK_STATUS(t, piola_list_devices(NULL, 0, &count), PIOLA_OK);
  CHECK(t, count == 0);
  printf("  built without OpenCL: checked that the OpenCL backend is unsupported\n");
  return false;
#else
  int32_t count = 0;
  piola_status s = piola_list_devices(NULL, 0, &count);
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s == PIOLA_OK && count > 0) {
    return true;
  }
  const char *require = getenv("PIOLA_REQUIRE_OPENCL");
  if (require != NULL && strcmp(require, "1") == 0) {
    CHECK_MSG(t, false, "PIOLA_REQUIRE_OPENCL=1 but no OpenCL device was found");
    return false;
  }
  check_fallback(t, PIOLA_ERROR_NO_DEVICE);
  printf("  no OpenCL device here: checked the fallback only (set PIOLA_REQUIRE_OPENCL=1 to "
         "make this a failure)\n");
  return false;
#endif
}

/* ---- 7. The device list ------------------------------------------------------------------- */

void test_opencl_list_devices(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  int32_t count = -1;
  REQUIRE_OK(t, piola_list_devices(NULL, 0, &count));
  REQUIRE(t, count >= 1);
  piola_device_info *list = calloc((size_t)count + 1, sizeof *list);
  REQUIRE(t, list != NULL);
  int32_t again = -1;
  CHECK_STATUS(t, piola_list_devices(list, count, &again), PIOLA_OK);
  CHECK(t, again == count);
  for (int32_t i = 0; i < count; ++i) {
    const piola_device_info *d = &list[i];
    printf("  device %d:%d %s (%s, %s, %s), %d compute units, %lld MB, work-groups up to %d%s\n",
           (int)d->platform_index, (int)d->device_index, d->name, d->platform_name, d->type,
           d->version, (int)d->compute_units, (long long)(d->global_memory_bytes >> 20),
           (int)d->max_work_group_size, d->fp64 ? ", fp64" : "");
    CHECK_MSG(t, d->name[0] != '\0' && d->platform_name[0] != '\0', "device %d has no name", i);
    CHECK_MSG(t, d->compute_units >= 1, "device %d: %d compute units", i, (int)d->compute_units);
    CHECK_MSG(t, d->global_memory_bytes > 0, "device %d: no global memory", i);
    CHECK_MSG(t, d->max_work_group_size >= 1, "device %d: work-group size %d", i,
              (int)d->max_work_group_size);
    CHECK_MSG(t, strncmp(d->version, "OpenCL C ", 9) == 0, "device %d: version '%s'", i,
              d->version);
    CHECK_MSG(t,
              strcmp(d->type, "gpu") == 0 || strcmp(d->type, "cpu") == 0 ||
                  strcmp(d->type, "accelerator") == 0 || strcmp(d->type, "other") == 0,
              "device %d: type '%s'", i, d->type);
    CHECK(t, d->platform_index >= 0 && d->device_index >= 0);
    for (int32_t j = 0; j < i; ++j) {
      CHECK_MSG(
          t, list[j].platform_index != d->platform_index || list[j].device_index != d->device_index,
          "devices %d and %d have the same indices", j, i);
    }
  }
  /* A short array gets the first entries and the full count; nothing past it is written. */
  piola_device_info one[2];
  memset(one, 0x5a, sizeof one);
  unsigned char guard[sizeof one[1]];
  memcpy(guard, &one[1], sizeof guard);
  CHECK_STATUS(t, piola_list_devices(one, 1, &again), PIOLA_OK);
  CHECK(t, again == count);
  CHECK(t, strcmp(one[0].name, list[0].name) == 0);
  CHECK(t, memcmp(guard, &one[1], sizeof guard) == 0);
  /* Bad arguments. */
  CHECK_STATUS(t, piola_list_devices(NULL, 0, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_list_devices(NULL, 1, &again), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_list_devices(list, -1, &again), PIOLA_ERROR_INVALID_ARGUMENT);
  free(list);
}

/* ---- 3. Struct layouts shared by host and kernels ----------------------------------------- */

void test_opencl_struct_layout(piola_test *t) {
  if (!opencl_test_ready(t)) {
#ifndef PIOLA_WITH_OPENCL
    int32_t unused[PIOLA_LAYOUT_PROBE_COUNT];
    CHECK_STATUS(t, piola_opencl_layout_probe(NULL, unused, NULL), PIOLA_ERROR_UNSUPPORTED);
#endif
    return;
  }
#ifdef PIOLA_WITH_OPENCL
  static const char *const names[PIOLA_LAYOUT_PROBE_COUNT] = {
      "sizeof(piola_collider_data)",
      "offsetof(piola_collider_data, a)",
      "offsetof(piola_collider_data, b)",
      "offsetof(piola_collider_data, c)",
      "offsetof(piola_collider_data, kind)",
      "offsetof(piola_collider_data, static_friction)",
      "offsetof(piola_collider_data, dynamic_friction)",
      "sizeof(piola_material_data)",
      "offsetof(piola_material_data, mu)",
      "offsetof(piola_material_data, compliance)",
      "offsetof(piola_material_data, model)",
      "offsetof(piola_material_data, inversion)",
      "offsetof(piola_material_data, plastic_yield)",
      "offsetof(piola_material_data, plastic_max)",
      "sizeof(float4)",
      "sizeof(int4)",
      "offsetof(piola_material_data, damping)"};
  const int32_t host[PIOLA_LAYOUT_PROBE_COUNT] = {
      (int32_t)sizeof(piola_collider_data),
      (int32_t)offsetof(piola_collider_data, a),
      (int32_t)offsetof(piola_collider_data, b),
      (int32_t)offsetof(piola_collider_data, c),
      (int32_t)offsetof(piola_collider_data, kind),
      (int32_t)offsetof(piola_collider_data, static_friction),
      (int32_t)offsetof(piola_collider_data, dynamic_friction),
      (int32_t)sizeof(piola_material_data),
      (int32_t)offsetof(piola_material_data, mu),
      (int32_t)offsetof(piola_material_data, compliance),
      (int32_t)offsetof(piola_material_data, model),
      (int32_t)offsetof(piola_material_data, inversion),
      (int32_t)offsetof(piola_material_data, plastic_yield),
      (int32_t)offsetof(piola_material_data, plastic_max),
      (int32_t)sizeof(cl_float4),
      (int32_t)sizeof(cl_int4),
      (int32_t)offsetof(piola_material_data, damping)};
  int32_t device[PIOLA_LAYOUT_PROBE_COUNT];
  for (int i = 0; i < PIOLA_LAYOUT_PROBE_COUNT; ++i) {
    device[i] = -12345;
  }
  capture_log log;
  piola_logger logger = capture_logger(&log);
  REQUIRE_OK(t, piola_opencl_layout_probe(NULL, device, &logger));
  for (int i = 0; i < PIOLA_LAYOUT_PROBE_COUNT; ++i) {
    CHECK_MSG(t, device[i] == host[i], "%s: %d on the device, %d on the host", names[i],
              (int)device[i], (int)host[i]);
  }
  /* The sizes the kernels' comments promise, and the host buffers' strides (16 bytes per
   * vertex and per tet index set). */
  CHECK(t, host[0] == 128 && host[7] == 44 && host[14] == 16 && host[15] == 16 && host[16] == 40);
  /* A device that does not exist: its status, and nothing written. */
  int32_t untouched[PIOLA_LAYOUT_PROBE_COUNT];
  memcpy(untouched, device, sizeof untouched);
  CHECK_STATUS(t, piola_opencl_layout_probe("no-such-device-xyz", untouched, &logger),
               PIOLA_ERROR_NO_DEVICE);
  CHECK(t, memcmp(untouched, device, sizeof untouched) == 0);
#endif
}

/* ---- 4. Kernel build failures --------------------------------------------------------------- */

void test_opencl_build_failure(piola_test *t) {
  if (!opencl_test_ready(t)) {
#ifndef PIOLA_WITH_OPENCL
    CHECK_STATUS(t, piola_opencl_try_build(NULL, "__kernel void k(void) {}", NULL),
                 PIOLA_ERROR_UNSUPPORTED);
#endif
    return;
  }
  capture_log log;
  piola_logger logger = capture_logger(&log);
  /* One error: the status, our message and the compiler's own words reach the logger. */
  const char *broken = "__kernel void broken(__global float *x) {\n"
                       "  x[get_global_id(0)] = piola_undeclared_identifier_xyz;\n"
                       "}\n";
  CHECK_STATUS(t, piola_opencl_try_build(NULL, broken, &logger), PIOLA_ERROR_BUILD_FAILED);
  CHECK(t, log.count[PIOLA_LOG_ERROR] >= 2);
  CHECK_MSG(t, strstr(log.text, "build failed") != NULL, "log: %s", log.text);
  CHECK_MSG(t, strstr(log.text, "piola_undeclared_identifier_xyz") != NULL,
            "the build log did not reach the logger: %s", log.text);
  /* A long build log (several errors, beyond one logger line) arrives whole, in pieces. */
  logger = capture_logger(&log);
  char source[4096];
  size_t at = (size_t)snprintf(source, sizeof source, "__kernel void many(__global float *x) {\n");
  for (int i = 0; i < 8; ++i) {
    at += (size_t)snprintf(source + at, sizeof source - at,
                           "  x[%d] = a_rather_long_undeclared_identifier_number_%d_of_eight;\n", i,
                           i);
  }
  snprintf(source + at, sizeof source - at, "}\n");
  CHECK_STATUS(t, piola_opencl_try_build(NULL, source, &logger), PIOLA_ERROR_BUILD_FAILED);
  CHECK_MSG(t,
            strstr(log.text, "number_0_of_eight") != NULL &&
                strstr(log.text, "number_7_of_eight") != NULL,
            "the long build log was cut: %s", log.text);
  CHECK(t, log.length > 900 && log.count[PIOLA_LOG_ERROR] >= 3);
  /* A valid program builds, with no error logged. */
  logger = capture_logger(&log);
  CHECK_STATUS(t,
               piola_opencl_try_build(NULL,
                                      "__kernel void ok(__global float *x) {\n"
                                      "  x[get_global_id(0)] = 1.0f;\n"
                                      "}\n",
                                      &logger),
               PIOLA_OK);
  CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] == 0, "log: %s", log.text);
  /* No such device: that status, not a build failure. */
  CHECK_STATUS(t, piola_opencl_try_build("no-such-device-xyz", broken, &logger),
               PIOLA_ERROR_NO_DEVICE);
}

/* ---- 5. Device choice and missing devices ---------------------------------------------------- */

/* A world on `backend` with `spec`; its status, and in *name the device it runs on ("" for the
 * CPU reference, or when creation failed). */
static piola_status world_on(piola_backend backend, const char *spec, capture_log *log,
                             char name[128], piola_backend *ran) {
  piola_world_def def = opencl_test_world_def(backend, log, NULL);
  def.device_spec = spec;
  piola_world *w = (piola_world *)&def; /* must be cleared on failure */
  piola_status s = piola_world_create(&def, &w);
  name[0] = '\0';
  *ran = PIOLA_BACKEND_AUTO;
  if (s == PIOLA_OK) {
    piola_stats st;
    if (piola_world_get_stats(w, &st) == PIOLA_OK) {
      *ran = st.backend;
      if (st.backend == PIOLA_BACKEND_OPENCL) {
        snprintf(name, 128, "%s", st.device_name);
      }
    }
    piola_world_destroy(w);
  } else if (w != NULL) {
    name[0] = '?'; /* *out was not cleared */
    name[1] = '\0';
  }
  return s;
}

void test_opencl_missing_device(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  capture_log log;
  char name[128];
  piola_backend ran;
  /* OPENCL with a device that is not there: its status, *out cleared, the reason logged. */
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "no-such-device-xyz", &log, name, &ran),
               PIOLA_ERROR_NO_DEVICE);
  CHECK_MSG(t, name[0] == '\0', "*out was not set to NULL");
  CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] >= 1 && strstr(log.text, "no-such-device-xyz") != NULL,
            "log: %s", log.text);
  /* Indices that do not exist; a type that is not there (when it is not). */
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "99:99", &log, name, &ran), PIOLA_ERROR_NO_DEVICE);
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "0:99", &log, name, &ran), PIOLA_ERROR_NO_DEVICE);
  piola_device_info list[16];
  int32_t count = 0;
  CHECK_STATUS(t, piola_list_devices(list, 16, &count), PIOLA_OK);
  bool accelerator = false;
  for (int32_t i = 0; i < count && i < 16; ++i) {
    accelerator |= strcmp(list[i].type, "accelerator") == 0;
  }
  if (!accelerator && count <= 16) {
    CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "accelerator", &log, name, &ran),
                 PIOLA_ERROR_NO_DEVICE);
  }
  /* AUTO with the same spec: the CPU reference, and an info message that says so. */
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_AUTO, "no-such-device-xyz", &log, name, &ran), PIOLA_OK);
  CHECK(t, ran == PIOLA_BACKEND_CPU_REFERENCE);
  CHECK_MSG(t, log.count[PIOLA_LOG_INFO] >= 1 && strstr(log.text, "CPU reference") != NULL,
            "log: %s", log.text);
  CHECK(t, log.count[PIOLA_LOG_ERROR] >= 1); /* why OpenCL was not used */
  /* AUTO with a device: OpenCL. */
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_AUTO, NULL, &log, name, &ran), PIOLA_OK);
  CHECK(t, ran == PIOLA_BACKEND_OPENCL && name[0] != '\0');
}

static bool contains_ignoring_case(const char *hay, const char *needle) {
  for (; *hay != '\0'; ++hay) {
    size_t i = 0;
    while (needle[i] != '\0' &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) {
      ++i;
    }
    if (needle[i] == '\0') {
      return true;
    }
  }
  return needle[0] == '\0';
}

/* Restores an environment variable when the test ends. */
typedef struct saved_env {
  const char *name;
  char value[1024];
  bool was_set;
} saved_env;

static void env_save(saved_env *e, const char *name) {
  const char *v = getenv(name);
  e->name = name;
  e->was_set = v != NULL;
  snprintf(e->value, sizeof e->value, "%s", v != NULL ? v : "");
}

static void env_restore(const saved_env *e) {
  if (e->was_set) {
    setenv(e->name, e->value, 1);
  } else {
    unsetenv(e->name);
  }
}

void test_opencl_device_spec(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  int32_t count = 0;
  REQUIRE_OK(t, piola_list_devices(NULL, 0, &count));
  piola_device_info *list = calloc((size_t)count, sizeof *list);
  REQUIRE(t, list != NULL);
  REQUIRE_OK(t, piola_list_devices(list, count, &count));
  /* The device each form must pick. */
  const piola_device_info *first = NULL;
  bool any_cpu = false;
  for (int32_t i = 0; i < count; ++i) {
    if (list[i].platform_index == 0 && list[i].device_index == 0) {
      first = &list[i];
    }
    any_cpu |= strcmp(list[i].type, "cpu") == 0;
  }
  if (first == NULL) {
    CHECK_MSG(t, false, "no device 0:0 among %d", (int)count);
    free(list);
    return;
  }
  saved_env env;
  env_save(&env, "PIOLA_DEVICE");
  unsetenv("PIOLA_DEVICE");
  capture_log log;
  char name[128];
  piola_backend ran;
  /* "P:D" */
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "0:0", &log, name, &ran), PIOLA_OK);
  CHECK_MSG(t, strcmp(name, first->name) == 0, "0:0 ran on '%s', not '%s'", name, first->name);
  /* "cpu": one of the CPU devices. */
  if (any_cpu) {
    CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "cpu", &log, name, &ran), PIOLA_OK);
    bool is_cpu = false;
    for (int32_t i = 0; i < count; ++i) {
      is_cpu |= strcmp(list[i].type, "cpu") == 0 && strcmp(list[i].name, name) == 0;
    }
    CHECK_MSG(t, is_cpu, "cpu ran on '%s'", name);
  } else {
    CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "cpu", &log, name, &ran), PIOLA_ERROR_NO_DEVICE);
  }
  /* A substring of the name, in another case: the first device of that name. */
  char sub[16];
  size_t len = strlen(first->name), from = len > 8 ? len / 2 - 4 : 0;
  snprintf(sub, sizeof sub, "%.8s", first->name + from);
  for (char *c = sub; *c != '\0'; ++c) {
    *c = (char)(islower((unsigned char)*c) ? toupper((unsigned char)*c)
                                           : tolower((unsigned char)*c));
  }
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, sub, &log, name, &ran), PIOLA_OK);
  CHECK_MSG(t, contains_ignoring_case(name, sub), "'%s' ran on '%s'", sub, name);
  /* PIOLA_DEVICE is honoured when device_spec is NULL (or empty), and ignored otherwise. */
  setenv("PIOLA_DEVICE", "no-such-device-xyz", 1);
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, NULL, &log, name, &ran), PIOLA_ERROR_NO_DEVICE);
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "", &log, name, &ran), PIOLA_ERROR_NO_DEVICE);
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_AUTO, NULL, &log, name, &ran), PIOLA_OK);
  CHECK(t, ran == PIOLA_BACKEND_CPU_REFERENCE);
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, "0:0", &log, name, &ran), PIOLA_OK);
  setenv("PIOLA_DEVICE", "0:0", 1);
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, NULL, &log, name, &ran), PIOLA_OK);
  CHECK_MSG(t, strcmp(name, first->name) == 0, "PIOLA_DEVICE=0:0 ran on '%s'", name);
  setenv("PIOLA_DEVICE", sub, 1);
  CHECK_STATUS(t, world_on(PIOLA_BACKEND_OPENCL, NULL, &log, name, &ran), PIOLA_OK);
  CHECK_MSG(t, contains_ignoring_case(name, sub), "PIOLA_DEVICE=%s ran on '%s'", sub, name);
  env_restore(&env);
  const char *now = getenv("PIOLA_DEVICE");
  CHECK(t, env.was_set ? now != NULL && strcmp(now, env.value) == 0 : now == NULL);
  free(list);
}

/* ---- 6. The core API on OpenCL, against the CPU reference ---------------------------------- */

/* A small bar: 4 x 2 x 2 cells, 0.8 x 0.4 x 0.4 m (45 vertices, 96 tets). */
static piola_tet_mesh api_bar(void) {
  piola_tet_mesh m;
  const int32_t cells[3] = {4, 2, 2};
  const float size[3] = {0.8f, 0.4f, 0.4f};
  if (piola_mesh_make_box(cells, size, &m) != PIOLA_OK) {
    memset(&m, 0, sizeof m);
  }
  return m;
}

/* Two worlds driven alike, [0] the CPU reference and [1] OpenCL, and the bar most tests put in
 * them. */
typedef struct twin {
  piola_world *w[2];
  capture_log log[2];
  int misuse[2];
  piola_tet_mesh bar;
} twin;

static void twin_close(twin *tw) {
  piola_world_destroy(tw->w[0]);
  piola_world_destroy(tw->w[1]);
  piola_mesh_free(&tw->bar);
  memset(tw, 0, sizeof *tw);
}

/* False when OpenCL is not there to test (opencl_test_ready) or the bar or a world could not be
 * made (a failed check); the test ends then, with nothing left to free. */
static bool twin_open(piola_test *t, twin *tw) {
  memset(tw, 0, sizeof *tw);
  if (!opencl_test_ready(t)) {
    return false;
  }
  tw->bar = api_bar();
  CHECK_MSG(t, tw->bar.vertex_count > 0, "could not make the bar");
  const piola_backend backends[2] = {PIOLA_BACKEND_CPU_REFERENCE, PIOLA_BACKEND_OPENCL};
  for (int k = 0; k < 2 && tw->bar.vertex_count > 0; ++k) {
    piola_world_def def = opencl_test_world_def(backends[k], &tw->log[k], &tw->misuse[k]);
    piola_status s = piola_world_create(&def, &tw->w[k]);
    CHECK_MSG(t, s == PIOLA_OK, "creating the %s world: %s", piola_backend_name(backends[k]),
              piola_status_string(s));
  }
  if (tw->w[0] == NULL || tw->w[1] == NULL) {
    twin_close(tw);
    return false;
  }
  return true;
}

static piola_status twin_step(twin *tw, int32_t steps) {
  piola_status s = PIOLA_OK;
  for (int32_t i = 0; i < steps && s == PIOLA_OK; ++i) {
    s = piola_world_step(tw->w[0]);
    if (s == PIOLA_OK) {
      s = piola_world_step(tw->w[1]);
    }
  }
  return s;
}

/* The largest vertex distance between the twins over the given bodies, relative to the
 * reference's bounding-box diagonal (the cross-check's measure); 1 on failure. */
static double twin_gap(twin *tw, const piola_body_id *ids, int32_t count) {
  crosscheck_pair pair = {tw->w[0], tw->w[1], ids, ids, count};
  crosscheck_sample s;
  return crosscheck_compare(&pair, &s) == PIOLA_OK ? s.max_relative : 1.0;
}

static piola_status get_state(piola_world *w, piola_body_id id, int32_t n, float *x, float *v) {
  piola_status s = piola_body_get_positions(w, id, x, n);
  return s == PIOLA_OK ? piola_body_get_velocities(w, id, v, n) : s;
}

/* The twins' parity after some API calls: within the cross-check's tolerance (1e-4 of the
 * diagonal; these short runs stay far below it). */
#define API_PARITY 1e-4

/* Set and get positions, velocities and inverse masses before the first step and after steps:
 * OpenCL returns exactly what was set, leaves other bodies and other fields alone, and steps on
 * from it as the CPU reference does. */
void test_opencl_body_arrays(piola_test *t) {
  twin tw;
  if (!twin_open(t, &tw)) {
    return;
  }
  const piola_tet_mesh *bar = &tw.bar;
  const int32_t n = bar->vertex_count;
  const piola_material material = piola_default_material();
  const float up[3] = {0.0f, 1.0f, 0.0f}, at_a[3] = {-1.0f, 0.3f, 0.0f},
              at_b[3] = {1.0f, 0.3f, 0.0f};
  piola_body_id a = {0, 0}, b = {0, 0};
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_add_plane(tw.w[k], up, 0.0f, 0.5f, NULL), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], bar, &material, at_a, &a), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], bar, &material, at_b, &b), PIOLA_OK);
  }
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  float *im = malloc(sizeof *im * (size_t)n), *gx = malloc(sizeof *gx * 3 * (size_t)n);
  float *gv = malloc(sizeof *gv * 3 * (size_t)n), *gm = malloc(sizeof *gm * (size_t)n);
  float *bx = malloc(sizeof *bx * 3 * (size_t)n), *bv = malloc(sizeof *bv * 3 * (size_t)n);
  REQUIRE(t, x && v && im && gx && gv && gm && bx && bv);
  for (int round = 0; round < 2; ++round) {
    /* Round 0 before the first step, round 1 after 10 steps. */
    if (round == 1) {
      REQUIRE_OK(t, twin_step(&tw, 10));
      CHECK_MSG(t, twin_gap(&tw, &a, 1) <= API_PARITY, "gap %.3e", twin_gap(&tw, &a, 1));
    }
    CHECK_STATUS(t, get_state(tw.w[1], b, n, bx, bv), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_inverse_masses(tw.w[1], a, im, n), PIOLA_OK);
    for (int32_t i = 0; i < n; ++i) {
      x[3 * i] = bar->positions[3 * i] + at_a[0] + 0.01f * (float)round;
      x[3 * i + 1] = 0.85f * bar->positions[3 * i + 1] + at_a[1] + 0.1f;
      x[3 * i + 2] = bar->positions[3 * i + 2] + at_a[2] + 0.02f * (float)(i % 3);
      v[3 * i] = 0.3f * sinf((float)i);
      v[3 * i + 1] = -0.5f + 0.1f * (float)round;
      v[3 * i + 2] = 0.2f * cosf((float)i);
      im[i] = i == 0 ? 0.0f : im[i] * (round == 0 ? 1.5f : 0.75f);
    }
    for (int k = 0; k < 2; ++k) {
      CHECK_STATUS(t, piola_body_set_positions(tw.w[k], a, x, n), PIOLA_OK);
      CHECK_STATUS(t, piola_body_set_velocities(tw.w[k], a, v, n), PIOLA_OK);
      CHECK_STATUS(t, piola_body_set_inverse_masses(tw.w[k], a, im, n), PIOLA_OK);
    }
    CHECK_STATUS(t, get_state(tw.w[1], a, n, gx, gv), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_inverse_masses(tw.w[1], a, gm, n), PIOLA_OK);
    CHECK_MSG(t, memcmp(gx, x, sizeof *x * 3 * (size_t)n) == 0, "round %d: positions", round);
    CHECK_MSG(t, memcmp(gv, v, sizeof *v * 3 * (size_t)n) == 0, "round %d: velocities", round);
    CHECK_MSG(t, memcmp(gm, im, sizeof *im * (size_t)n) == 0, "round %d: inverse masses", round);
    /* The other body is untouched. */
    CHECK_STATUS(t, get_state(tw.w[1], b, n, gx, gv), PIOLA_OK);
    CHECK_MSG(t,
              memcmp(gx, bx, sizeof *bx * 3 * (size_t)n) == 0 &&
                  memcmp(gv, bv, sizeof *bv * 3 * (size_t)n) == 0,
              "round %d: setting body a changed body b", round);
    /* Setting one field keeps the others: masses keep positions and velocities, positions keep
     * velocities. */
    for (int k = 0; k < 2; ++k) {
      CHECK_STATUS(t, piola_body_set_inverse_masses(tw.w[k], a, im, n), PIOLA_OK);
      CHECK_STATUS(t, piola_body_set_positions(tw.w[k], a, x, n), PIOLA_OK);
    }
    CHECK_STATUS(t, get_state(tw.w[1], a, n, gx, gv), PIOLA_OK);
    CHECK_MSG(t,
              memcmp(gx, x, sizeof *x * 3 * (size_t)n) == 0 &&
                  memcmp(gv, v, sizeof *v * 3 * (size_t)n) == 0,
              "round %d: setting one field changed another", round);
    /* Refused calls change nothing. */
    gx[4] = NAN;
    CHECK_STATUS(t, piola_body_set_positions(tw.w[1], a, gx, n), PIOLA_ERROR_NON_FINITE);
    CHECK_STATUS(t, piola_body_set_velocities(tw.w[1], a, v, n - 1), PIOLA_ERROR_COUNT_MISMATCH);
    gm[3] = -1.0f;
    CHECK_STATUS(t, piola_body_set_inverse_masses(tw.w[1], a, gm, n), PIOLA_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(t, get_state(tw.w[1], a, n, gx, gv), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_inverse_masses(tw.w[1], a, gm, n), PIOLA_OK);
    CHECK_MSG(t,
              memcmp(gx, x, sizeof *x * 3 * (size_t)n) == 0 &&
                  memcmp(gv, v, sizeof *v * 3 * (size_t)n) == 0 &&
                  memcmp(gm, im, sizeof *im * (size_t)n) == 0,
              "round %d: a refused call changed the body", round);
  }
  /* Both step on alike from what was set; the pinned vertex (0) stays where it was put. */
  REQUIRE_OK(t, twin_step(&tw, 20));
  const piola_body_id both[2] = {a, b};
  double gap = twin_gap(&tw, both, 2);
  printf("  body arrays: gap after the round trips and 20 steps %.3e\n", gap);
  CHECK_MSG(t, gap <= API_PARITY, "gap %.3e", gap);
  CHECK_STATUS(t, piola_body_get_positions(tw.w[1], a, gx, n), PIOLA_OK);
  CHECK(t, gx[0] == x[0] && gx[1] == x[1] && gx[2] == x[2]);
  CHECK(t, gx[4] != x[4]); /* the others moved */
  CHECK_STATUS(t, piola_world_finish(tw.w[1]), PIOLA_OK);
  CHECK(t, tw.misuse[1] == 0);
  free(x);
  free(v);
  free(im);
  free(gx);
  free(gv);
  free(gm);
  free(bx);
  free(bv);
  twin_close(&tw);
}

/* A body added after stepping: the bodies already there keep their state exactly, the new one
 * starts at rest where it was put, a new material reaches the device, and both backends go on
 * alike. */
void test_opencl_add_body_after_step(piola_test *t) {
  twin tw;
  if (!twin_open(t, &tw)) {
    return;
  }
  const piola_tet_mesh *bar = &tw.bar;
  const int32_t n = bar->vertex_count;
  const piola_material stvk = piola_default_material();
  piola_material neo = stvk;
  neo.model = PIOLA_MODEL_NEOHOOKEAN;
  neo.youngs_modulus = 3.0e5f;
  const float up[3] = {0.0f, 1.0f, 0.0f}, at_a[3] = {-1.0f, 0.2f, 0.0f},
              at_b[3] = {0.5f, 0.6f, 0.0f};
  piola_body_id ids[2] = {{0, 0}, {0, 0}};
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_add_plane(tw.w[k], up, 0.0f, 0.5f, NULL), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], bar, &stvk, at_a, &ids[0]), PIOLA_OK);
  }
  REQUIRE_OK(t, twin_step(&tw, 15));
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  float *gx = malloc(sizeof *gx * 3 * (size_t)n), *gv = malloc(sizeof *gv * 3 * (size_t)n);
  REQUIRE(t, x && v && gx && gv);
  CHECK_STATUS(t, get_state(tw.w[1], ids[0], n, x, v), PIOLA_OK);
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], bar, &neo, at_b, &ids[1]), PIOLA_OK);
  }
  CHECK_STATUS(t, get_state(tw.w[1], ids[0], n, gx, gv), PIOLA_OK);
  CHECK_MSG(t,
            memcmp(gx, x, sizeof *x * 3 * (size_t)n) == 0 &&
                memcmp(gv, v, sizeof *v * 3 * (size_t)n) == 0,
            "adding a body changed the state of the body already there");
  CHECK_STATUS(t, get_state(tw.w[1], ids[1], n, gx, gv), PIOLA_OK);
  bool at_rest = true;
  for (int32_t i = 0; i < 3 * n; ++i) {
    at_rest &= gx[i] == bar->positions[i] + at_b[i % 3] && gv[i] == 0.0f;
  }
  CHECK_MSG(t, at_rest, "the new body does not start at rest where it was put");
  /* Squashed, so that its (new) material decides how it springs back. */
  for (int32_t i = 0; i < n; ++i) {
    gx[3 * i + 1] = 0.7f * bar->positions[3 * i + 1] + at_b[1];
  }
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_body_set_positions(tw.w[k], ids[1], gx, n), PIOLA_OK);
  }
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(tw.w[1], &st), PIOLA_OK);
  CHECK(t, st.body_count == 2 && st.vertex_count == 2 * n && st.tet_count == 2 * bar->tet_count);
  double gap_before = twin_gap(&tw, ids, 2);
  REQUIRE_OK(t, twin_step(&tw, 25));
  double gap = twin_gap(&tw, ids, 2);
  printf("  add body: gap %.3e when added, %.3e after 25 more steps\n", gap_before, gap);
  CHECK_MSG(t, gap <= API_PARITY, "gap %.3e", gap);
  CHECK_STATUS(t, piola_body_get_positions(tw.w[1], ids[1], gx, n), PIOLA_OK);
  CHECK(t, gx[1] < bar->positions[1] + at_b[1] - 0.05f);                           /* it fell */
  CHECK(t, gx[3 * (n - 1) + 1] - gx[1] > 0.75f * bar->positions[3 * (n - 1) + 1]); /* sprang back */
  free(x);
  free(v);
  free(gx);
  free(gv);
  twin_close(&tw);
}

/* Bodies removed after stepping (the first one, whose removal shifts the others' vertices, and
 * the last): the others keep their state exactly, the id goes stale, a body added afterwards
 * reuses the slot with a new id, and both backends go on alike. */
void test_opencl_remove_body_after_step(piola_test *t) {
  twin tw;
  if (!twin_open(t, &tw)) {
    return;
  }
  const piola_tet_mesh *bar = &tw.bar;
  const int32_t n = bar->vertex_count;
  const piola_material material = piola_default_material();
  const float up[3] = {0.0f, 1.0f, 0.0f};
  piola_body_id ids[4];
  memset(ids, 0, sizeof ids);
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_add_plane(tw.w[k], up, 0.0f, 0.5f, NULL), PIOLA_OK);
    for (int i = 0; i < 3; ++i) {
      const float at[3] = {-1.6f + 1.1f * (float)i, 0.2f + 0.1f * (float)i, 0.0f};
      CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], bar, &material, at, &ids[i]), PIOLA_OK);
    }
  }
  REQUIRE_OK(t, twin_step(&tw, 15));
  float *x = malloc(sizeof *x * 6 * (size_t)n), *v = malloc(sizeof *v * 6 * (size_t)n);
  float *gx = malloc(sizeof *gx * 3 * (size_t)n), *gv = malloc(sizeof *gv * 3 * (size_t)n);
  REQUIRE(t, x && v && gx && gv);
  /* Remove the first body. */
  CHECK_STATUS(t, get_state(tw.w[1], ids[1], n, x, v), PIOLA_OK);
  CHECK_STATUS(t, get_state(tw.w[1], ids[2], n, x + 3 * n, v + 3 * n), PIOLA_OK);
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_remove_body(tw.w[k], ids[0]), PIOLA_OK);
  }
  for (int i = 1; i < 3; ++i) {
    CHECK_STATUS(t, get_state(tw.w[1], ids[i], n, gx, gv), PIOLA_OK);
    CHECK_MSG(t,
              memcmp(gx, x + 3 * n * (i - 1), sizeof *x * 3 * (size_t)n) == 0 &&
                  memcmp(gv, v + 3 * n * (i - 1), sizeof *v * 3 * (size_t)n) == 0,
              "removing body 0 changed body %d", i);
  }
  CHECK(t, !piola_body_is_valid(tw.w[1], ids[0]));
  CHECK_STATUS(t, piola_body_get_positions(tw.w[1], ids[0], gx, n), PIOLA_ERROR_INVALID_BODY);
  CHECK(t, tw.misuse[1] == 1);
  REQUIRE_OK(t, twin_step(&tw, 15));
  double gap1 = twin_gap(&tw, ids + 1, 2);
  CHECK_MSG(t, gap1 <= API_PARITY, "gap %.3e after removing the first body", gap1);
  /* Remove the last body. */
  CHECK_STATUS(t, get_state(tw.w[1], ids[1], n, x, v), PIOLA_OK);
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_remove_body(tw.w[k], ids[2]), PIOLA_OK);
  }
  CHECK_STATUS(t, get_state(tw.w[1], ids[1], n, gx, gv), PIOLA_OK);
  CHECK_MSG(t,
            memcmp(gx, x, sizeof *x * 3 * (size_t)n) == 0 &&
                memcmp(gv, v, sizeof *v * 3 * (size_t)n) == 0,
            "removing body 2 changed body 1");
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(tw.w[1], &st), PIOLA_OK);
  CHECK(t, st.body_count == 1 && st.vertex_count == n && st.tet_count == bar->tet_count);
  /* A new body reuses a slot under a new id. */
  const float at[3] = {1.0f, 0.5f, 0.0f};
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], bar, &material, at, &ids[3]), PIOLA_OK);
  }
  CHECK(t, ids[3].index1 == ids[0].index1 && ids[3].generation != ids[0].generation);
  CHECK(t, !piola_body_is_valid(tw.w[1], ids[0]) && piola_body_is_valid(tw.w[1], ids[3]));
  REQUIRE_OK(t, twin_step(&tw, 15));
  const piola_body_id alive[2] = {ids[1], ids[3]};
  double gap2 = twin_gap(&tw, alive, 2);
  printf("  remove body: gap %.3e after removing the first body, %.3e after the last and a new "
         "one\n",
         gap1, gap2);
  CHECK_MSG(t, gap2 <= API_PARITY, "gap %.3e", gap2);
  free(x);
  free(v);
  free(gx);
  free(gv);
  twin_close(&tw);
}

/* Colliders added after stepping reach the device: a bar that has been stepping lands on a
 * ground plane added later, then is put above a box and a capsule added later still and lands
 * on each, on both backends alike (without the new collider it would fall to the ground). */
void test_opencl_add_collider_after_step(piola_test *t) {
  twin tw;
  if (!twin_open(t, &tw)) {
    return;
  }
  const piola_tet_mesh *bar = &tw.bar;
  const int32_t n = bar->vertex_count;
  const piola_material material = piola_default_material();
  const float at[3] = {-0.4f, 0.15f, -0.2f};
  piola_body_id id = {0, 0};
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], bar, &material, at, &id), PIOLA_OK);
  }
  REQUIRE_OK(t, twin_step(&tw, 5));
  /* Ground y = 0; a box with its top at y = 0.5 around x = 2; a capsule along x at x = -2 with
   * its top at y = 0.5. */
  piola_collider_def defs[3];
  defs[0] = piola_default_collider_def();
  defs[1] = piola_default_collider_def();
  defs[1].type = PIOLA_COLLIDER_BOX;
  defs[1].shape.box.center[0] = 2.0f;
  defs[1].shape.box.center[1] = 0.25f;
  defs[1].shape.box.half_extents[0] = 0.8f;
  defs[1].shape.box.half_extents[1] = 0.25f;
  defs[1].shape.box.half_extents[2] = 0.8f;
  defs[1].shape.box.rotation[3] = 1.0f;
  defs[2] = piola_default_collider_def();
  defs[2].type = PIOLA_COLLIDER_CAPSULE;
  defs[2].shape.capsule.a[0] = -2.4f;
  defs[2].shape.capsule.a[1] = 0.25f;
  defs[2].shape.capsule.b[0] = -1.6f;
  defs[2].shape.capsule.b[1] = 0.25f;
  defs[2].shape.capsule.radius = 0.25f;
  const float drop_x[3] = {0.0f, 2.0f, -2.0f}, top[3] = {0.0f, 0.5f, 0.5f};
  float *p = malloc(sizeof *p * 3 * (size_t)n), *zero = calloc(3 * (size_t)n, sizeof *zero);
  REQUIRE(t, p != NULL && zero != NULL);
  for (int c = 0; c < 3; ++c) {
    for (int k = 0; k < 2; ++k) {
      piola_collider_id index = {-1, 0};
      CHECK_STATUS(t, piola_world_add_collider(tw.w[k], &defs[c], &index), PIOLA_OK);
      CHECK(t, index.index1 == c + 1);
      if (c > 0) { /* put the bar 0.1 m above the new collider, at rest */
        for (int32_t v = 0; v < n; ++v) {
          p[3 * v] = bar->positions[3 * v] + drop_x[c] - 0.4f;
          p[3 * v + 1] = bar->positions[3 * v + 1] + top[c] + 0.1f;
          p[3 * v + 2] = bar->positions[3 * v + 2] - 0.2f;
        }
        CHECK_STATUS(t, piola_body_set_positions(tw.w[k], id, p, n), PIOLA_OK);
        CHECK_STATUS(t, piola_body_set_velocities(tw.w[k], id, zero, n), PIOLA_OK);
      }
    }
    REQUIRE_OK(t, twin_step(&tw, 40));
    double gap = twin_gap(&tw, &id, 1);
    CHECK_STATUS(t, piola_body_get_positions(tw.w[1], id, p, n), PIOLA_OK);
    double lowest = INFINITY;
    for (int32_t v = 0; v < n; ++v) {
      lowest = fmin(lowest, p[3 * v + 1]);
    }
    printf("  add collider %d after stepping: gap %.3e, the bar rests at y %.4f m (collider top "
           "%.2f m)\n",
           c, gap, lowest, (double)top[c]);
    CHECK_MSG(t, gap <= API_PARITY, "collider %d: gap %.3e", c, gap);
    /* On its top (the bar sags a little over the capsule). */
    CHECK_MSG(t, lowest > top[c] - 0.1 && lowest < top[c] + 0.01,
              "collider %d: the bar rests at y = %.4f m, not on %.2f", c, lowest, (double)top[c]);
  }
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(tw.w[1], &st), PIOLA_OK);
  CHECK(t, st.collider_count == 3);
  free(p);
  free(zero);
  twin_close(&tw);
}

/* The device memory a world may use (issue 4): at most 100 bytes per tet and 64 per vertex,
 * plus a small constant for the material and collider tables and empty buffers. Contacts add
 * their own (docs/ARCHITECTURE.md): 712 bytes per surface vertex (its vertex, body and rest
 * position, two lists of PIOLA_MAX_VERTEX_CONTACTS triangles, the corner lists and four
 * corrections per contact slot) and 224 per surface triangle (indices and box, room for its
 * entries in up to 27 grid cells, and up to 8 hash buckets of counts and starts). Edge-edge
 * contacts add 700 bytes per surface edge (its ends, body and owner, the count and
 * PIOLA_MAX_EDGE_CONTACTS entries of its contact list, its place in the list of edges with
 * contacts, four corner entries and four corrections per slot, its cluster) and 168 per surface
 * triangle (its edges and owned mask, and at most one cluster's highest and lowest owned edges,
 * near window, and list of PIOLA_CLUSTER_PAIRS clusters with its count). */
#define DEVICE_BYTES_PER_TET 100
#define DEVICE_BYTES_PER_VERTEX 64
#define DEVICE_BYTES_PER_SURFACE_VERTEX 712
#define DEVICE_BYTES_PER_SURFACE_TRIANGLE (224 + 16 + 4 + 4 + 12 + 4 + 4 * PIOLA_CLUSTER_PAIRS)
#define DEVICE_BYTES_PER_SURFACE_EDGE                                                              \
  (16 + 4 + 4 * PIOLA_MAX_EDGE_CONTACTS + 4 + (16 + 64) * PIOLA_MAX_EDGE_CONTACTS + 4)
#define DEVICE_BYTES_CONSTANT 4096

/* Statistics of an OpenCL world against the CPU reference's: counts, time, energies, device
 * memory and name; settings changed between steps (gravity, iterations) apply alike. */
void test_opencl_stats(piola_test *t) {
  twin tw;
  if (!twin_open(t, &tw)) {
    return;
  }
  const piola_tet_mesh *bar = &tw.bar;
  piola_tet_mesh creature;
  REQUIRE_OK(t, piola_mesh_make_creature(3.0f, &creature));
  const piola_material stvk = piola_default_material();
  piola_material neo = stvk;
  neo.model = PIOLA_MODEL_NEOHOOKEAN;
  const float up[3] = {0.0f, 1.0f, 0.0f}, at_c[3] = {0.0f, 0.1f, 0.0f},
              at_b[3] = {2.0f, 0.3f, 0.0f};
  piola_body_id ids[2] = {{0, 0}, {0, 0}};
  piola_collider_def sphere = piola_default_collider_def();
  sphere.type = PIOLA_COLLIDER_SPHERE;
  sphere.shape.sphere.center[0] = 2.4f;
  sphere.shape.sphere.radius = 0.2f;
  float *squashed = malloc(sizeof *squashed * 3 * (size_t)creature.vertex_count);
  REQUIRE(t, squashed != NULL);
  for (int32_t i = 0; i < creature.vertex_count; ++i) {
    squashed[3 * i] = creature.positions[3 * i] + at_c[0];
    squashed[3 * i + 1] = 0.8f * creature.positions[3 * i + 1] + at_c[1];
    squashed[3 * i + 2] = creature.positions[3 * i + 2] + at_c[2];
  }
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_add_plane(tw.w[k], up, 0.0f, 0.5f, NULL), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_collider(tw.w[k], &sphere, NULL), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], &creature, &stvk, at_c, &ids[0]), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(tw.w[k], bar, &neo, at_b, &ids[1]), PIOLA_OK);
    CHECK_STATUS(t, piola_body_set_positions(tw.w[k], ids[0], squashed, creature.vertex_count),
                 PIOLA_OK);
  }
  const int32_t nv = creature.vertex_count + bar->vertex_count;
  const int32_t nt = creature.tet_count + bar->tet_count;
  for (int phase = 0; phase < 3; ++phase) {
    /* Phase 0 before the first step, 1 after 20 steps, 2 after 20 more with other settings. */
    if (phase == 1) {
      REQUIRE_OK(t, twin_step(&tw, 20));
    } else if (phase == 2) {
      const float gravity[3] = {1.0f, -5.0f, 0.5f};
      for (int k = 0; k < 2; ++k) {
        CHECK_STATUS(t, piola_world_set_gravity(tw.w[k], gravity), PIOLA_OK);
        CHECK_STATUS(t, piola_world_set_iterations(tw.w[k], 8), PIOLA_OK);
      }
      REQUIRE_OK(t, twin_step(&tw, 20));
    }
    piola_stats s[2];
    CHECK_STATUS(t, piola_world_get_stats(tw.w[0], &s[0]), PIOLA_OK);
    CHECK_STATUS(t, piola_world_get_stats(tw.w[1], &s[1]), PIOLA_OK);
    const piola_stats *c = &s[0], *o = &s[1];
    CHECK(t, o->backend == PIOLA_BACKEND_OPENCL && c->backend == PIOLA_BACKEND_CPU_REFERENCE);
    CHECK(t, o->body_count == 2 && o->vertex_count == nv && o->tet_count == nt);
    CHECK(t, o->collider_count == 2);
    CHECK(t, o->color_count == c->color_count && o->largest_color == c->largest_color &&
                 o->smallest_color == c->smallest_color && o->color_count > 0);
    CHECK(t, o->step_count == 20 * phase && c->step_count == o->step_count);
    CHECK_NEAR(t, o->simulated_time, 0.1 * phase, 1e-6);
    /* Energies from float state against double: close, not equal (before the first step they
     * come from the same host arrays: equal). */
    const double tol = phase == 0 ? 1e-12 : 2e-3;
    CHECK_MSG(t,
              fabs(o->elastic_energy - c->elastic_energy) <= tol * fabs(c->elastic_energy) + 1e-9,
              "phase %d: elastic energy %.9g J on OpenCL, %.9g J on the CPU", phase,
              o->elastic_energy, c->elastic_energy);
    CHECK_MSG(t,
              fabs(o->kinetic_energy - c->kinetic_energy) <= tol * fabs(c->kinetic_energy) + 1e-9,
              "phase %d: kinetic energy %.9g J on OpenCL, %.9g J on the CPU", phase,
              o->kinetic_energy, c->kinetic_energy);
    CHECK(t, o->elastic_energy > 0.0 && (phase == 0 || o->kinetic_energy > 0.0));
    CHECK(t, o->inverted_tets == c->inverted_tets);
    if (phase > 0) {
      /* Every tet the reference counts active is active on OpenCL; float may count more: the
       * rounding strain of float positions (about 1e-6 for 0.2 m tets 2 m from the origin)
       * already exceeds the solver's energy threshold, so a bar falling rigidly counts as
       * active there (all 96 of its tets here) and not in double. */
      printf("  stats phase %d: %d active tets on OpenCL, %d on the CPU reference\n", phase,
             (int)o->active_tets, (int)c->active_tets);
      CHECK_MSG(t, o->active_tets >= c->active_tets - nt / 100 && o->active_tets <= nt,
                "phase %d: %d active tets on OpenCL, %d on the CPU", phase, (int)o->active_tets,
                (int)c->active_tets);
      CHECK(t, c->active_tets > creature.tet_count / 2);
      CHECK(t, o->last_step_ms > 0.0);
      /* Device memory: what issue 4 allows, and at least positions and tet indices. */
      const int64_t limit =
          (int64_t)DEVICE_BYTES_PER_TET * nt + (int64_t)DEVICE_BYTES_PER_VERTEX * nv +
          (int64_t)DEVICE_BYTES_PER_SURFACE_VERTEX * o->surface_vertices +
          (int64_t)DEVICE_BYTES_PER_SURFACE_TRIANGLE * o->surface_triangles +
          (int64_t)DEVICE_BYTES_PER_SURFACE_EDGE * o->surface_edges + DEVICE_BYTES_CONSTANT;
      printf("  stats phase %d: %lld device bytes for %d tets and %d vertices (%.1f bytes per "
             "tet + vertex share; limit %lld)\n",
             phase, (long long)o->device_bytes, (int)nt, (int)nv,
             (double)o->device_bytes / (double)nt, (long long)limit);
      CHECK_MSG(t, o->device_bytes > 16 * (int64_t)(nt + nv) && o->device_bytes <= limit,
                "%lld device bytes (want more than %lld, at most %lld)", (long long)o->device_bytes,
                (long long)(16 * (int64_t)(nt + nv)), (long long)limit);
    }
    CHECK(t, c->device_bytes == 0);
    CHECK(t, o->device_name[0] != '\0' && strcmp(o->device_name, c->device_name) != 0);
    CHECK(t, twin_gap(&tw, ids, 2) <= API_PARITY);
  }
  /* The color sizes agree too. */
  int32_t sizes[2][256], colors[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    CHECK_STATUS(t, piola_world_get_color_sizes(tw.w[k], sizes[k], 256, &colors[k]), PIOLA_OK);
  }
  CHECK(t, colors[0] == colors[1] && colors[0] <= 256 &&
               memcmp(sizes[0], sizes[1], sizeof(int32_t) * (size_t)colors[0]) == 0);
  free(squashed);
  twin_close(&tw);
  piola_mesh_free(&creature);
}

/* A plastic tet adds its rest Dm^-1 (36 bytes), plastic strain (24) and index (4) on the device,
 * on top of the 68 bytes of an elastic tet. */
#define DEVICE_BYTES_PER_PLASTIC_TET 132

/* Device memory of a plastic body: within DEVICE_BYTES_PER_PLASTIC_TET per tet. */
void test_opencl_plastic_device_bytes(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_world_def def = piola_test_world_def(NULL, NULL);
  def.backend = PIOLA_BACKEND_OPENCL;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_tet_mesh creature;
  REQUIRE_OK(t, piola_mesh_make_creature(3.0f, &creature));
  piola_material plastic = piola_default_material();
  plastic.plastic_creep = 5.0f;
  CHECK_STATUS(t, piola_world_add_tet_body(w, &creature, &plastic, NULL, NULL), PIOLA_OK);
  CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
  const int64_t limit = DEVICE_BYTES_PER_PLASTIC_TET * (int64_t)st.tet_count +
                        DEVICE_BYTES_PER_VERTEX * (int64_t)st.vertex_count +
                        DEVICE_BYTES_PER_SURFACE_VERTEX * (int64_t)st.surface_vertices +
                        DEVICE_BYTES_PER_SURFACE_TRIANGLE * (int64_t)st.surface_triangles +
                        DEVICE_BYTES_PER_SURFACE_EDGE * (int64_t)st.surface_edges +
                        DEVICE_BYTES_CONSTANT;
  CHECK_MSG(t, st.device_bytes <= limit,
            "a plastic world of %d tets and %d vertices holds %lld device bytes, more than %lld",
            (int)st.tet_count, (int)st.vertex_count, (long long)st.device_bytes, (long long)limit);
  piola_mesh_free(&creature);
  piola_world_destroy(w);
}

/* Profile mode: device time per stage from profiling events (each > 0 for a stage that ran),
 * the same in the statistics, zeros without profiling; and per kernel, adding up to the
 * stages. */
void test_opencl_profile_stage_times(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh bar = api_bar();
  REQUIRE(t, bar.vertex_count > 0);
  piola_material plastic = piola_default_material();
  plastic.plastic_creep = 5.0f;
  const float up[3] = {0.0f, 1.0f, 0.0f}, at[3] = {-0.4f, 0.05f, -0.2f};
  for (int profile = 0; profile < 2; ++profile) {
    piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_OPENCL, NULL, NULL);
    def.profile = profile == 1;
    piola_world *w = NULL;
    REQUIRE_OK(t, piola_world_create(&def, &w));
    piola_body_id id;
    CHECK_STATUS(t, piola_world_add_plane(w, up, 0.0f, 0.5f, NULL), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(w, &bar, &plastic, at, &id), PIOLA_OK);
    double ms[PIOLA_STAGE_COUNT];
    for (int i = 0; i < 3; ++i) {
      CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
    }
    CHECK_STATUS(t, piola_world_get_stage_times(w, ms), PIOLA_OK);
    piola_stats st;
    CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
    double sum = 0.0;
    for (int s = 0; s < PIOLA_STAGE_COUNT; ++s) {
      sum += ms[s];
      CHECK_MSG(t, st.stage_ms[s] == ms[s], "stage %s: %g ms in the stats, %g ms otherwise",
                piola_stage_name((piola_stage)s), st.stage_ms[s], ms[s]);
      CHECK_MSG(t, ms[s] >= 0.0 && isfinite(ms[s]), "stage %s: %g ms",
                piola_stage_name((piola_stage)s), ms[s]);
    }
    /* The same events per kernel: every kernel of the programs, each named once; their times
     * add up to the stages' (summed in another order: equal within rounding). */
    piola_kernel_time kt[64];
    int32_t kernels = -1;
    CHECK_STATUS(t, piola_world_get_kernel_times(w, kt, 64, &kernels), PIOLA_OK);
    REQUIRE(t, kernels > 0 && kernels <= 64);
    double kernel_sum = 0.0;
    int32_t predicts = -1, named = 0;
    for (int32_t k = 0; k < kernels; ++k) {
      named += kt[k].name != NULL && kt[k].name[0] != '\0';
      for (int32_t j = 0; j < k; ++j) {
        CHECK_MSG(t, strcmp(kt[j].name, kt[k].name) != 0, "kernel %s listed twice", kt[k].name);
      }
      CHECK_MSG(t,
                kt[k].launches >= 0 && kt[k].ms >= 0.0 && (kt[k].launches > 0 || kt[k].ms == 0.0),
                "kernel %s: %d launches, %g ms", kt[k].name, (int)kt[k].launches, kt[k].ms);
      kernel_sum += kt[k].ms;
      if (strcmp(kt[k].name, "piola_predict") == 0) {
        predicts = kt[k].launches;
      }
    }
    CHECK(t, named == kernels);
    CHECK_MSG(t, fabs(kernel_sum - sum) <= 1e-9 * sum, "kernels %.9g ms, stages %.9g ms",
              kernel_sum, sum);
    CHECK_MSG(t, predicts == (profile ? def.substeps : 0), "piola_predict launched %d times",
              (int)predicts);
    int32_t only = -1;
    CHECK_STATUS(t, piola_world_get_kernel_times(w, NULL, 0, &only), PIOLA_OK);
    CHECK(t, only == kernels);
    if (profile == 0) {
      CHECK_MSG(t, sum == 0.0, "stage times without profiling: %g ms in all", sum);
      piola_world_destroy(w);
      continue;
    }
    printf("  profile: predict %.4f, solve_tets %.4f, collide %.4f, update_velocities %.4f, "
           "plasticity %.4f ms; step %.3f ms\n",
           ms[PIOLA_STAGE_PREDICT], ms[PIOLA_STAGE_SOLVE_TETS], ms[PIOLA_STAGE_COLLIDE],
           ms[PIOLA_STAGE_UPDATE_VELOCITIES], ms[PIOLA_STAGE_PLASTICITY], st.last_step_ms);
    const piola_stage ran[] = {PIOLA_STAGE_PREDICT, PIOLA_STAGE_SOLVE_TETS, PIOLA_STAGE_COLLIDE,
                               PIOLA_STAGE_UPDATE_VELOCITIES, PIOLA_STAGE_PLASTICITY};
    for (size_t i = 0; i < sizeof ran / sizeof ran[0]; ++i) {
      CHECK_MSG(t, ms[ran[i]] > 0.0, "stage %s: %g ms", piola_stage_name(ran[i]), ms[ran[i]]);
    }
    /* Device time of one step cannot exceed the step's wall-clock time by much (with profiling
     * the step waits for the device). */
    CHECK_MSG(t, sum <= 1.5 * st.last_step_ms + 1.0, "stages %.3f ms, step %.3f ms", sum,
              st.last_step_ms);
    piola_world_destroy(w);
  }
  piola_mesh_free(&bar);
}

/* The two OpenCL schedules run the same computation: one launch per color over all bodies, or
 * one work-group per body going through its colors. Bodies share no vertex, so positions and
 * velocities must agree bit for bit, also with a Jacobi tail, colliders and several bodies of
 * different meshes. (One tet per work-item in both: packets, test_opencl_packets_match, round
 * library functions in the last bit as their vector builds do.) A third run builds the kernels
 * with the support record always passed, as on GPUs (PIOLA_SUPPORT_ALWAYS), and must agree too,
 * so that the form GPUs run is checked on any device. */
void test_opencl_schedules_agree(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature, box;
  REQUIRE_OK(t, piola_mesh_make_creature(1.0f, &creature));
  const int32_t cells[3] = {4, 2, 2};
  const float size[3] = {0.8f, 0.4f, 0.4f};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &box));
  uint64_t hash[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_OPENCL, NULL, NULL);
    def.schedule = k == 0 ? PIOLA_SCHEDULE_STAGES : PIOLA_SCHEDULE_BODIES;
    def.simd_lanes = 1;
    def.max_colors = 12; /* a Jacobi tail too */
    def.substeps = 2;
    saved_env env;
    env_save(&env, "PIOLA_CL_BUILD_OPTIONS");
    if (k == 2) { /* the caller's options kept */
      char options[1100];
      snprintf(options, sizeof options, "%s -DPIOLA_SUPPORT_ALWAYS=1", env.value);
      setenv("PIOLA_CL_BUILD_OPTIONS", options, 1);
    }
    piola_world *w = NULL;
    const piola_status created = piola_world_create(&def, &w);
    env_restore(&env);
    REQUIRE_OK(t, created);
    piola_material m = piola_default_material();
    m.model = PIOLA_MODEL_NEOHOOKEAN;
    m.youngs_modulus = 5e5f;
    piola_body_id ids[3];
    const float at[3][3] = {{0.0f, 0.2f, 0.0f}, {1.5f, 0.4f, 0.0f}, {-1.5f, 0.1f, 0.5f}};
    CHECK_STATUS(t, piola_world_add_tet_body(w, &creature, &m, at[0], &ids[0]), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(w, &box, &m, at[1], &ids[1]), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(w, &creature, &m, at[2], &ids[2]), PIOLA_OK);
    const float up[3] = {0.0f, 1.0f, 0.0f};
    CHECK_STATUS(t, piola_world_add_plane(w, up, 0.0f, 0.6f, NULL), PIOLA_OK);
    piola_collider_def ball = piola_default_collider_def();
    ball.type = PIOLA_COLLIDER_SPHERE;
    ball.shape.sphere.center[0] = 1.7f;
    ball.shape.sphere.radius = 0.3f;
    CHECK_STATUS(t, piola_world_add_collider(w, &ball, NULL), PIOLA_OK);
    for (int s = 0; s < 60; ++s) {
      CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
    }
    piola_stats st;
    CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
    CHECK_MSG(t, st.jacobi_tets > 0, "no Jacobi tail (max_colors %d)", (int)def.max_colors);
    const uint64_t h = wt_state_hash(w, ids, 3);
    CHECK_MSG(t, h != 0, "a body's state could not be read");
    float *x = wt_get_positions(w, ids[0]);
    /* It moved: the creature fell onto the ground. */
    CHECK(t, x != NULL && x[1] < at[0][1] + 0.5f);
    free(x);
    hash[k] = h;
    piola_world_destroy(w);
  }
  CHECK_MSG(t, hash[0] == hash[1], "per-stage and per-body schedules differ: %016llx vs %016llx",
            (unsigned long long)hash[0], (unsigned long long)hash[1]);
  CHECK_MSG(t, hash[1] == hash[2], "the GPUs' kernel forms differ: %016llx vs %016llx",
            (unsigned long long)hash[1], (unsigned long long)hash[2]);
  piola_mesh_free(&creature);
  piola_mesh_free(&box);
}

/* One run of test_opencl_packets_match: `copies` times three bodies of three materials (their
 * tets share colors and packets), the box squashed to a fifth of its height so that its tets
 * take the SVD path, the last creature hanging from a pinned vertex, the ground supporting what
 * rests on it, a sphere in the way; 2 substeps; positions after `steps` steps. */
static void run_packet_scene(piola_test *t, piola_iteration_scheme scheme, int32_t lanes,
                             int copies, bool large_box, int steps, float *out, int32_t *n_out,
                             int32_t *lanes_out) {
  piola_tet_mesh creature, box;
  REQUIRE_OK(t, piola_mesh_make_creature(1.0f, &creature));
  /* The large box (18432 tets) is more than one work-group goes through quickly: the world's
   * tets then take a launch per color. */
  const int32_t cells[3] = {large_box ? 24 : 5, large_box ? 8 : 3, large_box ? 16 : 3};
  const float size[3] = {0.5f, 0.3f, 0.3f};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &box));
  piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_OPENCL, NULL, NULL);
  def.schedule = PIOLA_SCHEDULE_STAGES;
  def.iteration_scheme = scheme;
  def.simd_lanes = lanes;
  def.substeps = 2;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_material nh = piola_default_material(), stvk = piola_default_material(),
                 one = piola_default_material();
  nh.model = PIOLA_MODEL_NEOHOOKEAN;
  nh.youngs_modulus = 5e5f;
  stvk.youngs_modulus = 2e5f;
  one.model = PIOLA_MODEL_NEOHOOKEAN;
  one.split = PIOLA_SPLIT_NONE;
  one.poisson_ratio = 0.2f;
  /* material damping on the squashed box (split) and on the one-constraint creature */
  stvk.damping = 0.005f;
  one.damping = 0.002f;
  enum { MAX_COPIES = 64 };
  piola_body_id ids[3 * MAX_COPIES];
  REQUIRE(t, copies >= 1 && copies <= MAX_COPIES);
  for (int c = 0; c < copies; ++c) {
    const float z = 1.5f * (float)c;
    const float at[3][3] = {{0.0f, 0.3f, z}, {1.2f, 0.05f, z}, {-1.2f, 0.2f, z + 0.4f}};
    CHECK_STATUS(t, piola_world_add_tet_body(w, &creature, &nh, at[0], &ids[3 * c]), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(w, &box, &stvk, at[1], &ids[3 * c + 1]), PIOLA_OK);
    CHECK_STATUS(t, piola_world_add_tet_body(w, &creature, &one, at[2], &ids[3 * c + 2]), PIOLA_OK);
    /* The box squashed to a fifth of its height (every tet below the clamp stretch); the
     * second creature hangs from a pinned vertex. */
    int32_t nb = piola_body_get_vertex_count(w, ids[3 * c + 1]);
    float *xb = malloc(sizeof *xb * 3 * (size_t)nb);
    REQUIRE(t, xb != NULL);
    CHECK_STATUS(t, piola_body_get_positions(w, ids[3 * c + 1], xb, nb), PIOLA_OK);
    for (int32_t i = 0; i < nb; ++i) {
      xb[3 * i + 1] = 0.05f + 0.2f * (xb[3 * i + 1] - 0.05f);
    }
    CHECK_STATUS(t, piola_body_set_positions(w, ids[3 * c + 1], xb, nb), PIOLA_OK);
    free(xb);
    int32_t nc = piola_body_get_vertex_count(w, ids[3 * c + 2]);
    float *wc = malloc(sizeof *wc * (size_t)nc);
    REQUIRE(t, wc != NULL);
    CHECK_STATUS(t, piola_body_get_inverse_masses(w, ids[3 * c + 2], wc, nc), PIOLA_OK);
    wc[0] = 0.0f;
    CHECK_STATUS(t, piola_body_set_inverse_masses(w, ids[3 * c + 2], wc, nc), PIOLA_OK);
    free(wc);
  }
  const float up[3] = {0.0f, 1.0f, 0.0f};
  CHECK_STATUS(t, piola_world_add_plane(w, up, 0.0f, 0.6f, NULL), PIOLA_OK);
  piola_collider_def ball = piola_default_collider_def();
  ball.type = PIOLA_COLLIDER_SPHERE;
  ball.shape.sphere.center[0] = 1.2f;
  ball.shape.sphere.radius = 0.3f;
  CHECK_STATUS(t, piola_world_add_collider(w, &ball, NULL), PIOLA_OK);
  for (int s = 0; s < steps; ++s) {
    CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  }
  int32_t n = 0;
  for (int b = 0; b < 3 * copies; ++b) {
    int32_t nv = piola_body_get_vertex_count(w, ids[b]);
    CHECK_STATUS(t, piola_body_get_positions(w, ids[b], out + 3 * n, nv), PIOLA_OK);
    n += nv;
  }
  *n_out = n;
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(w, &st), PIOLA_OK);
  *lanes_out = st.simd_lanes;
  piola_world_destroy(w);
  piola_mesh_free(&creature);
  piola_mesh_free(&box);
}

/* The packet scene (run_packet_scene) in 4, 8 and 16 lanes against one lane: positions within
 * 1e-5 m of it after `steps` steps, each run deterministic; ref, x and again hold max_vertices
 * vertices. */
static void lanes_match(piola_test *t, piola_iteration_scheme scheme, int copies, bool large,
                        int steps, int32_t max_vertices, float *ref, float *x, float *again) {
  int32_t n = 0, m = 0, lanes_used = 0;
  run_packet_scene(t, scheme, 1, copies, large, steps, ref, &n, &lanes_used);
  REQUIRE(t, n > 0 && n <= max_vertices);
  CHECK(t, lanes_used == 1);
  float lowest = 1e9f;
  for (int32_t i = 0; i < n; ++i) {
    lowest = fminf(lowest, ref[3 * i + 1]);
  }
  CHECK_MSG(t, lowest > -0.02f && lowest < 0.05f, "bodies on the ground: lowest y %g",
            (double)lowest);
  const int32_t lanes[3] = {4, 8, 16};
  for (int k = 0; k < 3; ++k) {
    run_packet_scene(t, scheme, lanes[k], copies, large, steps, x, &m, &lanes_used);
    REQUIRE(t, m == n);
    CHECK(t, lanes_used == lanes[k]);
    double worst = 0.0;
    for (int32_t i = 0; i < 3 * n; ++i) {
      worst = fmax(worst, fabs((double)x[i] - (double)ref[i]));
    }
    printf("  %s, %d bodies%s, %d lanes: largest difference from one lane %.3g m\n",
           scheme == PIOLA_SCHEME_VBD ? "VBD" : "XPBD", 3 * copies, large ? " (a large box)" : "",
           (int)lanes[k], worst);
    CHECK_MSG(t, worst < 1e-5, "%d bodies, %d lanes: positions differ by %g m", 3 * copies,
              (int)lanes[k], worst);
    run_packet_scene(t, scheme, lanes[k], copies, large, steps, again, &m, &lanes_used);
    CHECK_MSG(t, memcmp(x, again, sizeof *x * 3 * (size_t)n) == 0,
              "%d bodies, %d lanes: not deterministic", 3 * copies, (int)lanes[k]);
  }
}

/* Packets (piola_packet.cl) project tets in SIMD lanes with the math of the one-tet kernel: 4,
 * 8 and 16 lanes follow the one-tet run through impacts, the SVD path, mixed materials in one
 * packet, a pinned vertex and supported vertices, to the rounding of library functions, and
 * each is deterministic. (With log1p evaluated lane by lane through the scalar function the
 * runs agree bit for bit; PoCL's vector log1p differs in the last bit, 6e-7 m here after 60
 * steps.) Three bodies, one of them large, take a launch per color (piola_solve_color_packets);
 * small bodies, three or enough for 4 per compute unit, a launch per iteration with a
 * work-group per body (piola_solve_body_packets). */
void test_opencl_packets_match(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  enum { STEPS = 60, MAX_VERTICES = 1 << 17 };
  float *ref = malloc(sizeof *ref * 3 * MAX_VERTICES), *x = malloc(sizeof *x * 3 * MAX_VERTICES),
        *again = malloc(sizeof *again * 3 * MAX_VERTICES);
  REQUIRE(t, ref != NULL && x != NULL && again != NULL);
  /* Bodies enough for the per-body launch on this device: 4 per compute unit. */
  int32_t units = 1, count = 0;
  piola_device_info devices[16];
  if (piola_list_devices(devices, 16, &count) == PIOLA_OK) {
    for (int32_t i = 0; i < count && i < 16; ++i) {
      units = devices[i].compute_units > units ? devices[i].compute_units : units;
    }
  }
  const int many = (4 * units + 2) / 3 < 64 ? (4 * units + 2) / 3 : 64;
  const int copies[3] = {1, 1, many};
  for (int c = 0; c < 3; ++c) {
    lanes_match(t, PIOLA_SCHEME_GAUSS_SEIDEL, copies[c], c == 0, STEPS, MAX_VERTICES, ref, x,
                again);
  }
  free(ref);
  free(x);
  free(again);
}

/* Under vertex block descent a CPU device evaluates the tets' parts of a color's blocks in SIMD
 * lanes (piola_vbd_tet_blocks) before the vertices sum them: 4, 8 and 16 lanes follow the run
 * that evaluates every tet in its vertex's work-item through the scene of
 * test_opencl_packets_match (the inversion path's secant blocks in the squashed box, three
 * materials whose tets meet in packets, a pinned vertex, supported vertices), to the rounding of
 * library functions, and each is deterministic. */
void test_opencl_vbd_packets_match(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  enum { STEPS = 60, MAX_VERTICES = 1 << 14 };
  float *ref = malloc(sizeof *ref * 3 * MAX_VERTICES), *x = malloc(sizeof *x * 3 * MAX_VERTICES),
        *again = malloc(sizeof *again * 3 * MAX_VERTICES);
  REQUIRE(t, ref != NULL && x != NULL && again != NULL);
  lanes_match(t, PIOLA_SCHEME_VBD, 1, false, STEPS, MAX_VERTICES, ref, x, again);
  free(ref);
  free(x);
  free(again);
}

/* ---- A world without bodies --------------------------------------------------------------------
 * A world with nothing in it, then with a collider only, steps (an engine makes its world before it
 * loads anything into it), and a body added later falls as in any world. */
static void empty_world(piola_test *t, piola_backend backend) {
  capture_log log;
  int misuse = 0;
  piola_world_def def = opencl_test_world_def(backend, &log, &misuse);
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  const float up[3] = {0.0f, 1.0f, 0.0f};
  CHECK_STATUS(t, piola_world_add_plane(w, up, 0.0f, 0.5f, NULL), PIOLA_OK);
  CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.step_count == 2 && st.body_count == 0 && st.vertex_count == 0);
  const int32_t cells[3] = {1, 1, 1};
  const float size[3] = {0.1f, 0.1f, 0.1f};
  piola_tet_mesh box;
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &box));
  const piola_material m = piola_default_material();
  piola_body_id id;
  CHECK_STATUS(t, piola_world_add_tet_body(w, &box, &m, (const float[3]){0.0f, 1.0f, 0.0f}, &id),
               PIOLA_OK);
  for (int i = 0; i < 20; ++i) {
    CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  }
  float x[3 * 8];
  CHECK_STATUS(t, piola_body_get_positions(w, id, x, box.vertex_count), PIOLA_OK);
  CHECK_MSG(t, x[1] < 0.99f, "the body did not fall (y = %.4f m)", (double)x[1]);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0 && misuse == 0);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

void test_empty_world_steps(piola_test *t) {
  empty_world(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_empty_world_steps(piola_test *t) {
  if (opencl_test_ready(t)) {
    empty_world(t, PIOLA_BACKEND_OPENCL);
  }
}
