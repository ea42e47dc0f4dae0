/* Piola internals shared by the host modules: the world's data, logging, misuse checks and
 * the module entry points. Not installed; the public story is include/piola/.
 *
 * Data layout (docs/ARCHITECTURE.md has the picture):
 *  - vertices of all bodies in one range per body, in double: x (positions), p (predicted),
 *    v (velocities), w (inverse masses);
 *  - each body keeps its own rest data per tet (indices, Dm^-1, volume, color);
 *  - the solver's tet arrays are built from the bodies, sorted by color, so that a color is one
 *    contiguous range holding that color's tets of every body (one launch per color).
 */
#ifndef PIOLA_INTERNAL_H
#define PIOLA_INTERNAL_H

#include "piola/piola.h"

#include "piola_cloth.h"
#include "piola_collide.h"
#include "piola_contact.h"
#include "piola_tet.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PIOLA_COOKIE 0x5049 /* "PI" */
/* From this Poisson ratio on, one constraint per tet (the PBD form, PIOLA_SPLIT_NONE)
 * overshoots the volume mode (lambda/mu >= 4); piola_world_add_tet_body() warns. */
#define PIOLA_ONE_CONSTRAINT_MAX_NU 0.4f
/* Sweeps of the inverted-tet pass at most (piola_world_step): each backend repeats its sweep
 * over the colors until one finds no inverted tet to project, or this many times. One
 * projection lifts a sliver pressed deep through its base only part of the way. */
#define PIOLA_INVERTED_PASSES 4

/* Messages ----------------------------------------------------------------------------- */

#if defined(__GNUC__)
#define PIOLA_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PIOLA_PRINTF(f, a)
#endif

void piola_log(const piola_logger *logger, piola_log_level level, const char *format, ...)
    PIOLA_PRINTF(3, 4);

/* Returns PIOLA_ERROR_DEVICE_LOST from the calling public function when the world's device is
 * lost (piola_opencl_lost()): every call of a lost world but piola_world_destroy() says so. */
#define PIOLA_RETURN_IF_LOST(w)                                                                    \
  do {                                                                                             \
    if ((w) != NULL && piola_opencl_lost(w)) {                                                     \
      return PIOLA_ERROR_DEVICE_LOST;                                                              \
    }                                                                                              \
  } while (0)

/* Misuse of the API: calls the world's assert hook (or assert() in debug builds) and lets the
 * caller return its status. */
void piola_misuse(const piola_world *world, const char *condition, const char *file, int line);
#define PIOLA_MISUSE(world, cond) piola_misuse((world), (cond), __FILE__, __LINE__)

/* Grows *ptr (elements of `size` bytes) to at least `needed` elements; capacity doubles. On
 * failure the old block stays valid and false is returned. New elements are not initialised. */
bool piola_grow(void **ptr, size_t size, int32_t needed, int32_t *capacity);

/* Whether all three components of v are finite. */
bool piola_finite3(const float v[3]);

/* Per vertex v of [first_vertex, first_vertex + vertex_count), the triangles it is a corner of
 * in ascending order (CSR: incident[start[v - first_vertex] .. start[v - first_vertex + 1]),
 * triangle indices from 0), of the triangle_count triangles of `corners` (3 vertex indices
 * each). False when out of memory, with *start and *incident freed and NULL. */
bool piola_vertex_triangles(const int32_t *corners, int32_t triangle_count, int32_t first_vertex,
                            int32_t vertex_count, int32_t **start, int32_t **incident);

/* Materials ---------------------------------------------------------------------------- */

/* Checks a material; writes the reason to `reason` (size n) when it is invalid. */
piola_status piola_material_check(const piola_material *m, char *reason, size_t n);

/* Checks a cloth material, as piola_material_check(). */
piola_status piola_cloth_material_check(const piola_cloth_material *m, char *reason, size_t n);

/* The solver constants of a valid material (double precision). */
piola_tet_material piola_material_constants(const piola_material *m);

/* Colliders ---------------------------------------------------------------------------- */

/* Checks a collider def and packs it for the solver (normals and axes normalised), at the
 * identity pose at rest. */
piola_status piola_collider_pack(const piola_collider_def *def, piola_collider_data *out,
                                 char *reason, size_t n);

