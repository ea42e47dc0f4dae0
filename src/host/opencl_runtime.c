/* Piola OpenCL runtime: every OpenCL call that can fail, checked, counted and open to the test
 * fault hook; the mapping of OpenCL errors to statuses and messages; kernel launches. */
#include "opencl_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t piola_ocl_stride_items(const piola_opencl *cl, size_t n) {
  size_t per_item = 1;
  if (cl->cpu_device) {
    const size_t most = 4 * (size_t)cl->compute_units * cl->wg;
    per_item = n > most ? (n + most - 1) / most : 1;
  }
  return ((n + per_item - 1) / per_item + cl->wg - 1) / cl->wg * cl->wg;
}

/* The partial maxima piola_contact_vertices and piola_contact_boxes write over n boxes: one per
 * work-item on CPU devices, one per work-group on GPUs. */
size_t piola_ocl_box_partials(const piola_opencl *cl, size_t n) {
  const size_t items = piola_ocl_stride_items(cl, n);
  return cl->cpu_device ? items : items / cl->wg;
}

/* ---- Errors -------------------------------------------------------------------------- */

const char *piola_ocl_error_name(cl_int e) {
  switch (e) {
  case CL_DEVICE_NOT_FOUND:
    return "CL_DEVICE_NOT_FOUND";
  case CL_DEVICE_NOT_AVAILABLE:
    return "CL_DEVICE_NOT_AVAILABLE";
  case CL_COMPILER_NOT_AVAILABLE:
    return "CL_COMPILER_NOT_AVAILABLE";
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
  case CL_OUT_OF_RESOURCES:
    return "CL_OUT_OF_RESOURCES";
  case CL_OUT_OF_HOST_MEMORY:
    return "CL_OUT_OF_HOST_MEMORY";
  case CL_BUILD_PROGRAM_FAILURE:
    return "CL_BUILD_PROGRAM_FAILURE";
  case CL_INVALID_VALUE:
    return "CL_INVALID_VALUE";
  case CL_INVALID_DEVICE:
    return "CL_INVALID_DEVICE";
  case CL_INVALID_CONTEXT:
    return "CL_INVALID_CONTEXT";
  case CL_INVALID_COMMAND_QUEUE:
    return "CL_INVALID_COMMAND_QUEUE";
  case CL_INVALID_MEM_OBJECT:
    return "CL_INVALID_MEM_OBJECT";
  case CL_INVALID_BUILD_OPTIONS:
    return "CL_INVALID_BUILD_OPTIONS";
  case CL_INVALID_PROGRAM_EXECUTABLE:
    return "CL_INVALID_PROGRAM_EXECUTABLE";
  case CL_INVALID_KERNEL_NAME:
    return "CL_INVALID_KERNEL_NAME";
  case CL_INVALID_KERNEL_ARGS:
    return "CL_INVALID_KERNEL_ARGS";
  case CL_INVALID_WORK_GROUP_SIZE:
    return "CL_INVALID_WORK_GROUP_SIZE";
  case CL_INVALID_GLOBAL_WORK_SIZE:
    return "CL_INVALID_GLOBAL_WORK_SIZE";
  case CL_INVALID_BUFFER_SIZE:
    return "CL_INVALID_BUFFER_SIZE";
  case CL_INVALID_ARG_SIZE:
    return "CL_INVALID_ARG_SIZE";
  case CL_INVALID_ARG_VALUE:
    return "CL_INVALID_ARG_VALUE";
  case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
    return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
  case CL_PLATFORM_NOT_FOUND_KHR_VALUE:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return "OpenCL error";
  }
}

piola_status piola_ocl_status(cl_int e) {
  switch (e) {
  case CL_SUCCESS:
    return PIOLA_OK;
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
  case CL_OUT_OF_RESOURCES:
  case CL_INVALID_BUFFER_SIZE:
    return PIOLA_ERROR_OUT_OF_DEVICE_MEMORY;
  case CL_OUT_OF_HOST_MEMORY:
    return PIOLA_ERROR_OUT_OF_MEMORY;
  case CL_DEVICE_NOT_AVAILABLE:
  case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
    return PIOLA_ERROR_DEVICE_LOST;
  case CL_DEVICE_NOT_FOUND:
  case CL_PLATFORM_NOT_FOUND_KHR_VALUE:
    return PIOLA_ERROR_NO_DEVICE;
  default:
    return PIOLA_ERROR_DEVICE;
  }
}

/* Logs a failed call and maps its code to a status. */
piola_status piola_ocl_fail(const piola_logger *log, cl_int e, const char *what) {
  piola_log(log, PIOLA_LOG_ERROR, "OpenCL: %s failed: %s (%d)", what, piola_ocl_error_name(e),
            (int)e);
  return piola_ocl_status(e);
}

