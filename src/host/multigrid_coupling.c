/* Piola multigrid: the coupling of terms (multigrid.h, piola_multigrid.term; the body contacts of
 * newton_contact.c) on every level of the hierarchy of multigrid.c, and the coarsest level's
 * groups.
 *
 * A coupling B = sum over terms of (w w^T) (x) K lies outside the finest matrix's pattern, and
 * the bodies it joins are apart in the hierarchy. Its Galerkin product on each level is carried by
 * the terms themselves: each term's nodes on the level are the clusters its vertices fall in, and
 * the prolongation from a cluster's six unknowns to a vertex's motion is the product of the
 * levels' prolongations down to it (Vanek, Mandel, Brezina 1996: P_l^T ... P_0^T B P_0 ... P_l).
 * So every level's residuals subtract B_l x term by term, its l1 smoother blocks take B_l's
 * blocks (Baker, Falgout, Kolev, Yang 2011), and on the coarsest level the components (bodies)
 * that terms join are one group, solved by one dense Cholesky factor, up to group_unknowns_max
 * unknowns; a term over two groups that the bound keeps apart is left out of both there. The
 * V-cycle is then the one of A + B, so a body resting on another is held by it on every level,
 * as it is in the step. Every loop runs in a fixed order: the results are bitwise repeatable.
 */
#include "multigrid_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Term k's nodes on level li (-1: none) and their prolongations g (3 x bs, row-major) from the
 * level's unknowns to the finest motion: on the finest level its own nodes (the identity). */
static void term_on_level(const piola_multigrid *mg, int32_t li, int32_t k, const piola_mg_term *t,
                          int32_t node[4], const double *g[4]) {
  static const double identity[9] = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0};
  const piola_mg_level *l = &mg->level[li];
  for (int j = 0; j < 4; ++j) {
    if (li == 0) {
      node[j] = t->weight[j] != 0.0 ? t->node[j] : -1;
      g[j] = identity;
    } else {
      node[j] = l->term_node[4 * (size_t)k + (size_t)j];
      g[j] = l->term_g + (4 * (size_t)k + (size_t)j) * 18;
    }
  }
}

/* Block (j, m) of term t on a level of block size bs: w_j w_m g_j^T K g_m, into out (bs x bs). */
static void term_block(const piola_mg_term *t, int32_t bs, const double *const g[4], int j, int m,
                       double *out) {
  double kg[18]; /* K g_m */
  for (int r = 0; r < 3; ++r) {
    for (int q = 0; q < bs; ++q) {
      kg[r * bs + q] = t->k[3 * r] * g[m][q] + t->k[3 * r + 1] * g[m][bs + q] +
                       t->k[3 * r + 2] * g[m][2 * bs + q];
    }
  }
  const double w = t->weight[j] * t->weight[m];
  for (int r = 0; r < bs; ++r) {
    for (int c = 0; c < bs; ++c) {
      out[r * bs + c] =
          w * (g[j][r] * kg[c] + g[j][bs + r] * kg[bs + c] + g[j][2 * bs + r] * kg[2 * bs + c]);
    }
  }
}

/* out -= B_li x (x and out the level's vectors): each coupled term through its nodes there. */
void piola_mg_terms_residual(const piola_multigrid *mg, int32_t li, const double *x, double *out) {
  const int32_t bs = mg->level[li].a.bs;
  for (int32_t k = 0; k < mg->coupled_terms; ++k) {
    piola_mg_term t;
    mg->term(mg->term_ctx, k, &t);
    int32_t node[4];
    const double *g[4];
    term_on_level(mg, li, k, &t, node, g);
    double r[3] = {0.0, 0.0, 0.0};
    for (int j = 0; j < 4; ++j) {
      for (int a = 0; a < 3 && node[j] >= 0; ++a) {
        double v = 0.0;
        for (int q = 0; q < bs; ++q) {
          v += g[j][a * bs + q] * x[(size_t)node[j] * (size_t)bs + (size_t)q];
        }
        r[a] += t.weight[j] * v;
      }
    }
    const double y[3] = {t.k[0] * r[0] + t.k[1] * r[1] + t.k[2] * r[2],
                         t.k[3] * r[0] + t.k[4] * r[1] + t.k[5] * r[2],
                         t.k[6] * r[0] + t.k[7] * r[1] + t.k[8] * r[2]};
    for (int j = 0; j < 4; ++j) {
      for (int q = 0; q < bs && node[j] >= 0; ++q) {
        out[(size_t)node[j] * (size_t)bs + (size_t)q] -=
            t.weight[j] * (g[j][q] * y[0] + g[j][bs + q] * y[1] + g[j][2 * bs + q] * y[2]);
      }
    }
  }
}

