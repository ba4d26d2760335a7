/* ctrlconn.c - client control connection (see ctrlconn.h). */
#include "ctrlconn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "sysutil.h"

#define MAX_REPLY_LINE 65536
#define MAX_REPLY_LINES                                                        \
  1000 /* a multi-line reply longer than this is refused */
#define RECV_CHUNK (1u << 20)

int ctrl_open(struct ctrlconn *cc, enum xp_proto p, const struct addr *dst,
              const struct addr *src, const struct xp_opts *o, int timeout_ms) {
  memset(cc, 0, sizeof *cc);
  buf_init(&cc->in, MAX_REPLY_LINE * 4);
  buf_init(&cc->out, 16u << 20);
  cc->timeout_ms = timeout_ms;
  cc->chunk = sys_malloc(RECV_CHUNK);
  if (xp_connect(p, dst, src, o, timeout_ms, &cc->c) != 0) {
    (void)str_fmt(cc->error, sizeof cc->error, "cannot connect (%s): %s",
                  xp_proto_name(p), strerror(errno));
    cc->c.fd = -1;
    return -1;
  }
  return 0;
}

void ctrl_close(struct ctrlconn *cc) {
  if (cc->c.fd >= 0) {
    xp_close(&cc->c);
  }
  buf_free(&cc->in);
  buf_free(&cc->out);
  free(cc->pend);
  free(cc->rq);
  free(cc->chunk);
  cc->chunk = NULL;
  cc->pend = NULL;
  cc->rq = NULL;
}

static void *grow(void *p, size_t *cap, size_t elem) {
  size_t ncap = *cap ? *cap * 2 : 64;
  void *np = realloc(p, ncap * elem);
  if (np == NULL) {
    die("out of memory");
  }
  *cap = ncap;
  return np;
}

static void pend_push(struct ctrlconn *cc, const char *cmd, const char *arg) {
  struct pending *p;
  if (cc->pend_head > 0 && cc->pend_head == cc->pend_len) {
    cc->pend_head = cc->pend_len = 0;
  }
  if (cc->pend_len == cc->pend_cap) {
    cc->pend = grow(cc->pend, &cc->pend_cap, sizeof *cc->pend);
  }
  p = &cc->pend[cc->pend_len++];
  (void)str_copy(p->cmd, sizeof p->cmd, cmd);
  (void)str_copy(p->arg, sizeof p->arg, arg);
}

int ctrl_queue(struct ctrlconn *cc, const char *cmd, const char *arg) {
  struct event e;
  if (buf_append_str(&cc->out, cmd) != 0 ||
      (arg[0] != '\0' && (buf_append_str(&cc->out, " ") != 0 ||
                          buf_append_str(&cc->out, arg) != 0)) ||
      buf_append_str(&cc->out, "\r\n") != 0) {
    (void)str_copy(cc->error, sizeof cc->error, "command queue overflow");
    return -1;
  }
  pend_push(cc, cmd, arg);
  ev_begin(&e, "command");
  ev_str(&e, "cmd", cmd);
  ev_str(&e, "arg", strcmp(cmd, "PASS") == 0 ? "***" : arg);
  ev_end(&e);
  return 0;
}

int ctrl_flush(struct ctrlconn *cc) {
  if (cc->out.len == 0) {
    return 0;
  }
  if (xp_send(&cc->c, cc->out.data, cc->out.len, 0) != 0) {
    (void)str_fmt(cc->error, sizeof cc->error,
                  "control connection lost while sending: %s", strerror(errno));
    return -1;
  }
  buf_clear(&cc->out);
  return 0;
}

int ctrl_send(struct ctrlconn *cc, const char *cmd, const char *arg) {
  if (ctrl_queue(cc, cmd, arg) != 0) {
    return -1;
  }
  return ctrl_flush(cc);
}

static void emit_reply(const struct reply *r) {
  struct event e;
  ev_begin_at(&e, "reply", r->t);
  ev_int(&e, "code", r->code);
  ev_str(&e, "cmd", r->cmd);
  ev_str(&e, "arg", strcmp(r->cmd, "PASS") == 0 ? "***" : r->arg);
  ev_str(&e, "text", r->text);
  ev_end(&e);
}

