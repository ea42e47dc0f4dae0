/* The building blocks of the `piola validate` experiments (validate_internal.h): the world every
 * experiment starts from (no gravity, no damping, the chosen backend), a world with one body and
 * its positions, vertex sets of a box mesh, pins and face tractions, the loop that steps until a
 * measure settles, and beams along x with their strains, sag and twist. Everything is measured
 * through the public API, from positions and piola_world_get_stats(). */
#include "validate_internal.h"

#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- A world with one body ------------------------------------------------------------- */

static bool verbose_on = true, verbose_off = false;

/* The settings every experiment starts from: no gravity, no damping, the chosen backend. */
piola_world_def validate_base_def(const validate_options *o, double dt, int32_t substeps,
                                  int32_t iterations) {
  piola_world_def def = piola_default_world_def();
  def.backend = o->backend;
  def.device_spec = o->device;
  def.gravity[0] = def.gravity[1] = def.gravity[2] = 0.0f;
  def.dt = (float)dt;
  def.substeps = substeps;
  def.iterations = iterations;
  def.cpu_threads = o->cpu_threads;
  def.iteration_scheme = o->scheme;
  def.vbd_chebyshev_rho = o->vbd_rho;
  def.logger.fn = cli_log;
  def.logger.user_data = o->verbose ? &verbose_on : &verbose_off;
  return def;
}

piola_material validate_base_material(piola_model model, double youngs, double poisson) {
  piola_material m = piola_default_material();
  m.model = model;
  m.solver = PIOLA_SOLVER_XPBD;
  m.youngs_modulus = (float)youngs;
  m.poisson_ratio = (float)poisson;
  m.density = 1000.0f;
  m.handle_inversion = PIOLA_INVERSION_ON;
  return m;
}

void validate_sim_destroy(validate_sim *s) {
  piola_world_destroy(s->world);
  piola_mesh_free(&s->mesh);
  free(s->x);
  free(s->inv_mass);
  memset(s, 0, sizeof *s);
}

/* The rest of making a sim once its world and body exist (st: how that went): the arrays, the
 * inverse masses, the report's device name; on failure everything is freed. */
piola_status validate_sim_finish(validate_report *r, piola_status st, validate_sim *s) {
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
    validate_sim_destroy(s);
  }
  return st;
}

/* Makes a world with one body of `mesh` (taken over: freed with the sim). */
piola_status validate_sim_create(validate_report *r, const piola_world_def *def,
                                 piola_tet_mesh *mesh, const piola_material *m, validate_sim *s) {
  memset(s, 0, sizeof *s);
  s->mesh = *mesh;
  memset(mesh, 0, sizeof *mesh);
  s->n = s->mesh.vertex_count;
  s->dt = (double)def->dt;
  piola_status st = piola_world_create(def, &s->world);
  if (st == PIOLA_OK) {
    st = piola_world_add_tet_body(s->world, &s->mesh, m, NULL, &s->body);
  }
  return validate_sim_finish(r, st, s);
}

piola_status validate_sim_read(validate_sim *s) {
  return piola_body_get_positions(s->world, s->body, s->x, s->n);
}

piola_status validate_sim_steps(validate_sim *s, int32_t steps) {
  piola_status st = PIOLA_OK;
  for (int32_t i = 0; i < steps && st == PIOLA_OK; ++i) {
    st = piola_world_step(s->world);
  }
  return st;
}

