/* `piola bench`: times the step on a scene of N bodies and prints one table (and JSON), with
 * the figure of Bender et al. 2014 (Table 1: 100 Armadillos, 152.41 ms per step on two 6-core
 * Xeon X5650) beside it, labelled as theirs. Their figure excludes collision handling, so the
 * step is timed twice from the same state: with body-body contacts (the total) and on a second
 * world built from the same options with contacts off (the elastic solve); the difference is
 * the contact stages' cost. The cloth scene (Fig. 1 right) prints the time of the membrane
 * (elasticity) and of the bending constraints per step beside the paper's 4.11 and 2.62 ms
 * (Table 1: 40401 vertices, 80000 triangles, 12 cores), from the stage times
 * PIOLA_STAGE_SOLVE_CLOTH and PIOLA_STAGE_SOLVE_BENDING: host clock on the CPU reference, device
 * events on OpenCL (a second, profiled run from the same start, so that profiling does not slow
 * the timed steps). */
#include "commands.h"
#include "options.h"
#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAPER_MS_PER_STEP 152.41
/* Bender et al. 2014, Table 1, the cloth: 40401 vertices, 80000 triangles, 12 cores. */
#define PAPER_CLOTH_ELASTICITY_MS 4.11
#define PAPER_CLOTH_BENDING_MS 2.62

/* Kernels of a world whose device times the bench keeps, at most. */
#define BENCH_KERNELS 64

typedef struct bench_run {
  char scene[64];
  scene_kind kind;
  char device[128];
  piola_backend backend;
  int32_t bodies, vertices, tets, colors, largest_color, smallest_color, jacobi_tets;
  int32_t max_colors;
  int32_t iterations, substeps;
  float dt;
  int32_t steps;
  double ms_min, ms_median, ms_p95, ms_mean;                     /* with contacts: the total */
  bool contacts;                                                 /* body-body contacts on */
  double elastic_min, elastic_median, elastic_p95, elastic_mean; /* contacts off, same state */
  double ratio_median;       /* median over the steps of each step's total over its elastic solve */
  double contact_count_mean; /* vertex-triangle contacts per step */
  double edge_contact_mean;  /* edge-edge contacts per step */
  int32_t contact_count_max, contact_overflow_max;
  int32_t warmup;
  double tet_solves_per_second;
  int64_t device_bytes;
  int32_t active_tets, inverted_tets;
  int32_t dependent_passes;                  /* passes per step one after another (piola_stats) */
  double relative_residual, coarse_residual; /* of the last timed step (piola_stats) */
  double elastic_energy;
  double stage_ms[PIOLA_STAGE_COUNT]; /* per step, averaged over the timed steps */
  /* OpenCL with --profile: each kernel's device time and launches per step, averaged */
  int32_t kernel_count;
  const char *kernel_name[BENCH_KERNELS];
  double kernel_ms[BENCH_KERNELS], kernel_launches[BENCH_KERNELS];
  double setup_s;
  int32_t triangles, bends, cloth_colors; /* cloth constraints */
  bool cloth_split_profiled;              /* the cloth split from a second, profiled run */
  double cloth_ms, bending_ms;            /* per step: solve_cloth and solve_bending */
  int32_t colliders;
} bench_run;

/* The device time of all kernels per step, their launches per step, and the device busy: that
 * time over the step's mean wall time (OpenCL, --profile). */
static void kernel_totals(const bench_run *r, double *ms, double *launches, double *busy) {
  *ms = 0.0;
  *launches = 0.0;
  for (int32_t k = 0; k < r->kernel_count; ++k) {
    *ms += r->kernel_ms[k];
    *launches += r->kernel_launches[k];
  }
  *busy = r->ms_mean > 0.0 ? *ms / r->ms_mean : 0.0;
}

/* Bytes the elastic step's kernels read and write per step, by the device layout
 * (docs/ARCHITECTURE.md, "Data layout"): every vertex is 3 float4 (x with the inverse mass, the
 * displacement d, v), a tet record 68 bytes (int4 corners, 9-float Dm^-1, volume, 2 multipliers,
 * material), a cloth triangle 44 (int4, float4 Dm^-1 and frame, area, multiplier), a bending
 * stencil 48 (int4, 6 rest floats, multiplier). Per substep: predict reads x, v and writes v, d
 * (64 B per vertex), the multipliers are zeroed, each iteration reads every constraint's record,
 * writes its multipliers and gathers and scatters its corners (x and d read, d written: 48 B per
 * corner), the colliders read x, d and write d of every vertex, and the update reads x, d and
 * writes x, v, d (80 B per vertex). Every gather is counted, as if no cache held anything, and
 * the contact stages are left out (their traffic depends on the contacts found): an upper bound
 * of the elastic step's traffic, to compare with the device's memory bandwidth. */
