/* Piola triangle-mesh and signed-distance-field colliders: the queries over a mesh's bounding
 * volume hierarchy and over a distance grid, and the correction of a particle against any
 * collider given the shapes' data; shared by C and OpenCL C.
 *
 * A mesh's data (built on the host by src/host/collider_mesh.c, in the collider's frame) is a
 * bounding volume hierarchy of axis-aligned boxes over its triangles and the triangles with their
 * face normals and the angle-weighted pseudo-normals of their vertices and edges. A closed mesh
 * is solid: a point is inside when a ray from it crosses the surface an odd number of times
 * and the sign of (p - q) . N agrees, q the closest point of the surface and N the pseudo-normal
 * of the feature (face, edge or vertex) q lies on (Baerentzen and Aanaes 2005, "Signed Distance
 * Computation Using the Angle Weighted Pseudonormal", IEEE TVCG 11(3)), which is right at edges
 * and corners where the nearest face's own normal is not; it is pushed out to q. An open mesh
 * is a two-sided wall of a thickness: a particle whose motion over the substep crosses a
 * triangle (Moeller and Trumbore 1997, "Fast, Minimum Storage Ray/Triangle Intersection") is put
 * back on the side it started on, and one within the thickness of the surface is pushed out to
 * it. Closest points on triangles are Ericson's (piola_closest_on_triangle, piola_contact.h).
 * A distance field is trilinear between its grid points, its gradient the normal.
 *
 * piola_mesh_supports: a vertex that a mesh or SDF collider pushed is not supported against the
 * tet projections (piola_tet_support, piola_tet.h: its normal is left zero). On a curved solid
 * the corners of a tet rest on it with different normals, and taking each one's normal part out
 * of its mass made the projection's step, and the motion withheld from the corners, grow without
 * bound: an Armadillo landing in a bowl was flung off at hundreds of m/s. The multigrid scheme's
 * Newton step holds each supported vertex along its own normal (newton.c), which any normals
 * suit: under it these colliders support as the analytic ones do (PIOLA_COLLIDE_NORMAL_ONLY).
 *
 * Layout of the shapes' data (float4 entries; integers are stored as floats, exact below 2^24):
 *   mesh record: a = (box min, thickness; 0 for a closed mesh), b = (box max, 1 closed or 0 open),
 *     c = (first node, first triangle, node count, triangle count) as entries of the data;
 *   node k, 2 entries at first node + 2 k: (box min, child or first triangle), (box max, count):
 *     count 0 an inner node whose children are nodes child and child + 1, else a leaf of
 *     triangles first .. first + count - 1 (numbered from the mesh's first triangle);
 *   triangle j, PIOLA_MESH_TRI_ENTRIES entries at first triangle + 10 j: its corners v0, v1, v2,
 *     its unit normal, the pseudo-normals of v0, v1, v2 and of the edges v0v1, v1v2, v2v0;
 *   SDF record: a = (grid origin, cell), b = (points along x, y, z, first entry); the distances
 *     packed 4 to an entry from that entry on, x fastest.
 */
#ifndef PIOLA_MESH_H
#define PIOLA_MESH_H

#ifndef PIOLA_EMBEDDED /* the embedded program concatenates the headers */
#include "piola_collide.h"
#include "piola_contact.h"
#endif

#define PIOLA_MESH_TRI_ENTRIES 10
/* A depth into a closed mesh, relative to its box's diagonal, under which its push acts along the
 * pseudo-normal of the nearest feature (piola_mesh_contact). */
#define PIOLA_MESH_SHALLOW PIOLA_R(1e-5)
/* Nodes a traversal holds at once: the hierarchy's depth plus one. The host's median split
 * keeps the depth at most log2(triangles) + 2, so 48 covers any mesh of int32 triangles. */
#define PIOLA_MESH_STACK 48

