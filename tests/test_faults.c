/* Device faults on the OpenCL backend (issue 12, item 3), through the test-only hook of
 * piola_internal.h (piola_faults): for each public call that reaches the device, the OpenCL
 * calls it makes are counted by kind, and then each of them in turn is made to fail (allocation,
 * build, kernel creation, kernel arguments, enqueue, read-back, and a device lost from that call
 * on). Every time:
 *  - the call fails with the status the error maps to (never PIOLA_OK);
 *  - either the world is unchanged (a snapshot equal before and after) and usable (a following
 *    step succeeds and leaves the same state as a world that never saw the fault), or the call
 *    answered PIOLA_ERROR_DEVICE_LOST and every later call does too; a world is lost only when
 *    the device is (the LOST kind) or when a step failed with the device state half advanced;
 *  - nothing leaks: the OpenCL objects the world created and released balance after destroy.
 * Also: world creation under each fault, and a scene larger than the device's memory (an
 * allocation failure, as PoCL answers for a buffer over CL_DEVICE_MAX_MEM_ALLOC_SIZE).
 */
#include "piola_internal.h"
#include "piola_test.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <stdlib.h>
#include <string.h>

#ifdef PIOLA_WITH_OPENCL
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#endif

/* The scene every call is tried on: two boxes (one carrying an attachment, the other a render
 * mesh), a ground plane, contacts on; stepped once (the device holds the live state) or not. */
typedef struct fx {
  piola_faults faults;
  capture_log log;
  int misuse;
  piola_world *w;
  piola_tet_mesh box;
  piola_body_id body[2];
  piola_collider_id plane;
  piola_attachment_id attachment;
  piola_render_mesh_id render;
  int32_t render_count;
} fx;

typedef struct fx_options {
  bool live;                     /* stepped once */
  piola_schedule schedule;       /* of the OpenCL step */
  bool profile;                  /* stage timing (events) */
  piola_iteration_scheme scheme; /* Gauss-Seidel unless set */
} fx_options;

static piola_world_def fx_def(fx *f, fx_options o) {
  piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_OPENCL, &f->log, &f->misuse);
  def.iterations = 2;
  def.substeps = 1;
  def.schedule = o.schedule;
  def.profile = o.profile;
  def.iteration_scheme = o.scheme;
  def.contacts = true;
  return def;
}

/* Builds the scene (no fault armed); false (with a failed check) when it cannot. */
static bool fx_setup(piola_test *t, fx *f, fx_options o) {
  memset(f, 0, sizeof *f);
  piola_world_def def = fx_def(f, o);
  piola_status s = piola_world_create_with_faults(&def, &f->faults, &f->w);
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s != PIOLA_OK) {
    return false;
  }
  f->box = wt_box(2, 1, 1, 0.2f, 0.1f, 0.1f);
  const piola_material m = piola_default_material();
  const float at[2][3] = {{0.0f, 0.05f, 0.0f}, {0.05f, 0.17f, 0.02f}};
  const float normal[3] = {0.0f, 1.0f, 0.0f};
  const float target[3] = {0.0f, 0.1f, 0.0f};
  s = piola_world_add_tet_body(f->w, &f->box, &m, at[0], &f->body[0]);
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(f->w, &f->box, &m, at[1], &f->body[1]);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_plane(f->w, normal, 0.0f, 0.5f, &f->plane);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_attachment(f->w, f->body[0], 0, target, 0.0f, &f->attachment);
  }
  if (s == PIOLA_OK) {
    f->render_count = f->box.vertex_count;
    float *xyz = wt_get_positions(f->w, f->body[1]);
    s = xyz != NULL
            ? piola_body_attach_render_mesh(f->w, f->body[1], xyz, f->render_count, &f->render)
            : PIOLA_ERROR_OUT_OF_MEMORY;
    free(xyz);
  }
  if (s == PIOLA_OK && o.live) {
    s = piola_world_step(f->w);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  return s == PIOLA_OK;
}

