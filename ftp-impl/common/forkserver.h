/* forkserver.h - the servers' main loop (ftpd, httpd): listen on TCP and
 * SCTP at once, fork one process per connection (like vsftpd's standalone
 * mode), enforce the connection limits, reap children.  Waits only in
 * poll(), woken by new connections and by signals through a signalfd.
 * A server may serve some connections itself instead, in an event loop of
 * its own that this one polls (struct forkserver_loop: httpd over TCP); they
 * count against the same limits, and one may be handed to a child later. */
#ifndef FTP_FORKSERVER_H
#define FTP_FORKSERVER_H

#include <sys/types.h>

#include "addrparse.h"
#include "transport.h"

enum forkserver_refusal { REFUSE_BUSY, REFUSE_ADDRESS };

/* An event loop in the server's own process. */
struct forkserver_loop {
  /* Take c into the loop (1; c is then the loop's) or not (0: a child). */
  int (*adopt)(struct xp_conn *c, const struct addr *peer);
  int fd;                 /* readable when the loop has work (an epoll fd) */
  int (*wait_ms)(void);   /* until its next deadline; -1: none */
  void (*step)(void);     /* do what is ready and what is due, never wait */
  void (*in_child)(void); /* in a child forked by forkserver_hand_off, or
                             by accept: close what only the loop needs */
};

struct forkserver_conf {
  const char *listen[2]; /* [XP_TCP], [XP_SCTP]: ADDR:PORT or "" */
  int default_port;      /* when a listen address gives none */
  const struct xp_opts *opts;
  int max_clients;   /* concurrent connections */
  int max_per_ip;    /* concurrent connections from one address */
  long max_sessions; /* return after this many ended (0: never) */
  /* In the child, after fork: serve the connection; the child then exits. */
  void (*serve)(struct xp_conn *c, const struct addr *peer);
  /* In the parent: say why, before the connection is closed. */
  void (*refuse)(struct xp_conn *c, const struct addr *peer,
                 enum forkserver_refusal why, int limit);
  /* After the listeners are open, before "ready": e.g. drop privileges. */
  void (*on_listening)(void);
  const struct forkserver_loop *loop; /* NULL: every connection forks */
  /* Serve each connection in this process, one at a time, the listeners
   * unpolled meanwhile: usrsctp's threads and associations do not survive
   * a fork (usx.h). */
  int in_process;
};

/* Prints "listening <proto> ADDR:PORT" per listener, then "ready"; returns
 * on SIGTERM/SIGINT (children told to stop) or after max_sessions.  Dies
 * with a message when a listener cannot be opened. */
void forkserver_run(const struct forkserver_conf *conf);

/* For the loop, while forkserver_run runs. */
/* A connection the loop adopted from peer has ended. */
void forkserver_adopted_ended(const struct addr *peer);
/* Fork a child to take over a connection the loop adopted from peer: 0 in
 * the child (listeners closed, signals as before, loop->in_child called),
 * the child's pid in the server (the connection now counts as the child's),
 * -1 when fork failed. */
pid_t forkserver_hand_off(const struct addr *peer);

#endif
