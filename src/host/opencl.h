/* Piola OpenCL backend: what it offers beside its table (backend.h, piola_opencl_backend) to
 * tests and tools. Built only with PIOLA_OPENCL=ON; without it, piola_opencl_try_build() and
 * piola_opencl_layout_probe() answer PIOLA_ERROR_UNSUPPORTED (backend.c). */
#ifndef PIOLA_OPENCL_H
#define PIOLA_OPENCL_H

#include "piola/piola.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* For tests: builds `source` for a device and reports the status (build log to the logger). */
piola_status piola_opencl_try_build(const char *device_spec, const char *source,
                                    const piola_logger *logger);
/* The number of values the piola_layout_probe kernel writes. */
#define PIOLA_LAYOUT_PROBE_COUNT 17
/* For tests: runs the piola_layout_probe kernel; out[] as written by that kernel. */
piola_status piola_opencl_layout_probe(const char *device_spec,
                                       int32_t out[PIOLA_LAYOUT_PROBE_COUNT],
                                       const piola_logger *logger);
/* The binary of an OpenCL world's main program, or with `packets` of its packet program, as the
 * device's compiler returned it (PTX text on NVIDIA GPUs, a device ELF or bitcode elsewhere), in
 * *binary (malloc'ed; the caller frees it), and the options it was built with (owned by the
 * world). For bench/program_dump.c, which feeds a profile. */
piola_status piola_opencl_program_binary(const piola_world *w, bool packets, unsigned char **binary,
                                         size_t *size, const char **options);

#endif /* PIOLA_OPENCL_H */
