/* transport.c - TCP and SCTP behind one interface (see transport.h). */
#define _GNU_SOURCE
#include "transport.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/sctp.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sysutil.h"
#include "usx.h"

static int on_usrsctp(enum xp_proto p, const struct xp_opts *o) {
  return p == XP_SCTP && o->stack == XP_STACK_USRSCTP;
}

/* Buffer sizes: before connect()/listen(), so that the handshake advertises
 * the receive window, and again on accepted sockets. */
static int set_buf_opts(int fd, const struct xp_opts *o) {
  if (o->sndbuf > 0 &&
      sys_setsockopt_int(fd, SOL_SOCKET, SO_SNDBUF, o->sndbuf) != 0) {
    return -1;
  }
  if (o->rcvbuf > 0 &&
      sys_setsockopt_int(fd, SOL_SOCKET, SO_RCVBUF, o->rcvbuf) != 0) {
    return -1;
  }
  return 0;
}

static int set_maxseg(int fd, enum xp_proto p, int maxseg) {
  struct sctp_assoc_value av;
  if (p == XP_TCP) {
    return sys_setsockopt_int(fd, IPPROTO_TCP, TCP_MAXSEG, maxseg);
  }
  memset(&av, 0, sizeof av);
  av.assoc_value = (uint32_t)maxseg;
  return setsockopt(fd, IPPROTO_SCTP, SCTP_MAXSEG, &av, sizeof av);
}

/* Options that must be set before connect()/listen(). */
static int set_pre_opts(int fd, enum xp_proto p, const struct xp_opts *o) {
  if (sys_setsockopt_int(fd, SOL_SOCKET, SO_REUSEADDR, 1) != 0 ||
      set_buf_opts(fd, o) != 0) {
    return -1;
  }
  if (o->maxseg > 0 && set_maxseg(fd, p, o->maxseg) != 0) {
    return -1;
  }
  if (p == XP_SCTP && o->streams > 0) {
    struct sctp_initmsg im;
    memset(&im, 0, sizeof im);
    im.sinit_num_ostreams = (uint16_t)o->streams;
    im.sinit_max_instreams = (uint16_t)o->streams;
    if (setsockopt(fd, IPPROTO_SCTP, SCTP_INITMSG, &im, sizeof im) != 0) {
      return -1;
    }
  }
  return 0;
}

/* Options Linux does not inherit from a listening socket: set them on every
 * socket, connected or accepted. */
static int set_conn_opts(int fd, enum xp_proto p, const struct xp_opts *o) {
  if (o->io_timeout_s > 0 && sys_set_timeouts(fd, o->io_timeout_s) != 0) {
    return -1;
  }
  if (p == XP_TCP) {
    return sys_setsockopt_int(fd, IPPROTO_TCP, TCP_NODELAY, o->nodelay ? 1 : 0);
  }
  if (sys_setsockopt_int(fd, IPPROTO_SCTP, SCTP_NODELAY, o->nodelay ? 1 : 0) !=
          0 ||
      sys_setsockopt_int(fd, IPPROTO_SCTP, SCTP_RECVRCVINFO, 1) != 0) {
    return -1;
  }
  if (o->sack_delay_ms >= 0 || o->sack_freq >= 0) {
    struct sctp_sack_info si;
    memset(&si, 0, sizeof si);
    si.sack_delay = (uint32_t)(o->sack_delay_ms > 0 ? o->sack_delay_ms : 0);
    si.sack_freq = (uint32_t)(o->sack_freq > 0 ? o->sack_freq : 0);
    if (setsockopt(fd, IPPROTO_SCTP, SCTP_DELAYED_SACK, &si, sizeof si) != 0) {
      return -1;
    }
  }
  if (o->rto_min_ms >= 0 || o->rto_initial_ms >= 0 || o->rto_max_ms >= 0) {
    struct sctp_rtoinfo ri;
    memset(&ri, 0, sizeof ri);
    ri.srto_min = (uint32_t)(o->rto_min_ms > 0 ? o->rto_min_ms : 0);
    ri.srto_initial = (uint32_t)(o->rto_initial_ms > 0 ? o->rto_initial_ms : 0);
    ri.srto_max = (uint32_t)(o->rto_max_ms > 0 ? o->rto_max_ms : 0);
    if (setsockopt(fd, IPPROTO_SCTP, SCTP_RTOINFO, &ri, sizeof ri) != 0) {
      return -1;
    }
  }
  return 0;
}

