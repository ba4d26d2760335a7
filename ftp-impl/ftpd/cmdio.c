/* cmdio.c - control connection input and output (see cmdio.h). */
#define _GNU_SOURCE /* POLLRDHUP */
#include "cmdio.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "logging.h"
#include "sysutil.h"
#include "tunables.h"

/* Remove Telnet IAC sequences (RFC 854) and the line ending, in place.
 * Returns -1 if the line holds a NUL byte. */
static int clean_line(char *p, size_t n, size_t *outlen) {
  size_t i, o = 0;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == 0xff && i + 1 < n) {
      unsigned char cmd = (unsigned char)p[i + 1];
      if (cmd == 0xff) {
        p[o++] = (char)0xff;
        i++;
      } else if (cmd >= 251 && cmd <= 254) {
        i += 2; /* WILL/WONT/DO/DONT option */
      } else {
        i++; /* IP, DM, ... */
      }
      continue;
    }
    if (c == '\0') {
      return -1;
    }
    p[o++] = (char)c;
  }
  while (o > 0 && (p[o - 1] == '\r' || p[o - 1] == '\n')) {
    o--;
  }
  p[o] = '\0';
  *outlen = o;
  return 0;
}

/* Take one complete line out of s->in, if there is one. */
static int take_line(struct session *s, char *line, size_t cap,
                     enum cmdio_status *st) {
  char *nl = s->in.len ? memchr(s->in.data, '\n', s->in.len) : NULL;
  size_t n, clean;
  if (nl == NULL) {
    if (s->in.len > (size_t)tunables.max_line) {
      buf_clear(&s->in);
      if (!s->discarding) {
        s->discarding = 1;
        *st = CMDIO_TOO_LONG;
        return 1;
      }
    }
    return 0;
  }
  n = (size_t)(nl - s->in.data) + 1;
  if (s->discarding) {
    s->discarding = 0;
    buf_consume(&s->in, n);
    return take_line(s, line, cap, st);
  }
  if (n > (size_t)tunables.max_line || n >= cap) {
    buf_consume(&s->in, n);
    *st = CMDIO_TOO_LONG;
    return 1;
  }
  memcpy(line, s->in.data, n);
  buf_consume(&s->in, n);
  *st = clean_line(line, n, &clean) == 0 ? CMDIO_LINE : CMDIO_BAD_BYTES;
  return 1;
}

/* What the control connection holds, once poll says it holds something:
 * on usrsctp a notification wakes the poll too, and is no data (usx.h), so
 * a read that finds nothing waits again for the time left. */
static ssize_t recv_ready(struct session *s, void *p, size_t n, unsigned *sid,
                          int *eor, int timeout_ms) {
  int64_t deadline = sys_mono_ms() + timeout_ms;
  for (;;) {
    ssize_t got;
    int rc = sys_wait_fd(s->ctrl.fd, POLLIN, sys_ms_left(deadline));
    if (rc <= 0) {
      if (rc == 0) {
        errno = ETIMEDOUT;
      }
      return -1;
    }
    got = xp_recv_nowait(&s->ctrl, p, n, sid, eor);
    if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      return got;
    }
    if (sys_ms_left(deadline) == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
  }
}

int cmdio_recv(struct session *s, char *data, size_t dcap, size_t *dlen,
               int timeout_ms) {
  char tmp[8192];
  unsigned sid;
  int eor;
  ssize_t n;
  *dlen = 0;
  if (data != NULL) {
    n = recv_ready(s, data, dcap, &sid, &eor, timeout_ms);
    if (n > 0 && sid == SID_CTRL) {
      if (buf_append(&s->in, data, (size_t)n) != 0) {
        errno = EMSGSIZE;
        return -1;
      }
    } else if (n > 0) {
      *dlen = (size_t)n;
    }
    return n < 0 ? -1 : (int)(n > 0);
  }
  n = recv_ready(s, tmp, sizeof tmp, &sid, &eor, timeout_ms);
  if (n > 0 && sid == SID_CTRL) {
    if (buf_append(&s->in, tmp, (size_t)n) != 0) {
      errno = EMSGSIZE;
      return -1;
    }
  } else if (n > 0) {
    log_line("DROPPED %zd unexpected bytes on stream %u", n, sid);
  }
  return n < 0 ? -1 : (int)(n > 0);
}

