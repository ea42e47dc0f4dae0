/* Piola OpenCL 1.2 kernels: the stages of the XPBD step (Macklin, Mueller, Chentanez 2016) on
 * the device. Each stage is a per-item function here that gathers into private values, calls
 * the math shared with the CPU reference (piola_tet.h, piola_collide.h) and scatters; nothing
 * here re-derives a formula. Two schedules use the same functions:
 *  - per stage: one launch per stage, and one per color per iteration for the tets (all bodies
 *    in each launch); for bodies of any size;
 *  - per body (piola_substep_bodies): one launch per substep, one work-group per body, which
 *    runs the whole substep for its body in the order of the step (predict; iterations of
 *    colors, Jacobi tail and colliders; velocities) with a barrier between dependent phases,
 *    on a copy of the body's vertices in local memory. Bodies share no vertex, so this is the
 *    same computation with ~300 times fewer launches and on-chip gathers; for bodies small
 *    enough for one work-group to go through quickly and for their vertices to fit on chip.
 *
 * Buffers: x, v, d are float4 per vertex: x the positions at the start of the substep (x.w =
 * inverse mass, 0 = pinned), v the velocities, d the displacement of this substep, so that the
 * predicted position is x + d. Projections and contacts add corrections to d, whose small
 * magnitude keeps them and the velocity v = d / h at full float precision, however small h
 * (an absolute predicted position would round every correction to ulp(x) and v to ulp(x) / h).
 * d.w is the vertex's support (piola_tet_support): -1 for a free vertex, else the motion (m) the
 * tet projections held back since the COLLIDE stage that pushed it out of the collider whose
 * outward normal is support[i] (float4 per vertex, read only where d.w >= 0); support[i].w is
 * -1 until a collider pushes the vertex in the substep, then the index of the last collider that
 * pushed it.
 * Tets are sorted by color; per-tet data is structure of arrays: tet_m holds the 9 entries of
 * M = Dm^-1 (row-major) as 9 planes of `stride` floats, tet_lambda the 2 multipliers as 2
 * planes, so consecutive work-items read consecutive addresses.
 *
 * Build options: -DPIOLA_WG=<work-group size> (every launch uses it), -DPIOLA_EMBEDDED=1.
 */
#ifndef PIOLA_EMBEDDED
#include "piola_cloth.h"
#include "piola_collide.h"
#include "piola_contact.h"
#include "piola_mesh.h"
#include "piola_tet.h"
#endif

#ifndef PIOLA_WG
#define PIOLA_WG 64
#endif
#define PIOLA_KERNEL __kernel __attribute__((reqd_work_group_size(PIOLA_WG, 1, 1)))

PIOLA_FN piola_v3 piola_v3_from4(float4 a) {
  return piola_v3_make(a.x, a.y, a.z);
}

PIOLA_FN piola_m3 piola_load_m3(__global const float *planes, int i, int stride) {
  piola_m3 m;
  for (int k = 0; k < 9; ++k) {
    m.m[k] = planes[k * stride + i];
  }
  return m;
}

/* The predicted position x + d of a vertex. */
PIOLA_FN piola_v3 piola_position(float4 x, float4 d) {
  return piola_v3_make(x.x + d.x, x.y + d.y, x.z + d.z);
}

PIOLA_FN float4 piola_displace(float4 d, piola_v3 delta) {
  return (float4)((float)(d.x + delta.x), (float)(d.y + delta.y), (float)(d.z + delta.z), d.w);
}

/* piola_displace() of a tet's corner, adding the motion its support held back (zero for a free
 * corner, whose d.w stays -1). */
PIOLA_FN float4 piola_displace_corner(float4 d, piola_v3 delta, piola_real held) {
  float4 moved = piola_displace(d, delta);
  moved.w = (float)(d.w + held);
  return moved;
}

/* The free vertex's d.w (piola_tet_support). */
#define PIOLA_FREE (-1.0f)

/* The per-tet data and the constants a projection needs, gathered in one place. */
typedef struct piola_tet_arrays {
  __global const int4 *tets;
  __global const float *m;
  __global const float *volume;
  __global float *lambda;
  __global const int *material;
  int stride;
  __global const float4 *support; /* per vertex (see the file comment); 0 in the Jacobi tail */
  int inverted_only; /* the inverted-tet pass: tets do their share piola_inverted_share */
} piola_tet_arrays;

/* ---- Per-item stage functions ------------------------------------------------------ */

/* PREDICT: v += h (g + f / m); d = h v for free vertices; pinned ones do not move (d = 0).
 * Returns d; *vi is the new velocity (unchanged for pinned vertices). */
PIOLA_FN float4 piola_predicted_displacement(float4 xi, float4 *vi, float4 fi, int has_forces,
                                             float4 h_gravity, float h) {
  if (!(xi.w > 0.0f)) {
    return (float4)(0.0f, 0.0f, 0.0f, PIOLA_FREE);
  }
  float4 v = *vi + h_gravity;
  if (has_forces) {
    v += (h * xi.w) * fi;
  }
  *vi = v;
  return (float4)(h * v.x, h * v.y, h * v.z, PIOLA_FREE);
}

/* No collider has pushed a vertex yet in this substep: support.w is -1 until one does (the
 * normal is read only where d.w >= 0, which a collider pass sets). */
#define PIOLA_UNSUPPORTED ((float4)(0.0f, 0.0f, 0.0f, -1.0f))

/* PREDICT of vertex i; d0 keeps the predicted displacement y - x of the substep (the inertial
 * target of the implicit step) and support.w whether a collider pushed the vertex in it, which
 * the stats' residual reads. */
PIOLA_FN void piola_predict_vertex(__global const float4 *x, __global float4 *v, __global float4 *d,
                                   __global float4 *d0, __global float4 *support,
                                   __global const float4 *f, int has_forces, float4 h_gravity,
                                   float h, int i) {
  float4 vi = v[i];
  const float4 di = piola_predicted_displacement(x[i], &vi, has_forces ? f[i] : (float4)(0.0f),
                                                 has_forces, h_gravity, h);
  d[i] = di;
  d0[i] = di;
  support[i] = PIOLA_UNSUPPORTED;
  v[i] = vi;
}

