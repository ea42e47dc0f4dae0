/* Piola body-body contact: surface vertex against surface triangle, shared by C and OpenCL C.
 *
 * Detection follows the swept, thickness-based proximity tests of Bridson, Fedkiw, Anderson
 * 2002 ("Robust Treatment of Collisions, Contact and Friction for Cloth Animation", Sec. 6:
 * a vertex and a triangle interact when they come within a thickness of each other during the
 * step), done once per substep over the motion from the start positions x to the predicted
 * positions p:
 *  - broad phase: boxes around each triangle's and each vertex's motion in the substep. The
 *    triangles of a body, in the solver's spatial order, are grouped into clusters of up to
 *    PIOLA_CLUSTER_TRIANGLES consecutive ones whose rest boxes together are no larger than the
 *    body's largest triangle (the host forms them); a cluster's box is the union of its
 *    triangles' boxes. Every cluster is entered into the hashed cells of a uniform grid that its
 *    box, grown by half the largest vertex box (at most by one thickness), overlaps (Teschner
 *    et al. 2003, "Optimized Spatial Hashing for Collision Detection of Deformable Objects":
 *    cell hashing with large primes), at most once per bucket, and a vertex looks into the
 *    cells of its box shrunk by as much (piola_grid_margin): a slow vertex into one cell, the
 *    one of its box's centre, where it tests the clusters' boxes and then the boxes of the
 *    triangles of those that overlap its own. A pair met in several cells is taken in one, the
 *    cell of the low corner of the intersection of the vertex's and the cluster's boxes. Cells
 *    are large enough that a cluster enters and a vertex looks into at most 3 x 3 x 3 cells;
 *  - narrow phase: a pair is a contact when the boxes overlap, the vertex starts on the outer
 *    side of the triangle (or within a thickness under it, or the pair was a contact in the
 *    previous substep: contacts persist while they last), its predicted position is within
 *    two thicknesses above the triangle's plane or anywhere under it and lies over the
 *    triangle or within a thickness of its border. A vertex that would pass through a
 *    triangle within the substep is caught, since the test uses its side at the start.
 *    Each vertex keeps the PIOLA_CONTACTS_PER_VERTEX nearest triangles (ties by index).
 * The contact is projected in every iteration as an inequality constraint
 * C = gap - thickness >= 0 along the triangle's outward normal n, where the gap is the height
 * over the triangle, or beside it the distance to its border (piola_contact_gap: continuous, so
 * that a contact at the edge of its reach does not push; under the plane beside the triangle,
 * height + lateral). A vertex under the plane and beside the triangle is held only where no
 * triangle at that edge (the neighbour across it) or corner (those around it: each surface
 * vertex's ring of triangles, built by the host) bends inwards with the vertex over its plane:
 * then the vertex is outside the body, past a convex edge, and the push along this triangle's
 * normal would act across the edge (piola_contact_neighbour_releases); under the neighbours too
 * it went through this triangle near its border and must be held. The vertex and the three
 * corners move in proportion to their inverse masses and barycentric weights (Mueller et al. 2007,
 * "Position Based Dynamics", Sec. 4.4 for the triangle-point constraint), then position-based
 * Coulomb friction on the relative tangential motion of the substep (Macklin, Mueller,
 * Chentanez, Kim 2014, "Unified Particle Physics for Real-Time Applications", Sec. 6.1). All
 * contacts are projected from the same positions (Jacobi), with the masses split among the
 * contacts that share a vertex so that momentum is conserved (piola_contact_split).
 */
#ifndef PIOLA_CONTACT_H
#define PIOLA_CONTACT_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_shared.h"
#endif

/* Triangles one surface vertex keeps per substep (PIOLA_MAX_VERTEX_CONTACTS in the API). */
#define PIOLA_CONTACTS_PER_VERTEX 8
/* Grid cells one cluster of triangles is entered into, at most (3 per axis, see
 * piola_cell_size). */
#define PIOLA_CELLS_PER_CLUSTER 27
/* Triangles in one cluster of the grid, at most (see the module comment). */
#define PIOLA_CLUSTER_TRIANGLES 8

/* An axis-aligned box. */
typedef struct piola_box {
  piola_v3 lo, hi;
} piola_box;

PIOLA_FN piola_v3 piola_v3_min(piola_v3 a, piola_v3 b) {
  return piola_v3_make(fmin(a.x, b.x), fmin(a.y, b.y), fmin(a.z, b.z));
}

PIOLA_FN piola_v3 piola_v3_max(piola_v3 a, piola_v3 b) {
  return piola_v3_make(fmax(a.x, b.x), fmax(a.y, b.y), fmax(a.z, b.z));
}

/* The box of the points a and b, grown by `margin` on every side. */
PIOLA_FN piola_box piola_box_of(piola_v3 a, piola_v3 b, piola_real margin) {
  piola_box r;
  piola_v3 m = piola_v3_make(margin, margin, margin);
  r.lo = piola_v3_sub(piola_v3_min(a, b), m);
  r.hi = piola_v3_add(piola_v3_max(a, b), m);
  return r;
}

PIOLA_FN piola_box piola_box_grow(piola_box r, piola_v3 p) {
  r.lo = piola_v3_min(r.lo, p);
  r.hi = piola_v3_max(r.hi, p);
  return r;
}

/* The box swept by a vertex from x to p, grown by a thickness. */
PIOLA_FN piola_box piola_vertex_box(piola_v3 x, piola_v3 p, piola_real thickness) {
  return piola_box_of(x, p, thickness);
}

