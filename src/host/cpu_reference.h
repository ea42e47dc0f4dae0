/* Piola CPU reference (cpu_reference.c, contact.c, attachment.c): the stages of the step on the
 * host arrays in double precision, and the energies the statistics report. */
#ifndef PIOLA_CPU_REFERENCE_H
#define PIOLA_CPU_REFERENCE_H

#include "piola/piola.h"

#include <stdint.h>

/* Runs one stage of the step on the host arrays (double precision). h is the substep (s). */
void piola_cpu_stage(piola_world *w, piola_stage stage, double h);

/* Elastic energy (J) over the solver's tets at `positions` (3 per vertex) with the solver's
 * per-tet matrices `tet_m`; counts tets with det F <= 0 into *inverted. */
double piola_tets_energy(const piola_world *w, const double *positions, const double *tet_m,
                         int32_t *inverted);

/* The same from the bodies' own rest data, before the solver arrays exist. */
double piola_bodies_energy(const piola_world *w, const double *positions, int32_t *inverted);

/* Membrane and bending energy (J) of the cloth bodies at `positions`, from their rest data. */
double piola_cloth_energy(const piola_world *w, const double *positions);

#endif /* PIOLA_CPU_REFERENCE_H */
