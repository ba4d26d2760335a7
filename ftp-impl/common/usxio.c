/* usxio.c - what moves through a usrsctp socket (usx.h): messages sent and
 * received, the waits for room and for the association's end, and what
 * usrsctp reports about it (SCTP_STATUS, the options read back). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "sysutil.h"
#include "usx.h"
#include "usxmtu.h"
#include "usxsock.h"

/* The socket fd names, or NULL with errno EBADF. */
static struct usx_sock *owned(int fd) {
  struct usx_sock *s = usx_find(fd);
  if (s == NULL) {
    errno = EBADF;
  }
  return s;
}

/* One send of one message on stream sid, without waiting.  The wake-up is
 * set and armed first: room that frees after a refusal is never missed. */
static ssize_t send_once(struct usx_sock *s, const void *p, size_t n,
                         unsigned sid) {
  struct sctp_sndinfo si;
  memset(&si, 0, sizeof si);
  si.snd_sid = (uint16_t)sid;
  usx_drain(s->wfd);
  /* should it find no room, it waits until the message fits */
  atomic_store(&s->wake_free, n < (size_t)INT_MAX ? (int)n : INT_MAX);
  atomic_store(&s->write_armed, 1);
  return usrsctp_sendv(s->so, p, n, NULL, 0, &si, (socklen_t)sizeof si,
                       SCTP_SENDV_SNDINFO, 0);
}

/* owned(fd), and the deadline of a blocking send or receive on it. */
static struct usx_sock *owned_until(int fd, int64_t *deadline) {
  struct usx_sock *s = owned(fd);
  *deadline = s == NULL ? 0 : sys_mono_ms() + s->io_timeout_ms;
  return s;
}

/* A blocking send's or receive's wait, within --io-timeout (deadline; none
 * when it is 0): 0, or -1 with errno EWOULDBLOCK as a kernel socket's
 * SO_SNDTIMEO and SO_RCVTIMEO give. */
static int wait_io(struct usx_sock *s, int efd, int64_t deadline) {
  if (usx_wait_efd(efd, s->io_timeout_ms > 0 ? sys_ms_left(deadline) : -1) ==
      0) {
    errno = EWOULDBLOCK;
    return -1;
  }
  return 0;
}

ssize_t usx_send(int fd, const void *p, size_t n, unsigned sid, int wait) {
  int64_t deadline;
  struct usx_sock *s = owned_until(fd, &deadline);
  if (s == NULL) {
    return -1;
  }
  for (;;) {
    ssize_t rc = send_once(s, p, n, sid);
    atomic_store(&s->refused,
                 rc < 0 && (errno == EWOULDBLOCK || errno == EAGAIN));
    if (rc >= 0 || !atomic_load(&s->refused)) {
      return rc;
    }
    if (!wait) {
      errno = EWOULDBLOCK;
      return -1;
    }
    if (wait_io(s, s->wfd, deadline) != 0) {
      return -1;
    }
  }
}

int usx_wait_writable(int fd, int timeout_ms) {
  struct usx_sock *s = owned(fd);
  int ev;
  if (s == NULL) {
    return -1;
  }
  ev = usrsctp_get_events(s->so);
  if (ev > 0 && (ev & SCTP_EVENT_ERROR) != 0) {
    return 1;
  }
  if (!atomic_load(&s->refused)) {
    return 1; /* the last send found room: try the next */
  }
  return usx_wait_efd(s->wfd, timeout_ms);
}

/* A notification read in place of data: the peer's SHUTDOWN and the
 * association's end are kept. */
static void note(struct usx_sock *s, const void *p, ssize_t n) {
  const union sctp_notification *sn = p;
  if ((size_t)n >= sizeof sn->sn_header &&
      sn->sn_header.sn_type == SCTP_SHUTDOWN_EVENT) {
    atomic_store(&s->peer_shutdown, 1);
  }
  if ((size_t)n >= sizeof sn->sn_assoc_change &&
      sn->sn_header.sn_type == SCTP_ASSOC_CHANGE &&
      sn->sn_assoc_change.sac_state == SCTP_SHUTDOWN_COMP) {
    atomic_store(&s->shutdown_complete, 1);
  }
}

