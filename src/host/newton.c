/* Piola global Newton step: the multigrid scheme (PIOLA_SCHEME_MULTIGRID).
 *
 * Each substep minimizes the incremental potential of implicit Euler,
 *   G(x) = sum_i m_i / (2 h^2) |x_i - y_i|^2 + sum of the elements' energies,
 * y the predicted positions of PREDICT (w->y), the same step a converged XPBD or vertex block
 * descent step takes (the energies and their parameters are the XPBD scheme's, U = V Psi(F),
 * E = 1 / compliance). Each iteration of the substep is one projected Newton step on the whole
 * of G (Teran, Sifakis, Irving, Fedkiw 2005, Sec. 4):
 *   (M / h^2 + sum_e H_e) dx = -grad G,
 * every element Hessian H_e (tets, cloth triangles and bending stencils) projected to the
 * positive semidefinite cone (piola_tet_hessian, piola_cloth_tri_hessian, piola_cloth_bend_hessian)
 * and set up at the substep's first iteration (kept while full steps succeed, see below), solved by
 * conjugate gradients preconditioned by the aggregation multigrid of multigrid.c to
 * PIOLA_MULTIGRID_CG_TOLERANCE, then a backtracking line search on G (Armijo's condition; Nocedal,
 * Wright 2006, Sec. 3.1). Multigrid makes the cost of a converged linear solve grow with the
 * vertices, not with their square: a global step reaches the slow modes of a fine mesh that
 * Gauss-Seidel over elements needs hundreds of sweeps for (MGPBD, Li et al. 2025, solves XPBD's
 * dual system the same way; this scheme solves the primal one, whose unknowns are the 3 n
 * positions rather than one multiplier per constraint).
 *
 * Pinned vertices (inverse mass 0) and hard attachments (held on their targets) are fixed in
 * the solve; soft attachments are energies (1 / (2 alpha)) |x - target|^2. A vertex a
 * collider pushed in the substep's last COLLIDE stage keeps its place along the collider's
 * normal in the solve (the filter of a constrained particle, Baraff, Witkin 1998, "Large Steps
 * in Cloth Simulation", Sec. 5.3) and moves along its surface against the collider's friction;
 * body contacts are penalties of the solve with their friction (newton_contact.c); the
 * colliders then project as in the XPBD step after each iteration, without friction, and the
 * body contacts after the last one (world.c).
 *
 * A supported vertex's friction with its collider is a potential of the step, lagged as in IPC,
 * with an anchor that holds a resting vertex (newton_support.c).
 *
 * Material damping is XPBD's constraint damping (Macklin, Mueller, Chentanez 2016, "XPBD",
 * Eq. 26; kernels/piola_tet.h), whose damped projection stops where each constraint of energy
 * U = k u (gradients g of u at its corners) adds the force k gamma G g / (2 u), G the sum over its
 * corners of g_i . (x_i - x_i^n), gamma = damping / h (the forces residual.c measures). With
 * d = sqrt(k gamma / (2 u)) g that force is d (d . (x - x^n)), the gradient of the dissipation
 * potential (1/2) (d . (x - x^n))^2 with d held fixed, whose Hessian d d^T (rank one, positive
 * semidefinite) joins the element's. d is evaluated at each Newton step's start and kept through
 * its line search, so that the search minimizes one function; a converged solve stops at the
 * damped XPBD step's fixed point. A tet of a split material has two constraints (the mu and the
 * lambda terms of its energy, as piola_tet_solve projects them), the other elements one.
 */
#include "world.h"

#include "newton.h"
#include "residual.h"

#include "piola_attach.h"
#include "piola_contact.h"
#include "piola_hessian.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void piola_solver_newton_free(piola_solver_newton *n) {
  free(n->start);
  free(n->col);
  free(n->element_block);
  piola_multigrid_free(&n->mg);
  free(n->gradient);
  free(n->dx);
  free(n->trial);
  free(n->normal);
  free(n->kind);
  free(n->friction);
  free(n->anchor);
  free(n->anchor_collider);
  free(n->collider_solve_force);
  free(n->corner_start);
  free(n->corners);
  free(n->element_grad);
  free(n->element_hess);
  free(n->element_energy);
  free(n->vertex_energy);
  free(n->element_damp);
  free(n->pair_vertex);
  free(n->pair_frame);
  free(n->pair_lambda);
  free(n->pair_entry);
  memset(n, 0, sizeof *n);
}

/* Element e's corners (world vertex indices, at *q) and their number: the tets first, then the
 * cloth's triangles, then its bending stencils. */
