/* ftpd.c - the server's main process: listens on TCP and SCTP at once,
 * forks one process per client (like vsftpd's standalone mode), enforces
 * the client limit and reaps children.  Waits only in poll(), woken by new
 * connections and by signals through a signalfd. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftpcodes.h"
#include "logging.h"
#include "privs.h"
#include "session.h"
#include "sysutil.h"
#include "tunables.h"

struct listener {
  int fd;
  enum xp_proto proto;
};

struct server {
  struct listener l[2];
  int nl;
  int sigfd;
  pid_t *children;
  struct addr *peers; /* control peer of each child, for --max-per-ip */
  int nchildren;
  long started;
  long ended;
};

static void open_listener(struct server *sv, const char *spec,
                          enum xp_proto p) {
  struct addr a;
  struct xp_conn c;
  char where[96];
  if (spec[0] == '\0') {
    return;
  }
  if (addr_parse_hostport(spec, 21, &a) != 0) {
    die("cannot parse listen address %s", spec);
  }
  c.fd = xp_listen(p, &a, &tunables.ctrl_opts, 128);
  if (c.fd < 0) {
    die("cannot listen on %s %s: %s", xp_proto_name(p), spec, strerror(errno));
  }
  c.proto = p;
  if (xp_local_addr(&c, &a) != 0 || addr_to_str(&a, where, sizeof where) != 0) {
    die("getsockname: %s", strerror(errno));
  }
  printf("listening %s %s\n", xp_proto_name(p), where);
  log_line("LISTEN %s %s root=%s", xp_proto_name(p), where, tunables.root);
  sv->l[sv->nl].fd = c.fd;
  sv->l[sv->nl].proto = p;
  sv->nl++;
}

static int make_sigfd(sigset_t *old) {
  sigset_t set;
  int fd;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (sigprocmask(SIG_BLOCK, &set, old) != 0) {
    die("sigprocmask: %s", strerror(errno));
  }
  fd = signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0) {
    die("signalfd: %s", strerror(errno));
  }
  return fd;
}

static void refuse_busy(struct xp_conn *c) {
  static const char msg[] =
      "421 There are too many connected users, please try later.\r\n";
  log_line("REFUSED connection: %d clients already", tunables.max_clients);
  (void)xp_send(c, msg, sizeof msg - 1, 0);
  xp_close(c);
}

static void refuse_address(struct xp_conn *c, const struct addr *peer) {
  static const char msg[] =
      "421 There are too many connections from your internet address.\r\n";
  char who[96];
  (void)addr_ip_str(peer, who, sizeof who);
  log_line("REFUSED connection from %s: %d sessions from it already", who,
           tunables.max_per_ip);
  (void)xp_send(c, msg, sizeof msg - 1, 0);
  xp_close(c);
}

static int sessions_from(const struct server *sv, const struct addr *peer) {
  int i, n = 0;
  for (i = 0; i < sv->nchildren; i++) {
    n += addr_same_host(&sv->peers[i], peer);
  }
  return n;
}

static void child_main(struct server *sv, struct xp_conn *c,
                       const sigset_t *old) {
  struct session s;
  int i;
  for (i = 0; i < sv->nl; i++) {
    sys_close(sv->l[i].fd);
  }
  sys_close(sv->sigfd);
  if (sigprocmask(SIG_SETMASK, old, NULL) != 0) {
    _exit(2);
  }
  session_init(&s, c);
  session_run(&s);
  session_free(&s);
  _exit(0);
}

static void accept_one(struct server *sv, const struct listener *l,
                       const sigset_t *old) {
  struct xp_conn c;
  struct addr peer;
  pid_t pid;
  if (xp_accept(l->fd, l->proto, &tunables.ctrl_opts, &c, &peer) != 0) {
    log_line("FAIL accept: %s", strerror(errno));
    return;
  }
  if (sv->nchildren >= tunables.max_clients) {
    refuse_busy(&c);
    return;
  }
  if (sessions_from(sv, &peer) >= tunables.max_per_ip) {
    refuse_address(&c, &peer);
    return;
  }
  fflush(stdout);
  pid = fork();
  if (pid < 0) {
    log_line("FAIL fork: %s", strerror(errno));
    xp_close(&c);
    return;
  }
  if (pid == 0) {
    child_main(sv, &c, old);
  }
  xp_close(&c);
  sv->peers[sv->nchildren] = peer;
  sv->children[sv->nchildren++] = pid;
  sv->started++;
}

static void forget_child(struct server *sv, pid_t pid) {
  int i;
  for (i = 0; i < sv->nchildren; i++) {
    if (sv->children[i] == pid) {
      sv->children[i] = sv->children[--sv->nchildren];
      sv->peers[i] = sv->peers[sv->nchildren];
      sv->ended++;
      return;
    }
  }
}

/* Returns 1 when the server must stop. */
static int handle_signals(struct server *sv) {
  struct signalfd_siginfo si;
  int stop = 0;
  ssize_t n = sys_read(sv->sigfd, &si, sizeof si);
  if (n == (ssize_t)sizeof si &&
      (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)) {
    stop = 1;
  }
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      break;
    }
    forget_child(sv, pid);
  }
  return stop;
}

static void stop_children(struct server *sv) {
  int i;
  for (i = 0; i < sv->nchildren; i++) {
    (void)kill(sv->children[i], SIGTERM);
  }
}

static int done(const struct server *sv) {
  return tunables.max_sessions > 0 && sv->ended >= tunables.max_sessions;
}

int main(int argc, char **argv) {
  struct server sv;
  sigset_t old;
  int i;
  sys_set_progname("ftpd");
  tunables_defaults();
  tunables_parse_args(argc, argv);
  if (log_open(tunables.log_file) != 0) {
    die("cannot open log %s: %s", tunables.log_file, strerror(errno));
  }
  sys_ignore_sigpipe();
  memset(&sv, 0, sizeof sv);
  sv.children = sys_malloc(sizeof(pid_t) * (size_t)tunables.max_clients);
  sv.peers = sys_malloc(sizeof(struct addr) * (size_t)tunables.max_clients);
  sv.sigfd = make_sigfd(&old);
  open_listener(&sv, tunables.tcp_listen, XP_TCP);
  open_listener(&sv, tunables.sctp_listen, XP_SCTP);
  privs_drop(tunables.run_as, tunables.root);
  printf("ready\n");
  fflush(stdout);
  while (!done(&sv)) {
    struct pollfd p[3];
    int accepting =
        tunables.max_sessions == 0 || sv.started < tunables.max_sessions;
    p[0].fd = sv.sigfd;
    p[0].events = POLLIN;
    for (i = 0; i < sv.nl; i++) {
      p[1 + i].fd = accepting ? sv.l[i].fd : -1;
      p[1 + i].events = POLLIN;
    }
    if (sys_poll(p, (nfds_t)(1 + sv.nl), -1) < 0) {
      die("poll: %s", strerror(errno));
    }
    if ((p[0].revents & POLLIN) && handle_signals(&sv)) {
      log_line("STOP on signal");
      stop_children(&sv);
      break;
    }
    for (i = 0; i < sv.nl; i++) {
      if (p[1 + i].revents & POLLIN) {
        accept_one(&sv, &sv.l[i], &old);
      }
    }
  }
  free(sv.children);
  free(sv.peers);
  return 0;
}
