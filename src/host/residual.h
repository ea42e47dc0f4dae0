/* Piola's convergence measure (residual.c): the residual of the last substep's implicit step. */
#ifndef PIOLA_RESIDUAL_H
#define PIOLA_RESIDUAL_H

#include "piola/piola.h"

#include "piola_shared.h"
#include "piola_tet.h"

#include <stdint.h>

typedef struct piola_world piola_world;

/* The residual of the world's last substep at positions x (3 per vertex) with the tet matrices
 * tet_m (9 per tet) (see residual.c): piola_stats.relative_residual and coarse_residual, and the
 * body slot with the largest coarse residual and that value (-1 and 0 without bodies measured).
 * All 0 (slot -1) while no step's prediction belongs to the state (before the first step, after
 * positions, velocities or bodies changed, after a state was loaded). */
typedef struct piola_residual {
  double relative, coarse;
  int32_t worst_slot;
  double worst_coarse;
} piola_residual;

piola_status piola_world_residual(const piola_world *w, const double *x, const double *tet_m,
                                  piola_residual *out);

/* The material damping of XPBD's damped projection (kernels/piola_tet.h, Macklin et al. 2016,
 * Eq. 26) at its fixed point, for a constraint of energy U = k u with gradients g of u: the force
 * k gamma G g / (2 u), G = g . (x - x^n), gamma = damping / h, is d (d . (x - x^n)) with
 * d = sqrt(k gamma / (2 u)) g. piola_damping_scale() is that factor (the square root of
 * piola_constraint_damping_factor, kernels/piola_shared.h), 0 at or below `at_rest`,
 * the energy the projection takes for rest (it does not project there; g / sqrt(u) of rounding
 * alone would be unbounded). */
double piola_damping_scale(double k, double gamma, double u, double at_rest);

/* A tet's damping directions at x[0..3]: per constraint c (the whole energy, or its mu and lambda
 * terms for a split material, as piola_tet_solve projects them) and corner a, d[4 c + a]; zero
 * where a constraint is at rest (psi <= PIOLA_ENERGY_EPSILON) and for c = 1 without a split. k is
 * the material's stiffness (1 / compliance). */
void piola_tet_damping_directions(const piola_tet_material *mat, piola_m3 m, double volume,
                                  double k, double gamma, const piola_v3 x[4], piola_v3 d[8]);

#endif /* PIOLA_RESIDUAL_H */
