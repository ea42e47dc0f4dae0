/* The scenes of the piola program: N copies of a tet body (the procedural creature or a
 * TetGen mesh such as the paper's Armadillo) on a grid above a ground plane, started squashed
 * so that every body deforms (Bender et al. 2014, Table 1 and Fig. 6 use such scenes). */
#ifndef PIOLA_CLI_SCENE_H
#define PIOLA_CLI_SCENE_H

#include "piola/piola.h"

#include <stdbool.h>

typedef struct scene_options {
  int32_t bodies;                /* default 100 */
  const char *mesh_path;         /* a .node file (its .ele beside it); NULL = procedural creature */
  piola_backend backend;         /* default AUTO */
  const char *device;            /* OpenCL device spec; NULL = PIOLA_DEVICE or the best */
  int32_t iterations;            /* default 5 */
  int32_t substeps;              /* default 1 */
  float dt;                      /* s; default 0.005 */
  piola_material material;       /* default: Neo-Hookean, XPBD, E = 1e6 Pa, nu = 0.3, 1000 kg/m^3 */
  float squash;                  /* initial vertical scale of every body; default 0.6 */
  bool ground;                   /* a ground plane at y = 0; default on */
  float friction;                /* ground friction; default 0.5 */
  piola_iteration_scheme scheme; /* default Gauss-Seidel */
  int32_t max_colors;            /* 0 = as many as the coloring needs */
  float jacobi_omega;            /* default 1 */
  int32_t work_group_size;       /* OpenCL; 0 = per device */
  piola_schedule schedule;       /* OpenCL launch schedule; default AUTO */
  bool profile;                  /* OpenCL stage timing */
  bool verbose;                  /* print the library's messages */
} scene_options;

scene_options scene_default_options(void);

/* Parses one scene option at argv[*i] (advancing *i past its value). Returns 1 when it was a
 * scene option, 0 when not, -1 on a bad value (message printed). */
int scene_parse_option(scene_options *o, int argc, char **argv, int *i);

/* Prints the scene options' help. */
void scene_print_help(void);

typedef struct scene {
  piola_world *world;
  piola_body_id *bodies;
  int32_t body_count;
  int32_t body_vertex_count; /* vertices per body */
  int32_t body_tet_count;
  char name[64]; /* "creature" or the mesh file's name */
} scene;

/* Builds the scene (prints the reason on failure). With `backend_override` not AUTO, uses
 * that backend instead of the options'. */
piola_status scene_build(const scene_options *o, piola_backend backend_override, scene *out);
void scene_destroy(scene *s);

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
