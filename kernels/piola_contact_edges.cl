/* Piola OpenCL 1.2 edge-edge contact kernels: the narrow phase and the projection of
 * kernels/piola_contact_edges.h on the device. Follows piola_contact.cl in the
 * program (it uses its helpers, the grid and the per-vertex lists of corner entries).
 *
 * Surface edges are int4 (their two surface vertices, lower first; their body; their owner, the
 * lowest-numbered triangle that has them); a triangle's edges are int4 (the edges of its corners
 * (0, 1), (1, 2), (2, 0); w: bit k set where it owns edge k), and cluster_edge_max holds the
 * highest edge a cluster's triangles own (an edge skips the clusters that own none above it);
 * edge_wing holds an edge's wings and edge_convex, each substep, whether it is convex or flat
 * (piola_edge_convex: the pairs of a concave edge are skipped). Each
 * edge keeps its nearest edges of higher index found through their owner triangles (each pair once,
 * in any order of the grid's buckets: ties by index), counts its contacts' members in corner_count
 * with integer atomics and lists itself for the solve; its contacts' four entries (edge_base + 4
 * slot + member) join the vertices' lists of corner entries, which piola_contact_sort_corners
 * sorts, so that every vertex sums its corrections of both kinds in one fixed order: no
 * floating-point atomics.
 *
 * counters[3], [4]: the edge contacts kept and dropped; counters[5]: the listed edges.
 */
#ifndef PIOLA_EMBEDDED
#include "piola_contact_edges.h"
#endif

#define PIOLA_KE PIOLA_CONTACTS_PER_EDGE

/* Edge `k` (0, 1, 2) of a triangle's int4 of edges. */
PIOLA_FN int piola_triangle_edge(int4 q, int k) {
  return k == 0 ? q.x : k == 1 ? q.y : q.z;
}

/* Whether surface edge `edge` (its int4) with wings `wing` takes part in the substep's pairs
 * (piola_edge_convex_in_substep), or has no wings: else the narrow phase skips its pairs. */
PIOLA_FN int piola_edge_convex_moving(__global const float4 *sv_x, __global const float4 *sv_p,
                                      int4 edge, int2 wing) {
  if (wing.x < 0) {
    return 1;
  }
  return piola_edge_convex_in_substep(piola_v3_from4(sv_x[edge.x]), piola_v3_from4(sv_x[edge.y]),
                                      piola_v3_from4(sv_x[wing.x]), piola_v3_from4(sv_x[wing.y]),
                                      piola_v3_from4(sv_p[edge.x]), piola_v3_from4(sv_p[edge.y]),
                                      piola_v3_from4(sv_p[wing.x]), piola_v3_from4(sv_p[wing.y]));
}

/* NARROW_PHASE, one edge pair: edge ea (ends at the start xa0, xa1, predicted pa0, pa1; rest
 * positions and reaches ra0, ra1; its box) against edge f, met through f's owner triangle, whose
 * box overlaps: if the filters and the self-contact rules allow the pair and it is a contact
 * (piola_edge_candidate), it is counted in *found and kept among ea's nearest. */
PIOLA_FN void piola_edge_narrow_pair(__global const float4 *sv_x, __global const float4 *sv_p,
                                     __global const float4 *sv_rest, __global const int4 *edges,
                                     __global const int *sv_vertex, __global const int *turned,
                                     __global const uint4 *body_filter, int4 ea, piola_v3 xa0,
                                     piola_v3 xa1, piola_v3 pa0, piola_v3 pa1, float4 ra0,
                                     float4 ra1, piola_box box, float thickness, int f, float *keys,
                                     int *entries, int *kept, int *found) {
  const int4 eb = edges[f];
  if (eb.x == ea.x || eb.x == ea.y || eb.y == ea.x || eb.y == ea.y) {
    return;
  }
  const uint4 own = body_filter[ea.z];
  const float4 rb0 = sv_rest[eb.x], rb1 = sv_rest[eb.y];
  const float reach = fmax(fmax(ra0.w, ra1.w), fmax(rb0.w, rb1.w));
  if (eb.z != ea.z) {
    const uint4 other = body_filter[eb.z];
    if (!piola_contact_bodies_collide(own.x, own.y, other.x, other.y)) {
      return;
    }
  } else if (own.z == 0u ||
             piola_edge_self_near(piola_v3_from4(ra0), piola_v3_from4(ra1), piola_v3_from4(rb0),
                                  piola_v3_from4(rb1), reach, thickness)) {
    return;
  }
  const piola_v3 xb0 = piola_v3_from4(sv_x[eb.x]), xb1 = piola_v3_from4(sv_x[eb.y]);
  const piola_v3 pb0 = piola_v3_from4(sv_p[eb.x]), pb1 = piola_v3_from4(sv_p[eb.y]);
  if (!piola_boxes_overlap(box, piola_edge_box(xb0, xb1, pb0, pb1, thickness))) {
    return;
  }
  const int side = piola_edge_side(xa0, xa1, xb0, xb1);
  float key;
  if (side < 0 ||
      !piola_edge_candidate(xa0, xa1, xb0, xb1, pa0, pa1, pb0, pb1, side, thickness, &key)) {
    return;
  }
  if (eb.z == ea.z &&
      !(piola_edge_self_allowed(piola_v3_from4(ra0), piola_v3_from4(ra1), piola_v3_from4(rb0),
                                piola_v3_from4(rb1), reach, thickness) &&
        piola_contact_self_untangled(turned[sv_vertex[ea.x]], turned[sv_vertex[ea.y]],
                                     turned[sv_vertex[eb.x]], turned[sv_vertex[eb.y]]))) {
    return;
  }
  (*found)++;
  piola_edge_contact_keep(keys, entries, kept, key, 2 * f + side);
}