/* Part of one message, without waiting; notifications are taken aside.
 * Once the peer's SHUTDOWN has come and its data is read, the end (0), as
 * the kernel's SCTP gives it then (its SHUTDOWN_RECEIVED state ends the
 * socket's reading): usrsctp ends it only with the association, which a
 * lost SHUTDOWN COMPLETE from a peer already gone delays by minutes of
 * SHUTDOWN ACK retransmissions. */
static ssize_t recv_once(struct usx_sock *s, void *p, size_t n, unsigned *sid,
                         int *eor) {
  for (;;) {
    struct sctp_rcvinfo ri;
    socklen_t ilen = (socklen_t)sizeof ri;
    unsigned itype = 0;
    int flags = 0;
    ssize_t rc;
    memset(&ri, 0, sizeof ri);
    rc = usrsctp_recvv(s->so, p, n, NULL, NULL, &ri, &ilen, &itype, &flags);
    if (rc > 0 && (flags & MSG_NOTIFICATION) != 0) {
      note(s, p, rc);
      continue;
    }
    if (rc > 0) {
      *sid = itype == SCTP_RECVV_RCVINFO ? ri.rcv_sid : 0;
      *eor = (flags & MSG_EOR) != 0;
    }
    if (rc < 0 && (errno == EWOULDBLOCK || errno == EAGAIN) &&
        atomic_load(&s->peer_shutdown)) {
      return 0;
    }
    if (rc < 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
      usx_rearm_read(s);
      errno = EWOULDBLOCK;
    }
    return rc;
  }
}

/* The association's end (its SHUTDOWN COMPLETE), whoever began it, until
 * deadline (now: only what has come); what arrives meanwhile is dropped.
 * 1 once it has ended (or is gone), 0 when the deadline came first.
 * usrsctp sends its SHUTDOWN ACK from its own thread after the notification
 * that ended the reading, so a program that closed and exited at once could
 * take it along unsent and leave the peer's SHUTDOWN unanswered (2 of 60 E3
 * runs). */
int usx_await_end(struct usx_sock *s, int64_t deadline) {
  char sink[512];
  while (!atomic_load(&s->shutdown_complete)) {
    struct sctp_rcvinfo ri;
    socklen_t ilen = (socklen_t)sizeof ri;
    unsigned itype = 0;
    int flags = 0;
    ssize_t rc = usrsctp_recvv(s->so, sink, sizeof sink, NULL, NULL, &ri, &ilen,
                               &itype, &flags);
    if (rc > 0) {
      if ((flags & MSG_NOTIFICATION) != 0) {
        note(s, sink, rc);
      }
      continue;
    }
    if (rc == 0 || (errno != EWOULDBLOCK && errno != EAGAIN)) {
      return 1; /* the association is gone */
    }
    usx_rearm_read(s);
    if (usx_wait_efd(s->fd, sys_ms_left(deadline)) == 0) {
      return 0;
    }
  }
  return 1;
}

/* Our SHUTDOWN, unless the peer sent its own first (then the stack answers
 * it).  0 when the association is ending; -1 when usrsctp refused: a
 * listener, or an association already gone. */
int usx_begin_end(struct usx_sock *s) {
  if (atomic_load(&s->shutdown_complete) || atomic_load(&s->peer_shutdown)) {
    return 0;
  }
  return usrsctp_shutdown(s->so, SHUT_WR) == 0 || errno == ENOTCONN ? 0 : -1;
}

ssize_t usx_recv(int fd, void *p, size_t n, unsigned *sid, int *eor, int wait) {
  int64_t deadline;
  struct usx_sock *s = owned_until(fd, &deadline);
  *sid = 0;
  *eor = 0;
  if (s == NULL) {
    return -1;
  }
  for (;;) {
    ssize_t rc = recv_once(s, p, n, sid, eor);
    if (rc >= 0 || !wait || errno != EWOULDBLOCK) {
      return rc;
    }
    if (wait_io(s, s->fd, deadline) != 0) {
      return -1;
    }
  }
}

