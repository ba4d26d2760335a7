/* bulkrecv.h - `bulkflow recv`: listen, accept exactly one connection or
 * association, read and count until the peer's orderly end. */
#ifndef FTP_BULKRECV_H
#define FTP_BULKRECV_H

#include "bulkopts.h"

/* Run the receiver; returns the exit status (0 flow complete, 1 failed). */
int bulk_recv(const struct bulkopts *o);

#endif
