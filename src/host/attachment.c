/* Piola attachments: vertices pulled to targets the application moves (the XPBD distance
 * constraint of kernels/piola_attach.h; Macklin, Mueller, Chentanez 2016), the ATTACHMENTS
 * stage of the CPU reference, and the solver arrays both backends read.
 *
 * Ids are generational slots. Before a step whose attachments or bodies changed, the live
 * attachments of live bodies are gathered into arrays sorted by world vertex, then by slot:
 * one pass per attached vertex projects its attachments in that order, on the host and on the
 * device alike. The multipliers start from zero in the first iteration of every substep.
 */
#include "world.h"

#include "piola_attach.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void piola_attachments_free(piola_world *w) {
  w->ops->attachments_release(w, &w->attach);
  free(w->attach.start);
  free(w->attach.vertex);
  free(w->attach.target);
  free(w->attach.lambda);
  memset(&w->attach, 0, sizeof w->attach);
  free(w->attachment_slots);
  w->attachment_slots = NULL;
  w->attachment_slot_capacity = 0;
  piola_id_pool_destroy(&w->attachment_ids);
}

static piola_attachment_slot *attachment_slot(const piola_world *w, piola_attachment_id id) {
  const int32_t slot = piola_id_pool_find(&w->attachment_ids, id.index1, id.generation);
  if (slot < 0) {
    PIOLA_MISUSE(w, "attachment id is valid");
    return NULL;
  }
  return &w->attachment_slots[slot];
}

piola_status piola_world_add_attachment(piola_world *w, piola_body_id body, int32_t vertex,
                                        const float target[3], float compliance,
                                        piola_attachment_id *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_body *b = piola_world_body(w, body);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  if (target == NULL || out == NULL) {
    PIOLA_MISUSE(w, "target != NULL && out != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (vertex < 0 || vertex >= b->vertex_count) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "attachment: vertex %d outside the body's %d vertices", (int)vertex,
              (int)b->vertex_count);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!piola_finite3(target) || !isfinite(compliance)) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "attachment: target and compliance must be finite");
    return PIOLA_ERROR_NON_FINITE;
  }
  if (compliance < 0.0f) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "attachment: compliance must be >= 0 (got %g)",
              (double)compliance);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const int32_t slot = piola_id_pool_next(&w->attachment_ids);
  if (slot < 0 || !piola_grow((void **)&w->attachment_slots, sizeof *w->attachment_slots, slot + 1,
                              &w->attachment_slot_capacity)) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_attachment_slot *a = &w->attachment_slots[slot];
  memset(a, 0, sizeof *a);
  a->body = body;
  a->vertex = vertex;
  for (int k = 0; k < 3; ++k) {
    a->target[k] = target[k];
  }
  a->compliance = compliance;
  w->attachments_dirty = true;
  out->index1 = slot + 1;
  out->generation = piola_id_pool_take(&w->attachment_ids, slot);
  return PIOLA_OK;
}

piola_status piola_attachment_set_target(piola_world *w, piola_attachment_id id,
                                         const float target[3]) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_attachment_slot *a = attachment_slot(w, id);
  if (a == NULL) {
    return PIOLA_ERROR_INVALID_ATTACHMENT;
  }
  if (target == NULL) {
    PIOLA_MISUSE(w, "target != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!piola_finite3(target)) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "attachment: the target must be finite");
    return PIOLA_ERROR_NON_FINITE;
  }
  for (int k = 0; k < 3; ++k) {
    a->target[k] = target[k];
  }
  w->attachments_dirty = true;
  return PIOLA_OK;
}

piola_status piola_world_remove_attachment(piola_world *w, piola_attachment_id id) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_attachment_slot *a = attachment_slot(w, id);
  if (a == NULL) {
    return PIOLA_ERROR_INVALID_ATTACHMENT;
  }
  memset(a, 0, sizeof *a);
  piola_id_pool_free(&w->attachment_ids, (int32_t)(a - w->attachment_slots));
  w->attachments_dirty = true;
  return PIOLA_OK;
}

/* An entry of the sort: world vertex, slot. */
typedef struct attach_key {
  int32_t vertex, slot;
} attach_key;

