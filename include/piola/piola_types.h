/* Piola public types: status codes, ids, definition structs with their units, statistics.
 *
 * Every *_def struct has a default constructor in piola.h (piola_default_world_def(),
 * piola_default_material(), piola_default_collider_def()); start from it and change the fields
 * you need, so that fields added later get sensible values. Units are SI throughout: metres,
 * kilograms, seconds, pascals, joules.
 */
#ifndef PIOLA_TYPES_H
#define PIOLA_TYPES_H

#include "piola_base.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The most triangles one surface vertex is in contact with in a substep (the nearest win). */
#define PIOLA_MAX_VERTEX_CONTACTS 8
/** The most edges one surface edge is in contact with in a substep (the nearest win). */
#define PIOLA_MAX_EDGE_CONTACTS 8

/** m: how far from the origin a body's vertices may start (piola_world_add_tet_body()). Bodies
 * are simulated and read back in float, so a body must be small enough that its volumes,
 * masses and the velocities of its motion stay floats (a tet of this size holds about 1e26 m^3
 * and a move across it in a 1 ms step is 1e12 m/s); positions of float range itself came back
 * as infinity after a step. Box2D bounds its worlds the same way (B2_HUGE). */
#define PIOLA_POSITION_LIMIT 1.0e9

/** Result of every fallible call. PIOLA_OK is zero; piola_status_string() names each one. */
typedef enum piola_status {
  PIOLA_OK = 0,
  PIOLA_ERROR_INVALID_ARGUMENT, /**< a NULL pointer, a negative count, an out-of-range option */
  PIOLA_ERROR_INVALID_DEF,      /**< a def struct not made by its default constructor */
  PIOLA_ERROR_INVALID_BODY,     /**< an unknown or stale body id */
  PIOLA_ERROR_COUNT_MISMATCH,   /**< an array length that does not match the body or mesh */
  PIOLA_ERROR_NON_FINITE,       /**< a NaN or infinite number where a finite one is needed */
  PIOLA_ERROR_INVALID_MESH,     /**< bad tet indices, repeated indices, degenerate tets */
  PIOLA_ERROR_INVALID_MATERIAL, /**< E <= 0, nu outside [0, 0.5), density <= 0, bad plasticity */
  PIOLA_ERROR_IO,               /**< a file that cannot be opened or read */
  PIOLA_ERROR_PARSE,            /**< a malformed or truncated file */
  PIOLA_ERROR_OUT_OF_MEMORY,    /**< a host allocation failed */
  PIOLA_ERROR_UNSUPPORTED,      /**< a backend or feature this build does not have */
  PIOLA_ERROR_NO_DEVICE,        /**< no OpenCL device matches the request */
  PIOLA_ERROR_BUILD_FAILED,     /**< the OpenCL program did not build (log goes to the logger) */
  PIOLA_ERROR_DEVICE,           /**< an OpenCL call failed (the code goes to the logger) */
  PIOLA_ERROR_OUT_OF_DEVICE_MEMORY, /**< the device could not allocate or ran out of resources */
  PIOLA_ERROR_DEVICE_LOST,         /**< the device stopped answering; the world must be destroyed */
  PIOLA_ERROR_INVALID_COLLIDER,    /**< an unknown or stale collider id */
  PIOLA_ERROR_INVALID_RENDER_MESH, /**< an unknown or removed render mesh id */
  PIOLA_ERROR_INVALID_ATTACHMENT,  /**< an unknown or removed attachment id */
  PIOLA_STATUS_COUNT
} piola_status;

/** Severity of a message passed to the logger. */
typedef enum piola_log_level {
  PIOLA_LOG_ERROR = 0,
  PIOLA_LOG_WARNING,
  PIOLA_LOG_INFO,
  PIOLA_LOG_DEBUG
} piola_log_level;

/** Receives the library's messages (details of failures, repairs it made, build logs).
 * The library prints nothing by itself; without a logger the messages are dropped. */
typedef void piola_log_fn(piola_log_level level, const char *message, void *user_data);

/** A logger and its user data; fn == NULL drops every message. */
typedef struct piola_logger {
  piola_log_fn *fn;
  void *user_data;
} piola_logger;

/** Called on misuse of the API (a NULL world, a stale id) before the call returns its status.
 * The default (NULL) asserts in debug builds and does nothing in release builds. */
typedef void piola_assert_fn(const char *condition, const char *file, int line, void *user_data);

/** Which path runs the simulation. */
typedef enum piola_backend {
  PIOLA_BACKEND_AUTO = 0,          /**< the best OpenCL device, else the CPU reference */
  PIOLA_BACKEND_CPU_REFERENCE = 1, /**< double precision on the host (def.cpu_threads threads) */
  PIOLA_BACKEND_OPENCL = 2         /**< OpenCL kernels on the device chosen by device_spec */
} piola_backend;

