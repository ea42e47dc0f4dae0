/* Piola global Newton step: the supported vertices, those a collider pushed in the substep's
 * last COLLIDE stage. The Newton step (newton.c) keeps each in its place along its collider's
 * normal (the filter of a constrained particle, Baraff, Witkin 1998, "Large Steps in Cloth
 * Simulation", Sec. 5.3); this file holds what moves it along the surface: its friction, and what
 * the solve's forces on it leave for COLLIDE and for the colliders' force records.
 *
 * A supported vertex's friction with its collider (of any kind: under this scheme a
 * mesh or SDF collider gives its supports their normals too, piola_mesh_supports) is a potential of
 * the step, lagged as in IPC (Li et al. 2020, "Incremental Potential Contact", Sec. 5): with the
 * normal force lambda it pressed on the collider with at the end of the last substep (n . grad
 * G at a new contact), held through the substep so that its Newton steps minimize one function,
 * and its slip u from its anchor (tangential part, |u| = y), the friction force has
 * magnitude lambda mu_s f1(y / eps) up to eps = PIOLA_NEWTON_STICK_SLIP (f1(t) = 2 t - t^2:
 * IPC's smoothed static friction, a stiff spring through the anchor), falls linearly to
 * lambda mu_k at 2 eps (as COLLIDE's friction does, piola_friction_removed) and stays there,
 * against the slip; its energy is the integral, its Hessian (F(y) / y) times the projection on
 * the tangent plane (the radial part, negative, left out). The normal and the anchor are held
 * through the step's line search. The anchor is where the vertex stood when it met the
 * collider, carried along by the collider's surface in each substep (a moving or rotating
 * collider carries what rests on it); at the end of each substep, where the vertex slipped
 * farther than eps, it follows the vertex to eps behind it. IPC measures the slip over the
 * step instead, so a vertex held below mu_s lambda still creeps at up to eps / h; the anchor,
 * as the bristle of a spring-and-slider model of Coulomb friction, holds it (a box's sole on the
 * ground, a body on a slope). It carries from one step to the next and is part of the saved
 * state. So a converged step is the implicit step with Coulomb friction at the supports: a body
 * at rest on the ground converges there (where COLLIDE's friction after each Newton step left
 * the neighbours of the sole out of balance by what friction held, a relative residual of 0.6 to
 * 0.9; bench/LOG.md, "Friction in the Newton step"), and a body on a slope slides or sticks as
 * Coulomb says. The colliders' friction force (piola_world_get_collider_force) is the sum of
 * these forces at each substep's last iteration (piola_newton_record_supports).
 */
#include "world.h"

#include "newton.h"

#include <math.h>
#include <string.h>

double piola_newton_friction_force(const double *f, double slip, double eps, double *energy,
                                   double *rate) {
  const double lambda = f[0], mu_s = f[1], mu_k = f[2], t = slip / eps;
  const double static_energy = lambda * mu_s * eps * (2.0 / 3.0); /* at slip eps */
  if (t < 1.0) {
    *energy = lambda * mu_s * eps * (t * t - t * t * t / 3.0);
    *rate = lambda * mu_s * (2.0 - 2.0 * t) / eps;
    return lambda * mu_s * (2.0 * t - t * t);
  }
  if (t < 2.0) { /* from mu_s to mu_k */
    const double a = t - 1.0;
    *energy = static_energy + lambda * eps * (mu_s * a - 0.5 * (mu_s - mu_k) * a * a);
    *rate = fmax(0.0, lambda * (mu_k - mu_s) / eps);
    return lambda * (mu_s - (mu_s - mu_k) * a);
  }
  *energy = static_energy + lambda * eps * 0.5 * (mu_s + mu_k) + lambda * mu_k * (slip - 2.0 * eps);
  *rate = 0.0;
  return lambda * mu_k;
}

void piola_newton_friction_stiffness(const double *f, double slip, double eps, double force,
                                     double rate, double *across, double *along) {
  *across = slip > 0.0 ? force / slip : 2.0 * f[0] * f[1] / eps;
  *along = slip > 0.0 ? rate : *across;
}

