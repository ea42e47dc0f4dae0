/* Piola vertex block descent (vbd.c): the solver's vertex colors and per-vertex element lists,
 * and the CPU reference's SOLVE_VERTICES stage. */
#ifndef PIOLA_VBD_H
#define PIOLA_VBD_H

#include "piola/piola.h"

#include "solver_arrays.h"

#include <stdbool.h>
#include <stdint.h>

/* An element entry of a vertex's list: (element << 4) | (kind << 2) | corner, the element an
 * index into its kind's solver arrays (tets: piola_solver_tets; triangles and stencils:
 * piola_solver_cloth), corner the vertex's place in it (0..3). */
#define PIOLA_VBD_TET 0
#define PIOLA_VBD_TRIANGLE 1
#define PIOLA_VBD_BEND 2
#define PIOLA_VBD_ENTRY(element, kind, corner) (((element) << 4) | ((kind) << 2) | (corner))
#define PIOLA_VBD_ELEMENT(e) ((e) >> 4)
#define PIOLA_VBD_KIND(e) (((e) >> 2) & 3)
#define PIOLA_VBD_CORNER(e) ((e)&3)

/* The vertex colors of the live bodies and each vertex's elements, built with the other solver
 * arrays under PIOLA_SCHEME_VBD (empty otherwise). Color c is the range color_first[c] ..
 * + color_size[c] of `vertices` (world vertex indices: every body's vertices of its color c, the
 * bodies in slot order, each body's in increasing index); vertex v's elements are
 * elements[element_start[v] .. element_start[v + 1]) (tets in solver order, then triangles,
 * then stencils: a fixed order, so the sums are repeatable). */
typedef struct piola_solver_vbd {
  int32_t color_count;
  int32_t *color_first, *color_size;
  int32_t vertex_count; /* entries of `vertices` */
  int32_t *vertices;
  int32_t *element_start; /* world vertex_count + 1 */
  int32_t *elements;
  int32_t element_count;
  /* The bodies with vertex colors, in slot order (the order of the colors' vertices): 4 each,
   * the first vertex and the vertex count, the first surface vertex in the contact arrays
   * (piola_solver_contacts) and the surface vertex count; for the rigid fit of free bodies. */
  int32_t body_count;
  int32_t *body_range;
  /* CPU reference: 3 per world vertex, the velocity at the start of the last substep (m/s), for
   * the initial guess; valid once have_last is set (the first substep after a build has none). */
  double *v_last;
  bool have_last;
  /* The initial guess: true (the default), the paper's adaptive one (Sec. 3.7); false, y. */
  bool adaptive_init;
  /* CPU reference, with def.vbd_chebyshev_rho > 0: 3 per world vertex each, the positions of
   * the iterations two back (m), by the iteration's parity; omega of the last iteration. */
  double *chebyshev[2];
  double chebyshev_omega;
} piola_solver_vbd;

void piola_solver_vbd_free(piola_solver_vbd *v);

/* Builds w's vertex lists from the bodies and the new tet and cloth solver arrays st, sc into
 * *out (all or nothing; empty unless the scheme is PIOLA_SCHEME_VBD). */
piola_status piola_solver_vbd_build(const piola_world *w, const piola_solver_tets *st,
                                    const piola_solver_cloth *sc, piola_solver_vbd *out);

/* Whether iteration k (1-based) ends with the rigid fit of the free bodies (vbd.c, "The rigid
 * modes of a free body"): the last of at least 2 (the first has no collider's pushes of the
 * substep to tell a free body by); piola_vbd_fits_free_bodies, the iteration in w->iteration. */
bool piola_vbd_fit_after(const piola_world *w, int32_t k);
bool piola_vbd_fits_free_bodies(const piola_world *w);

/* Chebyshev acceleration (def.vbd_chebyshev_rho): whether iteration k (1-based) ends with a
 * Chebyshev pass: *blend, it extrapolates the positions (k >= 3); *keep, it keeps them for
 * iteration k + 2. */
bool piola_vbd_chebyshev_pass(const piola_world *w, int32_t k, bool *blend, bool *keep);

/* The Chebyshev pass of the iteration now ending (w->iteration), for either backend: false where
 * it has none; else w->vbd.chebyshev_omega is its omega, *blend and *keep as above, and *parity
 * (k % 2) names the store of the positions two iterations back, which receives this one's. */
bool piola_vbd_chebyshev_next(piola_world *w, bool *blend, bool *keep, int *parity);

/* The CPU reference's SOLVE_VERTICES stage: one iteration of vertex block descent. */
void piola_cpu_solve_vertices(piola_world *w, double h);

#endif /* PIOLA_VBD_H */
