/* Piola global Newton step (newton.c): the pattern of the step's matrix and the CPU reference's
 * SOLVE_GLOBAL stage of the multigrid scheme (PIOLA_SCHEME_MULTIGRID). */
#ifndef PIOLA_NEWTON_H
#define PIOLA_NEWTON_H

#include "piola/piola.h"

#include "multigrid.h"
#include "solver_arrays.h"

#include <stdbool.h>
#include <stdint.h>

/* Conjugate gradients stop at PIOLA_MULTIGRID_CG_TOLERANCE (piola_types.h) relative to the
 * right-hand side (an inexact Newton step: Dembo, Eisenstat, Steihaug 1982), or after
 * PIOLA_MULTIGRID_CG_MAX iterations. */
/* Halvings of the step at most in the line search (Armijo's condition, c = 1e-4). */
#define PIOLA_NEWTON_HALVINGS 10
/* A later iteration of a substep keeps its Hessian while the gradient's norm fell to at most
 * this fraction of the last iteration's (newton.c). */
#define PIOLA_NEWTON_KEEP 0.5
/* Reals per element of piola_solver_newton.element_damp. */
#define PIOLA_NEWTON_DAMP_REALS 24
/* Reals per vertex of piola_solver_newton.friction: the lagged normal force lambda (N; set at
 * the substep's first Newton step and held through the substep), the collider's static and
 * dynamic coefficients, and the normal force the last Newton step left on it (N, 0 where it was
 * not supported; it carries from one step to the next, in the saved state). */
#define PIOLA_NEWTON_FRICTION_REALS 4
/* The index of that last normal force among them. */
#define PIOLA_NEWTON_NORMAL_FORCE 3
/* The slip (m) from its anchor over which a supported vertex's static friction grows from zero
 * to mu_s lambda; past it the anchor follows the vertex (newton_support.c). */
#define PIOLA_NEWTON_STICK_SLIP 1e-5

/* Per body contact in the solve (newton_contact.c), piola_solver_newton.pair_vertex holds
 * PIOLA_NEWTON_PAIR_INTS: the vertex, its triangle's three corners (world vertex indices) and its
 * slot in the contact lists; pair_frame holds PIOLA_NEWTON_PAIR_REALS: the triangle's unit normal
 * n (3), the barycentric weights b (3) of the point under the vertex, then the reals named below.
 * Over the Newton step the vertex's height over the plane beyond the contact thickness is OFFSET
 * + n . (x_v - sum_j b_j x_j) (m). */
#define PIOLA_NEWTON_PAIR_INTS 5
#define PIOLA_NEWTON_PAIR_REALS 15
#define PIOLA_NEWTON_PAIR_OFFSET 6    /* m */
#define PIOLA_NEWTON_PAIR_STIFFNESS 7 /* N/m */
#define PIOLA_NEWTON_PAIR_LAMBDA 8    /* the friction's lagged normal force (N) */
#define PIOLA_NEWTON_PAIR_MU 9        /* the friction coefficient */
#define PIOLA_NEWTON_PAIR_ACROSS 10   /* the friction's Hessian across the slip (N/m) */
#define PIOLA_NEWTON_PAIR_ALONG 11    /* along it, less across (N/m) */
#define PIOLA_NEWTON_PAIR_SLIP 12     /* the slip's unit direction (3) at the step's start */
/* A body contact's stiffness in the solve: this times the pair's effective mass over h^2. */
#define PIOLA_NEWTON_CONTACT_STIFFNESS 100.0
/* How far beside its triangle (in contact thicknesses) a contact's vertex may lie and still be
 * in the solve: on the triangle's border, within rounding, or just past it. */
#define PIOLA_NEWTON_CONTACT_NEAR 0.25