/** Stages of one step, in the order they run (docs/ARCHITECTURE.md describes each). */
typedef enum piola_stage {
  PIOLA_STAGE_PREDICT = 0,       /**< v += h g; p = x + h v */
  PIOLA_STAGE_RESET_MULTIPLIERS, /**< lambda = 0 once per substep */
  /** Contacts, once per substep: swept boxes of the surface triangles hashed into a uniform
   * grid by a counting sort */
  PIOLA_STAGE_BROAD_PHASE,
  /** Contacts, once per substep: each surface vertex keeps the nearest surface triangles it
   * may reach within the substep (PIOLA_MAX_VERTEX_CONTACTS at most) */
  PIOLA_STAGE_NARROW_PHASE,
  /** One pass over the colors per iteration (the tets' time); with contacts also the
   * inverted-tet pass after the iterations, which projects the tets that the iterations left
   * inverted or nearly flat (docs/ARCHITECTURE.md, "The inverted-tet pass") */
  PIOLA_STAGE_SOLVE_TETS,
  /** Cloth triangles (membrane, paper Sec. 4.3): projected in the same pass as SOLVE_TETS,
   * color after color and inside a color before the bending stencils; this entry is the time
   * spent on the triangles (so with SOLVE_BENDING it splits the cloth's solve by kind) */
  PIOLA_STAGE_SOLVE_CLOTH,
  /** Cloth bending stencils (Bergou et al. 2006): projected in the same pass, after each
   * color's triangles; this entry is the time spent on them */
  PIOLA_STAGE_SOLVE_BENDING,
  PIOLA_STAGE_CONTACT,     /**< vertex-triangle contacts projected with friction, per iteration */
  PIOLA_STAGE_ATTACHMENTS, /**< vertices pulled to their attachments' targets, per iteration */
  PIOLA_STAGE_COLLIDE,     /**< particles projected out of the colliders */
  PIOLA_STAGE_UPDATE_VELOCITIES, /**< v = (p - x) / h, x = p, damping */
  PIOLA_STAGE_PLASTICITY,        /**< plastic flow per tet, once per substep */
  /** Vertex block descent (PIOLA_SCHEME_VBD): one pass over the vertex colors per iteration,
   * each vertex one Newton step on its block; runs instead of SOLVE_TETS under that scheme */
  PIOLA_STAGE_SOLVE_VERTICES,
  /** The multigrid scheme (PIOLA_SCHEME_MULTIGRID): one Newton step on the whole substep per
   * iteration, its linear system solved by conjugate gradients preconditioned by multigrid;
   * runs instead of SOLVE_TETS under that scheme */
  PIOLA_STAGE_SOLVE_GLOBAL,
  PIOLA_STAGE_COUNT
} piola_stage;

/** How one solver iteration visits the tets. */
typedef enum piola_iteration_scheme {
  /** Colored Gauss-Seidel: color after color, each seeing the corrections of the colors before
   * it (Bender et al. 2014; the default). With max_colors set, tets beyond the first max_colors
   * colors are solved together in one Jacobi pass at the end of each iteration. */
  PIOLA_SCHEME_GAUSS_SEIDEL = 0,
  /** Jacobi: every tet from the same positions, the corrections of each vertex averaged over
   * the tets that moved it and over-relaxed by jacobi_omega (Bender, Mueller, Macklin 2017, "A
   * Survey on Position Based Dynamics", Sec. 6.1.2). Two launches per iteration. */
  PIOLA_SCHEME_JACOBI = 1,
  /** Vertex block descent (Chen, Liu, Yang, Yuksel 2024, "Vertex Block Descent"): the vertices
   * are colored (no two of a color share an element); per iteration, color after color, each
   * vertex of a color takes one Newton step on its 3x3 block of the implicit Euler step's
   * incremental potential (inertia plus the energies of its elements, the same materials as
   * XPBD). One pass per vertex color per iteration (docs/solvers.md). max_colors and
   * jacobi_omega do not apply. */
  PIOLA_SCHEME_VBD = 2,
  /** Multigrid (docs/solvers.md): each iteration is one Newton step on the whole substep's
   * incremental potential (inertia plus the tets' and the cloth's energies, the same materials
   * as XPBD), its
   * linear system solved by conjugate gradients preconditioned by an aggregation multigrid over
   * rigid clusters of vertices, so that the slow modes of a fine mesh converge as fast as the
   * fast ones. Both backends run it: on OpenCL worlds the global solve runs on the host in
   * double between the device's stages, so it moves the positions across once per iteration
   * (48 bytes per vertex, 32 more per substep); every other stage stays on the device.
   * max_colors, jacobi_omega and the schedule do not apply (every stage runs per stage). */
  PIOLA_SCHEME_MULTIGRID = 3
} piola_iteration_scheme;

