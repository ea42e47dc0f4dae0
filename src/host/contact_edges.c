/* Piola edge-edge contacts on the host: the surface edges of the collision surfaces (built with
 * them, piola_contacts_build), and the CPU reference's edge stages in double precision through
 * the functions of kernels/piola_contact_edges.h that the OpenCL kernels call
 * too (Bridson, Fedkiw, Anderson 2002, Sec. 6-7, for the thickness-based edge-edge proximity over
 * the step; Ericson 2004, Sec. 5.1.9, for the closest points of two segments).
 *
 * The edges are the unique edges of the surface triangles, sorted by (lower, higher) surface
 * vertex, so body by body and in the spatial order of their lower vertex; each remembers its
 * owner, the lowest-numbered triangle that has it. The narrow phase runs after the
 * vertex-triangle one, per edge: it looks into the grid of triangle clusters with its box, as a
 * vertex does, tests the edges of the triangles there whose owner the triangle is and whose index
 * is higher than its own (so each pair once), both convex or flat (piola_edge_convex: each
 * cluster marks the edges it owns before it lists its clusters), and keeps its nearest
 * PIOLA_CONTACTS_PER_EDGE, ties by index: the same contacts in any visiting order. The projection
 * writes an edge contact's four corrections to its slot after the vertex-triangle slots in the same
 * delta array, and the slot's entries join the per-vertex lists of triangle-corner entries
 * (corner_start, corner_entry), after the vertex-triangle ones, so that the gather sums a vertex's
 * corrections of both kinds in one fixed order and splits its mass once (piola_contact_split).
 */
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KE PIOLA_CONTACTS_PER_EDGE

/* One triangle side while the edges are built: its surface vertices (lower first), the triangle
 * and which side of it. */
typedef struct edge_side {
  int32_t lo, hi, triangle, side;
} edge_side;

static int compare_sides(const void *pa, const void *pb) {
  const edge_side *a = pa, *b = pb;
  if (a->lo != b->lo) {
    return a->lo < b->lo ? -1 : 1;
  }
  if (a->hi != b->hi) {
    return a->hi < b->hi ? -1 : 1;
  }
  if (a->triangle != b->triangle) {
    return a->triangle < b->triangle ? -1 : 1;
  }
  return (a->side > b->side) - (a->side < b->side);
}

/* Whether the narrow phase skips every pair of an edge that cluster a's triangles own and a
 * higher edge that cluster b's own (b of a's body) by the rules of one body in the rest shape:
 * the edges share a vertex, b's triangle lies in a near window of an end of a's edge
 * (piola_edge_near_cluster), or piola_edge_self_near. */
static bool clusters_never_meet(const piola_solver_contacts *c, int32_t a, int32_t b,
                                double thickness) {
  const double *r = c->vertex_rest;
  for (int32_t ta = c->cluster_first[a]; ta < c->cluster_first[a + 1]; ++ta) {
    for (int ka = 0; ka < 3; ++ka) {
      if (!((c->triangle_owned[ta] >> ka) & 1u)) {
        continue;
      }
      const int32_t e = c->triangle_edge[3 * (size_t)ta + (size_t)ka];
      const int32_t a0 = c->edge[4 * (size_t)e], a1 = c->edge[4 * (size_t)e + 1];
      const int32_t *n0 = c->vertex_near + 2 * (size_t)a0, *n1 = c->vertex_near + 2 * (size_t)a1;
      const uint64_t *m0 = c->vertex_near_mask + 2 * (size_t)a0,
                     *m1 = c->vertex_near_mask + 2 * (size_t)a1;
      for (int32_t tb = c->cluster_first[b]; tb < c->cluster_first[b + 1]; ++tb) {
        if (piola_edge_near_cluster(tb, 1, n0[0], m0[0], n0[1], m0[1], n1[0], m1[0], n1[1],
                                    m1[1])) {
          continue;
        }
        for (int kb = 0; kb < 3; ++kb) {
          const int32_t f = c->triangle_edge[3 * (size_t)tb + (size_t)kb];
          if (!((c->triangle_owned[tb] >> kb) & 1u) || f <= e) {
            continue;
          }
          const int32_t b0 = c->edge[4 * (size_t)f], b1 = c->edge[4 * (size_t)f + 1];
          if (b0 == a0 || b0 == a1 || b1 == a0 || b1 == a1) {
            continue;
          }
          const double reach = fmax(fmax(c->vertex_reach[a0], c->vertex_reach[a1]),
                                    fmax(c->vertex_reach[b0], c->vertex_reach[b1]));
          if (!piola_edge_self_near(piola_vertex_at(r, a0), piola_vertex_at(r, a1),
                                    piola_vertex_at(r, b0), piola_vertex_at(r, b1), reach,
                                    thickness)) {
            return false;
          }
        }
      }
    }
  }
  return true;
}

