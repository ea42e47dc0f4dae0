/* Piola cloth constraints: the one source of truth for the per-triangle membrane and the
 * per-edge bending math of cloth, compiled as C11 (double, CPU reference) and OpenCL C (float,
 * kernels), like piola_tet.h. Pure functions of private values: a kernel gathers the stencil's
 * positions and inverse masses, calls a *_correction() function and scatters the corrections.
 *
 * Bender, Koschier, Charrier, Weber 2014, "Position-Based Simulation of Continuous Materials",
 * Sec. 4.3 (cloth):
 *  - Membrane: orthotropic Saint Venant-Kirchhoff on each triangle, with a 3x2 deformation
 *    gradient F = [x1 - x0, x2 - x0] Dm^-1 in the triangle's rest 2D frame, whose first axis is
 *    the weft (direction of increasing u), the second the warp.
 *  - Bending: the isometric bending model of Bergou, Wardetzky, Harmon, Zorin, Grinspun 2006,
 *    "A Quadratic Bending Model for Inextensible Surfaces", on the 4-vertex stencil of each
 *    interior edge, with a rest-curvature term for curved rest states (see the bending section).
 *
 * Stiffness is carried in units of a reference stiffness k, as in piola_tet.h: the functions
 * return U^ = U / k and its gradients, and k enters only through the XPBD compliance
 * alpha = 1 / k (Macklin, Mueller, Chentanez 2016). The XPBD constraint is C = sqrt(2 U^), whose
 * potential (1/2) alpha^-1 C^2 is exactly U; one projection, multiplied through by C^2 so nothing
 * divides by a vanishing C (alpha~ = alpha / h^2, S = sum_i w_i |grad_i U^|^2):
 *   dlambda = -(C + alpha~ lambda) C^2 / (S + alpha~ C^2)
 *   dx_i    = -w_i grad_i U^ (C + alpha~ lambda) C / (S + alpha~ C^2)
 * The paper's plain PBD form (its Eq. 3 with C = U^) is dx_i = -w_i grad_i U^ U^ / S; there k
 * cancels out, so stiffness has a meaning only in the XPBD form. Multipliers accumulate dlambda
 * and are reset by the caller once per substep.
 *
 * Material damping (XPBD's constraint damping, Macklin et al. 2016, Eq. 26), as in piola_tet.h:
 * with gamma = damping / h and G = sum_i grad_i U^ . (x_i - x_i^n) (the corners' motion since the
 * substep's start), multiplied through by C^2,
 *   dlambda = -((C + alpha~ lambda) C^2 + gamma G C) / ((1 + gamma) S + alpha~ C^2)
 *   dx_i    = -w_i grad_i U^ ((C + alpha~ lambda) C + gamma G) / ((1 + gamma) S + alpha~ C^2)
 * gamma = 0 is the undamped projection bit for bit; the PBD form ignores it.
 */
#ifndef PIOLA_CLOTH_H
#define PIOLA_CLOTH_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_shared.h"
#include "piola_svd.h"
#endif

/* Solver forms; the values match the tets' (PIOLA_TET_SOLVER_*) and the public enum. */
#define PIOLA_CLOTH_SOLVER_XPBD 0
#define PIOLA_CLOTH_SOLVER_PBD 1

/* A constraint does no work where its dimensionless energy is at most this: for a triangle the
 * density U^ / A (a strain squared), so it skips below a strain of about 1e-6 (as the tets); for
 * a hinge U^ itself (about a bend angle squared), so it skips below about 1e-6 rad. Relative,
 * so soft and stiff cloth, and small and large elements, skip alike. */
#define PIOLA_CLOTH_ENERGY_EPSILON PIOLA_R(1e-12)

/* The projection is skipped when its denominator is below this fraction of the element's own
 * scale, w_max U^2 / l^2 (l a length of the element: |Dm^-1|^-1 for a triangle,
 * sqrt((A0 + A1) / 3) for a hinge), i.e. where the energy is (numerically) stationary although
 * not zero: the step C / |grad C| would exceed about 1e4 element sizes. */
#define PIOLA_CLOTH_DENOMINATOR_EPSILON PIOLA_R(1e-8)

/* A triangle is degenerate when twice its area is at most this fraction of its longest edge
 * squared: flat to within rounding (the tets' test is |det Dm| <= 1e-9 l^3). */
#define PIOLA_CLOTH_DEGENERATE_EPSILON PIOLA_R(1e-9)

/* A hinge is folded flat onto itself when |n0 + n1| (the sum of its triangles' unit normals,
 * 2 cos(theta / 2) for a bend angle theta) is at most this: about 1e-4 rad from a full fold.
 * There the direction of the rest-curvature term is undefined. */
#define PIOLA_CLOTH_FOLD_EPSILON PIOLA_R(1e-4)

/* Result flags of the init functions (0: rejected, nothing written that may be used). */
#define PIOLA_CLOTH_INIT_OK 1
#define PIOLA_CLOTH_INIT_UV_FALLBACK 2 /* u constant on the triangle: weft along x1 - x0 */

/* Result flag of the projections: the constraint did work (dx is zero otherwise). */
#define PIOLA_CLOTH_WORKED 1

/* Row-major 2x2 matrix: m[2 * row + column]. */
typedef struct piola_m2 {
  piola_real m[4];
} piola_m2;

/* 3x2 matrix by columns (a deformation gradient of a triangle, or its stress). */
typedef struct piola_m32 {
  piola_v3 c0, c1;
} piola_m32;

/* ---- The shared projection --------------------------------------------------------------- */

/* The update of an energy constraint (see the module comment) from U^ = u > 0,
 * S = sum_i w_i |grad_i U^|^2, the largest inverse mass w_max and the element's inverse squared
 * length scale inv_l2: writes *step so that dx_i = w_i grad_i U^ * step and accumulates *lambda.
 * rate = gamma G, the damping's share (0 undamped; see the module comment). Returns 0 (nothing
 * to do, *lambda untouched) when every vertex is pinned or the denominator is below the relative
 * guard. */