/* The step's matrix over the world's vertices (3x3 blocks; a vertex's row holds its diagonal
 * and its neighbours through the elements) and the multigrid hierarchy over it, built with the
 * other solver arrays under PIOLA_SCHEME_MULTIGRID (empty otherwise). The elements are the
 * solver's tets, then the cloth's triangles (3 corners), then its bending stencils, numbered in
 * that order (element_count in all); element_block holds, per element, the 16 block indices of
 * its corner pairs (a, b) at 4 a + b. */
typedef struct piola_solver_newton {
  int32_t vertex_count;
  int32_t *start, *col;
  int32_t element_count;
  int32_t *element_block;
  piola_multigrid mg;
  double *gradient, *dx, *trial, *normal; /* 3 per vertex */
  uint8_t *kind;                          /* per vertex: 0 free, 1 supported, 2 fixed */
  /* Per vertex, PIOLA_NEWTON_FRICTION_REALS: a supported vertex's friction
   * (newton_support.c); zero coefficients where it has none. */
  double *friction;
  /* Per vertex, where its friction holds it (m, 3; newton_support.c) and the collider it
   * holds it on (-1: none). They carry from one step to the next (the saved state holds them). */
  double *anchor;
  int32_t *anchor_collider;
  /* Per collider (6: force's impulse record and its moment about the collider's origin, as
   * piola_record_impulse's), what the supported vertices met in the step's solve and COLLIDE
   * does not record: their friction, and their normal force beyond the held motion
   * (newton.c, record_supports; piola_world_get_collider_force adds it); sized and zeroed by
   * piola_newton_begin_step(). */
  double *collider_solve_force;
  int32_t collider_solve_force_capacity;
  /* Each vertex's element corners, 4 e + corner, in element order:
   * corners[corner_start[i] ..] */
  int32_t *corner_start, *corners;
  /* Per element at the current Newton step: its gradients (12, 3 per corner), Hessian blocks
   * (90, piola_tet_hessian's order of corner pairs) and energy, in N, N/m and J; per vertex, its
   * inertia's and soft attachments' energy (J). */
  double *element_grad, *element_hess, *element_energy, *vertex_energy;
  /* Where some element's material has damping (else NULL): per element, the directions d of its
   * damping's constraints (PIOLA_NEWTON_DAMP_REALS: up to two constraints of 4 corners, 3 each;
   * zero where a constraint is undamped or at rest), evaluated at the current Newton step's
   * start and kept through its line search (newton.c, "Material damping"). */
  double *element_damp;
  /* The last step's conjugate-gradient iterations (summed over its Newton steps), its Newton
   * steps and the largest relative residual a solve stopped at. */
  int32_t cg_iterations, newton_steps;
  /* Whether the next iteration sets the Hessian up again (the last line search shortened its
   * step). */
  bool refresh;
  /* The body contacts in the solve at the current Newton step (newton_contact.c):
   * PIOLA_NEWTON_PAIR_INTS and PIOLA_NEWTON_PAIR_REALS per pair; per slot of the contact lists
   * (pair_capacity of them, as the pairs, sized with the contact lists) the list's entry
   * it was last seen with (-1: none) and the normal force its penalty pressed with at the end of
   * the last substep (N; after its first Newton step for a new contact), its friction's lambda. */
  int32_t pair_count, pair_capacity;
  int32_t *pair_vertex, *pair_entry;
  double *pair_frame, *pair_lambda;
  double gradient_norm; /* the last iteration's, over what the solve moves (N) */
  double cg_relative;
} piola_solver_newton;

void piola_solver_newton_free(piola_solver_newton *n);

/* Builds the matrix pattern and the hierarchy for the new solver arrays st (tets) and sc (cloth)
 * over w's vertices into *out (all or nothing; empty unless the scheme is
 * PIOLA_SCHEME_MULTIGRID). */
piola_status piola_solver_newton_build(const piola_world *w, const piola_solver_tets *st,
                                       const piola_solver_cloth *sc, piola_solver_newton *out);

/* The CPU reference's SOLVE_GLOBAL stage: one Newton step on the substep's incremental
 * potential. */
void piola_cpu_solve_global(piola_world *w, double h);

