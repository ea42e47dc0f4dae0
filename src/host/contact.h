/* Piola contact between bodies, on the host (contact.c): the collision surfaces of the live
 * bodies gathered for the solver, Morton ordering, and the CPU reference's contact stages. The
 * contact math is kernels/piola_contact.h. */
#ifndef PIOLA_HOST_CONTACT_H
#define PIOLA_HOST_CONTACT_H

#include "piola/piola.h"

#include "piola_contact.h"

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
} piola_solver_contacts;

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
/* The CPU reference's contact stages (host doubles). */
void piola_cpu_broad_phase(piola_world *w);
void piola_cpu_narrow_phase(piola_world *w);
void piola_cpu_contact(piola_world *w);

#endif /* PIOLA_HOST_CONTACT_H */
