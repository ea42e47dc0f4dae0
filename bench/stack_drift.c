/* piola_stack_drift: how far a box resting on another box slides (issue "stacks stand").
 *
 * Two 0.3 m boxes of 6 x 6 x 6 cells (Neo-Hookean, 1000 kg/m^3, nu 0.3), the lower one on the
 * ground, the upper one dropped onto it with its centre `offset` off the lower one's along x; both
 * body contact and the ground with friction 0.5. For each offset it prints where the upper box's
 * centre is, relative to where it was at the first touch, 1 s after it, and how far it moves over
 * the 2 s that start 0.5 s after the first touch (the landing's bounces over): from start to end
 * (drift) and the largest distance from the start at any step (largest move: a box that rocks
 * may end near where it started); "off" where the upper box ended below the lower box's top (it
 * slid or tipped off), and the most tets inverted (det F <= 0) at the end of any step after the
 * touch (none: no tet of either box is pressed flat). With --pyramid it stacks six such boxes (3,
 * 2, 1; 2 cm apart in a row, each row placed --drop above the one under it) and prints, per box,
 * how far its centre moves over 5 s. --check makes it exit 1 where a drift or a largest move (a
 * pyramid box's move) exceeds 5 mm, a box ends off or a tet inverts. Public API only.
 *
 *   piola_stack_drift [--backend cpu|opencl] [--youngs PA] [--iterations N] [--substeps N]
 *                     [--drop M] [--damping 1/S] [--material-damping S]
 *                     [--offsets A,B,...] [--pyramid] [--check]
 *
 * --damping is the world's velocity damping (1/s), --material-damping the boxes' material
 * damping (piola_material.damping, s).
 */
#include "piola/piola.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
  piola_backend backend;
  float youngs, drop, damping, material_damping;
  int32_t iterations, substeps;
  float offsets[16];
  int offset_count;
  int pyramid, check;
} options;

/* --check: the largest drift (m) a box may show. */
#define STACK_DRIFT_LIMIT 0.005

typedef struct outcome {
  double at_touch, after_1s, drift_2s; /* m, the upper box's centre along x */
  double largest_2s;                   /* m, its largest distance along x from the 2 s's start */
  int touch_step;
  int off;      /* ended below the lower box's top */
  int inverted; /* the most tets inverted (det F <= 0) at the end of any step after the touch */
} outcome;

static double centre_x(piola_world *w, piola_body_id b, float *x, int32_t n, double *min_y) {
  piola_body_get_positions(w, b, x, n);
  double c = 0.0;
  *min_y = INFINITY;
  for (int32_t i = 0; i < n; ++i) {
    c += x[3 * i];
    *min_y = fmin(*min_y, x[3 * i + 1]);
  }
  return c / n;
}

/* The world both scenes use (the options' settings, friction 0.5, the ground plane) and the
 * box mesh and material of their boxes. */
static piola_status stack_world(const options *o, piola_world **w, piola_tet_mesh *m,
                                piola_material *mat) {
  piola_world_def def = piola_default_world_def();
  def.backend = o->backend;
  def.substeps = o->substeps;
  def.iterations = o->iterations;
  def.damping = o->damping;
  def.contact_friction = 0.5f;
  *w = NULL;
  piola_status s = piola_world_create(&def, w);
  if (s != PIOLA_OK) {
    return s;
  }
  const int32_t cells[3] = {6, 6, 6};
  const float size[3] = {0.3f, 0.3f, 0.3f}, up[3] = {0.0f, 1.0f, 0.0f};
  s = piola_world_add_plane(*w, up, 0.0f, 0.5f, NULL);
  if (s == PIOLA_OK) {
    s = piola_mesh_make_box(cells, size, m);
  }
  if (s != PIOLA_OK) {
    piola_world_destroy(*w);
    *w = NULL;
    return s;
  }
  *mat = piola_default_material();
  mat->model = PIOLA_MODEL_NEOHOOKEAN;
  mat->youngs_modulus = o->youngs;
  mat->damping = o->material_damping;
  return PIOLA_OK;
}