void piola_cluster_near_windows(piola_solver_contacts *c, int32_t a0, int32_t a1,
                                double thickness) {
  for (int32_t a = a0; a < a1; ++a) {
    int32_t near[2 * PIOLA_NEAR_WINDOW], n = 0;
    for (int32_t b = a - (PIOLA_NEAR_WINDOW - 1); b < a + PIOLA_NEAR_WINDOW; ++b) {
      if (b >= a0 && b < a1 && c->cluster_edge_max[b] > c->cluster_edge_min[a] &&
          clusters_never_meet(c, a, b, thickness)) {
        near[n++] = b;
      }
    }
    int32_t first = a, most = 0;
    for (int32_t i = 0, j = 0; i < n; ++i) { /* windows starting at each near cluster */
      while (j < n && near[j] - near[i] < PIOLA_NEAR_WINDOW) {
        ++j;
      }
      if (j - i > most) {
        most = j - i;
        first = near[i];
      }
    }
    uint64_t mask = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (near[i] >= first && near[i] - first < PIOLA_NEAR_WINDOW) {
        mask |= (uint64_t)1 << (near[i] - first);
      }
    }
    c->cluster_near[a] = first;
    c->cluster_near_mask[a] = mask;
  }
}

/* The wings of the edges (piola_solver_contacts.edge_wing) from the triangle sides sorted by
 * edge: an edge of a one-sided body with exactly two sides, one running from its lower vertex to
 * its higher and one back, gets the third corners of both; any other keeps -1, -1. */
static void edge_wings(piola_solver_contacts *c, const edge_side *sides) {
  const size_t count = 3 * (size_t)c->triangle_count;
  for (size_t i = 0, e = 0; i < count; ++e) {
    size_t j = i + 1;
    while (j < count && sides[j].lo == sides[i].lo && sides[j].hi == sides[i].hi) {
      ++j;
    }
    int32_t *wing = c->edge_wing + 2 * e;
    wing[0] = wing[1] = -1;
    if (j - i == 2 && c->body_filter[4 * (size_t)c->vertex_body[sides[i].lo] + 3] == 0u) {
      for (size_t k = i; k < j; ++k) {
        const int32_t *tri = c->triangle + 3 * (size_t)sides[k].triangle;
        const int side = sides[k].side;
        const bool forward = tri[side] == sides[k].lo; /* runs lower to higher */
        wing[forward ? 0 : 1] = tri[(side + 2) % 3];
      }
      if (wing[0] < 0 || wing[1] < 0) { /* both one way: not wound consistently */
        wing[0] = wing[1] = -1;
      }
    }
    i = j;
  }
}

