/* Piola OpenCL 1.2 kernels of vertex block descent (Chen, Liu, Yang, Yuksel 2024, "Vertex
 * Block Descent"; src/host/vbd.c describes the method): the start of a substep's iterations
 * (the inertia target and the initial guess) and the SOLVE_VERTICES pass of one vertex color.
 * Follows piola_step.cl in the program (it uses its helpers and PIOLA_KERNEL).
 *
 * One work-item per vertex of the color: it gathers its elements from its list (start[i] ..
 * start[i + 1] of `elements`, in the order of the CPU reference), sums their gradient and
 * Hessian blocks (kernels/piola_tet.h), with the material damping's where a material has it
 * (piola_tet_damping_block), in that order, takes the Newton step and writes its own
 * displacement only. On CPU devices the tets' blocks of a color are evaluated before, in SIMD
 * lanes (piola_vbd_tet_blocks, kernels/piola_packet.cl), and the vertex sums them from there. The
 * vertices of a color share no element, so no work-item reads what another writes: no atomics, and
 * the result is the same on every run.
 */
#ifndef PIOLA_EMBEDDED
#include "piola_cloth.h"
#include "piola_tet.h"
#endif

/* Element entries (src/host/vbd.h): (element << 4) | (kind << 2) | corner. */
#define PIOLA_VBD_KIND_TET 0
#define PIOLA_VBD_KIND_TRIANGLE 1

/* The start of a substep's iterations, per vertex, after PREDICT (which left the inertia target
 * y - x = h v + h^2 (g + f / m) in d0 and in d): v_t = v - h (g + f / m) the velocity at
 * the start of the substep, kept in v_last; with `adaptive`, the initial guess keeps of
 * gravity only the part along the vertex's last acceleration (v_t - v_last) / h, clamped to
 * [0, |g|] (the paper's adaptive initialization; have_last: v_last holds the last substep's
 * velocity; without it, the whole of gravity, as src/host/vbd.c). */
PIOLA_KERNEL void piola_vbd_begin(__global const float4 *x, __global const float4 *v,
                                  __global float4 *d, __global float4 *v_last,
                                  __global const float4 *f, int has_forces, float4 gravity, float h,
                                  int have_last, int adaptive, int count) {
  const int i = get_global_id(0);
  if (i >= count) {
    return;
  }
  const float4 xi = x[i];
  float4 di = d[i];
  if (!(xi.w > 0.0f)) {
    return;
  }
  float4 accel = gravity;
  if (has_forces) {
    accel += xi.w * f[i];
  }
  const float4 vt = v[i] - h * accel;
  const piola_real g_norm =
      sqrt(gravity.x * gravity.x + gravity.y * gravity.y + gravity.z * gravity.z);
  if (adaptive && g_norm > 0.0f) {
    piola_real a_dot = 0.0f;
    if (have_last) {
      const float4 dv = vt - v_last[i];
      a_dot = (dv.x * gravity.x + dv.y * gravity.y + dv.z * gravity.z) / (h * g_norm);
    }
    const piola_real a = have_last ? fmin(fmax(a_dot, 0.0f), g_norm) : g_norm;
    const piola_real s = h * h * (g_norm - a) / g_norm;
    di.x -= s * gravity.x;
    di.y -= s * gravity.y;
    di.z -= s * gravity.z;
    d[i] = di;
  }
  v_last[i] = vt;
}

/* The arguments of a vertex's Newton step, shared by the kernels below (see piola_vbd_color). */
#define PIOLA_VBD_STEP_PARAMS                                                                      \
  __global const float4 *x, __global float4 *d, __global const float4 *y0,                         \
      __global const int4 *tets, __global const float *tet_m, __global const float *tet_volume,    \
      __global const int *tet_material, __constant piola_material_data *materials, int stride,     \
      __global const int *vertices, __global const int *start, __global const int *elements,       \
      __global const float4 *support, __global const int4 *tris, __global const float4 *tri_dm,    \
      __global const float *tri_area, __global const int4 *bends, __global const float4 *bend_k,   \
      __global const float2 *bend_q, __global const int *bend_material,                            \
      __constant piola_cloth_material_data *cloth_materials, __global const int *attach_start,     \
      __global const int *attach_vertex, __global const float4 *attach_targets, int attached
