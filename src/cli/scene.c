/* Scene construction and the option parsing shared by the piola program's commands. */
#include "scene.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

scene_options scene_default_options(void) {
  scene_options o;
  memset(&o, 0, sizeof o);
  o.bodies = 100;
  o.backend = PIOLA_BACKEND_AUTO;
  o.iterations = 5;
  o.substeps = 1;
  o.dt = 0.005f;
  o.material = piola_default_material();
  /* Neo-Hookean: StVK loses stiffness under strong compression (its stress peaks at a stretch
   * of 0.577), so impacts leave clusters of inverted tets behind that jitter. */
  o.material.model = PIOLA_MODEL_NEOHOOKEAN;
  o.material.youngs_modulus = 1.0e6f;
  o.squash = 0.6f;
  o.ground = true;
  o.friction = 0.5f;
  o.scheme = PIOLA_SCHEME_GAUSS_SEIDEL;
  o.jacobi_omega = 1.0f;
  return o;
}

void cli_log(piola_log_level level, const char *message, void *user_data) {
  const bool verbose = user_data != NULL && *(const bool *)user_data;
  if (level <= PIOLA_LOG_WARNING || verbose) {
    static const char *const names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "piola: %s: %s\n", names[level], message);
  }
}

bool parse_int(const char *flag, const char *text, int32_t min, int32_t *out) {
  char *end = NULL;
  errno = 0;
  long v = text != NULL ? strtol(text, &end, 10) : 0;
  if (text == NULL || end == text || *end != '\0' || errno != 0 || v < min || v > INT32_MAX) {
    fprintf(stderr, "piola: %s needs an integer >= %d (got '%s')\n", flag, (int)min,
            text != NULL ? text : "");
    return false;
  }
  *out = (int32_t)v;
  return true;
}

bool parse_float(const char *flag, const char *text, float *out) {
  char *end = NULL;
  errno = 0;
  double v = text != NULL ? strtod(text, &end) : 0.0;
  if (text == NULL || end == text || *end != '\0' || errno != 0 || !isfinite(v)) {
    fprintf(stderr, "piola: %s needs a number (got '%s')\n", flag, text != NULL ? text : "");
    return false;
  }
  *out = (float)v;
  return true;
}

void scene_print_help(void) {
  printf("Scene options:\n"
         "  --bodies N          bodies on a grid above the ground (default 100)\n"
         "  --mesh PATH.node    TetGen mesh (its .ele beside it) instead of the procedural\n"
         "                      creature, e.g. ../shared/data/armadillo/armadillo_4k.node\n"
         "  --backend B         cpu (the double-precision reference), opencl or auto (default)\n"
         "  --device SPEC       OpenCL device: P:D, gpu, cpu or a name substring\n"
         "  --iterations N      solver iterations per substep (default 5)\n"
         "  --substeps N        substeps per step (default 1)\n"
         "  --dt S              step length in seconds (default 0.005)\n"
         "  --model M           neohookean (default) or stvk\n"
         "  --solver S          xpbd (default) or pbd (the paper's plain form)\n"
         "  --youngs E          Young's modulus in Pa (default 1e6)\n"
         "  --poisson NU        Poisson's ratio (default 0.3)\n"
         "  --density RHO       kg/m^3 (default 1000)\n"
         "  --inversion MODE    off, on (default) or always\n"
         "  --split S           XPBD constraints per tet: lame (default: the mu and lambda terms\n"
         "                      as two) or none (one constraint of the whole energy)\n"
         "  --plastic-yield Y   plastic yield strain (default 0.1)\n"
         "  --plastic-creep C   plastic creep in 1/s (default 0: plasticity off)\n"
         "  --plastic-max M     largest plastic strain (default 0.3)\n"
         "  --squash F          initial vertical scale of each body (default 0.6)\n"
         "  --no-ground         no ground plane\n"
         "  --friction MU       ground friction (default 0.5)\n"
         "  --scheme S          gauss-seidel (default: colored) or jacobi\n"
         "  --max-colors N      at most N Gauss-Seidel colors; the other tets are solved in one\n"
         "                      Jacobi pass per iteration (default 0: as many as needed)\n"
         "  --omega W           over-relaxation of Jacobi passes, in (0, 2) (default 1)\n"
         "  --work-group N      OpenCL work-group size (default: per device)\n"
         "  --schedule S        OpenCL launches: auto (default), stages (one per color per\n"
         "                      iteration) or bodies (one per substep, a work-group per body)\n"
         "  --profile           OpenCL: time each stage with device events\n"
         "  --verbose           print the library's informational messages\n");
}