/* The box swept by a triangle's corners (start xa, xb, xc; predicted pa, pb, pc), grown by
 * 1.25 thicknesses. With the vertex box's one thickness that makes 2.25: a predicted vertex the
 * narrow phase accepts above the triangle lies within a thickness of it sideways and under two
 * thicknesses above its plane, at most sqrt(1 + 2^2) = 2.24 thicknesses from it along any axis;
 * one that passed under the plane started less than a thickness under it, at most sqrt(2) from it
 * along any axis, so every accepted pair overlaps. */
PIOLA_FN piola_box piola_triangle_box(piola_v3 xa, piola_v3 xb, piola_v3 xc, piola_v3 pa,
                                      piola_v3 pb, piola_v3 pc, piola_real thickness) {
  const piola_real margin = PIOLA_R(1.25) * thickness;
  piola_box r = piola_box_of(xa, pa, margin);
  piola_v3 m = piola_v3_make(margin, margin, margin);
  r = piola_box_grow(r, piola_v3_sub(piola_v3_min(xb, pb), m));
  r = piola_box_grow(r, piola_v3_add(piola_v3_max(xb, pb), m));
  r = piola_box_grow(r, piola_v3_sub(piola_v3_min(xc, pc), m));
  r = piola_box_grow(r, piola_v3_add(piola_v3_max(xc, pc), m));
  return r;
}

/* 1 when the boxes overlap, else 0; every comparison made (no branches), so that a scan
 * can count the overlaps without mispredicting (see piola_contact_narrow). */
PIOLA_FN int piola_boxes_overlap(piola_box a, piola_box b) {
  return (a.lo.x <= b.hi.x) & (b.lo.x <= a.hi.x) & (a.lo.y <= b.hi.y) & (b.lo.y <= a.hi.y) &
         (a.lo.z <= b.hi.z) & (b.lo.z <= a.hi.z);
}

/* The smallest box holding boxes a and b. */
PIOLA_FN piola_box piola_box_union(piola_box a, piola_box b) {
  piola_box r;
  r.lo = piola_v3_min(a.lo, b.lo);
  r.hi = piola_v3_max(a.hi, b.hi);
  return r;
}

/* The largest side of a box. */
PIOLA_FN piola_real piola_box_extent(piola_box r) {
  piola_v3 e = piola_v3_sub(r.hi, r.lo);
  return fmax(e.x, fmax(e.y, e.z));
}

PIOLA_FN piola_v3 piola_box_center(piola_box r) {
  return piola_v3_scale(piola_v3_add(r.lo, r.hi), PIOLA_R(0.5));
}

/* ---- The grid ------------------------------------------------------------------------ */

/* Cell coordinate of a coordinate, clamped so that it fits an int. */
PIOLA_FN piola_int piola_cell_coordinate(piola_real c, piola_real inv_cell) {
  piola_real f = floor(c * inv_cell);
  return (piola_int)fmin(fmax(f, PIOLA_R(-1.0e9)), PIOLA_R(1.0e9));
}

/* Bucket of cell (i, j, k) in a table of mask + 1 buckets (a power of two): Teschner et al.
 * 2003's primes for i and j, XOR-ed, plus k, so that cells next to each other along z take
 * neighbouring buckets (a triangle's cells and a vertex's share cache lines); in unsigned
 * arithmetic so that the wrap-around is defined. */
PIOLA_FN piola_int piola_cell_hash(piola_int i, piola_int j, piola_int k, piola_int mask) {
  unsigned int h =
      (((unsigned int)i * 73856093u) ^ ((unsigned int)j * 19349663u)) + (unsigned int)k;
  return (piola_int)(h & (unsigned int)mask);
}

PIOLA_FN piola_int piola_imin(piola_int a, piola_int b) {
  return a < b ? a : b;
}

/* The range of cells [lo, hi] (inclusive, per axis) a box overlaps, at most `most` cells per
 * axis (the cell size makes that true; the cap only guards against rounding). */
PIOLA_FN void piola_cell_range(piola_box r, piola_real inv_cell, piola_int most, piola_int lo[3],
                               piola_int hi[3]) {
  lo[0] = piola_cell_coordinate(r.lo.x, inv_cell);
  lo[1] = piola_cell_coordinate(r.lo.y, inv_cell);
  lo[2] = piola_cell_coordinate(r.lo.z, inv_cell);
  hi[0] = piola_imin(piola_cell_coordinate(r.hi.x, inv_cell), lo[0] + most - 1);
  hi[1] = piola_imin(piola_cell_coordinate(r.hi.y, inv_cell), lo[1] + most - 1);
  hi[2] = piola_imin(piola_cell_coordinate(r.hi.z, inv_cell), lo[2] + most - 1);
}

/* The grid's margin R: half the largest vertex box, but at most one thickness. A triangle
 * enters the grid with its box grown by 1.01 R (the 1% against rounding) and a vertex looks
 * into the cells of its box shrunk by R on every side: a vertex box that overlaps a triangle's
 * box has its centre within R of the grown box plus the rest of its half-extent, so the shrunk
 * box meets the grown one. A vertex box no larger than 2 R (a vertex moving less than about a
 * thickness in the substep) shrinks to its centre: one cell. A faster vertex looks into more
 * cells instead of every triangle growing by its motion, which in a pile crushed by a large
 * step made every cell hold the triangles of a wide neighbourhood. */
PIOLA_FN piola_real piola_grid_margin(piola_real vertex_extent, piola_real thickness) {
  return fmin(PIOLA_R(0.5) * vertex_extent, PIOLA_R(1.0) * thickness);
}

/* The cell size: at least half the largest grown cluster box and the largest shrunk vertex box
 * (with a margin against rounding), so that a cluster enters and a vertex looks into at most 3
 * cells per axis. */
