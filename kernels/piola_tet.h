/* Piola tetrahedral energy constraint: the one source of truth for the per-tet math, compiled
 * as C11 (double, CPU reference) and OpenCL C (float, kernels).
 *
 * Bender, Koschier, Charrier, Weber 2014, "Position-Based Simulation of Continuous
 * Materials": per tet F = Ds Dm^-1, energy U = V Psi(F), gradients [g1 g2 g3] = V P Dm^-T and
 * g0 = -(g1 + g2 + g3), with P the first Piola-Kirchhoff stress of
 *   Saint Venant-Kirchhoff (paper Eqs. 4-6): E = (F^T F - I) / 2, P = F (2 mu E + lambda tr(E) I)
 *   Neo-Hookean (paper Eqs. 7-9, I3 = J^2):
 *     Psi = mu/2 (I1 - 3) - mu log J + lambda/2 log^2 J, P = mu F - mu F^-T + lambda log J F^-T.
 *
 * Stiffness is carried in units of Young's modulus: the functions take mu / E and lambda / E and
 * return Psi / E and P / E, so that E enters only through the XPBD compliance alpha = 1 / E
 * (Macklin, Mueller, Chentanez 2016). With U^ = U / E the XPBD constraint is C = sqrt(2 U^),
 * whose potential (1/2) alpha^-1 C^2 is exactly U. One projection, multiplied through by C^2
 * so nothing divides by a vanishing C (alpha~ = alpha / h^2, S = sum_i w_i |grad_i U^|^2):
 *   dlambda = -(C + alpha~ lambda) C^2 / (S + alpha~ C^2)
 *   dx_i    = -w_i grad_i U^ (C + alpha~ lambda) C / (S + alpha~ C^2)
 * The paper's plain PBD form (its Eq. 3 with C = U^) is the same with alpha~ = 0 and C^2
 * replaced by U^: dx_i = -w_i grad_i U^ U^ / S. There E cancels out.
 *
 * Material damping (XPBD's constraint damping, Macklin et al. 2016, Eq. 26): a Rayleigh damping
 * proportional to the stiffness, a dissipation potential (1/2) beta alpha^-1 dC/dt^2 with beta
 * the material's damping (s), whose force along grad C is -beta E dC/dt. With beta~ = h^2 beta
 * alpha^-1 and gamma = alpha~ beta~ / h = beta / h (dimensionless: E cancels), and x - x^n the
 * motion of the corners since the substep's start,
 *   dlambda = (-C - alpha~ lambda - gamma grad C (x - x^n)) / ((1 + gamma) |grad C|_w^2 + alpha~).
 * With grad C = grad U^ / C, |grad C|_w^2 = S / C^2 and grad C (x - x^n) = G / C, where
 * G = sum_i grad_i U^ . (x_i - x_i^n); multiplied through by C^2:
 *   dlambda = -((C + alpha~ lambda) C^2 + gamma G C) / ((1 + gamma) S + alpha~ C^2)
 *   dx_i    = -w_i grad_i U^ ((C + alpha~ lambda) C + gamma G) / ((1 + gamma) S + alpha~ C^2)
 * (dx_i = w_i grad_i C dlambda, the C of grad C taken out of dlambda's C^2). gamma = 0 gives the
 * undamped projection bit for bit. At rest x = x^n at the end of a substep, G = 0 there, so the
 * damping moves no equilibrium of the converged step; it slows each projection by 1 + gamma, so
 * an unconverged solve (few iterations) is softer. The PBD form has no compliance and no time
 * scale: there gamma = 0 (the damping does not apply).
 *
 * Inverted elements (Irving, Teran, Fedkiw 2004): F = U F^ V^T with rotations U, V and the
 * reflection folded into the smallest singular value; the energy is evaluated on the principal
 * stretches, clamped from below at PIOLA_CLAMP_STRETCH = 1/sqrt(3), the stretch at which the
 * StVK compressive stress peaks (Gao et al. 2009; paper Fig. 2). Below it StVK holds the stress
 * at its peak (first-order extension of the energy) and Neo-Hookean extends its stress
 * linearly (second-order extension); P = U P^ V^T, the exact gradient of the extended energy.
 *
 * Neo-Hookean is evaluated from the Green strain with log1p, so the energy stays second order
 * in the strain under rounding: the naive I1 - 3 - 2 log J leaves first-order noise in float
 * that the PBD projection would amplify into position jitter.
 */
#ifndef PIOLA_TET_H
#define PIOLA_TET_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_shared.h"
#include "piola_svd.h"
#endif

/* Models, solver forms and inversion modes; the values match the public enums. */
#define PIOLA_TET_MODEL_STVK 0
#define PIOLA_TET_MODEL_NEOHOOKEAN 1
#define PIOLA_TET_SOLVER_XPBD 0
#define PIOLA_TET_SOLVER_PBD 1
#define PIOLA_TET_INVERSION_OFF 0
#define PIOLA_TET_INVERSION_ON 1
#define PIOLA_TET_INVERSION_ALWAYS 2

/* 1/sqrt(3): below this principal stretch the stress is extended, not evaluated. */
#define PIOLA_CLAMP_STRETCH PIOLA_R(0.57735026918962576)

/* A tet whose energy density is at most this fraction of E does no work: the strain is below
 * about 1e-6, under what float positions resolve. Relative, so soft and stiff materials skip
 * alike. */
#define PIOLA_ENERGY_EPSILON PIOLA_R(1e-12)

/* The projection is skipped when its denominator is below this fraction of the element's own
 * scale, w_max U^2 |Dm^-1|^2, i.e. where the energy is (numerically) stationary although not
 * zero: the step C / |grad C| would exceed about 1e4 element sizes. */
#define PIOLA_DENOMINATOR_EPSILON PIOLA_R(1e-8)

/* Result flags of piola_tet_project(). */
#define PIOLA_TET_WORKED 1
#define PIOLA_TET_USED_SVD 2

/* Material constants of one tet, as the solver needs them. */
typedef struct piola_tet_material {
  piola_real mu;         /* Lame mu / E = 1 / (2 (1 + nu)) */
  piola_real lambda;     /* Lame lambda / E = nu / ((1 + nu)(1 - 2 nu)) */
  piola_real compliance; /* alpha = 1 / E, m^2/N (XPBD) */
  piola_int model;       /* PIOLA_TET_MODEL_* */
  piola_int solver;      /* PIOLA_TET_SOLVER_* */
  piola_int inversion;   /* PIOLA_TET_INVERSION_* */
  piola_int split;       /* XPBD: 1 = the mu and lambda terms as two constraints */
  piola_real damping;    /* Rayleigh beta of the elastic energy, s (XPBD; 0: undamped) */
} piola_tet_material;

/* A material as stored for the kernels (44 bytes, same layout in C and OpenCL C). */
typedef struct piola_material_data {
  piola_f32 mu, lambda, compliance; /* as in piola_tet_material */
  piola_i32 model, solver, inversion;
  piola_f32 plastic_yield; /* dimensionless strain */
  piola_f32 plastic_creep; /* 1/s */
  piola_f32 plastic_max;   /* dimensionless strain */
  piola_i32 split;         /* as in piola_tet_material */
  piola_f32 damping;       /* s, as in piola_tet_material */
} piola_material_data;

PIOLA_FN piola_tet_material piola_tet_material_from_data(piola_material_data d) {
  piola_tet_material m;
  m.mu = (piola_real)d.mu;
  m.lambda = (piola_real)d.lambda;
  m.compliance = (piola_real)d.compliance;
  m.model = d.model;
  m.solver = d.solver;
  m.inversion = d.inversion;
  m.split = d.split;
  m.damping = (piola_real)d.damping;
  return m;
}

/* ---- Energies on principal stretches (the inversion path) ---------------------------- */

/* Psi / E, dPsi/dsigma_i / E and d2Psi/dsigma_i^2 / E at principal stretches c (all > 0), and
 * the model's volume measure m (StVK: tr E; Neo-Hookean: log J) with its gradient dm. */
