/* xftpget.c - the xftp variant's transfers (PROTOCOL.md, xftp): MODE E with
 * OPTS RETR Parallelism=N at login; per transfer the client listens
 * (PORT/EPRT), sends the command, and the server opens up to N data
 * connections to it.  Blocks are written at their offsets as they come off
 * any connection; the transfer's data is complete when every connection has
 * sent its EOD and one of them the EOF with their count.  Then the blocks
 * must tile the file exactly: a gap or an overlap fails it, never a short
 * or scrambled file kept under its name. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "events.h"
#include "extblock.h"
#include "localfile.h"
#include "sysutil.h"

#define XFTP_CHUNK (1u << 18)
#define XFTP_MAX_PIECES (1u << 20)

struct lane {
  struct xp_conn c; /* fd -1 once closed */
  struct ext_dec d;
};

struct xrecv {
  struct client *cl;
  struct sink *k;
  struct xfer_replies r;
  int lfd;
  struct lane lane[EXT_MAX_CONNS];
  unsigned nlanes, eods;
  uint64_t eof_count; /* 0 until the EOF block */
  struct ext_ranges g;
  char *chunk;
  int data_done;
};

int xftp_setup(struct client *cl) {
  struct reply r;
  char arg[64];
  unsigned n = cl->o->parallel;
  if (ctrl_send(&cl->cc, "MODE", "E") != 0 || ctrl_reply(&cl->cc, &r) != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  if (r.code != 200) {
    return client_fail(cl, "server refused MODE E: %d %s", r.code, r.text);
  }
  (void)str_fmt(arg, sizeof arg, "RETR Parallelism=%u,%u,%u;", n, n, n);
  if (ctrl_send(&cl->cc, "OPTS", arg) != 0 || ctrl_reply(&cl->cc, &r) != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  if (r.code != 200) {
    return client_fail(cl, "server refused %u parallel connections: %d %s", n,
                       r.code, r.text);
  }
  return 0;
}

/* Listen on the control connection's local address and name it with
 * PORT (IPv4) or EPRT. */
static int announce_port(struct xrecv *x) {
  struct client *cl = x->cl;
  struct addr local;
  struct xp_conn l;
  struct reply r;
  char arg[128];
  int v4;
  if (copts_bind(cl->o) != NULL) {
    local = *copts_bind(cl->o);
  } else if (xp_local_addr(&cl->cc.c, &local) != 0) {
    return client_fail(cl, "getsockname: %s", strerror(errno));
  }
  addr_set_port(&local, 0);
  x->lfd = xp_listen(XP_TCP, &local, &cl->o->xp, (int)EXT_MAX_CONNS);
  l.fd = x->lfd;
  l.proto = XP_TCP;
  if (x->lfd < 0 || xp_local_addr(&l, &local) != 0) {
    return client_fail(cl, "cannot listen for data: %s", strerror(errno));
  }
  v4 = local.ss.ss_family == AF_INET;
  if ((v4 ? addr_fmt_port_arg(&local, arg, sizeof arg)
          : addr_fmt_eprt_arg(&local, arg, sizeof arg)) != 0) {
    return client_fail(cl, "cannot format PORT argument");
  }
  if (ctrl_send(&cl->cc, v4 ? "PORT" : "EPRT", arg) != 0 ||
      ctrl_reply(&cl->cc, &r) != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  if (r.code != 200) {
    return client_fail(cl, "%s refused: %d %s", r.cmd, r.code, r.text);
  }
  return 0;
}

static int accept_lane(struct xrecv *x) {
  struct client *cl = x->cl;
  struct lane *l = &x->lane[x->nlanes];
  struct addr peer;
  if (xp_accept(x->lfd, XP_TCP, &cl->o->xp, &l->c, &peer) != 0) {
    return client_fail(cl, "accept data connection: %s", strerror(errno));
  }
  ext_reset(&l->d);
  x->nlanes++;
  if (!addr_same_host(&peer, &cl->server)) {
    return client_fail(cl, "data connection from a third host refused");
  }
  return 0;
}

/* A connection's EOD (and maybe the EOF with the count) has come. */
static int lane_ended(struct xrecv *x, struct lane *l) {
  if (l->d.eof_count != 0) {
    if (x->eof_count != 0) {
      return client_fail(x->cl, "two EOF blocks in one transfer");
    }
    x->eof_count = l->d.eof_count;
  }
  x->eods++;
  if (x->eof_count != 0 && x->eods > x->eof_count) {
    return client_fail(x->cl, "%u EODs where the EOF announced %llu", x->eods,
                       (unsigned long long)x->eof_count);
  }
  return 0;
}

static int take_bytes(struct xrecv *x, struct lane *l, const char *p,
                      size_t n) {
  size_t off = 0;
  while (off < n && l->d.state == EXT_MORE) {
    const char *data;
    size_t dlen;
    uint64_t at;
    off += ext_decode(&l->d, p + off, n - off, &data, &dlen, &at);
    if (dlen > 0 && (sink_write_at(x->k, at, data, dlen, sys_mono_now()) != 0 ||
                     ext_ranges_add(&x->g, at, dlen) != 0)) {
      return client_fail(x->cl, "cannot keep block at %llu: %s",
                         (unsigned long long)at, strerror(errno));
    }
  }
  if (l->d.state == EXT_BAD) {
    return client_fail(x->cl, "bad MODE E block: %s", l->d.why);
  }
  if (off < n) {
    return client_fail(x->cl, "bytes after a connection's EOD");
  }
  return l->d.state == EXT_ENDED ? lane_ended(x, l) : 0;
}

static int read_lane(struct xrecv *x, struct lane *l) {
  unsigned sid;
  int eor, was_open = l->d.state == EXT_MORE;
  ssize_t n = xp_recv_nowait(&l->c, x->chunk, XFTP_CHUNK, &sid, &eor);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    return 0;
  }
  if (n < 0) {
    return client_fail(x->cl, "data connection lost: %s", strerror(errno));
  }
  if (n == 0) {
    if (was_open) {
      return client_fail(x->cl, "a data connection closed before its EOD");
    }
    xp_close(&l->c);
    l->c.fd = -1;
    return 0;
  }
  if (!was_open) {
    return client_fail(x->cl, "bytes after a connection's EOD");
  }
  return take_bytes(x, l, x->chunk, (size_t)n);
}

static int data_complete(const struct xrecv *x) {
  return x->eof_count != 0 && x->eods == x->eof_count && x->nlanes == x->eods;
}

static int wait_round(struct xrecv *x) {
  struct client *cl = x->cl;
  struct pollfd p[EXT_MAX_CONNS + 2];
  unsigned idx[EXT_MAX_CONNS + 2];
  nfds_t m = 1;
  int rc;
  p[0].fd = cl->cc.c.fd;
  p[0].events = POLLIN;
  if (!x->data_done && x->nlanes < EXT_MAX_CONNS) {
    p[m].fd = x->lfd;
    p[m].events = POLLIN;
    idx[m++] = EXT_MAX_CONNS; /* the listener */
  }
  for (unsigned i = 0; i < x->nlanes && !x->data_done; i++) {
    if (x->lane[i].c.fd >= 0) {
      p[m].fd = x->lane[i].c.fd;
      p[m].events = POLLIN;
      idx[m++] = i;
    }
  }
  for (nfds_t k = 0; k < m; k++) {
    p[k].revents = 0;
  }
  rc = sys_poll(p, m, cl->timeout_ms);
  if (rc == 0) {
    return client_fail(cl, "timeout during %s %s", x->r.cmd, x->r.arg);
  }
  if (rc < 0) {
    return client_fail(cl, "poll: %s", strerror(errno));
  }
  if (p[0].revents != 0 &&
      (ctrl_pump(&cl->cc, 0) < 0 || xfer_take_replies(x->cl, &x->r) != 0)) {
    return cl->error[0] ? -1 : client_fail(cl, "%s", cl->cc.error);
  }
  for (nfds_t k = 1; k < m; k++) {
    if (p[k].revents == 0) {
      continue;
    }
    if (idx[k] == EXT_MAX_CONNS ? accept_lane(x) != 0
                                : read_lane(x, &x->lane[idx[k]]) != 0) {
      return -1;
    }
  }
  return 0;
}

static void close_all(struct xrecv *x) {
  for (unsigned i = 0; i < x->nlanes; i++) {
    if (x->lane[i].c.fd >= 0) {
      xp_close(&x->lane[i].c);
      x->lane[i].c.fd = -1;
    }
  }
  xp_close_listener(x->lfd);
  x->lfd = -1;
}

static void connections_event(const struct xrecv *x) {
  struct event e;
  ev_begin(&e, "data_connections");
  ev_str(&e, "file", x->k->name);
  ev_u64(&e, "connections", x->nlanes);
  ev_end(&e);
}

static int run(struct xrecv *x) {
  struct client *cl = x->cl;
  char why[128];
  if (announce_port(x) != 0) {
    return -1;
  }
  if (ctrl_send(&cl->cc, x->r.cmd, x->r.arg) != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  while (!(x->data_done && x->r.final_code != 0)) {
    if (xfer_take_replies(x->cl, &x->r) != 0 || wait_round(x) != 0) {
      return -1;
    }
    if (x->r.final_code != 0 && !x->r.prelim) {
      return client_fail(cl, "%s: final reply without data transfer", x->r.cmd);
    }
    if (!x->data_done && data_complete(x)) {
      x->data_done = 1;
      close_all(x);
    }
  }
  connections_event(x);
  if (ext_ranges_check(
          &x->g, 0, x->r.announced >= 0 ? (uint64_t)x->r.announced : x->k->got,
          why, sizeof why) != 0) {
    return client_fail(cl, "%s %s: %s", x->r.cmd, x->r.arg, why);
  }
  return 0;
}

/* One MODE E transfer into sink k; *announced: the 150's byte count. */
static int transfer(struct client *cl, const char *cmd, const char *arg,
                    struct sink *k, int64_t *announced) {
  struct xrecv *x = sys_malloc(sizeof *x);
  int rc;
  memset(x, 0, sizeof *x);
  x->cl = cl;
  x->k = k;
  x->r.cmd = cmd;
  x->r.arg = arg;
  x->lfd = -1;
  x->r.announced = -1;
  x->chunk = sys_malloc(XFTP_CHUNK);
  ext_ranges_init(&x->g, XFTP_MAX_PIECES);
  cl->refused = 0;
  rc = run(x);
  close_all(x);
  *announced = x->r.announced;
  ext_ranges_free(&x->g);
  free(x->chunk);
  free(x);
  return rc;
}

int xftp_list(struct client *cl, const char *cmd, const char *arg,
              struct buf *out) {
  struct sink k;
  int64_t announced;
  sink_open_mem(&k, cmd, out);
  return transfer(cl, cmd, arg, &k, &announced);
}

int xftp_get(struct client *cl, const char *remote) {
  struct sink k;
  int64_t announced;
  if (sink_open_file(&k, cl->o->out_dir, remote, cl->error, sizeof cl->error) !=
      0) {
    return -1;
  }
  if (transfer(cl, "RETR", remote, &k, &announced) != 0) {
    if (cl->refused || k.got == 0) {
      sink_remove(&k);
    } else {
      sink_abandon(&k);
    }
    return -1;
  }
  return sink_finish(&k, announced, cl->error, sizeof cl->error);
}