/* first (when given) and the further addresses, packed one after the other
 * as sctp_bindx and sctp_connectx take them, each further one with `port`
 * (0 in an address to bind: the socket's own) and none that names first's
 * host again. */
static size_t pack_addrs(const struct addr *first, const struct xp_addrs *more,
                         int port, char *buf, size_t cap, int *count) {
  size_t used = 0;
  int i;
  *count = 0;
  for (i = first == NULL ? 0 : -1; i < more->n; i++) {
    struct addr a = i < 0 ? *first : more->a[i];
    if (i >= 0 && first != NULL && addr_same_host(first, &a)) {
      continue;
    }
    if (i >= 0) {
      addr_set_port(&a, port);
    }
    if ((size_t)a.len > cap - used) {
      return 0;
    }
    memcpy(buf + used, &a.ss, a.len);
    used += a.len;
    (*count)++;
  }
  return used;
}

#define PACKED_CAP ((XP_MAX_ALSO + 1) * sizeof(struct sockaddr_in6))

/* The further local addresses, on an SCTP socket already bound to one. */
static int bind_also(int fd, enum xp_proto p, const struct xp_opts *o,
                     const struct addr *bound) {
  char buf[PACKED_CAP];
  int count;
  size_t used;
  if (p != XP_SCTP || o->also_bind.n == 0) {
    return 0;
  }
  used = pack_addrs(bound, &o->also_bind, 0, buf, sizeof buf, &count);
  if (used == 0) {
    errno = EINVAL;
    return -1;
  }
  if (count == 1) {
    return 0; /* each further one was the bound address itself */
  }
  /* bound is bound already: add the rest, which follow it in buf */
  return sctp_bindx(fd, (struct sockaddr *)(void *)(buf + bound->len),
                    count - 1, SCTP_BINDX_ADD_ADDR);
}

/* connect(), or sctp_connectx() to dst and the peer's further addresses. */
static int connect_to(int fd, enum xp_proto p, const struct addr *dst,
                      const struct xp_opts *o) {
  char buf[PACKED_CAP];
  int count;
  if (p != XP_SCTP || o->also_peer.n == 0) {
    return connect(fd, (const struct sockaddr *)&dst->ss, dst->len);
  }
  if (pack_addrs(dst, &o->also_peer, addr_port(dst), buf, sizeof buf, &count) ==
      0) {
    errno = EINVAL;
    return -1;
  }
  return sctp_connectx(fd, (struct sockaddr *)(void *)buf, count, NULL);
}

static int new_socket(enum xp_proto p, int family) {
  return socket(family, SOCK_STREAM | SOCK_CLOEXEC,
                p == XP_SCTP ? IPPROTO_SCTP : IPPROTO_TCP);
}

