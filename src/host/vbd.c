/* Piola vertex block descent (Chen, Liu, Yang, Yuksel 2024, "Vertex Block Descent", ACM Trans.
 * Graph. 43(4), SIGGRAPH 2024): the second iteration scheme (PIOLA_SCHEME_VBD).
 *
 * Each substep minimizes the incremental potential of implicit Euler,
 *   G(x) = sum_i m_i / (2 h^2) |x_i - y_i|^2 + sum of the elements' energies,
 * y = x + h v + h^2 (g + f/m) the predicted positions of PREDICT (w->y), by block coordinate
 * descent: per iteration, color after color, every vertex i of the
 * color takes one Newton step on its own 3x3 block of G with the other vertices held,
 *   H_i dx_i = -grad_i G,  H_i = m_i / h^2 I + sum of its elements' blocks d2E/dx_i^2,
 * each block projected to the positive semidefinite cone (the paper's local Newton step; the blocks
 * of the shared headers, kernels/piola_tet.h). Vertices of one color share no element (the vertex
 * coloring of coloring.c), so a color's steps are independent: they run in parallel, in any
 * order, with the same result. The energies and their parameters are the XPBD scheme's (U =
 * V Psi(F), E = 1 / compliance), so a converged step of either scheme is the same implicit
 * Euler step. Material damping adds the forces of XPBD's damped projection at its fixed point to
 * each element's block (piola_tet_damping_block; the multigrid scheme's Newton step has the same
 * forces), so that a converged step is the damped XPBD step too. Soft attachments are energies
 * in their vertices' blocks and hard ones hold their vertices on their targets
 * (kernels/piola_attach.h). Colliders and body contacts run as the XPBD step runs them,
 * projected after each iteration (world.c); a vertex a collider pushed steps on its surface
 * (piola_vbd_supported_step). A step is at most PIOLA_VBD_MAX_STEP of the vertex's
 * smallest element height. The initial guess is the paper's adaptive initialization, from the
 * velocity of the last substep. The velocities come from the positions as in XPBD. With
 * def.vbd_chebyshev_rho > 0 each iteration from the third on ends with the Chebyshev
 * extrapolation of the positions from those two iterations before (Wang 2015, "A Chebyshev
 * Semi-Iterative Approach for Accelerating Projective and Position-based Dynamics", Sec. 4; the
 * paper's Sec. 3.7), before the contacts and colliders are projected. The last iteration then
 * moves each body that nothing touches to the best rigid motion of itself (below, "The rigid
 * modes of a free body").
 *
 * This file holds the vertex lists of the solver arrays and the CPU reference's stage. A
 * vertex sums its elements in the fixed order of its list, so the result is bitwise repeatable
 * and the same for every thread count (no atomics, no reductions across vertices).
 */
#include "world.h"

#include "vbd.h"

#include "piola_attach.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void piola_solver_vbd_free(piola_solver_vbd *v) {
  free(v->color_first);
  free(v->color_size);
  free(v->vertices);
  free(v->element_start);
  free(v->elements);
  free(v->body_range);
  free(v->v_last);
  free(v->chebyshev[0]);
  free(v->chebyshev[1]);
  memset(v, 0, sizeof *v);
}

