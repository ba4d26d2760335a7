/* bulkfail.c - how a flow fails (bulkfail.h). */
#include "bulkfail.h"

#include <stdarg.h>
#include <stdio.h>

#include "events.h"

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