/* What the projection of a tet reads besides its corners: loaded in one place, so that the
 * per-body kernel can load a color's records ahead of their use. */
typedef struct piola_tet_record {
  int4 q; /* corners */
  piola_m3 m;
  float volume;
  float lambda[2];
  int material;
} piola_tet_record;

PIOLA_FN piola_tet_record piola_load_tet(piola_tet_arrays a, int t) {
  piola_tet_record r;
  r.q = a.tets[t];
  r.m = piola_load_m3(a.m, t, a.stride);
  r.volume = a.volume[t];
  r.lambda[0] = a.lambda[t];
  r.lambda[1] = a.lambda[a.stride + t];
  r.material = a.material[t];
  return r;
}

/* The support record a projection gets (see piola_project_tet_at): on CPU devices only where a
 * corner is supported; elsewhere, or built with -DPIOLA_SUPPORT_ALWAYS=1, always. */
#if defined(PIOLA_CPU_DEVICE) && !defined(PIOLA_SUPPORT_ALWAYS)
#define PIOLA_SUPPORT_RECORD(supported, record) ((supported) ? (record) : 0)
#else
#define PIOLA_SUPPORT_RECORD(supported, record) (record)
#endif

/* Projects tet t (its record r) whose corners start the substep at x0..x3 (w: inverse mass)
 * and are displaced by d0..d3; corrections into dx, the motion held back at supported corners
 * into held (with a.support; all free without), the multipliers back into a.lambda; returns the
 * flags. */
PIOLA_FN int piola_project_tet_at(piola_tet_arrays a, __constant piola_material_data *materials,
                                  float inv_h2, int t, const piola_tet_record *r, float4 x0,
                                  float4 x1, float4 x2, float4 x3, float4 d0, float4 d1, float4 d2,
                                  float4 d3, piola_v3 *dx, piola_real *held) {
  const piola_real share =
      a.inverted_only
          ? piola_inverted_share(piola_position(x0, d0), piola_position(x1, d1),
                                 piola_position(x2, d2), piola_position(x3, d3), r->volume)
          : 1.0f;
  if (!(share > 0.0f)) {
    for (int k = 0; k < 4; ++k) {
      dx[k] = piola_v3_make(0.0f, 0.0f, 0.0f);
      held[k] = 0.0f;
    }
    return 0;
  }
  piola_tet_material mat = piola_tet_material_from_data(materials[r->material]);
  piola_real lambda[2] = {r->lambda[0], r->lambda[1]};
  /* Free corners keep zero normals, with which the support terms leave the projection bitwise
   * as without them. On CPU devices a tet with no supported corner skips them (a null record);
   * elsewhere the record is always passed: under NVIDIA's compiler a pointer chosen at run time
   * kept it in private memory, slower there, while PoCL is faster with the null record
   * (bench/LOG.md). */
  piola_tet_support support = piola_tet_support_none();
  const int supported = a.support && (d0.w >= 0.0f || d1.w >= 0.0f || d2.w >= 0.0f || d3.w >= 0.0f);
  /* Corner by corner, without arrays indexed in a loop: NVIDIA's compiler kept those in a
   * stack frame (32 bytes, ptxas). */
  if (supported) {
    if (d0.w >= 0.0f) {
      support.normal[0] = piola_v3_from4(a.support[r->q.x]);
    }
    if (d1.w >= 0.0f) {
      support.normal[1] = piola_v3_from4(a.support[r->q.y]);
    }
    if (d2.w >= 0.0f) {
      support.normal[2] = piola_v3_from4(a.support[r->q.z]);
    }
    if (d3.w >= 0.0f) {
      support.normal[3] = piola_v3_from4(a.support[r->q.w]);
    }
  }
  /* The material damping's motion since the substep's start, x - x^n: the displacements. */
  const piola_v3 motion[4] = {piola_v3_from4(d0), piola_v3_from4(d1), piola_v3_from4(d2),
                              piola_v3_from4(d3)};
  int flags =
      piola_tet_solve(&mat, r->m, r->volume, mat.compliance * inv_h2, mat.damping * sqrt(inv_h2),
                      piola_position(x0, d0), piola_position(x1, d1), piola_position(x2, d2),
                      piola_position(x3, d3), motion, x0.w, x1.w, x2.w, x3.w,
                      PIOLA_SUPPORT_RECORD(supported, &support), lambda, dx);
  if (share < 1.0f && (flags & PIOLA_TET_WORKED)) {
    const piola_real lambda_before[2] = {r->lambda[0], r->lambda[1]};
    piola_inverted_scale(share, dx, support.held, lambda, lambda_before);
  }
  if (flags & PIOLA_TET_WORKED) {
    a.lambda[t] = (float)lambda[0];
    a.lambda[a.stride + t] = (float)lambda[1];
  }
  for (int k = 0; k < 4; ++k) {
    held[k] = support.held[k];
  }
  return flags;
}

/* Projects tet t (its record r) from the current positions x + d; corrections into dx. */
PIOLA_FN int piola_project_tet(__global const float4 *x, __global const float4 *d,
                               piola_tet_arrays a, __constant piola_material_data *materials,
                               float inv_h2, int t, const piola_tet_record *r, piola_v3 *dx,
                               piola_real *held) {
  const int4 q = r->q;
  return piola_project_tet_at(a, materials, inv_h2, t, r, x[q.x], x[q.y], x[q.z], x[q.w], d[q.x],
                              d[q.y], d[q.z], d[q.w], dx, held);
}

