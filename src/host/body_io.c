/* Piola body data: reading and writing a body's per-vertex arrays (positions, velocities,
 * inverse masses, external forces), its collision filter and self-collision switch, and the
 * listings of its collision surface. Where the backend holds the live state, reads come from it
 * and writes go through to it, so that a failed call changes nothing on either side. */
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Checks the common arguments of the per-body array calls. */
static piola_status body_array_args(const piola_world *w, piola_body_id id, const void *data,
                                    int32_t count, const piola_body **out) {
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_body *b = piola_world_body(w, id);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  if (data == NULL || count < 0) {
    PIOLA_MISUSE(w, "array != NULL && count >= 0");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (count != b->vertex_count) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "count %d does not match the body's %d vertices",
              (int)count, (int)b->vertex_count);
    return PIOLA_ERROR_COUNT_MISMATCH;
  }
  *out = b;
  return PIOLA_OK;
}

static piola_status check_finite_array(const piola_world *w, const float *a, size_t n,
                                       const char *what) {
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(a[i])) {
      piola_log(&w->def.logger, PIOLA_LOG_ERROR, "%s: entry %zu is not finite", what, i);
      return PIOLA_ERROR_NON_FINITE;
    }
  }
  return PIOLA_OK;
}

/* Which per-vertex array a body call reads or writes. */
typedef enum vertex_field { FIELD_POSITION, FIELD_VELOCITY, FIELD_INVERSE_MASS } vertex_field;