#ifdef __OPENCL_VERSION__
#define PIOLA_SHAPES __global const float4 *
PIOLA_FN piola_v3 piola_shape_v3(PIOLA_SHAPES s, int i) {
  const float4 v = s[i];
  return piola_v3_make(v.x, v.y, v.z);
}
PIOLA_FN piola_real piola_shape_w(PIOLA_SHAPES s, int i) {
  return s[i].w;
}
PIOLA_FN piola_real piola_shape_scalar(PIOLA_SHAPES s, int i) {
  return ((__global const float *)s)[i];
}
#else
#define PIOLA_SHAPES const piola_f32 *
PIOLA_FN piola_v3 piola_shape_v3(PIOLA_SHAPES s, int i) {
  const piola_f32 *v = s + 4 * (size_t)i;
  return piola_v3_make((piola_real)v[0], (piola_real)v[1], (piola_real)v[2]);
}
PIOLA_FN piola_real piola_shape_w(PIOLA_SHAPES s, int i) {
  return (piola_real)s[4 * (size_t)i + 3];
}
PIOLA_FN piola_real piola_shape_scalar(PIOLA_SHAPES s, int i) {
  return (piola_real)s[i];
}
#endif

/* Squared distance from p to the box [lo, hi] (0 inside). */
PIOLA_FN piola_real piola_box_distance2(piola_v3 p, piola_v3 lo, piola_v3 hi) {
  const piola_real zero = PIOLA_R(0.0);
  const piola_real dx = fmax(fmax(lo.x - p.x, p.x - hi.x), zero);
  const piola_real dy = fmax(fmax(lo.y - p.y, p.y - hi.y), zero);
  const piola_real dz = fmax(fmax(lo.z - p.z, p.z - hi.z), zero);
  return dx * dx + dy * dy + dz * dz;
}

/* The box [lo, hi] (piola_box, piola_contact.h). */
PIOLA_FN piola_box piola_box_make(piola_v3 lo, piola_v3 hi) {
  piola_box r;
  r.lo = lo;
  r.hi = hi;
  return r;
}

/* The point of the mesh closest to p within sqrt(max_d2) (strictly): returns the triangle
 * (numbered from the mesh's first) or -1 when none is that close, with the point *q and the
 * pseudo-normal *pn of the feature it lies on. The hierarchy is walked nearer child first,
 * skipping nodes no closer than the best point so far; the walk's order is fixed, so is the
 * answer. */
PIOLA_FN int piola_mesh_nearest(PIOLA_COLLIDER_RECORD const piola_collider_data *c, PIOLA_SHAPES s,
                                piola_v3 p, piola_real max_d2, piola_v3 *q, piola_v3 *pn) {
  const int node0 = (int)c->c[0], tri0 = (int)c->c[1];
  int stack[PIOLA_MESH_STACK];
  int top = 0, best = -1;
  piola_real best_d2 = max_d2;
  piola_v3 best_bary = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  stack[top++] = 0;
  while (top > 0) {
    const int k = stack[--top];
    const int e = node0 + 2 * k;
    if (!(piola_box_distance2(p, piola_shape_v3(s, e), piola_shape_v3(s, e + 1)) < best_d2)) {
      continue;
    }
    const int first = (int)piola_shape_w(s, e), count = (int)piola_shape_w(s, e + 1);
    if (count > 0) {
      for (int j = first; j < first + count; ++j) {
        const int t = tri0 + PIOLA_MESH_TRI_ENTRIES * j;
        const piola_v3 a = piola_shape_v3(s, t), b = piola_shape_v3(s, t + 1),
                       cc = piola_shape_v3(s, t + 2);
        const piola_v3 bary = piola_closest_on_triangle(p, a, b, cc);
        const piola_v3 d = piola_v3_sub(p, piola_barycentric_point(bary, a, b, cc));
        const piola_real d2 = piola_v3_dot(d, d);
        if (d2 < best_d2) {
          best_d2 = d2;
          best = j;
          best_bary = bary;
        }
      }
    } else if (top + 2 <= PIOLA_MESH_STACK) {
      const int l = node0 + 2 * first, r = l + 2;
      const piola_real dl = piola_box_distance2(p, piola_shape_v3(s, l), piola_shape_v3(s, l + 1));
      const piola_real dr = piola_box_distance2(p, piola_shape_v3(s, r), piola_shape_v3(s, r + 1));
      /* the nearer child on top, so it is walked first */
      if (dl <= dr) {
        stack[top++] = first + 1;
        stack[top++] = first;
      } else {
        stack[top++] = first;
        stack[top++] = first + 1;
      }
    }
  }
  if (best < 0) {
    return -1;
  }
  const int t = tri0 + PIOLA_MESH_TRI_ENTRIES * best;
  *q = piola_barycentric_point(best_bary, piola_shape_v3(s, t), piola_shape_v3(s, t + 1),
                               piola_shape_v3(s, t + 2));
  const piola_real zero = PIOLA_R(0.0);
  int feature = 3; /* the face's normal */
  if (best_bary.y == zero && best_bary.z == zero) {
    feature = 4; /* vertex 0 */
  } else if (best_bary.x == zero && best_bary.z == zero) {
    feature = 5;
  } else if (best_bary.x == zero && best_bary.y == zero) {
    feature = 6;
  } else if (best_bary.z == zero) {
    feature = 7; /* edge v0 v1 */
  } else if (best_bary.x == zero) {
    feature = 8;
  } else if (best_bary.y == zero) {
    feature = 9;
  }
  *pn = piola_shape_v3(s, t + feature);
  return best;
}