static int choose(const char *flag, const char *text, const char *const *names, int n) {
  for (int i = 0; text != NULL && i < n; ++i) {
    if (strcmp(text, names[i]) == 0) {
      return i;
    }
  }
  fprintf(stderr, "piola: %s: unknown value '%s'\n", flag, text != NULL ? text : "");
  return -1;
}

int scene_parse_option(scene_options *o, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  bool ok = true;
  bool takes_value = true;
  if (strcmp(a, "--bodies") == 0) {
    ok = parse_int(a, v, 1, &o->bodies);
  } else if (strcmp(a, "--mesh") == 0) {
    o->mesh_path = v;
    ok = v != NULL;
  } else if (strcmp(a, "--backend") == 0) {
    static const char *const names[] = {"auto", "cpu", "opencl"};
    int k = choose(a, v, names, 3);
    ok = k >= 0;
    o->backend = k == 1   ? PIOLA_BACKEND_CPU_REFERENCE
                 : k == 2 ? PIOLA_BACKEND_OPENCL
                          : PIOLA_BACKEND_AUTO;
  } else if (strcmp(a, "--device") == 0) {
    o->device = v;
    ok = v != NULL;
  } else if (strcmp(a, "--iterations") == 0) {
    ok = parse_int(a, v, 1, &o->iterations);
  } else if (strcmp(a, "--substeps") == 0) {
    ok = parse_int(a, v, 1, &o->substeps);
  } else if (strcmp(a, "--dt") == 0) {
    ok = parse_float(a, v, &o->dt);
  } else if (strcmp(a, "--model") == 0) {
    static const char *const names[] = {"stvk", "neohookean"};
    int k = choose(a, v, names, 2);
    ok = k >= 0;
    o->material.model = k == 1 ? PIOLA_MODEL_NEOHOOKEAN : PIOLA_MODEL_STVK;
  } else if (strcmp(a, "--solver") == 0) {
    static const char *const names[] = {"xpbd", "pbd"};
    int k = choose(a, v, names, 2);
    ok = k >= 0;
    o->material.solver = k == 1 ? PIOLA_SOLVER_PBD : PIOLA_SOLVER_XPBD;
  } else if (strcmp(a, "--youngs") == 0) {
    ok = parse_float(a, v, &o->material.youngs_modulus);
  } else if (strcmp(a, "--poisson") == 0) {
    ok = parse_float(a, v, &o->material.poisson_ratio);
  } else if (strcmp(a, "--density") == 0) {
    ok = parse_float(a, v, &o->material.density);
  } else if (strcmp(a, "--inversion") == 0) {
    static const char *const names[] = {"off", "on", "always"};
    int k = choose(a, v, names, 3);
    ok = k >= 0;
    o->material.handle_inversion = (piola_inversion)(k >= 0 ? k : 1);
  } else if (strcmp(a, "--split") == 0) {
    static const char *const names[] = {"lame", "none"};
    int k = choose(a, v, names, 2);
    ok = k >= 0;
    o->material.split = k == 1 ? PIOLA_SPLIT_NONE : PIOLA_SPLIT_LAME;
  } else if (strcmp(a, "--plastic-yield") == 0) {
    ok = parse_float(a, v, &o->material.plastic_yield);
  } else if (strcmp(a, "--plastic-creep") == 0) {
    ok = parse_float(a, v, &o->material.plastic_creep);
  } else if (strcmp(a, "--plastic-max") == 0) {
    ok = parse_float(a, v, &o->material.plastic_max);
  } else if (strcmp(a, "--squash") == 0) {
    ok = parse_float(a, v, &o->squash) && o->squash > 0.0f;
  } else if (strcmp(a, "--friction") == 0) {
    ok = parse_float(a, v, &o->friction);
  } else if (strcmp(a, "--scheme") == 0) {
    static const char *const names[] = {"gauss-seidel", "jacobi"};
    int k = choose(a, v, names, 2);
    ok = k >= 0;
    o->scheme = k == 1 ? PIOLA_SCHEME_JACOBI : PIOLA_SCHEME_GAUSS_SEIDEL;
  } else if (strcmp(a, "--max-colors") == 0) {
    ok = parse_int(a, v, 0, &o->max_colors);
  } else if (strcmp(a, "--omega") == 0) {
    ok = parse_float(a, v, &o->jacobi_omega);
  } else if (strcmp(a, "--schedule") == 0) {
    static const char *const names[] = {"auto", "stages", "bodies"};
    int k = choose(a, v, names, 3);
    ok = k >= 0;
    o->schedule = (piola_schedule)(k >= 0 ? k : 0);
  } else if (strcmp(a, "--work-group") == 0) {
    ok = parse_int(a, v, 0, &o->work_group_size);
  } else {
    takes_value = false;
    if (strcmp(a, "--no-ground") == 0) {
      o->ground = false;
    } else if (strcmp(a, "--profile") == 0) {
      o->profile = true;
    } else if (strcmp(a, "--verbose") == 0) {
      o->verbose = true;
    } else {
      return 0;
    }
  }
  if (!ok) {
    if (v == NULL) {
      fprintf(stderr, "piola: %s needs a value\n", a);
    }
    return -1;
  }
  if (takes_value) {
    ++*i;
  }
  return 1;
}

