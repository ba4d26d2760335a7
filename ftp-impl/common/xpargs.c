/* xpargs.c - the transport options the programs share (see xpargs.h). */
#define _GNU_SOURCE
#include "xpargs.h"

#include <getopt.h>
#include <string.h>

#include "cliargs.h"
#include "str.h"
#include "usx.h"
#include "usxsysctl.h"

/* An option is a number in [lo, hi], or (hi 0) an address added to a list
 * of at most XP_MAX_ALSO, or (hi -1) a stack's name, or (hi -2) one of
 * usrsctp's sysctls and its value. */
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
    [XPA_USX_SYSCTL] = {"usrsctp-sysctl", -2, -2,
                        offsetof(struct xp_opts, usx_sysctls)},
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

/* NAME=VALUE: a sysctl of usxsysctl.h's table and a 32-bit value. */
static void add_sysctl(const char *name, const char *arg,
                       struct usx_sysctl_set *to) {
  char key[64], msg[128];
  const char *eq = strchr(arg, '=');
  size_t klen = eq != NULL ? (size_t)(eq - arg) : 0;
  int id;
  uint64_t v;
  if (eq == NULL || klen == 0 || klen >= sizeof key) {
    cli_bad_value(name, "need NAME=VALUE, NAME one of usrsctp's sysctls "
                        "(sctp_max_burst_default, ...; PROGRAMS.md)");
  }
  memcpy(key, arg, klen);
  key[klen] = '\0';
  if ((id = usx_sysctl_find(key)) < 0) {
    (void)str_fmt(msg, sizeof msg, "--%s: no usrsctp sysctl %s here", name,
                  key);
    cli_usage_exit(msg);
  }
  if (to->n >= USX_MAX_SYSCTLS) {
    (void)str_fmt(msg, sizeof msg, "--%s: at most %d settings", name,
                  USX_MAX_SYSCTLS);
    cli_usage_exit(msg);
  }
  if (str_to_u64(eq + 1, UINT32_MAX, &v) != 0) {
    cli_bad_value(name, "need NAME=VALUE, VALUE a whole number from 0 to "
                        "4294967295");
  }
  to->id[to->n] = id;
  to->value[to->n] = (uint32_t)v;
  to->n++;
}

void xpa_set(int code, const char *arg, struct xp_opts *xp) {
  const struct xpa_def *d = &defs[code - XPA_CODE(0)];
  if (d->hi == -2) {
    add_sysctl(d->name, arg, &xp->usx_sysctls);
    return;
  }
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

void xpa_check_stack(int sctp, const char *sctp_needs,
                     const struct xp_opts *xp) {
  char why[160];
  if (xp->stack == XP_STACK_USRSCTP && !sctp) {
    if (str_fmt(why, sizeof why,
                "--sctp-stack usrsctp: usrsctp is an SCTP stack (%s)",
                sctp_needs) != 0) {
      cli_usage_exit("--sctp-stack usrsctp: usrsctp is an SCTP stack");
    }
    cli_usage_exit(why);
  }
  if (xp->stack != XP_STACK_USRSCTP &&
      (xp->udp_port > 0 || xp->peer_udp_port > 0 || xp->usx_sysctls.n > 0)) {
    cli_usage_exit("--sctp-udp-port, --sctp-peer-udp-port and "
                   "--usrsctp-sysctl are usrsctp's (--sctp-stack usrsctp)");
  }
}

void xpa_default_peer_udp_port(struct xp_opts *xp) {
  if (xp->stack == XP_STACK_USRSCTP && xp->peer_udp_port == 0) {
    xp->peer_udp_port = USX_DEFAULT_UDP_PORT;
  }
}
