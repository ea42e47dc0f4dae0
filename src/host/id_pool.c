/* Piola id pool: one slot-plus-generation scheme for every kind of id (see id_pool.h). */
#include "id_pool.h"

#include "common.h"

#include <stdlib.h>
#include <string.h>

int32_t piola_id_pool_next(piola_id_pool *pool) {
  int32_t slot = 0;
  while (slot < pool->count && pool->slots[slot].alive) {
    ++slot;
  }
  if (slot == pool->count) {
    if (!piola_grow((void **)&pool->slots, sizeof *pool->slots, slot + 1, &pool->capacity)) {
      return -1;
    }
    memset(&pool->slots[slot], 0, sizeof pool->slots[slot]);
  }
  return slot;
}

uint32_t piola_id_pool_take(piola_id_pool *pool, int32_t slot) {
  if (slot == pool->count) {
    pool->count++;
  }
  pool->slots[slot].alive = true;
  return pool->slots[slot].generation;
}

void piola_id_pool_free(piola_id_pool *pool, int32_t slot) {
  pool->slots[slot].alive = false;
  pool->slots[slot].generation++;
}

int32_t piola_id_pool_find(const piola_id_pool *pool, int32_t index1, uint32_t generation) {
  const int32_t slot = index1 - 1;
  if (slot < 0 || slot >= pool->count || !pool->slots[slot].alive ||
      pool->slots[slot].generation != generation) {
    return -1;
  }
  return slot;
}

void piola_id_pool_destroy(piola_id_pool *pool) {
  free(pool->slots);
  memset(pool, 0, sizeof *pool);
}
