/* Piola test runner: `piola_tests [--list] [--exact NAME | FILTER...]` runs every test whose
 * name contains one of the filters (all tests without one). Exit status 0 when all passed. */
#include "piola_test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PIOLA_TEST(name) void test_##name(piola_test *t);
#include "test_list.h"
#undef PIOLA_TEST

typedef struct test_entry {
  const char *name;
  void (*fn)(piola_test *t);
} test_entry;

static const test_entry tests[] = {
#define PIOLA_TEST(name) {#name, test_##name},
#include "test_list.h"
#undef PIOLA_TEST
};

void piola_test_fail(piola_test *t, const char *file, int line, const char *format, ...) {
  va_list args;
  t->failures++;
  fprintf(stderr, "  FAIL %s:%d: ", file, line);
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fputc('\n', stderr);
}

const char *piola_test_data_dir(void) {
  const char *env = getenv("PIOLA_DATA_DIR");
#ifdef PIOLA_DATA_DIR
  const char *dir = env != NULL ? env : PIOLA_DATA_DIR;
#else
  const char *dir = env;
#endif
  static char probe[4096];
  if (dir == NULL || dir[0] == '\0') {
    return NULL;
  }
  snprintf(probe, sizeof probe, "%s/armadillo/armadillo_4k.node", dir);
  FILE *f = fopen(probe, "r");
  if (f == NULL) {
    return NULL;
  }
  fclose(f);
  return dir;
}

piola_logger piola_test_logger(piola_test_log *log) {
  memset(log, 0, sizeof *log);
  piola_logger logger = {piola_test_log_fn, log};
  return logger;
}

void piola_test_check_failure_message(piola_test *t, const char *what, const piola_test_log *log,
                                      const char *where, const char *path, const char *words) {
  CHECK_MSG(t, log->count[PIOLA_LOG_ERROR] == 1 && log->count[PIOLA_LOG_WARNING] == 0,
            "%s: %d error messages, expected 1", what, log->count[PIOLA_LOG_ERROR]);
  CHECK_MSG(t, strstr(log->last, where) != NULL && strstr(log->last, path) != NULL,
            "%s: the message '%s' does not name '%s' in '%s'", what, log->last, where, path);
  CHECK_MSG(t, words == NULL || strstr(log->last, words) != NULL,
            "%s: the message '%s' does not say '%s'", what, log->last, words != NULL ? words : "");
}

void piola_test_log_fn(piola_log_level level, const char *message, void *user_data) {
  piola_test_log *log = user_data;
  if (level >= 0 && level < 4) {
    log->count[level]++;
  }
  snprintf(log->last, sizeof log->last, "%s", message);
  if (getenv("PIOLA_TEST_VERBOSE") != NULL) {
    fprintf(stderr, "  log[%d]: %s\n", (int)level, message);
  }
}

void piola_test_assert_fn(const char *condition, const char *file, int line, void *user_data) {
  (void)condition;
  (void)file;
  (void)line;
  int *count = user_data;
  if (count != NULL) {
    (*count)++;
  }
}

piola_world_def piola_test_world_def(piola_test_log *log, int *misuse_count) {
  piola_world_def def = piola_default_world_def();
  def.backend = PIOLA_BACKEND_CPU_REFERENCE;
  if (log != NULL) {
    memset(log, 0, sizeof *log);
    def.logger.fn = piola_test_log_fn;
    def.logger.user_data = log;
  }
  def.assert_fn = piola_test_assert_fn;
  def.assert_user_data = misuse_count;
  return def;
}

static bool selected(const char *name, int argc, char **argv, bool exact) {
  if (argc == 0) {
    return true;
  }
  for (int i = 0; i < argc; ++i) {
    if (exact ? strcmp(name, argv[i]) == 0 : strstr(name, argv[i]) != NULL) {
      return true;
    }
  }
  return false;
}

int main(int argc, char **argv) {
  bool list = false, exact = false;
  int n = 0;
  char **filters = malloc(sizeof *filters * (size_t)(argc > 0 ? argc : 1));
  if (filters == NULL) {
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--list") == 0) {
      list = true;
    } else if (strcmp(argv[i], "--exact") == 0) {
      exact = true;
    } else {
      filters[n++] = argv[i];
    }
  }
  int run = 0, failed = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
    if (!selected(tests[i].name, n, filters, exact)) {
      continue;
    }
    if (list) {
      printf("%s\n", tests[i].name);
      continue;
    }
    piola_test t = {tests[i].name, 0, 0};
    printf("[ RUN  ] %s\n", t.name);
    fflush(stdout);
    tests[i].fn(&t);
    run++;
    if (t.failures > 0 || t.checks == 0) {
      if (t.checks == 0) {
        fprintf(stderr, "  FAIL: the test checked nothing\n");
      }
      failed++;
      printf("[ FAIL ] %s (%d of %d checks failed)\n", t.name, t.failures, t.checks);
    } else {
      printf("[  OK  ] %s (%d checks)\n", t.name, t.checks);
    }
    fflush(stdout);
  }
  free(filters);
  if (!list) {
    printf("%d tests, %d failed\n", run, failed);
    if (run == 0) {
      fprintf(stderr, "no test matched\n");
      return 2;
    }
  }
  return failed == 0 ? 0 : 1;
}
