/* str.h - the only string and buffer code: every size check lives here.
 *
 * Fixed-size strings are plain char arrays with their capacity passed
 * explicitly; every function that writes returns -1 (and leaves a
 * NUL-terminated, possibly shortened result) when the result would not fit.
 * Growable byte buffers (struct buf) carry a hard maximum size. */
#ifndef FTP_STR_H
#define FTP_STR_H

#include <stddef.h>
#include <stdint.h>

/* Copy src into dst (capacity cap). -1 if truncated. */
int str_copy(char *dst, size_t cap, const char *src);
/* Append src to dst (capacity cap). -1 if truncated. */
int str_append(char *dst, size_t cap, const char *src);
/* snprintf into dst; -1 on truncation or error. */
int str_fmt(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Append formatted text to dst; -1 on truncation or error. */
int str_fmt_append(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Upper-case the ASCII letters of s in place. */
void str_upper(char *s);
/* Case-insensitive ASCII equality. */
int str_eq_nocase(const char *a, const char *b);
/* Decimal unsigned integer, whole string, no sign; -1 if invalid or > max. */
int str_to_u64(const char *s, uint64_t max, uint64_t *out);
/* Decimal number "12" or "12.375", whole string, no sign or exponent; -1 if
 * invalid or > max. */
int str_to_decimal(const char *s, double max, double *out);
/* Split "CMD ARG" at the first space: cmd (upper-cased) and arg. */
int str_split_cmd(const char *line, char *cmd, size_t cmdcap, char *arg,
                  size_t argcap);
/* Does s contain any of the glob characters * ? [ ? */
int str_has_glob(const char *s);
/* Write s as a JSON string literal (with quotes) into dst. */
int str_json(char *dst, size_t cap, const char *s);

/* Growable byte buffer with a hard ceiling. */
struct buf {
  char *data;
  size_t len;
  size_t cap;
  size_t max;
};

void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b);
/* Append n bytes; -1 if the buffer would exceed its maximum. */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_append_str(struct buf *b, const char *s);
int buf_fmt(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes. */
void buf_consume(struct buf *b, size_t n);
void buf_clear(struct buf *b);

#endif
