/* The one option parser of the piola commands (options.h): a command's table says what each
 * option takes; this file reads the arguments with it and prints the table as help lines. */
#include "options.h"

#include <stdio.h>
#include <string.h>

static const cli_option *find_option(const cli_command *c, const char *name) {
  for (int k = 0; k < c->option_count; ++k) {
    if (strcmp(c->options[k].name, name) == 0) {
      return &c->options[k];
    }
  }
  return NULL;
}

/* Stores the value v (NULL: none given) of option `opt` (named `a` on the command line).
 * Returns true when it was taken; else the value's own message has been printed, if it has
 * one (a missing string has none). */
static bool take_value(const cli_command *c, const cli_option *opt, const char *a, const char *v) {
  switch (opt->kind) {
  case CLI_INT:
    return parse_int(a, v, opt->minimum, (int32_t *)opt->value);
  case CLI_FLOAT:
    return parse_float(a, v, (float *)opt->value);
  case CLI_STRING:
    if (v != NULL) {
      *(const char **)opt->value = v;
    }
    return v != NULL;
  case CLI_CHOICE:
    for (int k = 0; v != NULL && opt->choices[k] != NULL; ++k) {
      if (strcmp(v, opt->choices[k]) == 0) {
        *(int *)opt->value = k;
        return true;
      }
    }
    fprintf(stderr, "%s: %s: unknown value '%s'\n", c->name, a, v != NULL ? v : "");
    return false;
  case CLI_FLAG:
  case CLI_ACTION:
    break;
  }
  return false;
}

cli_parse_result cli_parse(const cli_command *c, int argc, char **argv) {
  for (int i = 0; i < argc; ++i) {
    if (c->scene != NULL) {
      const int k = scene_parse_option(c->scene, argc, argv, &i);
      if (k < 0) {
        return CLI_PARSE_ERROR;
      }
      if (k > 0) {
        continue;
      }
    }
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    const cli_option *opt = find_option(c, a);
    if (opt == NULL) {
      if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        return CLI_PARSE_HELP;
      }
    } else if (opt->kind == CLI_FLAG || opt->kind == CLI_ACTION) {
      *(bool *)opt->value = true;
      if (opt->kind == CLI_ACTION) {
        return CLI_PARSE_RUN;
      }
      continue;
    } else if (v == NULL && c->value_errors == CLI_VALUE_ERROR_ONLY) {
      /* A missing value: the option is incomplete (below). */
    } else if (take_value(c, opt, a, v)) {
      ++i;
      continue;
    } else if (c->value_errors == CLI_VALUE_ERROR_ONLY) {
      return CLI_PARSE_ERROR; /* the value's own message said why */
    }
    fprintf(stderr, "%s: unknown or incomplete option '%s' (see --help)\n", c->name, a);
    return CLI_PARSE_ERROR;
  }
  return CLI_PARSE_RUN;
}

int cli_parse_command(const cli_command *c, int argc, char **argv,
                      void (*print_help)(const cli_command *c)) {
  switch (cli_parse(c, argc, argv)) {
  case CLI_PARSE_HELP:
    print_help(c);
    return 0;
  case CLI_PARSE_ERROR:
    return 2;
  case CLI_PARSE_RUN:
    break;
  }
  return -1;
}

void cli_print_options(const cli_command *c) {
  for (int k = 0; k < c->option_count; ++k) {
    const cli_option *opt = &c->options[k];
    char label[96];
    const int n = snprintf(label, sizeof label, "  %s%s%s", opt->name, opt->arg != NULL ? " " : "",
                           opt->arg != NULL ? opt->arg : "");
    printf("%s%*s", label, n < c->help_column ? c->help_column - n : 2, "");
    for (const char *p = opt->help;;) {
      const char *end = strchr(p, '\n');
      if (end == NULL) {
        printf("%s\n", p);
        break;
      }
      printf("%.*s\n%*s", (int)(end - p), p, c->help_column, "");
      p = end + 1;
    }
  }
}
