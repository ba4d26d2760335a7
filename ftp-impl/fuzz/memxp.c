/* memxp.c - the in-memory transport of the fuzz targets (see memxp.h). */
#include "memxp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CONNS 64
#define OUT_MAX (1u << 20)

enum kind { K_CTRL, K_LISTEN, K_DATA };

struct msg {
  unsigned sid;
  size_t off; /* into the script */
  size_t len;
};

struct conn {
  int fd;
  enum kind kind;
  struct addr local;
  struct addr peer;
  int delivered; /* a data connection's message was handed out */
};

static struct {
  uint8_t *store; /* the messages' bytes, marks dropped */
  size_t used;
  struct memxp_cfg cfg;
  struct msg *msgs;
  size_t nmsgs;
  size_t ctrl_i;   /* next control-side message */
  size_t ctrl_off; /* bytes of it already received */
  size_t data_i;   /* next data message for a data connection */
  size_t nconns;   /* conns[0..nconns) are the run's */
  int have_ctrl;
  unsigned next_port;
  size_t out_len;
  int out_truncated;
  uint64_t data_out;
} mx;

/* Apart from mx, which memxp_begin clears: clearing them each run (1 MiB
 * and 18 KiB) took longer than many a run; only out_buf[0..out_len) is
 * ever read, and new_conn clears each connection it hands out. */
static char out_buf[OUT_MAX];
static struct conn conns[MAX_CONNS];
static dev_t null_rdev; /* /dev/null's device, looked up once */

void memxp_cfg_from_byte(uint8_t b, struct memxp_cfg *cfg) {
  static const size_t limits[8] = {0, 1, 2, 3, 7, 16, 100, 4096};
  memset(cfg, 0, sizeof *cfg);
  cfg->proto = (b & 1u) ? XP_SCTP : XP_TCP;
  cfg->streams = cfg->proto == XP_SCTP ? ((b & 2u) ? 1u : 2u) : 1u;
  cfg->limit = limits[(b >> 2) & 7u];
  cfg->foreign_peer = (b & 0x60u) == 0x60u;
  cfg->refuse_data = (b & 0x80u) != 0 && (b & 0x40u) == 0;
}

static void set_ipv4(struct addr *a, const char *ip, int port) {
  struct sockaddr_in *in = (struct sockaddr_in *)&a->ss;
  memset(a, 0, sizeof *a);
  in->sin_family = AF_INET;
  in->sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, ip, &in->sin_addr) != 1) {
    abort();
  }
  a->len = sizeof *in;
}

/* Cut the script into messages (see memxp.h), marks dropped, into a copy:
 * continuation lines join the data message before them. */
static void split_messages(const uint8_t *data, size_t size) {
  size_t start = 0, i;
  mx.msgs = calloc(size + 1, sizeof *mx.msgs);
  mx.store = malloc(size + 1);
  if (mx.msgs == NULL || mx.store == NULL) {
    abort();
  }
  for (i = 0; i < size; i++) {
    if (data[i] == '\n' || i + 1 == size) {
      const uint8_t *p = data + start;
      size_t n = i + 1 - start;
      struct msg *m = &mx.msgs[mx.nmsgs];
      int cont = p[0] == MEMXP_DATA_MORE && mx.nmsgs > 0 && m[-1].sid == 1;
      if (p[0] == MEMXP_DATA_MARK || cont) {
        p++;
        n--;
      }
      if (cont) {
        m = &m[-1];
      } else {
        m->sid = data[start] == MEMXP_DATA_MARK;
        m->off = mx.used;
        m->len = 0;
      }
      memcpy(mx.store + mx.used, p, n);
      mx.used += n;
      m->len += n;
      mx.nmsgs += !cont && m->len > 0; /* an empty message reads as the end */
      start = i + 1;
    }
  }
}

void memxp_begin(const uint8_t *data, size_t size,
                 const struct memxp_cfg *cfg) {
  struct stat st;
  free(mx.msgs);
  free(mx.store);
  memset(&mx, 0, sizeof mx);
  mx.cfg = *cfg;
  mx.next_port = 40000;
  if (null_rdev == 0) {
    if (stat("/dev/null", &st) != 0) {
      abort();
    }
    null_rdev = st.st_rdev;
  }
  split_messages(data, size);
}

