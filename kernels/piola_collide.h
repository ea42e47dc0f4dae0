/* Piola colliders: per-particle projection out of planes, spheres, boxes, capsules and open
 * funnels, with position-based Coulomb friction; shared by C and OpenCL C. A collider is a
 * kinematic rigid shape: its pose (position, unit quaternion) and velocities move it during the
 * step, and friction acts on the particle's motion relative to the collider's surface.
 *
 * Contacts follow Mueller, Heidelberger, Hennix, Ratcliff 2007 ("Position Based Dynamics",
 * Sec. 3.5: collision constraints projected with the particle's position) and friction follows
 * Macklin, Mueller, Chentanez, Kim 2014 ("Unified Particle Physics for Real-Time
 * Applications", Sec. 6.1): after a particle is pushed out by depth d along the contact
 * normal, its tangential motion since the start of the step, dx_t, is removed entirely when
 * |dx_t| < mu_s d (static friction) and reduced by min(mu_k d / |dx_t|, 1) otherwise.
 */
#ifndef PIOLA_COLLIDE_H
#define PIOLA_COLLIDE_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_shared.h"
#endif

#define PIOLA_COLLIDER_KIND_PLANE 0
#define PIOLA_COLLIDER_KIND_SPHERE 1
#define PIOLA_COLLIDER_KIND_BOX 2
#define PIOLA_COLLIDER_KIND_CAPSULE 3
#define PIOLA_COLLIDER_KIND_FUNNEL 4
#define PIOLA_COLLIDER_KIND_MESH 5 /* the shape's data: kernels/piola_mesh.h */
#define PIOLA_COLLIDER_KIND_SDF 6

/* Half the thickness of a funnel's wall, as a fraction of the funnel's height. */
#define PIOLA_FUNNEL_SKIN PIOLA_R(1e-4)

/* One collider as stored for the solver (64 bytes, same layout in C and OpenCL C):
 *   plane:   a = (normal, offset)
 *   sphere:  a = (center, radius)
 *   box:     a = (center, 0), b = (half extents, 0), c = rotation quaternion (x, y, z, w)
 *   capsule: a = (end A, radius), b = (end B, 0)
 *   funnel:  a = (base center, base radius), b = (unit axis, height), c = (top radius, 0, 0, 0)
 * in the collider's own frame, then its pose at the start of the step (128 bytes in all):
 *   posed:            0 for the identity pose at rest (the shape is in world coordinates and
 *                     nothing is transformed), 1 otherwise
 *   position:         m, the frame's origin in the world; w: the reach of the shape's bounding
 *                     sphere (m, piola_collider_reach), negative where it has none
 *   rotation:         unit quaternion (x, y, z, w), frame to world
 *   velocity:         m/s of the origin (w unused)
 *   angular_velocity: rad/s about the origin, world axes (w unused)
 */
typedef struct piola_collider_data {
  piola_f32 a[4];
  piola_f32 b[4];
  piola_f32 c[4];
  piola_i32 kind;
  piola_f32 static_friction;
  piola_f32 dynamic_friction;
  piola_i32 posed;
  piola_f32 position[4];
  piola_f32 rotation[4];
  piola_f32 velocity[4];
  piola_f32 angular_velocity[4];
} piola_collider_data;

/* The address space of the collider records that the functions below read: the kernels read
 * them where they lie, in constant memory (a private copy of the 128-byte record per particle
 * and collider was a fifth of the collide stage on CPU devices); plain memory in C. */
#ifdef __OPENCL_VERSION__
#define PIOLA_COLLIDER_RECORD __constant
#else
#define PIOLA_COLLIDER_RECORD
#endif

/* A rigid transform: x_world = position + R(q, qw) x_local. */
typedef struct piola_rigid_pose {
  piola_v3 position;
  piola_v3 q;
  piola_real qw;
} piola_rigid_pose;

PIOLA_FN piola_v3 piola_f32x3(PIOLA_COLLIDER_RECORD const piola_f32 *v) {
  return piola_v3_make((piola_real)v[0], (piola_real)v[1], (piola_real)v[2]);
}