/* The terms on every level for the prolongations just set up: their nodes and prolongations on
 * the levels after the finest, and each level's blocks of them for its smoother (a block between
 * two nodes adds its absolute row sums to the first's diagonal, as l1_inverse does). Sets
 * mg->coupled_terms: the term count, or 0 where the room for them could not be had. */
void piola_mg_terms_setup(piola_multigrid *mg) {
  mg->coupled_terms = 0;
  const int32_t count = mg->term_count;
  if (count == 0) {
    return;
  }
  if (count > mg->term_capacity) {
    bool ok = true;
    for (int32_t li = 0; li < mg->level_count && ok; ++li) {
      piola_mg_level *l = &mg->level[li];
      if (l->term_diag == NULL) {
        l->term_diag = malloc(sizeof(double) * (size_t)(l->a.n > 0 ? l->a.n : 1) *
                              (size_t)(l->a.bs * l->a.bs));
        ok = l->term_diag != NULL;
      }
      if (li > 0 && ok) {
        int32_t *node = realloc(l->term_node, sizeof(int32_t) * 4 * (size_t)count);
        l->term_node = node != NULL ? node : l->term_node;
        double *g = node != NULL ? realloc(l->term_g, sizeof(double) * 72 * (size_t)count) : NULL;
        l->term_g = g != NULL ? g : l->term_g;
        ok = node != NULL && g != NULL;
      }
    }
    if (!ok) {
      return;
    }
    mg->term_capacity = count;
  }
  for (int32_t k = 0; k < count; ++k) {
    piola_mg_term t;
    mg->term(mg->term_ctx, k, &t);
    for (int j = 0; j < 4; ++j) {
      double g[18];
      int32_t node = t.weight[j] != 0.0 ? t.node[j] : -1;
      for (int32_t li = 1; li < mg->level_count; ++li) {
        const piola_mg_level *f = &mg->level[li - 1];
        if (node >= 0 && f->aggregate[node] >= 0) {
          const double *p = f->prolong + (size_t)node * (size_t)(f->a.bs * 6);
          if (li == 1) {
            memcpy(g, p, sizeof g);
          } else {
            double u[18];
            for (int r = 0; r < 3; ++r) {
              for (int q = 0; q < 6; ++q) {
                double v = 0.0;
                for (int c = 0; c < 6; ++c) {
                  v += g[r * 6 + c] * p[c * 6 + q];
                }
                u[r * 6 + q] = v;
              }
            }
            memcpy(g, u, sizeof g);
          }
          node = f->aggregate[node];
        } else {
          node = -1; /* a level left it uncoarsened: no coarse motion moves it */
          memset(g, 0, sizeof g);
        }
        piola_mg_level *l = &mg->level[li];
        l->term_node[4 * (size_t)k + (size_t)j] = node;
        memcpy(l->term_g + (4 * (size_t)k + (size_t)j) * 18, g, sizeof g);
      }
    }
  }
  mg->coupled_terms = count;
  for (int32_t li = 0; li < mg->level_count; ++li) {
    piola_mg_level *l = &mg->level[li];
    const int32_t bs = l->a.bs, b2 = bs * bs;
    memset(l->term_diag, 0, sizeof(double) * (size_t)l->a.n * (size_t)b2);
    for (int32_t k = 0; k < count; ++k) {
      piola_mg_term t;
      mg->term(mg->term_ctx, k, &t);
      int32_t node[4];
      const double *g[4];
      term_on_level(mg, li, k, &t, node, g);
      for (int j = 0; j < 4; ++j) {
        for (int m = 0; m < 4 && node[j] >= 0; ++m) {
          if (node[m] < 0) {
            continue;
          }
          double b[36];
          term_block(&t, bs, g, j, m, b);
          double *d = l->term_diag + (size_t)node[j] * (size_t)b2;
          for (int r = 0; r < bs; ++r) {
            for (int c = 0; c < bs; ++c) {
              if (node[m] == node[j]) {
                d[r * bs + c] += b[r * bs + c];
              } else {
                d[r * bs + r] += fabs(b[r * bs + c]);
              }
            }
          }
        }
      }
    }
  }
}

/* The unknowns of coarsest group g. */
static int32_t group_unknowns(const piola_multigrid *mg, int32_t g) {
  int32_t nodes = 0;
  for (int32_t k = mg->group_start[g]; k < mg->group_start[g + 1]; ++k) {
    const int32_t c = mg->group_components[k];
    nodes += mg->component_start[c + 1] - mg->component_start[c];
  }
  return nodes * mg->level[mg->level_count - 1].a.bs;
}

/* The coarsest level's groups: with `join`, the components that mg's terms couple, joined term by
 * term while a group stays within mg->group_unknowns_max; else one per component. Sets
 * component_group, group_start, group_components, node_place and factor_start; returns false
 * where the factors or the dense vector need more room than they have. */