/* A collider's handle slot and its pose in double (the pose at the start of the next step). */
typedef struct piola_collider_slot {
  uint32_t generation;
  int32_t dense;              /* index into world->colliders; -1 while the slot is free */
  double position[3];         /* m */
  double rotation[4];         /* unit quaternion (x, y, z, w) */
  double velocity[3];         /* m/s */
  double angular_velocity[3]; /* rad/s */
} piola_collider_slot;

/* Writes a slot's pose into the solver's record (as floats; `posed` unless it is the identity
 * pose at rest). */
void piola_collider_pose_pack(const piola_collider_slot *slot, piola_collider_data *c);

/* Coloring ----------------------------------------------------------------------------- */

/* Greedy graph coloring of tets (no two tets of a color share a vertex) followed by a
 * balancing pass; deterministic. Writes one color per tet and the number of colors. With
 * max_colors > 0 at most that many colors are used; tets left over get color -1.
 * The "tets" may be any constraints of up to 4 vertices: an index of -1 is an unused slot
 * (cloth triangles are colored together with bending stencils as (a, b, c, -1)). */
piola_status piola_color_tets(const int32_t *tets, int32_t tet_count, int32_t vertex_count,
                              int32_t max_colors, int32_t *colors, int32_t *color_count);

/* Whether `colors` is a valid coloring of `tets` (tets of color -1 are not checked). */
bool piola_coloring_is_valid(const int32_t *tets, int32_t tet_count, int32_t vertex_count,
                             const int32_t *colors);

/* World --------------------------------------------------------------------------------- */

/* The order of a body's tets within each of its colors. It does not change results (tets of a
 * color share no vertex; the Jacobi tets, whose vertices sum their corrections in the tail's
 * order, keep the mesh's order), only speed: it decides which tets a work-item projects together in
 * SIMD lanes (CPU devices) or a warp in its lanes (GPUs), and how the corners' loads of
 * neighbouring work-items meet the caches. Bodies of up to this many tets, whose vertices stay in
 * a core's cache or a work-group's local memory while they are solved, take their tets in Morton
 * order of the rest centroids: the tets that need the SVD path (a region under compression)
 * then share packets instead of sending most packets down that path for one lane (PoCL, 2-core
 * Intel Xeon, 100 squashed Armadillos, whose mesh order is spatially random: 6% less time per
 * step). Larger bodies stream their vertices from memory and keep the mesh's order, which a
 * generator's numbering keeps coherent with the vertices' (the 374400-tet box took 10% longer
 * in Morton order). */
#define PIOLA_SPATIAL_ORDER_MAX_TETS 16384

typedef struct piola_body {
  bool alive;
  uint32_t generation;
  int32_t vertex_offset; /* first vertex in the world's vertex arrays */
  int32_t vertex_count;
  int32_t tet_count;
  int32_t material; /* index into world->materials */
  int32_t color_count;
  int32_t *tets;        /* 4 per tet, body-local vertex indices, positive orientation */
  int32_t *colors;      /* color per tet */
  int32_t *color_start; /* color_count + 1 offsets into by_color */
  int32_t *by_color;    /* local tet indices sorted by color (within a color:
                           PIOLA_SPATIAL_ORDER_MAX_TETS) */
  double *dm_inv;       /* 9 per tet, rest Dm^-1 (row-major) */
  double *volume;       /* per tet, rest volume, m^3 */
  /* Plastic state per tet (NULL unless the material is plastic): eps_p (6 per tet) and the
   * effective M = Dm^-1 F_p^-1 (9 per tet). Valid here while world->tets_dirty is set or
   * after piola_world_sync_plastic(); the solver arrays hold the live copy. */
  double *plastic_strain;
  double *m_eff;
  /* Collision surface (built when the body is added): boundary triangles, 3 body-local vertex
   * indices each, outward; the body-local indices of the vertices on them, ascending. */
  int32_t surface_count;
  int32_t *surface;
  int32_t surface_vertex_count;
  int32_t *surface_vertices;
  double *surface_rest;  /* 3 per surface vertex: its rest position (as added), m */
  double *surface_reach; /* per surface vertex: its longest rest tet edge, m */
  /* Its surface vertices' near windows (piola_solver_contacts.vertex_near), 2 each in the
   * solver's spatial order, the first triangles counted from the body's first; computed by
   * piola_contacts_build the first time (NULL before), as they depend on the rest shape only */
  int32_t *near_first;
  uint64_t *near_mask;
  uint32_t collision_group, collision_mask;
  bool self_collision;
  /* Cloth (cloth == true; tet_count is then 0 and the tet arrays are empty): the membrane
   * triangles and the bending stencils of the interior edges, body-local, colored together:
   * item i < tri_count is triangle i, item tri_count + j bending stencil j. */
  bool cloth;
  int32_t cloth_material; /* index into world->cloth_materials */
  int32_t tri_count;
  int32_t *tris;      /* 3 per triangle, as in the mesh */
  double *tri_dm_inv; /* 4 per triangle: rest Dm^-1 (row-major, 1/m) in the weft/warp frame */
  double *tri_area;   /* per triangle, rest area, m^2 */
  int32_t bend_count; /* 0 when the material's bending stiffness is 0 */
  int32_t *bends;     /* 4 per stencil: edge x0 x1, opposite vertices x2, x3 */
  double *bend_rest;  /* 6 per stencil: K (4), q (1/m^2), v_bar (m) */
  int32_t cloth_color_count;
  int32_t *cloth_color_start; /* cloth_color_count + 1 offsets into cloth_by_color */
  int32_t *cloth_by_color;    /* items sorted by color (item order within a color) */
} piola_body;

