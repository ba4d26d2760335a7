/* privs.c - the privilege drop (see privs.h and ../TRUST.md). */
#define _GNU_SOURCE
#include "privs.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "logging.h"
#include "sysutil.h"

static const struct passwd *lookup(const char *user) {
  const struct passwd *pw;
  errno = 0;
  pw = getpwnam(user);
  if (pw == NULL) {
    die("--run-as %s: no such user%s%s", user, errno ? ": " : "",
        errno ? strerror(errno) : "");
  }
  return pw;
}

static void not_root(const char *user) {
  const struct passwd *pw;
  if (user[0] == '\0' || strcmp(user, "root") == 0) {
    return; /* "root": keep what we were started with */
  }
  pw = lookup(user);
  if (pw->pw_uid != geteuid()) {
    die("--run-as %s needs the server to be started as root", user);
  }
}

static void become(const struct passwd *pw) {
  uid_t uid = pw->pw_uid;
  gid_t gid = pw->pw_gid;
  if (setgroups(1, &gid) != 0) {
    die("setgroups: %s", strerror(errno));
  }
  if (setgid(gid) != 0) {
    die("setgid(%u): %s", (unsigned)gid, strerror(errno));
  }
  if (setuid(uid) != 0) {
    die("setuid(%u): %s", (unsigned)uid, strerror(errno));
  }
  if (getuid() != uid || geteuid() != uid || getgid() != gid ||
      getegid() != gid) {
    die("privilege drop to %s did not take", pw->pw_name);
  }
  if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
    die("privilege drop to %s can be undone", pw->pw_name);
  }
}

void privs_drop(const char *user, const char *root) {
  const struct passwd *pw;
  if (geteuid() != 0) {
    not_root(user);
    return;
  }
  pw = lookup(user[0] != '\0' ? user : "nobody");
  if (pw->pw_uid == 0) {
    log_line("RUN as root: privileges kept (--run-as %s)", pw->pw_name);
    return;
  }
  become(pw);
  if (access(root, R_OK | X_OK) != 0) {
    die("--root %s is not readable by %s after the privilege drop (%s): make "
        "it and every folder above it readable by that user, or give "
        "--run-as",
        root, pw->pw_name, strerror(errno));
  }
  log_line("RUN as %s (uid %u, gid %u)", pw->pw_name, (unsigned)pw->pw_uid,
           (unsigned)pw->pw_gid);
}
