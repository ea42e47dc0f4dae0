/* Tests of render meshes (src/host/render_mesh.c, kernels/piola_render.h and .cl): detail
 * vertices embedded over a body's collision surface follow it as it deforms, on the CPU
 * reference and on OpenCL, and every call rejects bad input and changes nothing.
 *
 * The scene: a box of 4 x 3 x 4 cells (0.4 x 0.3 x 0.4 m), soft (E = 1e5 Pa), dropped squashed
 * from 0.2 m onto the ground, so that its surface bends and swings during 120 steps. The
 * expected values are computed here, independently of the library, from the body's positions:
 * area-weighted vertex normals of its surface and the embedding formula. */
#include "test_opencl_common.h"
#include "world_helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RT_STEPS 120

typedef struct rt_scene {
  piola_world *w;
  piola_body_id body;
  piola_tet_mesh box;
  int32_t *tri; /* surface triangles (3 body-local vertices each) */
  int32_t tri_count;
  int32_t *sv; /* surface vertices */
  int32_t sv_count;
  piola_test_log log;
  capture_log clog;
  int misuse;
} rt_scene;

static bool rt_open(piola_test *t, rt_scene *sc, piola_backend backend) {
  memset(sc, 0, sizeof *sc);
  piola_world_def def = backend == PIOLA_BACKEND_OPENCL
                            ? opencl_test_world_def(backend, &sc->clog, &sc->misuse)
                            : piola_test_world_def(&sc->log, &sc->misuse);
  def.damping = 1.0f;
  piola_status s = piola_world_create(&def, &sc->w);
  sc->box = wt_box(4, 3, 4, 0.4f, 0.3f, 0.4f);
  if (s == PIOLA_OK) {
    s = piola_world_add_plane(sc->w, (const float[3]){0.0f, 1.0f, 0.0f}, 0.0f, 0.5f, NULL);
  }
  piola_material mat = wt_material(PIOLA_MODEL_NEOHOOKEAN, PIOLA_SOLVER_XPBD, 1.0e5f);
  if (s == PIOLA_OK) {
    s = piola_world_add_tet_body(sc->w, &sc->box, &mat, (const float[3]){-0.2f, 0.2f, -0.2f},
                                 &sc->body);
  }
  if (s == PIOLA_OK) {
    s = piola_body_get_surface(sc->w, sc->body, NULL, 0, &sc->tri_count);
  }
  if (s == PIOLA_OK) {
    sc->tri = malloc(sizeof *sc->tri * 3 * (size_t)sc->tri_count);
    s = sc->tri != NULL ? piola_body_get_surface(sc->w, sc->body, sc->tri, sc->tri_count, NULL)
                        : PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK) {
    s = piola_body_get_surface_vertices(sc->w, sc->body, NULL, 0, &sc->sv_count);
  }
  if (s == PIOLA_OK) {
    sc->sv = malloc(sizeof *sc->sv * (size_t)sc->sv_count);
    s = sc->sv != NULL
            ? piola_body_get_surface_vertices(sc->w, sc->body, sc->sv, sc->sv_count, NULL)
            : PIOLA_ERROR_OUT_OF_MEMORY;
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  return s == PIOLA_OK;
}

static void rt_close(rt_scene *sc) {
  piola_world_destroy(sc->w);
  piola_mesh_free(&sc->box);
  free(sc->tri);
  free(sc->sv);
}

/* Squashes the body to 60% of its height (so it swings and bends while it recovers). */
static piola_status rt_squash(rt_scene *sc) {
  float *x = wt_get_positions(sc->w, sc->body);
  if (x == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  for (int32_t i = 0; i < sc->box.vertex_count; ++i) {
    x[3 * (size_t)i + 1] = 0.2f + 0.6f * (x[3 * (size_t)i + 1] - 0.2f);
  }
  piola_status s = piola_body_set_positions(sc->w, sc->body, x, sc->box.vertex_count);
  free(x);
  return s;
}

/* Area-weighted unit vertex normals (3 doubles per body vertex; zero off the surface). */
static void rt_vertex_normals(const rt_scene *sc, const float *x, double *n) {
  memset(n, 0, sizeof *n * 3 * (size_t)sc->box.vertex_count);
  for (int32_t t = 0; t < sc->tri_count; ++t) {
    const int32_t *q = sc->tri + 3 * (size_t)t;
    double e1[3], e2[3];
    for (int k = 0; k < 3; ++k) {
      e1[k] = (double)x[3 * (size_t)q[1] + k] - x[3 * (size_t)q[0] + k];
      e2[k] = (double)x[3 * (size_t)q[2] + k] - x[3 * (size_t)q[0] + k];
    }
    const double c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                         e1[0] * e2[1] - e1[1] * e2[0]};
    for (int corner = 0; corner < 3; ++corner) {
      for (int k = 0; k < 3; ++k) {
        n[3 * (size_t)q[corner] + k] += c[k];
      }
    }
  }
  for (int32_t i = 0; i < sc->box.vertex_count; ++i) {
    double *v = n + 3 * (size_t)i;
    const double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int k = 0; k < 3 && len > 0.0; ++k) {
      v[k] /= len;
    }
  }
}

