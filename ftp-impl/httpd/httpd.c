/* httpd.c - a static-file HTTP/1.1 server over TCP and over SCTP streams,
 * for the web study (E4): its listeners, limits and children come from
 * forkserver; each child serves one connection (httpserve), and with whole
 * answers (--write-size 0) the server serves TCP connections itself
 * (httploop). */
#include <errno.h>
#include <string.h>

#include "forkserver.h"
#include "httpdopts.h"
#include "httploop.h"
#include "httpreply.h"
#include "httpserve.h"
#include "logging.h"
#include "privs.h"
#include "str.h"
#include "sysutil.h"
#include "usx.h"

static void serve_connection(struct xp_conn *c, const struct addr *peer) {
  char who[96];
  if (addr_to_str(peer, who, sizeof who) != 0) {
    (void)str_copy(who, sizeof who, "?");
  }
  http_serve(c, who);
}

static void refuse(struct xp_conn *c, const struct addr *peer,
                   enum forkserver_refusal why, int limit) {
  struct http_reply r;
  char who[96], ip[64];
  memset(&r, 0, sizeof r);
  r.c = c;
  r.write_size = httpd_opts.write_size;
  if (addr_to_str(peer, who, sizeof who) != 0) {
    (void)str_copy(who, sizeof who, "?");
  }
  log_set_peer(who);
  if (why == REFUSE_BUSY) {
    log_line("REFUSED connection: %d clients already", limit);
  } else {
    if (addr_ip_str(peer, ip, sizeof ip) != 0) {
      (void)str_copy(ip, sizeof ip, "?");
    }
    log_line("REFUSED connection from %s: %d connections from it already", ip,
             limit);
  }
  log_set_peer("-");
  (void)http_reply_error(&r, 503);
}

static void drop_privileges(void) {
  if (httpd_opts.xp.stack == XP_STACK_USRSCTP) {
    log_line("STACK sctp usrsctp, UDP port %d, one connection at a time",
             usx_udp_port(&httpd_opts.xp));
  }
  privs_drop(httpd_opts.run_as, httpd_opts.root);
}

int main(int argc, char **argv) {
  struct forkserver_conf conf;
  sys_set_progname("httpd");
  httpd_opts_parse(argc, argv);
  if (httpd_opts.log_path != NULL && log_open(httpd_opts.log_path) != 0) {
    die("cannot open log %s: %s", httpd_opts.log_path, strerror(errno));
  }
  sys_ignore_sigpipe();
  memset(&conf, 0, sizeof conf);
  conf.listen[XP_TCP] = httpd_opts.listen_tcp;
  conf.listen[XP_SCTP] = httpd_opts.listen_sctp;
  conf.default_port = 80;
  conf.opts = &httpd_opts.xp;
  conf.max_clients = httpd_opts.max_clients;
  conf.max_per_ip = httpd_opts.max_per_ip;
  conf.max_sessions = httpd_opts.max_sessions;
  conf.serve = serve_connection;
  conf.refuse = refuse;
  conf.on_listening = drop_privileges;
  conf.in_process = httpd_opts.xp.stack == XP_STACK_USRSCTP;
  if (httpd_opts.write_size == 0) {
    conf.loop = httploop_new(httpd_opts.max_clients);
  }
  forkserver_run(&conf);
  return 0;
}