/* Rotates v by the unit quaternion (q.xyz, qw): v + 2 qw (q x v) + 2 q x (q x v). */
PIOLA_FN piola_v3 piola_quat_rotate(piola_v3 q, piola_real qw, piola_v3 v) {
  piola_v3 t = piola_v3_scale(piola_v3_cross(q, v), PIOLA_R(2.0));
  return piola_v3_add(piola_v3_add(v, piola_v3_scale(t, qw)), piola_v3_cross(q, t));
}

/* The collider's pose t seconds after the start of the step: the origin moved by velocity t,
 * the frame turned by |w| t about w (world axes) after the start rotation:
 * q(t) = (sin(|w| t / 2) w / |w|, cos(|w| t / 2)) * q(0), renormalised. */
PIOLA_FN piola_rigid_pose piola_collider_pose_at(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                                 piola_real t) {
  piola_rigid_pose r;
  r.position = piola_v3_add(piola_f32x3(c->position), piola_v3_scale(piola_f32x3(c->velocity), t));
  piola_v3 q0 = piola_f32x3(c->rotation);
  piola_real w0 = (piola_real)c->rotation[3];
  piola_v3 w = piola_f32x3(c->angular_velocity);
  piola_real rate = piola_v3_length(w);
  piola_v3 q = q0;
  piola_real qw = w0;
  if (rate > PIOLA_R(0.0) && t != PIOLA_R(0.0)) {
    piola_real half_angle = PIOLA_R(0.5) * rate * t;
    piola_v3 a = piola_v3_scale(w, sin(half_angle) / rate);
    piola_real aw = cos(half_angle);
    /* (a, aw) * (q0, w0) = (aw q0 + w0 a + a x q0, aw w0 - a . q0) */
    q = piola_v3_add(piola_v3_add(piola_v3_scale(q0, aw), piola_v3_scale(a, w0)),
                     piola_v3_cross(a, q0));
    qw = aw * w0 - piola_v3_dot(a, q0);
  }
  piola_real l = sqrt(piola_v3_dot(q, q) + qw * qw);
  r.q = piola_v3_scale(q, PIOLA_R(1.0) / l);
  r.qw = qw / l;
  return r;
}

/* World point -> the pose's frame, and a frame direction -> world. */
PIOLA_FN piola_v3 piola_pose_to_local(piola_rigid_pose r, piola_v3 x) {
  return piola_quat_rotate(piola_v3_scale(r.q, PIOLA_R(-1.0)), r.qw, piola_v3_sub(x, r.position));
}

/* A unit vector perpendicular to the unit (or zero) vector a. */
PIOLA_FN piola_v3 piola_any_perpendicular(piola_v3 a) {
  piola_v3 e = fabs(a.x) < PIOLA_R(0.57) ? piola_v3_make(PIOLA_R(1.0), PIOLA_R(0.0), PIOLA_R(0.0))
                                         : piola_v3_make(PIOLA_R(0.0), PIOLA_R(1.0), PIOLA_R(0.0));
  piola_v3 c = piola_v3_cross(a, e);
  piola_real l = piola_v3_length(c);
  return l > PIOLA_R(0.0) ? piola_v3_scale(c, PIOLA_R(1.0) / l)
                          : piola_v3_make(PIOLA_R(0.0), PIOLA_R(1.0), PIOLA_R(0.0));
}

/* Contact of p with a solid round shape: the closest point q of its core (a point or a
 * segment) and the radius. Falls back to the start position's side, then to any direction,
 * when p lies on the core. */
PIOLA_FN piola_real piola_round_contact(piola_v3 q, piola_real radius, piola_v3 p, piola_v3 x_start,
                                        piola_v3 fallback_axis, piola_v3 *normal) {
  piola_v3 d = piola_v3_sub(p, q);
  piola_real dist = piola_v3_length(d);
  if (!(dist < radius)) {
    return PIOLA_R(0.0);
  }
  if (dist > PIOLA_R(0.0)) {
    *normal = piola_v3_scale(d, PIOLA_R(1.0) / dist);
  } else {
    piola_v3 ds = piola_v3_sub(x_start, q);
    piola_real ls = piola_v3_length(ds);
    *normal = ls > PIOLA_R(0.0) ? piola_v3_scale(ds, PIOLA_R(1.0) / ls)
                                : piola_any_perpendicular(fallback_axis);
  }
  return radius - dist;
}

