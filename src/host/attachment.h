/* Piola attachments (attachment.c): vertices pulled to targets the application moves. */
#ifndef PIOLA_ATTACHMENT_H
#define PIOLA_ATTACHMENT_H

#include "piola/piola.h"

#include <stdbool.h>
#include <stdint.h>

/* The attachments behind the ids (slot by slot, w->attachment_ids), and the solver's arrays built
 * from the live ones, sorted by world vertex then slot; vertex i of `vertex` has the entries
 * start[i] .. start[i + 1]. */
typedef struct piola_attachment_slot {
  piola_body_id body;
  int32_t vertex; /* body-local */
  double target[3];
  double compliance; /* m/N */
} piola_attachment_slot;

#define PIOLA_ATTACH_BUFFERS 4
typedef struct piola_solver_attachments {
  int32_t count;        /* entries */
  int32_t vertex_count; /* distinct vertices */
  int32_t *start, *vertex;
  double *target;                     /* 4 per entry: target xyz (m), compliance (m/N) */
  double *lambda;                     /* per entry */
  void *device[PIOLA_ATTACH_BUFFERS]; /* the OpenCL backend's buffers */
  int32_t device_capacity[2];         /* entries, vertices the buffers hold */
} piola_solver_attachments;

/* Attachments (attachment.c): rebuilds w->attach from the slots (and uploads it on OpenCL);
 * the CPU reference's stage; frees everything. */
piola_status piola_attachments_build(piola_world *w);
/* The entry of vertex i in w->attach's vertex list (sorted by vertex), or -1 if it has none. */
int32_t piola_attachments_of(const piola_solver_attachments *at, int32_t i);
void piola_cpu_attachments(piola_world *w, double h);
void piola_attachments_free(piola_world *w);
#endif /* PIOLA_ATTACHMENT_H */
