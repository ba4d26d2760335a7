/* extsend.c - the MODE E sender of ftpd (see extsend.h). */
#include "extsend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmdio.h"
#include "extblock.h"
#include "ftpcodes.h"
#include "logging.h"
#include "sysutil.h"
#include "tunables.h"

struct lane {
  struct xp_conn c;
  char *frame; /* the block being sent: header and payload */
  size_t flen, foff;
  int eod;  /* the EOD block is in frame (or sent) */
  int shut; /* its FIN is out */
};

struct stripe {
  struct session *s;
  struct lane lane[EXT_MAX_CONNS];
  unsigned n;
  int fd;
  const char *buf;
  uint64_t start, count, framed; /* payload bytes framed so far */
  unsigned eods;                 /* lanes whose EOD is framed */
  int watch_ctrl;
};

/* Close every lane: lingering (until the client has acknowledged all) when
 * ok, else with a reset.  0 when every lane's data was delivered. */
static int close_lanes(struct stripe *p, int ok) {
  for (unsigned i = 0; i < p->n; i++) {
    if (p->lane[i].c.fd < 0) {
      continue;
    }
    /* blocking again: the lingering close waits in the kernel */
    if (ok && sys_set_nonblock(p->lane[i].c.fd, 0) != 0) {
      ok = 0;
    }
    if (ok && xp_close_delivered(&p->lane[i].c, tunables.data_timeout_s) != 0) {
      log_line("FAIL MODE E connection %u: not acknowledged within %d s", i,
               tunables.data_timeout_s);
      ok = 0;
    } else if (!ok) {
      xp_abort(&p->lane[i].c);
    }
    p->lane[i].c.fd = -1;
  }
  for (unsigned i = 0; i < p->n; i++) {
    free(p->lane[i].frame);
    p->lane[i].frame = NULL;
  }
  return ok ? 0 : -1;
}

/* MODE E: the sender opens the connections, to the PORT/EPRT address, all
 * at once: their handshakes overlap, one round trip for all of them. */
static int open_lanes(struct stripe *p) {
  struct session *s = p->s;
  struct addr src = s->local;
  int64_t deadline = sys_mono_ms() + (int64_t)tunables.open_timeout_s * 1000;
  addr_set_port(&src, 0);
  for (p->n = 0; p->n < s->parallel; p->n++) {
    struct lane *l = &p->lane[p->n];
    l->flen = l->foff = 0;
    if (xp_connect_start(XP_TCP, &s->port_addr, &src, &tunables.data_opts,
                         &l->c) != 0) {
      log_line("FAIL MODE E connection %u of %u: %s", p->n + 1, s->parallel,
               strerror(errno));
      return -1;
    }
    l->frame = sys_malloc(EXT_HEADER + tunables.chunk);
  }
  for (unsigned i = 0; i < p->n; i++) {
    struct lane *l = &p->lane[i];
    if (xp_connect_finish(&l->c, sys_ms_left(deadline)) != 0 ||
        sys_set_nonblock(l->c.fd, 1) != 0) {
      log_line("FAIL MODE E connection %u of %u: %s", i + 1, s->parallel,
               strerror(errno));
      return -1;
    }
  }
  return 0;
}

static int read_at(struct stripe *p, char *out, size_t n, uint64_t at) {
  if (p->fd < 0) {
    memcpy(out, p->buf + at, n);
    return 0;
  }
  while (n > 0) {
    ssize_t rc = pread(p->fd, out, n, (off_t)at);
    if (rc < 0 && errno == EINTR) {
      continue;
    }
    if (rc <= 0) {
      errno = rc == 0 ? ENODATA : errno; /* shorter than announced */
      return -1;
    }
    out += rc;
    n -= (size_t)rc;
    at += (uint64_t)rc;
  }
  return 0;
}

/* The lane's next block: data while the file lasts, then its EOD; the last
 * lane to end also carries EOF and the number of connections. */
static int fill(struct stripe *p, struct lane *l) {
  unsigned char *h = (unsigned char *)l->frame;
  uint64_t left = p->count - p->framed;
  if (left > 0) {
    size_t n = left < tunables.chunk ? (size_t)left : tunables.chunk;
    uint64_t at = p->start + p->framed;
    if (read_at(p, l->frame + EXT_HEADER, n, p->fd < 0 ? p->framed : at) != 0) {
      return -1;
    }
    ext_header(h, 0, n, at);
    l->flen = EXT_HEADER + n;
    p->framed += n;
  } else {
    int last = ++p->eods == p->n;
    ext_header(h, EXT_EOD | EXT_CLOSE | (last ? EXT_EOF : 0u), 0,
               last ? p->n : 0);
    l->flen = EXT_HEADER;
    l->eod = 1;
  }
  l->foff = 0;
  return 0;
}

/* Hand the kernel what it takes of this lane's block.  1 progress, 0 no
 * room, -1 error. */