PIOLA_FN piola_real piola_cell_size(piola_real cluster_extent, piola_real vertex_extent,
                                    piola_real thickness) {
  const piola_real margin = piola_grid_margin(vertex_extent, thickness);
  return PIOLA_R(1.001) * fmax(PIOLA_R(0.5) * cluster_extent + PIOLA_R(1.01) * margin,
                               PIOLA_R(0.5) * vertex_extent - margin);
}

/* A cluster's box grown by the grid's margin (see piola_grid_margin). */
PIOLA_FN piola_box piola_grid_cluster(piola_box r, piola_real margin) {
  const piola_real g = PIOLA_R(1.01) * margin;
  const piola_v3 m = piola_v3_make(g, g, g);
  r.lo = piola_v3_sub(r.lo, m);
  r.hi = piola_v3_add(r.hi, m);
  return r;
}

/* A vertex's box shrunk by the grid's margin on every side, to its centre where it is no
 * larger than twice the margin (see piola_grid_margin). */
PIOLA_FN piola_box piola_grid_vertex(piola_box r, piola_real margin) {
  const piola_v3 c = piola_box_center(r);
  const piola_v3 m = piola_v3_make(margin, margin, margin);
  r.lo = piola_v3_min(piola_v3_add(r.lo, m), c);
  r.hi = piola_v3_max(piola_v3_sub(r.hi, m), c);
  return r;
}

/* Whether cell (i, j, k) is the one where the shrunk vertex box q and the grown cluster box t
 * (piola_grid_vertex, piola_grid_cluster) are paired: the cell of the low corner of their
 * intersection, which the vertex looks into and the cluster entered, so that a pair met in
 * several cells is taken once. A vertex whose shrunk box lies in one cell needs no test: the
 * low corner lies in its box, so in that cell. */
PIOLA_FN int piola_pair_cell(piola_box q, piola_box t, piola_real inv_cell, piola_int i,
                             piola_int j, piola_int k) {
  return piola_cell_coordinate(fmax(q.lo.x, t.lo.x), inv_cell) == i &&
         piola_cell_coordinate(fmax(q.lo.y, t.lo.y), inv_cell) == j &&
         piola_cell_coordinate(fmax(q.lo.z, t.lo.z), inv_cell) == k;
}

/* The buckets a cluster (box r) is entered into: those of the cells its grown box overlaps (at
 * most 3 per axis), each bucket once, since two cells of one cluster may share a bucket and a
 * vertex looking into it must meet the cluster there once: buckets[0 .. return value), in the
 * order of the cells. The cells of one column (i, j) take the consecutive buckets base, base + 1,
 * ... (piola_cell_hash), distinct while the table has more buckets than the column has cells; a
 * column whose run of buckets meets no earlier column's is entered whole, and only one that does
 * is compared bucket by bucket (the answer is the same, with far fewer comparisons). */
PIOLA_FN int piola_cluster_buckets(piola_box r, piola_real margin, piola_real inv_cell,
                                   piola_int bucket_mask, piola_int *buckets) {
  piola_int lo[3], hi[3];
  piola_cell_range(piola_grid_cluster(r, margin), inv_cell, 3, lo, hi);
  const piola_int depth = hi[2] - lo[2] + 1;
  const unsigned int mask = (unsigned int)bucket_mask, run = (unsigned int)depth;
  piola_int bases[9]; /* the columns' first buckets: at most 3 x 3 columns */
  int n = 0, columns = 0;
  for (piola_int i = lo[0]; i <= hi[0]; ++i) {
    for (piola_int j = lo[1]; j <= hi[1]; ++j) {
      const piola_int base = piola_cell_hash(i, j, lo[2], bucket_mask);
      int meets = run > mask; /* a column that may wrap onto itself */
      for (int c = 0; c < columns; ++c) {
        meets |= (((unsigned int)base - (unsigned int)bases[c]) & mask) < run;
        meets |= (((unsigned int)bases[c] - (unsigned int)base) & mask) < run;
      }
      bases[columns++] = base;
      for (piola_int k = 0; k < depth; ++k) {
        const piola_int bucket = (base + k) & bucket_mask;
        int seen = 0;
        for (int e = 0; meets && e < n; ++e) {
          seen |= buckets[e] == bucket;
        }
        if (!seen) {
          buckets[n++] = bucket;
        }
      }
    }
  }
  return n;
}

/* ---- Closest points ------------------------------------------------------------------ */

/* Barycentric coordinates (u, v, w) of the point of triangle (a, b, c) closest to p, by the
 * Voronoi regions of its vertices, edges and face (Ericson 2004, "Real-Time Collision
 * Detection", Sec. 5.1.5). The closest point is u a + v b + w c. */
