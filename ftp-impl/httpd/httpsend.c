/* httpsend.c - answers' bytes to the kernel under a stall limit (see
 * httpsend.h). */
#define _GNU_SOURCE
#include "httpsend.h"

#include <errno.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include "httpdopts.h"
#include "logging.h"
#include "sysutil.h"

#define SENDFILE_PIECE (1u << 30)

/* The socket had no room: wait for some until the stall's deadline, which
 * the first wait of a stall sets (*until 0: none yet; the clock is read
 * only when a send must wait).  0 room, -1 with errno (ETIMEDOUT). */
static int wait_room(const struct xp_conn *c, int64_t *until) {
  int limit_s = httpd_opts.xp.io_timeout_s, rc;
  if (limit_s > 0 && *until == 0) {
    *until = sys_mono_ms() + (int64_t)limit_s * 1000;
  }
  rc = sys_wait_fd(c->fd, POLLOUT, limit_s > 0 ? sys_ms_left(*until) : -1);
  if (rc == 0) {
    log_line("TIMEOUT send: no byte taken for %d s", limit_s);
    errno = ETIMEDOUT;
    return -1;
  }
  return rc < 0 ? -1 : 0;
}

/* What a send that failed (-1) means: 1 wait for room, 0 try again at once,
 * -1 the connection failed. */
static int after_failed_send(void) {
  if (errno == EINTR) {
    return 0;
  }
  return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
}

static int tcp_send(const struct xp_conn *c, const char *p, size_t n,
                    int more) {
  int flags = MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0);
  int64_t until = 0;
  while (n > 0) {
    ssize_t rc = send(c->fd, p, n, flags);
    int next;
    if (rc > 0) {
      p += rc;
      n -= (size_t)rc;
      until = 0; /* progress: a later wait is a new stall */
      continue;
    }
    if (rc == 0) {
      errno = EPIPE; /* not for a TCP send of n > 0 bytes */
      return -1;
    }
    next = after_failed_send();
    if (next < 0 || (next > 0 && wait_room(c, &until) != 0)) {
      return -1;
    }
  }
  return 0;
}

/* sendfile has no MSG_DONTWAIT: the socket is non-blocking meanwhile. */
static int tcp_send_file(const struct xp_conn *c, int fd, uint64_t count) {
  int64_t until = 0;
  while (count > 0) {
    size_t want = count > SENDFILE_PIECE ? SENDFILE_PIECE : (size_t)count;
    ssize_t rc = sendfile(c->fd, fd, NULL, want);
    int next;
    if (rc > 0) {
      count -= (uint64_t)rc;
      until = 0;
      continue;
    }
    if (rc == 0) {
      errno = ENODATA; /* the file is shorter than announced */
      return -1;
    }
    next = after_failed_send();
    if (next < 0 || (next > 0 && wait_room(c, &until) != 0)) {
      return -1;
    }
  }
  return 0;
}

int http_send(const struct xp_conn *c, const void *p, size_t n, unsigned sid,
              int more) {
  if (c->proto != XP_TCP) {
    return xp_send_more(c, p, n, sid, more);
  }
  return tcp_send(c, p, n, more);
}

int http_send_file(const struct xp_conn *c, int fd, uint64_t count,
                   unsigned sid, size_t chunk) {
  int rc, err;
  if (c->proto != XP_TCP) {
    return xp_send_file(c, fd, count, sid, chunk) == count ? 0 : -1;
  }
  if (sys_set_nonblock(c->fd, 1) != 0) {
    return -1;
  }
  rc = tcp_send_file(c, fd, count);
  err = errno;
  if (sys_set_nonblock(c->fd, 0) != 0) {
    return -1; /* the rest of the connection needs blocking reads */
  }
  errno = err;
  return rc;
}