/* NARROW_PHASE, one edge (e: ea, its start and predicted ends, rest ends, box, its ends' near
 * windows) against cluster i: skipped where it owns no edge above e or lies in the ends' near
 * windows (piola_edge_near_cluster); else, where the boxes overlap and (in_cell) the pair is
 * taken in this cell of the grid's walk, the edges that its triangles own tested
 * (piola_edge_narrow_pair). */
PIOLA_FN void piola_edge_narrow_cluster(
    __global const float4 *sv_x, __global const float4 *sv_p, __global const float4 *sv_rest,
    __global const int4 *edges, __global const int4 *tri_edges, __global const int *sv_vertex,
    __global const int *turned, __global const float4 *tri_box, __global const float4 *cluster_box,
    __global const uint4 *body_filter, __global const int *cluster_edge_max,
    __global const uchar *edge_convex, int e, int4 ea, piola_v3 xa0, piola_v3 xa1, piola_v3 pa0,
    piola_v3 pa1, float4 ra0, float4 ra1, piola_box box, int2 n0, ulong2 m0, int2 n1, ulong2 m1,
    float thickness, int i, int walk, piola_box query, float inv_cell, float margin, int ci, int cj,
    int ck, float *keys, int *entries, int *kept, int *found) {
  if (cluster_edge_max[i] <= e) {
    return;
  }
  const float4 clo = cluster_box[2 * i], chi = cluster_box[2 * i + 1];
  const int first = as_int(clo.w), cluster_end = as_int(chi.w);
  const piola_box cb = piola_box_from4(clo, chi);
  if (piola_edge_near_cluster(first, cluster_end - first, n0.x, m0.x, n0.y, m0.y, n1.x, m1.x, n1.y,
                              m1.y) ||
      !piola_boxes_overlap(box, cb) ||
      (walk && !piola_pair_cell(query, piola_grid_cluster(cb, margin), inv_cell, ci, cj, ck))) {
    return;
  }
  for (int t = first; t < cluster_end; ++t) {
    if (piola_edge_near_cluster(t, 1, n0.x, m0.x, n0.y, m0.y, n1.x, m1.x, n1.y, m1.y) ||
        !piola_boxes_overlap(box, piola_load_box(tri_box, t))) {
      continue;
    }
    const int4 q = tri_edges[t];
    for (int k = 0; k < 3; ++k) {
      const int f = piola_triangle_edge(q, k);
      if (((q.w >> k) & 1) && f > e && edge_convex[f]) {
        piola_edge_narrow_pair(sv_x, sv_p, sv_rest, edges, sv_vertex, turned, body_filter, ea, xa0,
                               xa1, pa0, pa1, ra0, ra1, box, thickness, f, keys, entries, kept,
                               found);
      }
    }
  }
}

/* NARROW_PHASE, after piola_contact_narrow, before piola_edge_contact_narrow: first whether
 * each edge that cluster a's triangles own is convex (edge_convex, piola_edge_convex_moving),
 * then a's list of the clusters its convex edges test (piola_edge_clusters_may_meet above the
 * lowest of them, boxes overlapping; none where all are concave), from the grid's cells that its
 * box looks into, each once (piola_pair_cell), in cluster_pairs[a PIOLA_CLUSTER_PAIRS ..] and
 * their count in cluster_pair_count[a]: PIOLA_CLUSTER_PAIRS + 1 where it met more (its edges
 * then walk the cells themselves). */
