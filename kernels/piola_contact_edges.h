/* Piola edge-edge contact: surface edge against surface edge, shared by C and OpenCL C. Builds
 * on piola_contact.h (the grid, the gaps and the projection of a vertex-triangle contact); the
 * host's side is src/host/contact_edges.c, the device's kernels/piola_contact_edges.cl.
 */
#ifndef PIOLA_CONTACT_EDGES_H
#define PIOLA_CONTACT_EDGES_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_contact.h"
#endif

/* Edge-edge contacts (Bridson, Fedkiw, Anderson 2002, Sec. 6-7: besides a vertex near a
 * triangle, an edge near an edge; both tested over the motion of the step). Vertex-triangle
 * contacts alone let an edge of one body cut through an edge of another where no vertex comes
 * near (two thin bars crossed: every vertex of one lies beside the other). The surface edges are
 * the unique edges of the collision surface's triangles (the host lists them, each with the
 * lowest-numbered triangle that has it, its owner). Detection, once per substep:
 *  - broad phase: an edge's box (piola_edge_box: the four positions of its ends at the start
 *    and predicted, grown by 1.125 thicknesses) lies within its owner triangle's box, and so
 *    within that triangle's cluster's; an edge tests the edges of the triangles whose boxes
 *    overlap its own. The clusters it may meet are
 *    listed per cluster of the grid, by a walk of the grid's cells with the cluster's box
 *    (piola_edge_clusters_may_meet), so an edge reads its cluster's list instead of the cells'
 *    buckets, which hold mostly its own neighbourhood; where a list overflows, the edge looks
 *    into the grid exactly as a vertex does (piola_grid_vertex, piola_pair_cell). An edge met
 *    there is taken only through its owner triangle and only by the edge of lower index, so
 *    every pair is tested once;
 *  - narrow phase: a pair is a contact when both edges are convex or flat at the start or
 *    the prediction (piola_edge_convex: a concave edge is never where two surfaces are
 *    nearest), they share no vertex, neither is nearly parallel to the other
 *    (piola_edge_cross: the pair is then a vertex-triangle matter) and, at the predicted
 *    positions, the closest points of the two segments (Ericson 2004, "Real-Time Collision
 *    Detection", Sec. 5.1.9) are within two thicknesses above, or anywhere under, each other
 *    along the lines' common normal, oriented by the side the edges are on at the start of the
 *    substep (piola_edge_side), and within a thickness of it sideways, the closest points
 *    inside both edges, not at an end (there the vertex-triangle contacts act). An edge that
 *    would pass through the other within the substep is caught, since the side is the one at
 *    the start. Each edge keeps the PIOLA_CONTACTS_PER_EDGE nearest by the predicted gap,
 *    negative for a pair that crossed (ties by index).
 * The contact is projected like a vertex-triangle one: C = gap - thickness >= 0 along the
 * oriented normal n (the gap from the height and the lateral distance, piola_contact_gap), the
 * four ends moved in proportion to their inverse masses and weights (1 - s, s) and (1 - t, t)
 * (Bridson et al. 2002, Sec. 7.1; Mueller et al. 2007 for the position-based form), then the same
 * friction on the relative tangential motion of the two closest points. The corrections enter the
 * same per-vertex sums as the vertex-triangle ones, so a vertex in contacts of both kinds has one
 * mass split (piola_contact_split). */

/* Edges one surface edge keeps per substep. */
#define PIOLA_CONTACTS_PER_EDGE 8
/* Squared sine of the angle under which two edges count as parallel (sin 0.01). */
#define PIOLA_EDGE_PARALLEL2 PIOLA_R(1.0e-4)
/* A new edge pair's closest points must lie this fraction of each edge's length or more from its
 * ends (piola_edge_candidate). */
#define PIOLA_EDGE_INTERIOR PIOLA_R(0.01)

/* The box swept by an edge whose ends move from xa, xb to pa, pb, grown by 1.125 thicknesses:
 * two such boxes overlap wherever the narrow phase accepts the pair above each other (closest
 * points under two thicknesses apart along the normal and a thickness sideways: at most
 * sqrt(1 + 2^2) = 2.24 thicknesses along any axis). Within the box of a triangle that has the
 * edge (piola_triangle_box, 1.25 thicknesses). */
