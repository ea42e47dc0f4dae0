/* Piola backend registry: the backends this build has (the CPU reference always, OpenCL when
 * built with it), the device listing over them, and the test hooks that exist whatever the build
 * (the fault record's arming; without OpenCL, the OpenCL test hooks' answer). */
#include "backend.h"

#include "opencl.h"

#include <string.h>

static const piola_backend_ops *const backends[] = {
    &piola_cpu_backend,
#ifdef PIOLA_WITH_OPENCL
    &piola_opencl_backend,
#endif
};

const piola_backend_ops *piola_backend_find(piola_backend kind) {
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; ++i) {
    if (backends[i]->kind == kind) {
      return backends[i];
    }
  }
  return NULL;
}

piola_status piola_list_devices(piola_device_info *devices, int32_t capacity, int32_t *count) {
  if (count == NULL || capacity < 0 || (devices == NULL && capacity > 0)) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  int32_t total = 0;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; ++i) {
    if (backends[i]->list_devices == NULL) {
      continue;
    }
    int32_t n = 0;
    const int32_t room = capacity > total ? capacity - total : 0;
    piola_status s = backends[i]->list_devices(room > 0 ? devices + total : NULL, room, &n);
    if (s != PIOLA_OK) {
      return s;
    }
    total += n;
  }
  *count = total;
  return PIOLA_OK;
}

void piola_faults_arm(piola_faults *f, piola_fault_kind kind, int32_t nth, int32_t error) {
  f->kind = kind;
  f->nth = nth;
  f->error = error;
  memset(f->calls, 0, sizeof f->calls);
  f->injected = 0;
}

#ifndef PIOLA_WITH_OPENCL
piola_status piola_opencl_try_build(const char *device_spec, const char *source,
                                    const piola_logger *logger) {
  (void)device_spec;
  (void)source;
  (void)logger;
  return PIOLA_ERROR_UNSUPPORTED;
}

piola_status piola_opencl_layout_probe(const char *device_spec,
                                       int32_t out[PIOLA_LAYOUT_PROBE_COUNT],
                                       const piola_logger *logger) {
  (void)device_spec;
  (void)out;
  (void)logger;
  return PIOLA_ERROR_UNSUPPORTED;
}
#endif
