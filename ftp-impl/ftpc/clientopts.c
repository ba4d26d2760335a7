/* clientopts.c - parse the ftpc command line (see clientopts.h). */
#define _GNU_SOURCE
#include "clientopts.h"

#include <getopt.h>
#include <string.h>

#include "cliargs.h"
#include "cliparse.h"
#include "extblock.h"
#include "str.h"
#include "xpargs.h"

static const char usage_text[] =
    "usage: ftpc --variant tcp|sctp-naive|sctp-ms|sctp-ms-cp|tcp-pipelined|"
    "xftp\n"
    "            [options] HOST[:PORT]\n"
    "            COMMAND [ARGS] [COMMAND [ARGS]...]\n"
    "commands: ls [DIR] | dir [DIR] | get FILE | mget PATTERN | put FILE\n"
    "options:\n"
    "  --out DIR             where downloads go (default .)\n"
    "  --active              PORT/EPRT instead of PASV/EPSV (not with\n"
    "                        tcp-pipelined)\n"
    "  --bind ADDR           local address of the control and data "
    "connections\n"
    "                        (SCTP then lists only ADDR in its associations)\n"
    "  --user NAME --pass P  login (default anonymous)\n"
    "  --timeout S           longest wait without progress (default 60)\n"
    "  --open-timeout S      longest wait for a transfer's 1xx reply once its\n"
    "                        command is sent (default 380: twice ftpd's)\n"
    "  --open-retries N      transfers retried on a new data connection after\n"
    "                        a 425 or the open limit, 0 to 10 (default 2)\n"
    "  --parallel N          xftp: data connections per transfer, 1 to 64\n"
    "                        (default 4)\n"
    "  --chunk BYTES         upload message size on stream 1, upload write\n"
    "                        size in blocks (default 65536)\n"
    "  --nodelay 0|1 --sack-delay MS --sack-freq N --sctp-rto-min MS\n"
    "  --sctp-rto-initial MS --sctp-rto-max MS --sndbuf B --rcvbuf B\n"
    "  --sctp-also-bind ADDR another local address of every association,\n"
    "                        beside --bind's (multihoming; up to 4)\n"
    "  --sctp-also-peer ADDR another address of the server every association\n"
    "                        is opened to, beside HOST's or PASV's (up to "
    "4)\n" XPA_SCTP_STACKS_USAGE
    "Events go to stdout as JSON lines; errors to stderr; exit 0 only if all\n"
    "commands succeeded.\n";

/* An address without a port: every socket gets a port from the kernel. */
static void set_bind(struct copts *o, const char *a) {
  cli_host("bind", a, &o->bind_addr);
  o->has_bind = 1;
}

static void set_variant(struct copts *o, const char *v) {
  static const char *names[] = {"tcp",        "sctp-naive",    "sctp-ms",
                                "sctp-ms-cp", "tcp-pipelined", "xftp"};
  int i;
  for (i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
    if (strcmp(v, names[i]) == 0) {
      o->variant = (enum variant)i;
      cli_copy(o->variant_name, sizeof o->variant_name, v);
      return;
    }
  }
  cli_usage_exit("unknown variant");
}

enum {
  O_VARIANT = 256,
  O_OUT,
  O_ACTIVE,
  O_USER,
  O_PASS,
  O_TIMEOUT,
  O_OPENTO,
  O_RETRIES,
  O_CHUNK,
  O_BIND,
  O_PARALLEL
};

/* and the socket knobs of ftpd (XPA_SOCKET_KNOBS, xpargs.h) */
static const struct option longopts[] = {
    {"variant", required_argument, NULL, O_VARIANT},
    {"out", required_argument, NULL, O_OUT},
    {"active", no_argument, NULL, O_ACTIVE},
    {"user", required_argument, NULL, O_USER},
    {"pass", required_argument, NULL, O_PASS},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"open-timeout", required_argument, NULL, O_OPENTO},
    {"open-retries", required_argument, NULL, O_RETRIES},
    {"chunk", required_argument, NULL, O_CHUNK},
    {"bind", required_argument, NULL, O_BIND},
    {"parallel", required_argument, NULL, O_PARALLEL},
    {"help", no_argument, NULL, CLI_HELP},
    {NULL, 0, NULL, 0}};

static void handle_opt(void *ctx, int c, const char *arg) {
  struct copts *o = ctx;
  switch (c) {
  case O_VARIANT: set_variant(o, arg); break;
  case O_OUT: cli_copy(o->out_dir, sizeof o->out_dir, arg); break;
  case O_ACTIVE: o->active = 1; break;
  case O_USER: cli_copy(o->user, sizeof o->user, arg); break;
  case O_PASS: cli_copy(o->pass, sizeof o->pass, arg); break;
  case O_TIMEOUT: o->timeout_s = cli_int("timeout", arg, 1, 86400); break;
  case O_OPENTO: o->open_s = cli_int("open-timeout", arg, 1, 86400); break;
  case O_RETRIES: o->retries = cli_int("open-retries", arg, 0, 10); break;
  case O_CHUNK: o->chunk = (unsigned)cli_int("chunk", arg, 512, 1 << 22); break;
  case O_BIND: set_bind(o, arg); break;
  case O_PARALLEL:
    o->parallel = (unsigned)cli_int("parallel", arg, 1, (int)EXT_MAX_CONNS);
    break;
  default: cli_usage_exit(NULL);
  }
}

