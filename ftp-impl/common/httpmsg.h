/* httpmsg.h - HTTP/1.x message heads: the server's request parser, the
 * client's response parser and the request target's decoding.  Pure
 * functions over bytes, no I/O, every size bounded by the caller's limits
 * (the fuzz target fuzz_httpmsg drives them directly). */
#ifndef FTP_HTTPMSG_H
#define FTP_HTTPMSG_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_METHOD_MAX 15
#define HTTP_TARGET_CAP 4096

struct http_limits {
  size_t max_head;      /* request line and headers, CRLFs included: 431 */
  size_t max_target;    /* request target: 414 (at most HTTP_TARGET_CAP) */
  unsigned max_headers; /* header fields: 431 */
};

struct http_request {
  char method[HTTP_METHOD_MAX + 1];
  char target[HTTP_TARGET_CAP + 1];
  int minor;      /* HTTP/1.minor */
  int keep_alive; /* persistent: 1.1 unless "close", 1.0 only if asked */
  int has_host;
  int has_body;    /* Content-Length > 0 or any Transfer-Encoding */
  size_t head_len; /* bytes the head took, its final CRLFCRLF included */
};

/* Parse one request head at the start of p[0..n).  1: parsed (req filled);
 * 0: incomplete, read more (n is still within the limits); -1: refused,
 * *status says how (400, 414, 431, 505). */
int http_parse_request(const char *p, size_t n, const struct http_limits *lim,
                       struct http_request *req, int *status);

/* The path a request target names: origin form only ("/a/b?q" -> "/a/b"),
 * percent-decoded; -1 for anything else (absolute form, a decoded NUL or
 * control byte, a bad escape, too long). */
int http_target_path(const char *target, char *out, size_t cap);

struct http_response_head {
  int status;
  int minor;
  int64_t content_length; /* -1: none given */
  int close; /* "Connection: close", or HTTP/1.0 without keep-alive */
  int chunked;
  size_t head_len;
};

/* Parse one response head at the start of p[0..n), at most max_head bytes.
 * 1 parsed, 0 incomplete, -1 malformed (why: a static description). */
int http_parse_response(const char *p, size_t n, size_t max_head,
                        struct http_response_head *h, const char **why);

/* The reason phrase of a status code ("Not Found"; "" if unknown). */
const char *http_reason(int status);

#endif
