/* `piola run`: simulates a scene (the grid, or the funnel of Bender et al. 2014, Sec. 6) and
 * prints per frame the time, energies, inverted tets, body-body contacts and the surface
 * vertices found inside another body; with --out, writes each frame as a legacy VTK file (the
 * tets as an unstructured grid, or with --surface only the collision surface as polygons) and
 * the scene's colliders to scene.json. At the end it sums up the contact checks (bodies through
 * the funnel, interpenetration, NaN, inverted tets, rest); with --check it exits 1 when one
 * fails. The cloth scene (Fig. 1 right) has its own loop and checks: no NaN, no cloth vertex
 * inside a collider, energy bounded; its frames are the cloth's triangles (POLYDATA). */
#include "commands.h"
#include "contact_checks.h"
#include "options.h"
#include "scene.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The checks' thresholds. */
/* Largest fraction of surface vertices allowed inside another body at any frame. */
#define CHECK_MAX_PENETRATION 1e-3
/* At rest: kinetic energy per kilogram at the end, J/kg (half the mean square speed: 1e-3 J/kg
 * is an RMS speed of 4.5 cm/s). Measured at 10 s: one Armadillo of the funnel scene settled on
 * the ground has 6e-8 J/kg (without self-collision); bodies still sliding or ringing have more
 * than 2e-3 J/kg (an undamped squashed creature of the grid scene 7e-3, the 100-body funnel
 * pile 3e-3 to 1e-2), falling ones 0.1 to 100 J/kg. */
#define CHECK_REST_J_PER_KG 1e-3f

typedef struct run_options {
  int32_t steps, every;
  const char *out;
  bool surface;     /* frames hold the collision surface, not the tets */
  bool check;       /* exit 1 when a check fails */
  float rest_limit; /* J/kg; the rest check's threshold; 0 skips it */
} run_options;

/* The state read back at a frame, and the checks' inputs. */
typedef struct frame_data {
  float *positions; /* all bodies, body after body */
  int32_t total_vertices;
  int32_t *surface;          /* body 0's surface triangles (every body has the same mesh) */
  int32_t surface_count;     /* triangles */
  int32_t *surface_vertices; /* body-local indices of the vertices on the surface */
  int32_t surface_vertex_count;
  check_body *check; /* per body */
  float *rest;       /* the bodies' rest shape (every body has the same mesh), 3 per vertex */
  float *self_bound; /* per vertex: its self-contact bound (check_body.self_bound), m */
} frame_data;

/* What the frames add up to. */
typedef struct run_summary {
  int32_t frames;
  double worst_penetration; /* largest fraction of surface vertices inside another body */
  int32_t worst_frame;
  bool nan_seen;
  int32_t nan_frame;  /* first frame with a non-finite value */
  int32_t passed;     /* bodies below the funnel's bottom opening at the end */
  int32_t inverted;   /* inverted tets at the end */
  double kinetic_end; /* J at the end */
  int32_t max_contacts;
} run_summary;

/* The wall time of the steps between two frames: from the end of one frame's work to the
 * positions of the next read back, which waits for the device's queue (on OpenCL a step returns
 * once its kernels are queued, so the step call's own time says little). */
typedef struct step_clock {
  double since; /* s */
  int32_t step; /* the step of the last frame */
} step_clock;

static step_clock step_clock_start(void) {
  step_clock c = {now_seconds(), 0};
  return c;
}

/* ms per step from the clock's start to now, over the steps since the last frame (0 at the
 * first); `step` becomes the last frame's. */
static double step_clock_read(step_clock *c, int32_t step) {
  const double ms =
      step > c->step ? 1e3 * (now_seconds() - c->since) / (double)(step - c->step) : 0.0;
  c->step = step;
  return ms;
}

/* Starts the clock again: the next steps are timed from now. */
static void step_clock_restart(step_clock *c) {
  c->since = now_seconds();
}

static int write_error(const char *path, FILE *f) {
  int bad = ferror(f);
  bad |= fclose(f);
  if (bad) {
    fprintf(stderr, "piola run: error writing %s\n", path);
  }
  return bad ? 1 : 0;
}

static FILE *open_out(const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "piola run: cannot write %s: %s\n", path, strerror(errno));
  }
  return f;
}

static void write_points(FILE *f, const float *positions, int32_t total_vertices) {
  fprintf(f, "POINTS %d float\n", (int)total_vertices);
  for (int32_t i = 0; i < total_vertices; ++i) {
    fprintf(f, "%.7g %.7g %.7g\n", (double)positions[3 * i], (double)positions[3 * i + 1],
            (double)positions[3 * i + 2]);
  }
}