bool piola_contact_edges_build(piola_solver_contacts *c) {
  const size_t nt = (size_t)(c->triangle_count > 0 ? c->triangle_count : 1);
  edge_side *sides = malloc(sizeof *sides * 3 * nt);
  c->edge = malloc(sizeof *c->edge * 4 * 3 * nt);
  c->triangle_edge = malloc(sizeof *c->triangle_edge * 3 * nt);
  c->edge_wing = malloc(sizeof *c->edge_wing * 2 * 3 * nt);
  c->edge_convex = malloc(3 * nt);
  if (!sides || !c->edge || !c->triangle_edge || !c->edge_wing || !c->edge_convex) {
    free(sides);
    return false;
  }
  for (int32_t t = 0; t < c->triangle_count; ++t) {
    for (int k = 0; k < 3; ++k) {
      const int32_t a = c->triangle[3 * (size_t)t + (size_t)k],
                    b = c->triangle[3 * (size_t)t + (size_t)((k + 1) % 3)];
      edge_side *e = sides + 3 * (size_t)t + (size_t)k;
      e->lo = a < b ? a : b;
      e->hi = a < b ? b : a;
      e->triangle = t;
      e->side = k;
    }
  }
  qsort(sides, 3 * (size_t)c->triangle_count, sizeof *sides, compare_sides);
  int32_t n = 0;
  for (size_t i = 0; i < 3 * (size_t)c->triangle_count; ++i) {
    const edge_side *e = sides + i;
    if (i == 0 || e->lo != sides[i - 1].lo || e->hi != sides[i - 1].hi) {
      int32_t *q = c->edge + 4 * (size_t)n++;
      q[0] = e->lo;
      q[1] = e->hi;
      q[2] = c->vertex_body[e->lo];
      q[3] = e->triangle; /* the first of its sides in the order: the lowest triangle */
    }
    c->triangle_edge[3 * (size_t)e->triangle + (size_t)e->side] = n - 1;
  }
  edge_wings(c, sides);
  free(sides);
  /* Each surface vertex's ring: the triangles that have it, ascending (a counting sort). */
  const size_t nv = (size_t)(c->vertex_count > 0 ? c->vertex_count : 1);
  c->vertex_ring_start = calloc(nv + 1, sizeof *c->vertex_ring_start);
  c->vertex_ring = malloc(sizeof *c->vertex_ring * 3 * nt);
  int32_t *fill = malloc(sizeof *fill * nv);
  if (!c->vertex_ring_start || !c->vertex_ring || !fill) {
    free(fill);
    return false;
  }
  for (size_t i = 0; i < 3 * (size_t)c->triangle_count; ++i) {
    c->vertex_ring_start[c->triangle[i] + 1]++;
  }
  for (int32_t v = 0; v < c->vertex_count; ++v) {
    c->vertex_ring_start[v + 1] += c->vertex_ring_start[v];
    fill[v] = c->vertex_ring_start[v];
  }
  for (int32_t t = 0; t < c->triangle_count; ++t) {
    for (int k = 0; k < 3; ++k) {
      c->vertex_ring[fill[c->triangle[3 * (size_t)t + (size_t)k]]++] = t;
    }
  }
  free(fill);
  c->edge_count = n;
  const size_t nc = (size_t)(c->cluster_count > 0 ? c->cluster_count : 1);
  c->triangle_owned = calloc(nt, sizeof *c->triangle_owned);
  c->cluster_edge_max = malloc(sizeof *c->cluster_edge_max * nc);
  c->cluster_edge_min = malloc(sizeof *c->cluster_edge_min * nc);
  c->cluster_near = malloc(sizeof *c->cluster_near * nc);
  c->cluster_near_mask = malloc(sizeof *c->cluster_near_mask * nc);
  c->edge_cluster = malloc(sizeof *c->edge_cluster * (size_t)(n > 0 ? n : 1));
  if (!c->triangle_owned || !c->cluster_edge_max || !c->cluster_edge_min || !c->cluster_near ||
      !c->cluster_near_mask || !c->edge_cluster) {
    return false;
  }
  for (int32_t i = 0; i < c->cluster_count; ++i) {
    int32_t most = -1, least = INT32_MAX;
    for (int32_t t = c->cluster_first[i]; t < c->cluster_first[i + 1]; ++t) {
      for (int k = 0; k < 3; ++k) {
        const int32_t f = c->triangle_edge[3 * (size_t)t + (size_t)k];
        if (c->edge[4 * (size_t)f + 3] == t) {
          c->triangle_owned[t] |= (uint8_t)(1u << k);
          c->edge_cluster[f] = i;
          most = f > most ? f : most;
          least = f < least ? f : least;
        }
      }
    }
    c->cluster_edge_max[i] = most;
    c->cluster_edge_min[i] = least;
  }
  const size_t ne = (size_t)(n > 0 ? n : 1);
  c->cluster_pair_count = calloc(nc, sizeof *c->cluster_pair_count);
  c->cluster_pair = malloc(sizeof *c->cluster_pair * PIOLA_CLUSTER_PAIRS * nc);
  c->edge_contact_count = calloc(ne, sizeof *c->edge_contact_count);
  c->edge_contact_entry = calloc(KE * ne, sizeof *c->edge_contact_entry);
  /* The edge slots' corrections after the vertex-triangle ones, and their entries in the
   * per-vertex lists. */
  const size_t base = (size_t)piola_edge_delta_base(c);
  double *delta = realloc(c->delta, sizeof *c->delta * 4 * (base + 4 * KE * ne));
  if (delta != NULL) {
    c->delta = delta;
  }
  int32_t *corner =
      realloc(c->corner_entry,
              sizeof *c->corner_entry * (3 * PIOLA_CONTACTS_PER_VERTEX * nv + 4 * KE * ne));
  if (corner != NULL) {
    c->corner_entry = corner;
  }
  return c->cluster_pair_count && c->cluster_pair && c->edge_contact_count &&
         c->edge_contact_entry && delta && corner;
}

