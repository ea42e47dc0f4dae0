/* Tests of the world API on the CPU reference: every kind of bad input returns its status and
 * leaves the world exactly as it was (counts, settings, a hash of the whole host state and of
 * what the API reads back); stale and null body ids go through the misuse hook; reoriented
 * tets; removing bodies; statistics and color sizes; the coloring of the box, the creature
 * and the Armadillo (Fratarcangeli et al. 2016) and the world's color ranges; determinism
 * (FNV-1a of the final state); pinned vertices; damping; substeps. */
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Fixtures ------------------------------------------------------------------------- */

/* A box body of 3 x 2 x 2 cells, 0.6 x 0.4 x 0.4 m. */
static piola_status make_small_box(piola_tet_mesh *out) {
  const int32_t cells[3] = {3, 2, 2};
  const float size[3] = {0.6f, 0.4f, 0.4f};
  return piola_mesh_make_box(cells, size, out);
}

/* A world with two bodies that have moved (non-zero velocities, built solver arrays) and a
 * ground plane: the state a failed call must leave alone. */
typedef struct busy_world {
  piola_world *w;
  piola_test_log log;
  int misuse;
  piola_tet_mesh box;
  piola_body_id bodies[2];
} busy_world;

static void busy_world_free(busy_world *b) {
  piola_world_destroy(b->w);
  piola_mesh_free(&b->box);
}

static bool busy_world_fill(busy_world *b) {
  if (b->w == NULL || make_small_box(&b->box) != PIOLA_OK) {
    return false;
  }
  piola_material m = piola_default_material();
  const float t0[3] = {0.0f, 0.5f, 0.0f}, t1[3] = {1.0f, 0.8f, 0.0f};
  if (piola_world_add_tet_body(b->w, &b->box, &m, t0, &b->bodies[0]) != PIOLA_OK ||
      piola_world_add_tet_body(b->w, &b->box, &m, t1, &b->bodies[1]) != PIOLA_OK ||
      piola_world_add_plane(b->w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL) !=
          PIOLA_OK) {
    return false;
  }
  for (int i = 0; i < 10; ++i) {
    if (piola_world_step(b->w) != PIOLA_OK) {
      return false;
    }
  }
  return true;
}

/* Makes the busy world; on failure records a failed check, frees what was made and returns
 * false. */
static bool busy_world_make(piola_test *t, busy_world *b) {
  memset(b, 0, sizeof *b);
  b->w = wt_world(t, &b->log, &b->misuse, 0.005f, 1, 5, 0.0f, true);
  bool ok = busy_world_fill(b);
  CHECK_MSG(t, ok, "could not make the busy world");
  if (!ok) {
    busy_world_free(b);
  }
  return ok;
}

/* Checks that `status` is `expected`, that the world did not change and that the failure was
 * logged as an error (when `logged`). */
#define CHECK_REJECTED(t, b, expr, expected, logged)                                               \
  do {                                                                                             \
    wt_snapshot before_ = wt_snapshot_take((b)->w, (b)->bodies, 2);                                \
    int errors_ = (b)->log.count[PIOLA_LOG_ERROR];                                                 \
    CHECK_STATUS(t, expr, expected);                                                               \
    wt_snapshot after_ = wt_snapshot_take((b)->w, (b)->bodies, 2);                                 \
    CHECK_MSG(t, wt_snapshot_equal(&before_, &after_), "%s changed the world", #expr);             \
    if (logged) {                                                                                  \
      CHECK_MSG(t, (b)->log.count[PIOLA_LOG_ERROR] == errors_ + 1,                                 \
                "%s: %d error messages, expected 1", #expr,                                        \
                (b)->log.count[PIOLA_LOG_ERROR] - errors_);                                        \
    }                                                                                              \
  } while (0)

/* ---- Bad input -------------------------------------------------------------------------- */

/* piola_version_string(), the header's macros and CMake's project version (passed in by
 * CMakeLists.txt, which reads it from the header) agree. */
void test_version_string_matches_project(piola_test *t) {
  char from_macros[32];
  snprintf(from_macros, sizeof from_macros, "%d.%d.%d", PIOLA_VERSION_MAJOR, PIOLA_VERSION_MINOR,
           PIOLA_VERSION_PATCH);
  CHECK_MSG(t, strcmp(piola_version_string(), from_macros) == 0, "version %s, macros %s",
            piola_version_string(), from_macros);
#ifdef PIOLA_PROJECT_VERSION
  CHECK_MSG(t, strcmp(piola_version_string(), PIOLA_PROJECT_VERSION) == 0,
            "version %s, CMake project %s", piola_version_string(), PIOLA_PROJECT_VERSION);
#endif
}

void test_world_create_rejects_bad_defs(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world *sentinel = (piola_world *)&log; /* any non-NULL pointer */
  struct {
    const char *what;
    piola_status expected;
  } cases[] = {
      {"cookie", PIOLA_ERROR_INVALID_DEF},
      {"dt = 0", PIOLA_ERROR_INVALID_ARGUMENT},
      {"dt < 0", PIOLA_ERROR_INVALID_ARGUMENT},
      {"dt NaN", PIOLA_ERROR_NON_FINITE},
      {"dt Inf", PIOLA_ERROR_NON_FINITE},
      {"iterations = 0", PIOLA_ERROR_INVALID_ARGUMENT},
      {"iterations < 0", PIOLA_ERROR_INVALID_ARGUMENT},
      {"substeps = 0", PIOLA_ERROR_INVALID_ARGUMENT},
      {"gravity NaN", PIOLA_ERROR_NON_FINITE},
      {"gravity Inf", PIOLA_ERROR_NON_FINITE},
      {"damping < 0", PIOLA_ERROR_INVALID_ARGUMENT},
      {"damping NaN", PIOLA_ERROR_NON_FINITE},
      {"unknown backend", PIOLA_ERROR_INVALID_ARGUMENT},
      {"work_group_size < 0", PIOLA_ERROR_INVALID_ARGUMENT},
      {"simd_lanes 3", PIOLA_ERROR_INVALID_ARGUMENT},
      {"simd_lanes < 0", PIOLA_ERROR_INVALID_ARGUMENT},
  };
  const int n = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; i < n; ++i) {
    piola_world_def def = piola_test_world_def(&log, &misuse);
    switch (i) {
    case 0:
      def.internal_cookie = 0;
      break;
    case 1:
      def.dt = 0.0f;
      break;
    case 2:
      def.dt = -0.01f;
      break;
    case 3:
      def.dt = NAN;
      break;
    case 4:
      def.dt = INFINITY;
      break;
    case 5:
      def.iterations = 0;
      break;
    case 6:
      def.iterations = -3;
      break;
    case 7:
      def.substeps = 0;
      break;
    case 8:
      def.gravity[1] = NAN;
      break;
    case 9:
      def.gravity[2] = -INFINITY;
      break;
    case 10:
      def.damping = -0.5f;
      break;
    case 11:
      def.damping = NAN;
      break;
    case 12:
      def.backend = (piola_backend)42;
      break;
    case 13:
      def.work_group_size = -1;
      break;
    case 14:
      def.simd_lanes = 3;
      break;
    default:
      def.simd_lanes = -8;
      break;
    }
    piola_world *w = sentinel;
    piola_status s = piola_world_create(&def, &w);
    CHECK_MSG(t, s == cases[i].expected, "%s: got '%s', expected '%s'", cases[i].what,
              piola_status_string(s), piola_status_string(cases[i].expected));
    CHECK_MSG(t, w == NULL, "%s: *out not NULL after a failure", cases[i].what);
    CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] == 1, "%s: %d error messages", cases[i].what,
              log.count[PIOLA_LOG_ERROR]);
    if (s == PIOLA_OK) {
      piola_world_destroy(w);
    }
  }
  piola_world *w = sentinel;
  CHECK_STATUS(t, piola_world_create(NULL, &w), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, w == NULL);
  piola_world_def def = piola_test_world_def(&log, &misuse);
  CHECK_STATUS(t, piola_world_create(&def, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  /* The valid def still works, and destroy accepts NULL. */
  REQUIRE_OK(t, piola_world_create(&def, &w));
  CHECK(t, w != NULL);
  piola_world_destroy(w);
  piola_world_destroy(NULL);
  CHECK(t, misuse == 0);
}

/* A copy of the box mesh whose last tet is replaced by `tet` (so that validation must get
 * through every earlier tet before it fails). */
static void with_last_tet(const piola_tet_mesh *box, int32_t *tets, const int32_t tet[4],
                          piola_tet_mesh *out) {
  memcpy(tets, box->tets, sizeof *tets * 4 * (size_t)box->tet_count);
  memcpy(tets + 4 * (size_t)(box->tet_count - 1), tet, 4 * sizeof *tet);
  *out = *box;
  out->tets = tets;
}

void test_add_body_rejects_bad_meshes(piola_test *t) {
  busy_world b;
  if (!busy_world_make(t, &b)) {
    return;
  }
  piola_material mat = piola_default_material();
  const piola_tet_mesh *box = &b.box;
  const int32_t nv = box->vertex_count;
  int32_t *tets = malloc(sizeof *tets * 4 * (size_t)box->tet_count);
  float *pos = malloc(sizeof *pos * 3 * (size_t)nv);
  REQUIRE(t, tets != NULL && pos != NULL);
  piola_tet_mesh m;

  /* Out-of-range and repeated indices, in the last tet. */
  with_last_tet(box, tets, (const int32_t[4]){0, 1, 2, nv}, &m);
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);
  with_last_tet(box, tets, (const int32_t[4]){0, -1, 2, 3}, &m);
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);
  with_last_tet(box, tets, (const int32_t[4]){5, 7, 9, 7}, &m);
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);

  /* Zero and near-zero rest volume: a tet of four vertices of one face of the box's first
   * cell (coplanar), and a single tet 1e-11 m high. */
  with_last_tet(box, tets, (const int32_t[4]){0, 1, 4, 5}, &m);
  {
    /* vertices 0, 1 and the two of the next row in x-y at z = 0 (grid order x fastest) */
    const float *p = box->positions;
    double z[4];
    for (int a = 0; a < 4; ++a) {
      z[a] = p[3 * (size_t)m.tets[4 * (size_t)(m.tet_count - 1) + a] + 2];
    }
    CHECK_MSG(t, z[0] == z[1] && z[1] == z[2] && z[2] == z[3], "fixture: tet not coplanar");
  }
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);
  {
    float flat[12];
    memcpy(flat, wt_unit_tet, sizeof flat);
    flat[10] = 1e-11f;
    int32_t one[4] = {0, 1, 2, 3};
    piola_tet_mesh thin = {flat, 4, one, 1};
    CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &thin, &mat, NULL, NULL),
                   PIOLA_ERROR_INVALID_MESH, true);
    flat[10] = 0.0f;
    CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &thin, &mat, NULL, NULL),
                   PIOLA_ERROR_INVALID_MESH, true);
  }

  /* Non-finite positions (in the last vertex) and translations. */
  const float bad_values[3] = {NAN, INFINITY, -INFINITY};
  for (int i = 0; i < 3; ++i) {
    memcpy(pos, box->positions, sizeof *pos * 3 * (size_t)nv);
    pos[3 * (size_t)(nv - 1) + (size_t)i] = bad_values[i];
    m = *box;
    m.positions = pos;
    CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                   PIOLA_ERROR_NON_FINITE, true);
    float translation[3] = {0.0f, 1.0f, 2.0f};
    translation[i] = bad_values[i];
    CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, box, &mat, translation, NULL),
                   PIOLA_ERROR_NON_FINITE, true);
  }

  /* Empty or too small meshes, missing arrays. */
  m = *box;
  m.vertex_count = 3;
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);
  m = *box;
  m.tet_count = 0;
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);
  m = *box;
  m.positions = NULL;
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);
  m = *box;
  m.tets = NULL;
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &m, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);

  /* NULL mesh or material: misuse, reported through the hook. */
  int misuse = b.misuse;
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, NULL, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, false);
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, box, NULL, NULL, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, false);
  CHECK_MSG(t, b.misuse == misuse + 2, "misuse hook called %d times, expected 2",
            b.misuse - misuse);
  CHECK_STATUS(t, piola_world_add_tet_body(NULL, box, &mat, NULL, NULL),
               PIOLA_ERROR_INVALID_ARGUMENT);

  /* A thin but valid tet (1e-6 m high, far above the 1e-9 relative threshold) is accepted:
   * the degeneracy test is not absurdly strict. */
  {
    float thin_ok[12];
    memcpy(thin_ok, wt_unit_tet, sizeof thin_ok);
    thin_ok[10] = 1e-6f;
    int32_t one[4] = {0, 1, 2, 3};
    piola_tet_mesh thin = {thin_ok, 4, one, 1};
    piola_body_id id;
    CHECK_STATUS(t, piola_world_add_tet_body(b.w, &thin, &mat, NULL, &id), PIOLA_OK);
    CHECK(t, piola_body_is_valid(b.w, id));
  }
  free(tets);
  free(pos);
  busy_world_free(&b);
}