/* Writes one frame: all bodies' vertices and tets. */
static int write_vtk_tets(const char *path, const scene *sc, const piola_tet_mesh *mesh,
                          const frame_data *fd) {
  FILE *f = open_out(path);
  if (f == NULL) {
    return 1;
  }
  int64_t tets = (int64_t)sc->body_count * mesh->tet_count;
  fprintf(f, "# vtk DataFile Version 3.0\npiola frame\nASCII\nDATASET UNSTRUCTURED_GRID\n");
  write_points(f, fd->positions, fd->total_vertices);
  fprintf(f, "CELLS %lld %lld\n", (long long)tets, (long long)(5 * tets));
  for (int32_t b = 0; b < sc->body_count; ++b) {
    int32_t off = b * mesh->vertex_count;
    for (int32_t t = 0; t < mesh->tet_count; ++t) {
      const int32_t *q = mesh->tets + 4 * t;
      fprintf(f, "4 %d %d %d %d\n", (int)(q[0] + off), (int)(q[1] + off), (int)(q[2] + off),
              (int)(q[3] + off));
    }
  }
  fprintf(f, "CELL_TYPES %lld\n", (long long)tets);
  for (int64_t t = 0; t < tets; ++t) {
    fputs("10\n", f);
  }
  return write_error(path, f);
}

/* Writes one frame as the collision surface: every vertex (so that vertex i belongs to body
 * i / body_vertices, as for the tets) and the outward boundary triangles of every body. */
static int write_vtk_surface(const char *path, const scene *sc, const frame_data *fd) {
  FILE *f = open_out(path);
  if (f == NULL) {
    return 1;
  }
  int64_t m = (int64_t)sc->body_count * fd->surface_count;
  fprintf(f, "# vtk DataFile Version 3.0\npiola frame (collision surface)\nASCII\n"
             "DATASET POLYDATA\n");
  write_points(f, fd->positions, fd->total_vertices);
  fprintf(f, "POLYGONS %lld %lld\n", (long long)m, (long long)(4 * m));
  for (int32_t b = 0; b < sc->body_count; ++b) {
    int32_t off = b * sc->body_vertex_count;
    for (int32_t t = 0; t < fd->surface_count; ++t) {
      const int32_t *q = fd->surface + 3 * t;
      fprintf(f, "3 %d %d %d\n", (int)(q[0] + off), (int)(q[1] + off), (int)(q[2] + off));
    }
  }
  return write_error(path, f);
}

/* Opens DIR/scene.json for writing (its path into `path`); NULL after a message on failure. */
static FILE *open_scene_json(const char *dir, char *path, size_t size) {
  snprintf(path, size, "%s/scene.json", dir);
  return open_out(path);
}

/* The ground plane's entry in scene.json's collider list (if the scene has one), after *sep. */
static void print_ground_json(FILE *f, const scene_geometry *g, const char **sep) {
  if (g->has_ground) {
    fprintf(f,
            "%s    {\"type\": \"plane\", \"normal\": [%g, %g, %g], \"offset\": %g, "
            "\"friction\": %g}",
            *sep, (double)g->ground.normal[0], (double)g->ground.normal[1],
            (double)g->ground.normal[2], (double)g->ground.offset, (double)g->ground_friction);
    *sep = ",\n";
  }
}

/* Writes DIR/scene.json: what a frame holds and the colliders to draw with it. */
static int write_scene_json(const char *dir, const scene *sc, const scene_options *o,
                            const run_options *r) {
  char path[4096];
  FILE *f = open_scene_json(dir, path, sizeof path);
  if (f == NULL) {
    return 1;
  }
  const scene_geometry *g = &sc->geometry;
  fprintf(f, "{\n  \"scene\": \"%s\",\n  \"mesh\": \"%s\",\n  \"bodies\": %d,\n",
          scene_kind_name(sc->kind), sc->name, (int)sc->body_count);
  fprintf(f, "  \"dt\": %g,\n  \"every\": %d,\n  \"steps\": %d,\n", (double)o->dt, (int)r->every,
          (int)r->steps);
  fprintf(f, "  \"frames\": \"%s\",\n", r->surface ? "surface" : "tets");
  fprintf(f, "  \"body_vertices\": %d,\n  \"body_tets\": %d,\n", (int)sc->body_vertex_count,
          (int)sc->body_tet_count);
  fprintf(f, "  \"body_height\": %.6g,\n  \"body_width\": %.6g,\n  \"body_mass\": %.6g,\n",
          (double)g->body_height, (double)g->body_width, g->body_mass);
  fprintf(f, "  \"colliders\": [");
  const char *sep = "\n";
  print_ground_json(f, g, &sep);
  if (g->has_funnel) {
    const piola_funnel_shape *u = &g->funnel;
    fprintf(f,
            "%s    {\"type\": \"funnel\", \"base\": [%.7g, %.7g, %.7g], \"axis\": [%g, %g, %g], "
            "\"base_radius\": %.7g, \"top_radius\": %.7g, \"height\": %.7g, \"friction\": %g}",
            sep, (double)u->base[0], (double)u->base[1], (double)u->base[2], (double)u->axis[0],
            (double)u->axis[1], (double)u->axis[2], (double)u->base_radius, (double)u->top_radius,
            (double)u->height, (double)g->funnel_friction);
    sep = ",\n";
  }
  fprintf(f, "%s]\n}\n", g->has_ground || g->has_funnel ? "\n  " : "");
  return write_error(path, f);
}

