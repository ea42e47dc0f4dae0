/* Helpers shared by the world-level tests (test_world.c, test_physics.c, test_colliders.c):
 * worlds on the CPU reference, bodies, state hashes (FNV-1a) and snapshots that tell whether a
 * call left a world unchanged, and the geometric measures the physics tests assert on (signed
 * volume, edge lengths, momenta). Everything works on the world's double-precision host
 * arrays (the CPU reference keeps them current) or on the public API's float copies. */
#ifndef PIOLA_WORLD_HELPERS_H
#define PIOLA_WORLD_HELPERS_H

#include "piola_internal.h"
#include "piola_test.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WT_PI 3.14159265358979323846

/* A regular tet with unit edges, positively oriented as (0, 1, 2, 3): face (0, 1, 2) lies in
 * the plane y = 0 and vertex 3 above it at y = 0.8165 m. */
extern const float wt_unit_tet[12];

/* A CPU-reference world (piola_test_world_def) with the given step settings; gravity on or
 * off. NULL (with a failed check) when creation fails. */
piola_world *wt_world(piola_test *t, piola_test_log *log, int *misuse, float dt, int32_t substeps,
                      int32_t iterations, float damping, bool gravity);

/* piola_default_material() with the given model, solver form and Young's modulus (Pa). */
piola_material wt_material(piola_model model, piola_solver solver, float youngs_modulus);

/* Everything a failed call must leave alone: counts, settings and a hash of the host state
 * (x, p, v, w, the solver's tet arrays when built, the collider records and slots), plus a hash of
 * what the public API reads back (positions, velocities, inverse masses) for the given bodies. */
typedef struct wt_snapshot {
  piola_stats stats; /* counts only are compared */
  int32_t material_count;
  int32_t cloth_material_count;
  bool tets_dirty;
  piola_world_def def;
  uint64_t host_hash;
  uint64_t api_hash;
} wt_snapshot;

wt_snapshot wt_snapshot_take(const piola_world *w, const piola_body_id *bodies, int32_t count);
bool wt_snapshot_equal(const wt_snapshot *a, const wt_snapshot *b);

/* FNV-1a over the float positions (API read-back) of the given bodies, in order. */
uint64_t wt_positions_hash(const piola_world *w, const piola_body_id *bodies, int32_t count);

/* FNV-1a over each body's float positions, then its velocities (API read-back), the bodies in
 * order; 0 when a body's state cannot be read. */
uint64_t wt_state_hash(const piola_world *w, const piola_body_id *bodies, int32_t count);

/* The state hash (wt_state_hash) of a soft box (5 x 3 x 3 cells, 0.5 x 0.3 x 0.3 m, E = 0.1 MPa)
 * squashed to 30% of its height 0.3 m above the ground and stepped 60 times on the CPU reference
 * under `scheme` with `threads` threads: the repeatability tests' scene. 0 on failure. */
uint64_t wt_squashed_box_hash(piola_iteration_scheme scheme, int32_t threads);

/* A box mesh (piola_mesh_make_box) of cx x cy x cz cells spanning [0, s] on each axis, or an
 * empty mesh on failure. */
piola_tet_mesh wt_box(int32_t cx, int32_t cy, int32_t cz, float sx, float sy, float sz);

/* The box of friction_on_inclined_plane (2 x 2 x 2 cells, 0.2 m, E = 1 MPa, the default material
 * otherwise) resting on the plane through the origin inclined by 20 degrees about z (normal
 * (-sin 20, cos 20, 0)), friction mu, in a new world made from def, into *out; the box's id into
 * *body and the plane's into *plane (either may be NULL). On failure *out is NULL. */
piola_status wt_incline_make(const piola_world_def *def, float mu, piola_world **out,
                             piola_body_id *body, piola_collider_id *plane);

/* The slope of wt_incline_make: the analytic plane, a closed triangle mesh (a slab 4 x 0.5 x 4 m,
 * 12 triangles) whose top face lies in that plane, or the slab's distance field (5 cm cells). */
typedef enum wt_slope { WT_SLOPE_PLANE, WT_SLOPE_MESH, WT_SLOPE_SDF } wt_slope;

/* wt_incline_make on the given slope; *collider its id. */
piola_status wt_incline_make_on(const piola_world_def *def, float mu, wt_slope slope,
                                piola_world **out, piola_body_id *body,
                                piola_collider_id *collider);

/* The scene of wt_incline_make: how far the box's centre moves in 200 steps (m; NaN where a call
 * fails), and into *lowest (unless NULL) the lowest signed distance of any of its vertices from
 * the plane after any step (m). */
double wt_incline_slide(const piola_world_def *def, float mu, double *lowest);
/* wt_incline_slide on the given slope. */
double wt_incline_slide_on(const piola_world_def *def, float mu, wt_slope slope, double *lowest);

/* A funnel collider with its base at (0, 0, 0) and axis +y, radii (m) at the bottom and the top,
 * height (m); the default friction. */
piola_collider_def wt_funnel_def(float base_radius, float top_radius, float height);

/* Positions (API, float) of a body in a new array (free() it); NULL on failure. */
float *wt_get_positions(const piola_world *w, piola_body_id body);

/* Sum of the signed volumes (m^3) of the mesh's tets at positions xyz (3 floats per vertex). */
double wt_signed_volume(const piola_tet_mesh *mesh, const float *xyz);

/* Largest |l / l_rest - 1| over the edges of every tet of the mesh at positions xyz. */
double wt_max_edge_error(const piola_tet_mesh *mesh, const float *xyz);

/* Total mass (kg), linear momentum (kg m/s) and angular momentum about the origin (kg m^2/s)
 * of all free vertices, from the host arrays in double (m = 1 / w). */
void wt_momenta(const piola_world *w, double *mass, double p[3], double l[3]);

/* The largest number of tets sharing one vertex: a lower bound on the color count. */
int32_t wt_max_vertex_degree(const piola_tet_mesh *mesh);

/* The rank of each of tet_count tets (4 vertex indices each, into positions: 3 floats per
 * vertex, moved by translation) along the Morton curve of their centroids, as
 * piola_world_add_tet_body orders a small body's tets within a color (pass the body's own tets,
 * whose corner order it may have changed); NULL when out of memory or without tets. The caller
 * frees it. */
int32_t *wt_spatial_rank(const int32_t *tets, int32_t tet_count, const float *positions,
                         const float translation[3]);

/* Loads the Armadillo from piola_test_data_dir(); false when the data is not there. */
bool wt_load_armadillo(piola_tet_mesh *out);

#endif /* PIOLA_WORLD_HELPERS_H */
