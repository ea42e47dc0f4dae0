/* Piola solver arrays: the constraints of the live bodies gathered for the solver. Tets are
 * sorted by color (a color is one contiguous range holding that color's tets of every body, one
 * launch per color), then the Jacobi tail with its per-vertex gather lists; the cloth kinds
 * (triangles, bending stencils) likewise by their shared colors; plastic tets listed apart; per
 * body the ranges the per-body schedule walks. Rebuilt as a whole when the bodies change. */
#include "world.h"

#include <stdlib.h>
#include <string.h>

void piola_solver_tets_free(piola_solver_tets *st) {
  free(st->tet_vertices);
  free(st->tet_m);
  free(st->tet_volume);
  free(st->tet_lambda);
  free(st->tet_material);
  free(st->tet_body);
  free(st->tet_local);
  free(st->color_first);
  free(st->color_size);
  free(st->plastic_tet);
  free(st->plastic_dm_rest);
  free(st->plastic_strain);
  free(st->jacobi_vertices);
  free(st->jacobi_start);
  free(st->jacobi_incidence);
  free(st->jacobi_delta);
  free(st->support);
  free(st->body_vertex);
  free(st->body_color);
  free(st->body_jacobi);
  memset(st, 0, sizeof *st);
}

void piola_solver_cloth_free(piola_solver_cloth *c) {
  free(c->tri_vertices);
  free(c->tri_dm_inv);
  free(c->tri_area);
  free(c->tri_lambda);
  free(c->bend_vertices);
  free(c->bend_rest);
  free(c->bend_lambda);
  free(c->bend_material);
  for (int k = 0; k < PIOLA_CLOTH_KIND_COUNT; ++k) {
    free(c->kind_first[k]);
    free(c->kind_size[k]);
  }
  memset(c, 0, sizeof *c);
}

void piola_world_sync_plastic(piola_world *w) {
  if (w->tets_dirty || w->solver.tet_m == NULL) {
    return; /* the bodies hold the current state */
  }
  for (int32_t k = 0; k < w->solver.plastic_count; ++k) {
    int32_t t = w->solver.plastic_tet[k];
    piola_body *b = &w->bodies[w->solver.tet_body[t]];
    size_t l = (size_t)w->solver.tet_local[t];
    memcpy(b->plastic_strain + 6 * l, w->solver.plastic_strain + 6 * (size_t)k, 6 * sizeof(double));
    memcpy(b->m_eff + 9 * l, w->solver.tet_m + 9 * (size_t)t, 9 * sizeof(double));
  }
}

