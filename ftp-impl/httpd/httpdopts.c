/* httpdopts.c - parse the httpd command line (see httpdopts.h). */
#define _GNU_SOURCE
#include "httpdopts.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "cliparse.h"
#include "str.h"
#include "xpargs.h"

struct httpd_opts httpd_opts;

static const char usage_text[] =
    "usage: httpd --root DIR [--listen ADDR:PORT] [--listen-sctp ADDR:PORT] "
    "[options]\n"
    "  --root DIR            the served directory; nothing outside it is "
    "served\n"
    "  --listen ADDR:PORT    HTTP over TCP (port 0: any free port)\n"
    "  --listen-sctp ADDR:PORT  HTTP over SCTP, a request's answer on its "
    "stream\n"
    "  --streams N           SCTP streams offered each way (default 64)\n"
    "  --write-size BYTES    bytes per write; SCTP: per message (default "
    "1024;\n"
    "                        0: sendfile over TCP, 64 KB messages over SCTP)\n"
    "  --access-log 0|1      a log line per request (default 1)\n"
    "  --cork 0|1            TCP: answers to pipelined requests corked into "
    "full\n"
    "                        segments (default 0)\n"
    "  --max-requests N      per connection (default 10000)\n"
    "  --idle-timeout S      between requests (default 60)\n"
    "  --header-timeout S    to receive one request head (default 20)\n"
    "  --io-timeout S        an answer's longest stall, no byte taken "
    "(default 60)\n"
    "  --max-clients N       concurrent connections, 503 beyond (default "
    "50)\n"
    "  --max-per-ip N        concurrent connections from one address, 503 "
    "beyond\n"
    "                        (default 16)\n"
    "  --max-sessions N      exit after N connections have ended (default: "
    "never)\n"
    "  --max-head BYTES      request line and headers (default 8192)\n"
    "  --max-target BYTES    request target (default 2048)\n"
    "  --max-headers N       header fields (default 100)\n"
    "  --sndbuf/--rcvbuf BYTES  SO_SNDBUF / SO_RCVBUF\n"
    "  --nodelay 0|1         TCP_NODELAY / SCTP_NODELAY (default 1)\n"
    "  --sctp-scheduler fcfs|rr  SCTP: queued answers sent first come first\n"
    "                        served, or their streams in turn (default rr)\n"
    "  --sctp-stack kernel|usrsctp   whose SCTP (default kernel); usrsctp\n"
    "                        speaks it inside UDP (RFC 6951) and serves one\n"
    "                        connection at a time\n"
    "  --sctp-udp-port PORT  usrsctp: its UDP port (default 9899)\n"
    "  --usrsctp-sysctl NAME=VALUE   usrsctp: one of its sysctls (repeated)\n"
    "  --run-as USER         started as root: the user after binding (default\n"
    "                        nobody; root keeps root)\n"
    "  --log FILE            one line per request (default stderr)\n"
    "Prints \"listening tcp|sctp ADDR:PORT\" per listener on stdout.\n";

enum {
  O_ROOT = 256,
  O_LISTEN,
  O_LISTEN_SCTP,
  O_WRITE_SIZE,
  O_MAX_REQ,
  O_IDLE,
  O_HEADER_TO,
  O_MAX_CLIENTS,
  O_MAX_PER_IP,
  O_MAX_SESSIONS,
  O_MAX_HEAD,
  O_MAX_TARGET,
  O_MAX_HEADERS,
  O_LOG,
  O_SCHEDULER,
  O_RUNAS,
  O_ACCESS_LOG,
  O_CORK
};

/* and --streams, --io-timeout, --sndbuf, --rcvbuf, --nodelay and the SCTP
 * stack's (xpargs.h) */
static const struct option longopts[] = {
    {"root", required_argument, NULL, O_ROOT},
    {"listen", required_argument, NULL, O_LISTEN},
    {"listen-sctp", required_argument, NULL, O_LISTEN_SCTP},
    {"write-size", required_argument, NULL, O_WRITE_SIZE},
    {"max-requests", required_argument, NULL, O_MAX_REQ},
    {"idle-timeout", required_argument, NULL, O_IDLE},
    {"header-timeout", required_argument, NULL, O_HEADER_TO},
    {"max-clients", required_argument, NULL, O_MAX_CLIENTS},
    {"max-per-ip", required_argument, NULL, O_MAX_PER_IP},
    {"max-sessions", required_argument, NULL, O_MAX_SESSIONS},
    {"max-head", required_argument, NULL, O_MAX_HEAD},
    {"max-target", required_argument, NULL, O_MAX_TARGET},
    {"max-headers", required_argument, NULL, O_MAX_HEADERS},
    {"log", required_argument, NULL, O_LOG},
    {"sctp-scheduler", required_argument, NULL, O_SCHEDULER},
    {"run-as", required_argument, NULL, O_RUNAS},
    {"access-log", required_argument, NULL, O_ACCESS_LOG},
    {"cork", required_argument, NULL, O_CORK},
    {"help", no_argument, NULL, CLI_HELP},
    {NULL, 0, NULL, 0}};