PIOLA_FN int piola_cloth_energy_step(piola_int solver, piola_real u, piola_real s,
                                     piola_real alpha_tilde, piola_real gamma, piola_real rate,
                                     piola_real w_max, piola_real inv_l2, piola_real *lambda,
                                     piola_real *step) {
  int xpbd = solver == PIOLA_CLOTH_SOLVER_XPBD;
  piola_real c2 = PIOLA_R(2.0) * u;
  piola_real denominator = xpbd ? (PIOLA_R(1.0) + gamma) * s + alpha_tilde * c2 : s;
  if (!(w_max > PIOLA_R(0.0)) ||
      !(denominator > PIOLA_CLOTH_DENOMINATOR_EPSILON * w_max * u * u * inv_l2)) {
    return 0;
  }
  piola_real dlambda;
  if (xpbd) {
    piola_real c = sqrt(c2);
    piola_real num = -(c + alpha_tilde * (*lambda));
    *step = (num * c - rate) / denominator;
    dlambda = (num * c2 - rate * c) / denominator;
  } else {
    *step = -u / denominator;
    dlambda = *step;
  }
  *lambda += dlambda;
  return 1;
}

/* The damping's share gamma G of a constraint with n corners: gradients g[0..n-1] (of U^),
 * motions since the substep's start motion[0..n-1]; 0 without damping (gamma 0 or no motion) or
 * for the PBD form. */
PIOLA_FN piola_real piola_cloth_damping_rate(piola_int solver, piola_real gamma, const piola_v3 *g,
                                             const piola_v3 *motion, int n) {
  piola_real g_motion = PIOLA_R(0.0);
  if (motion && gamma > PIOLA_R(0.0) && solver == PIOLA_CLOTH_SOLVER_XPBD) {
    for (int k = 0; k < n; ++k) {
      g_motion += piola_v3_dot(g[k], motion[k]);
    }
  }
  return gamma * g_motion;
}

/* ---- Membrane: orthotropic Saint Venant-Kirchhoff (paper Sec. 4.3) ---------------------- */

/* Plane-stress stiffness of the material, in units of k, and the solver form. */
typedef struct piola_cloth_tri_material {
  piola_real c11, c12, c22, c33; /* Q / k in Voigt form (see piola_cloth_tri_material_make) */
  piola_real compliance;         /* alpha = 1 / k, m/N */
  piola_int solver;              /* PIOLA_CLOTH_SOLVER_* */
  piola_real damping;            /* Rayleigh beta, s (XPBD; 0: undamped) */
} piola_cloth_tri_material;

/* Orthotropic plane stress in the material axes 1 = weft, 2 = warp, with Voigt strain
 * e = (E11, E22, 2 E12) and stress s = (S11, S22, S12) = Q e (R. M. Jones, "Mechanics of
 * Composite Materials", 2nd ed. 1999, Ch. 2, plane stress of an orthotropic material; Bender et
 * al. 2014, Sec. 4.3):
 *   Q = 1 / (1 - nu12 nu21) [[E1, nu21 E1, 0], [nu12 E2, E2, 0], [0, 0, G12 (1 - nu12 nu21)]]
 * with E1 = stretch_weft, E2 = stretch_warp, G12 = shear (moduli times thickness, N/m),
 * nu12 = poisson_weft (contraction along the warp under a pull along the weft) and
 * nu21 = nu12 E2 / E1 from the symmetry of the compliance (nu12 / E1 = nu21 / E2), which makes
 * Q12 = nu21 E1 = nu12 E2 symmetric. Q is positive definite iff the moduli are positive and
 * nu12^2 E2 / E1 < 1. The reference stiffness is k = max(Q11, Q22, Q33), so Q / k <= 1.
 * Returns 1, or 0 (nothing written) for an invalid material. */
PIOLA_FN int piola_cloth_tri_material_make(piola_real stretch_weft, piola_real stretch_warp,
                                           piola_real shear, piola_real poisson_weft,
                                           piola_int solver, piola_cloth_tri_material *mat) {
  piola_real e1 = stretch_weft, e2 = stretch_warp;
  if (!(e1 > PIOLA_R(0.0)) || !(e2 > PIOLA_R(0.0)) || !(shear > PIOLA_R(0.0)) ||
      !(fabs(poisson_weft) < PIOLA_R(1e30))) {
    return 0;
  }
  piola_real nu21 = poisson_weft * e2 / e1;
  piola_real det = PIOLA_R(1.0) - poisson_weft * nu21;
  if (!(det > PIOLA_R(0.0))) {
    return 0;
  }
  piola_real q11 = e1 / det, q22 = e2 / det, q12 = nu21 * e1 / det;
  piola_real k = fmax(fmax(q11, q22), shear);
  mat->c11 = q11 / k;
  mat->c12 = q12 / k;
  mat->c22 = q22 / k;
  mat->c33 = shear / k;
  mat->compliance = PIOLA_R(1.0) / k;
  mat->solver = solver;
  mat->damping = PIOLA_R(0.0);
  return 1;
}

/* Rest frame of a triangle from its rest positions, with the weft along the unit vector
 * (c, s) of the frame (f1, f2) where f1 = (x1 - x0) / |x1 - x0| and f2 = n x f1: the rest edge
 * matrix Dm = [X1 - X0, X2 - X0] in the frame (weft, n x weft), its inverse and the area. */
PIOLA_FN int piola_cloth_tri_frame(piola_v3 x0, piola_v3 x1, piola_v3 x2, int use_u, piola_real u0,
                                   piola_real u1, piola_real u2, piola_m2 *dm_inv,
                                   piola_real *area) {
  piola_v3 a = piola_v3_sub(x1, x0), b = piola_v3_sub(x2, x0);
  piola_v3 n = piola_v3_cross(a, b);
  piola_real n_len = piola_v3_length(n);
  piola_v3 ba = piola_v3_sub(b, a);
  piola_real l2 = fmax(fmax(piola_v3_dot(a, a), piola_v3_dot(b, b)), piola_v3_dot(ba, ba));
  if (!(n_len > PIOLA_CLOTH_DEGENERATE_EPSILON * l2)) {
    return 0;
  }
  /* D2 = [[a1, b1], [0, b2]]: the rest edges in the first-edge frame (b2 = 2A / |a| > 0). */
  piola_real a1 = piola_v3_length(a);
  piola_v3 f1 = piola_v3_scale(a, PIOLA_R(1.0) / a1);
  piola_real b1 = piola_v3_dot(f1, b);
  piola_real b2 = n_len / a1;
  piola_real c = PIOLA_R(1.0), s = PIOLA_R(0.0);
  int flags = PIOLA_CLOTH_INIT_OK;
  if (use_u) {
    /* u is linear on the triangle: its in-plane gradient g solves D2^T g = (u1 - u0, u2 - u0).
     * Zero iff u is constant (D2 is invertible); tested relative to the u values' rounding. */
    piola_real du1 = u1 - u0, du2 = u2 - u0;
    piola_real du_max = fmax(fmax(fabs(du1), fabs(du2)), fabs(u2 - u1));
    piola_real u_max = fmax(fmax(fabs(u0), fabs(u1)), fabs(u2));
    if (du_max > PIOLA_CLOTH_DEGENERATE_EPSILON * u_max) {
      piola_real gx = du1 / a1;
      piola_real gy = (du2 - b1 * gx) / b2;
      piola_real g_len = sqrt(gx * gx + gy * gy);
      c = gx / g_len;
      s = gy / g_len;
    } else {
      flags |= PIOLA_CLOTH_INIT_UV_FALLBACK;
    }
  }
  /* Dm = R^T D2 with R = [[c, -s], [s, c]] (columns: weft and warp in the first-edge frame);
   * det Dm = det D2 = 2A. */
  piola_real m00 = c * a1, m01 = c * b1 + s * b2;
  piola_real m10 = -s * a1, m11 = -s * b1 + c * b2;
  piola_real inv_det = PIOLA_R(1.0) / (a1 * b2);
  dm_inv->m[0] = m11 * inv_det;
  dm_inv->m[1] = -m01 * inv_det;
  dm_inv->m[2] = -m10 * inv_det;
  dm_inv->m[3] = m00 * inv_det;
  *area = PIOLA_R(0.5) * n_len;
  return flags;
}