typedef struct piola_cloth_material_entry {
  piola_cloth_material def;
  piola_cloth_tri_material tri;
  piola_cloth_bend_material bend; /* unused when def.bending_stiffness == 0 */
} piola_cloth_material_entry;

/* The cloth constraint kinds of the solver. Each kind has its own arrays, sorted by color;
 * colors are shared by the kinds (one coloring per cloth body over its triangles and
 * stencils), so color c is the range kind_first[kind][c] .. + kind_size[kind][c] of every
 * kind, and no two items of one color, of any kind, share a vertex. */
typedef enum piola_cloth_kind {
  PIOLA_KIND_TRIANGLE = 0, /* membrane: piola_cloth_tri_correction */
  PIOLA_KIND_BEND = 1,     /* bending stencil: piola_cloth_bend_correction */
  PIOLA_CLOTH_KIND_COUNT
} piola_cloth_kind;

typedef struct piola_solver_cloth {
  int32_t tri_count;
  int32_t *tri_vertices; /* 4 per triangle: 3 world vertex indices, cloth material index */
  double *tri_dm_inv;    /* 4 per triangle */
  double *tri_area;
  double *tri_lambda;
  int32_t bend_count;
  int32_t *bend_vertices; /* 4 per stencil, world vertex indices */
  double *bend_rest;      /* 6 per stencil (as piola_body.bend_rest) */
  double *bend_lambda;
  int32_t *bend_material;
  int32_t color_count;
  int32_t *kind_first[PIOLA_CLOTH_KIND_COUNT]; /* color_count each */
  int32_t *kind_size[PIOLA_CLOTH_KIND_COUNT];
} piola_solver_cloth;

typedef struct piola_material_entry {
  piola_material def;
  piola_tet_material constants;
  bool plastic;
} piola_material_entry;

/* The solver's tets, sorted by color (then the Jacobi tail), with what each schedule needs to
 * walk them; built from the live bodies by piola_world_build_tets and replaced as a whole. */
