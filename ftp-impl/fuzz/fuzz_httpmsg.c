/* fuzz_httpmsg.c - httpd's request parser, httpc's response parser and the
 * request target's decoding (httpmsg.c), the parsers every byte from an HTTP
 * peer goes through.
 *
 * In: byte 0 chooses what is parsed (even: a request head, odd: a response
 * head), byte 1 the limits (head size 64 to 8192, target size, header
 * count), the rest is the bytes as they arrived.
 * Out: nothing; aborts when a head that parsed claims more bytes than it was
 * given, when a prefix shorter than a parsed head also parses (a parser must
 * not answer before its blank line), when the same bytes parse twice to
 * different results, or when a decoded target holds a control byte or
 * overruns its buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const size_t heads[] = {64, 256, 1024, 8192};
static const size_t targets[] = {16, 100, 2048, HTTP_TARGET_CAP};

static void check_target(const char *target) {
  char out[64];
  if (http_target_path(target, out, sizeof out) != 0) {
    return;
  }
  if (out[0] != '/' || memchr(out, '\0', sizeof out) == NULL) {
    abort();
  }
  for (const char *p = out; *p != '\0'; p++) {
    if ((unsigned char)*p < 0x20 || *p == 0x7f) {
      abort();
    }
  }
}

static void request(const char *p, size_t n, const struct http_limits *lim) {
  struct http_request a, b;
  int sa, sb;
  int r = http_parse_request(p, n, lim, &a, &sa);
  if (http_parse_request(p, n, lim, &b, &sb) != r || sa != sb) {
    abort();
  }
  if (r < 0 && (sa < 400 || sa > 505)) {
    abort();
  }
  if (r != 1) {
    return;
  }
  if (a.head_len > n || a.head_len < 4 || a.method[0] == '\0' ||
      strlen(a.target) > lim->max_target || a.keep_alive < 0 ||
      a.keep_alive > 1 || memcmp(&a, &b, sizeof a) != 0) {
    abort();
  }
  if (http_parse_request(p, a.head_len - 1, lim, &b, &sb) == 1) {
    abort();
  }
  check_target(a.target);
}

static void response(const char *p, size_t n, size_t max_head) {
  struct http_response_head h, g;
  const char *why;
  int r = http_parse_response(p, n, max_head, &h, &why);
  if (r != 1) {
    return;
  }
  if (h.head_len > n || h.head_len > max_head || h.status < 100 ||
      h.status > 999 || h.content_length < -1) {
    abort();
  }
  if (http_parse_response(p, h.head_len - 1, max_head, &g, &why) == 1) {
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct http_limits lim;
  char *copy;
  if (size < 2) {
    return 0;
  }
  lim.max_head = heads[data[1] & 3];
  lim.max_target = targets[(data[1] >> 2) & 3];
  lim.max_headers = 1u + ((data[1] >> 4) & 15u) * 8u;
  /* an exact-size copy: ASan sees any read past the bytes given */
  copy = malloc(size - 2 + 1);
  if (copy == NULL) {
    return 0;
  }
  memcpy(copy, data + 2, size - 2);
  if (data[0] & 1) {
    response(copy, size - 2, lim.max_head);
  } else {
    request(copy, size - 2, &lim);
  }
  free(copy);
  return 0;
}
