/* Piola packet kernels: SOLVE_TETS for CPU devices, PIOLA_LANES tets of a color per work-item in
 * SIMD lanes, and under vertex block descent the tets' parts of a vertex color's blocks
 * (piola_vbd_tet_blocks, at the end).
 *
 * A CPU device runs a work-item's arithmetic on scalars: the projection of a tet (a few hundred
 * flops, piola_tet.h) used one lane of the core's vector units. Here the same header is compiled
 * with piola_real a vector of PIOLA_LANES floats (piola_shared.h), so one work-item projects
 * PIOLA_LANES consecutive tets of a color at once: their corners are gathered into lanes, the
 * math runs once for all of them with per-lane decisions as selects (the SVD of inverted or
 * compressed tets runs when any lane needs it and is kept where it is needed), and the
 * corrections are scattered lane by lane. Tets of one color share no vertex, so the packets of a
 * color are independent like its tets, and each lane computes what the one-tet kernel
 * (piola_solve_color in piola_step.cl) computes for its tet: the same operations in the same
 * order, rounded alike except where the vector and scalar builds of a library function (log1p)
 * differ in the last bits.
 *
 * The material's model, solver, inversion mode and split choose code paths and must be uniform
 * over the lanes: lanes whose tets have another are projected in a further pass over the packet
 * (a scene with one kind of material makes one pass). A partial last packet repeats its last
 * tet in the spare lanes and discards their results.
 *
 * Built as a program of its own (piola_shared.h, piola_svd.h, piola_tet.h and this file) with
 * -DPIOLA_LANES=<4, 8 or 16> -DPIOLA_WG=<work-group size> -DPIOLA_EMBEDDED=1.
 */
#ifdef PIOLA_LANES
#ifndef PIOLA_EMBEDDED
#include "piola_tet.h"
#endif

#ifndef PIOLA_WG
#define PIOLA_WG 64
#endif
#define PIOLA_L PIOLA_LANES
#ifndef PIOLA_BODY_WG
#define PIOLA_BODY_WG 8
#endif
#define PIOLA_VLOAD PIOLA_CAT(vload, PIOLA_LANES)
#define PIOLA_VSTORE PIOLA_CAT(vstore, PIOLA_LANES)

/* A lane vector from PIOLA_LANES private floats, and back. */
PIOLA_FN piola_real piola_lanes_load(const float *a) {
  return PIOLA_VLOAD(0, a);
}
PIOLA_FN void piola_lanes_store(piola_real v, float *a) {
  PIOLA_VSTORE(v, 0, a);
}
PIOLA_FN void piola_lanes_store3(piola_v3 v, float a[3][PIOLA_L]) {
  piola_lanes_store(v.x, a[0]);
  piola_lanes_store(v.y, a[1]);
  piola_lanes_store(v.z, a[2]);
}

/* Lane vectors from PIOLA_LANES private float4 values a[l] (one per lane): x, y and z as a
 * piola_v3, w into *w, by whole-vector loads and shuffles. A gather writes one float4 per lane
 * and corner instead of four floats, each of which a lane vector's load would wait for. */
PIOLA_FN piola_v3 piola_lanes_transpose(const float4 a[PIOLA_L], piola_real *w) {
#if PIOLA_LANES == 16
  const float16 a0 = vload16(0, (const float *)a), a1 = vload16(1, (const float *)a),
                a2 = vload16(2, (const float *)a), a3 = vload16(3, (const float *)a);
  *w = (float16)(a0.s37bf, a1.s37bf, a2.s37bf, a3.s37bf);
  return piola_v3_make((float16)(a0.s048c, a1.s048c, a2.s048c, a3.s048c),
                       (float16)(a0.s159d, a1.s159d, a2.s159d, a3.s159d),
                       (float16)(a0.s26ae, a1.s26ae, a2.s26ae, a3.s26ae));
#elif PIOLA_LANES == 8
  const float16 a0 = vload16(0, (const float *)a), a1 = vload16(1, (const float *)a);
  *w = (float8)(a0.s37bf, a1.s37bf);
  return piola_v3_make((float8)(a0.s048c, a1.s048c), (float8)(a0.s159d, a1.s159d),
                       (float8)(a0.s26ae, a1.s26ae));
#else /* 4 */
  *w = (float4)(a[0].w, a[1].w, a[2].w, a[3].w);
  return piola_v3_make((float4)(a[0].x, a[1].x, a[2].x, a[3].x),
                       (float4)(a[0].y, a[1].y, a[2].y, a[3].y),
                       (float4)(a[0].z, a[1].z, a[2].z, a[3].z));
#endif
}

