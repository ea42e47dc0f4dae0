/* piola_stand_check: a large body dropped on the ground, checked for inversion, rest and height
 * (issue 42, "a body of about 170k tets from a TetGen mesh of a closed surface").
 *
 * Loads a TetGen .node/.ele pair (the quadruped of bench/make_quadruped.py, tetrahedralized by
 * `tetgen -pq1.2`), centres it on x = z = 0 with its lowest point --drop m above the ground plane
 * y = 0 (friction 0.5) and lets it fall: Neo-Hookean, E = --youngs Pa, nu = 0.3, 1000 kg/m^3,
 * body contacts off, gravity (0, -9.81, 0), under the iteration scheme, substeps, iterations and
 * dt given. Every --frame s it prints the time, the tets inverted (det F <= 0; computed here from
 * the rest mesh and the positions read back, independently of the library; the largest count
 * after any step is kept for the summary), the body's top height and its centroid's height (the
 * lumped masses' centroid, m), the kinetic energy per kg (J/kg, from the velocities read back and
 * the lumped masses), the stats' relative_residual and coarse_residual, the linear solve's
 * iterations (multigrid) and the wall time per step since the last frame. The summary line gives
 * the most tets inverted after any step, the time from which the kinetic energy stays below
 * --rest-ke J/kg at every frame to the end ("never" if it does not), the final heights and the
 * mean wall time per step. Public API only; not a test (a 3 s run of 170k tets takes tens of
 * minutes).
 *
 *   piola_stand_check --mesh PREFIX [--scheme gauss-seidel|vbd|multigrid] [--backend cpu|opencl]
 *                     [--substeps N] [--iterations N] [--dt S] [--seconds S] [--threads N]
 *                     [--drop M] [--youngs PA] [--damping 1/S] [--material-damping S]
 *                     [--frame S] [--rest-ke J/KG]
 *
 * PREFIX.node and PREFIX.ele are read. Defaults: multigrid, CPU reference, the world's defaults
 * (1 substep, 5 iterations, dt 0.005 s), 3 s, 2 threads, drop 0.17 m, E 1 MPa, no damping
 * (--damping is the world's velocity damping, --material-damping the material's, s),
 * frames every 0.05 s, rest below 1e-4 J/kg.
 */
#include "piola/piola.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STAND_DENSITY 1000.0 /* kg/m^3, the default material's */

typedef struct options {
  const char *mesh;
  piola_iteration_scheme scheme;
  piola_backend backend;
  int32_t substeps, iterations, threads;
  double dt, seconds, drop, youngs, damping, material_damping, frame, rest_ke;
} options;

/* The rest mesh's per-tet inverse rest matrices' determinant signs and the lumped masses. */
typedef struct rest_data {
  double *rest_det; /* det Dm per tet (the mesh's own corner order) */
  double *mass;     /* kg per vertex: density * |V| / 4 from each tet */
  double total_mass;
} rest_data;

static double now_s(void) {
  struct timespec t;
  timespec_get(&t, TIME_UTC);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* det [x1 - x0, x2 - x0, x3 - x0] of one tet of `x` (3 floats per vertex). */
static double tet_det(const float *x, const int32_t *t) {
  double e[3][3];
  for (int k = 1; k < 4; ++k) {
    for (int c = 0; c < 3; ++c) {
      e[k - 1][c] = (double)x[3 * t[k] + c] - (double)x[3 * t[0] + c];
    }
  }
  return e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
         e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
         e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0]);
}

static int rest_make(const piola_tet_mesh *m, rest_data *r) {
  r->rest_det = malloc(sizeof *r->rest_det * (size_t)m->tet_count);
  r->mass = calloc((size_t)m->vertex_count, sizeof *r->mass);
  r->total_mass = 0.0;
  if (r->rest_det == NULL || r->mass == NULL) {
    return 0;
  }
  for (int32_t t = 0; t < m->tet_count; ++t) {
    const int32_t *v = m->tets + 4 * t;
    r->rest_det[t] = tet_det(m->positions, v);
    const double quarter = STAND_DENSITY * fabs(r->rest_det[t]) / 24.0;
    for (int k = 0; k < 4; ++k) {
      r->mass[v[k]] += quarter;
    }
    r->total_mass += 4.0 * quarter;
  }
  return 1;
}