PIOLA_FN piola_v3 piola_closest_on_triangle(piola_v3 p, piola_v3 a, piola_v3 b, piola_v3 c) {
  const piola_real zero = PIOLA_R(0.0), one = PIOLA_R(1.0);
  piola_v3 ab = piola_v3_sub(b, a), ac = piola_v3_sub(c, a), ap = piola_v3_sub(p, a);
  piola_real d1 = piola_v3_dot(ab, ap), d2 = piola_v3_dot(ac, ap);
  if (d1 <= zero && d2 <= zero) {
    return piola_v3_make(one, zero, zero);
  }
  piola_v3 bp = piola_v3_sub(p, b);
  piola_real d3 = piola_v3_dot(ab, bp), d4 = piola_v3_dot(ac, bp);
  if (d3 >= zero && d4 <= d3) {
    return piola_v3_make(zero, one, zero);
  }
  piola_real vc = d1 * d4 - d3 * d2;
  if (vc <= zero && d1 >= zero && d3 <= zero) {
    piola_real t = d1 / (d1 - d3);
    return piola_v3_make(one - t, t, zero);
  }
  piola_v3 cp = piola_v3_sub(p, c);
  piola_real d5 = piola_v3_dot(ab, cp), d6 = piola_v3_dot(ac, cp);
  if (d6 >= zero && d5 <= d6) {
    return piola_v3_make(zero, zero, one);
  }
  piola_real vb = d5 * d2 - d1 * d6;
  if (vb <= zero && d2 >= zero && d6 <= zero) {
    piola_real t = d2 / (d2 - d6);
    return piola_v3_make(one - t, zero, t);
  }
  piola_real va = d3 * d6 - d5 * d4;
  if (va <= zero && (d4 - d3) >= zero && (d5 - d6) >= zero) {
    piola_real t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    return piola_v3_make(zero, one - t, t);
  }
  piola_real denom = one / (va + vb + vc);
  piola_real v = vb * denom, w = vc * denom;
  return piola_v3_make(one - v - w, v, w);
}

PIOLA_FN piola_v3 piola_barycentric_point(piola_v3 bary, piola_v3 a, piola_v3 b, piola_v3 c) {
  return piola_v3_add(piola_v3_add(piola_v3_scale(a, bary.x), piola_v3_scale(b, bary.y)),
                      piola_v3_scale(c, bary.z));
}

/* Distance from p to triangle (a, b, c). */
PIOLA_FN piola_real piola_point_triangle_distance(piola_v3 p, piola_v3 a, piola_v3 b, piola_v3 c) {
  piola_v3 q = piola_barycentric_point(piola_closest_on_triangle(p, a, b, c), a, b, c);
  return piola_v3_length(piola_v3_sub(p, q));
}

/* The contact frame of p over triangle (a, b, c): the unit outward normal n (the triangle is
 * counter-clockwise seen from outside), the height of p above the triangle's plane, the
 * barycentric coordinates of the point q of the triangle closest to p's foot on the plane (and
 * so to p), and the lateral distance from the foot to q (0 when p is over the triangle). Returns 0
 * when the triangle is degenerate. */
PIOLA_FN int piola_contact_frame(piola_v3 p, piola_v3 a, piola_v3 b, piola_v3 c, piola_v3 *n,
                                 piola_real *height, piola_v3 *bary, piola_real *lateral) {
  piola_v3 cr = piola_v3_cross(piola_v3_sub(b, a), piola_v3_sub(c, a));
  piola_real area2 = piola_v3_length(cr);
  piola_v3 ab = piola_v3_sub(b, a), ac = piola_v3_sub(c, a);
  piola_real scale2 = fmax(piola_v3_dot(ab, ab), piola_v3_dot(ac, ac));
  if (!(area2 > PIOLA_R(1e-12) * scale2)) {
    return 0;
  }
  *n = piola_v3_scale(cr, PIOLA_R(1.0) / area2);
  *height = piola_v3_dot(*n, piola_v3_sub(p, a));
  piola_v3 foot = piola_v3_sub(p, piola_v3_scale(*n, *height));
  *bary = piola_closest_on_triangle(foot, a, b, c);
  piola_v3 q = piola_barycentric_point(*bary, a, b, c);
  *lateral = piola_v3_length(piola_v3_sub(foot, q));
  return 1;
}

/* The gap between p and the triangle that the contact keeps at a thickness, from p's height over
 * the triangle's plane and its lateral distance beside the triangle (piola_contact_frame()). On
 * the outer side it is the distance to the triangle, sqrt(height^2 + lateral^2): the height over
 * the triangle, the distance to the nearest point of its border beside it, so that a vertex a
 * thickness away from an edge (resting a thickness above the top edge of a box's side, say) is
 * at the gap's rest value whichever triangle at the edge it is measured from. Under the plane
 * it is height + lateral: the (negative) height under the triangle, meeting the outer side's
 * value where the height is zero. Continuous in p, so that a contact found or lost at the edge of
 * its reach acts no more than it does just inside it. */
PIOLA_FN piola_real piola_contact_gap(piola_real height, piola_real lateral) {
  return height >= PIOLA_R(0.0) ? sqrt(height * height + lateral * lateral) : height + lateral;
}

/* ---- Narrow phase -------------------------------------------------------------------- */

/* Whether a surface vertex of body A may touch a surface triangle of body B. Bodies collide
 * when each one's group has a bit in the other's mask. */
PIOLA_FN int piola_contact_bodies_collide(unsigned int group_a, unsigned int mask_a,
                                          unsigned int group_b, unsigned int mask_b) {
  return (group_a & mask_b) != 0u && (group_b & mask_a) != 0u;
}

/* The rest distance below which a surface vertex and a triangle of its own body never touch:
 * two thicknesses (closer pairs, in creases and thin parts, would push the rest shape apart)
 * or 1.01 times the vertex's reach, its longest rest tet edge. A vertex within its reach of a
 * triangle may share a tet with the triangle or be joined by a tet edge to a corner: such a
 * pair meets when a tet between them inverts, and a contact would then hold the tet inverted
 * (the elastic solve, with inversion handling, is what restores it; Irving et al. 2004). A
 * corner joined by the longest edge lies exactly at the reach: the 1% keeps float and double
 * from deciding that pair differently (they did, and the funnel's cross-check parted there). */
PIOLA_FN piola_real piola_contact_self_bound(piola_real reach, piola_real thickness) {
  return fmax(PIOLA_R(2.0) * thickness, PIOLA_R(1.01) * reach);
}

