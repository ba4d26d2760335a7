/* usxsock.c - the life of a usrsctp socket (usx.h): usrsctp's start, a
 * socket's options, listen, accept, connect and close, and the signals from
 * usrsctp's threads that wake the program's waits (usxsock.h). */
#define _GNU_SOURCE
#include "usxsock.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sysutil.h"
#include "usx.h"
#include "usxmtu.h"
#include "usxsysctl.h"

/* A process holds few SCTP sockets (bulkflow: one and its listener). */
#define USX_MAX_SOCKETS 16

static struct usx_sock slots[USX_MAX_SOCKETS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static int slots_ready;
static int started_port; /* the UDP port usrsctp was started on; 0: not yet */
static atomic_ulong watch_wakeups;

static void make_room(void);
static void end_all_at_exit(void);

static void slots_init_locked(void) {
  size_t i;
  if (slots_ready) {
    return;
  }
  for (i = 0; i < USX_MAX_SOCKETS; i++) {
    slots[i].fd = slots[i].wfd = -1;
    (void)pthread_mutex_init(&slots[i].lock, NULL);
  }
  slots_ready = 1;
}

struct usx_sock *usx_find(int fd) {
  size_t i;
  if (fd >= 0 && slots_ready) {
    for (i = 0; i < USX_MAX_SOCKETS; i++) {
      if (slots[i].fd == fd && !slots[i].ending) {
        return &slots[i];
      }
    }
  }
  return NULL; /* errno untouched: the transport asks this of every socket */
}

int usx_is(int fd) { return usx_find(fd) != NULL; }

static void signal_locked(struct usx_sock *s, int which_fd) {
  uint64_t one = 1;
  if (!s->dead && which_fd >= 0) {
    /* an eventfd takes 8 bytes or fails only when its counter is full,
     * which is signalled already */
    (void)!write(which_fd, &one, sizeof one);
  }
}

void usx_signal(struct usx_sock *s, int which_fd) {
  (void)pthread_mutex_lock(&s->lock);
  signal_locked(s, which_fd);
  (void)pthread_mutex_unlock(&s->lock);
}

void usx_drain(int efd) {
  uint64_t count;
  (void)!read(efd, &count, sizeof count); /* EAGAIN: it was empty */
}

void usx_rearm_read(struct usx_sock *s) {
  int ev;
  usx_drain(s->fd);
  atomic_store(&s->read_armed, 1);
  ev = usrsctp_get_events(s->so);
  if (ev > 0 && (ev & (SCTP_EVENT_READ | SCTP_EVENT_ERROR)) != 0 &&
      atomic_exchange(&s->read_armed, 0)) {
    usx_signal(s, s->fd);
  }
}

int usx_wait_efd(int efd, int timeout_ms) {
  return sys_wait_fd(efd, POLLIN, timeout_ms);
}

/* usrsctp.h leaves out the read-only option that tells how much of the send
 * buffer is in use (FreeBSD's sctp.h SCTP_GET_SNDBUF_USE, sctp_uio.h's struct
 * sctp_sockstat; usrsctp 0.9.5.0's sctp_usrreq.c answers it with the
 * association's total_output_queue_size: every byte sent and not yet acked
 * or still queued unsent, the figure its sctp_lower_sosend sets against
 * SO_SNDBUF to refuse a send). */
#define USX_GET_SNDBUF_USE 0x00001101
struct usx_sockstat {
  sctp_assoc_t ss_assoc_id;
  uint32_t ss_total_sndbuf;
  uint32_t ss_total_recv_buf;
};

/* Room for the refused message: usrsctp calls a socket writable once 2 KB
 * of its send buffer are free (its low-water mark, which it does not let be
 * set), so the send that was refused waits until its own bytes fit in
 * SO_SNDBUF (never for more than the whole buffer).  (A count of chunks will
 * not do: SCTP_STATUS's sstat_unackdata counts only chunks sent, none of
 * those still queued, so a send refused while the window held data back
 * slept until the association had drained.)  Unknown: room. */
static int room_for_refused(struct usx_sock *s, struct socket *so) {
  struct usx_sockstat ss;
  socklen_t len = (socklen_t)sizeof ss;
  int limit = 0;
  socklen_t ilen = (socklen_t)sizeof limit;
  int64_t need = atomic_load(&s->wake_free);
  memset(&ss, 0, sizeof ss);
  if (usrsctp_getsockopt(so, SOL_SOCKET, SO_SNDBUF, &limit, &ilen) != 0 ||
      usrsctp_getsockopt(so, IPPROTO_SCTP, USX_GET_SNDBUF_USE, &ss, &len) !=
          0) {
    return 1;
  }
  if (need > limit) {
    need = limit;
  }
  return (int64_t)limit - (int64_t)ss.ss_total_sndbuf >= need;
}

/* Which of the slot's armed waits the socket's state ends: bit 0 the
 * read, bit 1 the write; each one so ended is disarmed. */
static int due(struct usx_sock *s, struct socket *so) {
  int ev = usrsctp_get_events(so), out = 0;
  if (ev <= 0) {
    return 0;
  }
  if ((ev & (SCTP_EVENT_READ | SCTP_EVENT_ERROR)) != 0 &&
      atomic_exchange(&s->read_armed, 0)) {
    out |= 1;
  }
  if (atomic_load(&s->write_armed) &&
      ((ev & SCTP_EVENT_ERROR) != 0 ||
       ((ev & SCTP_EVENT_WRITE) != 0 &&
        (atomic_load(&s->connecting) || room_for_refused(s, so)))) &&
      atomic_exchange(&s->write_armed, 0)) {
    out |= 2;
  }
  return out;
}

/* usrsctp's upcall, from its threads after a packet or a failure. */
static void upcall(struct socket *so, void *arg, int flags) {
  struct usx_sock *s = arg;
  int d = due(s, so);
  (void)flags;
  if ((d & 1) != 0) {
    usx_signal(s, s->fd);
  }
  if ((d & 2) != 0) {
    usx_signal(s, s->wfd);
  }
}

/* usrsctp 0.9.5.0 does not call the upcall after every change that makes
 * a socket readable (a few in a thousand; PROGRAMS.md): a reader missing the
 * association's end waited for good.  The watch looks at every armed socket
 * each WATCH_MS (usrsctp's own timer tick) and wakes what the upcall did
 * not; how often is counted. */
#define WATCH_MS 10

static void watch_slot(struct usx_sock *s) {
  int d;
  (void)pthread_mutex_lock(&s->lock);
  if (!s->dead && s->so != NULL &&
      (atomic_load(&s->read_armed) || atomic_load(&s->write_armed))) {
    d = due(s, s->so);
    if ((d & 1) != 0) {
      signal_locked(s, s->fd);
    }
    if ((d & 2) != 0) {
      signal_locked(s, s->wfd);
    }
    if (d != 0) {
      atomic_fetch_add(&watch_wakeups, 1);
    }
  }
  (void)pthread_mutex_unlock(&s->lock);
}

static void *watch(void *unused) {
  struct timespec tick = {0, WATCH_MS * 1000000L};
  size_t i;
  (void)unused;
  for (;;) {
    (void)nanosleep(&tick, NULL);
    for (i = 0; i < USX_MAX_SOCKETS; i++) {
      watch_slot(&slots[i]);
    }
  }
  return NULL;
}

unsigned long usx_watch_wakeups(void) { return atomic_load(&watch_wakeups); }

int usx_udp_port(const struct xp_opts *o) {
  return o->udp_port > 0 ? o->udp_port : USX_DEFAULT_UDP_PORT;
}

/* usrsctp once per process, on the options' UDP port. */
static int start(const struct xp_opts *o) {
  int port = usx_udp_port(o);
  size_t bad = 0;
  if (started_port == 0) {
    pthread_t t;
    (void)pthread_mutex_lock(&slots_lock);
    slots_init_locked();
    (void)pthread_mutex_unlock(&slots_lock);
    if (pthread_create(&t, NULL, watch, NULL) != 0 || pthread_detach(t) != 0 ||
        atexit(end_all_at_exit) != 0) {
      errno = EAGAIN;
      return -1;
    }
    usrsctp_init((uint16_t)port, NULL, NULL);
    started_port = port;
    if (usx_sysctl_apply(&o->usx_sysctls, &bad) != 0) {
      (void)fprintf(stderr,
                    "usrsctp refused --usrsctp-sysctl %s (a value "
                    "outside its range)\n",
                    usx_sysctl_name(bad));
      return -1;
    }
  }
  if (started_port != port) {
    errno = EINVAL; /* usrsctp speaks on one UDP port per process */
    return -1;
  }
  return 0;
}

static struct usx_sock *claim(void) {
  struct usx_sock *s = NULL;
  size_t i;
  int fd, wfd;
  make_room();
  fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  wfd = fd < 0 ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wfd < 0) {
    sys_close(fd);
    return NULL;
  }
  (void)pthread_mutex_lock(&slots_lock);
  slots_init_locked();
  for (i = 0; i < USX_MAX_SOCKETS && s == NULL; i++) {
    if (slots[i].fd < 0) {
      s = &slots[i];
      (void)pthread_mutex_lock(&s->lock);
      s->fd = fd;
      s->wfd = wfd;
      s->so = NULL;
      s->dead = 0;
      s->ending = 0;
      s->io_timeout_ms = 0;
      s->path_mtu = -1;
      atomic_store(&s->read_armed, 0);
      atomic_store(&s->write_armed, 0);
      atomic_store(&s->connecting, 0);
      atomic_store(&s->wake_free, 0);
      atomic_store(&s->refused, 0);
      (void)pthread_mutex_unlock(&s->lock);
      atomic_store(&s->shutdown_complete, 0);
      atomic_store(&s->peer_shutdown, 0);
    }
  }
  (void)pthread_mutex_unlock(&slots_lock);
  if (s == NULL) {
    sys_close(fd);
    sys_close(wfd);
    errno = EMFILE;
  }
  return s;
}

