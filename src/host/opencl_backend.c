/* Piola OpenCL backend: device choice, program build, buffers and the step's stages as kernel
 * launches (one per color per iteration, all bodies in it), on any OpenCL 1.2 device.
 *
 * The kernels (kernels/piola_step.cl) are embedded at build time together with the shared
 * math headers; the program is built once per world for its device. Every cl* call is
 * checked; failures return a piola_status, the OpenCL error code goes to the logger, and
 * whatever was created is released. Nothing waits on the device inside a step: a step is a
 * sequence of enqueues on one in-order queue and a flush. Read-backs happen only when the
 * user asks for data (piola_body_get_positions, piola_world_get_stats).
 *
 * Compiled only with PIOLA_OPENCL=ON (PIOLA_WITH_OPENCL); without it, opencl_stub.c provides the
 * same entry points, each answering PIOLA_ERROR_UNSUPPORTED or "nothing on the device".
 */
#include "piola_internal.h"

#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clGetPlatformIDs' answer when no ICD is installed (cl_khr_icd). */
#define CL_PLATFORM_NOT_FOUND_KHR_VALUE (-1001)

/* kernels/ embedded by cmake/embed_kernels.cmake */
extern const char *const piola_kernel_sources[];
extern const char *const piola_kernel_source_names[];
extern const size_t piola_kernel_source_count;

enum {
  KERNEL_PREDICT,
  KERNEL_SOLVE,
  KERNEL_SOLVE_JACOBI,
  KERNEL_APPLY_JACOBI,
  KERNEL_COLLIDE,
  KERNEL_UPDATE,
  KERNEL_PLASTICITY,
  KERNEL_SUBSTEP_BODIES,
  KERNEL_CONTACT_VERTICES,
  KERNEL_CONTACT_BOXES,
  KERNEL_CONTACT_GRID,
  KERNEL_CONTACT_ENTER,
  KERNEL_SCAN_BLOCKS,
  KERNEL_SCAN_TOTALS,
  KERNEL_SCAN_ADD,
  KERNEL_CONTACT_MARK_INVERTED,
  KERNEL_CONTACT_NARROW,
  KERNEL_CONTACT_CORNERS,
  KERNEL_CONTACT_SORT_CORNERS,
  KERNEL_CONTACT_SOLVE,
  KERNEL_CONTACT_APPLY,
  KERNEL_CLOTH_TRIS,
  KERNEL_CLOTH_BENDS,
  KERNEL_CLOTH_COLOR,
  KERNEL_RENDER_NORMALS,
  KERNEL_RENDER_POINTS,
  KERNEL_ATTACHMENTS,
  KERNEL_SOLVE_PACKETS, /* these two from the packet program (piola_packet.cl), where built */
  KERNEL_SOLVE_BODY_PACKETS,
  KERNEL_COUNT
};
static const char *const kernel_names[KERNEL_COUNT] = {"piola_predict",
                                                       "piola_solve_color",
                                                       "piola_solve_jacobi",
                                                       "piola_apply_jacobi",
                                                       "piola_collide",
                                                       "piola_update_velocities",
                                                       "piola_plasticity",
                                                       "piola_substep_bodies",
                                                       "piola_contact_vertices",
                                                       "piola_contact_boxes",
                                                       "piola_contact_grid",
                                                       "piola_contact_enter",
                                                       "piola_scan_blocks",
                                                       "piola_scan_totals",
                                                       "piola_scan_add",
                                                       "piola_contact_mark_inverted",
                                                       "piola_contact_narrow",
                                                       "piola_contact_corners",
                                                       "piola_contact_sort_corners",
                                                       "piola_contact_solve",
                                                       "piola_contact_apply",
                                                       "piola_solve_cloth_tris",
                                                       "piola_solve_cloth_bends",
                                                       "piola_solve_cloth_color",
                                                       "piola_render_normals",
                                                       "piola_render_points",
                                                       "piola_attachments",
                                                       "piola_solve_color_packets",
                                                       "piola_solve_body_packets"};

/* Entries one work-group scans (PIOLA_SCAN_ITEMS in piola_contact.cl per work-item). */
#define SCAN_ITEMS 16

/* Buffers, each with its size in bytes. */
enum {
  BUF_X,
  BUF_D,
  BUF_V,
  BUF_TETS,
  BUF_TET_M,
  BUF_TET_VOLUME,
  BUF_TET_LAMBDA,
  BUF_TET_MATERIAL,
  BUF_MATERIALS,
  BUF_COLLIDERS,
  BUF_PLASTIC_TET,
  BUF_PLASTIC_DM,
  BUF_PLASTIC_STRAIN,
  BUF_JACOBI_VERTICES,
  BUF_JACOBI_START,
  BUF_JACOBI_INCIDENCE,
  BUF_JACOBI_DELTA,
  BUF_FORCES,
  BUF_BODY_VERTEX,
  BUF_BODY_COLOR,
  BUF_BODY_JACOBI,
  BUF_SUPPORT, /* per vertex: the normal of the collider it rests on (piola_tet_support) */
  /* contacts (piola_contact.cl) */
  BUF_SV_VERTEX,
  BUF_SV_BODY,
  BUF_SV_NEAR,      /* per surface vertex: its near windows (first triangles, int2) */
  BUF_SV_NEAR_MASK, /* and their masks (ulong2) */
  BUF_SV_REST,
  BUF_SV_X, /* per surface vertex, each substep: its start and predicted positions */
  BUF_SV_P,
  BUF_TRIANGLES,
  BUF_BODY_FILTER,
  BUF_TRI_BOX,
  BUF_CLUSTER_FIRST, /* the grid's clusters: first triangle of each, then the count */
  BUF_CLUSTER_BOX,
  BUF_PARTIAL,
  BUF_GRID,
  BUF_BUCKET_COUNT, /* counts, then the fill cursors of the scatter */
  BUF_BUCKET_START,
  BUF_BUCKET_CLUSTERS,
  BUF_SCAN_TOTALS,
  BUF_CONTACT_COUNT,
  BUF_CONTACT_TRI,
  BUF_PREVIOUS_COUNT, /* the previous substep's contacts (swapped with the two above) */
  BUF_PREVIOUS_TRI,
  BUF_COUNTERS,
  BUF_CORNER_COUNT, /* counts, then the fill cursors */
  BUF_CORNER_START,
  BUF_CORNER_ENTRY,
  BUF_CONTACT_DELTA,
  BUF_CONTACT_SPLIT,  /* per surface vertex: its mass split (piola_contact_split) */
  BUF_CONTACT_ACTIVE, /* the surface vertices with contacts or corner entries this substep */
  BUF_TURNED, /* per vertex: whether a tet at it is inverted (piola_contact_mark_inverted) */
  /* cloth kinds */
  BUF_CLOTH_TRIS,
  BUF_CLOTH_TRI_DM,
  BUF_CLOTH_TRI_AREA,
  BUF_CLOTH_TRI_LAMBDA,
  BUF_CLOTH_BENDS,
  BUF_CLOTH_BEND_K,
  BUF_CLOTH_BEND_Q,
  BUF_CLOTH_BEND_LAMBDA,
  BUF_CLOTH_BEND_MATERIAL,
  BUF_CLOTH_MATERIALS,
  BUF_COUNT
};

typedef struct event_record {
  cl_event event;
  piola_stage stage;
  int kernel; /* the kernel launched (KERNEL_...) */
} event_record;

struct piola_opencl {
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  cl_program program;
  cl_program packet_program; /* SOLVE_TETS in SIMD lanes (CPU devices), or NULL */
  int lanes;                 /* tets per work-item of SOLVE_TETS: 1, or the packet program's */
  size_t packet_wg;          /* the packet program's work-group size */
  int32_t compute_units;
  bool cpu_device; /* CL_DEVICE_TYPE_CPU: a core runs a work-group's items one after another */
  cl_kernel kernels[KERNEL_COUNT];
  cl_mem buffers[BUF_COUNT];
  size_t buffer_bytes[BUF_COUNT];
  char device_name[128];
  char program_options[512]; /* the build options of program and packet_program */
  char packet_options[640];
  size_t wg;
  cl_ulong local_bytes; /* the device's local memory per work-group */
  bool live;            /* the device holds the current vertex and tet state */
  /* Collider records [first, end) changed since the upload (empty when first >= end). */
  int32_t colliders_dirty_first, colliders_dirty_end;
  int32_t vertex_count; /* sizes of the uploaded state */
  int32_t tet_count;
  int32_t plastic_count;
  int32_t sv_count, cluster_count;           /* contact surfaces uploaded */
  int32_t cloth_tri_count, cloth_bend_count; /* cloth constraints uploaded */
  /* Profiling: the events of the step in flight and the stage times of the last step. */
  event_record *events;
  int32_t event_count, event_capacity;
  double stage_ms[PIOLA_STAGE_COUNT];
  double kernel_ms[KERNEL_COUNT]; /* the last step's device time per kernel (profiling) */
  int32_t kernel_launches[KERNEL_COUNT];
  piola_faults *faults; /* the test hook (NULL in normal use) */
  bool lost;            /* the device is gone, or its state was left half advanced */
};

/* Work-items for a kernel that strides over n entries (the contact solve, piola_contact_boxes):
 * on GPUs one per entry; on CPU devices four work-groups per compute unit, each work-item going
 * through many entries: a work-group costs a CPU device more to start than an entry takes
 * (PoCL, 2-core EPYC, 100 Armadillos: the contact solve's 40 launches per step took 18 ms with
 * a work-item for every 16 surface vertices, 11 ms so). */
static size_t stride_items(const piola_opencl *cl, size_t n) {
  size_t per_item = 1;
  if (cl->cpu_device) {
    const size_t most = 4 * (size_t)cl->compute_units * cl->wg;
    per_item = n > most ? (n + most - 1) / most : 1;
  }
  return ((n + per_item - 1) / per_item + cl->wg - 1) / cl->wg * cl->wg;
}

/* The partial maxima piola_contact_vertices and piola_contact_boxes write over n boxes: one per
 * work-item on CPU devices, one per work-group on GPUs. */
static size_t box_partials(const piola_opencl *cl, size_t n) {
  const size_t items = stride_items(cl, n);
  return cl->cpu_device ? items : items / cl->wg;
}

/* ---- Errors -------------------------------------------------------------------------- */

