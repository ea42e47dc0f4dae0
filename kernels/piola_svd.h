/* Piola 3x3 singular value decomposition for inversion handling, shared by C and OpenCL C.
 *
 * The method of McAdams, Selle, Tamstorf, Teran, Sifakis 2011, "Computing the Singular Value
 * Decomposition of 3x3 matrices with minimal branching and elementary floating point
 * operations": cyclic Jacobi eigenanalysis of the symmetric A^T A gives V; the columns of
 * B = A V are sorted by decreasing norm (keeping V a rotation); a Givens QR of B gives a
 * rotation U and R, whose diagonal holds the singular values. The sign convention is the one
 * Irving, Teran and Fedkiw 2004 ask for: U and V are rotations, sigma_1 >= sigma_2 >= |sigma_3|,
 * and sigma_3 < 0 exactly when det A < 0 (the reflection is folded into the smallest value).
 *
 * No 1/(s_i^2 - s_j^2) term appears anywhere, so repeated singular values (identity,
 * diag(2, 2, 1)) and rank-deficient matrices are ordinary inputs. Rotation angles come from
 * the stable tangent formula, so a zero off-diagonal entry gives the identity. (Square roots
 * of sums of squares rather than hypot: entries of deformation gradients are far from the
 * range where hypot's scaling matters, and an underflow to zero yields the identity.)
 */
#ifndef PIOLA_SVD_H
#define PIOLA_SVD_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_shared.h"
#endif

/* Cyclic Jacobi sweeps at most; iteration stops earlier once the off-diagonal part is below
 * machine precision relative to the diagonal. Convergence is quadratic, so 4 to 5 sweeps
 * reach double precision from any start. */
#define PIOLA_JACOBI_MAX_SWEEPS 8

typedef struct piola_svd3 {
  piola_m3 u; /* rotation */
  piola_v3 s; /* sigma_1 >= sigma_2 >= |sigma_3|; sigma_3 < 0 iff det < 0 */
  piola_m3 v; /* rotation */
} piola_svd3;

/* Zeroes a[p][q] of the symmetric a by a rotation in the (p, q) plane, a = G^T a G; accumulates
 * v = v G. Lanes in `keep` (converged) are left as they are. */
PIOLA_FN void piola_jacobi_rotate(piola_m3 *a, piola_m3 *v, int p, int q, piola_mask keep) {
  const int r = 3 - p - q; /* the third index */
  const piola_real app = a->m[3 * p + p], aqq = a->m[3 * q + q], apq = a->m[3 * p + q];
  const piola_real arp = a->m[3 * r + p], arq = a->m[3 * r + q];
  const piola_real d = aqq - app;
  const piola_real root = sqrt(d * d + PIOLA_R(4.0) * apq * apq);
  const piola_real den = fabs(d) + root;
  keep = keep || apq == PIOLA_R(0.0) || den == PIOLA_R(0.0);
  if (PIOLA_ALL(keep)) {
    return;
  }
  /* t = tan(theta) = 2 apq / den (negated where d < 0), the smaller root of t^2 + 2 tau t - 1
   * = 0, tau = d / (2 apq); c = 1 / sqrt(1 + t^2) = den / sqrt(den^2 + 4 apq^2) and s = t c,
   * where den^2 + 4 apq^2 = 2 root den (root^2 = d^2 + 4 apq^2): one division on the sweep's
   * dependent chain, and a sum of positive terms under the root. */
  const piola_real inv = PIOLA_R(1.0) / sqrt(PIOLA_R(2.0) * root * den);
  const piola_real c = den * inv;
  piola_real s = PIOLA_R(2.0) * apq * inv;
  s = d < PIOLA_R(0.0) ? -s : s;
  /* G = I with G[p][p] = c, G[p][q] = s, G[q][p] = -s, G[q][q] = c. Of G^T a G only the rows
   * and columns p and q change: the diagonal by -/+ t apq (Golub, Van Loan, "Matrix
   * Computations", Sec. 8.5.2; t apq = s apq / c = 2 root inv s apq), a[p][q] to zero, and the
   * entries with the third index r as the columns of a G; a stays exactly symmetric. */
  const piola_real t_apq = PIOLA_R(2.0) * root * inv * s * apq;
  const piola_real rp = c * arp - s * arq, rq = s * arp + c * arq;
  a->m[3 * p + p] = keep ? app : app - t_apq;
  a->m[3 * q + q] = keep ? aqq : aqq + t_apq;
  a->m[3 * p + q] = a->m[3 * q + p] = keep ? apq : PIOLA_R(0.0);
  a->m[3 * r + p] = a->m[3 * p + r] = keep ? arp : rp;
  a->m[3 * r + q] = a->m[3 * q + r] = keep ? arq : rq;
  PIOLA_UNROLL
  for (int k = 0; k < 3; ++k) { /* v = v G */
    piola_real vkp = v->m[3 * k + p];
    piola_real vkq = v->m[3 * k + q];
    v->m[3 * k + p] = keep ? vkp : c * vkp - s * vkq;
    v->m[3 * k + q] = keep ? vkq : s * vkp + c * vkq;
  }
}

