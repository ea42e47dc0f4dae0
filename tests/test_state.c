/* Tests of the saved state (piola_world_get_state_size, _save_state, _load_state; state.c): a
 * world that loads a state steps on bitwise as the world it was saved from did, on the CPU
 * reference and on OpenCL; a state of the CPU reference loaded into an OpenCL world steps as
 * the same state rounded to floats; bad buffers are refused with a status and a logged reason,
 * and change nothing.
 *
 * The scene has what a step carries to the next: two boxes on a plane, the lower one plastic,
 * the upper one falling onto it (contacts between bodies that persist from step to step), a
 * sphere moving and turning into the lower box, an attachment pulling the upper box, external
 * forces on it. States are compared as saved bytes (positions and velocities in double).
 */
#include "piola_internal.h" /* the state layout (state.h), the world's contact lists */
#include "piola_test.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- The scene ---------------------------------------------------------------------------- */

typedef struct state_scene {
  piola_world *w;
  piola_body_id body[2];
  piola_collider_id sphere;
  piola_attachment_id grab;
} state_scene;

/* Builds the scene on `backend`, logging into *log; the misuse reports counted in *misuse. */
static piola_status state_scene_make(piola_backend backend, capture_log *log, int *misuse,
                                     state_scene *out) {
  memset(out, 0, sizeof *out);
  piola_world_def def = opencl_test_world_def(backend, log, misuse);
  def.substeps = 2;
  def.iterations = 2; /* few: a contact is left deeper than the thickness, and persists */
  def.contacts = true;
  def.contact_thickness = 0.001f;
  piola_status s = piola_world_create(&def, &out->w);
  if (s != PIOLA_OK) {
    return s;
  }
  const float up[3] = {0.0f, 1.0f, 0.0f};
  s = piola_world_add_plane(out->w, up, 0.0f, 0.5f, NULL);
  piola_tet_mesh lower = wt_box(3, 2, 3, 0.3f, 0.2f, 0.3f);
  piola_tet_mesh upper = wt_box(2, 2, 2, 0.15f, 0.15f, 0.15f);
  piola_material plastic = wt_material(PIOLA_MODEL_STVK, PIOLA_SOLVER_XPBD, 2e4f);
  plastic.plastic_yield = 0.02f;
  plastic.plastic_creep = 10.0f;
  plastic.plastic_max = 0.3f;
  piola_material heavy = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1e5f);
  heavy.density = 8000.0f;
  const float at_lower[3] = {0.0f, 0.001f, 0.0f}, at_upper[3] = {0.08f, 0.22f, 0.07f};
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(out->w, &lower, &plastic, at_lower, &out->body[0]);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(out->w, &upper, &heavy, at_upper, &out->body[1]);
  }
  piola_collider_def sphere = piola_default_collider_def();
  sphere.type = PIOLA_COLLIDER_SPHERE;
  sphere.shape.sphere.radius = 0.08f;
  if (s == PIOLA_OK) {
    s = piola_world_add_collider(out->w, &sphere, &out->sphere);
  }
  const float position[3] = {0.40f, 0.08f, 0.15f}, rotation[4] = {0.0f, 0.0f, 0.0f, 1.0f};
  const float velocity[3] = {-0.5f, 0.0f, 0.0f}, spin[3] = {0.0f, 2.0f, 0.0f};
  if (s == PIOLA_OK) {
    s = piola_world_set_collider_pose(out->w, out->sphere, position, rotation, velocity, spin);
  }
  const float target[3] = {0.0f, 0.30f, 0.07f};
  if (s == PIOLA_OK) {
    s = piola_world_add_attachment(out->w, out->body[1], 0, target, 0.05f, &out->grab);
  }
  if (s == PIOLA_OK) {
    const int32_t n = upper.vertex_count;
    float *f = calloc(3 * (size_t)n, sizeof *f);
    for (int32_t i = 0; f != NULL && i < n; ++i) {
      f[3 * (size_t)i] = 0.02f;
    }
    s = f != NULL ? piola_body_set_forces(out->w, out->body[1], f, n) : PIOLA_ERROR_OUT_OF_MEMORY;
    for (int32_t i = 0; f != NULL && i < n; ++i) { /* thrown down onto the lower box */
      f[3 * (size_t)i] = 0.0f;
      f[3 * (size_t)i + 1] = -3.0f;
    }
    if (s == PIOLA_OK) {
      s = f != NULL ? piola_body_set_velocities(out->w, out->body[1], f, n)
                    : PIOLA_ERROR_OUT_OF_MEMORY;
    }
    free(f);
  }
  piola_mesh_free(&lower);
  piola_mesh_free(&upper);
  if (s != PIOLA_OK) {
    piola_world_destroy(out->w);
    out->w = NULL;
  }
  return s;
}

static piola_status steps(piola_world *w, int32_t n) {
  piola_status s = PIOLA_OK;
  for (int32_t i = 0; i < n && s == PIOLA_OK; ++i) {
    s = piola_world_step(w);
  }
  return s;
}

/* The world's state in a new buffer (free() it), its size in *bytes; NULL on failure. */
static unsigned char *save(piola_test *t, piola_world *w, size_t *bytes) {
  *bytes = 0;
  size_t n = 0;
  piola_status s = piola_world_get_state_size(w, &n);
  CHECK_STATUS(t, s, PIOLA_OK);
  unsigned char *b = s == PIOLA_OK ? malloc(n) : NULL;
  if (b == NULL) {
    return NULL;
  }
  s = piola_world_save_state(w, b, n);
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s != PIOLA_OK) {
    free(b);
    return NULL;
  }
  *bytes = n;
  return b;
}

static bool same_state(const unsigned char *a, size_t na, const unsigned char *b, size_t nb) {
  return a != NULL && b != NULL && na == nb && memcmp(a, b, na) == 0;
}

/* Checks that w saves the na bytes of sa (msg: what it means where it does not). */
static void check_saves(piola_test *t, piola_world *w, const unsigned char *sa, size_t na,
                        const char *msg) {
  size_t nb = 0;
  unsigned char *sb = save(t, w, &nb);
  CHECK_MSG(t, same_state(sa, na, sb, nb), "%s", msg);
  free(sb);
}

static int32_t get_i32(const unsigned char *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
}

static void put_i32(unsigned char *p, int32_t v) {
  const uint32_t u = (uint32_t)v;
  for (int k = 0; k < 4; ++k) {
    p[k] = (unsigned char)(u >> (8 * k));
  }
}