/* The slot's usrsctp socket, set where the watch sees it. */
static void set_so(struct usx_sock *s, struct socket *so) {
  (void)pthread_mutex_lock(&s->lock);
  s->so = so;
  (void)pthread_mutex_unlock(&s->lock);
}

/* Release a slot: usrsctp's threads and the watch signal it no more, its
 * eventfds close.  Returns its socket, for the caller to close after. */
static struct socket *release(struct usx_sock *s) {
  struct socket *so;
  (void)pthread_mutex_lock(&s->lock);
  s->dead = 1;
  so = s->so;
  s->so = NULL;
  (void)pthread_mutex_unlock(&s->lock);
  sys_close(s->wfd);
  (void)pthread_mutex_lock(&slots_lock);
  sys_close(s->fd);
  s->fd = s->wfd = -1;
  s->ending = 0;
  (void)pthread_mutex_unlock(&slots_lock);
  return so;
}

/* Close every slot whose association has ended by deadline (now: only
 * those that have). */
static void reap_ended(int64_t deadline) {
  size_t i;
  for (i = 0; i < USX_MAX_SOCKETS; i++) {
    struct usx_sock *s = &slots[i];
    if (s->fd >= 0 && s->ending && usx_await_end(s, deadline) == 1) {
      usrsctp_close(release(s));
    }
  }
}