/* Meshes that float cannot carry, found by the fuzz targets (the crash-* inputs of
 * tests/fuzz/corpus/body and body_raw): vertices beyond PIOLA_POSITION_LIMIT, in the mesh or
 * after a finite translation (3e38 + 1.5e38 was stored as an infinite float position; a tet of
 * 1e38 m came back with infinite velocities after one step), and tets so small that the inverse
 * of their lumped mass overflows a float, are rejected with PIOLA_ERROR_INVALID_MESH and one
 * message; a body just inside the limit, and one of 1e-10 m tets, still goes in and steps
 * without NaN. */
void test_add_body_rejects_float_range(piola_test *t) {
  busy_world b;
  if (!busy_world_make(t, &b)) {
    return;
  }
  piola_material mat = piola_default_material();
  int32_t one[4] = {0, 1, 2, 3};
  float p[12];
  piola_tet_mesh tet = {p, 4, one, 1};

  /* The body fuzz target's input: a tet of 3e38 m, as loaded. */
  memset(p, 0, sizeof p);
  p[3] = p[7] = p[11] = 3e38f;
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &tet, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);
  const float shift[3] = {1.5e38f, 1.5e38f, 0.0f};
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &tet, &mat, shift, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);

  /* A unit tet beyond the limit by its translation only, on each axis and both sides. */
  for (int k = 0; k < 6; ++k) {
    memcpy(p, wt_unit_tet, sizeof p);
    float far[3] = {0.0f, 0.0f, 0.0f};
    far[k % 3] = (k < 3 ? 1.0f : -1.0f) * 2.0f * (float)PIOLA_POSITION_LIMIT;
    CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &tet, &mat, far, NULL),
                   PIOLA_ERROR_INVALID_MESH, true);
  }

  /* Tets of 1e-30 m: a lumped mass near 1e-87 kg, whose inverse is no float. */
  for (int i = 0; i < 12; ++i) {
    p[i] = wt_unit_tet[i] * 1e-30f;
  }
  CHECK_REJECTED(t, &b, piola_world_add_tet_body(b.w, &tet, &mat, NULL, NULL),
                 PIOLA_ERROR_INVALID_MESH, true);

  /* Accepted: a unit tet near the limit, and a tet of 1e-10 m; both step without NaN. */
  piola_body_id ids[2];
  const float near[3] = {0.5f * (float)PIOLA_POSITION_LIMIT, 0.0f, 0.0f};
  memcpy(p, wt_unit_tet, sizeof p);
  CHECK_STATUS(t, piola_world_add_tet_body(b.w, &tet, &mat, near, &ids[0]), PIOLA_OK);
  for (int i = 0; i < 12; ++i) {
    p[i] = wt_unit_tet[i] * 1e-10f;
  }
  CHECK_STATUS(t, piola_world_add_tet_body(b.w, &tet, &mat, NULL, &ids[1]), PIOLA_OK);
  for (int step = 0; step < 4; ++step) {
    CHECK_STATUS(t, piola_world_step(b.w), PIOLA_OK);
  }
  for (int k = 0; k < 2; ++k) {
    float x[12], v[12];
    CHECK_STATUS(t, piola_body_get_positions(b.w, ids[k], x, 4), PIOLA_OK);
    CHECK_STATUS(t, piola_body_get_velocities(b.w, ids[k], v, 4), PIOLA_OK);
    for (int i = 0; i < 12; ++i) {
      CHECK_MSG(t, isfinite(x[i]) && isfinite(v[i]), "body %d: x = %g, v = %g", k, (double)x[i],
                (double)v[i]);
    }
  }
  busy_world_free(&b);
}

void test_add_body_rejects_bad_materials(piola_test *t) {
  busy_world b;
  if (!busy_world_make(t, &b)) {
    return;
  }
  enum { CASES = 26 };
  for (int i = 0; i < CASES; ++i) {
    piola_material m = piola_default_material();
    piola_status expected = PIOLA_ERROR_INVALID_MATERIAL;
    switch (i) {
    case 0:
      m.youngs_modulus = 0.0f;
      break;
    case 1:
      m.youngs_modulus = -1e5f;
      break;
    case 2:
      m.youngs_modulus = NAN;
      break;
    case 3:
      m.youngs_modulus = INFINITY;
      break;
    case 4:
      m.poisson_ratio = -0.1f;
      break;
    case 5:
      m.poisson_ratio = 0.5f;
      break;
    case 6:
      m.poisson_ratio = 0.7f;
      break;
    case 7:
      m.poisson_ratio = NAN;
      break;
    case 8:
      m.density = 0.0f;
      break;
    case 9:
      m.density = -1000.0f;
      break;
    case 10:
      m.density = NAN;
      break;
    case 11:
      m.plastic_yield = -0.1f;
      break;
    case 12:
      m.plastic_creep = -1.0f;
      break;
    case 13:
      m.plastic_max = 0.5f;
      break;
    case 14:
      m.plastic_max = -0.1f;
      break;
    case 15:
      m.plastic_creep = NAN;
      break;
    case 16:
      m.plastic_yield = INFINITY;
      break;
    case 17:
      m.model = (piola_model)9;
      break;
    case 18:
      m.solver = (piola_solver)9;
      break;
    case 19:
      m.handle_inversion = (piola_inversion)9;
      break;
    case 20:
      m.internal_cookie = 0;
      expected = PIOLA_ERROR_INVALID_DEF;
      break;
    case 21:
      memset(&m, 0, sizeof m); /* a zeroed struct is not a default-made one */
      expected = PIOLA_ERROR_INVALID_DEF;
      break;
    case 22:
      m.damping = -1e-3f;
      break;
    case 23:
      m.damping = NAN;
      break;
    case 24:
      m.damping = INFINITY;
      break;
    default:
      m.plastic_creep = 10.0f;
      m.plastic_max = 0.6f;
      break;
    }
    wt_snapshot before = wt_snapshot_take(b.w, b.bodies, 2);
    int errors = b.log.count[PIOLA_LOG_ERROR];
    piola_body_id id = {77, 77};
    piola_status s = piola_world_add_tet_body(b.w, &b.box, &m, NULL, &id);
    wt_snapshot after = wt_snapshot_take(b.w, b.bodies, 2);
    CHECK_MSG(t, s == expected, "material case %d: got '%s', expected '%s'", i,
              piola_status_string(s), piola_status_string(expected));
    CHECK_MSG(t, wt_snapshot_equal(&before, &after), "material case %d changed the world", i);
    CHECK_MSG(t, id.index1 == 77 && id.generation == 77, "material case %d wrote the id", i);
    CHECK_MSG(t, b.log.count[PIOLA_LOG_ERROR] == errors + 1, "material case %d: not logged", i);
  }
  /* The boundary values that are valid: nu = 0, yield = 0, creep = 0, max = 0, damping 0 (the
   * default) and a large damping. */
  piola_material ok = piola_default_material();
  CHECK(t, ok.damping == 0.0f);
  piola_material damped = ok;
  damped.damping = 10.0f;
  CHECK_STATUS(t, piola_world_add_tet_body(b.w, &b.box, &damped, NULL, NULL), PIOLA_OK);
  ok.poisson_ratio = 0.0f;
  ok.plastic_yield = 0.0f;
  ok.plastic_max = 0.0f;
  CHECK_STATUS(t, piola_world_add_tet_body(b.w, &b.box, &ok, NULL, NULL), PIOLA_OK);
  CHECK(t, b.misuse == 0);
  busy_world_free(&b);
}

