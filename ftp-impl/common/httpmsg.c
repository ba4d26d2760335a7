/* httpmsg.c - HTTP/1.x heads (see httpmsg.h).  Strict where RFC 9112 lets
 * a recipient be: lines end in CRLF only, no obsolete line folding, no NUL
 * or bare CR/LF anywhere in a head, one Content-Length at most. */
#include "httpmsg.h"

#include <string.h>

#include "str.h"

static int is_tchar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z') || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static int is_vchar(unsigned char c) { return c > 0x20 && c < 0x7f; }

/* Offset of the CRLFCRLF that ends a head within p[0..n), or -1. */
static long head_end(const char *p, size_t n) {
  size_t i;
  for (i = 0; i + 3 < n; i++) {
    if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' &&
        p[i + 3] == '\n') {
      return (long)i;
    }
  }
  return -1;
}

/* Every CR is followed by LF and every LF preceded by CR; no NUL. */
static int line_ends_clean(const char *p, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    if (p[i] == '\0') {
      return 0;
    }
    if (p[i] == '\r' && (i + 1 >= n || p[i + 1] != '\n')) {
      return i + 1 >= n; /* a CR at the very end may still get its LF */
    }
    if (p[i] == '\n' && (i == 0 || p[i - 1] != '\r')) {
      return 0;
    }
  }
  return 1;
}

/* "HTTP/1.x": 1 with *minor; 0 another HTTP version (505); -1 malformed. */
static int parse_version(const char *v, size_t n, int *minor) {
  if (n != 8 || memcmp(v, "HTTP/", 5) != 0 || v[6] != '.' || v[5] < '0' ||
      v[5] > '9' || v[7] < '0' || v[7] > '9') {
    return -1;
  }
  if (v[5] != '1') {
    return 0;
  }
  *minor = v[7] - '0';
  return 1;
}

static int refuse(int *status, int code) {
  *status = code;
  return -1;
}

static int parse_request_line(const char *p, size_t n,
                              const struct http_limits *lim,
                              struct http_request *req, int *status) {
  const char *sp1 = memchr(p, ' ', n);
  const char *sp2;
  size_t mlen, tlen;
  int v;
  if (sp1 == NULL) {
    return refuse(status, 400);
  }
  mlen = (size_t)(sp1 - p);
  sp2 = memchr(sp1 + 1, ' ', n - mlen - 1);
  if (sp2 == NULL) {
    return refuse(status, 400);
  }
  tlen = (size_t)(sp2 - sp1 - 1);
  if (mlen == 0 || mlen > HTTP_METHOD_MAX) {
    return refuse(status, mlen == 0 ? 400 : 501);
  }
  for (size_t i = 0; i < mlen; i++) {
    if (!is_tchar((unsigned char)p[i])) {
      return refuse(status, 400);
    }
  }
  if (tlen > lim->max_target || tlen > HTTP_TARGET_CAP) {
    return refuse(status, 414);
  }
  if (tlen == 0) {
    return refuse(status, 400);
  }
  for (size_t i = 0; i < tlen; i++) {
    if (!is_vchar((unsigned char)sp1[1 + i])) {
      return refuse(status, 400);
    }
  }
  v = parse_version(sp2 + 1, n - (size_t)(sp2 + 1 - p), &req->minor);
  if (v <= 0) {
    return refuse(status, v == 0 ? 505 : 400);
  }
  memcpy(req->method, p, mlen);
  req->method[mlen] = '\0';
  memcpy(req->target, sp1 + 1, tlen);
  req->target[tlen] = '\0';
  return 0;
}

static size_t trim_ows(const char **v, size_t n) {
  while (n > 0 && (**v == ' ' || **v == '\t')) {
    (*v)++;
    n--;
  }
  while (n > 0 && ((*v)[n - 1] == ' ' || (*v)[n - 1] == '\t')) {
    n--;
  }
  return n;
}

static int name_is(const char *name, size_t n, const char *want) {
  size_t i;
  if (strlen(want) != n) {
    return 0;
  }
  for (i = 0; i < n; i++) {
    char a = name[i], b = want[i];
    if (a >= 'A' && a <= 'Z') {
      a = (char)(a - 'A' + 'a');
    }
    if (a != b) {
      return 0;
    }
  }
  return 1;
}

