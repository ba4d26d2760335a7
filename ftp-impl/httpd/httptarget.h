/* httptarget.h - the file a request's path names inside httpd's root:
 * confined, opened, and kept open for a moment, so that a keep-alive client
 * asking for the same object again costs no lookup (as lighttpd's stat
 * cache does). */
#ifndef FTP_HTTPTARGET_H
#define FTP_HTTPTARGET_H

#include <stdint.h>
#include <sys/stat.h>

#include "httpmsg.h"
#include "str.h"

/* A file stays cached this long after it was opened: a file replaced on
 * disk is served from its old copy at most this long. */
#define HTTP_TARGET_CACHE_MS 1000

struct http_targets {
  const char *root; /* the served directory's real path */
  int rootfd;       /* the same, O_PATH; -1: resolve by name only */
  int fd;           /* the file last opened; -1: none */
  struct stat st;
  int index; /* that file is the index.html of the directory its path named */
  int64_t opened_ms;
  char path[HTTP_TARGET_CAP + 1];
  struct buf body; /* that file's bytes, once asked for (http_targets_body) */
  int body_read;
};

void http_targets_init(struct http_targets *t, const char *root);
/* The file for a decoded request path (a directory means its index.html,
 * t->index then set): 200 with *fd (still t's: not to be closed) and *st, or
 * the status why not (301 a directory named without its final slash, 403
 * outside the root, 404, 400, 414). */
int http_targets_open(struct http_targets *t, const char *path, int *fd,
                      struct stat *st);
/* The bytes of the file last opened, if it holds at most cap bytes: read
 * once while it stays cached, so that answering it again reads nothing.
 * NULL when it is larger, or shorter than its size said. */
const char *http_targets_body(struct http_targets *t, size_t cap);
void http_targets_close(struct http_targets *t);

#endif