/* Penetration depth (> 0 when in contact) of p into collider c's shape and the outward normal,
 * in the collider's own frame (the pose is not applied). x_start is the particle's position at
 * the start of the substep (the funnel keeps its side). */
PIOLA_FN piola_real piola_collider_contact(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                           piola_v3 x_start, piola_v3 p, piola_v3 *normal) {
  piola_v3 a = piola_f32x3(c->a);
  piola_v3 up = piola_v3_make(PIOLA_R(0.0), PIOLA_R(1.0), PIOLA_R(0.0));
  if (c->kind == PIOLA_COLLIDER_KIND_PLANE) {
    *normal = a;
    return (piola_real)c->a[3] - piola_v3_dot(a, p);
  }
  if (c->kind == PIOLA_COLLIDER_KIND_SPHERE) {
    return piola_round_contact(a, (piola_real)c->a[3], p, x_start, up, normal);
  }
  if (c->kind == PIOLA_COLLIDER_KIND_CAPSULE) {
    piola_v3 ab = piola_v3_sub(piola_f32x3(c->b), a);
    piola_real len2 = piola_v3_dot(ab, ab);
    piola_real t = len2 > PIOLA_R(0.0) ? piola_v3_dot(piola_v3_sub(p, a), ab) / len2 : PIOLA_R(0.0);
    t = fmin(fmax(t, PIOLA_R(0.0)), PIOLA_R(1.0));
    piola_v3 axis = len2 > PIOLA_R(0.0) ? piola_v3_scale(ab, PIOLA_R(1.0) / sqrt(len2)) : up;
    return piola_round_contact(piola_v3_add(a, piola_v3_scale(ab, t)), (piola_real)c->a[3], p,
                               x_start, axis, normal);
  }
  if (c->kind == PIOLA_COLLIDER_KIND_BOX) {
    piola_v3 q = piola_f32x3(c->c);
    piola_real qw = (piola_real)c->c[3];
    piola_v3 h = piola_f32x3(c->b);
    /* Into the box frame with the conjugate rotation. */
    piola_v3 l = piola_quat_rotate(piola_v3_scale(q, PIOLA_R(-1.0)), qw, piola_v3_sub(p, a));
    piola_real px = h.x - fabs(l.x), py = h.y - fabs(l.y), pz = h.z - fabs(l.z);
    if (!(px > PIOLA_R(0.0) && py > PIOLA_R(0.0) && pz > PIOLA_R(0.0))) {
      return PIOLA_R(0.0);
    }
    piola_v3 n;
    piola_real depth;
    if (px <= py && px <= pz) {
      n = piola_v3_make(l.x < PIOLA_R(0.0) ? PIOLA_R(-1.0) : PIOLA_R(1.0), PIOLA_R(0.0),
                        PIOLA_R(0.0));
      depth = px;
    } else if (py <= pz) {
      n = piola_v3_make(PIOLA_R(0.0), l.y < PIOLA_R(0.0) ? PIOLA_R(-1.0) : PIOLA_R(1.0),
                        PIOLA_R(0.0));
      depth = py;
    } else {
      n = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0),
                        l.z < PIOLA_R(0.0) ? PIOLA_R(-1.0) : PIOLA_R(1.0));
      depth = pz;
    }
    *normal = piola_quat_rotate(q, qw, n);
    return depth;
  }
  if (c->kind == PIOLA_COLLIDER_KIND_FUNNEL) {
    piola_v3 axis = piola_f32x3(c->b);
    piola_real height = (piola_real)c->b[3];
    piola_real r0 = (piola_real)c->a[3];
    piola_real slope = ((piola_real)c->c[0] - r0) / height;
    piola_real inv_len = PIOLA_R(1.0) / sqrt(PIOLA_R(1.0) + slope * slope);
    /* The side function of the wall's cone, extended past its ends, in the (radial, axial)
     * plane: radius minus the cone's radius at that height, negative inside. */
    piola_v3 rel = piola_v3_sub(p, a);
    piola_real hp = piola_v3_dot(rel, axis);
    piola_v3 rel_x = piola_v3_sub(x_start, a);
    piola_real hx = piola_v3_dot(rel_x, axis);
    /* Both below the bottom opening, or both above the top: the motion meets the cone, if at
     * all, beyond the wall's ends (the crossing test below would find so too). Most particles of
     * the funnel scene, in the column or in the pile, end here. */
    if ((hp < PIOLA_R(0.0) && hx < PIOLA_R(0.0)) || (hp > height && hx > height)) {
      return PIOLA_R(0.0);
    }
    piola_v3 radial = piola_v3_sub(rel, piola_v3_scale(axis, hp));
    piola_real rp = piola_v3_length(radial);
    piola_real side_p = rp - r0 - slope * hp;
    piola_real rx = piola_v3_length(piola_v3_sub(rel_x, piola_v3_scale(axis, hx)));
    piola_real side_x = rx - r0 - slope * hx;
    int inside = side_x <= PIOLA_R(0.0);
    /* The wall has a thickness: particles are kept PIOLA_FUNNEL_SKIN * height away from its
     * middle surface on their side, so none is left on it for rounding to decide its side. */
    piola_real skin = PIOLA_FUNNEL_SKIN * height;
    piola_real dist_p = side_p * inv_len;
    piola_real depth = inside ? dist_p + skin : skin - dist_p;
    if (!(depth > PIOLA_R(0.0))) {
      return depth;
    }
    /* The wall spans heights 0 to `height`. A particle whose motion from x_start to p starts or
     * ends beyond its ends meets it only where that motion crosses the cone between them, at
     * the height where the side function, interpolated along the motion, changes sign (at p
     * for a particle still on its side, within the skin): one that goes around the bottom edge
     * is free, one that passes through the wall just above the edge and ends below it is not
     * (when only p's height was tested, a vertex supported at the bottom edge of the funnel
     * scene was released below it, outside the wall, at up to 85 m/s: see
     * piola_unsupported_position). */
    if (!(hp >= PIOLA_R(0.0) && hp <= height && hx >= PIOLA_R(0.0) && hx <= height)) {
      const piola_real change = side_x - side_p;
      piola_real t = change != PIOLA_R(0.0) ? side_x / change : PIOLA_R(1.0);
      t = fmin(fmax(t, PIOLA_R(0.0)), PIOLA_R(1.0));
      const piola_real crossing = hx + t * (hp - hx);
      if (!(crossing >= PIOLA_R(0.0) && crossing <= height)) {
        return PIOLA_R(0.0);
      }
    }
    piola_v3 rhat = rp > PIOLA_R(0.0) ? piola_v3_scale(radial, PIOLA_R(1.0) / rp)
                                      : piola_any_perpendicular(axis);
    /* Outward wall normal: (rhat - slope axis) / sqrt(1 + slope^2). */
    piola_v3 wall = piola_v3_scale(piola_v3_sub(rhat, piola_v3_scale(axis, slope)), inv_len);
    *normal = inside ? piola_v3_scale(wall, PIOLA_R(-1.0)) : wall;
    return depth;
  }
  return PIOLA_R(0.0);
}

