/* wraps.c - two of sysutil.c's calls seen on their way, for the server
 * targets (linked with -Wl,--wrap=sys_open,--wrap=sys_wait_fd):
 *   - sys_open: only a file opened for writing can change the served tree,
 *     so only then must tree_restore() do its work;
 *   - sys_wait_fd: a connection of the in-memory transport is always ready
 *     (poll on its /dev/null says the same), without the system call per
 *     receive. */
#include <fcntl.h>
#include <sys/types.h>

#include "memxp.h"
#include "sysutil.h"
#include "tree.h"

int __real_sys_open(const char *path, int flags, mode_t mode);
int __wrap_sys_open(const char *path, int flags, mode_t mode);
int __real_sys_wait_fd(int fd, short events, int timeout_ms);
int __wrap_sys_wait_fd(int fd, short events, int timeout_ms);

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