static bool coarsest_groups(piola_multigrid *mg, bool join, int64_t *factor_doubles,
                            int32_t *dense_doubles) {
  const piola_bsr *a = &mg->level[mg->level_count - 1].a;
  const int32_t nc = mg->component_count, bs = a->bs;
  int32_t *parent = mg->component_group, *size = mg->group_start;
  for (int32_t c = 0; c < nc; ++c) {
    parent[c] = c;
    size[c] = (mg->component_start[c + 1] - mg->component_start[c]) * bs;
  }
  const int32_t last = mg->level_count - 1;
  for (int32_t k = 0; k < mg->coupled_terms && join; ++k) {
    piola_mg_term t;
    mg->term(mg->term_ctx, k, &t);
    int32_t node[4];
    const double *g[4];
    term_on_level(mg, last, k, &t, node, g);
    int32_t root = -1;
    for (int j = 0; j < 4; ++j) {
      if (node[j] < 0) {
        continue;
      }
      int32_t r = mg->node_component[node[j]];
      while (parent[r] != r) {
        r = parent[r];
      }
      if (root < 0 || r == root) {
        root = r;
      } else if (size[root] + size[r] <= mg->group_unknowns_max) {
        const int32_t lo = r < root ? r : root, hi = r < root ? root : r;
        parent[hi] = lo; /* the lowest component is the root: a fixed order */
        size[lo] += size[hi];
        root = lo;
      }
    }
  }
  /* groups numbered by their lowest component; parent[c] < c for any other */
  int32_t groups = 0;
  for (int32_t c = 0; c < nc; ++c) {
    int32_t r = c;
    while (parent[r] != r && parent[r] >= 0) {
      r = parent[r];
    }
    parent[c] = r == c ? -(++groups) : parent[r];
  }
  for (int32_t c = 0; c < nc; ++c) {
    parent[c] = -parent[c] - 1;
  }
  mg->group_count = groups;
  memset(mg->group_start, 0, sizeof(int32_t) * ((size_t)groups + 1));
  for (int32_t c = 0; c < nc; ++c) {
    mg->group_start[parent[c] + 1]++;
  }
  for (int32_t g = 0; g < groups; ++g) {
    mg->group_start[g + 1] += mg->group_start[g];
  }
  int32_t *fill = mg->node_place; /* per group, its next component (the places come after) */
  memcpy(fill, mg->group_start, sizeof(int32_t) * (size_t)groups);
  for (int32_t c = 0; c < nc; ++c) {
    mg->group_components[fill[parent[c]]++] = c;
  }
  int64_t total = 0;
  int32_t largest = 0;
  mg->factor_start[0] = 0;
  for (int32_t g = 0; g < groups; ++g) {
    int32_t place = 0;
    for (int32_t k = mg->group_start[g]; k < mg->group_start[g + 1]; ++k) {
      const int32_t c = mg->group_components[k];
      for (int32_t j = mg->component_start[c]; j < mg->component_start[c + 1]; ++j) {
        mg->node_place[mg->component_nodes[j]] = place++;
      }
    }
    const int64_t m = (int64_t)place * bs;
    total += m * m;
    largest = place * bs > largest ? place * bs : largest;
    mg->factor_start[g + 1] = total;
  }
  *factor_doubles = total;
  *dense_doubles = largest;
  return total <= mg->factor_capacity && largest <= mg->dense_capacity;
}

/* The coarsest level's dense factors: each group's blocks of the coarsest matrix, the Galerkin
 * product of the terms whose coarse nodes it holds (G_j^T w_j w_l K G_l for each two of a term's
 * nodes), factored. Where joined groups need more room than there is, each component stays a
 * group of its own (the preconditioner then leaves the coupling out, as without terms). */
