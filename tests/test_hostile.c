/* Hostile parameters (issue 12, item 2): a deterministic sampled sweep over the material and
 * step settings from their gentlest to their most extreme values, from starts no user should
 * make (squashed, mirrored, collapsed to a point, scrambled), on a small box of 12 tets. Every
 * case asserts that no position or velocity ever turns NaN or infinite, that the centre of mass
 * falls exactly as gravity says, and that the internal energy stays bounded (see
 * check_energy_bound). Degenerate rest tets are rejected or handled.
 *
 * The design: every axis has a few values spanning the ranges; the corners (every axis
 * at its lowest, at its highest, and the stiff/light/long-step mixes that stress XPBD's alpha~
 * and PBD's overshoot), then a fixed-seed sample in which each axis runs through a fresh
 * permutation of its values every len(axis) cases, so every value of every axis appears, in
 * varied company. PIOLA_HOSTILE_VERBOSE=1 prints every case. */
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <stdlib.h>
#include <string.h>

/* ---- Axes ---------------------------------------------------------------------------------- */

static const float k_youngs[] = {1e2f, 1e4f, 1e6f, 1e8f, 1e10f};
static const float k_poisson[] = {0.0f, 0.25f, 0.45f, 0.499f};
static const float k_density[] = {1.0f, 1e2f, 1e3f, 1e5f};
static const float k_dt[] = {1e-5f, 1e-3f, 5e-3f, 0.05f};
static const int32_t k_iterations[] = {1, 5, 20, 100};
static const int32_t k_substeps[] = {1, 4, 16, 64};

typedef enum start_kind {
  START_SQUASHED,
  START_MIRRORED,
  START_COLLAPSED,
  START_SCRAMBLED
} start_kind;
static const char *const k_start_names[] = {"squashed", "mirrored", "collapsed", "scrambled"};

enum {
  AXIS_E,
  AXIS_NU,
  AXIS_RHO,
  AXIS_DT,
  AXIS_IT,
  AXIS_SUB,
  AXIS_MODEL,
  AXIS_SOLVER,
  AXIS_INV,
  AXIS_START,
  AXIS_COUNT
};
static const int k_axis_len[AXIS_COUNT] = {5, 4, 4, 4, 4, 4, 2, 2, 2, 4};

typedef struct hostile_case {
  int v[AXIS_COUNT]; /* value index per axis */
} hostile_case;

#define SAMPLE_COUNT 96
#define CORNER_COUNT 8
#define STEPS 30
#define XPBD_ENERGY_FACTOR 1.1

/* The corners: every axis at its first value, at its last, and mixes. */
static void corner_cases(hostile_case *out) {
  for (int c = 0; c < CORNER_COUNT; ++c) {
    for (int a = 0; a < AXIS_COUNT; ++a) {
      int last = k_axis_len[a] - 1;
      int lo_hi;
      switch (c) {
      case 0:
        lo_hi = 0;
        break; /* all lowest */
      case 1:
        lo_hi = 1;
        break; /* all highest */
      case 2:
        lo_hi = a == AXIS_E || a == AXIS_DT;
        break; /* stiff, long step */
      case 3:
        lo_hi = a != AXIS_E && a != AXIS_DT;
        break; /* soft, short step, heavy */
      case 4:
        lo_hi = a == AXIS_E || a == AXIS_NU || a == AXIS_DT || a == AXIS_INV;
        break;
      case 5:
        lo_hi = a == AXIS_IT || a == AXIS_SUB || a == AXIS_E;
        break;
      case 6:
        lo_hi = a == AXIS_RHO ? 0 : a == AXIS_SOLVER || a == AXIS_DT || a == AXIS_NU;
        break;
      default:
        lo_hi = (a & 1);
        break;
      }
      out[c].v[a] = lo_hi ? last : 0;
    }
    out[c].v[AXIS_START] = c % 4;
  }
}

/* The sample: per axis, a fresh permutation of its values every len(axis) cases. */
static void sample_cases(hostile_case *out, int n, uint64_t seed) {
  uint64_t r = seed;
  for (int a = 0; a < AXIS_COUNT; ++a) {
    int perm[8];
    for (int i = 0; i < n; ++i) {
      int len = k_axis_len[a], k = i % len;
      if (k == 0) {
        for (int j = 0; j < len; ++j) {
          perm[j] = j;
        }
        for (int j = len - 1; j > 0; --j) { /* Fisher-Yates */
          int m = (int)((piola_test_rand(&r) + 1.0) * 0.5 * (j + 1));
          m = m > j ? j : m;
          int tmp = perm[j];
          perm[j] = perm[m];
          perm[m] = tmp;
        }
      }
      out[i].v[a] = perm[k];
    }
  }
}