static const char *const commands[] = {"ls", "dir", "get", "mget", "put"};

int copts_is_command(const char *word) {
  size_t i;
  for (i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(word, commands[i]) == 0) {
      return 1;
    }
  }
  return 0;
}

/* ls and dir take an argument if one follows that is not a command. */
static int optional_arg(const char *verb) {
  return strcmp(verb, "ls") == 0 || strcmp(verb, "dir") == 0;
}

/* A word after HOST that names one of ftpc's options is neither a command
 * nor a file name: the option was meant, in the wrong place. */
static void not_an_option(const struct cli_spec *spec, const char *word) {
  char why[128];
  if (cli_names_option(spec, word)) {
    (void)str_fmt(why, sizeof why, "option %.*s belongs before HOST",
                  (int)strcspn(word, "="), word);
    cli_usage_exit(why);
  }
}

/* The commands after HOST, checked before anything connects: each known,
 * with its argument, and no option among them. */
static void check_commands(const struct cli_spec *spec, char **w, int n) {
  char why[160];
  int i = 0;
  while (i < n) {
    const char *verb = w[i++];
    not_an_option(spec, verb);
    if (!copts_is_command(verb)) {
      (void)str_fmt(why, sizeof why, "unknown command %.100s", verb);
      cli_usage_exit(why);
    }
    if (optional_arg(verb)) {
      if (i < n && !copts_is_command(w[i])) {
        not_an_option(spec, w[i++]);
      }
    } else if (i < n) {
      not_an_option(spec, w[i++]);
    } else {
      (void)str_fmt(why, sizeof why, "command %s needs an argument", verb);
      cli_usage_exit(why);
    }
  }
}

void copts_parse(int argc, char **argv, struct copts *o) {
  /* "+": stop at the first non-option (HOST), commands follow it. */
  const struct cli_spec spec = {
      "ftpc",     usage_text,
      "+",        CLI_GETOPT_SAYS | CLI_TERSE,
      longopts,   XPA_SOCKET_KNOBS | XPA_MULTIHOMING | XPA_SCTP_STACKS,
      &o->xp,     NULL,
      handle_opt, o};
  int first;
  memset(o, 0, sizeof *o);
  xp_opts_default(&o->xp);
  o->variant = V_TCP;
  cli_copy(o->variant_name, sizeof o->variant_name, "tcp");
  cli_copy(o->out_dir, sizeof o->out_dir, ".");
  cli_copy(o->user, sizeof o->user, "anonymous");
  cli_copy(o->pass, sizeof o->pass, "ftpc@");
  o->timeout_s = 60;
  /* ftpd's default open limit (190 s, Linux's SYN and SYN-ACK retries)
   * twice over: its 425 has as long again to cross the control connection,
   * and normally comes first */
  o->open_s = 380;
  o->retries = 2;
  o->chunk = 65536;
  o->parallel = 4;
  first = cli_parse(argc, argv, &spec);
  if (argc - first < 2) {
    cli_usage_exit("need HOST[:PORT] and a command");
  }
  cli_copy(o->host, sizeof o->host, argv[first]);
  o->cmds = argv + first + 1;
  o->ncmds = argc - first - 1;
  check_commands(&spec, o->cmds, o->ncmds);
  xpa_check_stack(copts_sctp(o), "an sctp-* --variant", &o->xp);
  xpa_default_peer_udp_port(&o->xp);
  o->xp.io_timeout_s = o->timeout_s;
  /* its one data connection is opened once, at login, by the client */
  if (o->active && o->variant == V_TCP_PIPELINED) {
    cli_usage_exit("--active does not go with tcp-pipelined");
  }
  /* an unbound socket announces every address of the host already */
  if (o->xp.also_bind.n > 0 && !o->has_bind) {
    cli_usage_exit("--sctp-also-bind needs --bind");
  }
  /* in MODE E the sender connects: xftp always listens (PORT/EPRT) */
  if (o->active && o->variant == V_XFTP) {
    cli_usage_exit("--active is implied by xftp (the server connects)");
  }
}

const struct addr *copts_bind(const struct copts *o) {
  return o->has_bind ? &o->bind_addr : NULL;
}

int copts_sctp(const struct copts *o) {
  return o->variant != V_TCP && o->variant != V_TCP_PIPELINED &&
         o->variant != V_XFTP;
}

int copts_xftp(const struct copts *o) { return o->variant == V_XFTP; }

int copts_ms(const struct copts *o) {
  return o->variant == V_SCTP_MS || o->variant == V_SCTP_MS_CP;
}

int copts_block(const struct copts *o) { return o->variant == V_TCP_PIPELINED; }

int copts_pipelined(const struct copts *o) {
  return o->variant == V_SCTP_MS_CP || o->variant == V_TCP_PIPELINED;
}
