/* Parity of the OpenCL backend (float kernels) with the CPU reference (double): the same scene
 * is built in both, stepped in lock-step by the generic cross-check (src/cli/crosscheck.c, the
 * one `piola crosscheck` uses) and compared after every step; the largest vertex distance,
 * relative to the reference's bounding-box diagonal, must stay within 1e-4 over the run (the
 * issue's tolerance for 100 steps of the default scene). Then: two OpenCL runs of one scene
 * give bitwise identical states.
 *
 * Float against double over 100 steps can only agree where the motion is well conditioned. The
 * kernels' own rounding is mostly that of the velocity update v = (p - x) / h on float
 * positions (about 1e-7 m / h per substep); a scene is well conditioned when the reference,
 * given that much noise in its positions and velocities every step, stays well within the
 * tolerance (PIOLA_PARITY_BASELINE=1e-7 runs and prints that baseline for every scene). Each
 * scene below was chosen so, while its bodies still deform, collide and move (each checks that
 * they do); the comments give the worst deviation measured on PoCL (CPU) and the baseline.
 * Scenes that are not so conditioned, and why, are noted where they were left out.
 *
 * When a case fails, the test prints the deviation per step and the vertex that deviates most
 * at the worst step; PIOLA_PARITY_TRACE=1 prints the worst vertex after every step.
 */
#include "crosscheck.h"
#include "piola_internal.h" /* the CPU world's plastic strain, piola_world_pull() */
#include "piola_test.h"
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PARITY_TOLERANCE 1e-4
#define PARITY_MAX_BODIES 4
#define PARITY_MAX_COLLIDERS 8

/* One body of a scene. */
typedef struct parity_body {
  const piola_tet_mesh *mesh;
  const piola_material *material; /* NULL: the scene's */
  float at[3];                    /* translation of the mesh, m */
  float squash;   /* initial vertical scale about the body's lowest point: 1 = rest shape,
                     0 = flattened to a plane, < 0 = mirrored (every tet inverted) */
  float pin_band; /* > 0: vertices within this distance (m) of the smallest rest x are pinned */
  bool no_self_collision; /* for bodies that start passing through themselves */
} parity_body;

typedef struct parity_scene {
  const char *name;
  piola_material material;
  int32_t substeps, iterations;
  float damping;    /* 1/s */
  float gravity[3]; /* m/s^2 */
  int32_t steps;
  parity_body bodies[PARITY_MAX_BODIES];
  int32_t body_count;
  piola_collider_def colliders[PARITY_MAX_COLLIDERS];
  int32_t collider_count;
  piola_iteration_scheme scheme; /* default Gauss-Seidel */
  piola_schedule schedule;       /* default AUTO */
  float vbd_rho;                 /* piola_world_def.vbd_chebyshev_rho; default 0 */
} parity_scene;

static parity_scene parity_scene_make(const char *name) {
  parity_scene sc;
  memset(&sc, 0, sizeof sc);
  sc.name = name;
  sc.material = piola_default_material();
  sc.material.youngs_modulus = 1.0e6f; /* the piola program's default scene */
  sc.substeps = 1;
  sc.iterations = 5;
  sc.gravity[1] = -9.81f;
  sc.steps = 100;
  return sc;
}

static parity_body *parity_add_body(parity_scene *sc, const piola_tet_mesh *mesh, float x, float y,
                                    float z) {
  parity_body *b = &sc->bodies[sc->body_count++];
  memset(b, 0, sizeof *b);
  b->mesh = mesh;
  b->at[0] = x;
  b->at[1] = y;
  b->at[2] = z;
  b->squash = 1.0f;
  return b;
}

static piola_collider_def *parity_add_collider(parity_scene *sc, piola_collider_type type) {
  piola_collider_def *c = &sc->colliders[sc->collider_count++];
  *c = piola_default_collider_def();
  c->type = type;
  return c;
}

static void parity_add_ground(parity_scene *sc, float friction) {
  piola_collider_def *c = parity_add_collider(sc, PIOLA_COLLIDER_PLANE);
  c->static_friction = friction;
  c->dynamic_friction = friction;
}

/* The start positions of body b (3 floats per vertex). */
static void parity_start_positions(const parity_body *b, float *out) {
  const piola_tet_mesh *m = b->mesh;
  float lo = INFINITY;
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    lo = fminf(lo, m->positions[3 * i + 1]);
  }
  for (int32_t i = 0; i < m->vertex_count; ++i) {
    out[3 * i] = m->positions[3 * i] + b->at[0];
    out[3 * i + 1] = lo + (m->positions[3 * i + 1] - lo) * b->squash + b->at[1];
    out[3 * i + 2] = m->positions[3 * i + 2] + b->at[2];
  }
}

/* Builds the scene in a new world of the given backend. perturbation > 0 moves every start
 * coordinate by a pseudo-random amount in [-perturbation, perturbation) m (the conditioning
 * baseline). */