/* The point at barycentric (1/3, 1/3, 1/3) of triangle t pushed `offset` m along the
 * interpolated normal there, and that unit normal. */
static void rt_offset_point(const rt_scene *sc, const float *x, const double *vn, int32_t t,
                            double offset, double p[3], double normal[3]) {
  const int32_t *q = sc->tri + 3 * (size_t)t;
  double base[3] = {0.0, 0.0, 0.0}, n[3] = {0.0, 0.0, 0.0};
  for (int corner = 0; corner < 3; ++corner) {
    for (int k = 0; k < 3; ++k) {
      base[k] += x[3 * (size_t)q[corner] + k] / 3.0;
      n[k] += vn[3 * (size_t)q[corner] + k] / 3.0;
    }
  }
  const double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  for (int k = 0; k < 3; ++k) {
    normal[k] = n[k] / len;
    p[k] = base[k] + offset * normal[k];
  }
}

typedef struct rt_result {
  double surface_error;          /* largest |detail - surface vertex| over the run, m */
  double offset_error;           /* largest |detail - expected offset point| over the run, m */
  double normal_error;           /* largest |normal - expected| */
  double offset_min, offset_max; /* (detail - base) . normal over the run */
  double motion;                 /* largest displacement of a surface vertex from its rest, m */
  float final_positions[3 * 64];
} rt_result;

/* Attaches two render meshes (the surface vertices; the centres of the first 64 triangles
 * pushed 1 cm outward), squashes the body, and compares them with the expected values at
 * every 10th of RT_STEPS steps. */
