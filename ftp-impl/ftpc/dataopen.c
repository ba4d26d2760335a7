/* dataopen.c - a data connection that did not open (see dataopen.h). */
#include "dataopen.h"

#include <string.h>

#include "events.h"
#include "sysutil.h"

int open_wait_ms(const struct client *cl, const struct xfer_replies *r,
                 int64_t cmd_ms) {
  int64_t left;
  if (r->prelim || r->final_code != 0) {
    return cl->timeout_ms;
  }
  left = cmd_ms + (int64_t)cl->o->open_s * 1000 - sys_mono_ms();
  if (left <= 0) {
    return 0;
  }
  return left < cl->timeout_ms ? (int)left : cl->timeout_ms;
}

int open_give_up(struct client *cl, const struct xfer_replies *r) {
  struct reply got;
  if (ctrl_send(&cl->cc, "ABOR", "") != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  /* the transfer's final reply (a 425, or whatever came late), then the
   * ABOR's: each labelled with the command it answers */
  do {
    if (ctrl_reply(&cl->cc, &got) != 0) {
      return client_fail(cl, "%s", cl->cc.error);
    }
  } while (strcmp(got.cmd, "ABOR") != 0 || got.code < 200);
  return client_fail(cl, "no reply to %s %s within %d s (open limit)", r->cmd,
                     r->arg, cl->o->open_s);
}

int open_retryable(const struct xfer_replies *r, int expired) {
  return expired || (r->final_code == 425 && !r->prelim);
}

void open_retry_event(const struct xfer_replies *r, unsigned attempt,
                      double lost_s, const char *reason) {
  struct event e;
  ev_begin(&e, "retry");
  ev_str(&e, "cmd", r->cmd);
  ev_str(&e, "arg", r->arg);
  ev_u64(&e, "attempt", attempt);
  ev_num(&e, "lost_s", lost_s);
  ev_str(&e, "reason", reason);
  ev_end(&e);
}
