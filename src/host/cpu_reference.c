/* Piola CPU reference: the stages of the XPBD step (Macklin, Mueller, Chentanez 2016) run on
 * the host in double precision, one thread, in exactly the color order the OpenCL kernels
 * use, through the same per-tet and per-particle functions (kernels/piola_tet.h,
 * kernels/piola_collide.h). It is the yardstick every device result is checked against.
 */
#include "world.h"

#include "cpu_reference.h"

#include <math.h>
#include <string.h>

static void store3(double *a, int32_t i, piola_v3 v) {
  a[3 * (size_t)i] = v.x;
  a[3 * (size_t)i + 1] = v.y;
  a[3 * (size_t)i + 2] = v.z;
}

/* Items per chunk of a stage split among the threads (piola_pool_for) at least: fewer make the
 * hand-over cost more than the work. */
#define VERTEX_GRAIN 2048
#define ITEM_GRAIN 128

/* A stage's loop over items, run by chunks (piola_range_fn): the world, the substep's
 * constants, and per chunk whether an item did work. */
typedef struct stage_job {
  piola_world *w;
  double h, inv_h2;
  int32_t first;    /* the first item of the range split */
  int collide_mode; /* COLLIDE: PIOLA_COLLIDE_* (piola_collide_mode) */
  bool worked[PIOLA_MAX_CPU_THREADS];
} stage_job;

/* v += h (g + f / m); p = x + h v for free vertices; pinned ones (w = 0) stay. Every vertex
 * leaves its support (piola_tet_support). */
static void predict_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const stage_job *job = ctx;
  piola_world *w = job->w;
  const double h = job->h;
  const double g[3] = {w->def.gravity[0], w->def.gravity[1], w->def.gravity[2]};
  for (int32_t i = begin; i < end; ++i) {
    w->solver.support[4 * (size_t)i + 3] = -1.0;
    w->collider_pushed[i] = 0;
    double *x = w->x + 3 * (size_t)i, *p = w->p + 3 * (size_t)i, *v = w->v + 3 * (size_t)i;
    if (w->w[i] > 0.0) {
      const double *f = w->f != NULL ? w->f + 3 * (size_t)i : NULL;
      for (int k = 0; k < 3; ++k) {
        v[k] += h * (g[k] + (f != NULL ? f[k] * w->w[i] : 0.0));
        p[k] = x[k] + h * v[k];
      }
    } else {
      memcpy(p, x, 3 * sizeof(double));
    }
    memcpy(w->y + 3 * (size_t)i, p, 3 * sizeof(double));
    memcpy(w->x_start + 3 * (size_t)i, x, 3 * sizeof(double));
  }
}

static void predict(piola_world *w, double h) {
  stage_job job = {.w = w, .h = h};
  piola_pool_for(w->pool, w->vertex_count, VERTEX_GRAIN, predict_range, &job);
}

/* The corrections dx[0..3] of tet t from the current predicted positions; returns flags. With
 * `supported`, corners resting on colliders are supported (piola_tet_support) and their held
 * motion is added to; else all four are free (the Jacobi tail). In the inverted-tet pass
 * (w->tets_inverted_only) a tet does its share piola_inverted_share() of its projection: none
 * unless it is inverted or nearly flat. */
