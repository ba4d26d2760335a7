/* sessionloop.c - one client session: greeting, then read a command,
 * answer it, repeat, in order, until QUIT, EOF, timeout or a broken
 * connection. */
#include "sessionloop.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "addrparse.h"
#include "cmdio.h"
#include "dataio.h"
#include "ftpcodes.h"
#include "logging.h"
#include "postlogin.h"
#include "prelogin.h"
#include "sysutil.h"
#include "tunables.h"

void session_init(struct session *s, const struct xp_conn *ctrl) {
  memset(s, 0, sizeof *s);
  s->ctrl = *ctrl;
  s->pasv_fd = -1;
  s->pdata.fd = -1;
  s->parallel = 1;
  s->cwd[0] = '/';
  buf_init(&s->in, (size_t)tunables.max_line + (1u << 20));
}

void session_free(struct session *s) {
  dataio_reset(s);
  buf_free(&s->in);
  if (s->ctrl.fd >= 0) {
    xp_close(&s->ctrl);
  }
}

static void dispatch(struct session *s, const char *line) {
  char cmd[16], arg[PATH_MAX];
  if (str_split_cmd(line, cmd, sizeof cmd, arg, sizeof arg) != 0) {
    log_line("REFUSED overlong command or argument");
    (void)cmdio_reply(s, FTP_BADCMD, "Command or argument too long.");
    return;
  }
  if (!s->logged_in) {
    prelogin_command(s, cmd, arg);
  } else {
    postlogin_command(s, cmd, arg);
  }
}

/* One step; returns 0 to go on, -1 to end the session. */
static int step(struct session *s, char *line, size_t cap) {
  enum cmdio_status st =
      cmdio_get_line(s, line, cap, tunables.idle_timeout_s * 1000);
  switch (st) {
  case CMDIO_LINE: dispatch(s, line); return s->quit ? -1 : 0;
  case CMDIO_TOO_LONG:
    log_line("REFUSED command line longer than %d bytes", tunables.max_line);
    return cmdio_reply(s, FTP_BADCMD, "Input line too long.") == 0 ? 0 : -1;
  case CMDIO_BAD_BYTES:
    log_line("REFUSED command line with NUL bytes");
    return cmdio_reply(s, FTP_BADCMD, "Bad characters in command.") == 0 ? 0
                                                                         : -1;
  case CMDIO_TIMEOUT:
    log_line("TIMEOUT after %d s idle", tunables.idle_timeout_s);
    (void)cmdio_reply(s, FTP_IDLE_TIMEOUT, "Timeout.");
    return -1;
  case CMDIO_EOF: log_line("DISCONNECT by peer"); return -1;
  case CMDIO_ERROR:
  default: log_line("DISCONNECT on control connection error"); return -1;
  }
}

/* A multihomed SCTP association's end is every address the listener bound,
 * and getsockname names any one of them, not always the one the client
 * addressed: that one is the address ftpd serves SCTP on (--sctp), which its
 * data listeners bind first and its 227 names. */
static void local_as_served(struct session *s) {
  struct addr served;
  if (s->ctrl.proto != XP_SCTP || tunables.ctrl_opts.also_bind.n == 0 ||
      addr_parse_hostport(tunables.sctp_listen, 0, &served) != 0) {
    return;
  }
  addr_set_port(&served, addr_port(&s->local));
  s->local = served;
}

void session_run(struct session *s) {
  size_t cap = (size_t)tunables.max_line + 2;
  char *line = sys_malloc(cap);
  char peer[96];
  if (xp_local_addr(&s->ctrl, &s->local) != 0 ||
      xp_peer_addr(&s->ctrl, &s->peer) != 0) {
    free(line);
    return;
  }
  local_as_served(s);
  /* Urgent data inline: a client's ABOR sent with MSG_OOB (Python's ftplib,
   * a Telnet Synch) stays a whole line in the command stream. */
  if (s->ctrl.proto == XP_TCP &&
      sys_setsockopt_int(s->ctrl.fd, SOL_SOCKET, SO_OOBINLINE, 1) != 0) {
    free(line);
    return;
  }
  (void)addr_to_str(&s->peer, peer, sizeof peer);
  log_set_peer(peer);
  log_line("CONNECT %s", xp_proto_name(s->ctrl.proto));
  if (cmdio_reply(s, FTP_GREET, "(ftpd) ready.") == 0) {
    while (step(s, line, cap) == 0) {
    }
  }
  log_line("END after %llu transfers", (unsigned long long)s->transfers);
  free(line);
}