/* Asks the cache for the lines of the per-tet data of the packet at t0 (a hint, where the
 * compiler has one): the body kernel fetches the next color's while projecting this one. Only
 * on CPU devices (PIOLA_CPU_DEVICE, defined by the host), whose compilers take a __global
 * pointer as a plain one; NVIDIA's refuses it (a change of address space). */
#if defined(PIOLA_CPU_DEVICE) && defined(__has_builtin)
#if __has_builtin(__builtin_prefetch)
#define PIOLA_PREFETCH_LINE(p) __builtin_prefetch(p)
#endif
#endif
#ifndef PIOLA_PREFETCH_LINE
#define PIOLA_PREFETCH_LINE(p) ((void)(p))
#endif
PIOLA_FN void piola_prefetch_packet(__global const int4 *tets, __global const float *tet_m,
                                    __global const float *tet_volume,
                                    __global const float *tet_lambda,
                                    __global const int *tet_material, int t0, int stride) {
  for (int k = 0; k < 9; ++k) {
    PIOLA_PREFETCH_LINE(tet_m + k * stride + t0);
    PIOLA_PREFETCH_LINE(tet_m + k * stride + t0 + PIOLA_L - 1);
  }
  for (int k = 0; k < 2; ++k) {
    PIOLA_PREFETCH_LINE(tet_lambda + k * stride + t0);
    PIOLA_PREFETCH_LINE(tet_lambda + k * stride + t0 + PIOLA_L - 1);
  }
  PIOLA_PREFETCH_LINE(tet_volume + t0);
  PIOLA_PREFETCH_LINE(tet_volume + t0 + PIOLA_L - 1);
  PIOLA_PREFETCH_LINE(tet_material + t0);
  PIOLA_PREFETCH_LINE(tet_material + t0 + PIOLA_L - 1);
  for (int l = 0; l < PIOLA_L; l += 4) {
    PIOLA_PREFETCH_LINE(tets + t0 + l);
  }
}

/* Whether two materials take the same code paths. */
PIOLA_FN int piola_same_paths(piola_material_data a, piola_material_data b) {
  return a.model == b.model && a.solver == b.solver && a.inversion == b.inversion &&
         a.split == b.split;
}

/* The material of the next pass over a packet of n lanes whose `done` lanes are through (see
 * piola_solve_packet): the paths of the first lane left, the parameters lane by lane (at once
 * where the packet has one material), and in *active the lanes left that take those paths. */
PIOLA_FN piola_tet_material piola_packet_pass_material(__constant piola_material_data *materials,
                                                       const int material[PIOLA_L], int n, int done,
                                                       int one_material, int *active) {
  int l0 = 0;
  while (done & (1 << l0)) {
    ++l0;
  }
  const piola_material_data paths = materials[material[l0]];
  piola_tet_material mat;
  *active = 0;
  if (one_material) {
    *active = ((1 << n) - 1) & ~done;
    mat.mu = (piola_real)(paths.mu);
    mat.lambda = (piola_real)(paths.lambda);
    mat.compliance = (piola_real)(paths.compliance);
    mat.damping = (piola_real)(paths.damping);
  } else {
    float mu[PIOLA_L], la[PIOLA_L], compliance[PIOLA_L], damping[PIOLA_L];
    for (int l = 0; l < PIOLA_L; ++l) {
      const piola_material_data md = materials[material[l]];
      if (l < n && !(done & (1 << l)) && piola_same_paths(md, paths)) {
        *active |= 1 << l;
      }
      mu[l] = md.mu;
      la[l] = md.lambda;
      compliance[l] = md.compliance;
      damping[l] = md.damping;
    }
    mat.mu = piola_lanes_load(mu);
    mat.lambda = piola_lanes_load(la);
    mat.compliance = piola_lanes_load(compliance);
    mat.damping = piola_lanes_load(damping);
  }
  mat.model = paths.model;
  mat.solver = paths.solver;
  mat.inversion = paths.inversion;
  mat.split = paths.split;
  return mat;
}

/* The inverted-tet pass's test (piola_tet_inverted) of the n tets from t0 in lanes: a bit per
 * inverted one. It reads the corner indices and positions only, so that a packet without an
 * inverted tet, almost every one, is done before its tets' records are loaded. */