/* The centre of a sphere, capsule or box in its collider's own frame: a (a capsule's midpoint
 * between a and b). */
PIOLA_FN piola_v3 piola_collider_shape_center(PIOLA_COLLIDER_RECORD const piola_collider_data *c) {
  const piola_v3 a = piola_f32x3(c->a);
  if (c->kind == PIOLA_COLLIDER_KIND_SDF) { /* a: the grid's origin, b: its point counts */
    const piola_v3 span =
        piola_v3_sub(piola_f32x3(c->b), piola_v3_make(PIOLA_R(1.0), PIOLA_R(1.0), PIOLA_R(1.0)));
    return piola_v3_add(a, piola_v3_scale(span, PIOLA_R(0.5) * (piola_real)c->a[3]));
  }
  return c->kind == PIOLA_COLLIDER_KIND_CAPSULE || c->kind == PIOLA_COLLIDER_KIND_MESH
             ? piola_v3_scale(piola_v3_add(a, piola_f32x3(c->b)), PIOLA_R(0.5))
             : a;
}

/* The reach of a collider's bounding sphere (m), stored in position[3] of its record when it is
 * packed or posed: outside a sphere of this radius about piola_collider_bound_center()
 * piola_collider_contact() returns depth <= 0. It is the sphere's radius grown by a relative
 * margin that covers the rounding of the exact test (and of the float record), so that skipping
 * the exact test there changes nothing. The solid shapes (sphere, capsule, box) touch exactly
 * the points inside them; a plane is unbounded, and a funnel keeps a particle on the side of
 * its wall it started on, so a particle that crossed the wall is in contact however far it
 * went: both have no bound (-1). A posed collider's sphere is taken about its frame's origin,
 * which the pose moves without rotating it: no rotation is evaluated. */
