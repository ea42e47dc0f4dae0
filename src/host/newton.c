/* Piola global Newton step: the multigrid scheme (PIOLA_SCHEME_MULTIGRID).
 *
 * Each substep minimizes the incremental potential of implicit Euler,
 *   G(x) = sum_i m_i / (2 h^2) |x_i - y_i|^2 + sum of the elements' energies,
 * y the predicted positions of PREDICT (w->y), the same step a converged XPBD or vertex block
 * descent step takes (the energies and their parameters are the XPBD scheme's, U = V Psi(F),
 * E = 1 / compliance). Each iteration of the substep is one projected Newton step on the whole
 * of G (Teran, Sifakis, Irving, Fedkiw 2005, Sec. 4):
 *   (M / h^2 + sum_e H_e) dx = -grad G,
 * every element Hessian H_e projected to the positive semidefinite cone (piola_tet_hessian) and
 * set up at the substep's first iteration (kept while full steps succeed, see below),
 * solved by conjugate gradients preconditioned by the aggregation multigrid of multigrid.c to
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
 * in Cloth Simulation", Sec. 5.3) and moves freely along its surface; colliders and body
 * contacts then project as in the XPBD step, after each iteration (world.c).
 */
#include "world.h"

#include "newton.h"

#include "piola_attach.h"
#include "piola_hessian.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void piola_solver_newton_free(piola_solver_newton *n) {
  free(n->start);
  free(n->col);
  free(n->tet_block);
  piola_multigrid_free(&n->mg);
  free(n->gradient);
  free(n->dx);
  free(n->trial);
  free(n->normal);
  free(n->kind);
  free(n->corner_start);
  free(n->corners);
  free(n->tet_grad);
  free(n->tet_hess);
  free(n->tet_energy);
  free(n->vertex_energy);
  memset(n, 0, sizeof *n);
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