#define PIOLA_VBD_STEP_ARGS                                                                        \
  x, d, y0, tets, tet_m, tet_volume, tet_material, materials, stride, vertices, start, elements,   \
      support, tris, tri_dm, tri_area, bends, bend_k, bend_q, bend_material, cloth_materials,      \
      attach_start, attach_vertex, attach_targets, attached

/* Tet t's part of the block of its vertex `corner`, times the material's stiffness, with the
 * material damping's where it has it: *gt, *ht; returns the trust region's 1 / |b| (1/m). What
 * piola_vbd_tet_blocks' lanes write and a vertex sums. */
PIOLA_FN piola_real piola_vbd_tet_part(__global const float4 *x, __global const float4 *d,
                                       __global const int4 *tets, __global const float *tet_m,
                                       __global const float *tet_volume,
                                       __global const int *tet_material,
                                       __constant piola_material_data *materials, int stride, int t,
                                       int corner, float inv_h, piola_v3 *gt, piola_m3 *ht) {
  const int4 q = tets[t];
  const piola_tet_material mat = piola_tet_material_from_data(materials[tet_material[t]]);
  const piola_m3 m = piola_load_m3(tet_m, t, stride);
  const piola_real reach = PIOLA_R(1.0) / piola_v3_length(piola_tet_corner_row(m, corner));
  piola_v3 ge;
  piola_m3 he;
  piola_tet_vertex_block(&mat, m, tet_volume[t], piola_position(x[q.x], d[q.x]),
                         piola_position(x[q.y], d[q.y]), piola_position(x[q.z], d[q.z]),
                         piola_position(x[q.w], d[q.w]), corner, &ge, &he);
  const piola_real stiffness = PIOLA_R(1.0) / mat.compliance;
  *gt = piola_v3_scale(ge, stiffness);
  for (int n = 0; n < 9; ++n) {
    ht->m[n] = stiffness * he.m[n];
  }
  if (mat.solver == PIOLA_TET_SOLVER_XPBD && mat.damping > 0.0f) {
    const piola_v3 motion[4] = {piola_v3_from4(d[q.x]), piola_v3_from4(d[q.y]),
                                piola_v3_from4(d[q.z]), piola_v3_from4(d[q.w])};
    piola_tet_damping_block(&mat, m, tet_volume[t], mat.damping * inv_h,
                            piola_position(x[q.x], d[q.x]), piola_position(x[q.y], d[q.y]),
                            piola_position(x[q.z], d[q.z]), piola_position(x[q.w], d[q.w]), motion,
                            corner, gt, ht);
  }
  return reach;
}

/* Vertex i's Newton step on its block, in place in d; y0 is PREDICT's d0 (y - x). With
 * `blocked` its tets' parts come from `blocks` (piola_vbd_tet_blocks, CPU devices). */