static double get_f64(const unsigned char *p) {
  uint64_t u = 0;
  for (int k = 0; k < 8; ++k) {
    u |= (uint64_t)p[k] << (8 * k);
  }
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

static void put_f64(unsigned char *p, double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  for (int k = 0; k < 8; ++k) {
    p[k] = (unsigned char)(u >> (8 * k));
  }
}

/* Where the sections of a state start (state.h's record sizes, the header's counts). */
typedef struct state_sections {
  size_t vertices, plastic, contacts, colliders, attachments;
  int32_t vertex_count, plastic_count, surface_vertices;
} state_sections;

static state_sections sections_of(const unsigned char *s) {
  state_sections l;
  l.vertex_count = get_i32(s + PIOLA_STATE_OFFSET_VERTICES);
  l.plastic_count = get_i32(s + PIOLA_STATE_OFFSET_PLASTIC_TETS);
  l.surface_vertices = get_i32(s + PIOLA_STATE_OFFSET_SURFACE_VERTICES);
  l.vertices = PIOLA_STATE_HEADER_BYTES;
  l.plastic = l.vertices + PIOLA_STATE_VERTEX_BYTES * (size_t)l.vertex_count;
  l.contacts = l.plastic + PIOLA_STATE_PLASTIC_BYTES * (size_t)l.plastic_count;
  l.colliders = l.contacts + PIOLA_STATE_CONTACT_BYTES * (size_t)l.surface_vertices;
  l.attachments =
      l.colliders + PIOLA_STATE_COLLIDER_BYTES * (size_t)get_i32(s + PIOLA_STATE_OFFSET_COLLIDERS);
  return l;
}

/* The number of contacts the state lists, and the largest plastic strain entry. */
static int32_t state_contacts(const unsigned char *s) {
  const state_sections l = sections_of(s);
  int32_t n = 0;
  for (int32_t sv = 0; sv < l.surface_vertices; ++sv) {
    n += get_i32(s + l.contacts + PIOLA_STATE_CONTACT_BYTES * (size_t)sv);
  }
  return n;
}

static double state_max_strain(const unsigned char *s) {
  const state_sections l = sections_of(s);
  double m = 0.0;
  for (int32_t i = 0; i < l.plastic_count; ++i) {
    for (int k = 0; k < 6; ++k) {
      m = fmax(m, fabs(get_f64(s + l.plastic + PIOLA_STATE_PLASTIC_BYTES * (size_t)i + 72 +
                               8 * (size_t)k)));
    }
  }
  return m;
}

/* The largest difference of positions (m) between two states of one scene. */
static double state_position_gap(const unsigned char *a, const unsigned char *b) {
  const state_sections l = sections_of(a);
  double gap = 0.0;
  for (int32_t i = 0; i < l.vertex_count; ++i) {
    for (int k = 0; k < 3; ++k) {
      const size_t o = l.vertices + PIOLA_STATE_VERTEX_BYTES * (size_t)i + 8 * (size_t)k;
      gap = fmax(gap, fabs(get_f64(a + o) - get_f64(b + o)));
    }
  }
  return gap;
}

/* World a saved its state, b loaded it as saved and c loaded it with a part changed (`changed`
 * names it): all three step `more` steps on; b ends as a, bitwise, and c elsewhere. */
static void check_continuation(piola_test *t, piola_world *a, piola_world *b, piola_world *c,
                               int more, const char *changed) {
  CHECK_STATUS(t, steps(a, more), PIOLA_OK);
  CHECK_STATUS(t, steps(b, more), PIOLA_OK);
  CHECK_STATUS(t, steps(c, more), PIOLA_OK);
  size_t na = 0, nb = 0, nc = 0;
  unsigned char *sa = save(t, a, &na), *sb = save(t, b, &nb), *sc = save(t, c, &nc);
  printf("  %d steps on: loaded %.3g m from the saved world, loaded without %s %.3g m\n", more,
         sa != NULL && sb != NULL ? state_position_gap(sa, sb) : -1.0, changed,
         sa != NULL && sc != NULL ? state_position_gap(sa, sc) : -1.0);
  CHECK_MSG(t, sa != NULL && same_state(sa, na, sb, nb), "the loaded world ends in another state");
  CHECK_MSG(t, sa != NULL && sc != NULL && !same_state(sa, na, sc, nc),
            "without %s the loaded world ends in the same state", changed);
  free(sa);
  free(sb);
  free(sc);
}

/* ---- Round trips -------------------------------------------------------------------------- */

/* A world of the scene steps `warm` steps and saves its state; a fresh world of the scene loads
 * it (and saves the same bytes); both step `more` steps and end in the same state, bitwise. The
 * contact lists matter: the fresh world with the lists emptied ends elsewhere. */
static void roundtrip(piola_test *t, piola_backend backend, int32_t warm, int32_t more) {
  capture_log log;
  int misuse = 0;
  state_scene a, b, c;
  memset(&b, 0, sizeof b);
  memset(&c, 0, sizeof c);
  REQUIRE_OK(t, state_scene_make(backend, &log, &misuse, &a));
  REQUIRE_OK(t, steps(a.w, warm));
  size_t na = 0, nb = 0, nc = 0;
  unsigned char *sa = save(t, a.w, &na);
  REQUIRE(t, sa != NULL);
  const int32_t listed = state_contacts(sa);
  const double strain = state_max_strain(sa);
  printf("  after %d steps: %d contacts listed, plastic strain up to %.3g\n", (int)warm,
         (int)listed, strain);
  CHECK(t, listed > 0);
  CHECK(t, strain > 1e-4);
  CHECK(t, get_i32(sa + PIOLA_STATE_OFFSET_COLLIDERS) == 2); /* the plane, the sphere */
  CHECK(t, get_i32(sa + PIOLA_STATE_OFFSET_ATTACHMENTS) == 1);

  piola_status s = state_scene_make(backend, &log, &misuse, &b);
  CHECK_STATUS(t, s, PIOLA_OK);
  s = s == PIOLA_OK ? state_scene_make(backend, &log, &misuse, &c) : s;
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s == PIOLA_OK) {
    CHECK_STATUS(t, piola_world_load_state(b.w, sa, na), PIOLA_OK);
    check_saves(t, b.w, sa, na, "the loaded world saves other bytes");
    /* The same state without its contact lists. */
    const state_sections l = sections_of(sa);
    unsigned char *cleared = malloc(na);
    REQUIRE(t, cleared != NULL);
    memcpy(cleared, sa, na);
    for (int32_t sv = 0; sv < l.surface_vertices; ++sv) {
      unsigned char *r = cleared + l.contacts + PIOLA_STATE_CONTACT_BYTES * (size_t)sv;
      put_i32(r, 0);
      for (int k = 0; k < PIOLA_CONTACTS_PER_VERTEX; ++k) {
        put_i32(r + 4 + 4 * k, -1);
      }
    }
    CHECK_STATUS(t, piola_world_load_state(c.w, cleared, na), PIOLA_OK);
    free(cleared);
    CHECK_STATUS(t, steps(a.w, more), PIOLA_OK);
    CHECK_STATUS(t, steps(b.w, more), PIOLA_OK);
    CHECK_STATUS(t, steps(c.w, more), PIOLA_OK);
    free(sa);
    sa = save(t, a.w, &na);
    unsigned char *sb = save(t, b.w, &nb);
    unsigned char *sc = save(t, c.w, &nc);
    const uint64_t ha = wt_state_hash(a.w, a.body, 2), hb = wt_state_hash(b.w, b.body, 2),
                   hc = wt_state_hash(c.w, c.body, 2);
    printf("  after %d more steps: state hash %016llx (saved world), %016llx (loaded), %016llx "
           "(loaded without contacts, %.3g m away)\n",
           (int)more, (unsigned long long)ha, (unsigned long long)hb, (unsigned long long)hc,
           sa != NULL && sc != NULL ? state_position_gap(sa, sc) : -1.0);
    CHECK(t, ha != 0 && ha == hb);
    CHECK_MSG(t, same_state(sa, na, sb, nb), "the loaded world ends in another state");
    CHECK_MSG(t, sc != NULL && !same_state(sa, na, sc, nc),
              "without its contact lists the loaded world ends in the same state");
    free(sb);
    free(sc);
  }
  free(sa);
  CHECK(t, misuse == 0);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0);
  piola_world_destroy(a.w);
  piola_world_destroy(b.w);
  piola_world_destroy(c.w);
}