static double bytes_per_step(const bench_run *r) {
  const double v = r->vertices, t = r->tets, tr = r->triangles, b = r->bends;
  const double per_iteration = (68.0 + 8.0 + 4.0 * 48.0) * t + (44.0 + 4.0 + 3.0 * 48.0) * tr +
                               (48.0 + 4.0 + 4.0 * 48.0) * b + (r->colliders > 0 ? 48.0 * v : 0.0);
  const double per_substep =
      (64.0 + 80.0) * v + 8.0 * t + 4.0 * (tr + b) + (double)r->iterations * per_iteration;
  return (double)r->substeps * per_substep;
}

/* The achieved bandwidth of the elastic step: bytes_per_step() over its median time, GB/s. */
static double achieved_gb_per_s(const bench_run *r) {
  return r->elastic_median > 0.0 ? bytes_per_step(r) / (r->elastic_median * 1e-3) / 1e9 : 0.0;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts ms[0 .. n) and stores min, median, p95 and mean. */
static void summarize(double *ms, int32_t n, double *min, double *median, double *p95,
                      double *mean) {
  qsort(ms, (size_t)n, sizeof *ms, compare_double);
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    sum += ms[i];
  }
  *min = ms[0];
  *median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  *p95 = ms[(int32_t)ceil(0.95 * n) - 1];
  *mean = sum / n;
}

/* One step of a world, waited for; ms of wall-clock time. */
static piola_status timed_step(piola_world *w, double *ms) {
  double a = now_seconds();
  piola_status s = piola_world_step(w);
  if (s == PIOLA_OK) {
    s = piola_world_finish(w);
  }
  *ms = (now_seconds() - a) * 1e3;
  return s;
}

/* Copies positions and velocities (the whole state of an elastic body) from one scene to
 * another built from the same options. */
static piola_status copy_state(const scene *from, scene *to, float *scratch) {
  piola_status s = PIOLA_OK;
  const int32_t n = from->body_vertex_count;
  for (int32_t b = 0; b < from->body_count && s == PIOLA_OK; ++b) {
    s = piola_body_get_positions(from->world, from->bodies[b], scratch, n);
    if (s == PIOLA_OK) {
      s = piola_body_set_positions(to->world, to->bodies[b], scratch, n);
    }
    if (s == PIOLA_OK) {
      s = piola_body_get_velocities(from->world, from->bodies[b], scratch, n);
    }
    if (s == PIOLA_OK) {
      s = piola_body_set_velocities(to->world, to->bodies[b], scratch, n);
    }
  }
  return s;
}

/* The cloth scene on OpenCL without --profile: the same run again with profiling on, for the
 * stage times of the cloth kinds (averaged over the timed steps). */
static int cloth_split(const scene_options *o, int32_t warmup, int32_t steps, double *cloth_ms,
                       double *bending_ms) {
  scene_options op = *o;
  op.profile = true;
  scene sc;
  if (scene_build(&op, PIOLA_BACKEND_AUTO, &sc) != PIOLA_OK) {
    return 1;
  }
  piola_status s = PIOLA_OK;
  double sum[2] = {0.0, 0.0};
  for (int32_t i = 0; i < warmup + steps && s == PIOLA_OK; ++i) {
    s = scene_before_step(&sc);
    if (s == PIOLA_OK) {
      s = piola_world_step(sc.world);
    }
    double stage[PIOLA_STAGE_COUNT];
    if (s == PIOLA_OK && i >= warmup) {
      s = piola_world_get_stage_times(sc.world, stage);
      sum[0] += stage[PIOLA_STAGE_SOLVE_CLOTH];
      sum[1] += stage[PIOLA_STAGE_SOLVE_BENDING];
    }
  }
  scene_destroy(&sc);
  *cloth_ms = sum[0] / steps;
  *bending_ms = sum[1] / steps;
  return s == PIOLA_OK ? 0 : 1;
}

/* Runs warm-up and timed steps on one scene. With contacts on, a second world from the same
 * options with contacts off is given the first one's state before each timed step and timed
 * for one step from it: the elastic solve alone, on the same state. */
