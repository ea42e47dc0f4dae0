/* Piola contact between bodies, on the host (contact.c): the collision surfaces of the live
 * bodies gathered for the solver, Morton ordering, and the CPU reference's contact stages. The
 * contact math is kernels/piola_contact.h. */
#ifndef PIOLA_HOST_CONTACT_H
#define PIOLA_HOST_CONTACT_H

#include "piola/piola.h"

#include "piola_contact.h"
#include "piola_contact_edges.h"
#include "thread_pool.h"

#include <stdbool.h>
#include <stdint.h>

/* The collision surfaces of the live bodies, built with the solver's tet arrays (contact.c),
 * and the CPU reference's per-substep contact state. Surface vertices ("sv") and triangles are
 * numbered body by body, each body's in Morton order of the rest shape (piola_spatial_order);
 * triangles refer to surface vertices. */
typedef struct piola_solver_contacts {
  int32_t vertex_count; /* surface vertices */
  int32_t *vertex;      /* world vertex index of each */
  int32_t *vertex_body; /* dense body index of each */
  double *vertex_rest;  /* 3 each: rest position */
  double *vertex_reach; /* each: longest rest tet edge at the vertex (self-contact rule) */
  /* 2 each: the first triangles of the vertex's two near windows, PIOLA_NEAR_WINDOW triangles of
   * its own body each, consecutive in this order; vertex_near_mask, 2 each: bit k of a window's
   * mask marks its triangle first + k as too near the vertex in the rest shape to touch it
   * (near_windows, piola_contact_near) */
  int32_t *vertex_near;
  uint64_t *vertex_near_mask;
  int32_t triangle_count; /* surface triangles */
  int32_t *triangle;      /* 3 surface-vertex indices each, outward */
  int32_t *triangle_body; /* dense body index of each */
  /* the grid's clusters: cluster i holds triangles cluster_first[i] .. cluster_first[i + 1] - 1
   * (consecutive, of one body, at most PIOLA_CLUSTER_TRIANGLES; cluster_count + 1 entries) */
  int32_t cluster_count;
  int32_t *cluster_first;
  int32_t body_count;
  uint32_t *body_filter; /* 4 per dense body: group, mask, self-collision, two-sided (0/1) */
  int32_t bucket_mask;   /* hash table of bucket_mask + 1 buckets (a power of two) */
  /* Per substep, CPU reference: the grid (cell size, triangle boxes, buckets), the contacts
   * (per surface vertex: count and triangles, PIOLA_CONTACTS_PER_VERTEX slots), each slot's
   * four corrections (slot * 4 + corner: the vertex, then the triangle's corners; the
   * correction in x, y, z and its length), and per surface vertex the
   * list of (slot * 4 + corner) entries where it is a triangle's corner, ascending. */
  double cell;
  double margin;        /* the grid's margin (piola_grid_margin) */
  double *triangle_box; /* 6 per triangle: lo, hi */
  double *cluster_box;  /* 6 per cluster: the union of its triangles' boxes */
  /* bucket b holds bucket_clusters[bucket_start[b] .. bucket_start[b + 1]): the clusters
   * entered into the cells that hash to b (at most PIOLA_CELLS_PER_CLUSTER entries each) */
  int32_t *bucket_start, *bucket_clusters;
  int32_t *bucket_cursor, *vertex_cursor; /* scratch of the counting sorts */
  int32_t *contact_count, *contact_triangle;
  int32_t *previous_count, *previous_triangle; /* the previous substep's contacts */
  /* Per surface vertex: into how many parts its mass is split among its contacts (>= 1; mass
   * splitting, piola_contact_split): written by each iteration's measuring pass, read by its
   * projecting pass */
  double *mass_split;
  double *delta;
  int32_t *corner_start, *corner_entry;
  /* CPU reference, per world vertex: whether a tet at it is inverted at the start of the
   * substep (the narrow phase's marks, piola_contact_self_untangled) */
  unsigned char *turned;
  int32_t total, overflow; /* kept and dropped contacts of the last substep */
  /* Surface edges (kernels/piola_contact_edges.h), the unique edges of the
   * triangles, numbered body by body, each body's in ascending order of (lower, higher) surface
   * vertex: edge e joins surface vertices edge[4 e] < edge[4 e + 1], of dense body edge[4 e + 2];
   * edge[4 e + 3] is its owner, the lowest-numbered triangle that has it. triangle_edge, 3 per
   * triangle: the edges of its corners (0, 1), (1, 2), (2, 0). */
  int32_t edge_count;
  int32_t *edge;
  int32_t *triangle_edge;
  /* Per edge e, its wings: the third corners of its triangles (lower, higher, edge_wing[2 e]) and
   * (higher, lower, edge_wing[2 e + 1]), both -1 where it is always tested (an edge of a
   * two-sided body, of one triangle, or of more than two); per substep, CPU reference, whether it
   * is convex or flat at the start or the prediction (piola_edge_convex), else the narrow phase
   * skips it. */
  int32_t *edge_wing;
  unsigned char *edge_convex;
  /* Per surface vertex v, its ring: the triangles that have it, vertex_ring[vertex_ring_start[v]
   * .. vertex_ring_start[v + 1]), ascending (piola_contact_neighbour_releases) */
  int32_t *vertex_ring_start, *vertex_ring;
  /* per triangle: bit k set where it owns its edge k (triangle_edge[3 t + k]); per cluster of the
   * grid: the highest edge its triangles own, -1 if none (an edge tests only higher edges, so it
   * skips the clusters that own none) */
  uint8_t *triangle_owned;
  int32_t *cluster_edge_max;
  /* Per cluster: the lowest edge its triangles own (INT32_MAX if none) and its near window among
   * the clusters of its body (cluster_near, cluster_near_mask: bit k marks cluster
   * cluster_near + k, whose edges its own never meet; piola_edge_clusters_may_meet); per edge,
   * the cluster of its owner triangle. */
  int32_t *cluster_edge_min, *cluster_near;
  uint64_t *cluster_near_mask;
  int32_t *edge_cluster;
  /* Per substep, CPU reference: per cluster the clusters its edges test (cluster_pair,
   * PIOLA_CLUSTER_PAIRS each) and how many; more than PIOLA_CLUSTER_PAIRS: its edges walk the
   * grid */
  int32_t *cluster_pair_count, *cluster_pair;
  /* Per substep, CPU reference: per surface edge its contacts (count, and
   * PIOLA_CONTACTS_PER_EDGE slots of entries 2 f + side: the other edge f, piola_edge_side), and
   * the kept and dropped edge-edge contacts of the last substep. Each slot's four corrections
   * (a's ends, then b's) follow the vertex-triangle slots in delta, at entry
   * edge_delta_base() + 4 slot + member, and are listed in corner_entry like a triangle's
   * corners. */
  int32_t *edge_contact_count, *edge_contact_entry;
  int32_t edge_total, edge_overflow;
} piola_solver_contacts;

