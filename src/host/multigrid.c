/* Piola multigrid: conjugate gradients preconditioned by an aggregation multigrid over rigid
 * clusters (multigrid.h), the linear solver of the global Newton step (newton.c).
 *
 * The hierarchy is the unsmoothed aggregation of Vanek, Mandel, Brezina 1996 ("Algebraic
 * multigrid by smoothed aggregation for second and fourth order elliptic problems", Sec. 4: the
 * greedy aggregation of a node with its neighbours) with the near null space of elasticity, the
 * rigid-body modes, in the tentative prolongation: a cluster of vertices becomes one node of six
 * unknowns, the translation t and rotation w of the cluster about its centroid c, each vertex x
 * moving by t + w x (x - c); clusters of clusters carry the same six unknowns down (a child's
 * translation t + w x (c_child - c), its rotation w). The coarse matrices are the Galerkin
 * products P^T A P, so each level is the energy of the step restricted to rigid motions of its
 * clusters: the slow bending and sagging modes that Gauss-Seidel over elements removes last are
 * a few unknowns there. MGPBD (Li et al. 2025, "MGPBD: A Multigrid Accelerated Global XPBD
 * Solver") uses unsmoothed aggregation the same way, as the preconditioner of conjugate
 * gradients, with the structure built once and the values set up per solve.
 *
 * Smoother: l1 block Jacobi (Baker, Falgout, Kolev, Yang 2011, "Multigrid smoothers for
 * ultraparallel computing", Sec. 5: the diagonal block plus the absolute row sums of the
 * off-diagonal blocks), which converges for any symmetric positive definite matrix without a
 * damping factor to tune; PIOLA_MG_SMOOTHING sweeps before and after the coarse correction, so
 * the V-cycle is a symmetric positive definite preconditioner. The coarsest level is solved
 * exactly by a dense Cholesky factor per connected component (a body's last clusters).
 *
 * A coupling outside the matrix's pattern (piola_multigrid.term, the body contacts) enters every
 * level through multigrid_coupling.c, which also forms the coarsest level's groups.
 *
 * Every loop over rows writes its own rows only, and every sum runs in a fixed order, so a
 * solve is bitwise repeatable for any thread count.
 */
#include "multigrid_internal.h"

#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Block Jacobi sweeps before and after the coarse correction. */
#define PIOLA_MG_SMOOTHING 2
/* Coarsening stops once no connected component of a level has more nodes than this. */
#define PIOLA_MG_COARSE_NODES 24
/* Rows per chunk of a level's loops split among the threads at least. */
#define PIOLA_MG_GRAIN 1024

/* ---- Dense helpers ------------------------------------------------------------------------ */

/* In place: the lower Cholesky factor L (L L^T = a) of the symmetric m x m a (row-major). A pivot
 * below 1e-12 of the largest diagonal entry (a singular direction: the rotation of a cluster of
 * one or two vertices, whose right-hand side is zero) is raised to it. */
void piola_mg_cholesky(double *a, int32_t m) {
  double scale = 0.0;
  for (int32_t i = 0; i < m; ++i) {
    scale = fmax(scale, fabs(a[(size_t)i * (size_t)m + (size_t)i]));
  }
  const double floor_pivot = scale > 0.0 ? 1e-12 * scale : 1.0;
  for (int32_t j = 0; j < m; ++j) {
    double *rj = a + (size_t)j * (size_t)m;
    double d = rj[j];
    for (int32_t k = 0; k < j; ++k) {
      d -= rj[k] * rj[k];
    }
    d = sqrt(d > floor_pivot ? d : floor_pivot);
    rj[j] = d;
    for (int32_t i = j + 1; i < m; ++i) {
      double *ri = a + (size_t)i * (size_t)m;
      double s = ri[j];
      for (int32_t k = 0; k < j; ++k) {
        s -= ri[k] * rj[k];
      }
      ri[j] = s / d;
    }
    for (int32_t k = j + 1; k < m; ++k) {
      rj[k] = 0.0;
    }
  }
}

/* x = (L L^T)^-1 x for the factor of piola_mg_cholesky(). */
void piola_mg_cholesky_solve(const double *l, int32_t m, double *x) {
  for (int32_t i = 0; i < m; ++i) {
    double s = x[i];
    for (int32_t k = 0; k < i; ++k) {
      s -= l[(size_t)i * (size_t)m + (size_t)k] * x[k];
    }
    x[i] = s / l[(size_t)i * (size_t)m + (size_t)i];
  }
  for (int32_t i = m - 1; i >= 0; --i) {
    double s = x[i];
    for (int32_t k = i + 1; k < m; ++k) {
      s -= l[(size_t)k * (size_t)m + (size_t)i] * x[k];
    }
    x[i] = s / l[(size_t)i * (size_t)m + (size_t)i];
  }
}