static piola_status parity_build(const parity_scene *sc, piola_backend backend, double perturbation,
                                 piola_world **out, piola_body_id *ids) {
  piola_world_def def = opencl_test_world_def(backend, NULL, NULL);
  def.substeps = sc->substeps;
  def.iterations = sc->iterations;
  def.damping = sc->damping;
  def.iteration_scheme = sc->scheme;
  def.schedule = sc->schedule;
  def.vbd_chebyshev_rho = sc->vbd_rho;
  memcpy(def.gravity, sc->gravity, sizeof def.gravity);
  piola_world *w = NULL;
  piola_status s = piola_world_create(&def, &w);
  for (int32_t c = 0; c < sc->collider_count && s == PIOLA_OK; ++c) {
    s = piola_world_add_collider(w, &sc->colliders[c], NULL);
  }
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  for (int32_t i = 0; i < sc->body_count && s == PIOLA_OK; ++i) {
    const parity_body *b = &sc->bodies[i];
    const int32_t n = b->mesh->vertex_count;
    float *buf = malloc(sizeof *buf * 3 * (size_t)n);
    if (buf == NULL) {
      s = PIOLA_ERROR_OUT_OF_MEMORY;
      break;
    }
    s = piola_world_add_tet_body(w, b->mesh, b->material != NULL ? b->material : &sc->material,
                                 b->at, &ids[i]);
    if (s == PIOLA_OK && (b->squash != 1.0f || perturbation > 0.0)) {
      parity_start_positions(b, buf);
      for (int32_t k = 0; k < 3 * n && perturbation > 0.0; ++k) {
        buf[k] += (float)(perturbation * piola_test_rand(&rng));
      }
      s = piola_body_set_positions(w, ids[i], buf, n);
    }
    if (s == PIOLA_OK && b->pin_band > 0.0f) {
      float lo = INFINITY;
      for (int32_t k = 0; k < n; ++k) {
        lo = fminf(lo, b->mesh->positions[3 * k]);
      }
      s = piola_body_get_inverse_masses(w, ids[i], buf, n);
      for (int32_t k = 0; k < n && s == PIOLA_OK; ++k) {
        if (b->mesh->positions[3 * k] <= lo + b->pin_band) {
          buf[k] = 0.0f;
        }
      }
      if (s == PIOLA_OK) {
        s = piola_body_set_inverse_masses(w, ids[i], buf, n);
      }
    }
    if (s == PIOLA_OK && b->no_self_collision) {
      s = piola_body_set_self_collision(w, ids[i], false);
    }
    free(buf);
  }
  if (s != PIOLA_OK) {
    piola_world_destroy(w);
    w = NULL;
  }
  *out = w;
  return s;
}

/* The largest distance between the two worlds' vertices and where it is. */
typedef struct parity_worst_vertex {
  int32_t body, vertex;
  float a[3], b[3];
  double distance;
} parity_worst_vertex;

static void parity_find_worst_vertex(const crosscheck_pair *pair, parity_worst_vertex *out) {
  memset(out, 0, sizeof *out);
  for (int32_t i = 0; i < pair->body_count; ++i) {
    int32_t n = piola_body_get_vertex_count(pair->reference, pair->reference_bodies[i]);
    float *a = malloc(sizeof *a * 3 * (size_t)n), *b = malloc(sizeof *b * 3 * (size_t)n);
    if (a != NULL && b != NULL &&
        piola_body_get_positions(pair->reference, pair->reference_bodies[i], a, n) == PIOLA_OK &&
        piola_body_get_positions(pair->candidate, pair->candidate_bodies[i], b, n) == PIOLA_OK) {
      for (int32_t v = 0; v < n; ++v) {
        double d = 0.0;
        for (int k = 0; k < 3; ++k) {
          d += ((double)a[3 * v + k] - b[3 * v + k]) * ((double)a[3 * v + k] - b[3 * v + k]);
        }
        d = sqrt(d);
        if (!(d <= out->distance)) {
          out->body = i;
          out->vertex = v;
          out->distance = d;
          memcpy(out->a, a + 3 * v, sizeof out->a);
          memcpy(out->b, b + 3 * v, sizeof out->b);
        }
      }
    }
    free(a);
    free(b);
  }
}

typedef struct parity_trace {
  bool print;
  const crosscheck_pair *pair;
  double noise;          /* > 0: noise (m) put into the candidate after every step */
  double velocity_noise; /* m/s, the same noise divided by the substep */
  uint64_t rng;
} parity_trace;

/* The conditioning baseline: moves every coordinate of the candidate by up to `noise` m and
 * every velocity by up to noise / h m/s, about the rounding of float positions and of the
 * velocity update v = (p - x) / h of the kernels, injected into the double reference. */
static void parity_add_noise(parity_trace *tr) {
  const crosscheck_pair *pair = tr->pair;
  for (int32_t i = 0; i < pair->body_count; ++i) {
    int32_t n = piola_body_get_vertex_count(pair->candidate, pair->candidate_bodies[i]);
    float *p = malloc(sizeof *p * 3 * (size_t)n);
    if (p != NULL &&
        piola_body_get_positions(pair->candidate, pair->candidate_bodies[i], p, n) == PIOLA_OK) {
      for (int32_t k = 0; k < 3 * n; ++k) {
        p[k] += (float)(tr->noise * piola_test_rand(&tr->rng));
      }
      piola_body_set_positions(pair->candidate, pair->candidate_bodies[i], p, n);
    }
    if (p != NULL &&
        piola_body_get_velocities(pair->candidate, pair->candidate_bodies[i], p, n) == PIOLA_OK) {
      for (int32_t k = 0; k < 3 * n; ++k) {
        p[k] += (float)(tr->velocity_noise * piola_test_rand(&tr->rng));
      }
      piola_body_set_velocities(pair->candidate, pair->candidate_bodies[i], p, n);
    }
    free(p);
  }
}

static void parity_after_step(const crosscheck_sample *s, void *user) {
  parity_trace *tr = user;
  if (tr->noise > 0.0) {
    parity_add_noise(tr);
  }
  if (tr->print) {
    parity_worst_vertex wv;
    parity_find_worst_vertex(tr->pair, &wv);
    printf("    step %4d: max %.3e rms %.3e of the diagonal; worst body %d vertex %d "
           "(%.6f %.6f %.6f) vs (%.6f %.6f %.6f)\n",
           (int)s->step, s->max_relative, s->rms_relative, (int)wv.body, (int)wv.vertex,
           (double)wv.a[0], (double)wv.a[1], (double)wv.a[2], (double)wv.b[0], (double)wv.b[1],
           (double)wv.b[2]);
  }
}

/* The result of one cross-check; with `keep`, its two worlds too (release with
 * parity_release()). */
typedef struct parity_result {
  double worst;       /* largest max_relative over the run */
  int32_t worst_step; /* where it was reached */
  double final_max;   /* max_relative after the last step */
  double moved;       /* largest displacement of a reference vertex from its start, m */
  piola_stats ref_start, ref_end;
  piola_world *ref, *cand;
  piola_body_id ref_ids[PARITY_MAX_BODIES], cand_ids[PARITY_MAX_BODIES];
} parity_result;

static void parity_release(parity_result *r) {
  piola_world_destroy(r->ref);
  piola_world_destroy(r->cand);
  r->ref = NULL;
  r->cand = NULL;
}

