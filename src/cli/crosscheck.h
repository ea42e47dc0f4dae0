/* The cross-check of two worlds built alike (the CPU reference and an OpenCL device): both are
 * stepped in lock-step and compared after every step. Shared by `piola crosscheck` and the
 * parity tests, so both measure the same thing. */
#ifndef PIOLA_CLI_CROSSCHECK_H
#define PIOLA_CLI_CROSSCHECK_H

#include "piola/piola.h"

typedef struct crosscheck_sample {
  int32_t step;
  double max_relative; /* largest vertex distance / bounding-box diagonal of the reference */
  double rms_relative; /* root mean square vertex distance / the same diagonal */
} crosscheck_sample;

typedef struct crosscheck_pair {
  piola_world *reference; /* usually the CPU reference */
  piola_world *candidate; /* usually OpenCL */
  const piola_body_id *reference_bodies;
  const piola_body_id *candidate_bodies;
  int32_t body_count;
} crosscheck_pair;

/* Compares the current positions of the two worlds. */
piola_status crosscheck_compare(const crosscheck_pair *pair, crosscheck_sample *out);

/* Steps both worlds `steps` times, filling samples[0 .. steps) (samples may be NULL) and the
 * worst max_relative in *worst. `progress`, when not NULL, is called after each step. */
piola_status crosscheck_run(const crosscheck_pair *pair, int32_t steps, crosscheck_sample *samples,
                            double *worst, void (*progress)(const crosscheck_sample *s, void *user),
                            void *user);

typedef struct scene scene;

/* `piola crosscheck --resync` (crosscheck_resync.c): steps the two scenes `steps` times, the
 * candidate loading the reference's state before every step, judges each step's deviation
 * against `tolerance` (or, where the two decided a contact differently, the contact thickness
 * over the scene's diagonal; beyond both, twice the reference's own sensitivity from nudged
 * starts), prints every `every`-th step and each failed or otherwise judged one, and writes the
 * series to `json` (may be NULL). Returns the command's exit status. */
int crosscheck_resync(scene *reference, scene *candidate, float thickness, int32_t steps,
                      int32_t every, float tolerance, const char *json);

#endif /* PIOLA_CLI_CROSSCHECK_H */
