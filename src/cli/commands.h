/* The commands of the piola program and the helpers they share. */
#ifndef PIOLA_CLI_COMMANDS_H
#define PIOLA_CLI_COMMANDS_H

#include <stddef.h>

int command_devices(int argc, char **argv);
int command_bench(int argc, char **argv);
int command_crosscheck(int argc, char **argv);
int command_run(int argc, char **argv);
int command_validate(int argc, char **argv);

#endif /* PIOLA_CLI_COMMANDS_H */