void test_state_roundtrip_bitwise(piola_test *t) {
  roundtrip(t, PIOLA_BACKEND_CPU_REFERENCE, 40, 20);
}

void test_opencl_state_roundtrip_bitwise(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  roundtrip(t, PIOLA_BACKEND_OPENCL, 40, 20);
}

/* One world: saved before its first step (a reset point) and after 15 steps (a rollback
 * point); loading either and stepping again replays the same steps, bitwise. */
static void rollback(piola_test *t, piola_backend backend) {
  capture_log log;
  int misuse = 0;
  state_scene a;
  REQUIRE_OK(t, state_scene_make(backend, &log, &misuse, &a));
  size_t n0 = 0, n15 = 0, n35 = 0, n = 0;
  unsigned char *s0 = save(t, a.w, &n0);
  CHECK_STATUS(t, steps(a.w, 15), PIOLA_OK);
  unsigned char *s15 = save(t, a.w, &n15);
  CHECK_STATUS(t, steps(a.w, 20), PIOLA_OK);
  unsigned char *s35 = save(t, a.w, &n35);
  REQUIRE(t, s0 != NULL && s15 != NULL && s35 != NULL);
  CHECK(t, !same_state(s15, n15, s35, n35));

  CHECK_STATUS(t, piola_world_load_state(a.w, s15, n15), PIOLA_OK);
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(a.w, &st), PIOLA_OK);
  CHECK(t, st.step_count == 15);
  CHECK_NEAR(t, st.simulated_time, 15 * (double)0.005f, 1e-12);
  CHECK_STATUS(t, steps(a.w, 20), PIOLA_OK);
  unsigned char *s = save(t, a.w, &n);
  CHECK_MSG(t, same_state(s, n, s35, n35), "rolled back 20 steps, the replay ends elsewhere");
  free(s);

  CHECK_STATUS(t, piola_world_load_state(a.w, s0, n0), PIOLA_OK);
  s = save(t, a.w, &n);
  CHECK_MSG(t, same_state(s, n, s0, n0), "the reset world saves other bytes");
  free(s);
  CHECK_STATUS(t, steps(a.w, 35), PIOLA_OK);
  s = save(t, a.w, &n);
  CHECK_MSG(t, same_state(s, n, s35, n35), "reset to the start, the replay ends elsewhere");
  free(s);
  free(s0);
  free(s15);
  free(s35);
  CHECK(t, misuse == 0);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0);
  piola_world_destroy(a.w);
}

