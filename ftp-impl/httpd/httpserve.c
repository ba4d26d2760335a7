/* httpserve.c - one connection of httpd (see httpserve.h).  Reads only as
 * much as one request head may hold, and answers each request before it
 * reads further, so a client that pipelines 10^4 requests in one write
 * costs at most one head's buffer per stream (and, served a turn at a time,
 * at most COLLECT_HIGH bytes of answers not yet sent). */
#define _GNU_SOURCE /* memmem */
#include "httpserve.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "httpdopts.h"
#include "httpmsg.h"
#include "httpreply.h"
#include "httpsend.h"
#include "httptarget.h"
#include "logging.h"
#include "str.h"
#include "sysutil.h"

#define LINGER_S 2
#define MAX_LANES 1024
/* A turn stops answering once this much waits to be sent. */
#define COLLECT_HIGH 65536
#define COLLECT_MAX (COLLECT_HIGH + 32768)

/* The requests of one stream (TCP: the connection's only one). */
struct lane {
  struct buf in;
  int64_t started_ms; /* first byte of the request being read; 0: none */
};

struct http_conn {
  struct xp_conn *c;
  struct xp_conn own; /* served a turn at a time: the loop's copy */
  char peer[96];
  struct http_targets files;
  struct lane *lanes;
  unsigned nlanes;
  int requests;
  int closing; /* the last answer said close */
  /* Served a turn at a time: answers wait in out (collect points to it),
   * the turn's state and since when it holds (a stalled send, a linger). */
  struct buf *collect;
  struct buf out;
  int paused; /* answering stopped with out full: requests still buffered */
  enum http_wait wait;
  int64_t since_ms;
};

enum { GO_ON = 0, CLOSE = 1, HAND_OFF = 2 };

static struct http_reply reply_on(const struct http_conn *k, unsigned sid) {
  struct http_reply r;
  memset(&r, 0, sizeof r);
  r.c = k->c;
  r.sid = sid;
  r.write_size = httpd_opts.write_size;
  r.collect = k->collect;
  return r;
}

static void log_request(const struct http_request *q, unsigned sid, int status,
                        uint64_t bytes) {
  if (!httpd_opts.access_log && status < 400) {
    return;
  }
  log_line("%s %.200s %d %llu stream=%u", q->method, q->target, status,
           (unsigned long long)bytes, sid);
}

/* Where a directory named without its final slash is: the target with a
 * slash after its path, its query kept. */
static int slash_target(const char *target, char *dst, size_t cap) {
  int path = (int)strcspn(target, "?#");
  return str_fmt(dst, cap, "%.*s/%s", path, target, target + path);
}

/* 301 to the directory, the request's target with its slash. */
static int redirect(const struct http_reply *r, const struct http_request *q) {
  char where[HTTP_TARGET_CAP + 2];
  if (slash_target(q->target, where, sizeof where) != 0) {
    errno = EOVERFLOW;
    return -1;
  }
  return http_reply_redirect(r, where);
}

static int refusal_status(const struct http_request *q) {
  int get = strcmp(q->method, "GET") == 0,
      head = strcmp(q->method, "HEAD") == 0;
  if (!get && !head) {
    return 405;
  }
  return q->has_body ? 400 : 0; /* a body we would have to skip */
}

/* Answer one parsed request on stream sid; more: another follows at once.
 * HAND_OFF, with nothing done, when its answer cannot be collected. */
static int answer(struct http_conn *k, const struct http_request *q,
                  unsigned sid, int more) {
  char path[HTTP_TARGET_CAP + 1];
  struct http_reply r = reply_on(k, sid);
  struct stat st;
  int fd = -1, status = refusal_status(q), rc;
  r.head_only = strcmp(q->method, "HEAD") == 0;
  r.keep_alive = q->keep_alive;
  r.more = more;
  if (status != 0) {
    r.keep_alive = 0; /* its framing is not ours to trust */
  } else if (http_target_path(q->target, path, sizeof path) != 0) {
    status = 400;
  } else {
    status = http_targets_open(&k->files, path, &fd, &st);
  }
  if (status == 200) {
    int whole = http_reply_collectable(&r, (uint64_t)st.st_size);
    if (k->collect != NULL && !whole) {
      return HAND_OFF;
    }
    if (whole && !r.head_only) {
      r.body = http_targets_body(&k->files, HTTP_REPLY_SMALL_FILE);
    }
  }
  k->requests++;
  if (k->requests >= httpd_opts.max_requests) {
    r.keep_alive = 0;
  }
  k->closing |= !r.keep_alive;
  if (status != 200) {
    log_request(q, sid, status, 0);
    rc = status == 301 ? redirect(&r, q) : http_reply_error(&r, status);
    return rc == 0 && r.keep_alive ? GO_ON : CLOSE;
  }
  /* the type of the file served: a directory's is its index's */
  rc = http_reply_file(&r, fd, (uint64_t)st.st_size,
                       http_content_type(k->files.index ? "index.html" : path));
  if (rc != 0) {
    log_line("FAIL answer to %.200s on stream %u: %s", q->target, sid,
             strerror(errno));
  }
  log_request(q, sid, rc == 0 ? 200 : 500, (uint64_t)st.st_size);
  return rc == 0 && r.keep_alive ? GO_ON : CLOSE;
}

