/* `piola crosscheck --resync`: the cross-check one step at a time. Before every step the
 * candidate (OpenCL) world loads the reference's state (piola_world_save_state,
 * piola_world_load_state: positions, velocities, the contacts that persist, the colliders'
 * poses), then both take one step from it and are compared. A trajectory of a scene with contact
 * parts from the reference's after a few steps however right each step is (contact makes it
 * chaotic: the reference itself, started one rounding away, parts as fast), so this judges the
 * steps one by one: each step's deviation is what the device computes differently from one
 * state, at every step of any scene.
 *
 * Float and double may decide a contact differently where a vertex lies at the edge of a
 * triangle's reach or at the contact thickness: one world projects the pair in that step and the
 * other does not, and the vertex ends up to a thickness apart. Such steps are told apart by
 * comparing the contact lists the two worlds keep after the step (the saved states' contact
 * sections, per surface vertex): where they differ, the report names the first surface vertex
 * and triangle (the solver's numbering, the same in both worlds, which
 * piola_world_get_collision_surface maps to world vertices) and their gap after the step, and the
 * step is judged against
 * the contact tolerance, the contact thickness over the scene's bounding-box diagonal (a
 * contact's push is at most its depth, which is at most about a thickness).
 *
 * Other decisions that float and double take apart from one state leave no trace in the lists: a
 * tet that one world finds inverted and the other not (the inverted-tet pass projects it in one
 * world only), a contact or collider whose friction sticks in one and slides in the other. A step
 * beyond --tolerance is therefore measured once more: the reference takes the same step again
 * from the state rounded to floats (what the device started from) and from that state nudged by
 * a few float roundings (REFERENCE_NUDGES starts), each compared with the reference's own step.
 * The largest of these is the step's sensitivity: how far a computation in double moves from a
 * start that no float computation can tell apart (Lorenz's test of sensitive dependence, one
 * step long). Where the device stays within SENSITIVITY_FACTOR times it, the step is decided by
 * rounding, not computed wrongly, and passes as such, reported with its sensitivity; a device
 * that computes a step wrongly moves far beyond what rounding does. Every other step is judged
 * against --tolerance. */
#include "crosscheck.h"
#include "piola_contact.h" /* the library's point-triangle distance */
#include "scene.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Little-endian fields of a saved state (include/piola/piola.h documents the format). */
static int32_t read_i32(const unsigned char *p) {
  uint32_t v = 0;
  for (int k = 3; k >= 0; --k) {
    v = (v << 8) | p[k];
  }
  int32_t out;
  memcpy(&out, &v, sizeof out);
  return out;
}

/* Where the contact section of a saved state starts, its surface vertices and the entries each
 * one has room for. */
typedef struct contact_section {
  size_t offset;
  int32_t vertices;
  int32_t per_vertex;
} contact_section;

static contact_section contact_section_of(const unsigned char *state) {
  const int32_t header = read_i32(state + 12), vertices = read_i32(state + 28),
                plastic = read_i32(state + 36);
  contact_section c = {(size_t)header + 80 * (size_t)vertices + 120 * (size_t)plastic,
                       read_i32(state + 40), read_i32(state + 56)};
  return c;
}

/* Whether surface vertex i lists the same contacts in both states (as sets: the lists are
 * ordered by distance, which float and double may order differently); *entry is an entry that
 * one lists and the other does not. */
static bool same_contacts(const unsigned char *a, const unsigned char *b, contact_section c,
                          int32_t i, int32_t *entry) {
  const size_t record = 4 * (1 + (size_t)c.per_vertex);
  const unsigned char *ra = a + c.offset + record * (size_t)i,
                      *rb = b + c.offset + record * (size_t)i;
  const int32_t na = read_i32(ra), nb = read_i32(rb);
  for (int pass = 0; pass < 2; ++pass) {
    const unsigned char *x = pass == 0 ? ra : rb, *y = pass == 0 ? rb : ra;
    const int32_t nx = pass == 0 ? na : nb, ny = pass == 0 ? nb : na;
    for (int32_t k = 0; k < nx; ++k) {
      const int32_t e = read_i32(x + 4 * (1 + (size_t)k));
      bool found = false;
      for (int32_t m = 0; m < ny && !found; ++m) {
        found = read_i32(y + 4 * (1 + (size_t)m)) == e;
      }
      if (!found) {
        *entry = e;
        return false;
      }
    }
  }
  return true;
}

