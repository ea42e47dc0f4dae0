/* Helpers shared by the OpenCL tests (test_opencl.c, test_opencl_parity.c).
 *
 * Every OpenCL test first asks opencl_test_ready(). The answer depends on the build and the
 * machine:
 *  - built without OpenCL (-DPIOLA_OPENCL=OFF): it checks that PIOLA_BACKEND_OPENCL is refused
 *    with PIOLA_ERROR_UNSUPPORTED and that PIOLA_BACKEND_AUTO falls back to the CPU reference,
 *    and returns false (the test ends there, having checked that much);
 *  - built with OpenCL but no device found at run time: it fails the test when the environment
 *    sets PIOLA_REQUIRE_OPENCL=1 (CI does), otherwise it checks that PIOLA_BACKEND_OPENCL answers
 *    PIOLA_ERROR_NO_DEVICE and AUTO falls back, says so on stdout and returns false;
 *  - otherwise it returns true.
 */
#ifndef PIOLA_TEST_OPENCL_COMMON_H
#define PIOLA_TEST_OPENCL_COMMON_H

#include "piola_test.h"

#include <stdbool.h>
#include <stdint.h>

bool opencl_test_ready(piola_test *t);

/* A logger that keeps every message (concatenated, one per line, up to its capacity) and counts
 * them per level. */
typedef struct capture_log {
  int count[4];
  char text[32768];
  size_t length;
} capture_log;

void capture_log_fn(piola_log_level level, const char *message, void *user_data);
piola_logger capture_logger(capture_log *log);

/* A world def for OpenCL tests: the given backend, the capture logger (may be NULL) and the
 * counting assert hook of piola_test.h (misuse_count may be NULL). */
piola_world_def opencl_test_world_def(piola_backend backend, capture_log *log, int *misuse_count);

#endif /* PIOLA_TEST_OPENCL_COMMON_H */
