/* Piola solver arrays: the constraints of the live bodies gathered for the solver, sorted by
 * color so that a color is one contiguous range over every body (solver_arrays.c). Built from the
 * bodies when their topology changed, and replaced as a whole. */
#ifndef PIOLA_SOLVER_ARRAYS_H
#define PIOLA_SOLVER_ARRAYS_H

#include "piola/piola.h"

#include <stdbool.h>
#include <stdint.h>

/* Sweeps of the inverted-tet pass at most (piola_world_step): each backend repeats its sweep
 * over the colors until one finds no inverted tet to project, or this many times. One
 * projection lifts a sliver pressed deep through its base only part of the way. */
#define PIOLA_INVERTED_PASSES 4

/* The cloth constraint kinds of the solver. Each kind has its own arrays, sorted by color;
 * colors are shared by the kinds (one coloring per cloth body over its triangles and
 * stencils), so color c is the range kind_first[kind][c] .. + kind_size[kind][c] of every
 * kind, and no two items of one color, of any kind, share a vertex. */
typedef enum piola_cloth_kind {
  PIOLA_KIND_TRIANGLE = 0, /* membrane: piola_cloth_tri_correction */
  PIOLA_KIND_BEND = 1,     /* bending stencil: piola_cloth_bend_correction */
  PIOLA_CLOTH_KIND_COUNT
} piola_cloth_kind;

typedef struct piola_solver_cloth {
  int32_t tri_count;
  int32_t *tri_vertices; /* 4 per triangle: 3 world vertex indices, cloth material index */
  double *tri_dm_inv;    /* 4 per triangle */
  double *tri_area;
  double *tri_lambda;
  int32_t bend_count;
  int32_t *bend_vertices; /* 4 per stencil, world vertex indices */
  double *bend_rest;      /* 6 per stencil (as piola_body.bend_rest) */
  double *bend_lambda;
  int32_t *bend_material;
  int32_t color_count;
  int32_t *kind_first[PIOLA_CLOTH_KIND_COUNT]; /* color_count each */
  int32_t *kind_size[PIOLA_CLOTH_KIND_COUNT];
} piola_solver_cloth;

/* The solver's tets, sorted by color (then the Jacobi tail), with what each schedule needs to
 * walk them; built from the live bodies by piola_world_build_tets and replaced as a whole. */
typedef struct piola_solver_tets {
  int32_t tet_count;
  int32_t *tet_vertices; /* 4 per tet, world vertex indices */
  double *tet_m;         /* 9 per tet: Dm^-1, or M = Dm^-1 F_p^-1 for plastic tets */
  double *tet_volume;
  double *tet_lambda; /* 2 per tet: the multipliers of the (split) constraints */
  int32_t *tet_material;
  int32_t *tet_body;  /* body slot */
  int32_t *tet_local; /* index of the tet within its body */
  int32_t color_count;
  int32_t *color_first, *color_size;
  /* The Jacobi pass: tets [jacobi_first, jacobi_first + jacobi_count) after the colors. Their
   * corrections go to jacobi_delta (4 per tet and corner: dx, dy, dz, 1 if it did work) and
   * are gathered per vertex through a CSR list: vertex jacobi_vertices[i] sums the entries
   * jacobi_incidence[jacobi_start[i] .. jacobi_start[i + 1]) (indices 4 * tail tet + corner). */
  int32_t jacobi_first, jacobi_count;
  int32_t jacobi_vertex_count;
  int32_t *jacobi_vertices, *jacobi_start, *jacobi_incidence;
  double *jacobi_delta;
  /* CPU reference, 4 per world vertex: the support of the vertex in the tet projections
   * (piola_tet_support): the outward unit normal of the collider that pushed it out in this
   * substep's last COLLIDE stage and the motion the projections held back since (m); a held
   * value below zero marks a free vertex. PREDICT frees every vertex. */
  double *support;
  /* Per tet body of the solver arrays (the live bodies in slot order, cloth bodies left out:
   * they have no tets, and the per-stage kernels move their vertices), for the per-body
   * schedule: body_vertex (first, count) of its vertices; body_color (first, count) of its tets
   * in each of the color_count colors; body_jacobi (first, count) of its tail tets and (first,
   * count) of its entries in jacobi_vertices. max_body_tets, max_body_vertices: the largest
   * tet body's counts. */
  int32_t body_count, max_body_tets, max_body_vertices;
  int32_t *body_vertex, *body_color, *body_jacobi;
  /* Plastic tets (in solver order): their solver index, rest Dm^-1 and plastic strain. */
  int32_t plastic_count;
  int32_t *plastic_tet;
  double *plastic_dm_rest; /* 9 per plastic tet */
  double *plastic_strain;  /* 6 per plastic tet */
} piola_solver_tets;

void piola_solver_tets_free(piola_solver_tets *st);
void piola_solver_cloth_free(piola_solver_cloth *c);

/* Builds the solver's color-sorted tet and cloth arrays (and the contact surfaces) from the
 * bodies when w->tets_dirty is set. */
piola_status piola_world_build_tets(piola_world *w);

/* Copies the live plastic state of the solver arrays back into the bodies. */
void piola_world_sync_plastic(piola_world *w);

#endif /* PIOLA_SOLVER_ARRAYS_H */