PIOLA_FN int piola_packet_inverted(__global const float4 *x, __global const float4 *d,
                                   __global const int4 *tets, __global const float *tet_volume,
                                   int t0, int n) {
  float4 pos[4][PIOLA_L];
  for (int l = 0; l < PIOLA_L; ++l) {
    const int4 q = tets[t0 + min(l, n - 1)];
    pos[0][l] = (float4)(x[q.x].xyz + d[q.x].xyz, 0.0f);
    pos[1][l] = (float4)(x[q.y].xyz + d[q.y].xyz, 0.0f);
    pos[2][l] = (float4)(x[q.z].xyz + d[q.z].xyz, 0.0f);
    pos[3][l] = (float4)(x[q.w].xyz + d[q.w].xyz, 0.0f);
  }
  piola_v3 p[4];
  piola_real unused;
  for (int k = 0; k < 4; ++k) {
    p[k] = piola_lanes_transpose(pos[k], &unused);
  }
  float volume[PIOLA_L], share[PIOLA_L];
  for (int l = 0; l < PIOLA_L; ++l) {
    volume[l] = tet_volume[t0 + min(l, n - 1)];
  }
  piola_lanes_store(piola_inverted_share(p[0], p[1], p[2], p[3], piola_lanes_load(volume)), share);
  int bits = 0;
  for (int l = 0; l < n; ++l) {
    bits |= share[l] > 0.0f ? 1 << l : 0;
  }
  return bits;
}

/* Projects the packet of tets first + begin .. (at most PIOLA_LANES of them) of a color of
 * count tets [first, first + count); arguments as piola_solve_color's. Returns whether a lane
 * did work. */
