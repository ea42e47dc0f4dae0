/* `piola validate`: the experiments of Bender, Koschier, Charrier and Weber 2014, "Position-Based
 * Simulation of Continuous Materials", reproduced through the public API (see validate.h and the
 * README's "Validation" section, which lists the settings and why they were chosen).
 *
 *   convergence  Fig. 4   elastic energy after 0..50 iterations of one quasi-static step
 *   stiffness    Fig. 5   strain of a pulled beam vs iterations and vs Young's modulus
 *   poisson      Fig. 7   lateral contraction of a stretched beam vs the material's nu
 *   timestep     (XPBD)   static sag of a cantilever for dt = 10, 5 and 2.5 ms
 *   recovery     Fig. 6   a flattened and a mirrored body recover their rest volume
 *   plasticity   Fig. 8   residual twist of a beam twisted and released
 *   compression  Figs. 2, 11  stress vs stretch with and without the inversion clamp; a loaded
 *                         cube keeps more volume with Neo-Hookean than with StVK
 * and the cloth (Sec. 4.3):
 *   cloth_poisson    Fig. 7   lateral contraction of a 1 m x 1 m cloth pulled along the weft
 *   cloth_weft_warp  Fig. 10  equal pulls along weft and warp, the warp 4 times stiffer
 *   cloth_hanging    (membrane) elongation of a strip hanging from its top edge
 *   cloth_cantilever (bending)  tip sag of a cantilevered strip under its own weight
 *   cloth_rigid      (bending)  zero energy for rigid motions of flat and curved rest states
 *
 * Every number is measured from the simulation (positions and piola_world_get_stats()), nothing
 * is computed from the library's internals. A library failure becomes a failed check. */
#include "validate.h"

#include "scene.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

validate_options validate_default_options(void) {
  validate_options o;
  memset(&o, 0, sizeof o);
  o.backend = PIOLA_BACKEND_CPU_REFERENCE;
  o.cpu_threads = 1;
  return o;
}

/* ---- Report: checks and series ------------------------------------------------------- */

void validate_report_init(validate_report *r) {
  memset(r, 0, sizeof *r);
}

void validate_report_free(validate_report *r) {
  for (int32_t i = 0; i < r->series_count; ++i) {
    free(r->series[i].labels);
    free(r->series[i].values);
  }
  free(r->series);
  free(r->checks);
  memset(r, 0, sizeof *r);
}

static void add_check(validate_report *r, const char *experiment, const char *name,
                      const char *unit, double measured, double expected, double tolerance,
                      validate_relation relation, const char *note) {
  if (r->check_count == r->check_capacity) {
    int32_t cap = r->check_capacity > 0 ? 2 * r->check_capacity : 32;
    validate_check *c = realloc(r->checks, sizeof *c * (size_t)cap);
    if (c == NULL) {
      r->out_of_memory = true;
      return;
    }
    r->checks = c;
    r->check_capacity = cap;
  }
  validate_check *c = &r->checks[r->check_count++];
  memset(c, 0, sizeof *c);
  snprintf(c->experiment, sizeof c->experiment, "%s", experiment);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->unit, sizeof c->unit, "%s", unit != NULL ? unit : "");
  snprintf(c->note, sizeof c->note, "%s", note != NULL ? note : "");
  c->measured = measured;
  c->expected = expected;
  c->tolerance = tolerance;
  c->relation = relation;
  switch (relation) {
  case VALIDATE_NEAR:
    c->passed = isfinite(measured) && fabs(measured - expected) <= tolerance;
    break;
  case VALIDATE_AT_MOST:
    c->passed = isfinite(measured) && measured <= expected;
    break;
  case VALIDATE_AT_LEAST:
    c->passed = isfinite(measured) && measured >= expected;
    break;
  case VALIDATE_INFO:
    c->passed = true;
    break;
  }
}

static void check_near(validate_report *r, const char *x, const char *name, const char *unit,
                       double measured, double expected, double tolerance, const char *note) {
  add_check(r, x, name, unit, measured, expected, tolerance, VALIDATE_NEAR, note);
}

static void check_at_most(validate_report *r, const char *x, const char *name, const char *unit,
                          double measured, double limit, const char *note) {
  add_check(r, x, name, unit, measured, limit, 0.0, VALIDATE_AT_MOST, note);
}

static void check_at_least(validate_report *r, const char *x, const char *name, const char *unit,
                           double measured, double limit, const char *note) {
  add_check(r, x, name, unit, measured, limit, 0.0, VALIDATE_AT_LEAST, note);
}

static void report_info(validate_report *r, const char *x, const char *name, const char *unit,
                        double measured, const char *note) {
  add_check(r, x, name, unit, measured, NAN, NAN, VALIDATE_INFO, note);
}

/* Records a library failure as a failed check; returns 1 (the experiment's error result). */
static int report_error(validate_report *r, const char *x, const char *what, piola_status s) {
  char name[96], note[160];
  snprintf(name, sizeof name, "error: %s", what);
  snprintf(note, sizeof note, "%s", piola_status_string(s));
  add_check(r, x, name, "", NAN, NAN, NAN, VALIDATE_NEAR, note);
  return 1;
}

/* A new series with the given column names (the label column comes first and is implicit).
 * Returns its index, or -1 when out of memory. */
static int series_new(validate_report *r, const char *experiment, const char *name, int columns,
                      const char *const *names) {
  if (r->series_count == r->series_capacity) {
    int32_t cap = r->series_capacity > 0 ? 2 * r->series_capacity : 16;
    validate_series *s = realloc(r->series, sizeof *s * (size_t)cap);
    if (s == NULL) {
      r->out_of_memory = true;
      return -1;
    }
    r->series = s;
    r->series_capacity = cap;
  }
  validate_series *s = &r->series[r->series_count];
  memset(s, 0, sizeof *s);
  snprintf(s->experiment, sizeof s->experiment, "%s", experiment);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->column_count = columns < VALIDATE_MAX_COLUMNS ? columns : VALIDATE_MAX_COLUMNS;
  for (int i = 0; i < s->column_count; ++i) {
    snprintf(s->columns[i], sizeof s->columns[i], "%s", names[i]);
  }
  return r->series_count++;
}

static void series_add(validate_report *r, int index, const char *label, const double *values) {
  if (index < 0) {
    return;
  }
  validate_series *s = &r->series[index];
  if (s->row_count == s->row_capacity) {
    int32_t cap = s->row_capacity > 0 ? 2 * s->row_capacity : 64;
    char(*labels)[32] = realloc(s->labels, sizeof *labels * (size_t)cap);
    if (labels != NULL) {
      s->labels = labels;
    }
    double *v = realloc(s->values, sizeof *v * (size_t)cap * (size_t)s->column_count);
    if (v != NULL) {
      s->values = v;
    }
    if (labels == NULL || v == NULL) {
      r->out_of_memory = true;
      return;
    }
    s->row_capacity = cap;
  }
  snprintf(s->labels[s->row_count], sizeof s->labels[0], "%s", label);
  memcpy(s->values + (size_t)s->row_count * (size_t)s->column_count, values,
         sizeof *values * (size_t)s->column_count);
  s->row_count++;
}

/* ---- A world with one body ------------------------------------------------------------- */

static bool verbose_on = true, verbose_off = false;

/* The settings every experiment starts from: no gravity, no damping, the chosen backend. */
static piola_world_def base_def(const validate_options *o, double dt, int32_t substeps,
                                int32_t iterations) {
  piola_world_def def = piola_default_world_def();
  def.backend = o->backend;
  def.device_spec = o->device;
  def.gravity[0] = def.gravity[1] = def.gravity[2] = 0.0f;
  def.dt = (float)dt;
  def.substeps = substeps;
  def.iterations = iterations;
  def.cpu_threads = o->cpu_threads;
  def.logger.fn = cli_log;
  def.logger.user_data = o->verbose ? &verbose_on : &verbose_off;
  return def;
}

static piola_material base_material(piola_model model, double youngs, double poisson) {
  piola_material m = piola_default_material();
  m.model = model;
  m.solver = PIOLA_SOLVER_XPBD;
  m.youngs_modulus = (float)youngs;
  m.poisson_ratio = (float)poisson;
  m.density = 1000.0f;
  m.handle_inversion = PIOLA_INVERSION_ON;
  return m;
}

typedef struct sim {
  piola_world *world;
  piola_body_id body;
  piola_tet_mesh mesh; /* the rest state (owned) */
  int32_t n;           /* vertices */
  float *x;            /* positions, as last read */
  float *inv_mass;     /* the lumped inverse masses */
  double dt;
} sim;

static void sim_destroy(sim *s) {
  piola_world_destroy(s->world);
  piola_mesh_free(&s->mesh);
  free(s->x);
  free(s->inv_mass);
  memset(s, 0, sizeof *s);
}

/* The rest of making a sim once its world and body exist (st: how that went): the arrays, the
 * inverse masses, the report's device name; on failure everything is freed. */
static piola_status sim_finish(validate_report *r, piola_status st, sim *s) {
  if (st == PIOLA_OK) {
    s->x = malloc(sizeof *s->x * 3 * (size_t)s->n);
    s->inv_mass = malloc(sizeof *s->inv_mass * (size_t)s->n);
    st = s->x == NULL || s->inv_mass == NULL ? PIOLA_ERROR_OUT_OF_MEMORY : PIOLA_OK;
  }
  if (st == PIOLA_OK) {
    st = piola_body_get_inverse_masses(s->world, s->body, s->inv_mass, s->n);
  }
  if (st == PIOLA_OK && r->device[0] == '\0') {
    piola_stats stats;
    if (piola_world_get_stats(s->world, &stats) == PIOLA_OK) {
      snprintf(r->device, sizeof r->device, "%s", stats.device_name);
    }
  }
  if (st != PIOLA_OK) {
    sim_destroy(s);
  }
  return st;
}

/* Makes a world with one body of `mesh` (taken over: freed with the sim). */
static piola_status sim_create(validate_report *r, const piola_world_def *def, piola_tet_mesh *mesh,
                               const piola_material *m, sim *s) {
  memset(s, 0, sizeof *s);
  s->mesh = *mesh;
  memset(mesh, 0, sizeof *mesh);
  s->n = s->mesh.vertex_count;
  s->dt = (double)def->dt;
  piola_status st = piola_world_create(def, &s->world);
  if (st == PIOLA_OK) {
    st = piola_world_add_tet_body(s->world, &s->mesh, m, NULL, &s->body);
  }
  return sim_finish(r, st, s);
}

static piola_status sim_read(sim *s) {
  return piola_body_get_positions(s->world, s->body, s->x, s->n);
}

static piola_status sim_steps(sim *s, int32_t steps) {
  piola_status st = PIOLA_OK;
  for (int32_t i = 0; i < steps && st == PIOLA_OK; ++i) {
    st = piola_world_step(s->world);
  }
  return st;
}

/* Signed volume (m^3) of the body's tets at positions x (floats, 3 per vertex). */
static double mesh_volume(const piola_tet_mesh *m, const float *x) {
  double sum = 0.0;
  for (int32_t t = 0; t < m->tet_count; ++t) {
    const int32_t *q = m->tets + 4 * (size_t)t;
    double a[3], b[3], c[3];
    for (int k = 0; k < 3; ++k) {
      a[k] = (double)x[3 * (size_t)q[1] + k] - (double)x[3 * (size_t)q[0] + k];
      b[k] = (double)x[3 * (size_t)q[2] + k] - (double)x[3 * (size_t)q[0] + k];
      c[k] = (double)x[3 * (size_t)q[3] + k] - (double)x[3 * (size_t)q[0] + k];
    }
    sum += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
            a[2] * (b[0] * c[1] - b[1] * c[0])) /
           6.0;
  }
  return sum;
}

/* A set of vertex indices. */
typedef struct vset {
  int32_t *idx;
  int32_t count;
} vset;

static void vset_free(vset *v) {
  free(v->idx);
  v->idx = NULL;
  v->count = 0;
}

/* Vertices whose rest coordinate on axis a equals va (and on axis b equals vb, when b >= 0). */
static vset select_vertices(const piola_tet_mesh *m, int a, double va, int b, double vb) {
  vset v = {malloc(sizeof(int32_t) * (size_t)m->vertex_count), 0};
  const double tol = 1e-5;
  for (int32_t i = 0; v.idx != NULL && i < m->vertex_count; ++i) {
    const float *p = m->positions + 3 * (size_t)i;
    if (fabs((double)p[a] - va) <= tol && (b < 0 || fabs((double)p[b] - vb) <= tol)) {
      v.idx[v.count++] = i;
    }
  }
  return v;
}

/* The rest coordinate on axis a of the vertex plane nearest to `target`. */
static double nearest_plane(const piola_tet_mesh *m, int a, double target) {
  double best = 0.0, dist = INFINITY;
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    double c = (double)m->positions[3 * (size_t)i + a];
    if (fabs(c - target) < dist) {
      dist = fabs(c - target);
      best = c;
    }
  }
  return best;
}

static double vset_mean(const float *x, const vset *v, int axis) {
  double sum = 0.0;
  for (int32_t i = 0; i < v->count; ++i) {
    sum += (double)x[3 * (size_t)v->idx[i] + axis];
  }
  return v->count > 0 ? sum / v->count : NAN;
}