/* Tets whose deformation gradient F = Ds Dm^-1 has det F <= 0 at positions `x`. */
static int32_t count_inverted(const piola_tet_mesh *m, const rest_data *r, const float *x) {
  int32_t inverted = 0;
  for (int32_t t = 0; t < m->tet_count; ++t) {
    inverted += tet_det(x, m->tets + 4 * t) * r->rest_det[t] <= 0.0;
  }
  return inverted;
}

typedef struct body_measure {
  double top, centroid[3], ke_per_kg;
} body_measure;

static body_measure measure(const piola_tet_mesh *m, const rest_data *r, const float *x,
                            const float *v) {
  body_measure b = {-INFINITY, {0.0, 0.0, 0.0}, 0.0};
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    b.top = fmax(b.top, (double)x[3 * i + 1]);
    double v2 = 0.0;
    for (int c = 0; c < 3; ++c) {
      b.centroid[c] += r->mass[i] * (double)x[3 * i + c];
      v2 += (double)v[3 * i + c] * (double)v[3 * i + c];
    }
    b.ke_per_kg += 0.5 * r->mass[i] * v2;
  }
  for (int c = 0; c < 3; ++c) {
    b.centroid[c] /= r->total_mass;
  }
  b.ke_per_kg /= r->total_mass;
  return b;
}

static void log_message(piola_log_level level, const char *message, void *user_data) {
  (void)user_data;
  fprintf(stderr, "piola [%s]: %s\n", level == PIOLA_LOG_ERROR ? "error" : "log", message);
}

static const char *scheme_name(piola_iteration_scheme s) {
  return s == PIOLA_SCHEME_MULTIGRID ? "multigrid" : s == PIOLA_SCHEME_VBD ? "vbd" : "gauss-seidel";
}

static int parse(int argc, char **argv, options *o) {
  const piola_world_def d = piola_default_world_def();
  o->mesh = NULL;
  o->scheme = PIOLA_SCHEME_MULTIGRID;
  o->backend = PIOLA_BACKEND_CPU_REFERENCE;
  o->substeps = d.substeps;
  o->iterations = d.iterations;
  o->threads = 2;
  o->dt = (double)d.dt;
  o->seconds = 3.0;
  o->drop = 0.17;
  o->youngs = 1e6;
  o->damping = 0.0;
  o->material_damping = 0.0;
  o->frame = 0.05;
  o->rest_ke = 1e-4;
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) {
      fprintf(stderr, "piola_stand_check: %s needs a value\n", a);
      return 0;
    }
    if (strcmp(a, "--mesh") == 0) {
      o->mesh = v;
    } else if (strcmp(a, "--scheme") == 0) {
      if (strcmp(v, "multigrid") == 0) {
        o->scheme = PIOLA_SCHEME_MULTIGRID;
      } else if (strcmp(v, "vbd") == 0) {
        o->scheme = PIOLA_SCHEME_VBD;
      } else if (strcmp(v, "gauss-seidel") == 0) {
        o->scheme = PIOLA_SCHEME_GAUSS_SEIDEL;
      } else {
        fprintf(stderr, "piola_stand_check: unknown scheme %s\n", v);
        return 0;
      }
    } else if (strcmp(a, "--backend") == 0) {
      o->backend = strcmp(v, "opencl") == 0 ? PIOLA_BACKEND_OPENCL : PIOLA_BACKEND_CPU_REFERENCE;
    } else if (strcmp(a, "--substeps") == 0) {
      o->substeps = atoi(v);
    } else if (strcmp(a, "--iterations") == 0) {
      o->iterations = atoi(v);
    } else if (strcmp(a, "--threads") == 0) {
      o->threads = atoi(v);
    } else if (strcmp(a, "--dt") == 0) {
      o->dt = atof(v);
    } else if (strcmp(a, "--seconds") == 0) {
      o->seconds = atof(v);
    } else if (strcmp(a, "--drop") == 0) {
      o->drop = atof(v);
    } else if (strcmp(a, "--youngs") == 0) {
      o->youngs = atof(v);
    } else if (strcmp(a, "--damping") == 0) {
      o->damping = atof(v);
    } else if (strcmp(a, "--material-damping") == 0) {
      o->material_damping = atof(v);
    } else if (strcmp(a, "--frame") == 0) {
      o->frame = atof(v);
    } else if (strcmp(a, "--rest-ke") == 0) {
      o->rest_ke = atof(v);
    } else {
      fprintf(stderr, "piola_stand_check: unknown option %s\n", a);
      return 0;
    }
  }
  if (o->mesh == NULL || !(o->dt > 0.0) || !(o->frame >= o->dt) || o->substeps < 1 ||
      o->iterations < 1) {
    fprintf(stderr, "piola_stand_check: --mesh PREFIX is required; dt, frame, substeps and "
                    "iterations must be positive (frame >= dt)\n");
    return 0;
  }
  return 1;
}