void test_state_rollback_bitwise(piola_test *t) {
  rollback(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_state_rollback_bitwise(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  rollback(t, PIOLA_BACKEND_OPENCL);
}

/* ---- Across backends ---------------------------------------------------------------------- */

/* The state of the CPU reference loaded into an OpenCL world: one step from it is the OpenCL
 * step from the same state rounded to floats (positions, velocities, the plastic state), bitwise,
 * and stays near the reference's own step. Then a few steps of the cross-check with a resync:
 * each step the reference's state is loaded into the device world before it steps. */
void test_opencl_state_load_cpu_state(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  capture_log log;
  int misuse = 0;
  state_scene cpu, e, g;
  memset(&e, 0, sizeof e);
  memset(&g, 0, sizeof g);
  REQUIRE_OK(t, state_scene_make(PIOLA_BACKEND_CPU_REFERENCE, &log, &misuse, &cpu));
  piola_status s = steps(cpu.w, 30);
  CHECK_STATUS(t, s, PIOLA_OK);
  size_t n = 0, ne = 0, ng = 0, nr = 0;
  unsigned char *state = save(t, cpu.w, &n);
  s = state != NULL ? state_scene_make(PIOLA_BACKEND_OPENCL, &log, &misuse, &e)
                    : PIOLA_ERROR_INVALID_ARGUMENT;
  CHECK_STATUS(t, s, PIOLA_OK);
  s = s == PIOLA_OK ? state_scene_make(PIOLA_BACKEND_OPENCL, &log, &misuse, &g) : s;
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s != PIOLA_OK) {
    free(state);
    piola_world_destroy(cpu.w);
    piola_world_destroy(e.w);
    return;
  }
  unsigned char *rounded = malloc(n);
  REQUIRE(t, rounded != NULL);
  memcpy(rounded, state, n);
  const state_sections l = sections_of(state);
  int32_t changed = 0;
  for (int32_t i = 0; i < l.vertex_count; ++i) {
    for (int k = 0; k < 6; ++k) { /* position, velocity */
      unsigned char *p = rounded + l.vertices + PIOLA_STATE_VERTEX_BYTES * (size_t)i + 8 * k;
      const double d = get_f64(p);
      changed += (double)(float)d != d;
      put_f64(p, (double)(float)d);
    }
  }
  for (int32_t i = 0; i < l.plastic_count; ++i) {
    for (int k = 0; k < 15; ++k) { /* M, plastic strain */
      unsigned char *p = rounded + l.plastic + PIOLA_STATE_PLASTIC_BYTES * (size_t)i + 8 * k;
      put_f64(p, (double)(float)get_f64(p));
    }
  }
  CHECK(t, changed > 0); /* the reference's doubles are not floats */
  CHECK_STATUS(t, piola_world_load_state(e.w, state, n), PIOLA_OK);
  CHECK_STATUS(t, piola_world_load_state(g.w, rounded, n), PIOLA_OK);
  CHECK_STATUS(t, steps(e.w, 1), PIOLA_OK);
  CHECK_STATUS(t, steps(g.w, 1), PIOLA_OK);
  CHECK_STATUS(t, steps(cpu.w, 1), PIOLA_OK);
  unsigned char *se = save(t, e.w, &ne), *sg = save(t, g.w, &ng), *sr = save(t, cpu.w, &nr);
  CHECK_MSG(t, same_state(se, ne, sg, ng),
            "a step from the reference's state is not the step from its floats");
  const double gap = se != NULL && sr != NULL ? state_position_gap(se, sr) : 1.0;
  printf("  one OpenCL step from the reference's state: %.3g m from the reference's step\n", gap);
  CHECK(t, gap < 1e-4);
  free(se);
  free(sg);
  free(rounded);

  /* The cross-check with a resync: the reference steps on; before each step of the device
   * world the reference's state is loaded into it; the gap stays one step's. */
  double worst = 0.0;
  for (int k = 0; k < 5 && sr != NULL; ++k) {
    CHECK_STATUS(t, piola_world_load_state(e.w, sr, nr), PIOLA_OK);
    CHECK_STATUS(t, steps(e.w, 1), PIOLA_OK);
    CHECK_STATUS(t, steps(cpu.w, 1), PIOLA_OK);
    free(sr);
    sr = save(t, cpu.w, &nr);
    se = save(t, e.w, &ne);
    if (se != NULL && sr != NULL) {
      worst = fmax(worst, state_position_gap(se, sr));
      CHECK(t, get_i32(se + PIOLA_STATE_OFFSET_STEP_COUNT) ==
                   get_i32(sr + PIOLA_STATE_OFFSET_STEP_COUNT));
    }
    free(se);
  }
  printf("  resync over 5 steps: gap up to %.3g m\n", worst);
  CHECK(t, worst < 1e-4);
  free(sr);
  free(state);
  CHECK(t, misuse == 0);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0);
  piola_world_destroy(cpu.w);
  piola_world_destroy(e.w);
  piola_world_destroy(g.w);
}

/* ---- Bad buffers -------------------------------------------------------------------------- */

/* A load that must fail with `expected`, one logged error and the world unchanged (its snapshot
 * and its saved state). */
static void check_refused(piola_test *t, const char *what, state_scene *sc, capture_log *log,
                          const unsigned char *buffer, size_t bytes, piola_status expected) {
  size_t n0 = 0, n1 = 0;
  unsigned char *before = save(t, sc->w, &n0);
  const wt_snapshot s0 = wt_snapshot_take(sc->w, sc->body, 2);
  const int errors = log->count[PIOLA_LOG_ERROR];
  const piola_status s = piola_world_load_state(sc->w, buffer, bytes);
  CHECK_MSG(t, s == expected, "%s: '%s', expected '%s'", what, piola_status_string(s),
            piola_status_string(expected));
  CHECK_MSG(t, log->count[PIOLA_LOG_ERROR] == errors + 1, "%s: %d errors logged", what,
            log->count[PIOLA_LOG_ERROR] - errors);
  const wt_snapshot s1 = wt_snapshot_take(sc->w, sc->body, 2);
  unsigned char *after = save(t, sc->w, &n1);
  CHECK_MSG(t, wt_snapshot_equal(&s0, &s1), "%s: the world changed", what);
  CHECK_MSG(t, same_state(before, n0, after, n1), "%s: the world's state changed", what);
  free(before);
  free(after);
}