piola_status piola_solver_newton_build(const piola_world *w, const piola_solver_tets *st,
                                       piola_solver_newton *out) {
  memset(out, 0, sizeof *out);
  if (w->def.iteration_scheme != PIOLA_SCHEME_MULTIGRID) {
    return PIOLA_OK;
  }
  piola_solver_newton n;
  memset(&n, 0, sizeof n);
  const int32_t nv = w->vertex_count, nt = st->tet_count;
  const size_t nvb = (size_t)(nv > 0 ? nv : 1);
  n.vertex_count = nv;
  /* Each vertex's tets, then its neighbours through them (itself included), sorted. */
  int32_t *inc_start = calloc(nvb + 1, sizeof(int32_t));
  int32_t *inc = malloc(sizeof(int32_t) * (size_t)(nt > 0 ? 4 * nt : 1));
  int32_t *mark = malloc(sizeof(int32_t) * nvb);
  n.start = calloc(nvb + 1, sizeof(int32_t));
  if (!inc_start || !inc || !mark || !n.start) {
    free(inc_start);
    free(inc);
    free(mark);
    piola_solver_newton_free(&n);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t t = 0; t < nt; ++t) {
    for (int k = 0; k < 4; ++k) {
      inc_start[st->tet_vertices[4 * (size_t)t + k] + 1]++;
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
    for (int32_t t = 0; t < nt; ++t) {
      for (int k = 0; k < 4; ++k) {
        inc[fill[st->tet_vertices[4 * (size_t)t + k]]++] = 4 * t + k;
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
        const int32_t *q = st->tet_vertices + 4 * (size_t)(inc[e] >> 2);
        for (int k = 0; k < 4; ++k) {
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
  n.tet_block = malloc(sizeof(int32_t) * 16 * (size_t)(nt > 0 ? nt : 1));
  n.gradient = malloc(sizeof(double) * 3 * nvb);
  n.dx = malloc(sizeof(double) * 3 * nvb);
  n.trial = malloc(sizeof(double) * 3 * nvb);
  n.normal = malloc(sizeof(double) * 3 * nvb);
  n.kind = malloc(nvb);
  const size_t ntb = (size_t)(nt > 0 ? nt : 1);
  n.tet_grad = malloc(sizeof(double) * 12 * ntb);
  n.tet_hess = malloc(sizeof(double) * 9 * PIOLA_TET_HESSIAN_BLOCKS * ntb);
  n.tet_energy = malloc(sizeof(double) * ntb);
  n.vertex_energy = malloc(sizeof(double) * nvb);
  if (!n.col || !n.tet_block || !n.gradient || !n.dx || !n.trial || !n.normal || !n.kind ||
      !n.tet_grad || !n.tet_hess || !n.tet_energy || !n.vertex_energy) {
    piola_solver_newton_free(&n);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t t = 0; t < nt; ++t) {
    const int32_t *q = st->tet_vertices + 4 * (size_t)t;
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        const int32_t row = n.start[q[a]];
        n.tet_block[16 * (size_t)t + (size_t)(4 * a + b)] =
            row + piola_lower_bound(n.col + row, n.start[q[a] + 1] - row, q[b]);
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

/* Tets per chunk of the per-tet loops split among the threads at least, and vertices per chunk
 * of the per-row ones. */
#define NEWTON_TET_GRAIN 256
#define NEWTON_ROW_GRAIN 512

/* What a pass over the tets computes: their energies (the line search), their gradients too, or
 * their Hessians too. */
typedef enum newton_pass { NEWTON_ENERGY, NEWTON_GRADIENT, NEWTON_HESSIAN } newton_pass;

typedef struct newton_job {
  piola_world *w;
  const double *x;
  double inv_h2;
  newton_pass pass;
} newton_job;

/* Each tet's energy (J) at job->x into tet_energy, its gradients (N) into tet_grad and its
 * Hessian blocks (N/m) into tet_hess as job->pass asks, each tet on its own. */
static void tets_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const newton_job *job = ctx;
  piola_world *w = job->w;
  piola_solver_newton *nw = &w->newton;
  const piola_solver_tets *st = &w->solver;
  for (int32_t t = begin; t < end; ++t) {
    const int32_t *q = st->tet_vertices + 4 * (size_t)t;
    const piola_tet_material *mat = &w->materials[st->tet_material[t]].constants;
    const double e = 1.0 / mat->compliance;
    const piola_m3 m = piola_m3_at(st->tet_m, t);
    const piola_v3 x0 = piola_vertex_at(job->x, q[0]), x1 = piola_vertex_at(job->x, q[1]),
                   x2 = piola_vertex_at(job->x, q[2]), x3 = piola_vertex_at(job->x, q[3]);
    if (job->pass == NEWTON_ENERGY) {
      nw->tet_energy[t] = e * piola_tet_energy(mat, m, st->tet_volume[t], x0, x1, x2, x3);
      continue;
    }
    piola_v3 g[4];
    piola_m3 h[PIOLA_TET_HESSIAN_BLOCKS];
    nw->tet_energy[t] =
        e * (job->pass == NEWTON_HESSIAN
                 ? piola_tet_hessian(mat, m, st->tet_volume[t], x0, x1, x2, x3, g, h)
                 : piola_tet_gradient(mat, m, st->tet_volume[t], x0, x1, x2, x3, g));
    double *gt = nw->tet_grad + 12 * (size_t)t, *ht = nw->tet_hess + 90 * (size_t)t;
    for (int a = 0; a < 4; ++a) {
      gt[3 * a] = e * g[a].x;
      gt[3 * a + 1] = e * g[a].y;
      gt[3 * a + 2] = e * g[a].z;
    }
    for (int k = 0; k < PIOLA_TET_HESSIAN_BLOCKS && job->pass == NEWTON_HESSIAN; ++k) {
      for (int c = 0; c < 9; ++c) {
        ht[9 * k + c] = e * h[k].m[c];
      }
    }
  }
}

/* The place of corner pair (a, b), a <= b, in piola_tet_hessian()'s blocks. */
static int pair_block(int a, int b) {
  static const int first[4] = {0, 4, 7, 9}; /* (a, a) */
  return first[a] + (b - a);
}

/* Vertex i's share of G at x besides its tets (J): its inertia and its soft attachments (0 for a
 * fixed vertex). */
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
  return g;
}

/* Row i of the matrix and of the gradient at w->p from the tets' buffers: its inertia, its soft
 * attachments, its tets' blocks (in the fixed order of its corner list); a fixed vertex's row and
 * column are the identity times its inertia, its gradient zero. */
static void rows_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const newton_job *job = ctx;
  piola_world *w = job->w;
  piola_solver_newton *nw = &w->newton;
  const piola_solver_tets *st = &w->solver;
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
    nw->vertex_energy[i] = vertex_energy(w, w->p, i, job->inv_h2);
    /* the matrix's writes go to a scratch block when it is kept from an earlier step */
    double scratch[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    double *d = matrix ? val + 9 * (size_t)diag[i] : scratch;
    if (nw->kind[i] == 2) {
      const double s = w->w[i] > 0.0 ? job->inv_h2 / w->w[i] : 1.0;
      d[0] = d[4] = d[8] = s;
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
      const int32_t *q = st->tet_vertices + 4 * (size_t)t;
      const double *gt = nw->tet_grad + 12 * (size_t)t + 3 * (size_t)a;
      const double *ht = nw->tet_hess + 90 * (size_t)t;
      gi[0] += gt[0];
      gi[1] += gt[1];
      gi[2] += gt[2];
      for (int b = 0; b < 4 && matrix; ++b) {
        if (nw->kind[q[b]] == 2) {
          continue; /* a fixed column */
        }
        double *v = val + 9 * (size_t)nw->tet_block[16 * (size_t)t + (size_t)(4 * a + b)];
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
  }
}

/* The substep's incremental potential G at positions x (J): the inertia of the vertices not
 * fixed, the tets' energies and the soft attachments', summed in a fixed order. */
static double potential(piola_world *w, const double *x, double inv_h2) {
  piola_solver_newton *nw = &w->newton;
  newton_job job = {.w = w, .x = x, .inv_h2 = inv_h2, .pass = NEWTON_ENERGY};
  piola_pool_for(w->pool, w->solver.tet_count, NEWTON_TET_GRAIN, tets_chunk, &job);
  double g = 0.0;
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    g += vertex_energy(w, x, i, inv_h2);
  }
  for (int32_t t = 0; t < w->solver.tet_count; ++t) {
    g += nw->tet_energy[t];
  }
  return g;
}

/* The motion the solve held back at each supported vertex (m, along -normal): the Newton step
 * the vertex's own block would take into its collider under the force the filter took out,
 * max(0, -n.r / n.H_ii n) with r = -(g + H alpha dx) its row of the residual, kept as the
 * support's held motion (piola_tet_support), so that the next COLLIDE pushes the vertex and
 * spends friction as it would have without the support, and the vertex stays supported while
 * the body presses on the collider (and leaves it when it pulls away). */
static void hold_supported(piola_world *w, double alpha) {
  const piola_solver_newton *nw = &w->newton;
  const double *val = nw->mg.level[0].a.val;
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    if (nw->kind[i] != 1) {
      continue;
    }
    double r[3];
    for (int c = 0; c < 3; ++c) {
      r[c] = -nw->gradient[3 * (size_t)i + (size_t)c];
    }
    for (int32_t k = nw->start[i]; k < nw->start[i + 1]; ++k) {
      const double *v = val + 9 * (size_t)k, *dxj = nw->dx + 3 * (size_t)nw->col[k];
      for (int a = 0; a < 3; ++a) {
        r[a] -= alpha * (v[3 * a] * dxj[0] + v[3 * a + 1] * dxj[1] + v[3 * a + 2] * dxj[2]);
      }
    }
    const double *n = nw->normal + 3 * (size_t)i, *d = val + 9 * (size_t)nw->mg.level[0].a.diag[i];
    double nhn = 0.0;
    for (int a = 0; a < 3; ++a) {
      nhn += n[a] * (d[3 * a] * n[0] + d[3 * a + 1] * n[1] + d[3 * a + 2] * n[2]);
    }
    const double into = -(n[0] * r[0] + n[1] * r[1] + n[2] * r[2]);
    w->solver.support[4 * (size_t)i + 3] = into > 0.0 && nhn > 0.0 ? into / nhn : 0.0;
  }
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
  piola_solver_newton *nw = &w->newton;
  const piola_solver_tets *st = &w->solver;
  const piola_solver_attachments *at = &w->attach;
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
  /* The gradient and the matrix at p: the tets on their own, then each row from them. The
   * Hessian and the hierarchy are set up at the substep's first iteration; a later iteration
   * keeps them (a chord Newton step; MGPBD's lazy setup, Li et al. 2025) while the last step was
   * taken whole and the gradient fell to at most PIOLA_NEWTON_KEEP of its last norm, which
   * halves an iteration's cost where the Hessian hardly changes within the substep, and sets
   * them up again where it does (impacts, contacts taking hold, large rotations). */
  newton_job job = {.w = w, .x = w->p, .inv_h2 = inv_h2, .pass = NEWTON_HESSIAN};
  bool fresh = w->iteration == 0 || nw->refresh;
  if (!fresh) {
    job.pass = NEWTON_GRADIENT;
    piola_pool_for(w->pool, st->tet_count, NEWTON_TET_GRAIN, tets_chunk, &job);
    piola_pool_for(w->pool, nv, NEWTON_ROW_GRAIN, rows_chunk, &job);
    fresh = !(filtered_norm(nw, nv) <= PIOLA_NEWTON_KEEP * nw->gradient_norm);
    job.pass = fresh ? NEWTON_HESSIAN : NEWTON_GRADIENT;
  }
  if (fresh) {
    piola_pool_for(w->pool, st->tet_count, NEWTON_TET_GRAIN, tets_chunk, &job);
    piola_pool_for(w->pool, nv, NEWTON_ROW_GRAIN, rows_chunk, &job);
  }
  nw->gradient_norm = filtered_norm(nw, nv);
  double g0 = 0.0;
  for (int32_t i = 0; i < nv; ++i) {
    g0 += nw->vertex_energy[i];
  }
  for (int32_t t = 0; t < st->tet_count; ++t) {
    g0 += nw->tet_energy[t];
  }
  /* The Newton step: H dx = -g by multigrid-preconditioned conjugate gradients. */
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
      if (potential(w, nw->trial, inv_h2) <= g0 + 1e-4 * a * slope) {
        memcpy(w->p, nw->trial, sizeof(double) * 3 * (size_t)nv);
        alpha = a;
        break;
      }
    }
  }
  nw->refresh = alpha < 1.0;
  hold_supported(w, alpha);
}
