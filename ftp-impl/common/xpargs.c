/* xpargs.c - the transport options the programs share (see xpargs.h). */
#define _GNU_SOURCE
#include "xpargs.h"

#include <getopt.h>
#include <string.h>

#include "cliargs.h"
#include "str.h"

/* An option is a number in [lo, hi], or (hi 0) an address added to a list
 * of at most XP_MAX_ALSO, or (hi -1) a stack's name. */
struct xpa_def {
  const char *name;
  int lo, hi;
  size_t field; /* offset in struct xp_opts */
};

static const struct xpa_def defs[XPA_COUNT] = {
    [XPA_NODELAY] = {"nodelay", 0, 1, offsetof(struct xp_opts, nodelay)},
    [XPA_SACK_DELAY] = {"sack-delay", 0, 500,
                        offsetof(struct xp_opts, sack_delay_ms)},
    [XPA_SACK_FREQ] = {"sack-freq", 0, 65535,
                       offsetof(struct xp_opts, sack_freq)},
    [XPA_RTO_MIN] = {"sctp-rto-min", 1, 3600000,
                     offsetof(struct xp_opts, rto_min_ms)},
    [XPA_RTO_INITIAL] = {"sctp-rto-initial", 1, 3600000,
                         offsetof(struct xp_opts, rto_initial_ms)},
    [XPA_RTO_MAX] = {"sctp-rto-max", 1, 3600000,
                     offsetof(struct xp_opts, rto_max_ms)},
    [XPA_SNDBUF] = {"sndbuf", 1024, 1 << 30, offsetof(struct xp_opts, sndbuf)},
    [XPA_RCVBUF] = {"rcvbuf", 1024, 1 << 30, offsetof(struct xp_opts, rcvbuf)},
    [XPA_MAXSEG] = {"maxseg", 64, 65535, offsetof(struct xp_opts, maxseg)},
    [XPA_STREAMS] = {"streams", 1, 65535, offsetof(struct xp_opts, streams)},
    [XPA_IO_TIMEOUT] = {"io-timeout", 1, 86400,
                        offsetof(struct xp_opts, io_timeout_s)},
    [XPA_ALSO_BIND] = {"sctp-also-bind", 0, 0,
                       offsetof(struct xp_opts, also_bind)},
    [XPA_ALSO_PEER] = {"sctp-also-peer", 0, 0,
                       offsetof(struct xp_opts, also_peer)},
    [XPA_SCTP_STACK] = {"sctp-stack", -1, -1, offsetof(struct xp_opts, stack)},
    [XPA_UDP_PORT] = {"sctp-udp-port", 1, 65535,
                      offsetof(struct xp_opts, udp_port)},
    [XPA_PEER_UDP_PORT] = {"sctp-peer-udp-port", 1, 65535,
                           offsetof(struct xp_opts, peer_udp_port)},
};

size_t xpa_options(unsigned take, struct option *out, size_t cap) {
  size_t n = 0;
  int i;
  for (i = 0; i < XPA_COUNT && n < cap; i++) {
    if ((take & XPA_BIT(i)) != 0) {
      out[n].name = defs[i].name;
      out[n].has_arg = required_argument;
      out[n].flag = NULL;
      out[n].val = XPA_CODE(i);
      n++;
    }
  }
  return n;
}

int xpa_is(int code) {
  return code >= XPA_CODE(0) && code < XPA_CODE(XPA_COUNT);
}

static void add_addr(const char *name, const char *arg, struct xp_addrs *to) {
  char msg[96];
  if (to->n >= XP_MAX_ALSO) {
    (void)str_fmt(msg, sizeof msg, "--%s: at most %d addresses", name,
                  XP_MAX_ALSO);
    cli_usage_exit(msg);
  }
  cli_host(name, arg, &to->a[to->n]);
  to->n++;
}

static enum xp_stack stack_named(const char *name, const char *arg) {
  if (strcmp(arg, "kernel") == 0) {
    return XP_STACK_KERNEL;
  }
  if (strcmp(arg, "usrsctp") != 0) {
    cli_bad_value(name, "need kernel or usrsctp");
  }
  return XP_STACK_USRSCTP;
}

void xpa_set(int code, const char *arg, struct xp_opts *xp) {
  const struct xpa_def *d = &defs[code - XPA_CODE(0)];
  if (d->hi == -1) {
    xp->stack = stack_named(d->name, arg);
    return;
  }
  if (d->hi == 0) {
    add_addr(d->name, arg, (struct xp_addrs *)(void *)((char *)xp + d->field));
    return;
  }
  *(int *)(void *)((char *)xp + d->field) = cli_int(d->name, arg, d->lo, d->hi);
}

void xpa_check_stack(int sctp, const struct xp_opts *xp) {
  if (xp->stack == XP_STACK_USRSCTP && !sctp) {
    cli_usage_exit("--sctp-stack usrsctp: usrsctp is an SCTP stack (--proto "
                   "sctp)");
  }
  if (xp->stack != XP_STACK_USRSCTP &&
      (xp->udp_port > 0 || xp->peer_udp_port > 0)) {
    cli_usage_exit("--sctp-udp-port and --sctp-peer-udp-port are usrsctp's "
                   "(--sctp-stack usrsctp)");
  }
}