/* Every kind of bad buffer, against a world of the scene (fresh: `warm` 0, or stepped). */
static void refuse_bad_buffers(piola_test *t, piola_backend backend, int32_t warm, bool all) {
  capture_log log;
  int misuse = 0;
  state_scene src, dst;
  REQUIRE_OK(t, state_scene_make(backend, &log, &misuse, &src));
  REQUIRE_OK(t, state_scene_make(backend, &log, &misuse, &dst));
  CHECK_STATUS(t, steps(src.w, 25), PIOLA_OK);
  CHECK_STATUS(t, steps(dst.w, warm), PIOLA_OK);
  size_t n = 0;
  unsigned char *good = save(t, src.w, &n);
  REQUIRE(t, good != NULL);
  unsigned char *bad = malloc(n);
  REQUIRE(t, bad != NULL);
  const state_sections l = sections_of(good);

  check_refused(t, "NULL buffer", &dst, &log, NULL, n, PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, misuse == 1);
  check_refused(t, "shorter than the header", &dst, &log, good, 40, PIOLA_ERROR_INVALID_ARGUMENT);
  check_refused(t, "one byte short", &dst, &log, good, n - 1, PIOLA_ERROR_INVALID_ARGUMENT);
  memcpy(bad, good, n);
  bad[3] ^= 0x20;
  check_refused(t, "wrong magic", &dst, &log, bad, n, PIOLA_ERROR_INVALID_ARGUMENT);
  memcpy(bad, good, n);
  put_i32(bad + PIOLA_STATE_OFFSET_VERSION, 2);
  check_refused(t, "another version", &dst, &log, bad, n, PIOLA_ERROR_INVALID_ARGUMENT);
  memcpy(bad, good, n);
  put_f64(bad + l.vertices + PIOLA_STATE_VERTEX_BYTES * 3 + 8, NAN);
  check_refused(t, "a NaN position", &dst, &log, bad, n, PIOLA_ERROR_NON_FINITE);
  if (all) {
    static const struct {
      int offset;
      const char *what;
    } counts[] = {{PIOLA_STATE_OFFSET_BODIES, "bodies"},
                  {PIOLA_STATE_OFFSET_VERTICES, "vertices"},
                  {PIOLA_STATE_OFFSET_TETS, "tets"},
                  {PIOLA_STATE_OFFSET_PLASTIC_TETS, "plastic tets"},
                  {PIOLA_STATE_OFFSET_SURFACE_VERTICES, "surface vertices"},
                  {PIOLA_STATE_OFFSET_SURFACE_TRIANGLES, "surface triangles"},
                  {PIOLA_STATE_OFFSET_COLLIDERS, "colliders"},
                  {PIOLA_STATE_OFFSET_ATTACHMENTS, "attachments"},
                  {PIOLA_STATE_OFFSET_CONTACTS_PER_VERTEX, "contacts per vertex"}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
      memcpy(bad, good, n);
      put_i32(bad + counts[i].offset, get_i32(good + counts[i].offset) + 1);
      check_refused(t, counts[i].what, &dst, &log, bad, n, PIOLA_ERROR_COUNT_MISMATCH);
    }
    memcpy(bad, good, n);
    put_i32(bad + PIOLA_STATE_OFFSET_TOTAL_BYTES, (int32_t)n + 8);
    check_refused(t, "a total that is not the counts'", &dst, &log, bad, n,
                  PIOLA_ERROR_INVALID_ARGUMENT);
    memcpy(bad, good, n);
    put_i32(bad + PIOLA_STATE_OFFSET_FLAGS, 6);
    check_refused(t, "unknown flags", &dst, &log, bad, n, PIOLA_ERROR_INVALID_ARGUMENT);
    memcpy(bad, good, n);
    put_f64(bad + PIOLA_STATE_OFFSET_SIMULATED_TIME, INFINITY);
    check_refused(t, "an infinite time", &dst, &log, bad, n, PIOLA_ERROR_NON_FINITE);
    memcpy(bad, good, n);
    put_f64(bad + l.vertices + PIOLA_STATE_VERTEX_BYTES * 5 + 24 + 16, -INFINITY);
    check_refused(t, "an infinite velocity", &dst, &log, bad, n, PIOLA_ERROR_NON_FINITE);
    memcpy(bad, good, n);
    put_f64(bad + l.vertices + PIOLA_STATE_VERTEX_BYTES * 5 + 48, NAN);
    check_refused(t, "a NaN force", &dst, &log, bad, n, PIOLA_ERROR_NON_FINITE);
    memcpy(bad, good, n);
    put_f64(bad + l.vertices + PIOLA_STATE_VERTEX_BYTES * 7 + 72, -1.0);
    check_refused(t, "a negative inverse mass", &dst, &log, bad, n, PIOLA_ERROR_INVALID_ARGUMENT);
    memcpy(bad, good, n);
    put_f64(bad + l.plastic + PIOLA_STATE_PLASTIC_BYTES * 2 + 80, NAN);
    check_refused(t, "a NaN plastic strain", &dst, &log, bad, n, PIOLA_ERROR_NON_FINITE);
    memcpy(bad, good, n);
    put_i32(bad + l.contacts + PIOLA_STATE_CONTACT_BYTES * 4, PIOLA_CONTACTS_PER_VERTEX + 1);
    check_refused(t, "too many contacts", &dst, &log, bad, n, PIOLA_ERROR_INVALID_ARGUMENT);
    memcpy(bad, good, n);
    put_i32(bad + l.contacts + PIOLA_STATE_CONTACT_BYTES * 4, 1);
    put_i32(bad + l.contacts + PIOLA_STATE_CONTACT_BYTES * 4 + 4,
            2 * get_i32(good + PIOLA_STATE_OFFSET_SURFACE_TRIANGLES));
    check_refused(t, "a contact with no triangle", &dst, &log, bad, n,
                  PIOLA_ERROR_INVALID_ARGUMENT);
    memcpy(bad, good, n);
    put_i32(bad + l.colliders, get_i32(good + l.colliders) + 1);
    check_refused(t, "a collider of another kind", &dst, &log, bad, n,
                  PIOLA_ERROR_INVALID_ARGUMENT);
    memcpy(bad, good, n);
    put_f64(bad + l.colliders + 32, 0.5);
    check_refused(t, "a rotation that is not a unit quaternion", &dst, &log, bad, n,
                  PIOLA_ERROR_INVALID_ARGUMENT);
    memcpy(bad, good, n);
    put_f64(bad + l.colliders + 64, NAN);
    check_refused(t, "a NaN collider velocity", &dst, &log, bad, n, PIOLA_ERROR_NON_FINITE);
    memcpy(bad, good, n);
    put_i32(bad + l.attachments + 4, 1);
    check_refused(t, "an attachment on another vertex", &dst, &log, bad, n,
                  PIOLA_ERROR_INVALID_ARGUMENT);
    memcpy(bad, good, n);
    put_f64(bad + l.attachments + 16, NAN);
    check_refused(t, "a NaN attachment target", &dst, &log, bad, n, PIOLA_ERROR_NON_FINITE);
  }
  /* The good state still loads into the world after all that. */
  CHECK_STATUS(t, piola_world_load_state(dst.w, good, n), PIOLA_OK);
  free(bad);
  free(good);
  piola_world_destroy(src.w);
  piola_world_destroy(dst.w);
}

void test_state_load_rejects_bad_buffers(piola_test *t) {
  refuse_bad_buffers(t, PIOLA_BACKEND_CPU_REFERENCE, 0, true);
  refuse_bad_buffers(t, PIOLA_BACKEND_CPU_REFERENCE, 10, true);
}

void test_opencl_state_load_rejects_bad_buffers(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  refuse_bad_buffers(t, PIOLA_BACKEND_OPENCL, 10, false);
}

/* Saving into a NULL or too small buffer is refused (logged, nothing written); a state of
 * another scene (one body fewer) is refused by the counts. */