PIOLA_FN piola_real piola_collider_reach(PIOLA_COLLIDER_RECORD const piola_collider_data *c) {
  piola_real radius;
  if (c->kind == PIOLA_COLLIDER_KIND_SPHERE) {
    radius = (piola_real)c->a[3];
  } else if (c->kind == PIOLA_COLLIDER_KIND_CAPSULE) {
    radius = PIOLA_R(0.5) * piola_v3_length(piola_v3_sub(piola_f32x3(c->b), piola_f32x3(c->a))) +
             (piola_real)c->a[3];
  } else if (c->kind == PIOLA_COLLIDER_KIND_BOX) {
    radius = piola_v3_length(piola_f32x3(c->b)); /* b: the half extents */
  } else if (c->kind == PIOLA_COLLIDER_KIND_MESH && c->b[3] > PIOLA_R(0.5)) {
    /* a closed mesh: solid within its box (a, b); an open one keeps a particle on its side
     * however far it went, as the funnel */
    radius = PIOLA_R(0.5) * piola_v3_length(piola_v3_sub(piola_f32x3(c->b), piola_f32x3(c->a)));
  } else if (c->kind == PIOLA_COLLIDER_KIND_SDF) {
    const piola_v3 span =
        piola_v3_sub(piola_f32x3(c->b), piola_v3_make(PIOLA_R(1.0), PIOLA_R(1.0), PIOLA_R(1.0)));
    radius = PIOLA_R(0.5) * (piola_real)c->a[3] * piola_v3_length(span);
  } else {
    return PIOLA_R(-1.0);
  }
  if (c->posed) {
    radius += piola_v3_length(piola_collider_shape_center(c));
  }
  return PIOLA_R(1.001) * radius + PIOLA_R(1e-6);
}

/* The centre of collider c's bounding sphere (piola_collider_reach) at t_end: the frame's
 * origin at t_end for a posed collider, else the shape's centre. */
PIOLA_FN piola_v3 piola_collider_bound_center(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                              piola_real t_end) {
  if (c->posed) {
    return piola_v3_add(piola_f32x3(c->position), piola_v3_scale(piola_f32x3(c->velocity), t_end));
  }
  return piola_collider_shape_center(c);
}

/* Whether p may be in contact with collider c at its pose at t_end: 0 only where p lies
 * outside its bounding sphere (piola_collider_reach; none: always 1). */
PIOLA_FN int piola_collider_may_touch(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                      piola_v3 p, piola_real t_end) {
  const piola_real reach = (piola_real)c->position[3];
  if (reach < PIOLA_R(0.0)) {
    return 1;
  }
  const piola_v3 d = piola_v3_sub(p, piola_collider_bound_center(c, t_end));
  return piola_v3_dot(d, d) <= reach * reach;
}

/* The fraction of a contact's tangential motion lt (m, over the substep) that friction removes
 * at penetration depth `depth` (m), with static and dynamic coefficients mu_s and mu_k (Macklin
 * et al. 2014, Sec. 6.1): all of it while lt <= mu_s depth (the contact sticks), mu_k depth of it
 * once lt >= (2 mu_s - mu_k) depth (it slides), and in between a length falling linearly from
 * mu_s depth to mu_k depth as the slip grows, so that what is removed is continuous in lt: a
 * jump from mu_s depth to mu_k depth at the onset of sliding let float and double, on either
 * side of it, remove lengths apart by (mu_s - mu_k) depth (crosscheck --resync). With
 * mu_k >= mu_s it removes min(lt, mu_k depth) past the onset. */