/* SOLVE_TETS, Gauss-Seidel: tet t of a color (no two tets of it share a vertex). */
PIOLA_FN void piola_solve_tet(__global const float4 *x, __global float4 *d, piola_tet_arrays a,
                              __constant piola_material_data *materials, float inv_h2, int t) {
  const piola_tet_record r = piola_load_tet(a, t);
  const int4 q = r.q;
  piola_v3 dx[4];
  piola_real held[4];
  if (piola_project_tet(x, d, a, materials, inv_h2, t, &r, dx, held) & PIOLA_TET_WORKED) {
    d[q.x] = piola_displace_corner(d[q.x], dx[0], held[0]);
    d[q.y] = piola_displace_corner(d[q.y], dx[1], held[1]);
    d[q.z] = piola_displace_corner(d[q.z], dx[2], held[2]);
    d[q.w] = piola_displace_corner(d[q.w], dx[3], held[3]);
  }
}

/* SOLVE_TETS, Jacobi tail: the i-th tail tet's corrections dx (dx, dy, dz, 1 if it did work)
 * into delta[4 i + corner]. */
PIOLA_FN void piola_store_jacobi_delta(__global float4 *delta, int i, const piola_v3 *dx,
                                       int flags) {
  float worked = (flags & PIOLA_TET_WORKED) ? 1.0f : 0.0f;
  for (int k = 0; k < 4; ++k) {
    delta[4 * i + k] = (float4)(dx[k].x, dx[k].y, dx[k].z, worked);
  }
}

/* SOLVE_TETS, Jacobi tail: tet t (the i-th of the tail) projected from the same positions as
 * the rest of the tail. */
PIOLA_FN void piola_jacobi_tet(__global const float4 *x, __global const float4 *d,
                               piola_tet_arrays a, __constant piola_material_data *materials,
                               float inv_h2, int t, int i, __global float4 *delta) {
  const piola_tet_record r = piola_load_tet(a, t);
  piola_v3 dx[4];
  piola_real held[4]; /* zero: the tail's corners are free (a.support is 0) */
  piola_store_jacobi_delta(delta, i, dx,
                           piola_project_tet(x, d, a, materials, inv_h2, t, &r, dx, held));
}

/* SOLVE_TETS, Jacobi tail: the corrections of tail vertex i summed in list order (w: how many
 * tets did work); the vertex moves by omega times their mean. */
PIOLA_FN float4 piola_jacobi_sum(__global const int *start, __global const int *incidence,
                                 __global const float4 *delta, int i) {
  float4 sum = (float4)(0.0f);
  for (int j = start[i]; j < start[i + 1]; ++j) {
    sum += delta[incidence[j]];
  }
  return sum;
}

PIOLA_FN float4 piola_jacobi_displace(float4 d, float4 sum, float omega) {
  float s = omega / sum.w;
  return piola_displace(d, piola_v3_make(s * sum.x, s * sum.y, s * sum.z));
}

PIOLA_FN void piola_jacobi_vertex(__global float4 *d, __global const int *vertices,
                                  __global const int *start, __global const int *incidence,
                                  __global const float4 *delta, float omega, int i) {
  float4 sum = piola_jacobi_sum(start, incidence, delta, i);
  if (sum.w > 0.0f) {
    int v = vertices[i];
    d[v] = piola_jacobi_displace(d[v], sum, omega);
  }
}

/* The record of what collider c did to vertex i in the step (piola_world_get_collider_force):
 * impulse[2 c stride + i] sums m times the corrections, impulse[(2 c + 1) stride + i] their
 * moments m (p - o) x correction about the collider's origin o at the end of the substep, p the
 * vertex after the correction (kg m and kg m^2). Each slot is written by its vertex's work-item
 * only, and the sums over the vertices are made in a fixed order (piola_collider_impulse_sum):
 * no atomics, the same figures in every run. */
PIOLA_FN void piola_record_impulse(__global float4 *impulse, int stride, int c, int i, float4 xi,
                                   float4 di, __constant piola_collider_data *k, float t_end,
                                   piola_v3 correction) {
  const float m = 1.0f / xi.w;
  const piola_v3 arm = piola_v3_sub(piola_position(xi, di), piola_collider_origin_at(k, t_end));
  const piola_v3 moment = piola_v3_cross(arm, correction);
  __global float4 *f = impulse + 2 * (size_t)c * (size_t)stride + (size_t)i;
  f[0] += (float4)(m * correction.x, m * correction.y, m * correction.z, 0.0f);
  f[stride] += (float4)(m * moment.x, m * moment.y, m * moment.z, 0.0f);
}

/* COLLIDE: the displacement di of vertex i starting the substep at xi, projected out of every
 * collider, in order, each at its pose at the end of the substep (t_end seconds into the step;
 * h the substep), from where it would be without its support; the vertex is supported by the
 * last collider that pushed it (its normal into support[i]; none for a mesh or SDF outside the
 * multigrid scheme, piola_mesh_supports; support[i].w that collider's index) or free
 * (piola_tet_support). `mode` (PIOLA_COLLIDE_*, piola_collide.h) says whether the corrections
 * are recorded and whether the colliders push along their normals only. Each correction is recorded
 * in impulse (piola_record_impulse; stride: the world's vertex count). Written once as a macro over
 * the correction it calls: piola_collided_displacement for colliders of any kind (the shapes' data
 * in `shapes`), piola_collided_displacement_analytic for the analytic kinds only, the collide
 * stage's kernel in worlds without mesh or SDF colliders: PoCL vectorises that one across
 * work-items as it did before meshes existed, which the mesh queries' loops keep it from doing
 * (2.4x slower in the funnel scene, bench/LOG.md). */
