/* Piola OpenCL backend, internal: the device state of a world (struct piola_opencl), the kernels
 * and buffers by index, and the functions the backend's files share (opencl_runtime.c: checked
 * calls, faults, launches; opencl_device.c: devices and programs; opencl_buffers.c: uploads and
 * reads; opencl_stages.c: the step; opencl_vbd.c and opencl_newton.c: the stages of vertex
 * block descent and of the multigrid scheme; opencl_contact.c: the contact stages;
 * opencl_extras.c: render meshes and attachments; opencl_backend.c: the table). Included by
 * those files only. */
#ifndef PIOLA_OPENCL_INTERNAL_H
#define PIOLA_OPENCL_INTERNAL_H

#include "opencl.h"
#include "world.h"

#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

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
  KERNEL_EDGE_CLUSTER_PAIRS, /* edge-edge contacts (piola_contact_edges.cl) */
  KERNEL_EDGE_CONTACT_NARROW,
  KERNEL_EDGE_CONTACT_CORNERS,
  KERNEL_EDGE_CONTACT_SOLVE,
  KERNEL_CLOTH_TRIS,
  KERNEL_CLOTH_BENDS,
  KERNEL_CLOTH_COLOR,
  KERNEL_RENDER_NORMALS,
  KERNEL_RENDER_POINTS,
  KERNEL_ATTACHMENTS,
  KERNEL_COLLIDER_IMPULSE_SUM,
  KERNEL_COLLIDE_SHAPES,
  KERNEL_VBD_BEGIN, /* vertex block descent (piola_vbd.cl) */
  KERNEL_VBD_COLOR,
  KERNEL_VBD_ACCELERATE,
  KERNEL_VBD_BODIES,
  KERNEL_VBD_RIGID_FIT,
  KERNEL_SOLVE_PACKETS, /* these three from the packet program (piola_packet.cl), where built */
  KERNEL_SOLVE_BODY_PACKETS,
  KERNEL_VBD_TET_BLOCKS,
  KERNEL_COUNT
};
/* The kernels' names in the programs, by KERNEL_ index. */
extern const char *const piola_ocl_kernel_names[KERNEL_COUNT];

/* The work-group sizes of the packet program: 32 packets per color launch (512 tets of 16
 * lanes), so that a color of a few thousand tets still makes work-groups for every core; 8 per
 * body (a color of an Armadillo, ~60 tets, is 4 packets). */
#define PACKET_WORK_GROUP 32
#define PACKET_BODY_WORK_GROUP 8

/* Entries one work-group scans (PIOLA_SCAN_ITEMS in piola_contact.cl per work-item). */
#define SCAN_ITEMS 16