void piola_mg_coarsest_factors(piola_multigrid *mg) {
  const piola_bsr *a = &mg->level[mg->level_count - 1].a;
  const int32_t bs = a->bs;
  int64_t need = 0;
  int32_t dense = 0;
  if (!coarsest_groups(mg, mg->coupled_terms > 0, &need, &dense)) {
    double *f = need > mg->factor_capacity ? realloc(mg->factor, sizeof(double) * (size_t)need)
                                           : mg->factor;
    if (f != NULL) {
      mg->factor = f;
      mg->factor_capacity = need > mg->factor_capacity ? need : mg->factor_capacity;
    }
    double *d = dense > mg->dense_capacity ? realloc(mg->dense_b, sizeof(double) * (size_t)dense)
                                           : mg->dense_b;
    if (d != NULL) {
      mg->dense_b = d;
      mg->dense_capacity = dense > mg->dense_capacity ? dense : mg->dense_capacity;
    }
    if (f == NULL || d == NULL) {
      (void)coarsest_groups(mg, false, &need, &dense); /* fits the room of the build */
    }
  }
  memset(mg->factor, 0, sizeof(double) * (size_t)mg->factor_start[mg->group_count]);
  for (int32_t i = 0; i < a->n; ++i) {
    const int32_t g = mg->component_group[mg->node_component[i]];
    const int64_t m = group_unknowns(mg, g);
    double *d = mg->factor + mg->factor_start[g];
    const int32_t pi = mg->node_place[i];
    for (int32_t k = a->start[i]; k < a->start[i + 1]; ++k) {
      const int32_t pj = mg->node_place[a->col[k]];
      const double *v = a->val + (size_t)k * (size_t)(bs * bs);
      for (int32_t r = 0; r < bs; ++r) {
        for (int32_t c = 0; c < bs; ++c) {
          d[(pi * bs + r) * m + pj * bs + c] = v[r * bs + c];
        }
      }
    }
  }
  const int32_t last = mg->level_count - 1;
  for (int32_t k = 0; k < mg->coupled_terms; ++k) {
    piola_mg_term t;
    mg->term(mg->term_ctx, k, &t);
    int32_t node[4], group = -1;
    const double *g[4];
    term_on_level(mg, last, k, &t, node, g);
    for (int j = 0; j < 4 && group != -2; ++j) { /* the group its nodes share, if one */
      const int32_t gj = node[j] >= 0 ? mg->component_group[mg->node_component[node[j]]] : -1;
      group = gj < 0 || group == gj ? group : group == -1 ? gj : -2;
    }
    if (group < 0) {
      continue; /* in no group, or in two that were not joined: left out */
    }
    const int64_t m = group_unknowns(mg, group);
    double *d = mg->factor + mg->factor_start[group];
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 4 && node[j] >= 0; ++l) {
        if (node[l] < 0) {
          continue;
        }
        double b[36];
        term_block(&t, bs, g, j, l, b);
        const int64_t pj = mg->node_place[node[j]], pl = mg->node_place[node[l]];
        for (int r = 0; r < bs; ++r) {
          for (int c = 0; c < bs; ++c) {
            d[(pj * bs + r) * m + pl * bs + c] += b[r * bs + c];
          }
        }
      }
    }
  }
  for (int32_t g = 0; g < mg->group_count; ++g) {
    piola_mg_cholesky(mg->factor + mg->factor_start[g], group_unknowns(mg, g));
  }
}

/* The coarsest level: x = A^-1 b by the groups' factors. */
void piola_mg_coarsest_solve(piola_multigrid *mg, const double *b, double *x) {
  const int32_t bs = mg->level[mg->level_count - 1].a.bs;
  for (int32_t g = 0; g < mg->group_count; ++g) {
    for (int32_t k = mg->group_start[g]; k < mg->group_start[g + 1]; ++k) {
      const int32_t c = mg->group_components[k];
      for (int32_t j = mg->component_start[c]; j < mg->component_start[c + 1]; ++j) {
        const int32_t i = mg->component_nodes[j];
        memcpy(mg->dense_b + (size_t)mg->node_place[i] * (size_t)bs, b + (size_t)i * (size_t)bs,
               sizeof(double) * (size_t)bs);
      }
    }
    piola_mg_cholesky_solve(mg->factor + mg->factor_start[g], group_unknowns(mg, g), mg->dense_b);
    for (int32_t k = mg->group_start[g]; k < mg->group_start[g + 1]; ++k) {
      const int32_t c = mg->group_components[k];
      for (int32_t j = mg->component_start[c]; j < mg->component_start[c + 1]; ++j) {
        const int32_t i = mg->component_nodes[j];
        memcpy(x + (size_t)i * (size_t)bs, mg->dense_b + (size_t)mg->node_place[i] * (size_t)bs,
               sizeof(double) * (size_t)bs);
      }
    }
  }
}

void piola_multigrid_terms_product(const piola_multigrid *mg, const double *x, double *out) {
  for (int32_t k = 0; k < mg->term_count; ++k) {
    piola_mg_term term;
    mg->term(mg->term_ctx, k, &term);
    const piola_mg_term *t = &term;
    double r[3] = {0.0, 0.0, 0.0};
    for (int j = 0; j < 4; ++j) {
      const double *xj = x + 3 * (size_t)t->node[j];
      for (int a = 0; a < 3; ++a) {
        r[a] += t->weight[j] * xj[a];
      }
    }
    const double y[3] = {t->k[0] * r[0] + t->k[1] * r[1] + t->k[2] * r[2],
                         t->k[3] * r[0] + t->k[4] * r[1] + t->k[5] * r[2],
                         t->k[6] * r[0] + t->k[7] * r[1] + t->k[8] * r[2]};
    for (int j = 0; j < 4; ++j) {
      double *oj = out + 3 * (size_t)t->node[j];
      for (int a = 0; a < 3; ++a) {
        oj[a] += t->weight[j] * y[a];
      }
    }
  }
}