/* Pins the vertices of v (inverse mass 0); the others keep theirs. */
static piola_status sim_pin(sim *s, const vset *v) {
  float *w = malloc(sizeof *w * (size_t)s->n);
  if (w == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(w, s->inv_mass, sizeof *w * (size_t)s->n);
  for (int32_t i = 0; i < v->count; ++i) {
    w[v->idx[i]] = 0.0f;
  }
  piola_status st = piola_body_set_inverse_masses(s->world, s->body, w, s->n);
  if (st == PIOLA_OK) {
    memcpy(s->inv_mass, w, sizeof *w * (size_t)s->n);
  }
  free(w);
  return st;
}

/* A constant total force (N) spread over the vertices of a rectangular face of a box mesh
 * like a uniform traction: each vertex gets the area of its share of the face (halved along
 * each edge of the face that it lies on), so every cell of the face carries the same load. */
static piola_status sim_face_force(sim *s, const vset *face, int normal_axis, const double lo[3],
                                   const double hi[3], const double total[3]) {
  float *f = calloc(3 * (size_t)s->n, sizeof *f);
  double *weight = malloc(sizeof *weight * (size_t)(face->count > 0 ? face->count : 1));
  if (f == NULL || weight == NULL) {
    free(f);
    free(weight);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  double sum = 0.0;
  for (int32_t i = 0; i < face->count; ++i) {
    const float *p = s->mesh.positions + 3 * (size_t)face->idx[i];
    double w = 1.0;
    for (int a = 0; a < 3; ++a) {
      if (a != normal_axis &&
          (fabs((double)p[a] - lo[a]) <= 1e-5 || fabs((double)p[a] - hi[a]) <= 1e-5)) {
        w *= 0.5;
      }
    }
    weight[i] = w;
    sum += w;
  }
  for (int32_t i = 0; i < face->count; ++i) {
    for (int k = 0; k < 3; ++k) {
      f[3 * (size_t)face->idx[i] + k] = (float)(total[k] * weight[i] / sum);
    }
  }
  piola_status st = piola_body_set_forces(s->world, s->body, f, s->n);
  free(f);
  free(weight);
  return st;
}

/* Something measured from the current positions (which it reads); NaN on failure. */
typedef double sim_measure(sim *s, void *user);

typedef struct settle_result {
  double value;       /* the measure at the end */
  double time;        /* simulated seconds */
  double last_change; /* relative change over the last interval */
  bool settled;
  piola_status status;
} settle_result;

/* Steps until the measure changes by at most rel_tol (relative) over two intervals of about
 * 20 ms in a row, after at least t_min and at most t_max simulated seconds. With series >= 0,
 * adds a (time, value) row per interval. */
static settle_result settle(sim *s, sim_measure *measure, void *user, double t_min, double t_max,
                            double rel_tol, validate_report *r, int series, const char *label) {
  settle_result out = {NAN, 0.0, NAN, false, PIOLA_OK};
  /* Whole steps (dt is a float in the world): every dt reaches the same time in lround(t/dt). */
  const int32_t chunk_max = (int32_t)fmax(1.0, (double)lround(0.02 / s->dt));
  const int32_t steps_min = (int32_t)lround(t_min / s->dt);
  const int32_t steps_max = (int32_t)lround(t_max / s->dt);
  double prev = NAN;
  int stable = 0;
  for (int32_t steps = 0; steps < steps_max;) {
    const int32_t chunk = steps_max - steps < chunk_max ? steps_max - steps : chunk_max;
    out.status = sim_steps(s, chunk);
    if (out.status != PIOLA_OK) {
      return out;
    }
    steps += chunk;
    out.time = steps * s->dt;
    double v = measure(s, user);
    if (!isfinite(v)) {
      out.value = v;
      return out;
    }
    double row[2] = {out.time, v};
    series_add(r, series, label, row);
    out.last_change = fabs(v - prev) / fmax(fabs(v), 1e-300);
    stable = steps >= steps_min && out.last_change <= rel_tol ? stable + 1 : 0;
    prev = v;
    out.value = v;
    if (stable >= 2) {
      out.settled = true;
      break;
    }
  }
  return out;
}

/* ---- Beams: box meshes along x --------------------------------------------------------- */

typedef struct beam {
  sim s;
  double length, width;
  double lo[3], hi[3];
  vset fixed;    /* x = 0: pinned */
  vset end;      /* x = L: loaded (or twisted) */
  vset a, b;     /* vertex planes near x = L/4 and 3L/4 (axial strain) */
  double ax, bx; /* their rest x */
  vset yl, yh;   /* the mid plane's vertices on y = 0 and y = W */
  vset zl, zh;   /* ... on z = 0 and z = W */
  double end_y0; /* rest mean y of the end face */
} beam;

static void beam_destroy(beam *b) {
  sim_destroy(&b->s);
  vset_free(&b->fixed);
  vset_free(&b->end);
  vset_free(&b->a);
  vset_free(&b->b);
  vset_free(&b->yl);
  vset_free(&b->yh);
  vset_free(&b->zl);
  vset_free(&b->zh);
}

/* A beam of length L along x with a W x W cross-section, pinned at x = 0. */
static piola_status beam_create(validate_report *r, const piola_world_def *def,
                                const int32_t cells[3], double length, double width,
                                const piola_material *m, beam *b) {
  memset(b, 0, sizeof *b);
  const float size[3] = {(float)length, (float)width, (float)width};
  piola_tet_mesh mesh;
  piola_status st = piola_mesh_make_box(cells, size, &mesh);
  if (st != PIOLA_OK) {
    return st;
  }
  st = sim_create(r, def, &mesh, m, &b->s);
  if (st != PIOLA_OK) {
    return st;
  }
  const piola_tet_mesh *pm = &b->s.mesh;
  b->length = (double)size[0];
  b->width = (double)size[1];
  for (int k = 0; k < 3; ++k) {
    b->lo[k] = 0.0;
    b->hi[k] = (double)size[k];
  }
  b->fixed = select_vertices(pm, 0, 0.0, -1, 0.0);
  b->end = select_vertices(pm, 0, b->length, -1, 0.0);
  b->ax = nearest_plane(pm, 0, 0.25 * b->length);
  b->bx = nearest_plane(pm, 0, 0.75 * b->length);
  b->a = select_vertices(pm, 0, b->ax, -1, 0.0);
  b->b = select_vertices(pm, 0, b->bx, -1, 0.0);
  const double mid = nearest_plane(pm, 0, 0.5 * b->length);
  vset yl = select_vertices(pm, 0, mid, 1, 0.0), yh = select_vertices(pm, 0, mid, 1, b->width);
  vset zl = select_vertices(pm, 0, mid, 2, 0.0), zh = select_vertices(pm, 0, mid, 2, b->width);
  b->yl = yl;
  b->yh = yh;
  b->zl = zl;
  b->zh = zh;
  if (b->fixed.idx == NULL || b->end.idx == NULL || b->a.idx == NULL || b->b.idx == NULL ||
      yl.idx == NULL || yh.idx == NULL || zl.idx == NULL || zh.idx == NULL) {
    beam_destroy(b);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  b->end_y0 = vset_mean(pm->positions, &b->end, 1);
  st = sim_pin(&b->s, &b->fixed);
  if (st != PIOLA_OK) {
    beam_destroy(b);
  }
  return st;
}

/* Total axial strain: displacement of the free end face over the length. */
static double beam_total_strain(sim *s, void *user) {
  beam *b = user;
  if (sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  return (vset_mean(s->x, &b->end, 0) - b->length) / b->length;
}

/* Axial strain between the planes near L/4 and 3L/4 and lateral strain of the mid plane (mean
 * of y and z), from the current positions (already read). */
static void beam_mid_strains(const beam *b, double *axial, double *lateral) {
  const float *x = b->s.x;
  const double rest = b->bx - b->ax;
  *axial = (vset_mean(x, &b->b, 0) - vset_mean(x, &b->a, 0) - rest) / rest;
  const double wy = vset_mean(x, &b->yh, 1) - vset_mean(x, &b->yl, 1);
  const double wz = vset_mean(x, &b->zh, 2) - vset_mean(x, &b->zl, 2);
  *lateral = 0.5 * (wy + wz - 2.0 * b->width) / b->width;
}

static double beam_poisson(sim *s, void *user) {
  beam *b = user;
  if (sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  double axial, lateral;
  beam_mid_strains(b, &axial, &lateral);
  return -lateral / axial;
}

/* Sag of a cantilever: how far the free end face's mean y went down (m). */
static double beam_sag(sim *s, void *user) {
  beam *b = user;
  if (sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  return b->end_y0 - vset_mean(s->x, &b->end, 1);
}

/* Twist of the free end face about the beam axis (degrees): the mean angle between each
 * vertex's rest and current offsets from the face's centre, in the y-z plane. */
static double beam_twist(sim *s, void *user) {
  beam *b = user;
  if (sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  const double cy = vset_mean(s->x, &b->end, 1), cz = vset_mean(s->x, &b->end, 2);
  const double c0 = 0.5 * b->width;
  double sum = 0.0;
  int32_t count = 0;
  for (int32_t i = 0; i < b->end.count; ++i) {
    const size_t v = (size_t)b->end.idx[i];
    const double y0 = (double)s->mesh.positions[3 * v + 1] - c0;
    const double z0 = (double)s->mesh.positions[3 * v + 2] - c0;
    const double y = (double)s->x[3 * v + 1] - cy, z = (double)s->x[3 * v + 2] - cz;
    if (y0 * y0 + z0 * z0 > 1e-12) {
      sum += atan2(y0 * z - z0 * y, y0 * y + z0 * z);
      ++count;
    }
  }
  return count > 0 ? sum / count * 180.0 / M_PI : NAN;
}

/* Damping (1/s) that makes the first axial mode of a fixed-free bar critically damped:
 * 2 omega_1, omega_1 = (pi / 2) sqrt(E / rho) / L. Damping does not change a static
 * equilibrium; it only shortens the way there. */
static double bar_damping(double youngs, double density, double length) {
  return 2.0 * 0.5 * M_PI * sqrt(youngs / density) / length;
}

/* Iterations at which a decreasing sequence first reaches `level` (a fraction of e[0]);
 * NaN if never. */
static double iterations_to(const double *e, int32_t n, double level) {
  for (int32_t k = 1; k < n; ++k) {
    if (e[k] <= level * e[0]) {
      return (double)k;
    }
  }
  return NAN;
}

/* ---- 1. Convergence within one step (Fig. 4) ----------------------------------------------- */

/* The body (the procedural creature or --mesh, bottom at y = 0) is squashed to 60% of its
 * height and left at rest, without gravity; one step with k iterations is taken from that same
 * state for every k (positions and zero velocities restored in between). Neo-Hookean, E = 1 MPa,
 * nu = 0.3. dt = 1 s makes the step quasi-static: the inertia term (1/dt^2) |x - x~|_M^2 of the
 * step's objective is negligible, so the iterations minimise the elastic energy alone (measured:
 * the curves at dt = 1 s and dt = 100 s agree within 0.2%; the PBD form does not see dt here). */
static int exp_convergence(const validate_options *o, validate_report *r) {
  const char *X = "convergence";
  const int32_t kmax = o->quick ? 30 : 50;
  const double squash = 0.6;
  typedef struct variant {
    const char *label;
    piola_iteration_scheme scheme;
    double omega;
    piola_solver solver;
    int32_t max_colors; /* Gauss-Seidel with a Jacobi tail beyond this many colors (0: none) */
    bool quick;
  } variant;
  static const variant variants[] = {
      {"gauss-seidel pbd", PIOLA_SCHEME_GAUSS_SEIDEL, 1.0, PIOLA_SOLVER_PBD, 0, true},
      {"gauss-seidel xpbd", PIOLA_SCHEME_GAUSS_SEIDEL, 1.0, PIOLA_SOLVER_XPBD, 0, true},
      {"jacobi w=1 pbd", PIOLA_SCHEME_JACOBI, 1.0, PIOLA_SOLVER_PBD, 0, false},
      {"jacobi w=1.5 pbd", PIOLA_SCHEME_JACOBI, 1.5, PIOLA_SOLVER_PBD, 0, true},
      {"jacobi w=1 xpbd", PIOLA_SCHEME_JACOBI, 1.0, PIOLA_SOLVER_XPBD, 0, false},
      {"jacobi w=1.5 xpbd", PIOLA_SCHEME_JACOBI, 1.5, PIOLA_SOLVER_XPBD, 0, false},
      /* The hybrid of issue 4: fewer Gauss-Seidel colors, the rest in a Jacobi tail. */
      {"gauss-seidel 16 colors + jacobi xpbd", PIOLA_SCHEME_GAUSS_SEIDEL, 1.0, PIOLA_SOLVER_XPBD,
       16, false},
      {"gauss-seidel 24 colors + jacobi xpbd", PIOLA_SCHEME_GAUSS_SEIDEL, 1.0, PIOLA_SOLVER_XPBD,
       24, false},
  };
  static const char *const columns[] = {"iterations", "energy_j", "energy_ratio", "inverted_tets"};
  const int series = series_new(r, X, "energy", 4, columns);
  double *e = malloc(sizeof *e * (size_t)(kmax + 1));
  if (e == NULL) {
    return report_error(r, X, "memory", PIOLA_ERROR_OUT_OF_MEMORY);
  }
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    const variant *va = &variants[v];
    if (o->quick && !va->quick) {
      continue;
    }
    scene_options so = scene_default_options();
    so.mesh_path = o->mesh_path;
    so.verbose = o->verbose;
    piola_tet_mesh mesh;
    char name[64];
    piola_status st = scene_load_mesh(&so, &mesh, name, sizeof name);
    if (st != PIOLA_OK) {
      free(e);
      return report_error(r, X, "mesh", st);
    }
    piola_world_def def = base_def(o, 1.0, 1, 1);
    def.iteration_scheme = va->scheme;
    def.jacobi_omega = (float)va->omega;
    def.max_colors = va->max_colors;
    /* The elastic solve alone, as in the paper's figure: the squashed Armadillo presses its arms
     * against its body, and self-contacts would add their own corrections to the curve. */
    def.contacts = false;
    piola_material m = base_material(PIOLA_MODEL_NEOHOOKEAN, 1.0e6, 0.3);
    m.solver = va->solver;
    sim s;
    st = sim_create(r, &def, &mesh, &m, &s);
    if (st != PIOLA_OK) {
      free(e);
      return report_error(r, X, "world", st);
    }
    float *start = malloc(sizeof *start * 3 * (size_t)s.n);
    float *zero = calloc(3 * (size_t)s.n, sizeof *zero);
    st = start == NULL || zero == NULL ? PIOLA_ERROR_OUT_OF_MEMORY : PIOLA_OK;
    for (int32_t i = 0; st == PIOLA_OK && i < s.n; ++i) {
      start[3 * i] = s.mesh.positions[3 * i];
      start[3 * i + 1] = (float)(squash * (double)s.mesh.positions[3 * i + 1]);
      start[3 * i + 2] = s.mesh.positions[3 * i + 2];
    }
    for (int32_t k = 0; k <= kmax && st == PIOLA_OK; ++k) {
      st = piola_body_set_positions(s.world, s.body, start, s.n);
      if (st == PIOLA_OK) {
        st = piola_body_set_velocities(s.world, s.body, zero, s.n);
      }
      if (st == PIOLA_OK && k > 0) {
        st = piola_world_set_iterations(s.world, k);
        if (st == PIOLA_OK) {
          st = piola_world_step(s.world);
        }
      }
      piola_stats stats;
      if (st == PIOLA_OK) {
        st = piola_world_get_stats(s.world, &stats);
      }
      if (st == PIOLA_OK) {
        e[k] = stats.elastic_energy;
        double row[4] = {(double)k, e[k], e[k] / e[0], (double)stats.inverted_tets};
        series_add(r, series, va->label, row);
      }
    }
    free(start);
    free(zero);
    const int32_t tets = s.mesh.tet_count;
    sim_destroy(&s);
    if (st != PIOLA_OK) {
      free(e);
      return report_error(r, X, va->label, st);
    }
    char check[96], note[160];
    if (va->scheme == PIOLA_SCHEME_GAUSS_SEIDEL && va->max_colors == 0) {
      double worst = 0.0;
      int32_t at = 0;
      for (int32_t k = 1; k <= kmax; ++k) {
        if (e[k] / e[k - 1] > worst || k == 1) {
          worst = e[k] / e[k - 1];
          at = k;
        }
      }
      snprintf(check, sizeof check, "%s: largest E(k)/E(k-1), k=1..%d", va->label, (int)kmax);
      if (va->solver == PIOLA_SOLVER_PBD) {
        /* The paper's form, whose Fig. 4 shows the energy falling with every sweep. */
        snprintf(note, sizeof note, "at k=%d; monotone fall means <= 1 (%s, %d tets)", (int)at,
                 name, (int)tets);
        check_at_most(r, X, check, "", worst, 1.0, note);
      } else {
        /* XPBD is not a descent method on U: it solves its constraint equations by
         * Newton-like projections, and with the near-zero compliance of a quasi-static step
         * its first sweep projects every constraint to zero, overshooting where tets share
         * vertices. Reported; what it promises, convergence, is judged below. */
        snprintf(note, sizeof note, "at k=%d (XPBD need not fall monotonically; %s, %d tets)",
                 (int)at, name, (int)tets);
        report_info(r, X, check, "", worst, note);
        snprintf(check, sizeof check, "%s: E(%d)/E(0), converging", va->label, (int)kmax);
        snprintf(note, sizeof note, "below 10%% of the start after %d sweeps", (int)kmax);
        check_at_most(r, X, check, "", e[kmax] / e[0], 0.1, note);
      }
    }
    for (int level = 0; level < 2; ++level) {
      const double frac = level == 0 ? 0.1 : 0.01;
      const double k = iterations_to(e, kmax + 1, frac);
      snprintf(check, sizeof check, "%s: iterations to %g%% of E(0)", va->label, 100.0 * frac);
      snprintf(note, sizeof note, "%s; E(%d)/E(0) = %.4g", isfinite(k) ? "reached" : "not reached",
               (int)kmax, e[kmax] / e[0]);
      report_info(r, X, check, "iterations", k, note);
    }
  }
  free(e);
  return 0;
}

/* ---- 2. Stiffness vs iterations and vs Young's modulus (Fig. 5) ------------------------------ */

typedef struct pull_result {
  double strain; /* total strain at rest */
  double poisson, axial, lateral;
  settle_result settle;
} pull_result;

/* A beam pinned at x = 0 and pulled along +x by `force` (N) spread over its free end face,
 * without gravity, stepped until the measure settles. */
static piola_status beam_pull(const validate_options *o, validate_report *r, const int32_t cells[3],
                              double length, double width, const piola_material *m,
                              int32_t substeps, int32_t iterations, double force, bool poisson,
                              pull_result *out) {
  const double dt = 0.005;
  piola_world_def def = base_def(o, dt, substeps, iterations);
  def.damping = (float)bar_damping((double)m->youngs_modulus, (double)m->density, length);
  beam b;
  piola_status st = beam_create(r, &def, cells, length, width, m, &b);
  if (st != PIOLA_OK) {
    return st;
  }
  const double total[3] = {force, 0.0, 0.0};
  st = sim_face_force(&b.s, &b.end, 0, b.lo, b.hi, total);
  if (st == PIOLA_OK) {
    out->settle =
        settle(&b.s, poisson ? beam_poisson : beam_total_strain, &b, 0.06, 0.5, 1e-4, r, -1, "");
    st = out->settle.status;
  }
  if (st == PIOLA_OK) {
    out->strain = beam_total_strain(&b.s, &b);
    beam_mid_strains(&b, &out->axial, &out->lateral);
    out->poisson = -out->lateral / out->axial;
  }
  beam_destroy(&b);
  return st;
}

/* A beam (0.5 m x 0.1 m x 0.1 m, Neo-Hookean, nu = 0.3, 1000 kg/m^3) pinned at one end and
 * pulled by F = 0.005 E0 A with E0 = 1 MPa (linear strain 0.5% at E0), dt = 5 ms, damping that
 * critically damps the first axial mode, stepped until the strain changes by < 1e-4 (relative)
 * over 40 ms. */
static int exp_stiffness(const validate_options *o, validate_report *r) {
  const char *X = "stiffness";
  const int32_t cells_full[3] = {12, 3, 3}, cells_quick[3] = {8, 2, 2};
  const int32_t *cells = o->quick ? cells_quick : cells_full;
  const double length = 0.5, width = 0.1, area = width * width, e0 = 1.0e6;
  const double force = 0.005 * e0 * area;
  static const int32_t its_full[] = {1, 2, 3, 5, 10, 20, 30, 40, 50};
  static const int32_t its_quick[] = {1, 20, 50};
  const int32_t *its = o->quick ? its_quick : its_full;
  const int nits = o->quick ? 3 : 9;
  typedef struct variant {
    const char *label;
    piola_solver solver;
    int32_t substeps;
    bool quick;
  } variant;
  static const variant variants[] = {{"xpbd 10 substeps", PIOLA_SOLVER_XPBD, 10, true},
                                     {"xpbd 1 substep", PIOLA_SOLVER_XPBD, 1, false},
                                     {"pbd 1 substep", PIOLA_SOLVER_PBD, 1, true}};
  static const char *const cols_it[] = {"iterations", "strain", "strain_over_linear", "settled_s"};
  const int s_it = series_new(r, X, "iterations", 4, cols_it);
  char check[96], note[160];
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    const variant *va = &variants[v];
    if (o->quick && !va->quick) {
      continue;
    }
    double s20 = NAN, s50 = NAN;
    bool all_settled = true;
    for (int i = 0; i < nits; ++i) {
      piola_material m = base_material(PIOLA_MODEL_NEOHOOKEAN, e0, 0.3);
      m.solver = va->solver;
      pull_result pr;
      piola_status st =
          beam_pull(o, r, cells, length, width, &m, va->substeps, its[i], force, false, &pr);
      if (st != PIOLA_OK) {
        return report_error(r, X, va->label, st);
      }
      all_settled = all_settled && pr.settle.settled;
      double row[4] = {(double)its[i], pr.strain, pr.strain / (force / (e0 * area)),
                       pr.settle.time};
      series_add(r, s_it, va->label, row);
      s20 = its[i] == 20 ? pr.strain : s20;
      s50 = its[i] == 50 ? pr.strain : s50;
    }
    const double change = fabs(s20 - s50) / fabs(s50);
    snprintf(check, sizeof check, "%s: strain change, 20 -> 50 iterations", va->label);
    snprintf(note, sizeof note, "|s20 - s50| / s50; strain %.6g at 20, %.6g at 50 iterations%s",
             s20, s50, all_settled ? "" : "; some runs not settled by 0.5 s");
    if (va->solver == PIOLA_SOLVER_PBD) {
      /* The paper's finding: the PBD form's stiffness depends on the iteration count. */
      check_at_least(r, X, check, "", change, 0.02, note);
    } else if (va->substeps > 1) {
      check_near(r, X, check, "", change, 0.0, 0.02, note);
    } else {
      report_info(r, X, check, "", change, note);
    }
  }

  /* Strain vs Young's modulus at a fixed force. */
  static const double youngs_full[] = {2.5e5, 5e5, 1e6, 2e6, 4e6};
  static const double youngs_quick[] = {1e6, 4e6};
  const double *youngs = o->quick ? youngs_quick : youngs_full;
  const int nyoungs = o->quick ? 2 : 5;
  static const char *const cols_e[] = {"youngs_pa", "strain", "linear_strain", "ratio"};
  const int s_e = series_new(r, X, "youngs", 4, cols_e);
  for (int solver = 0; solver < 2; ++solver) {
    if (o->quick && solver == 1) {
      continue;
    }
    const char *label = solver == 0 ? "xpbd 10 substeps" : "pbd 1 substep";
    double first = NAN, last = NAN;
    for (int i = 0; i < nyoungs; ++i) {
      piola_material m = base_material(PIOLA_MODEL_NEOHOOKEAN, youngs[i], 0.3);
      m.solver = solver == 0 ? PIOLA_SOLVER_XPBD : PIOLA_SOLVER_PBD;
      pull_result pr;
      piola_status st =
          beam_pull(o, r, cells, length, width, &m, solver == 0 ? 10 : 1, 10, force, false, &pr);
      if (st != PIOLA_OK) {
        return report_error(r, X, label, st);
      }
      const double linear = force / (youngs[i] * area);
      double row[4] = {youngs[i], pr.strain, linear, pr.strain / linear};
      series_add(r, s_e, label, row);
      first = i == 0 ? pr.strain : first;
      last = pr.strain;
      if (solver == 0) {
        snprintf(check, sizeof check, "xpbd: strain / (F/(E A)) at E = %g MPa", youngs[i] * 1e-6);
        snprintf(note, sizeof note, "strain %.5g, linear elasticity %.5g%s", pr.strain, linear,
                 pr.settle.settled ? "" : "; not settled by 0.5 s");
        if (linear < 0.01) {
          check_near(r, X, check, "", pr.strain / linear, 1.0, 0.05, note);
        } else {
          report_info(r, X, check, "", pr.strain / linear, note);
        }
      }
    }
    if (solver == 1) {
      snprintf(note, sizeof note, "the PBD form ignores E (it cancels out of the projection)");
      report_info(r, X, "pbd: strain(E = 4 MPa) / strain(E = 0.25 MPa)", "", last / first, note);
    }
  }
  return 0;
}

/* ---- 3. Lateral contraction (Fig. 7) --------------------------------------------------------- */

/* A 1 m x 0.1 m x 0.1 m beam pinned at one end and pulled to an axial strain of 0.5% (E = 1 MPa,
 * XPBD, 10 substeps of 5 iterations); the strains are measured away from the ends: axial between
 * the vertex planes near L/4 and 3L/4, lateral across the mid plane. */
static int exp_poisson(const validate_options *o, validate_report *r) {
  const char *X = "poisson";
  const int32_t cells_full[3] = {16, 3, 3}, cells_quick[3] = {10, 2, 2};
  const int32_t *cells = o->quick ? cells_quick : cells_full;
  const double length = 1.0, width = 0.1, youngs = 1.0e6;
  const double force = 0.005 * youngs * width * width;
  static const double nus[] = {0.1, 0.3, 0.45};
  static const char *const cols[] = {"material_nu", "measured_nu", "axial_strain",
                                     "lateral_strain"};
  const int series = series_new(r, X, "ratio", 4, cols);
  for (int model = 0; model < 2; ++model) {
    const char *label = model == 0 ? "stvk" : "neohookean";
    for (int i = 0; i < 3; ++i) {
      piola_material m =
          base_material(model == 0 ? PIOLA_MODEL_STVK : PIOLA_MODEL_NEOHOOKEAN, youngs, nus[i]);
      pull_result pr;
      piola_status st = beam_pull(o, r, cells, length, width, &m, 10, 5, force, true, &pr);
      if (st != PIOLA_OK) {
        return report_error(r, X, label, st);
      }
      double row[4] = {nus[i], pr.poisson, pr.axial, pr.lateral};
      series_add(r, series, label, row);
      char check[96], note[160];
      snprintf(check, sizeof check, "%s nu=%.2f: -lateral/axial strain", label, nus[i]);
      snprintf(note, sizeof note, "axial %.5g, lateral %.5g%s", pr.axial, pr.lateral,
               pr.settle.settled ? "" : "; not settled by 0.5 s");
      check_near(r, X, check, "", pr.poisson, nus[i], 0.03, note);
    }
  }
  return 0;
}

/* ---- 4. Time-step independence --------------------------------------------------------------- */

/* A cantilever (0.5 m x 0.1 m x 0.1 m, Neo-Hookean, E = 2 MPa, nu = 0.3) pinned at x = 0 sags
 * under gravity; damping 40/s (about critical for its first bending mode). Every dt runs the
 * same substeps and iterations (16 x 5) for the same simulated time; the sag of the free end is
 * compared at the end. */
static int exp_timestep(const validate_options *o, validate_report *r) {
  const char *X = "timestep";
  const int32_t cells_full[3] = {16, 3, 3}, cells_quick[3] = {10, 2, 2};
  const int32_t *cells = o->quick ? cells_quick : cells_full;
  const double total_time = o->quick ? 0.6 : 0.8;
  static const double dts[] = {0.01, 0.005, 0.0025};
  static const char *const cols[] = {"time_s", "sag_m"};
  const int series = series_new(r, X, "sag", 2, cols);
  char check[96], note[200];
  for (int solver = 0; solver < 2; ++solver) {
    if (o->quick && solver == 1) {
      continue;
    }
    double sag[3];
    double worst_change = 0.0;
    for (int i = 0; i < 3; ++i) {
      piola_world_def def = base_def(o, dts[i], 16, 5);
      def.gravity[1] = -9.81f;
      def.damping = 40.0f;
      piola_material m = base_material(PIOLA_MODEL_NEOHOOKEAN, 2.0e6, 0.3);
      m.solver = solver == 0 ? PIOLA_SOLVER_XPBD : PIOLA_SOLVER_PBD;
      beam b;
      piola_status st = beam_create(r, &def, cells, 0.5, 0.1, &m, &b);
      if (st != PIOLA_OK) {
        return report_error(r, X, "beam", st);
      }
      char label[32];
      snprintf(label, sizeof label, "%s dt=%gms", solver == 0 ? "xpbd" : "pbd", dts[i] * 1e3);
      /* Fixed time: settle() with an unreachable tolerance records the curve. */
      settle_result sr = settle(&b.s, beam_sag, &b, total_time, total_time, -1.0, r, series, label);
      /* Change over the last 0.1 s, to show the sag is static. */
      const validate_series *se = &r->series[series];
      double before = NAN;
      for (int32_t k = 0; se->row_count > 0 && k < se->row_count; ++k) {
        const double *row = se->values + (size_t)k * (size_t)se->column_count;
        if (strcmp(se->labels[k], label) == 0 && row[0] <= total_time - 0.1 + 1e-9) {
          before = row[1];
        }
      }
      beam_destroy(&b);
      if (sr.status != PIOLA_OK) {
        return report_error(r, X, label, sr.status);
      }
      sag[i] = sr.value;
      worst_change = fmax(worst_change, fabs(sr.value - before) / fabs(sr.value));
    }
    const double spread = fmax(fabs(sag[0] - sag[2]), fabs(sag[1] - sag[2])) / fabs(sag[2]);
    snprintf(note, sizeof note,
             "sag %.5g / %.5g / %.5g m at dt 10 / 5 / 2.5 ms after %g s; changed < %.1e over "
             "the last 0.1 s",
             sag[0], sag[1], sag[2], total_time, worst_change);
    if (solver == 0) {
      snprintf(check, sizeof check, "xpbd: max |sag(dt) - sag(2.5 ms)| / sag(2.5 ms)");
      check_near(r, X, check, "", spread, 0.0, 0.02, note);
    } else {
      snprintf(check, sizeof check, "pbd: max |sag(dt) - sag(2.5 ms)| / sag(2.5 ms)");
      report_info(r, X, check, "", spread, note);
    }
  }
  return 0;
}

/* ---- 5. Recovery from flattening and mirroring (Fig. 6) -------------------------------------- */

/* The body (creature or --mesh; E = 1 MPa, nu = 0.3, inversion handling on, XPBD) is flattened
 * onto its mid plane (every y set to the mean y: every tet degenerate) or mirrored through it
 * (every tet inverted), then left alone without gravity (dt = 5 ms, 10 iterations, damping 5/s). */
static int exp_recovery(const validate_options *o, validate_report *r) {
  const char *X = "recovery";
  const double dt = 0.005, total_time = o->quick ? 1.0 : 2.0;
  const int32_t iterations = o->quick ? 5 : 10;
  static const char *const cols[] = {"time_s", "volume_ratio", "inverted_tets"};
  const int series = series_new(r, X, "volume", 3, cols);
  for (int model = 0; model < 2; ++model) {
    for (int mirrored = 0; mirrored < 2; ++mirrored) {
      char label[32];
      snprintf(label, sizeof label, "%s %s", model == 0 ? "stvk" : "neohookean",
               mirrored ? "mirrored" : "flattened");
      scene_options so = scene_default_options();
      so.mesh_path = o->mesh_path;
      so.verbose = o->verbose;
      piola_tet_mesh mesh;
      char name[64];
      piola_status st = scene_load_mesh(&so, &mesh, name, sizeof name);
      if (st != PIOLA_OK) {
        return report_error(r, X, "mesh", st);
      }
      piola_world_def def = base_def(o, dt, 1, iterations);
      def.damping = 5.0f;
      def.contacts = false; /* the flattened or mirrored body passes through itself */
      piola_material m =
          base_material(model == 0 ? PIOLA_MODEL_STVK : PIOLA_MODEL_NEOHOOKEAN, 1.0e6, 0.3);
      sim s;
      st = sim_create(r, &def, &mesh, &m, &s);
      if (st != PIOLA_OK) {
        return report_error(r, X, label, st);
      }
      const double v0 = mesh_volume(&s.mesh, s.mesh.positions);
      double ymean = 0.0;
      for (int32_t i = 0; i < s.n; ++i) {
        ymean += (double)s.mesh.positions[3 * i + 1] / s.n;
      }
      for (int32_t i = 0; i < s.n; ++i) {
        const double y = (double)s.mesh.positions[3 * i + 1];
        s.x[3 * i] = s.mesh.positions[3 * i];
        s.x[3 * i + 1] = (float)(mirrored ? 2.0 * ymean - y : ymean);
        s.x[3 * i + 2] = s.mesh.positions[3 * i + 2];
      }
      st = piola_body_set_positions(s.world, s.body, s.x, s.n);
      const int32_t chunk = (int32_t)lround(0.05 / dt);
      piola_stats stats;
      memset(&stats, 0, sizeof stats);
      double ratio = NAN, t = 0.0;
      while (st == PIOLA_OK && t < total_time - 1e-9) {
        st = sim_steps(&s, chunk);
        t += chunk * dt;
        if (st == PIOLA_OK) {
          st = sim_read(&s);
        }
        if (st == PIOLA_OK) {
          st = piola_world_get_stats(s.world, &stats);
        }
        if (st == PIOLA_OK) {
          ratio = mesh_volume(&s.mesh, s.x) / v0;
          double row[3] = {t, ratio, (double)stats.inverted_tets};
          series_add(r, series, label, row);
        }
      }
      sim_destroy(&s);
      if (st != PIOLA_OK) {
        return report_error(r, X, label, st);
      }
      char check[96], note[160];
      snprintf(check, sizeof check, "%s: volume / rest volume after %g s", label, total_time);
      snprintf(note, sizeof note, "%s; %d inverted tets, elastic energy %.3g J at the end", name,
               (int)stats.inverted_tets, stats.elastic_energy);
      check_near(r, X, check, "", ratio, 1.0, 0.01, note);
    }
  }
  return 0;
}

/* ---- 6. Plasticity (Fig. 8) ------------------------------------------------------------------ */

typedef struct twist_run {
  const char *label;
  double creep, yield, max;
  bool quick;
} twist_run;

/* A 0.5 m x 0.1 m x 0.1 m beam (Neo-Hookean, E = 1 MPa, nu = 0.3) pinned at both ends; the end
 * at x = L is turned kinematically to 90 degrees about the beam axis over 0.2 s, held for 0.3 s,
 * then released (unpinned) for 0.5 s (XPBD, dt = 5 ms, 4 substeps of 10 iterations, damping
 * 30/s, no gravity). Returns the residual twist of the free end (degrees). */
static piola_status twist_beam(const validate_options *o, validate_report *r,
                               const int32_t cells[3], const twist_run *tr, int series,
                               double *residual) {
  const double dt = 0.005, angle = 0.5 * M_PI;
  const int32_t ramp = 40, hold = 60, release = 100;
  piola_world_def def = base_def(o, dt, 4, 10);
  def.damping = 30.0f;
  piola_material m = base_material(PIOLA_MODEL_NEOHOOKEAN, 1.0e6, 0.3);
  m.plastic_creep = (float)tr->creep;
  m.plastic_yield = (float)tr->yield;
  m.plastic_max = (float)tr->max;
  beam b;
  piola_status st = beam_create(r, &def, cells, 0.5, 0.1, &m, &b);
  if (st != PIOLA_OK) {
    return st;
  }
  float *lumped = malloc(sizeof *lumped * (size_t)b.s.n);
  st = lumped == NULL ? PIOLA_ERROR_OUT_OF_MEMORY : PIOLA_OK;
  if (st == PIOLA_OK) {
    memcpy(lumped, b.s.inv_mass, sizeof *lumped * (size_t)b.s.n);
    /* The fixed end is pinned already; sim_pin keeps it and pins the twisted end too. */
    st = sim_pin(&b.s, &b.end);
  }
  const double c = 0.5 * b.width;
  double twist = NAN;
  for (int32_t step = 0; st == PIOLA_OK && step < ramp + hold + release; ++step) {
    if (step < ramp) {
      const double a = angle * (step + 1) / ramp;
      st = sim_read(&b.s);
      for (int32_t i = 0; st == PIOLA_OK && i < b.end.count; ++i) {
        const size_t v = (size_t)b.end.idx[i];
        const double y = (double)b.s.mesh.positions[3 * v + 1] - c;
        const double z = (double)b.s.mesh.positions[3 * v + 2] - c;
        b.s.x[3 * v + 1] = (float)(c + y * cos(a) - z * sin(a));
        b.s.x[3 * v + 2] = (float)(c + y * sin(a) + z * cos(a));
      }
      if (st == PIOLA_OK) {
        st = piola_body_set_positions(b.s.world, b.s.body, b.s.x, b.s.n);
      }
    }
    if (st == PIOLA_OK && step == ramp + hold) {
      for (int32_t i = 0; i < b.end.count; ++i) {
        b.s.inv_mass[b.end.idx[i]] = lumped[b.end.idx[i]];
      }
      st = piola_body_set_inverse_masses(b.s.world, b.s.body, b.s.inv_mass, b.s.n);
    }
    if (st == PIOLA_OK) {
      st = piola_world_step(b.s.world);
    }
    if (st == PIOLA_OK && (step + 1) % 4 == 0) {
      twist = beam_twist(&b.s, &b);
      double row[2] = {(step + 1) * dt, twist};
      series_add(r, series, tr->label, row);
    }
  }
  if (st == PIOLA_OK) {
    twist = beam_twist(&b.s, &b);
    st = isfinite(twist) ? PIOLA_OK : PIOLA_ERROR_NON_FINITE;
  }
  *residual = twist;
  free(lumped);
  beam_destroy(&b);
  return st;
}

static int exp_plasticity(const validate_options *o, validate_report *r) {
  const char *X = "plasticity";
  const int32_t cells_full[3] = {16, 3, 3}, cells_quick[3] = {10, 2, 2};
  const int32_t *cells = o->quick ? cells_quick : cells_full;
  /* Base: creep 2/s, yield 0.03, max 0.3; each group varies one parameter. */
  static const twist_run runs[] = {
      {"off", 0.0, 0.03, 0.3, true},         {"creep 0.5", 0.5, 0.03, 0.3, false},
      {"creep 1", 1.0, 0.03, 0.3, true},     {"creep 2", 2.0, 0.03, 0.3, true},
      {"creep 5", 5.0, 0.03, 0.3, false},    {"yield 0.1", 2.0, 0.1, 0.3, true},
      {"yield 0.15", 2.0, 0.15, 0.3, false}, {"max 0.02", 2.0, 0.03, 0.02, false},
      {"max 0.05", 2.0, 0.03, 0.05, true},   {"max 0.1", 2.0, 0.03, 0.1, false},
  };
  enum { RUNS = sizeof runs / sizeof runs[0] };
  static const char *const cols_t[] = {"time_s", "twist_deg"};
  static const char *const cols_r[] = {"creep_per_s", "yield", "max", "residual_deg"};
  const int s_t = series_new(r, X, "twist", 2, cols_t);
  const int s_r = series_new(r, X, "residual", 4, cols_r);
  double res[RUNS];
  for (int i = 0; i < RUNS; ++i) {
    res[i] = NAN;
    if (o->quick && !runs[i].quick) {
      continue;
    }
    piola_status st = twist_beam(o, r, cells, &runs[i], s_t, &res[i]);
    if (st != PIOLA_OK) {
      return report_error(r, X, runs[i].label, st);
    }
    double row[4] = {runs[i].creep, runs[i].yield, runs[i].max, res[i]};
    series_add(r, s_r, runs[i].label, row);
  }
  /* "none" and "a difference" are both measured against 1% of the applied 90 degrees. */
  const double applied = 90.0, threshold = 0.01 * applied;
  char note[160];
  snprintf(note, sizeof note, "residual %.3g deg of 90 deg applied; 'none' = within 1%%", res[0]);
  check_at_most(r, X, "plasticity off: |residual twist|", "deg", fabs(res[0]), threshold, note);
  snprintf(note, sizeof note, "creep 2/s, yield 0.03, max 0.3: residual %.3g deg", res[3]);
  check_at_least(r, X, "plasticity on: residual twist", "deg", res[3], threshold, note);
  /* Each group: the residual must move the expected way by at least the threshold between
   * the group's ends (the base run and the strongest setting); the note lists every residual
   * along the group. */
  typedef struct group {
    const char *name;
    int idx[4];
    int count;
    double sign; /* +1: the residual grows along the list */
  } group;
  const group groups[] = {
      {"larger creep: residual(5/s) - residual(0.5/s)", {1, 2, 3, 4}, 4, 1.0},
      {"larger yield: residual(0.03) - residual(0.15)", {3, 5, 6, -1}, 3, -1.0},
      {"smaller max: residual(0.3) - residual(0.02)", {3, 9, 8, 7}, 4, -1.0},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; ++g) {
    char list[96] = "";
    int lo = -1, hi = -1;
    for (int k = 0; k < groups[g].count; ++k) {
      const int i = groups[g].idx[k];
      if (!isfinite(res[i])) {
        continue; /* not run in the quick version */
      }
      char item[48];
      snprintf(item, sizeof item, "%s%s: %.3g", list[0] != '\0' ? ", " : "", runs[i].label, res[i]);
      strncat(list, item, sizeof list - strlen(list) - 1);
      lo = lo < 0 ? i : lo;
      hi = i;
    }
    char name[96];
    snprintf(name, sizeof name, "%s", groups[g].name);
    if (o->quick) {
      /* The quick version runs only the base and one other setting of each group. */
      snprintf(name, sizeof name, "%.*s: residual difference", (int)strcspn(groups[g].name, ":"),
               groups[g].name);
    }
    snprintf(note, sizeof note, "residuals (deg) %s", list);
    check_at_least(r, X, name, "deg", groups[g].sign * (res[hi] - res[lo]), threshold, note);
  }
  return 0;
}

/* ---- 7. Material response under compression (Figs. 2 and 11) -------------------------------- */

/* The first Piola-Kirchhoff stress P11 / E of F = diag(s, 1, 1) for one tet with Dm = I (rest
 * vertices at the origin and the unit points), from central differences of the elastic energy
 * that piola_world_get_stats() reports at prescribed positions: P11 = dU/ds / V. Stretches are
 * multiples of 1/256 and the difference step 1/1024, so every position is exact in float. */
static piola_status tet_stress(sim *s, double youngs, double stretch, bool nh_unclamped,
                               bool *defined, double *stress) {
  const double h = 1.0 / 1024.0, volume = 1.0 / 6.0;
  double u[2];
  *defined = true;
  for (int k = 0; k < 2; ++k) {
    const double sx = stretch + (k == 0 ? -h : h);
    const float x[12] = {0, 0, 0, (float)sx, 0, 0, 0, 1, 0, 0, 0, 1};
    piola_status st = piola_body_set_positions(s->world, s->body, x, 4);
    piola_stats stats;
    if (st == PIOLA_OK) {
      st = piola_world_get_stats(s->world, &stats);
    }
    if (st != PIOLA_OK) {
      return st;
    }
    u[k] = stats.elastic_energy;
    /* Neo-Hookean without the clamp is undefined at J <= 0 (the library reports 0 J there). */
    if (nh_unclamped && stats.inverted_tets > 0) {
      *defined = false;
    }
  }
  *stress = (u[1] - u[0]) / (2.0 * h) / volume / youngs;
  return PIOLA_OK;
}

/* A cube (0.5 m, E = 0.1 MPa, nu = 0.3, 1000 kg/m^3) on a ground plane (friction 0.5) under
 * gravity, its top face pressed down by a uniform pressure of 0.2 E (constant forces on the top
 * vertices; colliders are static, so this stands in for the paper's heavy sphere). XPBD, dt =
 * 5 ms, 2 substeps of 10 iterations, damping 20/s, 0.6 s. Returns the volume ratio at the end. */
static piola_status loaded_cube(const validate_options *o, validate_report *r, piola_model model,
                                int32_t cells, int series, const char *label, double *ratio,
                                int32_t *inverted) {
  const double dt = 0.005, size = 0.5, youngs = 1.0e5, pressure = 0.2 * youngs;
  const int32_t steps = 120;
  piola_world_def def = base_def(o, dt, 2, 10);
  def.gravity[1] = -9.81f;
  def.damping = 20.0f;
  const int32_t c3[3] = {cells, cells, cells};
  const float s3[3] = {(float)size, (float)size, (float)size};
  piola_tet_mesh mesh;
  piola_status st = piola_mesh_make_box(c3, s3, &mesh);
  if (st != PIOLA_OK) {
    return st;
  }
  piola_material m = base_material(model, youngs, 0.3);
  sim s;
  st = sim_create(r, &def, &mesh, &m, &s);
  if (st != PIOLA_OK) {
    return st;
  }
  const float up[3] = {0.0f, 1.0f, 0.0f};
  st = piola_world_add_plane(s.world, up, 0.0f, 0.5f, NULL);
  vset top = select_vertices(&s.mesh, 1, size, -1, 0.0);
  const double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {size, size, size};
  const double total[3] = {0.0, -pressure * size * size, 0.0};
  if (st == PIOLA_OK) {
    st = top.idx == NULL ? PIOLA_ERROR_OUT_OF_MEMORY : sim_face_force(&s, &top, 1, lo, hi, total);
  }
  const double v0 = mesh_volume(&s.mesh, s.mesh.positions);
  piola_stats stats;
  memset(&stats, 0, sizeof stats);
  for (int32_t step = 0; st == PIOLA_OK && step < steps; step += 4) {
    st = sim_steps(&s, 4);
    if (st == PIOLA_OK) {
      st = sim_read(&s);
    }
    if (st == PIOLA_OK) {
      st = piola_world_get_stats(s.world, &stats);
    }
    if (st == PIOLA_OK) {
      *ratio = mesh_volume(&s.mesh, s.x) / v0;
      double row[3] = {(step + 4) * dt, *ratio, (double)stats.inverted_tets};
      series_add(r, series, label, row);
    }
  }
  *inverted = stats.inverted_tets;
  vset_free(&top);
  sim_destroy(&s);
  return st;
}

static int exp_compression(const validate_options *o, validate_report *r) {
  const char *X = "compression";
  const double youngs = 1.0e6, nu = 0.3;
  const double lame_mu = 1.0 / (2.0 * (1.0 + nu)),
               lame_lambda = nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
  const double modulus = lame_lambda + 2.0 * lame_mu; /* dP11/ds at s = 1, in units of E */
  const double clamp = 1.0 / sqrt(3.0);
  static const char *const cols[] = {"stretch", "stress_over_e"};
  const int series = series_new(r, X, "stress", 2, cols);
  const int32_t first = -128, last = 384; /* s = k / 256 in [-0.5, 1.5] */
  const int32_t count = last - first + 1;
  double *p = malloc(sizeof *p * (size_t)count);
  if (p == NULL) {
    return report_error(r, X, "memory", PIOLA_ERROR_OUT_OF_MEMORY);
  }
  char check[96], note[160];
  for (int model = 0; model < 2; ++model) {
    for (int clamped = 0; clamped < 2; ++clamped) {
      char label[32];
      snprintf(label, sizeof label, "%s %s", model == 0 ? "stvk" : "neohookean",
               clamped ? "clamp" : "no clamp");
      piola_tet_mesh mesh;
      mesh.vertex_count = 4;
      mesh.tet_count = 1;
      mesh.positions = malloc(sizeof(float) * 12);
      mesh.tets = malloc(sizeof(int32_t) * 4);
      if (mesh.positions == NULL || mesh.tets == NULL) {
        piola_mesh_free(&mesh);
        free(p);
        return report_error(r, X, "memory", PIOLA_ERROR_OUT_OF_MEMORY);
      }
      const float rest[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
      memcpy(mesh.positions, rest, sizeof rest);
      for (int k = 0; k < 4; ++k) {
        mesh.tets[k] = k;
      }
      piola_world_def def = base_def(o, 0.005, 1, 1);
      piola_material m =
          base_material(model == 0 ? PIOLA_MODEL_STVK : PIOLA_MODEL_NEOHOOKEAN, youngs, nu);
      m.handle_inversion = clamped ? PIOLA_INVERSION_ON : PIOLA_INVERSION_OFF;
      sim s;
      piola_status st = sim_create(r, &def, &mesh, &m, &s);
      for (int32_t k = first; st == PIOLA_OK && k <= last; ++k) {
        bool defined;
        st = tet_stress(&s, youngs, k / 256.0, model == 1 && !clamped, &defined, &p[k - first]);
        if (!defined) {
          p[k - first] = NAN;
        }
        double row[2] = {k / 256.0, p[k - first]};
        series_add(r, series, label, row);
      }
      sim_destroy(&s);
      if (st != PIOLA_OK) {
        free(p);
        return report_error(r, X, label, st);
      }
      /* Small-strain modulus: the slope at s = 1 (index of k = 256). */
      const int32_t one = 256 - first;
      const double slope = (p[one + 1] - p[one - 1]) * 256.0 / 2.0;
      if (clamped) {
        snprintf(check, sizeof check, "%s: dP/ds at s=1 / (lambda + 2 mu)", label);
        snprintf(note, sizeof note, "uniaxial strain F = diag(s,1,1); slope %.4g E", slope);
        check_near(r, X, check, "", slope / modulus, 1.0, 0.01, note);
      }
      if (model == 0 && !clamped) {
        /* The StVK compressive stress peaks (is most negative) at s = 1/sqrt(3). */
        int32_t at = 1 - first;
        for (int32_t k = 2; k < 256; ++k) {
          if (p[k - first] < p[at]) {
            at = k - first;
          }
        }
        snprintf(check, sizeof check, "%s: stretch of the compressive stress peak", label);
        snprintf(note, sizeof note, "peak P = %.4g E; expected 1/sqrt(3) (Gao et al. 2009)", p[at]);
        check_near(r, X, check, "", (at + first) / 256.0, clamp, 0.01, note);
      }
      if (model == 0 && clamped) {
        /* Below the clamp StVK holds the stress at its peak. */
        const double peak = (clamp * (clamp * clamp - 1.0) / 2.0) * modulus;
        double worst = 0.0;
        for (int32_t k = first; k / 256.0 < clamp - 1.0 / 256.0; ++k) {
          worst = fmax(worst, fabs(p[k - first] - peak) / fabs(peak));
        }
        snprintf(check, sizeof check, "%s: max |P(s) - P_peak| / |P_peak|, s < 0.577", label);
        snprintf(note, sizeof note, "P_peak = %.4g E; the clamp holds the stress", peak);
        check_near(r, X, check, "", worst, 0.0, 0.01, note);
      }
      if (model == 1 && clamped) {
        /* Neo-Hookean with the clamp resists compression all the way (and through inversion):
         * its stress increases with the stretch everywhere. */
        double smallest = INFINITY;
        for (int32_t k = first; k < last; ++k) {
          smallest = fmin(smallest, (p[k + 1 - first] - p[k - first]) * 256.0);
        }
        snprintf(check, sizeof check, "%s: min dP/ds over s in [-0.5, 1.5]", label);
        snprintf(note, sizeof note, "> 0: the stress always pushes back towards rest");
        check_at_least(r, X, check, "E", smallest, 0.0, note);
      }
    }
  }
  free(p);

  /* The loaded cube. */
  static const char *const cube_cols[] = {"time_s", "volume_ratio", "inverted_tets"};
  const int cube_series = series_new(r, X, "cube", 3, cube_cols);
  const int32_t cells = o->quick ? 4 : 6;
  double ratio[2] = {NAN, NAN};
  int32_t inverted[2] = {0, 0};
  for (int model = 0; model < 2; ++model) {
    const char *label = model == 0 ? "stvk" : "neohookean";
    piola_status st = loaded_cube(o, r, model == 0 ? PIOLA_MODEL_STVK : PIOLA_MODEL_NEOHOOKEAN,
                                  cells, cube_series, label, &ratio[model], &inverted[model]);
    if (st != PIOLA_OK) {
      return report_error(r, X, label, st);
    }
  }
  snprintf(note, sizeof note,
           "volume / rest: neohookean %.4g (%d inverted tets), stvk %.4g (%d inverted)", ratio[1],
           (int)inverted[1], ratio[0], (int)inverted[0]);
  check_at_least(r, X, "cube under 0.2 E: V_nh/V0 - V_stvk/V0", "", ratio[1] - ratio[0], 0.01,
                 note);
  return 0;
}

/* ---- 8. Cloth (Sec. 4.3) ----------------------------------------------------------------------
 */

/* A world with one cloth body of `mesh` (kept by the caller) in a sim (its tet mesh stays
 * empty), so that settle() and sim_read() work on it. */
static piola_status cloth_sim_create(validate_report *r, const piola_world_def *def,
                                     const piola_tri_mesh *mesh, const piola_cloth_material *m,
                                     const float at[3], sim *s) {
  memset(s, 0, sizeof *s);
  s->n = mesh->vertex_count;
  s->dt = (double)def->dt;
  piola_status st = piola_world_create(def, &s->world);
  if (st == PIOLA_OK) {
    st = piola_world_add_cloth(s->world, mesh, m, at, &s->body);
  }
  return sim_finish(r, st, s);
}

/* A membrane-only cloth material (no bending constraints): stretch k_weft and k_warp, shear
 * from the isotropic formula k / (2 (1 + nu)) of the weft modulus, 0.2 kg/m^2, XPBD. */
static piola_cloth_material membrane(double k_weft, double k_warp, double nu) {
  piola_cloth_material m = piola_default_cloth_material();
  m.density = 0.2f;
  m.stretch_weft = (float)k_weft;
  m.stretch_warp = (float)k_warp;
  m.shear = (float)(k_weft / (2.0 * (1.0 + nu)));
  m.poisson_weft = (float)nu;
  m.bending_stiffness = 0.0f;
  m.solver = PIOLA_SOLVER_XPBD;
  return m;
}

/* The strains of a square cloth (rest side `side`, in the x-z plane) pulled at two opposite
 * edges: along the pull between the vertex lines at a quarter and three quarters of the side,
 * across it between the two free edges (over the middle half of their length). */
typedef struct sheet {
  sim s;
  piola_tri_mesh mesh;
  int axis; /* 0: pulled along x (the weft), 2: along z (the warp) */
  double side;
} sheet;

static double sheet_line_mean(const sheet *c, int along, double at, int other) {
  double sum = 0.0;
  int n = 0;
  for (int32_t i = 0; i < c->mesh.vertex_count; ++i) {
    const float *rest = c->mesh.positions + 3 * i;
    const double u = rest[other];
    if (fabs(rest[along] - at) < 1e-6 * c->side && u >= 0.25 * c->side - 1e-6 &&
        u <= 0.75 * c->side + 1e-6) {
      sum += c->s.x[3 * i + along];
      ++n;
    }
  }
  return n > 0 ? sum / n : NAN;
}

static void sheet_strains(sheet *c, double *axial, double *lateral) {
  const int a = c->axis, o = c->axis == 0 ? 2 : 0;
  *axial = (sheet_line_mean(c, a, 0.75 * c->side, o) - sheet_line_mean(c, a, 0.25 * c->side, o)) /
               (0.5 * c->side) -
           1.0;
  *lateral = (sheet_line_mean(c, o, c->side, a) - sheet_line_mean(c, o, 0.0, a)) / c->side - 1.0;
}

static double sheet_axial(sim *s, void *user) {
  sheet *c = user;
  double axial, lateral;
  if (sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  sheet_strains(c, &axial, &lateral);
  return axial;
}

/* Pulls a side x side m cloth of cells x cells squares with a line tension `tension` (N/m) at
 * its two edges across `axis`, equal and opposite (no pin, no gravity: uniaxial stress), until
 * the axial strain settles; damping 30/s, 50 substeps of 4 iterations per 10 ms. Fewer, stiffer
 * substeps leave Gauss-Seidel unconverged and the contraction too large (measured with 10
 * substeps of 10 iterations: 0.140, 0.405, 0.601 for nu = 0.1, 0.3, 0.45; with 50 x 4: 0.103,
 * 0.310, 0.466; with 200 x 2: 0.100, 0.302, 0.453). */
static piola_status sheet_pull(const validate_options *o, validate_report *r, int32_t cells,
                               double side, const piola_cloth_material *m, int axis, double tension,
                               double *axial, double *lateral, settle_result *settled) {
  piola_world_def def = base_def(o, 0.01, 50, 4);
  def.damping = 30.0f;
  sheet c;
  memset(&c, 0, sizeof c);
  c.axis = axis;
  c.side = side;
  piola_status st = piola_mesh_make_grid((const int32_t[2]){cells, cells},
                                         (const float[2]){(float)side, (float)side}, &c.mesh);
  if (st == PIOLA_OK) {
    st = cloth_sim_create(r, &def, &c.mesh, m, NULL, &c.s);
  }
  float *f = st == PIOLA_OK ? calloc(3 * (size_t)c.mesh.vertex_count, sizeof *f) : NULL;
  if (st == PIOLA_OK && f == NULL) {
    st = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (st == PIOLA_OK) {
    /* The edge's tension lumped to its vertices: a cell's length each, half at the corners. */
    const double dx = side / cells;
    for (int32_t i = 0; i < c.mesh.vertex_count; ++i) {
      const float *p = c.mesh.positions + 3 * i;
      const int other = axis == 0 ? 2 : 0;
      const bool corner = p[other] < 1e-6 * side || p[other] > side * (1.0 - 1e-6);
      const double share = tension * dx * (corner ? 0.5 : 1.0);
      if (p[axis] < 1e-6 * side) {
        f[3 * i + axis] = (float)-share;
      } else if (p[axis] > side * (1.0 - 1e-6)) {
        f[3 * i + axis] = (float)share;
      }
    }
    st = piola_body_set_forces(c.s.world, c.s.body, f, c.mesh.vertex_count);
  }
  if (st == PIOLA_OK) {
    *settled = settle(&c.s, sheet_axial, &c, 0.3, 4.0, 1e-4, r, -1, NULL);
    st = settled->status;
  }
  if (st == PIOLA_OK) {
    st = sim_read(&c.s);
    sheet_strains(&c, axial, lateral);
  }
  free(f);
  sim_destroy(&c.s);
  piola_tri_mesh_free(&c.mesh);
  return st;
}

/* Fig. 7 for cloth: a 1 m x 1 m cloth (k = 1000 N/m both ways) pulled along the weft to an
 * axial strain of 0.5%; -lateral / axial strain against poisson_weft. */
static int exp_cloth_poisson(const validate_options *o, validate_report *r) {
  const char *X = "cloth_poisson";
  const int32_t cells = o->quick ? 8 : 16;
  const double k = 1000.0, tension = 0.005 * k;
  static const double nus[] = {0.1, 0.3, 0.45};
  static const char *const cols[] = {"material_nu", "measured_nu", "axial_strain",
                                     "lateral_strain"};
  const int series = series_new(r, X, "ratio", 4, cols);
  for (int i = 0; i < 3; ++i) {
    piola_cloth_material m = membrane(k, k, nus[i]);
    double axial = NAN, lateral = NAN;
    settle_result sr;
    piola_status st = sheet_pull(o, r, cells, 1.0, &m, 0, tension, &axial, &lateral, &sr);
    if (st != PIOLA_OK) {
      return report_error(r, X, "pull", st);
    }
    const double nu = -lateral / axial;
    double row[4] = {nus[i], nu, axial, lateral};
    series_add(r, series, "weft", row);
    char check[96], note[160];
    snprintf(check, sizeof check, "nu_weft=%.2f: -lateral/axial strain", nus[i]);
    snprintf(note, sizeof note, "%dx%d cells; axial %.5g, lateral %.5g%s", (int)cells, (int)cells,
             axial, lateral, sr.settled ? "" : "; not settled by 4 s");
    check_near(r, X, check, "", nu, nus[i], 0.03, note);
  }
  return 0;
}

/* Fig. 10: equal line tensions (2.5 N/m) along the weft and, in a second cloth, along the warp,
 * with stretch_warp = 4 stretch_weft (250 and 1000 N/m, nu_weft 0.1): the warp stretches 4
 * times less. */
static int exp_cloth_weft_warp(const validate_options *o, validate_report *r) {
  const char *X = "cloth_weft_warp";
  const int32_t cells = o->quick ? 8 : 16;
  const double k_weft = 250.0, k_warp = 1000.0, tension = 2.5;
  static const char *const cols[] = {"axis", "axial_strain", "expected_strain", "lateral_strain"};
  const int series = series_new(r, X, "strain", 4, cols);
  double strain[2];
  for (int d = 0; d < 2; ++d) {
    piola_cloth_material m = membrane(k_weft, k_warp, 0.1);
    double lateral = NAN;
    settle_result sr;
    piola_status st =
        sheet_pull(o, r, cells, 1.0, &m, d == 0 ? 0 : 2, tension, &strain[d], &lateral, &sr);
    if (st != PIOLA_OK) {
      return report_error(r, X, d == 0 ? "weft pull" : "warp pull", st);
    }
    double row[4] = {(double)d, strain[d], tension / (d == 0 ? k_weft : k_warp), lateral};
    series_add(r, series, d == 0 ? "weft" : "warp", row);
  }
  char note[160];
  snprintf(note, sizeof note, "%dx%d cells; weft strain %.5g (T/k %.5g), warp %.5g (T/k %.5g)",
           (int)cells, (int)cells, strain[0], tension / k_weft, strain[1], tension / k_warp);
  check_near(r, X, "weft strain / warp strain", "", strain[0] / strain[1], 4.0, 0.05 * 4.0, note);
  return 0;
}

/* A strip of length L = 1 m (weft along it, 16 x 2 cells, 0.1 m wide), nu = 0, no bending,
 * hanging from its pinned top edge under gravity: elongation rho_A g L^2 / (2 k), for k = 100
 * and 400 N/m (rho_A = 0.1 kg/m^2); damping 4/s, 10 substeps of 10 iterations per 10 ms, 3 s. */
static piola_status hanging_strip(const validate_options *o, validate_report *r, double rho,
                                  double k, double length, int32_t cells, double *elongation) {
  piola_world_def def = base_def(o, 0.01, 10, 10);
  def.gravity[1] = -9.81f;
  def.damping = 4.0f;
  piola_tri_mesh m;
  piola_status st =
      piola_mesh_make_grid((const int32_t[2]){cells, 2}, (const float[2]){(float)length, 0.1f}, &m);
  if (st != PIOLA_OK) {
    return st;
  }
  for (int32_t i = 0; i < m.vertex_count; ++i) { /* (x, 0, z) -> (z, -x, 0): weft down */
    const float x = m.positions[3 * i], z = m.positions[3 * i + 2];
    m.positions[3 * i] = z;
    m.positions[3 * i + 1] = -x;
    m.positions[3 * i + 2] = 0.0f;
  }
  piola_cloth_material mat = membrane(k, k, 0.0);
  mat.density = (float)rho;
  sim s;
  st = cloth_sim_create(r, &def, &m, &mat, NULL, &s);
  if (st == PIOLA_OK) {
    for (int32_t i = 0; i < s.n; ++i) {
      if (m.positions[3 * i + 1] >= -1e-6f) {
        s.inv_mass[i] = 0.0f; /* the top edge */
      }
    }
    st = piola_body_set_inverse_masses(s.world, s.body, s.inv_mass, s.n);
    if (st == PIOLA_OK) {
      st = sim_steps(&s, 300);
    }
    if (st == PIOLA_OK) {
      st = sim_read(&s);
    }
    double sum = 0.0;
    int n = 0;
    for (int32_t i = 0; st == PIOLA_OK && i < s.n; ++i) {
      if (m.positions[3 * i + 1] <= -(float)length + 1e-6f) {
        sum += -(double)s.x[3 * i + 1];
        ++n;
      }
    }
    *elongation = n > 0 ? sum / n - length : NAN;
    sim_destroy(&s);
  }
  piola_tri_mesh_free(&m);
  return st;
}

static int exp_cloth_hanging(const validate_options *o, validate_report *r) {
  const char *X = "cloth_hanging";
  const double rho = 0.1, length = 1.0, ks[2] = {100.0, 400.0};
  const int32_t cells = o->quick ? 12 : 16;
  static const char *const cols[] = {"k", "elongation", "expected"};
  const int series = series_new(r, X, "elongation", 3, cols);
  for (int i = 0; i < 2; ++i) {
    double e = NAN;
    piola_status st = hanging_strip(o, r, rho, ks[i], length, cells, &e);
    if (st != PIOLA_OK) {
      return report_error(r, X, "strip", st);
    }
    const double expected = rho * 9.81 * length * length / (2.0 * ks[i]);
    double row[3] = {ks[i], e, expected};
    series_add(r, series, "strip", row);
    char check[96], note[160];
    snprintf(check, sizeof check, "k=%g N/m: elongation / (rho_A g L^2 / (2 k))", ks[i]);
    snprintf(note, sizeof note, "%d cells along; elongation %.4f mm, closed form %.4f mm",
             (int)cells, 1e3 * e, 1e3 * expected);
    check_near(r, X, check, "", e / expected, 1.0, 0.05, note);
  }
  return 0;
}

/* A strip of `rows` straight vertex rows across x (rows j at x = (j - 1) h, j = 0 .. rows - 1)
 * and `across` vertices per row along z, a apart, odd rows shifted by a / 2: equilateral
 * triangles of side a, h = a sqrt(3) / 2 (one edge family along z, the others at +-30 degrees
 * from x). Triangles wound counter-clockwise seen from +y. */
static piola_status equilateral_strip(int32_t rows, int32_t across, double a, piola_tri_mesh *m) {
  memset(m, 0, sizeof *m);
  const double h = a * sqrt(3.0) / 2.0;
  m->vertex_count = rows * across;
  m->triangle_count = (rows - 1) * 2 * (across - 1) + (rows - 1);
  m->positions = malloc(sizeof *m->positions * 3 * (size_t)m->vertex_count);
  m->triangles = malloc(sizeof *m->triangles * 3 * (size_t)m->triangle_count);
  if (m->positions == NULL || m->triangles == NULL) {
    piola_tri_mesh_free(m);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t j = 0; j < rows; ++j) {
    for (int32_t i = 0; i < across; ++i) {
      float *p = m->positions + 3 * (size_t)(j * across + i);
      p[0] = (float)((j - 1) * h);
      p[1] = 0.0f;
      p[2] = (float)((i + 0.5 * (j % 2)) * a);
    }
  }
  int32_t t = 0;
  for (int32_t j = 0; j + 1 < rows; ++j) {
    /* Zip rows j and j + 1 by z. */
    const int32_t lo = j * across, hi = (j + 1) * across;
    int32_t u = 0, v = 0;
    while (u < across - 1 || v < across - 1) {
      const float zu = u < across - 1 ? m->positions[3 * (lo + u + 1) + 2] : INFINITY;
      const float zv = v < across - 1 ? m->positions[3 * (hi + v + 1) + 2] : INFINITY;
      int32_t *q = m->triangles + 3 * t++;
      if (zu <= zv) {
        q[0] = lo + u;
        q[1] = lo + u + 1;
        q[2] = hi + v;
        ++u;
      } else {
        q[0] = lo + u;
        q[1] = hi + v + 1;
        q[2] = hi + v;
        ++v;
      }
      /* Counter-clockwise from +y: (b - a) x (c - a) has y > 0. */
      const float *pa = m->positions + 3 * q[0], *pb = m->positions + 3 * q[1],
                  *pc = m->positions + 3 * q[2];
      const double ny =
          (double)(pb[2] - pa[2]) * (pc[0] - pa[0]) - (double)(pb[0] - pa[0]) * (pc[2] - pa[2]);
      if (ny < 0.0) {
        const int32_t swap = q[1];
        q[1] = q[2];
        q[2] = swap;
      }
    }
  }
  m->triangle_count = t;
  return PIOLA_OK;
}

/* A cantilevered strip of free length L (0.2 m) clamped by pinning two vertex lines across it
 * (at x = -dx and 0), sagging under its own weight (rho_A = 0.1 kg/m^2, nu = 0, stretch
 * 1000 N/m); returns the mean sag of the tip line after 2 s (damping 8/s; 200 substeps of 2
 * iterations per 10 ms: Gauss-Seidel converges slowly on bending, many small substeps make the
 * compliance dominate, see the README). `equilateral`: the strip of equilateral triangles
 * above with `cells` rows of height dx along L and `cells` vertices across; else
 * piola_mesh_make_grid's checkerboard of `cells` squares along L and 2 across.
 *
 * The discrete strip bends at its hinges (the edges across it), each standing for the
 * curvature of a band dx wide around it; the hinge on the clamp line x = 0 bends the band
 * [-dx/2, dx/2], so the discrete strip is clamped at -dx/2 and is L + dx/2 long: its sag is
 * (1 + 1/(2 N))^4, about 1 + 2 / N, times the closed form for N rows, and the triangles at the
 * free edges (the strip's width is (N - 1/2) triangle heights of mass but N - 1 hinges of
 * stiffness per row) add about 1 / (2 N) more. Measured, equilateral: 1.667 (N = 4), 1.325 (8),
 * 1.167 (16), i.e. 1 + 2.6 / N: first-order convergence to the closed form, checked by Richardson
 * extrapolation of two resolutions. (At 32 rows 200 substeps no longer converge the bending:
 * 1.30.) */
static piola_status cantilever(const validate_options *o, validate_report *r, bool equilateral,
                               int32_t cells, double d, double *sag) {
  const double rho = 0.1, length = 0.2, dx = length / cells;
  piola_world_def def = base_def(o, 0.01, o->quick ? 100 : 200, 2);
  def.gravity[1] = -9.81f;
  def.damping = 8.0f;
  piola_tri_mesh m;
  piola_status st;
  if (equilateral) {
    st = equilateral_strip(cells + 2, cells, dx * 2.0 / sqrt(3.0), &m);
  } else {
    st = piola_mesh_make_grid((const int32_t[2]){cells + 1, 2},
                              (const float[2]){(float)(length + dx), (float)(2.0 * dx)}, &m);
    for (int32_t i = 0; st == PIOLA_OK && i < m.vertex_count; ++i) {
      m.positions[3 * i] -= (float)dx; /* the pinned lines at -dx and 0 */
    }
  }
  if (st != PIOLA_OK) {
    return st;
  }
  piola_cloth_material mat = membrane(1000.0, 1000.0, 0.0);
  mat.density = (float)rho;
  mat.bending_stiffness = (float)d;
  sim s;
  st = cloth_sim_create(r, &def, &m, &mat, NULL, &s);
  if (st == PIOLA_OK) {
    for (int32_t i = 0; i < s.n; ++i) {
      if (m.positions[3 * i] <= (float)(0.5 * dx)) {
        s.inv_mass[i] = 0.0f;
      }
    }
    st = piola_body_set_inverse_masses(s.world, s.body, s.inv_mass, s.n);
    if (st == PIOLA_OK) {
      st = sim_steps(&s, 200);
    }
    if (st == PIOLA_OK) {
      st = sim_read(&s);
    }
    double sum = 0.0;
    int n = 0;
    for (int32_t i = 0; st == PIOLA_OK && i < s.n; ++i) {
      if (m.positions[3 * i] >= (float)length - 1e-6f) {
        sum += -(double)s.x[3 * i + 1];
        ++n;
      }
    }
    *sag = n > 0 ? sum / n : NAN;
    sim_destroy(&s);
  }
  piola_tri_mesh_free(&m);
  return st;
}

static int exp_cloth_cantilever(const validate_options *o, validate_report *r) {
  const char *X = "cloth_cantilever";
  const double rho = 0.1, length = 0.2, d = 0.02;
  const double expected = rho * 9.81 * pow(length, 4) / (8.0 * d);
  const int32_t cells = o->quick ? 8 : 16;
  static const char *const cols[] = {"cells", "sag", "expected", "ratio"};
  const int series = series_new(r, X, "sag", 4, cols);
  /* The equilateral strip at N / 2 and N rows, then the checkerboard grid at N. */
  double sag[3] = {NAN, NAN, NAN};
  for (int run = 0; run < 3; ++run) {
    const bool equilateral = run < 2;
    const int32_t n = run == 0 ? cells / 2 : cells;
    piola_status st = cantilever(o, r, equilateral, n, d, &sag[run]);
    if (st != PIOLA_OK) {
      return report_error(r, X, equilateral ? "equilateral strip" : "grid strip", st);
    }
    double row[4] = {(double)n, sag[run], expected, sag[run] / expected};
    series_add(r, series, equilateral ? "equilateral" : "grid", row);
    char check[96], note[160];
    snprintf(note, sizeof note,
             "%d rows along L = 0.2 m, D = %g N m; sag %.4f mm, closed form %.4f mm", (int)n, d,
             1e3 * sag[run], 1e3 * expected);
    /* Each resolution is reported; the check is on the converged sag (below). The checkerboard
     * grid bends about a grid line softer than D (README, Cloth). */
    snprintf(check, sizeof check, "%s strip, %d rows: tip sag / closed form",
             equilateral ? "equilateral" : "grid (checkerboard)", (int)n);
    report_info(r, X, check, "", sag[run] / expected, note);
  }
  /* The sag converges at first order in 1 / N (see cantilever()): Richardson's extrapolation
   * 2 s(N) - s(N / 2) removes that term. */
  const double converged = 2.0 * sag[1] - sag[0];
  char check[96], note[160];
  snprintf(check, sizeof check, "equilateral strip: sag extrapolated (2 s(%d) - s(%d)) / closed",
           (int)cells, (int)(cells / 2));
  snprintf(note, sizeof note, "sag %.4f mm, closed form rho_A g L^4 / (8 D) %.4f mm",
           1e3 * converged, 1e3 * expected);
  check_near(r, X, check, "", converged / expected, 1.0, 0.10, note);
  return 0;
}

/* Bending energy of rigid motions: a flat 1 m x 1 m cloth and one whose rest shape is a
 * quarter cylinder (radius 0.6 m), each turned by 0.7 rad about (1, 2, 3) and moved by
 * (0.3, -0.2, 0.5) m, against the same cloths bent isometrically (the flat one rolled onto a
 * cylinder of radius 1 m, the curved one flattened): the energy of the rigid motion over the
 * energy of the bend, and the largest motion of a vertex over 50 steps (no gravity) after the
 * rigid motion. */
static void rigid_motion(float *x, int32_t n) {
  const double angle = 0.7, axis[3] = {1.0 / sqrt(14.0), 2.0 / sqrt(14.0), 3.0 / sqrt(14.0)};
  const double c = cos(angle), s = sin(angle), t = 1.0 - c, shift[3] = {0.3, -0.2, 0.5};
  const double R[3][3] = {{t * axis[0] * axis[0] + c, t * axis[0] * axis[1] - s * axis[2],
                           t * axis[0] * axis[2] + s * axis[1]},
                          {t * axis[0] * axis[1] + s * axis[2], t * axis[1] * axis[1] + c,
                           t * axis[1] * axis[2] - s * axis[0]},
                          {t * axis[0] * axis[2] - s * axis[1], t * axis[1] * axis[2] + s * axis[0],
                           t * axis[2] * axis[2] + c}};
  for (int32_t i = 0; i < n; ++i) {
    const double p[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
    for (int k = 0; k < 3; ++k) {
      x[3 * i + k] = (float)(R[k][0] * p[0] + R[k][1] * p[1] + R[k][2] * p[2] + shift[k]);
    }
  }
}

static int exp_cloth_rigid(const validate_options *o, validate_report *r) {
  const char *X = "cloth_rigid";
  const int32_t cells = o->quick ? 8 : 16;
  static const char *const cols[] = {"rigid_energy", "bent_energy", "ratio", "drift"};
  const int series = series_new(r, X, "energy", 4, cols);
  for (int curved = 0; curved < 2; ++curved) {
    const char *label = curved ? "curved" : "flat";
    piola_tri_mesh m;
    piola_status st =
        piola_mesh_make_grid((const int32_t[2]){cells, cells}, (const float[2]){1.0f, 1.0f}, &m);
    if (st != PIOLA_OK) {
      return report_error(r, X, label, st);
    }
    float *flat = malloc(sizeof *flat * 3 * (size_t)m.vertex_count);
    if (flat == NULL) {
      piola_tri_mesh_free(&m);
      return report_error(r, X, label, PIOLA_ERROR_OUT_OF_MEMORY);
    }
    memcpy(flat, m.positions, sizeof *flat * 3 * (size_t)m.vertex_count);
    /* (x, 0, z) on a cylinder of radius rad about the z axis at height rad. */
    const double rad = curved ? 0.6 : 1.0;
    float *rolled = malloc(sizeof *rolled * 3 * (size_t)m.vertex_count);
    for (int32_t i = 0; rolled != NULL && i < m.vertex_count; ++i) {
      const double a = m.positions[3 * i] / rad;
      rolled[3 * i] = (float)(rad * sin(a));
      rolled[3 * i + 1] = (float)(rad * (1.0 - cos(a)));
      rolled[3 * i + 2] = m.positions[3 * i + 2];
    }
    if (curved && rolled != NULL) {
      memcpy(m.positions, rolled, sizeof *rolled * 3 * (size_t)m.vertex_count);
    }
    piola_world_def def = base_def(o, 0.005, 2, 5);
    piola_cloth_material mat = piola_default_cloth_material();
    mat.bending_stiffness = 1e-3f;
    sim s;
    st = rolled == NULL ? PIOLA_ERROR_OUT_OF_MEMORY : cloth_sim_create(r, &def, &m, &mat, NULL, &s);
    double energy[2] = {NAN, NAN}, drift = NAN;
    piola_stats stats;
    if (st == PIOLA_OK) {
      /* The bend: the curved rest shape flattened, the flat one rolled. */
      st = piola_body_set_positions(s.world, s.body, curved ? flat : rolled, s.n);
      if (st == PIOLA_OK && (st = piola_world_get_stats(s.world, &stats)) == PIOLA_OK) {
        energy[1] = stats.elastic_energy;
      }
      float *moved = malloc(sizeof *moved * 3 * (size_t)s.n);
      if (st == PIOLA_OK && moved == NULL) {
        st = PIOLA_ERROR_OUT_OF_MEMORY;
      }
      if (st == PIOLA_OK) {
        memcpy(moved, m.positions, sizeof *moved * 3 * (size_t)s.n);
        rigid_motion(moved, s.n);
        st = piola_body_set_positions(s.world, s.body, moved, s.n);
      }
      if (st == PIOLA_OK && (st = piola_world_get_stats(s.world, &stats)) == PIOLA_OK) {
        energy[0] = stats.elastic_energy;
        st = sim_steps(&s, 50);
      }
      if (st == PIOLA_OK) {
        st = sim_read(&s);
        drift = 0.0;
        for (int32_t i = 0; i < 3 * s.n; ++i) {
          drift = fmax(drift, fabs((double)s.x[i] - moved[i]));
        }
      }
      free(moved);
      sim_destroy(&s);
    }
    free(flat);
    free(rolled);
    piola_tri_mesh_free(&m);
    if (st != PIOLA_OK) {
      return report_error(r, X, label, st);
    }
    double row[4] = {energy[0], energy[1], energy[0] / energy[1], drift};
    series_add(r, series, label, row);
    char check[96], note[160];
    snprintf(note, sizeof note,
             "%s rest shape, %dx%d cells, D = 1e-3 N m: rigid %.3g J, bent "
             "%.3g J",
             label, (int)cells, (int)cells, energy[0], energy[1]);
    snprintf(check, sizeof check, "%s: energy after a rigid motion / after a bend", label);
    check_at_most(r, X, check, "", energy[0] / energy[1], 1e-6, note);
    snprintf(check, sizeof check, "%s: largest vertex motion, 50 steps after it", label);
    check_at_most(r, X, check, "m", drift, 1e-6, note);
  }
  return 0;
}

/* ---- The list ------------------------------------------------------------------------------- */

static const validate_experiment experiments[] = {
    {"convergence", "Fig. 4", "energy within one step: colored Gauss-Seidel vs Jacobi",
     exp_convergence},
    {"stiffness", "Fig. 5", "beam strain vs iterations and vs Young's modulus", exp_stiffness},
    {"poisson", "Fig. 7", "lateral contraction vs Poisson's ratio", exp_poisson},
    {"timestep", "XPBD", "static sag independent of the time step", exp_timestep},
    {"recovery", "Fig. 6", "flattened and mirrored bodies recover their volume", exp_recovery},
    {"plasticity", "Fig. 8", "residual twist with creep, yield and maximum", exp_plasticity},
    {"compression", "Figs. 2, 11", "stress vs stretch; a loaded cube, StVK vs Neo-Hookean",
     exp_compression},
    {"cloth_poisson", "Fig. 7", "cloth: lateral contraction vs poisson_weft", exp_cloth_poisson},
    {"cloth_weft_warp", "Fig. 10", "cloth: equal pulls, warp 4 times stiffer than the weft",
     exp_cloth_weft_warp},
    {"cloth_hanging", "Sec. 4.3", "cloth: elongation of a hanging strip", exp_cloth_hanging},
    {"cloth_cantilever", "Sec. 4.3", "cloth: tip sag of a cantilevered strip (bending)",
     exp_cloth_cantilever},
    {"cloth_rigid", "Sec. 4.3", "cloth: no bending energy for rigid motions", exp_cloth_rigid},
};

const validate_experiment *validate_experiments(int *count) {
  *count = (int)(sizeof experiments / sizeof experiments[0]);
  return experiments;
}

const validate_experiment *validate_find(const char *name) {
  for (size_t i = 0; i < sizeof experiments / sizeof experiments[0]; ++i) {
    if (strcmp(experiments[i].name, name) == 0) {
      return &experiments[i];
    }
  }
  return NULL;
}

int validate_failures(const validate_report *r, const char *experiment) {
  int failed = 0;
  for (int32_t i = 0; i < r->check_count; ++i) {
    if (!r->checks[i].passed &&
        (experiment == NULL || strcmp(r->checks[i].experiment, experiment) == 0)) {
      ++failed;
    }
  }
  return failed + (r->out_of_memory ? 1 : 0);
}

int validate_run(int index, const validate_options *o, validate_report *r) {
  int count;
  const validate_experiment *e = validate_experiments(&count);
  if (index < 0 || index >= count) {
    return 1;
  }
  const double t0 = now_seconds();
  e[index].run(o, r);
  r->seconds[index] = now_seconds() - t0;
  return validate_failures(r, e[index].name);
}

/* ---- Output ---------------------------------------------------------------------------------- */

static const char *relation_name(validate_relation rel) {
  switch (rel) {
  case VALIDATE_NEAR:
    return "near";
  case VALIDATE_AT_MOST:
    return "at_most";
  case VALIDATE_AT_LEAST:
    return "at_least";
  case VALIDATE_INFO:
    return "info";
  }
  return "info";
}

void validate_print_header(void) {
  printf("%-12s %-54s %16s %-16s %-6s %s\n", "experiment", "check", "measured", "expected",
         "result", "note");
}

void validate_print_checks(const validate_report *r, const char *experiment) {
  for (int32_t i = 0; i < r->check_count; ++i) {
    const validate_check *c = &r->checks[i];
    if (experiment != NULL && strcmp(c->experiment, experiment) != 0) {
      continue;
    }
    char measured[32], expected[32];
    if (isfinite(c->measured)) {
      snprintf(measured, sizeof measured, "%.5g", c->measured);
    } else {
      snprintf(measured, sizeof measured, "n/a");
    }
    switch (c->relation) {
    case VALIDATE_NEAR:
      snprintf(expected, sizeof expected, "%.4g +- %.3g", c->expected, c->tolerance);
      break;
    case VALIDATE_AT_MOST:
      snprintf(expected, sizeof expected, "<= %.4g", c->expected);
      break;
    case VALIDATE_AT_LEAST:
      snprintf(expected, sizeof expected, ">= %.4g", c->expected);
      break;
    case VALIDATE_INFO:
      snprintf(expected, sizeof expected, "(reported)");
      break;
    }
    if (c->unit[0] != '\0' && isfinite(c->measured)) {
      const size_t len = strlen(measured);
      snprintf(measured + len, sizeof measured - len, " %s", c->unit);
    }
    const char *result = c->relation == VALIDATE_INFO ? "info" : c->passed ? "PASS" : "FAIL";
    printf("%-12s %-54.54s %16s %-16s %-6s %s\n", c->experiment, c->name, measured, expected,
           result, c->note);
  }
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s != '\0'; ++s) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      fprintf(f, "\\%c", ch);
    } else if (ch < 0x20) {
      fprintf(f, "\\u%04x", ch);
    } else {
      fputc(ch, f);
    }
  }
  fputc('"', f);
}

static void json_number(FILE *f, double v) {
  if (isfinite(v)) {
    fprintf(f, "%.10g", v);
  } else {
    fputs("null", f);
  }
}

int validate_write_json(const validate_report *r, const validate_options *o, double total_seconds,
                        const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "piola validate: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  time_t now = time(NULL);
  char date[32], cpu[256];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  cpu_model_name(cpu, sizeof cpu);
  const int failed = validate_failures(r, NULL);
  fprintf(f, "{\n  \"piola_version\": \"%s\",\n  \"date\": \"%s\",\n  \"host_cpu\": ",
          piola_version_string(), date);
  json_string(f, cpu);
  fprintf(f, ",\n  \"backend\": \"%s\",\n  \"device\": ", piola_backend_name(o->backend));
  json_string(f, r->device);
  fprintf(f, ",\n  \"quick\": %s,\n  \"mesh\": ", o->quick ? "true" : "false");
  json_string(f, o->mesh_path != NULL ? o->mesh_path : "procedural creature");
  fprintf(f, ",\n  \"paper\": \"Bender, Koschier, Charrier, Weber 2014, Position-Based Simulation "
             "of Continuous Materials\",\n");
  fprintf(f, "  \"total_seconds\": %.3f,\n  \"passed\": %s,\n  \"failed\": %d,\n", total_seconds,
          failed == 0 ? "true" : "false", failed);
  int count;
  const validate_experiment *e = validate_experiments(&count);
  /* One summary per experiment that ran; "experiments" below has one entry per check. */
  fprintf(f, "  \"summary\": [");
  bool first = true;
  for (int i = 0; i < count; ++i) {
    int checks = 0;
    for (int32_t k = 0; k < r->check_count; ++k) {
      checks += strcmp(r->checks[k].experiment, e[i].name) == 0;
    }
    if (checks > 0) {
      const int bad = validate_failures(r, e[i].name);
      fprintf(f,
              "%s\n    {\"experiment\": \"%s\", \"paper\": \"%s\", \"title\": \"%s\", "
              "\"checks\": %d, \"failed\": %d, \"passed\": %s, \"seconds\": %.3f}",
              first ? "" : ",", e[i].name, e[i].paper, e[i].title, checks, bad,
              bad == 0 ? "true" : "false", r->seconds[i]);
      first = false;
    }
  }
  fprintf(f, "\n  ],\n  \"experiments\": [");
  for (int32_t i = 0; i < r->check_count; ++i) {
    const validate_check *c = &r->checks[i];
    char name[128];
    snprintf(name, sizeof name, "%s/%s", c->experiment, c->name);
    fprintf(f, "%s\n    {\"name\": ", i > 0 ? "," : "");
    json_string(f, name);
    fprintf(f, ", \"measured\": ");
    json_number(f, c->measured);
    fprintf(f, ", \"expected\": ");
    json_number(f, c->expected);
    fprintf(f, ", \"tolerance\": ");
    json_number(f, c->tolerance);
    fprintf(f, ", \"passed\": %s, \"relation\": \"%s\", \"experiment\": \"%s\", \"unit\": ",
            c->passed ? "true" : "false", relation_name(c->relation), c->experiment);
    json_string(f, c->unit);
    fprintf(f, ", \"note\": ");
    json_string(f, c->note);
    fputc('}', f);
  }
  fprintf(f, "\n  ],\n  \"series\": [");
  for (int32_t i = 0; i < r->series_count; ++i) {
    const validate_series *s = &r->series[i];
    fprintf(f, "%s\n    {\"experiment\": \"%s\", \"name\": \"%s\", \"columns\": [\"label\"",
            i > 0 ? "," : "", s->experiment, s->name);
    for (int c = 0; c < s->column_count; ++c) {
      fprintf(f, ", \"%s\"", s->columns[c]);
    }
    fprintf(f, "],\n     \"rows\": [");
    for (int32_t k = 0; k < s->row_count; ++k) {
      fprintf(f, "%s[", k > 0 ? ", " : "");
      json_string(f, s->labels[k]);
      for (int c = 0; c < s->column_count; ++c) {
        fputs(", ", f);
        json_number(f, s->values[(size_t)k * (size_t)s->column_count + (size_t)c]);
      }
      fputc(']', f);
    }
    fputs("]}", f);
  }
  fprintf(f, "\n  ]\n}\n");
  int bad = ferror(f);
  bad |= fclose(f);
  if (bad) {
    fprintf(stderr, "piola validate: error writing %s\n", path);
  }
  return bad ? 1 : 0;
}

static void csv_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s != '\0'; ++s) {
    if (*s == '"') {
      fputc('"', f);
    }
    fputc(*s, f);
  }
  fputc('"', f);
}

int validate_write_csv(const validate_report *r, const char *dir) {
  char path[4096];
  int status = 0;
  for (int32_t i = 0; i < r->series_count && status == 0; ++i) {
    const validate_series *s = &r->series[i];
    snprintf(path, sizeof path, "%s/%s_%s.csv", dir, s->experiment, s->name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
      fprintf(stderr, "piola validate: cannot write %s: %s\n", path, strerror(errno));
      return 1;
    }
    fputs("label", f);
    for (int c = 0; c < s->column_count; ++c) {
      fprintf(f, ",%s", s->columns[c]);
    }
    fputc('\n', f);
    for (int32_t k = 0; k < s->row_count; ++k) {
      csv_string(f, s->labels[k]);
      for (int c = 0; c < s->column_count; ++c) {
        fprintf(f, ",%.10g", s->values[(size_t)k * (size_t)s->column_count + (size_t)c]);
      }
      fputc('\n', f);
    }
    status = ferror(f);
    status |= fclose(f);
  }
  snprintf(path, sizeof path, "%s/checks.csv", dir);
  FILE *f = status == 0 ? fopen(path, "w") : NULL;
  if (f == NULL) {
    fprintf(stderr, "piola validate: cannot write %s\n", path);
    return 1;
  }
  fputs("experiment,name,measured,expected,tolerance,relation,passed,unit,note\n", f);
  for (int32_t i = 0; i < r->check_count; ++i) {
    const validate_check *c = &r->checks[i];
    fprintf(f, "%s,", c->experiment);
    csv_string(f, c->name);
    fprintf(f, ",%.10g,%.10g,%.10g,%s,%s,", c->measured, c->expected, c->tolerance,
            relation_name(c->relation), c->passed ? "true" : "false");
    csv_string(f, c->unit);
    fputc(',', f);
    csv_string(f, c->note);
    fputc('\n', f);
  }
  status = ferror(f);
  status |= fclose(f);
  if (status) {
    fprintf(stderr, "piola validate: error writing %s\n", path);
  }
  return status ? 1 : 0;
}

/* ---- The command ------------------------------------------------------------------------------
 */

static void print_help(void) {
  int count;
  const validate_experiment *e = validate_experiments(&count);
  printf(
      "Usage: piola validate [options]\n"
      "Reproduces the experiments of Bender et al. 2014 (Figs. 2, 4-8, 10, 11) and prints each\n"
      "measured value beside the expected one with PASS/FAIL. Exit status 1 when a check\n"
      "fails.\n\n"
      "  --quick           the quick versions (the validate_* tests): smaller meshes, fewer runs\n"
      "  --only LIST       comma-separated experiments to run (default: all)\n"
      "  --list            list the experiments\n"
      "  --json FILE       write the checks (\"experiments\") and the data series as JSON\n"
      "  --out DIR         write DIR/<experiment>_<series>.csv and DIR/checks.csv\n"
      "  --plot            draw DIR/<experiment>.png with bench/plot.py (needs --out; the\n"
      "                    interpreter is $PIOLA_PYTHON, default python3)\n"
      "  --backend B       cpu (default: the double-precision reference), opencl or auto\n"
      "  --device SPEC     OpenCL device: P:D, gpu, cpu or a name substring\n"
      "  --threads N       CPU reference: threads per step, the same result for any N\n"
      "                    (default 1; 0: one per core)\n"
      "  --mesh PATH.node  body of 'convergence' and 'recovery' (default: the procedural\n"
      "                    creature), e.g. ../shared/data/armadillo/armadillo_4k.node\n"
      "  --verbose         print the library's informational messages\n\n"
      "Experiments:\n");
  for (int i = 0; i < count; ++i) {
    printf("  %-12s %-12s %s\n", e[i].name, e[i].paper, e[i].title);
  }
}

/* Whether `name` is in the comma-separated list (NULL: every name). */
static bool in_list(const char *list, const char *name) {
  if (list == NULL) {
    return true;
  }
  const size_t n = strlen(name);
  for (const char *p = list; *p != '\0';) {
    const char *end = strchr(p, ',');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) {
      return true;
    }
    p += len + (end != NULL ? 1 : 0);
  }
  return false;
}

static int run_plot(const char *json, const char *dir) {
#ifdef PIOLA_PLOT_SCRIPT
  const char *script =
      getenv("PIOLA_PLOT_SCRIPT") != NULL ? getenv("PIOLA_PLOT_SCRIPT") : PIOLA_PLOT_SCRIPT;
#else
  const char *script =
      getenv("PIOLA_PLOT_SCRIPT") != NULL ? getenv("PIOLA_PLOT_SCRIPT") : "bench/plot.py";
#endif
  const char *python = getenv("PIOLA_PYTHON") != NULL ? getenv("PIOLA_PYTHON") : "python3";
  if (strchr(script, '\'') != NULL || strchr(json, '\'') != NULL || strchr(dir, '\'') != NULL ||
      strchr(python, '\'') != NULL) {
    fprintf(stderr, "piola validate: --plot: paths must not contain quotes\n");
    return 1;
  }
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' '%s' validate '%s' --out '%s'", python, script, json, dir);
  printf("plotting: %s\n", cmd);
  fflush(stdout);
  int rc = system(cmd);
  if (rc != 0) {
    fprintf(stderr, "piola validate: the plot script failed (system() status %d)\n", rc);
    return 1;
  }
  return 0;
}

int command_validate(int argc, char **argv) {
  validate_options o = validate_default_options();
  const char *json = NULL, *out = NULL, *only = NULL;
  bool plot = false;
  int count;
  const validate_experiment *e = validate_experiments(&count);
  for (int i = 0; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      print_help();
      return 0;
    } else if (strcmp(a, "--list") == 0) {
      for (int k = 0; k < count; ++k) {
        printf("%s\n", e[k].name);
      }
      return 0;
    } else if (strcmp(a, "--quick") == 0) {
      o.quick = true;
    } else if (strcmp(a, "--plot") == 0) {
      plot = true;
    } else if (strcmp(a, "--verbose") == 0) {
      o.verbose = true;
    } else if (v != NULL && strcmp(a, "--json") == 0) {
      json = v;
      ++i;
    } else if (v != NULL && strcmp(a, "--out") == 0) {
      out = v;
      ++i;
    } else if (v != NULL && strcmp(a, "--only") == 0) {
      only = v;
      ++i;
    } else if (v != NULL && strcmp(a, "--device") == 0) {
      o.device = v;
      ++i;
    } else if (v != NULL && strcmp(a, "--mesh") == 0) {
      o.mesh_path = v;
      ++i;
    } else if (v != NULL && strcmp(a, "--threads") == 0) {
      if (!parse_int(a, v, 0, &o.cpu_threads)) {
        return 2;
      }
      ++i;
    } else if (v != NULL && strcmp(a, "--backend") == 0) {
      if (strcmp(v, "cpu") == 0) {
        o.backend = PIOLA_BACKEND_CPU_REFERENCE;
      } else if (strcmp(v, "opencl") == 0) {
        o.backend = PIOLA_BACKEND_OPENCL;
      } else if (strcmp(v, "auto") == 0) {
        o.backend = PIOLA_BACKEND_AUTO;
      } else {
        fprintf(stderr, "piola validate: --backend: unknown value '%s'\n", v);
        return 2;
      }
      ++i;
    } else {
      fprintf(stderr, "piola validate: unknown or incomplete option '%s' (see --help)\n", a);
      return 2;
    }
  }
  if (only != NULL) {
    for (const char *p = only; *p != '\0';) {
      const char *end = strchr(p, ',');
      size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
      bool known = false;
      for (int k = 0; k < count && !known; ++k) {
        known = strlen(e[k].name) == len && strncmp(p, e[k].name, len) == 0;
      }
      if (!known) {
        fprintf(stderr, "piola validate: unknown experiment '%.*s' (see --list)\n", (int)len, p);
        return 2;
      }
      p += len + (end != NULL ? 1 : 0);
    }
  }
  if (plot && out == NULL) {
    fprintf(stderr, "piola validate: --plot needs --out DIR\n");
    return 2;
  }
  if (out != NULL && mkdir(out, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "piola validate: cannot create %s: %s\n", out, strerror(errno));
    return 1;
  }
  char cpu[256];
  cpu_model_name(cpu, sizeof cpu);
  printf("piola %s validate (%s), backend %s, host CPU: %s\n", piola_version_string(),
         o.quick ? "quick" : "full", piola_backend_name(o.backend), cpu);
  validate_report r;
  validate_report_init(&r);
  validate_print_header();
  const double t0 = now_seconds();
  for (int i = 0; i < count; ++i) {
    if (!in_list(only, e[i].name)) {
      continue;
    }
    validate_run(i, &o, &r);
    validate_print_checks(&r, e[i].name);
    printf("%-12s (%s: %s; %.1f s)\n", "", e[i].paper, e[i].title, r.seconds[i]);
    fflush(stdout);
  }
  const double total = now_seconds() - t0;
  const int failed = validate_failures(&r, NULL);
  int judged = 0;
  for (int32_t i = 0; i < r.check_count; ++i) {
    judged += r.checks[i].relation != VALIDATE_INFO;
  }
  printf("device: %s\n%d checks, %d passed, %d failed, %.1f s\n", r.device, judged, judged - failed,
         failed, total);
  int status = failed > 0 ? 1 : 0;
  int io = 0;
  char json_path[4096];
  if (json == NULL && plot) {
    snprintf(json_path, sizeof json_path, "%s/validate.json", out);
    json = json_path;
  }
  if (json != NULL) {
    io |= validate_write_json(&r, &o, total, json);
  }
  if (out != NULL) {
    io |= validate_write_csv(&r, out);
  }
  if (plot && io == 0) {
    io |= run_plot(json, out);
  }
  validate_report_free(&r);
  return status != 0 || io != 0 ? 1 : 0;
}