void test_body_arrays_reject_bad_input(piola_test *t) {
  busy_world b;
  if (!busy_world_make(t, &b)) {
    return;
  }
  const piola_body_id id = b.bodies[0];
  const int32_t n = piola_body_get_vertex_count(b.w, id);
  REQUIRE(t, n == b.box.vertex_count);
  float *good = malloc(sizeof *good * 3 * (size_t)n);
  float *bad = malloc(sizeof *bad * 3 * (size_t)n);
  REQUIRE(t, good != NULL && bad != NULL);
  REQUIRE_OK(t, piola_body_get_positions(b.w, id, good, n));

  typedef piola_status (*setter)(piola_world *, piola_body_id, const float *, int32_t);
  typedef piola_status (*getter)(const piola_world *, piola_body_id, float *, int32_t);
  const setter setters[3] = {piola_body_set_positions, piola_body_set_velocities,
                             piola_body_set_inverse_masses};
  const getter getters[3] = {piola_body_get_positions, piola_body_get_velocities,
                             piola_body_get_inverse_masses};
  const int per[3] = {3, 3, 1};
  const int32_t wrong_counts[3] = {0, n - 1, n + 1};
  for (int f = 0; f < 3; ++f) {
    /* Values that would be valid for every field: positive, finite. */
    for (size_t i = 0; i < (size_t)per[f] * (size_t)n; ++i) {
      bad[i] = 0.5f + 0.001f * (float)i;
    }
    for (int c = 0; c < 3; ++c) {
      CHECK_REJECTED(t, &b, setters[f](b.w, id, bad, wrong_counts[c]), PIOLA_ERROR_COUNT_MISMATCH,
                     true);
      /* A failed read leaves the caller's buffer alone. */
      memcpy(good, bad, sizeof *good * (size_t)per[f] * (size_t)n);
      CHECK_REJECTED(t, &b, getters[f](b.w, id, good, wrong_counts[c]), PIOLA_ERROR_COUNT_MISMATCH,
                     true);
      CHECK_MSG(t, memcmp(good, bad, sizeof *good * (size_t)per[f] * (size_t)n) == 0,
                "field %d: a failed read wrote the buffer", f);
    }
    /* A negative count is rejected too (as a count mismatch; piola_types.h lists negative
     * counts under INVALID_ARGUMENT, so only "rejected, unchanged" is asserted). */
    {
      wt_snapshot before = wt_snapshot_take(b.w, b.bodies, 2);
      CHECK_STATUS(t, setters[f](b.w, id, bad, -1), PIOLA_ERROR_INVALID_ARGUMENT);
      CHECK_STATUS(t, getters[f](b.w, id, good, -1), PIOLA_ERROR_INVALID_ARGUMENT);
      wt_snapshot after = wt_snapshot_take(b.w, b.bodies, 2);
      CHECK(t, wt_snapshot_equal(&before, &after));
    }
    /* Non-finite entries anywhere (first, middle, last). */
    const size_t where[3] = {0, (size_t)per[f] * (size_t)n / 2, (size_t)per[f] * (size_t)n - 1};
    const float values[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; ++k) {
      float saved = bad[where[k]];
      bad[where[k]] = values[k];
      CHECK_REJECTED(t, &b, setters[f](b.w, id, bad, n), PIOLA_ERROR_NON_FINITE, true);
      bad[where[k]] = saved;
    }
    /* NULL arrays are misuse. */
    int misuse = b.misuse;
    CHECK_REJECTED(t, &b, setters[f](b.w, id, NULL, n), PIOLA_ERROR_INVALID_ARGUMENT, false);
    CHECK_REJECTED(t, &b, getters[f](b.w, id, NULL, n), PIOLA_ERROR_INVALID_ARGUMENT, false);
    CHECK_MSG(t, b.misuse == misuse + 2, "field %d: NULL array not reported as misuse", f);
    CHECK_STATUS(t, setters[f](NULL, id, bad, n), PIOLA_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(t, getters[f](NULL, id, bad, n), PIOLA_ERROR_INVALID_ARGUMENT);
  }
  /* Negative inverse masses (also -0.0 is fine: it is not < 0). */
  for (int32_t i = 0; i < n; ++i) {
    bad[i] = 0.01f;
  }
  bad[n / 3] = -1e-6f;
  CHECK_REJECTED(t, &b, piola_body_set_inverse_masses(b.w, id, bad, n),
                 PIOLA_ERROR_INVALID_ARGUMENT, true);
  CHECK(t, b.misuse == 4 * 3); /* per field: 2 NULL arrays, 2 negative counts */
  free(good);
  free(bad);
  busy_world_free(&b);
}

void test_stale_and_null_body_ids(piola_test *t) {
  busy_world b;
  if (!busy_world_make(t, &b)) {
    return;
  }
  piola_material mat = piola_default_material();
  piola_body_id removed;
  REQUIRE_OK(t, piola_world_add_tet_body(b.w, &b.box, &mat, NULL, &removed));
  REQUIRE_OK(t, piola_world_remove_body(b.w, removed));
  const int32_t n = b.box.vertex_count;
  float *buf = malloc(sizeof *buf * 3 * (size_t)n);
  REQUIRE(t, buf != NULL);
  for (size_t i = 0; i < 3 * (size_t)n; ++i) {
    buf[i] = 0.25f;
  }
  const piola_body_id ids[4] = {
      removed,                                           /* stale */
      {0, 0},                                            /* null */
      {99, 0},                                           /* no such slot */
      {b.bodies[0].index1, b.bodies[0].generation + 1}}; /* wrong generation */
  const char *names[4] = {"stale", "null", "out of range", "wrong generation"};
  for (int i = 0; i < 4; ++i) {
    piola_body_id id = ids[i];
    CHECK_MSG(t, !piola_body_is_valid(b.w, id), "%s id reported valid", names[i]);
    int misuse = b.misuse;
    CHECK_REJECTED(t, &b, piola_world_remove_body(b.w, id), PIOLA_ERROR_INVALID_BODY, false);
    CHECK_REJECTED(t, &b, piola_body_set_positions(b.w, id, buf, n), PIOLA_ERROR_INVALID_BODY,
                   false);
    CHECK_REJECTED(t, &b, piola_body_set_velocities(b.w, id, buf, n), PIOLA_ERROR_INVALID_BODY,
                   false);
    CHECK_REJECTED(t, &b, piola_body_set_inverse_masses(b.w, id, buf, n), PIOLA_ERROR_INVALID_BODY,
                   false);
    CHECK_REJECTED(t, &b, piola_body_get_positions(b.w, id, buf, n), PIOLA_ERROR_INVALID_BODY,
                   false);
    CHECK_REJECTED(t, &b, piola_body_get_velocities(b.w, id, buf, n), PIOLA_ERROR_INVALID_BODY,
                   false);
    CHECK_REJECTED(t, &b, piola_body_get_inverse_masses(b.w, id, buf, n), PIOLA_ERROR_INVALID_BODY,
                   false);
    CHECK_MSG(t, piola_body_get_vertex_count(b.w, id) == -1, "%s id: vertex count", names[i]);
    /* Every call above went through the misuse hook once; is_valid did not. */
    CHECK_MSG(t, b.misuse == misuse + 8, "%s id: misuse hook called %d times, expected 8", names[i],
              b.misuse - misuse);
  }
  for (size_t i = 0; i < 3 * (size_t)n; ++i) {
    CHECK_MSG(t, buf[i] == 0.25f, "a failed read wrote entry %zu", i);
    if (buf[i] != 0.25f) {
      break;
    }
  }
  CHECK(t, !piola_body_is_valid(NULL, b.bodies[0]));
  CHECK(t, piola_body_get_vertex_count(NULL, b.bodies[0]) == -1);
  CHECK_STATUS(t, piola_world_remove_body(NULL, b.bodies[0]), PIOLA_ERROR_INVALID_ARGUMENT);
  free(buf);
  busy_world_free(&b);
}

void test_collider_defs_rejected(piola_test *t) {
  busy_world b;
  if (!busy_world_make(t, &b)) {
    return;
  }
  enum { CASES = 22 };
  for (int i = 0; i < CASES; ++i) {
    piola_collider_def c = piola_default_collider_def();
    piola_status expected = PIOLA_ERROR_INVALID_ARGUMENT;
    memset(&c.shape, 0, sizeof c.shape);
    c.shape.plane.normal[1] = 1.0f;
    switch (i) {
    case 0: /* zero normal */
      c.shape.plane.normal[1] = 0.0f;
      break;
    case 1:
      c.shape.plane.normal[0] = NAN;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 2:
      c.shape.plane.offset = INFINITY;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 3:
      c.static_friction = -0.1f;
      break;
    case 4:
      c.dynamic_friction = -0.1f;
      break;
    case 5:
      c.static_friction = NAN;
      break;
    case 6:
      c.internal_cookie = 0;
      expected = PIOLA_ERROR_INVALID_DEF;
      break;
    case 7:
      c.type = (piola_collider_type)17;
      break;
    case 8:
      c.type = PIOLA_COLLIDER_SPHERE;
      c.shape.sphere.radius = -1.0f;
      break;
    case 9:
      c.type = PIOLA_COLLIDER_SPHERE;
      c.shape.sphere.radius = 0.0f;
      break;
    case 10:
      c.type = PIOLA_COLLIDER_SPHERE;
      c.shape.sphere.radius = 1.0f;
      c.shape.sphere.center[2] = NAN;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 11:
      c.type = PIOLA_COLLIDER_BOX;
      c.shape.box.half_extents[0] = c.shape.box.half_extents[1] = 1.0f;
      c.shape.box.half_extents[2] = 0.0f;
      c.shape.box.rotation[3] = 1.0f;
      break;
    case 12:
      c.type = PIOLA_COLLIDER_BOX;
      c.shape.box.half_extents[0] = c.shape.box.half_extents[1] = 1.0f;
      c.shape.box.half_extents[2] = 1.0f; /* zero quaternion */
      break;
    case 13:
      c.type = PIOLA_COLLIDER_BOX;
      c.shape.box.half_extents[0] = c.shape.box.half_extents[1] = 1.0f;
      c.shape.box.half_extents[2] = 1.0f;
      c.shape.box.rotation[3] = NAN;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 14:
      c.type = PIOLA_COLLIDER_CAPSULE;
      c.shape.capsule.b[1] = 1.0f;
      c.shape.capsule.radius = -0.5f;
      break;
    case 15:
      c.type = PIOLA_COLLIDER_CAPSULE;
      c.shape.capsule.b[1] = INFINITY;
      c.shape.capsule.radius = 0.5f;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 16: /* zero axis */
      c.type = PIOLA_COLLIDER_FUNNEL;
      c.shape.funnel.base_radius = 0.1f;
      c.shape.funnel.top_radius = 0.5f;
      c.shape.funnel.height = 1.0f;
      break;
    case 17:
      c.type = PIOLA_COLLIDER_FUNNEL;
      c.shape.funnel.axis[1] = 1.0f;
      c.shape.funnel.base_radius = 0.1f;
      c.shape.funnel.top_radius = 0.5f;
      c.shape.funnel.height = 0.0f;
      break;
    case 18:
      c.type = PIOLA_COLLIDER_FUNNEL;
      c.shape.funnel.axis[1] = 1.0f;
      c.shape.funnel.base_radius = -0.1f;
      c.shape.funnel.top_radius = 0.5f;
      c.shape.funnel.height = 1.0f;
      break;
    case 19:
      c.type = PIOLA_COLLIDER_FUNNEL;
      c.shape.funnel.axis[1] = 1.0f;
      c.shape.funnel.base_radius = 0.1f;
      c.shape.funnel.top_radius = NAN;
      c.shape.funnel.height = 1.0f;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    case 20:
      c.dynamic_friction = INFINITY;
      break;
    default:
      c.type = PIOLA_COLLIDER_SPHERE;
      c.shape.sphere.radius = NAN;
      expected = PIOLA_ERROR_NON_FINITE;
      break;
    }
    wt_snapshot before = wt_snapshot_take(b.w, b.bodies, 2);
    piola_collider_id index = {-5, 7};
    piola_status s = piola_world_add_collider(b.w, &c, &index);
    wt_snapshot after = wt_snapshot_take(b.w, b.bodies, 2);
    CHECK_MSG(t, s == expected, "collider case %d: got '%s', expected '%s'", i,
              piola_status_string(s), piola_status_string(expected));
    CHECK_MSG(t, wt_snapshot_equal(&before, &after), "collider case %d changed the world", i);
    CHECK_MSG(t, index.index1 == -5 && index.generation == 7, "collider case %d wrote the id", i);
  }
  /* The plane shortcut: zero normal, NaN offset, negative friction, NULL normal (misuse). */
  CHECK_REJECTED(t, &b,
                 piola_world_add_plane(b.w, (const float[3]){0.0f, 0.0f, 0.0f}, 0.0f, 0.5f, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, true);
  CHECK_REJECTED(t, &b,
                 piola_world_add_plane(b.w, (const float[3]){0.0f, 1.0f, 0.0f}, NAN, 0.5f, NULL),
                 PIOLA_ERROR_NON_FINITE, true);
  CHECK_REJECTED(t, &b,
                 piola_world_add_plane(b.w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, -0.5f, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, true);
  int misuse = b.misuse;
  CHECK_REJECTED(t, &b, piola_world_add_plane(b.w, NULL, 0.0f, 0.5f, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, false);
  CHECK_REJECTED(t, &b, piola_world_add_collider(b.w, NULL, NULL), PIOLA_ERROR_INVALID_ARGUMENT,
                 false);
  CHECK(t, b.misuse == misuse + 2);
  CHECK_STATUS(t, piola_world_add_collider(NULL, NULL, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  /* A valid one goes in, with the next index and a normalised normal. */
  piola_collider_def ok = piola_default_collider_def();
  ok.shape.plane.normal[1] = 5.0f;
  piola_collider_id index = {-1, 0};
  REQUIRE_OK(t, piola_world_add_collider(b.w, &ok, &index));
  CHECK(t, index.index1 == 2 && index.generation == 0);
  CHECK_NEAR(t, b.w->colliders[1].a[1], 1.0, 1e-7);
  busy_world_free(&b);
}

void test_world_settings_reject_bad_input(piola_test *t) {
  busy_world b;
  if (!busy_world_make(t, &b)) {
    return;
  }
  CHECK_REJECTED(t, &b, piola_world_set_iterations(b.w, 0), PIOLA_ERROR_INVALID_ARGUMENT, true);
  CHECK_REJECTED(t, &b, piola_world_set_iterations(b.w, -2), PIOLA_ERROR_INVALID_ARGUMENT, true);
  CHECK_REJECTED(t, &b, piola_world_set_gravity(b.w, (const float[3]){0.0f, NAN, 0.0f}),
                 PIOLA_ERROR_NON_FINITE, true);
  CHECK_REJECTED(t, &b, piola_world_set_gravity(b.w, (const float[3]){INFINITY, 0.0f, 0.0f}),
                 PIOLA_ERROR_NON_FINITE, true);
  CHECK_REJECTED(t, &b, piola_world_set_gravity(b.w, NULL), PIOLA_ERROR_INVALID_ARGUMENT, false);
  CHECK_REJECTED(t, &b, piola_world_get_stats(b.w, NULL), PIOLA_ERROR_INVALID_ARGUMENT, false);
  CHECK_REJECTED(t, &b, piola_world_get_stage_times(b.w, NULL), PIOLA_ERROR_INVALID_ARGUMENT,
                 false);
  piola_kernel_time kt[2];
  CHECK_REJECTED(t, &b, piola_world_get_kernel_times(b.w, NULL, 2, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, false);
  CHECK_REJECTED(t, &b, piola_world_get_kernel_times(b.w, kt, -1, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, false);
  CHECK_REJECTED(t, &b, piola_world_get_color_sizes(b.w, NULL, 3, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, false);
  int32_t sizes[4];
  CHECK_REJECTED(t, &b, piola_world_get_color_sizes(b.w, sizes, -1, NULL),
                 PIOLA_ERROR_INVALID_ARGUMENT, false);
  piola_stats st;
  double ms[PIOLA_STAGE_COUNT];
  CHECK_STATUS(t, piola_world_step(NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_finish(NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_set_iterations(NULL, 3), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_set_gravity(NULL, (const float[3]){0.0f, 0.0f, 0.0f}),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_get_stats(NULL, &st), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_get_stage_times(NULL, ms), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_get_kernel_times(NULL, kt, 2, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  int32_t kernels = -1; /* the CPU reference launches no kernels */
  CHECK_STATUS(t, piola_world_get_kernel_times(b.w, kt, 2, &kernels), PIOLA_OK);
  CHECK(t, kernels == 0);
  CHECK_STATUS(t, piola_world_get_color_sizes(NULL, sizes, 4, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  /* The valid calls change exactly what they say. */
  REQUIRE_OK(t, piola_world_set_iterations(b.w, 7));
  CHECK(t, b.w->def.iterations == 7);
  REQUIRE_OK(t, piola_world_set_gravity(b.w, (const float[3]){1.0f, 2.0f, 3.0f}));
  CHECK(t,
        b.w->def.gravity[0] == 1.0f && b.w->def.gravity[1] == 2.0f && b.w->def.gravity[2] == 3.0f);
  CHECK(t, b.misuse == 0);
  busy_world_free(&b);
}

/* ---- Reoriented tets -------------------------------------------------------------------- */

void test_negative_rest_volume_is_reoriented(piola_test *t) {
  /* One tet listed with negative orientation. */
  piola_test_log log;
  int misuse = 0;
  piola_world *w = wt_world(t, &log, &misuse, 0.005f, 1, 5, 0.0f, false);
  REQUIRE(t, w != NULL);
  int32_t flipped[4] = {0, 2, 1, 3};
  piola_tet_mesh one = {(float *)wt_unit_tet, 4, flipped, 1};
  REQUIRE(t, wt_signed_volume(&one, wt_unit_tet) < 0.0);
  piola_material mat = piola_default_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &one, &mat, NULL, &id));
  CHECK(t, log.count[PIOLA_LOG_WARNING] == 1);
  CHECK_MSG(t, strstr(log.last, "reoriented") != NULL, "warning: %s", log.last);
  CHECK(t, log.count[PIOLA_LOG_ERROR] == 0);
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.inverted_tets == 0);
  /* Zero up to the rounding of Dm^-1 (F = I + O(1e-16)). */
  CHECK_MSG(t, st.elastic_energy < 1e-20, "energy at rest %.3g J", st.elastic_energy);
  /* At rest it stays exactly at rest. */
  for (int i = 0; i < 20; ++i) {
    REQUIRE_OK(t, piola_world_step(w));
  }
  float xyz[12];
  REQUIRE_OK(t, piola_body_get_positions(w, id, xyz, 4));
  CHECK(t, memcmp(xyz, wt_unit_tet, sizeof xyz) == 0);
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.inverted_tets == 0 && st.active_tets == 0 && st.elastic_energy < 1e-20);
  piola_world_destroy(w);

  /* A whole box with every tet flipped behaves like the box itself: one warning for all of
   * them, and from the same squashed start the same motion (up to rounding). */
  piola_tet_mesh box;
  REQUIRE_OK(t, make_small_box(&box));
  int32_t *tets = malloc(sizeof *tets * 4 * (size_t)box.tet_count);
  float *squashed = malloc(sizeof *squashed * 3 * (size_t)box.vertex_count);
  REQUIRE(t, tets != NULL && squashed != NULL);
  for (int32_t i = 0; i < box.tet_count; ++i) {
    const int32_t *q = box.tets + 4 * (size_t)i;
    int32_t *r = tets + 4 * (size_t)i;
    r[0] = q[1];
    r[1] = q[0];
    r[2] = q[2];
    r[3] = q[3];
  }
  for (int32_t i = 0; i < box.vertex_count; ++i) {
    squashed[3 * i] = box.positions[3 * i];
    squashed[3 * i + 1] = 0.6f * box.positions[3 * i + 1];
    squashed[3 * i + 2] = box.positions[3 * i + 2];
  }
  piola_tet_mesh flipped_box = box;
  flipped_box.tets = tets;
  float *result[2] = {NULL, NULL};
  for (int k = 0; k < 2; ++k) {
    w = wt_world(t, &log, &misuse, 0.005f, 1, 5, 0.0f, false);
    REQUIRE(t, w != NULL);
    REQUIRE_OK(t, piola_world_add_tet_body(w, k == 0 ? &box : &flipped_box, &mat, NULL, &id));
    CHECK(t, log.count[PIOLA_LOG_WARNING] == k);
    REQUIRE_OK(t, piola_body_set_positions(w, id, squashed, box.vertex_count));
    for (int i = 0; i < 100; ++i) {
      REQUIRE_OK(t, piola_world_step(w));
    }
    result[k] = wt_get_positions(w, id);
    REQUIRE(t, result[k] != NULL);
    REQUIRE_OK(t, piola_world_get_stats(w, &st));
    CHECK(t, st.inverted_tets == 0);
    piola_world_destroy(w);
  }
  double worst = 0.0;
  for (size_t i = 0; i < 3 * (size_t)box.vertex_count; ++i) {
    worst = fmax(worst, fabs((double)result[0][i] - (double)result[1][i]));
  }
  CHECK_MSG(t, worst < 1e-5, "flipped box deviates from the box by %.3g m", worst);
  /* And it recovered from the squash like the original (rest volume within 1%). */
  double v = wt_signed_volume(&box, result[1]), v0 = wt_signed_volume(&box, box.positions);
  CHECK_MSG(t, fabs(v / v0 - 1.0) < 0.01, "flipped box volume %.4f of rest", v / v0);
  CHECK(t, misuse == 0);
  free(result[0]);
  free(result[1]);
  free(tets);
  free(squashed);
  piola_mesh_free(&box);
}

/* ---- Removing bodies ---------------------------------------------------------------------- */

void test_remove_body(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world *w = wt_world(t, &log, &misuse, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  piola_tet_mesh box;
  REQUIRE_OK(t, make_small_box(&box));
  const int32_t cells[3] = {2, 2, 2};
  const float size[3] = {0.3f, 0.3f, 0.3f};
  piola_tet_mesh small;
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &small));
  piola_material mat = piola_default_material();
  piola_material soft = piola_default_material();
  soft.youngs_modulus = 2e4f;
  piola_body_id a, b, c;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, (const float[3]){0.0f, 0.2f, 0.0f}, &a));
  REQUIRE_OK(t, piola_world_add_tet_body(w, &small, &soft, (const float[3]){2.0f, 0.5f, 0.0f}, &b));
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, (const float[3]){4.0f, 0.8f, 0.0f}, &c));
  REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL));
  for (int i = 0; i < 30; ++i) {
    REQUIRE_OK(t, piola_world_step(w));
  }
  const int32_t na = box.vertex_count, nb = small.vertex_count;
  float *pa = malloc(sizeof(float) * 3 * (size_t)na), *va = malloc(sizeof(float) * 3 * (size_t)na);
  float *pc = malloc(sizeof(float) * 3 * (size_t)na), *vc = malloc(sizeof(float) * 3 * (size_t)na);
  float *wa = malloc(sizeof(float) * (size_t)na), *buf = malloc(sizeof(float) * 3 * (size_t)na);
  REQUIRE(t, pa && va && pc && vc && wa && buf);
  REQUIRE_OK(t, piola_body_get_positions(w, a, pa, na));
  REQUIRE_OK(t, piola_body_get_velocities(w, a, va, na));
  REQUIRE_OK(t, piola_body_get_positions(w, c, pc, na));
  REQUIRE_OK(t, piola_body_get_velocities(w, c, vc, na));
  REQUIRE_OK(t, piola_body_get_inverse_masses(w, c, wa, na));
  piola_stats before;
  REQUIRE_OK(t, piola_world_get_stats(w, &before));
  CHECK(t, before.body_count == 3 && before.vertex_count == 2 * na + nb);

  REQUIRE_OK(t, piola_world_remove_body(w, b));
  piola_stats after;
  REQUIRE_OK(t, piola_world_get_stats(w, &after));
  CHECK(t, after.body_count == 2);
  CHECK(t, after.vertex_count == 2 * na);
  CHECK(t, after.tet_count == 2 * box.tet_count);
  CHECK(t, after.collider_count == 1);
  CHECK(t, piola_body_is_valid(w, a) && piola_body_is_valid(w, c));
  CHECK(t, !piola_body_is_valid(w, b));
  int m0 = misuse;
  CHECK_STATUS(t, piola_body_get_positions(w, b, buf, nb), PIOLA_ERROR_INVALID_BODY);
  CHECK_STATUS(t, piola_world_remove_body(w, b), PIOLA_ERROR_INVALID_BODY);
  CHECK(t, misuse == m0 + 2);
  /* The others keep their state exactly (body c moved down in the vertex arrays). */
  REQUIRE_OK(t, piola_body_get_positions(w, a, buf, na));
  CHECK(t, memcmp(buf, pa, sizeof(float) * 3 * (size_t)na) == 0);
  REQUIRE_OK(t, piola_body_get_velocities(w, a, buf, na));
  CHECK(t, memcmp(buf, va, sizeof(float) * 3 * (size_t)na) == 0);
  REQUIRE_OK(t, piola_body_get_positions(w, c, buf, na));
  CHECK(t, memcmp(buf, pc, sizeof(float) * 3 * (size_t)na) == 0);
  REQUIRE_OK(t, piola_body_get_velocities(w, c, buf, na));
  CHECK(t, memcmp(buf, vc, sizeof(float) * 3 * (size_t)na) == 0);
  REQUIRE_OK(t, piola_body_get_inverse_masses(w, c, buf, na));
  CHECK(t, memcmp(buf, wa, sizeof(float) * (size_t)na) == 0);
  CHECK(t, w->bodies[c.index1 - 1].vertex_offset == na);

  /* The simulation goes on exactly as if the removed body had never been there: bodies do
   * not interact, so a world of a and c alone gives the same bits. */
  piola_world *ref = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, ref != NULL);
  piola_body_id ra, rc;
  REQUIRE_OK(t, piola_world_add_tet_body(ref, &box, &mat, (const float[3]){0.0f, 0.2f, 0.0f}, &ra));
  REQUIRE_OK(t, piola_world_add_tet_body(ref, &box, &mat, (const float[3]){4.0f, 0.8f, 0.0f}, &rc));
  REQUIRE_OK(t, piola_world_add_plane(ref, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL));
  for (int i = 0; i < 30; ++i) {
    REQUIRE_OK(t, piola_world_step(ref));
  }
  for (int i = 0; i < 300; ++i) {
    REQUIRE_OK(t, piola_world_step(w));
    REQUIRE_OK(t, piola_world_step(ref));
  }
  const piola_body_id live[2] = {a, c}, alone[2] = {ra, rc};
  CHECK(t, wt_positions_hash(w, live, 2) == wt_positions_hash(ref, alone, 2));
  piola_world_destroy(ref);
  REQUIRE_OK(t, piola_world_get_stats(w, &after));
  CHECK(t, after.tet_count == 2 * box.tet_count && after.color_count > 0);
  CHECK(t, isfinite(after.elastic_energy) && isfinite(after.kinetic_energy));
  REQUIRE_OK(t, piola_body_get_positions(w, c, buf, na));
  double lowest = 1e9;
  for (int32_t i = 0; i < na; ++i) {
    lowest = fmin(lowest, buf[3 * i + 1]);
  }
  CHECK_MSG(t, lowest > -1e-4 && lowest < 0.05, "body c lowest point %.4g m", lowest);

  /* A new body takes the freed slot with a new generation; the old id stays stale. */
  piola_body_id d;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &small, &mat, (const float[3]){6.0f, 0.5f, 0.0f}, &d));
  CHECK(t, d.index1 == b.index1);
  CHECK(t, d.generation != b.generation);
  CHECK(t, piola_body_is_valid(w, d) && !piola_body_is_valid(w, b));
  CHECK(t, piola_body_get_vertex_count(w, d) == nb);
  /* Removing every body leaves an empty world that still steps. */
  REQUIRE_OK(t, piola_world_remove_body(w, a));
  REQUIRE_OK(t, piola_world_remove_body(w, c));
  REQUIRE_OK(t, piola_world_remove_body(w, d));
  REQUIRE_OK(t, piola_world_step(w));
  REQUIRE_OK(t, piola_world_get_stats(w, &after));
  CHECK(t, after.body_count == 0 && after.vertex_count == 0 && after.tet_count == 0);
  CHECK(t, after.color_count == 0 && after.elastic_energy == 0.0);
  free(pa);
  free(va);
  free(pc);
  free(vc);
  free(wa);
  free(buf);
  piola_mesh_free(&box);
  piola_mesh_free(&small);
  piola_world_destroy(w);
}

/* ---- Statistics ------------------------------------------------------------------------ */

void test_stats(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world *w = wt_world(t, &log, &misuse, 0.005f, 1, 5, 0.0f, false);
  REQUIRE(t, w != NULL);
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.body_count == 0 && st.vertex_count == 0 && st.tet_count == 0);
  CHECK(t, st.color_count == 0 && st.largest_color == 0 && st.smallest_color == 0);
  CHECK(t, st.backend == PIOLA_BACKEND_CPU_REFERENCE && st.device_bytes == 0);
  CHECK(t, st.elastic_energy == 0.0 && st.kinetic_energy == 0.0);

  piola_tet_mesh box, creature;
  REQUIRE_OK(t, make_small_box(&box));
  REQUIRE_OK(t, piola_mesh_make_creature(3.0f, &creature));
  piola_material mat = piola_default_material();
  piola_body_id a, b;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, NULL, &a));
  /* No translation (bodies do not collide with each other), so that the rest positions are
   * exactly the mesh's floats and can be set back through the float API below. */
  REQUIRE_OK(t, piola_world_add_tet_body(w, &creature, &mat, NULL, &b));
  REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, -1.0f, 0.5f, NULL));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.body_count == 2);
  CHECK(t, st.vertex_count == box.vertex_count + creature.vertex_count);
  CHECK(t, st.tet_count == box.tet_count + creature.tet_count);
  CHECK(t, st.collider_count == 1);
  CHECK(t, st.step_count == 0 && st.simulated_time == 0.0);
  /* At rest: no energy (up to the rounding of Dm^-1), nothing inverted, nothing active. */
  CHECK_MSG(t, st.elastic_energy < 1e-12, "energy at rest %.3g J", st.elastic_energy);
  CHECK(t, st.kinetic_energy == 0.0);
  CHECK(t, st.inverted_tets == 0 && st.active_tets == 0);

  /* Color sizes: the world's colors are the bodies' colors merged. */
  int32_t count = -1;
  REQUIRE_OK(t, piola_world_get_color_sizes(w, NULL, 0, &count));
  CHECK(t, count == st.color_count && count > 0);
  int32_t *sizes = calloc((size_t)count + 1, sizeof *sizes);
  REQUIRE(t, sizes != NULL);
  sizes[count] = -7;
  REQUIRE_OK(t, piola_world_get_color_sizes(w, sizes, count + 1, NULL));
  CHECK(t, sizes[count] == -7); /* only color_count entries written */
  int64_t sum = 0;
  int32_t lo = INT32_MAX, hi = 0;
  for (int32_t c = 0; c < count; ++c) {
    sum += sizes[c];
    lo = sizes[c] < lo ? sizes[c] : lo;
    hi = sizes[c] > hi ? sizes[c] : hi;
  }
  CHECK(t, sum == st.tet_count);
  CHECK(t, lo == st.smallest_color && hi == st.largest_color);
  /* A short buffer gets the first entries. */
  int32_t two[2] = {-1, -1};
  REQUIRE_OK(t, piola_world_get_color_sizes(w, two, 2, &count));
  CHECK(t, two[0] == sizes[0] && two[1] == sizes[1]);

  /* Deform: mirror the box through its mid-plane y = 0.2 (every tet inverted), squash the
   * creature to 70% height. */
  float *pb = wt_get_positions(w, a), *pc = wt_get_positions(w, b);
  REQUIRE(t, pb != NULL && pc != NULL);
  for (int32_t i = 0; i < box.vertex_count; ++i) {
    pb[3 * i + 1] = 0.4f - pb[3 * i + 1];
  }
  for (int32_t i = 0; i < creature.vertex_count; ++i) {
    pc[3 * i + 1] *= 0.7f;
  }
  REQUIRE_OK(t, piola_body_set_positions(w, a, pb, box.vertex_count));
  REQUIRE_OK(t, piola_body_set_positions(w, b, pc, creature.vertex_count));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK_MSG(t, st.inverted_tets == box.tet_count, "inverted %d of %d", st.inverted_tets,
            box.tet_count);
  CHECK(t, st.elastic_energy > 0.0);
  CHECK(t, st.active_tets == 0); /* no step yet */

  REQUIRE_OK(t, piola_world_step(w));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.step_count == 1);
  CHECK_NEAR(t, st.simulated_time, 0.005, 1e-9);
  CHECK_MSG(t, st.active_tets > st.tet_count / 2, "active %d of %d after a step", st.active_tets,
            st.tet_count);
  CHECK(t, st.active_tets <= st.tet_count);
  CHECK(t, st.kinetic_energy > 0.0);
  CHECK(t, st.last_step_ms >= 0.0);
  CHECK(t, st.stage_ms[PIOLA_STAGE_SOLVE_TETS] > 0.0);
  CHECK(t, st.stage_ms[PIOLA_STAGE_PLASTICITY] == 0.0);
  double ms[PIOLA_STAGE_COUNT];
  REQUIRE_OK(t, piola_world_get_stage_times(w, ms));
  CHECK(t, memcmp(ms, st.stage_ms, sizeof ms) == 0);
  CHECK(t, strstr(st.device_name, "CPU") != NULL);

  /* Back at rest (rest positions, zero velocity) the next step does no work. The two meshes
   * overlap where they were made (both at the origin): the box collides with nothing, the
   * creature with itself only, which at rest must not act either. */
  REQUIRE_OK(t, piola_body_set_collision_filter(w, a, 1u, 0u));
  float *zero = calloc(3 * (size_t)creature.vertex_count, sizeof *zero);
  REQUIRE(t, zero != NULL);
  REQUIRE_OK(t, piola_body_set_positions(w, a, box.positions, box.vertex_count));
  REQUIRE_OK(t, piola_body_set_velocities(w, a, zero, box.vertex_count));
  REQUIRE_OK(t, piola_body_set_positions(w, b, creature.positions, creature.vertex_count));
  REQUIRE_OK(t, piola_body_set_velocities(w, b, zero, creature.vertex_count));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.inverted_tets == 0);
  CHECK_MSG(t, st.elastic_energy < 1e-6, "energy at rest %.3g J", st.elastic_energy);
  CHECK(t, st.kinetic_energy == 0.0);
  REQUIRE_OK(t, piola_world_step(w));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK_MSG(t, st.active_tets == 0, "active %d at rest", st.active_tets);
  CHECK(t, st.step_count == 2);
  CHECK(t, misuse == 0);
  free(sizes);
  free(pb);
  free(pc);
  free(zero);
  piola_mesh_free(&box);
  piola_mesh_free(&creature);
  piola_world_destroy(w);
}