/* Whether p is inside closed mesh c by the parity of the triangles a ray from p crosses
 * (Jordan's theorem; the ray's direction is skewed to every axis, so that it seldom meets an edge
 * of a mesh laid out on a grid exactly). Walks only the nodes the ray passes through: for a
 * point in a bowl's hollow, the few boxes above it, where the nearest-point query would visit
 * every triangle at the same distance. */
PIOLA_FN int piola_mesh_ray_parity(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                   PIOLA_SHAPES s, piola_v3 p) {
  const int node0 = (int)c->c[0], tri0 = (int)c->c[1];
  const piola_v3 dir = piola_v3_make(PIOLA_R(0.26726124), PIOLA_R(0.96362412), PIOLA_R(0.01212436));
  const piola_v3 inv =
      piola_v3_make(PIOLA_R(1.0) / dir.x, PIOLA_R(1.0) / dir.y, PIOLA_R(1.0) / dir.z);
  int stack[PIOLA_MESH_STACK];
  int top = 0, crossings = 0;
  stack[top++] = 0;
  while (top > 0) {
    const int k = stack[--top];
    const int e = node0 + 2 * k;
    /* slabs: the ray t >= 0 meets the box */
    const piola_v3 lo = piola_v3_sub(piola_shape_v3(s, e), p);
    const piola_v3 hi = piola_v3_sub(piola_shape_v3(s, e + 1), p);
    const piola_real tx0 = lo.x * inv.x, tx1 = hi.x * inv.x;
    const piola_real ty0 = lo.y * inv.y, ty1 = hi.y * inv.y;
    const piola_real tz0 = lo.z * inv.z, tz1 = hi.z * inv.z;
    const piola_real enter = fmax(fmax(fmin(tx0, tx1), fmin(ty0, ty1)), fmin(tz0, tz1));
    const piola_real leave = fmin(fmin(fmax(tx0, tx1), fmax(ty0, ty1)), fmax(tz0, tz1));
    if (!(leave >= fmax(enter, PIOLA_R(0.0)))) {
      continue;
    }
    const int first = (int)piola_shape_w(s, e), count = (int)piola_shape_w(s, e + 1);
    if (count > 0) {
      for (int j = first; j < first + count; ++j) {
        const int t = tri0 + PIOLA_MESH_TRI_ENTRIES * j;
        const piola_v3 a = piola_shape_v3(s, t);
        const piola_v3 e1 = piola_v3_sub(piola_shape_v3(s, t + 1), a);
        const piola_v3 e2 = piola_v3_sub(piola_shape_v3(s, t + 2), a);
        const piola_v3 pv = piola_v3_cross(dir, e2);
        const piola_real det = piola_v3_dot(e1, pv);
        if (det == PIOLA_R(0.0)) {
          continue;
        }
        const piola_real id = PIOLA_R(1.0) / det;
        const piola_v3 tv = piola_v3_sub(p, a);
        const piola_real u = piola_v3_dot(tv, pv) * id;
        const piola_v3 qv = piola_v3_cross(tv, e1);
        const piola_real v = piola_v3_dot(dir, qv) * id;
        /* half-open in u and v, so that a ray through a shared edge counts one triangle */
        if (u >= PIOLA_R(0.0) && v >= PIOLA_R(0.0) && u + v < PIOLA_R(1.0) &&
            piola_v3_dot(e2, qv) * id > PIOLA_R(0.0)) {
          crossings++;
        }
      }
    } else if (top + 2 <= PIOLA_MESH_STACK) {
      stack[top++] = first + 1;
      stack[top++] = first;
    }
  }
  return crossings & 1;
}