static int element_corners(const piola_solver_tets *st, const piola_solver_cloth *sc, int32_t e,
                           const int32_t **q) {
  if (e < st->tet_count) {
    *q = st->tet_vertices + 4 * (size_t)e;
    return 4;
  }
  e -= st->tet_count;
  if (e < sc->tri_count) {
    *q = sc->tri_vertices + 4 * (size_t)e; /* the fourth entry is the material */
    return 3;
  }
  *q = sc->bend_vertices + 4 * (size_t)(e - sc->tri_count);
  return 4;
}

/* Element e's material damping (s): the material's where it is of the XPBD form, else 0 (the
 * PBD form has none). */
static double element_damping(const piola_world *w, const piola_solver_tets *st,
                              const piola_solver_cloth *sc, int32_t e) {
  if (e < st->tet_count) {
    const piola_tet_material *mat = &w->materials[st->tet_material[e]].constants;
    return mat->solver == PIOLA_TET_SOLVER_XPBD ? mat->damping : 0.0;
  }
  const int32_t t = e - st->tet_count;
  if (t < sc->tri_count) {
    const piola_cloth_tri_material *mat =
        &w->cloth_materials[sc->tri_vertices[4 * (size_t)t + 3]].tri;
    return mat->solver == PIOLA_CLOTH_SOLVER_XPBD ? mat->damping : 0.0;
  }
  const piola_cloth_bend_material *mat =
      &w->cloth_materials[sc->bend_material[t - sc->tri_count]].bend;
  return mat->solver == PIOLA_CLOTH_SOLVER_XPBD ? mat->damping : 0.0;
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

piola_status piola_solver_newton_build(const piola_world *w, const piola_solver_tets *st,
                                       const piola_solver_cloth *sc, piola_solver_newton *out) {
  memset(out, 0, sizeof *out);
  if (w->def.iteration_scheme != PIOLA_SCHEME_MULTIGRID) {
    return PIOLA_OK;
  }
  piola_solver_newton n;
  memset(&n, 0, sizeof n);
  const int32_t nv = w->vertex_count, ne = st->tet_count + sc->tri_count + sc->bend_count;
  const size_t nvb = (size_t)(nv > 0 ? nv : 1);
  n.vertex_count = nv;
  n.element_count = ne;
  /* Each vertex's elements, then its neighbours through them (itself included), sorted. */
  int32_t *inc_start = calloc(nvb + 1, sizeof(int32_t));
  int32_t *inc = malloc(sizeof(int32_t) * (size_t)(ne > 0 ? 4 * ne : 1));
  int32_t *mark = malloc(sizeof(int32_t) * nvb);
  n.start = calloc(nvb + 1, sizeof(int32_t));
  if (!inc_start || !inc || !mark || !n.start) {
    free(inc_start);
    free(inc);
    free(mark);
    piola_solver_newton_free(&n);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t e = 0; e < ne; ++e) {
    const int32_t *q;
    const int corners = element_corners(st, sc, e, &q);
    for (int k = 0; k < corners; ++k) {
      inc_start[q[k] + 1]++;
    }
  }
  for (int32_t i = 0; i < nv; ++i) {
    inc_start[i + 1] += inc_start[i];
    mark[i] = -1;
  }
  {
    int32_t *fill = malloc(sizeof(int32_t) * nvb);
    if (fill == NULL) {
      free(inc_start);
      free(inc);
      free(mark);
      piola_solver_newton_free(&n);
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(fill, inc_start, sizeof(int32_t) * nvb);
    for (int32_t e = 0; e < ne; ++e) {
      const int32_t *q;
      const int corners = element_corners(st, sc, e, &q);
      for (int k = 0; k < corners; ++k) {
        inc[fill[q[k]]++] = 4 * e + k;
      }
    }
    free(fill);
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (int32_t i = 0; i < nv; ++i) {
      int32_t at = pass == 0 ? 0 : n.start[i];
      mark[i] = i;
      if (pass == 1) {
        n.col[at] = i;
      }
      at++;
      for (int32_t e = inc_start[i]; e < inc_start[i + 1]; ++e) {
        const int32_t *q;
        const int corners = element_corners(st, sc, inc[e] >> 2, &q);
        for (int k = 0; k < corners; ++k) {
          if (mark[q[k]] != i) {
            mark[q[k]] = i;
            if (pass == 1) {
              n.col[at] = q[k];
            }
            at++;
          }
        }
      }
      if (pass == 0) {
        n.start[i + 1] = at;
      } else {
        qsort(n.col + n.start[i], (size_t)(at - n.start[i]), sizeof(int32_t), cmp_i32);
      }
    }
    if (pass == 0) {
      for (int32_t i = 0; i < nv; ++i) {
        n.start[i + 1] += n.start[i];
        mark[i] = -1;
      }
      n.col = malloc(sizeof(int32_t) * (size_t)(n.start[nv] > 0 ? n.start[nv] : 1));
      if (n.col == NULL) {
        break;
      }
    }
  }
  free(mark);
  n.corner_start = inc_start;
  n.corners = inc;
  const size_t neb = (size_t)(ne > 0 ? ne : 1);
  n.element_block = malloc(sizeof(int32_t) * 16 * neb);
  n.gradient = malloc(sizeof(double) * 3 * nvb);
  n.dx = malloc(sizeof(double) * 3 * nvb);
  n.trial = malloc(sizeof(double) * 3 * nvb);
  n.normal = malloc(sizeof(double) * 3 * nvb);
  n.kind = malloc(nvb);
  n.friction = calloc(PIOLA_NEWTON_FRICTION_REALS * nvb, sizeof(double));
  n.anchor = calloc(3 * nvb, sizeof(double));
  n.anchor_collider = malloc(sizeof(int32_t) * nvb);
  for (size_t i = 0; i < nvb && n.anchor_collider != NULL; ++i) {
    n.anchor_collider[i] = -1;
  }
  n.element_grad = malloc(sizeof(double) * 12 * neb);
  n.element_hess = malloc(sizeof(double) * 9 * PIOLA_TET_HESSIAN_BLOCKS * neb);
  n.element_energy = malloc(sizeof(double) * neb);
  n.vertex_energy = malloc(sizeof(double) * nvb);
  bool damped = false;
  for (int32_t e = 0; e < ne && !damped; ++e) {
    damped = element_damping(w, st, sc, e) > 0.0;
  }
  n.element_damp = damped ? calloc(PIOLA_NEWTON_DAMP_REALS * neb, sizeof(double)) : NULL;
  /* The body contacts' room: a pair per slot of the contact lists (contact.c, built first). */
  const int64_t slots =
      piola_contacts_active(w) ? (int64_t)w->contacts.vertex_count * PIOLA_CONTACTS_PER_VERTEX : 0;
  bool pairs = slots == 0;
  if (slots > 0 && slots <= INT32_MAX) {
    n.pair_capacity = (int32_t)slots;
    n.pair_vertex = malloc(sizeof(int32_t) * PIOLA_NEWTON_PAIR_INTS * (size_t)slots);
    n.pair_entry = malloc(sizeof(int32_t) * (size_t)slots);
    n.pair_frame = malloc(sizeof(double) * PIOLA_NEWTON_PAIR_REALS * (size_t)slots);
    n.pair_lambda = calloc((size_t)slots, sizeof(double));
    pairs = n.pair_vertex && n.pair_entry && n.pair_frame && n.pair_lambda;
    for (int64_t k = 0; k < slots && pairs; ++k) {
      n.pair_entry[k] = -1;
    }
  }
  if (!n.col || !n.element_block || !n.gradient || !n.dx || !n.trial || !n.normal || !n.kind ||
      !n.friction || !n.anchor || !n.anchor_collider || !n.element_grad || !n.element_hess ||
      !n.element_energy || !n.vertex_energy || (damped && !n.element_damp) || !pairs) {
    piola_solver_newton_free(&n);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t e = 0; e < ne; ++e) {
    const int32_t *q;
    const int corners = element_corners(st, sc, e, &q);
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        int32_t block = -1;
        if (a < corners && b < corners) {
          const int32_t row = n.start[q[a]];
          block = row + piola_lower_bound(n.col + row, n.start[q[a] + 1] - row, q[b]);
        }
        n.element_block[16 * (size_t)e + (size_t)(4 * a + b)] = block;
      }
    }
  }
  piola_status s = piola_multigrid_build(nv, n.start, n.col, w->pool, &n.mg);
  if (s != PIOLA_OK) {
    piola_solver_newton_free(&n);
    return s;
  }
  *out = n;
  return PIOLA_OK;
}

