/* dataio.c - data connections and stream-1 transfers (see dataio.h). */
#include "dataio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blockmode.h"
#include "cmdio.h"
#include "datapump.h"
#include "ftpcodes.h"
#include "logging.h"
#include "sysutil.h"
#include "tunables.h"

static void drop_listener(struct session *s) {
  if (s->pasv_fd >= 0) {
    xp_close_listener(s->pasv_fd);
    s->pasv_fd = -1;
  }
  s->port_set = 0;
}

void dataio_drop_persistent(struct session *s) {
  if (s->pdata.fd >= 0) {
    log_line("CLOSE block mode data connection");
    xp_close(&s->pdata);
  }
}

void dataio_reset(struct session *s) {
  drop_listener(s);
  dataio_drop_persistent(s);
}

void dataio_pasv(struct session *s, int extended) {
  struct addr a = s->local, bound;
  struct xp_conn l;
  char text[64];
  if (!extended && a.ss.ss_family != AF_INET) {
    (void)cmdio_reply(s, FTP_BADPROT, "PASV is IPv4 only; use EPSV.");
    return;
  }
  dataio_reset(s);
  addr_set_port(&a, 0);
  s->pasv_fd = xp_listen(s->ctrl.proto, &a, &tunables.data_opts, 1);
  if (s->pasv_fd < 0) {
    log_line("FAIL PASV listen: %s", strerror(errno));
    (void)cmdio_reply(s, FTP_BADSENDCONN, "Cannot open passive listener.");
    return;
  }
  l.fd = s->pasv_fd;
  l.proto = s->ctrl.proto;
  /* the port the kernel chose; the host stays our end of the control
   * connection (a multihomed listener names any one of its addresses) */
  if (xp_local_addr(&l, &bound) != 0) {
    dataio_reset(s);
    (void)cmdio_reply(s, FTP_BADSENDCONN, "Cannot open passive listener.");
    return;
  }
  addr_set_port(&a, addr_port(&bound));
  if (extended) {
    (void)cmdio_reply(s, FTP_EPSVOK, "Entering Extended Passive Mode (|||%d|).",
                      addr_port(&a));
  } else if (addr_fmt_port_arg(&a, text, sizeof text) == 0) {
    (void)cmdio_reply(s, FTP_PASVOK, "Entering Passive Mode (%s).", text);
  } else {
    dataio_reset(s);
    (void)cmdio_reply(s, FTP_BADSENDCONN, "Cannot open passive listener.");
  }
}

void dataio_port(struct session *s, const struct addr *a, const char *cmd) {
  char want[96], peer[96];
  dataio_reset(s);
  if (!addr_same_host(a, &s->peer) || addr_port(a) < 1024) {
    (void)addr_to_str(a, want, sizeof want);
    (void)addr_to_str(&s->peer, peer, sizeof peer);
    log_line("REFUSED %s to %s (control peer %s)", cmd, want, peer);
    (void)cmdio_reply(s, FTP_BADCMD, "Illegal %s command.", cmd);
    return;
  }
  s->port_addr = *a;
  s->port_set = 1;
  (void)cmdio_reply(s, FTP_PORTOK,
                    "%s command successful. Consider using PASV.", cmd);
}

/* Wait for the client's data connection, watching the control connection
 * too: a client that left frees its session at once (not after the data
 * timeout), even with a command pipelined behind this one, and an ABOR sent
 * meanwhile is served.  *watch: ABOR may still come.  0 go on, -1 stop. */
static int watch_ctrl(struct session *s, enum cmdio_watch w, int *watch) {
  if (w == CMDIO_WATCH_GONE) {
    log_line("DISCONNECT by peer while waiting for the data connection");
    s->quit = 1;
    return -1;
  }
  if (w == CMDIO_WATCH_ABOR) {
    s->aborted = 1;
    return -1;
  }
  *watch = *watch && w == CMDIO_WATCH_NONE;
  return 0;
}

/* The open limit (--open-timeout) runs from the transfer command: it
 * exceeds the longest handshake the stack lets succeed, so a connection
 * that has not arrived by then never will (its half-open end expired). */