static int project(piola_world *w, int32_t t, double inv_h2, bool supported, piola_v3 dx[4]) {
  const int32_t *q = w->solver.tet_vertices + 4 * (size_t)t;
  const double share =
      w->tets_inverted_only
          ? piola_inverted_share(piola_vertex_at(w->p, q[0]), piola_vertex_at(w->p, q[1]),
                                 piola_vertex_at(w->p, q[2]), piola_vertex_at(w->p, q[3]),
                                 w->solver.tet_volume[t])
          : 1.0;
  if (!(share > 0.0)) {
    return 0;
  }
  const piola_tet_material *mat = &w->materials[w->solver.tet_material[t]].constants;
  piola_tet_support support = piola_tet_support_none();
  double *rest[4] = {NULL, NULL, NULL, NULL};
  bool any = false;
  for (int k = 0; k < 4 && supported; ++k) {
    double *r = w->solver.support + 4 * (size_t)q[k];
    if (r[3] >= 0.0) {
      rest[k] = r;
      support.normal[k] = piola_v3_make(r[0], r[1], r[2]);
      any = true;
    }
  }
  double *lambda = &w->solver.tet_lambda[2 * (size_t)t];
  const double lambda_before[2] = {lambda[0], lambda[1]};
  /* The material damping's motion since the substep's start, x - x^n = p - x. */
  piola_v3 motion[4];
  const bool damped = mat->damping > 0.0;
  for (int k = 0; k < 4 && damped; ++k) {
    motion[k] = piola_v3_sub(piola_vertex_at(w->p, q[k]), piola_vertex_at(w->x, q[k]));
  }
  const int flags = piola_tet_solve(
      mat, piola_m3_at(w->solver.tet_m, t), w->solver.tet_volume[t], mat->compliance * inv_h2,
      mat->damping * sqrt(inv_h2), piola_vertex_at(w->p, q[0]), piola_vertex_at(w->p, q[1]),
      piola_vertex_at(w->p, q[2]), piola_vertex_at(w->p, q[3]), damped ? motion : NULL, w->w[q[0]],
      w->w[q[1]], w->w[q[2]], w->w[q[3]], any ? &support : NULL, lambda, dx);
  if (share < 1.0 && (flags & PIOLA_TET_WORKED)) {
    piola_inverted_scale(share, dx, support.held, lambda, lambda_before);
  }
  for (int k = 0; k < 4; ++k) {
    if (rest[k] != NULL && (flags & PIOLA_TET_WORKED)) {
      rest[k][3] += support.held[k];
    }
  }
  return flags;
}

static void add3(double *a, int32_t i, piola_v3 d) {
  a[3 * (size_t)i] += d.x;
  a[3 * (size_t)i + 1] += d.y;
  a[3 * (size_t)i + 2] += d.z;
}

/* Gauss-Seidel over tets [first, first + count) of one color; whether any did work. */
static bool solve_range(piola_world *w, int32_t first, int32_t count, double inv_h2) {
  piola_v3 x[4]; /* corrections */
  bool worked = false;
  for (int32_t t = first; t < first + count; ++t) {
    if (project(w, t, inv_h2, true, x) & PIOLA_TET_WORKED) {
      const int32_t *q = w->solver.tet_vertices + 4 * (size_t)t;
      for (int k = 0; k < 4; ++k) {
        add3(w->p, q[k], x[k]);
      }
      worked = true;
    }
  }
  return worked;
}

/* The Jacobi pass over tail tets [first, first + count) and their vertices' entries
 * [vfirst, vfirst + vcount) of the tail vertex list: every tet projected from the same
 * positions, each vertex moved by omega times the mean correction of the tets that did work
 * on it, gathered in list order (as the kernels do). */
static bool jacobi_range(piola_world *w, int32_t first, int32_t count, int32_t vfirst,
                         int32_t vcount, double inv_h2) {
  piola_v3 x[4];
  bool any = false;
  for (int32_t t = first; t < first + count; ++t) {
    const int worked = (project(w, t, inv_h2, false, x) & PIOLA_TET_WORKED) != 0;
    any = any || worked;
    for (int k = 0; k < 4; ++k) {
      double *d =
          w->solver.jacobi_delta + 16 * (size_t)(t - w->solver.jacobi_first) + 4 * (size_t)k;
      d[0] = x[k].x;
      d[1] = x[k].y;
      d[2] = x[k].z;
      d[3] = worked ? 1.0 : 0.0;
    }
  }
  const double omega = (double)w->def.jacobi_omega;
  for (int32_t i = vfirst; i < vfirst + vcount; ++i) {
    double sum[4] = {0.0, 0.0, 0.0, 0.0};
    for (int32_t j = w->solver.jacobi_start[i]; j < w->solver.jacobi_start[i + 1]; ++j) {
      const double *d = w->solver.jacobi_delta + 4 * (size_t)w->solver.jacobi_incidence[j];
      for (int k = 0; k < 4; ++k) {
        sum[k] += d[k];
      }
    }
    if (sum[3] > 0.0) {
      double *p = w->p + 3 * (size_t)w->solver.jacobi_vertices[i];
      for (int k = 0; k < 3; ++k) {
        p[k] += omega * sum[k] / sum[3];
      }
    }
  }
  return any;
}