piola_status piola_solver_vbd_build(const piola_world *w, const piola_solver_tets *st,
                                    const piola_solver_cloth *sc, piola_solver_vbd *out) {
  piola_solver_vbd v;
  memset(&v, 0, sizeof v);
  memset(out, 0, sizeof *out);
  if (w->def.iteration_scheme != PIOLA_SCHEME_VBD) {
    return PIOLA_OK;
  }
  int32_t colors = 0, entries = 0, bodies = 0;
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (piola_id_pool_alive(&w->body_ids, i)) {
      colors = b->vertex_color_count > colors ? b->vertex_color_count : colors;
      entries += b->vertex_colors != NULL ? b->vertex_count : 0;
      bodies += b->vertex_colors != NULL;
    }
  }
  const size_t nv = (size_t)w->vertex_count;
  const int64_t elements =
      4 * (int64_t)st->tet_count + 3 * (int64_t)sc->tri_count + 4 * (int64_t)sc->bend_count;
  if (elements >= ((int64_t)1 << 27)) {
    return PIOLA_ERROR_UNSUPPORTED; /* the entries' element field holds 2^27 elements */
  }
  v.color_count = colors;
  v.vertex_count = entries;
  v.element_count = (int32_t)elements;
  v.color_first = malloc(sizeof(int32_t) * (size_t)(colors > 0 ? colors : 1));
  v.color_size = malloc(sizeof(int32_t) * (size_t)(colors > 0 ? colors : 1));
  v.vertices = malloc(sizeof(int32_t) * (size_t)(entries > 0 ? entries : 1));
  v.element_start = calloc(nv + 1, sizeof(int32_t));
  v.elements = malloc(sizeof(int32_t) * (size_t)(elements > 0 ? elements : 1));
  v.v_last = malloc(sizeof(double) * 3 * (nv > 0 ? nv : 1));
  v.body_count = bodies;
  v.body_range = malloc(4 * sizeof(int32_t) * (size_t)(bodies > 0 ? bodies : 1));
  v.adaptive_init = true;
  const bool accelerated = w->def.vbd_chebyshev_rho > 0.0f;
  for (int k = 0; k < 2 && accelerated; ++k) {
    v.chebyshev[k] = malloc(sizeof(double) * 3 * (nv > 0 ? nv : 1));
  }
  int32_t *fill = malloc(sizeof(int32_t) * (nv > 0 ? nv : 1));
  if (!v.color_first || !v.color_size || !v.vertices || !v.element_start || !v.elements ||
      !v.v_last || !v.body_range || !fill ||
      (accelerated && (!v.chebyshev[0] || !v.chebyshev[1]))) {
    free(fill);
    piola_solver_vbd_free(&v);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* The bodies' ranges; the contact arrays hold every live body's surface vertices, body by body
   * in slot order (contact.c). */
  for (int32_t i = 0, rank = 0, surface = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (!piola_id_pool_alive(&w->body_ids, i)) {
      continue;
    }
    if (b->vertex_colors != NULL) {
      int32_t *r = v.body_range + 4 * (size_t)rank++;
      r[0] = b->vertex_offset;
      r[1] = b->vertex_count;
      r[2] = surface;
      r[3] = b->surface_vertex_count;
    }
    surface += b->surface_vertex_count;
  }
  /* The colors: every body's vertices of color c, bodies in slot order. */
  int32_t at = 0;
  for (int32_t c = 0; c < colors; ++c) {
    v.color_first[c] = at;
    for (int32_t i = 0; i < w->body_ids.count; ++i) {
      const piola_body *b = &w->bodies[i];
      if (!piola_id_pool_alive(&w->body_ids, i) || b->vertex_colors == NULL) {
        continue;
      }
      for (int32_t k = 0; k < b->vertex_count; ++k) {
        if (b->vertex_colors[k] == c) {
          v.vertices[at++] = b->vertex_offset + k;
        }
      }
    }
    v.color_size[c] = at - v.color_first[c];
  }
  /* Each vertex's elements: counted, then filled in the fixed order. */
  for (int32_t t = 0; t < st->tet_count; ++t) {
    for (int k = 0; k < 4; ++k) {
      v.element_start[st->tet_vertices[4 * (size_t)t + k] + 1]++;
    }
  }
  for (int32_t t = 0; t < sc->tri_count; ++t) {
    for (int k = 0; k < 3; ++k) {
      v.element_start[sc->tri_vertices[4 * (size_t)t + k] + 1]++;
    }
  }
  for (int32_t t = 0; t < sc->bend_count; ++t) {
    for (int k = 0; k < 4; ++k) {
      v.element_start[sc->bend_vertices[4 * (size_t)t + k] + 1]++;
    }
  }
  for (size_t i = 0; i < nv; ++i) {
    v.element_start[i + 1] += v.element_start[i];
  }
  memcpy(fill, v.element_start, sizeof(int32_t) * nv);
  for (int32_t t = 0; t < st->tet_count; ++t) {
    for (int k = 0; k < 4; ++k) {
      v.elements[fill[st->tet_vertices[4 * (size_t)t + k]]++] =
          PIOLA_VBD_ENTRY(t, PIOLA_VBD_TET, k);
    }
  }
  for (int32_t t = 0; t < sc->tri_count; ++t) {
    for (int k = 0; k < 3; ++k) {
      v.elements[fill[sc->tri_vertices[4 * (size_t)t + k]]++] =
          PIOLA_VBD_ENTRY(t, PIOLA_VBD_TRIANGLE, k);
    }
  }
  for (int32_t t = 0; t < sc->bend_count; ++t) {
    for (int k = 0; k < 4; ++k) {
      v.elements[fill[sc->bend_vertices[4 * (size_t)t + k]]++] =
          PIOLA_VBD_ENTRY(t, PIOLA_VBD_BEND, k);
    }
  }
  free(fill);
  *out = v;
  return PIOLA_OK;
}