static int run_one(const scene_options *o, int32_t warmup, int32_t steps, bench_run *r) {
  double t0 = now_seconds();
  scene sc, el;
  memset(&el, 0, sizeof el);
  if (scene_build(o, PIOLA_BACKEND_AUTO, &sc) != PIOLA_OK) {
    return 1;
  }
  scene_options oe = *o;
  oe.contacts = false;
  if (o->contacts && scene_build(&oe, PIOLA_BACKEND_AUTO, &el) != PIOLA_OK) {
    scene_destroy(&sc);
    return 1;
  }
  const bool elastic_world = o->contacts;
  memset(r, 0, sizeof *r);
  snprintf(r->scene, sizeof r->scene, "%s", sc.name);
  r->kind = o->scene;
  r->contacts = o->contacts;
  r->warmup = warmup;
  double *ms = malloc(sizeof *ms * (size_t)(steps > 0 ? steps : 1));
  double *ems = malloc(sizeof *ems * (size_t)(steps > 0 ? steps : 1));
  double *ratio = malloc(sizeof *ratio * (size_t)(steps > 0 ? steps : 1));
  float *scratch = malloc(sizeof *scratch * 3 * (size_t)sc.body_vertex_count);
  if (ms == NULL || ems == NULL || ratio == NULL || scratch == NULL) {
    free(ms);
    free(ems);
    free(ratio);
    free(scratch);
    scene_destroy(&sc);
    scene_destroy(&el);
    return 1;
  }
  piola_status s = PIOLA_OK;
  const bool tty = isatty(2);
  double last_progress = now_seconds();
  for (int32_t i = 0; i < warmup && s == PIOLA_OK; ++i) {
    double unused;
    s = scene_before_step(&sc);
    if (s == PIOLA_OK) {
      s = timed_step(sc.world, &unused);
    }
    if (s == PIOLA_OK && elastic_world && i < 5) {
      s = timed_step(el.world, &unused); /* builds and warms up the second world's device */
    }
    double now = now_seconds();
    if (now - last_progress > (tty ? 0.5 : 15.0)) {
      fprintf(stderr, "%s  %s x%d: warm-up step %d/%d%s", tty ? "\r" : "", sc.name, (int)o->bodies,
              (int)(i + 1), (int)warmup, tty ? "   " : "\n");
      last_progress = now;
    }
  }
  r->setup_s = now_seconds() - t0;
  double stage_sum[PIOLA_STAGE_COUNT] = {0};
  double contact_sum = 0.0, edge_sum = 0.0;
  piola_stats st;
  for (int32_t i = 0; i < steps && s == PIOLA_OK; ++i) {
    if (elastic_world) {
      s = copy_state(&sc, &el, scratch);
      if (s == PIOLA_OK) {
        s = timed_step(el.world, &ems[i]);
      }
    }
    if (s == PIOLA_OK) {
      s = scene_before_step(&sc);
    }
    if (s == PIOLA_OK) {
      s = timed_step(sc.world, &ms[i]);
    }
    if (!elastic_world) {
      ems[i] = ms[i];
    }
    double stage[PIOLA_STAGE_COUNT];
    if (s == PIOLA_OK && piola_world_get_stage_times(sc.world, stage) == PIOLA_OK) {
      for (int k = 0; k < PIOLA_STAGE_COUNT; ++k) {
        stage_sum[k] += stage[k];
      }
    }
    piola_kernel_time kt[BENCH_KERNELS];
    int32_t kernels = 0;
    if (s == PIOLA_OK && o->profile &&
        piola_world_get_kernel_times(sc.world, kt, BENCH_KERNELS, &kernels) == PIOLA_OK) {
      r->kernel_count = kernels < BENCH_KERNELS ? kernels : BENCH_KERNELS;
      for (int32_t k = 0; k < r->kernel_count; ++k) {
        r->kernel_name[k] = kt[k].name;
        r->kernel_ms[k] += kt[k].ms / steps;
        r->kernel_launches[k] += (double)kt[k].launches / steps;
      }
    }
    if (s == PIOLA_OK && o->contacts) {
      s = piola_world_get_stats(sc.world, &st);
      if (s == PIOLA_OK) {
        contact_sum += st.contact_count;
        edge_sum += st.edge_contact_count;
        if (st.contact_count > r->contact_count_max) {
          r->contact_count_max = st.contact_count;
        }
        if (st.contact_overflow > r->contact_overflow_max) {
          r->contact_overflow_max = st.contact_overflow;
        }
      }
    }
    double now = now_seconds();
    if (now - last_progress > (tty ? 0.5 : 15.0)) {
      fprintf(stderr, "%s  %s x%d: step %d/%d, %.2f ms%s", tty ? "\r" : "", sc.name, (int)o->bodies,
              (int)(i + 1), (int)steps, ms[i], tty ? "   " : "\n");
      last_progress = now;
    }
  }
  if (tty) {
    fprintf(stderr, "\r%60s\r", "");
  }
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(sc.world, &st);
  }
  free(scratch);
  scene_destroy(&el);
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola bench: step failed: %s\n", piola_status_string(s));
    free(ms);
    free(ems);
    free(ratio);
    scene_destroy(&sc);
    return 1;
  }
  /* Each step against its own elastic solve, timed just before it from the same state: the
   * ratio of the pair shares the machine's load of that moment, which the difference of two
   * medians over many seconds does not. */
  for (int32_t i = 0; i < steps; ++i) {
    ratio[i] = ems[i] > 0.0 ? ms[i] / ems[i] : 1.0;
  }
  double unused[3];
  summarize(ratio, steps, &unused[0], &r->ratio_median, &unused[1], &unused[2]);
  free(ratio);
  summarize(ms, steps, &r->ms_min, &r->ms_median, &r->ms_p95, &r->ms_mean);
  summarize(ems, steps, &r->elastic_min, &r->elastic_median, &r->elastic_p95, &r->elastic_mean);
  r->contact_count_mean = contact_sum / steps;
  r->edge_contact_mean = edge_sum / steps;
  r->backend = st.backend;
  snprintf(r->device, sizeof r->device, "%s", st.device_name);
  r->bodies = st.body_count;
  r->vertices = st.vertex_count;
  r->tets = st.tet_count;
  r->colors = st.color_count;
  r->largest_color = st.largest_color;
  r->smallest_color = st.smallest_color;
  r->jacobi_tets = st.jacobi_tets;
  r->max_colors = o->max_colors;
  r->iterations = o->iterations;
  r->substeps = scene_substeps(o);
  r->dt = o->dt;
  r->steps = steps;
  r->tet_solves_per_second =
      (double)st.tet_count * o->iterations * scene_substeps(o) / (r->ms_median * 1e-3);
  r->device_bytes = st.device_bytes;
  r->active_tets = st.active_tets;
  r->inverted_tets = st.inverted_tets;
  r->dependent_passes = st.dependent_passes;
  r->relative_residual = st.relative_residual;
  r->coarse_residual = st.coarse_residual;
  r->elastic_energy = st.elastic_energy;
  for (int k = 0; k < PIOLA_STAGE_COUNT; ++k) {
    r->stage_ms[k] = stage_sum[k] / steps;
  }
  r->triangles = st.triangle_count;
  r->bends = st.bend_count;
  r->colliders = st.collider_count;
  r->cloth_colors = st.cloth_color_count;
  r->cloth_ms = r->stage_ms[PIOLA_STAGE_SOLVE_CLOTH];
  r->bending_ms = r->stage_ms[PIOLA_STAGE_SOLVE_BENDING];
  free(ms);
  free(ems);
  scene_destroy(&sc);
  if (o->scene == SCENE_CLOTH && st.backend == PIOLA_BACKEND_OPENCL && !o->profile) {
    r->cloth_split_profiled = true;
    if (cloth_split(o, warmup, steps, &r->cloth_ms, &r->bending_ms) != 0) {
      fprintf(stderr, "piola bench: the profiled cloth run failed\n");
      return 1;
    }
  }
  return 0;
}