static void solve_range_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  stage_job *job = ctx;
  job->worked[chunk] = solve_range(job->w, job->first + begin, end - begin, job->inv_h2);
}

/* solve_range() of a color, split among the pool's threads where it is large (its tets share
 * no vertex). */
static bool solve_color(piola_world *w, piola_pool *pool, int32_t first, int32_t count,
                        double inv_h2) {
  if (pool == NULL || count < 2 * ITEM_GRAIN) {
    return solve_range(w, first, count, inv_h2);
  }
  stage_job job = {.w = w, .inv_h2 = inv_h2, .first = first};
  piola_pool_for(pool, count, ITEM_GRAIN, solve_range_chunk, &job);
  bool worked = false;
  for (int32_t k = 0; k < piola_pool_threads(pool); ++k) {
    worked = worked || job.worked[k];
  }
  return worked;
}

/* Body b's sweeps of the iteration (one; the inverted-tet pass up to PIOLA_INVERTED_PASSES),
 * its colors split among the threads of `pool` (NULL: on the calling thread). */
static void solve_body(piola_world *w, piola_pool *pool, int32_t b, double inv_h2) {
  const int sweeps = w->tets_inverted_only ? PIOLA_INVERTED_PASSES : 1;
  bool worked = true;
  for (int sweep = 0; sweep < sweeps && worked; ++sweep) {
    worked = false;
    for (int32_t c = 0; c < w->solver.color_count; ++c) {
      const int32_t *range =
          w->solver.body_color + 2 * ((size_t)b * w->solver.color_count + (size_t)c);
      worked = solve_color(w, pool, range[0], range[1], inv_h2) || worked;
    }
    const int32_t *tail = w->solver.body_jacobi + 4 * (size_t)b;
    if (tail[1] > 0) {
      worked = jacobi_range(w, tail[0], tail[1], tail[2], tail[3], inv_h2) || worked;
    }
  }
}

static void solve_bodies_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const stage_job *job = ctx;
  for (int32_t b = begin; b < end; ++b) {
    solve_body(job->w, NULL, b, job->inv_h2);
  }
}

/* One iteration over the tets: per body, its colors in order (Gauss-Seidel; within a color the
 * order does not matter, no two tets share a vertex), then its Jacobi tail. Bodies share no
 * vertex, so going body by body gives exactly the result of going color by color over all
 * bodies (the kernels' per-stage schedule) while each body's data stays in cache. The
 * inverted-tet pass sweeps a body again while a sweep did work, PIOLA_INVERTED_PASSES times at
 * most: a sweep that did none changed nothing, so the sweeps the kernels' per-stage schedule
 * runs after it (it runs them all) change nothing either. With threads, bodies go to the
 * threads whole where there are at least two per thread; otherwise each body's large colors are
 * split among them. */
static void solve_tets(piola_world *w, double h) {
  const double inv_h2 = 1.0 / (h * h);
  const int32_t bodies = w->solver.body_count;
  if (w->pool != NULL && bodies >= 2 * piola_pool_threads(w->pool)) {
    stage_job job = {.w = w, .inv_h2 = inv_h2};
    piola_pool_for(w->pool, bodies, 1, solve_bodies_chunk, &job);
    return;
  }
  for (int32_t b = 0; b < bodies; ++b) {
    solve_body(w, w->pool, b, inv_h2);
  }
}

