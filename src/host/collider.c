/* Piola colliders: adding, moving and removing the static and kinematic shapes particles are
 * projected out of (planes, spheres, boxes, capsules, the funnel of Bender et al. 2014, Sec. 6),
 * the checks and packing of their defs for the solver, and their motion over a step. The shapes'
 * distance functions and the projection with friction are kernels/piola_collide.h. */
#include "world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Normalises v into out; false for a zero or non-finite vector. */
static bool unit3(const float v[3], float out[3]) {
  double l = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
  if (!piola_finite3(v) || !(l > 1e-20)) {
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    out[i] = (float)(v[i] / l);
  }
  return true;
}

piola_status piola_collider_pack(const piola_collider_def *def, piola_collider_data *out,
                                 char *reason, size_t n) {
  piola_collider_data c;
  memset(&c, 0, sizeof c);
  if (def->internal_cookie != PIOLA_COOKIE) {
    snprintf(reason, n, "collider def not made by piola_default_collider_def()");
    return PIOLA_ERROR_INVALID_DEF;
  }
  if (!isfinite(def->static_friction) || !(def->static_friction >= 0.0f) ||
      !isfinite(def->dynamic_friction) || !(def->dynamic_friction >= 0.0f)) {
    snprintf(reason, n, "friction coefficients must be finite and >= 0 (got %g, %g)",
             (double)def->static_friction, (double)def->dynamic_friction);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  c.static_friction = def->static_friction;
  c.dynamic_friction = def->dynamic_friction;
  switch (def->type) {
  case PIOLA_COLLIDER_PLANE: {
    const piola_plane_shape *s = &def->shape.plane;
    if (!unit3(s->normal, c.a) || !isfinite(s->offset)) {
      snprintf(reason, n, "plane needs a finite non-zero normal and a finite offset");
      return !piola_finite3(s->normal) || !isfinite(s->offset) ? PIOLA_ERROR_NON_FINITE
                                                               : PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_PLANE;
    c.a[3] = s->offset;
    break;
  }
  case PIOLA_COLLIDER_SPHERE: {
    const piola_sphere_shape *s = &def->shape.sphere;
    if (!piola_finite3(s->center) || !isfinite(s->radius)) {
      snprintf(reason, n, "sphere has a non-finite center or radius");
      return PIOLA_ERROR_NON_FINITE;
    }
    if (!(s->radius > 0.0f)) {
      snprintf(reason, n, "sphere radius must be > 0 m (got %g)", (double)s->radius);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_SPHERE;
    memcpy(c.a, s->center, sizeof s->center);
    c.a[3] = s->radius;
    break;
  }
  case PIOLA_COLLIDER_BOX: {
    const piola_box_shape *s = &def->shape.box;
    const float *q = s->rotation;
    if (!piola_finite3(s->center) || !piola_finite3(s->half_extents) || !piola_finite3(q) ||
        !isfinite(q[3])) {
      snprintf(reason, n, "box has a non-finite center, half extent or rotation");
      return PIOLA_ERROR_NON_FINITE;
    }
    double ql =
        sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3]);
    if (!(s->half_extents[0] > 0.0f && s->half_extents[1] > 0.0f && s->half_extents[2] > 0.0f) ||
        !(ql > 1e-20)) {
      snprintf(reason, n, "box needs half extents > 0 m and a non-zero rotation quaternion");
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_BOX;
    memcpy(c.a, s->center, sizeof s->center);
    memcpy(c.b, s->half_extents, sizeof s->half_extents);
    for (int i = 0; i < 4; ++i) {
      c.c[i] = (float)(q[i] / ql);
    }
    break;
  }
  case PIOLA_COLLIDER_CAPSULE: {
    const piola_capsule_shape *s = &def->shape.capsule;
    if (!piola_finite3(s->a) || !piola_finite3(s->b) || !isfinite(s->radius)) {
      snprintf(reason, n, "capsule has a non-finite end or radius");
      return PIOLA_ERROR_NON_FINITE;
    }
    if (!(s->radius > 0.0f)) {
      snprintf(reason, n, "capsule radius must be > 0 m (got %g)", (double)s->radius);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_CAPSULE;
    memcpy(c.a, s->a, sizeof s->a);
    c.a[3] = s->radius;
    memcpy(c.b, s->b, sizeof s->b);
    break;
  }
  case PIOLA_COLLIDER_FUNNEL: {
    const piola_funnel_shape *s = &def->shape.funnel;
    if (!piola_finite3(s->base) || !piola_finite3(s->axis) || !isfinite(s->base_radius) ||
        !isfinite(s->top_radius) || !isfinite(s->height)) {
      snprintf(reason, n, "funnel has a non-finite value");
      return PIOLA_ERROR_NON_FINITE;
    }
    if (!unit3(s->axis, c.b) || !(s->height > 0.0f) || !(s->base_radius >= 0.0f) ||
        !(s->top_radius >= 0.0f)) {
      snprintf(reason, n, "funnel needs a non-zero axis, height > 0 m and radii >= 0 m");
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    c.kind = PIOLA_COLLIDER_KIND_FUNNEL;
    memcpy(c.a, s->base, sizeof s->base);
    c.a[3] = s->base_radius;
    c.b[3] = s->height;
    c.c[0] = s->top_radius;
    break;
  }
  case PIOLA_COLLIDER_MESH:
    /* the shape's data and the fields that name it: piola_world_add_collider */
    c.kind = PIOLA_COLLIDER_KIND_MESH;
    break;
  case PIOLA_COLLIDER_SDF:
    c.kind = PIOLA_COLLIDER_KIND_SDF;
    break;
  default:
    snprintf(reason, n, "unknown collider type %d", (int)def->type);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  c.rotation[3] = 1.0f; /* the identity pose, at rest (posed = 0) */
  c.position[3] = (float)piola_collider_reach(&c);
  *out = c;
  return PIOLA_OK;
}

void piola_collider_pose_pack(const piola_collider_slot *slot, piola_collider_data *c) {
  bool identity = slot->rotation[0] == 0.0 && slot->rotation[1] == 0.0 &&
                  slot->rotation[2] == 0.0 && slot->rotation[3] == 1.0;
  for (int k = 0; k < 3; ++k) {
    c->position[k] = (float)slot->position[k];
    c->velocity[k] = (float)slot->velocity[k];
    c->angular_velocity[k] = (float)slot->angular_velocity[k];
    identity = identity && slot->position[k] == 0.0 && slot->velocity[k] == 0.0 &&
               slot->angular_velocity[k] == 0.0;
  }
  for (int k = 0; k < 4; ++k) {
    c->rotation[k] = (float)slot->rotation[k];
  }
  c->velocity[3] = c->angular_velocity[3] = 0.0f;
  c->posed = identity ? 0 : 1;
  c->position[3] = (float)piola_collider_reach(c); /* the bound depends on posed */
}

/* The slot behind an id, or NULL (with a misuse report) when the id is invalid. */
static piola_collider_slot *collider_slot(const piola_world *w, piola_collider_id id) {
  const int32_t slot = piola_id_pool_find(&w->collider_ids, id.index1, id.generation);
  if (slot < 0) {
    PIOLA_MISUSE(w, "collider id is valid");
    return NULL;
  }
  return &w->collider_slots[slot];
}

static void colliders_changed(piola_world *w, int32_t first, int32_t end) {
  if (first < end) {
    w->ops->colliders_changed(w, first, end);
  }
}

piola_status piola_world_add_collider(piola_world *w, const piola_collider_def *def,
                                      piola_collider_id *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (def == NULL) {
    PIOLA_MISUSE(w, "collider def != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_collider_data c;
  char reason[256];
  piola_status s = piola_collider_pack(def, &c, reason, sizeof reason);
  /* A mesh or a distance field: its data built once and appended to the world's. */
  piola_shape_data data;
  memset(&data, 0, sizeof data);
  int32_t first = 0;
  if (s == PIOLA_OK && c.kind == PIOLA_COLLIDER_KIND_MESH) {
    s = piola_mesh_data_build(&def->shape.mesh, w->def.contact_thickness, &data, reason,
                              sizeof reason);
  } else if (s == PIOLA_OK && c.kind == PIOLA_COLLIDER_KIND_SDF) {
    s = piola_sdf_data_build(&def->shape.sdf, &data, reason, sizeof reason);
  }
  if (s == PIOLA_OK && data.count > 0) {
    s = piola_world_shapes_append(w, &data, &first, reason, sizeof reason);
  }
  if (s != PIOLA_OK) {
    piola_shape_data_free(&data);
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "piola_world_add_collider: %s", reason);
    return s;
  }
  if (c.kind == PIOLA_COLLIDER_KIND_MESH) {
    memcpy(c.a, data.lo, sizeof data.lo);
    memcpy(c.b, data.hi, sizeof data.hi);
    c.a[3] = data.thickness;
    c.b[3] = data.closed ? 1.0f : 0.0f;
    c.c[0] = (float)first;
    c.c[1] = (float)(first + 2 * data.node_count);
    c.c[2] = (float)data.node_count;
    c.c[3] = (float)data.triangle_count;
  } else if (c.kind == PIOLA_COLLIDER_KIND_SDF) {
    const piola_sdf_shape *g = &def->shape.sdf;
    memcpy(c.a, g->origin, sizeof g->origin);
    c.a[3] = g->cell;
    for (int k = 0; k < 3; ++k) {
      c.b[k] = (float)g->dims[k];
    }
    c.b[3] = (float)first;
  }
  c.position[3] = (float)piola_collider_reach(&c);
  const int32_t added_entries = data.count;
  piola_shape_data_free(&data);
  const int32_t slot = piola_id_pool_next(&w->collider_ids);
  int32_t cap = w->collider_capacity, n = w->collider_count + 1;
  if (slot < 0 ||
      !piola_grow((void **)&w->collider_slots, sizeof *w->collider_slots, slot + 1,
                  &w->collider_slot_capacity) ||
      !piola_grow((void **)&w->colliders, sizeof *w->colliders, n, &cap) ||
      !piola_grow((void **)&w->collider_slot, sizeof *w->collider_slot, n, &w->collider_capacity)) {
    if (added_entries > 0) { /* the world as it was */
      w->shape_count -= added_entries;
      w->shapes_version++;
    }
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  const uint32_t generation = piola_id_pool_take(&w->collider_ids, slot);
  piola_collider_slot *cs = &w->collider_slots[slot];
  memset(cs, 0, sizeof *cs);
  cs->dense = w->collider_count;
  cs->rotation[3] = 1.0;
  w->colliders[w->collider_count] = c;
  w->collider_slot[w->collider_count] = slot;
  w->collider_count++;
  w->collider_force_scale = 0.0; /* the records are of the colliders before it */
  colliders_changed(w, w->collider_count - 1, w->collider_count);
  if (out != NULL) {
    out->index1 = slot + 1;
    out->generation = generation;
  }
  return PIOLA_OK;
}

piola_status piola_world_add_plane(piola_world *w, const float normal[3], float offset,
                                   float friction, piola_collider_id *out) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (normal == NULL) {
    PIOLA_MISUSE(w, "normal != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_collider_def def = piola_default_collider_def();
  def.type = PIOLA_COLLIDER_PLANE;
  memcpy(def.shape.plane.normal, normal, sizeof def.shape.plane.normal);
  def.shape.plane.offset = offset;
  def.static_friction = friction;
  def.dynamic_friction = friction;
  return piola_world_add_collider(w, &def, out);
}

piola_status piola_world_remove_collider(piola_world *w, piola_collider_id id) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_collider_slot *cs = collider_slot(w, id);
  if (cs == NULL) {
    return PIOLA_ERROR_INVALID_COLLIDER;
  }
  /* The records after it move down one place: the colliders keep their order. */
  const int32_t d = cs->dense, tail = w->collider_count - d - 1;
  const piola_collider_data removed = w->colliders[d];
  memmove(w->colliders + d, w->colliders + d + 1, sizeof *w->colliders * (size_t)tail);
  memmove(w->collider_slot + d, w->collider_slot + d + 1, sizeof *w->collider_slot * (size_t)tail);
  w->collider_count--;
  for (int32_t i = d; i < w->collider_count; ++i) {
    w->collider_slots[w->collider_slot[i]].dense = i;
  }
  piola_world_shapes_remove(w, &removed); /* its mesh or grid, if any */
  /* The multigrid scheme's friction anchors name colliders by that order: those on it are let
   * go, those on the colliders after it follow them down. */
  piola_solver_newton *nw = &w->newton;
  for (int32_t i = 0; nw->anchor_collider != NULL && i < nw->vertex_count; ++i) {
    int32_t *k = &nw->anchor_collider[i];
    *k = *k == d ? -1 : *k > d ? *k - 1 : *k;
  }
  cs->dense = -1;
  w->collider_force_scale = 0.0; /* the records of the colliders after it moved */
  piola_id_pool_free(&w->collider_ids, (int32_t)(cs - w->collider_slots));
  colliders_changed(w, d, w->collider_count);
  return PIOLA_OK;
}

piola_status piola_world_set_collider_pose(piola_world *w, piola_collider_id id,
                                           const float position[3], const float rotation[4],
                                           const float linear_velocity[3],
                                           const float angular_velocity[3]) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  piola_collider_slot *cs = collider_slot(w, id);
  if (cs == NULL) {
    return PIOLA_ERROR_INVALID_COLLIDER;
  }
  if (position == NULL || rotation == NULL || linear_velocity == NULL || angular_velocity == NULL) {
    PIOLA_MISUSE(w, "position, rotation and velocities != NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (!piola_finite3(position) || !piola_finite3(rotation) || !isfinite(rotation[3]) ||
      !piola_finite3(linear_velocity) || !piola_finite3(angular_velocity)) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_world_set_collider_pose: the pose and velocities must be finite");
    return PIOLA_ERROR_NON_FINITE;
  }
  double ql = 0.0;
  for (int k = 0; k < 4; ++k) {
    ql += (double)rotation[k] * rotation[k];
  }
  ql = sqrt(ql);
  if (!(ql > 1e-20)) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_world_set_collider_pose: the rotation quaternion is zero");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  for (int k = 0; k < 3; ++k) {
    cs->position[k] = position[k];
    cs->velocity[k] = linear_velocity[k];
    cs->angular_velocity[k] = angular_velocity[k];
  }
  for (int k = 0; k < 4; ++k) {
    cs->rotation[k] = rotation[k] / ql;
  }
  piola_collider_pose_pack(cs, &w->colliders[cs->dense]);
  colliders_changed(w, cs->dense, cs->dense + 1);
  return PIOLA_OK;
}

piola_status piola_world_get_collider_pose(const piola_world *w, piola_collider_id id,
                                           float position[3], float rotation[4],
                                           float linear_velocity[3], float angular_velocity[3]) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_collider_slot *cs = collider_slot(w, id);
  if (cs == NULL) {
    return PIOLA_ERROR_INVALID_COLLIDER;
  }
  for (int k = 0; k < 4; ++k) {
    if (position != NULL && k < 3) {
      position[k] = (float)cs->position[k];
    }
    if (rotation != NULL) {
      rotation[k] = (float)cs->rotation[k];
    }
    if (linear_velocity != NULL && k < 3) {
      linear_velocity[k] = (float)cs->velocity[k];
    }
    if (angular_velocity != NULL && k < 3) {
      angular_velocity[k] = (float)cs->angular_velocity[k];
    }
  }
  return PIOLA_OK;
}

/* Every moving collider takes the pose its velocities led it to over dt, the pose the step's
 * last substep used (see piola_collider_pose_at). */
void piola_world_advance_colliders(piola_world *w) {
  const double dt = (double)w->def.dt;
  int32_t first = w->collider_count, end = 0;
  for (int32_t i = 0; i < w->collider_count; ++i) {
    piola_collider_slot *cs = &w->collider_slots[w->collider_slot[i]];
    const double *v = cs->velocity, *av = cs->angular_velocity;
    if (v[0] == 0.0 && v[1] == 0.0 && v[2] == 0.0 && av[0] == 0.0 && av[1] == 0.0 && av[2] == 0.0) {
      continue;
    }
    for (int k = 0; k < 3; ++k) {
      cs->position[k] += v[k] * dt;
    }
    const double rate = sqrt(av[0] * av[0] + av[1] * av[1] + av[2] * av[2]);
    if (rate > 0.0) {
      /* (a, aw) * q with (a, aw) the turn by rate dt about av */
      const double half = 0.5 * rate * dt, sn = sin(half) / rate, aw = cos(half);
      const double a[3] = {av[0] * sn, av[1] * sn, av[2] * sn};
      const double *q = cs->rotation;
      double r[4] = {aw * q[0] + q[3] * a[0] + a[1] * q[2] - a[2] * q[1],
                     aw * q[1] + q[3] * a[1] + a[2] * q[0] - a[0] * q[2],
                     aw * q[2] + q[3] * a[2] + a[0] * q[1] - a[1] * q[0],
                     aw * q[3] - a[0] * q[0] - a[1] * q[1] - a[2] * q[2]};
      const double l = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
      for (int k = 0; k < 4; ++k) {
        cs->rotation[k] = r[k] / l;
      }
    }
    piola_collider_pose_pack(cs, &w->colliders[i]);
    first = i < first ? i : first;
    end = i + 1;
  }
  colliders_changed(w, first, end);
}

piola_status piola_world_get_collider_force(const piola_world *w, piola_collider_id id,
                                            float force[3], float torque[3]) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const piola_collider_slot *cs = collider_slot(w, id);
  if (cs == NULL) {
    return PIOLA_ERROR_INVALID_COLLIDER;
  }
  double sums[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  if (w->collider_force_scale > 0.0) {
    const piola_status s = w->ops->collider_impulse(w, cs->dense, sums);
    if (s != PIOLA_OK) {
      return s;
    }
    /* what the multigrid scheme's Newton step applies at the supports and COLLIDE does not
     * record: friction, and the normal force beyond the held motion (newton.c) */
    const piola_solver_newton *nw = &w->newton;
    if (w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID &&
        6 * (cs->dense + 1) <= nw->collider_solve_force_capacity) {
      for (int k = 0; k < 6; ++k) {
        sums[k] += nw->collider_solve_force[6 * (size_t)cs->dense + (size_t)k];
      }
    }
  }
  /* The particles push the collider back: -sum(m dx) / (h dt) */
  const double scale = w->collider_force_scale > 0.0 ? -1.0 / w->collider_force_scale : 0.0;
  for (int k = 0; k < 3; ++k) {
    if (force != NULL) {
      force[k] = (float)(sums[k] * scale);
    }
    if (torque != NULL) {
      torque[k] = (float)(sums[3 + k] * scale);
    }
  }
  return PIOLA_OK;
}