/* ---- The CPU reference's stage ----------------------------------------------------------- */

/* Elements per chunk of the per-element loops split among the threads at least, and vertices
 * per chunk of the per-row ones. */
#define NEWTON_ELEMENT_GRAIN 256
#define NEWTON_ROW_GRAIN 512

/* What a pass over the elements computes: their energies (the line search), their gradients
 * too, or their Hessians too. */
typedef enum newton_pass { NEWTON_ENERGY, NEWTON_GRADIENT, NEWTON_HESSIAN } newton_pass;

typedef struct newton_job {
  piola_world *w;
  const double *x;
  double h, inv_h2;
  newton_pass pass;
} newton_job;

/* The place of corner pair (a, b), a <= b, in piola_tet_hessian()'s blocks. */
static int pair_block(int a, int b) {
  static const int first[4] = {0, 4, 7, 9}; /* (a, a) */
  return first[a] + (b - a);
}

/* The directions d of element e's damping at x (see the module comment), for the substep h: per
 * constraint c and corner a, d[4 c + a] = sqrt(k gamma / (2 u)) g_a of the constraint's energy
 * U = k u; zero where the element is undamped or the constraint at rest (below the energy its
 * projection takes for rest, PIOLA_ENERGY_EPSILON per volume for a tet, PIOLA_CLOTH_ENERGY_EPSILON
 * per area for a triangle and for a bend). */