static const char *cl_error_name(cl_int e) {
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

static piola_status status_of(cl_int e) {
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
static piola_status cl_fail(const piola_logger *log, cl_int e, const char *what) {
  piola_log(log, PIOLA_LOG_ERROR, "OpenCL: %s failed: %s (%d)", what, cl_error_name(e), (int)e);
  return status_of(e);
}

/* A failed call of world w's device: logged and mapped as cl_fail(); an error that means the
 * device is gone marks the world lost. */
static piola_status wfail(const piola_world *w, cl_int e, const char *what);

/* Returns from the enclosing function (which has the world `w` in scope) when `call` fails. */
#define CL_CHECK(call)                                                                             \
  do {                                                                                             \
    cl_int cl_e_ = (call);                                                                         \
    if (cl_e_ != CL_SUCCESS) {                                                                     \
      return wfail(w, cl_e_, #call);                                                               \
    }                                                                                              \
  } while (0)

/* ---- Calls and the fault hook --------------------------------------------------------
 * Every OpenCL call that can fail, and every release, goes through one of these wrappers
 * (f: the world's fault record, NULL in normal use). A call the armed fault picks is not made:
 * it answers the armed error (piola_internal.h, piola_faults). Objects made and released are
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

static cl_context ocl_create_context(piola_faults *f, const cl_context_properties *props,
                                     const cl_device_id *device, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_CONTEXT)) != CL_SUCCESS) {
    return NULL;
  }
  cl_context c = clCreateContext(props, 1, device, NULL, NULL, e);
  count_created(f, c);
  return c;
}

static cl_command_queue ocl_create_queue(piola_faults *f, cl_context ctx, cl_device_id device,
                                         cl_command_queue_properties props, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_CONTEXT)) != CL_SUCCESS) {
    return NULL;
  }
  cl_command_queue q = clCreateCommandQueue(ctx, device, props, e);
  count_created(f, q);
  return q;
}

static cl_program ocl_create_program(piola_faults *f, cl_context ctx, cl_uint count,
                                     const char **sources, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_BUILD)) != CL_SUCCESS) {
    return NULL;
  }
  cl_program p = clCreateProgramWithSource(ctx, count, sources, NULL, e);
  count_created(f, p);
  return p;
}

static cl_int ocl_build_program(piola_faults *f, cl_program prog, const cl_device_id *device,
                                const char *options) {
  cl_int e = fault(f, PIOLA_FAULT_BUILD);
  return e != CL_SUCCESS ? e : clBuildProgram(prog, 1, device, options, NULL, NULL);
}

static cl_kernel ocl_create_kernel(piola_faults *f, cl_program prog, const char *name, cl_int *e) {
  if ((*e = fault(f, PIOLA_FAULT_KERNEL)) != CL_SUCCESS) {
    return NULL;
  }
  cl_kernel k = clCreateKernel(prog, name, e);
  count_created(f, k);
  return k;
}

static cl_int ocl_set_arg(piola_faults *f, cl_kernel k, cl_uint index, size_t size,
                          const void *value) {
  cl_int e = fault(f, PIOLA_FAULT_ARG);
  return e != CL_SUCCESS ? e : clSetKernelArg(k, index, size, value);
}

static cl_mem ocl_create_buffer(piola_faults *f, cl_context ctx, cl_mem_flags flags, size_t bytes,
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

static cl_int ocl_launch(piola_faults *f, cl_command_queue q, cl_kernel k, const size_t *global,
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

static cl_int ocl_write(piola_faults *f, cl_command_queue q, cl_mem m, size_t offset, size_t bytes,
                        const void *data) {
  cl_int e = fault(f, PIOLA_FAULT_ENQUEUE);
  return e != CL_SUCCESS ? e
                         : clEnqueueWriteBuffer(q, m, CL_TRUE, offset, bytes, data, 0, NULL, NULL);
}

static cl_int ocl_fill(piola_faults *f, cl_command_queue q, cl_mem m, const void *pattern,
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

static cl_int ocl_flush(piola_faults *f, cl_command_queue q) {
  cl_int e = fault(f, PIOLA_FAULT_ENQUEUE);
  return e != CL_SUCCESS ? e : clFlush(q);
}

static cl_int ocl_read(piola_faults *f, cl_command_queue q, cl_mem m, size_t offset, size_t bytes,
                       void *data) {
  cl_int e = fault(f, PIOLA_FAULT_READ);
  return e != CL_SUCCESS ? e
                         : clEnqueueReadBuffer(q, m, CL_TRUE, offset, bytes, data, 0, NULL, NULL);
}

static cl_int ocl_finish(piola_faults *f, cl_command_queue q) {
  cl_int e = fault(f, PIOLA_FAULT_READ);
  return e != CL_SUCCESS ? e : clFinish(q);
}

static void ocl_release_mem(piola_faults *f, cl_mem m) {
  if (m != NULL) {
    clReleaseMemObject(m);
    count_released(f);
  }
}

static void ocl_release_event(piola_faults *f, cl_event ev) {
  if (ev != NULL) {
    clReleaseEvent(ev);
    count_released(f);
  }
}

static void ocl_release_kernel(piola_faults *f, cl_kernel k) {
  if (k != NULL) {
    clReleaseKernel(k);
    count_released(f);
  }
}

static void ocl_release_program(piola_faults *f, cl_program p) {
  if (p != NULL) {
    clReleaseProgram(p);
    count_released(f);
  }
}

static void ocl_release_queue(piola_faults *f, cl_command_queue q) {
  if (q != NULL) {
    clReleaseCommandQueue(q);
    count_released(f);
  }
}

static void ocl_release_context(piola_faults *f, cl_context c) {
  if (c != NULL) {
    clReleaseContext(c);
    count_released(f);
  }
}

static piola_status wfail(const piola_world *w, cl_int e, const char *what) {
  piola_status s = cl_fail(&w->def.logger, e, what);
  if (s == PIOLA_ERROR_DEVICE_LOST) {
    w->cl->lost = true;
  }
  return s;
}

bool piola_opencl_lost(const piola_world *w) {
  return w->cl != NULL && w->cl->lost;
}

/* ---- Devices ------------------------------------------------------------------------- */

typedef struct device_entry {
  cl_platform_id platform;
  cl_device_id device;
  piola_device_info info;
  int64_t score; /* higher is preferred by the automatic choice */
} device_entry;

static void info_string(cl_device_id d, cl_device_info what, char *out, size_t n) {
  out[0] = '\0';
  if (clGetDeviceInfo(d, what, n, out, NULL) != CL_SUCCESS) {
    out[0] = '\0';
  }
  out[n - 1] = '\0';
}

/* Enumerates every device of every platform; *out is malloc'd (free it). */
static piola_status enumerate(device_entry **out, int32_t *count) {
  *out = NULL;
  *count = 0;
  cl_uint np = 0;
  cl_int e = clGetPlatformIDs(0, NULL, &np);
  if (e == CL_PLATFORM_NOT_FOUND_KHR_VALUE || np == 0) {
    return PIOLA_OK; /* no OpenCL runtime installed */
  }
  if (e != CL_SUCCESS) {
    return status_of(e);
  }
  cl_platform_id *platforms = malloc(sizeof *platforms * np);
  if (platforms == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (clGetPlatformIDs(np, platforms, NULL) != CL_SUCCESS) {
    free(platforms);
    return PIOLA_ERROR_DEVICE;
  }
  device_entry *list = NULL;
  int32_t n = 0, cap = 0;
  for (cl_uint pi = 0; pi < np; ++pi) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) {
      continue;
    }
    cl_device_id *devs = malloc(sizeof *devs * nd);
    if (devs == NULL ||
        clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, nd, devs, NULL) != CL_SUCCESS) {
      free(devs);
      continue;
    }
    char platform_name[128];
    platform_name[0] = '\0';
    clGetPlatformInfo(platforms[pi], CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL);
    platform_name[sizeof platform_name - 1] = '\0';
    for (cl_uint di = 0; di < nd; ++di) {
      if (n == cap) {
        int32_t nc = cap > 0 ? 2 * cap : 8;
        device_entry *nl = realloc(list, sizeof *nl * (size_t)nc);
        if (nl == NULL) {
          free(devs);
          free(list);
          free(platforms);
          return PIOLA_ERROR_OUT_OF_MEMORY;
        }
        list = nl;
        cap = nc;
      }
      device_entry *d = &list[n++];
      memset(d, 0, sizeof *d);
      d->platform = platforms[pi];
      d->device = devs[di];
      piola_device_info *info = &d->info;
      info->platform_index = (int32_t)pi;
      info->device_index = (int32_t)di;
      snprintf(info->platform_name, sizeof info->platform_name, "%s", platform_name);
      info_string(devs[di], CL_DEVICE_NAME, info->name, sizeof info->name);
      info_string(devs[di], CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
      info_string(devs[di], CL_DEVICE_OPENCL_C_VERSION, info->version, sizeof info->version);
      cl_device_type type = 0;
      cl_uint units = 0, clock = 0;
      cl_ulong mem = 0;
      size_t wg = 0;
      cl_device_fp_config fp64 = 0;
      clGetDeviceInfo(devs[di], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      clGetDeviceInfo(devs[di], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
      clGetDeviceInfo(devs[di], CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof clock, &clock, NULL);
      clGetDeviceInfo(devs[di], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
      clGetDeviceInfo(devs[di], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
      clGetDeviceInfo(devs[di], CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
      snprintf(info->type, sizeof info->type, "%s",
               (type & CL_DEVICE_TYPE_GPU)           ? "gpu"
               : (type & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator"
               : (type & CL_DEVICE_TYPE_CPU)         ? "cpu"
                                                     : "other");
      info->compute_units = (int32_t)units;
      info->global_memory_bytes = (int64_t)mem;
      info->max_work_group_size = (int32_t)wg;
      info->fp64 = fp64 != 0;
      int64_t rank = (type & CL_DEVICE_TYPE_GPU)           ? 3
                     : (type & CL_DEVICE_TYPE_ACCELERATOR) ? 2
                     : (type & CL_DEVICE_TYPE_CPU)         ? 1
                                                           : 0;
      d->score = (rank << 40) + (int64_t)units * (int64_t)(clock > 0 ? clock : 1);
    }
    free(devs);
  }
  free(platforms);
  *out = list;
  *count = n;
  return PIOLA_OK;
}

piola_status piola_list_devices(piola_device_info *devices, int32_t capacity, int32_t *count) {
  if (count == NULL || capacity < 0 || (devices == NULL && capacity > 0)) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  device_entry *list;
  int32_t n;
  piola_status s = enumerate(&list, &n);
  if (s != PIOLA_OK) {
    return s;
  }
  for (int32_t i = 0; i < n && i < capacity; ++i) {
    devices[i] = list[i].info;
  }
  *count = n;
  free(list);
  return PIOLA_OK;
}

static bool contains_nocase(const char *hay, const char *needle) {
  size_t nl = strlen(needle);
  for (const char *h = hay; *h != '\0'; ++h) {
    size_t i = 0;
    while (i < nl && h[i] != '\0' &&
           tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) {
      ++i;
    }
    if (i == nl) {
      return true;
    }
  }
  return nl == 0;
}

/* Picks a device by spec: NULL or "" = PIOLA_DEVICE, else the best; "P:D"; a type; a name
 * substring. */
static piola_status pick_device(const char *spec, const piola_logger *log, device_entry *out) {
  if (spec == NULL || spec[0] == '\0') {
    spec = getenv("PIOLA_DEVICE");
  }
  device_entry *list;
  int32_t n;
  piola_status s = enumerate(&list, &n);
  if (s != PIOLA_OK) {
    piola_log(log, PIOLA_LOG_ERROR, "OpenCL: listing devices failed");
    return s;
  }
  int32_t best = -1;
  int p = -1, d = -1;
  char tail;
  bool by_index = spec != NULL && sscanf(spec, "%d:%d%c", &p, &d, &tail) == 2;
  for (int32_t i = 0; i < n; ++i) {
    const piola_device_info *info = &list[i].info;
    bool match;
    if (spec == NULL || spec[0] == '\0') {
      match = true;
    } else if (by_index) {
      match = info->platform_index == p && info->device_index == d;
    } else if (strcmp(spec, "gpu") == 0 || strcmp(spec, "cpu") == 0 ||
               strcmp(spec, "accelerator") == 0) {
      match = strcmp(info->type, spec) == 0;
    } else {
      match = contains_nocase(info->name, spec);
    }
    if (match && (best < 0 || list[i].score > list[best].score)) {
      best = i;
    }
  }
  if (best < 0) {
    piola_log(log, PIOLA_LOG_ERROR, "OpenCL: no device matches '%s' (%d devices found)",
              spec != NULL ? spec : "any", (int)n);
    free(list);
    return PIOLA_ERROR_NO_DEVICE;
  }
  *out = list[best];
  free(list);
  return PIOLA_OK;
}

/* ---- Program ------------------------------------------------------------------------- */

/* Builds `sources` for the device; the build log goes to the logger on failure. */
static piola_status build_program(piola_faults *f, cl_context ctx, cl_device_id dev,
                                  const char *const *sources, cl_uint count, const char *options,
                                  const piola_logger *log, cl_program *out) {
  cl_int e;
  cl_program prog = ocl_create_program(f, ctx, count, (const char **)sources, &e);
  if (e != CL_SUCCESS) {
    return cl_fail(log, e, "clCreateProgramWithSource");
  }
  e = ocl_build_program(f, prog, &dev, options);
  if (e != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *text = malloc(n + 1);
    if (text != NULL) {
      text[0] = '\0';
      clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, text, NULL);
      text[n] = '\0';
      /* The logger's line limit would cut a long log: pass it in pieces. */
      size_t len = strlen(text);
      piola_log(log, PIOLA_LOG_ERROR,
                "OpenCL: program build failed (%s); build log:", cl_error_name(e));
      for (size_t at = 0; at < len; at += 900) {
        piola_log(log, PIOLA_LOG_ERROR, "%.900s", text + at);
      }
      free(text);
    }
    ocl_release_program(f, prog);
    return e == CL_BUILD_PROGRAM_FAILURE || e == CL_INVALID_BUILD_OPTIONS ? PIOLA_ERROR_BUILD_FAILED
                                                                          : status_of(e);
  }
  *out = prog;
  return PIOLA_OK;
}

/* Context and in-order queue for a device. */
static piola_status make_context(piola_faults *f, const device_entry *d, bool profile,
                                 const piola_logger *log, cl_context *ctx,
                                 cl_command_queue *queue) {
  cl_int e;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
  *ctx = ocl_create_context(f, props, &d->device, &e);
  if (e != CL_SUCCESS) {
    *ctx = NULL;
    return cl_fail(log, e, "clCreateContext");
  }
  *queue = ocl_create_queue(f, *ctx, d->device, profile ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
  if (e != CL_SUCCESS) {
    ocl_release_context(f, *ctx);
    *ctx = NULL;
    *queue = NULL;
    return cl_fail(log, e, "clCreateCommandQueue");
  }
  return PIOLA_OK;
}

piola_status piola_opencl_try_build(const char *device_spec, const char *source,
                                    const piola_logger *logger) {
  device_entry d;
  piola_status s = pick_device(device_spec, logger, &d);
  cl_context ctx;
  cl_command_queue q;
  if (s == PIOLA_OK) {
    s = make_context(NULL, &d, false, logger, &ctx, &q);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  cl_program prog;
  s = build_program(NULL, ctx, d.device, &source, 1, "-cl-std=CL1.2", logger, &prog);
  if (s == PIOLA_OK) {
    clReleaseProgram(prog);
  }
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return s;
}

static void release_all(piola_opencl *cl) {
  piola_faults *f = cl->faults;
  for (int i = 0; i < BUF_COUNT; ++i) {
    ocl_release_mem(f, cl->buffers[i]);
  }
  for (int i = 0; i < KERNEL_COUNT; ++i) {
    ocl_release_kernel(f, cl->kernels[i]);
  }
  for (int32_t i = 0; i < cl->event_count; ++i) {
    ocl_release_event(f, cl->events[i].event);
  }
  free(cl->events);
  ocl_release_program(f, cl->program);
  ocl_release_program(f, cl->packet_program);
  ocl_release_queue(f, cl->queue);
  ocl_release_context(f, cl->context);
  free(cl);
}

/* The kernels' work-group size: the def's, else 128 on GPUs (measured best or near-best on an
 * H200 for the per-body schedule: 100 Armadillos 0.85 ms at 128 and 256, 0.87 ms at 64,
 * 1.38 ms at 32) and 256 on CPUs (PoCL runs a work-group as a loop; larger groups amortise its
 * dispatch), clamped to what the device and every kernel allow. */
static size_t pick_work_group_size(const piola_world_def *def, const device_entry *d) {
  size_t wg = def->work_group_size > 0           ? (size_t)def->work_group_size
              : strcmp(d->info.type, "cpu") == 0 ? 256
                                                 : 128;
  size_t max = d->info.max_work_group_size > 0 ? (size_t)d->info.max_work_group_size : 1;
  return wg < max ? wg : max;
}

/* Tets per work-item of SOLVE_TETS per stage: the def's, else on CPU devices the device's
 * native float vector width as 4, 8 or 16 (a CPU device runs each work-item's arithmetic on
 * scalars, one lane of its vector units: PoCL on AVX-512 says 16, on AVX2 8) and 1 elsewhere (a
 * GPU runs work-items in its lanes already). */
static int pick_lanes(const piola_world_def *def, const device_entry *d) {
  if (def->simd_lanes > 0) {
    return def->simd_lanes;
  }
  if (strcmp(d->info.type, "cpu") != 0) {
    return 1;
  }
  cl_uint width = 0;
  clGetDeviceInfo(d->device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof width, &width, NULL);
  return width >= 16 ? 16 : width >= 8 ? 8 : 4;
}

/* The work-group sizes of the packet program: 32 packets per color launch (512 tets of 16
 * lanes), so that a color of a few thousand tets still makes work-groups for every core; 8 per
 * body (a color of an Armadillo, ~60 tets, is 4 packets). */
#define PACKET_WORK_GROUP 32
#define PACKET_BODY_WORK_GROUP 8

/* The packet program (piola_packet.cl over the tet math); `options` as the main program's
 * after its work-group size. */
static piola_status build_packet_program(piola_opencl *cl, const char *options,
                                         const piola_logger *log) {
  static const char *const names[] = {"piola_shared.h", "piola_svd.h", "piola_tet.h",
                                      "piola_packet.cl"};
  const char *sources[4];
  for (int i = 0; i < 4; ++i) {
    sources[i] = NULL;
    for (size_t k = 0; k < piola_kernel_source_count; ++k) {
      if (strcmp(piola_kernel_source_names[k], names[i]) == 0) {
        sources[i] = piola_kernel_sources[k];
      }
    }
    if (sources[i] == NULL) {
      piola_log(log, PIOLA_LOG_ERROR, "OpenCL: kernel source %s is not embedded", names[i]);
      return PIOLA_ERROR_BUILD_FAILED;
    }
  }
  cl->packet_wg = cl->wg < PACKET_WORK_GROUP ? cl->wg : PACKET_WORK_GROUP;
  snprintf(cl->packet_options, sizeof cl->packet_options,
           "-cl-std=CL1.2 -DPIOLA_EMBEDDED=1 -DPIOLA_WG=%zu -DPIOLA_BODY_WG=%d -DPIOLA_LANES=%d%s",
           cl->packet_wg, PACKET_BODY_WORK_GROUP, cl->lanes, options);
  return build_program(cl->faults, cl->context, cl->device, sources, 4, cl->packet_options, log,
                       &cl->packet_program);
}

piola_status piola_opencl_create(piola_world *w, piola_faults *faults) {
  const piola_logger *log = &w->def.logger;
  device_entry d;
  piola_status s = pick_device(w->def.device_spec, log, &d);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_opencl *cl = calloc(1, sizeof *cl);
  if (cl == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  cl->faults = faults;
  cl->platform = d.platform;
  cl->device = d.device;
  snprintf(cl->device_name, sizeof cl->device_name, "%s", d.info.name);
  cl->wg = pick_work_group_size(&w->def, &d);
  cl->compute_units = d.info.compute_units > 0 ? d.info.compute_units : 1;
  cl->cpu_device = strcmp(d.info.type, "cpu") == 0;
  clGetDeviceInfo(cl->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof cl->local_bytes, &cl->local_bytes,
                  NULL);
  s = make_context(faults, &d, w->def.profile, log, &cl->context, &cl->queue);
  if (s == PIOLA_OK) {
    char common[400];
    const char *extra = getenv("PIOLA_CL_BUILD_OPTIONS");
    /* PIOLA_CPU_DEVICE: kernels/piola_step.cl (the support record) and piola_packet.cl (the
     * prefetch hint) pick the form that is faster or that compiles there. */
    snprintf(common, sizeof common, "%s%s %s", w->def.fast_math ? " -cl-fast-relaxed-math" : "",
             cl->cpu_device ? " -DPIOLA_CPU_DEVICE=1" : "", extra ? extra : "");
    snprintf(cl->program_options, sizeof cl->program_options,
             "-cl-std=CL1.2 -DPIOLA_EMBEDDED=1 -DPIOLA_WG=%zu%s", cl->wg, common);
    s = build_program(faults, cl->context, cl->device, piola_kernel_sources,
                      (cl_uint)piola_kernel_source_count, cl->program_options, log, &cl->program);
    cl->lanes = pick_lanes(&w->def, &d);
    if (s == PIOLA_OK && cl->lanes > 1) {
      s = build_packet_program(cl, common, log);
    }
  }
  for (int k = 0; k < KERNEL_COUNT && s == PIOLA_OK; ++k) {
    cl_program program = k == KERNEL_SOLVE_PACKETS || k == KERNEL_SOLVE_BODY_PACKETS
                             ? cl->packet_program
                             : cl->program;
    if (program == NULL) {
      continue;
    }
    cl_int e;
    cl->kernels[k] = ocl_create_kernel(faults, program, kernel_names[k], &e);
    if (e != CL_SUCCESS) {
      cl->kernels[k] = NULL;
      s = cl_fail(log, e, kernel_names[k]);
    }
  }
  if (s != PIOLA_OK) {
    release_all(cl);
    return s;
  }
  cl->colliders_dirty_first = 0;
  cl->colliders_dirty_end = INT32_MAX;
  w->cl = cl;
  piola_log(log, PIOLA_LOG_INFO, "OpenCL: %s on %s (work-group size %zu)", d.info.name,
            d.info.platform_name, cl->wg);
  return PIOLA_OK;
}

void piola_opencl_destroy(piola_world *w) {
  if (w->cl == NULL) {
    return;
  }
  (void)ocl_finish(w->cl->faults, w->cl->queue); /* nothing to report: the world goes */
  release_all(w->cl);
  w->cl = NULL;
}

/* ---- Buffers ------------------------------------------------------------------------- */

/* Makes buffer b hold at least `bytes` (contents are not kept). */
static piola_status ensure_buffer(piola_world *w, int b, size_t bytes, cl_mem_flags flags) {
  piola_opencl *cl = w->cl;
  bytes = bytes > 0 ? bytes : 16;
  if (cl->buffers[b] != NULL && cl->buffer_bytes[b] >= bytes) {
    return PIOLA_OK;
  }
  if (cl->buffers[b] != NULL) {
    ocl_release_mem(cl->faults, cl->buffers[b]);
    cl->buffers[b] = NULL;
    cl->buffer_bytes[b] = 0;
  }
  cl_int e;
  cl->buffers[b] = ocl_create_buffer(cl->faults, cl->context, flags, bytes, NULL, &e);
  if (e != CL_SUCCESS) {
    cl->buffers[b] = NULL;
    return wfail(w, e, "clCreateBuffer");
  }
  cl->buffer_bytes[b] = bytes;
  return PIOLA_OK;
}

static piola_status write_buffer(piola_world *w, int b, size_t offset, size_t bytes,
                                 const void *data) {
  if (bytes == 0) {
    return PIOLA_OK;
  }
  CL_CHECK(ocl_write(w->cl->faults, w->cl->queue, w->cl->buffers[b], offset, bytes, data));
  return PIOLA_OK;
}

static piola_status read_buffer(const piola_world *w, int b, size_t offset, size_t bytes,
                                void *data) {
  if (bytes == 0) {
    return PIOLA_OK;
  }
  CL_CHECK(ocl_read(w->cl->faults, w->cl->queue, w->cl->buffers[b], offset, bytes, data));
  return PIOLA_OK;
}

/* Fills the first `bytes` of buffer b with zeros. */
static piola_status zero_buffer(piola_world *w, int b, size_t bytes) {
  if (bytes == 0) {
    return PIOLA_OK;
  }
  cl_int zero = 0;
  CL_CHECK(
      ocl_fill(w->cl->faults, w->cl->queue, w->cl->buffers[b], &zero, sizeof zero, bytes, NULL));
  return PIOLA_OK;
}

/* Packs host doubles of vertices [first, first + n) into float4 (xyz, w or 0). */
static void pack_vertices(const piola_world *w, const double *xyz, bool with_w, int32_t first,
                          int32_t n, float *out) {
  for (int32_t i = 0; i < n; ++i) {
    size_t g = (size_t)(first + i);
    out[4 * (size_t)i] = (float)xyz[3 * g];
    out[4 * (size_t)i + 1] = (float)xyz[3 * g + 1];
    out[4 * (size_t)i + 2] = (float)xyz[3 * g + 2];
    out[4 * (size_t)i + 3] = with_w ? (float)w->w[g] : 0.0f;
  }
}

/* Writes the forces of vertices [first, first + count) (all of them when the buffer is new);
 * nothing while no body has forces. */
static piola_status upload_forces(piola_world *w, int32_t first, int32_t count) {
  if (w->f == NULL) {
    return PIOLA_OK;
  }
  piola_opencl *cl = w->cl;
  size_t bytes = 16 * (size_t)w->vertex_count;
  bool fresh = false;
  if (cl->buffers[BUF_FORCES] == NULL || cl->buffer_bytes[BUF_FORCES] < bytes) {
    piola_status s = ensure_buffer(w, BUF_FORCES, bytes, CL_MEM_READ_ONLY);
    if (s != PIOLA_OK) {
      return s;
    }
    first = 0;
    count = w->vertex_count;
    fresh = true;
  }
  float *tmp = malloc(16 * (size_t)(count > 0 ? count : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < count; ++i) {
    for (int k = 0; k < 3; ++k) {
      tmp[4 * (size_t)i + k] = (float)w->f[3 * (size_t)(first + i) + k];
    }
    tmp[4 * (size_t)i + 3] = 0.0f;
  }
  piola_status s = write_buffer(w, BUF_FORCES, 16 * (size_t)first, 16 * (size_t)count, tmp);
  free(tmp);
  if (s != PIOLA_OK && fresh) {
    /* A new buffer that was not filled holds garbage: drop it, so that the next upload makes
     * and fills a new one (a later write of one body's range would leave the rest garbage). */
    ocl_release_mem(cl->faults, cl->buffers[BUF_FORCES]);
    cl->buffers[BUF_FORCES] = NULL;
    cl->buffer_bytes[BUF_FORCES] = 0;
  }
  return s;
}

/* Writes the collider records that changed (all of them when the buffer had to grow). */
static piola_status upload_colliders(piola_world *w) {
  piola_opencl *cl = w->cl;
  const size_t record = sizeof(piola_collider_data);
  size_t bytes = record * (size_t)w->collider_count;
  int32_t first = cl->colliders_dirty_first;
  int32_t end =
      cl->colliders_dirty_end < w->collider_count ? cl->colliders_dirty_end : w->collider_count;
  if (cl->buffers[BUF_COLLIDERS] == NULL || cl->buffer_bytes[BUF_COLLIDERS] < bytes) {
    first = 0; /* a new buffer: written whole, now or (after a failure) at the next try */
    end = w->collider_count;
    cl->colliders_dirty_first = 0;
    cl->colliders_dirty_end = INT32_MAX;
  }
  piola_status s = ensure_buffer(w, BUF_COLLIDERS, bytes, CL_MEM_READ_ONLY);
  if (s == PIOLA_OK && first < end) {
    s = write_buffer(w, BUF_COLLIDERS, record * (size_t)first, record * (size_t)(end - first),
                     w->colliders + first);
  }
  if (s == PIOLA_OK) {
    cl->colliders_dirty_first = INT32_MAX;
    cl->colliders_dirty_end = 0;
  }
  return s;
}

/* Writes the contact surfaces: surface vertices (vertex, body, rest position), triangles
 * (three surface vertices, body) and the bodies' filters. */
static piola_status upload_contacts(piola_world *w) {
  const piola_solver_contacts *c = &w->contacts;
  const size_t nsv = (size_t)c->vertex_count, ntr = (size_t)c->triangle_count;
  size_t n = 4 * (nsv > ntr ? nsv : ntr);
  n = 4 * (size_t)c->body_count > n ? 4 * (size_t)c->body_count : n;
  float *tmp = malloc(sizeof(float) * (n > 0 ? n : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = write_buffer(w, BUF_SV_VERTEX, 0, 4 * nsv, c->vertex);
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_SV_BODY, 0, 4 * nsv, c->vertex_body);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_SV_NEAR, 0, 8 * nsv, c->vertex_near);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_SV_NEAR_MASK, 0, 16 * nsv, c->vertex_near_mask);
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nsv; ++i) {
      for (int k = 0; k < 3; ++k) {
        tmp[4 * i + (size_t)k] = (float)c->vertex_rest[3 * i + (size_t)k];
      }
      tmp[4 * i + 3] = (float)c->vertex_reach[i];
    }
    s = write_buffer(w, BUF_SV_REST, 0, 16 * nsv, tmp);
  }
  if (s == PIOLA_OK) {
    cl_int *q = (cl_int *)tmp;
    for (size_t t = 0; t < ntr; ++t) {
      for (int k = 0; k < 3; ++k) {
        q[4 * t + (size_t)k] = c->triangle[3 * t + (size_t)k];
      }
      q[4 * t + 3] = c->triangle_body[t];
    }
    s = write_buffer(w, BUF_TRIANGLES, 0, 16 * ntr, q);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_CLUSTER_FIRST, 0, 4 * ((size_t)c->cluster_count + 1), c->cluster_first);
  }
  if (s == PIOLA_OK) {
    cl_uint *f = (cl_uint *)tmp;
    for (size_t b = 0; b < (size_t)c->body_count; ++b) {
      for (int k = 0; k < 4; ++k) {
        f[4 * b + (size_t)k] = c->body_filter[4 * b + (size_t)k];
      }
    }
    s = write_buffer(w, BUF_BODY_FILTER, 0, 16 * (size_t)c->body_count, f);
  }
  free(tmp);
  if (s == PIOLA_OK) {
    s = zero_buffer(w, BUF_CONTACT_COUNT, 4 * nsv);
  }
  if (s == PIOLA_OK) {
    s = zero_buffer(w, BUF_PREVIOUS_COUNT, 4 * nsv);
  }
  if (s == PIOLA_OK) {
    w->cl->sv_count = c->vertex_count;
    w->cl->cluster_count = c->cluster_count;
  }
  return s;
}

/* Writes the cloth kinds' arrays (in color order) and the cloth material table. */
static piola_status upload_cloth(piola_world *w) {
  const piola_solver_cloth *c = &w->cloth;
  const size_t nt = (size_t)c->tri_count, nb = (size_t)c->bend_count,
               nm = (size_t)w->cloth_material_count;
  size_t n = 4 * (nt > nb ? nt : nb);
  n = n > 8 * nm ? n : 8 * nm;
  float *tmp = malloc(sizeof(float) * (n > 0 ? n : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = write_buffer(w, BUF_CLOTH_TRIS, 0, 16 * nt, c->tri_vertices);
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < 4 * nt; ++i) {
      tmp[i] = (float)c->tri_dm_inv[i];
    }
    s = write_buffer(w, BUF_CLOTH_TRI_DM, 0, 16 * nt, tmp);
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nt; ++i) {
      tmp[i] = (float)c->tri_area[i];
    }
    s = write_buffer(w, BUF_CLOTH_TRI_AREA, 0, 4 * nt, tmp);
  }
  if (s == PIOLA_OK) {
    s = zero_buffer(w, BUF_CLOTH_TRI_LAMBDA, 4 * nt);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_CLOTH_BENDS, 0, 16 * nb, c->bend_vertices);
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nb; ++i) {
      for (size_t k = 0; k < 4; ++k) {
        tmp[4 * i + k] = (float)c->bend_rest[6 * i + k];
      }
    }
    s = write_buffer(w, BUF_CLOTH_BEND_K, 0, 16 * nb, tmp);
  }
  if (s == PIOLA_OK) {
    for (size_t i = 0; i < nb; ++i) {
      tmp[2 * i] = (float)c->bend_rest[6 * i + 4];
      tmp[2 * i + 1] = (float)c->bend_rest[6 * i + 5];
    }
    s = write_buffer(w, BUF_CLOTH_BEND_Q, 0, 8 * nb, tmp);
  }
  if (s == PIOLA_OK) {
    s = zero_buffer(w, BUF_CLOTH_BEND_LAMBDA, 4 * nb);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_CLOTH_BEND_MATERIAL, 0, 4 * nb, c->bend_material);
  }
  if (s == PIOLA_OK) {
    piola_cloth_material_data *md = (piola_cloth_material_data *)tmp;
    for (size_t i = 0; i < nm; ++i) {
      const piola_cloth_material_entry *e = &w->cloth_materials[i];
      memset(&md[i], 0, sizeof md[i]);
      md[i].c11 = (float)e->tri.c11;
      md[i].c12 = (float)e->tri.c12;
      md[i].c22 = (float)e->tri.c22;
      md[i].c33 = (float)e->tri.c33;
      md[i].tri_compliance = (float)e->tri.compliance;
      md[i].bend_compliance = (float)e->bend.compliance;
      md[i].solver = e->tri.solver;
    }
    s = write_buffer(w, BUF_CLOTH_MATERIALS, 0, sizeof(piola_cloth_material_data) * nm, md);
  }
  free(tmp);
  if (s == PIOLA_OK) {
    w->cl->cloth_tri_count = c->tri_count;
    w->cl->cloth_bend_count = c->bend_count;
  }
  return s;
}

/* Uploads the whole state: vertices, tets (structure of arrays), materials, plastic data. */
static piola_status upload_all(piola_world *w) {
  piola_opencl *cl = w->cl;
  const size_t nv = (size_t)w->vertex_count, nt = (size_t)w->solver.tet_count,
               np = (size_t)w->solver.plastic_count, nm = (size_t)w->material_count,
               nj = (size_t)w->solver.jacobi_vertex_count, njt = (size_t)w->solver.jacobi_count,
               nb = (size_t)w->solver.body_count, nc = (size_t)w->solver.color_count;
  const piola_solver_contacts *ct = &w->contacts;
  const size_t nsv = (size_t)ct->vertex_count, ntr = (size_t)ct->triangle_count,
               ncl = (size_t)ct->cluster_count, ncb = (size_t)ct->body_count,
               nbk = (size_t)ct->bucket_mask + 1, K = PIOLA_CONTACTS_PER_VERTEX;
  const size_t partials = box_partials(cl, ncl > nsv ? ncl : nsv);
  const size_t scan_block = cl->wg * SCAN_ITEMS;
  const size_t scan_blocks = ((nbk > nsv ? nbk : nsv) + scan_block - 1) / scan_block;
  piola_status s = PIOLA_OK;
  const struct {
    int b;
    size_t bytes;
  } sizes[] = {
      {BUF_X, 16 * nv},
      {BUF_D, 16 * nv},
      {BUF_V, 16 * nv},
      {BUF_TETS, 16 * nt},
      {BUF_TET_M, 36 * nt},
      {BUF_TET_VOLUME, 4 * nt},
      {BUF_TET_LAMBDA, 8 * nt},
      {BUF_TET_MATERIAL, 4 * nt},
      {BUF_MATERIALS, sizeof(piola_material_data) * nm},
      {BUF_PLASTIC_TET, 4 * np},
      {BUF_PLASTIC_DM, 36 * np},
      {BUF_PLASTIC_STRAIN, 24 * np},
      {BUF_JACOBI_VERTICES, 4 * nj},
      {BUF_JACOBI_START, 4 * (nj + 1)},
      {BUF_JACOBI_INCIDENCE, 16 * njt},
      {BUF_JACOBI_DELTA, 64 * njt},
      {BUF_BODY_VERTEX, 8 * nb},
      {BUF_BODY_COLOR, 8 * nb * nc},
      {BUF_BODY_JACOBI, 16 * nb},
      {BUF_SUPPORT, 16 * nv},
      {BUF_SV_VERTEX, 4 * nsv},
      {BUF_SV_BODY, 4 * nsv},
      {BUF_SV_NEAR, 8 * nsv},
      {BUF_SV_NEAR_MASK, 16 * nsv},
      {BUF_SV_REST, 16 * nsv},
      {BUF_SV_X, 16 * nsv},
      {BUF_SV_P, 16 * nsv},
      {BUF_TRIANGLES, 16 * ntr},
      {BUF_BODY_FILTER, 16 * ncb},
      {BUF_TRI_BOX, 32 * ntr},
      {BUF_CLUSTER_FIRST, 4 * (ncl + 1)},
      {BUF_CLUSTER_BOX, 32 * ncl},
      {BUF_PARTIAL, 8 * partials},
      {BUF_GRID, 16},
      {BUF_BUCKET_COUNT, 4 * nbk},
      {BUF_BUCKET_START, 4 * (nbk + 1)},
      {BUF_BUCKET_CLUSTERS, 4 * PIOLA_CELLS_PER_CLUSTER * ncl},
      {BUF_SCAN_TOTALS, 4 * scan_blocks},
      {BUF_CONTACT_COUNT, 4 * nsv},
      {BUF_CONTACT_TRI, 4 * K * nsv},
      {BUF_PREVIOUS_COUNT, 4 * nsv},
      {BUF_PREVIOUS_TRI, 4 * K * nsv},
      {BUF_COUNTERS, 12},
      {BUF_CORNER_COUNT, 4 * nsv},
      {BUF_CORNER_START, 4 * (nsv + 1)},
      {BUF_CORNER_ENTRY, 12 * K * nsv},
      {BUF_CONTACT_DELTA, 64 * K * nsv},
      {BUF_CONTACT_SPLIT, 4 * nsv},
      {BUF_CONTACT_ACTIVE, 4 * nsv},
      {BUF_TURNED, nsv > 0 ? 4 * nv : 0},
      {BUF_CLOTH_TRIS, 16 * (size_t)w->cloth.tri_count},
      {BUF_CLOTH_TRI_DM, 16 * (size_t)w->cloth.tri_count},
      {BUF_CLOTH_TRI_AREA, 4 * (size_t)w->cloth.tri_count},
      {BUF_CLOTH_TRI_LAMBDA, 4 * (size_t)w->cloth.tri_count},
      {BUF_CLOTH_BENDS, 16 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_BEND_K, 16 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_BEND_Q, 8 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_BEND_LAMBDA, 4 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_BEND_MATERIAL, 4 * (size_t)w->cloth.bend_count},
      {BUF_CLOTH_MATERIALS, sizeof(piola_cloth_material_data) * (size_t)w->cloth_material_count}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && s == PIOLA_OK; ++i) {
    /* Exact sizes: the plane strides of the structure-of-arrays buffers are the counts. */
    if (cl->buffers[sizes[i].b] != NULL && cl->buffer_bytes[sizes[i].b] != sizes[i].bytes) {
      ocl_release_mem(cl->faults, cl->buffers[sizes[i].b]);
      cl->buffers[sizes[i].b] = NULL;
      cl->buffer_bytes[sizes[i].b] = 0;
    }
    s = ensure_buffer(w, sizes[i].b, sizes[i].bytes,
                      sizes[i].b == BUF_MATERIALS || sizes[i].b == BUF_CLOTH_MATERIALS
                          ? CL_MEM_READ_ONLY
                          : CL_MEM_READ_WRITE);
  }
  size_t staging_bytes = 16 * nv;
  staging_bytes = 36 * nt > staging_bytes ? 36 * nt : staging_bytes;
  staging_bytes = sizeof(piola_material_data) * nm > staging_bytes
                      ? sizeof(piola_material_data) * nm
                      : staging_bytes;
  void *staging = s == PIOLA_OK ? malloc(staging_bytes > 0 ? staging_bytes : 16) : NULL;
  if (s == PIOLA_OK && staging == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  float *f = staging;
  if (s == PIOLA_OK) {
    pack_vertices(w, w->x, true, 0, w->vertex_count, f);
    s = write_buffer(w, BUF_X, 0, 16 * nv, f);
  }
  if (s == PIOLA_OK) {
    pack_vertices(w, w->v, false, 0, w->vertex_count, f);
    s = write_buffer(w, BUF_V, 0, 16 * nv, f);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_TETS, 0, 16 * nt, w->solver.tet_vertices);
  }
  if (s == PIOLA_OK) {
    for (size_t t = 0; t < nt; ++t) {
      for (size_t k = 0; k < 9; ++k) {
        f[k * nt + t] = (float)w->solver.tet_m[9 * t + k];
      }
    }
    s = write_buffer(w, BUF_TET_M, 0, 36 * nt, f);
  }
  if (s == PIOLA_OK) {
    for (size_t t = 0; t < nt; ++t) {
      f[t] = (float)w->solver.tet_volume[t];
    }
    s = write_buffer(w, BUF_TET_VOLUME, 0, 4 * nt, f);
  }
  if (s == PIOLA_OK) {
    for (size_t t = 0; t < nt; ++t) {
      f[t] = (float)w->solver.tet_lambda[2 * t];
      f[nt + t] = (float)w->solver.tet_lambda[2 * t + 1];
    }
    s = write_buffer(w, BUF_TET_LAMBDA, 0, 8 * nt, f);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_TET_MATERIAL, 0, 4 * nt, w->solver.tet_material);
  }
  if (s == PIOLA_OK) {
    piola_material_data *md = staging;
    for (size_t i = 0; i < nm; ++i) {
      const piola_material_entry *e = &w->materials[i];
      memset(&md[i], 0, sizeof md[i]);
      md[i].mu = (float)e->constants.mu;
      md[i].lambda = (float)e->constants.lambda;
      md[i].compliance = (float)e->constants.compliance;
      md[i].model = e->constants.model;
      md[i].solver = e->constants.solver;
      md[i].inversion = e->constants.inversion;
      md[i].plastic_yield = e->def.plastic_yield;
      md[i].plastic_creep = e->def.plastic_creep;
      md[i].plastic_max = e->def.plastic_max;
      md[i].split = e->constants.split;
    }
    s = write_buffer(w, BUF_MATERIALS, 0, sizeof(piola_material_data) * nm, md);
  }
  if (s == PIOLA_OK && np > 0) {
    s = write_buffer(w, BUF_PLASTIC_TET, 0, 4 * np, w->solver.plastic_tet);
    if (s == PIOLA_OK) {
      for (size_t k = 0; k < np; ++k) {
        for (size_t j = 0; j < 9; ++j) {
          f[j * np + k] = (float)w->solver.plastic_dm_rest[9 * k + j];
        }
      }
      s = write_buffer(w, BUF_PLASTIC_DM, 0, 36 * np, f);
    }
    if (s == PIOLA_OK) {
      for (size_t k = 0; k < np; ++k) {
        for (size_t j = 0; j < 6; ++j) {
          f[j * np + k] = (float)w->solver.plastic_strain[6 * k + j];
        }
      }
      s = write_buffer(w, BUF_PLASTIC_STRAIN, 0, 24 * np, f);
    }
  }
  free(staging);
  if (s == PIOLA_OK && njt > 0) {
    s = write_buffer(w, BUF_JACOBI_VERTICES, 0, 4 * nj, w->solver.jacobi_vertices);
    if (s == PIOLA_OK) {
      s = write_buffer(w, BUF_JACOBI_START, 0, 4 * (nj + 1), w->solver.jacobi_start);
    }
    if (s == PIOLA_OK) {
      s = write_buffer(w, BUF_JACOBI_INCIDENCE, 0, 16 * njt, w->solver.jacobi_incidence);
    }
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_BODY_VERTEX, 0, 8 * nb, w->solver.body_vertex);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_BODY_COLOR, 0, 8 * nb * nc, w->solver.body_color);
  }
  if (s == PIOLA_OK) {
    s = write_buffer(w, BUF_BODY_JACOBI, 0, 16 * nb, w->solver.body_jacobi);
  }
  if (s == PIOLA_OK) {
    s = upload_contacts(w);
  }
  if (s == PIOLA_OK) {
    s = upload_cloth(w);
  }
  if (s == PIOLA_OK) {
    s = upload_colliders(w);
  }
  if (s == PIOLA_OK) {
    cl->vertex_count = w->vertex_count;
    s = upload_forces(w, 0, w->vertex_count);
  }
  if (s == PIOLA_OK) {
    cl->tet_count = w->solver.tet_count;
    cl->plastic_count = w->solver.plastic_count;
    cl->live = true;
  }
  return s;
}