PIOLA_FN void piola_vbd_step_vertex(PIOLA_VBD_STEP_PARAMS, int i, float inv_h2, float inv_h,
                                    __global const float4 *blocks, __global const int *block_slot,
                                    int blocked) {
  const float4 xi = x[i];
  if (!(xi.w > 0.0f)) {
    return;
  }
  float4 di = d[i];
  const float4 yi = y0[i];
  const piola_real k_inertia = inv_h2 / xi.w;
  piola_real reach = INFINITY; /* the trust region (PIOLA_VBD_MAX_STEP) */
  piola_v3 g = piola_v3_make(k_inertia * (di.x - yi.x), k_inertia * (di.y - yi.y),
                             k_inertia * (di.z - yi.z));
  piola_m3 hs = piola_m3_scale(piola_m3_identity(), k_inertia);
  for (int j = start[i]; j < start[i + 1]; ++j) {
    const int e = elements[j], t = e >> 4, corner = e & 3;
    if (((e >> 2) & 3) == PIOLA_VBD_KIND_TET && blocked) {
      /* evaluated by piola_vbd_tet_blocks (CPU devices), already times the stiffness */
      __global const float4 *b = blocks + 4 * block_slot[j];
      const float4 b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
      reach = fmin(reach, b0.w);
      g = piola_v3_add(g, piola_v3_make(b0.x, b0.y, b0.z));
      const float he[9] = {b1.x, b1.y, b1.z, b1.w, b2.x, b2.y, b2.z, b2.w, b3.x};
      for (int n = 0; n < 9; ++n) {
        hs.m[n] += he[n];
      }
    } else if (((e >> 2) & 3) == PIOLA_VBD_KIND_TET) {
      /* the tet's block, then its sum: the order of piola_vbd_tet_blocks' lanes */
      piola_v3 gt;
      piola_m3 ht;
      reach = fmin(reach, piola_vbd_tet_part(x, d, tets, tet_m, tet_volume, tet_material, materials,
                                             stride, t, corner, inv_h, &gt, &ht));
      g = piola_v3_add(g, gt);
      for (int n = 0; n < 9; ++n) {
        hs.m[n] += ht.m[n];
      }
    } else if (((e >> 2) & 3) == PIOLA_VBD_KIND_TRIANGLE) {
      const int4 q = tris[t];
      const piola_cloth_tri_material mat = piola_cloth_tri_material_from_data(cloth_materials[q.w]);
      const float4 m = tri_dm[t];
      piola_m2 dm;
      dm.m[0] = m.x;
      dm.m[1] = m.y;
      dm.m[2] = m.z;
      dm.m[3] = m.w;
      reach = fmin(reach, PIOLA_R(1.0) / piola_cloth_tri_corner_length(dm, corner));
      piola_v3 ge;
      piola_m3 he;
      piola_cloth_tri_vertex_block(&mat, dm, tri_area[t], piola_position(x[q.x], d[q.x]),
                                   piola_position(x[q.y], d[q.y]), piola_position(x[q.z], d[q.z]),
                                   corner, &ge, &he);
      const piola_real stiffness = PIOLA_R(1.0) / mat.compliance;
      g = piola_v3_add(g, piola_v3_scale(ge, stiffness));
      for (int n = 0; n < 9; ++n) {
        hs.m[n] += stiffness * he.m[n];
      }
      if (mat.solver == PIOLA_CLOTH_SOLVER_XPBD && mat.damping > 0.0f) {
        const piola_v3 motion[3] = {piola_v3_from4(d[q.x]), piola_v3_from4(d[q.y]),
                                    piola_v3_from4(d[q.z])};
        piola_cloth_tri_damping_block(&mat, dm, tri_area[t], mat.damping * inv_h,
                                      piola_position(x[q.x], d[q.x]),
                                      piola_position(x[q.y], d[q.y]),
                                      piola_position(x[q.z], d[q.z]), motion, corner, &g, &hs);
      }
    } else {
      const int4 q = bends[t];
      const piola_cloth_bend_material mat =
          piola_cloth_bend_material_from_data(cloth_materials[bend_material[t]]);
      const float4 k4 = bend_k[t];
      const float2 qr = bend_q[t];
      piola_cloth_bend_rest rest;
      rest.k[0] = k4.x;
      rest.k[1] = k4.y;
      rest.k[2] = k4.z;
      rest.k[3] = k4.w;
      rest.q = qr.x;
      rest.rest = qr.y;
      piola_v3 ge;
      piola_m3 he;
      piola_cloth_bend_vertex_block(&rest, piola_position(x[q.x], d[q.x]),
                                    piola_position(x[q.y], d[q.y]), piola_position(x[q.z], d[q.z]),
                                    piola_position(x[q.w], d[q.w]), corner, &ge, &he);
      const piola_real stiffness = PIOLA_R(1.0) / mat.compliance;
      g = piola_v3_add(g, piola_v3_scale(ge, stiffness));
      for (int n = 0; n < 9; ++n) {
        hs.m[n] += stiffness * he.m[n];
      }
      if (mat.solver == PIOLA_CLOTH_SOLVER_XPBD && mat.damping > 0.0f) {
        const piola_v3 motion[4] = {piola_v3_from4(d[q.x]), piola_v3_from4(d[q.y]),
                                    piola_v3_from4(d[q.z]), piola_v3_from4(d[q.w])};
        piola_cloth_bend_damping_block(
            &mat, &rest, mat.damping * inv_h, piola_position(x[q.x], d[q.x]),
            piola_position(x[q.y], d[q.y]), piola_position(x[q.z], d[q.z]),
            piola_position(x[q.w], d[q.w]), motion, corner, &g, &hs);
      }
    }
  }
  /* Its attachments (sorted by vertex): soft ones as energy, a hard one holds it. */
  int lo = 0, hi = attached;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (attach_vertex[mid] < i) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < attached && attach_vertex[lo] == i) {
    piola_real k_attach = 0.0f;
    for (int e = attach_start[lo]; e < attach_start[lo + 1]; ++e) {
      const float4 t = attach_targets[e];
      const piola_v3 target = piola_v3_make(t.x, t.y, t.z);
      if (piola_attachment_block(piola_position(xi, di), target, t.w, &g, &k_attach)) {
        /* hard: on its target */
        d[i] = (float4)(t.x - xi.x, t.y - xi.y, t.z - xi.z, di.w);
        return;
      }
    }
    hs.m[0] += k_attach;
    hs.m[4] += k_attach;
    hs.m[8] += k_attach;
  }
  piola_v3 dx;
  if (piola_vbd_newton_step(hs, g, &dx)) {
    dx = piola_vbd_limit_step(dx, PIOLA_VBD_MAX_STEP * reach);
    if (di.w >= 0.0f) {
      di.w += (float)piola_vbd_supported_step(hs, piola_v3_from4(support[i]), &dx);
    }
    d[i] = piola_displace(di, dx);
  }
}

