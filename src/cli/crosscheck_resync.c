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
 * and triangle (the solver's numbering, the same in both worlds) and the step is judged against
 * the contact tolerance, the contact thickness over the scene's bounding-box diagonal (a
 * contact's push is at most its depth, which is at most about a thickness). Every other step is
 * judged against --tolerance. */
#include "crosscheck.h"
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
  resync_sample *samples = calloc((size_t)steps, sizeof *samples);
  if (s == PIOLA_OK && (state == NULL || other == NULL || samples == NULL)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  const crosscheck_pair pair = {ref->world, dev->world, ref->bodies, dev->bodies, ref->body_count};
  double worst = 0.0, worst_apart = 0.0;
  int32_t failed = 0, apart_steps = 0;
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
        }
      }
    }
    const double dev_max = isnan(r->deviation.max_relative) ? INFINITY : r->deviation.max_relative;
    r->allowed = r->decided_apart > 0 ? fmax((double)tolerance, (double)thickness / diagonal)
                                      : (double)tolerance;
    r->passed = dev_max <= r->allowed;
    failed += !r->passed;
    if (r->decided_apart > 0) {
      apart_steps++;
      worst_apart = fmax(worst_apart, dev_max);
    } else {
      worst = fmax(worst, dev_max);
    }
    if ((i + 1) % every == 0 || !r->passed || i == 0 || r->decided_apart > 0) {
      printf("%6d %14.6e %14.6e %10d %12.3e %s", (int)(i + 1), r->deviation.max_relative,
             r->deviation.rms_relative, (int)r->decided_apart, r->allowed,
             r->passed ? "" : "FAILED");
      if (r->decided_apart > 0) {
        printf("  (first: surface vertex %d, triangle %d%s)", (int)r->vertex, (int)(r->entry / 2),
               r->entry % 2 ? ", reversed side" : "");
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
           "%.1e); %.6e in the %d steps where a contact was decided apart\n",
           worst, (double)tolerance, worst_apart, (int)apart_steps);
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
                "  \"steps_contacts_apart\": %d,\n  \"passed\": %s,\n  \"series\": [\n",
                ref->name, (int)ref->body_count, (int)steps, (double)tolerance, (double)thickness,
                worst, worst_apart, (int)apart_steps, failed == 0 ? "true" : "false");
        for (int32_t i = 0; i < steps; ++i) {
          const resync_sample *r = &samples[i];
          fprintf(f,
                  "    {\"step\": %d, \"max_relative_deviation\": %.9e, "
                  "\"rms_relative_deviation\": %.9e, \"contacts_apart\": %d, \"allowed\": %.9e, "
                  "\"passed\": %s}%s\n",
                  (int)r->deviation.step, r->deviation.max_relative, r->deviation.rms_relative,
                  (int)r->decided_apart, r->allowed, r->passed ? "true" : "false",
                  i + 1 < steps ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
        if (fclose(f) != 0) {
          status = 1;
        }
      }
    }
  }
  free(state);
  free(other);
  free(samples);
  return status;
}
