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
#include "coloring.h"

#include "common.h"

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
    if (tet[k] >= 0 && bit_get(s->used + (size_t)tet[k] * (size_t)s->words, c)) {
      return false;
    }
  }
  return true;
}

static void mark(coloring_state *s, const int32_t *tet, int32_t c, bool on) {
  for (int k = 0; k < 4; ++k) {
    if (tet[k] < 0) {
      continue; /* an unused slot (a constraint of fewer than 4 vertices) */
    }
    uint64_t *set = s->used + (size_t)tet[k] * (size_t)s->words;
    if (on) {
      bit_set(set, c);
    } else {
      bit_clear(set, c);
    }
  }
}

/* Moves tets from larger into smaller colors: a tet goes to the smallest color its vertices
 * allow when that color holds at least two tets fewer than its own (so every move narrows the
 * spread). Tets of the Jacobi tail (color -1) stay where they are. */
static void balance(coloring_state *s, const int32_t *tets, int32_t tet_count, int32_t *colors,
                    int32_t color_count, int32_t *size) {
  const int32_t mean = tet_count / color_count;
  for (int pass = 0; pass < 8; ++pass) {
    int32_t moved = 0;
    for (int32_t t = 0; t < tet_count; ++t) {
      int32_t c = colors[t];
      if (c < 0 || size[c] <= mean) {
        continue;
      }
      const int32_t *tet = tets + 4 * (size_t)t;
      int32_t best = -1;
      for (int32_t d = 0; d < color_count; ++d) {
        if (d != c && size[d] + 1 < size[c] && (best < 0 || size[d] < size[best]) &&
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

/* Sorts order[] by key, decreasing or increasing, ties by increasing index (a stable merge
 * sort). */
static void sort_by_key(int32_t *order, const int64_t *key, int32_t n, bool decreasing) {
  int32_t *tmp = malloc(sizeof *tmp * (size_t)(n > 0 ? n : 1));
  if (tmp == NULL) {
    return; /* keeps mesh order: still a valid coloring, only a larger tail */
  }
  for (int32_t width = 1; width < n; width *= 2) {
    for (int32_t lo = 0; lo < n; lo += 2 * width) {
      int32_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      int32_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) {
        bool take_b = decreasing ? key[order[b]] > key[order[a]] : key[order[b]] < key[order[a]];
        tmp[o++] = take_b ? order[b++] : order[a++];
      }
      while (a < mid) {
        tmp[o++] = order[a++];
      }
      while (b < hi) {
        tmp[o++] = order[b++];
      }
    }
    memcpy(order, tmp, sizeof *order * (size_t)n);
  }
  free(tmp);
}

piola_status piola_color_tets(const int32_t *tets, int32_t tet_count, int32_t vertex_count,
                              int32_t max_colors, int32_t *colors, int32_t *color_count) {
  if (tet_count <= 0) {
    *color_count = 0;
    return PIOLA_OK;
  }
  /* At most 4 (D - 1) + 1 colors, D = the largest vertex degree. */
  int32_t *degree = calloc((size_t)vertex_count, sizeof *degree);
  int32_t *order = malloc(sizeof *order * (size_t)tet_count);
  int64_t *key = malloc(sizeof *key * (size_t)tet_count);
  if (degree == NULL || order == NULL || key == NULL) {
    free(degree);
    free(order);
    free(key);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t max_degree = 0;
  for (size_t i = 0; i < 4 * (size_t)tet_count; ++i) {
    if (tets[i] < 0) {
      continue;
    }
    int32_t d = ++degree[tets[i]];
    max_degree = d > max_degree ? d : max_degree;
  }
  /* Order by vertex degree. Without a cap, largest degree first (Welsh and Powell 1967): tets
   * around the busiest vertices take the colors first, which reaches the lower bound on the
   * meshes here (60 colors on the Armadillo, 29 on the creature). With a cap, smallest degree
   * first: the many easy tets pack the capped colors and mostly the unavoidable excess around
   * the busiest vertices is left to the Jacobi tail (fewer tets than largest-first or mesh
   * order leave there: bench/LOG.md). Key: the tet's largest
   * vertex degree, then the sum of its degrees. */
  for (int32_t t = 0; t < tet_count; ++t) {
    const int32_t *q = tets + 4 * (size_t)t;
    int32_t mx = 0, sum = 0;
    for (int k = 0; k < 4; ++k) {
      if (q[k] >= 0) {
        mx = degree[q[k]] > mx ? degree[q[k]] : mx;
        sum += degree[q[k]];
      }
    }
    key[t] = (int64_t)mx * 1024 + sum;
    order[t] = t;
  }
  sort_by_key(order, key, tet_count, max_colors <= 0);
  free(key);
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
  for (int32_t i = 0; i < tet_count; ++i) {
    const int32_t t = order[i];
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
  free(order);
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
        if (v == -1) {
          continue; /* an unused slot */
        }
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