/* Whether a whole request head waits in the lane after the one being
 * answered (its first `after` bytes), so that answer need not leave alone
 * (--cork, TCP, sent as it goes). */
static int next_head_buffered(const struct http_conn *k, const struct lane *l,
                              size_t after) {
  return httpd_opts.cork && k->c->proto == XP_TCP && k->collect == NULL &&
         memmem(l->in.data + after, l->in.len - after, "\r\n\r\n", 4) != NULL;
}

/* Answer every complete request buffered on a lane.  With --cork 1, over
 * TCP the answers to a batch of pipelined requests leave in full segments,
 * not one short one per answer (the study's server wrote each 1 KB as it
 * went: off by default).  Collecting, it stops at COLLECT_HIGH bytes of
 * answers, and hands off (HAND_OFF) at a request it cannot collect. */
static int drain_lane(struct http_conn *k, struct lane *l, unsigned sid) {
  struct http_request q;
  int status, held = 0, rc;
  k->paused = 0;
  while (l->in.len > 0) {
    if (k->collect != NULL && k->collect->len >= COLLECT_HIGH) {
      k->paused = 1;
      return GO_ON;
    }
    int r = http_parse_request(l->in.data, l->in.len, &httpd_opts.limits, &q,
                               &status);
    if (r == 0) {
      break;
    }
    if (r < 0) {
      struct http_reply e = reply_on(k, sid);
      log_line("REFUSED request on stream %u: %d", sid, status);
      k->closing = 1;
      (void)http_reply_error(&e, status);
      return CLOSE;
    }
    held = next_head_buffered(k, l, q.head_len);
    rc = answer(k, &q, sid, held); /* q points into l->in until consumed */
    if (rc == HAND_OFF) {
      return HAND_OFF;
    }
    buf_consume(&l->in, q.head_len);
    l->started_ms = l->in.len > 0 ? sys_mono_ms() : 0;
    if (rc == CLOSE) {
      return CLOSE;
    }
  }
  /* a head that looked whole was not: push what was held for it */
  return held && xp_cork(k->c, 0) != 0 ? CLOSE : GO_ON;
}

/* How long to wait for more: the oldest unfinished head's deadline, or the
 * idle limit when nothing is half-read. */
static int wait_ms(const struct http_conn *k, int *half_read) {
  int64_t deadline = 0;
  unsigned i;
  for (i = 0; i < k->nlanes; i++) {
    int64_t d = k->lanes[i].started_ms;
    if (d != 0 && (deadline == 0 || d < deadline)) {
      deadline = d;
    }
  }
  *half_read = deadline != 0;
  if (deadline == 0) {
    return httpd_opts.idle_timeout_s * 1000;
  }
  return sys_ms_left(deadline + httpd_opts.header_timeout_s * 1000);
}

/* Time ran out: a half-read head gets 408, an idle connection just ends. */
static void time_out(struct http_conn *k, int half_read) {
  unsigned i;
  for (i = 0; half_read && i < k->nlanes; i++) {
    if (k->lanes[i].started_ms != 0) {
      struct http_reply e = reply_on(k, i);
      log_line("TIMEOUT request head on stream %u", i);
      (void)http_reply_error(&e, 408);
    }
  }
  k->closing = 1;
}

/* Read what arrived into its stream's lane, without waiting.  The lane's
 * stream, -1 when the connection ended or failed, -2 when nothing was
 * there. */
