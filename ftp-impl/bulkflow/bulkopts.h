/* bulkopts.h - the bulkflow command line: a mode (send or recv) and its
 * options, checked before anything starts (usage errors exit 2). */
#ifndef FTP_BULKOPTS_H
#define FTP_BULKOPTS_H

#include <stddef.h>

#include "addrparse.h"
#include "transport.h"

enum bulk_mode { BULK_SEND, BULK_RECV };

struct bulkopts {
  enum bulk_mode mode;
  enum xp_proto proto;
  struct addr addr;      /* send: --to; recv: --listen */
  int has_bind;          /* send: --bind given */
  struct addr bind_addr; /* send: local address (port 0) */
  double duration_s;     /* send: how long to write */
  int has_start_at;      /* send: --start-at given */
  double start_at;       /* send: CLOCK_MONOTONIC seconds to connect at */
  size_t write_size;     /* send: bytes per write (SCTP: per message) */
  int sample_ms;         /* period of sample events */
  int stall_timeout_s;   /* longest time without progress */
  int drain_timeout_s;   /* send: longest wait for the last acknowledgement */
  int accept_timeout_s;  /* recv: longest wait for the connection */
  int no_delayed_ack;    /* recv: SCTP sack_freq 1 / TCP_QUICKACK per read */
  struct xp_opts xp;     /* nodelay, maxseg, buffers, SACK settings */
};

/* Parse argv; prints usage and exits 2 on any error. */
void bulkopts_parse(int argc, char **argv, struct bulkopts *o);

#endif