typedef struct piola_solver_tets {
  int32_t tet_count;
  int32_t *tet_vertices; /* 4 per tet, world vertex indices */
  double *tet_m;         /* 9 per tet: Dm^-1, or M = Dm^-1 F_p^-1 for plastic tets */
  double *tet_volume;
  double *tet_lambda; /* 2 per tet: the multipliers of the (split) constraints */
  int32_t *tet_material;
  int32_t *tet_body;  /* body slot */
  int32_t *tet_local; /* index of the tet within its body */
  int32_t color_count;
  int32_t *color_first, *color_size;
  /* The Jacobi pass: tets [jacobi_first, jacobi_first + jacobi_count) after the colors. Their
   * corrections go to jacobi_delta (4 per tet and corner: dx, dy, dz, 1 if it did work) and
   * are gathered per vertex through a CSR list: vertex jacobi_vertices[i] sums the entries
   * jacobi_incidence[jacobi_start[i] .. jacobi_start[i + 1]) (indices 4 * tail tet + corner). */
  int32_t jacobi_first, jacobi_count;
  int32_t jacobi_vertex_count;
  int32_t *jacobi_vertices, *jacobi_start, *jacobi_incidence;
  double *jacobi_delta;
  /* CPU reference, 4 per world vertex: the support of the vertex in the tet projections
   * (piola_tet_support): the outward unit normal of the collider that pushed it out in this
   * substep's last COLLIDE stage and the motion the projections held back since (m); a held
   * value below zero marks a free vertex. PREDICT frees every vertex. */
  double *support;
  /* Per tet body of the solver arrays (the live bodies in slot order, cloth bodies left out:
   * they have no tets, and the per-stage kernels move their vertices), for the per-body
   * schedule: body_vertex (first, count) of its vertices; body_color (first, count) of its tets
   * in each of the color_count colors; body_jacobi (first, count) of its tail tets and (first,
   * count) of its entries in jacobi_vertices. max_body_tets, max_body_vertices: the largest
   * tet body's counts. */
  int32_t body_count, max_body_tets, max_body_vertices;
  int32_t *body_vertex, *body_color, *body_jacobi;
  /* Plastic tets (in solver order): their solver index, rest Dm^-1 and plastic strain. */
  int32_t plastic_count;
  int32_t *plastic_tet;
  double *plastic_dm_rest; /* 9 per plastic tet */
  double *plastic_strain;  /* 6 per plastic tet */
} piola_solver_tets;

/* The collision surfaces of the live bodies, built with the solver's tet arrays (contact.c),
 * and the CPU reference's per-substep contact state. Surface vertices ("sv") and triangles are
 * numbered body by body, each body's in Morton order of the rest shape (piola_spatial_order);
 * triangles refer to surface vertices. */
typedef struct piola_solver_contacts {
  int32_t vertex_count; /* surface vertices */
  int32_t *vertex;      /* world vertex index of each */
  int32_t *vertex_body; /* dense body index of each */
  double *vertex_rest;  /* 3 each: rest position */
  double *vertex_reach; /* each: longest rest tet edge at the vertex (self-contact rule) */
  /* 2 each: the first triangles of the vertex's two near windows, PIOLA_NEAR_WINDOW triangles of
   * its own body each, consecutive in this order; vertex_near_mask, 2 each: bit k of a window's
   * mask marks its triangle first + k as too near the vertex in the rest shape to touch it
   * (near_windows, piola_contact_near) */
  int32_t *vertex_near;
  uint64_t *vertex_near_mask;
  int32_t triangle_count; /* surface triangles */
  int32_t *triangle;      /* 3 surface-vertex indices each, outward */
  int32_t *triangle_body; /* dense body index of each */
  /* the grid's clusters: cluster i holds triangles cluster_first[i] .. cluster_first[i + 1] - 1
   * (consecutive, of one body, at most PIOLA_CLUSTER_TRIANGLES; cluster_count + 1 entries) */
  int32_t cluster_count;
  int32_t *cluster_first;
  int32_t body_count;
  uint32_t *body_filter; /* 4 per dense body: group, mask, self-collision, two-sided (0/1) */
  int32_t bucket_mask;   /* hash table of bucket_mask + 1 buckets (a power of two) */
  /* Per substep, CPU reference: the grid (cell size, triangle boxes, buckets), the contacts
   * (per surface vertex: count and triangles, PIOLA_CONTACTS_PER_VERTEX slots), each slot's
   * four corrections (slot * 4 + corner: the vertex, then the triangle's corners; the
   * correction in x, y, z and its length), and per surface vertex the
   * list of (slot * 4 + corner) entries where it is a triangle's corner, ascending. */
  double cell;
  double margin;        /* the grid's margin (piola_grid_margin) */
  double *triangle_box; /* 6 per triangle: lo, hi */
  double *cluster_box;  /* 6 per cluster: the union of its triangles' boxes */
  /* bucket b holds bucket_clusters[bucket_start[b] .. bucket_start[b + 1]): the clusters
   * entered into the cells that hash to b (at most PIOLA_CELLS_PER_CLUSTER entries each) */
  int32_t *bucket_start, *bucket_clusters;
  int32_t *bucket_cursor, *vertex_cursor; /* scratch of the counting sorts */
  int32_t *contact_count, *contact_triangle;
  int32_t *previous_count, *previous_triangle; /* the previous substep's contacts */
  /* Per surface vertex: into how many parts its mass is split among its contacts (>= 1; mass
   * splitting, piola_contact_split): written by each iteration's measuring pass, read by its
   * projecting pass */
  double *mass_split;
  double *delta;
  int32_t *corner_start, *corner_entry;
  /* CPU reference, per world vertex: whether a tet at it is inverted at the start of the
   * substep (the narrow phase's marks, piola_contact_self_untangled) */
  unsigned char *turned;
  int32_t total, overflow; /* kept and dropped contacts of the last substep */
} piola_solver_contacts;