/* Whether a surface vertex may touch a triangle of its own body (with self-collision on and
 * the vertex not a corner of the triangle): their rest distance exceeds
 * piola_contact_self_bound(). Only evaluated after the geometric test, which rejects most pairs
 * more cheaply. */
PIOLA_FN int piola_contact_self_allowed(piola_v3 rest, piola_v3 rest_a, piola_v3 rest_b,
                                        piola_v3 rest_c, piola_real reach, piola_real thickness) {
  return piola_point_triangle_distance(rest, rest_a, rest_b, rest_c) >
         piola_contact_self_bound(reach, thickness);
}

/* Whether a body's pair with itself may be a contact, given which of its four vertices (the
 * vertex, the triangle's corners) are corners of a tet turned over at the start of the step
 * (piola_tet_inverted at the first substep's start positions): none may be. A load that crushes a
 * thin part of a body through itself leaves a vertex of one side over a triangle of the other, and
 * the tets between them inverted. A contact keeps a vertex on the side of the triangle it is on, so
 * the part's own contacts would hold the crossed sides, and the inverted tets, for good (an ear
 * crushed in the funnel's pile stays folded: bench/LOG.md). With its self pairs released while a
 * tet at them is inverted, the elastic solve (Irving et al. 2004) turns the tets back and the
 * sides pass back. A tet that a contact turns
 * over for a moment (a sliver pressed by another body) is the inverted-tet pass's work; this
 * concerns the tets still inverted when the next step starts. (Marked once per step: a marking
 * per substep cost a noticeable share of the funnel's step, bench/LOG.md.) */
PIOLA_FN int piola_contact_self_untangled(int turned_vertex, int turned_a, int turned_b,
                                          int turned_c) {
  return !(turned_vertex | turned_a | turned_b | turned_c);
}

/* A cheap early no for piola_contact_self_allowed(): a corner of the triangle no farther from
 * the vertex than the bound (in the rest shape) puts the triangle no farther either. Rejects
 * the pairs of a vertex's own neighbourhood, most of a body's pairs with itself, before the
 * geometric test. */
PIOLA_FN int piola_contact_self_near(piola_v3 rest, piola_v3 rest_a, piola_v3 rest_b,
                                     piola_v3 rest_c, piola_real reach, piola_real thickness) {
  const piola_real bound = piola_contact_self_bound(reach, thickness);
  const piola_real b2 = bound * bound;
  piola_v3 da = piola_v3_sub(rest_a, rest), db = piola_v3_sub(rest_b, rest),
           dc = piola_v3_sub(rest_c, rest);
  return piola_v3_dot(da, da) <= b2 || piola_v3_dot(db, db) <= b2 || piola_v3_dot(dc, dc) <= b2;
}

/* Triangles one near window of a surface vertex spans (see piola_contact_near): the bits of a
 * piola_u64 mask. */
#define PIOLA_NEAR_WINDOW 64

/* Whether triangle t is near a surface vertex by one of its two near windows: runs of
 * PIOLA_NEAR_WINDOW triangles of its own body, consecutive in the solver's order from first0
 * and first1, whose bits in mask0 and mask1 (bit k: triangle first + k) mark the triangles that
 * the host found too near the vertex in the rest shape to touch it (each pair fails
 * piola_contact_self_allowed() by a margin), so that the narrow phase skips them before any
 * other test. No branches (see piola_boxes_overlap). */
PIOLA_FN int piola_contact_near(piola_int t, piola_int first0, piola_u64 mask0, piola_int first1,
                                piola_u64 mask1) {
  const unsigned int o0 = (unsigned int)(t - first0), o1 = (unsigned int)(t - first1);
  const unsigned int window = PIOLA_NEAR_WINDOW, last = PIOLA_NEAR_WINDOW - 1;
  return ((o0 < window) & (int)((mask0 >> (o0 & last)) & 1u)) |
         ((o1 < window) & (int)((mask1 >> (o1 & last)) & 1u));
}

/* Whether the count triangles from first (a cluster, 1 to PIOLA_CLUSTER_TRIANGLES of them) are
 * all near the vertex by one of its windows (piola_contact_near): the cluster can be skipped
 * before its box is read. No branches. */
PIOLA_FN int piola_contact_near_cluster(piola_int first, piola_int count, piola_int first0,
                                        piola_u64 mask0, piola_int first1, piola_u64 mask1) {
  const piola_u64 bits = ((piola_u64)1 << count) - 1u;
  const unsigned int room = (unsigned int)(PIOLA_NEAR_WINDOW - count);
  const unsigned int o0 = (unsigned int)(first - first0), o1 = (unsigned int)(first - first1);
  const unsigned int last = PIOLA_NEAR_WINDOW - 1;
  return ((o0 <= room) & (((mask0 >> (o0 & last)) & bits) == bits)) |
         ((o1 <= room) & (((mask1 >> (o1 & last)) & bits) == bits));
}

/* Whether a vertex moving from x to p meets the triangle whose corners move from (xa, xb, xc)
 * to (pa, pb, pc) within the substep (see the module comment); on success *key is the
 * distance from p to the predicted triangle, by which a vertex ranks its contacts. The
 * caller has checked the filters (bodies, self-contact) and the boxes. same_body: the vertex
 * and the triangle belong to one body. */