PIOLA_FN piola_box piola_edge_box(piola_v3 xa, piola_v3 xb, piola_v3 pa, piola_v3 pb,
                                  piola_real thickness) {
  const piola_real margin = PIOLA_R(1.125) * thickness;
  const piola_v3 m = piola_v3_make(margin, margin, margin);
  piola_box r = piola_box_of(xa, pa, margin);
  r = piola_box_grow(r, piola_v3_sub(piola_v3_min(xb, pb), m));
  r = piola_box_grow(r, piola_v3_add(piola_v3_max(xb, pb), m));
  return r;
}

/* Sine of the bend under which a surface edge counts as flat and is tested anyway
 * (piola_edge_convex). */
#define PIOLA_EDGE_FLAT_SINE PIOLA_R(1.0e-3)

/* Whether the surface edge (lo, hi) of a closed, outward-wound surface is convex or flat where its
 * triangles (lo, hi, left) and (hi, lo, right) meet (right on or under the plane of left's
 * triangle; within PIOLA_EDGE_FLAT_SINE of it above counts as flat). Only such edges take part in
 * edge-edge contacts. The closest points of two surfaces, both inside an edge of each, lie on edges
 * that are both convex: near a concave edge the outside of the body is a wedge under 180 degrees,
 * and a point in it is nearest to a face of the wedge, not to its edge, so a segment nearest to the
 * body near a concave edge is nearest at an end of its own (a vertex-triangle contact) or at
 * another edge of those faces. A segment that reaches a concave edge has already passed a face
 * beside it, which the vertex-triangle contacts and the convex edges' contacts prevent. So the
 * pairs with a concave edge hold nothing the others do not, and the narrow phase skips them (on the
 * Armadillo's surface at rest, 22% of the edges). A flat edge is kept: bent a little outwards it is
 * a ridge that a sharp edge of another body can press into. */
PIOLA_FN int piola_edge_convex(piola_v3 lo, piola_v3 hi, piola_v3 left, piola_v3 right) {
  const piola_v3 n = piola_v3_cross(piola_v3_sub(hi, lo), piola_v3_sub(left, lo));
  const piola_v3 r = piola_v3_sub(right, lo);
  return piola_v3_dot(n, r) <= PIOLA_EDGE_FLAT_SINE * piola_v3_length(n) * piola_v3_length(r);
}

/* Whether a surface edge takes part in the substep's edge-edge pairs: convex or flat
 * (piola_edge_convex) at the start (ends xlo, xhi, wings xl, xr) or at the prediction (plo, phi,
 * pl, pr). */
PIOLA_FN int piola_edge_convex_in_substep(piola_v3 xlo, piola_v3 xhi, piola_v3 xl, piola_v3 xr,
                                          piola_v3 plo, piola_v3 phi, piola_v3 pl, piola_v3 pr) {
  return piola_edge_convex(xlo, xhi, xl, xr) || piola_edge_convex(plo, phi, pl, pr);
}

PIOLA_FN piola_real piola_clamp01(piola_real v) {
  return fmin(fmax(v, PIOLA_R(0.0)), PIOLA_R(1.0));
}

/* The parameters s, t in [0, 1] of the closest points a0 + s (a1 - a0) and b0 + t (b1 - b0) of
 * two segments (Ericson 2004, Sec. 5.1.9: the closest points of the lines, s clamped to the
 * segment, t recomputed from it and clamped, s recomputed from a clamped t). The caller has
 * rejected degenerate and parallel pairs (piola_edge_cross), so both lengths and the
 * determinant are positive; guarded anyway. */
