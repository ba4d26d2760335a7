/* httploop.h - httpd's event loop: the TCP connections of a server whose
 * answers are whole (--write-size 0) are served in the server's own process,
 * a turn at a time (httpserve), so that a keep-alive request costs no
 * process switch; a connection that asks for a large file is handed to a
 * child of its own.  SCTP associations and 1 KB writes fork as before. */
#ifndef FTP_HTTPLOOP_H
#define FTP_HTTPLOOP_H

#include "forkserver.h"

/* The loop for forkserver_conf.loop, for at most max_clients connections;
 * dies when the kernel gives no epoll instance. */
const struct forkserver_loop *httploop_new(int max_clients);

#endif
