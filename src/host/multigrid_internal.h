/* Piola multigrid's parts (multigrid.c: the hierarchy, the V-cycle and conjugate gradients;
 * multigrid_coupling.c: the coupling's terms on every level and the coarsest level's groups). */
#ifndef PIOLA_MULTIGRID_INTERNAL_H
#define PIOLA_MULTIGRID_INTERNAL_H

#include "multigrid.h"

/* In place: the lower Cholesky factor L (L L^T = a) of the symmetric m x m a (row-major); a pivot
 * below 1e-12 of the largest diagonal entry is raised to it. */
void piola_mg_cholesky(double *a, int32_t m);
/* x = (L L^T)^-1 x for a factor of piola_mg_cholesky(). */
void piola_mg_cholesky_solve(const double *l, int32_t m, double *x);

/* The terms on every level for the prolongations just set up (their nodes, prolongations and
 * smoother blocks); sets mg->coupled_terms (0 where the room for them could not be had). */
void piola_mg_terms_setup(piola_multigrid *mg);
/* out -= B_li x on level li (x and out the level's vectors). */
void piola_mg_terms_residual(const piola_multigrid *mg, int32_t li, const double *x, double *out);
/* The coarsest level's groups and their dense factors. */
void piola_mg_coarsest_factors(piola_multigrid *mg);
/* The coarsest level: x = A^-1 b by the groups' factors. */
void piola_mg_coarsest_solve(piola_multigrid *mg, const double *b, double *x);

#endif /* PIOLA_MULTIGRID_INTERNAL_H */