/* One vertex color: vertices[first .. first + count), each one Newton step on its block. */
PIOLA_KERNEL void piola_vbd_color(PIOLA_VBD_STEP_PARAMS, int first, int count, float inv_h2,
                                  __global const float4 *blocks, __global const int *block_slot,
                                  int blocked, float inv_h) {
  const int k = get_global_id(0);
  if (k < count) {
    piola_vbd_step_vertex(PIOLA_VBD_STEP_ARGS, vertices[first + k], inv_h2, inv_h, blocks,
                          block_slot, blocked);
  }
}

/* Vertex i's part of the Chebyshev pass (piola_vbd_accelerate). */
PIOLA_FN void piola_vbd_chebyshev_vertex(__global const float4 *x, __global float4 *d,
                                         __global float4 *older, float omega, int blend, int keep,
                                         int i) {
  if (!(x[i].w > 0.0f)) {
    return;
  }
  float4 di = d[i];
  if (blend) {
    const float4 o = older[i];
    di.xyz = o.xyz + omega * (di.xyz - o.xyz);
    d[i] = di;
  }
  if (keep) {
    older[i] = di;
  }
}

/* One iteration of every body, a work-group per body (the per-body schedule): the group walks
 * its body's colors with barriers (bodies share no vertex and their colors are independent of
 * the other bodies'). Per color, first the work-items share the color's (tet, corner) entries,
 * one tet's part of a block each (piola_vbd_tet_part), written to the body's own region of
 * `blocks` (the groups walk their colors out of step), so that a vertex's tets are evaluated by
 * several work-items at once whatever their number; then each vertex of the color sums its
 * blocks in its list's order (block_slot: per element entry, its block's slot; no atomics) and
 * takes its step. Then, with `accelerate`, the body's part of the Chebyshev pass. body_colors
 * holds per body 2 + 2 colors pairs: its vertices (first, count); its region's first slot; per
 * color its range of `vertices`; per color its range of `tet_entries`. The same operations in the
 * same order per vertex as piola_vbd_color: the same result. */