static int compare_keys(const void *pa, const void *pb) {
  const attach_key *a = pa, *b = pb;
  return a->vertex != b->vertex ? (a->vertex > b->vertex) - (a->vertex < b->vertex)
                                : (a->slot > b->slot) - (a->slot < b->slot);
}

piola_status piola_attachments_build(piola_world *w) {
  piola_solver_attachments *s = &w->attach;
  int32_t n = 0;
  for (int32_t i = 0; i < w->attachment_ids.count; ++i) {
    const piola_attachment_slot *a = &w->attachment_slots[i];
    n += piola_id_pool_alive(&w->attachment_ids, i) && piola_body_is_valid(w, a->body);
  }
  attach_key *keys = malloc(sizeof *keys * (size_t)(n > 0 ? n : 1));
  int32_t *start = malloc(sizeof *start * ((size_t)n + 1));
  int32_t *vertex = malloc(sizeof *vertex * (size_t)(n > 0 ? n : 1));
  double *target = malloc(sizeof *target * 4 * (size_t)(n > 0 ? n : 1));
  double *lambda = calloc((size_t)(n > 0 ? n : 1), sizeof *lambda);
  if (keys == NULL || start == NULL || vertex == NULL || target == NULL || lambda == NULL) {
    free(keys);
    free(start);
    free(vertex);
    free(target);
    free(lambda);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t k = 0;
  for (int32_t i = 0; i < w->attachment_ids.count; ++i) {
    const piola_attachment_slot *a = &w->attachment_slots[i];
    if (piola_id_pool_alive(&w->attachment_ids, i) && piola_body_is_valid(w, a->body)) {
      const piola_body *b = &w->bodies[a->body.index1 - 1];
      keys[k].vertex = b->vertex_offset + a->vertex;
      keys[k].slot = i;
      ++k;
    }
  }
  qsort(keys, (size_t)n, sizeof *keys, compare_keys);
  int32_t distinct = 0;
  for (int32_t e = 0; e < n; ++e) {
    if (e == 0 || keys[e].vertex != keys[e - 1].vertex) {
      start[distinct] = e;
      vertex[distinct++] = keys[e].vertex;
    }
    const piola_attachment_slot *a = &w->attachment_slots[keys[e].slot];
    memcpy(target + 4 * (size_t)e, a->target, 3 * sizeof(double));
    target[4 * (size_t)e + 3] = a->compliance;
  }
  start[distinct] = n;
  free(keys);
  free(s->start);
  free(s->vertex);
  free(s->target);
  free(s->lambda);
  s->count = n;
  s->vertex_count = distinct;
  s->start = start;
  s->vertex = vertex;
  s->target = target;
  s->lambda = lambda;
  /* Clean only once the device has them too: after a failed upload the next step tries again
   * (and does not run with the device's old arrays). */
  piola_status st = w->ops->attachments_upload(w);
  w->attachments_dirty = st != PIOLA_OK;
  return st;
}

void piola_cpu_attachments(piola_world *w, double h) {
  const piola_solver_attachments *s = &w->attach;
  const double inv_h2 = 1.0 / (h * h);
  for (int32_t i = 0; i < s->vertex_count; ++i) {
    const int32_t v = s->vertex[i];
    double *p = w->p + 3 * (size_t)v;
    for (int32_t e = s->start[i]; e < s->start[i + 1]; ++e) {
      const double *t = s->target + 4 * (size_t)e;
      if (w->iteration == 0) {
        s->lambda[e] = 0.0;
      }
      const piola_v3 dx = piola_attachment_correction(piola_v3_make(p[0], p[1], p[2]), w->w[v],
                                                      piola_v3_make(t[0], t[1], t[2]),
                                                      t[3] * inv_h2, &s->lambda[e]);
      p[0] += dx.x;
      p[1] += dx.y;
      p[2] += dx.z;
    }
  }
}

int32_t piola_attachments_of(const piola_solver_attachments *at, int32_t i) {
  const int32_t k = piola_lower_bound(at->vertex, at->vertex_count, i);
  return k < at->vertex_count && at->vertex[k] == i ? k : -1;
}