typedef struct piola_opencl piola_opencl; /* opencl_backend.c */
typedef struct piola_pool piola_pool;     /* thread_pool.c */

/* Attachments (attachment.c): the slots behind the ids, and the solver's arrays built from the
 * live ones, sorted by world vertex then slot; vertex i of `vertex` has the entries
 * start[i] .. start[i + 1]. */
typedef struct piola_attachment_slot {
  bool alive;
  uint32_t generation;
  piola_body_id body;
  int32_t vertex; /* body-local */
  double target[3];
  double compliance; /* m/N */
} piola_attachment_slot;

#define PIOLA_ATTACH_BUFFERS 4
typedef struct piola_solver_attachments {
  int32_t count;        /* entries */
  int32_t vertex_count; /* distinct vertices */
  int32_t *start, *vertex;
  double *target;                     /* 4 per entry: target xyz (m), compliance (m/N) */
  double *lambda;                     /* per entry */
  void *device[PIOLA_ATTACH_BUFFERS]; /* the OpenCL backend's buffers */
  int32_t device_capacity[2];         /* entries, vertices the buffers hold */
} piola_solver_attachments;

/* A render mesh (render_mesh.c): detail vertices embedded over a body's collision surface
 * (kernels/piola_render.h). */
#define PIOLA_RENDER_BUFFERS 9
typedef struct piola_render_mesh {
  bool alive;
  uint32_t generation;
  piola_body_id body;
  int32_t count;       /* detail vertices */
  int32_t *triangle;   /* per detail vertex: the index of its triangle in the body's surface */
  double *coordinates; /* 4 per detail vertex: barycentric u, v, w and the offset d (m) */
  int32_t
      *triangle_sv; /* 3 per surface triangle of the body: its corners' surface-vertex indices */
  int32_t *incident_start, *incident; /* per surface vertex of the body: its triangles, ascending */
  void *device[PIOLA_RENDER_BUFFERS]; /* the OpenCL backend's buffers; NULL on the CPU reference */
} piola_render_mesh;

struct piola_world {
  piola_world_def def;
  piola_backend backend; /* CPU_REFERENCE or OPENCL, never AUTO */

  piola_body *bodies;
  int32_t body_capacity;
  int32_t body_slots; /* slots in use or freed; bodies[0..body_slots) */
  int32_t body_count;

  piola_material_entry *materials;
  int32_t material_count, material_capacity;
  piola_cloth_material_entry *cloth_materials;
  int32_t cloth_material_count, cloth_material_capacity;

  /* Colliders: the solver's records, dense in the order they were added (collider_count of
   * them), the slot behind each record, and the slots the ids name. */
  piola_collider_data *colliders;
  int32_t *collider_slot;
  int32_t collider_count, collider_capacity;
  piola_collider_slot *collider_slots;
  int32_t collider_slot_count, collider_slot_capacity;
  /* Time from the start of the step to the end of the current substep (s): where the colliders
   * stand for the COLLIDE stage. */
  double collider_time;

  /* Vertices (double): x, p, v are 3 per vertex. */
  int32_t vertex_count, vertex_capacity;
  double *x, *p, *v, *w;
  double *f; /* 3 per vertex, external force (N); NULL until a body sets forces */

  /* The solver's tet arrays, rebuilt from the bodies when tets_dirty. */
  bool tets_dirty;
  piola_solver_tets solver;
  piola_solver_cloth cloth; /* rebuilt with the tet arrays */
  piola_solver_contacts contacts;

  int64_t step_count;
  /* The step (step_count) of the last stats read that found contact pairs dropped, 0 if none:
   * pairs dropped in a run of consecutive steps are logged once (piola_world_get_stats). */
  int64_t overflow_logged_step;
  double simulated_time;
  double last_step_ms;
  double stage_ms[PIOLA_STAGE_COUNT];