PIOLA_KERNEL void
piola_edge_cluster_pairs(__global const float4 *cluster_box, __global const int4 *triangles,
                         __global const uint4 *body_filter, __global const float *grid,
                         __global const int *bucket_start, __global const int *bucket_clusters,
                         int bucket_mask, int cluster_count, __global const int *cluster_edge_max,
                         __global const int *cluster_near, __global const ulong *cluster_near_mask,
                         __global int *cluster_pair_count, __global int *cluster_pairs,
                         __global const int4 *tri_edges, __global const int4 *edges,
                         __global const int2 *edge_wing, __global const float4 *sv_x,
                         __global const float4 *sv_p, __global uchar *edge_convex) {
  const int a = get_global_id(0);
  if (a >= cluster_count) {
    return;
  }
  const int near_first = cluster_near[a];
  int least = INT_MAX; /* the lowest convex edge a owns */
  const ulong near_mask = cluster_near_mask[a];
  const float4 alo = cluster_box[2 * a], ahi = cluster_box[2 * a + 1];
  for (int t = as_int(alo.w); t < as_int(ahi.w); ++t) {
    const int4 q = tri_edges[t];
    for (int k = 0; k < 3; ++k) {
      if ((q.w >> k) & 1) {
        const int f = piola_triangle_edge(q, k);
        const int convex = piola_edge_convex_moving(sv_x, sv_p, edges[f], edge_wing[f]);
        edge_convex[f] = (uchar)convex;
        least = convex && f < least ? f : least;
      }
    }
  }
  const int body = triangles[as_int(alo.w)].w;
  const uint4 own = body_filter[body];
  const piola_box box = piola_box_from4(alo, ahi);
  const float inv_cell = grid[1], margin = grid[2];
  const piola_box query = piola_grid_vertex(box, margin);
  int lo[3], hi[3];
  piola_cell_range(query, inv_cell, 3, lo, hi);
  __global int *list = cluster_pairs + PIOLA_CLUSTER_PAIRS * a;
  int n = 0;
  for (int ci = lo[0]; ci <= hi[0] && least < INT_MAX; ++ci) {
    for (int cj = lo[1]; cj <= hi[1]; ++cj) {
      for (int ck = lo[2]; ck <= hi[2]; ++ck) {
        const int bucket = piola_cell_hash(ci, cj, ck, bucket_mask);
        const int end = bucket_start[bucket + 1];
        for (int k = bucket_start[bucket]; k < end; ++k) {
          const int b = bucket_clusters[k];
          const int most = cluster_edge_max[b];
          if (most <= least) {
            continue;
          }
          const float4 blo = cluster_box[2 * b], bhi = cluster_box[2 * b + 1];
          const piola_box cb = piola_box_from4(blo, bhi);
          if (!piola_boxes_overlap(box, cb)) {
            continue;
          }
          const int other = triangles[as_int(blo.w)].w;
          const uint4 filter = body_filter[other];
          const int same = other == body;
          const int collide =
              same ? own.z != 0u : piola_contact_bodies_collide(own.x, own.y, filter.x, filter.y);
          if (!piola_edge_clusters_may_meet(b, most, least, same, collide, near_first, near_mask) ||
              !piola_pair_cell(query, piola_grid_cluster(cb, margin), inv_cell, ci, cj, ck)) {
            continue;
          }
          if (n < PIOLA_CLUSTER_PAIRS) {
            list[n] = b;
          }
          n += n <= PIOLA_CLUSTER_PAIRS;
        }
      }
    }
  }
  cluster_pair_count[a] = n;
}

/* NARROW_PHASE, after piola_edge_cluster_pairs: surface edge e keeps its nearest edges (of higher
 * index, met through their owner triangles in the clusters that its cluster listed, or where the
 * list overflowed in the grid's cells that its box looks into, as a vertex does), the positions
 * from sv_x and sv_p; the kept and dropped counts go to counters[3], [4]; each kept contact's four
 * members are counted in corner_count, and an edge with contacts is listed in edge_active[0 ..
 * counters[5]) (in arbitrary order). */
