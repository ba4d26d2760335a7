/* bulkflow.c - a long-lived bulk transfer over TCP or SCTP, for the
 * fairness study (E3): `bulkflow recv` counts what one connection delivers,
 * `bulkflow send` writes for a given time and reports its congestion window
 * as it goes.  JSON event lines on stdout; exit 0 only for a complete flow
 * (1: the flow failed, 2: usage).  See ftp-impl/README.md. */
#include "bulkflow.h"

#include <stdarg.h>
#include <stdio.h>

#include "bulkopts.h"
#include "bulkrecv.h"
#include "bulksend.h"
#include "events.h"
#include "sysutil.h"

int bulk_fail(uint64_t bytes, const char *fmt, ...) {
  char reason[512];
  struct event e;
  va_list ap;
  va_start(ap, fmt);
  (void)vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  ev_begin(&e, "error");
  ev_str(&e, "reason", reason);
  ev_u64(&e, "bytes", bytes);
  ev_end(&e);
  fprintf(stderr, "bulkflow: %s\n", reason);
  return 1;
}

void bulk_clock_start(struct bulk_clock *k, int64_t now_ms, int period_ms) {
  k->period_ms = period_ms;
  k->next_ms = now_ms + period_ms;
}

int bulk_clock_due(struct bulk_clock *k, int64_t now_ms) {
  if (now_ms < k->next_ms) {
    return 0;
  }
  k->next_ms += k->period_ms;
  if (k->next_ms <= now_ms) {
    k->next_ms += (now_ms - k->next_ms) / k->period_ms * k->period_ms;
    k->next_ms += k->period_ms;
  }
  return 1;
}

int main(int argc, char **argv) {
  struct bulkopts o;
  sys_set_progname("bulkflow");
  bulkopts_parse(argc, argv, &o);
  sys_ignore_sigpipe();
  return o.mode == BULK_SEND ? bulk_send(&o) : bulk_recv(&o);
}