PIOLA_FN piola_real piola_principal_energy(const piola_tet_material *mat, piola_v3 c, piola_v3 *g,
                                           piola_v3 *k, piola_real *m, piola_v3 *dm) {
  piola_real e0 = c.x - PIOLA_R(1.0), e1 = c.y - PIOLA_R(1.0), e2 = c.z - PIOLA_R(1.0);
  if (mat->model == PIOLA_TET_MODEL_STVK) {
    /* Green strain on the principal axes: (c^2 - 1) / 2 = e (2 + e) / 2. */
    piola_real s0 = PIOLA_R(0.5) * e0 * (PIOLA_R(2.0) + e0);
    piola_real s1 = PIOLA_R(0.5) * e1 * (PIOLA_R(2.0) + e1);
    piola_real s2 = PIOLA_R(0.5) * e2 * (PIOLA_R(2.0) + e2);
    piola_real tr = s0 + s1 + s2;
    piola_real two_mu = PIOLA_R(2.0) * mat->mu;
    *g = piola_v3_make(c.x * (two_mu * s0 + mat->lambda * tr),
                       c.y * (two_mu * s1 + mat->lambda * tr),
                       c.z * (two_mu * s2 + mat->lambda * tr));
    /* StVK holds the stress below the clamp: no curvature term. */
    *k = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
    *m = tr;
    *dm = c;
    return mat->mu * (s0 * s0 + s1 * s1 + s2 * s2) + PIOLA_R(0.5) * mat->lambda * tr * tr;
  }
  /* Neo-Hookean: Psi = mu/2 sum (c^2 - 1 - 2 log c) + lambda/2 log^2 J, each term of the sum
   * written as e^2 + 2 (e - log1p(e)) to stay accurate near c = 1. */
  piola_real l0 = log1p(e0), l1 = log1p(e1), l2 = log1p(e2);
  piola_real log_j = l0 + l1 + l2;
  piola_real sum = e0 * e0 + e1 * e1 + e2 * e2 + PIOLA_R(2.0) * ((e0 - l0) + (e1 - l1) + (e2 - l2));
  piola_real mu = mat->mu, la = mat->lambda;
  *g = piola_v3_make(mu * c.x + (la * log_j - mu) / c.x, mu * c.y + (la * log_j - mu) / c.y,
                     mu * c.z + (la * log_j - mu) / c.z);
  *k = piola_v3_make(mu + (mu + la * (PIOLA_R(1.0) - log_j)) / (c.x * c.x),
                     mu + (mu + la * (PIOLA_R(1.0) - log_j)) / (c.y * c.y),
                     mu + (mu + la * (PIOLA_R(1.0) - log_j)) / (c.z * c.z));
  *m = log_j;
  *dm = piola_v3_make(PIOLA_R(1.0) / c.x, PIOLA_R(1.0) / c.y, PIOLA_R(1.0) / c.z);
  return PIOLA_R(0.5) * mu * sum + PIOLA_R(0.5) * la * log_j * log_j;
}

/* Psi / E and the diagonal stress P^ / E at principal stretches sigma (sigma_3 may be <= 0),
 * extended below the clamp: with c = max(sigma, clamp) and d = sigma - c <= 0,
 *   Psi~(sigma) = Psi(c) + g(c).d + 1/2 sum_i k_i(c) d_i^2,
 * k = 0 for StVK (the stress along a clamped axis is held) and k_i = d2Psi/dc_i^2 for
 * Neo-Hookean (extended linearly). P^ is the exact derivative of Psi~: along a clamped axis
 * g_j + k_j d_j; along a free axis g_j plus the coupling of the clamped axes into it,
 *   StVK: lambda c_j sum_i c_i d_i,   Neo-Hookean: lambda / c_j sum_i (d_i / c_i)(1 - d_i / (2
 * c_i)) (from d2Psi/dc_i dc_j and dk_i/dc_j, i != j). *measure is the volume measure extended
 * the same way, m(c) + dm(c).d. */
PIOLA_FN piola_real piola_principal_energy_clamped_measure(const piola_tet_material *mat,
                                                           piola_v3 sigma, piola_v3 *p_hat,
                                                           piola_real *measure) {
  piola_v3 c = piola_v3_make(fmax(sigma.x, PIOLA_CLAMP_STRETCH), fmax(sigma.y, PIOLA_CLAMP_STRETCH),
                             fmax(sigma.z, PIOLA_CLAMP_STRETCH));
  piola_v3 d = piola_v3_sub(sigma, c);
  piola_v3 g, k, dm;
  piola_real m;
  piola_real psi = piola_principal_energy(mat, c, &g, &k, &m, &dm);
  *measure = m + piola_v3_dot(dm, d);
  piola_real coupling;
  piola_v3 scale; /* coupling of the free axis j: scale_j * coupling */
  if (mat->model == PIOLA_TET_MODEL_STVK) {
    coupling = mat->lambda * (c.x * d.x + c.y * d.y + c.z * d.z);
    scale = c;
  } else {
    piola_v3 r = piola_v3_make(d.x / c.x, d.y / c.y, d.z / c.z);
    coupling = mat->lambda * (r.x * (PIOLA_R(1.0) - PIOLA_R(0.5) * r.x) +
                              r.y * (PIOLA_R(1.0) - PIOLA_R(0.5) * r.y) +
                              r.z * (PIOLA_R(1.0) - PIOLA_R(0.5) * r.z));
    scale = piola_v3_make(PIOLA_R(1.0) / c.x, PIOLA_R(1.0) / c.y, PIOLA_R(1.0) / c.z);
  }
  *p_hat = piola_v3_make(g.x + (d.x < PIOLA_R(0.0) ? k.x * d.x : scale.x * coupling),
                         g.y + (d.y < PIOLA_R(0.0) ? k.y * d.y : scale.y * coupling),
                         g.z + (d.z < PIOLA_R(0.0) ? k.z * d.z : scale.z * coupling));
  return psi + piola_v3_dot(g, d) +
         PIOLA_R(0.5) * (k.x * d.x * d.x + k.y * d.y * d.y + k.z * d.z * d.z);
}

/* piola_principal_energy_clamped_measure() without the measure. */
PIOLA_FN piola_real piola_principal_energy_clamped(const piola_tet_material *mat, piola_v3 sigma,
                                                   piola_v3 *p_hat) {
  piola_real measure;
  return piola_principal_energy_clamped_measure(mat, sigma, p_hat, &measure);
}

/* ---- Energies on F (the regular path) -------------------------------------------------- */

/* Psi / E and P / E of Saint Venant-Kirchhoff; c = F^T F. */
PIOLA_FN piola_real piola_stvk_energy(const piola_tet_material *mat, piola_m3 f, piola_m3 c,
                                      piola_m3 *p, piola_real *measure) {
  piola_sym3 e = piola_green_strain_of(c);
  piola_real tr = e.xx + e.yy + e.zz;
  *measure = tr;
  piola_m3 s = piola_m3_scale(piola_sym3_to_m3(e), PIOLA_R(2.0) * mat->mu);
  s.m[0] += mat->lambda * tr;
  s.m[4] += mat->lambda * tr;
  s.m[8] += mat->lambda * tr;
  *p = piola_m3_mul(f, s);
  return mat->mu * piola_sym3_frobenius2(e) + PIOLA_R(0.5) * mat->lambda * tr * tr;
}

/* Psi / E and P / E of Neo-Hookean; c = F^T F, j = det F > 0. With E the Green strain,
 * J^2 - 1 = 2 tr E + 4 i2(E) + 8 det E =: x and log J = log1p(x) / 2, so
 * I1 - 3 - 2 log J = (x - log1p(x)) - 4 i2(E) - 8 det E, free of first-order cancellation. */
PIOLA_FN piola_real piola_neohookean_energy(const piola_tet_material *mat, piola_m3 f, piola_m3 c,
                                            piola_real j, piola_m3 *p, piola_real *measure) {
  piola_sym3 e = piola_green_strain_of(c);
  piola_real tr = e.xx + e.yy + e.zz;
  piola_real i2 = e.xx * e.yy + e.xx * e.zz + e.yy * e.zz - e.xy * e.xy - e.xz * e.xz - e.yz * e.yz;
  piola_real de = e.xx * (e.yy * e.zz - e.yz * e.yz) - e.xy * (e.xy * e.zz - e.yz * e.xz) +
                  e.xz * (e.xy * e.yz - e.yy * e.xz);
  piola_real x = PIOLA_R(2.0) * tr + PIOLA_R(4.0) * i2 + PIOLA_R(8.0) * de;
  piola_real l1p = log1p(x);
  piola_real log_j = PIOLA_R(0.5) * l1p;
  *measure = log_j;
  piola_real iso = (x - l1p) - PIOLA_R(4.0) * i2 - PIOLA_R(8.0) * de; /* I1 - 3 - 2 log J */
  /* P = mu F + (lambda log J - mu) F^-T, F^-T = cof(F) / det F. */
  piola_m3 cof = piola_m3_cofactor(f);
  piola_real a = (mat->lambda * log_j - mat->mu) / j;
  PIOLA_UNROLL
  for (int i = 0; i < 9; ++i) {
    p->m[i] = mat->mu * f.m[i] + a * cof.m[i];
  }
  return PIOLA_R(0.5) * mat->mu * iso + PIOLA_R(0.5) * mat->lambda * log_j * log_j;
}