/* The cloth constraint kinds: each one's projection of item i from the current predicted
 * positions, corrections added in place (the kernels in piola_step.cl do the same in float). */
static void project_cloth_tri(piola_world *w, int32_t i, double inv_h2) {
  const piola_solver_cloth *c = &w->cloth;
  const int32_t *q = c->tri_vertices + 4 * (size_t)i;
  const piola_cloth_tri_material *mat = &w->cloth_materials[q[3]].tri;
  piola_m2 dm;
  memcpy(dm.m, c->tri_dm_inv + 4 * (size_t)i, sizeof dm.m);
  piola_v3 dx[3], motion[3];
  const bool damped = mat->damping > 0.0;
  for (int k = 0; k < 3 && damped; ++k) {
    motion[k] = piola_v3_sub(piola_vertex_at(w->p, q[k]), piola_vertex_at(w->x, q[k]));
  }
  if (piola_cloth_tri_correction(
          mat, dm, c->tri_area[i], mat->compliance * inv_h2, mat->damping * sqrt(inv_h2),
          piola_vertex_at(w->p, q[0]), piola_vertex_at(w->p, q[1]), piola_vertex_at(w->p, q[2]),
          damped ? motion : NULL, w->w[q[0]], w->w[q[1]], w->w[q[2]], &c->tri_lambda[i], dx) &
      PIOLA_CLOTH_WORKED) {
    for (int k = 0; k < 3; ++k) {
      add3(w->p, q[k], dx[k]);
    }
  }
}

static void project_cloth_bend(piola_world *w, int32_t i, double inv_h2) {
  const piola_solver_cloth *c = &w->cloth;
  const int32_t *q = c->bend_vertices + 4 * (size_t)i;
  const piola_cloth_bend_material *mat = &w->cloth_materials[c->bend_material[i]].bend;
  const double *r = c->bend_rest + 6 * (size_t)i;
  piola_cloth_bend_rest rest = {{r[0], r[1], r[2], r[3]}, r[4], r[5]};
  piola_v3 dx[4], motion[4];
  const bool damped = mat->damping > 0.0;
  for (int k = 0; k < 4 && damped; ++k) {
    motion[k] = piola_v3_sub(piola_vertex_at(w->p, q[k]), piola_vertex_at(w->x, q[k]));
  }
  if (piola_cloth_bend_correction(mat, &rest, mat->compliance * inv_h2, mat->damping * sqrt(inv_h2),
                                  piola_vertex_at(w->p, q[0]), piola_vertex_at(w->p, q[1]),
                                  piola_vertex_at(w->p, q[2]), piola_vertex_at(w->p, q[3]),
                                  damped ? motion : NULL, w->w[q[0]], w->w[q[1]], w->w[q[2]],
                                  w->w[q[3]], &c->bend_lambda[i], dx) &
      PIOLA_CLOTH_WORKED) {
    for (int k = 0; k < 4; ++k) {
      add3(w->p, q[k], dx[k]);
    }
  }
}

static void cloth_tri_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const stage_job *job = ctx;
  for (int32_t i = job->first + begin; i < job->first + end; ++i) {
    project_cloth_tri(job->w, i, job->inv_h2);
  }
}

static void cloth_bend_chunk(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const stage_job *job = ctx;
  for (int32_t i = job->first + begin; i < job->first + end; ++i) {
    project_cloth_bend(job->w, i, job->inv_h2);
  }
}

/* One iteration over the cloth: color after color, and inside a color kind after kind (no two
 * items of a color share a vertex, whatever their kinds, so the order inside a color does not
 * change the result). The same order as the per-stage kernels. The time of each kind goes to
 * its own stage entry (PIOLA_STAGE_SOLVE_CLOTH, PIOLA_STAGE_SOLVE_BENDING). A color's items of
 * one kind are split among the threads. */