int usx_error(int fd) {
  struct usx_sock *s = owned(fd);
  int err = 0;
  socklen_t len = (socklen_t)sizeof err;
  if (s == NULL) {
    return EBADF;
  }
  if (usrsctp_getsockopt(s->so, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    return errno;
  }
  return err;
}

int usx_shutdown_write(int fd) {
  struct usx_sock *s = owned(fd);
  return s == NULL ? -1 : usrsctp_shutdown(s->so, SHUT_WR);
}

int usx_close_delivered(int fd, int seconds) {
  struct usx_sock *s = owned(fd);
  int done;
  if (s == NULL) {
    return -1;
  }
  if (usx_begin_end(s) == 0) {
    (void)usx_await_end(s, sys_mono_ms() + (int64_t)seconds * 1000);
  }
  done = atomic_load(&s->shutdown_complete);
  usx_close(fd);
  return done ? 0 : -1;
}

/* The sockaddr usrsctp lists at p, as a struct addr; its length. */
static socklen_t listed_at(const char *p, struct addr *a) {
  const struct sockaddr *one = (const struct sockaddr *)(const void *)p;
  socklen_t len = one->sa_family == AF_INET6
                      ? (socklen_t)sizeof(struct sockaddr_in6)
                      : (socklen_t)sizeof(struct sockaddr_in);
  memset(a, 0, sizeof *a);
  memcpy(&a->ss, one, len);
  a->len = len;
  return len;
}

/* The first address usrsctp lists (local or the peer's), as a struct addr. */
static int first_addr(int n, struct sockaddr *all, struct addr *a) {
  if (n <= 0 || all == NULL) {
    errno = ENOTCONN;
    return -1;
  }
  (void)listed_at((const char *)all, a);
  return 0;
}

/* Of the n addresses at all, the one on the same host as want, into a with
 * its port; 0, or -1 if none is. */
static int listed_as(int n, const struct sockaddr *all, const struct addr *want,
                     struct addr *a) {
  const char *p = (const char *)all;
  int i;
  for (i = 0; i < n; i++) {
    struct addr at;
    p += listed_at(p, &at);
    if (addr_same_host(&at, want)) {
      *a = at;
      return 0;
    }
  }
  return -1;
}

/* The association's end here: of the local addresses usrsctp lists, the
 * kernel's route towards the peer leaves from (usxmtu.h), else the first. */
static int local_end(int n, struct sockaddr *all, int fd, struct addr *a) {
  struct addr peer, src;
  if (n > 1 && usx_peer_addr(fd, &peer) == 0 &&
      usx_route_source(&peer, &src) == 0 && listed_as(n, all, &src, a) == 0) {
    return 0;
  }
  return first_addr(n, all, a);
}

/* The first of the peer's addresses, or this end's (local_end). */
static int listed_addr(int fd, int peer, struct addr *a) {
  struct usx_sock *s = owned(fd);
  struct sockaddr *all = NULL;
  int n, rc;
  if (s == NULL) {
    return -1;
  }
  n = peer ? usrsctp_getpaddrs(s->so, 0, &all)
           : usrsctp_getladdrs(s->so, 0, &all);
  rc = peer ? first_addr(n, all, a) : local_end(n, all, fd, a);
  if (all != NULL && peer) {
    usrsctp_freepaddrs(all);
  } else if (all != NULL) {
    usrsctp_freeladdrs(all);
  }
  return rc;
}

int usx_local_addr(int fd, struct addr *a) { return listed_addr(fd, 0, a); }

int usx_peer_addr(int fd, struct addr *a) { return listed_addr(fd, 1, a); }

int usx_peer_udp_port(int fd) {
  struct usx_sock *s = owned(fd);
  struct sctp_udpencaps ue;
  socklen_t len = (socklen_t)sizeof ue;
  struct addr peer;
  if (s == NULL || usx_peer_addr(fd, &peer) != 0 ||
      peer.len > (socklen_t)sizeof ue.sue_address) {
    return 0;
  }
  memset(&ue, 0, sizeof ue); /* usrsctp asks which of its paths: the peer's */
  memcpy(&ue.sue_address, &peer.ss, peer.len);
  if (usrsctp_getsockopt(s->so, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &ue,
                         &len) != 0) {
    return 0;
  }
  return ntohs(ue.sue_port);
}

static enum usx_state state_of(int32_t usrsctp_state) {
  switch (usrsctp_state) {
  case SCTP_COOKIE_WAIT: return USX_COOKIE_WAIT;
  case SCTP_COOKIE_ECHOED: return USX_COOKIE_ECHOED;
  case SCTP_ESTABLISHED: return USX_ESTABLISHED;
  case SCTP_SHUTDOWN_PENDING: return USX_SHUTDOWN_PENDING;
  case SCTP_SHUTDOWN_SENT: return USX_SHUTDOWN_SENT;
  case SCTP_SHUTDOWN_RECEIVED: return USX_SHUTDOWN_RECEIVED;
  case SCTP_SHUTDOWN_ACK_SENT: return USX_SHUTDOWN_ACK_SENT;
  default: return USX_CLOSED;
  }
}

int usx_status(int fd, struct usx_status *out) {
  struct usx_sock *s = owned(fd);
  struct sctp_status st;
  socklen_t len = (socklen_t)sizeof st;
  if (s == NULL) {
    return -1;
  }
  memset(&st, 0, sizeof st);
  if (usrsctp_getsockopt(s->so, IPPROTO_SCTP, SCTP_STATUS, &st, &len) != 0) {
    return -1;
  }
  out->state = state_of(st.sstat_state);
  out->cwnd = st.sstat_primary.spinfo_cwnd;
  out->srtt_ms = st.sstat_primary.spinfo_srtt;
  out->rto_ms = st.sstat_primary.spinfo_rto;
  out->mtu = st.sstat_primary.spinfo_mtu;
  out->unacked = st.sstat_unackdata;
  out->pending = st.sstat_penddata;
  out->peer_rwnd = st.sstat_rwnd;
  out->streams_in = st.sstat_instrms;
  out->streams_out = st.sstat_outstrms;
  return 0;
}

int usx_streams(int fd, unsigned *in, unsigned *out) {
  struct usx_status st;
  if (usx_status(fd, &st) != 0) {
    return -1;
  }
  *in = (unsigned)st.streams_in;
  *out = (unsigned)st.streams_out;
  return 0;
}

static int64_t get_int(struct socket *so, int level, int opt) {
  int v = 0;
  socklen_t len = (socklen_t)sizeof v;
  return usrsctp_getsockopt(so, level, opt, &v, &len) == 0 ? v : -1;
}

int usx_stream_scheduler(int fd, int round_robin) {
  struct usx_sock *s = owned(fd);
  struct sctp_assoc_value av;
  if (s == NULL) {
    return -1;
  }
  memset(&av, 0, sizeof av);
  /* SCTP_SS_DEFAULT is FreeBSD's wheel of the streams in the order they got
   * data, as Linux's SCTP_SS_RR (net/sctp/stream_sched_rr.c);
   * SCTP_SS_ROUND_ROBIN would sort the wheel by stream number.  usrsctp's
   * own default is the wheel, so first come first served is asked for. */
  av.assoc_value = round_robin ? SCTP_SS_DEFAULT : SCTP_SS_FIRST_COME;
  return usrsctp_setsockopt(s->so, IPPROTO_SCTP, SCTP_PLUGGABLE_SS, &av,
                            (socklen_t)sizeof av);
}

void usx_settings(int fd, struct usx_settings *out) {
  struct usx_sock *s = owned(fd);
  struct sctp_assoc_value av;
  struct sctp_sack_info si;
  socklen_t len;
  out->sndbuf = out->rcvbuf = out->maxseg = out->nodelay = -1;
  out->sack_delay_ms = out->sack_freq = out->path_mtu = -1;
  if (s == NULL) {
    return;
  }
  out->path_mtu = s->path_mtu;
  out->sndbuf = get_int(s->so, SOL_SOCKET, SO_SNDBUF);
  out->rcvbuf = get_int(s->so, SOL_SOCKET, SO_RCVBUF);
  out->nodelay = get_int(s->so, IPPROTO_SCTP, SCTP_NODELAY);
  memset(&av, 0, sizeof av);
  len = (socklen_t)sizeof av;
  if (usrsctp_getsockopt(s->so, IPPROTO_SCTP, SCTP_MAXSEG, &av, &len) == 0) {
    out->maxseg = av.assoc_value;
  }
  memset(&si, 0, sizeof si);
  len = (socklen_t)sizeof si;
  if (usrsctp_getsockopt(s->so, IPPROTO_SCTP, SCTP_DELAYED_SACK, &si, &len) ==
      0) {
    out->sack_delay_ms = si.sack_delay;
    out->sack_freq = si.sack_freq;
  }
}
