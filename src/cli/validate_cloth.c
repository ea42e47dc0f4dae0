/* The cloth experiments of `piola validate` (Bender et al. 2014, Sec. 4.3: orthotropic StVK
 * membranes and the isometric bending of Bergou et al. 2006):
 *   cloth_poisson    Fig. 7   lateral contraction of a 1 m x 1 m cloth pulled along the weft
 *   cloth_weft_warp  Fig. 10  equal pulls along weft and warp, the warp 4 times stiffer
 *   cloth_hanging    (membrane) elongation of a strip hanging from its top edge
 *   cloth_cantilever (bending)  tip sag of a cantilevered strip under its own weight
 *   cloth_rigid      (bending)  zero energy for rigid motions of flat and curved rest states */
#include "validate_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- 8. Cloth (Sec. 4.3) ----------------------------------------------------------------------
 */

/* A world with one cloth body of `mesh` (kept by the caller) in a sim (its tet mesh stays
 * empty), so that validate_settle() and validate_sim_read() work on it. */
static piola_status cloth_sim_create(validate_report *r, const piola_world_def *def,
                                     const piola_tri_mesh *mesh, const piola_cloth_material *m,
                                     const float at[3], validate_sim *s) {
  memset(s, 0, sizeof *s);
  s->n = mesh->vertex_count;
  s->dt = (double)def->dt;
  piola_status st = piola_world_create(def, &s->world);
  if (st == PIOLA_OK) {
    st = piola_world_add_cloth(s->world, mesh, m, at, &s->body);
  }
  return validate_sim_finish(r, st, s);
}

/* A membrane-only cloth material (no bending constraints): stretch k_weft and k_warp, shear
 * from the isotropic formula k / (2 (1 + nu)) of the weft modulus, 0.2 kg/m^2, XPBD. */
static piola_cloth_material membrane(double k_weft, double k_warp, double nu) {
  piola_cloth_material m = piola_default_cloth_material();
  m.density = 0.2f;
  m.stretch_weft = (float)k_weft;
  m.stretch_warp = (float)k_warp;
  m.shear = (float)(k_weft / (2.0 * (1.0 + nu)));
  m.poisson_weft = (float)nu;
  m.bending_stiffness = 0.0f;
  m.solver = PIOLA_SOLVER_XPBD;
  return m;
}

/* The strains of a square cloth (rest side `side`, in the x-z plane) pulled at two opposite
 * edges: along the pull between the vertex lines at a quarter and three quarters of the side,
 * across it between the two free edges (over the middle half of their length). */
typedef struct sheet {
  validate_sim s;
  piola_tri_mesh mesh;
  int axis; /* 0: pulled along x (the weft), 2: along z (the warp) */
  double side;
} sheet;

static double sheet_line_mean(const sheet *c, int along, double at, int other) {
  double sum = 0.0;
  int n = 0;
  for (int32_t i = 0; i < c->mesh.vertex_count; ++i) {
    const float *rest = c->mesh.positions + 3 * i;
    const double u = rest[other];
    if (fabs(rest[along] - at) < 1e-6 * c->side && u >= 0.25 * c->side - 1e-6 &&
        u <= 0.75 * c->side + 1e-6) {
      sum += c->s.x[3 * i + along];
      ++n;
    }
  }
  return n > 0 ? sum / n : NAN;
}

static void sheet_strains(sheet *c, double *axial, double *lateral) {
  const int a = c->axis, o = c->axis == 0 ? 2 : 0;
  *axial = (sheet_line_mean(c, a, 0.75 * c->side, o) - sheet_line_mean(c, a, 0.25 * c->side, o)) /
               (0.5 * c->side) -
           1.0;
  *lateral = (sheet_line_mean(c, o, c->side, a) - sheet_line_mean(c, o, 0.0, a)) / c->side - 1.0;
}

static double sheet_axial(validate_sim *s, void *user) {
  sheet *c = user;
  double axial, lateral;
  if (validate_sim_read(s) != PIOLA_OK) {
    return NAN;
  }
  sheet_strains(c, &axial, &lateral);
  return axial;
}