/* Buffers, each with its size in bytes. */
enum {
  BUF_X,
  BUF_D,
  BUF_D0, /* per vertex: the predicted displacement y - x of the substep (piola_predict_vertex) */
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
  /* per collider and vertex: the impulse and moment the collider gave it in the step
   * (piola_record_impulse), and one collider's sums of them (piola_collider_impulse_sum) */
  BUF_COLLIDER_IMPULSE,
  BUF_COLLIDER_IMPULSE_SUM,
  BUF_COLLIDER_SHAPES, /* the mesh and SDF colliders' data (world shapes) */
  /* contacts (piola_contact.cl) */
  BUF_SV_VERTEX,
  BUF_SV_BODY,
  BUF_SV_NEAR,      /* per surface vertex: its near windows (first triangles, int2) */
  BUF_SV_NEAR_MASK, /* and their masks (ulong2) */
  BUF_SV_REST,
  BUF_SV_X, /* per surface vertex, each substep: its start and predicted positions */
  BUF_SV_P,
  BUF_TRIANGLES,
  BUF_SV_RING_START, /* per surface vertex: its ring's first entry (sv_count + 1) */
  BUF_SV_RING,       /* the rings: the triangles that have each surface vertex */
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
  /* edge-edge contacts (piola_contact_edges.cl) */
  BUF_EDGES,     /* per surface edge: its two surface vertices, body, owner triangle (int4) */
  BUF_TRI_EDGES, /* per triangle: its three edges, the mask of those it owns (int4) */
  BUF_CLUSTER_EDGE_MAX,   /* per cluster: the highest edge its triangles own */
  BUF_CLUSTER_NEAR,       /* per cluster: its near window among its body's clusters (first) */
  BUF_CLUSTER_NEAR_MASK,  /* and its mask (ulong) */
  BUF_EDGE_CLUSTER,       /* per surface edge: the cluster of its owner triangle */
  BUF_EDGE_WING,          /* per surface edge: its wings (int2, piola_solver_contacts) */
  BUF_EDGE_CONVEX,        /* per surface edge, each substep: convex or flat (uchar) */
  BUF_CLUSTER_PAIR_COUNT, /* per cluster, each substep: the clusters its edges test, */
  BUF_CLUSTER_PAIRS,      /* PIOLA_CLUSTER_PAIRS each */
  BUF_EDGE_CONTACT_COUNT,
  BUF_EDGE_CONTACT_ENTRY,
  BUF_EDGE_ACTIVE, /* the surface edges with contacts this substep */
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
  /* vertex block descent (only under PIOLA_SCHEME_VBD; src/host/vbd.h) */
  BUF_VBD_VERTICES, /* the vertices by color */
  BUF_VBD_START,    /* per vertex: its first element entry (vertex_count + 1) */
  BUF_VBD_ELEMENTS, /* the element entries */
  BUF_VBD_V_LAST,   /* per vertex: the velocity at the start of the last substep (float4) */
  /* with def.vbd_chebyshev_rho > 0: per vertex, the displacements of the iterations two back,
   * by the iteration's parity (float4; BUF_VBD_CHEBYSHEV0 + parity, so the two are consecutive) */
  BUF_VBD_CHEBYSHEV0,
  BUF_VBD_CHEBYSHEV1,
  /* per body (in the lists' order), 2 + 2 colors int2: its vertices (first, count), its first
   * slot in BUF_VBD_BODY_BLOCKS, per color its range of BUF_VBD_VERTICES, per color its range of
   * BUF_VBD_TET_ENTRIES (the per-body schedule, piola_vbd_bodies) */
  BUF_VBD_BODY_COLORS,
  /* the tets' entries of the colors (piola_vbd_tet_blocks on CPU devices, piola_vbd_bodies),
   * color after color, each color's by body and within it by tet; per element entry, its place
   * among its color's tet entries; the blocks of the color in flight */
  BUF_VBD_TET_ENTRIES,
  BUF_VBD_BLOCK_SLOT,
  BUF_VBD_BLOCKS,
  /* the per-body schedule's: per element entry, the slot of its tet's block in its body's
   * region; the regions (each as large as the body's largest color's tet entries) */
  BUF_VBD_BODY_SLOT,
  BUF_VBD_BODY_BLOCKS,
  /* per body with vertex colors (the lists' order), int4: its vertices (first, count), its
   * surface vertices (first, count), for the rigid fit of the free bodies (piola_vbd_fit_bodies) */
  BUF_VBD_BODY_FIT,
  BUF_COUNT
};

typedef struct event_record {
  cl_event event;
  piola_stage stage;
  int kernel; /* the kernel launched (KERNEL_...) */
} event_record;

typedef struct piola_opencl piola_opencl;
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
  uint64_t shapes_version; /* of the world's shape data uploaded (the world's + 1 forces one) */
  bool shapes_uploaded;
  int32_t vertex_count; /* sizes of the uploaded state */
  int32_t tet_count;
  int32_t plastic_count;
  int32_t sv_count, cluster_count;           /* contact surfaces uploaded */
  int32_t edge_count;                        /* surface edges uploaded */
  int32_t cloth_tri_count, cloth_bend_count; /* cloth constraints uploaded */
  /* Profiling: the events of the step in flight and the stage times of the last step. */
  event_record *events;
  int32_t event_count, event_capacity;
  double stage_ms[PIOLA_STAGE_COUNT];
  double kernel_ms[KERNEL_COUNT]; /* the last step's device time per kernel (profiling) */
  int32_t kernel_launches[KERNEL_COUNT];
  piola_faults *faults; /* the test hook (NULL in normal use) */
  bool lost;            /* the device is gone, or its state was left half advanced */
  bool vbd_have_last;   /* BUF_VBD_V_LAST holds the last substep's velocities */
  /* per vertex color, its first entry and count in BUF_VBD_TET_ENTRIES (color_count each, under
   * PIOLA_SCHEME_VBD; else NULL) */
  int32_t *vbd_tet_first, *vbd_tet_count;
  /* the bodies of BUF_VBD_BODY_COLORS and the most vertices one of them has */
  int32_t vbd_body_count, vbd_max_body_vertices;
  /* The multigrid scheme's SOLVE_GLOBAL on the host (opencl_newton.c; NULL under the other
   * schemes): x of the substep and the positions p the solve works on (3 doubles per vertex
   * each), the staging of the transfers (2 float4 per vertex), the tets' M with the plastic
   * tets' read from the device (9 doubles per tet) and the staging of that read (9 floats per
   * tet; both NULL without plastic tets), the substep's body contact lists read from the device
   * (per surface vertex its count, then its PIOLA_CONTACTS_PER_VERTEX entries; NULL without
   * contacts) and the host time of the step's SOLVE_GLOBAL stages (ms, profiling). */
  double *global_x;
  double *global_p;
  cl_float4 *global_staging;
  double *global_tet_m;
  float *global_tet_planes;
  int32_t *global_lists;
  double global_ms;
};

