/* The internals of `piola validate` that its files share (not installed; only src/cli/validate*.c
 * include it):
 *   validate.c             the experiments table, the report's checks and series, the output
 *                          (table, JSON, CSV) and the command;
 *   validate_sim.c         the building blocks of the experiments: a world with one body, vertex
 *                          sets, forces on a face, the settle loop, beams along x;
 *   validate_solid.c       the tet experiments: convergence, stiffness, poisson, timestep,
 *                          recovery and compression (Figs. 2, 4-7 and 11);
 *   validate_plasticity.c  plasticity (Fig. 8);
 *   validate_cloth.c       the cloth experiments (Sec. 4.3, Figs. 7 and 10). */
#ifndef PIOLA_CLI_VALIDATE_INTERNAL_H
#define PIOLA_CLI_VALIDATE_INTERNAL_H

#include "validate.h"

#include <stdbool.h>
#include <stdint.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- Checks and series (validate.c) ------------------------------------------------------ */

/* Each adds a check of experiment x to the report, judged as its name says (VALIDATE_NEAR,
 * VALIDATE_AT_MOST, VALIDATE_AT_LEAST; an info check is reported, not judged). */
void validate_check_near(validate_report *r, const char *x, const char *name, const char *unit,
                         double measured, double expected, double tolerance, const char *note);
void validate_check_at_most(validate_report *r, const char *x, const char *name, const char *unit,
                            double measured, double limit, const char *note);
void validate_check_at_least(validate_report *r, const char *x, const char *name, const char *unit,
                             double measured, double limit, const char *note);
void validate_report_info(validate_report *r, const char *x, const char *name, const char *unit,
                          double measured, const char *note);

/* Records a library failure as a failed check; returns 1 (the experiment's error result). */
int validate_report_error(validate_report *r, const char *x, const char *what, piola_status s);

/* A new series with the given column names (the label column comes first and is implicit).
 * Returns its index, or -1 when out of memory. */
int validate_series_new(validate_report *r, const char *experiment, const char *name, int columns,
                        const char *const *names);

/* Adds a row (column_count values) to the series `index`; nothing when index < 0. */
void validate_series_add(validate_report *r, int index, const char *label, const double *values);

/* ---- A world with one body (validate_sim.c) ---------------------------------------------- */

/* The settings every experiment starts from: no gravity, no damping, the chosen backend. */
piola_world_def validate_base_def(const validate_options *o, double dt, int32_t substeps,
                                  int32_t iterations);

/* A material of that model, E (Pa) and nu: XPBD, 1000 kg/m^3, inversion handling on. */
piola_material validate_base_material(piola_model model, double youngs, double poisson);

typedef struct validate_sim {
  piola_world *world;
  piola_body_id body;
  piola_tet_mesh mesh; /* the rest state (owned) */
  int32_t n;           /* vertices */
  float *x;            /* positions, as last read */
  float *inv_mass;     /* the lumped inverse masses */
  double dt;
} validate_sim;

void validate_sim_destroy(validate_sim *s);

/* The rest of making a sim once its world and body exist (st: how that went): the arrays, the
 * inverse masses, the report's device name; on failure everything is freed. */
piola_status validate_sim_finish(validate_report *r, piola_status st, validate_sim *s);

/* Makes a world with one body of `mesh` (taken over: freed with the sim). */
piola_status validate_sim_create(validate_report *r, const piola_world_def *def,
                                 piola_tet_mesh *mesh, const piola_material *m, validate_sim *s);

/* Reads the body's positions into s->x. */
piola_status validate_sim_read(validate_sim *s);

/* Takes `steps` steps (stops at the first failure). */
piola_status validate_sim_steps(validate_sim *s, int32_t steps);

/* Signed volume (m^3) of the body's tets at positions x (floats, 3 per vertex). */
double validate_mesh_volume(const piola_tet_mesh *m, const float *x);

/* A set of vertex indices. */
typedef struct validate_vset {
  int32_t *idx;
  int32_t count;
} validate_vset;

void validate_vset_free(validate_vset *v);

/* Vertices whose rest coordinate on axis a equals va (and on axis b equals vb, when b >= 0). */
validate_vset validate_select_vertices(const piola_tet_mesh *m, int a, double va, int b, double vb);