static void solve_cloth(piola_world *w, double h) {
  const double inv_h2 = 1.0 / (h * h);
  const piola_solver_cloth *c = &w->cloth;
  for (int32_t color = 0; color < c->color_count; ++color) {
    const int32_t tn = c->kind_size[PIOLA_KIND_TRIANGLE][color];
    if (tn > 0) {
      const double start = piola_now_ms();
      stage_job job = {
          .w = w, .inv_h2 = inv_h2, .first = c->kind_first[PIOLA_KIND_TRIANGLE][color]};
      piola_pool_for(w->pool, tn, ITEM_GRAIN, cloth_tri_chunk, &job);
      w->stage_ms[PIOLA_STAGE_SOLVE_CLOTH] += piola_now_ms() - start;
    }
    const int32_t bn = c->kind_size[PIOLA_KIND_BEND][color];
    if (bn > 0) {
      const double start = piola_now_ms();
      stage_job job = {.w = w, .inv_h2 = inv_h2, .first = c->kind_first[PIOLA_KIND_BEND][color]};
      piola_pool_for(w->pool, bn, ITEM_GRAIN, cloth_bend_chunk, &job);
      w->stage_ms[PIOLA_STAGE_SOLVE_BENDING] += piola_now_ms() - start;
    }
  }
}

/* Every free vertex projected out of every collider, in order, each at its pose at the end of
 * the substep (w->collider_time into the step), from where it would be without its support;
 * a vertex that a collider pushed is supported by the last such collider (its index in
 * w->support_collider) until the next COLLIDE, the others are free (piola_tet_support). Under
 * the multigrid scheme a collider pushes without friction: its friction acts in the Newton step
 * (newton.c). */
static void collide_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const stage_job *job = ctx;
  piola_world *w = job->w;
  const double h = job->h;
  for (int32_t i = begin; i < end; ++i) {
    if (!(w->w[i] > 0.0)) {
      continue;
    }
    double *support = w->solver.support + 4 * (size_t)i;
    piola_v3 x = piola_vertex_at(w->x, i), p = piola_vertex_at(w->p, i);
    piola_v3 n = piola_v3_make(support[0], support[1], support[2]);
    p = piola_unsupported_position(p, n, support[3]);
    int pushed = 0;
    for (int32_t c = 0; c < w->collider_count; ++c) {
      piola_v3 d;
      const piola_collider_data *k = &w->colliders[c];
      d = piola_v3_make(0.0, 0.0, 0.0);
      const int hit =
          piola_collider_may_touch(k, p, w->collider_time) &&
          piola_collider_correction_shapes(k, w->shapes, x, p, w->collider_time, h, &d, &n);
      pushed |= hit;
      if (hit) {
        d = piola_collide_correction_in_mode(n, d, job->collide_mode);
        w->support_collider[i] = c;
      }
      p = piola_v3_add(p, d);
      if (hit && k->kind >= PIOLA_COLLIDER_KIND_MESH &&
          !(job->collide_mode & PIOLA_COLLIDE_NORMAL_ONLY)) {
        n = piola_v3_make(0.0, 0.0, 0.0); /* no support normal (piola_mesh_supports) */
      }
      if (hit && (job->collide_mode & PIOLA_COLLIDE_RECORD)) {
        /* the impulse record (piola_record_impulse) */
        const double m = 1.0 / w->w[i];
        const piola_v3 arm =
            piola_v3_sub(p, piola_collider_origin_at(&w->colliders[c], w->collider_time));
        const piola_v3 moment = piola_v3_cross(arm, d);
        double *r = w->collider_impulse + 6 * ((size_t)c * (size_t)w->vertex_count + (size_t)i);
        r[0] += m * d.x;
        r[1] += m * d.y;
        r[2] += m * d.z;
        r[3] += m * moment.x;
        r[4] += m * moment.y;
        r[5] += m * moment.z;
      }
    }
    store3(w->p, i, p);
    store3(support, 0, n);
    support[3] = pushed ? 0.0 : -1.0;
    w->collider_pushed[i] |= (uint8_t)pushed;
  }
}