/* Whether F is inverted or has a principal stretch below the clamp, exactly and without an
 * SVD: every sigma >= clamp and det F > 0 iff det F > 0 and F^T F - clamp^2 I is positive
 * definite, which Sylvester's criterion decides from its three leading principal minors. From
 * c = F^T F and j = det F, which the energies need too. */
PIOLA_FN piola_mask piola_may_need_clamp_of(piola_m3 c, piola_real j) {
  piola_m3 a = c;
  const piola_real k = PIOLA_CLAMP_STRETCH * PIOLA_CLAMP_STRETCH;
  a.m[0] -= k;
  a.m[4] -= k;
  a.m[8] -= k;
  return !(j > PIOLA_R(0.0) && a.m[0] > PIOLA_R(0.0) &&
           a.m[0] * a.m[4] - a.m[1] * a.m[3] > PIOLA_R(0.0) && piola_m3_det(a) > PIOLA_R(0.0));
}

/* piola_may_need_clamp_of() of F. */
PIOLA_FN piola_mask piola_may_need_clamp(piola_m3 f) {
  return piola_may_need_clamp_of(piola_m3_mul_at(f, f), piola_m3_det(f));
}

/* Psi / E and P / E of the tet's model at F on the regular path (no SVD); -1 (P = 0) where the
 * model is undefined (Neo-Hookean with det F <= 0). c = F^T F, j = det F. */
PIOLA_FN piola_real piola_energy_regular(const piola_tet_material *mat, piola_m3 f, piola_m3 c,
                                         piola_real j, piola_m3 *p, piola_real *measure) {
  if (mat->model == PIOLA_TET_MODEL_STVK) {
    return piola_stvk_energy(mat, f, c, p, measure);
  }
  const piola_mask defined = j > PIOLA_R(0.0);
  *p = piola_m3_scale(piola_m3_identity(), PIOLA_R(0.0));
  *measure = PIOLA_R(0.0);
  piola_real psi = PIOLA_R(-1.0);
  if (PIOLA_ANY(defined)) {
    piola_m3 p_nh;
    piola_real measure_nh;
    const piola_real psi_nh = piola_neohookean_energy(mat, f, c, j, &p_nh, &measure_nh);
    *p = piola_m3_select(defined, p_nh, *p);
    *measure = defined ? measure_nh : *measure;
    psi = defined ? psi_nh : psi;
  }
  return psi;
}

/* Psi / E and P / E of the tet's model at F, with the inversion handling of the material, and
 * the model's volume measure (StVK: tr E, Neo-Hookean: log J; extended linearly below the
 * clamp). Returns a negative energy (-1) when the model is undefined at F (Neo-Hookean with
 * det F <= 0 and inversion handling off). *used_svd tells whether the SVD path ran. */
PIOLA_FN piola_real piola_energy_stress_measure(const piola_tet_material *mat, piola_m3 f,
                                                piola_m3 *p, piola_mask *used_svd,
                                                piola_real *measure) {
  const piola_m3 c = piola_m3_mul_at(f, f); /* F^T F */
  const piola_real j = piola_m3_det(f);
  const piola_mask svd =
      mat->inversion == PIOLA_TET_INVERSION_ALWAYS
          ? PIOLA_TRUE
          : mat->inversion == PIOLA_TET_INVERSION_ON && piola_may_need_clamp_of(c, j);
  *used_svd = svd;
  *p = piola_m3_scale(piola_m3_identity(), PIOLA_R(0.0));
  *measure = PIOLA_R(0.0);
  piola_real psi = PIOLA_R(0.0);
  if (!PIOLA_ALL(svd)) {
    psi = piola_energy_regular(mat, f, c, j, p, measure);
  }
  if (PIOLA_ANY(svd)) {
    /* Lanes on the regular path drop this result: they do not hold up the Jacobi sweeps. */
    piola_svd3 d = piola_svd3_compute_lanes(f, !svd);
    piola_v3 p_hat;
    piola_real measure_svd;
    const piola_real psi_svd =
        piola_principal_energy_clamped_measure(mat, d.s, &p_hat, &measure_svd);
    *p = piola_m3_select(svd, piola_svd3_compose(d.u, p_hat, d.v), *p);
    *measure = svd ? measure_svd : *measure;
    psi = svd ? psi_svd : psi;
  }
  return psi;
}

/* piola_energy_stress_measure() without the measure. */
PIOLA_FN piola_real piola_energy_and_stress(const piola_tet_material *mat, piola_m3 f, piola_m3 *p,
                                            piola_mask *used_svd) {
  piola_real measure;
  return piola_energy_stress_measure(mat, f, p, used_svd, &measure);
}

/* Deformation gradient F = Ds M, Ds = [x1 - x0, x2 - x0, x3 - x0], M = Dm^-1. */
PIOLA_FN piola_m3 piola_tet_deformation(piola_v3 x0, piola_v3 x1, piola_v3 x2, piola_v3 x3,
                                        piola_m3 dm_inv) {
  piola_m3 ds =
      piola_m3_from_columns(piola_v3_sub(x1, x0), piola_v3_sub(x2, x0), piola_v3_sub(x3, x0));
  return piola_m3_mul(ds, dm_inv);
}

/* Whether a tet is inverted or flat: det F <= 0 (or not a number). Bodies' tets are oriented
 * positively when added and M = Dm^-1 keeps det M > 0 (plasticity included), so det F = det Ds
 * det M has the sign of the corners' signed volume det Ds, which is what is tested: without M,
 * whose 9 floats the inverted-tet pass would otherwise load for every tet. The one test of the
 * stats' inverted_tets, the inverted-tet pass and the self-contact rule's marks. */
PIOLA_FN piola_mask piola_tet_inverted(piola_v3 x0, piola_v3 x1, piola_v3 x2, piola_v3 x3) {
  const piola_v3 e1 = piola_v3_sub(x1, x0), e2 = piola_v3_sub(x2, x0), e3 = piola_v3_sub(x3, x0);
  return !(piola_v3_dot(e1, piola_v3_cross(e2, e3)) > PIOLA_R(0.0));
}

/* The inverted-tet pass's ramp: the share of its projection the pass gives a tet falls from 1
 * at volume 0 to 0 at this fraction of the rest volume (piola_inverted_share). */
#define PIOLA_INVERTED_RAMP PIOLA_R(0.05)

/* The share of its projection that the inverted-tet pass gives a tet (see piola_world_step):
 * 1 where it is inverted or flat (signed volume 6 V = det Ds <= 0), falling linearly to 0 where
 * its volume reaches PIOLA_INVERTED_RAMP times the rest volume `rest_volume`, 0 above (and
 * where the volume is not a number). A yes/no test
 * at volume 0 let float and double, which can find a flat tet's volume on either side of zero,
 * project it in one world and not in the other, apart by the tet's whole correction; with the
 * ramp they project it by shares that differ by the rounding of its volume. */
PIOLA_FN piola_real piola_inverted_share(piola_v3 x0, piola_v3 x1, piola_v3 x2, piola_v3 x3,
                                         piola_real rest_volume) {
  const piola_v3 e1 = piola_v3_sub(x1, x0), e2 = piola_v3_sub(x2, x0), e3 = piola_v3_sub(x3, x0);
  const piola_real j = piola_v3_dot(e1, piola_v3_cross(e2, e3)) / (PIOLA_R(6.0) * rest_volume);
  const piola_real ramp = (PIOLA_INVERTED_RAMP - j) / PIOLA_INVERTED_RAMP;
  return fmin(fmax(ramp, PIOLA_R(0.0)), PIOLA_R(1.0));
}