/* ---- Calls and the fault hook --------------------------------------------------------
 * Every OpenCL call that can fail, and every release, goes through one of these wrappers
 * (f: the world's fault record, NULL in normal use). A call the armed fault picks is not made:
 * it answers the armed error (backend.h, piola_faults). Objects made and released are
 * counted so that tests can check for leaks. */

/* The kind's usual error code. */
static cl_int fault_error(piola_fault_kind kind) {
  switch (kind) {
  case PIOLA_FAULT_ALLOC:
    return CL_MEM_OBJECT_ALLOCATION_FAILURE;
  case PIOLA_FAULT_BUILD:
    return CL_BUILD_PROGRAM_FAILURE;
  case PIOLA_FAULT_ARG:
    return CL_INVALID_ARG_VALUE;
  case PIOLA_FAULT_LOST:
    return CL_DEVICE_NOT_AVAILABLE;
  default:
    return CL_OUT_OF_RESOURCES;
  }
}

/* Counts a call of `kind`; the error it must answer, or CL_SUCCESS to make the call. */
static cl_int fault(piola_faults *f, piola_fault_kind kind) {
  if (f == NULL) {
    return CL_SUCCESS;
  }
  f->calls[kind]++;
  f->calls[PIOLA_FAULT_NONE]++;
  const cl_int error = f->error != 0 ? (cl_int)f->error : fault_error(f->kind);
  if (f->lost) {
    f->injected++;
    return (cl_int)f->lost_error;
  }
  if (f->kind == PIOLA_FAULT_LOST && f->calls[PIOLA_FAULT_NONE] == f->nth) {
    f->lost = true;
    f->lost_error = error;
    f->injected++;
    return error;
  }
  if (f->kind == kind && f->calls[kind] == f->nth) {
    f->injected++;
    return error;
  }
  return CL_SUCCESS;
}

static void count_created(piola_faults *f, const void *object) {
  if (f != NULL && object != NULL) {
    f->created++;
  }
}

static void count_released(piola_faults *f) {
  if (f != NULL) {
    f->released++;
  }
}

cl_context piola_ocl_create_context(piola_faults *f, const cl_context_properties *props,
                                    const cl_device_id *device, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_CONTEXT)) != CL_SUCCESS) {
    return NULL;
  }
  cl_context c = clCreateContext(props, 1, device, NULL, NULL, e);
  count_created(f, c);
  return c;
}

cl_command_queue piola_ocl_create_queue(piola_faults *f, cl_context ctx, cl_device_id device,
                                        cl_command_queue_properties props, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_CONTEXT)) != CL_SUCCESS) {
    return NULL;
  }
  cl_command_queue q = clCreateCommandQueue(ctx, device, props, e);
  count_created(f, q);
  return q;
}

cl_program piola_ocl_create_program(piola_faults *f, cl_context ctx, cl_uint count,
                                    const char **sources, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_BUILD)) != CL_SUCCESS) {
    return NULL;
  }
  cl_program p = clCreateProgramWithSource(ctx, count, sources, NULL, e);
  count_created(f, p);
  return p;
}

cl_int piola_ocl_build_program(piola_faults *f, cl_program prog, const cl_device_id *device,
                               const char *options) {
  cl_int e = fault(f, PIOLA_FAULT_BUILD);
  return e != CL_SUCCESS ? e : clBuildProgram(prog, 1, device, options, NULL, NULL);
}

cl_kernel piola_ocl_create_kernel(piola_faults *f, cl_program prog, const char *name, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_KERNEL)) != CL_SUCCESS) {
    return NULL;
  }
  cl_kernel k = clCreateKernel(prog, name, e);
  count_created(f, k);
  return k;
}

cl_int piola_ocl_set_arg(piola_faults *f, cl_kernel k, cl_uint index, size_t size,
                         const void *value) {
  cl_int e = fault(f, PIOLA_FAULT_ARG);
  return e != CL_SUCCESS ? e : clSetKernelArg(k, index, size, value);
}

cl_mem piola_ocl_create_buffer(piola_faults *f, cl_context ctx, cl_mem_flags flags, size_t bytes,
                               void *host, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_ALLOC)) != CL_SUCCESS) {
    return NULL;
  }
  cl_mem m = clCreateBuffer(ctx, flags, bytes, host, e);
  if (*e != CL_SUCCESS) {
    return NULL;
  }
  count_created(f, m);
  return m;
}

cl_int piola_ocl_launch(piola_faults *f, cl_command_queue q, cl_kernel k, const size_t *global,
                        const size_t *local, cl_event *ev) {
  cl_int e = fault(f, PIOLA_FAULT_ENQUEUE);
  if (e == CL_SUCCESS) {
    e = clEnqueueNDRangeKernel(q, k, 1, NULL, global, local, 0, NULL, ev);
    if (e == CL_SUCCESS && ev != NULL) {
      count_created(f, *ev);
    }
  }
  return e;
}

