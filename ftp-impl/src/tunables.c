/* tunables.c - server settings and the ftpd command line (see tunables.h). */
#define _GNU_SOURCE
#include "tunables.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extblock.h"
#include "str.h"
#include "sysutil.h"

struct tunables tunables;

static const char usage_text[] =
    "usage: ftpd --root DIR --tcp ADDR:PORT [--sctp ADDR:PORT] [options]\n"
    "  --root DIR            tree to serve (required)\n"
    "  --tcp ADDR:PORT       TCP listener (port 0: any free port)\n"
    "  --sctp ADDR:PORT      SCTP listener (naive and multistream clients)\n"
    "  --allow-upload        accept STOR\n"
    "  --no-anonymous        refuse anonymous login\n"
    "  --user NAME:PASS      a named account (same root, same rights)\n"
    "  --max-clients N       concurrent sessions (default 64)\n"
    "  --max-per-ip N        concurrent sessions from one address (default "
    "16)\n"
    "  --max-sessions N      exit after N sessions have ended (--once: 1)\n"
    "  --idle-timeout S      control idle timeout (default 300)\n"
    "  --data-timeout S      data connect/accept/stall timeout (default 60)\n"
    "  --max-line N          longest command line (default 1024)\n"
    "  --log FILE            log file (default stderr)\n"
    "  --run-as USER         started as root: run as USER after binding\n"
    "                        (default nobody; root keeps root)\n"
    "  --chunk BYTES         SCTP data message size, MODE B write size,\n"
    "                        MODE E block size (default 65536)\n"
    "  --max-parallel N      MODE E connections per transfer (default 16)\n"
    "  --nodelay 0|1         TCP_NODELAY/SCTP_NODELAY (default 1)\n"
    "  --sack-delay MS       SCTP delayed SACK timer\n"
    "  --sack-freq N         SCTP SACK frequency (1: no delayed SACK)\n"
    "  --sctp-rto-min MS / --sctp-rto-initial MS / --sctp-rto-max MS\n"
    "  --sndbuf BYTES / --rcvbuf BYTES\n";