/* A projection of the inverted-tet pass taken at `share` (piola_inverted_share) of its length:
 * the corrections, the motion held at supported corners and the multipliers' change scaled. */
PIOLA_FN void piola_inverted_scale(piola_real share, piola_v3 *dx, piola_real *held,
                                   piola_real *lambda, const piola_real *lambda_before) {
  PIOLA_UNROLL
  for (int k = 0; k < 4; ++k) {
    dx[k] = piola_v3_scale(dx[k], share);
    held[k] = held[k] * share;
  }
  lambda[0] = lambda_before[0] + share * (lambda[0] - lambda_before[0]);
  lambda[1] = lambda_before[1] + share * (lambda[1] - lambda_before[1]);
}

/* Elastic energy U / E = V Psi / E of a tet at the given positions (m^3); 0 where the model
 * is undefined. */
PIOLA_FN piola_real piola_tet_energy(const piola_tet_material *mat, piola_m3 dm_inv,
                                     piola_real volume, piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                     piola_v3 x3) {
  piola_m3 p;
  piola_mask used_svd;
  piola_real psi =
      piola_energy_and_stress(mat, piola_tet_deformation(x0, x1, x2, x3, dm_inv), &p, &used_svd);
  return psi > PIOLA_R(0.0) ? volume * psi : PIOLA_R(0.0);
}

/* U / E of a tet at the given positions (m^3, as piola_tet_energy()) and its gradients g[0..3]
 * (m^2): [g1 g2 g3] = V P Dm^-T (dU/dDs with F = Ds Dm^-1), g0 = -(g1 + g2 + g3). Zero (and
 * g = 0) where the model is undefined. */
PIOLA_FN piola_real piola_tet_gradient(const piola_tet_material *mat, piola_m3 dm_inv,
                                       piola_real volume, piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                       piola_v3 x3, piola_v3 *g) {
  piola_m3 p;
  piola_mask used_svd;
  piola_real psi =
      piola_energy_and_stress(mat, piola_tet_deformation(x0, x1, x2, x3, dm_inv), &p, &used_svd);
  const piola_m3 gm = piola_m3_mul_bt(p, dm_inv); /* P Dm^-T */
  piola_mask defined = psi == psi;
  PIOLA_UNROLL
  for (int k = 0; k < 3; ++k) {
    g[k + 1] = piola_v3_select(defined, piola_v3_scale(piola_m3_column(gm, k), volume),
                               piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0)));
  }
  g[0] = piola_v3_scale(piola_v3_add(piola_v3_add(g[1], g[2]), g[3]), PIOLA_R(-1.0));
  return psi > PIOLA_R(0.0) ? volume * psi : PIOLA_R(0.0);
}

/* Corners of a tet that rest on a collider. A vertex that a collider pushed out in the last
 * COLLIDE stage of this substep is supported: normal[k] is that collider's outward unit normal
 * (zero for a free corner). The projection does not move a supported corner into its collider:
 * where its correction would point inwards, the normal part of its gradient is taken out of its
 * mass (the filtered mass of a constrained particle, Baraff, Witkin 1998, "Large Steps in Cloth
 * Simulation", Sec. 5.3, here one-sided), so the projection moves the tet's other corners
 * instead, and held[k] accumulates the motion withheld (m, along -normal[k]). The collider takes
 * that motion back as penetration in its next stage (piola_unsupported_position, piola_collide.h):
 * its push is the same, and so is the friction that the push pays for, but the tet keeps its
 * shape. Without this a resting body's weight, in an unconverged solve, pushed its sole into the
 * ground in every iteration and the collider put each vertex back on the surface on its own, so
 * a tet with its four corners on the ground stayed flat (det F = 0). Motion along the surface is
 * untouched, so momentum along it is kept. */
typedef struct piola_tet_support {
  piola_v3 normal[4];
  piola_real held[4];
} piola_tet_support;

/* Four free corners. */
PIOLA_FN piola_tet_support piola_tet_support_none(void) {
  piola_tet_support s;
  PIOLA_UNROLL
  for (int k = 0; k < 4; ++k) {
    s.normal[k] = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
    s.held[k] = PIOLA_R(0.0);
  }
  return s;
}

/* One projection of a tet's energy constraint (see the module comment): the position
 * corrections dx[0..3] of the vertices at x0..x3, which the caller adds (returned as
 * corrections, not new positions, so that a float caller can add them to a small displacement
 * and keep their precision). *lambda accumulates the multiplier (for PBD, the step -U^/S, kept
 * as a record that the projection did work). alpha_tilde = compliance / h^2 (ignored for PBD).
 * gamma = damping / h, motion[0..3] = x_k - x_k^n, the corners' motion since the substep's start
 * (the material damping; both ignored for PBD, and motion may be 0 where gamma is 0).
 * support: the corners resting on colliders, whose held motion it adds to (0 where all four are
 * free). Returns PIOLA_TET_WORKED | PIOLA_TET_USED_SVD flags; dx is zero unless WORKED. */
PIOLA_FN piola_flags piola_tet_correction(const piola_tet_material *mat, piola_m3 dm_inv,
                                          piola_real volume, piola_real alpha_tilde,
                                          piola_real gamma, piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                          piola_v3 x3, const piola_v3 *motion, piola_real w0,
                                          piola_real w1, piola_real w2, piola_real w3,
                                          piola_tet_support *support, int sign_by_measure,
                                          piola_real *lambda, piola_v3 *dx) {
  piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  dx[0] = dx[1] = dx[2] = dx[3] = zero;
  piola_m3 f = piola_tet_deformation(x0, x1, x2, x3, dm_inv);
  piola_m3 p;
  piola_mask used_svd;
  piola_real measure;
  piola_real psi = piola_energy_stress_measure(mat, f, &p, &used_svd, &measure);
  piola_flags flags = used_svd ? PIOLA_TET_USED_SVD : 0;
  /* At rest (or undefined) there is nothing to do, unless a signed constraint still carries a
   * multiplier to relax. */
  piola_mask work = psi > PIOLA_ENERGY_EPSILON ||
                    (sign_by_measure && psi > PIOLA_R(0.0) && *lambda != PIOLA_R(0.0));
  if (!PIOLA_ANY(work)) {
    return flags;
  }
  piola_real u = volume * psi;
  /* [g1 g2 g3] = V P M^T; g0 = -(g1 + g2 + g3). */
  piola_m3 h = piola_m3_scale(piola_m3_mul_bt(p, dm_inv), volume);
  piola_v3 g1 = piola_m3_column(h, 0), g2 = piola_m3_column(h, 1), g3 = piola_m3_column(h, 2);
  piola_v3 g0 = piola_v3_scale(piola_v3_add(piola_v3_add(g1, g2), g3), PIOLA_R(-1.0));
  piola_real s = w0 * piola_v3_dot(g0, g0) + w1 * piola_v3_dot(g1, g1) + w2 * piola_v3_dot(g2, g2) +
                 w3 * piola_v3_dot(g3, g3);
  piola_real w_max = fmax(fmax(w0, w1), fmax(w2, w3));
  int xpbd = mat->solver == PIOLA_TET_SOLVER_XPBD;
  piola_real c2 = PIOLA_R(2.0) * u;
  piola_real c = sign_by_measure && measure < PIOLA_R(0.0) ? -sqrt(c2) : sqrt(c2);
  piola_real num = -(c + alpha_tilde * (*lambda));
  /* The damping's share of the numerator, gamma G (see the module comment); exactly 0 without
   * damping, which leaves every expression below as without it. */
  piola_real rate = PIOLA_R(0.0);
  const piola_real damped = xpbd ? gamma : PIOLA_R(0.0);
  if (motion && PIOLA_ANY(damped > PIOLA_R(0.0))) {
    rate = damped * (piola_v3_dot(g0, motion[0]) + piola_v3_dot(g1, motion[1]) +
                     piola_v3_dot(g2, motion[2]) + piola_v3_dot(g3, motion[3]));
  }
  /* Supported corners (see piola_tet_support): the step has the sign of `direction` (the
   * denominator is positive), so corner k would move into its collider where direction
   * (g_k . n_k) < 0; that normal part gn[k] of its gradient is then taken out of its mass. */
  const piola_v3 g[4] = {g0, g1, g2, g3};
  const piola_real wk[4] = {w0, w1, w2, w3};
  piola_real gn[4] = {PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0)};
  if (support) {
    const piola_real direction = xpbd ? num * c - rate : -u;
    PIOLA_UNROLL
    for (int k = 0; k < 4; ++k) {
      const piola_real d = piola_v3_dot(g[k], support->normal[k]);
      gn[k] = direction * d < PIOLA_R(0.0) ? d : PIOLA_R(0.0);
      s -= wk[k] * gn[k] * gn[k];
    }
  }
  piola_real denominator = xpbd ? (PIOLA_R(1.0) + damped) * s + alpha_tilde * c2 : s;
  work = work && w_max > PIOLA_R(0.0) &&
         denominator > PIOLA_DENOMINATOR_EPSILON * w_max * u * u * piola_m3_frobenius2(dm_inv);
  if (!PIOLA_ANY(work)) {
    return flags;
  }
  piola_real step, dlambda;
  if (xpbd) {
    step = (num * c - rate) / denominator;
    dlambda = (num * c2 - rate * c) / denominator;
  } else {
    step = -u / denominator;
    dlambda = step;
  }
  PIOLA_UNROLL
  for (int k = 0; k < 4; ++k) {
    piola_v3 move = piola_v3_scale(g[k], wk[k] * step);
    if (support) {
      const piola_real withheld = wk[k] * step * gn[k];
      move = piola_v3_sub(move, piola_v3_scale(support->normal[k], withheld));
      support->held[k] = work ? support->held[k] - withheld : support->held[k];
    }
    dx[k] = piola_v3_select(work, move, zero);
  }
  *lambda = work ? *lambda + dlambda : *lambda;
  return flags | (work ? PIOLA_TET_WORKED : 0);
}