/* ---- One case ------------------------------------------------------------------------------ */

typedef struct case_result {
  int bad_step;         /* first step with a non-finite position or velocity; -1 if none */
  double energy_ratio;  /* max over steps of E_int(t) / E_int(0) (E_int(0) > 0) */
  double energy_excess; /* max over steps of E_int(t) - E_int(0) */
  double energy0;       /* E_int(0), J */
  double com_error;     /* max |x_com - exact| / L over the steps */
  double spread;        /* max over steps and vertices of |x_i - x_com| / rest diagonal */
  double vrel;          /* max over steps and vertices of |v_i - v_com| h / rest diagonal */
  int add_warnings;     /* warnings logged by piola_world_add_tet_body */
  int warnings;
  int errors;
  piola_status status;
  char last_log[256];
} case_result;

static void describe(const hostile_case *c, char *buf, size_t n) {
  snprintf(buf, n, "E %.0e nu %.3f rho %.0e dt %.0e it %d sub %d %s %s inv %s start %s",
           (double)k_youngs[c->v[AXIS_E]], (double)k_poisson[c->v[AXIS_NU]],
           (double)k_density[c->v[AXIS_RHO]], (double)k_dt[c->v[AXIS_DT]],
           (int)k_iterations[c->v[AXIS_IT]], (int)k_substeps[c->v[AXIS_SUB]],
           c->v[AXIS_MODEL] ? "NH" : "StVK", c->v[AXIS_SOLVER] ? "PBD" : "XPBD",
           c->v[AXIS_INV] ? "on" : "off", k_start_names[c->v[AXIS_START]]);
}

/* Starting positions of the given kind from the rest positions (n vertices). */
static void start_positions(start_kind kind, const float *rest, int32_t n, float *out,
                            uint64_t seed) {
  double c[3] = {0, 0, 0}, lo[3] = {1e30, 1e30, 1e30}, hi[3] = {-1e30, -1e30, -1e30};
  for (int32_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) {
      c[k] += rest[3 * i + k] / n;
      lo[k] = fmin(lo[k], rest[3 * i + k]);
      hi[k] = fmax(hi[k], rest[3 * i + k]);
    }
  }
  uint64_t r = seed;
  for (int32_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) {
      double x = rest[3 * i + k], y;
      switch (kind) {
      case START_SQUASHED:
        y = k == 1 ? c[k] + 0.1 * (x - c[k]) : x;
        break;
      case START_MIRRORED:
        y = k == 0 ? 2.0 * c[k] - x : x;
        break;
      case START_COLLAPSED:
        y = c[k];
        break;
      default:
        y = lo[k] + (hi[k] - lo[k]) * 0.5 * (piola_test_rand(&r) + 1.0);
        break;
      }
      out[3 * i + k] = (float)y;
    }
  }
}

static bool all_finite(const float *a, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(a[i])) {
      return false;
    }
  }
  return true;
}

/* Internal energy: elastic energy (stats) plus the kinetic energy of the motion relative to
 * the centre of mass, from positions and velocities in double; also the centre of mass. */
static double internal_energy(const piola_world *w, const double *x, const double *v,
                              const double *mass, int32_t n, double com[3]) {
  piola_stats st;
  if (piola_world_get_stats(w, &st) != PIOLA_OK) {
    return NAN;
  }
  double m = 0.0, p[3] = {0, 0, 0}, ke = 0.0;
  com[0] = com[1] = com[2] = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    m += mass[i];
    for (int k = 0; k < 3; ++k) {
      p[k] += mass[i] * v[3 * i + k];
      com[k] += mass[i] * x[3 * i + k];
      ke += 0.5 * mass[i] * v[3 * i + k] * v[3 * i + k];
    }
  }
  for (int k = 0; k < 3; ++k) {
    com[k] /= m;
  }
  return st.elastic_energy + ke - 0.5 * (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) / m;
}

/* The state as doubles: the CPU reference's own host arrays (exact), the API's floats on
 * OpenCL. False when a read fails or a value is not finite. */