/* Largest distance of a vertex from its start position in a world, m. */
static double parity_moved(const parity_scene *sc, piola_world *w, const piola_body_id *ids) {
  double moved = 0.0;
  for (int32_t i = 0; i < sc->body_count; ++i) {
    const int32_t n = sc->bodies[i].mesh->vertex_count;
    float *start = malloc(sizeof *start * 3 * (size_t)n),
          *now = malloc(sizeof *now * 3 * (size_t)n);
    if (start != NULL && now != NULL && piola_body_get_positions(w, ids[i], now, n) == PIOLA_OK) {
      parity_start_positions(&sc->bodies[i], start);
      for (int32_t v = 0; v < n; ++v) {
        double d2 = 0.0;
        for (int k = 0; k < 3; ++k) {
          d2 += ((double)now[3 * v + k] - start[3 * v + k]) *
                ((double)now[3 * v + k] - start[3 * v + k]);
        }
        moved = fmax(moved, sqrt(d2));
      }
    }
    free(start);
    free(now);
  }
  return moved;
}

/* Runs the cross-check of `sc` (the CPU reference against OpenCL, or when noise > 0 against a
 * second CPU reference whose positions get that much noise (m) at the start and after every
 * step) and fills *r, keeping the two worlds there when `keep` is set. */
static piola_status parity_run(piola_test *t, const parity_scene *sc, double noise, bool keep,
                               parity_result *r) {
  memset(r, 0, sizeof *r);
  piola_body_id *ref_ids = r->ref_ids, *cand_ids = r->cand_ids;
  piola_body_id ids2[2][PARITY_MAX_BODIES];
  piola_world *ref = NULL, *cand = NULL;
  piola_status s = parity_build(sc, PIOLA_BACKEND_CPU_REFERENCE, 0.0, &ref, ref_ids);
  if (s == PIOLA_OK) {
    s = parity_build(sc, noise > 0.0 ? PIOLA_BACKEND_CPU_REFERENCE : PIOLA_BACKEND_OPENCL, noise,
                     &cand, cand_ids);
  }
  crosscheck_sample *samples = calloc((size_t)sc->steps, sizeof *samples);
  if (s == PIOLA_OK && samples == NULL) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(ref, &r->ref_start);
  }
  crosscheck_pair pair = {ref, cand, ref_ids, cand_ids, sc->body_count};
  const double h = (double)piola_default_world_def().dt / sc->substeps;
  parity_trace trace = {getenv("PIOLA_PARITY_TRACE") != NULL, &pair, noise, noise / h, 12345};
  if (s == PIOLA_OK) {
    s = crosscheck_run(&pair, sc->steps, samples, &r->worst, parity_after_step, &trace);
  }
  if (s == PIOLA_OK) {
    s = piola_world_get_stats(ref, &r->ref_end);
  }
  if (s == PIOLA_OK) {
    for (int32_t i = 0; i < sc->steps; ++i) {
      if (!(samples[i].max_relative < r->worst)) {
        r->worst_step = samples[i].step;
        break;
      }
    }
    r->final_max = samples[sc->steps - 1].max_relative;
    r->moved = parity_moved(sc, ref, ref_ids);
  }
  if (s == PIOLA_OK && !(r->worst <= PARITY_TOLERANCE) && noise == 0.0) {
    /* Investigation aid: the series and, at the worst step, the vertex. */
    printf("  parity %s FAILED; deviation per step:\n", sc->name);
    for (int32_t i = 0; i < sc->steps; ++i) {
      printf("    step %4d: max %.3e rms %.3e\n", (int)samples[i].step, samples[i].max_relative,
             samples[i].rms_relative);
    }
    piola_world *ref2 = NULL, *cand2 = NULL;
    if (parity_build(sc, PIOLA_BACKEND_CPU_REFERENCE, 0.0, &ref2, ids2[0]) == PIOLA_OK &&
        parity_build(sc, PIOLA_BACKEND_OPENCL, 0.0, &cand2, ids2[1]) == PIOLA_OK) {
      crosscheck_pair pair2 = {ref2, cand2, ids2[0], ids2[1], sc->body_count};
      double ignored;
      if (crosscheck_run(&pair2, r->worst_step, NULL, &ignored, NULL, NULL) == PIOLA_OK) {
        parity_worst_vertex wv;
        parity_find_worst_vertex(&pair2, &wv);
        printf("  at step %d the worst vertex is body %d vertex %d: reference (%.7f %.7f %.7f), "
               "OpenCL (%.7f %.7f %.7f), %.3e m apart\n",
               (int)r->worst_step, (int)wv.body, (int)wv.vertex, (double)wv.a[0], (double)wv.a[1],
               (double)wv.a[2], (double)wv.b[0], (double)wv.b[1], (double)wv.b[2], wv.distance);
      }
    }
    piola_world_destroy(ref2);
    piola_world_destroy(cand2);
  }
  free(samples);
  r->ref = ref;
  r->cand = cand;
  if (!keep || s != PIOLA_OK) {
    parity_release(r);
  }
  CHECK_MSG(t, s == PIOLA_OK, "parity %s: %s", sc->name, piola_status_string(s));
  return s;
}

/* The cross-check of one scene against the tolerance, with its report line. The reference's
 * bodies must have moved by at least min_moved (m): the scene did something. Returns the
 * result for scene-specific checks, with the worlds when `keep` is set (then release it). */
static parity_result parity_check(piola_test *t, const parity_scene *sc, double min_moved,
                                  bool keep) {
  parity_result r;
  if (parity_run(t, sc, 0.0, keep, &r) != PIOLA_OK) {
    return r;
  }
  printf("  parity %-24s worst %.3e of the diagonal at step %3d, last step %.3e "
         "(%d steps, %d vertices, %d tets, moved %.3f m)\n",
         sc->name, r.worst, (int)r.worst_step, r.final_max, (int)sc->steps,
         (int)r.ref_end.vertex_count, (int)r.ref_end.tet_count, r.moved);
  const char *baseline = getenv("PIOLA_PARITY_BASELINE");
  if (baseline != NULL && atof(baseline) > 0.0) {
    parity_result b;
    if (parity_run(t, sc, atof(baseline), false, &b) == PIOLA_OK) {
      printf("  baseline %-22s CPU vs CPU with %g m of noise per step: worst %.3e at step %d\n",
             sc->name, atof(baseline), b.worst, (int)b.worst_step);
    }
  }
  CHECK_MSG(t, r.worst <= PARITY_TOLERANCE,
            "parity %s: OpenCL deviates from the CPU reference by %.3e of the bounding-box "
            "diagonal (step %d), more than %.1e",
            sc->name, r.worst, (int)r.worst_step, PARITY_TOLERANCE);
  CHECK_MSG(t, r.moved >= min_moved, "parity %s: the bodies moved only %.4f m (want >= %.4f)",
            sc->name, r.moved, min_moved);
  return r;
}

