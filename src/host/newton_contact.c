/* Piola global Newton step: the body contacts in the multigrid scheme's solve.
 *
 * Each body contact the narrow phase listed for the substep whose vertex lies over its triangle
 * (within a quarter thickness beside it) and less than two thicknesses above its plane is a
 * one-sided penalty of the step, (k / 2) min(0, C)^2, C = o + n . (x_v - sum_j b_j x_j) the
 * height over the plane beyond the contact thickness, linearized at the Newton step's start (n
 * the triangle's unit normal, b the barycentric weights of the point under the vertex), with k =
 * PIOLA_NEWTON_CONTACT_STIFFNESS m / h^2 for the pair's effective mass m = 1 / (w_v + sum_j b_j^2
 * w_j): the penalty lets a load in by a hundredth of what the load would move the pair's mass in
 * the substep, and the CONTACT stage after the substep's last Newton step takes that out, with
 * its own friction on what it pushes. The stage runs after the last step only: a projection
 * between two steps would push every pressing pair out of its load, the next step would start
 * that far from its balance, and the last one's residual would hold part of the load with no
 * friction (a box sliding on a slope of another body went 12% past Coulomb's distance so).
 * Contacts beside a triangle (its edges and corners, where the CONTACT stage's release rules
 * decide) are left to that stage.
 * The pair's friction is IPC's lagged friction (Li et al. 2020, "Incremental Potential Contact",
 * Sec. 5): the potential of the supports' friction (newton_support.c: the same smoothed
 * static part) over the pair's relative tangential motion in the substep, s = T sum_j c_j (x_j -
 * x_j^n) (c = 1, -b_a, -b_b, -b_c; T the projection off n), with the normal force lambda the
 * pair pressed with at the end of the last substep, its penalty's force. lambda is kept per slot of
 * the contact lists and follows its contact when the narrow phase lists it in another slot of the
 * vertex; a new contact takes it from its first Newton step. n, b, o and lambda are held through
 * the line search, so that it minimizes one function. So the Newton step carries the bodies' loads
 * and their friction through their contacts: a body resting on another presses on it in the step's
 * solve, instead of falling through it in the step and being pushed back after it by the CONTACT
 * stage, which left the elastic state out of balance (relative residual 0.95 in a stack, against
 * 0.02 now) and let a box resting 40% over the edge of another tip off. The pairs' Hessian (k J^T
 * J, J the 12-vector of c_j n, for every pair: its model at the step's start, two-sided, so that
 * where a pair is about to touch the step sees it coming and the result does not hang on whether it
 * touched at the start; and the friction's c_i c_j blocks) couples two bodies' vertices, outside
 * the matrix's pattern: the conjugate gradients add it to their products, and each level of the
 * multigrid preconditioner its Galerkin product (piola_multigrid.term; the coarsest level solves
 * the bodies it joins together), so a stack's solve takes about as many iterations as one body's
 * (two boxes stacked: 22 a step, where a preconditioner without the pairs took 240). */
#include "world.h"

#include "newton.h"

#include "piola_contact.h"

#include <math.h>
#include <string.h>

/* Pair m's vertex and corner weights c_j. */
static void pair_weights(const double *f, double c[4]) {
  c[0] = 1.0;
  c[1] = -f[3];
  c[2] = -f[4];
  c[3] = -f[5];
}

/* sum_j c_j (x_j - x0_j) of pair m (x0 NULL: sum_j c_j x_j), into r. */
static void pair_motion(const piola_solver_newton *nw, int32_t m, const double *x, const double *x0,
                        double r[3]) {
  const int32_t *i = nw->pair_vertex + PIOLA_NEWTON_PAIR_INTS * (size_t)m;
  double c[4];
  pair_weights(nw->pair_frame + PIOLA_NEWTON_PAIR_REALS * (size_t)m, c);
  r[0] = r[1] = r[2] = 0.0;
  for (int j = 0; j < 4; ++j) {
    for (int a = 0; a < 3; ++a) {
      const size_t k = 3 * (size_t)i[j] + (size_t)a;
      r[a] += c[j] * (x0 != NULL ? x[k] - x0[k] : x[k]);
    }
  }
}