/* The material of constraint `part` of a tet's XPBD projection: with mat->split, part 0 is the
 * mu term of its energy and part 1 the lambda term (piola_tet_solve, piola_tet_damping_block and
 * the host's damping directions count them alike); without, the whole energy (part 0 only). */
PIOLA_FN piola_tet_material piola_tet_constraint_material(const piola_tet_material *mat, int part) {
  piola_tet_material m = *mat;
  if (mat->split) {
    m.mu = part == 0 ? mat->mu : PIOLA_R(0.0);
    m.lambda = part == 0 ? PIOLA_R(0.0) : mat->lambda;
  }
  return m;
}

/* The projection of a tet as the solver runs it: one constraint of the whole energy, or, for
 * XPBD with mat->split, two constraints, the mu and the lambda terms of the energy (each
 * C_k = sqrt(2 U_k / E), compliance 1 / E, so the potential is still U = U_mu + U_lambda),
 * projected one after the other (Gauss-Seidel within the tet). A single constraint moves the
 * vertices along one direction, grad U, scaled for the whole energy; when lambda >> mu (nearly
 * incompressible materials) that step overshoots the stiff volume mode by up to lambda / mu and
 * the iteration can diverge. Each split constraint follows its own mode. The lambda term is a
 * perfect square, (lambda/2) m^2 of the volume measure m (StVK: tr E, Neo-Hookean: log J), so
 * its constraint is signed, C = sign(m) sqrt(2 U_lambda / E) = sqrt(lambda V / E) m: smooth
 * where the volume passes its rest value, so the accumulated multiplier keeps its meaning there
 * (the cone |m| would flip its gradient, and with it the multiplier's push, on rounding).
 * lambda[0..1] are the multipliers of the two constraints (lambda[0] alone without the split). */
PIOLA_FN piola_flags piola_tet_solve(const piola_tet_material *mat, piola_m3 dm_inv,
                                     piola_real volume, piola_real alpha_tilde, piola_real gamma,
                                     piola_v3 x0, piola_v3 x1, piola_v3 x2, piola_v3 x3,
                                     const piola_v3 *motion, piola_real w0, piola_real w1,
                                     piola_real w2, piola_real w3, piola_tet_support *support,
                                     piola_real *lambda, piola_v3 *dx) {
  if (!mat->split || mat->solver != PIOLA_TET_SOLVER_XPBD) {
    return piola_tet_correction(mat, dm_inv, volume, alpha_tilde, gamma, x0, x1, x2, x3, motion, w0,
                                w1, w2, w3, support, 0, &lambda[0], dx);
  }
  piola_tet_material part = piola_tet_constraint_material(mat, 0);
  piola_flags flags = piola_tet_correction(&part, dm_inv, volume, alpha_tilde, gamma, x0, x1, x2,
                                           x3, motion, w0, w1, w2, w3, support, 0, &lambda[0], dx);
  piola_v3 dl[4];
  /* The second constraint sees the corners where the first left them, motion included. */
  piola_v3 moved[4];
  if (motion) {
    PIOLA_UNROLL
    for (int k = 0; k < 4; ++k) {
      moved[k] = piola_v3_add(motion[k], dx[k]);
    }
  }
  part = piola_tet_constraint_material(mat, 1);
  flags |= piola_tet_correction(&part, dm_inv, volume, alpha_tilde, gamma, piola_v3_add(x0, dx[0]),
                                piola_v3_add(x1, dx[1]), piola_v3_add(x2, dx[2]),
                                piola_v3_add(x3, dx[3]), motion ? moved : 0, w0, w1, w2, w3,
                                support, 1, &lambda[1], dl);
  PIOLA_UNROLL
  for (int k = 0; k < 4; ++k) {
    dx[k] = piola_v3_add(dx[k], dl[k]);
  }
  return flags;
}

/* piola_tet_correction() applied in place to x0..x3, undamped. */
PIOLA_FN piola_flags piola_tet_project(const piola_tet_material *mat, piola_m3 dm_inv,
                                       piola_real volume, piola_real alpha_tilde, piola_v3 *x0,
                                       piola_v3 *x1, piola_v3 *x2, piola_v3 *x3, piola_real w0,
                                       piola_real w1, piola_real w2, piola_real w3,
                                       piola_real *lambda) {
  piola_v3 dx[4];
  piola_flags flags = piola_tet_correction(mat, dm_inv, volume, alpha_tilde, PIOLA_R(0.0), *x0, *x1,
                                           *x2, *x3, 0, w0, w1, w2, w3, 0, 0, lambda, dx);
  *x0 = piola_v3_add(*x0, dx[0]);
  *x1 = piola_v3_add(*x1, dx[1]);
  *x2 = piola_v3_add(*x2, dx[2]);
  *x3 = piola_v3_add(*x3, dx[3]);
  return flags;
}

/* ---- Vertex block descent: one vertex's gradient and Hessian block --------------------- */
/* Chen, Liu, Yang, Yuksel 2024, "Vertex Block Descent": a vertex i takes a
 * Newton step on its block of the incremental potential G_i(x) = m_i/(2h^2)|x_i - y_i|^2 + sum of
 * the energies of its elements, H dx = -grad G, H = m_i/h^2 I + sum of the elements' 3x3 blocks
 * d2E/dx_i^2, each made positive semidefinite. For a tet U = V Psi(F) with F = sum_j x_j b_j^T
 * (b_j the rows of M = Dm^-1 for j = 1..3, b_0 = -(b_1 + b_2 + b_3)):
 *   grad_i U = V P b_i,   H_ii[:, k] = V dP(e_k b_i^T) b_i,   k = 0..2,
 * with dP the differential of the first Piola-Kirchhoff stress along dF (Sifakis, Barbic 2012,
 * "FEM Simulation of 3D Deformable Solids", Sec. 4.2):
 *   StVK: dP = dF S + F dS, dS = 2 mu dE + lambda tr(dE) I, dE = sym(F^T dF);
 *   Neo-Hookean: dP = mu dF + (mu - lambda log J) F^-T dF^T F^-T + lambda tr(F^-1 dF) F^-T,
 * which for dF = e_k b^T close into 3x3 forms (u = F b, w = F^-T b):
 *   StVK: H = V [(b^T S b) I + mu |b|^2 F F^T + (mu + lambda) u u^T],
 *   Neo-Hookean: H = V [mu |b|^2 I + (mu + lambda (1 - log J)) w w^T]
 * (a sixth of the arithmetic of three differentials; checked against differences).
 * Where the inversion handling evaluates the energy on clamped principal stretches (inverted,
 * flat or compressed below the clamp), the extended energy is only C1: its second derivative
 * jumps at the clamp, so it has no Hessian there to write down. dP is then the central
 * difference of the exact stress of the extended energy, (P(F + e dF) - P(F - e dF)) / (2 e),
 * the secant of the energy's own gradient: consistent with the energy the step descends, free
 * of the 1/(s_i^2 - s_j^2) terms of an eigen-system form at repeated stretches, and after the
 * projection below never indefinite. The block is symmetrized and projected to the positive
 * semidefinite cone (eigen-decomposition, negative eigenvalues set to zero). */

