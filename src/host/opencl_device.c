/* Piola OpenCL devices and programs: enumerating and picking devices, building the embedded
 * kernels for one (with the work-group size and SIMD lanes injected as defines), creating and
 * releasing a world's device state, and the programs' binaries. */
#include "opencl_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* kernels/ embedded by cmake/embed_kernels.cmake */
const char *const piola_ocl_kernel_names[KERNEL_COUNT] = {"piola_predict",
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
                                                          "piola_edge_cluster_pairs",
                                                          "piola_edge_contact_narrow",
                                                          "piola_edge_contact_corners",
                                                          "piola_edge_contact_solve",
                                                          "piola_solve_cloth_tris",
                                                          "piola_solve_cloth_bends",
                                                          "piola_solve_cloth_color",
                                                          "piola_render_normals",
                                                          "piola_render_points",
                                                          "piola_attachments",
                                                          "piola_collider_impulse_sum",
                                                          "piola_collide_shapes",
                                                          "piola_vbd_begin",
                                                          "piola_vbd_color",
                                                          "piola_vbd_accelerate",
                                                          "piola_vbd_bodies",
                                                          "piola_vbd_fit_bodies",
                                                          "piola_solve_color_packets",
                                                          "piola_solve_body_packets",
                                                          "piola_vbd_tet_blocks"};

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
    return piola_ocl_status(e);
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

piola_status piola_opencl_list_devices(piola_device_info *devices, int32_t capacity,
                                       int32_t *count) {
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
  cl_program prog = piola_ocl_create_program(f, ctx, count, (const char **)sources, &e);
  if (e != CL_SUCCESS) {
    return piola_ocl_fail(log, e, "clCreateProgramWithSource");
  }
  e = piola_ocl_build_program(f, prog, &dev, options);
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
                "OpenCL: program build failed (%s); build log:", piola_ocl_error_name(e));
      for (size_t at = 0; at < len; at += 900) {
        piola_log(log, PIOLA_LOG_ERROR, "%.900s", text + at);
      }
      free(text);
    }
    piola_ocl_release_program(f, prog);
    return e == CL_BUILD_PROGRAM_FAILURE || e == CL_INVALID_BUILD_OPTIONS ? PIOLA_ERROR_BUILD_FAILED
                                                                          : piola_ocl_status(e);
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
  *ctx = piola_ocl_create_context(f, props, &d->device, &e);
  if (e != CL_SUCCESS) {
    *ctx = NULL;
    return piola_ocl_fail(log, e, "clCreateContext");
  }
  *queue = piola_ocl_create_queue(f, *ctx, d->device, profile ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
  if (e != CL_SUCCESS) {
    piola_ocl_release_context(f, *ctx);
    *ctx = NULL;
    *queue = NULL;
    return piola_ocl_fail(log, e, "clCreateCommandQueue");
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
    piola_ocl_release_mem(f, cl->buffers[i]);
  }
  for (int i = 0; i < KERNEL_COUNT; ++i) {
    piola_ocl_release_kernel(f, cl->kernels[i]);
  }
  for (int32_t i = 0; i < cl->event_count; ++i) {
    piola_ocl_release_event(f, cl->events[i].event);
  }
  free(cl->events);
  free(cl->vbd_tet_first);
  free(cl->vbd_tet_count);
  piola_ocl_release_global(cl);
  piola_ocl_release_program(f, cl->program);
  piola_ocl_release_program(f, cl->packet_program);
  piola_ocl_release_queue(f, cl->queue);
  piola_ocl_release_context(f, cl->context);
  free(cl);
}

