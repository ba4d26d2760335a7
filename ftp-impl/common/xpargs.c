/* xpargs.c - the transport options the programs share (see xpargs.h). */
#define _GNU_SOURCE
#include "xpargs.h"

#include <getopt.h>

#include "cliargs.h"

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

void xpa_set(int code, const char *arg, struct xp_opts *xp) {
  const struct xpa_def *d = &defs[code - XPA_CODE(0)];
  int *field = (int *)(void *)((char *)xp + d->field);
  *field = cli_int(d->name, arg, d->lo, d->hi);
}
