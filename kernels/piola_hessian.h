/* Piola's global Newton step (PIOLA_SCHEME_MULTIGRID): the energies, gradients and Hessians,
 * projected to the positive semidefinite cone, of a tet (12 x 12), a cloth triangle (9 x 9) and
 * a bending stencil (12 x 12), shared by C and OpenCL C (the CPU reference's solve,
 * src/host/newton.c). The energies and stresses are piola_tet.h's and piola_cloth.h's.
 */
#ifndef PIOLA_HESSIAN_H
#define PIOLA_HESSIAN_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_cloth.h"
#include "piola_tet.h"
#endif

#ifndef PIOLA_LANES /* one tet at a time */
/* Newton's method on the step's incremental potential needs all sixteen blocks d2U/dx_a dx_b
 * of a tet's energy U = V Psi(F), F = sum_j x_j b_j^T, made positive semidefinite, so that the
 * step's matrix is positive definite (projected Newton: Teran, Sifakis, Irving, Fedkiw 2005,
 * "Robust Quasistatic Finite Elements and Flesh Simulation", Sec. 4). With A = d2Psi/dF2 (9 x 9,
 * dP = A : dF) the blocks are H_ab[r][k] = V sum_{c,d} b_a[c] A[rc][kd] b_b[d], so with A's
 * eigenpairs (l_m, Q_m), Q_m a 3x3 matrix of unit Frobenius norm,
 *   H_ab = V sum_m max(l_m, 0) (Q_m b_a) (Q_m b_b)^T,
 * and projecting A projects the whole 12 x 12 Hessian. On the regular path (no inversion
 * handling at F, all principal stretches S_i > 0) the eigenpairs are closed in the frame of
 * F = U S V^T: along dF = U D V^T the differential of P in that frame couples only D's diagonal
 * (a 3x3 block K) and each pair (D_ij, D_ji), i < j (a 2x2 block B); derived from the stresses of
 * piola_stvk_energy() and piola_neohookean_energy() (with s_i = mu (S_i^2 - 1) + lambda / 2
 * sum_k (S_k^2 - 1) StVK's principal second Piola-Kirchhoff stress, c = mu - lambda log J):
 *   StVK:        K = diag(s_i + 2 mu S_i^2) + lambda S S^T,
 *                B = [[s_j + mu S_i^2, mu S_i S_j], [mu S_i S_j, s_i + mu S_j^2]];
 *   Neo-Hookean: K = mu I + c diag(1 / S_i^2) + lambda t t^T, t_i = 1 / S_i,
 *                B = [[mu, c / (S_i S_j)], [c / (S_i S_j), mu]].
 * No 1 / (S_i^2 - S_j^2) appears, so repeated stretches are ordinary. On the inversion path
 * (clamped stretches: an extended energy that is only C1) A is the central difference of the
 * exact stress along the nine unit directions of F, the secant the vertex blocks above use, and
 * its eigenpairs come from cyclic Jacobi sweeps. */

/* a v */
PIOLA_FN piola_v3 piola_m3_times(piola_m3 a, piola_v3 v) {
  return piola_v3_make(a.m[0] * v.x + a.m[1] * v.y + a.m[2] * v.z,
                       a.m[3] * v.x + a.m[4] * v.y + a.m[5] * v.z,
                       a.m[6] * v.x + a.m[7] * v.y + a.m[8] * v.z);
}

/* Eigen-decomposition of the symmetric n x n a (n <= 9, row-major, destroyed) by cyclic Jacobi
 * sweeps: the eigenvalues end on a's diagonal, the eigenvectors in the columns of v. */
