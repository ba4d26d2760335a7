/* checks.c - invariants shared by the fuzz targets (see checks.h). */
#include "checks.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memxp.h"

static int is_code(const char *p, size_t n) {
  return n >= 4 && p[0] >= '1' && p[0] <= '5' && p[1] >= '0' && p[1] <= '9' &&
         p[2] >= '0' && p[2] <= '9' && (p[3] == ' ' || p[3] == '-');
}

void check_replies(void) {
  size_t len, i = 0;
  int truncated;
  const char *out = memxp_ctrl_out(&len, &truncated);
  char multi[3] = {0, 0, 0};
  while (i < len) {
    const char *p = out + i;
    const char *nl = memchr(p, '\n', len - i);
    size_t n;
    if (nl == NULL) {
      if (truncated) {
        return;
      }
      abort(); /* a reply without its line end */
    }
    n = (size_t)(nl - p) + 1;
    if (n < 2 || p[n - 2] != '\r' || memchr(p, '\r', n - 2) != NULL) {
      abort(); /* a bare LF or a CR inside a line */
    }
    if (multi[0] == 0) {
      if (!is_code(p, n)) {
        abort(); /* a line that is no reply */
      }
      if (p[3] == '-') {
        memcpy(multi, p, 3);
      }
    } else if (is_code(p, n) && memcmp(p, multi, 3) == 0 && p[3] == ' ') {
      multi[0] = 0;
    }
    i += n;
  }
  if (multi[0] != 0 && !truncated) {
    abort(); /* a multi-line reply never ended */
  }
}

int lowest_free_fd(void) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || close(fd) != 0) {
    abort();
  }
  return fd;
}

void show_replies(void) {
  size_t len;
  int truncated;
  const char *out = memxp_ctrl_out(&len, &truncated);
  if (getenv("FUZZ_SHOW_REPLIES") != NULL) {
    (void)fwrite(out, 1, len, stderr);
  }
}
