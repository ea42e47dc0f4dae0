/* Piola colliders on the host (collider.c): the checks and packing of collider defs, the poses
 * behind the collider ids, and their motion over a step. The shapes and their projections are
 * kernels/piola_collide.h. */
#ifndef PIOLA_COLLIDER_H
#define PIOLA_COLLIDER_H

#include "piola/piola.h"

#include "piola_collide.h"

#include <stddef.h>
#include <stdint.h>

/* Checks a collider def and packs it for the solver (normals and axes normalised), at the
 * identity pose at rest. */
piola_status piola_collider_pack(const piola_collider_def *def, piola_collider_data *out,
                                 char *reason, size_t n);

/* A collider's pose in double (the pose at the start of the next step), per slot of
 * w->collider_ids, and where its record is in w->colliders. */
typedef struct piola_collider_slot {
  int32_t dense;              /* index into world->colliders; -1 while the slot is free */
  double position[3];         /* m */
  double rotation[4];         /* unit quaternion (x, y, z, w) */
  double velocity[3];         /* m/s */
  double angular_velocity[3]; /* rad/s */
} piola_collider_slot;

/* Writes a slot's pose into the solver's record (as floats; `posed` unless it is the identity
 * pose at rest). */
void piola_collider_pose_pack(const piola_collider_slot *slot, piola_collider_data *c);

/* After a step: every moving collider takes the pose its velocities led it to over dt. */
void piola_world_advance_colliders(piola_world *w);

#endif /* PIOLA_COLLIDER_H */
