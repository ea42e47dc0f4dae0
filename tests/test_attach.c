/* Tests of attachments (src/host/attachment.c, kernels/piola_attach.h and .cl): a hard
 * attachment holds its vertex on the target while the body swings, a soft one stretches by
 * force x compliance, a moving target drags the vertex along, OpenCL matches the CPU
 * reference, and every call rejects bad input and changes nothing.
 *
 * The body: a box of 2 x 2 x 2 cells, 0.1 m (1 kg at 1000 kg/m^3), E = 1e7 Pa, hung by its
 * corner vertex at (0, 0.1, 0) (body-local), so that gravity swings it about that corner. */
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct at_scene {
  piola_world *w;
  piola_body_id body;
  piola_tet_mesh box;
  int32_t corner; /* the vertex at body-local (0, 0.1, 0) */
  piola_test_log log;
  capture_log clog;
  int misuse;
} at_scene;

static bool at_open(piola_test *t, at_scene *sc, piola_backend backend, float damping) {
  memset(sc, 0, sizeof *sc);
  piola_world_def def = backend == PIOLA_BACKEND_OPENCL
                            ? opencl_test_world_def(backend, &sc->clog, &sc->misuse)
                            : piola_test_world_def(&sc->log, &sc->misuse);
  def.damping = damping;
  def.substeps = 2;
  def.iterations = 10;
  piola_status s = piola_world_create(&def, &sc->w);
  sc->box = wt_box(2, 2, 2, 0.1f, 0.1f, 0.1f);
  sc->corner = -1;
  for (int32_t i = 0; i < sc->box.vertex_count; ++i) {
    const float *q = sc->box.positions + 3 * (size_t)i;
    if (q[0] == 0.0f && q[1] > 0.0999f && q[2] == 0.0f) {
      sc->corner = i;
    }
  }
  const piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e7f);
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(sc->w, &sc->box, &mat, (const float[3]){0.0f, 1.0f, 0.0f},
                                 &sc->body);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  CHECK(t, sc->corner >= 0);
  return s == PIOLA_OK && sc->corner >= 0;
}

static void at_close(at_scene *sc) {
  piola_world_destroy(sc->w);
  piola_mesh_free(&sc->box);
}

static double at_distance(const float *x, int32_t v, const float target[3]) {
  double d2 = 0.0;
  for (int k = 0; k < 3; ++k) {
    const double d = (double)x[3 * (size_t)v + k] - target[k];
    d2 += d * d;
  }
  return sqrt(d2);
}

typedef struct at_hard_result {
  double worst;   /* largest distance of the held vertex from its target, m */
  double swing;   /* largest displacement of the opposite corner from its start, m */
  double dragged; /* largest distance from the moving target over the second half, m */
  float final[3 * 27];
} at_hard_result;