PIOLA_FN int piola_contact_candidate(piola_v3 x, piola_v3 p, piola_v3 xa, piola_v3 xb, piola_v3 xc,
                                     piola_v3 pa, piola_v3 pb, piola_v3 pc, piola_real thickness,
                                     int persistent, int same_body, piola_real *key) {
  piola_v3 n0, n1, bary;
  piola_real h0, h1, lateral;
  /* Start: on the outer side (for another body's triangle, also less than a thickness under
   * it), unless the pair was in contact in the previous substep: a contact lasts until the
   * vertex leaves, however deep an unconverged solve left it (it came from the outside). A
   * new contact of a body with itself needs the vertex strictly outside: a vertex under its
   * own triangle is most likely inside its own body, near the far side of a thin part, and
   * must not be pushed through it. */
  const piola_real lowest = same_body ? PIOLA_R(0.0) : -thickness;
  if (!piola_contact_frame(x, xa, xb, xc, &n0, &h0, &bary, &lateral) ||
      !(persistent || h0 > lowest)) {
    return 0;
  }
  /* Predicted: close above the plane, or under it (it would pass through). */
  if (!piola_contact_frame(p, pa, pb, pc, &n1, &h1, &bary, &lateral) || !(lateral <= thickness) ||
      !(h1 < PIOLA_R(2.0) * thickness)) {
    return 0;
  }
  *key = piola_point_triangle_distance(p, pa, pb, pc);
  return 1;
}

/* Whether triangle t is among the count entries of a vertex's previous contacts. */
PIOLA_FN int piola_contact_was_listed(const piola_int *tris, piola_int count, piola_int t) {
  int found = 0;
  for (piola_int k = 0; k < count; ++k) {
    found |= tris[k] == t;
  }
  return found;
}

/* A vertex's contact with triangle t is stored as the entry 2 t + side. Side 1: a two-sided
 * (cloth) triangle met from its back, which then acts with corners b and c swapped (its normal
 * reversed), so that the vertex is kept on the side it came from. A one-sided triangle (a tet
 * body's boundary, outward) is always met from side 0. */
PIOLA_FN piola_int piola_contact_entry(piola_int t, piola_int side) {
  return 2 * t + side;
}

PIOLA_FN piola_int piola_contact_entry_triangle(piola_int e) {
  return e >> 1;
}

PIOLA_FN piola_int piola_contact_entry_side(piola_int e) {
  return e & 1;
}

/* The side from which a vertex starting at x meets triangle t (corners xa, xb, xc at the start),
 * given the vertex's `count` entries of the previous substep: a listed pair persists (*persistent
 * set) on its side; otherwise a two-sided triangle is met from the side of its plane x is on. */
PIOLA_FN piola_int piola_contact_side(piola_v3 x, piola_v3 xa, piola_v3 xb, piola_v3 xc,
                                      const piola_int *previous, piola_int count, piola_int t,
                                      int two_sided, int *persistent) {
  *persistent = piola_contact_was_listed(previous, count, piola_contact_entry(t, 0));
  if (!two_sided || *persistent) {
    return 0;
  }
  *persistent = piola_contact_was_listed(previous, count, piola_contact_entry(t, 1));
  if (*persistent) {
    return 1;
  }
  const piola_v3 n = piola_v3_cross(piola_v3_sub(xb, xa), piola_v3_sub(xc, xa));
  return piola_v3_dot(n, piola_v3_sub(x, xa)) < PIOLA_R(0.0) ? 1 : 0;
}

/* The corrections of a contact met from side 1, computed with corners b and c swapped, put back
 * in the triangle's corner order (dx and their lengths). */
PIOLA_FN void piola_contact_unswap(piola_v3 dx[4], piola_real length[4]) {
  const piola_v3 t = dx[2];
  dx[2] = dx[3];
  dx[3] = t;
  const piola_real u = length[2];
  length[2] = length[3];
  length[3] = u;
}

/* Inserts (key, item) into a list of the nearest (ascending by key, then by item), which holds
 * *count of at most `capacity` entries: past capacity the last entry drops out, or the new one
 * is not taken. */
PIOLA_FN void piola_contact_keep_nearest(piola_real *keys, piola_int *items, piola_int *count,
                                         piola_int capacity, piola_real key, piola_int item) {
  piola_int n = *count;
  if (n == capacity) {
    piola_real lk = keys[n - 1];
    if (key > lk || (key == lk && item > items[n - 1])) {
      return;
    }
    n--; /* the last entry drops out */
  }
  piola_int i = n;
  while (i > 0 && (keys[i - 1] > key || (keys[i - 1] == key && items[i - 1] > item))) {
    keys[i] = keys[i - 1];
    items[i] = items[i - 1];
    i--;
  }
  keys[i] = key;
  items[i] = item;
  *count = n + 1;
}

/* Inserts (key, tri) into the list of the vertex's nearest triangles (ascending by key, then
 * by triangle index), which holds *count of at most PIOLA_CONTACTS_PER_VERTEX entries. */
PIOLA_FN void piola_contact_keep(piola_real *keys, piola_int *tris, piola_int *count,
                                 piola_real key, piola_int tri) {
  piola_contact_keep_nearest(keys, tris, count, PIOLA_CONTACTS_PER_VERTEX, key, tri);
}

/* ---- Projection ---------------------------------------------------------------------- */

