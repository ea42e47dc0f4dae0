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
 * pyramid box's move) exceeds 5 mm, a box ends off or a tet inverts. With --slope it puts a 0.2 m
 * box (2 x 2 x 2 cells, E 1 MPa) on a slab of another body (2.4 x 0.1 x 0.4 m, 24 x 1 x 4 cells,
 * every vertex pinned) tilted by 20 degrees, for each contact friction of --frictions (default
 * 0, 0.1, 0.3, 0.45, 0.8), and prints how far its centre moves in 1 s against Coulomb's
 * g (sin 20 - mu cos 20) / 2 (0 where mu >= tan 20 = 0.364: it sticks), as
 * friction_on_inclined_plane does for a plane collider; --check then fails where a sliding box is
 * more than 10% off or a sticking one moves more than 1 cm. Public API only.
 *
 *   piola_stack_drift [--backend cpu|opencl] [--scheme gauss-seidel|vbd|multigrid]
 *                     [--youngs PA] [--iterations N] [--substeps N]
 *                     [--drop M] [--damping 1/S] [--material-damping S] [--vbd-rho R]
 *                     [--offsets A,B,...] [--ledge] [--pyramid] [--slope]
 *                     [--frictions A,B,...]
 *                     [--check]
 *
 * --ledge puts the upper box on a rigid box collider of the lower box's shape and friction
 * instead: the same landing without the lower body's elasticity or the body contacts.
 *
 * --damping is the world's velocity damping (1/s), --material-damping the boxes' material
 * damping (piola_material.damping, s), --vbd-rho vertex block descent's Chebyshev acceleration
 * (piola_world_def.vbd_chebyshev_rho).
 */
#include "piola/piola.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
  piola_backend backend;
  piola_iteration_scheme scheme;
  float youngs, drop, damping, material_damping, vbd_rho;
  int32_t iterations, substeps;
  float offsets[16];
  int offset_count;
  float frictions[16];
  int friction_count;
  int pyramid, slope, ledge, check;
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

/* The world settings of every scene: the options' backend, scheme, steps and damping, contact
 * friction mu. */
static piola_world_def stack_def(const options *o, float mu) {
  piola_world_def def = piola_default_world_def();
  def.backend = o->backend;
  def.iteration_scheme = o->scheme;
  def.substeps = o->substeps;
  def.iterations = o->iterations;
  def.damping = o->damping;
  def.vbd_chebyshev_rho = o->vbd_rho;
  def.contact_friction = mu;
  return def;
}

/* The world both stacking scenes use (friction 0.5, the ground plane) and the box mesh and
 * material of their boxes. */