double piola_newton_support_slip(const piola_world *w, const double *x, int32_t i, double u[3]) {
  const piola_solver_newton *nw = &w->newton;
  const double *a = nw->anchor + 3 * (size_t)i, *n = nw->normal + 3 * (size_t)i;
  double un = 0.0;
  for (int c = 0; c < 3; ++c) {
    u[c] = x[3 * (size_t)i + (size_t)c] - a[c];
    un += u[c] * n[c];
  }
  for (int c = 0; c < 3; ++c) {
    u[c] -= un * n[c];
  }
  return sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
}

void piola_newton_support_start(piola_world *w, int32_t i, double h) {
  piola_solver_newton *nw = &w->newton;
  double *f = nw->friction + PIOLA_NEWTON_FRICTION_REALS * (size_t)i;
  const int32_t c = w->support_collider[i];
  if (nw->kind[i] != 1 || c < 0 || c >= w->collider_count) {
    memset(f, 0, sizeof(double) * 3);
  } else {
    const piola_collider_data *k = &w->colliders[c];
    f[1] = (double)k->static_friction;
    f[2] = (double)k->dynamic_friction;
    const bool held = nw->anchor_collider[i] == c;
    if (!held || w->iteration == 0) {
      f[0] = -1.0; /* lambda, set with its row (piola_newton_support_row), held in the substep */
      const piola_v3 s = piola_collider_surface_motion(
          k, piola_collider_pose_at(k, w->collider_time), piola_vertex_at(w->p, i), h);
      const double *from = held ? nw->anchor + 3 * (size_t)i : w->x + 3 * (size_t)i;
      double *a = nw->anchor + 3 * (size_t)i;
      a[0] = from[0] + s.x;
      a[1] = from[1] + s.y;
      a[2] = from[2] + s.z;
      nw->anchor_collider[i] = c;
      /* A vertex its collider held in the last substep starts the solve where its anchor
       * left it along the surface (its start, carried), not where its prediction slid it: the
       * prediction puts a resting sole tens of eps from its anchors, where friction is
       * kinetic and its model has no stiffness along the slip, and the Newton steps then
       * overshoot past the anchors (a box resting on a slope kept a relative residual of
       * 2e-3 at 5 iterations, 1e-8 from here). */
      if (held) {
        double *pi = w->p + 3 * (size_t)i;
        const double *xi = w->x + 3 * (size_t)i, *ni = nw->normal + 3 * (size_t)i;
        double t[3] = {xi[0] + s.x - pi[0], xi[1] + s.y - pi[1], xi[2] + s.z - pi[2]};
        const double tn = t[0] * ni[0] + t[1] * ni[1] + t[2] * ni[2];
        for (int q = 0; q < 3; ++q) {
          pi[q] += t[q] - tn * ni[q];
        }
      }
    }
  }
}

double piola_newton_support_energy(const piola_world *w, const double *x, int32_t i) {
  const piola_solver_newton *nw = &w->newton;
  const double *f = nw->friction + PIOLA_NEWTON_FRICTION_REALS * (size_t)i;
  if (nw->kind[i] != 1 || !(f[0] > 0.0)) {
    return 0.0;
  }
  double u[3], e, rate;
  piola_newton_friction_force(f, piola_newton_support_slip(w, x, i, u), PIOLA_NEWTON_STICK_SLIP, &e,
                              &rate);
  return e;
}

void piola_newton_support_row(piola_world *w, int32_t i, double gi[3], double d[9]) {
  piola_solver_newton *nw = &w->newton;
  double *f = nw->friction + PIOLA_NEWTON_FRICTION_REALS * (size_t)i;
  const double *n = nw->normal + 3 * (size_t)i;
  if (f[0] < 0.0) {
    /* (at the substep's first Newton step, or where the vertex met its collider) the normal
     * force the last substep's solve left on it, else (a new contact) the normal part of the
     * gradient so far: its inertia (a landing's impact), the elastic and the external forces */
    f[0] = f[PIOLA_NEWTON_NORMAL_FORCE] > 0.0
               ? f[PIOLA_NEWTON_NORMAL_FORCE]
               : fmax(0.0, gi[0] * n[0] + gi[1] * n[1] + gi[2] * n[2]);
  }
  if (f[0] > 0.0) {
    const double eps = PIOLA_NEWTON_STICK_SLIP;
    double u[3], energy, rate;
    const double slip = piola_newton_support_slip(w, w->p, i, u);
    const double force = piola_newton_friction_force(f, slip, eps, &energy, &rate);
    double across, along;
    piola_newton_friction_stiffness(f, slip, eps, force, rate, &across, &along);
    double e[3] = {0.0, 0.0, 0.0}; /* the slip's direction */
    for (int a = 0; a < 3 && slip > 0.0; ++a) {
      e[a] = u[a] / slip;
    }
    for (int a = 0; a < 3; ++a) {
      gi[a] += across * u[a];
      for (int b = 0; b < 3; ++b) {
        d[3 * a + b] +=
            across * ((a == b ? 1.0 : 0.0) - n[a] * n[b]) + (along - across) * e[a] * e[b];
      }
    }
  }
}