static void frame_data_free(frame_data *fd) {
  free(fd->positions);
  free(fd->surface);
  free(fd->surface_vertices);
  free(fd->check);
  free(fd->rest);
  free(fd->self_bound);
  memset(fd, 0, sizeof *fd);
}

/* Allocates the frame buffers and reads the collision surface. */
static int frame_data_init(const scene *sc, const piola_tet_mesh *mesh, frame_data *fd) {
  memset(fd, 0, sizeof *fd);
  fd->total_vertices = sc->body_count * sc->body_vertex_count;
  fd->positions = malloc(sizeof *fd->positions * 3 * (size_t)fd->total_vertices);
  fd->surface_vertices = malloc(sizeof *fd->surface_vertices * (size_t)sc->body_vertex_count);
  fd->check = malloc(sizeof *fd->check * (size_t)sc->body_count);
  fd->rest = malloc(sizeof *fd->rest * 3 * (size_t)mesh->vertex_count);
  fd->self_bound = malloc(sizeof *fd->self_bound * (size_t)mesh->vertex_count);
  if (fd->positions == NULL || fd->surface_vertices == NULL || fd->check == NULL ||
      fd->rest == NULL || fd->self_bound == NULL ||
      piola_body_get_surface(sc->world, sc->bodies[0], NULL, 0, &fd->surface_count) != PIOLA_OK) {
    fprintf(stderr, "piola run: out of memory\n");
    return 1;
  }
  fd->surface =
      malloc(sizeof *fd->surface * 3 * (size_t)(fd->surface_count > 0 ? fd->surface_count : 1));
  if (fd->surface == NULL || piola_body_get_surface(sc->world, sc->bodies[0], fd->surface,
                                                    fd->surface_count, NULL) != PIOLA_OK) {
    fprintf(stderr, "piola run: cannot read the collision surface\n");
    return 1;
  }
  fd->surface_vertex_count = surface_vertex_list(fd->surface, fd->surface_count,
                                                 sc->body_vertex_count, fd->surface_vertices);
  if (fd->surface_vertex_count < 0) {
    fprintf(stderr, "piola run: the collision surface does not fit the body\n");
    return 1;
  }
  for (int32_t b = 0; b < sc->body_count; ++b) {
    check_body *c = &fd->check[b];
    c->positions = fd->positions + 3 * (size_t)b * sc->body_vertex_count;
    c->vertex_count = sc->body_vertex_count;
    c->tets = mesh->tets;
    c->tet_count = mesh->tet_count;
    c->queries = fd->surface_vertices;
    c->query_count = fd->surface_vertex_count;
    c->rest_positions = fd->rest;
    c->self_bound = fd->self_bound;
  }
  for (int32_t i = 0; i < 3 * mesh->vertex_count; ++i) { /* the loaded mesh at the scene's scale */
    fd->rest[i] = sc->geometry.body_scale * mesh->positions[i];
  }
  self_contact_bounds(fd->rest, mesh->vertex_count, mesh->tets, mesh->tet_count,
                      sc->geometry.contact_thickness, fd->self_bound);
  return 0;
}

/* Bodies whose every vertex lies below the funnel's bottom opening (along its axis). */
static int32_t bodies_through_funnel(const scene *sc, const frame_data *fd) {
  const piola_funnel_shape *u = &sc->geometry.funnel;
  int32_t passed = 0;
  for (int32_t b = 0; b < sc->body_count; ++b) {
    bool below = true;
    const float *x = fd->positions + 3 * (size_t)b * sc->body_vertex_count;
    for (int32_t i = 0; i < sc->body_vertex_count && below; ++i) {
      double h = 0.0;
      for (int k = 0; k < 3; ++k) {
        h += ((double)x[3 * i + k] - u->base[k]) * u->axis[k];
      }
      below = h < 0.0;
    }
    passed += below;
  }
  return passed;
}

static bool all_finite(const float *x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(x[i])) {
      return false;
    }
  }
  return true;
}