void piola_contact_edges_free(piola_solver_contacts *c) {
  free(c->edge);
  free(c->triangle_edge);
  free(c->edge_wing);
  free(c->edge_convex);
  free(c->vertex_ring_start);
  free(c->vertex_ring);
  free(c->triangle_owned);
  free(c->cluster_edge_max);
  free(c->cluster_edge_min);
  free(c->cluster_near);
  free(c->cluster_near_mask);
  free(c->edge_cluster);
  free(c->cluster_pair_count);
  free(c->cluster_pair);
  free(c->edge_contact_count);
  free(c->edge_contact_entry);
}

bool piola_edge_contacts_active(const piola_world *w) {
  return w->def.contacts && w->def.edge_contacts && w->contacts.edge_count > 0;
}

/* ---- Narrow phase -------------------------------------------------------------------- */

/* The ends of surface edge e as world vertices. */
static void edge_ends(const piola_solver_contacts *c, int32_t e, int32_t sv[2], int32_t v[2]) {
  sv[0] = c->edge[4 * (size_t)e];
  sv[1] = c->edge[4 * (size_t)e + 1];
  v[0] = c->vertex[sv[0]];
  v[1] = c->vertex[sv[1]];
}

static piola_box edge_box(const piola_world *w, const int32_t v[2]) {
  return piola_edge_box(piola_vertex_at(w->x, v[0]), piola_vertex_at(w->x, v[1]),
                        piola_vertex_at(w->p, v[0]), piola_vertex_at(w->p, v[1]),
                        (double)w->def.contact_thickness);
}

/* The narrow phase's test of edge e (ends sa, world vertices va, box box) against edge f > e:
 * a contact found is counted in *found and kept among e's nearest. */