/** How the OpenCL backend launches a substep (the CPU reference ignores it). */
typedef enum piola_schedule {
  /** BODIES when every body has at most 65536 tets, profiling is off and tets are not packed
   * into SIMD lanes (simd_lanes 1, as on GPUs), else STAGES (on CPU devices: packets, per body
   * where the bodies are many). */
  PIOLA_SCHEDULE_AUTO = 0,
  /** One launch per stage and one per color per iteration, each over all bodies: for bodies of
   * any size; stage times can be profiled. */
  PIOLA_SCHEDULE_STAGES = 1,
  /** One launch per substep, one work-group per body running the whole substep for it with
   * barriers between colors, the body's vertices held in local memory (32 bytes each): the same
   * computation (bodies share no vertex) with hundreds of times fewer launches; best for many
   * small bodies. Where the largest tet body's vertices do not fit the device's local memory
   * (48 KiB on NVIDIA GPUs: 1536 vertices), the step runs per stage. Cloth bodies run per stage
   * beside it: with cloth in the world each iteration is a per-body launch for the tets, then
   * the cloth's colors. Under PIOLA_SCHEME_VBD each iteration is one launch, a work-group per
   * body (tet or cloth) walking its vertex colors with barriers: per color its work-items share
   * the tets' parts of the vertices' blocks, then each vertex sums its own in order and steps
   * (AUTO takes it where tets are not packed into SIMD lanes, profiling is off and every body
   * has at most 4096 vertices); the same result, bit for bit, as one launch per color. */
  PIOLA_SCHEDULE_BODIES = 2
} piola_schedule;

/** Settings of a world. Make it with piola_default_world_def(). */
typedef struct piola_world_def {
  piola_backend backend;
  /** OpenCL device: "P:D" indices, "gpu", "cpu", "accelerator", or a substring of the device
   * name; NULL uses the PIOLA_DEVICE environment variable, then the best device. */
  const char *device_spec;
  float gravity[3];   /**< m/s^2; default (0, -9.81, 0) */
  float dt;           /**< s; the time one piola_world_step() advances; default 0.005 */
  int32_t substeps;   /**< substeps per step; default 1 */
  int32_t iterations; /**< solver iterations per substep; default 5 */
  float damping;      /**< 1/s; v *= max(0, 1 - damping h) each substep; default 0 */
  piola_iteration_scheme iteration_scheme; /**< default PIOLA_SCHEME_GAUSS_SEIDEL */
  /** Gauss-Seidel: the most colors solved one after another (>= 0); 0 = as many as the
   * coloring needs (pure Gauss-Seidel). Fewer colors mean fewer launches per iteration; the
   * tets that do not fit are solved in one Jacobi pass at the end of each iteration. */
  int32_t max_colors;
  float jacobi_omega; /**< over-relaxation of Jacobi passes, in (0, 2); default 1 */
  /** Vertex block descent: Chebyshev acceleration of a substep's iterations (Wang 2015, "A
   * Chebyshev Semi-Iterative Approach for Accelerating Projective and Position-based Dynamics";
   * Chen et al. 2024, Sec. 3.7), the estimate rho of the iterations' spectral radius, in [0, 1);
   * 0 (the default) turns it off. From the third iteration on, each vertex's position x_k is
   * extrapolated to x_{k-2} + omega_k (x_k - x_{k-2}) with omega_3 = 2 / (2 - rho^2),
   * omega_k = 4 / (4 - rho^2 omega_{k-1}); pinned and hard-attached vertices keep theirs. One
   * more pass per iteration; 0.85 suits bodies of thousands of tets at dt = 5 ms
   * (docs/solvers.md). Ignored under the other schemes. */
  float vbd_chebyshev_rho;
  bool profile;            /**< OpenCL: time each stage with device events (slower); default off */
  bool fast_math;          /**< OpenCL: build kernels with -cl-fast-relaxed-math; default off */
  int32_t work_group_size; /**< OpenCL: work-group size of the kernels; 0 picks per device */
  piola_schedule schedule; /**< OpenCL: how substeps are launched; default AUTO */
  /** OpenCL: tets that one work-item projects at once, in SIMD lanes, where tets are solved per
   * stage (Gauss-Seidel colors): 1, 4, 8 or 16; 0 (the default) picks per device: on CPU
   * devices, whose work-items otherwise leave the vector units idle, their native float vector
   * width as 4, 8 or 16 (16 with AVX-512, 8 with AVX2), and 1 elsewhere. */
  int32_t simd_lanes;
  /** Body-body and self contact (vertex against triangle of the bodies' boundary surfaces);
   * default true. Bodies choose partners with piola_body_set_collision_filter() and
   * piola_body_set_self_collision(). */
  bool contacts;
  /** Edge-edge contacts between surface edges (of two bodies, or of one body with itself),
   * besides the vertex-triangle ones, so that thin parts cannot cut through each other where no
   * vertex comes near (the pairs of concave edges are skipped: they never hold what the others
   * do not); default false: on the funnel they multiply the contact stages' time by about 3 on
   * PoCL (bench/RESULTS.md), so turn them on for scenes with thin parts that cross edge on edge
   * (bars, cloth borders). Only with contacts on. */
  bool edge_contacts;
  /** m (> 0): the distance kept between a surface vertex and a surface triangle; default
   * 0.01. Keep it below the smallest feature of the bodies' rest shapes (a pair of one body
   * closer than 2 thickness at rest never collides) and above the motion of a resting body
   * in one substep (g h^2). */
  float contact_thickness;
  float contact_friction; /**< Coulomb coefficient of body-body contacts (>= 0); default 0.5 */
  /** CPU reference: threads that run a step (0 to 256): 1 (the default) the calling thread
   * alone; 0 one per online core. A stage splits items that share nothing they write (the tets
   * or cloth items of one color, the bodies, the vertices, the contacts) among them, so every
   * count computes the same, to the bit. The world owns the threads from piola_world_create()
   * to piola_world_destroy(). The OpenCL backend ignores it, but for the multigrid scheme's
   * global solve, which it runs on the host on these threads. */
  int32_t cpu_threads;
  piola_logger logger;        /**< where messages go; default none */
  piola_assert_fn *assert_fn; /**< misuse hook; default NULL (assert in debug builds only) */
  void *assert_user_data;
  int32_t internal_cookie; /**< set by piola_default_world_def(); do not change */
} piola_world_def;