PIOLA_FN int piola_solve_packet(__global const float4 *x, __global float4 *d,
                                __global const int4 *tets, __global const float *tet_m,
                                __global const float *tet_volume, __global float *tet_lambda,
                                __global const int *tet_material,
                                __constant piola_material_data *materials, int first, int count,
                                int begin, int stride, float inv_h2, __global const float4 *support,
                                int inverted_only) {
  const int n = min(PIOLA_L, count - begin);
  /* In the inverted-tet pass the lanes whose tets have no share in it (piola_inverted_share)
   * count as done from the start, and a packet without such a tet is done. */
  int done = 0; /* lanes projected, one bit each */
  if (inverted_only) {
    const int inverted = piola_packet_inverted(x, d, tets, tet_volume, first + begin, n);
    if (inverted == 0) {
      return 0;
    }
    done = ((1 << n) - 1) & ~inverted;
  }
  /* Gather: lane l holds tet first + begin + l (the last tet again in spare lanes). */
  int corner[4][PIOLA_L], material[PIOLA_L];
  float4 pos[4][PIOLA_L], normal[4][PIOLA_L]; /* x + d with x.w; the support's normal */
  float4 disp[4][PIOLA_L]; /* d, the motion since the substep's start (with material damping) */
  float m[9][PIOLA_L], volume[PIOLA_L], lambda0[PIOLA_L], lambda1[PIOLA_L];
  int supported = 0;
  int one_material = 1; /* whether every lane has the first lane's material */
  int damped = 0;       /* whether a lane's material has damping */
  for (int l = 0; l < PIOLA_L; ++l) {
    const int t = first + begin + min(l, n - 1);
    const int4 q = tets[t];
    corner[0][l] = q.x;
    corner[1][l] = q.y;
    corner[2][l] = q.z;
    corner[3][l] = q.w;
    material[l] = tet_material[t];
    one_material &= material[l] == material[0];
    damped |= materials[material[l]].damping > 0.0f;
    for (int k = 0; k < 4; ++k) {
      const float4 xv = x[corner[k][l]], dv = d[corner[k][l]];
      pos[k][l] = (float4)(xv.xyz + dv.xyz, xv.w);
      disp[k][l] = dv;
      /* A supported corner (d.w >= 0, piola_tet_support) brings its collider's normal; a free
       * one a zero normal, which leaves its projection as without support. */
      normal[k][l] = dv.w >= 0.0f ? support[corner[k][l]] : (float4)(0.0f);
      supported |= dv.w >= 0.0f;
    }
  }
  /* The per-tet planes, as whole vectors unless they would run past the planes' end (a
   * partial packet's spare lanes then take the last tet's values, as its corners do). */
  piola_m3 dm_inv;
  piola_real volume_v, lambda0_v, lambda1_v;
  const int t0 = first + begin;
  if (t0 + PIOLA_L <= stride) {
    int index[PIOLA_L];
    for (int l = 0; l < PIOLA_L; ++l) {
      index[l] = l;
    }
    const piola_mask real = PIOLA_VLOAD(0, index) < n;
    const int last = t0 + n - 1;
    for (int k = 0; k < 9; ++k) {
      dm_inv.m[k] =
          real ? PIOLA_VLOAD(0, tet_m + k * stride + t0) : (piola_real)(tet_m[k * stride + last]);
    }
    volume_v = real ? PIOLA_VLOAD(0, tet_volume + t0) : (piola_real)(tet_volume[last]);
    lambda0_v = real ? PIOLA_VLOAD(0, tet_lambda + t0) : (piola_real)(tet_lambda[last]);
    lambda1_v =
        real ? PIOLA_VLOAD(0, tet_lambda + stride + t0) : (piola_real)(tet_lambda[stride + last]);
  } else {
    for (int l = 0; l < PIOLA_L; ++l) {
      const int t = t0 + min(l, n - 1);
      volume[l] = tet_volume[t];
      lambda0[l] = tet_lambda[t];
      lambda1[l] = tet_lambda[stride + t];
      for (int k = 0; k < 9; ++k) {
        m[k][l] = tet_m[k * stride + t];
      }
    }
    for (int k = 0; k < 9; ++k) {
      dm_inv.m[k] = piola_lanes_load(m[k]);
    }
    volume_v = piola_lanes_load(volume);
    lambda0_v = piola_lanes_load(lambda0);
    lambda1_v = piola_lanes_load(lambda1);
  }
  piola_v3 p[4], motion[4];
  piola_real wv[4];
  piola_tet_support sup;
  for (int k = 0; k < 4; ++k) {
    p[k] = piola_lanes_transpose(pos[k], &wv[k]);
    if (damped) {
      piola_real unused;
      motion[k] = piola_lanes_transpose(disp[k], &unused);
    }
    if (supported) {
      piola_real unused;
      sup.normal[k] = piola_lanes_transpose(normal[k], &unused);
    }
  }
  /* One pass per kind of material among the lanes (a packet of one material, the common case,
   * takes its parameters at once). */
  int written = 0; /* whether a lane did work */
  while (done != (1 << n) - 1) {
    int active;
    const piola_tet_material mat =
        piola_packet_pass_material(materials, material, n, done, one_material, &active);
    for (int k = 0; k < 4; ++k) {
      sup.held[k] = PIOLA_R(0.0);
    }
    piola_real lambda[2] = {lambda0_v, lambda1_v};
    piola_v3 dx[4];
    const piola_flags flags =
        piola_tet_solve(&mat, dm_inv, volume_v, mat.compliance * inv_h2, mat.damping * sqrt(inv_h2),
                        p[0], p[1], p[2], p[3], damped ? motion : 0, wv[0], wv[1], wv[2], wv[3],
                        supported ? &sup : 0, lambda, dx);
    if (inverted_only) { /* each lane's share of its projection (piola_inverted_share) */
      const piola_real before[2] = {lambda0_v, lambda1_v};
      piola_inverted_scale(piola_inverted_share(p[0], p[1], p[2], p[3], volume_v), dx, sup.held,
                           lambda, before);
    }
    /* Scatter the lanes of this pass whose projection did work. */
    float delta[4][3][PIOLA_L], held[4][PIOLA_L], out0[PIOLA_L], out1[PIOLA_L], worked[PIOLA_L];
    for (int k = 0; k < 4; ++k) {
      piola_lanes_store3(dx[k], delta[k]);
      piola_lanes_store(sup.held[k], held[k]);
    }
    piola_lanes_store(lambda[0], out0);
    piola_lanes_store(lambda[1], out1);
    piola_lanes_store((flags & PIOLA_TET_WORKED) != 0 ? PIOLA_R(1.0) : PIOLA_R(0.0), worked);
    for (int l = 0; l < n; ++l) {
      if (!(active & (1 << l)) || worked[l] == 0.0f) {
        continue;
      }
      const int t = first + begin + l;
      written = 1;
      tet_lambda[t] = out0[l];
      tet_lambda[stride + t] = out1[l];
      for (int k = 0; k < 4; ++k) {
        const int v = corner[k][l];
        const float4 dv = d[v];
        d[v] = (float4)(dv.x + delta[k][0][l], dv.y + delta[k][1][l], dv.z + delta[k][2][l],
                        dv.w + held[k][l]);
      }
    }
    done |= active;
  }
  return written;
}