static void print_header(void) {
  printf("%-12s %6s %8s %9s %6s %5s %4s %-7s %9s %9s %9s %12s %9s %7s %6s %10s %10s %9s %9s "
         "%8s %7s %7s %9s %9s %9s\n",
         "scene", "bodies", "vertices", "tets", "colors", "iters", "sub", "backend", "min ms",
         "median ms", "p95 ms", "tet solves/s", "device MB", "active", "inv", "elastic ms",
         "contact ms", "x elastic", "contacts", "MB/step", "GB/s", "passes", "edge cts", "residual",
         "coarse");
}

static void print_row(const bench_run *r) {
  printf("%-12s %6d %8d %9d %6d %5d %4d %-7s %9.3f %9.3f %9.3f %12.3e %9.1f %6.1f%% %6d %10.3f "
         "%10.3f %9.3f %9.0f %8.1f %7.1f %7d %9.0f %9.2e %9.2e\n",
         r->scene, (int)r->bodies, (int)r->vertices, (int)r->tets, (int)r->colors,
         (int)r->iterations, (int)r->substeps, piola_backend_name(r->backend), r->ms_min,
         r->ms_median, r->ms_p95, r->tet_solves_per_second, (double)r->device_bytes / 1048576.0,
         r->tets > 0 ? 100.0 * r->active_tets / r->tets : 0.0, (int)r->inverted_tets,
         r->elastic_median, r->ms_median - r->elastic_median, r->ratio_median,
         r->contact_count_mean, bytes_per_step(r) / 1e6, achieved_gb_per_s(r),
         (int)r->dependent_passes, r->edge_contact_mean, r->relative_residual, r->coarse_residual);
}

