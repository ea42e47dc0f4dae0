/* Piola backends: a backend is a table of operations that runs the stages of the step and moves
 * state between the host arrays and wherever it computes. The CPU reference (cpu_backend.c) and
 * the OpenCL backend (opencl_backend.c) each fill one; the world calls only these, never a
 * backend's own functions, and a build without OpenCL does not register its table.
 *
 * The host arrays (world.h: x, p, v, w, the solver arrays) are the state of record whenever
 * host_current() says so; otherwise the backend holds the live state and the host arrays are
 * brought up to date only on request (pull, pull_range). */
#ifndef PIOLA_BACKEND_H
#define PIOLA_BACKEND_H

#include "piola/piola.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct piola_body piola_body;
typedef struct piola_render_mesh piola_render_mesh;
typedef struct piola_solver_attachments piola_solver_attachments;

/* Test-only fault injection (docs/ARCHITECTURE.md, "Device faults"). Every OpenCL call of the
 * backend that can fail goes through a wrapper that counts it by kind and, when a piola_faults
 * is attached to the world, makes the armed call fail with the armed error code instead of
 * calling OpenCL. The wrappers also count the OpenCL objects created and released, so a test
 * can check that nothing leaks. Nothing here is global: the record belongs to the test, which
 * attaches it with piola_world_create_with_faults() and arms it with piola_faults_arm(). */
typedef enum piola_fault_kind {
  PIOLA_FAULT_NONE = 0, /* count only */
  PIOLA_FAULT_CONTEXT,  /* clCreateContext, clCreateCommandQueue */
  PIOLA_FAULT_ALLOC,    /* clCreateBuffer */
  PIOLA_FAULT_BUILD,    /* clCreateProgramWithSource, clBuildProgram */
  PIOLA_FAULT_KERNEL,   /* clCreateKernel */
  PIOLA_FAULT_ARG,      /* clSetKernelArg */
  PIOLA_FAULT_ENQUEUE,  /* clEnqueueNDRangeKernel, clEnqueueWriteBuffer, clEnqueueFillBuffer,
                           clFlush */
  PIOLA_FAULT_READ,     /* clEnqueueReadBuffer, clFinish */
  PIOLA_FAULT_LOST,     /* the device is lost at the nth call of any kind: that call and every
                           later one fail (with CL_DEVICE_NOT_AVAILABLE unless armed otherwise) */
  PIOLA_FAULT_KIND_COUNT
} piola_fault_kind;

typedef struct piola_faults {
  piola_fault_kind kind;                 /* armed kind (NONE: nothing fails) */
  int32_t nth;                           /* the nth call of that kind since arming fails (from 1) */
  int32_t error;                         /* the cl_int it returns; 0: the kind's usual code */
  int32_t calls[PIOLA_FAULT_KIND_COUNT]; /* calls since arming, by kind; [NONE]: all kinds */
  int32_t injected;                      /* calls failed on purpose since arming */
  bool lost;                             /* a LOST fault struck: every call fails from then on... */
  int32_t lost_error;                    /* ...with this code */
  int64_t created, released; /* OpenCL objects (context, queue, program, kernel, buffer, event) */
} piola_faults;

/* Arms `f`: the nth call of `kind` fails with `error` (0: the kind's usual code); resets the
 * call counts (not the object counts, nor a device already lost). */
void piola_faults_arm(piola_faults *f, piola_fault_kind kind, int32_t nth, int32_t error);

/* Which part of a substep one per-body launch runs (substep_bodies): all of it (no contacts,
 * attachments or cloth), or, around the other stages: predict and reset, or one iteration of
 * the tets (then the cloth's colors, per stage), or the inverted-tet pass. */
typedef enum piola_bodies_part {
  PIOLA_BODIES_WHOLE_SUBSTEP, /* predict, reset, iterations of tets and colliders, velocities */
  PIOLA_BODIES_PREDICT,       /* predict and reset the multipliers (tet bodies only) */
  PIOLA_BODIES_ITERATION,     /* one iteration over the tets (colors, Jacobi tail), then cloth */
  PIOLA_BODIES_INVERTED       /* the inverted-tet pass (PIOLA_BODIES_ITERATION, inverted only) */
} piola_bodies_part;