  piola_attachment_slot *attachment_slots;
  int32_t attachment_slot_count, attachment_slot_capacity;
  bool attachments_dirty; /* rebuild w->attach before the next step */
  piola_solver_attachments attach;
  int32_t iteration; /* the iteration of the substep running (0 resets the attachments) */
  int32_t substep;   /* the substep of the step running (0 marks turned tets for contacts) */
  /* SOLVE_TETS runs as the inverted-tet pass: only tets with det F <= 0 are projected (the
   * cloth kinds not at all), in up to PIOLA_INVERTED_PASSES sweeps; see piola_world_step */
  bool tets_inverted_only;

  piola_render_mesh *render_meshes;
  int32_t render_mesh_slots, render_mesh_capacity;

  piola_opencl *cl; /* NULL for the CPU reference */
  piola_pool *pool; /* CPU reference: the threads beside the caller's (def.cpu_threads); or NULL */
};

/* Builds the solver's color-sorted tet arrays from the bodies when tets_dirty is set. */
piola_status piola_world_build_tets(piola_world *w);

/* Copies the live plastic state of the solver arrays back into the bodies. */
void piola_world_sync_plastic(piola_world *w);

/* The factor velocities keep over a substep of h seconds: max(0, 1 - damping h). */
double piola_world_damping_factor(const piola_world *w, double h);

/* The body behind an id, or NULL (with a misuse report) when the id is invalid. */
piola_body *piola_world_body(const piola_world *w, piola_body_id id);

/* Wall-clock milliseconds from a monotonic clock. */
double piola_now_ms(void);

/* Contacts (contact.c) -------------------------------------------------------------------- */

/* An item (a point, a tet, a triangle) with its Morton key. */
typedef struct piola_keyed_index {
  uint64_t key;
  int32_t index;
} piola_keyed_index;

/* Orders n points (3 coordinates each) along the Morton curve (Z-order) of their bounding cube,
 * ties by index: order[i].index is the i-th. */
void piola_spatial_order(const double *points, int32_t n, piola_keyed_index *order);

/* The centroids of n elements of `corners` vertices each (element e: elements[corners * e ..
 * corners * e + corners), each vertex v taken as map[v] where map is not NULL) of points (3
 * coordinates per vertex), into centroid (3 per element): the keys of piola_spatial_order for
 * tets and triangles. */
void piola_centroids(const double *points, const int32_t *elements, int corners, const int32_t *map,
                     int32_t n, double *centroid);

/* Builds w->contacts from the live bodies (called with the tet arrays): their surface vertices
 * and triangles, body after body, each body's in Morton order of the rest shape. */
piola_status piola_contacts_build(piola_world *w);
void piola_contacts_free(piola_solver_contacts *c);
/* Whether contacts run: on in the def and some surface to collide. */
bool piola_contacts_active(const piola_world *w);
/* Whether some body collides with itself (its self-collision on). */
bool piola_contacts_any_self(const piola_solver_contacts *c);
/* The CPU reference's contact stages (host doubles). */
void piola_cpu_broad_phase(piola_world *w);
void piola_cpu_narrow_phase(piola_world *w);
void piola_cpu_contact(piola_world *w);

/* Threads of the CPU reference (thread_pool.c) ------------------------------------------- */

/* The most threads def.cpu_threads may ask for. */
#define PIOLA_MAX_CPU_THREADS 256

/* Items [begin, end) of a piola_pool_for() call, as chunk `chunk` of it. */
typedef void piola_range_fn(void *ctx, int32_t chunk, int32_t begin, int32_t end);

/* The online cores of the machine (at least 1, at most PIOLA_MAX_CPU_THREADS). */
int32_t piola_online_cores(void);
/* A pool of `threads` threads, the caller's included (threads - 1 workers); *out is NULL for
 * threads <= 1. Out of memory or threads: PIOLA_ERROR_OUT_OF_MEMORY, nothing made. */
piola_status piola_pool_create(int32_t threads, piola_pool **out);
void piola_pool_destroy(piola_pool *pool);
/* Threads of a pool (1 for NULL): the most chunks a piola_pool_for() call makes. */
int32_t piola_pool_threads(const piola_pool *pool);
/* Runs fn over [0, count) in contiguous chunks of at least `grain` items, at most one per
 * thread, the caller running the first; returns when all are done. With NULL or fewer than two
 * chunks' worth of items, one call fn(ctx, 0, 0, count) on the caller. The items must not
 * write what another item of the call reads or writes. */