/* ---- Meshes --------------------------------------------------------------------------- */

static piola_tet_mesh parity_creature(void) {
  piola_tet_mesh m;
  memset(&m, 0, sizeof m);
  if (piola_mesh_make_creature(3.0f, &m) != PIOLA_OK) {
    memset(&m, 0, sizeof m);
  }
  return m;
}

/* ---- 1. Cross-checks -------------------------------------------------------------------- */

/* The procedural creature (piola's default body, StVK, XPBD, E = 1e6 Pa), started squashed to
 * 80 %, falling onto the ground with friction. Measured: 1.6e-5 (baseline 2.3e-5). The piola
 * program's default squash of 60 % is not well conditioned: around step 86 a tip vertex shared
 * by two tets (368) jitters in the reference itself and one body deviates by 1.1e-4 (a 1e-6 m
 * nudge of the reference at step 75 alone grows to 5e-5 there). */
void test_opencl_parity_creature(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature = parity_creature();
  REQUIRE(t, creature.vertex_count > 0);
  parity_scene sc = parity_scene_make("creature");
  parity_add_ground(&sc, 0.5f);
  parity_body *b = parity_add_body(&sc, &creature, 0.0f, 0.3f, 0.0f);
  b->squash = 0.8f;
  parity_result r = parity_check(t, &sc, 0.1, false);
  CHECK(t, r.ref_start.elastic_energy > 0.0);
  piola_mesh_free(&creature);
}

/* The Armadillo of Bender et al. 2014 (shared data; skipped when absent), soft (E = 1e4 Pa),
 * squashed to 95 % and released without gravity: it springs back and rings. Measured: 2.4e-5
 * (baseline 1.4e-5). Stiffer, colliding or falling Armadillos are not well conditioned enough
 * for a 1e-4 check: at E = 1e6 Pa its low-degree surface vertices (2 to 6 tets, e.g. 813, 947)
 * jitter from step to step in the reference itself, which then departs from itself by 2e-4
 * (squashed to 98 %, no gravity) to 1e-2 (the program's default scene) given float-sized
 * noise; and 100 steps of free fall alone drift by 8e-5 in float. */
void test_opencl_parity_armadillo(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const char *dir = piola_test_data_dir();
  if (dir == NULL) {
    printf("  the Armadillo (PIOLA_DATA_DIR/armadillo/armadillo_4k.node) is not here: skipped\n");
    CHECK(t, piola_test_data_dir() == NULL);
    return;
  }
  char node[4096], ele[4096];
  snprintf(node, sizeof node, "%s/armadillo/armadillo_4k.node", dir);
  snprintf(ele, sizeof ele, "%s/armadillo/armadillo_4k.ele", dir);
  piola_tet_mesh arma;
  REQUIRE_OK(t, piola_mesh_load_tetgen(node, ele, &arma));
  /* Centred on x = z = 0 with its lowest point at y = 0, as the piola program places it. */
  float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int32_t i = 0; i < arma.vertex_count; ++i) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = fminf(lo[k], arma.positions[3 * i + k]);
      hi[k] = fmaxf(hi[k], arma.positions[3 * i + k]);
    }
  }
  parity_scene sc = parity_scene_make("armadillo");
  sc.material.youngs_modulus = 1.0e4f;
  sc.gravity[1] = 0.0f;
  parity_body *b = parity_add_body(&sc, &arma, -(lo[0] + hi[0]) / 2, -lo[1], -(lo[2] + hi[2]) / 2);
  b->squash = 0.95f;
  parity_result r = parity_check(t, &sc, 0.03, false);
  CHECK(t, r.ref_end.vertex_count == 1180 && r.ref_end.tet_count == 3717);
  piola_mesh_free(&arma);
}

/* Neo-Hookean (XPBD), the creature as in the StVK case. Measured: 1.9e-5 (baseline 1.5e-6). */
void test_opencl_parity_neohookean(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature = parity_creature();
  REQUIRE(t, creature.vertex_count > 0);
  parity_scene sc = parity_scene_make("neohookean");
  sc.material.model = PIOLA_MODEL_NEOHOOKEAN;
  parity_add_ground(&sc, 0.5f);
  parity_body *b = parity_add_body(&sc, &creature, 0.0f, 0.3f, 0.0f);
  b->squash = 0.8f;
  parity_check(t, &sc, 0.1, false);
  piola_mesh_free(&creature);
}

/* The paper's plain PBD form, StVK (nu 0.3) and Neo-Hookean (nu 0.35) side by side: two
 * squashed bars dropped onto the ground. Measured: 5.9e-6 (baseline 5.4e-6). PBD projects each
 * tet fully (E cancels), which makes the creature chaotic (the reference departs from itself by
 * 1e-3 after one step from a 1e-8 m nudge) and nearly incompressible bars too (nu 0.45: 3e-3);
 * regular bars with moderate nu are well conditioned. */
void test_opencl_parity_pbd(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh bar = wt_box(6, 3, 3, 1.2f, 0.6f, 0.6f);
  REQUIRE(t, bar.vertex_count > 0);
  parity_scene sc = parity_scene_make("pbd");
  sc.material.solver = PIOLA_SOLVER_PBD;
  piola_material nh = sc.material;
  nh.model = PIOLA_MODEL_NEOHOOKEAN;
  nh.poisson_ratio = 0.35f;
  parity_add_ground(&sc, 0.5f);
  parity_body *a = parity_add_body(&sc, &bar, -1.5f, 0.05f, -0.3f);
  a->squash = 0.9f;
  parity_body *b = parity_add_body(&sc, &bar, 0.3f, 0.05f, -0.3f);
  b->squash = 0.9f;
  b->material = &nh;
  parity_result r = parity_check(t, &sc, 0.04, false);
  CHECK(t, r.ref_start.elastic_energy > 0.0);
  piola_mesh_free(&bar);
}

