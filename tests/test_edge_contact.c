/* Tests of edge-edge contacts (kernels/piola_contact_edges.h; src/host/
 * contact_edges.c; the edge kernels of kernels/piola_contact.cl): the segment math, two thin bars
 * dropped crossed onto each other and a thin bar dropped across a cloth's edge, on the CPU
 * reference and on OpenCL, each run twice (bitwise the same) and once with edge contacts off.
 *
 * Crossings are counted geometrically, independent of the library's detection: at every frame,
 * every edge of a surface triangle of one body against every surface triangle of the other, by
 * the signs of tetrahedral volumes (a segment crosses a triangle when its ends lie strictly on
 * both sides of the triangle's plane and the segment passes strictly inside the three sides). */
#include "piola_contact_edges.h"
#include "test_opencl_common.h"
#include "world.h"
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- The crossing count ------------------------------------------------------------------- */

/* Six times the signed volume of tet (a, b, c, d). */
static double ee_orient(const float *a, const float *b, const float *c, const float *d) {
  const double u[3] = {(double)b[0] - a[0], (double)b[1] - a[1], (double)b[2] - a[2]};
  const double v[3] = {(double)c[0] - a[0], (double)c[1] - a[1], (double)c[2] - a[2]};
  const double w[3] = {(double)d[0] - a[0], (double)d[1] - a[1], (double)d[2] - a[2]};
  return u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
         u[2] * (v[0] * w[1] - v[1] * w[0]);
}

/* Whether segment pq crosses triangle abc (strictly). */
static bool ee_segment_crosses(const float *p, const float *q, const float *a, const float *b,
                               const float *c) {
  const double dp = ee_orient(a, b, c, p), dq = ee_orient(a, b, c, q);
  if (!((dp > 0.0 && dq < 0.0) || (dp < 0.0 && dq > 0.0))) {
    return false;
  }
  const double u = ee_orient(p, q, a, b), v = ee_orient(p, q, b, c), w = ee_orient(p, q, c, a);
  return (u > 0.0 && v > 0.0 && w > 0.0) || (u < 0.0 && v < 0.0 && w < 0.0);
}

/* A body's collision surface (body-local indices) and current positions. */
typedef struct ee_surface {
  int32_t *tri;
  int32_t count;
  float *x;
} ee_surface;

static bool ee_surface_get(const piola_world *w, piola_body_id b, ee_surface *s) {
  s->count = 0;
  s->tri = NULL;
  s->x = wt_get_positions(w, b);
  if (piola_body_get_surface(w, b, NULL, 0, &s->count) != PIOLA_OK || s->count <= 0) {
    return false;
  }
  s->tri = malloc(sizeof *s->tri * 3 * (size_t)s->count);
  int32_t again = 0;
  return s->tri != NULL && s->x != NULL &&
         piola_body_get_surface(w, b, s->tri, s->count, &again) == PIOLA_OK;
}

static void ee_surface_free(ee_surface *s) {
  free(s->tri);
  free(s->x);
}

/* The crossings of the edges of a's surface triangles with b's surface triangles (an edge shared
 * by two triangles counts once per triangle). */
static int32_t ee_crossings_of(const ee_surface *a, const ee_surface *b) {
  int32_t n = 0;
  for (int32_t i = 0; i < a->count; ++i) {
    for (int k = 0; k < 3; ++k) {
      const float *p = a->x + 3 * (size_t)a->tri[3 * i + k];
      const float *q = a->x + 3 * (size_t)a->tri[3 * i + (k + 1) % 3];
      for (int32_t j = 0; j < b->count; ++j) {
        const int32_t *t = b->tri + 3 * (size_t)j;
        n += ee_segment_crosses(p, q, b->x + 3 * (size_t)t[0], b->x + 3 * (size_t)t[1],
                                b->x + 3 * (size_t)t[2]);
      }
    }
  }
  return n;
}

/* Crossings between bodies a and b both ways; -1 when a surface cannot be read. */
static int32_t ee_crossings(const piola_world *w, piola_body_id a, piola_body_id b) {
  ee_surface sa, sb;
  memset(&sa, 0, sizeof sa);
  memset(&sb, 0, sizeof sb);
  int32_t n = -1;
  if (ee_surface_get(w, a, &sa) && ee_surface_get(w, b, &sb)) {
    n = ee_crossings_of(&sa, &sb) + ee_crossings_of(&sb, &sa);
  }
  ee_surface_free(&sa);
  ee_surface_free(&sb);
  return n;
}

/* ---- The math ----------------------------------------------------------------------------- */

/* piola_segments_closest against a fine search over both parameters; piola_edge_side flips when
 * one edge passes through the other; piola_edge_candidate catches an edge that passes through
 * another within the substep, and not one that stays far; parallel pairs are skipped. */
