/* `piola crosscheck`: one scene on the CPU reference and on an OpenCL device, from the same
 * initial state and coloring, compared step by step. Body-body contact makes a scene chaotic
 * (a contact found or not in one substep changes what follows), so the deviation is judged up
 * to the first step with a contact between bodies, and after it reported beside the
 * deviation of the reference from itself started one float rounding away (--baseline). The
 * contact count of the stats includes a body's contacts with itself, and some meshes (the
 * Armadillo) have such contacts in their rest shape, which move rigidly with a falling body and
 * change nothing. So the first contact is the first step at which the reference has more
 * contacts than at step 1, or has contacts while two bodies are within reach of each other
 * (their bounding boxes, grown by the contact thickness, overlap: a necessary condition of a
 * contact between them), which is reported too. The cloth scene (no body contact) is compared
 * over all its steps; its moving sphere is driven alike in every world (scene_before_step). */
#include "crosscheck.h"
#include "commands.h"
#include "options.h"
#include "scene.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

piola_status crosscheck_compare(const crosscheck_pair *pair, crosscheck_sample *out) {
  piola_status s = PIOLA_OK;
  int32_t capacity = 0;
  float *a = NULL, *b = NULL;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  double max_d2 = 0.0, sum_d2 = 0.0;
  int64_t count = 0;
  for (int32_t i = 0; i < pair->body_count && s == PIOLA_OK; ++i) {
    int32_t n = piola_body_get_vertex_count(pair->reference, pair->reference_bodies[i]);
    if (n < 0 || n != piola_body_get_vertex_count(pair->candidate, pair->candidate_bodies[i])) {
      s = PIOLA_ERROR_COUNT_MISMATCH;
      break;
    }
    if (n > capacity) {
      float *na = realloc(a, sizeof *a * 3 * (size_t)n), *nb = NULL;
      if (na != NULL) {
        a = na;
        nb = realloc(b, sizeof *b * 3 * (size_t)n);
      }
      if (na == NULL || nb == NULL) {
        s = PIOLA_ERROR_OUT_OF_MEMORY;
        break;
      }
      b = nb;
      capacity = n;
    }
    s = piola_body_get_positions(pair->reference, pair->reference_bodies[i], a, n);
    if (s == PIOLA_OK) {
      s = piola_body_get_positions(pair->candidate, pair->candidate_bodies[i], b, n);
    }
    for (int32_t v = 0; v < n && s == PIOLA_OK; ++v) {
      double d2 = 0.0;
      for (int k = 0; k < 3; ++k) {
        double x = a[3 * v + k], y = b[3 * v + k];
        lo[k] = fmin(lo[k], x);
        hi[k] = fmax(hi[k], x);
        d2 += (x - y) * (x - y);
      }
      max_d2 = fmax(max_d2, isfinite(d2) ? d2 : INFINITY);
      sum_d2 += d2;
      count++;
    }
  }
  free(a);
  free(b);
  if (s != PIOLA_OK) {
    return s;
  }
  double diag = count > 0
                    ? sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                           (hi[2] - lo[2]) * (hi[2] - lo[2]))
                    : 1.0;
  diag = diag > 0.0 ? diag : 1.0;
  out->max_relative = sqrt(max_d2) / diag;
  out->rms_relative = count > 0 ? sqrt(sum_d2 / (double)count) / diag : 0.0;
  return PIOLA_OK;
}

piola_status crosscheck_run(const crosscheck_pair *pair, int32_t steps, crosscheck_sample *samples,
                            double *worst, void (*progress)(const crosscheck_sample *s, void *user),
                            void *user) {
  *worst = 0.0;
  for (int32_t i = 0; i < steps; ++i) {
    piola_status s = piola_world_step(pair->reference);
    if (s == PIOLA_OK) {
      s = piola_world_step(pair->candidate);
    }
    crosscheck_sample sample = {i + 1, 0.0, 0.0};
    if (s == PIOLA_OK) {
      s = crosscheck_compare(pair, &sample);
    }
    if (s != PIOLA_OK) {
      return s;
    }
    /* NaN counts as the worst possible deviation. */
    *worst = isnan(sample.max_relative) ? INFINITY : fmax(*worst, sample.max_relative);
    if (samples != NULL) {
      samples[i] = sample;
    }
    if (progress != NULL) {
      progress(&sample, user);
    }
  }
  return PIOLA_OK;
}