/** Hyperelastic energy of a tet (Bender et al. 2014, Eqs. 4-9). */
typedef enum piola_model {
  PIOLA_MODEL_STVK = 0,      /**< Saint Venant-Kirchhoff */
  PIOLA_MODEL_NEOHOOKEAN = 1 /**< compressible Neo-Hookean, paper Eq. 8 */
} piola_model;

/** How the energy constraint is projected. */
typedef enum piola_solver {
  /** XPBD (Macklin et al. 2016): C = sqrt(2 U / E), compliance 1 / E, multipliers accumulated
   * over a substep's iterations. Stiffness means what E says, independent of dt and of the
   * iteration count once converged. */
  PIOLA_SOLVER_XPBD = 0,
  /** The paper's plain PBD form (its Eq. 3 with C = U): E cancels out of the projection, so
   * stiffness comes from the iteration count and dt alone; E only has meaning in XPBD. */
  PIOLA_SOLVER_PBD = 1
} piola_solver;

/** Inverted-element handling (Irving, Teran, Fedkiw 2004). */
typedef enum piola_inversion {
  PIOLA_INVERSION_OFF = 0, /**< plain F; Neo-Hookean skips tets with det F <= 0 */
  /** SVD path exactly where F is inverted or a principal stretch lies below the clamp stretch
   * (decided without an SVD), plain F elsewhere: the same result as ALWAYS, faster. */
  PIOLA_INVERSION_ON = 1,
  PIOLA_INVERSION_ALWAYS = 2 /**< SVD path for every tet */
} piola_inversion;

/** How a tet's energy becomes XPBD constraints (the PBD form always uses one). */
typedef enum piola_constraint_split {
  /** Two constraints per tet, the mu and the lambda terms of the energy, each C = sqrt(2 U_k/E)
   * with compliance 1 / E, so the potential is still U. Each projection follows one mode, so
   * nearly incompressible materials (nu >= 0.4) and badly shaped tets stay stable; about twice
   * the arithmetic of one constraint. The default. */
  PIOLA_SPLIT_LAME = 0,
  /** One constraint of the whole energy, the form of the paper's authors. Its single
   * projection direction overshoots the stiff volume mode when lambda >> mu: with nu = 0.45
   * bodies can tear apart unless substeps make the steps small. */
  PIOLA_SPLIT_NONE = 1
} piola_constraint_split;

/** Material of a body. Make it with piola_default_material(). */
typedef struct piola_material {
  piola_model model;                /**< default PIOLA_MODEL_STVK */
  piola_solver solver;              /**< default PIOLA_SOLVER_XPBD */
  float youngs_modulus;             /**< E, Pa (> 0); default 1e5 */
  float poisson_ratio;              /**< nu, in [0, 0.5); default 0.3 */
  float density;                    /**< kg/m^3 (> 0); default 1000 */
  piola_inversion handle_inversion; /**< default PIOLA_INVERSION_ON */
  piola_constraint_split split;     /**< default PIOLA_SPLIT_LAME */
  /** Plasticity (paper Sec. 4.2), on when plastic_creep > 0: where the deviatoric elastic
   * Green strain exceeds plastic_yield (Frobenius norm, dimensionless), its excess over the
   * yield flows into the plastic strain at the rate plastic_creep (1/s), whose norm is capped at
   * plastic_max. */
  float plastic_yield; /**< dimensionless strain, >= 0; default 0.1 */
  float plastic_creep; /**< 1/s, >= 0; default 0 (plasticity off) */
  float plastic_max;   /**< dimensionless strain, in [0, 0.5); default 0.3 */
  /** Material damping of the elastic energy, s (finite, >= 0; default 0: undamped): a Rayleigh
   * damping proportional to the stiffness, a damping stress of about damping * dP/dt, through
   * XPBD's constraint damping (Macklin et al. 2016, Eq. 26). A deformation mode of angular
   * frequency w loses its energy at the rate damping * w^2; rigid motion is not damped, nor is
   * the converged step's equilibrium moved. It slows the solve's convergence by 1 + damping / h
   * per projection (h the substep), so with few iterations bodies are softer. XPBD form only (the
   * PBD form ignores it). Every iteration scheme applies it: vertex block descent and the
   * multigrid scheme as the forces of XPBD's damped projection at its fixed point, so a converged
   * step is the same under all three. See docs/physics.md and docs/solvers.md. */
  float damping;
  int32_t internal_cookie; /**< set by piola_default_material(); do not change */
} piola_material;

