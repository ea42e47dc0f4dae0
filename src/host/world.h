/* Piola world: the data of a world (struct piola_world), shared by the host modules and the
 * backends. Not installed; the public story is include/piola/.
 *
 * Data layout (docs/ARCHITECTURE.md has the picture):
 *  - vertices of all bodies in one range per body, in double: x (positions), p (predicted),
 *    v (velocities), w (inverse masses);
 *  - each body keeps its own rest data per tet (indices, Dm^-1, volume, color);
 *  - the solver's tet arrays are built from the bodies, sorted by color, so that a color is one
 *    contiguous range holding that color's tets of every body (one launch per color).
 */
#ifndef PIOLA_WORLD_H
#define PIOLA_WORLD_H

#include "piola/piola.h"

#include "attachment.h"
#include "backend.h"
#include "body.h"
#include "collider.h"
#include "collider_mesh.h"
#include "common.h"
#include "contact.h"
#include "id_pool.h"
#include "newton.h"
#include "render_mesh.h"
#include "solver_arrays.h"
#include "thread_pool.h"
#include "vbd.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

struct piola_world {
  piola_world_def def;
  piola_backend backend; /* CPU_REFERENCE or OPENCL, never AUTO: ops->kind */

  piola_id_pool body_ids; /* the slots of bodies[] */
  piola_body *bodies;     /* per slot (body_ids.count of them) */
  int32_t body_capacity;
  int32_t body_count; /* live bodies */

  piola_material_entry *materials;
  int32_t material_count, material_capacity;
  piola_cloth_material_entry *cloth_materials;
  int32_t cloth_material_count, cloth_material_capacity;

  /* Colliders: the solver's records, dense in the order they were added (collider_count of
   * them), the slot behind each record, and per slot (collider_ids.count of them) the pose. */
  piola_collider_data *colliders;
  int32_t *collider_slot;
  int32_t collider_count, collider_capacity;
  piola_id_pool collider_ids;
  piola_collider_slot *collider_slots;
  int32_t collider_slot_capacity;
  /* Time from the start of the step to the end of the current substep (s): where the colliders
   * stand for the COLLIDE stage. */
  double collider_time;
  /* The mesh and SDF colliders' data (kernels/piola_mesh.h): shape_count float4 entries (4
   * floats each), every such collider's range named by its record; shapes_version changes with
   * them (the device uploads them again). */
  float *shapes;
  int32_t shape_count, shape_capacity;
  uint64_t shapes_version;
  /* h dt of the last step (s^2), by which the sums of the colliders' impulse records divide
   * into forces (piola_world_get_collider_force); 0 before a step, and after a collider was
   * added or removed or a state loaded, until the next step. */
  double collider_force_scale;
  /* CPU reference: per collider and vertex, the sums over the step of m dx and of
   * m (p - o) x dx (6 doubles, at (c vertex_count + i) 6; see piola_record_impulse). */
  double *collider_impulse;
  size_t collider_impulse_capacity; /* doubles */

  /* Vertices (double): x, p, v are 3 per vertex. */
  int32_t vertex_count, vertex_capacity;
  double *x, *p, *v, *w;
  /* CPU reference, 3 per vertex: the prediction y = x + h v + h^2 (g + f / m) of the current (after
   * a step: the last) substep, the inertial target of the implicit step (residual.c) */
  double *y;
  /* CPU reference, 3 per vertex: the positions at the start of the current (after a step: the
   * last) substep, x^n (the material damping's term of the residual) */
  double *x_start;
  /* CPU reference, per vertex: whether a collider pushed it in some collider pass of the current
   * (after a step: the last) substep (residual.c) */
  uint8_t *collider_pushed;
  /* Per vertex: the collider whose normal its support is (the last that pushed it in the current
   * substep; read only where the vertex is supported): the multigrid scheme's friction
   * (newton.c). On OpenCL filled from the device's support records before the global solve. */
  int32_t *support_collider;
  /* Whether the last substep's prediction still belongs to the state: set by a step, cleared
   * where positions or velocities are set, bodies are added or removed or a state is loaded
   * (the residual is then not measured until the next step). */
  bool prediction_valid;
  double *f; /* 3 per vertex, external force (N); NULL until a body sets forces */