/* Rest data of a triangle without texture coordinates: the weft along the first edge x1 - x0,
 * the warp perpendicular to it in the triangle's plane (towards x2). Writes Dm^-1 (1/m) and the
 * rest area (m^2); returns PIOLA_CLOTH_INIT_OK, or 0 for a degenerate triangle (twice its area
 * at most PIOLA_CLOTH_DEGENERATE_EPSILON times its longest edge squared). */
PIOLA_FN int piola_cloth_tri_init(piola_v3 x0, piola_v3 x1, piola_v3 x2, piola_m2 *dm_inv,
                                  piola_real *area) {
  return piola_cloth_tri_frame(x0, x1, x2, 0, PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0), dm_inv,
                               area);
}

/* Rest data of a triangle with the texture coordinate u of its vertices: the weft is the
 * direction of increasing u in the triangle's plane (the in-plane gradient of the linear
 * interpolant of u; only its direction matters, so u may have any scale and offset), the warp
 * perpendicular to it in the plane (its sign does not change the energy). Where u is constant
 * on the triangle the weft falls back to x1 - x0 and PIOLA_CLOTH_INIT_UV_FALLBACK is set.
 * Returns 0 for a degenerate triangle, as piola_cloth_tri_init(). */
PIOLA_FN int piola_cloth_tri_init_uv(piola_v3 x0, piola_v3 x1, piola_v3 x2, piola_real u0,
                                     piola_real u1, piola_real u2, piola_m2 *dm_inv,
                                     piola_real *area) {
  return piola_cloth_tri_frame(x0, x1, x2, 1, u0, u1, u2, dm_inv, area);
}

/* Deformation gradient F = [x1 - x0, x2 - x0] Dm^-1 (3x2). */
PIOLA_FN piola_m32 piola_cloth_tri_deformation(piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                               piola_m2 dm_inv) {
  piola_v3 a = piola_v3_sub(x1, x0), b = piola_v3_sub(x2, x0);
  piola_m32 f;
  f.c0 = piola_v3_add(piola_v3_scale(a, dm_inv.m[0]), piola_v3_scale(b, dm_inv.m[2]));
  f.c1 = piola_v3_add(piola_v3_scale(a, dm_inv.m[1]), piola_v3_scale(b, dm_inv.m[3]));
  return f;
}

/* Psi / k and the first Piola-Kirchhoff stress P / k = F S / k (3x2) of orthotropic StVK at F:
 * Green strain E = (F^T F - I) / 2, e = (E11, E22, 2 E12), S = Q e, Psi = (1/2) e^T Q e. */
PIOLA_FN piola_real piola_cloth_tri_energy_stress(const piola_cloth_tri_material *mat, piola_m32 f,
                                                  piola_m32 *p) {
  piola_real e11 = PIOLA_R(0.5) * (piola_v3_dot(f.c0, f.c0) - PIOLA_R(1.0));
  piola_real e22 = PIOLA_R(0.5) * (piola_v3_dot(f.c1, f.c1) - PIOLA_R(1.0));
  piola_real gamma = piola_v3_dot(f.c0, f.c1); /* 2 E12 */
  piola_real s11 = mat->c11 * e11 + mat->c12 * e22;
  piola_real s22 = mat->c12 * e11 + mat->c22 * e22;
  piola_real s12 = mat->c33 * gamma;
  p->c0 = piola_v3_add(piola_v3_scale(f.c0, s11), piola_v3_scale(f.c1, s12));
  p->c1 = piola_v3_add(piola_v3_scale(f.c0, s12), piola_v3_scale(f.c1, s22));
  return PIOLA_R(0.5) * (e11 * s11 + e22 * s22 + gamma * s12);
}

/* U^ = A Psi / k of a triangle at the given positions (m^2) and its gradients g[0..2] (m):
 * [g1 g2] = A P Dm^-T, g0 = -(g1 + g2). */
PIOLA_FN piola_real piola_cloth_tri_gradient(const piola_cloth_tri_material *mat, piola_m2 dm_inv,
                                             piola_real area, piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                             piola_v3 *g) {
  piola_m32 p;
  piola_real psi =
      piola_cloth_tri_energy_stress(mat, piola_cloth_tri_deformation(x0, x1, x2, dm_inv), &p);
  g[1] = piola_v3_scale(
      piola_v3_add(piola_v3_scale(p.c0, dm_inv.m[0]), piola_v3_scale(p.c1, dm_inv.m[1])), area);
  g[2] = piola_v3_scale(
      piola_v3_add(piola_v3_scale(p.c0, dm_inv.m[2]), piola_v3_scale(p.c1, dm_inv.m[3])), area);
  g[0] = piola_v3_scale(piola_v3_add(g[1], g[2]), PIOLA_R(-1.0));
  return area * psi;
}

