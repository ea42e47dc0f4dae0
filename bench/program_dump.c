/* piola_program_dump: writes the OpenCL program that Piola built on a device, for a profile.
 *
 * A world is created on the device exactly as a user's would be (the same build options,
 * PIOLA_CL_BUILD_OPTIONS included), and the binary its compiler returned for the main program
 * (or the packet program, --packets) is written to a file: PTX text on NVIDIA GPUs, whose
 * registers, stack frames and spills per kernel `ptxas -v` reports (CUDA's ptxas; the
 * compiler's own build log with -cl-nv-verbose stops after the first few kernels), and the
 * device's ELF or bitcode elsewhere. It prints the device, the build options, the size and,
 * for PTX, the kernels' names.
 *
 *   piola_program_dump [--device SPEC] [--packets] [--lanes N] --out FILE
 *
 * --device as `piola --device` (default: PIOLA_DEVICE, then the best device); --lanes sets
 * simd_lanes (0 = per device), which the packet program needs on GPUs (--packets --lanes 8).
 * Links the library's internal API (piola_internal.h); not installed.
 */
#include "piola_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_message(piola_log_level level, const char *message, void *user_data) {
  (void)user_data;
  if (level <= PIOLA_LOG_WARNING) {
    fprintf(stderr, "piola_program_dump: %s\n", message);
  }
}

static int usage(void) {
  fprintf(stderr, "usage: piola_program_dump [--device SPEC] [--packets] [--lanes N] --out FILE\n");
  return 2;
}

/* The names of the PTX entry points (".entry NAME"), one per line. */
static void print_ptx_entries(const unsigned char *binary, size_t size) {
  static const char key[] = ".entry ";
  const size_t k = sizeof key - 1;
  for (size_t i = 0; i + k < size; ++i) {
    if (memcmp(binary + i, key, k) != 0) {
      continue;
    }
    size_t j = i + k;
    while (j < size &&
           (binary[j] == '_' || (binary[j] >= 'a' && binary[j] <= 'z') ||
            (binary[j] >= 'A' && binary[j] <= 'Z') || (binary[j] >= '0' && binary[j] <= '9'))) {
      ++j;
    }
    printf("  kernel %.*s\n", (int)(j - i - k), (const char *)binary + i + k);
    i = j;
  }
}

int main(int argc, char **argv) {
  const char *device = NULL, *out = NULL;
  bool packets = false;
  int lanes = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--lanes") == 0 && i + 1 < argc) {
      lanes = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--packets") == 0) {
      packets = true;
    } else {
      return usage();
    }
  }
  if (out == NULL) {
    return usage();
  }
  piola_world_def def = piola_default_world_def();
  def.backend = PIOLA_BACKEND_OPENCL;
  def.device_spec = device;
  def.simd_lanes = lanes;
  def.logger.fn = print_message;
  piola_world *world = NULL;
  piola_status s = piola_world_create(&def, &world);
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola_program_dump: no OpenCL world: %s\n", piola_status_string(s));
    return 1;
  }
  unsigned char *binary = NULL;
  size_t size = 0;
  const char *options = "";
  s = piola_opencl_program_binary(world, packets, &binary, &size, &options);
  int rc = 0;
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola_program_dump: %s\n", piola_status_string(s));
    rc = 1;
  } else {
    piola_stats stats;
    piola_world_get_stats(world, &stats);
    printf("device: %s\noptions: %s\nbinary: %zu bytes -> %s\n", stats.device_name, options, size,
           out);
    FILE *f = fopen(out, "wb");
    if (f == NULL || fwrite(binary, 1, size, f) != size) {
      fprintf(stderr, "piola_program_dump: cannot write %s\n", out);
      rc = 1;
    }
    if (f != NULL && fclose(f) != 0) {
      rc = 1;
    }
    if (size > 2 && binary[0] == '/' && binary[1] == '/') {
      print_ptx_entries(binary, size);
    }
  }
  free(binary);
  piola_world_destroy(world);
  return rc;
}