/* The starts of the reference besides its own that measure a step's sensitivity: the state
 * rounded to floats, then nudged by 1, 4 and 16 float roundings per coordinate (16 roundings of a
 * coordinate near 1 m are 2e-6 m, about what the device's own float step deviates by on a step
 * that decides nothing apart: no nudge moves the start farther than the device's rounding
 * does). */
#define REFERENCE_NUDGES 4
/* A step within this multiple of its sensitivity passes (see the module comment): the device
 * rounds at every operation of the step, not once at its start. */
#define SENSITIVITY_FACTOR 2.0

static uint64_t read_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) {
    v = (v << 8) | p[k];
  }
  return v;
}

static void write_u64(unsigned char *p, uint64_t v) {
  for (int k = 0; k < 8; ++k) {
    p[k] = (unsigned char)(v >> (8 * k));
  }
}

static double read_f64(const unsigned char *p) {
  const uint64_t v = read_u64(p);
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}

static void write_f64(unsigned char *p, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  write_u64(p, v);
}

/* A hash of (start, value index) that picks each nudge's direction. */
static uint32_t nudge_hash(uint32_t start, uint32_t index) {
  uint32_t h = start * 0x9E3779B9u ^ (index + 0x7F4A7C15u) * 0x85EBCA6Bu;
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  return h;
}

/* Start `start` (0 .. REFERENCE_NUDGES - 1) of the sensitivity measure from the saved state
 * `from` into `to`: every vertex's position and velocity rounded to floats, then for start k > 0
 * its position moved by 4^(k-1) float roundings up or down per coordinate (by nudge_hash). */
static void nudged_state(const unsigned char *from, unsigned char *to, size_t bytes, int start) {
  memcpy(to, from, bytes);
  const int32_t header = read_i32(from + 12), vertices = read_i32(from + 28);
  const int steps = start == 0 ? 0 : 1 << (2 * (start - 1));
  for (int32_t v = 0; v < vertices; ++v) {
    unsigned char *record = to + (size_t)header + 80 * (size_t)v;
    for (int k = 0; k < 6; ++k) {
      float f = (float)read_f64(record + 8 * k);
      const bool up = (nudge_hash((uint32_t)start, (uint32_t)(6 * v + k)) & 1u) != 0u;
      for (int n = 0; n < steps && k < 3; ++n) {
        f = nextafterf(f, up ? INFINITY : -INFINITY);
      }
      write_f64(record + 8 * k, (double)f);
    }
  }
}

/* The largest vertex distance between the positions of two saved states of one scene, over
 * `diagonal`. */
static double state_distance(const unsigned char *a, const unsigned char *b, double diagonal) {
  const int32_t header = read_i32(a + 12), vertices = read_i32(a + 28);
  double worst = 0.0;
  for (int32_t v = 0; v < vertices; ++v) {
    const size_t at = (size_t)header + 80 * (size_t)v;
    double d2 = 0.0;
    for (int k = 0; k < 3; ++k) {
      const double d = read_f64(a + at + 8 * k) - read_f64(b + at + 8 * k);
      d2 += d * d;
    }
    worst = fmax(worst, isfinite(d2) ? d2 : INFINITY);
  }
  return sqrt(worst) / diagonal;
}

/* The step's sensitivity (see the module comment): the reference world, whose state after the
 * step is `after` and before it `before`, takes the step again from each nudged start; the
 * largest distance from its own step. The world is left in `after`. */
static piola_status reference_sensitivity(piola_world *ref, const unsigned char *before,
                                          const unsigned char *after, unsigned char *scratch,
                                          unsigned char *result, size_t bytes, double diagonal,
                                          double *out) {
  piola_status s = PIOLA_OK;
  *out = 0.0;
  for (int k = 0; k < REFERENCE_NUDGES && s == PIOLA_OK; ++k) {
    nudged_state(before, scratch, bytes, k);
    s = piola_world_load_state(ref, scratch, bytes);
    if (s == PIOLA_OK) {
      s = piola_world_step(ref);
    }
    if (s == PIOLA_OK) {
      s = piola_world_save_state(ref, result, bytes);
    }
    if (s == PIOLA_OK) {
      *out = fmax(*out, state_distance(after, result, diagonal));
    }
  }
  const piola_status back = piola_world_load_state(ref, after, bytes);
  return s != PIOLA_OK ? s : back;
}

