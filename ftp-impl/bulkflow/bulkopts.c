/* bulkopts.c - parse the bulkflow command line (see bulkopts.h). */
#define _GNU_SOURCE
#include "bulkopts.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "cliparse.h"
#include "str.h"
#include "xpargs.h"

static const char usage_text[] =
    "usage: bulkflow recv --proto tcp|sctp --listen ADDR:PORT [options]\n"
    "       bulkflow send --proto tcp|sctp --to ADDR:PORT --duration S "
    "[options]\n"
    "recv options:\n"
    "  --rcvbuf BYTES         SO_RCVBUF (before listen and on the accepted "
    "socket)\n"
    "  --no-delayed-ack       SCTP: SACK every packet; TCP: TCP_QUICKACK "
    "after reads\n"
    "  --accept-timeout S     longest wait for the connection (default 600)\n"
    "send options:\n"
    "  --bind ADDR            local address (no port)\n"
    "  --start-at T           connect when CLOCK_MONOTONIC reaches T seconds\n"
    "  --maxseg BYTES         TCP_MAXSEG / SCTP_MAXSEG before connect\n"
    "  --sndbuf BYTES / --rcvbuf BYTES   SO_SNDBUF / SO_RCVBUF\n"
    "  --write-size BYTES     bytes per write; SCTP: per message (default\n"
    "                         TCP 131072, SCTP 16384 or its multiple of "
    "--maxseg)\n"
    "  --nodelay 0|1          TCP_NODELAY / SCTP_NODELAY (default 1)\n"
    "  --drain-timeout S      longest wait for the last acknowledgement "
    "(default 120)\n"
    "both:\n"
    "  --sample-ms MS         period of sample events (default 100)\n"
    "  --stall-timeout S      longest time without progress (default 60)\n"
    "  --sctp-stack kernel|usrsctp   whose SCTP (default kernel); usrsctp\n"
    "                         speaks SCTP over UDP (RFC 6951)\n"
    "  --sctp-udp-port PORT   usrsctp: its own UDP port (default 9899)\n"
    "  --sctp-peer-udp-port PORT   usrsctp: the peer's UDP port (send: "
    "default\n"
    "                         9899; recv: the one each peer speaks from)\n"
    "  --usrsctp-sysctl NAME=VALUE   usrsctp: one of its sysctls (repeated;\n"
    "                         sctp_max_burst_default, ...: PROGRAMS.md)\n"
    "Events go to stdout as JSON lines; errors to stderr.  Exit 0: flow "
    "complete;\n"
    "1: flow failed; 2: usage error.\n";

/* Which modes take an option. */
enum { M_SEND = 1, M_RECV = 2, M_BOTH = 3 };

enum {
  O_PROTO = 256,
  O_LISTEN,
  O_TO,
  O_BIND,
  O_DURATION,
  O_START_AT,
  O_WRITE_SIZE,
  O_SAMPLE_MS,
  O_STALL,
  O_NO_DELACK,
  O_ACCEPT_TO,
  O_DRAIN_TO,
  O_LAST = O_DRAIN_TO
};

/* and --maxseg, --sndbuf, --rcvbuf and --nodelay (xpargs.h) */
static const struct option longopts[] = {
    {"proto", required_argument, NULL, O_PROTO},
    {"listen", required_argument, NULL, O_LISTEN},
    {"to", required_argument, NULL, O_TO},
    {"bind", required_argument, NULL, O_BIND},
    {"duration", required_argument, NULL, O_DURATION},
    {"start-at", required_argument, NULL, O_START_AT},
    {"write-size", required_argument, NULL, O_WRITE_SIZE},
    {"sample-ms", required_argument, NULL, O_SAMPLE_MS},
    {"stall-timeout", required_argument, NULL, O_STALL},
    {"no-delayed-ack", no_argument, NULL, O_NO_DELACK},
    {"accept-timeout", required_argument, NULL, O_ACCEPT_TO},
    {"drain-timeout", required_argument, NULL, O_DRAIN_TO},
    {"help", no_argument, NULL, CLI_HELP},
    {NULL, 0, NULL, 0}};

#define BULK_XP                                                                \
  (XPA_BIT(XPA_MAXSEG) | XPA_BIT(XPA_SNDBUF) | XPA_BIT(XPA_RCVBUF) |           \
   XPA_BIT(XPA_NODELAY) | XPA_SCTP_STACKS)

static const unsigned char modes_of[] = {
    [O_PROTO - O_PROTO] = M_BOTH,      [O_LISTEN - O_PROTO] = M_RECV,
    [O_TO - O_PROTO] = M_SEND,         [O_BIND - O_PROTO] = M_SEND,
    [O_DURATION - O_PROTO] = M_SEND,   [O_START_AT - O_PROTO] = M_SEND,
    [O_WRITE_SIZE - O_PROTO] = M_SEND, [O_SAMPLE_MS - O_PROTO] = M_BOTH,
    [O_STALL - O_PROTO] = M_BOTH,      [O_NO_DELACK - O_PROTO] = M_RECV,
    [O_ACCEPT_TO - O_PROTO] = M_RECV,  [O_DRAIN_TO - O_PROTO] = M_SEND};

/* Which modes take an option: --help, --rcvbuf and the SCTP stack's both,
 * the other shared ones (--maxseg, --sndbuf, --nodelay) send. */
static unsigned modes(int c) {
  if (c >= O_PROTO && c <= O_LAST) {
    return modes_of[c - O_PROTO];
  }
  if (xpa_is(c) && (XPA_SCTP_STACKS & XPA_BIT(c - XPA_CODE(0))) != 0) {
    return M_BOTH;
  }
  return c == CLI_HELP || c == XPA_CODE(XPA_RCVBUF) ? M_BOTH : M_SEND;
}