/* The per-vertex gather lists of the Jacobi tets of nw (see solver_arrays.h). */
static piola_status build_jacobi_lists(piola_solver_tets *nw, int32_t vertex_count) {
  const int32_t n = nw->jacobi_count;
  int32_t *count = calloc((size_t)vertex_count + 1, sizeof *count);
  nw->jacobi_incidence = malloc(sizeof(int32_t) * 4 * (size_t)(n > 0 ? n : 1));
  nw->jacobi_delta = calloc(16 * (size_t)(n > 0 ? n : 1), sizeof(double));
  if (count == NULL || nw->jacobi_incidence == NULL || nw->jacobi_delta == NULL) {
    free(count);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t touched = 0;
  for (int32_t i = 0; i < 4 * n; ++i) {
    int32_t v = nw->tet_vertices[4 * (size_t)nw->jacobi_first + (size_t)i];
    touched += count[v] == 0;
    count[v]++;
  }
  nw->jacobi_vertex_count = touched;
  nw->jacobi_vertices = malloc(sizeof(int32_t) * (size_t)(touched > 0 ? touched : 1));
  nw->jacobi_start = malloc(sizeof(int32_t) * ((size_t)touched + 1));
  int32_t *slot = malloc(sizeof(int32_t) * (size_t)(vertex_count > 0 ? vertex_count : 1));
  if (nw->jacobi_vertices == NULL || nw->jacobi_start == NULL || slot == NULL) {
    free(count);
    free(slot);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  /* Vertices in increasing order; each one's entries in increasing tet order. */
  int32_t at = 0, next = 0;
  for (int32_t v = 0; v < vertex_count; ++v) {
    if (count[v] > 0) {
      nw->jacobi_vertices[at] = v;
      nw->jacobi_start[at] = next;
      slot[v] = next;
      next += count[v];
      at++;
    }
  }
  nw->jacobi_start[touched] = next;
  for (int32_t i = 0; i < 4 * n; ++i) {
    int32_t v = nw->tet_vertices[4 * (size_t)nw->jacobi_first + (size_t)i];
    nw->jacobi_incidence[slot[v]++] = i;
  }
  free(count);
  free(slot);
  return PIOLA_OK;
}

/* The cloth kinds' solver arrays from the live cloth bodies: for each color, each kind's items
 * of that color of every body, contiguous (see piola_solver_cloth). */
static piola_status build_cloth(const piola_world *w, piola_solver_cloth *nc) {
  memset(nc, 0, sizeof *nc);
  int32_t colors = 0;
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (piola_id_pool_alive(&w->body_ids, i) && b->cloth) {
      nc->tri_count += b->tri_count;
      nc->bend_count += b->bend_count;
      colors = b->cloth_color_count > colors ? b->cloth_color_count : colors;
    }
  }
  nc->color_count = colors;
  const size_t nt = (size_t)(nc->tri_count > 0 ? nc->tri_count : 1);
  const size_t nb = (size_t)(nc->bend_count > 0 ? nc->bend_count : 1);
  const size_t ncol = (size_t)(colors > 0 ? colors : 1);
  nc->tri_vertices = malloc(sizeof(int32_t) * 4 * nt);
  nc->tri_dm_inv = malloc(sizeof(double) * 4 * nt);
  nc->tri_area = malloc(sizeof(double) * nt);
  nc->tri_lambda = calloc(nt, sizeof(double));
  nc->bend_vertices = malloc(sizeof(int32_t) * 4 * nb);
  nc->bend_rest = malloc(sizeof(double) * 6 * nb);
  nc->bend_lambda = calloc(nb, sizeof(double));
  nc->bend_material = malloc(sizeof(int32_t) * nb);
  bool ok = nc->tri_vertices && nc->tri_dm_inv && nc->tri_area && nc->tri_lambda &&
            nc->bend_vertices && nc->bend_rest && nc->bend_lambda && nc->bend_material;
  for (int k = 0; k < PIOLA_CLOTH_KIND_COUNT; ++k) {
    nc->kind_first[k] = malloc(sizeof(int32_t) * ncol);
    nc->kind_size[k] = malloc(sizeof(int32_t) * ncol);
    ok = ok && nc->kind_first[k] && nc->kind_size[k];
  }
  if (!ok) {
    piola_solver_cloth_free(nc);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t at[PIOLA_CLOTH_KIND_COUNT] = {0, 0};
  for (int32_t c = 0; c < colors; ++c) {
    for (int kind = 0; kind < PIOLA_CLOTH_KIND_COUNT; ++kind) {
      nc->kind_first[kind][c] = at[kind];
      for (int32_t i = 0; i < w->body_ids.count; ++i) {
        const piola_body *b = &w->bodies[i];
        if (!piola_id_pool_alive(&w->body_ids, i) || !b->cloth || c >= b->cloth_color_count) {
          continue;
        }
        const int32_t o = b->vertex_offset;
        for (int32_t j = b->cloth_color_start[c]; j < b->cloth_color_start[c + 1]; ++j) {
          const int32_t item = b->cloth_by_color[j];
          if (kind == PIOLA_KIND_TRIANGLE && item < b->tri_count) {
            const size_t g = (size_t)at[kind]++, l = (size_t)item;
            for (int k = 0; k < 3; ++k) {
              nc->tri_vertices[4 * g + (size_t)k] = b->tris[3 * l + (size_t)k] + o;
            }
            nc->tri_vertices[4 * g + 3] = b->cloth_material;
            memcpy(nc->tri_dm_inv + 4 * g, b->tri_dm_inv + 4 * l, 4 * sizeof(double));
            nc->tri_area[g] = b->tri_area[l];
          } else if (kind == PIOLA_KIND_BEND && item >= b->tri_count) {
            const size_t g = (size_t)at[kind]++, l = (size_t)(item - b->tri_count);
            for (int k = 0; k < 4; ++k) {
              nc->bend_vertices[4 * g + (size_t)k] = b->bends[4 * l + (size_t)k] + o;
            }
            memcpy(nc->bend_rest + 6 * g, b->bend_rest + 6 * l, 6 * sizeof(double));
            nc->bend_material[g] = b->cloth_material;
          }
        }
      }
      nc->kind_size[kind][c] = at[kind] - nc->kind_first[kind][c];
    }
  }
  return PIOLA_OK;
}

piola_status piola_world_build_tets(piola_world *w) {
  if (!w->tets_dirty) {
    return PIOLA_OK;
  }
  piola_world_sync_plastic(w);
  piola_status s = piola_contacts_build(w);
  if (s != PIOLA_OK) {
    return s;
  }
  int32_t nt = 0, colors = 0, plastic = 0, tet_bodies = 0;
  for (int32_t i = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (piola_id_pool_alive(&w->body_ids, i)) {
      tet_bodies += !b->cloth;
      nt += b->tet_count;
      colors = b->color_count > colors ? b->color_count : colors;
      plastic += !b->cloth && w->materials[b->material].plastic ? b->tet_count : 0;
    }
  }
  size_t n = (size_t)(nt > 0 ? nt : 1), np = (size_t)(plastic > 0 ? plastic : 1);
  piola_solver_tets nw; /* the new arrays, swapped in when all allocations succeeded */
  memset(&nw, 0, sizeof nw);
  nw.tet_count = nt;
  nw.color_count = colors;
  nw.plastic_count = plastic;
  nw.body_count = tet_bodies; /* the per-body lists hold tet bodies: cloth has no tets */
  nw.tet_vertices = malloc(sizeof(int32_t) * 4 * n);
  nw.tet_m = malloc(sizeof(double) * 9 * n);
  nw.tet_volume = malloc(sizeof(double) * n);
  nw.tet_lambda = calloc(2 * n, sizeof(double));
  nw.tet_material = malloc(sizeof(int32_t) * n);
  nw.tet_body = malloc(sizeof(int32_t) * n);
  nw.tet_local = malloc(sizeof(int32_t) * n);
  nw.color_first = malloc(sizeof(int32_t) * (size_t)(colors + 1));
  nw.color_size = malloc(sizeof(int32_t) * (size_t)(colors + 1));
  nw.plastic_tet = malloc(sizeof(int32_t) * np);
  nw.plastic_dm_rest = malloc(sizeof(double) * 9 * np);
  nw.plastic_strain = malloc(sizeof(double) * 6 * np);
  size_t nb = (size_t)(tet_bodies > 0 ? tet_bodies : 1);
  nw.body_vertex = malloc(sizeof(int32_t) * 2 * nb);
  nw.body_color = malloc(sizeof(int32_t) * 2 * nb * (size_t)(colors > 0 ? colors : 1));
  nw.body_jacobi = malloc(sizeof(int32_t) * 4 * nb);
  nw.support = calloc(4 * (size_t)(w->vertex_count > 0 ? w->vertex_count : 1), sizeof(double));
  if (!nw.tet_vertices || !nw.tet_m || !nw.tet_volume || !nw.tet_lambda || !nw.tet_material ||
      !nw.tet_body || !nw.tet_local || !nw.color_first || !nw.color_size || !nw.plastic_tet ||
      !nw.plastic_dm_rest || !nw.plastic_strain || !nw.body_vertex || !nw.body_color ||
      !nw.body_jacobi || !nw.support) {
    piola_solver_tets_free(&nw);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  int32_t g = 0, k = 0;
  /* Colors 0 .. colors - 1, then (c == colors) every body's Jacobi tets. */
  for (int32_t c = 0; c <= colors; ++c) {
    nw.color_first[c] = g;
    for (int32_t i = 0, dense = 0; i < w->body_ids.count; ++i) {
      const piola_body *b = &w->bodies[i];
      if (!piola_id_pool_alive(&w->body_ids, i) || b->cloth) {
        continue;
      }
      int32_t *range = c < colors ? nw.body_color + 2 * ((size_t)dense * colors + (size_t)c)
                                  : nw.body_jacobi + 4 * (size_t)dense;
      dense++;
      range[0] = g;
      range[1] = 0;
      if (c >= b->color_count && c < colors) {
        continue;
      }
      range[1] = c < colors ? b->color_start[c + 1] - b->color_start[c]
                            : b->tet_count - b->color_start[b->color_count];
      bool is_plastic = w->materials[b->material].plastic;
      int32_t j0 = c < colors ? b->color_start[c] : b->color_start[b->color_count];
      int32_t j1 = c < colors ? b->color_start[c + 1] : b->tet_count;
      for (int32_t j = j0; j < j1; ++j, ++g) {
        size_t l = (size_t)b->by_color[j];
        for (int a = 0; a < 4; ++a) {
          nw.tet_vertices[4 * (size_t)g + a] = b->tets[4 * l + a] + b->vertex_offset;
        }
        memcpy(nw.tet_m + 9 * (size_t)g, (is_plastic ? b->m_eff : b->dm_inv) + 9 * l,
               9 * sizeof(double));
        nw.tet_volume[g] = b->volume[l];
        nw.tet_material[g] = b->material;
        nw.tet_body[g] = i;
        nw.tet_local[g] = (int32_t)l;
        if (is_plastic) {
          nw.plastic_tet[k] = g;
          memcpy(nw.plastic_dm_rest + 9 * (size_t)k, b->dm_inv + 9 * l, 9 * sizeof(double));
          memcpy(nw.plastic_strain + 6 * (size_t)k, b->plastic_strain + 6 * l, 6 * sizeof(double));
          ++k;
        }
      }
    }
    nw.color_size[c] = g - nw.color_first[c];
  }
  nw.jacobi_first = nw.color_first[colors];
  nw.jacobi_count = nw.color_size[colors];
  s = build_jacobi_lists(&nw, w->vertex_count);
  piola_solver_cloth nc;
  if (s == PIOLA_OK) {
    s = build_cloth(w, &nc);
  }
  /* The vertex lists of vertex block descent index the new tet and cloth arrays. */
  piola_solver_vbd nv;
  if (s == PIOLA_OK) {
    s = piola_solver_vbd_build(w, &nw, &nc, &nv);
    if (s != PIOLA_OK) {
      piola_solver_cloth_free(&nc);
    }
  }
  piola_solver_newton nn;
  if (s == PIOLA_OK) {
    s = piola_solver_newton_build(w, &nw, &nc, &nn);
    if (s != PIOLA_OK) {
      piola_solver_cloth_free(&nc);
      piola_solver_vbd_free(&nv);
    }
  }
  if (s != PIOLA_OK) {
    piola_solver_tets_free(&nw);
    return s;
  }
  piola_solver_newton_free(&w->newton);
  w->newton = nn;
  piola_solver_cloth_free(&w->cloth);
  w->cloth = nc;
  piola_solver_vbd_free(&w->vbd);
  w->vbd = nv;
  /* Each body's vertices, and its entries in the tail vertex list (sorted by vertex; a reused
   * slot can hold a body whose vertices come last, so search rather than scan). */
  for (int32_t i = 0, dense = 0; i < w->body_ids.count; ++i) {
    const piola_body *b = &w->bodies[i];
    if (!piola_id_pool_alive(&w->body_ids, i) || b->cloth) {
      continue;
    }
    nw.body_vertex[2 * dense] = b->vertex_offset;
    nw.body_vertex[2 * dense + 1] = b->vertex_count;
    int32_t first = piola_lower_bound(nw.jacobi_vertices, nw.jacobi_vertex_count, b->vertex_offset);
    int32_t end = piola_lower_bound(nw.jacobi_vertices, nw.jacobi_vertex_count,
                                    b->vertex_offset + b->vertex_count);
    nw.body_jacobi[4 * dense + 2] = first;
    nw.body_jacobi[4 * dense + 3] = end - first;
    nw.max_body_tets = b->tet_count > nw.max_body_tets ? b->tet_count : nw.max_body_tets;
    nw.max_body_vertices =
        b->vertex_count > nw.max_body_vertices ? b->vertex_count : nw.max_body_vertices;
    dense++;
  }
  piola_solver_tets_free(&w->solver);
  w->solver = nw;
  w->tets_dirty = false;
  return PIOLA_OK;
}