static void write_run_fields(FILE *f, const bench_run *r, const char *indent) {
  fprintf(f, "%s\"scene\": \"%s\",\n", indent, r->scene);
  fprintf(f, "%s\"scene_kind\": \"%s\",\n", indent, scene_kind_name(r->kind));
  fprintf(f, "%s\"backend\": \"%s\",\n", indent, piola_backend_name(r->backend));
  fprintf(f, "%s\"device\": \"%s\",\n", indent, r->device);
  fprintf(f, "%s\"bodies\": %d,\n%s\"vertices\": %d,\n%s\"tets\": %d,\n", indent, (int)r->bodies,
          indent, (int)r->vertices, indent, (int)r->tets);
  fprintf(f, "%s\"colors\": %d,\n%s\"largest_color\": %d,\n%s\"smallest_color\": %d,\n", indent,
          (int)r->colors, indent, (int)r->largest_color, indent, (int)r->smallest_color);
  fprintf(f, "%s\"max_colors\": %d,\n%s\"jacobi_tets\": %d,\n", indent, (int)r->max_colors, indent,
          (int)r->jacobi_tets);
  fprintf(f, "%s\"iterations\": %d,\n%s\"substeps\": %d,\n%s\"dt\": %g,\n%s\"steps\": %d,\n",
          indent, (int)r->iterations, indent, (int)r->substeps, indent, (double)r->dt, indent,
          (int)r->steps);
  fprintf(f,
          "%s\"ms_per_step\": {\"min\": %.6f, \"median\": %.6f, \"p95\": %.6f, \"mean\": "
          "%.6f},\n",
          indent, r->ms_min, r->ms_median, r->ms_p95, r->ms_mean);
  fprintf(f, "%s\"warmup\": %d,\n%s\"contacts\": %s,\n", indent, (int)r->warmup, indent,
          r->contacts ? "true" : "false");
  fprintf(f,
          "%s\"elastic_ms_per_step\": {\"min\": %.6f, \"median\": %.6f, \"p95\": %.6f, "
          "\"mean\": %.6f},\n",
          indent, r->elastic_min, r->elastic_median, r->elastic_p95, r->elastic_mean);
  fprintf(f, "%s\"contact_ms_per_step\": {\"median\": %.6f, \"mean\": %.6f},\n", indent,
          r->ms_median - r->elastic_median, r->ms_mean - r->elastic_mean);
  fprintf(f, "%s\"total_over_elastic_median\": %.6f,\n", indent, r->ratio_median);
  fprintf(f, "%s\"contact_count\": {\"mean\": %.3f, \"max\": %d},\n", indent, r->contact_count_mean,
          (int)r->contact_count_max);
  fprintf(f, "%s\"contact_overflow_max\": %d,\n", indent, (int)r->contact_overflow_max);
  fprintf(f, "%s\"edge_contact_count\": {\"mean\": %.3f},\n", indent, r->edge_contact_mean);
  fprintf(f, "%s\"tet_solves_per_second\": %.6e,\n", indent, r->tet_solves_per_second);
  fprintf(f, "%s\"device_bytes\": %lld,\n", indent, (long long)r->device_bytes);
  fprintf(f, "%s\"bytes_per_step\": %.0f,\n%s\"achieved_gb_per_s\": %.3f,\n", indent,
          bytes_per_step(r), indent, achieved_gb_per_s(r));
  fprintf(f, "%s\"dependent_passes\": %d,\n", indent, (int)r->dependent_passes);
  fprintf(f, "%s\"relative_residual\": %.6e,\n", indent, r->relative_residual);
  fprintf(f, "%s\"coarse_residual\": %.6e,\n", indent, r->coarse_residual);
  fprintf(f, "%s\"active_tets\": %d,\n%s\"inverted_tets\": %d,\n", indent, (int)r->active_tets,
          indent, (int)r->inverted_tets);
  fprintf(f, "%s\"elastic_energy_j\": %.9g,\n", indent, r->elastic_energy);
  fprintf(f, "%s\"setup_s\": %.3f,\n", indent, r->setup_s);
  fprintf(f, "%s\"stage_ms\": {", indent);
  for (int k = 0; k < PIOLA_STAGE_COUNT; ++k) {
    fprintf(f, "%s\"%s\": %.6f", k > 0 ? ", " : "", piola_stage_name((piola_stage)k),
            r->stage_ms[k]);
  }
  fprintf(f, "},\n");
  if (r->kernel_count > 0) {
    double kernel_ms, launches, busy;
    kernel_totals(r, &kernel_ms, &launches, &busy);
    fprintf(f, "%s\"kernel_ms_per_step\": %.6f,\n", indent, kernel_ms);
    fprintf(f, "%s\"kernel_launches_per_step\": %.3f,\n", indent, launches);
    fprintf(f, "%s\"device_busy\": %.6f,\n", indent, busy);
    fprintf(f, "%s\"kernel_ms\": {", indent);
    for (int32_t k = 0, first = 1; k < r->kernel_count; ++k) {
      if (r->kernel_launches[k] > 0.0) {
        fprintf(f, "%s\"%s\": {\"ms\": %.6f, \"launches\": %.3f}", first ? "" : ", ",
                r->kernel_name[k], r->kernel_ms[k], r->kernel_launches[k]);
        first = 0;
      }
    }
    fprintf(f, "},\n");
  }
  if (r->kind == SCENE_CLOTH) {
    fprintf(f, "%s\"triangles\": %d,\n%s\"bends\": %d,\n%s\"cloth_colors\": %d,\n", indent,
            (int)r->triangles, indent, (int)r->bends, indent, (int)r->cloth_colors);
    fprintf(f, "%s\"elasticity_ms_per_step\": %.6f,\n%s\"bending_ms_per_step\": %.6f,\n", indent,
            r->cloth_ms, indent, r->bending_ms);
    fprintf(f, "%s\"cloth_split_from\": \"%s\",\n", indent,
            r->cloth_split_profiled ? "a second run with OpenCL profiling" : "the timed run");
    fprintf(f,
            "%s\"paper_elasticity_ms\": %.2f,\n%s\"paper_bending_ms\": %.2f,\n%s\"paper_cloth\": "
            "\"Bender et al. 2014, Table 1: cloth of 40401 vertices, 80000 triangles, 12 cores "
            "(their hardware)\",\n",
            indent, PAPER_CLOTH_ELASTICITY_MS, indent, PAPER_CLOTH_BENDING_MS, indent);
  }
  fprintf(f, "%s\"paper_ms_per_step\": %.2f", indent, PAPER_MS_PER_STEP);
}