PIOLA_FN void piola_symn_eigen(int n, piola_real *a, piola_real *v) {
  for (int i = 0; i < n * n; ++i) {
    v[i] = (i % (n + 1) == 0) ? PIOLA_R(1.0) : PIOLA_R(0.0);
  }
  for (int sweep = 0; sweep < 16; ++sweep) {
    piola_real off = PIOLA_R(0.0), diag = PIOLA_R(0.0);
    for (int i = 0; i < n; ++i) {
      diag += a[(n + 1) * i] * a[(n + 1) * i];
      for (int j = i + 1; j < n; ++j) {
        off += a[n * i + j] * a[n * i + j];
      }
    }
    if (!(off > PIOLA_REAL_EPSILON * PIOLA_REAL_EPSILON * diag)) {
      return;
    }
    for (int p = 0; p < n - 1; ++p) {
      for (int q = p + 1; q < n; ++q) {
        const piola_real apq = a[n * p + q];
        if (apq == PIOLA_R(0.0)) {
          continue;
        }
        /* the stable tangent of the rotation angle (Golub, Van Loan, Sec. 8.5.2) */
        const piola_real theta = (a[n * q + q] - a[n * p + p]) / (PIOLA_R(2.0) * apq);
        const piola_real t = (theta >= PIOLA_R(0.0) ? PIOLA_R(1.0) : PIOLA_R(-1.0)) /
                             (fabs(theta) + sqrt(theta * theta + PIOLA_R(1.0)));
        const piola_real c = PIOLA_R(1.0) / sqrt(t * t + PIOLA_R(1.0)), s = t * c;
        for (int k = 0; k < n; ++k) { /* a = a G */
          const piola_real akp = a[n * k + p], akq = a[n * k + q];
          a[n * k + p] = c * akp - s * akq;
          a[n * k + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) { /* a = G^T a */
          const piola_real apk = a[n * p + k], aqk = a[n * q + k];
          a[n * p + k] = c * apk - s * aqk;
          a[n * q + k] = s * apk + c * aqk;
        }
        for (int k = 0; k < n; ++k) { /* v = v G */
          const piola_real vkp = v[n * k + p], vkq = v[n * k + q];
          v[n * k + p] = c * vkp - s * vkq;
          v[n * k + q] = s * vkp + c * vkq;
        }
      }
    }
  }
}

/* The eigenpairs of the symmetric 2x2 [[p, r], [r, q]]: l[0] >= l[1], vectors (e[0], e[1]) and
 * (-e[1], e[0]). */
PIOLA_FN void piola_sym2_eigen(piola_real p, piola_real r, piola_real q, piola_real *l,
                               piola_real *e) {
  const piola_real mean = PIOLA_R(0.5) * (p + q), diff = PIOLA_R(0.5) * (p - q);
  const piola_real d = sqrt(diff * diff + r * r);
  l[0] = mean + d;
  l[1] = mean - d;
  const piola_real theta = PIOLA_R(0.5) * atan2(r, diff); /* tan 2 theta = 2 r / (p - q) */
  e[0] = cos(theta);
  e[1] = sin(theta);
}

/* The nine eigenpairs (l[m], q[m]) of A = d2Psi/dF2 / E at F (see above); */
PIOLA_FN void piola_stress_differential_modes(const piola_tet_material *mat, piola_m3 f,
                                              piola_mask used_svd, piola_real *l, piola_m3 *q) {
  piola_svd3 d;
  d.s = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  if (!used_svd) {
    d = piola_svd3_compute(f);
  }
  if (!used_svd && d.s.z > PIOLA_R(0.0)) {
    const piola_real s[3] = {d.s.x, d.s.y, d.s.z};
    const piola_v3 u[3] = {piola_m3_column(d.u, 0), piola_m3_column(d.u, 1),
                           piola_m3_column(d.u, 2)};
    const piola_v3 v[3] = {piola_m3_column(d.v, 0), piola_m3_column(d.v, 1),
                           piola_m3_column(d.v, 2)};
    piola_m3 k;
    piola_real pair[3][3]; /* (i, j) pairs 01, 02, 12: p, r, q */
    const int pi[3] = {0, 0, 1}, pj[3] = {1, 2, 2};
    if (mat->model == PIOLA_TET_MODEL_STVK) {
      const piola_real tr = PIOLA_R(0.5) * (s[0] * s[0] + s[1] * s[1] + s[2] * s[2] - PIOLA_R(3.0));
      piola_real sp[3];
      for (int i = 0; i < 3; ++i) {
        sp[i] = mat->mu * (s[i] * s[i] - PIOLA_R(1.0)) + mat->lambda * tr;
      }
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          k.m[3 * i + j] = mat->lambda * s[i] * s[j] +
                           (i == j ? sp[i] + PIOLA_R(2.0) * mat->mu * s[i] * s[i] : PIOLA_R(0.0));
        }
      }
      for (int n = 0; n < 3; ++n) {
        const int i = pi[n], j = pj[n];
        pair[n][0] = sp[j] + mat->mu * s[i] * s[i];
        pair[n][1] = mat->mu * s[i] * s[j];
        pair[n][2] = sp[i] + mat->mu * s[j] * s[j];
      }
    } else {
      const piola_real c = mat->mu - mat->lambda * log(s[0] * s[1] * s[2]);
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          k.m[3 * i + j] =
              mat->lambda / (s[i] * s[j]) + (i == j ? mat->mu + c / (s[i] * s[i]) : PIOLA_R(0.0));
        }
      }
      for (int n = 0; n < 3; ++n) {
        pair[n][0] = mat->mu;
        pair[n][1] = c / (s[pi[n]] * s[pj[n]]);
        pair[n][2] = mat->mu;
      }
    }
    piola_m3 kv;
    piola_v3 kl;
    piola_sym_eigen(k, &kv, &kl);
    const piola_real kls[3] = {kl.x, kl.y, kl.z};
    for (int m = 0; m < 3; ++m) { /* Q = sum_i e_i u_i v_i^T */
      l[m] = kls[m];
      q[m] = piola_m3_scale(piola_m3_outer(u[0], v[0]), kv.m[m]);
      for (int i = 1; i < 3; ++i) {
        const piola_m3 o = piola_m3_outer(u[i], v[i]);
        for (int e = 0; e < 9; ++e) {
          q[m].m[e] += kv.m[3 * i + m] * o.m[e];
        }
      }
    }
    for (int n = 0; n < 3; ++n) { /* Q = a u_i v_j^T + b u_j v_i^T */
      piola_real pl[2], pe[2];
      piola_sym2_eigen(pair[n][0], pair[n][1], pair[n][2], pl, pe);
      const piola_m3 oij = piola_m3_outer(u[pi[n]], v[pj[n]]);
      const piola_m3 oji = piola_m3_outer(u[pj[n]], v[pi[n]]);
      for (int e = 0; e < 9; ++e) {
        q[3 + 2 * n].m[e] = pe[0] * oij.m[e] + pe[1] * oji.m[e];
        q[4 + 2 * n].m[e] = -pe[1] * oij.m[e] + pe[0] * oji.m[e];
      }
      l[3 + 2 * n] = pl[0];
      l[4 + 2 * n] = pl[1];
    }
    return;
  }
  /* The inversion path: central differences of the extended energy's stress. */
  const piola_real step =
      cbrt(PIOLA_REAL_EPSILON) * fmax(PIOLA_R(1.0), sqrt(piola_m3_frobenius2(f)));
  piola_real a[81], v[81];
  for (int col = 0; col < 9; ++col) {
    piola_m3 fp = f, fm = f, pp, pm;
    fp.m[col] += step;
    fm.m[col] -= step;
    piola_mask svd_p, svd_m;
    piola_energy_and_stress(mat, fp, &pp, &svd_p);
    piola_energy_and_stress(mat, fm, &pm, &svd_m);
    for (int row = 0; row < 9; ++row) {
      a[9 * row + col] = (pp.m[row] - pm.m[row]) / (PIOLA_R(2.0) * step);
    }
  }
  for (int i = 0; i < 9; ++i) {
    for (int j = i + 1; j < 9; ++j) {
      const piola_real m = PIOLA_R(0.5) * (a[9 * i + j] + a[9 * j + i]);
      a[9 * i + j] = m;
      a[9 * j + i] = m;
    }
  }
  piola_symn_eigen(9, a, v);
  for (int m = 0; m < 9; ++m) {
    l[m] = a[10 * m];
    for (int e = 0; e < 9; ++e) {
      q[m].m[e] = v[9 * e + m];
    }
  }
}

