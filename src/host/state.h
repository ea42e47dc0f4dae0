/* Piola world state (state.c): the layout of the saved state of piola_world_save_state() and
 * piola_world_load_state(), as offsets and record sizes in bytes. The format is described in
 * state.c's module comment and in include/piola/piola.h. */
#ifndef PIOLA_STATE_H
#define PIOLA_STATE_H

#include "piola/piola.h"

#include <stddef.h>
#include <stdint.h>

/* The first 8 bytes of a saved state, and the version of the format this library writes (and
 * the only one it reads). */
#define PIOLA_STATE_MAGIC "PIOLAST"
#define PIOLA_STATE_VERSION 1u

/* The header: offsets of its fields (all little-endian). */
#define PIOLA_STATE_OFFSET_VERSION 8              /* u32 */
#define PIOLA_STATE_OFFSET_HEADER_BYTES 12        /* u32: PIOLA_STATE_HEADER_BYTES */
#define PIOLA_STATE_OFFSET_TOTAL_BYTES 16         /* u64: the whole state */
#define PIOLA_STATE_OFFSET_BODIES 24              /* i32 */
#define PIOLA_STATE_OFFSET_VERTICES 28            /* i32 */
#define PIOLA_STATE_OFFSET_TETS 32                /* i32 */
#define PIOLA_STATE_OFFSET_PLASTIC_TETS 36        /* i32 */
#define PIOLA_STATE_OFFSET_SURFACE_VERTICES 40    /* i32 */
#define PIOLA_STATE_OFFSET_SURFACE_TRIANGLES 44   /* i32 */
#define PIOLA_STATE_OFFSET_COLLIDERS 48           /* i32 */
#define PIOLA_STATE_OFFSET_ATTACHMENTS 52         /* i32 */
#define PIOLA_STATE_OFFSET_CONTACTS_PER_VERTEX 56 /* i32: PIOLA_CONTACTS_PER_VERTEX */
#define PIOLA_STATE_OFFSET_FLAGS 60               /* u32: PIOLA_STATE_FLAG_* */
#define PIOLA_STATE_OFFSET_STEP_COUNT 64          /* i64 */
#define PIOLA_STATE_OFFSET_SIMULATED_TIME 72      /* f64, s */
#define PIOLA_STATE_HEADER_BYTES 80

/* Flag: the world has external forces (piola_body_set_forces was called). */
#define PIOLA_STATE_FLAG_FORCES 1u
/* Flag: the state holds the friction section (the world runs the multigrid scheme). */
#define PIOLA_STATE_FLAG_FRICTION 2u
/* Flag: the state holds the contact forces section (the world runs the multigrid scheme). */
#define PIOLA_STATE_FLAG_CONTACT_FORCES 4u

/* The records that follow the header, section after section, each section's records in the
 * order given in state.c. */
#define PIOLA_STATE_VERTEX_BYTES 80   /* f64 x[3], v[3], f[3], inverse mass */
#define PIOLA_STATE_PLASTIC_BYTES 120 /* f64 M[9] (row-major), plastic strain[6] */
#define PIOLA_STATE_CONTACT_BYTES 36  /* i32 count, entries[PIOLA_CONTACTS_PER_VERTEX] */
/* u32 type (piola_collider_type), u32 0, f64 position[3], rotation[4], velocity[3],
 * angular_velocity[3] */
#define PIOLA_STATE_COLLIDER_BYTES 112
#define PIOLA_STATE_ATTACHMENT_BYTES 32 /* i32 body slot, i32 vertex, f64 target[3] */
/* i32 collider (-1: none), u32 0, f64 anchor[3], normal force */
#define PIOLA_STATE_FRICTION_BYTES 40
/* per slot of a surface vertex's contact list: i32 entry (-1: none), u32 0, f64 normal force */
#define PIOLA_STATE_CONTACT_FORCE_BYTES 16

#endif /* PIOLA_STATE_H */
