/* Piola test framework: one runner (piola_tests) with a name filter; every test is listed once
 * in test_list.h and registered with CTest under its own name.
 *
 * A test is `void test_NAME(piola_test *t)`. CHECK records a failure and goes on; REQUIRE
 * returns from the test. Messages name the file, line and the values compared.
 */
#ifndef PIOLA_TEST_H
#define PIOLA_TEST_H

#include "piola/piola.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct piola_test {
  const char *name;
  int checks;
  int failures;
} piola_test;

/* Prototypes of every test. */
#define PIOLA_TEST(name) void test_##name(piola_test *t);
#include "test_list.h"
#undef PIOLA_TEST

void piola_test_fail(piola_test *t, const char *file, int line, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#define CHECK_MSG(t, cond, ...)                                                                    \
  do {                                                                                             \
    (t)->checks++;                                                                                 \
    if (!(cond)) {                                                                                 \
      piola_test_fail((t), __FILE__, __LINE__, __VA_ARGS__);                                       \
    }                                                                                              \
  } while (0)

#define CHECK(t, cond) CHECK_MSG(t, cond, "%s", #cond)

#define REQUIRE(t, cond)                                                                           \
  do {                                                                                             \
    (t)->checks++;                                                                                 \
    if (!(cond)) {                                                                                 \
      piola_test_fail((t), __FILE__, __LINE__, "required: %s", #cond);                             \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

/* |a - b| <= tol */
#define CHECK_NEAR(t, a, b, tol)                                                                   \
  do {                                                                                             \
    double piola_a_ = (double)(a), piola_b_ = (double)(b), piola_tol_ = (double)(tol);             \
    CHECK_MSG(t, fabs(piola_a_ - piola_b_) <= piola_tol_,                                          \
              "%s = %.17g, %s = %.17g, |diff| %.3g > %.3g", #a, piola_a_, #b, piola_b_,            \
              fabs(piola_a_ - piola_b_), piola_tol_);                                              \
  } while (0)

#define CHECK_STATUS(t, expr, expected)                                                            \
  do {                                                                                             \
    piola_status piola_s_ = (expr);                                                                \
    CHECK_MSG(t, piola_s_ == (expected), "%s returned '%s', expected '%s'", #expr,                 \
              piola_status_string(piola_s_), piola_status_string(expected));                       \
  } while (0)

#define REQUIRE_OK(t, expr)                                                                        \
  do {                                                                                             \
    piola_status piola_s_ = (expr);                                                                \
    (t)->checks++;                                                                                 \
    if (piola_s_ != PIOLA_OK) {                                                                    \
      piola_test_fail((t), __FILE__, __LINE__, "%s returned '%s'", #expr,                          \
                      piola_status_string(piola_s_));                                              \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

/* Deterministic pseudo-random numbers in [-1, 1) (xorshift64*). */
static inline double piola_test_rand(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 4503599627370496.0 - 1.0;
}

/* FNV-1a (64 bit) of n bytes, continuing from hash h (start with PIOLA_TEST_FNV_OFFSET). */
#define PIOLA_TEST_FNV_OFFSET 14695981039346656037ull
static inline uint64_t piola_test_fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *b = data;
  for (size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* Path of the shared data folder (the Armadillo), or NULL when it is not there. Set by
 * PIOLA_DATA_DIR at build time and overridable with the environment variable of that name. */
const char *piola_test_data_dir(void);

/* A logger that counts messages per level and keeps the last one. */
typedef struct piola_test_log {
  int count[4];
  char last[1024];
} piola_test_log;
void piola_test_log_fn(piola_log_level level, const char *message, void *user_data);
/* Clears *log and returns a logger that records into it. */
piola_logger piola_test_logger(piola_test_log *log);

/* Checks what a failed call logged: exactly one error and no warning, the last message naming
 * `where` (such as "file.obj:3: ") and `path`, and holding `words` (NULL: anything). `what` names
 * the case in failure reports. */
void piola_test_check_failure_message(piola_test *t, const char *what, const piola_test_log *log,
                                      const char *where, const char *path, const char *words);

/* An assert hook that counts misuse reports instead of aborting. */
void piola_test_assert_fn(const char *condition, const char *file, int line, void *user_data);

/* A world def for tests: CPU reference, the test logger, the counting assert hook. */
piola_world_def piola_test_world_def(piola_test_log *log, int *misuse_count);

#endif /* PIOLA_TEST_H */