static int write_json(const char *path, const bench_run *runs, int n, const char *cpu) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "piola bench: cannot write %s\n", path);
    return 1;
  }
  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  fprintf(f, "{\n  \"piola_version\": \"%s\",\n  \"date\": \"%s\",\n  \"host_cpu\": \"%s\",\n",
          piola_version_string(), date, cpu);
  fprintf(f, "  \"paper\": \"Bender et al. 2014, Table 1: 100 Armadillos, 5 iterations, "
             "dt = 5 ms, 152.41 ms/step on two 6-core Xeon X5650 (their hardware)\",\n");
  if (n > 0) {
    write_run_fields(f, &runs[0], "  "); /* the first run's fields at the top level too */
    fprintf(f, ",\n");
  }
  fprintf(f, "  \"runs\": [\n");
  for (int i = 0; i < n; ++i) {
    fprintf(f, "    {\n");
    write_run_fields(f, &runs[i], "      ");
    fprintf(f, "\n    }%s\n", i + 1 < n ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  int bad = ferror(f);
  bad |= fclose(f);
  if (bad) {
    fprintf(stderr, "piola bench: error writing %s\n", path);
    return 1;
  }
  return 0;
}

static void print_help(const cli_command *c) {
  printf("Usage: piola bench [options]\n"
         "Times the step on N bodies and prints ms per step (min / median / p95 over the timed\n"
         "steps, after a warm-up), tet solves per second and device memory. With body-body\n"
         "contacts on (the default) the step is also timed on a second world built from the same\n"
         "options with contacts off, given the first one's state before each step: 'elastic ms'\n"
         "(its median), 'contact ms' (the median total minus that: broad phase, narrow phase\n"
         "and contact solve), 'x elastic' (the median over the steps of each step's total over\n"
         "its own elastic solve, timed just before it: steadier on a shared machine than the\n"
         "two medians) and 'contacts' (vertex-triangle contacts per step, mean). The\n"
         "paper's figure excludes collision handling: compare it with 'elastic ms'. 'MB/step'\n"
         "is the traffic of the elastic step's kernels by the device layout, every gather counted\n"
         "(an upper bound: no cache assumed; contact stages left out), and 'GB/s' that over the\n"
         "elastic median: compare it with the device's memory bandwidth. 'passes' is the\n"
         "solver passes per step that must run one after another (piola_stats.\n"
         "dependent_passes): a GPU's step is at least that many times a pass's latency.\n"
         "--profile adds the\n"
         "time of each stage and, on OpenCL, of each kernel with its launches per step, and\n"
         "'device busy': the kernels' device time over the step's wall time (well under\n"
         "100%%: the device waits for launches, not for work).\n\n");
  cli_print_options(c);
  printf("\n");
  scene_print_help();
}

int command_bench(int argc, char **argv) {
  scene_options o = scene_default_options();
  int32_t steps = 50, warmup = -1, max_bodies = 10000;
  bool scaling = false;
  const char *json = NULL;
  const cli_option options[] = {
      {"--steps", CLI_INT, &steps, 1, NULL, "N", "timed steps (default 50)"},
      {"--warmup", CLI_INT, &warmup, 0, NULL, "N",
       "untimed steps first (default 5; funnel scene 200, so that the\n"
       "timed steps see the bodies piling up in the funnel)"},
      {"--scaling", CLI_FLAG, &scaling, 0, NULL, NULL,
       "run 1, 10, 100, 1000 bodies, then more while memory allows"},
      {"--max-bodies", CLI_INT, &max_bodies, 1, NULL, "N",
       "largest body count of --scaling (default 10000)"},
      {"--json", CLI_STRING, &json, 0, NULL, "FILE", "write the results as JSON"},
  };
  const cli_command c = {.name = "piola bench",
                         .options = options,
                         .option_count = CLI_OPTION_COUNT(options),
                         .scene = &o,
                         .value_errors = CLI_VALUE_ERROR_THEN_USAGE,
                         .help_column = 18};
  const int parsed = cli_parse_command(&c, argc, argv, print_help);
  if (parsed >= 0) {
    return parsed;
  }
  if (warmup < 0) {
    warmup = o.scene == SCENE_FUNNEL ? 200 : 5;
  }
  if (o.scene == SCENE_CLOTH) {
    o.contacts = false; /* cloth takes no part in body contact */
    if (scaling) {
      fprintf(stderr, "piola bench: --scaling is for the tet scenes (see --cloth-cells)\n");
      return 2;
    }
  }
  char cpu[256];
  cpu_model_name(cpu, sizeof cpu);
  bench_run runs[16];
  int n = 0;
  printf("piola %s bench, host CPU: %s\n", piola_version_string(), cpu);
  printf("scene: %s, %d warm-up steps; body-body contacts %s\n", scene_kind_name(o.scene),
         (int)warmup, o.contacts ? "on" : "off");
  print_header();
  int32_t sizes[16] = {0};
  int nsizes = 0;
  if (scaling) {
    for (int32_t b = 1; b <= max_bodies && nsizes < 16; b *= 10) {
      sizes[nsizes++] = b;
      if (b >= 1000 && b * 3 <= max_bodies && nsizes < 16) {
        sizes[nsizes++] = b * 3;
      }
    }
  } else {
    sizes[nsizes++] = o.bodies;
  }
  int status = 0;
  for (int i = 0; i < nsizes; ++i) {
    scene_options oi = o;
    oi.bodies = sizes[i];
    if (run_one(&oi, warmup, steps, &runs[n]) != 0) {
      if (scaling && i > 0) {
        fprintf(stderr, "piola bench: stopping the scaling run at %d bodies\n", (int)sizes[i]);
        break;
      }
      status = 1;
      break;
    }
    print_row(&runs[n]);
    fflush(stdout);
    ++n;
  }
  if (n > 0 && o.scene == SCENE_CLOTH) {
    const bench_run *r = &runs[0];
    printf("cloth: %d x %d cells, %d vertices, %d triangles, %d bending stencils, %d colors; "
           "%d iterations, %d substep(s), dt = %g s; median step %.3f ms on %s\n",
           (int)o.cloth_cells, (int)o.cloth_cells, (int)r->vertices, (int)r->triangles,
           (int)r->bends, (int)r->cloth_colors, (int)r->iterations, (int)r->substeps, (double)r->dt,
           r->ms_median, r->device);
    printf("%-28s %12s %40s %8s\n", "per step", "ours ms",
           "theirs ms (Bender et al. 2014, Table 1)", "ratio");
    printf("%-28s %12.3f %40.2f %8.2f\n", "elasticity (solve_cloth)", r->cloth_ms,
           PAPER_CLOTH_ELASTICITY_MS, r->cloth_ms / PAPER_CLOTH_ELASTICITY_MS);
    printf("%-28s %12.3f %40.2f %8.2f\n", "bending (solve_bending)", r->bending_ms,
           PAPER_CLOTH_BENDING_MS, r->bending_ms / PAPER_CLOTH_BENDING_MS);
    printf("theirs: 40401 vertices, 80000 triangles, 12 cores -- their figures on their "
           "hardware, not measured here. Ours: %s%s.\n",
           r->backend == PIOLA_BACKEND_OPENCL ? "device time of the kernels" : "host time",
           r->cloth_split_profiled ? ", from a second run of the same steps with OpenCL "
                                     "profiling (the timed run is not profiled)"
                                   : "");
  } else if (n > 0) {
    printf("Paper (Bender et al. 2014, Table 1): 100 Armadillos, 5 iterations, dt = 5 ms: "
           "%.2f ms/step on two 6-core Xeon X5650 -- their figure on their hardware, not "
           "measured here.\n",
           PAPER_MS_PER_STEP);
    printf("device: %s; 'active' = tets whose projection did work in the last substep, "
           "'inv' = tets inverted at the end.\n",
           runs[0].device);
    printf("min/median/p95 ms: the whole step (contacts %s); 'elastic ms': the median step from "
           "the same states with contacts off (the paper's figure excludes collision handling); "
           "'contact ms': the difference; 'x elastic': the median of each step's total over its "
           "elastic step; 'contacts': vertex-triangle contacts per step.\n",
           o.contacts ? "on" : "off");
  }
  if (o.profile) {
    for (int i = 0; i < n; ++i) {
      printf("stages of %s x%d, ms per step (contacts %s):", runs[i].scene, (int)runs[i].bodies,
             runs[i].contacts ? "on" : "off");
      for (int k = 0; k < PIOLA_STAGE_COUNT; ++k) {
        printf(" %s %.3f", piola_stage_name((piola_stage)k), runs[i].stage_ms[k]);
      }
      printf("\n");
      if (runs[i].kernel_count > 0) {
        printf("kernels of %s x%d, ms per step (launches per step):", runs[i].scene,
               (int)runs[i].bodies);
        for (int32_t k = 0; k < runs[i].kernel_count; ++k) {
          if (runs[i].kernel_launches[k] > 0.0) {
            printf(" %s %.3f (%.0f)", runs[i].kernel_name[k], runs[i].kernel_ms[k],
                   runs[i].kernel_launches[k]);
          }
        }
        printf("\n");
        double kernel_ms, launches, busy;
        kernel_totals(&runs[i], &kernel_ms, &launches, &busy);
        printf("device busy of %s x%d: %.3f ms of kernels in a %.3f ms step (mean), %.0f%%; %.0f "
               "launches, %.2f us of device time each\n",
               runs[i].scene, (int)runs[i].bodies, kernel_ms, runs[i].ms_mean, 100.0 * busy,
               launches, launches > 0.0 ? 1000.0 * kernel_ms / launches : 0.0);
      }
    }
  }
  if (scaling && n >= 2) {
    for (int i = 1; i < n; ++i) {
      printf("scaling %d -> %d bodies: time x%.2f for tets x%.2f\n", (int)runs[i - 1].bodies,
             (int)runs[i].bodies, runs[i].ms_median / runs[i - 1].ms_median,
             (double)runs[i].tets / runs[i - 1].tets);
    }
  }
  if (json != NULL && n > 0) {
    status |= write_json(json, runs, n, cpu);
  }
  return status;
}