/* ---- Coloring ---------------------------------------------------------------------------- */

typedef struct coloring_figures {
  int32_t colors, max_degree, smallest, largest;
} coloring_figures;

/* Colors a mesh with piola_color_tets, checks the coloring, returns its figures. */
static coloring_figures check_mesh_coloring(piola_test *t, const char *name,
                                            const piola_tet_mesh *m) {
  coloring_figures f = {0, 0, 0, 0};
  int32_t *colors = malloc(sizeof *colors * (size_t)m->tet_count);
  if (colors == NULL) {
    CHECK(t, colors != NULL);
    return f;
  }
  piola_status s = piola_color_tets(m->tets, m->tet_count, m->vertex_count, 0, colors, &f.colors);
  CHECK_MSG(t, s == PIOLA_OK, "%s: %s", name, piola_status_string(s));
  CHECK_MSG(t, piola_coloring_is_valid(m->tets, m->tet_count, m->vertex_count, colors),
            "%s: invalid coloring", name);
  f.max_degree = wt_max_vertex_degree(m);
  CHECK_MSG(t, f.colors >= f.max_degree, "%s: %d colors below the bound %d", name, f.colors,
            f.max_degree);
  int32_t *size = calloc((size_t)f.colors, sizeof *size);
  if (size != NULL) {
    for (int32_t i = 0; i < m->tet_count; ++i) {
      CHECK_MSG(t, colors[i] >= 0 && colors[i] < f.colors, "%s: color %d", name, colors[i]);
      if (colors[i] >= 0 && colors[i] < f.colors) {
        size[colors[i]]++;
      }
    }
    f.smallest = INT32_MAX;
    for (int32_t c = 0; c < f.colors; ++c) {
      f.smallest = size[c] < f.smallest ? size[c] : f.smallest;
      f.largest = size[c] > f.largest ? size[c] : f.largest;
    }
    free(size);
  }
  /* The checker itself: giving a tet the color of a tet that shares a vertex breaks it. */
  for (int32_t i = 1; i < m->tet_count; ++i) {
    bool shares = false;
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        shares = shares || m->tets[4 * (size_t)i + a] == m->tets[b];
      }
    }
    if (shares) {
      int32_t saved = colors[i];
      colors[i] = colors[0];
      CHECK_MSG(t, !piola_coloring_is_valid(m->tets, m->tet_count, m->vertex_count, colors),
                "%s: a conflicting coloring passed the check", name);
      colors[i] = saved;
      break;
    }
  }
  printf("  %s: %d tets, %d colors (max vertex degree %d), color sizes %d..%d\n", name,
         (int)m->tet_count, (int)f.colors, (int)f.max_degree, (int)f.smallest, (int)f.largest);
  free(colors);
  return f;
}