/* The same on any backend's positions (w->p, w->x, w->y), with the substep's body contact
 * lists as the narrow phase left them (per surface vertex its count and its
 * PIOLA_CONTACTS_PER_VERTEX entries; NULL: no body contacts). */
void piola_newton_solve(piola_world *w, double h, const int32_t *contact_count,
                        const int32_t *contact_triangle);

/* The supported vertices (newton_support.c). At each Newton step, before the rows: vertex i's
 * friction with its supporting collider (its coefficients; lambda left to be set with its row)
 * and its anchor, carried by the surface's motion under it over the substep (at the substep's
 * first Newton step), or placed where the vertex started the substep, so carried, where it meets
 * the collider (kind 1); zero friction for the other kinds. */
void piola_newton_support_start(piola_world *w, int32_t i, double h);
/* Vertex i's friction energy at x (J; 0 where it has none). */
double piola_newton_support_energy(const piola_world *w, const double *x, int32_t i);
/* Vertex i's friction into its row at w->p, gradient gi (N) and diagonal block d (N/m); lambda
 * from the normal part of the gradient so far where it has none yet. */
void piola_newton_support_row(piola_world *w, int32_t i, double gi[3], double d[9]);
/* Vertex i's slip at x from its anchor (in the tangent plane of its support normal), into u;
 * returns its length (m). */
double piola_newton_support_slip(const piola_world *w, const double *x, int32_t i, double u[3]);
/* After the linear solve: a sliding supported vertex's step (w->newton.dx) stops where its slip
 * would turn back: past that its friction's model (no curvature along the slip) is far from the
 * potential, which has its sharp minimum at rest (the static part), and the line search would
 * shorten every vertex's step for it. */
void piola_newton_support_limit(piola_world *w);
/* After the line search (a step of alpha dx): each supported vertex's held motion and normal
 * force. */
void piola_newton_hold_supported(piola_world *w, double alpha, double inv_h2);
/* After the substep's last Newton step: the supports' forces into the colliders' records, and
 * the anchors following their vertices. */
void piola_newton_record_supports(piola_world *w, double inv_h2);
void piola_newton_follow_anchors(piola_world *w);

/* A supported vertex's friction (newton_support.c): f its lambda (N), mu_s and mu_k, slip
 * the length of its slip from its anchor (m), eps the static slip (m). The force's magnitude F
 * (N); into *energy the potential's value (J), into *rate dF/dslip where it is positive, else 0
 * (N/m). */
double piola_newton_friction_force(const double *f, double slip, double eps, double *energy,
                                   double *rate);
/* That friction's Hessian in the tangent plane (N/m), from its force and rate at `slip`: F / slip
 * across the slip, dF/dslip (where positive) along it; at no slip both 2 lambda mu_s / eps. */
void piola_newton_friction_stiffness(const double *f, double slip, double eps, double force,
                                     double rate, double *across, double *along);

/* The body contacts in the solve (newton_contact.c): the pairs of the current Newton step from the
 * substep's contact lists (count, entries; NULL: none) at w->p; their part of G at x (J), their
 * gradients added to `gradient` where it is not NULL; pair k's Hessian as a term of the conjugate
 * gradients' coupling (piola_multigrid.term, ctx the piola_solver_newton); after a Newton step that
 * the line search took whole (alpha 1) or shortened, their normal forces kept for their friction.
 */
void piola_newton_gather_pairs(piola_world *w, double h, const int32_t *count,
                               const int32_t *entries);
double piola_newton_pairs_energy(const piola_world *w, const double *x, double *gradient);
void piola_newton_pair_term(const void *ctx, int32_t k, piola_mg_term *out);
void piola_newton_keep_pair_forces(piola_world *w, double alpha);

/* Before a step of the multigrid scheme (either backend): the colliders' friction records sized
 * for the world's colliders and zeroed. Fails
 * (out of memory) before anything ran. */
piola_status piola_newton_begin_step(piola_world *w);

#endif /* PIOLA_NEWTON_H */
