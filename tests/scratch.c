/* The tests' temporary folder (scratch.h). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* mkdtemp, rmdir */
#endif

#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <direct.h>
#include <io.h>
#else
#include <unistd.h>
#endif

bool scratch_open(scratch *s) {
  memset(s, 0, sizeof *s);
#if defined(_WIN32)
  const char *tmp = getenv("TEMP");
  snprintf(s->dir, sizeof s->dir, "%s\\piola_mesh_XXXXXX", tmp != NULL ? tmp : ".");
  if (_mktemp_s(s->dir, strlen(s->dir) + 1) != 0 || _mkdir(s->dir) != 0) {
    return false;
  }
#else
  const char *tmp = getenv("TMPDIR");
  snprintf(s->dir, sizeof s->dir, "%s/piola_mesh_XXXXXX",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  if (mkdtemp(s->dir) == NULL) {
    return false;
  }
#endif
  return true;
}

const char *scratch_path(scratch *s, const char *name) {
  for (int i = 0; i < s->count; ++i) {
    if (strcmp(s->names[i], name) == 0) {
      return s->paths[i];
    }
  }
  if (s->count == SCRATCH_FILES) {
    return NULL;
  }
  char path[sizeof s->paths[0]];
  snprintf(path, sizeof path, "%s/%s", s->dir, name);
  snprintf(s->names[s->count], sizeof s->names[0], "%s", name);
  memcpy(s->paths[s->count], path, sizeof path);
  return s->paths[s->count++];
}

const char *scratch_write(scratch *s, const char *name, const char *text, size_t len) {
  const char *path = scratch_path(s, name);
  if (path == NULL) {
    return NULL;
  }
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    return NULL;
  }
  if (len == 0) {
    len = strlen(text);
  }
  bool ok = fwrite(text, 1, len, f) == len;
  ok = fclose(f) == 0 && ok;
  return ok ? path : NULL;
}

void scratch_close(scratch *s) {
  for (int i = 0; i < s->count; ++i) {
    remove(s->paths[i]);
  }
#if defined(_WIN32)
  _rmdir(s->dir);
#else
  rmdir(s->dir);
#endif
  s->count = 0;
}
