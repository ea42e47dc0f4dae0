/* The scenes of the piola program, N copies of a tet body (the procedural creature or a TetGen
 * mesh such as the paper's Armadillo):
 *   grid    on a grid above a ground plane, started squashed so that every body deforms
 *           (Bender et al. 2014, Table 1 and Fig. 6 use such scenes);
 *   funnel  stacked in a column of layers above a funnel, falling through it onto the ground
 *           (Bender et al. 2014, Sec. 6: 100 Armadillos through a funnel);
 * and one cloth scene:
 *   cloth   a square cloth of N x N cells (200 x 200: 40401 vertices, 80000 triangles) falling
 *           over four boxes standing in for statues, pushed down by a heavy sphere moving
 *           kinematically (Bender et al. 2014, Fig. 1 right and Table 1). */
#ifndef PIOLA_CLI_SCENE_H
#define PIOLA_CLI_SCENE_H

#include "piola/piola.h"

#include <stdbool.h>

typedef enum scene_kind {
  SCENE_GRID = 0,   /* bodies on a grid above the ground, squashed (the default) */
  SCENE_FUNNEL = 1, /* a column of bodies above a funnel above the ground */
  SCENE_CLOTH = 2   /* a cloth over four boxes, a sphere pushing it down */
} scene_kind;

typedef struct scene_options {
  scene_kind scene;              /* default SCENE_GRID */
  int32_t bodies;                /* default 100 */
  const char *mesh_path;         /* a Gmsh .msh file, or a TetGen .node (its .ele beside it); NULL =
                                    the procedural creature */
  int32_t box_cells[3];          /* > 0: a box of these cells (5 cm cubes, 6 tets each) instead */
  piola_backend backend;         /* default AUTO */
  const char *device;            /* OpenCL device spec; NULL = PIOLA_DEVICE or the best */
  int32_t iterations;            /* default 5 */
  int32_t substeps;              /* 0 = the scene's (scene_substeps) */
  float dt;                      /* s; default 0.005 */
  piola_material material;       /* default: Neo-Hookean, XPBD, E = 1e6 Pa, nu = 0.3, 1000 kg/m^3 */
  float squash;                  /* initial vertical scale of every body; 0 = the scene's: grid 0.6,
                                    funnel 1 */
  float body_height;             /* m; bodies scaled uniformly to it; 0 = the scene's: grid the mesh
                                    as loaded, funnel 1 */
  bool ground;                   /* a ground plane at y = 0; default on */
  float friction;                /* ground friction; default 0.5 */
  float funnel_friction;         /* friction of the funnel's wall; default 0.2 */
  float funnel_opening;          /* funnel: bottom opening's diameter in body widths; default 2.5 */
  int32_t funnel_mesh;           /* funnel: > 0 a triangle-mesh collider of about this many
                                    triangles in place of the analytic funnel; default 0 */
  bool contacts;                 /* body-body contact; default on */
  bool self_collision;           /* contact of a body with itself (with contacts on); default on */
  bool edge_contacts;            /* edge-edge contacts (with contacts on); default on */
  float contact_thickness;       /* m; 0 = the library's default */
  float contact_friction;        /* < 0 = the library's default */
  piola_iteration_scheme scheme; /* default Gauss-Seidel */
  int32_t max_colors;            /* 0 = as many as the coloring needs */
  float jacobi_omega;            /* default 1 */
  float vbd_chebyshev_rho;       /* default 0 */
  int32_t work_group_size;       /* OpenCL; 0 = per device */
  piola_schedule schedule;       /* OpenCL launch schedule; default AUTO */
  int32_t simd_lanes;            /* OpenCL tets per work-item per stage; 0 = per device */
  int32_t cpu_threads;           /* CPU reference threads; 0 = one per core (default 1) */
  bool profile;                  /* OpenCL stage timing */
  int32_t cloth_cells;           /* cloth scene: cells along each side; default 200 */
  bool verbose;                  /* print the library's messages */
} scene_options;

scene_options scene_default_options(void);

/* The substeps of the options' scene: the option, else 1 on the grid and 4 in the funnel. */
int32_t scene_substeps(const scene_options *o);