/* Elastic energy U / k = A Psi / k of a triangle (m^2; times k = 1 / compliance: joules). */
PIOLA_FN piola_real piola_cloth_tri_energy(const piola_cloth_tri_material *mat, piola_m2 dm_inv,
                                           piola_real area, piola_v3 x0, piola_v3 x1, piola_v3 x2) {
  piola_m32 p;
  return area *
         piola_cloth_tri_energy_stress(mat, piola_cloth_tri_deformation(x0, x1, x2, dm_inv), &p);
}

/* One projection of a triangle's membrane constraint (see the module comment): the position
 * corrections dx[0..2] of the vertices at x0..x2, which the caller adds. *lambda accumulates
 * the multiplier (for PBD, the step -U^/S, kept as a record that the projection did work).
 * alpha_tilde = compliance / h^2 (ignored for PBD); gamma = damping / h and motion[0..2] the
 * corners' motion since the substep's start (the material damping; motion may be 0 where gamma
 * is 0); w_i inverse masses (0 = pinned). Returns PIOLA_CLOTH_WORKED or 0 (at rest, all pinned,
 * or a stationary energy: dx = 0). */
PIOLA_FN int piola_cloth_tri_correction(const piola_cloth_tri_material *mat, piola_m2 dm_inv,
                                        piola_real area, piola_real alpha_tilde, piola_real gamma,
                                        piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                        const piola_v3 *motion, piola_real w0, piola_real w1,
                                        piola_real w2, piola_real *lambda, piola_v3 *dx) {
  piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  dx[0] = dx[1] = dx[2] = zero;
  piola_v3 g[3];
  piola_real u = piola_cloth_tri_gradient(mat, dm_inv, area, x0, x1, x2, g);
  if (!(u > PIOLA_CLOTH_ENERGY_EPSILON * area)) {
    return 0;
  }
  piola_real s =
      w0 * piola_v3_dot(g[0], g[0]) + w1 * piola_v3_dot(g[1], g[1]) + w2 * piola_v3_dot(g[2], g[2]);
  piola_real inv_l2 = dm_inv.m[0] * dm_inv.m[0] + dm_inv.m[1] * dm_inv.m[1] +
                      dm_inv.m[2] * dm_inv.m[2] + dm_inv.m[3] * dm_inv.m[3];
  piola_real step;
  const piola_real rate = piola_cloth_damping_rate(mat->solver, gamma, g, motion, 3);
  if (!piola_cloth_energy_step(mat->solver, u, s, alpha_tilde, gamma, rate, fmax(fmax(w0, w1), w2),
                               inv_l2, lambda, &step)) {
    return 0;
  }
  dx[0] = piola_v3_scale(g[0], w0 * step);
  dx[1] = piola_v3_scale(g[1], w1 * step);
  dx[2] = piola_v3_scale(g[2], w2 * step);
  return PIOLA_CLOTH_WORKED;
}

/* piola_cloth_tri_correction() applied in place to x0..x2. */
PIOLA_FN int piola_cloth_tri_project(const piola_cloth_tri_material *mat, piola_m2 dm_inv,
                                     piola_real area, piola_real alpha_tilde, piola_v3 *x0,
                                     piola_v3 *x1, piola_v3 *x2, piola_real w0, piola_real w1,
                                     piola_real w2, piola_real *lambda) {
  piola_v3 dx[3];
  int flags = piola_cloth_tri_correction(mat, dm_inv, area, alpha_tilde, PIOLA_R(0.0), *x0, *x1,
                                         *x2, 0, w0, w1, w2, lambda, dx);
  *x0 = piola_v3_add(*x0, dx[0]);
  *x1 = piola_v3_add(*x1, dx[1]);
  *x2 = piola_v3_add(*x2, dx[2]);
  return flags;
}

/* ---- Bending: isometric bending (Bergou et al. 2006; paper Sec. 4.3) -------------------- *
 *
 * Stencil of an interior edge: x0, x1 the edge, x2 the opposite vertex of triangle T0 =
 * (x0, x1, x2), x3 that of T1 = (x1, x0, x3). With e0 = x1 - x0, e1 = x2 - x0, e2 = x3 - x0,
 * e3 = x2 - x1, e4 = x3 - x1 and c_jk the cotangent of the rest angle between e_j and e_k
 * (c03, c04 with -e0), Bergou et al. (Sec. 4) define
 *   K = (c03 + c04, c01 + c02, -c01 - c03, -c02 - c04),   Q = 3 / (A0 + A1) K K^T (4x4),
 *   U = (1/2) k sum_ij Q_ij x_i . x_j = (1/2) k q |v|^2,   q = 3 / (A0 + A1),  v = sum_i K_i x_i,
 * with A0, A1 the rest areas. v is the edge's discrete mean-curvature normal: by the cotangent
 * identity each triangle contributes |e0| times the unit vector from its opposite vertex to the
 * edge, perpendicular to the edge in its plane, so v = |e0| (m0 + m1) is parallel to n0 + n1
 * (the unit normals) and |v| = 2 |e0| sin(theta / 2) for the bend angle theta (0 = flat).
 *
 * Curved rest states. Bergou's U is zero only at a flat rest state. We keep the rest
 * mean-curvature normal as its signed length along the mean normal, v_bar = v(X) . n_bar(X)
 * with n_bar = (n0 + n1) / |n0 + n1|, and use
 *   U = (1/2) k q |v - v_bar n_bar|^2.
 * Since v(X) = v_bar n_bar(X) exactly, U = 0 and grad U = 0 at the rest shape; U is invariant
 * under rigid motions (v and n_bar rotate with the stencil); for isometric deformations it is
 * (1/2) k q 4 |e0|^2 (sin(theta/2) - sin(theta_bar/2))^2, i.e. the hinge energy of Discrete
 * Shells (Grinspun, Hirani, Desbrun, Schroeder 2003: 3 |e|^2 / (A0 + A1) (theta - theta_bar)^2)
 * with the angle measured by 2 sin(theta / 2), the measure of the bending force of Bridson,
 * Marino, Fedkiw 2003, "Simulation of Clothing with Folds and Wrinkles". It keeps the sign of
 * the rest curvature (a hinge does not snap through to the mirrored bend, which the magnitude
 * form |v| - |v_bar| of Projective Dynamics, Bouaziz et al. 2014, would allow at no cost).
 * Subtracting the rest value instead, (1/2) k q (|v|^2 - |v(X)|^2), would be zero at rest but
 * not stationary there (its gradient k q K_i v(X) is not zero: the rest shape would not be an
 * equilibrium). For a flat rest state (v_bar = 0) our U is exactly Bergou's quadratic energy,
 * whose gradient k q K_i v = k sum_j Q_ij x_j is linear in the positions. The price for
 * a curved rest state is the derivative of n_bar, undefined where the hinge is folded onto
 * itself (|n0 + n1| -> 0); such a state does no work.
 *
 * Stiffness: k = D / 3 for the plate bending stiffness D (N m). The continuum energy of an
 * isometric bend of a flat plate (Gaussian curvature 0) is (D/2) int (kappa1 + kappa2)^2 dA. On a
 * mesh, U_e = (1/2) k q |e|^2 theta_e^2 for small angles. For a cylinder of radius R meshed by
 * equilateral triangles (side L, height h = sqrt(3) L / 2) with edges along the axis, only the
 * axial edges bend, by theta = h / R (the other hinges are planar); there is one axial edge per
 * area L h, so U / area = (1/2) k (3 / (L h)) L^2 (h / R)^2 / (L h) = 3 k / (2 R^2), which is
 * D / (2 R^2) for k = D / 3. Bergou's q = 3 / (A0 + A1) assigns each edge a third of its
 * triangles, the right weight where curvature is spread over all edges (a sphere), but a bend
 * about one axis concentrates on a third of the edges, and the squares add up to three times
 * the continuum energy. On equilateral meshes the factor is 3 for every orientation of the
 * axis (measured on quadratic surfaces: U = (k/2) int [3 (kappa1 + kappa2)^2 - 8 kappa1 kappa2]
 * dA, i.e. Kirchhoff's plate with D = 3 k and nu = -1/3, whose Gaussian term does no work in
 * isometric deformations of a flat sheet); on the regular right-triangle grid it depends on
 * the direction (3 for an axis along a grid line, 9 for an axis perpendicular to the
 * diagonals), so there D is met only for bends about the grid lines.
 */