/* The blocks of a tet's Hessian, upper triangle by rows: (0,0) (0,1) (0,2) (0,3) (1,1) (1,2)
 * (1,3) (2,2) (2,3) (3,3); H_ba = H_ab^T. */
#define PIOLA_TET_HESSIAN_BLOCKS 10

/* A tet's energy U / E (m^3, returned), its gradients g[0..3] (m^2, as piola_tet_gradient())
 * and its Hessian blocks hess[PIOLA_TET_HESSIAN_BLOCKS] (m, projected to the positive
 * semidefinite cone, see above), all in units of E. A tet whose energy is undefined at F
 * (Neo-Hookean inverted with inversion handling off) contributes nothing. */
PIOLA_FN piola_real piola_tet_hessian(const piola_tet_material *mat, piola_m3 dm_inv,
                                      piola_real volume, piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                      piola_v3 x3, piola_v3 *g, piola_m3 *hess) {
  const piola_m3 f = piola_tet_deformation(x0, x1, x2, x3, dm_inv);
  piola_m3 p;
  piola_mask used_svd;
  const piola_real psi = piola_energy_and_stress(mat, f, &p, &used_svd);
  for (int k = 0; k < 4; ++k) {
    g[k] = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  }
  for (int k = 0; k < PIOLA_TET_HESSIAN_BLOCKS; ++k) {
    hess[k] = piola_m3_scale(piola_m3_identity(), PIOLA_R(0.0));
  }
  if (!(psi >= PIOLA_R(0.0))) {
    return PIOLA_R(0.0); /* undefined */
  }
  piola_v3 b[4];
  for (int k = 0; k < 4; ++k) {
    b[k] = piola_tet_corner_row(dm_inv, k);
    g[k] = piola_v3_scale(piola_m3_times(p, b[k]), volume);
  }
  piola_real l[9];
  piola_m3 q[9];
  piola_stress_differential_modes(mat, f, used_svd, l, q);
  for (int m = 0; m < 9; ++m) {
    if (!(l[m] > PIOLA_R(0.0))) {
      continue; /* projected out (or not a number) */
    }
    piola_v3 w[4];
    for (int k = 0; k < 4; ++k) {
      w[k] = piola_m3_times(q[m], b[k]);
    }
    int at = 0;
    for (int i = 0; i < 4; ++i) {
      for (int j = i; j < 4; ++j, ++at) {
        const piola_m3 o = piola_m3_outer(w[i], piola_v3_scale(w[j], volume * l[m]));
        for (int e = 0; e < 9; ++e) {
          hess[at].m[e] += o.m[e];
        }
      }
    }
  }
  return psi > PIOLA_R(0.0) ? volume * psi : PIOLA_R(0.0);
}

