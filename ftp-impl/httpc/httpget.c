/* httpget.c - httpc's engine (see httpget.h). */
#include "httpget.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "httpmsg.h"
#include "localfile.h"
#include "stackevents.h"
#include "str.h"
#include "sysutil.h"

enum obj_state { PENDING, SENT, BODY, DONE };

struct object {
  int index;
  const char *target;  /* as requested */
  char path[PATH_MAX]; /* decoded, for the local name */
  enum obj_state state;
  unsigned sid;
  struct buf head;
  struct http_response_head h;
  int answered;        /* a byte of its answer has come */
  int64_t head_due_ms; /* then its whole head (1xx answers too) is due by */
  uint64_t body_got;
  double t_last; /* the read that brought its last byte so far */
  struct sink sink;
  int sink_open;
};

struct page {
  const struct httpc_opts *o;
  struct xp_conn c;
  struct object *objs;
  int nobjs;
  struct object *
      *on_stream; /* SCTP: the object whose answer a stream carries */
  unsigned streams;
  int next_in_order; /* TCP: the object whose answer comes next */
  int failed;
};

static int fail(struct page *pg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct page *pg, const char *fmt, ...) {
  char reason[512];
  struct event e;
  va_list ap;
  va_start(ap, fmt);
  (void)vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  ev_begin(&e, "error");
  ev_str(&e, "reason", reason);
  ev_end(&e);
  fprintf(stderr, "httpc: %s\n", reason);
  pg->failed = 1;
  return -1;
}

static int send_request(struct page *pg, struct object *ob, unsigned sid) {
  char req[HTTP_TARGET_CAP + 512];
  struct event e;
  if (str_fmt(req, sizeof req,
              "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: testbed-httpc\r\n"
              "Accept: */*\r\n\r\n",
              ob->target, pg->o->host) != 0) {
    return fail(pg, "request for %s too long", ob->target);
  }
  ev_begin(&e, "request");
  ev_int(&e, "object", ob->index);
  ev_str(&e, "path", ob->target);
  ev_int(&e, "stream", (int64_t)sid);
  ev_end(&e);
  if (xp_send(&pg->c, req, strlen(req), sid) != 0) {
    return fail(pg, "sending the request for %s: %s", ob->target,
                strerror(errno));
  }
  ob->state = SENT;
  ob->sid = sid;
  return 0;
}

static void first_byte_event(const struct object *ob, double t) {
  struct event e;
  ev_begin_at(&e, "first_byte", t);
  ev_int(&e, "object", ob->index);
  ev_end(&e);
}

/* Stamped with the read that brought its last byte: what follows (closing and
 * renaming the file) is the client's own time, not the transfer's. */
static int complete(struct page *pg, struct object *ob) {
  char err[256];
  struct event e;
  ob->state = DONE;
  if (ob->sink_open &&
      sink_finish(&ob->sink, ob->h.content_length, err, sizeof err) != 0) {
    ob->sink_open = 0;
    return fail(pg, "%s", err);
  }
  ob->sink_open = 0;
  ev_begin_at(&e, "complete", ob->t_last);
  ev_int(&e, "object", ob->index);
  ev_str(&e, "path", ob->target);
  ev_int(&e, "status", ob->h.status);
  ev_u64(&e, "bytes", ob->body_got);
  ev_int(&e, "stream", (int64_t)ob->sid);
  ev_end(&e);
  if (ob->h.status != 200) {
    return fail(pg, "%s: status %d", ob->target, ob->h.status);
  }
  return 0;
}

/* The head is whole: check it, open where the body goes. */
static int start_body(struct page *pg, struct object *ob) {
  char err[256];
  if (ob->h.chunked) {
    return fail(pg, "%s: chunked transfer coding is not supported", ob->target);
  }
  if (ob->h.content_length < 0) {
    return fail(pg, "%s: the answer has no Content-Length", ob->target);
  }
  if (ob->h.status == 200) {
    if (sink_open_file(&ob->sink, pg->o->out_dir, ob->path, err, sizeof err) !=
        0) {
      return fail(pg, "%s", err);
    }
    ob->sink_open = 1;
  }
  ob->state = BODY;
  return ob->h.content_length == 0 ? complete(pg, ob) : 0;
}

