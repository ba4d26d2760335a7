/* usx.h - SCTP over usrsctp (FreeBSD's SCTP in user space) behind the
 * transport's calls (transport.h), for `--sctp-stack usrsctp`.
 *
 * usrsctp reaches the wire over UDP encapsulation (RFC 6951): it sends from
 * this process's UDP port (xp_opts.udp_port) to the peer's
 * (xp_opts.peer_udp_port); raw IP would meet the kernel's own SCTP, which
 * aborts associations it does not know.  Each usrsctp socket is known by a
 * file descriptor of its own, an eventfd that is readable whenever the
 * socket is (data, the peer's end, a connection to accept, an error), so the
 * programs' poll() loops wait on it as on a kernel socket.  Room to send is
 * waited for with usx_wait_writable (a kernel socket's POLLOUT): once a
 * send was refused, until its message fits in the send buffer.
 *
 * Each call is the transport.h call of the same name for a descriptor that
 * usx_is() owns, with the same return values and errno. */
#ifndef FTP_USX_H
#define FTP_USX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "addrparse.h"

/* transport.h's: it includes this header, not the other way round */
struct xp_opts;

/* The UDP port usrsctp speaks on when the options name none (RFC 6951's
 * registered port). */
#define USX_DEFAULT_UDP_PORT 9899

/* The wakeups usrsctp's upcall did not give and a watch gave instead
 * (usxsock.c: usrsctp 0.9.5.0 misses some), since the process started. */
unsigned long usx_watch_wakeups(void);

/* The UDP port usrsctp speaks on for the options o: theirs, or the
 * default. */
int usx_udp_port(const struct xp_opts *o);

/* Is fd one of usrsctp's sockets? */
int usx_is(int fd);

int usx_listen(const struct addr *a, const struct xp_opts *o, int backlog);
int usx_accept(int lfd, const struct xp_opts *o, struct addr *peer);
int usx_connect(const struct addr *dst, const struct addr *src,
                const struct xp_opts *o, int timeout_ms);

ssize_t usx_send(int fd, const void *p, size_t n, unsigned sid, int wait);
ssize_t usx_recv(int fd, void *p, size_t n, unsigned *sid, int *eor, int wait);
/* 1 when a send may find room (or the socket failed), 0 after timeout_ms. */
int usx_wait_writable(int fd, int timeout_ms);
int usx_error(int fd);
/* The peer's UDP port, the association's (learned from its packets when it
 * was accepted); 0 if usrsctp does not say. */
int usx_peer_udp_port(int fd);
int usx_shutdown_write(int fd);
/* Begin the association's end unless the peer has (or answer the peer's),
 * wait at most `seconds` for it to complete (SHUTDOWN COMPLETE: every byte
 * acknowledged), then close.  0 if it came. */
int usx_close_delivered(int fd, int seconds);
void usx_close(int fd);
void usx_abort(int fd);
int usx_local_addr(int fd, struct addr *a);
int usx_peer_addr(int fd, struct addr *a);
int usx_streams(int fd, unsigned *in, unsigned *out);
/* Queued messages of different streams sent in turn (1) or first come first
 * served (0). */
int usx_stream_scheduler(int fd, int round_robin);

/* An association's state, in RFC 4960's names. */
enum usx_state {
  USX_CLOSED,
  USX_COOKIE_WAIT,
  USX_COOKIE_ECHOED,
  USX_ESTABLISHED,
  USX_SHUTDOWN_PENDING,
  USX_SHUTDOWN_SENT,
  USX_SHUTDOWN_RECEIVED,
  USX_SHUTDOWN_ACK_SENT
};

/* SCTP_STATUS as usrsctp reports it; its primary path's srtt and rto in
 * milliseconds. */
struct usx_status {
  enum usx_state state;
  int64_t cwnd, srtt_ms, rto_ms, mtu, unacked, pending, peer_rwnd;
  int64_t streams_in, streams_out;
};
int usx_status(int fd, struct usx_status *st);

/* The settings usrsctp holds for the socket, read back (-1: unknown), and
 * the path MTU it was told (-1: usrsctp's own, 1500 less UDP's header). */
struct usx_settings {
  int64_t sndbuf, rcvbuf, maxseg, nodelay, sack_delay_ms, sack_freq;
  int64_t path_mtu;
};
void usx_settings(int fd, struct usx_settings *s);

#endif