/* Inverted elements: one bar flattened to a plane (every tet degenerate) and one mirrored
 * through it (every tet inverted), above the ground; both must unfold in the same direction on
 * both backends, and every tet must be upright at the end. Measured: 9.6e-6 (ON), 9.7e-6
 * (ALWAYS), baseline 2.2e-6. A flattened creature is chaotic (1e-2 in the reference itself). */
static void parity_inversion(piola_test *t, piola_inversion mode, const char *name) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh bar = wt_box(6, 3, 3, 1.2f, 0.6f, 0.6f);
  REQUIRE(t, bar.vertex_count > 0);
  parity_scene sc = parity_scene_make(name);
  sc.material.handle_inversion = mode;
  parity_add_ground(&sc, 0.5f);
  parity_body *a = parity_add_body(&sc, &bar, -1.5f, 0.3f, -0.3f);
  a->squash = 0.0f;
  parity_body *b = parity_add_body(&sc, &bar, 0.3f, 0.5f, -0.3f);
  b->squash = -0.3f;
  /* Flattened and mirrored, both bars start passing through themselves: self-collision would
   * fight the unfolding this test is about (and makes it chaotic). */
  a->no_self_collision = true;
  b->no_self_collision = true;
  parity_result r = parity_check(t, &sc, 0.1, false);
  CHECK_MSG(t, r.ref_start.inverted_tets == 2 * bar.tet_count,
            "%d of %d tets inverted at the start", (int)r.ref_start.inverted_tets,
            (int)(2 * bar.tet_count));
  CHECK_MSG(t, r.ref_end.inverted_tets == 0, "%d tets still inverted at the end",
            (int)r.ref_end.inverted_tets);
  piola_mesh_free(&bar);
}

void test_opencl_parity_inversion_on(piola_test *t) {
  parity_inversion(t, PIOLA_INVERSION_ON, "inversion on");
}

void test_opencl_parity_inversion_always(piola_test *t) {
  parity_inversion(t, PIOLA_INVERSION_ALWAYS, "inversion always");
}

/* Plasticity (creep 5 1/s, yield 0.05, cap 0.3): the squashed creature yields almost
 * everywhere; the plastic strains of both backends must agree too. Measured: 1.2e-5 (baseline
 * 3.0e-6), plastic strains within 1.2e-3. With creep 20 1/s the reference departs from itself
 * by 1.1e-4 (tets crossing the yield threshold one substep apart). */
void test_opencl_parity_plasticity(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature = parity_creature();
  REQUIRE(t, creature.vertex_count > 0);
  parity_scene sc = parity_scene_make("plasticity");
  sc.material.plastic_yield = 0.05f;
  sc.material.plastic_creep = 5.0f;
  sc.material.plastic_max = 0.3f;
  parity_add_ground(&sc, 0.5f);
  parity_body *b = parity_add_body(&sc, &creature, 0.0f, 0.3f, 0.0f);
  b->squash = 0.8f;
  parity_result r = parity_check(t, &sc, 0.1, true);
  piola_world *ref = r.ref, *cl = r.cand;
  if (ref != NULL && cl != NULL) {
    /* The plastic strain of every tet (solver order is the same in both worlds): the flow
     * starts where the deviatoric strain crosses the yield strain, so a tet at that threshold
     * may start flowing one substep earlier on one backend: allow twice one substep's flow at
     * the yield strain, flow = h creep. */
    const double allowed =
        2.0 * 0.005 * (double)sc.material.plastic_creep * (double)sc.material.plastic_yield;
    REQUIRE_OK(t, piola_world_pull(cl));
    CHECK(t, ref->solver.plastic_count == creature.tet_count &&
                 cl->solver.plastic_count == ref->solver.plastic_count);
    double largest = 0.0, largest_gap = 0.0;
    int32_t yielded = 0;
    for (int32_t k = 0; k < ref->solver.plastic_count && k < cl->solver.plastic_count; ++k) {
      double n2 = 0.0, gap2 = 0.0;
      for (int j = 0; j < 6; ++j) {
        double a = ref->solver.plastic_strain[6 * k + j], c = cl->solver.plastic_strain[6 * k + j];
        n2 += a * a;
        gap2 += (a - c) * (a - c);
      }
      yielded += n2 > 0.0;
      largest = fmax(largest, sqrt(n2));
      largest_gap = fmax(largest_gap, sqrt(gap2));
    }
    printf("  plasticity: %d of %d tets yielded, largest plastic strain %.4f, largest gap "
           "between the backends %.3e (allowed %.3e)\n",
           (int)yielded, (int)ref->solver.plastic_count, largest, largest_gap, allowed);
    CHECK_MSG(t, yielded >= ref->solver.plastic_count / 2 && largest > 0.1,
              "too little plastic flow: %d tets yielded, largest strain %.4f", (int)yielded,
              largest);
    CHECK_MSG(t, largest_gap <= allowed, "plastic strains differ by %.3e", largest_gap);
  }
  parity_release(&r);
  piola_mesh_free(&creature);
}

/* Every collider type, with friction (static 0.5, dynamic 0.4; ground 0.6): blocks dropped
 * off-centre onto a sphere, a tilted box and a capsule slide off onto the ground; a smaller
 * block falls through a funnel without touching its wall (funnel contact has its own test at
 * the end of this file). Blocks balanced on top of a sphere or wedged in a funnel are left out:
 * those are unstable equilibria that any rounding tips. Measured: 2.0e-5 (baseline 1.5e-5). */
