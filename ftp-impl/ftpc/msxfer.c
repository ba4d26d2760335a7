/* msxfer.c - the pipelined engine: sctp-ms and sctp-ms-cp (one SCTP
 * association; commands and replies on stream 0, all data on stream 1) and
 * tcp-pipelined (commands and replies on the TCP control connection, all
 * data in RFC 959 blocks on one TCP data connection, blockdata.c).
 *
 * Stream-1 bytes belong to the transfers in the order their commands were
 * sent.  A file's bytes are claimed only once its 150 reply (which carries
 * "(N bytes)") has arrived, because a refused RETR sends no data; until
 * then they wait in `unclaimed`.  A listing ends at the end of its SCTP
 * message (MSG_EOR) - or at once when its 150 says 0 bytes.  A reply on
 * stream 0 may overtake data sent before it on stream 1, so a transfer is
 * complete when both its final reply and all its bytes have arrived.
 *
 * tcp-pipelined: the data connection carries the transfers back to back,
 * each ending with its EOF block.  It is read only while the transfer at
 * the head has its 150 (or was refused and is passed over), so what is not
 * yet claimed waits in the kernel, and a file ends at its EOF block, whose
 * byte count must then equal the 150's. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "blockdata.h"
#include "client.h"
#include "localfile.h"
#include "sysutil.h"

#define UNCLAIMED_MAX (256u << 20)

struct item {
  char name[256];
  int is_list;
  struct sink sink;
  int sink_open;
  int64_t size;   /* from the 150 reply, -1 until then */
  int final_code; /* 0 until the final reply */
  int data_done;
  int retr_sent;
};

struct engine {
  struct client *cl;
  struct item *items;
  size_t n;
  size_t *order; /* items in the order their transfer was sent */
  size_t norder;
  size_t head;      /* first item in `order` still owed data */
  size_t pre_idx;   /* next item in `order` to get its 150 */
  size_t fin_idx;   /* next item in `order` to get its final reply */
  size_t size_idx;  /* next item to get its SIZE reply */
  size_t size_sent; /* SIZE commands sent */
  size_t done;
  int pipelined;
  int skip; /* mget: a 550 before any data skips the name */
  struct buf unclaimed;
  int failed;
  int block;        /* tcp-pipelined */
  struct bd_in bin; /* its data connection's bytes */
};