static bool read_state(const piola_world *w, piola_body_id id, int32_t n, float *xf, float *vf,
                       double *x, double *v) {
  if (piola_body_get_positions(w, id, xf, n) != PIOLA_OK ||
      piola_body_get_velocities(w, id, vf, n) != PIOLA_OK) {
    return false;
  }
  bool ok = all_finite(xf, 3 * (size_t)n) && all_finite(vf, 3 * (size_t)n);
  for (size_t i = 0; i < 3 * (size_t)n; ++i) {
    x[i] = w->backend == PIOLA_BACKEND_CPU_REFERENCE ? w->x[i] : xf[i];
    v[i] = w->backend == PIOLA_BACKEND_CPU_REFERENCE ? w->v[i] : vf[i];
    ok = ok && isfinite(x[i]) && isfinite(v[i]);
  }
  return ok;
}

#define REST_DIAGONAL 1.2247448713915890 /* of the 1 x 0.5 x 0.5 m box */

static case_result run_case(const hostile_case *c, piola_backend backend, uint64_t seed) {
  case_result res;
  memset(&res, 0, sizeof res);
  res.bad_step = -1;
  capture_log log;
  int misuse = 0;
  piola_world_def def = opencl_test_world_def(backend, &log, &misuse);
  def.dt = k_dt[c->v[AXIS_DT]];
  def.iterations = k_iterations[c->v[AXIS_IT]];
  def.substeps = k_substeps[c->v[AXIS_SUB]];
  def.contacts = false; /* the elastic solve is under test; the box passes through itself */
  piola_world *w = NULL;
  res.status = piola_world_create(&def, &w);
  if (res.status != PIOLA_OK) {
    return res;
  }
  piola_tet_mesh mesh = wt_box(2, 1, 1, 1.0f, 0.5f, 0.5f);
  piola_material mat = piola_default_material();
  mat.youngs_modulus = k_youngs[c->v[AXIS_E]];
  mat.poisson_ratio = k_poisson[c->v[AXIS_NU]];
  mat.density = k_density[c->v[AXIS_RHO]];
  mat.model = c->v[AXIS_MODEL] ? PIOLA_MODEL_NEOHOOKEAN : PIOLA_MODEL_STVK;
  mat.solver = c->v[AXIS_SOLVER] ? PIOLA_SOLVER_PBD : PIOLA_SOLVER_XPBD;
  mat.handle_inversion = c->v[AXIS_INV] ? PIOLA_INVERSION_ON : PIOLA_INVERSION_OFF;
  piola_body_id id;
  res.status = piola_world_add_tet_body(w, &mesh, &mat, NULL, &id);
  res.add_warnings = log.count[PIOLA_LOG_WARNING];
  const int32_t n = mesh.vertex_count;
  float *xf = malloc(sizeof *xf * 3 * (size_t)n), *vf = malloc(sizeof *vf * 3 * (size_t)n);
  float *im = malloc(sizeof *im * (size_t)n);
  double *x = malloc(sizeof *x * 3 * (size_t)n), *v = malloc(sizeof *v * 3 * (size_t)n);
  double *mass = malloc(sizeof *mass * (size_t)n);
  if (xf == NULL || vf == NULL || im == NULL || x == NULL || v == NULL || mass == NULL) {
    res.status = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (res.status == PIOLA_OK) {
    start_positions((start_kind)c->v[AXIS_START], mesh.positions, n, xf, seed);
    res.status = piola_body_set_positions(w, id, xf, n);
  }
  if (res.status == PIOLA_OK) {
    res.status = piola_body_get_inverse_masses(w, id, im, n);
  }
  double com0[3] = {0, 0, 0}, e0 = 0.0;
  if (res.status == PIOLA_OK) {
    for (int32_t i = 0; i < n; ++i) {
      mass[i] = w->backend == PIOLA_BACKEND_CPU_REFERENCE ? 1.0 / w->w[i] : 1.0 / (double)im[i];
    }
    if (!read_state(w, id, n, xf, vf, x, v)) {
      res.bad_step = 0;
    }
    e0 = internal_energy(w, x, v, mass, n, com0);
    res.energy0 = e0;
  }
  const double h = (double)def.dt / def.substeps;
  const float *g = def.gravity;
  for (int s = 1; s <= STEPS && res.status == PIOLA_OK && res.bad_step < 0; ++s) {
    res.status = piola_world_step(w);
    if (res.status != PIOLA_OK) {
      break;
    }
    if (!read_state(w, id, n, xf, vf, x, v)) {
      res.bad_step = s;
      break;
    }
    double com[3];
    double e = internal_energy(w, x, v, mass, n, com);
    res.energy_ratio = fmax(res.energy_ratio, e0 > 0.0 ? e / e0 : 0.0);
    res.energy_excess = fmax(res.energy_excess, e - e0);
    double vc[3] = {0, 0, 0}, m = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      m += mass[i];
      for (int a = 0; a < 3; ++a) {
        vc[a] += mass[i] * v[3 * i + a];
      }
    }
    for (int32_t i = 0; i < n; ++i) {
      double d2 = 0.0, u2 = 0.0;
      for (int a = 0; a < 3; ++a) {
        d2 += (x[3 * i + a] - com[a]) * (x[3 * i + a] - com[a]);
        u2 += (v[3 * i + a] - vc[a] / m) * (v[3 * i + a] - vc[a] / m);
      }
      res.spread = fmax(res.spread, sqrt(d2) / REST_DIAGONAL);
      res.vrel = fmax(res.vrel, sqrt(u2) * h / REST_DIAGONAL);
    }
    /* Symplectic Euler of the centre of mass: after k substeps of h, x = x0 + g h^2 k(k+1)/2;
     * relative to the rest diagonal plus the distance fallen. */
    double k = (double)s * def.substeps, fall = 0.0, err = 0.0;
    for (int a = 0; a < 3; ++a) {
      double d = (double)g[a] * h * h * k * (k + 1.0) * 0.5;
      fall += d * d;
      err = fmax(err, fabs(com[a] - (com0[a] + d)));
    }
    res.com_error = fmax(res.com_error, err / (REST_DIAGONAL * (1.0 + res.spread) + sqrt(fall)));
  }
  res.warnings = log.count[PIOLA_LOG_WARNING];
  res.errors = log.count[PIOLA_LOG_ERROR];
  snprintf(res.last_log, sizeof res.last_log, "%.200s", log.length > 0 ? log.text : "");
  free(xf);
  free(vf);
  free(im);
  free(x);
  free(v);
  free(mass);
  piola_mesh_free(&mesh);
  piola_world_destroy(w);
  return res;
}

