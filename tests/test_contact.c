/* Tests of body-body and self contact (kernels/piola_contact.h, src/host/contact.c, the contact
 * kernels): boxes dropped and thrown onto each other, a bar folding onto itself, collision
 * filters, determinism, bad input, statistics, stage times and the overflow report.
 *
 * Penetration is measured geometrically, independent of the library: a vertex lies inside a
 * body when it is strictly inside one of that body's tets (barycentric coordinates all above
 * CT_INSIDE_EPS), and inside its own body when it is strictly inside one of its own tets that
 * does not have it as a corner. */
#include "contact_checks.h"
#include "crosscheck.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <stdlib.h>
#include <string.h>

#define CT_MAX_BODIES 4
#define CT_INSIDE_EPS 1e-4

/* ---- Geometry ------------------------------------------------------------------------- */

static double ct_det3(const double a[3], const double b[3], const double c[3]) {
  return a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
         a[2] * (b[0] * c[1] - b[1] * c[0]);
}

/* Whether point p lies strictly inside the tet (a, b, c, d): its four barycentric coordinates
 * all exceed CT_INSIDE_EPS. Degenerate tets contain nothing. */
static bool ct_point_in_tet(const float *p, const float *a, const float *b, const float *c,
                            const float *d) {
  double e1[3], e2[3], e3[3], r[3];
  for (int k = 0; k < 3; ++k) {
    e1[k] = (double)b[k] - a[k];
    e2[k] = (double)c[k] - a[k];
    e3[k] = (double)d[k] - a[k];
    r[k] = (double)p[k] - a[k];
  }
  const double det = ct_det3(e1, e2, e3);
  if (!(fabs(det) > 1e-18)) {
    return false;
  }
  const double l1 = ct_det3(r, e2, e3) / det, l2 = ct_det3(e1, r, e3) / det,
               l3 = ct_det3(e1, e2, r) / det;
  return l1 > CT_INSIDE_EPS && l2 > CT_INSIDE_EPS && l3 > CT_INSIDE_EPS &&
         1.0 - l1 - l2 - l3 > CT_INSIDE_EPS;
}

/* Whether p is strictly inside a tet of `mesh` at positions xyz, skipping tets that have vertex
 * `skip` as a corner (-1: none). */
static bool ct_inside_mesh(const piola_tet_mesh *mesh, const float *xyz, const float *p,
                           int32_t skip) {
  for (int32_t t = 0; t < mesh->tet_count; ++t) {
    const int32_t *q = mesh->tets + 4 * (size_t)t;
    if (q[0] == skip || q[1] == skip || q[2] == skip || q[3] == skip) {
      continue;
    }
    if (ct_point_in_tet(p, xyz + 3 * (size_t)q[0], xyz + 3 * (size_t)q[1], xyz + 3 * (size_t)q[2],
                        xyz + 3 * (size_t)q[3])) {
      return true;
    }
  }
  return false;
}

/* The number of the n points pts (3 floats each) inside a tet of `mesh` at positions xyz. */
static int32_t ct_count_inside(const piola_tet_mesh *mesh, const float *xyz, const float *pts,
                               int32_t n) {
  int32_t count = 0;
  for (int32_t i = 0; i < n; ++i) {
    count += ct_inside_mesh(mesh, xyz, pts + 3 * (size_t)i, -1);
  }
  return count;
}

/* The number of surface vertices of a body (mesh at positions xyz) inside one of its own tets
 * that does not have the vertex as a corner. */
static int32_t ct_count_self_inside(const piola_tet_mesh *mesh, const float *xyz,
                                    const bool *on_surface) {
  int32_t count = 0;
  for (int32_t v = 0; v < mesh->vertex_count; ++v) {
    if (on_surface[v]) {
      count += ct_inside_mesh(mesh, xyz, xyz + 3 * (size_t)v, v);
    }
  }
  return count;
}

/* Distance from p to the segment (a, b). */
static double ct_segment_distance(const double p[3], const double a[3], const double b[3]) {
  double ab[3], ap[3], ll = 0.0, t = 0.0;
  for (int k = 0; k < 3; ++k) {
    ab[k] = b[k] - a[k];
    ap[k] = p[k] - a[k];
    ll += ab[k] * ab[k];
    t += ab[k] * ap[k];
  }
  t = ll > 0.0 ? fmin(fmax(t / ll, 0.0), 1.0) : 0.0;
  double d2 = 0.0;
  for (int k = 0; k < 3; ++k) {
    d2 += (ap[k] - t * ab[k]) * (ap[k] - t * ab[k]);
  }
  return sqrt(d2);
}

/* Distance from p to the triangle (a, b, c): to its plane where p's foot falls inside it, else
 * to the nearest edge. */
static double ct_triangle_distance(const float *pf, const float *af, const float *bf,
                                   const float *cf) {
  double p[3], a[3], b[3], c[3], e1[3], e2[3], n[3], r[3];
  for (int k = 0; k < 3; ++k) {
    p[k] = pf[k];
    a[k] = af[k];
    b[k] = bf[k];
    c[k] = cf[k];
    e1[k] = b[k] - a[k];
    e2[k] = c[k] - a[k];
    r[k] = p[k] - a[k];
  }
  n[0] = e1[1] * e2[2] - e1[2] * e2[1];
  n[1] = e1[2] * e2[0] - e1[0] * e2[2];
  n[2] = e1[0] * e2[1] - e1[1] * e2[0];
  const double nn = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
  if (nn > 0.0) {
    /* Barycentric coordinates of the foot: (u, v) with foot = a + u e1 + v e2. */
    double rxe2[3] = {r[1] * e2[2] - r[2] * e2[1], r[2] * e2[0] - r[0] * e2[2],
                      r[0] * e2[1] - r[1] * e2[0]};
    double e1xr[3] = {e1[1] * r[2] - e1[2] * r[1], e1[2] * r[0] - e1[0] * r[2],
                      e1[0] * r[1] - e1[1] * r[0]};
    const double u = (rxe2[0] * n[0] + rxe2[1] * n[1] + rxe2[2] * n[2]) / nn;
    const double v = (e1xr[0] * n[0] + e1xr[1] * n[1] + e1xr[2] * n[2]) / nn;
    if (u >= 0.0 && v >= 0.0 && u + v <= 1.0) {
      return fabs(r[0] * n[0] + r[1] * n[1] + r[2] * n[2]) / sqrt(nn);
    }
  }
  return fmin(ct_segment_distance(p, a, b),
              fmin(ct_segment_distance(p, b, c), ct_segment_distance(p, c, a)));
}

/* The smallest distance from the n points pts to the surface triangles (3 indices each, count
 * of them) of a body at positions xyz. */
static double ct_surface_distance(const float *pts, int32_t n, const int32_t *triangles,
                                  int32_t count, const float *xyz) {
  double best = INFINITY;
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t k = 0; k < count; ++k) {
      const int32_t *q = triangles + 3 * (size_t)k;
      best = fmin(best, ct_triangle_distance(pts + 3 * (size_t)i, xyz + 3 * (size_t)q[0],
                                             xyz + 3 * (size_t)q[1], xyz + 3 * (size_t)q[2]));
    }
  }
  return best;
}

/* Lowest and highest y and the mean position of n points. */
typedef struct ct_extent {
  double lo_y, hi_y;
  double centroid[3];
} ct_extent;

static ct_extent ct_extent_of(const float *xyz, int32_t n) {
  ct_extent e = {INFINITY, -INFINITY, {0.0, 0.0, 0.0}};
  for (int32_t i = 0; i < n; ++i) {
    e.lo_y = fmin(e.lo_y, xyz[3 * (size_t)i + 1]);
    e.hi_y = fmax(e.hi_y, xyz[3 * (size_t)i + 1]);
    for (int k = 0; k < 3; ++k) {
      e.centroid[k] += (double)xyz[3 * (size_t)i + k] / n;
    }
  }
  return e;
}

/* ---- Scenes ---------------------------------------------------------------------------- */

/* A world of bodies: the world, its bodies and their meshes (owned by the test). */
typedef struct ct_scene {
  piola_world *w;
  piola_test_log log;
  int dropped; /* the contact overflow's warnings among them (ct_overflow_scene) */
  int misuse;
  int32_t count;
  piola_body_id ids[CT_MAX_BODIES];
  const piola_tet_mesh *meshes[CT_MAX_BODIES];
} ct_scene;

/* The world def of the contact scenes: dt 5 ms, 1 substep, 5 iterations, damping 2 1/s,
 * gravity, contacts with the default thickness and friction, on `backend`, with the counting
 * logger and assert hook of the scene. */
static piola_world_def ct_def(ct_scene *sc, piola_backend backend) {
  piola_world_def def = piola_test_world_def(&sc->log, &sc->misuse);
  def.backend = backend;
  def.damping = 2.0f;
  return def;
}

/* Creates the scene's world from def (ct_def(), possibly changed) with a ground plane (y = 0,
 * friction 0.5) when `ground` is set. */
static piola_status ct_scene_create(ct_scene *sc, const piola_world_def *def, bool ground) {
  sc->count = 0;
  piola_status s = piola_world_create(def, &sc->w);
  if (s == PIOLA_OK && ground) {
    s = piola_world_add_plane(sc->w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL);
  }
  return s;
}

/* Neo-Hookean, XPBD, E = 1e6 Pa, nu 0.3, 1000 kg/m^3: the material of every contact scene. */
static piola_material ct_material(void) {
  return wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e6f);
}

static piola_status ct_add(ct_scene *sc, const piola_tet_mesh *mesh, float x, float y, float z) {
  if (sc->count >= CT_MAX_BODIES) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_material mat = ct_material();
  const float at[3] = {x, y, z};
  piola_status s = piola_world_add_tet_body(sc->w, mesh, &mat, at, &sc->ids[sc->count]);
  if (s == PIOLA_OK) {
    sc->meshes[sc->count++] = mesh;
  }
  return s;
}

static void ct_scene_destroy(ct_scene *sc) {
  piola_world_destroy(sc->w);
  sc->w = NULL;
}

/* The number of vertices of body `a` inside body `b` (current positions). */
static int32_t ct_inside_other(const ct_scene *sc, int32_t a, int32_t b) {
  float *pa = wt_get_positions(sc->w, sc->ids[a]), *pb = wt_get_positions(sc->w, sc->ids[b]);
  int32_t n = -1;
  if (pa != NULL && pb != NULL) {
    n = ct_count_inside(sc->meshes[b], pb, pa, sc->meshes[a]->vertex_count);
  }
  free(pa);
  free(pb);
  return n;
}

static ct_extent ct_body_extent(const ct_scene *sc, int32_t a) {
  float *p = wt_get_positions(sc->w, sc->ids[a]);
  ct_extent e = {NAN, NAN, {NAN, NAN, NAN}};
  if (p != NULL) {
    e = ct_extent_of(p, sc->meshes[a]->vertex_count);
  }
  free(p);
  return e;
}

/* Kinetic energy (J) of body a from its velocities and inverse masses (API read-back). */
static double ct_kinetic_energy(const ct_scene *sc, int32_t a) {
  const int32_t n = sc->meshes[a]->vertex_count;
  float *v = malloc(sizeof *v * 3 * (size_t)n), *wi = malloc(sizeof *wi * (size_t)n);
  double ke = NAN;
  if (v != NULL && wi != NULL && piola_body_get_velocities(sc->w, sc->ids[a], v, n) == PIOLA_OK &&
      piola_body_get_inverse_masses(sc->w, sc->ids[a], wi, n) == PIOLA_OK) {
    ke = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      if (wi[i] > 0.0f) {
        const float *u = v + 3 * (size_t)i;
        ke += 0.5 / wi[i] * ((double)u[0] * u[0] + (double)u[1] * u[1] + (double)u[2] * u[2]);
      }
    }
  }
  free(v);
  free(wi);
  return ke;
}

/* The collision surface of body a in a new array of 3 indices per triangle (free() it), its
 * triangle count in *count; NULL on failure. */
static int32_t *ct_surface(const ct_scene *sc, int32_t a, int32_t *count) {
  *count = 0;
  if (piola_body_get_surface(sc->w, sc->ids[a], NULL, 0, count) != PIOLA_OK || *count <= 0) {
    return NULL;
  }
  int32_t *tri = malloc(sizeof *tri * 3 * (size_t)*count);
  int32_t again = 0;
  if (tri != NULL && piola_body_get_surface(sc->w, sc->ids[a], tri, *count, &again) != PIOLA_OK) {
    free(tri);
    tri = NULL;
  }
  return tri;
}

/* How the vertices of body a sit against body b: how many lie inside b, how deep the deepest
 * of them is (its distance to b's surface, m; 0 when none is inside), and the smallest
 * distance of a vertex outside b to b's surface (m). */
typedef struct ct_penetration {
  int32_t inside;
  double depth;
  double clearance;
} ct_penetration;

static ct_penetration ct_penetration_of(const ct_scene *sc, int32_t a, int32_t b) {
  ct_penetration r = {-1, NAN, NAN};
  int32_t ntri = 0;
  int32_t *tri = ct_surface(sc, b, &ntri);
  float *pa = wt_get_positions(sc->w, sc->ids[a]), *pb = wt_get_positions(sc->w, sc->ids[b]);
  if (tri != NULL && pa != NULL && pb != NULL) {
    r.inside = 0;
    r.depth = 0.0;
    r.clearance = INFINITY;
    for (int32_t v = 0; v < sc->meshes[a]->vertex_count; ++v) {
      const float *p = pa + 3 * (size_t)v;
      const double d = ct_surface_distance(p, 1, tri, ntri, pb);
      if (ct_inside_mesh(sc->meshes[b], pb, p, -1)) {
        r.inside++;
        r.depth = fmax(r.depth, d);
      } else {
        r.clearance = fmin(r.clearance, d);
      }
    }
  }
  free(tri);
  free(pa);
  free(pb);
  return r;
}

/* Kinetic, gravitational (g = 9.81 m/s^2, from y = 0) and elastic energy of the world, J. */
static double ct_total_energy(const ct_scene *sc) {
  piola_stats st;
  if (piola_world_get_stats(sc->w, &st) != PIOLA_OK) {
    return NAN;
  }
  double e = st.kinetic_energy + st.elastic_energy;
  for (int32_t a = 0; a < sc->count; ++a) {
    const int32_t n = sc->meshes[a]->vertex_count;
    float *x = wt_get_positions(sc->w, sc->ids[a]), *wi = malloc(sizeof *wi * (size_t)n);
    if (x == NULL || wi == NULL ||
        piola_body_get_inverse_masses(sc->w, sc->ids[a], wi, n) != PIOLA_OK) {
      e = NAN;
    }
    for (int32_t i = 0; i < n && isfinite(e); ++i) {
      e += wi[i] > 0.0f ? 9.81 * (double)x[3 * (size_t)i + 1] / wi[i] : 0.0;
    }
    free(x);
    free(wi);
  }
  return e;
}

/* ---- 1, 2. Two boxes at rest ---------------------------------------------------------------- */

/* Box A (4 x 4 x 4 cells, 1 m) on the ground and box B, the same, 0.3 m above it, aligned with
 * it: B falls onto A, bounces a few times and comes to rest on it. */
static piola_status ct_two_boxes(ct_scene *sc, piola_backend backend, const piola_tet_mesh *box,
                                 float friction, piola_schedule schedule) {
  piola_world_def def = ct_def(sc, backend);
  def.contact_friction = friction;
  def.schedule = schedule;
  piola_status s = ct_scene_create(sc, &def, true);
  if (s == PIOLA_OK) {
    s = ct_add(sc, box, 0.0f, 0.0f, 0.0f);
  }
  if (s == PIOLA_OK) {
    s = ct_add(sc, box, 0.0f, 1.3f, 0.0f);
  }
  return s;
}