void test_opencl_parity_colliders(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh block = wt_box(3, 3, 3, 0.45f, 0.45f, 0.45f);
  piola_tet_mesh small = wt_box(3, 3, 3, 0.3f, 0.3f, 0.3f);
  REQUIRE(t, block.vertex_count > 0 && small.vertex_count > 0);
  parity_scene sc = parity_scene_make("colliders");
  parity_add_ground(&sc, 0.6f);
  piola_collider_def *sphere = parity_add_collider(&sc, PIOLA_COLLIDER_SPHERE);
  sphere->shape.sphere.center[0] = -2.1f;
  sphere->shape.sphere.center[1] = 0.4f;
  sphere->shape.sphere.radius = 0.4f;
  piola_collider_def *box = parity_add_collider(&sc, PIOLA_COLLIDER_BOX);
  box->shape.box.center[0] = -0.7f;
  box->shape.box.center[1] = 0.2f;
  box->shape.box.half_extents[0] = 0.5f;
  box->shape.box.half_extents[1] = 0.2f;
  box->shape.box.half_extents[2] = 0.5f;
  box->shape.box.rotation[2] = 0.1305262f; /* 15 degrees about z */
  box->shape.box.rotation[3] = 0.9914449f;
  piola_collider_def *capsule = parity_add_collider(&sc, PIOLA_COLLIDER_CAPSULE);
  capsule->shape.capsule.a[0] = 0.7f;
  capsule->shape.capsule.a[1] = 0.3f;
  capsule->shape.capsule.a[2] = -0.6f;
  capsule->shape.capsule.b[0] = 0.7f;
  capsule->shape.capsule.b[1] = 0.3f;
  capsule->shape.capsule.b[2] = 0.6f;
  capsule->shape.capsule.radius = 0.3f;
  piola_collider_def *funnel = parity_add_collider(&sc, PIOLA_COLLIDER_FUNNEL);
  funnel->shape.funnel.base[0] = 2.1f;
  funnel->shape.funnel.base[1] = 0.5f;
  funnel->shape.funnel.axis[1] = 1.0f;
  funnel->shape.funnel.base_radius = 0.3f;
  funnel->shape.funnel.top_radius = 0.7f;
  funnel->shape.funnel.height = 0.6f;
  parity_add_body(&sc, &block, -2.2f, 0.85f, -0.225f);  /* sphere */
  parity_add_body(&sc, &block, -0.95f, 0.55f, -0.225f); /* box */
  parity_add_body(&sc, &block, 0.55f, 0.65f, -0.225f);  /* capsule */
  parity_add_body(&sc, &small, 1.95f, 0.7f, -0.15f);    /* through the funnel */
  parity_result r = parity_check(t, &sc, 0.3, true);
  /* What the colliders did, on both backends: the first three blocks were deflected sideways
   * (their centres moved by > 5 cm in x or z), the fourth fell straight through the funnel
   * (centre below its bottom opening, moved < 5 cm sideways), and no vertex is left inside a
   * solid collider by more than 5 mm. */
  for (int which = 0; which < 2 && r.ref != NULL && r.cand != NULL; ++which) {
    piola_world *w = which == 0 ? r.ref : r.cand;
    const piola_body_id *ids = which == 0 ? r.ref_ids : r.cand_ids;
    double deepest = 0.0;
    for (int32_t b = 0; b < sc.body_count; ++b) {
      const piola_tet_mesh *m = sc.bodies[b].mesh;
      float *p = malloc(sizeof *p * 3 * (size_t)m->vertex_count);
      REQUIRE(t, p != NULL);
      CHECK_STATUS(t, piola_body_get_positions(w, ids[b], p, m->vertex_count), PIOLA_OK);
      double start[3] = {0.0, 0.0, 0.0}, end[3] = {0.0, 0.0, 0.0};
      for (int32_t v = 0; v < m->vertex_count; ++v) {
        for (int k = 0; k < 3; ++k) {
          start[k] += (m->positions[3 * v + k] + sc.bodies[b].at[k]) / m->vertex_count;
          end[k] += (double)p[3 * v + k] / m->vertex_count;
        }
        piola_v3 x = piola_v3_make(p[3 * v], p[3 * v + 1], p[3 * v + 2]);
        for (int32_t c = 0; c < sc.collider_count; ++c) {
          piola_collider_data d;
          char reason[128];
          piola_v3 n;
          if (sc.colliders[c].type != PIOLA_COLLIDER_FUNNEL &&
              piola_collider_pack(&sc.colliders[c], &d, reason, sizeof reason) == PIOLA_OK) {
            deepest = fmax(deepest, piola_collider_contact(&d, x, x, &n));
          }
        }
      }
      free(p);
      double sideways = hypot(end[0] - start[0], end[2] - start[2]);
      if (b < 3) {
        CHECK_MSG(t, sideways > 0.05, "%s: block %d moved only %.4f m sideways",
                  which == 0 ? "reference" : "OpenCL", (int)b, sideways);
      } else {
        CHECK_MSG(t, sideways < 0.05 && end[1] < 0.5 - 0.15,
                  "%s: the funnel block ended at (%.3f %.3f %.3f)",
                  which == 0 ? "reference" : "OpenCL", end[0], end[1], end[2]);
      }
    }
    CHECK_MSG(t, deepest < 0.005, "%s: a vertex is %.4f m inside a collider",
              which == 0 ? "reference" : "OpenCL", deepest);
  }
  parity_release(&r);
  piola_mesh_free(&block);
  piola_mesh_free(&small);
}

/* Pinned vertices: a cantilever pinned at one end sags under gravity and swings; the pinned
 * vertices stay exactly in place. Measured: 2.2e-5 (baseline 3.9e-6). */
