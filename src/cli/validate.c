/* `piola validate`: the experiments of Bender, Koschier, Charrier and Weber 2014, "Position-Based
 * Simulation of Continuous Materials", reproduced through the public API (see validate.h and the
 * guide docs/validation.md, which lists the settings and why they were chosen).
 *
 *   convergence  Fig. 4   elastic energy after 0..50 iterations of one quasi-static step
 *   stiffness    Fig. 5   strain of a pulled beam vs iterations and vs Young's modulus
 *   poisson      Fig. 7   lateral contraction of a stretched beam vs the material's nu
 *   timestep     (XPBD)   static sag of a cantilever for dt = 10, 5 and 2.5 ms
 *   recovery     Fig. 6   a flattened and a mirrored body recover their rest volume
 *   plasticity   Fig. 8   residual twist of a beam twisted and released
 *   compression  Figs. 2, 11  stress vs stretch with and without the inversion clamp; a loaded
 *                         cube keeps more volume with Neo-Hookean than with StVK
 * and the cloth (Sec. 4.3):
 *   cloth_poisson    Fig. 7   lateral contraction of a 1 m x 1 m cloth pulled along the weft
 *   cloth_weft_warp  Fig. 10  equal pulls along weft and warp, the warp 4 times stiffer
 *   cloth_hanging    (membrane) elongation of a strip hanging from its top edge
 *   cloth_cantilever (bending)  tip sag of a cantilevered strip under its own weight
 *   cloth_rigid      (bending)  zero energy for rigid motions of flat and curved rest states
 *
 * Every number is measured from the simulation (positions and piola_world_get_stats()), nothing
 * is computed from the library's internals. A library failure becomes a failed check. */
#include "validate_internal.h"

#include "options.h"
#include "scene.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

validate_options validate_default_options(void) {
  validate_options o;
  memset(&o, 0, sizeof o);
  o.backend = PIOLA_BACKEND_CPU_REFERENCE;
  o.cpu_threads = 1;
  return o;
}

/* ---- Report: checks and series ------------------------------------------------------- */

void validate_report_init(validate_report *r) {
  memset(r, 0, sizeof *r);
}

void validate_report_free(validate_report *r) {
  for (int32_t i = 0; i < r->series_count; ++i) {
    free(r->series[i].labels);
    free(r->series[i].values);
  }
  free(r->series);
  free(r->checks);
  memset(r, 0, sizeof *r);
}

static void add_check(validate_report *r, const char *experiment, const char *name,
                      const char *unit, double measured, double expected, double tolerance,
                      validate_relation relation, const char *note) {
  if (r->check_count == r->check_capacity) {
    int32_t cap = r->check_capacity > 0 ? 2 * r->check_capacity : 32;
    validate_check *c = realloc(r->checks, sizeof *c * (size_t)cap);
    if (c == NULL) {
      r->out_of_memory = true;
      return;
    }
    r->checks = c;
    r->check_capacity = cap;
  }
  validate_check *c = &r->checks[r->check_count++];
  memset(c, 0, sizeof *c);
  snprintf(c->experiment, sizeof c->experiment, "%s", experiment);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->unit, sizeof c->unit, "%s", unit != NULL ? unit : "");
  snprintf(c->note, sizeof c->note, "%s", note != NULL ? note : "");
  c->measured = measured;
  c->expected = expected;
  c->tolerance = tolerance;
  c->relation = relation;
  switch (relation) {
  case VALIDATE_NEAR:
    c->passed = isfinite(measured) && fabs(measured - expected) <= tolerance;
    break;
  case VALIDATE_AT_MOST:
    c->passed = isfinite(measured) && measured <= expected;
    break;
  case VALIDATE_AT_LEAST:
    c->passed = isfinite(measured) && measured >= expected;
    break;
  case VALIDATE_INFO:
    c->passed = true;
    break;
  }
}

void validate_check_near(validate_report *r, const char *x, const char *name, const char *unit,
                         double measured, double expected, double tolerance, const char *note) {
  add_check(r, x, name, unit, measured, expected, tolerance, VALIDATE_NEAR, note);
}