PIOLA_FN void piola_segments_closest(piola_v3 a0, piola_v3 a1, piola_v3 b0, piola_v3 b1,
                                     piola_real *s, piola_real *t) {
  const piola_v3 d1 = piola_v3_sub(a1, a0), d2 = piola_v3_sub(b1, b0), r = piola_v3_sub(a0, b0);
  const piola_real a = piola_v3_dot(d1, d1), e = piola_v3_dot(d2, d2), f = piola_v3_dot(d2, r);
  const piola_real c = piola_v3_dot(d1, r), b = piola_v3_dot(d1, d2);
  const piola_real denom = a * e - b * b;
  *s = PIOLA_R(0.0);
  *t = PIOLA_R(0.0);
  if (!(a > PIOLA_R(0.0)) || !(e > PIOLA_R(0.0))) {
    return;
  }
  piola_real sv = denom > PIOLA_R(0.0) ? piola_clamp01((b * f - c * e) / denom) : PIOLA_R(0.0);
  piola_real tv = (b * sv + f) / e;
  if (tv < PIOLA_R(0.0)) {
    tv = PIOLA_R(0.0);
    sv = piola_clamp01(-c / a);
  } else if (tv > PIOLA_R(1.0)) {
    tv = PIOLA_R(1.0);
    sv = piola_clamp01((b - c) / a);
  }
  *s = sv;
  *t = tv;
}

PIOLA_FN piola_v3 piola_lerp3(piola_v3 a, piola_v3 b, piola_real s) {
  return piola_v3_add(a, piola_v3_scale(piola_v3_sub(b, a), s));
}

/* The cross product of the edges' directions into *c; 0 when an edge is degenerate or the two
 * are nearly parallel (|sin| under 0.01), where the lines have no common normal to speak of. */
PIOLA_FN int piola_edge_cross(piola_v3 a0, piola_v3 a1, piola_v3 b0, piola_v3 b1, piola_v3 *c) {
  const piola_v3 ea = piola_v3_sub(a1, a0), eb = piola_v3_sub(b1, b0);
  *c = piola_v3_cross(ea, eb);
  const piola_real la = piola_v3_dot(ea, ea), lb = piola_v3_dot(eb, eb);
  return piola_v3_dot(*c, *c) > PIOLA_EDGE_PARALLEL2 * la * lb && la > PIOLA_R(0.0) &&
         lb > PIOLA_R(0.0);
}

/* The side of edge b on which edge a lies at positions a0, a1, b0, b1 (the start of the
 * substep): 0 where the vector from b's closest point to a's has a non-negative component along
 * c = (a1 - a0) x (b1 - b0), else 1 (the sign of the pair's coplanarity measure, which changes
 * when one edge passes through the other). -1 for a parallel or degenerate pair. */
PIOLA_FN int piola_edge_side(piola_v3 a0, piola_v3 a1, piola_v3 b0, piola_v3 b1) {
  piola_v3 c;
  if (!piola_edge_cross(a0, a1, b0, b1, &c)) {
    return -1;
  }
  piola_real s, t;
  piola_segments_closest(a0, a1, b0, b1, &s, &t);
  const piola_v3 d = piola_v3_sub(piola_lerp3(a0, a1, s), piola_lerp3(b0, b1, t));
  return piola_v3_dot(c, d) >= PIOLA_R(0.0) ? 0 : 1;
}

/* The contact frame of an edge pair at positions a0, a1, b0, b1, given the oriented normal
 * `reference` of the start (piola_edge_reference): the unit normal n of the two lines turned
 * towards it, the height of a's closest point over b's along n, the lateral distance between
 * them (beside the normal: 0 where both closest points lie inside their segments) and the
 * parameters s, t of the closest points. Returns 0 for a parallel or degenerate pair. */
PIOLA_FN int piola_edge_frame(piola_v3 a0, piola_v3 a1, piola_v3 b0, piola_v3 b1,
                              piola_v3 reference, piola_v3 *n, piola_real *height,
                              piola_real *lateral, piola_real *s, piola_real *t) {
  piola_v3 c;
  if (!piola_edge_cross(a0, a1, b0, b1, &c)) {
    return 0;
  }
  const piola_real sign = piola_v3_dot(c, reference) >= PIOLA_R(0.0) ? PIOLA_R(1.0) : PIOLA_R(-1.0);
  *n = piola_v3_scale(c, sign / piola_v3_length(c));
  piola_segments_closest(a0, a1, b0, b1, s, t);
  const piola_v3 d = piola_v3_sub(piola_lerp3(a0, a1, *s), piola_lerp3(b0, b1, *t));
  *height = piola_v3_dot(*n, d);
  *lateral = piola_v3_length(piola_v3_sub(d, piola_v3_scale(*n, *height)));
  return 1;
}