void test_state_save_rejects_bad_buffers(piola_test *t) {
  capture_log log;
  int misuse = 0;
  state_scene a;
  REQUIRE_OK(t, state_scene_make(PIOLA_BACKEND_CPU_REFERENCE, &log, &misuse, &a));
  CHECK_STATUS(t, steps(a.w, 5), PIOLA_OK);
  size_t n = 0;
  CHECK_STATUS(t, piola_world_get_state_size(a.w, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, misuse == 1 && log.count[PIOLA_LOG_ERROR] == 1);
  CHECK_STATUS(t, piola_world_get_state_size(a.w, &n), PIOLA_OK);
  const size_t expected = PIOLA_STATE_HEADER_BYTES +
                          PIOLA_STATE_VERTEX_BYTES * (size_t)(a.w->vertex_count) +
                          PIOLA_STATE_PLASTIC_BYTES * (size_t)a.w->solver.plastic_count +
                          PIOLA_STATE_CONTACT_BYTES * (size_t)a.w->contacts.vertex_count +
                          2 * PIOLA_STATE_COLLIDER_BYTES + PIOLA_STATE_ATTACHMENT_BYTES;
  CHECK(t, n == expected);
  unsigned char *buf = malloc(n + 16);
  REQUIRE(t, buf != NULL);
  memset(buf, 0xAB, n + 16);
  CHECK_STATUS(t, piola_world_save_state(a.w, NULL, n), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, misuse == 2 && log.count[PIOLA_LOG_ERROR] == 2);
  CHECK_STATUS(t, piola_world_save_state(a.w, buf, n - 1), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 3);
  bool untouched = true;
  for (size_t i = 0; i < n + 16; ++i) {
    untouched = untouched && buf[i] == 0xAB;
  }
  CHECK(t, untouched);
  /* A larger buffer: the state, and the bytes after it left alone. */
  CHECK_STATUS(t, piola_world_save_state(a.w, buf, n + 16), PIOLA_OK);
  CHECK(t, memcmp(buf, PIOLA_STATE_MAGIC, sizeof PIOLA_STATE_MAGIC) == 0);
  CHECK(t, buf[n] == 0xAB && buf[n + 15] == 0xAB);
  CHECK_STATUS(t, piola_world_load_state(a.w, buf, n + 16), PIOLA_OK);

  /* Another scene: the plane and the lower box only. */
  piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_CPU_REFERENCE, &log, &misuse);
  piola_world *other = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &other));
  piola_tet_mesh box = wt_box(3, 2, 3, 0.3f, 0.2f, 0.3f);
  piola_body_id id;
  const piola_material material = piola_default_material();
  CHECK_STATUS(t, piola_world_add_tet_body(other, &box, &material, NULL, &id), PIOLA_OK);
  piola_mesh_free(&box);
  const int errors = log.count[PIOLA_LOG_ERROR];
  CHECK_STATUS(t, piola_world_load_state(other, buf, n), PIOLA_ERROR_COUNT_MISMATCH);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == errors + 1 && strstr(log.text, "bodies") != NULL);
  free(buf);
  piola_world_destroy(other);
  piola_world_destroy(a.w);
}

/* The collision surface in the state's numbering (piola_world_get_collision_surface): it lists
 * each body's surface vertices and triangles (as piola_body_get_surface and _vertices do, in
 * world vertex indices), the same on both backends; bad calls get their status, nothing
 * written. */
static void check_collision_surface(piola_test *t, piola_backend backend) {
  capture_log log;
  int misuse = 0;
  state_scene a;
  REQUIRE_OK(t, state_scene_make(backend, &log, &misuse, &a));
  int32_t nv = -1, nt = -1;
  REQUIRE_OK(t, piola_world_get_collision_surface(a.w, &nv, &nt, NULL, NULL));
  int32_t want_v = 0, want_t = 0, offset[2] = {0, 0};
  for (int b = 0; b < 2; ++b) {
    int32_t n = 0, m = 0;
    CHECK_STATUS(t, piola_body_get_surface_vertices(a.w, a.body[b], NULL, 0, &n), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_surface(a.w, a.body[b], NULL, 0, &m), PIOLA_OK);
    want_v += n;
    want_t += m;
  }
  offset[1] = piola_body_get_vertex_count(a.w, a.body[0]);
  CHECK(t, nv == want_v && nt == want_t && nv > 0 && nt > 0);
  int32_t *map = malloc(sizeof *map * (size_t)nv), *tri = malloc(sizeof *tri * 3 * (size_t)nt);
  REQUIRE(t, map != NULL && tri != NULL);
  /* Too little room: refused, nothing written. */
  for (int32_t i = 0; i < nv; ++i) {
    map[i] = -7;
  }
  int32_t room_v = nv - 1, room_t = nt;
  CHECK_STATUS(t, piola_world_get_collision_surface(a.w, &room_v, &room_t, map, tri),
               PIOLA_ERROR_COUNT_MISMATCH);
  CHECK(t, map[0] == -7 && room_v == nv - 1 && log.count[PIOLA_LOG_ERROR] == 1);
  CHECK_STATUS(t, piola_world_get_collision_surface(a.w, NULL, &room_t, map, tri),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, misuse == 1 && log.count[PIOLA_LOG_ERROR] == 2);
  room_v = nv;
  REQUIRE_OK(t, piola_world_get_collision_surface(a.w, &room_v, &room_t, map, tri));
  CHECK(t, room_v == nv && room_t == nt);
  /* Every surface vertex is a surface vertex of its body; every triangle one of its body's. */
  for (int b = 0; b < 2; ++b) {
    int32_t n = 0, m = 0;
    piola_body_get_surface_vertices(a.w, a.body[b], NULL, 0, &n);
    piola_body_get_surface(a.w, a.body[b], NULL, 0, &m);
    int32_t *sv = malloc(sizeof *sv * (size_t)n), *st = malloc(sizeof *st * 3 * (size_t)m);
    REQUIRE(t, sv != NULL && st != NULL);
    piola_body_get_surface_vertices(a.w, a.body[b], sv, n, &n);
    piola_body_get_surface(a.w, a.body[b], st, m, &m);
    int32_t listed = 0, matched = 0, own = 0;
    for (int32_t i = 0; i < nv; ++i) {
      const int32_t local = map[i] - offset[b];
      const int32_t count = piola_body_get_vertex_count(a.w, a.body[b]);
      if (local < 0 || local >= count) {
        continue;
      }
      own++;
      for (int32_t k = 0; k < n; ++k) {
        listed += sv[k] == local;
      }
    }
    for (int32_t i = 0; i < nt; ++i) {
      const int32_t c0 = map[tri[3 * i]] - offset[b], c1 = map[tri[3 * i + 1]] - offset[b],
                    c2 = map[tri[3 * i + 2]] - offset[b];
      for (int32_t k = 0; k < m; ++k) { /* the same triangle, the same orientation */
        const int32_t *q = st + 3 * k;
        matched += (q[0] == c0 && q[1] == c1 && q[2] == c2) ||
                   (q[0] == c1 && q[1] == c2 && q[2] == c0) ||
                   (q[0] == c2 && q[1] == c0 && q[2] == c1);
      }
    }
    CHECK_MSG(t, own == n && listed == n, "body %d: %d of %d surface vertices listed", b,
              (int)listed, (int)n);
    CHECK_MSG(t, matched == m, "body %d: %d of %d triangles found", b, (int)matched, (int)m);
    free(sv);
    free(st);
  }
  /* The same numbering in a CPU reference world of the scene. */
  if (backend != PIOLA_BACKEND_CPU_REFERENCE) {
    state_scene r;
    REQUIRE_OK(t, state_scene_make(PIOLA_BACKEND_CPU_REFERENCE, &log, &misuse, &r));
    int32_t *rmap = malloc(sizeof *rmap * (size_t)nv),
            *rtri = malloc(sizeof *rtri * 3 * (size_t)nt);
    REQUIRE(t, rmap != NULL && rtri != NULL);
    int32_t rv = nv, rt = nt;
    REQUIRE_OK(t, piola_world_get_collision_surface(r.w, &rv, &rt, rmap, rtri));
    CHECK(t, rv == nv && rt == nt && memcmp(rmap, map, sizeof *map * (size_t)nv) == 0 &&
                 memcmp(rtri, tri, sizeof *tri * 3 * (size_t)nt) == 0);
    free(rmap);
    free(rtri);
    piola_world_destroy(r.w);
  }
  free(map);
  free(tri);
  piola_world_destroy(a.w);
}

