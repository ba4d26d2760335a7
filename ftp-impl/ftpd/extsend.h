/* extsend.h - ftpd's side of extended block mode (MODE E, the xftp variant):
 * a RETR or listing sent as blocks over the parallel TCP data connections
 * ftpd opens to the client's PORT address (in MODE E the sender connects),
 * as many as OPTS RETR Parallelism asked for.  Each connection takes the
 * next block whenever its send buffer has room, so a connection that a loss
 * slows down carries less; each ends with EOD, one also with EOF and the
 * connection count.  The whole exchange, 150 to 226, happens here. */
#ifndef FTP_EXTSEND_H
#define FTP_EXTSEND_H

#include <stdint.h>

#include "session.h"

/* count bytes from file fd at offset `start` (or, fd < 0, of buf) as the
 * transfer `what`.  Replies are sent; 0 when the 226 went out. */
int ext_transfer(struct session *s, const char *what, int fd, const char *buf,
                 uint64_t start, uint64_t count);

#endif