/** Material of a cloth body (paper Sec. 4.3): an orthotropic Saint Venant-Kirchhoff membrane per
 * triangle and the isometric bending of Bergou et al. 2006 per interior edge. Make it with
 * piola_default_cloth_material(). The weft is the direction of increasing u of the mesh's
 * texture coordinates (without uvs, or where u is constant on a triangle: the triangle's first
 * edge, x1 - x0), the warp is perpendicular to it in the triangle's plane. Moduli are Young's
 * moduli times the cloth's thickness. */
typedef struct piola_cloth_material {
  float density;      /**< kg/m^2, areal density (> 0); default 0.2 */
  float stretch_weft; /**< N/m, E1 t along the weft (> 0); default 1000 */
  float stretch_warp; /**< N/m, E2 t along the warp (> 0); default 1000 */
  float shear;        /**< N/m, G12 t (> 0); default 100 */
  /** Contraction along the warp under a stretch along the weft (nu12, dimensionless); the other
   * ratio is nu21 = nu12 stretch_warp / stretch_weft. Needs nu12 nu21 < 1; default 0.3 */
  float poisson_weft;
  /** N m, the plate bending stiffness D = E t^3 / (12 (1 - nu^2)) (>= 0; 0: no bending
   * constraints). The bending constraint's stiffness is k = D / 3 (see docs/cloth.md); default
   * 1e-4 */
  float bending_stiffness;
  /** PIOLA_SOLVER_XPBD (default: stiffness means what the moduli say) or PIOLA_SOLVER_PBD (the
   * paper's form: the moduli cancel out, stiffness comes from dt and the iteration count). */
  piola_solver solver;
  /** Material damping of the membrane and bending energies, s (finite, >= 0; default 0:
   * undamped), as piola_material.damping (every iteration scheme applies it). */
  float damping;
  int32_t internal_cookie; /**< set by piola_default_cloth_material(); do not change */
} piola_cloth_material;

/** A tetrahedral mesh. Filled by the loaders and generators (free with piola_mesh_free()) or
 * by the caller with its own arrays (then the caller owns them). */
typedef struct piola_tet_mesh {
  float *positions; /**< m; 3 per vertex (x, y, z) */
  int32_t vertex_count;
  int32_t *tets; /**< 4 vertex indices per tet, 0-based */
  int32_t tet_count;
} piola_tet_mesh;

/** A triangle mesh (a cloth or a surface). Filled by piola_mesh_load_obj() and
 * piola_mesh_make_grid() (free with piola_tri_mesh_free()) or by the caller with its own arrays
 * (then the caller owns them). */
typedef struct piola_tri_mesh {
  float *positions;     /**< m; 3 per vertex (x, y, z) */
  int32_t vertex_count; /**< number of vertices: of positions, and of uvs when present */
  /** 3 vertex indices per triangle, 0-based, counter-clockwise seen from the front: the normal
   * (x1 - x0) x (x2 - x0) points to the front side. */
  int32_t *triangles;
  int32_t triangle_count; /**< number of triangles */
  /** Texture coordinates (dimensionless, usually in [0, 1]), 2 per vertex (u, v); NULL when the
   * mesh has none. For cloth, u is meant as the weft direction. */
  float *uvs;
} piola_tri_mesh;

/** A body's handle. Zero-initialised means "no body"; a removed body's id goes stale. */
typedef struct piola_body_id {
  int32_t index1;      /**< body slot + 1; 0 is the null id */
  uint32_t generation; /**< bumped when the slot is reused */
} piola_body_id;

/** An attachment's handle (piola_world_add_attachment), generational like piola_body_id.
 * Zero-initialised means "no attachment"; a removed attachment's id goes stale. */
typedef struct piola_attachment_id {
  int32_t index1;      /**< attachment slot + 1; 0 is the null id */
  uint32_t generation; /**< bumped when the slot is freed */
} piola_attachment_id;

/** A render mesh's handle (piola_body_attach_render_mesh), generational like piola_body_id.
 * Zero-initialised means "no render mesh"; a removed render mesh's id goes stale. */