bool piola_opencl_live(const piola_world *w) {
  return w->cl != NULL && w->cl->live;
}

piola_status piola_opencl_push_forces(piola_world *w, int32_t first, int32_t count) {
  return piola_opencl_live(w) ? upload_forces(w, first, count) : PIOLA_OK;
}

void piola_opencl_invalidate(piola_world *w) {
  w->cl->live = false;
}

void piola_opencl_colliders_changed(piola_world *w, int32_t first, int32_t end) {
  piola_opencl *cl = w->cl;
  cl->colliders_dirty_first = first < cl->colliders_dirty_first ? first : cl->colliders_dirty_first;
  cl->colliders_dirty_end = end > cl->colliders_dirty_end ? end : cl->colliders_dirty_end;
}

piola_status piola_opencl_contact_counters(const piola_world *w, int32_t out[2]) {
  cl_int tmp[2] = {0, 0};
  piola_status s = w->cl->buffers[BUF_COUNTERS] != NULL
                       ? read_buffer(w, BUF_COUNTERS, 0, sizeof tmp, tmp)
                       : PIOLA_OK;
  out[0] = tmp[0];
  out[1] = tmp[1];
  return s;
}

int64_t piola_opencl_device_bytes(const piola_world *w) {
  int64_t sum = 0;
  for (int i = 0; i < BUF_COUNT; ++i) {
    sum += (int64_t)w->cl->buffer_bytes[i];
  }
  return sum;
}