/* The kernels' work-group size: the def's, else 128 on GPUs (best or near-best for the per-body
 * schedule on the GPUs measured: bench/LOG.md) and 256 on CPUs (PoCL runs a work-group as a
 * loop; larger groups amortise its dispatch), clamped to what the device and every kernel
 * allow. */
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
    cl_program program =
        k == KERNEL_SOLVE_PACKETS || k == KERNEL_SOLVE_BODY_PACKETS || k == KERNEL_VBD_TET_BLOCKS
            ? cl->packet_program
            : cl->program;
    if (program == NULL) {
      continue;
    }
    cl_int e;
    cl->kernels[k] = piola_ocl_create_kernel(faults, program, piola_ocl_kernel_names[k], &e);
    if (e != CL_SUCCESS) {
      cl->kernels[k] = NULL;
      s = piola_ocl_fail(log, e, piola_ocl_kernel_names[k]);
    }
  }
  /* The multigrid scheme's solve runs on the host (opencl_newton.c), on def.cpu_threads threads
   * as on the CPU reference. */
  if (s == PIOLA_OK && w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID) {
    const int32_t threads = w->def.cpu_threads > 0 ? w->def.cpu_threads : piola_online_cores();
    s = piola_pool_create(threads, &w->pool);
    if (s != PIOLA_OK) {
      w->pool = NULL;
      piola_log(log, PIOLA_LOG_ERROR, "piola_world_create: could not start %d threads",
                (int)threads);
    }
  }
  if (s != PIOLA_OK) {
    release_all(cl);
    return s;
  }
  cl->colliders_dirty_first = 0;
  cl->colliders_dirty_end = INT32_MAX;
  w->backend_data = cl;
  piola_log(log, PIOLA_LOG_INFO, "OpenCL: %s on %s (work-group size %zu)", d.info.name,
            d.info.platform_name, cl->wg);
  return PIOLA_OK;
}

void piola_opencl_destroy(piola_world *w) {
  if (piola_ocl(w) == NULL) {
    return;
  }
  (void)piola_ocl_finish(piola_ocl(w)->faults,
                         piola_ocl(w)->queue); /* nothing to report: the world goes */
  release_all(piola_ocl(w));
  w->backend_data = NULL;
  piola_pool_destroy(w->pool);
  w->pool = NULL;
}

piola_status piola_opencl_layout_probe(const char *device_spec,
                                       int32_t out[PIOLA_LAYOUT_PROBE_COUNT],
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
    buf =
        clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, PIOLA_LAYOUT_PROBE_COUNT * sizeof(cl_int), NULL, &e);
  }
  if (s == PIOLA_OK && e == CL_SUCCESS) {
    e = clSetKernelArg(k, 0, sizeof buf, &buf);
  }
  size_t one = 1;
  if (s == PIOLA_OK && e == CL_SUCCESS) {
    e = clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL);
  }
  if (s == PIOLA_OK && e == CL_SUCCESS) {
    cl_int tmp[PIOLA_LAYOUT_PROBE_COUNT];
    e = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof tmp, tmp, 0, NULL, NULL);
    for (int i = 0; i < PIOLA_LAYOUT_PROBE_COUNT && e == CL_SUCCESS; ++i) {
      out[i] = tmp[i];
    }
  }
  if (s == PIOLA_OK && e != CL_SUCCESS) {
    s = piola_ocl_fail(logger, e, "layout probe");
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

piola_status piola_opencl_program_binary(const piola_world *w, bool packets, unsigned char **binary,
                                         size_t *size, const char **options) {
  *binary = NULL;
  *size = 0;
  *options = "";
  const piola_opencl *cl = piola_ocl(w);
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
    return piola_ocl_fail(&w->def.logger, e, "clGetProgramInfo");
  }
  unsigned char *bytes = malloc(n > 0 ? n : 1);
  if (bytes == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  unsigned char *list[1] = {bytes};
  e = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof list, list, NULL);
  if (e != CL_SUCCESS) {
    free(bytes);
    return piola_ocl_fail(&w->def.logger, e, "clGetProgramInfo");
  }
  *binary = bytes;
  *size = n;
  *options = packets ? cl->packet_options : cl->program_options;
  return PIOLA_OK;
}