PIOLA_KERNEL void piola_edge_contact_narrow(
    __global const float4 *sv_x, __global const float4 *sv_p, __global const float4 *sv_rest,
    __global const int4 *edges, __global const int4 *tri_edges, __global const int *sv_vertex,
    __global const int *turned, __global const float4 *tri_box, __global const float4 *cluster_box,
    __global const uint4 *body_filter, __global const float *grid, __global const int *bucket_start,
    __global const int *bucket_clusters, int bucket_mask, float thickness, int edge_count,
    __global int *edge_contact_count, __global int *edge_contact_entry, __global int *counters,
    __global int *corner_count, __global int *edge_active, __global const int2 *sv_near,
    __global const ulong2 *sv_near_mask, __global const int *cluster_edge_max,
    __global const int *edge_cluster, __global const int *cluster_pair_count,
    __global const int *cluster_pairs, __global const uchar *edge_convex) {
  const int e = get_global_id(0);
  if (e >= edge_count) {
    return;
  }
  if (!edge_convex[e]) { /* a concave edge has no pairs (piola_edge_convex) */
    edge_contact_count[e] = 0;
    return;
  }
  const int4 ea = edges[e];
  const piola_v3 xa0 = piola_v3_from4(sv_x[ea.x]), xa1 = piola_v3_from4(sv_x[ea.y]);
  const piola_v3 pa0 = piola_v3_from4(sv_p[ea.x]), pa1 = piola_v3_from4(sv_p[ea.y]);
  const float4 ra0 = sv_rest[ea.x], ra1 = sv_rest[ea.y];
  const piola_box box = piola_edge_box(xa0, xa1, pa0, pa1, thickness);
  const int2 n0 = sv_near[ea.x], n1 = sv_near[ea.y]; /* the ends' near windows (skipped) */
  const ulong2 m0 = sv_near_mask[ea.x], m1 = sv_near_mask[ea.y];
  float keys[PIOLA_KE];
  int entries[PIOLA_KE];
  int kept = 0, found = 0;
  const float inv_cell = grid[1], margin = grid[2];
  const piola_box query = piola_grid_vertex(box, margin);
  const int a = edge_cluster[e], listed = cluster_pair_count[a];
  if (listed <= PIOLA_CLUSTER_PAIRS) {
    __global const int *list = cluster_pairs + PIOLA_CLUSTER_PAIRS * a;
    for (int k = 0; k < listed; ++k) {
      piola_edge_narrow_cluster(sv_x, sv_p, sv_rest, edges, tri_edges, sv_vertex, turned, tri_box,
                                cluster_box, body_filter, cluster_edge_max, edge_convex, e, ea, xa0,
                                xa1, pa0, pa1, ra0, ra1, box, n0, m0, n1, m1, thickness, list[k], 0,
                                query, inv_cell, margin, 0, 0, 0, keys, entries, &kept, &found);
    }
  } else {
    int lo[3], hi[3];
    piola_cell_range(query, inv_cell, 3, lo, hi);
    const int walk = !(lo[0] == hi[0] && lo[1] == hi[1] && lo[2] == hi[2]);
    for (int ci = lo[0]; ci <= hi[0]; ++ci) {
      for (int cj = lo[1]; cj <= hi[1]; ++cj) {
        for (int ck = lo[2]; ck <= hi[2]; ++ck) {
          const int bucket = piola_cell_hash(ci, cj, ck, bucket_mask);
          const int end = bucket_start[bucket + 1];
          for (int b = bucket_start[bucket]; b < end; ++b) {
            piola_edge_narrow_cluster(sv_x, sv_p, sv_rest, edges, tri_edges, sv_vertex, turned,
                                      tri_box, cluster_box, body_filter, cluster_edge_max,
                                      edge_convex, e, ea, xa0, xa1, pa0, pa1, ra0, ra1, box, n0, m0,
                                      n1, m1, thickness, bucket_clusters[b], walk, query, inv_cell,
                                      margin, ci, cj, ck, keys, entries, &kept, &found);
          }
        }
      }
    }
  }
  edge_contact_count[e] = kept;
  for (int k = 0; k < kept; ++k) {
    edge_contact_entry[PIOLA_KE * e + k] = entries[k];
    const int4 eb = edges[entries[k] >> 1];
    atomic_inc(&corner_count[ea.x]);
    atomic_inc(&corner_count[ea.y]);
    atomic_inc(&corner_count[eb.x]);
    atomic_inc(&corner_count[eb.y]);
  }
  if (kept > 0) {
    atomic_add(&counters[3], kept);
    edge_active[atomic_inc(&counters[5])] = e;
  }
  if (found > kept) {
    atomic_add(&counters[4], found - kept);
  }
}

/* NARROW_PHASE: the entries (edge_base + 4 slot + member) of the listed edges' contacts
 * scattered into their members' lists of corner entries, after piola_contact_corners (in
 * arbitrary order; piola_contact_sort_corners sorts them). */