void test_opencl_parity_pinned(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh beam = wt_box(8, 2, 2, 1.6f, 0.4f, 0.4f);
  REQUIRE(t, beam.vertex_count > 0);
  parity_scene sc = parity_scene_make("pinned");
  parity_body *b = parity_add_body(&sc, &beam, -0.8f, 1.0f, -0.2f);
  b->pin_band = 0.01f;
  parity_result r = parity_check(t, &sc, 0.1, true);
  if (r.ref != NULL && r.cand != NULL) {
    /* The pinned end (x = -0.8 m) has not moved at all on either backend. */
    const int32_t n = beam.vertex_count;
    float *a = malloc(sizeof *a * 3 * (size_t)n), *c = malloc(sizeof *c * 3 * (size_t)n);
    float *wi = malloc(sizeof *wi * (size_t)n);
    if (a != NULL && c != NULL && wi != NULL) {
      CHECK_STATUS(t, piola_body_get_positions(r.ref, r.ref_ids[0], a, n), PIOLA_OK);
      CHECK_STATUS(t, piola_body_get_positions(r.cand, r.cand_ids[0], c, n), PIOLA_OK);
      CHECK_STATUS(t, piola_body_get_inverse_masses(r.cand, r.cand_ids[0], wi, n), PIOLA_OK);
      int32_t pinned = 0, moved = 0;
      for (int32_t v = 0; v < n; ++v) {
        if (wi[v] == 0.0f) {
          pinned++;
          moved += c[3 * v] != beam.positions[3 * v] - 0.8f ||
                   c[3 * v + 1] != beam.positions[3 * v + 1] + 1.0f ||
                   c[3 * v + 2] != beam.positions[3 * v + 2] - 0.2f || a[3 * v] != c[3 * v] ||
                   a[3 * v + 1] != c[3 * v + 1] || a[3 * v + 2] != c[3 * v + 2];
        }
      }
      CHECK_MSG(t, pinned == 9 && moved == 0, "%d pinned vertices (want 9), %d of them moved",
                (int)pinned, (int)moved);
    }
    CHECK(t, a != NULL && c != NULL && wi != NULL);
    free(a);
    free(c);
    free(wi);
  }
  parity_release(&r);
  piola_mesh_free(&beam);
}

/* Substeps (4) and damping (5 1/s): the creature as in the first case. Measured: 2.9e-5
 * (baseline 4.4e-6); 2 substeps with damping 2 1/s measured 8.4e-5 (baseline 5.2e-5). */
void test_opencl_parity_substeps_damping(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature = parity_creature();
  REQUIRE(t, creature.vertex_count > 0);
  parity_scene sc = parity_scene_make("substeps and damping");
  sc.substeps = 4;
  sc.damping = 5.0f;
  parity_add_ground(&sc, 0.5f);
  parity_body *b = parity_add_body(&sc, &creature, 0.0f, 0.3f, 0.0f);
  b->squash = 0.8f;
  parity_check(t, &sc, 0.1, false);
  piola_mesh_free(&creature);
}

/* ---- 2. Determinism ---------------------------------------------------------------------- */

/* FNV-1a of every body's positions and velocities (the float bytes). */
static uint64_t parity_hash(piola_world *w, const piola_body_id *ids, int32_t body_count) {
  uint64_t h = PIOLA_TEST_FNV_OFFSET;
  for (int32_t i = 0; i < body_count; ++i) {
    int32_t n = piola_body_get_vertex_count(w, ids[i]);
    float *buf = malloc(sizeof *buf * 3 * (size_t)(n > 0 ? n : 1));
    if (buf == NULL || n < 0) {
      free(buf);
      return 0;
    }
    if (piola_body_get_positions(w, ids[i], buf, n) == PIOLA_OK) {
      h = piola_test_fnv1a(h, buf, sizeof *buf * 3 * (size_t)n);
    }
    if (piola_body_get_velocities(w, ids[i], buf, n) == PIOLA_OK) {
      h = piola_test_fnv1a(h, buf, sizeof *buf * 3 * (size_t)n);
    }
    free(buf);
  }
  return h;
}

/* Two OpenCL runs of one scene (two creatures, plasticity on one, colliders) on one device
 * end in bitwise identical states. */
void test_opencl_deterministic(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature = parity_creature();
  REQUIRE(t, creature.vertex_count > 0);
  parity_scene sc = parity_scene_make("determinism");
  piola_material plastic = sc.material;
  plastic.plastic_creep = 5.0f;
  plastic.plastic_yield = 0.05f;
  parity_add_ground(&sc, 0.5f);
  piola_collider_def *sphere = parity_add_collider(&sc, PIOLA_COLLIDER_SPHERE);
  sphere->shape.sphere.center[1] = 0.2f;
  sphere->shape.sphere.radius = 0.5f;
  parity_body *a = parity_add_body(&sc, &creature, -1.0f, 0.6f, 0.0f);
  a->squash = 0.7f;
  parity_body *b = parity_add_body(&sc, &creature, 1.0f, 0.6f, 0.0f);
  b->squash = 0.7f;
  b->material = &plastic;
  const int32_t steps = 40;
  uint64_t hashes[2] = {0, 0};
  for (int run = 0; run < 2; ++run) {
    piola_world *w = NULL;
    piola_body_id ids[PARITY_MAX_BODIES];
    REQUIRE_OK(t, parity_build(&sc, PIOLA_BACKEND_OPENCL, 0.0, &w, ids));
    uint64_t start = parity_hash(w, ids, sc.body_count);
    piola_status s = PIOLA_OK;
    for (int32_t i = 0; i < steps && s == PIOLA_OK; ++i) {
      s = piola_world_step(w);
    }
    CHECK_STATUS(t, s, PIOLA_OK);
    hashes[run] = parity_hash(w, ids, sc.body_count);
    CHECK(t, hashes[run] != start); /* the scene moved */
    piola_world_destroy(w);
  }
  printf("  determinism: state hash after %d steps %016llx and %016llx\n", (int)steps,
         (unsigned long long)hashes[0], (unsigned long long)hashes[1]);
  CHECK_MSG(t, hashes[0] == hashes[1], "two OpenCL runs differ: %016llx vs %016llx",
            (unsigned long long)hashes[0], (unsigned long long)hashes[1]);
  piola_mesh_free(&creature);
}

/* ---- Funnel contact ----------------------------------------------------------------------- */

/* A block dropped into a funnel rests against its wall, alike on both backends. Before the
 * wall had its skin (test_funnel.c), a particle resting on the wall took its side from the
 * sign of a rounding error, and the two precisions parted at the first contact by 1e-3 to 1e-1
 * of the diagonal. */
