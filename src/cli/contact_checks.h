/* Checks of body-body contact on a world's state: how many surface vertices lie inside another
 * body (interpenetration) or inside their own body away from their own tets (a body folded
 * through itself, or a vertex pressed into a tet that was near it at rest, where the library
 * makes no self-contact by design: the two are told apart by the rest shape). Each test is
 * point-in-tet with barycentric coordinates; the tets of all bodies are found through a uniform
 * grid over their bounding boxes, so 100 Armadillos (118000 vertices, 371700 tets) take a few
 * tens of milliseconds. Positions come as plain float arrays per body, so the tests and the
 * piola program can feed them from any world. */
#ifndef PIOLA_CLI_CONTACT_CHECKS_H
#define PIOLA_CLI_CONTACT_CHECKS_H

#include <stdint.h>

/* A vertex is inside a tet when each of its four barycentric coordinates is above this: a
 * vertex resting on another body's surface (or on a face of its own tets) does not count, one
 * pushed in by more than about 1e-4 of the tet's height does. */
#define CONTACT_CHECK_BARYCENTRIC_TOLERANCE 1e-4

/* One body's state as the checks read it. */
typedef struct check_body {
  const float *positions; /* m; 3 per vertex */
  int32_t vertex_count;
  const int32_t *tets; /* 4 body-local vertex indices per tet */
  int32_t tet_count;
  /* Body-local indices of the vertices to test, e.g. its surface vertices; NULL tests every
   * vertex of the body. */
  const int32_t *queries;
  int32_t query_count;
  /* What tells a vertex pressed into a tet near it from one folded through its body
   * (count_vertices_inside_own_body): the body's rest positions (m, 3 per vertex) and each
   * vertex's self-contact bound (m: the rest distance within which the library makes no contact
   * between a surface vertex and a triangle of its own body, piola_contact_self_bound in
   * kernels/piola_contact.h). NULL (either): every vertex inside its own body counts as far. */
  const float *rest_positions;
  const float *self_bound;
} check_body;

/* The vertices to test (bodies[b].queries, or all) that lie strictly inside a tet of another
 * body (CONTACT_CHECK_BARYCENTRIC_TOLERANCE). Each vertex counts once. Tets or vertices with
 * non-finite coordinates are skipped (count NaNs separately). Returns -1 when out of memory or
 * when an index is out of range. */
int64_t count_vertices_inside_other_bodies(const check_body *bodies, int32_t body_count);

/* The vertices to test that lie strictly inside a tet of their own body that does not have
 * them as a corner: a body that folded into itself. A valid mesh at rest gives 0. *far (may be
 * NULL) receives how many of them lie in a tet that was farther from them in the rest shape
 * than their self-contact bound (check_body.self_bound): a fold that a self-contact should have
 * stopped. The others were pressed into a tet within the bound, whose triangles the library
 * leaves to the elastic solve (a sole flattened under a pile). Returns -1 when out of memory or
 * when an index is out of range. */
int64_t count_vertices_inside_own_body(const check_body *bodies, int32_t body_count, int64_t *far);

/* Each vertex's self-contact bound (m) for check_body.self_bound: piola_contact_self_bound of
 * its longest tet edge in the rest shape `rest` (3 per vertex) and the world's contact
 * thickness (m). */
void self_contact_bounds(const float *rest, int32_t vertex_count, const int32_t *tets,
                         int32_t tet_count, float thickness, float *bound);

/* The distinct vertices of `triangle_count` triangles (3 indices each, below vertex_count),
 * in increasing order, into out[] (room for vertex_count); returns how many, or -1 when an
 * index is out of range or memory runs out. */
int32_t surface_vertex_list(const int32_t *triangles, int32_t triangle_count, int32_t vertex_count,
                            int32_t *out);

#endif /* PIOLA_CLI_CONTACT_CHECKS_H */