/* The start's oriented normal of an edge pair met from `side` (piola_edge_side) into *r (not
 * normalised: only its direction is used); 0 for a parallel or degenerate pair. */
PIOLA_FN int piola_edge_reference(piola_v3 xa0, piola_v3 xa1, piola_v3 xb0, piola_v3 xb1, int side,
                                  piola_v3 *r) {
  piola_v3 c;
  if (!piola_edge_cross(xa0, xa1, xb0, xb1, &c)) {
    return 0;
  }
  *r = side ? piola_v3_scale(c, PIOLA_R(-1.0)) : c;
  return 1;
}

/* Whether edge a (ends moving from xa0, xa1 to pa0, pa1) meets edge b (xb0, xb1 to pb0, pb1)
 * within the substep, met from `side` (see the section's comment). Only pairs whose predicted
 * closest points lie inside both edges (PIOLA_EDGE_INTERIOR from the ends) are new contacts: near
 * an edge's end its vertex is near the other body's triangles there, where the vertex-triangle
 * contacts act (pairs at vertices, as of two boxes resting face on face with their vertices over
 * each other, would only repeat them). On success *key is the
 * predicted gap (piola_contact_gap: negative where one edge has passed through the other), by
 * which an edge ranks its contacts, so that the pairs that cross come first. The caller has
 * checked the filters, the shared vertices and the boxes. */
PIOLA_FN int piola_edge_candidate(piola_v3 xa0, piola_v3 xa1, piola_v3 xb0, piola_v3 xb1,
                                  piola_v3 pa0, piola_v3 pa1, piola_v3 pb0, piola_v3 pb1, int side,
                                  piola_real thickness, piola_real *key) {
  piola_v3 r, n;
  piola_real height, lateral, s, t;
  const piola_real lo = PIOLA_EDGE_INTERIOR, hi = PIOLA_R(1.0) - PIOLA_EDGE_INTERIOR;
  if (!piola_edge_reference(xa0, xa1, xb0, xb1, side, &r) ||
      !piola_edge_frame(pa0, pa1, pb0, pb1, r, &n, &height, &lateral, &s, &t) ||
      !(lateral <= thickness) || !(height < PIOLA_R(2.0) * thickness) || !(s >= lo && s <= hi) ||
      !(t >= lo && t <= hi)) {
    return 0;
  }
  *key = piola_contact_gap(height, lateral);
  return 1;
}

/* Whether two edges of one body are too near in the rest shape to touch (rest ends ra0, ra1, rb0,
 * rb1; reach: the largest reach of the four ends): an end of one within
 * piola_contact_self_bound() of an end of the other. A cheap early no, before the geometric
 * test. */
PIOLA_FN int piola_edge_self_near(piola_v3 ra0, piola_v3 ra1, piola_v3 rb0, piola_v3 rb1,
                                  piola_real reach, piola_real thickness) {
  const piola_real bound = piola_contact_self_bound(reach, thickness);
  const piola_real b2 = bound * bound;
  const piola_v3 d00 = piola_v3_sub(ra0, rb0), d01 = piola_v3_sub(ra0, rb1),
                 d10 = piola_v3_sub(ra1, rb0), d11 = piola_v3_sub(ra1, rb1);
  return piola_v3_dot(d00, d00) <= b2 || piola_v3_dot(d01, d01) <= b2 ||
         piola_v3_dot(d10, d10) <= b2 || piola_v3_dot(d11, d11) <= b2;
}

