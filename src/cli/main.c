/* The piola program: `piola devices | bench | crosscheck | run | validate`. The first thing a
 * user runs; every command prints its own --help. */
#include "commands.h"
#include "piola/piola.h"
#include "scene.h"

#include <stdio.h>
#include <string.h>

int command_devices(int argc, char **argv) {
  (void)argv;
  if (argc > 0) {
    printf("Usage: piola devices\nLists the OpenCL platforms and devices, and the CPU "
           "reference.\n");
    return argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) ? 0 : 2;
  }
  int32_t count = 0;
  piola_status s = piola_list_devices(NULL, 0, &count);
  piola_device_info devices[64];
  if (s == PIOLA_OK && count > 0) {
    s = piola_list_devices(devices, 64, &count);
  }
  if (s != PIOLA_OK) {
    fprintf(stderr, "piola devices: %s\n", piola_status_string(s));
    return 1;
  }
  char cpu[256];
  cpu_model_name(cpu, sizeof cpu);
  printf("%-6s %-11s %-40s %-24s %5s %10s %8s %-18s %s\n", "index", "type", "name", "vendor",
         "units", "memory MB", "max wg", "OpenCL C", "fp64");
  printf("%-6s %-11s %-40s %-24s %5s %10s %8s %-18s %s\n", "-", "reference",
         "CPU reference (double, 1 thread)", cpu, "1", "-", "-", "-", "yes");
  for (int32_t i = 0; i < count && i < 64; ++i) {
    const piola_device_info *d = &devices[i];
    char index[16];
    snprintf(index, sizeof index, "%d:%d", (int)d->platform_index, (int)d->device_index);
    printf("%-6s %-11s %-40.40s %-24.24s %5d %10lld %8d %-18.18s %s\n", index, d->type, d->name,
           d->vendor, (int)d->compute_units, (long long)(d->global_memory_bytes / 1048576),
           (int)d->max_work_group_size, d->version, d->fp64 ? "yes" : "no");
  }
  if (count == 0) {
    printf("(no OpenCL device found: install an OpenCL driver, e.g. Debian's pocl-opencl-icd "
           "for the CPU)\n");
  }
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "piola %s: soft bodies by position-based continuum mechanics on OpenCL devices\n\n"
          "Usage: piola <command> [options]   (piola <command> --help for its options)\n\n"
          "  devices      list OpenCL devices and the CPU reference\n"
          "  bench        time the step on N bodies (default: 100 procedural creatures)\n"
          "  crosscheck   run a scene on the CPU reference and an OpenCL device side by side\n"
          "  run          simulate a scene and write VTK frames\n"
          "  validate     reproduce the paper's experiments: measured vs expected, PASS/FAIL\n",
          piola_version_string());
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  int n = argc - 2;
  char **rest = argv + 2;
  if (strcmp(cmd, "devices") == 0) {
    return command_devices(n, rest);
  }
  if (strcmp(cmd, "bench") == 0) {
    return command_bench(n, rest);
  }
  if (strcmp(cmd, "crosscheck") == 0) {
    return command_crosscheck(n, rest);
  }
  if (strcmp(cmd, "run") == 0) {
    return command_run(n, rest);
  }
  if (strcmp(cmd, "validate") == 0) {
    return command_validate(n, rest);
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("piola %s\n", piola_version_string());
    return 0;
  }
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "piola: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