void test_contact_edges_math(piola_test *t) {
  uint64_t seed = 12345;
  double worst = 0.0;
  for (int trial = 0; trial < 200; ++trial) {
    piola_v3 q[4];
    for (int k = 0; k < 4; ++k) {
      double r[3];
      for (int j = 0; j < 3; ++j) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        r[j] = (double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
      }
      q[k] = piola_v3_make(r[0], r[1], r[2]);
    }
    double s, u;
    piola_segments_closest(q[0], q[1], q[2], q[3], &s, &u);
    const double d =
        piola_v3_length(piola_v3_sub(piola_lerp3(q[0], q[1], s), piola_lerp3(q[2], q[3], u)));
    double best = INFINITY;
    for (int i = 0; i <= 200; ++i) {
      for (int j = 0; j <= 200; ++j) {
        best = fmin(best, piola_v3_length(piola_v3_sub(piola_lerp3(q[0], q[1], i / 200.0),
                                                       piola_lerp3(q[2], q[3], j / 200.0))));
      }
    }
    CHECK_MSG(t, d <= best + 1e-12, "trial %d: closest distance %.9g, a search finds %.9g", trial,
              d, best);
    worst = fmax(worst, best - d);
  }
  /* Edge a along x at height y = h over edge b along z at the origin. */
  const double th = 0.01;
  const piola_v3 b0 = piola_v3_make(0.0, 0.0, -0.5), b1 = piola_v3_make(0.0, 0.0, 0.5);
  const piola_v3 a0 = piola_v3_make(-0.5, 0.05, 0.0), a1 = piola_v3_make(0.5, 0.05, 0.0);
  const piola_v3 down = piola_v3_make(0.0, -0.1, 0.0); /* to y = -0.05: through b */
  const int side = piola_edge_side(a0, a1, b0, b1);
  CHECK(t, side == 0 || side == 1);
  CHECK(t, piola_edge_side(piola_v3_add(a0, down), piola_v3_add(a1, down), b0, b1) == 1 - side);
  double key = -1.0;
  CHECK(t, piola_edge_candidate(a0, a1, b0, b1, piola_v3_add(a0, down), piola_v3_add(a1, down), b0,
                                b1, side, th, &key));
  CHECK_MSG(t, fabs(key + 0.05) < 1e-12, "key %.9g, expected -0.05 (crossed)", key);
  /* Staying 5 cm above: no contact; 1.5 cm above: a contact that does not push; 5 mm: pushes. */
  CHECK(t, !piola_edge_candidate(a0, a1, b0, b1, a0, a1, b0, b1, side, th, &key));
  const piola_v3 near = piola_v3_make(0.0, -0.035, 0.0), close = piola_v3_make(0.0, -0.045, 0.0);
  CHECK(t, piola_edge_candidate(a0, a1, b0, b1, piola_v3_add(a0, near), piola_v3_add(a1, near), b0,
                                b1, side, th, &key));
  piola_contact_frame_data f;
  piola_edge_contact_prepare(a0, a1, b0, b1, piola_v3_add(a0, near), piola_v3_add(a1, near), b0, b1,
                             side, th, 0.5, &f);
  CHECK_MSG(t, f.depth == 0.0, "a pair 1.5 cm apart pushes by %.9g m", f.depth);
  piola_edge_contact_prepare(a0, a1, b0, b1, piola_v3_add(a0, close), piola_v3_add(a1, close), b0,
                             b1, side, th, 0.5, &f);
  CHECK_MSG(t, fabs(f.depth - 0.005) < 1e-12, "a pair 5 mm apart pushes by %.9g m (5 mm)", f.depth);
  /* Passed through to 5 cm under b: pushed back up, by inverse masses and weights (a's ends
   * weigh 1/2 each, so do b's); b pinned, a alone moves, by the whole depth of 6 cm. */
  piola_edge_contact_prepare(a0, a1, b0, b1, piola_v3_add(a0, down), piola_v3_add(a1, down), b0, b1,
                             side, th, 0.0, &f);
  CHECK_MSG(t,
            fabs(f.depth - 0.06) < 1e-12 && fabs(f.b.x - 0.5) < 1e-12 && fabs(f.b.y - 0.5) < 1e-12,
            "depth %.9g (0.06), s %.9g, t %.9g (0.5)", f.depth, f.b.x, f.b.y);
  piola_v3 dx[4];
  double length[4];
  piola_edge_contact_respond(&f, 1.0, 1.0, 0.0, 0.0, dx, length);
  const double moved = 0.5 * (dx[0].y + dx[1].y); /* a's midpoint */
  CHECK_MSG(t, fabs(moved - 0.06) < 1e-12 && dx[2].y == 0.0 && dx[3].y == 0.0,
            "a's midpoint moved by %.9g (0.06), b's ends by %.9g, %.9g", moved, dx[2].y, dx[3].y);
  /* Equal masses: a and b share the push, momentum conserved. */
  piola_edge_contact_respond(&f, 1.0, 1.0, 1.0, 1.0, dx, length);
  CHECK_MSG(t, fabs(dx[0].y + dx[1].y + dx[2].y + dx[3].y) < 1e-12,
            "the corrections sum to %.3g (momentum)", dx[0].y + dx[1].y + dx[2].y + dx[3].y);
  /* Passing through b near an end of a (its closest point 0.5 mm from a0, under 1% of its length):
   * no new pair, the vertex-triangle contacts act there. */
  const piola_v3 shift = piola_v3_make(0.4995, 0.0, 0.0);
  CHECK(t,
        !piola_edge_candidate(piola_v3_add(a0, shift), piola_v3_add(a1, shift), b0, b1,
                              piola_v3_add(piola_v3_add(a0, shift), down),
                              piola_v3_add(piola_v3_add(a1, shift), down), b0, b1, side, th, &key));
  /* Parallel: no side, no contact. */
  const piola_v3 c0 = piola_v3_make(-0.5, 0.0, 0.0), c1 = piola_v3_make(0.5, 0.0, 0.0);
  CHECK(t, piola_edge_side(a0, a1, c0, c1) == -1);
  CHECK(t, !piola_edge_candidate(a0, a1, c0, c1, a0, a1, c0, c1, 0, th, &key));
  printf("  closest points of 200 random segment pairs within %.3g m of a 201 x 201 search\n",
         worst);
}