/* ---- The CPU reference's stage ----------------------------------------------------------- */

/* An element's block in absolute units: its parts ge, he (units of its stiffness) times k, to
 * which the material damping's part is added before the vertex sums the block (the order of the
 * OpenCL kernels, whose CPU devices evaluate the tets' blocks apart). */
static void element_block(double k, piola_v3 *ge, piola_m3 *he) {
  *ge = piola_v3_scale(*ge, k);
  for (int i = 0; i < 9; ++i) {
    he->m[i] = k * he->m[i];
  }
}

static void add_block(piola_v3 *g, piola_m3 *hs, piola_v3 ge, piola_m3 he) {
  *g = piola_v3_add(*g, ge);
  for (int i = 0; i < 9; ++i) {
    hs->m[i] += he.m[i];
  }
}

/* The motion of element corners q[0..n-1] since the substep's start (x^n: w->x), for the
 * material damping. */
static void corner_motion(const piola_world *w, const int32_t *q, int n, piola_v3 *motion) {
  for (int a = 0; a < n; ++a) {
    motion[a] = piola_v3_sub(piola_vertex_at(w->p, q[a]), piola_vertex_at(w->x, q[a]));
  }
}

/* One vertex's Newton step on its block (see the module comment), in place in w->p; h the
 * substep (s). */
