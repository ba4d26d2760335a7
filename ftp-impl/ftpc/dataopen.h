/* dataopen.h - a classic transfer (tcp, sctp-naive) whose data connection
 * did not open: the open limit on the wait for its 1xx reply, the ABOR that
 * ends such a wait, which failures a new data connection may cure, and the
 * `retry` event of the attempt that follows (xfer.c runs the attempts). */
#ifndef FTP_DATAOPEN_H
#define FTP_DATAOPEN_H

#include <stdint.h>

#include "client.h"

/* How long the next wait for the transfer's replies may last: the reply
 * timeout, or less while no 1xx has come and the open limit, counted from
 * cmd_ms (when the command went out, CLOCK_MONOTONIC ms), runs.  0: the
 * open limit has passed. */
int open_wait_ms(const struct client *cl, const struct xfer_replies *r,
                 int64_t cmd_ms);
/* The open limit passed without a 1xx reply (the data connection open at
 * one end only, or a server that never answers): ABOR, then the replies up
 * to the ABOR's own, so that the control connection is in step for the next
 * command.  Sets cl->error; -1 always. */
int open_give_up(struct client *cl, const struct xfer_replies *r);
/* May a new data connection cure the failed attempt?  A 425 before any 1xx
 * reply, or the open limit passed (expired). */
int open_retryable(const struct xfer_replies *r, int expired);
/* The `retry` event: attempt (2, 3, ...) of the transfer starts now;
 * lost_s, what the failed attempt cost; reason, why it failed. */
void open_retry_event(const struct xfer_replies *r, unsigned attempt,
                      double lost_s, const char *reason);

#endif
