/* Piola OpenCL 1.2 contact kernels: the broad phase, narrow phase and contact solve of
 * kernels/piola_contact.h on the device, once per substep (detection) and once per iteration
 * (solve). Follows piola_step.cl in the program (it uses its helpers and PIOLA_KERNEL).
 *
 * Surface vertices ("sv") index sv_vertex (their vertex) and sv_body (their body); triangles
 * are int4 (three surface-vertex indices, body). The grid is a counting sort of (triangle,
 * cell) entries by the hash bucket of the cell, for every cell a triangle's box overlaps:
 * counts with integer atomics, an exclusive scan, a scatter with integer atomics. The order
 * within a bucket varies from run to run, but a vertex keeps its nearest triangles with ties
 * broken by index, so the contacts found do not depend on it. The per-vertex lists of
 * triangle-corner entries are scattered the same way and then sorted, so that every vertex sums its
 * corrections in the same order on every run and every device: no floating-point atomics anywhere.
 *
 * Scan: piola_scan_blocks (each work-group scans PIOLA_SCAN_ITEMS * PIOLA_WG entries and
 * writes its total), piola_scan_totals (one work-group scans the totals), piola_scan_add.
 */
#ifndef PIOLA_EMBEDDED
#include "piola_contact.h"
#endif

#define PIOLA_SCAN_ITEMS 16
/* Bucket entries a vertex tests per chunk in the narrow phase. */
#define PIOLA_SCAN_CHUNK 32
#define PIOLA_K PIOLA_CONTACTS_PER_VERTEX

PIOLA_FN piola_box piola_box_from4(float4 lo, float4 hi) {
  piola_box r;
  r.lo = piola_v3_from4(lo);
  r.hi = piola_v3_from4(hi);
  return r;
}

PIOLA_FN piola_box piola_load_box(__global const float4 *boxes, int t) {
  return piola_box_from4(boxes[2 * t], boxes[2 * t + 1]);
}