typedef struct piola_backend_ops {
  piola_backend kind;

  /* Lists the backend's devices (piola_list_devices); NULL when it has none to list. */
  piola_status (*list_devices)(piola_device_info *devices, int32_t capacity, int32_t *count);

  /* Lifecycle. create() sets up w's backend state (w->backend_data, w->pool) from w->def;
   * `faults` is the test hook above (NULL in normal use). destroy() releases it. */
  piola_status (*create)(piola_world *w, piola_faults *faults);
  void (*destroy)(piola_world *w);
  /* Whether the backend's device is lost: every later call of the world fails with
   * PIOLA_ERROR_DEVICE_LOST. */
  bool (*lost)(const piola_world *w);

  /* The step. begin_step() uploads what changed (everything after a topology change) before the
   * stages; stage() runs (or enqueues) one stage; end_step() completes the step (flush, stage
   * times). A step failed after begin_step: abort_step() puts the backend back (from_host: the
   * step uploaded the state from the host, which still holds the state before it) or declares
   * the device lost, and returns the status to report. finish() waits for the work queued. */
  piola_status (*begin_step)(piola_world *w);
  piola_status (*stage)(piola_world *w, piola_stage stage, double h);
  piola_status (*end_step)(piola_world *w);
  piola_status (*abort_step)(piola_world *w, bool from_host, piola_status s);
  piola_status (*finish)(piola_world *w);
  /* Whether a substep of every tet body runs as one launch, a work-group per body, and that
   * launch (called only where per_body() says so; NULL where never). */
  bool (*per_body)(const piola_world *w);
  piola_status (*substep_bodies)(piola_world *w, double h, piola_bodies_part part);

  /* State between the host arrays and the backend. */
  bool (*host_current)(const piola_world *w);
  /* Brings all host arrays up to date (x, v, multipliers, plastic state, the contact lists of
   * the last substep); a failed pull leaves them as they were. */
  piola_status (*pull)(piola_world *w);
  /* The topology changed, or a state was loaded into the host arrays: the backend's state is
   * dropped (after a pull) and made anew from the host arrays, contact lists included. */
  void (*invalidate)(piola_world *w);
  /* Reads vertices [first, first + count) into the host x and v (all or nothing). */
  piola_status (*pull_range)(piola_world *w, int32_t first, int32_t count);
  /* Writes the host x and w (positions) and/or v (velocities) of a vertex range to the
   * backend, each as one write: on failure the backend is as it was, or lost. */
  piola_status (*push_range)(piola_world *w, int32_t first, int32_t count, bool positions,
                             bool velocities);
  /* Writes the host forces of a vertex range to the backend. */
  piola_status (*push_forces)(piola_world *w, int32_t first, int32_t count);
  /* Collider records [first, end) changed (added, moved or shifted by a removal). */
  void (*colliders_changed)(piola_world *w, int32_t first, int32_t end);
  /* The impulses collider `collider` (its place in w->colliders) applied in the last step, as
   * sums over the vertices of m times its corrections (out[0..2], kg m) and of their moments
   * m (p - o) x dx about its origin o at the end of each substep (out[3..5], kg m^2); zeros
   * before a step. The records start each step at zero (begin_step). */
  piola_status (*collider_impulse)(const piola_world *w, int32_t collider, double out[6]);

  /* Reads of the live state (used where host_current() is false). read_range: positions
   * and/or velocities of a vertex range as 3 floats each (NULL to skip); read_all: the whole
   * state for statistics, x, v (3 per vertex), tet M (9 per tet), multipliers (2 per tet). */
  piola_status (*read_range)(const piola_world *w, int32_t first, int32_t count, float *xyz,
                             float *vel);
  piola_status (*read_all)(const piola_world *w, double *x, double *v, double *tet_m,
                           double *lambda);
  /* What the residual of the last substep needs (residual.c; called only while
   * w->prediction_valid): per vertex gap = x - y, its position less the substep's prediction,
   * and motion = x - x^n, less its position at the substep's start (3 each, m), and
   * constrained[i] = 1 where a collider pushed the vertex in some
   * collider pass of the substep or it is in one of its contacts (piola_contacts_mark), else 0. */
  piola_status (*read_prediction)(const piola_world *w, double *gap, double *motion,
                                  uint8_t *constrained);
  /* The contacts kept and dropped in the last substep: vertex-triangle, then edge-edge. */
  piola_status (*contact_counters)(const piola_world *w, int32_t out[4]);

  /* Attachments: writes w->attach to the backend; releases a set's backend resources. */
  piola_status (*attachments_upload)(piola_world *w);
  void (*attachments_release)(const piola_world *w, piola_solver_attachments *a);
  /* Render meshes: uploads a render mesh of body b, computes its positions and normals from the
   * live positions (3 floats each; either may be NULL; used where host_current() is false),
   * releases its backend resources. */
  piola_status (*render_upload)(piola_world *w, piola_render_mesh *rm, const piola_body *b);
  piola_status (*render_compute)(const piola_world *w, const piola_render_mesh *rm,
                                 const piola_body *b, float *positions, float *normals);
  void (*render_release)(const piola_world *w, piola_render_mesh *rm);

  /* Statistics: the device's name, SIMD lanes, bytes held and the last step's stage times into
   * st; the stage times alone; the kernels' device times of the last step (writes
   * min(capacity, count) entries, returns count). */
  void (*describe)(const piola_world *w, piola_stats *st);
  void (*stage_times)(const piola_world *w, double out[PIOLA_STAGE_COUNT]);
  int32_t (*kernel_times)(const piola_world *w, piola_kernel_time *out, int32_t capacity);
} piola_backend_ops;

/* The table of a backend kind (CPU_REFERENCE or OPENCL), or NULL when this build has none. */
const piola_backend_ops *piola_backend_find(piola_backend kind);

/* The tables each backend defines (cpu_backend.c; opencl_backend.c, only with OpenCL). */
extern const piola_backend_ops piola_cpu_backend;
#ifdef PIOLA_WITH_OPENCL
extern const piola_backend_ops piola_opencl_backend;
#endif

#endif /* PIOLA_BACKEND_H */