/* ---- Scenes ------------------------------------------------------------------------------- */

typedef struct ee_run {
  int32_t worst_crossings, worst_step; /* the most crossings at one frame, and when */
  int32_t edge_steps;                  /* frames with edge contacts in the stats */
  int32_t most_edge_contacts;
  uint64_t hash;
  bool ok;
} ee_run;

/* A bar of `cells` cells of 0.1 m along x (or z with along_z), 0.05 x 0.05 m across: one cell
 * thick. */
static piola_tet_mesh ee_bar(bool along_z) {
  return along_z ? wt_box(1, 1, 10, 0.05f, 0.05f, 1.0f) : wt_box(10, 1, 1, 1.0f, 0.05f, 0.05f);
}

static piola_status ee_throw(piola_world *w, piola_body_id b, float vy) {
  const int32_t n = piola_body_get_vertex_count(w, b);
  float *v = calloc(3 * (size_t)n, sizeof *v);
  if (v == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < n; ++i) {
    v[3 * i + 1] = vy;
  }
  piola_status s = piola_body_set_velocities(w, b, v, n);
  free(v);
  return s;
}

/* Steps the world `steps` times, counting crossings between bodies a and b at every frame. */
static ee_run ee_steps(piola_test *t, piola_world *w, piola_body_id a, piola_body_id b,
                       int32_t steps) {
  ee_run r = {0, -1, 0, 0, 0, true};
  for (int32_t step = 0; step < steps && r.ok; ++step) {
    r.ok = piola_world_step(w) == PIOLA_OK;
    const int32_t n = ee_crossings(w, a, b);
    r.ok = r.ok && n >= 0;
    if (n > r.worst_crossings) {
      r.worst_crossings = n;
      r.worst_step = step;
    }
    piola_stats st;
    if (piola_world_get_stats(w, &st) == PIOLA_OK && st.edge_contact_count > 0) {
      r.edge_steps++;
      r.most_edge_contacts = st.edge_contact_count > r.most_edge_contacts ? st.edge_contact_count
                                                                          : r.most_edge_contacts;
    }
  }
  CHECK_MSG(t, r.ok, "a step or a read failed");
  const piola_body_id ids[2] = {a, b};
  r.hash = wt_state_hash(w, ids, 2);
  return r;
}

/* Two thin bars crossed: A (along x) on the ground, B (along z) 2 cm above it, thrown down at
 * 10 m/s (5 cm, a bar's thickness, per step): dt 5 ms, 1 substep, 5 iterations, 100 steps. The
 * bars' vertices lie 0.1 m apart along them, placed so that none comes within 2.5 cm (2.5
 * thicknesses) of the other bar's faces: the bars meet edge on edge, and only edge-edge contacts
 * can hold them apart. */
static ee_run ee_crossed_bars(piola_test *t, piola_backend backend, bool edges) {
  piola_test_log log;
  int misuse = 0;
  piola_world_def def = piola_test_world_def(&log, &misuse);
  def.backend = backend;
  def.damping = 2.0f;
  def.edge_contacts = edges;
  ee_run r = {0, -1, 0, 0, 0, false};
  piola_world *w = NULL;
  piola_tet_mesh a = ee_bar(false), b = ee_bar(true);
  const piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  piola_body_id ia, ib;
  piola_status s = piola_world_create(&def, &w);
  if (s == PIOLA_OK) {
    s = piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &a, &mat, (const float[3]){-0.55f, 0.0f, -0.025f}, &ia);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &b, &mat, (const float[3]){-0.025f, 0.07f, -0.55f}, &ib);
  }
  if (s == PIOLA_OK) {
    s = ee_throw(w, ib, -10.0f);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s == PIOLA_OK) {
    r = ee_steps(t, w, ia, ib, 100);
  }
  /* Closed surfaces: every edge is shared by two triangles. */
  piola_stats st;
  if (s == PIOLA_OK && piola_world_get_stats(w, &st) == PIOLA_OK) {
    CHECK_MSG(t, 2 * st.surface_edges == 3 * st.surface_triangles && st.surface_edges > 0,
              "%d surface edges for %d triangles of closed surfaces", (int)st.surface_edges,
              (int)st.surface_triangles);
  }
  piola_world_destroy(w);
  piola_mesh_free(&a);
  piola_mesh_free(&b);
  return r;
}

/* A thin bar (along x, one cell of 5 cm across, 0.25 kg) dropped at 10 m/s across the edge of a
 * cloth of 1 x 1 m (10 x 10 squares, 0.2 kg) held at its two borders along z, the one under the
 * bar among them; 2 cm above it, dt 5 ms, 1 substep, 5 iterations, 100 steps. The bar lies between
 * two of the cloth's border vertices and its own vertices 5 cm on either side of the border: the
 * border edge meets the bar's bottom face where no vertex is. */
