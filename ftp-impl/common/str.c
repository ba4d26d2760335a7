/* str.c - bounded string and buffer helpers (see str.h). */
#include "str.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int str_copy(char *dst, size_t cap, const char *src) {
  size_t n;
  if (cap == 0) {
    return -1;
  }
  n = strlen(src);
  if (n >= cap) {
    memcpy(dst, src, cap - 1);
    dst[cap - 1] = '\0';
    return -1;
  }
  memcpy(dst, src, n + 1);
  return 0;
}

int str_append(char *dst, size_t cap, const char *src) {
  size_t used = strnlen(dst, cap);
  if (used >= cap) {
    return -1;
  }
  return str_copy(dst + used, cap - used, src);
}

static int vfmt(char *dst, size_t cap, const char *fmt, va_list ap) {
  int n;
  if (cap == 0) {
    return -1;
  }
  n = vsnprintf(dst, cap, fmt, ap);
  if (n < 0 || (size_t)n >= cap) {
    return -1;
  }
  return 0;
}

int str_fmt(char *dst, size_t cap, const char *fmt, ...) {
  va_list ap;
  int rc;
  va_start(ap, fmt);
  rc = vfmt(dst, cap, fmt, ap);
  va_end(ap);
  return rc;
}

int str_fmt_append(char *dst, size_t cap, const char *fmt, ...) {
  va_list ap;
  int rc;
  size_t used = strnlen(dst, cap);
  if (used >= cap) {
    return -1;
  }
  va_start(ap, fmt);
  rc = vfmt(dst + used, cap - used, fmt, ap);
  va_end(ap);
  return rc;
}

void str_upper(char *s) {
  for (; *s != '\0'; s++) {
    *s = (char)toupper((unsigned char)*s);
  }
}

int str_eq_nocase(const char *a, const char *b) {
  for (; *a != '\0' && *b != '\0'; a++, b++) {
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) {
      return 0;
    }
  }
  return *a == *b;
}

int str_to_u64(const char *s, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  if (*s == '\0') {
    return -1;
  }
  for (; *s != '\0'; s++) {
    unsigned d;
    if (*s < '0' || *s > '9') {
      return -1;
    }
    d = (unsigned)(*s - '0');
    if (v > (max - d) / 10) {
      return -1;
    }
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

int str_to_decimal(const char *s, double max, double *out) {
  const char *p = s;
  char *end = NULL;
  double v;
  size_t digits = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    digits++;
  }
  if (*p == '.') {
    size_t frac = 0;
    for (p++; *p >= '0' && *p <= '9'; p++) {
      frac++;
    }
    if (frac == 0) {
      return -1;
    }
  }
  if (digits == 0 || *p != '\0' || digits > 15) {
    return -1;
  }
  v = strtod(s, &end);
  if (end != p || !(v <= max)) {
    return -1;
  }
  *out = v;
  return 0;
}

int str_split_cmd(const char *line, char *cmd, size_t cmdcap, char *arg,
                  size_t argcap) {
  const char *sp = strchr(line, ' ');
  size_t n = sp ? (size_t)(sp - line) : strlen(line);
  int rc = 0;
  if (n >= cmdcap) {
    n = cmdcap - 1;
    rc = -1;
  }
  memcpy(cmd, line, n);
  cmd[n] = '\0';
  str_upper(cmd);
  if (str_copy(arg, argcap, sp ? sp + 1 : "") != 0) {
    rc = -1;
  }
  return rc;
}

int str_has_glob(const char *s) { return strpbrk(s, "*?[") != NULL; }

int str_json(char *dst, size_t cap, const char *s) {
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)s;
  if (cap < 3) {
    return -1;
  }
  dst[o++] = '"';
  for (; *p != '\0'; p++) {
    char tmp[8];
    size_t tl;
    if (*p == '"' || *p == '\\') {
      tmp[0] = '\\';
      tmp[1] = (char)*p;
      tl = 2;
    } else if (*p < 0x20 || *p == 0x7f) {
      if (str_fmt(tmp, sizeof tmp, "\\u%04x", (unsigned)*p) != 0) {
        return -1;
      }
      tl = 6;
    } else {
      tmp[0] = (char)*p;
      tl = 1;
    }
    if (o + tl + 2 > cap) {
      dst[0] = '\0';
      return -1;
    }
    memcpy(dst + o, tmp, tl);
    o += tl;
  }
  dst[o++] = '"';
  dst[o] = '\0';
  return 0;
}

void buf_init(struct buf *b, size_t max) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->max = max;
}

void buf_free(struct buf *b) {
  free(b->data);
  buf_init(b, b->max);
}

static int buf_reserve(struct buf *b, size_t need) {
  size_t ncap;
  char *p;
  if (need > b->max) {
    return -1;
  }
  if (need <= b->cap) {
    return 0;
  }
  ncap = b->cap ? b->cap : 256;
  while (ncap < need) {
    ncap *= 2;
  }
  if (ncap > b->max) {
    ncap = b->max;
  }
  p = realloc(b->data, ncap + 1);
  if (p == NULL) {
    return -1;
  }
  b->data = p;
  b->cap = ncap;
  return 0;
}

int buf_append(struct buf *b, const void *p, size_t n) {
  if (n > b->max || buf_reserve(b, b->len + n) != 0) {
    return -1;
  }
  if (n > 0) {
    memcpy(b->data + b->len, p, n);
  }
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int buf_append_str(struct buf *b, const char *s) {
  return buf_append(b, s, strlen(s));
}

int buf_fmt(struct buf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  int rc;
  va_start(ap, fmt);
  rc = vfmt(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (rc != 0) {
    return -1;
  }
  return buf_append_str(b, tmp);
}

void buf_consume(struct buf *b, size_t n) {
  if (n >= b->len) {
    b->len = 0;
  } else {
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
  }
  if (b->data != NULL) {
    b->data[b->len] = '\0';
  }
}

void buf_clear(struct buf *b) { buf_consume(b, b->len); }