static int await_pasv(struct session *s) {
  int64_t deadline = sys_mono_ms() + (int64_t)tunables.open_timeout_s * 1000;
  int watch = 1;
  if (watch_ctrl(s, cmdio_watch_abor(s, 0), &watch) != 0) {
    return -1; /* ABOR already came with the command */
  }
  for (;;) {
    struct pollfd f[2];
    int rc;
    f[0].fd = s->pasv_fd;
    f[0].events = POLLIN;
    f[1].fd = s->ctrl.fd;
    f[1].events = cmdio_watch_events(watch);
    f[0].revents = f[1].revents = 0;
    rc = sys_poll(f, 2, sys_ms_left(deadline));
    if (rc == 0) {
      log_line("TIMEOUT no data connection within %d s (open limit)",
               tunables.open_timeout_s);
      s->open_late = 1;
      return -1;
    }
    if (rc < 0) {
      log_line("FAIL passive data connection: %s", strerror(errno));
      return -1;
    }
    if (f[1].revents != 0 &&
        watch_ctrl(s, cmdio_watch_polled(s, watch, f[1].revents), &watch) !=
            0) {
      return -1;
    }
    if (f[0].revents != 0) {
      return 0;
    }
  }
}

static int accept_pasv(struct session *s, struct xp_conn *data) {
  struct addr peer;
  char who[96];
  if (await_pasv(s) != 0) {
    return -1;
  }
  if (xp_accept(s->pasv_fd, s->ctrl.proto, &tunables.data_opts, data, &peer) !=
      0) {
    log_line("FAIL passive accept: %s", strerror(errno));
    return -1;
  }
  if (!xp_peer_has(data, &s->peer)) {
    (void)addr_to_str(&peer, who, sizeof who);
    log_line("REFUSED data connection from %s (not the control peer)", who);
    xp_abort(data);
    return -1;
  }
  return 0;
}

/* On usrsctp the data association goes to the UDP port the client's
 * control association speaks from, wherever its SCTP listens. */