static rt_result rt_run(piola_test *t, piola_backend backend) {
  rt_result r;
  memset(&r, 0, sizeof r);
  r.offset_min = INFINITY;
  r.offset_max = -INFINITY;
  rt_scene sc;
  if (!rt_open(t, &sc, backend)) {
    rt_close(&sc);
    return r;
  }
  const int32_t nb = 64 < sc.tri_count ? 64 : sc.tri_count;
  float *rest = wt_get_positions(sc.w, sc.body);
  float *surface_rest = malloc(sizeof(float) * 3 * (size_t)sc.sv_count);
  float *outside = malloc(sizeof(float) * 3 * (size_t)nb);
  float *got = malloc(sizeof(float) * 3 * (size_t)(sc.sv_count > nb ? sc.sv_count : nb));
  float *got_n = malloc(sizeof(float) * 3 * (size_t)nb);
  double *vn = malloc(sizeof(double) * 3 * (size_t)sc.box.vertex_count);
  CHECK(t, rest != NULL && surface_rest != NULL && outside != NULL && got != NULL &&
               got_n != NULL && vn != NULL);
  piola_status s = rest != NULL && surface_rest != NULL && outside != NULL && got != NULL &&
                           got_n != NULL && vn != NULL
                       ? PIOLA_OK
                       : PIOLA_ERROR_OUT_OF_MEMORY;
  for (int32_t k = 0; k < sc.sv_count && s == PIOLA_OK; ++k) {
    memcpy(surface_rest + 3 * (size_t)k, rest + 3 * (size_t)sc.sv[k], 3 * sizeof(float));
  }
  if (s == PIOLA_OK) {
    rt_vertex_normals(&sc, rest, vn);
  }
  for (int32_t i = 0; i < nb && s == PIOLA_OK; ++i) {
    double p[3], n[3];
    rt_offset_point(&sc, rest, vn, i, 0.01, p, n);
    for (int k = 0; k < 3; ++k) {
      outside[3 * (size_t)i + k] = (float)p[k];
    }
  }
  piola_render_mesh_id on_surface = {0, 0}, off_surface = {0, 0};
  if (s == PIOLA_OK) {
    s = piola_body_attach_render_mesh(sc.w, sc.body, surface_rest, sc.sv_count, &on_surface);
  }
  if (s == PIOLA_OK) {
    s = piola_body_attach_render_mesh(sc.w, sc.body, outside, nb, &off_surface);
  }
  if (s == PIOLA_OK) {
    s = rt_squash(&sc);
  }
  float *x = NULL;
  for (int32_t step = 0; step <= RT_STEPS && s == PIOLA_OK; ++step) {
    if (step % 10 == 0) {
      free(x);
      x = wt_get_positions(sc.w, sc.body);
      s = x != NULL ? piola_render_mesh_get_positions(sc.w, on_surface, got, sc.sv_count)
                    : PIOLA_ERROR_OUT_OF_MEMORY;
      for (int32_t k = 0; k < sc.sv_count && s == PIOLA_OK; ++k) {
        double e = 0.0, m = 0.0;
        for (int c = 0; c < 3; ++c) {
          const double dx = (double)got[3 * (size_t)k + c] - x[3 * (size_t)sc.sv[k] + c];
          const double dm = (double)x[3 * (size_t)sc.sv[k] + c] - surface_rest[3 * (size_t)k + c];
          e += dx * dx;
          m += dm * dm;
        }
        r.surface_error = fmax(r.surface_error, sqrt(e));
        r.motion = fmax(r.motion, sqrt(m));
      }
      if (s == PIOLA_OK) {
        s = piola_render_mesh_get_positions(sc.w, off_surface, got, nb);
      }
      if (s == PIOLA_OK) {
        s = piola_render_mesh_get_normals(sc.w, off_surface, got_n, nb);
      }
      if (s == PIOLA_OK) {
        rt_vertex_normals(&sc, x, vn);
        for (int32_t i = 0; i < nb; ++i) {
          double p[3], n[3], base[3], e = 0.0, en = 0.0, along = 0.0;
          rt_offset_point(&sc, x, vn, i, 0.01, p, n);
          rt_offset_point(&sc, x, vn, i, 0.0, base, n);
          for (int c = 0; c < 3; ++c) {
            const double dx = (double)got[3 * (size_t)i + c] - p[c];
            const double dn = (double)got_n[3 * (size_t)i + c] - n[c];
            e += dx * dx;
            en += dn * dn;
            along += ((double)got[3 * (size_t)i + c] - base[c]) * n[c];
          }
          r.offset_error = fmax(r.offset_error, sqrt(e));
          r.normal_error = fmax(r.normal_error, sqrt(en));
          r.offset_min = fmin(r.offset_min, along);
          r.offset_max = fmax(r.offset_max, along);
        }
        memcpy(r.final_positions, got, sizeof(float) * 3 * (size_t)nb);
      }
    }
    if (step < RT_STEPS && s == PIOLA_OK) {
      s = piola_world_step(sc.w);
    }
  }
  CHECK_STATUS(t, s, PIOLA_OK);
  free(x);
  free(rest);
  free(surface_rest);
  free(outside);
  free(got);
  free(got_n);
  free(vn);
  rt_close(&sc);
  return r;
}