/* The row b_corner (1/m) of a tet's M = Dm^-1 (b_0 = -(b_1 + b_2 + b_3)): F = sum_j x_j b_j^T.
 * corner: 0 to 3 (per lane in packets). */
PIOLA_FN piola_v3 piola_tet_corner_row(piola_m3 m, piola_mask corner) {
  piola_v3 r1 = piola_v3_make(m.m[0], m.m[1], m.m[2]), r2 = piola_v3_make(m.m[3], m.m[4], m.m[5]),
           r3 = piola_v3_make(m.m[6], m.m[7], m.m[8]);
  const piola_v3 r0 = piola_v3_scale(piola_v3_add(piola_v3_add(r1, r2), r3), PIOLA_R(-1.0));
  return piola_v3_select(corner == 1, r1,
                         piola_v3_select(corner == 2, r2, piola_v3_select(corner == 3, r3, r0)));
}

/* The outer product a b^T. */
PIOLA_FN piola_m3 piola_m3_outer(piola_v3 a, piola_v3 b) {
  piola_m3 r;
  r.m[0] = a.x * b.x;
  r.m[1] = a.x * b.y;
  r.m[2] = a.x * b.z;
  r.m[3] = a.y * b.x;
  r.m[4] = a.y * b.y;
  r.m[5] = a.y * b.z;
  r.m[6] = a.z * b.x;
  r.m[7] = a.z * b.y;
  r.m[8] = a.z * b.z;
  return r;
}

/* The relative step of the inversion path's central differences (below): cbrt(FLT_EPSILON), the
 * step that balances a float device's rounding against the difference's truncation, in both
 * precisions, so that the CPU reference takes the secant the device takes. With cbrt of each
 * precision's own epsilon (6e-6 in double) the two secants differed by design, and squashed
 * Armadillos under VBD left the device 1.6e-4 of the scene's diagonal off the reference after two
 * steps (5.5e-6 with one step for both; bench/LOG.md, "One secant step for both precisions"). The
 * secant only shapes the block's Newton step; the gradient it descends is exact. */
#define PIOLA_VBD_SECANT_STEP PIOLA_R(4.9215e-3)

/* One tet's part of vertex `corner`'s block (see above), in units of E, before the projection:
 * writes the gradient grad_corner U / E (m^2) and the symmetric Hessian block
 * d2U/dx_corner^2 / E (m), and returns U / E (m^3). A tet whose energy is undefined at F
 * (Neo-Hookean inverted with inversion handling off) contributes nothing (returns 0, zero
 * gradient and block). In packets (piola_packet.cl) each lane takes its own tet and corner; the
 * closed forms run where a lane is regular, the secant where a lane takes the inversion path,
 * and each lane keeps its own (the model is the packet's). */
PIOLA_FN piola_real piola_tet_vertex_block_unprojected(const piola_tet_material *mat,
                                                       piola_m3 dm_inv, piola_real volume,
                                                       piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                                       piola_v3 x3, piola_mask corner,
                                                       piola_v3 *grad, piola_m3 *hess) {
  const piola_m3 f = piola_tet_deformation(x0, x1, x2, x3, dm_inv);
  const piola_v3 b = piola_tet_corner_row(dm_inv, corner);
  piola_m3 p;
  piola_mask used_svd;
  const piola_real psi = piola_energy_and_stress(mat, f, &p, &used_svd);
  const piola_mask defined = psi >= PIOLA_R(0.0);
  const piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  *grad = zero;
  *hess = piola_m3_scale(piola_m3_identity(), PIOLA_R(0.0));
  if (!PIOLA_ANY(defined)) {
    return PIOLA_R(0.0); /* undefined */
  }
  /* grad = V P b */
  const piola_v3 g = piola_v3_make(volume * (p.m[0] * b.x + p.m[1] * b.y + p.m[2] * b.z),
                                   volume * (p.m[3] * b.x + p.m[4] * b.y + p.m[5] * b.z),
                                   volume * (p.m[6] * b.x + p.m[7] * b.y + p.m[8] * b.z));
  const piola_real bb = piola_v3_dot(b, b);
  piola_m3 h = *hess;
  if (!PIOLA_ALL(used_svd) && mat->model == PIOLA_TET_MODEL_STVK) {
    /* dP b along dF = e_k b^T, with u = F b and f_k = F^T e_k: e_k (b^T S b) + F dS b, where
     * dS b = mu (|b|^2 f_k + u_k b) + lambda u_k b; so the block is, closed,
     *   H = V [(b^T S b) I + mu |b|^2 F F^T + (mu + lambda) u u^T]. */
    const piola_sym3 e = piola_green_strain(f);
    const piola_real tr = e.xx + e.yy + e.zz;
    const piola_m3 sm = piola_sym3_to_m3(e);
    const piola_v3 sb0 = piola_v3_make(sm.m[0] * b.x + sm.m[1] * b.y + sm.m[2] * b.z,
                                       sm.m[3] * b.x + sm.m[4] * b.y + sm.m[5] * b.z,
                                       sm.m[6] * b.x + sm.m[7] * b.y + sm.m[8] * b.z);
    const piola_real bsb = PIOLA_R(2.0) * mat->mu * piola_v3_dot(b, sb0) + mat->lambda * tr * bb;
    const piola_m3 fft = piola_m3_mul_bt(f, f);
    const piola_v3 u = piola_v3_make(f.m[0] * b.x + f.m[1] * b.y + f.m[2] * b.z,
                                     f.m[3] * b.x + f.m[4] * b.y + f.m[5] * b.z,
                                     f.m[6] * b.x + f.m[7] * b.y + f.m[8] * b.z);
    const piola_m3 uu = piola_m3_outer(u, u);
    PIOLA_UNROLL
    for (int i = 0; i < 9; ++i) {
      h.m[i] = volume * (mat->mu * bb * fft.m[i] + (mat->mu + mat->lambda) * uu.m[i]);
    }
    h.m[0] += volume * bsb;
    h.m[4] += volume * bsb;
    h.m[8] += volume * bsb;
  } else if (!PIOLA_ALL(used_svd)) {
    /* Neo-Hookean (det F > 0 here), with w = F^-T b: F^-T dF^T F^-T b = w_k w and
     * tr(F^-1 dF) = w_k, so the block is, closed,
     *   H = V [mu |b|^2 I + (mu + lambda (1 - log J)) w w^T]. */
    const piola_real j = piola_m3_det(f);
    const piola_m3 f_inv_t = piola_m3_scale(piola_m3_cofactor(f), PIOLA_R(1.0) / j);
    const piola_v3 wv = piola_v3_make(f_inv_t.m[0] * b.x + f_inv_t.m[1] * b.y + f_inv_t.m[2] * b.z,
                                      f_inv_t.m[3] * b.x + f_inv_t.m[4] * b.y + f_inv_t.m[5] * b.z,
                                      f_inv_t.m[6] * b.x + f_inv_t.m[7] * b.y + f_inv_t.m[8] * b.z);
    const piola_real c = mat->mu + mat->lambda * (PIOLA_R(1.0) - log(j));
    const piola_m3 ww = piola_m3_outer(wv, wv);
    PIOLA_UNROLL
    for (int i = 0; i < 9; ++i) {
      h.m[i] = volume * c * ww.m[i];
    }
    h.m[0] += volume * mat->mu * bb;
    h.m[4] += volume * mat->mu * bb;
    h.m[8] += volume * mat->mu * bb;
  }
  if (PIOLA_ANY(used_svd)) {
    /* The inversion path: the secant of the extended energy's stress along e_k b^T, with the
     * central difference's step |e dF| = PIOLA_VBD_SECANT_STEP max(1, |F|). */
    const piola_real scale = fmax(PIOLA_R(1.0), sqrt(piola_m3_frobenius2(f)));
    const piola_real step = PIOLA_VBD_SECANT_STEP * scale / sqrt(bb);
    piola_m3 hc, hs;
    PIOLA_UNROLL
    for (int k = 0; k < 3; ++k) {
      const piola_v3 ek =
          piola_v3_make(k == 0 ? PIOLA_R(1.0) : PIOLA_R(0.0), k == 1 ? PIOLA_R(1.0) : PIOLA_R(0.0),
                        k == 2 ? PIOLA_R(1.0) : PIOLA_R(0.0));
      const piola_m3 df = piola_m3_outer(ek, b);
      piola_m3 fp = f, fm = f, pp, pm;
      PIOLA_UNROLL
      for (int i = 0; i < 9; ++i) {
        fp.m[i] += step * df.m[i];
        fm.m[i] -= step * df.m[i];
      }
      piola_mask svd_p, svd_m;
      piola_energy_and_stress(mat, fp, &pp, &svd_p);
      piola_energy_and_stress(mat, fm, &pm, &svd_m);
      piola_m3 dp;
      PIOLA_UNROLL
      for (int i = 0; i < 9; ++i) {
        dp.m[i] = (pp.m[i] - pm.m[i]) / (PIOLA_R(2.0) * step);
      }
      /* column k: V dP b */
      hc.m[k] = volume * (dp.m[0] * b.x + dp.m[1] * b.y + dp.m[2] * b.z);
      hc.m[3 + k] = volume * (dp.m[3] * b.x + dp.m[4] * b.y + dp.m[5] * b.z);
      hc.m[6 + k] = volume * (dp.m[6] * b.x + dp.m[7] * b.y + dp.m[8] * b.z);
    }
    PIOLA_UNROLL
    for (int r = 0; r < 3; ++r) {
      PIOLA_UNROLL
      for (int c = 0; c < 3; ++c) {
        hs.m[3 * r + c] = PIOLA_R(0.5) * (hc.m[3 * r + c] + hc.m[3 * c + r]);
      }
    }
    h = piola_m3_select(used_svd, hs, h);
  }
  *grad = piola_v3_select(defined, g, zero);
  *hess = piola_m3_select(defined, h, *hess);
  return defined ? volume * psi : PIOLA_R(0.0);
}

