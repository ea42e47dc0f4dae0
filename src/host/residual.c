/* Piola's convergence measure: how far the last substep is from the implicit Euler step that
 * the solver approximates.
 *
 * XPBD iterated to convergence solves the implicit Euler step of its constraints' potential
 * (Macklin, Mueller, Chentanez 2016, "XPBD", Sec. 3-4: the potential (1/2) alpha^-1 C^2 of each
 * compliant constraint, which for Piola's elements is the element's elastic energy U, see
 * kernels/piola_tet.h and piola_cloth.h): the positions x of the substep's end satisfy
 *   r(x) = M (x - y) / h^2 + grad E(x) = 0,   y = x_n + h v_n + h^2 (g + M^-1 f)
 * with E the elastic energies of the tets and the cloth and the potentials of the soft
 * attachments, y the substep's prediction (the inertial target), h the substep; a material with
 * damping adds its dissipation's forces to grad E, as its damped projection's fixed point has them
 * (add_damping). A local solver
 * (Gauss-Seidel over constraints or vertices) stopped after a few iterations leaves r != 0; the
 * finer the mesh, the more of it, mostly in the low frequencies (a fine body is then softer than
 * its Young's modulus says).
 *
 * The measure is relative, so that it reads alike for any body, mass and stiffness:
 *   relative residual = |r| / (|M a| + |F| + |grad E|)
 * over the free vertices, where F = M g + f are the external forces, M a = M (x - y) / h^2 + F
 * the inertial forces (m times the substep's acceleration) and |.| the 2-norm over the vertices.
 * Since r = M a - F + grad E, it lies in [0, 1]: 0 for the implicit step itself, near 1 where the
 * elastic forces do not balance the others at all.
 *
 * Free vertices: those with mass, of XPBD materials (under PBD stiffness has no meaning), not
 * held by a hard attachment, not pushed by a collider in any collider pass of the substep and in
 * none of its body-body contacts. At those, the constraint's unknown force balances r; the
 * measure leaves them out rather than guess it. Evaluated in double on the host from the
 * backend's state (piola_world_get_stats), with the attachments' current targets. */
#include "residual.h"

#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Adds k g[j] to grad at each corner q[j] + offset of an element of n corners. */
static void add_scaled(double k, const piola_v3 *g, const int32_t *q, int32_t offset, int n,
                       double *grad) {
  for (int j = 0; j < n; ++j) {
    double *o = grad + 3 * (size_t)(q[j] + offset);
    o[0] += k * g[j].x;
    o[1] += k * g[j].y;
    o[2] += k * g[j].z;
  }
}

double piola_damping_scale(double k, double gamma, double u, double at_rest) {
  return sqrt(piola_constraint_damping_factor(k, gamma, u, at_rest));
}

void piola_tet_damping_directions(const piola_tet_material *mat, piola_m3 m, double volume,
                                  double k, double gamma, const piola_v3 x[4], piola_v3 d[8]) {
  for (int j = 0; j < 8; ++j) {
    d[j] = piola_v3_make(0.0, 0.0, 0.0);
  }
  for (int part = 0; part < (mat->split ? 2 : 1); ++part) {
    const piola_tet_material pm = piola_tet_constraint_material(mat, part);
    piola_v3 g[4];
    const double u = piola_tet_gradient(&pm, m, volume, x[0], x[1], x[2], x[3], g);
    const double scale = piola_damping_scale(k, gamma, u, PIOLA_ENERGY_EPSILON * volume);
    for (int a = 0; a < 4; ++a) {
      d[4 * part + a] = piola_v3_scale(g[a], scale);
    }
  }
}

/* Adds the damping's force d (d . motion) of one constraint with directions d[0..n-1] at corners
 * q[0..n-1] (plus `offset`) to grad (see piola_damping_scale). */
