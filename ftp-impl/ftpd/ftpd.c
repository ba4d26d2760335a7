/* ftpd.c - the FTP server's main process: its listeners, limits and
 * children come from forkserver; each child runs one session. */
#include <errno.h>
#include <string.h>

#include "forkserver.h"
#include "logging.h"
#include "privs.h"
#include "sessionloop.h"
#include "sysutil.h"
#include "tunables.h"
#include "usx.h"

static void serve_session(struct xp_conn *c, const struct addr *peer) {
  struct session s;
  (void)peer;
  session_init(&s, c);
  session_run(&s);
  session_free(&s);
}

static void refuse(struct xp_conn *c, const struct addr *peer,
                   enum forkserver_refusal why, int limit) {
  static const char busy[] =
      "421 There are too many connected users, please try later.\r\n";
  static const char address[] =
      "421 There are too many connections from your internet address.\r\n";
  char who[96];
  if (why == REFUSE_BUSY) {
    log_line("REFUSED connection: %d clients already", limit);
    (void)xp_send(c, busy, sizeof busy - 1, 0);
    return;
  }
  (void)addr_ip_str(peer, who, sizeof who);
  log_line("REFUSED connection from %s: %d sessions from it already", who,
           limit);
  (void)xp_send(c, address, sizeof address - 1, 0);
}

static void drop_privileges(void) {
  log_line("ROOT %s", tunables.root);
  log_line("LIMITS open-timeout %d s, data-timeout %d s, idle-timeout %d s",
           tunables.open_timeout_s, tunables.data_timeout_s,
           tunables.idle_timeout_s);
  if (tunables.ctrl_opts.stack == XP_STACK_USRSCTP) {
    log_line("STACK sctp usrsctp, UDP port %d, one session at a time",
             usx_udp_port(&tunables.ctrl_opts));
  }
  privs_drop(tunables.run_as, tunables.root);
}

int main(int argc, char **argv) {
  struct forkserver_conf conf;
  sys_set_progname("ftpd");
  tunables_defaults();
  tunables_parse_args(argc, argv);
  if (log_open(tunables.log_file) != 0) {
    die("cannot open log %s: %s", tunables.log_file, strerror(errno));
  }
  sys_ignore_sigpipe();
  memset(&conf, 0, sizeof conf);
  conf.listen[XP_TCP] = tunables.tcp_listen;
  conf.listen[XP_SCTP] = tunables.sctp_listen;
  conf.default_port = 21;
  conf.opts = &tunables.ctrl_opts;
  conf.max_clients = tunables.max_clients;
  conf.max_per_ip = tunables.max_per_ip;
  conf.max_sessions = tunables.max_sessions;
  conf.serve = serve_session;
  conf.refuse = refuse;
  conf.on_listening = drop_privileges;
  conf.in_process = tunables.ctrl_opts.stack == XP_STACK_USRSCTP;
  forkserver_run(&conf);
  return 0;
}
