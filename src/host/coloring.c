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
 *
 * Vertex coloring (vertex block descent, Chen, Liu, Yang, Yuksel 2024, "Vertex Block Descent",
 * parallelization by vertex coloring): vertices that share an item conflict. Greedy first fit in
 * smallest-last order (Matula, Beck 1983, "Smallest-last ordering and clustering and graph coloring
 * algorithms"), which needs at most one color more than the graph's degeneracy, then the same kind
 * of balancing pass, so that the colors (one dependent pass each) have nearly equal sizes.
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

/* ---- Vertex coloring (vertex block descent) ------------------------------------------------ */

/* The vertex conflict graph of the items: CSR neighbour lists, each sorted and without repeats.
 * Returns false when out of memory. */
static bool vertex_graph(const int32_t *items, int32_t item_count, int32_t vertex_count,
                         int32_t **start_out, int32_t **adj_out) {
  int32_t *start = calloc((size_t)vertex_count + 1, sizeof *start);
  if (start == NULL) {
    return false;
  }
  for (int32_t t = 0; t < item_count; ++t) {
    const int32_t *q = items + 4 * (size_t)t;
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4 && q[a] >= 0; ++b) {
        start[q[a] + 1] += b != a && q[b] >= 0;
      }
    }
  }
  for (int32_t v = 0; v < vertex_count; ++v) {
    start[v + 1] += start[v];
  }
  int32_t *adj = malloc(sizeof *adj * (size_t)(start[vertex_count] > 0 ? start[vertex_count] : 1));
  int32_t *fill = malloc(sizeof *fill * (size_t)(vertex_count > 0 ? vertex_count : 1));
  if (adj == NULL || fill == NULL) {
    free(start);
    free(adj);
    free(fill);
    return false;
  }
  memcpy(fill, start, sizeof *fill * (size_t)vertex_count);
  for (int32_t t = 0; t < item_count; ++t) {
    const int32_t *q = items + 4 * (size_t)t;
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4 && q[a] >= 0; ++b) {
        if (b != a && q[b] >= 0) {
          adj[fill[q[a]]++] = q[b];
        }
      }
    }
  }
  /* Sort each list (insertion sort: lists are short) and drop repeats, compacting in place. */
  int32_t out = 0;
  for (int32_t v = 0; v < vertex_count; ++v) {
    const int32_t lo = start[v], hi = start[v + 1];
    for (int32_t i = lo + 1; i < hi; ++i) {
      const int32_t x = adj[i];
      int32_t j = i;
      while (j > lo && adj[j - 1] > x) {
        adj[j] = adj[j - 1];
        --j;
      }
      adj[j] = x;
    }
    start[v] = out;
    for (int32_t i = lo; i < hi; ++i) {
      if (i == lo || adj[i] != adj[i - 1]) {
        adj[out++] = adj[i];
      }
    }
  }
  start[vertex_count] = out;
  free(fill);
  *start_out = start;
  *adj_out = adj;
  return true;
}