static void solve_vertex(piola_world *w, int32_t i, double h) {
  const double inv_h2 = 1.0 / (h * h);
  if (!(w->w[i] > 0.0)) {
    return; /* pinned */
  }
  const piola_solver_vbd *v = &w->vbd;
  const piola_solver_tets *st = &w->solver;
  const piola_solver_cloth *sc = &w->cloth;
  const double k_inertia = inv_h2 / w->w[i];
  double reach = INFINITY; /* the trust region (PIOLA_VBD_MAX_STEP) */
  const piola_v3 xi = piola_vertex_at(w->p, i), yi = piola_vertex_at(w->y, i);
  piola_v3 g = piola_v3_scale(piola_v3_sub(xi, yi), k_inertia);
  piola_m3 hs = piola_m3_scale(piola_m3_identity(), k_inertia);
  for (int32_t j = v->element_start[i]; j < v->element_start[i + 1]; ++j) {
    const int32_t e = v->elements[j], t = PIOLA_VBD_ELEMENT(e), corner = PIOLA_VBD_CORNER(e);
    piola_v3 ge;
    piola_m3 he;
    if (PIOLA_VBD_KIND(e) == PIOLA_VBD_TET) {
      const int32_t *q = st->tet_vertices + 4 * (size_t)t;
      const piola_tet_material *mat = &w->materials[st->tet_material[t]].constants;
      reach = fmin(reach,
                   1.0 / piola_v3_length(piola_tet_corner_row(piola_m3_at(st->tet_m, t), corner)));
      piola_tet_vertex_block(mat, piola_m3_at(st->tet_m, t), st->tet_volume[t],
                             piola_vertex_at(w->p, q[0]), piola_vertex_at(w->p, q[1]),
                             piola_vertex_at(w->p, q[2]), piola_vertex_at(w->p, q[3]), corner, &ge,
                             &he);
      element_block(1.0 / mat->compliance, &ge, &he);
      if (mat->solver == PIOLA_TET_SOLVER_XPBD && mat->damping > 0.0) {
        piola_v3 motion[4];
        corner_motion(w, q, 4, motion);
        piola_tet_damping_block(mat, piola_m3_at(st->tet_m, t), st->tet_volume[t], mat->damping / h,
                                piola_vertex_at(w->p, q[0]), piola_vertex_at(w->p, q[1]),
                                piola_vertex_at(w->p, q[2]), piola_vertex_at(w->p, q[3]), motion,
                                corner, &ge, &he);
      }
      add_block(&g, &hs, ge, he);
    } else if (PIOLA_VBD_KIND(e) == PIOLA_VBD_TRIANGLE) {
      const int32_t *q = sc->tri_vertices + 4 * (size_t)t;
      const piola_cloth_tri_material *mat = &w->cloth_materials[q[3]].tri;
      piola_m2 dm;
      memcpy(dm.m, sc->tri_dm_inv + 4 * (size_t)t, sizeof dm.m);
      reach = fmin(reach, 1.0 / piola_cloth_tri_corner_length(dm, corner));
      piola_cloth_tri_vertex_block(mat, dm, sc->tri_area[t], piola_vertex_at(w->p, q[0]),
                                   piola_vertex_at(w->p, q[1]), piola_vertex_at(w->p, q[2]), corner,
                                   &ge, &he);
      element_block(1.0 / mat->compliance, &ge, &he);
      if (mat->solver == PIOLA_CLOTH_SOLVER_XPBD && mat->damping > 0.0) {
        piola_v3 motion[3];
        corner_motion(w, q, 3, motion);
        piola_cloth_tri_damping_block(mat, dm, sc->tri_area[t], mat->damping / h,
                                      piola_vertex_at(w->p, q[0]), piola_vertex_at(w->p, q[1]),
                                      piola_vertex_at(w->p, q[2]), motion, corner, &ge, &he);
      }
      add_block(&g, &hs, ge, he);
    } else {
      const int32_t *q = sc->bend_vertices + 4 * (size_t)t;
      const piola_cloth_bend_material *mat = &w->cloth_materials[sc->bend_material[t]].bend;
      const double *r = sc->bend_rest + 6 * (size_t)t;
      const piola_cloth_bend_rest rest = {{r[0], r[1], r[2], r[3]}, r[4], r[5]};
      piola_cloth_bend_vertex_block(&rest, piola_vertex_at(w->p, q[0]), piola_vertex_at(w->p, q[1]),
                                    piola_vertex_at(w->p, q[2]), piola_vertex_at(w->p, q[3]),
                                    corner, &ge, &he);
      element_block(1.0 / mat->compliance, &ge, &he);
      if (mat->solver == PIOLA_CLOTH_SOLVER_XPBD && mat->damping > 0.0) {
        piola_v3 motion[4];
        corner_motion(w, q, 4, motion);
        piola_cloth_bend_damping_block(mat, &rest, mat->damping / h, piola_vertex_at(w->p, q[0]),
                                       piola_vertex_at(w->p, q[1]), piola_vertex_at(w->p, q[2]),
                                       piola_vertex_at(w->p, q[3]), motion, corner, &ge, &he);
      }
      add_block(&g, &hs, ge, he);
    }
  }
  /* Its attachments (w->attach is sorted by vertex): soft ones as energy, a hard one holds it. */
  const piola_solver_attachments *at = &w->attach;
  const int32_t lo = piola_attachments_of(at, i);
  if (lo >= 0) {
    double k_attach = 0.0;
    for (int32_t e = at->start[lo]; e < at->start[lo + 1]; ++e) {
      const double *t = at->target + 4 * (size_t)e;
      if (piola_attachment_block(xi, piola_v3_make(t[0], t[1], t[2]), t[3], &g, &k_attach)) {
        memcpy(w->p + 3 * (size_t)i, t, 3 * sizeof(double)); /* hard: on its target */
        return;
      }
    }
    hs.m[0] += k_attach;
    hs.m[4] += k_attach;
    hs.m[8] += k_attach;
  }
  piola_v3 dx;
  if (piola_vbd_newton_step(hs, g, &dx)) {
    dx = piola_vbd_limit_step(dx, PIOLA_VBD_MAX_STEP * reach);
    double *support = st->support + 4 * (size_t)i;
    if (support[3] >= 0.0) {
      support[3] +=
          piola_vbd_supported_step(hs, piola_v3_make(support[0], support[1], support[2]), &dx);
    }
    double *p = w->p + 3 * (size_t)i;
    p[0] += dx.x;
    p[1] += dx.y;
    p[2] += dx.z;
  }
}

typedef struct vbd_job {
  piola_world *w;
  int32_t first;
  double h;
} vbd_job;

static void solve_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const vbd_job *job = ctx;
  const int32_t *vertices = job->w->vbd.vertices + job->first;
  for (int32_t k = begin; k < end; ++k) {
    solve_vertex(job->w, vertices[k], job->h);
  }
}

/* Vertices per chunk of a color split among the threads at least. */
#define VBD_GRAIN 256