void test_state_collision_surface(piola_test *t) {
  check_collision_surface(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_state_collision_surface(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  check_collision_surface(t, PIOLA_BACKEND_OPENCL);
}

/* ---- The multigrid scheme's friction ------------------------------------------------------ */

/* A 0.2 m box resting on a plane inclined by 20 degrees at friction 0.8, stepped under `scheme`
 * (the friction of the multigrid scheme holds its sole at anchors that carry across steps). */
static piola_status incline_make(piola_iteration_scheme scheme, capture_log *log, int *misuse,
                                 piola_world **out) {
  piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_CPU_REFERENCE, log, misuse);
  def.iteration_scheme = scheme;
  def.contacts = false;
  return wt_incline_make(&def, 0.8f, out, NULL, NULL);
}

/* Under the multigrid scheme the state holds each vertex's friction anchor (flag bit 1, the
 * last section): a world loading the state steps as the saved one, bitwise, where one loading it
 * with the anchors let go slips and ends elsewhere. A state without the section (saved under
 * Gauss-Seidel) loads into a multigrid world and the other way round; a section naming a
 * collider the world lacks is refused, and the world is left as it was. */
void test_state_multigrid_friction(piola_test *t) {
  capture_log log;
  int misuse = 0;
  piola_world *a = NULL, *b = NULL, *c = NULL, *gs = NULL;
  REQUIRE_OK(t, incline_make(PIOLA_SCHEME_MULTIGRID, &log, &misuse, &a));
  REQUIRE_OK(t, incline_make(PIOLA_SCHEME_MULTIGRID, &log, &misuse, &b));
  REQUIRE_OK(t, incline_make(PIOLA_SCHEME_MULTIGRID, &log, &misuse, &c));
  REQUIRE_OK(t, incline_make(PIOLA_SCHEME_GAUSS_SEIDEL, &log, &misuse, &gs));
  CHECK_STATUS(t, steps(a, 60), PIOLA_OK);
  size_t na = 0, ng = 0;
  unsigned char *sa = save(t, a, &na);
  REQUIRE(t, sa != NULL);
  const int32_t nv = get_i32(sa + PIOLA_STATE_OFFSET_VERTICES);
  const size_t friction = na - PIOLA_STATE_FRICTION_BYTES * (size_t)nv;
  int32_t held = 0, pressing = 0;
  for (int32_t i = 0; i < nv; ++i) {
    const unsigned char *r = sa + friction + PIOLA_STATE_FRICTION_BYTES * (size_t)i;
    held += get_i32(r) == 0;
    pressing += get_i32(r) == 0 && get_f64(r + 32) > 0.0;
  }
  printf("  %d of %d vertices held by the plane's friction, %d pressing on it\n", (int)held,
         (int)nv, (int)pressing);
  CHECK(t, pressing >= 6);
  CHECK(t, (get_i32(sa + PIOLA_STATE_OFFSET_FLAGS) & (int32_t)PIOLA_STATE_FLAG_FRICTION) != 0);
  CHECK(t, held >= 6 && held <= 9); /* of the sole's 3 x 3 vertices */

  /* Loaded as saved: the same bytes, the same steps. */
  CHECK_STATUS(t, piola_world_load_state(b, sa, na), PIOLA_OK);
  check_saves(t, b, sa, na, "the loaded world saves other bytes");
  /* Loaded with the anchors let go. */
  unsigned char *loose = malloc(na);
  REQUIRE(t, loose != NULL);
  memcpy(loose, sa, na);
  for (int32_t i = 0; i < nv; ++i) {
    unsigned char *r = loose + friction + PIOLA_STATE_FRICTION_BYTES * (size_t)i;
    put_i32(r, -1);
    put_f64(r + 32, 0.0);
  }
  CHECK_STATUS(t, piola_world_load_state(c, loose, na), PIOLA_OK);
  /* A collider the world lacks: refused, nothing changed. */
  put_i32(loose + friction, 1);
  CHECK_STATUS(t, piola_world_load_state(b, loose, na), PIOLA_ERROR_INVALID_ARGUMENT);
  check_saves(t, b, sa, na, "a refused state changed the world");
  free(loose);
  const int errors = log.count[PIOLA_LOG_ERROR];
  CHECK(t, errors == 1);

  check_continuation(t, a, b, c, 20, "its anchors");
  free(sa);
  sa = save(t, a, &na);

  /* Across schemes: Gauss-Seidel's state (no section) into the multigrid world, and back. */
  CHECK_STATUS(t, steps(gs, 5), PIOLA_OK);
  unsigned char *sg = save(t, gs, &ng);
  REQUIRE(t, sg != NULL);
  CHECK(t, (get_i32(sg + PIOLA_STATE_OFFSET_FLAGS) & (int32_t)PIOLA_STATE_FLAG_FRICTION) == 0);
  CHECK(t, ng == na - PIOLA_STATE_FRICTION_BYTES * (size_t)nv);
  CHECK_STATUS(t, piola_world_load_state(c, sg, ng), PIOLA_OK);
  CHECK_STATUS(t, piola_world_load_state(gs, sa, na), PIOLA_OK);
  CHECK_STATUS(t, steps(c, 2), PIOLA_OK);
  CHECK_STATUS(t, steps(gs, 2), PIOLA_OK);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == errors);
  CHECK(t, misuse == 0);
  free(sa);
  free(sg);
  piola_world_destroy(a);
  piola_world_destroy(b);
  piola_world_destroy(c);
  piola_world_destroy(gs);
}