typedef struct print_state {
  int32_t every;
  int32_t steps;
  const crosscheck_sample *baseline; /* NULL without --baseline */
  const scene *reference;            /* contacts are read from it after every step */
  scene *movers[2];                  /* scenes whose colliders move: scene_before_step after
                                        every step (for the next one) */
  float reach;                       /* m: the contact thickness */
  float *scratch;                    /* 3 floats per vertex of a body */
  float *boxes;                      /* 6 floats per body */
  int32_t *contacts;                 /* per step: the reference's contacts */
  int32_t first_contact;             /* first step with a contact (see above); 0 = none yet */
  int32_t first_body_contact;        /* first with contacts, two bodies within reach; 0 = none */
  piola_status status;               /* of reading the contacts */
} print_state;

/* Whether two bodies of the scene have come within `reach` of each other: their bounding boxes,
 * grown by reach, overlap (a necessary condition for a contact between them). */
static piola_status bodies_within_reach(const print_state *p, bool *out) {
  const scene *sc = p->reference;
  *out = false;
  for (int32_t b = 0; b < sc->body_count; ++b) {
    piola_status s =
        piola_body_get_positions(sc->world, sc->bodies[b], p->scratch, sc->body_vertex_count);
    if (s != PIOLA_OK) {
      return s;
    }
    float *box = p->boxes + 6 * b;
    box[0] = box[1] = box[2] = INFINITY;
    box[3] = box[4] = box[5] = -INFINITY;
    for (int32_t i = 0; i < sc->body_vertex_count; ++i) {
      for (int k = 0; k < 3; ++k) {
        box[k] = fminf(box[k], p->scratch[3 * i + k] - p->reach);
        box[3 + k] = fmaxf(box[3 + k], p->scratch[3 * i + k] + p->reach);
      }
    }
  }
  for (int32_t a = 0; a < sc->body_count && !*out; ++a) {
    for (int32_t b = a + 1; b < sc->body_count && !*out; ++b) {
      const float *x = p->boxes + 6 * a, *y = p->boxes + 6 * b;
      *out = x[0] <= y[3] && y[0] <= x[3] && x[1] <= y[4] && y[1] <= x[4] && x[2] <= y[5] &&
             y[2] <= x[5];
    }
  }
  return PIOLA_OK;
}

/* After every step: reads the reference's contact count, and prints every K-th step, the first
 * and the last, and the first steps with a contact and with a contact between bodies. */
static void print_sample(const crosscheck_sample *s, void *user) {
  print_state *p = user;
  piola_stats st;
  for (int k = 0; k < 2; ++k) {
    if (p->movers[k] != NULL && scene_before_step(p->movers[k]) != PIOLA_OK) {
      p->status = PIOLA_ERROR_INVALID_ARGUMENT;
    }
  }
  piola_status status = piola_world_get_stats(p->reference->world, &st);
  if (status != PIOLA_OK) {
    p->status = status;
    st.contact_count = 0;
  }
  p->contacts[s->step - 1] = st.contact_count;
  bool within_reach = false;
  if (p->first_body_contact == 0 && st.contact_count > 0) {
    status = bodies_within_reach(p, &within_reach);
    if (status != PIOLA_OK) {
      p->status = status;
    }
  }
  const bool first_body_contact = within_reach;
  if (first_body_contact) {
    p->first_body_contact = s->step;
  }
  const bool first_contact =
      p->first_contact == 0 &&
      (first_body_contact || (s->step > 1 && st.contact_count > p->contacts[0]));
  if (first_contact) {
    p->first_contact = s->step;
  }
  if (s->step % p->every == 0 || s->step == 1 || s->step == p->steps || first_contact ||
      first_body_contact) {
    printf("%6d %14.6e %14.6e", (int)s->step, s->max_relative, s->rms_relative);
    if (p->baseline != NULL) {
      printf(" %14.6e", p->baseline[s->step - 1].max_relative);
    }
    printf(" %9d%s%s\n", (int)st.contact_count, first_contact ? "   <- first contact" : "",
           first_body_contact ? "   <- bodies within reach" : "");
    fflush(stdout);
  }
}

/* The baseline's progress: drives the moving colliders of its two scenes. */
static void advance_scenes(const crosscheck_sample *s, void *user) {
  (void)s;
  scene **pair = user;
  scene_before_step(pair[0]);
  scene_before_step(pair[1]);
}

/* The largest max_relative of samples[from .. to) (NaN counts as infinite); 0 when empty. */
static double largest(const crosscheck_sample *samples, int32_t from, int32_t to) {
  double worst = 0.0;
  for (int32_t i = from; i < to; ++i) {
    worst = isnan(samples[i].max_relative) ? INFINITY : fmax(worst, samples[i].max_relative);
  }
  return worst;
}

