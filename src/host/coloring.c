/* Piola graph coloring of tets: tets of one color share no vertex, so a color's projections
 * run in parallel without atomics and in any order with the same result (Fratarcangeli,
 * Tibaldo, Pellacini 2016, "Vivace: a practical Gauss-Seidel method for stable soft body
 * dynamics", Sec. 4, colors the constraint graph greedily for the same reason).
 *
 * Greedy first-fit over the tets, each vertex keeping a bitset of the colors already used
 * around it (a vertex touches at most one tet per color, so that set is exact), then a
 * balancing pass that moves tets from colors above the mean size into the smallest color
 * their vertices allow. Deterministic: the result depends only on the input arrays.
 * With a cap on the number of colors, tets that find no free color are left uncolored (-1):
 * the solver projects them together in one Jacobi pass.
 * The lower bound on the color count is the largest number of tets sharing a vertex.
 */
#include "piola_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct coloring_state {
  int32_t words;  /* 64-bit words per vertex bitset */
  uint64_t *used; /* vertex_count * words */
} coloring_state;

static bool bit_get(const uint64_t *set, int32_t c) {
  return (set[c >> 6] >> (c & 63)) & 1u;
}
static void bit_set(uint64_t *set, int32_t c) {
  set[c >> 6] |= (uint64_t)1 << (c & 63);
}
static void bit_clear(uint64_t *set, int32_t c) {
  set[c >> 6] &= ~((uint64_t)1 << (c & 63));
}

static bool color_free(const coloring_state *s, const int32_t *tet, int32_t c) {
  for (int k = 0; k < 4; ++k) {
    if (bit_get(s->used + (size_t)tet[k] * (size_t)s->words, c)) {
      return false;
    }
  }
  return true;
}

static void mark(coloring_state *s, const int32_t *tet, int32_t c, bool on) {
  for (int k = 0; k < 4; ++k) {
    uint64_t *set = s->used + (size_t)tet[k] * (size_t)s->words;
    if (on) {
      bit_set(set, c);
    } else {
      bit_clear(set, c);
    }
  }
}

/* Moves tets out of colors above the target size into the smallest allowed color (tets of the
 * Jacobi tail, color -1, stay where they are). */
static void balance(coloring_state *s, const int32_t *tets, int32_t tet_count, int32_t *colors,
                    int32_t color_count, int32_t *size) {
  int32_t target = (tet_count + color_count - 1) / color_count;
  for (int pass = 0; pass < 4; ++pass) {
    int32_t moved = 0;
    for (int32_t t = 0; t < tet_count; ++t) {
      int32_t c = colors[t];
      if (c < 0 || size[c] <= target) {
        continue;
      }
      const int32_t *tet = tets + 4 * (size_t)t;
      int32_t best = -1;
      for (int32_t d = 0; d < color_count; ++d) {
        if (d != c && size[d] < target && (best < 0 || size[d] < size[best]) &&
            color_free(s, tet, d)) {
          best = d;
        }
      }
      if (best >= 0) {
        mark(s, tet, c, false);
        mark(s, tet, best, true);
        colors[t] = best;
        size[c]--;
        size[best]++;
        moved++;
      }
    }
    if (moved == 0) {
      break;
    }
  }
}

piola_status piola_color_tets(const int32_t *tets, int32_t tet_count, int32_t vertex_count,
                              int32_t max_colors, int32_t *colors, int32_t *color_count) {
  if (tet_count <= 0) {
    *color_count = 0;
    return PIOLA_OK;
  }
  /* At most 4 (D - 1) + 1 colors, D = the largest vertex degree. */
  int32_t *degree = calloc((size_t)vertex_count, sizeof *degree);
  if (degree == NULL) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t max_degree = 0;
  for (size_t i = 0; i < 4 * (size_t)tet_count; ++i) {
    int32_t d = ++degree[tets[i]];
    max_degree = d > max_degree ? d : max_degree;
  }
  free(degree);
  int32_t limit = 4 * (max_degree - 1) + 1;
  if (max_colors > 0 && max_colors < limit) {
    limit = max_colors;
  }
  coloring_state s;
  s.words = (limit + 63) / 64;
  s.used = calloc((size_t)vertex_count * (size_t)s.words, sizeof *s.used);
  int32_t *size = calloc((size_t)limit, sizeof *size);
  if (s.used == NULL || size == NULL) {
    free(s.used);
    free(size);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t count = 0;
  for (int32_t t = 0; t < tet_count; ++t) {
    const int32_t *tet = tets + 4 * (size_t)t;
    int32_t c = 0;
    while (c < limit && !color_free(&s, tet, c)) {
      ++c;
    }
    if (c == limit) {
      colors[t] = -1; /* no color left under the cap: the Jacobi tail */
      continue;
    }
    colors[t] = c;
    mark(&s, tet, c, true);
    size[c]++;
    count = c + 1 > count ? c + 1 : count;
  }
  if (count > 0) {
    balance(&s, tets, tet_count, colors, count, size);
  }
  free(s.used);
  free(size);
  *color_count = count;
  return PIOLA_OK;
}

bool piola_coloring_is_valid(const int32_t *tets, int32_t tet_count, int32_t vertex_count,
                             const int32_t *colors) {
  /* For each color, no vertex may be touched twice: stamp vertices with (color, tet). */
  int32_t color_count = 0;
  for (int32_t t = 0; t < tet_count; ++t) {
    if (colors[t] < -1) {
      return false;
    }
    color_count = colors[t] + 1 > color_count ? colors[t] + 1 : color_count;
  }
  int32_t *order = malloc(sizeof *order * (size_t)(tet_count > 0 ? tet_count : 1));
  int32_t *start = calloc((size_t)color_count + 1, sizeof *start);
  int32_t *stamp = malloc(sizeof *stamp * (size_t)(vertex_count > 0 ? vertex_count : 1));
  bool ok = order != NULL && start != NULL && stamp != NULL;
  if (ok) {
    int32_t colored = 0;
    for (int32_t t = 0; t < tet_count; ++t) {
      if (colors[t] >= 0) {
        start[colors[t] + 1]++;
        colored++;
      }
    }
    for (int32_t c = 0; c < color_count; ++c) {
      start[c + 1] += start[c];
    }
    for (int32_t t = 0; t < tet_count; ++t) {
      if (colors[t] >= 0) {
        order[start[colors[t]]++] = t;
      }
    }
    tet_count = colored; /* the uncolored tail is not checked: it is solved by Jacobi */
    for (int32_t v = 0; v < vertex_count; ++v) {
      stamp[v] = -1;
    }
    for (int32_t i = 0; i < tet_count && ok; ++i) {
      int32_t t = order[i];
      for (int k = 0; k < 4; ++k) {
        int32_t v = tets[4 * (size_t)t + k];
        if (v < 0 || v >= vertex_count || stamp[v] == colors[t]) {
          ok = false;
          break;
        }
        stamp[v] = colors[t];
      }
    }
  }
  free(order);
  free(start);
  free(stamp);
  return ok;
}