PIOLA_KERNEL void piola_edge_contact_corners(__global const int *edge_contact_count,
                                             __global const int *edge_contact_entry,
                                             __global const int4 *edges,
                                             __global const int *corner_start,
                                             __global int *corner_fill, __global int *corner_entry,
                                             int edge_base, __global const int *edge_active,
                                             __global const int *counters) {
  const int listed = counters[5];
  for (int i = get_global_id(0); i < listed; i += get_global_size(0)) {
    const int e = edge_active[i];
    const int4 ea = edges[e];
    for (int k = 0; k < edge_contact_count[e]; ++k) {
      const int slot = PIOLA_KE * e + k;
      const int4 eb = edges[edge_contact_entry[slot] >> 1];
      const int first = edge_base + 4 * slot;
      corner_entry[corner_start[ea.x] + atomic_inc(&corner_fill[ea.x])] = first;
      corner_entry[corner_start[ea.y] + atomic_inc(&corner_fill[ea.y])] = first + 1;
      corner_entry[corner_start[eb.x] + atomic_inc(&corner_fill[eb.x])] = first + 2;
      corner_entry[corner_start[eb.y] + atomic_inc(&corner_fill[eb.y])] = first + 3;
    }
  }
}

/* CONTACT, part 1, edges (between piola_contact_solve and piola_contact_apply): every contact of
 * the listed edges projected from the same positions, as piola_contact_solve_vertex does for a
 * vertex's: measuring, the frame (piola_edge_contact_prepare: n, (s, t), tangent, then depth and
 * removed) and the lengths to the slot's four entries at delta[edge_base + 4 slot]; projecting,
 * the frame from there and the corrections with the split masses (piola_edge_contact_respond). */
PIOLA_KERNEL void piola_edge_contact_solve(
    __global const float4 *x, __global const float4 *d, __global const int *sv_vertex,
    __global const int4 *edges, __global const int *edge_contact_count,
    __global const int *edge_contact_entry, __global const float *mass_split, int measure,
    float thickness, float friction, __global float4 *delta, int edge_base,
    __global const int *edge_active, __global const int *counters) {
  const int listed = counters[5];
  for (int i = get_global_id(0); i < listed; i += get_global_size(0)) {
    const int e = edge_active[i];
    const int4 ea = edges[e];
    for (int k = 0; k < edge_contact_count[e]; ++k) {
      const int slot = PIOLA_KE * e + k;
      const int entry = edge_contact_entry[slot];
      const int4 eb = edges[entry >> 1];
      const int m[4] = {ea.x, ea.y, eb.x, eb.y};
      float4 xv[4];
      float wv[4];
      for (int j = 0; j < 4; ++j) {
        xv[j] = x[sv_vertex[m[j]]];
        wv[j] = measure ? xv[j].w : xv[j].w * mass_split[m[j]];
      }
      __global float4 *out = delta + edge_base + 4 * slot;
      piola_contact_frame_data f;
      if (measure) {
        piola_edge_contact_prepare(
            piola_v3_from4(xv[0]), piola_v3_from4(xv[1]), piola_v3_from4(xv[2]),
            piola_v3_from4(xv[3]), piola_position(xv[0], d[sv_vertex[m[0]]]),
            piola_position(xv[1], d[sv_vertex[m[1]]]), piola_position(xv[2], d[sv_vertex[m[2]]]),
            piola_position(xv[3], d[sv_vertex[m[3]]]), entry & 1, thickness, friction, &f);
      } else {
        const float4 f0 = out[0], f1 = out[1], f2 = out[2], f3 = out[3];
        f.n = piola_v3_from4(f0);
        f.b = piola_v3_from4(f1);
        f.tangent = piola_v3_from4(f2);
        f.depth = f3.x;
        f.removed = f3.y;
      }
      piola_v3 dx[4];
      float length[4];
      piola_edge_contact_respond(&f, wv[0], wv[1], wv[2], wv[3], dx, length);
      if (measure) {
        out[0] = (float4)(f.n.x, f.n.y, f.n.z, length[0]);
        out[1] = (float4)(f.b.x, f.b.y, f.b.z, length[1]);
        out[2] = (float4)(f.tangent.x, f.tangent.y, f.tangent.z, length[2]);
        out[3] = (float4)(f.depth, f.removed, 0.0f, length[3]);
      } else {
        for (int j = 0; j < 4; ++j) {
          out[j] = (float4)(dx[j].x, dx[j].y, dx[j].z, length[j]);
        }
      }
    }
  }
}