/* out_j += c_j v at pair m's vertices. */
static void pair_add(const piola_solver_newton *nw, int32_t m, const double v[3], double *out) {
  const int32_t *i = nw->pair_vertex + PIOLA_NEWTON_PAIR_INTS * (size_t)m;
  double c[4];
  pair_weights(nw->pair_frame + PIOLA_NEWTON_PAIR_REALS * (size_t)m, c);
  for (int j = 0; j < 4; ++j) {
    double *o = out + 3 * (size_t)i[j];
    for (int a = 0; a < 3; ++a) {
      o[a] += c[j] * v[a];
    }
  }
}

/* Pair m's height beyond the contact thickness at x (m), linearized at the Newton step's start:
 * its frame's offset plus n . (x_v - sum_j b_j x_j); r, that sum, into r. */
static double pair_gap(const piola_solver_newton *nw, int32_t m, const double *x, double r[3]) {
  const double *f = nw->pair_frame + PIOLA_NEWTON_PAIR_REALS * (size_t)m;
  pair_motion(nw, m, x, NULL, r);
  return f[PIOLA_NEWTON_PAIR_OFFSET] + r[0] * f[0] + r[1] * f[1] + r[2] * f[2];
}

/* The tangential part of r off pair frame f's normal n, into t; returns its length. */
static double pair_tangent(const double *f, const double r[3], double t[3]) {
  const double rn = r[0] * f[0] + r[1] * f[1] + r[2] * f[2];
  for (int a = 0; a < 3; ++a) {
    t[a] = r[a] - rn * f[a];
  }
  return sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
}

/* Pair frame f's friction at tangential slip length `slip` (its PIOLA_NEWTON_FRICTION_REALS:
 * lambda, mu, mu). */
static double pair_friction(const double *f, double slip, double *energy, double *rate) {
  const double fr[3] = {f[PIOLA_NEWTON_PAIR_LAMBDA], f[PIOLA_NEWTON_PAIR_MU],
                        f[PIOLA_NEWTON_PAIR_MU]};
  return piola_newton_friction_force(fr, slip, PIOLA_NEWTON_STICK_SLIP, energy, rate);
}

