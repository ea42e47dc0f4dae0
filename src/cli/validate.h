/* `piola validate`: the experiments of Bender, Koschier, Charrier and Weber 2014, "Position-Based
 * Simulation of Continuous Materials" (its Figs. 2, 4-8 and 11), run through the public API on
 * either backend. Each experiment measures numbers, compares them with what the paper (or
 * continuum mechanics) expects, and keeps its data series for the CSV/JSON files and the charts
 * that bench/plot.py draws. The experiments live in the piola_scenes library, so the tests run
 * their quick versions (validate_* in tests/test_validate.c). */
#ifndef PIOLA_CLI_VALIDATE_H
#define PIOLA_CLI_VALIDATE_H

#include "piola/piola.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct validate_options {
  piola_backend backend; /* default: the CPU reference */
  const char *device;    /* OpenCL device spec; NULL = PIOLA_DEVICE or the best */
  const char *mesh_path; /* body of the convergence and recovery experiments (a .node file);
                            NULL = the procedural creature */
  bool quick;            /* smaller meshes, fewer runs: the CTest versions */
  bool verbose;          /* the library's informational messages */
  int32_t cpu_threads;   /* CPU reference threads (piola_world_def.cpu_threads); default 1 */
  /* The iteration scheme of every experiment's worlds (default Gauss-Seidel); 'convergence'
   * runs its own list of schemes, vertex block descent among them. */
  piola_iteration_scheme scheme;
  /* piola_world_def.vbd_chebyshev_rho of every experiment's worlds (default 0); 'convergence'
   * sets its own per scheme. */
  float vbd_rho;
  /* cloth_cantilever's strip and step (0: the experiment's own, 16 rows, 200 substeps of 2
   * iterations; --quick 8 rows, 100 substeps): the finer strip's rows N (it runs N / 2 and N),
   * and the substeps and iterations per 10 ms step. */
  int32_t cantilever_rows, cantilever_substeps, cantilever_iterations;
} validate_options;

validate_options validate_default_options(void);

/* How a check compares its measurement with the expected value. */
typedef enum validate_relation {
  VALIDATE_NEAR,     /* |measured - expected| <= tolerance */
  VALIDATE_AT_MOST,  /* measured <= expected */
  VALIDATE_AT_LEAST, /* measured >= expected */
  VALIDATE_INFO      /* reported, not judged (passes) */
} validate_relation;

typedef struct validate_check {
  char experiment[24];
  char name[96];
  char unit[16];
  double measured; /* NaN: not measured (e.g. a level never reached) */
  double expected;
  double tolerance;
  validate_relation relation;
  bool passed;
  char note[160];
} validate_check;

/* A table of numbers of one experiment: one CSV file and (part of) one chart. Each row has a
 * label (which curve it belongs to) and `column_count` numbers. */
#define VALIDATE_MAX_COLUMNS 6
typedef struct validate_series {
  char experiment[24];
  char name[32];
  int32_t column_count;
  char columns[VALIDATE_MAX_COLUMNS][24];
  int32_t row_count, row_capacity;
  char (*labels)[32];
  double *values; /* row-major, row_count x column_count */
} validate_series;

typedef struct validate_report {
  validate_check *checks;
  int32_t check_count, check_capacity;
  validate_series *series;
  int32_t series_count, series_capacity;
  bool out_of_memory;
  char device[128]; /* the device the worlds ran on */
  double seconds[16];
} validate_report;

void validate_report_init(validate_report *r);
void validate_report_free(validate_report *r);

typedef int validate_fn(const validate_options *o, validate_report *r);

typedef struct validate_experiment {
  const char *name;  /* convergence, stiffness, poisson, timestep, recovery, plasticity,
                        compression */
  const char *paper; /* the figure it reproduces */
  const char *title;
  validate_fn *run; /* returns 0, or 1 when the library failed (recorded as a failed check) */
} validate_experiment;

/* The experiments in the order they run; *count receives their number. */
const validate_experiment *validate_experiments(int *count);

/* The experiment of that name, or NULL. */
const validate_experiment *validate_find(const char *name);

/* Runs one experiment, adding its checks and series to the report; stores the seconds it took
 * in r->seconds[index]. Returns the experiment's failed checks (library failures included). */
int validate_run(int index, const validate_options *o, validate_report *r);

/* Failed checks of one experiment (NULL: of all). */
int validate_failures(const validate_report *r, const char *experiment);

/* Prints the checks of one experiment (NULL: all) as table rows; the header on request. */
void validate_print_header(void);
void validate_print_checks(const validate_report *r, const char *experiment);

/* Writes the report as JSON: {"experiments": [{"name", "measured", "expected", "tolerance",
 * "passed", ...}], "series": [...], ...}. Returns 0 on success. */
int validate_write_json(const validate_report *r, const validate_options *o, double total_seconds,
                        const char *path);

/* Writes DIR/<experiment>_<series>.csv for every series and DIR/checks.csv (DIR must exist).
 * Returns 0 on success. */
int validate_write_csv(const validate_report *r, const char *dir);

int command_validate(int argc, char **argv);

#endif /* PIOLA_CLI_VALIDATE_H */
