/* bulksend.h - `bulkflow send`: wait for the planned instant, connect, write
 * for --duration seconds while sampling the congestion state, then wait until
 * everything sent has been acknowledged. */
#ifndef FTP_BULKSEND_H
#define FTP_BULKSEND_H

#include "bulkopts.h"

/* Run the sender; returns the exit status (0 flow complete, 1 failed). */
int bulk_send(const struct bulkopts *o);

#endif