PIOLA_KERNEL void piola_vbd_bodies(PIOLA_VBD_STEP_PARAMS, __global const int2 *body_colors,
                                   int colors, float inv_h2, float inv_h, int accelerate,
                                   __global float4 *older, float omega, int blend, int keep,
                                   __global const int *tet_entries, __global const int *block_slot,
                                   __global float4 *blocks) {
  const int body = get_group_id(0), lid = get_local_id(0), size = get_local_size(0);
  __global const int2 *bc = body_colors + body * (2 + 2 * colors);
  const int region = bc[1].x;
  for (int c = 0; c < colors; ++c) {
    const int2 te = bc[2 + colors + c];
    for (int k = lid; k < te.y; k += size) {
      const int e = tet_entries[te.x + k];
      piola_v3 gt;
      piola_m3 ht;
      const piola_real reach =
          piola_vbd_tet_part(x, d, tets, tet_m, tet_volume, tet_material, materials, stride, e >> 4,
                             e & 3, inv_h, &gt, &ht);
      __global float4 *b = blocks + 4 * (region + k);
      b[0] = (float4)(gt.x, gt.y, gt.z, reach);
      b[1] = (float4)(ht.m[0], ht.m[1], ht.m[2], ht.m[3]);
      b[2] = (float4)(ht.m[4], ht.m[5], ht.m[6], ht.m[7]);
      b[3] = (float4)(ht.m[8], 0.0f, 0.0f, 0.0f);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    const int2 r = bc[2 + c];
    for (int j = lid; j < r.y; j += size) {
      piola_vbd_step_vertex(PIOLA_VBD_STEP_ARGS, vertices[r.x + j], inv_h2, inv_h, blocks,
                            block_slot, 1);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (accelerate) {
    const int2 v = bc[0];
    for (int i = v.x + lid; i < v.x + v.y; i += size) {
      piola_vbd_chebyshev_vertex(x, d, older, omega, blend, keep, i);
    }
  }
}

/* The Chebyshev pass after iteration k of a substep (piola_world_def.vbd_chebyshev_rho; Wang
 * 2015, "A Chebyshev Semi-Iterative Approach for Accelerating Projective and Position-based
 * Dynamics"; src/host/vbd.c): `older` holds each vertex's displacement of iteration k - 2; with
 * `blend` the displacement is extrapolated from it, older + omega (d - older); with `keep` it is
 * kept there for iteration k + 2. d.w (the support's withheld motion) is left as it is. */
PIOLA_KERNEL void piola_vbd_accelerate(__global const float4 *x, __global float4 *d,
                                       __global float4 *older, float omega, int blend, int keep,
                                       int count) {
  const int i = get_global_id(0);
  if (i < count) {
    piola_vbd_chebyshev_vertex(x, d, older, omega, blend, keep, i);
  }
}

/* The rigid fit of the free bodies at the end of a substep's last iteration (src/host/vbd.c, "The
 * rigid modes of a free body"), a work-group per body with vertex colors; bodies holds per body
 * (first vertex, vertex count, first surface vertex, surface vertex count). A body is left as it
 * is where a vertex of it is pinned or attached (attach_vertex: the attached vertices, ascending),
 * a collider pushed one in the substep (support.w >= 0) or, with `contacts`, a surface vertex has
 * a listed contact of its own or as a corner of another's (corner_start). Otherwise the sums of
 * piola_vbd_rigid_fit about the first vertex's inertia target x + y0: work-item l sums vertices
 * l, l + PIOLA_WG, ... in order, then the partial sums are added pairwise in a fixed tree (the
 * same result every run); work-item 0 finds the motion and every vertex moves by it. */
PIOLA_KERNEL void piola_vbd_fit_bodies(__global const float4 *x, __global float4 *d,
                                       __global const float4 *y0, __global const float4 *support,
                                       __global const int4 *bodies,
                                       __global const int *attach_vertex, int attached,
                                       __global const int *contact_count,
                                       __global const int *corner_start, int contacts) {
  const int lid = get_local_id(0);
  const int4 r = bodies[get_group_id(0)];
  __local int flag;
  __local float4 scratch[PIOLA_WG];
  /* the sums: (mass, m x), (m g, m x x^T's diagonal), (m x cross g, ...), its off-diagonal */
  __local float4 sums[4];
  __local piola_v3 fit[3]; /* w, c, t (piola_vbd_rigid_fit) */
  if (lid == 0) {
    flag = 0;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  int held = 0;
  if (lid == 0 && attached > 0) {
    int lo = 0, hi = attached;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (attach_vertex[mid] < r.x) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    held = lo < attached && attach_vertex[lo] < r.x + r.y;
  }
  for (int i = r.x + lid; i < r.x + r.y; i += PIOLA_WG) {
    held |= !(x[i].w > 0.0f) || support[i].w >= 0.0f;
  }
  for (int sv = r.z + lid; contacts && sv < r.z + r.w; sv += PIOLA_WG) {
    held |= contact_count[sv] > 0 || corner_start[sv + 1] > corner_start[sv];
  }
  if (piola_group_any(held, &flag)) {
    return; /* the whole group */
  }
  const float4 x0 = x[r.x];
  float4 part[4] = {(float4)(0.0f), (float4)(0.0f), (float4)(0.0f), (float4)(0.0f)};
  for (int i = r.x + lid; i < r.x + r.y; i += PIOLA_WG) {
    const float4 xi = x[i], di = d[i];
    const float m = 1.0f / xi.w;
    const piola_v3 p = piola_v3_from4((xi - x0) + (di - y0[r.x])), g = piola_v3_from4(y0[i] - di);
    const piola_v3 l = piola_v3_cross(p, g);
    part[0] += (float4)(m, m * p.x, m * p.y, m * p.z);
    part[1] += (float4)(m * g.x, m * g.y, m * g.z, m * p.x * p.x);
    part[2] += (float4)(m * l.x, m * l.y, m * l.z, m * p.y * p.y);
    part[3] += (float4)(m * p.x * p.y, m * p.x * p.z, m * p.y * p.z, m * p.z * p.z);
  }
  /* one float4 at a time, so that the scratch is one float4 per work-item at any group size */
  for (int k = 0; k < 4; ++k) {
    scratch[lid] = part[k];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 1; s < PIOLA_WG; s <<= 1) {
      if (lid % (2 * s) == 0 && lid + s < PIOLA_WG) {
        scratch[lid] += scratch[lid + s];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
      sums[k] = scratch[0];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    const float4 a = sums[0], b = sums[1], e = sums[2], f = sums[3];
    const piola_sym3 mxx = {b.w, e.w, f.w, f.x, f.y, f.z};
    piola_v3 c, shift; /* private: OpenCL 1.2 passes no local pointer as a private one */
    fit[0] = piola_vbd_rigid_fit(a.x, piola_v3_make(a.y, a.z, a.w), piola_v3_make(b.x, b.y, b.z),
                                 piola_sym3_to_m3(mxx), piola_v3_make(e.x, e.y, e.z), &c, &shift);
    fit[1] = c;
    fit[2] = shift;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const piola_v3 spin = fit[0], c = fit[1], shift = fit[2];
  for (int i = r.x + lid; i < r.x + r.y; i += PIOLA_WG) {
    const float4 xi = x[i];
    float4 di = d[i];
    const float4 p = (xi - x0) + (di - y0[r.x]);
    const piola_v3 dx = piola_vbd_rigid_displacement(spin, c, shift, piola_v3_from4(p));
    di.x += dx.x;
    di.y += dx.y;
    di.z += dx.z;
    d[i] = di;
  }
}