static void edge_pair(const piola_world *w, int32_t e, const int32_t sa[2], const int32_t va[2],
                      piola_box box, int32_t f, double *keys, piola_int *entries, piola_int *kept,
                      int32_t *found) {
  const piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)w->def.contact_thickness;
  int32_t sb[2], vb[2];
  edge_ends(c, f, sb, vb);
  if (sb[0] == sa[0] || sb[0] == sa[1] || sb[1] == sa[0] || sb[1] == sa[1]) {
    return;
  }
  const int32_t ba = c->edge[4 * (size_t)e + 2], bb = c->edge[4 * (size_t)f + 2];
  const bool same_body = ba == bb;
  const double *r = c->vertex_rest;
  const double reach = fmax(fmax(c->vertex_reach[sa[0]], c->vertex_reach[sa[1]]),
                            fmax(c->vertex_reach[sb[0]], c->vertex_reach[sb[1]]));
  if (!same_body) {
    const uint32_t *fa = c->body_filter + 4 * (size_t)ba, *fb = c->body_filter + 4 * (size_t)bb;
    if (!piola_contact_bodies_collide(fa[0], fa[1], fb[0], fb[1])) {
      return;
    }
  } else if (c->body_filter[4 * (size_t)ba + 2] == 0u ||
             piola_edge_self_near(piola_vertex_at(r, sa[0]), piola_vertex_at(r, sa[1]),
                                  piola_vertex_at(r, sb[0]), piola_vertex_at(r, sb[1]), reach,
                                  thickness)) {
    return;
  }
  if (!piola_boxes_overlap(box, edge_box(w, vb))) {
    return;
  }
  const piola_v3 xa0 = piola_vertex_at(w->x, va[0]), xa1 = piola_vertex_at(w->x, va[1]),
                 xb0 = piola_vertex_at(w->x, vb[0]), xb1 = piola_vertex_at(w->x, vb[1]);
  const int side = piola_edge_side(xa0, xa1, xb0, xb1);
  double key;
  if (side < 0 || !piola_edge_candidate(xa0, xa1, xb0, xb1, piola_vertex_at(w->p, va[0]),
                                        piola_vertex_at(w->p, va[1]), piola_vertex_at(w->p, vb[0]),
                                        piola_vertex_at(w->p, vb[1]), side, thickness, &key)) {
    return;
  }
  if (same_body && !(piola_edge_self_allowed(piola_vertex_at(r, sa[0]), piola_vertex_at(r, sa[1]),
                                             piola_vertex_at(r, sb[0]), piola_vertex_at(r, sb[1]),
                                             reach, thickness) &&
                     piola_contact_self_untangled(c->turned[va[0]], c->turned[va[1]],
                                                  c->turned[vb[0]], c->turned[vb[1]]))) {
    return;
  }
  (*found)++;
  piola_edge_contact_keep(keys, entries, kept, key, 2 * f + side);
}

/* One edge's query of the narrow phase: the edge, its ends, its box, its ends' near windows, and
 * its nearest contacts so far. */
typedef struct edge_query {
  int32_t e, sa[2], va[2];
  piola_box box;
  const int32_t *n0, *n1;
  const uint64_t *m0, *m1;
  double keys[KE];
  piola_int entries[KE], kept;
  int32_t found;
} edge_query;

/* Whether the query skips cluster i before its box is read: it owns no edge above the query's,
 * or all its triangles lie in the near windows of the edge's ends. */
static bool edge_skips_cluster(const piola_solver_contacts *c, const edge_query *q, int32_t i) {
  const int32_t first = c->cluster_first[i], last = c->cluster_first[i + 1];
  return c->cluster_edge_max[i] <= q->e ||
         piola_edge_near_cluster(first, last - first, q->n0[0], q->m0[0], q->n0[1], q->m0[1],
                                 q->n1[0], q->m1[0], q->n1[1], q->m1[1]);
}

/* The query's tests of the edges that cluster i's triangles own (its box overlaps the edge's). */
static void edge_query_cluster(const piola_world *w, edge_query *q, int32_t i) {
  const piola_solver_contacts *c = &w->contacts;
  for (int32_t t = c->cluster_first[i]; t < c->cluster_first[i + 1]; ++t) {
    if (piola_edge_near_cluster(t, 1, q->n0[0], q->m0[0], q->n0[1], q->m0[1], q->n1[0], q->m1[0],
                                q->n1[1], q->m1[1]) ||
        !piola_boxes_overlap(q->box, piola_box_at(c->triangle_box, t))) {
      continue;
    }
    for (int k = 0; k < 3; ++k) {
      const int32_t f = c->triangle_edge[3 * (size_t)t + (size_t)k];
      if (((c->triangle_owned[t] >> k) & 1u) && f > q->e && c->edge_convex[f]) {
        edge_pair(w, q->e, q->sa, q->va, q->box, f, q->keys, q->entries, &q->kept, &q->found);
      }
    }
  }
}

/* The query's walk of the grid's cells that its box looks into, as a vertex's: for an edge whose
 * cluster met more than PIOLA_CLUSTER_PAIRS clusters. */