/* Whether the cluster of `count` triangles from `first`, or (count 1) the triangle `first`, is
 * near an end of an edge of its own body in the rest shape by the ends' near windows (first0,
 * mask0 and first1, mask1 of each end; piola_contact_near): then the edge meets none of its
 * triangles' edges. The windows mark the triangles within the self-contact bound of a vertex, so
 * this skips the pairs of an edge's own neighbourhood, most of a body's pairs with itself, before
 * any other test; a skipped pair's rest segments lie within that bound plus a triangle's size
 * (about two tet edges). The windows are the host's, so both backends skip the same pairs. No
 * branches. */
PIOLA_FN int piola_edge_near_cluster(piola_int first, piola_int count, piola_int a_first0,
                                     piola_u64 a_mask0, piola_int a_first1, piola_u64 a_mask1,
                                     piola_int b_first0, piola_u64 b_mask0, piola_int b_first1,
                                     piola_u64 b_mask1) {
  return piola_contact_near_cluster(first, count, a_first0, a_mask0, a_first1, a_mask1) |
         piola_contact_near_cluster(first, count, b_first0, b_mask0, b_first1, b_mask1);
}

/* Clusters one cluster lists per substep for its edges to test (piola_edge_clusters_may_meet); a
 * cluster that meets more has its edges walk the grid's cells themselves. */
#define PIOLA_CLUSTER_PAIRS 32

/* Whether the edges of cluster b may meet the edges that cluster a's triangles own, before the
 * boxes are read: b owns an edge above a's lowest (b_edge_max > a_edge_min: each pair is tested
 * by its edge of lower index), the bodies collide (collide: their groups and masks, or for one
 * body its self-collision), and for one body b lies outside a's near window (near_first,
 * near_mask, bit k: cluster near_first + k), which the host marks where every pair of their
 * edges is skipped by the rules of one body in the rest shape (a shared vertex, the ends' near
 * windows, piola_edge_self_near). Each substep a cluster lists the clusters that pass and whose
 * boxes overlap its own (every edge box lies in its owner triangle's box, so in its cluster's),
 * and its edges test only those: an edge's contacts are those of the walk of the grid's cells,
 * without scanning its own neighbourhood's entries there. No branches. */
PIOLA_FN int piola_edge_clusters_may_meet(piola_int b, piola_int b_edge_max, piola_int a_edge_min,
                                          int same_body, int collide, piola_int near_first,
                                          piola_u64 near_mask) {
  return (b_edge_max > a_edge_min) & collide &
         !(same_body & piola_contact_near(b, near_first, near_mask, near_first, 0));
}

/* Whether two edges of one body may touch (self-collision on, no shared vertex): the distance
 * between their rest segments exceeds piola_contact_self_bound() (the rule of a vertex and a
 * triangle of one body). Only evaluated after the geometric test. */
PIOLA_FN int piola_edge_self_allowed(piola_v3 ra0, piola_v3 ra1, piola_v3 rb0, piola_v3 rb1,
                                     piola_real reach, piola_real thickness) {
  piola_real s, t;
  piola_segments_closest(ra0, ra1, rb0, rb1, &s, &t);
  const piola_v3 d = piola_v3_sub(piola_lerp3(ra0, ra1, s), piola_lerp3(rb0, rb1, t));
  return piola_v3_length(d) > piola_contact_self_bound(reach, thickness);
}

/* Inserts (key, entry) into an edge's list of its nearest edges, as piola_contact_keep() with
 * PIOLA_CONTACTS_PER_EDGE entries. */
PIOLA_FN void piola_edge_contact_keep(piola_real *keys, piola_int *entries, piola_int *count,
                                      piola_real key, piola_int entry) {
  piola_contact_keep_nearest(keys, entries, count, PIOLA_CONTACTS_PER_EDGE, key, entry);
}

/* The part of the edge contact's projection that reads the positions (see
 * piola_contact_prepare): edge a (start xa0, xa1; now pa0, pa1) against edge b, met from side.
 * f->b holds (s, t, 0), the closest points' parameters. Where the constraint is violated
 * f->depth > 0; else all of *f is zero. */