/* out = a^T b c for blocks a (r x p), b (r x r'), c (r' x q), out (p x q) added to. */
static void add_triple(const double *a, int32_t r, int32_t p, const double *b, int32_t r2,
                       const double *c, int32_t q, double *out) {
  double bc[6 * 6]; /* r x q */
  for (int32_t i = 0; i < r; ++i) {
    for (int32_t j = 0; j < q; ++j) {
      double s = 0.0;
      for (int32_t k = 0; k < r2; ++k) {
        s += b[i * r2 + k] * c[k * q + j];
      }
      bc[i * q + j] = s;
    }
  }
  for (int32_t i = 0; i < p; ++i) {
    for (int32_t j = 0; j < q; ++j) {
      double s = 0.0;
      for (int32_t k = 0; k < r; ++k) {
        s += a[k * p + i] * bc[k * q + j];
      }
      out[i * q + j] += s;
    }
  }
}

/* ---- Structure ------------------------------------------------------------------------------ */

static void level_free(piola_mg_level *l) {
  free(l->a.start);
  free(l->a.col);
  free(l->a.diag);
  free(l->a.val);
  free(l->smoother);
  free(l->position);
  free(l->aggregate);
  free(l->prolong);
  free(l->coarse_block);
  free(l->member_start);
  free(l->members);
  free(l->x);
  free(l->b);
  free(l->r);
  free(l->term_node);
  free(l->term_g);
  free(l->term_diag);
  memset(l, 0, sizeof *l);
}

void piola_multigrid_free(piola_multigrid *mg) {
  for (int32_t i = 0; i < mg->level_count; ++i) {
    level_free(&mg->level[i]);
  }
  free(mg->component_start);
  free(mg->component_nodes);
  free(mg->node_component);
  free(mg->group_start);
  free(mg->group_components);
  free(mg->node_place);
  free(mg->component_group);
  free(mg->factor_start);
  free(mg->factor);
  free(mg->dense_b);
  free(mg->cg_r);
  free(mg->cg_z);
  free(mg->cg_p);
  free(mg->cg_q);
  memset(mg, 0, sizeof *mg);
}

/* The arrays of a level of n nodes, bs unknowns each, whose pattern (start, col) it owns. */
static piola_status level_alloc(piola_mg_level *l, int32_t n, int32_t bs, int32_t *start,
                                int32_t *col) {
  l->a.n = n;
  l->a.bs = bs;
  l->a.start = start;
  l->a.col = col;
  const size_t nnz = (size_t)start[n], nb = (size_t)(n > 0 ? n : 1), b2 = (size_t)(bs * bs);
  l->a.diag = malloc(sizeof(int32_t) * nb);
  l->a.val = malloc(sizeof(double) * b2 * (nnz > 0 ? nnz : 1));
  l->smoother = malloc(sizeof(double) * b2 * nb);
  l->position = malloc(sizeof(double) * 3 * nb);
  l->x = malloc(sizeof(double) * (size_t)bs * nb);
  l->b = malloc(sizeof(double) * (size_t)bs * nb);
  l->r = malloc(sizeof(double) * (size_t)bs * nb);
  if (!l->a.diag || !l->a.val || !l->smoother || !l->position || !l->x || !l->b || !l->r) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < n; ++i) {
    l->a.diag[i] = -1;
    for (int32_t k = start[i]; k < start[i + 1]; ++k) {
      if (col[k] == i) {
        l->a.diag[i] = k;
      }
    }
  }
  return PIOLA_OK;
}

/* The greedy aggregation (Vanek et al. 1996, Sec. 4) of a level's pattern, in node order:
 * a node whose neighbours are all free starts a cluster of itself and its neighbours; a node
 * left over joins the cluster of its first neighbour that started or joined one in the first
 * pass; a node with no neighbour (a lone vertex, or a body already one cluster) is not
 * coarsened (-1). Returns the clusters. */