static ee_run ee_bar_on_cloth(piola_test *t, piola_backend backend, bool edges) {
  piola_test_log log;
  int misuse = 0;
  piola_world_def def = piola_test_world_def(&log, &misuse);
  def.backend = backend;
  def.damping = 2.0f;
  def.edge_contacts = edges;
  ee_run r = {0, -1, 0, 0, 0, false};
  piola_world *w = NULL;
  piola_tet_mesh bar = ee_bar(false);
  piola_tri_mesh sheet;
  memset(&sheet, 0, sizeof sheet);
  piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  mat.density = 100.0f; /* 0.25 kg: about the cloth's own mass (0.2 kg) */
  const piola_cloth_material cm = piola_default_cloth_material();
  piola_body_id ic, ib;
  piola_status s =
      piola_mesh_make_grid((const int32_t[2]){10, 10}, (const float[2]){1.0f, 1.0f}, &sheet);
  if (s == PIOLA_OK) {
    s = piola_world_create(&def, &w);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_cloth(w, &sheet, &cm, (const float[3]){-1.0f, 0.5f, -0.5f}, &ic);
  }
  float *inv = NULL;
  if (s == PIOLA_OK) {
    inv = malloc(sizeof *inv * (size_t)sheet.vertex_count);
    s = inv != NULL ? piola_body_get_inverse_masses(w, ic, inv, sheet.vertex_count)
                    : PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK) {
    for (int32_t i = 0; i < sheet.vertex_count; ++i) {
      const float x = sheet.positions[3 * i];
      if (x < 0.01f || x > 0.99f) {
        inv[i] = 0.0f; /* the borders along z */
      }
    }
    s = piola_body_set_inverse_masses(w, ic, inv, sheet.vertex_count);
  }
  free(inv);
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &bar, &mat, (const float[3]){-0.45f, 0.52f, 0.025f}, &ib);
  }
  if (s == PIOLA_OK) {
    s = ee_throw(w, ib, -10.0f);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s == PIOLA_OK) {
    r = ee_steps(t, w, ic, ib, 100);
  }
  piola_world_destroy(w);
  piola_mesh_free(&bar);
  piola_tri_mesh_free(&sheet);
  return r;
}

typedef ee_run (*ee_scene_fn)(piola_test *t, piola_backend backend, bool edges);

/* The scene twice with edge contacts (no crossing at any frame, edge contacts found, bitwise
 * the same both times) and once without (it does cross: the count has teeth). */
static void ee_check_scene(piola_test *t, const char *name, ee_scene_fn scene,
                           piola_backend backend) {
  const ee_run on = scene(t, backend, true), again = scene(t, backend, true);
  const ee_run off = scene(t, backend, false);
  printf("  %s, %s: with edge contacts at most %d crossings (step %d), edge contacts in %d "
         "steps (at most %d); without them at most %d crossings (step %d)\n",
         piola_backend_name(backend), name, (int)on.worst_crossings, (int)on.worst_step,
         (int)on.edge_steps, (int)on.most_edge_contacts, (int)off.worst_crossings,
         (int)off.worst_step);
  CHECK_MSG(t, on.ok && on.worst_crossings == 0,
            "%s: %d edge-triangle crossings at step %d with edge contacts", name,
            (int)on.worst_crossings, (int)on.worst_step);
  CHECK_MSG(t, on.edge_steps > 0, "%s: no edge contact in the stats", name);
  CHECK_MSG(t, on.hash == again.hash, "%s: two runs differ (%016llx, %016llx)", name,
            (unsigned long long)on.hash, (unsigned long long)again.hash);
  CHECK_MSG(t, off.ok && off.worst_crossings > 0,
            "%s: without edge contacts nothing crosses either (the test has no teeth)", name);
  CHECK_MSG(t, off.edge_steps == 0, "%s: edge contacts counted with edge_contacts off", name);
}