int xp_listen(enum xp_proto p, const struct addr *a, const struct xp_opts *o,
              int backlog) {
  int fd;
  if (on_usrsctp(p, o)) {
    return usx_listen(a, o, backlog);
  }
  fd = new_socket(p, a->ss.ss_family);
  if (fd < 0) {
    return -1;
  }
  if (set_pre_opts(fd, p, o) != 0 || set_conn_opts(fd, p, o) != 0 ||
      bind(fd, (const struct sockaddr *)&a->ss, a->len) != 0 ||
      bind_also(fd, p, o, a) != 0 || listen(fd, backlog) != 0) {
    int e = errno;
    sys_close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int xp_accept(int lfd, enum xp_proto p, const struct xp_opts *o,
              struct xp_conn *out, struct addr *peer) {
  int fd;
  if (usx_is(lfd)) {
    fd = usx_accept(lfd, o, peer);
    out->fd = fd;
    out->proto = p;
    return fd < 0 ? -1 : 0;
  }
  peer->len = sizeof peer->ss;
  do {
    fd = accept4(lfd, (struct sockaddr *)&peer->ss, &peer->len, SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    return -1;
  }
  if (set_buf_opts(fd, o) != 0 || set_conn_opts(fd, p, o) != 0) {
    int e = errno;
    sys_close(fd);
    errno = e;
    return -1;
  }
  out->fd = fd;
  out->proto = p;
  return 0;
}

int xp_connect_start(enum xp_proto p, const struct addr *dst,
                     const struct addr *src, const struct xp_opts *o,
                     struct xp_conn *out) {
  int fd, err;
  if (on_usrsctp(p, o)) {
    errno = ENOTSUP; /* usrsctp connects with xp_connect, one at a time */
    return -1;
  }
  fd = new_socket(p, dst->ss.ss_family);
  if (fd < 0) {
    return -1;
  }
  if (set_pre_opts(fd, p, o) != 0 || set_conn_opts(fd, p, o) != 0 ||
      (src != NULL &&
       bind(fd, (const struct sockaddr *)&src->ss, src->len) != 0) ||
      (src != NULL && bind_also(fd, p, o, src) != 0) ||
      sys_set_nonblock(fd, 1) != 0 ||
      (connect_to(fd, p, dst, o) != 0 && errno != EINPROGRESS)) {
    err = errno;
    sys_close(fd);
    errno = err;
    return -1;
  }
  out->fd = fd;
  out->proto = p;
  return 0;
}

int xp_connect_finish(struct xp_conn *c, int timeout_ms) {
  int err = 0, rc = sys_wait_fd(c->fd, POLLOUT, timeout_ms);
  socklen_t elen = sizeof err;
  if (rc == 0) {
    err = ETIMEDOUT;
  } else if (rc < 0 ||
             getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) {
    err = errno;
  } else if (err == 0 && sys_set_nonblock(c->fd, 0) != 0) {
    err = errno;
  }
  if (err != 0) {
    sys_close(c->fd);
    c->fd = -1;
    errno = err;
    return -1;
  }
  return 0;
}

int xp_connect(enum xp_proto p, const struct addr *dst, const struct addr *src,
               const struct xp_opts *o, int timeout_ms, struct xp_conn *out) {
  if (on_usrsctp(p, o)) {
    out->fd = usx_connect(dst, src, o, timeout_ms);
    out->proto = p;
    return out->fd < 0 ? -1 : 0;
  }
  if (xp_connect_start(p, dst, src, o, out) != 0) {
    return -1;
  }
  return xp_connect_finish(out, timeout_ms);
}

/* Linux refuses (EMSGSIZE) an SCTP message larger than the send buffer:
 * grow the buffer to fit it (SO_SNDBUFFORCE when allowed). */
static int grow_sndbuf(int fd, size_t n) {
  int want;
  if (n > (1u << 29)) {
    return -1;
  }
  want = (int)n + 4096;
  if (sys_setsockopt_int(fd, SOL_SOCKET, SO_SNDBUFFORCE, want) == 0) {
    return 0;
  }
  return sys_setsockopt_int(fd, SOL_SOCKET, SO_SNDBUF, want);
}

/* One sendmsg of one SCTP message on stream sid.  Not lksctp's sctp_sendv:
 * it puts the flags into msg_flags, which sendmsg ignores, so MSG_DONTWAIT
 * would block. */
static ssize_t sctp_send_once(int fd, const void *p, size_t n, unsigned sid,
                              int flags) {
  union {
    char buf[CMSG_SPACE(sizeof(struct sctp_sndinfo))];
    struct cmsghdr align;
  } ctl;
  struct sctp_sndinfo si;
  struct msghdr msg;
  struct iovec iov;
  struct cmsghdr *cm;
  memset(&ctl, 0, sizeof ctl);
  memset(&msg, 0, sizeof msg);
  memset(&si, 0, sizeof si);
  si.snd_sid = (uint16_t)sid;
  iov.iov_base = (void *)(uintptr_t)p;
  iov.iov_len = n;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl.buf;
  msg.msg_controllen = sizeof ctl.buf;
  cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = IPPROTO_SCTP;
  cm->cmsg_type = SCTP_SNDINFO;
  cm->cmsg_len = CMSG_LEN(sizeof si);
  memcpy(CMSG_DATA(cm), &si, sizeof si);
  return sendmsg(fd, &msg, flags);
}

static int sctp_send_msg(int fd, const void *p, size_t n, unsigned sid) {
  int grown = 0;
  for (;;) {
    ssize_t rc = sctp_send_once(fd, p, n, sid, MSG_NOSIGNAL);
    if (rc >= 0) {
      return (size_t)rc == n ? 0 : -1;
    }
    if (errno == EMSGSIZE && !grown) {
      grown = 1;
      if (grow_sndbuf(fd, n) != 0) {
        errno = EMSGSIZE;
        return -1;
      }
      continue;
    }
    if (errno != EINTR) {
      return -1;
    }
  }
}

int xp_send(const struct xp_conn *c, const void *p, size_t n, unsigned sid) {
  return xp_send_more(c, p, n, sid, 0);
}

int xp_send_more(const struct xp_conn *c, const void *p, size_t n, unsigned sid,
                 int more) {
  const char *q = p;
  int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
  if (c->proto == XP_SCTP && usx_is(c->fd)) {
    return n == 0 || usx_send(c->fd, p, n, sid, 1) >= 0 ? 0 : -1;
  }
  if (c->proto == XP_SCTP) {
    return n == 0 ? 0 : sctp_send_msg(c->fd, p, n, sid);
  }
  while (n > 0) {
    ssize_t rc = send(c->fd, q, n, flags);
    if (rc < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -1;
    }
    q += rc;
    n -= (size_t)rc;
  }
  return 0;
}

ssize_t xp_send_nowait(const struct xp_conn *c, const void *p, size_t n,
                       unsigned sid) {
  if (usx_is(c->fd)) {
    return usx_send(c->fd, p, n, sid, 0);
  }
  for (;;) {
    ssize_t rc =
        c->proto == XP_TCP
            ? send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
            : sctp_send_once(c->fd, p, n, sid, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (rc >= 0 || errno != EINTR) {
      return rc;
    }
  }
}

static uint64_t tcp_sendfile(const struct xp_conn *c, int fd, uint64_t count) {
  uint64_t done = 0;
  while (done < count) {
    uint64_t want = count - done;
    ssize_t rc = sendfile(c->fd, fd, NULL,
                          want > (1u << 30) ? (1u << 30) : (size_t)want);
    if (rc < 0 && errno == EINTR) {
      continue;
    }
    if (rc <= 0) {
      if (rc == 0) {
        errno = ENODATA; /* the file is shorter than announced */
      }
      break;
    }
    done += (uint64_t)rc;
  }
  return done;
}

uint64_t xp_send_file(const struct xp_conn *c, int fd, uint64_t count,
                      unsigned sid, size_t chunk) {
  char *block;
  uint64_t done = 0;
  if (c->proto == XP_TCP) {
    return tcp_sendfile(c, fd, count);
  }
  block = sys_malloc(chunk);
  while (done < count) {
    uint64_t want = count - done;
    size_t n = want > chunk ? chunk : (size_t)want;
    ssize_t got = sys_read(fd, block, n);
    if (got == 0) {
      errno = ENODATA; /* the file is shorter than announced */
    }
    if (got <= 0 || xp_send(c, block, (size_t)got, sid) != 0) {
      break;
    }
    done += (uint64_t)got;
  }
  free(block);
  return done;
}

static ssize_t recv_flags(const struct xp_conn *c, void *p, size_t n,
                          unsigned *sid, int *eor, int rflags) {
  *sid = 0;
  *eor = 0;
  if (usx_is(c->fd)) {
    return usx_recv(c->fd, p, n, sid, eor, (rflags & MSG_DONTWAIT) == 0);
  }
  if (c->proto == XP_TCP) {
    for (;;) {
      ssize_t rc = recv(c->fd, p, n, rflags);
      if (rc >= 0 || errno != EINTR) {
        return rc;
      }
    }
  }
  for (;;) {
    struct sctp_rcvinfo ri;
    struct iovec iov;
    socklen_t ilen = sizeof ri;
    unsigned itype = 0;
    int flags = rflags;
    ssize_t rc;
    memset(&ri, 0, sizeof ri);
    iov.iov_base = p;
    iov.iov_len = n;
    rc = sctp_recvv(c->fd, &iov, 1, NULL, NULL, &ri, &ilen, &itype, &flags);
    if (rc < 0 && errno == EINTR) {
      continue;
    }
    if (rc > 0 && (flags & MSG_NOTIFICATION) != 0) {
      continue; /* none subscribed; skip if one arrives anyway */
    }
    if (rc > 0) {
      *sid = itype == SCTP_RECVV_RCVINFO ? ri.rcv_sid : 0;
      *eor = (flags & MSG_EOR) != 0;
    }
    return rc;
  }
}

ssize_t xp_recv(const struct xp_conn *c, void *p, size_t n, unsigned *sid,
                int *eor) {
  return recv_flags(c, p, n, sid, eor, 0);
}

ssize_t xp_recv_nowait(const struct xp_conn *c, void *p, size_t n,
                       unsigned *sid, int *eor) {
  return recv_flags(c, p, n, sid, eor, MSG_DONTWAIT);
}

int xp_drop_queued(const struct xp_conn *c) {
  char sink[4096];
  unsigned sid;
  int eor;
  for (;;) {
    ssize_t n = xp_recv_nowait(c, sink, sizeof sink, &sid, &eor);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 0;
    }
    if (n <= 0) {
      return 1;
    }
  }
}

int xp_streams(const struct xp_conn *c, unsigned *in, unsigned *out) {
  struct sctp_status st;
  socklen_t len = sizeof st;
  if (c->proto == XP_TCP) {
    *in = 1;
    *out = 1;
    return 0;
  }
  if (usx_is(c->fd)) {
    return usx_streams(c->fd, in, out);
  }
  memset(&st, 0, sizeof st);
  if (getsockopt(c->fd, IPPROTO_SCTP, SCTP_STATUS, &st, &len) != 0) {
    return -1;
  }
  *in = st.sstat_instrms;
  *out = st.sstat_outstrms;
  return 0;
}

int xp_stream_scheduler(const struct xp_conn *c, int round_robin) {
  struct sctp_assoc_value v;
  if (c->proto != XP_SCTP) {
    return 0;
  }
  if (usx_is(c->fd)) {
    return usx_stream_scheduler(c->fd, round_robin);
  }
  if (!round_robin) {
    return 0; /* the kernel's default */
  }
  memset(&v, 0, sizeof v);
  v.assoc_value = SCTP_SS_RR;
  return setsockopt(c->fd, IPPROTO_SCTP, SCTP_STREAM_SCHEDULER, &v, sizeof v);
}

int xp_cork(const struct xp_conn *c, int on) {
  if (c->proto != XP_TCP) {
    return 0;
  }
  return sys_setsockopt_int(c->fd, IPPROTO_TCP, TCP_CORK, on);
}

int xp_quickack(const struct xp_conn *c) {
  if (c->proto != XP_TCP) {
    return 0;
  }
  return sys_setsockopt_int(c->fd, IPPROTO_TCP, TCP_QUICKACK, 1);
}

int xp_readable_now(const struct xp_conn *c) {
  struct pollfd f;
  int rc;
  f.fd = c->fd;
  f.events = POLLIN;
  f.revents = 0;
  rc = sys_poll(&f, 1, 0);
  return rc < 0 ? -1 : rc > 0;
}

int xp_wait_writable(const struct xp_conn *c, int timeout_ms) {
  if (usx_is(c->fd)) {
    return usx_wait_writable(c->fd, timeout_ms);
  }
  return sys_wait_fd(c->fd, POLLOUT, timeout_ms);
}

const char *xp_stack_name(const struct xp_conn *c) {
  return usx_is(c->fd) ? "usrsctp" : "kernel";
}

int xp_error(const struct xp_conn *c) {
  int err = 0;
  if (usx_is(c->fd)) {
    return usx_error(c->fd);
  }
  if (sys_getsockopt_int(c->fd, SOL_SOCKET, SO_ERROR, &err) != 0) {
    return errno;
  }
  return err;
}

int xp_shutdown_write(const struct xp_conn *c) {
  if (usx_is(c->fd)) {
    return usx_shutdown_write(c->fd);
  }
  return shutdown(c->fd, SHUT_WR);
}

void xp_close(struct xp_conn *c) {
  if (usx_is(c->fd)) {
    usx_close(c->fd);
  } else {
    sys_close(c->fd);
  }
  c->fd = -1;
}

int xp_peer_udp_port(const struct xp_conn *c) {
  return usx_is(c->fd) ? usx_peer_udp_port(c->fd) : 0;
}

void xp_close_listener(int lfd) {
  if (usx_is(lfd)) {
    usx_close(lfd);
  } else {
    sys_close(lfd);
  }
}

void xp_abort(struct xp_conn *c) {
  struct linger lg;
  if (c->fd < 0) {
    return;
  }
  if (usx_is(c->fd)) {
    usx_abort(c->fd);
    c->fd = -1;
    return;
  }
  lg.l_onoff = 1;
  lg.l_linger = 0;
  (void)setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  xp_close(c);
}

int xp_close_delivered(struct xp_conn *c, int seconds) {
  struct linger lg;
  int64_t started;
  int64_t waited;
  if (usx_is(c->fd)) {
    int rc = usx_close_delivered(c->fd, seconds);
    c->fd = -1;
    return rc;
  }
  lg.l_onoff = 1;
  lg.l_linger = seconds;
  if (setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) != 0) {
    xp_close(c);
    return -1;
  }
  /* Linux reports no error when a lingering close runs out of time; only
   * the time it took tells. */
  started = sys_mono_ms();
  xp_close(c);
  waited = sys_mono_ms() - started;
  return waited < (int64_t)seconds * 1000 ? 0 : -1;
}

int xp_local_addr(const struct xp_conn *c, struct addr *a) {
  if (usx_is(c->fd)) {
    return usx_local_addr(c->fd, a);
  }
  a->len = sizeof a->ss;
  return getsockname(c->fd, (struct sockaddr *)&a->ss, &a->len);
}

int xp_peer_addr(const struct xp_conn *c, struct addr *a) {
  if (usx_is(c->fd)) {
    return usx_peer_addr(c->fd, a);
  }
  a->len = sizeof a->ss;
  return getpeername(c->fd, (struct sockaddr *)&a->ss, &a->len);
}

/* The sockaddr at p as a struct addr: 0, or -1 for a family it does not know
 * or one that would run past end. */
static int addr_at(const char *p, const char *end, struct addr *a) {
  sa_family_t family;
  size_t len;
  if ((size_t)(end - p) < sizeof family) {
    return -1;
  }
  memcpy(&family, p, sizeof family);
  len = family == AF_INET    ? sizeof(struct sockaddr_in)
        : family == AF_INET6 ? sizeof(struct sockaddr_in6)
                             : 0;
  if (len == 0 || (size_t)(end - p) < len) {
    return -1;
  }
  memset(a, 0, sizeof *a);
  memcpy(&a->ss, p, len);
  a->len = (socklen_t)len;
  return 0;
}

int xp_peer_has(const struct xp_conn *c, const struct addr *a) {
  struct sockaddr *all = NULL;
  const char *p, *end;
  struct addr one;
  int n, i, found = 0;
  if (c->proto == XP_TCP || usx_is(c->fd)) {
    /* usrsctp: single-homed */
    return xp_peer_addr(c, &one) == 0 && addr_same_host(&one, a);
  }
  n = sctp_getpaddrs(c->fd, 0, &all);
  if (n <= 0) {
    return 0;
  }
  p = (const char *)all;
  end = p + (size_t)n * sizeof(struct sockaddr_in6);
  for (i = 0; i < n && !found && addr_at(p, end, &one) == 0; i++) {
    found = addr_same_host(&one, a);
    p += one.len;
  }
  sctp_freepaddrs(all);
  return found;
}