/* Creates the world with the ground and the body, the lowest vertex `drop` above y = 0. */
static piola_status make_scene(const options *o, const piola_tet_mesh *m, piola_world **w,
                               piola_body_id *body) {
  piola_world_def def = piola_default_world_def();
  def.backend = o->backend;
  def.iteration_scheme = o->scheme;
  def.substeps = o->substeps;
  def.iterations = o->iterations;
  def.dt = (float)o->dt;
  def.damping = (float)o->damping;
  def.contacts = false;
  def.cpu_threads = o->threads;
  def.logger.fn = log_message;
  *w = NULL;
  piola_status s = piola_world_create(&def, w);
  const float up[3] = {0.0f, 1.0f, 0.0f};
  if (s == PIOLA_OK) {
    s = piola_world_add_plane(*w, up, 0.0f, 0.5f, NULL);
  }
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    for (int c = 0; c < 3; ++c) {
      lo[c] = fmin(lo[c], (double)m->positions[3 * i + c]);
      hi[c] = fmax(hi[c], (double)m->positions[3 * i + c]);
    }
  }
  const float at[3] = {(float)(-0.5 * (lo[0] + hi[0])), (float)(o->drop - lo[1]),
                       (float)(-0.5 * (lo[2] + hi[2]))};
  piola_material mat = piola_default_material();
  mat.model = PIOLA_MODEL_NEOHOOKEAN;
  mat.damping = (float)o->material_damping;
  mat.youngs_modulus = (float)o->youngs;
  mat.poisson_ratio = 0.3f;
  mat.density = (float)STAND_DENSITY;
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(*w, m, &mat, at, body);
  }
  if (s != PIOLA_OK) {
    piola_world_destroy(*w);
    *w = NULL;
  }
  return s;
}

