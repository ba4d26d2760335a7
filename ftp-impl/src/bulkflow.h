/* bulkflow.h - what the sender (bulksend.c) and the receiver (bulkrecv.c)
 * share: how a flow fails, and the clock of sample events. */
#ifndef FTP_BULKFLOW_H
#define FTP_BULKFLOW_H

#include <stdint.h>

/* The flow failed: "bulkflow: reason" on stderr and an `error` event with
 * the bytes moved so far.  Returns 1, the exit status. */
int bulk_fail(uint64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Samples on a fixed grid of CLOCK_MONOTONIC milliseconds (start + k x
 * period); instants missed while busy are skipped, never bunched. */
struct bulk_clock {
  int64_t next_ms;
  int period_ms;
};

void bulk_clock_start(struct bulk_clock *k, int64_t now_ms, int period_ms);
/* Is a sample due at now_ms?  If so, the next instant is scheduled. */
int bulk_clock_due(struct bulk_clock *k, int64_t now_ms);

#endif