/* Parses one scene option at argv[*i] (advancing *i past its value). Returns 1 when it was a
 * scene option, 0 when not, -1 on a bad value (message printed). */
int scene_parse_option(scene_options *o, int argc, char **argv, int *i);

/* Prints the scene options' help. */
void scene_print_help(void);

/* The static shapes of a scene, as added to its world (for writing them out and for checks). */
typedef struct scene_geometry {
  bool has_ground;
  piola_plane_shape ground; /* dot(normal, x) = offset; normal +y */
  float ground_friction;
  bool has_funnel;
  piola_funnel_shape funnel; /* axis +y; the bottom opening is at funnel.base */
  float funnel_friction;
  float body_height; /* m; of every body at rest */
  float body_width;  /* m; diameter of the smallest vertical cylinder about the body's centre
                        that holds it (it turns about the vertical axis inside it) */
  double body_mass;  /* kg; of every body */
  float top;         /* m; the highest vertex at the start */
  float body_scale;  /* the factor the loaded mesh was scaled by to body_height (1: as loaded) */
  float contact_thickness; /* m; the world's (piola_world_def.contact_thickness) */
  /* The cloth scene: the boxes (the statues), the sphere and its motion, the cloth. */
  int32_t box_count;
  piola_box_shape boxes[4];
  float box_friction;
  bool has_sphere;
  piola_sphere_shape sphere; /* at the start */
  float sphere_friction;
  float sphere_velocity[3]; /* m/s, from the start until the stop */
  int32_t sphere_stop_step; /* steps after which it stands still, centre at sphere_stop */
  float sphere_stop[3];
  piola_collider_id sphere_id;
  float cloth_size;           /* m; side of the square cloth */
  float cloth_height;         /* m; its height at the start (flat, horizontal) */
  piola_cloth_material cloth; /* its material */
  double cloth_mass;          /* kg */
} scene_geometry;

typedef struct scene {
  piola_world *world;
  piola_body_id *bodies;
  int32_t body_count;
  int32_t body_vertex_count; /* vertices per body */
  int32_t body_tet_count;
  char name[64]; /* "creature" or the mesh file's name ("cloth" in the cloth scene) */
  scene_kind kind;
  scene_geometry geometry;
  piola_tri_mesh cloth_mesh; /* the cloth scene: the rest mesh of the cloth (body 0) */
  int32_t steps_taken;       /* scene_before_step() calls */
} scene;

/* The scene's name on the command line ("grid", "funnel", "cloth"). */
const char *scene_kind_name(scene_kind kind);

/* Builds the scene (prints the reason on failure). With `backend_override` not AUTO, uses
 * that backend instead of the options'. The layout is a pure function of the options and the
 * mesh: the same options build the same world. */
piola_status scene_build(const scene_options *o, piola_backend backend_override, scene *out);
void scene_destroy(scene *s);

/* Call before every piola_world_step() of the scene's world: moves the kinematic colliders
 * (the cloth scene's sphere stops after geometry.sphere_stop_step steps). */
piola_status scene_before_step(scene *s);

/* The cloth scene's sphere centre `time` seconds after the start. */
void scene_sphere_center(const scene_geometry *g, float dt, double time, float out[3]);

/* Loads the body mesh of the options (creature or file), centred on x = z = 0, bottom at 0. */
piola_status scene_load_mesh(const scene_options *o, piola_tet_mesh *mesh, char *name,
                             size_t name_size);

/* Parses an integer / float option value; prints an error and returns false when bad. */
bool parse_int(const char *flag, const char *text, int32_t min, int32_t *out);
bool parse_float(const char *flag, const char *text, float *out);

/* Seconds from a monotonic clock. */
double now_seconds(void);

/* The host CPU's model name (Linux /proc/cpuinfo), or "unknown CPU". */
void cpu_model_name(char *out, size_t n);

/* The logger the program uses: prints warnings and errors to stderr (all with verbose). */
void cli_log(piola_log_level level, const char *message, void *user_data);

#endif /* PIOLA_CLI_SCENE_H */
