/* Piola world state: saving and loading everything a step carries to the next one, for resets,
 * rollbacks, replays and a cross-check that puts the reference's state into a device world.
 *
 * What carries from one step to the next (read from world.c's step): the vertices' positions
 * and velocities, their inverse masses (pinning) and external forces; per plastic tet its
 * plastic strain and its effective M = Dm^-1 F_p^-1; per surface vertex the contacts of the
 * last substep, which the next narrow phase takes as the previous ones (a pair listed there
 * persists: it skips the start-side test, and a two-sided triangle keeps the side it was met
 * from); the colliders' poses and velocities (the pose at the start of the next step); the
 * attachments' targets; under the multigrid scheme, per vertex where its collider's friction
 * holds it (newton_support.c: the anchor, its collider and the last normal force) and per slot
 * of the contact lists the normal force its contact pressed with (newton_contact.c); the step
 * count and the simulated time. Everything else a step reads is
 * made anew in it (the predicted positions, the multipliers, reset every substep, the supports,
 * the grid, the marks of turned tets, the mass split) or is the scene and its settings (the
 * bodies' rest data, materials, filters, the world def, gravity, iterations), which the state
 * does not hold: it is loaded into a world of the same scene (the same bodies, colliders and
 * attachments added in the same order), on the same backend or another.
 *
 * Format, version 1: little-endian throughout, integers as two's complement, reals as IEEE 754
 * doubles (a CPU reference's state is exact; an OpenCL world's floats are held exactly).
 *
 *   header (80 bytes; offsets in state.h):
 *     0  magic "PIOLAST\0"            8  u32 version (1)      12  u32 header bytes (80)
 *     16 u64 total bytes of the state
 *     24 i32 bodies  28 vertices  32 tets  36 plastic tets  40 surface vertices
 *     44 i32 surface triangles  48 colliders  52 attachments  56 contacts per vertex (8)
 *     60 u32 flags (bit 0: the world has external forces; bit 1: the friction section follows;
 *        bit 2: the contact forces section follows)
 *     64 i64 step count           72 f64 simulated time (s)
 *   vertices, in the world's order (the bodies' vertices in the order the bodies were added),
 *     80 bytes each: f64 position[3] (m), velocity[3] (m/s), force[3] (N), inverse mass (1/kg)
 *   plastic tets, the tets of the live tet bodies with a plastic material, body by body in
 *     slot order, each body's in its mesh's order, 120 bytes each: f64 M[9] (row by row, 1/m),
 *     plastic strain[6] (xx, yy, zz, xy, xz, yz)
 *   contacts, per surface vertex in the solver's order (the live bodies' surface vertices,
 *     body by body, each body's in Morton order of its rest shape), 36 bytes each: i32 count
 *     (0 to 8), then 8 i32 entries 2 t + side (t a surface triangle in the solver's order,
 *     side 1 where a two-sided triangle acts reversed), -1 past the count
 *   colliders, in the order they act (the order added), 112 bytes each: u32 type
 *     (piola_collider_type), u32 0, f64 position[3] (m), rotation[4] (unit quaternion x, y,
 *     z, w), velocity[3] (m/s), angular velocity[3] (rad/s)
 *   attachments, the live ones in slot order, 32 bytes each: i32 body slot, i32 vertex
 *     (body-local), f64 target[3] (m)
 *   friction (with flag bit 1, saved by worlds of the multigrid scheme), per vertex in the
 *     world's order, 40 bytes each: i32 the collider whose friction holds the vertex (-1: none),
 *     u32 0, f64 anchor[3] (m), the normal force of its last solve (N). A world of another
 *     scheme skips the section; a multigrid world loading a state without it starts with no
 *     vertex held.
 *   contact forces (with flag bit 2, saved by worlds of the multigrid scheme with contacts on),
 *     per surface vertex
 *     in the solver's order, 8 records of 16 bytes, one per slot of its contact list: i32 the
 *     entry (as in the contacts section) the slot last named in the step's solve (-1: none), u32
 *     0, f64 the normal force that contact pressed with at the end of the last substep (N; the
 *     lambda of its friction in the solve, newton_contact.c). A world of another scheme skips
 *     the section; a multigrid world loading a state without it starts with no contact force
 *     known.
 *
 * Saving first brings the host arrays up to date (the backend's pull, which reads the contact
 * lists too); a world that has not stepped since its bodies changed lists no contacts (the
 * solver arrays, built at the next step, start without any) and keeps its plastic state in the
 * bodies. Loading checks the whole buffer before it changes anything: the header, the counts
 * against the world (and each collider's type, each attachment's body and vertex), the finiteness
 * of every real, inverse masses >= 0, and the contact lists' counts and entries. Then it builds the
 * solver arrays where they are not built (so that the contact lists and the plastic state have
 * their places), writes the host arrays and drops the backend's copy of the state (the backend's
 * invalidate): the next step uploads it from the host, contact lists included. So a state loaded
 * into an OpenCL world steps from its values rounded to floats, as if the device had held them.
 */