static struct conn *find(int fd) {
  size_t i;
  for (i = 0; i < mx.nconns; i++) {
    if (conns[i].fd == fd) {
      return &conns[i];
    }
  }
  return NULL;
}

static struct conn *new_conn(enum kind k) {
  struct conn *c;
  int fd;
  if (mx.nconns == MAX_CONNS) {
    errno = EMFILE;
    return NULL;
  }
  fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return NULL;
  }
  c = find(fd); /* a number a program closed itself and got back */
  if (c == NULL) {
    c = &conns[mx.nconns++];
  }
  memset(c, 0, sizeof *c);
  c->fd = fd;
  c->kind = k;
  set_ipv4(&c->local, "127.0.0.1", (int)mx.next_port++);
  set_ipv4(&c->peer, "127.0.0.1", (int)mx.next_port++);
  return c;
}

int memxp_owns(int fd) { return fd >= 0 && find(fd) != NULL; }

static void drop(int fd) {
  struct conn *c = find(fd);
  if (c != NULL) {
    *c = conns[--mx.nconns];
  }
  if (close(fd) != 0) {
    abort(); /* a program closed a connection twice */
  }
}

int memxp_accept_ctrl(struct xp_conn *out) {
  struct conn *c = new_conn(K_CTRL);
  if (c == NULL) {
    return -1;
  }
  set_ipv4(&c->local, "127.0.0.1", 21);
  mx.have_ctrl = 1;
  out->fd = c->fd;
  out->proto = mx.cfg.proto;
  return 0;
}

void memxp_end(void) {
  while (mx.nconns > 0) {
    struct conn *c = &conns[--mx.nconns];
    struct stat st;
    /* The program may have closed it itself (dataio_reset closes a PASV
     * listener with sys_close); close only what is still our /dev/null. */
    if (fstat(c->fd, &st) == 0 && S_ISCHR(st.st_mode) &&
        st.st_rdev == null_rdev) {
      (void)close(c->fd);
    }
  }
  free(mx.msgs);
  free(mx.store);
  mx.msgs = NULL;
  mx.store = NULL;
}

const char *memxp_ctrl_out(size_t *len, int *truncated) {
  *len = mx.out_len;
  *truncated = mx.out_truncated;
  return out_buf;
}

uint64_t memxp_data_out(void) { return mx.data_out; }

int xp_listen(enum xp_proto p, const struct addr *a, const struct xp_opts *o,
              int backlog) {
  struct conn *c;
  (void)p;
  (void)o;
  (void)backlog;
  if (mx.cfg.refuse_data) {
    errno = EADDRINUSE;
    return -1;
  }
  c = new_conn(K_LISTEN);
  if (c == NULL) {
    return -1;
  }
  if (a->ss.ss_family == AF_INET) {
    int port = addr_port(a);
    c->local = *a;
    addr_set_port(&c->local, port != 0 ? port : (int)mx.next_port++);
  }
  return c->fd;
}

static struct conn *new_data(struct xp_conn *out) {
  struct conn *c = new_conn(K_DATA);
  if (c == NULL) {
    return NULL;
  }
  if (mx.cfg.foreign_peer) {
    set_ipv4(&c->peer, "192.0.2.7", 50000);
  }
  out->fd = c->fd;
  out->proto = mx.cfg.proto;
  return c;
}

int xp_accept(int lfd, enum xp_proto p, const struct xp_opts *o,
              struct xp_conn *out, struct addr *peer) {
  struct conn *l = find(lfd), *c;
  (void)p;
  (void)o;
  if (l == NULL || l->kind != K_LISTEN) {
    errno = EBADF;
    return -1;
  }
  c = new_data(out);
  if (c == NULL) {
    return -1;
  }
  *peer = c->peer;
  return 0;
}

