/* xfer.c - classic FTP transfers for the tcp and sctp-naive variants: a
 * new data connection (TCP or SCTP association) per transfer, opened with
 * PASV/EPSV or PORT/EPRT; end of data = the connection's orderly end. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "dataopen.h"
#include "localfile.h"
#include "sysutil.h"

struct dchan {
  struct xp_conn conn; /* the data connection (-1 until open) */
  int lfd;             /* active mode listener (-1 if none) */
};

static void dchan_close(struct dchan *d) {
  if (d->conn.fd >= 0) {
    xp_close(&d->conn);
  }
  xp_close_listener(d->lfd);
  d->lfd = -1;
}

static int expect(struct client *cl, int code, struct reply *r) {
  if (ctrl_reply(&cl->cc, r) != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  if (r->code != code) {
    return client_fail(cl, "%s refused: %d %s", r->cmd, r->code, r->text);
  }
  return 0;
}

/* The server's address, or (SCTP) one of the further ones it was given. */
static int is_server(const struct client *cl, const struct addr *a) {
  int i;
  if (addr_same_host(a, &cl->server)) {
    return 1;
  }
  for (i = 0; cl->proto == XP_SCTP && i < cl->o->xp.also_peer.n; i++) {
    if (addr_same_host(a, &cl->o->xp.also_peer.a[i])) {
      return 1;
    }
  }
  return 0;
}

int xfer_passive(struct client *cl, struct xp_conn *conn) {
  struct reply r;
  struct addr a = cl->server;
  int port;
  if (cl->server.ss.ss_family == AF_INET) {
    struct addr given;
    if (ctrl_send(&cl->cc, "PASV", "") != 0 || expect(cl, 227, &r) != 0) {
      return -1;
    }
    if (addr_parse_227(r.text, &given) != 0) {
      return client_fail(cl, "unparsable 227 reply: %s", r.text);
    }
    if (!is_server(cl, &given)) {
      return client_fail(cl, "227 names another host than the server: %s",
                         r.text);
    }
    port = addr_port(&given);
  } else {
    if (ctrl_send(&cl->cc, "EPSV", "") != 0 || expect(cl, 229, &r) != 0) {
      return -1;
    }
    if (addr_parse_229(r.text, &port) != 0) {
      return client_fail(cl, "unparsable 229 reply: %s", r.text);
    }
  }
  if (port <= 0 || port > 65535) {
    return client_fail(cl, "passive reply names port %d", port);
  }
  /* Always the control peer's address: never follow a 227 elsewhere. */
  addr_set_port(&a, port);
  if (xp_connect(cl->proto, &a, copts_bind(cl->o), &cl->o->xp, cl->timeout_ms,
                 conn) != 0) {
    return client_fail(cl, "cannot open data connection: %s", strerror(errno));
  }
  return 0;
}

static int open_active(struct client *cl, struct dchan *d) {
  struct reply r;
  struct addr local;
  struct xp_conn l;
  char arg[128];
  int v4;
  /* The bound address when there is one: SCTP's getsockname names only the
   * primary of possibly several local addresses. */
  if (copts_bind(cl->o) != NULL) {
    local = *copts_bind(cl->o);
  } else if (xp_local_addr(&cl->cc.c, &local) != 0) {
    return client_fail(cl, "getsockname: %s", strerror(errno));
  }
  addr_set_port(&local, 0);
  d->lfd = xp_listen(cl->proto, &local, &cl->o->xp, 1);
  l.fd = d->lfd;
  l.proto = cl->proto;
  if (d->lfd < 0 || xp_local_addr(&l, &local) != 0) {
    return client_fail(cl, "cannot listen for data: %s", strerror(errno));
  }
  v4 = local.ss.ss_family == AF_INET;
  if ((v4 ? addr_fmt_port_arg(&local, arg, sizeof arg)
          : addr_fmt_eprt_arg(&local, arg, sizeof arg)) != 0) {
    return client_fail(cl, "cannot format PORT argument");
  }
  if (ctrl_send(&cl->cc, v4 ? "PORT" : "EPRT", arg) != 0 ||
      expect(cl, 200, &r) != 0) {
    return -1;
  }
  return 0;
}

static int accept_active(struct client *cl, struct dchan *d) {
  struct addr peer;
  if (xp_accept(d->lfd, cl->proto, &cl->o->xp, &d->conn, &peer) != 0) {
    return client_fail(cl, "accept data connection: %s", strerror(errno));
  }
  xp_close_listener(d->lfd);
  d->lfd = -1;
  if (!addr_same_host(&peer, &cl->server)) {
    xp_abort(&d->conn);
    return client_fail(cl, "data connection from a third host refused");
  }
  return 0;
}

struct job {
  struct xfer_replies r;
  struct sink *sink; /* download destination, or NULL */
  int upload_fd;     /* upload source, or -1 */
  uint64_t upload_size;
  int data_done;
  int data_errno; /* the data connection failed: judged by the final reply */
  int64_t cmd_ms; /* the command went out (CLOCK_MONOTONIC ms) */
  int expired;    /* the open limit passed without a 1xx reply */
};

int xfer_take_replies(struct client *cl, struct xfer_replies *t) {
  while (ctrl_has_reply(&cl->cc) && t->final_code == 0) {
    struct reply r;
    unsigned long long n;
    if (ctrl_reply(&cl->cc, &r) != 0) {
      return client_fail(cl, "%s", cl->cc.error);
    }
    if (r.code < 200) {
      t->prelim = 1;
      if (ctrl_reply_bytes(&r, t->arg, &n) == 0) {
        t->announced = (int64_t)n;
      }
      continue;
    }
    t->final_code = r.code;
    (void)str_copy(t->final_text, sizeof t->final_text, r.text);
    cl->refused = r.code == 550 && !t->prelim;
    if (r.code >= 300) {
      return client_fail(cl, "%s %s failed: %d %s", t->cmd, t->arg, r.code,
                         r.text);
    }
  }
  return 0;
}

#define DATA_CHUNK (1u << 20)

/* The data connection failed (a reset).  Not judged yet: a server may reset
 * the data connection of a transfer it then refuses (proftpd answers RETR of
 * a directory with a reset, then 550), and the reply says which it was.  The
 * data is over either way; after a final 2xx the transfer fails. */
static int data_lost(struct dchan *d, struct job *j) {
  j->data_errno = errno != 0 ? errno : EIO;
  j->data_done = 1;
  xp_close(&d->conn);
  return 0;
}

/* Read what the data connection holds, without waiting more than once.
 * The transfer's data ends at the connection's orderly end.  Over SCTP
 * also as soon as the byte count announced in the 150 reply has arrived:
 * then the client closes first, so a data association ends without waiting
 * for the server's SHUTDOWN (which waits for a delayed SACK).  Over TCP
 * the FIN follows the data at once, and reading to it catches a server
 * that sends more than it announced. */
static int read_data(struct client *cl, struct dchan *d, struct job *j) {
  static char *chunk;
  unsigned sid;
  int eor;
  /* one time stamp for the round's reads: they follow each other at once */
  double t = sys_mono_now();
  if (chunk == NULL) {
    chunk = sys_malloc(DATA_CHUNK);
  }
  /* At most 8 reads per round, so replies are read (and time-stamped)
   * close to their arrival. */
  for (int round = 0; round < 8; round++) {
    ssize_t n = xp_recv_nowait(&d->conn, chunk, DATA_CHUNK, &sid, &eor);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 0;
    }
    if (n < 0) {
      return data_lost(d, j);
    }
    if (n > 0 &&
        (j->sink == NULL || sink_write(j->sink, chunk, (size_t)n, t) != 0)) {
      return client_fail(cl, "local write failed: %s", strerror(errno));
    }
    if (n == 0 || (cl->proto != XP_TCP && j->r.announced >= 0 &&
                   j->sink->got >= (uint64_t)j->r.announced)) {
      j->data_done = 1;
      xp_close(&d->conn);
      return 0;
    }
    if (cl->proto == XP_TCP && (size_t)n < DATA_CHUNK) {
      /* a short read emptied the receive queue: the next poll says when
       * more (or the end) has come, and a read now would only fail */
      return 0;
    }
  }
  return 0;
}

