/* Piola bodies: a tet body's or a cloth body's rest data, collision surface and filters, as
 * the world keeps them (body.c, cloth_body.c, body_io.c), and the material tables. */
#ifndef PIOLA_BODY_H
#define PIOLA_BODY_H

#include "piola/piola.h"

#include "piola_cloth.h"
#include "piola_tet.h"

#include <stdbool.h>
#include <stdint.h>

/* From this Poisson ratio on, one constraint per tet (the PBD form, PIOLA_SPLIT_NONE)
 * overshoots the volume mode (lambda/mu >= 4); piola_world_add_tet_body() warns. */
#define PIOLA_ONE_CONSTRAINT_MAX_NU 0.4f

/* The order of a body's tets within each of its colors. It does not change results (tets of a
 * color share no vertex; the Jacobi tets, whose vertices sum their corrections in the tail's
 * order, keep the mesh's order), only speed: it decides which tets a work-item projects together in
 * SIMD lanes (CPU devices) or a warp in its lanes (GPUs), and how the corners' loads of
 * neighbouring work-items meet the caches. Bodies of up to this many tets, whose vertices stay in
 * a core's cache or a work-group's local memory while they are solved, take their tets in Morton
 * order of the rest centroids: the tets that need the SVD path (a region under compression)
 * then share packets instead of sending most packets down that path for one lane. Larger bodies
 * stream their vertices from memory and keep the mesh's order, which a generator's numbering
 * keeps coherent with the vertices' (bench/LOG.md has the measurements of both). */
#define PIOLA_SPATIAL_ORDER_MAX_TETS 16384

typedef struct piola_body {
  int32_t vertex_offset; /* first vertex in the world's vertex arrays */
  int32_t vertex_count;
  int32_t tet_count;
  int32_t material; /* index into world->materials */
  int32_t color_count;
  int32_t *tets;        /* 4 per tet, body-local vertex indices, positive orientation */
  int32_t *colors;      /* color per tet */
  int32_t *color_start; /* color_count + 1 offsets into by_color */
  int32_t *by_color;    /* local tet indices sorted by color (within a color:
                           PIOLA_SPATIAL_ORDER_MAX_TETS) */
  double *dm_inv;       /* 9 per tet, rest Dm^-1 (row-major) */
  double *volume;       /* per tet, rest volume, m^3 */
  /* Plastic state per tet (NULL unless the material is plastic): eps_p (6 per tet) and the
   * effective M = Dm^-1 F_p^-1 (9 per tet). Valid here while world->tets_dirty is set or
   * after piola_world_sync_plastic(); the solver arrays hold the live copy. */
  double *plastic_strain;
  double *m_eff;
  /* Collision surface (built when the body is added): boundary triangles, 3 body-local vertex
   * indices each, outward; the body-local indices of the vertices on them, ascending. */
  int32_t surface_count;
  int32_t *surface;
  int32_t surface_vertex_count;
  int32_t *surface_vertices;
  double *surface_rest;  /* 3 per surface vertex: its rest position (as added), m */
  double *surface_reach; /* per surface vertex: its longest rest tet edge, m */
  /* Its surface vertices' near windows (piola_solver_contacts.vertex_near), 2 each in the
   * solver's spatial order, the first triangles counted from the body's first; computed by
   * piola_contacts_build the first time (NULL before), as they depend on the rest shape only */
  int32_t *near_first;
  uint64_t *near_mask;
  /* Its grid clusters' near windows (piola_solver_contacts.cluster_near), 1 each, the first
   * clusters counted from the body's first; computed with the contact arrays the first time
   * (NULL before), as they depend on the rest shape only */
  int32_t *cluster_near_first;
  uint64_t *cluster_near_mask;
  uint32_t collision_group, collision_mask;
  bool self_collision;
  /* Cloth (cloth == true; tet_count is then 0 and the tet arrays are empty): the membrane
   * triangles and the bending stencils of the interior edges, body-local, colored together:
   * item i < tri_count is triangle i, item tri_count + j bending stencil j. */
  bool cloth;
  int32_t cloth_material; /* index into world->cloth_materials */
  int32_t tri_count;
  int32_t *tris;      /* 3 per triangle, as in the mesh */
  double *tri_dm_inv; /* 4 per triangle: rest Dm^-1 (row-major, 1/m) in the weft/warp frame */
  double *tri_area;   /* per triangle, rest area, m^2 */
  int32_t bend_count; /* 0 when the material's bending stiffness is 0 */
  int32_t *bends;     /* 4 per stencil: edge x0 x1, opposite vertices x2, x3 */
  double *bend_rest;  /* 6 per stencil: K (4), q (1/m^2), v_bar (m) */
  int32_t cloth_color_count;
  int32_t *cloth_color_start; /* cloth_color_count + 1 offsets into cloth_by_color */
  int32_t *cloth_by_color;    /* items sorted by color (item order within a color) */
  /* Vertex block descent (PIOLA_SCHEME_VBD only, else 0 and NULL): the color of each vertex
   * (piola_color_vertices over its tets, or its triangles and stencils). */
  int32_t vertex_color_count;
  int32_t *vertex_colors;
} piola_body;

