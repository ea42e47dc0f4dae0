/* Piola attachments: a vertex pulled to a target point by an XPBD distance constraint, shared
 * by C and OpenCL C.
 *
 * C(p) = |p - target| >= 0 with compliance alpha (m/N; 0 = hard), projected as in Macklin,
 * Mueller, Chentanez 2016 ("XPBD", Eq. 18): dlambda = (-C - alpha~ lambda) / (w |grad C|^2 +
 * alpha~) with alpha~ = alpha / h^2 and |grad C| = 1, then p += w dlambda grad C. The multiplier
 * accumulates over the iterations of a substep, so a soft attachment stretches by about
 * force x compliance whatever the iteration count. This is the mouse-drag of an engine: the
 * application moves the target every frame.
 */
#ifndef PIOLA_ATTACH_H
#define PIOLA_ATTACH_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_shared.h"
#endif

/* The correction of p (inverse mass w) towards target; updates *lambda. Zero for a pinned
 * vertex (w = 0) or one already on the target. */
PIOLA_FN piola_v3 piola_attachment_correction(piola_v3 p, piola_real w, piola_v3 target,
                                              piola_real alpha_tilde, piola_real *lambda) {
  const piola_v3 r = piola_v3_sub(p, target);
  const piola_real c = piola_v3_length(r);
  if (!(w > PIOLA_R(0.0)) || !(c > PIOLA_R(0.0))) {
    return piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  }
  const piola_real dlambda = (-c - alpha_tilde * *lambda) / (w + alpha_tilde);
  *lambda += dlambda;
  return piola_v3_scale(r, w * dlambda / c);
}

/* Vertex block descent (Chen, Liu, Yang, Yuksel 2024): a soft attachment of compliance alpha > 0
 * is the energy (1 / (2 alpha)) |p - target|^2 in its vertex's block: adds its gradient
 * (p - target) / alpha (N) to *g and its Hessian 1 / alpha (N/m, times I) to *k. A hard one
 * (alpha = 0) is no energy: the vertex is held at its target (returns 1, nothing added). */
PIOLA_FN int piola_attachment_block(piola_v3 p, piola_v3 target, piola_real compliance, piola_v3 *g,
                                    piola_real *k) {
  if (!(compliance > PIOLA_R(0.0))) {
    return 1;
  }
  const piola_real stiffness = PIOLA_R(1.0) / compliance;
  *g = piola_v3_add(*g, piola_v3_scale(piola_v3_sub(p, target), stiffness));
  *k += stiffness;
  return 0;
}

#endif /* PIOLA_ATTACH_H */