static piola_status run(const options *o, float offset, outcome *out) {
  piola_world *w;
  piola_tet_mesh m;
  piola_material mat;
  piola_status s = stack_world(o, &w, &m, &mat);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_body_id lower, upper;
  const float at_lower[3] = {-0.15f, 0.0f, -0.15f};
  const float at_upper[3] = {-0.15f + offset, 0.3f + o->drop, -0.15f};
  s = piola_world_add_tet_body(w, &m, &mat, at_lower, &lower);
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(w, &m, &mat, at_upper, &upper);
  }
  const int32_t n = m.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  if (s == PIOLA_OK && x == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* The first touch: the upper box's lowest vertex within 1 cm of the lower box's top. */
  const int steps_after = (int)lround(2.5 / 0.005);
  out->touch_step = -1;
  double start_2s = 0.0, min_y = 0.0;
  for (int step = 0; s == PIOLA_OK; ++step) {
    s = piola_world_step(w);
    const double c = centre_x(w, upper, x, n, &min_y);
    if (out->touch_step < 0 && min_y < 0.31) {
      out->touch_step = step;
      out->at_touch = c;
    }
    if (out->touch_step < 0 && step > 2000) {
      break; /* never landed */
    }
    if (out->touch_step >= 0) {
      piola_stats st;
      if (s == PIOLA_OK) {
        s = piola_world_get_stats(w, &st);
      }
      out->inverted =
          s == PIOLA_OK && st.inverted_tets > out->inverted ? st.inverted_tets : out->inverted;
      const int since = step - out->touch_step;
      if (since == 200) {
        out->after_1s = c - out->at_touch;
      }
      if (since == 100) {
        start_2s = c;
      }
      if (since >= 100) {
        out->largest_2s = fmax(out->largest_2s, fabs(c - start_2s));
      }
      if (since == steps_after) {
        out->drift_2s = c - start_2s;
        out->off = min_y < 0.25;
        break;
      }
    }
  }
  free(x);
  piola_mesh_free(&m);
  piola_world_destroy(w);
  return s;
}

static int parse(int argc, char **argv, options *o) {
  o->backend = PIOLA_BACKEND_CPU_REFERENCE;
  o->youngs = 1e6f;
  o->drop = 0.15f;
  o->damping = 0.0f;
  o->material_damping = 0.0f;
  o->iterations = 5;
  o->substeps = 2;
  o->offset_count = 0;
  o->pyramid = 0;
  o->check = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--pyramid") == 0 || strcmp(a, "--check") == 0) {
      *(a[2] == 'p' ? &o->pyramid : &o->check) = 1;
      continue;
    }
    if (v == NULL) {
      fprintf(stderr, "piola_stack_drift: %s needs a value\n", a);
      return 0;
    }
    ++i;
    if (strcmp(a, "--backend") == 0) {
      o->backend = strcmp(v, "opencl") == 0 ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE;
    } else if (strcmp(a, "--youngs") == 0) {
      o->youngs = (float)atof(v);
    } else if (strcmp(a, "--drop") == 0) {
      o->drop = (float)atof(v);
    } else if (strcmp(a, "--damping") == 0) {
      o->damping = (float)atof(v);
    } else if (strcmp(a, "--material-damping") == 0) {
      o->material_damping = (float)atof(v);
    } else if (strcmp(a, "--iterations") == 0) {
      o->iterations = atoi(v);
    } else if (strcmp(a, "--substeps") == 0) {
      o->substeps = atoi(v);
    } else if (strcmp(a, "--offsets") == 0) {
      char *end = NULL;
      const char *p = v;
      while (o->offset_count < 16) {
        const double f = strtod(p, &end);
        if (end == p) {
          break;
        }
        o->offsets[o->offset_count++] = (float)f;
        p = *end == ',' ? end + 1 : end;
      }
    } else {
      fprintf(stderr, "piola_stack_drift: unknown option %s\n", a);
      return 0;
    }
  }
  if (o->offset_count == 0) {
    const float standard[5] = {0.0f, 0.03f, 0.06f, 0.09f, 0.12f}; /* 0 to 40% of the width */
    memcpy(o->offsets, standard, sizeof standard);
    o->offset_count = 5;
  }
  return 1;
}

/* The pyramid: six boxes, rows of 3, 2 and 1, each row --drop above the one under it; per box
 * the largest distance its centre moves from its place 0.5 s after the start over the next 5 s. */
