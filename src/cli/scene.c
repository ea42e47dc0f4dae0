/* Scene construction and the option parsing shared by the piola program's commands: the grid
 * scene (bodies side by side, squashed), the funnel scene of Bender et al. 2014, Sec. 6 (a
 * column of bodies falling through a funnel onto the ground) and the cloth scene of its Fig. 1
 * right (a cloth falling over four boxes, pushed down by a moving sphere). */
#include "scene.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int32_t scene_substeps(const scene_options *o) {
  return o->substeps > 0 ? o->substeps : o->scene == SCENE_FUNNEL ? 4 : 1; /* cloth: 1 */
}

scene_options scene_default_options(void) {
  scene_options o;
  memset(&o, 0, sizeof o);
  o.scene = SCENE_GRID;
  o.bodies = 100;
  o.backend = PIOLA_BACKEND_AUTO;
  o.iterations = 5;
  o.substeps = 0; /* the scene's: 1 on the grid, 4 in the funnel */
  o.dt = 0.005f;
  o.material = piola_default_material();
  /* Neo-Hookean: StVK loses stiffness under strong compression (its stress peaks at a stretch
   * of 0.577), so impacts leave clusters of inverted tets behind that jitter. */
  o.material.model = PIOLA_MODEL_NEOHOOKEAN;
  o.material.youngs_modulus = 1.0e6f;
  o.squash = 0.0f;      /* the scene's: 0.6 on the grid, 1 in the funnel */
  o.body_height = 0.0f; /* the scene's: the mesh as loaded on the grid, 1 m in the funnel */
  o.ground = true;
  o.friction = 0.5f;
  o.funnel_friction = 0.2f;
  o.funnel_opening = 2.5f;
  o.contacts = true;
  o.self_collision = true;
  o.edge_contacts = false;
  o.cpu_threads = 1;
  o.contact_thickness = 0.0f;
  o.contact_friction = -1.0f;
  o.scheme = PIOLA_SCHEME_GAUSS_SEIDEL;
  o.jacobi_omega = 1.0f;
  o.vbd_chebyshev_rho = 0.0f;
  o.cloth_cells = 200;
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

/* parse_float() and a lower bound: value > min (exclusive) or >= min; prints what is wrong. */
static bool parse_float_min(const char *flag, const char *text, float min, bool exclusive,
                            float *out) {
  float v;
  if (!parse_float(flag, text, &v)) {
    return false;
  }
  if (exclusive ? !(v > min) : !(v >= min)) {
    fprintf(stderr, "piola: %s needs a number %s %g (got '%s')\n", flag,
            exclusive ? ">" : ">=", (double)min, text);
    return false;
  }
  *out = v;
  return true;
}

const char *scene_kind_name(scene_kind kind) {
  return kind == SCENE_FUNNEL ? "funnel" : kind == SCENE_CLOTH ? "cloth" : "grid";
}

void scene_print_help(void) {
  printf("Scene options:\n"
         "  --scene S           grid (default: bodies side by side above the ground, squashed)\n"
         "                      or funnel (the paper's Sec. 6: a column of layers of up to 3x3\n"
         "                      bodies above a funnel, falling through it onto the ground)\n"
         "                      or cloth (the paper's Fig. 1 right: a 3 m square cloth of\n"
         "                      200 x 200 cells falling over four boxes, a sphere of 0.35 m\n"
         "                      moving down at 2 m/s pushing it towards the ground; the tet\n"
         "                      options do not apply to it)\n"
         "  --cloth-cells N     cloth scene: N x N cells, (N+1)^2 vertices, 2 N^2 triangles\n"
         "                      (default 200: 40401 vertices, 80000 triangles, as the paper's)\n"
         "  --bodies N          bodies (default 100; `run` on the grid: 4)\n"
         "  --mesh PATH         a tet mesh instead of the procedural creature: PATH.msh is a\n"
         "                      Gmsh file (ASCII 2.2 or 4.1), any other path a TetGen mesh\n"
         "                      (PATH.node and the .ele beside it), e.g.\n"
         "                      ../shared/data/armadillo/armadillo_4k.node\n"
         "  --box NX,NY,NZ      a box of NX x NY x NZ cubes of 5 cm, 6 tets each, instead\n"
         "                      (e.g. 40,39,40: 374400 tets, one large body with --bodies 1)\n"
         "  --backend B         cpu (the double-precision reference), opencl or auto (default)\n"
         "  --device SPEC       OpenCL device: P:D, gpu, cpu or a name substring\n"
         "  --iterations N      solver iterations per substep (default 5)\n"
         "  --substeps N        substeps per step (default: grid 1, funnel 4: the column's\n"
         "                      impacts at up to 18 m/s need them; 1 is the paper's setting)\n"
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
         "  --material-damping S  material damping of the elastic energy in s (default 0)\n"
         "  --squash F          initial vertical scale of each body (default: grid 0.6,\n"
         "                      funnel 1)\n"
         "  --body-height M     scale each body uniformly to M metres tall (default: grid the\n"
         "                      mesh as loaded, 3 m for the creature; funnel 1)\n"
         "  --no-ground         no ground plane\n"
         "  --friction MU       ground friction (default 0.5)\n"
         "  --funnel-friction MU  friction of the funnel's wall (default 0.2)\n"
         "  --funnel-opening F  diameter of the funnel's bottom opening in body widths (default\n"
         "                      2.5; a body's width: the diameter of the vertical cylinder it\n"
         "                      turns in)\n"
         "  --funnel-mesh N     the funnel as an open triangle mesh of about N triangles (a\n"
         "                      PIOLA_COLLIDER_MESH) instead of the analytic funnel\n"
         "  --no-contacts       bodies pass through each other (static colliders still act)\n"
         "  --no-self-collision a body passes through itself (contacts between bodies stay)\n"
         "  --edge-contacts     edges meet edges too (edge-edge contacts; off by default)\n"
         "  --no-edge-contacts  only vertices meet triangles (the default)\n"
         "  --contact-thickness M  distance kept between touching bodies (default 0.01)\n"
         "  --contact-friction MU  friction between bodies (default 0.5)\n");
  printf("  --scheme S          gauss-seidel (default: colored), jacobi, vbd (vertex block\n"
         "                      descent) or multigrid (a Newton step per iteration, solved by\n"
         "                      multigrid-preconditioned conjugate gradients; on OpenCL the\n"
         "                      solve runs on the host between the device's stages)\n"
         "  --max-colors N      at most N Gauss-Seidel colors; the other tets are solved in one\n"
         "                      Jacobi pass per iteration (default 0: as many as needed)\n"
         "  --omega W           over-relaxation of Jacobi passes, in (0, 2) (default 1)\n"
         "  --vbd-rho R         --scheme vbd: Chebyshev acceleration of the iterations,\n"
         "                      the spectral radius estimate in [0, 1) (default 0: off)\n"
         "  --work-group N      OpenCL work-group size (default: per device)\n"
         "  --schedule S        OpenCL launches: auto (default), stages (one per color per\n"
         "                      iteration) or bodies (one per substep, a work-group per body)\n"
         "  --lanes N           OpenCL, per stage: tets one work-item projects at once in SIMD\n"
         "                      lanes: 1, 4, 8 or 16 (default 0: on CPU devices their native\n"
         "                      float vector width, 16 with AVX-512, 8 with AVX2; else 1)\n"
         "  --threads N         CPU reference, and OpenCL's host solve under --scheme\n"
         "                      multigrid: threads per step, the same result for any N\n"
         "                      (default 1; 0: one per core)\n"
         "  --profile           OpenCL: time each stage and kernel with device events\n"
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
  if (strcmp(a, "--scene") == 0) {
    static const char *const names[] = {"grid", "funnel", "cloth"};
    int k = choose(a, v, names, 3);
    ok = k >= 0;
    o->scene = k == 1 ? SCENE_FUNNEL : k == 2 ? SCENE_CLOTH : SCENE_GRID;
  } else if (strcmp(a, "--cloth-cells") == 0) {
    ok = parse_int(a, v, 1, &o->cloth_cells);
  } else if (strcmp(a, "--bodies") == 0) {
    ok = parse_int(a, v, 1, &o->bodies);
  } else if (strcmp(a, "--mesh") == 0) {
    o->mesh_path = v;
    ok = v != NULL;
  } else if (strcmp(a, "--box") == 0) {
    int n = 0;
    ok = v != NULL &&
         sscanf(v, "%d,%d,%d%n", &o->box_cells[0], &o->box_cells[1], &o->box_cells[2], &n) == 3 &&
         v[n] == '\0' && o->box_cells[0] > 0 && o->box_cells[1] > 0 && o->box_cells[2] > 0;
    if (!ok) {
      fprintf(stderr, "piola: --box needs three positive cell counts, e.g. 40,39,40\n");
    }
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
  } else if (strcmp(a, "--material-damping") == 0) {
    ok = parse_float(a, v, &o->material.damping);
  } else if (strcmp(a, "--squash") == 0) {
    ok = parse_float_min(a, v, 0.0f, true, &o->squash);
  } else if (strcmp(a, "--body-height") == 0) {
    ok = parse_float_min(a, v, 0.0f, true, &o->body_height);
  } else if (strcmp(a, "--friction") == 0) {
    ok = parse_float_min(a, v, 0.0f, false, &o->friction);
  } else if (strcmp(a, "--funnel-friction") == 0) {
    ok = parse_float_min(a, v, 0.0f, false, &o->funnel_friction);
  } else if (strcmp(a, "--funnel-opening") == 0) {
    ok = parse_float_min(a, v, 0.0f, true, &o->funnel_opening);
  } else if (strcmp(a, "--funnel-mesh") == 0) {
    ok = parse_int(a, v, 2, &o->funnel_mesh);
  } else if (strcmp(a, "--contact-thickness") == 0) {
    ok = parse_float_min(a, v, 0.0f, true, &o->contact_thickness);
  } else if (strcmp(a, "--contact-friction") == 0) {
    ok = parse_float_min(a, v, 0.0f, false, &o->contact_friction);
  } else if (strcmp(a, "--scheme") == 0) {
    /* in the order of piola_iteration_scheme */
    static const char *const names[] = {"gauss-seidel", "jacobi", "vbd", "multigrid"};
    int k = choose(a, v, names, 4);
    ok = k >= 0;
    o->scheme = ok ? (piola_iteration_scheme)k : PIOLA_SCHEME_GAUSS_SEIDEL;
  } else if (strcmp(a, "--max-colors") == 0) {
    ok = parse_int(a, v, 0, &o->max_colors);
  } else if (strcmp(a, "--omega") == 0) {
    ok = parse_float(a, v, &o->jacobi_omega);
  } else if (strcmp(a, "--vbd-rho") == 0) {
    ok = parse_float(a, v, &o->vbd_chebyshev_rho);
  } else if (strcmp(a, "--schedule") == 0) {
    static const char *const names[] = {"auto", "stages", "bodies"};
    int k = choose(a, v, names, 3);
    ok = k >= 0;
    o->schedule = (piola_schedule)(k >= 0 ? k : 0);
  } else if (strcmp(a, "--work-group") == 0) {
    ok = parse_int(a, v, 0, &o->work_group_size);
  } else if (strcmp(a, "--lanes") == 0) {
    ok = parse_int(a, v, 0, &o->simd_lanes);
  } else if (strcmp(a, "--threads") == 0) {
    ok = parse_int(a, v, 0, &o->cpu_threads);
  } else {
    takes_value = false;
    if (strcmp(a, "--no-ground") == 0) {
      o->ground = false;
    } else if (strcmp(a, "--no-contacts") == 0) {
      o->contacts = false;
    } else if (strcmp(a, "--no-self-collision") == 0) {
      o->self_collision = false;
    } else if (strcmp(a, "--no-edge-contacts") == 0) {
      o->edge_contacts = false;
    } else if (strcmp(a, "--edge-contacts") == 0) {
      o->edge_contacts = true;
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

/* Whether a path names a Gmsh file: it ends in ".msh" (any case). */
static bool is_gmsh_path(const char *path) {
  size_t len = strlen(path);
  if (len < 4 || path[len - 4] != '.') {
    return false;
  }
  const char *ext = path + len - 3;
  return tolower((unsigned char)ext[0]) == 'm' && tolower((unsigned char)ext[1]) == 's' &&
         tolower((unsigned char)ext[2]) == 'h';
}

piola_status scene_load_mesh(const scene_options *o, piola_tet_mesh *mesh, char *name,
                             size_t name_size) {
  piola_status s;
  if (o->box_cells[0] > 0) {
    const float cell = 0.05f;
    const float size[3] = {cell * (float)o->box_cells[0], cell * (float)o->box_cells[1],
                           cell * (float)o->box_cells[2]};
    s = piola_mesh_make_box(o->box_cells, size, mesh);
    snprintf(name, name_size, "box_%dx%dx%d", (int)o->box_cells[0], (int)o->box_cells[1],
             (int)o->box_cells[2]);
    /* Centred on x = z = 0 with its bottom at y = 0, like the creature. */
    for (int32_t i = 0; s == PIOLA_OK && i < mesh->vertex_count; ++i) {
      mesh->positions[3 * i] -= 0.5f * size[0];
      mesh->positions[3 * i + 2] -= 0.5f * size[2];
    }
  } else if (o->mesh_path == NULL) {
    s = piola_mesh_make_creature(3.0f, mesh);
    snprintf(name, name_size, "creature");
  } else {
    bool verbose = o->verbose;
    piola_logger log = {cli_log, &verbose};
    if (is_gmsh_path(o->mesh_path)) {
      s = piola_mesh_load_gmsh_logged(o->mesh_path, &log, mesh);
    } else {
      char node[4096], ele[4096];
      if (!mesh_paths(o->mesh_path, node, ele, sizeof node)) {
        fprintf(stderr, "piola: mesh path too long\n");
        return PIOLA_ERROR_INVALID_ARGUMENT;
      }
      s = piola_mesh_load_tetgen_logged(node, ele, &log, mesh);
    }
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

/* The layout of the funnel scene, in body heights H where not said otherwise. */
enum { FUNNEL_LAYER_SIDE = 3 };              /* a layer holds up to 3 x 3 bodies */
static const float funnel_gap_across = 0.1f; /* between neighbours' cylinders in a layer, H */
static const float funnel_gap_up = 0.2f;     /* between layers, and below the first, H */
static const float funnel_rim = 0.1f;        /* top radius beyond the layers' reach, H */
/* Wall angle from the horizontal: steep walls make the whole content flow (mass flow) rather
 * than a channel over a dead zone. */
static const double funnel_wall_degrees = 60.0;
/* The pile below the funnel, for the funnel's height: a cone of slope 30 degrees holding the
 * bodies' volume at a packing fraction of 0.5, plus one body height for the body that leaves
 * the opening; at least 1.5 H. */
static const double pile_slope_degrees = 30.0;
static const double pile_packing = 0.5;
static const double pi = 3.14159265358979323846;

/* Bounds and size of a mesh (already centred on x = z = 0, lowest point at y = 0). */
typedef struct mesh_extent {
  float height;  /* m */
  float radius;  /* m; largest distance of a vertex from the vertical axis x = z = 0 */
  double volume; /* m^3; sum of the tets' volumes */
} mesh_extent;

static mesh_extent measure_mesh(const piola_tet_mesh *m) {
  mesh_extent e = {0.0f, 0.0f, 0.0};
  float lo = INFINITY, hi = -INFINITY;
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    const float *p = m->positions + 3 * i;
    lo = fminf(lo, p[1]);
    hi = fmaxf(hi, p[1]);
    e.radius = fmaxf(e.radius, sqrtf(p[0] * p[0] + p[2] * p[2]));
  }
  e.height = hi - lo;
  for (int32_t t = 0; t < m->tet_count; ++t) {
    const int32_t *q = m->tets + 4 * t;
    double u[3], v[3], w[3];
    for (int k = 0; k < 3; ++k) {
      double o = m->positions[3 * q[0] + k];
      u[k] = m->positions[3 * q[1] + k] - o;
      v[k] = m->positions[3 * q[2] + k] - o;
      w[k] = m->positions[3 * q[3] + k] - o;
    }
    double det = u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
                 u[2] * (v[0] * w[1] - v[1] * w[0]);
    e.volume += fabs(det) / 6.0;
  }
  return e;
}

/* Adds one body: the mesh turned by `angle` (rad) about the vertical axis, moved to `at`, and,
 * when squash != 1, started squashed vertically by that factor. `scratch` holds 3 floats per
 * vertex. */
static piola_status add_body(const scene_options *o, const piola_tet_mesh *mesh, float angle,
                             const float at[3], float squash, float *scratch, piola_body_id *out,
                             scene *sc) {
  const float c = cosf(angle), s = sinf(angle);
  for (int32_t i = 0; i < mesh->vertex_count; ++i) {
    const float *p = mesh->positions + 3 * i;
    scratch[3 * i] = c * p[0] + s * p[2];
    scratch[3 * i + 1] = p[1];
    scratch[3 * i + 2] = -s * p[0] + c * p[2];
  }
  piola_tet_mesh turned = *mesh;
  turned.positions = scratch;
  piola_status st = piola_world_add_tet_body(sc->world, &turned, &o->material, at, out);
  if (st == PIOLA_OK && !o->self_collision) {
    st = piola_body_set_self_collision(sc->world, *out, false);
  }
  if (st == PIOLA_OK && squash != 1.0f) {
    for (int32_t i = 0; i < mesh->vertex_count; ++i) {
      scratch[3 * i] += at[0];
      scratch[3 * i + 1] = scratch[3 * i + 1] * squash + at[1];
      scratch[3 * i + 2] += at[2];
    }
    st = piola_body_set_positions(sc->world, *out, scratch, mesh->vertex_count);
  }
  if (st == PIOLA_OK) {
    sc->body_count++;
  }
  return st;
}

/* The grid scene: bodies on a square grid 1.2 body widths apart, lifted by a tenth of their
 * height, started squashed (default 0.6). */
static piola_status build_grid(const scene_options *o, const piola_tet_mesh *mesh,
                               const mesh_extent *e, float *scratch, scene *sc) {
  float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t i = 0; i < mesh->vertex_count; ++i) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = fminf(lo[k], mesh->positions[3 * i + k]);
      hi[k] = fmaxf(hi[k], mesh->positions[3 * i + k]);
    }
  }
  const float spacing = 1.2f * fmaxf(hi[0] - lo[0], hi[2] - lo[2]);
  const float squash = o->squash > 0.0f ? o->squash : 0.6f;
  int32_t side = 1;
  while (side * side < o->bodies) {
    ++side;
  }
  const float lift = 0.1f * e->height;
  sc->geometry.top = lift + e->height * fmaxf(squash, 1.0f);
  piola_status s = PIOLA_OK;
  for (int32_t b = 0; b < o->bodies && s == PIOLA_OK; ++b) {
    float at[3] = {((float)(b % side) - 0.5f * (float)(side - 1)) * spacing, lift,
                   ((float)(b / side) - 0.5f * (float)(side - 1)) * spacing};
    s = add_body(o, mesh, 0.0f, at, squash, scratch, &sc->bodies[b], sc);
  }
  return s;
}

/* The funnel u as an open triangle mesh of about `triangles` triangles (rings of quads around
 * the axis, as many around as sqrt(triangles), each split in two), added with def's friction as a
 * PIOLA_COLLIDER_MESH. */
static piola_status add_funnel_mesh(const piola_funnel_shape *u, int32_t triangles,
                                    const piola_collider_def *def, piola_world *world) {
  const int32_t around = (int32_t)fmax(3.0, floor(sqrt((double)triangles) + 0.5));
  const int32_t rings = (int32_t)fmax(1.0, floor((double)triangles / (2.0 * around) + 0.5));
  const int32_t nv = around * (rings + 1), nt = 2 * around * rings;
  float *positions = malloc(sizeof *positions * 3 * (size_t)nv);
  int32_t *tris = malloc(sizeof *tris * 3 * (size_t)nt);
  if (positions == NULL || tris == NULL) {
    free(positions);
    free(tris);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t r = 0; r <= rings; ++r) {
    const double f = (double)r / rings;
    const double radius = u->base_radius + f * (u->top_radius - u->base_radius);
    for (int32_t a = 0; a < around; ++a) {
      const double phi = 2.0 * pi * a / around;
      float *p = positions + 3 * (size_t)(r * around + a);
      p[0] = (float)(u->base[0] + radius * cos(phi));
      p[1] = (float)(u->base[1] + f * u->height);
      p[2] = (float)(u->base[2] + radius * sin(phi));
    }
  }
  int32_t *t = tris;
  for (int32_t r = 0; r < rings; ++r) {
    for (int32_t a = 0; a < around; ++a) {
      const int32_t b = (a + 1) % around, v0 = r * around + a, v1 = r * around + b;
      const int32_t v2 = v0 + around, v3 = v1 + around;
      *t++ = v0, *t++ = v2, *t++ = v1;
      *t++ = v1, *t++ = v2, *t++ = v3;
    }
  }
  piola_collider_def m = *def;
  m.type = PIOLA_COLLIDER_MESH;
  m.shape.mesh.positions = positions;
  m.shape.mesh.vertex_count = nv;
  m.shape.mesh.triangles = tris;
  m.shape.mesh.triangle_count = nt;
  const piola_status s = piola_world_add_collider(world, &m, NULL);
  free(positions);
  free(tris);
  return s;
}

/* The funnel scene (Bender et al. 2014, Sec. 6). Bodies of height H (not squashed unless
 * asked) stand in layers of up to 3 x 3, each turned about the vertical axis by the golden
 * angle times its index, a tenth of H apart across and a fifth of H apart up, layer above
 * layer. Below the column a funnel (axis +y, wall 60 degrees from the horizontal) catches
 * every layer: its top radius is the layers' reach plus a tenth of H, its bottom opening is
 * `funnel_opening` body widths across. Its bottom opening stands above the ground by the
 * height of a pile of all N bodies (see pile_slope_degrees) plus H, so the pile does not reach
 * it. */
static piola_status build_funnel(const scene_options *o, const piola_tet_mesh *mesh,
                                 const mesh_extent *e, float *scratch, scene *sc) {
  const float H = e->height;
  const float r_body = e->radius;
  /* 1, 2 x 2 for up to 4 bodies, else 3 x 3 (the top layer may be partly filled) */
  const int32_t side = o->bodies > 4 ? FUNNEL_LAYER_SIDE : o->bodies > 1 ? 2 : 1;
  const int32_t per_layer = side * side;
  const float spacing = 2.0f * r_body + funnel_gap_across * H;
  const float half = 0.5f * (float)(side - 1) * spacing;
  const float reach = sqrtf(2.0f) * half + r_body; /* of the corner bodies */
  const float r_bottom = o->funnel_opening * r_body;
  const float r_top = fmaxf(reach + funnel_rim * H, r_bottom + 0.5f * H);
  const float funnel_height =
      (float)((double)(r_top - r_bottom) * tan(funnel_wall_degrees * pi / 180.0));
  const double slope = tan(pile_slope_degrees * pi / 180.0);
  const double pile_volume = (double)o->bodies * e->volume / pile_packing;
  const float pile_height = (float)cbrt(3.0 * pile_volume * slope * slope / pi);
  const float clearance = fmaxf(pile_height + H, 1.5f * H);
  const float first = clearance + funnel_height + funnel_gap_up * H;

  scene_geometry *g = &sc->geometry;
  g->has_funnel = true;
  g->funnel.base[0] = 0.0f;
  g->funnel.base[1] = clearance;
  g->funnel.base[2] = 0.0f;
  g->funnel.axis[0] = 0.0f;
  g->funnel.axis[1] = 1.0f;
  g->funnel.axis[2] = 0.0f;
  g->funnel.base_radius = r_bottom;
  g->funnel.top_radius = r_top;
  g->funnel.height = funnel_height;
  g->funnel_friction = o->funnel_friction;
  piola_collider_def def = piola_default_collider_def();
  def.type = PIOLA_COLLIDER_FUNNEL;
  def.shape.funnel = g->funnel;
  def.static_friction = o->funnel_friction;
  def.dynamic_friction = o->funnel_friction;
  piola_status s = o->funnel_mesh > 0 ? add_funnel_mesh(&g->funnel, o->funnel_mesh, &def, sc->world)
                                      : piola_world_add_collider(sc->world, &def, NULL);

  const float squash = o->squash > 0.0f ? o->squash : 1.0f;
  const double golden_angle = pi * (3.0 - sqrt(5.0));
  const int32_t layers = (o->bodies + per_layer - 1) / per_layer;
  g->top = first + (float)(layers - 1) * (1.0f + funnel_gap_up) * H + H * fmaxf(squash, 1.0f);
  for (int32_t b = 0; b < o->bodies && s == PIOLA_OK; ++b) {
    const int32_t layer = b / per_layer, slot = b % per_layer;
    float at[3] = {(float)(slot % side) * spacing - half,
                   first + (float)layer * (1.0f + funnel_gap_up) * H,
                   (float)(slot / side) * spacing - half};
    const float angle = (float)fmod(golden_angle * (double)b, 2.0 * pi);
    s = add_body(o, mesh, angle, at, squash, scratch, &sc->bodies[b], sc);
  }
  return s;
}

/* The ground plane y = 0 with the options' friction, recorded in the scene's geometry. */
static piola_status add_ground(const scene_options *o, scene *out) {
  scene_geometry *g = &out->geometry;
  g->has_ground = true;
  g->ground.normal[1] = 1.0f;
  g->ground.offset = 0.0f;
  g->ground_friction = o->friction;
  return piola_world_add_plane(out->world, g->ground.normal, g->ground.offset, o->friction, NULL);
}

/* The cloth scene (Bender et al. 2014, Fig. 1 right, with our colliders): a square cloth of
 * cloth_size metres and N x N cells (piola_mesh_make_grid: weft along x, warp along z), flat at
 * cloth_height above the ground, falls over four boxes standing in for the statues (0.3 m x
 * 1 m x 0.3 m, at the corners of a 1.5 m square around the centre); a sphere of radius 0.35 m
 * starts just above the cloth's centre and moves down at 2 m/s (a heavy sphere: a kinematic
 * collider that nothing slows) until its centre is 0.1 m above its radius over the ground, at
 * a whole step, then stands still, so that the cloth is pressed down between the boxes but
 * never squeezed between the sphere and the ground. */
static const float cloth_scene_size = 3.0f;   /* m */
static const float cloth_scene_height = 1.3f; /* m, at the start */
static const float cloth_box_half[3] = {0.15f, 0.5f, 0.15f};
static const float cloth_box_offset = 0.75f; /* m; box centres at (+-0.75, 0.5, +-0.75) */
static const float cloth_sphere_radius = 0.35f;
static const float cloth_sphere_speed = 2.0f;     /* m/s, downwards */
static const float cloth_sphere_clearance = 0.1f; /* m; between the stopped sphere and the ground */
static const float cloth_box_friction = 0.5f, cloth_sphere_friction = 0.3f;

/* The cloth's material (documented in docs/cloth.md, "The cloth scene"). */
static piola_cloth_material cloth_scene_material(void) {
  piola_cloth_material m = piola_default_cloth_material();
  m.density = 0.2f;            /* kg/m^2: a medium cotton */
  m.stretch_weft = 1000.0f;    /* N/m */
  m.stretch_warp = 1000.0f;    /* N/m */
  m.shear = 100.0f;            /* N/m */
  m.poisson_weft = 0.3f;       /* */
  m.bending_stiffness = 1e-4f; /* N m */
  m.solver = PIOLA_SOLVER_XPBD;
  return m;
}

static piola_status build_cloth(const scene_options *o, const piola_world_def *def, scene *out) {
  scene_geometry *g = &out->geometry;
  snprintf(out->name, sizeof out->name, "cloth");
  const int32_t n = o->cloth_cells;
  const int32_t cells[2] = {n, n};
  const float size[2] = {cloth_scene_size, cloth_scene_size};
  piola_status s = piola_mesh_make_grid(cells, size, &out->cloth_mesh);
  if (s == PIOLA_OK) {
    s = piola_world_create(def, &out->world);
    if (s != PIOLA_OK) {
      fprintf(stderr, "piola: cannot create the world (%s backend): %s\n",
              piola_backend_name(def->backend), piola_status_string(s));
      piola_tri_mesh_free(&out->cloth_mesh);
      return s;
    }
  }
  out->bodies = malloc(sizeof *out->bodies);
  if (s == PIOLA_OK && out->bodies == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK && o->ground) {
    s = add_ground(o, out);
  }
  piola_collider_def box = piola_default_collider_def();
  box.type = PIOLA_COLLIDER_BOX;
  box.static_friction = box.dynamic_friction = cloth_box_friction;
  g->box_friction = cloth_box_friction;
  for (int i = 0; i < 4 && s == PIOLA_OK; ++i) {
    piola_box_shape *b = &g->boxes[i];
    memset(b, 0, sizeof *b);
    b->center[0] = (i & 1) ? cloth_box_offset : -cloth_box_offset;
    b->center[1] = cloth_box_half[1];
    b->center[2] = (i & 2) ? cloth_box_offset : -cloth_box_offset;
    memcpy(b->half_extents, cloth_box_half, sizeof cloth_box_half);
    b->rotation[3] = 1.0f;
    box.shape.box = *b;
    s = piola_world_add_collider(out->world, &box, NULL);
    g->box_count = i + 1;
  }
  /* The sphere: its shape about its own origin, placed by its pose. It stops after a whole
   * number of steps, so its start is chosen from the stop and the speed. */
  const float stop_y = cloth_sphere_radius + cloth_sphere_clearance;
  const float nominal_start = cloth_scene_height + cloth_sphere_radius + 0.05f;
  const double per_step = (double)cloth_sphere_speed * (double)o->dt;
  g->sphere_stop_step = (int32_t)ceil((double)(nominal_start - stop_y) / per_step);
  g->has_sphere = true;
  g->sphere.radius = cloth_sphere_radius;
  g->sphere.center[1] = (float)((double)stop_y + per_step * g->sphere_stop_step);
  g->sphere_velocity[1] = -cloth_sphere_speed;
  g->sphere_stop[1] = stop_y;
  g->sphere_friction = cloth_sphere_friction;
  if (s == PIOLA_OK) {
    piola_collider_def ball = piola_default_collider_def();
    ball.type = PIOLA_COLLIDER_SPHERE;
    ball.shape.sphere.radius = cloth_sphere_radius;
    ball.static_friction = ball.dynamic_friction = cloth_sphere_friction;
    s = piola_world_add_collider(out->world, &ball, &g->sphere_id);
  }
  if (s == PIOLA_OK) {
    const float identity[4] = {0.0f, 0.0f, 0.0f, 1.0f}, zero[3] = {0.0f, 0.0f, 0.0f};
    s = piola_world_set_collider_pose(out->world, g->sphere_id, g->sphere.center, identity,
                                      g->sphere_velocity, zero);
  }
  /* The cloth, centred over the boxes. */
  g->cloth_size = cloth_scene_size;
  g->cloth_height = cloth_scene_height;
  g->cloth = cloth_scene_material();
  g->cloth_mass = (double)g->cloth.density * cloth_scene_size * cloth_scene_size;
  g->top = cloth_scene_height;
  if (s == PIOLA_OK) {
    const float at[3] = {-0.5f * cloth_scene_size, cloth_scene_height, -0.5f * cloth_scene_size};
    s = piola_world_add_cloth(out->world, &out->cloth_mesh, &g->cloth, at, &out->bodies[0]);
  }
  if (s == PIOLA_OK) {
    out->body_count = 1;
    out->body_vertex_count = out->cloth_mesh.vertex_count;
    out->body_tet_count = 0;
  } else {
    fprintf(stderr, "piola: cannot build the cloth scene: %s\n", piola_status_string(s));
    scene_destroy(out);
  }
  return s;
}

void scene_sphere_center(const scene_geometry *g, float dt, double time, float out[3]) {
  const double stop_time = (double)g->sphere_stop_step * (double)dt;
  const double t = time < stop_time ? time : stop_time;
  for (int k = 0; k < 3; ++k) {
    out[k] = (float)((double)g->sphere.center[k] + (double)g->sphere_velocity[k] * t);
  }
  if (time >= stop_time) {
    memcpy(out, g->sphere_stop, sizeof g->sphere_stop);
  }
}

piola_status scene_before_step(scene *s) {
  piola_status st = PIOLA_OK;
  const scene_geometry *g = &s->geometry;
  if (g->has_sphere && s->steps_taken == g->sphere_stop_step) {
    const float identity[4] = {0.0f, 0.0f, 0.0f, 1.0f}, zero[3] = {0.0f, 0.0f, 0.0f};
    st =
        piola_world_set_collider_pose(s->world, g->sphere_id, g->sphere_stop, identity, zero, zero);
  }
  s->steps_taken++;
  return st;
}

piola_status scene_build(const scene_options *o, piola_backend backend_override, scene *out) {
  memset(out, 0, sizeof *out);
  static const bool verbose_on = true, verbose_off = false;
  piola_world_def def = piola_default_world_def();
  def.backend = backend_override != PIOLA_BACKEND_AUTO ? backend_override : o->backend;
  def.device_spec = o->device;
  def.dt = o->dt;
  def.substeps = scene_substeps(o);
  def.iterations = o->iterations;
  def.work_group_size = o->work_group_size;
  def.schedule = o->schedule;
  def.simd_lanes = o->simd_lanes;
  def.cpu_threads = o->cpu_threads;
  def.iteration_scheme = o->scheme;
  def.max_colors = o->max_colors;
  def.jacobi_omega = o->jacobi_omega;
  def.vbd_chebyshev_rho = o->vbd_chebyshev_rho;
  def.profile = o->profile;
  def.contacts = o->contacts;
  def.edge_contacts = o->edge_contacts;
  if (o->contact_thickness > 0.0f) {
    def.contact_thickness = o->contact_thickness;
  }
  if (o->contact_friction >= 0.0f) {
    def.contact_friction = o->contact_friction;
  }
  def.logger.fn = cli_log;
  def.logger.user_data = (void *)(o->verbose ? &verbose_on : &verbose_off);
  out->kind = o->scene;
  if (o->scene == SCENE_CLOTH) {
    def.contacts = false; /* cloth takes no part in body contact (see docs/cloth.md) */
    return build_cloth(o, &def, out);
  }
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
  /* Uniform scale to the body height (about the lowest point on the axis, which stays put). */
  mesh_extent e = measure_mesh(&mesh);
  const float height = o->body_height > 0.0f      ? o->body_height
                       : o->scene == SCENE_FUNNEL ? 1.0f
                                                  : e.height;
  float scale = 1.0f;
  if (height != e.height && e.height > 0.0f) {
    const float k = height / e.height;
    scale = k;
    for (int32_t i = 0; i < 3 * mesh.vertex_count; ++i) {
      mesh.positions[i] *= k;
    }
    e = measure_mesh(&mesh);
  }
  scene_geometry *g = &out->geometry;
  g->body_height = e.height;
  g->body_scale = scale;
  g->contact_thickness = def.contact_thickness;
  g->body_width = 2.0f * e.radius;
  g->body_mass = e.volume * (double)o->material.density;
  out->bodies = malloc(sizeof *out->bodies * (size_t)o->bodies);
  float *scratch = malloc(sizeof *scratch * 3 * (size_t)mesh.vertex_count);
  if (out->bodies == NULL || scratch == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK && o->ground) {
    s = add_ground(o, out);
  }
  if (s == PIOLA_OK) {
    s = o->scene == SCENE_FUNNEL ? build_funnel(o, &mesh, &e, scratch, out)
                                 : build_grid(o, &mesh, &e, scratch, out);
  }
  free(scratch);
  out->body_vertex_count = mesh.vertex_count;
  out->body_tet_count = mesh.tet_count;
  piola_mesh_free(&mesh);
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola: cannot build the %s scene: %s\n", scene_kind_name(o->scene),
            piola_status_string(s));
    scene_destroy(out);
  }
  return s;
}

void scene_destroy(scene *s) {
  piola_world_destroy(s->world);
  free(s->bodies);
  piola_tri_mesh_free(&s->cloth_mesh);
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
