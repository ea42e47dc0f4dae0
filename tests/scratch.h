/* A fresh temporary folder for tests that write files (mkdtemp on POSIX, _mktemp_s on
 * Windows): up to SCRATCH_FILES files by name, removed with the folder by scratch_close(). */
#ifndef PIOLA_TEST_SCRATCH_H
#define PIOLA_TEST_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>

#define SCRATCH_FILES 8

typedef struct scratch {
  char dir[512];
  char names[SCRATCH_FILES][64];
  char paths[SCRATCH_FILES][640];
  int count;
} scratch;

/* Creates the folder; false when it cannot. */
bool scratch_open(scratch *s);

/* The path of `name` in the folder (remembered, so scratch_close() removes it); NULL when
 * SCRATCH_FILES names are in use. */
const char *scratch_path(scratch *s, const char *name);

/* Writes `len` bytes (strlen(text) when len is 0) to `name` in the folder; its path or NULL. */
const char *scratch_write(scratch *s, const char *name, const char *text, size_t len);

/* Removes the files and the folder. */
void scratch_close(scratch *s);

#endif /* PIOLA_TEST_SCRATCH_H */