void test_coloring_of_meshes(piola_test *t) {
  piola_tet_mesh m;
  const int32_t cells[3] = {6, 3, 3};
  const float size[3] = {2.0f, 1.0f, 1.0f};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &m));
  coloring_figures f = check_mesh_coloring(t, "box 6x3x3", &m);
  /* Measured: 30 colors for degree 24, sizes 10..11. */
  CHECK(t, f.colors <= f.max_degree + f.max_degree / 4);
  CHECK(t, f.largest <= f.smallest + 2);
  piola_mesh_free(&m);

  REQUIRE_OK(t, piola_mesh_make_creature(3.0f, &m));
  f = check_mesh_coloring(t, "creature", &m);
  /* Measured: 30 colors for degree 24, sizes 123..124 (balanced to within one tet). */
  CHECK(t, f.colors <= f.max_degree + f.max_degree / 4);
  CHECK_MSG(t, (double)f.largest <= 1.05 * f.smallest, "creature colors %d..%d", f.smallest,
            f.largest);
  piola_mesh_free(&m);

  if (wt_load_armadillo(&m)) {
    f = check_mesh_coloring(t, "armadillo", &m);
    /* Measured: 60 colors, the lower bound (the design notes: 60 in mesh order), 61..62. */
    CHECK_MSG(t, f.colors <= 64, "armadillo: %d colors", f.colors);
    CHECK_MSG(t, (double)f.largest <= 1.05 * f.smallest, "armadillo colors %d..%d", f.smallest,
              f.largest);
    piola_mesh_free(&m);
  } else {
    printf("  (no Armadillo data: skipped its coloring)\n");
  }

  /* Edge cases: no tets; one tet; two tets sharing a face need two colors. */
  int32_t count = -1, colors[2] = {-1, -1};
  REQUIRE_OK(t, piola_color_tets(NULL, 0, 0, 0, colors, &count));
  CHECK(t, count == 0);
  const int32_t two[8] = {0, 1, 2, 3, 1, 2, 3, 4};
  REQUIRE_OK(t, piola_color_tets(two, 2, 5, 0, colors, &count));
  CHECK(t, count == 2 && colors[0] != colors[1]);
  const int32_t apart[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  REQUIRE_OK(t, piola_color_tets(apart, 2, 8, 0, colors, &count));
  CHECK(t, count == 1 && colors[0] == 0 && colors[1] == 0);
}

