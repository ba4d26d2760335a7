/* clientfail.c - how an ftpc session records a failure and a skipped name
 * (client.h), for the command driver (ftpc.c) and the transfer engines
 * (xfer.c, msxfer.c, xftpget.c, blockdata.c) alike. */
#include <stdarg.h>
#include <stdio.h>

#include "client.h"
#include "events.h"

int client_fail(struct client *cl, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  (void)vsnprintf(cl->error, sizeof cl->error, fmt, ap);
  va_end(ap);
  return -1;
}

void client_skip(struct client *cl, const char *name) {
  struct event e;
  ev_begin(&e, "skipped");
  ev_str(&e, "file", name);
  ev_str(&e, "reason", cl->error);
  ev_end(&e);
  cl->skipped++;
  cl->error[0] = '\0';
}
