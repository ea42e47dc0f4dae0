/* Piola OpenCL 1.2 render-mesh kernels: the detail vertices of kernels/piola_render.h over a
 * body's deformed surface, computed on the device when the application reads them (one launch
 * each, one read-back). Follows piola_step.cl in the program (it uses its helpers and
 * PIOLA_KERNEL).
 *
 * Surface vertices ("sv") of the body are numbered as in its collision surface; sv_vertex
 * holds their body-local vertex index, added to vertex_offset (the body's first vertex in the
 * world's arrays, which moves when other bodies are removed). Triangles are int4 of three
 * surface-vertex indices. Each surface vertex sums the normals of its own triangles, listed in
 * ascending order in (incident_start, incident), so the result is the same every run.
 */
#ifndef PIOLA_EMBEDDED
#include "piola_render.h"
#endif

/* The unit vertex normal of every surface vertex of the body. */
PIOLA_KERNEL void piola_render_normals(__global const float4 *x, __global const int *sv_vertex,
                                       __global const int4 *triangles,
                                       __global const int *incident_start,
                                       __global const int *incident, int vertex_offset,
                                       int sv_count, __global float4 *normals) {
  const int sv = get_global_id(0);
  if (sv >= sv_count) {
    return;
  }
  piola_v3 n = piola_v3_make(0.0f, 0.0f, 0.0f);
  for (int e = incident_start[sv]; e < incident_start[sv + 1]; ++e) {
    const int4 q = triangles[incident[e]];
    n = piola_v3_add(n, piola_render_area_normal(piola_v3_from4(x[vertex_offset + sv_vertex[q.x]]),
                                                 piola_v3_from4(x[vertex_offset + sv_vertex[q.y]]),
                                                 piola_v3_from4(x[vertex_offset + sv_vertex[q.z]])));
  }
  n = piola_render_unit(n);
  normals[sv] = (float4)(n.x, n.y, n.z, 0.0f);
}

/* Position and unit normal of every detail vertex: its triangle in detail_triangle, its
 * barycentric coordinates and offset (m) in detail_coordinates. */
PIOLA_KERNEL void piola_render_points(__global const float4 *x, __global const int *sv_vertex,
                                      __global const int4 *triangles,
                                      __global const float4 *normals,
                                      __global const int *detail_triangle,
                                      __global const float4 *detail_coordinates,
                                      int vertex_offset, int count, __global float4 *positions,
                                      __global float4 *detail_normals) {
  const int i = get_global_id(0);
  if (i >= count) {
    return;
  }
  const int4 q = triangles[detail_triangle[i]];
  const float4 c = detail_coordinates[i];
  piola_v3 p, n;
  piola_render_point(piola_v3_make(c.x, c.y, c.z), c.w,
                     piola_v3_from4(x[vertex_offset + sv_vertex[q.x]]),
                     piola_v3_from4(x[vertex_offset + sv_vertex[q.y]]),
                     piola_v3_from4(x[vertex_offset + sv_vertex[q.z]]), piola_v3_from4(normals[q.x]),
                     piola_v3_from4(normals[q.y]), piola_v3_from4(normals[q.z]), &p, &n);
  positions[i] = (float4)(p.x, p.y, p.z, 0.0f);
  detail_normals[i] = (float4)(n.x, n.y, n.z, 0.0f);
}
