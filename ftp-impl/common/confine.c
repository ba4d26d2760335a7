/* confine.c - path confinement (see confine.h). */
#define _GNU_SOURCE
#include "confine.h"

#include <errno.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "str.h"

/* Normalize cwd + arg into an absolute virtual path; "." and empty parts
 * vanish, ".." pops.  -1: ".." above the root; -2: too long. */
static int normalize(const char *cwd, const char *arg, char *out, size_t cap) {
  char work[PATH_MAX];
  char *part, *save = NULL;
  size_t len = 0;
  if (arg[0] == '/') {
    if (str_copy(work, sizeof work, arg) != 0) {
      return -2;
    }
  } else if (str_fmt(work, sizeof work, "%s/%s", cwd, arg) != 0) {
    return -2;
  }
  if (cap < 2) {
    return -2;
  }
  out[0] = '\0';
  for (part = strtok_r(work, "/", &save); part != NULL;
       part = strtok_r(NULL, "/", &save)) {
    if (strcmp(part, ".") == 0) {
      continue;
    }
    if (strcmp(part, "..") == 0) {
      char *slash;
      if (len == 0) {
        return -1;
      }
      slash = strrchr(out, '/');
      len = (size_t)(slash - out);
      out[len] = '\0';
      continue;
    }
    if (len + 1 + strlen(part) + 1 > cap) {
      return -2;
    }
    out[len++] = '/';
    memcpy(out + len, part, strlen(part) + 1);
    len += strlen(part);
  }
  if (len == 0) {
    out[0] = '/';
    out[1] = '\0';
  }
  return 0;
}

static int inside_root(const char *root, const char *real) {
  size_t rl = strlen(root);
  if (rl == 1 && root[0] == '/') {
    return real[0] == '/';
  }
  return strncmp(real, root, rl) == 0 && (real[rl] == '\0' || real[rl] == '/');
}

enum confine_result confine_resolve(const char *root, const char *cwd,
                                    const char *arg, int must_exist, char *virt,
                                    size_t vcap, char *real, size_t rcap) {
  char host[PATH_MAX];
  char resolved[PATH_MAX];
  int rc = normalize(cwd, arg, virt, vcap);
  if (rc == -1) {
    return CONFINE_OUTSIDE;
  }
  if (rc != 0) {
    return CONFINE_BAD;
  }
  if (must_exist) {
    if (str_fmt(host, sizeof host, "%s%s", root, virt) != 0) {
      return CONFINE_BAD;
    }
    if (realpath(host, resolved) == NULL) {
      return errno == ENOENT || errno == ENOTDIR ? CONFINE_NOENT : CONFINE_BAD;
    }
  } else {
    char *slash = strrchr(virt, '/');
    const char *base = slash + 1;
    char parent[PATH_MAX];
    size_t plen = (size_t)(slash - virt);
    if (*base == '\0') {
      return CONFINE_BAD;
    }
    if (plen >= sizeof parent) {
      return CONFINE_BAD;
    }
    memcpy(parent, virt, plen);
    parent[plen] = '\0';
    if (str_fmt(host, sizeof host, "%s%s", root, parent) != 0) {
      return CONFINE_BAD;
    }
    if (realpath(host, resolved) == NULL) {
      return errno == ENOENT || errno == ENOTDIR ? CONFINE_NOENT : CONFINE_BAD;
    }
    if (!inside_root(root, resolved)) {
      return CONFINE_OUTSIDE;
    }
    if (str_append(resolved, sizeof resolved, "/") != 0 ||
        str_append(resolved, sizeof resolved, base) != 0) {
      return CONFINE_BAD;
    }
  }
  if (!inside_root(root, resolved)) {
    return CONFINE_OUTSIDE;
  }
  return str_copy(real, rcap, resolved) == 0 ? CONFINE_OK : CONFINE_BAD;
}

int confine_open_beneath(int dirfd, const char *path, int flags) {
  struct open_how how;
  long fd;
  memset(&how, 0, sizeof how);
  how.flags = (unsigned long long)(unsigned)flags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  do {
    fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
  } while (fd < 0 && errno == EINTR);
  return (int)fd;
}
