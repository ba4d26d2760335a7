/* sysutil.h - every system call the programs make goes through here, so
 * results are checked (and EINTR retried) in one place.  All waiting is
 * done in the kernel (poll or blocking calls with kernel timeouts); time is
 * always read from CLOCK_MONOTONIC. */
#ifndef FTP_SYSUTIL_H
#define FTP_SYSUTIL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Print "prog: message" on stderr and exit(2).  For impossible states and
 * resource exhaustion only; protocol errors are answered, never fatal. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void sys_set_progname(const char *name);

void *sys_malloc(size_t n);

/* Seconds and milliseconds on CLOCK_MONOTONIC. */
double sys_mono_now(void);
int64_t sys_mono_ms(void);
/* Milliseconds left until deadline (>= 0), for poll(). */
int sys_ms_left(int64_t deadline_ms);
/* Sleep in the kernel until CLOCK_MONOTONIC reaches t seconds (returns at
 * once if it has).  -1 on error. */
int sys_sleep_until(double t);

/* poll() that retries on EINTR with the remaining time.  -1 on error. */
int sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms);
/* Wait until fd has `events`; 1 ready, 0 timeout, -1 error. */
int sys_wait_fd(int fd, short events, int timeout_ms);

ssize_t sys_read(int fd, void *p, size_t n);
/* pread() that retries on EINTR. */
ssize_t sys_pread(int fd, void *p, size_t n, off_t off);
/* Write all n bytes; -1 on error. */
int sys_write_all(int fd, const void *p, size_t n);
void sys_close(int fd);
int sys_open(const char *path, int flags, mode_t mode);
int sys_fstat(int fd, struct stat *st);
int sys_lstat(const char *path, struct stat *st);
int sys_stat(const char *path, struct stat *st);
int sys_rename(const char *from, const char *to);
int sys_unlink(const char *path);
off_t sys_lseek(int fd, off_t off);
int sys_ftruncate(int fd, off_t len);

/* Socket helpers shared by both transports. */
int sys_set_nonblock(int fd, int on);
int sys_set_timeouts(int fd, int seconds);
int sys_setsockopt_int(int fd, int level, int opt, int val);
int sys_getsockopt_int(int fd, int level, int opt, int *val);
void sys_ignore_sigpipe(void);

#endif
