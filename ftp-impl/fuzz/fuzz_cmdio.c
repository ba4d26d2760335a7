/* fuzz_cmdio.c - the server's command reader: line splitting, the line
 * limit, Telnet IAC removal, NUL refusal (cmdio_get_line), the split into
 * command and argument (str_split_cmd), and a reply echoing the line
 * (cmdio_reply must never let the client's bytes start a second reply).
 *
 * In: byte 0 settings (memxp_cfg_from_byte; bit 7 also lowers the line
 * limit to 64), then the control input script (memxp.h).
 * Out: nothing; aborts when a returned line breaks its contract. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "cmdio.h"
#include "logging.h"
#include "memxp.h"
#include "sessionloop.h"
#include "tunables.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  tunables_defaults();
  if (log_open("/dev/null") != 0) {
    abort();
  }
  return 0;
}

static void check_line(const char *line) {
  size_t n = strlen(line);
  char cmd[16], arg[PATH_MAX];
  if (n > (size_t)tunables.max_line || memchr(line, '\n', n) != NULL ||
      (n > 0 && line[n - 1] == '\r')) {
    abort();
  }
  if (str_split_cmd(line, cmd, sizeof cmd, arg, sizeof arg) == 0) {
    size_t i;
    for (i = 0; cmd[i] != '\0'; i++) {
      if (cmd[i] >= 'a' && cmd[i] <= 'z') {
        abort(); /* the command word is upper-cased */
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct memxp_cfg cfg;
  struct xp_conn ctrl;
  struct session s;
  char *line;
  size_t cap;
  int replies = 0;
  if (size == 0) {
    return 0;
  }
  memxp_cfg_from_byte(data[0], &cfg);
  tunables.max_line = (data[0] & 0x80u) ? 64 : 1024;
  cap = (size_t)tunables.max_line + 2;
  memxp_begin(data + 1, size - 1, &cfg);
  if (memxp_accept_ctrl(&ctrl) != 0) {
    abort();
  }
  session_init(&s, &ctrl);
  line = malloc(cap);
  if (line == NULL) {
    abort();
  }
  for (;;) {
    enum cmdio_status st = cmdio_get_line(&s, line, cap, 1000);
    if (st == CMDIO_LINE) {
      check_line(line);
      if (replies++ < 64 &&
          cmdio_reply(&s, 500, "Unknown command %s.", line) != 0) {
        abort();
      }
    } else if (st != CMDIO_TOO_LONG && st != CMDIO_BAD_BYTES) {
      break;
    }
  }
  free(line);
  show_replies();
  check_replies();
  session_free(&s);
  memxp_end();
  return 0;
}