/* Mass splitting (Tonge, Benevolenski, Voroshilov 2012, "Mass Splitting for Jitter-Free Parallel
 * Rigid Body Simulation", Sec. 4). The contacts are projected from the same positions (Jacobi);
 * a member (the vertex or a triangle corner) of n contacts enters each with the inverse mass
 * n w, as if a 1/n share of its mass were in each, and moves by the sum of its corrections over
 * n. Each contact conserves momentum with the shares, so the sum conserves it with the whole
 * masses: sum_i m_i (1/n_i) sum_c dx_ic = sum_c sum_i (m_i / n_i) dx_ic = 0, for any n_i > 0 as
 * long as the projection and the sum use the same one. (A mean of a member's corrections
 * weighted by their lengths moves the members of one contact by different fractions of it, and a
 * body in a self-contact gains momentum from its own contacts.) Where n counts
 * the contacts that press on the member, several pressing alike move it by their mean and one
 * alone by its full correction.
 *
 * Each iteration measures n before it projects: a first pass projects every contact with the
 * whole masses, only to measure, and takes per member the participation ratio of the lengths of
 * its corrections, (sum l)^2 / sum l^2, which is k for k corrections of one length and 1 for one
 * that dominates, and changes continuously as a contact starts or stops pressing (1 without
 * corrections); the second pass projects with the split masses and moves the members. (n carried
 * from one iteration or substep to the next lagged behind contacts that started to press: a
 * member pressed by several at once moved by their sum and bodies were thrown apart.) */
PIOLA_FN piola_real piola_contact_split(piola_real sum_length, piola_real sum_length2) {
  return sum_length2 > PIOLA_R(0.0) ? fmax(PIOLA_R(1.0), sum_length * sum_length / sum_length2)
                                    : PIOLA_R(1.0);
}

/* What the projection of a contact takes from the positions alone, not from the masses: the
 * triangle's outward normal n, the barycentric weights b of the contact point, the depth
 * -C > 0, and the tangential relative motion with the fraction of it that friction removes.
 * An iteration's measuring and projecting passes see the same positions, so the projecting pass
 * can take it from the measuring one. depth is 0 where the constraint holds (no correction). */
typedef struct piola_contact_frame_data {
  piola_v3 n, b, tangent;
  piola_real depth, removed;
} piola_contact_frame_data;

/* The edges of a contact's triangle (a, b, c) beside which lies the point of it closest to the
 * vertex's foot on its plane, from that point's barycentric coordinates b: bit k for edge k
 * (corners k and k + 1 of a, b, c: ab, bc, ca), one edge where the point lies inside an edge,
 * the two at a corner where it is a corner (piola_closest_on_triangle gives those coordinates
 * exactly zero). */
PIOLA_FN int piola_contact_beside_edges(piola_v3 b) {
  const piola_real zero = PIOLA_R(0.0);
  return (b.z == zero ? 1 : 0) | (b.x == zero ? 2 : 0) | (b.y == zero ? 4 : 0);
}

/* The listed corner (0, 1, 2 of the triangle as stored) that is corner k of the triangle as a
 * contact met from `side` sees it (side 1: corners b and c swapped, piola_contact_entry). */
PIOLA_FN int piola_contact_stored_corner(int k, int side) {
  return side && k > 0 ? 3 - k : k;
}

/* The corners *r1, *r2 that follow corner s in triangle (q0, q1, q2) (s one of them), in the
 * winding a contact met from `side` sees (side 1: reversed), so that (s, *r1, *r2) is the
 * triangle as it sees it. */
PIOLA_FN void piola_contact_ring_corners(piola_int q0, piola_int q1, piola_int q2, piola_int s,
                                         int side, piola_int *r1, piola_int *r2) {
  const piola_int next = s == q0 ? q1 : s == q1 ? q2 : q0;
  const piola_int prev = s == q0 ? q2 : s == q1 ? q0 : q1;
  *r1 = side ? prev : next;
  *r2 = side ? next : prev;
}

/* The part of piola_contact_project() that reads the positions: vertex p (start position x)
 * against triangle (pa, pb, pc) (start positions xa, xb, xc). Where the constraint is violated
 * f->depth > 0; else all of *f is zero. Returns the edges (piola_contact_beside_edges) beside
 * which p lies where it pushes from under the triangle's plane and beside it (height < 0,
 * lateral > 0), else 0: such a contact acts only where no triangle at that edge (its
 * neighbour across it) or corner (those around it) releases it (piola_contact_neighbour_releases,
 * which the caller runs with their corners). */
PIOLA_FN int piola_contact_prepare(piola_v3 x, piola_v3 p, piola_v3 xa, piola_v3 xb, piola_v3 xc,
                                   piola_v3 pa, piola_v3 pb, piola_v3 pc, piola_real thickness,
                                   piola_real friction, piola_contact_frame_data *f) {
  const piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  f->n = f->b = f->tangent = zero;
  f->depth = f->removed = PIOLA_R(0.0);
  piola_v3 n, b;
  piola_real height, lateral;
  if (!piola_contact_frame(p, pa, pb, pc, &n, &height, &b, &lateral) || !(lateral <= thickness)) {
    return 0;
  }
  piola_real c = piola_contact_gap(height, lateral) - thickness;
  if (!(c < PIOLA_R(0.0))) {
    return 0;
  }
  piola_v3 q = piola_barycentric_point(b, pa, pb, pc);
  piola_real depth = -c;
  /* Friction: the relative motion of the vertex and the contact point over the substep,
   * after the push, loses its tangential part (static) or mu * depth of it (dynamic). */
  piola_v3 q_start = piola_barycentric_point(b, xa, xb, xc);
  piola_v3 rel = piola_v3_sub(piola_v3_sub(p, x), piola_v3_sub(q, q_start));
  rel = piola_v3_add(rel, piola_v3_scale(n, depth));
  piola_v3 tangent = piola_v3_sub(rel, piola_v3_scale(n, piola_v3_dot(rel, n)));
  piola_real lt = piola_v3_length(tangent);
  piola_real removed = PIOLA_R(1.0);
  if (!(lt < friction * depth)) {
    removed = lt > PIOLA_R(0.0) ? fmin(friction * depth / lt, PIOLA_R(1.0)) : PIOLA_R(0.0);
  }
  f->n = n;
  f->b = b;
  f->tangent = tangent;
  f->depth = depth;
  f->removed = removed;
  return height < PIOLA_R(0.0) && lateral > PIOLA_R(0.0) ? piola_contact_beside_edges(b) : 0;
}