/* Pins the vertices of v (inverse mass 0); the others keep theirs. */
piola_status validate_sim_pin(validate_sim *s, const validate_vset *v);

/* A constant total force (N) spread over the vertices of a rectangular face of a box mesh
 * like a uniform traction (every cell of the face carries the same load). */
piola_status validate_sim_face_force(validate_sim *s, const validate_vset *face, int normal_axis,
                                     const double lo[3], const double hi[3], const double total[3]);

/* Something measured from the current positions (which it reads); NaN on failure. */
typedef double validate_sim_measure(validate_sim *s, void *user);

typedef struct validate_settle_result {
  double value;       /* the measure at the end */
  double time;        /* simulated seconds */
  double last_change; /* relative change over the last interval */
  bool settled;
  piola_status status;
} validate_settle_result;

/* Steps until the measure changes by at most rel_tol (relative) over two intervals of about
 * 20 ms in a row, after at least t_min and at most t_max simulated seconds. With series >= 0,
 * adds a (time, value) row per interval. */
validate_settle_result validate_settle(validate_sim *s, validate_sim_measure *measure, void *user,
                                       double t_min, double t_max, double rel_tol,
                                       validate_report *r, int series, const char *label);

/* ---- Beams: box meshes along x (validate_sim.c) ------------------------------------------ */

typedef struct validate_beam {
  validate_sim s;
  double length, width;
  double lo[3], hi[3];
  validate_vset fixed;  /* x = 0: pinned */
  validate_vset end;    /* x = L: loaded (or twisted) */
  validate_vset a, b;   /* vertex planes near x = L/4 and 3L/4 (axial strain) */
  double ax, bx;        /* their rest x */
  validate_vset yl, yh; /* the mid plane's vertices on y = 0 and y = W */
  validate_vset zl, zh; /* ... on z = 0 and z = W */
  double end_y0;        /* rest mean y of the end face */
} validate_beam;

void validate_beam_destroy(validate_beam *b);

/* A beam of length L along x with a W x W cross-section, pinned at x = 0. */
piola_status validate_beam_create(validate_report *r, const piola_world_def *def,
                                  const int32_t cells[3], double length, double width,
                                  const piola_material *m, validate_beam *b);

/* Measures of a beam (user: the validate_beam): the total axial strain (displacement of the free
 * end face over the length), Poisson's ratio from the mid strains, the sag of the free end face
 * (m) and its twist about the beam axis (degrees). */
double validate_beam_total_strain(validate_sim *s, void *user);
double validate_beam_poisson(validate_sim *s, void *user);
double validate_beam_sag(validate_sim *s, void *user);
double validate_beam_twist(validate_sim *s, void *user);

/* Axial strain between the planes near L/4 and 3L/4 and lateral strain of the mid plane (mean
 * of y and z), from the current positions (already read). */
void validate_beam_mid_strains(const validate_beam *b, double *axial, double *lateral);

/* Damping (1/s) that makes the first axial mode of a fixed-free bar critically damped. */
double validate_bar_damping(double youngs, double density, double length);

/* Iterations at which a decreasing sequence first reaches `level` (a fraction of e[0]);
 * NaN if never. */
double validate_iterations_to(const double *e, int32_t n, double level);

/* ---- The experiments (the table in validate.c lists them) -------------------------------- */

/* validate_solid.c */
int validate_exp_convergence(const validate_options *o, validate_report *r);
int validate_exp_stiffness(const validate_options *o, validate_report *r);
int validate_exp_poisson(const validate_options *o, validate_report *r);
int validate_exp_timestep(const validate_options *o, validate_report *r);
int validate_exp_recovery(const validate_options *o, validate_report *r);
int validate_exp_compression(const validate_options *o, validate_report *r);
/* validate_plasticity.c */
int validate_exp_plasticity(const validate_options *o, validate_report *r);
/* validate_cloth.c */
int validate_exp_cloth_poisson(const validate_options *o, validate_report *r);
int validate_exp_cloth_weft_warp(const validate_options *o, validate_report *r);
int validate_exp_cloth_hanging(const validate_options *o, validate_report *r);
int validate_exp_cloth_cantilever(const validate_options *o, validate_report *r);
int validate_exp_cloth_rigid(const validate_options *o, validate_report *r);

#endif /* PIOLA_CLI_VALIDATE_INTERNAL_H */
