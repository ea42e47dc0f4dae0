/* Piola host services shared by every module: logging, misuse reports, growable arrays, the
 * checks of materials, clocks. Not installed; the public story is include/piola/. */
#ifndef PIOLA_COMMON_H
#define PIOLA_COMMON_H

#include "piola/piola.h"

#include "piola_tet.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The cookie the default def constructors write, so that a def not made by them is refused. */
#define PIOLA_COOKIE 0x5049 /* "PI" */

#if defined(__GNUC__)
#define PIOLA_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PIOLA_PRINTF(f, a)
#endif

/* Formats a message and hands it to the logger (nothing without one). */
void piola_log(const piola_logger *logger, piola_log_level level, const char *format, ...)
    PIOLA_PRINTF(3, 4);

/* Misuse of the API: calls the world's assert hook (or assert() in debug builds) and lets the
 * caller return its status. */
void piola_misuse(const piola_world *world, const char *condition, const char *file, int line);
#define PIOLA_MISUSE(world, cond) piola_misuse((world), (cond), __FILE__, __LINE__)

/* Grows *ptr (elements of `size` bytes) to at least `needed` elements; capacity doubles. On
 * failure the old block stays valid and false is returned. New elements are not initialised. */
bool piola_grow(void **ptr, size_t size, int32_t needed, int32_t *capacity);

/* Whether all three components of v are finite. */
bool piola_finite3(const float v[3]);

/* Per vertex v of [first_vertex, first_vertex + vertex_count), the triangles it is a corner of
 * in ascending order (CSR: incident[start[v - first_vertex] .. start[v - first_vertex + 1]),
 * triangle indices from 0), of the triangle_count triangles of `corners` (3 vertex indices
 * each). False when out of memory, with *start and *incident freed and NULL. */
bool piola_vertex_triangles(const int32_t *corners, int32_t triangle_count, int32_t first_vertex,
                            int32_t vertex_count, int32_t **start, int32_t **incident);

/* The first index of the sorted a[0..n) whose value is >= key (n when none is). */
int32_t piola_lower_bound(const int32_t *a, int32_t n, int32_t key);

/* Matrix i of an array of 9 doubles per matrix, row-major (the solver's tet_m). */
static inline piola_m3 piola_m3_at(const double *a, int32_t i) {
  piola_m3 m;
  for (int k = 0; k < 9; ++k) {
    m.m[k] = a[9 * (size_t)i + (size_t)k];
  }
  return m;
}

/* Wall-clock milliseconds from a monotonic clock. */
double piola_now_ms(void);

/* Checks a material; writes the reason to `reason` (size n) when it is invalid. */
piola_status piola_material_check(const piola_material *m, char *reason, size_t n);

/* Checks a cloth material, as piola_material_check(). */
piola_status piola_cloth_material_check(const piola_cloth_material *m, char *reason, size_t n);

/* The solver constants of a valid material (double precision). */
piola_tet_material piola_material_constants(const piola_material *m);

#endif /* PIOLA_COMMON_H */