static void add_damping(const piola_v3 *d, const int32_t *q, int32_t offset, int n,
                        const double *motion, double *grad) {
  double rate = 0.0;
  for (int j = 0; j < n; ++j) {
    rate += piola_v3_dot(d[j], piola_vertex_at(motion, q[j] + offset));
  }
  add_scaled(rate, d, q, offset, n, grad);
}

/* The directions of a cloth constraint of energy k u with gradients g[0..n-1] into d. */
static void cloth_directions(double k, double gamma, double u, double at_rest, const piola_v3 *g,
                             int n, piola_v3 *d) {
  const double scale = piola_damping_scale(k, gamma, u, at_rest);
  for (int j = 0; j < n; ++j) {
    d[j] = piola_v3_scale(g[j], scale);
  }
}

/* Adds the elastic forces' negatives, grad E (N, 3 per vertex), of the tets (solver arrays, with
 * the matrices tet_m, which carry the plastic state) and the cloth bodies at x, with the material
 * damping's forces of the substep's motion (x - x^n, 3 per vertex) where a material has it: the
 * negatives of the constraint forces at the solve's fixed point. */
static void elastic_gradient(const piola_world *w, const double *x, const double *motion,
                             const double *tet_m, double *grad) {
  const piola_solver_tets *s = &w->solver;
  const double h = (double)w->def.dt / w->def.substeps;
  for (int32_t t = 0; t < s->tet_count; ++t) {
    const int32_t *q = s->tet_vertices + 4 * (size_t)t;
    const piola_material_entry *e = &w->materials[s->tet_material[t]];
    piola_m3 m;
    memcpy(m.m, tet_m + 9 * (size_t)t, sizeof m.m);
    const piola_v3 x0 = piola_vertex_at(x, q[0]), x1 = piola_vertex_at(x, q[1]),
                   x2 = piola_vertex_at(x, q[2]), x3 = piola_vertex_at(x, q[3]);
    piola_v3 g[4];
    piola_tet_gradient(&e->constants, m, s->tet_volume[t], x0, x1, x2, x3, g);
    const double youngs = (double)e->def.youngs_modulus;
    add_scaled(youngs, g, q, 0, 4, grad);
    const double gamma = (double)e->def.damping / h;
    if (gamma > 0.0) {
      const piola_v3 corners[4] = {x0, x1, x2, x3};
      piola_v3 d[8];
      piola_tet_damping_directions(&e->constants, m, s->tet_volume[t], youngs, gamma, corners, d);
      add_damping(d, q, 0, 4, motion, grad);
      add_damping(d + 4, q, 0, 4, motion, grad);
    }
  }
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (!piola_id_pool_alive(&w->body_ids, i) || !b->cloth) {
      continue;
    }
    const piola_cloth_material_entry *e = &w->cloth_materials[b->cloth_material];
    const int32_t o = b->vertex_offset;
    const double k_tri = 1.0 / e->tri.compliance, gamma = (double)e->def.damping / h;
    for (int32_t t = 0; t < b->tri_count; ++t) {
      const int32_t *q = b->tris + 3 * (size_t)t;
      piola_m2 dm;
      memcpy(dm.m, b->tri_dm_inv + 4 * (size_t)t, sizeof dm.m);
      piola_v3 g[3];
      const double u =
          piola_cloth_tri_gradient(&e->tri, dm, b->tri_area[t], piola_vertex_at(x, q[0] + o),
                                   piola_vertex_at(x, q[1] + o), piola_vertex_at(x, q[2] + o), g);
      add_scaled(k_tri, g, q, o, 3, grad);
      piola_v3 d[3];
      cloth_directions(k_tri, gamma, u, PIOLA_CLOTH_ENERGY_EPSILON * b->tri_area[t], g, 3, d);
      add_damping(d, q, o, 3, motion, grad);
    }
    for (int32_t k = 0; k < b->bend_count; ++k) {
      const int32_t *q = b->bends + 4 * (size_t)k;
      const double *rr = b->bend_rest + 6 * (size_t)k;
      piola_cloth_bend_rest rest = {{rr[0], rr[1], rr[2], rr[3]}, rr[4], rr[5]};
      piola_v3 g[4];
      const double u = piola_cloth_bend_gradient(
          &rest, piola_vertex_at(x, q[0] + o), piola_vertex_at(x, q[1] + o),
          piola_vertex_at(x, q[2] + o), piola_vertex_at(x, q[3] + o), g);
      const double k_bend = 1.0 / e->bend.compliance;
      add_scaled(k_bend, g, q, o, 4, grad);
      piola_v3 d[4];
      cloth_directions(k_bend, gamma, u, PIOLA_CLOTH_ENERGY_EPSILON, g, 4, d);
      add_damping(d, q, o, 4, motion, grad);
    }
  }
}

