/* httpserve.c - one connection of httpd (see httpserve.h).  Reads only as
 * much as one request head may hold, and answers each request before it
 * reads further, so a client that pipelines 10^4 requests in one write
 * costs at most one head's buffer per stream. */
#define _GNU_SOURCE /* memmem */
#include "httpserve.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "httpdopts.h"
#include "httpmsg.h"
#include "httpreply.h"
#include "httptarget.h"
#include "logging.h"
#include "str.h"
#include "sysutil.h"

#define LINGER_S 2
#define MAX_LANES 1024

/* The requests of one stream (TCP: the connection's only one). */
struct lane {
  struct buf in;
  int64_t started_ms; /* first byte of the request being read; 0: none */
};

struct conn {
  struct xp_conn *c;
  struct http_targets files;
  struct lane *lanes;
  unsigned nlanes;
  int requests;
  int closing; /* the last answer said close */
};

enum { GO_ON = 0, CLOSE = 1 };

static void log_request(const struct http_request *q, unsigned sid, int status,
                        uint64_t bytes) {
  if (!httpd_opts.access_log && status < 400) {
    return;
  }
  log_line("%s %.200s %d %llu stream=%u", q->method, q->target, status,
           (unsigned long long)bytes, sid);
}

static int refusal_status(const struct http_request *q) {
  int get = strcmp(q->method, "GET") == 0,
      head = strcmp(q->method, "HEAD") == 0;
  if (!get && !head) {
    return 405;
  }
  return q->has_body ? 400 : 0; /* a body we would have to skip */
}

/* Answer one parsed request on stream sid; more: another follows at once. */
static int answer(struct conn *k, const struct http_request *q, unsigned sid,
                  int more) {
  char path[HTTP_TARGET_CAP + 1];
  struct http_reply r = {
      k->c,          sid, httpd_opts.write_size, strcmp(q->method, "HEAD") == 0,
      q->keep_alive, more};
  struct stat st;
  int fd = -1, status = refusal_status(q), rc;
  k->requests++;
  if (status != 0) {
    r.keep_alive = 0; /* its framing is not ours to trust */
  } else if (http_target_path(q->target, path, sizeof path) != 0) {
    status = 400;
  } else {
    status = http_targets_open(&k->files, path, &fd, &st);
  }
  if (k->requests >= httpd_opts.max_requests) {
    r.keep_alive = 0;
  }
  k->closing |= !r.keep_alive;
  if (status != 200) {
    log_request(q, sid, status, 0);
    return http_reply_error(&r, status) == 0 && r.keep_alive ? GO_ON : CLOSE;
  }
  rc = http_reply_file(&r, fd, (uint64_t)st.st_size,
                       http_content_type(q->target));
  if (rc != 0) {
    log_line("FAIL answer to %.200s on stream %u: %s", q->target, sid,
             strerror(errno));
  }
  log_request(q, sid, rc == 0 ? 200 : 500, (uint64_t)st.st_size);
  return rc == 0 && r.keep_alive ? GO_ON : CLOSE;
}

/* Whether a whole request head waits in the lane after the one being
 * answered, so that answer need not leave alone (--cork, TCP). */
static int next_head_buffered(const struct conn *k, const struct lane *l) {
  return httpd_opts.cork && k->c->proto == XP_TCP &&
         memmem(l->in.data, l->in.len, "\r\n\r\n", 4) != NULL;
}

/* Answer every complete request buffered on a lane.  With --cork 1, over
 * TCP the answers to a batch of pipelined requests leave in full segments,
 * not one short one per answer (the study's server wrote each 1 KB as it
 * went: off by default). */