/* A slot for a new socket when every one is taken: an ending one's socket
 * is closed, and usrsctp goes on ending its association unwatched (a close
 * without SO_LINGER is graceful in usrsctp, as in FreeBSD). */
static void make_room(void) {
  size_t i;
  if (!slots_ready) {
    return;
  }
  reap_ended(sys_mono_ms());
  for (i = 0; i < USX_MAX_SOCKETS; i++) {
    if (slots[i].fd < 0) {
      return;
    }
  }
  for (i = 0; i < USX_MAX_SOCKETS; i++) {
    if (slots[i].ending) {
      usrsctp_close(release(&slots[i]));
      return;
    }
  }
}

/* usrsctp's threads go with the program, so the associations it closed
 * end before it does, for at most USX_PEER_END_MS in all (ftpc's control
 * association after the 221: without it, no SHUTDOWN left, the server
 * retransmitted its last reply a second later and the next usrsctp on the
 * port answered ABORT). */
#define USX_PEER_END_MS 5000

static void end_all_at_exit(void) {
  reap_ended(sys_mono_ms() + USX_PEER_END_MS);
}

static int set_int(struct socket *so, int level, int opt, int v) {
  return usrsctp_setsockopt(so, level, opt, &v, (socklen_t)sizeof v);
}

static int set_buffers(struct socket *so, const struct xp_opts *o) {
  if (o->sndbuf > 0 && set_int(so, SOL_SOCKET, SO_SNDBUF, o->sndbuf) != 0) {
    return -1;
  }
  if (o->rcvbuf > 0 && set_int(so, SOL_SOCKET, SO_RCVBUF, o->rcvbuf) != 0) {
    return -1;
  }
  return 0;
}

