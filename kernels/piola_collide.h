/* Piola static colliders: per-particle projection out of planes, spheres, boxes, capsules and
 * open funnels, with position-based Coulomb friction; shared by C and OpenCL C.
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

/* Half the thickness of a funnel's wall, as a fraction of the funnel's height. */
#define PIOLA_FUNNEL_SKIN PIOLA_R(1e-4)

/* One collider as stored for the solver (64 bytes, same layout in C and OpenCL C):
 *   plane:   a = (normal, offset)
 *   sphere:  a = (center, radius)
 *   box:     a = (center, 0), b = (half extents, 0), c = rotation quaternion (x, y, z, w)
 *   capsule: a = (end A, radius), b = (end B, 0)
 *   funnel:  a = (base center, base radius), b = (unit axis, height), c = (top radius, 0, 0, 0)
 */
typedef struct piola_collider_data {
  piola_f32 a[4];
  piola_f32 b[4];
  piola_f32 c[4];
  piola_i32 kind;
  piola_f32 static_friction;
  piola_f32 dynamic_friction;
  piola_i32 reserved;
} piola_collider_data;

PIOLA_FN piola_v3 piola_f32x3(const piola_f32 *v) {
  return piola_v3_make((piola_real)v[0], (piola_real)v[1], (piola_real)v[2]);
}

/* Rotates v by the unit quaternion (q.xyz, qw): v + 2 qw (q x v) + 2 q x (q x v). */
PIOLA_FN piola_v3 piola_quat_rotate(piola_v3 q, piola_real qw, piola_v3 v) {
  piola_v3 t = piola_v3_scale(piola_v3_cross(q, v), PIOLA_R(2.0));
  return piola_v3_add(piola_v3_add(v, piola_v3_scale(t, qw)), piola_v3_cross(q, t));
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

/* Penetration depth (> 0 when in contact) of p into collider c and the outward normal. x_start
 * is the particle's position at the start of the step (the funnel keeps its side). */
PIOLA_FN piola_real piola_collider_contact(const piola_collider_data *c, piola_v3 x_start,
                                           piola_v3 p, piola_v3 *normal) {
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
    /* Signed distance to the wall in the (radial, axial) plane; negative inside. */
    piola_v3 rel = piola_v3_sub(p, a);
    piola_real hp = piola_v3_dot(rel, axis);
    if (!(hp >= PIOLA_R(0.0) && hp <= height)) {
      return PIOLA_R(0.0);
    }
    piola_v3 radial = piola_v3_sub(rel, piola_v3_scale(axis, hp));
    piola_real rp = piola_v3_length(radial);
    piola_real dist_p = (rp - r0 - slope * hp) * inv_len;
    piola_v3 rel_x = piola_v3_sub(x_start, a);
    piola_real hx = piola_v3_dot(rel_x, axis);
    piola_real rx = piola_v3_length(piola_v3_sub(rel_x, piola_v3_scale(axis, hx)));
    int inside = (rx - r0 - slope * hx) <= PIOLA_R(0.0);
    /* The wall has a thickness: particles are kept PIOLA_FUNNEL_SKIN * height away from its
     * middle surface on their side, so none is left on it for rounding to decide its side. */
    piola_real skin = PIOLA_FUNNEL_SKIN * height;
    piola_v3 rhat = rp > PIOLA_R(0.0) ? piola_v3_scale(radial, PIOLA_R(1.0) / rp)
                                      : piola_any_perpendicular(axis);
    /* Outward wall normal: (rhat - slope axis) / sqrt(1 + slope^2). */
    piola_v3 wall = piola_v3_scale(piola_v3_sub(rhat, piola_v3_scale(axis, slope)), inv_len);
    if (inside) {
      *normal = piola_v3_scale(wall, PIOLA_R(-1.0));
      return dist_p + skin;
    }
    *normal = wall;
    return skin - dist_p;
  }
  return PIOLA_R(0.0);
}

/* The correction that projects p out of collider c, with friction (zero without contact);
 * returns 1 on contact. A correction, not a new position, so that a float caller can add it to
 * a small displacement and keep its precision. */
PIOLA_FN int piola_collider_correction(const piola_collider_data *c, piola_v3 x_start, piola_v3 p,
                                       piola_v3 *correction) {
  piola_v3 n;
  *correction = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  piola_real depth = piola_collider_contact(c, x_start, p, &n);
  if (!(depth > PIOLA_R(0.0))) {
    return 0;
  }
  piola_v3 push = piola_v3_scale(n, depth);
  /* Tangential motion since the start of the step, after the push. */
  piola_v3 dx = piola_v3_add(piola_v3_sub(p, x_start), push);
  piola_v3 dt = piola_v3_sub(dx, piola_v3_scale(n, piola_v3_dot(dx, n)));
  piola_real lt = piola_v3_length(dt);
  piola_real keep = PIOLA_R(1.0); /* fraction of dt removed */
  if (lt < (piola_real)c->static_friction * depth) {
    keep = PIOLA_R(1.0);
  } else if (lt > PIOLA_R(0.0)) {
    keep = fmin((piola_real)c->dynamic_friction * depth / lt, PIOLA_R(1.0));
  } else {
    keep = PIOLA_R(0.0);
  }
  *correction = piola_v3_sub(push, piola_v3_scale(dt, keep));
  return 1;
}

/* piola_collider_correction() applied to *p. */
PIOLA_FN int piola_collide_particle(const piola_collider_data *c, piola_v3 x_start, piola_v3 *p) {
  piola_v3 d;
  int hit = piola_collider_correction(c, x_start, *p, &d);
  *p = piola_v3_add(*p, d);
  return hit;
}

#endif /* PIOLA_COLLIDE_H */