/* Prints the summary of the checks; returns 0 when all pass. */
static int run_checks(const scene *sc, const frame_data *fd, const run_summary *s,
                      float rest_limit) {
  const bool funnel = sc->geometry.has_funnel;
  const double mass = sc->geometry.body_mass * sc->body_count;
  const double per_kg = mass > 0.0 ? s->kinetic_end / mass : 0.0;
  const bool pass_funnel = !funnel || s->passed == sc->body_count;
  const bool pass_pen = s->worst_penetration < CHECK_MAX_PENETRATION;
  const bool pass_nan = !s->nan_seen;
  const bool pass_inv = s->inverted == 0;
  const bool check_rest = rest_limit > 0.0f;
  const bool pass_rest = !check_rest || (!s->nan_seen && per_kg < rest_limit);
  printf("checks over %d frames (%d surface vertices per body, %d bodies):\n", (int)s->frames,
         (int)fd->surface_vertex_count, (int)sc->body_count);
  if (funnel) {
    printf("  through the funnel:  %d of %d bodies below its bottom opening at the end: %s\n",
           (int)s->passed, (int)sc->body_count, pass_funnel ? "PASS" : "FAIL");
  }
  printf("  interpenetration:    worst %.3e of surface vertices inside another body (frame %d), "
         "limit %.0e: %s\n",
         s->worst_penetration, (int)s->worst_frame, CHECK_MAX_PENETRATION,
         pass_pen ? "PASS" : "FAIL");
  if (s->nan_seen) {
    printf("  NaN:                 first seen at frame %d: FAIL\n", (int)s->nan_frame);
  } else {
    printf("  NaN:                 none: PASS\n");
  }
  printf("  inverted tets:       %d at the end: %s\n", (int)s->inverted,
         pass_inv ? "PASS" : "FAIL");
  printf("  rest:                kinetic energy %.4e J at the end, %.3e J/kg (%.3e J per body), "
         "limit %g J/kg: %s\n",
         s->kinetic_end, per_kg, s->kinetic_end / (sc->body_count > 0 ? sc->body_count : 1),
         (double)rest_limit,
         !check_rest ? "not checked"
         : pass_rest ? "PASS"
                     : "FAIL");
  printf("  most contacts in a frame: %d\n", (int)s->max_contacts);
  return pass_funnel && pass_pen && pass_nan && pass_inv && pass_rest ? 0 : 1;
}

/* ---- The cloth scene ------------------------------------------------------------------------ */

/* A cloth vertex deeper than this inside a collider fails the check (m). The collide stage
 * projects every vertex out of every collider at the end of each iteration, so at the end of a
 * step vertices are outside up to float rounding; 1 mm is far above that and far below the
 * cloth's cell size (1.5 cm at 200 cells). */
#define CLOTH_CHECK_DEPTH 1e-3

/* Depth (m) of point x inside the scene's colliders (0 when outside all); the sphere where it
 * stands now. */
static double cloth_depth(const scene_geometry *g, const float sphere_center[3], const float *x) {
  double worst = 0.0;
  if (g->has_ground) {
    double d = g->ground.offset -
               ((double)g->ground.normal[0] * x[0] + (double)g->ground.normal[1] * x[1] +
                (double)g->ground.normal[2] * x[2]);
    worst = fmax(worst, d);
  }
  for (int32_t b = 0; b < g->box_count; ++b) { /* axis-aligned boxes (identity rotation) */
    const piola_box_shape *box = &g->boxes[b];
    double d = INFINITY;
    for (int k = 0; k < 3; ++k) {
      d = fmin(d, (double)box->half_extents[k] - fabs((double)x[k] - box->center[k]));
    }
    worst = fmax(worst, d);
  }
  if (g->has_sphere) {
    double r2 = 0.0;
    for (int k = 0; k < 3; ++k) {
      r2 += ((double)x[k] - sphere_center[k]) * ((double)x[k] - sphere_center[k]);
    }
    worst = fmax(worst, (double)g->sphere.radius - sqrt(r2));
  }
  return worst;
}

/* Writes DIR/scene.json for the cloth scene: the frames hold the cloth's triangles; the
 * colliders (ground, boxes, the sphere with its motion: centre(t) = start + velocity * t until
 * stop_time, then stop). */