int xp_connect(enum xp_proto p, const struct addr *dst, const struct addr *src,
               const struct xp_opts *o, int timeout_ms, struct xp_conn *out) {
  struct conn *c;
  (void)p;
  (void)src;
  (void)o;
  (void)timeout_ms;
  if (!mx.have_ctrl) {
    if (memxp_accept_ctrl(out) != 0) {
      return -1;
    }
    c = find(out->fd);
    c->peer = *dst;
    return 0;
  }
  if (mx.cfg.refuse_data) {
    errno = ECONNREFUSED;
    return -1;
  }
  c = new_data(out);
  if (c == NULL) {
    return -1;
  }
  c->peer = *dst;
  return 0;
}

/* In memory a connect completes at once: the start does it all. */
int xp_connect_start(enum xp_proto p, const struct addr *dst,
                     const struct addr *src, const struct xp_opts *o,
                     struct xp_conn *out) {
  return xp_connect(p, dst, src, o, 0, out);
}

int xp_connect_finish(struct xp_conn *c, int timeout_ms) {
  (void)c;
  (void)timeout_ms;
  return 0;
}

/* Read every byte sent, so the sanitizers see an overread. */
static void take(const struct conn *c, const void *p, size_t n, unsigned sid) {
  const unsigned char *b = p;
  if (c->kind == K_CTRL && sid == 0) {
    size_t room = OUT_MAX - mx.out_len;
    size_t k = n < room ? n : room;
    memcpy(out_buf + mx.out_len, b, k);
    mx.out_len += k;
    mx.out_truncated |= k < n;
    return;
  }
  {
    volatile unsigned char sum = 0;
    size_t i;
    for (i = 0; i < n; i++) {
      sum = (unsigned char)(sum + b[i]);
    }
    (void)sum;
  }
  mx.data_out += n;
}

int xp_send(const struct xp_conn *c, const void *p, size_t n, unsigned sid) {
  struct conn *k = find(c->fd);
  if (k == NULL || k->kind == K_LISTEN) {
    errno = EBADF;
    return -1;
  }
  take(k, p, n, sid);
  return 0;
}

ssize_t xp_send_nowait(const struct xp_conn *c, const void *p, size_t n,
                       unsigned sid) {
  return xp_send(c, p, n, sid) == 0 ? (ssize_t)n : -1;
}

uint64_t xp_send_file(const struct xp_conn *c, int fd, uint64_t count,
                      unsigned sid, size_t chunk) {
  char block[4096];
  uint64_t sent = 0;
  (void)chunk;
  while (sent < count) {
    size_t want =
        count - sent < sizeof block ? (size_t)(count - sent) : sizeof block;
    ssize_t n = read(fd, block, want);
    if (n <= 0 || xp_send(c, block, (size_t)n, sid) != 0) {
      if (n == 0) {
        errno = EPIPE;
      }
      break;
    }
    sent += (uint64_t)n;
  }
  return sent;
}

/* The next piece of control input: stream-0 messages (and, over SCTP,
 * stream-1 ones too, with their stream id). */
static ssize_t recv_ctrl(void *p, size_t n, unsigned *sid, int *eor) {
  size_t got = 0;
  size_t cap = mx.cfg.limit != 0 && mx.cfg.limit < n ? mx.cfg.limit : n;
  *eor = 0;
  *sid = 0;
  while (mx.ctrl_i < mx.nmsgs && got < cap) {
    const struct msg *m = &mx.msgs[mx.ctrl_i];
    size_t k;
    if (mx.cfg.proto == XP_TCP && m->sid != 0) {
      mx.ctrl_i++; /* data messages are the data connections' */
      continue;
    }
    if (mx.cfg.proto == XP_SCTP && got > 0) {
      break; /* one message (part) per receive */
    }
    *sid = m->sid;
    k = m->len - mx.ctrl_off < cap - got ? m->len - mx.ctrl_off : cap - got;
    memcpy((char *)p + got, mx.store + m->off + mx.ctrl_off, k);
    got += k;
    mx.ctrl_off += k;
    if (mx.ctrl_off == m->len) {
      mx.ctrl_i++;
      mx.ctrl_off = 0;
      *eor = mx.cfg.proto == XP_SCTP;
    }
    if (mx.cfg.proto == XP_SCTP) {
      break;
    }
  }
  return (ssize_t)got;
}