static void run_sweep(piola_test *t, piola_backend backend, int sample_count, int stride) {
  hostile_case cases[CORNER_COUNT + SAMPLE_COUNT];
  corner_cases(cases);
  sample_cases(cases + CORNER_COUNT, SAMPLE_COUNT, 0x5eed12ull);
  const bool verbose = getenv("PIOLA_HOSTILE_VERBOSE") != NULL;
  int covered[AXIS_COUNT][8];
  memset(covered, 0, sizeof covered);
  double worst_ratio = 0.0, worst_pbd = 0.0, worst_vrel = 0.0, worst_com = 0.0;
  int ran = 0;
  /* Centre of mass: exact up to rounding. Every projection's corrections sum to zero momentum
   * to within eps of the positions (k x iterations passes after k substeps), and v = (p - x)/h
   * turns the eps |x| of each position update into a velocity error of eps |x| / h, which
   * integrates as a random walk to about k^1.5 eps |x|; relative to the body's extent plus the
   * distance fallen (double host arrays on the CPU reference, float on OpenCL). */
  const double eps = backend == PIOLA_BACKEND_OPENCL ? 1.1920929e-7 : 2.220446e-16;
  for (int i = 0; i < CORNER_COUNT + sample_count; i += (i < CORNER_COUNT ? 1 : stride)) {
    const hostile_case *c = &cases[i];
    char what[256];
    describe(c, what, sizeof what);
    case_result r = run_case(c, backend, 1000u + (uint64_t)i);
    ran++;
    for (int a = 0; a < AXIS_COUNT; ++a) {
      covered[a][c->v[a]]++;
    }
    if (verbose) {
      printf("  case %3d %s: status %s, bad step %d, E ratio %.3g, excess %.3g, com %.2g, "
             "spread %.3g vrel %.3g add-warn %d warn %d err %d\n",
             i, what, piola_status_string(r.status), r.bad_step, r.energy_ratio, r.energy_excess,
             r.com_error, r.spread, r.vrel, r.add_warnings, r.warnings, r.errors);
    }
    CHECK_MSG(t, r.status == PIOLA_OK, "case %d (%s): %s; log: %s", i, what,
              piola_status_string(r.status), r.last_log);
    CHECK_MSG(t, r.bad_step < 0, "case %d (%s): non-finite state at step %d", i, what, r.bad_step);
    const bool one_constraint = c->v[AXIS_SOLVER] == 1; /* PBD: never split */
    const bool overshoots = one_constraint && k_poisson[c->v[AXIS_NU]] >= 0.4f;
    CHECK_MSG(t, r.add_warnings == (overshoots ? 1 : 0) && r.errors == 0,
              "case %d (%s): %d warnings at add (expected %d), %d errors; log: %s", i, what,
              r.add_warnings, overshoots ? 1 : 0, r.errors, r.last_log);
    if (overshoots) {
      /* Said so at add: finite is all that is promised (the body may tear apart). */
      continue;
    }
    const double k = (double)STEPS * k_substeps[c->v[AXIS_SUB]];
    const double passes = k * sqrt(k) + k * k_iterations[c->v[AXIS_IT]];
    CHECK_MSG(t, r.com_error <= 4.0 * eps * passes, "case %d (%s): centre of mass off by %g", i,
              what, r.com_error);
    worst_com = fmax(worst_com, r.com_error / (4.0 * eps * passes));
    CHECK_MSG(t, r.vrel <= 1.0,
              "case %d (%s): a vertex moved %.3g rest diagonals relative to "
              "the centre of mass in one substep",
              i, what, r.vrel);
    /* Rounding floor of the energy, at the body's scale E V (float positions on OpenCL). */
    const double floor_j =
        (backend == PIOLA_BACKEND_OPENCL ? 1e-6 : 1e-12) * (double)k_youngs[c->v[AXIS_E]] * 0.25;
    /* Neo-Hookean without inversion handling skips tets with det F <= 0 (documented): their
     * energy is not counted while inverted and appears when a neighbour pushes them back, so
     * from inverted starts its energy is no potential to bound. */
    const bool nh_skips =
        c->v[AXIS_MODEL] == 1 && c->v[AXIS_INV] == 0 && c->v[AXIS_START] != START_SQUASHED;
    if (c->v[AXIS_SOLVER] == 0 && !nh_skips) {
      if (r.energy0 > 1e3 * floor_j) {
        worst_ratio = fmax(worst_ratio, r.energy_ratio);
      }
      CHECK_MSG(t, r.energy_excess <= (XPBD_ENERGY_FACTOR - 1.0) * fmax(r.energy0, 0.0) + floor_j,
                "case %d (%s): internal energy %.4g times its start", i, what, r.energy_ratio);
    } else if (c->v[AXIS_SOLVER] == 1 && r.energy0 > 1e3 * floor_j) {
      worst_pbd = fmax(worst_pbd, r.energy_ratio);
    }
    worst_vrel = fmax(worst_vrel, r.vrel);
  }
  for (int a = 0; a < AXIS_COUNT; ++a) {
    for (int k = 0; k < k_axis_len[a]; ++k) {
      CHECK_MSG(t, covered[a][k] > 0, "axis %d value %d never ran", a, k);
    }
  }
  printf("  %s: %d cases; worst E_int(t)/E_int(0): XPBD %.4g, PBD %.4g; worst relative motion "
         "per substep %.3g rest diagonals; centre of mass %.3g of its budget\n",
         piola_backend_name(backend), ran, worst_ratio, worst_pbd, worst_vrel, worst_com);
}

