/* httpget.h - httpc's fetching engine: a page over one connection, the
 * document first, then its objects (TCP: requests pipelined, answers in
 * order on the byte stream; SCTP: each request on the first free stream,
 * its answer read from that stream whatever the others are doing). */
#ifndef FTP_HTTPGET_H
#define FTP_HTTPGET_H

#include "httpcopts.h"

/* 0: every object 200 and whole; 1 otherwise (an error event says why). */
int http_get_page(const struct httpc_opts *o);

#endif
