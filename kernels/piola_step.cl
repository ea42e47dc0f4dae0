/* Piola OpenCL 1.2 kernels: the stages of the XPBD step (Macklin, Mueller, Chentanez 2016) on
 * the device. Each kernel gathers into private values, calls the math shared with the CPU
 * reference (piola_tet.h, piola_collide.h) and scatters; nothing here re-derives a formula.
 *
 * Buffers: x, p, v are float4 per vertex (x.w = p.w = inverse mass, 0 = pinned); tets are
 * sorted by color, one launch of piola_solve_color per color, and per-tet data is structure of
 * arrays: tet_m holds the 9 entries of M = Dm^-1 (row-major) as 9 planes of `stride` floats,
 * so consecutive work-items read consecutive addresses.
 *
 * Build options: -DPIOLA_WG=<work-group size> (every launch uses it), -DPIOLA_EMBEDDED=1.
 */
#ifndef PIOLA_EMBEDDED
#include "piola_collide.h"
#include "piola_tet.h"
#endif

#ifndef PIOLA_WG
#define PIOLA_WG 64
#endif
#define PIOLA_KERNEL __kernel __attribute__((reqd_work_group_size(PIOLA_WG, 1, 1)))

PIOLA_FN piola_v3 piola_v3_from4(float4 a) { return piola_v3_make(a.x, a.y, a.z); }

PIOLA_FN piola_m3 piola_load_m3(__global const float *planes, int i, int stride) {
  piola_m3 m;
  for (int k = 0; k < 9; ++k) {
    m.m[k] = planes[k * stride + i];
  }
  return m;
}

/* v += h g; p = x + h v for free vertices; pinned ones stay. */
PIOLA_KERNEL void piola_predict(__global const float4 *x, __global float4 *v,
                                __global float4 *p, float4 h_gravity, float h, int count) {
  int i = get_global_id(0);
  if (i >= count) {
    return;
  }
  float4 xi = x[i];
  if (xi.w > 0.0f) {
    float4 vi = v[i] + h_gravity;
    v[i] = vi;
    p[i] = (float4)(xi.x + h * vi.x, xi.y + h * vi.y, xi.z + h * vi.z, xi.w);
  } else {
    p[i] = xi;
  }
}

/* One color: tets [first, first + count), no two sharing a vertex. */
PIOLA_KERNEL void piola_solve_color(__global float4 *p, __global const int4 *tets,
                                    __global const float *tet_m,
                                    __global const float *tet_volume,
                                    __global float *tet_lambda,
                                    __global const int *tet_material,
                                    __constant piola_material_data *materials, int first,
                                    int count, int stride, float inv_h2) {
  int i = get_global_id(0);
  if (i >= count) {
    return;
  }
  int t = first + i;
  int4 q = tets[t];
  float4 p0 = p[q.x], p1 = p[q.y], p2 = p[q.z], p3 = p[q.w];
  piola_v3 x0 = piola_v3_from4(p0), x1 = piola_v3_from4(p1), x2 = piola_v3_from4(p2),
           x3 = piola_v3_from4(p3);
  piola_tet_material mat = piola_tet_material_from_data(materials[tet_material[t]]);
  float lambda = tet_lambda[t];
  int flags = piola_tet_project(&mat, piola_load_m3(tet_m, t, stride), tet_volume[t],
                                mat.compliance * inv_h2, &x0, &x1, &x2, &x3, p0.w, p1.w, p2.w,
                                p3.w, &lambda);
  if (flags & PIOLA_TET_WORKED) {
    p[q.x] = (float4)(x0.x, x0.y, x0.z, p0.w);
    p[q.y] = (float4)(x1.x, x1.y, x1.z, p1.w);
    p[q.z] = (float4)(x2.x, x2.y, x2.z, p2.w);
    p[q.w] = (float4)(x3.x, x3.y, x3.z, p3.w);
    tet_lambda[t] = lambda;
  }
}

PIOLA_KERNEL void piola_collide(__global const float4 *x, __global float4 *p,
                                __constant piola_collider_data *colliders, int collider_count,
                                int count) {
  int i = get_global_id(0);
  if (i >= count) {
    return;
  }
  float4 pi = p[i];
  if (!(pi.w > 0.0f)) {
    return;
  }
  piola_v3 xs = piola_v3_from4(x[i]), pv = piola_v3_from4(pi);
  for (int c = 0; c < collider_count; ++c) {
    piola_collider_data col = colliders[c];
    piola_collide_particle(&col, xs, &pv);
  }
  p[i] = (float4)(pv.x, pv.y, pv.z, pi.w);
}

/* v = (p - x) / h, damped; x = p. */
PIOLA_KERNEL void piola_update_velocities(__global float4 *x, __global float4 *v,
                                          __global const float4 *p, float inv_h, float damp,
                                          int count) {
  int i = get_global_id(0);
  if (i >= count) {
    return;
  }
  float4 xi = x[i], pi = p[i];
  v[i] = (float4)((pi.x - xi.x) * inv_h * damp, (pi.y - xi.y) * inv_h * damp,
                  (pi.z - xi.z) * inv_h * damp, 0.0f);
  x[i] = (float4)(pi.x, pi.y, pi.z, xi.w);
}

/* Plastic flow of the plastic tets; writes their effective M into tet_m. */
PIOLA_KERNEL void piola_plasticity(__global const float4 *x, __global const int4 *tets,
                                   __global float *tet_m, int stride,
                                   __global const int *tet_material,
                                   __constant piola_material_data *materials,
                                   __global const int *plastic_tet,
                                   __global const float *plastic_dm_rest,
                                   __global float *plastic_strain, int plastic_stride,
                                   float h, int count) {
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
}