/* Does a comma-separated list hold the token (case-insensitive)? */
static int list_has(const char *v, size_t n, const char *token) {
  size_t start = 0, i;
  for (i = 0; i <= n; i++) {
    if (i == n || v[i] == ',') {
      const char *item = v + start;
      size_t len = trim_ows(&item, i - start);
      if (name_is(item, len, token)) {
        return 1;
      }
      start = i + 1;
    }
  }
  return 0;
}

struct head_fields {
  int conn_close;
  int conn_keep;
  int content_lengths;
  uint64_t content_length;
  int transfer_encoding;
  int chunked;
  int hosts;
};

/* A header value's bytes: visible ASCII, obs-text, SP and HTAB only. */
static int value_ok(const char *v, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v[i];
    if (c < 0x20 ? c != '\t' : c == 0x7f) {
      return 0;
    }
  }
  return 1;
}

static int decimal(const char *v, size_t n, uint64_t *out) {
  char digits[21];
  if (n == 0 || n >= sizeof digits) {
    return -1;
  }
  memcpy(digits, v, n);
  digits[n] = '\0';
  return str_to_u64(digits, UINT64_MAX / 2, out);
}

/* One "name: value" line; 0 ok, -1 malformed. */
static int parse_field(const char *line, size_t n, struct head_fields *f) {
  const char *colon = memchr(line, ':', n);
  const char *v;
  size_t nlen, vlen;
  if (colon == NULL || colon == line) {
    return -1;
  }
  nlen = (size_t)(colon - line);
  for (size_t i = 0; i < nlen; i++) {
    if (!is_tchar((unsigned char)line[i])) {
      return -1; /* also refuses "name :" and a folded line */
    }
  }
  v = colon + 1;
  vlen = trim_ows(&v, n - nlen - 1);
  if (!value_ok(v, vlen)) {
    return -1;
  }
  if (name_is(line, nlen, "connection")) {
    f->conn_close |= list_has(v, vlen, "close");
    f->conn_keep |= list_has(v, vlen, "keep-alive");
  } else if (name_is(line, nlen, "content-length")) {
    uint64_t len;
    if (decimal(v, vlen, &len) != 0 ||
        (f->content_lengths++ > 0 && len != f->content_length)) {
      return -1;
    }
    f->content_length = len;
  } else if (name_is(line, nlen, "transfer-encoding")) {
    f->transfer_encoding = 1;
    f->chunked |= list_has(v, vlen, "chunked");
  } else if (name_is(line, nlen, "host")) {
    f->hosts++;
  }
  return 0;
}

/* The fields between the first line and the blank line: p[0..n) holds
 * "field CRLF" lines.  Number of fields, or -1 malformed, -2 too many. */
static int parse_fields(const char *p, size_t n, unsigned max,
                        struct head_fields *f) {
  size_t start = 0;
  unsigned count = 0;
  memset(f, 0, sizeof *f);
  while (start < n) {
    const char *cr = memchr(p + start, '\r', n - start);
    size_t len = cr != NULL ? (size_t)(cr - p - (long)start) : n - start;
    if (++count > max) {
      return -2;
    }
    if (parse_field(p + start, len, f) != 0) {
      return -1;
    }
    start += len + 2;
  }
  return (int)count;
}