void validate_check_at_most(validate_report *r, const char *x, const char *name, const char *unit,
                            double measured, double limit, const char *note) {
  add_check(r, x, name, unit, measured, limit, 0.0, VALIDATE_AT_MOST, note);
}

void validate_check_at_least(validate_report *r, const char *x, const char *name, const char *unit,
                             double measured, double limit, const char *note) {
  add_check(r, x, name, unit, measured, limit, 0.0, VALIDATE_AT_LEAST, note);
}

void validate_report_info(validate_report *r, const char *x, const char *name, const char *unit,
                          double measured, const char *note) {
  add_check(r, x, name, unit, measured, NAN, NAN, VALIDATE_INFO, note);
}

/* Records a library failure as a failed check; returns 1 (the experiment's error result). */
int validate_report_error(validate_report *r, const char *x, const char *what, piola_status s) {
  char name[96], note[160];
  snprintf(name, sizeof name, "error: %s", what);
  snprintf(note, sizeof note, "%s", piola_status_string(s));
  add_check(r, x, name, "", NAN, NAN, NAN, VALIDATE_NEAR, note);
  return 1;
}

/* A new series with the given column names (the label column comes first and is implicit).
 * Returns its index, or -1 when out of memory. */
int validate_series_new(validate_report *r, const char *experiment, const char *name, int columns,
                        const char *const *names) {
  if (r->series_count == r->series_capacity) {
    int32_t cap = r->series_capacity > 0 ? 2 * r->series_capacity : 16;
    validate_series *s = realloc(r->series, sizeof *s * (size_t)cap);
    if (s == NULL) {
      r->out_of_memory = true;
      return -1;
    }
    r->series = s;
    r->series_capacity = cap;
  }
  validate_series *s = &r->series[r->series_count];
  memset(s, 0, sizeof *s);
  snprintf(s->experiment, sizeof s->experiment, "%s", experiment);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->column_count = columns < VALIDATE_MAX_COLUMNS ? columns : VALIDATE_MAX_COLUMNS;
  for (int i = 0; i < s->column_count; ++i) {
    snprintf(s->columns[i], sizeof s->columns[i], "%s", names[i]);
  }
  return r->series_count++;
}

void validate_series_add(validate_report *r, int index, const char *label, const double *values) {
  if (index < 0) {
    return;
  }
  validate_series *s = &r->series[index];
  if (s->row_count == s->row_capacity) {
    int32_t cap = s->row_capacity > 0 ? 2 * s->row_capacity : 64;
    char(*labels)[32] = realloc(s->labels, sizeof *labels * (size_t)cap);
    if (labels != NULL) {
      s->labels = labels;
    }
    double *v = realloc(s->values, sizeof *v * (size_t)cap * (size_t)s->column_count);
    if (v != NULL) {
      s->values = v;
    }
    if (labels == NULL || v == NULL) {
      r->out_of_memory = true;
      return;
    }
    s->row_capacity = cap;
  }
  snprintf(s->labels[s->row_count], sizeof s->labels[0], "%s", label);
  memcpy(s->values + (size_t)s->row_count * (size_t)s->column_count, values,
         sizeof *values * (size_t)s->column_count);
  s->row_count++;
}

/* ---- The list ------------------------------------------------------------------------------- */