void test_world_color_ranges(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world *w = wt_world(t, &log, &misuse, 0.005f, 1, 5, 0.0f, false);
  REQUIRE(t, w != NULL);
  piola_tet_mesh meshes[3];
  int32_t mesh_count = 0;
  const int32_t cells[3] = {4, 3, 2};
  const float size[3] = {1.0f, 0.7f, 0.5f};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &meshes[mesh_count++]));
  REQUIRE_OK(t, piola_mesh_make_creature(3.0f, &meshes[mesh_count++]));
  if (wt_load_armadillo(&meshes[mesh_count])) {
    mesh_count++;
  } else {
    REQUIRE_OK(t, piola_mesh_make_creature(2.0f, &meshes[mesh_count++]));
  }
  piola_material mat = piola_default_material();
  piola_body_id ids[4];
  int32_t total = 0;
  for (int32_t i = 0; i < 4; ++i) {
    const piola_tet_mesh *m = &meshes[i % mesh_count];
    const float at[3] = {4.0f * (float)i, 0.0f, 0.0f};
    REQUIRE_OK(t, piola_world_add_tet_body(w, m, &mat, at, &ids[i]));
    total += m->tet_count;
  }
  REQUIRE_OK(t, piola_world_build_tets(w));
  REQUIRE(t, w->solver.tet_count == total);
  /* The ranges tile [0, tet_count) in order. */
  int32_t next = 0;
  for (int32_t c = 0; c < w->solver.color_count; ++c) {
    CHECK_MSG(t, w->solver.color_first[c] == next, "color %d starts at %d, expected %d", c,
              w->solver.color_first[c], next);
    CHECK(t, w->solver.color_size[c] > 0);
    next = w->solver.color_first[c] + w->solver.color_size[c];
  }
  CHECK(t, next == w->solver.tet_count);
  /* No two tets of a range share a vertex. */
  int32_t *stamp = malloc(sizeof *stamp * (size_t)w->vertex_count);
  REQUIRE(t, stamp != NULL);
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    stamp[i] = -1;
  }
  int32_t conflicts = 0;
  for (int32_t c = 0; c < w->solver.color_count; ++c) {
    for (int32_t k = w->solver.color_first[c];
         k < w->solver.color_first[c] + w->solver.color_size[c]; ++k) {
      for (int a = 0; a < 4; ++a) {
        int32_t v = w->solver.tet_vertices[4 * (size_t)k + a];
        if (v < 0 || v >= w->vertex_count || stamp[v] == c) {
          conflicts++;
        } else {
          stamp[v] = c;
        }
      }
    }
  }
  CHECK_MSG(t, conflicts == 0, "%d vertex conflicts within color ranges", conflicts);
  /* Every tet of every body appears exactly once, with its own vertices. */
  int32_t *seen = calloc((size_t)total, sizeof *seen);
  REQUIRE(t, seen != NULL);
  int32_t mismatches = 0;
  int32_t base[4];
  for (int32_t i = 0, acc = 0; i < 4; ++i) {
    base[i] = acc;
    acc += meshes[i % mesh_count].tet_count;
  }
  for (int32_t k = 0; k < w->solver.tet_count; ++k) {
    int32_t slot = w->solver.tet_body[k], local = w->solver.tet_local[k];
    int32_t i = slot; /* bodies were added in order into slots 0..3 */
    const piola_tet_mesh *m = &meshes[i % mesh_count];
    if (i < 0 || i >= 4 || local < 0 || local >= m->tet_count) {
      mismatches++;
      continue;
    }
    seen[base[i] + local]++;
    const piola_body *body = &w->bodies[slot];
    /* The body's own (positively oriented) copy: same vertex set as the mesh's tet. */
    int32_t found = 0;
    for (int a = 0; a < 4; ++a) {
      int32_t v = w->solver.tet_vertices[4 * (size_t)k + a] - body->vertex_offset;
      for (int b = 0; b < 4; ++b) {
        found += v == m->tets[4 * (size_t)local + b];
      }
    }
    mismatches += found != 4;
  }
  int32_t wrong_counts = 0;
  for (int32_t k = 0; k < total; ++k) {
    wrong_counts += seen[k] != 1;
  }
  CHECK_MSG(t, mismatches == 0, "%d tets with wrong vertices or body", mismatches);
  CHECK_MSG(t, wrong_counts == 0, "%d tets not present exactly once", wrong_counts);
  /* The API's color sizes are these ranges. */
  int32_t count = 0;
  int32_t *sizes = malloc(sizeof *sizes * (size_t)w->solver.color_count);
  REQUIRE(t, sizes != NULL);
  REQUIRE_OK(t, piola_world_get_color_sizes(w, sizes, w->solver.color_count, &count));
  CHECK(t, count == w->solver.color_count);
  CHECK(t, memcmp(sizes, w->solver.color_size, sizeof *sizes * (size_t)count) == 0);
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  printf("  world of %d bodies: %d tets in %d colors, sizes %d..%d\n", (int)st.body_count,
         (int)st.tet_count, (int)st.color_count, (int)st.smallest_color, (int)st.largest_color);
  /* Bodies are colored one by one and merged by color index: the world has as many colors as
   * its most colorful body (no extra launches), and color c holds every body's color c. (So
   * the merged sizes are not balanced across bodies of different color counts: measured
   * 61..198 for box, creature, Armadillo, box.) */
  int32_t most = 0;
  for (int32_t i = 0; i < 4; ++i) {
    const piola_body *body = &w->bodies[ids[i].index1 - 1];
    most = body->color_count > most ? body->color_count : most;
  }
  CHECK(t, w->solver.color_count == most);
  for (int32_t c = 0; c < w->solver.color_count; ++c) {
    int32_t expected = 0;
    for (int32_t i = 0; i < 4; ++i) {
      const piola_body *body = &w->bodies[ids[i].index1 - 1];
      expected += c < body->color_count ? body->color_start[c + 1] - body->color_start[c] : 0;
    }
    CHECK_MSG(t, w->solver.color_size[c] == expected, "color %d: %d tets, expected %d", c,
              w->solver.color_size[c], expected);
  }
  /* Within a color a body's tets come in Morton order of their rest centroids (bodies of up to
   * PIOLA_SPATIAL_ORDER_MAX_TETS tets; these are all smaller). */
  int32_t out_of_order = 0;
  for (int32_t i = 0; i < 4; ++i) {
    const piola_tet_mesh *m = &meshes[i % mesh_count];
    REQUIRE(t, m->tet_count <= PIOLA_SPATIAL_ORDER_MAX_TETS);
    const piola_body *body = &w->bodies[ids[i].index1 - 1];
    const float at[3] = {4.0f * (float)i, 0.0f, 0.0f};
    int32_t *rank = wt_spatial_rank(body->tets, body->tet_count, m->positions, at);
    REQUIRE(t, rank != NULL);
    for (int32_t c = 0; c < body->color_count; ++c) {
      for (int32_t j = body->color_start[c] + 1; j < body->color_start[c + 1]; ++j) {
        out_of_order += rank[body->by_color[j]] < rank[body->by_color[j - 1]];
      }
    }
    free(rank);
  }
  CHECK_MSG(t, out_of_order == 0, "%d tets out of Morton order within their colors", out_of_order);
  free(sizes);
  free(seen);
  free(stamp);
  for (int32_t i = 0; i < mesh_count; ++i) {
    piola_mesh_free(&meshes[i]);
  }
  piola_world_destroy(w);
}