/* The start of a substep's iterations: the initial guess (PREDICT left y in w->y and w->p). */
static void begin_substep(piola_world *w, double h) {
  piola_solver_vbd *v = &w->vbd;
  const size_t n = (size_t)w->vertex_count;
  const double g[3] = {w->def.gravity[0], w->def.gravity[1], w->def.gravity[2]};
  const double g_norm = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
  for (size_t i = 0; i < n; ++i) {
    if (!(w->w[i] > 0.0)) {
      continue;
    }
    /* v_t, the velocity at the start of the substep: PREDICT added h (g + f/m) to it */
    double vt[3];
    const double *f = w->f != NULL ? w->f + 3 * i : NULL;
    for (int k = 0; k < 3; ++k) {
      vt[k] = w->v[3 * i + k] - h * (g[k] + (f != NULL ? f[k] * w->w[i] : 0.0));
    }
    if (v->adaptive_init && g_norm > 0.0) {
      /* The paper's adaptive initialization: of gravity only the part along the
       * vertex's last acceleration, clamped to [0, |g|]: a resting vertex (supported, its
       * acceleration zero) starts where it is, a falling one where it falls. Without a last
       * velocity (the first substep after a build or a loaded state) the whole of gravity: the
       * prediction y. A guess short of y by a rigid motion is the error block descent removes
       * slowest (every vertex must move with its neighbours): from x + h v, a box falling from
       * rest lagged its free fall by 6.6 mm after 0.1 s, at 5 iterations, and drifted sideways. */
      double a_dot = 0.0;
      if (v->have_last) {
        for (int k = 0; k < 3; ++k) {
          a_dot += (vt[k] - v->v_last[3 * i + k]) / h * g[k] / g_norm;
        }
      }
      const double a = v->have_last ? fmin(fmax(a_dot, 0.0), g_norm) : g_norm;
      for (int k = 0; k < 3; ++k) {
        w->p[3 * i + k] -= h * h * (g_norm - a) * g[k] / g_norm;
      }
    }
    memcpy(v->v_last + 3 * i, vt, sizeof vt);
  }
  v->have_last = true;
}

/* omega of iteration k (1-based) of a substep, from the last iteration's `last` (1 before the
 * third iteration). */
static double chebyshev_omega(const piola_world *w, int32_t k, double last) {
  const double rho = (double)w->def.vbd_chebyshev_rho;
  if (k < 3) {
    return 1.0;
  }
  return k == 3 ? 2.0 / (2.0 - rho * rho) : 4.0 / (4.0 - rho * rho * last);
}

bool piola_vbd_fit_after(const piola_world *w, int32_t k) {
  return w->def.iterations >= 2 && k == w->def.iterations;
}

bool piola_vbd_fits_free_bodies(const piola_world *w) {
  return piola_vbd_fit_after(w, w->iteration + 1);
}

bool piola_vbd_chebyshev_pass(const piola_world *w, int32_t k, bool *blend, bool *keep) {
  *blend = k >= 3;
  *keep = k <= w->def.iterations - 2;
  return w->def.vbd_chebyshev_rho > 0.0f && w->def.iterations >= 3 && (*blend || *keep);
}

bool piola_vbd_chebyshev_next(piola_world *w, bool *blend, bool *keep, int *parity) {
  const int32_t k = w->iteration + 1;
  if (!piola_vbd_chebyshev_pass(w, k, blend, keep)) {
    return false;
  }
  w->vbd.chebyshev_omega = chebyshev_omega(w, k, w->vbd.chebyshev_omega);
  *parity = k % 2;
  return true;
}

/* The Chebyshev pass after iteration k (1-based) of the colors: chebyshev[k % 2] holds
 * x_{k-2} and receives x_k. A pinned vertex never moves; a hard-attached one is on its target
 * from the first iteration on, where the extrapolation leaves it (x_{k-2} = x_k). */
static void accelerate(piola_world *w) {
  piola_solver_vbd *v = &w->vbd;
  bool blend, keep;
  int parity;
  if (!piola_vbd_chebyshev_next(w, &blend, &keep, &parity)) {
    return;
  }
  const double omega = v->chebyshev_omega;
  double *older = v->chebyshev[parity];
  for (size_t i = 0; i < 3 * (size_t)w->vertex_count; ++i) {
    if (!(w->w[i / 3] > 0.0)) {
      continue;
    }
    if (blend) {
      w->p[i] = older[i] + omega * (w->p[i] - older[i]);
    }
    if (keep) {
      older[i] = w->p[i];
    }
  }
}