/* The pairs of the current Newton step from the contact lists (count, entries), at w->p. */
void piola_newton_gather_pairs(piola_world *w, double h, const int32_t *count,
                               const int32_t *entries) {
  piola_solver_newton *nw = &w->newton;
  const piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)w->def.contact_thickness;
  const double mu = (double)w->def.contact_friction;
  nw->pair_count = 0;
  if (count == NULL) {
    return;
  }
  const int32_t surface = nw->pair_capacity / PIOLA_CONTACTS_PER_VERTEX;
  for (int32_t sv = 0; sv < c->vertex_count && sv < surface; ++sv) {
    const int32_t v = c->vertex[sv];
    /* The vertex's slots as they were: a contact the new list holds in another slot keeps its
     * normal force; a new contact (or none) has none known. */
    const int32_t *was_entry = nw->pair_entry + PIOLA_CONTACTS_PER_VERTEX * (size_t)sv;
    const double *was_lambda = nw->pair_lambda + PIOLA_CONTACTS_PER_VERTEX * (size_t)sv;
    int32_t kept_entry[PIOLA_CONTACTS_PER_VERTEX];
    double kept_lambda[PIOLA_CONTACTS_PER_VERTEX];
    memcpy(kept_entry, was_entry, sizeof kept_entry);
    memcpy(kept_lambda, was_lambda, sizeof kept_lambda);
    for (int32_t k = 0; k < PIOLA_CONTACTS_PER_VERTEX; ++k) {
      const int32_t slot = PIOLA_CONTACTS_PER_VERTEX * sv + k;
      const int32_t entry = k < count[sv] ? entries[slot] : -1;
      nw->pair_entry[slot] = entry;
      nw->pair_lambda[slot] = 0.0;
      for (int32_t j = 0; j < PIOLA_CONTACTS_PER_VERTEX && entry >= 0; ++j) {
        if (kept_entry[j] == entry) {
          nw->pair_lambda[slot] = kept_lambda[j];
          break;
        }
      }
      if (entry < 0) {
        continue;
      }
      const int32_t *q = c->triangle + 3 * (size_t)piola_contact_entry_triangle(entry);
      const int side = piola_contact_entry_side(entry);
      const int32_t i[PIOLA_NEWTON_PAIR_INTS] = {v, c->vertex[q[0]], c->vertex[q[side ? 2 : 1]],
                                                 c->vertex[q[side ? 1 : 2]], slot};
      const piola_v3 p = piola_vertex_at(w->p, i[0]), a = piola_vertex_at(w->p, i[1]),
                     b = piola_vertex_at(w->p, i[2]), d = piola_vertex_at(w->p, i[3]);
      piola_v3 n = piola_v3_make(0.0, 0.0, 0.0), bary = n;
      double height = 0.0, lateral = 0.0;
      const bool over = piola_contact_frame(p, a, b, d, &n, &height, &bary, &lateral) &&
                        lateral <= PIOLA_NEWTON_CONTACT_NEAR * thickness &&
                        height < 2.0 * thickness;
      const double bw[3] = {bary.x, bary.y, bary.z};
      double sum_w = w->w[i[0]];
      for (int j = 0; j < 3 && over; ++j) {
        sum_w += bw[j] * bw[j] * w->w[i[j + 1]];
      }
      if (!over || !(sum_w > 0.0)) {
        nw->pair_lambda[slot] = 0.0; /* not in the solve: not pressing in it */
        continue;
      }
      const int32_t m = nw->pair_count++;
      memcpy(nw->pair_vertex + PIOLA_NEWTON_PAIR_INTS * (size_t)m, i, sizeof i);
      double *f = nw->pair_frame + PIOLA_NEWTON_PAIR_REALS * (size_t)m;
      f[0] = n.x;
      f[1] = n.y;
      f[2] = n.z;
      f[3] = bw[0];
      f[4] = bw[1];
      f[5] = bw[2];
      f[PIOLA_NEWTON_PAIR_OFFSET] =
          height - thickness -
          piola_v3_dot(n, piola_v3_sub(p, piola_barycentric_point(bary, a, b, d)));
      f[PIOLA_NEWTON_PAIR_STIFFNESS] = PIOLA_NEWTON_CONTACT_STIFFNESS / (sum_w * h * h);
      f[PIOLA_NEWTON_PAIR_LAMBDA] = nw->pair_lambda[slot];
      f[PIOLA_NEWTON_PAIR_MU] = mu;
      /* the friction's Hessian at p, held through the step: across the slip F / slip, along it
       * dF / dslip where positive (as a support's, rows_chunk) */
      double r[3], t[3], energy, rate;
      pair_motion(nw, m, w->p, w->x, r);
      const double slip = pair_tangent(f, r, t);
      const double force = pair_friction(f, slip, &energy, &rate);
      const double fr[3] = {f[PIOLA_NEWTON_PAIR_LAMBDA], mu, mu};
      double across, along;
      piola_newton_friction_stiffness(fr, slip, PIOLA_NEWTON_STICK_SLIP, force, rate, &across,
                                      &along);
      f[PIOLA_NEWTON_PAIR_ACROSS] = across;
      f[PIOLA_NEWTON_PAIR_ALONG] = along - across;
      for (int e = 0; e < 3; ++e) {
        f[PIOLA_NEWTON_PAIR_SLIP + e] = slip > 0.0 ? t[e] / slip : 0.0;
      }
    }
  }
}

/* The pairs' part of G at x (J): their penalties and their friction; with `gradient`, their
 * gradients added to it. */