/* A body of more than PIOLA_SPATIAL_ORDER_MAX_TETS tets keeps the mesh's order within a color. */
void test_world_large_body_mesh_order(piola_test *t) {
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, false);
  REQUIRE(t, w != NULL);
  piola_tet_mesh m;
  const int32_t cells[3] = {16, 16, 12}; /* 18432 tets */
  const float size[3] = {1.6f, 1.6f, 1.2f};
  REQUIRE_OK(t, piola_mesh_make_box(cells, size, &m));
  REQUIRE(t, m.tet_count > PIOLA_SPATIAL_ORDER_MAX_TETS);
  piola_material mat = piola_default_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &m, &mat, NULL, &id));
  const piola_body *body = &w->bodies[id.index1 - 1];
  int32_t out_of_order = 0, total = 0;
  for (int32_t c = 0; c <= body->color_count; ++c) { /* the Jacobi tets (none) last */
    const int32_t end = c < body->color_count ? body->color_start[c + 1] : body->tet_count;
    for (int32_t j = body->color_start[c]; j < end; ++j, ++total) {
      out_of_order += j > body->color_start[c] && body->by_color[j] < body->by_color[j - 1];
    }
  }
  CHECK(t, total == m.tet_count);
  CHECK_MSG(t, out_of_order == 0, "%d tets out of mesh order within their colors", out_of_order);
  /* And the body steps. */
  REQUIRE_OK(t, piola_world_step(w));
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK(t, st.tet_count == m.tet_count && st.inverted_tets == 0);
  piola_mesh_free(&m);
  piola_world_destroy(w);
}

/* ---- Determinism --------------------------------------------------------------------------- */

/* Three creatures dropped on a plane, 50 steps; returns the FNV-1a of the final positions. */
static uint64_t creature_scene_hash(piola_test *t, float nudge, uint64_t *after_one_step) {
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, 0.0f, true);
  if (w == NULL) {
    return 0;
  }
  piola_tet_mesh m;
  if (piola_mesh_make_creature(3.0f, &m) != PIOLA_OK) {
    piola_world_destroy(w);
    return 0;
  }
  piola_material soft = piola_default_material();
  soft.model = PIOLA_MODEL_NEOHOOKEAN;
  piola_material stiff = piola_default_material();
  stiff.youngs_modulus = 1e6f;
  piola_body_id ids[3];
  for (int i = 0; i < 3; ++i) {
    const float at[3] = {3.0f * (float)i + (i == 1 ? nudge : 0.0f), 0.3f + 0.2f * (float)i, 0.0f};
    piola_world_add_tet_body(w, &m, i == 1 ? &soft : &stiff, at, &ids[i]);
  }
  piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL);
  /* Start squashed so that the bodies deform from the first step. */
  float *p = wt_get_positions(w, ids[0]);
  if (p != NULL) {
    for (int32_t i = 0; i < m.vertex_count; ++i) {
      p[3 * i + 1] = 0.3f + 0.6f * (p[3 * i + 1] - 0.3f);
    }
    piola_body_set_positions(w, ids[0], p, m.vertex_count);
    free(p);
  }
  for (int s = 0; s < 50; ++s) {
    piola_world_step(w);
    if (s == 0 && after_one_step != NULL) {
      *after_one_step = wt_positions_hash(w, ids, 3);
    }
  }
  uint64_t h = wt_positions_hash(w, ids, 3);
  piola_mesh_free(&m);
  piola_world_destroy(w);
  return h;
}

void test_determinism_hash(piola_test *t) {
  uint64_t first_a = 0, first_b = 0;
  uint64_t a = creature_scene_hash(t, 0.0f, &first_a);
  uint64_t b = creature_scene_hash(t, 0.0f, &first_b);
  printf("  final state hash %016llx\n", (unsigned long long)a);
  CHECK(t, a != 0 && first_a != 0);
  CHECK_MSG(t, a == b, "two identical worlds differ: %016llx vs %016llx", (unsigned long long)a,
            (unsigned long long)b);
  CHECK(t, first_a == first_b);
  CHECK(t, first_a != a); /* the state evolves */
  /* The hash sees a 1 mm change of one body's start. */
  CHECK(t, creature_scene_hash(t, 0.001f, NULL) != a);
}

/* ---- Pinned vertices ------------------------------------------------------------------------ */

void test_pinned_vertices(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world *w = wt_world(t, &log, &misuse, 0.005f, 1, 5, 0.0f, true);
  REQUIRE(t, w != NULL);
  piola_tet_mesh box;
  REQUIRE_OK(t, make_small_box(&box));
  const int32_t n = box.vertex_count;
  piola_material mat = piola_default_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, (const float[3]){0.0f, 1.0f, 0.0f}, &id));
  float *inv = malloc(sizeof *inv * (size_t)n), *x0 = wt_get_positions(w, id);
  float *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  REQUIRE(t, inv != NULL && x0 != NULL && x != NULL && v != NULL);
  REQUIRE_OK(t, piola_body_get_inverse_masses(w, id, inv, n));
  /* Pin the top face's vertices (y = 1.4 m). */
  int32_t pinned = 0;
  for (int32_t i = 0; i < n; ++i) {
    CHECK(t, inv[i] > 0.0f);
    if (box.positions[3 * i + 1] > 0.399f) {
      inv[i] = 0.0f;
      pinned++;
    }
  }
  REQUIRE(t, pinned == 4 * 3);
  REQUIRE_OK(t, piola_body_set_inverse_masses(w, id, inv, n));
  float *check = malloc(sizeof *check * (size_t)n);
  REQUIRE(t, check != NULL);
  REQUIRE_OK(t, piola_body_get_inverse_masses(w, id, check, n));
  CHECK(t, memcmp(check, inv, sizeof *inv * (size_t)n) == 0);
  double free_drop = 0.0;
  for (int s = 0; s < 200; ++s) {
    REQUIRE_OK(t, piola_world_step(w));
  }
  REQUIRE_OK(t, piola_body_get_positions(w, id, x, n));
  REQUIRE_OK(t, piola_body_get_velocities(w, id, v, n));
  int32_t moved = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (inv[i] == 0.0f) {
      moved += memcmp(x + 3 * i, x0 + 3 * i, 3 * sizeof *x) != 0;
      moved += v[3 * i] != 0.0f || v[3 * i + 1] != 0.0f || v[3 * i + 2] != 0.0f;
    } else {
      free_drop = fmax(free_drop, (double)x0[3 * i + 1] - x[3 * i + 1]);
    }
  }
  CHECK_MSG(t, moved == 0, "%d pinned vertices moved or have velocity", moved);
  /* The free vertices hang below (they sag, but the pins hold the body up). */
  CHECK_MSG(t, free_drop > 1e-4 && free_drop < 0.2, "free vertices dropped %.4g m", free_drop);

  /* Moving the pins kinematically: +0.1 m in x; they stay exactly there, the body follows. */
  for (int32_t i = 0; i < n; ++i) {
    if (inv[i] == 0.0f) {
      x[3 * i] += 0.1f;
    }
  }
  REQUIRE_OK(t, piola_body_set_positions(w, id, x, n));
  float *moved_pins = malloc(sizeof *moved_pins * 3 * (size_t)n);
  REQUIRE(t, moved_pins != NULL);
  memcpy(moved_pins, x, sizeof *x * 3 * (size_t)n);
  for (int s = 0; s < 200; ++s) {
    REQUIRE_OK(t, piola_world_step(w));
  }
  REQUIRE_OK(t, piola_body_get_positions(w, id, x, n));
  double mean_dx = 0.0;
  moved = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (inv[i] == 0.0f) {
      moved += memcmp(x + 3 * i, moved_pins + 3 * i, 3 * sizeof *x) != 0;
    } else {
      mean_dx += (double)x[3 * i] - x0[3 * i];
    }
    CHECK(t, isfinite(x[3 * i]) && isfinite(x[3 * i + 1]) && isfinite(x[3 * i + 2]));
  }
  mean_dx /= (double)(n - pinned);
  CHECK_MSG(t, moved == 0, "%d pins moved after being placed", moved);
  CHECK_MSG(t, mean_dx > 0.05, "the body followed its pins by %.4g m of 0.1", mean_dx);
  CHECK(t, misuse == 0);
  free(inv);
  free(x0);
  free(x);
  free(v);
  free(check);
  free(moved_pins);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}

/* ---- Damping and substeps ---------------------------------------------------------------- */

/* Total (kinetic + elastic) energy (J) of a long soft box, 8 x 2 x 2 cells of 2 x 0.4 x 0.4 m,
 * E = 1e4 Pa, started 10% stretched along x without gravity, after `steps` steps. */
