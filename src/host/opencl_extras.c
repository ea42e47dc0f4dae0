/* Piola OpenCL extras: render meshes (kernels/piola_render.cl) and attachments
 * (kernels/piola_attach.cl) on the device. */
#include "opencl_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Render meshes (render_mesh.c; kernels/piola_render.cl) ---------------------------------- */

enum {
  RENDER_SV_VERTEX,      /* int per surface vertex: body-local vertex */
  RENDER_TRIANGLES,      /* int4 per surface triangle: surface-vertex corners */
  RENDER_INCIDENT_START, /* int per surface vertex + 1 */
  RENDER_INCIDENT,       /* int, 3 per surface triangle */
  RENDER_NORMALS,        /* float4 per surface vertex (scratch) */
  RENDER_DETAIL_TRIANGLE,
  RENDER_DETAIL_COORDINATES, /* float4 per detail vertex: u, v, w, offset */
  RENDER_OUT_POSITIONS,      /* float4 per detail vertex */
  RENDER_OUT_NORMALS         /* float4 per detail vertex */
};

void piola_opencl_render_release(const piola_world *w, piola_render_mesh *rm) {
  for (int k = 0; k < PIOLA_RENDER_BUFFERS; ++k) {
    if (rm->device[k] != NULL) {
      piola_ocl_release_mem(piola_ocl(w) != NULL ? piola_ocl(w)->faults : NULL,
                            (cl_mem)rm->device[k]);
      rm->device[k] = NULL;
    }
  }
}

piola_status piola_opencl_render_upload(piola_world *w, piola_render_mesh *rm,
                                        const piola_body *b) {
  const size_t nsv = (size_t)b->surface_vertex_count, nt = (size_t)b->surface_count;
  const size_t n = (size_t)rm->count;
  cl_int *tri = malloc(sizeof *tri * 4 * nt);
  float *coord = malloc(sizeof *coord * 4 * n);
  piola_status s = PIOLA_OK;
  if (tri == NULL || coord == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  } else {
    for (size_t t = 0; t < nt; ++t) {
      for (int k = 0; k < 3; ++k) {
        tri[4 * t + (size_t)k] = rm->triangle_sv[3 * t + (size_t)k];
      }
      tri[4 * t + 3] = 0;
    }
    for (size_t i = 0; i < 4 * n; ++i) {
      coord[i] = (float)rm->coordinates[i];
    }
    const struct {
      size_t bytes;
      const void *data;
    } arrays[PIOLA_RENDER_BUFFERS] = {{4 * nsv, b->surface_vertices},
                                      {16 * nt, tri},
                                      {4 * (nsv + 1), rm->incident_start},
                                      {12 * nt, rm->incident},
                                      {16 * nsv, NULL},
                                      {4 * n, rm->triangle},
                                      {16 * n, coord},
                                      {16 * n, NULL},
                                      {16 * n, NULL}};
    for (int k = 0; k < PIOLA_RENDER_BUFFERS && s == PIOLA_OK; ++k) {
      cl_int e;
      const cl_mem_flags flags =
          arrays[k].data != NULL ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE;
      cl_mem m = piola_ocl_create_buffer(piola_ocl(w)->faults, piola_ocl(w)->context, flags,
                                         arrays[k].bytes > 0 ? arrays[k].bytes : 16,
                                         (void *)(uintptr_t)arrays[k].data, &e);
      if (e != CL_SUCCESS) {
        s = piola_ocl_wfail(w, e, "clCreateBuffer (render mesh)");
      } else {
        rm->device[k] = m;
      }
    }
  }
  free(tri);
  free(coord);
  if (s != PIOLA_OK) {
    piola_opencl_render_release(w, rm);
  }
  return s;
}

/* Enqueues kernel k over count work-items (no stage timing: reads are not stages). */
static piola_status render_launch(const piola_world *w, int k, int32_t count) {
  const piola_opencl *cl = piola_ocl(w);
  size_t local = cl->wg;
  size_t global = ((size_t)count + local - 1) / local * local;
  CL_CHECK(piola_ocl_launch(cl->faults, cl->queue, cl->kernels[k], &global, &local, NULL));
  return PIOLA_OK;
}