static void edge_query_grid(const piola_world *w, edge_query *q) {
  const piola_solver_contacts *c = &w->contacts;
  const double inv_cell = 1.0 / c->cell;
  const piola_box query = piola_grid_vertex(q->box, c->margin);
  piola_int lo[3], hi[3];
  piola_cell_range(query, inv_cell, 3, lo, hi);
  for (piola_int ci = lo[0]; ci <= hi[0]; ++ci) {
    for (piola_int cj = lo[1]; cj <= hi[1]; ++cj) {
      for (piola_int ck = lo[2]; ck <= hi[2]; ++ck) {
        const piola_int bucket = piola_cell_hash(ci, cj, ck, c->bucket_mask);
        for (int32_t b = c->bucket_start[bucket]; b < c->bucket_start[bucket + 1]; ++b) {
          const int32_t i = c->bucket_clusters[b];
          if (edge_skips_cluster(c, q, i)) {
            continue;
          }
          const piola_box cbox = piola_box_at(c->cluster_box, i);
          if (piola_boxes_overlap(q->box, cbox) &&
              piola_pair_cell(query, piola_grid_cluster(cbox, c->margin), inv_cell, ci, cj, ck)) {
            edge_query_cluster(w, q, i);
          }
        }
      }
    }
  }
}

/* Whether surface edge e takes part in the substep's pairs (piola_edge_convex_in_substep), or has
 * no wings: else the narrow phase skips its pairs. */
static bool edge_convex(const piola_world *w, int32_t e) {
  const piola_solver_contacts *c = &w->contacts;
  const int32_t *wing = c->edge_wing + 2 * (size_t)e;
  if (wing[0] < 0) {
    return true;
  }
  const int32_t lo = c->vertex[c->edge[4 * (size_t)e]], hi = c->vertex[c->edge[4 * (size_t)e + 1]];
  const int32_t left = c->vertex[wing[0]], right = c->vertex[wing[1]];
  return piola_edge_convex_in_substep(piola_vertex_at(w->x, lo), piola_vertex_at(w->x, hi),
                                      piola_vertex_at(w->x, left), piola_vertex_at(w->x, right),
                                      piola_vertex_at(w->p, lo), piola_vertex_at(w->p, hi),
                                      piola_vertex_at(w->p, left), piola_vertex_at(w->p, right));
}

/* Cluster a's list of the clusters its edges test this substep (piola_edge_clusters_may_meet,
 * boxes overlapping), from the grid's cells that its box looks into; PIOLA_CLUSTER_PAIRS + 1
 * where there are more, for the convex edges it owns: first, whether each edge that a's triangles
 * own is convex (a cluster whose edges are all concave lists none). */
static void cluster_pairs_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  piola_world *w = ctx;
  piola_solver_contacts *c = &w->contacts;
  const double inv_cell = 1.0 / c->cell;
  for (int32_t a = begin; a < end; ++a) {
    int32_t least = INT32_MAX; /* the lowest convex edge a owns */
    for (int32_t t = c->cluster_first[a]; t < c->cluster_first[a + 1]; ++t) {
      for (int k = 0; k < 3; ++k) {
        if ((c->triangle_owned[t] >> k) & 1u) {
          const int32_t e = c->triangle_edge[3 * (size_t)t + (size_t)k];
          c->edge_convex[e] = edge_convex(w, e) ? 1u : 0u;
          least = c->edge_convex[e] && e < least ? e : least;
        }
      }
    }
    int32_t n = 0;
    int32_t *list = c->cluster_pair + PIOLA_CLUSTER_PAIRS * (size_t)a;
    const int32_t body = c->triangle_body[c->cluster_first[a]];
    const uint32_t *fa = c->body_filter + 4 * (size_t)body;
    const piola_box box = piola_box_at(c->cluster_box, a);
    const piola_box query = piola_grid_vertex(box, c->margin);
    piola_int lo[3], hi[3];
    piola_cell_range(query, inv_cell, 3, lo, hi);
    for (piola_int ci = lo[0]; ci <= hi[0] && least < INT32_MAX; ++ci) {
      for (piola_int cj = lo[1]; cj <= hi[1]; ++cj) {
        for (piola_int ck = lo[2]; ck <= hi[2]; ++ck) {
          const piola_int bucket = piola_cell_hash(ci, cj, ck, c->bucket_mask);
          for (int32_t k = c->bucket_start[bucket]; k < c->bucket_start[bucket + 1]; ++k) {
            const int32_t b = c->bucket_clusters[k];
            const piola_box cbox = piola_box_at(c->cluster_box, b);
            if (c->cluster_edge_max[b] <= least || !piola_boxes_overlap(box, cbox)) {
              continue;
            }
            const int32_t other = c->triangle_body[c->cluster_first[b]];
            const uint32_t *fb = c->body_filter + 4 * (size_t)other;
            const int same = other == body;
            const int collide =
                same ? fa[2] != 0u : piola_contact_bodies_collide(fa[0], fa[1], fb[0], fb[1]);
            if (piola_edge_clusters_may_meet(b, c->cluster_edge_max[b], least, same, collide,
                                             c->cluster_near[a], c->cluster_near_mask[a]) &&
                piola_pair_cell(query, piola_grid_cluster(cbox, c->margin), inv_cell, ci, cj, ck)) {
              if (n < PIOLA_CLUSTER_PAIRS) {
                list[n] = b;
              }
              n += n <= PIOLA_CLUSTER_PAIRS;
            }
          }
        }
      }
    }
    c->cluster_pair_count[a] = n;
  }
}