/* piola_tet_vertex_block_unprojected() with the block projected to the positive semidefinite
 * cone: what the vertex's Newton step sums. */
PIOLA_FN piola_real piola_tet_vertex_block(const piola_tet_material *mat, piola_m3 dm_inv,
                                           piola_real volume, piola_v3 x0, piola_v3 x1, piola_v3 x2,
                                           piola_v3 x3, piola_mask corner, piola_v3 *grad,
                                           piola_m3 *hess) {
  const piola_real u =
      piola_tet_vertex_block_unprojected(mat, dm_inv, volume, x0, x1, x2, x3, corner, grad, hess);
  *hess = piola_sym3_project_psd(*hess);
  return u;
}

/* A tet's material damping in vertex `corner`'s block (piola_damping_add_block, piola_shared.h):
 * its constraints are those of its XPBD projection, the mu and the lambda terms of its energy for a
 * split material, else the whole energy; gamma = damping / h (0 for the PBD form). Adds to *grad
 * (N) and *hess (N/m). */
PIOLA_FN void piola_tet_damping_block(const piola_tet_material *mat, piola_m3 dm_inv,
                                      piola_real volume, piola_real gamma, piola_v3 x0, piola_v3 x1,
                                      piola_v3 x2, piola_v3 x3, const piola_v3 motion[4],
                                      piola_mask corner, piola_v3 *grad, piola_m3 *hess) {
  const piola_real k = PIOLA_R(1.0) / mat->compliance;
  for (int part = 0; part < (mat->split ? 2 : 1); ++part) {
    const piola_tet_material pm = piola_tet_constraint_material(mat, part);
    piola_v3 g[4];
    const piola_real u = piola_tet_gradient(&pm, dm_inv, volume, x0, x1, x2, x3, g);
    const piola_real factor =
        piola_constraint_damping_factor(k, gamma, u, PIOLA_ENERGY_EPSILON * volume);
    piola_damping_add_block(factor, g, motion, 4, corner, grad, hess);
  }
}

#ifndef PIOLA_LANES /* the step of one vertex per work-item (piola_vbd.cl, vbd.c) */
/* The trust region of a vertex's step: |dx| at most this fraction of the vertex's smallest
 * height over the opposite face of one of its tets (or edge of one of its triangles), 1 / |b|.
 * The projected blocks can underestimate the curvature badly where elements are inverted or
 * compressed (their negative eigenvalues set to zero) and the inertia term is weak (long
 * substeps, quasi-static solves): on the Armadillo squashed to 60% with dt = 1 s the plain
 * steps threw vertices through their neighbours and raised the elastic energy 9 times in the
 * first sweeps. A clamp of the length, continuous in the step, rather than a line search: a
 * search decides on differences of energies, which a float device rounds at the level of the
 * small strains near rest (float positions), so it refused steps on noise there and stopped
 * short of the reference; the clamp leaves float and double on the same side everywhere. */
#define PIOLA_VBD_MAX_STEP PIOLA_R(0.25)

/* dx shortened to at most `reach` (m). */
PIOLA_FN piola_v3 piola_vbd_limit_step(piola_v3 dx, piola_real reach) {
  const piola_real len = piola_v3_length(dx);
  return len > reach ? piola_v3_scale(dx, reach / len) : dx;
}

/* The Newton step of a vertex block: dx = -H^-1 g for the symmetric H (from the inertia m/h^2 I
 * plus positive semidefinite blocks, so positive definite unless degenerate). Returns 0 (dx
 * zero) where H is singular to rounding: det H <= 1e-6 epsilon (tr H / 3)^3, or not a number. */
PIOLA_FN int piola_vbd_newton_step(piola_m3 h, piola_v3 g, piola_v3 *dx) {
  const piola_m3 cof = piola_m3_cofactor(h); /* symmetric: the adjugate */
  const piola_real det = h.m[0] * cof.m[0] + h.m[1] * cof.m[1] + h.m[2] * cof.m[2];
  const piola_real t = (h.m[0] + h.m[4] + h.m[8]) / PIOLA_R(3.0);
  *dx = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  if (!(det > PIOLA_R(1e-6) * PIOLA_REAL_EPSILON * t * t * t) || !(t > PIOLA_R(0.0))) {
    return 0;
  }
  const piola_real inv = PIOLA_R(-1.0) / det;
  *dx = piola_v3_make(inv * (cof.m[0] * g.x + cof.m[1] * g.y + cof.m[2] * g.z),
                      inv * (cof.m[3] * g.x + cof.m[4] * g.y + cof.m[5] * g.z),
                      inv * (cof.m[6] * g.x + cof.m[7] * g.y + cof.m[8] * g.z));
  return piola_v3_dot(*dx, *dx) < PIOLA_R(1e30); /* finite */
}

/* The Newton step dx (piola_vbd_newton_step) of a supported vertex (piola_tet_support: a
 * collider with outward unit normal n pushed it out in the last COLLIDE stage): where the step
 * would move it into the collider (n.dx < 0), it becomes the minimizer of the block's quadratic
 * model on the plane n.dx = 0, dx - (n.dx / n.H^-1 n) H^-1 n, so that the vertex stays on the
 * surface and moves along it as the block wants (projecting the free step onto the surface
 * afterwards would move it along the surface by the wrong amount wherever H couples the normal
 * and tangential directions, and a frictionless ground then drove bodies sideways). Returns
 * the motion withheld along -n (m, >= 0), which the collider takes back as penetration (as
 * piola_tet_support's held motion), so that its push and its friction are as without the
 * support. n = 0 (no support normal) changes nothing. */
PIOLA_FN piola_real piola_vbd_supported_step(piola_m3 h, piola_v3 n, piola_v3 *dx) {
  const piola_real into = piola_v3_dot(n, *dx);
  if (!(into < PIOLA_R(0.0))) {
    return PIOLA_R(0.0);
  }
  piola_v3 hn; /* H^-1 n = -(the Newton step of gradient n) */
  if (!piola_vbd_newton_step(h, n, &hn)) {
    return PIOLA_R(0.0);
  }
  const piola_real nhn = -piola_v3_dot(n, hn); /* n.H^-1 n > 0 */
  if (!(nhn > PIOLA_R(0.0))) {
    return PIOLA_R(0.0);
  }
  *dx = piola_v3_add(*dx, piola_v3_scale(hn, into / nhn));
  return -into;
}