void piola_newton_support_limit(piola_world *w) {
  piola_solver_newton *nw = &w->newton;
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    const double *f = nw->friction + PIOLA_NEWTON_FRICTION_REALS * (size_t)i;
    if (nw->kind[i] != 1 || !(f[0] > 0.0)) {
      continue;
    }
    double u[3];
    const double slip = piola_newton_support_slip(w, w->p, i, u);
    double *d = nw->dx + 3 * (size_t)i;
    const double ahead =
        slip > 0.0 ? (u[0] * (u[0] + d[0]) + u[1] * (u[1] + d[1]) + u[2] * (u[2] + d[2])) / slip
                   : 0.0;
    if (ahead < 0.0) {
      for (int a = 0; a < 3; ++a) {
        d[a] -= ahead * u[a] / slip;
      }
    }
  }
}

/* The motion the solve held back at each supported vertex (m, along -normal), kept as the
 * support's held motion (piola_tet_support): the next COLLIDE pushes the vertex back out by it,
 * keeps the vertex supported while the body presses on the collider (and lets it go when it
 * pulls away) and records it as the collider's push (m d / h^2). From the force the filter took
 * out, N = max(0, -n.r) with r = -(g + H alpha dx) the vertex's row of the residual, it is the
 * depth N h^2 / m that force gives the vertex's own mass in the substep, so that the record is
 * N. It is bounded by the larger of the step of the vertex's own block, N / n.H_ii n, and the
 * contact thickness, since COLLIDE starts from the vertex moved that far into its collider.
 * Cloth vertices keep the step of their own block (when COLLIDE's friction weighed against this
 * depth, a light cloth vertex pulled onto a box's edge by its membrane reached that bound, and
 * the cloth draped over the boxes of the cloth scene stuck and slipped from step to step on
 * rounding); piola_newton_record_supports adds what their pushes leave of N. The force N itself is
 * kept as the vertex's normal force for its friction (the module comment). */
void piola_newton_hold_supported(piola_world *w, double alpha, double inv_h2) {
  const piola_solver_newton *nw = &w->newton;
  const double *val = nw->mg.level[0].a.val;
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    if (nw->kind[i] != 1) {
      nw->friction[PIOLA_NEWTON_FRICTION_REALS * (size_t)i + PIOLA_NEWTON_NORMAL_FORCE] = 0.0;
      continue;
    }
    double r[3];
    for (int c = 0; c < 3; ++c) {
      r[c] = -nw->gradient[3 * (size_t)i + (size_t)c];
    }
    for (int32_t k = nw->start[i]; k < nw->start[i + 1]; ++k) {
      const double *v = val + 9 * (size_t)k, *dxj = nw->dx + 3 * (size_t)nw->col[k];
      for (int a = 0; a < 3; ++a) {
        r[a] -= alpha * (v[3 * a] * dxj[0] + v[3 * a + 1] * dxj[1] + v[3 * a + 2] * dxj[2]);
      }
    }
    const double *n = nw->normal + 3 * (size_t)i, *d = val + 9 * (size_t)nw->mg.level[0].a.diag[i];
    double nhn = 0.0;
    for (int a = 0; a < 3; ++a) {
      nhn += n[a] * (d[3 * a] * n[0] + d[3 * a + 1] * n[1] + d[3 * a + 2] * n[2]);
    }
    const double into = -(n[0] * r[0] + n[1] * r[1] + n[2] * r[2]);
    const double own = nhn > 0.0 ? into / nhn : 0.0;
    /* a tet's corner: its corner list (elements in order, tets first) starts with a tet */
    const bool solid = nw->corner_start[i] < nw->corner_start[i + 1] &&
                       (nw->corners[nw->corner_start[i]] >> 2) < w->solver.tet_count;
    const double inertial =
        solid ? fmin(into / (inv_h2 / w->w[i]), fmax(own, (double)w->def.contact_thickness)) : own;
    w->solver.support[4 * (size_t)i + 3] = into > 0.0 ? inertial : 0.0;
    nw->friction[PIOLA_NEWTON_FRICTION_REALS * (size_t)i + PIOLA_NEWTON_NORMAL_FORCE] =
        fmax(into, 0.0);
  }
}