void test_opencl_parity_funnel_contact(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh block = wt_box(3, 3, 3, 0.45f, 0.45f, 0.45f);
  REQUIRE(t, block.vertex_count > 0);
  parity_scene sc = parity_scene_make("funnel contact");
  parity_add_ground(&sc, 0.6f);
  piola_collider_def *funnel = parity_add_collider(&sc, PIOLA_COLLIDER_FUNNEL);
  funnel->shape.funnel.base[1] = 0.05f;
  funnel->shape.funnel.axis[1] = 1.0f;
  funnel->shape.funnel.base_radius = 0.15f;
  funnel->shape.funnel.top_radius = 0.6f;
  funnel->shape.funnel.height = 0.8f;
  parity_add_body(&sc, &block, -0.1f, 0.6f, -0.3f);
  parity_check(t, &sc, 0.1, false);
  piola_mesh_free(&block);
}

/* ---- Vertex block descent ------------------------------------------------------------------ */

/* The creature of test_opencl_parity_creature under vertex block descent (one work-item per
 * vertex of a color, its elements summed in the reference's order). Measured on PoCL: 3.3e-5. */
void test_opencl_parity_vbd(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature = parity_creature();
  REQUIRE(t, creature.vertex_count > 0);
  parity_scene sc = parity_scene_make("vbd creature");
  sc.scheme = PIOLA_SCHEME_VBD;
  parity_add_ground(&sc, 0.5f);
  parity_body *b = parity_add_body(&sc, &creature, 0.0f, 0.3f, 0.0f);
  b->squash = 0.8f;
  parity_result r = parity_check(t, &sc, 0.1, false);
  CHECK(t, r.ref_start.elastic_energy > 0.0 && r.ref_end.vertex_color_count > 0);
  piola_mesh_free(&creature);
}

/* The flattened and the mirrored bar of parity_inversion under vertex block descent: the
 * inversion path's blocks (the secant of the extended stress) in float and double. Measured on
 * PoCL: 1.7e-5. */
void test_opencl_parity_vbd_inversion(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh bar = wt_box(6, 3, 3, 1.2f, 0.6f, 0.6f);
  REQUIRE(t, bar.vertex_count > 0);
  parity_scene sc = parity_scene_make("vbd inversion");
  sc.scheme = PIOLA_SCHEME_VBD;
  parity_add_ground(&sc, 0.5f);
  parity_body *a = parity_add_body(&sc, &bar, -1.5f, 0.3f, -0.3f);
  a->squash = 0.0f;
  parity_body *b = parity_add_body(&sc, &bar, 0.3f, 0.5f, -0.3f);
  b->squash = -0.3f;
  a->no_self_collision = true;
  b->no_self_collision = true;
  parity_result r = parity_check(t, &sc, 0.1, false);
  CHECK_MSG(t, r.ref_end.inverted_tets == 0, "%d tets still inverted at the end",
            (int)r.ref_end.inverted_tets);
  piola_mesh_free(&bar);
}

/* Two squashed creatures (0.7 of their height) landing on the ground under vertex block
 * descent: the scene of the VBD determinism and schedule tests. */
static parity_scene vbd_two_creatures(const char *name, const piola_tet_mesh *creature) {
  parity_scene sc = parity_scene_make(name);
  sc.scheme = PIOLA_SCHEME_VBD;
  parity_add_ground(&sc, 0.5f);
  parity_body *a = parity_add_body(&sc, creature, -1.0f, 0.6f, 0.0f);
  a->squash = 0.7f;
  parity_body *b = parity_add_body(&sc, creature, 1.0f, 0.6f, 0.0f);
  b->squash = 0.7f;
  return sc;
}

/* The scene's state hash after 30 OpenCL steps (0 on failure), checked to have moved. */
static uint64_t vbd_hash_after_steps(piola_test *t, const parity_scene *sc) {
  piola_world *w = NULL;
  piola_body_id ids[PARITY_MAX_BODIES];
  piola_status s = parity_build(sc, PIOLA_BACKEND_OPENCL, 0.0, &w, ids);
  CHECK_STATUS(t, s, PIOLA_OK);
  if (s != PIOLA_OK) {
    piola_world_destroy(w);
    return 0;
  }
  const uint64_t start = parity_hash(w, ids, sc->body_count);
  for (int32_t i = 0; i < 30 && s == PIOLA_OK; ++i) {
    s = piola_world_step(w);
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  const uint64_t end = parity_hash(w, ids, sc->body_count);
  CHECK(t, end != start);
  piola_world_destroy(w);
  return end;
}

/* Two OpenCL runs of a vertex block descent scene end in bitwise identical states. */
void test_opencl_vbd_deterministic(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature = parity_creature();
  REQUIRE(t, creature.vertex_count > 0);
  const parity_scene sc = vbd_two_creatures("vbd determinism", &creature);
  const uint64_t hashes[2] = {vbd_hash_after_steps(t, &sc), vbd_hash_after_steps(t, &sc)};
  CHECK_MSG(t, hashes[0] != 0 && hashes[0] == hashes[1],
            "two OpenCL runs differ: %016llx vs %016llx", (unsigned long long)hashes[0],
            (unsigned long long)hashes[1]);
  piola_mesh_free(&creature);
}

/* Vertex block descent per body (piola_vbd_bodies: a work-group walks its body's colors with
 * barriers, the Chebyshev pass folded in) against one launch per color over all bodies: the same
 * steps in the same order per vertex, so bitwise the same states after 30 steps of two squashed
 * creatures landing on the ground, with and without the acceleration. */
void test_opencl_vbd_per_body(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  piola_tet_mesh creature = parity_creature();
  REQUIRE(t, creature.vertex_count > 0);
  parity_scene sc = vbd_two_creatures("vbd per body", &creature);
  for (int accelerated = 0; accelerated < 2; ++accelerated) {
    sc.vbd_rho = accelerated ? 0.85f : 0.0f;
    sc.schedule = PIOLA_SCHEDULE_STAGES;
    const uint64_t per_color = vbd_hash_after_steps(t, &sc);
    sc.schedule = PIOLA_SCHEDULE_BODIES;
    const uint64_t per_body = vbd_hash_after_steps(t, &sc);
    CHECK_MSG(t, per_color != 0 && per_color == per_body,
              "rho %g: per color %016llx, per body %016llx", (double)sc.vbd_rho,
              (unsigned long long)per_color, (unsigned long long)per_body);
  }
  piola_mesh_free(&creature);
}