/* The collision surface in the state's numbering (piola_world_get_collision_surface). */
typedef struct surface_map {
  int32_t vertex_count, triangle_count;
  int32_t *world_vertex, *triangles;
} surface_map;

static piola_status surface_map_of(piola_world *w, surface_map *m) {
  memset(m, 0, sizeof *m);
  piola_status s =
      piola_world_get_collision_surface(w, &m->vertex_count, &m->triangle_count, NULL, NULL);
  if (s != PIOLA_OK) {
    return s;
  }
  m->world_vertex = malloc(sizeof *m->world_vertex * (size_t)(m->vertex_count + 1));
  m->triangles = malloc(sizeof *m->triangles * 3 * (size_t)(m->triangle_count + 1));
  if (m->world_vertex == NULL || m->triangles == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  return piola_world_get_collision_surface(w, &m->vertex_count, &m->triangle_count, m->world_vertex,
                                           m->triangles);
}

/* World vertex v's position in a saved state. */
static piola_v3 state_position(const unsigned char *state, int32_t v) {
  const unsigned char *r = state + (size_t)read_i32(state + 12) + 80 * (size_t)v;
  return piola_v3_make(read_f64(r), read_f64(r + 8), read_f64(r + 16));
}

/* The gap (m) between surface vertex sv and surface triangle t at a saved state's positions. */
static double pair_gap(const surface_map *m, const unsigned char *state, int32_t sv, int32_t t) {
  if (sv < 0 || sv >= m->vertex_count || t < 0 || t >= m->triangle_count) {
    return NAN;
  }
  const int32_t *q = m->triangles + 3 * (size_t)t;
  return piola_point_triangle_distance(
      state_position(state, m->world_vertex[sv]), state_position(state, m->world_vertex[q[0]]),
      state_position(state, m->world_vertex[q[1]]), state_position(state, m->world_vertex[q[2]]));
}

/* The bounding-box diagonal of the reference's bodies (m). */
static piola_status scene_diagonal(const scene *sc, double *out) {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  float *x =
      malloc(sizeof *x * 3 * (size_t)(sc->body_vertex_count > 0 ? sc->body_vertex_count : 1));
  if (x == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  piola_status s = PIOLA_OK;
  for (int32_t b = 0; b < sc->body_count && s == PIOLA_OK; ++b) {
    const int32_t n = piola_body_get_vertex_count(sc->world, sc->bodies[b]);
    s = n == sc->body_vertex_count ? piola_body_get_positions(sc->world, sc->bodies[b], x, n)
                                   : PIOLA_ERROR_COUNT_MISMATCH;
    for (int32_t i = 0; i < n && s == PIOLA_OK; ++i) {
      for (int k = 0; k < 3; ++k) {
        lo[k] = fmin(lo[k], x[3 * i + k]);
        hi[k] = fmax(hi[k], x[3 * i + k]);
      }
    }
  }
  free(x);
  const double d = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                        (hi[2] - lo[2]) * (hi[2] - lo[2]));
  *out = d > 0.0 && isfinite(d) ? d : 1.0;
  return s;
}

/* One step of the resynchronised cross-check. */
typedef struct resync_sample {
  crosscheck_sample deviation;
  int32_t decided_apart; /* surface vertices whose contacts differ after the step */
  int32_t vertex, entry; /* the first of them and an entry one world lists and the other not */
  double gap;            /* m: that pair's distance at the reference's positions after the step */
  double sensitivity;    /* measured where the step is beyond --tolerance, else 0 */
  double allowed;        /* the tolerance the step is judged against */
  bool passed;
} resync_sample;

int crosscheck_resync(scene *ref, scene *dev, float thickness, int32_t steps, int32_t every,
                      float tolerance, const char *json) {
  size_t bytes = 0, dev_bytes = 0;
  piola_status s = piola_world_get_state_size(ref->world, &bytes);
  if (s == PIOLA_OK) {
    s = piola_world_get_state_size(dev->world, &dev_bytes);
  }
  if (s == PIOLA_OK && bytes != dev_bytes) {
    s = PIOLA_ERROR_COUNT_MISMATCH;
  }
  unsigned char *state = s == PIOLA_OK ? malloc(bytes) : NULL;
  unsigned char *other = s == PIOLA_OK ? malloc(bytes) : NULL;
  unsigned char *before = s == PIOLA_OK ? malloc(bytes) : NULL;
  unsigned char *scratch = s == PIOLA_OK ? malloc(bytes) : NULL;
  unsigned char *result = s == PIOLA_OK ? malloc(bytes) : NULL;
  resync_sample *samples = calloc((size_t)steps, sizeof *samples);
  if (s == PIOLA_OK && (state == NULL || other == NULL || before == NULL || scratch == NULL ||
                        result == NULL || samples == NULL)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  surface_map surface = {0, 0, NULL, NULL};
  if (s == PIOLA_OK) {
    s = surface_map_of(ref->world, &surface);
  }
  const crosscheck_pair pair = {ref->world, dev->world, ref->bodies, dev->bodies, ref->body_count};
  double worst = 0.0, worst_apart = 0.0, worst_sensitive = 0.0;
  int32_t failed = 0, apart_steps = 0, sensitive_steps = 0;
  printf("resync: before every step the candidate loads the reference's state; each step's\n"
         "deviation from one state is judged (--tolerance %.1e; where float and double decide a\n"
         "contact differently, the contact thickness %.3g m over the scene's diagonal)\n",
         (double)tolerance, (double)thickness);
  printf("%6s %14s %14s %10s %12s %s\n", "step", "max rel dev", "rms rel dev", "apart", "allowed",
         "");
  for (int32_t i = 0; i < steps && s == PIOLA_OK; ++i) {
    resync_sample *r = &samples[i];
    s = scene_before_step(ref);
    if (s == PIOLA_OK) {
      s = scene_before_step(dev);
    }
    if (s == PIOLA_OK) {
      s = piola_world_save_state(ref->world, state, bytes);
    }
    if (s == PIOLA_OK) {
      s = piola_world_load_state(dev->world, state, bytes);
      memcpy(before, state, bytes);
    }
    if (s == PIOLA_OK) {
      s = piola_world_step(ref->world);
    }
    if (s == PIOLA_OK) {
      s = piola_world_step(dev->world);
    }
    double diagonal = 1.0;
    if (s == PIOLA_OK) {
      r->deviation.step = i + 1;
      s = crosscheck_compare(&pair, &r->deviation);
    }
    if (s == PIOLA_OK) {
      s = scene_diagonal(ref, &diagonal);
    }
    if (s == PIOLA_OK) {
      s = piola_world_save_state(ref->world, state, bytes);
    }
    if (s == PIOLA_OK) {
      s = piola_world_save_state(dev->world, other, bytes);
    }
    if (s != PIOLA_OK) {
      break;
    }
    const contact_section c = contact_section_of(state);
    r->vertex = r->entry = -1;
    for (int32_t v = 0; v < c.vertices; ++v) {
      int32_t entry;
      if (!same_contacts(state, other, c, v, &entry)) {
        if (r->decided_apart++ == 0) {
          r->vertex = v;
          r->entry = entry;
          r->gap = pair_gap(&surface, state, v, entry / 2);
        }
      }
    }
    const double dev_max = isnan(r->deviation.max_relative) ? INFINITY : r->deviation.max_relative;
    r->allowed = r->decided_apart > 0 ? fmax((double)tolerance, (double)thickness / diagonal)
                                      : (double)tolerance;
    r->passed = dev_max <= r->allowed;
    if (!r->passed) {
      s = reference_sensitivity(ref->world, before, state, scratch, result, bytes, diagonal,
                                &r->sensitivity);
      if (s != PIOLA_OK) {
        break;
      }
      if (dev_max <= SENSITIVITY_FACTOR * r->sensitivity) {
        r->allowed = SENSITIVITY_FACTOR * r->sensitivity;
        r->passed = true;
        sensitive_steps++;
        worst_sensitive = fmax(worst_sensitive, dev_max);
      }
    }
    failed += !r->passed;
    if (r->decided_apart > 0) {
      apart_steps++;
      worst_apart = fmax(worst_apart, dev_max);
    } else if (!(r->passed && r->sensitivity > 0.0)) {
      worst = fmax(worst, dev_max);
    }
    if ((i + 1) % every == 0 || !r->passed || i == 0 || r->decided_apart > 0 ||
        r->sensitivity > 0.0) {
      printf("%6d %14.6e %14.6e %10d %12.3e %s", (int)(i + 1), r->deviation.max_relative,
             r->deviation.rms_relative, (int)r->decided_apart, r->allowed,
             r->passed ? "" : "FAILED");
      if (r->decided_apart > 0) {
        printf("  (first: surface vertex %d, triangle %d%s, gap %.3e m)", (int)r->vertex,
               (int)(r->entry / 2), r->entry % 2 ? ", reversed side" : "", r->gap);
      }
      if (r->sensitivity > 0.0) {
        printf("  (sensitive: the reference itself moves %.3e from a start a rounding away)",
               r->sensitivity);
      }
      printf("\n");
    }
  }
  int status = 0;
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola crosscheck --resync: %s\n", piola_status_string(s));
    status = 1;
  } else {
    printf("largest one-step deviation: %.6e where both decided every contact alike (tolerance "
           "%.1e); %.6e in the %d steps where a contact was decided apart; %.6e in the %d steps "
           "decided by rounding (within %.0fx the reference's own sensitivity)\n",
           worst, (double)tolerance, worst_apart, (int)apart_steps, worst_sensitive,
           (int)sensitive_steps, SENSITIVITY_FACTOR);
    printf("resync over %d steps: %s (%d steps beyond their tolerance)\n", (int)steps,
           failed == 0 ? "PASSED" : "FAILED", (int)failed);
    status = failed == 0 ? 0 : 1;
    if (json != NULL) {
      FILE *f = fopen(json, "w");
      if (f == NULL) {
        fprintf(stderr, "piola crosscheck: cannot write %s\n", json);
        status = 1;
      } else {
        fprintf(f,
                "{\n  \"mode\": \"resync\",\n  \"scene\": \"%s\",\n  \"bodies\": %d,\n"
                "  \"steps\": %d,\n  \"tolerance\": %g,\n  \"contact_thickness\": %g,\n"
                "  \"max_relative_deviation\": %.9e,\n"
                "  \"max_relative_deviation_contacts_apart\": %.9e,\n"
                "  \"steps_contacts_apart\": %d,\n"
                "  \"max_relative_deviation_sensitive\": %.9e,\n"
                "  \"steps_sensitive\": %d,\n  \"sensitivity_factor\": %g,\n"
                "  \"passed\": %s,\n  \"series\": [\n",
                ref->name, (int)ref->body_count, (int)steps, (double)tolerance, (double)thickness,
                worst, worst_apart, (int)apart_steps, worst_sensitive, (int)sensitive_steps,
                SENSITIVITY_FACTOR, failed == 0 ? "true" : "false");
        for (int32_t i = 0; i < steps; ++i) {
          const resync_sample *r = &samples[i];
          fprintf(f,
                  "    {\"step\": %d, \"max_relative_deviation\": %.9e, "
                  "\"rms_relative_deviation\": %.9e, \"contacts_apart\": %d, "
                  "\"first_apart_gap\": %.9e, "
                  "\"sensitivity\": %.9e, \"allowed\": %.9e, \"passed\": %s}%s\n",
                  (int)r->deviation.step, r->deviation.max_relative, r->deviation.rms_relative,
                  (int)r->decided_apart, r->decided_apart > 0 ? r->gap : 0.0, r->sensitivity,
                  r->allowed, r->passed ? "true" : "false", i + 1 < steps ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
        if (fclose(f) != 0) {
          status = 1;
        }
      }
    }
  }
  free(surface.world_vertex);
  free(surface.triangles);
  free(state);
  free(other);
  free(before);
  free(scratch);
  free(result);
  free(samples);
  return status;
}