int http_parse_request(const char *p, size_t n, const struct http_limits *lim,
                       struct http_request *req, int *status) {
  const char *eol;
  long end;
  size_t line_len, scan = n < lim->max_head ? n : lim->max_head;
  struct head_fields f;
  int r;
  memset(req, 0, sizeof *req);
  *status = 0;
  /* RFC 9112 2.2: ignore empty lines before a request line */
  while (n >= 2 && p[0] == '\r' && p[1] == '\n') {
    p += 2;
    n -= 2;
    req->head_len += 2;
    scan = n < lim->max_head ? n : lim->max_head;
  }
  end = head_end(p, scan);
  if (!line_ends_clean(p, end >= 0 ? (size_t)end + 4 : scan)) {
    return refuse(status, 400);
  }
  eol = memchr(p, '\r', scan);
  if (eol == NULL) {
    if (scan > lim->max_target + HTTP_METHOD_MAX + 11) {
      return refuse(status, 414);
    }
    return n >= lim->max_head ? refuse(status, 431) : 0;
  }
  line_len = (size_t)(eol - p);
  if (end < 0) {
    if (parse_request_line(p, line_len, lim, req, status) != 0) {
      return -1; /* the line is complete: judge it now */
    }
    return n >= lim->max_head ? refuse(status, 431) : 0;
  }
  if (parse_request_line(p, line_len, lim, req, status) != 0) {
    return -1;
  }
  r = (size_t)end > line_len
          ? parse_fields(p + line_len + 2, (size_t)end - line_len,
                         lim->max_headers, &f)
          : (memset(&f, 0, sizeof f), 0);
  if (r < 0) {
    return refuse(status, r == -2 ? 431 : 400);
  }
  if (f.hosts > 1 || (req->minor >= 1 && f.hosts == 0) ||
      (f.transfer_encoding && f.content_lengths)) {
    return refuse(status, 400);
  }
  req->has_host = f.hosts == 1;
  req->has_body = f.transfer_encoding || f.content_length > 0;
  req->keep_alive =
      req->minor >= 1 ? !f.conn_close : f.conn_keep && !f.conn_close;
  req->head_len += (size_t)end + 4;
  return 1;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

int http_target_path(const char *target, char *out, size_t cap) {
  size_t o = 0, i;
  if (target[0] != '/' || cap == 0) {
    return -1;
  }
  for (i = 0; target[i] != '\0' && target[i] != '?' && target[i] != '#'; i++) {
    int c = (unsigned char)target[i];
    if (c == '%') {
      int hi = hex_value(target[i + 1]);
      int lo = hi < 0 ? -1 : hex_value(target[i + 2]);
      if (lo < 0) {
        return -1;
      }
      c = hi * 16 + lo;
      i += 2;
    }
    if (c < 0x20 || c == 0x7f || o + 1 >= cap) {
      return -1;
    }
    out[o++] = (char)c;
  }
  out[o] = '\0';
  return 0;
}

static int parse_status_line(const char *p, size_t n,
                             struct http_response_head *h) {
  int v;
  if (n < 12 || p[8] != ' ') {
    return -1;
  }
  v = parse_version(p, 8, &h->minor);
  if (v <= 0) {
    return -1;
  }
  for (size_t i = 9; i < 12; i++) {
    if (p[i] < '0' || p[i] > '9') {
      return -1;
    }
  }
  h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
  if (h->status < 100 || (n > 12 && p[12] != ' ')) {
    return -1;
  }
  return 0;
}

int http_parse_response(const char *p, size_t n, size_t max_head,
                        struct http_response_head *h, const char **why) {
  size_t scan = n < max_head ? n : max_head;
  long end;
  const char *eol;
  struct head_fields f;
  size_t line_len;
  memset(h, 0, sizeof *h);
  h->content_length = -1;
  *why = "";
  end = head_end(p, scan);
  if (!line_ends_clean(p, end >= 0 ? (size_t)end + 4 : scan)) {
    *why = "a NUL byte or a bare CR or LF in the response head";
    return -1;
  }
  if (end < 0) {
    if (n >= max_head) {
      *why = "response head too long";
      return -1;
    }
    return 0;
  }
  eol = memchr(p, '\r', scan);
  line_len = (size_t)(eol - p);
  if (parse_status_line(p, line_len, h) != 0) {
    *why = "malformed status line";
    return -1;
  }
  if ((size_t)end > line_len &&
      parse_fields(p + line_len + 2, (size_t)end - line_len, 1000, &f) < 0) {
    *why = "malformed header field";
    return -1;
  }
  if ((size_t)end <= line_len) {
    memset(&f, 0, sizeof f);
  }
  if (f.content_lengths) {
    if (f.content_length > (uint64_t)INT64_MAX / 2) {
      *why = "Content-Length out of range";
      return -1;
    }
    h->content_length = (int64_t)f.content_length;
  }
  h->chunked = f.chunked;
  h->close = f.conn_close || (h->minor == 0 && !f.conn_keep);
  h->head_len = (size_t)end + 4;
  return 1;
}

const char *http_reason(int status) {
  switch (status) {
  case 200: return "OK";
  case 301: return "Moved Permanently";
  case 400: return "Bad Request";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 414: return "URI Too Long";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  default: return "";
  }
}