static int push(struct stripe *p, struct lane *l) {
  ssize_t rc;
  if (l->foff == l->flen && fill(p, l) != 0) {
    return -1;
  }
  do {
    rc = send(l->c.fd, l->frame + l->foff, l->flen - l->foff,
              MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
  l->foff += (size_t)rc;
  return rc > 0;
}

static int lane_done(const struct lane *l) {
  return l->eod && l->foff == l->flen;
}

enum outcome { SENT = 0, FAILED, ABORTED, CTRL_GONE };

static enum outcome control(struct stripe *p, int readable) {
  switch (cmdio_watch_abor(p->s, readable)) {
  case CMDIO_WATCH_ABOR: return ABORTED;
  case CMDIO_WATCH_GONE: return CTRL_GONE;
  case CMDIO_WATCH_OTHER: p->watch_ctrl = 0; return SENT;
  case CMDIO_WATCH_NONE:
  default: return SENT;
  }
}

/* One poll round over the unfinished lanes and the control connection.
 * 1 progress, 0 none, -1 failed (logged); *o set on ABOR or loss. */
static int round_trip(struct stripe *p, int64_t deadline, enum outcome *o) {
  struct pollfd f[EXT_MAX_CONNS + 1];
  unsigned idx[EXT_MAX_CONNS];
  nfds_t m = 0;
  int rc, moved = 0;
  for (unsigned i = 0; i < p->n; i++) {
    if (!lane_done(&p->lane[i])) {
      f[m].fd = p->lane[i].c.fd;
      f[m].events = POLLOUT;
      f[m].revents = 0;
      idx[m++] = i;
    }
  }
  f[m].fd = p->watch_ctrl ? p->s->ctrl.fd : -1;
  f[m].events = POLLIN;
  f[m].revents = 0;
  rc = sys_poll(f, m + 1, sys_ms_left(deadline));
  if (rc <= 0) {
    log_line("FAIL MODE E send: %s after %llu of %llu bytes",
             rc == 0 ? "no progress" : strerror(errno),
             (unsigned long long)p->framed, (unsigned long long)p->count);
    return -1;
  }
  if (f[m].revents != 0 && (*o = control(p, 1)) != SENT) {
    return -1;
  }
  for (nfds_t k = 0; k < m; k++) {
    if (f[k].revents != 0) {
      struct lane *l = &p->lane[idx[k]];
      int r = push(p, l);
      if (r < 0) {
        log_line("FAIL MODE E connection %u: %s", idx[k], strerror(errno));
        return -1;
      }
      moved |= r;
      /* the FIN follows its EOD at once, not when the last lane is done:
       * the lingering closes then wait for all of them together */
      if (lane_done(l) && !l->shut && xp_shutdown_write(&l->c) == 0) {
        l->shut = 1;
      }
    }
  }
  return moved;
}

static enum outcome run(struct stripe *p) {
  int64_t limit = (int64_t)tunables.data_timeout_s * 1000;
  int64_t deadline = sys_mono_ms() + limit;
  enum outcome o = control(p, 0); /* ABOR sent along with RETR */
  unsigned done = 0;
  while (o == SENT && done < p->n) {
    int r = round_trip(p, deadline, &o);
    if (r < 0) {
      return o == SENT ? FAILED : o;
    }
    if (r > 0) {
      deadline = sys_mono_ms() + limit;
    }
    done = 0;
    for (unsigned i = 0; i < p->n; i++) {
      done += (unsigned)lane_done(&p->lane[i]);
    }
  }
  return o;
}

static int finish(struct stripe *p, enum outcome o) {
  struct session *s = p->s;
  if (close_lanes(p, o == SENT) != 0 && o == SENT) {
    o = FAILED; /* a 226 promises the data arrived */
  }
  s->transfers++;
  if (o == ABORTED) {
    log_line("ABORT transfer on the client's ABOR");
    if (cmdio_reply(s, FTP_BADSENDNET,
                    "Connection closed; transfer aborted.") == 0) {
      (void)cmdio_reply(s, FTP_TRANSFEROK, "Abort successful.");
    }
    return -1;
  }
  if (o == CTRL_GONE) {
    log_line("DISCONNECT by peer during a transfer");
    s->quit = 1;
    return -1;
  }
  if (o != SENT) {
    (void)cmdio_reply(s, FTP_BADSENDNET, "Failure writing network stream.");
    return -1;
  }
  return cmdio_reply(s, FTP_TRANSFEROK, "Transfer complete.");
}

int ext_transfer(struct session *s, const char *what, int fd, const char *buf,
                 uint64_t start, uint64_t count) {
  struct stripe p;
  memset(&p, 0, sizeof p);
  p.s = s;
  p.fd = fd;
  p.buf = buf;
  p.start = start;
  p.count = count;
  p.watch_ctrl = 1;
  if (!s->port_set) {
    (void)cmdio_reply(s, FTP_BADSENDCONN,
                      "MODE E: the sender opens the data connections; use "
                      "PORT or EPRT.");
    return -1;
  }
  s->port_set = 0;
  if (open_lanes(&p) != 0) {
    (void)close_lanes(&p, 0);
    (void)cmdio_reply(s, FTP_BADSENDCONN, "Failed to establish connection.");
    return -1;
  }
  if (cmdio_reply(s, FTP_DATACONN,
                  "Opening BINARY mode data connections (%u) for %s (%llu "
                  "bytes).",
                  p.n, what, (unsigned long long)count) != 0) {
    (void)close_lanes(&p, 0);
    return -1;
  }
  return finish(&p, run(&p));
}
