/* httpreply.h - what httpd writes: response heads and bodies, on one TCP
 * connection or on one SCTP stream (every write an SCTP message there). */
#ifndef FTP_HTTPREPLY_H
#define FTP_HTTPREPLY_H

#include <stddef.h>
#include <stdint.h>

#include "str.h"
#include "transport.h"

struct http_reply {
  const struct xp_conn *c;
  unsigned sid;        /* SCTP stream (TCP: 0) */
  size_t write_size;   /* bytes per write; the head rides in the first */
  int head_only;       /* HEAD: the head of what GET would send */
  int keep_alive;      /* 0: "Connection: close" */
  int more;            /* another answer follows at once: TCP may hold the
                          last bytes back to share a segment with it */
  struct buf *collect; /* not NULL: the answer is appended here, not sent
                          (http_reply_collectable says which can be) */
  const char *body;    /* a small file's bytes already in memory (NULL: read
                          them from its descriptor) */
};

/* Up to this size a file goes out with its head in one send (TCP, whole
 * answers). */
#define HTTP_REPLY_SMALL_FILE 16384

/* 200 with a file's bytes: size bytes from its start, wherever fd's offset
 * is.  0 sent, -1 the connection failed (or the file shrank: the answer is
 * cut short). */
int http_reply_file(const struct http_reply *r, int fd, uint64_t size,
                    const char *content_type);
/* Whether the 200 answer for a file of this size can go to r->collect:
 * whole answers (write_size 0) over TCP of a small file or a HEAD; every
 * error answer can. */
int http_reply_collectable(const struct http_reply *r, uint64_t size);
/* An error status with a short HTML body (405 adds Allow: GET, HEAD). */
int http_reply_error(const struct http_reply *r, int status);
/* 301 to location (a request target, at most HTTP_TARGET_CAP + 1 bytes),
 * with the same short body. */
int http_reply_redirect(const struct http_reply *r, const char *location);
/* The media type for a file name, from its extension. */
const char *http_content_type(const char *name);

#endif