#define HTTPD_XP                                                               \
  (XPA_BIT(XPA_STREAMS) | XPA_BIT(XPA_IO_TIMEOUT) | XPA_BIT(XPA_SNDBUF) |      \
   XPA_BIT(XPA_RCVBUF) | XPA_BIT(XPA_NODELAY) | XPA_SCTP_STACK_OWN)

static void set_root(const char *arg) {
  if (realpath(arg, httpd_opts.root) == NULL) {
    cli_bad_value("root", "not an existing directory");
  }
}

static void set_scheduler(const char *arg) {
  if (strcmp(arg, "rr") != 0 && strcmp(arg, "fcfs") != 0) {
    cli_bad_value("sctp-scheduler", "fcfs or rr");
  }
  httpd_opts.round_robin = arg[0] == 'r';
}

static void handle_opt(void *ctx, int c, const char *arg) {
  struct httpd_opts *o = ctx;
  switch (c) {
  case O_ROOT: set_root(arg); break;
  case O_LISTEN: o->listen_tcp = arg; break;
  case O_LISTEN_SCTP: o->listen_sctp = arg; break;
  case O_WRITE_SIZE:
    o->write_size = (size_t)cli_int("write-size", arg, 0, 1 << 20);
    break;
  case O_MAX_REQ:
    o->max_requests = cli_int("max-requests", arg, 1, 1 << 30);
    break;
  case O_IDLE:
    o->idle_timeout_s = cli_int("idle-timeout", arg, 1, 86400);
    break;
  case O_HEADER_TO:
    o->header_timeout_s = cli_int("header-timeout", arg, 1, 86400);
    break;
  case O_MAX_CLIENTS:
    o->max_clients = cli_int("max-clients", arg, 1, 10000);
    break;
  case O_MAX_PER_IP:
    o->max_per_ip = cli_int("max-per-ip", arg, 1, 100000);
    break;
  case O_MAX_SESSIONS:
    o->max_sessions = cli_int("max-sessions", arg, 1, 1 << 30);
    break;
  case O_MAX_HEAD:
    o->limits.max_head = (size_t)cli_int("max-head", arg, 256, 1 << 20);
    break;
  case O_MAX_TARGET:
    o->limits.max_target =
        (size_t)cli_int("max-target", arg, 16, HTTP_TARGET_CAP);
    break;
  case O_MAX_HEADERS:
    o->limits.max_headers = (unsigned)cli_int("max-headers", arg, 1, 10000);
    break;
  case O_LOG: o->log_path = arg; break;
  case O_SCHEDULER: set_scheduler(arg); break;
  case O_RUNAS: o->run_as = arg; break;
  case O_ACCESS_LOG: o->access_log = cli_int("access-log", arg, 0, 1); break;
  case O_CORK: o->cork = cli_int("cork", arg, 0, 1); break;
  default: cli_usage_exit(NULL);
  }
}

static void set_defaults(void) {
  struct httpd_opts *o = &httpd_opts;
  memset(o, 0, sizeof *o);
  xp_opts_default(&o->xp);
  o->xp.streams = 64;
  o->listen_tcp = "";
  o->listen_sctp = "";
  o->run_as = "";
  o->write_size = 1024;
  o->max_requests = 10000;
  o->idle_timeout_s = 60;
  o->header_timeout_s = 20;
  o->max_clients = 50;
  o->max_per_ip = 16;
  o->round_robin = 1;
  o->access_log = 1;
  o->limits.max_head = 8192;
  o->limits.max_target = 2048;
  o->limits.max_headers = 100;
}

void httpd_opts_parse(int argc, char **argv) {
  const struct cli_spec spec = {
      "httpd",  usage_text,     "",   0,          longopts,
      HTTPD_XP, &httpd_opts.xp, NULL, handle_opt, &httpd_opts};
  int first;
  set_defaults();
  first = cli_parse(argc, argv, &spec);
  if (first < argc) {
    cli_unexpected_exit(argv[first]);
  }
  if (httpd_opts.root[0] == '\0') {
    cli_usage_exit("--root is required");
  }
  if (httpd_opts.listen_tcp[0] == '\0' && httpd_opts.listen_sctp[0] == '\0') {
    cli_usage_exit("--listen or --listen-sctp is required");
  }
  xpa_check_stack(httpd_opts.listen_sctp[0] != '\0', "--listen-sctp ADDR:PORT",
                  &httpd_opts.xp);
  if (httpd_opts.limits.max_target + 32 > httpd_opts.limits.max_head) {
    cli_usage_exit("--max-target must leave room in --max-head");
  }
}