int main(int argc, char **argv) {
  options o;
  if (!parse(argc, argv, &o)) {
    return 2;
  }
  char node[1024], ele[1024];
  snprintf(node, sizeof node, "%s.node", o.mesh);
  snprintf(ele, sizeof ele, "%s.ele", o.mesh);
  piola_tet_mesh m;
  piola_status s = piola_mesh_load_tetgen(node, ele, &m);
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola_stand_check: %s: %s\n", node, piola_status_string(s));
    return 1;
  }
  rest_data r = {NULL, NULL, 0.0};
  piola_world *w = NULL;
  piola_body_id body;
  const size_t n = (size_t)m.vertex_count;
  float *x = malloc(sizeof *x * 3 * n), *v = malloc(sizeof *v * 3 * n);
  if (!rest_make(&m, &r) || x == NULL || v == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK) {
    s = make_scene(&o, &m, &w, &body);
  }
  const long steps = lround(o.seconds / o.dt), frame_steps = lround(o.frame / o.dt);
  if (s == PIOLA_OK) {
    printf("stand check: %s, %d vertices, %d tets, %.1f kg; %s, %s, %d substeps x %d "
           "iterations, dt %g s, %d threads; E %g Pa, nu 0.3, 1000 kg/m^3, dropped %g m, "
           "damping %g 1/s, material damping %g s, %g s\n",
           o.mesh, (int)m.vertex_count, (int)m.tet_count, r.total_mass, scheme_name(o.scheme),
           o.backend == PIOLA_BACKEND_OPENCL ? "OpenCL" : "CPU reference", (int)o.substeps,
           (int)o.iterations, o.dt, (int)o.threads, o.youngs, o.drop, o.damping, o.material_damping,
           o.seconds);
    printf("%7s %8s %8s %9s %11s %11s %11s %7s %9s\n", "t (s)", "inverted", "top (m)", "centroid",
           "KE (J/kg)", "rel. res.", "coarse res.", "CG its", "s/step");
  }
  int32_t most_inverted = 0;
  double rest_since = -1.0, clock_frame = now_s(), clock_total = 0.0;
  body_measure b = {0.0, {0.0, 0.0, 0.0}, 0.0}, first = b;
  for (long step = 1; step <= steps && s == PIOLA_OK; ++step) {
    const double t0 = now_s();
    s = piola_world_step(w);
    if (s == PIOLA_OK) {
      s = piola_body_get_positions(w, body, x, m.vertex_count);
    }
    clock_total += now_s() - t0;
    if (s != PIOLA_OK) {
      break;
    }
    const int32_t inverted = count_inverted(&m, &r, x);
    most_inverted = inverted > most_inverted ? inverted : most_inverted;
    if (step % frame_steps != 0 && step != steps) {
      continue;
    }
    piola_stats st;
    s = piola_body_get_velocities(w, body, v, m.vertex_count);
    if (s == PIOLA_OK) {
      s = piola_world_get_stats(w, &st);
    }
    if (s != PIOLA_OK) {
      break;
    }
    b = measure(&m, &r, x, v);
    if (step == frame_steps) {
      first = b;
    }
    const double t = (double)step * o.dt;
    rest_since = b.ke_per_kg < o.rest_ke ? (rest_since < 0.0 ? t : rest_since) : -1.0;
    const double now = now_s();
    printf("%7.3f %8d %8.4f %9.4f %11.3e %11.3e %11.3e %7d %9.3f\n", t, (int)inverted, b.top,
           b.centroid[1], b.ke_per_kg, st.relative_residual, st.coarse_residual,
           (int)st.linear_iterations, (now - clock_frame) / (double)frame_steps);
    fflush(stdout);
    clock_frame = now;
  }
  if (s == PIOLA_OK) {
    char rest[32];
    if (rest_since >= 0.0) {
      snprintf(rest, sizeof rest, "%.2f s", rest_since);
    } else {
      snprintf(rest, sizeof rest, "never");
    }
    printf("summary: %s %d tets, %s %dx%d dt %g: most inverted %d, at rest (KE < %g J/kg) from "
           "%s, top %.4f m, centroid height %.4f m, centroid moved (%+.4f, %+.4f) m in x, z "
           "since %.2f s, KE %.3e J/kg, %.3f s/step\n",
           o.mesh, (int)m.tet_count, scheme_name(o.scheme), (int)o.substeps, (int)o.iterations,
           o.dt, (int)most_inverted, o.rest_ke, rest, b.top, b.centroid[1],
           b.centroid[0] - first.centroid[0], b.centroid[2] - first.centroid[2], o.frame,
           b.ke_per_kg, clock_total / (double)steps);
  } else {
    fprintf(stderr, "piola_stand_check: %s\n", piola_status_string(s));
  }
  free(x);
  free(v);
  free(r.rest_det);
  free(r.mass);
  piola_mesh_free(&m);
  piola_world_destroy(w);
  return s == PIOLA_OK ? 0 : 1;
}