void piola_pool_for(piola_pool *pool, int32_t count, int32_t grain, piola_range_fn *fn, void *ctx);

/* CPU reference ------------------------------------------------------------------------- */

/* Runs one stage of the step on the host arrays (double precision). h is the substep (s). */
void piola_cpu_stage(piola_world *w, piola_stage stage, double h);

/* Elastic energy (J) over the solver's tets at `positions` (3 per vertex) with the solver's
 * per-tet matrices `tet_m`; counts tets with det F <= 0 into *inverted. */
double piola_tets_energy(const piola_world *w, const double *positions, const double *tet_m,
                         int32_t *inverted);

/* The same from the bodies' own rest data, before the solver arrays exist. */
double piola_bodies_energy(const piola_world *w, const double *positions, int32_t *inverted);

/* Membrane and bending energy (J) of the cloth bodies at `positions`, from their rest data. */
double piola_cloth_energy(const piola_world *w, const double *positions);

/* OpenCL backend (opencl_backend.c; built without OpenCL, the stubs of opencl_stub.c) ------
 * The device holds the live vertex and tet state once a step has uploaded it ("live"); the
 * host arrays are then brought up to date only when asked. */

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

/* piola_world_create() with a fault record attached to an OpenCL world (faults may be NULL);
 * the record must outlive the world. */
piola_status piola_world_create_with_faults(const piola_world_def *def, piola_faults *faults,
                                            piola_world **out);

/* Picks the device, creates the context and queue, builds the program; `faults` (NULL in
 * normal use) is the test hook above. */
piola_status piola_opencl_create(piola_world *w, piola_faults *faults);
/* Whether the device was lost (a call answered PIOLA_ERROR_DEVICE_LOST, or a step failed
 * with the device state half advanced): every later call of the world fails with
 * PIOLA_ERROR_DEVICE_LOST. */
bool piola_opencl_lost(const piola_world *w);
/* A step failed after begin_step: drops the step's events and, when the device state was
 * uploaded from the host by this step (`from_host`), drops the device state (the host holds the
 * state before the step); otherwise marks the device lost. Returns the status to report. */
piola_status piola_opencl_abort_step(piola_world *w, bool from_host, piola_status s);
void piola_opencl_destroy(piola_world *w);
/* Uploads what changed (everything after a topology change) before a step's stages. */
piola_status piola_opencl_begin_step(piola_world *w);
/* Enqueues one stage. */
piola_status piola_opencl_stage(piola_world *w, piola_stage stage, double h);
/* Whether the tet bodies' substeps run as one launch, one work-group per body (def.schedule).
 * With cloth in the world the per-body launches solve the tets and the cloth's colors run per
 * stage after them (the cloth kinds have per-stage kernels only). */
bool piola_opencl_per_body(const piola_world *w);
/* Which part of a substep one per-body launch runs: all of it (no contacts, attachments or
 * cloth), or, around the other stages: predict and reset, or one iteration of the tets (then
 * the cloth's colors, per stage), or the inverted-tet pass. */
typedef enum piola_bodies_part {
  PIOLA_BODIES_WHOLE_SUBSTEP, /* predict, reset, iterations of tets and colliders, velocities */
  PIOLA_BODIES_PREDICT,       /* predict and reset the multipliers (tet bodies only) */
  PIOLA_BODIES_ITERATION,     /* one iteration over the tets (colors, Jacobi tail), then cloth */
  PIOLA_BODIES_INVERTED       /* the inverted-tet pass (PIOLA_BODIES_ITERATION, inverted only) */
} piola_bodies_part;
/* One substep, or a part of it, of every body in one launch, a work-group per body. */
piola_status piola_opencl_substep_bodies(piola_world *w, double h, piola_bodies_part part);
/* Flushes the queue (and collects stage times when profiling). */
piola_status piola_opencl_end_step(piola_world *w);
/* The binary of the world's main OpenCL program, or with `packets` of its packet program, as
 * the device's compiler returned it (PTX text on NVIDIA GPUs, a device ELF or bitcode
 * elsewhere), in *binary (malloc'ed; the caller frees it), and the options it was built with
 * (owned by the world). For bench/program_dump.c, which feeds a profile. */