enum cmdio_status cmdio_get_line(struct session *s, char *line, size_t cap,
                                 int timeout_ms) {
  int64_t deadline = sys_mono_ms() + timeout_ms;
  for (;;) {
    enum cmdio_status st;
    size_t dlen;
    int rc;
    if (take_line(s, line, cap, &st)) {
      return st;
    }
    rc = cmdio_recv(s, NULL, 0, &dlen, sys_ms_left(deadline));
    if (rc == 0) {
      return CMDIO_EOF;
    }
    if (rc < 0) {
      return errno == ETIMEDOUT ? CMDIO_TIMEOUT : CMDIO_ERROR;
    }
  }
}

/* Is the first complete line in s->in "ABOR" (after Telnet IP/Synch, any
 * case)?  Consumed if so. */
static enum cmdio_watch first_line(struct session *s) {
  char line[64];
  char *nl = s->in.len ? memchr(s->in.data, '\n', s->in.len) : NULL;
  size_t n, clean;
  if (nl == NULL) {
    return s->in.len > (size_t)tunables.max_line ? CMDIO_WATCH_OTHER
                                                 : CMDIO_WATCH_NONE;
  }
  n = (size_t)(nl - s->in.data) + 1;
  if (s->discarding || n >= sizeof line) {
    return CMDIO_WATCH_OTHER;
  }
  memcpy(line, s->in.data, n);
  if (clean_line(line, n, &clean) != 0) {
    return CMDIO_WATCH_OTHER;
  }
  while (clean > 0 && line[clean - 1] == ' ') {
    line[--clean] = '\0';
  }
  if (!str_eq_nocase(line, "ABOR")) {
    return CMDIO_WATCH_OTHER;
  }
  buf_consume(&s->in, n);
  return CMDIO_WATCH_ABOR;
}

enum cmdio_watch cmdio_watch_abor(struct session *s, int readable) {
  if (readable) {
    size_t dlen;
    int rc = cmdio_recv(s, NULL, 0, &dlen, 0);
    if (rc < 0 && errno == EMSGSIZE) {
      return CMDIO_WATCH_OTHER; /* input buffer full: read after the transfer */
    }
    if (rc < 0 && errno == ETIMEDOUT) {
      return CMDIO_WATCH_NONE;
    }
    if (rc <= 0) {
      return CMDIO_WATCH_GONE;
    }
  }
  return first_line(s);
}

short cmdio_watch_events(int abor_possible) {
  /* POLLRDHUP: the peer's FIN, reported whatever its bytes still unread */
  return (short)(abor_possible ? POLLIN : POLLRDHUP);
}

enum cmdio_watch cmdio_watch_polled(struct session *s, int abor_possible,
                                    short revents) {
  if (abor_possible) {
    return cmdio_watch_abor(s, 1);
  }
  /* only the end was asked for: anything reported means it (FIN, reset) */
  return revents != 0 ? CMDIO_WATCH_GONE : CMDIO_WATCH_OTHER;
}

static int send_ctrl(struct session *s, const char *p, size_t n) {
  return xp_send(&s->ctrl, p, n, SID_CTRL);
}

int cmdio_reply(struct session *s, int code, const char *fmt, ...) {
  char text[1024];
  char line[1100];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (n < 0) {
    return -1;
  }
  /* A reply never carries a line break of its own: the client's bytes that
   * we echo (file names) could otherwise forge a second reply. */
  for (n = 0; text[n] != '\0'; n++) {
    if (text[n] == '\r' || text[n] == '\n') {
      text[n] = ' ';
    }
  }
  (void)str_fmt(line, sizeof line, "%03d %s\r\n", code, text);
  if (strlen(line) < 6 || line[strlen(line) - 1] != '\n') {
    (void)str_fmt(line, sizeof line, "%03d (reply truncated)\r\n", code);
  }
  return send_ctrl(s, line, strlen(line));
}

int cmdio_reply_multi(struct session *s, int code, const char *first,
                      const char *body, const char *last) {
  struct buf b;
  int rc;
  buf_init(&b, 1u << 20);
  rc = buf_fmt(&b, "%03d-%s\r\n", code, first);
  if (rc == 0) {
    rc = buf_append_str(&b, body);
  }
  if (rc == 0) {
    rc = buf_fmt(&b, "%03d %s\r\n", code, last);
  }
  if (rc == 0) {
    rc = send_ctrl(s, b.data, b.len);
  }
  buf_free(&b);
  return rc;
}
