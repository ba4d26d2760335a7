/* transport.h - the socket layer.  It hides the difference between TCP,
 * SCTP one-to-one sockets (naive) and SCTP with streams (multistream) behind
 * one interface, so the FTP engine in both programs is transport-blind.
 *
 * A connection is a byte or message stream with a stream id:
 *   - TCP: one byte stream, every send/recv is stream 0, never end-of-record.
 *   - SCTP: every xp_send is one SCTP message on the given stream; xp_recv
 *     returns part of one message, its stream id, and whether this part ends
 *     the message (MSG_EOR).
 * Every socket is blocking; sends and receives are bounded by the kernel
 * timeouts SO_SNDTIMEO/SO_RCVTIMEO (opts.io_timeout_s).
 *
 * SCTP runs on the kernel's stack or on usrsctp's (opts.stack; usx.h), the
 * same calls for both.  A usrsctp socket's descriptor is one the programs
 * can poll for reading; for room to send they call xp_wait_writable. */
#ifndef FTP_TRANSPORT_H
#define FTP_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "addrparse.h"
#include "usxsysctl.h"

enum xp_proto { XP_TCP = 0, XP_SCTP = 1 };
/* Whose SCTP: the kernel's, or usrsctp's (FreeBSD's SCTP in user space,
 * over UDP encapsulation).  TCP is always the kernel's. */
enum xp_stack { XP_STACK_KERNEL = 0, XP_STACK_USRSCTP = 1 };

/* SCTP multihoming: at most this many further addresses of each end. */
#define XP_MAX_ALSO 4

struct xp_addrs {
  struct addr a[XP_MAX_ALSO];
  int n;
};

struct xp_opts {
  int nodelay;       /* TCP_NODELAY / SCTP_NODELAY */
  int streams;       /* SCTP_INITMSG streams each way; 0: kernel default */
  int sack_delay_ms; /* SCTP_DELAYED_SACK delay; <0: leave */
  int sack_freq;     /* SCTP_DELAYED_SACK frequency; <0: leave */
  int rto_min_ms;    /* SCTP_RTOINFO; <0: leave */
  int rto_initial_ms;
  int rto_max_ms;
  int sndbuf;       /* SO_SNDBUF; 0: leave */
  int rcvbuf;       /* SO_RCVBUF; 0: leave */
  int maxseg;       /* TCP_MAXSEG / SCTP_MAXSEG (pre-connect); 0: leave */
  int io_timeout_s; /* SO_SNDTIMEO and SO_RCVTIMEO; 0: none */
  /* SCTP only: further local addresses every socket binds beside its own
   * (sctp_bindx), which the handshake announces to the peer... */
  struct xp_addrs also_bind;
  /* ...and further addresses of the peer a connect names beside the one it
   * is given (sctp_connectx), so that the handshake itself can go to them
   * when that one does not answer. */
  struct xp_addrs also_peer;
  enum xp_stack stack; /* SCTP's stack */
  int udp_port;        /* usrsctp: this process's UDP port; 0: 9899 */
  int peer_udp_port;   /* usrsctp: the peer's UDP port; 0: the one it
                          speaks from (9899 for a connect) */
  struct usx_sysctl_set usx_sysctls; /* usrsctp's, set when it starts */
};

struct xp_conn {
  int fd;
  enum xp_proto proto;
};

void xp_opts_default(struct xp_opts *o);
const char *xp_proto_name(enum xp_proto p);

/* Listening socket bound to a (port 0: any free port).  -1 on error. */
int xp_listen(enum xp_proto p, const struct addr *a, const struct xp_opts *o,
              int backlog);
/* Accept one connection (options applied to the new socket, the buffer sizes
 * again too).  -1 on error. */
int xp_accept(int lfd, enum xp_proto p, const struct xp_opts *o,
              struct xp_conn *out, struct addr *peer);
/* Begin a connect to dst without waiting: *out holds the socket, its
 * handshake under way (several may then proceed at once). */
int xp_connect_start(enum xp_proto p, const struct addr *dst,
                     const struct addr *src, const struct xp_opts *o,
                     struct xp_conn *out);
/* Wait at most timeout_ms for a started connect to complete; the socket is
 * blocking again.  On failure it is closed (fd -1) and -1 returned. */
int xp_connect_finish(struct xp_conn *c, int timeout_ms);
/* Connect to dst, optionally bound to src (port 0), within timeout_ms. */
int xp_connect(enum xp_proto p, const struct addr *dst, const struct addr *src,
               const struct xp_opts *o, int timeout_ms, struct xp_conn *out);

