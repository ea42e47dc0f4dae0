/* Piola graph coloring of constraints (coloring.c). */
#ifndef PIOLA_COLORING_H
#define PIOLA_COLORING_H

#include "piola/piola.h"

#include <stdbool.h>
#include <stdint.h>

/* Greedy graph coloring of tets (no two tets of a color share a vertex) followed by a
 * balancing pass; deterministic. Writes one color per tet and the number of colors. With
 * max_colors > 0 at most that many colors are used; tets left over get color -1.
 * The "tets" may be any constraints of up to 4 vertices: an index of -1 is an unused slot
 * (cloth triangles are colored together with bending stencils as (a, b, c, -1)). */
piola_status piola_color_tets(const int32_t *tets, int32_t tet_count, int32_t vertex_count,
                              int32_t max_colors, int32_t *colors, int32_t *color_count);

/* Whether `colors` is a valid coloring of `tets` (tets of color -1 are not checked). */
bool piola_coloring_is_valid(const int32_t *tets, int32_t tet_count, int32_t vertex_count,
                             const int32_t *colors);

/* Vertex coloring for vertex block descent (Chen, Liu, Yang, Yuksel 2024): no two
 * vertices of one item (a tet, a cloth triangle (a, b, c, -1), a bending stencil) share a
 * color, so a color's vertices take their Newton steps in parallel. Smallest-last greedy order
 * (Matula, Beck 1983), first fit, then a balancing pass towards equal color sizes;
 * deterministic. Writes one color per vertex (vertices of no item get color 0 or any color the
 * balancing gives them) and the number of colors. */
piola_status piola_color_vertices(const int32_t *items, int32_t item_count, int32_t vertex_count,
                                  int32_t *colors, int32_t *color_count);

/* Whether `colors` is a valid vertex coloring of `items` (every vertex colored, no two vertices
 * of an item alike). */
bool piola_vertex_coloring_is_valid(const int32_t *items, int32_t item_count, int32_t vertex_count,
                                    const int32_t *colors);

#endif /* PIOLA_COLORING_H */