static void damping_directions(const piola_world *w, const double *x, int32_t e, double h,
                               piola_v3 d[8]) {
  const piola_solver_tets *st = &w->solver;
  const piola_solver_cloth *sc = &w->cloth;
  for (int k = 0; k < 8; ++k) {
    d[k] = piola_v3_make(0.0, 0.0, 0.0);
  }
  const double gamma = element_damping(w, st, sc, e) / h;
  if (!(gamma > 0.0)) {
    return;
  }
  const int32_t *q = NULL;
  const int corners = element_corners(st, sc, e, &q);
  piola_v3 c[4];
  for (int a = 0; a < corners; ++a) {
    c[a] = piola_vertex_at(x, q[a]);
  }
  if (e < st->tet_count) {
    const piola_tet_material *mat = &w->materials[st->tet_material[e]].constants;
    piola_tet_damping_directions(mat, piola_m3_at(st->tet_m, e), st->tet_volume[e],
                                 1.0 / mat->compliance, gamma, c, d);
    return;
  }
  piola_v3 g[4];
  double u = 0.0, k = 0.0, at_rest = PIOLA_CLOTH_ENERGY_EPSILON; /* a bend's */
  const int32_t t = e - st->tet_count;
  if (t < sc->tri_count) {
    const piola_cloth_tri_material *mat = &w->cloth_materials[q[3]].tri;
    piola_m2 dm;
    memcpy(dm.m, sc->tri_dm_inv + 4 * (size_t)t, sizeof dm.m);
    k = 1.0 / mat->compliance;
    u = piola_cloth_tri_gradient(mat, dm, sc->tri_area[t], c[0], c[1], c[2], g);
    at_rest = PIOLA_CLOTH_ENERGY_EPSILON * sc->tri_area[t];
  } else {
    const int32_t bend = t - sc->tri_count;
    const piola_cloth_bend_material *mat = &w->cloth_materials[sc->bend_material[bend]].bend;
    const double *r = sc->bend_rest + 6 * (size_t)bend;
    const piola_cloth_bend_rest rest = {{r[0], r[1], r[2], r[3]}, r[4], r[5]};
    k = 1.0 / mat->compliance;
    u = piola_cloth_bend_gradient(&rest, c[0], c[1], c[2], c[3], g);
  }
  const double scale = piola_damping_scale(k, gamma, u, at_rest);
  for (int a = 0; a < corners; ++a) {
    d[a] = piola_v3_scale(g[a], scale);
  }
}

/* Element e's energy at x (J, returned), with its gradients g (units of its stiffness k) and
 * Hessian blocks h as pass asks; writes k (1 / compliance) and its corners' count. */
static double element_energy(const piola_world *w, const double *x, int32_t e, newton_pass pass,
                             piola_v3 *g, piola_m3 *h, double *k, int *corners) {
  const piola_solver_tets *st = &w->solver;
  const piola_solver_cloth *sc = &w->cloth;
  const int32_t *q = NULL;
  *corners = element_corners(st, sc, e, &q);
  const piola_v3 x0 = piola_vertex_at(x, q[0]), x1 = piola_vertex_at(x, q[1]),
                 x2 = piola_vertex_at(x, q[2]);
  if (e < st->tet_count) {
    const piola_tet_material *mat = &w->materials[st->tet_material[e]].constants;
    const piola_m3 m = piola_m3_at(st->tet_m, e);
    const piola_v3 x3 = piola_vertex_at(x, q[3]);
    *k = 1.0 / mat->compliance;
    return *k * (pass == NEWTON_ENERGY ? piola_tet_energy(mat, m, st->tet_volume[e], x0, x1, x2, x3)
                 : pass == NEWTON_HESSIAN
                     ? piola_tet_hessian(mat, m, st->tet_volume[e], x0, x1, x2, x3, g, h)
                     : piola_tet_gradient(mat, m, st->tet_volume[e], x0, x1, x2, x3, g));
  }
  const int32_t t = e - st->tet_count;
  if (t < sc->tri_count) {
    const piola_cloth_tri_material *mat = &w->cloth_materials[q[3]].tri;
    piola_m2 dm;
    memcpy(dm.m, sc->tri_dm_inv + 4 * (size_t)t, sizeof dm.m);
    *k = 1.0 / mat->compliance;
    return *k * (pass == NEWTON_ENERGY
                     ? piola_cloth_tri_energy(mat, dm, sc->tri_area[t], x0, x1, x2)
                 : pass == NEWTON_HESSIAN
                     ? piola_cloth_tri_hessian(mat, dm, sc->tri_area[t], x0, x1, x2, g, h)
                     : piola_cloth_tri_gradient(mat, dm, sc->tri_area[t], x0, x1, x2, g));
  }
  const int32_t bend = t - sc->tri_count;
  const piola_cloth_bend_material *mat = &w->cloth_materials[sc->bend_material[bend]].bend;
  const double *r = sc->bend_rest + 6 * (size_t)bend;
  const piola_cloth_bend_rest rest = {{r[0], r[1], r[2], r[3]}, r[4], r[5]};
  const piola_v3 x3 = piola_vertex_at(x, q[3]);
  *k = 1.0 / mat->compliance;
  if (pass == NEWTON_ENERGY) {
    return *k * piola_cloth_bend_energy(&rest, x0, x1, x2, x3);
  }
  if (pass == NEWTON_HESSIAN) {
    return *k * piola_cloth_bend_hessian(&rest, x0, x1, x2, x3, g, h);
  }
  const double u = piola_cloth_bend_gradient(&rest, x0, x1, x2, x3, g);
  return u > 0.0 ? *k * u : 0.0;
}