static void rt_check(piola_test *t, const char *name, const rt_result *r) {
  printf("  %s: surface vertices reproduced within %.3g m (they moved up to %.3f m); points "
         "1 cm outside within %.3g m of the expected, %.5f to %.5f m along the normal, normals "
         "within %.3g\n",
         name, r->surface_error, r->motion, r->offset_error, r->offset_min, r->offset_max,
         r->normal_error);
  CHECK_MSG(t, r->motion > 0.03, "the body hardly moved (%.4f m): the test shows nothing",
            r->motion);
  CHECK_MSG(t, r->surface_error <= 1e-5, "surface vertices off by %.3g m", r->surface_error);
  CHECK_MSG(t, r->offset_error <= 1e-5, "offset points off by %.3g m", r->offset_error);
  CHECK_MSG(t, r->normal_error <= 1e-5, "normals off by %.3g", r->normal_error);
  CHECK_MSG(t, fabs(r->offset_min - 0.01) <= 1e-5 && fabs(r->offset_max - 0.01) <= 1e-5,
            "offset along the normal %.6f to %.6f m, not 0.01 m", r->offset_min, r->offset_max);
}

void test_render_mesh_follows_surface(piola_test *t) {
  const rt_result r = rt_run(t, PIOLA_BACKEND_CPU_REFERENCE);
  rt_check(t, "cpu", &r);
}

/* The same on OpenCL, where the detail vertices are computed on the device; they also match
 * the CPU reference's within 1e-5 m at the end. */
void test_opencl_render_mesh_follows_surface(piola_test *t) {
  if (!opencl_test_ready(t)) {
    return;
  }
  const rt_result r = rt_run(t, PIOLA_BACKEND_OPENCL);
  rt_check(t, "opencl", &r);
  const rt_result ref = rt_run(t, PIOLA_BACKEND_CPU_REFERENCE);
  double worst = 0.0;
  for (int i = 0; i < 3 * 64; ++i) {
    worst = fmax(worst, fabs((double)r.final_positions[i] - ref.final_positions[i]));
  }
  printf("  opencl against the cpu reference after %d steps: %.3g m\n", RT_STEPS, worst);
  CHECK_MSG(t, worst <= 1e-4, "opencl and cpu detail vertices differ by %.3g m", worst);
}

/* Bad ids, pointers, counts and points are rejected with a status and change nothing; a
 * removed render mesh's id goes stale; a removed body's render mesh answers INVALID_BODY. */