/* The corner of a contact's triangle beside which p lies, from the edges beside it
 * (piola_contact_beside_edges): 0, 1, 2 for a, b, c, -1 where p lies beside one edge. */
PIOLA_FN int piola_contact_beside_corner(int edges) {
  return edges == 5 ? 0 : edges == 3 ? 1 : edges == 6 ? 2 : -1;
}

/* Whether triangle (a, r1, r2) of the contact's body (wound as the contact sees it), which meets
 * the contact's triangle (unit normal n; a its corner) at an edge or at the corner a, releases a
 * contact that pushes p from under the contact triangle's plane and beside it (see
 * piola_contact_prepare). Beside a triangle and under its plane lie two kinds of place. Where the
 * triangles there bend inwards from its plane (a convex edge or corner) the body near them lies
 * under all their planes, and p over one of them is outside it: a pinned slab's vertex a
 * thickness under a box's bottom face is beside the box's leading face and under that face's
 * plane, and the push along the face's normal would act across the edge, harder the farther p
 * lies behind it (its gap, height + lateral, shrinks); the bottom face's own contact is the one
 * that acts. Under the neighbours too (two triangles of one face, flat or bent, or inside the
 * body near a convex edge) p is inside: it went through the triangle near its border and on into
 * a neighbour's reach within the substep, where the neighbour's contact is not listed for it,
 * and this one must hold it. So the triangle releases the contact where it bends inwards (its
 * corners off a, together, under the contact triangle's plane) and p lies over its plane. */
PIOLA_FN int piola_contact_neighbour_releases(piola_v3 p, piola_v3 n, piola_v3 a, piola_v3 r1,
                                              piola_v3 r2) {
  const piola_v3 e1 = piola_v3_sub(r1, a), e2 = piola_v3_sub(r2, a);
  const int inward = piola_v3_dot(n, piola_v3_add(e1, e2)) < PIOLA_R(0.0);
  const int over = piola_v3_dot(piola_v3_cross(e1, e2), piola_v3_sub(p, a)) > PIOLA_R(0.0);
  return inward & over;
}

/* Zeroes a contact's frame: it does not act (piola_contact_neighbour_releases). */
PIOLA_FN void piola_contact_release(piola_contact_frame_data *f) {
  const piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  f->n = f->b = f->tangent = zero;
  f->depth = f->removed = PIOLA_R(0.0);
}

/* The part of piola_contact_project() that takes the masses: the corrections of the vertex and
 * the three corners (inverse masses w, wa, wb, wc, the members' shares) into dx[0..3] and their
 * lengths into length[0..3], from the contact's frame f; both zero where the constraint holds. */
PIOLA_FN void piola_contact_respond(const piola_contact_frame_data *f, piola_real w, piola_real wa,
                                    piola_real wb, piola_real wc, piola_v3 dx[4],
                                    piola_real length[4]) {
  const piola_v3 zero = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  for (int k = 0; k < 4; ++k) {
    dx[k] = zero;
    length[k] = PIOLA_R(0.0);
  }
  if (!(f->depth > PIOLA_R(0.0))) {
    return;
  }
  const piola_v3 b = f->b;
  piola_real sum_w = w + b.x * b.x * wa + b.y * b.y * wb + b.z * b.z * wc;
  if (!(sum_w > PIOLA_R(0.0))) {
    return;
  }
  /* Push along the normal by the depth, shared by inverse mass and barycentric weight: C = 0 to
   * first order over the triangle; beside it the gap grows by less (by height / gap of it), so
   * the push never overshoots. */
  piola_v3 push = piola_v3_scale(f->n, f->depth / sum_w);
  /* Both as one generalised correction g (vertex +w g, corner k -b_k w_k g). */
  piola_v3 g = piola_v3_sub(push, piola_v3_scale(f->tangent, f->removed / sum_w));
  dx[0] = piola_v3_scale(g, w);
  dx[1] = piola_v3_scale(g, -b.x * wa);
  dx[2] = piola_v3_scale(g, -b.y * wb);
  dx[3] = piola_v3_scale(g, -b.z * wc);
  for (int k = 0; k < 4; ++k) {
    length[k] = piola_v3_length(dx[k]);
  }
}

/* Projects the contact of vertex p (inverse mass w, start position x) with triangle (pa, pb,
 * pc) (inverse masses wa, wb, wc; start positions xa, xb, xc; all inverse masses the members'
 * shares, piola_contact_split) as a triangle without neighbours (open borders; the backends,
 * which know them, run its parts themselves with piola_contact_neighbour_releases between):
 * writes the corrections of the vertex and the three corners into dx[0..3] and their lengths
 * into length[0..3]; both zero where the constraint holds. */
PIOLA_FN void piola_contact_project(piola_v3 x, piola_v3 p, piola_real w, piola_v3 xa, piola_v3 xb,
                                    piola_v3 xc, piola_v3 pa, piola_v3 pb, piola_v3 pc,
                                    piola_real wa, piola_real wb, piola_real wc,
                                    piola_real thickness, piola_real friction, piola_v3 dx[4],
                                    piola_real length[4]) {
  piola_contact_frame_data f;
  (void)piola_contact_prepare(x, p, xa, xb, xc, pa, pb, pc, thickness, friction, &f);
  piola_contact_respond(&f, w, wa, wb, wc, dx, length);
}

#endif /* PIOLA_CONTACT_H */
