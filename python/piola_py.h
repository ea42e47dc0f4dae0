/* C helpers of Piola's Python binding, compiled into the cffi module (python/build_ffi.py).
 * Only the public API is used. */

/* Runs n steps in one call (the loop stays in C); stops at the first failure. *done receives
 * the number of steps that succeeded. */
static piola_status piola_py_step_n(piola_world *world, int32_t n, int32_t *done) {
  piola_status s = PIOLA_OK;
  int32_t i = 0;
  for (; i < n && s == PIOLA_OK; ++i) {
    s = piola_world_step(world);
  }
  *done = s == PIOLA_OK ? i : i - 1;
  return s;
}