/* The delta entry (4 reals each) of the first edge-contact slot's first member: after the
 * PIOLA_CONTACTS_PER_VERTEX slots of 4 entries of every surface vertex. */
static inline int32_t piola_edge_delta_base(const piola_solver_contacts *c) {
  return 4 * PIOLA_CONTACTS_PER_VERTEX * (c->vertex_count > 0 ? c->vertex_count : 1);
}

/* An item (a point, a tet, a triangle) with its Morton key. */
typedef struct piola_keyed_index {
  uint64_t key;
  int32_t index;
} piola_keyed_index;

/* Orders n points (3 coordinates each) along the Morton curve (Z-order) of their bounding cube,
 * ties by index: order[i].index is the i-th. */
void piola_spatial_order(const double *points, int32_t n, piola_keyed_index *order);

/* The centroids of n elements of `corners` vertices each (element e: elements[corners * e ..
 * corners * e + corners), each vertex v taken as map[v] where map is not NULL) of points (3
 * coordinates per vertex), into centroid (3 per element): the keys of piola_spatial_order for
 * tets and triangles. */
void piola_centroids(const double *points, const int32_t *elements, int corners, const int32_t *map,
                     int32_t n, double *centroid);

/* Builds w->contacts from the live bodies (called with the tet arrays): their surface vertices
 * and triangles, body after body, each body's in Morton order of the rest shape. */
piola_status piola_contacts_build(piola_world *w);
void piola_contacts_free(piola_solver_contacts *c);
/* Whether contacts run: on in the def and some surface to collide. */
bool piola_contacts_active(const piola_world *w);
/* Whether some body collides with itself (its self-collision on). */
bool piola_contacts_any_self(const piola_solver_contacts *c);
/* Marks (mark[world vertex] = 1) the vertices in the given contact lists of a substep: each
 * surface vertex with contacts and the corners of its triangles (count, triangle: the
 * vertex-triangle lists, as c->contact_count, c->contact_triangle), and the ends of both edges of
 * each edge-edge contact (edge_count, edge_entry: as c->edge_contact_count, c->edge_contact_entry;
 * NULL without edge contacts). */