/* The contacts of edges [begin, end) (a chunk of piola_narrow_pass): each tests the clusters its
 * cluster listed (or walks the grid where the list overflowed) and keeps its nearest. */
static void edge_narrow_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  piola_narrow_job *job = ctx;
  piola_world *w = job->w;
  piola_solver_contacts *c = &w->contacts;
  int32_t total = 0, overflow = 0;
  for (int32_t e = begin; e < end; ++e) {
    edge_query q;
    q.e = e;
    edge_ends(c, e, q.sa, q.va);
    q.box = edge_box(w, q.va);
    q.n0 = c->vertex_near + 2 * (size_t)q.sa[0];
    q.n1 = c->vertex_near + 2 * (size_t)q.sa[1];
    q.m0 = c->vertex_near_mask + 2 * (size_t)q.sa[0];
    q.m1 = c->vertex_near_mask + 2 * (size_t)q.sa[1];
    q.kept = 0;
    q.found = 0;
    const int32_t a = c->edge_cluster[e], listed = c->cluster_pair_count[a];
    if (c->edge_convex[e] && listed > PIOLA_CLUSTER_PAIRS) {
      edge_query_grid(w, &q);
    } else if (c->edge_convex[e]) { /* a concave edge has no pairs (piola_edge_convex) */
      for (int32_t k = 0; k < listed; ++k) {
        const int32_t i = c->cluster_pair[PIOLA_CLUSTER_PAIRS * (size_t)a + (size_t)k];
        if (!edge_skips_cluster(c, &q, i) &&
            piola_boxes_overlap(q.box, piola_box_at(c->cluster_box, i))) {
          edge_query_cluster(w, &q, i);
        }
      }
    }
    c->edge_contact_count[e] = q.kept;
    memcpy(c->edge_contact_entry + KE * (size_t)e, q.entries, sizeof(int32_t) * (size_t)q.kept);
    total += q.kept;
    overflow += q.found - q.kept;
  }
  job->kept[chunk] = total;
  job->dropped[chunk] = overflow;
}

void piola_cpu_edge_narrow_phase(piola_world *w) {
  piola_solver_contacts *c = &w->contacts;
  c->edge_total = 0;
  c->edge_overflow = 0;
  if (!piola_edge_contacts_active(w)) {
    if (c->edge_contact_count != NULL) {
      memset(c->edge_contact_count, 0,
             sizeof *c->edge_contact_count * (size_t)(c->edge_count > 0 ? c->edge_count : 1));
    }
    return;
  }
  piola_pool_for(w->pool, c->cluster_count, 16, cluster_pairs_range, w);
  piola_narrow_pass(w, c->edge_count, edge_narrow_range, &c->edge_total, &c->edge_overflow);
}