double piola_newton_pairs_energy(const piola_world *w, const double *x, double *gradient) {
  const piola_solver_newton *nw = &w->newton;
  double total = 0.0;
  for (int32_t m = 0; m < nw->pair_count; ++m) {
    const double *f = nw->pair_frame + PIOLA_NEWTON_PAIR_REALS * (size_t)m;
    double r[3];
    const double gap = pair_gap(nw, m, x, r);
    if (gap < 0.0) {
      const double k = f[PIOLA_NEWTON_PAIR_STIFFNESS];
      total += 0.5 * k * gap * gap;
      if (gradient != NULL) {
        const double g[3] = {k * gap * f[0], k * gap * f[1], k * gap * f[2]};
        pair_add(nw, m, g, gradient);
      }
    }
    if (f[PIOLA_NEWTON_PAIR_LAMBDA] > 0.0) {
      double t[3], energy, rate;
      pair_motion(nw, m, x, w->x, r);
      const double slip = pair_tangent(f, r, t);
      const double force = pair_friction(f, slip, &energy, &rate);
      total += energy;
      if (gradient != NULL && slip > 0.0) {
        const double g[3] = {force / slip * t[0], force / slip * t[1], force / slip * t[2]};
        pair_add(nw, m, g, gradient);
      }
    }
  }
  return total;
}

/* Pair k's term of the conjugate gradients' coupling (piola_multigrid.term, ctx the
 * piola_solver_newton): its Hessian at the Newton step's start, (c c^T) (x) K over its vertex and
 * corners, K = k n n^T for its penalty plus, where it pressed, its friction's across (I - n n^T)
 * + (along - across) e e^T (e the slip's direction, in the tangent plane). */
void piola_newton_pair_term(const void *ctx, int32_t k, piola_mg_term *out) {
  const piola_solver_newton *nw = ctx;
  const double *f = nw->pair_frame + PIOLA_NEWTON_PAIR_REALS * (size_t)k;
  const int32_t *i = nw->pair_vertex + PIOLA_NEWTON_PAIR_INTS * (size_t)k;
  double c[4];
  pair_weights(f, c);
  const double stiffness = f[PIOLA_NEWTON_PAIR_STIFFNESS];
  const bool friction = f[PIOLA_NEWTON_PAIR_LAMBDA] > 0.0;
  const double across = friction ? f[PIOLA_NEWTON_PAIR_ACROSS] : 0.0;
  const double along = friction ? f[PIOLA_NEWTON_PAIR_ALONG] : 0.0;
  const double *e = f + PIOLA_NEWTON_PAIR_SLIP;
  for (int j = 0; j < 4; ++j) {
    out->node[j] = i[j];
    out->weight[j] = c[j];
  }
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      const double nn = f[a] * f[b];
      out->k[3 * a + b] =
          stiffness * nn + across * ((a == b ? 1.0 : 0.0) - nn) + along * e[a] * e[b];
    }
  }
}

/* After a Newton step taken whole (alpha 1) or shortened (alpha < 1) by the line search: each
 * pair's normal force at w->p (N), the lambda of its friction from the next substep on (after the
 * substep's last Newton step, where it was taken whole: a shortened step stops short of the
 * balance), or from the next Newton step where it has none yet (a new contact). */
void piola_newton_keep_pair_forces(piola_world *w, double alpha) {
  piola_solver_newton *nw = &w->newton;
  /* a step the line search shortened stopped short of the balance its forces describe */
  const bool last = w->iteration == w->def.iterations - 1 && alpha == 1.0;
  for (int32_t m = 0; m < nw->pair_count; ++m) {
    const double *f = nw->pair_frame + PIOLA_NEWTON_PAIR_REALS * (size_t)m;
    const int32_t slot = nw->pair_vertex[PIOLA_NEWTON_PAIR_INTS * (size_t)m + 4];
    if (!last && nw->pair_lambda[slot] > 0.0) {
      continue;
    }
    double r[3];
    const double gap = pair_gap(nw, m, w->p, r);
    nw->pair_lambda[slot] = gap < 0.0 ? -f[PIOLA_NEWTON_PAIR_STIFFNESS] * gap : 0.0;
  }
}
