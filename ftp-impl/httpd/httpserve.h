/* httpserve.h - one HTTP connection of httpd, from its first byte to its
 * close: requests parsed and answered in order (TCP: pipelined on the one
 * byte stream; SCTP: each stream its own sequence of requests, each answer
 * on the stream its request came on). */
#ifndef FTP_HTTPSERVE_H
#define FTP_HTTPSERVE_H

#include "transport.h"

/* Serve c until the peer closes, a limit ends it or it fails; closes c. */
void http_serve(struct xp_conn *c, const char *peer);

/* The same, a turn at a time, for an event loop (httploop) that serves many
 * TCP connections in one process: nothing waits.  Answers are collected and
 * sent as the socket takes them; a request whose answer cannot be collected
 * (http_reply_collectable: a file larger than 16 KB, 1 KB writes) hands the
 * connection off to a process of its own, which goes on from that request
 * (http_conn_continue). */
struct http_conn;

/* What the connection waits for next. */
enum http_wait {
  HTTP_WAIT_READ,   /* a request */
  HTTP_WAIT_WRITE,  /* room to send the collected answers */
  HTTP_WAIT_LINGER, /* the peer's end after ours (read and dropped) */
  HTTP_WAIT_NONE,   /* nothing: it is over, http_conn_free it */
  HTTP_HAND_OFF     /* a process of its own: fork, http_conn_continue */
};

struct http_conn *http_conn_new(struct xp_conn *c, const char *peer);
enum http_wait http_conn_readable(struct http_conn *k);
enum http_wait http_conn_writable(struct http_conn *k);
/* When its current wait runs out (sys_mono_ms time). */
int64_t http_conn_deadline(const struct http_conn *k);
enum http_wait http_conn_expired(struct http_conn *k);
int http_conn_fd(const struct http_conn *k);
/* In the process it was handed to: serve it to its end, then exit. */
__attribute__((noreturn)) void http_conn_continue(struct http_conn *k);
/* Close the loop's descriptor and forget k; ended: the connection is over
 * (logged as such), not handed off. */
void http_conn_free(struct http_conn *k, int ended);

#endif