static piola_status stack_world(const options *o, piola_world **w, piola_tet_mesh *m,
                                piola_material *mat) {
  piola_world_def def = stack_def(o, 0.5f);
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
  if (o->ledge) { /* a rigid box of the lower box's shape and friction */
    piola_collider_def ledge = piola_default_collider_def();
    ledge.type = PIOLA_COLLIDER_BOX;
    ledge.shape.box.center[1] = 0.15f;
    for (int k = 0; k < 3; ++k) {
      ledge.shape.box.half_extents[k] = 0.15f;
    }
    ledge.static_friction = ledge.dynamic_friction = 0.5f;
    s = piola_world_add_collider(w, &ledge, NULL);
  } else {
    s = piola_world_add_tet_body(w, &m, &mat, at_lower, &lower);
  }
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
  o->scheme = PIOLA_SCHEME_GAUSS_SEIDEL;
  o->youngs = 1e6f;
  o->drop = 0.15f;
  o->damping = 0.0f;
  o->material_damping = 0.0f;
  o->vbd_rho = 0.0f;
  o->iterations = 5;
  o->substeps = 2;
  o->offset_count = 0;
  o->friction_count = 0;
  o->pyramid = 0;
  o->slope = 0;
  o->ledge = 0;
  o->check = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--pyramid") == 0 || strcmp(a, "--slope") == 0 || strcmp(a, "--ledge") == 0 ||
        strcmp(a, "--check") == 0) {
      *(a[2] == 'p'   ? &o->pyramid
        : a[2] == 's' ? &o->slope
        : a[2] == 'l' ? &o->ledge
                      : &o->check) = 1;
      continue;
    }
    if (v == NULL) {
      fprintf(stderr, "piola_stack_drift: %s needs a value\n", a);
      return 0;
    }
    ++i;
    if (strcmp(a, "--backend") == 0) {
      o->backend = strcmp(v, "opencl") == 0 ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE;
    } else if (strcmp(a, "--scheme") == 0) {
      o->scheme = strcmp(v, "vbd") == 0         ? PIOLA_SCHEME_VBD
                  : strcmp(v, "multigrid") == 0 ? PIOLA_SCHEME_MULTIGRID
                                                : PIOLA_SCHEME_GAUSS_SEIDEL;
    } else if (strcmp(a, "--youngs") == 0) {
      o->youngs = (float)atof(v);
    } else if (strcmp(a, "--drop") == 0) {
      o->drop = (float)atof(v);
    } else if (strcmp(a, "--damping") == 0) {
      o->damping = (float)atof(v);
    } else if (strcmp(a, "--material-damping") == 0) {
      o->material_damping = (float)atof(v);
    } else if (strcmp(a, "--vbd-rho") == 0) {
      o->vbd_rho = (float)atof(v);
    } else if (strcmp(a, "--iterations") == 0) {
      o->iterations = atoi(v);
    } else if (strcmp(a, "--substeps") == 0) {
      o->substeps = atoi(v);
    } else if (strcmp(a, "--offsets") == 0 || strcmp(a, "--frictions") == 0) {
      const int offsets = a[2] == 'o';
      float *list = offsets ? o->offsets : o->frictions;
      int *count = offsets ? &o->offset_count : &o->friction_count;
      char *end = NULL;
      const char *p = v;
      while (*count < 16) {
        const double f = strtod(p, &end);
        if (end == p) {
          break;
        }
        list[(*count)++] = (float)f;
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
  if (o->friction_count == 0) {
    const float standard[5] = {0.0f, 0.1f, 0.3f, 0.45f, 0.8f};
    memcpy(o->frictions, standard, sizeof standard);
    o->friction_count = 5;
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

/* Turns the mesh's points by th about z after moving them by (dx, dy). */
static void tilt(piola_tet_mesh *m, double th, double dx, double dy, double dz) {
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    const double x = m->positions[3 * i] + dx, y = m->positions[3 * i + 1] + dy;
    m->positions[3 * i] = (float)(x * cos(th) - y * sin(th));
    m->positions[3 * i + 1] = (float)(x * sin(th) + y * cos(th));
    m->positions[3 * i + 2] = (float)(m->positions[3 * i + 2] + dz);
  }
}

/* The slope (see the module comment) at contact friction mu: how far the box's centre moves in
 * 1 s (m). */
static piola_status slope(const options *o, float mu, double *moved) {
  const double th = 20.0 * 3.14159265358979323846 / 180.0;
  const piola_world_def def = stack_def(o, mu);
  piola_world *w = NULL;
  piola_tet_mesh slab, box;
  memset(&slab, 0, sizeof slab);
  memset(&box, 0, sizeof box);
  piola_status s = piola_world_create(&def, &w);
  if (s == PIOLA_OK) {
    s = piola_mesh_make_box((const int32_t[3]){24, 1, 4}, (const float[3]){2.4f, 0.1f, 0.4f},
                            &slab);
  }
  if (s == PIOLA_OK) {
    s = piola_mesh_make_box((const int32_t[3]){2, 2, 2}, (const float[3]){0.2f, 0.2f, 0.2f}, &box);
  }
  float *x = NULL, *inv = NULL;
  if (s == PIOLA_OK) {
    /* the slab's top face through the origin, falling towards -x; the box a thickness above
     * it, 0.1 m from its upper end */
    tilt(&slab, th, -2.4, -0.1, -0.2);
    tilt(&box, th, -0.3, (double)def.contact_thickness, -0.1);
    piola_material mat = piola_default_material();
    mat.youngs_modulus = o->youngs;
    mat.damping = o->material_damping;
    piola_body_id slab_id, box_id;
    s = piola_world_add_tet_body(w, &slab, &mat, NULL, &slab_id);
    if (s == PIOLA_OK) {
      s = piola_world_add_tet_body(w, &box, &mat, NULL, &box_id);
    }
    inv = calloc((size_t)slab.vertex_count, sizeof *inv);
    x = malloc(sizeof *x * 3 * (size_t)box.vertex_count);
    if (s == PIOLA_OK && (inv == NULL || x == NULL)) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
    }
    if (s == PIOLA_OK) {
      s = piola_body_set_inverse_masses(w, slab_id, inv, slab.vertex_count);
    }
    double c[2][3] = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
    const int32_t n = box.vertex_count;
    for (int k = 0; k < 2 && s == PIOLA_OK; ++k) {
      for (int step = 0; k == 1 && step < 200 && s == PIOLA_OK; ++step) {
        s = piola_world_step(w);
      }
      if (s == PIOLA_OK) {
        s = piola_body_get_positions(w, box_id, x, n);
      }
      for (int32_t i = 0; s == PIOLA_OK && i < n; ++i) {
        for (int a = 0; a < 3; ++a) {
          c[k][a] += x[3 * i + a] / n;
        }
      }
    }
    const double d[3] = {c[1][0] - c[0][0], c[1][1] - c[0][1], c[1][2] - c[0][2]};
    *moved = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  }
  free(x);
  free(inv);
  piola_mesh_free(&slab);
  piola_mesh_free(&box);
  piola_world_destroy(w);
  return s;
}

int main(int argc, char **argv) {
  options o;
  if (!parse(argc, argv, &o)) {
    return 2;
  }
  int failed = 0;
  if (o.slope) {
    const double th = 20.0 * 3.14159265358979323846 / 180.0, g = 9.81;
    printf("box on a 20 degree slope of a pinned body: %d iterations, %d substeps, %s\n",
           (int)o.iterations, (int)o.substeps,
           o.backend == PIOLA_BACKEND_OPENCL ? "OpenCL" : "CPU reference");
    printf("%9s %14s %14s %8s\n", "friction", "moved in 1 s", "Coulomb", "ratio");
    for (int i = 0; i < o.friction_count; ++i) {
      double moved = NAN;
      const piola_status s = slope(&o, o.frictions[i], &moved);
      if (s != PIOLA_OK) {
        fprintf(stderr, "piola_stack_drift: %s\n", piola_status_string(s));
        return 1;
      }
      const double mu = o.frictions[i];
      const double expected = mu < tan(th) ? 0.5 * g * (sin(th) - mu * cos(th)) : 0.0;
      printf("%9.2f %14.4f %14.4f %8.3f\n", mu, moved, expected,
             expected > 0.0 ? moved / expected : NAN);
      failed |= expected > 0.0 ? !(fabs(moved / expected - 1.0) <= 0.1) : !(moved <= 0.01);
    }
    if (o.check) {
      printf("slope: %s (sliding within 10%% of Coulomb, sticking within 1 cm)\n",
             failed ? "FAILED" : "as Coulomb says");
    }
    return o.check && failed;
  }
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
  printf("box on %s: E %.3g Pa, %d iterations, %d substeps, drop %.3f m, damping %.3g 1/s, "
         "material damping %.3g s, %s\n",
         o.ledge ? "a rigid box collider" : "box", (double)o.youngs, (int)o.iterations,
         (int)o.substeps, (double)o.drop, (double)o.damping, (double)o.material_damping,
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