static int send_upload(struct client *cl, struct dchan *d, struct job *j) {
  uint64_t sent =
      xp_send_file(&d->conn, j->upload_fd, j->upload_size, 0, cl->o->chunk);
  if (sent != j->upload_size) {
    return client_fail(cl, "upload failed after %llu bytes: %s",
                       (unsigned long long)sent, strerror(errno));
  }
  xp_close(&d->conn);
  j->data_done = 1;
  return 0;
}

/* The open limit passed: the data connection (or listener) goes, and the
 * session is brought back in step for a retry. */
static int expire(struct client *cl, struct dchan *d, struct job *j) {
  if (d->conn.fd >= 0) {
    xp_abort(&d->conn);
  }
  xp_close_listener(d->lfd);
  d->lfd = -1;
  j->expired = 1;
  return open_give_up(cl, &j->r);
}

/* One poll round: data or listener and control. */
static int wait_round(struct client *cl, struct dchan *d, struct job *j) {
  struct pollfd p[2];
  nfds_t n = 1;
  int limit = open_wait_ms(cl, &j->r, j->cmd_ms);
  int rc;
  if (limit == 0) {
    return expire(cl, d, j);
  }
  p[0].fd = cl->cc.c.fd;
  p[0].events = POLLIN;
  if (!j->data_done && d->lfd >= 0) {
    p[1].fd = d->lfd;
    p[1].events = POLLIN;
    n = 2;
  } else if (!j->data_done && d->conn.fd >= 0 && j->sink != NULL) {
    p[1].fd = d->conn.fd;
    p[1].events = POLLIN;
    n = 2;
  }
  rc = sys_poll(p, n, limit);
  if (rc == 0 && limit < cl->timeout_ms) {
    return expire(cl, d, j);
  }
  if (rc == 0) {
    return client_fail(cl, "timeout during %s %s", j->r.cmd, j->r.arg);
  }
  if (rc < 0) {
    return client_fail(cl, "poll: %s", strerror(errno));
  }
  /* Control first: a reply is stamped before the data that follows it,
   * and the 150's byte count is known before the data is read. */
  if (p[0].revents != 0 &&
      (ctrl_pump(&cl->cc, 0) < 0 || xfer_take_replies(cl, &j->r) != 0)) {
    return cl->error[0] ? -1 : client_fail(cl, "%s", cl->cc.error);
  }
  if (n == 2 && p[1].revents != 0) {
    if (d->lfd >= 0 ? accept_active(cl, d) != 0 : read_data(cl, d, j) != 0) {
      return -1;
    }
  }
  return 0;
}