static const validate_experiment experiments[] = {
    {"convergence", "Fig. 4", "energy and residual within one step: Gauss-Seidel vs Jacobi",
     validate_exp_convergence},
    {"stiffness", "Fig. 5", "beam strain vs iterations and vs Young's modulus",
     validate_exp_stiffness},
    {"poisson", "Fig. 7", "lateral contraction vs Poisson's ratio", validate_exp_poisson},
    {"timestep", "XPBD", "static sag independent of the time step", validate_exp_timestep},
    {"recovery", "Fig. 6", "flattened and mirrored bodies recover their volume",
     validate_exp_recovery},
    {"plasticity", "Fig. 8", "residual twist with creep, yield and maximum",
     validate_exp_plasticity},
    {"compression", "Figs. 2, 11", "stress vs stretch; a loaded cube, StVK vs Neo-Hookean",
     validate_exp_compression},
    {"cloth_poisson", "Fig. 7", "cloth: lateral contraction vs poisson_weft",
     validate_exp_cloth_poisson},
    {"cloth_weft_warp", "Fig. 10", "cloth: equal pulls, warp 4 times stiffer than the weft",
     validate_exp_cloth_weft_warp},
    {"cloth_hanging", "Sec. 4.3", "cloth: elongation of a hanging strip",
     validate_exp_cloth_hanging},
    {"cloth_cantilever", "Sec. 4.3", "cloth: tip sag of a cantilevered strip (bending)",
     validate_exp_cloth_cantilever},
    {"cloth_rigid", "Sec. 4.3", "cloth: no bending energy for rigid motions",
     validate_exp_cloth_rigid},
};

const validate_experiment *validate_experiments(int *count) {
  *count = (int)(sizeof experiments / sizeof experiments[0]);
  return experiments;
}

const validate_experiment *validate_find(const char *name) {
  for (size_t i = 0; i < sizeof experiments / sizeof experiments[0]; ++i) {
    if (strcmp(experiments[i].name, name) == 0) {
      return &experiments[i];
    }
  }
  return NULL;
}

int validate_failures(const validate_report *r, const char *experiment) {
  int failed = 0;
  for (int32_t i = 0; i < r->check_count; ++i) {
    if (!r->checks[i].passed &&
        (experiment == NULL || strcmp(r->checks[i].experiment, experiment) == 0)) {
      ++failed;
    }
  }
  return failed + (r->out_of_memory ? 1 : 0);
}

int validate_run(int index, const validate_options *o, validate_report *r) {
  int count;
  const validate_experiment *e = validate_experiments(&count);
  if (index < 0 || index >= count) {
    return 1;
  }
  const double t0 = now_seconds();
  e[index].run(o, r);
  r->seconds[index] = now_seconds() - t0;
  return validate_failures(r, e[index].name);
}

/* ---- Output ---------------------------------------------------------------------------------- */

static const char *relation_name(validate_relation rel) {
  switch (rel) {
  case VALIDATE_NEAR:
    return "near";
  case VALIDATE_AT_MOST:
    return "at_most";
  case VALIDATE_AT_LEAST:
    return "at_least";
  case VALIDATE_INFO:
    return "info";
  }
  return "info";
}

void validate_print_header(void) {
  printf("%-12s %-54s %16s %-16s %-6s %s\n", "experiment", "check", "measured", "expected",
         "result", "note");
}

void validate_print_checks(const validate_report *r, const char *experiment) {
  for (int32_t i = 0; i < r->check_count; ++i) {
    const validate_check *c = &r->checks[i];
    if (experiment != NULL && strcmp(c->experiment, experiment) != 0) {
      continue;
    }
    char measured[32], expected[32];
    if (isfinite(c->measured)) {
      snprintf(measured, sizeof measured, "%.5g", c->measured);
    } else {
      snprintf(measured, sizeof measured, "n/a");
    }
    switch (c->relation) {
    case VALIDATE_NEAR:
      snprintf(expected, sizeof expected, "%.4g +- %.3g", c->expected, c->tolerance);
      break;
    case VALIDATE_AT_MOST:
      snprintf(expected, sizeof expected, "<= %.4g", c->expected);
      break;
    case VALIDATE_AT_LEAST:
      snprintf(expected, sizeof expected, ">= %.4g", c->expected);
      break;
    case VALIDATE_INFO:
      snprintf(expected, sizeof expected, "(reported)");
      break;
    }
    if (c->unit[0] != '\0' && isfinite(c->measured)) {
      const size_t len = strlen(measured);
      snprintf(measured + len, sizeof measured - len, " %s", c->unit);
    }
    const char *result = c->relation == VALIDATE_INFO ? "info" : c->passed ? "PASS" : "FAIL";
    printf("%-12s %-54.54s %16s %-16s %-6s %s\n", c->experiment, c->name, measured, expected,
           result, c->note);
  }
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s != '\0'; ++s) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      fprintf(f, "\\%c", ch);
    } else if (ch < 0x20) {
      fprintf(f, "\\u%04x", ch);
    } else {
      fputc(ch, f);
    }
  }
  fputc('"', f);
}