typedef struct piola_render_mesh_id {
  int32_t index1;      /**< render mesh slot + 1; 0 is the null id */
  uint32_t generation; /**< bumped when the slot is freed */
} piola_render_mesh_id;

/** A collider's handle, generational like piola_body_id. Zero-initialised means "no collider";
 * a removed collider's id goes stale. */
typedef struct piola_collider_id {
  int32_t index1;      /**< collider slot + 1; 0 is the null id */
  uint32_t generation; /**< bumped when the slot is freed */
} piola_collider_id;

/** Shapes of colliders. Particles are projected out of them every iteration. Each shape is given
 * in the collider's own frame; the collider's pose (piola_world_set_collider_pose(), identity
 * when it is added) places that frame in the world. */
typedef enum piola_collider_type {
  PIOLA_COLLIDER_PLANE = 0,   /**< half-space dot(normal, x) < offset is solid */
  PIOLA_COLLIDER_SPHERE = 1,  /**< solid ball */
  PIOLA_COLLIDER_BOX = 2,     /**< solid oriented box */
  PIOLA_COLLIDER_CAPSULE = 3, /**< solid segment swept by a sphere */
  /** Open cone frustum, a thin wall (2e-4 of its height thick): a particle stays on the side of
   * the wall it started the substep on (inside or outside) where its motion in the substep
   * crosses the wall, within the funnel's height; past the openings' edges it is free (it may go
   * around an edge, but not through the wall just beside it). */
  PIOLA_COLLIDER_FUNNEL = 4,
  /** Triangle mesh (piola_mesh_shape). A closed mesh (every edge shared by two triangles of
   * opposite winding) that is oriented outward (counter-clockwise seen from outside, positive
   * volume) is solid: a particle inside is pushed out to the nearest point of its surface. An
   * open mesh is a two-sided wall: a particle is kept world_def.contact_thickness away from it,
   * on the side it started the substep on, however far it moved in the substep. */
  PIOLA_COLLIDER_MESH = 5,
  /** Signed distance field on a grid (piola_sdf_shape): solid where the trilinear distance is
   * negative, pushed out along its gradient. */
  PIOLA_COLLIDER_SDF = 6
} piola_collider_type;

typedef struct piola_plane_shape {
  float normal[3]; /**< unit outward normal (normalised on add) */
  float offset;    /**< m; the plane is dot(normal, x) = offset */
} piola_plane_shape;

typedef struct piola_sphere_shape {
  float center[3]; /**< m */
  float radius;    /**< m, > 0 */
} piola_sphere_shape;

typedef struct piola_box_shape {
  float center[3];       /**< m */
  float half_extents[3]; /**< m, each > 0 */
  float rotation[4];     /**< unit quaternion (x, y, z, w), box frame to world */
} piola_box_shape;

typedef struct piola_capsule_shape {
  float a[3], b[3]; /**< m; the segment's ends */
  float radius;     /**< m, > 0 */
} piola_capsule_shape;

typedef struct piola_funnel_shape {
  float base[3];     /**< m; centre of the bottom opening */
  float axis[3];     /**< unit direction from the bottom opening to the top (normalised) */
  float base_radius; /**< m, >= 0; radius of the bottom opening */
  float top_radius;  /**< m, >= 0; radius of the top opening */
  float height;      /**< m, > 0; distance between the openings along axis */
} piola_funnel_shape;

/** A triangle mesh collider's shape, in the collider's own frame. The arrays are copied when
 * the collider is added (the caller keeps ownership); the mesh's acceleration structure (a
 * bounding volume hierarchy) is built then, once, and a pose change moves it without copying
 * anything again. Triangles of zero area are left out. */
typedef struct piola_mesh_shape {
  const float *positions; /**< m; 3 per vertex (x, y, z) */
  int32_t vertex_count;   /**< vertices (>= 3) */
  /** 3 vertex indices per triangle, 0-based, counter-clockwise seen from outside (the normal
   * (x1 - x0) x (x2 - x0) points out of a closed mesh) */
  const int32_t *triangles;
  int32_t triangle_count; /**< triangles (>= 1) */
} piola_mesh_shape;

/** A signed distance field collider's shape, in the collider's own frame: distances (m,
 * negative inside the solid) at the points origin + cell (i, j, k) of a grid of
 * dims[0] x dims[1] x dims[2] points, x fastest (index i + dims[0] (j + dims[1] k)). Between
 * the points the distance is trilinear and its gradient is the contact normal; outside the grid
 * there is no solid. The array is copied when the collider is added. */
typedef struct piola_sdf_shape {
  /** m; dims[0] dims[1] dims[2] values, each finite, neighbours along an axis at most 2 cell
   * apart (a distance field changes by at most the cell) */
  const float *distances;
  int32_t dims[3]; /**< grid points along x, y, z (each >= 2) */
  float origin[3]; /**< m; the grid point (0, 0, 0) */
  float cell;      /**< m (> 0); spacing of the grid points */
} piola_sdf_shape;

