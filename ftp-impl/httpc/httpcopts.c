/* httpcopts.c - parse the httpc command line (see httpcopts.h). */
#define _GNU_SOURCE
#include "httpcopts.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "cliparse.h"
#include "httpmsg.h"
#include "str.h"
#include "xpargs.h"

static const char usage_text[] =
    "usage: httpc --proto tcp|sctp --server ADDR:PORT [options] DOCUMENT "
    "[OBJECT...]\n"
    "Fetches DOCUMENT, then its OBJECTs: pipelined on the one TCP connection,\n"
    "or over SCTP each on the first free stream (its answer on that stream).\n"
    "  --out DIR          save each under its last path component (default:\n"
    "                     count the bytes only)\n"
    "  --streams N        SCTP streams asked for each way (default 10)\n"
    "  --no-pipeline      TCP: one request at a time\n"
    "  --host NAME        the Host header (default: the server's address)\n"
    "  --bind ADDR        local address\n"
    "  --timeout S        longest wait without progress, and for an answer's\n"
    "                     whole head from its first byte (default 60)\n"
    "  --sndbuf/--rcvbuf BYTES  SO_SNDBUF / SO_RCVBUF\n"
    "  --nodelay 0|1      TCP_NODELAY / SCTP_NODELAY (default "
    "1)\n" XPA_SCTP_STACKS_USAGE
    "Events go to stdout as JSON lines.  Exit 0: every object 200 and "
    "whole;\n1: a transfer failed or an object was refused; 2: usage.\n";

enum {
  O_PROTO = 256,
  O_SERVER,
  O_OUT,
  O_NO_PIPELINE,
  O_HOST,
  O_BIND,
  O_TIMEOUT
};

/* and --streams, --sndbuf, --rcvbuf, --nodelay and the SCTP stack's
 * (xpargs.h) */
static const struct option longopts[] = {
    {"proto", required_argument, NULL, O_PROTO},
    {"server", required_argument, NULL, O_SERVER},
    {"out", required_argument, NULL, O_OUT},
    {"no-pipeline", no_argument, NULL, O_NO_PIPELINE},
    {"host", required_argument, NULL, O_HOST},
    {"bind", required_argument, NULL, O_BIND},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"help", no_argument, NULL, CLI_HELP},
    {NULL, 0, NULL, 0}};

#define HTTPC_XP                                                               \
  (XPA_BIT(XPA_STREAMS) | XPA_BIT(XPA_SNDBUF) | XPA_BIT(XPA_RCVBUF) |          \
   XPA_BIT(XPA_NODELAY) | XPA_SCTP_STACKS)

struct parse {
  struct httpc_opts *o;
  unsigned seen; /* bits of the options given */
};

static void set_host(struct httpc_opts *o, const char *s) {
  size_t i;
  for (i = 0; s[i] != '\0'; i++) {
    if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f) {
      cli_bad_value("host", "no spaces or control characters");
    }
  }
  if (i == 0 || str_copy(o->host, sizeof o->host, s) != 0) {
    cli_bad_value("host", "1 to 299 characters");
  }
}

static void handle_opt(void *ctx, int c, const char *arg) {
  struct parse *p = ctx;
  struct httpc_opts *o = p->o;
  switch (c) {
  case O_PROTO: o->proto = cli_proto("proto", arg); break;
  case O_SERVER: cli_addr("server", arg, &o->server, 1); break;
  case O_OUT: o->out_dir = arg; break;
  case O_NO_PIPELINE: o->pipeline = 0; break;
  case O_HOST: set_host(o, arg); break;
  case O_BIND:
    cli_host("bind", arg, &o->bind_addr);
    o->has_bind = 1;
    break;
  case O_TIMEOUT: o->timeout_s = cli_int("timeout", arg, 1, 86400); break;
  default: cli_usage_exit(NULL);
  }
  p->seen |= 1u << (c - O_PROTO);
}

/* Each path an origin-form target, and each saved under its own name. */
static void check_paths(const struct httpc_opts *o) {
  char decoded[HTTP_TARGET_CAP + 1];
  int i, j;
  for (i = 0; i < o->npaths; i++) {
    const char *p = o->paths[i];
    if (strlen(p) > HTTP_TARGET_CAP ||
        http_target_path(p, decoded, sizeof decoded) != 0 ||
        strpbrk(p, " \t\r\n") != NULL) {
      cli_unexpected_exit(p);
    }
    for (j = 0; j < i; j++) {
      const char *a = strrchr(p, '/'), *b = strrchr(o->paths[j], '/');
      if (strcmp(a, b) == 0) {
        cli_usage_exit("two objects would be saved under the same name");
      }
    }
  }
}

void httpc_opts_parse(int argc, char **argv, struct httpc_opts *o) {
  struct parse p = {o, 0};
  const struct cli_spec spec = {"httpc",    usage_text, "",     0,
                                longopts,   HTTPC_XP,   &o->xp, NULL,
                                handle_opt, &p};
  int first;
  memset(o, 0, sizeof *o);
  xp_opts_default(&o->xp);
  o->xp.streams = 10; /* as phttpget */
  o->pipeline = 1;
  o->timeout_s = 60;
  o->max_head = 16384;
  first = cli_parse(argc, argv, &spec);
  if ((p.seen & (1u << (O_PROTO - O_PROTO))) == 0 ||
      (p.seen & (1u << (O_SERVER - O_PROTO))) == 0) {
    cli_usage_exit("--proto and --server are required");
  }
  if (first >= argc) {
    cli_usage_exit("name a DOCUMENT to fetch (a path such as /index.html)");
  }
  xpa_check_stack(o->proto == XP_SCTP, "--proto sctp", &o->xp);
  xpa_default_peer_udp_port(&o->xp);
  o->paths = argv + first;
  o->npaths = argc - first;
  check_paths(o);
  if (o->host[0] == '\0' &&
      addr_to_str(&o->server, o->host, sizeof o->host) != 0) {
    cli_usage_exit("cannot format the server's address");
  }
  if (o->out_dir == NULL) {
    o->out_dir = "/dev/null";
  }
}
