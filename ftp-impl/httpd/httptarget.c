/* httptarget.c - request paths to open files (see httptarget.h). */
#define _GNU_SOURCE /* O_PATH */
#include "httptarget.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

#include "confine.h"
#include "str.h"
#include "sysutil.h"

/* The largest file whose bytes are kept (httpreply's small file). */
#define HTTP_TARGET_BODY_MAX 16384

/* A directory is served only as "DIR/": relative links in its index then
 * resolve beneath it. */
static int names_directory(const char *path) {
  size_t n = strlen(path);
  return n > 0 && path[n - 1] == '/';
}

/* Resolved by name in user space (confine.c), which also follows symlinks
 * that stay inside the root. */
static int open_resolved(const char *root, const char *path, int *fd,
                         struct stat *st, int *index) {
  char virt[PATH_MAX], real[PATH_MAX];
  enum confine_result r =
      confine_resolve(root, "/", path, 1, virt, sizeof virt, real, sizeof real);
  if (r == CONFINE_OUTSIDE) {
    return 403;
  }
  if (r != CONFINE_OK) {
    return r == CONFINE_NOENT ? 404 : 400;
  }
  if (sys_stat(real, st) == 0 && S_ISDIR(st->st_mode)) {
    if (!names_directory(path)) {
      return 301;
    }
    if (str_append(real, sizeof real, "/index.html") != 0) {
      return 414;
    }
    *index = 1;
  }
  *fd = sys_open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (*fd < 0) {
    return errno == ENOENT ? 404 : 403;
  }
  if (sys_fstat(*fd, st) != 0 || !S_ISREG(st->st_mode)) {
    sys_close(*fd);
    return 404;
  }
  return 200;
}

/* Open name beneath dirfd and stat it; -1 and no fd when either fails. */
static int open_stat_beneath(int dirfd, const char *name, int flags, int *fd,
                             struct stat *st) {
  *fd = confine_open_beneath(dirfd, name, flags | O_RDONLY | O_CLOEXEC);
  if (*fd < 0) {
    return -1;
  }
  if (sys_fstat(*fd, st) != 0) {
    sys_close(*fd);
    return -1;
  }
  return 0;
}

/* The same in two system calls where it can: the kernel resolves the path
 * beneath the root.  0 when only open_resolved can say: a ".." (resolved by
 * name there, not through symlinks), a symlink leaving the root, an error
 * other than "no such file". */
static int open_beneath(int rootfd, const char *path, int *fd, struct stat *st,
                        int *index) {
  const char *rel = path + strspn(path, "/");
  if (rootfd < 0 || strstr(path, "/..") != NULL) {
    return 0;
  }
  if (open_stat_beneath(rootfd, *rel != '\0' ? rel : ".", 0, fd, st) != 0) {
    return errno == ENOENT ? 404 : 0;
  }
  if (S_ISDIR(st->st_mode)) {
    int dir = *fd, rc;
    if (!names_directory(path)) {
      sys_close(dir);
      return 301;
    }
    *index = 1;
    rc = open_stat_beneath(dir, "index.html", O_NOFOLLOW, fd, st);
    sys_close(dir);
    if (rc != 0) {
      return errno == ENOENT ? 404 : 0;
    }
  }
  if (!S_ISREG(st->st_mode)) {
    sys_close(*fd);
    return 404;
  }
  return 200;
}

void http_targets_init(struct http_targets *t, const char *root) {
  memset(t, 0, sizeof *t);
  t->root = root;
  t->fd = -1;
  t->rootfd = sys_open(root, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
  buf_init(&t->body, HTTP_TARGET_BODY_MAX);
}

static int cached(const struct http_targets *t, const char *path) {
  return t->fd >= 0 && strcmp(t->path, path) == 0 &&
         sys_mono_ms() - t->opened_ms < HTTP_TARGET_CACHE_MS;
}

int http_targets_open(struct http_targets *t, const char *path, int *fd,
                      struct stat *st) {
  int status;
  if (!cached(t, path)) {
    int opened = -1, index = 0;
    struct stat now;
    status = open_beneath(t->rootfd, path, &opened, &now, &index);
    if (status == 0) {
      index = 0;
      status = open_resolved(t->root, path, &opened, &now, &index);
    }
    if (status != 200) {
      return status;
    }
    sys_close(t->fd);
    t->fd = opened;
    t->st = now;
    t->index = index;
    t->opened_ms = sys_mono_ms();
    t->body_read = 0;
    if (str_copy(t->path, sizeof t->path, path) != 0) {
      t->path[0] = '\0'; /* too long to remember: never matches */
    }
  }
  *fd = t->fd;
  *st = t->st;
  return 200;
}

const char *http_targets_body(struct http_targets *t, size_t cap) {
  size_t size = (size_t)t->st.st_size;
  if (t->fd < 0 || size > cap || size > HTTP_TARGET_BODY_MAX) {
    return NULL;
  }
  if (!t->body_read) {
    buf_clear(&t->body);
    while (t->body.len < size) {
      char chunk[4096];
      size_t want = size - t->body.len;
      ssize_t got =
          sys_pread(t->fd, chunk, want < sizeof chunk ? want : sizeof chunk,
                    (off_t)t->body.len);
      if (got <= 0 || buf_append(&t->body, chunk, (size_t)got) != 0) {
        return NULL; /* shorter than its size said: read it as it goes */
      }
    }
    t->body_read = 1;
  }
  return t->body.data;
}

void http_targets_close(struct http_targets *t) {
  buf_free(&t->body);
  sys_close(t->fd);
  sys_close(t->rootfd);
  t->fd = t->rootfd = -1;
}