void test_contact_edges_crossed_bars(piola_test *t) {
  ee_check_scene(t, "crossed bars", ee_crossed_bars, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_contact_edges_crossed_bars(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  ee_check_scene(t, "crossed bars", ee_crossed_bars, PIOLA_BACKEND_OPENCL);
}

void test_contact_edges_bar_across_cloth_edge(piola_test *t) {
  ee_check_scene(t, "bar across a cloth edge", ee_bar_on_cloth, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_contact_edges_bar_across_cloth_edge(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  ee_check_scene(t, "bar across a cloth edge", ee_bar_on_cloth, PIOLA_BACKEND_OPENCL);
}

/* ---- The clusters' lists ------------------------------------------------------------------ */

/* Whether the narrow phase skips the pair of edges e < f by the rules that do not depend on the
 * positions: a shared vertex, bodies that do not collide, or of one body self-collision off, f's
 * owner triangle in a near window of an end of e, or rest segments within the self-contact bound
 * (piola_edge_self_near). */
static bool ee_pair_skipped(const piola_solver_contacts *c, int32_t e, int32_t f,
                            double thickness) {
  const int32_t *ea = c->edge + 4 * (size_t)e, *fb = c->edge + 4 * (size_t)f;
  if (fb[0] == ea[0] || fb[0] == ea[1] || fb[1] == ea[0] || fb[1] == ea[1]) {
    return true;
  }
  const uint32_t *pa = c->body_filter + 4 * (size_t)ea[2], *pb = c->body_filter + 4 * (size_t)fb[2];
  if (ea[2] != fb[2]) {
    return !piola_contact_bodies_collide(pa[0], pa[1], pb[0], pb[1]);
  }
  const int32_t *n0 = c->vertex_near + 2 * (size_t)ea[0], *n1 = c->vertex_near + 2 * (size_t)ea[1];
  const uint64_t *m0 = c->vertex_near_mask + 2 * (size_t)ea[0],
                 *m1 = c->vertex_near_mask + 2 * (size_t)ea[1];
  const double *r = c->vertex_rest;
  const double reach = fmax(fmax(c->vertex_reach[ea[0]], c->vertex_reach[ea[1]]),
                            fmax(c->vertex_reach[fb[0]], c->vertex_reach[fb[1]]));
  return pa[2] == 0u ||
         piola_edge_near_cluster(fb[3], 1, n0[0], m0[0], n0[1], m0[1], n1[0], m1[0], n1[1],
                                 m1[1]) ||
         piola_edge_self_near(piola_vertex_at(r, ea[0]), piola_vertex_at(r, ea[1]),
                              piola_vertex_at(r, fb[0]), piola_vertex_at(r, fb[1]), reach,
                              thickness);
}

/* The pile of the cluster-list tests: a ground plane, bar a (along x) on it, bar b (along z)
 * and a second a above it thrown down at 5 m/s, and the creature c thrown onto them at 8 m/s; their
 * ids in ids[0 .. 3] where ids is not NULL. */
static piola_status ee_pile(piola_world *w, const piola_tet_mesh *a, const piola_tet_mesh *b,
                            const piola_tet_mesh *c, piola_body_id *ids) {
  const piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  const piola_tet_mesh *mesh[4] = {a, b, a, c};
  const float at[4][3] = {{-0.55f, 0.0f, -0.025f},
                          {-0.025f, 0.07f, -0.55f},
                          {-0.55f, 0.14f, 0.1f},
                          {-0.2f, 0.25f, -0.2f}};
  const float speed[4] = {0.0f, -5.0f, -5.0f, -8.0f};
  piola_status s = piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL);
  for (int i = 0; i < 4 && s == PIOLA_OK; ++i) {
    piola_body_id id;
    s = piola_world_add_tet_body(w, mesh[i], &mat, at[i], &id);
    if (s == PIOLA_OK && speed[i] != 0.0f) {
      s = ee_throw(w, id, speed[i]);
    }
    if (ids != NULL) {
      ids[i] = id;
    }
  }
  return s;
}

/* Each cluster lists the clusters its edges test per substep (piola_edge_clusters_may_meet), so
 * that an edge does not scan its own neighbourhood's entries in the grid's buckets: the contacts
 * are those of the walk of the cells only if every cluster whose box overlaps a convex edge's box
 * (a concave edge has no pairs), not skipped by the edge's own rules, and owning a pair with it
 * that no rest rule skips, is on the list of the edge's cluster. Checked by brute force over all
 * clusters at every 4th of 40 steps of a pile (three thin bars crossed and a creature thrown onto
 * them, self-collision on), CPU reference; and every cluster of a near window must hold only pairs
 * that the rules skip. The lists must also be short: fewer clusters per edge than a quarter of the
 * bucket entries of its walk. */
void test_contact_edges_cluster_lists(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  piola_world_def def = piola_test_world_def(&log, &misuse);
  def.backend = PIOLA_BACKEND_CPU_REFERENCE;
  def.edge_contacts = true;
  piola_world *w = NULL;
  piola_tet_mesh a = ee_bar(false), b = ee_bar(true), creature;
  REQUIRE_OK(t, piola_mesh_make_creature(0.6f, &creature));
  const piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  piola_body_id ids[4];
  piola_status s = piola_world_create(&def, &w);
  if (s == PIOLA_OK) {
    s = ee_pile(w, &a, &b, &creature, ids);
  }
  REQUIRE_OK(t, s);
  const piola_body_id first = ids[0];
  const piola_solver_contacts *c = &w->contacts;
  const double h = (double)def.dt / (double)def.substeps, thickness = (double)def.contact_thickness;
  int64_t edges = 0, listed = 0, scanned = 0, needed = 0, missing = 0, overflowed = 0;
  int64_t near_marks = 0, near_wrong = 0, contacts = 0;
  for (int32_t step = 0; step < 40 && s == PIOLA_OK; ++step) {
    s = piola_world_step(w);
    if (step % 4 != 3) { /* the lists checked at every 4th step */
      continue;
    }
    for (int32_t v = 0; v < w->vertex_count; ++v) { /* a substep's prediction */
      for (int k = 0; k < 3; ++k) {
        w->p[3 * v + k] = w->x[3 * v + k] + h * w->v[3 * v + k];
      }
    }
    piola_cpu_broad_phase(w);
    piola_cpu_edge_narrow_phase(w);
    contacts += c->edge_total;
    const double inv_cell = 1.0 / c->cell;
    for (int32_t e = 0; e < c->edge_count; ++e) {
      if (!c->edge_convex[e]) { /* a concave edge has no pairs (piola_edge_convex) */
        continue;
      }
      const int32_t *ea = c->edge + 4 * (size_t)e;
      const int32_t va = c->vertex[ea[0]], vb = c->vertex[ea[1]];
      const piola_box box =
          piola_edge_box(piola_vertex_at(w->x, va), piola_vertex_at(w->x, vb),
                         piola_vertex_at(w->p, va), piola_vertex_at(w->p, vb), thickness);
      const int32_t owner = c->edge_cluster[e], count = c->cluster_pair_count[owner];
      const int32_t *list = c->cluster_pair + PIOLA_CLUSTER_PAIRS * (size_t)owner;
      edges++;
      overflowed += count > PIOLA_CLUSTER_PAIRS;
      listed += count <= PIOLA_CLUSTER_PAIRS ? count : 0;
      piola_int lo[3], hi[3];
      piola_cell_range(piola_grid_vertex(box, c->margin), inv_cell, 3, lo, hi);
      for (piola_int ci = lo[0]; ci <= hi[0]; ++ci) {
        for (piola_int cj = lo[1]; cj <= hi[1]; ++cj) {
          for (piola_int ck = lo[2]; ck <= hi[2]; ++ck) {
            const piola_int bucket = piola_cell_hash(ci, cj, ck, c->bucket_mask);
            scanned += c->bucket_start[bucket + 1] - c->bucket_start[bucket];
          }
        }
      }
      for (int32_t i = 0; i < c->cluster_count && count <= PIOLA_CLUSTER_PAIRS; ++i) {
        if (c->cluster_edge_max[i] <= e ||
            !piola_boxes_overlap(box, piola_box_at(c->cluster_box, i))) {
          continue;
        }
        bool pair = false; /* a pair of e with an edge i owns that no rest rule skips */
        for (int32_t tri = c->cluster_first[i]; tri < c->cluster_first[i + 1]; ++tri) {
          for (int k = 0; k < 3; ++k) {
            const int32_t f = c->triangle_edge[3 * (size_t)tri + (size_t)k];
            pair |= ((c->triangle_owned[tri] >> k) & 1u) && f > e &&
                    !ee_pair_skipped(c, e, f, thickness);
          }
        }
        bool on_list = false;
        for (int32_t k = 0; k < count; ++k) {
          on_list |= list[k] == i;
        }
        needed += pair;
        missing += pair && !on_list;
      }
    }
  }
  REQUIRE_OK(t, s);
  /* The near windows: every marked cluster's pairs with the cluster's own are skipped. */
  for (int32_t i = 0; i < c->cluster_count; ++i) {
    for (int32_t k = 0; k < PIOLA_NEAR_WINDOW; ++k) {
      const int32_t j = c->cluster_near[i] + k;
      if (((c->cluster_near_mask[i] >> k) & 1u) == 0) {
        continue;
      }
      near_marks++;
      for (int32_t ta = c->cluster_first[i]; ta < c->cluster_first[i + 1]; ++ta) {
        for (int32_t tb = c->cluster_first[j]; tb < c->cluster_first[j + 1]; ++tb) {
          for (int ka = 0; ka < 3; ++ka) {
            for (int kb = 0; kb < 3; ++kb) {
              const int32_t e = c->triangle_edge[3 * (size_t)ta + (size_t)ka],
                            f = c->triangle_edge[3 * (size_t)tb + (size_t)kb];
              near_wrong += ((c->triangle_owned[ta] >> ka) & 1u) &&
                            ((c->triangle_owned[tb] >> kb) & 1u) && f > e &&
                            !ee_pair_skipped(c, e, f, thickness);
            }
          }
        }
      }
    }
  }
  printf("  %lld edge queries: %.2f clusters listed and %.1f bucket entries in the cells per edge, "
         "%lld clusters with pairs (%lld not listed), %lld on overflowed lists; %lld near marks "
         "(%lld wrong), %lld edge contacts\n",
         (long long)edges, (double)listed / (double)edges, (double)scanned / (double)edges,
         (long long)needed, (long long)missing, (long long)overflowed, (long long)near_marks,
         (long long)near_wrong, (long long)contacts);
  CHECK_MSG(t, missing == 0, "%lld clusters an edge must test are not on its cluster's list",
            (long long)missing);
  CHECK_MSG(t, near_wrong == 0, "%lld pairs of near-marked clusters not skipped by the rules",
            (long long)near_wrong);
  CHECK(t, needed > 0 && contacts > 0 && near_marks > 0);
  CHECK_MSG(t, 4 * listed < scanned, "%.2f clusters listed per edge against %.1f bucket entries",
            (double)listed / (double)edges, (double)scanned / (double)edges);
  /* The windows are kept with the bodies: after a body is added and, later, the first removed
   * (the contact arrays rebuilt, the clusters renumbered), the kept windows equal windows
   * computed afresh. */
  for (int round = 0; round < 2; ++round) {
    s = round == 0 ? piola_world_add_tet_body(w, &b, &mat, (const float[3]){0.6f, 0.3f, 0.4f}, NULL)
                   : piola_world_remove_body(w, first);
    if (s == PIOLA_OK) {
      s = piola_world_step(w);
    }
    REQUIRE_OK(t, s);
    const size_t n = (size_t)c->cluster_count;
    int32_t *kept_first = malloc(sizeof *kept_first * n);
    uint64_t *kept_mask = malloc(sizeof *kept_mask * n);
    REQUIRE(t, kept_first != NULL && kept_mask != NULL);
    memcpy(kept_first, c->cluster_near, sizeof *kept_first * n);
    memcpy(kept_mask, c->cluster_near_mask, sizeof *kept_mask * n);
    int64_t differ = 0, marks = 0;
    for (int32_t a0 = 0, a1 = 0; a0 < c->cluster_count; a0 = a1) {
      const int32_t body = c->triangle_body[c->cluster_first[a0]];
      while (a1 < c->cluster_count && c->triangle_body[c->cluster_first[a1]] == body) {
        ++a1;
      }
      piola_cluster_near_windows(&w->contacts, a0, a1, thickness);
    }
    for (size_t i = 0; i < n; ++i) {
      differ += c->cluster_near[i] != kept_first[i] || c->cluster_near_mask[i] != kept_mask[i];
      marks += piola_popcount64(kept_mask[i]);
    }
    CHECK_MSG(t, differ == 0 && marks > 0,
              "round %d: %lld of %zu kept cluster windows differ from fresh ones (%lld marks)",
              round, (long long)differ, n, (long long)marks);
    free(kept_first);
    free(kept_mask);
  }
  piola_world_destroy(w);
  piola_mesh_free(&a);
  piola_mesh_free(&b);
  piola_mesh_free(&creature);
}

/* The pile on OpenCL against the CPU reference, one step at a time from the same state: before
 * each of 40 steps the device world loads the reference's state, and both take the step. The
 * edge-edge contacts of each step's last substep agree in number within 0.5% over the run (float
 * and double decide a few pairs at the thickness differently). The creature's clusters meet more
 * clusters than a list holds (a fifth of its edges on the reference), so the device's edges walk
 * the grid's cells there beside the listed ones. */
void test_opencl_contact_edges_pile_matches_reference(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  capture_log log;
  int misuse = 0;
  piola_world *w[2] = {NULL, NULL};
  piola_tet_mesh a = ee_bar(false), b = ee_bar(true), creature;
  REQUIRE_OK(t, piola_mesh_make_creature(0.6f, &creature));
  piola_status s = PIOLA_OK;
  for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
    piola_world_def def = opencl_test_world_def(
        k == 0 ? PIOLA_BACKEND_CPU_REFERENCE : PIOLA_BACKEND_OPENCL, &log, &misuse);
    def.edge_contacts = true;
    s = piola_world_create(&def, &w[k]);
    if (s == PIOLA_OK) {
      s = ee_pile(w[k], &a, &b, &creature, NULL);
    }
  }
  size_t bytes = 0;
  if (s == PIOLA_OK) {
    s = piola_world_get_state_size(w[0], &bytes);
  }
  void *state = s == PIOLA_OK ? malloc(bytes) : NULL;
  CHECK_STATUS(t, s, PIOLA_OK);
  int64_t reference = 0, device = 0, apart = 0;
  int32_t steps = 0;
  for (int32_t step = 0; step < 40 && s == PIOLA_OK && state != NULL; ++step) {
    s = piola_world_save_state(w[0], state, bytes);
    if (s == PIOLA_OK) {
      s = piola_world_load_state(w[1], state, bytes);
    }
    piola_stats st[2];
    for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
      s = piola_world_step(w[k]);
      if (s == PIOLA_OK) {
        s = piola_world_get_stats(w[k], &st[k]);
      }
    }
    if (s == PIOLA_OK) {
      reference += st[0].edge_contact_count;
      device += st[1].edge_contact_count;
      apart += labs((long)st[0].edge_contact_count - (long)st[1].edge_contact_count);
      steps++;
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  printf("  %d steps: %lld edge-edge contacts on the reference, %lld on the device, %lld apart "
         "step by step\n",
         (int)steps, (long long)reference, (long long)device, (long long)apart);
  CHECK(t, steps == 40 && reference > 0);
  CHECK_MSG(t, 200 * apart <= reference,
            "the device's edge-edge contacts differ from the reference's by %lld of %lld",
            (long long)apart, (long long)reference);
  free(state);
  piola_world_destroy(w[0]);
  piola_world_destroy(w[1]);
  piola_mesh_free(&a);
  piola_mesh_free(&b);
  piola_mesh_free(&creature);
}

/* ---- Concave edges ----------------------------------------------------------------------- */

/* The edges that the narrow phase skips as concave (piola_edge_convex) at rest: a bar and the
 * creature side by side in zero gravity, one step, CPU reference. On the convex bar none; on the
 * creature some. The wings are checked against the surface triangles: an edge's first wing is the
 * third corner of the triangle that runs from its lower end to its higher, the second the other's.
 * An edge of more than two triangles (where the creature's legs meet its body) has none. The
 * skipped share of the creature's edges goes to *share. */
static void ee_concave_at_rest(piola_test *t, double *share) {
  piola_test_log log;
  int misuse = 0;
  piola_world_def def = piola_test_world_def(&log, &misuse);
  def.backend = PIOLA_BACKEND_CPU_REFERENCE;
  def.edge_contacts = true;
  def.gravity[1] = 0.0f;
  piola_world *w = NULL;
  piola_tet_mesh bar = ee_bar(false), creature;
  REQUIRE_OK(t, piola_mesh_make_creature(0.6f, &creature));
  const piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
  piola_status s = piola_world_create(&def, &w);
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &bar, &mat, (const float[3]){-0.5f, 2.0f, 0.0f}, NULL);
  }
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &creature, &mat, (const float[3]){0.0f, 0.0f, 0.0f}, NULL);
  }
  if (s == PIOLA_OK) {
    s = piola_world_step(w);
  }
  REQUIRE_OK(t, s);
  const piola_solver_contacts *c = &w->contacts;
  int32_t *count = calloc((size_t)c->edge_count, sizeof *count); /* triangles at each edge */
  REQUIRE(t, count != NULL);
  for (int32_t k = 0; k < 3 * c->triangle_count; ++k) {
    count[c->triangle_edge[k]]++;
  }
  int64_t wrong_wings = 0, sides = 0, shared = 0;
  for (int32_t tri = 0; tri < c->triangle_count; ++tri) {
    for (int k = 0; k < 3; ++k) {
      const int32_t from = c->triangle[3 * tri + k], to = c->triangle[3 * tri + (k + 1) % 3];
      const int32_t third = c->triangle[3 * tri + (k + 2) % 3];
      const int32_t e = c->triangle_edge[3 * tri + k];
      const int32_t *wing = c->edge_wing + 2 * (size_t)e;
      sides++;
      shared += count[e] != 2;
      wrong_wings += count[e] == 2 ? wing[from < to ? 0 : 1] != third : wing[0] != -1;
    }
  }
  free(count);
  int64_t bar_skipped = 0, creature_skipped = 0, creature_edges = 0;
  for (int32_t e = 0; e < c->edge_count; ++e) {
    const bool of_creature = c->edge[4 * (size_t)e + 2] == 1;
    creature_edges += of_creature;
    creature_skipped += of_creature && !c->edge_convex[e];
    bar_skipped += !of_creature && !c->edge_convex[e];
  }
  CHECK_MSG(t, wrong_wings == 0,
            "%lld of %lld triangle sides (%lld at edges of more than two) disagree with their "
            "edge's wings",
            (long long)wrong_wings, (long long)sides, (long long)shared);
  CHECK_MSG(t, bar_skipped == 0, "%lld edges of the convex bar skipped", (long long)bar_skipped);
  CHECK_MSG(t, creature_skipped > 0, "none of the creature's %lld edges skipped",
            (long long)creature_edges);
  *share = (double)creature_skipped / (double)(creature_edges > 0 ? creature_edges : 1);
  piola_world_destroy(w);
  piola_mesh_free(&bar);
  piola_mesh_free(&creature);
}