static void rt_bad_input(piola_test *t, piola_backend backend) {
  rt_scene sc;
  if (!rt_open(t, &sc, backend)) {
    rt_close(&sc);
    return;
  }
  float *rest = wt_get_positions(sc.w, sc.body);
  REQUIRE(t, rest != NULL);
  const int32_t n = sc.box.vertex_count;
  const wt_snapshot before = wt_snapshot_take(sc.w, &sc.body, 1);
  piola_render_mesh_id id = {0, 0};
  const piola_body_id stale = {sc.body.index1, sc.body.generation + 1u};
  CHECK_STATUS(t, piola_body_attach_render_mesh(NULL, sc.body, rest, n, &id),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_body_attach_render_mesh(sc.w, stale, rest, n, &id),
               PIOLA_ERROR_INVALID_BODY);
  CHECK_STATUS(t, piola_body_attach_render_mesh(sc.w, sc.body, NULL, n, &id),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_body_attach_render_mesh(sc.w, sc.body, rest, 0, &id),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_body_attach_render_mesh(sc.w, sc.body, rest, n, NULL),
               PIOLA_ERROR_INVALID_ARGUMENT);
  const float keep = rest[4];
  rest[4] = NAN;
  CHECK_STATUS(t, piola_body_attach_render_mesh(sc.w, sc.body, rest, n, &id),
               PIOLA_ERROR_NON_FINITE);
  rest[4] = keep;
  CHECK(t, id.index1 == 0);
  const wt_snapshot after = wt_snapshot_take(sc.w, &sc.body, 1);
  CHECK_MSG(t, wt_snapshot_equal(&before, &after), "a failed attach changed the world");

  REQUIRE(t, piola_body_attach_render_mesh(sc.w, sc.body, rest, n, &id) == PIOLA_OK);
  float *out = malloc(sizeof(float) * 3 * (size_t)n);
  REQUIRE(t, out != NULL);
  const piola_render_mesh_id never = {7, 0}, null_id = {0, 0};
  CHECK_STATUS(t, piola_render_mesh_get_positions(NULL, id, out, n), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_render_mesh_get_positions(sc.w, never, out, n),
               PIOLA_ERROR_INVALID_RENDER_MESH);
  CHECK_STATUS(t, piola_render_mesh_get_normals(sc.w, null_id, out, n),
               PIOLA_ERROR_INVALID_RENDER_MESH);
  CHECK_STATUS(t, piola_render_mesh_get_positions(sc.w, id, NULL, n), PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_render_mesh_get_positions(sc.w, id, out, n - 1),
               PIOLA_ERROR_COUNT_MISMATCH);
  /* every vertex of the box (interior ones too) is reproduced at rest */
  CHECK_STATUS(t, piola_render_mesh_get_positions(sc.w, id, out, n), PIOLA_OK);
  double worst = 0.0;
  for (int32_t i = 0; i < 3 * n; ++i) {
    worst = fmax(worst, fabs((double)out[i] - rest[i]));
  }
  CHECK_MSG(t, worst <= 1e-5, "the box's own vertices reproduced within %.3g m", worst);
  CHECK_STATUS(t, piola_body_get_surface_vertices(sc.w, sc.body, NULL, 1, NULL),
               PIOLA_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(t, piola_body_get_surface_vertices(sc.w, stale, NULL, 0, NULL),
               PIOLA_ERROR_INVALID_BODY);

  CHECK_STATUS(t, piola_world_remove_render_mesh(sc.w, id), PIOLA_OK);
  CHECK_STATUS(t, piola_world_remove_render_mesh(sc.w, id), PIOLA_ERROR_INVALID_RENDER_MESH);
  CHECK_STATUS(t, piola_render_mesh_get_positions(sc.w, id, out, n),
               PIOLA_ERROR_INVALID_RENDER_MESH);
  piola_render_mesh_id again = {0, 0};
  REQUIRE(t, piola_body_attach_render_mesh(sc.w, sc.body, rest, n, &again) == PIOLA_OK);
  CHECK_MSG(t, again.index1 == id.index1 && again.generation != id.generation,
            "the freed slot is reused with a new generation");
  CHECK_STATUS(t, piola_world_remove_body(sc.w, sc.body), PIOLA_OK);
  CHECK_STATUS(t, piola_render_mesh_get_positions(sc.w, again, out, n), PIOLA_ERROR_INVALID_BODY);
  CHECK_STATUS(t, piola_world_remove_render_mesh(sc.w, again), PIOLA_OK);
  CHECK_MSG(t, sc.misuse > 0, "misuse reported");
  free(out);
  free(rest);
  rt_close(&sc);
}

void test_render_mesh_bad_input(piola_test *t) {
  rt_bad_input(t, PIOLA_BACKEND_CPU_REFERENCE);
}

void test_opencl_render_mesh_bad_input(piola_test *t) {
  if (opencl_test_ready(t)) {
    rt_bad_input(t, PIOLA_BACKEND_OPENCL);
  }
}
