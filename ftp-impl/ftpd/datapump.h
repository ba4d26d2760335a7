/* datapump.h - sending a file or a listing over a TCP data connection
 * without ever blocking in a send: the transfer ends when the client takes
 * no byte for data_timeout seconds (426), and the control connection is
 * watched between chunks for ABOR (like vsftpd) or for its loss. */
#ifndef FTP_DATAPUMP_H
#define FTP_DATAPUMP_H

#include <stdint.h>

#include "session.h"

enum pump_result {
  PUMP_DONE = 0, /* every byte taken by the kernel */
  PUMP_FAILED,   /* send error, short file, or no progress in time (logged) */
  PUMP_ABORTED,  /* ABOR arrived on the control connection (consumed) */
  PUMP_CTRL_GONE /* the control connection closed or failed */
};

/* count bytes of file fd (fd >= 0, from its current offset) or of buf. */
enum pump_result pump_send(struct session *s, struct xp_conn *data, int fd,
                           const char *buf, uint64_t count);

#endif