/* Holds the corner at (0, 1.1, 0) for 100 steps, then drags it on a circle of 0.2 m for 100. */
static at_hard_result at_hard(piola_test *t, piola_backend backend) {
  at_hard_result r;
  memset(&r, 0, sizeof r);
  at_scene sc;
  if (!at_open(t, &sc, backend, 0.5f)) {
    at_close(&sc);
    return r;
  }
  float target[3] = {0.0f, 1.1f, 0.0f};
  piola_attachment_id id;
  piola_status s = piola_world_add_attachment(sc.w, sc.body, sc.corner, target, 0.0f, &id);
  float *start = wt_get_positions(sc.w, sc.body);
  const int32_t far = sc.box.vertex_count - 1; /* the corner at (0.1, 0.1, 0.1) */
  for (int32_t step = 0; step < 200 && s == PIOLA_OK && start != NULL; ++step) {
    if (step >= 100) {
      const double a = 2.0 * WT_PI * (step - 100) / 100.0;
      target[0] = (float)(0.2 * sin(a));
      target[2] = (float)(0.2 - 0.2 * cos(a));
      s = piola_attachment_set_target(sc.w, id, target);
    }
    if (s == PIOLA_OK) {
      s = piola_world_step(sc.w);
    }
    float *x = s == PIOLA_OK ? wt_get_positions(sc.w, sc.body) : NULL;
    if (x != NULL) {
      const double d = at_distance(x, sc.corner, target);
      if (step < 100) {
        r.worst = fmax(r.worst, d);
      } else {
        r.dragged = fmax(r.dragged, d);
      }
      r.swing = fmax(r.swing, at_distance(x, far, start + 3 * (size_t)far));
      memcpy(r.final, x, sizeof(float) * 3 * 27);
    }
    free(x);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  free(start);
  at_close(&sc);
  return r;
}

static void at_hard_check(piola_test *t, const char *name, const at_hard_result *r) {
  printf("  %s: held within %.3g m while the far corner swung %.3f m; dragged on a circle, "
         "within %.3g m of the target\n",
         name, r->worst, r->swing, r->dragged);
  CHECK_MSG(t, r->swing > 0.05, "the body hardly swung (%.4f m)", r->swing);
  CHECK_MSG(t, r->worst <= 1e-4, "the held vertex strayed %.3g m from the target", r->worst);
  CHECK_MSG(t, r->dragged <= 1e-4, "the dragged vertex strayed %.3g m from the target", r->dragged);
}

void test_attachment_hard_holds(piola_test *t) {
  const at_hard_result r = at_hard(t, PIOLA_BACKEND_CPU_REFERENCE);
  at_hard_check(t, "cpu", &r);
}

void test_opencl_attachment_hard_holds(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const at_hard_result r = at_hard(t, PIOLA_BACKEND_OPENCL);
  at_hard_check(t, "opencl", &r);
  const at_hard_result ref = at_hard(t, PIOLA_BACKEND_CPU_REFERENCE);
  double worst = 0.0;
  for (int i = 0; i < 3 * 27; ++i) {
    worst = fmax(worst, fabs((double)r.final[i] - ref.final[i]));
  }
  printf("  opencl against the cpu reference after 200 steps: %.3g m\n", worst);
  CHECK_MSG(t, worst <= 1e-4, "opencl and the cpu reference differ by %.3g m", worst);
}

/* A soft attachment (compliance 1e-3 m/N) carries the 1 kg box: at rest the vertex hangs
 * m g compliance = 9.8 mm under the target. */
static void at_soft(piola_test *t, piola_backend backend) {
  at_scene sc;
  if (!at_open(t, &sc, backend, 5.0f)) {
    at_close(&sc);
    return;
  }
  const float target[3] = {0.0f, 1.1f, 0.0f};
  const float compliance = 1e-3f;
  piola_attachment_id id;
  piola_status s = piola_world_add_attachment(sc.w, sc.body, sc.corner, target, compliance, &id);
  for (int32_t step = 0; step < 600 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  float *x = wt_get_positions(sc.w, sc.body);
  float *wi = malloc(sizeof *wi * (size_t)sc.box.vertex_count);
  if (x != NULL && wi != NULL &&
      piola_body_get_inverse_masses(sc.w, sc.body, wi, sc.box.vertex_count) == PIOLA_OK) {
    double mass = 0.0;
    for (int32_t i = 0; i < sc.box.vertex_count; ++i) {
      mass += 1.0 / wi[i];
    }
    const double expected = mass * 9.81 * compliance;
    const double got = at_distance(x, sc.corner, target);
    printf("  %s: the vertex hangs %.5f m from the target; m g compliance = %.5f m (m = %.4f "
           "kg)\n",
           backend == PIOLA_BACKEND_OPENCL ? "opencl" : "cpu", got, expected, mass);
    CHECK_MSG(t, fabs(got - expected) <= 0.05 * expected, "stretch %.5f m, expected %.5f m", got,
              expected);
    CHECK_MSG(t, target[1] - x[3 * (size_t)sc.corner + 1] > 0.9 * got, "the vertex is not below");
  } else {
    CHECK(t, false);
  }
  free(x);
  free(wi);
  at_close(&sc);
}

void test_attachment_soft_stretch(piola_test *t) {
  at_soft(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_attachment_soft_stretch(piola_test *t) {
  if (opencl_test_ready(t)) {
    at_soft(t, PIOLA_BACKEND_OPENCL);
  }
}

/* Bad ids, vertices, pointers and numbers are rejected with a status and change nothing; a
 * removed attachment's id goes stale; a removed body's attachment stops acting. */
static void at_bad_input(piola_test *t, piola_backend backend) {
  at_scene sc;
  if (!at_open(t, &sc, backend, 0.5f)) {
    at_close(&sc);
    return;
  }
  const float target[3] = {0.0f, 1.1f, 0.0f}, nan_target[3] = {0.0f, NAN, 0.0f};
  const piola_body_id stale = {sc.body.index1, sc.body.generation + 1u};
  piola_attachment_id id = {0, 0};
  const wt_snapshot before = wt_snapshot_take(sc.w, &sc.body, 1);
  CHECK_STATUS(t, piola_world_add_attachment(NULL, sc.body, 0, target, 0.0f, &id),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_add_attachment(sc.w, stale, 0, target, 0.0f, &id),
               PIOLA_ERROR_INVALID_BODY);
  CHECK_STATUS(t, piola_world_add_attachment(sc.w, sc.body, -1, target, 0.0f, &id),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_add_attachment(sc.w, sc.body, sc.box.vertex_count, target, 0.0f, &id),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_add_attachment(sc.w, sc.body, 0, NULL, 0.0f, &id),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_add_attachment(sc.w, sc.body, 0, target, 0.0f, NULL),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_world_add_attachment(sc.w, sc.body, 0, nan_target, 0.0f, &id),
               PIOLA_ERROR_NON_FINITE);
  CHECK_STATUS(t, piola_world_add_attachment(sc.w, sc.body, 0, target, INFINITY, &id),
               PIOLA_ERROR_NON_FINITE);
  CHECK_STATUS(t, piola_world_add_attachment(sc.w, sc.body, 0, target, -1.0f, &id),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK(t, id.index1 == 0);
  const piola_attachment_id never = {3, 0};
  CHECK_STATUS(t, piola_attachment_set_target(sc.w, never, target), PIOLA_ERROR_INVALID_ATTACHMENT);
  CHECK_STATUS(t, piola_world_remove_attachment(sc.w, never), PIOLA_ERROR_INVALID_ATTACHMENT);
  const wt_snapshot after = wt_snapshot_take(sc.w, &sc.body, 1);
  CHECK_MSG(t, wt_snapshot_equal(&before, &after), "a failed call changed the world");

  REQUIRE(t, piola_world_add_attachment(sc.w, sc.body, sc.corner, target, 0.0f, &id) == PIOLA_OK);
  CHECK_STATUS(t, piola_attachment_set_target(NULL, id, target), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_attachment_set_target(sc.w, id, NULL), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_attachment_set_target(sc.w, id, nan_target), PIOLA_ERROR_NON_FINITE);
  /* the NaN target was refused: the vertex stays held at the old one */
  for (int i = 0; i < 20; ++i) {
    CHECK_STATUS(t, piola_world_step(sc.w), PIOLA_OK);
  }
  float *x = wt_get_positions(sc.w, sc.body);
  REQUIRE(t, x != NULL);
  CHECK_MSG(t, at_distance(x, sc.corner, target) <= 1e-4, "the held vertex moved %.3g m",
            at_distance(x, sc.corner, target));
  free(x);
  CHECK_STATUS(t, piola_world_remove_attachment(sc.w, id), PIOLA_OK);
  CHECK_STATUS(t, piola_world_remove_attachment(sc.w, id), PIOLA_ERROR_INVALID_ATTACHMENT);
  CHECK_STATUS(t, piola_attachment_set_target(sc.w, id, target), PIOLA_ERROR_INVALID_ATTACHMENT);
  /* released, the body falls */
  for (int i = 0; i < 20; ++i) {
    CHECK_STATUS(t, piola_world_step(sc.w), PIOLA_OK);
  }
  x = wt_get_positions(sc.w, sc.body);
  REQUIRE(t, x != NULL);
  CHECK_MSG(t, x[3 * (size_t)sc.corner + 1] < 1.05f, "released, the vertex stayed at %.4f m",
            x[3 * (size_t)sc.corner + 1]);
  free(x);
  /* an attachment of a removed body stops acting, and can still be removed */
  piola_attachment_id orphan;
  REQUIRE(t, piola_world_add_attachment(sc.w, sc.body, 0, target, 0.0f, &orphan) == PIOLA_OK);
  CHECK_MSG(t, orphan.index1 == id.index1 && orphan.generation != id.generation,
            "the freed slot is reused with a new generation");
  CHECK_STATUS(t, piola_world_remove_body(sc.w, sc.body), PIOLA_OK);
  CHECK_STATUS(t, piola_world_step(sc.w), PIOLA_OK);
  CHECK_STATUS(t, piola_world_remove_attachment(sc.w, orphan), PIOLA_OK);
  CHECK_MSG(t, sc.misuse > 0, "misuse reported");
  at_close(&sc);
}

void test_attachment_bad_input(piola_test *t) {
  at_bad_input(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_attachment_bad_input(piola_test *t) {
  if (opencl_test_ready(t)) {
    at_bad_input(t, PIOLA_BACKEND_OPENCL);
  }
}

/* ---- Hard attachments under contact ---------------------------------------------------------
 * Three scenes, each with contacts on (bodies with each other and with themselves), where the
 * stages after the attachments' (the contacts, and the inverted-tet pass that only runs with
 * contacts) would move a held vertex: a hard attachment must keep it within 1e-4 m of its
 * target at every step.
 *  - swing: a 0.1 x 0.4 x 0.1 m bar (2 x 8 x 2 cells) whose top corner is held 0.2 m sideways of
 *    where it starts, so that it is yanked there and swings;
 *  - press: the bar held at its top corner where it is, and a 0.1 m box dropped onto its top;
 *  - fold: a soft 1 m bar (20 x 1 x 1 cells, E = 2e4 Pa) held at the middle of its top edge, whose
 *    halves fall, bend at the middle and meet each other below it. */
typedef enum at_contact_scene { AT_SWING, AT_PRESS, AT_FOLD } at_contact_scene;

typedef struct at_contact_result {
  double worst;     /* largest distance of the held vertex from its target over the steps, m */
  int32_t contacts; /* most contacts in a step */
  double moved;     /* largest displacement of any vertex from its start, m */
} at_contact_result;

/* The vertex of `m` with the largest y, and among those the smallest x + z. */
static int32_t at_top_corner(const piola_tet_mesh *m) {
  int32_t best = 0;
  for (int32_t i = 1; i < m->vertex_count; ++i) {
    const float *p = m->positions + 3 * (size_t)i, *q = m->positions + 3 * (size_t)best;
    if (p[1] > q[1] + 1e-6f || (fabsf(p[1] - q[1]) <= 1e-6f && p[0] + p[2] < q[0] + q[2])) {
      best = i;
    }
  }
  return best;
}

static at_contact_result at_contact(piola_test *t, piola_backend backend, at_contact_scene kind) {
  at_contact_result r;
  memset(&r, 0, sizeof r);
  capture_log clog;
  piola_test_log log;
  int misuse = 0;
  piola_world_def def = backend == PIOLA_BACKEND_OPENCL
                            ? opencl_test_world_def(backend, &clog, &misuse)
                            : piola_test_world_def(&log, &misuse);
  def.contacts = true;
  def.substeps = 2;
  piola_world *w = NULL;
  piola_status s = piola_world_create(&def, &w);
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s != PIOLA_OK) {
    return r;
  }
  const bool fold = kind == AT_FOLD;
  piola_tet_mesh bar =
      fold ? wt_box(20, 1, 1, 1.0f, 0.05f, 0.05f) : wt_box(2, 8, 2, 0.1f, 0.4f, 0.1f);
  piola_tet_mesh box = wt_box(2, 2, 2, 0.1f, 0.1f, 0.1f);
  piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, fold ? 2e4f : 1e6f);
  const float at[3] = {0.0f, 1.0f, 0.0f};
  piola_body_id ids[2];
  s = piola_world_add_tet_body(w, &bar, &mat, at, &ids[0]);
  if (s == PIOLA_OK && kind == AT_PRESS) {
    const piola_material hard = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1e6f);
    s = piola_world_add_tet_body(w, &box, &hard, (const float[3]){0.005f, 1.6f, 0.005f}, &ids[1]);
  }
  /* fold: the vertex at the middle of the bar's top edge at z = 0; else the top corner */
  int32_t held = at_top_corner(&bar);
  if (fold) {
    for (int32_t i = 0; i < bar.vertex_count; ++i) {
      const float *p = bar.positions + 3 * (size_t)i;
      if (fabsf(p[0] - 0.5f) <= 1e-4f && p[1] > 0.0499f && p[2] == 0.0f) {
        held = i;
      }
    }
  }
  float target[3];
  for (int k = 0; k < 3; ++k) {
    target[k] = bar.positions[3 * (size_t)held + k] + at[k];
  }
  if (kind == AT_SWING) {
    target[0] += 0.2f;
  }
  piola_attachment_id id;
  if (s == PIOLA_OK) {
    s = piola_world_add_attachment(w, ids[0], held, target, 0.0f, &id);
  }
  float *start = s == PIOLA_OK ? wt_get_positions(w, ids[0]) : NULL;
  const int32_t steps = fold ? 600 : 400;
  for (int32_t step = 0; step < steps && s == PIOLA_OK && start != NULL; ++step) {
    s = piola_world_step(w);
    float *x = s == PIOLA_OK ? wt_get_positions(w, ids[0]) : NULL;
    piola_stats st;
    if (x != NULL && piola_world_get_stats(w, &st) == PIOLA_OK) {
      r.worst = fmax(r.worst, at_distance(x, held, target));
      r.contacts = st.contact_count > r.contacts ? st.contact_count : r.contacts;
      for (int32_t i = 0; i < bar.vertex_count; ++i) {
        r.moved = fmax(r.moved, at_distance(x, i, start + 3 * (size_t)i));
      }
    }
    free(x);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  free(start);
  piola_mesh_free(&bar);
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return r;
}

static void at_contact_check(piola_test *t, piola_backend backend) {
  static const char *const names[3] = {"swing", "press", "fold"};
  for (int kind = AT_SWING; kind <= AT_FOLD; ++kind) {
    const at_contact_result r = at_contact(t, backend, (at_contact_scene)kind);
    printf("  %s, %s: held within %.3g m; at most %d contacts in a step; a vertex moved %.3f m\n",
           backend == PIOLA_BACKEND_OPENCL ? "opencl" : "cpu", names[kind], r.worst,
           (int)r.contacts, r.moved);
    CHECK_MSG(t, r.worst <= 1e-4, "%s: the held vertex strayed %.3g m from its target", names[kind],
              r.worst);
    CHECK_MSG(t, r.moved > 0.05, "%s: the bar hardly moved (%.4f m)", names[kind], r.moved);
    if (kind != AT_SWING) {
      CHECK_MSG(t, r.contacts > 0, "%s: no contact was made", names[kind]);
    }
  }
}

void test_attachment_holds_under_contact(piola_test *t) {
  at_contact_check(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_attachment_holds_under_contact(piola_test *t) {
  if (opencl_test_ready(t)) {
    at_contact_check(t, PIOLA_BACKEND_OPENCL);
  }
}