#include "state.h"

#include "world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K PIOLA_CONTACTS_PER_VERTEX

/* ---- Little-endian fields ------------------------------------------------------------ */

static void put_u32(unsigned char *p, uint32_t v) {
  for (int k = 0; k < 4; ++k) {
    p[k] = (unsigned char)(v >> (8 * k));
  }
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int k = 0; k < 8; ++k) {
    p[k] = (unsigned char)(v >> (8 * k));
  }
}

static void put_f64(unsigned char *p, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  put_u64(p, v);
}

static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) {
    v |= (uint32_t)p[k] << (8 * k);
  }
  return v;
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) {
    v |= (uint64_t)p[k] << (8 * k);
  }
  return v;
}

static int32_t get_i32(const unsigned char *p) {
  const uint32_t u = get_u32(p);
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static void put_i32(unsigned char *p, int32_t v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  put_u32(p, u);
}

static double get_f64(const unsigned char *p) {
  const uint64_t v = get_u64(p);
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}

/* ---- The scene's shape --------------------------------------------------------------- */

/* The counts of the header, from the bodies, colliders and attachments (so that they are right
 * before the solver arrays are built). */
typedef struct state_counts {
  int32_t bodies, vertices, tets, plastic, surface_vertices, surface_triangles, colliders,
      attachments;
  int32_t friction;       /* friction records: the vertices, or 0 (no section) */
  int32_t contact_forces; /* contact force records: the surface vertices, or 0 (no section) */
} state_counts;

static bool body_plastic(const piola_world *w, const piola_body *b) {
  return !b->cloth && w->materials[b->material].plastic;
}

static state_counts world_counts(const piola_world *w) {
  state_counts c;
  memset(&c, 0, sizeof c);
  c.bodies = w->body_count;
  c.vertices = w->vertex_count;
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (piola_id_pool_alive(&w->body_ids, i)) {
      c.tets += b->tet_count;
      c.plastic += body_plastic(w, b) ? b->tet_count : 0;
      c.surface_vertices += b->surface_vertex_count;
      c.surface_triangles += b->surface_count;
    }
  }
  c.colliders = w->collider_count;
  for (int32_t i = 0; i < w->attachment_ids.count; ++i) {
    c.attachments += piola_id_pool_alive(&w->attachment_ids, i);
  }
  c.friction = w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID ? c.vertices : 0;
  c.contact_forces =
      w->def.iteration_scheme == PIOLA_SCHEME_MULTIGRID && w->def.contacts ? c.surface_vertices : 0;
  return c;
}

/* Where each section starts, and the total. */
typedef struct state_layout {
  size_t vertices, plastic, contacts, colliders, attachments, friction, contact_forces, total;
} state_layout;

static state_layout layout_of(const state_counts *c) {
  state_layout l;
  l.vertices = PIOLA_STATE_HEADER_BYTES;
  l.plastic = l.vertices + PIOLA_STATE_VERTEX_BYTES * (size_t)c->vertices;
  l.contacts = l.plastic + PIOLA_STATE_PLASTIC_BYTES * (size_t)c->plastic;
  l.colliders = l.contacts + PIOLA_STATE_CONTACT_BYTES * (size_t)c->surface_vertices;
  l.attachments = l.colliders + PIOLA_STATE_COLLIDER_BYTES * (size_t)c->colliders;
  l.friction = l.attachments + PIOLA_STATE_ATTACHMENT_BYTES * (size_t)c->attachments;
  l.contact_forces = l.friction + PIOLA_STATE_FRICTION_BYTES * (size_t)c->friction;
  l.total = l.contact_forces + PIOLA_STATE_CONTACT_FORCE_BYTES * K * (size_t)c->contact_forces;
  return l;
}

/* Per body slot, the index of its first plastic tet among the state's plastic records (bodies
 * in slot order), or NULL when out of memory. */
static int32_t *plastic_offsets(const piola_world *w) {
  int32_t *first = malloc(sizeof *first * (size_t)(w->body_ids.count > 0 ? w->body_ids.count : 1));
  if (first == NULL) {
    return NULL;
  }
  int32_t n = 0;
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    first[i] = n;
    const piola_body *b = &w->bodies[i];
    if (piola_id_pool_alive(&w->body_ids, i) && body_plastic(w, b)) {
      n += b->tet_count;
    }
  }
  return first;
}

/* ---- Size and save ------------------------------------------------------------------- */

piola_status piola_world_get_state_size(const piola_world *w, size_t *bytes) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (bytes == NULL) {
    PIOLA_MISUSE(w, "bytes != NULL");
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "piola_world_get_state_size: bytes is NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const state_counts c = world_counts(w);
  *bytes = layout_of(&c).total;
  return PIOLA_OK;
}