/* piola_sym_eigen() for the lanes not in `skip` (lanes whose result is not used; they do not
 * hold the sweeps up, and what they return is unspecified). */
PIOLA_FN void piola_sym_eigen_lanes(piola_m3 a, piola_m3 *v_out, piola_v3 *eig, piola_mask skip) {
  piola_m3 v = piola_m3_identity();
  piola_mask converged = skip;
  for (int sweep = 0; sweep < PIOLA_JACOBI_MAX_SWEEPS; ++sweep) {
    piola_real off = a.m[1] * a.m[1] + a.m[2] * a.m[2] + a.m[5] * a.m[5];
    piola_real diag = a.m[0] * a.m[0] + a.m[4] * a.m[4] + a.m[8] * a.m[8];
    converged = converged || off <= PIOLA_REAL_EPSILON * PIOLA_REAL_EPSILON * diag;
    if (PIOLA_ALL(converged)) {
      break;
    }
    piola_jacobi_rotate(&a, &v, 0, 1, converged);
    piola_jacobi_rotate(&a, &v, 0, 2, converged);
    piola_jacobi_rotate(&a, &v, 1, 2, converged);
  }
  *v_out = v;
  *eig = piola_v3_make(a.m[0], a.m[4], a.m[8]);
}

/* Eigen-decomposition of a symmetric matrix: a = V diag(eig) V^T with V a rotation
 * (eigenvalues unsorted). */
PIOLA_FN void piola_sym_eigen(piola_m3 a, piola_m3 *v_out, piola_v3 *eig) {
  piola_sym_eigen_lanes(a, v_out, eig, !PIOLA_TRUE);
}

/* Where `swap`, swaps columns i and j of b and v, negating column j of both so that det v
 * stays +1 and b = a v still holds. */
PIOLA_FN void piola_svd_swap_columns(piola_m3 *b, piola_m3 *v, int i, int j, piola_mask swap) {
  PIOLA_UNROLL
  for (int k = 0; k < 3; ++k) {
    piola_real bi = b->m[3 * k + i], bj = b->m[3 * k + j];
    b->m[3 * k + i] = swap ? bj : bi;
    b->m[3 * k + j] = swap ? -bi : bj;
    piola_real vi = v->m[3 * k + i], vj = v->m[3 * k + j];
    v->m[3 * k + i] = swap ? vj : vi;
    v->m[3 * k + j] = swap ? -vi : vj;
  }
}

/* Givens rotation on rows p, q of r that zeroes r[q][p]; accumulates u = u Q. */
PIOLA_FN void piola_givens_qr_step(piola_m3 *r, piola_m3 *u, int p, int q) {
  piola_real a = r->m[3 * p + p];
  piola_real b = r->m[3 * q + p];
  piola_real h = sqrt(a * a + b * b);
  piola_real c = h > PIOLA_R(0.0) ? a / h : PIOLA_R(1.0);
  piola_real s = h > PIOLA_R(0.0) ? b / h : PIOLA_R(0.0);
  PIOLA_UNROLL
  for (int k = 0; k < 3; ++k) { /* r = Q^T r */
    piola_real rpk = r->m[3 * p + k];
    piola_real rqk = r->m[3 * q + k];
    r->m[3 * p + k] = c * rpk + s * rqk;
    r->m[3 * q + k] = -s * rpk + c * rqk;
  }
  PIOLA_UNROLL
  for (int k = 0; k < 3; ++k) { /* u = u Q */
    piola_real ukp = u->m[3 * k + p];
    piola_real ukq = u->m[3 * k + q];
    u->m[3 * k + p] = c * ukp + s * ukq;
    u->m[3 * k + q] = -s * ukp + c * ukq;
  }
}