static void json_number(FILE *f, double v) {
  if (isfinite(v)) {
    fprintf(f, "%.10g", v);
  } else {
    fputs("null", f);
  }
}

int validate_write_json(const validate_report *r, const validate_options *o, double total_seconds,
                        const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "piola validate: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  time_t now = time(NULL);
  char date[32], cpu[256];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  cpu_model_name(cpu, sizeof cpu);
  const int failed = validate_failures(r, NULL);
  fprintf(f, "{\n  \"piola_version\": \"%s\",\n  \"date\": \"%s\",\n  \"host_cpu\": ",
          piola_version_string(), date);
  json_string(f, cpu);
  fprintf(f, ",\n  \"backend\": \"%s\",\n  \"device\": ", piola_backend_name(o->backend));
  json_string(f, r->device);
  fprintf(f, ",\n  \"quick\": %s,\n  \"mesh\": ", o->quick ? "true" : "false");
  json_string(f, o->mesh_path != NULL ? o->mesh_path : "procedural creature");
  fprintf(f, ",\n  \"paper\": \"Bender, Koschier, Charrier, Weber 2014, Position-Based Simulation "
             "of Continuous Materials\",\n");
  fprintf(f, "  \"total_seconds\": %.3f,\n  \"passed\": %s,\n  \"failed\": %d,\n", total_seconds,
          failed == 0 ? "true" : "false", failed);
  int count;
  const validate_experiment *e = validate_experiments(&count);
  /* One summary per experiment that ran; "experiments" below has one entry per check. */
  fprintf(f, "  \"summary\": [");
  bool first = true;
  for (int i = 0; i < count; ++i) {
    int checks = 0;
    for (int32_t k = 0; k < r->check_count; ++k) {
      checks += strcmp(r->checks[k].experiment, e[i].name) == 0;
    }
    if (checks > 0) {
      const int bad = validate_failures(r, e[i].name);
      fprintf(f,
              "%s\n    {\"experiment\": \"%s\", \"paper\": \"%s\", \"title\": \"%s\", "
              "\"checks\": %d, \"failed\": %d, \"passed\": %s, \"seconds\": %.3f}",
              first ? "" : ",", e[i].name, e[i].paper, e[i].title, checks, bad,
              bad == 0 ? "true" : "false", r->seconds[i]);
      first = false;
    }
  }
  fprintf(f, "\n  ],\n  \"experiments\": [");
  for (int32_t i = 0; i < r->check_count; ++i) {
    const validate_check *c = &r->checks[i];
    char name[128];
    snprintf(name, sizeof name, "%s/%s", c->experiment, c->name);
    fprintf(f, "%s\n    {\"name\": ", i > 0 ? "," : "");
    json_string(f, name);
    fprintf(f, ", \"measured\": ");
    json_number(f, c->measured);
    fprintf(f, ", \"expected\": ");
    json_number(f, c->expected);
    fprintf(f, ", \"tolerance\": ");
    json_number(f, c->tolerance);
    fprintf(f, ", \"passed\": %s, \"relation\": \"%s\", \"experiment\": \"%s\", \"unit\": ",
            c->passed ? "true" : "false", relation_name(c->relation), c->experiment);
    json_string(f, c->unit);
    fprintf(f, ", \"note\": ");
    json_string(f, c->note);
    fputc('}', f);
  }
  fprintf(f, "\n  ],\n  \"series\": [");
  for (int32_t i = 0; i < r->series_count; ++i) {
    const validate_series *s = &r->series[i];
    fprintf(f, "%s\n    {\"experiment\": \"%s\", \"name\": \"%s\", \"columns\": [\"label\"",
            i > 0 ? "," : "", s->experiment, s->name);
    for (int c = 0; c < s->column_count; ++c) {
      fprintf(f, ", \"%s\"", s->columns[c]);
    }
    fprintf(f, "],\n     \"rows\": [");
    for (int32_t k = 0; k < s->row_count; ++k) {
      fprintf(f, "%s[", k > 0 ? ", " : "");
      json_string(f, s->labels[k]);
      for (int c = 0; c < s->column_count; ++c) {
        fputs(", ", f);
        json_number(f, s->values[(size_t)k * (size_t)s->column_count + (size_t)c]);
      }
      fputc(']', f);
    }
    fputs("]}", f);
  }
  fprintf(f, "\n  ]\n}\n");
  int bad = ferror(f);
  bad |= fclose(f);
  if (bad) {
    fprintf(stderr, "piola validate: error writing %s\n", path);
  }
  return bad ? 1 : 0;
}

