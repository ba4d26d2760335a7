/* forkserver.c - listen, fork per connection, reap (see forkserver.h).
 * A connection the loop serves holds a slot with pid 0 until it ends or a
 * child takes it over. */
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

/* A refused connection's last moments: our end sent, the peer's request
 * read and dropped until its end, so that the close sends no reset that
 * could destroy the refusal on its way (the lingering close of RFC 9112
 * 9.6).  A few at a time; past that, closed at once. */
#define LINGER_SLOTS 32
#define LINGER_MS 2000

struct listener {
  int fd;
  enum xp_proto proto;
};

struct lingering {
  struct xp_conn c;
  int64_t until;
};

struct server {
  const struct forkserver_conf *conf;
  struct listener l[2];
  int nl;
  int sigfd;
  sigset_t old_mask;
  pid_t *children;    /* 0: a connection the loop serves */
  struct addr *peers; /* peer of each child, for max_per_ip */
  int nchildren;
  long started;
  long ended;
  struct lingering lingering[LINGER_SLOTS];
  int nlingering;
};

/* The server forkserver_run runs, for the loop's calls back. */
static struct server *running;

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

static void child_setup(struct server *sv) {
  int i;
  for (i = 0; i < sv->nl; i++) {
    sys_close(sv->l[i].fd);
  }
  sys_close(sv->sigfd);
  for (i = 0; i < sv->nlingering; i++) {
    xp_close(&sv->lingering[i].c);
  }
  sv->nlingering = 0;
  if (sigprocmask(SIG_SETMASK, &sv->old_mask, NULL) != 0) {
    _exit(2);
  }
  if (sv->conf->loop != NULL) {
    sv->conf->loop->in_child();
  }
  running = NULL;
}

static void child_main(struct server *sv, struct xp_conn *c,
                       const struct addr *peer) {
  child_setup(sv);
  sv->conf->serve(c, peer);
  _exit(0);
}

/* The connection served here, with the signals as a child has them: a
 * SIGTERM ends the server mid-session as it would end a child. */
static void serve_here(struct server *sv, struct xp_conn *c,
                       const struct addr *peer) {
  sigset_t blocked;
  sv->started++;
  if (sigprocmask(SIG_SETMASK, &sv->old_mask, &blocked) != 0) {
    die("sigprocmask: %s", strerror(errno));
  }
  sv->conf->serve(c, peer);
  if (sigprocmask(SIG_SETMASK, &blocked, NULL) != 0) {
    die("sigprocmask: %s", strerror(errno));
  }
  sv->ended++;
}

static void linger(struct server *sv, struct xp_conn *c) {
  struct lingering *l = &sv->lingering[sv->nlingering];
  if (sv->nlingering == LINGER_SLOTS || xp_shutdown_write(c) != 0) {
    xp_close(c);
    return;
  }
  l->c = *c;
  l->until = sys_mono_ms() + LINGER_MS;
  sv->nlingering++;
}

/* Drop what the lingering peers sent; close those that ended or ran out
 * of time.  ready[i]: lingering[i] polled readable. */
static void linger_step(struct server *sv, const struct pollfd *ready) {
  int64_t now = sys_mono_ms();
  int i, kept = 0;
  for (i = 0; i < sv->nlingering; i++) {
    struct lingering *l = &sv->lingering[i];
    int over = now >= l->until;
    if (!over && ready[i].revents != 0) {
      over = xp_drop_queued(&l->c);
    }
    if (over) {
      xp_close(&l->c);
    } else {
      sv->lingering[kept++] = *l;
    }
  }
  sv->nlingering = kept;
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
  linger(sv, c);
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
  if (sv->conf->loop != NULL && sv->conf->loop->adopt(&c, &peer)) {
    sv->peers[sv->nchildren] = peer;
    sv->children[sv->nchildren++] = 0;
    sv->started++;
    return;
  }
  if (sv->conf->in_process) {
    serve_here(sv, &c, &peer);
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

static void forget_slot(struct server *sv, int i) {
  sv->children[i] = sv->children[--sv->nchildren];
  sv->peers[i] = sv->peers[sv->nchildren];
  sv->ended++;
}

static void forget_child(struct server *sv, pid_t pid) {
  int i;
  for (i = 0; i < sv->nchildren; i++) {
    if (sv->children[i] == pid) {
      forget_slot(sv, i);
      return;
    }
  }
}

/* A slot of the loop's from peer's host (which of them does not matter:
 * only their count per host does). */
static int adopted_slot(const struct server *sv, const struct addr *peer) {
  int i;
  for (i = 0; i < sv->nchildren; i++) {
    if (sv->children[i] == 0 && addr_same_host(&sv->peers[i], peer)) {
      return i;
    }
  }
  return -1;
}

void forkserver_adopted_ended(const struct addr *peer) {
  int i = running != NULL ? adopted_slot(running, peer) : -1;
  if (i >= 0) {
    forget_slot(running, i);
  }
}

pid_t forkserver_hand_off(const struct addr *peer) {
  struct server *sv = running;
  pid_t pid;
  int i;
  fflush(stdout);
  pid = fork();
  if (pid < 0) {
    log_line("FAIL fork: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    child_setup(sv);
    return 0;
  }
  i = adopted_slot(sv, peer);
  if (i >= 0) {
    sv->children[i] = pid;
  }
  return pid;
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
    if (sv->children[i] > 0) { /* 0: the loop's, ends with this process */
      (void)kill(sv->children[i], SIGTERM);
    }
  }
}

static int done(const struct server *sv) {
  return sv->conf->max_sessions > 0 && sv->ended >= sv->conf->max_sessions;
}

/* How long poll may sleep: until the loop's next deadline or the first
 * lingering connection's. */
static int wait_ms(const struct server *sv) {
  int ms = sv->conf->loop != NULL ? sv->conf->loop->wait_ms() : -1;
  int i;
  for (i = 0; i < sv->nlingering; i++) {
    int left = sys_ms_left(sv->lingering[i].until);
    if (ms < 0 || left < ms) {
      ms = left;
    }
  }
  return ms;
}

static void serve_forever(struct server *sv) {
  const struct forkserver_loop *loop = sv->conf->loop;
  int i;
  while (!done(sv)) {
    struct pollfd p[4 + LINGER_SLOTS];
    struct pollfd *lp = &p[2 + sv->nl];
    int accepting =
        sv->conf->max_sessions == 0 || sv->started < sv->conf->max_sessions;
    p[0].fd = sv->sigfd;
    p[0].events = POLLIN;
    for (i = 0; i < sv->nl; i++) {
      p[1 + i].fd = accepting ? sv->l[i].fd : -1;
      p[1 + i].events = POLLIN;
    }
    p[1 + sv->nl].fd = loop != NULL ? loop->fd : -1;
    p[1 + sv->nl].events = POLLIN;
    for (i = 0; i < sv->nlingering; i++) {
      lp[i].fd = sv->lingering[i].c.fd;
      lp[i].events = POLLIN;
    }
    if (sys_poll(p, (nfds_t)(2 + sv->nl + sv->nlingering), wait_ms(sv)) < 0) {
      die("poll: %s", strerror(errno));
    }
    linger_step(sv, lp);
    if (loop != NULL) {
      loop->step();
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
  int i;
  memset(&sv, 0, sizeof sv);
  sv.conf = conf;
  running = &sv;
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
  running = NULL;
  for (i = 0; i < sv.nlingering; i++) {
    xp_close(&sv.lingering[i].c);
  }
  free(sv.children);
  free(sv.peers);
}