/* ---- Cloth ------------------------------------------------------------------------------- */

/* The blocks of a triangle's Hessian, upper triangle by rows: (0,0) (0,1) (0,2) (1,1) (1,2)
 * (2,2). */
#define PIOLA_TRI_HESSIAN_BLOCKS 6

/* A cloth triangle's membrane energy U / k (m^2, returned), its gradients g[0..2] (m, as
 * piola_cloth_tri_gradient()) and its Hessian blocks hess[PIOLA_TRI_HESSIAN_BLOCKS]
 * (dimensionless), in units of k. As for a tet, with F = [f0 f1] (3 x 2) = sum_j x_j b_j^T and
 * A = d2Psi/dF2 (6 x 6, by the columns of F), H_ab = A_area sum_{c,d} b_a[c] A_cd b_b[d], and A
 * projected to the positive semidefinite cone projects the whole 9 x 9 Hessian. For orthotropic
 * StVK, Psi = (1/2) e^T Q e with e = (E11, E22, 2 E12) and S = Q e (piola_cloth_tri_energy_stress):
 *   A_00 = c11 f0 f0^T + c33 f1 f1^T + S11 I,
 *   A_11 = c22 f1 f1^T + c33 f0 f0^T + S22 I,
 *   A_01 = c12 f0 f1^T + c33 f1 f0^T + S12 I = A_10^T,
 * indefinite where the triangle is compressed (S with a negative eigenvalue: the buckling of a
 * membrane); its eigenpairs come from cyclic Jacobi sweeps. */