static void csv_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s != '\0'; ++s) {
    if (*s == '"') {
      fputc('"', f);
    }
    fputc(*s, f);
  }
  fputc('"', f);
}

int validate_write_csv(const validate_report *r, const char *dir) {
  char path[4096];
  int status = 0;
  for (int32_t i = 0; i < r->series_count && status == 0; ++i) {
    const validate_series *s = &r->series[i];
    snprintf(path, sizeof path, "%s/%s_%s.csv", dir, s->experiment, s->name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
      fprintf(stderr, "piola validate: cannot write %s: %s\n", path, strerror(errno));
      return 1;
    }
    fputs("label", f);
    for (int c = 0; c < s->column_count; ++c) {
      fprintf(f, ",%s", s->columns[c]);
    }
    fputc('\n', f);
    for (int32_t k = 0; k < s->row_count; ++k) {
      csv_string(f, s->labels[k]);
      for (int c = 0; c < s->column_count; ++c) {
        fprintf(f, ",%.10g", s->values[(size_t)k * (size_t)s->column_count + (size_t)c]);
      }
      fputc('\n', f);
    }
    status = ferror(f);
    status |= fclose(f);
  }
  snprintf(path, sizeof path, "%s/checks.csv", dir);
  FILE *f = status == 0 ? fopen(path, "w") : NULL;
  if (f == NULL) {
    fprintf(stderr, "piola validate: cannot write %s\n", path);
    return 1;
  }
  fputs("experiment,name,measured,expected,tolerance,relation,passed,unit,note\n", f);
  for (int32_t i = 0; i < r->check_count; ++i) {
    const validate_check *c = &r->checks[i];
    fprintf(f, "%s,", c->experiment);
    csv_string(f, c->name);
    fprintf(f, ",%.10g,%.10g,%.10g,%s,%s,", c->measured, c->expected, c->tolerance,
            relation_name(c->relation), c->passed ? "true" : "false");
    csv_string(f, c->unit);
    fputc(',', f);
    csv_string(f, c->note);
    fputc('\n', f);
  }
  status = ferror(f);
  status |= fclose(f);
  if (status) {
    fprintf(stderr, "piola validate: error writing %s\n", path);
  }
  return status ? 1 : 0;
}

/* ---- The command ------------------------------------------------------------------------------
 */

static void print_help(const cli_command *c) {
  int count;
  const validate_experiment *e = validate_experiments(&count);
  printf("Usage: piola validate [options]\n"
         "Reproduces the experiments of Bender et al. 2014 (Figs. 2, 4-8, 10, 11) and prints each\n"
         "measured value beside the expected one with PASS/FAIL. Exit status 1 when a check\n"
         "fails.\n\n");
  cli_print_options(c);
  printf("\nExperiments:\n");
  for (int i = 0; i < count; ++i) {
    printf("  %-12s %-12s %s\n", e[i].name, e[i].paper, e[i].title);
  }
}

/* Whether `name` is in the comma-separated list (NULL: every name). */
static bool in_list(const char *list, const char *name) {
  if (list == NULL) {
    return true;
  }
  const size_t n = strlen(name);
  for (const char *p = list; *p != '\0';) {
    const char *end = strchr(p, ',');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) {
      return true;
    }
    p += len + (end != NULL ? 1 : 0);
  }
  return false;
}

