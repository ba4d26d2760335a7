/* httpsend.h - how httpd hands an answer's bytes to the kernel.  TCP never
 * blocks in a send: the socket takes what it has room for, httpd waits for
 * more room in poll(), and the answer fails once the socket has taken no
 * byte for --io-timeout seconds, however many writes that stall spans (as
 * ftpd's data pump).  A blocking send under SO_SNDTIMEO started its wait
 * anew after each partial send, and a blocking sendfile after each piece it
 * moved, so a client that never read held a connection for several times
 * the limit.  SCTP sends block: a message is taken whole or not at all, so
 * SO_SNDTIMEO bounds its stall already. */
#ifndef FTP_HTTPSEND_H
#define FTP_HTTPSEND_H

#include <stddef.h>
#include <stdint.h>

#include "transport.h"

/* All n bytes on stream sid; more: more bytes follow at once (MSG_MORE).
 * 0, or -1 with errno (ETIMEDOUT: the stall limit). */
int http_send(const struct xp_conn *c, const void *p, size_t n, unsigned sid,
              int more);
/* count bytes of file fd from its offset on stream sid (SCTP: messages of
 * chunk bytes).  0, or -1 with errno (ENODATA: the file is shorter). */
int http_send_file(const struct xp_conn *c, int fd, uint64_t count,
                   unsigned sid, size_t chunk);

#endif
