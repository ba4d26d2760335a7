/* clientopts.c - parse the ftpc command line (see clientopts.h). */
#define _GNU_SOURCE
#include "clientopts.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extblock.h"
#include "str.h"

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
    "  --parallel N          xftp: data connections per transfer, 1 to 64\n"
    "                        (default 4)\n"
    "  --chunk BYTES         upload message size on stream 1, upload write\n"
    "                        size in blocks (default 65536)\n"
    "  --nodelay 0|1 --sack-delay MS --sack-freq N --sctp-rto-min MS\n"
    "  --sctp-rto-initial MS --sctp-rto-max MS --sndbuf B --rcvbuf B\n"
    "Events go to stdout as JSON lines; errors to stderr; exit 0 only if all\n"
    "commands succeeded.\n";

static void usage_exit(const char *why) {
  if (why != NULL) {
    fprintf(stderr, "ftpc: %s\n", why);
  }
  fputs(usage_text, stderr);
  exit(2);
}

static int int_arg(const char *s, int lo, int hi) {
  uint64_t v;
  if (str_to_u64(s, (uint64_t)hi, &v) != 0 || (int)v < lo) {
    usage_exit("bad numeric argument");
  }
  return (int)v;
}

static void copy_arg(char *dst, size_t cap, const char *src) {
  if (str_copy(dst, cap, src) != 0) {
    usage_exit("argument too long");
  }
}

/* An address without a port: every socket gets a port from the kernel. */
static void set_bind(struct copts *o, const char *a) {
  if (addr_parse_hostport(a, 0, &o->bind_addr) != 0) {
    usage_exit("--bind: not an address");
  }
  if (addr_port(&o->bind_addr) != 0) {
    usage_exit("--bind takes an address without a port");
  }
  o->has_bind = 1;
}

static void set_variant(struct copts *o, const char *v) {
  static const char *names[] = {"tcp",        "sctp-naive",    "sctp-ms",
                                "sctp-ms-cp", "tcp-pipelined", "xftp"};
  int i;
  for (i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
    if (strcmp(v, names[i]) == 0) {
      o->variant = (enum variant)i;
      copy_arg(o->variant_name, sizeof o->variant_name, v);
      return;
    }
  }
  usage_exit("unknown variant");
}

enum {
  O_VARIANT = 256,
  O_OUT,
  O_ACTIVE,
  O_USER,
  O_PASS,
  O_TIMEOUT,
  O_CHUNK,
  O_NODELAY,
  O_SACKD,
  O_SACKF,
  O_RTOMIN,
  O_RTOINIT,
  O_RTOMAX,
  O_SNDBUF,
  O_RCVBUF,
  O_BIND,
  O_PARALLEL,
  O_HELP
};

static const struct option longopts[] = {
    {"variant", required_argument, NULL, O_VARIANT},
    {"out", required_argument, NULL, O_OUT},
    {"active", no_argument, NULL, O_ACTIVE},
    {"user", required_argument, NULL, O_USER},
    {"pass", required_argument, NULL, O_PASS},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"chunk", required_argument, NULL, O_CHUNK},
    {"nodelay", required_argument, NULL, O_NODELAY},
    {"sack-delay", required_argument, NULL, O_SACKD},
    {"sack-freq", required_argument, NULL, O_SACKF},
    {"sctp-rto-min", required_argument, NULL, O_RTOMIN},
    {"sctp-rto-initial", required_argument, NULL, O_RTOINIT},
    {"sctp-rto-max", required_argument, NULL, O_RTOMAX},
    {"sndbuf", required_argument, NULL, O_SNDBUF},
    {"rcvbuf", required_argument, NULL, O_RCVBUF},
    {"bind", required_argument, NULL, O_BIND},
    {"parallel", required_argument, NULL, O_PARALLEL},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0}};

static void handle_opt(struct copts *o, int c, const char *arg) {
  switch (c) {
  case O_VARIANT: set_variant(o, arg); break;
  case O_OUT: copy_arg(o->out_dir, sizeof o->out_dir, arg); break;
  case O_ACTIVE: o->active = 1; break;
  case O_USER: copy_arg(o->user, sizeof o->user, arg); break;
  case O_PASS: copy_arg(o->pass, sizeof o->pass, arg); break;
  case O_TIMEOUT: o->timeout_s = int_arg(arg, 1, 86400); break;
  case O_CHUNK: o->chunk = (unsigned)int_arg(arg, 512, 1 << 22); break;
  case O_NODELAY: o->xp.nodelay = int_arg(arg, 0, 1); break;
  case O_SACKD: o->xp.sack_delay_ms = int_arg(arg, 0, 500); break;
  case O_SACKF: o->xp.sack_freq = int_arg(arg, 0, 65535); break;
  case O_RTOMIN: o->xp.rto_min_ms = int_arg(arg, 1, 3600000); break;
  case O_RTOINIT: o->xp.rto_initial_ms = int_arg(arg, 1, 3600000); break;
  case O_RTOMAX: o->xp.rto_max_ms = int_arg(arg, 1, 3600000); break;
  case O_SNDBUF: o->xp.sndbuf = int_arg(arg, 1024, 1 << 30); break;
  case O_RCVBUF: o->xp.rcvbuf = int_arg(arg, 1024, 1 << 30); break;
  case O_BIND: set_bind(o, arg); break;
  case O_PARALLEL:
    o->parallel = (unsigned)int_arg(arg, 1, (int)EXT_MAX_CONNS);
    break;
  case O_HELP: fputs(usage_text, stdout); exit(0);
  default: usage_exit(NULL);
  }
}

void copts_parse(int argc, char **argv, struct copts *o) {
  int c;
  memset(o, 0, sizeof *o);
  xp_opts_default(&o->xp);
  o->variant = V_TCP;
  copy_arg(o->variant_name, sizeof o->variant_name, "tcp");
  copy_arg(o->out_dir, sizeof o->out_dir, ".");
  copy_arg(o->user, sizeof o->user, "anonymous");
  copy_arg(o->pass, sizeof o->pass, "ftpc@");
  o->timeout_s = 60;
  o->chunk = 65536;
  o->parallel = 4;
  /* "+": stop at the first non-option (HOST), commands follow it. */
  while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
    handle_opt(o, c, optarg);
  }
  if (argc - optind < 2) {
    usage_exit("need HOST[:PORT] and a command");
  }
  copy_arg(o->host, sizeof o->host, argv[optind]);
  o->cmds = argv + optind + 1;
  o->ncmds = argc - optind - 1;
  o->xp.io_timeout_s = o->timeout_s;
  /* its one data connection is opened once, at login, by the client */
  if (o->active && o->variant == V_TCP_PIPELINED) {
    usage_exit("--active does not go with tcp-pipelined");
  }
  /* in MODE E the sender connects: xftp always listens (PORT/EPRT) */
  if (o->active && o->variant == V_XFTP) {
    usage_exit("--active is implied by xftp (the server connects)");
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