static void finish_reply(struct ctrlconn *cc, int code, const char *text,
                         double t) {
  struct reply *r;
  if (cc->rq_head > 0 && cc->rq_head == cc->rq_len) {
    cc->rq_head = cc->rq_len = 0;
  }
  if (cc->rq_len == cc->rq_cap) {
    cc->rq = grow(cc->rq, &cc->rq_cap, sizeof *cc->rq);
  }
  r = &cc->rq[cc->rq_len++];
  memset(r, 0, sizeof *r);
  r->code = code;
  r->t = t;
  (void)str_copy(r->text, sizeof r->text, text);
  if (cc->pend_head < cc->pend_len) {
    const struct pending *p = &cc->pend[cc->pend_head];
    (void)str_copy(r->cmd, sizeof r->cmd, p->cmd);
    (void)str_copy(r->arg, sizeof r->arg, p->arg);
    if (code >= 200) {
      cc->pend_head++;
    }
  }
  emit_reply(r);
  if (cc->on_reply != NULL) {
    cc->on_reply(cc->reply_ctx, r);
  }
}

static int reply_code(const char *line) {
  int i;
  for (i = 0; i < 3; i++) {
    if (line[i] < '0' || line[i] > '9') {
      return -1;
    }
  }
  return (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
}

/* Parse one line (CR LF stripped). -1 on a malformed reply. */
static int parse_line(struct ctrlconn *cc, const char *line, double t) {
  int code = reply_code(line);
  if (cc->multi_code != 0) {
    if (++cc->multi_lines > MAX_REPLY_LINES) {
      return -2;
    }
    if (code == cc->multi_code && line[3] == ' ') {
      cc->multi_code = 0;
      finish_reply(cc, code, line + 4, t);
    }
    return 0;
  }
  if (code < 100 || code > 599 ||
      (line[3] != ' ' && line[3] != '-' && line[3] != '\0')) {
    return -1;
  }
  if (line[3] == '-') {
    cc->multi_code = code;
    cc->multi_lines = 1;
    return 0;
  }
  finish_reply(cc, code, line[3] ? line + 4 : "", t);
  return 0;
}

static int parse_lines(struct ctrlconn *cc, double t) {
  for (;;) {
    char line[MAX_REPLY_LINE];
    char *nl = cc->in.len ? memchr(cc->in.data, '\n', cc->in.len) : NULL;
    size_t n;
    if (nl == NULL) {
      if (cc->in.len >= MAX_REPLY_LINE) {
        (void)str_copy(cc->error, sizeof cc->error, "reply line too long");
        return -1;
      }
      return 0;
    }
    n = (size_t)(nl - cc->in.data);
    if (n >= sizeof line) {
      (void)str_copy(cc->error, sizeof cc->error, "reply line too long");
      return -1;
    }
    memcpy(line, cc->in.data, n);
    line[n] = '\0';
    if (n > 0 && line[n - 1] == '\r') {
      line[n - 1] = '\0';
    }
    buf_consume(&cc->in, n + 1);
    switch (parse_line(cc, line, t)) {
    case 0: break;
    case -2:
      (void)str_fmt(cc->error, sizeof cc->error,
                    "reply of more than %d lines refused", MAX_REPLY_LINES);
      return -1;
    default:
      (void)str_copy(cc->error, sizeof cc->error,
                     "malformed reply from server");
      return -1;
    }
  }
}

int ctrl_pump(struct ctrlconn *cc, int timeout_ms) {
  char *chunk = cc->chunk;
  unsigned sid;
  int eor;
  ssize_t n;
  double t;
  /* Try first: while data streams in, waiting in poll() is a wasted
   * system call per message. */
  n = xp_recv_nowait(&cc->c, chunk, RECV_CHUNK, &sid, &eor);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    int rc;
    if (timeout_ms == 0) {
      /* the caller's poll said readable and no message was there: on
       * usrsctp a socket's eventfd also wakes for what the transport takes
       * itself (a notification), so this is no timeout */
      return 0;
    }
    rc = sys_wait_fd(cc->c.fd, POLLIN, timeout_ms);
    if (rc == 0) {
      (void)str_copy(cc->error, sizeof cc->error,
                     "timeout waiting for the server");
      return -1;
    }
    if (rc < 0) {
      (void)str_fmt(cc->error, sizeof cc->error, "poll: %s", strerror(errno));
      return -1;
    }
    n = xp_recv(&cc->c, chunk, RECV_CHUNK, &sid, &eor);
  }
  t = sys_mono_now();
  if (n == 0) {
    (void)str_copy(cc->error, sizeof cc->error,
                   "control connection closed by server");
    return -1;
  }
  if (n < 0) {
    (void)str_fmt(cc->error, sizeof cc->error, "control connection lost: %s",
                  strerror(errno));
    return -1;
  }
  if (sid != 0) {
    if (cc->on_data == NULL) {
      (void)str_fmt(cc->error, sizeof cc->error, "unexpected data on stream %u",
                    sid);
      return -1;
    }
    cc->on_data(cc->data_ctx, chunk, (size_t)n, eor, t);
    return 1;
  }
  if (buf_append(&cc->in, chunk, (size_t)n) != 0) {
    (void)str_copy(cc->error, sizeof cc->error, "reply buffer overflow");
    return -1;
  }
  return parse_lines(cc, t) == 0 ? 1 : -1;
}