static int write_cloth_scene_json(const char *dir, const scene *sc, const scene_options *o,
                                  const run_options *r) {
  char path[4096];
  FILE *f = open_scene_json(dir, path, sizeof path);
  if (f == NULL) {
    return 1;
  }
  const scene_geometry *g = &sc->geometry;
  fprintf(f, "{\n  \"scene\": \"cloth\",\n  \"mesh\": \"cloth\",\n  \"bodies\": 1,\n");
  fprintf(f, "  \"dt\": %g,\n  \"every\": %d,\n  \"steps\": %d,\n", (double)o->dt, (int)r->every,
          (int)r->steps);
  fprintf(f, "  \"frames\": \"cloth\",\n  \"body_vertices\": %d,\n  \"body_tets\": 0,\n",
          (int)sc->body_vertex_count);
  fprintf(f, "  \"cloth_cells\": %d,\n  \"cloth_triangles\": %d,\n  \"cloth_size\": %g,\n",
          (int)o->cloth_cells, (int)sc->cloth_mesh.triangle_count, (double)g->cloth_size);
  fprintf(f, "  \"cloth_mass\": %.6g,\n  \"colliders\": [", g->cloth_mass);
  const char *sep = "\n";
  print_ground_json(f, g, &sep);
  for (int32_t b = 0; b < g->box_count; ++b) {
    const piola_box_shape *x = &g->boxes[b];
    fprintf(f,
            "%s    {\"type\": \"box\", \"center\": [%g, %g, %g], \"half_extents\": [%g, %g, %g], "
            "\"friction\": %g}",
            sep, (double)x->center[0], (double)x->center[1], (double)x->center[2],
            (double)x->half_extents[0], (double)x->half_extents[1], (double)x->half_extents[2],
            (double)g->box_friction);
    sep = ",\n";
  }
  if (g->has_sphere) {
    fprintf(f,
            "%s    {\"type\": \"sphere\", \"center\": [%.7g, %.7g, %.7g], \"radius\": %g, "
            "\"velocity\": [%g, %g, %g], \"stop_time\": %.7g, \"stop\": [%.7g, %.7g, %.7g], "
            "\"friction\": %g}",
            sep, (double)g->sphere.center[0], (double)g->sphere.center[1],
            (double)g->sphere.center[2], (double)g->sphere.radius, (double)g->sphere_velocity[0],
            (double)g->sphere_velocity[1], (double)g->sphere_velocity[2],
            (double)g->sphere_stop_step * (double)o->dt, (double)g->sphere_stop[0],
            (double)g->sphere_stop[1], (double)g->sphere_stop[2], (double)g->sphere_friction);
  }
  fprintf(f, "\n  ]\n}\n");
  return write_error(path, f);
}

/* Writes one cloth frame: the cloth's vertices and triangles. */
static int write_vtk_cloth(const char *path, const scene *sc, const float *positions) {
  FILE *f = open_out(path);
  if (f == NULL) {
    return 1;
  }
  const piola_tri_mesh *m = &sc->cloth_mesh;
  fprintf(f, "# vtk DataFile Version 3.0\npiola frame (cloth)\nASCII\nDATASET POLYDATA\n");
  write_points(f, positions, m->vertex_count);
  fprintf(f, "POLYGONS %d %lld\n", (int)m->triangle_count, 4LL * m->triangle_count);
  for (int32_t t = 0; t < m->triangle_count; ++t) {
    const int32_t *q = m->triangles + 3 * t;
    fprintf(f, "3 %d %d %d\n", (int)q[0], (int)q[1], (int)q[2]);
  }
  return write_error(path, f);
}

