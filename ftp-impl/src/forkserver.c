/* forkserver.c - listen, fork per connection, reap (see forkserver.h). */
#define _GNU_SOURCE
#include "forkserver.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "logging.h"
#include "sysutil.h"

struct listener {
  int fd;
  enum xp_proto proto;
};

struct server {
  const struct forkserver_conf *conf;
  struct listener l[2];
  int nl;
  int sigfd;
  sigset_t old_mask;
  pid_t *children;
  struct addr *peers; /* peer of each child, for max_per_ip */
  int nchildren;
  long started;
  long ended;
};

static void open_listener(struct server *sv, enum xp_proto p) {
  const char *spec = sv->conf->listen[p];
  struct addr a;
  struct xp_conn c;
  char where[96];
  if (spec == NULL || spec[0] == '\0') {
    return;
  }
  if (addr_parse_hostport(spec, sv->conf->default_port, &a) != 0) {
    die("cannot parse listen address %s", spec);
  }
  c.fd = xp_listen(p, &a, sv->conf->opts, 128);
  if (c.fd < 0) {
    die("cannot listen on %s %s: %s", xp_proto_name(p), spec, strerror(errno));
  }
  c.proto = p;
  if (xp_local_addr(&c, &a) != 0 || addr_to_str(&a, where, sizeof where) != 0) {
    die("getsockname: %s", strerror(errno));
  }
  printf("listening %s %s\n", xp_proto_name(p), where);
  log_line("LISTEN %s %s", xp_proto_name(p), where);
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

static int sessions_from(const struct server *sv, const struct addr *peer) {
  int i, n = 0;
  for (i = 0; i < sv->nchildren; i++) {
    n += addr_same_host(&sv->peers[i], peer);
  }
  return n;
}

static void child_main(struct server *sv, struct xp_conn *c,
                       const struct addr *peer) {
  int i;
  for (i = 0; i < sv->nl; i++) {
    sys_close(sv->l[i].fd);
  }
  sys_close(sv->sigfd);
  if (sigprocmask(SIG_SETMASK, &sv->old_mask, NULL) != 0) {
    _exit(2);
  }
  sv->conf->serve(c, peer);
  _exit(0);
}

static int refused(struct server *sv, struct xp_conn *c,
                   const struct addr *peer) {
  const struct forkserver_conf *conf = sv->conf;
  if (sv->nchildren >= conf->max_clients) {
    conf->refuse(c, peer, REFUSE_BUSY, conf->max_clients);
  } else if (conf->max_per_ip > 0 &&
             sessions_from(sv, peer) >= conf->max_per_ip) {
    conf->refuse(c, peer, REFUSE_ADDRESS, conf->max_per_ip);
  } else {
    return 0;
  }
  xp_close(c);
  return 1;
}

static void accept_one(struct server *sv, const struct listener *l) {
  struct xp_conn c;
  struct addr peer;
  pid_t pid;
  if (xp_accept(l->fd, l->proto, sv->conf->opts, &c, &peer) != 0) {
    log_line("FAIL accept: %s", strerror(errno));
    return;
  }
  if (refused(sv, &c, &peer)) {
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
    child_main(sv, &c, &peer);
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
  return sv->conf->max_sessions > 0 && sv->ended >= sv->conf->max_sessions;
}

static void serve_forever(struct server *sv) {
  int i;
  while (!done(sv)) {
    struct pollfd p[3];
    int accepting =
        sv->conf->max_sessions == 0 || sv->started < sv->conf->max_sessions;
    p[0].fd = sv->sigfd;
    p[0].events = POLLIN;
    for (i = 0; i < sv->nl; i++) {
      p[1 + i].fd = accepting ? sv->l[i].fd : -1;
      p[1 + i].events = POLLIN;
    }
    if (sys_poll(p, (nfds_t)(1 + sv->nl), -1) < 0) {
      die("poll: %s", strerror(errno));
    }
    if ((p[0].revents & POLLIN) && handle_signals(sv)) {
      log_line("STOP on signal");
      stop_children(sv);
      return;
    }
    for (i = 0; i < sv->nl; i++) {
      if (p[1 + i].revents & POLLIN) {
        accept_one(sv, &sv->l[i]);
      }
    }
  }
}

void forkserver_run(const struct forkserver_conf *conf) {
  struct server sv;
  memset(&sv, 0, sizeof sv);
  sv.conf = conf;
  sv.children = sys_malloc(sizeof(pid_t) * (size_t)conf->max_clients);
  sv.peers = sys_malloc(sizeof(struct addr) * (size_t)conf->max_clients);
  sv.sigfd = make_sigfd(&sv.old_mask);
  open_listener(&sv, XP_TCP);
  open_listener(&sv, XP_SCTP);
  if (conf->on_listening != NULL) {
    conf->on_listening();
  }
  printf("ready\n");
  fflush(stdout);
  serve_forever(&sv);
  free(sv.children);
  free(sv.peers);
}