/* Send all n bytes on stream sid (one SCTP message).  -1 on error. */
int xp_send(const struct xp_conn *c, const void *p, size_t n, unsigned sid);
/* xp_send; more != 0 says more bytes follow at once, so TCP may hold these
 * back to fill a segment (MSG_MORE: the next send without it, or xp_cork
 * off, pushes them).  SCTP ignores it. */
int xp_send_more(const struct xp_conn *c, const void *p, size_t n, unsigned sid,
                 int more);
/* Send without waiting: bytes taken (TCP: possibly fewer than n; SCTP: n, one
 * message), or -1 with errno EAGAIN when the send buffer has no room. */
ssize_t xp_send_nowait(const struct xp_conn *c, const void *p, size_t n,
                       unsigned sid);
/* Send count bytes read from file fd on stream sid, in messages of at most
 * chunk bytes (TCP uses sendfile).  Returns bytes sent; < count on error. */
uint64_t xp_send_file(const struct xp_conn *c, int fd, uint64_t count,
                      unsigned sid, size_t chunk);
/* Receive up to n bytes: > 0 bytes, 0 orderly end, -1 error (errno). */
ssize_t xp_recv(const struct xp_conn *c, void *p, size_t n, unsigned *sid,
                int *eor);
/* The same without waiting: -1 with errno EAGAIN when nothing is queued. */
ssize_t xp_recv_nowait(const struct xp_conn *c, void *p, size_t n,
                       unsigned *sid, int *eor);
/* Read and drop what is queued, without waiting: 1 when the peer's end or
 * an error came, 0 when nothing more is queued now (a lingering close). */
int xp_drop_queued(const struct xp_conn *c);
/* The name of c's stack: "kernel" or "usrsctp". */
const char *xp_stack_name(const struct xp_conn *c);
/* Streams negotiated on an SCTP association (TCP: 1 and 1). */
int xp_streams(const struct xp_conn *c, unsigned *in, unsigned *out);
/* SCTP: send the queued messages of different streams in turn (1: a
 * round-robin stream scheduler) or first come, first served (0: the
 * kernel's default, asked of usrsctp, whose default is the round).  TCP:
 * nothing. */
int xp_stream_scheduler(const struct xp_conn *c, int round_robin);
/* TCP: hold partial segments until uncorked (TCP_CORK), so that what is
 * sent in several calls leaves in full segments.  SCTP: nothing. */
int xp_cork(const struct xp_conn *c, int on);
/* TCP: acknowledge at once what has arrived and leave the interactive
 * (pingpong) mode of delayed ACKs (TCP_QUICKACK; Linux clears it again, so
 * call it after every read).  SCTP: nothing (see SCTP_DELAYED_SACK). */
int xp_quickack(const struct xp_conn *c);
/* Wait at most timeout_ms for room to send (POLLOUT): 1 room or an error
 * to read, 0 timeout, -1 failed. */
int xp_wait_writable(const struct xp_conn *c, int timeout_ms);
/* Is anything readable now - bytes, the peer's end, an error?  1 yes, 0 the
 * connection is quiet, -1 poll failed.  Never waits. */
int xp_readable_now(const struct xp_conn *c);
/* The socket's pending error (SO_ERROR, cleared by reading it); 0: none. */
int xp_error(const struct xp_conn *c);
/* No more sends (TCP FIN / SCTP SHUTDOWN). */
int xp_shutdown_write(const struct xp_conn *c);
void xp_close(struct xp_conn *c);
/* The UDP port the peer's SCTP speaks from (usrsctp's, RFC 6951); 0 for a
 * connection not inside UDP as far as this end knows (the kernel's). */
int xp_peer_udp_port(const struct xp_conn *c);
/* Close a listening socket (xp_listen's descriptor); -1 is ignored. */
void xp_close_listener(int lfd);
/* Close with a reset (TCP RST / SCTP ABORT). */
void xp_abort(struct xp_conn *c);
/* Close after everything sent has been acknowledged, the data and the end
 * (TCP: our FIN; SCTP: the SHUTDOWN), waiting at most `seconds`: a lingering
 * close. 0 if delivery was confirmed in time, -1 if the limit ran out. */
int xp_close_delivered(struct xp_conn *c, int seconds);

int xp_local_addr(const struct xp_conn *c, struct addr *a);
int xp_peer_addr(const struct xp_conn *c, struct addr *a);
/* Is a's host the peer's (TCP), or one of the peer's addresses in the
 * association (SCTP: a multihomed peer's association may have come up over
 * any of them)?  1 yes, 0 no or unknown. */
int xp_peer_has(const struct xp_conn *c, const struct addr *a);

#endif
