/* Piola id pool: the slots behind every kind of generational id (bodies, colliders,
 * attachments, render meshes), after Box2D v3's id pool. An id is (index1, generation): the
 * slot plus one (0 is never valid) and the generation the slot had when the id was handed out.
 * Freeing a slot raises its generation, so every id of its old object goes stale; a new object
 * takes the lowest free slot. The objects themselves live in an array of the owner's, indexed by
 * slot, with at least `count` entries. */
#ifndef PIOLA_ID_POOL_H
#define PIOLA_ID_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct piola_id_slot {
  uint32_t generation;
  bool alive;
} piola_id_slot;

typedef struct piola_id_pool {
  piola_id_slot *slots;
  int32_t count;    /* slots in use or freed: slots[0 .. count) */
  int32_t capacity; /* slots allocated */
} piola_id_pool;

/* The slot a new object takes: the lowest free one, or `count` when none is free (the pool's
 * array grown to hold it). Nothing is taken yet: piola_id_pool_take() does that once the owner
 * has made room for the object too. -1 when out of memory. */
int32_t piola_id_pool_next(piola_id_pool *pool);

/* Marks slot (from piola_id_pool_next()) alive; returns its generation. */
uint32_t piola_id_pool_take(piola_id_pool *pool, int32_t slot);

/* Frees a live slot: its generation goes up, so the ids naming it go stale. */
void piola_id_pool_free(piola_id_pool *pool, int32_t slot);

/* The live slot an id names, or -1 when the id is stale, out of range or never valid. */
int32_t piola_id_pool_find(const piola_id_pool *pool, int32_t index1, uint32_t generation);

/* Whether slot (< count) holds a live object. */
static inline bool piola_id_pool_alive(const piola_id_pool *pool, int32_t slot) {
  return pool->slots[slot].alive;
}

void piola_id_pool_destroy(piola_id_pool *pool);

#endif /* PIOLA_ID_POOL_H */
