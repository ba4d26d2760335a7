/* datapump.c - the TCP send loop of the data channel (see datapump.h). */
#define _GNU_SOURCE
#include "datapump.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include "blockmode.h"
#include "cmdio.h"
#include "logging.h"
#include "sysutil.h"
#include "tunables.h"

#define PUMP_PIECE (1u << 20)

struct pump {
  struct session *s;
  struct xp_conn *data;
  int fd;
  const char *buf;
  uint64_t count;
  uint64_t done;
  int watch_ctrl; /* 0 once the next command is known not to be ABOR */
  /* MODE B: every send is (the rest of) one block, header and payload,
   * built in `frame` from the file or buffer; `done` counts payload bytes
   * framed so far. */
  int block;
  char *frame;
  size_t flen, foff;
  int last_framed; /* the EOF block is in `frame` (or sent) */
};

/* Read exactly n bytes of the file.  -1 with errno ENODATA if it is
 * shorter than announced. */
static int read_full(int fd, char *p, size_t n) {
  while (n > 0) {
    ssize_t rc = sys_read(fd, p, n);
    if (rc < 0) {
      return -1;
    }
    if (rc == 0) {
      errno = ENODATA;
      return -1;
    }
    p += rc;
    n -= (size_t)rc;
  }
  return 0;
}

/* The next block: header and at most one write's worth of payload. */
static int fill_frame(struct pump *p) {
  size_t n = blk_payload(p->count - p->done, tunables.chunk);
  int last = p->done + n == p->count;
  char *payload = p->frame + BLK_HEADER;
  if (p->fd >= 0) {
    if (read_full(p->fd, payload, n) != 0) {
      return -1;
    }
  } else if (n > 0) {
    memcpy(payload, p->buf + p->done, n);
  }
  blk_header((unsigned char *)p->frame, n, last);
  p->flen = BLK_HEADER + n;
  p->foff = 0;
  p->done += n;
  p->last_framed = last;
  return 0;
}

/* Block mode: hand the kernel what it takes of the current block. */
static int push_block(struct pump *p) {
  ssize_t rc;
  if (p->foff == p->flen && fill_frame(p) != 0) {
    return -1;
  }
  do {
    rc = send(p->data->fd, p->frame + p->foff, p->flen - p->foff,
              MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
  p->foff += (size_t)rc;
  return rc > 0;
}

static int more_to_send(const struct pump *p) {
  if (p->block) {
    return !p->last_framed || p->foff < p->flen;
  }
  return p->done < p->count;
}

/* Hand the kernel what it takes now.  1 progress, 0 no room, -1 error. */
static int push(struct pump *p) {
  uint64_t want;
  size_t n;
  ssize_t rc;
  if (p->block) {
    return push_block(p);
  }
  want = p->count - p->done;
  n = want > PUMP_PIECE ? PUMP_PIECE : (size_t)want;
  do {
    rc = p->fd >= 0 ? sendfile(p->data->fd, p->fd, NULL, n)
                    : send(p->data->fd, p->buf + p->done, n,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
  if (rc == 0) {
    errno = ENODATA; /* the file is shorter than announced */
    return -1;
  }
  p->done += (uint64_t)rc;
  return 1;
}

/* The control connection has something: ABOR, another command, or its end
 * (noticed whatever is buffered: cmdio_watch_events). */
static enum pump_result control(struct pump *p, enum cmdio_watch w) {
  switch (w) {
  case CMDIO_WATCH_ABOR: return PUMP_ABORTED;
  case CMDIO_WATCH_GONE: return PUMP_CTRL_GONE;
  case CMDIO_WATCH_OTHER: p->watch_ctrl = 0; return PUMP_DONE;
  case CMDIO_WATCH_NONE:
  default: return PUMP_DONE;
  }
}

static enum pump_result run(struct pump *p) {
  int64_t limit = (int64_t)tunables.data_timeout_s * 1000;
  int64_t deadline = sys_mono_ms() + limit;
  /* ABOR sent along with RETR */
  enum pump_result first = control(p, cmdio_watch_abor(p->s, 0));
  if (first != PUMP_DONE) {
    return first;
  }
  while (more_to_send(p)) {
    struct pollfd f[2];
    int rc;
    f[0].fd = p->data->fd;
    f[0].events = POLLOUT;
    f[1].fd = p->s->ctrl.fd;
    f[1].events = cmdio_watch_events(p->watch_ctrl);
    f[0].revents = f[1].revents = 0;
    rc = sys_poll(f, 2, sys_ms_left(deadline));
    if (rc < 0) {
      log_line("FAIL send: poll: %s", strerror(errno));
      return PUMP_FAILED;
    }
    if (rc == 0) {
      log_line("FAIL send: %llu of %llu bytes, no progress for %d s",
               (unsigned long long)p->done, (unsigned long long)p->count,
               tunables.data_timeout_s);
      return PUMP_FAILED;
    }
    if (f[1].revents != 0) {
      enum pump_result r =
          control(p, cmdio_watch_polled(p->s, p->watch_ctrl, f[1].revents));
      if (r != PUMP_DONE) {
        return r;
      }
    }
    if (f[0].revents != 0) {
      rc = push(p);
      if (rc < 0) {
        log_line("FAIL send: %llu of %llu bytes: %s",
                 (unsigned long long)p->done, (unsigned long long)p->count,
                 strerror(errno));
        return PUMP_FAILED;
      }
      if (rc > 0) {
        deadline = sys_mono_ms() + limit;
      }
    }
  }
  return PUMP_DONE;
}

enum pump_result pump_send(struct session *s, struct xp_conn *data, int fd,
                           const char *buf, uint64_t count) {
  struct pump p;
  enum pump_result r;
  memset(&p, 0, sizeof p);
  p.s = s;
  p.data = data;
  p.fd = fd;
  p.buf = buf;
  p.count = count;
  p.watch_ctrl = 1;
  p.block = s->block_mode;
  if (p.block) {
    p.frame = sys_malloc(BLK_HEADER + BLK_MAX);
  }
  if (sys_set_nonblock(data->fd, 1) != 0) {
    log_line("FAIL send: fcntl: %s", strerror(errno));
    free(p.frame);
    return PUMP_FAILED;
  }
  r = run(&p);
  free(p.frame);
  /* blocking again: the lingering close after the transfer needs it */
  if (sys_set_nonblock(data->fd, 0) != 0 && r == PUMP_DONE) {
    log_line("FAIL send: fcntl: %s", strerror(errno));
    r = PUMP_FAILED;
  }
  return r;
}
