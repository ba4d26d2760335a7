/* xpopts.c - the transport's settings and names (transport.h), apart from
 * its sockets so that the fuzz targets' in-memory transport shares them. */
#include <string.h>

#include "transport.h"

void xp_opts_default(struct xp_opts *o) {
  memset(o, 0, sizeof *o);
  o->nodelay = 1;
  o->streams = 2;
  o->sack_delay_ms = -1;
  o->sack_freq = -1;
  o->rto_min_ms = -1;
  o->rto_initial_ms = -1;
  o->rto_max_ms = -1;
  o->io_timeout_s = 60;
}

const char *xp_proto_name(enum xp_proto p) {
  return p == XP_SCTP ? "sctp" : "tcp";
}