void piola_contacts_mark(const piola_solver_contacts *c, const int32_t *count,
                         const int32_t *triangle, const int32_t *edge_count,
                         const int32_t *edge_entry, uint8_t *mark);
/* The CPU reference's contact stages (host doubles). */
/* A narrow phase's pass on the world's threads (CPU reference): `range`, a piola_pool_for() body
 * over `count` items whose context is a piola_narrow_job, records each chunk's kept and dropped
 * pairs; their sums go to *kept and *dropped. */
typedef struct piola_narrow_job {
  piola_world *w;
  int32_t kept[PIOLA_MAX_CPU_THREADS], dropped[PIOLA_MAX_CPU_THREADS];
} piola_narrow_job;
void piola_narrow_pass(piola_world *w, int32_t count, piola_range_fn *range, int32_t *kept,
                       int32_t *dropped);
void piola_cpu_broad_phase(piola_world *w);
void piola_cpu_narrow_phase(piola_world *w);
void piola_cpu_contact(piola_world *w);

/* Vertex i of an array of 3 doubles per vertex (w->x, w->p). */
static inline piola_v3 piola_vertex_at(const double *xyz, int32_t i) {
  return piola_v3_make(xyz[3 * (size_t)i], xyz[3 * (size_t)i + 1], xyz[3 * (size_t)i + 2]);
}

/* The set bits of m (the near windows' masks). */
static inline int piola_popcount64(uint64_t m) {
  int n = 0;
  for (; m != 0; m &= m - 1) {
    n++;
  }
  return n;
}

/* Box i of an array of 6 doubles per box (lo, hi: c->triangle_box, c->cluster_box). */
static inline piola_box piola_box_at(const double *boxes, int32_t i) {
  piola_box r;
  r.lo = piola_vertex_at(boxes, 2 * i);
  r.hi = piola_vertex_at(boxes, 2 * i + 1);
  return r;
}

/* A contact slot's 16 doubles in c->delta (the vertex-triangle and the edge-edge contacts
 * alike): after the measuring pass, its frame (n, b, tangent, then depth and removed) with each
 * member's correction length in the fourth double of its four; after the projecting pass, the
 * four members' corrections (x, y, z, length). piola_contact_slot_frame() reads the frame back,
 * piola_contact_slot_store() writes either. */
piola_contact_frame_data piola_contact_slot_frame(const double *slot);
void piola_contact_slot_store(double *slot, bool measure, const piola_contact_frame_data *f,
                              const piola_v3 dx[4], const piola_real length[4]);
/* Edge-edge contacts (contact_edges.c). Whether they run: contacts and def.edge_contacts on and
 * some surface edge. */
bool piola_edge_contacts_active(const piola_world *w);
/* The surface edges of c's triangles (called by piola_contacts_build once they are placed), with
 * the edge contacts' lists and room for their slots in c->delta and c->corner_entry; false when
 * out of memory (c is then freed by its owner as usual). */
bool piola_contact_edges_build(piola_solver_contacts *c);
/* The near windows (cluster_near, cluster_near_mask) of clusters [a0, a1), the clusters of one
 * body (after piola_contact_edges_build): of the clusters within PIOLA_NEAR_WINDOW - 1 of each in
 * the solver's order (its spatial neighbourhood), those whose edges its own never meet (every
 * pair shares a vertex, lies in an end's near window or within the self-contact bound in the
 * rest shape), in the window of PIOLA_NEAR_WINDOW consecutive clusters that holds the most. */
void piola_cluster_near_windows(piola_solver_contacts *c, int32_t a0, int32_t a1, double thickness);
void piola_contact_edges_free(piola_solver_contacts *c);
/* The CPU reference's edge stages: each edge's contacts (after the vertex-triangle narrow phase,
 * whose grid and marks it reads); the members of the edge contacts counted into corner_start
 * (before its scan: entry sv + 1 per member) and their entries filled into corner_entry through
 * cursor (after the vertex-triangle ones); one pass of the edge contacts' projection into their
 * slots (before the gather). */
void piola_cpu_edge_narrow_phase(piola_world *w);
void piola_cpu_edge_corner_counts(const piola_solver_contacts *c, int32_t *corner_start);
void piola_cpu_edge_corner_fill(piola_solver_contacts *c, int32_t *cursor);
void piola_cpu_edge_contact_pass(piola_world *w, bool measure);

#endif /* PIOLA_HOST_CONTACT_H */
