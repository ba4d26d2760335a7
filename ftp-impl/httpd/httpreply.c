/* httpreply.c - response heads and bodies (see httpreply.h). */
#include "httpreply.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "httpmsg.h"
#include "httpsend.h"
#include "str.h"
#include "sysutil.h"

#define HEAD_CAP 512
#define LARGE_WRITE 65536
/* An answer without a file: its head, a Location, its short body. */
#define SHORT_CAP (HEAD_CAP + HTTP_TARGET_CAP + 256)

/* extra: header lines of this answer's own ("" none), each ending in CRLF. */
static int format_head(char *dst, size_t cap, int status, uint64_t length,
                       const char *type, int keep_alive, const char *extra) {
  return str_fmt(dst, cap,
                 "HTTP/1.1 %d %s\r\nServer: testbed-httpd\r\n"
                 "Content-Type: %s\r\nContent-Length: %llu\r\n%s"
                 "Connection: %s\r\n\r\n",
                 status, http_reason(status), type, (unsigned long long)length,
                 extra, keep_alive ? "keep-alive" : "close");
}

/* Send, or append to the collected answers. */
static int emit(const struct http_reply *r, const void *p, size_t n, int more) {
  if (r->collect != NULL) {
    if (buf_append(r->collect, p, n) != 0) {
      errno = ENOBUFS;
      return -1;
    }
    return 0;
  }
  return http_send(r->c, p, n, r->sid, more);
}

/* The first write carries the head and up to write_size body bytes, each
 * later one write_size bytes: the published server's 1 KB writes. */
static int send_body(const struct http_reply *r, char *buf, size_t have, int fd,
                     uint64_t left) {
  for (;;) {
    size_t room = r->write_size + HEAD_CAP - have;
    size_t want = left < (uint64_t)r->write_size ? (size_t)left : r->write_size;
    ssize_t got = 0;
    if (want > room) {
      want = room;
    }
    if (want > 0) {
      got = sys_read(fd, buf + have, want);
      if (got <= 0) {
        return -1;
      }
    }
    have += (size_t)got;
    left -= (uint64_t)got;
    if (have > 0 && http_send(r->c, buf, have, r->sid, r->more) != 0) {
      return -1;
    }
    if (left == 0) {
      return 0;
    }
    have = 0;
  }
}

/* Read the first n bytes of fd into dst; -1 when it is shorter. */
static int read_head_of(int fd, char *dst, size_t n) {
  off_t at = 0;
  while (n > 0) {
    ssize_t got = sys_pread(fd, dst, n, at);
    if (got <= 0) {
      if (got == 0) {
        errno = ENODATA; /* the file is shorter than announced */
      }
      return -1;
    }
    dst += got;
    at += got;
    n -= (size_t)got;
  }
  return 0;
}

/* A small file over TCP: head and body in one send, one segment when they
 * fit. */
static int send_small(const struct http_reply *r, int fd, uint64_t body,
                      const char *content_type, uint64_t size) {
  char buf[HEAD_CAP + HTTP_REPLY_SMALL_FILE];
  size_t head;
  if (format_head(buf, HEAD_CAP, 200, size, content_type, r->keep_alive, "") !=
      0) {
    return -1;
  }
  head = strlen(buf);
  if (r->body != NULL) {
    memcpy(buf + head, r->body, (size_t)body);
  } else if (read_head_of(fd, buf + head, (size_t)body) != 0) {
    return -1;
  }
  return emit(r, buf, head + (size_t)body, r->more);
}

/* write_size 0, all but a small file over TCP (send_small): TCP holds the
 * head back (MSG_MORE) so that it shares sendfile's first segment; SCTP sends
 * the head, then messages of LARGE_WRITE bytes. */
static int send_whole(const struct http_reply *r, int fd, uint64_t size,
                      const char *content_type) {
  char head[HEAD_CAP];
  uint64_t body = r->head_only ? 0 : size;
  if (format_head(head, sizeof head, 200, size, content_type, r->keep_alive,
                  "") != 0) {
    return -1;
  }
  if (http_send(r->c, head, strlen(head), r->sid, 1) != 0) {
    return -1;
  }
  return http_send_file(r->c, fd, body, r->sid, LARGE_WRITE);
}

int http_reply_collectable(const struct http_reply *r, uint64_t size) {
  return r->write_size == 0 && r->c->proto == XP_TCP &&
         (r->head_only || size <= HTTP_REPLY_SMALL_FILE);
}

int http_reply_file(const struct http_reply *r, int fd, uint64_t size,
                    const char *content_type) {
  char *buf;
  int rc;
  if (http_reply_collectable(r, size)) {
    return send_small(r, fd, r->head_only ? 0 : size, content_type, size);
  }
  if (r->collect != NULL) {
    errno = EINVAL; /* only a whole small answer can be collected */
    return -1;
  }
  /* the rest reads fd from where it stands: a kept descriptor has moved */
  if (sys_lseek(fd, 0) != 0) {
    return -1;
  }
  if (r->write_size == 0) {
    return send_whole(r, fd, size, content_type);
  }
  buf = sys_malloc(r->write_size + HEAD_CAP);
  if (format_head(buf, HEAD_CAP, 200, size, content_type, r->keep_alive, "") !=
      0) {
    free(buf);
    return -1;
  }
  rc = send_body(r, buf, strlen(buf), fd, r->head_only ? 0 : size);
  free(buf);
  return rc;
}

/* An answer whose body is a short HTML page saying its status. */
static int send_short(const struct http_reply *r, int status,
                      const char *extra) {
  char head[SHORT_CAP], body[256];
  (void)str_fmt(body, sizeof body,
                "<!DOCTYPE html><title>%d %s</title><h1>%d %s</h1>\n", status,
                http_reason(status), status, http_reason(status));
  if (format_head(head, sizeof head, status, strlen(body), "text/html",
                  r->keep_alive, extra) != 0 ||
      (!r->head_only && str_append(head, sizeof head, body) != 0)) {
    errno = EOVERFLOW;
    return -1;
  }
  return emit(r, head, strlen(head), r->more);
}

int http_reply_error(const struct http_reply *r, int status) {
  return send_short(r, status, status == 405 ? "Allow: GET, HEAD\r\n" : "");
}

int http_reply_redirect(const struct http_reply *r, const char *location) {
  char extra[HTTP_TARGET_CAP + 32];
  if (str_fmt(extra, sizeof extra, "Location: %s\r\n", location) != 0) {
    errno = EOVERFLOW;
    return -1;
  }
  return send_short(r, 301, extra);
}

const char *http_content_type(const char *name) {
  static const char *const types[][2] = {
      {".html", "text/html"},       {".htm", "text/html"},
      {".txt", "text/plain"},       {".css", "text/css"},
      {".js", "text/javascript"},   {".png", "image/png"},
      {".jpg", "image/jpeg"},       {".gif", "image/gif"},
      {".json", "application/json"}};
  const char *dot = strrchr(name, '.');
  size_t i;
  if (dot != NULL && strchr(dot, '/') == NULL) {
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
      if (str_eq_nocase(dot, types[i][0])) {
        return types[i][1];
      }
    }
  }
  return "application/octet-stream";
}