static piola_status body_write(piola_world *w, piola_body_id id, const float *data, int32_t count,
                               vertex_field field) {
  const piola_body *b;
  piola_status s = body_array_args(w, id, data, count, &b);
  if (s != PIOLA_OK) {
    return s;
  }
  size_t per = field == FIELD_INVERSE_MASS ? 1 : 3;
  static const char *const what[] = {"piola_body_set_positions", "piola_body_set_velocities",
                                     "piola_body_set_inverse_masses"};
  s = check_finite_array(w, data, per * (size_t)count, what[field]);
  if (s != PIOLA_OK) {
    return s;
  }
  if (field == FIELD_INVERSE_MASS) {
    for (int32_t i = 0; i < count; ++i) {
      if (data[i] < 0.0f) {
        piola_log(&w->def.logger, PIOLA_LOG_ERROR,
                  "piola_body_set_inverse_masses: entry %d is negative (%g)", (int)i,
                  (double)data[i]);
        return PIOLA_ERROR_INVALID_ARGUMENT;
      }
    }
  }
  const size_t first = (size_t)b->vertex_offset, nv = (size_t)count, n = per * nv;
  /* On OpenCL the body's vertices are read from the device, changed and written back, the new
   * values in one write (x and w share a float4): the host's x, p, v, w of the body are kept
   * to put back if a read or the write fails, so that a failed call changes nothing. */
  double *old = NULL;
  const bool live = !w->ops->host_current(w);
  if (live) {
    old = malloc(sizeof *old * 10 * nv + 1);
    if (old == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(old, w->x + 3 * first, sizeof *old * 3 * nv);
    memcpy(old + 3 * nv, w->p + 3 * first, sizeof *old * 3 * nv);
    memcpy(old + 6 * nv, w->v + 3 * first, sizeof *old * 3 * nv);
    memcpy(old + 9 * nv, w->w + first, sizeof *old * nv);
    s = w->ops->pull_range(w, b->vertex_offset, b->vertex_count);
    if (s != PIOLA_OK) {
      free(old);
      return s;
    }
  }
  double *dst = field == FIELD_POSITION   ? w->x + 3 * (size_t)b->vertex_offset
                : field == FIELD_VELOCITY ? w->v + 3 * (size_t)b->vertex_offset
                                          : w->w + b->vertex_offset;
  double *pdst = w->p + 3 * (size_t)b->vertex_offset;
  for (size_t i = 0; i < n; ++i) {
    dst[i] = (double)data[i];
  }
  if (field == FIELD_POSITION) {
    memcpy(pdst, dst, 3 * sizeof(double) * (size_t)count);
  }
  if (live) {
    s = w->ops->push_range(w, b->vertex_offset, b->vertex_count, field != FIELD_VELOCITY,
                           field == FIELD_VELOCITY);
    if (s != PIOLA_OK) {
      memcpy(w->x + 3 * first, old, sizeof *old * 3 * nv);
      memcpy(w->p + 3 * first, old + 3 * nv, sizeof *old * 3 * nv);
      memcpy(w->v + 3 * first, old + 6 * nv, sizeof *old * 3 * nv);
      memcpy(w->w + first, old + 9 * nv, sizeof *old * nv);
    }
    free(old);
  }
  if (s == PIOLA_OK) {
    w->prediction_valid = false; /* the last step's prediction is not this state's */
  }
  return s;
}

static piola_status body_read(const piola_world *w, piola_body_id id, float *data, int32_t count,
                              vertex_field field) {
  const piola_body *b;
  piola_status s = body_array_args(w, id, data, count, &b);
  if (s != PIOLA_OK) {
    return s;
  }
  size_t per = field == FIELD_INVERSE_MASS ? 1 : 3;
  if (field != FIELD_INVERSE_MASS && !w->ops->host_current(w)) {
    return w->ops->read_range(w, b->vertex_offset, b->vertex_count,
                              field == FIELD_POSITION ? data : NULL,
                              field == FIELD_VELOCITY ? data : NULL);
  }
  const double *src = field == FIELD_POSITION   ? w->x + 3 * (size_t)b->vertex_offset
                      : field == FIELD_VELOCITY ? w->v + 3 * (size_t)b->vertex_offset
                                                : w->w + b->vertex_offset;
  for (size_t i = 0; i < per * (size_t)count; ++i) {
    data[i] = (float)src[i];
  }
  return PIOLA_OK;
}

piola_status piola_body_set_inverse_masses(piola_world *w, piola_body_id id,
                                           const float *inverse_masses, int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_write(w, id, inverse_masses, count, FIELD_INVERSE_MASS);
}

piola_status piola_body_get_inverse_masses(const piola_world *w, piola_body_id id,
                                           float *inverse_masses, int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_read(w, id, inverse_masses, count, FIELD_INVERSE_MASS);
}

piola_status piola_body_set_positions(piola_world *w, piola_body_id id, const float *xyz,
                                      int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_write(w, id, xyz, count, FIELD_POSITION);
}

piola_status piola_body_set_velocities(piola_world *w, piola_body_id id, const float *xyz,
                                       int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_write(w, id, xyz, count, FIELD_VELOCITY);
}

piola_status piola_body_set_forces(piola_world *w, piola_body_id id, const float *xyz,
                                   int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_body *b = piola_world_body(w, id);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  if (xyz != NULL && count != b->vertex_count) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_body_set_forces: count %d does not match the body's %d vertices", (int)count,
              (int)b->vertex_count);
    return PIOLA_ERROR_COUNT_MISMATCH;
  }
  if (xyz != NULL) {
    piola_status s = check_finite_array(w, xyz, 3 * (size_t)count, "piola_body_set_forces");
    if (s != PIOLA_OK) {
      return s;
    }
  }
  const bool fresh = w->f == NULL;
  if (fresh) {
    if (xyz == NULL) {
      return PIOLA_OK; /* nothing to clear */
    }
    w->f = calloc(3 * (size_t)(w->vertex_capacity > 0 ? w->vertex_capacity : 1), sizeof(double));
    if (w->f == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
  }
  const size_t n = 3 * (size_t)b->vertex_count;
  double *dst = w->f + 3 * (size_t)b->vertex_offset;
  /* The old forces, to put back if the backend's write fails (a failed call changes nothing). */
  const bool live = !w->ops->host_current(w);
  double *old = live ? malloc(sizeof *old * (n + 1)) : NULL;
  if (live && old == NULL) {
    if (fresh) {
      free(w->f);
      w->f = NULL;
    }
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (old != NULL) {
    memcpy(old, dst, sizeof *old * n);
  }
  for (size_t i = 0; i < n; ++i) {
    dst[i] = xyz != NULL ? (double)xyz[i] : 0.0;
  }
  piola_status s = w->ops->push_forces(w, b->vertex_offset, b->vertex_count);
  if (s != PIOLA_OK) {
    if (fresh) {
      free(w->f);
      w->f = NULL;
    } else {
      memcpy(dst, old, sizeof *old * n);
    }
  }
  free(old);
  return s;
}

piola_status piola_body_get_positions(const piola_world *w, piola_body_id id, float *xyz,
                                      int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_read(w, id, xyz, count, FIELD_POSITION);
}

piola_status piola_body_get_velocities(const piola_world *w, piola_body_id id, float *xyz,
                                       int32_t count) {
  PIOLA_RETURN_IF_LOST(w);
  return body_read(w, id, xyz, count, FIELD_VELOCITY);
}

/* The body behind an id, made ready for a change of its contact data (the host arrays made
 * current first); NULL with *status set when the id is invalid or the device cannot be read. */
static piola_body *body_for_change(piola_world *w, piola_body_id id, piola_status *status) {
  piola_body *b = w != NULL ? piola_world_body(w, id) : NULL;
  *status = w == NULL   ? PIOLA_ERROR_INVALID_ARGUMENT
            : b == NULL ? PIOLA_ERROR_INVALID_BODY
                        : piola_world_begin_change(w);
  return *status == PIOLA_OK ? b : NULL;
}

piola_status piola_body_set_collision_filter(piola_world *w, piola_body_id id, uint32_t group,
                                             uint32_t mask) {
  PIOLA_RETURN_IF_LOST(w);
  piola_status s;
  piola_body *b = body_for_change(w, id, &s);
  if (b != NULL) {
    b->collision_group = group;
    b->collision_mask = mask;
    piola_world_changed(w);
  }
  return s;
}

piola_status piola_body_set_self_collision(piola_world *w, piola_body_id id, bool enabled) {
  PIOLA_RETURN_IF_LOST(w);
  piola_status s;
  piola_body *b = body_for_change(w, id, &s);
  if (b != NULL) {
    b->self_collision = enabled;
    piola_world_changed(w);
  }
  return s;
}

/* The body's surface triangles (3 indices each) or surface vertices (1 each): min(capacity,
 * count) of them to out, the count to *count. */
static piola_status surface_listing(const piola_world *w, piola_body_id id, bool vertices,
                                    int32_t *out, int32_t capacity, int32_t *count) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_body *b = piola_world_body(w, id);
  if (b == NULL) {
    return PIOLA_ERROR_INVALID_BODY;
  }
  if (capacity < 0 || (out == NULL && capacity > 0)) {
    PIOLA_MISUSE(w, "capacity >= 0 && (out != NULL || capacity == 0)");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const int32_t total = vertices ? b->surface_vertex_count : b->surface_count;
  const size_t per = vertices ? 1 : 3;
  const int32_t n = capacity < total ? capacity : total;
  if (n > 0) {
    memcpy(out, vertices ? b->surface_vertices : b->surface, sizeof *out * per * (size_t)n);
  }
  if (count != NULL) {
    *count = total;
  }
  return PIOLA_OK;
}

piola_status piola_body_get_surface(const piola_world *w, piola_body_id id, int32_t *triangles,
                                    int32_t capacity, int32_t *count) {
  return surface_listing(w, id, false, triangles, capacity, count);
}

piola_status piola_body_get_surface_vertices(const piola_world *w, piola_body_id id,
                                             int32_t *vertices, int32_t capacity, int32_t *count) {
  return surface_listing(w, id, true, vertices, capacity, count);
}