static int run_job(struct client *cl, struct dchan *d, struct job *j) {
  j->r.announced = -1;
  if (ctrl_send(&cl->cc, j->r.cmd, j->r.arg) != 0) {
    return client_fail(cl, "%s", cl->cc.error);
  }
  j->cmd_ms = sys_mono_ms();
  while (!(j->data_done && j->r.final_code != 0)) {
    if (xfer_take_replies(cl, &j->r) != 0) {
      return -1;
    }
    if (j->r.final_code != 0 && !j->r.prelim) {
      return client_fail(cl, "%s: final reply without data transfer", j->r.cmd);
    }
    if (!j->data_done && j->sink != NULL && j->r.announced >= 0 &&
        d->conn.fd >= 0 && j->sink->got >= (uint64_t)j->r.announced &&
        (cl->proto != XP_TCP || j->r.final_code != 0)) {
      /* all announced bytes are in (see read_data); over TCP the final
       * reply too, and what is already readable is read, so bytes beyond
       * the count make the file long, not silently dropped */
      if (cl->proto == XP_TCP && read_data(cl, d, j) != 0) {
        return -1;
      }
      if (!j->data_done) {
        j->data_done = 1;
        xp_close(&d->conn);
      }
    }
    if (j->r.prelim && d->conn.fd >= 0 && j->upload_fd >= 0 && !j->data_done) {
      if (send_upload(cl, d, j) != 0) {
        return -1;
      }
      continue;
    }
    if (j->data_done && j->r.final_code != 0) {
      break;
    }
    if (wait_round(cl, d, j) != 0) {
      return -1;
    }
  }
  if (j->data_errno != 0) {
    return client_fail(cl, "data connection lost: %s", strerror(j->data_errno));
  }
  return 0;
}

