/* wraps.c - calls of the server's sources seen on their way, for the server
 * targets (linked with -Wl,--wrap= each of sys_open, sys_wait_fd,
 * sys_setsockopt_int, send and sendfile):
 *   - sys_open: only a file opened for writing can change the served tree,
 *     so only then must tree_restore() do its work;
 *   - sys_wait_fd: a connection of the in-memory transport is always ready
 *     (poll on its /dev/null says the same), without the system call per
 *     receive;
 *   - sys_setsockopt_int: an option set on one of its connections (the
 *     session's SO_OOBINLINE) succeeds, as on a socket, instead of failing
 *     with ENOTSOCK and ending every TCP session before its first command;
 *   - send, sendfile: the TCP data pump (datapump.c) writes to the data
 *     connection's descriptor itself, not through transport.h; on one of
 *     the in-memory transport's connections the bytes go to memxp instead
 *     (send() on /dev/null would fail with ENOTSOCK), sendfile() a block
 *     at a time, so the pump's loop sees partial sends. */
#include <errno.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "memxp.h"
#include "sysutil.h"
#include "tree.h"

int __real_sys_open(const char *path, int flags, mode_t mode);
int __wrap_sys_open(const char *path, int flags, mode_t mode);
int __real_sys_wait_fd(int fd, short events, int timeout_ms);
int __wrap_sys_wait_fd(int fd, short events, int timeout_ms);
int __real_sys_setsockopt_int(int fd, int level, int opt, int val);
int __wrap_sys_setsockopt_int(int fd, int level, int opt, int val);
ssize_t __real_send(int fd, const void *p, size_t n, int flags);
int __wrap_sys_setsockopt_int(int fd, int level, int opt, int val) {
  if (memxp_owns(fd)) {
    return 0;
  }
  return __real_sys_setsockopt_int(fd, level, opt, val);
}

ssize_t __wrap_send(int fd, const void *p, size_t n, int flags);
ssize_t __real_sendfile(int out, int in, off_t *offset, size_t n);
ssize_t __wrap_sendfile(int out, int in, off_t *offset, size_t n);

int __wrap_sys_open(const char *path, int flags, mode_t mode) {
  if ((flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0) {
    tree_mark_dirty();
  }
  return __real_sys_open(path, flags, mode);
}

int __wrap_sys_wait_fd(int fd, short events, int timeout_ms) {
  if (memxp_owns(fd)) {
    return 1;
  }
  return __real_sys_wait_fd(fd, events, timeout_ms);
}

ssize_t __wrap_send(int fd, const void *p, size_t n, int flags) {
  struct xp_conn c;
  if (!memxp_owns(fd)) {
    return __real_send(fd, p, n, flags);
  }
  c.fd = fd;
  c.proto = XP_TCP;
  return xp_send(&c, p, n, 0) == 0 ? (ssize_t)n : -1;
}

ssize_t __wrap_sendfile(int out, int in, off_t *offset, size_t n) {
  char block[4096];
  struct xp_conn c;
  ssize_t got;
  if (!memxp_owns(out)) {
    return __real_sendfile(out, in, offset, n);
  }
  if (offset != NULL) {
    errno = EINVAL; /* the pump sends from the file's own offset */
    return -1;
  }
  got = read(in, block, n < sizeof block ? n : sizeof block);
  if (got <= 0) {
    return got; /* 0: end of file, as sendfile() says it */
  }
  c.fd = out;
  c.proto = XP_TCP;
  return xp_send(&c, block, (size_t)got, 0) == 0 ? got : -1;
}