/* The largest of the work-group's values a[0 .. PIOLA_WG) into a[0]; any work-group size. */
PIOLA_FN void piola_local_max(__local float *a, int lid) {
  for (int s = 1; s < PIOLA_WG; s <<= 1) {
    if (lid % (2 * s) == 0 && lid + s < PIOLA_WG) {
      a[lid] = fmax(a[lid], a[lid + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* A partial maximum of the boxes' kernels to partial[2 m + slot]: with `group_maxima` that of
 * the work-group (m its index; GPUs, a box per work-item), else the work-item's own (m its global
 * index; CPU devices, many boxes per work-item, where a reduction within the work-group, a
 * barrier per halving, cost more than the boxes). */
PIOLA_FN void piola_partial_max(float value, int group_maxima, int slot, __local float *scratch,
                                __global float *partial) {
  if (group_maxima) {
    const int lid = get_local_id(0);
    scratch[lid] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    piola_local_max(scratch, lid);
    if (lid == 0) {
      partial[2 * get_group_id(0) + slot] = scratch[0];
    }
  } else {
    partial[2 * get_global_id(0) + slot] = value;
  }
}

/* The items work-item g of G takes of n, as [*first, *end) by *step: on GPUs (`strided`) g, g + G,
 * ..., so that neighbouring work-items read neighbouring items at once; on CPU devices a block
 * of consecutive items, since a core runs a work-item's loop whole and reads its items in order
 * (strided there, the boxes take longer: bench/LOG.md). */
PIOLA_FN void piola_item_range(int n, int strided, int *first, int *end, int *step) {
  const int g = get_global_id(0), count = get_global_size(0);
  if (strided) {
    *first = g;
    *end = n;
    *step = count;
  } else {
    const int per = (n + count - 1) / count;
    *first = min(n, g * per);
    *end = min(n, *first + per);
    *step = 1;
  }
}

/* BROAD_PHASE, first: the start and predicted positions of the work-item's surface vertices
 * (piola_item_range) to sv_x (with the inverse mass in w) and sv_p, in the surface's order, so
 * that the boxes and the narrow phase read them from there; the largest vertex box to
 * partial[2 m + 1] (piola_partial_max). */
PIOLA_KERNEL void piola_contact_vertices(__global const float4 *x, __global const float4 *d,
                                         __global const int *sv_vertex, float thickness,
                                         int sv_count, int group_maxima, __global float4 *sv_x,
                                         __global float4 *sv_p, __global float *partial) {
  __local float scratch[PIOLA_WG];
  float ve = 0.0f;
  int first, end, step;
  piola_item_range(sv_count, group_maxima, &first, &end, &step);
  for (int i = first; i < end; i += step) {
    const int v = sv_vertex[i];
    const float4 xv = x[v];
    const piola_v3 p = piola_position(xv, d[v]);
    sv_x[i] = xv;
    sv_p[i] = (float4)(p.x, p.y, p.z, 0.0f);
    ve = fmax(ve, piola_box_extent(piola_vertex_box(piola_v3_from4(xv), p, thickness)));
  }
  piola_partial_max(ve, group_maxima, 1, scratch, partial);
}

/* BROAD_PHASE, next: the boxes of the work-item's clusters (piola_item_range) and of their
 * triangles, from sv_x and sv_p; the largest cluster box to partial[2 m] (piola_partial_max).
 * A cluster's box carries its first and end triangle in its fourth floats. */
PIOLA_KERNEL void piola_contact_boxes(__global const float4 *sv_x, __global const float4 *sv_p,
                                      __global const int4 *triangles,
                                      __global const int *cluster_first, float thickness,
                                      int cluster_count, int group_maxima, __global float4 *tri_box,
                                      __global float4 *cluster_box, __global float *partial) {
  __local float scratch[PIOLA_WG];
  float te = 0.0f;
  int from, to, step;
  piola_item_range(cluster_count, group_maxima, &from, &to, &step);
  for (int i = from; i < to; i += step) {
    const int first = cluster_first[i], end = cluster_first[i + 1];
    piola_box u = {piola_v3_make(0.0f, 0.0f, 0.0f),
                   piola_v3_make(0.0f, 0.0f, 0.0f)}; /* set at t = first */
    for (int t = first; t < end; ++t) {
      const int4 q = triangles[t];
      piola_box r =
          piola_triangle_box(piola_v3_from4(sv_x[q.x]), piola_v3_from4(sv_x[q.y]),
                             piola_v3_from4(sv_x[q.z]), piola_v3_from4(sv_p[q.x]),
                             piola_v3_from4(sv_p[q.y]), piola_v3_from4(sv_p[q.z]), thickness);
      tri_box[2 * t] = (float4)(r.lo.x, r.lo.y, r.lo.z, 0.0f);
      tri_box[2 * t + 1] = (float4)(r.hi.x, r.hi.y, r.hi.z, 0.0f);
      u = t == first ? r : piola_box_union(u, r);
    }
    cluster_box[2 * i] = (float4)(u.lo.x, u.lo.y, u.lo.z, as_float(first));
    cluster_box[2 * i + 1] = (float4)(u.hi.x, u.hi.y, u.hi.z, as_float(end));
    te = fmax(te, piola_box_extent(u));
  }
  piola_partial_max(te, group_maxima, 0, scratch, partial);
}

/* BROAD_PHASE (one work-group): the cell size and the grid's margin from the
 * `partial_count` partial maxima (max is exact in any order): grid[0] = cell,
 * grid[1] = 1 / cell, grid[2] = margin. */
PIOLA_KERNEL void piola_contact_grid(__global const float *partial, int partial_count,
                                     float thickness, __global float *grid) {
  __local float cluster_max[PIOLA_WG], vertex_max[PIOLA_WG];
  const int lid = get_local_id(0);
  float te = 0.0f, ve = 0.0f;
  for (int g = lid; g < partial_count; g += PIOLA_WG) {
    te = fmax(te, partial[2 * g]);
    ve = fmax(ve, partial[2 * g + 1]);
  }
  cluster_max[lid] = te;
  vertex_max[lid] = ve;
  barrier(CLK_LOCAL_MEM_FENCE);
  piola_local_max(cluster_max, lid);
  piola_local_max(vertex_max, lid);
  if (lid == 0) {
    float cell = piola_cell_size(cluster_max[0], vertex_max[0], thickness);
    grid[0] = cell;
    grid[1] = 1.0f / cell;
    grid[2] = piola_grid_margin(vertex_max[0], thickness);
  }
}

/* BROAD_PHASE: cluster i counted in each bucket of the cells its grown box overlaps (pass 0),
 * or entered there (pass 1, in arbitrary order within a bucket). */
PIOLA_KERNEL void piola_contact_enter(__global const float4 *cluster_box,
                                      __global const float *grid, int bucket_mask,
                                      int cluster_count, int pass, __global const int *bucket_start,
                                      __global int *bucket_count, __global int *bucket_clusters) {
  const int i = get_global_id(0);
  if (i >= cluster_count) {
    return;
  }
  int bucket[PIOLA_CELLS_PER_CLUSTER];
  const int n =
      piola_cluster_buckets(piola_load_box(cluster_box, i), grid[2], grid[1], bucket_mask, bucket);
  for (int e = 0; e < n; ++e) {
    if (pass == 0) {
      atomic_inc(&bucket_count[bucket[e]]);
    } else {
      bucket_clusters[bucket_start[bucket[e]] + atomic_inc(&bucket_count[bucket[e]])] = i;
    }
  }
}

/* Inclusive scan of sums[0 .. PIOLA_WG) in place (Hillis and Steele), every work-item of the
 * group taking part; the barriers before and after make sums[] safe to write and to read. */
PIOLA_FN void piola_local_scan(__local int *sums, int lid) {
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = 1; s < PIOLA_WG; s <<= 1) {
    int add = lid >= s ? sums[lid - s] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    sums[lid] += add;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* Exclusive scan, part 1: out[i] = sum of in[j] for j < i within the work-group's block of
 * PIOLA_SCAN_ITEMS * PIOLA_WG entries; the block's total to totals[group]. */
PIOLA_KERNEL void piola_scan_blocks(__global const int *in, __global int *out, __global int *totals,
                                    int n) {
  __local int sums[PIOLA_WG];
  const int lid = get_local_id(0);
  const int base = get_group_id(0) * PIOLA_WG * PIOLA_SCAN_ITEMS + lid * PIOLA_SCAN_ITEMS;
  int own[PIOLA_SCAN_ITEMS];
  int sum = 0;
  for (int k = 0; k < PIOLA_SCAN_ITEMS; ++k) {
    own[k] = base + k < n ? in[base + k] : 0;
    sum += own[k];
  }
  sums[lid] = sum;
  piola_local_scan(sums, lid);
  int running = sums[lid] - sum;
  for (int k = 0; k < PIOLA_SCAN_ITEMS; ++k) {
    if (base + k < n) {
      out[base + k] = running;
    }
    running += own[k];
  }
  if (lid == PIOLA_WG - 1) {
    totals[get_group_id(0)] = sums[lid];
  }
}

/* Exclusive scan, part 2 (one work-group): the block totals scanned in place, chunk by chunk;
 * the grand total goes to out[n]. */
PIOLA_KERNEL void piola_scan_totals(__global int *totals, int block_count, __global int *out,
                                    int n) {
  __local int sums[PIOLA_WG];
  const int lid = get_local_id(0);
  int carry = 0;
  for (int base = 0; base < block_count; base += PIOLA_WG) {
    int own = base + lid < block_count ? totals[base + lid] : 0;
    sums[lid] = own;
    piola_local_scan(sums, lid);
    if (base + lid < block_count) {
      totals[base + lid] = carry + sums[lid] - own;
    }
    carry += sums[PIOLA_WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    out[n] = carry;
  }
}

/* Exclusive scan, part 3: each block's offset added to its entries. */
PIOLA_KERNEL void piola_scan_add(__global int *out, __global const int *totals, int n) {
  const int i = get_global_id(0);
  if (i < n) {
    out[i] += totals[i / (PIOLA_WG * PIOLA_SCAN_ITEMS)];
  }
}

/* NARROW_PHASE, first (in the first substep of a step, where a body collides with itself): tet
 * t of tet_count, whose corners start the substep at x, marks its corners in turned (zeroed
 * before) where it is turned over (piola_tet_inverted). The narrow phase of the step's substeps
 * releases a body's pairs with itself at marked vertices (piola_contact_self_untangled). Only a
 * turned tet writes; the marks are the same in any order. */
PIOLA_KERNEL void piola_contact_mark_inverted(__global const float4 *x, __global const int4 *tets,
                                              int tet_count, __global int *turned) {
  const int t = get_global_id(0);
  if (t >= tet_count) {
    return;
  }
  const int4 q = tets[t];
  if (piola_tet_inverted(piola_v3_from4(x[q.x]), piola_v3_from4(x[q.y]), piola_v3_from4(x[q.z]),
                         piola_v3_from4(x[q.w]))) {
    atomic_or(&turned[q.x], 1);
    atomic_or(&turned[q.y], 1);
    atomic_or(&turned[q.z], 1);
    atomic_or(&turned[q.w], 1);
  }
}

/* NARROW_PHASE, one pair: surface vertex sv (of body `body`; its rest position and reach in
 * rest, its start and predicted positions xs and p) against triangle t, whose boxes overlap:
 * if the bodies' filters and the self-contact rules allow the pair (for a pair of one body,
 * piola_contact_self_allowed and piola_contact_self_untangled, from the marks in turned, per
 * vertex, of piola_contact_mark_inverted) and it is a contact (piola_contact_candidate), it is
 * counted in *found and kept among the vertex's nearest. */
PIOLA_FN void piola_narrow_pair(__global const float4 *sv_x, __global const float4 *sv_p,
                                __global const float4 *sv_rest, __global const int4 *triangles,
                                __global const int *sv_vertex, __global const int *turned,
                                __global const uint4 *body_filter, int sv, int body, float4 rest,
                                piola_v3 xs, piola_v3 p, float thickness, const int *previous,
                                int previous_n, int t, float *keys, int *tris, int *kept,
                                int *found) {
  const int4 q = triangles[t]; /* corners as surface vertices, body */
  const uint4 own = body_filter[body];
  if (q.w != body) {
    const uint4 other = body_filter[q.w];
    if (!piola_contact_bodies_collide(own.x, own.y, other.x, other.y)) {
      return;
    }
  } else if (own.z == 0u || q.x == sv || q.y == sv || q.z == sv ||
             piola_contact_self_near(piola_v3_from4(rest), piola_v3_from4(sv_rest[q.x]),
                                     piola_v3_from4(sv_rest[q.y]), piola_v3_from4(sv_rest[q.z]),
                                     rest.w, thickness)) {
    return;
  }
  const int a = q.x;
  int b = q.y, c = q.z;
  int persistent;
  const int side = piola_contact_side(xs, piola_v3_from4(sv_x[a]), piola_v3_from4(sv_x[b]),
                                      piola_v3_from4(sv_x[c]), previous, previous_n, t,
                                      body_filter[q.w].w != 0u, &persistent);
  if (side) { /* met from the back: corners b and c swapped */
    const int swap_corner = b;
    b = c;
    c = swap_corner;
  }
  float key;
  if (piola_contact_candidate(xs, p, piola_v3_from4(sv_x[a]), piola_v3_from4(sv_x[b]),
                              piola_v3_from4(sv_x[c]), piola_v3_from4(sv_p[a]),
                              piola_v3_from4(sv_p[b]), piola_v3_from4(sv_p[c]), thickness,
                              persistent, q.w == body, &key) &&
      (q.w != body ||
       (piola_contact_self_allowed(piola_v3_from4(rest), piola_v3_from4(sv_rest[q.x]),
                                   piola_v3_from4(sv_rest[q.y]), piola_v3_from4(sv_rest[q.z]),
                                   rest.w, thickness) &&
        piola_contact_self_untangled(turned[sv_vertex[sv]], turned[sv_vertex[q.x]],
                                     turned[sv_vertex[q.y]], turned[sv_vertex[q.z]])))) {
    (*found)++;
    piola_contact_keep(keys, tris, kept, key, piola_contact_entry(t, side));
  }
}

/* NARROW_PHASE: surface vertex sv keeps its nearest triangles (piola_contact_candidate; the
 * previous substep's list tells which pairs persist), the positions read from sv_x and sv_p
 * (piola_contact_vertices); the kept and dropped counts go to counters[0], [1]; each kept
 * triangle's corners are counted in corner_count. */
PIOLA_KERNEL void piola_contact_narrow(
    __global const float4 *sv_x, __global const float4 *sv_p, __global const int *sv_body,
    __global const float4 *sv_rest, __global const int4 *triangles, __global const int *sv_vertex,
    __global const int *turned, __global const float4 *tri_box, __global const float4 *cluster_box,
    __global const uint4 *body_filter, __global const float *grid, __global const int *bucket_start,
    __global const int *bucket_clusters, int bucket_mask, float thickness, int sv_count,
    __global const int *previous_count, __global const int *previous_tri,
    __global int *contact_count, __global int *contact_tri, __global int *counters,
    __global int *corner_count, __global const int2 *sv_near, __global const ulong2 *sv_near_mask) {
  const int sv = get_global_id(0);
  if (sv >= sv_count) {
    return;
  }
  const int body = sv_body[sv];
  const piola_v3 xs = piola_v3_from4(sv_x[sv]), p = piola_v3_from4(sv_p[sv]);
  const piola_box vb = piola_vertex_box(xs, p, thickness);
  const float4 rest = sv_rest[sv];
  const int2 near = sv_near[sv]; /* its near windows (skipped) */
  const ulong2 near_mask = sv_near_mask[sv];
  int previous[PIOLA_K];
  const int previous_n = previous_count[sv];
  for (int k = 0; k < previous_n; ++k) {
    previous[k] = previous_tri[PIOLA_K * sv + k];
  }
  float keys[PIOLA_K];
  int tris[PIOLA_K];
  int kept = 0, found = 0;
  const float inv_cell = grid[1], margin = grid[2];
  const piola_box query = piola_grid_vertex(vb, margin);
  int lo[3], hi[3];
  piola_cell_range(query, inv_cell, 3, lo, hi);
  const int one_cell = lo[0] == hi[0] && lo[1] == hi[1] && lo[2] == hi[2];
  for (int ci = lo[0]; ci <= hi[0]; ++ci) {
    for (int cj = lo[1]; cj <= hi[1]; ++cj) {
      for (int ck = lo[2]; ck <= hi[2]; ++ck) {
        const int bucket = piola_cell_hash(ci, cj, ck, bucket_mask);
        const int end = bucket_start[bucket + 1];
        for (int chunk = bucket_start[bucket]; chunk < end; chunk += PIOLA_SCAN_CHUNK) {
          /* The chunk's clusters whose boxes overlap the vertex's, gathered without branches
           * (a branch per entry mispredicted often enough to take a third of the kernel's time
           * on CPUs), skipping those wholly near it (piola_contact_near_cluster). */
          int overlapping[PIOLA_SCAN_CHUNK];
          int n = 0;
          for (int e = chunk; e < min(chunk + PIOLA_SCAN_CHUNK, end); ++e) {
            const int i = bucket_clusters[e];
            const float4 lo = cluster_box[2 * i], hi = cluster_box[2 * i + 1];
            overlapping[n] = i;
            n += piola_boxes_overlap(vb, piola_box_from4(lo, hi)) &
                 !piola_contact_near_cluster(as_int(lo.w), as_int(hi.w) - as_int(lo.w), near.x,
                                             near_mask.x, near.y, near_mask.y);
          }
          /* Their triangles whose boxes overlap the vertex's, again without branches. */
          int candidates[PIOLA_SCAN_CHUNK * PIOLA_CLUSTER_TRIANGLES];
          int m = 0;
          for (int o = 0; o < n; ++o) {
            const int i = overlapping[o];
            if (!one_cell &&
                !piola_pair_cell(query, piola_grid_cluster(piola_load_box(cluster_box, i), margin),
                                 inv_cell, ci, cj, ck)) {
              continue;
            }
            const int cluster_end = as_int(cluster_box[2 * i + 1].w);
            for (int t = as_int(cluster_box[2 * i].w); t < cluster_end; ++t) {
              candidates[m] = t;
              m += piola_boxes_overlap(vb, piola_load_box(tri_box, t)) &
                   !piola_contact_near(t, near.x, near_mask.x, near.y, near_mask.y);
            }
          }
          for (int o = 0; o < m; ++o) {
            piola_narrow_pair(sv_x, sv_p, sv_rest, triangles, sv_vertex, turned, body_filter, sv,
                              body, rest, xs, p, thickness, previous, previous_n, candidates[o],
                              keys, tris, &kept, &found);
          }
        }
      }
    }
  }
  contact_count[sv] = kept;
  for (int k = 0; k < kept; ++k) {
    contact_tri[PIOLA_K * sv + k] = tris[k];
    int4 q = triangles[piola_contact_entry_triangle(tris[k])];
    atomic_inc(&corner_count[q.x]);
    atomic_inc(&corner_count[q.y]);
    atomic_inc(&corner_count[q.z]);
  }
  if (kept > 0) {
    atomic_add(&counters[0], kept);
  }
  if (found > kept) {
    atomic_add(&counters[1], found - kept);
  }
}

/* NARROW_PHASE: the entries (4 slot + 1 + corner) naming each surface vertex as a triangle's
 * corner, scattered into its list (in arbitrary order; sorted next). */
PIOLA_KERNEL void piola_contact_corners(__global const int *contact_count,
                                        __global const int *contact_tri,
                                        __global const int4 *triangles,
                                        __global const int *corner_start, __global int *corner_fill,
                                        __global int *corner_entry, int sv_count) {
  const int sv = get_global_id(0);
  if (sv >= sv_count) {
    return;
  }
  for (int k = 0; k < contact_count[sv]; ++k) {
    const int slot = PIOLA_K * sv + k;
    int4 q = triangles[piola_contact_entry_triangle(contact_tri[slot])];
    corner_entry[corner_start[q.x] + atomic_inc(&corner_fill[q.x])] = 4 * slot + 1;
    corner_entry[corner_start[q.y] + atomic_inc(&corner_fill[q.y])] = 4 * slot + 2;
    corner_entry[corner_start[q.z] + atomic_inc(&corner_fill[q.z])] = 4 * slot + 3;
  }
}

/* NARROW_PHASE: each vertex's corner list sorted ascending (insertion sort: lists are short),
 * which fixes the order of its sum; and the vertices with contacts or corner entries listed in
 * active[0 .. counters[2]) for the contact solve, in arbitrary order (each one's sums do not
 * depend on it). */
PIOLA_KERNEL void piola_contact_sort_corners(__global const int *contact_count,
                                             __global const int *corner_start,
                                             __global int *corner_entry, __global int *counters,
                                             __global int *active, int sv_count) {
  const int sv = get_global_id(0);
  if (sv >= sv_count) {
    return;
  }
  const int first = corner_start[sv], end = corner_start[sv + 1];
  for (int i = first + 1; i < end; ++i) {
    int e = corner_entry[i];
    int j = i;
    while (j > first && corner_entry[j - 1] > e) {
      corner_entry[j] = corner_entry[j - 1];
      --j;
    }
    corner_entry[j] = e;
  }
  if (end > first || contact_count[sv] > 0) {
    active[atomic_inc(&counters[2])] = sv;
  }
}

/* Whether a triangle at the edge or corner of the contact `entry`'s triangle (stored corners q;
 * corners pa, pb, pc as the contact sees them, unit normal n) beside which p lies under its plane
 * (edges, from piola_contact_prepare) releases the contact (piola_contact_neighbour_releases): at
 * an edge, the neighbour across it, wound alike (none at an open border or where more than one
 * triangle shares the edge); at a corner, every other triangle of the corner's ring. As
 * beside_released in src/host/contact.c. */
PIOLA_FN int piola_contact_beside_released(__global const float4 *x, __global const float4 *d,
                                           __global const int *sv_vertex,
                                           __global const int4 *triangles, int4 q,
                                           __global const int *ring_start, __global const int *ring,
                                           int entry, piola_v3 p, piola_v3 n, piola_v3 pa,
                                           piola_v3 pb, piola_v3 pc, int edges) {
  const int t = piola_contact_entry_triangle(entry);
  const int side = piola_contact_entry_side(entry);
  const int stored[3] = {q.x, q.y, q.z};
  const piola_v3 corner[3] = {pa, pb, pc};
  const int k = piola_contact_beside_corner(edges);
  /* at an edge from corner e to corner e + 1, the ring of its end e + 1 */
  const int e = edges == 1 ? 0 : edges == 2 ? 1 : 2;
  const int at = k >= 0 ? k : (e + 1) % 3;
  const int s = stored[piola_contact_stored_corner(at, side)];
  const int s0 = stored[piola_contact_stored_corner(e, side)];
  int found = 0, o = -1, released = 0;
  for (int i = ring_start[s]; i < ring_start[s + 1]; ++i) {
    const int u = ring[i];
    if (u == t) {
      continue; /* the contact's own triangle */
    }
    const int4 qu = triangles[u];
    int r1, r2;
    piola_contact_ring_corners(qu.x, qu.y, qu.z, s, side, &r1, &r2);
    if (k >= 0) {
      if (!released) {
        const int v1 = sv_vertex[r1], v2 = sv_vertex[r2];
        released = piola_contact_neighbour_releases(p, n, corner[k], piola_position(x[v1], d[v1]),
                                                    piola_position(x[v2], d[v2]));
      }
    } else if (r1 == s0) { /* the edge runs from its end e + 1 to e in the neighbour */
      found++;
      o = r2;
    }
  }
  if (k < 0 && found == 1) {
    const int vo = sv_vertex[o];
    released =
        piola_contact_neighbour_releases(p, n, corner[at], corner[e], piola_position(x[vo], d[vo]));
  }
  return released;
}

/* CONTACT, part 1: every contact of surface vertex sv projected from the same positions; its
 * four corrections and their lengths (piola_contact_project) to delta[4 slot + corner]. With
 * `measure` the members' masses are whole (the measuring pass), else split by mass_split.
 * Measuring, the contact's frame (piola_contact_prepare) goes to the slot's first three floats
 * instead of the corrections, which the measuring pass's gather does not read: n, b, tangent,
 * then depth and removed; the projecting pass, from the same positions, takes the frame from
 * there and only applies the split masses (piola_contact_respond). */
PIOLA_FN void piola_contact_solve_vertex(
    __global const float4 *x, __global const float4 *d, __global const int *sv_vertex,
    __global const int4 *triangles, __global const int *ring_start, __global const int *ring,
    int count, __global const int *contact_tri, __global const float *mass_split, int measure,
    float thickness, float friction, __global float4 *delta, int sv) {
  const int v = sv_vertex[sv];
  const float4 xv = x[v];
  const float wv = measure ? xv.w : xv.w * mass_split[sv];
  for (int k = 0; k < count; ++k) {
    const int slot = PIOLA_K * sv + k;
    const int entry = contact_tri[slot];
    const int4 q = triangles[piola_contact_entry_triangle(entry)];
    const int side = piola_contact_entry_side(entry);
    const int sa = q.x, sb = side ? q.z : q.y, sc = side ? q.y : q.z;
    const int a = sv_vertex[sa], b = sv_vertex[sb], c = sv_vertex[sc];
    const float4 xa = x[a], xb = x[b], xc = x[c];
    const float wa = measure ? xa.w : xa.w * mass_split[sa];
    const float wb = measure ? xb.w : xb.w * mass_split[sb];
    const float wc = measure ? xc.w : xc.w * mass_split[sc];
    __global float4 *out = delta + 4 * slot;
    piola_contact_frame_data f;
    if (measure) {
      const piola_v3 p = piola_position(xv, d[v]), pa = piola_position(xa, d[a]),
                     pb = piola_position(xb, d[b]), pc = piola_position(xc, d[c]);
      const int edges =
          piola_contact_prepare(piola_v3_from4(xv), p, piola_v3_from4(xa), piola_v3_from4(xb),
                                piola_v3_from4(xc), pa, pb, pc, thickness, friction, &f);
      if (edges != 0 && piola_contact_beside_released(x, d, sv_vertex, triangles, q, ring_start,
                                                      ring, entry, p, f.n, pa, pb, pc, edges)) {
        piola_contact_release(&f);
      }
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
    piola_contact_respond(&f, wv, wa, wb, wc, dx, length);
    if (side) {
      piola_contact_unswap(dx, length);
    }
    if (measure) {
      out[0] = (float4)(f.n.x, f.n.y, f.n.z, length[0]);
      out[1] = (float4)(f.b.x, f.b.y, f.b.z, length[1]);
      out[2] = (float4)(f.tangent.x, f.tangent.y, f.tangent.z, length[2]);
      out[3] = (float4)(f.depth, f.removed, 0.0f, length[3]);
    } else {
      for (int corner = 0; corner < 4; ++corner) {
        out[corner] = (float4)(dx[corner].x, dx[corner].y, dx[corner].z, length[corner]);
      }
    }
  }
}

/* CONTACT, part 1, for the listed vertices (active[0 .. counters[2]), strided over the
 * work-items: one each on GPUs, many each on CPU devices, where most surface vertices have no
 * contact and a work-item for each cost more than the contacts (opencl_runtime.c,
 * piola_ocl_stride_items). */
PIOLA_KERNEL void piola_contact_solve(__global const float4 *x, __global const float4 *d,
                                      __global const int *sv_vertex, __global const int4 *triangles,
                                      __global const int *contact_count,
                                      __global const int *contact_tri,
                                      __global const float *mass_split, int measure,
                                      float thickness, float friction, __global float4 *delta,
                                      __global const int *active, __global const int *counters,
                                      __global const int *ring_start, __global const int *ring) {
  const int listed = counters[2];
  for (int i = get_global_id(0); i < listed; i += get_global_size(0)) {
    const int sv = active[i];
    const int count = contact_count[sv];
    if (count > 0) {
      piola_contact_solve_vertex(x, d, sv_vertex, triangles, ring_start, ring, count, contact_tri,
                                 mass_split, measure, thickness, friction, delta, sv);
    }
  }
}

/* CONTACT, part 2, for the listed vertices as part 1: surface vertex sv sums its own slots, then
 * its corner entries in ascending order; measuring, it records its mass split
 * (piola_contact_split), else it moves by the sum over its split. */
PIOLA_KERNEL void piola_contact_apply(__global float4 *d, __global const int *sv_vertex,
                                      __global const int *contact_count,
                                      __global const int *corner_start,
                                      __global const int *corner_entry,
                                      __global const float4 *delta, __global float *mass_split,
                                      int measure, __global const int *active,
                                      __global const int *counters) {
  const int listed = counters[2];
  for (int i = get_global_id(0); i < listed; i += get_global_size(0)) {
    const int sv = active[i];
    float4 sum = (float4)(0.0f); /* corrections, lengths */
    float sum_length2 = 0.0f;
    for (int k = 0; k < contact_count[sv]; ++k) {
      const float4 o = delta[4 * (PIOLA_K * sv + k)];
      sum += o;
      sum_length2 += o.w * o.w;
    }
    for (int e = corner_start[sv]; e < corner_start[sv + 1]; ++e) {
      const float4 o = delta[corner_entry[e]];
      sum += o;
      sum_length2 += o.w * o.w;
    }
    if (measure) {
      mass_split[sv] = piola_contact_split(sum.w, sum_length2);
    } else if (sum.w > 0.0f) {
      int v = sv_vertex[sv];
      float s = 1.0f / mass_split[sv];
      d[v] = piola_displace(d[v], piola_v3_make(s * sum.x, s * sum.y, s * sum.z));
    }
  }
}
