/* The plasticity experiment of `piola validate` (Bender et al. 2014, Sec. 4.2 and Fig. 8): a
 * beam twisted, held and released keeps a residual twist that grows with the creep rate and the
 * maximum plastic strain and shrinks with the yield strain; with plasticity off it springs back
 * to within 1% of the twist applied. */
#include "validate_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- 6. Plasticity (Fig. 8) ------------------------------------------------------------------ */

typedef struct twist_run {
  const char *label;
  double creep, yield, max;
  bool quick;
} twist_run;

/* A 0.5 m x 0.1 m x 0.1 m beam (Neo-Hookean, E = 1 MPa, nu = 0.3) pinned at both ends; the end
 * at x = L is turned kinematically to 90 degrees about the beam axis over 0.2 s, held for 0.3 s,
 * then released (unpinned) for 0.5 s (XPBD, dt = 5 ms, 4 substeps of 10 iterations, damping
 * 30/s, no gravity). Returns the residual twist of the free end (degrees). */
static piola_status twist_beam(const validate_options *o, validate_report *r,
                               const int32_t cells[3], const twist_run *tr, int series,
                               double *residual) {
  const double dt = 0.005, angle = 0.5 * M_PI;
  const int32_t ramp = 40, hold = 60, release = 100;
  piola_world_def def = validate_base_def(o, dt, 4, 10);
  def.damping = 30.0f;
  piola_material m = validate_base_material(PIOLA_MODEL_NEOHOOKEAN, 1.0e6, 0.3);
  m.plastic_creep = (float)tr->creep;
  m.plastic_yield = (float)tr->yield;
  m.plastic_max = (float)tr->max;
  validate_beam b;
  piola_status st = validate_beam_create(r, &def, cells, 0.5, 0.1, &m, &b);
  if (st != PIOLA_OK) {
    return st;
  }
  float *lumped = malloc(sizeof *lumped * (size_t)b.s.n);
  st = lumped == NULL ? PIOLA_ERROR_OUT_OF_MEMORY : PIOLA_OK;
  if (st == PIOLA_OK) {
    memcpy(lumped, b.s.inv_mass, sizeof *lumped * (size_t)b.s.n);
    /* The fixed end is pinned already; validate_sim_pin keeps it and pins the twisted end too. */
    st = validate_sim_pin(&b.s, &b.end);
  }
  const double c = 0.5 * b.width;
  double twist = NAN;
  for (int32_t step = 0; st == PIOLA_OK && step < ramp + hold + release; ++step) {
    if (step < ramp) {
      const double a = angle * (step + 1) / ramp;
      st = validate_sim_read(&b.s);
      for (int32_t i = 0; st == PIOLA_OK && i < b.end.count; ++i) {
        const size_t v = (size_t)b.end.idx[i];
        const double y = (double)b.s.mesh.positions[3 * v + 1] - c;
        const double z = (double)b.s.mesh.positions[3 * v + 2] - c;
        b.s.x[3 * v + 1] = (float)(c + y * cos(a) - z * sin(a));
        b.s.x[3 * v + 2] = (float)(c + y * sin(a) + z * cos(a));
      }
      if (st == PIOLA_OK) {
        st = piola_body_set_positions(b.s.world, b.s.body, b.s.x, b.s.n);
      }
    }
    if (st == PIOLA_OK && step == ramp + hold) {
      for (int32_t i = 0; i < b.end.count; ++i) {
        b.s.inv_mass[b.end.idx[i]] = lumped[b.end.idx[i]];
      }
      st = piola_body_set_inverse_masses(b.s.world, b.s.body, b.s.inv_mass, b.s.n);
    }
    if (st == PIOLA_OK) {
      st = piola_world_step(b.s.world);
    }
    if (st == PIOLA_OK && (step + 1) % 4 == 0) {
      twist = validate_beam_twist(&b.s, &b);
      double row[2] = {(step + 1) * dt, twist};
      validate_series_add(r, series, tr->label, row);
    }
  }
  if (st == PIOLA_OK) {
    twist = validate_beam_twist(&b.s, &b);
    st = isfinite(twist) ? PIOLA_OK : PIOLA_ERROR_NON_FINITE;
  }
  *residual = twist;
  free(lumped);
  validate_beam_destroy(&b);
  return st;
}