static void set_bind(struct bulkopts *o, const char *s) {
  cli_host("bind", s, &o->bind_addr);
  o->has_bind = 1;
}

static void set_duration(struct bulkopts *o, const char *s) {
  if (str_to_decimal(s, 86400, &o->duration_s) != 0 || o->duration_s <= 0) {
    cli_bad_value("duration", "need seconds, more than 0 and at most 86400");
  }
}

static void set_start_at(struct bulkopts *o, const char *s) {
  if (str_to_decimal(s, 1e9, &o->start_at) != 0) {
    cli_bad_value("start-at", "need CLOCK_MONOTONIC seconds (e.g. 1234.5)");
  }
  o->has_start_at = 1;
}

struct parse {
  struct bulkopts *o;
  unsigned seen; /* bits of the own options given */
};

static void handle_opt(void *ctx, int c, const char *arg) {
  struct parse *p = ctx;
  struct bulkopts *o = p->o;
  switch (c) {
  case O_PROTO: o->proto = cli_proto("proto", arg); break;
  case O_LISTEN: cli_addr("listen", arg, &o->addr, 0); break;
  case O_TO: cli_addr("to", arg, &o->addr, 1); break;
  case O_BIND: set_bind(o, arg); break;
  case O_DURATION: set_duration(o, arg); break;
  case O_START_AT: set_start_at(o, arg); break;
  case O_WRITE_SIZE:
    o->write_size = (size_t)cli_int("write-size", arg, 1, 1 << 24);
    break;
  case O_SAMPLE_MS: o->sample_ms = cli_int("sample-ms", arg, 10, 60000); break;
  case O_STALL:
    o->stall_timeout_s = cli_int("stall-timeout", arg, 1, 86400);
    break;
  case O_NO_DELACK: o->no_delayed_ack = 1; break;
  case O_ACCEPT_TO:
    o->accept_timeout_s = cli_int("accept-timeout", arg, 1, 86400);
    break;
  case O_DRAIN_TO:
    o->drain_timeout_s = cli_int("drain-timeout", arg, 1, 86400);
    break;
  default: cli_usage_exit(NULL);
  }
  p->seen |= 1u << (c - O_PROTO);
}

static void set_defaults(struct bulkopts *o, enum bulk_mode mode) {
  memset(o, 0, sizeof *o);
  xp_opts_default(&o->xp);
  o->xp.streams = 1; /* one stream each way */
  o->mode = mode;
  o->sample_ms = 100;
  o->stall_timeout_s = 60;
  o->drain_timeout_s = 120;
  o->accept_timeout_s = 600;
}

static enum bulk_mode parse_mode(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
    fputs(usage_text, stdout);
    exit(0);
  }
  if (argc < 2 ||
      (strcmp(argv[1], "send") != 0 && strcmp(argv[1], "recv") != 0)) {
    cli_usage_exit("the first argument must be send or recv");
  }
  return argv[1][0] == 's' ? BULK_SEND : BULK_RECV;
}

static void check_mode(void *ctx, int c, const char *name) {
  const struct parse *p = ctx;
  unsigned want = p->o->mode == BULK_SEND ? M_SEND : M_RECV;
  char msg[128];
  if ((modes(c) & want) != 0) {
    return;
  }
  (void)str_fmt(msg, sizeof msg, "--%s is a %s option", name,
                p->o->mode == BULK_SEND ? "recv" : "send");
  cli_usage_exit(msg);
}

static void require(unsigned seen, int c) {
  char msg[96];
  if ((seen & (1u << (c - O_PROTO))) != 0) {
    return;
  }
  (void)str_fmt(msg, sizeof msg, "--%s is required",
                longopts[c - O_PROTO].name);
  cli_usage_exit(msg);
}

/* SCTP: whole DATA chunks (a multiple of --maxseg), and a message the send
 * buffer can hold (Linux refuses larger ones with EMSGSIZE). */
static void finish_write_size(struct bulkopts *o, unsigned seen) {
  if ((seen & (1u << (O_WRITE_SIZE - O_PROTO))) == 0) {
    o->write_size = o->proto == XP_TCP ? 131072 : 16384;
    if (o->proto == XP_SCTP && o->xp.maxseg > 0 &&
        (size_t)o->xp.maxseg <= o->write_size) {
      o->write_size -= o->write_size % (size_t)o->xp.maxseg;
    }
  }
  if (o->proto == XP_SCTP && o->xp.sndbuf > 0 &&
      o->write_size > (size_t)o->xp.sndbuf) {
    cli_usage_exit("--write-size: an SCTP message must fit in --sndbuf");
  }
}

void bulkopts_parse(int argc, char **argv, struct bulkopts *o) {
  struct parse p = {o, 0};
  const struct cli_spec spec = {"bulkflow", usage_text, "",     0,
                                longopts,   BULK_XP,    &o->xp, check_mode,
                                handle_opt, &p};
  int first;
  cli_init("bulkflow", usage_text);
  set_defaults(o, parse_mode(argc, argv));
  /* the options from the word after the mode */
  first = cli_parse(argc - 1, argv + 1, &spec);
  if (first < argc - 1) {
    cli_unexpected_exit(argv[first + 1]);
  }
  require(p.seen, O_PROTO);
  xpa_check_stack(o->proto == XP_SCTP, "--proto sctp", &o->xp);
  if (o->mode == BULK_RECV) {
    require(p.seen, O_LISTEN);
    if (o->no_delayed_ack && o->proto == XP_SCTP) {
      o->xp.sack_freq = 1; /* a zero sack_delay does not turn it off */
    }
    return;
  }
  require(p.seen, O_TO);
  require(p.seen, O_DURATION);
  finish_write_size(o, p.seen);
  xpa_default_peer_udp_port(&o->xp);
}