piola_status piola_opencl_render_compute(const piola_world *w, const piola_render_mesh *rm,
                                         const piola_body *b, float *positions, float *normals) {
  const piola_opencl *cl = piola_ocl(w);
  cl_mem const *d = (cl_mem const *)rm->device;
  const cl_int offset = b->vertex_offset, nsv = b->surface_vertex_count, n = rm->count;
  cl_kernel k = cl->kernels[KERNEL_RENDER_NORMALS];
  CL_CHECK(piola_ocl_set_arg(cl->faults, k, 0, sizeof(cl_mem), &cl->buffers[BUF_X]));
  CL_CHECK(piola_ocl_set_arg(cl->faults, k, 1, sizeof(cl_mem), &d[RENDER_SV_VERTEX]));
  CL_CHECK(piola_ocl_set_arg(cl->faults, k, 2, sizeof(cl_mem), &d[RENDER_TRIANGLES]));
  CL_CHECK(piola_ocl_set_arg(cl->faults, k, 3, sizeof(cl_mem), &d[RENDER_INCIDENT_START]));
  CL_CHECK(piola_ocl_set_arg(cl->faults, k, 4, sizeof(cl_mem), &d[RENDER_INCIDENT]));
  CL_CHECK(piola_ocl_set_arg(cl->faults, k, 5, sizeof(cl_int), &offset));
  CL_CHECK(piola_ocl_set_arg(cl->faults, k, 6, sizeof(cl_int), &nsv));
  CL_CHECK(piola_ocl_set_arg(cl->faults, k, 7, sizeof(cl_mem), &d[RENDER_NORMALS]));
  piola_status s = render_launch(w, KERNEL_RENDER_NORMALS, nsv);
  if (s != PIOLA_OK) {
    return s;
  }
  k = cl->kernels[KERNEL_RENDER_POINTS];
  const size_t bytes = 16 * (size_t)n;
  const cl_mem args[6] = {cl->buffers[BUF_X],        d[RENDER_SV_VERTEX],
                          d[RENDER_TRIANGLES],       d[RENDER_NORMALS],
                          d[RENDER_DETAIL_TRIANGLE], d[RENDER_DETAIL_COORDINATES]};
  cl_int err = CL_SUCCESS;
  for (cl_uint a = 0; a < 6 && err == CL_SUCCESS; ++a) {
    err = piola_ocl_set_arg(cl->faults, k, a, sizeof(cl_mem), &args[a]);
  }
  if (err == CL_SUCCESS) {
    err = piola_ocl_set_arg(cl->faults, k, 6, sizeof(cl_int), &offset);
  }
  if (err == CL_SUCCESS) {
    err = piola_ocl_set_arg(cl->faults, k, 7, sizeof(cl_int), &n);
  }
  if (err == CL_SUCCESS) {
    err = piola_ocl_set_arg(cl->faults, k, 8, sizeof(cl_mem), &d[RENDER_OUT_POSITIONS]);
  }
  if (err == CL_SUCCESS) {
    err = piola_ocl_set_arg(cl->faults, k, 9, sizeof(cl_mem), &d[RENDER_OUT_NORMALS]);
  }
  s = err == CL_SUCCESS ? render_launch(w, KERNEL_RENDER_POINTS, n)
                        : piola_ocl_wfail(w, err, "clSetKernelArg (render mesh)");
  float *tmp = s == PIOLA_OK ? malloc(bytes) : NULL;
  if (s == PIOLA_OK && tmp == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  float *dst = positions != NULL ? positions : normals;
  if (s == PIOLA_OK && dst != NULL) {
    err = piola_ocl_read(cl->faults, cl->queue,
                         d[positions != NULL ? RENDER_OUT_POSITIONS : RENDER_OUT_NORMALS], 0, bytes,
                         tmp);
    if (err != CL_SUCCESS) {
      s = piola_ocl_wfail(w, err, "clEnqueueReadBuffer (render mesh)");
    }
    for (size_t i = 0; s == PIOLA_OK && i < (size_t)n; ++i) {
      memcpy(dst + 3 * i, tmp + 4 * i, 3 * sizeof(float));
    }
  }
  free(tmp);
  return s;
}

/* ---- Attachments (attachment.c; kernels/piola_attach.cl) -------------------------------------
 * Buffers: 0 start (int per attached vertex + 1), 1 vertex (int per attached vertex), 2 targets
 * (float4 per entry: xyz, compliance), 3 multipliers (float per entry). Rewritten whole on every
 * change: there are few attachments and an engine moves their targets every frame. */

void piola_opencl_attachments_release(const piola_world *w, piola_solver_attachments *a) {
  for (int k = 0; k < PIOLA_ATTACH_BUFFERS; ++k) {
    if (a->device[k] != NULL) {
      piola_ocl_release_mem(piola_ocl(w) != NULL ? piola_ocl(w)->faults : NULL,
                            (cl_mem)a->device[k]);
      a->device[k] = NULL;
    }
  }
  a->device_capacity[0] = a->device_capacity[1] = 0;
}

piola_status piola_opencl_attachments_upload(piola_world *w) {
  piola_solver_attachments *a = &w->attach;
  if (a->count == 0) {
    return PIOLA_OK;
  }
  if (a->device[0] == NULL || a->device_capacity[0] < a->count ||
      a->device_capacity[1] < a->vertex_count) {
    piola_opencl_attachments_release(w, a);
    const size_t bytes[PIOLA_ATTACH_BUFFERS] = {4 * ((size_t)a->vertex_count + 1),
                                                4 * (size_t)a->vertex_count, 16 * (size_t)a->count,
                                                4 * (size_t)a->count};
    for (int k = 0; k < PIOLA_ATTACH_BUFFERS; ++k) {
      cl_int e;
      a->device[k] = piola_ocl_create_buffer(piola_ocl(w)->faults, piola_ocl(w)->context,
                                             CL_MEM_READ_WRITE, bytes[k], NULL, &e);
      if (e != CL_SUCCESS) {
        a->device[k] = NULL;
        piola_opencl_attachments_release(w, a);
        return piola_ocl_wfail(w, e, "clCreateBuffer (attachments)");
      }
    }
    a->device_capacity[0] = a->count;
    a->device_capacity[1] = a->vertex_count;
  }
  float *targets = malloc(sizeof *targets * 4 * (size_t)a->count);
  if (targets == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < 4 * (size_t)a->count; ++i) {
    targets[i] = (float)a->target[i];
  }
  cl_command_queue q = piola_ocl(w)->queue;
  piola_faults *f = piola_ocl(w)->faults;
  cl_int e =
      piola_ocl_write(f, q, (cl_mem)a->device[0], 0, 4 * ((size_t)a->vertex_count + 1), a->start);
  if (e == CL_SUCCESS) {
    e = piola_ocl_write(f, q, (cl_mem)a->device[1], 0, 4 * (size_t)a->vertex_count, a->vertex);
  }
  if (e == CL_SUCCESS) {
    e = piola_ocl_write(f, q, (cl_mem)a->device[2], 0, 16 * (size_t)a->count, targets);
  }
  free(targets);
  return e == CL_SUCCESS ? PIOLA_OK : piola_ocl_wfail(w, e, "clEnqueueWriteBuffer (attachments)");
}