/* Each element's energy (J) at job->x into element_energy, its gradients (N) into element_grad
 * and its Hessian blocks (N/m) into element_hess as job->pass asks, each element on its own. */
static void elements_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const newton_job *job = ctx;
  piola_world *w = job->w;
  piola_solver_newton *nw = &w->newton;
  for (int32_t e = begin; e < end; ++e) {
    piola_v3 g[4];
    piola_m3 h[PIOLA_TET_HESSIAN_BLOCKS];
    double k = 0.0;
    int corners = 0;
    nw->element_energy[e] =
        element_energy(w, job->x, e, job->pass, job->pass == NEWTON_ENERGY ? NULL : g,
                       job->pass == NEWTON_HESSIAN ? h : NULL, &k, &corners);
    /* the damping's directions: new at a step's start, kept through its line search; the
     * constraints' rates d . (x - x^n) */
    double *de =
        nw->element_damp != NULL ? nw->element_damp + PIOLA_NEWTON_DAMP_REALS * (size_t)e : NULL;
    piola_v3 d[8];
    double rate[2] = {0.0, 0.0};
    if (de != NULL) {
      if (job->pass == NEWTON_ENERGY) {
        for (int j = 0; j < 8; ++j) {
          d[j] = piola_v3_make(de[3 * j], de[3 * j + 1], de[3 * j + 2]);
        }
      } else {
        damping_directions(w, job->x, e, job->h, d);
        for (int j = 0; j < 8; ++j) {
          de[3 * j] = d[j].x;
          de[3 * j + 1] = d[j].y;
          de[3 * j + 2] = d[j].z;
        }
      }
      const int32_t *q = NULL;
      element_corners(&w->solver, &w->cloth, e, &q);
      for (int a = 0; a < corners; ++a) {
        const piola_v3 motion =
            piola_v3_sub(piola_vertex_at(job->x, q[a]), piola_vertex_at(w->x, q[a]));
        rate[0] += piola_v3_dot(d[a], motion);
        rate[1] += piola_v3_dot(d[4 + a], motion);
      }
      nw->element_energy[e] += 0.5 * (rate[0] * rate[0] + rate[1] * rate[1]);
    }
    if (job->pass == NEWTON_ENERGY) {
      continue;
    }
    double *ge = nw->element_grad + 12 * (size_t)e, *he = nw->element_hess + 90 * (size_t)e;
    for (int a = 0; a < corners; ++a) {
      piola_v3 ga = piola_v3_scale(g[a], k);
      if (de != NULL) {
        ga = piola_v3_add(
            ga, piola_v3_add(piola_v3_scale(d[a], rate[0]), piola_v3_scale(d[4 + a], rate[1])));
      }
      ge[3 * a] = ga.x;
      ge[3 * a + 1] = ga.y;
      ge[3 * a + 2] = ga.z;
    }
    if (job->pass != NEWTON_HESSIAN) {
      continue;
    }
    /* a triangle's blocks (0,0) (0,1) (0,2) (1,1) (1,2) (2,2) to the tets' places */
    static const int tri_place[PIOLA_TRI_HESSIAN_BLOCKS] = {0, 1, 2, 4, 5, 7};
    const int blocks = corners == 4 ? PIOLA_TET_HESSIAN_BLOCKS : PIOLA_TRI_HESSIAN_BLOCKS;
    for (int b = 0; b < blocks; ++b) {
      double *hb = he + 9 * (corners == 4 ? b : tri_place[b]);
      for (int c = 0; c < 9; ++c) {
        hb[c] = k * h[b].m[c];
      }
    }
    /* the damping's Hessian: block (a, b) gets d_a d_b^T per constraint */
    for (int a = 0; a < corners && de != NULL; ++a) {
      for (int b = a; b < corners; ++b) {
        double *hb = he + 9 * pair_block(a, b);
        for (int c = 0; c < 2; ++c) {
          const double da[3] = {d[4 * c + a].x, d[4 * c + a].y, d[4 * c + a].z};
          const double db[3] = {d[4 * c + b].x, d[4 * c + b].y, d[4 * c + b].z};
          for (int r = 0; r < 3; ++r) {
            for (int col = 0; col < 3; ++col) {
              hb[3 * r + col] += da[r] * db[col];
            }
          }
        }
      }
    }
  }
}

