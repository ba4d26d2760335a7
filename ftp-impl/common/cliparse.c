/* cliparse.c - the programs' command-line parser (see cliparse.h). */
#define _GNU_SOURCE
#include "cliparse.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "xpargs.h"

#define CLI_MAX_OPTS 64

/* The program's own options, then the shared ones it takes. */
static void merge(const struct cli_spec *s, struct option *all, size_t cap) {
  size_t n = 0;
  while (s->opts[n].name != NULL) {
    if (n + 1 >= cap) {
      cli_usage_exit("too many options"); /* a program's table, not input */
    }
    all[n] = s->opts[n];
    n++;
  }
  n += xpa_options(s->xp_take, all + n, cap - n - 1);
  memset(&all[n], 0, sizeof all[n]);
}

static const char *name_of(const struct option *all, int code) {
  for (; all->name != NULL; all++) {
    if (all->val == code) {
      return all->name;
    }
  }
  return "";
}

static void bad_option(const struct cli_spec *s, char **argv) {
  if ((s->flags & CLI_GETOPT_SAYS) != 0) {
    cli_usage_exit(NULL); /* getopt has named it */
  }
  cli_unknown_exit(argv[optind - 1]);
}

int cli_parse(int argc, char **argv, const struct cli_spec *s) {
  struct option all[CLI_MAX_OPTS];
  int c;
  cli_init(s->program, s->usage);
  cli_set_terse((s->flags & CLI_TERSE) != 0);
  merge(s, all, CLI_MAX_OPTS);
  opterr = (s->flags & CLI_GETOPT_SAYS) != 0;
  while ((c = getopt_long(argc, argv, s->shortopts, all, NULL)) != -1) {
    if (c == '?' || c == ':') {
      bad_option(s, argv);
    }
    if (s->check != NULL) {
      s->check(s->ctx, c, name_of(all, c));
    }
    if (c == CLI_HELP) {
      fputs(s->usage, stdout);
      exit(0);
    }
    if (xpa_is(c)) {
      xpa_set(c, optarg, s->xp);
    } else {
      s->handle(s->ctx, c, optarg);
    }
  }
  return optind;
}

int cli_names_option(const struct cli_spec *s, const char *word) {
  struct option all[CLI_MAX_OPTS];
  const struct option *o;
  size_t len;
  if (strncmp(word, "--", 2) != 0) {
    return 0;
  }
  word += 2;
  len = strcspn(word, "=");
  merge(s, all, CLI_MAX_OPTS);
  for (o = all; o->name != NULL; o++) {
    if (strlen(o->name) == len && strncmp(o->name, word, len) == 0) {
      return 1;
    }
  }
  return 0;
}