/* Work-items for a kernel that strides over n entries (the contact solve, piola_contact_boxes):
 * on GPUs one per entry; on CPU devices four work-groups per compute unit, each work-item going
 * through many entries: a work-group costs a CPU device more to start than an entry takes
 * (measured on PoCL: bench/LOG.md). */

/* The world's device state. */
static inline piola_opencl *piola_ocl(const piola_world *w) {
  return (piola_opencl *)w->backend_data;
}

/* A failed call of world w's device: logged and mapped as piola_ocl_fail(); an error that means the
 * device is gone marks the world lost. */
piola_status piola_ocl_wfail(const piola_world *w, cl_int e, const char *what);

/* Returns from the enclosing function (which has the world `w` in scope) when `call` fails. */
#define CL_CHECK(call)                                                                             \
  do {                                                                                             \
    cl_int cl_e_ = (call);                                                                         \
    if (cl_e_ != CL_SUCCESS) {                                                                     \
      return piola_ocl_wfail(w, cl_e_, #call);                                                     \
    }                                                                                              \
  } while (0)

#define SET_ARG(k, i, v)                                                                           \
  CL_CHECK(piola_ocl_set_arg(cl->faults, cl->kernels[k], (i), sizeof(v), &(v)))

/* Runtime (opencl_runtime.c): checked calls through the fault hook, errors, launches. */
size_t piola_ocl_stride_items(const piola_opencl *cl, size_t n);
size_t piola_ocl_box_partials(const piola_opencl *cl, size_t n);
const char *piola_ocl_error_name(cl_int e);
piola_status piola_ocl_status(cl_int e);
piola_status piola_ocl_fail(const piola_logger *log, cl_int e, const char *what);
cl_context piola_ocl_create_context(piola_faults *f, const cl_context_properties *props,
                                    const cl_device_id *device, cl_int *e);
cl_command_queue piola_ocl_create_queue(piola_faults *f, cl_context ctx, cl_device_id device,
                                        cl_command_queue_properties props, cl_int *e);
cl_program piola_ocl_create_program(piola_faults *f, cl_context ctx, cl_uint count,
                                    const char **sources, cl_int *e);
cl_int piola_ocl_build_program(piola_faults *f, cl_program prog, const cl_device_id *device,
                               const char *options);
cl_kernel piola_ocl_create_kernel(piola_faults *f, cl_program prog, const char *name, cl_int *e);
cl_int piola_ocl_set_arg(piola_faults *f, cl_kernel k, cl_uint index, size_t size,
                         const void *value);
cl_mem piola_ocl_create_buffer(piola_faults *f, cl_context ctx, cl_mem_flags flags, size_t bytes,
                               void *host, cl_int *e);
cl_int piola_ocl_launch(piola_faults *f, cl_command_queue q, cl_kernel k, const size_t *global,
                        const size_t *local, cl_event *ev);
cl_int piola_ocl_write(piola_faults *f, cl_command_queue q, cl_mem m, size_t offset, size_t bytes,
                       const void *data);
cl_int piola_ocl_fill(piola_faults *f, cl_command_queue q, cl_mem m, const void *pattern,
                      size_t pattern_size, size_t bytes, cl_event *ev);
cl_int piola_ocl_flush(piola_faults *f, cl_command_queue q);
cl_int piola_ocl_read(piola_faults *f, cl_command_queue q, cl_mem m, size_t offset, size_t bytes,
                      void *data);
cl_int piola_ocl_finish(piola_faults *f, cl_command_queue q);
void piola_ocl_release_mem(piola_faults *f, cl_mem m);
void piola_ocl_release_event(piola_faults *f, cl_event ev);
void piola_ocl_release_kernel(piola_faults *f, cl_kernel k);
void piola_ocl_release_program(piola_faults *f, cl_program p);
void piola_ocl_release_queue(piola_faults *f, cl_command_queue q);
void piola_ocl_release_context(piola_faults *f, cl_context c);
piola_status piola_ocl_wfail(const piola_world *w, cl_int e, const char *what);
bool piola_opencl_lost(const piola_world *w);
piola_status piola_ocl_enqueue(piola_world *w, int k, int32_t count, piola_stage stage);

/* Devices and programs (opencl_device.c). */
piola_status piola_opencl_list_devices(piola_device_info *devices, int32_t capacity,
                                       int32_t *count);
piola_status piola_opencl_create(piola_world *w, piola_faults *faults);
void piola_opencl_destroy(piola_world *w);

/* Buffers, uploads and reads (opencl_buffers.c). */
piola_status piola_ocl_ensure_buffer(piola_world *w, int b, size_t bytes, cl_mem_flags flags);
piola_status piola_ocl_write_buffer(piola_world *w, int b, size_t offset, size_t bytes,
                                    const void *data);
piola_status piola_ocl_read_buffer(const piola_world *w, int b, size_t offset, size_t bytes,
                                   void *data);
piola_status piola_ocl_zero_buffer(piola_world *w, int b, size_t bytes);
piola_status piola_ocl_upload_forces(piola_world *w, int32_t first, int32_t count);
piola_status piola_ocl_upload_colliders(piola_world *w);
piola_status piola_ocl_upload_all(piola_world *w);
bool piola_opencl_live(const piola_world *w);
piola_status piola_opencl_push_forces(piola_world *w, int32_t first, int32_t count);
void piola_opencl_invalidate(piola_world *w);
void piola_opencl_colliders_changed(piola_world *w, int32_t first, int32_t end);
piola_status piola_opencl_collider_impulse(const piola_world *w, int32_t collider, double out[6]);
piola_status piola_opencl_contact_counters(const piola_world *w, int32_t out[4]);
int64_t piola_opencl_device_bytes(const piola_world *w);
const char *piola_opencl_device_name(const piola_world *w);
int32_t piola_opencl_simd_lanes(const piola_world *w);
void piola_opencl_stage_ms(const piola_world *w, double out[PIOLA_STAGE_COUNT]);
int32_t piola_opencl_kernel_times(const piola_world *w, piola_kernel_time *out, int32_t capacity);
piola_status piola_opencl_read_range(const piola_world *w, int32_t first, int32_t count, float *xyz,
                                     float *vel);
piola_status piola_opencl_read_prediction(const piola_world *w, double *gap, double *motion,
                                          uint8_t *constrained);
piola_status piola_opencl_read_all(const piola_world *w, double *x, double *v, double *tet_m,
                                   double *lambda);
piola_status piola_opencl_pull(piola_world *w);
piola_status piola_opencl_pull_range(piola_world *w, int32_t first, int32_t count);
piola_status piola_opencl_push_range(piola_world *w, int32_t first, int32_t count, bool positions,
                                     bool velocities);

/* The step (opencl_stages.c). */
piola_status piola_opencl_begin_step(piola_world *w);
piola_status piola_opencl_abort_step(piola_world *w, bool from_host, piola_status s);
piola_status piola_opencl_stage(piola_world *w, piola_stage stage, double h);
/* Vertex block descent (opencl_vbd.c): the SOLVE_VERTICES stage, and the upload of its lists
 * (a part of piola_ocl_upload_all; nothing without PIOLA_SCHEME_VBD). */
piola_status piola_ocl_solve_vertices(piola_world *w, double h);
piola_status piola_ocl_upload_vbd(piola_world *w);
/* The multigrid scheme (opencl_newton.c): the SOLVE_GLOBAL stage, solved on the host in double
 * between the device's stages; the host arrays it needs (a part of piola_ocl_upload_all;
 * nothing without PIOLA_SCHEME_MULTIGRID), and their release. */
piola_status piola_ocl_solve_global(piola_world *w, double h);
piola_status piola_ocl_upload_global(piola_world *w);
void piola_ocl_release_global(piola_opencl *cl);
bool piola_opencl_per_body(const piola_world *w);
piola_status piola_opencl_substep_bodies(piola_world *w, double h, piola_bodies_part part);
piola_status piola_opencl_end_step(piola_world *w);
piola_status piola_opencl_finish(piola_world *w);

/* Contact stages (opencl_contact.c). */
piola_status piola_ocl_broad_phase(piola_world *w, piola_stage stage);
piola_status piola_ocl_narrow_phase(piola_world *w, piola_stage stage);
piola_status piola_ocl_contact_solve(piola_world *w, piola_stage stage);

/* Render meshes and attachments (opencl_extras.c). */
void piola_opencl_render_release(const piola_world *w, piola_render_mesh *rm);
piola_status piola_opencl_render_upload(piola_world *w, piola_render_mesh *rm, const piola_body *b);
piola_status piola_opencl_render_compute(const piola_world *w, const piola_render_mesh *rm,
                                         const piola_body *b, float *positions, float *normals);
void piola_opencl_attachments_release(const piola_world *w, piola_solver_attachments *a);
piola_status piola_opencl_attachments_upload(piola_world *w);

#endif /* PIOLA_OPENCL_INTERNAL_H */