PIOLA_FN piola_real piola_friction_removed(piola_real mu_s, piola_real mu_k, piola_real depth,
                                           piola_real lt) {
  const piola_real stick = mu_s * depth;
  if (!(lt > stick)) {
    return PIOLA_R(1.0);
  }
  const piola_real removed = fmax(fmax(mu_k * depth, PIOLA_R(2.0) * stick - lt), PIOLA_R(0.0));
  return fmin(removed / lt, PIOLA_R(1.0));
}

/* The first half of piola_collider_correction_exact(): the collider's pose at t_end (*end; for
 * an unposed collider, the identity, unused) and x_start and p in its frame (*xl, *pl: the
 * world positions themselves for an unposed collider). */
PIOLA_FN void piola_collider_frames(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                    piola_v3 x_start, piola_v3 p, piola_real t_end, piola_real h,
                                    piola_rigid_pose *end, piola_v3 *xl, piola_v3 *pl) {
  if (c->posed) {
    *end = piola_collider_pose_at(c, t_end);
    *xl = piola_pose_to_local(piola_collider_pose_at(c, t_end - h), x_start);
    *pl = piola_pose_to_local(*end, p);
  } else {
    end->position = x_start; /* unused */
    end->q = x_start;
    end->qw = PIOLA_R(1.0);
    *xl = x_start;
    *pl = p;
  }
}

/* The COLLIDE stage's modes (bits; piola_collide_mode() on the host): its corrections are
 * recorded as the colliders' impulses (piola_world_get_collider_force), and an analytic
 * collider's correction keeps only its push along the normal (the multigrid scheme, whose Newton
 * step has those colliders' friction, newton.c). */
#define PIOLA_COLLIDE_RECORD 1
#define PIOLA_COLLIDE_NORMAL_ONLY 2 /* and every collider's supports keep their normals */

/* A collider's correction of a vertex as COLLIDE applies it under `mode`: as given, or, with
 * PIOLA_COLLIDE_NORMAL_ONLY, its part along the normal n only (the collider's friction then acts
 * in the Newton step, newton.c). */
PIOLA_FN piola_v3 piola_collide_correction_in_mode(piola_v3 n, piola_v3 correction, int mode) {
  if (mode & PIOLA_COLLIDE_NORMAL_ONLY) {
    return piola_v3_scale(n, piola_v3_dot(n, correction));
  }
  return correction;
}

/* How far the surface point of collider c at `point` moved over the substep of h seconds that
 * ends at pose `end` (m): (v + w x (point - origin)) h; zero for an unposed collider. */
PIOLA_FN piola_v3 piola_collider_surface_motion(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                                piola_rigid_pose end, piola_v3 point,
                                                piola_real h) {
  if (!c->posed) {
    return piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  }
  const piola_v3 arm = piola_v3_sub(point, end.position);
  const piola_v3 vs =
      piola_v3_add(piola_f32x3(c->velocity), piola_v3_cross(piola_f32x3(c->angular_velocity), arm));
  return piola_v3_scale(vs, h);
}

/* The second half of piola_collider_correction_exact(): from the depth and the normal nl the
 * shape's contact gave in the collider's frame, the correction with friction (returns 1), or no
 * contact where depth <= 0 (returns 0, *correction zero, *normal untouched). */
PIOLA_FN int piola_collider_respond(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                    piola_rigid_pose end, piola_v3 x_start, piola_v3 p,
                                    piola_real h, piola_real depth, piola_v3 nl,
                                    piola_v3 *correction, piola_v3 *normal) {
  *correction = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  if (!(depth > PIOLA_R(0.0))) {
    return 0;
  }
  piola_v3 n = c->posed ? piola_quat_rotate(end.q, end.qw, nl) : nl;
  *normal = n;
  piola_v3 push = piola_v3_scale(n, depth);
  /* Tangential motion since the start of the substep, after the push, relative to the
   * surface. */
  piola_v3 dx = piola_v3_add(piola_v3_sub(p, x_start), push);
  dx = piola_v3_sub(dx, piola_collider_surface_motion(c, end, piola_v3_add(p, push), h));
  piola_v3 dt = piola_v3_sub(dx, piola_v3_scale(n, piola_v3_dot(dx, n)));
  piola_real lt = piola_v3_length(dt);
  *correction = piola_v3_sub(
      push, piola_v3_scale(dt, piola_friction_removed((piola_real)c->static_friction,
                                                      (piola_real)c->dynamic_friction, depth, lt)));
  return 1;
}