static int take_body(struct page *pg, struct object *ob, const char *p,
                     size_t n, double t) {
  if (ob->sink_open && sink_write(&ob->sink, p, n, t) != 0) {
    return fail(pg, "writing %s: %s", ob->path, strerror(errno));
  }
  ob->body_got += n;
  return ob->body_got == (uint64_t)ob->h.content_length ? complete(pg, ob) : 0;
}

/* An interim answer (1xx) is whole: skipped (RFC 9110 15.2), its final
 * answer's head read next into the emptied buffer.  101 was not asked for. */
static int skip_interim(struct page *pg, struct object *ob) {
  if (ob->h.status == 101) {
    return fail(pg, "%s: 101 Switching Protocols, which no request asked for",
                ob->target);
  }
  buf_clear(&ob->head);
  return 0;
}

/* Bytes of this object's answer head: how many it took (those past a whole
 * head are its body's, or the next head's), or -1. */
static long feed_head(struct page *pg, struct object *ob, const char *p,
                      size_t n, double t) {
  const char *why;
  size_t taken, past;
  int r;
  if (!ob->answered) {
    ob->answered = 1;
    ob->head_due_ms = sys_mono_ms() + (int64_t)pg->o->timeout_s * 1000;
    first_byte_event(ob, t);
  }
  taken = ob->head.max - ob->head.len < n ? ob->head.max - ob->head.len : n;
  if (buf_append(&ob->head, p, taken) != 0) {
    return fail(pg, "%s: answer head too long", ob->target);
  }
  r = http_parse_response(ob->head.data, ob->head.len, ob->head.max, &ob->h,
                          &why);
  if (r < 0) {
    return fail(pg, "%s: %s", ob->target, why);
  }
  if (r == 0) {
    return (long)taken;
  }
  /* the head ends among the bytes just taken: it was not whole before */
  past = ob->head.len - ob->h.head_len;
  if (ob->h.status < 200) {
    return skip_interim(pg, ob) != 0 ? -1 : (long)(taken - past);
  }
  return start_body(pg, ob) != 0 ? -1 : (long)(taken - past);
}

static long feed_body(struct page *pg, struct object *ob, const char *p,
                      size_t n, double t) {
  uint64_t want = (uint64_t)ob->h.content_length - ob->body_got;
  size_t take = want < n ? (size_t)want : n;
  return take_body(pg, ob, p, take, t) != 0 ? -1 : (long)take;
}

/* Feed bytes of this object's answer; how many it took (the rest belong to
 * the next answer on the byte stream), or -1. */
static long feed(struct page *pg, struct object *ob, const char *p, size_t n,
                 double t) {
  size_t used = 0;
  ob->t_last = t;
  while (used < n && ob->state != DONE) {
    long k = ob->state == BODY ? feed_body(pg, ob, p + used, n - used, t)
                               : feed_head(pg, ob, p + used, n - used, t);
    if (k < 0) {
      return -1;
    }
    used += (size_t)k;
  }
  return (long)used;
}

/* The begun answer whose head is due first (NULL: none is half-read). */
static const struct object *first_head_due(const struct page *pg) {
  const struct object *first = NULL;
  int i;
  for (i = 0; i < pg->nobjs; i++) {
    const struct object *ob = &pg->objs[i];
    if (ob->state == SENT && ob->answered &&
        (first == NULL || ob->head_due_ms < first->head_due_ms)) {
      first = ob;
    }
  }
  return first;
}

/* Wait for bytes until `deadline` (--timeout after the wait began), and a
 * head begun must be whole within --timeout of its first byte, however its
 * lines trickle in (as ftpc bounds an unfinished reply). */