static void usage_exit(const char *why) {
  if (why != NULL) {
    fprintf(stderr, "ftpd: %s\n", why);
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

void tunables_defaults(void) {
  memset(&tunables, 0, sizeof tunables);
  tunables.anon_enable = 1;
  tunables.max_clients = 64;
  tunables.max_per_ip = 16;
  tunables.idle_timeout_s = 300;
  tunables.data_timeout_s = 60;
  tunables.max_line = 1024;
  tunables.chunk = 65536;
  tunables.max_parallel = 16;
  tunables.max_listing = 16u << 20;
  xp_opts_default(&tunables.ctrl_opts);
}

enum {
  O_ROOT = 256,
  O_TCP,
  O_SCTP,
  O_UPLOAD,
  O_NOANON,
  O_USER,
  O_MAXCLI,
  O_MAXPERIP,
  O_MAXSESS,
  O_ONCE,
  O_IDLE,
  O_DATATO,
  O_MAXLINE,
  O_LOG,
  O_RUNAS,
  O_CHUNK,
  O_MAX_PARALLEL,
  O_NODELAY,
  O_SACKD,
  O_SACKF,
  O_RTOMIN,
  O_RTOINIT,
  O_RTOMAX,
  O_SNDBUF,
  O_RCVBUF,
  O_HELP
};

static const struct option longopts[] = {
    {"root", required_argument, NULL, O_ROOT},
    {"tcp", required_argument, NULL, O_TCP},
    {"sctp", required_argument, NULL, O_SCTP},
    {"allow-upload", no_argument, NULL, O_UPLOAD},
    {"no-anonymous", no_argument, NULL, O_NOANON},
    {"user", required_argument, NULL, O_USER},
    {"max-clients", required_argument, NULL, O_MAXCLI},
    {"max-per-ip", required_argument, NULL, O_MAXPERIP},
    {"max-sessions", required_argument, NULL, O_MAXSESS},
    {"once", no_argument, NULL, O_ONCE},
    {"idle-timeout", required_argument, NULL, O_IDLE},
    {"data-timeout", required_argument, NULL, O_DATATO},
    {"max-line", required_argument, NULL, O_MAXLINE},
    {"log", required_argument, NULL, O_LOG},
    {"run-as", required_argument, NULL, O_RUNAS},
    {"chunk", required_argument, NULL, O_CHUNK},
    {"max-parallel", required_argument, NULL, O_MAX_PARALLEL},
    {"nodelay", required_argument, NULL, O_NODELAY},
    {"sack-delay", required_argument, NULL, O_SACKD},
    {"sack-freq", required_argument, NULL, O_SACKF},
    {"sctp-rto-min", required_argument, NULL, O_RTOMIN},
    {"sctp-rto-initial", required_argument, NULL, O_RTOINIT},
    {"sctp-rto-max", required_argument, NULL, O_RTOMAX},
    {"sndbuf", required_argument, NULL, O_SNDBUF},
    {"rcvbuf", required_argument, NULL, O_RCVBUF},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0}};

static void set_user(const char *s) {
  const char *colon = strchr(s, ':');
  size_t n;
  if (colon == NULL || colon == s) {
    usage_exit("--user wants NAME:PASS");
  }
  n = (size_t)(colon - s);
  if (n >= sizeof tunables.user ||
      str_copy(tunables.pass, sizeof tunables.pass, colon + 1) != 0) {
    usage_exit("--user: too long");
  }
  memcpy(tunables.user, s, n);
  tunables.user[n] = '\0';
}

static void copy_arg(char *dst, size_t cap, const char *src) {
  if (str_copy(dst, cap, src) != 0) {
    usage_exit("argument too long");
  }
}

static void handle_opt(int c, const char *arg) {
  struct xp_opts *o = &tunables.ctrl_opts;
  switch (c) {
  case O_ROOT: copy_arg(tunables.root, sizeof tunables.root, arg); break;
  case O_TCP:
    copy_arg(tunables.tcp_listen, sizeof tunables.tcp_listen, arg);
    break;
  case O_SCTP:
    copy_arg(tunables.sctp_listen, sizeof tunables.sctp_listen, arg);
    break;
  case O_UPLOAD: tunables.allow_upload = 1; break;
  case O_NOANON: tunables.anon_enable = 0; break;
  case O_USER: set_user(arg); break;
  case O_MAXCLI: tunables.max_clients = int_arg(arg, 1, 100000); break;
  case O_MAXPERIP: tunables.max_per_ip = int_arg(arg, 1, 100000); break;
  case O_MAXSESS: tunables.max_sessions = int_arg(arg, 0, INT32_MAX); break;
  case O_ONCE: tunables.max_sessions = 1; break;
  case O_IDLE: tunables.idle_timeout_s = int_arg(arg, 1, 86400); break;
  case O_DATATO: tunables.data_timeout_s = int_arg(arg, 1, 86400); break;
  case O_MAXLINE: tunables.max_line = int_arg(arg, 64, 1 << 20); break;
  case O_LOG: copy_arg(tunables.log_file, sizeof tunables.log_file, arg); break;
  case O_RUNAS: copy_arg(tunables.run_as, sizeof tunables.run_as, arg); break;
  case O_CHUNK: tunables.chunk = (unsigned)int_arg(arg, 512, 1 << 22); break;
  case O_MAX_PARALLEL:
    tunables.max_parallel = (unsigned)int_arg(arg, 1, EXT_MAX_CONNS);
    break;
  case O_NODELAY: o->nodelay = int_arg(arg, 0, 1); break;
  case O_SACKD: o->sack_delay_ms = int_arg(arg, 0, 500); break;
  case O_SACKF: o->sack_freq = int_arg(arg, 0, 65535); break;
  case O_RTOMIN: o->rto_min_ms = int_arg(arg, 1, 3600000); break;
  case O_RTOINIT: o->rto_initial_ms = int_arg(arg, 1, 3600000); break;
  case O_RTOMAX: o->rto_max_ms = int_arg(arg, 1, 3600000); break;
  case O_SNDBUF: o->sndbuf = int_arg(arg, 1024, 1 << 30); break;
  case O_RCVBUF: o->rcvbuf = int_arg(arg, 1024, 1 << 30); break;
  case O_HELP: fputs(usage_text, stdout); exit(0);
  default: usage_exit(NULL);
  }
}

void tunables_parse_args(int argc, char **argv) {
  int c;
  char real[PATH_MAX];
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    handle_opt(c, optarg);
  }
  if (optind != argc) {
    usage_exit("unexpected argument");
  }
  if (tunables.root[0] == '\0') {
    usage_exit("--root is required");
  }
  if (tunables.tcp_listen[0] == '\0' && tunables.sctp_listen[0] == '\0') {
    usage_exit("give --tcp and/or --sctp");
  }
  if (realpath(tunables.root, real) == NULL) {
    die("--root %s: cannot resolve", tunables.root);
  }
  copy_arg(tunables.root, sizeof tunables.root, real);
  tunables.ctrl_opts.io_timeout_s = tunables.data_timeout_s;
  tunables.data_opts = tunables.ctrl_opts;
}