/* The attachments: a hard one (compliance 0) constrains its vertex; a soft one adds the gradient
 * (x - target) / alpha of its potential |x - target|^2 / (2 alpha). */
static void attachment_terms(const piola_world *w, const double *x, double *grad,
                             uint8_t *constrained) {
  const piola_solver_attachments *a = &w->attach;
  for (int32_t i = 0; i < a->vertex_count; ++i) {
    const int32_t v = a->vertex[i];
    for (int32_t e = a->start[i]; e < a->start[i + 1]; ++e) {
      const double *t = a->target + 4 * (size_t)e;
      if (!(t[3] > 0.0)) {
        constrained[v] = 1;
        continue;
      }
      for (int k = 0; k < 3; ++k) {
        grad[3 * (size_t)v + k] += (x[3 * (size_t)v + k] - t[k]) / t[3];
      }
    }
  }
}

/* Whether body b's elements are solved in the XPBD form (else the PBD form, where stiffness
 * cancels out and the measure does not apply). */
static bool body_xpbd(const piola_world *w, const piola_body *b) {
  return b->cloth ? w->cloth_materials[b->cloth_material].def.solver == PIOLA_SOLVER_XPBD
                  : w->materials[b->material].def.solver == PIOLA_SOLVER_XPBD;
}

/* Sums of squares over free vertices (or over cells of summed forces): r, M a, F, grad E. */
typedef struct residual_sums {
  double r, inertia, external, elastic;
} residual_sums;

static double relative_of(residual_sums s) {
  const double scale = sqrt(s.inertia) + sqrt(s.external) + sqrt(s.elastic);
  return scale > 0.0 ? sqrt(s.r) / scale : 0.0;
}

static void sums_add(residual_sums *to, residual_sums from) {
  to->r += from.r;
  to->inertia += from.inertia;
  to->external += from.external;
  to->elastic += from.elastic;
}

/* The squares of one vertex's (or cell's) r = M a - F + grad E, M a, F and grad E (3 each). */
static residual_sums squares(const double *r, const double *a, const double *f, const double *g) {
  residual_sums s = {0.0, 0.0, 0.0, 0.0};
  for (int k = 0; k < 3; ++k) {
    s.r += r[k] * r[k];
    s.inertia += a[k] * a[k];
    s.external += f[k] * f[k];
    s.elastic += g[k] * g[k];
  }
  return s;
}

/* The coarse grid of a body: PIOLA_RESIDUAL_CELLS cells along its longest side, cubes. */
#define COARSE_AXIS (PIOLA_RESIDUAL_CELLS + 1)
#define COARSE_CELLS (COARSE_AXIS * COARSE_AXIS * COARSE_AXIS)

