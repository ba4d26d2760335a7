/* logging.c - timestamped log lines (see logging.h). */
#include "logging.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "str.h"
#include "sysutil.h"

static int log_fd = 2;
static char log_peer[128] = "-";

int log_open(const char *path) {
  int fd;
  if (path == NULL || path[0] == '\0' || (path[0] == '-' && path[1] == '\0')) {
    log_fd = 2;
    return 0;
  }
  fd = sys_open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) {
    return -1;
  }
  log_fd = fd;
  return 0;
}

void log_set_peer(const char *peer) {
  if (str_copy(log_peer, sizeof log_peer, peer) != 0) {
    /* truncated peer names are still useful */
  }
}

void log_line(const char *fmt, ...) {
  char line[1024];
  char msg[768];
  char stamp[32];
  struct timespec ts;
  struct tm tm;
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) {
    return;
  }
  /* Client-supplied text reaches the log: no control bytes, no line
   * breaks, ASCII only, so a line can be neither forged nor garbled. */
  for (n = 0; msg[n] != '\0'; n++) {
    if ((unsigned char)msg[n] < 0x20 || (unsigned char)msg[n] >= 0x7f) {
      msg[n] = '?';
    }
  }
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0 ||
      gmtime_r(&ts.tv_sec, &tm) == NULL ||
      strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
    stamp[0] = '\0';
  }
  /* A truncated line is still written: the log must not lose events. */
  (void)str_fmt(line, sizeof line, "%s.%06ldZ [pid %ld] [%s] %s\n", stamp,
                ts.tv_nsec / 1000, (long)getpid(), log_peer, msg);
  if (line[0] != '\0') {
    size_t len = 0;
    while (len < sizeof line && line[len] != '\0') {
      len++;
    }
    if (len > 0 && line[len - 1] != '\n') {
      line[len - 1] = '\n';
    }
    (void)sys_write_all(log_fd, line, len);
  }
}