static void collide(piola_world *w, double h) {
  stage_job job = {.w = w, .h = h, .collide_mode = piola_collide_mode(w)};
  piola_pool_for(w->pool, w->vertex_count, VERTEX_GRAIN / 8, collide_range, &job);
}

/* v = (p - x) / h, damped; x = p. */
static void update_velocities(piola_world *w, double h) {
  const double damp = piola_damping_factor(&w->def, h);
  for (size_t i = 0; i < 3 * (size_t)w->vertex_count; ++i) {
    w->v[i] = (w->p[i] - w->x[i]) / h * damp;
    w->x[i] = w->p[i];
  }
}

static void plasticity(piola_world *w, double h) {
  for (int32_t k = 0; k < w->solver.plastic_count; ++k) {
    const int32_t t = w->solver.plastic_tet[k];
    const int32_t *q = w->solver.tet_vertices + 4 * (size_t)t;
    const piola_material *m = &w->materials[w->solver.tet_material[t]].def;
    piola_m3 dm_rest = piola_m3_at(w->solver.plastic_dm_rest, k);
    piola_m3 f =
        piola_tet_deformation(piola_vertex_at(w->x, q[0]), piola_vertex_at(w->x, q[1]),
                              piola_vertex_at(w->x, q[2]), piola_vertex_at(w->x, q[3]), dm_rest);
    double *e = w->solver.plastic_strain + 6 * (size_t)k;
    piola_sym3 eps = {e[0], e[1], e[2], e[3], e[4], e[5]};
    piola_m3 m_eff;
    if (piola_plastic_update(f, &eps, m->plastic_yield, fmin(1.0, h * m->plastic_creep),
                             m->plastic_max, dm_rest, &m_eff)) {
      e[0] = eps.xx;
      e[1] = eps.yy;
      e[2] = eps.zz;
      e[3] = eps.xy;
      e[4] = eps.xz;
      e[5] = eps.yz;
      memcpy(w->solver.tet_m + 9 * (size_t)t, m_eff.m, sizeof m_eff.m);
    }
  }
}

void piola_cpu_stage(piola_world *w, piola_stage stage, double h) {
  switch (stage) {
  case PIOLA_STAGE_PREDICT:
    predict(w, h);
    break;
  case PIOLA_STAGE_RESET_MULTIPLIERS:
    if (w->solver.tet_count > 0) { /* a world that never had a body has no solver arrays */
      memset(w->solver.tet_lambda, 0, sizeof(double) * 2 * (size_t)w->solver.tet_count);
    }
    if (w->cloth.tri_count > 0) {
      memset(w->cloth.tri_lambda, 0, sizeof(double) * (size_t)w->cloth.tri_count);
    }
    if (w->cloth.bend_count > 0) {
      memset(w->cloth.bend_lambda, 0, sizeof(double) * (size_t)w->cloth.bend_count);
    }
    break;
  case PIOLA_STAGE_SOLVE_TETS:
    /* The constraint kinds: tets (their own colors, body by body), then the cloth's colors
     * (triangles and stencils). Tet bodies and cloth bodies share no vertex. */
    solve_tets(w, h);
    if (!w->tets_inverted_only) {
      solve_cloth(w, h);
    }
    break;
  case PIOLA_STAGE_COLLIDE:
    collide(w, h);
    break;
  case PIOLA_STAGE_UPDATE_VELOCITIES:
    update_velocities(w, h);
    break;
  case PIOLA_STAGE_PLASTICITY:
    plasticity(w, h);
    break;
  case PIOLA_STAGE_BROAD_PHASE:
    piola_cpu_broad_phase(w);
    break;
  case PIOLA_STAGE_NARROW_PHASE:
    piola_cpu_narrow_phase(w);
    break;
  case PIOLA_STAGE_CONTACT:
    piola_cpu_contact(w);
    break;
  case PIOLA_STAGE_ATTACHMENTS:
    piola_cpu_attachments(w, h);
    break;
  case PIOLA_STAGE_SOLVE_VERTICES:
    piola_cpu_solve_vertices(w, h);
    break;
  case PIOLA_STAGE_SOLVE_GLOBAL:
    piola_cpu_solve_global(w, h);
    break;
  case PIOLA_STAGE_SOLVE_CLOTH: /* timing entries of SOLVE_TETS, not passes of their own */
  case PIOLA_STAGE_SOLVE_BENDING:
  case PIOLA_STAGE_COUNT:
    break;
  }
}