/* The four members (surface vertices) of edge contact slot `slot` of edge e: e's ends, then the
 * other edge's. */
static void edge_members(const piola_solver_contacts *c, int32_t e, int32_t slot, int32_t m[4]) {
  const int32_t f = c->edge_contact_entry[slot] >> 1;
  m[0] = c->edge[4 * (size_t)e];
  m[1] = c->edge[4 * (size_t)e + 1];
  m[2] = c->edge[4 * (size_t)f];
  m[3] = c->edge[4 * (size_t)f + 1];
}

void piola_cpu_edge_corner_counts(const piola_solver_contacts *c, int32_t *corner_start) {
  for (int32_t e = 0; e < c->edge_count; ++e) {
    for (int32_t k = 0; k < c->edge_contact_count[e]; ++k) {
      int32_t m[4];
      edge_members(c, e, KE * e + k, m);
      for (int j = 0; j < 4; ++j) {
        corner_start[m[j] + 1]++;
      }
    }
  }
}

void piola_cpu_edge_corner_fill(piola_solver_contacts *c, int32_t *cursor) {
  const int32_t base = piola_edge_delta_base(c);
  for (int32_t e = 0; e < c->edge_count; ++e) {
    for (int32_t k = 0; k < c->edge_contact_count[e]; ++k) {
      const int32_t slot = KE * e + k;
      int32_t m[4];
      edge_members(c, e, slot, m);
      for (int j = 0; j < 4; ++j) {
        c->corner_entry[cursor[m[j]]++] = base + 4 * slot + j;
      }
    }
  }
}

/* ---- Projection ---------------------------------------------------------------------- */

typedef struct edge_contact_job {
  piola_world *w;
  bool measure;
} edge_contact_job;

/* The projections of the contacts of surface edges [begin, end) into their slots, as the
 * vertex-triangle ones (contact.c, project_range): measuring, the frame and the lengths; else the
 * corrections with the split masses. */
static void edge_project_range(void *ctx, int32_t chunk, int32_t begin, int32_t end) {
  (void)chunk;
  const edge_contact_job *job = ctx;
  piola_world *w = job->w;
  const bool measure = job->measure;
  piola_solver_contacts *c = &w->contacts;
  const double thickness = (double)w->def.contact_thickness;
  const double friction = (double)w->def.contact_friction;
  const size_t base = (size_t)piola_edge_delta_base(c);
  for (int32_t e = begin; e < end; ++e) {
    for (int32_t k = 0; k < c->edge_contact_count[e]; ++k) {
      const int32_t slot = KE * e + k;
      int32_t m[4], v[4];
      edge_members(c, e, slot, m);
      double wm[4];
      for (int j = 0; j < 4; ++j) {
        v[j] = c->vertex[m[j]];
        wm[j] = w->w[v[j]] * (measure ? 1.0 : c->mass_split[m[j]]);
      }
      double *out = c->delta + 4 * (base + 4 * (size_t)slot);
      piola_contact_frame_data f;
      if (measure) {
        piola_edge_contact_prepare(piola_vertex_at(w->x, v[0]), piola_vertex_at(w->x, v[1]),
                                   piola_vertex_at(w->x, v[2]), piola_vertex_at(w->x, v[3]),
                                   piola_vertex_at(w->p, v[0]), piola_vertex_at(w->p, v[1]),
                                   piola_vertex_at(w->p, v[2]), piola_vertex_at(w->p, v[3]),
                                   c->edge_contact_entry[slot] & 1, thickness, friction, &f);
      } else {
        f = piola_contact_slot_frame(out);
      }
      piola_v3 dx[4];
      piola_real length[4];
      piola_edge_contact_respond(&f, wm[0], wm[1], wm[2], wm[3], dx, length);
      piola_contact_slot_store(out, measure, &f, dx, length);
    }
  }
}

void piola_cpu_edge_contact_pass(piola_world *w, bool measure) {
  if (w->contacts.edge_total == 0) {
    return;
  }
  edge_contact_job job = {w, measure};
  piola_pool_for(w->pool, w->contacts.edge_count, 256, edge_project_range, &job);
}