/* An open mesh's two queries in one walk of the nodes within `thickness` of the motion x0 -> p:
 * the first triangle the motion crosses (the smallest parameter along it; Moeller and Trumbore
 * 1997, the edges taken inclusively, so that a motion through an edge or a vertex meets a
 * triangle there; *crossed, -1 for none) and the point of the mesh closest to p within the
 * thickness (*near, -1 for none; the point in *q). Visits each node once where the two walks
 * visited most nodes twice. */
PIOLA_FN void piola_mesh_wall(PIOLA_COLLIDER_RECORD const piola_collider_data *c, PIOLA_SHAPES s,
                              piola_v3 x0, piola_v3 p, piola_real thickness, int *crossed,
                              int *near, piola_v3 *q) {
  const int node0 = (int)c->c[0], tri0 = (int)c->c[1];
  const piola_v3 grow = piola_v3_make(thickness, thickness, thickness);
  const piola_box reach = piola_box_make(piola_v3_sub(piola_v3_min(x0, p), grow),
                                         piola_v3_add(piola_v3_max(x0, p), grow));
  const piola_v3 dir = piola_v3_sub(p, x0);
  const piola_real tol = PIOLA_R(1e-5);
  int stack[PIOLA_MESH_STACK];
  int top = 0;
  piola_real best_t = PIOLA_R(2.0), best_d2 = thickness * thickness;
  *crossed = -1;
  *near = -1;
  stack[top++] = 0;
  while (top > 0) {
    const int k = stack[--top];
    const int e = node0 + 2 * k;
    if (!piola_boxes_overlap(reach,
                             piola_box_make(piola_shape_v3(s, e), piola_shape_v3(s, e + 1)))) {
      continue;
    }
    const int first = (int)piola_shape_w(s, e), count = (int)piola_shape_w(s, e + 1);
    if (count > 0) {
      for (int j = first; j < first + count; ++j) {
        const int t = tri0 + PIOLA_MESH_TRI_ENTRIES * j;
        const piola_v3 a = piola_shape_v3(s, t), b = piola_shape_v3(s, t + 1),
                       cc = piola_shape_v3(s, t + 2);
        const piola_v3 bary = piola_closest_on_triangle(p, a, b, cc);
        const piola_v3 pq = piola_barycentric_point(bary, a, b, cc);
        const piola_v3 d = piola_v3_sub(p, pq);
        const piola_real d2 = piola_v3_dot(d, d);
        if (d2 < best_d2) {
          best_d2 = d2;
          *near = j;
          *q = pq;
        }
        const piola_v3 e1 = piola_v3_sub(b, a), e2 = piola_v3_sub(cc, a);
        const piola_v3 pv = piola_v3_cross(dir, e2);
        const piola_real det = piola_v3_dot(e1, pv);
        if (det == PIOLA_R(0.0)) {
          continue;
        }
        const piola_real inv = PIOLA_R(1.0) / det;
        const piola_v3 tv = piola_v3_sub(x0, a);
        const piola_real u = piola_v3_dot(tv, pv) * inv;
        const piola_v3 qv = piola_v3_cross(tv, e1);
        const piola_real v = piola_v3_dot(dir, qv) * inv;
        const piola_real tt = piola_v3_dot(e2, qv) * inv;
        if (u >= -tol && u <= PIOLA_R(1.0) + tol && v >= -tol && u + v <= PIOLA_R(1.0) + tol &&
            tt >= PIOLA_R(0.0) && tt <= PIOLA_R(1.0) && tt < best_t) {
          best_t = tt;
          *crossed = j;
        }
      }
    } else if (top + 2 <= PIOLA_MESH_STACK) {
      stack[top++] = first + 1;
      stack[top++] = first;
    }
  }
}

/* Penetration depth (> 0 on contact) of p into mesh collider c and the outward normal, in the
 * collider's frame; x_start: the particle at the start of the substep (an open mesh keeps its
 * side). */
