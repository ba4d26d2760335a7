/* httpserve.h - one HTTP connection of httpd, from its first byte to its
 * close: requests parsed and answered in order (TCP: pipelined on the one
 * byte stream; SCTP: each stream its own sequence of requests, each answer
 * on the stream its request came on). */
#ifndef FTP_HTTPSERVE_H
#define FTP_HTTPSERVE_H

#include "transport.h"

/* Serve c until the peer closes, a limit ends it or it fails; closes c. */
void http_serve(struct xp_conn *c, const char *peer);

#endif