static int drain_lane(struct conn *k, struct lane *l, unsigned sid) {
  struct http_request q;
  int status, held = 0;
  while (l->in.len > 0) {
    int r = http_parse_request(l->in.data, l->in.len, &httpd_opts.limits, &q,
                               &status);
    if (r == 0) {
      break;
    }
    if (r < 0) {
      struct http_reply e = {k->c, sid, httpd_opts.write_size, 0, 0, 0};
      log_line("REFUSED request on stream %u: %d", sid, status);
      k->closing = 1;
      (void)http_reply_error(&e, status);
      return CLOSE;
    }
    buf_consume(&l->in, q.head_len);
    l->started_ms = l->in.len > 0 ? sys_mono_ms() : 0;
    held = next_head_buffered(k, l);
    if (answer(k, &q, sid, held) == CLOSE) {
      return CLOSE;
    }
  }
  /* a head that looked whole was not: push what was held for it */
  return held && xp_cork(k->c, 0) != 0 ? CLOSE : GO_ON;
}

/* How long to wait for more: the oldest unfinished head's deadline, or the
 * idle limit when nothing is half-read. */
static int wait_ms(const struct conn *k, int *half_read) {
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
static void time_out(struct conn *k, int half_read) {
  unsigned i;
  for (i = 0; half_read && i < k->nlanes; i++) {
    if (k->lanes[i].started_ms != 0) {
      struct http_reply e = {k->c, i, httpd_opts.write_size, 0, 0, 0};
      log_line("TIMEOUT request head on stream %u", i);
      (void)http_reply_error(&e, 408);
    }
  }
  k->closing = 1;
}

/* Read what arrived into its stream's lane.  The lane's stream, or -1 when
 * the connection ended or failed. */
static long read_some(struct conn *k) {
  char tmp[8192];
  unsigned sid = 0;
  int eor = 0;
  struct lane *l;
  size_t room = k->c->proto == XP_TCP
                    ? httpd_opts.limits.max_head - k->lanes[0].in.len
                    : sizeof tmp;
  ssize_t n =
      xp_recv(k->c, tmp, room < sizeof tmp ? room : sizeof tmp, &sid, &eor);
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
    struct http_reply e = {k->c, sid, httpd_opts.write_size, 0, 0, 0};
    (void)http_reply_error(&e, 431);
    return -1;
  }
  return (long)sid;
}

static void serve_loop(struct conn *k) {
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
    sid = read_some(k);
    if (sid < 0 || drain_lane(k, &k->lanes[sid], (unsigned)sid) == CLOSE) {
      return;
    }
  }
}

/* The answers sent, stop reading without resetting them away: a close with
 * unread requests queued would send a TCP RST that can destroy answers
 * still in flight (the lingering close of RFC 9112 9.6). */
static void linger_close(struct xp_conn *c) {
  char sink[4096];
  int64_t deadline = sys_mono_ms() + LINGER_S * 1000;
  unsigned sid;
  int eor;
  if (xp_shutdown_write(c) == 0) {
    while (sys_wait_fd(c->fd, POLLIN, sys_ms_left(deadline)) > 0 &&
           xp_recv(c, sink, sizeof sink, &sid, &eor) > 0) {
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

void http_serve(struct xp_conn *c, const char *peer) {
  struct conn k;
  unsigned i;
  log_set_peer(peer);
  memset(&k, 0, sizeof k);
  k.c = c;
  http_targets_init(&k.files, httpd_opts.root);
  k.nlanes = lane_count(c);
  k.lanes = sys_malloc(sizeof *k.lanes * k.nlanes);
  for (i = 0; i < k.nlanes; i++) {
    buf_init(&k.lanes[i].in, httpd_opts.limits.max_head);
    k.lanes[i].started_ms = 0;
  }
  if (httpd_opts.round_robin && xp_round_robin_streams(c) != 0) {
    log_line("FAIL round-robin stream scheduler: %s", strerror(errno));
  }
  log_line("CONNECT %s streams=%u", xp_proto_name(c->proto), k.nlanes);
  serve_loop(&k);
  log_line("CLOSE after %d requests", k.requests);
  linger_close(c);
  for (i = 0; i < k.nlanes; i++) {
    buf_free(&k.lanes[i].in);
  }
  free(k.lanes);
  http_targets_close(&k.files);
}
