/* logging.h - the server's log: one line per event, one write() per line,
 * so concurrent session processes never interleave within a line. */
#ifndef FTP_LOGGING_H
#define FTP_LOGGING_H

/* Open path for appending ("-" or NULL: stderr).  -1 on error. */
int log_open(const char *path);
/* Prefix added to every following line (e.g. the peer's address). */
void log_set_peer(const char *peer);
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