static int set_sack_and_rto(struct socket *so, const struct xp_opts *o) {
  if (o->sack_delay_ms >= 0 || o->sack_freq >= 0) {
    struct sctp_sack_info si;
    memset(&si, 0, sizeof si);
    si.sack_assoc_id = SCTP_FUTURE_ASSOC;
    si.sack_delay = (uint32_t)(o->sack_delay_ms > 0 ? o->sack_delay_ms : 0);
    si.sack_freq = (uint32_t)(o->sack_freq > 0 ? o->sack_freq : 0);
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_DELAYED_SACK, &si,
                           (socklen_t)sizeof si) != 0) {
      return -1;
    }
  }
  if (o->rto_min_ms >= 0 || o->rto_initial_ms >= 0 || o->rto_max_ms >= 0) {
    struct sctp_rtoinfo ri;
    memset(&ri, 0, sizeof ri);
    ri.srto_assoc_id = SCTP_FUTURE_ASSOC;
    ri.srto_min = (uint32_t)(o->rto_min_ms > 0 ? o->rto_min_ms : 0);
    ri.srto_initial = (uint32_t)(o->rto_initial_ms > 0 ? o->rto_initial_ms : 0);
    ri.srto_max = (uint32_t)(o->rto_max_ms > 0 ? o->rto_max_ms : 0);
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_RTOINFO, &ri,
                           (socklen_t)sizeof ri) != 0) {
      return -1;
    }
  }
  return 0;
}

static int set_streams_and_maxseg(struct socket *so, const struct xp_opts *o) {
  if (o->streams > 0) {
    struct sctp_initmsg im;
    memset(&im, 0, sizeof im);
    im.sinit_num_ostreams = (uint16_t)o->streams;
    im.sinit_max_instreams = (uint16_t)o->streams;
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_INITMSG, &im,
                           (socklen_t)sizeof im) != 0) {
      return -1;
    }
  }
  if (o->maxseg > 0) {
    struct sctp_assoc_value av;
    memset(&av, 0, sizeof av);
    av.assoc_id = SCTP_FUTURE_ASSOC;
    av.assoc_value = (uint32_t)o->maxseg;
    if (usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_MAXSEG, &av,
                           (socklen_t)sizeof av) != 0) {
      return -1;
    }
  }
  return 0;
}

/* The peer's UDP port, for every association of the socket. */
static int set_peer_udp_port(struct socket *so, int port) {
  struct sctp_udpencaps ue;
  memset(&ue, 0, sizeof ue);
  ue.sue_assoc_id = SCTP_FUTURE_ASSOC;
  ue.sue_port = htons((uint16_t)port);
  return usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &ue,
                            (socklen_t)sizeof ue);
}

/* The path's MTU (an IP packet's bytes), fixed: usrsctp's own discovery
 * would start from its 1500 (usxmtu.h).  For every association the socket
 * opens (peer NULL), or for the path to peer of the one it holds.  An MTU
 * left unknown (-1) leaves usrsctp's. */
static int set_path_mtu(struct usx_sock *s, int mtu, int family,
                        const struct addr *peer) {
  struct sctp_paddrparams pp;
  if (mtu <= 0) {
    return 0;
  }
  memset(&pp, 0, sizeof pp);
  pp.spp_assoc_id = SCTP_FUTURE_ASSOC;
  if (peer != NULL && peer->len <= (socklen_t)sizeof pp.spp_address) {
    pp.spp_assoc_id = 0; /* a one-to-one socket's association */
    memcpy(&pp.spp_address, &peer->ss, peer->len);
  }
  pp.spp_flags = SPP_PMTUD_DISABLE;
  pp.spp_pathmtu = (uint32_t)usx_chunk_room(mtu, family);
  if (usrsctp_setsockopt(s->so, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp,
                         (socklen_t)sizeof pp) != 0) {
    return -1;
  }
  s->path_mtu = mtu;
  return 0;
}