/* Bending material: k = D / 3 (see above) carried as the XPBD compliance. */
typedef struct piola_cloth_bend_material {
  piola_real compliance; /* alpha = 1 / k = 3 / D, 1/(N m) */
  piola_int solver;      /* PIOLA_CLOTH_SOLVER_* */
  piola_real damping;    /* Rayleigh beta, s (XPBD; 0: undamped) */
} piola_cloth_bend_material;

/* Bending material of plate bending stiffness D = E t^3 / (12 (1 - nu^2)) (N m). Returns 1, or
 * 0 (nothing written) unless D > 0. */
PIOLA_FN int piola_cloth_bend_material_make(piola_real bending_stiffness, piola_int solver,
                                            piola_cloth_bend_material *mat) {
  if (!(bending_stiffness > PIOLA_R(0.0)) || !(bending_stiffness < PIOLA_R(1e30))) {
    return 0;
  }
  mat->compliance = PIOLA_R(3.0) / bending_stiffness;
  mat->solver = solver;
  mat->damping = PIOLA_R(0.0);
  return 1;
}

/* Rest data of a bending stencil: Q = q K K^T is kept as K and q (5 numbers instead of 10). */
typedef struct piola_cloth_bend_rest {
  piola_real k[4]; /* K, dimensionless */
  piola_real q;    /* 3 / (A0 + A1), 1/m^2 */
  piola_real rest; /* v_bar = v(X) . n_bar(X), m; exactly 0 for a flat rest state */
} piola_cloth_bend_rest;

/* Unnormalized normals of the stencil's triangles, N0 = e0 x e1 and N1 = e2 x e0 (pointing the
 * same way where x2 and x3 lie on opposite sides of the edge), and v = sum_i K_i (x_i - x0). */
PIOLA_FN piola_v3 piola_cloth_bend_v(const piola_cloth_bend_rest *r, piola_v3 e0, piola_v3 e1,
                                     piola_v3 e2) {
  return piola_v3_add(piola_v3_add(piola_v3_scale(e0, r->k[1]), piola_v3_scale(e1, r->k[2])),
                      piola_v3_scale(e2, r->k[3]));
}

/* Rest data of the stencil of the edge x0 x1 with opposite vertices x2 (triangle x0 x1 x2) and
 * x3 (triangle x1 x0 x3), at their rest positions. Returns PIOLA_CLOTH_INIT_OK, or 0 where a
 * triangle is degenerate (as in piola_cloth_tri_init) or the hinge is folded onto itself
 * (|n0 + n1| <= PIOLA_CLOTH_FOLD_EPSILON). A rest state whose U^ would be below
 * PIOLA_CLOTH_ENERGY_EPSILON counts as flat (rest = 0). */
PIOLA_FN int piola_cloth_bend_init(piola_v3 x0, piola_v3 x1, piola_v3 x2, piola_v3 x3,
                                   piola_cloth_bend_rest *rest) {
  piola_v3 e0 = piola_v3_sub(x1, x0), e1 = piola_v3_sub(x2, x0), e2 = piola_v3_sub(x3, x0);
  piola_v3 e3 = piola_v3_sub(x2, x1), e4 = piola_v3_sub(x3, x1);
  piola_v3 n0 = piola_v3_cross(e0, e1), n1 = piola_v3_cross(e2, e0);
  piola_real l0 = piola_v3_length(n0), l1 = piola_v3_length(n1);
  piola_real e0_2 = piola_v3_dot(e0, e0);
  if (!(l0 > PIOLA_CLOTH_DEGENERATE_EPSILON *
                 fmax(fmax(e0_2, piola_v3_dot(e1, e1)), piola_v3_dot(e3, e3))) ||
      !(l1 > PIOLA_CLOTH_DEGENERATE_EPSILON *
                 fmax(fmax(e0_2, piola_v3_dot(e2, e2)), piola_v3_dot(e4, e4)))) {
    return 0;
  }
  /* cot(a, b) = a.b / |a x b|; |e0 x e3| = |N0| and |e0 x e4| = |N1|. */
  piola_real c01 = piola_v3_dot(e0, e1) / l0, c02 = piola_v3_dot(e0, e2) / l1;
  piola_real c03 = -piola_v3_dot(e0, e3) / l0, c04 = -piola_v3_dot(e0, e4) / l1;
  piola_cloth_bend_rest r;
  r.k[0] = c03 + c04;
  r.k[1] = c01 + c02;
  r.k[2] = -c01 - c03;
  r.k[3] = -c02 - c04;
  r.q = PIOLA_R(6.0) / (l0 + l1); /* 3 / (A0 + A1) with A_i = |N_i| / 2 */
  piola_v3 m =
      piola_v3_add(piola_v3_scale(n0, PIOLA_R(1.0) / l0), piola_v3_scale(n1, PIOLA_R(1.0) / l1));
  piola_real m_len = piola_v3_length(m);
  if (!(m_len > PIOLA_CLOTH_FOLD_EPSILON)) {
    return 0;
  }
  piola_real v_bar = piola_v3_dot(piola_cloth_bend_v(&r, e0, e1, e2), m) / m_len;
  r.rest = PIOLA_R(0.5) * r.q * v_bar * v_bar > PIOLA_CLOTH_ENERGY_EPSILON ? v_bar : PIOLA_R(0.0);
  *rest = r;
  return PIOLA_CLOTH_INIT_OK;
}