PIOLA_FN piola_real piola_mesh_contact(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                       PIOLA_SHAPES s, piola_v3 x_start, piola_v3 p,
                                       piola_v3 *normal) {
  const piola_v3 lo = piola_f32x3(c->a), hi = piola_f32x3(c->b);
  const piola_real thickness = (piola_real)c->a[3];
  piola_v3 q = p, pn = p;
  if (c->b[3] > PIOLA_R(0.5)) {
    /* closed: solid inside its box only */
    if (piola_box_distance2(p, lo, hi) > PIOLA_R(0.0) || !piola_mesh_ray_parity(c, s, p)) {
      return PIOLA_R(0.0);
    }
    if (piola_mesh_nearest(c, s, p, PIOLA_R(1e30), &q, &pn) < 0) {
      return PIOLA_R(0.0);
    }
    const piola_v3 d = piola_v3_sub(p, q);
    if (!(piola_v3_dot(d, pn) < PIOLA_R(0.0))) {
      return PIOLA_R(0.0); /* outside, or on the surface */
    }
    const piola_real dist = piola_v3_length(d);
    const piola_v3 u = piola_v3_scale(pn, PIOLA_R(1.0) / piola_v3_length(pn));
    /* Outwards from p to q; but along the pseudo-normal where p lies under q along it (under a
     * face's interior, where both agree) or so near the surface that rounding turns d (under
     * PIOLA_MESH_SHALLOW of the mesh's box): a vertex resting on a face keeps its normal. */
    const int along = -piola_v3_dot(d, u) >= PIOLA_R(0.999) * dist ||
                      dist <= PIOLA_MESH_SHALLOW * piola_v3_length(piola_v3_sub(hi, lo));
    *normal = along ? u : piola_v3_scale(d, PIOLA_R(-1.0) / dist);
    return dist;
  }
  /* open: the motion's box must meet the mesh's grown by the thickness */
  const piola_v3 grow = piola_v3_make(thickness, thickness, thickness);
  if (!piola_boxes_overlap(piola_box_make(piola_v3_min(x_start, p), piola_v3_max(x_start, p)),
                           piola_box_make(piola_v3_sub(lo, grow), piola_v3_add(hi, grow)))) {
    return PIOLA_R(0.0);
  }
  int crossed, near;
  piola_mesh_wall(c, s, x_start, p, thickness, &crossed, &near, &q);
  if (crossed >= 0) {
    const int t = (int)c->c[1] + PIOLA_MESH_TRI_ENTRIES * crossed;
    const piola_v3 a = piola_shape_v3(s, t), n = piola_shape_v3(s, t + 3);
    const piola_real hs = piola_v3_dot(n, piola_v3_sub(x_start, a));
    const piola_real side = hs > PIOLA_R(0.0)                                    ? PIOLA_R(1.0)
                            : hs < PIOLA_R(0.0)                                  ? PIOLA_R(-1.0)
                            : piola_v3_dot(n, piola_v3_sub(p, a)) > PIOLA_R(0.0) ? PIOLA_R(-1.0)
                                                                                 : PIOLA_R(1.0);
    *normal = piola_v3_scale(n, side);
    return thickness - side * piola_v3_dot(n, piola_v3_sub(p, a));
  }
  if (near < 0) {
    return PIOLA_R(0.0);
  }
  const piola_v3 d = piola_v3_sub(p, q);
  const piola_real dist = piola_v3_length(d);
  if (dist > PIOLA_R(0.0)) {
    *normal = piola_v3_scale(d, PIOLA_R(1.0) / dist);
  } else {
    const int t = (int)c->c[1] + PIOLA_MESH_TRI_ENTRIES * near;
    const piola_v3 n = piola_shape_v3(s, t + 3);
    *normal = piola_v3_dot(n, piola_v3_sub(x_start, q)) < PIOLA_R(0.0)
                  ? piola_v3_scale(n, PIOLA_R(-1.0))
                  : n;
  }
  return thickness - dist;
}

/* The distance field of collider c at p (m) and its gradient *grad, trilinear between the grid
 * points; returns 0 outside the grid (*inside 0). */