/* The .ele path beside a .node path (or beside a path without extension). */
static bool mesh_paths(const char *path, char *node, char *ele, size_t n) {
  size_t len = strlen(path);
  const char *dot = strrchr(path, '.');
  const char *slash = strrchr(path, '/');
  size_t stem = (dot != NULL && (slash == NULL || dot > slash)) ? (size_t)(dot - path) : len;
  if (stem + 6 > n) {
    return false;
  }
  snprintf(node, n, "%.*s.node", (int)stem, path);
  snprintf(ele, n, "%.*s.ele", (int)stem, path);
  return true;
}

piola_status scene_load_mesh(const scene_options *o, piola_tet_mesh *mesh, char *name,
                             size_t name_size) {
  piola_status s;
  if (o->mesh_path == NULL) {
    s = piola_mesh_make_creature(3.0f, mesh);
    snprintf(name, name_size, "creature");
  } else {
    char node[4096], ele[4096];
    if (!mesh_paths(o->mesh_path, node, ele, sizeof node)) {
      fprintf(stderr, "piola: mesh path too long\n");
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    bool verbose = o->verbose;
    piola_logger log = {cli_log, &verbose};
    s = piola_mesh_load_tetgen_logged(node, ele, &log, mesh);
    const char *base = strrchr(o->mesh_path, '/');
    snprintf(name, name_size, "%s", base != NULL ? base + 1 : o->mesh_path);
    char *dot = strrchr(name, '.');
    if (dot != NULL) {
      *dot = '\0';
    }
    if (s == PIOLA_OK) {
      /* Centre on x = z = 0 with the lowest point at y = 0, like the creature. */
      float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
      for (int32_t i = 0; i < mesh->vertex_count; ++i) {
        for (int k = 0; k < 3; ++k) {
          lo[k] = fminf(lo[k], mesh->positions[3 * i + k]);
          hi[k] = fmaxf(hi[k], mesh->positions[3 * i + k]);
        }
      }
      float shift[3] = {-(lo[0] + hi[0]) / 2, -lo[1], -(lo[2] + hi[2]) / 2};
      for (int32_t i = 0; i < mesh->vertex_count; ++i) {
        for (int k = 0; k < 3; ++k) {
          mesh->positions[3 * i + k] += shift[k];
        }
      }
    }
  }
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola: cannot load the mesh: %s\n", piola_status_string(s));
  }
  return s;
}