PIOLA_FN piola_real piola_cloth_tri_hessian(const piola_cloth_tri_material *mat, piola_m2 dm_inv,
                                            piola_real area, piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                            piola_v3 *g, piola_m3 *hess) {
  const piola_m32 f = piola_cloth_tri_deformation(x0, x1, x2, dm_inv);
  piola_m32 p;
  const piola_real psi = piola_cloth_tri_energy_stress(mat, f, &p);
  /* b_a: row a - 1 of Dm^-1, b_0 = -(b_1 + b_2) */
  const piola_real b[3][2] = {{-(dm_inv.m[0] + dm_inv.m[2]), -(dm_inv.m[1] + dm_inv.m[3])},
                              {dm_inv.m[0], dm_inv.m[1]},
                              {dm_inv.m[2], dm_inv.m[3]}};
  for (int k = 0; k < 3; ++k) {
    g[k] = piola_v3_scale(
        piola_v3_add(piola_v3_scale(p.c0, b[k][0]), piola_v3_scale(p.c1, b[k][1])), area);
  }
  for (int k = 0; k < PIOLA_TRI_HESSIAN_BLOCKS; ++k) {
    hess[k] = piola_m3_scale(piola_m3_identity(), PIOLA_R(0.0));
  }
  const piola_real e11 = PIOLA_R(0.5) * (piola_v3_dot(f.c0, f.c0) - PIOLA_R(1.0));
  const piola_real e22 = PIOLA_R(0.5) * (piola_v3_dot(f.c1, f.c1) - PIOLA_R(1.0));
  const piola_real s11 = mat->c11 * e11 + mat->c12 * e22, s22 = mat->c12 * e11 + mat->c22 * e22,
                   s12 = mat->c33 * piola_v3_dot(f.c0, f.c1);
  const piola_real f0[3] = {f.c0.x, f.c0.y, f.c0.z}, f1[3] = {f.c1.x, f.c1.y, f.c1.z};
  piola_real a[36], v[36];
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) {
      const piola_real id = r == k ? PIOLA_R(1.0) : PIOLA_R(0.0);
      a[6 * r + k] = mat->c11 * f0[r] * f0[k] + mat->c33 * f1[r] * f1[k] + s11 * id;
      a[6 * (3 + r) + 3 + k] = mat->c22 * f1[r] * f1[k] + mat->c33 * f0[r] * f0[k] + s22 * id;
      a[6 * r + 3 + k] = mat->c12 * f0[r] * f1[k] + mat->c33 * f1[r] * f0[k] + s12 * id;
      a[6 * (3 + k) + r] = a[6 * r + 3 + k];
    }
  }
  piola_symn_eigen(6, a, v);
  for (int m = 0; m < 6; ++m) {
    const piola_real l = a[7 * m];
    if (!(l > PIOLA_R(0.0))) {
      continue; /* projected out (or not a number) */
    }
    const piola_v3 q0 = piola_v3_make(v[m], v[6 + m], v[12 + m]);
    const piola_v3 q1 = piola_v3_make(v[18 + m], v[24 + m], v[30 + m]);
    piola_v3 w[3];
    for (int k = 0; k < 3; ++k) {
      w[k] = piola_v3_add(piola_v3_scale(q0, b[k][0]), piola_v3_scale(q1, b[k][1]));
    }
    int at = 0;
    for (int i = 0; i < 3; ++i) {
      for (int j = i; j < 3; ++j, ++at) {
        const piola_m3 o = piola_m3_outer(w[i], piola_v3_scale(w[j], area * l));
        for (int e = 0; e < 9; ++e) {
          hess[at].m[e] += o.m[e];
        }
      }
    }
  }
  return area * psi;
}

/* A bending stencil's energy U / k (dimensionless, returned), its gradients g[0..3] (1/m, as
 * piola_cloth_bend_gradient()) and its Hessian blocks hess[PIOLA_TET_HESSIAN_BLOCKS] (1/m^2, the
 * tets' order), in units of k: H_ab = q K_a K_b I, the exact Hessian Q (x) I of Bergou et al.'s
 * quadratic energy for a flat rest state, positive semidefinite (Q = q K K^T); for a curved rest
 * state its Gauss-Newton part (the dependence of n_bar on the positions left out, as in
 * piola_cloth_bend_vertex_block()). Nothing (0, zero gradients and blocks) where the curved form
 * is undefined (folded onto itself). */
PIOLA_FN piola_real piola_cloth_bend_hessian(const piola_cloth_bend_rest *rest, piola_v3 x0,
                                             piola_v3 x1, piola_v3 x2, piola_v3 x3, piola_v3 *g,
                                             piola_m3 *hess) {
  const piola_real u = piola_cloth_bend_gradient(rest, x0, x1, x2, x3, g);
  const piola_real q = u >= PIOLA_R(0.0) ? rest->q : PIOLA_R(0.0);
  int at = 0;
  for (int i = 0; i < 4; ++i) {
    for (int j = i; j < 4; ++j, ++at) {
      hess[at] = piola_m3_scale(piola_m3_identity(), q * rest->k[i] * rest->k[j]);
    }
  }
  return u >= PIOLA_R(0.0) ? u : PIOLA_R(0.0);
}
#endif /* one tet at a time */

#endif /* PIOLA_HESSIAN_H */