/* The 4x4 matrix Q = q K K^T of Bergou et al. (row-major, 1/m^2), for callers that want it. */
PIOLA_FN void piola_cloth_bend_q_matrix(const piola_cloth_bend_rest *r, piola_real *q16) {
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      q16[4 * i + j] = r->q * r->k[i] * r->k[j];
    }
  }
}

/* U^ = U / k = (1/2) q |v - v_bar n_bar|^2 of a bending stencil (dimensionless) and its
 * gradients g[0..3] (1/m). Flat rest: g_i = q K_i v = sum_j Q_ij x_j. Curved rest, with
 * r = v - v_bar n_bar, m = n0 + n1 and P_a = I - a a^T:
 *   g_i = q (K_i r - (dm/dx_i)^T p),   p = v_bar P_nbar r / |m|,
 *   (dn_t/dx_i)^T p = (dN_t/dx_i)^T P_nt p / |N_t|   (n_t = N_t / |N_t|),
 * and for N0 = e0 x e1, N1 = e2 x e0: d(N0.y)/dx1 = e1 x y, d(N0.y)/dx2 = y x e0,
 * d(N1.y)/dx3 = e0 x y, d(N1.y)/dx1 = y x e2, and g0 = -(g1 + g2 + g3) (translation).
 * Returns -1 (and g = 0) where the curved form is undefined (the hinge folded onto itself). */
PIOLA_FN piola_real piola_cloth_bend_gradient(const piola_cloth_bend_rest *rest, piola_v3 x0,
                                              piola_v3 x1, piola_v3 x2, piola_v3 x3, piola_v3 *g) {
  piola_v3 e0 = piola_v3_sub(x1, x0), e1 = piola_v3_sub(x2, x0), e2 = piola_v3_sub(x3, x0);
  piola_v3 r = piola_cloth_bend_v(rest, e0, e1, e2);
  piola_v3 t1 = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0)), t2 = t1, t3 = t1;
  if (rest->rest != PIOLA_R(0.0)) {
    piola_v3 n0 = piola_v3_cross(e0, e1), n1 = piola_v3_cross(e2, e0);
    piola_real l0 = piola_v3_length(n0), l1 = piola_v3_length(n1);
    n0 = piola_v3_scale(n0, PIOLA_R(1.0) / l0);
    n1 = piola_v3_scale(n1, PIOLA_R(1.0) / l1);
    piola_v3 m = piola_v3_add(n0, n1);
    piola_real m_len = piola_v3_length(m);
    if (!(m_len > PIOLA_CLOTH_FOLD_EPSILON) || !(l0 > PIOLA_R(0.0)) || !(l1 > PIOLA_R(0.0))) {
      g[0] = g[1] = g[2] = g[3] = t1;
      return PIOLA_R(-1.0);
    }
    piola_v3 n_bar = piola_v3_scale(m, PIOLA_R(1.0) / m_len);
    r = piola_v3_sub(r, piola_v3_scale(n_bar, rest->rest));
    piola_v3 p = piola_v3_scale(piola_v3_sub(r, piola_v3_scale(n_bar, piola_v3_dot(n_bar, r))),
                                rest->rest / m_len);
    piola_v3 p0 =
        piola_v3_scale(piola_v3_sub(p, piola_v3_scale(n0, piola_v3_dot(n0, p))), PIOLA_R(1.0) / l0);
    piola_v3 p1 =
        piola_v3_scale(piola_v3_sub(p, piola_v3_scale(n1, piola_v3_dot(n1, p))), PIOLA_R(1.0) / l1);
    t1 = piola_v3_add(piola_v3_cross(e1, p0), piola_v3_cross(p1, e2));
    t2 = piola_v3_cross(p0, e0);
    t3 = piola_v3_cross(e0, p1);
  }
  g[1] = piola_v3_scale(piola_v3_sub(piola_v3_scale(r, rest->k[1]), t1), rest->q);
  g[2] = piola_v3_scale(piola_v3_sub(piola_v3_scale(r, rest->k[2]), t2), rest->q);
  g[3] = piola_v3_scale(piola_v3_sub(piola_v3_scale(r, rest->k[3]), t3), rest->q);
  g[0] = piola_v3_scale(piola_v3_add(piola_v3_add(g[1], g[2]), g[3]), PIOLA_R(-1.0));
  return PIOLA_R(0.5) * rest->q * piola_v3_dot(r, r);
}

/* Bending energy U / k of a stencil (dimensionless; times k = 1 / compliance: joules); 0 where
 * undefined (folded onto itself with a curved rest state). */
PIOLA_FN piola_real piola_cloth_bend_energy(const piola_cloth_bend_rest *rest, piola_v3 x0,
                                            piola_v3 x1, piola_v3 x2, piola_v3 x3) {
  piola_v3 g[4];
  piola_real u = piola_cloth_bend_gradient(rest, x0, x1, x2, x3, g);
  return u > PIOLA_R(0.0) ? u : PIOLA_R(0.0);
}

/* One projection of a bending stencil's constraint: the corrections dx[0..3] of x0..x3, as
 * piola_cloth_tri_correction(). Returns PIOLA_CLOTH_WORKED or 0 (at rest, all pinned, folded
 * with a curved rest state, or a stationary energy: dx = 0). */