/** A collider: a kinematic rigid shape that pushes particles out (it is never pushed back).
 * Make it with piola_default_collider_def(), then set `type` and that type's shape (the other
 * shapes are ignored); the shape's coordinates are in the collider's own frame, which is the
 * world frame until piola_world_set_collider_pose() moves it. Every shape has its own defaults:
 * plane y = 0 with normal +y; unit-diameter sphere and box (identity rotation) at the origin;
 * capsule from the origin to (0, 1, 0) of radius 0.25; funnel from radius 0.25 at the origin to
 * radius 1 at height 1 along +y. */
typedef struct piola_collider_def {
  piola_collider_type type;
  struct {
    piola_plane_shape plane;
    piola_sphere_shape sphere;
    piola_box_shape box;
    piola_capsule_shape capsule;
    piola_funnel_shape funnel;
    piola_mesh_shape mesh; /**< PIOLA_COLLIDER_MESH; default: no mesh (NULL arrays) */
    piola_sdf_shape sdf;   /**< PIOLA_COLLIDER_SDF; default: no grid (NULL distances) */
  } shape;
  /** Coulomb coefficients (dimensionless, >= 0) of position-based friction: a contact whose
   * tangential motion this iteration is below static_friction times the penetration depth
   * sticks; one whose motion exceeds (2 static_friction - dynamic_friction) times the depth
   * slides, its motion reduced by dynamic_friction times the depth; in between the reduction
   * falls linearly from the one to the other, so that friction is continuous in the motion. */
  float static_friction;   /**< default 0.5 */
  float dynamic_friction;  /**< default 0.4 */
  int32_t internal_cookie; /**< set by piola_default_collider_def(); do not change */
} piola_collider_def;

/** Figures about a world. Counts are exact; energies are evaluated at the current state in
 * double precision on the host, from the backend's current positions. */
