/* Piola OpenCL 1.2 attachment kernel: the ATTACHMENTS stage of kernels/piola_attach.h, once per
 * iteration. Follows piola_step.cl in the program (it uses its helpers and PIOLA_KERNEL).
 *
 * Attachments are sorted by vertex; one work-item per attached vertex projects its
 * attachments in ascending order (start[i] .. start[i + 1]), so a vertex held by several is
 * treated in the same order on every run and device, with no atomics.
 */
#ifndef PIOLA_EMBEDDED
#include "piola_attach.h"
#endif

/* targets: xyz the target (m), w the compliance (m/N). reset: the first iteration of a
 * substep, when the multipliers start from zero. */
PIOLA_KERNEL void piola_attachments(__global const float4 *x, __global float4 *d,
                                    __global const int *start, __global const int *vertex,
                                    __global const float4 *targets, __global float *lambdas,
                                    int reset, float inv_h2, int count) {
  const int i = get_global_id(0);
  if (i >= count) {
    return;
  }
  const int v = vertex[i];
  const float4 xv = x[v];
  float4 dv = d[v];
  for (int e = start[i]; e < start[i + 1]; ++e) {
    const float4 target = targets[e];
    float lambda = reset ? 0.0f : lambdas[e];
    const piola_v3 dx =
        piola_attachment_correction(piola_position(xv, dv), xv.w,
                                    piola_v3_make(target.x, target.y, target.z), target.w * inv_h2,
                                    &lambda);
    dv = piola_displace(dv, dx);
    lambdas[e] = lambda;
  }
  d[v] = dv;
}