PIOLA_FN int piola_cloth_bend_correction(const piola_cloth_bend_material *mat,
                                         const piola_cloth_bend_rest *rest, piola_real alpha_tilde,
                                         piola_real gamma, piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                         piola_v3 x3, const piola_v3 *motion, piola_real w0,
                                         piola_real w1, piola_real w2, piola_real w3,
                                         piola_real *lambda, piola_v3 *dx) {
  piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  dx[0] = dx[1] = dx[2] = dx[3] = zero;
  piola_v3 g[4];
  piola_real u = piola_cloth_bend_gradient(rest, x0, x1, x2, x3, g);
  if (!(u > PIOLA_CLOTH_ENERGY_EPSILON)) {
    return 0;
  }
  piola_real s = w0 * piola_v3_dot(g[0], g[0]) + w1 * piola_v3_dot(g[1], g[1]) +
                 w2 * piola_v3_dot(g[2], g[2]) + w3 * piola_v3_dot(g[3], g[3]);
  piola_real step;
  const piola_real rate = piola_cloth_damping_rate(mat->solver, gamma, g, motion, 4);
  if (!piola_cloth_energy_step(mat->solver, u, s, alpha_tilde, gamma, rate,
                               fmax(fmax(w0, w1), fmax(w2, w3)), rest->q, lambda, &step)) {
    return 0;
  }
  dx[0] = piola_v3_scale(g[0], w0 * step);
  dx[1] = piola_v3_scale(g[1], w1 * step);
  dx[2] = piola_v3_scale(g[2], w2 * step);
  dx[3] = piola_v3_scale(g[3], w3 * step);
  return PIOLA_CLOTH_WORKED;
}

/* piola_cloth_bend_correction() applied in place to x0..x3. */
PIOLA_FN int piola_cloth_bend_project(const piola_cloth_bend_material *mat,
                                      const piola_cloth_bend_rest *rest, piola_real alpha_tilde,
                                      piola_v3 *x0, piola_v3 *x1, piola_v3 *x2, piola_v3 *x3,
                                      piola_real w0, piola_real w1, piola_real w2, piola_real w3,
                                      piola_real *lambda) {
  piola_v3 dx[4];
  int flags = piola_cloth_bend_correction(mat, rest, alpha_tilde, PIOLA_R(0.0), *x0, *x1, *x2, *x3,
                                          0, w0, w1, w2, w3, lambda, dx);
  *x0 = piola_v3_add(*x0, dx[0]);
  *x1 = piola_v3_add(*x1, dx[1]);
  *x2 = piola_v3_add(*x2, dx[2]);
  *x3 = piola_v3_add(*x3, dx[3]);
  return flags;
}

/* ---- Material table of the solver ---------------------------------------------------- */

/* A cloth material as the kernels read it (one table in constant memory, same layout on the
 * host, where piola_f32 is float): the membrane's Q / k and compliance, the bending
 * compliance, the solver form. */
typedef struct piola_cloth_material_data {
  piola_f32 c11, c12, c22, c33; /* as in piola_cloth_tri_material */
  piola_f32 tri_compliance;     /* 1 / k of the membrane, m/N */
  piola_f32 bend_compliance;    /* 3 / D, 1/(N m) */
  piola_i32 solver;             /* PIOLA_CLOTH_SOLVER_* */
  piola_f32 damping;            /* Rayleigh beta, s */
} piola_cloth_material_data;

PIOLA_FN piola_cloth_tri_material piola_cloth_tri_material_from_data(piola_cloth_material_data d) {
  piola_cloth_tri_material m;
  m.c11 = (piola_real)d.c11;
  m.c12 = (piola_real)d.c12;
  m.c22 = (piola_real)d.c22;
  m.c33 = (piola_real)d.c33;
  m.compliance = (piola_real)d.tri_compliance;
  m.solver = d.solver;
  m.damping = (piola_real)d.damping;
  return m;
}

PIOLA_FN piola_cloth_bend_material
piola_cloth_bend_material_from_data(piola_cloth_material_data d) {
  piola_cloth_bend_material m;
  m.compliance = (piola_real)d.bend_compliance;
  m.solver = d.solver;
  m.damping = (piola_real)d.damping;
  return m;
}

/* ---- Vertex block descent: one vertex's gradient and Hessian block ---------------------- */
/* Chen, Liu, Yang, Yuksel 2024, "Vertex Block Descent" (see piola_tet.h for the
 * method). A triangle's F = sum_j x_j b_j^T (3x2) with b_1, b_2 the rows of Dm^-1 and
 * b_0 = -(b_1 + b_2), so grad_i U = A P b_i and H_ii[:, k] = A dP(e_k b_i^T) b_i, with the
 * differential of orthotropic StVK's P = F S: dP = dF S + F dS, dS = Q de, de the Voigt form of
 * dE = sym(F^T dF) (Sifakis, Barbic 2012, Sec. 4.2, in 2D). The membrane's block is indefinite
 * under compression (the energy is not convex there) and is projected to the positive
 * semidefinite cone. Bending (Bergou et al. 2006): U = (k/2) q |v - v_bar n_bar|^2 with
 * v = sum_j K_j x_j; for a flat rest state its Hessian q K K^T (x) I is constant, so the block
 * q K_i^2 I is exact; for a curved rest state the same block is the Gauss-Newton part (the
 * dependence of n_bar on the positions is left out of the block, not of the gradient), positive
 * semidefinite either way. */

/* |b| (1/m) of a triangle's corner (b: the row corner - 1 of Dm^-1, b_0 = -(b_1 + b_2)): the
 * inverse of the corner's height over the opposite edge. */
PIOLA_FN piola_real piola_cloth_tri_corner_length(piola_m2 dm_inv, int corner) {
  const piola_real bx = corner == 1   ? dm_inv.m[0]
                        : corner == 2 ? dm_inv.m[2]
                                      : -(dm_inv.m[0] + dm_inv.m[2]);
  const piola_real by = corner == 1   ? dm_inv.m[1]
                        : corner == 2 ? dm_inv.m[3]
                                      : -(dm_inv.m[1] + dm_inv.m[3]);
  return sqrt(bx * bx + by * by);
}

/* One triangle's part of the block of its corner `corner` (0..2), in units of k: writes
 * grad U / k (m) and the projected block d2U/dx^2 / k (dimensionless), returns U / k (m^2). */
