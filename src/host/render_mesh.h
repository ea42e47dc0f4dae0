/* Piola render meshes (render_mesh.c): detail vertices carried by a body's surface. */
#ifndef PIOLA_RENDER_MESH_H
#define PIOLA_RENDER_MESH_H

#include "piola/piola.h"

#include <stdbool.h>
#include <stdint.h>

/* A render mesh (render_mesh.c): detail vertices embedded over a body's collision surface
 * (kernels/piola_render.h). */
#define PIOLA_RENDER_BUFFERS 9
typedef struct piola_render_mesh {
  piola_body_id body;
  int32_t count;       /* detail vertices */
  int32_t *triangle;   /* per detail vertex: the index of its triangle in the body's surface */
  double *coordinates; /* 4 per detail vertex: barycentric u, v, w and the offset d (m) */
  int32_t
      *triangle_sv; /* 3 per surface triangle of the body: its corners' surface-vertex indices */
  int32_t *incident_start, *incident; /* per surface vertex of the body: its triangles, ascending */
  void *device[PIOLA_RENDER_BUFFERS]; /* the OpenCL backend's buffers; NULL on the CPU reference */
} piola_render_mesh;

/* Frees the world's render meshes. */
void piola_render_meshes_free(piola_world *w);

#endif /* PIOLA_RENDER_MESH_H */