static int run_cloth(const scene_options *o, const run_options *r) {
  scene sc;
  if (scene_build(o, PIOLA_BACKEND_AUTO, &sc) != PIOLA_OK) {
    return 1;
  }
  const scene_geometry *g = &sc.geometry;
  const int32_t n = sc.body_vertex_count;
  float *x = malloc(sizeof *x * 3 * (size_t)n);
  int status = x == NULL ? 1 : 0;
  if (status == 0 && r->out != NULL) {
    status = write_cloth_scene_json(r->out, &sc, o, r);
  }
  piola_stats st;
  piola_world_get_stats(sc.world, &st);
  printf("piola run: cloth scene, %d x %d cells (%d vertices, %d triangles, %d bending stencils, "
         "%d colors) on %s (%s), %d steps of %g s\n",
         (int)o->cloth_cells, (int)o->cloth_cells, (int)st.vertex_count, (int)st.triangle_count,
         (int)st.bend_count, (int)st.cloth_color_count, piola_backend_name(st.backend),
         st.device_name, (int)r->steps, (double)o->dt);
  printf("cloth %.2f m square, %.3f kg, at y = %.2f m; sphere r = %.2f m from y = %.3f m down "
         "at %.1f m/s, standing still at y = %.3f m after step %d\n",
         (double)g->cloth_size, g->cloth_mass, (double)g->cloth_height, (double)g->sphere.radius,
         (double)g->sphere.center[1], -(double)g->sphere_velocity[1], (double)g->sphere_stop[1],
         (int)g->sphere_stop_step);
  /* Energy bounds. Kinetic: the cloth falling its whole height to the ground plus moving as a
   * whole at twice the sphere's speed (a blow-up exceeds it by orders of magnitude). Kinetic +
   * elastic once the sphere stands still: at most their value at the first frame after it
   * stopped plus the potential energy of the whole height (nothing else adds energy then; the
   * kinematic sphere does work on the cloth while it moves, stretching it over the boxes). */
  const double v = fabs((double)g->sphere_velocity[1]);
  const double potential = g->cloth_mass * 9.81 * (double)g->top;
  const double kinetic_bound = potential + 2.0 * g->cloth_mass * v * v;
  double stop_energy = NAN;
  int32_t stop_frame = -1;
  printf("%6s %9s %14s %14s %10s %10s %9s %9s %9s\n", "frame", "time s", "elastic J", "kinetic J",
         "ms/step", "depth mm", "lowest m", "residual", "coarse");
  step_clock clock = step_clock_start();
  double worst_depth = 0.0, worst_energy = 0.0, worst_kinetic = 0.0;
  int32_t worst_depth_frame = 0, worst_energy_frame = 0, worst_kinetic_frame = 0;
  int32_t nan_frame = -1, frames = 0;
  for (int32_t step = 0, frame = 0; step <= r->steps && status == 0; ++step) {
    if (step > 0 &&
        (scene_before_step(&sc) != PIOLA_OK || piola_world_step(sc.world) != PIOLA_OK)) {
      fprintf(stderr, "piola run: step %d failed\n", (int)step);
      status = 1;
      break;
    }
    if (step % r->every != 0 && step != r->steps) {
      continue;
    }
    float c[3], q[4], lin[3], ang[3];
    if (piola_world_get_stats(sc.world, &st) != PIOLA_OK ||
        piola_body_get_positions(sc.world, sc.bodies[0], x, n) != PIOLA_OK ||
        piola_world_get_collider_pose(sc.world, g->sphere_id, c, q, lin, ang) != PIOLA_OK) {
      status = 1;
      break;
    }
    const double ms_per_step = step_clock_read(&clock, step);
    double depth = 0.0, lowest = INFINITY;
    bool finite = isfinite(st.elastic_energy) && isfinite(st.kinetic_energy);
    for (int32_t i = 0; i < n; ++i) {
      finite = finite && isfinite(x[3 * i]) && isfinite(x[3 * i + 1]) && isfinite(x[3 * i + 2]);
      depth = fmax(depth, cloth_depth(g, c, x + 3 * i));
      lowest = fmin(lowest, (double)x[3 * i + 1]);
    }
    if (!finite && nan_frame < 0) {
      nan_frame = frame;
    }
    if (depth > worst_depth) {
      worst_depth = depth;
      worst_depth_frame = frame;
    }
    if (!(st.kinetic_energy <= worst_kinetic)) {
      worst_kinetic = st.kinetic_energy;
      worst_kinetic_frame = frame;
    }
    const double energy = st.elastic_energy + st.kinetic_energy;
    if (step >= g->sphere_stop_step && stop_frame < 0) {
      stop_energy = energy;
      stop_frame = frame;
    } else if (stop_frame >= 0 && !(energy <= worst_energy)) {
      worst_energy = energy;
      worst_energy_frame = frame;
    }
    frames = frame + 1;
    printf("%6d %9.4f %14.6e %14.6e %10.3f %10.4f %9.4f %9.2e %9.2e\n", (int)frame,
           st.simulated_time, st.elastic_energy, st.kinetic_energy, ms_per_step, 1e3 * depth,
           lowest, st.relative_residual, st.coarse_residual);
    fflush(stdout);
    if (r->out != NULL && step % r->every == 0) {
      char path[4096];
      snprintf(path, sizeof path, "%s/frame_%05d.vtk", r->out, (int)frame);
      status = write_vtk_cloth(path, &sc, x);
    }
    ++frame;
    step_clock_restart(&clock); /* the frame's checks and files are not steps */
  }
  if (status == 0) {
    const bool pass_nan = nan_frame < 0;
    const bool pass_depth = pass_nan && worst_depth <= CLOTH_CHECK_DEPTH;
    const bool pass_kinetic = pass_nan && worst_kinetic <= kinetic_bound;
    const bool pass_energy =
        pass_nan && (stop_frame < 0 || worst_energy <= stop_energy + potential);
    printf("checks over %d frames (%d cloth vertices):\n", (int)frames, (int)n);
    if (pass_nan) {
      printf("  NaN:                 none: PASS\n");
    } else {
      printf("  NaN:                 first seen at frame %d: FAIL\n", (int)nan_frame);
    }
    printf("  inside a collider:   deepest cloth vertex %.4f mm (frame %d), limit %.1f mm: %s\n",
           1e3 * worst_depth, (int)worst_depth_frame, 1e3 * CLOTH_CHECK_DEPTH,
           pass_depth ? "PASS" : "FAIL");
    printf("  kinetic bounded:     largest kinetic energy %.4e J (frame %d), limit %.4e J "
           "(m g h + 2 m v_sphere^2): %s\n",
           worst_kinetic, (int)worst_kinetic_frame, kinetic_bound, pass_kinetic ? "PASS" : "FAIL");
    if (stop_frame < 0) {
      printf("  energy bounded:      the sphere still moves at the end: not checked\n");
    } else {
      printf(
          "  energy bounded:      after the sphere stopped (frame %d: %.4e J), largest kinetic + "
          "elastic %.4e J (frame %d), limit %.4e J (+ m g h): %s\n",
          (int)stop_frame, stop_energy, worst_energy, (int)worst_energy_frame,
          stop_energy + potential, pass_energy ? "PASS" : "FAIL");
    }
    if (r->check && !(pass_nan && pass_depth && pass_kinetic && pass_energy)) {
      printf("piola run: a check failed\n");
      status = 1;
    }
  }
  free(x);
  scene_destroy(&sc);
  return status;
}