/* Pulls a side x side m cloth of cells x cells squares with a line tension `tension` (N/m) at
 * its two edges across `axis`, equal and opposite (no pin, no gravity: uniaxial stress), until
 * the axial strain settles; damping 30/s, 50 substeps of 4 iterations per 10 ms. Fewer, stiffer
 * substeps leave Gauss-Seidel unconverged and the contraction too large (measured with 10
 * substeps of 10 iterations: 0.140, 0.405, 0.601 for nu = 0.1, 0.3, 0.45; with 50 x 4: 0.103,
 * 0.310, 0.466; with 200 x 2: 0.100, 0.302, 0.453). */
static piola_status sheet_pull(const validate_options *o, validate_report *r, int32_t cells,
                               double side, const piola_cloth_material *m, int axis, double tension,
                               double *axial, double *lateral, validate_settle_result *settled) {
  piola_world_def def = validate_base_def(o, 0.01, 50, 4);
  def.damping = 30.0f;
  sheet c;
  memset(&c, 0, sizeof c);
  c.axis = axis;
  c.side = side;
  piola_status st = piola_mesh_make_grid((const int32_t[2]){cells, cells},
                                         (const float[2]){(float)side, (float)side}, &c.mesh);
  if (st == PIOLA_OK) {
    st = cloth_sim_create(r, &def, &c.mesh, m, NULL, &c.s);
  }
  float *f = st == PIOLA_OK ? calloc(3 * (size_t)c.mesh.vertex_count, sizeof *f) : NULL;
  if (st == PIOLA_OK && f == NULL) {
    st = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (st == PIOLA_OK) {
    /* The edge's tension lumped to its vertices: a cell's length each, half at the corners. */
    const double dx = side / cells;
    for (int32_t i = 0; i < c.mesh.vertex_count; ++i) {
      const float *p = c.mesh.positions + 3 * i;
      const int other = axis == 0 ? 2 : 0;
      const bool corner = p[other] < 1e-6 * side || p[other] > side * (1.0 - 1e-6);
      const double share = tension * dx * (corner ? 0.5 : 1.0);
      if (p[axis] < 1e-6 * side) {
        f[3 * i + axis] = (float)-share;
      } else if (p[axis] > side * (1.0 - 1e-6)) {
        f[3 * i + axis] = (float)share;
      }
    }
    st = piola_body_set_forces(c.s.world, c.s.body, f, c.mesh.vertex_count);
  }
  if (st == PIOLA_OK) {
    *settled = validate_settle(&c.s, sheet_axial, &c, 0.3, 4.0, 1e-4, r, -1, NULL);
    st = settled->status;
  }
  if (st == PIOLA_OK) {
    st = validate_sim_read(&c.s);
    sheet_strains(&c, axial, lateral);
  }
  free(f);
  validate_sim_destroy(&c.s);
  piola_tri_mesh_free(&c.mesh);
  return st;
}

/* Fig. 7 for cloth: a 1 m x 1 m cloth (k = 1000 N/m both ways) pulled along the weft to an
 * axial strain of 0.5%; -lateral / axial strain against poisson_weft. */
int validate_exp_cloth_poisson(const validate_options *o, validate_report *r) {
  const char *X = "cloth_poisson";
  const int32_t cells = o->quick ? 8 : 16;
  const double k = 1000.0, tension = 0.005 * k;
  static const double nus[] = {0.1, 0.3, 0.45};
  static const char *const cols[] = {"material_nu", "measured_nu", "axial_strain",
                                     "lateral_strain"};
  const int series = validate_series_new(r, X, "ratio", 4, cols);
  for (int i = 0; i < 3; ++i) {
    piola_cloth_material m = membrane(k, k, nus[i]);
    double axial = NAN, lateral = NAN;
    validate_settle_result sr;
    piola_status st = sheet_pull(o, r, cells, 1.0, &m, 0, tension, &axial, &lateral, &sr);
    if (st != PIOLA_OK) {
      return validate_report_error(r, X, "pull", st);
    }
    const double nu = -lateral / axial;
    double row[4] = {nus[i], nu, axial, lateral};
    validate_series_add(r, series, "weft", row);
    char check[96], note[160];
    snprintf(check, sizeof check, "nu_weft=%.2f: -lateral/axial strain", nus[i]);
    snprintf(note, sizeof note, "%dx%d cells; axial %.5g, lateral %.5g%s", (int)cells, (int)cells,
             axial, lateral, sr.settled ? "" : "; not settled by 4 s");
    validate_check_near(r, X, check, "", nu, nus[i], 0.03, note);
  }
  return 0;
}

/* Fig. 10: equal line tensions (2.5 N/m) along the weft and, in a second cloth, along the warp,
 * with stretch_warp = 4 stretch_weft (250 and 1000 N/m, nu_weft 0.1): the warp stretches 4
 * times less. */
int validate_exp_cloth_weft_warp(const validate_options *o, validate_report *r) {
  const char *X = "cloth_weft_warp";
  const int32_t cells = o->quick ? 8 : 16;
  const double k_weft = 250.0, k_warp = 1000.0, tension = 2.5;
  static const char *const cols[] = {"axis", "axial_strain", "expected_strain", "lateral_strain"};
  const int series = validate_series_new(r, X, "strain", 4, cols);
  double strain[2];
  for (int d = 0; d < 2; ++d) {
    piola_cloth_material m = membrane(k_weft, k_warp, 0.1);
    double lateral = NAN;
    validate_settle_result sr;
    piola_status st =
        sheet_pull(o, r, cells, 1.0, &m, d == 0 ? 0 : 2, tension, &strain[d], &lateral, &sr);
    if (st != PIOLA_OK) {
      return validate_report_error(r, X, d == 0 ? "weft pull" : "warp pull", st);
    }
    double row[4] = {(double)d, strain[d], tension / (d == 0 ? k_weft : k_warp), lateral};
    validate_series_add(r, series, d == 0 ? "weft" : "warp", row);
  }
  char note[160];
  snprintf(note, sizeof note, "%dx%d cells; weft strain %.5g (T/k %.5g), warp %.5g (T/k %.5g)",
           (int)cells, (int)cells, strain[0], tension / k_weft, strain[1], tension / k_warp);
  validate_check_near(r, X, "weft strain / warp strain", "", strain[0] / strain[1], 4.0, 0.05 * 4.0,
                      note);
  return 0;
}

/* A strip of length L = 1 m (weft along it, 16 x 2 cells, 0.1 m wide), nu = 0, no bending,
 * hanging from its pinned top edge under gravity: elongation rho_A g L^2 / (2 k), for k = 100
 * and 400 N/m (rho_A = 0.1 kg/m^2); damping 4/s, 10 substeps of 10 iterations per 10 ms, 3 s. */
static piola_status hanging_strip(const validate_options *o, validate_report *r, double rho,
                                  double k, double length, int32_t cells, double *elongation) {
  piola_world_def def = validate_base_def(o, 0.01, 10, 10);
  def.gravity[1] = -9.81f;
  def.damping = 4.0f;
  piola_tri_mesh m;
  piola_status st =
      piola_mesh_make_grid((const int32_t[2]){cells, 2}, (const float[2]){(float)length, 0.1f}, &m);
  if (st != PIOLA_OK) {
    return st;
  }
  for (int32_t i = 0; i < m.vertex_count; ++i) { /* (x, 0, z) -> (z, -x, 0): weft down */
    const float x = m.positions[3 * i], z = m.positions[3 * i + 2];
    m.positions[3 * i] = z;
    m.positions[3 * i + 1] = -x;
    m.positions[3 * i + 2] = 0.0f;
  }
  piola_cloth_material mat = membrane(k, k, 0.0);
  mat.density = (float)rho;
  validate_sim s;
  st = cloth_sim_create(r, &def, &m, &mat, NULL, &s);
  if (st == PIOLA_OK) {
    for (int32_t i = 0; i < s.n; ++i) {
      if (m.positions[3 * i + 1] >= -1e-6f) {
        s.inv_mass[i] = 0.0f; /* the top edge */
      }
    }
    st = piola_body_set_inverse_masses(s.world, s.body, s.inv_mass, s.n);
    if (st == PIOLA_OK) {
      st = validate_sim_steps(&s, 300);
    }
    if (st == PIOLA_OK) {
      st = validate_sim_read(&s);
    }
    double sum = 0.0;
    int n = 0;
    for (int32_t i = 0; st == PIOLA_OK && i < s.n; ++i) {
      if (m.positions[3 * i + 1] <= -(float)length + 1e-6f) {
        sum += -(double)s.x[3 * i + 1];
        ++n;
      }
    }
    *elongation = n > 0 ? sum / n - length : NAN;
    validate_sim_destroy(&s);
  }
  piola_tri_mesh_free(&m);
  return st;
}

int validate_exp_cloth_hanging(const validate_options *o, validate_report *r) {
  const char *X = "cloth_hanging";
  const double rho = 0.1, length = 1.0, ks[2] = {100.0, 400.0};
  const int32_t cells = o->quick ? 12 : 16;
  static const char *const cols[] = {"k", "elongation", "expected"};
  const int series = validate_series_new(r, X, "elongation", 3, cols);
  for (int i = 0; i < 2; ++i) {
    double e = NAN;
    piola_status st = hanging_strip(o, r, rho, ks[i], length, cells, &e);
    if (st != PIOLA_OK) {
      return validate_report_error(r, X, "strip", st);
    }
    const double expected = rho * 9.81 * length * length / (2.0 * ks[i]);
    double row[3] = {ks[i], e, expected};
    validate_series_add(r, series, "strip", row);
    char check[96], note[160];
    snprintf(check, sizeof check, "k=%g N/m: elongation / (rho_A g L^2 / (2 k))", ks[i]);
    snprintf(note, sizeof note, "%d cells along; elongation %.4f mm, closed form %.4f mm",
             (int)cells, 1e3 * e, 1e3 * expected);
    validate_check_near(r, X, check, "", e / expected, 1.0, 0.05, note);
  }
  return 0;
}

/* A strip of `rows` straight vertex rows across x (rows j at x = (j - 1) h, j = 0 .. rows - 1)
 * and `across` vertices per row along z, a apart, odd rows shifted by a / 2: equilateral
 * triangles of side a, h = a sqrt(3) / 2 (one edge family along z, the others at +-30 degrees
 * from x). Triangles wound counter-clockwise seen from +y. */
static piola_status equilateral_strip(int32_t rows, int32_t across, double a, piola_tri_mesh *m) {
  memset(m, 0, sizeof *m);
  const double h = a * sqrt(3.0) / 2.0;
  m->vertex_count = rows * across;
  m->triangle_count = (rows - 1) * 2 * (across - 1) + (rows - 1);
  m->positions = malloc(sizeof *m->positions * 3 * (size_t)m->vertex_count);
  m->triangles = malloc(sizeof *m->triangles * 3 * (size_t)m->triangle_count);
  if (m->positions == NULL || m->triangles == NULL) {
    piola_tri_mesh_free(m);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t j = 0; j < rows; ++j) {
    for (int32_t i = 0; i < across; ++i) {
      float *p = m->positions + 3 * (size_t)(j * across + i);
      p[0] = (float)((j - 1) * h);
      p[1] = 0.0f;
      p[2] = (float)((i + 0.5 * (j % 2)) * a);
    }
  }
  int32_t t = 0;
  for (int32_t j = 0; j + 1 < rows; ++j) {
    /* Zip rows j and j + 1 by z. */
    const int32_t lo = j * across, hi = (j + 1) * across;
    int32_t u = 0, v = 0;
    while (u < across - 1 || v < across - 1) {
      const float zu = u < across - 1 ? m->positions[3 * (lo + u + 1) + 2] : INFINITY;
      const float zv = v < across - 1 ? m->positions[3 * (hi + v + 1) + 2] : INFINITY;
      int32_t *q = m->triangles + 3 * t++;
      if (zu <= zv) {
        q[0] = lo + u;
        q[1] = lo + u + 1;
        q[2] = hi + v;
        ++u;
      } else {
        q[0] = lo + u;
        q[1] = hi + v + 1;
        q[2] = hi + v;
        ++v;
      }
      /* Counter-clockwise from +y: (b - a) x (c - a) has y > 0. */
      const float *pa = m->positions + 3 * q[0], *pb = m->positions + 3 * q[1],
                  *pc = m->positions + 3 * q[2];
      const double ny =
          (double)(pb[2] - pa[2]) * (pc[0] - pa[0]) - (double)(pb[0] - pa[0]) * (pc[2] - pa[2]);
      if (ny < 0.0) {
        const int32_t swap = q[1];
        q[1] = q[2];
        q[2] = swap;
      }
    }
  }
  m->triangle_count = t;
  return PIOLA_OK;
}

/* The cantilever's step per 10 ms (validate_options: 0 is the experiment's own). */
static int32_t cantilever_substeps(const validate_options *o) {
  return o->cantilever_substeps > 0 ? o->cantilever_substeps : o->quick ? 100 : 200;
}

static int32_t cantilever_iterations(const validate_options *o) {
  return o->cantilever_iterations > 0 ? o->cantilever_iterations : 2;
}

/* A cantilevered strip of free length L (0.2 m) clamped by pinning two vertex lines across it
 * (at x = -dx and 0), sagging under its own weight (rho_A = 0.1 kg/m^2, nu = 0, stretch
 * 1000 N/m); returns the mean sag of the tip line after 2 s, and after 1.5 s in `sag_early`
 * (whether it has settled) (damping 8/s; 200 substeps of 2 iterations per 10 ms unless the
 * options say otherwise: Gauss-Seidel converges slowly on bending, many small substeps make the
 * compliance dominate, see docs/validation.md). `equilateral`: the strip of equilateral triangles
 * above with `cells` rows of height dx along L and `cells` vertices across; else
 * piola_mesh_make_grid's checkerboard of `cells` squares along L and 2 across.
 *
 * The discrete strip bends at its hinges (the edges across it), each standing for the
 * curvature of a band dx wide around it; the hinge on the clamp line x = 0 bends the band
 * [-dx/2, dx/2], so the discrete strip is clamped at -dx/2 and is L + dx/2 long: its sag is
 * (1 + 1/(2 N))^4, about 1 + 2 / N, times the closed form for N rows, and the triangles at the
 * free edges (the strip's width is (N - 1/2) triangle heights of mass but N - 1 hinges of
 * stiffness per row) add about 1 / (2 N) more. Measured, equilateral: 1.667 (N = 4), 1.325 (8),
 * 1.167 (16), i.e. 1 + 2.6 / N: first-order convergence to the closed form, checked by Richardson
 * extrapolation of two resolutions. (At 32 rows 200 substeps of Gauss-Seidel no longer converge
 * the bending: 1.30; bench/RESULTS.md has 16 to 64 rows under both schemes.) */
static piola_status cantilever(const validate_options *o, validate_report *r, bool equilateral,
                               int32_t cells, double d, double *sag, double *sag_early) {
  const double rho = 0.1, length = 0.2, dx = length / cells;
  piola_world_def def =
      validate_base_def(o, 0.01, cantilever_substeps(o), cantilever_iterations(o));
  def.gravity[1] = -9.81f;
  def.damping = 8.0f;
  piola_tri_mesh m;
  piola_status st;
  if (equilateral) {
    st = equilateral_strip(cells + 2, cells, dx * 2.0 / sqrt(3.0), &m);
  } else {
    st = piola_mesh_make_grid((const int32_t[2]){cells + 1, 2},
                              (const float[2]){(float)(length + dx), (float)(2.0 * dx)}, &m);
    for (int32_t i = 0; st == PIOLA_OK && i < m.vertex_count; ++i) {
      m.positions[3 * i] -= (float)dx; /* the pinned lines at -dx and 0 */
    }
  }
  if (st != PIOLA_OK) {
    return st;
  }
  piola_cloth_material mat = membrane(1000.0, 1000.0, 0.0);
  mat.density = (float)rho;
  mat.bending_stiffness = (float)d;
  validate_sim s;
  st = cloth_sim_create(r, &def, &m, &mat, NULL, &s);
  if (st == PIOLA_OK) {
    for (int32_t i = 0; i < s.n; ++i) {
      if (m.positions[3 * i] <= (float)(0.5 * dx)) {
        s.inv_mass[i] = 0.0f;
      }
    }
    st = piola_body_set_inverse_masses(s.world, s.body, s.inv_mass, s.n);
    for (int part = 0; part < 2; ++part) {
      if (st == PIOLA_OK) {
        st = validate_sim_steps(&s, part == 0 ? 150 : 50);
      }
      if (st == PIOLA_OK) {
        st = validate_sim_read(&s);
      }
      double sum = 0.0;
      int n = 0;
      for (int32_t i = 0; st == PIOLA_OK && i < s.n; ++i) {
        if (m.positions[3 * i] >= (float)length - 1e-6f) {
          sum += -(double)s.x[3 * i + 1];
          ++n;
        }
      }
      *(part == 0 ? sag_early : sag) = n > 0 ? sum / n : NAN;
    }
    validate_sim_destroy(&s);
  }
  piola_tri_mesh_free(&m);
  return st;
}

int validate_exp_cloth_cantilever(const validate_options *o, validate_report *r) {
  const char *X = "cloth_cantilever";
  const double rho = 0.1, length = 0.2, d = 0.02;
  const double expected = rho * 9.81 * pow(length, 4) / (8.0 * d);
  const int32_t cells = o->cantilever_rows > 0 ? o->cantilever_rows : o->quick ? 8 : 16;
  const int32_t substeps = cantilever_substeps(o), iterations = cantilever_iterations(o);
  static const char *const cols[] = {"cells", "sag", "expected", "ratio", "substeps", "iterations"};
  const int series = validate_series_new(r, X, "sag", 6, cols);
  /* The equilateral strip at N / 2 and N rows, then the checkerboard grid at N. */
  double sag[3] = {NAN, NAN, NAN};
  for (int run = 0; run < 3; ++run) {
    const bool equilateral = run < 2;
    const int32_t n = run == 0 ? cells / 2 : cells;
    double early = NAN;
    piola_status st = cantilever(o, r, equilateral, n, d, &sag[run], &early);
    if (st != PIOLA_OK) {
      return validate_report_error(r, X, equilateral ? "equilateral strip" : "grid strip", st);
    }
    double row[6] = {(double)n,           sag[run],         expected,
                     sag[run] / expected, (double)substeps, (double)iterations};
    validate_series_add(r, series, equilateral ? "equilateral" : "grid", row);
    char check[96], note[160];
    snprintf(note, sizeof note,
             "%d x %d per 10 ms, D = %g N m; sag %.4f mm (%.4f at 1.5 s), closed form %.4f mm",
             (int)substeps, (int)iterations, d, 1e3 * sag[run], 1e3 * early, 1e3 * expected);
    /* Each resolution is reported; the check is on the converged sag (below). The checkerboard
     * grid bends about a grid line softer than D (docs/cloth.md). */
    snprintf(check, sizeof check, "%s strip, %d rows: tip sag / closed form",
             equilateral ? "equilateral" : "grid (checkerboard)", (int)n);
    validate_report_info(r, X, check, "", sag[run] / expected, note);
  }
  /* The sag converges at first order in 1 / N (see cantilever()): Richardson's extrapolation
   * 2 s(N) - s(N / 2) removes that term. */
  const double converged = 2.0 * sag[1] - sag[0];
  char check[96], note[160];
  snprintf(check, sizeof check, "equilateral strip: sag extrapolated (2 s(%d) - s(%d)) / closed",
           (int)cells, (int)(cells / 2));
  snprintf(note, sizeof note, "sag %.4f mm, closed form rho_A g L^4 / (8 D) %.4f mm",
           1e3 * converged, 1e3 * expected);
  validate_check_near(r, X, check, "", converged / expected, 1.0, 0.10, note);
  return 0;
}

/* Bending energy of rigid motions: a flat 1 m x 1 m cloth and one whose rest shape is a
 * quarter cylinder (radius 0.6 m), each turned by 0.7 rad about (1, 2, 3) and moved by
 * (0.3, -0.2, 0.5) m, against the same cloths bent isometrically (the flat one rolled onto a
 * cylinder of radius 1 m, the curved one flattened): the energy of the rigid motion over the
 * energy of the bend, and the largest motion of a vertex over 50 steps (no gravity) after the
 * rigid motion. */
static void rigid_motion(float *x, int32_t n) {
  const double angle = 0.7, axis[3] = {1.0 / sqrt(14.0), 2.0 / sqrt(14.0), 3.0 / sqrt(14.0)};
  const double c = cos(angle), s = sin(angle), t = 1.0 - c, shift[3] = {0.3, -0.2, 0.5};
  const double R[3][3] = {{t * axis[0] * axis[0] + c, t * axis[0] * axis[1] - s * axis[2],
                           t * axis[0] * axis[2] + s * axis[1]},
                          {t * axis[0] * axis[1] + s * axis[2], t * axis[1] * axis[1] + c,
                           t * axis[1] * axis[2] - s * axis[0]},
                          {t * axis[0] * axis[2] - s * axis[1], t * axis[1] * axis[2] + s * axis[0],
                           t * axis[2] * axis[2] + c}};
  for (int32_t i = 0; i < n; ++i) {
    const double p[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
    for (int k = 0; k < 3; ++k) {
      x[3 * i + k] = (float)(R[k][0] * p[0] + R[k][1] * p[1] + R[k][2] * p[2] + shift[k]);
    }
  }
}

int validate_exp_cloth_rigid(const validate_options *o, validate_report *r) {
  const char *X = "cloth_rigid";
  const int32_t cells = o->quick ? 8 : 16;
  static const char *const cols[] = {"rigid_energy", "bent_energy", "ratio", "drift"};
  const int series = validate_series_new(r, X, "energy", 4, cols);
  for (int curved = 0; curved < 2; ++curved) {
    const char *label = curved ? "curved" : "flat";
    piola_tri_mesh m;
    piola_status st =
        piola_mesh_make_grid((const int32_t[2]){cells, cells}, (const float[2]){1.0f, 1.0f}, &m);
    if (st != PIOLA_OK) {
      return validate_report_error(r, X, label, st);
    }
    float *flat = malloc(sizeof *flat * 3 * (size_t)m.vertex_count);
    if (flat == NULL) {
      piola_tri_mesh_free(&m);
      return validate_report_error(r, X, label, PIOLA_ERROR_OUT_OF_MEMORY);
    }
    memcpy(flat, m.positions, sizeof *flat * 3 * (size_t)m.vertex_count);
    /* (x, 0, z) on a cylinder of radius rad about the z axis at height rad. */
    const double rad = curved ? 0.6 : 1.0;
    float *rolled = malloc(sizeof *rolled * 3 * (size_t)m.vertex_count);
    for (int32_t i = 0; rolled != NULL && i < m.vertex_count; ++i) {
      const double a = m.positions[3 * i] / rad;
      rolled[3 * i] = (float)(rad * sin(a));
      rolled[3 * i + 1] = (float)(rad * (1.0 - cos(a)));
      rolled[3 * i + 2] = m.positions[3 * i + 2];
    }
    if (curved && rolled != NULL) {
      memcpy(m.positions, rolled, sizeof *rolled * 3 * (size_t)m.vertex_count);
    }
    piola_world_def def = validate_base_def(o, 0.005, 2, 5);
    piola_cloth_material mat = piola_default_cloth_material();
    mat.bending_stiffness = 1e-3f;
    validate_sim s;
    st = rolled == NULL ? PIOLA_ERROR_OUT_OF_MEMORY : cloth_sim_create(r, &def, &m, &mat, NULL, &s);
    double energy[2] = {NAN, NAN}, drift = NAN;
    piola_stats stats;
    if (st == PIOLA_OK) {
      /* The bend: the curved rest shape flattened, the flat one rolled. */
      st = piola_body_set_positions(s.world, s.body, curved ? flat : rolled, s.n);
      if (st == PIOLA_OK && (st = piola_world_get_stats(s.world, &stats)) == PIOLA_OK) {
        energy[1] = stats.elastic_energy;
      }
      float *moved = malloc(sizeof *moved * 3 * (size_t)s.n);
      if (st == PIOLA_OK && moved == NULL) {
        st = PIOLA_ERROR_OUT_OF_MEMORY;
      }
      if (st == PIOLA_OK) {
        memcpy(moved, m.positions, sizeof *moved * 3 * (size_t)s.n);
        rigid_motion(moved, s.n);
        st = piola_body_set_positions(s.world, s.body, moved, s.n);
      }
      if (st == PIOLA_OK && (st = piola_world_get_stats(s.world, &stats)) == PIOLA_OK) {
        energy[0] = stats.elastic_energy;
        st = validate_sim_steps(&s, 50);
      }
      if (st == PIOLA_OK) {
        st = validate_sim_read(&s);
        drift = 0.0;
        for (int32_t i = 0; i < 3 * s.n; ++i) {
          drift = fmax(drift, fabs((double)s.x[i] - moved[i]));
        }
      }
      free(moved);
      validate_sim_destroy(&s);
    }
    free(flat);
    free(rolled);
    piola_tri_mesh_free(&m);
    if (st != PIOLA_OK) {
      return validate_report_error(r, X, label, st);
    }
    double row[4] = {energy[0], energy[1], energy[0] / energy[1], drift};
    validate_series_add(r, series, label, row);
    char check[96], note[160];
    snprintf(note, sizeof note,
             "%s rest shape, %dx%d cells, D = 1e-3 N m: rigid %.3g J, bent "
             "%.3g J",
             label, (int)cells, (int)cells, energy[0], energy[1]);
    snprintf(check, sizeof check, "%s: energy after a rigid motion / after a bend", label);
    validate_check_at_most(r, X, check, "", energy[0] / energy[1], 1e-6, note);
    snprintf(check, sizeof check, "%s: largest vertex motion, 50 steps after it", label);
    validate_check_at_most(r, X, check, "m", drift, 1e-6, note);
  }
  return 0;
}
