/* tunables.c - server settings and the ftpd command line (see tunables.h). */
#define _GNU_SOURCE
#include "tunables.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "cliparse.h"
#include "extblock.h"
#include "str.h"
#include "sysutil.h"
#include "xpargs.h"

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
    "  --data-timeout S      data stall timeout (default 60)\n"
    "  --reply-on-close      reply 226 once close() returns, before the peer\n"
    "                        acknowledged the end (FreeBSD's ftpd); default:\n"
    "                        once it has\n"
    "  --open-timeout S      longest wait for a data connection to open\n"
    "                        (default 190: Linux's SYN and SYN-ACK retries)\n"
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
    "  --sndbuf BYTES / --rcvbuf BYTES\n"
    "  --sctp-also-bind ADDR another local address of every SCTP listener\n"
    "                        and data association (multihoming; up to 4)\n"
    "  --sctp-stack kernel|usrsctp   whose SCTP (default kernel); usrsctp\n"
    "                        speaks it inside UDP (RFC 6951) and serves one\n"
    "                        session at a time, in this process\n"
    "  --sctp-udp-port PORT  usrsctp: its own UDP port (default 9899); each\n"
    "                        association answers the client's own\n"
    "  --usrsctp-sysctl NAME=VALUE   usrsctp: one of its sysctls (repeated)\n";

void tunables_defaults(void) {
  memset(&tunables, 0, sizeof tunables);
  tunables.anon_enable = 1;
  tunables.max_clients = 64;
  tunables.max_per_ip = 16;
  tunables.idle_timeout_s = 300;
  tunables.data_timeout_s = 60;
  /* Longer than any handshake Linux's defaults let succeed: the client's SYN
   * retried 6 times from a 1 s timer (127 s), then the SYN-ACK retried 5
   * times (63 s).  vsftpd's accept_timeout is 60 s. */
  tunables.open_timeout_s = 190;
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
  O_OPENTO,
  O_MAXLINE,
  O_LOG,
  O_RUNAS,
  O_CHUNK,
  O_MAX_PARALLEL,
  O_REPLY_ON_CLOSE
};

/* and the socket knobs (XPA_SOCKET_KNOBS, xpargs.h) */
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
    {"open-timeout", required_argument, NULL, O_OPENTO},
    {"max-line", required_argument, NULL, O_MAXLINE},
    {"log", required_argument, NULL, O_LOG},
    {"run-as", required_argument, NULL, O_RUNAS},
    {"chunk", required_argument, NULL, O_CHUNK},
    {"max-parallel", required_argument, NULL, O_MAX_PARALLEL},
    {"reply-on-close", no_argument, NULL, O_REPLY_ON_CLOSE},
    {"help", no_argument, NULL, CLI_HELP},
    {NULL, 0, NULL, 0}};

static void set_user(const char *s) {
  const char *colon = strchr(s, ':');
  size_t n;
  if (colon == NULL || colon == s) {
    cli_usage_exit("--user wants NAME:PASS");
  }
  n = (size_t)(colon - s);
  if (n >= sizeof tunables.user ||
      str_copy(tunables.pass, sizeof tunables.pass, colon + 1) != 0) {
    cli_usage_exit("--user: too long");
  }
  memcpy(tunables.user, s, n);
  tunables.user[n] = '\0';
}

static void handle_opt(void *ctx, int c, const char *arg) {
  struct tunables *t = ctx;
  switch (c) {
  case O_ROOT: cli_copy(t->root, sizeof t->root, arg); break;
  case O_TCP: cli_copy(t->tcp_listen, sizeof t->tcp_listen, arg); break;
  case O_SCTP: cli_copy(t->sctp_listen, sizeof t->sctp_listen, arg); break;
  case O_UPLOAD: t->allow_upload = 1; break;
  case O_NOANON: t->anon_enable = 0; break;
  case O_USER: set_user(arg); break;
  case O_MAXCLI: t->max_clients = cli_int("max-clients", arg, 1, 100000); break;
  case O_MAXPERIP: t->max_per_ip = cli_int("max-per-ip", arg, 1, 100000); break;
  case O_MAXSESS:
    t->max_sessions = cli_int("max-sessions", arg, 0, INT32_MAX);
    break;
  case O_ONCE: t->max_sessions = 1; break;
  case O_IDLE:
    t->idle_timeout_s = cli_int("idle-timeout", arg, 1, 86400);
    break;
  case O_DATATO:
    t->data_timeout_s = cli_int("data-timeout", arg, 1, 86400);
    break;
  case O_OPENTO:
    t->open_timeout_s = cli_int("open-timeout", arg, 1, 86400);
    break;
  case O_MAXLINE: t->max_line = cli_int("max-line", arg, 64, 1 << 20); break;
  case O_LOG: cli_copy(t->log_file, sizeof t->log_file, arg); break;
  case O_RUNAS: cli_copy(t->run_as, sizeof t->run_as, arg); break;
  case O_CHUNK: t->chunk = (unsigned)cli_int("chunk", arg, 512, 1 << 22); break;
  case O_MAX_PARALLEL:
    t->max_parallel = (unsigned)cli_int("max-parallel", arg, 1, EXT_MAX_CONNS);
    break;
  case O_REPLY_ON_CLOSE: t->reply_on_close = 1; break;
  default: cli_usage_exit(NULL);
  }
}

void tunables_parse_args(int argc, char **argv) {
  const struct cli_spec spec = {"ftpd",
                                usage_text,
                                "",
                                CLI_GETOPT_SAYS | CLI_TERSE,
                                longopts,
                                XPA_SOCKET_KNOBS | XPA_BIT(XPA_ALSO_BIND) |
                                    XPA_SCTP_STACK_OWN,
                                &tunables.ctrl_opts,
                                NULL,
                                handle_opt,
                                &tunables};
  char real[PATH_MAX];
  if (cli_parse(argc, argv, &spec) != argc) {
    cli_usage_exit("unexpected argument");
  }
  if (tunables.root[0] == '\0') {
    cli_usage_exit("--root is required");
  }
  if (tunables.tcp_listen[0] == '\0' && tunables.sctp_listen[0] == '\0') {
    cli_usage_exit("give --tcp and/or --sctp");
  }
  if (realpath(tunables.root, real) == NULL) {
    die("--root %s: cannot resolve", tunables.root);
  }
  cli_copy(tunables.root, sizeof tunables.root, real);
  xpa_check_stack(tunables.sctp_listen[0] != '\0', "--sctp ADDR:PORT",
                  &tunables.ctrl_opts);
  tunables.ctrl_opts.io_timeout_s = tunables.data_timeout_s;
  tunables.data_opts = tunables.ctrl_opts;
}