/* One attempt: a new data connection, the command, its replies and data. */
static int attempt(struct client *cl, struct job *j) {
  struct dchan d;
  int rc;
  d.conn.fd = -1;
  d.lfd = -1;
  rc = cl->o->active ? open_active(cl, &d) : xfer_passive(cl, &d.conn);
  if (rc == 0) {
    rc = run_job(cl, &d, j);
  }
  if (rc != 0 && d.conn.fd >= 0) {
    xp_abort(&d.conn); /* a reset: nothing of it lingers past a retry */
  }
  dchan_close(&d);
  return rc;
}

/* A failed attempt that a new data connection may cure (a 425 before any
 * 1xx, or the open limit passed), before any byte came or went. */
static int may_retry(const struct job *j) {
  return open_retryable(&j->r, j->expired) &&
         (j->sink == NULL || j->sink->got == 0);
}

static void reset_job(struct client *cl, struct job *j) {
  j->r.prelim = 0;
  j->r.final_code = 0;
  j->r.final_text[0] = '\0';
  j->data_done = 0;
  j->data_errno = 0;
  j->expired = 0;
  cl->refused = 0;
}

/* The transfer, retried on a new data connection (PASV/EPSV or PORT/EPRT
 * again) up to --open-retries times when its data connection did not open,
 * as a user would; each retry is a `retry` event. */
static int transfer(struct client *cl, struct job *j) {
  unsigned n = 1;
  for (;;) {
    double t0 = sys_mono_now();
    if (attempt(cl, j) == 0) {
      return 0;
    }
    if (!may_retry(j)) {
      return -1;
    }
    if (n > (unsigned)cl->o->retries) {
      char why[sizeof cl->error];
      (void)str_copy(why, sizeof why, cl->error);
      return client_fail(cl, "%s %s: no data connection in %u attempts: %s",
                         j->r.cmd, j->r.arg, n, why);
    }
    open_retry_event(&j->r, ++n, sys_mono_now() - t0, cl->error);
    reset_job(cl, j);
    cl->error[0] = '\0';
  }
}

int xfer_list(struct client *cl, const char *cmd, const char *arg,
              struct buf *out) {
  struct sink k;
  struct job j;
  memset(&j, 0, sizeof j);
  sink_open_mem(&k, cmd, out);
  j.r.cmd = cmd;
  j.r.arg = arg;
  j.sink = &k;
  j.upload_fd = -1;
  return transfer(cl, &j);
}

int xfer_get(struct client *cl, const char *remote) {
  struct sink k;
  struct job j;
  memset(&j, 0, sizeof j);
  if (sink_open_file(&k, cl->o->out_dir, remote, cl->error, sizeof cl->error) !=
      0) {
    return -1;
  }
  j.r.cmd = "RETR";
  j.r.arg = remote;
  j.sink = &k;
  j.upload_fd = -1;
  cl->refused = 0;
  if (transfer(cl, &j) != 0) {
    if (cl->refused || k.got == 0) {
      sink_remove(&k); /* nothing arrived: no file at all */
    } else {
      sink_abandon(&k);
    }
    return -1;
  }
  return sink_finish(&k, j.r.announced, cl->error, sizeof cl->error);
}

int xfer_put(struct client *cl, const char *local) {
  struct stat st;
  struct job j;
  const char *base = strrchr(local, '/');
  int fd = sys_open(local, O_RDONLY, 0), rc;
  memset(&j, 0, sizeof j);
  if (fd < 0 || sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    sys_close(fd);
    return client_fail(cl, "cannot read local file %s", local);
  }
  j.r.cmd = "STOR";
  j.r.arg = base ? base + 1 : local;
  j.upload_fd = fd;
  j.upload_size = (uint64_t)st.st_size;
  rc = transfer(cl, &j);
  sys_close(fd);
  return rc;
}
