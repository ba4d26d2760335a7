/* usxsock.h - the usrsctp sockets a process holds (usx.h): each one's
 * usrsctp socket, the two eventfds its waits use, and when they are
 * signalled.  Shared by usxsock.c (the sockets' life) and usxio.c (what
 * moves through them); nothing else includes it.
 *
 * The eventfds are signalled from usrsctp's own threads (its upcall) and
 * only when armed: `fd` once the program has found nothing left to read,
 * `wfd` once a send found no room or a connect is under way.
 * Arming comes before the look that found nothing, so an event between the
 * two is never lost; a stale signal only costs one more look. */
#ifndef FTP_USXSOCK_H
#define FTP_USXSOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <usrsctp.h>

#include "transport.h"

struct usx_sock {
  int fd;  /* eventfd: readable while the socket is; -1: the slot is free */
  int wfd; /* eventfd: a send may find room, or a connect completed */
  struct socket *so;
  pthread_mutex_t lock; /* held by a signal and by the slot's release */
  int dead;             /* released: usrsctp's threads signal nothing more */
  int ending; /* closed by the program, held until its association ends */
  atomic_int read_armed, write_armed, connecting;
  atomic_int shutdown_complete; /* SCTP_SHUTDOWN_COMP came */
  atomic_int peer_shutdown;     /* SCTP_SHUTDOWN_EVENT came: no more data */
  /* a refused send waits until this many bytes of the send buffer are free */
  atomic_int wake_free;
  atomic_int refused; /* the last send found no room */
  int io_timeout_ms;  /* blocking sends and receives; 0: none */
  int path_mtu;       /* the MTU it was told (usxmtu.h); -1: usrsctp's own */
};

/* The socket that owns fd, or NULL (errno untouched). */
struct usx_sock *usx_find(int fd);
/* Signal one of the slot's eventfds, unless the slot was released. */
void usx_signal(struct usx_sock *s, int which_fd);
/* Empty one of the slot's eventfds (what was signalled has been seen). */
void usx_drain(int efd);
/* Nothing left to read: empty fd, arm it, and look again. */
void usx_rearm_read(struct usx_sock *s);
/* The association's end, begun here or the peer's answered: 0, or -1 when
 * usrsctp refused (a listener, an association already gone; usxio.c). */
int usx_begin_end(struct usx_sock *s);
/* Until the association has ended (1) or deadline, a sys_mono_ms() time,
 * has come (0); a deadline of now only reads what has come (usxio.c). */
int usx_await_end(struct usx_sock *s, int64_t deadline);
/* Wait at most timeout_ms (< 0: no limit) for efd; 1, 0 or -1 as poll. */
int usx_wait_efd(int efd, int timeout_ms);

#endif