PIOLA_FN void piola_edge_contact_prepare(piola_v3 xa0, piola_v3 xa1, piola_v3 xb0, piola_v3 xb1,
                                         piola_v3 pa0, piola_v3 pa1, piola_v3 pb0, piola_v3 pb1,
                                         int side, piola_real thickness, piola_real friction,
                                         piola_contact_frame_data *f) {
  const piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  f->n = f->b = f->tangent = zero;
  f->depth = f->removed = PIOLA_R(0.0);
  piola_v3 r, n;
  piola_real height, lateral, s, t;
  if (!piola_edge_reference(xa0, xa1, xb0, xb1, side, &r) ||
      !piola_edge_frame(pa0, pa1, pb0, pb1, r, &n, &height, &lateral, &s, &t) ||
      !(lateral <= thickness)) {
    return;
  }
  const piola_real c = piola_contact_gap(height, lateral) - thickness;
  if (!(c < PIOLA_R(0.0))) {
    return;
  }
  const piola_real depth = -c;
  /* Friction as piola_contact_prepare(): the relative motion of the two closest points over the
   * substep, after the push, loses its tangential part (static) or mu * depth of it. */
  const piola_v3 qa = piola_lerp3(pa0, pa1, s), qb = piola_lerp3(pb0, pb1, t);
  const piola_v3 qa0 = piola_lerp3(xa0, xa1, s), qb0 = piola_lerp3(xb0, xb1, t);
  piola_v3 rel = piola_v3_sub(piola_v3_sub(qa, qa0), piola_v3_sub(qb, qb0));
  rel = piola_v3_add(rel, piola_v3_scale(n, depth));
  const piola_v3 tangent = piola_v3_sub(rel, piola_v3_scale(n, piola_v3_dot(rel, n)));
  const piola_real lt = piola_v3_length(tangent);
  piola_real removed = PIOLA_R(1.0);
  if (!(lt < friction * depth)) {
    removed = lt > PIOLA_R(0.0) ? fmin(friction * depth / lt, PIOLA_R(1.0)) : PIOLA_R(0.0);
  }
  f->n = n;
  f->b = piola_v3_make(s, t, PIOLA_R(0.0));
  f->tangent = tangent;
  f->depth = depth;
  f->removed = removed;
}

/* The part of the edge contact's projection that takes the masses (see piola_contact_respond):
 * the corrections of a's ends, then b's (inverse masses wa0, wa1, wb0, wb1: the members' shares)
 * into dx[0..3] and their lengths into length[0..3]; zero where the constraint holds. The
 * gradient of C along n is (1 - s) n, s n for a's ends and -(1 - t) n, -t n for b's. */
PIOLA_FN void piola_edge_contact_respond(const piola_contact_frame_data *f, piola_real wa0,
                                         piola_real wa1, piola_real wb0, piola_real wb1,
                                         piola_v3 dx[4], piola_real length[4]) {
  const piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  for (int k = 0; k < 4; ++k) {
    dx[k] = zero;
    length[k] = PIOLA_R(0.0);
  }
  if (!(f->depth > PIOLA_R(0.0))) {
    return;
  }
  const piola_real s = f->b.x, t = f->b.y;
  const piola_real c0 = PIOLA_R(1.0) - s, c1 = s, c2 = PIOLA_R(1.0) - t, c3 = t;
  const piola_real sum_w = c0 * c0 * wa0 + c1 * c1 * wa1 + c2 * c2 * wb0 + c3 * c3 * wb1;
  if (!(sum_w > PIOLA_R(0.0))) {
    return;
  }
  const piola_v3 push = piola_v3_scale(f->n, f->depth / sum_w);
  const piola_v3 g = piola_v3_sub(push, piola_v3_scale(f->tangent, f->removed / sum_w));
  dx[0] = piola_v3_scale(g, c0 * wa0);
  dx[1] = piola_v3_scale(g, c1 * wa1);
  dx[2] = piola_v3_scale(g, -c2 * wb0);
  dx[3] = piola_v3_scale(g, -c3 * wb1);
  for (int k = 0; k < 4; ++k) {
    length[k] = piola_v3_length(dx[k]);
  }
}

#endif /* PIOLA_CONTACT_EDGES_H */