/* SOLVE_TETS, Gauss-Seidel, per color: packet i of a color of count tets from first (arguments
 * as piola_solve_color's); for bodies of any size. */
__kernel __attribute__((reqd_work_group_size(PIOLA_WG, 1, 1))) void piola_solve_color_packets(
    __global const float4 *x, __global float4 *d, __global const int4 *tets,
    __global const float *tet_m, __global const float *tet_volume, __global float *tet_lambda,
    __global const int *tet_material, __constant piola_material_data *materials, int first,
    int count, int stride, float inv_h2, __global const float4 *support, int inverted_only) {
  const int begin = (int)get_global_id(0) * PIOLA_L;
  if (begin < count) {
    piola_solve_packet(x, d, tets, tet_m, tet_volume, tet_lambda, tet_material, materials, first,
                       count, begin, stride, inv_h2, support, inverted_only);
  }
}

/* SOLVE_TETS, Gauss-Seidel, per body: work-group b goes through body b's colors (body_color:
 * first tet and count per body and color), its packets spread over the work-items, a barrier
 * between colors. One launch per iteration, and a body's vertices stay in the core's cache
 * through its colors (a launch per color sweeps every body's). Bodies share no vertex. The
 * inverted-tet pass sweeps the colors again while a sweep did work, `passes` times at most. */