/* Signed volume (m^3) of the body's tets at positions x (floats, 3 per vertex). */
double validate_mesh_volume(const piola_tet_mesh *m, const float *x) {
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

void validate_vset_free(validate_vset *v) {
  free(v->idx);
  v->idx = NULL;
  v->count = 0;
}

/* Vertices whose rest coordinate on axis a equals va (and on axis b equals vb, when b >= 0). */
validate_vset validate_select_vertices(const piola_tet_mesh *m, int a, double va, int b,
                                       double vb) {
  validate_vset v = {malloc(sizeof(int32_t) * (size_t)m->vertex_count), 0};
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

static double vset_mean(const float *x, const validate_vset *v, int axis) {
  double sum = 0.0;
  for (int32_t i = 0; i < v->count; ++i) {
    sum += (double)x[3 * (size_t)v->idx[i] + axis];
  }
  return v->count > 0 ? sum / v->count : NAN;
}

/* Pins the vertices of v (inverse mass 0); the others keep theirs. */
piola_status validate_sim_pin(validate_sim *s, const validate_vset *v) {
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
piola_status validate_sim_face_force(validate_sim *s, const validate_vset *face, int normal_axis,
                                     const double lo[3], const double hi[3],
                                     const double total[3]) {
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

/* Steps until the measure changes by at most rel_tol (relative) over two intervals of about
 * 20 ms in a row, after at least t_min and at most t_max simulated seconds. With series >= 0,
 * adds a (time, value) row per interval. */
validate_settle_result validate_settle(validate_sim *s, validate_sim_measure *measure, void *user,
                                       double t_min, double t_max, double rel_tol,
                                       validate_report *r, int series, const char *label) {
  validate_settle_result out = {NAN, 0.0, NAN, false, PIOLA_OK};
  /* Whole steps (dt is a float in the world): every dt reaches the same time in lround(t/dt). */
  const int32_t chunk_max = (int32_t)fmax(1.0, (double)lround(0.02 / s->dt));
  const int32_t steps_min = (int32_t)lround(t_min / s->dt);
  const int32_t steps_max = (int32_t)lround(t_max / s->dt);
  double prev = NAN;
  int stable = 0;
  for (int32_t steps = 0; steps < steps_max;) {
    const int32_t chunk = steps_max - steps < chunk_max ? steps_max - steps : chunk_max;
    out.status = validate_sim_steps(s, chunk);
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
    validate_series_add(r, series, label, row);
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

void validate_beam_destroy(validate_beam *b) {
  validate_sim_destroy(&b->s);
  validate_vset_free(&b->fixed);
  validate_vset_free(&b->end);
  validate_vset_free(&b->a);
  validate_vset_free(&b->b);
  validate_vset_free(&b->yl);
  validate_vset_free(&b->yh);
  validate_vset_free(&b->zl);
  validate_vset_free(&b->zh);
}

/* A beam of length L along x with a W x W cross-section, pinned at x = 0. */
piola_status validate_beam_create(validate_report *r, const piola_world_def *def,
                                  const int32_t cells[3], double length, double width,
                                  const piola_material *m, validate_beam *b) {
  memset(b, 0, sizeof *b);
  const float size[3] = {(float)length, (float)width, (float)width};
  piola_tet_mesh mesh;
  piola_status st = piola_mesh_make_box(cells, size, &mesh);
  if (st != PIOLA_OK) {
    return st;
  }
  st = validate_sim_create(r, def, &mesh, m, &b->s);
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
  b->fixed = validate_select_vertices(pm, 0, 0.0, -1, 0.0);
  b->end = validate_select_vertices(pm, 0, b->length, -1, 0.0);
  b->ax = nearest_plane(pm, 0, 0.25 * b->length);
  b->bx = nearest_plane(pm, 0, 0.75 * b->length);
  b->a = validate_select_vertices(pm, 0, b->ax, -1, 0.0);
  b->b = validate_select_vertices(pm, 0, b->bx, -1, 0.0);
  const double mid = nearest_plane(pm, 0, 0.5 * b->length);
  validate_vset yl = validate_select_vertices(pm, 0, mid, 1, 0.0),
                yh = validate_select_vertices(pm, 0, mid, 1, b->width);
  validate_vset zl = validate_select_vertices(pm, 0, mid, 2, 0.0),
                zh = validate_select_vertices(pm, 0, mid, 2, b->width);
  b->yl = yl;
  b->yh = yh;
  b->zl = zl;
  b->zh = zh;
  if (b->fixed.idx == NULL || b->end.idx == NULL || b->a.idx == NULL || b->b.idx == NULL ||
      yl.idx == NULL || yh.idx == NULL || zl.idx == NULL || zh.idx == NULL) {
    validate_beam_destroy(b);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  b->end_y0 = vset_mean(pm->positions, &b->end, 1);
  st = validate_sim_pin(&b->s, &b->fixed);
  if (st != PIOLA_OK) {
    validate_beam_destroy(b);
  }
  return st;
}

/* Total axial strain: displacement of the free end face over the length. */
double validate_beam_total_strain(validate_sim *s, void *user) {
  validate_beam *b = user;
  if (validate_sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  return (vset_mean(s->x, &b->end, 0) - b->length) / b->length;
}

/* Axial strain between the planes near L/4 and 3L/4 and lateral strain of the mid plane (mean
 * of y and z), from the current positions (already read). */
void validate_beam_mid_strains(const validate_beam *b, double *axial, double *lateral) {
  const float *x = b->s.x;
  const double rest = b->bx - b->ax;
  *axial = (vset_mean(x, &b->b, 0) - vset_mean(x, &b->a, 0) - rest) / rest;
  const double wy = vset_mean(x, &b->yh, 1) - vset_mean(x, &b->yl, 1);
  const double wz = vset_mean(x, &b->zh, 2) - vset_mean(x, &b->zl, 2);
  *lateral = 0.5 * (wy + wz - 2.0 * b->width) / b->width;
}

double validate_beam_poisson(validate_sim *s, void *user) {
  validate_beam *b = user;
  if (validate_sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  double axial, lateral;
  validate_beam_mid_strains(b, &axial, &lateral);
  return -lateral / axial;
}

/* Sag of a cantilever: how far the free end face's mean y went down (m). */
double validate_beam_sag(validate_sim *s, void *user) {
  validate_beam *b = user;
  if (validate_sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  return b->end_y0 - vset_mean(s->x, &b->end, 1);
}

/* Twist of the free end face about the beam axis (degrees): the mean angle between each
 * vertex's rest and current offsets from the face's centre, in the y-z plane. */
double validate_beam_twist(validate_sim *s, void *user) {
  validate_beam *b = user;
  if (validate_sim_read(s) != PIOLA_OK) {
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
double validate_bar_damping(double youngs, double density, double length) {
  return 2.0 * 0.5 * M_PI * sqrt(youngs / density) / length;
}

/* Iterations at which a decreasing sequence first reaches `level` (a fraction of e[0]);
 * NaN if never. */
double validate_iterations_to(const double *e, int32_t n, double level) {
  for (int32_t k = 1; k < n; ++k) {
    if (e[k] <= level * e[0]) {
      return (double)k;
    }
  }
  return NAN;
}