/* Two boxes (2 x 2 x 2 cells, 0.3 m), the upper resting on the lower, under the multigrid scheme,
 * whose body contacts' friction takes the normal force each contact pressed with in the last
 * substep (newton_contact.c; at rest they sum to the upper box's weight, and the contact
 * stage's push of what the penalty lets in, 1%): the state holds those forces (flag bit 2, the last
 * section), a world loading it steps as the saved one, bitwise, and one loading it with the forces
 * zeroed steps otherwise; an entry out of range or a negative force is refused, the world
 * unchanged. */
static piola_status stacked_boxes_make(capture_log *log, int *misuse, piola_world **out) {
  piola_world_def def = opencl_test_world_def(PIOLA_BACKEND_CPU_REFERENCE, log, misuse);
  def.iteration_scheme = PIOLA_SCHEME_MULTIGRID;
  def.contact_friction = 0.5f;
  piola_status s = piola_world_create(&def, out);
  piola_tet_mesh box = wt_box(2, 2, 2, 0.3f, 0.3f, 0.3f);
  piola_material mat = piola_default_material();
  mat.model = PIOLA_MODEL_NEOHOOKEAN;
  mat.youngs_modulus = 1e6f;
  const float up[3] = {0.0f, 1.0f, 0.0f}, lower[3] = {0.0f, 0.0f, 0.0f},
              upper[3] = {0.0f, 0.305f, 0.0f};
  if (s == PIOLA_OK) {
    s = piola_world_add_plane(*out, up, 0.0f, 0.5f, NULL);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(*out, &box, &mat, lower, NULL);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(*out, &box, &mat, upper, NULL);
  }
  piola_mesh_free(&box);
  return s;
}

void test_state_multigrid_contact_forces(piola_test *t) {
  capture_log log;
  int misuse = 0;
  piola_world *a = NULL, *b = NULL, *c = NULL;
  REQUIRE_OK(t, stacked_boxes_make(&log, &misuse, &a));
  REQUIRE_OK(t, stacked_boxes_make(&log, &misuse, &b));
  REQUIRE_OK(t, stacked_boxes_make(&log, &misuse, &c));
  CHECK_STATUS(t, steps(a, 160), PIOLA_OK);
  size_t na = 0;
  unsigned char *sa = save(t, a, &na);
  REQUIRE(t, sa != NULL);
  const int32_t nsv = get_i32(sa + PIOLA_STATE_OFFSET_SURFACE_VERTICES);
  const size_t slots = PIOLA_CONTACTS_PER_VERTEX * (size_t)nsv;
  const size_t forces = na - PIOLA_STATE_CONTACT_FORCE_BYTES * slots;
  CHECK(t,
        (get_i32(sa + PIOLA_STATE_OFFSET_FLAGS) & (int32_t)PIOLA_STATE_FLAG_CONTACT_FORCES) != 0);
  double total = 0.0;
  int32_t pressing = 0;
  for (size_t k = 0; k < slots; ++k) {
    const unsigned char *r = sa + forces + PIOLA_STATE_CONTACT_FORCE_BYTES * k;
    pressing += get_i32(r) >= 0 && get_f64(r + 8) > 0.0;
    total += get_f64(r + 8);
  }
  /* the upper box weighs 0.3^3 m^3 x 1000 kg/m^3 x 9.81 m/s^2 = 265 N */
  printf("  %d contacts pressing, %.1f N in all (the upper box weighs 265 N)\n", (int)pressing,
         total);
  CHECK(t, pressing >= 4);
  CHECK_MSG(t, fabs(total / 265.0 - 1.0) < 0.05, "contact forces sum to %.1f N", total);

  CHECK_STATUS(t, piola_world_load_state(b, sa, na), PIOLA_OK);
  check_saves(t, b, sa, na, "the loaded world saves other bytes");
  unsigned char *zeroed = malloc(na);
  REQUIRE(t, zeroed != NULL);
  memcpy(zeroed, sa, na);
  for (size_t k = 0; k < slots; ++k) {
    put_f64(zeroed + forces + PIOLA_STATE_CONTACT_FORCE_BYTES * k + 8, 0.0);
  }
  CHECK_STATUS(t, piola_world_load_state(c, zeroed, na), PIOLA_OK);
  /* Refused, nothing changed: an entry past the surface's triangles, a negative force. */
  const int32_t ntri = get_i32(sa + PIOLA_STATE_OFFSET_SURFACE_TRIANGLES);
  put_i32(zeroed + forces, 2 * ntri);
  CHECK_STATUS(t, piola_world_load_state(b, zeroed, na), PIOLA_ERROR_INVALID_ARGUMENT);
  put_i32(zeroed + forces, -1);
  put_f64(zeroed + forces + 8, -1.0);
  CHECK_STATUS(t, piola_world_load_state(b, zeroed, na), PIOLA_ERROR_INVALID_ARGUMENT);
  check_saves(t, b, sa, na, "a refused state changed the world");
  free(zeroed);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 2);

  check_continuation(t, a, b, c, 10, "the contact forces");
  CHECK(t, misuse == 0);
  free(sa);
  piola_world_destroy(a);
  piola_world_destroy(b);
  piola_world_destroy(c);
}