/* Body b's fine and coarse sums (see piola_stats.relative_residual and coarse_residual). */
static void body_sums(const piola_world *w, const piola_body *b, const double *x, const double *gap,
                      const double *grad, const uint8_t *constrained, residual_sums *fine,
                      residual_sums *coarse) {
  const double h = (double)w->def.dt / w->def.substeps, inv_h2 = 1.0 / (h * h);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t j = b->vertex_offset; j < b->vertex_offset + b->vertex_count; ++j) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = fmin(lo[k], x[3 * (size_t)j + k]);
      hi[k] = fmax(hi[k], x[3 * (size_t)j + k]);
    }
  }
  const double longest = fmax(fmax(hi[0] - lo[0], hi[1] - lo[1]), hi[2] - lo[2]);
  const double inv_cell = longest > 0.0 ? PIOLA_RESIDUAL_CELLS / longest : 0.0;
  /* per cell: the sums of r, M a, F and grad E over its free vertices */
  static const int32_t per = 12;
  double cell[COARSE_CELLS * 12];
  memset(cell, 0, sizeof cell);
  for (int32_t j = b->vertex_offset; j < b->vertex_offset + b->vertex_count; ++j) {
    if (!(w->w[j] > 0.0) || constrained[j]) {
      continue;
    }
    const double m = 1.0 / w->w[j];
    double v[12]; /* r, M a, F, grad E */
    int32_t c = 0;
    for (int k = 0; k < 3; ++k) {
      const double inertial = m * gap[3 * (size_t)j + k] * inv_h2; /* M (x - y) / h^2 */
      const double external =
          m * (double)w->def.gravity[k] + (w->f != NULL ? w->f[3 * (size_t)j + k] : 0.0);
      const double g = grad[3 * (size_t)j + k];
      v[k] = inertial + g;
      v[3 + k] = inertial + external;
      v[6 + k] = external;
      v[9 + k] = g;
      const int32_t index = (int32_t)((x[3 * (size_t)j + k] - lo[k]) * inv_cell);
      c = c * COARSE_AXIS + (index < 0                      ? 0
                             : index > PIOLA_RESIDUAL_CELLS ? PIOLA_RESIDUAL_CELLS
                                                            : index);
    }
    sums_add(fine, squares(v, v + 3, v + 6, v + 9));
    for (int k = 0; k < per; ++k) {
      cell[per * c + k] += v[k];
    }
  }
  for (int32_t c = 0; c < COARSE_CELLS; ++c) {
    const double *v = cell + per * c;
    sums_add(coarse, squares(v, v + 3, v + 6, v + 9));
  }
}

piola_status piola_world_residual(const piola_world *w, const double *x, const double *tet_m,
                                  piola_residual *out) {
  memset(out, 0, sizeof *out);
  out->worst_slot = -1;
  if (!w->prediction_valid || w->tets_dirty || w->vertex_count == 0) {
    return PIOLA_OK;
  }
  const size_t nv = (size_t)w->vertex_count;
  double *gap = malloc(sizeof(double) * 9 * nv);
  uint8_t *constrained = malloc(nv);
  if (gap == NULL || constrained == NULL) {
    free(gap);
    free(constrained);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  double *grad = gap + 3 * nv, *motion = grad + 3 * nv;
  piola_status s = w->ops->read_prediction(w, gap, motion, constrained);
  if (s == PIOLA_OK) {
    memset(grad, 0, sizeof(double) * 3 * nv);
    elastic_gradient(w, x, motion, tet_m, grad);
    attachment_terms(w, x, grad, constrained);
    residual_sums fine = {0.0, 0.0, 0.0, 0.0}, coarse = fine;
    for (int32_t i = 0; i < w->body_ids.count; ++i) {
      const piola_body *b = &w->bodies[i];
      if (!piola_id_pool_alive(&w->body_ids, i) || !body_xpbd(w, b)) {
        continue;
      }
      residual_sums body_fine = {0.0, 0.0, 0.0, 0.0}, body_coarse = body_fine;
      body_sums(w, b, x, gap, grad, constrained, &body_fine, &body_coarse);
      const double rel = relative_of(body_coarse);
      if (rel > out->worst_coarse || out->worst_slot < 0) {
        out->worst_coarse = rel;
        out->worst_slot = i;
      }
      sums_add(&fine, body_fine);
      sums_add(&coarse, body_coarse);
    }
    out->relative = relative_of(fine);
    out->coarse = relative_of(coarse);
  }
  free(gap);
  free(constrained);
  return s;
}
