/* Shared by the libFuzzer targets of tests/fuzz (fuzz_*.c): the loaders take paths, so each
 * input is written to temporary files (one set per process, created with mkstemp() under
 * $TMPDIR and reused for every input, removed at exit); a logger that formats every message
 * and drops it; and a short simulation of a loaded mesh on the CPU reference that aborts (a
 * crash libFuzzer reports) when a position or velocity is not finite.
 *
 * Each target defines LLVMFuzzerTestOneInput(). It links either with libFuzzer
 * (-fsanitize=fuzzer, PIOLA_FUZZ=ON with clang) or with replay_main.c, which feeds it the files
 * of the seed corpus in every build (CTest entries fuzz_replay_<target>). */
#ifndef PIOLA_FUZZ_COMMON_H
#define PIOLA_FUZZ_COMMON_H

#include <piola/piola.h>

#include <stddef.h>
#include <stdint.h>

#define PIOLA_FUZZ_FILES 2
#define PIOLA_FUZZ_COPIES 2

/* The libFuzzer entry point every target defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes `size` bytes to the process's temporary file number `slot` (0 or 1) and returns its
 * path; aborts when no temporary file can be made (a broken setup, not a finding). */
const char *piola_fuzz_write(int slot, const uint8_t *data, size_t size);

/* A logger that formats each message (so a bad format argument shows up under the sanitizers)
 * and drops it. */
piola_logger piola_fuzz_logger(void);

/* Adds `copies` (1 to PIOLA_FUZZ_COPIES) copies of `mesh` to a fresh CPU-reference world with
 * a ground plane (y = 0) and the default material: the first translated by `translation` (may be
 * NULL), each further one shifted from it by half the mesh's extent in x and y, so the copies
 * overlap. If the world takes the first, runs `steps` steps. Aborts when a call returns a status
 * outside the documented ones or a position or velocity is not finite. With PIOLA_FUZZ_VERBOSE
 * set, prints the mesh's counts and the status of adding it. */
void piola_fuzz_simulate(const piola_tet_mesh *mesh, const float translation[3], int steps,
                         int copies);

#endif /* PIOLA_FUZZ_COMMON_H */