static long read_some(struct http_conn *k) {
  char tmp[8192];
  unsigned sid = 0;
  int eor = 0;
  struct lane *l;
  size_t room = k->c->proto == XP_TCP
                    ? httpd_opts.limits.max_head - k->lanes[0].in.len
                    : sizeof tmp;
  size_t want = room < sizeof tmp ? room : sizeof tmp;
  ssize_t n = xp_recv_nowait(k->c, tmp, want, &sid, &eor);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    return -2;
  }
  if (n <= 0) {
    return -1;
  }
  if (sid >= k->nlanes) {
    log_line("REFUSED request on stream %u of %u", sid, k->nlanes);
    return -1;
  }
  l = &k->lanes[sid];
  if (l->in.len == 0) {
    l->started_ms = sys_mono_ms();
  }
  if (buf_append(&l->in, tmp, (size_t)n) != 0) {
    struct http_reply e = reply_on(k, sid);
    k->closing = 1;
    (void)http_reply_error(&e, 431);
    return -1;
  }
  return (long)sid;
}

static void serve_loop(struct http_conn *k) {
  for (;;) {
    int half_read;
    int ms = wait_ms(k, &half_read);
    long sid;
    int ready = ms > 0 ? sys_wait_fd(k->c->fd, POLLIN, ms) : 0;
    if (ready < 0) {
      return;
    }
    if (ready == 0) {
      time_out(k, half_read);
      return;
    }
    /* not a blocking read: on usrsctp the eventfd also wakes for what the
     * transport takes itself (a notification), and a read that then
     * blocked would outwait the loop's own limits */
    sid = read_some(k);
    if (sid == -2) {
      continue;
    }
    if (sid < 0 || drain_lane(k, &k->lanes[sid], (unsigned)sid) == CLOSE) {
      return;
    }
  }
}

/* The answers sent, stop reading without resetting them away: a close with
 * unread requests queued would send a TCP RST that can destroy answers
 * still in flight (the lingering close of RFC 9112 9.6). */
static void linger_close(struct xp_conn *c) {
  int64_t deadline = sys_mono_ms() + LINGER_S * 1000;
  if (xp_shutdown_write(c) == 0) {
    while (sys_wait_fd(c->fd, POLLIN, sys_ms_left(deadline)) > 0 &&
           xp_drop_queued(c) == 0) {
    }
  }
  xp_close(c);
}

static unsigned lane_count(const struct xp_conn *c) {
  unsigned in = 1, out = 1;
  if (c->proto == XP_SCTP && xp_streams(c, &in, &out) != 0) {
    return 1;
  }
  in = in < out ? in : out;
  return in < MAX_LANES ? in : MAX_LANES;
}

/* adopt: the loop's connection, kept in k->own (k may outlive *c). */
static void conn_init(struct http_conn *k, struct xp_conn *c, int adopt,
                      const char *peer) {
  unsigned i;
  memset(k, 0, sizeof *k);
  k->own = *c;
  k->c = adopt ? &k->own : c;
  c = k->c;
  (void)str_copy(k->peer, sizeof k->peer, peer);
  log_set_peer(k->peer);
  http_targets_init(&k->files, httpd_opts.root);
  k->nlanes = lane_count(c);
  k->lanes = sys_malloc(sizeof *k->lanes * k->nlanes);
  for (i = 0; i < k->nlanes; i++) {
    buf_init(&k->lanes[i].in, httpd_opts.limits.max_head);
    k->lanes[i].started_ms = 0;
  }
  buf_init(&k->out, COLLECT_MAX);
  if (xp_stream_scheduler(c, httpd_opts.round_robin) != 0) {
    log_line("FAIL %s stream scheduler: %s",
             httpd_opts.round_robin ? "round-robin" : "first-come",
             strerror(errno));
  }
  log_line("CONNECT %s streams=%u", xp_proto_name(c->proto), k->nlanes);
}

static void conn_release(struct http_conn *k) {
  unsigned i;
  for (i = 0; i < k->nlanes; i++) {
    buf_free(&k->lanes[i].in);
  }
  free(k->lanes);
  buf_free(&k->out);
  http_targets_close(&k->files);
}

void http_serve(struct xp_conn *c, const char *peer) {
  struct http_conn k;
  conn_init(&k, c, 0, peer);
  serve_loop(&k);
  log_line("CLOSE after %d requests", k.requests);
  linger_close(c);
  conn_release(&k);
}

/* ---- a turn at a time (httploop) ---- */

struct http_conn *http_conn_new(struct xp_conn *c, const char *peer) {
  struct http_conn *k = sys_malloc(sizeof *k);
  conn_init(k, c, 1, peer);
  k->collect = &k->out;
  k->wait = HTTP_WAIT_READ;
  k->since_ms = sys_mono_ms();
  return k;
}