static void print_help(const cli_command *c) {
  printf("Usage: piola run [options]\n"
         "Simulates a scene and prints per frame the simulated time, elastic and kinetic\n"
         "energy, inverted tets, the wall time per step since the previous frame (ms/step:\n"
         "the device's work included), contacts (vertex-triangle pairs of the last\n"
         "substep, a body's own included), the surface vertices inside another body and inside\n"
         "their own body (away from their own tets; 'far': of those, the ones in a tet that lay\n"
         "farther from them at rest than their self-contact bound, folds that a self-contact\n"
         "should have stopped; the others were pressed into a tet near them, which the elastic\n"
         "solve keeps apart), and for the funnel scene the bodies below its bottom opening.\n"
         "Then sums up the checks: every body through the funnel (funnel scene), at every\n"
         "frame fewer than %.1f%% of the surface vertices inside another body, no NaN, no\n"
         "inverted tet at the end, at rest at the end (kinetic energy below %g J/kg).\n\n",
         100.0 * CHECK_MAX_PENETRATION, (double)CHECK_REST_J_PER_KG);
  cli_print_options(c);
  printf("\n"
         "The cloth scene (--scene cloth) prints per frame the energies, ms/step, the\n"
         "deepest cloth vertex inside a collider and the lowest vertex, and checks: no NaN, no\n"
         "cloth vertex deeper than %.1f mm inside a collider at any frame, kinetic energy at\n"
         "most m g h + 2 m v^2 (the cloth falling its whole height, and moving at twice the\n"
         "sphere's speed), and once the sphere stands still kinetic + elastic energy at most\n"
         "their value then plus m g h. Its frames hold the cloth's triangles (POLYDATA);\n"
         "defaults 400 steps (2 s), a frame every 20.\n\n",
         1e3 * CLOTH_CHECK_DEPTH);
  scene_print_help();
}