/* The rigid motion of a free body that minimizes the incremental potential of its block descent
 * step (vbd.c, "The rigid modes of a free body"). Of G(x) = sum m/(2h^2) |x - y|^2 + E(x), E does
 * not change under a rigid motion of the whole body, so along the motions
 * x -> c + t + R (x - c) (c the centre of mass of x) G changes as its inertia term does, which is
 * least at t = c_y - c the translation of the centres of mass (exactly) and, to first order in
 * the rotation, at R = exp(w) with w = I^-1 sum m (x - c) x (y - x), I = sum m (|x - c|^2 1 -
 * (x - c)(x - c)^T) the body's inertia tensor: the least-squares rotation of the gaps y - x, as in
 * shape matching's linearization (Mueller, Heidelberger, Teschner, Gross 2005, "Meshless
 * Deformations Based on Shape Matching", Sec. 3.3), here a Gauss-Newton step of Kabsch's problem.
 * The sums are taken of the gaps y - x, not of y, so that the motion keeps the precision of the
 * small gaps (a float device rounds a position to about 1e-8 m). From the sums over the body's
 * vertices about a point o near it: mass = sum m (kg), mx = sum m (x - o), mg = sum m (y - x) (kg
 * m), mxx = sum m (x - o)(x - o)^T (kg m^2), lg = sum m (x - o) x (y - x) (kg m^2); returns w
 * (rad; zero where the inertia tensor is singular to rounding: a body on a line), the centre *c
 * about o and *t (m). */
PIOLA_FN piola_v3 piola_vbd_rigid_fit(piola_real mass, piola_v3 mx, piola_v3 mg, piola_m3 mxx,
                                      piola_v3 lg, piola_v3 *c, piola_v3 *t) {
  *c = piola_v3_scale(mx, PIOLA_R(1.0) / mass);
  *t = piola_v3_scale(mg, PIOLA_R(1.0) / mass);
  /* about the centre: sum m a a^T = mxx - mass c c^T, sum m a x g = lg - c x mg */
  const piola_real cv[3] = {c->x, c->y, c->z};
  piola_m3 s = mxx;
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) {
      s.m[3 * r + k] -= mass * cv[r] * cv[k];
    }
  }
  const piola_v3 l = piola_v3_sub(lg, piola_v3_cross(*c, mg));
  const piola_real trace = s.m[0] + s.m[4] + s.m[8];
  piola_m3 inertia = piola_m3_scale(s, PIOLA_R(-1.0));
  inertia.m[0] += trace;
  inertia.m[4] += trace;
  inertia.m[8] += trace;
  piola_v3 w;
  /* the Newton step of gradient -l on the symmetric inertia: w = I^-1 l */
  if (!piola_vbd_newton_step(inertia, piola_v3_scale(l, PIOLA_R(-1.0)), &w)) {
    w = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  }
  return w;
}

/* The displacement piola_vbd_rigid_fit's motion gives a vertex at x (about o):
 * t + (exp(w) - 1)(x - c), the rotation by Rodrigues' formula, (exp(w) - 1) a = sin|w|/|w| w x a
 * + (1 - cos|w|)/|w|^2 w x (w x a), with the series of both factors for small angles. */
PIOLA_FN piola_v3 piola_vbd_rigid_displacement(piola_v3 w, piola_v3 c, piola_v3 t, piola_v3 x) {
  const piola_v3 a = piola_v3_sub(x, c);
  const piola_real q = piola_v3_dot(w, w), angle = sqrt(q);
  const piola_real sinc =
      angle < PIOLA_R(1e-3) ? PIOLA_R(1.0) - q / PIOLA_R(6.0) : sin(angle) / angle;
  const piola_real cosc =
      angle < PIOLA_R(1e-3) ? PIOLA_R(0.5) - q / PIOLA_R(24.0) : (PIOLA_R(1.0) - cos(angle)) / q;
  const piola_v3 wa = piola_v3_cross(w, a);
  return piola_v3_add(
      t, piola_v3_add(piola_v3_scale(wa, sinc), piola_v3_scale(piola_v3_cross(w, wa), cosc)));
}
#endif /* one lane */

/* ---- Plasticity (paper Sec. 4.2) ------------------------------------------------------ */
#ifndef PIOLA_LANES /* one tet at a time (a stage of its own, not packed) */

/* Plastic flow of one tet, once per substep. The total Green strain is split additively,
 * eps = eps_e + eps_p; where the deviatoric part of eps_e exceeds `yield` (von Mises, Frobenius
 * norm) the excess flows into the plastic strain: eps_p += flow (1 - yield / |dev|) dev with
 * flow = min(1, h creep), a return towards the yield surface (flow = 1 returns onto it) that is
 * continuous where |dev| crosses the yield, so no tet switches between flowing and not on
 * rounding; the norm of eps_p is capped at `cap`. The elastic part enters the energy as F_e = F
 * F_p^-1 with the symmetric plastic stretch F_p = (I + 2 eps_p)^(1/2), so that (F_p^T F_p - I)/2 =
 * eps_p: the solver then needs only the effective M = Dm^-1 F_p^-1 in place of Dm^-1, and inversion
 * handling keeps working on F_e. Returns 1 and writes *m_eff when eps_p changed. */
PIOLA_FN int piola_plastic_update(piola_m3 f_total, piola_sym3 *eps_p, piola_real yield,
                                  piola_real flow, piola_real cap, piola_m3 dm_inv_rest,
                                  piola_m3 *m_eff) {
  piola_sym3 e = piola_green_strain(f_total);
  piola_sym3 el;
  el.xx = e.xx - eps_p->xx;
  el.yy = e.yy - eps_p->yy;
  el.zz = e.zz - eps_p->zz;
  el.xy = e.xy - eps_p->xy;
  el.xz = e.xz - eps_p->xz;
  el.yz = e.yz - eps_p->yz;
  piola_real third_tr = (el.xx + el.yy + el.zz) / PIOLA_R(3.0);
  el.xx -= third_tr;
  el.yy -= third_tr;
  el.zz -= third_tr;
  piola_real dev_norm2 = piola_sym3_frobenius2(el);
  if (!(dev_norm2 > yield * yield) || !(flow > PIOLA_R(0.0))) {
    return 0;
  }
  piola_sym3 ep = *eps_p;
  piola_real a = flow * (PIOLA_R(1.0) - yield / sqrt(dev_norm2));
  ep.xx += a * el.xx;
  ep.yy += a * el.yy;
  ep.zz += a * el.zz;
  ep.xy += a * el.xy;
  ep.xz += a * el.xz;
  ep.yz += a * el.yz;
  piola_real n2 = piola_sym3_frobenius2(ep);
  if (n2 > cap * cap) {
    piola_real r = cap / sqrt(n2);
    ep.xx *= r;
    ep.yy *= r;
    ep.zz *= r;
    ep.xy *= r;
    ep.xz *= r;
    ep.yz *= r;
  }
  *eps_p = ep;
  /* F_p^-1 = Q diag(1 / sqrt(l)) Q^T for I + 2 eps_p = Q diag(l) Q^T; l >= 1 - 2 cap > 0. */
  piola_m3 c = piola_m3_scale(piola_sym3_to_m3(ep), PIOLA_R(2.0));
  c.m[0] += PIOLA_R(1.0);
  c.m[4] += PIOLA_R(1.0);
  c.m[8] += PIOLA_R(1.0);
  piola_m3 q;
  piola_v3 l;
  piola_sym_eigen(c, &q, &l);
  piola_v3 inv_sqrt =
      piola_v3_make(PIOLA_R(1.0) / sqrt(l.x), PIOLA_R(1.0) / sqrt(l.y), PIOLA_R(1.0) / sqrt(l.z));
  piola_m3 fp_inv = piola_svd3_compose(q, inv_sqrt, q);
  *m_eff = piola_m3_mul(dm_inv_rest, fp_inv);
  return 1;
}
#endif

#endif /* PIOLA_TET_H */