piola_status scene_build(const scene_options *o, piola_backend backend_override, scene *out) {
  memset(out, 0, sizeof *out);
  static bool verbose_on = true, verbose_off = false;
  piola_world_def def = piola_default_world_def();
  def.backend = backend_override != PIOLA_BACKEND_AUTO ? backend_override : o->backend;
  def.device_spec = o->device;
  def.dt = o->dt;
  def.substeps = o->substeps;
  def.iterations = o->iterations;
  def.work_group_size = o->work_group_size;
  def.schedule = o->schedule;
  def.iteration_scheme = o->scheme;
  def.max_colors = o->max_colors;
  def.jacobi_omega = o->jacobi_omega;
  def.profile = o->profile;
  def.logger.fn = cli_log;
  def.logger.user_data = o->verbose ? &verbose_on : &verbose_off;
  piola_tet_mesh mesh;
  piola_status s = scene_load_mesh(o, &mesh, out->name, sizeof out->name);
  if (s != PIOLA_OK) {
    return s;
  }
  s = piola_world_create(&def, &out->world);
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola: cannot create the world (%s backend): %s\n",
            piola_backend_name(def.backend), piola_status_string(s));
    piola_mesh_free(&mesh);
    return s;
  }
  float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t i = 0; i < mesh.vertex_count; ++i) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = fminf(lo[k], mesh.positions[3 * i + k]);
      hi[k] = fmaxf(hi[k], mesh.positions[3 * i + k]);
    }
  }
  const float height = hi[1] - lo[1];
  const float spacing = 1.2f * fmaxf(hi[0] - lo[0], hi[2] - lo[2]);
  int32_t side = 1;
  while (side * side < o->bodies) {
    ++side;
  }
  out->bodies = malloc(sizeof *out->bodies * (size_t)o->bodies);
  float *squashed = malloc(sizeof *squashed * 3 * (size_t)mesh.vertex_count);
  if (out->bodies == NULL || squashed == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK && o->ground) {
    const float up[3] = {0.0f, 1.0f, 0.0f};
    s = piola_world_add_plane(out->world, up, 0.0f, o->friction);
  }
  const float lift = 0.1f * height;
  for (int32_t b = 0; b < o->bodies && s == PIOLA_OK; ++b) {
    float at[3] = {((float)(b % side) - 0.5f * (float)(side - 1)) * spacing, lift,
                   ((float)(b / side) - 0.5f * (float)(side - 1)) * spacing};
    s = piola_world_add_tet_body(out->world, &mesh, &o->material, at, &out->bodies[b]);
    if (s == PIOLA_OK && o->squash != 1.0f) {
      for (int32_t i = 0; i < mesh.vertex_count; ++i) {
        squashed[3 * i] = mesh.positions[3 * i] + at[0];
        squashed[3 * i + 1] = mesh.positions[3 * i + 1] * o->squash + at[1];
        squashed[3 * i + 2] = mesh.positions[3 * i + 2] + at[2];
      }
      s = piola_body_set_positions(out->world, out->bodies[b], squashed, mesh.vertex_count);
    }
    if (s == PIOLA_OK) {
      out->body_count++;
    }
  }
  free(squashed);
  out->body_vertex_count = mesh.vertex_count;
  out->body_tet_count = mesh.tet_count;
  piola_mesh_free(&mesh);
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola: cannot build the scene: %s\n", piola_status_string(s));
    scene_destroy(out);
  }
  return s;
}

void scene_destroy(scene *s) {
  piola_world_destroy(s->world);
  free(s->bodies);
  memset(s, 0, sizeof *s);
}

double now_seconds(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cpu_model_name(char *out, size_t n) {
  snprintf(out, n, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) {
    return;
  }
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "model name", 10) == 0) {
      const char *c = strchr(line, ':');
      if (c != NULL) {
        snprintf(out, n, "%s", c + 2);
        out[strcspn(out, "\n")] = '\0';
      }
      break;
    }
  }
  fclose(f);
}