#define PIOLA_COLLIDED_DISPLACEMENT(NAME, CORRECTION)                                              \
  PIOLA_FN float4 NAME(float4 xi, float4 di, __constant piola_collider_data *colliders,            \
                       int collider_count, float t_end, float h, __global float4 *support, int i,  \
                       __global float4 *impulse, int stride, __global const float4 *shapes,        \
                       int mode) {                                                                 \
    if (!(xi.w > 0.0f)) {                                                                          \
      return di;                                                                                   \
    }                                                                                              \
    piola_v3 xs = piola_v3_from4(xi);                                                              \
    piola_v3 n = piola_v3_make(0.0f, 0.0f, 0.0f);                                                  \
    if (di.w >= 0.0f) {                                                                            \
      n = piola_v3_from4(support[i]);                                                              \
      const piola_v3 u = piola_unsupported_position(piola_v3_from4(di), n, di.w);                  \
      di = (float4)(u.x, u.y, u.z, di.w);                                                          \
    }                                                                                              \
    int pushed = 0, by = 0;                                                                        \
    for (int c = 0; c < collider_count; ++c) {                                                     \
      /* The bound first, on the record in constant memory: most colliders are far away (the       \
       * two steps of piola_collider_correction_at written out: through the call, PoCL's           \
       * collide kernel is slower, bench/LOG.md). */                                               \
      __constant piola_collider_data *k = &colliders[c];                                           \
      if (!piola_collider_may_touch(k, piola_position(xi, di), t_end)) {                           \
        continue;                                                                                  \
      }                                                                                            \
      piola_v3 correction;                                                                         \
      if (CORRECTION(k, shapes, xs, piola_position(xi, di), t_end, h, &correction, &n)) {          \
        correction = piola_collide_correction_in_mode(n, correction, mode);                        \
        di = piola_displace(di, correction);                                                       \
        pushed = 1;                                                                                \
        by = c;                                                                                    \
        if (k->kind >= PIOLA_COLLIDER_KIND_MESH && !(mode & PIOLA_COLLIDE_NORMAL_ONLY)) {          \
          n = piola_v3_make(0.0f, 0.0f, 0.0f);                                                     \
        }                                                                                          \
        if (mode & PIOLA_COLLIDE_RECORD) {                                                         \
          piola_record_impulse(impulse, stride, c, i, xi, di, k, t_end, correction);               \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    if (pushed) {                                                                                  \
      support[i] = (float4)(n.x, n.y, n.z, (float)by);                                             \
    }                                                                                              \
    di.w = pushed ? 0.0f : PIOLA_FREE;                                                             \
    return di;                                                                                     \
  }

/* piola_collider_correction_exact() in the signature of piola_collider_correction_shapes(). */
PIOLA_FN int piola_collider_correction_analytic(__constant piola_collider_data *c,
                                                __global const float4 *shapes, piola_v3 x_start,
                                                piola_v3 p, float t_end, float h,
                                                piola_v3 *correction, piola_v3 *normal) {
  (void)shapes;
  return piola_collider_correction_exact(c, x_start, p, t_end, h, correction, normal);
}

PIOLA_COLLIDED_DISPLACEMENT(piola_collided_displacement, piola_collider_correction_shapes)
PIOLA_COLLIDED_DISPLACEMENT(piola_collided_displacement_analytic,
                            piola_collider_correction_analytic)

PIOLA_FN void piola_collide_vertex(__global const float4 *x, __global float4 *d,
                                   __constant piola_collider_data *colliders, int collider_count,
                                   float t_end, float h, __global float4 *support, int i,
                                   __global float4 *impulse, int stride,
                                   __global const float4 *shapes, int mode) {
  d[i] = piola_collided_displacement(x[i], d[i], colliders, collider_count, t_end, h, support, i,
                                     impulse, stride, shapes, mode);
}

/* UPDATE_VELOCITIES: v = d / h, damped; x += d. */
PIOLA_FN void piola_update_vertex_at(__global float4 *x, __global float4 *v, float4 xi, float4 di,
                                     float inv_h, float damp, int i) {
  v[i] = (float4)(di.x * inv_h * damp, di.y * inv_h * damp, di.z * inv_h * damp, 0.0f);
  x[i] = (float4)(xi.x + di.x, xi.y + di.y, xi.z + di.z, xi.w);
}

PIOLA_FN void piola_update_vertex(__global float4 *x, __global float4 *v, __global const float4 *d,
                                  float inv_h, float damp, int i) {
  piola_update_vertex_at(x, v, x[i], d[i], inv_h, damp, i);
}

/* ---- The per-stage schedule ---------------------------------------------------------- */

PIOLA_KERNEL void piola_predict(__global const float4 *x, __global float4 *v, __global float4 *d,
                                __global const float4 *f, int has_forces, float4 h_gravity, float h,
                                int count, __global float4 *d0, __global float4 *support) {
  int i = get_global_id(0);
  if (i < count) {
    piola_predict_vertex(x, v, d, d0, support, f, has_forces, h_gravity, h, i);
  }
}

/* One color: tets [first, first + count). */
PIOLA_KERNEL void piola_solve_color(__global const float4 *x, __global float4 *d,
                                    __global const int4 *tets, __global const float *tet_m,
                                    __global const float *tet_volume, __global float *tet_lambda,
                                    __global const int *tet_material,
                                    __constant piola_material_data *materials, int first, int count,
                                    int stride, float inv_h2, __global const float4 *support,
                                    int inverted_only) {
  int i = get_global_id(0);
  if (i < count) {
    piola_tet_arrays a = {tets,         tet_m,  tet_volume, tet_lambda,
                          tet_material, stride, support,    inverted_only};
    piola_solve_tet(x, d, a, materials, inv_h2, first + i);
  }
}

/* The Jacobi tail, tets [first, first + count), into delta. */
PIOLA_KERNEL void piola_solve_jacobi(__global const float4 *x, __global const float4 *d,
                                     __global const int4 *tets, __global const float *tet_m,
                                     __global const float *tet_volume, __global float *tet_lambda,
                                     __global const int *tet_material,
                                     __constant piola_material_data *materials, int first,
                                     int count, int stride, float inv_h2, __global float4 *delta,
                                     int inverted_only) {
  int i = get_global_id(0);
  if (i < count) {
    piola_tet_arrays a = {tets,         tet_m,  tet_volume, tet_lambda,
                          tet_material, stride, 0,          inverted_only};
    piola_jacobi_tet(x, d, a, materials, inv_h2, first + i, i, delta);
  }
}

PIOLA_KERNEL void piola_apply_jacobi(__global float4 *d, __global const int *vertices,
                                     __global const int *start, __global const int *incidence,
                                     __global const float4 *delta, float omega, int count) {
  int i = get_global_id(0);
  if (i < count) {
    piola_jacobi_vertex(d, vertices, start, incidence, delta, omega, i);
  }
}

/* The cloth kinds' per-item arrays (sorted by color), gathered in one place like the tet's.
 * tris: 3 vertices and the cloth material index; tri_dm: Dm^-1 (row-major); bend_k: the
 * cotangent weights K; bend_q: q and v_bar (piola_cloth_bend_rest). */
typedef struct piola_cloth_arrays {
  __global const int4 *tris;
  __global const float4 *tri_dm;
  __global const float *tri_area;
  __global float *tri_lambda;
  __global const int4 *bends;
  __global const float4 *bend_k;
  __global const float2 *bend_q;
  __global float *bend_lambda;
  __global const int *bend_material;
} piola_cloth_arrays;

/* SOLVE_TETS, the cloth kinds, Gauss-Seidel: triangle t of a color (no two items of a color,
 * of any kind, share a vertex). */
PIOLA_FN void piola_solve_cloth_tri(__global const float4 *x, __global float4 *d,
                                    piola_cloth_arrays a,
                                    __constant piola_cloth_material_data *materials, float inv_h2,
                                    int t) {
  int4 q = a.tris[t];
  piola_cloth_tri_material mat = piola_cloth_tri_material_from_data(materials[q.w]);
  float4 m = a.tri_dm[t];
  piola_m2 dm;
  dm.m[0] = m.x;
  dm.m[1] = m.y;
  dm.m[2] = m.z;
  dm.m[3] = m.w;
  float4 x0 = x[q.x], x1 = x[q.y], x2 = x[q.z];
  piola_real lambda = a.tri_lambda[t];
  piola_v3 dx[3];
  const float4 d0 = d[q.x], d1 = d[q.y], d2 = d[q.z];
  /* The material damping's motion since the substep's start, x - x^n: the displacements. */
  const piola_v3 motion[3] = {piola_v3_from4(d0), piola_v3_from4(d1), piola_v3_from4(d2)};
  if (piola_cloth_tri_correction(&mat, dm, a.tri_area[t], mat.compliance * inv_h2,
                                 mat.damping * sqrt(inv_h2), piola_position(x0, d0),
                                 piola_position(x1, d1), piola_position(x2, d2), motion, x0.w, x1.w,
                                 x2.w, &lambda, dx) &
      PIOLA_CLOTH_WORKED) {
    a.tri_lambda[t] = (float)lambda;
    d[q.x] = piola_displace(d[q.x], dx[0]);
    d[q.y] = piola_displace(d[q.y], dx[1]);
    d[q.z] = piola_displace(d[q.z], dx[2]);
  }
}

/* SOLVE_TETS, the cloth kinds, Gauss-Seidel: bending stencil t of a color. */
PIOLA_FN void piola_solve_cloth_bend(__global const float4 *x, __global float4 *d,
                                     piola_cloth_arrays a,
                                     __constant piola_cloth_material_data *materials, float inv_h2,
                                     int t) {
  int4 q = a.bends[t];
  piola_cloth_bend_material mat =
      piola_cloth_bend_material_from_data(materials[a.bend_material[t]]);
  float4 k = a.bend_k[t];
  float2 qr = a.bend_q[t];
  piola_cloth_bend_rest rest;
  rest.k[0] = k.x;
  rest.k[1] = k.y;
  rest.k[2] = k.z;
  rest.k[3] = k.w;
  rest.q = qr.x;
  rest.rest = qr.y;
  float4 x0 = x[q.x], x1 = x[q.y], x2 = x[q.z], x3 = x[q.w];
  piola_real lambda = a.bend_lambda[t];
  piola_v3 dx[4];
  const float4 d0 = d[q.x], d1 = d[q.y], d2 = d[q.z], d3 = d[q.w];
  const piola_v3 motion[4] = {piola_v3_from4(d0), piola_v3_from4(d1), piola_v3_from4(d2),
                              piola_v3_from4(d3)};
  if (piola_cloth_bend_correction(&mat, &rest, mat.compliance * inv_h2, mat.damping * sqrt(inv_h2),
                                  piola_position(x0, d0), piola_position(x1, d1),
                                  piola_position(x2, d2), piola_position(x3, d3), motion, x0.w,
                                  x1.w, x2.w, x3.w, &lambda, dx) &
      PIOLA_CLOTH_WORKED) {
    a.bend_lambda[t] = (float)lambda;
    d[q.x] = piola_displace(d[q.x], dx[0]);
    d[q.y] = piola_displace(d[q.y], dx[1]);
    d[q.z] = piola_displace(d[q.z], dx[2]);
    d[q.w] = piola_displace(d[q.w], dx[3]);
  }
}

/* SOLVE_TETS, the cloth kinds (per-stage schedule only), one launch per color for both kinds:
 * work-items [0, tri_count) project the color's triangles [tri_first, tri_first + tri_count),
 * items [tri_count, tri_count + bend_count) its stencils [bend_first, ...). No two items of a
 * color, of any kind, share a vertex, so this computes bitwise what the two per-kind launches
 * below compute one after the other (which the backend uses when profiling, to time the kinds
 * apart). */
PIOLA_KERNEL void
piola_solve_cloth_color(__global const float4 *x, __global float4 *d, __global const int4 *tris,
                        __global const float4 *tri_dm, __global const float *tri_area,
                        __global float *tri_lambda, __global const int4 *bends,
                        __global const float4 *bend_k, __global const float2 *bend_q,
                        __global float *bend_lambda, __global const int *bend_material,
                        __constant piola_cloth_material_data *materials, int tri_first,
                        int tri_count, int bend_first, int bend_count, float inv_h2) {
  int i = get_global_id(0);
  piola_cloth_arrays a = {tris,   tri_dm, tri_area,    tri_lambda,   bends,
                          bend_k, bend_q, bend_lambda, bend_material};
  if (i < tri_count) {
    piola_solve_cloth_tri(x, d, a, materials, inv_h2, tri_first + i);
  } else if (i - tri_count < bend_count) {
    piola_solve_cloth_bend(x, d, a, materials, inv_h2, bend_first + (i - tri_count));
  }
}

/* SOLVE_TETS, the cloth kinds, one kind per launch (with profiling): triangles [first, first +
 * count) of one color. */
PIOLA_KERNEL void piola_solve_cloth_tris(__global const float4 *x, __global float4 *d,
                                         __global const int4 *tris, __global const float4 *tri_dm,
                                         __global const float *tri_area, __global float *tri_lambda,
                                         __constant piola_cloth_material_data *materials, int first,
                                         int count, float inv_h2) {
  int i = get_global_id(0);
  if (i < count) {
    piola_cloth_arrays a = {tris, tri_dm, tri_area, tri_lambda, 0, 0, 0, 0, 0};
    piola_solve_cloth_tri(x, d, a, materials, inv_h2, first + i);
  }
}

/* SOLVE_TETS, the cloth kinds, one kind per launch (with profiling): bending stencils [first,
 * first + count) of one color. */
PIOLA_KERNEL void piola_solve_cloth_bends(__global const float4 *x, __global float4 *d,
                                          __global const int4 *bends, __global const float4 *bend_k,
                                          __global const float2 *bend_q,
                                          __global float *bend_lambda,
                                          __global const int *bend_material,
                                          __constant piola_cloth_material_data *materials,
                                          int first, int count, float inv_h2) {
  int i = get_global_id(0);
  if (i < count) {
    piola_cloth_arrays a = {0, 0, 0, 0, bends, bend_k, bend_q, bend_lambda, bend_material};
    piola_solve_cloth_bend(x, d, a, materials, inv_h2, first + i);
  }
}

PIOLA_KERNEL void piola_collide(__global const float4 *x, __global float4 *d,
                                __constant piola_collider_data *colliders, int collider_count,
                                int count, float t_end, float h, __global float4 *support,
                                __global float4 *impulse, __global const float4 *shapes, int mode) {
  int i = get_global_id(0);
  if (i < count) {
    d[i] = piola_collided_displacement_analytic(x[i], d[i], colliders, collider_count, t_end, h,
                                                support, i, impulse, count, shapes, mode);
  }
}

/* piola_collide for worlds with mesh or SDF colliders. */
PIOLA_KERNEL void piola_collide_shapes(__global const float4 *x, __global float4 *d,
                                       __constant piola_collider_data *colliders,
                                       int collider_count, int count, float t_end, float h,
                                       __global float4 *support, __global float4 *impulse,
                                       __global const float4 *shapes, int mode) {
  int i = get_global_id(0);
  if (i < count) {
    piola_collide_vertex(x, d, colliders, collider_count, t_end, h, support, i, impulse, count,
                         shapes, mode);
  }
}

/* The sums over the vertices of collider c's impulse records (piola_record_impulse): out[0] the
 * impulse's, out[1] the moment's. One work-group of a power-of-two size nl: work-item l sums
 * vertices l, l + nl, ... in order, then the partial sums are added pairwise in a fixed tree:
 * the same result every run on a device. */
PIOLA_KERNEL void piola_collider_impulse_sum(__global const float4 *impulse, int count, int c,
                                             __global float4 *out, __local float4 *scratch) {
  const int lid = get_local_id(0), nl = get_local_size(0);
  float4 f = (float4)(0.0f), t = (float4)(0.0f);
  __global const float4 *rf = impulse + 2 * (size_t)c * (size_t)count;
  for (int i = lid; i < count; i += nl) {
    f += rf[i];
    t += rf[count + i];
  }
  scratch[lid] = f;
  scratch[nl + lid] = t;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = nl / 2; span > 0; span /= 2) {
    if (lid < span) {
      scratch[lid] += scratch[lid + span];
      scratch[nl + lid] += scratch[nl + lid + span];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    out[0] = scratch[0];
    out[1] = scratch[nl];
  }
}

PIOLA_KERNEL void piola_update_velocities(__global float4 *x, __global float4 *v,
                                          __global const float4 *d, float inv_h, float damp,
                                          int count) {
  int i = get_global_id(0);
  if (i < count) {
    piola_update_vertex(x, v, d, inv_h, damp, i);
  }
}

/* ---- The per-body schedule ----------------------------------------------------------- */

/* The per-body kernel keeps a body's vertices on chip: lx and ld hold x and d of its vertices
 * (local index = global index - v0) for the whole launch. These are the gathers and scatters
 * of the functions above on local memory; the math is the same calls. */
PIOLA_FN int piola_solve_tet_local(__local const float4 *x, __local float4 *d, piola_tet_arrays a,
                                   __constant piola_material_data *materials, float inv_h2, int t,
                                   const piola_tet_record *r, int v0) {
  const int4 q = r->q - (int4)(v0);
  piola_v3 dx[4];
  piola_real held[4];
  const int worked = (piola_project_tet_at(a, materials, inv_h2, t, r, x[q.x], x[q.y], x[q.z],
                                           x[q.w], d[q.x], d[q.y], d[q.z], d[q.w], dx, held) &
                      PIOLA_TET_WORKED) != 0;
  if (worked) {
    d[q.x] = piola_displace_corner(d[q.x], dx[0], held[0]);
    d[q.y] = piola_displace_corner(d[q.y], dx[1], held[1]);
    d[q.z] = piola_displace_corner(d[q.z], dx[2], held[2]);
    d[q.w] = piola_displace_corner(d[q.w], dx[3], held[3]);
  }
  return worked;
}

PIOLA_FN void piola_jacobi_tet_local(__local const float4 *x, __local const float4 *d,
                                     piola_tet_arrays a, __constant piola_material_data *materials,
                                     float inv_h2, int t, int i, int v0, __global float4 *delta) {
  const piola_tet_record r = piola_load_tet(a, t);
  const int4 q = r.q - (int4)(v0);
  piola_v3 dx[4];
  piola_real held[4]; /* zero: the tail's corners are free */
  a.support = 0;
  piola_store_jacobi_delta(delta, i, dx,
                           piola_project_tet_at(a, materials, inv_h2, t, &r, x[q.x], x[q.y], x[q.z],
                                                x[q.w], d[q.x], d[q.y], d[q.z], d[q.w], dx, held));
}

/* PIOLA_PREFETCH (default 1): the per-body kernel loads each work-item's record of the next
 * color before projecting the current one, so that those global loads overlap the projection
 * instead of starting after the barrier (0: load at the point of use, for measuring). */
#ifndef PIOLA_PREFETCH
#define PIOLA_PREFETCH 1
#endif

/* One substep of every body, work-group b for body b. body_vertex holds (first, count) of each
 * body's vertices; body_color (first, count) of its tets in each of the color_count colors;
 * body_jacobi (first, count) of its tail tets and (first, count) of its entries in the tail's
 * vertex list. Delta slots are indexed from the start of the tail, jacobi_first.
 * `part` (piola_bodies_part): 0 the whole substep; with contacts, which couple the bodies and
 * run as launches of their own between the parts, 1 predict and reset the multipliers only,
 * 2 one iteration over the tets only (contacts and colliders follow it), 3 the inverted-tet
 * pass (part 2 projecting only the tets with det F <= 0, after the iterations), repeated while a
 * sweep of the body did work, `iterations` times at most (the host passes
 * PIOLA_INVERTED_PASSES).
 * collider_t_end: the time from the start of the step to the end of this substep (s), where the
 * colliders stand.
 * lx, ld: local memory for the largest body's vertex count each. The body's x and d are read
 * once, every phase works on chip, and d (with part 0, also x and v) is written back at the end;
 * d0 receives the predicted displacements and support.w is reset (piola_predict_vertex).
 * The multipliers of a tet are read and written by one work-item only (the same k of the same
 * color in every iteration), so only the Jacobi tail's delta needs a global fence. */
PIOLA_KERNEL void piola_substep_bodies(
    __global float4 *x, __global float4 *v, __global float4 *d, __global const float4 *f,
    int has_forces, __global const int4 *tets, __global const float *tet_m,
    __global const float *tet_volume, __global float *tet_lambda, __global const int *tet_material,
    __constant piola_material_data *materials, __constant piola_collider_data *colliders,
    int collider_count, __global const int *body_vertex, __global const int *body_color,
    __global const int *body_jacobi, __global const int *jacobi_vertices,
    __global const int *jacobi_start, __global const int *jacobi_incidence, __global float4 *delta,
    int color_count, int iterations, int stride, int jacobi_first, float4 h_gravity, float h,
    float inv_h, float inv_h2, float damp, float omega, int part, float collider_t_end,
    __local float4 *on_chip, int on_chip_vertices, __global float4 *support,
    __global float4 *impulse, int vertex_count, __global const float4 *shapes,
    __global float4 *d0) {
  __local float4 *lx = on_chip, *ld = on_chip + on_chip_vertices;
  const int b = get_group_id(0), lid = get_local_id(0), nl = get_local_size(0);
  const int v0 = body_vertex[2 * b], nv = body_vertex[2 * b + 1];
  const int tail_first = body_jacobi[4 * b], tail_count = body_jacobi[4 * b + 1];
  const int tv_first = body_jacobi[4 * b + 2], tv_count = body_jacobi[4 * b + 3];
  piola_tet_arrays a = {tets,         tet_m,  tet_volume, tet_lambda,
                        tet_material, stride, support,    part == 3};
  /* The body on chip; PREDICT unless this is an iteration of its own */
  for (int i = lid; i < nv; i += nl) {
    float4 xi = x[v0 + i];
    lx[i] = xi;
    if (part >= 2) {
      ld[i] = d[v0 + i];
    } else {
      float4 vi = v[v0 + i];
      ld[i] = piola_predicted_displacement(xi, &vi, has_forces ? f[v0 + i] : (float4)(0.0f),
                                           has_forces, h_gravity, h);
      v[v0 + i] = vi;
      d0[v0 + i] = ld[i];
      support[v0 + i] = PIOLA_UNSUPPORTED;
      if (part == 1) {
        d[v0 + i] = ld[i];
      }
    }
  }
  if (part < 2) {
    /* RESET_MULTIPLIERS */
    for (int c = 0; c <= color_count; ++c) {
      int first = c < color_count ? body_color[2 * (b * color_count + c)] : tail_first;
      int count = c < color_count ? body_color[2 * (b * color_count + c) + 1] : tail_count;
      for (int k = lid; k < count; k += nl) {
        tet_lambda[first + k] = 0.0f;
        tet_lambda[stride + first + k] = 0.0f;
      }
    }
  }
  __local int worked; /* part 3: piola_group_any's flag, whether a tet did work in a sweep */
  if (lid == 0) {
    worked = 0;
  }
  /* Part 1 goes through the barrier and runs no pass rather than returning early: with an
   * early return (or an if around the rest) PoCL 3.1 corrupted host memory running this
   * kernel, although the condition is uniform. */
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  const int passes = part == 0 || part == 3 ? iterations : part == 2 ? 1 : 0;
  for (int it = 0; it < passes; ++it) {
    int mine = 0; /* whether one of this work-item's tets did */
    /* SOLVE_TETS: the colors, then the Jacobi tail. `next`: this work-item's first tet of the
     * next color (PIOLA_PREFETCH); tets beyond the work-group's size load where they are used. */
    piola_tet_record next;
    if (PIOLA_PREFETCH && color_count > 0 && lid < body_color[2 * b * color_count + 1]) {
      next = piola_load_tet(a, body_color[2 * b * color_count] + lid);
    }
    for (int c = 0; c < color_count; ++c) {
      const int first = body_color[2 * (b * color_count + c)];
      const int count = body_color[2 * (b * color_count + c) + 1];
      piola_tet_record cur = next;
      if (!PIOLA_PREFETCH && lid < count) {
        cur = piola_load_tet(a, first + lid);
      }
      if (PIOLA_PREFETCH && c + 1 < color_count &&
          lid < body_color[2 * (b * color_count + c + 1) + 1]) {
        next = piola_load_tet(a, body_color[2 * (b * color_count + c + 1)] + lid);
      }
      if (lid < count) {
        mine |= piola_solve_tet_local(lx, ld, a, materials, inv_h2, first + lid, &cur, v0);
      }
      for (int k = lid + nl; k < count; k += nl) {
        const piola_tet_record r = piola_load_tet(a, first + k);
        mine |= piola_solve_tet_local(lx, ld, a, materials, inv_h2, first + k, &r, v0);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (tail_count > 0) {
      for (int k = lid; k < tail_count; k += nl) {
        piola_jacobi_tet_local(lx, ld, a, materials, inv_h2, tail_first + k,
                               tail_first + k - jacobi_first, v0, delta);
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
      for (int k = lid; k < tv_count; k += nl) {
        float4 sum = piola_jacobi_sum(jacobi_start, jacobi_incidence, delta, tv_first + k);
        if (sum.w > 0.0f) {
          int i = jacobi_vertices[tv_first + k] - v0;
          ld[i] = piola_jacobi_displace(ld[i], sum, omega);
          mine = 1;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    /* COLLIDE */
    if (collider_count > 0 && part == 0) {
      for (int i = lid; i < nv; i += nl) {
        ld[i] = piola_collided_displacement(lx[i], ld[i], colliders, collider_count, collider_t_end,
                                            h, support, v0 + i, impulse, vertex_count, shapes,
                                            PIOLA_COLLIDE_RECORD);
      }
      /* the supports are read by the next iteration's tets */
      barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    /* part 3: a sweep that did no work changed nothing, nor would the next ones */
    if (part == 3 && !piola_group_any(mine, &worked)) {
      break;
    }
  }
  /* Back to global memory; UPDATE_VELOCITIES with the whole substep */
  for (int i = lid; i < nv && part != 1; i += nl) {
    d[v0 + i] = ld[i];
    if (part == 0) {
      piola_update_vertex_at(x, v, lx[i], ld[i], inv_h, damp, v0 + i);
    }
  }
}

/* Plastic flow of the plastic tets; writes their effective M into tet_m. */
PIOLA_KERNEL void
piola_plasticity(__global const float4 *x, __global const int4 *tets, __global float *tet_m,
                 int stride, __global const int *tet_material,
                 __constant piola_material_data *materials, __global const int *plastic_tet,
                 __global const float *plastic_dm_rest, __global float *plastic_strain,
                 int plastic_stride, float h, int count) {
  int k = get_global_id(0);
  if (k >= count) {
    return;
  }
  int t = plastic_tet[k];
  int4 q = tets[t];
  piola_material_data md = materials[tet_material[t]];
  piola_m3 dm_rest = piola_load_m3(plastic_dm_rest, k, plastic_stride);
  piola_m3 f = piola_tet_deformation(piola_v3_from4(x[q.x]), piola_v3_from4(x[q.y]),
                                     piola_v3_from4(x[q.z]), piola_v3_from4(x[q.w]), dm_rest);
  piola_sym3 eps;
  eps.xx = plastic_strain[k];
  eps.yy = plastic_strain[plastic_stride + k];
  eps.zz = plastic_strain[2 * plastic_stride + k];
  eps.xy = plastic_strain[3 * plastic_stride + k];
  eps.xz = plastic_strain[4 * plastic_stride + k];
  eps.yz = plastic_strain[5 * plastic_stride + k];
  piola_m3 m_eff;
  if (piola_plastic_update(f, &eps, md.plastic_yield, fmin(1.0f, h * md.plastic_creep),
                           md.plastic_max, dm_rest, &m_eff)) {
    plastic_strain[k] = eps.xx;
    plastic_strain[plastic_stride + k] = eps.yy;
    plastic_strain[2 * plastic_stride + k] = eps.zz;
    plastic_strain[3 * plastic_stride + k] = eps.xy;
    plastic_strain[4 * plastic_stride + k] = eps.xz;
    plastic_strain[5 * plastic_stride + k] = eps.yz;
    for (int j = 0; j < 9; ++j) {
      tet_m[j * stride + t] = m_eff.m[j];
    }
  }
}

/* Reports the layout of the structs shared with the host: sizes, then field offsets. */
__kernel void piola_layout_probe(__global int *out) {
  if (get_global_id(0) != 0) {
    return;
  }
  piola_collider_data c;
  piola_material_data m;
  __private char *cb = (__private char *)&c;
  __private char *mb = (__private char *)&m;
  out[0] = (int)sizeof(piola_collider_data);
  out[1] = (int)((__private char *)&c.a[0] - cb);
  out[2] = (int)((__private char *)&c.b[0] - cb);
  out[3] = (int)((__private char *)&c.c[0] - cb);
  out[4] = (int)((__private char *)&c.kind - cb);
  out[5] = (int)((__private char *)&c.static_friction - cb);
  out[6] = (int)((__private char *)&c.dynamic_friction - cb);
  out[7] = (int)sizeof(piola_material_data);
  out[8] = (int)((__private char *)&m.mu - mb);
  out[9] = (int)((__private char *)&m.compliance - mb);
  out[10] = (int)((__private char *)&m.model - mb);
  out[11] = (int)((__private char *)&m.inversion - mb);
  out[12] = (int)((__private char *)&m.plastic_yield - mb);
  out[13] = (int)((__private char *)&m.plastic_max - mb);
  out[14] = (int)sizeof(float4);
  out[15] = (int)sizeof(int4);
  out[16] = (int)((__private char *)&m.damping - mb);
}