const char *piola_opencl_device_name(const piola_world *w) {
  return w->cl->device_name;
}

int32_t piola_opencl_simd_lanes(const piola_world *w) {
  return w->cl->lanes;
}

void piola_opencl_stage_ms(const piola_world *w, double out[PIOLA_STAGE_COUNT]) {
  memcpy(out, w->cl->stage_ms, sizeof w->cl->stage_ms);
}

int32_t piola_opencl_kernel_times(const piola_world *w, piola_kernel_time *out, int32_t capacity) {
  for (int32_t k = 0; k < KERNEL_COUNT && k < capacity; ++k) {
    out[k].name = kernel_names[k];
    out[k].launches = w->cl->kernel_launches[k];
    out[k].ms = w->cl->kernel_ms[k];
  }
  return KERNEL_COUNT;
}

/* ---- Read-back ----------------------------------------------------------------------- */

/* Reads float4 entries [first, first + count) of buffer b into tmp (4 floats per entry). */
static piola_status read_float4(const piola_world *w, int b, int32_t first, int32_t count,
                                float *tmp) {
  return read_buffer(w, b, 16 * (size_t)first, 16 * (size_t)count, tmp);
}

piola_status piola_opencl_read_range(const piola_world *w, int32_t first, int32_t count, float *xyz,
                                     float *vel) {
  float *tmp = malloc(16 * (size_t)(count > 0 ? count : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = PIOLA_OK;
  float *outs[2] = {xyz, vel};
  const int bufs[2] = {BUF_X, BUF_V};
  for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
    if (outs[k] != NULL && (s = read_float4(w, bufs[k], first, count, tmp)) == PIOLA_OK) {
      for (int32_t i = 0; i < count; ++i) {
        memcpy(outs[k] + 3 * (size_t)i, tmp + 4 * (size_t)i, 3 * sizeof(float));
      }
    }
  }
  free(tmp);
  return s;
}

/* Reads vertices [first, first + count) into the double arrays x and v (either may be NULL),
 * 3 per vertex from their start. */
static piola_status read_vertices(const piola_world *w, int32_t first, int32_t count, double *x,
                                  double *v) {
  float *tmp = malloc(16 * (size_t)(count > 0 ? count : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = PIOLA_OK;
  double *outs[2] = {x, v};
  const int bufs[2] = {BUF_X, BUF_V};
  for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
    if (outs[k] != NULL && (s = read_float4(w, bufs[k], first, count, tmp)) == PIOLA_OK) {
      for (int32_t i = 0; i < count; ++i) {
        for (int c = 0; c < 3; ++c) {
          outs[k][3 * (size_t)i + c] = tmp[4 * (size_t)i + c];
        }
      }
    }
  }
  free(tmp);
  return s;
}

/* Reads the tet matrices and multipliers (and, when strain != NULL, the plastic strain). */
static piola_status read_tets(const piola_world *w, double *tet_m, double *lambda, double *strain) {
  const size_t nt = (size_t)w->cl->tet_count, np = (size_t)w->cl->plastic_count;
  size_t n = 9 * nt > 6 * np ? 9 * nt : 6 * np;
  float *tmp = malloc(sizeof(float) * (n > 0 ? n : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = read_buffer(w, BUF_TET_M, 0, 36 * nt, tmp);
  for (size_t t = 0; t < nt && s == PIOLA_OK; ++t) {
    for (size_t k = 0; k < 9; ++k) {
      tet_m[9 * t + k] = tmp[k * nt + t];
    }
  }
  if (s == PIOLA_OK) {
    s = read_buffer(w, BUF_TET_LAMBDA, 0, 8 * nt, tmp);
  }
  for (size_t t = 0; t < nt && s == PIOLA_OK; ++t) {
    lambda[2 * t] = tmp[t];
    lambda[2 * t + 1] = tmp[nt + t];
  }
  if (s == PIOLA_OK && strain != NULL && np > 0) {
    s = read_buffer(w, BUF_PLASTIC_STRAIN, 0, 24 * np, tmp);
    for (size_t k = 0; k < np && s == PIOLA_OK; ++k) {
      for (size_t j = 0; j < 6; ++j) {
        strain[6 * k + j] = tmp[j * np + k];
      }
    }
  }
  free(tmp);
  return s;
}

piola_status piola_opencl_read_all(const piola_world *w, double *x, double *v, double *tet_m,
                                   double *lambda) {
  piola_status s = read_vertices(w, 0, w->cl->vertex_count, x, v);
  return s == PIOLA_OK ? read_tets(w, tet_m, lambda, NULL) : s;
}

piola_status piola_opencl_pull(piola_world *w) {
  if (!piola_opencl_live(w)) {
    return PIOLA_OK;
  }
  /* Read into scratch and copy when every read worked: a failed pull leaves the host as it was. */
  const size_t nv = 3 * (size_t)w->cl->vertex_count, nt = (size_t)w->cl->tet_count,
               np = (size_t)w->cl->plastic_count;
  double *tmp = malloc(sizeof(double) * (2 * nv + 11 * nt + 6 * np + 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  double *x = tmp, *v = x + nv, *m = v + nv, *lambda = m + 9 * nt, *strain = lambda + 2 * nt;
  piola_status s = read_vertices(w, 0, w->cl->vertex_count, x, v);
  if (s == PIOLA_OK) {
    s = read_tets(w, m, lambda, strain);
  }
  if (s == PIOLA_OK) {
    memcpy(w->x, x, sizeof(double) * nv);
    memcpy(w->p, x, sizeof(double) * nv);
    memcpy(w->v, v, sizeof(double) * nv);
    memcpy(w->solver.tet_m, m, sizeof(double) * 9 * nt);
    memcpy(w->solver.tet_lambda, lambda, sizeof(double) * 2 * nt);
    if (np > 0) {
      memcpy(w->solver.plastic_strain, strain, sizeof(double) * 6 * np);
    }
  }
  free(tmp);
  return s;
}

piola_status piola_opencl_pull_range(piola_world *w, int32_t first, int32_t count) {
  if (!piola_opencl_live(w)) {
    return PIOLA_OK;
  }
  const size_t n = 3 * (size_t)count;
  double *tmp = malloc(sizeof(double) * (2 * n + 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = read_vertices(w, first, count, tmp, tmp + n);
  if (s == PIOLA_OK) { /* all or nothing */
    memcpy(w->x + 3 * (size_t)first, tmp, sizeof(double) * n);
    memcpy(w->v + 3 * (size_t)first, tmp + n, sizeof(double) * n);
  }
  free(tmp);
  return s;
}

piola_status piola_opencl_push_range(piola_world *w, int32_t first, int32_t count, bool positions,
                                     bool velocities) {
  if (!piola_opencl_live(w)) {
    return PIOLA_OK; /* uploaded with everything before the next step */
  }
  float *tmp = malloc(16 * (size_t)(count > 0 ? count : 1));
  if (tmp == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = PIOLA_OK;
  if (positions) {
    pack_vertices(w, w->x, true, first, count, tmp);
    s = write_buffer(w, BUF_X, 16 * (size_t)first, 16 * (size_t)count, tmp);
  }
  if (s == PIOLA_OK && velocities) {
    pack_vertices(w, w->v, false, first, count, tmp);
    s = write_buffer(w, BUF_V, 16 * (size_t)first, 16 * (size_t)count, tmp);
  }
  free(tmp);
  return s;
}

/* ---- Step ---------------------------------------------------------------------------- */

piola_status piola_opencl_begin_step(piola_world *w) {
  piola_opencl *cl = w->cl;
  piola_status s = PIOLA_OK;
  if (!cl->live) {
    s = upload_all(w);
  } else if (cl->colliders_dirty_first < cl->colliders_dirty_end) {
    s = upload_colliders(w);
  }
  return s;
}

piola_status piola_opencl_abort_step(piola_world *w, bool from_host, piola_status s) {
  piola_opencl *cl = w->cl;
  for (int32_t i = 0; i < cl->event_count; ++i) {
    ocl_release_event(cl->faults, cl->events[i].event);
  }
  cl->event_count = 0;
  if (from_host && !cl->lost) {
    /* The host arrays still hold the state before the step: drop the device's half-advanced
     * copy; the next step uploads it again. */
    cl->live = false;
    return s;
  }
  piola_log(&w->def.logger, PIOLA_LOG_ERROR,
            "OpenCL: a step failed with the device state half advanced (%s); the world is lost",
            piola_status_string(s));
  cl->lost = true;
  return PIOLA_ERROR_DEVICE_LOST;
}

/* Enqueues kernel k over `count` work-items (rounded up to the work-group size). */
static piola_status launch(piola_world *w, int k, int32_t count, piola_stage stage) {
  piola_opencl *cl = w->cl;
  if (count <= 0) {
    return PIOLA_OK;
  }
  size_t local = k == KERNEL_SOLVE_PACKETS        ? cl->packet_wg
                 : k == KERNEL_SOLVE_BODY_PACKETS ? PACKET_BODY_WORK_GROUP
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
  CL_CHECK(ocl_launch(cl->faults, cl->queue, cl->kernels[k], &global, &local, record ? &ev : NULL));
  if (record) {
    cl->events[cl->event_count].event = ev;
    cl->events[cl->event_count].stage = stage;
    cl->events[cl->event_count].kernel = k;
    cl->event_count++;
  }
  return PIOLA_OK;
}

/* The velocity gravity adds over a substep of h seconds (m/s), as the kernels take it. */
static cl_float4 gravity_impulse(const piola_world *w, double h) {
  cl_float4 hg = {{(float)(h * w->def.gravity[0]), (float)(h * w->def.gravity[1]),
                   (float)(h * w->def.gravity[2]), 0.0f}};
  return hg;
}

#define SET_ARG(k, i, v) CL_CHECK(ocl_set_arg(cl->faults, cl->kernels[k], (i), sizeof(v), &(v)))

/* Exclusive scan of the n ints of buffer `in` into buffer `out` (n + 1 entries: out[n] is the
 * total), in three launches (piola_contact.cl). */
static piola_status scan(piola_world *w, int in, int out, cl_int n, piola_stage stage) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  cl_int blocks = (cl_int)(((size_t)n + cl->wg * SCAN_ITEMS - 1) / (cl->wg * SCAN_ITEMS));
  SET_ARG(KERNEL_SCAN_BLOCKS, 0, b[in]);
  SET_ARG(KERNEL_SCAN_BLOCKS, 1, b[out]);
  SET_ARG(KERNEL_SCAN_BLOCKS, 2, b[BUF_SCAN_TOTALS]);
  SET_ARG(KERNEL_SCAN_BLOCKS, 3, n);
  piola_status s = launch(w, KERNEL_SCAN_BLOCKS, (int32_t)((size_t)blocks * cl->wg), stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_SCAN_TOTALS, 0, b[BUF_SCAN_TOTALS]);
  SET_ARG(KERNEL_SCAN_TOTALS, 1, blocks);
  SET_ARG(KERNEL_SCAN_TOTALS, 2, b[out]);
  SET_ARG(KERNEL_SCAN_TOTALS, 3, n);
  s = launch(w, KERNEL_SCAN_TOTALS, (int32_t)cl->wg, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_SCAN_ADD, 0, b[out]);
  SET_ARG(KERNEL_SCAN_ADD, 1, b[BUF_SCAN_TOTALS]);
  SET_ARG(KERNEL_SCAN_ADD, 2, n);
  return launch(w, KERNEL_SCAN_ADD, n, stage);
}

/* BROAD_PHASE: boxes, the cell size, and the clusters sorted into the hash buckets. */
static piola_status broad_phase(piola_world *w, piola_stage stage) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  cl_int ncl = cl->cluster_count, nsv = cl->sv_count, mask = w->contacts.bucket_mask;
  cl_int buckets = mask + 1;
  cl_float thickness = w->def.contact_thickness;
  const size_t boxes = (size_t)(ncl > nsv ? ncl : nsv);
  cl_int boxers = (cl_int)stride_items(cl, boxes), partials = (cl_int)box_partials(cl, boxes),
         group_maxima = cl->cpu_device ? 0 : 1;
  SET_ARG(KERNEL_CONTACT_VERTICES, 0, b[BUF_X]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 1, b[BUF_D]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 2, b[BUF_SV_VERTEX]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 3, thickness);
  SET_ARG(KERNEL_CONTACT_VERTICES, 4, nsv);
  SET_ARG(KERNEL_CONTACT_VERTICES, 5, group_maxima);
  SET_ARG(KERNEL_CONTACT_VERTICES, 6, b[BUF_SV_X]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 7, b[BUF_SV_P]);
  SET_ARG(KERNEL_CONTACT_VERTICES, 8, b[BUF_PARTIAL]);
  SET_ARG(KERNEL_CONTACT_BOXES, 0, b[BUF_SV_X]);
  SET_ARG(KERNEL_CONTACT_BOXES, 1, b[BUF_SV_P]);
  SET_ARG(KERNEL_CONTACT_BOXES, 2, b[BUF_TRIANGLES]);
  SET_ARG(KERNEL_CONTACT_BOXES, 3, b[BUF_CLUSTER_FIRST]);
  SET_ARG(KERNEL_CONTACT_BOXES, 4, thickness);
  SET_ARG(KERNEL_CONTACT_BOXES, 5, ncl);
  SET_ARG(KERNEL_CONTACT_BOXES, 6, group_maxima);
  SET_ARG(KERNEL_CONTACT_BOXES, 7, b[BUF_TRI_BOX]);
  SET_ARG(KERNEL_CONTACT_BOXES, 8, b[BUF_CLUSTER_BOX]);
  SET_ARG(KERNEL_CONTACT_BOXES, 9, b[BUF_PARTIAL]);
  /* Both over the same work-items, so that each writes its half of the same partial maxima. */
  piola_status s = launch(w, KERNEL_CONTACT_VERTICES, boxers, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  s = launch(w, KERNEL_CONTACT_BOXES, boxers, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_CONTACT_GRID, 0, b[BUF_PARTIAL]);
  SET_ARG(KERNEL_CONTACT_GRID, 1, partials);
  SET_ARG(KERNEL_CONTACT_GRID, 2, thickness);
  SET_ARG(KERNEL_CONTACT_GRID, 3, b[BUF_GRID]);
  s = launch(w, KERNEL_CONTACT_GRID, (int32_t)cl->wg, stage);
  if (s == PIOLA_OK) {
    s = zero_buffer(w, BUF_BUCKET_COUNT, 4 * (size_t)buckets);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  /* Count the entries per bucket, scan, enter them (the counts become the cursors). */
  for (cl_int pass = 0; pass < 2 && s == PIOLA_OK; ++pass) {
    SET_ARG(KERNEL_CONTACT_ENTER, 0, b[BUF_CLUSTER_BOX]);
    SET_ARG(KERNEL_CONTACT_ENTER, 1, b[BUF_GRID]);
    SET_ARG(KERNEL_CONTACT_ENTER, 2, mask);
    SET_ARG(KERNEL_CONTACT_ENTER, 3, ncl);
    SET_ARG(KERNEL_CONTACT_ENTER, 4, pass);
    SET_ARG(KERNEL_CONTACT_ENTER, 5, b[BUF_BUCKET_START]);
    SET_ARG(KERNEL_CONTACT_ENTER, 6, b[BUF_BUCKET_COUNT]);
    SET_ARG(KERNEL_CONTACT_ENTER, 7, b[BUF_BUCKET_CLUSTERS]);
    s = launch(w, KERNEL_CONTACT_ENTER, ncl, stage);
    if (s == PIOLA_OK && pass == 0) {
      s = scan(w, BUF_BUCKET_COUNT, BUF_BUCKET_START, buckets, stage);
    }
    if (s == PIOLA_OK && pass == 0) {
      s = zero_buffer(w, BUF_BUCKET_COUNT, 4 * (size_t)buckets);
    }
  }
  return s;
}

/* NARROW_PHASE: each surface vertex's contacts, and the sorted lists of corner entries. */
static piola_status narrow_phase(piola_world *w, piola_stage stage) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  cl_int nsv = cl->sv_count, mask = w->contacts.bucket_mask;
  cl_float thickness = w->def.contact_thickness;
  /* This substep's lists become the previous ones (contacts persist while they last). */
  for (int i = 0; i < 2; ++i) {
    int cur = i == 0 ? BUF_CONTACT_COUNT : BUF_CONTACT_TRI;
    int prev = i == 0 ? BUF_PREVIOUS_COUNT : BUF_PREVIOUS_TRI;
    cl_mem m = b[cur];
    size_t bytes = cl->buffer_bytes[cur];
    b[cur] = b[prev];
    cl->buffer_bytes[cur] = cl->buffer_bytes[prev];
    b[prev] = m;
    cl->buffer_bytes[prev] = bytes;
  }
  piola_status s = zero_buffer(w, BUF_COUNTERS, 12);
  if (s == PIOLA_OK) {
    s = zero_buffer(w, BUF_CORNER_COUNT, 4 * (size_t)nsv);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  /* Where a body collides with itself, in a step's first substep: the vertices of the tets
   * turned over at its start (piola_contact_self_untangled). The marks are read for a body's
   * pairs with itself only, so without self-collision they are neither made nor read. */
  if (w->substep == 0 && piola_contacts_any_self(&w->contacts)) {
    const int km = KERNEL_CONTACT_MARK_INVERTED;
    cl_int tets = cl->tet_count;
    s = zero_buffer(w, BUF_TURNED, 4 * (size_t)cl->vertex_count);
    SET_ARG(km, 0, b[BUF_X]);
    SET_ARG(km, 1, b[BUF_TETS]);
    SET_ARG(km, 2, tets);
    SET_ARG(km, 3, b[BUF_TURNED]);
    if (s == PIOLA_OK) {
      s = launch(w, km, tets, stage);
    }
    if (s != PIOLA_OK) {
      return s;
    }
  }
  const int k = KERNEL_CONTACT_NARROW;
  SET_ARG(k, 0, b[BUF_SV_X]);
  SET_ARG(k, 1, b[BUF_SV_P]);
  SET_ARG(k, 2, b[BUF_SV_BODY]);
  SET_ARG(k, 3, b[BUF_SV_REST]);
  SET_ARG(k, 4, b[BUF_TRIANGLES]);
  SET_ARG(k, 5, b[BUF_SV_VERTEX]);
  SET_ARG(k, 6, b[BUF_TURNED]);
  SET_ARG(k, 7, b[BUF_TRI_BOX]);
  SET_ARG(k, 8, b[BUF_CLUSTER_BOX]);
  SET_ARG(k, 9, b[BUF_BODY_FILTER]);
  SET_ARG(k, 10, b[BUF_GRID]);
  SET_ARG(k, 11, b[BUF_BUCKET_START]);
  SET_ARG(k, 12, b[BUF_BUCKET_CLUSTERS]);
  SET_ARG(k, 13, mask);
  SET_ARG(k, 14, thickness);
  SET_ARG(k, 15, nsv);
  SET_ARG(k, 16, b[BUF_PREVIOUS_COUNT]);
  SET_ARG(k, 17, b[BUF_PREVIOUS_TRI]);
  SET_ARG(k, 18, b[BUF_CONTACT_COUNT]);
  SET_ARG(k, 19, b[BUF_CONTACT_TRI]);
  SET_ARG(k, 20, b[BUF_COUNTERS]);
  SET_ARG(k, 21, b[BUF_CORNER_COUNT]);
  SET_ARG(k, 22, b[BUF_SV_NEAR]);
  SET_ARG(k, 23, b[BUF_SV_NEAR_MASK]);
  s = launch(w, k, nsv, stage);
  if (s == PIOLA_OK) {
    s = scan(w, BUF_CORNER_COUNT, BUF_CORNER_START, nsv, stage);
  }
  if (s == PIOLA_OK) {
    s = zero_buffer(w, BUF_CORNER_COUNT, 4 * (size_t)nsv);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_CONTACT_CORNERS, 0, b[BUF_CONTACT_COUNT]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 1, b[BUF_CONTACT_TRI]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 2, b[BUF_TRIANGLES]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 3, b[BUF_CORNER_START]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 4, b[BUF_CORNER_COUNT]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 5, b[BUF_CORNER_ENTRY]);
  SET_ARG(KERNEL_CONTACT_CORNERS, 6, nsv);
  s = launch(w, KERNEL_CONTACT_CORNERS, nsv, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 0, b[BUF_CONTACT_COUNT]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 1, b[BUF_CORNER_START]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 2, b[BUF_CORNER_ENTRY]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 3, b[BUF_COUNTERS]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 4, b[BUF_CONTACT_ACTIVE]);
  SET_ARG(KERNEL_CONTACT_SORT_CORNERS, 5, nsv);
  return launch(w, KERNEL_CONTACT_SORT_CORNERS, nsv, stage);
}

/* CONTACT: two passes of every contact projected from the same positions, then gathered per
 * vertex: the measuring pass (whole masses: each vertex records its mass split), then the
 * projecting pass (split masses: each vertex moves); piola_contact_split. */
static piola_status contact_solve(piola_world *w, piola_stage stage) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  /* Work-items for the listed vertices: at most every surface vertex. */
  cl_int items = (cl_int)stride_items(cl, (size_t)cl->sv_count);
  cl_float thickness = w->def.contact_thickness, friction = w->def.contact_friction;
  SET_ARG(KERNEL_CONTACT_SOLVE, 0, b[BUF_X]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 1, b[BUF_D]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 2, b[BUF_SV_VERTEX]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 3, b[BUF_TRIANGLES]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 4, b[BUF_CONTACT_COUNT]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 5, b[BUF_CONTACT_TRI]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 6, b[BUF_CONTACT_SPLIT]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 8, thickness);
  SET_ARG(KERNEL_CONTACT_SOLVE, 9, friction);
  SET_ARG(KERNEL_CONTACT_SOLVE, 10, b[BUF_CONTACT_DELTA]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 11, b[BUF_CONTACT_ACTIVE]);
  SET_ARG(KERNEL_CONTACT_SOLVE, 12, b[BUF_COUNTERS]);
  SET_ARG(KERNEL_CONTACT_APPLY, 0, b[BUF_D]);
  SET_ARG(KERNEL_CONTACT_APPLY, 1, b[BUF_SV_VERTEX]);
  SET_ARG(KERNEL_CONTACT_APPLY, 2, b[BUF_CONTACT_COUNT]);
  SET_ARG(KERNEL_CONTACT_APPLY, 3, b[BUF_CORNER_START]);
  SET_ARG(KERNEL_CONTACT_APPLY, 4, b[BUF_CORNER_ENTRY]);
  SET_ARG(KERNEL_CONTACT_APPLY, 5, b[BUF_CONTACT_DELTA]);
  SET_ARG(KERNEL_CONTACT_APPLY, 6, b[BUF_CONTACT_SPLIT]);
  SET_ARG(KERNEL_CONTACT_APPLY, 8, b[BUF_CONTACT_ACTIVE]);
  SET_ARG(KERNEL_CONTACT_APPLY, 9, b[BUF_COUNTERS]);
  piola_status s = PIOLA_OK;
  for (cl_int measure = 1; measure >= 0 && s == PIOLA_OK; --measure) {
    SET_ARG(KERNEL_CONTACT_SOLVE, 7, measure);
    SET_ARG(KERNEL_CONTACT_APPLY, 7, measure);
    s = launch(w, KERNEL_CONTACT_SOLVE, items, stage);
    if (s == PIOLA_OK) {
      s = launch(w, KERNEL_CONTACT_APPLY, items, stage);
    }
  }
  return s;
}

static piola_status solve_jacobi_tail(piola_world *w, double h, piola_stage stage);

/* Whether SOLVE_TETS in packets runs one launch per iteration with a work-group per body
 * (piola_solve_body_packets) rather than one launch per color: where every body is small
 * enough for one core to go through it in less time than the launches of its colors take
 * (PoCL, 2-core EPYC: one Armadillo of 3717 tets 2.2 ms per step against 2.8 ms per color), or
 * the bodies are many enough to keep every core busy (4 per compute unit) and none is larger
 * than half a unit's share of the tets. A single large body runs per color on every core. */
#define PACKET_BODY_MAX_TETS 16384
static bool packets_per_body(const piola_world *w) {
  const int64_t units = w->cl->compute_units;
  const int64_t largest = w->solver.max_body_tets;
  return largest <= PACKET_BODY_MAX_TETS ||
         (w->solver.body_count >= 4 * units && 2 * units * largest <= (int64_t)w->cl->tet_count);
}

/* The first arguments of every tet-solving kernel: x, d, the tet planes and the materials;
 * and the last: whether the pass is the inverted-tet pass. */
static piola_status set_tet_args(piola_world *w, int k) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_D]);
  SET_ARG(k, 2, b[BUF_TETS]);
  SET_ARG(k, 3, b[BUF_TET_M]);
  SET_ARG(k, 4, b[BUF_TET_VOLUME]);
  SET_ARG(k, 5, b[BUF_TET_LAMBDA]);
  SET_ARG(k, 6, b[BUF_TET_MATERIAL]);
  SET_ARG(k, 7, b[BUF_MATERIALS]);
  cl_int inverted_only = w->tets_inverted_only; /* the last argument, 13 */
  SET_ARG(k, 13, inverted_only);
  return PIOLA_OK;
}

/* SOLVE_TETS, the tet kind: the colors (one launch per iteration with a work-group per body, or
 * one launch per color), then the Jacobi tail (two launches). */
static piola_status solve_tets(piola_world *w, double h, piola_stage stage) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  cl_int stride = cl->tet_count;
  cl_float inv_h2 = (cl_float)(1.0 / (h * h));
  /* The inverted-tet pass sweeps the colors (and the tail) PIOLA_INVERTED_PASSES times: a sweep
   * after one that did no work changes nothing, so this computes what the CPU reference's
   * sweeps, which end there, compute. The per-body packet kernel repeats its sweep itself and
   * ends early, where no Jacobi tail has to come between the sweeps. */
  const int sweeps = w->tets_inverted_only ? PIOLA_INVERTED_PASSES : 1;
  if (cl->lanes > 1 && w->solver.color_count > 0 && packets_per_body(w)) {
    const int kb = KERNEL_SOLVE_BODY_PACKETS;
    cl_int colors = w->solver.color_count;
    cl_int inside = w->solver.jacobi_count == 0 ? sweeps : 1;
    piola_status s = set_tet_args(w, kb);
    if (s != PIOLA_OK) {
      return s;
    }
    SET_ARG(kb, 8, b[BUF_BODY_COLOR]);
    SET_ARG(kb, 9, colors);
    SET_ARG(kb, 10, stride);
    SET_ARG(kb, 11, inv_h2);
    SET_ARG(kb, 12, b[BUF_SUPPORT]);
    SET_ARG(kb, 14, inside);
    for (int sweep = 0; sweep < sweeps / inside && s == PIOLA_OK; ++sweep) {
      s = launch(w, kb, w->solver.body_count * PACKET_BODY_WORK_GROUP, stage);
      if (s == PIOLA_OK) {
        s = solve_jacobi_tail(w, h, stage);
      }
    }
    return s;
  }
  /* One tet per work-item, or a packet of cl->lanes tets (piola_packet.cl; same arguments). */
  const int k = cl->lanes > 1 ? KERNEL_SOLVE_PACKETS : KERNEL_SOLVE;
  piola_status s = set_tet_args(w, k);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(k, 10, stride);
  SET_ARG(k, 11, inv_h2);
  SET_ARG(k, 12, b[BUF_SUPPORT]);
  for (int sweep = 0; sweep < sweeps && s == PIOLA_OK; ++sweep) {
    for (int32_t c = 0; c < w->solver.color_count && s == PIOLA_OK; ++c) {
      cl_int first = w->solver.color_first[c], count = w->solver.color_size[c];
      SET_ARG(k, 8, first);
      SET_ARG(k, 9, count);
      s = launch(w, k, (count + cl->lanes - 1) / cl->lanes, stage);
    }
    if (s == PIOLA_OK) {
      s = solve_jacobi_tail(w, h, stage);
    }
  }
  return s;
}

/* SOLVE_TETS: the Jacobi tail, if any (after the colors). */
static piola_status solve_jacobi_tail(piola_world *w, double h, piola_stage stage) {
  if (w->solver.jacobi_count == 0) {
    return PIOLA_OK;
  }
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  cl_int stride = cl->tet_count;
  cl_float inv_h2 = (cl_float)(1.0 / (h * h));
  cl_int jfirst = w->solver.jacobi_first, jcount = w->solver.jacobi_count,
         nj = w->solver.jacobi_vertex_count;
  cl_float omega = w->def.jacobi_omega;
  piola_status s = set_tet_args(w, KERNEL_SOLVE_JACOBI);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_SOLVE_JACOBI, 8, jfirst);
  SET_ARG(KERNEL_SOLVE_JACOBI, 9, jcount);
  SET_ARG(KERNEL_SOLVE_JACOBI, 10, stride);
  SET_ARG(KERNEL_SOLVE_JACOBI, 11, inv_h2);
  SET_ARG(KERNEL_SOLVE_JACOBI, 12, b[BUF_JACOBI_DELTA]);
  s = launch(w, KERNEL_SOLVE_JACOBI, jcount, stage);
  if (s != PIOLA_OK) {
    return s;
  }
  SET_ARG(KERNEL_APPLY_JACOBI, 0, b[BUF_D]);
  SET_ARG(KERNEL_APPLY_JACOBI, 1, b[BUF_JACOBI_VERTICES]);
  SET_ARG(KERNEL_APPLY_JACOBI, 2, b[BUF_JACOBI_START]);
  SET_ARG(KERNEL_APPLY_JACOBI, 3, b[BUF_JACOBI_INCIDENCE]);
  SET_ARG(KERNEL_APPLY_JACOBI, 4, b[BUF_JACOBI_DELTA]);
  SET_ARG(KERNEL_APPLY_JACOBI, 5, omega);
  SET_ARG(KERNEL_APPLY_JACOBI, 6, nj);
  return launch(w, KERNEL_APPLY_JACOBI, nj, stage);
}

/* SOLVE_TETS, the cloth kinds, color by color. A color's triangles and stencils share no vertex
 * (one coloring across the kinds), so without profiling a color is one launch of both kinds
 * (piola_solve_cloth_color: its triangles, then its stencils, as work-items): 27 launches per
 * iteration on the cloth scene instead of 50. With def.profile a color is one launch per kind
 * (triangles, then stencils), so that their device times stay apart as PIOLA_STAGE_SOLVE_CLOTH
 * and PIOLA_STAGE_SOLVE_BENDING; both ways compute the same, bitwise (the same per-item
 * functions, and no item's result depends on another's of its color). Empty ranges launch
 * nothing. */
static piola_status solve_cloth(piola_world *w, double h) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  const piola_solver_cloth *c = &w->cloth;
  if (c->color_count == 0) {
    return PIOLA_OK;
  }
  cl_float inv_h2 = (cl_float)(1.0 / (h * h));
  if (!w->def.profile) {
    const int k = KERNEL_CLOTH_COLOR;
    const int args[12] = {BUF_X,
                          BUF_D,
                          BUF_CLOTH_TRIS,
                          BUF_CLOTH_TRI_DM,
                          BUF_CLOTH_TRI_AREA,
                          BUF_CLOTH_TRI_LAMBDA,
                          BUF_CLOTH_BENDS,
                          BUF_CLOTH_BEND_K,
                          BUF_CLOTH_BEND_Q,
                          BUF_CLOTH_BEND_LAMBDA,
                          BUF_CLOTH_BEND_MATERIAL,
                          BUF_CLOTH_MATERIALS};
    for (cl_uint i = 0; i < 12; ++i) {
      SET_ARG(k, i, b[args[i]]);
    }
    SET_ARG(k, 16, inv_h2);
    for (int32_t color = 0; color < c->color_count; ++color) {
      cl_int tri_first = c->kind_first[PIOLA_KIND_TRIANGLE][color];
      cl_int tri_count = c->kind_size[PIOLA_KIND_TRIANGLE][color];
      cl_int bend_first = c->kind_first[PIOLA_KIND_BEND][color];
      cl_int bend_count = c->kind_size[PIOLA_KIND_BEND][color];
      SET_ARG(k, 12, tri_first);
      SET_ARG(k, 13, tri_count);
      SET_ARG(k, 14, bend_first);
      SET_ARG(k, 15, bend_count);
      piola_status s = launch(w, k, tri_count + bend_count, PIOLA_STAGE_SOLVE_CLOTH);
      if (s != PIOLA_OK) {
        return s;
      }
    }
    return PIOLA_OK;
  }
  SET_ARG(KERNEL_CLOTH_TRIS, 0, b[BUF_X]);
  SET_ARG(KERNEL_CLOTH_TRIS, 1, b[BUF_D]);
  SET_ARG(KERNEL_CLOTH_TRIS, 2, b[BUF_CLOTH_TRIS]);
  SET_ARG(KERNEL_CLOTH_TRIS, 3, b[BUF_CLOTH_TRI_DM]);
  SET_ARG(KERNEL_CLOTH_TRIS, 4, b[BUF_CLOTH_TRI_AREA]);
  SET_ARG(KERNEL_CLOTH_TRIS, 5, b[BUF_CLOTH_TRI_LAMBDA]);
  SET_ARG(KERNEL_CLOTH_TRIS, 6, b[BUF_CLOTH_MATERIALS]);
  SET_ARG(KERNEL_CLOTH_TRIS, 9, inv_h2);
  SET_ARG(KERNEL_CLOTH_BENDS, 0, b[BUF_X]);
  SET_ARG(KERNEL_CLOTH_BENDS, 1, b[BUF_D]);
  SET_ARG(KERNEL_CLOTH_BENDS, 2, b[BUF_CLOTH_BENDS]);
  SET_ARG(KERNEL_CLOTH_BENDS, 3, b[BUF_CLOTH_BEND_K]);
  SET_ARG(KERNEL_CLOTH_BENDS, 4, b[BUF_CLOTH_BEND_Q]);
  SET_ARG(KERNEL_CLOTH_BENDS, 5, b[BUF_CLOTH_BEND_LAMBDA]);
  SET_ARG(KERNEL_CLOTH_BENDS, 6, b[BUF_CLOTH_BEND_MATERIAL]);
  SET_ARG(KERNEL_CLOTH_BENDS, 7, b[BUF_CLOTH_MATERIALS]);
  SET_ARG(KERNEL_CLOTH_BENDS, 10, inv_h2);
  for (int32_t color = 0; color < c->color_count; ++color) {
    cl_int first = c->kind_first[PIOLA_KIND_TRIANGLE][color];
    cl_int count = c->kind_size[PIOLA_KIND_TRIANGLE][color];
    SET_ARG(KERNEL_CLOTH_TRIS, 7, first);
    SET_ARG(KERNEL_CLOTH_TRIS, 8, count);
    piola_status s = launch(w, KERNEL_CLOTH_TRIS, count, PIOLA_STAGE_SOLVE_CLOTH);
    if (s != PIOLA_OK) {
      return s;
    }
    first = c->kind_first[PIOLA_KIND_BEND][color];
    count = c->kind_size[PIOLA_KIND_BEND][color];
    SET_ARG(KERNEL_CLOTH_BENDS, 8, first);
    SET_ARG(KERNEL_CLOTH_BENDS, 9, count);
    s = launch(w, KERNEL_CLOTH_BENDS, count, PIOLA_STAGE_SOLVE_BENDING);
    if (s != PIOLA_OK) {
      return s;
    }
  }
  return PIOLA_OK;
}

piola_status piola_opencl_stage(piola_world *w, piola_stage stage, double h) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  cl_int nv = cl->vertex_count;
  switch (stage) {
  case PIOLA_STAGE_PREDICT: {
    cl_float4 hg = gravity_impulse(w, h);
    cl_float hf = (cl_float)h;
    SET_ARG(KERNEL_PREDICT, 0, b[BUF_X]);
    SET_ARG(KERNEL_PREDICT, 1, b[BUF_V]);
    SET_ARG(KERNEL_PREDICT, 2, b[BUF_D]);
    cl_int has_forces = w->f != NULL && b[BUF_FORCES] != NULL;
    cl_mem forces = has_forces ? b[BUF_FORCES] : b[BUF_X];
    SET_ARG(KERNEL_PREDICT, 3, forces);
    SET_ARG(KERNEL_PREDICT, 4, has_forces);
    SET_ARG(KERNEL_PREDICT, 5, hg);
    SET_ARG(KERNEL_PREDICT, 6, hf);
    SET_ARG(KERNEL_PREDICT, 7, nv);
    return launch(w, KERNEL_PREDICT, nv, stage);
  }
  case PIOLA_STAGE_RESET_MULTIPLIERS: {
    /* Every kind's multipliers: tets (2 each), cloth triangles and stencils (1 each). */
    const int lambda_buffers[3] = {BUF_TET_LAMBDA, BUF_CLOTH_TRI_LAMBDA, BUF_CLOTH_BEND_LAMBDA};
    const size_t lambda_bytes[3] = {8 * (size_t)cl->tet_count, 4 * (size_t)cl->cloth_tri_count,
                                    4 * (size_t)cl->cloth_bend_count};
    for (int k = 0; k < 3; ++k) {
      if (lambda_bytes[k] == 0) {
        continue;
      }
      cl_float zero = 0.0f;
      cl_event ev = NULL;
      CL_CHECK(ocl_fill(cl->faults, cl->queue, b[lambda_buffers[k]], &zero, sizeof zero,
                        lambda_bytes[k], w->def.profile ? &ev : NULL));
      ocl_release_event(cl->faults, ev); /* a fill is not a stage worth timing */
    }
    return PIOLA_OK;
  }
  case PIOLA_STAGE_ATTACHMENTS: {
    const piola_solver_attachments *a = &w->attach;
    cl_mem const *ab = (cl_mem const *)a->device;
    cl_int reset = w->iteration == 0, count = a->vertex_count;
    cl_float inv_h2 = (cl_float)(1.0 / (h * h));
    SET_ARG(KERNEL_ATTACHMENTS, 0, b[BUF_X]);
    SET_ARG(KERNEL_ATTACHMENTS, 1, b[BUF_D]);
    SET_ARG(KERNEL_ATTACHMENTS, 2, ab[0]);
    SET_ARG(KERNEL_ATTACHMENTS, 3, ab[1]);
    SET_ARG(KERNEL_ATTACHMENTS, 4, ab[2]);
    SET_ARG(KERNEL_ATTACHMENTS, 5, ab[3]);
    SET_ARG(KERNEL_ATTACHMENTS, 6, reset);
    SET_ARG(KERNEL_ATTACHMENTS, 7, inv_h2);
    SET_ARG(KERNEL_ATTACHMENTS, 8, count);
    return launch(w, KERNEL_ATTACHMENTS, count, stage);
  }
  case PIOLA_STAGE_SOLVE_TETS: {
    piola_status s = solve_tets(w, h, stage);
    return s == PIOLA_OK && !w->tets_inverted_only ? solve_cloth(w, h) : s;
  }
  case PIOLA_STAGE_COLLIDE: {
    cl_int nc = w->collider_count;
    SET_ARG(KERNEL_COLLIDE, 0, b[BUF_X]);
    SET_ARG(KERNEL_COLLIDE, 1, b[BUF_D]);
    SET_ARG(KERNEL_COLLIDE, 2, b[BUF_COLLIDERS]);
    SET_ARG(KERNEL_COLLIDE, 3, nc);
    SET_ARG(KERNEL_COLLIDE, 4, nv);
    cl_float t_end = (cl_float)w->collider_time, hf = (cl_float)h;
    SET_ARG(KERNEL_COLLIDE, 5, t_end);
    SET_ARG(KERNEL_COLLIDE, 6, hf);
    SET_ARG(KERNEL_COLLIDE, 7, b[BUF_SUPPORT]);
    return launch(w, KERNEL_COLLIDE, nv, stage);
  }
  case PIOLA_STAGE_UPDATE_VELOCITIES: {
    cl_float inv_h = (cl_float)(1.0 / h);
    cl_float damp = (cl_float)piola_world_damping_factor(w, h);
    SET_ARG(KERNEL_UPDATE, 0, b[BUF_X]);
    SET_ARG(KERNEL_UPDATE, 1, b[BUF_V]);
    SET_ARG(KERNEL_UPDATE, 2, b[BUF_D]);
    SET_ARG(KERNEL_UPDATE, 3, inv_h);
    SET_ARG(KERNEL_UPDATE, 4, damp);
    SET_ARG(KERNEL_UPDATE, 5, nv);
    return launch(w, KERNEL_UPDATE, nv, stage);
  }
  case PIOLA_STAGE_PLASTICITY: {
    cl_int stride = cl->tet_count, pstride = cl->plastic_count, np = cl->plastic_count;
    cl_float hf = (cl_float)h;
    SET_ARG(KERNEL_PLASTICITY, 0, b[BUF_X]);
    SET_ARG(KERNEL_PLASTICITY, 1, b[BUF_TETS]);
    SET_ARG(KERNEL_PLASTICITY, 2, b[BUF_TET_M]);
    SET_ARG(KERNEL_PLASTICITY, 3, stride);
    SET_ARG(KERNEL_PLASTICITY, 4, b[BUF_TET_MATERIAL]);
    SET_ARG(KERNEL_PLASTICITY, 5, b[BUF_MATERIALS]);
    SET_ARG(KERNEL_PLASTICITY, 6, b[BUF_PLASTIC_TET]);
    SET_ARG(KERNEL_PLASTICITY, 7, b[BUF_PLASTIC_DM]);
    SET_ARG(KERNEL_PLASTICITY, 8, b[BUF_PLASTIC_STRAIN]);
    SET_ARG(KERNEL_PLASTICITY, 9, pstride);
    SET_ARG(KERNEL_PLASTICITY, 10, hf);
    SET_ARG(KERNEL_PLASTICITY, 11, np);
    return launch(w, KERNEL_PLASTICITY, np, stage);
  }
  case PIOLA_STAGE_SOLVE_CLOTH: /* timing entries of SOLVE_TETS, not passes of their own */
  case PIOLA_STAGE_SOLVE_BENDING:
    return PIOLA_OK;
  case PIOLA_STAGE_BROAD_PHASE:
    return broad_phase(w, stage);
  case PIOLA_STAGE_NARROW_PHASE:
    return narrow_phase(w, stage);
  case PIOLA_STAGE_CONTACT:
    return contact_solve(w, stage);
  case PIOLA_STAGE_COUNT:
    break;
  }
  return PIOLA_OK;
}

/* Bodies up to this many tets run under PIOLA_SCHEDULE_AUTO with one work-group each. */
#define PIOLA_BODY_SCHEDULE_MAX_TETS 65536

/* Local memory the per-body kernel takes: x and d (float4 each) of the largest body. */
static size_t body_local_bytes(const piola_world *w) {
  return (size_t)w->solver.max_body_vertices * 2 * sizeof(cl_float4);
}

bool piola_opencl_per_body(const piola_world *w) {
  const piola_schedule s = w->def.schedule;
  /* The per-body kernel holds a tet body's vertices in local memory: with a body too large for
   * the device's local memory every schedule runs per stage. Cloth bodies are not in the
   * per-body lists (their colors run per stage after the tets', see piola_world_step). */
  return w->solver.body_count > 0 && body_local_bytes(w) <= w->cl->local_bytes &&
         (s == PIOLA_SCHEDULE_BODIES ||
          (s == PIOLA_SCHEDULE_AUTO && !w->def.profile && w->cl->lanes == 1 &&
           w->solver.max_body_tets <= PIOLA_BODY_SCHEDULE_MAX_TETS));
}

piola_status piola_opencl_substep_bodies(piola_world *w, double h, piola_bodies_part part) {
  piola_opencl *cl = w->cl;
  cl_mem *b = cl->buffers;
  const int k = KERNEL_SUBSTEP_BODIES;
  cl_int has_forces = w->f != NULL && b[BUF_FORCES] != NULL;
  cl_mem forces = has_forces ? b[BUF_FORCES] : b[BUF_X];
  cl_int ncol = w->collider_count, colors = w->solver.color_count;
  /* the inverted-tet pass: its sweeps at most (piola_substep_bodies) */
  cl_int iterations = part == PIOLA_BODIES_INVERTED ? PIOLA_INVERTED_PASSES : w->def.iterations;
  cl_int stride = cl->tet_count, jfirst = w->solver.jacobi_first;
  cl_float4 hg = gravity_impulse(w, h);
  cl_float hf = (cl_float)h, inv_h = (cl_float)(1.0 / h), inv_h2 = (cl_float)(1.0 / (h * h));
  cl_float damp = (cl_float)piola_world_damping_factor(w, h), omega = w->def.jacobi_omega;
  SET_ARG(k, 0, b[BUF_X]);
  SET_ARG(k, 1, b[BUF_V]);
  SET_ARG(k, 2, b[BUF_D]);
  SET_ARG(k, 3, forces);
  SET_ARG(k, 4, has_forces);
  SET_ARG(k, 5, b[BUF_TETS]);
  SET_ARG(k, 6, b[BUF_TET_M]);
  SET_ARG(k, 7, b[BUF_TET_VOLUME]);
  SET_ARG(k, 8, b[BUF_TET_LAMBDA]);
  SET_ARG(k, 9, b[BUF_TET_MATERIAL]);
  SET_ARG(k, 10, b[BUF_MATERIALS]);
  SET_ARG(k, 11, b[BUF_COLLIDERS]);
  SET_ARG(k, 12, ncol);
  SET_ARG(k, 13, b[BUF_BODY_VERTEX]);
  SET_ARG(k, 14, b[BUF_BODY_COLOR]);
  SET_ARG(k, 15, b[BUF_BODY_JACOBI]);
  SET_ARG(k, 16, b[BUF_JACOBI_VERTICES]);
  SET_ARG(k, 17, b[BUF_JACOBI_START]);
  SET_ARG(k, 18, b[BUF_JACOBI_INCIDENCE]);
  SET_ARG(k, 19, b[BUF_JACOBI_DELTA]);
  SET_ARG(k, 20, colors);
  SET_ARG(k, 21, iterations);
  SET_ARG(k, 22, stride);
  SET_ARG(k, 23, jfirst);
  SET_ARG(k, 24, hg);
  SET_ARG(k, 25, hf);
  SET_ARG(k, 26, inv_h);
  SET_ARG(k, 27, inv_h2);
  SET_ARG(k, 28, damp);
  SET_ARG(k, 29, omega);
  cl_int part_arg = (cl_int)part;
  SET_ARG(k, 30, part_arg);
  cl_float collider_t_end = (cl_float)w->collider_time;
  SET_ARG(k, 31, collider_t_end);
  CL_CHECK(ocl_set_arg(cl->faults, cl->kernels[k], 32, body_local_bytes(w), NULL));
  cl_int on_chip_vertices = w->solver.max_body_vertices;
  SET_ARG(k, 33, on_chip_vertices);
  SET_ARG(k, 34, b[BUF_SUPPORT]);
  /* One work-group per body. */
  size_t local = cl->wg, global = (size_t)w->solver.body_count * cl->wg;
  CL_CHECK(ocl_launch(cl->faults, cl->queue, cl->kernels[k], &global, &local, NULL));
  /* An iteration goes on with the cloth's colors, as SOLVE_TETS does per stage (bodies share no
   * vertex: the same result as the tets and the cloth color by color). */
  return part == PIOLA_BODIES_ITERATION ? solve_cloth(w, h) : PIOLA_OK;
}

piola_status piola_opencl_end_step(piola_world *w) {
  piola_opencl *cl = w->cl;
  CL_CHECK(ocl_flush(cl->faults, cl->queue));
  if (!w->def.profile) {
    return PIOLA_OK;
  }
  /* Profiling: wait for the step and sum each stage's and each kernel's device time. */
  memset(cl->stage_ms, 0, sizeof cl->stage_ms);
  memset(cl->kernel_ms, 0, sizeof cl->kernel_ms);
  memset(cl->kernel_launches, 0, sizeof cl->kernel_launches);
  piola_status s = PIOLA_OK;
  if (cl->event_count > 0) {
    cl_int e = ocl_finish(cl->faults, cl->queue);
    if (e != CL_SUCCESS) {
      s = wfail(w, e, "clFinish");
    }
  }
  for (int32_t i = 0; i < cl->event_count; ++i) {
    cl_ulong start = 0, end = 0;
    if (s == PIOLA_OK &&
        clGetEventProfilingInfo(cl->events[i].event, CL_PROFILING_COMMAND_START, sizeof start,
                                &start, NULL) == CL_SUCCESS &&
        clGetEventProfilingInfo(cl->events[i].event, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                NULL) == CL_SUCCESS &&
        end >= start) {
      cl->stage_ms[cl->events[i].stage] += (double)(end - start) * 1e-6;
      cl->kernel_ms[cl->events[i].kernel] += (double)(end - start) * 1e-6;
      cl->kernel_launches[cl->events[i].kernel]++;
    }
    ocl_release_event(cl->faults, cl->events[i].event);
  }
  cl->event_count = 0;
  return s;
}

piola_status piola_opencl_finish(piola_world *w) {
  CL_CHECK(ocl_finish(w->cl->faults, w->cl->queue));
  return PIOLA_OK;
}

piola_status piola_opencl_layout_probe(const char *device_spec, int32_t out[16],
                                       const piola_logger *logger) {
  device_entry d;
  piola_status s = pick_device(device_spec, logger, &d);
  cl_context ctx = NULL;
  cl_command_queue q = NULL;
  cl_program prog = NULL;
  cl_kernel k = NULL;
  cl_mem buf = NULL;
  cl_int e = CL_SUCCESS;
  if (s == PIOLA_OK) {
    s = make_context(NULL, &d, false, logger, &ctx, &q);
  }
  if (s == PIOLA_OK) {
    s = build_program(NULL, ctx, d.device, piola_kernel_sources, (cl_uint)piola_kernel_source_count,
                      "-cl-std=CL1.2 -DPIOLA_EMBEDDED=1 -DPIOLA_WG=1", logger, &prog);
  }
  if (s == PIOLA_OK) {
    k = clCreateKernel(prog, "piola_layout_probe", &e);
  }
  if (s == PIOLA_OK && e == CL_SUCCESS) {
    buf = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, 16 * sizeof(cl_int), NULL, &e);
  }
  if (s == PIOLA_OK && e == CL_SUCCESS) {
    e = clSetKernelArg(k, 0, sizeof buf, &buf);
  }
  size_t one = 1;
  if (s == PIOLA_OK && e == CL_SUCCESS) {
    e = clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL);
  }
  if (s == PIOLA_OK && e == CL_SUCCESS) {
    cl_int tmp[16];
    e = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof tmp, tmp, 0, NULL, NULL);
    for (int i = 0; i < 16 && e == CL_SUCCESS; ++i) {
      out[i] = tmp[i];
    }
  }
  if (s == PIOLA_OK && e != CL_SUCCESS) {
    s = cl_fail(logger, e, "layout probe");
  }
  if (buf != NULL) {
    clReleaseMemObject(buf);
  }
  if (k != NULL) {
    clReleaseKernel(k);
  }
  if (prog != NULL) {
    clReleaseProgram(prog);
  }
  if (q != NULL) {
    clReleaseCommandQueue(q);
  }
  if (ctx != NULL) {
    clReleaseContext(ctx);
  }
  return s;
}

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
      ocl_release_mem(w->cl != NULL ? w->cl->faults : NULL, (cl_mem)rm->device[k]);
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
      cl_mem m = ocl_create_buffer(w->cl->faults, w->cl->context, flags,
                                   arrays[k].bytes > 0 ? arrays[k].bytes : 16,
                                   (void *)(uintptr_t)arrays[k].data, &e);
      if (e != CL_SUCCESS) {
        s = wfail(w, e, "clCreateBuffer (render mesh)");
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
  const piola_opencl *cl = w->cl;
  size_t local = cl->wg;
  size_t global = ((size_t)count + local - 1) / local * local;
  CL_CHECK(ocl_launch(cl->faults, cl->queue, cl->kernels[k], &global, &local, NULL));
  return PIOLA_OK;
}