/* piola_svd3_compute() for the lanes not in `skip` (see piola_sym_eigen_lanes). */
PIOLA_FN piola_svd3 piola_svd3_compute_lanes(piola_m3 a, piola_mask skip) {
  piola_svd3 out;
  piola_v3 eig;
  piola_sym_eigen_lanes(piola_m3_mul_at(a, a), &out.v, &eig, skip);
  piola_m3 b = piola_m3_mul(a, out.v);
  /* Sort the columns of b by decreasing norm (three compare-and-swaps). */
  piola_real n0 = eig.x, n1 = eig.y, n2 = eig.z, t;
  piola_mask swap = n0 < n1;
  piola_svd_swap_columns(&b, &out.v, 0, 1, swap);
  t = n0;
  n0 = swap ? n1 : n0;
  n1 = swap ? t : n1;
  swap = n0 < n2;
  piola_svd_swap_columns(&b, &out.v, 0, 2, swap);
  n2 = swap ? n0 : n2;
  swap = n1 < n2;
  piola_svd_swap_columns(&b, &out.v, 1, 2, swap);
  out.u = piola_m3_identity();
  piola_givens_qr_step(&b, &out.u, 0, 1);
  piola_givens_qr_step(&b, &out.u, 0, 2);
  piola_givens_qr_step(&b, &out.u, 1, 2);
  out.s = piola_v3_make(b.m[0], b.m[4], b.m[8]);
  return out;
}

/* a = U diag(s) V^T with the conventions above. */
PIOLA_FN piola_svd3 piola_svd3_compute(piola_m3 a) {
  return piola_svd3_compute_lanes(a, !PIOLA_TRUE);
}

/* U diag(s) V^T */
PIOLA_FN piola_m3 piola_svd3_compose(piola_m3 u, piola_v3 s, piola_m3 v) {
  piola_m3 us = u;
  PIOLA_UNROLL
  for (int k = 0; k < 3; ++k) {
    us.m[3 * k] *= s.x;
    us.m[3 * k + 1] *= s.y;
    us.m[3 * k + 2] *= s.z;
  }
  return piola_m3_mul_bt(us, v);
}

/* The symmetric a projected to the positive semidefinite cone: a = Q diag(l) Q^T with the
 * negative eigenvalues set to zero (per lane in packets: the eigen-decomposition runs when a lane
 * needs it, and the lanes that do not keep a). */
PIOLA_FN piola_m3 piola_sym3_project_psd(piola_m3 a) {
  /* Positive definite by Sylvester's criterion (the usual case): nothing to do, no sweeps. */
  const piola_mask definite = a.m[0] > PIOLA_R(0.0) &&
                              a.m[0] * a.m[4] - a.m[1] * a.m[3] > PIOLA_R(0.0) &&
                              piola_m3_det(a) > PIOLA_R(0.0);
  if (PIOLA_ALL(definite)) {
    return a;
  }
  piola_m3 q;
  piola_v3 l;
  piola_sym_eigen_lanes(a, &q, &l, definite);
  const piola_mask keep =
      definite || (l.x >= PIOLA_R(0.0) && l.y >= PIOLA_R(0.0) && l.z >= PIOLA_R(0.0));
  if (PIOLA_ALL(keep)) {
    return a;
  }
  l = piola_v3_make(fmax(l.x, PIOLA_R(0.0)), fmax(l.y, PIOLA_R(0.0)), fmax(l.z, PIOLA_R(0.0)));
  return piola_m3_select(keep, a, piola_svd3_compose(q, l, q));
}

#endif /* PIOLA_SVD_H */
