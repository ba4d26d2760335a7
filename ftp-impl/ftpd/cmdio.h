/* cmdio.h - reads command lines from the control connection and writes
 * replies to it (stream 0 on SCTP). */
#ifndef FTP_CMDIO_H
#define FTP_CMDIO_H

#include <stddef.h>

#include "session.h"

enum cmdio_status {
  CMDIO_LINE = 0,  /* a command line is in the output buffer */
  CMDIO_TOO_LONG,  /* a line longer than max_line was dropped */
  CMDIO_BAD_BYTES, /* a line with NUL bytes was dropped */
  CMDIO_EOF,       /* peer closed the control connection */
  CMDIO_TIMEOUT,   /* idle timeout */
  CMDIO_ERROR      /* connection error (errno) */
};

/* Next command line (Telnet IAC sequences and CR/LF removed). */
enum cmdio_status cmdio_get_line(struct session *s, char *line, size_t cap,
                                 int timeout_ms);
/* Receive one chunk from the control connection.  Stream-0 bytes go to the
 * command buffer; data-stream bytes are copied to data (*dlen, may be 0).
 * Returns > 0 on progress, 0 on orderly end, -1 on error/timeout. */
int cmdio_recv(struct session *s, char *data, size_t dcap, size_t *dlen,
               int timeout_ms);

/* During a transfer: is the next command ABOR?  readable: the control
 * connection has bytes to read first (it never blocks).  ABOR is consumed;
 * OTHER means a different command comes first (stop watching). */
enum cmdio_watch {
  CMDIO_WATCH_NONE = 0, /* no complete line yet */
  CMDIO_WATCH_ABOR,
  CMDIO_WATCH_OTHER,
  CMDIO_WATCH_GONE /* the control connection closed or failed */
};
enum cmdio_watch cmdio_watch_abor(struct session *s, int readable);
/* The events to poll the control connection for meanwhile: its input while
 * the next command may still be ABOR; once another command is known to come
 * first (OTHER), only its end, so that the client's departure still ends
 * the session at once whatever it sent before, while bytes left unread do
 * not wake the poll again. */
short cmdio_watch_events(int abor_possible);
/* What that poll reported (revents != 0), with the same abor_possible:
 * cmdio_watch_abor's answer while ABOR is possible, otherwise GONE. */
enum cmdio_watch cmdio_watch_polled(struct session *s, int abor_possible,
                                    short revents);

/* "CODE text\r\n".  -1 if the control connection failed. */
int cmdio_reply(struct session *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Multi-line reply: "CODE-first\r\n", body lines (already formatted, each
 * ending "\r\n") and "CODE last\r\n". */
int cmdio_reply_multi(struct session *s, int code, const char *first,
                      const char *body, const char *last);

#endif