/* The narrow phase skips the pairs of concave edges (piola_edge_convex; ee_concave_at_rest), and
 * the pile (three thin bars crossed and the creature thrown onto them at 8 m/s, 2 substeps,
 * self-collision on, CPU reference) shows no crossing between any two bodies at any of 60 frames
 * (segment-triangle tests of the test's own) and keeps edge-edge contacts, none of them of a
 * skipped edge. */
void test_contact_edges_concave_skipped(piola_test *t) {
  double rest_share = 0.0;
  ee_concave_at_rest(t, &rest_share);
  piola_test_log log;
  int misuse = 0;
  piola_world_def def = piola_test_world_def(&log, &misuse);
  def.backend = PIOLA_BACKEND_CPU_REFERENCE;
  def.edge_contacts = true;
  def.substeps = 2;
  piola_world *w = NULL;
  piola_tet_mesh a = ee_bar(false), b = ee_bar(true), creature;
  REQUIRE_OK(t, piola_mesh_make_creature(0.6f, &creature));
  piola_body_id bodies[4];
  piola_status s = piola_world_create(&def, &w);
  if (s == PIOLA_OK) {
    s = ee_pile(w, &a, &b, &creature, bodies);
  }
  REQUIRE_OK(t, s);
  const piola_solver_contacts *c = &w->contacts;
  int64_t creature_skipped = 0, creature_edges = 0, skipped_kept = 0, contacts = 0;
  int32_t worst = 0, worst_step = -1;
  for (int32_t step = 0; step < 60 && s == PIOLA_OK; ++step) {
    s = piola_world_step(w);
    for (int32_t e = 0; e < c->edge_count; ++e) { /* the last substep's marks */
      const bool of_creature = c->edge[4 * (size_t)e + 2] == 3;
      creature_edges += of_creature;
      creature_skipped += of_creature && !c->edge_convex[e];
      for (int32_t k = 0; k < c->edge_contact_count[e]; ++k) {
        const int32_t f = c->edge_contact_entry[PIOLA_CONTACTS_PER_EDGE * (size_t)e + k] >> 1;
        skipped_kept += !c->edge_convex[e] || !c->edge_convex[f];
        contacts++;
      }
    }
    for (int i = 0; i < 4; ++i) {
      for (int j = i + 1; j < 4; ++j) {
        const int32_t n = ee_crossings(w, bodies[i], bodies[j]);
        if (n < 0 || n > worst) {
          worst = n < 0 ? INT32_MAX : n;
          worst_step = step;
        }
      }
    }
  }
  REQUIRE_OK(t, s);
  const double share = (double)creature_skipped / (double)(creature_edges > 0 ? creature_edges : 1);
  printf("  the creature's edges skipped as concave: %.1f%% at rest, %.1f%% in the pile; 60 steps: "
         "%lld edge-edge contacts, at most %d crossings (step %d)\n",
         100.0 * rest_share, 100.0 * share, (long long)contacts, (int)worst, (int)worst_step);
  CHECK_MSG(t, worst == 0, "%d crossings between bodies at step %d", (int)worst, (int)worst_step);
  CHECK_MSG(t, share > 0.1, "%.1f%% of the creature's edges skipped", 100.0 * share);
  CHECK(t, contacts > 0 && skipped_kept == 0);
  piola_world_destroy(w);
  piola_mesh_free(&a);
  piola_mesh_free(&b);
  piola_mesh_free(&creature);
}