/* Vertex i's share of G at x besides its elements (J): its inertia and its soft attachments (0 for
 * a fixed vertex). */
static double vertex_energy(const piola_world *w, const double *x, int32_t i, double inv_h2) {
  const piola_solver_newton *nw = &w->newton;
  if (nw->kind[i] == 2) {
    return 0.0;
  }
  const double *xi = x + 3 * (size_t)i, *yi = w->y + 3 * (size_t)i;
  const double d[3] = {xi[0] - yi[0], xi[1] - yi[1], xi[2] - yi[2]};
  double g = 0.5 * inv_h2 / w->w[i] * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  const piola_solver_attachments *at = &w->attach;
  const int32_t k = piola_attachments_of(at, i);
  for (int32_t e = k >= 0 ? at->start[k] : 0; k >= 0 && e < at->start[k + 1]; ++e) {
    const double *t = at->target + 4 * (size_t)e;
    const double r[3] = {xi[0] - t[0], xi[1] - t[1], xi[2] - t[2]};
    g += 0.5 / t[3] * (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  }
  return g + piola_newton_support_energy(w, x, i);
}

/* Row i of the matrix and of the gradient at w->p from the elements' buffers: its inertia, its
 * soft attachments, its elements' blocks (in the fixed order of its corner list), a supported
 * vertex's friction; a fixed vertex's row and column are the identity times its inertia, its
 * gradient zero. */
static void rows_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const newton_job *job = ctx;
  piola_world *w = job->w;
  piola_solver_newton *nw = &w->newton;
  const piola_solver_attachments *at = &w->attach;
  double *val = nw->mg.level[0].a.val;
  const int32_t *diag = nw->mg.level[0].a.diag;
  const bool matrix = job->pass == NEWTON_HESSIAN;
  for (int32_t i = begin; i < end; ++i) {
    double *gi = nw->gradient + 3 * (size_t)i;
    if (matrix) {
      memset(val + 9 * (size_t)nw->start[i], 0,
             sizeof(double) * 9 * (size_t)(nw->start[i + 1] - nw->start[i]));
    }
    memset(gi, 0, 3 * sizeof(double));
    /* the matrix's writes go to a scratch block when it is kept from an earlier step */
    double scratch[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    double *d = matrix ? val + 9 * (size_t)diag[i] : scratch;
    if (nw->kind[i] == 2) {
      const double s = w->w[i] > 0.0 ? job->inv_h2 / w->w[i] : 1.0;
      d[0] = d[4] = d[8] = s;
      nw->vertex_energy[i] = 0.0;
      continue;
    }
    const double k = job->inv_h2 / w->w[i];
    for (int c = 0; c < 3; ++c) {
      gi[c] = k * (w->p[3 * (size_t)i + (size_t)c] - w->y[3 * (size_t)i + (size_t)c]);
      d[4 * c] += k;
    }
    const int32_t ka = piola_attachments_of(at, i);
    for (int32_t e = ka >= 0 ? at->start[ka] : 0; ka >= 0 && e < at->start[ka + 1]; ++e) {
      const double *t = at->target + 4 * (size_t)e;
      piola_v3 ga = piola_v3_make(0.0, 0.0, 0.0);
      double kk = 0.0;
      piola_attachment_block(piola_vertex_at(w->p, i), piola_v3_make(t[0], t[1], t[2]), t[3], &ga,
                             &kk);
      gi[0] += ga.x;
      gi[1] += ga.y;
      gi[2] += ga.z;
      d[0] += kk;
      d[4] += kk;
      d[8] += kk;
    }
    for (int32_t e = nw->corner_start[i]; e < nw->corner_start[i + 1]; ++e) {
      const int32_t t = nw->corners[e] >> 2, a = nw->corners[e] & 3;
      const int32_t *q;
      const int corners = element_corners(&w->solver, &w->cloth, t, &q);
      const double *gt = nw->element_grad + 12 * (size_t)t + 3 * (size_t)a;
      const double *ht = nw->element_hess + 90 * (size_t)t;
      gi[0] += gt[0];
      gi[1] += gt[1];
      gi[2] += gt[2];
      for (int b = 0; b < corners && matrix; ++b) {
        if (nw->kind[q[b]] == 2) {
          continue; /* a fixed column */
        }
        double *v = val + 9 * (size_t)nw->element_block[16 * (size_t)t + (size_t)(4 * a + b)];
        const double *hb = ht + 9 * pair_block(a < b ? a : b, a < b ? b : a);
        if (a <= b) {
          for (int c = 0; c < 9; ++c) {
            v[c] += hb[c];
          }
        } else { /* H_ab = H_ba^T */
          for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) {
              v[3 * r + c] += hb[3 * c + r];
            }
          }
        }
      }
    }
    piola_newton_support_row(w, i, gi, d);
    nw->vertex_energy[i] = vertex_energy(w, w->p, i, job->inv_h2);
  }
}

