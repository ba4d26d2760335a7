/* bulkflow.c - a long-lived bulk transfer over TCP or SCTP, for the
 * fairness study (E3): `bulkflow recv` counts what one connection delivers,
 * `bulkflow send` writes for a given time and reports its congestion window
 * as it goes.  JSON event lines on stdout; exit 0 only for a complete flow
 * (1: the flow failed, 2: usage).  See ftp-impl/PROGRAMS.md. */
#include <stdio.h>

#include "bulkopts.h"
#include "bulkrecv.h"
#include "bulksend.h"
#include "sysutil.h"

int main(int argc, char **argv) {
  struct bulkopts o;
  sys_set_progname("bulkflow");
  bulkopts_parse(argc, argv, &o);
  sys_ignore_sigpipe();
  return o.mode == BULK_SEND ? bulk_send(&o) : bulk_recv(&o);
}