/* ---- The rigid modes of a free body --------------------------------------------------------
 * A vertex's step moves it against its neighbours held, so a body's rigid motion is the error
 * block descent removes slowest, and an unconverged step makes momentum: a box released squashed
 * in zero gravity drifted 4.5 cm in 1 s at 5 iterations (bench/LOG.md, "Boxes dropped on boxes
 * and on the ground under the three schemes"). For a body that nothing outside it acts on in the
 * substep, the elastic energy does not change along its six rigid modes, so the incremental
 * potential's minimum along them is its inertia term's (piola_vbd_rigid_fit: the translation
 * exactly, the rotation to first order): the last iteration (of at least 2) ends with every such
 * body moved there, so that its centre of mass takes the implicit Euler step exactly (its momentum
 * carries over) and its rotation the one its inertia asks for. A converged step is left as it is
 * (its residual has no rigid part). Bodies that a collider pushed in the substep, with a listed
 * contact, or with a pinned or attached vertex are left to the iterations: their rigid motion is
 * what those forces make it. */

/* Whether the body of range r (piola_solver_vbd.body_range) is free in this substep: no vertex
 * pinned or attached, none pushed by a collider in it so far, and, with contacts on, no surface
 * vertex with a listed contact of its own or as a corner of another's (any kind). */
static bool body_free(const piola_world *w, const int32_t *r, bool contacts) {
  const piola_solver_attachments *at = &w->attach;
  const int32_t held = piola_lower_bound(at->vertex, at->vertex_count, r[0]);
  if (held < at->vertex_count && at->vertex[held] < r[0] + r[1]) {
    return false;
  }
  for (int32_t i = r[0]; i < r[0] + r[1]; ++i) {
    if (!(w->w[i] > 0.0) || (w->collider_count > 0 && w->collider_pushed[i])) {
      return false;
    }
  }
  const piola_solver_contacts *c = &w->contacts;
  for (int32_t sv = r[2]; sv < r[2] + r[3] && contacts; ++sv) {
    if (c->contact_count[sv] > 0 || c->corner_start[sv + 1] > c->corner_start[sv]) {
      return false;
    }
  }
  return true;
}

/* The free bodies moved by their rigid fit (piola_vbd_rigid_fit), body after body, each's sums in
 * the order of its vertices, about its first vertex's inertia target. */
static void fit_free_bodies(piola_world *w) {
  const piola_solver_vbd *v = &w->vbd;
  const bool contacts = piola_contacts_active(w);
  for (int32_t b = 0; b < v->body_count; ++b) {
    const int32_t *r = v->body_range + 4 * (size_t)b;
    if (r[1] == 0 || !body_free(w, r, contacts)) {
      continue;
    }
    const piola_v3 o = piola_vertex_at(w->y, r[0]);
    double mass = 0.0;
    piola_v3 mx = piola_v3_make(0.0, 0.0, 0.0), mg = mx, lg = mx;
    piola_m3 mxx = piola_m3_scale(piola_m3_identity(), 0.0);
    for (int32_t i = r[0]; i < r[0] + r[1]; ++i) {
      const double m = 1.0 / w->w[i];
      const piola_v3 x = piola_v3_sub(piola_vertex_at(w->p, i), o),
                     g = piola_v3_sub(piola_vertex_at(w->y, i), piola_vertex_at(w->p, i));
      const double xv[3] = {x.x, x.y, x.z};
      mass += m;
      mx = piola_v3_add(mx, piola_v3_scale(x, m));
      mg = piola_v3_add(mg, piola_v3_scale(g, m));
      lg = piola_v3_add(lg, piola_v3_scale(piola_v3_cross(x, g), m));
      for (int j = 0; j < 9; ++j) {
        mxx.m[j] += m * xv[j / 3] * xv[j % 3];
      }
    }
    piola_v3 c, shift;
    const piola_v3 spin = piola_vbd_rigid_fit(mass, mx, mg, mxx, lg, &c, &shift);
    for (int32_t i = r[0]; i < r[0] + r[1]; ++i) {
      double *p = w->p + 3 * (size_t)i;
      const piola_v3 dx =
          piola_vbd_rigid_displacement(spin, c, shift, piola_v3_sub(piola_vertex_at(w->p, i), o));
      p[0] += dx.x;
      p[1] += dx.y;
      p[2] += dx.z;
    }
  }
}

void piola_cpu_solve_vertices(piola_world *w, double h) {
  piola_solver_vbd *v = &w->vbd;
  if (w->iteration == 0) {
    begin_substep(w, h);
  }
  for (int32_t c = 0; c < v->color_count; ++c) {
    vbd_job job = {.w = w, .first = v->color_first[c], .h = h};
    piola_pool_for(w->pool, v->color_size[c], VBD_GRAIN, solve_chunk, &job);
  }
  accelerate(w);
  if (piola_vbd_fits_free_bodies(w)) {
    fit_free_bodies(w);
  }
}