/* The association's end is reported, so a lingering close can tell it, and
 * the peer's SHUTDOWN, so a reader can tell its end (usxio.c). */
static int subscribe(struct socket *so, uint16_t type) {
  struct sctp_event ev;
  memset(&ev, 0, sizeof ev);
  ev.se_assoc_id = SCTP_FUTURE_ASSOC;
  ev.se_type = type;
  ev.se_on = 1;
  return usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_EVENT, &ev,
                            (socklen_t)sizeof ev);
}

static int subscribe_assoc_changes(struct socket *so) {
  return subscribe(so, SCTP_ASSOC_CHANGE) != 0 ||
                 subscribe(so, SCTP_SHUTDOWN_EVENT) != 0
             ? -1
             : 0;
}

/* Options of every socket, connected, accepted or listening. */
static int set_conn_opts(struct usx_sock *s, const struct xp_opts *o) {
  s->io_timeout_ms = o->io_timeout_s > 0 ? o->io_timeout_s * 1000 : 0;
  if (usrsctp_set_non_blocking(s->so, 1) != 0 || set_buffers(s->so, o) != 0 ||
      set_int(s->so, IPPROTO_SCTP, SCTP_NODELAY, o->nodelay ? 1 : 0) != 0 ||
      set_int(s->so, IPPROTO_SCTP, SCTP_RECVRCVINFO, 1) != 0 ||
      subscribe_assoc_changes(s->so) != 0 || set_sack_and_rto(s->so, o) != 0) {
    return -1;
  }
  return usrsctp_set_upcall(s->so, upcall, s);
}

/* A new socket in a new slot, its options set before listen or connect. */
static struct usx_sock *open_socket(const struct addr *a,
                                    const struct xp_opts *o, int peer_port) {
  struct usx_sock *s;
  int family = a->ss.ss_family;
  if (o->also_bind.n > 0 || o->also_peer.n > 0) {
    errno = ENOTSUP; /* multihoming stays with the kernel's SCTP for now */
    return NULL;
  }
  if (start(o) != 0 || (s = claim()) == NULL) {
    return NULL;
  }
  set_so(s, usrsctp_socket(family, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0,
                           NULL));
  if (s->so == NULL || set_streams_and_maxseg(s->so, o) != 0 ||
      set_conn_opts(s, o) != 0 ||
      (peer_port > 0 && set_peer_udp_port(s->so, peer_port) != 0)) {
    int e = errno;
    struct socket *so = release(s);
    if (so != NULL) {
      usrsctp_close(so);
    }
    errno = e;
    return NULL;
  }
  return s;
}

static int fail_closed(struct usx_sock *s) {
  int e = errno;
  usrsctp_close(release(s));
  errno = e;
  return -1;
}

int usx_listen(const struct addr *a, const struct xp_opts *o, int backlog) {
  /* unless told, each association answers the port its peer speaks from */
  struct usx_sock *s = open_socket(a, o, o->peer_udp_port);
  if (s == NULL) {
    return -1;
  }
  if (set_path_mtu(s, usx_mtu_of_local(a), a->ss.ss_family, NULL) != 0 ||
      usrsctp_bind(s->so, (struct sockaddr *)(void *)&a->ss, a->len) != 0 ||
      usrsctp_listen(s->so, backlog) != 0) {
    return fail_closed(s);
  }
  usx_rearm_read(s);
  return s->fd;
}

/* One association the listener holds ready, or NULL with errno EAGAIN. */
static struct socket *take_ready(struct usx_sock *l, struct addr *peer) {
  struct socket *so;
  peer->len = sizeof peer->ss;
  so = usrsctp_accept(l->so, (struct sockaddr *)(void *)&peer->ss, &peer->len);
  usx_rearm_read(l); /* more may be ready, or none: look again */
  return so;
}