int command_run(int argc, char **argv) {
  scene_options o = scene_default_options();
  o.bodies = 0; /* the scene's default, below */
  run_options r = {0, 0, NULL, false, false, CHECK_REST_J_PER_KG};
  char rest_help[256];
  snprintf(rest_help, sizeof rest_help,
           "kinetic energy per kilogram at the end below which the bodies are\n"
           "at rest, J/kg (default %g: an RMS speed of 4.5 cm/s); 0 skips the\n"
           "rest check (short runs)",
           (double)CHECK_REST_J_PER_KG);
  const cli_option options[] = {
      {"--steps", CLI_INT, &r.steps, 1, NULL, "N",
       "steps to simulate (default 200; funnel 2000 = 10 s)"},
      {"--every", CLI_INT, &r.every, 1, NULL, "K",
       "a frame every K steps (default 10; funnel 20); the checks also look\n"
       "at the last step"},
      {"--out", CLI_STRING, &r.out, 0, NULL, "DIR",
       "write DIR/frame_NNNNN.vtk (DIR is created) and DIR/scene.json (the\n"
       "scene, dt, every, body_vertices and the colliders)"},
      {"--surface", CLI_FLAG, &r.surface, 0, NULL, NULL,
       "frames hold the collision surface (POLYDATA triangles) instead of\n"
       "the tets: files about half as large"},
      {"--check", CLI_FLAG, &r.check, 0, NULL, NULL, "exit with status 1 when a check fails"},
      {"--rest-limit", CLI_FLOAT, &r.rest_limit, 0, NULL, "E", rest_help},
  };
  const cli_command c = {.name = "piola run",
                         .options = options,
                         .option_count = CLI_OPTION_COUNT(options),
                         .scene = &o,
                         .value_errors = CLI_VALUE_ERROR_THEN_USAGE,
                         .help_column = 16};
  const int parsed = cli_parse_command(&c, argc, argv, print_help);
  if (parsed >= 0) {
    return parsed;
  }
  const bool funnel = o.scene == SCENE_FUNNEL, cloth = o.scene == SCENE_CLOTH;
  if (o.bodies == 0) {
    o.bodies = funnel ? 100 : 4;
  }
  if (r.steps == 0) {
    r.steps = funnel ? 2000 : cloth ? 400 : 200;
  }
  if (r.every == 0) {
    r.every = funnel || cloth ? 20 : 10;
  }
  if (r.out != NULL && mkdir(r.out, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "piola run: cannot create %s: %s\n", r.out, strerror(errno));
    return 1;
  }
  if (cloth) {
    return run_cloth(&o, &r);
  }
  scene sc;
  if (scene_build(&o, PIOLA_BACKEND_AUTO, &sc) != PIOLA_OK) {
    return 1;
  }
  piola_tet_mesh mesh;
  char name[64];
  if (scene_load_mesh(&o, &mesh, name, sizeof name) != PIOLA_OK) {
    scene_destroy(&sc);
    return 1;
  }
  frame_data fd;
  int status = frame_data_init(&sc, &mesh, &fd);
  if (status == 0 && r.out != NULL) {
    status = write_scene_json(r.out, &sc, &o, &r);
  }
  piola_stats st;
  piola_world_get_stats(sc.world, &st);
  printf("piola run: %s scene, %s x%d on %s (%s), %d steps of %g s\n", scene_kind_name(sc.kind),
         sc.name, (int)sc.body_count, piola_backend_name(st.backend), st.device_name, (int)r.steps,
         (double)o.dt);
  if (funnel) {
    const piola_funnel_shape *u = &sc.geometry.funnel;
    printf("funnel: bottom opening at y = %.3f m, radius %.3f m; top at y = %.3f m, radius "
           "%.3f m; bodies %.3f m tall, %.3f m wide, %.3f kg; column top at y = %.3f m\n",
           (double)u->base[1], (double)u->base_radius, (double)(u->base[1] + u->height),
           (double)u->top_radius, (double)sc.geometry.body_height, (double)sc.geometry.body_width,
           sc.geometry.body_mass, (double)sc.geometry.top);
  }
  printf("%6s %9s %14s %14s %9s %10s %9s %7s %6s %5s%s %9s %9s\n", "frame", "time s", "elastic J",
         "kinetic J", "inverted", "ms/step", "contacts", "inside", "self", "far",
         funnel ? " passed" : "", "residual", "coarse");
  step_clock clock = step_clock_start();
  run_summary sum;
  memset(&sum, 0, sizeof sum);
  const int64_t surface_total = (int64_t)sc.body_count * fd.surface_vertex_count;
  for (int32_t step = 0, frame = 0; step <= r.steps && status == 0; ++step) {
    if (step > 0 && piola_world_step(sc.world) != PIOLA_OK) {
      fprintf(stderr, "piola run: step %d failed\n", (int)step);
      status = 1;
      break;
    }
    if (step % r.every != 0 && step != r.steps) {
      continue;
    }
    if (piola_world_get_stats(sc.world, &st) != PIOLA_OK) {
      status = 1;
      break;
    }
    for (int32_t b = 0; b < sc.body_count && status == 0; ++b) {
      status = piola_body_get_positions(sc.world, sc.bodies[b],
                                        fd.positions + 3 * (size_t)b * sc.body_vertex_count,
                                        sc.body_vertex_count) != PIOLA_OK;
    }
    const double ms_per_step = step_clock_read(&clock, step);
    int64_t inside = status == 0 ? count_vertices_inside_other_bodies(fd.check, sc.body_count) : 0;
    int64_t far = 0;
    int64_t self = status == 0 ? count_vertices_inside_own_body(fd.check, sc.body_count, &far) : 0;
    if (inside < 0 || self < 0) {
      fprintf(stderr, "piola run: out of memory in the contact checks\n");
      status = 1;
    }
    if (status != 0) {
      break;
    }
    const bool finite = all_finite(fd.positions, 3 * (size_t)fd.total_vertices) &&
                        isfinite(st.elastic_energy) && isfinite(st.kinetic_energy);
    if (!finite && !sum.nan_seen) {
      sum.nan_seen = true;
      sum.nan_frame = frame;
    }
    const double fraction = surface_total > 0 ? (double)inside / (double)surface_total : 0.0;
    if (fraction > sum.worst_penetration) {
      sum.worst_penetration = fraction;
      sum.worst_frame = frame;
    }
    sum.max_contacts = st.contact_count > sum.max_contacts ? st.contact_count : sum.max_contacts;
    sum.inverted = st.inverted_tets;
    sum.kinetic_end = st.kinetic_energy;
    sum.frames = frame + 1;
    printf("%6d %9.4f %14.6e %14.6e %9d %10.3f %9d %7lld %6lld %5lld", (int)frame,
           st.simulated_time, st.elastic_energy, st.kinetic_energy, (int)st.inverted_tets,
           ms_per_step, (int)st.contact_count, (long long)inside, (long long)self, (long long)far);
    if (funnel) {
      sum.passed = bodies_through_funnel(&sc, &fd);
      printf(" %6d", (int)sum.passed);
    }
    printf(" %9.2e %9.2e\n", st.relative_residual, st.coarse_residual);
    fflush(stdout);
    if (r.out != NULL && step % r.every == 0) { /* frame N is at N * every * dt */
      char path[4096];
      snprintf(path, sizeof path, "%s/frame_%05d.vtk", r.out, (int)frame);
      status =
          r.surface ? write_vtk_surface(path, &sc, &fd) : write_vtk_tets(path, &sc, &mesh, &fd);
    }
    ++frame;
    step_clock_restart(&clock); /* the frame's checks and files are not steps */
  }
  if (status == 0) {
    int failed = run_checks(&sc, &fd, &sum, r.rest_limit);
    if (r.check && failed) {
      printf("piola run: a check failed\n");
      status = 1;
    }
  }
  frame_data_free(&fd);
  piola_mesh_free(&mesh);
  scene_destroy(&sc);
  return status;
}
