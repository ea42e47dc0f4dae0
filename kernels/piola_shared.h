/* Piola shared scalar and small-matrix layer: one source compiled as C11 (piola_real =
 * double, the CPU reference) and as OpenCL C 1.2 (piola_real = float, the kernels).
 *
 * Everything here works on private values: kernels gather into locals, call these functions
 * and scatter, so no address-space qualifier appears in shared code. Literals go through
 * PIOLA_R() so that OpenCL never promotes arithmetic to double.
 */
#ifndef PIOLA_SHARED_H
#define PIOLA_SHARED_H

#if defined(__OPENCL_VERSION__) && defined(PIOLA_DOUBLE)
/* Kernels computing in double (buffers stay float), on devices with cl_khr_fp64: separates
 * the rounding of the arithmetic from the rounding of the stored state when cross-checking. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
typedef double piola_real;
typedef int piola_int;
#define PIOLA_R(x) x
#define PIOLA_REAL_EPSILON DBL_EPSILON
#elif defined(__OPENCL_VERSION__) && defined(PIOLA_LANES)
/* Packets (piola_packet.cl, on CPU devices): one work-item projects PIOLA_LANES tets at once, each
 * value a vector of the lanes' values, so that the arithmetic runs in SIMD lanes. Per-lane
 * decisions are masks (piola_mask) combined by selects; branches test whether any or all lanes
 * take them (PIOLA_ANY, PIOLA_ALL). */
#pragma OPENCL FP_CONTRACT OFF
#define PIOLA_CAT_(a, b) a##b
#define PIOLA_CAT(a, b) PIOLA_CAT_(a, b)
typedef PIOLA_CAT(float, PIOLA_LANES) piola_real;
typedef PIOLA_CAT(int, PIOLA_LANES) piola_mask;
typedef int piola_int;
#define PIOLA_R(x) x##f
#define PIOLA_REAL_EPSILON FLT_EPSILON
#define PIOLA_ANY(m) any(m)
#define PIOLA_ALL(m) all(m)
#define PIOLA_TRUE ((piola_mask)(-1))
#elif defined(__OPENCL_VERSION__)
/* No fused multiply-add contraction: results stay reproducible and close to the reference. */
#pragma OPENCL FP_CONTRACT OFF
typedef float piola_real;
typedef int piola_int;
#define PIOLA_R(x) x##f
#define PIOLA_REAL_EPSILON FLT_EPSILON
#elif defined(PIOLA_SHARED_FLOAT)
/* Host build in float, for tests that exercise the kernels' precision on the CPU. */
#include <float.h>
#include <stdint.h>
#include <tgmath.h>
typedef float piola_real;
typedef int32_t piola_int;
#define PIOLA_R(x) x##f
#define PIOLA_REAL_EPSILON FLT_EPSILON
#else
#include <float.h>
#include <math.h>
#include <stdint.h>
typedef double piola_real;
typedef int32_t piola_int;
#define PIOLA_R(x) x
#define PIOLA_REAL_EPSILON DBL_EPSILON
#endif

#define PIOLA_FN static inline

/* Before a loop over the fixed entries of a vector or matrix in the math that also compiles in
 * lanes (this header, piola_svd.h, piola_tet.h): fully unrolled in OpenCL C, so that the entries
 * stay in registers. With PIOLA_LANES vectors a matrix is large (576 bytes in float16), and
 * PoCL's compiler, left to itself, kept these loops, with them the matrices in stack memory,
 * copied at every by-value use (18 memcpy calls in the packet program's tet projection);
 * unrolled, the packet kernels take less time (bench/LOG.md). The
 * order of the operations is the source's either way, so the results are the same bits. */
#ifdef __OPENCL_VERSION__
#define PIOLA_UNROLL _Pragma("unroll")
#else
#define PIOLA_UNROLL
#endif

/* An unsigned 64-bit integer (bit masks). */
#ifdef __OPENCL_VERSION__
typedef ulong piola_u64;
#else
typedef uint64_t piola_u64;
#endif