/* Moves every vertex by a pseudo-random amount of about one float rounding (2^-24 of its
 * coordinate's magnitude): the uncertainty any float computation starts with. */
static piola_status perturb(const scene *sc) {
  float *x = malloc(sizeof *x * 3 * (size_t)sc->body_vertex_count);
  if (x == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  uint32_t state = 12345u;
  piola_status s = PIOLA_OK;
  for (int32_t b = 0; b < sc->body_count && s == PIOLA_OK; ++b) {
    s = piola_body_get_positions(sc->world, sc->bodies[b], x, sc->body_vertex_count);
    for (int32_t i = 0; i < 3 * sc->body_vertex_count && s == PIOLA_OK; ++i) {
      state = state * 1664525u + 1013904223u;
      float r = (float)(state >> 8) / 16777216.0f - 0.5f; /* [-0.5, 0.5) */
      x[i] += r * 1.19e-7f * fmaxf(fabsf(x[i]), 1e-3f);
    }
    if (s == PIOLA_OK) {
      s = piola_body_set_positions(sc->world, sc->bodies[b], x, sc->body_vertex_count);
    }
  }
  free(x);
  return s;
}

static void print_help(const cli_command *c) {
  printf("Usage: piola crosscheck [options]\n"
         "Runs one scene on the CPU reference and on an OpenCL device from the same initial\n"
         "state and coloring, and prints per step the largest and the RMS vertex deviation\n"
         "relative to the scene's bounding-box diagonal, and the contacts of the reference.\n"
         "Contacts make a scene chaotic, so the tolerance holds up to the first contact (all\n"
         "steps when there is none): the first step with more contacts than step 1 had (those\n"
         "of the rest shapes with themselves), or with contacts while two bodies are within\n"
         "reach (their boxes, grown by the contact thickness, overlap). Exits 1 when the\n"
         "largest deviation before it exceeds the tolerance. The largest deviation after it is\n"
         "reported separately, beside the baseline's (--baseline) over the same steps, and so\n"
         "is the first step with contacts and two bodies within reach.\n\n");
  cli_print_options(c);
  printf("\n");
  scene_print_help();
}

int command_crosscheck(int argc, char **argv) {
  scene_options o = scene_default_options();
  int32_t steps = 100, every = 10;
  float tolerance = 1e-4f;
  const char *json = NULL;
  bool baseline = false, resync = false;
  const cli_option options[] = {
      {"--steps", CLI_INT, &steps, 1, NULL, "N", "steps (default 100)"},
      {"--tolerance", CLI_FLOAT, &tolerance, 0, NULL, "T",
       "largest allowed max_relative_deviation (default 1e-4)"},
      {"--every", CLI_INT, &every, 1, NULL, "K",
       "print every K-th step and the first with a contact (default 10;\n"
       "all are in the JSON)"},
      {"--baseline", CLI_FLAG, &baseline, 0, NULL, NULL,
       "also run the reference from a start perturbed by one float\n"
       "rounding and print its deviation: how close any float computation\n"
       "can be expected to stay on this scene (chaotic scenes amplify)"},
      {"--json", CLI_STRING, &json, 0, NULL, "FILE", "write the series as JSON"},
      {"--resync", CLI_FLAG, &resync, 0, NULL, NULL,
       "before every step the candidate loads the reference's state, and\n"
       "each step's deviation from one state is judged at every step of any\n"
       "scene; a step where float and double decide a contact differently\n"
       "(their contact lists differ after it; the first pair is printed) is\n"
       "judged against the contact thickness over the scene's diagonal"},
  };
  const cli_command c = {.name = "piola crosscheck",
                         .options = options,
                         .option_count = CLI_OPTION_COUNT(options),
                         .scene = &o,
                         .value_errors = CLI_VALUE_ERROR_THEN_USAGE,
                         .help_column = 19};
  const int parsed = cli_parse_command(&c, argc, argv, print_help);
  if (parsed >= 0) {
    return parsed;
  }
  scene ref, dev;
  if (scene_build(&o, PIOLA_BACKEND_CPU_REFERENCE, &ref) != PIOLA_OK) {
    return 1;
  }
  piola_backend candidate =
      o.backend == PIOLA_BACKEND_CPU_REFERENCE ? PIOLA_BACKEND_CPU_REFERENCE : PIOLA_BACKEND_OPENCL;
  if (scene_build(&o, candidate, &dev) != PIOLA_OK) {
    scene_destroy(&ref);
    return 1;
  }
  piola_stats st;
  piola_world_get_stats(dev.world, &st);
  printf("piola crosscheck: %s x%d (%d vertices, %d tets, %d colors), %d steps of %g s\n", ref.name,
         (int)ref.body_count, (int)st.vertex_count, (int)st.tet_count, (int)st.color_count,
         (int)steps, (double)o.dt);
  if (o.scene == SCENE_CLOTH) {
    printf("cloth: %d x %d cells, %d triangles, %d bending stencils, %d colors\n",
           (int)o.cloth_cells, (int)o.cloth_cells, (int)st.triangle_count, (int)st.bend_count,
           (int)st.cloth_color_count);
  }
  printf("reference: CPU reference (double); candidate: %s (%s)\n", piola_backend_name(st.backend),
         st.device_name);
  if (resync) {
    const float thickness = o.contact_thickness > 0.0f
                                ? o.contact_thickness
                                : piola_default_world_def().contact_thickness;
    const int status = crosscheck_resync(&ref, &dev, thickness, steps, every, tolerance, json);
    scene_destroy(&ref);
    scene_destroy(&dev);
    return status;
  }
  crosscheck_sample *samples = calloc((size_t)steps, sizeof *samples);
  crosscheck_sample *base_samples = baseline ? calloc((size_t)steps, sizeof *base_samples) : NULL;
  double worst = 0.0, base_worst = 0.0;
  piola_status s =
      samples != NULL && (!baseline || base_samples != NULL) ? PIOLA_OK : PIOLA_ERROR_OUT_OF_MEMORY;
  if (s == PIOLA_OK && baseline) {
    /* The reference against a perturbed reference, first, so the table can show both. */
    scene ref2, pert;
    s = scene_build(&o, PIOLA_BACKEND_CPU_REFERENCE, &ref2);
    if (s == PIOLA_OK) {
      s = scene_build(&o, PIOLA_BACKEND_CPU_REFERENCE, &pert);
      if (s == PIOLA_OK) {
        s = perturb(&pert);
        crosscheck_pair bp = {ref2.world, pert.world, ref2.bodies, pert.bodies, ref2.body_count};
        scene *both[2] = {&ref2, &pert};
        if (s == PIOLA_OK) {
          s = scene_before_step(&ref2);
        }
        if (s == PIOLA_OK) {
          s = scene_before_step(&pert);
        }
        if (s == PIOLA_OK) {
          s = crosscheck_run(&bp, steps, base_samples, &base_worst, advance_scenes, both);
        }
        scene_destroy(&pert);
      }
      scene_destroy(&ref2);
    }
  }
  printf("%6s %14s %14s%s %9s\n", "step", "max rel dev", "rms rel dev",
         baseline ? "   baseline max" : "", "contacts");
  crosscheck_pair pair = {ref.world, dev.world, ref.bodies, dev.bodies, ref.body_count};
  int32_t *contacts = calloc((size_t)steps, sizeof *contacts);
  float *scratch = malloc(sizeof *scratch * 3 * (size_t)ref.body_vertex_count);
  float *boxes = malloc(sizeof *boxes * 6 * (size_t)ref.body_count);
  const float reach = o.contact_thickness > 0.0f ? o.contact_thickness
                                                 : piola_default_world_def().contact_thickness;
  print_state ps = {every, steps, base_samples, &ref, {&ref, &dev}, reach, scratch, boxes, contacts,
                    0,     0,     PIOLA_OK};
  if (s == PIOLA_OK && (contacts == NULL || scratch == NULL || boxes == NULL)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK) {
    s = scene_before_step(&ref);
  }
  if (s == PIOLA_OK) {
    s = scene_before_step(&dev);
  }
  if (s == PIOLA_OK) {
    s = crosscheck_run(&pair, steps, samples, &worst, print_sample, &ps);
  }
  if (s == PIOLA_OK) {
    s = ps.status;
  }
  /* Steps 1 .. first_contact - 1 come before the first contact (all without one). */
  const int32_t before = ps.first_contact > 0 ? ps.first_contact - 1 : steps;
  double worst_before = 0.0, worst_after = 0.0, base_before = 0.0, base_after = 0.0;
  if (s == PIOLA_OK) {
    worst_before = largest(samples, 0, before);
    worst_after = largest(samples, before, steps);
    if (baseline) {
      base_before = largest(base_samples, 0, before);
      base_after = largest(base_samples, before, steps);
    }
  }
  int status = 0;
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola crosscheck: %s\n", piola_status_string(s));
    status = 1;
  } else {
    bool passed = worst_before <= tolerance;
    printf("largest deviation over %d steps: %.6e of the bounding-box diagonal\n", (int)steps,
           worst);
    if (ps.first_contact > 0) {
      printf("first contact at step %d (%d contacts, %d at step 1)", (int)ps.first_contact,
             (int)contacts[ps.first_contact - 1], (int)contacts[0]);
      if (ps.first_body_contact > 0) {
        printf("; first with two bodies within reach at step %d\n", (int)ps.first_body_contact);
      } else {
        printf("; bodies never within reach of each other\n");
      }
    } else {
      printf("no contact in %d steps\n", (int)steps);
    }
    printf("largest deviation before the first contact (steps 1-%d): %.6e; tolerance %.1e: %s\n",
           (int)before, worst_before, (double)tolerance, passed ? "PASSED" : "FAILED");
    if (before < steps) {
      printf("largest deviation from the first contact on (steps %d-%d): %.6e", (int)(before + 1),
             (int)steps, worst_after);
      if (baseline) {
        printf("; baseline over the same steps: %.6e (ratio %.3g)", base_after,
               base_after > 0.0 ? worst_after / base_after : INFINITY);
      }
      printf("\n");
    }
    status = passed ? 0 : 1;
    if (baseline) {
      printf("baseline: the reference started one float rounding away deviates by %.6e over "
             "the same steps%s\n",
             base_worst,
             base_worst > tolerance ? " -- this scene is chaotic over this horizon: no float "
                                      "computation can be expected within the tolerance"
                                    : "");
    }
    if (json != NULL) {
      FILE *f = fopen(json, "w");
      if (f == NULL) {
        fprintf(stderr, "piola crosscheck: cannot write %s\n", json);
        status = 1;
      } else {
        fprintf(f,
                "{\n  \"scene\": \"%s\",\n  \"bodies\": %d,\n  \"vertices\": %d,\n  \"tets\": "
                "%d,\n  \"colors\": %d,\n  \"reference\": \"cpu\",\n  \"candidate\": \"%s\",\n"
                "  \"device\": \"%s\",\n  \"steps\": %d,\n  \"dt\": %g,\n  \"tolerance\": %g,\n"
                "  \"max_relative_deviation\": %.9e,\n  \"passed\": %s,\n",
                ref.name, (int)ref.body_count, (int)st.vertex_count, (int)st.tet_count,
                (int)st.color_count, piola_backend_name(st.backend), st.device_name, (int)steps,
                (double)o.dt, (double)tolerance, worst, passed ? "true" : "false");
        fprintf(f, "  \"scene_kind\": \"%s\",\n", scene_kind_name(o.scene));
        if (ps.first_contact > 0) {
          fprintf(f, "  \"first_contact_step\": %d,\n", (int)ps.first_contact);
        } else {
          fprintf(f, "  \"first_contact_step\": null,\n");
        }
        if (ps.first_body_contact > 0) {
          fprintf(f, "  \"first_within_reach_step\": %d,\n", (int)ps.first_body_contact);
        } else {
          fprintf(f, "  \"first_within_reach_step\": null,\n");
        }
        fprintf(f,
                "  \"max_relative_deviation_before_contact\": %.9e,\n"
                "  \"max_relative_deviation_after_contact\": %.9e,\n",
                worst_before, worst_after);
        if (baseline) {
          fprintf(f, "  \"baseline_max_relative_deviation\": %.9e,\n", base_worst);
          fprintf(f,
                  "  \"baseline_max_relative_deviation_before_contact\": %.9e,\n"
                  "  \"baseline_max_relative_deviation_after_contact\": %.9e,\n",
                  base_before, base_after);
        }
        fprintf(f, "  \"series\": [\n");
        for (int32_t i = 0; i < steps; ++i) {
          fprintf(f,
                  "    {\"step\": %d, \"max_relative_deviation\": %.9e, "
                  "\"rms_relative_deviation\": %.9e, \"contact_count\": %d",
                  (int)samples[i].step, samples[i].max_relative, samples[i].rms_relative,
                  (int)contacts[i]);
          if (baseline) {
            fprintf(f, ", \"baseline_max_relative_deviation\": %.9e", base_samples[i].max_relative);
          }
          fprintf(f, "}%s\n", i + 1 < steps ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
        if (fclose(f) != 0) {
          status = 1;
        }
      }
    }
  }
  free(samples);
  free(base_samples);
  free(contacts);
  free(scratch);
  free(boxes);
  scene_destroy(&ref);
  scene_destroy(&dev);
  return status;
}
