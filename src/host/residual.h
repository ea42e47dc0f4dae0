/* Piola's convergence measure (residual.c): the residual of the last substep's implicit step. */
#ifndef PIOLA_RESIDUAL_H
#define PIOLA_RESIDUAL_H

#include "piola/piola.h"

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

#endif /* PIOLA_RESIDUAL_H */
