/* bulkclock.h - the clock of sample events, shared by the sender
 * (bulksend.c) and the receiver (bulkrecv.c). */
#ifndef FTP_BULKCLOCK_H
#define FTP_BULKCLOCK_H

#include <stdint.h>

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
