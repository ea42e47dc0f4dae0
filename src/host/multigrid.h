/* Piola multigrid (multigrid.c): conjugate gradients preconditioned by an aggregation multigrid
 * over rigid clusters, for the symmetric positive definite 3x3-block matrices of the global
 * Newton step (newton.c, PIOLA_SCHEME_MULTIGRID).
 *
 * The structure (the levels' patterns and aggregates) is built once per mesh topology; the
 * values (the coarse matrices, the smoothers' blocks and the coarsest factors) are set up
 * again for every matrix. */
#ifndef PIOLA_MULTIGRID_H
#define PIOLA_MULTIGRID_H

#include "piola/piola.h"

#include "thread_pool.h"

#include <stdint.h>

/* The most unknowns of a coarsest group that a coupling's terms join by default (a dense factor of
 * m^2 doubles, m^3 / 3 operations a setup): eight bodies' coarsest levels of 24 clusters. */
#define PIOLA_MG_GROUP_UNKNOWNS (8 * 6 * 24)

/* Levels at most (the finest included). */
#define PIOLA_MG_MAX_LEVELS 12

/* A square sparse matrix of bs x bs blocks (bs 3 or 6), by block rows: row i's blocks are
 * start[i] .. start[i + 1] - 1, in increasing column col[k], each bs * bs values row-major at
 * val + k bs^2; diag[i] is the index of row i's diagonal block (every row has one). */
typedef struct piola_bsr {
  int32_t n, bs;
  int32_t *start, *col, *diag;
  double *val;
} piola_bsr;

/* One term of a coupling B outside the finest matrix's pattern (the body contacts of
 * newton_contact.c): B += (w w^T) (x) K over the term's four finest nodes, K a symmetric positive
 * semidefinite 3 x 3 (row-major); a weight of 0 leaves its node out. */
typedef struct piola_mg_term {
  int32_t node[4];
  double weight[4];
  double k[9];
} piola_mg_term;

/* One level: its matrix, its smoother, and the way down to the next (none on the coarsest). */
typedef struct piola_mg_level {
  piola_bsr a;
  double *smoother;      /* per row, the inverse of its l1 block (bs * bs) */
  double *position;      /* per node, the point its rigid motions turn about (m) */
  int32_t *aggregate;    /* per node, its node on the next level, or -1 (isolated: not coarsened) */
  double *prolong;       /* per node, the block bs x bs_next of the prolongation */
  int32_t *coarse_block; /* per block of `a`, the next level's block it adds to, or -1 */
  int32_t *member_start, *members; /* per node of the next level, the nodes of its aggregate */
  double *x, *b, *r;               /* work vectors (n bs) */
  /* The coupling's terms on this level (set up with the values, where there are terms): per term
   * its four nodes here (-1: none; levels after the finest) and the prolongations from their
   * unknowns to the finest motion (3 x bs each, row-major); per node the block the terms add to
   * its l1 block (bs x bs). */
  int32_t *term_node;
  double *term_g, *term_diag;
} piola_mg_level;

typedef struct piola_multigrid {
  int32_t level_count;
  piola_mg_level level[PIOLA_MG_MAX_LEVELS];
  /* The coarsest level's connected components (the bodies' last clusters): component c is nodes
   * component_nodes[component_start[c] ..]; node_component, per node, its component. */
  int32_t component_count;
  int32_t *component_start, *component_nodes, *node_component;
  /* The coarsest level's groups, each solved by one dense Cholesky factor: the components that
   * the terms join (up to group_unknowns_max unknowns a group, PIOLA_MG_GROUP_UNKNOWNS from the
   * build), or one each. Group g is
   * components group_components[group_start[g] ..], its factor (m x m lower, row-major, m its
   * nodes times bs, in the order of its components' nodes) at factor + factor_start[g];
   * node_place, per node, its row of blocks in its group; component_group, per component, its
   * group. Set up with the values. */
  int32_t group_count, group_unknowns_max; /* the most unknowns the terms join into a group */
  int32_t *group_start, *group_components, *node_place, *component_group;
  int64_t *factor_start;
  double *factor, *dense_b;
  int64_t factor_capacity; /* doubles */
  int32_t dense_capacity;  /* doubles */
  /* PCG's vectors on the finest level (n 3 each) */
  double *cg_r, *cg_z, *cg_p, *cg_q;
  /* The coupling B the conjugate gradients add to the finest matrix's products: term_count terms
   * (0: none), each written by term(term_ctx, k, ...) when it is needed, the caller's through
   * setup and solve. Each level of the V-cycle sees its Galerkin product (in its residuals, its
   * smoother's blocks and, on the coarsest level, in the factors of the groups of bodies it
   * joins): a body resting on another is held by it on every level, as it is in the step. */
  void (*term)(const void *ctx, int32_t k, piola_mg_term *out); /* writes term k */
  const void *term_ctx;
  int32_t term_count;
  /* The terms the V-cycle sees (term_count at the last setup; 0 where the room for them could
   * not be had, the V-cycle then being the one of A alone) and the room for them. */
  int32_t coupled_terms, term_capacity;
  piola_pool *pool;
} piola_multigrid;

/* The structure of the hierarchy over the pattern of an n x n block matrix of 3x3 blocks
 * (start, col as in piola_bsr; every row holds its diagonal). The finest level's values
 * (mg->level[0].a.val) are the caller's to fill before piola_multigrid_setup(). All or nothing:
 * out of memory leaves *mg empty. */
piola_status piola_multigrid_build(int32_t n, const int32_t *start, const int32_t *col,
                                   piola_pool *pool, piola_multigrid *mg);
void piola_multigrid_free(piola_multigrid *mg);

/* The values of the hierarchy for the finest matrix now in level[0].a.val, whose nodes stand at
 * `positions` (m, 3 per node): the rigid motions of each cluster about its centroid span the
 * next level (unsmoothed aggregation with the rigid-body modes as the near null space: Vanek,
 * Mandel, Brezina 1996; coarse matrices by the Galerkin product P^T A P), and the coarsest
 * level's groups and factors, with the Galerkin product of mg's terms' coupling there. */
void piola_multigrid_setup(piola_multigrid *mg, const double *positions);

/* out += B x for the coupling of mg's terms, term by term. */
void piola_multigrid_terms_product(const piola_multigrid *mg, const double *x, double *out);

/* Solves (A + B) x = b (B: mg's terms) by conjugate gradients preconditioned by one
 * V-cycle of A per iteration, x from
 * zero, in the subspace the filter leaves: per node kind[i] 0 (free), 1 (no motion along the
 * unit normal[3 i]) or 2 (fixed; its row and column of A must be the identity times a
 * positive number). Stops when |r| <= tolerance |b| (filtered) or after max_iterations;
 * returns the iterations, writes |r| / |b| to *relative. Deterministic: every sum in a fixed
 * order. */
int32_t piola_multigrid_solve(piola_multigrid *mg, const double *b, const uint8_t *kind,
                              const double *normal, double tolerance, int32_t max_iterations,
                              double *x, double *relative);

#endif /* PIOLA_MULTIGRID_H */