piola_status piola_world_save_state(piola_world *w, void *buffer, size_t bytes) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (buffer == NULL) {
    PIOLA_MISUSE(w, "buffer != NULL");
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "piola_world_save_state: buffer is NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const state_counts c = world_counts(w);
  const state_layout l = layout_of(&c);
  if (bytes < l.total) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_world_save_state: the buffer holds %zu bytes, the state needs %zu "
              "(piola_world_get_state_size)",
              bytes, l.total);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  int32_t *plastic_first = plastic_offsets(w);
  if (plastic_first == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* The host arrays made current (a no-op where they are): positions, velocities, the plastic
   * state and the contact lists. The backend keeps its copy. */
  piola_status s = w->ops->pull(w);
  if (s != PIOLA_OK) {
    free(plastic_first);
    return s;
  }
  unsigned char *out = buffer;
  memset(out, 0, PIOLA_STATE_HEADER_BYTES);
  memcpy(out, PIOLA_STATE_MAGIC, sizeof PIOLA_STATE_MAGIC);
  put_u32(out + PIOLA_STATE_OFFSET_VERSION, PIOLA_STATE_VERSION);
  put_u32(out + PIOLA_STATE_OFFSET_HEADER_BYTES, PIOLA_STATE_HEADER_BYTES);
  put_u64(out + PIOLA_STATE_OFFSET_TOTAL_BYTES, (uint64_t)l.total);
  put_i32(out + PIOLA_STATE_OFFSET_BODIES, c.bodies);
  put_i32(out + PIOLA_STATE_OFFSET_VERTICES, c.vertices);
  put_i32(out + PIOLA_STATE_OFFSET_TETS, c.tets);
  put_i32(out + PIOLA_STATE_OFFSET_PLASTIC_TETS, c.plastic);
  put_i32(out + PIOLA_STATE_OFFSET_SURFACE_VERTICES, c.surface_vertices);
  put_i32(out + PIOLA_STATE_OFFSET_SURFACE_TRIANGLES, c.surface_triangles);
  put_i32(out + PIOLA_STATE_OFFSET_COLLIDERS, c.colliders);
  put_i32(out + PIOLA_STATE_OFFSET_ATTACHMENTS, c.attachments);
  put_i32(out + PIOLA_STATE_OFFSET_CONTACTS_PER_VERTEX, K);
  put_u32(out + PIOLA_STATE_OFFSET_FLAGS,
          (w->f != NULL ? PIOLA_STATE_FLAG_FORCES : 0u) |
              (c.friction > 0 ? PIOLA_STATE_FLAG_FRICTION : 0u) |
              (c.contact_forces > 0 ? PIOLA_STATE_FLAG_CONTACT_FORCES : 0u));
  put_u64(out + PIOLA_STATE_OFFSET_STEP_COUNT, (uint64_t)w->step_count);
  put_f64(out + PIOLA_STATE_OFFSET_SIMULATED_TIME, w->simulated_time);

  for (int32_t i = 0; i < c.vertices; ++i) {
    unsigned char *r = out + l.vertices + PIOLA_STATE_VERTEX_BYTES * (size_t)i;
    for (int k = 0; k < 3; ++k) {
      put_f64(r + 8 * k, w->x[3 * (size_t)i + k]);
      put_f64(r + 24 + 8 * k, w->v[3 * (size_t)i + k]);
      put_f64(r + 48 + 8 * k, w->f != NULL ? w->f[3 * (size_t)i + k] : 0.0);
    }
    put_f64(r + 72, w->w[i]);
  }

  /* Plastic tets: from the solver arrays where they are built, else from the bodies (which hold
   * the state until the arrays are built again). */
  if (w->tets_dirty) {
    for (int32_t i = 0; i < w->body_ids.count; ++i) {
      const piola_body *b = &w->bodies[i];
      if (!piola_id_pool_alive(&w->body_ids, i) || !body_plastic(w, b)) {
        continue;
      }
      for (int32_t t = 0; t < b->tet_count; ++t) {
        unsigned char *r =
            out + l.plastic + PIOLA_STATE_PLASTIC_BYTES * (size_t)(plastic_first[i] + t);
        for (int k = 0; k < 9; ++k) {
          put_f64(r + 8 * k, b->m_eff[9 * (size_t)t + k]);
        }
        for (int k = 0; k < 6; ++k) {
          put_f64(r + 72 + 8 * k, b->plastic_strain[6 * (size_t)t + k]);
        }
      }
    }
  } else {
    for (int32_t p = 0; p < w->solver.plastic_count; ++p) {
      const int32_t t = w->solver.plastic_tet[p];
      const int32_t record = plastic_first[w->solver.tet_body[t]] + w->solver.tet_local[t];
      unsigned char *r = out + l.plastic + PIOLA_STATE_PLASTIC_BYTES * (size_t)record;
      for (int k = 0; k < 9; ++k) {
        put_f64(r + 8 * k, w->solver.tet_m[9 * (size_t)t + k]);
      }
      for (int k = 0; k < 6; ++k) {
        put_f64(r + 72 + 8 * k, w->solver.plastic_strain[6 * (size_t)p + k]);
      }
    }
  }
  free(plastic_first);

  /* Contacts: none before the solver arrays are built (building them starts without any). */
  const piola_solver_contacts *ct = &w->contacts;
  const bool lists = !w->tets_dirty && ct->vertex_count == c.surface_vertices;
  for (int32_t sv = 0; sv < c.surface_vertices; ++sv) {
    unsigned char *r = out + l.contacts + PIOLA_STATE_CONTACT_BYTES * (size_t)sv;
    const int32_t n = lists ? ct->contact_count[sv] : 0;
    put_i32(r, n);
    for (int32_t k = 0; k < K; ++k) {
      put_i32(r + 4 + 4 * k, k < n ? ct->contact_triangle[K * (size_t)sv + (size_t)k] : -1);
    }
  }

  for (int32_t i = 0; i < c.colliders; ++i) {
    const piola_collider_slot *cs = &w->collider_slots[w->collider_slot[i]];
    unsigned char *r = out + l.colliders + PIOLA_STATE_COLLIDER_BYTES * (size_t)i;
    put_u32(r, (uint32_t)w->colliders[i].kind);
    put_u32(r + 4, 0u);
    for (int k = 0; k < 3; ++k) {
      put_f64(r + 8 + 8 * k, cs->position[k]);
      put_f64(r + 64 + 8 * k, cs->velocity[k]);
      put_f64(r + 88 + 8 * k, cs->angular_velocity[k]);
    }
    for (int k = 0; k < 4; ++k) {
      put_f64(r + 32 + 8 * k, cs->rotation[k]);
    }
  }

  for (int32_t i = 0, n = 0; i < w->attachment_ids.count; ++i) {
    if (!piola_id_pool_alive(&w->attachment_ids, i)) {
      continue;
    }
    const piola_attachment_slot *a = &w->attachment_slots[i];
    unsigned char *r = out + l.attachments + PIOLA_STATE_ATTACHMENT_BYTES * (size_t)n++;
    put_i32(r, a->body.index1 - 1);
    put_i32(r + 4, a->vertex);
    for (int k = 0; k < 3; ++k) {
      put_f64(r + 8 + 8 * k, a->target[k]);
    }
  }

  /* Friction: none held before the solver arrays are built. */
  const piola_solver_newton *nw = &w->newton;
  const bool held = !w->tets_dirty && nw->anchor != NULL && nw->vertex_count == c.friction;
  for (int32_t i = 0; i < c.friction; ++i) {
    unsigned char *r = out + l.friction + PIOLA_STATE_FRICTION_BYTES * (size_t)i;
    const int32_t k = held ? nw->anchor_collider[i] : -1;
    put_i32(r, k);
    put_u32(r + 4, 0u);
    for (int a = 0; a < 3; ++a) {
      put_f64(r + 8 + 8 * a, k >= 0 ? nw->anchor[3 * (size_t)i + (size_t)a] : 0.0);
    }
    put_f64(r + 32,
            held ? nw->friction[PIOLA_NEWTON_FRICTION_REALS * (size_t)i + PIOLA_NEWTON_NORMAL_FORCE]
                 : 0.0);
  }
  /* Contact forces: none known before the solver arrays are built. */
  const int32_t slots = K * c.contact_forces;
  const bool known = !w->tets_dirty && nw->pair_entry != NULL && nw->pair_capacity == slots;
  for (int32_t k = 0; k < slots; ++k) {
    unsigned char *r = out + l.contact_forces + PIOLA_STATE_CONTACT_FORCE_BYTES * (size_t)k;
    put_i32(r, known ? nw->pair_entry[k] : -1);
    put_u32(r + 4, 0u);
    put_f64(r + 8, known ? nw->pair_lambda[k] : 0.0);
  }
  return PIOLA_OK;
}