#ifndef PIOLA_LANES
/* One value per lane (see the packets above): here a single lane, a mask is an int (0 or 1). */
typedef int piola_mask;
#define PIOLA_ANY(m) (m)
#define PIOLA_ALL(m) (m)
#define PIOLA_TRUE 1
#endif
/* Per-lane truth value (false 0; true 1 in one lane, -1 in packets, as OpenCL's vector
 * comparisons give it), from comparisons and logical operators on lane values; a uniform int
 * condition enters a mask only through a logical operator or PIOLA_TRUE. Per-lane flags (bits)
 * have the same type. */
typedef piola_mask piola_flags;

/* Fields of structs shared by host and device: 32-bit only, so both sides lay them out alike
 * (checked on the device by a probe kernel in the tests). */
typedef float piola_f32;
typedef piola_int piola_i32;

typedef struct piola_v3 {
  piola_real x, y, z;
} piola_v3;

/* Row-major 3x3 matrix: m[3 * row + column]. */
typedef struct piola_m3 {
  piola_real m[9];
} piola_m3;

PIOLA_FN piola_v3 piola_v3_make(piola_real x, piola_real y, piola_real z) {
  piola_v3 r;
  r.x = x;
  r.y = y;
  r.z = z;
  return r;
}
PIOLA_FN piola_v3 piola_v3_add(piola_v3 a, piola_v3 b) {
  return piola_v3_make(a.x + b.x, a.y + b.y, a.z + b.z);
}
PIOLA_FN piola_v3 piola_v3_sub(piola_v3 a, piola_v3 b) {
  return piola_v3_make(a.x - b.x, a.y - b.y, a.z - b.z);
}
PIOLA_FN piola_v3 piola_v3_scale(piola_v3 a, piola_real s) {
  return piola_v3_make(a.x * s, a.y * s, a.z * s);
}
PIOLA_FN piola_real piola_v3_dot(piola_v3 a, piola_v3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
PIOLA_FN piola_v3 piola_v3_cross(piola_v3 a, piola_v3 b) {
  return piola_v3_make(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
PIOLA_FN piola_real piola_v3_length(piola_v3 a) {
  return sqrt(piola_v3_dot(a, a));
}

PIOLA_FN piola_m3 piola_m3_identity(void) {
  piola_m3 r;
  r.m[0] = PIOLA_R(1.0);
  r.m[1] = PIOLA_R(0.0);
  r.m[2] = PIOLA_R(0.0);
  r.m[3] = PIOLA_R(0.0);
  r.m[4] = PIOLA_R(1.0);
  r.m[5] = PIOLA_R(0.0);
  r.m[6] = PIOLA_R(0.0);
  r.m[7] = PIOLA_R(0.0);
  r.m[8] = PIOLA_R(1.0);
  return r;
}

/* The matrix whose columns are a, b, c. */
PIOLA_FN piola_m3 piola_m3_from_columns(piola_v3 a, piola_v3 b, piola_v3 c) {
  piola_m3 r;
  r.m[0] = a.x;
  r.m[1] = b.x;
  r.m[2] = c.x;
  r.m[3] = a.y;
  r.m[4] = b.y;
  r.m[5] = c.y;
  r.m[6] = a.z;
  r.m[7] = b.z;
  r.m[8] = c.z;
  return r;
}

PIOLA_FN piola_v3 piola_m3_column(piola_m3 a, int j) {
  return piola_v3_make(a.m[j], a.m[3 + j], a.m[6 + j]);
}

PIOLA_FN piola_m3 piola_m3_transpose(piola_m3 a) {
  piola_m3 r;
  r.m[0] = a.m[0];
  r.m[1] = a.m[3];
  r.m[2] = a.m[6];
  r.m[3] = a.m[1];
  r.m[4] = a.m[4];
  r.m[5] = a.m[7];
  r.m[6] = a.m[2];
  r.m[7] = a.m[5];
  r.m[8] = a.m[8];
  return r;
}

/* a * b */
PIOLA_FN piola_m3 piola_m3_mul(piola_m3 a, piola_m3 b) {
  piola_m3 r;
  PIOLA_UNROLL
  for (int i = 0; i < 3; ++i) {
    PIOLA_UNROLL
    for (int j = 0; j < 3; ++j) {
      r.m[3 * i + j] =
          a.m[3 * i] * b.m[j] + a.m[3 * i + 1] * b.m[3 + j] + a.m[3 * i + 2] * b.m[6 + j];
    }
  }
  return r;
}

/* a^T * b */
PIOLA_FN piola_m3 piola_m3_mul_at(piola_m3 a, piola_m3 b) {
  piola_m3 r;
  PIOLA_UNROLL
  for (int i = 0; i < 3; ++i) {
    PIOLA_UNROLL
    for (int j = 0; j < 3; ++j) {
      r.m[3 * i + j] = a.m[i] * b.m[j] + a.m[3 + i] * b.m[3 + j] + a.m[6 + i] * b.m[6 + j];
    }
  }
  return r;
}

/* a * b^T */
PIOLA_FN piola_m3 piola_m3_mul_bt(piola_m3 a, piola_m3 b) {
  piola_m3 r;
  PIOLA_UNROLL
  for (int i = 0; i < 3; ++i) {
    PIOLA_UNROLL
    for (int j = 0; j < 3; ++j) {
      r.m[3 * i + j] = a.m[3 * i] * b.m[3 * j] + a.m[3 * i + 1] * b.m[3 * j + 1] +
                       a.m[3 * i + 2] * b.m[3 * j + 2];
    }
  }
  return r;
}

PIOLA_FN piola_m3 piola_m3_scale(piola_m3 a, piola_real s) {
  PIOLA_UNROLL
  for (int i = 0; i < 9; ++i) {
    a.m[i] *= s;
  }
  return a;
}

PIOLA_FN piola_real piola_m3_det(piola_m3 a) {
  return a.m[0] * (a.m[4] * a.m[8] - a.m[5] * a.m[7]) -
         a.m[1] * (a.m[3] * a.m[8] - a.m[5] * a.m[6]) +
         a.m[2] * (a.m[3] * a.m[7] - a.m[4] * a.m[6]);
}

/* Cofactor matrix: cof(A) = det(A) A^-T for invertible A. */
PIOLA_FN piola_m3 piola_m3_cofactor(piola_m3 a) {
  piola_m3 r;
  r.m[0] = a.m[4] * a.m[8] - a.m[5] * a.m[7];
  r.m[1] = a.m[5] * a.m[6] - a.m[3] * a.m[8];
  r.m[2] = a.m[3] * a.m[7] - a.m[4] * a.m[6];
  r.m[3] = a.m[2] * a.m[7] - a.m[1] * a.m[8];
  r.m[4] = a.m[0] * a.m[8] - a.m[2] * a.m[6];
  r.m[5] = a.m[1] * a.m[6] - a.m[0] * a.m[7];
  r.m[6] = a.m[1] * a.m[5] - a.m[2] * a.m[4];
  r.m[7] = a.m[2] * a.m[3] - a.m[0] * a.m[5];
  r.m[8] = a.m[0] * a.m[4] - a.m[1] * a.m[3];
  return r;
}

PIOLA_FN piola_real piola_m3_frobenius2(piola_m3 a) {
  piola_real s = PIOLA_R(0.0);
  PIOLA_UNROLL
  for (int i = 0; i < 9; ++i) {
    s += a.m[i] * a.m[i];
  }
  return s;
}

/* Per lane: a where m, else b. */
PIOLA_FN piola_v3 piola_v3_select(piola_mask m, piola_v3 a, piola_v3 b) {
  return piola_v3_make(m ? a.x : b.x, m ? a.y : b.y, m ? a.z : b.z);
}
PIOLA_FN piola_m3 piola_m3_select(piola_mask m, piola_m3 a, piola_m3 b) {
  PIOLA_UNROLL
  for (int i = 0; i < 9; ++i) {
    b.m[i] = m ? a.m[i] : b.m[i];
  }
  return b;
}

/* Material damping in a vertex's block (vertex block descent): XPBD's constraint damping as the
 * forces its damped projection has at its fixed point (kernels/piola_tet.h's module comment; the
 * multigrid scheme applies the same forces in its Newton step, src/host/newton.c). A constraint of
 * energy U = k u with gradients g[0..n-1] of u at its corners adds the force d (d . (x - x^n)) with
 * d = sqrt(k gamma / (2 u)) g, gamma = damping / h: with d held through the vertex's step, its
 * block at `corner` gains factor (g . motion) g_corner in the gradient and factor g_corner
 * g_corner^T in the Hessian, factor = k gamma / (2 u) (positive semidefinite), motion[a] =
 * x_a - x_a^n the corners' motion since the substep's start. A constraint at or below its rest
 * threshold `at_rest` has no direction and adds nothing (factor 0), as in the residual. */
PIOLA_FN piola_real piola_constraint_damping_factor(piola_real k, piola_real gamma, piola_real u,
                                                    piola_real at_rest) {
  const piola_mask on = u > at_rest;
  return on ? k * gamma / (PIOLA_R(2.0) * (on ? u : PIOLA_R(1.0))) : PIOLA_R(0.0);
}

PIOLA_FN void piola_damping_add_block(piola_real factor, const piola_v3 *g, const piola_v3 *motion,
                                      int n, piola_mask corner, piola_v3 *grad, piola_m3 *hess) {
  piola_real rate = PIOLA_R(0.0);
  piola_v3 gc = g[0];
  for (int a = 0; a < n; ++a) {
    rate += piola_v3_dot(g[a], motion[a]);
    gc = piola_v3_select(corner == a, g[a], gc);
  }
  *grad = piola_v3_add(*grad, piola_v3_scale(gc, factor * rate));
  const piola_real c[3] = {gc.x, gc.y, gc.z};
  PIOLA_UNROLL
  for (int r = 0; r < 3; ++r) {
    PIOLA_UNROLL
    for (int q = 0; q < 3; ++q) {
      hess->m[3 * r + q] += factor * c[r] * c[q];
    }
  }
}

/* Symmetric 3x3 stored as (xx, yy, zz, xy, xz, yz). */
typedef struct piola_sym3 {
  piola_real xx, yy, zz, xy, xz, yz;
} piola_sym3;

PIOLA_FN piola_m3 piola_sym3_to_m3(piola_sym3 s) {
  piola_m3 r;
  r.m[0] = s.xx;
  r.m[1] = s.xy;
  r.m[2] = s.xz;
  r.m[3] = s.xy;
  r.m[4] = s.yy;
  r.m[5] = s.yz;
  r.m[6] = s.xz;
  r.m[7] = s.yz;
  r.m[8] = s.zz;
  return r;
}

PIOLA_FN piola_real piola_sym3_frobenius2(piola_sym3 s) {
  return s.xx * s.xx + s.yy * s.yy + s.zz * s.zz +
         PIOLA_R(2.0) * (s.xy * s.xy + s.xz * s.xz + s.yz * s.yz);
}

/* Green strain E = (C - I) / 2 of the right Cauchy-Green tensor C = F^T F. */
PIOLA_FN piola_sym3 piola_green_strain_of(piola_m3 c) {
  piola_sym3 e;
  e.xx = PIOLA_R(0.5) * (c.m[0] - PIOLA_R(1.0));
  e.yy = PIOLA_R(0.5) * (c.m[4] - PIOLA_R(1.0));
  e.zz = PIOLA_R(0.5) * (c.m[8] - PIOLA_R(1.0));
  e.xy = PIOLA_R(0.5) * c.m[1];
  e.xz = PIOLA_R(0.5) * c.m[2];
  e.yz = PIOLA_R(0.5) * c.m[5];
  return e;
}

/* Green strain E = (F^T F - I) / 2. */
PIOLA_FN piola_sym3 piola_green_strain(piola_m3 f) {
  return piola_green_strain_of(piola_m3_mul_at(f, f));
}

#ifdef __OPENCL_VERSION__
/* Whether any work-item of the work-group passed `mine` true; every work-item must call it, and
 * `flag` (local memory) must be 0 on entry, as the call leaves it. The inverted-tet pass's
 * kernels use it to end their sweeps together. */
PIOLA_FN int piola_group_any(int mine, __local int *flag) {
  if (mine) {
    atomic_or(flag, 1);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const int any = *flag;
  barrier(CLK_LOCAL_MEM_FENCE); /* every work-item has read it before the reset */
  if (get_local_id(0) == 0) {
    *flag = 0;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return any;
}
#endif

#endif /* PIOLA_SHARED_H */
