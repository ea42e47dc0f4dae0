/* Replays inputs through a fuzz target without libFuzzer, so the seed corpus runs in every build
 * and with any compiler (CTest entries fuzz_replay_<target>; with PIOLA_SANITIZE under ASan and
 * UBSan). Arguments are files or folders; a folder's files (names not starting with '.') run in
 * name order. Fails when an argument cannot be read or a folder holds no file; a crash of the
 * target is the test's failure, as in libFuzzer. */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* opendir, stat */
#endif

#include "fuzz_common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 0;
  }
  size_t cap = 4096, size = 0;
  uint8_t *data = malloc(cap);
  for (;;) {
    if (data == NULL) {
      fclose(f);
      fprintf(stderr, "replay: out of memory reading %s\n", path);
      return 0;
    }
    size += fread(data + size, 1, cap - size, f);
    if (size < cap) {
      break;
    }
    cap *= 2;
    uint8_t *grown = realloc(data, cap);
    if (grown == NULL) {
      free(data);
    }
    data = grown;
  }
  bool failed = ferror(f) != 0;
  fclose(f);
  if (failed) {
    free(data);
    fprintf(stderr, "replay: read error on %s\n", path);
    return 0;
  }
  /* libFuzzer passes a buffer of exactly `size` bytes: copy so ASan sees its end. */
  uint8_t *exact = malloc(size > 0 ? size : 1);
  if (exact == NULL) {
    free(data);
    return 0;
  }
  memcpy(exact, data, size);
  free(data);
  printf("replay: %s (%zu bytes)\n", path, size);
  fflush(stdout);
  LLVMFuzzerTestOneInput(exact, size);
  free(exact);
  return 1;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays a folder's files in name order; the number replayed, or -1 on an error. */
static int replay_folder(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "replay: cannot open the folder %s\n", dir);
    return -1;
  }
  char **names = NULL;
  size_t count = 0, cap = 0;
  struct dirent *e;
  int result = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') {
      continue;
    }
    if (count == cap) {
      cap = cap > 0 ? 2 * cap : 64;
      char **grown = realloc(names, cap * sizeof *names);
      if (grown == NULL) {
        result = -1;
        break;
      }
      names = grown;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[count] = malloc(len);
    if (names[count] == NULL) {
      result = -1;
      break;
    }
    snprintf(names[count], len, "%s/%s", dir, e->d_name);
    ++count;
  }
  closedir(d);
  if (count > 0) {
    qsort(names, count, sizeof *names, compare_names);
  }
  for (size_t i = 0; i < count; ++i) {
    struct stat st;
    if (result >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      result = replay_file(names[i]) ? result + 1 : -1;
    }
    free(names[i]);
  }
  free(names);
  return result;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <file or folder>...\n", argv[0]);
    return 2;
  }
  int total = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: no such file or folder: %s\n", argv[i]);
      return 1;
    }
    if (S_ISDIR(st.st_mode)) {
      int n = replay_folder(argv[i]);
      if (n <= 0) {
        fprintf(stderr, "replay: %s: %s\n", argv[i], n == 0 ? "no input in the folder" : "failed");
        return 1;
      }
      total += n;
    } else if (replay_file(argv[i])) {
      ++total;
    } else {
      return 1;
    }
  }
  printf("replay: %d input(s) ran without a crash\n", total);
  return 0;
}