/* The substep's incremental potential G at positions x (J): the inertia of the vertices not
 * fixed, the elements' energies with their damping's dissipation (its directions held) and the
 * soft attachments', summed in a fixed order. */
static double potential(piola_world *w, const double *x, double h) {
  piola_solver_newton *nw = &w->newton;
  const double inv_h2 = 1.0 / (h * h);
  newton_job job = {.w = w, .x = x, .h = h, .inv_h2 = inv_h2, .pass = NEWTON_ENERGY};
  piola_pool_for(w->pool, nw->element_count, NEWTON_ELEMENT_GRAIN, elements_chunk, &job);
  double g = 0.0;
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    g += vertex_energy(w, x, i, inv_h2);
  }
  for (int32_t e = 0; e < nw->element_count; ++e) {
    g += nw->element_energy[e];
  }
  return g + piola_newton_pairs_energy(w, x, NULL);
}

/* The norm of the gradient (N) over what the solve moves: fixed vertices left out, supported ones
 * without their normal part. */
static double filtered_norm(const piola_solver_newton *nw, int32_t nv) {
  double s = 0.0;
  for (int32_t i = 0; i < nv; ++i) {
    const double *g = nw->gradient + 3 * (size_t)i, *n = nw->normal + 3 * (size_t)i;
    if (nw->kind[i] == 2) {
      continue;
    }
    const double d = nw->kind[i] == 1 ? g[0] * n[0] + g[1] * n[1] + g[2] * n[2] : 0.0;
    const double r[3] = {g[0] - d * n[0], g[1] - d * n[1], g[2] - d * n[2]};
    s += r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
  }
  return sqrt(s);
}

void piola_cpu_solve_global(piola_world *w, double h) {
  const bool contacts = piola_contacts_active(w);
  piola_newton_solve(w, h, contacts ? w->contacts.contact_count : NULL,
                     contacts ? w->contacts.contact_triangle : NULL);
}