static int32_t aggregate(const piola_bsr *a, int32_t *agg) {
  int32_t count = 0;
  for (int32_t i = 0; i < a->n; ++i) {
    agg[i] = -1;
  }
  for (int32_t i = 0; i < a->n; ++i) {
    bool free_star = a->start[i + 1] - a->start[i] > 1 && agg[i] < 0;
    for (int32_t k = a->start[i]; k < a->start[i + 1] && free_star; ++k) {
      free_star = agg[a->col[k]] < 0;
    }
    if (free_star) {
      for (int32_t k = a->start[i]; k < a->start[i + 1]; ++k) {
        agg[a->col[k]] = count;
      }
      count++;
    }
  }
  /* The leftovers join a first-pass cluster (so clusters grow by one ring at most). */
  int32_t *joined = malloc(sizeof(int32_t) * (size_t)(a->n > 0 ? a->n : 1));
  if (joined == NULL) {
    return -1;
  }
  memcpy(joined, agg, sizeof(int32_t) * (size_t)a->n);
  for (int32_t i = 0; i < a->n; ++i) {
    if (agg[i] >= 0) {
      continue;
    }
    for (int32_t k = a->start[i]; k < a->start[i + 1]; ++k) {
      if (agg[a->col[k]] >= 0) {
        joined[i] = agg[a->col[k]];
        break;
      }
    }
  }
  /* A leftover whose neighbours were all leftovers too (possible only in odd patterns) starts
   * a cluster of its own with them. */
  for (int32_t i = 0; i < a->n; ++i) {
    if (joined[i] < 0 && a->start[i + 1] - a->start[i] > 1) {
      joined[i] = count;
      for (int32_t k = a->start[i]; k < a->start[i + 1]; ++k) {
        if (joined[a->col[k]] < 0) {
          joined[a->col[k]] = count;
        }
      }
      count++;
    }
  }
  memcpy(agg, joined, sizeof(int32_t) * (size_t)a->n);
  free(joined);
  return count;
}