/* Destroys the world and checks that its OpenCL objects balance. */
static void fx_teardown(piola_test *t, fx *f, const char *what) {
  piola_world_destroy(f->w);
  f->w = NULL;
  piola_mesh_free(&f->box);
  CHECK_MSG(t, f->faults.created == f->faults.released && f->faults.created > 0,
            "%s: %lld OpenCL objects created, %lld released", what, (long long)f->faults.created,
            (long long)f->faults.released);
}

static wt_snapshot fx_snapshot(const fx *f) {
  return wt_snapshot_take(f->w, f->body, 2);
}

/* ---- The calls under test ------------------------------------------------------------------ */

typedef piola_status (*fx_call)(fx *f);

static piola_status call_step(fx *f) {
  return piola_world_step(f->w);
}
static piola_status call_finish(fx *f) {
  return piola_world_finish(f->w);
}
static piola_status call_get_stats(fx *f) {
  piola_stats st;
  return piola_world_get_stats(f->w, &st);
}
static piola_status read_body(fx *f, int which) {
  const int32_t n = f->box.vertex_count;
  float *buf = malloc(sizeof *buf * 3 * (size_t)n);
  if (buf == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = which == 0   ? piola_body_get_positions(f->w, f->body[1], buf, n)
                   : which == 1 ? piola_body_get_velocities(f->w, f->body[1], buf, n)
                                : piola_body_get_inverse_masses(f->w, f->body[1], buf, n);
  free(buf);
  return s;
}
static piola_status call_get_positions(fx *f) {
  return read_body(f, 0);
}
static piola_status call_get_velocities(fx *f) {
  return read_body(f, 1);
}
static piola_status call_get_inverse_masses(fx *f) {
  return read_body(f, 2);
}
static piola_status write_body(fx *f, int which) {
  const int32_t n = f->box.vertex_count;
  float *buf = malloc(sizeof *buf * 3 * (size_t)n);
  if (buf == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < 3 * n; ++i) {
    buf[i] = which == 2 ? 0.5f : which == 0 ? f->box.positions[i] + 0.3f : 0.1f * (float)(i % 3);
  }
  piola_status s = which == 0   ? piola_body_set_positions(f->w, f->body[1], buf, n)
                   : which == 1 ? piola_body_set_velocities(f->w, f->body[1], buf, n)
                   : which == 2 ? piola_body_set_inverse_masses(f->w, f->body[1], buf, n)
                                : piola_body_set_forces(f->w, f->body[1], buf, n);
  free(buf);
  return s;
}
static piola_status call_set_positions(fx *f) {
  return write_body(f, 0);
}
static piola_status call_set_velocities(fx *f) {
  return write_body(f, 1);
}
static piola_status call_set_inverse_masses(fx *f) {
  return write_body(f, 2);
}
static piola_status call_set_forces(fx *f) {
  return write_body(f, 3);
}
static piola_status call_add_body(fx *f) {
  const piola_material m = piola_default_material();
  const float at[3] = {0.5f, 0.3f, 0.0f};
  return piola_world_add_tet_body(f->w, &f->box, &m, at, NULL);
}
static piola_status call_remove_body(fx *f) {
  return piola_world_remove_body(f->w, f->body[0]);
}
static piola_status call_collision_filter(fx *f) {
  return piola_body_set_collision_filter(f->w, f->body[0], 2u, 1u);
}
static piola_status call_self_collision(fx *f) {
  return piola_body_set_self_collision(f->w, f->body[0], true);
}
static piola_status call_attach_render_mesh(fx *f) {
  float *xyz = malloc(sizeof *xyz * 3 * (size_t)f->box.vertex_count);
  if (xyz == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < 3 * f->box.vertex_count; ++i) {
    xyz[i] = f->box.positions[i];
  }
  piola_render_mesh_id id;
  piola_status s = piola_body_attach_render_mesh(f->w, f->body[0], xyz, f->box.vertex_count, &id);
  free(xyz);
  return s;
}
static piola_status read_render(fx *f, bool normals) {
  float *xyz = malloc(sizeof *xyz * 3 * (size_t)f->render_count);
  if (xyz == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = normals ? piola_render_mesh_get_normals(f->w, f->render, xyz, f->render_count)
                           : piola_render_mesh_get_positions(f->w, f->render, xyz, f->render_count);
  free(xyz);
  return s;
}
static piola_status call_render_positions(fx *f) {
  return read_render(f, false);
}
static piola_status call_render_normals(fx *f) {
  return read_render(f, true);
}
/* Calls that make no OpenCL call of their own (their changes reach the device at the next
 * step): checked to make none, so that a change adding one shows up here. */
static piola_status call_remove_render_mesh(fx *f) {
  return piola_world_remove_render_mesh(f->w, f->render);
}
static piola_status call_add_attachment(fx *f) {
  const float target[3] = {0.1f, 0.2f, 0.0f};
  piola_attachment_id id;
  return piola_world_add_attachment(f->w, f->body[1], 1, target, 1e-4f, &id);
}
static piola_status call_set_target(fx *f) {
  const float target[3] = {0.0f, 0.3f, 0.0f};
  return piola_attachment_set_target(f->w, f->attachment, target);
}
static piola_status call_remove_attachment(fx *f) {
  return piola_world_remove_attachment(f->w, f->attachment);
}
static piola_status call_add_collider(fx *f) {
  const float normal[3] = {1.0f, 0.0f, 0.0f};
  return piola_world_add_plane(f->w, normal, -1.0f, 0.0f, NULL);
}
static piola_status call_set_collider_pose(fx *f) {
  const float p[3] = {0.0f, -0.01f, 0.0f}, q[4] = {0.0f, 0.0f, 0.0f, 1.0f},
              v[3] = {0.0f, 0.1f, 0.0f}, a[3] = {0.0f, 0.0f, 0.0f};
  return piola_world_set_collider_pose(f->w, f->plane, p, q, v, a);
}
static piola_status call_remove_collider(fx *f) {
  return piola_world_remove_collider(f->w, f->plane);
}

/* ---- The sweep ----------------------------------------------------------------------------- */

static const char *const kind_names[PIOLA_FAULT_KIND_COUNT] = {
    "none", "context", "alloc", "build", "kernel", "arg", "enqueue", "read", "lost"};

#ifdef PIOLA_WITH_OPENCL
/* The status a fault of `kind` (its usual error code) must give where the world survives. */
static piola_status expected_status(piola_fault_kind kind) {
  switch (kind) {
  case PIOLA_FAULT_ARG:
    return PIOLA_ERROR_DEVICE; /* CL_INVALID_ARG_VALUE */
  case PIOLA_FAULT_BUILD:
    return PIOLA_ERROR_BUILD_FAILED;
  case PIOLA_FAULT_LOST:
    return PIOLA_ERROR_DEVICE_LOST;
  default:
    return PIOLA_ERROR_OUT_OF_DEVICE_MEMORY; /* allocation failure, out of resources */
  }
}
#endif

/* Every public call a lost world answers: PIOLA_ERROR_DEVICE_LOST. */
static void check_lost(piola_test *t, fx *f, const char *what) {
  piola_stats st;
  float xyz[3] = {0.0f, 0.0f, 0.0f};
  const float g[3] = {0.0f, -9.81f, 0.0f};
  const piola_material m = piola_default_material();
  piola_status s[8] = {piola_world_step(f->w),
                       piola_world_get_stats(f->w, &st),
                       call_get_positions(f),
                       call_set_velocities(f),
                       piola_world_add_tet_body(f->w, &f->box, &m, NULL, NULL),
                       piola_world_set_gravity(f->w, g),
                       piola_render_mesh_get_positions(f->w, f->render, xyz, 1),
                       piola_world_finish(f->w)};
  for (int i = 0; i < 8; ++i) {
    CHECK_MSG(t, s[i] == PIOLA_ERROR_DEVICE_LOST, "%s: lost world, call %d answered '%s'", what, i,
              piola_status_string(s[i]));
  }
}

/* Tries `call` on the scene with every fault it can meet: each kind at each of the calls of that
 * kind it makes (counted first, without faults). `reference` is the state of a scene that did
 * not see the call, after one more step. Returns the number of faults injected. */
static int sweep(piola_test *t, const char *name, fx_call call, fx_options o,
                 const wt_snapshot *reference) {
  fx f;
  if (!fx_setup(t, &f, o)) {
    fx_teardown(t, &f, name);
    return 0;
  }
  piola_faults_arm(&f.faults, PIOLA_FAULT_NONE, 0, 0);
  piola_status s = call(&f);
  CHECK_MSG(t, s == PIOLA_OK, "%s without faults: '%s'", name, piola_status_string(s));
  int32_t counts[PIOLA_FAULT_KIND_COUNT];
  memcpy(counts, f.faults.calls, sizeof counts);
  counts[PIOLA_FAULT_LOST] = f.faults.calls[PIOLA_FAULT_NONE]; /* lost at any call */
  fx_teardown(t, &f, name);
  int injected = 0;
  for (int k = PIOLA_FAULT_CONTEXT; k < PIOLA_FAULT_KIND_COUNT; ++k) {
    for (int32_t n = 1; n <= counts[k]; ++n) {
      char what[160];
      snprintf(what, sizeof what, "%s, %s fault at call %d of %d", name, kind_names[k], (int)n,
               (int)counts[k]);
      if (!fx_setup(t, &f, o)) {
        fx_teardown(t, &f, what);
        return injected;
      }
      const wt_snapshot before = fx_snapshot(&f);
      piola_faults_arm(&f.faults, (piola_fault_kind)k, n, 0);
      s = call(&f);
      const int32_t hit = f.faults.injected;
      piola_faults_arm(&f.faults, PIOLA_FAULT_NONE, 0, 0);
      injected += hit > 0;
      CHECK_MSG(t, hit >= 1, "%s: the fault was not reached", what);
      CHECK_MSG(t, s != PIOLA_OK, "%s: the call answered PIOLA_OK", what);
      if (s == PIOLA_ERROR_DEVICE_LOST) {
        /* Lost: only when the device is, or when a step failed with the device state half
         * advanced (it was live before the step). */
        CHECK_MSG(t, k == PIOLA_FAULT_LOST || (call == call_step && o.live),
                  "%s: the world was lost", what);
        check_lost(t, &f, what);
      } else {
#ifdef PIOLA_WITH_OPENCL
        CHECK_MSG(t, s == expected_status((piola_fault_kind)k), "%s: '%s', expected '%s'", what,
                  piola_status_string(s),
                  piola_status_string(expected_status((piola_fault_kind)k)));
#endif
        CHECK_MSG(t, k != PIOLA_FAULT_LOST, "%s: a lost device answered '%s'", what,
                  piola_status_string(s));
        const wt_snapshot after = fx_snapshot(&f);
        CHECK_MSG(t, wt_snapshot_equal(&before, &after), "%s: the failed call changed the world",
                  what);
        s = piola_world_step(f.w);
        CHECK_MSG(t, s == PIOLA_OK, "%s: the next step answered '%s'", what,
                  piola_status_string(s));
        const wt_snapshot next = fx_snapshot(&f);
        CHECK_MSG(t, next.host_hash == reference->host_hash && next.api_hash == reference->api_hash,
                  "%s: the next step differs from a world without the fault", what);
      }
      fx_teardown(t, &f, what);
    }
  }
  return injected;
}

/* The state of the scene after one more step (the reference of sweep()). */
static bool reference_of(piola_test *t, fx_options o, wt_snapshot *out) {
  fx f;
  bool ok = fx_setup(t, &f, o);
  if (ok) {
    CHECK_STATUS(t, piola_world_step(f.w), PIOLA_OK);
    *out = fx_snapshot(&f);
  }
  fx_teardown(t, &f, "reference");
  return ok;
}

typedef struct fx_case {
  const char *name;
  fx_call call;
  bool device; /* makes OpenCL calls (else: checked to make none) */
} fx_case;

static void sweep_cases(piola_test *t, const fx_case *cases, int count, fx_options o) {
  wt_snapshot reference;
  if (!reference_of(t, o, &reference)) {
    return;
  }
  for (int i = 0; i < count; ++i) {
    int injected = sweep(t, cases[i].name, cases[i].call, o, &reference);
    printf("  %-28s %s: %d faults injected\n", cases[i].name, o.live ? "live" : "fresh", injected);
    CHECK_MSG(t, cases[i].device ? injected > 0 : injected == 0, "%s: %d faults injected",
              cases[i].name, injected);
  }
}

/* ---- Tests --------------------------------------------------------------------------------- */

/* Fresh: the step uploads the state (failures leave the host's state; nothing is lost). Live:
 * a failure after the first launch leaves the device half advanced (the world is lost). Both
 * schedules, with and without stage timing (events). */
static void step_sweeps(piola_test *t, bool live) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const fx_case step[] = {{"piola_world_step", call_step, true}};
  const fx_options options[] = {{live, PIOLA_SCHEDULE_STAGES, !live, PIOLA_SCHEME_GAUSS_SEIDEL},
                                {live, PIOLA_SCHEDULE_BODIES, live, PIOLA_SCHEME_GAUSS_SEIDEL}};
  for (int i = 0; i < 2; ++i) {
    sweep_cases(t, step, 1, options[i]);
  }
}

void test_opencl_faults_step_fresh(piola_test *t) {
  step_sweeps(t, false);
}

void test_opencl_faults_step_live(piola_test *t) {
  step_sweeps(t, true);
}

/* The multigrid scheme, whose SOLVE_GLOBAL reads the vertices back and writes them again every
 * iteration (opencl_newton.c): fresh (with stage timing) and live. */
void test_opencl_faults_step_multigrid(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const fx_case step[] = {{"piola_world_step", call_step, true}};
  const fx_options options[] = {{false, PIOLA_SCHEDULE_AUTO, true, PIOLA_SCHEME_MULTIGRID},
                                {true, PIOLA_SCHEDULE_AUTO, false, PIOLA_SCHEME_MULTIGRID}};
  for (int i = 0; i < 2; ++i) {
    sweep_cases(t, step, 1, options[i]);
  }
}

void test_opencl_faults_bodies(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const fx_case cases[] = {{"piola_world_finish", call_finish, true},
                           {"piola_world_get_stats", call_get_stats, true},
                           {"piola_body_get_positions", call_get_positions, true},
                           {"piola_body_get_velocities", call_get_velocities, true},
                           {"piola_body_get_inverse_masses", call_get_inverse_masses, false},
                           {"piola_body_set_positions", call_set_positions, true},
                           {"piola_body_set_velocities", call_set_velocities, true},
                           {"piola_body_set_inverse_masses", call_set_inverse_masses, true},
                           {"piola_body_set_forces", call_set_forces, true}};
  sweep_cases(t, cases, (int)(sizeof cases / sizeof cases[0]),
              (fx_options){true, PIOLA_SCHEDULE_AUTO, false, PIOLA_SCHEME_GAUSS_SEIDEL});
}

void test_opencl_faults_topology(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const fx_case cases[] = {{"piola_world_add_tet_body", call_add_body, true},
                           {"piola_world_remove_body", call_remove_body, true},
                           {"piola_body_set_collision_filter", call_collision_filter, true},
                           {"piola_body_set_self_collision", call_self_collision, true},
                           {"piola_world_add_plane", call_add_collider, false},
                           {"piola_world_set_collider_pose", call_set_collider_pose, false},
                           {"piola_world_remove_collider", call_remove_collider, false},
                           {"piola_world_add_attachment", call_add_attachment, false},
                           {"piola_attachment_set_target", call_set_target, false},
                           {"piola_world_remove_attachment", call_remove_attachment, false}};
  sweep_cases(t, cases, (int)(sizeof cases / sizeof cases[0]),
              (fx_options){true, PIOLA_SCHEDULE_AUTO, false, PIOLA_SCHEME_GAUSS_SEIDEL});
}

void test_opencl_faults_render(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const fx_case cases[] = {{"piola_body_attach_render_mesh", call_attach_render_mesh, true},
                           {"piola_render_mesh_get_positions", call_render_positions, true},
                           {"piola_render_mesh_get_normals", call_render_normals, true},
                           {"piola_world_remove_render_mesh", call_remove_render_mesh, false}};
  sweep_cases(t, cases, (int)(sizeof cases / sizeof cases[0]),
              (fx_options){true, PIOLA_SCHEDULE_AUTO, false, PIOLA_SCHEME_GAUSS_SEIDEL});
}

/* World creation under every fault it can meet: the documented status, no world, no leak. */
void test_opencl_faults_create(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  fx f;
  memset(&f, 0, sizeof f);
  const fx_options o = {false, PIOLA_SCHEDULE_AUTO, true, PIOLA_SCHEME_GAUSS_SEIDEL};
  piola_world_def def = fx_def(&f, o);
  def.simd_lanes = 8; /* the packet program too, on any device */
  piola_world *w = NULL;
  piola_faults_arm(&f.faults, PIOLA_FAULT_NONE, 0, 0);
  REQUIRE_OK(t, piola_world_create_with_faults(&def, &f.faults, &w));
  int32_t counts[PIOLA_FAULT_KIND_COUNT];
  memcpy(counts, f.faults.calls, sizeof counts);
  counts[PIOLA_FAULT_LOST] = f.faults.calls[PIOLA_FAULT_NONE];
  piola_world_destroy(w);
  CHECK(t, counts[PIOLA_FAULT_CONTEXT] == 2 && counts[PIOLA_FAULT_BUILD] == 4 &&
               counts[PIOLA_FAULT_KERNEL] > 10 && counts[PIOLA_FAULT_ALLOC] == 0);
  CHECK(t, f.faults.created == f.faults.released);
  for (int k = PIOLA_FAULT_CONTEXT; k < PIOLA_FAULT_KIND_COUNT; ++k) {
    for (int32_t n = 1; n <= counts[k]; ++n) {
      memset(&f.faults, 0, sizeof f.faults);
      def = fx_def(&f, o);
      def.simd_lanes = 8;
      piola_faults_arm(&f.faults, (piola_fault_kind)k, n, 0);
      w = (piola_world *)&def; /* not NULL: a failed create clears it */
      piola_status s = piola_world_create_with_faults(&def, &f.faults, &w);
      /* The build kind fails clCreateProgramWithSource (calls 1 and 3, the main and the packet
       * program: a device error) or clBuildProgram (calls 2 and 4: a build failure, its log to
       * the logger). */
      piola_status expected = k == PIOLA_FAULT_CONTEXT ? PIOLA_ERROR_OUT_OF_DEVICE_MEMORY
                              : k == PIOLA_FAULT_BUILD
                                  ? (n % 2 == 1 ? PIOLA_ERROR_DEVICE : PIOLA_ERROR_BUILD_FAILED)
                              : k == PIOLA_FAULT_KERNEL ? PIOLA_ERROR_OUT_OF_DEVICE_MEMORY
                                                        : PIOLA_ERROR_DEVICE_LOST;
      CHECK_MSG(t, s == expected && w == NULL, "create, %s fault at call %d: '%s', expected '%s'",
                kind_names[k], (int)n, piola_status_string(s), piola_status_string(expected));
      CHECK_MSG(t, f.faults.injected >= 1 && f.log.count[PIOLA_LOG_ERROR] >= 1,
                "create, %s fault at call %d: not reached or not logged", kind_names[k], (int)n);
      CHECK_MSG(t, f.faults.created == f.faults.released,
                "create, %s fault at call %d: %lld objects created, %lld released", kind_names[k],
                (int)n, (long long)f.faults.created, (long long)f.faults.released);
      if (s == PIOLA_OK) {
        piola_world_destroy(w);
      }
    }
  }
}

/* A scene larger than the device's memory: adding it works (host only), the step that uploads
 * it answers PIOLA_ERROR_OUT_OF_DEVICE_MEMORY and leaves the world as it was (the big body
 * included, on the host), again at every try; removing the big body brings back a world that
 * steps exactly as one that never had it. The failure is the answer of clCreateBuffer for a
 * buffer over CL_DEVICE_MAX_MEM_ALLOC_SIZE (CL_INVALID_BUFFER_SIZE) or for memory the device
 * lacks (CL_MEM_OBJECT_ALLOCATION_FAILURE); made for real it would need a host as large as the
 * device limit (8 GiB on this machine's PoCL), so the hook gives it. */
void test_opencl_faults_out_of_device_memory(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
#ifdef PIOLA_WITH_OPENCL
  const fx_options o = {true, PIOLA_SCHEDULE_AUTO, false, PIOLA_SCHEME_GAUSS_SEIDEL};
  piola_tet_mesh big = wt_box(12, 6, 6, 1.2f, 0.6f, 0.6f);
  const piola_material m = piola_default_material();
  const float at[3] = {2.0f, 1.0f, 0.0f};
  piola_body_id id;
  /* The reference: the same calls without the fault (the big body added and removed, which
   * brings the state back to the host, then a step). */
  wt_snapshot reference;
  fx f;
  if (!fx_setup(t, &f, o)) {
    fx_teardown(t, &f, "reference");
    piola_mesh_free(&big);
    return;
  }
  CHECK_STATUS(t, piola_world_add_tet_body(f.w, &big, &m, at, &id), PIOLA_OK);
  CHECK_STATUS(t, piola_world_remove_body(f.w, id), PIOLA_OK);
  CHECK_STATUS(t, piola_world_step(f.w), PIOLA_OK);
  reference = fx_snapshot(&f);
  fx_teardown(t, &f, "reference");
  const cl_int errors[2] = {CL_INVALID_BUFFER_SIZE, CL_MEM_OBJECT_ALLOCATION_FAILURE};
  for (int e = 0; e < 2; ++e) {
    if (!fx_setup(t, &f, o)) {
      fx_teardown(t, &f, "setup");
      break;
    }
    REQUIRE_OK(t, piola_world_add_tet_body(f.w, &big, &m, at, &id));
    const piola_body_id bodies[3] = {f.body[0], f.body[1], id};
    const wt_snapshot before = wt_snapshot_take(f.w, bodies, 3);
    for (int attempt = 0; attempt < 2; ++attempt) {
      /* The first buffer the upload makes for the larger scene fails, and then every one. */
      piola_faults_arm(&f.faults, PIOLA_FAULT_ALLOC, 1 + attempt, errors[e]);
      CHECK_STATUS(t, piola_world_step(f.w), PIOLA_ERROR_OUT_OF_DEVICE_MEMORY);
      CHECK(t, f.faults.injected == 1);
      piola_faults_arm(&f.faults, PIOLA_FAULT_NONE, 0, 0);
      const wt_snapshot after = wt_snapshot_take(f.w, bodies, 3);
      CHECK(t, wt_snapshot_equal(&before, &after));
      CHECK(t, strstr(f.log.text, e == 0 ? "CL_INVALID_BUFFER_SIZE"
                                         : "CL_MEM_OBJECT_ALLOCATION_FAILURE") != NULL);
    }
    REQUIRE_OK(t, piola_world_remove_body(f.w, id));
    CHECK_STATUS(t, piola_world_step(f.w), PIOLA_OK);
    const wt_snapshot next = fx_snapshot(&f);
    CHECK(t, next.api_hash == reference.api_hash && next.host_hash == reference.host_hash);
    fx_teardown(t, &f, "out of device memory");
  }
  piola_mesh_free(&big);
  /* The device's limit, for the record. */
  piola_device_info info[8];
  int32_t n = 0;
  if (piola_list_devices(info, 8, &n) == PIOLA_OK && n > 0) {
    printf("  device memory: %lld bytes (%s)\n", (long long)info[0].global_memory_bytes,
           info[0].name);
  }
#endif
}