PIOLA_FN piola_real piola_cloth_tri_vertex_block(const piola_cloth_tri_material *mat,
                                                 piola_m2 dm_inv, piola_real area, piola_v3 x0,
                                                 piola_v3 x1, piola_v3 x2, int corner,
                                                 piola_v3 *grad, piola_m3 *hess) {
  const piola_m32 f = piola_cloth_tri_deformation(x0, x1, x2, dm_inv);
  piola_m32 p;
  const piola_real psi = piola_cloth_tri_energy_stress(mat, f, &p);
  /* b: row `corner` - 1 of Dm^-1, or minus their sum */
  const piola_real bx = corner == 1   ? dm_inv.m[0]
                        : corner == 2 ? dm_inv.m[2]
                                      : -(dm_inv.m[0] + dm_inv.m[2]);
  const piola_real by = corner == 1   ? dm_inv.m[1]
                        : corner == 2 ? dm_inv.m[3]
                                      : -(dm_inv.m[1] + dm_inv.m[3]);
  *grad = piola_v3_scale(piola_v3_add(piola_v3_scale(p.c0, bx), piola_v3_scale(p.c1, by)), area);
  /* S of the current F */
  const piola_real e11 = PIOLA_R(0.5) * (piola_v3_dot(f.c0, f.c0) - PIOLA_R(1.0));
  const piola_real e22 = PIOLA_R(0.5) * (piola_v3_dot(f.c1, f.c1) - PIOLA_R(1.0));
  const piola_real gamma = piola_v3_dot(f.c0, f.c1);
  const piola_real s11 = mat->c11 * e11 + mat->c12 * e22, s22 = mat->c12 * e11 + mat->c22 * e22,
                   s12 = mat->c33 * gamma;
  piola_m3 h;
  for (int k = 0; k < 3; ++k) {
    const piola_v3 ek =
        piola_v3_make(k == 0 ? PIOLA_R(1.0) : PIOLA_R(0.0), k == 1 ? PIOLA_R(1.0) : PIOLA_R(0.0),
                      k == 2 ? PIOLA_R(1.0) : PIOLA_R(0.0));
    /* dF = e_k b^T: columns e_k bx, e_k by */
    const piola_v3 d0 = piola_v3_scale(ek, bx), d1 = piola_v3_scale(ek, by);
    const piola_real de11 = piola_v3_dot(f.c0, d0), de22 = piola_v3_dot(f.c1, d1);
    const piola_real dgamma = piola_v3_dot(f.c0, d1) + piola_v3_dot(f.c1, d0);
    const piola_real ds11 = mat->c11 * de11 + mat->c12 * de22,
                     ds22 = mat->c12 * de11 + mat->c22 * de22, ds12 = mat->c33 * dgamma;
    /* dP = dF S + F dS, by columns */
    const piola_v3 dp0 =
        piola_v3_add(piola_v3_add(piola_v3_scale(d0, s11), piola_v3_scale(d1, s12)),
                     piola_v3_add(piola_v3_scale(f.c0, ds11), piola_v3_scale(f.c1, ds12)));
    const piola_v3 dp1 =
        piola_v3_add(piola_v3_add(piola_v3_scale(d0, s12), piola_v3_scale(d1, s22)),
                     piola_v3_add(piola_v3_scale(f.c0, ds12), piola_v3_scale(f.c1, ds22)));
    const piola_v3 col =
        piola_v3_scale(piola_v3_add(piola_v3_scale(dp0, bx), piola_v3_scale(dp1, by)), area);
    h.m[k] = col.x;
    h.m[3 + k] = col.y;
    h.m[6 + k] = col.z;
  }
  piola_m3 sym;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      sym.m[3 * r + c] = PIOLA_R(0.5) * (h.m[3 * r + c] + h.m[3 * c + r]);
    }
  }
  *hess = piola_sym3_project_psd(sym);
  return area * psi;
}

/* One stencil's part of the block of its corner `corner` (0..3), in units of k: writes
 * grad U / k (1/m) and the block q K_corner^2 I (1/m^2), returns U / k; nothing (0, zero
 * gradient and block) where the curved form is undefined (folded onto itself). */
PIOLA_FN piola_real piola_cloth_bend_vertex_block(const piola_cloth_bend_rest *rest, piola_v3 x0,
                                                  piola_v3 x1, piola_v3 x2, piola_v3 x3, int corner,
                                                  piola_v3 *grad, piola_m3 *hess) {
  piola_v3 g[4];
  const piola_real u = piola_cloth_bend_gradient(rest, x0, x1, x2, x3, g);
  *grad = corner == 0 ? g[0] : corner == 1 ? g[1] : corner == 2 ? g[2] : g[3];
  const piola_real kc = rest->k[corner];
  *hess = piola_m3_scale(piola_m3_identity(), u >= PIOLA_R(0.0) ? rest->q * kc * kc : PIOLA_R(0.0));
  return u >= PIOLA_R(0.0) ? u : PIOLA_R(0.0);
}

/* The material damping of a triangle and of a stencil in their corner's block under vertex block
 * descent, as piola_tet_damping_block() for a tet: one constraint each, gamma = damping / h
 * (0 for the PBD form), motion[a] = x_a - x_a^n; adds to *grad (N) and *hess (N/m). */
PIOLA_FN void piola_cloth_tri_damping_block(const piola_cloth_tri_material *mat, piola_m2 dm_inv,
                                            piola_real area, piola_real gamma, piola_v3 x0,
                                            piola_v3 x1, piola_v3 x2, const piola_v3 motion[3],
                                            int corner, piola_v3 *grad, piola_m3 *hess) {
  piola_v3 g[3];
  const piola_real u = piola_cloth_tri_gradient(mat, dm_inv, area, x0, x1, x2, g);
  const piola_real factor = piola_constraint_damping_factor(PIOLA_R(1.0) / mat->compliance, gamma,
                                                            u, PIOLA_CLOTH_ENERGY_EPSILON * area);
  piola_damping_add_block(factor, g, motion, 3, corner, grad, hess);
}

PIOLA_FN void piola_cloth_bend_damping_block(const piola_cloth_bend_material *mat,
                                             const piola_cloth_bend_rest *rest, piola_real gamma,
                                             piola_v3 x0, piola_v3 x1, piola_v3 x2, piola_v3 x3,
                                             const piola_v3 motion[4], int corner, piola_v3 *grad,
                                             piola_m3 *hess) {
  piola_v3 g[4];
  const piola_real u = piola_cloth_bend_gradient(rest, x0, x1, x2, x3, g);
  const piola_real factor = piola_constraint_damping_factor(PIOLA_R(1.0) / mat->compliance, gamma,
                                                            u, PIOLA_CLOTH_ENERGY_EPSILON);
  piola_damping_add_block(factor, g, motion, 4, corner, grad, hess);
}

#endif /* PIOLA_CLOTH_H */