/* The correction that projects p out of collider c, with friction (zero without contact);
 * returns 1 on contact. A correction, not a new position, so that a float caller can add it to
 * a small displacement and keep its precision.
 *
 * The substep of h seconds ends t_end seconds after the start of the step: p (where the
 * particle is predicted at the end of the substep) meets the collider at its pose at t_end,
 * x_start (where the particle started the substep) is compared with it at t_end - h (the
 * funnel's side), and friction acts on the tangential motion of the particle over the substep
 * relative to the surface point under it, which moved by (v + w x (q - origin)) h. An unposed
 * collider (identity pose at rest) skips the transforms, so it computes exactly what a static
 * collider in world coordinates does. On contact *normal is the collider's outward unit normal
 * there (world axes); else it is left as it was. The exact test alone:
 * piola_collider_correction_at() checks the bound first. */
PIOLA_FN int piola_collider_correction_exact(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                             piola_v3 x_start, piola_v3 p, piola_real t_end,
                                             piola_real h, piola_v3 *correction, piola_v3 *normal) {
  piola_rigid_pose end;
  piola_v3 xl, pl, nl = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  piola_collider_frames(c, x_start, p, t_end, h, &end, &xl, &pl);
  const piola_real depth = piola_collider_contact(c, xl, pl, &nl);
  return piola_collider_respond(c, end, x_start, p, h, depth, nl, correction, normal);
}

/* The origin of collider c's frame t seconds after the start of the step (m): the point the
 * torque it receives is taken about (piola_world_get_collider_force). An unposed collider's
 * origin is the world's. */
PIOLA_FN piola_v3 piola_collider_origin_at(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                           piola_real t) {
  return piola_v3_add(piola_f32x3(c->position), piola_v3_scale(piola_f32x3(c->velocity), t));
}

/* piola_collider_correction_exact() where p may touch c (piola_collider_may_touch()); else no
 * contact (0, zero correction), which is what the exact test would give there. */
PIOLA_FN int piola_collider_correction_at(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                          piola_v3 x_start, piola_v3 p, piola_real t_end,
                                          piola_real h, piola_v3 *correction, piola_v3 *normal) {
  if (!piola_collider_may_touch(c, p, t_end)) {
    *correction = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
    return 0;
  }
  return piola_collider_correction_exact(c, x_start, p, t_end, h, correction, normal);
}

/* piola_collider_correction_at() with the collider held at its pose at the start of the step
 * (no motion within the substep). */
PIOLA_FN int piola_collider_correction(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                       piola_v3 x_start, piola_v3 p, piola_v3 *correction) {
  piola_v3 normal;
  return piola_collider_correction_at(c, x_start, p, PIOLA_R(0.0), PIOLA_R(0.0), correction,
                                      &normal);
}

/* piola_collider_correction() applied to *p. */
PIOLA_FN int piola_collide_particle(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                    piola_v3 x_start, piola_v3 *p) {
  piola_v3 d;
  int hit = piola_collider_correction(c, x_start, *p, &d);
  *p = piola_v3_add(*p, d);
  return hit;
}

/* A supported vertex (piola_tet_support) at p, which the tet projections held back by `held`
 * metres from moving along -normal: where it would be without its support, so that the collider
 * stage pushes it (and spends friction) as it would have without the support. The held motion
 * can be much longer than the vertex's free motion would have been (the projections' step grows
 * as the supported corners' normal mass is taken out), so it must meet the collider wherever it
 * went through it: at a funnel's edge, that is its crossing test. */
PIOLA_FN piola_v3 piola_unsupported_position(piola_v3 p, piola_v3 normal, piola_real held) {
  return held > PIOLA_R(0.0) ? piola_v3_sub(p, piola_v3_scale(normal, held)) : p;
}

#endif /* PIOLA_COLLIDE_H */