static enum http_wait wait_for(struct http_conn *k, enum http_wait w) {
  if (w != k->wait) {
    k->wait = w;
    k->since_ms = sys_mono_ms();
  }
  return w;
}

/* Send what waits without waiting.  Done: the answers sent and closing. */
static enum http_wait flush(struct http_conn *k) {
  while (k->out.len > 0) {
    ssize_t n = xp_send_nowait(k->c, k->out.data, k->out.len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return wait_for(k, HTTP_WAIT_WRITE);
    }
    if (n <= 0) {
      log_line("FAIL send: %s", strerror(errno));
      return wait_for(k, HTTP_WAIT_NONE);
    }
    buf_consume(&k->out, (size_t)n);
    k->since_ms = sys_mono_ms(); /* a slow reader that reads is not stalled */
  }
  if (k->closing) {
    return wait_for(k, xp_shutdown_write(k->c) == 0 ? HTTP_WAIT_LINGER
                                                    : HTTP_WAIT_NONE);
  }
  return wait_for(k, HTTP_WAIT_READ);
}

/* Answer what is buffered, send, again while answering paused on a full
 * out and the send emptied it. */
static enum http_wait advance(struct http_conn *k) {
  for (;;) {
    enum http_wait w;
    if (!k->closing) {
      int rc = drain_lane(k, &k->lanes[0], 0);
      if (rc == HAND_OFF) {
        return wait_for(k, HTTP_HAND_OFF);
      }
      k->closing |= rc == CLOSE;
    }
    w = flush(k);
    if (w != HTTP_WAIT_READ || !k->paused) {
      return w;
    }
  }
}

enum http_wait http_conn_readable(struct http_conn *k) {
  long sid;
  log_set_peer(k->peer);
  if (k->wait == HTTP_WAIT_LINGER) {
    return xp_drop_queued(k->c) ? wait_for(k, HTTP_WAIT_NONE) : k->wait;
  }
  if (k->wait != HTTP_WAIT_READ) {
    return k->wait;
  }
  sid = read_some(k);
  if (sid == -2) {
    return k->wait;
  }
  if (sid < 0) {
    /* the peer's end, or an answer (431) to send before closing */
    k->closing = 1;
    return k->out.len > 0 ? flush(k) : wait_for(k, HTTP_WAIT_NONE);
  }
  return advance(k);
}

enum http_wait http_conn_writable(struct http_conn *k) {
  log_set_peer(k->peer);
  return k->wait == HTTP_WAIT_WRITE ? advance(k) : k->wait;
}

int64_t http_conn_deadline(const struct http_conn *k) {
  int64_t started = k->lanes[0].started_ms;
  switch (k->wait) {
  case HTTP_WAIT_READ:
    return started != 0 ? started + httpd_opts.header_timeout_s * 1000
                        : k->since_ms + httpd_opts.idle_timeout_s * 1000;
  case HTTP_WAIT_WRITE: return k->since_ms + httpd_opts.idle_timeout_s * 1000;
  case HTTP_WAIT_LINGER: return k->since_ms + LINGER_S * 1000;
  default: return k->since_ms;
  }
}

enum http_wait http_conn_expired(struct http_conn *k) {
  log_set_peer(k->peer);
  if (k->wait == HTTP_WAIT_READ) {
    time_out(k, k->lanes[0].started_ms != 0);
    return flush(k);
  }
  if (k->wait == HTTP_WAIT_WRITE) {
    log_line("TIMEOUT send: %zu bytes not taken", k->out.len);
  }
  return wait_for(k, HTTP_WAIT_NONE);
}

int http_conn_fd(const struct http_conn *k) { return k->c->fd; }

void http_conn_continue(struct http_conn *k) {
  int go_on;
  log_set_peer(k->peer);
  k->collect = NULL;
  go_on =
      k->out.len == 0 || http_send(k->c, k->out.data, k->out.len, 0, 0) == 0;
  buf_clear(&k->out);
  if (go_on && drain_lane(k, &k->lanes[0], 0) == GO_ON) {
    serve_loop(k);
  }
  log_line("CLOSE after %d requests", k->requests);
  linger_close(k->c);
  conn_release(k);
  free(k);
  _exit(0);
}

void http_conn_free(struct http_conn *k, int ended) {
  if (ended) {
    log_set_peer(k->peer);
    log_line("CLOSE after %d requests", k->requests);
  }
  xp_close(k->c);
  conn_release(k);
  free(k);
}