int usx_accept(int lfd, const struct xp_opts *o, struct addr *peer) {
  struct usx_sock *l = usx_find(lfd), *s;
  struct socket *so;
  if (l == NULL) {
    errno = EBADF;
    return -1;
  }
  so = take_ready(l, peer);
  if (so == NULL) {
    return -1;
  }
  if ((s = claim()) == NULL) {
    usrsctp_close(so);
    return -1;
  }
  set_so(s, so);
  /* the listener's MTU, told to the association: usrsctp 0.9.5.0 gives one
   * it accepts its own 1,500 whatever the listener was told, and this raises
   * the path's but not the fragmentation point, which only ever lowers (its
   * chunks stay 1,444 bytes on a 1,548-byte link: PROGRAMS.md) */
  if (set_conn_opts(s, o) != 0 ||
      set_path_mtu(s, l->path_mtu, peer->ss.ss_family, peer) != 0) {
    return fail_closed(s);
  }
  usx_rearm_read(s);
  return s->fd;
}

/* The handshake's end: writable, or the error that ended it. */
static int wait_connected(struct usx_sock *s, int timeout_ms) {
  int64_t deadline = sys_mono_ms() + timeout_ms;
  for (;;) {
    int ev, err = 0;
    socklen_t len = (socklen_t)sizeof err;
    usx_drain(s->wfd);
    atomic_store(&s->write_armed, 1);
    ev = usrsctp_get_events(s->so);
    if (ev < 0) {
      return -1;
    }
    if ((ev & SCTP_EVENT_ERROR) != 0) {
      if (usrsctp_getsockopt(s->so, SOL_SOCKET, SO_ERROR, &err, &len) == 0) {
        errno = err != 0 ? err : ECONNREFUSED;
      }
      return -1;
    }
    if ((ev & SCTP_EVENT_WRITE) != 0) {
      return 0;
    }
    if (usx_wait_efd(s->wfd, sys_ms_left(deadline)) == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
  }
}

int usx_connect(const struct addr *dst, const struct addr *src,
                const struct xp_opts *o, int timeout_ms) {
  struct usx_sock *s = open_socket(
      dst, o, o->peer_udp_port > 0 ? o->peer_udp_port : USX_DEFAULT_UDP_PORT);
  int rc;
  if (s == NULL) {
    return -1;
  }
  if (set_path_mtu(s, usx_mtu_towards(dst), dst->ss.ss_family, NULL) != 0 ||
      (src != NULL && usrsctp_bind(s->so, (struct sockaddr *)(void *)&src->ss,
                                   src->len) != 0)) {
    return fail_closed(s);
  }
  atomic_store(&s->connecting, 1);
  rc = usrsctp_connect(s->so, (struct sockaddr *)(void *)&dst->ss, dst->len);
  if ((rc != 0 && errno != EINPROGRESS) || wait_connected(s, timeout_ms) != 0) {
    return fail_closed(s);
  }
  atomic_store(&s->connecting, 0);
  usx_rearm_read(s);
  return s->fd;
}

/* The kernel's SCTP ends an association after close() has returned, and
 * so does this one: the close begins the end (or answers the peer's), and
 * the slot stays with the association until its SHUTDOWN COMPLETE, looked
 * for at every close and open and awaited before the program exits.  A
 * client that awaited it in close read the next reply a T2 timeout late
 * whenever a SHUTDOWN COMPLETE was lost (1 s at E1's RTO.min). */
void usx_close(int fd) {
  struct usx_sock *s = usx_find(fd);
  if (s == NULL) {
    return;
  }
  if (usx_begin_end(s) != 0 || usx_await_end(s, sys_mono_ms()) == 1) {
    usrsctp_close(release(s));
  } else {
    s->ending = 1;
  }
  reap_ended(sys_mono_ms());
}

void usx_abort(int fd) {
  struct usx_sock *s = usx_find(fd);
  struct linger lg;
  if (s == NULL) {
    return;
  }
  lg.l_onoff = 1;
  lg.l_linger = 0;
  (void)usrsctp_setsockopt(s->so, SOL_SOCKET, SO_LINGER, &lg,
                           (socklen_t)sizeof lg);
  usrsctp_close(release(s));
}
