/* bulkfail.h - how a flow fails, for bulkflow's main (bulkflow.c), the
 * sender (bulksend.c) and the receiver (bulkrecv.c). */
#ifndef FTP_BULKFAIL_H
#define FTP_BULKFAIL_H

#include <stdint.h>

/* The flow failed: "bulkflow: reason" on stderr and an `error` event with
 * the bytes moved so far.  Returns 1, the exit status. */
int bulk_fail(uint64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
