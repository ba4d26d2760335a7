/* forkserver.h - the servers' main loop (ftpd, httpd): listen on TCP and
 * SCTP at once, fork one process per connection (like vsftpd's standalone
 * mode), enforce the connection limits, reap children.  Waits only in
 * poll(), woken by new connections and by signals through a signalfd. */
#ifndef FTP_FORKSERVER_H
#define FTP_FORKSERVER_H

#include "addrparse.h"
#include "transport.h"

enum forkserver_refusal { REFUSE_BUSY, REFUSE_ADDRESS };

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
};

/* Prints "listening <proto> ADDR:PORT" per listener, then "ready"; returns
 * on SIGTERM/SIGINT (children told to stop) or after max_sessions.  Dies
 * with a message when a listener cannot be opened. */
void forkserver_run(const struct forkserver_conf *conf);

#endif