static int connect_port(struct session *s, struct xp_conn *data) {
  struct addr src = s->local;
  struct xp_opts o = tunables.data_opts;
  int udp_port = xp_peer_udp_port(&s->ctrl);
  addr_set_port(&src, 0);
  if (udp_port > 0) {
    o.peer_udp_port = udp_port;
  }
  if (xp_connect(s->ctrl.proto, &s->port_addr, &src, &o,
                 tunables.open_timeout_s * 1000, data) != 0) {
    log_line("FAIL active data connection: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* MODE B: the connection kept from an earlier transfer must still be
 * quiet.  Between transfers the client sends nothing on it, so anything
 * readable - its end, a reset, stray bytes - means it is no longer usable:
 * it is closed and the client must set up a new one. */
static int persistent_usable(struct session *s) {
  if (xp_readable_now(&s->pdata) == 0) {
    return 1;
  }
  log_line("FAIL block mode data connection: closed or unusable");
  xp_abort(&s->pdata);
  return 0;
}

static int reuse_persistent(struct session *s, struct xp_conn *data,
                            const char *what, uint64_t count) {
  if (!persistent_usable(s)) {
    (void)cmdio_reply(s, FTP_BADSENDCONN,
                      "Block mode data connection lost; use PASV or PORT.");
    return -1;
  }
  *data = s->pdata;
  return cmdio_reply(s, FTP_DATACONN,
                     "Reusing block mode data connection for %s (%llu bytes).",
                     what, (unsigned long long)count);
}

int dataio_begin(struct session *s, struct xp_conn *data, const char *what,
                 uint64_t count) {
  data->fd = -1;
  data->proto = s->ctrl.proto;
  if (s->multistream) {
    return cmdio_reply(s, FTP_DATACONN,
                       "Opening data stream 1 for %s (%llu bytes).", what,
                       (unsigned long long)count);
  }
  if (s->block_mode && s->pdata.fd >= 0) {
    return reuse_persistent(s, data, what, count);
  }
  if (s->pasv_fd < 0 && !s->port_set) {
    (void)cmdio_reply(s, FTP_BADSENDCONN, "Use PORT or PASV first.");
    return -1;
  }
  if ((s->pasv_fd >= 0 ? accept_pasv(s, data) : connect_port(s, data)) != 0) {
    dataio_reset(s);
    if (s->aborted) {
      s->aborted = 0;
      log_line("ABORT transfer on the client's ABOR");
      if (cmdio_reply(s, FTP_BADSENDCONN, "No data connection; aborted.") ==
          0) {
        (void)cmdio_reply(s, FTP_TRANSFEROK, "Abort successful.");
      }
    } else if (s->open_late) {
      (void)cmdio_reply(s, FTP_BADSENDCONN, "No data connection within %d s.",
                        tunables.open_timeout_s);
    } else if (!s->quit) {
      (void)cmdio_reply(s, FTP_BADSENDCONN, "Failed to establish connection.");
    }
    s->open_late = 0;
    return -1;
  }
  drop_listener(s);
  if (s->block_mode) {
    s->pdata = *data;
  }
  if (cmdio_reply(s, FTP_DATACONN,
                  "Opening %s mode data connection for %s (%llu bytes).",
                  s->type_ascii ? "ASCII" : "BINARY", what,
                  (unsigned long long)count) != 0) {
    xp_close(data);
    s->pdata.fd = -1;
    return -1;
  }
  return 0;
}

static struct xp_conn *channel(struct session *s, struct xp_conn *data) {
  return s->multistream ? &s->ctrl : data;
}

/* A 226 promises that the data arrived. Like vsftpd, close the data
 * connection lingering - until the client's kernel has acknowledged every
 * byte and the end - before replying. Closing at once would orphan the
 * socket: on a lossy long path an orphan stops retransmitting after a few
 * tries, the client waits for bytes that never come, and the 226 it already
 * got marks the end of a transfer that never finished. Stream-1 transfers
 * end by byte count on the control association. */
static int await_delivery(struct session *s, struct xp_conn *data) {
  /* MODE B: the connection stays open, so nothing is orphaned; the 226
   * follows once the kernel has taken the transfer's last block. */
  if (s->multistream || s->block_mode) {
    return 0;
  }
  /* --reply-on-close: as FreeBSD's ftpd, whose 226 follows the last write
   * and whose close() does not linger; dataio_end closes, then replies. */
  if (tunables.reply_on_close) {
    return 0;
  }
  if (xp_close_delivered(data, tunables.data_timeout_s) != 0) {
    log_line("FAIL data connection: not acknowledged within %d s",
             tunables.data_timeout_s);
    return -1;
  }
  return 0;
}

/* Classic TCP transfers go through the pump: a deadline on progress, and
 * ABOR or the client's departure noticed between chunks. */
static int pumped(struct session *s, struct xp_conn *data, int fd,
                  const char *buf, uint64_t count) {
  switch (pump_send(s, data, fd, buf, count)) {
  case PUMP_DONE: return await_delivery(s, data);
  case PUMP_ABORTED: s->aborted = 1; return -1;
  case PUMP_CTRL_GONE:
    log_line("DISCONNECT by peer during a transfer");
    s->quit = 1;
    return -1;
  case PUMP_FAILED:
  default: return -1;
  }
}

static int pump_fits(const struct session *s, const struct xp_conn *data) {
  return !s->multistream && data->proto == XP_TCP && data->fd >= 0;
}

int dataio_send_fd(struct session *s, struct xp_conn *data, int fd,
                   uint64_t count) {
  uint64_t sent;
  if (pump_fits(s, data)) {
    return pumped(s, data, fd, NULL, count);
  }
  sent = xp_send_file(channel(s, data), fd, count,
                      s->multistream ? SID_DATA : 0, tunables.chunk);
  if (sent != count) {
    log_line("FAIL send: %llu of %llu bytes: %s", (unsigned long long)sent,
             (unsigned long long)count, strerror(errno));
    return -1;
  }
  return await_delivery(s, data);
}

int dataio_send_buf(struct session *s, struct xp_conn *data, const char *p,
                    uint64_t n) {
  if (pump_fits(s, data)) {
    return pumped(s, data, -1, p, n);
  }
  /* In multistream mode a listing is ONE message: its MSG_EOR marks the
   * end (the transport grows the send buffer to fit it). */
  if (xp_send(channel(s, data), p, (size_t)n, s->multistream ? SID_DATA : 0) !=
      0) {
    log_line("FAIL send listing: %s", strerror(errno));
    return -1;
  }
  return await_delivery(s, data);
}

/* Multistream: exactly count bytes from stream 1. */
static int recv_stream1(struct session *s, char *block, size_t cap, int fd,
                        uint64_t count, uint64_t *got) {
  while (*got < count) {
    size_t n = 0;
    if (cmdio_recv(s, block, (size_t)(count - *got < cap ? count - *got : cap),
                   &n, tunables.data_timeout_s * 1000) <= 0) {
      return -1;
    }
    if (n > 0 && sys_write_all(fd, block, n) != 0) {
      return -2;
    }
    *got += n;
  }
  return 0;
}

/* A data connection of its own: everything up to its orderly end. */
static int recv_to_end(struct xp_conn *data, char *block, size_t cap, int fd,
                       uint64_t *got) {
  for (;;) {
    unsigned sid;
    int eor;
    ssize_t r = xp_recv(data, block, cap, &sid, &eor);
    if (r <= 0) {
      return r == 0 ? 0 : -1;
    }
    if (sys_write_all(fd, block, (size_t)r) != 0) {
      return -2;
    }
    *got += (size_t)r;
  }
}

/* One block-mode upload: blocks up to and including the EOF block.  The
 * client may send nothing after it before this transfer's 226, so bytes
 * beyond it (a desynchronised stream), a descriptor other than data/EOF
 * and the connection's end before EOF all fail the upload. */
static int recv_blocks(struct xp_conn *data, char *block, size_t cap, int fd,
                       uint64_t *got) {
  struct blk_dec d;
  blk_reset(&d);
  while (d.state == BLK_MORE) {
    unsigned sid;
    int eor;
    size_t off = 0;
    ssize_t r = xp_recv(data, block, cap, &sid, &eor);
    if (r <= 0) {
      log_line("FAIL block mode upload: %s after %llu bytes",
               r == 0 ? "connection closed" : strerror(errno),
               (unsigned long long)*got);
      return -1;
    }
    while (off < (size_t)r && d.state == BLK_MORE) {
      const char *p;
      size_t n;
      off += blk_decode(&d, block + off, (size_t)r - off, &p, &n);
      if (n > 0 && sys_write_all(fd, p, n) != 0) {
        return -2;
      }
      *got += n;
    }
    if (d.state == BLK_BAD || off < (size_t)r) {
      log_line("FAIL block mode upload: %s", d.state == BLK_BAD
                                                 ? "bad block descriptor"
                                                 : "bytes after the EOF block");
      return -1;
    }
  }
  return 0;
}

int dataio_recv_fd(struct session *s, struct xp_conn *data, int fd,
                   uint64_t count, uint64_t *got) {
  size_t cap = 1u << 20;
  char *block = sys_malloc(cap);
  int rc;
  *got = 0;
  if (s->multistream) {
    rc = recv_stream1(s, block, cap, fd, count, got);
  } else if (s->block_mode) {
    rc = recv_blocks(data, block, cap, fd, got);
  } else {
    rc = recv_to_end(data, block, cap, fd, got);
  }
  free(block);
  return rc;
}

void dataio_end(struct session *s, struct xp_conn *data, int ok,
                const char *failure) {
  if (s->block_mode && s->pdata.fd >= 0) {
    /* kept for the next transfer; after a failure the peer cannot tell
     * where the next block starts, so it goes */
    if (!ok) {
      xp_abort(&s->pdata);
    }
    data->fd = -1;
  }
  if (data->fd >= 0) {
    if (ok) {
      xp_close(data);
    } else {
      xp_abort(data);
    }
  }
  s->transfers++;
  if (s->aborted) {
    /* RFC 959 ABOR: 426 for the transfer, then 226 for the ABOR itself */
    s->aborted = 0;
    log_line("ABORT transfer on the client's ABOR");
    if (cmdio_reply(s, FTP_BADSENDNET,
                    "Connection closed; transfer aborted.") == 0) {
      (void)cmdio_reply(s, FTP_TRANSFEROK, "Abort successful.");
    }
    return;
  }
  if (s->quit) {
    return; /* the control connection is gone: nobody to reply to */
  }
  if (ok) {
    (void)cmdio_reply(s, FTP_TRANSFEROK, "Transfer complete.");
    return;
  }
  if (s->multistream) {
    /* Stream 1 can no longer be resynchronized: end the association. */
    log_line("ABORT association after failed transfer: %s", failure);
    s->quit = 1;
    xp_abort(&s->ctrl);
    return;
  }
  (void)cmdio_reply(s, FTP_BADSENDNET, "%s", failure);
}