int validate_exp_plasticity(const validate_options *o, validate_report *r) {
  const char *X = "plasticity";
  const int32_t cells_full[3] = {16, 3, 3}, cells_quick[3] = {10, 2, 2};
  const int32_t *cells = o->quick ? cells_quick : cells_full;
  /* Base: creep 2/s, yield 0.03, max 0.3; each group varies one parameter. */
  static const twist_run runs[] = {
      {"off", 0.0, 0.03, 0.3, true},         {"creep 0.5", 0.5, 0.03, 0.3, false},
      {"creep 1", 1.0, 0.03, 0.3, true},     {"creep 2", 2.0, 0.03, 0.3, true},
      {"creep 5", 5.0, 0.03, 0.3, false},    {"yield 0.1", 2.0, 0.1, 0.3, true},
      {"yield 0.15", 2.0, 0.15, 0.3, false}, {"max 0.02", 2.0, 0.03, 0.02, false},
      {"max 0.05", 2.0, 0.03, 0.05, true},   {"max 0.1", 2.0, 0.03, 0.1, false},
  };
  enum { RUNS = sizeof runs / sizeof runs[0] };
  static const char *const cols_t[] = {"time_s", "twist_deg"};
  static const char *const cols_r[] = {"creep_per_s", "yield", "max", "residual_deg"};
  const int s_t = validate_series_new(r, X, "twist", 2, cols_t);
  const int s_r = validate_series_new(r, X, "residual", 4, cols_r);
  double res[RUNS];
  for (int i = 0; i < RUNS; ++i) {
    res[i] = NAN;
    if (o->quick && !runs[i].quick) {
      continue;
    }
    piola_status st = twist_beam(o, r, cells, &runs[i], s_t, &res[i]);
    if (st != PIOLA_OK) {
      return validate_report_error(r, X, runs[i].label, st);
    }
    double row[4] = {runs[i].creep, runs[i].yield, runs[i].max, res[i]};
    validate_series_add(r, s_r, runs[i].label, row);
  }
  /* "none" and "a difference" are both measured against 1% of the applied 90 degrees. */
  const double applied = 90.0, threshold = 0.01 * applied;
  char note[160];
  snprintf(note, sizeof note, "residual %.3g deg of 90 deg applied; 'none' = within 1%%", res[0]);
  validate_check_at_most(r, X, "plasticity off: |residual twist|", "deg", fabs(res[0]), threshold,
                         note);
  snprintf(note, sizeof note, "creep 2/s, yield 0.03, max 0.3: residual %.3g deg", res[3]);
  validate_check_at_least(r, X, "plasticity on: residual twist", "deg", res[3], threshold, note);
  /* Each group: the residual must move the expected way by at least the threshold between
   * the group's ends (the base run and the strongest setting); the note lists every residual
   * along the group. */
  typedef struct group {
    const char *name;
    int idx[4];
    int count;
    double sign; /* +1: the residual grows along the list */
  } group;
  const group groups[] = {
      {"larger creep: residual(5/s) - residual(0.5/s)", {1, 2, 3, 4}, 4, 1.0},
      {"larger yield: residual(0.03) - residual(0.15)", {3, 5, 6, -1}, 3, -1.0},
      {"smaller max: residual(0.3) - residual(0.02)", {3, 9, 8, 7}, 4, -1.0},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; ++g) {
    char list[96] = "";
    int lo = -1, hi = -1;
    for (int k = 0; k < groups[g].count; ++k) {
      const int i = groups[g].idx[k];
      if (!isfinite(res[i])) {
        continue; /* not run in the quick version */
      }
      char item[48];
      snprintf(item, sizeof item, "%s%s: %.3g", list[0] != '\0' ? ", " : "", runs[i].label, res[i]);
      strncat(list, item, sizeof list - strlen(list) - 1);
      lo = lo < 0 ? i : lo;
      hi = i;
    }
    char name[96];
    snprintf(name, sizeof name, "%s", groups[g].name);
    if (o->quick) {
      /* The quick version runs only the base and one other setting of each group. */
      snprintf(name, sizeof name, "%.*s: residual difference", (int)strcspn(groups[g].name, ":"),
               groups[g].name);
    }
    snprintf(note, sizeof note, "residuals (deg) %s", list);
    validate_check_at_least(r, X, name, "deg", groups[g].sign * (res[hi] - res[lo]), threshold,
                            note);
  }
  return 0;
}