piola_status piola_opencl_program_binary(const piola_world *w, bool packets, unsigned char **binary,
                                         size_t *size, const char **options);
piola_status piola_opencl_finish(piola_world *w);
/* Whether the device holds the live state. */
bool piola_opencl_live(const piola_world *w);
/* Reads all device state into the host arrays (x, v, lambdas, plastic state). */
piola_status piola_opencl_pull(piola_world *w);
/* The topology changed: the device state is dropped (after a pull) and re-uploaded. */
void piola_opencl_invalidate(piola_world *w);
/* Collider records [first, end) changed (added, moved or shifted by a removal): they are
 * written to the device before the next step. */
void piola_opencl_colliders_changed(piola_world *w, int32_t first, int32_t end);
/* Reads vertices [first, first + count) into the host arrays x, v. */
piola_status piola_opencl_pull_range(piola_world *w, int32_t first, int32_t count);
/* Writes the host forces of vertices [first, first + count) to the device. */
piola_status piola_opencl_push_forces(piola_world *w, int32_t first, int32_t count);
/* Writes the host x and w (positions) and/or v (velocities) of vertices [first, first + count)
 * to the device, each as one write: on failure the device is as it was, or lost. */
piola_status piola_opencl_push_range(piola_world *w, int32_t first, int32_t count, bool positions,
                                     bool velocities);
/* Reads positions and/or velocities of a vertex range as 3 floats each (NULL to skip). */
piola_status piola_opencl_read_range(const piola_world *w, int32_t first, int32_t count, float *xyz,
                                     float *vel);
/* Reads the whole state for statistics: x, v (3 per vertex), tet M (9 per tet), lambdas. */
piola_status piola_opencl_read_all(const piola_world *w, double *x, double *v, double *tet_m,
                                   double *lambda);
int64_t piola_opencl_device_bytes(const piola_world *w);
/* The contacts kept and dropped in the last substep (the narrow phase's counters). */
piola_status piola_opencl_contact_counters(const piola_world *w, int32_t out[2]);
const char *piola_opencl_device_name(const piola_world *w);
int32_t piola_opencl_simd_lanes(const piola_world *w);
void piola_opencl_stage_ms(const piola_world *w, double out[PIOLA_STAGE_COUNT]);
/* The kernels' device times of the last step (piola_world_get_kernel_times): writes
 * min(capacity, count) entries and returns count, the number of kernels (0 without OpenCL). */
int32_t piola_opencl_kernel_times(const piola_world *w, piola_kernel_time *out, int32_t capacity);

/* Render meshes: uploads a render mesh's arrays of body b (buffers in rm->device), computes
 * its positions and normals from the device's positions (3 floats each; either may be NULL),
 * and releases its buffers. */
piola_status piola_opencl_render_upload(piola_world *w, piola_render_mesh *rm, const piola_body *b);
piola_status piola_opencl_render_compute(const piola_world *w, const piola_render_mesh *rm,
                                         const piola_body *b, float *positions, float *normals);
void piola_opencl_render_release(const piola_world *w, piola_render_mesh *rm);
/* Attachments: writes w->attach to the device (buffers in w->attach.device), releases them. */
piola_status piola_opencl_attachments_upload(piola_world *w);
void piola_opencl_attachments_release(const piola_world *w, piola_solver_attachments *a);
/* Attachments (attachment.c): rebuilds w->attach from the slots (and uploads it on OpenCL);
 * the CPU reference's stage; frees everything. */
piola_status piola_attachments_build(piola_world *w);
void piola_cpu_attachments(piola_world *w, double h);
void piola_attachments_free(piola_world *w);
/* Frees the world's render meshes (render_mesh.c). */
void piola_render_meshes_free(piola_world *w);

/* For tests: builds `source` for a device and reports the status (build log to the logger). */
piola_status piola_opencl_try_build(const char *device_spec, const char *source,
                                    const piola_logger *logger);
/* For tests: runs the piola_layout_probe kernel; out[] as written by that kernel. */
piola_status piola_opencl_layout_probe(const char *device_spec, int32_t out[16],
                                       const piola_logger *logger);

#endif /* PIOLA_INTERNAL_H */
