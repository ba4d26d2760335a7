/* fuzz_session.c - a whole ftpd session, from the greeting to QUIT or the
 * end of input, replayed against the in-memory transport (memxp.h): every
 * command and argument goes through session.c's dispatch into prelogin.c,
 * postlogin.c, dataio.c, ls.c and confine.c, as in the real server, over a
 * small served tree (tree.h) with uploads allowed and a named account
 * (user "u", password "p") beside anonymous.
 *
 * In: byte 0 settings (memxp_cfg_from_byte: TCP or SCTP, streams, receive
 * piece size, data connections from a foreign host or refused), then the
 * client's side of the session (memxp.h: control lines, 0x01 lines data).
 * Out: nothing; aborts when a reply breaks the reply grammar (checks.h) or
 * a descriptor is left open. */
#include <stdint.h>
#include <stdlib.h>

#include "checks.h"
#include "logging.h"
#include "memxp.h"
#include "sessionloop.h"
#include "str.h"
#include "tree.h"
#include "tunables.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  tunables_defaults();
  if (str_copy(tunables.root, sizeof tunables.root, tree_make()) != 0 ||
      log_open("/dev/null") != 0) {
    abort();
  }
  tunables.allow_upload = 1;
  (void)str_copy(tunables.user, sizeof tunables.user, "u");
  (void)str_copy(tunables.pass, sizeof tunables.pass, "p");
  tunables.max_line = 512;
  tunables.idle_timeout_s = 1;
  tunables.data_timeout_s = 1;
  tunables.open_timeout_s = 1;
  tunables.max_listing = 1u << 20;
  tunables.chunk = 4096;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct memxp_cfg cfg;
  struct xp_conn ctrl;
  struct session s;
  int fd_before;
  if (size == 0) {
    return 0;
  }
  fd_before = lowest_free_fd();
  memxp_cfg_from_byte(data[0], &cfg);
  memxp_begin(data + 1, size - 1, &cfg);
  if (memxp_accept_ctrl(&ctrl) != 0) {
    abort();
  }
  session_init(&s, &ctrl);
  session_run(&s);
  session_free(&s);
  show_replies();
  check_replies();
  memxp_end();
  if (lowest_free_fd() != fd_before) {
    abort(); /* the session left a descriptor open */
  }
  tree_restore();
  return 0;
}