cl_int piola_ocl_write(piola_faults *f, cl_command_queue q, cl_mem m, size_t offset, size_t bytes,
                       const void *data) {
  cl_int e = fault(f, PIOLA_FAULT_ENQUEUE);
  return e != CL_SUCCESS ? e
                         : clEnqueueWriteBuffer(q, m, CL_TRUE, offset, bytes, data, 0, NULL, NULL);
}

cl_int piola_ocl_fill(piola_faults *f, cl_command_queue q, cl_mem m, const void *pattern,
                      size_t pattern_size, size_t bytes, cl_event *ev) {
  cl_int e = fault(f, PIOLA_FAULT_ENQUEUE);
  if (e == CL_SUCCESS) {
    e = clEnqueueFillBuffer(q, m, pattern, pattern_size, 0, bytes, 0, NULL, ev);
    if (e == CL_SUCCESS && ev != NULL) {
      count_created(f, *ev);
    }
  }
  return e;
}

cl_int piola_ocl_flush(piola_faults *f, cl_command_queue q) {
  cl_int e = fault(f, PIOLA_FAULT_ENQUEUE);
  return e != CL_SUCCESS ? e : clFlush(q);
}

cl_int piola_ocl_read(piola_faults *f, cl_command_queue q, cl_mem m, size_t offset, size_t bytes,
                      void *data) {
  cl_int e = fault(f, PIOLA_FAULT_READ);
  return e != CL_SUCCESS ? e
                         : clEnqueueReadBuffer(q, m, CL_TRUE, offset, bytes, data, 0, NULL, NULL);
}

cl_int piola_ocl_finish(piola_faults *f, cl_command_queue q) {
  cl_int e = fault(f, PIOLA_FAULT_READ);
  return e != CL_SUCCESS ? e : clFinish(q);
}

void piola_ocl_release_mem(piola_faults *f, cl_mem m) {
  if (m != NULL) {
    clReleaseMemObject(m);
    count_released(f);
  }
}

void piola_ocl_release_event(piola_faults *f, cl_event ev) {
  if (ev != NULL) {
    clReleaseEvent(ev);
    count_released(f);
  }
}

void piola_ocl_release_kernel(piola_faults *f, cl_kernel k) {
  if (k != NULL) {
    clReleaseKernel(k);
    count_released(f);
  }
}

void piola_ocl_release_program(piola_faults *f, cl_program p) {
  if (p != NULL) {
    clReleaseProgram(p);
    count_released(f);
  }
}

void piola_ocl_release_queue(piola_faults *f, cl_command_queue q) {
  if (q != NULL) {
    clReleaseCommandQueue(q);
    count_released(f);
  }
}

void piola_ocl_release_context(piola_faults *f, cl_context c) {
  if (c != NULL) {
    clReleaseContext(c);
    count_released(f);
  }
}

piola_status piola_ocl_wfail(const piola_world *w, cl_int e, const char *what) {
  piola_status s = piola_ocl_fail(&w->def.logger, e, what);
  if (s == PIOLA_ERROR_DEVICE_LOST) {
    piola_ocl(w)->lost = true;
  }
  return s;
}

bool piola_opencl_lost(const piola_world *w) {
  return piola_ocl(w) != NULL && piola_ocl(w)->lost;
}

/* Enqueues kernel k over `count` work-items (rounded up to the work-group size). */
piola_status piola_ocl_enqueue(piola_world *w, int k, int32_t count, piola_stage stage) {
  piola_opencl *cl = piola_ocl(w);
  if (count <= 0) {
    return PIOLA_OK;
  }
  size_t local = k == KERNEL_SOLVE_PACKETS || k == KERNEL_VBD_TET_BLOCKS ? cl->packet_wg
                 : k == KERNEL_SOLVE_BODY_PACKETS                        ? PACKET_BODY_WORK_GROUP
                                                                         : cl->wg;
  size_t global = ((size_t)count + local - 1) / local * local;
  cl_event ev = NULL;
  bool record = w->def.profile;
  if (record && cl->event_count == cl->event_capacity) {
    int32_t nc = cl->event_capacity > 0 ? 2 * cl->event_capacity : 256;
    event_record *ne = realloc(cl->events, sizeof *ne * (size_t)nc);
    if (ne == NULL) {
      return PIOLA_ERROR_OUT_OF_MEMORY;
    }
    cl->events = ne;
    cl->event_capacity = nc;
  }
  CL_CHECK(piola_ocl_launch(cl->faults, cl->queue, cl->kernels[k], &global, &local,
                            record ? &ev : NULL));
  if (record) {
    cl->events[cl->event_count].event = ev;
    cl->events[cl->event_count].stage = stage;
    cl->events[cl->event_count].kernel = k;
    cl->event_count++;
  }
  return PIOLA_OK;
}