/* Energy (J) of one tet and whether it is inverted. */
static double tet_energy(const piola_material_entry *e, const piola_m3 m, double volume,
                         const double *positions, const int32_t *q, int32_t offset,
                         int32_t *inverted) {
  piola_v3 x0 = piola_vertex_at(positions, q[0] + offset),
           x1 = piola_vertex_at(positions, q[1] + offset),
           x2 = piola_vertex_at(positions, q[2] + offset),
           x3 = piola_vertex_at(positions, q[3] + offset);
  if (piola_tet_inverted(x0, x1, x2, x3)) {
    (*inverted)++;
  }
  return (double)e->def.youngs_modulus * piola_tet_energy(&e->constants, m, volume, x0, x1, x2, x3);
}

double piola_tets_energy(const piola_world *w, const double *positions, const double *tet_m,
                         int32_t *inverted) {
  double sum = 0.0;
  *inverted = 0;
  for (int32_t t = 0; t < w->solver.tet_count; ++t) {
    sum += tet_energy(&w->materials[w->solver.tet_material[t]], piola_m3_at(tet_m, t),
                      w->solver.tet_volume[t], positions, w->solver.tet_vertices + 4 * (size_t)t, 0,
                      inverted);
  }
  return sum;
}

double piola_bodies_energy(const piola_world *w, const double *positions, int32_t *inverted) {
  double sum = 0.0;
  *inverted = 0;
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (!piola_id_pool_alive(&w->body_ids, i) || b->cloth) {
      continue;
    }
    const piola_material_entry *e = &w->materials[b->material];
    const double *m = b->m_eff != NULL ? b->m_eff : b->dm_inv;
    for (int32_t t = 0; t < b->tet_count; ++t) {
      sum += tet_energy(e, piola_m3_at(m, t), b->volume[t], positions, b->tets + 4 * (size_t)t,
                        b->vertex_offset, inverted);
    }
  }
  return sum;
}

double piola_cloth_energy(const piola_world *w, const double *positions) {
  double sum = 0.0;
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (!piola_id_pool_alive(&w->body_ids, i) || !b->cloth) {
      continue;
    }
    const piola_cloth_material_entry *e = &w->cloth_materials[b->cloth_material];
    const int32_t o = b->vertex_offset;
    double tri = 0.0, bend = 0.0;
    for (int32_t t = 0; t < b->tri_count; ++t) {
      const int32_t *q = b->tris + 3 * (size_t)t;
      piola_m2 dm;
      memcpy(dm.m, b->tri_dm_inv + 4 * (size_t)t, sizeof dm.m);
      tri += piola_cloth_tri_energy(
          &e->tri, dm, b->tri_area[t], piola_vertex_at(positions, q[0] + o),
          piola_vertex_at(positions, q[1] + o), piola_vertex_at(positions, q[2] + o));
    }
    for (int32_t k = 0; k < b->bend_count; ++k) {
      const int32_t *q = b->bends + 4 * (size_t)k;
      const double *r = b->bend_rest + 6 * (size_t)k;
      piola_cloth_bend_rest rest = {{r[0], r[1], r[2], r[3]}, r[4], r[5]};
      bend += piola_cloth_bend_energy(
          &rest, piola_vertex_at(positions, q[0] + o), piola_vertex_at(positions, q[1] + o),
          piola_vertex_at(positions, q[2] + o), piola_vertex_at(positions, q[3] + o));
    }
    sum += tri / e->tri.compliance + (b->bend_count > 0 ? bend / e->bend.compliance : 0.0);
  }
  return sum;
}
