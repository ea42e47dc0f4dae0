/* The command-line options of the piola commands, declared once: each command lists its own
 * options in a table (name, kind, where the value goes, the smallest integer, the help), and one
 * parser reads the arguments with it (beside the scene options of scene_parse_option(), for the
 * scene commands) while one printer writes the table's part of the command's --help. */
#ifndef PIOLA_CLI_OPTIONS_H
#define PIOLA_CLI_OPTIONS_H

#include "scene.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum cli_option_kind {
  CLI_FLAG,   /* no value; sets *(bool *)value */
  CLI_INT,    /* an integer >= minimum into *(int32_t *)value (parse_int()) */
  CLI_FLOAT,  /* a finite number into *(float *)value (parse_float()) */
  CLI_STRING, /* the next argument, as it is, into *(const char **)value */
  CLI_CHOICE, /* one of choices[] (NULL-terminated): its index into *(int *)value */
  CLI_ACTION  /* a flag the command acts on at once (e.g. a list to print): sets *(bool *)value
                 and ends the parse there, so later arguments are not read */
} cli_option_kind;

typedef struct cli_option {
  const char *name; /* "--steps" */
  cli_option_kind kind;
  void *value;                /* where the value goes; its type follows the kind */
  int32_t minimum;            /* CLI_INT: the smallest value accepted */
  const char *const *choices; /* CLI_CHOICE: the accepted values, NULL-terminated */
  const char *arg;            /* the value's name in the help ("N", "FILE"); NULL: none */
  const char *help;           /* the help text; '\n' starts a line under the first */
} cli_option;

/* How a bad option value is reported: the two styles the commands have. */
typedef enum cli_value_errors {
  /* The value's own message, then "unknown or incomplete option"; a missing number is read as
   * an empty one (its message says "got ''"). bench, crosscheck and run. */
  CLI_VALUE_ERROR_THEN_USAGE,
  /* A missing value makes the option incomplete ("unknown or incomplete option" alone); a bad
   * one gets its own message only. validate. */
  CLI_VALUE_ERROR_ONLY
} cli_value_errors;

/* The number of entries of a table of options (an array, not a pointer). */
#define CLI_OPTION_COUNT(table) ((int)(sizeof(table) / sizeof((table)[0])))

typedef struct cli_command {
  const char *name; /* "piola bench": the commands' messages start with it */
  const cli_option *options;
  int option_count;
  scene_options *scene; /* scene options accepted beside the command's own; NULL: none */
  cli_value_errors value_errors;
  int help_column; /* the column where the options' help texts start */
} cli_command;

typedef enum cli_parse_result {
  CLI_PARSE_RUN,  /* every argument was read (or a CLI_ACTION ended the parse): run */
  CLI_PARSE_HELP, /* --help or -h: print the help, exit status 0 */
  CLI_PARSE_ERROR /* a bad value or an unknown option, message printed: exit status 2 */
} cli_parse_result;

/* Reads argv[0 .. argc-1]: the scene options first (when c->scene is set), then the command's
 * own; --help and -h stop the parse. An option given twice keeps its last value. */
cli_parse_result cli_parse(const cli_command *c, int argc, char **argv);

/* cli_parse() as a command's start: -1 when the command runs; otherwise its exit status, 0
 * after print_help(c) for --help, 2 after a bad argument (the message already printed). */
int cli_parse_command(const cli_command *c, int argc, char **argv,
                      void (*print_help)(const cli_command *c));

/* Prints the command's options, one per table entry: "  NAME ARG", padded to help_column (or
 * followed by two spaces when longer), the help, and its further lines at help_column. */
void cli_print_options(const cli_command *c);

#endif /* PIOLA_CLI_OPTIONS_H */