/* Two seconds of the two boxes on `backend`: no vertex of either ever inside the other; at the
 * end B rests on A, held one contact thickness above it. */
static void ct_two_boxes_rest(piola_test *t, piola_backend backend) {
  piola_tet_mesh box = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f);
  REQUIRE(t, box.vertex_count == 125);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_status s = ct_two_boxes(&sc, backend, &box, 0.5f, PIOLA_SCHEDULE_AUTO);
  CHECK_STATUS(t, s, PIOLA_OK);
  const double thickness = (double)piola_default_world_def().contact_thickness;
  int32_t worst_inside = 0, worst_step = -1, first_contact = -1;
  for (int32_t step = 0; step < 400 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
    const int32_t inside = ct_inside_other(&sc, 1, 0) + ct_inside_other(&sc, 0, 1);
    if (inside != 0 && (worst_step < 0 || inside > worst_inside)) {
      worst_inside = inside;
      worst_step = step;
    }
    piola_stats st;
    if (first_contact < 0 && piola_world_get_stats(sc.w, &st) == PIOLA_OK && st.contact_count > 0) {
      first_contact = step;
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
  const ct_extent a = ct_body_extent(&sc, 0), b = ct_body_extent(&sc, 1);
  const ct_penetration ba = ct_penetration_of(&sc, 1, 0), ab = ct_penetration_of(&sc, 0, 1);
  const double ke = ct_kinetic_energy(&sc, 1);
  const double drop_energy = 1000.0 * 9.81 * 0.3; /* m g h of B, J */
  printf("  %s: first contact in step %d; after 2 s: B's lowest point %.4f m, A's highest "
         "%.4f m, centroids %.4f and %.4f m high; nearest vertex-surface distances %.5f m (B to "
         "A) and %.5f m (A to B); B's kinetic energy %.3g J; %d contacts, overflow %d; vertices "
         "inside the other body: %d at the worst step (%d)\n",
         piola_backend_name(backend), (int)first_contact, b.lo_y, a.hi_y, a.centroid[1],
         b.centroid[1], ba.clearance, ab.clearance, ke, (int)st.contact_count,
         (int)st.contact_overflow, (int)worst_inside, (int)worst_step);
  /* B starts 0.3 m above A and no contact is possible before it has fallen to within two
   * thicknesses of it: 0.28 m take 0.239 s (step 47); A's own sag delays it by a few steps
   * (measured: step 51 on both backends). */
  CHECK_MSG(t, first_contact >= 46 && first_contact <= 56, "first contact in step %d",
            (int)first_contact);
  /* Never a vertex inside the other body, at any step (measured: none). */
  CHECK_MSG(t, worst_step < 0, "%d vertices inside the other body after step %d", (int)worst_inside,
            (int)worst_step);
  CHECK_MSG(t, ba.inside == 0 && ab.inside == 0,
            "at the end %d of B's vertices are inside A, %d "
            "of A's inside B",
            (int)ba.inside, (int)ab.inside);
  /* Resting on A, a contact thickness away from it (measured 0.98 of it on both sides; the
   * solve is not converged in 5 iterations): neither floating nor sunk in. */
  CHECK_MSG(t,
            ba.clearance > 0.75 * thickness && ba.clearance < 1.25 * thickness &&
                ab.clearance > 0.75 * thickness && ab.clearance < 1.25 * thickness,
            "vertex-surface distances %.5f m (B to A), %.5f m (A to B), want about %.3f m",
            ba.clearance, ab.clearance, thickness);
  CHECK_MSG(t, b.lo_y > a.hi_y && b.lo_y < a.hi_y + 2.0 * thickness,
            "B's lowest point %.5f m, A's highest %.5f m", b.lo_y, a.hi_y);
  CHECK_MSG(t, b.centroid[1] - a.centroid[1] > 0.95 && b.centroid[1] - a.centroid[1] < 1.02,
            "centroids %.4f m apart vertically", b.centroid[1] - a.centroid[1]);
  CHECK_MSG(t, fabs(b.centroid[0] - 0.5) < 0.01 && fabs(b.centroid[2] - 0.5) < 0.01,
            "B slid to (%.4f, %.4f)", b.centroid[0], b.centroid[2]);
  /* At rest: the stack rings after the impact and the damping of the world (2 1/s, velocities
   * times exp(-2 t)) takes it down; from the drop energy at the first contact (step 51, 0.26 s)
   * that leaves at most drop_energy exp(-4 (2 - 0.26)) = 2.7 J at 2 s, and less since XPBD and
   * friction dissipate too (measured 0.19 J on both backends). A contact that jitters or
   * pumps energy into the stack breaks it. */
  const double damped = drop_energy * exp(-4.0 * (2.0 - 0.26));
  CHECK_MSG(t, ke < damped, "B's kinetic energy %.3g J, more than the damping leaves (%.3g J)", ke,
            damped);
  CHECK_MSG(t, st.contact_count > 0 && st.contact_overflow == 0, "%d contacts, overflow %d",
            (int)st.contact_count, (int)st.contact_overflow);
  CHECK_MSG(t,
            sc.misuse == 0 && sc.log.count[PIOLA_LOG_WARNING] == 0 &&
                sc.log.count[PIOLA_LOG_ERROR] == 0,
            "misuse %d, %d warnings, %d errors (last: %s)", sc.misuse,
            sc.log.count[PIOLA_LOG_WARNING], sc.log.count[PIOLA_LOG_ERROR], sc.log.last);
  ct_scene_destroy(&sc);
  piola_mesh_free(&box);
}

void test_contact_two_boxes_rest(piola_test *t) {
  ct_two_boxes_rest(t, PIOLA_BACKEND_CPU_REFERENCE);
}

/* The largest vertex distance between two worlds of the two-box scene over `steps` steps,
 * relative to the bounding-box diagonal of the first (the cross-check of `piola crosscheck`). */
static double ct_two_boxes_deviation(piola_test *t, piola_backend backend, float friction,
                                     piola_schedule schedule, int32_t steps, int32_t *worst_step) {
  piola_tet_mesh box = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f);
  ct_scene ref, cand;
  memset(&ref, 0, sizeof ref);
  memset(&cand, 0, sizeof cand);
  double worst = NAN;
  crosscheck_sample *samples = calloc((size_t)steps, sizeof *samples);
  piola_status s = box.vertex_count > 0 && samples != NULL ? PIOLA_OK : PIOLA_ERROR_OUT_OF_MEMORY;
  if (s == PIOLA_OK) {
    s = ct_two_boxes(&ref, PIOLA_BACKEND_CPU_REFERENCE, &box, 0.5f, PIOLA_SCHEDULE_AUTO);
  }
  if (s == PIOLA_OK) {
    s = ct_two_boxes(&cand, backend, &box, friction, schedule);
  }
  if (s == PIOLA_OK) {
    crosscheck_pair pair = {ref.w, cand.w, ref.ids, cand.ids, 2};
    s = crosscheck_run(&pair, steps, samples, &worst, NULL, NULL);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  *worst_step = -1;
  for (int32_t i = 0; i < steps && s == PIOLA_OK; ++i) {
    if (samples[i].max_relative == worst) {
      *worst_step = samples[i].step;
      break;
    }
  }
  free(samples);
  ct_scene_destroy(&ref);
  ct_scene_destroy(&cand);
  piola_mesh_free(&box);
  return worst;
}

/* The same on OpenCL, and its parity with the CPU reference over the fall, the first contact
 * (step 51) and the first 30 steps of the impact. Measured on PoCL: 1.9e-7 of the diagonal at
 * worst (float rounding). The bound, 1e-5, is 50 times that and far below what a wrong contact
 * does to this scene: without contacts the reference departs from itself by 1.3e-1 over these
 * steps, with contact friction 0.4 instead of 0.5 by 1.5e-4 (checked below, so that the scene is
 * known to be sensitive at that level). The upper box's edge vertices rest a thickness above the
 * lower box's top edges, at the edge of the reach of its side triangles: float and double find
 * different contacts there, and the parity holds because such a contact's gap is at its rest
 * value (piola_contact_gap) and a correction counts in proportion to its length. */
void test_opencl_contact_two_boxes_rest(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  ct_two_boxes_rest(t, PIOLA_BACKEND_OPENCL);
  const double bound = 1e-5;
  const int32_t steps = 80;
  const piola_schedule schedules[2] = {PIOLA_SCHEDULE_BODIES, PIOLA_SCHEDULE_STAGES};
  const char *names[2] = {"per-body", "per-stage"};
  for (int i = 0; i < 2; ++i) {
    int32_t at = -1;
    const double parity =
        ct_two_boxes_deviation(t, PIOLA_BACKEND_OPENCL, 0.5f, schedules[i], steps, &at);
    printf("  parity over %d steps, %s schedule: OpenCL vs CPU reference %.3e of the diagonal "
           "(step %d)\n",
           (int)steps, names[i], parity, (int)at);
    CHECK_MSG(t, parity <= bound,
              "%s schedule: OpenCL deviates from the CPU reference by %.3e of the diagonal "
              "(step %d), more than %.1e",
              names[i], parity, (int)at, bound);
  }
  int32_t at_friction = -1;
  const double friction = ct_two_boxes_deviation(t, PIOLA_BACKEND_CPU_REFERENCE, 0.4f,
                                                 PIOLA_SCHEDULE_AUTO, steps, &at_friction);
  printf("  the reference with contact friction 0.4 vs 0.5: %.3e (step %d)\n", friction,
         (int)at_friction);
  CHECK_MSG(t, friction > 10.0 * bound, "friction 0.4 changed the scene by only %.3e", friction);
}

/* ---- 3. A thrown box ------------------------------------------------------------------------ */

/* Box B (as above) 2 cm above box A on the ground, thrown down onto it at 20 m/s (10 cm per
 * step, 0.4 cells), dt 5 ms, 1 substep, 5 iterations. */
static piola_status ct_thrown(ct_scene *sc, piola_backend backend, const piola_tet_mesh *box) {
  piola_world_def def = ct_def(sc, backend);
  piola_status s = ct_scene_create(sc, &def, true);
  if (s == PIOLA_OK) {
    s = ct_add(sc, box, 0.0f, 0.0f, 0.0f);
  }
  if (s == PIOLA_OK) {
    s = ct_add(sc, box, 0.0f, 1.02f, 0.0f);
  }
  const int32_t n = box->vertex_count;
  float *v = calloc(3 * (size_t)n, sizeof *v);
  if (s == PIOLA_OK && v == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < n && s == PIOLA_OK; ++i) {
    v[3 * i + 1] = -20.0f;
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_velocities(sc->w, sc->ids[1], v, n);
  }
  free(v);
  return s;
}

/* B must not pass through A, nor sink into it: at every step of 0.5 s B's centroid stays above
 * A's, no vertex of either lies deeper than a tenth of the contact thickness inside the other,
 * and at the end none at all.
 *
 * Measured on the CPU reference and PoCL alike: B's centroid stays at least 0.72 m above A's and
 * no vertex of either is ever inside the other (1 substep of 5 iterations stops 10 cm of motion
 * per step). Before, up to 10 of B's bottom vertices went 1.6 mm into A and 8 of A's 1.0 mm into
 * B, while a triangle entered into two cells of one bucket of the grid was found twice and
 * counted twice in a vertex's mean; found once, A's top corners went 2.7 mm into B, their push
 * diluted by B's side triangles, which met them at the edge of their reach with a full
 * thickness's push along their normals (now measured by their gap, piola_contact_gap); and while a
 * contact counted a triangle corner it did not move in that corner's mean, all 25 went 7.4 mm deep.
 */
static void ct_thrown_box(piola_test *t, piola_backend backend) {
  piola_tet_mesh box = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f);
  REQUIRE(t, box.vertex_count == 125);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_status s = ct_thrown(&sc, backend, &box);
  CHECK_STATUS(t, s, PIOLA_OK);
  const double thickness = (double)piola_default_world_def().contact_thickness;
  const double start_energy = ct_total_energy(&sc);
  ct_penetration worst[2] = {{0, 0.0, INFINITY}, {0, 0.0, INFINITY}};
  int32_t worst_step[2] = {-1, -1};
  double closest = INFINITY; /* the smallest height of B's centroid over A's, m */
  int32_t contact_steps = 0;
  for (int32_t step = 0; step < 100 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
    for (int k = 0; k < 2; ++k) {
      const ct_penetration p = ct_penetration_of(&sc, 1 - k, k); /* B in A, A in B */
      if (p.inside > worst[k].inside) {
        worst[k].inside = p.inside;
        worst_step[k] = step;
      }
      worst[k].depth = fmax(worst[k].depth, p.depth);
    }
    const ct_extent a = ct_body_extent(&sc, 0), b = ct_body_extent(&sc, 1);
    closest = fmin(closest, b.centroid[1] - a.centroid[1]);
    piola_stats st;
    if (piola_world_get_stats(sc.w, &st) == PIOLA_OK && st.contact_count > 0) {
      contact_steps++;
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  const ct_penetration end_ba = ct_penetration_of(&sc, 1, 0), end_ab = ct_penetration_of(&sc, 0, 1);
  const ct_extent a = ct_body_extent(&sc, 0), b = ct_body_extent(&sc, 1);
  const double end_energy = ct_total_energy(&sc);
  printf("  %s: B's centroid at least %.4f m above A's; during the impact up to %d of B's "
         "vertices inside A (step %d, deepest %.4f m) and %d of A's inside B (step %d, deepest "
         "%.4f m); after 100 steps %d and %d, centroids at %.3f and %.3f m; contacts in %d "
         "steps; energy %.4g J at the start, %.4g J at the end\n",
         piola_backend_name(backend), closest, (int)worst[0].inside, (int)worst_step[0],
         worst[0].depth, (int)worst[1].inside, (int)worst_step[1], worst[1].depth,
         (int)end_ba.inside, (int)end_ab.inside, a.centroid[1], b.centroid[1], (int)contact_steps,
         start_energy, end_energy);
  /* Contacts do no work on the pair as a whole: the bounce does not gain energy (measured: a
   * quarter of it is left after 100 steps, with damping 2 1/s). */
  CHECK_MSG(t, end_energy < start_energy, "energy grew from %.4g J to %.4g J", start_energy,
            end_energy);
  CHECK_MSG(t, closest > 0.0, "B's centroid went %.4f m below A's", -closest);
  CHECK_MSG(t, contact_steps > 0, "no contact in 100 steps");
  CHECK_MSG(t, end_ba.inside == 0 && end_ab.inside == 0,
            "after 100 steps %d of B's vertices are inside A and %d of A's inside B",
            (int)end_ba.inside, (int)end_ab.inside);
  CHECK_MSG(t, worst[0].depth < 0.1 * thickness && worst[1].depth < 0.1 * thickness,
            "vertices went %.4f m (B in A, %d of them at step %d) and %.4f m (A in B, %d at step "
            "%d) deep",
            worst[0].depth, (int)worst[0].inside, (int)worst_step[0], worst[1].depth,
            (int)worst[1].inside, (int)worst_step[1]);
  ct_scene_destroy(&sc);
  piola_mesh_free(&box);
}

/* The run command's own-body check (src/cli/contact_checks.c) tells a vertex pressed into a tet
 * near it at rest from one folded far through its body. A bar of 8 cubes of 10 cm (6 tets
 * each); its corner vertex v at the origin is moved to the centroid of a tet of the second cube
 * (whose points lie 0.1 to 0.3 m from v at rest) or of the last cube (0.7 m or more), under
 * self-contact bounds on either side of those distances. */
static int64_t ct_own_inside(const piola_tet_mesh *bar, const float *x, const float *bound,
                             int32_t query, int64_t *far) {
  check_body b = {x,
                  bar->vertex_count,
                  bar->tets,
                  bar->tet_count,
                  &query,
                  1,
                  bound != NULL ? bar->positions : NULL,
                  bound};
  return count_vertices_inside_own_body(&b, 1, far);
}

void test_contact_checks_tell_near_from_far(piola_test *t) {
  piola_tet_mesh bar = wt_box(8, 1, 1, 0.8f, 0.1f, 0.1f);
  REQUIRE(t, bar.tet_count == 8 * 6);
  int32_t v = -1; /* the corner at the origin */
  for (int32_t i = 0; i < bar.vertex_count; ++i) {
    const float *p = bar.positions + 3 * i;
    if (p[0] == 0.0f && p[1] == 0.0f && p[2] == 0.0f) {
      v = i;
    }
  }
  REQUIRE(t, v >= 0);
  /* A tet of the second cube (every corner at x = 0.1 or 0.2) and one of the last (x >= 0.7). */
  int32_t second = -1, last = -1;
  for (int32_t e = 0; e < bar.tet_count; ++e) {
    float lo = 1.0f, hi = 0.0f;
    for (int c = 0; c < 4; ++c) {
      const float xc = bar.positions[3 * bar.tets[4 * e + c]];
      lo = fminf(lo, xc);
      hi = fmaxf(hi, xc);
    }
    second = second < 0 && lo > 0.05f && hi < 0.25f ? e : second;
    last = last < 0 && lo > 0.65f ? e : last;
  }
  REQUIRE(t, second >= 0 && last >= 0);
  float *x = malloc(sizeof *x * 3 * (size_t)bar.vertex_count);
  float *bound = malloc(sizeof *bound * (size_t)bar.vertex_count);
  REQUIRE(t, x != NULL && bound != NULL);
  memcpy(x, bar.positions, sizeof *x * 3 * (size_t)bar.vertex_count);
  int64_t far = -1;
  for (int32_t i = 0; i < bar.vertex_count; ++i) {
    bound[i] = 0.35f;
  }
  CHECK(t, ct_own_inside(&bar, x, bound, v, &far) == 0 && far == 0); /* at rest */
  const struct {
    int32_t tet;
    float bound; /* m, every vertex's */
    int64_t far; /* expected */
  } cases[] = {
      {second, 0.35f, 0},  /* the tet's corners 0.1-0.3 m away: pressed into a near tet */
      {second, 0.099f, 1}, /* none of its points nearer than 0.1 m: a fold */
      {last, 0.35f, 1},    /* 0.7 m away at rest: a fold */
      {last, 10.0f, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    const int32_t *q = bar.tets + 4 * cases[c].tet;
    for (int k = 0; k < 3; ++k) {
      x[3 * v + k] = 0.25f * (bar.positions[3 * q[0] + k] + bar.positions[3 * q[1] + k] +
                              bar.positions[3 * q[2] + k] + bar.positions[3 * q[3] + k]);
    }
    for (int32_t i = 0; i < bar.vertex_count; ++i) {
      bound[i] = cases[c].bound;
    }
    const int64_t inside = ct_own_inside(&bar, x, bound, v, &far);
    CHECK_MSG(t, inside == 1 && far == cases[c].far,
              "case %d: %lld inside, %lld far (expected 1, %lld)", (int)c, (long long)inside,
              (long long)far, (long long)cases[c].far);
    /* Without rest data every such vertex counts as far. */
    CHECK(t, ct_own_inside(&bar, x, NULL, v, &far) == 1 && far == 1);
  }
  printf("  a vertex moved into a tet 0.1-0.3 m from it at rest: near under a 0.35 m bound, far "
         "under 0.099 m; into one 0.7 m away: far under 0.35 m\n");
  free(bound);
  free(x);
  piola_mesh_free(&bar);
}

void test_contact_thrown_box(piola_test *t) {
  ct_thrown_box(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_contact_thrown_box(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  ct_thrown_box(t, PIOLA_BACKEND_OPENCL);
}

/* ---- 4. A bar folding onto itself ----------------------------------------------------------- */

/* A hairpin: a bar of 0.1 x 0.1 m cross-section whose rest shape is bent into a U lying on its
 * side, two straight arms of `arm` m joined by a half circle of centre-line radius 0.1 m, so
 * that the arms lie one above the other with a 0.1 m gap between them; the lower arm's bottom
 * face at y = 0. Made from a box of cells along the length and 2 x 2 across. */
static piola_tet_mesh ct_hairpin(float arm, int32_t cells) {
  const double th = 0.1, rc = 0.1, pi = WT_PI;
  const double length = 2.0 * arm + pi * rc;
  piola_tet_mesh m = wt_box(cells, 2, 2, (float)length, (float)th, (float)th);
  for (int32_t i = 0; i < m.vertex_count; ++i) {
    float *p = m.positions + 3 * (size_t)i;
    const double s = p[0], u = (double)p[1] - th / 2; /* u along the inward normal */
    double cx, cy, nx, ny; /* centre line and its inward normal (towards the bend's centre) */
    if (s <= arm) {
      cx = s;
      cy = th / 2;
      nx = 0.0;
      ny = 1.0;
    } else if (s <= arm + pi * rc) {
      const double a = (s - arm) / rc;
      cx = arm + rc * sin(a);
      cy = th / 2 + rc - rc * cos(a);
      nx = -sin(a);
      ny = cos(a);
    } else {
      cx = arm - (s - arm - pi * rc);
      cy = th / 2 + 2.0 * rc;
      nx = 0.0;
      ny = -1.0;
    }
    p[0] = (float)(cx + u * nx);
    p[1] = (float)(cy + u * ny);
  }
  return m;
}

/* What became of the hairpin after a run. */
typedef struct ct_fold_result {
  int32_t end_inside;   /* surface vertices inside own tets at the end */
  int32_t worst_inside; /* the most at a sampled step */
  int32_t worst_step;   /* where (-1: never any) */
  int32_t contact_samples;
  double upper_lo, lower_hi; /* near the free end: upper arm's lowest, lower arm's highest y */
  int32_t reoriented_warnings;
} ct_fold_result;

/* 200 steps of the hairpin (E = 1e5 Pa) on the ground, with self-collision on or off and the
 * given collision filter; every 5th step samples the vertices inside own tets and the contact
 * count. */
static ct_fold_result ct_fold_run(piola_test *t, const piola_tet_mesh *bar, bool self,
                                  uint32_t group, uint32_t mask) {
  ct_fold_result r = {-1, 0, -1, 0, NAN, NAN, -1};
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_world_def def = ct_def(&sc, PIOLA_BACKEND_CPU_REFERENCE);
  piola_status s = ct_scene_create(&sc, &def, true);
  piola_material mat = ct_material();
  mat.youngs_modulus = 1.0e5f;
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(sc.w, bar, &mat, NULL, &sc.ids[0]);
    sc.meshes[0] = bar;
    sc.count = 1;
    r.reoriented_warnings = sc.log.count[PIOLA_LOG_WARNING];
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_self_collision(sc.w, sc.ids[0], self);
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_collision_filter(sc.w, sc.ids[0], group, mask);
  }
  int32_t ntri = 0;
  int32_t *tri = s == PIOLA_OK ? ct_surface(&sc, 0, &ntri) : NULL;
  bool *on_surface = calloc((size_t)bar->vertex_count, sizeof *on_surface);
  if (s == PIOLA_OK && (tri == NULL || on_surface == NULL)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t k = 0; k < 3 * ntri && s == PIOLA_OK; ++k) {
    on_surface[tri[k]] = true;
  }
  float *x = NULL;
  for (int32_t step = 0; step < 200 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
    if (step % 5 == 4 && s == PIOLA_OK) {
      free(x);
      x = wt_get_positions(sc.w, sc.ids[0]);
      const int32_t inside = x != NULL ? ct_count_self_inside(bar, x, on_surface) : -1;
      if (inside != 0 && (r.worst_step < 0 || inside > r.worst_inside)) {
        r.worst_inside = inside;
        r.worst_step = step;
      }
      piola_stats st;
      r.contact_samples += piola_world_get_stats(sc.w, &st) == PIOLA_OK && st.contact_count > 0;
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s == PIOLA_OK && x != NULL) {
    /* Near the free end (rest x < 0.3 m): the upper arm's lower face (rest y = 0.2 m) and the
     * lower arm's upper face (rest y = 0.1 m). */
    r.upper_lo = INFINITY;
    r.lower_hi = -INFINITY;
    for (int32_t i = 0; i < bar->vertex_count; ++i) {
      const float *q = bar->positions + 3 * (size_t)i;
      if (q[0] < 0.3f && fabsf(q[1] - 0.2f) < 1e-3f) {
        r.upper_lo = fmin(r.upper_lo, x[3 * (size_t)i + 1]);
      }
      if (q[0] < 0.3f && fabsf(q[1] - 0.1f) < 1e-3f) {
        r.lower_hi = fmax(r.lower_hi, x[3 * (size_t)i + 1]);
      }
    }
    r.end_inside = ct_count_self_inside(bar, x, on_surface);
  }
  free(x);
  free(tri);
  free(on_surface);
  ct_scene_destroy(&sc);
  return r;
}

/* The hairpin (arms of 0.8 m, E = 1e5 Pa, so soft that the upper arm cannot carry itself) on
 * the ground: the upper arm folds down onto the lower one within 0.3 s. With self-collision
 * it comes to rest on it about a contact thickness above it, and no surface vertex is ever
 * inside one of the body's own tets; without, the upper arm falls through the lower one to the
 * ground and ends inside it, which shows that the check can fail and that self-collision does
 * the work. Measured: with self-collision no vertex inside at any sampled step, the arms
 * 8.5 mm apart near the free end; without, 71 surface vertices inside at the end (79 at
 * worst) and the upper arm's tip on the ground. */
void test_contact_bar_folds_on_itself(piola_test *t) {
  piola_tet_mesh bar = ct_hairpin(0.8f, 38);
  REQUIRE(t, bar.vertex_count == 39 * 9 && bar.tet_count == 38 * 24);
  const double thickness = (double)piola_default_world_def().contact_thickness;
  for (int self = 1; self >= 0; --self) {
    const ct_fold_result r = ct_fold_run(t, &bar, self != 0, 1u, 0xFFFFFFFFu);
    printf("  self-collision %s: %d surface vertices inside own tets at the end, %d at worst "
           "(step %d); near the free end the upper arm's lowest point %.4f m, the lower arm's "
           "highest %.4f m; contacts in %d of 40 samples\n",
           self ? "on" : "off", (int)r.end_inside, (int)r.worst_inside, (int)r.worst_step,
           r.upper_lo, r.lower_hi, (int)r.contact_samples);
    CHECK_MSG(t, r.reoriented_warnings == 0, "the hairpin's tets were reoriented");
    if (self) {
      CHECK_MSG(t, r.worst_step < 0, "%d surface vertices inside own tets after step %d",
                (int)r.worst_inside, (int)r.worst_step);
      CHECK_MSG(t, r.end_inside == 0, "%d surface vertices inside own tets at the end",
                (int)r.end_inside);
      /* Folded: the upper arm came down by most of the 0.1 m gap and rests on the lower arm
       * about a thickness above it. */
      CHECK_MSG(
          t, r.upper_lo - r.lower_hi > 0.5 * thickness && r.upper_lo - r.lower_hi < 2.0 * thickness,
          "the arms are %.4f m apart near the free end", r.upper_lo - r.lower_hi);
      CHECK_MSG(t, r.contact_samples > 30, "contacts in %d of 40 samples", (int)r.contact_samples);
    } else {
      CHECK_MSG(t, r.end_inside > 20, "only %d surface vertices inside own tets",
                (int)r.end_inside);
      CHECK_MSG(t, r.upper_lo < r.lower_hi, "upper arm at %.4f m, lower arm up to %.4f m",
                r.upper_lo, r.lower_hi);
      CHECK_MSG(t, r.contact_samples == 0, "contacts in %d samples", (int)r.contact_samples);
    }
  }
  piola_mesh_free(&bar);
}

/* Momentum of a body (kg m/s), from its velocities and inverse masses; false on failure. */
static bool ct_momentum(const ct_scene *sc, int32_t a, double out[3]) {
  const int32_t n = sc->meshes[a]->vertex_count;
  float *v = malloc(3 * sizeof(float) * (size_t)n), *w = malloc(sizeof(float) * (size_t)n);
  bool ok = v != NULL && w != NULL &&
            piola_body_get_velocities(sc->w, sc->ids[a], v, n) == PIOLA_OK &&
            piola_body_get_inverse_masses(sc->w, sc->ids[a], w, n) == PIOLA_OK;
  out[0] = out[1] = out[2] = 0.0;
  for (int32_t i = 0; ok && i < n; ++i) {
    for (int k = 0; ok && k < 3; ++k) {
      out[k] += (double)v[3 * i + k] / (double)w[i];
    }
  }
  free(v);
  free(w);
  return ok;
}

/* The hairpin of ct_hairpin(), weightless, undamped and away from the ground, its upper arm
 * (and the part of the bend above the middle) thrown at the lower arm at 2 m/s: the arms meet
 * after 0.05 s, bounce and meet again, held apart by self-contacts in 30 of the 60 steps. Only
 * the body's own constraints act, so its momentum must stay what it was. Measured: within
 * 6.6e-9 of it on the CPU reference and 8.9e-7 on PoCL (float). When each vertex moved by the
 * mean of its contacts' corrections weighted by their lengths, which does not conserve momentum
 * (piola_contact_split), it drifted by 0.19% (both backends), and an Armadillo lying at rest in
 * a self-contact crawled off. */
/* The hairpin `bar` (ct_hairpin) floating weightless at 1 m, its upper arm thrown at the lower
 * one at 2 m/s: a body meeting itself. */
static piola_status ct_thrown_hairpin(ct_scene *sc, piola_world_def *def,
                                      const piola_tet_mesh *bar) {
  piola_status s = ct_scene_create(sc, def, false);
  if (s == PIOLA_OK) {
    s = piola_world_set_gravity(sc->w, (const float[3]){0.0f, 0.0f, 0.0f});
  }
  if (s == PIOLA_OK) {
    s = ct_add(sc, bar, 0.0f, 1.0f, 0.0f);
  }
  float *v = calloc(3 * (size_t)bar->vertex_count, sizeof *v);
  if (s == PIOLA_OK && v == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; s == PIOLA_OK && i < bar->vertex_count; ++i) {
    if (bar->positions[3 * (size_t)i + 1] > 0.15f) {
      v[3 * (size_t)i + 1] = -2.0f;
    }
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_velocities(sc->w, sc->ids[0], v, bar->vertex_count);
  }
  free(v);
  return s;
}

static void ct_self_momentum(piola_test *t, piola_backend backend) {
  piola_tet_mesh bar = ct_hairpin(0.8f, 38);
  REQUIRE(t, bar.vertex_count == 39 * 9);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_world_def def = ct_def(&sc, backend);
  def.damping = 0.0f;
  piola_status s = ct_thrown_hairpin(&sc, &def, &bar);
  double p0[3] = {0.0, 0.0, 0.0}, drift = 0.0;
  if (s == PIOLA_OK && !ct_momentum(&sc, 0, p0)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  const double size = sqrt(p0[0] * p0[0] + p0[1] * p0[1] + p0[2] * p0[2]);
  int32_t contact_steps = 0;
  for (int32_t step = 0; step < 60 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
    piola_stats st;
    double p[3];
    if (s == PIOLA_OK) {
      s = piola_world_get_stats(sc.w, &st);
    }
    if (s == PIOLA_OK && !ct_momentum(&sc, 0, p)) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
    }
    if (s == PIOLA_OK) {
      contact_steps += st.contact_count > 0;
      const double dp[3] = {p[0] - p0[0], p[1] - p0[1], p[2] - p0[2]};
      drift = fmax(drift, sqrt(dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2]));
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  printf("  %s: momentum %.4g kg m/s at the start, drifted by at most %.3g of it; self-contacts "
         "in %d of 60 steps\n",
         piola_backend_name(backend), size, drift / size, (int)contact_steps);
  CHECK_MSG(t, contact_steps >= 20, "self-contacts in %d of 60 steps only", (int)contact_steps);
  const double limit = backend == PIOLA_BACKEND_CPU_REFERENCE ? 1e-7 : 1e-4;
  CHECK_MSG(t, drift < limit * size, "momentum drifted by %.3g of it (limit %.0e)", drift / size,
            limit);
  ct_scene_destroy(&sc);
  piola_mesh_free(&bar);
}

void test_contact_self_conserves_momentum(piola_test *t) {
  ct_self_momentum(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_contact_self_conserves_momentum(piola_test *t) {
  if (opencl_test_ready(t)) {
    ct_self_momentum(t, PIOLA_BACKEND_OPENCL);
  }
}

/* A slab of 4 x 1 x 4 cells of 0.1 m, weightless and away from the ground, whose middle top
 * vertex starts pushed through the slab to 5 mm under its bottom face, which inverts its tets.
 * The elastic solve pulls it back up, from outside the bottom triangles and within two
 * thicknesses of them. It is joined by tet edges to their corners, so self-collision must
 * leave the pair alone: a contact would hold the vertex under the slab and its tets inverted.
 * Measured: no inverted tet after the first step and the vertex back at 1.097 m (rest 1.1 m),
 * on both backends; with the pair allowed (the rest-distance rule alone), 2 tets stayed
 * inverted to the end and the vertex at 1.049 m. */
static void ct_pushed_through(piola_test *t, piola_backend backend) {
  piola_tet_mesh slab = wt_box(4, 1, 4, 0.4f, 0.1f, 0.4f);
  REQUIRE(t, slab.vertex_count == 5 * 2 * 5);
  int32_t middle = -1;
  for (int32_t i = 0; i < slab.vertex_count; ++i) {
    const float *q = slab.positions + 3 * (size_t)i;
    if (fabsf(q[0] - 0.2f) < 1e-4f && fabsf(q[1] - 0.1f) < 1e-4f && fabsf(q[2] - 0.2f) < 1e-4f) {
      middle = i;
    }
  }
  REQUIRE(t, middle >= 0);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  const piola_world_def def = ct_def(&sc, backend);
  piola_status s = ct_scene_create(&sc, &def, false);
  if (s == PIOLA_OK) {
    s = piola_world_set_gravity(sc.w, (const float[3]){0.0f, 0.0f, 0.0f});
  }
  if (s == PIOLA_OK) {
    s = ct_add(&sc, &slab, 0.0f, 1.0f, 0.0f);
  }
  float *x = s == PIOLA_OK ? wt_get_positions(sc.w, sc.ids[0]) : NULL;
  if (s == PIOLA_OK && x == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK) {
    x[3 * (size_t)middle + 1] = 1.0f - 0.005f;
    s = piola_body_set_positions(sc.w, sc.ids[0], x, slab.vertex_count);
  }
  piola_stats st;
  memset(&st, 0, sizeof st);
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(sc.w, &st);
  }
  const int32_t inverted_at_start = st.inverted_tets;
  int32_t last_inverted_step = -1;
  for (int32_t step = 0; step < 200 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
    if (s == PIOLA_OK) {
      s = piola_world_get_stats(sc.w, &st);
    }
    if (s == PIOLA_OK && st.inverted_tets > 0) {
      last_inverted_step = step;
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  free(x);
  x = s == PIOLA_OK ? wt_get_positions(sc.w, sc.ids[0]) : NULL;
  if (x != NULL) {
    const double y = x[3 * (size_t)middle + 1];
    printf("  %s: %d tets inverted at the start, last inverted after step %d, %d at the end; the "
           "vertex at %.4f m (rest 1.1 m)\n",
           backend == PIOLA_BACKEND_OPENCL ? "opencl" : "cpu", (int)inverted_at_start,
           (int)last_inverted_step, (int)st.inverted_tets, y);
    CHECK_MSG(t, inverted_at_start > 0, "pushing the vertex through inverted no tet");
    CHECK_MSG(t, st.inverted_tets == 0, "%d tets inverted at the end", (int)st.inverted_tets);
    CHECK_MSG(t, last_inverted_step < 50, "tets inverted until step %d", (int)last_inverted_step);
    CHECK_MSG(t, fabs(y - 1.1) < 0.01, "the vertex ends at %.4f m, not back at 1.1 m", y);
  }
  free(x);
  ct_scene_destroy(&sc);
  piola_mesh_free(&slab);
}

void test_contact_self_lets_inversions_recover(piola_test *t) {
  ct_pushed_through(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_contact_self_lets_inversions_recover(piola_test *t) {
  if (opencl_test_ready(t)) {
    ct_pushed_through(t, PIOLA_BACKEND_OPENCL);
  }
}

/* One body of two separate tets, B (vertices 0-3, its top face at y = 0, outward +y) and A
 * (4-7, 0.5 m away in the rest shape), every vertex pinned (inverse mass 0), no gravity: A's
 * corner 4 placed 5 mm over B's top face, the rest of A above and beside B, so that the only
 * pair in reach is vertex 4 against B's top triangle. `inverted`: A mirrored across the plane
 * x = 0.02 (its corner 5 moved to the other side), so A is inverted. Returns the contacts of
 * the first step (-1 on failure). */
static int32_t ct_pair_at_inverted_tet(piola_test *t, piola_backend backend, bool inverted) {
  static const float rest[24] = {0.0f, 0.0f, 0.0f,  0.1f, 0.0f, 0.0f, 0.0f, 0.0f,
                                 0.1f, 0.0f, -0.1f, 0.0f, 0.5f, 0.0f, 0.0f, 0.6f,
                                 0.0f, 0.0f, 0.5f,  0.0f, 0.1f, 0.5f, 0.1f, 0.0f};
  static const int32_t tets[8] = {0, 1, 2, 3, 4, 5, 7, 6}; /* both positively oriented */
  piola_tet_mesh mesh = {(float *)rest, 8, (int32_t *)tets, 2};
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_world_def def = ct_def(&sc, backend);
  def.gravity[0] = def.gravity[1] = def.gravity[2] = 0.0f;
  piola_status s = ct_scene_create(&sc, &def, false);
  if (s == PIOLA_OK) {
    s = ct_add(&sc, &mesh, 0.0f, 0.0f, 0.0f);
  }
  const float zero[8] = {0.0f};
  if (s == PIOLA_OK) {
    s = piola_body_set_inverse_masses(sc.w, sc.ids[0], zero, 8);
  }
  float x[24];
  memcpy(x, rest, sizeof x);
  const float a[12] = {0.02f,  0.005f, 0.02f,  inverted ? -0.08f : 0.12f,
                       0.005f, 0.02f,  0.02f,  0.005f,
                       0.12f,  0.02f,  0.105f, 0.02f};
  memcpy(x + 12, a, sizeof a);
  if (s == PIOLA_OK) {
    s = piola_body_set_positions(sc.w, sc.ids[0], x, 8);
  }
  piola_stats st;
  memset(&st, 0, sizeof st);
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(sc.w, &st);
  }
  const int32_t inverted_tets = st.inverted_tets;
  if (s == PIOLA_OK) {
    s = piola_world_step(sc.w);
  }
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(sc.w, &st);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  CHECK_MSG(t, inverted_tets == (inverted ? 1 : 0), "%d tets inverted, expected %d",
            (int)inverted_tets, inverted ? 1 : 0);
  ct_scene_destroy(&sc);
  return s == PIOLA_OK ? st.contact_count : -1;
}

/* A body's pair with itself is released while a tet at it is inverted
 * (piola_contact_self_untangled): the same vertex over the same triangle is a contact beside an
 * upright tet and none beside an inverted one. */
static void ct_self_released(piola_test *t, piola_backend backend) {
  const int32_t upright = ct_pair_at_inverted_tet(t, backend, false);
  const int32_t turned = ct_pair_at_inverted_tet(t, backend, true);
  CHECK_MSG(t, upright == 1, "%d contacts beside the upright tet, expected 1", (int)upright);
  CHECK_MSG(t, turned == 0, "%d contacts beside the inverted tet, expected 0", (int)turned);
}

void test_contact_self_released_at_inverted_tets(piola_test *t) {
  ct_self_released(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_contact_self_released_at_inverted_tets(piola_test *t) {
  if (opencl_test_ready(t)) {
    ct_self_released(t, PIOLA_BACKEND_OPENCL);
  }
}

/* A slab of 0.4 x 0.1 x 0.4 m (4 x 1 x 4 cells) with a sliver on its top: a fifth tet on the top
 * triangle of the middle cell nearest (0.2, 0.2), its apex `rise` m above the triangle's centroid
 * (vertex slab + 0, the last). The triangle becomes inner; the sliver's three other faces are
 * surface. NULL arrays on failure. */
static piola_tet_mesh ct_slab_with_sliver(float rise) {
  piola_tet_mesh slab = wt_box(4, 1, 4, 0.4f, 0.1f, 0.4f), m;
  memset(&m, 0, sizeof m);
  const int32_t n = slab.vertex_count, nt = slab.tet_count;
  int32_t face[3] = {-1, -1, -1};
  double best = INFINITY;
  for (int32_t t = 0; t < nt; ++t) { /* the top face (all corners at y = 0.1) nearest the middle */
    const int32_t *q = slab.tets + 4 * (size_t)t;
    for (int k = 0; k < 4; ++k) {
      const int32_t f[3] = {q[(k + 1) % 4], q[(k + 2) % 4], q[(k + 3) % 4]};
      double c[3] = {0.0, 0.0, 0.0};
      bool top = true;
      for (int j = 0; j < 3; ++j) {
        top = top && slab.positions[3 * (size_t)f[j] + 1] > 0.099f;
        for (int a = 0; a < 3; ++a) {
          c[a] += slab.positions[3 * (size_t)f[j] + a] / 3.0;
        }
      }
      const double dist = hypot(c[0] - 0.2, c[2] - 0.2);
      if (top && dist < best) {
        best = dist;
        memcpy(face, f, sizeof face);
      }
    }
  }
  m.positions = malloc(3 * sizeof(float) * (size_t)(n + 1));
  m.tets = malloc(4 * sizeof(int32_t) * (size_t)(nt + 1));
  if (face[0] < 0 || m.positions == NULL || m.tets == NULL) {
    piola_mesh_free(&m);
    piola_mesh_free(&slab);
    return m;
  }
  memcpy(m.positions, slab.positions, 3 * sizeof(float) * (size_t)n);
  memcpy(m.tets, slab.tets, 4 * sizeof(int32_t) * (size_t)nt);
  for (int a = 0; a < 3; ++a) {
    float c = 0.0f;
    for (int j = 0; j < 3; ++j) {
      c += slab.positions[3 * (size_t)face[j] + a] / 3.0f;
    }
    m.positions[3 * (size_t)n + a] = a == 1 ? c + rise : c;
  }
  /* Corners ordered so that the apex lies on the positive side (det > 0). */
  const float *p0 = m.positions + 3 * (size_t)face[0], *p1 = m.positions + 3 * (size_t)face[1],
              *p2 = m.positions + 3 * (size_t)face[2], *p3 = m.positions + 3 * (size_t)n;
  const double e1[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
  const double e2[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
  const double e3[3] = {p3[0] - p0[0], p3[1] - p0[1], p3[2] - p0[2]};
  const bool positive = ct_det3(e1, e2, e3) > 0.0;
  int32_t *q = m.tets + 4 * (size_t)nt;
  q[0] = face[0];
  q[1] = positive ? face[1] : face[2];
  q[2] = positive ? face[2] : face[1];
  q[3] = n;
  m.vertex_count = n + 1;
  m.tet_count = nt + 1;
  piola_mesh_free(&slab);
  return m;
}

/* A sliver pressed flat: body A, the slab of ct_slab_with_sliver() on the ground with its
 * sliver's apex 3 mm above the slab's top, and body B, a 0.2 m box of 2 x 2 x 2 cells, dropped
 * from 5 cm above the apex onto it, then resting on it. The contacts, projected after the
 * tets, press the apex down to the box's bottom less the thickness; the sliver's projection
 * lifts it again, and without the inverted-tet pass (piola_world_step) the contacts had the last
 * word and the sliver ended most steps inverted (measured: 75 of the 100 steps, on the CPU
 * reference and PoCL, every path alike), as the surface slivers of the Armadillo do in the funnel's
 * pile. With the pass no step ends with a tet inverted, and the contacts still hold: at the end no
 * vertex of either body lies inside the other (the box touches the slab from step 16 on: 85 steps
 * with contacts). `schedule` and `lanes` choose the OpenCL path (the packets of CPU devices, the
 * per-body kernel, the per-stage kernels). `load` multiplies the box's density: at 50 (an 80 kg
 * box on the 3 mm sliver) the contacts press the apex up to 5 mm through the sliver's base, and
 * one sweep of the inverted-tet pass lifted it only part of the way (43 of the 100 steps ended
 * with it inverted, on the CPU reference); the pass sweeps again while it does work. */
static void ct_sliver(piola_test *t, piola_backend backend, piola_schedule schedule, int32_t lanes,
                      float load) {
  piola_tet_mesh slab = ct_slab_with_sliver(0.003f);
  piola_tet_mesh box = wt_box(2, 2, 2, 0.2f, 0.2f, 0.2f);
  REQUIRE(t, slab.vertex_count == 51 && box.vertex_count == 27);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_world_def def = ct_def(&sc, backend);
  def.schedule = schedule;
  def.simd_lanes = lanes;
  piola_status s = ct_scene_create(&sc, &def, true);
  if (s == PIOLA_OK) {
    s = ct_add(&sc, &slab, 0.0f, 0.0f, 0.0f);
  }
  const float *apex = slab.positions + 3 * 50;
  if (s == PIOLA_OK && sc.count < CT_MAX_BODIES) {
    piola_material heavy = ct_material();
    heavy.density *= load;
    const float at[3] = {apex[0] - 0.1f, apex[1] + 0.05f, apex[2] - 0.1f};
    s = piola_world_add_tet_body(sc.w, &box, &heavy, at, &sc.ids[sc.count]);
    if (s == PIOLA_OK) {
      sc.meshes[sc.count++] = &box;
    }
  }
  int32_t inverted_steps = 0, contact_steps = 0;
  for (int32_t step = 0; step < 100 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
    piola_stats st;
    if (s == PIOLA_OK) {
      s = piola_world_get_stats(sc.w, &st);
    }
    if (s == PIOLA_OK) {
      inverted_steps += st.inverted_tets > 0;
      contact_steps += st.contact_count > 0;
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  const ct_penetration ba = ct_penetration_of(&sc, 1, 0), ab = ct_penetration_of(&sc, 0, 1);
  printf("  %s (schedule %d, lanes %d, load %g): contacts in %d of 100 steps, a tet inverted "
         "after %d; at the end %d of B's vertices inside A and %d of A's inside B\n",
         piola_backend_name(backend), (int)schedule, (int)lanes, (double)load, (int)contact_steps,
         (int)inverted_steps, (int)ba.inside, (int)ab.inside);
  CHECK_MSG(t, contact_steps >= 80, "the box touched the slab in %d steps only",
            (int)contact_steps);
  CHECK_MSG(t, inverted_steps == 0, "%d steps ended with a tet inverted", (int)inverted_steps);
  CHECK_MSG(t, ba.inside == 0 && ab.inside == 0,
            "at the end %d of B's vertices are inside A and %d of A's inside B", (int)ba.inside,
            (int)ab.inside);
  CHECK_MSG(t, sc.misuse == 0, "%d misuse reports", sc.misuse);
  ct_scene_destroy(&sc);
  piola_mesh_free(&box);
  piola_mesh_free(&slab);
}

void test_contact_sliver_not_left_inverted(piola_test *t) {
  ct_sliver(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEDULE_AUTO, 0, 1.0f);
  ct_sliver(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEDULE_AUTO, 0, 50.0f);
}

void test_opencl_contact_sliver_not_left_inverted(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const float loads[2] = {1.0f, 50.0f};
  for (int k = 0; k < 2; ++k) {
    ct_sliver(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEDULE_AUTO, 0, loads[k]);
    ct_sliver(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEDULE_BODIES, 1, loads[k]);
    ct_sliver(t, PIOLA_BACKEND_OPENCL, PIOLA_SCHEDULE_STAGES, 1, loads[k]);
  }
}

/* ---- 5. Collision filters -------------------------------------------------------------------- */

/* The two-box drop with the given filters (group, mask of A and of B) set before the first
 * step, or contacts off: after 100 steps (B met A at step 51), how many of B's vertices are
 * inside A, and the most contacts a step found. */
typedef struct ct_filter_result {
  int32_t inside;
  int32_t contacts;
  int32_t misuse;
} ct_filter_result;

static ct_filter_result ct_filter_run(piola_test *t, piola_backend backend,
                                      const piola_tet_mesh *box, bool contacts, uint32_t group_a,
                                      uint32_t mask_a, uint32_t group_b, uint32_t mask_b) {
  ct_filter_result r = {-1, -1, -1};
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_world_def def = ct_def(&sc, backend);
  def.contacts = contacts;
  piola_status s = ct_scene_create(&sc, &def, true);
  if (s == PIOLA_OK) {
    s = ct_add(&sc, box, 0.0f, 0.0f, 0.0f);
  }
  if (s == PIOLA_OK) {
    s = ct_add(&sc, box, 0.0f, 1.3f, 0.0f);
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_collision_filter(sc.w, sc.ids[0], group_a, mask_a);
  }
  if (s == PIOLA_OK) {
    s = piola_body_set_collision_filter(sc.w, sc.ids[1], group_b, mask_b);
  }
  int32_t most = 0;
  for (int32_t step = 0; step < 100 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
    piola_stats st;
    if (s == PIOLA_OK) {
      s = piola_world_get_stats(sc.w, &st);
    }
    most = s == PIOLA_OK && st.contact_count > most ? st.contact_count : most;
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s == PIOLA_OK) {
    r.inside = ct_inside_other(&sc, 1, 0);
    r.contacts = most;
    r.misuse = sc.misuse;
  }
  ct_scene_destroy(&sc);
  return r;
}

/* The filter cases of the two-box drop on `backend`: bodies A and B collide exactly when A's
 * group has a bit in B's mask and B's group has a bit in A's mask; the defaults (group 1, all
 * bits in the mask) collide; def.contacts = false turns all contact off. Each case that does
 * not collide ends with B sunk into A (measured: 73 of its vertices inside A, no contact at
 * any step), each that does with none inside. Then a filter changed while B rests on A: B
 * sinks into it within 0.5 s. */
static void ct_filter_cases(piola_test *t, piola_backend backend) {
  piola_tet_mesh box = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f);
  REQUIRE(t, box.vertex_count == 125);
  const uint32_t all = 0xFFFFFFFFu;
  const struct {
    const char *what;
    bool contacts;
    uint32_t group_a, mask_a, group_b, mask_b;
    bool collide;
  } cases[] = {
      {"defaults", true, 1u, all, 1u, all, true},
      {"contacts off", false, 1u, all, 1u, all, false},
      {"A's mask excludes B's group", true, 1u, ~2u, 2u, all, false},
      {"B's mask excludes A's group", true, 1u, all, 2u, ~1u, false},
      {"each in the other's mask", true, 0x6u, 0x8u, 0x8u, 0x2u, true},
      {"B's group in A's mask only", true, 0x4u, 0x8u, 0x8u, 0x2u, false},
      {"A's group in B's mask only", true, 0x4u, 0x1u, 0x8u, 0x4u, false},
      {"group 0", true, 0u, all, 1u, all, false},
      {"mask 0", true, 1u, all, 1u, 0u, false},
      {"high bit", true, 0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u, true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const ct_filter_result r = ct_filter_run(t, backend, &box, cases[i].contacts, cases[i].group_a,
                                             cases[i].mask_a, cases[i].group_b, cases[i].mask_b);
    printf("  %s, %-28s: %3d of B's vertices inside A, up to %3d contacts\n",
           piola_backend_name(backend), cases[i].what, (int)r.inside, (int)r.contacts);
    if (cases[i].collide) {
      CHECK_MSG(t, r.inside == 0 && r.contacts > 0, "%s: %d vertices inside, %d contacts",
                cases[i].what, (int)r.inside, (int)r.contacts);
    } else {
      CHECK_MSG(t, r.inside >= 25 && r.contacts == 0, "%s: %d vertices inside, %d contacts",
                cases[i].what, (int)r.inside, (int)r.contacts);
    }
    CHECK_MSG(t, r.misuse == 0, "%s: misuse reported", cases[i].what);
  }
  /* A filter set while the bodies touch takes effect from the next step: B rests on A after
   * 1.5 s (no vertex inside); with B's mask cleared it sinks into A within the next 0.5 s. */
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  REQUIRE_OK(t, ct_two_boxes(&sc, backend, &box, 0.5f, PIOLA_SCHEDULE_AUTO));
  piola_status s = PIOLA_OK;
  for (int32_t step = 0; step < 300 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  piola_stats st;
  CHECK_STATUS(t, piola_world_get_stats(sc.w, &st), PIOLA_OK);
  const int32_t before = ct_inside_other(&sc, 1, 0), contacts_before = st.contact_count;
  CHECK_STATUS(t, piola_body_set_collision_filter(sc.w, sc.ids[1], 1u, 0u), PIOLA_OK);
  for (int32_t step = 0; step < 100 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  CHECK_STATUS(t, piola_world_get_stats(sc.w, &st), PIOLA_OK);
  const int32_t after = ct_inside_other(&sc, 1, 0);
  printf("  %s, filter changed at rest: %d inside with %d contacts before, %d inside with %d "
         "contacts 0.5 s after\n",
         piola_backend_name(backend), (int)before, (int)contacts_before, (int)after,
         (int)st.contact_count);
  CHECK_MSG(t, before == 0 && contacts_before > 0 && after >= 25 && st.contact_count == 0,
            "filter changed at rest: %d inside with %d contacts before, %d inside with %d "
            "contacts after",
            (int)before, (int)contacts_before, (int)after, (int)st.contact_count);
  ct_scene_destroy(&sc);
  piola_mesh_free(&box);
}

void test_contact_filter(piola_test *t) {
  ct_filter_cases(t, PIOLA_BACKEND_CPU_REFERENCE);
  /* The filter chooses other bodies only: a body that collides with no other still collides
   * with itself (the hairpin of test 4, group 1, mask 0). */
  piola_tet_mesh bar = ct_hairpin(0.8f, 38);
  REQUIRE(t, bar.vertex_count > 0);
  const ct_fold_result fold = ct_fold_run(t, &bar, true, 1u, 0u);
  printf("  hairpin with mask 0: %d surface vertices inside own tets at worst, contacts in %d of "
         "40 samples\n",
         (int)fold.worst_inside, (int)fold.contact_samples);
  CHECK_MSG(t, fold.worst_step < 0 && fold.end_inside == 0 && fold.contact_samples > 30,
            "with mask 0: %d vertices inside own tets (step %d), contacts in %d samples",
            (int)fold.worst_inside, (int)fold.worst_step, (int)fold.contact_samples);
  piola_mesh_free(&bar);
}

/* The filters on OpenCL (uploaded per body, applied in the narrow-phase kernel, re-uploaded
 * when changed after steps). */
void test_opencl_contact_filter(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  ct_filter_cases(t, PIOLA_BACKEND_OPENCL);
}

/* ---- 6. Determinism -------------------------------------------------------------------------- */

/* Three boxes dropped in a staggered stack on the ground (corners onto faces, edges across
 * edges), 150 steps: the hash of every body's positions and velocities (float bytes) and the
 * contact count of every step. */
typedef struct ct_stack_run {
  uint64_t hash;
  uint64_t contact_hash; /* FNV-1a of the contact count of every step */
  int32_t most_contacts;
  int32_t inside; /* vertices of a body inside another at the end */
} ct_stack_run;

static uint64_t ct_state_hash(const ct_scene *sc) {
  uint64_t h = PIOLA_TEST_FNV_OFFSET;
  for (int32_t a = 0; a < sc->count; ++a) {
    const int32_t n = sc->meshes[a]->vertex_count;
    float *buf = malloc(sizeof *buf * 3 * (size_t)n);
    if (buf == NULL) {
      return 0;
    }
    if (piola_body_get_positions(sc->w, sc->ids[a], buf, n) == PIOLA_OK) {
      h = piola_test_fnv1a(h, buf, sizeof *buf * 3 * (size_t)n);
    }
    if (piola_body_get_velocities(sc->w, sc->ids[a], buf, n) == PIOLA_OK) {
      h = piola_test_fnv1a(h, buf, sizeof *buf * 3 * (size_t)n);
    }
    free(buf);
  }
  return h;
}

static ct_stack_run ct_stack(piola_test *t, piola_backend backend, piola_schedule schedule) {
  ct_stack_run r = {0, PIOLA_TEST_FNV_OFFSET, 0, -1};
  piola_tet_mesh big = wt_box(3, 3, 3, 0.6f, 0.6f, 0.6f), small = wt_box(2, 2, 2, 0.4f, 0.4f, 0.4f);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_world_def def = ct_def(&sc, backend);
  def.schedule = schedule;
  piola_status s =
      big.vertex_count > 0 && small.vertex_count > 0 ? PIOLA_OK : PIOLA_ERROR_INVALID_MESH;
  if (s == PIOLA_OK) {
    s = ct_scene_create(&sc, &def, true);
  }
  if (s == PIOLA_OK) {
    s = ct_add(&sc, &big, 0.0f, 0.0f, 0.0f);
  }
  if (s == PIOLA_OK) {
    s = ct_add(&sc, &big, 0.23f, 0.7f, 0.11f);
  }
  if (s == PIOLA_OK) {
    s = ct_add(&sc, &small, 0.05f, 1.45f, 0.33f);
  }
  uint64_t start = ct_state_hash(&sc);
  for (int32_t step = 0; step < 150 && s == PIOLA_OK; ++step) {
    s = piola_world_step(sc.w);
    piola_stats st;
    if (s == PIOLA_OK) {
      s = piola_world_get_stats(sc.w, &st);
    }
    if (s == PIOLA_OK) {
      r.contact_hash = piola_test_fnv1a(r.contact_hash, &st.contact_count, sizeof st.contact_count);
      r.most_contacts = st.contact_count > r.most_contacts ? st.contact_count : r.most_contacts;
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s == PIOLA_OK) {
    r.hash = ct_state_hash(&sc);
    CHECK(t, r.hash != start); /* the scene moved */
    r.inside = 0;
    for (int32_t a = 0; a < 3; ++a) {
      for (int32_t b = 0; b < 3; ++b) {
        r.inside += a != b ? ct_inside_other(&sc, a, b) : 0;
      }
    }
  }
  ct_scene_destroy(&sc);
  piola_mesh_free(&big);
  piola_mesh_free(&small);
  return r;
}

static void ct_check_deterministic(piola_test *t, const char *what, const ct_stack_run *a,
                                   const ct_stack_run *b) {
  printf("  %s: state hashes %016llx and %016llx, contact-count hashes %016llx and %016llx, up "
         "to %d contacts, %d and %d vertices inside another body at the end\n",
         what, (unsigned long long)a->hash, (unsigned long long)b->hash,
         (unsigned long long)a->contact_hash, (unsigned long long)b->contact_hash,
         (int)a->most_contacts, (int)a->inside, (int)b->inside);
  CHECK_MSG(t, a->hash == b->hash, "%s: two runs end in different states", what);
  CHECK_MSG(t, a->contact_hash == b->contact_hash, "%s: two runs found different contacts", what);
  CHECK_MSG(t, a->most_contacts > 20, "%s: only %d contacts", what, (int)a->most_contacts);
  CHECK_MSG(t, a->inside == 0 && b->inside == 0, "%s: %d and %d vertices inside another body", what,
            (int)a->inside, (int)b->inside);
}

void test_contact_determinism(piola_test *t) {
  const ct_stack_run a = ct_stack(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEDULE_AUTO);
  const ct_stack_run b = ct_stack(t, PIOLA_BACKEND_CPU_REFERENCE, PIOLA_SCHEDULE_AUTO);
  ct_check_deterministic(t, "cpu", &a, &b);
}

/* On OpenCL the grid's buckets and the corner lists are filled with atomics in a different
 * order every run; the results must not depend on it. Both schedules, which must also agree
 * with each other bit for bit (they run the same computation, as without contacts). */
void test_opencl_contact_determinism(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const piola_schedule schedules[2] = {PIOLA_SCHEDULE_BODIES, PIOLA_SCHEDULE_STAGES};
  const char *names[2] = {"opencl, per-body schedule", "opencl, per-stage schedule"};
  ct_stack_run first[2];
  for (int i = 0; i < 2; ++i) {
    first[i] = ct_stack(t, PIOLA_BACKEND_OPENCL, schedules[i]);
    const ct_stack_run again = ct_stack(t, PIOLA_BACKEND_OPENCL, schedules[i]);
    ct_check_deterministic(t, names[i], &first[i], &again);
  }
  CHECK_MSG(t, first[0].hash == first[1].hash && first[0].contact_hash == first[1].contact_hash,
            "the per-body and per-stage schedules differ: %016llx vs %016llx",
            (unsigned long long)first[0].hash, (unsigned long long)first[1].hash);
}

/* ---- 7. Bad input and the collision surface ----------------------------------------------------
 */

/* The predicted positions of a CPU reference world for a substep of h seconds, p = x + h v (its
 * free flight, without gravity), so that the contact phases can be run on their own. */
static void ct_predict(piola_world *w, double h) {
  for (int32_t v = 0; v < w->vertex_count; ++v) {
    for (int k = 0; k < 3; ++k) {
      w->p[3 * v + k] = w->x[3 * v + k] + h * w->v[3 * v + k];
    }
  }
}

/* A cluster's bucket list is the buckets of its cells, each once, in the order of the cells:
 * piola_cluster_buckets (which compares bucket by bucket only the columns of cells whose runs
 * of buckets meet) against every cell's bucket compared with all before it. Random boxes of 1
 * to 3 cells per axis, anywhere (negative cells too), in tables of 16 and 64 buckets, where
 * columns meet often, and of 2^17, where they rarely do. */
void test_contact_cluster_buckets_each_once(piola_test *t) {
  uint32_t seed = 12345u;
  const piola_int masks[3] = {15, 63, (1 << 17) - 1};
  int64_t lists = 0, wrong = 0, shared = 0;
  for (int m = 0; m < 3; ++m) {
    for (int trial = 0; trial < 20000; ++trial) {
      double c[3], e[3];
      for (int k = 0; k < 3; ++k) {
        seed = seed * 1664525u + 1013904223u;
        c[k] = ((double)(seed >> 8) / 16777216.0 - 0.5) * 200.0;
        seed = seed * 1664525u + 1013904223u;
        e[k] = (double)(seed >> 8) / 16777216.0 * 1.9;
      }
      piola_box r;
      r.lo = piola_v3_make(c[0], c[1], c[2]);
      r.hi = piola_v3_make(c[0] + e[0], c[1] + e[1], c[2] + e[2]);
      const piola_real margin = 0.01, inv_cell = 1.0;
      piola_int got[PIOLA_CELLS_PER_CLUSTER], want[PIOLA_CELLS_PER_CLUSTER], lo[3], hi[3];
      const int n = piola_cluster_buckets(r, margin, inv_cell, masks[m], got);
      piola_cell_range(piola_grid_cluster(r, margin), inv_cell, 3, lo, hi);
      int expected = 0, cells = 0;
      for (piola_int i = lo[0]; i <= hi[0]; ++i) {
        for (piola_int j = lo[1]; j <= hi[1]; ++j) {
          for (piola_int k = lo[2]; k <= hi[2]; ++k) {
            const piola_int bucket = piola_cell_hash(i, j, k, masks[m]);
            int seen = 0;
            for (int q = 0; q < expected; ++q) {
              seen |= want[q] == bucket;
            }
            cells++;
            if (!seen) {
              want[expected++] = bucket;
            }
          }
        }
      }
      lists++;
      shared += cells - expected;
      int differ = n != expected;
      for (int q = 0; q < n && !differ; ++q) {
        differ = got[q] != want[q];
      }
      wrong += differ;
    }
  }
  printf("  %lld lists, %lld cells sharing a bucket with an earlier one\n", (long long)lists,
         (long long)shared);
  CHECK_MSG(t, wrong == 0, "%lld of %lld bucket lists differ", (long long)wrong, (long long)lists);
  CHECK(t, shared > 1000); /* the small tables exercised the comparison */
}

/* The grid finds every pair once: for every surface vertex, the triangles in the one bucket it
 * looks into whose boxes overlap its own are exactly those a scan of all triangles finds, each
 * once (in the cell where the pair is taken), and no vertex keeps a triangle twice. Four boxes
 * (CPU reference), packed close and dropped onto each other, the top one thrown down at 60 m/s
 * (its vertices move farther in a step than a triangle is large, so they look into several
 * cells: counted), checked after each of 40 steps with the predicted positions of the next
 * substep (x + h v). Two cells of one triangle that hash to one bucket (which happens here:
 * counted) must not enter it twice; they once did, and such a triangle counted twice in a
 * vertex's mean. */
void test_contact_grid_finds_every_pair_once(piola_test *t) {
  piola_tet_mesh box = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f);
  REQUIRE(t, box.vertex_count == 125);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_world_def def = ct_def(&sc, PIOLA_BACKEND_CPU_REFERENCE);
  piola_status s = ct_scene_create(&sc, &def, true);
  const float at[4][3] = {
      {0.0f, 0.0f, 0.0f}, {0.3f, 1.02f, 0.2f}, {1.015f, 0.3f, -0.4f}, {0.5f, 2.1f, 0.9f}};
  for (int b = 0; b < 4 && s == PIOLA_OK; ++b) {
    s = ct_add(&sc, &box, at[b][0], at[b][1], at[b][2]);
  }
  REQUIRE_OK(t, s);
  float *thrown = calloc(3 * (size_t)box.vertex_count, sizeof *thrown);
  REQUIRE(t, thrown != NULL);
  for (int32_t i = 0; i < box.vertex_count; ++i) {
    thrown[3 * i + 1] = -60.0f;
  }
  s = piola_body_set_velocities(sc.w, sc.ids[3], thrown, box.vertex_count);
  free(thrown);
  REQUIRE_OK(t, s);
  piola_world *w = sc.w;
  const piola_solver_contacts *c = &w->contacts;
  s = piola_world_step(w); /* builds the contact arrays */
  REQUIRE_OK(t, s);
  /* The clusters: consecutive triangles of one body, 1 to PIOLA_CLUSTER_TRIANGLES each, every
   * triangle in one; cluster_of[] maps a triangle to its cluster. */
  int32_t *cluster_of = malloc(sizeof *cluster_of * (size_t)c->triangle_count);
  REQUIRE(t, cluster_of != NULL);
  int bad_clusters =
      c->cluster_first[0] != 0 || c->cluster_first[c->cluster_count] != c->triangle_count;
  for (int32_t i = 0; i < c->cluster_count; ++i) {
    const int32_t first = c->cluster_first[i], end = c->cluster_first[i + 1];
    bad_clusters += end <= first || end - first > PIOLA_CLUSTER_TRIANGLES;
    for (int32_t tri = first; tri < end && tri < c->triangle_count; ++tri) {
      cluster_of[tri] = i;
      bad_clusters += c->triangle_body[tri] != c->triangle_body[first];
    }
  }
  printf("  %d triangles in %d clusters\n", (int)c->triangle_count, (int)c->cluster_count);
  CHECK_MSG(t, bad_clusters == 0, "%d malformed clusters", bad_clusters);
  CHECK(t, c->cluster_count < c->triangle_count / 2);
  const double h = (double)def.dt / (double)def.substeps, thickness = (double)def.contact_thickness;
  int64_t pairs = 0, missed = 0, twice = 0, shared_buckets = 0, kept_twice = 0, several = 0;
  for (int32_t step = 0; step < 40 && s == PIOLA_OK; ++step) {
    s = piola_world_step(w);
    ct_predict(w, h);
    piola_cpu_broad_phase(w);
    const double inv_cell = 1.0 / c->cell;
    for (int32_t i = 0; i < c->cluster_count; ++i) {
      piola_int buckets[PIOLA_CELLS_PER_CLUSTER], lo[3], hi[3];
      piola_box r;
      memcpy(&r, c->cluster_box + 6 * (size_t)i, sizeof r);
      const int n = piola_cluster_buckets(r, c->margin, inv_cell, c->bucket_mask, buckets);
      piola_cell_range(piola_grid_cluster(r, c->margin), inv_cell, 3, lo, hi);
      shared_buckets += (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1) - n;
    }
    for (int32_t sv = 0; sv < c->vertex_count; ++sv) {
      const int32_t v = c->vertex[sv];
      const piola_box vb =
          piola_vertex_box(piola_v3_make(w->x[3 * v], w->x[3 * v + 1], w->x[3 * v + 2]),
                           piola_v3_make(w->p[3 * v], w->p[3 * v + 1], w->p[3 * v + 2]), thickness);
      const piola_box query = piola_grid_vertex(vb, c->margin);
      piola_int lo[3], hi[3];
      piola_cell_range(query, inv_cell, 3, lo, hi);
      several += lo[0] != hi[0] || lo[1] != hi[1] || lo[2] != hi[2];
      for (int32_t tri = 0; tri < c->triangle_count; ++tri) {
        piola_box tb, cb;
        memcpy(&tb, c->triangle_box + 6 * (size_t)tri, sizeof tb);
        memcpy(&cb, c->cluster_box + 6 * (size_t)cluster_of[tri], sizeof cb);
        if (!piola_boxes_overlap(vb, tb)) {
          continue;
        }
        pairs++;
        int found = 0;
        for (piola_int i = lo[0]; i <= hi[0]; ++i) {
          for (piola_int j = lo[1]; j <= hi[1]; ++j) {
            for (piola_int k = lo[2]; k <= hi[2]; ++k) {
              const piola_int bucket = piola_cell_hash(i, j, k, c->bucket_mask);
              for (int32_t e = c->bucket_start[bucket]; e < c->bucket_start[bucket + 1]; ++e) {
                found +=
                    c->bucket_clusters[e] == cluster_of[tri] &&
                    piola_pair_cell(query, piola_grid_cluster(cb, c->margin), inv_cell, i, j, k);
              }
            }
          }
        }
        missed += found == 0;
        twice += found > 1;
      }
      const int32_t *list = c->contact_triangle + PIOLA_CONTACTS_PER_VERTEX * (size_t)sv;
      for (int32_t a = 0; a < c->contact_count[sv]; ++a) {
        for (int32_t b = a + 1; b < c->contact_count[sv]; ++b) {
          kept_twice += list[a] == list[b];
        }
      }
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  printf("  %lld vertex-triangle pairs with overlapping boxes over 40 steps: %lld missed, %lld "
         "found twice; %lld cells sharing a bucket with another cell of their cluster; %lld "
         "vertex queries over several cells; %lld triangles kept twice by a vertex\n",
         (long long)pairs, (long long)missed, (long long)twice, (long long)shared_buckets,
         (long long)several, (long long)kept_twice);
  CHECK(t, pairs > 1000);
  CHECK(t, shared_buckets > 0 && several > 0);
  CHECK_MSG(t, missed == 0 && twice == 0 && kept_twice == 0,
            "%lld pairs missed, %lld found twice, %lld kept twice", (long long)missed,
            (long long)twice, (long long)kept_twice);
  free(cluster_of);
  ct_scene_destroy(&sc);
  piola_mesh_free(&box);
}

/* The CPU reference's contact lists (this and the previous substep's counts and slots), saved
 * one after the other into `saved` (2 (nv + 8 nv) ints for nv surface vertices), and put back. */
static void ct_save_lists(const piola_solver_contacts *c, int32_t *saved) {
  const size_t nv = (size_t)c->vertex_count, slots = PIOLA_CONTACTS_PER_VERTEX * nv;
  memcpy(saved, c->contact_count, sizeof *saved * nv);
  memcpy(saved + nv, c->contact_triangle, sizeof *saved * slots);
  memcpy(saved + nv + slots, c->previous_count, sizeof *saved * nv);
  memcpy(saved + 2 * nv + slots, c->previous_triangle, sizeof *saved * slots);
}

static void ct_restore_lists(piola_solver_contacts *c, const int32_t *saved) {
  const size_t nv = (size_t)c->vertex_count, slots = PIOLA_CONTACTS_PER_VERTEX * nv;
  memcpy(c->contact_count, saved, sizeof *saved * nv);
  memcpy(c->contact_triangle, saved + nv, sizeof *saved * slots);
  memcpy(c->previous_count, saved + nv + slots, sizeof *saved * nv);
  memcpy(c->previous_triangle, saved + 2 * nv + slots, sizeof *saved * slots);
}

/* The near windows (piola_contact_near) skip only pairs that the self-contact rule rejects: each
 * triangle a window marks is of the vertex's own body and fails piola_contact_self_allowed(),
 * every vertex's windows mark a triangle it is a corner of, and the narrow phase finds the same
 * contacts with the windows as without them, sampled over the hairpin of
 * contact_self_conserves_momentum as its arm meets the other (CPU reference). */
void test_contact_near_windows_skip_only_near_pairs(piola_test *t) {
  piola_tet_mesh bar = ct_hairpin(0.8f, 38);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  piola_world_def def = ct_def(&sc, PIOLA_BACKEND_CPU_REFERENCE);
  piola_status s = ct_thrown_hairpin(&sc, &def, &bar);
  if (s == PIOLA_OK) {
    s = piola_world_step(sc.w); /* builds the solver's contact arrays */
  }
  REQUIRE_OK(t, s);
  piola_world *w = sc.w;
  piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)def.contact_thickness;
  const size_t nv = (size_t)c->vertex_count, slots = PIOLA_CONTACTS_PER_VERTEX * nv;
  int64_t marked = 0, bad = 0, no_own = 0;
  for (int32_t sv = 0; sv < c->vertex_count; ++sv) {
    bool own = false;
    for (int32_t r = 0; r < 2; ++r) {
      const int32_t first = c->vertex_near[2 * (size_t)sv + (size_t)r];
      const uint64_t mask = c->vertex_near_mask[2 * (size_t)sv + (size_t)r];
      for (int32_t k = 0; k < PIOLA_NEAR_WINDOW; ++k) {
        const int32_t tri = first + k;
        if (((mask >> k) & 1u) == 0) {
          continue;
        }
        marked++;
        bad += tri < 0 || tri >= c->triangle_count;
        if (tri < 0 || tri >= c->triangle_count) {
          continue;
        }
        const int32_t *q = c->triangle + 3 * (size_t)tri;
        const double *rv = c->vertex_rest;
        own |= q[0] == sv || q[1] == sv || q[2] == sv;
        bad += c->triangle_body[tri] != c->vertex_body[sv] ||
               piola_contact_self_allowed(
                   piola_v3_make(rv[3 * sv], rv[3 * sv + 1], rv[3 * sv + 2]),
                   piola_v3_make(rv[3 * q[0]], rv[3 * q[0] + 1], rv[3 * q[0] + 2]),
                   piola_v3_make(rv[3 * q[1]], rv[3 * q[1] + 1], rv[3 * q[1] + 2]),
                   piola_v3_make(rv[3 * q[2]], rv[3 * q[2] + 1], rv[3 * q[2] + 2]),
                   c->vertex_reach[sv], thickness);
      }
    }
    no_own += !own;
  }
  /* The narrow phase twice from each sampled state, with and without the windows. */
  int32_t *saved = malloc(sizeof *saved * 2 * (nv + slots));
  int32_t *with_windows = malloc(sizeof *with_windows * (nv + slots));
  uint64_t *masks = malloc(sizeof *masks * 2 * nv);
  REQUIRE(t, saved != NULL && with_windows != NULL && masks != NULL);
  memcpy(masks, c->vertex_near_mask, sizeof *masks * 2 * nv);
  const double h = (double)def.dt / (double)def.substeps;
  int64_t contacts = 0, differ = 0;
  for (int32_t step = 0; step < 60 && s == PIOLA_OK; ++step) {
    s = piola_world_step(w);
    if (step % 3 != 0) {
      continue;
    }
    ct_predict(w, h);
    ct_save_lists(c, saved);
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) { /* the same state, no windows */
        ct_restore_lists(c, saved);
        memset(c->vertex_near_mask, 0, sizeof *masks * 2 * nv);
      }
      piola_cpu_broad_phase(w);
      piola_cpu_narrow_phase(w);
      if (pass == 0) {
        memcpy(with_windows, c->contact_count, sizeof *with_windows * nv);
        memcpy(with_windows + nv, c->contact_triangle, sizeof *with_windows * slots);
        continue;
      }
      for (size_t sv = 0; sv < nv; ++sv) {
        const int32_t n = c->contact_count[sv];
        contacts += n;
        differ +=
            n != with_windows[sv] || memcmp(c->contact_triangle + PIOLA_CONTACTS_PER_VERTEX * sv,
                                            with_windows + nv + PIOLA_CONTACTS_PER_VERTEX * sv,
                                            sizeof(int32_t) * (size_t)n) != 0;
      }
    }
    /* The world goes on as it was. */
    memcpy(c->vertex_near_mask, masks, sizeof *masks * 2 * nv);
    ct_restore_lists(c, saved);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  printf("  %d surface vertices: %.1f triangles marked in their near windows on average; %lld "
         "self-contacts in the sampled substeps, %lld vertices whose contacts differ without the "
         "windows\n",
         c->vertex_count, (double)marked / (double)c->vertex_count, (long long)contacts,
         (long long)differ);
  CHECK_MSG(t, bad == 0, "%lld triangles marked near may touch their vertex", (long long)bad);
  CHECK_MSG(t, no_own == 0, "%lld vertices' windows mark none of their own triangles",
            (long long)no_own);
  CHECK(t, marked >= 6 * (int64_t)c->vertex_count);
  CHECK(t, contacts > 100);
  CHECK_MSG(t, differ == 0, "%lld vertices' contacts differ", (long long)differ);
  free(saved);
  free(with_windows);
  free(masks);
  ct_scene_destroy(&sc);
  piola_mesh_free(&bar);
}

/* Contact settings of the world def are checked at piola_world_create; the contact calls reject
 * stale and null body ids through the misuse hook and change nothing; the collision surface of
 * a box is its closed, outward boundary. */
void test_contact_bad_input(piola_test *t) {
  piola_test_log log;
  int misuse = 0;
  const struct {
    const char *what;
    float thickness, friction;
    piola_status expected;
  } defs[] = {
      {"thickness 0", 0.0f, 0.5f, PIOLA_ERROR_INVALID_ARGUMENT},
      {"thickness < 0", -0.01f, 0.5f, PIOLA_ERROR_INVALID_ARGUMENT},
      {"thickness -0", -0.0f, 0.5f, PIOLA_ERROR_INVALID_ARGUMENT},
      {"thickness NaN", NAN, 0.5f, PIOLA_ERROR_NON_FINITE},
      {"thickness Inf", INFINITY, 0.5f, PIOLA_ERROR_NON_FINITE},
      {"friction < 0", 0.01f, -0.1f, PIOLA_ERROR_INVALID_ARGUMENT},
      {"friction NaN", 0.01f, NAN, PIOLA_ERROR_NON_FINITE},
      {"friction Inf", 0.01f, INFINITY, PIOLA_ERROR_NON_FINITE},
      {"friction 0", 0.01f, 0.0f, PIOLA_OK},
      {"thin", 1e-6f, 2.0f, PIOLA_OK},
  };
  for (size_t i = 0; i < sizeof defs / sizeof defs[0]; ++i) {
    piola_world_def def = piola_test_world_def(&log, &misuse);
    def.contact_thickness = defs[i].thickness;
    def.contact_friction = defs[i].friction;
    piola_world *w = (piola_world *)&log; /* not NULL: a failed call must clear it */
    const piola_status s = piola_world_create(&def, &w);
    CHECK_MSG(t, s == defs[i].expected, "%s: '%s', expected '%s'", defs[i].what,
              piola_status_string(s), piola_status_string(defs[i].expected));
    if (defs[i].expected != PIOLA_OK) {
      CHECK_MSG(t, w == NULL, "%s: *out not cleared", defs[i].what);
      CHECK_MSG(t, log.count[PIOLA_LOG_ERROR] == 1, "%s: %d errors logged", defs[i].what,
                log.count[PIOLA_LOG_ERROR]);
    } else {
      CHECK_MSG(t, w != NULL && log.count[PIOLA_LOG_ERROR] == 0, "%s: not created", defs[i].what);
      piola_world_destroy(w);
    }
  }
  CHECK(t, misuse == 0);

  /* A world with two boxes in contact (after 60 steps) and a removed body. */
  piola_tet_mesh box = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f);
  REQUIRE(t, box.vertex_count == 125);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  REQUIRE_OK(t, ct_two_boxes(&sc, PIOLA_BACKEND_CPU_REFERENCE, &box, 0.5f, PIOLA_SCHEDULE_AUTO));
  piola_body_id removed;
  const piola_material mat = ct_material();
  REQUIRE_OK(
      t, piola_world_add_tet_body(sc.w, &box, &mat, (const float[3]){3.0f, 0.0f, 0.0f}, &removed));
  REQUIRE_OK(t, piola_world_remove_body(sc.w, removed));
  for (int32_t step = 0; step < 60; ++step) {
    REQUIRE_OK(t, piola_world_step(sc.w));
  }
  piola_stats st;
  REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
  CHECK(t, st.contact_count > 0);
  const piola_body_id ids[4] = {
      removed, {0, 0}, {99, 0}, {sc.ids[0].index1, sc.ids[0].generation + 1}};
  const char *names[4] = {"stale", "null", "out of range", "wrong generation"};
  int32_t sentinel[6] = {-7, -7, -7, -7, -7, -7}, count = -7;
  for (int i = 0; i < 4; ++i) {
    const wt_snapshot before = wt_snapshot_take(sc.w, sc.ids, 2);
    const int m0 = sc.misuse;
    CHECK_STATUS(t, piola_body_set_collision_filter(sc.w, ids[i], 2u, 2u),
                 PIOLA_ERROR_INVALID_BODY);
    CHECK_STATUS(t, piola_body_set_self_collision(sc.w, ids[i], false), PIOLA_ERROR_INVALID_BODY);
    CHECK_STATUS(t, piola_body_get_surface(sc.w, ids[i], sentinel, 2, &count),
                 PIOLA_ERROR_INVALID_BODY);
    const wt_snapshot after = wt_snapshot_take(sc.w, sc.ids, 2);
    CHECK_MSG(t, wt_snapshot_equal(&before, &after), "%s id: the world changed", names[i]);
    CHECK_MSG(t, sc.misuse == m0 + 3, "%s id: misuse hook called %d times, expected 3", names[i],
              sc.misuse - m0);
  }
  bool untouched = count == -7;
  for (int k = 0; k < 6; ++k) {
    untouched = untouched && sentinel[k] == -7;
  }
  CHECK_MSG(t, untouched, "a failed piola_body_get_surface wrote its outputs");
  /* NULL world, negative capacity, no array for a positive capacity. */
  CHECK_STATUS(t, piola_body_set_collision_filter(NULL, sc.ids[0], 1u, 1u),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_body_set_self_collision(NULL, sc.ids[0], true),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_body_get_surface(NULL, sc.ids[0], NULL, 0, &count),
               PIOLA_ERROR_INVALID_ARGUMENT);
  {
    const wt_snapshot before = wt_snapshot_take(sc.w, sc.ids, 2);
    const int m0 = sc.misuse;
    CHECK_STATUS(t, piola_body_get_surface(sc.w, sc.ids[0], sentinel, -1, &count),
                 PIOLA_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(t, piola_body_get_surface(sc.w, sc.ids[0], NULL, 4, &count),
                 PIOLA_ERROR_INVALID_ARGUMENT);
    const wt_snapshot after = wt_snapshot_take(sc.w, sc.ids, 2);
    CHECK(t, wt_snapshot_equal(&before, &after));
    CHECK_MSG(t, sc.misuse == m0 + 2, "bad capacity: misuse hook called %d times, expected 2",
              sc.misuse - m0);
    CHECK(t, count == -7 && sentinel[0] == -7);
  }

  /* The surface of the 4 x 4 x 4 box: 6 faces of 4 x 4 squares of 2 triangles. */
  int32_t n = -1;
  CHECK_STATUS(t, piola_body_get_surface(sc.w, sc.ids[1], NULL, 0, &n), PIOLA_OK);
  CHECK_STATUS(t, piola_body_get_surface(sc.w, sc.ids[1], NULL, 0, NULL), PIOLA_OK);
  CHECK_MSG(t, n == 2 * 6 * 4 * 4, "%d surface triangles, expected 192", (int)n);
  REQUIRE(t, n == 192);
  int32_t tri[3 * 192 + 3];
  tri[3 * 192] = tri[3 * 192 + 1] = tri[3 * 192 + 2] = -7;
  int32_t again = -1;
  CHECK_STATUS(t, piola_body_get_surface(sc.w, sc.ids[1], tri, 200, &again), PIOLA_OK);
  CHECK(t, again == 192 && tri[3 * 192] == -7);
  /* Indices in range, every directed edge once and its reverse once (closed, consistently
   * oriented), 98 distinct vertices (125 less the 27 inside). */
  int32_t bad_index = 0, bad_edges = 0, vertices = 0;
  bool used[125] = {false};
  for (int32_t k = 0; k < 3 * 192; ++k) {
    bad_index += tri[k] < 0 || tri[k] >= 125;
  }
  REQUIRE(t, bad_index == 0);
  for (int32_t k = 0; k < 192; ++k) {
    for (int e = 0; e < 3; ++e) {
      const int32_t a = tri[3 * k + e], b = tri[3 * k + (e + 1) % 3];
      int32_t same = 0, reverse = 0;
      for (int32_t j = 0; j < 192; ++j) {
        for (int f = 0; f < 3; ++f) {
          const int32_t c = tri[3 * j + f], d = tri[3 * j + (f + 1) % 3];
          same += c == a && d == b;
          reverse += c == b && d == a;
        }
      }
      bad_edges += same != 1 || reverse != 1;
    }
    for (int c = 0; c < 3; ++c) {
      vertices += !used[tri[3 * k + c]];
      used[tri[3 * k + c]] = true;
    }
  }
  CHECK_MSG(t, bad_edges == 0, "%d edges not shared by exactly two opposite triangles",
            (int)bad_edges);
  CHECK_MSG(t, vertices == 98, "%d surface vertices, expected 98", (int)vertices);
  /* Outward: the divergence theorem gives the enclosed volume, sum of a . (b x c) / 6, at the
   * rest positions and at the current (deformed, moved) ones alike. */
  float *x = wt_get_positions(sc.w, sc.ids[1]);
  REQUIRE(t, x != NULL);
  double rest_volume = 0.0, volume = 0.0;
  for (int32_t k = 0; k < 192; ++k) {
    double r[3][3], p[3][3];
    for (int c = 0; c < 3; ++c) {
      for (int j = 0; j < 3; ++j) {
        r[c][j] = box.positions[3 * (size_t)tri[3 * k + c] + j];
        p[c][j] = x[3 * (size_t)tri[3 * k + c] + j];
      }
    }
    rest_volume += ct_det3(r[0], r[1], r[2]) / 6.0;
    volume += ct_det3(p[0], p[1], p[2]) / 6.0;
  }
  const double tet_volume = wt_signed_volume(&box, x);
  printf("  surface: %d triangles, %d vertices; enclosed volume %.6f m^3 at rest, %.6f m^3 now "
         "(the tets: %.6f m^3)\n",
         (int)n, (int)vertices, rest_volume, volume, tet_volume);
  CHECK_NEAR(t, rest_volume, 1.0, 1e-6);
  CHECK_NEAR(t, volume, tet_volume, 1e-6);
  free(x);
  /* A smaller capacity writes only that many triangles, the first ones. */
  int32_t part[3 * 11];
  for (int k = 0; k < 33; ++k) {
    part[k] = -7;
  }
  again = -1;
  CHECK_STATUS(t, piola_body_get_surface(sc.w, sc.ids[1], part, 10, &again), PIOLA_OK);
  CHECK(t, again == 192);
  CHECK(t, memcmp(part, tri, sizeof(int32_t) * 30) == 0);
  CHECK(t, part[30] == -7 && part[31] == -7 && part[32] == -7);
  CHECK_STATUS(t, piola_body_get_surface(sc.w, sc.ids[1], part, 0, NULL), PIOLA_OK);
  CHECK(t, part[0] == tri[0]);
  CHECK_MSG(t, sc.misuse == 14, "misuse hook called %d times in all, expected 14", sc.misuse);
  ct_scene_destroy(&sc);
  piola_mesh_free(&box);
}

/* ---- 8. Statistics and stages ------------------------------------------------------------------
 */

/* The number of distinct vertices of `count` triangles. */
static int32_t ct_distinct_vertices(const int32_t *tri, int32_t count, int32_t vertex_count) {
  bool *used = calloc((size_t)vertex_count, sizeof *used);
  if (used == NULL) {
    return -1;
  }
  int32_t n = 0;
  for (int32_t k = 0; k < 3 * count; ++k) {
    n += !used[tri[k]];
    used[tri[k]] = true;
  }
  free(used);
  return n;
}

/* Box A (4 x 4 x 4 cells, 1 m) on the ground, box B (3 x 2 x 2 cells, 0.6 x 0.4 x 0.4 m) 5 mm
 * above it (in contact from the first step) and the hairpin of test 4 beside them. */
static piola_status ct_stats_scene(ct_scene *sc, piola_world_def *def, const piola_tet_mesh *a,
                                   const piola_tet_mesh *b, const piola_tet_mesh *c) {
  piola_status s = ct_scene_create(sc, def, true);
  if (s == PIOLA_OK) {
    s = ct_add(sc, a, 0.0f, 0.0f, 0.0f);
  }
  if (s == PIOLA_OK) {
    s = ct_add(sc, b, 0.2f, 1.005f, 0.3f);
  }
  if (s == PIOLA_OK) {
    s = ct_add(sc, c, 0.0f, 0.0f, 2.0f);
  }
  return s;
}

/* Sums of the bodies' surface triangles and surface vertices (piola_body_get_surface). */
static void ct_surface_totals(piola_test *t, const ct_scene *sc, int32_t *triangles,
                              int32_t *vertices) {
  *triangles = 0;
  *vertices = 0;
  for (int32_t a = 0; a < sc->count; ++a) {
    if (!piola_body_is_valid(sc->w, sc->ids[a])) {
      continue;
    }
    int32_t n = 0;
    int32_t *tri = ct_surface(sc, a, &n);
    CHECK(t, tri != NULL);
    if (tri != NULL) {
      *triangles += n;
      *vertices += ct_distinct_vertices(tri, n, sc->meshes[a]->vertex_count);
    }
    free(tri);
  }
}

void test_contact_stats_and_stages(piola_test *t) {
  CHECK(t, strcmp(piola_stage_name(PIOLA_STAGE_BROAD_PHASE), "broad_phase") == 0);
  CHECK(t, strcmp(piola_stage_name(PIOLA_STAGE_NARROW_PHASE), "narrow_phase") == 0);
  CHECK(t, strcmp(piola_stage_name(PIOLA_STAGE_CONTACT), "contact") == 0);
  for (int i = 0; i < PIOLA_STAGE_COUNT; ++i) {
    for (int j = 0; j < i; ++j) {
      CHECK_MSG(t, strcmp(piola_stage_name(i), piola_stage_name(j)) != 0,
                "stages %d and %d are both '%s'", i, j, piola_stage_name(i));
    }
  }
  piola_tet_mesh a = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f), b = wt_box(3, 2, 2, 0.6f, 0.4f, 0.4f);
  piola_tet_mesh c = ct_hairpin(0.8f, 38);
  REQUIRE(t, a.vertex_count > 0 && b.vertex_count > 0 && c.vertex_count > 0);
  for (int contacts = 1; contacts >= 0; --contacts) {
    ct_scene sc;
    memset(&sc, 0, sizeof sc);
    piola_world_def def = ct_def(&sc, PIOLA_BACKEND_CPU_REFERENCE);
    def.contacts = contacts != 0;
    REQUIRE_OK(t, ct_stats_scene(&sc, &def, &a, &b, &c));
    int32_t triangles = 0, vertices = 0;
    ct_surface_totals(t, &sc, &triangles, &vertices);
    /* Box A: 192 triangles on 98 vertices; box B: 2 (6 + 6 + 4) squares, 64 triangles, on
     * 4 x 3 x 3 - 2 = 34 vertices; the hairpin: 38 x 4 x 2 + 2 x 4 squares, 624 triangles, on
     * 39 x 9 - 37 = 314 vertices. */
    CHECK_MSG(t, triangles == 192 + 64 + 624 && vertices == 98 + 34 + 314,
              "surfaces: %d triangles, %d vertices", (int)triangles, (int)vertices);
    piola_stats st;
    REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
    CHECK_MSG(t, st.surface_triangles == triangles && st.surface_vertices == vertices,
              "stats: %d surface triangles, %d vertices; the bodies': %d, %d",
              (int)st.surface_triangles, (int)st.surface_vertices, (int)triangles, (int)vertices);
    CHECK(t, st.contact_count == 0 && st.contact_overflow == 0); /* no step yet */
    REQUIRE_OK(t, piola_world_step(sc.w));
    REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
    double ms[PIOLA_STAGE_COUNT];
    REQUIRE_OK(t, piola_world_get_stage_times(sc.w, ms));
    printf("  contacts %s: %d contacts after one step; stage times broad %.4f, narrow %.4f, "
           "contact %.4f, solve_tets %.4f ms\n",
           contacts ? "on" : "off", (int)st.contact_count, ms[PIOLA_STAGE_BROAD_PHASE],
           ms[PIOLA_STAGE_NARROW_PHASE], ms[PIOLA_STAGE_CONTACT], ms[PIOLA_STAGE_SOLVE_TETS]);
    const piola_stage stages[3] = {PIOLA_STAGE_BROAD_PHASE, PIOLA_STAGE_NARROW_PHASE,
                                   PIOLA_STAGE_CONTACT};
    for (int k = 0; k < 3; ++k) {
      if (contacts) {
        CHECK_MSG(t, ms[stages[k]] > 0.0 && st.stage_ms[stages[k]] == ms[stages[k]],
                  "stage %s: %g ms (stats %g ms)", piola_stage_name(stages[k]), ms[stages[k]],
                  st.stage_ms[stages[k]]);
      } else {
        CHECK_MSG(t, ms[stages[k]] == 0.0 && st.stage_ms[stages[k]] == 0.0,
                  "contacts off, stage %s: %g ms", piola_stage_name(stages[k]), ms[stages[k]]);
      }
    }
    CHECK(t, ms[PIOLA_STAGE_SOLVE_TETS] > 0.0 && ms[PIOLA_STAGE_PREDICT] > 0.0);
    if (contacts) {
      CHECK_MSG(t, st.contact_count > 0 && st.contact_overflow == 0,
                "%d contacts, overflow %d after one step", (int)st.contact_count,
                (int)st.contact_overflow);
    } else {
      CHECK_MSG(t, st.contact_count == 0 && st.contact_overflow == 0,
                "contacts off: %d contacts, overflow %d", (int)st.contact_count,
                (int)st.contact_overflow);
    }
    /* The surface counts follow the bodies: box B removed. */
    REQUIRE_OK(t, piola_world_remove_body(sc.w, sc.ids[1]));
    REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
    CHECK_MSG(t, st.surface_triangles == 192 + 624 && st.surface_vertices == 98 + 314,
              "after the removal: %d surface triangles, %d vertices", (int)st.surface_triangles,
              (int)st.surface_vertices);
    REQUIRE_OK(t, piola_world_step(sc.w));
    REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
    CHECK_MSG(t, st.contact_count == 0, "%d contacts with box B gone", (int)st.contact_count);
    CHECK(t, sc.misuse == 0 && sc.log.count[PIOLA_LOG_WARNING] == 0);
    ct_scene_destroy(&sc);
  }
  piola_mesh_free(&a);
  piola_mesh_free(&b);
  piola_mesh_free(&c);
}

/* On OpenCL with profiling: the contact stages are timed on the device after a step with
 * contacts (and not run without them); the surface counts and the contact count after the
 * first step are those of the CPU reference. */
void test_opencl_contact_stats_and_stages(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh a = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f), b = wt_box(3, 2, 2, 0.6f, 0.4f, 0.4f);
  piola_tet_mesh c = ct_hairpin(0.8f, 38);
  REQUIRE(t, a.vertex_count > 0 && b.vertex_count > 0 && c.vertex_count > 0);
  piola_stats reference;
  memset(&reference, 0, sizeof reference);
  for (int run = 0; run < 3; ++run) {
    /* run 0: the CPU reference; 1: OpenCL with contacts; 2: OpenCL without. */
    const bool contacts = run < 2;
    ct_scene sc;
    memset(&sc, 0, sizeof sc);
    piola_world_def def =
        ct_def(&sc, run == 0 ? PIOLA_BACKEND_CPU_REFERENCE : PIOLA_BACKEND_OPENCL);
    def.contacts = contacts;
    def.profile = true;
    REQUIRE_OK(t, ct_stats_scene(&sc, &def, &a, &b, &c));
    REQUIRE_OK(t, piola_world_step(sc.w));
    piola_stats st;
    REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
    if (run == 0) {
      reference = st;
      ct_scene_destroy(&sc);
      continue;
    }
    double ms[PIOLA_STAGE_COUNT];
    REQUIRE_OK(t, piola_world_get_stage_times(sc.w, ms));
    printf("  opencl, contacts %s: %d contacts (CPU reference %d); device time broad %.4f, "
           "narrow %.4f, contact %.4f, solve_tets %.4f ms\n",
           contacts ? "on" : "off", (int)st.contact_count, (int)reference.contact_count,
           ms[PIOLA_STAGE_BROAD_PHASE], ms[PIOLA_STAGE_NARROW_PHASE], ms[PIOLA_STAGE_CONTACT],
           ms[PIOLA_STAGE_SOLVE_TETS]);
    CHECK(t, st.backend == PIOLA_BACKEND_OPENCL);
    CHECK(t, st.surface_triangles == reference.surface_triangles &&
                 st.surface_vertices == reference.surface_vertices);
    const piola_stage stages[3] = {PIOLA_STAGE_BROAD_PHASE, PIOLA_STAGE_NARROW_PHASE,
                                   PIOLA_STAGE_CONTACT};
    for (int k = 0; k < 3; ++k) {
      CHECK_MSG(t, contacts ? ms[stages[k]] > 0.0 : ms[stages[k]] == 0.0,
                "contacts %s, stage %s: %g ms", contacts ? "on" : "off",
                piola_stage_name(stages[k]), ms[stages[k]]);
    }
    CHECK(t, ms[PIOLA_STAGE_SOLVE_TETS] > 0.0);
    if (contacts) {
      CHECK_MSG(t,
                st.contact_count == reference.contact_count && st.contact_count > 0 &&
                    st.contact_overflow == 0,
                "%d contacts, overflow %d; the CPU reference found %d", (int)st.contact_count,
                (int)st.contact_overflow, (int)reference.contact_count);
    } else {
      CHECK(t, st.contact_count == 0 && st.contact_overflow == 0);
    }
    CHECK(t, sc.misuse == 0 && sc.log.count[PIOLA_LOG_WARNING] == 0 &&
                 sc.log.count[PIOLA_LOG_ERROR] == 0);
    ct_scene_destroy(&sc);
  }
  piola_mesh_free(&a);
  piola_mesh_free(&b);
  piola_mesh_free(&c);
}

/* ---- 9. Overflow -------------------------------------------------------------------------------
 */

/* A small tet (edges 0.1 m) standing on its tip over the middle of a slab whose top is finely
 * meshed (8 x 1 x 8 cells of 2 x 10 x 2 cm), the tip 3.5 cm above a vertex of the slab's top,
 * with a contact thickness of 3 cm (below the bodies' smallest features, 0.08 and 0.1 m): the
 * tip may reach every triangle within 3 cm of its foot, many more than
 * PIOLA_MAX_VERTEX_CONTACTS. */
/* The scene's logger, counting the contact overflow's warnings apart from the others (the
 * slab under the tip is unconverged at 5 iterations, which is warned about once too). */
static void ct_overflow_log(piola_log_level level, const char *message, void *user_data) {
  ct_scene *sc = user_data;
  piola_test_log_fn(level, message, &sc->log);
  sc->dropped += level == PIOLA_LOG_WARNING && strstr(message, "pairs dropped") != NULL;
}

static piola_status ct_overflow_scene(ct_scene *sc, piola_backend backend,
                                      const piola_tet_mesh *slab, const piola_tet_mesh *tip) {
  piola_world_def def = ct_def(sc, backend);
  def.logger.fn = ct_overflow_log;
  def.logger.user_data = sc;
  def.contact_thickness = 0.03f;
  piola_status s = ct_scene_create(sc, &def, true);
  if (s == PIOLA_OK) {
    s = ct_add(sc, slab, 0.0f, 0.0f, 0.0f);
  }
  if (s == PIOLA_OK) {
    /* The tip (vertex 3) 3.5 cm above (0.08, 0.1, 0.08), a vertex of the slab's top. */
    s = ct_add(sc, tip, 0.08f - tip->positions[9], 0.135f - tip->positions[10],
               0.08f - tip->positions[11]);
  }
  return s;
}

/* The unit tet of world_helpers.h scaled to 0.1 m and turned upside down (its apex, vertex 3,
 * pointing down), still positively oriented. */
static piola_tet_mesh ct_tip_tet(float *xyz, int32_t *tets) {
  for (int i = 0; i < 4; ++i) {
    xyz[3 * i] = 0.1f * wt_unit_tet[3 * i];
    xyz[3 * i + 1] = -0.1f * wt_unit_tet[3 * i + 1];
    xyz[3 * i + 2] = 0.1f * wt_unit_tet[3 * i + 2];
  }
  tets[0] = 0;
  tets[1] = 2; /* (0, 2, 1, 3): the mirror image reverses the orientation */
  tets[2] = 1;
  tets[3] = 3;
  piola_tet_mesh m = {xyz, 4, tets, 1};
  return m;
}

/* The overflow scene on `backend`: after the first step the stats report dropped pairs and
 * the logger a warning; for 40 more steps (the tet balances on its tip, then starts to tip
 * over) the tip, which kept its nearest triangles, stays about a thickness above the slab, and
 * no tet of the slab inverts. Returns the first step's counts. */
static void ct_overflow(piola_test *t, piola_backend backend, piola_stats *first) {
  memset(first, 0, sizeof *first);
  piola_tet_mesh slab = wt_box(8, 1, 8, 0.16f, 0.1f, 0.16f);
  REQUIRE(t, slab.vertex_count > 0);
  float xyz[12];
  int32_t tets[4];
  const piola_tet_mesh tip = ct_tip_tet(xyz, tets);
  const double thickness = 0.03;
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  REQUIRE_OK(t, ct_overflow_scene(&sc, backend, &slab, &tip));
  CHECK(t, sc.log.count[PIOLA_LOG_WARNING] == 0); /* nothing reoriented */
  REQUIRE_OK(t, piola_world_step(sc.w));
  piola_stats st;
  const int warnings = sc.dropped;
  REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
  *first = st;
  printf("  %s: after one step %d contacts kept, %d dropped; %d warning: %s\n",
         piola_backend_name(backend), (int)st.contact_count, (int)st.contact_overflow,
         sc.dropped - warnings, sc.log.last);
  CHECK_MSG(t, st.contact_overflow > 0, "no overflow reported (%d contacts)",
            (int)st.contact_count);
  CHECK_MSG(t, st.contact_count >= PIOLA_MAX_VERTEX_CONTACTS, "%d contacts", (int)st.contact_count);
  CHECK_MSG(t, sc.dropped == warnings + 1 && strstr(sc.log.last, "dropped") != NULL,
            "%d warnings for the overflow; last message: %s", sc.dropped - warnings, sc.log.last);
  int32_t ntri = 0;
  int32_t *tri = ct_surface(&sc, 0, &ntri);
  REQUIRE(t, tri != NULL);
  double nearest = INFINITY, farthest = 0.0;
  int32_t inside = 0, inverted = 0, overflowing = 0;
  for (int32_t step = 0; step < 40; ++step) {
    REQUIRE_OK(t, piola_world_step(sc.w));
    REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
    float *p = wt_get_positions(sc.w, sc.ids[1]), *q = wt_get_positions(sc.w, sc.ids[0]);
    REQUIRE(t, p != NULL && q != NULL);
    const double d = ct_surface_distance(p + 9, 1, tri, ntri, q);
    nearest = fmin(nearest, d);
    farthest = fmax(farthest, d);
    inside += ct_inside_mesh(&slab, q, p + 9, -1);
    inverted += st.inverted_tets;
    overflowing += st.contact_overflow > 0;
    free(p);
    free(q);
  }
  printf("  %s: over the next 40 steps the tip %.4f to %.4f m from the slab (thickness %.2f m), "
         "inside it in %d steps; %d inverted tets; overflow in %d steps\n",
         piola_backend_name(backend), nearest, farthest, thickness, (int)inside, (int)inverted,
         (int)overflowing);
  CHECK_MSG(t, inside == 0 && nearest > 0.5 * thickness && farthest < 1.5 * thickness,
            "the tip was %.4f to %.4f m from the slab, inside it in %d steps", nearest, farthest,
            (int)inside);
  CHECK_MSG(t, inverted == 0, "%d inverted tets", (int)inverted);
  CHECK_MSG(t, overflowing == 40, "overflow in only %d of 40 steps", (int)overflowing);
  /* Read at every step, the run of dropping steps was logged once, at its first read. */
  CHECK_MSG(t, sc.dropped == warnings + 1, "%d warnings over 41 dropping steps read one by one",
            sc.dropped - warnings);
  /* Read again after two steps unread, the drops are a new run: logged once more, however
   * often that step is read. */
  REQUIRE_OK(t, piola_world_step(sc.w));
  REQUIRE_OK(t, piola_world_step(sc.w));
  REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
  REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
  CHECK_MSG(t, st.contact_overflow > 0 && sc.dropped == warnings + 2,
            "after a gap: %d dropped, %d warnings in all", (int)st.contact_overflow,
            sc.dropped - warnings);
  free(tri);
  ct_scene_destroy(&sc);
  piola_mesh_free(&slab);
}

/* Too many candidates for one vertex are reported in the stats and to the logger; the two
 * boxes of test 1, at every step up to and after their first contact, never overflow. */
void test_contact_overflow_reported(piola_test *t) {
  piola_stats first;
  ct_overflow(t, PIOLA_BACKEND_CPU_REFERENCE, &first);
  piola_tet_mesh box = wt_box(4, 4, 4, 1.0f, 1.0f, 1.0f);
  REQUIRE(t, box.vertex_count > 0);
  ct_scene sc;
  memset(&sc, 0, sizeof sc);
  REQUIRE_OK(t, ct_two_boxes(&sc, PIOLA_BACKEND_CPU_REFERENCE, &box, 0.5f, PIOLA_SCHEDULE_AUTO));
  int32_t most = 0, contacts = 0;
  for (int32_t step = 0; step < 120; ++step) {
    REQUIRE_OK(t, piola_world_step(sc.w));
    piola_stats st;
    REQUIRE_OK(t, piola_world_get_stats(sc.w, &st));
    most = st.contact_overflow > most ? st.contact_overflow : most;
    contacts = st.contact_count > contacts ? st.contact_count : contacts;
  }
  CHECK_MSG(t, most == 0 && contacts > 0 && sc.log.count[PIOLA_LOG_WARNING] == 0,
            "two boxes: overflow up to %d (up to %d contacts), %d warnings", (int)most,
            (int)contacts, sc.log.count[PIOLA_LOG_WARNING]);
  ct_scene_destroy(&sc);
  piola_mesh_free(&box);
}

/* The same on OpenCL, with the same counts as the CPU reference after the first step. */
void test_opencl_contact_overflow_reported(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_stats cpu, cl;
  ct_overflow(t, PIOLA_BACKEND_OPENCL, &cl);
  ct_overflow(t, PIOLA_BACKEND_CPU_REFERENCE, &cpu);
  CHECK_MSG(t, cl.contact_count == cpu.contact_count && cl.contact_overflow == cpu.contact_overflow,
            "OpenCL kept %d and dropped %d, the CPU reference %d and %d", (int)cl.contact_count,
            (int)cl.contact_overflow, (int)cpu.contact_count, (int)cpu.contact_overflow);
}