  /* The solver's tet arrays, rebuilt from the bodies when tets_dirty. */
  bool tets_dirty;
  piola_solver_tets solver;
  piola_solver_cloth cloth; /* rebuilt with the tet arrays */
  piola_solver_contacts contacts;
  piola_solver_vbd vbd; /* vertex block descent's lists (PIOLA_SCHEME_VBD), rebuilt with them */
  piola_solver_newton newton; /* the multigrid scheme's matrix (PIOLA_SCHEME_MULTIGRID), too */

  int64_t step_count;
  /* The step (step_count) of the last stats read that found contact pairs dropped, 0 if none:
   * pairs dropped in a run of consecutive steps are logged once (piola_world_get_stats). */
  int64_t overflow_logged_step;
  /* The unconverged-step warning (piola_world_get_stats): the step of the first read in the
   * current run of reads that found the relative residual above PIOLA_RESIDUAL_WARNING (0: the
   * last read found it below), and whether the world has warned. */
  int64_t residual_high_since;
  bool residual_warned;
  double simulated_time;
  double last_step_ms;
  double stage_ms[PIOLA_STAGE_COUNT];

  piola_id_pool attachment_ids;
  piola_attachment_slot *attachment_slots; /* per slot (attachment_ids.count of them) */
  int32_t attachment_slot_capacity;
  bool attachments_dirty; /* rebuild w->attach before the next step */
  piola_solver_attachments attach;
  int32_t iteration; /* the iteration of the substep running (0 resets the attachments) */
  int32_t substep;   /* the substep of the step running (0 marks turned tets for contacts) */
  /* SOLVE_TETS runs as the inverted-tet pass: only tets with det F <= 0 are projected (the
   * cloth kinds not at all), in up to PIOLA_INVERTED_PASSES sweeps; see piola_world_step */
  bool tets_inverted_only;

  piola_id_pool render_mesh_ids;
  piola_render_mesh *render_meshes; /* per slot (render_mesh_ids.count of them) */
  int32_t render_mesh_capacity;

  const piola_backend_ops *ops; /* the backend that runs the stages */
  void *backend_data;           /* the backend's own state (the OpenCL device's), or NULL */
  piola_pool *pool; /* CPU reference: the threads beside the caller's (def.cpu_threads); or NULL */
};

/* Returns PIOLA_ERROR_DEVICE_LOST from the calling public function when the world's device is
 * lost: every call of a lost world but piola_world_destroy() says so. */
#define PIOLA_RETURN_IF_LOST(w)                                                                    \
  do {                                                                                             \
    if ((w) != NULL && (w)->ops->lost(w)) {                                                        \
      return PIOLA_ERROR_DEVICE_LOST;                                                              \
    }                                                                                              \
  } while (0)

/* piola_world_create() with a fault record attached to an OpenCL world (faults may be NULL);
 * the record must outlive the world. */
piola_status piola_world_create_with_faults(const piola_world_def *def, piola_faults *faults,
                                            piola_world **out);

/* The factor velocities keep over a substep of h seconds: max(0, 1 - damping h). */
static inline double piola_damping_factor(const piola_world_def *def, double h) {
  return fmax(0.0, 1.0 - (double)def->damping * h);
}

/* The mode of the COLLIDE stage now running (PIOLA_COLLIDE_*, piola_collide.h), for both
 * backends. It records its corrections as the colliders' impulses (piola_world_get_collider_force)
 * always, but under the multigrid scheme only in a substep's last pass, since each of its passes
 * pushes a supported vertex by the depth of the whole normal force of the Newton step before it
 * (newton.c's held motion), and its first pass (iteration -1, before the Newton steps) only moves
 * the prediction out; under that scheme the colliders push along their normals only. */
static inline int piola_collide_mode(const piola_world *w) {
  const bool multigrid = w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID;
  return (!multigrid || w->iteration == w->def.iterations - 1 ? PIOLA_COLLIDE_RECORD : 0) |
         (multigrid ? PIOLA_COLLIDE_NORMAL_ONLY : 0);
}

/* Makes the host arrays current (the backend's pull). */
piola_status piola_world_pull(piola_world *w);

#endif /* PIOLA_WORLD_H */