static double vibrating_box_energy(piola_test *t, float damping, int steps, double *initial) {
  piola_world *w = wt_world(t, NULL, NULL, 0.005f, 1, 5, damping, false);
  if (w == NULL) {
    return NAN;
  }
  const int32_t cells[3] = {8, 2, 2};
  const float size[3] = {2.0f, 0.4f, 0.4f};
  piola_tet_mesh box;
  piola_mesh_make_box(cells, size, &box);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = 1e4f;
  piola_body_id id;
  piola_world_add_tet_body(w, &box, &mat, NULL, &id);
  float *p = wt_get_positions(w, id);
  for (int32_t i = 0; p != NULL && i < box.vertex_count; ++i) {
    p[3 * i] *= 1.1f;
  }
  piola_body_set_positions(w, id, p, box.vertex_count);
  piola_stats st;
  piola_world_get_stats(w, &st);
  *initial = st.elastic_energy;
  for (int s = 0; s < steps; ++s) {
    piola_world_step(w);
  }
  piola_world_get_stats(w, &st);
  free(p);
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return st.elastic_energy + st.kinetic_energy;
}

void test_damping(piola_test *t) {
  /* Exactly v *= 1 - damping h per substep: a free tet in uniform motion (no strain, so no
   * constraint acts), damping 4 1/s, dt 0.01 s, 2 substeps: v_1 = v_0 (1 - 4 h)^2. */
  piola_world *w = wt_world(t, NULL, NULL, 0.01f, 2, 3, 4.0f, false);
  REQUIRE(t, w != NULL);
  int32_t one[4] = {0, 1, 2, 3};
  piola_tet_mesh tet = {(float *)wt_unit_tet, 4, one, 1};
  piola_material mat = piola_default_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &tet, &mat, NULL, &id));
  float v[12];
  for (int i = 0; i < 4; ++i) {
    v[3 * i] = 1.0f;
    v[3 * i + 1] = -2.0f;
    v[3 * i + 2] = 0.5f;
  }
  REQUIRE_OK(t, piola_body_set_velocities(w, id, v, 4));
  REQUIRE_OK(t, piola_world_step(w));
  const double h = (double)0.01f / 2, factor = 1.0 - (double)4.0f * h;
  for (int i = 0; i < 4; ++i) {
    CHECK_NEAR(t, w->v[3 * i], 1.0 * factor * factor, 1e-12);
    CHECK_NEAR(t, w->v[3 * i + 1], -2.0 * factor * factor, 1e-12);
    /* x moved by h v_0 + h v_1 (damping is applied after the position update). */
    CHECK_NEAR(t, w->x[3 * i + 2] - wt_unit_tet[3 * i + 2], 0.5 * h * (1.0 + factor), 1e-12);
  }
  piola_world_destroy(w);

  /* A vibrating body loses energy faster with damping. Damping takes d of the kinetic
   * energy's rate 2 d, and an oscillation holds its energy half the time as kinetic energy,
   * so the total falls by about exp(-d t) relative to the undamped run (whose own loss is
   * XPBD's numerical dissipation). Measured after 1 s: 0.37 for d = 1/s, 0.14 for d = 2/s. */
  double e0 = 0.0, e1 = 0.0, e2 = 0.0;
  double undamped = vibrating_box_energy(t, 0.0f, 200, &e0);
  double damped1 = vibrating_box_energy(t, 1.0f, 200, &e1);
  double damped2 = vibrating_box_energy(t, 2.0f, 200, &e2);
  printf("  stretched beam: energy %.4g J at start; after 1 s %.4g J undamped, %.4g J with "
         "damping 1/s, %.4g J with 2/s\n",
         e0, undamped, damped1, damped2);
  CHECK(t, e0 == e1 && e1 == e2 && e0 > 0.0);
  CHECK(t, isfinite(undamped) && isfinite(damped1) && isfinite(damped2));
  CHECK(t, undamped <= e0);      /* XPBD itself only dissipates */
  CHECK(t, undamped > 0.3 * e0); /* ... and slowly for this soft, slow beam */
  CHECK_MSG(t, fabs(damped1 / undamped / exp(-1.0) - 1.0) < 0.25,
            "damping 1/s: ratio %.3f, expected about %.3f", damped1 / undamped, exp(-1.0));
  CHECK_MSG(t, fabs(damped2 / undamped / exp(-2.0) - 1.0) < 0.25,
            "damping 2/s: ratio %.3f, expected about %.3f", damped2 / undamped, exp(-2.0));
}

/* Positions of a box dropped onto a plane after `steps` steps of dt with `substeps`. */
static float *dropped_box(piola_test *t, float dt, int32_t substeps, int steps, int32_t *count) {
  piola_world *w = wt_world(t, NULL, NULL, dt, substeps, 5, 0.0f, true);
  if (w == NULL) {
    return NULL;
  }
  piola_tet_mesh box;
  make_small_box(&box);
  piola_material mat = piola_default_material();
  piola_body_id id;
  piola_world_add_tet_body(w, &box, &mat, (const float[3]){0.0f, 0.05f, 0.0f}, &id);
  /* A tilted plane so that friction and contact both act. */
  piola_world_add_plane(w, (const float[3]){0.1f, 1.0f, 0.0f}, 0.0f, 0.3f, NULL);
  for (int s = 0; s < steps; ++s) {
    piola_world_step(w);
  }
  *count = box.vertex_count;
  float *x = wt_get_positions(w, id);
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return x;
}

void test_substeps(piola_test *t) {
  /* A substep is a whole XPBD step of h = dt / substeps (predict, reset, iterate, update), so
   * 4 substeps of dt = 0.02 s are 4 steps of dt = 0.005 s, bit for bit (0.02f / 4 is exactly
   * 0.005f: same mantissa), contacts and friction included. */
  CHECK(t, (double)0.02f / 4 == (double)0.005f);
  int32_t n = 0;
  float *a = dropped_box(t, 0.02f, 4, 25, &n);
  float *b = dropped_box(t, 0.005f, 1, 100, &n);
  REQUIRE(t, a != NULL && b != NULL);
  CHECK(t, memcmp(a, b, sizeof *a * 3 * (size_t)n) == 0);
  free(a);
  free(b);

  /* Free fall (no strain, no contact): K = steps * substeps updates of v += h g, x += h v give
   * y_K = y_0 - g h^2 K (K + 1) / 2, so the substep count changes the result as it should. */
  const int32_t substeps[2] = {1, 4};
  for (int k = 0; k < 2; ++k) {
    piola_world *w = wt_world(t, NULL, NULL, 0.02f, substeps[k], 3, 0.0f, true);
    REQUIRE(t, w != NULL);
    piola_tet_mesh box;
    REQUIRE_OK(t, make_small_box(&box));
    piola_material mat = piola_default_material();
    piola_body_id id;
    REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &mat, NULL, &id));
    for (int s = 0; s < 10; ++s) {
      REQUIRE_OK(t, piola_world_step(w));
    }
    const double h = (double)0.02f / substeps[k], g = (double)-9.81f;
    const double steps = 10.0 * substeps[k];
    double worst = 0.0;
    for (int32_t i = 0; i < box.vertex_count; ++i) {
      double expected = box.positions[3 * i + 1] + g * h * h * steps * (steps + 1.0) / 2.0;
      worst = fmax(worst, fabs(w->x[3 * i + 1] - expected));
      worst = fmax(worst, fabs(w->x[3 * i] - box.positions[3 * i]));
    }
    CHECK_MSG(t, worst < 1e-12, "%d substeps: free fall off by %.3g m", (int)substeps[k], worst);
    piola_mesh_free(&box);
    piola_world_destroy(w);
  }
}

/* ---- Dependent passes ----------------------------------------------------------------------
 * piola_stats.dependent_passes follows its definition as the scene gains a collider, contacts,
 * an attachment and a cloth body (2 substeps of 3 iterations), under colored Gauss-Seidel
 * (test_vbd_dependent_passes has vertex block descent's). */
void test_stats_dependent_passes(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world_def def = piola_test_world_def(&log, &misuse);
  def.substeps = 2;
  def.iterations = 3;
  def.contacts = false;
  piola_world *w = NULL;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  piola_tet_mesh box = wt_box(2, 2, 2, 0.2f, 0.2f, 0.2f);
  const piola_material m = piola_default_material();
  piola_body_id id;
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &m, (const float[3]){0.0f, 0.5f, 0.0f}, &id));
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  const int32_t c = st.color_count;
  CHECK(t, c > 0 && st.jacobi_tets == 0 && st.vertex_color_count == 0);
  /* prediction, 3 x the colors, velocities */
  CHECK_MSG(t, st.dependent_passes == 2 * (1 + 3 * c + 1), "bare: %d", (int)st.dependent_passes);
  const float up[3] = {0.0f, 1.0f, 0.0f};
  REQUIRE_OK(t, piola_world_add_plane(w, up, 0.0f, 0.5f, NULL));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK_MSG(t, st.dependent_passes == 2 * (1 + 3 * (c + 1) + 1), "collider: %d",
            (int)st.dependent_passes);
  piola_world_destroy(w);

  /* Contacts on: broad and narrow phase, the contact passes, the inverted-tet pass (4 sweeps),
   * the colliders once more after it. */
  def.contacts = true;
  REQUIRE_OK(t, piola_world_create(&def, &w));
  REQUIRE_OK(t, piola_world_add_tet_body(w, &box, &m, (const float[3]){0.0f, 0.5f, 0.0f}, &id));
  REQUIRE_OK(t, piola_world_add_plane(w, up, 0.0f, 0.5f, NULL));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK_MSG(t, st.dependent_passes == 2 * (1 + 2 + 3 * (c + 2 + 1) + 4 * c + 1 + 1), "contacts: %d",
            (int)st.dependent_passes);
  piola_attachment_id a;
  REQUIRE_OK(t, piola_world_add_attachment(w, id, 0, (const float[3]){0.0f, 0.5f, 0.0f}, 0.0f, &a));
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  CHECK_MSG(t, st.dependent_passes == 2 * (1 + 2 + 3 * (c + 2 + 1 + 1) + 4 * c + 1 + 1 + 1),
            "attachment: %d", (int)st.dependent_passes);
  /* A cloth body's colors join every iteration; stepping changes nothing in the count. */
  piola_tri_mesh grid;
  REQUIRE_OK(t,
             piola_mesh_make_grid((const int32_t[2]){4, 4}, (const float[2]){0.4f, 0.4f}, &grid));
  const piola_cloth_material cm = piola_default_cloth_material();
  piola_body_id cloth;
  REQUIRE_OK(t, piola_world_add_cloth(w, &grid, &cm, (const float[3]){1.0f, 1.0f, 0.0f}, &cloth));
  CHECK_STATUS(t, piola_world_step(w), PIOLA_OK);
  REQUIRE_OK(t, piola_world_get_stats(w, &st));
  const int32_t cc = st.cloth_color_count;
  CHECK(t, cc > 0);
  CHECK_MSG(t, st.dependent_passes == 2 * (1 + 2 + 3 * (c + cc + 2 + 1 + 1) + 4 * c + 1 + 1 + 1),
            "cloth: %d", (int)st.dependent_passes);
  piola_tri_mesh_free(&grid);
  piola_mesh_free(&box);
  piola_world_destroy(w);
}
