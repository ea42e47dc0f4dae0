/* The commands of the piola program and the helpers they share. */
#ifndef PIOLA_CLI_COMMANDS_H
#define PIOLA_CLI_COMMANDS_H

#include <stddef.h>

int command_devices(int argc, char **argv);
int command_bench(int argc, char **argv);
int command_crosscheck(int argc, char **argv);
int command_run(int argc, char **argv);
int command_validate(int argc, char **argv);

/* Seconds from a monotonic clock. */
double now_seconds(void);

/* The host CPU's model name (Linux /proc/cpuinfo), or "unknown CPU". */
void cpu_model_name(char *out, size_t n);

#endif /* PIOLA_CLI_COMMANDS_H */