PIOLA_FN piola_real piola_sdf_sample(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                     PIOLA_SHAPES s, piola_v3 p, piola_v3 *grad, int *inside) {
  const piola_v3 o = piola_f32x3(c->a);
  const piola_real cell = (piola_real)c->a[3];
  const int nx = (int)c->b[0], ny = (int)c->b[1], nz = (int)c->b[2];
  const int base = 4 * (int)c->b[3];
  const piola_real gx = (p.x - o.x) / cell, gy = (p.y - o.y) / cell, gz = (p.z - o.z) / cell;
  *inside = 0;
  if (!(gx >= PIOLA_R(0.0) && gy >= PIOLA_R(0.0) && gz >= PIOLA_R(0.0) &&
        gx <= (piola_real)(nx - 1) && gy <= (piola_real)(ny - 1) && gz <= (piola_real)(nz - 1))) {
    return PIOLA_R(0.0);
  }
  *inside = 1;
  const int i = (int)fmin(floor(gx), (piola_real)(nx - 2));
  const int j = (int)fmin(floor(gy), (piola_real)(ny - 2));
  const int k = (int)fmin(floor(gz), (piola_real)(nz - 2));
  const piola_real fx = gx - (piola_real)i, fy = gy - (piola_real)j, fz = gz - (piola_real)k;
  const int i000 = base + i + nx * (j + ny * k);
  const int sy = nx, sz = nx * ny;
  const piola_real c000 = piola_shape_scalar(s, i000), c100 = piola_shape_scalar(s, i000 + 1);
  const piola_real c010 = piola_shape_scalar(s, i000 + sy);
  const piola_real c110 = piola_shape_scalar(s, i000 + sy + 1);
  const piola_real c001 = piola_shape_scalar(s, i000 + sz);
  const piola_real c101 = piola_shape_scalar(s, i000 + sz + 1);
  const piola_real c011 = piola_shape_scalar(s, i000 + sz + sy);
  const piola_real c111 = piola_shape_scalar(s, i000 + sz + sy + 1);
  /* along x on the four edges, then y, then z */
  const piola_real c00 = c000 + fx * (c100 - c000), c10 = c010 + fx * (c110 - c010);
  const piola_real c01 = c001 + fx * (c101 - c001), c11 = c011 + fx * (c111 - c011);
  const piola_real c0 = c00 + fy * (c10 - c00), c1 = c01 + fy * (c11 - c01);
  const piola_real d = c0 + fz * (c1 - c0);
  /* the derivatives of the trilinear interpolant, per metre */
  const piola_real ex0 = (c100 - c000) + fy * ((c110 - c010) - (c100 - c000));
  const piola_real ex1 = (c101 - c001) + fy * ((c111 - c011) - (c101 - c001));
  const piola_real dx = ex0 + fz * (ex1 - ex0);
  const piola_real dy = (c10 - c00) + fz * ((c11 - c01) - (c10 - c00));
  const piola_real dz = c1 - c0;
  *grad = piola_v3_scale(piola_v3_make(dx, dy, dz), PIOLA_R(1.0) / cell);
  return d;
}

/* Penetration depth (> 0 on contact) of p into SDF collider c and the outward normal (the
 * normalised gradient), in the collider's frame. */
PIOLA_FN piola_real piola_sdf_contact(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                      PIOLA_SHAPES s, piola_v3 p, piola_v3 *normal) {
  piola_v3 g;
  int inside;
  const piola_real d = piola_sdf_sample(c, s, p, &g, &inside);
  if (!inside || !(d < PIOLA_R(0.0))) {
    return PIOLA_R(0.0);
  }
  const piola_real lg = piola_v3_length(g);
  *normal = lg > PIOLA_R(0.0) ? piola_v3_scale(g, PIOLA_R(1.0) / lg)
                              : piola_v3_make(PIOLA_R(0.0), PIOLA_R(1.0), PIOLA_R(0.0));
  return -d;
}

/* piola_collider_correction_exact() for a collider of any kind, the mesh and SDF kinds reading
 * their data from s (the world's shape data; unused by the analytic kinds). */
PIOLA_FN int piola_collider_correction_shapes(PIOLA_COLLIDER_RECORD const piola_collider_data *c,
                                              PIOLA_SHAPES s, piola_v3 x_start, piola_v3 p,
                                              piola_real t_end, piola_real h, piola_v3 *correction,
                                              piola_v3 *normal) {
  if (c->kind < PIOLA_COLLIDER_KIND_MESH) {
    return piola_collider_correction_exact(c, x_start, p, t_end, h, correction, normal);
  }
  piola_rigid_pose end;
  piola_v3 xl, pl, nl = piola_v3_make(PIOLA_R(0.0), PIOLA_R(0.0), PIOLA_R(0.0));
  piola_collider_frames(c, x_start, p, t_end, h, &end, &xl, &pl);
  const piola_real depth = c->kind == PIOLA_COLLIDER_KIND_MESH
                               ? piola_mesh_contact(c, s, xl, pl, &nl)
                               : piola_sdf_contact(c, s, pl, &nl);
  return piola_collider_respond(c, end, x_start, p, h, depth, nl, correction, normal);
}

#endif /* PIOLA_MESH_H */