typedef struct piola_material_entry {
  piola_material def;
  piola_tet_material constants;
  bool plastic;
} piola_material_entry;

typedef struct piola_cloth_material_entry {
  piola_cloth_material def;
  piola_cloth_tri_material tri;
  piola_cloth_bend_material bend; /* unused when def.bending_stiffness == 0 */
} piola_cloth_material_entry;

/* The body behind an id, or NULL (with a misuse report) when the id is invalid. */
piola_body *piola_world_body(const piola_world *w, piola_body_id id);

/* Frees a body's arrays (the record is zeroed). */
void piola_body_free(piola_body *b);

/* A body about to be added, checked and with everything precomputed: its record, its rest
 * positions (3 per vertex, translated) and inverse masses. */
typedef struct piola_body_build {
  piola_body body;
  double *rest;     /* 3 per vertex */
  double *inv_mass; /* per vertex */
  int32_t reoriented;
  int32_t unreferenced;
} piola_body_build;

void piola_body_build_free(piola_body_build *b);

/* Before bodies come or go, or their contact data changes: makes the host arrays current (the
 * backend may be ahead of them) and moves the live plastic state back into the bodies. */
piola_status piola_world_begin_change(piola_world *w);

/* After such a change: the solver arrays are rebuilt at the next step and the backend's state
 * re-uploaded. */
void piola_world_changed(piola_world *w);

/* Adds a prepared body (its record moved into the world, its vertices appended) in the slot
 * reserved for it, with the given material indices; frees what `build` held. Cannot fail:
 * piola_world_reserve_body() made room. */
piola_body_id piola_world_insert_body(piola_world *w, int32_t slot, piola_body_build *build);

/* Makes room for a body of vertex_count vertices (a slot, the body array, the vertex arrays)
 * after piola_world_begin_change(); the slot, or -1 when out of memory (nothing changed). */
int32_t piola_world_reserve_body(piola_world *w, int32_t vertex_count);

/* The collision surface of a tet body (its boundary faces, outward, and the vertices on them
 * with their rest positions and reach), from the rest positions. */
piola_status piola_body_build_surface(piola_body *b, const double *rest);

/* The reach and surface-vertex lists of a body whose surface triangles (b->surface) are known:
 * each vertex's reach is its longest rest edge over `count` elements of `corners` vertices. */
piola_status piola_body_surface_vertices(piola_body *b, const double *rest, const int32_t *elements,
                                         int32_t count, int corners);

/* Whether each of the count elements (tets or triangles: `corners` vertex indices each) names
 * distinct vertices in [0, nv); else logs which (as caller `fn`) and says
 * PIOLA_ERROR_INVALID_MESH. */
piola_status piola_check_elements(const piola_logger *log, const char *fn, const char *kind,
                                  const int32_t *elements, int32_t count, int corners, int32_t nv);

#endif /* PIOLA_BODY_H */