/* ---- Load ---------------------------------------------------------------------------- */

/* Checks a state against the world before anything changes; the reason into `reason`. */
static piola_status check_state(const piola_world *w, const unsigned char *in, size_t bytes,
                                const state_counts *c, const state_layout *l, char *reason,
                                size_t n) {
  if (bytes < PIOLA_STATE_HEADER_BYTES) {
    snprintf(reason, n, "the buffer holds %zu bytes, less than the %d of the header", bytes,
             PIOLA_STATE_HEADER_BYTES);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (memcmp(in, PIOLA_STATE_MAGIC, sizeof PIOLA_STATE_MAGIC) != 0) {
    snprintf(reason, n, "the buffer is not a saved state (its magic is not \"%s\")",
             PIOLA_STATE_MAGIC);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const uint32_t version = get_u32(in + PIOLA_STATE_OFFSET_VERSION);
  if (version != PIOLA_STATE_VERSION ||
      get_u32(in + PIOLA_STATE_OFFSET_HEADER_BYTES) != PIOLA_STATE_HEADER_BYTES) {
    snprintf(reason, n,
             "the state has format version %u with a header of %u bytes; this library reads "
             "version %u (%d bytes)",
             (unsigned)version, (unsigned)get_u32(in + PIOLA_STATE_OFFSET_HEADER_BYTES),
             (unsigned)PIOLA_STATE_VERSION, PIOLA_STATE_HEADER_BYTES);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const struct {
    int offset;
    int32_t world;
    const char *what;
  } counts[] = {
      {PIOLA_STATE_OFFSET_BODIES, c->bodies, "bodies"},
      {PIOLA_STATE_OFFSET_VERTICES, c->vertices, "vertices"},
      {PIOLA_STATE_OFFSET_TETS, c->tets, "tets"},
      {PIOLA_STATE_OFFSET_PLASTIC_TETS, c->plastic, "plastic tets"},
      {PIOLA_STATE_OFFSET_SURFACE_VERTICES, c->surface_vertices, "surface vertices"},
      {PIOLA_STATE_OFFSET_SURFACE_TRIANGLES, c->surface_triangles, "surface triangles"},
      {PIOLA_STATE_OFFSET_COLLIDERS, c->colliders, "colliders"},
      {PIOLA_STATE_OFFSET_ATTACHMENTS, c->attachments, "attachments"},
      {PIOLA_STATE_OFFSET_CONTACTS_PER_VERTEX, K, "contacts per vertex"},
  };
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
    const int32_t saved = get_i32(in + counts[i].offset);
    if (saved != counts[i].world) {
      snprintf(reason, n, "the state has %d %s, the world %d: not a state of this scene",
               (int)saved, counts[i].what, (int)counts[i].world);
      return PIOLA_ERROR_COUNT_MISMATCH;
    }
  }
  const uint64_t total = get_u64(in + PIOLA_STATE_OFFSET_TOTAL_BYTES);
  if (total != (uint64_t)l->total) {
    snprintf(reason, n, "the header gives %llu bytes for the state, its counts %zu",
             (unsigned long long)total, l->total);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (bytes < l->total) {
    snprintf(reason, n, "the buffer holds %zu bytes, the state %zu", bytes, l->total);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (get_u32(in + PIOLA_STATE_OFFSET_FLAGS) &
      ~(PIOLA_STATE_FLAG_FORCES | PIOLA_STATE_FLAG_FRICTION | PIOLA_STATE_FLAG_CONTACT_FORCES)) {
    snprintf(reason, n, "the state has unknown flags (%#x)",
             (unsigned)get_u32(in + PIOLA_STATE_OFFSET_FLAGS));
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const int64_t steps = (int64_t)get_u64(in + PIOLA_STATE_OFFSET_STEP_COUNT);
  const double time = get_f64(in + PIOLA_STATE_OFFSET_SIMULATED_TIME);
  if (!isfinite(time)) {
    snprintf(reason, n, "the simulated time is not finite");
    return PIOLA_ERROR_NON_FINITE;
  }
  if (steps < 0) {
    snprintf(reason, n, "the step count is negative (%lld)", (long long)steps);
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  for (int32_t i = 0; i < c->vertices; ++i) {
    const unsigned char *r = in + l->vertices + PIOLA_STATE_VERTEX_BYTES * (size_t)i;
    for (int k = 0; k < 10; ++k) {
      if (!isfinite(get_f64(r + 8 * k))) {
        static const char *const what[] = {"position", "velocity", "force", "inverse mass"};
        snprintf(reason, n, "vertex %d: its %s is not finite", (int)i, what[k < 9 ? k / 3 : 3]);
        return PIOLA_ERROR_NON_FINITE;
      }
    }
    if (!(get_f64(r + 72) >= 0.0)) {
      snprintf(reason, n, "vertex %d: its inverse mass is negative (%g)", (int)i, get_f64(r + 72));
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
  }
  for (int32_t i = 0; i < c->plastic; ++i) {
    const unsigned char *r = in + l->plastic + PIOLA_STATE_PLASTIC_BYTES * (size_t)i;
    for (int k = 0; k < 15; ++k) {
      if (!isfinite(get_f64(r + 8 * k))) {
        snprintf(reason, n, "plastic tet %d: its %s is not finite", (int)i,
                 k < 9 ? "M" : "plastic strain");
        return PIOLA_ERROR_NON_FINITE;
      }
    }
  }
  for (int32_t sv = 0; sv < c->surface_vertices; ++sv) {
    const unsigned char *r = in + l->contacts + PIOLA_STATE_CONTACT_BYTES * (size_t)sv;
    const int32_t count = get_i32(r);
    if (count < 0 || count > K) {
      snprintf(reason, n, "surface vertex %d: %d contacts (0 to %d)", (int)sv, (int)count, K);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    for (int32_t k = 0; k < count; ++k) {
      const int32_t e = get_i32(r + 4 + 4 * k);
      if (e < 0 || e / 2 >= c->surface_triangles) {
        snprintf(reason, n, "surface vertex %d: contact entry %d (%d) names no triangle", (int)sv,
                 (int)k, (int)e);
        return PIOLA_ERROR_INVALID_ARGUMENT;
      }
    }
  }
  for (int32_t i = 0; i < c->colliders; ++i) {
    const unsigned char *r = in + l->colliders + PIOLA_STATE_COLLIDER_BYTES * (size_t)i;
    if (get_u32(r) != (uint32_t)w->colliders[i].kind) {
      snprintf(reason, n, "collider %d: the state's is of type %u, the world's of type %u", (int)i,
               (unsigned)get_u32(r), (unsigned)w->colliders[i].kind);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    double q = 0.0;
    for (int k = 0; k < 13; ++k) {
      const double v = get_f64(r + 8 + 8 * k);
      if (!isfinite(v)) {
        snprintf(reason, n, "collider %d: its pose or velocities are not finite", (int)i);
        return PIOLA_ERROR_NON_FINITE;
      }
      q += k >= 3 && k < 7 ? v * v : 0.0;
    }
    if (!(fabs(q - 1.0) <= 1e-6)) {
      snprintf(reason, n, "collider %d: its rotation is not a unit quaternion (|q|^2 = %g)", (int)i,
               q);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
  }
  for (int32_t i = 0, a = 0; i < w->attachment_ids.count; ++i) {
    if (!piola_id_pool_alive(&w->attachment_ids, i)) {
      continue;
    }
    const piola_attachment_slot *s = &w->attachment_slots[i];
    const unsigned char *r = in + l->attachments + PIOLA_STATE_ATTACHMENT_BYTES * (size_t)a;
    if (get_i32(r) != s->body.index1 - 1 || get_i32(r + 4) != s->vertex) {
      snprintf(reason, n,
               "attachment %d: the state's is on vertex %d of body slot %d, the world's on vertex "
               "%d of body slot %d",
               (int)a, (int)get_i32(r + 4), (int)get_i32(r), (int)s->vertex,
               (int)(s->body.index1 - 1));
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    for (int k = 0; k < 3; ++k) {
      if (!isfinite(get_f64(r + 8 + 8 * k))) {
        snprintf(reason, n, "attachment %d: its target is not finite", (int)a);
        return PIOLA_ERROR_NON_FINITE;
      }
    }
    ++a;
  }
  for (int32_t i = 0; i < c->friction; ++i) {
    const unsigned char *r = in + l->friction + PIOLA_STATE_FRICTION_BYTES * (size_t)i;
    const int32_t k = get_i32(r);
    if (k < -1 || k >= c->colliders) {
      snprintf(reason, n, "vertex %d: its friction names collider %d (-1 to %d)", (int)i, (int)k,
               (int)c->colliders - 1);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    for (int a = 0; a < 4; ++a) {
      if (!isfinite(get_f64(r + 8 + 8 * a))) {
        snprintf(reason, n, "vertex %d: its friction's %s is not finite", (int)i,
                 a < 3 ? "anchor" : "normal force");
        return PIOLA_ERROR_NON_FINITE;
      }
    }
    if (!(get_f64(r + 32) >= 0.0)) {
      snprintf(reason, n, "vertex %d: its friction's normal force is negative (%g)", (int)i,
               get_f64(r + 32));
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
  }
  for (int32_t k = 0; k < K * c->contact_forces; ++k) {
    const unsigned char *r = in + l->contact_forces + PIOLA_STATE_CONTACT_FORCE_BYTES * (size_t)k;
    const int32_t e = get_i32(r);
    const double f = get_f64(r + 8);
    if (e < -1 || e >= 2 * c->surface_triangles) {
      snprintf(reason, n,
               "surface vertex %d: its contact force's entry %d is out of range (-1 to %d)",
               (int)(k / K), (int)e, (int)(2 * c->surface_triangles - 1));
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
    if (!isfinite(f)) {
      snprintf(reason, n, "surface vertex %d: its contact force is not finite", (int)(k / K));
      return PIOLA_ERROR_NON_FINITE;
    }
    if (!(f >= 0.0)) {
      snprintf(reason, n, "surface vertex %d: its contact force is negative (%g)", (int)(k / K), f);
      return PIOLA_ERROR_INVALID_ARGUMENT;
    }
  }
  return PIOLA_OK;
}

piola_status piola_world_load_state(piola_world *w, const void *buffer, size_t bytes) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (buffer == NULL) {
    PIOLA_MISUSE(w, "buffer != NULL");
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "piola_world_load_state: buffer is NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  const unsigned char *in = buffer;
  /* The friction section is there where the state says so (a state saved under another scheme
   * loads into a world of the multigrid scheme, and the other way round). */
  state_counts c = world_counts(w);
  c.friction = bytes >= PIOLA_STATE_HEADER_BYTES &&
                       (get_u32(in + PIOLA_STATE_OFFSET_FLAGS) & PIOLA_STATE_FLAG_FRICTION) != 0u
                   ? c.vertices
                   : 0;
  c.contact_forces = bytes >= PIOLA_STATE_HEADER_BYTES && (get_u32(in + PIOLA_STATE_OFFSET_FLAGS) &
                                                           PIOLA_STATE_FLAG_CONTACT_FORCES) != 0u
                         ? c.surface_vertices
                         : 0;
  const state_layout l = layout_of(&c);
  char reason[256];
  piola_status s = check_state(w, in, bytes, &c, &l, reason, sizeof reason);
  if (s != PIOLA_OK) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR, "piola_world_load_state: %s", reason);
    return s;
  }
  const bool forces = (get_u32(in + PIOLA_STATE_OFFSET_FLAGS) & PIOLA_STATE_FLAG_FORCES) != 0u;
  int32_t *plastic_first = plastic_offsets(w);
  double *f = w->f;
  if (forces && f == NULL) {
    f = calloc(3 * (size_t)(w->vertex_capacity > 0 ? w->vertex_capacity : 1), sizeof *f);
  }
  /* The solver arrays are built now, where they are not yet, so that the contact lists have
   * their place (a build starts without contacts) and the plastic state its tets. */
  if (plastic_first == NULL || (forces && f == NULL)) {
    s = PIOLA_ERROR_OUT_OF_MEMORY;
  }
  if (s == PIOLA_OK && w->tets_dirty) {
    s = piola_world_build_tets(w);
  }
  if (s != PIOLA_OK) {
    free(plastic_first);
    if (f != w->f) {
      free(f);
    }
    return s;
  }

  for (int32_t i = 0; i < c.vertices; ++i) {
    const unsigned char *r = in + l.vertices + PIOLA_STATE_VERTEX_BYTES * (size_t)i;
    for (int k = 0; k < 3; ++k) {
      w->x[3 * (size_t)i + k] = get_f64(r + 8 * k);
      w->p[3 * (size_t)i + k] = w->x[3 * (size_t)i + k];
      w->v[3 * (size_t)i + k] = get_f64(r + 24 + 8 * k);
      if (f != NULL) {
        f[3 * (size_t)i + k] = get_f64(r + 48 + 8 * k);
      }
    }
    w->w[i] = get_f64(r + 72);
  }
  w->f = f;

  for (int32_t p = 0; p < w->solver.plastic_count; ++p) {
    const int32_t t = w->solver.plastic_tet[p];
    const int32_t record = plastic_first[w->solver.tet_body[t]] + w->solver.tet_local[t];
    const unsigned char *r = in + l.plastic + PIOLA_STATE_PLASTIC_BYTES * (size_t)record;
    for (int k = 0; k < 9; ++k) {
      w->solver.tet_m[9 * (size_t)t + k] = get_f64(r + 8 * k);
    }
    for (int k = 0; k < 6; ++k) {
      w->solver.plastic_strain[6 * (size_t)p + k] = get_f64(r + 72 + 8 * k);
    }
  }
  free(plastic_first);
  /* The multipliers are reset in every substep; zero, they say that no step has run since. */
  memset(w->solver.tet_lambda, 0, sizeof *w->solver.tet_lambda * 2 * (size_t)w->solver.tet_count);
  if (w->cloth.tri_count > 0) {
    memset(w->cloth.tri_lambda, 0, sizeof *w->cloth.tri_lambda * (size_t)w->cloth.tri_count);
  }
  if (w->cloth.bend_count > 0) {
    memset(w->cloth.bend_lambda, 0, sizeof *w->cloth.bend_lambda * (size_t)w->cloth.bend_count);
  }

  /* The contact lists of the last substep: the next narrow phase takes them as the previous. */
  piola_solver_contacts *ct = &w->contacts;
  ct->total = 0;
  ct->overflow = 0;
  for (int32_t sv = 0; sv < c.surface_vertices; ++sv) {
    const unsigned char *r = in + l.contacts + PIOLA_STATE_CONTACT_BYTES * (size_t)sv;
    const int32_t n = get_i32(r);
    ct->contact_count[sv] = n;
    for (int32_t k = 0; k < K; ++k) {
      ct->contact_triangle[K * (size_t)sv + (size_t)k] = k < n ? get_i32(r + 4 + 4 * k) : -1;
    }
    ct->total += n;
  }

  for (int32_t i = 0; i < c.colliders; ++i) {
    piola_collider_slot *cs = &w->collider_slots[w->collider_slot[i]];
    const unsigned char *r = in + l.colliders + PIOLA_STATE_COLLIDER_BYTES * (size_t)i;
    for (int k = 0; k < 3; ++k) {
      cs->position[k] = get_f64(r + 8 + 8 * k);
      cs->velocity[k] = get_f64(r + 64 + 8 * k);
      cs->angular_velocity[k] = get_f64(r + 88 + 8 * k);
    }
    for (int k = 0; k < 4; ++k) {
      cs->rotation[k] = get_f64(r + 32 + 8 * k);
    }
    piola_collider_pose_pack(cs, &w->colliders[i]);
  }

  for (int32_t i = 0, a = 0; i < w->attachment_ids.count; ++i) {
    if (piola_id_pool_alive(&w->attachment_ids, i)) {
      const unsigned char *r = in + l.attachments + PIOLA_STATE_ATTACHMENT_BYTES * (size_t)a++;
      for (int k = 0; k < 3; ++k) {
        w->attachment_slots[i].target[k] = get_f64(r + 8 + 8 * k);
      }
    }
  }
  w->attachments_dirty = true; /* new targets (and, after a build, vertices moved) */

  /* Friction (multigrid worlds): the state's, else none held. */
  piola_solver_newton *nw = &w->newton;
  for (int32_t i = 0; i < nw->vertex_count && nw->anchor != NULL; ++i) {
    const bool saved = i < c.friction; /* the world's vertices, where the section is there */
    const unsigned char *r = in + l.friction + PIOLA_STATE_FRICTION_BYTES * (size_t)(saved ? i : 0);
    nw->anchor_collider[i] = saved ? get_i32(r) : -1;
    for (int a = 0; a < 3; ++a) {
      nw->anchor[3 * (size_t)i + (size_t)a] = saved ? get_f64(r + 8 + 8 * a) : 0.0;
    }
    nw->friction[PIOLA_NEWTON_FRICTION_REALS * (size_t)i + PIOLA_NEWTON_NORMAL_FORCE] =
        saved ? get_f64(r + 32) : 0.0;
  }
  /* Contact forces (multigrid worlds): the state's, else none known. */
  for (int32_t k = 0; k < nw->pair_capacity && nw->pair_entry != NULL; ++k) {
    const bool saved = k < K * c.contact_forces;
    const unsigned char *r =
        in + l.contact_forces + PIOLA_STATE_CONTACT_FORCE_BYTES * (size_t)(saved ? k : 0);
    nw->pair_entry[k] = saved ? get_i32(r) : -1;
    nw->pair_lambda[k] = saved ? get_f64(r + 8) : 0.0;
  }

  w->step_count = (int64_t)get_u64(in + PIOLA_STATE_OFFSET_STEP_COUNT);
  w->simulated_time = get_f64(in + PIOLA_STATE_OFFSET_SIMULATED_TIME);
  w->collider_force_scale = 0.0; /* no step of this state has run yet */
  w->prediction_valid = false;

  /* The host arrays now hold the state: the backend's copy is dropped and uploaded anew before
   * the next step. */
  w->ops->invalidate(w);
  if (w->collider_count > 0) {
    w->ops->colliders_changed(w, 0, w->collider_count);
  }
  return PIOLA_OK;
}

piola_status piola_world_get_collision_surface(piola_world *w, int32_t *vertex_count,
                                               int32_t *triangle_count, int32_t *world_vertex,
                                               int32_t *triangles) {
  PIOLA_RETURN_IF_LOST(w);
  if (w == NULL) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  if (vertex_count == NULL || triangle_count == NULL) {
    PIOLA_MISUSE(w, "vertex_count != NULL && triangle_count != NULL");
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_world_get_collision_surface: vertex_count or triangle_count is NULL");
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  /* The numbering is the solver's: built where it is not yet, as the first step would. */
  piola_status s = w->tets_dirty ? piola_world_build_tets(w) : PIOLA_OK;
  if (s != PIOLA_OK) {
    return s;
  }
  const piola_solver_contacts *ct = &w->contacts;
  if (world_vertex == NULL && triangles == NULL) {
    *vertex_count = ct->vertex_count;
    *triangle_count = ct->triangle_count;
    return PIOLA_OK;
  }
  if ((world_vertex != NULL && *vertex_count < ct->vertex_count) ||
      (triangles != NULL && *triangle_count < ct->triangle_count)) {
    piola_log(&w->def.logger, PIOLA_LOG_ERROR,
              "piola_world_get_collision_surface: room for %d vertices and %d triangles, the "
              "surface has %d and %d",
              (int)*vertex_count, (int)*triangle_count, (int)ct->vertex_count,
              (int)ct->triangle_count);
    return PIOLA_ERROR_COUNT_MISMATCH;
  }
  if (world_vertex != NULL && ct->vertex_count > 0) {
    memcpy(world_vertex, ct->vertex, sizeof *world_vertex * (size_t)ct->vertex_count);
  }
  if (triangles != NULL && ct->triangle_count > 0) {
    memcpy(triangles, ct->triangle, sizeof *triangles * 3 * (size_t)ct->triangle_count);
  }
  *vertex_count = ct->vertex_count;
  *triangle_count = ct->triangle_count;
  return PIOLA_OK;
}