/* The largest connected component of a pattern (nodes), with a work array of n. */
static int32_t largest_component(const piola_bsr *a, int32_t *work, int32_t *stack) {
  int32_t largest = 0;
  for (int32_t i = 0; i < a->n; ++i) {
    work[i] = 0;
  }
  for (int32_t i = 0; i < a->n; ++i) {
    if (work[i]) {
      continue;
    }
    int32_t top = 0, size = 0;
    stack[top++] = i;
    work[i] = 1;
    while (top > 0) {
      const int32_t v = stack[--top];
      size++;
      for (int32_t k = a->start[v]; k < a->start[v + 1]; ++k) {
        if (!work[a->col[k]]) {
          work[a->col[k]] = 1;
          stack[top++] = a->col[k];
        }
      }
    }
    largest = size > largest ? size : largest;
  }
  return largest;
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The next level's pattern from a level and its aggregates (count of them), with the members
 * of each aggregate and the map of the level's blocks to the next level's. */
static piola_status coarsen(piola_mg_level *f, int32_t count, piola_mg_level *c) {
  const piola_bsr *a = &f->a;
  f->member_start = calloc((size_t)count + 1, sizeof(int32_t));
  f->members = malloc(sizeof(int32_t) * (size_t)(a->n > 0 ? a->n : 1));
  f->coarse_block = malloc(sizeof(int32_t) * (size_t)(a->start[a->n] > 0 ? a->start[a->n] : 1));
  f->prolong = malloc(sizeof(double) * (size_t)(a->bs * 6) * (size_t)(a->n > 0 ? a->n : 1));
  int32_t *mark = malloc(sizeof(int32_t) * (size_t)(count > 0 ? count : 1));
  int32_t *cstart = calloc((size_t)count + 1, sizeof(int32_t));
  if (!f->member_start || !f->members || !f->coarse_block || !f->prolong || !mark || !cstart) {
    free(mark);
    free(cstart);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < a->n; ++i) {
    if (f->aggregate[i] >= 0) {
      f->member_start[f->aggregate[i] + 1]++;
    }
  }
  for (int32_t c2 = 0; c2 < count; ++c2) {
    f->member_start[c2 + 1] += f->member_start[c2];
  }
  {
    int32_t *fill = malloc(sizeof(int32_t) * (size_t)(count > 0 ? count : 1));
    if (fill == NULL) {
      free(mark);
      free(cstart);
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(fill, f->member_start, sizeof(int32_t) * (size_t)count);
    for (int32_t i = 0; i < a->n; ++i) {
      if (f->aggregate[i] >= 0) {
        f->members[fill[f->aggregate[i]]++] = i;
      }
    }
    free(fill);
  }
  /* Count, then fill, each coarse row's columns. */
  for (int32_t c2 = 0; c2 < count; ++c2) {
    mark[c2] = -1;
  }
  for (int pass = 0; pass < 2; ++pass) {
    int32_t *ccol = pass == 1 ? c->a.col : NULL;
    for (int32_t r = 0; r < count; ++r) {
      int32_t at = pass == 1 ? cstart[r] : 0;
      for (int32_t m = f->member_start[r]; m < f->member_start[r + 1]; ++m) {
        const int32_t i = f->members[m];
        for (int32_t k = a->start[i]; k < a->start[i + 1]; ++k) {
          const int32_t cj = f->aggregate[a->col[k]];
          if (cj >= 0 && mark[cj] != r) {
            mark[cj] = r;
            if (pass == 1) {
              ccol[at] = cj;
            }
            at++;
          }
        }
      }
      if (pass == 0) {
        cstart[r + 1] = at;
      } else {
        qsort(ccol + cstart[r], (size_t)(cstart[r + 1] - cstart[r]), sizeof(int32_t), cmp_i32);
      }
    }
    if (pass == 0) {
      for (int32_t r = 0; r < count; ++r) {
        cstart[r + 1] += cstart[r];
        mark[r] = -1;
      }
      c->a.col = malloc(sizeof(int32_t) * (size_t)(cstart[count] > 0 ? cstart[count] : 1));
      if (c->a.col == NULL) {
        free(mark);
        free(cstart);
        return PIOLA_ERROR_OUT_OF_MEMORY;
      }
    }
  }
  free(mark);
  int32_t *ccol = c->a.col;
  c->a.col = NULL;
  piola_status s = level_alloc(c, count, 6, cstart, ccol);
  if (s != PIOLA_OK) {
    return s;
  }
  /* Each fine block's coarse block: a binary search in its coarse row. */
  for (int32_t i = 0; i < a->n; ++i) {
    const int32_t ci = f->aggregate[i];
    for (int32_t k = a->start[i]; k < a->start[i + 1]; ++k) {
      const int32_t cj = f->aggregate[a->col[k]];
      f->coarse_block[k] = -1;
      if (ci < 0 || cj < 0) {
        continue;
      }
      f->coarse_block[k] =
          cstart[ci] + piola_lower_bound(ccol + cstart[ci], cstart[ci + 1] - cstart[ci], cj);
    }
  }
  return PIOLA_OK;
}

/* The coarsest level's components, in node order, and room for their factors. */
static piola_status build_components(piola_multigrid *mg) {
  const piola_bsr *a = &mg->level[mg->level_count - 1].a;
  const size_t nb = (size_t)(a->n > 0 ? a->n : 1);
  int32_t *seen = calloc(nb, sizeof(int32_t));
  mg->component_start = malloc(sizeof(int32_t) * (nb + 1));
  mg->component_nodes = malloc(sizeof(int32_t) * nb);
  mg->node_component = malloc(sizeof(int32_t) * nb);
  mg->node_place = malloc(sizeof(int32_t) * nb);
  if (!seen || !mg->component_start || !mg->component_nodes || !mg->node_component ||
      !mg->node_place) {
    free(seen);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t at = 0, count = 0, largest = 0;
  mg->component_start[0] = 0;
  for (int32_t i = 0; i < a->n; ++i) {
    if (seen[i]) {
      continue;
    }
    int32_t head = at;
    mg->component_nodes[at++] = i;
    seen[i] = 1;
    while (head < at) { /* breadth first, then sorted: a fixed order */
      const int32_t v = mg->component_nodes[head++];
      for (int32_t k = a->start[v]; k < a->start[v + 1]; ++k) {
        if (!seen[a->col[k]]) {
          seen[a->col[k]] = 1;
          mg->component_nodes[at++] = a->col[k];
        }
      }
    }
    const int32_t first = mg->component_start[count];
    qsort(mg->component_nodes + first, (size_t)(at - first), sizeof(int32_t), cmp_i32);
    for (int32_t k = first; k < at; ++k) {
      mg->node_component[mg->component_nodes[k]] = count;
    }
    largest = at - first > largest ? at - first : largest;
    mg->component_start[++count] = at;
  }
  free(seen);
  mg->component_count = count;
  const size_t nc = (size_t)count + 1;
  mg->group_start = malloc(sizeof(int32_t) * nc);
  mg->group_components = malloc(sizeof(int32_t) * nc);
  mg->component_group = malloc(sizeof(int32_t) * nc);
  mg->factor_start = malloc(sizeof(int64_t) * nc);
  if (!mg->group_start || !mg->group_components || !mg->component_group || !mg->factor_start) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* room for a factor per component; groups that the terms join take more at their setup */
  int64_t total = 0;
  for (int32_t c = 0; c < count; ++c) {
    const int64_t m = (int64_t)(mg->component_start[c + 1] - mg->component_start[c]) * a->bs;
    total += m * m;
  }
  mg->factor_capacity = total > 0 ? total : 1;
  mg->dense_capacity = largest > 0 ? largest * a->bs : 1;
  mg->factor = malloc(sizeof(double) * (size_t)mg->factor_capacity);
  mg->dense_b = malloc(sizeof(double) * (size_t)mg->dense_capacity);
  return mg->factor && mg->dense_b ? PIOLA_OK : PIOLA_ERROR_OUT_OF_MEMORY;
}

piola_status piola_multigrid_build(int32_t n, const int32_t *start, const int32_t *col,
                                   piola_pool *pool, piola_multigrid *mg) {
  memset(mg, 0, sizeof *mg);
  mg->pool = pool;
  mg->group_unknowns_max = PIOLA_MG_GROUP_UNKNOWNS;
  const size_t nb = (size_t)(n > 0 ? n : 1);
  int32_t *s0 = malloc(sizeof(int32_t) * (nb + 1)),
          *c0 = malloc(sizeof(int32_t) * (start[n] > 0 ? (size_t)start[n] : 1));
  if (!s0 || !c0) {
    free(s0);
    free(c0);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(s0, start, sizeof(int32_t) * ((size_t)n + 1));
  memcpy(c0, col, sizeof(int32_t) * (size_t)start[n]);
  mg->level_count = 1;
  piola_status s = level_alloc(&mg->level[0], n, 3, s0, c0);
  int32_t *work = malloc(sizeof(int32_t) * nb), *stack = malloc(sizeof(int32_t) * nb);
  mg->cg_r = malloc(sizeof(double) * 3 * nb);
  mg->cg_z = malloc(sizeof(double) * 3 * nb);
  mg->cg_p = malloc(sizeof(double) * 3 * nb);
  mg->cg_q = malloc(sizeof(double) * 3 * nb);
  if (!work || !stack || !mg->cg_r || !mg->cg_z || !mg->cg_p || !mg->cg_q) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  while (s == PIOLA_OK && mg->level_count < PIOLA_MG_MAX_LEVELS) {
    piola_mg_level *f = &mg->level[mg->level_count - 1];
    if (largest_component(&f->a, work, stack) <= PIOLA_MG_COARSE_NODES) {
      break;
    }
    f->aggregate = malloc(sizeof(int32_t) * (size_t)(f->a.n > 0 ? f->a.n : 1));
    if (f->aggregate == NULL) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
      break;
    }
    const int32_t count = aggregate(&f->a, f->aggregate);
    if (count < 0) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
      break;
    }
    if (count == 0 || count >= f->a.n) { /* nothing to coarsen (or no progress) */
      free(f->aggregate);
      f->aggregate = NULL;
      break;
    }
    s = coarsen(f, count, &mg->level[mg->level_count]);
    mg->level_count++; /* freed with the rest on failure */
  }
  free(work);
  free(stack);
  if (s == PIOLA_OK) {
    s = build_components(mg);
  }
  if (s != PIOLA_OK) {
    piola_multigrid_free(mg);
  }
  return s;
}

/* ---- Values --------------------------------------------------------------------------------- */

/* The l1 block of row i (its diagonal block plus, on the diagonal, the absolute row sums of
 * its off-diagonal blocks; plus row i's block of `extra`, the coupling's, where not NULL),
 * inverted. */
static void l1_inverse(const piola_bsr *a, int32_t i, const double *extra, double *out) {
  const int32_t bs = a->bs, b2 = bs * bs;
  double d[36];
  memcpy(d, a->val + (size_t)a->diag[i] * (size_t)b2, sizeof(double) * (size_t)b2);
  for (int32_t k = 0; k < b2 && extra != NULL; ++k) {
    d[k] += extra[(size_t)i * (size_t)b2 + (size_t)k];
  }
  for (int32_t k = a->start[i]; k < a->start[i + 1]; ++k) {
    if (k == a->diag[i]) {
      continue;
    }
    const double *v = a->val + (size_t)k * (size_t)b2;
    for (int32_t r = 0; r < bs; ++r) {
      double s = 0.0;
      for (int32_t c = 0; c < bs; ++c) {
        s += fabs(v[r * bs + c]);
      }
      d[r * bs + r] += s;
    }
  }
  piola_mg_cholesky(d, bs);
  for (int32_t c = 0; c < bs; ++c) {
    double e[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    e[c] = 1.0;
    piola_mg_cholesky_solve(d, bs, e);
    for (int32_t r = 0; r < bs; ++r) {
      out[r * bs + c] = e[r];
    }
  }
}

typedef struct rows_job {
  piola_multigrid *mg;
  piola_mg_level *l;
  const double *b, *x;
  double *out;
} rows_job;

static void smoother_rows(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const rows_job *job = ctx;
  const int32_t b2 = job->l->a.bs * job->l->a.bs;
  for (int32_t i = begin; i < end; ++i) {
    l1_inverse(&job->l->a, i, job->mg->coupled_terms > 0 ? job->l->term_diag : NULL,
               job->l->smoother + (size_t)i * (size_t)b2);
  }
}

void piola_multigrid_setup(piola_multigrid *mg, const double *positions) {
  memcpy(mg->level[0].position, positions, sizeof(double) * 3 * (size_t)mg->level[0].a.n);
  for (int32_t li = 0; li + 1 < mg->level_count; ++li) {
    piola_mg_level *f = &mg->level[li], *c = &mg->level[li + 1];
    const int32_t bs = f->a.bs, b2 = bs * bs;
    /* The clusters' centroids, then each member's rigid motions about its cluster's. */
    for (int32_t k = 0; k < c->a.n; ++k) {
      double m[3] = {0.0, 0.0, 0.0};
      const int32_t first = f->member_start[k], end = f->member_start[k + 1];
      for (int32_t j = first; j < end; ++j) {
        for (int e = 0; e < 3; ++e) {
          m[e] += f->position[3 * (size_t)f->members[j] + (size_t)e];
        }
      }
      for (int e = 0; e < 3; ++e) {
        c->position[3 * (size_t)k + (size_t)e] = m[e] / (double)(end > first ? end - first : 1);
      }
    }
    for (int32_t i = 0; i < f->a.n; ++i) {
      double *p = f->prolong + (size_t)i * (size_t)(bs * 6);
      memset(p, 0, sizeof(double) * (size_t)(bs * 6));
      const int32_t ci = f->aggregate[i];
      if (ci < 0) {
        continue;
      }
      const double *xi = f->position + 3 * (size_t)i, *xc = c->position + 3 * (size_t)ci;
      const double r[3] = {xi[0] - xc[0], xi[1] - xc[1], xi[2] - xc[2]};
      /* rows 0..2: u = t + w x r = t - [r]x w; rows 3..5 (six unknowns per node): w */
      p[0 * 6 + 0] = p[1 * 6 + 1] = p[2 * 6 + 2] = 1.0;
      p[0 * 6 + 4] = r[2];
      p[0 * 6 + 5] = -r[1];
      p[1 * 6 + 3] = -r[2];
      p[1 * 6 + 5] = r[0];
      p[2 * 6 + 3] = r[1];
      p[2 * 6 + 4] = -r[0];
      if (bs == 6) {
        p[3 * 6 + 3] = p[4 * 6 + 4] = p[5 * 6 + 5] = 1.0;
      }
    }
    /* The Galerkin product, fine blocks in order. */
    memset(c->a.val, 0, sizeof(double) * 36 * (size_t)c->a.start[c->a.n]);
    for (int32_t i = 0; i < f->a.n; ++i) {
      for (int32_t k = f->a.start[i]; k < f->a.start[i + 1]; ++k) {
        const int32_t ck = f->coarse_block[k];
        if (ck < 0) {
          continue;
        }
        add_triple(
            f->prolong + (size_t)i * (size_t)(bs * 6), bs, 6, f->a.val + (size_t)k * (size_t)b2, bs,
            f->prolong + (size_t)f->a.col[k] * (size_t)(bs * 6), 6, c->a.val + (size_t)ck * 36);
      }
    }
  }
  piola_mg_terms_setup(mg);
  for (int32_t li = 0; li < mg->level_count; ++li) {
    rows_job job = {.mg = mg, .l = &mg->level[li]};
    piola_pool_for(mg->pool, mg->level[li].a.n, PIOLA_MG_GRAIN, smoother_rows, &job);
  }
  piola_mg_coarsest_factors(mg);
}

/* ---- The V-cycle and conjugate gradients ------------------------------------------------ */

/* The row loops below take the block size as a constant (3 on the finest level, 6 below), so
 * that the compiler unrolls their block products: each is one inline body called with 3 or 6,
 * the same operations in the same order either way. */

/* out = b - A x over rows [begin, end) (x NULL: out = b), blocks bs x bs. */
static inline void residual_block_rows(const rows_job *job, int32_t begin, int32_t end,
                                       const int32_t bs) {
  const piola_bsr *a = &job->l->a;
  const int32_t b2 = bs * bs;
  for (int32_t i = begin; i < end; ++i) {
    double s[6];
    for (int32_t r = 0; r < bs; ++r) {
      s[r] = job->b[(size_t)i * (size_t)bs + (size_t)r];
    }
    for (int32_t k = a->start[i]; k < a->start[i + 1] && job->x != NULL; ++k) {
      const double *v = a->val + (size_t)k * (size_t)b2;
      const double *xj = job->x + (size_t)a->col[k] * (size_t)bs;
      for (int32_t r = 0; r < bs; ++r) {
        double t = 0.0;
        for (int32_t c = 0; c < bs; ++c) {
          t += v[r * bs + c] * xj[c];
        }
        s[r] -= t;
      }
    }
    memcpy(job->out + (size_t)i * (size_t)bs, s, sizeof(double) * (size_t)bs);
  }
}

static void residual_rows(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const rows_job *job = ctx;
  if (job->l->a.bs == 3) {
    residual_block_rows(job, begin, end, 3);
  } else {
    residual_block_rows(job, begin, end, 6);
  }
}

/* out = A x over rows [begin, end), blocks bs x bs. */
static inline void product_block_rows(const rows_job *job, int32_t begin, int32_t end,
                                      const int32_t bs) {
  const piola_bsr *a = &job->l->a;
  const int32_t b2 = bs * bs;
  for (int32_t i = begin; i < end; ++i) {
    double s[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int32_t k = a->start[i]; k < a->start[i + 1]; ++k) {
      const double *v = a->val + (size_t)k * (size_t)b2;
      const double *xj = job->x + (size_t)a->col[k] * (size_t)bs;
      for (int32_t r = 0; r < bs; ++r) {
        for (int32_t c = 0; c < bs; ++c) {
          s[r] += v[r * bs + c] * xj[c];
        }
      }
    }
    memcpy(job->out + (size_t)i * (size_t)bs, s, sizeof(double) * (size_t)bs);
  }
}

static void product_rows(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const rows_job *job = ctx;
  if (job->l->a.bs == 3) {
    product_block_rows(job, begin, end, 3);
  } else {
    product_block_rows(job, begin, end, 6);
  }
}

/* x += D^-1 r over rows [begin, end) (the l1 blocks' inverses, bs x bs). */
static inline void smooth_block_rows(const rows_job *job, int32_t begin, int32_t end,
                                     const int32_t bs) {
  const int32_t b2 = bs * bs;
  double *x = job->out;
  for (int32_t i = begin; i < end; ++i) {
    const double *d = job->l->smoother + (size_t)i * (size_t)b2;
    const double *ri = job->b + (size_t)i * (size_t)bs;
    for (int32_t r = 0; r < bs; ++r) {
      double t = 0.0;
      for (int32_t c = 0; c < bs; ++c) {
        t += d[r * bs + c] * ri[c];
      }
      x[(size_t)i * (size_t)bs + (size_t)r] += t;
    }
  }
}

static void smooth_rows(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const rows_job *job = ctx;
  if (job->l->a.bs == 3) {
    smooth_block_rows(job, begin, end, 3);
  } else {
    smooth_block_rows(job, begin, end, 6);
  }
}

static void rows(piola_multigrid *mg, piola_mg_level *l, piola_range_fn *fn, const double *b,
                 const double *x, double *out) {
  rows_job job = {.mg = mg, .l = l, .b = b, .x = x, .out = out};
  piola_pool_for(mg->pool, l->a.n, PIOLA_MG_GRAIN, fn, &job);
}

/* x = V(b) on level li: smoothing, the coarse correction, smoothing (x and b are the level's
 * own vectors on the coarser levels). */
static void vcycle(piola_multigrid *mg, int32_t li, const double *b, double *x) {
  piola_mg_level *l = &mg->level[li];
  const size_t nv = (size_t)l->a.n * (size_t)l->a.bs;
  if (li == mg->level_count - 1) {
    piola_mg_coarsest_solve(mg, b, x);
    return;
  }
  memset(x, 0, sizeof(double) * nv);
  for (int s = 0; s < PIOLA_MG_SMOOTHING; ++s) {
    rows(mg, l, residual_rows, b, s == 0 ? NULL : x, l->r);
    if (s > 0) {
      piola_mg_terms_residual(mg, li, x, l->r);
    }
    rows(mg, l, smooth_rows, l->r, NULL, x);
  }
  rows(mg, l, residual_rows, b, x, l->r);
  piola_mg_terms_residual(mg, li, x, l->r);
  piola_mg_level *c = &mg->level[li + 1];
  const int32_t bs = l->a.bs;
  /* restriction b_c = P^T r, aggregate by aggregate, members in order */
  for (int32_t k = 0; k < c->a.n; ++k) {
    double s[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int32_t m = l->member_start[k]; m < l->member_start[k + 1]; ++m) {
      const int32_t i = l->members[m];
      const double *p = l->prolong + (size_t)i * (size_t)(bs * 6),
                   *ri = l->r + (size_t)i * (size_t)bs;
      for (int32_t r = 0; r < bs; ++r) {
        for (int32_t q = 0; q < 6; ++q) {
          s[q] += p[r * 6 + q] * ri[r];
        }
      }
    }
    memcpy(c->b + 6 * (size_t)k, s, sizeof s);
  }
  vcycle(mg, li + 1, c->b, c->x);
  for (int32_t i = 0; i < l->a.n; ++i) {
    const int32_t ci = l->aggregate[i];
    if (ci < 0) {
      continue;
    }
    const double *p = l->prolong + (size_t)i * (size_t)(bs * 6), *xc = c->x + 6 * (size_t)ci;
    for (int32_t r = 0; r < bs; ++r) {
      double t = 0.0;
      for (int32_t q = 0; q < 6; ++q) {
        t += p[r * 6 + q] * xc[q];
      }
      x[(size_t)i * (size_t)bs + (size_t)r] += t;
    }
  }
  for (int s = 0; s < PIOLA_MG_SMOOTHING; ++s) {
    rows(mg, l, residual_rows, b, x, l->r);
    piola_mg_terms_residual(mg, li, x, l->r);
    rows(mg, l, smooth_rows, l->r, NULL, x);
  }
}

static void filter(int32_t n, const uint8_t *kind, const double *normal, double *v) {
  for (int32_t i = 0; i < n && kind != NULL; ++i) {
    double *vi = v + 3 * (size_t)i;
    if (kind[i] == 2) {
      vi[0] = vi[1] = vi[2] = 0.0;
    } else if (kind[i] == 1) {
      const double *ni = normal + 3 * (size_t)i;
      const double d = vi[0] * ni[0] + vi[1] * ni[1] + vi[2] * ni[2];
      vi[0] -= d * ni[0];
      vi[1] -= d * ni[1];
      vi[2] -= d * ni[2];
    }
  }
}

static double dot(const double *a, const double *b, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) {
    s += a[i] * b[i];
  }
  return s;
}

int32_t piola_multigrid_solve(piola_multigrid *mg, const double *b, const uint8_t *kind,
                              const double *normal, double tolerance, int32_t max_iterations,
                              double *x, double *relative) {
  piola_mg_level *l = &mg->level[0];
  const int32_t n = l->a.n;
  const size_t nv = 3 * (size_t)n;
  double *r = mg->cg_r, *z = mg->cg_z, *p = mg->cg_p, *q = mg->cg_q;
  memset(x, 0, sizeof(double) * nv);
  memcpy(r, b, sizeof(double) * nv);
  filter(n, kind, normal, r);
  const double b_norm = sqrt(dot(r, r, nv));
  *relative = 0.0;
  if (!(b_norm > 0.0)) {
    return 0;
  }
  vcycle(mg, 0, r, z);
  filter(n, kind, normal, z);
  memcpy(p, z, sizeof(double) * nv);
  double rz = dot(r, z, nv);
  int32_t it = 0;
  *relative = 1.0;
  while (it < max_iterations) {
    rows(mg, l, product_rows, NULL, p, q);
    piola_multigrid_terms_product(mg, p, q);
    filter(n, kind, normal, q);
    const double pq = dot(p, q, nv);
    if (!(pq > 0.0) || !(rz > 0.0)) {
      break; /* converged to rounding (or not positive definite: stop where it is) */
    }
    const double alpha = rz / pq;
    for (size_t i = 0; i < nv; ++i) {
      x[i] += alpha * p[i];
      r[i] -= alpha * q[i];
    }
    ++it;
    *relative = sqrt(dot(r, r, nv)) / b_norm;
    if (*relative <= tolerance) {
      break;
    }
    vcycle(mg, 0, r, z);
    filter(n, kind, normal, z);
    const double rz_new = dot(r, z, nv);
    const double beta = rz_new / rz;
    rz = rz_new;
    for (size_t i = 0; i < nv; ++i) {
      p[i] = z[i] + beta * p[i];
    }
  }
  return it;
}