typedef struct piola_stats {
  int32_t body_count;
  int32_t vertex_count;
  int32_t tet_count;
  int32_t triangle_count;    /**< cloth triangles (membrane constraints) of all cloth bodies */
  int32_t bend_count;        /**< cloth bending stencils (interior edges) of all cloth bodies */
  int32_t cloth_color_count; /**< graph colors of the cloth constraints (one pass each) */
  int32_t collider_count;
  int32_t color_count;    /**< graph colors of the tets (one solver pass each) */
  int32_t largest_color;  /**< tets in the largest color */
  int32_t smallest_color; /**< tets in the smallest color */
  int32_t jacobi_tets;    /**< tets solved in the Jacobi pass of each iteration */
  int64_t step_count;     /**< steps taken */
  double simulated_time;  /**< s */
  /** J, sum of V Psi(F) over tets, plus the cloth's membrane (A Psi) and bending energies, at
   * the current positions */
  double elastic_energy;
  double kinetic_energy; /**< J */
  int32_t inverted_tets; /**< tets with det F <= 0 at the current positions */
  /** Tets whose projection did work (moved vertices) in the last substep: the rest were
   * below the energy threshold or had only pinned vertices. */
  int32_t active_tets;
  /** Vertex-triangle contacts found by the narrow phase in the last substep (each projected
   * in every iteration; 0 without contacts). */
  int32_t contact_count;
  /** Vertex-triangle pairs found but not kept in the last substep because a vertex had more
   * than PIOLA_MAX_VERTEX_CONTACTS candidates (the nearest ones are kept); 0 normally. A
   * non-zero value is also sent to the logger as a warning, once for a run of consecutive
   * steps that drop pairs: a read that finds pairs dropped warns unless the previous read that
   * found some was of this step or the one before. */
  int32_t contact_overflow;
  /** Edge-edge contacts found by the narrow phase in the last substep (each projected in every
   * iteration; 0 without contacts or with edge_contacts off). Not counted in contact_count. */
  int32_t edge_contact_count;
  /** Edge-edge pairs found but not kept in the last substep because an edge had more than
   * PIOLA_MAX_EDGE_CONTACTS candidates (the nearest ones are kept); 0 normally. */
  int32_t edge_contact_overflow;
  int32_t surface_triangles; /**< boundary triangles of all bodies (the collision surface) */
  int32_t surface_vertices;  /**< vertices on those triangles */
  /** Edges of those triangles (each once; the edges of edge-edge contacts), counted from the
   * solver's arrays: 0 until the first step after bodies are added or removed builds them. */
  int32_t surface_edges;
  double last_step_ms; /**< host wall-clock time of the last piola_world_step(), ms */
  /** Device time per stage summed over the last step, ms (OpenCL with profile on; the CPU
   * reference measures host time per stage always); 0 where not measured. */
  double stage_ms[PIOLA_STAGE_COUNT];
  int64_t device_bytes;  /**< bytes allocated on the device (0 for the CPU reference) */
  piola_backend backend; /**< the backend that runs (never AUTO) */
  char device_name[128]; /**< "CPU reference" or the OpenCL device's name */
  /** OpenCL: tets one work-item projects at once in SIMD lanes where tets are solved per stage
   * (piola_world_def.simd_lanes as picked for the device; 1: one per work-item); 0 for the CPU
   * reference */
  int32_t simd_lanes;
  /** Colors of the world's vertex coloring (vertex block descent); 0 under the other schemes,
   * which color constraints, not vertices (color_count, cloth_color_count). */
  int32_t vertex_color_count;
  /** Solver passes per step that must run one after another, whatever the device: the chain a
   * GPU's step cannot shorten by running more work in parallel. Per substep: the prediction; with
   * contacts the broad and the narrow phase; per iteration every tet color, the Jacobi tail (one
   * pass, if any tets are in it), every cloth color, with contacts their measuring and projecting
   * passes, the attachments (if any) and the colliders (if any); with contacts the inverted-tet
   * pass at its most (4 sweeps of the tet colors and the tail), the colliders (if any) and the
   * attachments (if any) once more; the velocities; plasticity (if any). Times the substeps.
   * Under PIOLA_SCHEME_VBD the tet, tail and cloth colors of an iteration are its vertex colors
   * (vertex_color_count), the attachments are part of them (no pass of their own), there is
   * no inverted-tet pass, and with vbd_chebyshev_rho > 0 an iteration ends with its Chebyshev
   * pass (every iteration where there are at least 4; with 3, the first and the third; none with
   * fewer), and the last iteration (of at least 2) ends with the rigid fit of the bodies that
   * nothing touches (one pass). Under PIOLA_SCHEME_MULTIGRID an iteration's solve is one Newton step:
   * the assembly, per conjugate-gradient iteration (the last step's mean over its Newton steps,
   * from linear_iterations) its product, its two sums and a V-cycle (11 passes per level above
   * the coarsest, 1 for the coarsest), and the line search; the setup of each multigrid level
   * counts once per substep, and so does the collider pass before the first iteration. */
  int32_t dependent_passes;
  /** How far the last substep is from the implicit Euler step the solver approximates
   * (dimensionless, in [0, 1]): |r| / (|M a| + |F| + |grad E|) with the step's force residual
   * r = M (x - y) / h^2 + grad E(x) (y the substep's prediction, E the elastic energies and the
   * soft attachments' potentials, with the material damping's forces), M a the inertial forces, F =
   * M g + f the external ones, 2-norms over the vertices that no collider, body contact or hard
   * attachment holds (and not of PBD materials). 0 for the implicit step itself; evaluated in
   * double from the current state at each read. The mesh's finest modes dominate it
   * (docs/solvers.md). 0 before the first step and after positions, velocities or bodies change or
   * a state is loaded, until the next step. */
  double relative_residual;
  /** The same measure with r and the forces first summed over the cells of a coarse grid laid
   * over each body (PIOLA_RESIDUAL_CELLS cubes along its longest side): the part of the residual
   * a body's shape shows, where the unconverged solve makes it softer (or stiffer) than its
   * material. Above PIOLA_RESIDUAL_WARNING the logger warns (docs/solvers.md). */
  double coarse_residual;
  /** Under PIOLA_SCHEME_MULTIGRID: the last step's conjugate-gradient iterations, summed over
   * its Newton steps (one per iteration and substep), the levels of its multigrid hierarchy and
   * the largest residual a linear solve stopped at, relative to its right-hand side (goal
   * PIOLA_MULTIGRID_CG_TOLERANCE); 0 under the other schemes. */
  int32_t linear_iterations;
  int32_t multigrid_levels;
  double linear_residual;
} piola_stats;

/** Under PIOLA_SCHEME_MULTIGRID, conjugate gradients stop at this residual relative to the
 * right-hand side (or after PIOLA_MULTIGRID_CG_MAX iterations): an inexact Newton step. */
#define PIOLA_MULTIGRID_CG_TOLERANCE 1e-2
#define PIOLA_MULTIGRID_CG_MAX 200

/** Cells along a body's longest side of the grid of piola_stats.coarse_residual. */
#define PIOLA_RESIDUAL_CELLS 4
/** piola_stats.coarse_residual above which a step counts as unconverged: the logger warns once
 * per world when a body stays above it at every stats read for PIOLA_RESIDUAL_WARNING_STEPS steps
 * or more. */
#define PIOLA_RESIDUAL_WARNING 0.25
#define PIOLA_RESIDUAL_WARNING_STEPS 20

/** One OpenCL kernel's device time in the last step (piola_world_get_kernel_times). */
typedef struct piola_kernel_time {
  const char *name; /**< the kernel's name in the program (static storage) */
  int32_t launches; /**< launches in the last step */
  double ms;        /**< device time summed over those launches, ms */
} piola_kernel_time;

#ifdef __cplusplus
}
#endif

#endif /* PIOLA_TYPES_H */