/* What the supported vertices' colliders met in the substep's last Newton step and COLLIDE does
 * not record, into their records as COLLIDE records its corrections (the impulse on the vertex
 * times h, m dx = F h^2, and its moment about the collider's origin): the friction forces F, and
 * the normal force N beyond the held motion d that COLLIDE pushes back and records (N h^2 - m d:
 * d is N h^2 / m except where bounded, as for cloth vertices, hold_supported). */
void piola_newton_record_supports(piola_world *w, double inv_h2) {
  piola_solver_newton *nw = &w->newton;
  const double eps = PIOLA_NEWTON_STICK_SLIP, h2 = 1.0 / inv_h2;
  for (int32_t i = 0; i < w->vertex_count && nw->collider_solve_force != NULL; ++i) {
    const double *f = nw->friction + PIOLA_NEWTON_FRICTION_REALS * (size_t)i,
                 *n = nw->normal + 3 * (size_t)i;
    const int32_t c = w->support_collider[i];
    if (nw->kind[i] != 1 || c < 0 || 6 * (c + 1) > nw->collider_solve_force_capacity) {
      continue;
    }
    piola_v3 d = piola_v3_make(0.0, 0.0, 0.0);
    double u[3], energy, rate;
    const double slip = f[0] > 0.0 ? piola_newton_support_slip(w, w->p, i, u) : 0.0;
    if (slip > 0.0) {
      const double k = -piola_newton_friction_force(f, slip, eps, &energy, &rate) / slip * h2;
      d = piola_v3_make(k * u[0], k * u[1], k * u[2]); /* F h^2 */
    }
    const double beyond =
        f[PIOLA_NEWTON_NORMAL_FORCE] * h2 - w->solver.support[4 * (size_t)i + 3] / w->w[i];
    if (beyond > 0.0) {
      d = piola_v3_add(d, piola_v3_make(beyond * n[0], beyond * n[1], beyond * n[2]));
    }
    const piola_v3 arm = piola_v3_sub(piola_vertex_at(w->p, i),
                                      piola_collider_origin_at(&w->colliders[c], w->collider_time));
    const piola_v3 moment = piola_v3_cross(arm, d);
    double *r = nw->collider_solve_force + 6 * (size_t)c;
    r[0] += d.x;
    r[1] += d.y;
    r[2] += d.z;
    r[3] += moment.x;
    r[4] += moment.y;
    r[5] += moment.z;
  }
}

/* At the substep's end: each anchor of a vertex its collider still supports follows the vertex
 * to eps behind it where the vertex slipped farther; the others are let go. */
void piola_newton_follow_anchors(piola_world *w) {
  piola_solver_newton *nw = &w->newton;
  for (int32_t i = 0; i < w->vertex_count; ++i) {
    if (nw->kind[i] != 1 || nw->anchor_collider[i] != w->support_collider[i]) {
      nw->anchor_collider[i] = -1;
      continue;
    }
    double u[3];
    const double slip = piola_newton_support_slip(w, w->p, i, u);
    if (slip > PIOLA_NEWTON_STICK_SLIP) {
      const double t = 1.0 - PIOLA_NEWTON_STICK_SLIP / slip;
      for (int a = 0; a < 3; ++a) {
        nw->anchor[3 * (size_t)i + (size_t)a] += t * u[a];
      }
    }
  }
}
