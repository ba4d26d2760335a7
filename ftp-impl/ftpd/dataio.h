/* dataio.h - the server's data channel: PASV/EPSV listeners, PORT/EPRT
 * connections (TCP and SCTP-naive), the one persistent TCP connection of
 * MODE B (blocks, RFC 959 3.4.2) and stream 1 of the control association
 * in multistream mode.  Every transfer is
 *   dataio_begin (150) -> dataio_send_* / dataio_recv_fd -> dataio_end (226).
 */
#ifndef FTP_DATAIO_H
#define FTP_DATAIO_H

#include <stdint.h>

#include "session.h"

/* PASV (extended = 0) or EPSV (1): open a listener, reply 227/229. */
void dataio_pasv(struct session *s, int extended);
/* PORT/EPRT target, already parsed: refuses (and logs) third addresses. */
void dataio_port(struct session *s, const struct addr *a, const char *cmd);
/* Forget any PASV listener or PORT target, and close a MODE B data
 * connection kept open. */
void dataio_reset(struct session *s);
/* Close a MODE B data connection kept open (MODE S, the session's end). */
void dataio_drop_persistent(struct session *s);

/* Open the data channel and send "150 <what> (<count> bytes)."  On failure
 * the reply is already sent and -1 returned.  data->fd is -1 in MS mode. */
int dataio_begin(struct session *s, struct xp_conn *data, const char *what,
                 uint64_t count);
/* Send count bytes of file fd / a buffer.  -1 when the peer is gone. */
int dataio_send_fd(struct session *s, struct xp_conn *data, int fd,
                   uint64_t count);
int dataio_send_buf(struct session *s, struct xp_conn *data, const char *p,
                    uint64_t n);
/* Receive into fd: until EOF (TCP/naive) or count bytes (MS). */
int dataio_recv_fd(struct session *s, struct xp_conn *data, int fd,
                   uint64_t count, uint64_t *got);
/* Close the data channel and reply 226 (ok) or 426/451. */
void dataio_end(struct session *s, struct xp_conn *data, int ok,
                const char *failure);

#endif