/* A data connection: the next data message of the script, then the end. */
static ssize_t recv_data(struct conn *c, void *p, size_t n, int *eor) {
  const struct msg *m;
  size_t k;
  if (c->delivered) {
    return 0;
  }
  c->delivered = 1;
  while (mx.data_i < mx.nmsgs && mx.msgs[mx.data_i].sid == 0) {
    mx.data_i++;
  }
  if (mx.data_i == mx.nmsgs) {
    return 0;
  }
  m = &mx.msgs[mx.data_i++];
  k = m->len < n ? m->len : n;
  memcpy(p, mx.store + m->off, k);
  *eor = 1;
  return (ssize_t)k;
}

ssize_t xp_recv(const struct xp_conn *c, void *p, size_t n, unsigned *sid,
                int *eor) {
  struct conn *k = find(c->fd);
  *sid = 0;
  *eor = 0;
  if (k == NULL || k->kind == K_LISTEN) {
    errno = EBADF;
    return -1;
  }
  if (n == 0) {
    return 0;
  }
  return k->kind == K_CTRL ? recv_ctrl(p, n, sid, eor)
                           : recv_data(k, p, n, eor);
}

ssize_t xp_recv_nowait(const struct xp_conn *c, void *p, size_t n,
                       unsigned *sid, int *eor) {
  return xp_recv(c, p, n, sid, eor);
}

/* Nothing here waits, so what is queued is read to its end. */
int xp_drop_queued(const struct xp_conn *c) {
  char sink[4096];
  unsigned sid;
  int eor;
  while (xp_recv(c, sink, sizeof sink, &sid, &eor) > 0) {
  }
  return 1;
}

int xp_streams(const struct xp_conn *c, unsigned *in, unsigned *out) {
  (void)c;
  *in = mx.cfg.streams;
  *out = mx.cfg.streams;
  return 0;
}

int xp_quickack(const struct xp_conn *c) {
  (void)c;
  return 0;
}

/* A connection here has nothing to read until the program asks for it, so a
 * block-mode data connection kept between transfers stays usable. */
int xp_readable_now(const struct xp_conn *c) {
  (void)c;
  return 0;
}

int xp_error(const struct xp_conn *c) {
  (void)c;
  return 0;
}

/* The events name the stack; the in-memory transport stands in for the
 * kernel's, whose fields (no usrsctp settings) the events then carry. */
const char *xp_stack_name(const struct xp_conn *c) {
  (void)c;
  return "kernel";
}

int xp_shutdown_write(const struct xp_conn *c) {
  return find(c->fd) != NULL ? 0 : -1;
}

void xp_close(struct xp_conn *c) {
  drop(c->fd);
  c->fd = -1;
}

void xp_abort(struct xp_conn *c) { xp_close(c); }

int xp_peer_udp_port(const struct xp_conn *c) {
  (void)c;
  return 0;
}

void xp_close_listener(int lfd) {
  if (lfd >= 0) {
    drop(lfd);
  }
}

int xp_close_delivered(struct xp_conn *c, int seconds) {
  (void)seconds;
  xp_close(c);
  return 0;
}

int xp_local_addr(const struct xp_conn *c, struct addr *a) {
  struct conn *k = find(c->fd);
  if (k == NULL) {
    errno = EBADF;
    return -1;
  }
  *a = k->local;
  return 0;
}

int xp_peer_addr(const struct xp_conn *c, struct addr *a) {
  struct conn *k = find(c->fd);
  if (k == NULL || k->kind == K_LISTEN) {
    errno = ENOTCONN;
    return -1;
  }
  *a = k->peer;
  return 0;
}

int xp_peer_has(const struct xp_conn *c, const struct addr *a) {
  struct addr peer;
  return xp_peer_addr(c, &peer) == 0 && addr_same_host(&peer, a);
}
