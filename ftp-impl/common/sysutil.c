/* sysutil.c - checked wrappers around system calls (see sysutil.h). */
#define _GNU_SOURCE
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *progname = "ftp";

void sys_set_progname(const char *name) { progname = name; }

void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", progname);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(2);
}

void *sys_malloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) {
    die("out of memory (%zu bytes)", n);
  }
  return p;
}

double sys_mono_now(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
    die("clock_gettime: %s", strerror(errno));
  }
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t sys_mono_ms(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
    die("clock_gettime: %s", strerror(errno));
  }
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sys_ms_left(int64_t deadline_ms) {
  int64_t left = deadline_ms - sys_mono_ms();
  if (left < 0) {
    return 0;
  }
  if (left > 86400000) {
    return 86400000;
  }
  return (int)left;
}

int sys_sleep_until(double t) {
  struct timespec ts;
  double whole;
  int rc;
  if (t < 0 || t > 1e12) {
    errno = EINVAL;
    return -1;
  }
  whole = (double)(int64_t)t;
  ts.tv_sec = (time_t)whole;
  ts.tv_nsec = (long)((t - whole) * 1e9);
  do {
    rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  } while (rc == EINTR);
  if (rc != 0) {
    errno = rc; /* clock_nanosleep returns the error, errno untouched */
    return -1;
  }
  return 0;
}

/* The clock is read only after a signal: inside the pinned kernel every
 * clock_gettime is a system call, and a download waits here once per
 * segment. */
int sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms) {
  int64_t deadline = -1;
  int wait_ms = timeout_ms;
  for (;;) {
    int rc = poll(fds, n, wait_ms);
    if (rc >= 0) {
      return rc;
    }
    if (errno != EINTR) {
      return -1;
    }
    if (timeout_ms >= 0) {
      if (deadline < 0) {
        deadline = sys_mono_ms() + timeout_ms;
      }
      wait_ms = sys_ms_left(deadline);
    }
  }
}

int sys_wait_fd(int fd, short events, int timeout_ms) {
  struct pollfd p;
  int rc;
  p.fd = fd;
  p.events = events;
  p.revents = 0;
  rc = sys_poll(&p, 1, timeout_ms);
  if (rc <= 0) {
    return rc;
  }
  return 1;
}

ssize_t sys_read(int fd, void *p, size_t n) {
  for (;;) {
    ssize_t rc = read(fd, p, n);
    if (rc >= 0 || errno != EINTR) {
      return rc;
    }
  }
}

ssize_t sys_pread(int fd, void *p, size_t n, off_t off) {
  for (;;) {
    ssize_t rc = pread(fd, p, n, off);
    if (rc >= 0 || errno != EINTR) {
      return rc;
    }
  }
}

int sys_write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t rc = write(fd, c, n);
    if (rc < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -1;
    }
    c += rc;
    n -= (size_t)rc;
  }
  return 0;
}

void sys_close(int fd) {
  if (fd >= 0) {
    (void)close(fd); /* Linux frees the fd even on EINTR: never retry. */
  }
}

int sys_open(const char *path, int flags, mode_t mode) {
  for (;;) {
    int fd = open(path, flags | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EINTR) {
      return fd;
    }
  }
}

int sys_fstat(int fd, struct stat *st) { return fstat(fd, st); }
int sys_lstat(const char *path, struct stat *st) { return lstat(path, st); }
int sys_stat(const char *path, struct stat *st) { return stat(path, st); }
int sys_rename(const char *from, const char *to) { return rename(from, to); }
int sys_unlink(const char *path) { return unlink(path); }
off_t sys_lseek(int fd, off_t off) { return lseek(fd, off, SEEK_SET); }
int sys_ftruncate(int fd, off_t len) { return ftruncate(fd, len); }

int sys_set_nonblock(int fd, int on) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) {
    return -1;
  }
  fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
  return fcntl(fd, F_SETFL, fl);
}

int sys_set_timeouts(int fd, int seconds) {
  struct timeval tv;
  tv.tv_sec = seconds;
  tv.tv_usec = 0;
  if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return -1;
  }
  return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

int sys_setsockopt_int(int fd, int level, int opt, int val) {
  return setsockopt(fd, level, opt, &val, sizeof val);
}

int sys_getsockopt_int(int fd, int level, int opt, int *val) {
  socklen_t len = sizeof *val;
  *val = 0;
  return getsockopt(fd, level, opt, val, &len);
}

void sys_ignore_sigpipe(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  if (sigaction(SIGPIPE, &sa, NULL) != 0) {
    die("sigaction: %s", strerror(errno));
  }
}
