/* Piola mesh and SDF colliders on the host (collider_mesh.c): a mesh's or a distance grid's data
 * as the solver reads it (kernels/piola_mesh.h), built once when the collider is added, and the
 * world's array of every collider's shape data. */
#ifndef PIOLA_COLLIDER_MESH_H
#define PIOLA_COLLIDER_MESH_H

#include "piola/piola.h"

#include "piola_mesh.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One collider's shape data: `count` float4 entries (4 floats each, malloc'd), in the layout of
 * kernels/piola_mesh.h with indices from its own start; for a mesh also its box, whether it is
 * closed, its counts and its wall's thickness (0 when closed). */
typedef struct piola_shape_data {
  float *entries;
  int32_t count;
  int32_t node_count, triangle_count;
  bool closed;
  float lo[3], hi[3];
  float thickness;
} piola_shape_data;

void piola_shape_data_free(piola_shape_data *d);

/* Checks a mesh shape and builds its hierarchy and triangles (an open mesh's wall `thickness`
 * m); a reason on failure (nothing allocated). */
piola_status piola_mesh_data_build(const piola_mesh_shape *m, float thickness,
                                   piola_shape_data *out, char *reason, size_t rn);

/* Checks an SDF shape and copies its distances. */
piola_status piola_sdf_data_build(const piola_sdf_shape *g, piola_shape_data *out, char *reason,
                                  size_t rn);

/* Appends d's entries to the world's shape data; *first: where they start. */
piola_status piola_world_shapes_append(piola_world *w, const piola_shape_data *d, int32_t *first,
                                       char *reason, size_t rn);

/* Drops the entries of collider record `removed` (already out of w->colliders) and moves the
 * other records' ranges down. */
void piola_world_shapes_remove(piola_world *w, const piola_collider_data *removed);

#endif /* PIOLA_COLLIDER_MESH_H */