void test_hostile_parameter_sweep(piola_test *t) {
  run_sweep(t, PIOLA_BACKEND_CPU_REFERENCE, SAMPLE_COUNT, 1);
}

void test_opencl_hostile_parameter_sweep(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  run_sweep(t, PIOLA_BACKEND_OPENCL, SAMPLE_COUNT, 4);
}

/* ---- Degenerate rest tets ------------------------------------------------------------------ */

/* A unit tet (wt_unit_tet) whose apex is lowered to `f` of its height: rest volume f V. */
static void sliver_tet(float f, float out[12]) {
  memcpy(out, wt_unit_tet, sizeof wt_unit_tet);
  out[10] *= f;
}

static void degenerate_rest_tets(piola_test *t, piola_backend backend) {
  static int32_t one[4] = {0, 1, 2, 3};
  float pos[12];
  piola_tet_mesh mesh = {pos, 4, one, 1};
  /* Flat and near-flat (|det Dm| <= 1e-9 l^3) rest tets are rejected; the world is unchanged. */
  const float rejected[3] = {0.0f, 1e-10f, -1e-10f};
  for (int k = 0; k < 3; ++k) {
    capture_log log;
    piola_world_def def = opencl_test_world_def(backend, &log, NULL);
    piola_world *w = NULL;
    REQUIRE_OK(t, piola_world_create(&def, &w));
    sliver_tet(rejected[k], pos);
    piola_material mat = piola_default_material();
    piola_body_id id = {0, 0};
    CHECK_STATUS(t, piola_world_add_tet_body(w, &mesh, &mat, NULL, &id), PIOLA_ERROR_INVALID_MESH);
    CHECK(t, id.index1 == 0 && log.count[PIOLA_LOG_ERROR] == 1 &&
                 strstr(log.text, "near-zero rest volume") != NULL);
    piola_stats st;
    CHECK(t,
          piola_world_get_stats(w, &st) == PIOLA_OK && st.body_count == 0 && st.vertex_count == 0);
    piola_world_destroy(w);
  }
  /* Slivers just above the threshold (det Dm = 7e-9 l^3, 1e-6, 1e-3 of a regular tet's) are
   * accepted; Dm^-1 is then up to 1e8 / l. Dropped onto the ground, flattened and mirrored,
   * with every model and form: never a NaN or an infinity, never below the ground by more than
   * the solver's slack. */
  const float kept[3] = {1e-8f, 1e-6f, 1e-3f};
  int runs = 0;
  for (int k = 0; k < 3; ++k) {
    for (int combo = 0; combo < 8; ++combo) {
      capture_log log;
      piola_world_def def = opencl_test_world_def(backend, &log, NULL);
      def.iterations = 10;
      piola_world *w = NULL;
      REQUIRE_OK(t, piola_world_create(&def, &w));
      REQUIRE_OK(t, piola_world_add_plane(w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL));
      sliver_tet(kept[k], pos);
      piola_material mat = piola_default_material();
      mat.model = (combo & 1) ? PIOLA_MODEL_NEOHOOKEAN : PIOLA_MODEL_STVK;
      mat.solver = (combo & 2) ? PIOLA_SOLVER_PBD : PIOLA_SOLVER_XPBD;
      mat.youngs_modulus = 1e6f;
      const bool mirrored = (combo & 4) != 0;
      piola_body_id id;
      const float lift[3] = {0.0f, 0.5f, 0.0f};
      REQUIRE_OK(t, piola_world_add_tet_body(w, &mesh, &mat, lift, &id));
      CHECK(t, log.count[PIOLA_LOG_ERROR] == 0);
      float x[12], v[12];
      if (mirrored) { /* apex through the base: the sliver inverted */
        REQUIRE_OK(t, piola_body_get_positions(w, id, x, 4));
        x[10] = 0.5f - 0.1f;
        REQUIRE_OK(t, piola_body_set_positions(w, id, x, 4));
      }
      bool finite = true;
      float lowest = 0.0f;
      for (int s = 0; s < 200 && finite; ++s) {
        REQUIRE_OK(t, piola_world_step(w));
        REQUIRE_OK(t, piola_body_get_positions(w, id, x, 4));
        REQUIRE_OK(t, piola_body_get_velocities(w, id, v, 4));
        finite = all_finite(x, 12) && all_finite(v, 12);
        for (int i = 0; i < 4; ++i) {
          lowest = fminf(lowest, x[3 * i + 1]);
        }
      }
      CHECK_MSG(t, finite, "sliver %g, combo %d (%s): non-finite state", (double)kept[k], combo,
                piola_backend_name(backend));
      CHECK_MSG(t, lowest > -0.01f, "sliver %g, combo %d: a vertex %g m below the ground",
                (double)kept[k], combo, (double)lowest);
      piola_world_destroy(w);
      runs++;
    }
  }
  CHECK(t, runs == 24);
}

void test_degenerate_rest_tets(piola_test *t) {
  degenerate_rest_tets(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_degenerate_rest_tets(piola_test *t) {
  if (opencl_test_ready(t)) {
    degenerate_rest_tets(t, PIOLA_BACKEND_OPENCL);
  }
}
