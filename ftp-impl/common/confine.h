/* confine.h - maps the client's path arguments to real paths inside the
 * served root, and refuses everything that would leave it (like vsftpd's
 * chroot, but with a realpath check, so symlinks pointing out are refused
 * too). */
#ifndef FTP_CONFINE_H
#define FTP_CONFINE_H

#include <stddef.h>

enum confine_result {
  CONFINE_OK = 0,
  CONFINE_OUTSIDE, /* ".." above the root, or a symlink that leaves it */
  CONFINE_NOENT,   /* does not exist (or its parent does not) */
  CONFINE_BAD      /* too long, empty or otherwise unusable */
};

/* Resolve arg (absolute from the virtual root, or relative to cwd).
 * virt gets the normalized virtual path ("/a/b"), real the real path.
 * must_exist = 0 (for STOR): only the parent has to exist; the last
 * component must then be a plain name. */
enum confine_result confine_resolve(const char *root, const char *cwd,
                                    const char *arg, int must_exist, char *virt,
                                    size_t vcap, char *real, size_t rcap);

/* Open path relative to the directory dirfd with the kernel refusing every
 * step that would leave it: "..", absolute paths and symlinks pointing out
 * (openat2's RESOLVE_BENEATH, Linux 5.6).  The fd, or -1 with errno (EXDEV:
 * it would leave; ENOSYS: a kernel without openat2). */
int confine_open_beneath(int dirfd, const char *path, int flags);

#endif