piola_status piola_opencl_render_compute(const piola_world *w, const piola_render_mesh *rm,
                                         const piola_body *b, float *positions, float *normals) {
  const piola_opencl *cl = w->cl;
  cl_mem const *d = (cl_mem const *)rm->device;
  const cl_int offset = b->vertex_offset, nsv = b->surface_vertex_count, n = rm->count;
  cl_kernel k = cl->kernels[KERNEL_RENDER_NORMALS];
  CL_CHECK(ocl_set_arg(cl->faults, k, 0, sizeof(cl_mem), &cl->buffers[BUF_X]));
  CL_CHECK(ocl_set_arg(cl->faults, k, 1, sizeof(cl_mem), &d[RENDER_SV_VERTEX]));
  CL_CHECK(ocl_set_arg(cl->faults, k, 2, sizeof(cl_mem), &d[RENDER_TRIANGLES]));
  CL_CHECK(ocl_set_arg(cl->faults, k, 3, sizeof(cl_mem), &d[RENDER_INCIDENT_START]));
  CL_CHECK(ocl_set_arg(cl->faults, k, 4, sizeof(cl_mem), &d[RENDER_INCIDENT]));
  CL_CHECK(ocl_set_arg(cl->faults, k, 5, sizeof(cl_int), &offset));
  CL_CHECK(ocl_set_arg(cl->faults, k, 6, sizeof(cl_int), &nsv));
  CL_CHECK(ocl_set_arg(cl->faults, k, 7, sizeof(cl_mem), &d[RENDER_NORMALS]));
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
    err = ocl_set_arg(cl->faults, k, a, sizeof(cl_mem), &args[a]);
  }
  if (err == CL_SUCCESS) {
    err = ocl_set_arg(cl->faults, k, 6, sizeof(cl_int), &offset);
  }
  if (err == CL_SUCCESS) {
    err = ocl_set_arg(cl->faults, k, 7, sizeof(cl_int), &n);
  }
  if (err == CL_SUCCESS) {
    err = ocl_set_arg(cl->faults, k, 8, sizeof(cl_mem), &d[RENDER_OUT_POSITIONS]);
  }
  if (err == CL_SUCCESS) {
    err = ocl_set_arg(cl->faults, k, 9, sizeof(cl_mem), &d[RENDER_OUT_NORMALS]);
  }
  s = err == CL_SUCCESS ? render_launch(w, KERNEL_RENDER_POINTS, n)
                        : wfail(w, err, "clSetKernelArg (render mesh)");
  float *tmp = s == PIOLA_OK ? malloc(bytes) : NULL;
  if (s == PIOLA_OK && tmp == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  float *dst = positions != NULL ? positions : normals;
  if (s == PIOLA_OK && dst != NULL) {
    err = ocl_read(cl->faults, cl->queue,
                   d[positions != NULL ? RENDER_OUT_POSITIONS : RENDER_OUT_NORMALS], 0, bytes, tmp);
    if (err != CL_SUCCESS) {
      s = wfail(w, err, "clEnqueueReadBuffer (render mesh)");
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
      ocl_release_mem(w->cl != NULL ? w->cl->faults : NULL, (cl_mem)a->device[k]);
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
      a->device[k] =
          ocl_create_buffer(w->cl->faults, w->cl->context, CL_MEM_READ_WRITE, bytes[k], NULL, &e);
      if (e != CL_SUCCESS) {
        a->device[k] = NULL;
        piola_opencl_attachments_release(w, a);
        return wfail(w, e, "clCreateBuffer (attachments)");
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
  cl_command_queue q = w->cl->queue;
  piola_faults *f = w->cl->faults;
  cl_int e = ocl_write(f, q, (cl_mem)a->device[0], 0, 4 * ((size_t)a->vertex_count + 1), a->start);
  if (e == CL_SUCCESS) {
    e = ocl_write(f, q, (cl_mem)a->device[1], 0, 4 * (size_t)a->vertex_count, a->vertex);
  }
  if (e == CL_SUCCESS) {
    e = ocl_write(f, q, (cl_mem)a->device[2], 0, 16 * (size_t)a->count, targets);
  }
  free(targets);
  return e == CL_SUCCESS ? PIOLA_OK : wfail(w, e, "clEnqueueWriteBuffer (attachments)");
}

piola_status piola_opencl_program_binary(const piola_world *w, bool packets, unsigned char **binary,
                                         size_t *size, const char **options) {
  *binary = NULL;
  *size = 0;
  *options = "";
  const piola_opencl *cl = w->cl;
  if (cl == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  cl_program program = packets ? cl->packet_program : cl->program;
  if (program == NULL) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "OpenCL: no %s program was built on this device",
              packets ? "packet" : "main");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  /* One device per program: one binary. */
  size_t n = 0;
  cl_int e = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL);
  if (e != CL_SUCCESS) {
    return cl_fail(&w->def.logger, e, "clGetProgramInfo");
  }
  unsigned char *bytes = malloc(n > 0 ? n : 1);
  if (bytes == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  unsigned char *list[1] = {bytes};
  e = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof list, list, NULL);
  if (e != CL_SUCCESS) {
    free(bytes);
    return cl_fail(&w->def.logger, e, "clGetProgramInfo");
  }
  *binary = bytes;
  *size = n;
  *options = packets ? cl->packet_options : cl->program_options;
  return PIOLA_OK;
}