static int wait_readable(struct page *pg, int64_t deadline) {
  const struct object *due = first_head_due(pg);
  int ms = sys_ms_left(deadline), r;
  if (due != NULL && sys_ms_left(due->head_due_ms) < ms) {
    ms = sys_ms_left(due->head_due_ms);
  }
  r = ms > 0 ? sys_wait_fd(pg->c.fd, POLLIN, ms) : 0;
  if (r == 0 && due != NULL && sys_ms_left(due->head_due_ms) == 0) {
    return fail(pg, "%s: the answer's head was not whole within %d s",
                due->target, pg->o->timeout_s);
  }
  if (r == 0) {
    return fail(pg, "no answer for %d s", pg->o->timeout_s);
  }
  return r < 0 ? fail(pg, "poll: %s", strerror(errno)) : 0;
}

/* The next bytes, within --timeout without any. The read after a poll does
 * not wait: on usrsctp a socket's eventfd also wakes for what the transport
 * takes itself (a notification), and a read that then blocked would end at
 * the transport's I/O timeout, not at --timeout; such a wake-up waits
 * again, within the same deadline. */
static int receive(struct page *pg, char *buf, size_t cap, unsigned *sid) {
  int64_t deadline = sys_mono_ms() + (int64_t)pg->o->timeout_s * 1000;
  int eor;
  ssize_t n;
  do {
    if (wait_readable(pg, deadline) != 0) {
      return -1;
    }
    n = xp_recv_nowait(&pg->c, buf, cap, sid, &eor);
  } while (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  if (n == 0) {
    return fail(pg, "the server closed the connection with answers missing");
  }
  if (n < 0) {
    return fail(pg, "receiving: %s", strerror(errno));
  }
  return (int)n;
}

/* TCP: answers arrive in request order on the one byte stream. */
static int run_tcp(struct page *pg, int from, int to) {
  char buf[65536];
  int sent = from;
  while (pg->next_in_order < to) {
    unsigned sid;
    int n;
    size_t used = 0;
    double t;
    while (sent < to && (pg->o->pipeline || sent == pg->next_in_order)) {
      if (send_request(pg, &pg->objs[sent++], 0) != 0) {
        return -1;
      }
    }
    n = receive(pg, buf, sizeof buf, &sid);
    if (n < 0) {
      return -1;
    }
    t = sys_mono_now();
    while (used < (size_t)n) {
      long k;
      if (pg->next_in_order >= to) {
        return fail(pg, "%d bytes beyond the last answer", n - (int)used);
      }
      k = feed(pg, &pg->objs[pg->next_in_order], buf + used, (size_t)n - used,
               t);
      if (k < 0) {
        return -1;
      }
      used += (size_t)k;
      if (pg->objs[pg->next_in_order].state == DONE) {
        if (pg->objs[pg->next_in_order].h.close &&
            pg->next_in_order + 1 < pg->nobjs) {
          return fail(pg, "the server closed the connection after %s",
                      pg->objs[pg->next_in_order].target);
        }
        pg->next_in_order++;
        if (!pg->o->pipeline && used < (size_t)n) {
          return fail(pg, "bytes beyond an answer");
        }
        if (!pg->o->pipeline) {
          break;
        }
      }
    }
  }
  return 0;
}

/* SCTP: each request on the first free stream; an answer is read from its
 * stream, however far the others are. */
static int send_on_free_streams(struct page *pg, int *next, int to) {
  unsigned s;
  for (s = 0; s < pg->streams && *next < to; s++) {
    if (pg->on_stream[s] == NULL) {
      pg->on_stream[s] = &pg->objs[*next];
      if (send_request(pg, &pg->objs[(*next)++], s) != 0) {
        return -1;
      }
    }
  }
  return 0;
}

static int run_sctp(struct page *pg, int from, int to) {
  char buf[65536];
  int next = from, done = from;
  while (done < to) {
    unsigned sid;
    int n;
    struct object *ob;
    if (send_on_free_streams(pg, &next, to) != 0) {
      return -1;
    }
    n = receive(pg, buf, sizeof buf, &sid);
    if (n < 0) {
      return -1;
    }
    ob = sid < pg->streams ? pg->on_stream[sid] : NULL;
    if (ob == NULL) {
      return fail(pg, "%d bytes on stream %u, which carries no request", n,
                  sid);
    }
    if (feed(pg, ob, buf, (size_t)n, sys_mono_now()) != n) {
      return pg->failed ? -1
                        : fail(pg, "bytes beyond the answer on stream %u", sid);
    }
    if (ob->state == DONE) {
      pg->on_stream[sid] = NULL;
      done++;
    }
  }
  return 0;
}

static int run(struct page *pg, int from, int to) {
  return pg->c.proto == XP_TCP ? run_tcp(pg, from, to) : run_sctp(pg, from, to);
}

static int connect_server(struct page *pg) {
  const struct httpc_opts *o = pg->o;
  unsigned in = 1, out = 1;
  char where[96];
  struct event e;
  if (xp_connect(o->proto, &o->server, o->has_bind ? &o->bind_addr : NULL,
                 &o->xp, o->timeout_s * 1000, &pg->c) != 0) {
    (void)addr_to_str(&o->server, where, sizeof where);
    return fail(pg, "cannot connect to %s over %s: %s", where,
                xp_proto_name(o->proto), strerror(errno));
  }
  if (o->proto == XP_SCTP && xp_streams(&pg->c, &in, &out) != 0) {
    return fail(pg, "cannot read the association's streams: %s",
                strerror(errno));
  }
  pg->streams = out;
  ev_begin(&e, "connected");
  ev_str(&e, "proto", xp_proto_name(o->proto));
  ev_int(&e, "streams_in", in);
  ev_int(&e, "streams_out", out);
  xp_stack_fields(&e, &pg->c, &o->xp);
  ev_end(&e);
  return 0;
}

static void init_objects(struct page *pg) {
  int i;
  pg->nobjs = pg->o->npaths;
  pg->objs = sys_malloc(sizeof *pg->objs * (size_t)pg->nobjs);
  memset(pg->objs, 0, sizeof *pg->objs * (size_t)pg->nobjs);
  for (i = 0; i < pg->nobjs; i++) {
    struct object *ob = &pg->objs[i];
    ob->index = i;
    ob->target = pg->o->paths[i];
    /* checked by httpc_opts_parse */
    (void)http_target_path(ob->target, ob->path, sizeof ob->path);
    if (ob->path[strlen(ob->path) - 1] == '/') {
      (void)str_append(ob->path, sizeof ob->path, "index.html");
    }
    buf_init(&ob->head, pg->o->max_head);
  }
}

static void free_objects(struct page *pg) {
  int i;
  for (i = 0; i < pg->nobjs; i++) {
    if (pg->objs[i].sink_open) {
      sink_remove(&pg->objs[i].sink);
    }
    buf_free(&pg->objs[i].head);
  }
  free(pg->objs);
}

static void page_event(const struct page *pg, double t0) {
  struct event e;
  uint64_t bytes = 0;
  int i;
  for (i = 0; i < pg->nobjs; i++) {
    bytes += pg->objs[i].body_got;
  }
  ev_begin(&e, "page");
  ev_int(&e, "objects", pg->nobjs);
  ev_u64(&e, "bytes", bytes);
  ev_num(&e, "seconds", sys_mono_now() - t0);
  xp_stack_end_fields(&e, pg->o->proto, &pg->o->xp);
  ev_end(&e);
}

int http_get_page(const struct httpc_opts *o) {
  struct page pg;
  double t0;
  memset(&pg, 0, sizeof pg);
  pg.o = o;
  pg.c.fd = -1;
  init_objects(&pg);
  if (connect_server(&pg) == 0) {
    pg.on_stream = sys_malloc(sizeof *pg.on_stream * pg.streams);
    memset(pg.on_stream, 0, sizeof *pg.on_stream * pg.streams);
    t0 = sys_mono_now();
    if (run(&pg, 0, 1) == 0 && run(&pg, 1, pg.nobjs) == 0) {
      page_event(&pg, t0);
    }
    free(pg.on_stream);
    xp_close(&pg.c);
  }
  free_objects(&pg);
  return pg.failed ? 1 : 0;
}