piola_status piola_color_vertices(const int32_t *items, int32_t item_count, int32_t vertex_count,
                                  int32_t *colors, int32_t *color_count) {
  *color_count = 0;
  if (vertex_count <= 0) {
    return PIOLA_OK;
  }
  int32_t *start = NULL, *adj = NULL;
  if (!vertex_graph(items, item_count, vertex_count, &start, &adj)) {
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  const int32_t n = vertex_count;
  int32_t max_degree = 0;
  for (int32_t v = 0; v < n; ++v) {
    const int32_t d = start[v + 1] - start[v];
    max_degree = d > max_degree ? d : max_degree;
  }
  /* Smallest-last order (Matula, Beck 1983): repeatedly remove a vertex of least remaining
   * degree (the lowest-numbered among them, for determinism); color in the reverse of the
   * removal order. Buckets of vertices by remaining degree, as doubly linked lists. */
  int32_t *degree = malloc(sizeof *degree * (size_t)n);
  int32_t *head = malloc(sizeof *head * ((size_t)max_degree + 1));
  int32_t *next = malloc(sizeof *next * (size_t)n);
  int32_t *prev = malloc(sizeof *prev * (size_t)n);
  int32_t *order = malloc(sizeof *order * (size_t)n);
  int32_t *stamp = malloc(sizeof *stamp * ((size_t)max_degree + 2));
  int32_t *size = calloc((size_t)max_degree + 2, sizeof *size);
  bool ok = degree && head && next && prev && order && stamp && size;
  if (ok) {
    for (int32_t d = 0; d <= max_degree; ++d) {
      head[d] = -1;
    }
    /* Insert in decreasing index so that each bucket lists its vertices in increasing order. */
    for (int32_t v = n - 1; v >= 0; --v) {
      const int32_t d = start[v + 1] - start[v];
      degree[v] = d;
      prev[v] = -1;
      next[v] = head[d];
      if (head[d] >= 0) {
        prev[head[d]] = v;
      }
      head[d] = v;
    }
    int32_t low = 0;
    for (int32_t k = n - 1; k >= 0; --k) {
      while (head[low] < 0) {
        ++low;
      }
      const int32_t v = head[low];
      head[low] = next[v];
      if (next[v] >= 0) {
        prev[next[v]] = -1;
      }
      order[k] = v;
      degree[v] = -1; /* removed */
      for (int32_t i = start[v]; i < start[v + 1]; ++i) {
        const int32_t u = adj[i];
        if (degree[u] <= 0) {
          continue;
        }
        /* Move u from bucket degree[u] to degree[u] - 1 (at its front). */
        const int32_t d = degree[u];
        if (prev[u] >= 0) {
          next[prev[u]] = next[u];
        } else {
          head[d] = next[u];
        }
        if (next[u] >= 0) {
          prev[next[u]] = prev[u];
        }
        degree[u] = d - 1;
        prev[u] = -1;
        next[u] = head[d - 1];
        if (head[d - 1] >= 0) {
          prev[head[d - 1]] = u;
        }
        head[d - 1] = u;
      }
      low = low > 0 ? low - 1 : 0;
    }
    /* First fit in that order: a vertex takes the lowest color none of its colored neighbours
     * has (at most max_degree + 1 colors). */
    for (int32_t v = 0; v < n; ++v) {
      colors[v] = -1;
    }
    for (int32_t c = 0; c < max_degree + 2; ++c) {
      stamp[c] = -1;
    }
    int32_t count = 0;
    for (int32_t k = 0; k < n; ++k) {
      const int32_t v = order[k];
      for (int32_t i = start[v]; i < start[v + 1]; ++i) {
        if (colors[adj[i]] >= 0) {
          stamp[colors[adj[i]]] = v;
        }
      }
      int32_t c = 0;
      while (stamp[c] == v) {
        ++c;
      }
      colors[v] = c;
      size[c]++;
      count = c + 1 > count ? c + 1 : count;
    }
    /* Balance: a vertex of a color above the mean moves to the smallest color its neighbours
     * allow when that holds at least two vertices fewer, so that no color is a tiny tail (each
     * color is one dependent pass; a tiny one costs a pass for little work). */
    const int32_t mean = n / count;
    for (int pass = 0; pass < 16; ++pass) {
      int32_t moved = 0;
      for (int32_t v = 0; v < n; ++v) {
        const int32_t c = colors[v];
        if (size[c] <= mean) {
          continue;
        }
        for (int32_t i = start[v]; i < start[v + 1]; ++i) {
          stamp[colors[adj[i]]] = n + v; /* a mark no first-fit stamp used */
        }
        int32_t best = -1;
        for (int32_t d = 0; d < count; ++d) {
          if (d != c && stamp[d] != n + v && size[d] + 1 < size[c] &&
              (best < 0 || size[d] < size[best])) {
            best = d;
          }
        }
        for (int32_t i = start[v]; i < start[v + 1]; ++i) {
          stamp[colors[adj[i]]] = -1;
        }
        if (best >= 0) {
          colors[v] = best;
          size[c]--;
          size[best]++;
          moved++;
        }
      }
      if (moved == 0) {
        break;
      }
    }
    *color_count = count;
  }
  free(degree);
  free(head);
  free(next);
  free(prev);
  free(order);
  free(stamp);
  free(size);
  free(start);
  free(adj);
  return ok ? PIOLA_OK : PIOLA_ERROR_OUT_OF_MEMORY;
}

bool piola_vertex_coloring_is_valid(const int32_t *items, int32_t item_count, int32_t vertex_count,
                                    const int32_t *colors) {
  for (int32_t v = 0; v < vertex_count; ++v) {
    if (colors[v] < 0) {
      return false;
    }
  }
  for (int32_t t = 0; t < item_count; ++t) {
    const int32_t *q = items + 4 * (size_t)t;
    for (int a = 0; a < 4; ++a) {
      for (int b = a + 1; b < 4; ++b) {
        if (q[a] >= 0 && q[b] >= 0 &&
            (q[a] >= vertex_count || q[b] >= vertex_count || colors[q[a]] == colors[q[b]])) {
          return false;
        }
      }
    }
  }
  return true;
}
