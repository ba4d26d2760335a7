/* fuzz_reply.c - the client's reply reader (ctrlconn.c): replies in pieces
 * and several per receive, multi-line replies, malformed lines, stream-1
 * bytes on the control association, each reply labelled with the command
 * it answers; then the texts the client reads numbers from: the byte count
 * of a 150 (ctrl_reply_bytes), the address of a 227 and the port of a 229.
 *
 * In: byte 0 settings (memxp_cfg_from_byte), then the server's side of the
 * control connection (memxp.h).  Eight commands are pending, as after a
 * pipelined burst: USER PASS TYPE PASV NLST EPSV RETR QUIT.
 * Out: nothing; aborts when a reply breaks its contract (a code outside
 * 100-599, a label out of order, a byte count that is not in the text). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrparse.h"
#include "ctrlconn.h"
#include "memxp.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const cmds[] = {"USER", "PASS", "TYPE", "PASV",
                                   "NLST", "EPSV", "RETR", "QUIT"};
#define NCMDS (sizeof cmds / sizeof cmds[0])

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* ftpc's event lines go to stdout */
  if (freopen("/dev/null", "w", stdout) == NULL) {
    abort();
  }
  return 0;
}

static void check_reply(const struct reply *r, size_t *next_cmd) {
  unsigned long long n;
  struct addr a;
  int port;
  if (r->code < 100 || r->code > 599) {
    abort();
  }
  if (r->cmd[0] != '\0') {
    if (*next_cmd >= NCMDS || strcmp(r->cmd, cmds[*next_cmd]) != 0) {
      abort(); /* replies are labelled in the order commands were sent */
    }
    *next_cmd += r->code >= 200;
  }
  if (ctrl_reply_bytes(r, r->arg, &n) == 0 &&
      strstr(r->text, " bytes)") == NULL) {
    abort();
  }
  if (addr_parse_227(r->text, &a) == 0 && a.ss.ss_family != AF_INET) {
    abort();
  }
  if (addr_parse_229(r->text, &port) == 0 && (port < 0 || port > 65535)) {
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct memxp_cfg cfg;
  struct ctrlconn cc;
  struct addr server;
  struct xp_opts o;
  struct reply r;
  size_t i, next_cmd = 0;
  int greeting = 1;
  if (size == 0) {
    return 0;
  }
  memxp_cfg_from_byte(data[0], &cfg);
  memxp_begin(data + 1, size - 1, &cfg);
  xp_opts_default(&o);
  if (addr_parse_hostport("127.0.0.1:21", 21, &server) != 0 ||
      ctrl_open(&cc, cfg.proto, &server, NULL, &o, 1000) != 0) {
    abort();
  }
  for (;;) {
    if (ctrl_reply(&cc, &r) != 0) {
      break;
    }
    if (greeting) { /* the greeting came; now the burst of commands */
      greeting = 0;
      for (i = 0; i < NCMDS; i++) {
        if (ctrl_queue(&cc, cmds[i], i == 6 ? "a.dat" : "") != 0) {
          abort();
        }
      }
      if (ctrl_flush(&cc) != 0) {
        abort();
      }
    }
    check_reply(&r, &next_cmd);
  }
  ctrl_close(&cc);
  memxp_end();
  return 0;
}
