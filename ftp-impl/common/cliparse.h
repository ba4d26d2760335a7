/* cliparse.h - the one command-line parser of the programs: getopt_long over
 * a program's own options and the shared transport options it takes
 * (xpargs.h), --help, and every usage error ("<program>: why", the usage,
 * exit 2; cliargs.h) in the wording that program has always had. */
#ifndef FTP_CLIPARSE_H
#define FTP_CLIPARSE_H

#include "transport.h"

struct option;

/* --help (and runcapture's -h): the usage on stdout, exit 0. */
#define CLI_HELP 'h'

enum cli_flags {
  /* getopt itself names an unknown option or a missing value (its own
   * message), then the usage follows; without it: "unknown option or
   * missing value: WORD". */
  CLI_GETOPT_SAYS = 1,
  /* ftpd's and ftpc's wording: "bad numeric argument", "argument too
   * long", "--bind: not an address" (cliargs.h). */
  CLI_TERSE = 2
};

struct cli_spec {
  const char *program; /* "ftpc": the prefix of every message */
  const char *usage;
  const char *shortopts;     /* getopt's: "" or "+" (stop at the first word) */
  unsigned flags;            /* enum cli_flags */
  const struct option *opts; /* the program's own, ending in a zero entry */
  unsigned xp_take;          /* XPA_BIT()s of the shared ones it takes */
  struct xp_opts *xp;        /* where they go */
  /* Called first for every option (NULL: none), with its long name. */
  void (*check)(void *ctx, int code, const char *name);
  /* Each of the program's own options. */
  void (*handle)(void *ctx, int code, const char *arg);
  void *ctx;
};

/* Parse argv[1..argc-1]; returns the index of the first word that is not
 * an option (getopt's optind). */
int cli_parse(int argc, char **argv, const struct cli_spec *s);
/* Does word name one of the spec's options ("--NAME" or "--NAME=VALUE")?
 * For a program whose operands follow its options: an option found among
 * them was put in the wrong place. */
int cli_names_option(const struct cli_spec *s, const char *word);

#endif