static int run_plot(const char *json, const char *dir) {
#ifdef PIOLA_PLOT_SCRIPT
  const char *script =
      getenv("PIOLA_PLOT_SCRIPT") != NULL ? getenv("PIOLA_PLOT_SCRIPT") : PIOLA_PLOT_SCRIPT;
#else
  const char *script =
      getenv("PIOLA_PLOT_SCRIPT") != NULL ? getenv("PIOLA_PLOT_SCRIPT") : "bench/plot.py";
#endif
  const char *python = getenv("PIOLA_PYTHON") != NULL ? getenv("PIOLA_PYTHON") : "python3";
  if (strchr(script, '\'') != NULL || strchr(json, '\'') != NULL || strchr(dir, '\'') != NULL ||
      strchr(python, '\'') != NULL) {
    fprintf(stderr, "piola validate: --plot: paths must not contain quotes\n");
    return 1;
  }
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' '%s' validate '%s' --out '%s'", python, script, json, dir);
  printf("plotting: %s\n", cmd);
  fflush(stdout);
  int rc = system(cmd);
  if (rc != 0) {
    fprintf(stderr, "piola validate: the plot script failed (system() status %d)\n", rc);
    return 1;
  }
  return 0;
}

int command_validate(int argc, char **argv) {
  validate_options o = validate_default_options();
  const char *json = NULL, *out = NULL, *only = NULL;
  bool plot = false;
  int count;
  const validate_experiment *e = validate_experiments(&count);
  /* --backend: an index into these (-1: not given, the default stays). */
  static const char *const backend_names[] = {"cpu", "opencl", "auto", NULL};
  static const piola_backend backends[] = {PIOLA_BACKEND_CPU_REFERENCE, PIOLA_BACKEND_OPENCL,
                                           PIOLA_BACKEND_AUTO};
  int backend = -1, scheme = -1;
  /* in the order of piola_iteration_scheme */
  static const char *const scheme_names[] = {"gauss-seidel", "jacobi", "vbd", "multigrid", NULL};
  bool list = false;
  const cli_option options[] = {
      {"--quick", CLI_FLAG, &o.quick, 0, NULL, NULL,
       "the quick versions (the validate_* tests): smaller meshes, fewer runs"},
      {"--only", CLI_STRING, &only, 0, NULL, "LIST",
       "comma-separated experiments to run (default: all)"},
      {"--list", CLI_ACTION, &list, 0, NULL, NULL, "list the experiments"},
      {"--json", CLI_STRING, &json, 0, NULL, "FILE",
       "write the checks (\"experiments\") and the data series as JSON"},
      {"--out", CLI_STRING, &out, 0, NULL, "DIR",
       "write DIR/<experiment>_<series>.csv and DIR/checks.csv"},
      {"--plot", CLI_FLAG, &plot, 0, NULL, NULL,
       "draw DIR/<experiment>.png with bench/plot.py (needs --out; the\n"
       "interpreter is $PIOLA_PYTHON, default python3)"},
      {"--backend", CLI_CHOICE, &backend, 0, backend_names, "B",
       "cpu (default: the double-precision reference), opencl or auto"},
      {"--device", CLI_STRING, &o.device, 0, NULL, "SPEC",
       "OpenCL device: P:D, gpu, cpu or a name substring"},
      {"--scheme", CLI_CHOICE, &scheme, 0, scheme_names, "S",
       "gauss-seidel (default), jacobi, vbd (vertex block descent) or\n"
       "multigrid (global Newton steps; on OpenCL solved on the host): the\n"
       "iteration scheme of the experiments ('convergence' compares them all)"},
      {"--vbd-rho", CLI_FLOAT, &o.vbd_rho, 0, NULL, "R",
       "--scheme vbd: Chebyshev acceleration of the iterations, in [0, 1)\n"
       "(default 0: off; 'convergence' compares both)"},
      {"--threads", CLI_INT, &o.cpu_threads, 0, NULL, "N",
       "CPU reference, and OpenCL's host solve under multigrid: threads\n"
       "per step, the same result for any N (default 1; 0: one per core)"},
      {"--mesh", CLI_STRING, &o.mesh_path, 0, NULL, "PATH.node",
       "body of 'convergence' and 'recovery' (default: the procedural\n"
       "creature), e.g. ../shared/data/armadillo/armadillo_4k.node"},
      {"--cantilever-rows", CLI_INT, &o.cantilever_rows, 2, NULL, "N",
       "'cloth_cantilever': the finer strip's rows (it also runs\n"
       "N / 2); default 16, --quick 8"},
      {"--cantilever-substeps", CLI_INT, &o.cantilever_substeps, 1, NULL, "S",
       "'cloth_cantilever': substeps per 10 ms step\n"
       "(default 200, --quick 100)"},
      {"--cantilever-iterations", CLI_INT, &o.cantilever_iterations, 1, NULL, "K",
       "'cloth_cantilever': iterations per substep\n"
       "(default 2)"},
      {"--verbose", CLI_FLAG, &o.verbose, 0, NULL, NULL,
       "print the library's informational messages"},
  };
  const cli_command c = {.name = "piola validate",
                         .options = options,
                         .option_count = CLI_OPTION_COUNT(options),
                         .value_errors = CLI_VALUE_ERROR_ONLY,
                         .help_column = 20};
  const int parsed = cli_parse_command(&c, argc, argv, print_help);
  if (parsed >= 0) {
    return parsed;
  }
  if (list) {
    for (int k = 0; k < count; ++k) {
      printf("%s\n", e[k].name);
    }
    return 0;
  }
  if (backend >= 0) {
    o.backend = backends[backend];
  }
  if (scheme >= 0) {
    o.scheme = (piola_iteration_scheme)scheme;
  }
  if (only != NULL) {
    for (const char *p = only; *p != '\0';) {
      const char *end = strchr(p, ',');
      size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
      bool known = false;
      for (int k = 0; k < count && !known; ++k) {
        known = strlen(e[k].name) == len && strncmp(p, e[k].name, len) == 0;
      }
      if (!known) {
        fprintf(stderr, "piola validate: unknown experiment '%.*s' (see --list)\n", (int)len, p);
        return 2;
      }
      p += len + (end != NULL ? 1 : 0);
    }
  }
  if (plot && out == NULL) {
    fprintf(stderr, "piola validate: --plot needs --out DIR\n");
    return 2;
  }
  if (out != NULL && mkdir(out, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "piola validate: cannot create %s: %s\n", out, strerror(errno));
    return 1;
  }
  char cpu[256];
  cpu_model_name(cpu, sizeof cpu);
  printf("piola %s validate (%s), backend %s, host CPU: %s\n", piola_version_string(),
         o.quick ? "quick" : "full", piola_backend_name(o.backend), cpu);
  validate_report r;
  validate_report_init(&r);
  validate_print_header();
  const double t0 = now_seconds();
  for (int i = 0; i < count; ++i) {
    if (!in_list(only, e[i].name)) {
      continue;
    }
    validate_run(i, &o, &r);
    validate_print_checks(&r, e[i].name);
    printf("%-12s (%s: %s; %.1f s)\n", "", e[i].paper, e[i].title, r.seconds[i]);
    fflush(stdout);
  }
  const double total = now_seconds() - t0;
  const int failed = validate_failures(&r, NULL);
  int judged = 0;
  for (int32_t i = 0; i < r.check_count; ++i) {
    judged += r.checks[i].relation != VALIDATE_INFO;
  }
  printf("device: %s\n%d checks, %d passed, %d failed, %.1f s\n", r.device, judged, judged - failed,
         failed, total);
  int status = failed > 0 ? 1 : 0;
  int io = 0;
  char json_path[4096];
  if (json == NULL && plot) {
    snprintf(json_path, sizeof json_path, "%s/validate.json", out);
    json = json_path;
  }
  if (json != NULL) {
    io |= validate_write_json(&r, &o, total, json);
  }
  if (out != NULL) {
    io |= validate_write_csv(&r, out);
  }
  if (plot && io == 0) {
    io |= run_plot(json, out);
  }
  validate_report_free(&r);
  return status != 0 || io != 0 ? 1 : 0;
}
