/* Piola render meshes: detail vertices carried by a body's deformed collision surface, shared
 * by C and OpenCL C.
 *
 * The paper's Sec. 5 (Bender et al. 2014) draws a detailed mesh over the simulated one by
 * embedding, after Kobbelt, Vorsatz, Seidel 1999 ("Multiresolution Hierarchies on Unstructured
 * Triangle Meshes": a detail point as a base point on the coarse surface plus a displacement
 * along the surface's interpolated normal). Each detail vertex p is given once, in the body's
 * configuration at attach time, a surface triangle (a, b, c), barycentric coordinates
 * (u, v, w) and an offset d such that
 *     p = u a + v b + w c + d n,   n = normalize(u n_a + v n_b + w n_c),
 * where n_a, n_b, n_c are the surface's vertex normals (the area-weighted mean of the normals
 * of the triangles around each vertex). Every frame the same formula over the deformed
 * surface gives the deformed detail vertex and its normal n.
 */
#ifndef PIOLA_RENDER_H
#define PIOLA_RENDER_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_shared.h"
#endif

/* Twice the area times the unit normal of triangle (a, b, c), counter-clockwise: summed over
 * the triangles around a vertex it weights each by its area. */
PIOLA_FN piola_v3 piola_render_area_normal(piola_v3 a, piola_v3 b, piola_v3 c) {
  return piola_v3_cross(piola_v3_sub(b, a), piola_v3_sub(c, a));
}

/* The unit vector along n, or n itself when it is zero (a vertex whose triangles cancel). */
PIOLA_FN piola_v3 piola_render_unit(piola_v3 n) {
  piola_real len = piola_v3_length(n);
  return len > PIOLA_R(0.0) ? piola_v3_scale(n, PIOLA_R(1.0) / len) : n;
}

/* The embedded point of coordinates (bary, d) over triangle (a, b, c) with vertex normals
 * (na, nb, nc): writes its position and its unit normal. */
PIOLA_FN void piola_render_point(piola_v3 bary, piola_real d, piola_v3 a, piola_v3 b, piola_v3 c,
                                 piola_v3 na, piola_v3 nb, piola_v3 nc, piola_v3 *position,
                                 piola_v3 *normal) {
  piola_v3 n = piola_render_unit(
      piola_v3_add(piola_v3_add(piola_v3_scale(na, bary.x), piola_v3_scale(nb, bary.y)),
                   piola_v3_scale(nc, bary.z)));
  piola_v3 base = piola_v3_add(piola_v3_add(piola_v3_scale(a, bary.x), piola_v3_scale(b, bary.y)),
                               piola_v3_scale(c, bary.z));
  *position = piola_v3_add(base, piola_v3_scale(n, d));
  *normal = n;
}

#endif /* PIOLA_RENDER_H */