int ctrl_has_reply(const struct ctrlconn *cc) {
  return cc->rq_head < cc->rq_len;
}

int ctrl_reply(struct ctrlconn *cc, struct reply *r) {
  int64_t deadline = sys_mono_ms() + cc->timeout_ms;
  while (!ctrl_has_reply(cc)) {
    /* the limit is on the whole reply: bytes that keep coming without ever
     * completing one (an endless line, endless lines) do not extend it */
    if (sys_ms_left(deadline) == 0) {
      (void)str_copy(cc->error, sizeof cc->error,
                     "timeout waiting for a complete reply");
      return -1;
    }
    if (ctrl_pump(cc, sys_ms_left(deadline)) < 0) {
      return -1;
    }
  }
  *r = cc->rq[cc->rq_head++];
  return 0;
}

/* Does the text's first echo of name run over position at (so that what
 * stands there belongs to the name)?  The name as sent, or, if the text
 * does not hold it whole, its last component (a server may echo only that).
 * The first occurrence: an echo ends at or before any later one. */
static int echo_covers(const char *text, const char *name, size_t at) {
  const char *base = strrchr(name, '/');
  const char *hit = name[0] != '\0' ? strstr(text, name) : NULL;
  size_t len = strlen(name);
  if (hit == NULL && base != NULL && base[1] != '\0') {
    hit = strstr(text, base + 1);
    len = strlen(base + 1);
  }
  return hit != NULL && (size_t)(hit - text) <= at &&
         (size_t)(hit - text) + len > at;
}

int ctrl_reply_bytes(const struct reply *r, const char *name,
                     unsigned long long *n) {
  /* The count is the "(DIGITS bytes)" group that ends the text, before at
   * most one final '.' (PROTOCOL.md): a '(' inside a file name earlier in
   * the line is never taken for it, nor a group that ends the name the
   * server echoes (a 150 with no count of its own for "f (3 bytes)"). */
  static const char tail[] = " bytes)";
  size_t len = strlen(r->text), tl = sizeof tail - 1, end, start;
  unsigned long long v = 0;
  if (len > 0 && r->text[len - 1] == '.') {
    len--;
  }
  if (len < tl + 2 || memcmp(r->text + len - tl, tail, tl) != 0) {
    return -1;
  }
  end = len - tl;
  for (start = end;
       start > 0 && r->text[start - 1] >= '0' && r->text[start - 1] <= '9';
       start--) {
  }
  if (start == end || end - start > 19 || start == 0 ||
      r->text[start - 1] != '(' || echo_covers(r->text, name, start - 1)) {
    return -1;
  }
  for (; start < end; start++) {
    v = v * 10 + (unsigned long long)(r->text[start] - '0');
  }
  *n = v;
  return 0;
}