static piola_status pyramid(const options *o, int *failed) {
  piola_world *w;
  piola_tet_mesh m;
  piola_material mat;
  piola_status s = stack_world(o, &w, &m, &mat);
  if (s != PIOLA_OK) {
    return s;
  }
  piola_body_id box[6];
  const float pitch = 0.32f;
  const float cx[6] = {-pitch, 0.0f, pitch, -0.5f * pitch, 0.5f * pitch, 0.0f};
  const int row[6] = {0, 0, 0, 1, 1, 2};
  for (int i = 0; i < 6 && s == PIOLA_OK; ++i) {
    const float at[3] = {cx[i] - 0.15f, (float)row[i] * (0.3f + o->drop), -0.15f};
    s = piola_world_add_tet_body(w, &m, &mat, at, &box[i]);
  }
  const int32_t n = m.vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  double start[6][3], moved[6];
  int inverted = 0; /* the most tets inverted at the end of a step */
  memset(moved, 0, sizeof moved);
  if (s == PIOLA_OK && x == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int step = 0; step < 1100 && s == PIOLA_OK; ++step) {
    s = piola_world_step(w);
    piola_stats st;
    if (s == PIOLA_OK) {
      s = piola_world_get_stats(w, &st);
    }
    inverted = s == PIOLA_OK && st.inverted_tets > inverted ? st.inverted_tets : inverted;
    for (int i = 0; i < 6 && s == PIOLA_OK && step >= 99; ++i) {
      s = piola_body_get_positions(w, box[i], x, n);
      double c[3] = {0.0, 0.0, 0.0};
      for (int32_t v = 0; v < n; ++v) {
        for (int k = 0; k < 3; ++k) {
          c[k] += x[3 * v + k] / n;
        }
      }
      if (step == 99) {
        memcpy(start[i], c, sizeof c);
      }
      const double dx = c[0] - start[i][0], dy = c[1] - start[i][1], dz = c[2] - start[i][2];
      moved[i] = fmax(moved[i], sqrt(dx * dx + dy * dy + dz * dz));
    }
  }
  if (s == PIOLA_OK) {
    printf(
        "pyramid of six boxes (rows 3, 2, 1): the largest distance each centre moves over 5 s\n");
    for (int i = 0; i < 6; ++i) {
      printf("  row %d, box at x %+.2f: %.4f m\n", row[i], (double)cx[i], moved[i]);
      *failed |= !(moved[i] <= STACK_DRIFT_LIMIT);
    }
    printf("  tets inverted at the end of a step: %d at most\n", inverted);
    *failed |= inverted > 0;
  }
  free(x);
  piola_mesh_free(&m);
  piola_world_destroy(w);
  return s;
}

int main(int argc, char **argv) {
  options o;
  if (!parse(argc, argv, &o)) {
    return 2;
  }
  int failed = 0;
  if (o.pyramid) {
    const piola_status s = pyramid(&o, &failed);
    if (s != PIOLA_OK) {
      fprintf(stderr, "piola_stack_drift: %s\n", piola_status_string(s));
      return 1;
    }
    if (o.check) {
      printf("pyramid: %s (every box within %.3f m, no tet inverted)\n",
             failed ? "FAILED" : "stands", STACK_DRIFT_LIMIT);
    }
    return o.check && failed;
  }
  printf("box on box: E %.3g Pa, %d iterations, %d substeps, drop %.3f m, damping %.3g 1/s, "
         "material damping %.3g s, %s\n",
         (double)o.youngs, (int)o.iterations, (int)o.substeps, (double)o.drop, (double)o.damping,
         (double)o.material_damping,
         o.backend == PIOLA_BACKEND_OPENCL ? "OpenCL" : "CPU reference");
  printf("%8s %10s %16s %22s %14s %9s\n", "offset", "overhang", "moved 1 s after",
         "drift 0.5 s .. 2.5 s", "largest move", "inverted");
  for (int i = 0; i < o.offset_count; ++i) {
    outcome r;
    memset(&r, 0, sizeof r);
    const piola_status s = run(&o, o.offsets[i], &r);
    if (s != PIOLA_OK) {
      fprintf(stderr, "piola_stack_drift: %s\n", piola_status_string(s));
      return 1;
    }
    printf("%8.3f %9.0f%% %16.4f %22.4f %14.4f %9d%s\n", (double)o.offsets[i],
           100.0 * (double)o.offsets[i] / 0.3, r.after_1s, r.drift_2s, r.largest_2s,
           (int)r.inverted, r.off ? "  off: it ended below the lower box's top" : "");
    failed |= r.off || !(fabs(r.drift_2s) <= STACK_DRIFT_LIMIT) ||
              !(r.largest_2s <= STACK_DRIFT_LIMIT) || r.inverted > 0;
  }
  if (o.check) {
    printf("box on box: %s (every drift and largest move within %.3f m, no tet inverted)\n",
           failed ? "FAILED" : "stands", STACK_DRIFT_LIMIT);
  }
  return o.check && failed;
}
