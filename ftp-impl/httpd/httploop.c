/* httploop.c - httpd's event loop (see httploop.h).  Level-triggered epoll:
 * a connection waits for reading or for writing, never both, so a client
 * that does not read its answers is not read from either. */
#include "httploop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "httpdopts.h"
#include "httpserve.h"
#include "logging.h"
#include "str.h"
#include "sysutil.h"

#define EVENTS_PER_STEP 64

struct slot {
  struct http_conn *k;
  struct addr peer;
  uint32_t events; /* what epoll watches for it */
  int at;          /* its index in loop.slots */
};

static struct {
  struct forkserver_loop api;
  struct slot **slots;
  int nslots;
  const struct slot *handed; /* being handed off: the child keeps it */
} loop;

static uint32_t events_for(enum http_wait w) {
  return w == HTTP_WAIT_WRITE ? EPOLLOUT : EPOLLIN;
}

static int adopt(struct xp_conn *c, const struct addr *peer) {
  struct epoll_event ev;
  struct slot *s;
  char who[96];
  if (c->proto != XP_TCP || httpd_opts.write_size != 0) {
    return 0;
  }
  s = sys_malloc(sizeof *s);
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN;
  ev.data.ptr = s;
  if (epoll_ctl(loop.api.fd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
    log_line("FAIL epoll add: %s", strerror(errno));
    free(s);
    return 0; /* a child of its own, then */
  }
  if (addr_to_str(peer, who, sizeof who) != 0) {
    (void)str_copy(who, sizeof who, "?");
  }
  s->k = http_conn_new(c, who);
  s->peer = *peer;
  s->events = EPOLLIN;
  s->at = loop.nslots;
  loop.slots[loop.nslots++] = s;
  return 1;
}

static void forget(int i) {
  struct slot *s = loop.slots[i];
  loop.slots[i] = loop.slots[--loop.nslots];
  loop.slots[i]->at = i;
  free(s);
}

/* Fork the process that goes on with slot i's connection. */
static void hand_off(int i) {
  struct slot *s = loop.slots[i];
  pid_t pid;
  loop.handed = s;
  pid = forkserver_hand_off(&s->peer);
  loop.handed = NULL;
  if (pid == 0) {
    http_conn_continue(s->k);
  }
  http_conn_free(s->k, pid < 0);
  if (pid < 0) {
    forkserver_adopted_ended(&s->peer);
  }
  forget(i);
}

/* Act on what slot i's connection waits for now; 1 when the slot is gone. */
static int apply(int i, enum http_wait w) {
  struct slot *s = loop.slots[i];
  int fd = http_conn_fd(s->k);
  struct epoll_event ev;
  if (w == HTTP_WAIT_NONE || w == HTTP_HAND_OFF) {
    /* explicitly: a child may hold the same socket, and epoll forgets it
       only when every descriptor of it is closed */
    (void)epoll_ctl(loop.api.fd, EPOLL_CTL_DEL, fd, NULL);
    if (w == HTTP_HAND_OFF) {
      hand_off(i);
    } else {
      http_conn_free(s->k, 1);
      forkserver_adopted_ended(&s->peer);
      forget(i);
    }
    return 1;
  }
  if (events_for(w) != s->events) {
    memset(&ev, 0, sizeof ev);
    ev.events = events_for(w);
    ev.data.ptr = s;
    if (epoll_ctl(loop.api.fd, EPOLL_CTL_MOD, fd, &ev) != 0) {
      log_line("FAIL epoll: %s", strerror(errno));
      return apply(i, HTTP_WAIT_NONE);
    }
    s->events = ev.events;
  }
  return 0;
}

static void on_event(const struct epoll_event *ev) {
  const struct slot *s = ev->data.ptr;
  int i = s->at;
  if (s->events == EPOLLOUT) {
    (void)apply(i, http_conn_writable(s->k));
  } else {
    (void)apply(i, http_conn_readable(s->k));
  }
}

static void expire_due(void) {
  int64_t now = sys_mono_ms();
  int i = 0;
  while (i < loop.nslots) {
    struct http_conn *k = loop.slots[i]->k;
    if (http_conn_deadline(k) > now || !apply(i, http_conn_expired(k))) {
      i++;
    }
  }
}

static void step(void) {
  struct epoll_event evs[EVENTS_PER_STEP];
  int n = epoll_wait(loop.api.fd, evs, EVENTS_PER_STEP, 0), j;
  if (n < 0 && errno != EINTR) {
    die("epoll_wait: %s", strerror(errno));
  }
  for (j = 0; j < n; j++) {
    on_event(&evs[j]);
  }
  expire_due();
}

static int wait_ms(void) {
  int64_t first = 0;
  int i;
  for (i = 0; i < loop.nslots; i++) {
    int64_t d = http_conn_deadline(loop.slots[i]->k);
    if (i == 0 || d < first) {
      first = d;
    }
  }
  return loop.nslots == 0 ? -1 : sys_ms_left(first);
}

static void in_child(void) {
  int i;
  sys_close(loop.api.fd);
  for (i = 0; i < loop.nslots; i++) {
    if (loop.slots[i] != loop.handed) {
      http_conn_free(loop.slots[i]->k, 0);
      free(loop.slots[i]);
    }
  }
  loop.nslots = 0;
}

const struct forkserver_loop *httploop_new(int max_clients) {
  loop.api.fd = epoll_create1(EPOLL_CLOEXEC);
  if (loop.api.fd < 0) {
    die("epoll_create1: %s", strerror(errno));
  }
  loop.api.adopt = adopt;
  loop.api.wait_ms = wait_ms;
  loop.api.step = step;
  loop.api.in_child = in_child;
  loop.slots = sys_malloc(sizeof *loop.slots * (size_t)max_clients);
  return &loop.api;
}