static int eng_fail(struct engine *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int eng_fail(struct engine *g, const char *fmt, ...) {
  va_list ap;
  if (!g->failed) {
    va_start(ap, fmt);
    (void)vsnprintf(g->cl->error, sizeof g->cl->error, fmt, ap);
    va_end(ap);
  }
  g->failed = 1;
  return -1;
}

static struct item *head_item(struct engine *g) {
  return g->head < g->norder ? &g->items[g->order[g->head]] : NULL;
}

static int item_finish_data(struct engine *g, struct item *it) {
  it->data_done = 1;
  g->head++;
  if (!it->is_list && sink_finish(&it->sink, it->size, g->cl->error,
                                  sizeof g->cl->error) != 0) {
    g->failed = 1;
    return -1;
  }
  it->sink_open = 0;
  return 0;
}

/* Hand unclaimed stream-1 bytes to the transfers that can take them. */
static void route(struct engine *g) {
  struct item *it;
  while ((it = head_item(g)) != NULL && !g->failed) {
    uint64_t want;
    size_t take;
    if (it->final_code >= 300) {
      g->head++; /* refused: no data for it */
      continue;
    }
    if (it->size < 0 || g->block) {
      return; /* wait for its 150; in blocks, for its EOF block */
    }
    want = (uint64_t)it->size - it->sink.got;
    take = g->unclaimed.len < want ? g->unclaimed.len : (size_t)want;
    if (take > 0 &&
        sink_write(&it->sink, g->unclaimed.data, take, sys_mono_now()) != 0) {
      (void)eng_fail(g, "local write failed for %s", it->name);
      return;
    }
    buf_consume(&g->unclaimed, take);
    if (it->sink.got < (uint64_t)it->size) {
      return;
    }
    if (item_finish_data(g, it) != 0) {
      return;
    }
  }
}

static void on_data(void *ctx, const char *p, size_t n, int eor, double t) {
  struct engine *g = ctx;
  struct item *it = head_item(g);
  if (g->failed) {
    return;
  }
  if (it != NULL && it->is_list && g->unclaimed.len == 0) {
    /* A listing is one message: it ends at the end-of-record. */
    if (sink_write(&it->sink, p, n, t) != 0) {
      (void)eng_fail(g, "listing too large");
      return;
    }
    if (eor) {
      (void)item_finish_data(g, it);
    }
    return;
  }
  /* Fast path: bytes for a transfer whose 150 is already in go straight to
   * its file, with no copy through `unclaimed`. */
  while (n > 0 && g->unclaimed.len == 0 && (it = head_item(g)) != NULL &&
         !it->is_list && it->size >= 0 && it->final_code < 300) {
    uint64_t want = (uint64_t)it->size - it->sink.got;
    size_t take = n < want ? n : (size_t)want;
    if (take > 0 && sink_write(&it->sink, p, take, t) != 0) {
      (void)eng_fail(g, "local write failed for %s", it->name);
      return;
    }
    p += take;
    n -= take;
    if (it->sink.got == (uint64_t)it->size && item_finish_data(g, it) != 0) {
      return;
    }
  }
  if (n == 0) {
    return;
  }
  if (buf_append(&g->unclaimed, p, n) != 0) {
    (void)eng_fail(g, "too much unclaimed data on stream 1");
    return;
  }
  route(g);
}

static int send_transfer(struct engine *g, size_t i, const char *cmd,
                         const char *arg) {
  g->order[g->norder++] = i;
  g->items[i].retr_sent = 1;
  if (ctrl_queue(&g->cl->cc, cmd, arg) != 0) {
    return eng_fail(g, "%s", g->cl->cc.error);
  }
  return 0;
}

/* A name refused with 550 before any data: no file, the session goes on. */
static void skip_item(struct engine *g, struct item *it) {
  it->data_done = 1;
  it->final_code = 550;
  if (it->sink_open) {
    sink_remove(&it->sink);
    it->sink_open = 0;
  }
  client_skip(g->cl, it->name);
}

static int on_size_reply(struct engine *g, const struct reply *r) {
  size_t i = g->size_idx++;
  struct item *it = &g->items[i];
  if (r->code == 550 && g->skip) {
    (void)str_fmt(g->cl->error, sizeof g->cl->error, "SIZE %s: %d %s", it->name,
                  r->code, r->text);
    skip_item(g, it);
    return 0;
  }
  if (r->code != 213) {
    return eng_fail(g, "SIZE %s failed: %s", it->name, r->text);
  }
  if (sink_open_file(&it->sink, g->cl->o->out_dir, it->name, g->cl->error,
                     sizeof g->cl->error) != 0) {
    g->failed = 1;
    return -1;
  }
  it->sink_open = 1;
  return send_transfer(g, i, "RETR", it->name);
}

static int on_transfer_reply(struct engine *g, const struct reply *r) {
  unsigned long long bytes;
  struct item *it;
  if (r->code < 200) {
    if (g->pre_idx >= g->norder) {
      return eng_fail(g, "unexpected reply %s %s", r->cmd, r->text);
    }
    it = &g->items[g->order[g->pre_idx++]];
    if (ctrl_reply_bytes(r, r->arg, &bytes) != 0) {
      return eng_fail(g, "150 for %s without byte count: %s", it->name,
                      r->text);
    }
    it->size = (int64_t)bytes;
    if (!g->block && it->is_list && bytes == 0 && !it->data_done &&
        head_item(g) == it) {
      (void)item_finish_data(g, it);
    }
    route(g);
    return g->failed ? -1 : 0;
  }
  if (g->fin_idx >= g->norder) {
    return eng_fail(g, "unexpected reply %s %s", r->cmd, r->text);
  }
  it = &g->items[g->order[g->fin_idx++]];
  if (g->pre_idx < g->fin_idx) {
    g->pre_idx = g->fin_idx; /* refused before any 150 */
  }
  it->final_code = r->code;
  if (r->code == 550 && g->skip && it->size < 0 && !it->is_list) {
    (void)str_fmt(g->cl->error, sizeof g->cl->error, "RETR %s: %d %s", it->name,
                  r->code, r->text);
    skip_item(g, it);
    route(g);
    return g->failed ? -1 : 0;
  }
  if (r->code >= 300) {
    return eng_fail(g, "%s failed: %s", it->name, r->text);
  }
  if (it->is_list && it->size >= 0 && it->sink.got != (uint64_t)it->size &&
      it->data_done) {
    return eng_fail(g, "listing length mismatch for %s", it->name);
  }
  return 0;
}

/* Start SIZE commands: all at once (pipelined) or one when idle. */
static int start_sizes(struct engine *g) {
  while (g->size_sent < g->n && !g->failed &&
         (g->pipelined || g->size_sent == g->done)) {
    if (ctrl_queue(&g->cl->cc, "SIZE", g->items[g->size_sent].name) != 0) {
      return eng_fail(g, "%s", g->cl->cc.error);
    }
    g->size_sent++;
  }
  return 0;
}

static int handle_reply(struct engine *g, const struct reply *r) {
  if (strcmp(r->cmd, "SIZE") == 0) {
    return on_size_reply(g, r);
  }
  if (strcmp(r->cmd, "RETR") == 0 || strcmp(r->cmd, "NLST") == 0 ||
      strcmp(r->cmd, "LIST") == 0) {
    int rc = on_transfer_reply(g, r);
    return rc;
  }
  return eng_fail(g, "unexpected reply to %s: %s", r->cmd, r->text);
}

static size_t count_done(const struct engine *g) {
  size_t i, d = 0;
  for (i = 0; i < g->n; i++) {
    d += g->items[i].data_done && g->items[i].final_code != 0;
  }
  return d;
}

/* Block mode: the transfer that may take data now - the head, once its
 * 150 is in; refused ones get no blocks and are passed over.  NULL: none. */
static struct item *block_head(struct engine *g) {
  struct item *it;
  while ((it = head_item(g)) != NULL && it->final_code >= 300) {
    g->head++;
  }
  return it != NULL && it->size >= 0 ? it : NULL;
}

static int block_take(struct engine *g, struct item *it, const char *p,
                      size_t n, int last) {
  if (!it->is_list && n > (uint64_t)it->size - it->sink.got) {
    return eng_fail(g, "%s: more bytes than the 150 announced (%lld)", it->name,
                    (long long)it->size);
  }
  if (n > 0 && sink_write(&it->sink, p, n, g->bin.t) != 0) {
    return eng_fail(g, "%s: local write failed or listing too large", it->name);
  }
  return last ? item_finish_data(g, it) : 0;
}

/* Hand the data connection's buffered bytes to the transfers they are for. */
static int block_feed(struct engine *g) {
  struct item *it;
  while (!g->failed && (it = block_head(g)) != NULL) {
    const char *p;
    size_t n;
    int last, rc = bd_in_next(g->cl, &g->bin, &p, &n, &last);
    if (rc <= 0) {
      g->failed = rc < 0;
      break;
    }
    if (block_take(g, it, p, n, last) != 0) {
      return -1;
    }
  }
  return g->failed ? -1 : 0;
}

/* Block mode: wait for a reply or, while a transfer can take them, data
 * bytes.  Replies first: a 150 is stamped before the data after it. */
static int block_wait(struct engine *g, int timeout_ms) {
  struct pollfd f[2];
  int rc;
  f[0].fd = g->cl->cc.c.fd;
  f[0].events = POLLIN;
  f[1].fd = block_head(g) != NULL ? g->cl->data.fd : -1;
  f[1].events = POLLIN;
  f[0].revents = f[1].revents = 0;
  rc = sys_poll(f, 2, timeout_ms);
  if (rc <= 0) {
    return eng_fail(
        g, "%s", rc == 0 ? "timeout waiting for the server" : strerror(errno));
  }
  if (f[0].revents != 0 && ctrl_pump(&g->cl->cc, 0) < 0) {
    return eng_fail(g, "%s", g->cl->cc.error);
  }
  if (f[1].revents != 0) {
    if (bd_in_read(g->cl, &g->bin) < 0) {
      g->failed = 1;
      return -1;
    }
    return block_feed(g);
  }
  return 0;
}

/* Wait for progress: replies (and, multistream, stream-1 bytes through
 * on_data) or block-mode data. */
static int wait_input(struct engine *g, int timeout_ms) {
  if (g->block) {
    return block_wait(g, timeout_ms);
  }
  if (ctrl_pump(&g->cl->cc, timeout_ms) < 0) {
    return eng_fail(g, "%s", g->cl->cc.error);
  }
  return 0;
}

/* Run until every item is complete: data all in and final reply seen. */
static int run(struct engine *g) {
  int64_t deadline = sys_mono_ms() + g->cl->timeout_ms;
  while (!g->failed && (g->done = count_done(g)) < g->n) {
    if (start_sizes(g) != 0) {
      return -1;
    }
    if (g->block && block_feed(g) != 0) {
      return -1;
    }
    /* Commands queued while handling a burst of replies go out together,
     * before we wait again. */
    if (!ctrl_has_reply(&g->cl->cc) && ctrl_flush(&g->cl->cc) != 0) {
      return eng_fail(g, "%s", g->cl->cc.error);
    }
    if (ctrl_has_reply(&g->cl->cc)) {
      struct reply r;
      if (ctrl_reply(&g->cl->cc, &r) != 0) {
        return eng_fail(g, "%s", g->cl->cc.error);
      }
      if (handle_reply(g, &r) != 0) {
        return -1;
      }
    } else if (wait_input(g, sys_ms_left(deadline)) != 0) {
      return -1;
    } else {
      deadline = sys_mono_ms() + g->cl->timeout_ms;
    }
  }
  if (!g->failed && g->block && bd_in_check_end(g->cl, &g->bin) != 0) {
    g->failed = 1;
  }
  return g->failed ? -1 : 0;
}

static void engine_init(struct engine *g, struct client *cl, size_t n,
                        int pipelined) {
  size_t i;
  memset(g, 0, sizeof *g);
  g->cl = cl;
  g->n = n;
  g->pipelined = pipelined;
  g->items = calloc(n ? n : 1, sizeof *g->items);
  g->order = calloc(n ? n : 1, sizeof *g->order);
  if (g->items == NULL || g->order == NULL) {
    die("out of memory");
  }
  for (i = 0; i < n; i++) {
    g->items[i].size = -1;
  }
  buf_init(&g->unclaimed, UNCLAIMED_MAX);
  g->block = copts_block(cl->o);
  if (g->block) {
    bd_in_init(&g->bin);
    return;
  }
  cl->cc.on_data = on_data;
  cl->cc.data_ctx = g;
}

static void engine_free(struct engine *g) {
  size_t i;
  for (i = 0; i < g->n; i++) {
    if (g->items[i].sink_open) {
      sink_abandon(&g->items[i].sink);
    }
  }
  free(g->items);
  free(g->order);
  buf_free(&g->unclaimed);
  if (g->block) {
    bd_in_free(&g->bin);
  }
  g->cl->cc.on_data = NULL;
  g->cl->cc.data_ctx = NULL;
}

int ms_list(struct client *cl, const char *cmd, const char *arg,
            struct buf *out) {
  struct engine g;
  int rc;
  engine_init(&g, cl, 1, 0);
  g.size_sent = 1; /* no SIZE for a listing */
  g.items[0].is_list = 1;
  (void)str_copy(g.items[0].name, sizeof g.items[0].name, cmd);
  sink_open_mem(&g.items[0].sink, cmd, out);
  rc = send_transfer(&g, 0, cmd, arg);
  if (rc == 0) {
    rc = run(&g);
  }
  if (rc == 0 && (uint64_t)g.items[0].size != out->len) {
    rc = client_fail(cl, "%s: listing has %zu bytes, 150 announced %lld", cmd,
                     out->len, (long long)g.items[0].size);
  }
  engine_free(&g);
  return rc;
}

int ms_get(struct client *cl, char **names, size_t n, int pipelined, int skip) {
  struct engine g;
  size_t i;
  int rc;
  engine_init(&g, cl, n, pipelined);
  g.skip = skip;
  for (i = 0; i < n; i++) {
    if (str_copy(g.items[i].name, sizeof g.items[i].name, names[i]) != 0) {
      engine_free(&g);
      return client_fail(cl, "file name too long");
    }
  }
  rc = run(&g);
  engine_free(&g);
  return rc;
}

int ms_put(struct client *cl, const char *local) {
  struct stat st;
  struct reply r;
  char count[32];
  const char *base = strrchr(local, '/');
  int fd = sys_open(local, O_RDONLY, 0);
  uint64_t sent;
  if (fd < 0 || sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    sys_close(fd);
    return client_fail(cl, "cannot read local file %s", local);
  }
  base = base ? base + 1 : local;
  (void)str_fmt(count, sizeof count, "%lld", (long long)st.st_size);
  if (ctrl_queue(&cl->cc, "ALLO", count) != 0 ||
      ctrl_queue(&cl->cc, "STOR", base) != 0 || ctrl_flush(&cl->cc) != 0 ||
      ctrl_reply(&cl->cc, &r) != 0) {
    sys_close(fd);
    return client_fail(cl, "%s", cl->cc.error);
  }
  if (r.code != 200) {
    sys_close(fd);
    return client_fail(cl, "ALLO refused: %d %s", r.code, r.text);
  }
  if (ctrl_reply(&cl->cc, &r) != 0 || r.code != 150) {
    sys_close(fd);
    return client_fail(cl, "STOR %s refused: %d %s", base, r.code, r.text);
  }
  sent = xp_send_file(&cl->cc.c, fd, (uint64_t)st.st_size, 1, cl->o->chunk);
  sys_close(fd);
  if (sent != (uint64_t)st.st_size) {
    return client_fail(cl, "upload of %s failed after %llu bytes", base,
                       (unsigned long long)sent);
  }
  if (ctrl_reply(&cl->cc, &r) != 0 || r.code != 226) {
    return client_fail(cl, "STOR %s not confirmed: %d %s", base, r.code,
                       r.text);
  }
  return 0;
}