__kernel __attribute__((reqd_work_group_size(PIOLA_BODY_WG, 1, 1))) void
piola_solve_body_packets(__global const float4 *x, __global float4 *d, __global const int4 *tets,
                         __global const float *tet_m, __global const float *tet_volume,
                         __global float *tet_lambda, __global const int *tet_material,
                         __constant piola_material_data *materials, __global const int *body_color,
                         int color_count, int stride, float inv_h2, __global const float4 *support,
                         int inverted_only, int passes) {
  const int b = (int)get_group_id(0), lid = (int)get_local_id(0);
  __local int worked; /* piola_group_any's flag: whether a tet of the body did work in a sweep */
  if (lid == 0) {
    worked = 0;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int sweep = 0; sweep < passes; ++sweep) {
    int mine = 0;
    for (int c = 0; c < color_count; ++c) {
      const int first = body_color[2 * (b * color_count + c)];
      const int count = body_color[2 * (b * color_count + c) + 1];
      if (c + 1 < color_count && !inverted_only) {
        const int next_first = body_color[2 * (b * color_count + c + 1)];
        const int next_count = body_color[2 * (b * color_count + c + 1) + 1];
        for (int begin = lid * PIOLA_L; begin < next_count; begin += PIOLA_BODY_WG * PIOLA_L) {
          piola_prefetch_packet(tets, tet_m, tet_volume, tet_lambda, tet_material,
                                next_first + begin, stride);
        }
      }
      for (int begin = lid * PIOLA_L; begin < count; begin += PIOLA_BODY_WG * PIOLA_L) {
        mine |=
            piola_solve_packet(x, d, tets, tet_m, tet_volume, tet_lambda, tet_material, materials,
                               first, count, begin, stride, inv_h2, support, inverted_only);
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
    /* a sweep that did no work changed nothing, nor would the next ones */
    if (!piola_group_any(mine, &worked)) {
      break;
    }
  }
}
/* SOLVE_VERTICES (vertex block descent, kernels/piola_vbd.cl) on CPU devices, the first of a
 * color's two launches: the tets' parts of the blocks of the color's vertices, PIOLA_LANES
 * (tet, corner) entries per work-item in SIMD lanes. The color's tet entries (element entries of
 * src/host/vbd.h, (tet << 4) | corner, vertex after vertex in the color's order, each vertex's in
 * its list's order) are entries[first .. first + count); entry first + k writes its part times
 * the material's stiffness 1 / compliance to blocks[4 k .. 4 k + 3]: the gradient and the trust
 * region's 1 / |b| (float4), then the projected 3 x 3 block row by row (9 floats in 3 float4).
 * piola_vbd_color then sums them in its list's order in place of evaluating its tets (the same
 * operations, rounded alike), so the per-vertex work that is left is a few loads and adds per
 * tet. A vertex of a color touches each of its tets once and no tet has two vertices of one
 * color, so the lanes are independent; a vertex's four corners each take a lane in turn, as the
 * one-vertex kernel evaluates each tet four times per iteration. Lanes of other materials' code
 * paths are evaluated in a further pass over the packet, as in piola_solve_packet. */
__kernel __attribute__((reqd_work_group_size(PIOLA_WG, 1, 1))) void
piola_vbd_tet_blocks(__global const float4 *x, __global const float4 *d, __global const int4 *tets,
                     __global const float *tet_m, __global const float *tet_volume,
                     __global const int *tet_material, __constant piola_material_data *materials,
                     int stride, __global const int *entries, int first, int count,
                     __global float4 *blocks, float inv_h) {
  const int begin = (int)get_global_id(0) * PIOLA_L;
  if (begin >= count) {
    return;
  }
  const int n = min(PIOLA_L, count - begin);
  int material[PIOLA_L], corner[PIOLA_L];
  float4 pos[4][PIOLA_L], mot[4][PIOLA_L];
  float m[9][PIOLA_L], volume[PIOLA_L];
  int one_material = 1;
  for (int l = 0; l < PIOLA_L; ++l) {
    const int e = entries[first + begin + min(l, n - 1)], t = e >> 4;
    corner[l] = e & 3;
    const int4 q = tets[t];
    const int c[4] = {q.x, q.y, q.z, q.w};
    for (int k = 0; k < 4; ++k) {
      const float4 xv = x[c[k]], dv = d[c[k]];
      pos[k][l] = (float4)(xv.xyz + dv.xyz, xv.w);
      mot[k][l] = (float4)(dv.xyz, 0.0f); /* the motion since the substep's start */
    }
    for (int k = 0; k < 9; ++k) {
      m[k][l] = tet_m[k * stride + t];
    }
    volume[l] = tet_volume[t];
    material[l] = tet_material[t];
    one_material &= material[l] == material[0];
  }
  piola_v3 p[4], motion[4];
  for (int k = 0; k < 4; ++k) {
    piola_real unused;
    p[k] = piola_lanes_transpose(pos[k], &unused);
    motion[k] = piola_lanes_transpose(mot[k], &unused);
  }
  piola_m3 dm_inv;
  for (int k = 0; k < 9; ++k) {
    dm_inv.m[k] = piola_lanes_load(m[k]);
  }
  const piola_real volume_v = piola_lanes_load(volume);
  const piola_mask corner_v = PIOLA_VLOAD(0, corner);
  const piola_real reach = PIOLA_R(1.0) / piola_v3_length(piola_tet_corner_row(dm_inv, corner_v));
  float out[13][PIOLA_L];
  int done = 0; /* lanes evaluated, one bit each */
  while (done != (1 << n) - 1) {
    int active;
    const piola_tet_material mat =
        piola_packet_pass_material(materials, material, n, done, one_material, &active);
    piola_v3 ge;
    piola_m3 he;
    piola_tet_vertex_block(&mat, dm_inv, volume_v, p[0], p[1], p[2], p[3], corner_v, &ge, &he);
    const piola_real stiffness = PIOLA_R(1.0) / mat.compliance;
    piola_v3 gs = piola_v3_scale(ge, stiffness);
    piola_m3 hs;
    for (int k = 0; k < 9; ++k) {
      hs.m[k] = stiffness * he.m[k];
    }
    if (mat.solver == PIOLA_TET_SOLVER_XPBD && PIOLA_ANY(mat.damping > PIOLA_R(0.0))) {
      piola_tet_damping_block(&mat, dm_inv, volume_v, mat.damping * inv_h, p[0], p[1], p[2], p[3],
                              motion, corner_v, &gs, &hs);
    }
    piola_lanes_store3(gs, out);
    piola_lanes_store(reach, out[3]);
    for (int k = 0; k < 9; ++k) {
      piola_lanes_store(hs.m[k], out[4 + k]);
    }
    for (int l = 0; l < n; ++l) {
      if (!(active & (1 << l))) {
        continue;
      }
      __global float4 *b = blocks + 4 * (begin + l);
      b[0] = (float4)(out[0][l], out[1][l], out[2][l], out[3][l]);
      b[1] = (float4)(out[4][l], out[5][l], out[6][l], out[7][l]);
      b[2] = (float4)(out[8][l], out[9][l], out[10][l], out[11][l]);
      b[3] = (float4)(out[12][l], 0.0f, 0.0f, 0.0f);
    }
    done |= active;
  }
}
#endif /* PIOLA_LANES */
