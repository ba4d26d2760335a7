/* localfile.c - local destinations of received data (see localfile.h). */
#include "localfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "sysutil.h"

int sink_open_file(struct sink *k, const char *out_dir, const char *remote,
                   char *err, size_t errcap) {
  const char *base = strrchr(remote, '/');
  base = base ? base + 1 : remote;
  memset(k, 0, sizeof *k);
  k->fd = -1;
  if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
    (void)str_fmt(err, errcap, "refusing local file name for %s", remote);
    return -1;
  }
  if (strcmp(out_dir, "/dev/null") == 0) {
    /* Benchmark mode: bytes are counted and checked, then dropped. */
    (void)str_copy(k->name, sizeof k->name, remote);
    k->discard = 1;
    k->fd = sys_open("/dev/null", O_WRONLY, 0);
    if (k->fd < 0) {
      (void)str_fmt(err, errcap, "cannot open /dev/null: %s", strerror(errno));
      return -1;
    }
    return 0;
  }
  if (str_copy(k->name, sizeof k->name, remote) != 0 ||
      str_fmt(k->path, sizeof k->path, "%s/%s", out_dir, base) != 0 ||
      str_fmt(k->part, sizeof k->part, "%s.part", k->path) != 0) {
    (void)str_fmt(err, errcap, "local path too long for %s", remote);
    return -1;
  }
  k->fd = sys_open(k->part, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (k->fd < 0) {
    (void)str_fmt(err, errcap, "cannot create %s: %s", k->part,
                  strerror(errno));
    return -1;
  }
  return 0;
}

void sink_open_mem(struct sink *k, const char *label, struct buf *mem) {
  memset(k, 0, sizeof *k);
  k->fd = -1;
  k->mem = mem;
  (void)str_copy(k->name, sizeof k->name, label);
}

static void first_byte(struct sink *k, double t) {
  if (k->got == 0 && k->fd >= 0) {
    struct event e;
    k->t_first = t;
    ev_begin_at(&e, "file_first_byte", t);
    ev_str(&e, "file", k->name);
    ev_end(&e);
  }
}

static int flush_pending(struct sink *k) {
  size_t n = k->pending_len;
  k->pending_len = 0;
  return n == 0 || sys_write_all(k->fd, k->pending, n) == 0 ? 0 : -1;
}

static void drop_pending(struct sink *k) {
  free(k->pending);
  k->pending = NULL;
  k->pending_len = 0;
}

/* To the file through the batch; a write as large as the batch goes
 * straight through. */
static int file_write(struct sink *k, const char *p, size_t n) {
  if (k->discard) {
    return 0;
  }
  if (k->pending_len + n > SINK_BATCH && flush_pending(k) != 0) {
    return -1;
  }
  if (n >= SINK_BATCH) {
    return sys_write_all(k->fd, p, n);
  }
  if (k->pending == NULL) {
    k->pending = sys_malloc(SINK_BATCH);
  }
  memcpy(k->pending + k->pending_len, p, n);
  k->pending_len += n;
  return 0;
}

int sink_write(struct sink *k, const char *p, size_t n, double t) {
  if (n == 0) {
    return 0;
  }
  first_byte(k, t);
  if (k->fd >= 0 ? file_write(k, p, n) != 0 : buf_append(k->mem, p, n) != 0) {
    return -1;
  }
  k->got += n;
  k->t_last = t;
  return 0;
}

static int pwrite_all(int fd, const char *p, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t rc = pwrite(fd, p, n, (off_t)offset);
    if (rc < 0 && errno == EINTR) {
      continue;
    }
    if (rc <= 0) {
      return -1;
    }
    p += rc;
    n -= (size_t)rc;
    offset += (uint64_t)rc;
  }
  return 0;
}

static int mem_place(struct buf *b, uint64_t offset, const char *p, size_t n) {
  static const char zeros[4096];
  size_t inside;
  while (b->len < offset) {
    uint64_t gap = offset - b->len;
    if (buf_append(b, zeros, gap < sizeof zeros ? (size_t)gap : sizeof zeros) !=
        0) {
      return -1;
    }
  }
  inside = (size_t)(b->len - offset) < n ? (size_t)(b->len - offset) : n;
  if (inside > 0) {
    memcpy(b->data + offset, p, inside);
  }
  return inside == n ? 0 : buf_append(b, p + inside, n - inside);
}

int sink_write_at(struct sink *k, uint64_t offset, const char *p, size_t n,
                  double t) {
  if (n == 0) {
    return 0;
  }
  first_byte(k, t);
  if (k->fd >= 0 && flush_pending(k) != 0) {
    return -1;
  }
  if (k->fd >= 0 ? pwrite_all(k->fd, p, n, offset) != 0
                 : mem_place(k->mem, offset, p, n) != 0) {
    return -1;
  }
  k->got += n;
  k->t_last = t;
  return 0;
}

int sink_finish(struct sink *k, int64_t expected, char *err, size_t errcap) {
  struct event e;
  if (expected >= 0 && k->got != (uint64_t)expected) {
    (void)str_fmt(err, errcap, "%s: %s file: %llu of %lld bytes", k->name,
                  k->got < (uint64_t)expected ? "short" : "long",
                  (unsigned long long)k->got, (long long)expected);
    sink_abandon(k);
    return -1;
  }
  if (k->fd < 0) {
    return 0;
  }
  if (flush_pending(k) != 0) {
    (void)str_fmt(err, errcap, "%s: write: %s", k->part, strerror(errno));
    sink_abandon(k);
    return -1;
  }
  drop_pending(k);
  if (close(k->fd) != 0) {
    k->fd = -1;
    (void)str_fmt(err, errcap, "%s: close: %s", k->part, strerror(errno));
    return -1;
  }
  k->fd = -1;
  if (!k->discard && sys_rename(k->part, k->path) != 0) {
    (void)str_fmt(err, errcap, "rename %s: %s", k->part, strerror(errno));
    return -1;
  }
  ev_begin_at(&e, "file_last_byte", k->got ? k->t_last : sys_mono_now());
  ev_str(&e, "file", k->name);
  ev_u64(&e, "bytes", k->got);
  ev_end(&e);
  ev_begin(&e, "file_done");
  ev_str(&e, "file", k->name);
  ev_u64(&e, "bytes", k->got);
  ev_str(&e, "path", k->discard ? "/dev/null" : k->path);
  ev_end(&e);
  return 0;
}

void sink_abandon(struct sink *k) {
  if (k->fd >= 0) {
    (void)flush_pending(k); /* the .part keeps what came; best effort */
    sys_close(k->fd);
    k->fd = -1;
  }
  drop_pending(k);
}

void sink_remove(struct sink *k) {
  sink_abandon(k);
  if (!k->discard && k->mem == NULL && k->part[0] != '\0') {
    (void)sys_unlink(k->part);
  }
}