void piola_newton_solve(piola_world *w, double h, const int32_t *contact_count,
                        const int32_t *contact_triangle) {
  piola_solver_newton *nw = &w->newton;
  const piola_solver_tets *st = &w->solver;
  const piola_solver_attachments *at = &w->attach;
  const int32_t ne = nw->element_count;
  if (w->substep == 0 && w->iteration == 0) {
    nw->cg_iterations = 0;
    nw->newton_steps = 0;
    nw->cg_relative = 0.0;
  }
  if (nw->start == NULL || w->vertex_count == 0) {
    return;
  }
  const int32_t nv = w->vertex_count;
  const double inv_h2 = 1.0 / (h * h);
  /* What each vertex is in the solve: fixed (pinned, or held by a hard attachment on its
   * target), supported (along its collider's normal) or free. */
  for (int32_t i = 0; i < nv; ++i) {
    const double *support = st->support + 4 * (size_t)i;
    const double n2 = support[0] * support[0] + support[1] * support[1] + support[2] * support[2];
    nw->kind[i] = !(w->w[i] > 0.0) ? 2 : (support[3] >= 0.0 && n2 > 0.0) ? 1 : 0;
    memcpy(nw->normal + 3 * (size_t)i, support, 3 * sizeof(double));
    piola_newton_support_start(w, i, h);
  }
  for (int32_t k = 0; k < at->vertex_count; ++k) {
    const int32_t i = at->vertex[k];
    for (int32_t e = at->start[k]; e < at->start[k + 1]; ++e) {
      const double *t = at->target + 4 * (size_t)e;
      if (!(t[3] > 0.0) && w->w[i] > 0.0) {
        memcpy(w->p + 3 * (size_t)i, t, 3 * sizeof(double));
        nw->kind[i] = 2;
      }
    }
  }
  /* The gradient and the matrix at p: the elements on their own, then each row from them. The
   * Hessian and the hierarchy are set up at the substep's first iteration; a later iteration
   * keeps them (a chord Newton step; MGPBD's lazy setup, Li et al. 2025) while the last step was
   * taken whole and the gradient fell to at most PIOLA_NEWTON_KEEP of its last norm, which
   * halves an iteration's cost where the Hessian hardly changes within the substep, and sets
   * them up again where it does (impacts, contacts taking hold, large rotations). */
  piola_newton_gather_pairs(w, h, contact_count, contact_triangle);
  newton_job job = {.w = w, .x = w->p, .h = h, .inv_h2 = inv_h2, .pass = NEWTON_HESSIAN};
  bool fresh = w->iteration == 0 || nw->refresh;
  double pairs_g = 0.0; /* the pairs' part of G at p */
  if (!fresh) {
    job.pass = NEWTON_GRADIENT;
    piola_pool_for(w->pool, ne, NEWTON_ELEMENT_GRAIN, elements_chunk, &job);
    piola_pool_for(w->pool, nv, NEWTON_ROW_GRAIN, rows_chunk, &job);
    pairs_g = piola_newton_pairs_energy(w, w->p, nw->gradient);
    fresh = !(filtered_norm(nw, nv) <= PIOLA_NEWTON_KEEP * nw->gradient_norm);
    job.pass = fresh ? NEWTON_HESSIAN : NEWTON_GRADIENT;
  }
  if (fresh) {
    piola_pool_for(w->pool, ne, NEWTON_ELEMENT_GRAIN, elements_chunk, &job);
    piola_pool_for(w->pool, nv, NEWTON_ROW_GRAIN, rows_chunk, &job);
    pairs_g = piola_newton_pairs_energy(w, w->p, nw->gradient);
  }
  nw->gradient_norm = filtered_norm(nw, nv);
  double g0 = 0.0;
  for (int32_t i = 0; i < nv; ++i) {
    g0 += nw->vertex_energy[i];
  }
  for (int32_t e = 0; e < ne; ++e) {
    g0 += nw->element_energy[e];
  }
  g0 += pairs_g;
  /* The Newton step: H dx = -g by multigrid-preconditioned conjugate gradients, the pairs'
   * Hessian the solve's coupling. */
  nw->mg.term = piola_newton_pair_term;
  nw->mg.term_ctx = nw;
  nw->mg.term_count = nw->pair_count;
  if (fresh) {
    piola_multigrid_setup(&nw->mg, w->p);
  }
  for (size_t i = 0; i < 3 * (size_t)nv; ++i) {
    nw->trial[i] = -nw->gradient[i];
  }
  double relative = 0.0;
  nw->cg_iterations +=
      piola_multigrid_solve(&nw->mg, nw->trial, nw->kind, nw->normal, PIOLA_MULTIGRID_CG_TOLERANCE,
                            PIOLA_MULTIGRID_CG_MAX, nw->dx, &relative);
  nw->cg_relative = fmax(nw->cg_relative, relative);
  nw->newton_steps++;
  piola_newton_support_limit(w);
  /* The line search along dx. */
  double slope = 0.0;
  for (size_t i = 0; i < 3 * (size_t)nv; ++i) {
    slope += nw->gradient[i] * nw->dx[i];
  }
  double alpha = 0.0;
  if (slope < 0.0) { /* else converged to rounding */
    for (int k = 0; k <= PIOLA_NEWTON_HALVINGS; ++k) {
      const double a = ldexp(1.0, -k);
      for (size_t i = 0; i < 3 * (size_t)nv; ++i) {
        nw->trial[i] = w->p[i] + a * nw->dx[i];
      }
      if (potential(w, nw->trial, h) <= g0 + 1e-4 * a * slope) {
        memcpy(w->p, nw->trial, sizeof(double) * 3 * (size_t)nv);
        alpha = a;
        break;
      }
    }
  }
  nw->refresh = alpha < 1.0;
  piola_newton_keep_pair_forces(w, alpha);
  piola_newton_hold_supported(w, alpha, inv_h2);
  if (w->iteration == w->def.iterations - 1) {
    piola_newton_record_supports(w, inv_h2);
    piola_newton_follow_anchors(w);
  }
}

piola_status piola_newton_begin_step(piola_world *w) {
  piola_solver_newton *nw = &w->newton;
  const int32_t n = 6 * w->collider_count;
  if (n > nw->collider_solve_force_capacity) {
    double *r = realloc(nw->collider_solve_force, sizeof *r * (size_t)n);
    if (r == NULL) {
      piola_log(&w->def.logger, PIOLA_LOG_ERROR,
                "piola_world_step: no memory for the colliders' records of the solve (%zu bytes)",
                sizeof *r * (size_t)n);
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    nw->collider_solve_force = r;
    nw->collider_solve_force_capacity = n;
  }
  if (n > 0) {
    memset(nw->collider_solve_force, 0, sizeof(double) * (size_t)n);
  }
  nw->pair_count = 0;
  return PIOLA_OK;
}
