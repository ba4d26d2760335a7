/* cliargs.c - checked command-line values (see cliargs.h). */
#include "cliargs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "str.h"

static const char *prog = "program";
static const char *usage_text = "";
static int terse;

void cli_init(const char *program, const char *usage) {
  prog = program;
  usage_text = usage;
}

void cli_set_terse(int on) { terse = on; }

void cli_usage_exit(const char *why) {
  if (why != NULL) {
    fprintf(stderr, "%s: %s\n", prog, why);
  }
  fputs(usage_text, stderr);
  exit(2);
}

void cli_bad_value(const char *opt, const char *need) {
  char msg[256];
  (void)str_fmt(msg, sizeof msg, "--%s: %s", opt, need);
  cli_usage_exit(msg);
}

void cli_unknown_exit(const char *word) {
  char msg[256];
  (void)str_fmt(msg, sizeof msg, "unknown option or missing value: %.200s",
                word);
  cli_usage_exit(msg);
}

void cli_unexpected_exit(const char *word) {
  char msg[256];
  (void)str_fmt(msg, sizeof msg, "unexpected argument: %.200s", word);
  cli_usage_exit(msg);
}

int cli_int(const char *opt, const char *s, int lo, int hi) {
  char need[96];
  uint64_t v;
  if (str_to_u64(s, (uint64_t)hi, &v) == 0 && v >= (uint64_t)lo) {
    return (int)v;
  }
  if (terse) {
    cli_usage_exit("bad numeric argument");
  }
  (void)str_fmt(need, sizeof need, "need a whole number from %d to %d", lo, hi);
  cli_bad_value(opt, need);
}

void cli_addr(const char *opt, const char *s, struct addr *a, int port_needed) {
  if (addr_parse_hostport(s, 0, a) != 0) {
    cli_bad_value(opt, terse ? "not an address" : "not an address (ADDR:PORT)");
  }
  if (port_needed && addr_port(a) == 0) {
    cli_bad_value(opt, "needs a port (ADDR:PORT, PORT > 0)");
  }
}

void cli_host(const char *opt, const char *s, struct addr *a) {
  cli_addr(opt, s, a, 0);
  if (addr_port(a) != 0 && terse) {
    char msg[128];
    (void)str_fmt(msg, sizeof msg, "--%s takes an address without a port", opt);
    cli_usage_exit(msg);
  }
  if (addr_port(a) != 0) {
    cli_bad_value(opt, "takes an address without a port");
  }
}

void cli_copy(char *dst, size_t cap, const char *s) {
  if (str_copy(dst, cap, s) != 0) {
    cli_usage_exit("argument too long");
  }
}

enum xp_proto cli_proto(const char *opt, const char *s) {
  if (strcmp(s, "tcp") == 0) {
    return XP_TCP;
  }
  if (strcmp(s, "sctp") != 0) {
    cli_bad_value(opt, "tcp or sctp");
  }
  return XP_SCTP;
}
